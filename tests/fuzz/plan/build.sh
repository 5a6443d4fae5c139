#!/usr/bin/env bash
# build.sh OUT [libfuzzer|standalone]: builds the placement plan fuzz target to OUT.
# libfuzzer (default when clang has libFuzzer): clang -fsanitize=fuzzer,address,undefined;
# standalone: cc with ASan+UBSan, replaying the corpus files given as arguments.
set -euo pipefail
out=${1:?usage: build.sh OUT [libfuzzer|standalone]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mode=${2:-auto}
cc=${CLANG:-$(command -v clang-14 || command -v clang || true)}
if [ "$mode" = auto ]; then
  mode=standalone
  if [ -n "$cc" ] && echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' |
       "$cc" -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then mode=libfuzzer; fi
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
case $mode in
  libfuzzer) "$cc" -g -O1 $san -fsanitize=fuzzer -I"$root/include" "$here/fuzz_plan.c" -o "$out" ;;
  standalone) ${CC:-cc} -g -O1 $san -DTP_FUZZ_STANDALONE -I"$root/include" "$here/fuzz_plan.c" -o "$out" ;;
  *) echo "build.sh: unknown mode '$mode' (libfuzzer or standalone)" >&2; exit 2 ;;
esac
echo "build.sh: built $out ($mode)" >&2
