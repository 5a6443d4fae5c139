#!/usr/bin/env bash
# Installs into a temporary prefix with `cmake --install` and `make install PREFIX=`, checks
# the files, builds a program against the install with pkg-config and with find_package, runs
# it, and runs the installed `tlbpack run` (which must find the installed library).
# Usage: install.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
BUILD=$(realpath "$1") SRC=$(realpath "$2")
[ -e "$BUILD/libtlbpack.so" ] || skip "$BUILD/libtlbpack.so not built (the allocator is not merged yet)"
T=$(mktemp -d "${TMPDIR:-/tmp}/tlbpack-install-XXXXXX")
trap 'rm -rf "$T" "$_tmp_out" "$_tmp_err"' EXIT
P=$T/prefix

run cmake --install "$BUILD" --prefix "$P"
expect_rc 0 "cmake --install"
libdir=$(dirname "$(find "$P" -name 'libtlbpack.so.0' | head -1)")
[ -d "$libdir" ] && ok "libdir $libdir" || { fail "no libtlbpack.so.0 installed"; finish; }
for f in bin/tlbpack include/tlbpack.h share/man/man1/tlbpack.1 share/man/man1/tlbsim.1 share/man/man3/tlbpack.3; do
  [ -e "$P/$f" ] && ok "installed $f" || fail "not installed: $f"
done
for f in libtlbpack.so libtlbpack.a pkgconfig/tlbpack.pc cmake/tlbpack/tlbpackConfig.cmake \
         cmake/tlbpack/tlbpackConfigVersion.cmake cmake/tlbpack/tlbpackTargets.cmake; do
  [ -e "$libdir/$f" ] && ok "installed lib/$f" || fail "not installed: $libdir/$f"
done
if [ -e "$BUILD/tlbsim" ]; then
  [ -x "$P/bin/tlbsim" ] && ok "installed bin/tlbsim" || fail "tlbsim built but not installed"
  [ -e "$SRC/include/tlbsim.h" ] && { [ -e "$P/include/tlbsim.h" ] && ok "installed tlbsim.h" || fail "tlbsim.h not installed"; }
fi
[ "$(readlink "$libdir/libtlbpack.so")" = "libtlbpack.so.0" ] || \
  [ "$(readlink -f "$libdir/libtlbpack.so")" = "$(readlink -f "$libdir/libtlbpack.so.0")" ] && \
  ok "libtlbpack.so -> libtlbpack.so.0" || fail "libtlbpack.so does not lead to libtlbpack.so.0"

# pkg-config, from a copy of the prefix elsewhere too: the .pc file is relocatable.
export PKG_CONFIG_PATH=$libdir/pkgconfig
run pkg-config --modversion tlbpack; expect_rc 0 "pkg-config finds tlbpack"
expect_in out "$(sed -n 's/^project(tlbpack VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")" "pkg-config version"
run pkg-config --variable=includedir tlbpack
[ "$(realpath "$OUT")" = "$(realpath "$P/include")" ] && ok "pkg-config includedir" || fail "includedir $OUT"
run sh -c "cc '$SRC/tests/tools/consumer/consumer.c' -o '$T/pc_consumer' \$(pkg-config --cflags --libs tlbpack) -Wl,-rpath,'$libdir'"
expect_rc 0 "build with pkg-config"
run "$T/pc_consumer"; expect_rc 0 "run the pkg-config build"; expect_in out "consumer ok" "pkg-config build output"
run sh -c "ldd '$T/pc_consumer'"; expect_in out "libtlbpack.so.0 => $libdir" "linked against the installed soname"
run sh -c "cc '$SRC/tests/tools/consumer/consumer.c' -o '$T/pc_static' \$(pkg-config --cflags tlbpack) '$libdir/libtlbpack.a' \$(pkg-config --static --libs-only-l tlbpack | sed 's/-ltlbpack//')"
expect_rc 0 "static build with pkg-config --static"
run "$T/pc_static"; expect_rc 0 "run the static build"

# find_package(tlbpack)
run cmake -S "$SRC/tests/tools/consumer" -B "$T/cbuild" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release
expect_rc 0 "configure with find_package(tlbpack)"
run cmake --build "$T/cbuild" -j 2; expect_rc 0 "build with find_package(tlbpack)"
run "$T/cbuild/consumer_shared"; expect_rc 0 "run tlbpack::tlbpack build"; expect_in out "consumer ok" "tlbpack::tlbpack"
if [ -e "$T/cbuild/consumer_static" ]; then
  run "$T/cbuild/consumer_static"; expect_rc 0 "run tlbpack::tlbpack_static build"
else fail "find_package gave no tlbpack::tlbpack_static"; fi
if [ -e "$BUILD/libtlbsim.a" ]; then
  if [ -e "$T/cbuild/consumer_sim" ]; then
    run "$T/cbuild/consumer_sim"; expect_rc 0 "run tlbpack::tlbsim build"; expect_in out "sim consumer ok" "tlbpack::tlbsim"
  else fail "libtlbsim.a is built but find_package gave no tlbpack::tlbsim"; fi
fi

# The installed command finds the installed library, not the build tree's.
run "$P/bin/tlbpack" run --dry-run -- true
expect_rc 0 "installed tlbpack run"; expect_in out "LD_PRELOAD=$(realpath "$libdir")/libtlbpack.so.0" "installed tlbpack preloads the installed library"
run env LD_LIBRARY_PATH= "$P/bin/tlbpack" run -- "$T/cbuild/consumer_shared"
expect_rc 0 "installed tlbpack runs a program"

# make install PREFIX=... (the Makefile front door) installs the same tree.
run make -s -C "$SRC" install BUILD="$BUILD" PREFIX="$T/p2"
expect_rc 0 "make install PREFIX="
[ -e "$T/p2/bin/tlbpack" ] && [ -e "$T/p2/include/tlbpack.h" ] && [ -n "$(find "$T/p2" -name libtlbpack.so.0)" ] \
  && ok "make install PREFIX= installed bin, include, lib" || fail "make install PREFIX= tree incomplete"
finish
