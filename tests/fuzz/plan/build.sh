#!/usr/bin/env bash
# build.sh OUT [libfuzzer|standalone]: builds the placement plan fuzz target to OUT
# (../build_target.sh: libFuzzer when clang has it, else a standalone driver replaying the
# corpus files given as arguments).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../build_target.sh" "$here/fuzz_plan.c" "$@"
