#!/usr/bin/env bash
# `tlbpack pool reserve/release` as root, and the message when not root. The pool is put back
# to the size it had (make test reserves one before ctest; never leave it smaller). Not root,
# only the message can be checked: that is a skip (77), not a pass.
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
  [ "$FAILS" = 0 ] || finish
  skip "not root: only the 'needs root' message was checked; reserve and release need root"
fi
[ -w "$NR" ] || skip "$NR is not writable here (read-only /sys)"

# Other processes (another `make test`) may change the pool meanwhile: the checks read the
# numbers tlbpack reported right after its own write, and the pool is put back only from the
# sizes this test set, never below what it found.
saved=$(cat "$NR")
ours=" "
restore() {
  local cur; cur=$(cat "$NR")
  if [ "$cur" -lt "$saved" ] || [[ "$ours" == *" $cur "* ]]; then echo "$saved" > "$NR"; fi
  echo "pool now $(cat "$NR") pages (found $saved)"
}
trap 'restore; rm -f "$_tmp_out" "$_tmp_err"' EXIT

want=$((saved + 2))
run "$TP" pool reserve "$want"
if [ "$RC" = 0 ]; then
  got=$(printf '%s\n' "$OUT" | sed -n 's/^reserved \([0-9]*\) x .*/\1/p')
  if [ -n "$got" ]; then
    [ "$got" -ge "$want" ] && ok "reserve $want: pool grew to $got" || fail "reserve said ok with $got < $want pages"
  else
    expect_in out "at least the $want asked for" "reserve: pool already large enough"
  fi
elif [ "$RC" = 3 ]; then
  expect_in out "the kernel gave" "partial reserve says how much it got"
else
  fail "reserve $want: exit $RC: $OUT $ERR"
fi
ours="$ours$(cat "$NR") "
mnt=$(awk '$3=="hugetlbfs"{print $2; exit}' /proc/mounts)
[ -n "$mnt" ] && ok "hugetlbfs mounted at $mnt" || fail "no hugetlbfs mount after reserve"

run "$TP" pool reserve 1
expect_rc 0 "reserve fewer pages than the pool has"; expect_in out "left as it is" "reserve never shrinks"

# Sizes round up to whole pages: one KiB more than want pages needs want+1 pages.
run "$TP" pool reserve "$(( want * def_kb + 1 ))K"
if [ "$RC" = 0 ] || [ "$RC" = 3 ]; then
  expect_in out "$((want + 1))" "a size is rounded up to whole pages"
else fail "reserve by size: exit $RC: $ERR"; fi
ours="$ours$(cat "$NR") "

run "$TP" pool release --keep "$saved"
expect_rc 0 "release --keep"; expect_in out "now holds $saved" "release reports the new size"
run "$TP" pool release --keep "$saved"
expect_rc 0 "release to the same size"; expect_in out "nothing to release" "release is idempotent"
run "$TP" pool release --keep $((saved + 50))
expect_rc 2 "release --keep more than the pool"; expect_in err "tlbpack pool reserve" "points to reserve"
finish
