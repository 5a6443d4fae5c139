"""TLBPACK_CONF, fuzzed from the outside: runs a small program under the preloaded library with
hand-written bad settings (each must give exactly one `tlbpack: TLBPACK_CONF: ...` warning line
naming the offending key, and keep the defaults) and with random strings (never a crash, the
program's output unchanged, nothing on stderr but `tlbpack: ` lines).

usage: conf_fuzz.py LIB PROBE RANDOM_CASES [SEED]
"""
import json
import os
import random
import subprocess
import sys
import tempfile

lib, probe, n_random = sys.argv[1], sys.argv[2], int(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1


def exports_tp_malloc(path):
    """What the library is, not what it is called: tlbpack exports tp_malloc."""
    p = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("conf_fuzz: nm -D %s failed: %s" % (path, p.stderr.strip()))
    return any(l.split()[-1:] == ["tp_malloc"] for l in p.stdout.splitlines())


is_tlbpack = exports_tp_malloc(lib)
if "tlbpack" in os.path.basename(lib) and not is_tlbpack:
    sys.exit("conf_fuzz: FAIL: %s is named like tlbpack but does not export tp_malloc" % lib)
tmp = tempfile.mkdtemp(prefix="tlbpack-conf.")
failures = []


def run(conf):
    env = dict(os.environ, LD_PRELOAD=lib)
    env.pop("TLBPACK_CONF", None)
    if conf is not None:
        env["TLBPACK_CONF"] = conf
    p = subprocess.run([probe], env=env, capture_output=True, timeout=60, cwd=tmp)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def short(s, n=80):
    s = repr(s)
    return s if len(s) <= n else s[:n] + "...(%d chars)" % len(s)


def is_stats_json(line):
    """stats:json prints one JSON object (no prefix, so that it parses as it is)."""
    try:
        return "allocated_total" in json.loads(line)
    except ValueError:
        return False


def check_basic(conf, rc, out, err):
    if rc != 0:
        return "exit status %d%s" % (rc, " (signal %d)" % -rc if rc < 0 else "")
    if out != "conf_probe: ok\n":
        return "program output changed: %r" % out[:200]
    if not is_tlbpack:
        return None
    bad = [l for l in err.split("\n") if l and not l.startswith("tlbpack: ") and not is_stats_json(l)]
    if bad:
        return "stderr line not from tlbpack: %r" % bad[0][:200]
    return None


def warnings(err):
    return [l for l in err.splitlines() if l.startswith("tlbpack: TLBPACK_CONF")]


# (conf, expected warning count, a word the warning must name, must stats be printed)
LONG = "x" * 100000
cases = [
    ("", 0, None, False),
    ("stats:1", 0, None, True),
    ("stats:json", 0, None, True),
    ("pool:auto,group:site", 0, None, False),
    ("pool:4k,group:none,retain_mb:0", 0, None, False),
    ("pool:thp,group:thread,retain_mb:64", 0, None, False),
    ("pool_max:0,pool_max:4", 0, None, False),
    ("pool_max:-2", 1, "pool_max", False),
    ("pool_max:1048577", 1, "pool_max", False),
    ("bogus:1", 1, "bogus", False),
    ("pool:huge", 1, "pool", False),
    ("pool:", 1, "pool", False),
    ("group:everything", 1, "group", False),
    ("retain_mb:abc", 1, "retain_mb", False),
    ("retain_mb:-1", 1, "retain_mb", False),
    ("retain_mb:", 1, "retain_mb", False),
    ("retain_mb:99999999999999999999999999", 1, "retain_mb", False),
    ("retain_mb:12abc", 1, "retain_mb", False),
    ("stats:2", 1, "stats", False),
    ("stats", 1, "stats", False),
    ("stats:1,bogus:2", 1, "bogus", True),
    ("pool:4k,stats:1,nonsense:3", 1, "nonsense", True),
    ("bogus" + LONG + ":1", 1, "bogus", False),
    ("bo\ngus:1", 1, "bo", False),  # a newline in the input must not split the warning line
    ("pool:4k\r\n", 1, "pool", False),
    ("pool:" + LONG, 1, "pool", False),
    ("regions:" + tmp + "/no/such/dir/regions.txt", None, None, False),  # at exit: a warning or error line, no crash
]
for conf, n_warn, word, stats in cases:
    rc, out, err = run(conf)
    why = check_basic(conf, rc, out, err)
    if why is None and is_tlbpack:
        w = warnings(err)
        if n_warn is not None and len(w) != n_warn:
            why = "%d TLBPACK_CONF warning lines, expected %d: %s" % (len(w), n_warn, [short(x, 120) for x in w])
        elif word and not any(word in x for x in w):
            why = "the warning does not name %r: %s" % (word, [short(x, 120) for x in w])
        elif any(len(x) > 400 for x in w):
            why = "a warning line is %d characters long (should cut the value short)" % max(len(x) for x in w)
        elif stats != any(x.split()[1:2] in (["allocated_total"], ) or '"allocated_total"' in x
                          for x in err.splitlines()):
            why = "stats were %sprinted" % ("not " if stats else "")
    if why:
        failures.append("TLBPACK_CONF=%s: %s" % (short(conf), why))

# Defaults kept: a bad key next to pool:4k still forces 4 KiB pages.
if is_tlbpack:
    rc, out, err = run("pool:4k,stats:1,bogus:1")
    st = {l.split()[1]: l.split()[2] for l in err.splitlines() if l.startswith("tlbpack:   ") and len(l.split()) >= 3}
    if st.get("pages_hugetlbfs") not in ("0", None) or st.get("pages_thp") not in ("0", None):
        failures.append("pool:4k next to a bad key was not honoured: %s" % st)

rng = random.Random(seed)
KEYS = ["stats", "pool", "group", "regions", "retain_mb", "pool_max", "", "STATS", "pool ", " pool", "x" * 300, "\xff", "retain_mb\t"]
VALUES = ["1", "0", "json", "auto", "hugetlbfs", "thp", "4k", "site", "thread", "none", "", "-1", "0x10",
          "18446744073709551616", "1e9", "9" * 50, " ", ":", ",", "=", "%n%s%s", "\\", "y" * 5000, "\u00e9\u00e9"]
for i in range(n_random):
    parts = []
    for _ in range(rng.randrange(1, 8)):
        k = rng.choice(KEYS)
        v = rng.choice(VALUES)
        if k == "regions":
            v = os.path.join(tmp, "r%d" % rng.randrange(4)) if rng.random() < 0.5 else v
        sep = rng.choice([":", ":", ":", "=", "::", ""])
        parts.append(k + sep + v)
    conf = rng.choice([",", ",", ",,", ";", " , "]).join(parts)
    if rng.random() < 0.1:
        conf = "".join(chr(rng.randrange(1, 256)) for _ in range(rng.randrange(0, 200)))
    rc, out, err = run(conf)
    why = check_basic(conf, rc, out, err)
    if why:
        failures.append("TLBPACK_CONF=%s: %s" % (short(conf), why))

subprocess.run(["rm", "-rf", tmp])
total = len(cases) + n_random + (1 if is_tlbpack else 0)
for f in failures[:30]:
    print("conf_fuzz: FAIL: " + f)
if not is_tlbpack:
    print("conf_fuzz: note: %s is not tlbpack: only crashes and output were checked" % lib)
print("conf_fuzz: %d settings tried (%d hand-written, %d random, seed %d), %d failed"
      % (total, len(cases), n_random, seed, len(failures)))
sys.exit(1 if failures else 0)
