/* Placement: groups keep their objects on their own pages, packed onto few huge pages.
 * Each Criterion test runs in a fresh process, so "a fresh heap" holds. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expect_abort.h"
#include "internal.h"
#include "modes.h"
#include "tlbpack.h"

#define PAGE4K(p) ((uintptr_t)(p) >> 12)
#define HPAGE(p) ((uintptr_t)(p) >> 21)

static int cmp_uptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static size_t distinct(uintptr_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_uptr);
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || v[i] != v[i - 1]) d++;
  return d;
}

/* Every 4 KiB page one set of blocks touches, minus none of the other's. */
static int pages_shared(void **a, size_t na, size_t sa, void **b, size_t nb, size_t sb) {
  size_t cap = (na + nb) * 4 + 16, n = 0;
  uintptr_t *pa = malloc(cap * sizeof *pa);
  for (size_t i = 0; i < na; i++)
    for (uintptr_t p = PAGE4K(a[i]); p <= PAGE4K((char *)a[i] + sa - 1); p++) pa[n++] = p;
  qsort(pa, n, sizeof *pa, cmp_uptr);
  int shared = 0;
  for (size_t i = 0; i < nb && !shared; i++)
    for (uintptr_t p = PAGE4K(b[i]); p <= PAGE4K((char *)b[i] + sb - 1); p++)
      if (bsearch(&p, pa, n, sizeof *pa, cmp_uptr)) shared = 1;
  free(pa);
  return shared;
}

/* Two allocation sites. noipa keeps identical-code folding from merging them into one, and
 * the empty asm after the call keeps them from becoming tail jumps (which would make the
 * caller's call sites the allocation sites instead). */
static __attribute__((noipa)) void *site_a(size_t n) {
  void *p = tp_malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}
