#!/usr/bin/env bash
# redis-server under the preloaded allocator on a loopback port picked here, with no persistence
# (--save '' --appendonly no, --dir in a temporary directory): redis-benchmark pipelined, then
# redis-cli checks that every key written reads back. The same session runs on a plain
# redis-server first; requests per second of both are printed (no timing assertion).
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd redis-server redis-cli redis-benchmark "$TP_PY"
tp_mktemp
here=$(cd "$(dirname "$0")" && pwd)
requests=20000; keys=20000; [ "$TP_STRESS" = 1 ] && { requests=300000; keys=200000; }
tests=set,get,incr,lpush,lpop,sadd,hset,mset
"$TP_PY" "$here/redis_data.py" write "$keys" >"$TP_TMP/write.resp"
"$TP_PY" "$here/redis_data.py" read "$keys" >"$TP_TMP/read.cmds"
"$TP_PY" "$here/redis_data.py" expect "$keys" >"$TP_TMP/expect.out"

SERVER_PID=
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
}
TP_CLEANUP+=(stop_server)

session() {  # $1 = label, rest = command prefix for redis-server
  local label=$1; shift
  local dir=$TP_TMP/$label port i rc cli
  mkdir -p "$dir"
  port=$(tp_free_port)
  cli=(redis-cli -h 127.0.0.1 -p "$port")
  "$@" redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
    --logfile '' --daemonize no >"$dir/server.log" 2>"$dir/server.err" &
  SERVER_PID=$!
  for ((i = 0; i < 100; i++)); do
    [ "$("${cli[@]}" ping 2>/dev/null)" = PONG ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$dir/server.log" "$dir/server.err" >&2; tp_fail "$label: redis-server exited at start"; }
    sleep 0.1
  done
  [ $i -lt 100 ] || tp_fail "$label: redis-server did not answer PING on 127.0.0.1:$port"

  redis-benchmark -h 127.0.0.1 -p "$port" -n "$requests" -P 16 -c 8 -r 10000 -d 40 -t "$tests" --csv \
    >"$dir/bench.csv" 2>"$dir/bench.err" || tp_fail "$label: redis-benchmark failed: $(tail -3 "$dir/bench.err")"
  # Every benchmark string key reads back with its 40 bytes; every INCR is counted exactly once.
  "${cli[@]}" --scan --pattern 'key:*' >"$dir/keys"
  [ -s "$dir/keys" ] || tp_fail "$label: no benchmark keys found"
  sed 's/^/STRLEN /' "$dir/keys" | "${cli[@]}" | sort | uniq -c >"$dir/strlen"
  [ "$(awk '{print $2}' "$dir/strlen")" = 40 ] || tp_fail "$label: benchmark keys with wrong lengths: $(cat "$dir/strlen")"
  local incrs
  incrs=$("${cli[@]}" --scan --pattern 'counter:*' | sed 's/^/GET /' | "${cli[@]}" | awk '{s += $1} END {print s + 0}')
  [ "$incrs" = "$requests" ] || tp_fail "$label: the INCR counters sum to $incrs, expected $requests"
  [ "$("${cli[@]}" llen mylist)" = 0 ] || tp_fail "$label: mylist not empty after as many LPOPs as LPUSHes"

  # Deterministic strings (up to 71 KB), hashes, lists and growing strings; then read all back.
  "${cli[@]}" --pipe <"$TP_TMP/write.resp" >"$dir/pipe.out" 2>&1 || tp_fail "$label: redis-cli --pipe failed: $(cat "$dir/pipe.out")"
  grep -q 'errors: 0' "$dir/pipe.out" || tp_fail "$label: redis-cli --pipe reported errors: $(cat "$dir/pipe.out")"
  "${cli[@]}" <"$TP_TMP/read.cmds" >"$dir/read.out" || tp_fail "$label: redis-cli read-back failed"
  cmp -s "$TP_TMP/expect.out" "$dir/read.out" || {
    diff "$TP_TMP/expect.out" "$dir/read.out" | cut -c1-120 | head >&2
    tp_fail "$label: values read back differ from what was written"; }
  "${cli[@]}" info memory | tr -d '\r' | grep -E '^(used_memory_human|mem_allocator):' | tr '\n' ' ' >"$dir/mem"
  "${cli[@]}" shutdown nosave >/dev/null 2>&1
  wait "$SERVER_PID"; rc=$?; SERVER_PID=
  [ $rc = 0 ] || { tail "$dir/server.log" "$dir/server.err" >&2; tp_fail "$label: redis-server exited with status $rc"; }
  local left
  left=$(ls "$dir" | grep -v -x -E 'server.log|server.err|bench.csv|bench.err|keys|strlen|pipe.out|read.out|mem')
  [ -z "$left" ] || tp_fail "$label: redis left files behind: $left"
  tp_log "$label: $(wc -l <"$dir/keys") benchmark keys, $keys written keys read back, $(cat "$dir/mem")"
  tp_log "$label: requests/s: $(tr -d '"' <"$dir/bench.csv" | awk -F, 'NR>1 {printf "%s %.0f  ", $1, $2}')"
}

session plain env
session tlbpack env TLBPACK_CONF=$TP_CONF LD_PRELOAD="$TP_LIB"
# redis-server links jemalloc itself: only the stats can show that its data went to tlbpack. Every
# string value written (the expected GET replies) is live in the server at once before the
# shutdown, each in a block of its own: the server's peak live bytes must cover them.
values=$(awk '/^v[0-9]+-/ { s += length($0) } END { printf "%.0f\n", s }' "$TP_TMP/expect.out")
tp_check_stats "$TP_TMP/tlbpack/server.err" "redis-server" "$values" peak_live_bytes
tp_pass "$((requests * 8)) benchmark requests and $keys written keys checked on each server"
