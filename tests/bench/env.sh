#!/usr/bin/env bash
# tlbbench runs every cell in a clean allocator environment (docs/benchmarks.md, "How tlbbench measures"): the
# caller's LD_PRELOAD, MALLOC_CONF, TLBPACK_CONF, GLIBC_TUNABLES, ... never reach a workload;
# and when a workload's malloc does not come from the library preloaded for it, tlbbench warns.
# Usage: env.sh BUILD_DIR
set -u
build=${1:?usage: env.sh BUILD_DIR}
je=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
[ -e "$je" ] || { echo "bench_env: SKIP: $je not installed (make setup)"; exit 77; }
out=$(mktemp -d /tmp/tb-env-XXXXXX)
trap 'rm -rf "$out"' EXIT
fails=0
fail() { echo "bench_env: FAIL: $*" >&2; fails=$((fails + 1)); }
# runs.csv: workload,allocator,run,status,wall_s,ns_per_op,peak_rss_kb,hugetlb_kb,hot_entries,hot_floor,malloc_from,...
row() { awk -F, -v a="$2" '$1 == "records" && $2 == a { print $4, $11; exit }' "$1/runs.csv"; }

# 1. The caller preloads jemalloc and sets TLBPACK_CONF with a regions file (tlbbench itself runs
#    on jemalloc then). The glibc cell must still get glibc's malloc, the tlbpack cell tlbpack's,
#    and no workload may write the caller's regions file.
LD_PRELOAD=$je TLBPACK_CONF=stats:1,regions:$out/leak.regions GLIBC_TUNABLES=glibc.malloc.hugetlb=2 \
  "$build/tlbbench" --scale tiny --runs 1 --workloads records --allocators glibc,tlbpack --no-sim \
  --out "$out/r1" >/dev/null 2>"$out/err1" || fail "tlbbench exited $? (caller preloading jemalloc): $(tail -3 "$out/err1")"
[ "$(row "$out/r1" glibc)" = "0 libc.so.6" ] || fail "glibc cell: status and malloc_from '$(row "$out/r1" glibc)', expected '0 libc.so.6' (the caller's LD_PRELOAD reached it?)"
[ "$(row "$out/r1" tlbpack)" = "0 libtlbpack.so" ] || fail "tlbpack cell: status and malloc_from '$(row "$out/r1" tlbpack)', expected '0 libtlbpack.so'"
[ ! -e "$out/leak.regions" ] || fail "a workload wrote the caller's TLBPACK_CONF regions file: TLBPACK_CONF reached it"
grep -q 'warning' "$out/err1" && fail "unexpected warning: $(grep warning "$out/err1")"

# 2. The caller's MALLOC_CONF would make jemalloc abort at start (tlbbench itself runs on glibc).
MALLOC_CONF=abort_conf:true,no_such_option:1 MIMALLOC_SHOW_ERRORS=1 \
  "$build/tlbbench" --scale tiny --runs 1 --workloads records --allocators jemalloc --no-sim \
  --out "$out/r2" >/dev/null 2>"$out/err2" || fail "tlbbench exited $? (caller's MALLOC_CONF): $(tail -3 "$out/err2")"
[ "$(row "$out/r2" jemalloc)" = "0 libjemalloc.so.2" ] || fail "jemalloc cell: status and malloc_from '$(row "$out/r2" jemalloc)', expected '0 libjemalloc.so.2' (the caller's MALLOC_CONF reached it?)"

# 3. A "jemalloc" that is not a malloc at all (libm): the workload's malloc comes from libc, and
#    tlbbench says so.
libm=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/x86_64-linux-gnu/libm.so.6 2>/dev/null | head -1)
"$build/tlbbench" --scale tiny --runs 1 --workloads records --allocators jemalloc --lib "jemalloc=$libm" --no-sim \
  --out "$out/r3" >/dev/null 2>"$out/err3" || fail "tlbbench exited $? (--lib jemalloc=$libm)"
grep -q "tlbbench: warning: records x jemalloc: malloc comes from libc.so.6, expected libm.so.6" "$out/err3" \
  || fail "no warning that malloc came from libc.so.6 instead of the preloaded libm.so.6: $(cat "$out/err3")"
[ $fails = 0 ] || exit 1
echo "bench_env: ok (caller's allocator variables removed; a preload that is not the malloc reported)"
