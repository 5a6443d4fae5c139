#!/usr/bin/env bash
# --pin (workloads) and --pin-threads (tlbbench): a two-thread workload's threads each run on a
# CPU of their own, thread i on the i-th CPU the process may use; the RESULT line says so.
set -u
build=${1:?usage: pin.sh BUILD_DIR}
out=$(mktemp -d /tmp/tb-pin-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT
fail() { echo "pin: FAIL: $*" >&2; exit 1; }
cpus=$(taskset -pc $$ | sed 's/.*: //')
ncpu=$(python3 -c "import os; print(len(os.sched_getaffinity(0)))")

# unpinned: no pinned field
"$build/bench/wl_malloc" --ops 2000 --threads 2 >"$out/plain" || fail "wl_malloc exited $?"
grep -q ' pinned=' "$out/plain" && fail "pinned= without --pin: $(cat "$out/plain")"

# pinned: both threads counted, and the CPUs it may use
"$build/bench/wl_malloc" --ops 2000 --threads 2 --pin >"$out/pin" 2>"$out/err" || fail "wl_malloc --pin exited $?"
grep -q " pinned=2 cpus=$ncpu " "$out/pin" || fail "want pinned=2 cpus=$ncpu: $(cat "$out/pin")"
"$build/bench/wl_costs" --mode churn --ops 2000 --keep 64 --pin >"$out/costs" || fail "wl_costs --pin exited $?"
grep -q " pinned=2 cpus=$ncpu " "$out/costs" || fail "wl_costs: want pinned=2: $(cat "$out/costs")"

# one CPU allowed: the threads share it, and the workload says so
first=$(python3 -c "import os; print(min(os.sched_getaffinity(0)))")
taskset -c "$first" "$build/bench/wl_malloc" --ops 2000 --threads 2 --pin >"$out/one" 2>"$out/oneerr" || fail "one CPU: exited $?"
grep -q " pinned=2 cpus=1 " "$out/one" || fail "one CPU: $(cat "$out/one")"
grep -q "only 1 CPU allowed" "$out/oneerr" || fail "one CPU: no message on stderr"

# the threads' affinity while they run: one CPU each, distinct when there are two or more
if [ "$ncpu" -ge 2 ]; then
  "$build/bench/wl_malloc" --ops 400000000 --threads 2 --pin >/dev/null 2>&1 &
  pid=$!
  for i in $(seq 100); do
    [ "$(ls /proc/$pid/task 2>/dev/null | wc -l)" -ge 3 ] && break
    sleep 0.05
  done
  lists=$(for t in /proc/$pid/task/*; do [ "${t##*/}" = "$pid" ] || sed -n 's/^Cpus_allowed_list:\s*//p' "$t/status"; done | sort)
  kill "$pid"; wait "$pid" 2>/dev/null; pid=
  [ "$(echo "$lists" | wc -l)" = 2 ] || fail "want 2 worker threads, saw: $lists"
  echo "$lists" | grep -qv '^[0-9]*$' && fail "a worker thread may run on several CPUs: $lists"
  [ "$(echo "$lists" | uniq | wc -l)" = 2 ] || fail "both workers on one CPU: $lists"
fi

# tlbbench --pin-threads passes --pin to every run and says so in summary.md
"$build/tlbbench" --scale tiny --runs 2 --workloads malloc-mt --allocators glibc --no-sim --pin-threads \
  --out "$out/res" >/dev/null 2>"$out/tberr" || fail "tlbbench --pin-threads exited $?: $(tail -3 "$out/tberr")"
[ "$(grep -c "pinned=2 cpus=$ncpu" "$out/res/runs.csv")" = 2 ] || fail "runs.csv: want 2 pinned runs"
grep -q -- '--pin-threads' "$out/res/summary.md" || fail "summary.md does not say the threads were pinned"
echo "pin: ok ($ncpu CPUs: $cpus)"