static __attribute__((noipa)) void *site_b(size_t n) {
  void *p = tp_malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

static unsigned group_of_block(void *p) {
  return _tp_hpage_of(p)->slot_slab[((uintptr_t)p >> TP_SLOT_SHIFT) & 31]->group;
}

/* A wrapper: every caller allocates through it, so every block has its return address. */
static __attribute__((noipa)) void *wrapper(size_t n) {
  void *p = tp_malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

/* Behind a wrapper, the callers are told apart by size class: two kinds of objects (32-byte
 * nodes, 4 KiB buffers: 256x), each kept in bulk, end up in two groups, while the wrapper's other
 * sizes do not join either; one site whose size varies in a narrow band stays one group. */
Test(wrapper, a_site_spanning_many_size_classes_is_split_by_class) {
  TP_NEEDS_SITE_GROUPS();
  enum { N = 4000 };
  static void *nodes[N], *bufs[N], *other[64], *vals[N];
  for (int i = 0; i < 64; i++) other[i] = wrapper(16 + (size_t)(i % 4) * 200); /* 16..616 B */
  for (int i = 0; i < N; i++) {
    nodes[i] = wrapper(32);
    bufs[i] = wrapper(4096);
  }
  unsigned gn = group_of_block(nodes[N - 1]), gb = group_of_block(bufs[N - 1]);
  cr_assert_neq(gn, TP_SHARED_GROUP, "the nodes grew into a group of their own");
  cr_assert_neq(gb, TP_SHARED_GROUP, "the buffers grew into a group of their own");
  cr_assert_neq(gn, gb, "nodes and buffers from one wrapper are told apart");
  cr_assert_str_eq(_tp_groups[gn]->name + strlen(_tp_groups[gn]->name) - 3, "/32", "named site/size: %s", _tp_groups[gn]->name);
  for (int i = 0; i < N; i++) vals[i] = site_a(64 + (size_t)(i % 13) * 16); /* 64-256 B */
  unsigned gv = group_of_block(vals[N - 1]);
  cr_assert_neq(gv, TP_SHARED_GROUP);
  for (int i = N - 100; i < N; i++)
    cr_assert_eq(group_of_block(vals[i]), gv, "a narrow band of sizes stays one site");
  for (int i = 0; i < N; i++) tp_free(nodes[i]), tp_free(bufs[i]), tp_free(vals[i]);
  for (int i = 0; i < 64; i++) tp_free(other[i]);
}

/* A block of a wrapper's one-class group that realloc moves to another class goes where the
 * wrapper's calls of that size go, not into a slab of the new class in the old class's group
 * (z3's buffers, grown from 32 and 48 B, left a slab of each class they passed in those two
 * groups). A whole site's group keeps its blocks through realloc. */
Test(wrapper, a_block_realloced_out_of_its_class_leaves_the_class_group) {
  TP_NEEDS_SITE_GROUPS();
  enum { N = 4000 };
  static void *nodes[N], *other[64];
  for (int i = 0; i < 64; i++) other[i] = wrapper(16 + (size_t)(i % 4) * 1400); /* 16..4216 B */
  for (int i = 0; i < N; i++) nodes[i] = wrapper(32);
  unsigned gn = group_of_block(nodes[N - 1]);
  cr_assert_neq(gn, TP_SHARED_GROUP, "the nodes grew into a group of their own");
  cr_assert_geq(_tp_key_class(_tp_groups[gn]->site), 0, "the nodes' group is one class of the wrapper");
  void *grown = tp_realloc(nodes[N - 1], 3000), *same = tp_realloc(nodes[N - 2], 24);
  cr_assert_eq(same, nodes[N - 2], "a realloc within the class stays");
  cr_assert_neq(group_of_block(grown), gn, "a block grown to 3000 B stayed in the 32 B group");
  cr_assert_eq(group_of_block(grown), group_of_block(other[2]), "it went elsewhere than the wrapper's 3000 B blocks");
  nodes[N - 1] = grown;
  /* A whole site's group keeps its blocks. */
  static void *vals[N];
  for (int i = 0; i < N; i++) vals[i] = site_a(64 + (size_t)(i % 13) * 16); /* 64-256 B */
  unsigned gv = group_of_block(vals[N - 1]);
  cr_assert_neq(gv, TP_SHARED_GROUP);
  vals[N - 1] = tp_realloc(vals[N - 1], 3000);
  cr_assert_eq(group_of_block(vals[N - 1]), gv, "a whole site's block left its group on realloc");
  for (int i = 0; i < N; i++) tp_free(nodes[i]), tp_free(vals[i]);
  for (int i = 0; i < 64; i++) tp_free(other[i]);
}

/* A new site is young: its first blocks share slabs with other young sites, so that a program
 * of many small sites pays for what it keeps, not for a slab per site and class. */
Test(site, the_first_blocks_of_two_new_sites_share_a_slab) {
  TP_NEEDS_NO_THREAD_GROUPS();
  void *a = site_a(48), *b = site_b(48);
  cr_assert_eq(group_of_block(a), TP_SHARED_GROUP, "a new site starts on the shared group");
  cr_assert_eq(group_of_block(b), TP_SHARED_GROUP);
  cr_assert_eq(PAGE4K(a), PAGE4K(b), "young sites' blocks are packed together: a=%p b=%p", a, b);
  tp_free(a);
  tp_free(b);
}

/* Once both sites have shown that they keep memory (each well past a slab's worth), each has
 * a group of its own and their blocks never share a page again. */
Test(site, objects_from_two_grown_call_sites_never_share_a_4k_page) {
  TP_NEEDS_SITE_GROUPS();
  enum { WARM = 4000, N = 3000 };
  static void *wa[WARM], *wb[WARM], *a[N], *b[N];
  for (int i = 0; i < WARM; i++) {
    wa[i] = site_a(48);
    wb[i] = site_b(48);
  }
  for (int i = 0; i < N; i++) {
    a[i] = site_a(48);
    b[i] = site_b(48);
  }
  cr_assert_neq(group_of_block(a[0]), TP_SHARED_GROUP, "site A grew up");
  cr_assert_neq(group_of_block(b[0]), TP_SHARED_GROUP, "site B grew up");
  cr_assert_neq(group_of_block(a[0]), group_of_block(b[0]));
  cr_assert_not(pages_shared(a, N, 48, b, N, 48), "site A and site B blocks share a 4 KiB page");
  for (int i = 0; i < N; i++) {
    tp_free(a[i]);
    tp_free(b[i]);
  }
  for (int i = 0; i < WARM; i++) {
    tp_free(wa[i]);
    tp_free(wb[i]);
  }
}

Test(site, a_hot_site_is_packed_apart_from_interleaved_cold_buffers) {
  TP_NEEDS_SITE_GROUPS();
  enum { N = 60000 };
  static void *hot[N];
  static void *cold[N / 10];
  size_t bytes = 0;
  for (int i = 0; i < N; i++) {
    hot[i] = site_a(32 + (i % 3) * 80); /* a record's three sizes, one site */
    bytes += tp_malloc_usable_size(hot[i]);
    if (i % 10 == 0) cold[i / 10] = site_b(4000);
  }
  uintptr_t *hp = malloc(N * sizeof *hp);
  for (int i = 0; i < N; i++) hp[i] = HPAGE(hot[i]);
  size_t used = distinct(hp, N), floor_ = (bytes + TP_HPAGE - 1) / TP_HPAGE;
  cr_assert_leq(used, floor_ + 1, "hot blocks (%zu bytes) on %zu huge pages, floor %zu", bytes, used, floor_);
  cr_assert_not(pages_shared(hot, N, 32, cold, N / 10, 4000));
  free(hp);
}

Test(group, objects_of_a_group_stay_on_its_pages_and_within_the_floor_plus_one) {
  tp_group_t *g = tp_group_create("index");
  tp_group_t *h = tp_group_create("scratch");
  cr_assert(g && h && g != h);
  enum { N = 40000 };
  static void *a[N], *b[N];
  for (int i = 0; i < N; i++) {
    a[i] = tp_group_malloc(g, 24 + (i % 4) * 100);
    b[i] = tp_group_malloc(h, 24 + (i % 4) * 100);
  }
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, N);
  size_t floor_ = (st.bytes + TP_HPAGE - 1) / TP_HPAGE;
  cr_assert_leq(st.huge_pages, floor_ + 1, "%zu bytes on %zu huge pages", st.bytes, st.huge_pages);
  uintptr_t *hp = malloc(N * sizeof *hp);
  for (int i = 0; i < N; i++) hp[i] = HPAGE(a[i]);
  cr_assert_eq(distinct(hp, N), st.huge_pages);
  cr_assert_not(pages_shared(a, N, 24, b, N, 24));
  free(hp);
  tp_group_destroy(g);
  tp_group_destroy(h);
}

Test(group, large_and_small_objects_of_a_group_do_not_spread_it) {
  tp_group_t *g = tp_group_create("mixed");
  void *small[2000], *big[8];
  for (int i = 0; i < 8; i++) big[i] = tp_group_malloc(g, 300 << 10); /* medium: slot runs */
  for (int i = 0; i < 2000; i++) small[i] = tp_group_malloc(g, 64);
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 2008);
  cr_assert_leq(st.huge_pages, (st.bytes + TP_HPAGE - 1) / TP_HPAGE + 1, "%zu B on %zu hpages", st.bytes,
                st.huge_pages);
  (void)small;
  (void)big;
  tp_group_destroy(g);
}

