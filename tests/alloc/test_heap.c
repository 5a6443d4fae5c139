/* The heap and thread caches through libtlbpack.a: runs of huge pages, reuse, giving memory
 * back beyond the retain limit, thread exit and cross-thread frees. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "modes.h"
#include "tlbpack.h"

Test(heap, large_blocks_are_runs_of_huge_pages_with_the_alignment_asked_for) {
  for (size_t n = 1; n <= 5; n++) {
    void *p = tp_aligned_alloc((size_t)4 << 20, n * TP_HPAGE + 1);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % ((size_t)4 << 20), 0);
    tp_hpage_t *h = _tp_hpage_of(p);
    cr_assert_eq(h->state, TP_HP_LARGE);
    for (size_t i = 1; i <= n; i++) cr_assert_eq(_tp_hpage_of((char *)p + i * TP_HPAGE)->state, TP_HP_LARGE_TAIL);
    cr_assert_eq(tp_malloc_usable_size(p), (n + 1) * TP_HPAGE);
    tp_free(p);
  }
}

Test(heap, a_freed_run_is_reused_before_new_address_space) {
  void *a = tp_malloc(6 << 20);
  tp_free(a);
  void *b = tp_malloc(6 << 20);
  cr_assert_eq(a, b, "freed run at %p not reused (got %p)", a, b);
  tp_free(b);
}

/* Over retain_mb the page retained longest goes back, not the one just emptied: a block freed
 * and allocated again in a loop keeps its pages (no zeroing a round) while pages stranded by
 * earlier frees, between live blocks, fill the retain budget. Before, each round gave the
 * block's own pages back and backed them again. */
/* One call site for every block (not a tail call: the asm after it keeps the call's return). */
static TP_NOINLINE void *three_hpages(void) {
  void *p = tp_malloc(3 * TP_HPAGE);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

Test(heap, a_block_freed_over_full_retained_pages_keeps_its_own) {
  size_t retain = _tp_opt.retain_bytes;
  cr_assert_geq(retain, 4 * TP_HPAGE, "the test needs retain_mb of 4 pages or more");
  size_t nstranded = retain / TP_HPAGE + 2; /* more stranded pages than the budget holds */
  static void *p[128];
  cr_assert_leq(2 * nstranded, 128);
  for (size_t i = 0; i < 2 * nstranded; i++) memset(p[i] = tp_malloc(TP_HPAGE - 4096), 1, 4096);
  for (size_t i = 0; i < 2 * nstranded; i += 2) tp_free(p[i]); /* one page each, between live ones */
  void *b = three_hpages(); /* fits none of the holes */
  memset(b, 1, 3 * TP_HPAGE);
  /* The site's second block is a sample on 4 KiB pages (runs.c): written whole, it makes the
   * site's next blocks huge pages again, on b's. */
  void *sample = three_hpages();
  memset(sample, 1, 3 * TP_HPAGE);
  tp_free(sample);
  tp_free(b);
  tp_stats_t before, after;
  tp_stats_get(&before);
  for (int r = 0; r < 20; r++) {
    void *c = three_hpages();
    cr_assert_eq(c, b, "round %d: the block's pages were not reused (%p, then %p)", r, b, c);
    memset(c, 1, 3 * TP_HPAGE);
    tp_free(c);
  }
  tp_stats_get(&after);
  cr_assert_eq(after.pages_returned, before.pages_returned, "%zu pages went back and were backed again in 20 rounds",
               after.pages_returned - before.pages_returned);
  cr_assert_leq(after.mapped_bytes - (size_t)nstranded * TP_HPAGE, before.mapped_bytes);
  for (size_t i = 1; i < 2 * nstranded; i += 2) tp_free(p[i]);
}

Test(heap, heap_memory_is_one_contiguous_range_in_a_fresh_process) {
  void *p[64];
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < 64; i++) {
    p[i] = tp_malloc((size_t)(i % 2 ? 3 << 20 : 100));
    uintptr_t a = (uintptr_t)p[i];
    if (a < lo) lo = a;
    if (a > hi) hi = a;
  }
  cr_assert_lt(hi - lo, (size_t)1 << 30, "heap spread over %zu bytes", (size_t)(hi - lo));
  for (int i = 0; i < 64; i++) tp_free(p[i]);
}

Test(heap, memory_goes_back_beyond_the_retain_limit_after_frees) {
  enum { N = 200 };
  static void *p[N];
  tp_stats_t a, b;
  for (int i = 0; i < N; i++) {
    p[i] = tp_malloc(1 << 20); /* medium blocks: 200 MiB in slot runs */
    memset(p[i], 1, 1 << 20);
  }
  tp_stats_get(&a);
  cr_assert_geq(a.mapped_bytes, (size_t)N << 20);
  for (int i = 0; i < N; i++) tp_free(p[i]);
  tp_stats_get(&b);
  cr_assert_leq(b.mapped_bytes, _tp_opt.retain_bytes + (4u << 20), "mapped %zu after freeing everything",
                b.mapped_bytes);
  cr_assert_gt(b.pages_returned, a.pages_returned);
}

