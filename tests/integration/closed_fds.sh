#!/usr/bin/env bash
# A program that closes every descriptor it did not open (daemons do) and reuses the numbers
# for a file of its own (tests/stress/closed_fds.c), under the preloaded library with stats and
# a regions file: it must run as without the preload, its file must hold its own line only (the
# allocator never writes to a descriptor it kept), and what tlbpack writes at exit (the regions
# file; the stats, while stderr is still stderr) must still be written. The program's heap and
# its forked child's take pool pages: it runs with no pool, with one shorter than its heap
# (24 free pages for about 140 MiB; 96, which covers the parent's pool pages at the fork but not the
# copies the child then needs) and a large one (root sets each; others run on the pool
# there is).
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_closed_fds
tp_mktemp
pools=${TP_POOLS:-"0 24 96 512"}
[ "$(id -u)" = 0 ] || pools=now
for pool in $pools; do
[ "$pool" = now ] || tp_pool_set "$pool"
tp_log "pool: $(tp_pool_meminfo Free) free pages"
for mode in keep-stdio daemon; do
  conf="$TP_CONF,regions:$TP_TMP/$mode.regions"
  TLBPACK_CONF=$conf tp_pre "$TP_BUILD_DIR/it_closed_fds" $mode "$TP_TMP/$mode.data" >"$TP_TMP/$mode.out" 2>"$TP_TMP/$mode.err"
  rc=$?
  [ $rc = 0 ] || { cat "$TP_TMP/$mode.err" >&2; tp_fail "pool $pool, $mode: it_closed_fds exited with status $rc (3: a check in the program failed)"; }
  lines=$(wc -l <"$TP_TMP/$mode.data")
  grep -q '^closed_fds: ok: ' "$TP_TMP/$mode.data" && [ "$lines" = 1 ] || {
    head -c 600 "$TP_TMP/$mode.data" >&2
    tp_fail "pool $pool, $mode: the program's own file holds $lines lines, expected its one 'closed_fds: ok' line: something wrote to a descriptor the program reused"; }
  tp_log "$mode: $(cat "$TP_TMP/$mode.data")"
  if tp_is_tlbpack; then
    grep -qE '^0x[0-9a-f]+-0x[0-9a-f]+ (2m|4k) ' "$TP_TMP/$mode.regions" 2>/dev/null \
      || tp_fail "pool $pool, $mode: no regions file written at exit after the descriptors were closed"
  fi
  if [ $mode = keep-stdio ]; then
    [ -z "$(tp_strip_stats "$TP_TMP/$mode.err")" ] || { cat "$TP_TMP/$mode.err" >&2; tp_fail "pool $pool, $mode: unexpected stderr under preload"; }
    # churn() allocates 2 x 400 blocks, one in 8 over 2 MiB: at least 100 x 2 MiB.
    tp_check_stats "$TP_TMP/$mode.err" "it_closed_fds" $((100 * 2 << 20))
  else
    [ ! -s "$TP_TMP/$mode.err" ] || { cat "$TP_TMP/$mode.err" >&2; tp_fail "pool $pool, $mode: the process wrote to the stderr it had closed"; }
  fi
done
done
tp_pass "descriptors closed and reused at pools of ($pools) free pages: the program's file untouched, regions written at exit"
