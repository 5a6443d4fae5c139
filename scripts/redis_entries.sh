#!/usr/bin/env bash
# TLB entries of tlbpack's own mappings in Debian's redis-server holding KEYS keys of 100 bytes
# (default 632000, about 150 MB of data), counted from the server's /proc/PID/smaps taken with
# every key loaded: for each mapping, hugetlb / its page size + AnonHugePages / 2 MiB + the rest
# of Rss / 4 KiB. The heap's mappings are the ranges of the server's regions file; the
# metadata's entries are the stats' meta_tlb_entries, which tlbpack counts the same way from
# /proc/self/smaps over its metadata regions at exit (it alone knows where they are). Prints
# both, the heap's huge pages alone, the ratio (target <= 1.05), and the stats' meta_* lines.
# Reuses the benchmark's redis workload (build/bench/wl_redis) to drive the server; only the
# server runs on tlbpack (a wrapper sets LD_PRELOAD and TLBPACK_CONF for it alone).
#   scripts/redis_entries.sh [KEYS] [BUILD_DIR]
set -u
keys=${1:-632000}
build=${2:-$(cd "$(dirname "$0")/.." && pwd)/build}
tmp=$(mktemp -d /tmp/tlbpack-redis-entries.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
command -v redis-server >/dev/null || { echo "redis_entries: redis-server is not installed" >&2; exit 77; }
cat >"$tmp/server" <<SH
#!/bin/sh
exec env LD_PRELOAD=$build/libtlbpack.so TLBPACK_CONF=stats:1,regions:$tmp/regions redis-server "\$@"
SH
chmod +x "$tmp/server"
"$build/bench/wl_redis" --server "$tmp/server" --keys "$keys" --keyspace "$keys" --datasize 100 --requests 2000 --tests set,get \
  --server-smaps "$tmp/smaps" --server-log "$tmp/log" >"$tmp/result" 2>"$tmp/err" ||
  { cat "$tmp/err" >&2; echo "redis_entries: wl_redis failed" >&2; exit 1; }
grep -o 'malloc_from=[^ ]*\|dbsize=[^ ]*\|used_memory_kb=[^ ]*\|res_entries=[^ ]*' "$tmp/result" | tr '\n' ' '; echo
meta=$(awk '$2 == "meta_tlb_entries" {print $3}' "$tmp/log")
python3 - "$tmp/regions" "$tmp/smaps" "${meta:-0}" <<'PY'
import sys
heap = []
for l in open(sys.argv[1]):
    if l.startswith("#"): continue
    s, e = (int(x, 16) for x in l.split()[0].split("-"))
    heap.append((s, e))
maps, cur = [], None
for l in open(sys.argv[2]):
    w = l.split()
    if "-" in w[0] and ":" not in w[0]:
        s, e = (int(x, 16) for x in w[0].split("-"))
        cur = {"s": s, "e": e, "name": w[5] if len(w) > 5 else "", "kv": {}, "flags": ""}
        maps.append(cur)
    elif w[0] == "VmFlags:":
        cur["flags"] = w[1:]
    elif len(w) >= 2 and w[0].endswith(":"):
        try: cur["kv"][w[0][:-1]] = int(w[1])
        except ValueError: pass
def entries(m):
    kv = m["kv"]; kps = kv.get("KernelPageSize", 4)
    htlb = kv.get("Private_Hugetlb", 0) + kv.get("Shared_Hugetlb", 0)
    if kps > 4 and htlb == 0 and "tlbpack-1g" in m["name"]: htlb = m["e"] - m["s"] >> 10
    thp = kv.get("AnonHugePages", 0); rest = kv.get("Rss", 0) - thp
    huge = (htlb // kps if kps > 4 else 0) + thp // 2048
    return huge + (rest + 3) // 4, huge
in_heap = lambda m: any(m["s"] < e and s < m["e"] for s, e in heap)
hp = [m for m in maps if in_heap(m)]
he = sum(entries(m)[0] for m in hp); hh = sum(entries(m)[1] for m in hp); me = int(sys.argv[3])
allp = sum(entries(m)[0] for m in maps)
print(f"heap: {len(hp)} mappings, {hh} huge pages, {he} TLB entries (huge pages + other 4 KiB pages)")
print(f"metadata: {me} TLB entries (stats meta_tlb_entries)")
print(f"tlbpack's mappings: {he + me} entries = {(he + me) / max(hh, 1):.4f} x the heap's {hh} huge pages (target <= 1.05)")
print(f"whole process: {allp} entries")
PY
grep -E 'tlbpack:   (meta_|pages_hugetlbfs|pages_thp|pages_4k|mappings)' "$tmp/log"
