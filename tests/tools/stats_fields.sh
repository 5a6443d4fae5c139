#!/usr/bin/env bash
# The stats report names the same fields as text (stats:1) and as JSON (stats:json): both are
# printed from one table in alloc/stats.c, and the fields the README and tlbpack(3) list are
# all there. Usage: stats_fields.sh LIBTLBPACK README
set -u
LIB=$1 README=$2
fail() { echo "FAIL: $*"; exit 1; }
text=$(TLBPACK_CONF=stats:1 LD_PRELOAD=$LIB /bin/true 2>&1 >/dev/null) || fail "stats:1 run failed"
json=$(TLBPACK_CONF=stats:json LD_PRELOAD=$LIB /bin/true 2>&1 >/dev/null) || fail "stats:json run failed"
python3 - "$README" <<PY || exit 1
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
readme = open(sys.argv[1]).read()
missing = [k for k in jkeys if f"\`{k}\`" not in readme and k not in ("nmalloc", "nfree", "numa_nodes", "numa_note")]
if missing: print(f"FAIL: README does not name the stats fields {missing}"); sys.exit(1)
print(f"PASS: {len(tkeys)} fields, the same in text and JSON")
PY