Test(group, destroy_frees_every_object_and_returns_the_pages) {
  _tp_opt.retain_bytes = 0; /* no empty page is kept: every page given back shows in the stats */
  enum { SMALL = 20000, BIG = 4 };
  static void *obj[SMALL + BIG];
  tp_stats_t before, full, after;
  tp_group_t *g = tp_group_create("arena");
  tp_stats_get(&before);
  for (int i = 0; i < SMALL; i++) cr_assert_not_null(obj[i] = tp_group_malloc(g, 100 + i % 300));
  for (int i = 0; i < BIG; i++) cr_assert_not_null(obj[SMALL + i] = tp_group_malloc(g, (size_t)3 << 20));
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, SMALL + BIG);
  cr_assert_geq(st.huge_pages, 2 * BIG, "the group holds %zu huge pages", st.huge_pages);
  tp_stats_get(&full);
  cr_assert_eq(full.live_objects, before.live_objects + SMALL + BIG);
  tp_group_destroy(g);
  tp_stats_get(&after);
  /* Every object is freed: none is live any more, and the counts are back where they were. */
  for (int i = 0; i < SMALL + BIG; i++) cr_assert_not(tp_owns(obj[i]), "object %d (%p) still live after destroy", i, obj[i]);
  cr_assert_eq(after.live_objects, before.live_objects, "live objects: %zu before the group, %zu after destroy",
               before.live_objects, after.live_objects);
  cr_assert_eq(after.live_bytes, before.live_bytes, "live bytes: %zu before the group, %zu after destroy",
               before.live_bytes, after.live_bytes);
  /* Its huge pages are given back: every one it held, and the mapping is what it was before. */
  cr_assert_geq(after.pages_returned - full.pages_returned, st.huge_pages,
                "%zu of the group's %zu huge pages given back", after.pages_returned - full.pages_returned,
                st.huge_pages);
  cr_assert_leq(after.mapped_bytes, before.mapped_bytes, "mapped %zu bytes after destroy, %zu before the group",
                after.mapped_bytes, before.mapped_bytes);
  /* A new group starts from nothing. */
  tp_group_t *g2 = tp_group_create("again");
  tp_group_stats(g2, &st);
  cr_assert_eq(st.objects, 0);
  cr_assert_eq(st.huge_pages, 0);
  void *p = tp_group_malloc(g2, 100);
  cr_assert_not_null(p);
  tp_free(p);
  tp_group_destroy(g2);
}

/* An explicit group starts small: its first hpage is on 4 KiB pages, so many groups of a few
 * blocks do not hold a huge page each (200 groups of 10 blocks of 100 B held 325.6 MB of RSS +
 * hugetlb, now 54.0: the start pages of the groups made while the heap was young are still
 * collapsed within the start policy's budget); its pages are its own all the same, and the
 * page becomes a huge page once the group takes a second one. */
Test(group, many_small_explicit_groups_do_not_take_a_huge_page_each) {
  TP_NEEDS_SMALL_HEAP_ON_4K();
  enum { G = 200, K = 10 };
  static void *blk[G][K];
  static tp_group_t *gr[G];
  tp_stats_t before, after;
  tp_stats_get(&before);
  for (int i = 0; i < G; i++) {
    gr[i] = tp_group_create("small");
    cr_assert_not_null(gr[i]);
    for (int k = 0; k < K; k++) memset(blk[i][k] = tp_group_malloc(gr[i], 100), 1, 100);
  }
  tp_stats_get(&after);
  size_t huge = after.pages_hugetlbfs + after.pages_thp - before.pages_hugetlbfs - before.pages_thp;
  cr_assert_leq(huge, G / 4, "%d groups of %d blocks took %zu huge pages", G, K, huge);
  for (int i = 0; i < G; i++)
    for (int k = 0; k < K; k++) {
      tp_hpage_t *h = _tp_hpage_of(blk[i][k]);
      cr_assert_eq(h->owner, gr[i]->id, "group %d's block %d is on another group's page", i, k);
    }
  /* One group grows past its first page: the first page is no longer a lone 4 KiB-backed page
   * of a group that fills huge pages (collapsed, where the kernel can). */
  enum { BIG = 30000 };
  static void *more[BIG];
  for (int j = 0; j < BIG; j++) memset(more[j] = tp_group_malloc(gr[0], 100), 1, 100);
  tp_group_stats_t st;
  tp_group_stats(gr[0], &st);
  cr_assert_geq(st.huge_pages, 2, "the grown group holds %zu pages", st.huge_pages);
  for (int i = 0; i < G; i++) tp_group_destroy(gr[i]);
}

Test(group, calloc_zeroes_and_realloc_keeps_contents_in_the_group) {
  tp_group_t *g = tp_group_create("g");
  unsigned char *z = tp_group_calloc(g, 100, 10);
  for (int i = 0; i < 1000; i++) cr_assert_eq(z[i], 0);
  char *s = tp_group_malloc(g, 8);
  strcpy(s, "abcdefg");
  s = tp_group_realloc(g, s, 5000);
  cr_assert_str_eq(s, "abcdefg");
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 2);
  tp_group_warm(g);
  tp_free(s);
  tp_free(z);
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 0);
  tp_group_destroy(g);
}

static void call_free(void *p) { tp_free(p); }
static void malloc_from_group(void *g) { tp_free(tp_group_malloc(g, 10)); }

