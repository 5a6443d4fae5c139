#!/usr/bin/env bash
# build.sh OUT [libfuzzer|standalone]: builds the TLBPACK_CONF fuzz target to OUT.
# libfuzzer (default when clang has libFuzzer): clang -fsanitize=fuzzer,address,undefined;
# standalone: cc with ASan+UBSan and the built-in mutation driver (-DTP_FUZZ_STANDALONE).
# Run: OUT -max_total_time=SECONDS tests/fuzz/conf/corpus   (either build takes these flags;
# the standalone one replays the corpus files and runs -runs=N mutations).
set -euo pipefail
out=${1:?usage: build.sh OUT [libfuzzer|standalone]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
[ -f "$root/alloc/options.c" ] || { echo "build.sh: $root/alloc/options.c not found: the allocator is not in this tree yet" >&2; exit 1; }
mode=${2:-auto}
cc=${CLANG:-$(command -v clang-14 || command -v clang || true)}
if [ "$mode" = auto ]; then
  mode=standalone
  if [ -n "$cc" ] && echo 'int LLVMFuzzerTestOneInput(const char*d,long n){return 0;}' |
       "$cc" -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then mode=libfuzzer; fi
fi
src=("$here/fuzz_conf.c" "$root/alloc/options.c")
inc=(-I"$root/include" -I"$root/alloc" -D_GNU_SOURCE)
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
case $mode in
  libfuzzer) "$cc" -g -O1 $san -fsanitize=fuzzer "${inc[@]}" "${src[@]}" -o "$out" ;;
  standalone) ${CC:-cc} -g -O1 $san -DTP_FUZZ_STANDALONE "${inc[@]}" "${src[@]}" -o "$out" ;;
  *) echo "build.sh: unknown mode '$mode' (libfuzzer or standalone)" >&2; exit 2 ;;
esac
echo "build.sh: built $out ($mode)" >&2
