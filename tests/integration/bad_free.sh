#!/usr/bin/env bash
# Invalid, double and interior frees through the preloaded malloc/free: each must print one
# line `tlbpack: invalid free of 0x...` / `tlbpack: double free of 0x...` naming the pointer,
# and abort (SIGABRT).
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_bad_free
tp_mktemp
fails=0
for mode in double interior interior-large stack unowned realloc-interior; do
  tp_pre "$TP_BUILD_DIR/it_bad_free" "$mode" >"$TP_TMP/out" 2>"$TP_TMP/err"
  rc=$?
  ptr=$(head -1 "$TP_TMP/out")
  want="invalid free of $ptr"; [ $mode = double ] && want="double free of $ptr"
  msg=$(grep -E '^tlbpack: (invalid|double) free' "$TP_TMP/err" | head -1)
  tp_log "$mode: status $rc, stderr: $(head -c 200 "$TP_TMP/err" | tr '\n' '|')"
  if ! tp_is_tlbpack; then continue; fi
  if [ $rc != 134 ]; then tp_log "FAIL: $mode: exit status $rc, expected 134 (SIGABRT)"; fails=$((fails + 1)); fi
  case "$msg" in  # the address, then optionally ": why"
    "tlbpack: $want" | "tlbpack: $want: "*) ;;
    *) tp_log "FAIL: $mode: expected a line 'tlbpack: $want[: reason]', got '$msg'"; fails=$((fails + 1)) ;;
  esac
  n=$(grep -c -E '^tlbpack: ' "$TP_TMP/err")
  if [ "$n" != 1 ]; then tp_log "FAIL: $mode: $n lines from tlbpack on stderr, expected one"; fails=$((fails + 1)); fi
done
tp_is_tlbpack || { tp_log "note: $TP_LIB is not tlbpack: messages and status not checked"; tp_pass; }
[ $fails = 0 ] || tp_fail "$fails checks failed"
tp_pass "6 kinds of bad free caught with the right message"
