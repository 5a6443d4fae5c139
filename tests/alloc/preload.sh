#!/usr/bin/env bash
# preload.sh LIB POOL PROGRAM [ARGS]: runs PROGRAM under LD_PRELOAD=LIB with pool:POOL and
# stats, checks it passed and that tlbpack served it from the page source the pool names.
set -u
lib=$1 pool=$2; shift 2
free_pages=$(awk '/HugePages_Free/{print $2}' /proc/meminfo)
if [ "$pool" = hugetlbfs ] && [ "${free_pages:-0}" = 0 ]; then
  pool=hugetlbfs-empty  # every page falls back; checked below
elif [ "$pool" = hugetlbfs ] && [ "${free_pages:-0}" -lt 8 ]; then
  echo "SKIP: pool:hugetlbfs needs free huge pages (HugePages_Free=$free_pages; make test reserves them as root)"
  exit 77
fi
out=$(TLBPACK_CONF="pool:${pool%-empty},stats:1" LD_PRELOAD="$lib" "$@" 2>&1); rc=$?
echo "$out" | tail -25
[ $rc -eq 0 ] || { echo "FAIL: exit $rc under pool:$pool"; exit 1; }
echo "$out" | grep -q '^ok$' || { echo "FAIL: program did not finish"; exit 1; }
val() { echo "$out" | awk -v k="$1" '$1=="tlbpack:" && $2==k {v=$3} END{print (v=="" ? 0 : v)}'; }
[ "$(val allocated_total)" -gt 0 ] || { echo "FAIL: stats show nothing allocated by tlbpack"; exit 1; }
case $pool in
  # Pages moved off the pool before a fork count as served.
  hugetlbfs) [ $(( $(val pages_hugetlbfs) + $(val fork_unshared) )) -gt 0 ] \
               || { echo "FAIL: no hugetlbfs pages with a free pool"; exit 1; } ;;
  hugetlbfs-empty) [ "$(val pages_hugetlbfs)" -eq 0 ] && [ "$(val fallbacks)" -gt 0 ] && [ $(( $(val pages_thp) + $(val pages_4k) )) -gt 0 ] \
               || { echo "FAIL: pool:hugetlbfs with an empty pool did not fall back (fallbacks $(val fallbacks))"; exit 1; } ;;
  thp) [ "$(val pages_hugetlbfs)" -eq 0 ] && [ "$(val pages_thp)" -gt 0 ] || { echo "FAIL: pool:thp not honoured"; exit 1; } ;;
  4k) [ "$(val pages_hugetlbfs)" -eq 0 ] && [ "$(val pages_thp)" -eq 0 ] && [ "$(val pages_4k)" -gt 0 ] \
        || { echo "FAIL: pool:4k not honoured"; exit 1; } ;;
esac
echo "PASS pool:$pool"
