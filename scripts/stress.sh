#!/usr/bin/env bash
# stress.sh — the long reliability runs (`make stress`): every integration test in its long
# form, plus the project built under tlbpack. Prints one line per run and a summary; exits 1
# if any run failed. Runs skip (and say why) where they need a hugetlbfs pool that is absent.
#
# Environment: BUILD (build dir, default build), TP_LIB (library to preload, default
# BUILD/libtlbpack.so), STRESS_OPS (operations per thread for stress_threads, default 2000000),
# STRESS_SEED (seed for the randomized runs, default: from the clock, printed), STRESS_TIMEOUT
# (seconds allowed to each run, default 1800; a hung run counts as failed).
set -u
cd "$(dirname "$0")/.."
export TP_SRC_DIR=$PWD
export TP_BUILD_DIR=$PWD/${BUILD:-build}
export TP_LIB=${TP_LIB:-$TP_BUILD_DIR/libtlbpack.so}
export TP_STRESS=1
ops=${STRESS_OPS:-2000000}
seed=${STRESS_SEED:-$(date +%s)}
it=tests/integration
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/tlbpack-stress.XXXXXX")
echo "stress: library $TP_LIB, seed $seed, logs in $log_dir"
[ -f "$TP_LIB" ] || { echo "stress: FAIL: $TP_LIB is not built (run make)" >&2; exit 1; }

pass=0 fail=0 skip=0 failed=()
run() {  # run NAME CMD...
  local name=$1; shift
  local t0=$SECONDS rc
  timeout -k 10 "${STRESS_TIMEOUT:-1800}" "$@" >"$log_dir/$name.log" 2>&1
  rc=$?
  local summary
  summary=$(grep -E 'PASS|SKIP|FAIL|^stress_threads: ops|fork_threads: [0-9]|fork_stress: pool|with_pool: pools|signals: [0-9]|cpython_suite: (under|without)|requests/s|redis_bgsave: (stock|tlbpack)|aslimit: [0-9]|hugepool: after|conf_fuzz: [0-9]' "$log_dir/$name.log" | tail -6)
  case $rc in
    0) pass=$((pass + 1)); printf 'stress: %-28s PASS  (%ds)\n' "$name" $((SECONDS - t0)) ;;
    77) skip=$((skip + 1)); printf 'stress: %-28s SKIP  (%ds)\n' "$name" $((SECONDS - t0)) ;;
    *) fail=$((fail + 1)); failed+=("$name"); printf 'stress: %-28s FAIL  (status %d, %ds)\n' "$name" $rc $((SECONDS - t0)) ;;
  esac
  [ -n "$summary" ] && echo "$summary" | sed 's/^/    /'
}

# min=BYTES: what each program must allocate at the least (see tests/integration/CMakeLists.txt).
run stress_threads        bash $it/run_prog.sh min=4194304 stats it_stress_threads 8 "$ops" "$seed"
[ -x "$TP_BUILD_DIR/it_stress_direct" ] &&
run stress_threads_direct "$TP_BUILD_DIR/it_stress_direct" 8 $((ops / 2)) "$seed"
run edge_sizes            bash $it/run_prog.sh min=10485760 plain it_edge_sizes 20
run thread_churn          bash $it/run_prog.sh min=268435456 stats it_thread_churn 400 32
run thread_churn_groups   bash $it/run_prog.sh conf=stats:1,group:thread min=268435456 stats it_thread_churn 300 32
[ -x "$TP_BUILD_DIR/it_group_stress" ] &&
run groups_direct         "$TP_BUILD_DIR/it_group_stress" 8 $((ops / 4)) 8
run fork_busy_threads     bash $it/run_prog.sh min=64000 plain it_fork_threads 1000 4
run fork_empty_pool       tests/with_pool.sh "16 64 512" bash $it/run_prog.sh conf=stats:1,start_kb:0 min=25165824 plain it_fork_threads 200 4 0
run fork_writers          tests/with_pool.sh "12 64 512" bash $it/run_prog.sh conf=stats:1,retain_mb:0,start_kb:0 min=2101248 plain it_fork_writers 3000 2 4
run fork_stress           env TP_SEED="$seed" bash $it/fork_stress.sh
run closed_fds            bash $it/closed_fds.sh
run signals               bash $it/run_prog.sh min=$((8 * ops / 4 * 16)) plain it_signals 8 $((ops / 2))
run exit_handlers         bash $it/run_prog.sh min=$((256 * 20 * 3 << 20)) exit it_exit_alloc 256
run aslimit_256m          bash $it/run_prog.sh min=67108864 aslimit it_aslimit 256
run aslimit_2g            bash $it/run_prog.sh min=67108864 aslimit it_aslimit 2048
run hugepool              tests/with_pool.sh "64 512" bash $it/run_prog.sh min=$((2 * 48 * 2 << 20)) pool it_hugepool 48 4
run bad_frees             bash $it/bad_free.sh
[ -x "$TP_BUILD_DIR/it_bad_free_criterion" ] &&
run bad_frees_criterion   "$TP_BUILD_DIR/it_bad_free_criterion" --jobs 1
run conf_fuzz             bash $it/conf_fuzz.sh 3000 "$seed"
run set_user_id_conf      bash $it/secure_exec.sh
run pool_max_share        tests/with_pool.sh "32 512" bash $it/pool_share.sh
run python_script         bash $it/real_python.sh
run git_repo              bash $it/real_git.sh
run sqlite3               bash $it/real_sqlite.sh
run gxx_small_program     bash $it/real_gxx.sh
run build_this_project    bash $it/build_project.sh
run cpython_regrtest      bash $it/cpython_suite.sh
run redis                 bash $it/redis.sh
run redis_bgsave          bash $it/redis_bgsave.sh

# The same allocator under its other settings: threads, real programs, groups by thread.
for extra in pool:4k pool:thp group:thread group:none retain_mb:0; do
  tag=${extra//:/_}
  run "stress_threads.$tag" env TP_CONF_EXTRA=$extra bash $it/run_prog.sh min=4194304 stats it_stress_threads 8 $((ops / 4)) "$seed"
  run "python_script.$tag"  env TP_CONF_EXTRA=$extra TP_STRESS=0 bash $it/real_python.sh
  run "sqlite3.$tag"        env TP_CONF_EXTRA=$extra TP_STRESS=0 bash $it/real_sqlite.sh
  run "cpython_quick.$tag"  env TP_CONF_EXTRA=$extra TP_STRESS=0 bash $it/cpython_suite.sh
done

echo "stress: $pass passed, $fail failed, $skip skipped (logs in $log_dir)"
[ $fail = 0 ] || { echo "stress: failed: ${failed[*]}" >&2; exit 1; }
