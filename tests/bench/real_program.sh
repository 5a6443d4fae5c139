#!/usr/bin/env bash
# A real-program workload end to end at tiny scale, under the preloaded libtlbpack.so and under
# glibc: a positive throughput, the program's malloc served by tlbpack, the TLB entries for its
# resident memory (anonymous and file-backed) in runs.csv, summary.csv, the real programs' table
# and its plot's data; nothing left in TMPDIR.
# Usage: real_program.sh BUILD_DIR WORKLOAD PROGRAM. Exit 77 (skip) when PROGRAM is not installed.
set -u
build=${1:?usage: real_program.sh BUILD_DIR WORKLOAD PROGRAM} wl=${2:?workload} prog=${3:?program}
command -v "$prog" >/dev/null 2>&1 || { echo "bench_$wl: SKIP: $prog is not installed (make setup installs it)" >&2; exit 77; }
out=$(mktemp -d /tmp/tb-real-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "bench_$wl: FAIL: $*" >&2; echo "--- stderr:" >&2; cat "$out/err" >&2; exit 1; }
mkdir "$out/tmp"
TMPDIR=$out/tmp "$build/tlbbench" --scale tiny --runs 1 --workloads "$wl" --allocators glibc,tlbpack \
  --out "$out/res" >"$out/stdout" 2>"$out/err" || fail "tlbbench exited $?"
row=$(grep "^$wl,tlbpack,1,0," "$out/res/runs.csv") || fail "no good $wl x tlbpack run in runs.csv"
[ "$(cut -d, -f11 <<<"$row")" = libtlbpack.so ] || fail "the program's malloc is not libtlbpack.so: $row"
for k in res_entries res_entries_anon res_entries_file res_rss_kb; do
  v=$(grep -o " $k=[0-9]*" <<<"$row" | cut -d= -f2)
  [ -n "$v" ] && [ "$v" -gt 0 ] || fail "$k not positive in the RESULT line: $row"
done
anon=$(grep -o ' res_entries_anon=[0-9]*' <<<"$row" | cut -d= -f2)
file=$(grep -o ' res_entries_file=[0-9]*' <<<"$row" | cut -d= -f2)
total=$(grep -o ' res_entries=[0-9]*' <<<"$row" | cut -d= -f2)
[ $((anon + file)) = "$total" ] || fail "res_entries $total != anon $anon + file $file"
grep -q "^$wl,glibc,1,0," "$out/res/runs.csv" || fail "no good $wl x glibc run"
python3 - "$out/res/summary.csv" "$wl" <<'PY' || fail "summary.csv lacks the resident columns"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["workload"] == sys.argv[2]]
assert len(rows) == 2, rows
for r in rows:
    assert float(r["resident_entries"]) > 0 and float(r["resident_kb"]) > 0, r
    assert float(r["resident_entries"]) == float(r["resident_entries_anon"]) + float(r["resident_entries_file"]), r
    assert float(r["ns_per_op_median"]) > 0, r
PY
grep -q '### Real programs: TLB entries for their resident memory' "$out/stdout" || fail "no real programs' table"
grep -q "^| $wl | tlbpack | [0-9]* [a-z]*/s |" "$out/stdout" || fail "no $wl x tlbpack row in the real programs' table"
[ ! -f "$out/res/resident_entries.dat" ] || grep -q "^$wl " "$out/res/resident_entries.dat" || fail "plot data lacks $wl"
[ -z "$(ls -A "$out/tmp")" ] || fail "files left behind: $(ls -A "$out/tmp")"
echo "bench_$wl: ok ($total TLB entries under tlbpack at tiny scale)"