Test(group, a_pointer_that_is_not_a_group_aborts) {
  static char fake[4096];
  expect_abort(malloc_from_group, fake, "tlbpack: tp_group_malloc: %p is not a live group from tp_group_create",
               (void *)fake);
}

Test(group, null_group_means_the_default_placement) {
  void *p = tp_group_malloc(NULL, 10);
  cr_assert(tp_owns(p));
  tp_free(p);
}

Test(site, groups_are_bounded_and_later_sites_share_group_zero) {
  TP_NEEDS_SITE_GROUPS();
  unsigned bound = _tp_opt.site_groups, distinct_ids = 0, shared = 0;
  static unsigned char seen[TP_MAX_GROUPS];
  for (uintptr_t i = 0; i < bound + 50; i++) {
    uintptr_t fake_site = 0x400000 + i * 40; /* fake return addresses: no code behind them */
    int young;
    unsigned g = _tp_site_group(fake_site, &young);
    cr_assert(young && g == TP_SHARED_GROUP, "a new site starts young, on the shared group");
    for (int k = 0; k < 64 && g == TP_SHARED_GROUP; k++) g = _tp_site_refill(fake_site, 64 << 10);
    cr_assert_eq(_tp_site_group(fake_site, &young), g, "a site keeps its group");
    cr_assert(!young, "a site that kept refilling is grown up");
    if (g == TP_SHARED_GROUP) shared++;
    else if (!seen[g]++) distinct_ids++;
  }
  cr_assert_leq(distinct_ids, bound);
  cr_assert_geq(shared, 50);
}

Test(site, group_none_puts_every_site_in_the_shared_group) {
  _tp_tc->mode = TP_GROUP_NONE; /* what group:none sets for every thread cache */
  for (unsigned i = 0; i < TP_SITE_CACHE; i++) _tp_tc->site[i].ra = 1; /* as a new cache's */
  void *a = site_a(48), *b = site_b(48);
  cr_assert_eq(_tp_hpage_of(a)->slot_slab[((uintptr_t)a >> TP_SLOT_SHIFT) & 31]->group, TP_SHARED_GROUP);
  cr_assert_eq(_tp_hpage_of(b)->slot_slab[((uintptr_t)b >> TP_SLOT_SHIFT) & 31]->group, TP_SHARED_GROUP);
  cr_assert_eq((uintptr_t)b, (uintptr_t)a + 48, "size-class placement: a=%p b=%p are neighbours", a, b);
  tp_free(a);
  tp_free(b);
}

Test(arena, blocks_of_any_size_follow_each_other_in_allocation_order) {
  tp_group_t *g = tp_group_create_arena("orders");
  char *node = tp_group_malloc(g, 64), *key = tp_group_malloc(g, 20), *val = tp_group_malloc(g, 100);
  cr_assert_eq(key, node + 64, "key right after node");
  cr_assert_eq(val, key + 32, "value right after the key (rounded to 16 bytes)");
  cr_assert_eq(tp_malloc_usable_size(key), 32);
  strcpy(key, "abc");
  key = tp_group_realloc(g, key, 2000);
  cr_assert_str_eq(key, "abc");
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 3);
  cr_assert_eq(st.bytes, 64 + 112 + 2000);
  tp_free(node);
  tp_free(key);
  tp_free(val);
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 0);
  tp_group_destroy(g);
}

Test(arena, a_run_goes_back_when_its_last_block_is_freed) {
  tp_group_t *g = tp_group_create_arena("churn");
  tp_stats_t before, after;
  tp_stats_get(&before);
  for (int round = 0; round < 50; round++) { /* 50 x 1.2 MiB through the arena, all freed */
    static void *v[3000];
    for (int i = 0; i < 3000; i++) v[i] = tp_group_malloc(g, 400);
    for (int i = 0; i < 3000; i++) tp_free(v[i]);
  }
  tp_stats_get(&after);
  cr_assert_lt(after.mapped_bytes, before.mapped_bytes + ((size_t)8 << 20), "runs were not given back");
  cr_assert_eq(after.live_objects, before.live_objects);
  tp_group_destroy(g);
}

Test(arena, calloc_zeroes_and_big_blocks_take_the_normal_path) {
  tp_group_t *g = tp_group_create_arena("z");
  for (int i = 0; i < 100; i++) {
    unsigned char *p = tp_group_malloc(g, 200);
    memset(p, 0xff, 200);
    tp_free(p); /* its run is current, so the space is not reused: calloc still zeroes */
  }
  unsigned char *z = tp_group_calloc(g, 1, 2000);
  for (int i = 0; i < 2000; i++) cr_assert_eq(z[i], 0);
  void *big = tp_group_malloc(g, 100000);
  cr_assert(tp_owns(big));
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 2);
  tp_group_destroy(g); /* frees both */
}

Test(arena, double_free_aborts) {
  tp_group_t *g = tp_group_create_arena("d");
  void *p = tp_group_malloc(g, 50);
  void *q = tp_group_malloc(g, 50);
  (void)q;
  tp_free(p);
  expect_abort(call_free, p, "tlbpack: double free of %p", p);
}

Test(arena, interior_pointer_aborts) {
  tp_group_t *g = tp_group_create_arena("i");
  char *p = tp_group_malloc(g, 50);
  expect_abort(call_free, p + 8, "tlbpack: invalid free of %p", (void *)(p + 8));
}

static unsigned long long lcg(unsigned long long *s) { return *s = *s * 6364136223846793005ull + 1442695040888963407ull; }

