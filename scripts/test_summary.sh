#!/usr/bin/env bash
# test_summary.sh CTEST_OUTPUT LAST_TEST_LOG: the last line of `make test`: how many tests were
# skipped and why, so that a run without the hugetlbfs pool (or without root) is not read as a
# full pass. Names come from ctest's "(Skipped)" lines; each reason is the SKIP line the test
# printed (its output is in ctest's Testing/Temporary/LastTest.log).
set -u
out=$1 log=$2
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$out")
if [ ${#skipped[@]} = 0 ]; then
  echo "make test: no test skipped"
  exit 0
fi
line="make test: ${#skipped[@]} test(s) SKIPPED, not a full pass:"
for t in "${skipped[@]}"; do
  why=$(awk -v t="$t" '$0 ~ "^[0-9]+/[0-9]+ Test: " && $NF == t { on = 1; next }
                       on && /^<end of output>$/ { exit }
                       on && /SKIP/ { r = $0 } END { print r }' "$log" 2>/dev/null)
  why=${why#*SKIP: }
  line="$line $t (${why:-no reason printed});"
done
echo "${line%;}"
