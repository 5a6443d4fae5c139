#!/usr/bin/env bash
# The redis workload end to end at tiny scale: redis-server under the preloaded libtlbpack.so (and
# stock, the glibc row) driven by redis-benchmark; a positive requests/s in runs.csv and
# summary.csv, the preload seen in the server's own malloc binding, the stock row labelled as such,
# no file or server left behind; and without redis on PATH the workload is listed as not run.
# Exit 77 (skip) when redis-server / redis-benchmark are not installed.
set -u
build=${1:?usage: redis.sh BUILD_DIR}
for c in redis-server redis-benchmark; do
  command -v "$c" >/dev/null 2>&1 || { echo "bench_redis: SKIP: $c is not installed (make setup installs it)" >&2; exit 77; }
done
out=$(mktemp -d /tmp/tb-redis-XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "bench_redis: FAIL: $*" >&2; echo "--- stderr:" >&2; cat "$out/err" >&2; exit 1; }
mkdir "$out/tmp"

TMPDIR=$out/tmp "$build/tlbbench" --scale tiny --runs 1 --workloads redis --allocators glibc,tlbpack \
  --out "$out/res" >"$out/stdout" 2>"$out/err" || fail "tlbbench exited $?"
# runs.csv: workload,allocator,run,status,wall_s,ns_per_op,peak_rss_kb,hugetlb_kb,...,malloc_from,result
row=$(grep '^redis,tlbpack,1,0,' "$out/res/runs.csv") || fail "no good redis x tlbpack run in runs.csv"
rps=$(grep -o ' rps=[0-9.]*' <<<"$row" | cut -d= -f2)
awk -v r="${rps:-0}" 'BEGIN { exit !(r > 0) }' || fail "requests/s not positive: '$rps'"
awk -F, '$1=="redis" && $2=="tlbpack" { exit !($6 > 0 && $7 > 0) }' "$out/res/runs.csv" \
  || fail "ns_per_op or peak_rss_kb not positive"
[ "$(cut -d, -f11 <<<"$row")" = libtlbpack.so ] || fail "redis-server's malloc is not libtlbpack.so: $row"
grep -q '^redis,glibc,1,0,' "$out/res/runs.csv" || fail "no good stock redis run in runs.csv"
awk -F, '$1=="redis" && $2=="tlbpack" { exit !($4 == 1 && $6 > 0) }' "$out/res/summary.csv" \
  || fail "summary.csv lacks the redis x tlbpack median"
grep -q '| redis | tlbpack |' "$out/stdout" || fail "no redis x tlbpack row in the table"
grep -q '| redis | redis-stock (glibc row: no preload' "$out/stdout" || fail "the glibc row is not labelled redis-stock"
[ -z "$(ls -A "$out/tmp")" ] || fail "files left behind: $(ls -A "$out/tmp")"
! pgrep -f -- "--dir $out/tmp" >/dev/null || fail "a redis-server is still running"

# redis missing from PATH: reported under "Not measured", the other workload still runs
PATH=/nonexistent "$build/tlbbench" --scale tiny --runs 1 --workloads redis,chase --allocators glibc --no-sim \
  --out "$out/res2" >/dev/null 2>"$out/err" || fail "tlbbench without redis on PATH exited $?"
grep -q 'workload redis: not run: redis-server is not installed' "$out/res2/summary.md" \
  || fail "missing redis-server not listed under Not measured"
grep -q '^chase,glibc,' "$out/res2/summary.csv" || fail "the chase cell was dropped"
echo "bench_redis: ok (tlbpack: $rps requests/s at tiny scale)"
