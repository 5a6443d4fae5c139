#!/usr/bin/env bash
# The tlbpack-plan row: tlbbench makes the records plan by profiling a smaller run (another
# seed), keeps it beside the workload binary with a key, reuses it on the next run, makes it
# again when the key does not match, and the demo-size run under the plan needs at most 1.1x
# the floor of TLB entries (where pagemap can be read).
set -u
build=${1:?usage: plan_row.sh BUILD_DIR}
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed"; exit 77; }
out=$(mktemp -d /tmp/tb-plan-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "plan_row: FAIL: $*" >&2; echo "--- stderr:" >&2; cat "$out/err" >&2; exit 1; }
plan="$build/bench/records.plan"

echo stale >"$plan.key"  # whatever was there: made again
"$build/tlbbench" --scale demo --runs 1 --no-sim --workloads records --allocators tlbpack,tlbpack-plan \
  --out "$out/r1" >"$out/stdout" 2>"$out/err" || fail "tlbbench exited $?"
grep -q "records x tlbpack-plan: plan .*records.plan (made in" "$out/err" || fail "the plan was not made"
grep -q "^group hot1 ordered" "$plan" || fail "no ordered group in the plan: $(cat "$plan")"
[ "$(sed -n '/^group hot1/,/^$/p' "$plan" | grep -c '^site .*wl_records+0x')" = 3 ] \
  || fail "node, key and value are not one ordered group: $(cat "$plan")"
grep -q "^group cold apart" "$plan" || fail "no cold group: $(cat "$plan")"
row=$(grep '^| records | tlbpack-plan |' "$out/stdout") || fail "no tlbpack-plan row"
ent=$(printf '%s\n' "$row" | awk -F'|' '{print $9}' | tr -d ' ')
case $ent in
  n/a) echo "note: no pagemap here, entries not checked" ;;
  *) e=${ent%%(*} f=${ent#*(}; f=${f%)}
     awk -v e="$e" -v f="$f" 'BEGIN { exit !(e <= 1.1 * f) }' || fail "TLB entries $e, floor $f: above 1.1x" ;;
esac
grep -q "records x tlbpack-plan: plan" "$out/r1/summary.md" || fail "summary.md does not say how the plan was made"

"$build/tlbbench" --scale tiny --runs 1 --no-sim --workloads records --allocators tlbpack-plan \
  --out "$out/r2" >"$out/stdout" 2>"$out/err" || fail "tlbbench (second) exited $?"
grep -q "records x tlbpack-plan: plan .*(cached" "$out/err" || fail "the second run did not reuse the plan"
echo "plan_row: ok (entries $ent)"
