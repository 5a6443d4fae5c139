#!/usr/bin/env bash
# The 1 GiB workload at tiny scale (a 64 MiB heap): tlbbench reserves a 1 GiB page for it (root),
# runs it with tlbpack-1g, tlbpack-2m and jemalloc, and puts the 1 GiB pool back as it found it;
# the tlbpack-1g heap is on the 1 GiB page (one TLB entry for the hot set). Without root the
# workload is skipped with a note, and tlbbench still succeeds. Not in --demo.
# Skips (77) when the kernel has no 1 GiB pages or cannot give one.
set -u
build=${1:?usage: gpages.sh BUILD_DIR}
G=/sys/kernel/mm/hugepages/hugepages-1048576kB
out=$(mktemp -d /tmp/tb-gpages-XXXXXX)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
fail() { echo "gpages: FAIL: $*" >&2; cat "$out/err" >&2 2>/dev/null; exit 1; }
skip() { echo "gpages: SKIP: $*" >&2; exit 77; }
"$build/tlbbench" --list | grep -E '^  gpages ' | grep -q '\[demo\]' && fail "gpages is marked for --demo"
[ -d $G ] || skip "this kernel offers no 1 GiB huge pages ($G is missing)"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  mkdir -m 777 "$out/nobody"
  # What nobody runs is copied where nobody can reach it: the build folder may sit in a folder
  # only root can enter (a home folder, a mktemp -d clone).
  nb=$out/nobody/build
  mkdir -p "$nb/bench"
  cp "$build/tlbbench" "$nb/" && cp -P "$build"/libtlbpack.so* "$nb/" &&
    cp "$build/bench/wl_gpages" "$build/bench/wl_chase" "$nb/bench/" || fail "cannot copy the build for nobody"
  chmod -R a+rX "$nb"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$nb/tlbbench" --no-sim --scale tiny --runs 1 --workloads gpages,chase \
    --allocators jemalloc,tlbpack-1g --out "$out/nobody/res" >/dev/null 2>"$out/err" ||
    fail "tlbbench as nobody exited $? (a workload without its 1 GiB pool must be a note, not a failure)"
  grep -q 'skipping workload gpages: no 1 GiB pool' "$out/err" || fail "the skip is not reported on stderr"
  grep -q 'workload gpages: not run: no 1 GiB pool' "$out/nobody/res/summary.md" || fail "the skip is not listed in summary.md"
  grep -q '^gpages,' "$out/nobody/res/summary.csv" && fail "a skipped workload has rows in summary.csv"
fi
[ "$(id -u)" = 0 ] || skip "not root: the skip was checked; running the workload needs root to reserve a 1 GiB page"
before=$(cat $G/nr_hugepages)
"$build/tlbbench" --scale tiny --runs 1 --workloads gpages --out "$out/res" >/dev/null 2>"$out/err" || fail "tlbbench exited $?"
after=$(cat $G/nr_hugepages)
[ "$after" = "$before" ] || fail "the 1 GiB pool had $before pages before tlbbench and $after after"
grep -q 'skipping workload gpages' "$out/err" && skip "$(grep 'skipping workload gpages' "$out/err")"
for a in jemalloc tlbpack-1g tlbpack-2m; do
  grep -q "^gpages,$a,1,0," "$out/res/runs.csv" || fail "no good run of gpages x $a in runs.csv"
done
line=$(grep '^gpages,tlbpack-1g,' "$out/res/runs.csv")
case "$line" in
  *gpages_mapped=0*) fail "tlbpack-1g mapped no 1 GiB page: $line" ;;
esac
case "$line" in
  *" hot_entries=1 "*"hot_huge_1g=1 "*) ;;
  *) fail "tlbpack-1g: the hot set should need one TLB entry (one 1 GiB page): $line" ;;
esac
echo "gpages: PASS: tiny run on a 1 GiB page, pool back to $after; skipped cleanly without root"
