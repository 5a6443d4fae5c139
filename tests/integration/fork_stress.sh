#!/usr/bin/env bash
# Randomized fork stress at several pool sizes (tests/stress/fork_stress.c): two such programs
# share one hugetlbfs pool, each a parent with a heap of every size class and large blocks
# forking children that live while both write, one thread forking too, and beside them a
# process that takes and gives back pool pages (pool_churn.c). No process may die of a signal
# and every block must keep its data. Under tlbpack, the parents' stats show what the forks
# moved off the pool (forks_unshared, fork_unshared): with a pool, a run where no fork found
# pool pages in the heap proved nothing and fails.
# Pools (free 2 MiB pages): none, one shorter than the two heaps, a large one. Root sets each
# and restores the pool the machine had; without root the pool as it is, once.
# TP_STRESS=1 (make stress): longer runs, more pool sizes, bigger heaps.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_fork_stress
tp_need_prog it_pool_churn
tp_mktemp
secs=4 heap=40 pools="0 12 256"
[ "$TP_STRESS" = 1 ] && secs=30 heap=100 pools="0 8 24 48 96 192 512"
seed=${TP_SEED:-$(date +%s)}
[ "$(id -u)" = 0 ] || { pools=now; tp_log "not root: the pool as it is ($(tp_pool_meminfo Free) free), once"; }
fails=0 runs=0
for pool in $pools; do
  if [ "$pool" != now ]; then
    tp_pool_set "$pool"
    [ "$TP_POOL_FREE" -ge "$pool" ] || tp_log "pool $pool: the kernel granted $TP_POOL_FREE free pages"
  fi
  free_before=$(tp_pool_meminfo Free)
  "$TP_BUILD_DIR/it_pool_churn" "$secs" 4 >"$TP_TMP/churn" 2>&1 &
  churn=$!
  TLBPACK_CONF=stats:json LD_PRELOAD=$TP_LIB "$TP_BUILD_DIR/it_fork_stress" "$secs" 3 "$heap" "$seed" 2 \
    >"$TP_TMP/a.out" 2>"$TP_TMP/a.err" &
  pa=$!
  TLBPACK_CONF=stats:json,start_kb:0,retain_mb:0 LD_PRELOAD=$TP_LIB "$TP_BUILD_DIR/it_fork_stress" "$secs" 2 "$heap" \
    $((seed + 1)) 1 >"$TP_TMP/b.out" 2>"$TP_TMP/b.err" &
  pb=$!
  TP_CLEANUP+=("kill $pa $pb $churn 2>/dev/null")
  wait $pa; ra=$?
  wait $pb; rb=$?
  wait $churn
  for x in a:$ra:$pa b:$rb:$pb; do
    IFS=: read -r n rc pid <<<"$x"
    runs=$((runs + 1))
    line=$(grep -m1 '^fork_stress: [0-9]* forks' "$TP_TMP/$n.out")
    grep '^fork_stress: FAIL' "$TP_TMP/$n.out" | head -5 >&2
    st=$(grep "^{\"pid\":$pid," "$TP_TMP/$n.err" | tail -1)
    moved=$("$TP_PY" -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["forks_unshared"], s["fork_unshared"])' "$st" 2>/dev/null)
    tp_log "pool $pool, program $n (seed $seed): status $rc; ${line#fork_stress: }; forks that moved pool pages, pages moved: ${moved:-none reported}"
    if [ $rc -gt 128 ]; then
      tp_log "FAIL: pool $pool: parent $n died of signal $((rc - 128))"; fails=$((fails + 1))
    elif [ $rc != 0 ]; then
      grep -v '^{"pid"' "$TP_TMP/$n.err" | head -5 >&2
      tp_log "FAIL: pool $pool: program $n exited with status $rc"; fails=$((fails + 1))
    elif tp_is_tlbpack; then
      [ -n "$st" ] || { tp_log "FAIL: pool $pool: parent $n printed no stats"; fails=$((fails + 1)); continue; }
      if [ "$pool" != now ] && [ "$pool" -ge 64 ] && [ "${moved%% *}" = 0 ]; then
        tp_log "FAIL: pool $pool ($free_before free at the start): no fork of program $n found pool pages in its heap: the fork path was not tested"
        fails=$((fails + 1))
      fi
    fi
  done
  tp_log "pool $pool: $(cat "$TP_TMP/churn")"
done
[ $fails = 0 ] || tp_fail "$fails of $runs runs failed (seed $seed; rerun with TP_SEED=$seed)"
tp_pass "$runs runs at pools of ($pools) free pages, no signal death, every block checked"
