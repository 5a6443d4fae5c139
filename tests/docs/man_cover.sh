#!/usr/bin/env bash
# The man pages are the reference: every TLBPACK_CONF key of alloc/options.c (with each value
# of its enum) is in tlbpack(3) and tlbpack(1); every tlbpack verb of tools/tlbpack.c, every
# `pool` sub-verb and every option a verb's --help lists is in tlbpack(1), in that verb's
# section; every option sim/main.c knows is in tlbsim(1)'s OPTIONS, and `tlbsim --help` and
# tlbsim(1) list the same values for each option that takes one of a set (--nested off|...).
# The lists come from the sources and the binaries, so a key, verb or flag added without its
# man page fails here. Usage: man_cover.sh SOURCE_DIR TLBPACK TLBSIM
set -u
SRC=$1 TLBPACK=$2 TLBSIM=$3
for f in "$TLBPACK" "$TLBSIM"; do
  [ -x "$f" ] || { echo "FAIL: $f is not built (make build)"; exit 1; }
done
helps=$(mktemp -d)
trap 'rm -rf "$helps"' EXIT
for v in $(sed -n 's/.*!strcmp(verb, "\([a-z]*\)")) return tpc_cmd_.*/\1/p' "$SRC/tools/tlbpack.c" | sort -u); do
  "$TLBPACK" "$v" --help >"$helps/$v" 2>&1 || { echo "FAIL: tlbpack $v --help exited $?"; exit 1; }
done
"$TLBSIM" --help >"$helps/tlbsim" 2>&1 || { echo "FAIL: tlbsim --help exited $?"; exit 1; }
exec python3 - "$SRC" "$helps" <<'PY'
import os, re, shlex, sys
src, helps = sys.argv[1], sys.argv[2]
fails = []
def fail(msg): fails.append(msg); print("FAIL:", msg)

# ---- a small troff reader: the text a reader sees, one output line per input line ----------
ALT = {"BR", "BI", "IR", "RB", "IB", "RI"}
def esc(t):
    t = re.sub(r"\\f[BIRP]", "", t)
    for a, b in ((r"\-", "-"), (r"\(mu", "x"), (r"\(em", "-"), (r"\(dq", '"'), (r"\(bu", "*"),
                 (r"\ ", " "), (r"\&", ""), (r"\e", "\\")):
        t = t.replace(a, b)
    return t
def render(path):
    """Lines of text; the term line of a .TP item starts with \x01."""
    out, term = [], False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith(".\\\""): continue
        m = re.match(r"^\.([A-Za-z]+)\s*(.*)$", line)
        mark = "\x01" if term else ""
        term = bool(m) and m.group(1) == "TP"
        if not m:
            out.append(mark + esc(line)); continue
        mac, rest = m.group(1), m.group(2)
        if mac == "TP": continue
        try: args = shlex.split(rest.replace("\\", "\\\\"), posix=True)
        except ValueError: args = rest.split()
        args = [a.replace("\\\\", "\\") for a in args]
        if mac in ALT: out.append(mark + esc("".join(args)))
        elif mac in ("SH", "SS"): out.append("\x00" + mac + " " + esc(" ".join(args)))
        else: out.append(mark + esc(" ".join(args)))
    return out
def sections(lines):
    """{'SH NAME': [...], 'SS tlbpack run': [...]}; an SS section is also inside its SH."""
    secs, sh, ss = {}, None, None
    for l in lines:
        if l.startswith("\x00SH "): sh, ss = l[1:], None; secs.setdefault(sh, []); continue
        if l.startswith("\x00SS "): ss = l[1:]; secs.setdefault(ss, []); continue
        l = l.lstrip("\x01")
        if sh: secs[sh].append(l)
        if ss: secs[ss].append(l)
    return secs
man = {p: render(os.path.join(src, "man", p)) for p in ("tlbpack.1", "tlbpack.3", "tlbsim.1")}
text = {p: "\n".join(l.lstrip("\x01") for l in v if not l.startswith("\x00")) for p, v in man.items()}
terms = {p: [l[1:] for l in v if l.startswith("\x01")] for p, v in man.items()}

# ---- TLBPACK_CONF keys, with their enum values, from alloc/options.c ------------------------
opts = open(os.path.join(src, "alloc/options.c")).read()
enums = {m.group(1): re.findall(r'\{"([^"]+)",', m.group(2))
         for m in re.finditer(r"static const tp_enum_t (\w+)\[\] = \{(.*?)\{NULL, 0\}\};", opts, re.S)}
