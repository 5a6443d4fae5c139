#!/usr/bin/env bash
# `tlbpack pool status` shows the pool as the kernel reports it, and lists the processes that
# have libtlbpack.so loaded. Usage: pool_status.sh TLBPACK [LIBTLBPACK]
. "$(dirname "$0")/lib.sh"
TP=$1 LIB=${2:-}
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

# Processes: one with tlbpack loaded is listed (with the pool pages it holds), one without is not.
# (A sanitizer build's library cannot be preloaded into a plain program: that part is left out.)
if [ -n "$LIB" ] && [ -f "$LIB" ] && ! LD_PRELOAD=$LIB /bin/true 2>/dev/null; then
  echo "note: $LIB cannot be preloaded into /bin/true here (sanitizer build?): process list not checked"
elif [ -n "$LIB" ] && [ -f "$LIB" ]; then
  LD_PRELOAD=$LIB sleep 60 & with=$!
  sleep 60 & without=$!
  for _ in $(seq 50); do grep -q libtlbpack "/proc/$with/maps" 2>/dev/null && break; sleep 0.1; done
  run "$TP" pool status
  expect_in out "processes using tlbpack (libtlbpack.so mapped):" "processes section"
  line=$(printf '%s\n' "$OUT" | awk -v p="$with" '$1 == p')
  if [ -n "$line" ] && [ "$(echo "$line" | awk '{print $NF}')" = sleep ]; then ok "preloaded sleep (pid $with) listed: $line"
  else fail "preloaded sleep (pid $with) not listed"; echo "$OUT"; fi
  printf '%s\n' "$OUT" | awk -v p="$without" '$1 == p {found=1} END {exit found}' &&
    ok "sleep without tlbpack (pid $without) not listed" || fail "sleep without tlbpack (pid $without) listed"
  run "$TP" pool status --json
  printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
procs = {p["pid"]: p for p in d["processes"]}
w, wo = int(sys.argv[1]), int(sys.argv[2])
assert w in procs, "pid %d not in %s" % (w, sorted(procs))
assert wo not in procs, "pid %d listed" % wo
p = procs[w]
assert p["comm"] == "sleep" and p["hugetlb_pages"] >= 0 and p["hugetlb_kb"] % 2048 == 0, p
assert isinstance(d["processes_unreadable"], int)
' "$with" "$without" && ok "--json lists the preloaded process with its pool pages" || fail "--json processes: $OUT"
  kill "$with" "$without"; wait "$with" "$without" 2>/dev/null
fi
finish
