#!/usr/bin/env bash
# The sqlite-lib row end to end at tiny scale: the driver linking libsqlite3 under glibc, jemalloc
# and tlbpack preloaded, and under the adapter (libtlbpack-sqlite, no preload). Every run gives
# the same answers and PRAGMA integrity_check ok; the adapter row's SQLite is on tlbpack while its
# malloc stays glibc's; each row reports its resident TLB entries and queries/s; nothing is left
# in TMPDIR. Exit 77 (skip) when the driver was not built (no libsqlite3-dev).
set -u
build=${1:?usage: sqlite_lib.sh BUILD_DIR}
[ -x "$build/bench/wl_sqlitelib" ] || { echo "bench_sqlite_lib: SKIP: wl_sqlitelib not built (libsqlite3-dev missing; make setup)" >&2; exit 77; }
out=$(mktemp -d /tmp/tb-sqlitelib-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "bench_sqlite_lib: FAIL: $*" >&2; echo "--- stderr:" >&2; cat "$out/err" >&2; exit 1; }
mkdir "$out/tmp"

TMPDIR=$out/tmp "$build/tlbbench" --scale tiny --runs 1 --no-sim --workloads sqlite-lib \
  --out "$out/res" >"$out/stdout" 2>"$out/err" || fail "tlbbench exited $?"
csv=$out/res/runs.csv
for a in glibc jemalloc tlbpack tlbpack-sqlite; do
  grep -q "^sqlite-lib,$a,1,0," "$csv" || fail "no good sqlite-lib x $a run in runs.csv"
done
[ "$(grep -c '^sqlite-lib,' "$csv")" = 4 ] || fail "expected exactly the four configurations: $(cut -d, -f2 "$csv" | tr '\n' ' ')"
answers=$(grep '^sqlite-lib,' "$csv" | grep -o ' answers=[0-9a-f]*' | sort -u)
[ "$(wc -l <<<"$answers")" = 1 ] && [ -n "$answers" ] || fail "answers differ between configurations: $answers"
[ "$(grep '^sqlite-lib,' "$csv" | grep -c ' integrity=ok ')" = 4 ] || fail "PRAGMA integrity_check not ok in every run"
row=$(grep '^sqlite-lib,tlbpack-sqlite,' "$csv")
grep -q ' adapter=yes ' <<<"$row" || fail "the adapter row did not install the adapter: $row"
[ "$(cut -d, -f11 <<<"$row")" = libc.so.6 ] || fail "the adapter row's malloc is not glibc's: $row"
[ "$(grep '^sqlite-lib,tlbpack,' "$csv" | cut -d, -f11)" = libtlbpack.so ] || fail "the tlbpack row's malloc is not libtlbpack.so"
grep '^sqlite-lib,' "$csv" | grep -q ' adapter=no .* adapter=' && fail "adapter flag repeated"
[ "$(grep '^sqlite-lib,' "$csv" | grep ' adapter=yes ' | wc -l)" = 1 ] || fail "adapter=yes in a row other than tlbpack-sqlite"
awk -F, '$1=="sqlite-lib" { if (!($6 > 0)) exit 1 }' "$csv" || fail "ns_per_op not positive"
grep -q '| sqlite-lib | tlbpack-sqlite | [0-9]* query/s |' "$out/stdout" || fail "no adapter row in the resident table"
[ -z "$(ls -A "$out/tmp")" ] || fail "files left behind: $(ls -A "$out/tmp")"
echo "bench_sqlite_lib: ok (answers$answers in all four configurations)"
