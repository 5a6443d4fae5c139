# Shared by the tools tests: run a command, capture its output and status, check them.
# Every check prints what it expected and what it got, so a failure reads on its own.
set -u
FAILS=0
OUT=""; ERR=""; RC=0
_tmp_out=$(mktemp); _tmp_err=$(mktemp)
trap 'rm -f "$_tmp_out" "$_tmp_err"' EXIT

# run CMD...: runs it, sets OUT, ERR, RC.
run() {
  "$@" >"$_tmp_out" 2>"$_tmp_err"; RC=$?
  OUT=$(cat "$_tmp_out"); ERR=$(cat "$_tmp_err")
}
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
# expect_rc WANT WHAT
expect_rc() {
  if [ "$RC" = "$1" ]; then ok "$2: exit $RC"
  else fail "$2: exit status $RC, expected $1"; echo "  stdout: $OUT"; echo "  stderr: $ERR"; fi
}
# expect_in out|err|any TEXT WHAT: fixed-string match
expect_in() {
  local where=$1 text=$2 what=$3 hay
  case $where in out) hay=$OUT ;; err) hay=$ERR ;; *) hay="$OUT
$ERR" ;; esac
  if printf '%s' "$hay" | grep -qF -- "$text"; then ok "$what: has '$text'"
  else fail "$what: $where lacks '$text'"; echo "  stdout: $OUT"; echo "  stderr: $ERR"; fi
}
finish() {
  if [ "$FAILS" -gt 0 ]; then echo "$FAILS check(s) failed"; exit 1; fi
  echo "all checks passed"; exit 0
}
skip() { echo "SKIP: $*"; exit 77; }
