#!/usr/bin/env bash
# `tlbpack pool reserve/release` as root, and the message when not root. The pool is put back
# to the size it had (make test reserves one before ctest; never leave it smaller). Not root,
# only the message can be checked: that is a skip (77), not a pass.
# With --page-size 1G (when the kernel offers 1 GiB pages) the same for the 1 GiB pool, and
# `status --page-size 1G` shows that pool alone and counts a process's 1 GiB pages (a program
# on LIBTLBPACK with gpage_mb:0 takes one).
# Usage: pool_reserve.sh TLBPACK [LIBTLBPACK]
. "$(dirname "$0")/lib.sh"
TP=$1 LIB=${2:-}
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

# ---- 1 GiB pages ----
G=/sys/kernel/mm/hugepages/hugepages-1048576kB
if [ ! -w $G/nr_hugepages ]; then
  echo "note: no writable $G/nr_hugepages: the 1 GiB pool is not checked"
  finish
fi
saved_g=$(cat $G/nr_hugepages)
trap 'restore; echo "$saved_g" > $G/nr_hugepages; rm -f "$_tmp_out" "$_tmp_err"' EXIT
run "$TP" pool reserve --page-size 1G --no-mount $((saved_g + 1))
if [ "$RC" = 3 ]; then
  expect_in out "the kernel gave" "1 GiB: partial reserve says how much it got"
  echo "note: the kernel could not give a 1 GiB page (fragmented memory?): the rest of the 1 GiB checks skipped"
  finish
fi
expect_rc 0 "reserve --page-size 1G"; expect_in out "x 1 GiB huge pages" "reserve names the 1 GiB page size"
[ "$(cat $G/nr_hugepages)" -ge $((saved_g + 1)) ] && ok "1 GiB pool grew to $(cat $G/nr_hugepages)" ||
  fail "1 GiB pool is $(cat $G/nr_hugepages) after reserving $((saved_g + 1))"
run "$TP" pool status --page-size 1G
expect_rc 0 "status --page-size 1G"; expect_in out "  1 GiB " "status --page-size 1G has the 1 GiB row"
printf '%s\n' "$OUT" | grep -q '^  2 MiB ' && fail "status --page-size 1G shows the 2 MiB row: $OUT" ||
  ok "status --page-size 1G leaves the 2 MiB row out"
run "$TP" pool status --page-size 3M
expect_rc 2 "status --page-size 3M"; expect_in err "this kernel offers" "an unknown page size lists the sizes"
run "$TP" pool status --page-size
expect_rc 2 "status --page-size without a value"
if [ -n "$LIB" ] && [ -f "$LIB" ] && [ "$(cat $G/free_hugepages)" -ge 1 ]; then
  # gpage_mb:0: the heap's first huge page is a 1 GiB one. Its stats show it was taken.
  TLBPACK_CONF=start_kb:0,gpage_mb:0 LD_PRELOAD=$LIB /usr/bin/python3 -c 'import time; time.sleep(20)' & holder=$!
  for _ in $(seq 100); do grep -q tlbpack-1g "/proc/$holder/maps" 2>/dev/null && break; sleep 0.1; done
  run "$TP" pool status --page-size 1G
  line=$(printf '%s\n' "$OUT" | awk -v p="$holder" '$1 == p')
  [ "$(echo "$line" | awk '{print $2}')" = 1 ] && ok "status --page-size 1G: the holder has 1 pool page: $line" ||
    { fail "status --page-size 1G: holder $holder line '$line'"; echo "$OUT"; }
  run "$TP" pool status
  expect_in out "+ 1 x 1 GiB" "status counts the 1 GiB page apart from 2 MiB ones"
  run "$TP" pool status --json
  printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = [p for p in d["processes"] if p["pid"] == int(sys.argv[1])]
assert p and p[0]["hugetlb_pages_by_size"]["1073741824"] == 1, p
' "$holder" && ok "--json: hugetlb_pages_by_size has the 1 GiB page" || fail "--json processes: $OUT"
  kill "$holder"; wait "$holder" 2>/dev/null
else
  echo "note: no library or no free 1 GiB page: a process's 1 GiB pages are not checked"
fi
run "$TP" pool release --page-size 1G --keep "$saved_g"
expect_rc 0 "release --page-size 1G --keep"; expect_in out "x 1 GiB huge pages; the pool now holds" "release names the size"
finish
