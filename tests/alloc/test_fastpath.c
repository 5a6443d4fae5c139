/* The fast path's sentinels, slow start and grown bins, through libtlbpack.a (start small:
 * test_start_small.c). A thread starts on the static empty cache, whose site slots and bins
 * hold nothing: its first malloc, the first use of a group or a size class, and an empty bin all
 * take the one miss, and the static records are never written. Each Criterion test runs in a
 * fresh process. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "expect_abort.h"
#include "internal.h"
#include "modes.h"
#include "tlbpack.h"

static void call_free_block(void *p) { tp_free(p); }

static int static_records_untouched(void) {
  if (_tp_tbin_empty.top != _tp_tbin_empty.e || _tp_tbin_empty.end != _tp_tbin_empty.e) return 0;
  if (_tp_tbin_empty.nalloc != 0 || _tp_tbin_empty.out != 0) return 0;
  return _tp_tcache_empty.nmalloc == 0 && _tp_tcache_empty.nfree == 0 && _tp_tcache_empty.map_base == TP_NO_GIB &&
         _tp_tcache_empty.map_slabs == _tp_no_slabs;
}

typedef struct { int empty_before, real_after, owned; } first_t;

static void *first_malloc(void *arg) {
  (void)arg;
  static first_t r;
  r.empty_before = _tp_tc == &_tp_tcache_empty;
  void *p = tp_malloc(40);
  r.real_after = _tp_tc != &_tp_tcache_empty && !_tp_tc->dead;
  r.owned = tp_owns(p);
  tp_free(p);
  return &r;
}

Test(sentinel, a_threads_first_malloc_starts_from_the_static_empty_cache) {
  pthread_t t;
  void *out;
  pthread_create(&t, NULL, first_malloc, NULL);
  pthread_join(t, &out);
  const first_t *r = out;
  cr_assert(r->empty_before, "a new thread does not start on the static empty cache");
  cr_assert(r->real_after, "the first malloc did not give the thread a cache of its own");
  cr_assert(r->owned, "the first malloc's block is not tlbpack's");
  cr_assert(static_records_untouched(), "the static empty cache or bin was written");
}

Test(sentinel, the_first_block_of_a_class_creates_its_bin_for_every_size_of_the_class) {
  void *warm = tp_malloc(16); /* the thread's cache exists */
  tp_tcache_t *tc = _tp_tc;
  unsigned c = _tp_class_of(200); /* 193-224 share one class */
  tp_site_slot_t *st = NULL;
  void *p = tp_malloc(200);
  cr_assert(tp_owns(p));
  for (unsigned i = 0; i < TP_SITE_CACHE; i++)
    if (tc->site[i].bins[(200 + 15) >> 4] != &_tp_tbin_empty) st = &tc->site[i];
  cr_assert_not_null(st, "no site slot has a bin for 200-byte blocks after malloc(200)");
  tp_tbin_t *b = st->bins[(200 + 15) >> 4];
  cr_assert_eq(b->cls, c);
  for (size_t n = 193; n <= 224; n++)
    cr_assert_eq(st->bins[(n + 15) >> 4], b, "size %zu of the same class has another bin", n);
  cr_assert_eq(st->bins[(240 + 15) >> 4], &_tp_tbin_empty, "a class never used has a bin");
  cr_assert_eq(b->nalloc, 1, "the miss filled the bin and popped the block from it");
  tp_free(p);
  cr_assert_gt(_tp_tbin_count(b), 0, "the free did not cache the block in the bin");
  tp_free(warm);
  cr_assert(static_records_untouched());
}

/* A kilobyte bin's first refills hold TP_SLOW_START_BYTES at most: a buffer grown through the
 * classes (realloc) takes one block of each, and a bin that cached a batch of 8 for it held
 * 8 x 5 KiB. */
Test(slow_start, a_new_kilobyte_bin_caches_a_few_kilobytes) {
  tp_group_t *grp = tp_group_create("slow-start-kb");
  cr_assert_not_null(grp);
  void *p = tp_group_malloc(grp, 5000), *q = tp_group_malloc(grp, 2000);
  cr_assert_not_null(p);
  cr_assert_not_null(q);
  tp_tbin_t *b = _tp_tc->groups[grp->id]->bins[_tp_class_of(5000)];
  tp_tbin_t *b2 = _tp_tc->groups[grp->id]->bins[_tp_class_of(2000)];
  cr_assert_neq(b, &_tp_tbin_empty, "the group's bin for 5000 B was not created");
  size_t s = _tp_classes[_tp_class_of(5000)].size, s2 = _tp_classes[_tp_class_of(2000)].size;
  cr_assert_leq((_tp_tbin_count(b) + 1) * s, TP_SLOW_START_BYTES > s ? TP_SLOW_START_BYTES : s,
                "first refill of %zu B blocks: %u more in the bin", s, _tp_tbin_count(b));
  cr_assert_leq((_tp_tbin_count(b2) + 1) * s2, TP_SLOW_START_BYTES, "first refill of %zu B blocks: %u more in the bin",
                s2, _tp_tbin_count(b2));
  tp_free(p);
  tp_free(q);
  tp_group_destroy(grp);
}

