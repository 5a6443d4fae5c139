#!/usr/bin/env bash
# Instructions per operation of malloc/free loops, counted by valgrind --tool=callgrind (the
# deterministic measure where there are no hardware counters), for tlbpack and the allocators
# it is compared with. Usage: bench/callgrind/ir_per_op.sh [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
command -v valgrind >/dev/null || { echo "ir_per_op: valgrind is not installed (make setup)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/ops" "$here/ops.c"
lib=/usr/lib/x86_64-linux-gnu
N=100000
ir() { LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$tmp/ops" "$2" "$3" 2>&1 |
  awk '/Collected/ {print $4}'; }
printf '%-10s %18s %24s %18s %18s\n' allocator "malloc(32)+free" "free+malloc 16-512 B" "calloc(1,32)+free" "malloc(4400)+free"
for a in "tlbpack=$build/libtlbpack.so" "jemalloc=$lib/libjemalloc.so.2" "glibc=" \
         "tcmalloc=$lib/libtcmalloc_minimal.so.4" "mimalloc=$lib/libmimalloc.so.2"; do
  name=${a%%=*} path=${a#*=}
  [ -z "$path" ] || [ -e "$path" ] || { printf '%-10s (not installed)\n' "$name"; continue; }
  row=()
  for m in 0 1 2 3; do a1=$(ir "$path" $m $N); a2=$(ir "$path" $m $((2 * N))); row+=($(((a2 - a1) / N))); done
  printf '%-10s %18s %24s %18s %18s\n' "$name" "${row[0]}" "${row[1]}" "${row[2]}" "${row[3]}"
done
echo "(instructions per iteration, loop included; callgrind Ir of N=$((2 * N)) minus N=$N, over $N)"
