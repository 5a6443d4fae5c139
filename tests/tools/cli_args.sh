#!/usr/bin/env bash
# Usage errors of the tlbpack command: exit 2, and the message names the bad argument and what
# is accepted. Usage: cli_args.sh TLBPACK alloc/options.c FAKELIB.so
. "$(dirname "$0")/lib.sh"
TP=$1 ALLOC_OPTIONS=${2:-} FAKE=${3:-}

run "$TP"; expect_rc 2 "no verb"; expect_in err "usage: tlbpack VERB" "no verb"
run "$TP" frobnicate; expect_rc 2 "unknown verb"; expect_in err "'frobnicate'" "unknown verb"
expect_in err "run, pool, compare" "unknown verb lists verbs"
run "$TP" --version; expect_rc 0 "--version"; expect_in out "tlbpack " "--version"
run "$TP" --help; expect_rc 0 "--help"; expect_in out "usage: tlbpack VERB" "--help"
for verb in run pool compare; do
  run "$TP" "$verb" --help; expect_rc 0 "$verb --help"; expect_in out "usage: tlbpack $verb" "$verb --help"
  run "$TP" help "$verb"; expect_rc 0 "help $verb"; expect_in out "usage: tlbpack $verb" "help $verb"
done
run "$TP" pool reserve --help; expect_rc 0 "pool reserve --help"; expect_in out "reserve SIZE" "pool reserve --help"
run "$TP" pool release --help; expect_rc 0 "pool release --help"; expect_in out "--keep N" "pool release --help"
run "$TP" help nosuch; expect_rc 2 "help nosuch"; expect_in err "'nosuch'" "help nosuch"

# run
run "$TP" run; expect_rc 2 "run without PROGRAM"; expect_in err "no PROGRAM" "run without PROGRAM"
run "$TP" run --bogus -- true; expect_rc 2 "run --bogus"; expect_in err "'--bogus'" "run --bogus"
expect_in err "--conf" "run --bogus lists options"
run "$TP" run --conf; expect_rc 2 "run --conf without value"; expect_in err "needs a value" "run --conf"
run "$TP" run --conf pool:huge -- true; expect_rc 2 "bad conf value"
expect_in err "'huge'" "bad conf value named"; expect_in err "auto, hugetlbfs, thp or 4k" "bad conf value: accepted"
run "$TP" run --conf colour:red -- true; expect_rc 2 "unknown conf key"
expect_in err "'colour'" "unknown conf key named"; expect_in err "retain_mb" "unknown conf key: accepted keys"
run "$TP" run --conf stats -- true; expect_rc 2 "conf item without colon"; expect_in err "is not key:value" "conf item"
run "$TP" run --conf retain_mb:lots -- true; expect_rc 2 "retain_mb not a number"
expect_in err "a whole number of MiB, 0-" "retain_mb accepted"
run "$TP" run --conf sites:0 -- true; expect_rc 2 "sites:0 out of range"; expect_in err "1-960" "sites range"
run "$TP" run --conf stats:json,group:thread,numa:interleave,verbose:1,retain_mb:64,regions:/tmp/r,pool:4k,sites:100,exclusive_kb:512,stats:text --dry-run --lib "$FAKE" -- true
expect_rc 0 "every documented key is accepted"
# Every key the allocator's option table knows is known to the command too.
if [ -n "${ALLOC_OPTIONS:-}" ] && [ -e "$ALLOC_OPTIONS" ]; then
  for key in $(sed -n 's/^ *{"\([a-z_]*\)", K_.*/\1/p' "$ALLOC_OPTIONS"); do
    run "$TP" run --conf "$key:1" --dry-run --lib "$FAKE" -- true
    if printf '%s' "$ERR" | grep -q "unknown key"; then fail "allocator key '$key' is unknown to tlbpack run"
    else ok "allocator key $key known"; fi
  done
fi
run "$TP" run --lib /nonexistent/libtlbpack.so -- true; expect_rc 1 "run --lib missing"
expect_in err "/nonexistent/libtlbpack.so" "run --lib missing named"
run "$TP" run --lib /etc/passwd -- true; expect_rc 1 "run --lib not a library"
expect_in err "not an ELF shared library" "run --lib not a library"
run "$TP" run --lib "$FAKE" -- /nonexistent/program; expect_rc 127 "run a missing program"
expect_in err "'/nonexistent/program'" "missing program named"

# pool
run "$TP" pool frobnicate; expect_rc 2 "pool unknown action"; expect_in err "'frobnicate'" "pool unknown action"
expect_in err "status, reserve SIZE, release" "pool actions listed"
run "$TP" pool status --bogus; expect_rc 2 "pool status --bogus"; expect_in err "'--bogus'" "pool status --bogus"
run "$TP" pool reserve; expect_rc 2 "reserve without SIZE"; expect_in err "needs a SIZE" "reserve without SIZE"
run "$TP" pool reserve 12X; expect_rc 2 "reserve 12X"; expect_in err "'12X'" "reserve 12X named"
expect_in err "256M" "reserve 12X: accepted forms"
run "$TP" pool reserve -- -5; expect_rc 2 "reserve -5"; expect_in err "'-5'" "reserve -5 named"
run "$TP" pool reserve 0; expect_rc 2 "reserve 0"; expect_in err "release" "reserve 0 points to release"
run "$TP" pool reserve 1 2; expect_rc 2 "reserve 1 2"; expect_in err "'2'" "reserve extra argument"
run "$TP" pool reserve --page-size 3M 4; expect_rc 2 "reserve --page-size 3M"
expect_in err "3M" "bad page size named"; expect_in err "2 MiB" "bad page size: offered sizes"
run "$TP" pool release 5; expect_rc 2 "release 5"; expect_in err "--keep 5" "release 5 hint"
run "$TP" pool release --keep many; expect_rc 2 "release --keep many"; expect_in err "'many'" "release --keep many"
run "$TP" pool release --bogus; expect_rc 2 "release --bogus"; expect_in err "'--bogus'" "release --bogus"

# compare
run "$TP" compare; expect_rc 2 "compare without PROGRAM"; expect_in err "no PROGRAM" "compare without PROGRAM"
run "$TP" compare --cpu pentium -- true; expect_rc 2 "compare --cpu pentium"
expect_in err "'pentium'" "bad preset named"; expect_in err "zen4" "bad preset: accepted"
run "$TP" compare -- /nonexistent/program; expect_rc 1 "compare a missing program"
expect_in err "'/nonexistent/program'" "compare: missing program named"
run "$TP" compare -- no-such-program-here; expect_rc 1 "compare a program not on PATH"
expect_in err "not found on PATH" "compare: program not on PATH"
run "$TP" compare --wat -- true; expect_rc 2 "compare --wat"; expect_in err "'--wat'" "compare --wat"
finish