Test(adopt, a_site_that_replaces_an_idle_sites_entries_joins_its_group) {
  TP_NEEDS_GROUPS_APART();
  enum { N = 10000 };
  static void *slot[N];
  unsigned long long s = 1;
  for (int i = 0; i < N; i++) slot[i] = site_a(16 + lcg(&s) % 497);
  unsigned ga = group_of_block(slot[N - 1]); /* the first blocks were allocated while A was young */
  cr_assert_neq(ga, TP_SHARED_GROUP);
  for (int i = 0; i < 400000; i++) {
    size_t k = (lcg(&s) >> 20) % N;
    tp_free(slot[k]);
    slot[k] = site_b(16 + lcg(&s) % 497);
  }
  void *probe_a = site_a(100), *probe_b = site_b(100);
  cr_assert_eq(group_of_block(probe_a), ga, "site A: %u vs %u (alias %u)", group_of_block(probe_a), ga, (unsigned)atomic_load(&_tp_groups[ga]->alias));
  cr_assert_eq(group_of_block(probe_b), ga, "site B still allocates apart from idle site A's freed space");
  tp_free(probe_a);
  tp_free(probe_b);
  for (int i = 0; i < N; i++) tp_free(slot[i]);
}

Test(adopt, hot_blocks_never_join_the_temporaries_that_cycle_between_them) {
  TP_NEEDS_SITE_GROUPS();
  enum { N = 60000, RING = 32 };
  static void *hot[N];
  void *ring[RING] = {0};
  for (int i = 0; i < N; i++) {
    hot[i] = site_a(48 + (i % 3) * 64);
    int r = i % RING;
    tp_free(ring[r]);
    ring[r] = site_b(48 + (i % 5) * 32); /* short-lived, same size range, freed all the time */
  }
  unsigned ga = group_of_block(hot[N - 1]), gb = group_of_block(ring[0]);
  cr_assert_neq(ga, gb);
  cr_assert_eq(atomic_load(&_tp_groups[ga]->alias), 0, "the hot site joined another group");
  cr_assert_eq(atomic_load(&_tp_groups[gb]->alias), 0, "the temporaries' site joined another group");
  for (int i = 0; i < RING; i++) tp_free(ring[i]);
}

/* Young groups (docs/design.md, "Young sites"): once a site has a group of its own, the group's first
 * slabs share one huge page with other such young groups; once the group holds exclusive_kb
 * of slabs it gets huge pages of its own, and the others stay young. Fake return addresses
 * stand for the sites (_tp_malloc_site); each site allocates until it has grown out of the
 * shared group. */
static unsigned slab_group(void *p) { return group_of_block(p); }

Test(young, site_groups_share_a_huge_page_until_exclusive_kb_then_get_their_own) {
  TP_NEEDS_SITE_GROUPS();
  _tp_opt.exclusive_bytes = (size_t)192 << 10; /* not the default: the option sets the point */
  enum { SITES = 4, MAXN = 40000, GROW = 20000 };
  static void *mine[MAXN], *grow[SITES][GROW];
  static int ngrow[SITES];
  uintptr_t site[SITES];
  unsigned gid[SITES];
  void *first[SITES];
  for (int i = 0; i < SITES; i++) {
    site[i] = 0x500000 + (uintptr_t)i * 64;
    do {
      cr_assert_lt(ngrow[i], GROW, "site %d still on the shared group after %d blocks", i, GROW);
      first[i] = grow[i][ngrow[i]++] = _tp_malloc_site(48, site[i]);
    } while (slab_group(first[i]) == TP_SHARED_GROUP);
    gid[i] = slab_group(first[i]);
    for (int j = 0; j < i; j++) cr_assert_neq(gid[i], gid[j], "sites %d and %d share group %u", i, j, gid[i]);
  }
  /* Four young groups: their first slabs together on one huge page of the shared group. */
  tp_hpage_t *shared = _tp_hpage_of(first[0]);
  cr_assert_eq(shared->owner, TP_SHARED_GROUP, "the first huge page belongs to group %u", shared->owner);
  for (int i = 0; i < SITES; i++) {
    cr_assert_eq(_tp_hpage_of(first[i]), shared, "site %d's first slab is on another huge page", i);
    cr_assert_not(_tp_groups[gid[i]]->exclusive, "site %d's group is exclusive from the start", i);
  }
  /* Site 0 grows: its slabs stay on the shared page while it holds less than exclusive_kb. */
  tp_group_t *g0 = _tp_groups[gid[0]];
  int n = 0;
  while (!g0->exclusive) {
    cr_assert_lt(n, MAXN, "site 0 holds %zu bytes of slabs and is still not exclusive", (size_t)g0->slab_bytes);
    mine[n] = _tp_malloc_site(48, site[0]);
    cr_assert_eq(_tp_hpage_of(mine[n]), shared, "a young group's slab left the shared page (%zu bytes of slabs)",
                 (size_t)g0->slab_bytes);
    n++;
  }
  cr_assert_geq(g0->slab_bytes, _tp_opt.exclusive_bytes, "exclusive at %zu bytes of slabs, before exclusive_kb",
                (size_t)g0->slab_bytes);
  /* Its next slab is on a huge page of its own, which holds nothing of any other group. */
  tp_hpage_t *own = NULL;
  while (own == NULL) {
    cr_assert_lt(n, MAXN, "no slab of site 0 left the shared page after it became exclusive");
    mine[n] = _tp_malloc_site(48, site[0]);
    if (_tp_hpage_of(mine[n]) != shared) own = _tp_hpage_of(mine[n]);
    n++;
  }
  cr_assert_eq(own->owner, gid[0], "site 0's new huge page is owned by group %u, not its own %u", own->owner, gid[0]);
  for (unsigned s = 0; s < TP_SLOTS; s++)
    if (own->slot_slab[s]) cr_assert_eq(own->slot_slab[s]->group, gid[0], "slot %u of its page holds group %u", s, own->slot_slab[s]->group);
  /* The other groups are still young: a new slab of site 1 goes to the shared page. */
  enum { M = 1500 }; /* two slabs at most: less than exclusive_kb */
  static void *other[M];
  for (int i = 0; i < M; i++) {
    other[i] = _tp_malloc_site(48, site[1]);
    cr_assert_eq(_tp_hpage_of(other[i]), shared, "young site 1's slab is not on the shared page");
  }
  cr_assert_not(_tp_groups[gid[1]]->exclusive);
  for (int i = 0; i < M; i++) tp_free(other[i]);
  for (int i = 0; i < n; i++) tp_free(mine[i]);
  for (int i = 0; i < SITES; i++)
    for (int k = 0; k < ngrow[i]; k++) tp_free(grow[i][k]);
}

