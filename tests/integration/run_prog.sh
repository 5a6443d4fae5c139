#!/usr/bin/env bash
# run_prog.sh [conf=TLBPACK_CONF] [min=BYTES] MODE PROGRAM ARGS...: runs one of the helper
# programs (tests/stress/*.c, built as TP_BUILD_DIR/it_*) under the preloaded library with
# TLBPACK_CONF=stats:1 (or the conf= given, which should include stats:1) and checks it.
# min=BYTES: what the program must allocate, at the least (the caller derives it from the
# program and its arguments); tlbpack's allocated_total must reach it in some process.
# MODE: plain   exit status 0 and tlbpack's stats show it served the allocations
#       stats   the same; the program also checks live bytes itself (tp_stats_get)
#       exit    plain, and every teardown stage of it_exit_alloc reported
#       aslimit under `ulimit -v` of ARGS[0] MiB
#       pool    plain
# A program skips (exit 77) only by saying so on stdout (`PROGRAM: SKIP: why`, e.g. for want
# of a hugetlbfs pool); exit 77 without that line is a failure like any other status.
. "$(dirname "$0")/lib.sh"
conf=$TP_CONF min=
case "$1" in conf=*) conf=${1#conf=}${TP_CONF_EXTRA:+,$TP_CONF_EXTRA}; shift ;; esac
case "$1" in min=*) min=${1#min=}; shift ;; esac
mode=$1 prog=$2; shift 2
TP_NAME=$prog
tp_need_lib
tp_need_prog "$prog"
tp_mktemp
run() { TLBPACK_CONF=$conf tp_pre "$TP_BUILD_DIR/$prog" "$@" >"$TP_TMP/out" 2>"$TP_TMP/err"; }
if [ "$mode" = aslimit ]; then
  ( ulimit -v $(($1 * 1024)) && run "$@" ); rc=$?
else
  run "$@"; rc=$?
fi
cat "$TP_TMP/out"
tp_strip_stats "$TP_TMP/err" >&2
skip_line=$(grep -m1 -E "^[a-z_]+: SKIP: " "$TP_TMP/out")
case "$mode:$rc" in
  *:77) [ -n "$skip_line" ] || tp_fail "$prog${*:+ $*} exited with status 77 without a 'SKIP: why' line: not a skip"
        tp_skip "${skip_line#*: SKIP: }" ;;
  stats:3) tp_is_tlbpack && tp_fail "tp_stats_get is not exported by $TP_LIB: the leak check could not run" ;;
  *:0) ;;
  *) [ $rc -gt 128 ] && tp_fail "$prog $* died of signal $((rc - 128)) (status $rc)"
     tp_fail "$prog $* exited with status $rc" ;;
esac
if [ "$mode" = exit ]; then
  for stage in 'threads' 'main returns' 'atexit (main)' 'nested atexit' 'atexit (constructor)' 'ELF destructor'; do
    grep -q "^stage: $stage" "$TP_TMP/out" || tp_fail "teardown stage '$stage' did not report (output above)"
  done
fi
case ",$conf," in
  *,stats:1,*) [ -n "$min" ] || tp_fail "run_prog.sh: min=BYTES is required with stats:1 (what $prog must allocate)"
               tp_check_stats "$TP_TMP/err" "$prog" "$min" ;;
esac
tp_pass
