#!/usr/bin/env bash
# fork() in a multi-threaded program whose heap holds pool pages (issue 60): the pages move off
# the pool before the fork while the other threads are stopped, so that
# - it_fork_readers (tests/stress/fork_readers.c): two threads read() into fresh heap buffers,
#   two writers with every signal blocked write and check blocks, the main thread grows its heap
#   and forks checking children: no read fails with EFAULT, no thread or process dies, every
#   child sees the parent's memory as it was at fork();
# - node (where installed): eight fs.read() calls in flight on libuv's thread pool while
#   child_process.execFile('/bin/true') runs in a loop: no read fails;
# - it_fork_raw_mask (tests/stress/fork_raw_mask.c): a thread that blocks every signal with a
#   raw rt_sigprocmask never answers the stop: the fork still completes (the fallback, after
#   the stop's wait) and the child sees the parent's memory; with a pool, forks_guarded is 1.
# after_fork:pool: every fork finds pool pages to move, so every fork stops the threads.
# At pools of 0, 96 and 512 free pages (root sets each and restores the machine's). With a pool,
# the stats must show forks that moved pool pages with no thread left running
# (forks_unshared > 0, forks_guarded 0): a run where no fork found pool pages proved nothing.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_fork_readers
tp_need_prog it_fork_raw_mask
tp_mktemp
secs=${TP_FORK_SECS:-4} pools="0 96 512"
[ "$(id -u)" = 0 ] || { pools=now; tp_log "not root: the pool as it is ($(tp_pool_meminfo Free) free), once"; }
node=$(command -v node || command -v nodejs)
[ -n "$node" ] && head -c $((64 << 20)) /dev/urandom >"$TP_TMP/data"
# fork_stats FILE: "forks_unshared forks_guarded" of the (one) stats block in FILE, empty if none.
fork_stats() {
  local u g
  u=$(tp_stat "$1" forks_unshared) g=$(tp_stat "$1" forks_guarded)
  [ -n "$u" ] && echo "$u $g"
}
fails=0 runs=0
for pool in $pools; do
  [ "$pool" = now ] || tp_pool_set "$pool"
  runs=$((runs + 1))
  TLBPACK_CONF=stats:1,start_kb:0,after_fork:pool tp_pre "$TP_BUILD_DIR/it_fork_readers" "$secs" >"$TP_TMP/out" 2>"$TP_TMP/err"
  rc=$?
  grep '^fork_readers: FAIL' "$TP_TMP/out" | head -5 >&2
  line=$(grep -m1 '^fork_readers: [0-9]* forks' "$TP_TMP/out")
  moved=$(fork_stats "$TP_TMP/err")
  tp_log "pool $pool: fork_readers status $rc; ${line#fork_readers: }; forks that moved pool pages, of them guarded: ${moved:-none reported}"
  if [ $rc -gt 128 ]; then
    tp_log "FAIL: pool $pool: fork_readers died of signal $((rc - 128))"; fails=$((fails + 1))
  elif [ $rc != 0 ]; then
    tp_strip_stats "$TP_TMP/err" | head -5 >&2
    tp_log "FAIL: pool $pool: fork_readers exited with status $rc"; fails=$((fails + 1))
  elif tp_is_tlbpack && [ "$pool" != now ] && [ "$pool" -ge 96 ]; then
    if [ -z "$moved" ] || [ "${moved%% *}" = 0 ]; then
      tp_log "FAIL: pool $pool: no fork found pool pages in the heap: the stop was not tested"; fails=$((fails + 1))
    elif [ "${moved##* }" != 0 ]; then
      tp_log "FAIL: pool $pool: ${moved##* } forks moved pages with a thread not stopped (forks_guarded)"; fails=$((fails + 1))
    fi
  fi
  runs=$((runs + 1))
  TLBPACK_CONF=stats:1,start_kb:0 tp_pre "$TP_BUILD_DIR/it_fork_raw_mask" 16 >"$TP_TMP/rout" 2>"$TP_TMP/rerr"
  rc=$?
  guarded=$(fork_stats "$TP_TMP/rerr")
  tp_log "pool $pool: fork_raw_mask status $rc; $(tail -1 "$TP_TMP/rout"); forks that moved pool pages, of them guarded: ${guarded:-none reported}"
  if [ $rc != 0 ]; then
    tp_log "FAIL: pool $pool: fork_raw_mask exited with status $rc"; fails=$((fails + 1))
  elif tp_is_tlbpack && [ "$pool" != now ] && [ "$pool" -ge 96 ] && [ "$guarded" != "1 1" ]; then
    tp_log "FAIL: pool $pool: the fork with an unstoppable thread did not take the fallback (forks_unshared, forks_guarded: ${guarded:-none})"
    fails=$((fails + 1))
  fi
  if [ -n "$node" ]; then
    runs=$((runs + 1))
    tp_pre "$node" "$TP_SRC_DIR/tests/integration/node_reads_while_spawning.js" "$TP_TMP/data" "$secs" >"$TP_TMP/nout" 2>"$TP_TMP/nerr"
    rc=$?
    tp_log "pool $pool: node status $rc; $(tail -1 "$TP_TMP/nout")"
    if [ $rc != 0 ]; then
      head -5 "$TP_TMP/nerr" >&2
      tp_log "FAIL: pool $pool: node's reads or spawns failed (status $rc)"; fails=$((fails + 1))
    fi
  fi
done
[ -n "$node" ] || tp_log "node not installed: its part did not run"
[ $fails = 0 ] || tp_fail "$fails of $runs runs failed"
tp_pass "$runs runs at pools of ($pools) free pages: no failed read, no death, every child's memory as at fork()"
