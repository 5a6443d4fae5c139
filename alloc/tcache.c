/* Thread caches: per thread, per group, per size class, a stack of objects ready to hand out,
 * so the common malloc and free take no lock. A thread starts on the static empty cache and
 * gets its own record on its first miss; bins are created on first use. A thread's cache is
 * flushed at thread exit; after that the thread allocates without a cache. */
#include <string.h>

#include "tcache.h"

/* count 0, limit 0: malloc and free both miss */
tp_slab_t *_tp_no_slabs[TP_GIB_SLOTS];
tp_tbin_t _tp_tbin_empty = {.top = _tp_tbin_empty.e, .end = _tp_tbin_empty.e, .lo = _tp_tbin_empty.e, .low = _tp_tbin_empty.e};
static tp_tgroup_t empty_tgroup = {.bins = {[0 ... TP_NCLASSES - 1] = &_tp_tbin_empty},
                                   .fast = {[0 ... TP_FAST_N - 1] = &_tp_tbin_empty}};

/* The static records' bin table: all 0, every entry their own empty bin. */
static intptr_t no_bin_off[TP_BIN_TABLE];

#define EMPTY_CACHE_INIT(self)                                                                    \
  {                                                                                               \
    .empty = {.top = &self.empty.below + 1, .end = &self.empty.below + 1},                        \
    .site = {[0 ... TP_SITE_CACHE - 1] = {1, empty_tgroup.fast}}, .dead = 1, .map_base = TP_NO_GIB, \
    .map_slabs = _tp_no_slabs, .bin_off = no_bin_off,                                             \
    .groups = {[0 ... TP_MAX_GROUPS - 1] = &empty_tgroup},                                        \
  }
tp_tcache_t _tp_tcache_empty = EMPTY_CACHE_INIT(_tp_tcache_empty);
/* Used by a thread after its cache was torn down (thread exit): never caches anything. */
static tp_tcache_t exited_cache = EMPTY_CACHE_INIT(exited_cache);

__thread tp_tcache_t *_tp_tc __attribute__((tls_model("initial-exec"))) = &_tp_tcache_empty;
uintptr_t _tp_free_key;

static tp_lock_t tc_lock = TP_LOCK_INIT;
static tp_tcache_t *all_list, *free_list;
static pthread_key_t tc_key;
static int tc_key_ok;
/* Counters of threads that are gone. */
static size_t dead_nmalloc, dead_nfree, dead_bytes;
static ptrdiff_t dead_live_bytes;

static void tcache_exit(void *arg);

static uint32_t tbin_limit(const tp_tcache_t *tc, unsigned g, uint32_t cap) {
  return _tp_policy_tbin_limit(tc->mode, g, tc->thread_group, cap);
}

static int real_bin(const tp_tbin_t *b) { return b != &_tp_tbin_empty; }

/* A recycled record's bins were sized for its old thread, whose group may not be this one's. */
static void reset_limits(tp_tcache_t *tc) {
  for (unsigned g = 0; g < TP_MAX_GROUPS; g++) {
    tp_tgroup_t *tg = tc->groups[g];
    if (tg == &empty_tgroup) continue;
    for (unsigned c = 0; c < TP_NCLASSES; c++)
      if (real_bin(tg->bins[c])) tg->bins[c]->end = tg->bins[c]->lo + tbin_limit(tc, g, tg->bins[c]->cap);
  }
}

static void link_all(tp_tcache_t *tc) { TP_LIST_PUSH(&all_list, tc, next_all, prev_all); }

static void mixed_clear(tp_mixed_t *m) {
  m->ra = 0;
  for (unsigned i = 0; i < TP_FAST_N; i++) m->fast[i] = &_tp_tbin_empty;
}

