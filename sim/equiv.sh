#!/usr/bin/env bash
# Behaviour check for performance work on the simulator (not a test): runs the same traces
# and configurations through two tlbsim binaries and compares their JSON byte for byte.
#   sim/equiv.sh OLD_TLBSIM NEW_TLBSIM [GEN]     (GEN: a tlbsim-gen, default build/tlbsim-gen)
# Build OLD from the commit before the change (e.g. a git worktree). Exit 1 on any difference.
set -u
OLD=$1 NEW=$2 GEN=${3:-build/tlbsim-gen}
T=$(mktemp -d "${TMPDIR:-/tmp}/tlbsim-equiv.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$GEN" -n 1000000 --pattern mix -p 4096 -o "$T/mix.bin"
"$GEN" -n 500000 --pattern random -p 200000 -o "$T/rnd.bin"
"$GEN" -n 300000 --pattern cyclic -p 1600 -o "$T/cyc.bin"
# Text traces with every op, context switches, straddles and several distant areas.
for spec in "a 0 4096" "b 20 300000" "c 3 1048576"; do
  set -- $spec
  awk -v n=150000 -v asids="$2" -v spread="$3" -v seed="${#1}$2$3" '
    function hex(v,  hi) { hi = int(v / 65536); return sprintf("%x%04x", hi, v - hi * 65536) }
    BEGIN {
      srand(seed); nb = split("139637976727552 4194304 5863972536320 140720308486144 4294967296", base, " ")
      split("8 8 8 4 1 64 4096 40960", sz, " "); ops = "RRRRWWIP"; seq = 0
      for (i = 0; i < n; i++) {
        x = rand()
        if (asids > 0 && x < 0.002) { printf "C %d\n", int(rand() * asids); continue }
        if (x < 0.6) { seq += 8; a = base[1] + seq % 16777216 }
        else a = base[1 + int(rand() * nb)] + int(rand() * spread) * 4096 + int(rand() * 512) * 8
        printf "%s %s %d\n", substr(ops, 1 + int(rand() * 8), 1), hex(a), sz[1 + int(rand() * 8)]
      }
    }' >"$T/$1.txt"
done
printf '# tlbpack regions v1\n0x7f0000000000-0x7f0000400000 2m thp\n0x400000-0x600000 2m\n0x55540000000-0x55580000000 1g\n' >"$T/regions"
cfgs=(
  "--cpu skylake" "--cpu core2" "--cpu goldencove" "--cpu zen2" "--cpu zen3" "--cpu zen4" "--cpu custom"
  "--cpu skylake --nested 4k" "--cpu skylake --nested 2m" "--cpu zen4 --nested 4k --levels 5"
  "--cpu skylake --levels 5" "--cpu zen4 --levels 5"
  "--cpu skylake --asid-mode asid" "--cpu skylake --asid-mode flush" "--cpu zen4 --asid-mode asid --set asid.count=2"
  "--cpu skylake --regions $T/regions" "--cpu zen4 --regions $T/regions --nested 2m"
  "--cpu skylake --page-size 2m" "--cpu zen3 --page-size 1g"
  "--cpu skylake --set l2.policy=tree-plru --set l1d.policy=tree-plru --set l2.ways=16"
  "--cpu zen4 --set l1d.policy=random --set l2.policy=random --set seed=5"
  "--cpu skylake --set pwc.entries=0" "--cpu skylake --set l2.entries=0" "--cpu core2 --set l1d.stores=0"
  "--cpu custom --set l1d.entries=48 --set l1d.ways=3 --set l2.policy=tree-plru --set l2.ways=4 --set l2.entries=1200"
  "--cpu skylake --set l2.entries=1000 --set l2.ways=5 --set pwc.l2.entries=24"
)
n=0 fail=0
for t in a.txt b.txt c.txt mix.bin rnd.bin cyc.bin; do
  for c in "${cfgs[@]}"; do
    n=$((n + 1))
    $OLD $c --json "$T/$t" >"$T/old.json" 2>&1; ro=$?
    $NEW $c --json "$T/$t" >"$T/new.json" 2>&1; rn=$?
    if [ $ro != $rn ] || ! cmp -s "$T/old.json" "$T/new.json"; then
      echo "DIFF: $t $c (exit $ro / $rn)"; diff "$T/old.json" "$T/new.json" | head -6; fail=1
    fi
  done
done
echo "$n runs compared, $([ $fail = 0 ] && echo 'all identical' || echo 'DIFFERENCES')"
exit $fail
