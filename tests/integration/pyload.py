"""A dict/list/json-heavy workload whose output depends only on its input (N)."""
import hashlib
import json
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
rng = random.Random(12345)
h = hashlib.sha256()

# Dicts that grow, shrink and rehash; keys of mixed types and string sizes.
d = {}
for i in range(n):
    k = "k%d-%s" % (i, "x" * rng.randrange(0, 200))
    d[k] = [i, str(i) * rng.randrange(1, 20), {"i": i, "f": i / 7.0}]
    if i % 3 == 0:
        d.pop(next(iter(d)))
h.update(str(len(d)).encode())
for k in sorted(d)[:: max(1, n // 500)]:
    h.update(k.encode())

# Lists: appends, slices, sorts, big joins.
lists = [[rng.random() for _ in range(rng.randrange(1, 400))] for _ in range(n // 20)]
lists.sort(key=len)
flat = sorted(x for l in lists for x in l[::3])
h.update(("%.12f" % sum(flat)).encode())
big = "".join(chr(65 + (i % 26)) * (i % 50) for i in range(n))
h.update(big.encode())

# JSON round trips of nested structures, large and small.
docs = []
for i in range(n // 10):
    doc = {"id": i, "tags": ["t%d" % j for j in range(i % 17)],
           "nested": {"a": [1, 2, {"b": "y" * (i % 300)}], "n": None, "ok": i % 2 == 0}}
    s = json.dumps(doc, sort_keys=True)
    back = json.loads(s)
    assert back == doc
    docs.append(s)
blob = json.dumps([json.loads(s) for s in docs])
h.update(hashlib.sha256(blob.encode()).digest())
again = json.loads(blob)
assert len(again) == len(docs)

# Sets and cyclic garbage for the collector.
s = set()
for i in range(n):
    s.add(i * 7919 % (n + 13))
    if i % 5 == 0:
        s.discard(i)
h.update(str(sorted(s)[:50]).encode())
for i in range(n // 10):
    a = {"self": None, "data": bytearray(i % 1000)}
    a["self"] = a
del a

print("dict", len(d), "lists", len(lists), "flat", len(flat), "json", len(blob), "set", len(s))
print("sha256", h.hexdigest())