/* Everything but the per-group bins and the mixed bins' records, which a recycled record keeps. */
static void reset_record(tp_tcache_t *tc) {
  tp_tgroup_t *keep[TP_MAX_GROUPS];
  tp_mixed_t *mixed[TP_MIXED_SITES];
  memcpy(keep, tc->groups, sizeof keep);
  memcpy(mixed, tc->mixed, sizeof mixed);
  intptr_t *bin_off = tc->bin_off; /* names the kept bins */
  uint16_t big = tc->big_bins, grown = tc->grown_bins, ntrim = tc->ntrim; /* count the kept bins */
  __typeof__(tc->trim) trim;
  memcpy(trim, tc->trim, sizeof trim);
  memset(tc, 0, sizeof *tc);
  memcpy(tc->groups, keep, sizeof keep);
  memcpy(tc->trim, trim, sizeof trim);
  tc->bin_off = bin_off;
  tc->empty.top = tc->empty.end = &tc->empty.below + 1;
  tc->big_bins = big;
  tc->grown_bins = grown;
  tc->ntrim = ntrim;
  for (unsigned i = 0; i < TP_MIXED_SITES; i++)
    if ((tc->mixed[i] = mixed[i]) != NULL) mixed_clear(mixed[i]);
  for (unsigned i = 0; i < TP_SITE_CACHE; i++) tc->site[i] = (tp_site_slot_t){1, empty_tgroup.fast};
  tc->map_base = TP_NO_GIB;
  tc->map_slabs = _tp_no_slabs;
}

static unsigned nstarted; /* thread caches started (tc_lock): their sides alternate */

static tp_tcache_t *tcache_init(void) {
  _tp_lock(&tc_lock);
  tp_tcache_t *tc = free_list;
  if (tc) free_list = tc->next_all;
  _tp_unlock(&tc_lock);
  int recycled = tc != NULL;
  if (tc == NULL) {
    tc = _tp_meta_alloc(sizeof *tc);
    if (tc == NULL) return &exited_cache;
    /* The bin table: address space, touched only where the thread has bins. */
    if ((tc->bin_off = _tp_meta_map(TP_BIN_TABLE * sizeof(intptr_t))) == NULL) {
      _tp_meta_free(tc, sizeof *tc);
      return &exited_cache;
    }
    for (unsigned g = 0; g < TP_MAX_GROUPS; g++) tc->groups[g] = &empty_tgroup;
  }
  reset_record(tc);
  tc->mode = _tp_opt.group;
  _tp_lock(&tc_lock);
  link_all(tc);
  tc->side = (uint8_t)(nstarted++ & 1);
  _tp_unlock(&tc_lock);
  _tp_tc = tc;
  _tp_run_side = tc->side;
  if (tc_key_ok) pthread_setspecific(tc_key, tc);
  if (tc->mode == TP_GROUP_THREAD) tc->thread_group = (uint16_t)_tp_thread_group();
  tc->owns_thread_group = tc->mode == TP_GROUP_THREAD && tc->thread_group != TP_SHARED_GROUP;
  if (recycled) reset_limits(tc);
  return tc;
}

tp_tcache_t *_tp_tcache_get(void) {
  tp_tcache_t *tc = _tp_tc;
  return TP_LIKELY(tc != &_tp_tcache_empty) ? tc : tcache_init();
}

void _tp_tcache_key_init(void) {
  tc_key_ok = pthread_key_create(&tc_key, tcache_exit) == 0;
  if (tc_key_ok && !_tp_tc->dead) pthread_setspecific(tc_key, _tp_tc);
}

static tp_tgroup_t *tgroup_get(tp_tcache_t *tc, unsigned g) {
  if (tc->dead) return &empty_tgroup;
  tp_tgroup_t *tg = tc->groups[g];
  tp_group_t *grp = _tp_groups[g];
  if (tg == &empty_tgroup) {
    tg = _tp_meta_alloc(sizeof *tg);
    if (tg == NULL) return &empty_tgroup;
    for (unsigned c = 0; c < TP_NCLASSES; c++) tg->bins[c] = &_tp_tbin_empty, tg->remote[c] = NULL;
    for (unsigned i = 0; i < TP_FAST_N; i++) tg->fast[i] = &_tp_tbin_empty;
    tg->gen = atomic_load(&grp->gen);
    tc->groups[g] = tg;
  } else if (tg->gen != atomic_load(&grp->gen)) {
    /* The group was destroyed (and maybe re-created): its objects are gone, drop them. */
    for (unsigned k = 0; k < TP_NCLASSES; k++) {
      tp_tbin_t *b = tg->bins[k];
      unsigned n = _tp_tbin_count(b);
      _tp_stats_out(-(ptrdiff_t)n * (ptrdiff_t)_tp_classes[k].size);
      b->out -= n;
      b->top = b->low = b->lo;
      tp_tbin_t *r = tg->remote[k];
      if (r) {
        _tp_stats_out(-(ptrdiff_t)_tp_tbin_count(r) * (ptrdiff_t)_tp_classes[k].size);
        r->top = r->lo;
      }
    }
    tg->gen = atomic_load(&grp->gen);
  }
  return tg;
}

