#!/usr/bin/env bash
# Two redis-servers under the preloaded library share one hugetlbfs pool, each holding KEYS keys
# of 100 bytes (DEBUG POPULATE), and save in the background (BGSAVE: a fork whose child writes the dump while the
# parent serves) while a client writes keys of 100 bytes on both (redis-benchmark's, new and overwritten), ROUNDS times. No server may die (redis
# logs "crashed by signal" and exits), every save must succeed, and every key must read back
# with its value's length afterwards. Prints each server's fork time (latest_fork_usec) and
# RSS + HugetlbPages, and the same for stock redis (its own jemalloc) run the same way.
# Pool: POOL free pages (default 100), sized as root and restored; others run on the pool there is.
# usage: redis_bgsave.sh [KEYS [ROUNDS [POOL]]]  (TP_STRESS=1: 600000 keys, 5 rounds)
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd redis-server redis-cli redis-benchmark
keys=${1:-150000} rounds=${2:-3} pool=${3:-100}
[ "$TP_STRESS" = 1 ] && [ $# = 0 ] && keys=600000 rounds=5
tp_mktemp
[ "$(id -u)" = 0 ] && tp_pool_set "$pool"
PIDS=()
stop_all() { local p; for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; PIDS=(); }
TP_CLEANUP+=(stop_all)
kb() { awk -v k="$2:" '$1 == k {print $2}' /proc/$1/status; }

start() {  # $1 = dir, rest = command prefix; sets PORT
  local dir=$1 i; shift
  mkdir -p "$dir"
  PORT=$(tp_free_port)
  "$@" redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --dir "$dir" \
    --enable-debug-command local --logfile "$dir/server.log" --daemonize no >"$dir/out" 2>"$dir/err" &
  PIDS+=($!)
  echo "$PORT $!" >"$dir/port"
  for ((i = 0; i < 100; i++)); do
    [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  tp_fail "$dir: redis-server did not start: $(tail -3 "$dir/server.log" "$dir/err")"
}

info() { redis-cli -p "$1" info | tr -d '\r' | awk -F: -v k="$2" '$1 == k {print $2}'; }

run_pair() {  # $1 = label, rest = command prefix for redis-server
  local label=$1; shift
  local a=$TP_TMP/$label-a b=$TP_TMP/$label-b pa pb ka kb_ r dead=0 saves=0 failed_saves=0 forks=""
  start "$a" "$@"; read -r pa ka <"$a/port"
  start "$b" "$@"; read -r pb kb_ <"$b/port"
  for p in $pa $pb; do
    [ "$(redis-cli -p $p debug populate "$keys" key 100)" = OK ] || tp_fail "$label: DEBUG POPULATE failed on port $p"
  done
  for ((r = 1; r <= rounds; r++)); do
    for p in $pa $pb; do redis-cli -p $p bgsave >/dev/null; done
    # Overwrite keys on both while the children save (random keys of the populated set).
    for p in $pa $pb; do
      redis-benchmark -p $p -t set -n $((keys / 3)) -r "$keys" -d 100 -P 16 -c 4 -q >/dev/null 2>&1 &
    done
    wait $(jobs -p | grep -v -x -E "$(IFS='|'; echo "${PIDS[*]}")") 2>/dev/null
    for p in $pa $pb; do
      local i
      for ((i = 0; i < 600; i++)); do
        [ "$(info $p rdb_bgsave_in_progress)" = 0 ] && break
        kill -0 $ka 2>/dev/null && kill -0 $kb_ 2>/dev/null || break
        sleep 0.1
      done
    done
    for x in "$pa:$ka:$a" "$pb:$kb_:$b"; do
      IFS=: read -r p k d <<<"$x"
      if ! kill -0 $k 2>/dev/null; then dead=$((dead + 1)); tp_log "$label: round $r: the server on port $p died: $(grep -m2 -E 'crashed by signal|Killed' "$d/server.log")"; continue; fi
      saves=$((saves + 1))
      [ "$(info $p rdb_last_bgsave_status)" = ok ] || failed_saves=$((failed_saves + 1))
      grep -q 'Background saving terminated with success' "$d/server.log" || failed_saves=$((failed_saves + 1))
      forks="$forks $(info $p latest_fork_usec)"
    done
    [ $dead = 0 ] || break
  done
  local mem=""
  for x in "$pa:$ka" "$pb:$kb_"; do
    IFS=: read -r p k <<<"$x"
    kill -0 $k 2>/dev/null || continue
    mem="$mem $(( ($(kb $k VmRSS) + $(kb $k HugetlbPages)) / 1024 ))"
    local n
    n=$(redis-cli -p $p dbsize)
    [ "$n" -ge "$keys" ] || tp_fail "$label: port $p holds $n keys, fewer than the $keys populated"
    # Every value read back with its length (100 bytes).
    redis-cli -p $p --scan | head -20000 | sed 's/^/STRLEN /' | redis-cli -p $p | sort | uniq -c >"$TP_TMP/strlen"
    [ "$(awk '{print $2}' "$TP_TMP/strlen")" = 100 ] || tp_fail "$label: port $p: values with wrong lengths: $(head -3 "$TP_TMP/strlen")"
  done
  grep -h 'crashed by signal' "$a/server.log" "$b/server.log" >&2
  tp_log "$label: $rounds rounds of BGSAVE on 2 servers of $keys keys: $dead died, $saves saves checked, $failed_saves failed; latest_fork_usec:${forks}; RSS + hugetlb MiB:${mem}"
  stop_all
  RESULT="$dead $failed_saves"
}

tp_log "pool: $(tp_pool_meminfo Free) free pages"
run_pair stock env
read -r stock_dead stock_failed <<<"$RESULT"
run_pair tlbpack env TLBPACK_CONF=stats:1 LD_PRELOAD="$TP_LIB"
read -r dead failed <<<"$RESULT"
[ "$stock_dead$stock_failed" = 00 ] || tp_log "note: stock redis itself lost $stock_dead servers and $stock_failed saves"
[ "$dead" = 0 ] || tp_fail "$dead redis-server(s) died under $TP_LIB"
[ "$failed" = 0 ] || tp_fail "$failed background saves failed under $TP_LIB"
tp_pass "2 servers x $rounds BGSAVEs of $keys keys sharing a pool of $pool pages: none died, every save and key checked"
