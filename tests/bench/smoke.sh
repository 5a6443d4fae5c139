#!/usr/bin/env bash
# Smoke test: one tiny cell of the matrix end to end (workload run, traced run, simulator,
# CSV, Markdown), plus a missing allocator library reported and skipped, not dropped.
# Uses build/tlbsim when it is built, else a stand-in that checks the trace and arguments.
set -u
build=${1:?usage: smoke.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/tb-smoke-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "smoke: FAIL: $*" >&2; echo "--- stderr:" >&2; cat "$out/err" >&2; exit 1; }
sim="$build/tlbsim"; [ -x "$sim" ] || sim="$here/fake_tlbsim.sh"

"$build/tlbbench" --scale tiny --runs 2 --workloads records --allocators glibc,jemalloc,tcmalloc \
  --lib tcmalloc=/nonexistent/libtcmalloc.so --tlbsim "$sim" --out "$out/res" >"$out/stdout" 2>"$out/err" \
  || fail "tlbbench exited $?"
grep -q "skipping allocator tcmalloc" "$out/err" || fail "missing tcmalloc not reported on stderr"
grep -q "allocator tcmalloc" "$out/res/summary.md" || fail "missing tcmalloc not listed in summary.md"
grep -q '^\[1/6\] records x jemalloc run 1/2' "$out/err" || fail "no progress line"
[ "$(grep -c '^records,' "$out/res/runs.csv")" = 4 ] || fail "runs.csv should have 2 runs x 2 allocators"
[ "$(grep -c '^records,' "$out/res/summary.csv")" = 2 ] || fail "summary.csv should have 2 cells"
# jemalloc really served the jemalloc runs, glibc the glibc ones
grep -q '^records,jemalloc,.*libjemalloc.so.2' "$out/res/runs.csv" || fail "jemalloc preload not effective"
# simulator columns are numbers (column 23 = l2_miss_per_1k), the time ratio of jemalloc is 1
awk -F, '$1=="records" && $2=="jemalloc" { if ($23+0 <= 0 || $10 != "1.000") exit 1 }' "$out/res/summary.csv" \
  || fail "summary row lacks simulator figures or the jemalloc ratio"
grep -q '| records | jemalloc |' "$out/stdout" || fail "no headline table on stdout"
# stdout and stderr into one pipe (as `make demo | tee`; over 4 KiB, so a fully buffered stdout
# would be flushed mid-line): no progress or message splits a line
"$build/tlbbench" --scale tiny --runs 2 --workloads records,chase,index --allocators jemalloc,tlbpack,glibc --tlbsim "$sim" \
  --out "$out/res3" >"$out/both" 2>&1 || fail "tlbbench (one pipe) exited $?"
awk '/^\|/ && !/\|$/ { bad = 1; print "split table line: " $0 > "/dev/stderr" }
     /^- \[/ && !/\)$/ { bad = 1; print "split target line: " $0 > "/dev/stderr" }
     /tlbbench: done in/ && !/^tlbbench: done in/ { bad = 1; print "message inside a line: " $0 > "/dev/stderr" }
     END { exit bad }' "$out/both" || fail "a line of the report was split (see above)"
grep -q '^tlbbench: done in' "$out/both" || fail "no 'done' line"
# a missing simulator: reported, its columns skipped, the timed cells still there
"$build/tlbbench" --scale tiny --runs 1 --workloads chase --allocators glibc --tlbsim /nonexistent/tlbsim \
  --out "$out/res2" >/dev/null 2>"$out/err3" || fail "tlbbench without tlbsim exited $?"
grep -q "tlbsim not found at /nonexistent/tlbsim" "$out/err3" || fail "missing tlbsim not reported"
grep -q "simulator columns" "$out/res2/summary.md" || fail "missing tlbsim not listed in summary.md"
grep -q '^chase,glibc,' "$out/res2/summary.csv" || fail "timed cell dropped without tlbsim"
# the cost workloads run under every allocator they are given (two threads; malloc + 1000
# writes + free per round for scratch-mt), each run's status 0 and a time
"$build/tlbbench" --scale tiny --runs 1 --no-sim --workloads threads-sizes,threads-glibc,scratch-mt,churn-sizes-mt,batches-mt,bursts-mt,handover-mt,medium,partial,buffers,fork --allocators jemalloc,tlbpack \
  --out "$out/res4" >/dev/null 2>"$out/err" || fail "tlbbench (cost workloads) exited $?"
