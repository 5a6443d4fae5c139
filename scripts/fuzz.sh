#!/usr/bin/env bash
# Runs every libFuzzer target under tests/fuzz/ (fuzz_*.c) for a bounded time each.
#   scripts/fuzz.sh [SECONDS] [--build-dir DIR]
# Targets link the simulator's sources built with clang -fsanitize=fuzzer,address,undefined.
# Corpora: tests/fuzz/corpus/<target>/ (read; new inputs go to a scratch directory).
# Exit: 0 all ran clean, 1 a target crashed or failed to build, 77 no clang with libFuzzer.
set -u
cd "$(dirname "$0")/.."
SECS=10
OUT=build/fuzz
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) OUT=$2; shift 2 ;;
    [0-9]*) SECS=$1; shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (expected SECONDS or --build-dir DIR)" >&2; exit 2 ;;
  esac
done
CC=""
for c in clang-14 clang; do
  command -v "$c" >/dev/null && { CC=$c; break; }
done
mkdir -p "$OUT"
probe="$OUT/probe.c"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' >"$probe"
if [ -z "$CC" ] || ! "$CC" -fsanitize=fuzzer "$probe" -o "$OUT/probe" 2>/dev/null; then
  echo "fuzz: skipped: no clang with libFuzzer (install clang and libclang-rt-14-dev)"
  exit 77
fi
FLAGS=(-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -Iinclude -Isim)
# The library, rebuilt when any source is newer than it.
LIB="$OUT/libtlbsim-fuzz.a"
SRCS=$(ls sim/*.c | grep -vE 'sim/(main|gen)\.c$')
if [ ! -f "$LIB" ] || [ -n "$(find sim include -newer "$LIB" -name '*.[ch]' | head -1)" ]; then
  rm -f "$OUT"/*.o "$LIB"
  for s in $SRCS; do
    "$CC" "${FLAGS[@]}" -c "$s" -o "$OUT/$(basename "$s" .c).o" || { echo "fuzz: compiling $s failed" >&2; exit 1; }
  done
  ar rcs "$LIB" "$OUT"/*.o
fi
status=0
for t in tests/fuzz/fuzz_*.c; do
  name=$(basename "$t" .c); short=${name#fuzz_}
  bin="$OUT/$name"
  if [ ! -x "$bin" ] || [ "$t" -nt "$bin" ] || [ "$LIB" -nt "$bin" ]; then
    "$CC" "${FLAGS[@]}" -fsanitize=fuzzer "$t" "$LIB" -o "$bin" || { echo "fuzz: building $name failed" >&2; status=1; continue; }
  fi
  scratch=$(mktemp -d "$OUT/corpus-$short.XXXXXX")
  corpus=tests/fuzz/corpus/$short
  mkdir -p "$corpus"
  echo "fuzz: $name for ${SECS}s"
  if ! "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=1024 -print_final_stats=0 \
        -artifact_prefix="$OUT/$name-" "$scratch" "$corpus" >"$OUT/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; log: $OUT/$name.log; crash input: $(ls "$OUT/$name-"* 2>/dev/null | head -1)" >&2
    tail -30 "$OUT/$name.log" >&2
    status=1
  else
    echo "fuzz: $name: $(grep -E '^Done [0-9]+ runs' "$OUT/$name.log" | tail -1)"
  fi
  rm -rf "$scratch"
done
exit $status