tp_tbin_t **_tp_tgroup_fast(tp_tcache_t *tc, unsigned g) { return tgroup_get(tc, g)->fast; }

int _tp_tcache_is_mixed(const tp_tcache_t *tc, uintptr_t ra, tp_tbin_t *const *bins) {
  for (unsigned i = 0; i < TP_MIXED_SITES && tc->mixed[i] != NULL; i++)
    if (tc->mixed[i]->ra == ra) return bins == tc->mixed[i]->fast;
  return 0;
}

tp_tbin_t **_tp_tcache_mixed(tp_tcache_t *tc, uintptr_t ra, unsigned base, unsigned g, unsigned c) {
  if (tc->dead) return empty_tgroup.fast;
  tp_mixed_t *m = NULL;
  for (unsigned i = 0; i < TP_MIXED_SITES && m == NULL; i++) {
    tp_mixed_t *x = tc->mixed[i];
    if (x == NULL) {
      x = _tp_meta_alloc(sizeof *x);
      if (x == NULL) break;
      mixed_clear(x);
      tc->mixed[i] = x;
    }
    if (x->ra == ra || x->ra == 0) m = x;
  }
  if (m == NULL) return _tp_tgroup_fast(tc, g);
  if (m->ra != ra && base != TP_MIXED_NO_BASE) /* a whole site's: its other classes stay on base */
    memcpy(m->fast, _tp_tgroup_fast(tc, base), sizeof m->fast);
  m->ra = ra;
  /* An ordered group allocates past the bins: its sizes stay misses, like its own fast[]. */
  tp_tbin_t *b = c < TP_NCLASSES && !_tp_groups[g]->ordered ? _tp_tbin_get(tc, g, c) : NULL;
  if (c < TP_NCLASSES)
    for (unsigned i = _tp_fast_lo[c]; i < _tp_fast_end[c]; i++) m->fast[i] = b ? b : &_tp_tbin_empty;
  return m->fast;
}

/* An empty bin of class c with room for cap entries, caching up to limit of them. */
static tp_tbin_t *bin_new(unsigned c, unsigned cap, unsigned limit) {
  tp_tbin_t *b = _tp_meta_alloc(sizeof *b + cap * sizeof(tp_entry_t));
  if (b == NULL) return NULL;
  b->cap = cap;
  b->cls = c;
  b->below.p = NULL;
  b->check = (uintptr_t)b ^ _tp_free_key;
  b->top = b->lo = b->low = b->e;
  b->end = b->e + limit;
  b->fill_mark = b->flush_mark = UINT64_MAX;
  b->flushes = 0;
  return b;
}

tp_tbin_t *_tp_tbin_get(tp_tcache_t *tc, unsigned g, unsigned c) {
  tp_tgroup_t *tg = tgroup_get(tc, g);
  if (tg == &empty_tgroup) return NULL;
  tp_tbin_t *b = tg->bins[c];
  if (!real_bin(b)) {
    unsigned cap = _tp_classes[c].tcache_limit;
    if (cap == 0) return NULL; /* not cached: callers go to the slab directly */
    if (cap > _tp_classes[c].tcache_cap && tbin_limit(tc, g, cap) != 0) { /* up to TP_BIG_BINS such bins */
      if (tc->big_bins < TP_BIG_BINS) tc->big_bins++;
      else cap = _tp_classes[c].tcache_cap;
    }
    if ((b = bin_new(c, cap, tbin_limit(tc, g, cap))) == NULL) return NULL;
    tg->bins[c] = b;
    tc->bin_off[_tp_bin_index(g, c)] = (intptr_t)((uintptr_t)b - (uintptr_t)tc); /* the free hit's */
    if (_tp_class_trimmed(_tp_classes[c].size) && _tp_tbin_limit(b) != 0 && tc->ntrim < TP_TRIM_BINS) {
      tc->trim[tc->ntrim].b = b;
      tc->trim[tc->ntrim++].g = (uint16_t)g;
    }
    for (unsigned i = _tp_fast_lo[c]; i < _tp_fast_end[c]; i++) tg->fast[i] = b;
  }
  return b;
}

