#!/usr/bin/env bash
# The man pages render without groff warnings and cover what they promise: every verb in
# tlbpack(1), every tp_ function and every TLBPACK_CONF key in tlbpack(3).
# Usage: man.sh SOURCE_DIR
. "$(dirname "$0")/lib.sh"
SRC=$1
command -v groff >/dev/null || skip "groff not installed"
for page in tlbpack.1 tlbsim.1 tlbpack.3; do
  run groff -man -Tutf8 -ww -z "$SRC/man/$page"
  [ "$RC" = 0 ] && [ -z "$ERR" ] && ok "$page renders cleanly" || fail "$page: groff: $ERR"
done
txt3=$(groff -man -Tascii -P-cbou "$SRC/man/tlbpack.3" 2>/dev/null)
txt1=$(groff -man -Tascii -P-cbou "$SRC/man/tlbpack.1" 2>/dev/null)
txts=$(groff -man -Tascii -P-cbou "$SRC/man/tlbsim.1" 2>/dev/null)
for f in $(grep -oE '\btp_[a-z0-9_]+[[:space:]]*\(' "$SRC/include/tlbpack.h" | tr -d '( \t' | sort -u); do
  printf '%s' "$txt3" | grep -qw "$f" || fail "tlbpack.3 does not document $f"
done
for key in stats pool group regions plan profile retain_mb numa verbose sites exclusive_kb start_kb pool_max; do
  printf '%s' "$txt3" | grep -qE "(^|[[:space:]])$key:" || fail "tlbpack.3 does not document TLBPACK_CONF key $key"
  printf '%s' "$txt1" | grep -qE "(^|[[:space:]])$key:" || fail "tlbpack.1 does not document TLBPACK_CONF key $key"
done
for verb in "tlbpack run" "tlbpack pool" "tlbpack compare" "tlbpack profile"; do
  printf '%s' "$txt1" | grep -qF "$verb" || fail "tlbpack.1 lacks $verb"
done
for opt in --cpu --set --page-size --regions --smaps --levels --nested --format --json --compare --label --asid-mode; do
  printf '%s' "$txts" | grep -qF -- "$opt" || fail "tlbsim.1 lacks $opt"
done
[ "$FAILS" = 0 ] && ok "man pages cover the API, the conf keys, the verbs and tlbsim's options"
finish
