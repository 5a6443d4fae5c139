#!/usr/bin/env bash
# `tlbpack compare` traces a small program with jemalloc and with tlbpack and prints tlbsim's
# comparison; without tlbsim it says so. Usage: compare.sh TLBPACK BUILD_DIR PRINTENV
. "$(dirname "$0")/lib.sh"
TP=$1 BUILD=$2 PE=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/tlbpack-compare-test-XXXXXX")
trap 'rm -rf "$T" "$_tmp_out" "$_tmp_err"' EXIT

# A tlbpack with no tlbsim beside it, none installed and none on PATH: a clear error.
cp "$TP" "$T/tlbpack"
if ! command -v tlbsim >/dev/null && [ ! -e "$(dirname "$(dirname "$TP")")/bin/tlbsim" ] && [ ! -e /usr/local/bin/tlbsim ]; then
  PATH=/usr/bin:/bin run "$T/tlbpack" compare -- true
  expect_rc 1 "compare without tlbsim"; expect_in err "tlbsim not found" "compare without tlbsim"
fi
[ -x "$BUILD/tlbsim" ] || skip "$BUILD/tlbsim not built (the simulator is not merged yet)"
[ -e "$BUILD/libtlbpack.so" ] || skip "$BUILD/libtlbpack.so not built (the allocator is not merged yet)"
command -v valgrind >/dev/null || skip "valgrind not installed"
ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 >/dev/null 2>&1 || skip "jemalloc not installed"

run "$TP" compare --jemalloc /etc/passwd -- true
expect_rc 1 "--jemalloc not a library"; expect_in err "not an ELF shared library" "--jemalloc not a library"

# --big: 24 MiB, past tlbpack's start_kb (16 MiB), so that its heap has huge pages to show.
run "$TP" compare --cpu zen4 --keep "$T/keep" -- "$PE" --malloc --big
expect_rc 0 "compare"
expect_in out "jemalloc" "compare names jemalloc"; expect_in out "tlbpack" "compare names tlbpack"
expect_in out "walk" "compare reports walks"
[ -s "$T/keep/tlbpack.regions" ] && ok "regions file written by the tlbpack run" || fail "no regions file in --keep dir"
# The tlbpack-specific result: tlbpack's heap on 2 MiB pages (hugetlbfs or THP), written in its
# regions file, and the simulator counting 2 MiB pages on tlbpack's side (B) only. Only a
# machine with neither a free hugetlbfs page nor THP could give none.
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
pool_free=$(awk '/^HugePages_Free:/{print $2}' /proc/meminfo)
two_m=$(printf '%s\n' "$OUT" | awk '/^distinct 2M pages touched/ { print $(NF-2), $(NF-1) }')
if [ "${thp:-never}" = never ] && [ "${pool_free:-0}" = 0 ]; then
  echo "note: no free hugetlbfs page and THP is 'never': tlbpack cannot have 2 MiB pages here; 2m checks not made"
else
  grep -qE '^0x[0-9a-f]+-0x[0-9a-f]+ 2m (hugetlbfs|thp)$' "$T/keep/tlbpack.regions" && ok "tlbpack regions include 2 MiB ranges" \
    || fail "tlbpack's regions have no 2m range (pool free pages $pool_free, THP $thp): $(head -3 "$T/keep/tlbpack.regions")"
  set -- $two_m
  if [ "${1:-x}" = 0 ] && [ "${2:-0}" -gt 0 ] 2>/dev/null; then ok "distinct 2M pages touched: jemalloc $1, tlbpack $2"
  else fail "distinct 2M pages touched should be 0 for jemalloc (A) and > 0 for tlbpack (B), got '$two_m'"; fi
fi
[ -s "$T/keep/jemalloc.trace" ] && [ -s "$T/keep/tlbpack.trace" ] && ok "both traces kept" || fail "traces missing"

# Without --keep, jemalloc's trace streams through a FIFO and nothing is left behind.
export TMPDIR=$T/tmp; mkdir -p "$TMPDIR"
run "$TP" compare --json -- "$PE" --malloc
expect_rc 0 "compare --json"
printf '%s' "$OUT" | python3 -c 'import json,sys; json.load(sys.stdin)' && ok "--json is JSON" || fail "--json output is not JSON: $OUT"
[ -z "$(ls -A "$TMPDIR")" ] && ok "no temporary files left" || fail "left behind: $(ls -A "$TMPDIR")"

# A valgrind that fails before opening jemalloc's trace FIFO: a clear error, not a hang.
mkdir -p "$T/fakebin"
cat > "$T/fakebin/valgrind" <<EOS
#!/bin/sh
case "\$LD_PRELOAD" in *jemalloc*) echo "fake valgrind: failing" >&2; exit 1 ;; esac
exec $(command -v valgrind) "\$@"
EOS
chmod +x "$T/fakebin/valgrind"
PATH=$T/fakebin:$PATH run timeout 120 "$TP" compare -- "$PE"
expect_rc 1 "compare when valgrind fails"; expect_in err "the jemalloc trace holds no memory accesses" "valgrind failure reported"
finish
