#!/usr/bin/env bash
# test-asan.sh — `make test-asan`: the unit tests and the simulator built with AddressSanitizer
# and UndefinedBehaviorSanitizer in a build dir of their own (ASAN_BUILD, default build-asan),
# then every ctest test that does not preload libtlbpack.so (label `preload`: an allocator that
# replaces malloc cannot run under ASan, which replaces malloc itself). Any sanitizer report
# fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bdir=${ASAN_BUILD:-build-asan}
jobs=${JOBS:-2}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Debug -DTP_SANITIZE=ON \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$bdir" -j "$jobs"
# detect_leaks: the tests' own leaks are bugs too. abort_on_error is off so that Criterion's
# .signal = SIGABRT tests are not confused with sanitizer reports (which exit 1 instead).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$bdir"
# Not run here, because they load an instrumented libtlbpack.so into programs that are not
# (ASan must come first), or run programs under other allocators: the `preload` label
# (tests/integration), *preload* names (tests/alloc, tools run), bench_smoke (workloads under
# LD_PRELOAD), tools.compare* (valgrind + preload), tools.install* (links a consumer to the
# installed .so), tools.pool_reserve* (lists a process it starts preloaded), tools.profile_plan*
# and tools.stats_text* (run programs with the library preloaded); and the fuzz runs, which
# build their own sanitized binaries.
exclude='preload|^bench_smoke$|^tools\.(compare|install|pool_reserve|profile_plan|stats_text)|fuzz'
n=$(ctest -N -LE preload -E "$exclude" | awk '/Total Tests:/ {print $3}')
[ "${n:-0}" -gt 0 ] || { echo "test-asan: FAIL: no tests to run in $bdir (are the unit tests built?)" >&2; exit 1; }
echo "test-asan: running $n tests under ASan+UBSan (excluded: label preload, names matching '$exclude')"
ctest --output-on-failure -j "$jobs" -LE preload -E "$exclude"
