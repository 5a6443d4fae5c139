#!/usr/bin/env bash
# alloc/'s layers hold: every #include "..." in alloc/*.c and alloc/*.h names a header of the
# file's own layer or of a lower one (alloc/layers.txt), and every file is in the table. Given
# the built objects too, no object of a layer refers to a function or data defined in a higher
# one (nm), but for the upward reads layers.txt names on its `debt` lines.
# Usage: tests/alloc/layers.sh [ALLOC_DIR [OBJECT.o...]]. One line per fault, and exit 1.
set -eu
dir=${1:-$(cd "$(dirname "$0")/../../alloc" && pwd)}
table=$dir/layers.txt
[ -r "$table" ] || { echo "layers: FAIL: no layer table $table" >&2; exit 1; }
shift || true
python3 - "$dir" "$table" "$@" <<'PY'
import os, re, subprocess, sys
d, table = sys.argv[1], sys.argv[2]
objects = [o for a in sys.argv[3:] for o in a.split(';') if o]  # ctest passes a CMake list as one
rank, layer_name, header_rank = {}, [], {}
for n, line in enumerate(open(table), 1):
    line = line.split('#', 1)[0].split()
    if not line: continue
    name, words = line[0], line[1:]
    if name == 'debt': continue  # read with the objects, below
    r = len(layer_name)
    layer_name.append(name)
    for w in words:
        if w in rank:
            sys.exit(f"layers: FAIL: {table}:{n}: {w} is in two layers")
        rank[w] = r
        if w.endswith('.h'): header_rank[w] = r
faults, debt = [], {}
files = sorted(f for f in os.listdir(d) if f.endswith(('.c', '.h')))
for f in files:
    if f not in rank:
        faults.append(f"alloc/{f}: not in layers.txt: give it a layer")
        continue
    for n, line in enumerate(open(os.path.join(d, f), errors='replace'), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m: continue
        inc = m.group(1)
        if inc == 'tlbpack.h': continue  # the public API (include/), below every layer
        if inc not in rank:
            faults.append(f"alloc/{f}:{n}: includes \"{inc}\", which is in no layer of layers.txt")
        elif rank[inc] > rank[f]:
            faults.append(f"alloc/{f}:{n}: includes \"{inc}\" ({layer_name[rank[inc]]} layer) "
                          f"from the {layer_name[rank[f]]} layer, below it")
# The objects: what each refers to that another defines, by the defining file's layer. A
# function or data of a higher layer is a fault, whatever header declares it: the records
# types.h shares are data of the layer whose file defines them. The exceptions are the known
# upward reads that layers.txt lists on its `debt` lines (file symbol...): each is named,
# and one that is no longer there is a fault too, so the list only shrinks.
if objects:
    for n, line in enumerate(open(table), 1):
        w = line.split('#', 1)[0].split()
        if len(w) >= 3 and w[0] == 'debt':
            debt.update({(w[1], sym): n for sym in w[2:]})
    defined, refs = {}, []
    for o in objects:
        src = os.path.basename(o)[:-2] if o.endswith('.o') else os.path.basename(o)
        if src not in rank:
            faults.append(f"{o}: an object of no file in layers.txt")
            continue
        out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for l in out.splitlines():
            p = l.split()
            if len(p) == 3 and p[1] in 'TDBRCVW': defined[p[2]] = (src, p[1])
            elif len(p) == 2 and p[0] == 'U': refs.append((src, p[1]))
    used_debt = set()
    for src, sym in sorted(set(refs)):
        if sym not in defined: continue
        where, kind = defined[sym]
        if rank[where] <= rank[src]: continue
        if (src, sym) in debt:
            used_debt.add((src, sym))
            continue
        if kind == 'T':
            faults.append(f"alloc/{src}: calls {sym} ({where}, {layer_name[rank[where]]} layer) from the "
                          f"{layer_name[rank[src]]} layer, below it")
        else:
            faults.append(f"alloc/{src}: reads {sym} ({where}, {layer_name[rank[where]]} layer) from the "
                          f"{layer_name[rank[src]]} layer, below it")
    for (src, sym), n in sorted(debt.items()):
        if (src, sym) not in used_debt and any(r[0] == src for r in refs):
            faults.append(f"{table}:{n}: debt {src} {sym}: {src} no longer refers to it upward: "
                          f"take it off the list")
for t in faults: print("layers: FAIL: " + t)
if faults:
    print(f"layers: {len(faults)} fault(s); the order, bottom first: {' < '.join(layer_name)}")
    sys.exit(1)
print(f"layers: {len(files)} files, every include at or below its own layer"
      + (f"; {len(objects)} objects, no call to or read of a higher layer"
         + (f" but the {len(debt)} listed as debt" if debt else "") if objects else "")
      + f" ({' < '.join(layer_name)})")
PY
