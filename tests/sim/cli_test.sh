#!/usr/bin/env bash
# CLI tests for build/tlbsim: exit codes, error messages, JSON fields, formats, --compare.
# Usage: cli_test.sh BUILD_DIR
set -u
B=${1:?usage: cli_test.sh BUILD_DIR}
SIM=$B/tlbsim GEN=$B/tlbsim-gen
T=$(mktemp -d /tmp/tlbsim-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
# expect_rc WANT CMD... : runs CMD, keeps stdout in $T/out and stderr in $T/err
expect_rc() {
  local want=$1; shift
  "$@" >"$T/out" 2>"$T/err"; local rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $(head -c 300 "$T/err")"
}
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 400 "$1")"; }

printf 'R 0x1000 8\nW 2000\n# comment\nX 3000\n' >"$T/bad.trace"
expect_rc 2 "$SIM" "$T/bad.trace"
has "$T/err" "tlbsim: line 4: expected R|W|I|P <hex address> [size], C <asid> or B, got 'X 3000'"

printf '==7== Lackey\n L 04222cac,4\n S oops\n' >"$T/bad.lackey"
expect_rc 2 "$SIM" "$T/bad.lackey"
has "$T/err" "tlbsim: line 3: expected a lackey"

expect_rc 2 "$SIM" --set l1d.ways=abc "$T/bad.trace"
has "$T/err" "tlbsim: --set l1d.ways: expected a whole number"
expect_rc 2 "$SIM" --cpu pentium "$T/bad.trace"
has "$T/err" "--cpu pentium: expected one of core2"
expect_rc 2 "$SIM" --page-size 4m "$T/bad.trace"
has "$T/err" "--page-size: expected 4k, 2m or 1g"
expect_rc 2 "$SIM" --bogus
has "$T/err" "unknown option '--bogus'"
expect_rc 2 "$SIM" /nonexistent/trace
has "$T/err" "/nonexistent/trace: cannot open"
printf '0x1000-0x3000 2m\n' >"$T/bad.reg"
expect_rc 2 "$SIM" --regions "$T/bad.reg" "$T/bad.trace"
has "$T/err" "bad.reg:1: range 0x1000-0x3000 is not 2 MiB aligned"
expect_rc 0 "$SIM" --help
has "$T/out" "l1d.entries"

# --warmup: N accesses, or up to the trace's B record; the JSON says how many were warm-up.
printf 'R 1000\nR 2000\nB\nR 1000\nW 3000\n' >"$T/w.trace"
expect_rc 0 "$SIM" --json --warmup marker "$T/w.trace"
has "$T/out" '"accesses": 2,'
has "$T/out" '"warmup_accesses": 2,'
has "$T/out" '"l1_misses": 1,'
has "$T/out" '"distinct_pages_4k": 3,'
expect_rc 0 "$SIM" --json --warmup 3 "$T/w.trace"
has "$T/out" '"accesses": 1,'
has "$T/out" '"warmup_accesses": 3,'
expect_rc 0 "$SIM" --json "$T/w.trace"
has "$T/out" '"accesses": 4,'
has "$T/out" '"warmup_accesses": 0,'
expect_rc 2 "$SIM" --warmup 9 "$T/w.trace"
has "$T/err" "tlbsim: --warmup 9: the trace has only 4 accesses; nothing was measured"
printf ' L 04222cac,4\n' >"$T/ok.lackey"
expect_rc 2 "$SIM" --warmup marker "$T/ok.lackey"
has "$T/err" "--warmup marker: the trace has no B record"
expect_rc 2 "$SIM" --warmup -1 "$T/w.trace"
has "$T/err" "--warmup -1: expected a number of accesses or 'marker'"
expect_rc 0 "$SIM" --compare "$T/w.trace" "$T/w.trace" --warmup marker
has "$T/out" "warm-up accesses"

# A --set the configuration would ignore is an error naming it; a new L2 holds 4K pages.
expect_rc 2 "$SIM" --cpu custom --set l2.ways=12 "$T/bad.trace"
has "$T/err" "tlbsim: --set l2.ways=12 has no effect: l2.entries is 0"
expect_rc 2 "$SIM" --asid-mode flush --set asid.count=3 "$T/bad.trace"
has "$T/err" "--set asid.count=3 has no effect in asid.mode=flush"
printf 'R 1000\nR 2000\nR 1000\n' >"$T/l2.trace"
expect_rc 0 "$SIM" --json --cpu custom --set l1d.entries=1 --set l2.entries=1536 --set l2.ways=12 "$T/l2.trace"
has "$T/out" '"l2_hits": 1,'
has "$T/out" '"walks": 2,'

# JSON: every field of the DESIGN contract, as integers.
"$GEN" -n 20000 -p 512 --pattern random --format text -o "$T/r.trace" || fail "generator"
expect_rc 0 "$SIM" --json --cpu zen4 "$T/r.trace"
for f in accesses l1_hits l1_misses l2_hits l2_misses walks walk_levels walk_mem_refs pwc_hits \
         prefetch_walks distinct_pages_4k distinct_pages_2m distinct_pages_1g est_walk_cycles \
         page_table_pages; do
  grep -qE "^  \"$f\": [0-9]+,?$" "$T/out" || fail "json lacks integer field $f"
