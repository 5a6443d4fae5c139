#!/usr/bin/env bash
# pool.sh reserve N | release | status — the hugetlbfs pool used by `make test` and `make demo`.
# Prints what it got; never fails the caller when not root (the fallback path is tested instead).
set -u
cmd=${1:-status}
mnt=$(awk '$3=="hugetlbfs"{print $2; exit}' /proc/mounts)
case "$cmd" in
  reserve)
    want=${2:-64}
    if [ "$(id -u)" != 0 ]; then echo "pool: not root: no hugetlbfs pool reserved; pool-only tests will skip" >&2; exit 0; fi
    have=$(cat /proc/sys/vm/nr_hugepages)
    if [ "$have" -lt "$want" ]; then echo "$want" > /proc/sys/vm/nr_hugepages 2>/dev/null || true; fi
    got=$(cat /proc/sys/vm/nr_hugepages)
    if [ -z "$mnt" ]; then
      mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null && mnt=/dev/hugepages
    fi
    echo "pool: $got huge pages reserved (asked for at least $want), hugetlbfs mount: ${mnt:-none}" >&2
    ;;
  release)
    [ "$(id -u)" = 0 ] && echo 0 > /proc/sys/vm/nr_hugepages
    ;;
  status)
    grep -E 'HugePages_(Total|Free|Rsvd)' /proc/meminfo; echo "mount: ${mnt:-none}"
    ;;
  *) echo "usage: pool.sh reserve N | release | status" >&2; exit 2 ;;
esac