int _tp_tbin_grow(tp_tcache_t *tc, tp_tbin_t *b) {
  unsigned c = b->cls, cap = b->cap, grow = _tp_classes[c].tcache_grow;
  if (!real_bin(b) || cap >= grow || _tp_tbin_limit(b) != cap || tc->dead) return 0;
  /* Popped from since the first overflow (frees and mallocs in turn), never refilled or not
   * popped from since (frees of blocks other threads or sites allocated): no batch. */
  if (b->nalloc != b->flush_mark || b->nalloc <= b->fill_mark) return 0;
  if (cap <= _tp_classes[c].tcache_limit) { /* its first growth */
    if (tc->grown_bins >= TP_GROWN_BINS) return 0;
    tc->grown_bins++;
  }
  unsigned ncap = 2 * cap < grow ? 2 * cap : grow, count = _tp_tbin_count(b);
  tp_entry_t *e = _tp_meta_alloc((ncap + 1) * sizeof *e); /* e[-1]: NULL, like b->below */
  if (e == NULL) return 0;
  (e++)->p = NULL;
  memcpy(e, b->lo, count * sizeof *e);
  tp_entry_t *old = b->lo;
  /* Stats may read the bin from another thread meanwhile: bin_count_racy reads a top and lo of
   * different arrays as 0. */
  __atomic_store_n(&b->lo, e, __ATOMIC_RELEASE);
  b->low = e;
  b->cap = ncap;
  b->end = e + ncap;
  __atomic_store_n(&b->top, e + count, __ATOMIC_RELEASE);
  if (old != b->e) _tp_meta_free(old - 1, (cap + 1) * sizeof *old);
  return 1;
}

/* Returns the oldest entries to the slabs, keeping `keep`. */
void _tp_tbin_flush(tp_tcache_t *tc, unsigned g, unsigned c, tp_tbin_t *b, unsigned keep) {
  unsigned count = _tp_tbin_count(b);
  if (count <= keep) return;
  unsigned n = count - keep;
  tp_tgroup_t *tg = tc->groups[g];
  if (tg->gen == atomic_load(&_tp_groups[g]->gen)) {
    /* Each block leaves the bin checked (types.h and tcache.h, _tp_block_cached): its tag is there unless
     * it was freed twice and its other copy handed out or cached elsewhere, or written after its
     * free. Entries with bit 0 were never handed out and carry none. */
    for (unsigned i = 0; i < n; i++) {
      uintptr_t a = (uintptr_t)b->lo[i].p;
      if (TP_UNLIKELY(!(a & 1) && *_tp_tag_word((void *)a) != (uintptr_t)b))
        _tp_fatal("double free of %p, or a write after its free (its tag was gone when it went back to its slab)", (void *)a);
    }
    _tp_bin_flush(_tp_groups[g], c, b->lo, n);
  } else {
    _tp_stats_out(-(ptrdiff_t)n * (ptrdiff_t)_tp_classes[c].size); /* dropped with the group, whose memory is gone */
  }
  memmove(b->lo, b->lo + n, keep * sizeof(tp_entry_t));
  b->top = b->lo + keep;
  if (b->low > b->top) b->low = b->top;
  b->out -= n;
}

/* Trims of the kilobyte bins (jemalloc's tcache GC): a bin of blocks over 1 KiB keeps up to
 * 256 KiB (sizeclass.c), which a batch freed and allocated again cycles through; but a thread
 * that frees and allocates many such classes at random leaves each bin half full on average,
 * nearly as much memory in its caches as it has live. Every TP_TRIM_EVERY
 * misses of its kilobyte bins, a thread trims the next one in turn: of the blocks that stayed
 * below the bin's lowest top since its last trim (its low mark, `low`: none after a refill, the
 * bin ran empty), three quarters go back to the slabs, the oldest first; then the mark starts
 * again at the top. A bin whose blocks all cycle is never trimmed; one left alone empties in a
 * few turns. The malloc hit pops while top is above `low`, so the mark costs it nothing; a pop
 * below it misses once, to move it. */
static void trim_bin(tp_tcache_t *tc, unsigned g, tp_tbin_t *b) {
  /* A bin stays its tgroup's for good; a destroyed group's entries are dropped by tgroup_get. */
  if (tc->groups[g]->gen != atomic_load_explicit(&_tp_groups[g]->gen, memory_order_relaxed)) return;
  tp_entry_t *mark = b->low < b->top ? b->low : b->top;
  unsigned below = (unsigned)(mark - b->lo);
  if (below) _tp_tbin_flush(tc, g, b->cls, b, _tp_tbin_count(b) - (below - below / 4));
  b->low = b->top;
}

