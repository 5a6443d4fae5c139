#!/usr/bin/env bash
# build_target.sh SRC OUT [libfuzzer|standalone]: builds one fuzz target, SRC, to OUT; each
# tests/fuzz/DIR/build.sh calls it with its source.
# libfuzzer (default when clang has libFuzzer): clang -fsanitize=fuzzer,address,undefined;
# standalone: cc with ASan+UBSan and the target's own driver (-DTP_FUZZ_STANDALONE).
set -euo pipefail
src=${1:?usage: build_target.sh SRC OUT [libfuzzer|standalone]}
out=${2:?usage: build.sh OUT [libfuzzer|standalone]}
root=$(cd "$(dirname "$0")/../.." && pwd)
mode=${3:-auto}
cc=${CLANG:-$(command -v clang-14 || command -v clang || true)}
if [ "$mode" = auto ]; then
  mode=standalone
  if [ -n "$cc" ] && echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' |
       "$cc" -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then mode=libfuzzer; fi
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
case $mode in
  libfuzzer) "$cc" -g -O1 $san -fsanitize=fuzzer -I"$root/include" "$src" -o "$out" ;;
  standalone) ${CC:-cc} -g -O1 $san -DTP_FUZZ_STANDALONE -I"$root/include" "$src" -o "$out" ;;
  *) echo "build.sh: unknown mode '$mode' (libfuzzer or standalone)" >&2; exit 2 ;;
esac
echo "build.sh: built $out ($mode)" >&2
