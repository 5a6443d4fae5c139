#!/usr/bin/env bash
# Every command in the README's quick start runs. `make` lines are checked as a dry run
# (`make -n TARGET` in the source tree against this build: the target exists and its recipe
# expands; `make test` and `make demo` take minutes and cannot run inside `make test`); every
# other line runs for real, from a directory whose build/ is this build, and must exit 0; a
# line that asks for stats (stats:1, --stats) must print tlbpack's stats block.
# Usage: quick_start.sh SOURCE_DIR BUILD_DIR
set -u
SRC=$1 BUILD=$(cd "$2" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
block=$(awk '/^## Quick start/{q=1; next} q && /^## /{exit} q && /^```/{n++; if (n == 2) exit; next} q && n == 1' "$SRC/README.md")
[ -n "$block" ] || { echo "FAIL: README.md has no code block under '## Quick start'"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$BUILD" "$work/build"
ncmd=0 nmake=0
while IFS= read -r line; do
  cmd=$(printf '%s' "$line" | sed 's/[[:space:]]\+#[[:space:]].*$//; s/[[:space:]]*$//')
  [ -z "$cmd" ] && continue
  ncmd=$((ncmd + 1))
  if [[ $cmd =~ ^make([[:space:]]|$) ]]; then
    nmake=$((nmake + 1))
    read -r -a words <<<"$cmd"
    if out=$(make -n -C "$SRC" BUILD="$BUILD" "${words[@]:1}" 2>&1); then
      echo "ok: '$cmd' (make -n: $(printf '%s\n' "$out" | grep -c .) recipe lines)"
    else
      fail "'$cmd': make -n failed: $out"
    fi
    continue
  fi
  out=$(cd "$work" && timeout 120 bash -c "$cmd" 2>&1 >/dev/null); rc=$?
  if [ "$rc" != 0 ]; then fail "'$cmd' exited $rc: $out"; continue; fi
  if [[ $cmd == *stats:1* || $cmd == *--stats* ]] && ! printf '%s' "$out" | grep -q '^tlbpack:   allocated_total'; then
    fail "'$cmd' printed no tlbpack stats on stderr (was tlbpack preloaded?): $out"; continue
  fi
  echo "ok: '$cmd' ran (exit 0)"
done <<<"$block"
[ "$nmake" -ge 1 ] && [ "$ncmd" -gt "$nmake" ] || fail "the quick start has $ncmd commands, $nmake of them make: expected both kinds"
[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS: $ncmd quick-start commands ($nmake make dry runs)"
