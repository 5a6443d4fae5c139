# Shared helpers for the integration scripts (sourced, not run).
#
# Environment (ctest sets these; defaults work from the repository root):
#   TP_LIB        the library to preload (default: build/libtlbpack.so). Point it at another
#                 malloc (e.g. /usr/lib/x86_64-linux-gnu/libjemalloc.so.2) to check the scripts
#                 themselves: the tlbpack-only checks (stats lines) are then skipped with a note.
#                 What counts as tlbpack is what the library is (it exports tp_malloc), not its
#                 file name.
#   TP_BUILD_DIR  the build directory holding the helper programs (default: build)
#   TP_STRESS=1   long version of each test (scripts/stress.sh sets it)
#   TP_KEEP_TMP=1 keep the test's temporary directory (outputs, logs) and print where it is
#   TP_CONF_EXTRA more TLBPACK_CONF settings for the preloaded runs, e.g. group:thread,pool:4k
#                 (they always get stats:1 so that the stats show tlbpack served them)
# Exit codes: 0 pass, 1 fail, 77 skipped (ctest SKIP_RETURN_CODE) with a message saying why.
set -u

TP_SRC_DIR=${TP_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TP_BUILD_DIR=${TP_BUILD_DIR:-$TP_SRC_DIR/build}
TP_LIB=${TP_LIB:-$TP_BUILD_DIR/libtlbpack.so}
# Absolute: programs under test change directory and start children that need the same paths.
case "$TP_BUILD_DIR" in /*) ;; *) TP_BUILD_DIR=$PWD/$TP_BUILD_DIR ;; esac
case "$TP_LIB" in /*) ;; *) TP_LIB=$PWD/$TP_LIB ;; esac
TP_STRESS=${TP_STRESS:-0}
TP_NAME=$(basename "$0" .sh)
TP_CONF="stats:1${TP_CONF_EXTRA:+,$TP_CONF_EXTRA}"
# Debian's interpreter: the CPython test suite package belongs to it, not to any other python3.
TP_PY=${TP_PY:-/usr/bin/python3}

tp_log() { echo "$TP_NAME: $*" >&2; }
tp_fail() { echo "$TP_NAME: FAIL: $*" >&2; exit 1; }
tp_skip() { echo "$TP_NAME: SKIP: $*" >&2; exit 77; }
tp_pass() { echo "$TP_NAME: PASS${1:+: $*}" >&2; exit 0; }

# The library under test must exist: a missing build is a failure, never a skip. A library
# named like tlbpack that is not tlbpack (exports no tp_malloc) is a failure too: the tlbpack
# checks would otherwise turn into notes without anyone asking for it.
tp_need_lib() {
  [ -f "$TP_LIB" ] || tp_fail "preload library $TP_LIB is not built (run \`make\` first, or set TP_LIB)"
  case "$(basename "$TP_LIB")" in
    *tlbpack*) tp_is_tlbpack || tp_fail "$TP_LIB is named like tlbpack but does not export tp_malloc (nm -D)" ;;
  esac
}

tp_need_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || tp_fail "'$c' is not installed (run \`make setup\` as root)"
  done
}

tp_need_prog() {  # a helper program built by CMake next to the library
  [ -x "$TP_BUILD_DIR/$1" ] || tp_fail "helper program $TP_BUILD_DIR/$1 is not built (run \`make\`)"
}

# Whether TP_LIB is tlbpack: it exports tp_malloc (its dynamic symbol table says so), whatever
# the file is called.
TP_IS_TLBPACK=
tp_is_tlbpack() {
  if [ -z "$TP_IS_TLBPACK" ]; then
    command -v nm >/dev/null 2>&1 || tp_fail "'nm' is not installed (binutils): cannot tell whether $TP_LIB is tlbpack"
    if nm -D --defined-only "$TP_LIB" 2>/dev/null | awk '$NF == "tp_malloc" { f = 1 } END { exit !f }'; then
      TP_IS_TLBPACK=1
    else
      TP_IS_TLBPACK=0
    fi
  fi
  [ "$TP_IS_TLBPACK" = 1 ]
}

# A private temporary directory, removed on exit (also on failure).
TP_TMP=
TP_CLEANUP=()
tp_cleanup() {
  local c
  for c in "${TP_CLEANUP[@]+"${TP_CLEANUP[@]}"}"; do eval "$c" || true; done
  if [ -n "$TP_TMP" ]; then
    if [ "${TP_KEEP_TMP:-0}" = 1 ]; then echo "$TP_NAME: files kept in $TP_TMP" >&2; else rm -rf "$TP_TMP"; fi
  fi
}
trap tp_cleanup EXIT
trap 'exit 130' INT TERM
tp_mktemp() { TP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlbpack-$TP_NAME.XXXXXX"); }

# tp_pre CMD...: run CMD with the library preloaded (TLBPACK_CONF passes through from the caller).
tp_pre() { env LD_PRELOAD="$TP_LIB" "$@"; }

# Removes the stats blocks (stats:1 text: a `tlbpack: stats pid=...` line and its
# `tlbpack:   KEY VALUE` rows; stats:json: one {"pid":...} object a line) from a stderr
# capture so that it can be compared with a plain run. Everything else tlbpack prints (its
# warnings and errors, `tlbpack: ...` lines) stays, so that it shows up as unexpected stderr.
tp_strip_stats() {
  grep -v -E '^tlbpack: stats pid=[0-9]+ |^tlbpack:   [a-z0-9_]+ +[^ ]+$|^\{"pid":[0-9]+,.*"allocated_total":' "$1" || true
}

# tp_check_stats FILE WHAT MIN_BYTES [KEY]: FILE is stderr of a run with TLBPACK_CONF=stats:1;
# every process prints its own block. tlbpack must have served the workload's data, not only
# some start-up bytes of libc: the largest KEY (default allocated_total) of any process must be
# at least MIN_BYTES, a figure the caller derives from what its workload must allocate.
# Prints the number of processes that reported, the bytes they allocated in total and the
# largest KEY.
tp_check_stats() {
  local f=$1 what=$2 min=$3 key=${4:-allocated_total}
  if ! tp_is_tlbpack; then
    tp_log "note: TP_LIB=$TP_LIB is not tlbpack (exports no tp_malloc); stats check for $what skipped"
    return 0
  fi
  local summary
  summary=$(awk -v k="$key" '$1=="tlbpack:" && $2=="allocated_total" { n++; if ($3+0 > 0) { served++; bytes += $3 } }
                 $1=="tlbpack:" && $2==k { if ($3+0 > max) max = $3+0 }
                 END { printf "%d %d %.0f %.0f\n", n, served, bytes, max }' "$f")
  set -- $summary
  [ "$1" -gt 0 ] || { sed -n '1,20p' "$f" >&2; tp_fail "$what printed no 'tlbpack:   allocated_total' line: stats:1 not honoured or library not loaded"; }
  [ "$2" -gt 0 ] || tp_fail "$what: tlbpack reported allocated_total 0 in all $1 processes (allocations not served by tlbpack)"
  [ "$4" -ge "$min" ] || tp_fail "$what: the largest $key tlbpack reported is $4 bytes, below the $min bytes the workload must allocate: its data was not served by tlbpack"
  tp_log "stats: $2 of $1 processes served by tlbpack, $3 bytes allocated in total, largest $key $4 (at least $min expected)"
}

# tp_stat FILE KEY: the value of one stats key from the last block in FILE (empty when absent).
tp_stat() { awk -v k="$2" '$1=="tlbpack:" && $2==k { v=$3 } END { print v }' "$1"; }

# A free TCP port on 127.0.0.1, chosen by the kernel.
tp_free_port() {
  "$TP_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---- the hugetlbfs pool a test needs ---------------------------------------------------
# A test that depends on the pool sets it and gets it back: its ctest entry holds the
# RESOURCE_LOCK hugetlb_pool, so no other pool-setting test runs meanwhile.
# tp_pool_meminfo KEY: a HugePages_* figure of /proc/meminfo (Free, Rsvd, Total, ...).
tp_pool_meminfo() { awk -v k="HugePages_$1:" '$1 == k {print $2}' /proc/meminfo; }
# tp_pool_set FREE: sizes the pool so that FREE unreserved 2 MiB pages are free, whatever other
# processes hold; the pool the machine had is restored when the test exits. Sets TP_POOL_FREE
# to what the kernel granted (it may grant fewer when memory is fragmented). Root only: others
# skip, saying so.
tp_pool_set() {
  local want=$1 knob=/proc/sys/vm/nr_hugepages
  [ "$(id -u)" = 0 ] || tp_skip "needs root to size the hugetlbfs pool (it runs at several sizes)"
  if [ -z "${TP_POOL_ORIG:-}" ]; then
    TP_POOL_ORIG=$(cat $knob)
    TP_CLEANUP+=('echo $TP_POOL_ORIG > /proc/sys/vm/nr_hugepages')
  fi
  local total free rsvd
  total=$(tp_pool_meminfo Total) free=$(tp_pool_meminfo Free) rsvd=$(tp_pool_meminfo Rsvd)
  echo $(( total - free + rsvd + want )) > $knob 2>/dev/null
  TP_POOL_FREE=$(( $(tp_pool_meminfo Free) - $(tp_pool_meminfo Rsvd) ))
}
