#!/usr/bin/env bash
# build.sh OUT [libfuzzer|standalone]: builds the TLBPACK_CONF fuzz target to OUT
# (../build_target.sh: libFuzzer when clang has it, else the built-in mutation driver).
# Run: OUT -max_total_time=SECONDS tests/fuzz/conf/corpus (either build takes that form; the
# standalone one also takes -runs=N). scripts/fuzz.sh (`make fuzz`) builds and runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
[ -f "$root/alloc/options.c" ] || { echo "build.sh: $root/alloc/options.c not found: the allocator is not in this tree yet" >&2; exit 1; }
exec bash "$here/../build_target.sh" "$here/fuzz_conf.c" "$@" # fuzz_conf.c includes alloc/options.c