enum { KEPT = 1000 };
static void *kept200[KEPT];

static void *thread_alloc(void *arg) {
  void **out = arg;
  for (int i = 0; i < 5000; i++) out[i] = tp_malloc(64);
  for (int i = 0; i < KEPT; i++) kept200[i] = tp_malloc(200); /* live: their slabs stay */
  void *junk[3000];
  for (int i = 0; i < 3000; i++) junk[i] = tp_malloc(200);
  for (int i = 0; i < 3000; i++) tp_free(junk[i]); /* these sit in the thread's cache at exit */
  return NULL;
}

/* Every slab of one size class, wherever it is: on a partial list, or full (a slab whose free
 * blocks all sit in some thread's cache is on no list at all). */
typedef struct { unsigned cls; size_t slabs, objects, avail, live; } class_count_t;

static void count_class(tp_hpage_t *h, void *arg) {
  class_count_t *c = arg;
  if (h->state != TP_HP_ACTIVE) return;
  for (unsigned i = 0; i < TP_SLOTS; i++) {
    tp_slab_t *s = h->slot_slab[i];
    if (s == NULL || s->first_slot != i || s->kind != TP_SLAB_SMALL || s->cls != c->cls) continue;
    c->slabs++;
    c->objects += s->nobj;
    c->avail += s->navail;
    for (uint32_t k = 0; k < s->nobj; k++) c->live += s->live[k] != 0;
  }
}

Test(tcache, objects_cached_by_an_exited_thread_go_back_to_their_slabs) {
  static void *blocks[5000];
  tp_stats_t before, after;
  tp_stats_get(&before);
  pthread_t t;
  pthread_create(&t, NULL, thread_alloc, blocks);
  pthread_join(t, NULL);
  for (int i = 0; i < 5000; i++) tp_free(blocks[i]); /* cross-thread frees */
  tp_stats_get(&after);
  cr_assert_eq(after.live_objects, before.live_objects + KEPT);
  cr_assert_eq(after.live_bytes, before.live_bytes + KEPT * _tp_classes[_tp_class_of(200)].size);
  /* The exited thread's cache was flushed: every object of its 200-byte class is either live
   * (the KEPT blocks) or available in its slab, none stranded in a dead thread's cache. */
  class_count_t c = {.cls = _tp_class_of(200)};
  _tp_lock(&_tp_heap_lock);
  _tp_heap_foreach(count_class, &c);
  _tp_unlock(&_tp_heap_lock);
  cr_assert_gt(c.slabs, 0, "no slab of the 200-byte class found");
  cr_assert_eq(c.live, KEPT, "%zu live objects in the class's slabs, %d kept", c.live, KEPT);
  cr_assert_eq(c.avail + c.live, c.objects, "%zu of %zu objects of the exited thread's class are neither live nor in their slabs",
               c.objects - c.avail - c.live, c.objects);
  for (int i = 0; i < KEPT; i++) tp_free(kept200[i]);
}

static void *free_others(void *arg) {
  void **v = arg;
  for (int i = 0; i < 20000; i++) tp_free(v[i]);
  return NULL;
}

Test(tcache, cross_thread_frees_from_four_threads_neither_leak_nor_corrupt) {
  enum { T = 4, N = 20000 };
  static void *v[T][N];
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) {
      v[t][i] = tp_malloc(16 + (size_t)(i % 50) * 8);
      memset(v[t][i], t + 1, 16);
    }
  tp_stats_t mid, end;
  tp_stats_get(&mid);
  pthread_t th[T];
  for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, free_others, v[t]);
  for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
  tp_stats_get(&end);
  cr_assert_eq(mid.live_objects - end.live_objects, (size_t)T * N);
  /* Every freed block can be handed out again exactly once. */
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) v[t][i] = tp_malloc(16 + (size_t)(i % 50) * 8);
  for (int t = 0; t < T; t++)
    for (int i = 0; i < N; i++) tp_free(v[t][i]); /* a block handed out twice would abort here */
}

/* group:thread: a thread fills its group and exits; another thread frees every block. Nothing
 * may keep the dead thread's group alive: neither the freeing thread's cache (it never
 * allocates from that group) nor empty slabs kept against thrashing. With nothing retained,
 * the group's huge pages all go back. */
enum { HANDOFF = 12000 };
static void *handoff[HANDOFF];

static void *producer(void *arg) {
  (void)arg;
  unsigned long long r = 88172645463325252ull;
  for (int i = 0; i < HANDOFF; i++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    size_t n = 1 + r % (i % 50 == 0 ? 40000 : 2000);
    handoff[i] = tp_malloc(n);
    memset(handoff[i], 7, n);
  }
  return NULL;
}

static pthread_barrier_t handoff_ready, handoff_done;