/* A bin's first refills take no more blocks than it has popped, up to TP_SLOW_START_BATCH (a
 * thread that allocates a few blocks of many classes holds a few of each, not 64); past
 * TP_SLOW_START_POPS pops, refills are the class's whole batches again. */
Test(slow_start, a_new_bin_caches_a_few_blocks_and_full_batches_after_its_first_pops) {
  tp_group_t *grp = tp_group_create("slow-start");
  cr_assert_not_null(grp);
  enum { N = 200 };
  void *p[N];
  p[0] = tp_group_malloc(grp, 200);
  tp_tbin_t *b = _tp_tc->groups[grp->id]->bins[_tp_class_of(200)];
  cr_assert_neq(b, &_tp_tbin_empty, "the group's bin for 200 B was not created");
  cr_assert_eq(_tp_tbin_count(b), 0, "first refill: %u blocks left in the bin (one wanted)", _tp_tbin_count(b));
  unsigned most = 0;
  for (int i = 1; i < N; i++) {
    p[i] = tp_group_malloc(grp, 200);
    cr_assert_not_null(p[i]);
    if (b->nalloc <= TP_SLOW_START_POPS) /* never more cached than popped */
      cr_assert_leq(_tp_tbin_count(b), b->nalloc < TP_SLOW_START_BATCH ? b->nalloc : TP_SLOW_START_BATCH,
                    "pop %lu: %u in the bin", (unsigned long)b->nalloc, _tp_tbin_count(b));
    if (_tp_tbin_count(b) > most) most = _tp_tbin_count(b);
  }
  cr_assert_gt(most, TP_SLOW_START_BATCH, "no refill past the slow start took a full batch");
  for (int i = 0; i < N; i++) tp_free(p[i]);
  tp_group_destroy(grp);
}

Test(sentinel, every_size_up_to_64_kib_has_the_fast_entry_of_its_class) {
  for (size_t n = 1; n <= TP_FAST_BIG; n++) {
    unsigned i = _tp_fast_index(n);
    cr_assert_lt(i, TP_FAST_N, "size %zu: fast entry %u past the table", n, i);
    cr_assert_eq(_tp_fast_class[i], _tp_class_of(n), "size %zu: fast entry %u is class %u, not %u", n, i,
                 _tp_fast_class[i], _tp_class_of(n));
  }
  cr_assert_eq(_tp_fast_class[TP_FAST_N - 1], _tp_class_of(TP_FAST_BIG), "the table ends before 64 KiB");
  /* each class's run of entries, which the misses set without scanning the table */
  for (unsigned c = 0; c < TP_NCLASSES; c++)
    for (unsigned i = 0; i < TP_FAST_N; i++)
      cr_assert_eq(_tp_fast_class[i] == c, i >= _tp_fast_lo[c] && i < _tp_fast_end[c],
                   "class %u: entry %u is%s in its run [%u, %u)", c, i, _tp_fast_class[i] == c ? " not" : "",
                   _tp_fast_lo[c], _tp_fast_end[c]);
}

