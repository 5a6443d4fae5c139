#!/usr/bin/env bash
# with_pool.sh "FREE..." CMD ARGS...: runs CMD once for each pool size in the list, with the
# hugetlbfs pool sized (as root) so that FREE unreserved 2 MiB pages are free whatever other
# processes hold, and restores the machine's pool when done, however it ends. A test's result
# then does not depend on the pool the machine happened to have. Each run's result is printed
# with its pool. Exit: 1 if any run failed, 77 if every run skipped (status 77), else 0.
# Not root: CMD runs once, on the pool as it is. Its ctest entry must be RUN_SERIAL: the pool
# is machine-wide.
set -u
pools=$1; shift
knob=/proc/sys/vm/nr_hugepages
meminfo() { awk -v k="HugePages_$1:" '$1 == k {print $2}' /proc/meminfo; }
if [ "$(id -u)" != 0 ] || [ ! -w $knob ]; then
  echo "with_pool: not root: one run on the pool as it is ($(meminfo Free) free pages)"
  exec "$@"
fi
orig=$(cat $knob)
trap 'echo $orig > $knob' EXIT
trap 'exit 130' INT TERM
passed=0 skipped=0 failed=0
for want in $pools; do
  echo $(( $(meminfo Total) - $(meminfo Free) + $(meminfo Rsvd) + want )) > $knob 2>/dev/null
  got=$(( $(meminfo Free) - $(meminfo Rsvd) ))
  echo "with_pool: pool of $want free pages (the kernel granted $got): $*"
  "$@"
  rc=$?
  case $rc in
    0) passed=$((passed + 1)); echo "with_pool: pool $want: passed" ;;
    77) skipped=$((skipped + 1)); echo "with_pool: pool $want: skipped" ;;
    *) failed=$((failed + 1)); echo "with_pool: pool $want: FAILED (status $rc)" ;;
  esac
done
echo "with_pool: pools ($pools): $passed passed, $skipped skipped, $failed failed"
[ $failed = 0 ] || exit 1
[ $passed -gt 0 ] || exit 77
exit 0