static void *consumer(void *arg) {
  tp_stats_t *st = arg;
  tp_free(tp_malloc(16)); /* takes a group of its own before the producer exists */
  pthread_barrier_wait(&handoff_ready);
  pthread_barrier_wait(&handoff_done); /* the producer has exited */
  for (int i = 0; i < HANDOFF; i++) tp_free(handoff[i]);
  tp_stats_get(st); /* while this thread (and its cache) is still alive */
  return NULL;
}

Test(tcache, a_dead_threads_group_goes_back_when_another_thread_frees_its_blocks) {
  _tp_opt.group = TP_GROUP_THREAD; /* threads created from now on get groups of their own */
  _tp_opt.retain_bytes = 0;
  tp_stats_t before, full, after;
  pthread_barrier_init(&handoff_ready, NULL, 2);
  pthread_barrier_init(&handoff_done, NULL, 2);
  pthread_t c, t;
  pthread_create(&c, NULL, consumer, &after);
  pthread_barrier_wait(&handoff_ready);
  tp_stats_get(&before);
  pthread_create(&t, NULL, producer, NULL);
  pthread_join(t, NULL);
  tp_stats_get(&full);
  cr_assert_geq(full.mapped_bytes, before.mapped_bytes + (8u << 20), "the producer mapped %zu bytes",
                full.mapped_bytes - before.mapped_bytes);
  pthread_barrier_wait(&handoff_done);
  pthread_join(c, NULL);
  cr_assert_eq(after.live_objects, before.live_objects);
  cr_assert_leq(after.mapped_bytes, before.mapped_bytes + (2u << 20),
                "%zu bytes still mapped after every block of the dead thread's group was freed (%zu before)",
                after.mapped_bytes, before.mapped_bytes);
}

/* group:thread, thread records recycled out of step with thread groups: a thread on the shared
 * group (the group bound is reached) exits last, so the next thread gets its record and the
 * first thread's group. The record's bins must follow the new owner: blocks of the shared
 * group are now another group's and go straight back; the thread's own group caches. */
static pthread_barrier_t rec_has, rec_go_first, rec_go_second;
enum { REC_N = 64 };
static void *rec_blocks[REC_N];

static void *rec_first(void *arg) {
  (void)arg;
  tp_free(tp_malloc(64)); /* takes the only thread group */
  pthread_barrier_wait(&rec_has);
  pthread_barrier_wait(&rec_go_first);
  return NULL;
}

static void *rec_second(void *arg) {
  (void)arg;
  for (int i = 0; i < REC_N; i++) rec_blocks[i] = tp_malloc(64); /* the shared group */
  pthread_barrier_wait(&rec_has);
  pthread_barrier_wait(&rec_go_second);
  return NULL;
}

static void *rec_third(void *arg) {
  unsigned *out = arg;
  for (int i = 0; i < REC_N; i++) tp_free(rec_blocks[i]); /* the shared group's: not ours */
  tp_tcache_t *tc = _tp_tc;
  unsigned c = _tp_class_of(64);
  tp_tgroup_t *shared = tc->groups[TP_SHARED_GROUP];
  out[0] = tc->thread_group;
  out[1] = shared && shared->bins[c] ? _tp_tbin_count(shared->bins[c]) : 0;
  for (int i = 0; i < REC_N; i++) rec_blocks[i] = tp_malloc(64);
  for (int i = 0; i < REC_N; i++) tp_free(rec_blocks[i]); /* our own group's: cached */
  tp_tgroup_t *own = tc->groups[tc->thread_group];
  out[2] = own && own->bins[c] ? _tp_tbin_count(own->bins[c]) : 0;
  return NULL;
}

Test(tcache, a_recycled_thread_record_follows_its_new_threads_group) {
  TP_NEEDS_NO_THREAD_GROUPS(); /* it switches to group:thread itself, with one thread group */
  _tp_opt.group = TP_GROUP_THREAD;
  _tp_opt.site_groups = 1; /* one thread group: the second thread shares group 0 */
  pthread_barrier_init(&rec_has, NULL, 2);
  pthread_barrier_init(&rec_go_first, NULL, 2);
  pthread_barrier_init(&rec_go_second, NULL, 2);
  pthread_t a, b, t;
  pthread_create(&a, NULL, rec_first, NULL);
  pthread_barrier_wait(&rec_has); /* the first thread holds the group */
  pthread_create(&b, NULL, rec_second, NULL);
  pthread_barrier_wait(&rec_has);
  pthread_barrier_wait(&rec_go_first); /* the group's thread exits first, */
  pthread_join(a, NULL);
  pthread_barrier_wait(&rec_go_second); /* then the shared group's: its record is reused next */
  pthread_join(b, NULL);
  unsigned out[3];
  pthread_create(&t, NULL, rec_third, out);
  pthread_join(t, NULL);
  cr_assert_neq(out[0], TP_SHARED_GROUP, "the third thread got no thread group");
  cr_assert_eq(out[1], 0, "%u blocks of another group kept in the new thread's cache", out[1]);
  cr_assert_gt(out[2], 0, "the new thread does not cache its own group's blocks");
}

