#!/usr/bin/env bash
# The 1 GiB path: with two 1 GiB pages in the pool (reserved here when the pool has fewer free;
# root) and gpage_mb:8, a heap of 24 MiB of small objects takes a 1 GiB page once it has passed
# 8 MiB. The stats say so (pages_1g, gpages), the process holds the page while it runs, the
# regions file has a 1 GiB aligned `1g` range that tlbsim --regions counts as 1 GiB pages, and
# after exit the pool is back to its free count. The 1 GiB pool is restored to the size it had.
# Skips (77) with a message when the kernel has no 1 GiB pages, when not root, or when the
# kernel cannot find the contiguous memory.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_gpage_probe
tp_need_prog tlbsim
tp_is_tlbpack || tp_skip "TP_LIB=$TP_LIB is not tlbpack (exports no tp_malloc): no 1 GiB heap pages to check"
G=/sys/kernel/mm/hugepages/hugepages-1048576kB
[ -d $G ] || tp_skip "this kernel offers no 1 GiB huge pages ($G is missing)"
[ "$(id -u)" = 0 ] || tp_skip "needs root to reserve 1 GiB pages ($G/nr_hugepages)"
[ -w $G/nr_hugepages ] || tp_skip "$G/nr_hugepages is not writable here (read-only /sys)"
avail_kb=$(awk '$1 == "MemAvailable:" {print $2}' /proc/meminfo)
[ "$avail_kb" -ge $(( 4 << 20 )) ] || tp_skip "needs 2 GiB for the pool plus 2 GiB to spare; MemAvailable is $((avail_kb >> 10)) MiB"

orig=$(cat $G/nr_hugepages)
TP_CLEANUP+=("echo $orig > $G/nr_hugepages")
free0=$(cat $G/free_hugepages)
if [ "$free0" -lt 2 ]; then
  want=$(( orig + 2 - free0 ))
  echo $want > $G/nr_hugepages 2>/dev/null
  if [ "$(cat $G/nr_hugepages)" -lt $want ]; then  # contiguous GiBs are rare: compact once, ask again
    echo 1 > /proc/sys/vm/compact_memory
    echo $want > $G/nr_hugepages 2>/dev/null
  fi
fi
free1=$(cat $G/free_hugepages)
[ "$free1" -ge 1 ] || tp_skip "the kernel granted no free 1 GiB page (asked for 2; physical memory too fragmented?)"
tp_log "1 GiB pool: $(cat $G/nr_hugepages) pages, $free1 free (it had $orig)"

tp_mktemp
r=$TP_TMP/regions t=$TP_TMP/trace e=$TP_TMP/err j=$TP_TMP/json
TLBPACK_CONF=$TP_CONF,start_kb:0,gpage_mb:8,regions:$r tp_pre "$TP_BUILD_DIR/it_gpage_probe" 24 >"$t" 2>"$e" \
  || { cat "$e" >&2; tp_fail "it_gpage_probe failed"; }
free2=$(cat $G/free_hugepages)
pages_1g=$(tp_stat "$e" pages_1g) gpages=$(tp_stat "$e" gpages)
held=$(sed -n 's/^gpage_probe: 1 GiB pages free while held: //p' "$e")
tp_log "stats: pages_1g ${pages_1g:-?} (2 MiB hpages), gpages ${gpages:-?}; 1 GiB pages free: $free1 before, ${held:-?} while held, $free2 after"
[ "${gpages:-0}" -ge 1 ] && [ "${pages_1g:-0}" -ge 512 ] ||
  { grep '^tlbpack:' "$e" >&2; tp_fail "the heap took no 1 GiB page (gpages ${gpages:-none}, pages_1g ${pages_1g:-none}) with $free1 free and gpage_mb:8"; }
[ "${held:--1}" -ge 0 ] && [ "$held" -lt "$free1" ] ||
  tp_fail "while the program ran the pool had ${held:-?} free 1 GiB pages of $free1: the stats say a page was taken, the pool does not"
# The regions file: a range of page size 1g, on 1 GiB boundaries.
"$TP_PY" - "$r" <<'PY' || { cat "$r" >&2; tp_fail "the regions file has no 1 GiB aligned '1g' range (above)"; }
import sys
g = 1 << 30
ok = [w for w in (l.split() for l in open(sys.argv[1]) if not l.startswith("#"))
      if w[1] == "1g" and all(int(x, 16) % g == 0 for x in w[0].split("-"))]
sys.exit(0 if ok else 1)
PY
"$TP_BUILD_DIR/tlbsim" --json --regions "$r" "$t" >"$j" 2>"$TP_TMP/sim.err" ||
  tp_fail "tlbsim --regions $r failed: $(cat "$TP_TMP/sim.err")"
p1g=$(awk '$1 == "\"distinct_pages_1g\":" { gsub(",", "", $2); print $2 }' "$j")
[ "${p1g:-0}" -ge 1 ] || tp_fail "tlbsim --regions counted ${p1g:-no} 1 GiB pages in the program's trace"
[ "$free2" = "$free1" ] || tp_fail "after exit the 1 GiB pool has $free2 free pages, not the $free1 it had before the run"
tp_pass "a 1 GiB page taken (pages_1g $pages_1g, $p1g 1 GiB page(s) in tlbsim), regions say 1g, pool back to $free2 free"