void _tp_tcache_trim_tick(tp_tcache_t *tc) {
  if (++tc->trim_tick < TP_TRIM_EVERY || tc->dead || tc->ntrim == 0) return;
  tc->trim_tick = 0;
  if (tc->trim_next >= tc->ntrim) tc->trim_next = 0;
  unsigned i = tc->trim_next++;
  trim_bin(tc, tc->trim[i].g, tc->trim[i].b);
}

void _tp_tbin_remote(tp_tcache_t *tc, unsigned g, unsigned c, tp_entry_t e) {
  tp_tgroup_t *tg = tgroup_get(tc, g);
  tp_tbin_t *r = tg == &empty_tgroup ? NULL : tg->remote[c];
  unsigned cap = _tp_classes[c].tcache_cap;
  if (r == NULL && tg != &empty_tgroup && cap && (r = bin_new(c, cap, cap)) != NULL) tg->remote[c] = r;
  if (r == NULL) {
    _tp_bin_flush(_tp_groups[g], c, &e, 1);
    return;
  }
  _tp_tbin_push(r, e);
  if (r->top == r->end) {
    _tp_tbin_flush(tc, g, c, r, 0);
    if (r->flushes < UINT32_MAX) r->flushes++;
  }
}

void _tp_tcache_flush_all(tp_tcache_t *tc) {
  for (unsigned g = 0; g < TP_MAX_GROUPS; g++) {
    tp_tgroup_t *tg = tc->groups[g];
    if (tg == &empty_tgroup) continue;
    for (unsigned c = 0; c < TP_NCLASSES; c++) {
      if (real_bin(tg->bins[c])) _tp_tbin_flush(tc, g, c, tg->bins[c], 0);
      if (tg->remote[c]) {
        _tp_tbin_flush(tc, g, c, tg->remote[c], 0);
        tg->remote[c]->flushes = 0; /* the record's next thread starts sending back again */
      }
    }
  }
}

/* A bin's count read from another thread, which may be growing it (_tp_tbin_grow): a top and
 * lo of different arrays read as 0. */
static unsigned bin_count_racy(const tp_tbin_t *b) {
  tp_entry_t *lo = __atomic_load_n((tp_entry_t *const *)&b->lo, __ATOMIC_ACQUIRE);
  tp_entry_t *top = __atomic_load_n((tp_entry_t *const *)&b->top, __ATOMIC_ACQUIRE);
  uintptr_t n = ((uintptr_t)top - (uintptr_t)lo) / sizeof *lo;
  return top >= lo && n <= __atomic_load_n(&b->cap, __ATOMIC_RELAXED) ? (unsigned)n : 0;
}

/* Adds a cache's counters (its own and its bins') to the sums; `take` zeroes the bins' (a
 * record going back to the free list keeps its bins for the next thread). */
static void add_counters(tp_tcache_t *tc, size_t *m, size_t *f, size_t *b, ptrdiff_t *l, int take) {
  *m += tc->nmalloc;
  *f += tc->nfree;
  *b += tc->bytes_alloc;
  *l += tc->live_bytes;
  if (tc->dead) return;
  for (unsigned g = 0; g < TP_MAX_GROUPS; g++) {
    tp_tgroup_t *tg = tc->groups[g];
    if (tg == &empty_tgroup) continue;
    for (unsigned c = 0; c < TP_NCLASSES; c++) {
      tp_tbin_t *bin = tg->bins[c];
      if (!real_bin(bin)) continue;
      size_t sz = _tp_classes[c].size;
      int64_t live = bin->out - (int64_t)bin_count_racy(bin);
      *m += bin->nalloc;
      *f += (size_t)((int64_t)bin->nalloc - live);
      *b += bin->nalloc * sz;
      *l += (ptrdiff_t)live * (ptrdiff_t)sz;
      if (take) {
        bin->nalloc = 0;
        bin->out = _tp_tbin_count(bin);
      }
    }
  }
}

