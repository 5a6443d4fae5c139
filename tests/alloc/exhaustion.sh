#!/usr/bin/env bash
# The hugetlbfs pool runs out mid-run, then grows again: allocations fall back (never fail)
# and later use huge pages again. Needs root to resize the pool; restores it afterwards.
# Limits (ctest allows 180 s): 60 s for phase 1 to report, 120 s for the whole program. The
# kernel may leave more free pages than asked when shrinking, or grant fewer when growing
# (fragmented memory): what it did is read back, and a pool that cannot be set up is a skip.
set -u
lib=$1 prog=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to resize the hugetlbfs pool"; exit 77; }
knob=/proc/sys/vm/nr_hugepages
orig=$(cat $knob)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; echo $orig > $knob' EXIT
meminfo() { awk -v k="$1:" '$1 == k {print $2}' /proc/meminfo; }
total=$(meminfo HugePages_Total); free=$(meminfo HugePages_Free)
echo $(( total - free + 4 )) > $knob   # leave exactly 4 free pages (others may be in use)
free1=$(meminfo HugePages_Free)
[ "$free1" -lt 12 ] || { echo "SKIP: could not shrink the pool below the 12 pages phase 1 takes: $free1 left free (asked for 4)"; exit 77; }
fifo=$(mktemp -u); mkfifo "$fifo"; exec 3<>"$fifo"; rm -f "$fifo"
out=$(mktemp)
TLBPACK_CONF=pool:hugetlbfs LD_PRELOAD="$lib" timeout -k 5 120 "$prog" phases 12 <&3 >"$out" 2>&1 &
pid=$!
for i in $(seq 600); do grep -q phase1 "$out" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
grep -q phase1 "$out" || { cat "$out"; echo "FAIL: phase 1 did not report within 60 s (12 x 2 MiB with $free1 free huge pages)"; exit 1; }
total=$(meminfo HugePages_Total)
echo $(( total + 24 )) > $knob         # the pool comes back
grown=$(( $(meminfo HugePages_Total) - total ))
echo go >&3
wait $pid; rc=$?; pid=
cat "$out"
[ $rc -ne 124 ] && [ $rc -ne 137 ] || { echo "FAIL: the program did not finish within 120 s (timeout ended it, status $rc)"; exit 1; }
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
[ "$grown" -gt 0 ] || { echo "SKIP: the kernel granted none of the 24 pages asked for when the pool was to come back (memory fragmented?)"; exit 77; }
p1h=$(grep phase1 "$out" | sed 's/.*hugetlbfs=\([0-9]*\).*/\1/'); p1f=$(grep phase1 "$out" | sed 's/.*fallbacks=\([0-9]*\).*/\1/')
p2h=$(grep phase2 "$out" | sed 's/.*hugetlbfs=\([0-9]*\).*/\1/')
[ "$p1f" -gt 0 ] || { echo "FAIL: phase 1 outgrew a $free1-page pool without a fallback"; exit 1; }
[ "$p1h" -le "$free1" ] || { echo "FAIL: phase 1 used $p1h huge pages of a $free1-page pool"; exit 1; }
[ "$p2h" -gt "$p1h" ] || { echo "FAIL: huge pages not used again once the pool grew by $grown pages ($p1h -> $p2h)"; exit 1; }
echo "PASS: fell back with $p1f fallbacks ($free1 free pages), then hugetlbfs pages $p1h -> $p2h (the pool grew by $grown)"
