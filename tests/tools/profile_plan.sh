#!/usr/bin/env bash
# tlbpack profile on a small program, then the program with its plan: the planned sites (a
# record's node, key and value, from three call sites) share pages, the cold site does not. A
# missing, malformed or foreign plan gets one warning and changes nothing.
#   profile_plan.sh TLBPACK LIBTLBPACK PLAN_PROG
set -u
TP=$1 LIB=$2 PROG=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

run "$TP" profile --plan "$dir/plan" -- "$PROG" 2000 20000
expect_rc 0 "profile"
expect_in out "plan: $dir/plan (3 hot sites in ordered groups" "the three record sites are hot and used together"
grep -q '^group cold apart' "$dir/plan" && ok "a cold group" || { fail "no cold group"; cat "$dir/plan"; }
[ "$(grep -c '^site ' "$dir/plan")" -ge 4 ] && ok "four sites or more in the plan" || { fail "too few sites"; cat "$dir/plan"; }

# addresses: "node 0x.. key 0x.. val 0x.. cold 0x.."
check_layout() {
  python3 - "$1" <<'PY'
import sys
w = sys.argv[1].split()
a = {w[i]: int(w[i + 1], 16) for i in range(0, len(w) - 1, 2)}
n, k, v, c = a['node'], a['key'], a['val'], a['cold']
same4k = n >> 12 == k >> 12 == v >> 12
near = max(n, k, v) - min(n, k, v) < 256
apart = c >> 21 != n >> 21
print(f"node {n:#x} key {k:#x} val {v:#x} cold {c:#x}: one 4k page {same4k}, within 256 B {near}, cold on another 2m page {apart}")
sys.exit(0 if same4k and near and apart else 1)
PY
}
run env LD_PRELOAD="$LIB" TLBPACK_CONF="plan:$dir/plan" "$PROG" 2000 20000
expect_rc 0 "run with the plan"
line=$(printf '%s\n' "$OUT" | grep '^node ')
if check_layout "$line"; then ok "planned sites share a page and lines; the cold site is apart"
else fail "layout with the plan: $line"; fi
[ -z "$ERR" ] && ok "no warning for a good plan" || fail "warnings for a good plan: $ERR"

# One hot site (a record's three parts from one helper) is an ordered group of its own too:
# as a site group its parts would sit in a slab per size class, pages apart.
run "$TP" profile --plan "$dir/plan1" -- "$PROG" 2000 200000 1 one
expect_rc 0 "profile of the one-site program"
expect_in out "plan: $dir/plan1 (1 hot sites in ordered groups" "the one record site is hot, a group of its own"
run env LD_PRELOAD="$LIB" TLBPACK_CONF="plan:$dir/plan1" "$PROG" 2000 20000 1 one
expect_rc 0 "run the one-site program with its plan"
line=$(printf '%s\n' "$OUT" | grep '^node ')
if check_layout "$line"; then ok "one site's record parts share a page and lines; the cold site is apart"
else fail "one-site layout with the plan: $line"; cat "$dir/plan1"; fi

# Bad plans: one warning line, the program runs as without a plan.
printf 'tlbpack-plan 1\nprogram /bin/true\ngroup g ordered\nsite /bin/true+0x10\n' >"$dir/foreign"
printf 'tlbpack-plan 1\nprogram %s\ngroup g ordered\nsite nonsense\n' "$(readlink -f "$PROG")" >"$dir/malformed"
for p in "$dir/missing" "$dir/foreign" "$dir/malformed"; do
  run env LD_PRELOAD="$LIB" TLBPACK_CONF="plan:$p" "$PROG" 200 2000
  expect_rc 0 "run with plan $(basename "$p")"
  n=$(printf '%s\n' "$ERR" | grep -c 'plan ignored')
  [ "$n" = 1 ] && ok "$(basename "$p"): one warning: $ERR" || fail "$(basename "$p"): expected one warning, got: $ERR"
done
finish