/* Holes in the shared group (policy.c, _tp_policy_borrow_shared): blocks of a class that sit
 * in the shared group's slabs and were mostly freed are reused by a grown site group's next
 * allocations of that class before it carves slabs of its own; a class without such holes
 * gets the site's own slabs. */
/* Holes of class 112 in the shared group's slabs (six slabs, three blocks in four freed) and
 * site `site` grown into a group of its own, which it returns. */
static unsigned shared_holes_and_a_grown_site(uintptr_t site) {
  enum { N = 6 * 585 }; /* six slabs of class 112 */
  static void *blk[N];
  for (int i = 0; i < N; i++) blk[i] = _tp_alloc(104, 0, TP_SHARED_GROUP, 0, 0);
  cr_assert_eq(slab_group(blk[0]), TP_SHARED_GROUP);
  for (int i = 0; i < N; i++)
    if (i % 4) tp_free(blk[i]); /* three in four freed, spread over every slab */
  unsigned c = _tp_class_of(104);
  tp_tbin_t *b = _tp_tc->groups[TP_SHARED_GROUP]->bins[c];
  _tp_tbin_flush(_tp_tc, TP_SHARED_GROUP, c, b, 0); /* the freed blocks back in their slabs */
  unsigned g = TP_SHARED_GROUP;
  for (int k = 0; k < 64 && g == TP_SHARED_GROUP; k++) g = _tp_site_refill(site, 64 << 10);
  cr_assert_neq(g, TP_SHARED_GROUP, "the site did not grow up");
  return g;
}

Test(site, a_grown_site_fills_the_shared_groups_holes_before_carving_a_slab) {
  TP_NEEDS_SITE_GROUPS();
  uintptr_t site = 0x600000;
  unsigned g = shared_holes_and_a_grown_site(site);
  int in_holes = 0, own = 0;
  for (int i = 0; i < 500; i++) {
    void *p = _tp_malloc_site(104, site);
    if (slab_group(p) == TP_SHARED_GROUP) in_holes++;
    void *q = _tp_malloc_site(200, site); /* no holes of this class: the site's own slabs */
    if (slab_group(q) == g) own++;
  }
  cr_assert_geq(in_holes, 450, "only %d of 500 blocks of class 112 went into the shared group's holes", in_holes);
  cr_assert_geq(own, 450, "only %d of 500 blocks of class 224 came from the site's group %u", own, g);
}

/* A site whose class 112 borrows the shared group's holes while its class 224 comes from its
 * own group: its site slot serves both, the one borrowed class from the shared group's bin and
 * every other from its own group's (mixed bins, alloc.c group_for). Pointed at one group's bins
 * whole, the slot swung at every call of the other class, each a miss (two threads handing
 * batches of 8-128 B over missed on 786 k of 4 M mallocs). */
Test(site, a_site_that_borrows_one_class_keeps_its_other_classes_on_its_own_bins) {
  TP_NEEDS_SITE_GROUPS();
  uintptr_t site = 0x640000;
  unsigned g = shared_holes_and_a_grown_site(site);
  unsigned c112 = _tp_class_of(104), c224 = _tp_class_of(200);
  static void *p[400], *q[400];
  for (int i = 0; i < 400; i++) {
    p[i] = _tp_malloc_site(104, site);
    q[i] = _tp_malloc_site(200, site);
    if (i < 8) continue; /* the first calls of each class miss: bins created, refills */
    tp_site_slot_t *st = &_tp_tc->site[TP_SITE_SLOT(site)];
    cr_assert_eq(st->ra, site);
    cr_assert_eq(st->bins[_tp_fast_index(104)], _tp_tc->groups[TP_SHARED_GROUP]->bins[c112],
                 "call %d: the slot does not send class 112 to the shared group's bin", i);
    cr_assert_eq(st->bins[_tp_fast_index(200)], _tp_tc->groups[g]->bins[c224],
                 "call %d: the slot does not send class 224 to the site's group %u", i, g);
  }
  cr_assert_eq(slab_group(p[399]), TP_SHARED_GROUP);
  cr_assert_eq(slab_group(q[399]), g);
  for (int i = 0; i < 400; i++) tp_free(p[i]), tp_free(q[i]);
}

/* A young site that grows up on a refill (nothing borrowed) gets its new group's bins whole in
 * its slot, not mixed bins: its other classes move with it, and the thread's 16 mixed records
 * stay for split and borrowing sites. */
