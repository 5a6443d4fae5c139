#!/usr/bin/env bash
# The TLB saving survives fork (issue 60): a redis-server under the preloaded library holds KEYS
# keys of 100 bytes (DEBUG POPULATE); then ROUNDS times it saves in the background (BGSAVE: a
# fork) while redis-benchmark overwrites keys. After each save, once the child has exited and
# the server has served a few more writes, the TLB entries that map its memory (smaps: one per
# 2 MiB page mapped huge, one per other 4 KiB page) must be at most twice what they were before
# the first fork: the huge pages that copy-on-write split are collapsed again (fork.c). Stock
# redis (jemalloc) runs the same way for reference (not checked). Each fork's latest_fork_usec
# is printed. At pools of 0, 96 and 512 free pages (root sets each and restores the machine's).
# usage: redis_fork_tlb.sh [KEYS [ROUNDS]]
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd redis-server redis-cli redis-benchmark
keys=${1:-300000} rounds=${2:-3} pools=${TP_POOLS:-0 96 512}
[ "$(id -u)" = 0 ] || pools=now
tp_mktemp
PID=
stop_server() { [ -n "$PID" ] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }; PID=; }
TP_CLEANUP+=(stop_server)
entries() {
  awk '$1 == "Rss:" {rss += $2} $1 == "AnonHugePages:" {ahp += $2}
       $1 == "Private_Hugetlb:" || $1 == "Shared_Hugetlb:" {h += $2}
       END {printf "%d\n", ahp / 2048 + (rss - ahp) / 4 + h / 2048}' "/proc/$1/smaps"
}
info() { redis-cli -p "$PORT" info | tr -d '\r' | awk -F: -v k="$1" '$1 == k {print $2}'; }
start() {
  local dir=$1 i; shift
  mkdir -p "$dir"
  PORT=$(tp_free_port)
  "$@" redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --dir "$dir" \
    --enable-debug-command local --logfile "$dir/server.log" --daemonize no >"$dir/out" 2>"$dir/err" &
  PID=$!
  for ((i = 0; i < 100; i++)); do
    [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  tp_fail "$dir: redis-server did not start: $(tail -3 "$dir/server.log" "$dir/err")"
}
write_some() { redis-benchmark -p "$PORT" -t set -n "$1" -r "$keys" -d 100 -P 16 -c 2 -q >/dev/null 2>&1; }
# run LABEL PREFIX...: sets RUN_LINE and RUN_WORST (the most entries after a save, over the start)
run() {
  local label=$1; shift
  start "$TP_TMP/$label" "$@"
  [ "$(redis-cli -p "$PORT" debug populate "$keys" key 100)" = OK ] || tp_fail "$label: DEBUG POPULATE failed"
  write_some 20000
  local e0 r e i forks="" after=""
  e0=$(entries "$PID")
  RUN_WORST=0
  for ((r = 1; r <= rounds; r++)); do
    redis-cli -p "$PORT" bgsave >/dev/null
    write_some $((keys / 3))
    for ((i = 0; i < 600; i++)); do [ "$(info rdb_bgsave_in_progress)" = 0 ] && break; sleep 0.1; done
    kill -0 "$PID" 2>/dev/null || tp_fail "$label: the server died: $(grep -m2 -E 'crashed by signal|Killed' "$TP_TMP/$label/server.log")"
    [ "$(info rdb_last_bgsave_status)" = ok ] || tp_fail "$label: round $r: the background save failed"
    forks="$forks $(info latest_fork_usec)"
    # The child has exited: a few more writes (the allocator's slow paths) for up to 5 s, or
    # until the entries are within a quarter of the start.
    for ((i = 0; i < 25; i++)); do
      write_some 5000
      e=$(entries "$PID")
      [ "$e" -le $((e0 * 5 / 4)) ] && break
      sleep 0.2
    done
    after="$after $e"
    [ "$e" -gt "$RUN_WORST" ] && RUN_WORST=$e
  done
  RUN_E0=$e0
  RUN_LINE="$label: entries before the first fork $e0, after each save:$after; latest_fork_usec:$forks"
  stop_server
}
fails=0
for pool in $pools; do
  [ "$pool" = now ] || tp_pool_set "$pool"
  run stock env
  tp_log "pool $pool: $RUN_LINE"
  run tlbpack env LD_PRELOAD="$TP_LIB"
  tp_log "pool $pool: $RUN_LINE"
  if [ "$RUN_WORST" -gt $((2 * RUN_E0)) ]; then
    tp_log "FAIL: pool $pool: $RUN_WORST entries after a save, more than twice the $RUN_E0 before the first fork"
    fails=$((fails + 1))
  fi
done
[ $fails = 0 ] || tp_fail "$fails of the pools kept no TLB saving after fork"
tp_pass "redis ($keys keys, $rounds background saves) at pools ($pools): entries after every save at most twice those before the first fork"
