# Shared helpers for the integration scripts (sourced, not run).
#
# Environment (ctest sets these; defaults work from the repository root):
#   TP_LIB        the library to preload (default: build/libtlbpack.so). Point it at another
#                 malloc (e.g. /usr/lib/x86_64-linux-gnu/libjemalloc.so.2) to check the scripts
#                 themselves: the tlbpack-only checks (stats lines) are then skipped with a note.
#   TP_BUILD_DIR  the build directory holding the helper programs (default: build)
#   TP_STRESS=1   long version of each test (scripts/stress.sh sets it)
# Exit codes: 0 pass, 1 fail, 77 skipped (ctest SKIP_RETURN_CODE) with a message saying why.
set -u

TP_SRC_DIR=${TP_SRC_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
TP_BUILD_DIR=${TP_BUILD_DIR:-$TP_SRC_DIR/build}
TP_LIB=${TP_LIB:-$TP_BUILD_DIR/libtlbpack.so}
TP_STRESS=${TP_STRESS:-0}
TP_NAME=$(basename "$0" .sh)
# Debian's interpreter: the CPython test suite package belongs to it, not to any other python3.
TP_PY=${TP_PY:-/usr/bin/python3}

tp_log() { echo "$TP_NAME: $*" >&2; }
tp_fail() { echo "$TP_NAME: FAIL: $*" >&2; exit 1; }
tp_skip() { echo "$TP_NAME: SKIP: $*" >&2; exit 77; }
tp_pass() { echo "$TP_NAME: PASS${1:+: $*}" >&2; exit 0; }

# The library under test must exist: a missing build is a failure, never a skip.
tp_need_lib() {
  [ -f "$TP_LIB" ] || tp_fail "preload library $TP_LIB is not built (run \`make\` first, or set TP_LIB)"
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

tp_is_tlbpack() { case "$(basename "$TP_LIB")" in *tlbpack*) return 0 ;; *) return 1 ;; esac; }

# A private temporary directory, removed on exit (also on failure).
TP_TMP=
TP_CLEANUP=()
tp_cleanup() {
  local c
  for c in "${TP_CLEANUP[@]+"${TP_CLEANUP[@]}"}"; do eval "$c" || true; done
  [ -n "$TP_TMP" ] && rm -rf "$TP_TMP"
}
trap tp_cleanup EXIT
trap 'exit 130' INT TERM
tp_mktemp() { TP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlbpack-$TP_NAME.XXXXXX"); }

# tp_pre CMD...: run CMD with the library preloaded (TLBPACK_CONF passes through from the caller).
tp_pre() { env LD_PRELOAD="$TP_LIB" "$@"; }

# Removes tlbpack's own lines from a stderr capture so that it can be compared with a plain run.
tp_strip_stats() { grep -v -E '^tlbpack: ' "$1" || true; }

# tp_check_stats FILE [WHAT]: FILE is stderr of a run with TLBPACK_CONF=stats:1. Every process
# prints its own block; at least one must report allocated_total > 0 (tlbpack served it).
# Prints the number of processes that reported and the bytes they allocated, in total.
tp_check_stats() {
  local f=$1 what=${2:-the program}
  if ! tp_is_tlbpack; then
    tp_log "note: TP_LIB=$TP_LIB is not tlbpack; stats check for $what skipped"
    return 0
  fi
  local summary
  summary=$(awk '$1=="tlbpack:" && $2=="allocated_total" { n++; if ($3+0 > 0) { served++; bytes += $3 } }
                 END { printf "%d %d %.0f\n", n, served, bytes }' "$f")
  set -- $summary
  [ "$1" -gt 0 ] || { sed -n '1,20p' "$f" >&2; tp_fail "$what printed no 'tlbpack:   allocated_total' line: stats:1 not honoured or library not loaded"; }
  [ "$2" -gt 0 ] || tp_fail "$what: tlbpack reported allocated_total 0 in all $1 processes (allocations not served by tlbpack)"
  tp_log "stats: $2 of $1 processes served by tlbpack, $3 bytes allocated in total"
}

# tp_stat FILE KEY: the value of one stats key from the last block in FILE (empty when absent).
tp_stat() { awk -v k="$2" '$1=="tlbpack:" && $2==k { v=$3 } END { print v }' "$1"; }

# A free TCP port on 127.0.0.1, chosen by the kernel.
tp_free_port() {
  "$TP_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
