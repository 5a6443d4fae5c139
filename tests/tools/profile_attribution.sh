#!/usr/bin/env bash
# tlbpack profile --replay on a tiny known log and trace: exact per-site counts.
#   profile_attribution.sh TLBPACK
# Two sites: A allocates 64 bytes at 0x10000000 (one 4 KiB page), B 8 KiB at 0x10200000 (two
# 4 KiB pages, another 2 MiB page). With zen4's TLBs every first touch of a page misses L1 and
# L2 and walks; a second touch hits.
set -u
TP=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir/log" <<'PY'
import struct, sys
M = 0x7000
recs = [(ord('A'), 0x401111, 0x10000000, 64), (ord('A'), 0x402222, 0x10200000, 8192),
        (ord('F'), 0, 0x10000000, 0)]
with open(sys.argv[1], 'wb') as f:
    f.write(b'TPPROF1\0' + struct.pack('<Q', M))
    for r in recs: f.write(struct.pack('<4Q', *r))
PY
cat > "$dir/trace" <<'T'
W 7000 8
W 7000 8
R 10000000 8
R 10000008 8
R 10200000 8
R 10201000 8
R 10200010 8
R 30000000 8
W 7000 8
R 10000000 8
T
"$TP" profile --json --plan - --replay "$dir/log" "$dir/trace" >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc = 0 ] || { echo "FAIL: exit $rc"; cat "$dir/err"; exit 1; }
python3 - "$dir/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = {x['site']: x for x in d['sites']}
a, b = s['0x401111'], s['0x402222']
want = [
    (a['objects'], 1), (a['accesses'], 2), (a['l1_misses'], 1), (a['l2_misses'], 1), (a['pages_4k'], 1),
    (a['freed'], 1), (a['mean_lifetime'], 6.0),
    (b['objects'], 1), (b['bytes'], 8192), (b['accesses'], 3), (b['l1_misses'], 2), (b['l2_misses'], 2),
    (b['pages_4k'], 2), (b['pages_2m'], 1), (b['freed'], 0),
    (d['data_accesses'], 7), (d['unattributed']['accesses'], 2), (d['unattributed']['l1_misses'], 1),
    (d['l1_misses'], 4), (a['walk_mem_refs'] + b['walk_mem_refs'] + d['unattributed']['walk_mem_refs'], d['walk_mem_refs']),
    (len(d['pairs']), 1), (d['pairs'][0]['count'], 1),
]
bad = [(i, got, exp) for i, (got, exp) in enumerate(want) if got != exp]
for i, got, exp in bad: print(f"FAIL: check {i}: got {got}, expected {exp}")
if bad: print(json.dumps(d, indent=1)); sys.exit(1)
print("ok: per-site accesses, misses, walks, pages, lifetime and affinity as constructed")
PY
