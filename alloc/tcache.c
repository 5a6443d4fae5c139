/* Thread caches: per thread, per group, per size class, a stack of objects ready to hand out,
 * so the common malloc and free take no lock. Bins are created on first use. A thread's cache
 * is flushed at thread exit; after that the thread allocates without a cache. */
#include <string.h>

#include "internal.h"

__thread tp_tcache_t *_tp_tc __attribute__((tls_model("initial-exec")));

static tp_lock_t tc_lock = TP_LOCK_INIT;
static tp_tcache_t *all_list, *free_list;
static pthread_key_t tc_key;
static int tc_key_ok;
/* Counters of threads that are gone. */
static size_t dead_nmalloc, dead_nfree, dead_bytes;
static ptrdiff_t dead_live_bytes;

/* Used by a thread after its cache was torn down (thread exit): never caches anything. */
static tp_tcache_t exited_cache = {.dead = 1};

static void tcache_exit(void *arg);

/* How many freed blocks a bin keeps. Under group:thread, blocks freed into another thread's
 * group are of no use to this one (it allocates from its own group only): they go back to
 * their slabs at once. Kept here, even a few per bin, they would pin that group's slabs and
 * huge pages for as long as this thread lives, after their own thread has exited. */
static uint32_t tbin_limit(const tp_tcache_t *tc, unsigned g, uint32_t cap) {
  return tc->mode == TP_GROUP_THREAD && g != tc->thread_group ? 0 : cap;
}

/* A recycled record's bins were sized for its old thread, whose group may not be this one's. */
static void reset_limits(tp_tcache_t *tc) {
  for (unsigned g = 0; g < TP_MAX_GROUPS; g++) {
    tp_tgroup_t *tg = tc->groups[g];
    if (tg == NULL) continue;
    for (unsigned c = 0; c < TP_NCLASSES; c++)
      if (tg->bins[c]) tg->bins[c]->limit = tbin_limit(tc, g, tg->bins[c]->cap);
  }
}

static void link_all(tp_tcache_t *tc) {
  tc->prev_all = NULL;
  tc->next_all = all_list;
  if (all_list) all_list->prev_all = tc;
  all_list = tc;
}

tp_tcache_t *_tp_tcache_init(void) {
  if (atomic_load_explicit(&_tp_ready, memory_order_acquire) == 0) _tp_init();
  _tp_lock(&tc_lock);
  tp_tcache_t *tc = free_list;
  if (tc) free_list = tc->next_all;
  _tp_unlock(&tc_lock);
  int recycled = tc != NULL;
  if (tc) {
    /* A recycled record keeps its per-group bins (emptied at the old thread's exit). */
    tp_tgroup_t *keep[TP_MAX_GROUPS];
    memcpy(keep, tc->groups, sizeof keep);
    memset(tc, 0, sizeof *tc);
    memcpy(tc->groups, keep, sizeof keep);
  } else {
    tc = _tp_meta_alloc(sizeof *tc);
    if (tc == NULL) return &exited_cache;
  }
  tc->mode = _tp_opt.group;
  _tp_lock(&tc_lock);
  link_all(tc);
  _tp_unlock(&tc_lock);
  _tp_tc = tc;
  if (tc_key_ok) pthread_setspecific(tc_key, tc);
  if (tc->mode == TP_GROUP_THREAD) tc->thread_group = (uint16_t)_tp_thread_group();
  tc->owns_thread_group = tc->mode == TP_GROUP_THREAD && tc->thread_group != TP_SHARED_GROUP;
  if (recycled) reset_limits(tc);
  return tc;
}

void _tp_tcache_key_init(void) {
  tc_key_ok = pthread_key_create(&tc_key, tcache_exit) == 0;
  if (tc_key_ok && _tp_tc != NULL && !_tp_tc->dead) pthread_setspecific(tc_key, _tp_tc);
}

tp_tbin_t *_tp_tbin_get(tp_tcache_t *tc, unsigned g, unsigned c) {
  if (tc->dead) return NULL;
  tp_tgroup_t *tg = tc->groups[g];
  tp_group_t *grp = _tp_groups[g];
  if (tg == NULL) {
    tg = _tp_meta_alloc(sizeof *tg);
    if (tg == NULL) return NULL;
    tg->gen = atomic_load(&grp->gen);
    tc->groups[g] = tg;
  } else if (tg->gen != atomic_load(&grp->gen)) {
    /* The group was destroyed (and maybe re-created): its objects are gone, drop them. */
    for (unsigned k = 0; k < TP_NCLASSES; k++)
      if (tg->bins[k]) tg->bins[k]->count = 0;
    tg->gen = atomic_load(&grp->gen);
  }
  tp_tbin_t *b = tg->bins[c];
  if (b == NULL) {
    unsigned cap = _tp_classes[c].tcache_cap;
    if (cap == 0) return NULL; /* not cached: callers go to the slab directly */
    b = _tp_meta_alloc(sizeof *b + cap * sizeof(tp_entry_t));
    if (b == NULL) return NULL;
    b->cap = cap;
    b->limit = tbin_limit(tc, g, cap);
    tg->bins[c] = b;
  }
  return b;
}

