#!/usr/bin/env bash
# Simulator throughput (a benchmark, not a test): simulated accesses per second on a binary
# trace of N records per pattern, and text / lackey lines per second. Deletes its traces.
#   sim/throughput.sh [BUILD_DIR] [RECORDS]      (defaults: build, 100000000)
set -eu
B=${1:-build}
N=${2:-100000000}
T=$(mktemp -d "${TMPDIR:-/tmp}/tlbsim-tput.XXXXXX")
trap 'rm -rf "$T"' EXIT
rate() {   # rate LABEL RECORDS CMD... : prints records per second of user+sys CPU time
  local label=$1 n=$2; shift 2
  local TIMEFORMAT='%U %S %R' u s e
  { time "$@" >/dev/null; } 2>"$T/time"
  read -r u s e <"$T/time"
  awk -v l="$label" -v n="$n" -v u="$u" -v s="$s" -v e="$e" 'BEGIN {
    printf "%-34s %6.1f M/s (cpu %.2f s, wall %.2f s)\n", l, n / (u + s) / 1e6, u + s, e }'
}
for pat in seq random64 mix; do
  case $pat in
    random64) args=(--pattern random -p 64) ;;
    *) args=(--pattern "$pat" -p 4096) ;;
  esac
  "$B/tlbsim-gen" -n "$N" "${args[@]}" -o "$T/t.bin"
  cat "$T/t.bin" >/dev/null   # page cache
  miss=$("$B/tlbsim" --cpu skylake --json "$T/t.bin" | sed -n 's/.*"l1_miss_rate": \([0-9.]*\).*/\1/p')
  rate "bin $pat (L1 miss rate $miss)" "$N" "$B/tlbsim" --cpu skylake "$T/t.bin"
  rm -f "$T/t.bin"
done
L=$((N / 10))
"$B/tlbsim-gen" -n "$L" --pattern seq --format text -o "$T/t.txt"
rate "text lines, seq" "$L" "$B/tlbsim" --cpu skylake "$T/t.txt"
rm -f "$T/t.txt"
"$B/tlbsim-gen" -n "$L" --pattern seq --format lackey -o "$T/t.lackey"
rate "lackey lines, seq" "$L" "$B/tlbsim" --cpu skylake "$T/t.lackey"
