#!/usr/bin/env bash
# retain.sh LIB PROGRAM: retain_mb set through TLBPACK_CONF decides how many empty huge pages
# tlbpack keeps after a program frees memory: 12 blocks of one huge page each are freed; with
# retain_mb:0 all 12 pages go back, with retain_mb:8 four are kept, with the default (16) eight.
set -u
lib=$1 prog=$2
fails=0
check() {  # check CONF WANT_KEPT
  local out rc
  out=$(env -u TLBPACK_CONF ${1:+TLBPACK_CONF=$1} LD_PRELOAD="$lib" "$prog" 12 2>&1); rc=$?
  echo "TLBPACK_CONF=${1:-(unset)}: $out"
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fails=$((fails + 1)); return; }
  set -- "$1" "$2" $(echo "$out" | awk '/^retain:/ { print $5, $7, $9 }')
  local mapped=$3 kept=$4 returned=$5
  if [ "$mapped" != 12 ] || [ "$kept" != "$2" ] || [ "$returned" != $((12 - $2)) ]; then
    echo "FAIL: ${1:-default}: 12 pages mapped for the blocks, then $kept kept and $returned given back; expected $2 kept and $((12 - $2)) given back"
    fails=$((fails + 1))
  fi
}
check retain_mb:0 0
check retain_mb:8 4
check "" 8
check retain_mb:64 12
[ $fails = 0 ] || { echo "FAIL: $fails settings"; exit 1; }
echo "PASS: retain_mb through TLBPACK_CONF"
