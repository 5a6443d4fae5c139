#!/usr/bin/env bash
# cxx_sites.sh LIB plain|aligned: C++ `new` under LD_PRELOAD=LIB is grouped by the site that
# called it (cxx_sites.cpp, compiled here with g++: the build itself is C only). Checks that the
# program passed and that tlbpack's stats show it served its 2 x 3 x 4000 objects.
set -u
lib=$1 form=$2
command -v g++ >/dev/null || { echo "SKIP: no g++"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
g++ -O2 -o "$dir/cxx_sites" "$(dirname "$0")/cxx_sites.cpp" 2>"$dir/gxx.err" || { cat "$dir/gxx.err"; echo "FAIL: g++ could not build cxx_sites.cpp"; exit 1; }
out=$(TLBPACK_CONF=stats:1 LD_PRELOAD="$lib" "$dir/cxx_sites" "$form" 2>"$dir/err"); rc=$?
echo "$out"
grep -v '^tlbpack:   ' "$dir/err"
[ $rc -eq 0 ] || { echo "FAIL: cxx_sites $form exited $rc under $lib"; exit 1; }
echo "$out" | grep -qx ok || { echo "FAIL: cxx_sites $form did not finish"; exit 1; }
# 8000 objects of 48 (or 64) bytes per form of new, at the least (16000 with the warm-up).
total=$(awk '$1=="tlbpack:" && $2=="allocated_total" {print $3}' "$dir/err")
[ "${total:-0}" -ge $((8000 * 48)) ] || { echo "FAIL: tlbpack's allocated_total is '${total:-none}', below the 384000 bytes of new it must have served"; exit 1; }
echo "PASS: cxx_sites $form (allocated_total $total)"
