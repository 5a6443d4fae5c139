#!/usr/bin/env bash
# git init/add/commit/log/gc in a temporary repository, with and without the preloaded allocator:
# fixed author, committer and dates make every object id deterministic, so the two logs must match.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd git
tp_mktemp
files=60; commits=8; [ "$TP_STRESS" = 1 ] && { files=400; commits=40; }

export GIT_AUTHOR_NAME=tlbpack GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=tlbpack
export GIT_COMMITTER_EMAIL=t@example.invalid GIT_CONFIG_NOSYSTEM=1 HOME=$TP_TMP
# One session: init, commit files in several rounds, branch, merge, log, gc, fsck.
session() {  # $1 = repository dir; runs every git command through $RUN
  local r=$1 c i
  $RUN git init -q -b main "$r" || return 1
  cd "$r" || return 1
  for ((c = 1; c <= commits; c++)); do
    for ((i = c; i <= files; i += c)); do
      printf 'file %d commit %d\n%s\n' "$i" "$c" "$(seq -s ' ' 1 $((i * c % 300)))" > "f$i.txt"
    done
    export GIT_AUTHOR_DATE="2024-01-0$((c % 9 + 1))T12:00:$((c % 60))Z" GIT_COMMITTER_DATE="2024-01-0$((c % 9 + 1))T12:00:$((c % 60))Z"
    $RUN git add -A || return 1
    $RUN git commit -q -m "commit $c" || return 1
    if [ $c = 3 ]; then $RUN git checkout -q -b side && echo side > side.txt && $RUN git add side.txt && $RUN git commit -q -m side && $RUN git checkout -q main; fi
  done
  $RUN git merge -q --no-edit side || return 1
  $RUN git log --format='%H %T %s' --stat
  $RUN git gc -q || return 1
  $RUN git fsck --strict --no-progress 2>&1 || return 1
  $RUN git rev-list --all --objects | sort
  $RUN git diff HEAD~3 --stat
}

RUN= session "$TP_TMP/plain" >"$TP_TMP/plain.out" 2>"$TP_TMP/plain.err" || tp_fail "plain git session failed: $(tail -5 "$TP_TMP/plain.err")"
RUN="tp_pre env TLBPACK_CONF=$TP_CONF" session "$TP_TMP/pre" >"$TP_TMP/pre.out" 2>"$TP_TMP/pre.err"
rc=$?
[ $rc = 0 ] || { tail -20 "$TP_TMP/pre.err" >&2; tp_fail "git session under $TP_LIB failed (status $rc)"; }
tp_strip_stats "$TP_TMP/pre.out" > "$TP_TMP/pre.filtered"   # fsck's 2>&1 carries stats lines
cmp -s "$TP_TMP/plain.out" "$TP_TMP/pre.filtered" || { diff "$TP_TMP/plain.out" "$TP_TMP/pre.filtered" | head -20 >&2; tp_fail "git output differs from the run without preload"; }
tp_strip_stats "$TP_TMP/pre.err" > "$TP_TMP/pre.err.filtered"
cmp -s "$TP_TMP/plain.err" "$TP_TMP/pre.err.filtered" || { diff "$TP_TMP/plain.err" "$TP_TMP/pre.err.filtered" | head >&2; tp_fail "git stderr differs from the run without preload"; }
cat "$TP_TMP/pre.out" "$TP_TMP/pre.err" > "$TP_TMP/all.err"
# git add and commit deflate every object they write; zlib's deflate state takes
# (1 << (windowBits + 2)) + (1 << (memLevel + 9)) = 256 KiB at the defaults, from calloc.
tp_check_stats "$TP_TMP/all.err" "git" 262144
tp_pass "$(grep -c -E '^[0-9a-f]{40} [0-9a-f]{40} ' "$TP_TMP/pre.out") commits, $(wc -l < "$TP_TMP/pre.out") lines of output identical"
