#!/usr/bin/env bash
# A set-user-ID program with tlbpack loaded ignores TLBPACK_CONF (secure-execution mode): run by
# an unprivileged user with TLBPACK_CONF=regions:PATH,stats:1 it writes no file, prints no
# stats, says once that the variable was ignored, and runs normally. A control run of the same
# program without the set-user-ID bit shows the setting is honoured otherwise.
#
# Nothing on the machine is configured: the probe (it_secure_probe) is linked against
# libtlbpack.so by an absolute run path, and a root-owned set-user-ID copy of it is made in a
# temporary directory on a filesystem that allows set-user-ID programs.
# Skips (77) when not root, when no such filesystem is found, or when the unprivileged user
# cannot reach the build directory.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_prog it_secure_probe
[ "$(id -u)" = 0 ] || tp_skip "needs root to make a root-owned set-user-ID copy of the probe (run \`make test\` as root)"
user=nobody
id -u "$user" >/dev/null 2>&1 || tp_skip "no '$user' user to run the probe unprivileged"
uid=$(id -u "$user") gid=$(id -g "$user")
if command -v setpriv >/dev/null 2>&1; then
  as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"; }
elif command -v runuser >/dev/null 2>&1; then
  as_user() { runuser -u "$user" -- "$@"; }
else
  tp_skip "neither setpriv nor runuser is installed (util-linux) to run the probe as $user"
fi

nosuid() { "$TP_PY" -c 'import os, sys; sys.exit(0 if os.statvfs(sys.argv[1]).f_flag & os.ST_NOSUID else 1)' "$1"; }
for base in "${TMPDIR:-/tmp}" "$TP_BUILD_DIR"; do
  if nosuid "$base"; then tp_log "$base is on a nosuid filesystem; trying the next place"; continue; fi
  TP_TMP=$(mktemp -d "$base/tlbpack-secure.XXXXXX") && break
done
[ -n "$TP_TMP" ] || tp_skip "${TMPDIR:-/tmp} and $TP_BUILD_DIR are both on nosuid filesystems: a set-user-ID copy cannot run"
T=$TP_TMP
chmod 755 "$T"
install -m 4755 -o root -g root "$TP_BUILD_DIR/it_secure_probe" "$T/probe-suid"
install -m 0755 "$TP_BUILD_DIR/it_secure_probe" "$T/probe-plain"
mkdir -m 755 "$T/root-only"                 # the unprivileged user cannot create files here
mkdir -m 755 "$T/user" && chown "$uid:$gid" "$T/user"
echo "kept" > "$T/root-only/existing"

fails=0
check() { if eval "$1"; then tp_log "ok: $2"; else tp_log "FAIL: $2"; fails=$((fails + 1)); fi; }
show() { sed "s/^/  $1: /" "$2" >&2; }

# 1. Control: the plain copy, as the user, honours TLBPACK_CONF.
TLBPACK_CONF="regions:$T/user/regions.txt,stats:1" as_user "$T/probe-plain" >"$T/out1" 2>"$T/err1"; rc=$?
if [ $rc -ne 0 ] && grep -q "error while loading shared libraries" "$T/err1"; then
  show stderr "$T/err1"
  tp_skip "$user cannot load $TP_LIB (a directory above the build is not readable by others)"
fi
check "[ $rc = 0 ] && grep -q 'secure_probe: ok uid=$uid euid=$uid secure=0 tlbpack_malloc=1' '$T/out1'" \
  "control: plain copy run as $user, served by tlbpack (status $rc: $(cat "$T/out1"))"
check "[ -s '$T/user/regions.txt' ]" "control: regions:PATH honoured without set-user-ID ($T/user/regions.txt written)"
check "grep -q '^tlbpack: stats' '$T/err1'" "control: stats:1 honoured without set-user-ID"

# 2. The set-user-ID copy without TLBPACK_CONF: secure mode, and nothing said.
(unset TLBPACK_CONF; as_user "$T/probe-suid") >"$T/out2" 2>"$T/err2"; rc=$?
if ! grep -q "euid=0 secure=1" "$T/out2"; then
  show stdout "$T/out2"; show stderr "$T/err2"
  tp_skip "the set-user-ID copy in $T did not run with euid 0 (filesystem mounted nosuid, or no_new_privs set)"
fi
check "[ $rc = 0 ] && grep -q 'tlbpack_malloc=1' '$T/out2'" "set-user-ID copy runs on tlbpack in secure-execution mode (status $rc)"
check "[ ! -s '$T/err2' ]" "without TLBPACK_CONF set, nothing is printed on stderr"

# 3. The set-user-ID copy with TLBPACK_CONF naming files: ignored, said once.
TLBPACK_CONF="regions:$T/root-only/regions.txt,stats:1,verbose:1" as_user "$T/probe-suid" >"$T/out3" 2>"$T/err3"; rc=$?
show stdout "$T/out3"; show stderr "$T/err3"
check "[ $rc = 0 ] && grep -q 'secure_probe: ok uid=$uid euid=0 secure=1 tlbpack_malloc=1' '$T/out3'" \
  "set-user-ID copy with TLBPACK_CONF runs normally (status $rc)"
check "[ ! -e '$T/root-only/regions.txt' ]" "no file named by TLBPACK_CONF appears ($T/root-only/regions.txt)"
check "! grep -q '^tlbpack: stats' '$T/err3'" "stats:1 is ignored (no stats block)"
check "[ \$(grep -c 'TLBPACK_CONF' '$T/err3') = 1 ] && grep -q 'ignored' '$T/err3'" \
  "one line on stderr says TLBPACK_CONF was ignored"

# 4. An existing file named by TLBPACK_CONF is not truncated either.
TLBPACK_CONF="regions:$T/root-only/existing" as_user "$T/probe-suid" >"$T/out4" 2>"$T/err4"; rc=$?
check "[ $rc = 0 ] && [ \"\$(cat '$T/root-only/existing')\" = kept ]" "an existing root-owned file named by TLBPACK_CONF is left as it was"

ls -la "$T/root-only" | sed 's/^/  root-only: /' >&2
[ $fails = 0 ] || tp_fail "$fails check(s) failed"
tp_pass "TLBPACK_CONF ignored in a set-user-ID program run by $user; honoured in the same program without the bit"