Test(sentinel, a_kilobyte_class_hits_like_a_small_one_after_its_first_block) {
  void *warm = tp_malloc(16);
  tp_tcache_t *tc = _tp_tc;
  unsigned c = _tp_class_of(5000); /* 4609-5120 */
  void *p = tp_malloc(5000);
  cr_assert(tp_owns(p));
  tp_site_slot_t *st = NULL;
  for (unsigned i = 0; i < TP_SITE_CACHE; i++)
    if (tc->site[i].bins[_tp_fast_index(5000)] != &_tp_tbin_empty) st = &tc->site[i];
  cr_assert_not_null(st, "no site slot has a bin for 5000-byte blocks after malloc(5000)");
  tp_tbin_t *b = st->bins[_tp_fast_index(5000)];
  cr_assert_eq(b->cls, c);
  for (size_t n = 4609; n <= 5120; n++) cr_assert_eq(st->bins[_tp_fast_index(n)], b, "size %zu has another bin", n);
  cr_assert_eq(st->bins[_tp_fast_index(5121)], &_tp_tbin_empty, "a class never used has a bin");
  cr_assert_eq(st->bins[_tp_fast_index(4608)], &_tp_tbin_empty, "the 4608-byte class has the 5120-byte bin");
  /* The next block of the class comes off the same bin; calloc takes the same hit and zeroes.
   * (A kilobyte bin's first refills bring a block or two: two freed blocks stock it.) */
  void *f1 = tp_malloc(5000), *f2 = tp_malloc(5000);
  tp_free(f1);
  tp_free(f2);
  unsigned count = _tp_tbin_count(b);
  cr_assert_gt(count, 1, "the freed blocks are not in the bin");
  uintptr_t ra = st->ra;
  void *q = tp_malloc(4700);
  cr_assert_eq(_tp_tbin_count(b), count - 1, "malloc(4700) did not pop the 5120-byte bin");
  cr_assert_eq(st->ra, ra);
  tp_free(q);
  cr_assert_eq(_tp_tbin_count(b), count, "free did not push the block back on the bin");
  memset(q = tp_malloc(5000), 0xab, 5000); /* dirty a block, give it back, take it with calloc */
  tp_free(q);
  unsigned char *z = tp_calloc(1, 5000);
  cr_assert_not_null(z);
  for (size_t i = 0; i < 5000; i++) cr_assert_eq(z[i], 0, "calloc's byte %zu is not zero", i);
  tp_free(z);
  tp_free(p);
  tp_free(warm);
  cr_assert(static_records_untouched());
}

