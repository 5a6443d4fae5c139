"""Deterministic data for the redis test. `redis_data.py write M` prints RESP commands for
`redis-cli --pipe`; `redis_data.py read M` prints inline read commands for `redis-cli`, and
`redis_data.py expect M` the lines redis-cli must print for them."""
import sys

mode, m = sys.argv[1], int(sys.argv[2])
ALPHA = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def value(i):
    n = (i * 7919) % 3000 + 1 if i % 50 else 70000 + i % 1000  # some large values
    return "v%d-" % i + (ALPHA[i % len(ALPHA):] + ALPHA[: i % len(ALPHA)]) * (n // len(ALPHA) + 1)


def resp(*args):
    out = ["*%d\r\n" % len(args)]
    for a in args:
        b = str(a)
        out.append("$%d\r\n%s\r\n" % (len(b.encode()), b))
    return "".join(out)


w = sys.stdout.write
if mode == "write":
    for i in range(m):
        w(resp("SET", "tp:s:%d" % i, value(i)))
        w(resp("HSET", "tp:h:%d" % (i % 97), "f%d" % i, i * 3))
        w(resp("RPUSH", "tp:l:%d" % (i % 31), i))
        if i % 4 == 0:
            w(resp("APPEND", "tp:a:%d" % (i % 13), "%d," % i))  # strings that grow (realloc)
        if i % 10 == 0:
            w(resp("DEL", "tp:s:%d" % (i // 2)))
elif mode in ("read", "expect"):
    deleted = {i // 2 for i in range(0, m, 10)}
    appends = {}
    for i in range(0, m, 4):
        appends.setdefault(i % 13, []).append("%d," % i)
    lists = {}
    for i in range(m):
        lists.setdefault(i % 31, []).append(i)
    for i in range(m):
        if mode == "read":
            w("GET tp:s:%d\nHGET tp:h:%d f%d\n" % (i, i % 97, i))
        else:
            w("%s\n%d\n" % ("" if i in deleted else value(i), i * 3))
    for k, items in sorted(lists.items()):
        if mode == "read":
            w("LLEN tp:l:%d\nLINDEX tp:l:%d -1\n" % (k, k))
        else:
            w("%d\n%d\n" % (len(items), items[-1]))
    for k, parts in sorted(appends.items()):
        w("GET tp:a:%d\n" % k if mode == "read" else "".join(parts) + "\n")
else:
    sys.exit("usage: redis_data.py write|read|expect M")