/* Kilobyte bins are trimmed (tcache.c): blocks a bin kept below its lowest point since the
 * last trim go back to the slabs, three quarters a turn, as the thread's other kilobyte bins
 * miss; a bin whose blocks cycle keeps them. */
static unsigned bin_count_of(void *p) {
  tp_slab_t *s = _tp_slab_of(p);
  return _tp_tbin_count(_tp_tc->groups[s->group]->bins[s->cls]);
}

static void *trim_thread(void *arg) {
  unsigned *out = arg;
  enum { N = 40 };
  void *idle[N], *cyc[N];
  for (int i = 0; i < N; i++) idle[i] = tp_malloc(4000); /* one class over 1 KiB, left alone */
  for (int i = 0; i < N; i++) cyc[i] = tp_malloc(3000);  /* another, allocated and freed in turn */
  void *probe_idle = idle[0], *probe_cyc = cyc[0];
  for (int i = N - 1; i >= 0; i--) tp_free(idle[i]);
  for (int i = N - 1; i >= 0; i--) tp_free(cyc[i]);
  out[0] = bin_count_of(probe_idle);
  out[1] = bin_count_of(probe_cyc);
  /* Rounds of the 3000-byte blocks, each followed by as many kilobyte-bin misses as turn
   * every such bin of the thread once (the misses are counted directly here). */
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < N; i++) cyc[i] = tp_malloc(3000);
    for (int i = N - 1; i >= 0; i--) tp_free(cyc[i]);
    for (unsigned k = 0; k < (unsigned)TP_TRIM_EVERY * _tp_tc->ntrim; k++) _tp_tcache_trim_tick(_tp_tc);
  }
  void *p = tp_malloc(4000); /* the idle bin's block, or a refill: either way its count */
  out[2] = bin_count_of(p);
  tp_free(p);
  out[3] = bin_count_of(cyc[0]); /* the bin it cycles through now (its site may have grown a group) */
  return NULL;
}

Test(tcache, a_kilobyte_bin_left_alone_is_trimmed_and_one_that_cycles_is_not) {
  TP_NEEDS_SITE_GROUPS();
  unsigned out[4];
  pthread_t t;
  pthread_create(&t, NULL, trim_thread, out);
  pthread_join(t, NULL);
  cr_assert_geq(out[0], 30, "the 4000-byte bin kept %u of 40 freed blocks", out[0]);
  cr_assert_geq(out[1], 30, "the 3000-byte bin kept %u of 40 freed blocks", out[1]);
  cr_assert_leq(out[2], 8, "the 4000-byte bin left alone still holds %u blocks (of %u)", out[2], out[0]);
  cr_assert_geq(out[3], 30, "the 3000-byte bin, allocated and freed in turn, holds %u blocks", out[3]);
}

/* A kilobyte bin keeps up to 256 KiB; in the classes of eight per power of two (4-32 KiB) 128
 * KiB, so that a thread's bins keep as much per power of two as in the classes of four. */
Test(tcache, kilobyte_bins_keep_as_much_per_power_of_two_in_fine_and_coarse_classes) {
  for (unsigned c = 0; c < TP_NCLASSES; c++) {
    const tp_class_t *k = &_tp_classes[c];
    if (k->size <= 1024 || k->tcache_cap == 0) continue;
    unsigned per = k->size > (1u << TP_CLASS_FINE_LO) && k->size <= (1u << TP_CLASS_FINE_HI) ? 8 : 4;
    size_t bytes = (size_t)k->tcache_limit * k->size * per;
    if (k->tcache_limit > k->tcache_cap && k->tcache_limit < 64)
      cr_assert(bytes + (size_t)k->size * per > (size_t)(1u << 20) && bytes <= (size_t)(1u << 20), "class %u (%u B): %u blocks a bin, %zu KiB a power of two",
                c, k->size, k->tcache_limit, bytes >> 10);
  }
  cr_assert_eq(_tp_classes[_tp_class_of(6000)].tcache_limit, (128u << 10) / 6144);
  cr_assert_eq(_tp_classes[_tp_class_of(3000)].tcache_limit, 64);
}

/* A burst of blocks freed whole leaves its slabs empty: the thread's lane keeps up to
 * TP_KEEP_EMPTY_BYTES of them (policy.c), its next burst fills from them instead of carving new
 * slabs, and malloc_trim gives them back, as does the sweep once the class is no longer in use
 * (slab.c, _tp_bin_sweep). Runs in a thread of its own (one lane). */
typedef struct {
  unsigned used, kept, counted, outside, left_after_trim, keep, kept_hot, kept_quiet, mask_hot, mask_quiet;
} burst_out_t;

/* The lane's count of empty slabs, and the empty slabs on its list (*listed, up to 64 of them
 * in kept[] when it is not NULL). */
static unsigned lane_empties(tp_lane_t *l, unsigned *listed, tp_slab_t **kept) {
  _tp_lock(&l->lock);
  unsigned n = l->nempty, k = 0;
  for (tp_slab_t *s = l->partial; s; s = s->next)
    if (s->navail == s->nobj) {
      if (kept != NULL && k < 64) kept[k] = s;
      k++;
    }
  _tp_unlock(&l->lock);
  *listed = k;
  return n;
}

