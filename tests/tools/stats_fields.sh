#!/usr/bin/env bash
# The stats report names the same fields as text (stats:1) and as JSON (stats:json): both are
# printed from one table in alloc/stats.c, and tlbpack(3), the reference, names every field.
# Usage: stats_fields.sh LIBTLBPACK MAN3_PAGE
set -u
LIB=$1 MAN=$2
fail() { echo "FAIL: $*"; exit 1; }
text=$(TLBPACK_CONF=stats:1 LD_PRELOAD=$LIB /bin/true 2>&1 >/dev/null) || fail "stats:1 run failed"
json=$(TLBPACK_CONF=stats:json LD_PRELOAD=$LIB /bin/true 2>&1 >/dev/null) || fail "stats:json run failed"
python3 - "$MAN" <<PY || exit 1
import json, re, sys
text = """$text"""
obj = json.loads("""$json""")
tkeys = [m.group(1) for m in re.finditer(r"^tlbpack:   ([a-z_0-9]+) ", text, re.M)]
if len(tkeys) < 20: print(f"FAIL: only {len(tkeys)} text fields: {text!r}"); sys.exit(1)
header = {"pid", "pool", "group", "hugetlbfs_mount", "pages_by_node"}
jkeys = [k for k in obj if k not in header]
only_json = [k for k in jkeys if k not in tkeys and not (k == "numa_note" and obj[k] == "")]
only_text = [k for k in tkeys if k not in jkeys]
if only_json or only_text:
    print(f"FAIL: fields only in JSON {only_json}, only in text {only_text}"); sys.exit(1)
man = open(sys.argv[1]).read()
missing = [k for k in jkeys if not re.search(r"(?<![A-Za-z0-9_])" + k + r"(?![A-Za-z0-9_])", man)]
if missing: print(f"FAIL: {sys.argv[1]} does not name the stats fields {missing}"); sys.exit(1)
print(f"PASS: {len(tkeys)} fields, the same in text and JSON")
PY
