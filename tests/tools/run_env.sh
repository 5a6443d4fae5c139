#!/usr/bin/env bash
# `tlbpack run` sets LD_PRELOAD (ours first, keeping what was there) and TLBPACK_CONF, passes
# arguments and the exit status through, and finds the real libtlbpack.so beside itself.
# Usage: run_env.sh TLBPACK PRINTENV FAKELIB
. "$(dirname "$0")/lib.sh"
TP=$1 PE=$2 FAKE=$3
FAKE_REAL=$(realpath "$FAKE")
unset LD_PRELOAD TLBPACK_CONF

run "$TP" run --lib "$FAKE" -- "$PE" a b c
expect_rc 0 "run --lib"; expect_in out "LD_PRELOAD=$FAKE_REAL" "LD_PRELOAD is the --lib path"
expect_in out "TLBPACK_CONF=(unset)" "no conf given, none set"; expect_in out "args=3" "arguments passed"

run "$TP" run --lib "$FAKE" --conf pool:thp --stats -- "$PE"
expect_in out "TLBPACK_CONF=pool:thp,stats:1" "--conf then --stats"
run "$TP" run --lib "$FAKE" --stats --conf stats:json -- "$PE"
expect_in out "TLBPACK_CONF=stats:json" "--stats leaves an explicit stats value alone"
if printf '%s' "$OUT" | grep -q "stats:1"; then fail "--stats added stats:1 next to stats:json"; fi
run "$TP" run --lib "$FAKE" -c group:none -c numa:off -- "$PE"
expect_in out "TLBPACK_CONF=group:none,numa:off" "--conf repeated"
TLBPACK_CONF=verbose:1 run "$TP" run --lib "$FAKE" --conf pool:4k -- "$PE"
expect_in out "TLBPACK_CONF=verbose:1,pool:4k" "TLBPACK_CONF from the environment kept first"

LIBM=$(ls /lib/x86_64-linux-gnu/libm.so.6 /lib64/libm.so.6 /usr/lib/libm.so.6 2>/dev/null | head -1)
LD_PRELOAD=$LIBM run "$TP" run --lib "$FAKE" -- "$PE"
expect_in out "LD_PRELOAD=$FAKE_REAL:$LIBM" "existing LD_PRELOAD kept after ours"

run "$TP" run --lib "$FAKE" -- "$PE" --exit 7; expect_rc 7 "PROGRAM's exit status passed through"
run "$TP" run --lib "$FAKE" "$PE" x; expect_rc 0 "PROGRAM without --"; expect_in out "args=1" "PROGRAM without --"
run "$TP" run --lib "$FAKE" -- "$PE" --conf x; expect_in out "args=2" "options after PROGRAM belong to it"

run "$TP" run --lib "$FAKE" --dry-run --conf pool:thp -- "$PE" z
expect_rc 0 "--dry-run"; expect_in out "LD_PRELOAD=$FAKE_REAL" "--dry-run shows LD_PRELOAD"
expect_in out "TLBPACK_CONF=pool:thp" "--dry-run shows TLBPACK_CONF"
if printf '%s' "$OUT" | grep -q "args="; then fail "--dry-run ran the program"; fi

# The real allocator, found beside the tlbpack binary, really ends up in the process.
LIB="$(dirname "$TP")/libtlbpack.so"
if [ -e "$LIB" ]; then
  run "$TP" run -- "$PE" --malloc
  expect_rc 0 "run with the built allocator"
  expect_in out "LD_PRELOAD=$(dirname "$(realpath "$LIB")")/libtlbpack.so" "default library is the one beside tlbpack"
  expect_in out "tp_malloc=present" "the allocator is loaded in PROGRAM"
  run "$TP" run --stats -- "$PE" --malloc
  expect_rc 0 "run --stats"
  # The stats block itself (its header and the allocated_total row), not just any stderr.
  expect_in err "tlbpack: stats pid=" "run --stats: the stats header"
  if printf '%s\n' "$ERR" | grep -qE '^tlbpack:   allocated_total +[1-9][0-9]*$'; then
    ok "run --stats printed stats: $(printf '%s\n' "$ERR" | grep -E '^tlbpack:   allocated_total')"
  else
    fail "run --stats: stderr has no 'tlbpack:   allocated_total N' row with N > 0"; echo "  stderr: $ERR"
  fi
else
  echo "note: $LIB not built (allocator not merged): default-library checks skipped"
  run "$TP" run -- "$PE"; expect_rc 1 "run without an allocator"; expect_in err "cannot find libtlbpack.so" "run without an allocator"
  expect_in err "--lib PATH" "run without an allocator: hint"
fi
finish