/* Both bursts' blocks from one call site: its group. */
static __attribute__((noinline)) void *burst_block(void) {
  void *p = tp_malloc(64);
  __asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call: the return address is here */
  return p;
}

static void *burst_thread(void *arg) {
  burst_out_t *out = arg;
  unsigned c = _tp_class_of(64);
  unsigned nobj = _tp_classes[c].nobj, n = 6 * nobj;
  out->keep = (unsigned)(TP_KEEP_EMPTY_BYTES / ((size_t)_tp_classes[c].nslots * TP_SLOT));
  void **p = tp_malloc(n * sizeof *p);
  tp_slab_t *seen[64], *kept[64];
  unsigned nseen = 0;
  for (unsigned i = 0; i < n; i++) {
    p[i] = burst_block();
    tp_slab_t *s = _tp_slab_of(p[i]);
    unsigned k = 0;
    while (k < nseen && seen[k] != s) k++;
    if (k == nseen && nseen < 64) seen[nseen++] = s;
  }
  out->used = nseen;
  tp_slab_t *s0 = _tp_slab_of(p[n - 1]); /* the site's group by now (its first blocks may be in
                                          * the shared group's slabs, while the site was young) */
  tp_lane_t *l = &_tp_groups[s0->group]->lanes[atomic_load(&s0->lane)][c];
  for (unsigned i = 0; i < n; i++) tp_free(p[i]);
  _tp_tcache_flush_all(_tp_tc); /* every block back in its slab */
  out->kept = lane_empties(l, &out->counted, kept);
  /* The next burst, as long as the kept slabs hold: from them only. */
  unsigned again = out->kept * nobj, nkept = out->counted < 64 ? out->counted : 64;
  for (unsigned i = 0; i < again; i++) p[i] = burst_block();
  for (unsigned i = 0; i < again; i++) {
    unsigned k = 0;
    while (k < nkept && kept[k] != _tp_slab_of(p[i])) k++;
    out->outside += k == nkept;
  }
  for (unsigned i = 0; i < again; i++) tp_free(p[i]);
  _tp_tcache_flush_all(_tp_tc);
  tp_trim(0); /* malloc_trim */
  unsigned listed;
  out->left_after_trim = lane_empties(l, &listed, NULL) + listed;
  /* Kept again, then swept: every group in the thread's turn, while the class is in use and
   * once it has not refilled for longer than TP_IDLE_REFILLS refills of the process. */
  tp_group_t *g = _tp_groups[s0->group];
  unsigned side = atomic_load(&s0->lane);
  for (unsigned i = 0; i < n; i++) p[i] = burst_block();
  for (unsigned i = 0; i < n; i++) tp_free(p[i]);
  _tp_tcache_flush_all(_tp_tc);
  for (unsigned i = 0; i < _tp_groups_end(); i++) _tp_bin_sweep(_tp_tc);
  out->kept_hot = lane_empties(l, &listed, NULL);
  out->mask_hot = (unsigned)(atomic_load(&g->kept[side]) >> c) & 1;
  atomic_fetch_add(&_tp_refill_clock, TP_IDLE_REFILLS + 1);
  for (unsigned i = 0; i < _tp_groups_end(); i++) _tp_bin_sweep(_tp_tc);
  out->kept_quiet = lane_empties(l, &listed, NULL) + listed;
  out->mask_quiet = (unsigned)(atomic_load(&g->kept[side]) >> c) & 1;
  tp_free(p);
  return NULL;
}

Test(heap, a_lane_keeps_a_bursts_empty_slabs_for_the_next_burst_until_malloc_trim_or_the_class_goes_quiet) {
  burst_out_t out = {0};
  pthread_t t;
  pthread_create(&t, NULL, burst_thread, &out);
  pthread_join(t, NULL);
  cr_assert_geq(out.used, 6, "6 slabs' worth of blocks took %u slabs", out.used);
  cr_assert_eq(out.kept, out.counted, "nempty %u, but %u empty slabs on the list", out.kept, out.counted);
  cr_assert_eq(out.kept, out.keep, "the lane kept %u empty slabs, the bound is %u", out.kept, out.keep);
  cr_assert_eq(out.outside, 0, "%u blocks of the next burst came from slabs other than the kept ones", out.outside);
  cr_assert_eq(out.left_after_trim, 0, "malloc_trim left %u empty slabs", out.left_after_trim);
  cr_assert_eq(out.kept_hot, out.keep, "a sweep while the class is in use left %u of %u", out.kept_hot, out.keep);
  cr_assert_eq(out.mask_hot, 1, "the group's mask does not show the lane keeping slabs");
  cr_assert_eq(out.kept_quiet, 0, "a sweep once the class went quiet left %u empty slabs", out.kept_quiet);
  cr_assert_eq(out.mask_quiet, 0, "the group's mask still shows the lane keeping slabs");
}