/* One call site for the hit tests below (noipa and the asm: see test_placement.c). */
static __attribute__((noipa)) void *site_hit(size_t n) {
  void *p = tp_malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

/* The hit hands out the block under the top of the bin, and the top only when it is the last:
 * the block freed last (whose line a thread freeing another thread's block has just asked for)
 * is handed out one pop later, not at once. A free of the top block is still a double free. */
Test(sentinel, the_hit_hands_out_the_block_under_the_top_and_the_last_block_last) {
  void *warm = site_hit(48);
  tp_tcache_t *tc = _tp_tc;
  tp_site_slot_t *st = NULL;
  for (unsigned i = 0; i < TP_SITE_CACHE; i++)
    if (tc->site[i].bins[(48 + 15) >> 4] != &_tp_tbin_empty) st = &tc->site[i];
  cr_assert_not_null(st, "no site slot has a bin for 48-byte blocks");
  tp_tbin_t *b = st->bins[(48 + 15) >> 4];
  void *a = site_hit(48), *c = site_hit(48);
  tp_free(a);
  tp_free(c); /* the bin's top: c, a under it */
  void *x = site_hit(48);
  cr_assert_eq(x, a, "the hit handed out %p, not %p under the top (%p)", x, a, c);
  cr_assert_eq(b->top[-1].p, c, "the top block moved");
  void *y = site_hit(48);
  cr_assert_neq(y, c, "the top block was handed out while the bin held %u more", _tp_tbin_count(b));
  tp_free(y); /* the top now, c under it */
  void *z = site_hit(48);
  cr_assert_eq(z, c, "after a free, the hit handed out %p, not the block under the top (%p)", z, c);
  cr_assert_eq(b->top[-1].p, y);
  expect_abort(call_free_block, y, "tlbpack: double free of %p", y);
  /* Down to one block: the hit hands it out, then the bin is empty. */
  while (_tp_tbin_count(b) > 1) (void)site_hit(48);
  void *last = b->top[-1].p;
  cr_assert_eq(site_hit(48), last, "the bin's last block was not handed out");
  cr_assert_eq(_tp_tbin_count(b), 0);
  tp_free(x);
  tp_free(z);
  tp_free(warm);
}

/* noipa and the asm: two distinct call sites (see test_placement.c). */
static __attribute__((noipa)) void *site_x(size_t n) {
  void *p = tp_malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

Test(sentinel, a_new_group_gets_its_bins_on_first_use_and_the_hit_needs_no_miss_after) {
  TP_NEEDS_GROUPS_APART();
  /* Grow site X until it has a group of its own: its slot then points at that group's bins. */
  enum { N = 6000 };
  static void *keep[N];
  for (int i = 0; i < N; i++) keep[i] = site_x(64);
  unsigned g = _tp_hpage_of(keep[N - 1])->slot_slab[((uintptr_t)keep[N - 1] >> TP_SLOT_SHIFT) & 31]->group;
  cr_assert_neq(g, TP_SHARED_GROUP, "site X never got a group of its own");
  tp_tcache_t *tc = _tp_tc;
  cr_assert_neq(tc->groups[g]->bins[_tp_class_of(64)], &_tp_tbin_empty);
  /* Hits: malloc pops and free pushes the same bin, counted only there. */
  tp_tbin_t *b = tc->groups[g]->bins[_tp_class_of(64)];
  uint64_t before = b->nalloc;
  unsigned count = _tp_tbin_count(b);
  if (count == 0) { /* make sure the next call hits */
    tp_free(keep[N - 1]);
    keep[N - 1] = NULL;
    count = _tp_tbin_count(b);
  }
  void *p = site_x(64);
  cr_assert_eq(b->nalloc, before + 1, "the hit did not pop group %u's bin", g);
  cr_assert_eq(_tp_tbin_count(b), count - 1);
  tp_free(p);
  cr_assert_eq(_tp_tbin_count(b), count);
  for (int i = 0; i < N; i++) tp_free(keep[i]);
}

static void *others;
static void *free_anothers_block(void *arg) {
  (void)arg;
  tp_free(others); /* this thread never allocated: its cache starts on the free miss */
  static int r;
  r = _tp_tc != &_tp_tcache_empty;
  return &r;
}

Test(sentinel, a_threads_first_call_may_be_a_free) {
  others = tp_malloc(100);
  pthread_t t;
  void *out;
  pthread_create(&t, NULL, free_anothers_block, NULL);
  pthread_join(t, &out);
  cr_assert(*(int *)out, "a free as a thread's first call gave it no cache");
  cr_assert_eq(tp_malloc_usable_size(others), 0, "the block is still live after its free");
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_eq(st.live_objects, 0, "%zu objects live after every block was freed", st.live_objects);
  cr_assert(static_records_untouched());
}

/* The free hit finds its bin in the thread's bin table (tp_tcache_t.bin_off) by the slab's
 * bin_idx: an entry is 0, the record's own empty bin, until the thread creates that bin, so a
 * free into a bin not created yet takes the miss, which creates it and fills the entry; the
 * next free of that class and group is a hit into the same bin. */
static void *handed[2];
typedef struct { int empty_before, names_bin, pushed, hit, static_zero; } table_t;
static void *free_through_the_table(void *arg) {
  (void)arg;
  static table_t r;
  void *own = tp_malloc(24); /* this thread's record, for another class */
  tp_tcache_t *tc = _tp_tc;
  tp_slab_t *s = _tp_slab_of(handed[0]);
  r.empty_before = tc->bin_off[s->bin_idx] == 0;
  tp_free(handed[0]);
  tp_tbin_t *b = tc->groups[s->group]->bins[s->cls];
  r.names_bin = b != &_tp_tbin_empty && tc->bin_off[s->bin_idx] != 0 &&
                (tp_tbin_t *)((uintptr_t)tc + (uintptr_t)tc->bin_off[s->bin_idx]) == b;
  r.pushed = _tp_tbin_count(b) == 1 && b->top[-1].p == handed[0];
  tp_free(handed[1]); /* the hit: the same bin */
  r.hit = _tp_tbin_count(b) == 2 && b->top[-1].p == handed[1];
  r.static_zero = _tp_tcache_empty.bin_off[s->bin_idx] == 0;
  tp_free(own);
  return &r;
}

Test(sentinel, a_free_finds_its_bin_in_the_threads_table_once_the_miss_created_it) {
  TP_NEEDS_NO_THREAD_GROUPS(); /* there, another thread's blocks are never cached here */
  handed[0] = tp_malloc(100), handed[1] = tp_malloc(100);
  tp_slab_t *s = _tp_slab_of(handed[0]);
  cr_assert_eq(s, _tp_slab_of(handed[1]));
  cr_assert_eq(s->bin_idx, (uint32_t)s->group * TP_NCLASSES + s->cls, "the slab's bin_idx is not its group and class");
  tp_tcache_t *tc = _tp_tc;
  cr_assert_eq((tp_tbin_t *)((uintptr_t)tc + (uintptr_t)tc->bin_off[s->bin_idx]), tc->groups[s->group]->bins[s->cls],
               "the allocating thread's table does not name its bin");
  cr_assert(_tp_meta_mapped((uintptr_t)tc->bin_off, TP_BIN_TABLE * sizeof(intptr_t)), "the table is not counted as metadata");
  cr_assert(!_tp_meta_holds((uintptr_t)tc->bin_off, sizeof(tp_tbin_t)), "a tag pointing into the table would read as a bin's");
  cr_assert_eq(_tp_tcache_empty.empty.top, _tp_tcache_empty.empty.end);
  cr_assert_null(_tp_tcache_empty.empty.top[-1].p);
  pthread_t t;
  void *out;
  pthread_create(&t, NULL, free_through_the_table, NULL);
  pthread_join(t, &out);
  table_t *r = out;
  cr_assert(r->empty_before, "a new thread's table named a bin it never created");
  cr_assert(r->names_bin, "the miss created the bin but the table does not name it");
  cr_assert(r->pushed, "the first free did not cache the block in the thread's bin");
  cr_assert(r->hit, "the second free did not go to the bin the table names");
  cr_assert(r->static_zero, "the static record's table was written");
  cr_assert(static_records_untouched());
}

/* The free hit's map cache (tc->map_base / map_slabs): a free in another GiB than the thread's
 * last one walks the map and moves the cache there; frees keep being checked either way. */
Test(sentinel, a_free_in_another_gib_moves_the_threads_map_cache) {
  void *p = tp_malloc(48), *q = tp_malloc(48);
  tp_free(p);
  uintptr_t gib = (uintptr_t)q >> TP_GIB_SHIFT, base = gib << TP_GIB_SHIFT;
  cr_assert_eq(_tp_tc->map_base, base, "the thread's first free did not fill its map cache");
  cr_assert_eq(_tp_tc->map_slabs, _tp_map[gib]->slab);
  _tp_tc->map_base = base + ((uintptr_t)1 << TP_GIB_SHIFT); /* as if the last free had been a GiB further */
  _tp_tc->map_slabs = _tp_no_slabs;
  tp_free(q);
  cr_assert_eq(_tp_tc->map_base, base, "a free in another GiB left the cache where it was");
  cr_assert_eq(_tp_tc->map_slabs, _tp_map[gib]->slab);
  cr_assert_eq(tp_malloc_usable_size(q), 0, "the block is still live after its free");
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_eq(st.live_objects, 0, "%zu objects live after every block was freed", st.live_objects);
  /* Not tlbpack's, or past the user address space: the miss, then free_unknown, cache kept. */
  tp_free(NULL);
  cr_assert_eq(_tp_tc->map_base, base, "free(NULL) moved the cache");
  cr_assert(static_records_untouched());
}

/* The static records' map cache matches the non-canonical GiB at 2^63 and finds no slab
 * there: a free of such a pointer by a thread that never freed before is reported, not
 * followed into a block. */
static void *free_first(void *p) {
  if (_tp_tc != &_tp_tcache_empty) return NULL; /* not the static record: no abort, test fails */
  tp_free(p);
  return NULL;
}
static void call_free_in_new_thread(void *p) {
  pthread_t t;
  pthread_create(&t, NULL, free_first, p);
  pthread_join(t, NULL);
}
Test(sentinel, a_free_in_the_empty_caches_gib_is_reported) {
  void *bad = (void *)(TP_NO_GIB + 0x10000);
  expect_abort(call_free_in_new_thread, bad, "tlbpack: invalid free of %p", bad);
}

Test(sentinel, free_null_takes_the_miss_and_does_nothing) {
  tp_free(NULL);
  void *p = tp_malloc(10);
  tp_free(NULL);
  tp_free(p);
  cr_assert(static_records_untouched());
}

Test(sentinel, a_batch_of_kilobyte_blocks_freed_and_allocated_again_cycles_through_the_cache) {
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    const tp_class_t *k = &_tp_classes[c];
    cr_assert_geq(k->tcache_limit, k->tcache_cap, "class %u: the bin holds less than a refill's cap", k->size);
    cr_assert_leq(k->tcache_limit, 64);
    if (k->size > 1024 && k->tcache_limit > k->tcache_cap)
      cr_assert_leq((size_t)k->tcache_limit * k->size, (size_t)256 << 10, "class %u holds over 256 KiB", k->size);
  }
  enum { N = 48 };
  void *a[N], *b[N];
  for (int i = 0; i < N; i++) a[i] = tp_malloc(4096);
  tp_slab_t *s = _tp_slab_of(a[0]);
  tp_tbin_t *bin = _tp_tc->groups[s->group]->bins[s->cls];
  unsigned before = _tp_tbin_count(bin);
  for (int i = 0; i < N; i++) tp_free(a[i]);
  cr_assert_eq(_tp_tbin_count(bin), before + N, "the bin sent freed blocks back to the slabs (holds %u of %u)",
               _tp_tbin_count(bin) - before, N);
  for (int i = 0; i < N; i++) b[i] = tp_malloc(4096);
  cr_assert_eq(_tp_tbin_count(bin), before, "the blocks did not come off the bin");
  int same = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) same += b[i] == a[j];
  cr_assert_eq(same, N, "only %d of %d blocks came back from the thread's cache", same, N);
  for (int i = 0; i < N; i++) tp_free(b[i]);
}