for w in threads-sizes threads-glibc scratch-mt churn-sizes-mt batches-mt bursts-mt handover-mt medium partial buffers fork; do
  for a in jemalloc tlbpack; do
    awk -F, -v w=$w -v a=$a '$1==w && $2==a && $4==0 && $6+0 > 0 { ok = 1 } END { exit !ok }' "$out/res4/runs.csv" \
      || fail "no successful $w x $a run with a time in runs.csv"
  done
done
# churn-sizes-mt counts its memory operations per CPU second: each run in the per-run table
grep -q '^churn-sizes-mt,tlbpack,.* ops_per_cpu_s=[1-9][0-9]* mem_ops=22020 ' "$out/res4/runs.csv" \
  || fail "churn-sizes-mt x tlbpack: no ops_per_cpu_s, or not 22020 memory ops (5 loops x 2 threads x 2202)"
grep -q '^| churn-sizes-mt | jemalloc | [kM]* *memory ops / CPU s | [0-9.]* | [0-9.]* | 1.00 | [0-9.]* | [0-9.]* | 1.00 |$' "$out/res4/summary.md" \
  || fail "no churn-sizes-mt row in the per-run table of summary.md"
# programs run whole (perl, sqlite3, xz, sort, awk and gcc are on every machine that runs make
# test): a time and a memory figure per run, and the programs' geomeans judged in the targets
"$build/tlbbench" --scale tiny --runs 1 --no-sim --workloads prog-perl,prog-sqlite,prog-xz,prog-sort,prog-awk,prog-cc1 \
  --allocators jemalloc,tlbpack --out "$out/res5" >/dev/null 2>"$out/err" || fail "tlbbench (program workloads) exited $?"
for w in prog-perl prog-sqlite prog-xz prog-sort prog-awk prog-cc1; do
  for a in jemalloc tlbpack; do
    awk -F, -v w=$w -v a=$a '$1==w && $2==a && $4==0 && $6+0 > 0 && $7+$8 > 1000 { ok = 1 } END { exit !ok }' "$out/res5/runs.csv" \
      || fail "no successful $w x $a run with a time and a peak in runs.csv"
  done
done
grep -q "programs: time geomean over 6 programs, tlbpack / jemalloc" "$out/res5/summary.md" \
  || fail "no programs geomean in summary.md"
"$build/bench/wl_programs" --prog nope >/dev/null 2>"$out/err3" && fail "wl_programs --prog nope succeeded"
grep -q "must be python, perl, lua, sqlite, z3, gs, jq, xz, sort, awk, tcl, node or cc1, got 'nope'" "$out/err3" || fail "wl_programs --prog nope: $(cat "$out/err3")"
# a program that fails stops the run with its status, and its input does not stay behind
mkdir -p "$out/fakebin" "$out/tmpd" && printf '#!/bin/sh\nexit 3\n' >"$out/fakebin/perl" && chmod +x "$out/fakebin/perl"
PATH="$out/fakebin:$PATH" TMPDIR="$out/tmpd" "$build/bench/wl_programs" --prog perl --n 10 >/dev/null 2>"$out/err4" \
  && fail "wl_programs with a failing perl succeeded"
grep -q "perl exited with status 3" "$out/err4" || fail "failing perl: $(cat "$out/err4")"
[ -z "$(ls -A "$out/tmpd")" ] || fail "a failed wl_programs run left $(ls "$out/tmpd") in TMPDIR"
# bad input: a clear message, exit 2
"$build/tlbbench" --allocators jemallox >/dev/null 2>"$out/err2"; rc=$?
[ $rc = 2 ] && grep -q "unknown allocator 'jemallox'" "$out/err2" || fail "bad allocator name: rc $rc"
"$build/tlbbench" --runs 0 >/dev/null 2>&1; [ $? = 2 ] || fail "--runs 0 accepted"
echo "smoke: ok (simulator: $sim)"