/* Retained empty huge pages decay on the allocation clock and on time (docs/design.md, "Returning
 * memory"): a page kept empty while the program made 4096 cache refills and for 100 ms goes
 * back at the next heap event. The clocks are moved here directly (the time through the OS
 * hooks table); that a refill moves the allocation clock is checked first. */
static uint64_t fake_ms;
static uint64_t fake_now_ms(void) { return fake_ms; }

Test(heap, retained_empty_pages_go_back_after_4096_refills_and_100_ms_unused) {
  uint64_t t = atomic_load(&_tp_refill_clock);
  /* The first block of each of 2 x TP_CLOCK_BATCH classes: as many refills, which the thread
   * adds to the clock TP_CLOCK_BATCH at a time. */
  for (int i = 0; i < 2 * TP_CLOCK_BATCH; i++) tp_free(tp_malloc(16 * (size_t)(i + 1)));
  uint64_t moved = atomic_load(&_tp_refill_clock) - t;
  cr_assert(moved >= TP_CLOCK_BATCH && moved <= 2 * TP_CLOCK_BATCH && moved % TP_CLOCK_BATCH == 0,
            "%d refills moved the clock by %llu", 2 * TP_CLOCK_BATCH, (unsigned long long)moved);

  uint64_t (*real_now)(void) = _tp_os_hooks.now_ms;
  cr_assert_not_null(real_now);
  fake_ms = real_now();
  _tp_os_hooks.now_ms = fake_now_ms;
  enum { PAGES = 6 };
  cr_assert_geq(_tp_opt.retain_bytes, PAGES * TP_HPAGE, "the default retain_mb keeps %d pages", PAGES);
  void *big[PAGES];
  tp_stats_t base, kept, young, recent, old;
  tp_stats_get(&base);
  for (int i = 0; i < PAGES; i++) memset(big[i] = tp_malloc(TP_HPAGE), 1, 4096); /* one huge page each */
  for (int i = 0; i < PAGES; i++) tp_free(big[i]);
  tp_stats_get(&kept);
  cr_assert_eq(kept.pages_returned, base.pages_returned, "pages went back within retain_mb");
  cr_assert_geq(kept.mapped_bytes, base.mapped_bytes + PAGES * TP_HPAGE, "the empty pages are not kept");

  /* 4000 refills and 1 s later a heap event (a page emptied) finds them young: all stay. */
  atomic_fetch_add(&_tp_refill_clock, 4000);
  fake_ms += 1000;
  tp_free(tp_malloc(TP_HPAGE));
  tp_stats_get(&young);
  cr_assert_eq(young.pages_returned, base.pages_returned, "retained pages went back before 4096 refills");

  /* 4200 refills after they emptied, the next event gives back the ones still unused: all but
   * the page the last block took and gave back (its clocks restarted). 4200 refills later but
   * only 50 ms, that page stays for the next block (a program cycling through phases gets its
   * page back instead of a fault per 4 KiB); after 4200 more and 100 ms, it goes back. */
  atomic_fetch_add(&_tp_refill_clock, 200);
  tp_free(tp_malloc(TP_HPAGE));
  tp_stats_get(&old);
  cr_assert_eq(old.pages_returned - young.pages_returned, PAGES - 1, "%zu of the %d pages left unused went back",
               old.pages_returned - young.pages_returned, PAGES - 1);
  cr_assert_eq(young.mapped_bytes - old.mapped_bytes, (PAGES - 1) * TP_HPAGE, "mapped %zu -> %zu bytes",
               young.mapped_bytes, old.mapped_bytes);
  /* Two pages emptied now; 4200 refills but only 50 ms later, a block takes one and gives it
   * back: the other stays (a program cycling through phases gets its page back instead of a
   * fault per 4 KiB). 4200 refills and 100 ms after that, the next such event gives it back. */
  void *a1 = tp_malloc(TP_HPAGE), *a2 = tp_malloc(TP_HPAGE);
  memset(a1, 1, 4096);
  memset(a2, 1, 4096);
  tp_free(a1);
  tp_free(a2);
  tp_stats_get(&recent);
  size_t before = recent.pages_returned;
  atomic_fetch_add(&_tp_refill_clock, 4200);
  fake_ms += 50;
  tp_free(tp_malloc(TP_HPAGE));
  tp_stats_get(&recent);
  cr_assert_eq(recent.pages_returned, before, "a page empty for 4200 refills but 50 ms went back");
  atomic_fetch_add(&_tp_refill_clock, 4200);
  fake_ms += 100;
  tp_free(tp_malloc(TP_HPAGE));
  tp_stats_get(&recent);
  _tp_os_hooks.now_ms = real_now;
  cr_assert_eq(recent.pages_returned, before + 1, "a page empty for 4200 refills and 100 ms stayed");
}

/* Metadata at the address-space limit (heap.c, _tp_heap_give_to_meta): an hpage the heap
 * reserved and no longer backs leaves the heap for good, read-write, and the heap never hands
 * it out again. */