/* realloc takes the malloc hit on the block's group bins, but never from a group destroyed since
 * the thread cached its blocks (the id may be a new group's by then). */
static tp_group_t *recreated;
static void *recreated_blocks[40];
static void *alloc_in_recreated(void *arg) {
  (void)arg;
  for (int k = 0; k < 40; k++) recreated_blocks[k] = tp_group_malloc(recreated, 40);
  return NULL;
}
Test(sentinel, realloc_into_a_recreated_group_never_returns_a_destroyed_groups_block) {
  enum { N = 40 };
  tp_group_t *g = tp_group_create("old");
  unsigned id = g->id;
  void *old[N];
  for (int i = 0; i < N; i++) old[i] = tp_group_malloc(g, 100);
  for (int i = 0; i < N; i++) tp_free(old[i]); /* cached in this thread's bin of g */
  tp_group_destroy(g);
  tp_group_t *g2 = tp_group_create("new");
  cr_assert_eq(g2->id, id, "the new group did not take the destroyed one's id");
  /* Blocks of the new group from another thread: this thread has not used it, so only the
   * realloc looks at its stale bins. */
  recreated = g2;
  pthread_t t;
  pthread_create(&t, NULL, alloc_in_recreated, NULL);
  pthread_join(t, NULL);
  for (int k = 0; k < N; k++) {
    void *q = tp_realloc(recreated_blocks[k], 100);
    cr_assert_not_null(q);
    for (int i = 0; i < N; i++) cr_assert_neq(q, old[i], "realloc handed out a block of the destroyed group");
    cr_assert(tp_owns(q));
  }
  tp_group_destroy(g2);
}