/* Returns the oldest entries to the slabs, keeping `keep`. */
void _tp_tbin_flush(tp_tcache_t *tc, unsigned g, unsigned c, tp_tbin_t *b, unsigned keep) {
  if (b->count <= keep) return;
  unsigned n = b->count - keep;
  tp_tgroup_t *tg = tc->groups[g];
  if (tg && tg->gen == atomic_load(&_tp_groups[g]->gen)) _tp_bin_flush(_tp_groups[g], c, b->e, n);
  memmove(b->e, b->e + n, keep * sizeof(tp_entry_t));
  b->count = keep;
}

void _tp_tcache_flush_all(tp_tcache_t *tc) {
  for (unsigned g = 0; g < TP_MAX_GROUPS; g++) {
    tp_tgroup_t *tg = tc->groups[g];
    if (tg == NULL) continue;
    for (unsigned c = 0; c < TP_NCLASSES; c++)
      if (tg->bins[c]) _tp_tbin_flush(tc, g, c, tg->bins[c], 0);
  }
}

static void tcache_exit(void *arg) {
  tp_tcache_t *tc = arg;
  if (tc == NULL || tc->dead) return;
  _tp_tcache_flush_all(tc);
  _tp_stats_note_live(); /* its last frees count in the global live bytes (and the peak) */
  if (tc->owns_thread_group) _tp_thread_group_release(tc->thread_group);
  _tp_tc = &exited_cache;
  _tp_lock(&tc_lock);
  dead_nmalloc += tc->nmalloc;
  dead_nfree += tc->nfree;
  dead_bytes += tc->bytes_alloc;
  dead_live_bytes += tc->live_bytes;
  if (tc->prev_all) tc->prev_all->next_all = tc->next_all;
  else all_list = tc->next_all;
  if (tc->next_all) tc->next_all->prev_all = tc->prev_all;
  /* The tgroup and bin records stay with the cache record for its next thread. */
  tp_tcache_t keep = *tc;
  memset(tc, 0, sizeof *tc);
  memcpy(tc->groups, keep.groups, sizeof tc->groups);
  tc->next_all = free_list;
  free_list = tc;
  _tp_unlock(&tc_lock);
}

void _tp_tcache_count_dropped(size_t objects, size_t bytes) {
  _tp_lock(&tc_lock);
  dead_nfree += objects;
  dead_live_bytes -= (ptrdiff_t)bytes;
  _tp_unlock(&tc_lock);
  atomic_fetch_sub(&_tp_global_live, (ptrdiff_t)bytes);
}

void _tp_tcache_sum(size_t *nm, size_t *nf, size_t *ba, ptrdiff_t *lb) {
  _tp_lock(&tc_lock);
  size_t m = dead_nmalloc, f = dead_nfree, b = dead_bytes;
  ptrdiff_t l = dead_live_bytes;
  for (tp_tcache_t *tc = all_list; tc; tc = tc->next_all) {
    m += tc->nmalloc;
    f += tc->nfree;
    b += tc->bytes_alloc;
    l += tc->live_bytes;
  }
  m += exited_cache.nmalloc;
  f += exited_cache.nfree;
  b += exited_cache.bytes_alloc;
  l += exited_cache.live_bytes;
  _tp_unlock(&tc_lock);
  *nm = m, *nf = f, *ba = b, *lb = l;
}

void _tp_tcache_prefork(void) { _tp_lock(&tc_lock); }

void _tp_tcache_postfork(int child) {
  if (!child) {
    _tp_unlock(&tc_lock);
    return;
  }
  _tp_lock_reinit(&tc_lock);
  /* Other threads do not exist in the child: fold their counters, forget their caches
   * (what they held is lost to the child, never handed out twice). */
  tp_tcache_t *me = _tp_tc;
  for (tp_tcache_t *tc = all_list, *next; tc; tc = next) {
    next = tc->next_all;
    if (tc == me) continue;
    dead_nmalloc += tc->nmalloc;
    dead_nfree += tc->nfree;
    dead_bytes += tc->bytes_alloc;
    dead_live_bytes += tc->live_bytes;
    }
  all_list = NULL;
  if (me && !me->dead) link_all(me);
}