static void tcache_exit(void *arg) {
  tp_tcache_t *tc = arg;
  if (tc == NULL || tc->dead) return;
  _tp_tcache_flush_all(tc);
  _tp_stats_out_flush();
  if (tc->owns_thread_group) _tp_thread_group_release(tc->thread_group);
  _tp_tc = &exited_cache;
  _tp_run_side = 0;
  _tp_lock(&tc_lock);
  add_counters(tc, &dead_nmalloc, &dead_nfree, &dead_bytes, &dead_live_bytes, 1);
  TP_LIST_UNLINK(&all_list, tc, next_all, prev_all);
  /* The tgroup and bin records stay with the cache record for its next thread. */
  reset_record(tc);
  tc->exited = 1; /* its slabs are anyone's (slab.c, pick_partial) until a new thread takes it */
  tc->next_all = free_list;
  free_list = tc;
  _tp_unlock(&tc_lock);
}

void _tp_tcache_count_dropped(size_t objects, size_t bytes) {
  _tp_lock(&tc_lock);
  dead_nfree += objects;
  dead_live_bytes -= (ptrdiff_t)bytes;
  _tp_unlock(&tc_lock);
  _tp_stats_out(-(ptrdiff_t)bytes);
}

void _tp_tcache_sum(size_t *nm, size_t *nf, size_t *ba, ptrdiff_t *lb) {
  _tp_lock(&tc_lock);
  size_t m = dead_nmalloc, f = dead_nfree, b = dead_bytes;
  ptrdiff_t l = dead_live_bytes;
  for (tp_tcache_t *tc = all_list; tc; tc = tc->next_all) add_counters(tc, &m, &f, &b, &l, 0);
  add_counters(&exited_cache, &m, &f, &b, &l, 0);
  add_counters(&_tp_tcache_empty, &m, &f, &b, &l, 0);
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
    add_counters(tc, &dead_nmalloc, &dead_nfree, &dead_bytes, &dead_live_bytes, 1);
    tc->exited = 1; /* its slabs are the child's to fill from (pick_partial, the free hit) */
  }
  all_list = NULL;
  if (!me->dead) link_all(me);
}

int _tp_block_cached(uintptr_t a) {
  uintptr_t w = __atomic_load_n(_tp_tag_word((const void *)a), __ATOMIC_RELAXED);
  if (w == 0 || (w & 7) || !_tp_meta_holds(w, sizeof(tp_tbin_t))) return 0;
  return __atomic_load_n(&((const tp_tbin_t *)w)->check, __ATOMIC_RELAXED) == (w ^ _tp_free_key);
}

/* ---- refills --------------------------------------------------------------------------- */
unsigned _tp_tcache_refill(tp_tcache_t *tc, tp_tbin_t *b, unsigned g, unsigned c) {
  unsigned cap = _tp_classes[c].tcache_cap, want = _tp_refill_want(c);
  /* The group's last refill, to within 8 refills: threads refilling from one group do not
   * write its line at every refill. */
  uint64_t now;
  if (++tc->refills >= TP_CLOCK_BATCH) {
    now = atomic_fetch_add_explicit(&_tp_refill_clock, tc->refills, memory_order_relaxed) + tc->refills;
    tc->refills = 0;
    _tp_bin_sweep(tc); /* a group's empty slabs kept for classes no longer in use */
    _tp_heap_after_fork(); /* hpages a fork's copy-on-write split, collapsed again (fork.c) */
  } else {
    now = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed);
  }
  tp_tgroup_t *tg = tc->groups[g];
  if (now - tg->refill_mark >= 8) {
    atomic_store_explicit(&_tp_groups[g]->last_refill, now, memory_order_relaxed);
    tg->refill_mark = now;
  }
  /* Whole bitmap words (up to the cap) for the small classes, whose live bytes would
   * otherwise share lines across threads; just what is wanted for the larger ones; a
   * bin's first blocks a few at a time (policy.c). */
  int slow = _tp_policy_slow_start(b->nalloc, _tp_classes[c].size, &want);
  unsigned n = _tp_bin_fill(_tp_tc, _tp_groups[g], c, b->lo, want, cap >= 64 ? cap : want, slow, b);
  if (n == 0) return 0; /* the batch comes highest address first: popped in order */
  b->top = b->lo + n;
  b->low = b->lo; /* it ran empty: nothing to trim */
  b->out += n;
  b->fill_mark = b->nalloc;
  return n;
}

unsigned _tp_tcache_take_one(unsigned g, unsigned c, tp_entry_t *out) {
  /* no bin: the block is tagged with the empty one's address */
  return _tp_bin_fill(_tp_tc, _tp_groups[g], c, out, 1, 1, 0, &_tp_tbin_empty);
}
