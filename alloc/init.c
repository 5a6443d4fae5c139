/* Start-up in two phases. The core (options, size classes, the heap) needs nothing from libc
 * that allocates, so the first malloc of the process can run it. The late phase (thread-exit
 * key, fork handlers, pool discovery through libhugetlbfs and libnuma) may allocate, and it
 * needs those libraries' own constructors to have run, so it runs from tlbpack's constructor
 * (after its dependencies'): memory taken before that comes through MAP_HUGETLB. */
#include <sched.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "front.h"

_Atomic int _tp_ready;
static atomic_flag init_busy = ATOMIC_FLAG_INIT;
static _Atomic int late_started;
static int conf_warnings;
static int conf_ignored;

/* TLBPACK_CONF, unless the process runs in secure-execution mode (set-user-ID, set-group-ID,
 * file capabilities: AT_SECURE, as secure_getenv decides). There the environment belongs to
 * a less privileged user, and regions:PATH would have the program create or truncate any file
 * it can write. So every setting from the environment is ignored, not only the file names:
 * the defaults apply, and no file named by the environment is ever opened. */
static const char *conf_from_env(void) {
  const char *conf = secure_getenv("TLBPACK_CONF");
  if (conf == NULL && getauxval(AT_SECURE) != 0 && getenv("TLBPACK_CONF") != NULL) conf_ignored = 1;
  return conf;
}

static void prefork(void) {
  _tp_tcache_prefork();
  _tp_groups_prefork();
  _tp_heap_prefork();
  _tp_meta_prefork();
}
static void postfork_parent(void) {
  _tp_meta_postfork(0);
  _tp_heap_postfork(0);
  _tp_groups_postfork(0);
  _tp_tcache_postfork(0);
  _tp_heap_after_fork_parent(); /* may start a thread: no lock held any more */
}
static void postfork_child(void) {
  _tp_meta_postfork(1);
  _tp_heap_postfork(1);
  _tp_groups_postfork(1);
  _tp_tcache_postfork(1);
}

/* The key of the bins' check words (types.h and tcache.h, _tp_block_cached: a tag is a bin's address, and
 * the bin holds its address xor this): random per process, so that a word in the metadata
 * reads as a bin's check only in a bin. From getrandom, not AT_RANDOM (whose bytes are
 * glibc's stack and pointer guards). */
static uintptr_t free_key(void) {
  uintptr_t k = 0;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) { /* no entropy yet: mixed */
    struct timespec t = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &t);
    k = (uintptr_t)&k ^ ((uintptr_t)getpid() << 32) ^ (uintptr_t)t.tv_nsec ^ ((uintptr_t)t.tv_sec << 20);
    k = (k ^ (k >> 31)) * 0x9e3779b97f4a7c15ull;
  }
  return k | 1;
}

static void init_core(void) {
  while (atomic_flag_test_and_set_explicit(&init_busy, memory_order_acquire)) sched_yield();
  if (atomic_load(&_tp_ready) == 0) {
    _tp_free_key = free_key();
    conf_warnings = _tp_options_parse(&_tp_opt, conf_from_env(), NULL);
    _tp_classes_init();
    _tp_groups_init();
    _tp_heap_init();
    if (_tp_opt.plan_path[0]) _tp_plan_load(_tp_opt.plan_path);
    atomic_store_explicit(&_tp_ready, 1, memory_order_release);
  }
  atomic_flag_clear_explicit(&init_busy, memory_order_release);
}

static void init_late(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&late_started, &expected, 1)) return;
  if (conf_warnings) { /* printed now that stdio may allocate */
    tp_options_t scratch;
    _tp_options_parse(&scratch, conf_from_env(), stderr);
  }
  if (conf_ignored)
    _tp_message("TLBPACK_CONF ignored: this program runs in secure-execution mode (set-user-ID, "
                "set-group-ID or file capabilities); the defaults apply");
  _tp_tcache_key_init();
  _tp_stats_keep_stderr();
  pthread_atfork(prefork, postfork_parent, postfork_child);
  /* libhugetlbfs and libnuma are loaded later (os.c), unless asked for from the start. */
  if (_tp_opt.verbose || _tp_opt.numa == TP_NUMA_LOCAL || _tp_opt.numa == TP_NUMA_INTERLEAVE) _tp_os_discover();
  atomic_store(&_tp_ready, 2);
  if (_tp_opt.verbose)
    _tp_message("ready: pool=%d 2m=%d hugetlbfs_mount=%s numa_nodes=%d numa_mode=%d", _tp_opt.pool,
                _tp_os.has_2m, _tp_os.mount[0] ? _tp_os.mount : "none", _tp_os.numa_nodes, _tp_os.numa_mode);
}

void _tp_init(void) {
  if (atomic_load_explicit(&_tp_ready, memory_order_acquire) == 0) init_core();
}

__attribute__((constructor)) static void tp_constructor(void) {
  _tp_init();
  _tp_tcache_get();
  init_late(); /* the calling thread has its cache: allocations made here recurse safely */
}

__attribute__((destructor)) static void tp_destructor(void) { _tp_atexit_report(); }