done
has "$T/out" '"accesses": 20000,'
has "$T/out" '"distinct_pages_4k": 512,'
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" || fail "--json output is not valid JSON"

# The three formats give the same counts for the same accesses; stdin works; auto detects.
# Every generator and simulator run must succeed and count all 5000 accesses: three failed
# runs would otherwise compare equal as three empty files.
for f in bin:bin text:txt lackey:lackey; do
  "$GEN" -n 5000 -p 300 --pattern mix --format ${f%:*} -o "$T/m.${f#*:}" || fail "tlbsim-gen --format ${f%:*} exited $?"
done
expect_rc 0 "$SIM" --json "$T/m.bin"; grep -v '"trace"' "$T/out" >"$T/a.json"
expect_rc 0 sh -c '"$1" --json - <"$2"' sh "$SIM" "$T/m.txt"; grep -v '"trace"' "$T/out" >"$T/b.json"
expect_rc 0 sh -c '"$1" --json --format lackey <"$2"' sh "$SIM" "$T/m.lackey"; grep -v '"trace"' "$T/out" >"$T/c.json"
for j in a b c; do has "$T/$j.json" '"accesses": 5000,'; done
cmp -s "$T/a.json" "$T/b.json" || fail "bin and text traces disagree: $(diff "$T/a.json" "$T/b.json" | head)"
cmp -s "$T/a.json" "$T/c.json" || fail "bin and lackey traces disagree: $(diff "$T/a.json" "$T/c.json" | head)"

# Huge pages cut walks: the same trace with --page-size 2m walks once per 2M page.
expect_rc 0 "$SIM" --json --page-size 2m "$T/m.bin"
has "$T/out" '"walks": 1,'
has "$T/out" '"distinct_pages_2m": 1,'

# --compare: per-trace options after each trace; ratios B/A.
printf '0x7f0000000000-0x7f0000200000 2m thp\n' >"$T/m.reg"
expect_rc 0 "$SIM" --compare "$T/m.bin" --label 4k "$T/m.bin" --regions "$T/m.reg" --label regions
has "$T/out" "B/A"
has "$T/out" "page walks"
expect_rc 0 "$SIM" --json --compare "$T/m.bin" "$T/m.txt" --page-size 2m
python3 - "$T/out" <<'PY' || fail "compare json"
import json, sys
d = json.load(open(sys.argv[1]))
a, b = d["a"]["walks"], d["b"]["walks"]
assert a == d["a"]["distinct_pages_4k"] > 250 and b == 1, (a, b)
assert abs(d["ratio_b_over_a"]["walks"] - 1 / a) < 1e-6
PY
expect_rc 2 "$SIM" --compare "$T/m.bin"
has "$T/err" "--compare needs two traces"
expect_rc 2 "$SIM" "$T/m.bin" "$T/m.txt"
has "$T/err" "unexpected argument"

# Context switches: asid mode keeps what flush mode loses, on the same trace.
for i in 1 2 3 4 5; do printf 'C 1\nR 1000\nR 2000\nC 2\nR 1000\nR 2000\n'; done >"$T/cs.trace"
expect_rc 0 "$SIM" --json --compare "$T/cs.trace" --asid-mode flush "$T/cs.trace" --asid-mode asid
python3 - "$T/out" <<'PY' || fail "asid compare"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["a"]["l1_misses"] == 20 and d["b"]["l1_misses"] == 4, (d["a"]["l1_misses"], d["b"]["l1_misses"])
PY

# Streaming: peak memory does not grow with trace length (20x more records, same pages).
python3 - "$SIM" "$GEN" <<'PY' || fail "memory grows with trace length"
import resource, subprocess, sys
sim, gen = sys.argv[1], sys.argv[2]
def peak_kb(n):
    g = subprocess.Popen([gen, "-n", str(n), "-p", "2048", "--pattern", "random"], stdout=subprocess.PIPE)
    s = subprocess.run([sim, "--json", "-"], stdin=g.stdout, capture_output=True, text=True)
    assert g.wait() == 0, f"tlbsim-gen -n {n} exited {g.returncode}"
    assert s.returncode == 0, f"tlbsim exited {s.returncode}: {s.stderr}"
    assert f'"accesses": {n},' in s.stdout, f"tlbsim did not count {n} accesses"
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss   # max over children so far
small = peak_kb(100000)
big = peak_kb(2000000)
assert big < small + 1024, f"peak RSS {small} kB for 100k records, {big} kB for 2M"
PY

# A real program's lackey trace, piped, when valgrind is installed.
if command -v valgrind >/dev/null; then
  valgrind --tool=lackey --trace-mem=yes --log-fd=3 /bin/true 3>&1 >/dev/null 2>/dev/null | "$SIM" --json - >"$T/out" 2>"$T/err" \
    || fail "lackey pipe: $(cat "$T/err")"
  grep -qE '"ifetches": [1-9][0-9]{3,}' "$T/out" || fail "lackey pipe counted no instruction fetches"
fi

[ $fails = 0 ] && echo "cli tests: all passed"
exit $((fails > 0))
