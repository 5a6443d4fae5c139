#!/usr/bin/env bash
# The hugetlbfs pool runs out mid-run, then grows again: allocations fall back (never fail)
# and later use huge pages again. Needs root to resize the pool; restores it afterwards.
set -u
lib=$1 prog=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to resize the hugetlbfs pool"; exit 77; }
knob=/proc/sys/vm/nr_hugepages
orig=$(cat $knob)
trap 'echo $orig > $knob' EXIT
total=$(awk '/HugePages_Total/{print $2}' /proc/meminfo); free=$(awk '/HugePages_Free/{print $2}' /proc/meminfo)
echo $(( total - free + 4 )) > $knob   # leave exactly 4 free pages (others may be in use)
fifo=$(mktemp -u); mkfifo "$fifo"; exec 3<>"$fifo"; rm -f "$fifo"
out=$(mktemp)
TLBPACK_CONF=pool:hugetlbfs LD_PRELOAD="$lib" "$prog" phases 12 <&3 >"$out" 2>&1 &
pid=$!
for i in $(seq 100); do grep -q phase1 "$out" && break; sleep 0.1; done
total=$(awk '/HugePages_Total/{print $2}' /proc/meminfo)
echo $(( total + 24 )) > $knob         # the pool comes back
echo go >&3
wait $pid; rc=$?
cat "$out"
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
read -r _ h1 _ _ f1 < <(grep phase1 "$out" | tr '=' ' ' | awk '{print $1, $3, $5, $7, $9}')
p1h=$(grep phase1 "$out" | sed 's/.*hugetlbfs=\([0-9]*\).*/\1/'); p1f=$(grep phase1 "$out" | sed 's/.*fallbacks=\([0-9]*\).*/\1/')
p2h=$(grep phase2 "$out" | sed 's/.*hugetlbfs=\([0-9]*\).*/\1/')
[ "$p1f" -gt 0 ] || { echo "FAIL: phase 1 outgrew a 4-page pool without a fallback"; exit 1; }
[ "$p1h" -le 4 ] || { echo "FAIL: phase 1 used $p1h huge pages of a 4-page pool"; exit 1; }
[ "$p2h" -gt "$p1h" ] || { echo "FAIL: huge pages not used again once the pool grew ($p1h -> $p2h)"; exit 1; }
echo "PASS: fell back with $p1f fallbacks, then hugetlbfs pages $p1h -> $p2h"