Test(heap, an_unused_reserved_hpage_goes_to_the_metadata_and_never_back_to_the_heap) {
  _tp_opt.retain_bytes = 0; /* emptied pages are decommitted: reserved, not backed */
  enum { N = 4 };
  void *big = tp_malloc((size_t)N * TP_HPAGE);
  cr_assert_not_null(big);
  tp_free(big);
  char *m = _tp_heap_give_to_meta();
  cr_assert_not_null(m, "no reserved hpage was given");
  cr_assert_eq((uintptr_t)m & (TP_HPAGE - 1), 0, "not an hpage: %p", (void *)m);
  cr_assert_eq(_tp_hpage_of(m)->state, TP_HP_NONE, "the hpage is still the heap's");
  memset(m, 0xab, TP_HPAGE); /* read-write in place */
  void *p[2 * N];
  for (int i = 0; i < 2 * N; i++) {
    p[i] = tp_malloc(TP_HPAGE);
    cr_assert_not_null(p[i]);
    cr_assert((char *)p[i] + TP_HPAGE <= m || (char *)p[i] >= m + TP_HPAGE, "the heap handed out the given hpage");
  }
  for (size_t o = 0; o < TP_HPAGE; o += 4096) cr_assert_eq((unsigned char)m[o], 0xab, "the given hpage was overwritten");
  for (int i = 0; i < 2 * N; i++) tp_free(p[i]);
}

/* Metadata's 2 MiB units (meta.c): each starts on 4 KiB pages and becomes a huge page once the
 * bump pointer is half way through it (the process's first unit: once it is full), so a unit
 * barely used is not resident whole. */
static size_t meta_fill_to(size_t bytes) {
  size_t n = 0;
  while (_tp_meta_bytes() < bytes) {
    char *p = _tp_meta_alloc(64 << 10); /* above the free lists' sizes: always bumped */
    cr_assert_not_null(p);
    memset(p, 1, 64 << 10);
    n++;
  }
  return n;
}
Test(heap, a_unit_of_metadata_becomes_a_huge_page_once_half_of_it_is_used) {
  size_t small = 3 * TP_HPAGE, big = 4 * TP_HPAGE;
  cr_assert(!_tp_policy_meta_huge(TP_HPAGE - 4096, 1, small) && _tp_policy_meta_huge(TP_HPAGE, 1, small), "the first unit: once full");
  cr_assert(!_tp_policy_meta_huge(TP_HPAGE / 2 - 64, 0, small) && _tp_policy_meta_huge(TP_HPAGE / 2, 0, small), "other units: once half used");
  cr_assert(_tp_policy_meta_huge(64, 0, big) && !_tp_policy_meta_huge(0, 0, big), "past 8 MiB of metadata: at a unit's first record");
  TP_NEEDS(_tp_opt.pool != TP_POOL_4K, "metadata on huge pages (not pool:4k)");
  meta_fill_to(TP_HPAGE + (256 << 10));
  tp_meta_pages_t m;
  cr_assert_eq(_tp_meta_pages(&m), 0);
  cr_assert_leq(m.thp_bytes, TP_HPAGE, "the second unit became a huge page with an eighth of it used");
  cr_assert_leq(m.resident_bytes, TP_HPAGE + (512 << 10), "%zu KiB of metadata resident for %zu KiB used",
                m.resident_bytes >> 10, _tp_meta_bytes() >> 10);
  if (m.thp_bytes == 0) return; /* no transparent huge page to be had (THP off, or none free) */
  meta_fill_to(TP_HPAGE + TP_HPAGE / 2 + (64 << 10));
  cr_assert_eq(_tp_meta_pages(&m), 0);
  cr_assert_eq(m.thp_bytes, 2 * TP_HPAGE, "the second unit, half used, is not a huge page (%zu KiB of huge pages)", m.thp_bytes >> 10);
}

/* A site that writes a few KiB of each of its 600 KiB blocks (runs.c; policy.c,
 * _tp_policy_large_on_4k): past start_kb its second block is a sample on 4 KiB pages, and the
 * ones after it, the site found sparse, are on 4 KiB pages too, each in an hpage of its own;
 * their usable size is still their slots, and the stats count them so. */