Test(sentinel, realloc_into_a_cached_class_pops_the_groups_bin) {
  void *warm = tp_malloc(100), *p = tp_malloc(40);
  tp_slab_t *s = _tp_slab_of(warm);
  tp_tbin_t *b = _tp_tc->groups[s->group]->bins[s->cls];
  void *f = tp_malloc(100); /* a new bin's first refill brings one block: a free stocks it */
  tp_free(f);
  unsigned before = _tp_tbin_count(b);
  cr_assert_gt(before, 0, "the 112-byte bin is empty after a malloc(100) and a free");
  uint64_t pops = b->nalloc;
  void *q = tp_realloc(p, 100);
  cr_assert_eq(b->nalloc, pops + 1, "realloc did not take a block off the bin");
  cr_assert_eq(_tp_tbin_count(b), before - 1);
  tp_free(q);
  tp_free(warm);
}

/* The kilobyte bins that keep up to 256 KiB are bounded per thread: after TP_BIG_BINS of them
 * (groups x classes), a new one keeps its class's tcache_cap only. */
Test(sentinel, a_thread_has_at_most_TP_BIG_BINS_large_kilobyte_bins) {
  TP_NEEDS_NO_THREAD_GROUPS();
  unsigned big = 0, small = 0;
  for (int k = 0; k < 3 * TP_BIG_BINS; k++) {
    tp_group_t *g = tp_group_create("k");
    void *p = tp_group_malloc(g, 4096);
    tp_slab_t *s = _tp_slab_of(p);
    tp_tbin_t *b = _tp_tc->groups[s->group]->bins[s->cls];
    if (b->cap > _tp_classes[s->cls].tcache_cap) big++;
    else small++;
    tp_free(p);
  }
  cr_assert_eq(big, TP_BIG_BINS, "%u bins of 4 KiB blocks keep more than tcache_cap", big);
  cr_assert_eq(small, 2 * TP_BIG_BINS);
}

/* A bin that keeps overflowing in a batch of frees grows (doubling) instead of sending half its
 * blocks back, up to its class's tcache_grow: after the first batch (one overflow sends half
 * back, the next grows the bin), a batch of hundreds of blocks allocated and freed again cycles
 * through the thread's cache. */