keys = re.findall(r'^\s*\{"(\w+)", K_(ENUM|PATH|NUM), (\w+),', opts, re.M)
if len(keys) < 10: fail(f"found only {len(keys)} keys in alloc/options.c: the table's form changed?")
for key, kind, vals in keys:
    for page in ("tlbpack.3", "tlbpack.1"):
        lines = [l for l in terms[page] if re.match(rf"\s*{key}:", l)]
        if not lines: fail(f"{page} does not document TLBPACK_CONF key {key} (no '{key}:' term)"); continue
        if kind == "ENUM":
            shown = set(re.split(r"[|,\s]+", lines[0].split(":", 1)[1].strip()))
            missing = [v for v in enums.get(vals, []) if v not in shown]
            if missing: fail(f"{page}: '{lines[0].strip()}' lacks the value(s) {missing} of key {key}")
print(f"checked {len(keys)} TLBPACK_CONF keys in tlbpack(3) and tlbpack(1)")

# ---- tlbpack verbs, pool sub-verbs and every option each verb's --help lists ----------------
cli = open(os.path.join(src, "tools/tlbpack.c")).read()
verbs = sorted(set(re.findall(r'!strcmp\(verb, "([a-z]+)"\)\) return tpc_cmd_', cli)))
if len(verbs) < 4: fail(f"found only {verbs} as verbs in tools/tlbpack.c")
sec1 = sections(man["tlbpack.1"])
synopsis = "\n".join(sec1.get("SH SYNOPSIS", []))
for v in verbs:
    body = sec1.get(f"SS tlbpack {v}")
    if body is None: fail(f"tlbpack.1 has no section 'tlbpack {v}'"); continue
    if f"tlbpack {v}" not in synopsis: fail(f"tlbpack.1's SYNOPSIS lacks 'tlbpack {v}'")
    body = "\n".join(body)
    hopts = set()
    for l in open(os.path.join(helps, v)):
        m = re.match(r"^\s+(-[a-z], )?(--[a-z][a-z0-9-]*)", l)
        if m: hopts.add(m.group(2))
    if len(hopts) < 2: fail(f"tlbpack {v} --help lists only {sorted(hopts)}: its form changed?")
    for o in sorted(hopts - {"--help"}):
        if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", body):
            fail(f"tlbpack.1's 'tlbpack {v}' section lacks {o} (listed by tlbpack {v} --help)")
    print(f"checked tlbpack {v}: {len(hopts)} options")
pool = open(os.path.join(src, "tools/pool.c")).read()
subs = sorted(set(re.findall(r'!strcmp\(sub, "([a-z]+)"\)', pool)) - {"help"})
pool_sec = "\n".join(sec1.get("SS tlbpack pool", []))
for s in subs:
    if not re.search(rf"(^|\s){s}(\s|$)", pool_sec): fail(f"tlbpack.1's 'tlbpack pool' section lacks the sub-verb {s}")
if len(subs) < 3: fail(f"found only {subs} as pool sub-verbs in tools/pool.c")

# ---- tlbsim: every option sim/main.c knows, and the same value sets as --help -------------
mainc = open(os.path.join(src, "sim/main.c")).read()
wv = re.search(r"with_value\[\] = \{(.*?)NULL\}", mainc, re.S)
flags = set(re.findall(r'"(--[a-z][a-z0-9-]*)"', wv.group(1) if wv else ""))
flags |= set(re.findall(r'strcmp\([^,()]+, "(-[-a-z][a-z0-9-]*)"\)', mainc))
helptext = open(os.path.join(helps, "tlbsim")).read()
flags |= set(m.group(1) for m in re.finditer(r"^\s+(--[a-z][a-z0-9-]*)(?=\s)", helptext, re.M))
if len(flags) < 10: fail(f"found only {sorted(flags)} as tlbsim options")
simopts = "\n".join(sections(man["tlbsim.1"]).get("SH OPTIONS", []))
for f in sorted(flags):
    if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", simopts): fail(f"tlbsim.1's OPTIONS lack {f}")
def valsets(t):
    return {m.group(1): set(m.group(2).split("|"))
            for m in re.finditer(r"(--[a-z][a-z0-9-]*)[ =]([a-z0-9]+(?:\|[a-z0-9]+)+)\b", t)}
hv, mv = valsets(helptext), valsets(simopts)
for o, vs in sorted(hv.items()):
    if o not in mv: fail(f"tlbsim --help lists {o} {'|'.join(sorted(vs))}; tlbsim.1's OPTIONS give no values")
    elif vs != mv[o]: fail(f"{o}: tlbsim --help lists {'|'.join(sorted(vs))}, tlbsim.1 {'|'.join(sorted(mv[o]))}")
for o in sorted(set(mv) - set(hv)):
    fail(f"tlbsim.1 lists values {'|'.join(sorted(mv[o]))} for {o}; tlbsim --help gives none")
print(f"checked {len(flags)} tlbsim options, {len(hv)} value sets")
if fails: print(f"{len(fails)} check(s) failed"); sys.exit(1)
print("PASS: the man pages cover every key, verb, option and flag")
PY