static TP_NOINLINE void *sparse_block(void) {
  void *p = tp_malloc(600 << 10);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

Test(heap, a_site_that_writes_little_of_its_blocks_gets_them_on_4k_pages_at_their_own_size) {
  TP_NEEDS_POOL_AUTO();
  _tp_opt.start_bytes = 0; /* past start_kb from the first block */
  enum { N = 8 };
  void *p[N];
  size_t runs0 = _tp_heap_ctr.large_4k, slots = (size_t)((600 << 10) + TP_SLOT - 1) / TP_SLOT * TP_SLOT;
  tp_stats_t st0, st;
  tp_stats_get(&st0);
  for (int i = 0; i < N; i++) {
    p[i] = sparse_block();
    cr_assert_not_null(p[i]);
    memset(p[i], 1, 4096);
  }
  tp_stats_get(&st);
  cr_assert_eq(_tp_heap_ctr.large_4k - runs0, N - 1, "%zu of the site's %d blocks on 4 KiB pages, not all but its first",
               _tp_heap_ctr.large_4k - runs0, N);
  for (int i = 1; i < N; i++) {
    cr_assert_eq(_tp_hpage_of(p[i])->source, TP_SRC_4K, "block %d not on 4 KiB pages", i);
    cr_assert_eq((uintptr_t)p[i] % TP_HPAGE, 0, "block %d does not start its own hpage", i);
    cr_assert_eq(tp_malloc_usable_size(p[i]), slots, "block %d: usable %zu, not its %zu bytes of slots", i,
                 tp_malloc_usable_size(p[i]), slots);
  }
  cr_assert_eq(st.live_bytes - st0.live_bytes, N * slots, "live bytes grew by %zu for %d blocks of %zu",
               st.live_bytes - st0.live_bytes, N, slots);
  for (int i = 0; i < N; i++) tp_free(p[i]);
}

/* A site that writes a few KiB of each of its blocks of a few slots (policy.c,
 * _tp_policy_slab_block_route): past start_kb its second block is a sample, a medium run on 4 KiB
 * pages; once it reads sparse, its blocks come from the slabs of the group on 4 KiB pages, at
 * their class's size. A site that writes its blocks whole keeps them in its own group's slabs
 * after the sample. 48 KiB goes through the thread cache's bins, 128 KiB past them. */
static TP_NOINLINE void *buf_48k_sparse(void) {
  void *p = tp_malloc(48 << 10);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}
static TP_NOINLINE void *buf_128k_sparse(void) {
  void *p = tp_malloc(128 << 10);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}
static TP_NOINLINE void *buf_128k_dense(void) {
  void *p = tp_malloc(128 << 10);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

enum { SPARSE_N = 24 };
static void check_site(void *(*site)(void), size_t size, size_t written, int sparse) {
  void *p[SPARSE_N];
  for (int i = 0; i < SPARSE_N; i++) {
    p[i] = site();
    cr_assert_not_null(p[i]);
    memset(p[i], 1, written);
  }
  unsigned g4 = _tp_group_4k();
  size_t cls = _tp_classes[_tp_class_of(size)].size;
  for (int i = 0; i < SPARSE_N; i++) {
    tp_hpage_t *h = _tp_hpage_of(p[i]);
    tp_slab_t *s = h->slot_slab[((uintptr_t)p[i] >> TP_SLOT_SHIFT) & (TP_SLOTS - 1)];
    if (i == 0) {
      cr_assert(s->kind == TP_SLAB_SMALL && s->group != g4, "%zu KiB block 0: not from its own group's slabs", size >> 10);
    } else if (i == 1) {
      cr_assert(s->kind != TP_SLAB_SMALL && h->source == TP_SRC_4K, "%zu KiB block 1 is not a sample on 4 KiB pages",
                size >> 10);
    } else if (i >= 3 && sparse) {
      cr_assert(s->kind == TP_SLAB_SMALL && s->group == g4, "%zu KiB block %d not from the group on 4 KiB pages (group %u)",
                size >> 10, i, (unsigned)s->group);
      cr_assert_eq(h->source, TP_SRC_4K, "%zu KiB block %d: its hpage is not on 4 KiB pages", size >> 10, i);
      cr_assert_eq(tp_malloc_usable_size(p[i]), cls, "block %d: usable %zu, not its class's %zu", i,
                   tp_malloc_usable_size(p[i]), cls);
    } else if (i >= 3) {
      cr_assert(s->kind == TP_SLAB_SMALL && s->group != g4, "%zu KiB block %d written whole: not in its own group's slabs",
                size >> 10, i);
    }
  }
  if (sparse) { /* in memory: the pages written, not the blocks (hpages counted once each) */
    size_t resident = 0;
    for (int i = 3; i < SPARSE_N; i++) {
      int seen = 0;
      for (int j = 3; j < i; j++) seen |= _tp_hpage_of(p[j]) == _tp_hpage_of(p[i]);
      if (!seen) resident += _tp_os_hooks.resident((void *)_tp_hpage_of(p[i])->addr, TP_HPAGE);
    }
    size_t most = (SPARSE_N - 3) * (written + 8192);
    cr_assert_leq(resident, most, "%zu KiB blocks written %zu KiB each: %zu KiB of their hpages in memory, over %zu",
                  size >> 10, written >> 10, resident >> 10, most >> 10);
  }
  for (int i = 0; i < SPARSE_N; i++) tp_free(p[i]);
}

Test(heap, a_site_that_writes_little_of_its_blocks_of_a_few_slots_gets_them_on_4k_pages_at_their_class_size) {
  TP_NEEDS_POOL_AUTO();
  _tp_opt.start_bytes = 0;
  check_site(buf_48k_sparse, 48 << 10, 4096, 1);
  check_site(buf_128k_sparse, 128 << 10, 8192, 1);
  check_site(buf_128k_dense, 128 << 10, 128 << 10, 0);
}