Test(grow, a_batch_freed_and_allocated_again_cycles_through_a_grown_bin) {
  enum { N = 400 };
  static void *a[N], *b[N];
  for (int i = 0; i < N; i++) a[i] = tp_malloc(64);
  tp_slab_t *s = _tp_slab_of(a[0]);
  tp_tbin_t *bin = _tp_tc->groups[s->group]->bins[s->cls];
  const tp_class_t *k = &_tp_classes[s->cls];
  cr_assert_geq(k->tcache_grow, N, "class %u grows to %u only", k->size, k->tcache_grow);
  for (int i = 0; i < N; i++) tp_free(a[i]); /* the first batch */
  cr_assert_gt(bin->cap, k->tcache_limit, "the first batch of %d frees did not grow the bin", N);
  for (int i = 0; i < N; i++) a[i] = tp_malloc(64);
  unsigned before = _tp_tbin_count(bin);
  for (int i = 0; i < N; i++) tp_free(a[i]);
  cr_assert_eq(_tp_tbin_count(bin), before + N, "the bin sent freed blocks back (holds %u of %d)",
               _tp_tbin_count(bin) - before, N);
  cr_assert_leq(bin->cap, k->tcache_grow);
  cr_assert_neq(bin->lo, bin->e, "the bin holds %u blocks in the entries it was created with", bin->cap);
  cr_assert_eq(_tp_tc->grown_bins, 1);
  for (int i = 0; i < N; i++) b[i] = tp_malloc(64);
  int same = 0;
  for (int i = 0; i < N; i++) same += tp_malloc_usable_size(b[i]) == 64 && _tp_slab_of(b[i])->cls == s->cls;
  cr_assert_eq(same, N);
  cr_assert_eq(_tp_tbin_count(bin), before, "the batch did not come off the bin");
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_geq(st.live_objects, N, "stats count %zu objects live with %d allocated", st.live_objects, N);
  for (int i = 0; i < N; i++) tp_free(b[i]);
  tp_stats_get(&st);
  cr_assert_lt(st.live_objects, 16, "stats count %zu objects live after freeing all", st.live_objects);
}

/* Growth stops at tcache_grow (then the bin flushes half as before), classes over 1 KiB never
 * grow, and a thread grows at most TP_GROWN_BINS bins. */
Test(grow, bins_grow_within_bounds) {
  TP_NEEDS_NO_THREAD_GROUPS();
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    const tp_class_t *k = &_tp_classes[c];
    if (k->size > 1024) cr_assert_eq(k->tcache_grow, k->tcache_limit, "class %u grows", k->size);
    else cr_assert_leq((size_t)k->tcache_grow * k->size, (size_t)64 << 10, "class %u grows past 64 KiB", k->size);
    cr_assert_leq(k->tcache_grow, 512);
  }
  enum { N = 2000 };
  static void *a[N];
  for (int i = 0; i < N; i++) a[i] = tp_malloc(16);
  tp_slab_t *s = _tp_slab_of(a[0]);
  tp_tbin_t *bin = _tp_tc->groups[s->group]->bins[s->cls];
  for (int i = 0; i < N; i++) tp_free(a[i]);
  cr_assert_eq(bin->cap, _tp_classes[s->cls].tcache_grow, "the bin holds %u entries", bin->cap);
  cr_assert_leq(_tp_tbin_count(bin), bin->cap);
  /* Other bins (classes of three groups), one batch each, until the thread has grown all it may. */
  static void *m[600];
  unsigned grown = _tp_tc->grown_bins, bins = 0;
  for (int gi = 0; gi < 3; gi++) {
    tp_group_t *g = tp_group_create("grow");
    for (size_t size = 32; size <= 1024; size += 16) {
      unsigned c = _tp_class_of(size);
      if (_tp_classes[c].size != size || _tp_classes[c].tcache_grow <= _tp_classes[c].tcache_limit) continue;
      for (int i = 0; i < 600; i++) m[i] = tp_group_malloc(g, size);
      for (int i = 0; i < 600; i++) tp_free(m[i]);
      bins++;
    }
  }
  cr_assert_gt(bins + grown, TP_GROWN_BINS, "the test grew only %u bins", bins + grown);
  cr_assert_eq(_tp_tc->grown_bins, TP_GROWN_BINS);
}

