#!/usr/bin/env bash
# Installs the Debian packages tlbpack builds, tests and benchmarks with, if any is missing.
# Safe to run again: it does nothing when everything is present.
# --bench: also the programs that tlbbench's prog-* rows run (make bench); those are optional:
# one that cannot be installed skips its row, so their failure is a warning, not an error.
set -u
PKGS=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libhugetlbfs-dev libhugetlbfs-bin libnuma-dev numactl
  libcriterion-dev
  libjemalloc2 libjemalloc-dev libtcmalloc-minimal4 libmimalloc2.0
  gnuplot-nox valgrind sqlite3 libsqlite3-dev git python3 g++
  libpython3.11-testsuite redis-server redis-tools
)
BENCH_PKGS=(perl lua5.4 z3 ghostscript jq xz-utils coreutils tcl nodejs)
bench=0
[ "${1:-}" = --bench ] && bench=1
is_missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
updated=0
apt_update_once() {
  [ $updated = 1 ] && return 0
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || apt-get update
  updated=1
}
missing=()
for p in "${PKGS[@]}"; do
  is_missing "$p" && missing+=("$p")
done
bench_missing=()
if [ $bench = 1 ]; then
  for p in "${BENCH_PKGS[@]}"; do
    is_missing "$p" && bench_missing+=("$p")
  done
fi
if [ ${#bench_missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  echo "setup: installing the benchmark programs ${bench_missing[*]}" >&2
  apt_update_once
  apt-get install -y -qq --no-install-recommends "${bench_missing[@]}" >/dev/null ||
    echo "setup: could not install ${bench_missing[*]}; tlbbench skips the prog-* rows of those missing" >&2
elif [ ${#bench_missing[@]} -gt 0 ]; then
  echo "setup: benchmark programs missing (their prog-* rows are skipped): ${bench_missing[*]}" >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: not root, so not installing them; run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 0
fi
echo "setup: installing ${missing[*]}" >&2
apt_update_once
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
  echo "setup: apt-get install failed for: ${missing[*]}" >&2; exit 1; }
# redis-server's package starts a system instance; our tests start their own on loopback.
if command -v systemctl >/dev/null 2>&1; then systemctl stop redis-server >/dev/null 2>&1 || true; fi
exit 0
