#!/usr/bin/env bash
# The layer test can fail: given alloc/'s objects and one small object more, compiled here in
# the name of a lower layer's file, that refers to what a higher layer defines, layers.sh
# exits 1 and names the reference. One case per upward reference that issue 62 took out (a
# group record, the refill clock or the thread cache read from below; the heap's page map read
# from the OS layer), and one call. A fixture that refers only to its own layer's data passes.
# Usage: tests/alloc/layers_fail.sh ALLOC_DIR OBJECT.o...
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
shift
objects=()
for a in "$@"; do IFS=';' read -ra more <<<"$a"; objects+=("${more[@]}"); done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
fails=0
# case FILE SYMBOL KIND EXPECT: a fixture object for alloc/FILE that reads (KIND data, tls) or
# calls (KIND call) SYMBOL; EXPECT: fail (exit 1, a line naming FILE and SYMBOL) or pass.
case_() {
  local file=$1 sym=$2 kind=$3 expect=$4 src
  mkdir -p "$tmp/$file.d"
  case $kind in
    data) src="extern char $sym[]; char *layers_fixture(void) { return $sym; }" ;;
    tls) src="extern __thread char *$sym; char *layers_fixture(void) { return $sym; }" ;;
    call) src="void $sym(void); void layers_fixture(void) { $sym(); }" ;;
  esac
  printf '%s\n' "$src" | "$cc" -c -x c -fPIC -o "$tmp/$file.d/$file.o" -
  set +e
  out=$("$here/layers.sh" "$dir" "${objects[@]}" "$tmp/$file.d/$file.o" 2>&1)
  rc=$?
  set -e
  if [ "$expect" = fail ]; then
    if [ $rc -eq 1 ] && grep -q "alloc/$file: .*$sym" <<<"$out"; then
      echo "layers_fail: ok: $file referring to $sym fails: $(grep "alloc/$file: .*$sym" <<<"$out" | head -1)"
    else
      echo "layers_fail: FAIL: $file referring to $sym ($kind): exit $rc, expected 1 and a line naming it:"
      echo "$out"
      fails=$((fails + 1))
    fi
  elif [ $rc -ne 0 ]; then
    echo "layers_fail: FAIL: $file referring to $sym ($kind), its own layer's or a lower one's: exit $rc:"
    echo "$out"
    fails=$((fails + 1))
  else
    echo "layers_fail: ok: $file referring to $sym passes"
  fi
}
case_ heap.c _tp_groups data fail        # a group record looked up by the heap (groups layer)
case_ heap.c _tp_shared_group data fail
case_ runs.c _tp_tc tls fail             # the thread cache (cache layer) read by the runs
case_ slab.c _tp_tc tls fail
case_ os.c _tp_map data fail             # the heap's page map read by the OS layer
case_ os.c _tp_refill_clock data fail    # the heap's clock, from below it
case_ heap.c _tp_tcache_flush_all call fail  # a call up
case_ slab.c _tp_refill_clock data pass  # the heap's clock, from above it
case_ heap.c _tp_opt data pass           # the options (base layer)
[ $fails -eq 0 ] || { echo "layers_fail: $fails case(s) wrong"; exit 1; }
echo "layers_fail: every upward reference fails the layer test; references down pass"
