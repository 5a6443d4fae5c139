#!/usr/bin/env bash
# python3 running a dict/list/json-heavy script under the preloaded allocator: same output as
# without it, and tlbpack's stats show it served the allocations.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd "$TP_PY"
tp_mktemp
n=50000; [ "$TP_STRESS" = 1 ] && n=400000
script=$(dirname "$0")/pyload.py

"$TP_PY" "$script" "$n" >"$TP_TMP/plain.out" 2>"$TP_TMP/plain.err" || tp_fail "plain python3 run failed: $(cat "$TP_TMP/plain.err")"
TLBPACK_CONF=$TP_CONF tp_pre "$TP_PY" "$script" "$n" >"$TP_TMP/pre.out" 2>"$TP_TMP/pre.err"
rc=$?
[ $rc = 0 ] || { cat "$TP_TMP/pre.err" >&2; tp_fail "python3 under $TP_LIB exited with status $rc"; }
cmp -s "$TP_TMP/plain.out" "$TP_TMP/pre.out" || { diff "$TP_TMP/plain.out" "$TP_TMP/pre.out" >&2; tp_fail "output differs from the run without preload"; }
[ -z "$(tp_strip_stats "$TP_TMP/pre.err")" ] || { cat "$TP_TMP/pre.err" >&2; tp_fail "unexpected stderr under preload"; }
# pyload.py joins `big`, one str of sum(i % 50 for i < n) = 24.5 n ASCII characters: a single
# block that CPython takes from malloc (pymalloc serves only objects up to 512 bytes).
tp_check_stats "$TP_TMP/pre.err" "python3" $((n * 49 / 2))
tp_pass "$(tail -1 "$TP_TMP/pre.out")"
