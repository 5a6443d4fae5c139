#!/usr/bin/env bash
# `tlbpack pool reserve/release` as root, and the message when not root. The pool is put back
# to the size it had (make test reserves one before ctest; never leave it smaller).
# Usage: pool_reserve.sh TLBPACK
. "$(dirname "$0")/lib.sh"
TP=$1
def_kb=$(awk '/^Hugepagesize:/{print $2}' /proc/meminfo)
NR=/sys/kernel/mm/hugepages/hugepages-${def_kb}kB/nr_hugepages
[ -e "$NR" ] || skip "no $NR"

if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
  run setpriv --reuid=65534 --regid=65534 --clear-groups "$TP" pool reserve 8
  expect_rc 1 "reserve when not root"; expect_in err "needs root" "reserve when not root"
  expect_in err "$NR" "not root: names the file"
  run setpriv --reuid=65534 --regid=65534 --clear-groups "$TP" pool release
  expect_rc 1 "release when not root"; expect_in err "needs root" "release when not root"
  run setpriv --reuid=65534 --regid=65534 --clear-groups "$TP" pool status
  expect_rc 0 "status when not root"
fi
if [ "$(id -u)" != 0 ]; then
  run "$TP" pool reserve 8
  expect_rc 1 "reserve when not root"; expect_in err "needs root" "reserve when not root"
  echo "not root: reserve/release themselves not exercised"; finish
fi
[ -w "$NR" ] || skip "$NR is not writable here (read-only /sys)"

saved=$(cat "$NR")
restore() { echo "$saved" > "$NR"; echo "pool restored to $(cat "$NR") pages (was $saved)"; }
trap 'restore; rm -f "$_tmp_out" "$_tmp_err"' EXIT

want=$((saved + 2))
run "$TP" pool reserve "$want"
got=$(cat "$NR")
if [ "$RC" = 0 ]; then
  expect_in out "reserved $got x" "reserve reports the pages"
  [ "$got" -ge "$want" ] && ok "pool grew to $got" || fail "reserve said ok, pool has $got < $want"
elif [ "$RC" = 3 ]; then
  expect_in out "the kernel gave $got" "partial reserve says how much it got"
else
  fail "reserve $want: exit $RC: $OUT $ERR"
fi
mnt=$(awk '$3=="hugetlbfs"{print $2; exit}' /proc/mounts)
[ -n "$mnt" ] && ok "hugetlbfs mounted at $mnt" || fail "no hugetlbfs mount after reserve"

run "$TP" pool reserve "$saved"
expect_rc 0 "reserve less than the pool"; expect_in out "left as it is" "reserve never shrinks"
[ "$(cat "$NR")" = "$got" ] && ok "pool unchanged" || fail "reserve of fewer pages changed the pool"

# Sizes round up to whole pages: one byte more than saved pages needs saved+1 pages.
run "$TP" pool reserve "$(( (saved * def_kb + 1) ))K"
expect_rc 0 "reserve by size"; [ "$(cat "$NR")" -ge $((saved + 1)) ] && ok "size rounded up" || fail "size not rounded up"

run "$TP" pool release --keep "$saved"
expect_rc 0 "release --keep"; expect_in out "now holds $saved" "release reports the new size"
[ "$(cat "$NR")" = "$saved" ] && ok "pool back to $saved" || fail "pool has $(cat "$NR"), expected $saved"
run "$TP" pool release --keep "$saved"
expect_rc 0 "release to the same size"; expect_in out "nothing to release" "release is idempotent"
run "$TP" pool release --keep $((saved + 5))
expect_rc 2 "release --keep more than the pool"; expect_in err "tlbpack pool reserve" "points to reserve"
finish