Test(site, a_site_that_grows_up_points_its_slot_at_its_groups_bins_whole) {
  TP_NEEDS_SITE_GROUPS();
  uintptr_t site = 0x680000;
  enum { N = 4000 };
  static void *p[N];
  int i = 0;
  for (; i < N; i++) {
    p[i] = _tp_malloc_site(48, site);
    if (slab_group(p[i]) != TP_SHARED_GROUP) break;
  }
  cr_assert_lt(i, N, "the site did not grow up in %d blocks", N);
  unsigned g = slab_group(p[i]);
  tp_site_slot_t *st = &_tp_tc->site[TP_SITE_SLOT(site)];
  cr_assert_eq(st->ra, site);
  cr_assert_eq(st->bins, _tp_tc->groups[g]->fast, "the slot of a site grown into group %u is not that group's bins", g);
  cr_assert_not(_tp_tcache_is_mixed(_tp_tc, site, st->bins));
  for (int k = 0; k <= i; k++) tp_free(p[k]);
}

/* Idle groups' room (heap.c, borrow_idle_room; policy.c, _tp_policy_lend): once a site group
 * that got a huge page of its own stops filling, the shared group's next slabs go into that
 * page's free slots, up to 3/4 of it, before the heap takes a new page; never while the site
 * still fills, and never into an explicit group's page. */
static int shared_slabs_on(tp_hpage_t *h) {
  int n = 0;
  for (unsigned s = 0; s < TP_SLOTS; s++)
    if (h->slot_slab[s] && h->slot_slab[s]->first_slot == s && h->slot_slab[s]->group == TP_SHARED_GROUP) n++;
  return n;
}

Test(site, the_shared_group_fills_an_idle_groups_huge_page_before_taking_a_new_one) {
  TP_NEEDS_GROUPS_APART();
  _tp_opt.pool = TP_POOL_THP; /* huge pages from here on, pool or not: 4 KiB-backed pages are not lent */
  _tp_opt.exclusive_bytes = (size_t)64 << 10;
  uintptr_t site = 0x680000;
  enum { MAXN = 20000, S = 4000 };
  static void *mine[MAXN], *sh[S];
  int n = 0;
  tp_hpage_t *own = NULL;
  while (own == NULL) { /* the site grows up, turns exclusive, and takes a page of its own */
    cr_assert_lt(n, MAXN, "the site has no huge page of its own after %d blocks", n);
    mine[n] = _tp_malloc_site(48, site);
    unsigned g = slab_group(mine[n]);
    if (g != TP_SHARED_GROUP && _tp_hpage_of(mine[n])->owner == g) own = _tp_hpage_of(mine[n]);
    n++;
  }
  unsigned gid = own->owner;
  tp_group_t *ex = tp_group_create("explicit");
  void *e = tp_group_malloc(ex, 48);
  tp_hpage_t *exp = _tp_hpage_of(e);
  /* While the site fills: the shared group takes pages of its own (16 KiB blocks, four per slab). */
  int ns = 0;
  for (; ns < 160; ns++) {
    sh[ns] = _tp_alloc(16000, 0, TP_SHARED_GROUP, 0, 0);
    if ((ns & 15) == 0) mine[n++] = _tp_malloc_site(48, site); /* still filling */
  }
  cr_assert_eq(shared_slabs_on(own), 0, "the shared group took room in a page whose group still fills");
  /* The site stops: its page's room goes to the shared group before any new page. */
  atomic_fetch_add(&_tp_refill_clock, TP_LEND_REFILLS + 1);
  unsigned used = own->nused, upto = TP_SLOTS * 3 / 4;
  cr_assert_lt(used, upto, "the site's page holds %u slots already", used);
  size_t backed = 0, after = 0;
  for (int s = 0; s < TP_SRC_COUNT; s++) backed += _tp_heap_ctr.pages_by_source[s];
  for (; ns < S && own->nused < upto; ns++) sh[ns] = _tp_alloc(16000, 0, TP_SHARED_GROUP, 0, 0);
  for (int s = 0; s < TP_SRC_COUNT; s++) after += _tp_heap_ctr.pages_by_source[s];
  cr_assert_eq(own->nused, upto, "the idle group's page holds %u slots, not %u", own->nused, upto);
  cr_assert_eq(shared_slabs_on(own), (int)(upto - used), "%d shared slabs in %u lent slots", shared_slabs_on(own), upto - used);
  cr_assert_leq(after, backed + 1, "the heap took %zu new pages while an idle group's page had room", after - backed);
  cr_assert_eq(own->owner, gid, "the lender no longer owns its page");
  for (int k = 0; k < 64 && ns < S; k++, ns++) sh[ns] = _tp_alloc(16000, 0, TP_SHARED_GROUP, 0, 0); /* past it */
  cr_assert_eq(own->nused, upto, "the shared group took the quarter the lender keeps");
  cr_assert_eq(shared_slabs_on(exp), 0, "the shared group took room in an explicit group's page");
  for (int i = 0; i < ns; i++) tp_free(sh[i]);
  unsigned c = _tp_class_of(16000);
  _tp_tbin_flush(_tp_tc, TP_SHARED_GROUP, c, _tp_tc->groups[TP_SHARED_GROUP]->bins[c], 0);
  cr_assert_eq(shared_slabs_on(own), 0, "the shared slabs stayed in the idle group's page");
  for (int i = 0; i < n; i++) tp_free(mine[i]);
  tp_free(e);
  tp_group_destroy(ex);
}

