#!/usr/bin/env bash
# Two processes share one hugetlbfs pool as their pool_max caps say. A, capped at K pages,
# asks for more than that while the pool could give it all, and holds exactly K pool pages:
# every page past the cap comes from THP (or 4 KiB) and is counted in pool_capped. B, with no
# cap, started while A holds its memory, gets every page it asks for from the pool.
# `tlbpack pool status` lists A with the K pool pages it holds. Both run with start_kb:0, so that
# their pages come from the pool from the first one on (by default a heap starts on 4 KiB pages).
# Skips (77) when the pool has too few free pages (it is reserved by root: `make test` does).
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_pool_hold
tp_is_tlbpack || tp_skip "TP_LIB=$TP_LIB is not tlbpack: pool_max is a tlbpack setting"
tp_need_cmd "$TP_PY"
K=2 A_BLOCKS=8 B_BLOCKS=4
need=$((A_BLOCKS + B_BLOCKS + 4))
read -r free rsvd size <<<"$(awk '/^HugePages_Free:/ {f=$2} /^HugePages_Rsvd:/ {r=$2} /^Hugepagesize:/ {s=$2}
                                  END {print f+0, r+0, s+0}' /proc/meminfo)"
avail=$((free - rsvd))
[ "$size" = 2048 ] && [ "$avail" -ge "$need" ] ||
  tp_skip "needs $need unreserved free 2 MiB pages in the hugetlbfs pool, have $avail (page size $size kB); as root: \`make test\` reserves a pool, or \`tlbpack pool reserve 64\`"
tp_mktemp
tp_log "pool: $free free, $rsvd reserved; A: pool_max:$K, $A_BLOCKS x 2 MiB; B: no cap, $B_BLOCKS x 2 MiB"

# Started directly (not through a shell function), so that $! is the program's own pid.
LD_PRELOAD=$TP_LIB TLBPACK_CONF=stats:json,start_kb:0,pool_max:$K "$TP_BUILD_DIR/it_pool_hold" $A_BLOCKS "$TP_TMP/stop" \
  >"$TP_TMP/out_a" 2>"$TP_TMP/err_a" &
pid_a=$!
TP_CLEANUP+=("kill $pid_a 2>/dev/null")
for _ in $(seq 600); do
  grep -q "holding" "$TP_TMP/out_a" 2>/dev/null && break
  kill -0 $pid_a 2>/dev/null || break
  sleep 0.1
done
grep -q "holding" "$TP_TMP/out_a" || { cat "$TP_TMP/out_a" "$TP_TMP/err_a" >&2; tp_fail "A did not get its memory"; }

TLBPACK_CONF=stats:json,start_kb:0 tp_pre "$TP_BUILD_DIR/it_pool_hold" $B_BLOCKS >"$TP_TMP/out_b" 2>"$TP_TMP/err_b"
rc_b=$?
listed=
if [ -x "$TP_BUILD_DIR/tlbpack" ]; then
  "$TP_BUILD_DIR/tlbpack" pool status --json >"$TP_TMP/status.json" 2>"$TP_TMP/status.err" && listed=1
fi
touch "$TP_TMP/stop"
wait $pid_a
rc_a=$?
cat "$TP_TMP/out_a" "$TP_TMP/out_b"
[ $rc_a = 0 ] || { cat "$TP_TMP/err_a" >&2; tp_fail "A exited with status $rc_a"; }
[ $rc_b = 0 ] || { cat "$TP_TMP/err_b" >&2; tp_fail "B exited with status $rc_b"; }

"$TP_PY" - "$TP_TMP" $K $A_BLOCKS $B_BLOCKS $pid_a "$listed" <<'PY'
import json, sys
tmp, K, na, nb, pid_a, listed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
def stats(name):
    lines = [l for l in open(f"{tmp}/err_{name}") if l.startswith("{")]
    if not lines:
        sys.exit(f"pool_share: FAIL: {name} printed no stats:json line")
    return json.loads(lines[-1])
a, b = stats("a"), stats("b")
for n, s in (("A", a), ("B", b)):
    print(f"pool_share: {n}: pool_max {s['pool_max']}, pages hugetlbfs {s['pages_hugetlbfs']} thp {s['pages_thp']} "
          f"4k {s['pages_4k']}, pool_pages_peak {s['pool_pages_peak']}, pool_capped {s['pool_capped']}, "
          f"fallbacks {s['fallbacks']}", file=sys.stderr)
fails = []
short = []
if a["pool_max"] != K: fails.append(f"A reports pool_max {a['pool_max']}, not {K}")
if a["pages_hugetlbfs"] > K or a["pool_pages_peak"] > K:
    fails.append(f"A holds {a['pages_hugetlbfs']} pool pages (peak {a['pool_pages_peak']}), more than its cap {K}")
elif a["pages_hugetlbfs"] < K:
    (short if a["fallbacks"] else fails).append(f"A holds {a['pages_hugetlbfs']} pool pages, fewer than its cap {K}")
other = a["pages_thp"] + a["pages_4k"]
if other < na + 1 - K: fails.append(f"A has {other} pages besides the pool's; it asked for {na} blocks")
# A site's second 2 MiB block is a sample on 4 KiB pages (large_runs_4k), not capped; collapsed
# into THP once found written whole.
if a["pool_capped"] != other - a["large_runs_4k"]:
    fails.append(f"A: pool_capped {a['pool_capped']} != its {other} pages from THP / 4 KiB less its "
                 f"{a['large_runs_4k']} large runs sampled on 4 KiB pages (each other skipped the pool for the cap)")
if b["pool_max"] is not None: fails.append(f"B reports pool_max {b['pool_max']}, it has no cap")
if b["pool_capped"] != 0: fails.append(f"B has no cap but pool_capped {b['pool_capped']}")
if b["pages_hugetlbfs"] < nb:
    (short if b["fallbacks"] else fails).append(f"B got {b['pages_hugetlbfs']} pool pages for its {nb} blocks")
if listed:
    st = json.load(open(f"{tmp}/status.json"))
    procs = {p["pid"]: p for p in st.get("processes", [])}
    if pid_a not in procs:
        fails.append(f"tlbpack pool status --json does not list A (pid {pid_a}): {sorted(procs)}")
    elif procs[pid_a]["hugetlb_pages"] != K:
        fails.append(f"tlbpack pool status lists A with {procs[pid_a]['hugetlb_pages']} pool pages, not {K}")
    else:
        print(f"pool_share: tlbpack pool status lists A (pid {pid_a}) holding {K} pool pages", file=sys.stderr)
for f in fails: print(f"pool_share: FAIL: {f}", file=sys.stderr)
if fails: sys.exit(1)
if short:
    for s in short: print(f"pool_share: SKIP: the pool ran short during the test (other processes took pages): {s}", file=sys.stderr)
    sys.exit(77)
PY
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || tp_fail "see above"
tp_pass "A held $K pool pages as its cap says, B got its $B_BLOCKS from the pool beside it"
