#!/usr/bin/env bash
# Runs every fuzz target under tests/fuzz/ for a bounded time each.
#   scripts/fuzz.sh [SECONDS] [--build-dir DIR] [--seed N] [TARGET...]
# Targets: tests/fuzz/fuzz_NAME.c (the simulator's: trace readers, --set, regions/smaps; linked
# with the simulator's sources built by clang -fsanitize=fuzzer,address,undefined; corpus
# tests/fuzz/corpus/NAME/), and tests/fuzz/DIR/ with a build.sh (`build.sh OUT` builds the
# target; corpus DIR/corpus/). TARGET names (NAME or DIR) pick some; default: all.
# --seed makes a short run repeatable, as ctest's 3-second run is. New inputs go to a scratch
# directory, never into the kept corpus.
# Exit: 0 all ran clean, 1 a target crashed or failed to build, 77 no target could be built
# (no clang with libFuzzer).
set -u
cd "$(dirname "$0")/.."
SECS=10
OUT=build/fuzz
SEED=()
PICK=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) OUT=$2; shift 2 ;;
    --seed) SEED=(-seed="$2"); shift 2 ;;
    [0-9]*) SECS=$1; shift ;;
    -*) echo "fuzz.sh: unknown argument '$1' (expected SECONDS, --build-dir DIR, --seed N or target names)" >&2; exit 2 ;;
    *) PICK+=("$1"); shift ;;
  esac
done
picked() {
  [ ${#PICK[@]} -eq 0 ] && return 0
  local p
  for p in "${PICK[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}
mkdir -p "$OUT"
CC=""
for c in clang-14 clang; do
  command -v "$c" >/dev/null && { CC=$c; break; }
done
probe="$OUT/probe.c"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' >"$probe"
HAVE_LIBFUZZER=0
[ -n "$CC" ] && "$CC" -fsanitize=fuzzer "$probe" -o "$OUT/probe" 2>/dev/null && HAVE_LIBFUZZER=1

status=0
ran=0
# run NAME BINARY CORPUS: one bounded run; a crash or a sanitizer report fails it.
run() {
  local name=$1 bin=$2 corpus=$3 scratch
  scratch=$(mktemp -d "$OUT/corpus-$name.XXXXXX")
  mkdir -p "$corpus"
  echo "fuzz: $name for ${SECS}s"
  if ! "$bin" "${SEED[@]}" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=1024 -print_final_stats=0 \
        -artifact_prefix="$OUT/$name-" "$scratch" "$corpus" >"$OUT/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; log: $OUT/$name.log; crash input: $(ls "$OUT/$name-"* 2>/dev/null | head -1)" >&2
    tail -30 "$OUT/$name.log" >&2
    status=1
  else
    echo "fuzz: $name: $(grep -E '^Done [0-9]+ runs|runs' "$OUT/$name.log" | tail -1)"
  fi
  ran=$((ran + 1))
  rm -rf "$scratch"
}

# The simulator's targets: one library build, one binary per fuzz_*.c.
sim_targets=()
for t in tests/fuzz/fuzz_*.c; do
  [ -f "$t" ] || continue
  n=$(basename "$t" .c); n=${n#fuzz_}
  picked "$n" && sim_targets+=("$n")
done
if [ ${#sim_targets[@]} -gt 0 ] && [ $HAVE_LIBFUZZER = 0 ]; then
  echo "fuzz: skipped ${sim_targets[*]}: no clang with libFuzzer (install clang and libclang-rt-14-dev)"
elif [ ${#sim_targets[@]} -gt 0 ]; then
  FLAGS=(-g -O1 -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=fuzzer-no-link,address,undefined
         -fno-sanitize-recover=undefined -Iinclude -Isim)
  LIB="$OUT/libtlbsim-fuzz.a"
  if [ ! -f "$LIB" ] || [ scripts/fuzz.sh -nt "$LIB" ] || [ -n "$(find sim include -newer "$LIB" -name '*.[ch]' | head -1)" ]; then
    rm -f "$OUT"/*.o "$LIB"
    for s in $(ls sim/*.c | grep -vE 'sim/(main|gen)\.c$'); do
      "$CC" "${FLAGS[@]}" -c "$s" -o "$OUT/$(basename "$s" .c).o" || { echo "fuzz: compiling $s failed" >&2; exit 1; }
    done
    ar rcs "$LIB" "$OUT"/*.o
  fi
  for n in "${sim_targets[@]}"; do
    t=tests/fuzz/fuzz_$n.c bin=$OUT/fuzz_$n
    if [ ! -x "$bin" ] || [ "$t" -nt "$bin" ] || [ "$LIB" -nt "$bin" ]; then
      "$CC" "${FLAGS[@]}" -fsanitize=fuzzer "$t" "$LIB" -o "$bin" || { echo "fuzz: building fuzz_$n failed" >&2; status=1; continue; }
    fi
    run "$n" "$bin" "tests/fuzz/corpus/$n"
  done
fi

# Other modules' targets: a directory with build.sh (which picks libFuzzer or a standalone driver).
for d in tests/fuzz/*/; do
  d=${d%/}
  n=$(basename "$d")
  [ -x "$d/build.sh" ] || [ -f "$d/build.sh" ] || continue
  picked "$n" || continue
  if ! bash "$d/build.sh" "$OUT/dir_$n" >"$OUT/dir_$n.build.log" 2>&1; then
    echo "fuzz: building $n failed: $(tail -3 "$OUT/dir_$n.build.log")" >&2
    status=1
    continue
  fi
  run "$n" "$OUT/dir_$n" "$d/corpus"
done

if [ $ran = 0 ] && [ $status = 0 ]; then
  echo "fuzz: skipped: no fuzz target could be built here (clang's libFuzzer not found)"
  exit 77
fi
exit $status
