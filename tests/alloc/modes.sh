#!/usr/bin/env bash
# modes.sh TEST_BINARY...: runs each allocator unit test binary under every group and pool mode
# that TLBPACK_CONF can set besides the default (group:site, pool:auto, which the plain ctest
# entries run). A test of another mode's behaviour skips, naming the mode it tests
# (tests/alloc/modes.h); any failure or crash in any mode fails this test. pool:hugetlbfs with
# no free pool pages runs the fallback path, as a program would.
set -u
modes="group:thread group:none pool:4k pool:thp pool:hugetlbfs"
fail=0
for bin in "$@"; do
  for m in $modes; do
    out=$(TLBPACK_CONF=$m "$bin" --jobs 1 --verbose 2>&1); rc=$?
    syn=$(echo "$out" | grep 'Synthesis' | tail -1)
    echo "$(basename "$bin") $m: ${syn:-no synthesis line}, skipped $(echo "$out" | grep -c '^\[SKIP\]') (exit $rc)"
    if [ $rc -ne 0 ] || ! echo "$syn" | grep -q 'Failing: 0 | Crashing: 0'; then
      echo "$out" | grep -E '^\[(FAIL|----)\]' | head -20
      fail=1
    fi
  done
done
[ $fail -eq 0 ] || { echo "FAIL: a unit test failed in a mode set from TLBPACK_CONF"; exit 1; }
echo "ok: every unit test passed or skipped as another mode's in every group and pool mode"