/* Other groups' holes (heap.c, borrow_holes; policy.c, _tp_policy_fill_holes): while the free
 * slots of the heap's huge pages are at least a page and an eighth of them, a site group that
 * became exclusive puts its slabs into those holes instead of taking a page of its own; an
 * explicit group never does. */
static size_t backed_pages(void) {
  size_t n = 0;
  for (int s = 0; s < TP_SRC_COUNT; s++) n += _tp_heap_ctr.pages_by_source[s];
  return n;
}

static size_t heap_holes(void) {
  size_t holes = 0;
  for (unsigned i = 0; i < TP_MAX_GROUPS; i++)
    if (_tp_groups[i] && !_tp_groups[i]->explicit_) holes += _tp_groups[i]->filler.hpages * TP_SLOTS - _tp_groups[i]->filler.used;
  return holes;
}

Test(site, an_exclusive_group_fills_other_groups_holes_before_taking_a_new_page) {
  TP_NEEDS_GROUPS_APART();
  _tp_opt.pool = TP_POOL_THP;
  _tp_opt.exclusive_bytes = (size_t)64 << 10;
  enum { NB = 4 * 128, MAXN = 40000 }; /* 16 KiB blocks, four per slab: 128 slabs, four pages */
  static void *big[NB], *mine[MAXN];
  for (int i = 0; i < NB; i++) big[i] = _tp_alloc(16000, 0, TP_SHARED_GROUP, 0, 0);
  for (int i = 0; i < NB; i++)
    if (((uintptr_t)big[i] >> TP_SLOT_SHIFT) & 1) tp_free(big[i]); /* the slabs of odd slots emptied */
  unsigned c = _tp_class_of(16000);
  _tp_tbin_flush(_tp_tc, TP_SHARED_GROUP, c, _tp_tc->groups[TP_SHARED_GROUP]->bins[c], 0);
  size_t holes = heap_holes(), pages = backed_pages();
  cr_assert_geq(holes, 64, "only %zu free slots in the heap's pages after emptying 64 slabs", holes);
  /* A site grows up and becomes exclusive: its slabs go into the holes, and no page is taken. */
  uintptr_t site = 0x6c0000;
  int n = 0;
  unsigned g = TP_SHARED_GROUP;
  for (; n < MAXN && (g == TP_SHARED_GROUP || _tp_groups[g]->slab_bytes < 24 * TP_SLOT); n++) {
    mine[n] = _tp_malloc_site(48, site); /* 24 slabs: 40 free slots left, an eighth of 40 pages */
    g = slab_group(mine[n]);
  }
  cr_assert_neq(g, TP_SHARED_GROUP, "the site did not grow up");
  cr_assert(_tp_groups[g]->exclusive, "group %u is not exclusive after %zu bytes of slabs", g, (size_t)_tp_groups[g]->slab_bytes);
  cr_assert_eq(backed_pages(), pages, "the heap took %zu pages while %zu slots were free", backed_pages() - pages, heap_holes());
  cr_assert_eq(_tp_groups[g]->filler.hpages, 0, "the site took %zu pages of its own", _tp_groups[g]->filler.hpages);
  /* An explicit group takes a page of its own all the same. */
  tp_group_t *ex = tp_group_create("explicit");
  void *e = tp_group_malloc(ex, 48);
  cr_assert_eq(_tp_hpage_of(e)->owner, ex->id, "the explicit group's block is on a page of group %u",
               _tp_hpage_of(e)->owner);
  tp_free(e);
  tp_group_destroy(ex);
  for (int i = 0; i < n; i++) tp_free(mine[i]);
  for (int i = 0; i < NB; i++)
    if (!(((uintptr_t)big[i] >> TP_SLOT_SHIFT) & 1)) tp_free(big[i]);
}

/* Site adoption (alloc.c, adopt; policy.c, _tp_policy_adopt_donor): a grown site that keeps
 * refilling while an idle site group holds the blocks this thread freed, back in its slabs,
 * joins that group and reuses them. Half of 40 000 blocks of 2000 B freed at one site and as
 * many allocated at another: the heap must not grow by their 40 MB (it did whenever the idle
 * group's cache of them had been trimmed, and adoption looked only there). */
static TP_NOINLINE void *adopt_site_a(void) {
  void *p = tp_malloc(2000);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}
static TP_NOINLINE void *adopt_site_b(void) {
  void *p = tp_malloc(1999); /* the same class; not 2000, or the two functions are folded into one */
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

Test(site, a_growing_site_reuses_the_blocks_an_idle_site_group_got_back_in_its_slabs) {
  TP_NEEDS_SITE_GROUPS();
  enum { N = 40000 };
  static void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = adopt_site_a();
    cr_assert_not_null(p[i]);
    memset(p[i], 1, 2000);
  }
  for (int i = 1; i < N; i += 2) tp_free(p[i]);
  _tp_tcache_flush_all(_tp_tc); /* the thread's cache of them trimmed: all back in their slabs */
  tp_stats_t before, after;
  tp_stats_get(&before);
  for (int i = 1; i < N; i += 2) {
    p[i] = adopt_site_b();
    cr_assert_not_null(p[i]);
    memset(p[i], 2, 2000);
  }
  tp_stats_get(&after);
  size_t grew = after.mapped_bytes > before.mapped_bytes ? after.mapped_bytes - before.mapped_bytes : 0;
  cr_assert_leq(grew, (size_t)8 << 20, "the heap grew by %zu MiB for %d blocks the other site had freed",
                grew >> 20, N / 2);
  for (int i = 0; i < N; i++) tp_free(p[i]);
}
