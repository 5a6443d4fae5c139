#!/usr/bin/env bash
# `tlbpack pool status` shows the pool as the kernel reports it. Usage: pool_status.sh TLBPACK
. "$(dirname "$0")/lib.sh"
TP=$1
HP=/sys/kernel/mm/hugepages
[ -d $HP ] || skip "this kernel has no $HP"
def_kb=$(awk '/^Hugepagesize:/{print $2}' /proc/meminfo)
before=$(cat $HP/hugepages-${def_kb}kB/nr_hugepages)
run "$TP" pool status
after=$(cat $HP/hugepages-${def_kb}kB/nr_hugepages)
expect_rc 0 "pool status"
for field in "page size" total free reserved surplus overcommit mount "hugetlbfs mounts:" "transparent huge pages:"; do
  expect_in out "$field" "pool status field"
done
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
[ -n "$thp" ] && expect_in out "transparent huge pages: $thp" "THP mode matches sysfs"
# Every page size the kernel offers has a row, and the default size's total matches sysfs
# (read before and after, as another process may change the pool meanwhile).
for d in $HP/hugepages-*kB; do
  kb=${d##*hugepages-}; kb=${kb%kB}
  if [ "$kb" -ge 1048576 ]; then label="$((kb / 1048576)) GiB"; else label="$((kb / 1024)) MiB"; fi
  expect_in out "  $label " "row for $label pages"
done
def_label="$((def_kb / 1024)) MiB"
row=$(printf '%s\n' "$OUT" | awk -v l="$def_label" 'index($0, "  " l " ") == 1 {print $3; exit}')
if [ "$row" = "$before" ] || [ "$row" = "$after" ]; then ok "total $row matches sysfs nr_hugepages"
else fail "total '$row' for $def_label, sysfs says $before/$after"; fi
mnt=$(awk '$3=="hugetlbfs"{print $2; exit}' /proc/mounts)
if [ -n "$mnt" ]; then expect_in out "  $mnt (" "mount point listed"
else expect_in out "none" "no mount reported as none"; fi

run "$TP" pool status --json
expect_rc 0 "pool status --json"
printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
need = {"page_size", "total", "free", "reserved", "surplus", "overcommit", "mount", "nodes"}
assert d["default_page_size"] > 0, "default_page_size"
assert d["sizes"], "no sizes"
for s in d["sizes"]:
    missing = need - set(s)
    assert not missing, "missing %s" % missing
assert d["thp"], "thp"
' && ok "--json parses with every field" || fail "--json output: $OUT"
run "$TP" pool; expect_rc 0 "pool alone means status"; expect_in out "page size" "pool alone"
finish
