#!/usr/bin/env bash
# gcc/g++ (with make, cmake, as, ld) building this project itself under the preloaded allocator.
# The same tree is built twice in the same directory, without and with preload: every object
# file and library must come out byte for byte the same. Long: run by scripts/stress.sh.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd cmake make gcc sha256sum
tp_mktemp
jobs=${TP_JOBS:-2}
bdir=$TP_TMP/build
build() {  # $1 = label, rest = command prefix
  local label=$1; shift
  rm -rf "$bdir"
  "$@" cmake -S "$TP_SRC_DIR" -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$TP_TMP/$label.log" 2>"$TP_TMP/$label.err" &&
    "$@" cmake --build "$bdir" -j "$jobs" >>"$TP_TMP/$label.log" 2>>"$TP_TMP/$label.err" ||
    { tail -20 "$TP_TMP/$label.log"; tp_strip_stats "$TP_TMP/$label.err" | tail -20; tp_fail "$label build failed"; } >&2
  (cd "$bdir" && find . -type f \( -name '*.o' -o -name '*.a' -o -name '*.so' \) -print0 | sort -z | xargs -0 sha256sum) >"$TP_TMP/$label.sums"
}
build plain env
build preload env TLBPACK_CONF=$TP_CONF LD_PRELOAD="$TP_LIB"
n=$(wc -l <"$TP_TMP/preload.sums")
[ "$n" -gt 0 ] || tp_fail "the build produced no object files"
cmp -s "$TP_TMP/plain.sums" "$TP_TMP/preload.sums" || { diff "$TP_TMP/plain.sums" "$TP_TMP/preload.sums" | head >&2; tp_fail "build outputs differ under preload"; }
# The compiler that wrote the largest object file held at least as many bytes (as for g++ in
# real_gxx.sh).
big=$(cd "$bdir" && find . -type f -name '*.o' -printf '%s\n' | sort -n | tail -1)
tp_check_stats "$TP_TMP/preload.err" "the build (cmake, make, gcc, as, ld)" "${big:-1}"
tp_pass "$n object files and libraries identical"
