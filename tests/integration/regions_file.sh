#!/usr/bin/env bash
# TLBPACK_CONF=regions:PATH writes the heap's ranges with their page sizes at exit, in the
# format `tlbsim --regions` reads (tlbsim(1), REGIONS FILE), and tlbsim then counts the program's
# heap accesses on those page sizes. Run with pool:auto,start_kb:0 (2 MiB pages from the first
# byte when the pool or THP can give them) and pool:4k (4 KiB pages). The program prints a trace
# of reads of its blocks.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_regions_probe
tp_need_prog tlbsim
tp_mktemp
tp_is_tlbpack || tp_skip "TP_LIB=$TP_LIB is not tlbpack (exports no tp_malloc): no regions file to read"
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
pool_free=$(awk '/^HugePages_Free:/{print $2}' /proc/meminfo)
json() { awk -v k="\"$1\":" '$1 == k { gsub(",", "", $2); print $2 }' "$2"; }

for pool in auto 4k; do
  r=$TP_TMP/$pool.regions t=$TP_TMP/$pool.trace j=$TP_TMP/$pool.json
  TLBPACK_CONF=$TP_CONF,pool:$pool,start_kb:0,regions:$r tp_pre "$TP_BUILD_DIR/it_regions_probe" >"$t" 2>"$TP_TMP/$pool.err" \
    || { cat "$TP_TMP/$pool.err" >&2; tp_fail "pool:$pool: it_regions_probe failed"; }
  [ -s "$r" ] || tp_fail "pool:$pool: no regions file at $r"
  head -1 "$r" | grep -q '^# tlbpack regions v1' || tp_fail "pool:$pool: the regions file does not start with '# tlbpack regions v1': $(head -1 "$r")"
  # Every other line: START-END (hex, END exclusive, 2 MiB aligned) SIZE [SOURCE], in order, apart.
  "$TP_PY" - "$r" "$t" "$pool" <<'PY' || tp_fail "pool:$pool: the regions file is not what tlbsim(1) says (above)"
import sys
path, trace, pool = sys.argv[1:]
ranges = []
for n, line in enumerate(open(path), 1):
    if line.startswith("#"):
        continue
    w = line.split()
    assert 2 <= len(w) <= 3, f"line {n}: {line!r}"
    s, e = (int(x, 16) for x in w[0].split("-"))
    assert s < e and s % (2 << 20) == 0 and e % (2 << 20) == 0, f"line {n}: {w[0]} not 2 MiB aligned"
    assert w[1] in ("4k", "2m", "1g"), f"line {n}: page size {w[1]}"
    if pool == "4k":
        assert w[1:] == ["4k", "4k"], f"line {n}: pool:4k range {w[1:]}"
    ranges.append((s, e, w[1]))
assert ranges, "no range"
assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), "ranges out of order or overlapping"
for line in open(trace):
    a = int(line.split()[1], 16)
    assert any(s <= a < e for s, e, _ in ranges), f"heap address {a:#x} in no range"
PY
  "$TP_BUILD_DIR/tlbsim" --json --regions "$r" "$t" >"$j" 2>"$TP_TMP/$pool.sim.err" \
    || tp_fail "pool:$pool: tlbsim --regions $r failed: $(cat "$TP_TMP/$pool.sim.err")"
  p4=$(json distinct_pages_4k "$j") p2=$(json distinct_pages_2m "$j") acc=$(json accesses "$j")
  [ "$acc" = "$(wc -l <"$t")" ] || tp_fail "pool:$pool: tlbsim counted $acc accesses of $(wc -l <"$t")"
  tp_log "pool:$pool: $(grep -vc '^#' "$r") ranges ($(awk '!/^#/ {print $2}' "$r" | sort | uniq -c | tr '\n' ' ')); tlbsim: $p4 4K pages, $p2 2M pages"
  if [ $pool = 4k ]; then
    [ "$p2" = 0 ] && [ "$p4" -ge 64 ] || tp_fail "pool:4k: tlbsim counted $p4 4K and $p2 2M pages; expected only 4K pages"
  elif [ "${thp:-never}" = never ] && [ "${pool_free:-0}" = 0 ]; then
    tp_log "note: no free hugetlbfs page and THP is 'never': no 2 MiB pages to expect"
  else
    [ "$p4" = 0 ] && [ "$p2" -gt 0 ] || tp_fail "pool:auto: tlbsim counted $p4 4K and $p2 2M pages; expected the heap on 2 MiB pages only"
  fi
done
tp_pass "regions files written at exit and read by tlbsim --regions (pool:auto and pool:4k)"
