#!/usr/bin/env bash
# CPython's own regression tests (Debian libpython3.11-testsuite) under the preloaded allocator,
# compared test case by test case with a run without it. `make test` runs a quick subset;
# TP_STRESS=1 (make stress) runs the full list. Tests to run can be given as arguments.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd "$TP_PY"
"$TP_PY" -c 'import test.test_dict' 2>/dev/null || tp_fail "CPython's test suite is missing for $TP_PY (apt-get install libpython3.11-testsuite; run \`make setup\`)"
tp_mktemp
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ]; then tests=("$@")
elif [ "$TP_STRESS" = 1 ]; then
  tests=(test_dict test_list test_set test_json test_re test_unicode test_threading test_gc
         test_bytes test_collections test_itertools test_pickle test_deque test_heapq test_sort
         test_weakref test_tuple test_string test_array test_queue test_thread test_decimal
         test_io test_ordered_dict test_defaultdict test_struct test_memoryview test_fork1
         test_bisect)
else
  tests=(test_dict test_list test_set test_json test_re test_unicode test_gc)
fi

# stats:1 must reach only the test runner itself: children that regrtest starts compare their
# stderr with expectations. The runner drops TLBPACK_CONF from its environment once started
# (tlbpack has read it by then), so its own stats still print at exit.
cat > "$TP_TMP/run.py" <<'PY'
import os, runpy, sys
os.environ.pop("TLBPACK_CONF", None)
sys.argv = ["python -m test"] + sys.argv[1:]
runpy.run_module("test", run_name="__main__", alter_sys=True)
PY

# A hung test (e.g. a forked child that died while its parent waits on a pipe) must end the run:
# regrtest's own per-test timeout dumps the stacks and exits; `timeout` is the backstop. Both
# runs together, with their limits, stay below what ctest allows this test (600 s) and what
# scripts/stress.sh allows a run (1800 s), so that a slow run is reported here, by name.
per_test=120 total=240; [ "$TP_STRESS" = 1 ] && { per_test=600; total=850; }
run() {  # $1 = label, rest = command prefix
  local label=$1; shift
  (cd "$TP_TMP" && timeout -k 10 $total "$@" "$TP_PY" run.py --junit-xml "$TP_TMP/$label.xml" \
     --timeout $per_test -q "${tests[@]}") \
    >"$TP_TMP/$label.out" 2>"$TP_TMP/$label.err"
  echo $?
}
timed_out() {  # $1 = status, $2 = which run
  case $1 in
    124 | 137) tail -20 "$TP_TMP/$3.out" >&2
               tp_fail "$2 did not finish within $total s (timeout ended it, status $1); the last lines above show the test it was in" ;;
  esac
}
rc_plain=$(run plain env)
timed_out "$rc_plain" "the regrtest run without preload" plain
rc_pre=$(run pre env TLBPACK_CONF=$TP_CONF LD_PRELOAD="$TP_LIB")
timed_out "$rc_pre" "the regrtest run under $TP_LIB" pre
[ -s "$TP_TMP/plain.xml" ] || tp_fail "the run without preload wrote no results (status $rc_plain): $(tail -5 "$TP_TMP/plain.out")"
[ -s "$TP_TMP/pre.xml" ] || { tail -30 "$TP_TMP/pre.out"; grep -v '^tlbpack: ' "$TP_TMP/pre.err" | tail -40; } >&2
[ -s "$TP_TMP/pre.xml" ] || { tp_fail "the run under $TP_LIB wrote no results (status $rc_pre)"; }
"$TP_PY" "$here/pytest_results.py" "$TP_TMP/plain.xml" >"$TP_TMP/plain.cases" 2>"$TP_TMP/plain.counts"
"$TP_PY" "$here/pytest_results.py" "$TP_TMP/pre.xml" >"$TP_TMP/pre.cases" 2>"$TP_TMP/pre.counts"
read -r n_plain p_plain f_plain e_plain s_plain <"$TP_TMP/plain.counts"
read -r n_pre p_pre f_pre e_pre s_pre <"$TP_TMP/pre.counts"
tp_log "${#tests[@]} test modules: ${tests[*]}"
tp_log "without preload: $n_plain cases, $p_plain passed, $f_plain failed, $e_plain errors, $s_plain skipped (status $rc_plain)"
tp_log "under $(basename "$TP_LIB"): $n_pre cases, $p_pre passed, $f_pre failed, $e_pre errors, $s_pre skipped (status $rc_pre)"
if ! cmp -s "$TP_TMP/plain.cases" "$TP_TMP/pre.cases"; then
  diff "$TP_TMP/plain.cases" "$TP_TMP/pre.cases" | head -30 >&2
  grep -v '^tlbpack: ' "$TP_TMP/pre.out" | tail -40 >&2
  tp_fail "test results differ from the run without preload"
fi
[ "$rc_pre" = "$rc_plain" ] || tp_fail "regrtest exit status $rc_pre under preload, $rc_plain without"
[ "$n_pre" -gt 0 ] || tp_fail "no test cases ran"
# The runner reads each test module's code (its .pyc, or the source when there is none) into
# one bytes object, a block from malloc: at least the smaller of the two files, summed.
code_bytes=$("$TP_PY" - "${tests[@]}" <<'PY'
import importlib.util, os, sys
total = 0
for name in sys.argv[1:]:
    spec = importlib.util.find_spec("test." + name)
    sizes = [os.path.getsize(f) for f in (spec.origin, spec.cached) if f and os.path.exists(f)]
    total += min(sizes)
print(total)
PY
) || tp_fail "could not size the test modules' code"
tp_check_stats "$TP_TMP/pre.err" "the regrtest runner" "$code_bytes"
tp_pass "$p_pre/$n_pre cases passed under preload, same outcomes as without ($p_plain/$n_plain)"