/* A record recycled for a new thread keeps its grown bins, and counts them. */
static unsigned count_grown(void) {
  unsigned n = 0;
  for (unsigned g = 0; g < TP_MAX_GROUPS; g++)
    for (unsigned c = 0; c < TP_NCLASSES; c++) {
      tp_tbin_t *b = _tp_tc->groups[g]->bins[c];
      n += b != &_tp_tbin_empty && b->cap > _tp_classes[c].tcache_limit;
    }
  return n;
}
static void *grow_some(void *arg) {
  static void *a[300];
  size_t size = (size_t)(uintptr_t)arg;
  for (int i = 0; i < 300; i++) a[i] = tp_malloc(size);
  for (int i = 0; i < 300; i++) tp_free(a[i]);
  static unsigned r[2];
  r[0] = _tp_tc->grown_bins, r[1] = count_grown();
  return r;
}
Test(grow, a_recycled_record_counts_the_grown_bins_it_keeps) {
  for (uintptr_t size = 16; size <= 64; size += 16) {
    pthread_t t;
    void *out;
    pthread_create(&t, NULL, grow_some, (void *)size);
    pthread_join(t, &out);
    const unsigned *r = out;
    cr_assert_eq(r[0], r[1], "the record counts %u grown bins and holds %u", r[0], r[1]);
    cr_assert_geq(r[1], 1);
  }
}

/* Bins that only take frees of blocks other threads allocated, or whose frees and mallocs
 * alternate, never grow: growing them would hold blocks back from the slabs the program
 * allocates from. */
static void *given[1000];
static void *alloc_given(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) given[i] = tp_malloc(96);
  return NULL;
}
Test(grow, bins_that_only_free_or_alternate_do_not_grow) {
  pthread_t t;
  pthread_create(&t, NULL, alloc_given, NULL);
  pthread_join(t, NULL);
  for (int i = 0; i < 1000; i++) tp_free(given[i]); /* blocks of another thread's slabs */
  cr_assert_eq(_tp_tc->grown_bins, 0, "a bin of frees only grew");
  enum { N = 3000 };
  static void *a[N];
  int n = 0;
  for (int i = 0; i < 200; i++) a[n++] = tp_malloc(48);
  tp_slab_t *s = _tp_slab_of(a[0]);
  tp_tbin_t *bin = _tp_tc->groups[s->group]->bins[s->cls];
  /* Two frees and a malloc at a time: the bin overflows again and again, with pops between. */
  int lo = 0;
  for (int i = 0; i < 900 && lo + 2 <= n; i++) {
    tp_free(a[lo++]);
    tp_free(a[lo++]);
    a[n++] = tp_malloc(48);
  }
  cr_assert_eq(bin->cap, _tp_classes[s->cls].tcache_limit, "a bin whose frees and mallocs alternate grew to %u", bin->cap);
  cr_assert_eq(_tp_tc->grown_bins, 0);
  while (lo < n) tp_free(a[lo++]);
}

/* A refill takes whole bitmap words under the bin lock and writes the entries after it, from
 * the end, so the thread cache pops one slab's blocks in address order; a flush returns each
 * run of one slab's blocks at once, and then every block of the group's slabs is available. */
Test(fill, a_groups_blocks_come_out_in_address_order_and_all_go_back_on_flush) {
  tp_group_t *g = tp_group_create("order");
  enum { N = 500 };
  static char *p[N];
  for (int i = 0; i < N; i++) p[i] = tp_group_malloc(g, 48);
  int same = 0;
  for (int i = 0; i + 1 < N; i++) {
    if (_tp_slab_of(p[i]) != _tp_slab_of(p[i + 1])) continue;
    same++;
    cr_assert_eq(p[i + 1], p[i] + 48, "block %d at %p, block %d at %p: not the next slot", i, (void *)p[i], i + 1,
                 (void *)p[i + 1]);
  }
  cr_assert_geq(same, N - 2, "only %d of %d neighbours share a slab", same, N - 1);
  unsigned gid = _tp_slab_of(p[0])->group;
  uint32_t nobj = _tp_slab_of(p[0])->nobj;
  for (int i = 0; i < N; i += 2) tp_free(p[i]); /* every other block, then the rest: runs of */
  for (int i = 1; i < N; i += 2) tp_free(p[i]); /* one slab's blocks in no address order */
  _tp_tcache_flush_all(_tp_tc);
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 0);
  size_t navail = _tp_bin_total(_tp_groups[gid], _tp_class_of(48), 0), slabs = _tp_bin_total(_tp_groups[gid], _tp_class_of(48), 1);
  cr_assert_eq(navail, slabs * nobj, "%zu blocks available in %zu slabs of %u", navail, slabs, nobj);
  tp_group_destroy(g);
}
