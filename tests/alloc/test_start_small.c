/* Start small, through libtlbpack.a: under pool:auto the heap is on 4 KiB pages until the runs
 * carved in it reach start_kb, and its start pages are collapsed into huge pages only as the
 * policy allows (heap.c; policy.c, _tp_policy_promote_start). Each Criterion test runs in a
 * fresh process. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "modes.h"
#include "tlbpack.h"

/* Start small: a process with well under 1 MiB live takes no huge page at all (pool:auto). */
Test(start_small, a_small_heap_takes_no_huge_page) {
  TP_NEEDS_SMALL_HEAP_ON_4K();
  enum { N = 4000 };
  static void *p[N];
  size_t bytes = 0;
  for (int i = 0; i < N; i++) {
    p[i] = tp_malloc(16 + (size_t)(i * 37) % 400);
    bytes += tp_malloc_usable_size(p[i]);
  }
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_lt(bytes, (size_t)1 << 20);
  cr_assert_eq(st.pages_hugetlbfs + st.pages_thp, 0, "%zu huge pages for %zu bytes live (start_kb %zu)",
               st.pages_hugetlbfs + st.pages_thp, bytes, _tp_opt.start_bytes >> 10);
  cr_assert_gt(st.pages_4k, 0);
  for (int i = 0; i < N; i++) tp_free(p[i]);
}

/* Past start_kb the heap takes huge pages, and the pages it started on do not stay 4 KiB pages
 * unless the kernel refused to collapse them (then they are counted as 4 KiB pages, not lost).
 * The heap takes start hpages while what it has carved is under start_kb, so it holds as many
 * as start_kb of runs needs: with 300 KiB runs (5 slots, 6 to an hpage) that is one more than
 * start_kb / 2 MiB. */
Test(start_small, past_start_kb_new_memory_is_on_huge_pages) {
  TP_NEEDS_POOL_AUTO();
  TP_NEEDS_NO_THREAD_GROUPS();
  size_t start = _tp_opt.start_bytes;
  enum { N = 64 };
  static void *p[N];
  for (int i = 0; i < N; i++) p[i] = tp_malloc(300 << 10); /* medium runs: 19.2 MiB */
  tp_stats_t st;
  tp_stats_get(&st);
  size_t huge = st.pages_hugetlbfs + st.pages_thp;
  cr_assert_gt(huge, 0, "no huge page past start_kb (%zu KiB): %zu 4 KiB hpages", start >> 10, st.pages_4k);
  size_t run = 5 * TP_SLOT, per_hpage = TP_SLOTS / 5 * run;
  /* Each start hpage is one or the other; the site's sample past start_kb (runs.c: a medium run
   * in an hpage of its own on 4 KiB pages) is neither. */
  size_t nstart = _tp_heap_ctr.promoted + st.pages_4k - _tp_heap_ctr.large_4k;
  cr_assert_geq(nstart * per_hpage, start, "%zu start hpages (%zu promoted, %zu 4 KiB) hold less than start_kb",
                nstart, _tp_heap_ctr.promoted, st.pages_4k);
  cr_assert_lt((nstart - 1) * per_hpage, start, "%zu start hpages (%zu promoted, %zu 4 KiB): one taken past start_kb",
               nstart, _tp_heap_ctr.promoted, st.pages_4k);
  for (int i = 0; i < N; i++) tp_free(p[i]);
}

/* start_kb counts the bytes large blocks ask for, not the 2 MiB pages they round up to: three
 * blocks of a quarter of start_kb and 256 KiB (3 hpages each for 16 MiB) ask for under start_kb
 * and stay on 4 KiB pages, where their 9 hpages, 18 MiB, would have put the third on huge pages
 * (xz -3's buffers of 6.8 and 8.7 MB: 4 and 5 hpages, its 8.7 MB hash table resident whole). */
Test(start_small, large_blocks_count_the_bytes_they_ask_for) {
  TP_NEEDS_POOL_AUTO();
  size_t start = _tp_opt.start_bytes, blk = start / 4 + (256 << 10);
  size_t nh = (blk + TP_HPAGE - 1) / TP_HPAGE;
  if (start < ((size_t)4 << 20) || 3 * nh * TP_HPAGE <= start) cr_skip_test("start_kb %zu KiB: no such blocks", start >> 10);
  void *p[3];
  for (int i = 0; i < 3; i++) {
    p[i] = tp_malloc(blk);
    cr_assert_not_null(p[i]);
    memset(p[i], 1, 4096);
  }
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_eq(st.pages_hugetlbfs + st.pages_thp, 0, "%zu huge pages for 3 blocks of %zu KiB (start_kb %zu)",
               st.pages_hugetlbfs + st.pages_thp, blk >> 10, start >> 10);
  cr_assert_geq(st.pages_4k, 3 * nh);
  for (int i = 0; i < 3; i++) tp_free(p[i]);
}

/* Start pages follow carved bytes, not backed hpages: groups that each take an hpage of their
 * own stay on 4 KiB pages while together they hold under start_kb. */
Test(start_small, groups_of_their_own_under_start_kb_take_no_huge_page) {
  TP_NEEDS_SMALL_HEAP_ON_4K();
  enum { G = 6, N = 5 };
  tp_group_t *g[G];
  static void *p[G][N];
  for (int i = 0; i < G; i++) {
    g[i] = tp_group_create("own");
    cr_assert_not_null(g[i]);
    for (int j = 0; j < N; j++) p[i][j] = tp_group_malloc(g[i], 64 << 10); /* 5 x 64 KiB a group */
  }
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_eq(st.pages_hugetlbfs + st.pages_thp, 0, "%zu huge pages for %d groups of %d KiB (start_kb %zu)",
               st.pages_hugetlbfs + st.pages_thp, G, N * 64, _tp_opt.start_bytes >> 10);
  cr_assert_geq(st.pages_4k, 2, "%zu hpages: the groups did not take hpages of their own", st.pages_4k);
  for (int i = 0; i < G; i++) {
    for (int j = 0; j < N; j++) tp_free(p[i][j]);
    tp_group_destroy(g[i]);
  }
}

/* A heap of many groups starts on many sparse pages; once it grows, collapsing them adds at
 * most 1/8 of the heap's backed bytes, however many there are. */
Test(start_small, sparse_start_pages_of_many_groups_add_at_most_an_eighth_when_collapsed) {
  TP_NEEDS_POOL_AUTO();
  enum { G = 24, N = 40 };
  tp_group_t *g[G];
  tp_hpage_t *page[G];
  static void *own[G][4], *big[N];
  for (int i = 0; i < G; i++) {
    g[i] = tp_group_create("sparse");
    for (int j = 0; j < 4; j++) memset(own[i][j] = tp_group_malloc(g[i], 60 << 10), 1, 60 << 10); /* 4 slots of 32 */
    page[i] = _tp_hpage_of(own[i][0]);
    cr_assert(page[i]->start, "group %d's page is not a start page", i);
  }
  for (int n = 0; n < N; n++) memset(big[n] = tp_malloc((size_t)4 << 20), 1, (size_t)4 << 20); /* 160 MiB more */
  size_t backed = (size_t)G * TP_HPAGE + (size_t)N * (4 << 20), added = 0; /* and the shared page */
  int collapsed = 0;
  for (int i = 0; i < G; i++)
    if (!page[i]->start) collapsed++, added += (size_t)(TP_SLOTS - page[i]->nused) * TP_SLOT;
  cr_assert_gt(collapsed, 0, "no sparse start page was collapsed on a %zu MiB heap", backed >> 20);
  cr_assert_leq(added * 8, backed + TP_HPAGE, "%d sparse pages collapsed, adding %zu KiB to a %zu MiB heap",
                collapsed, added >> 10, backed >> 20);
  cr_assert_lt(collapsed, G, "all %d sparse start pages were collapsed", G);
  for (int n = 0; n < N; n++) tp_free(big[n]);
  for (int i = 0; i < G; i++) {
    for (int j = 0; j < 4; j++) tp_free(own[i][j]);
    tp_group_destroy(g[i]);
  }
}

/* A sparse start hpage stays on 4 KiB pages while the heap is small, and is collapsed (tried:
 * its start mark goes) once its free room is 1/32 of the heap, however little of it is used;
 * a page with nothing touched is not (test_policy.c). The heap is what is in memory, not the
 * bytes backed: beside large blocks the program asked for and has not touched (xz's buffers)
 * the page stays as it is, and a collapse would add its untouched 2 MiB to a small process. */
Test(start_small, a_sparse_start_page_is_collapsed_once_its_free_room_is_1_32_of_the_heap_in_memory) {
  TP_NEEDS_POOL_AUTO();
  _tp_opt.start_bytes = (size_t)4 << 20; /* two start hpages */
  char *small = tp_malloc(100);
  memset(small, 1, 100);
  tp_hpage_t *h = _tp_hpage_of(small);
  cr_assert(h->start && h->source == TP_SRC_4K, "the first block is not on a start hpage");
  enum { N = 48, BIG = 4 << 20 };
  static void *big[N];
  int n = 0;
  while (n < 4) memset(big[n++] = tp_malloc(BIG), 1, BIG); /* 16 MiB more */
  cr_assert(h->start, "a sparse start hpage was collapsed on a 20 MiB heap");
  while (n < 40) big[n++] = tp_malloc(BIG); /* 144 MiB backed, not touched */
  cr_assert(h->start, "a sparse start hpage was collapsed on a 20 MiB heap in memory (%zu MiB backed)",
            (size_t)n * BIG >> 20);
  for (int i = 4; i < n; i++) memset(big[i], 1, BIG);
  while (n < N) memset(big[n++] = tp_malloc(BIG), 1, BIG); /* 196 MiB, all touched */
  cr_assert_not(h->start, "the sparse start hpage was not collapsed on a 196 MiB heap");
  cr_assert(h->source == TP_SRC_THP || h->source == TP_SRC_4K);
  for (int i = 0; i < N; i++) tp_free(big[i]);
  tp_free(small);
}

/* What a start page holds is what the program touched, not the slots carved: a page carved
 * 3/4 full of blocks never written stays on 4 KiB pages when the heap grows (collapsed, all of
 * it would become resident). Medium blocks (5 slots each): a small block carries its tag from
 * the time it is cached, so the allocator writes the first page of each. */
Test(start_small, a_start_page_carved_3_4_full_but_untouched_is_not_collapsed) {
  TP_NEEDS_POOL_AUTO();
  _tp_opt.start_bytes = (size_t)4 << 20;
  enum { K = 6, N = 4 };
  static void *blk[K], *big[N];
  tp_group_t *g = tp_group_create("carved");
  cr_assert_not_null(g);
  for (int i = 0; i < K; i++) blk[i] = tp_group_malloc(g, 300 << 10); /* 5 slots each, not written */
  tp_hpage_t *h = _tp_hpage_of(blk[0]);
  cr_assert(h->start && h->source == TP_SRC_4K, "the first block is not on a start hpage");
  cr_assert_geq(h->nused, TP_SLOTS * 3 / 4, "the start page has %u slots carved", h->nused);
  for (int n = 0; n < N; n++) big[n] = tp_malloc((size_t)4 << 20); /* past start_kb: 16 MiB more */
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_gt(st.pages_hugetlbfs + st.pages_thp, 0, "the heap took no huge page past start_kb");
  cr_assert(h->start && h->source == TP_SRC_4K, "a start page carved %u/32 but untouched was collapsed", h->nused);
  for (int n = 0; n < N; n++) tp_free(big[n]);
  for (int i = 0; i < K; i++) tp_free(blk[i]);
  tp_group_destroy(g);
}

/* The blocks of one call site, `n` of `size` bytes each, written whole. Not inlined: one site. */
__attribute__((noinline)) static void site_blocks(void **p, int n, size_t size) {
  for (int i = 0; i < n; i++) {
    p[i] = tp_malloc(size);
    cr_assert_not_null(p[i]);
    memset(p[i], 1, size);
  }
}

/* A start page the kernel would not collapse (refused: its start mark counts the tries), where
 * a test cannot tell the rule from the kernel. */
static void skip_if_collapse_refused(const tp_hpage_t *h) {
  if (h->source == TP_SRC_4K && h->start > 1) cr_skip_test("the kernel refused MADV_COLLAPSE (%u tries)", h->start);
}

/* The rule start-small keeps past start_kb: no slot run is carved on an hpage on 4 KiB pages
 * with a quarter of it or more touched (128 TLB entries of 4 KiB for what one huge page holds),
 * but the sparse buffers' group's and an explicit group's first. A site that built a structure
 * on its start page while the heap was young and goes on building it after the heap passed
 * start_kb has that page collapsed as the first run past start_kb is carved on it: the data it
 * reads, old and new, is on huge pages. Without the rule the new slabs filled the start page
 * on 4 KiB pages, one TLB entry each 4 KiB. */
Test(start_small, past_start_kb_a_start_page_a_run_is_carved_on_is_collapsed_first) {
  TP_NEEDS_POOL_AUTO();
  size_t start = _tp_opt.start_bytes;
  if (start < ((size_t)4 << 20)) cr_skip_test("start_kb %zu KiB: no start page of 1 MiB", start >> 10);
  enum { N = 8000 };
  static void *before[N], *after[N];
  site_blocks(before, N, 128); /* 1 MiB on start pages */
  void *big = tp_malloc(start); /* the heap passes start_kb */
  cr_assert_not_null(big);
  site_blocks(after, N, 128);
  for (int i = 0; i < N; i++) {
    tp_hpage_t *a = _tp_hpage_of(after[i]);
    skip_if_collapse_refused(a);
    cr_assert_neq(a->source, TP_SRC_4K, "block %d allocated past start_kb is on 4 KiB pages (%u slots carved there)", i,
                  a->nused);
  }
  for (int i = 0; i < N; i++) {
    tp_hpage_t *h = _tp_hpage_of(before[i]);
    skip_if_collapse_refused(h);
    size_t touched = _tp_os_hooks.resident((void *)h->addr, TP_HPAGE);
    cr_assert(h->source != TP_SRC_4K || touched * 4 < TP_HPAGE,
              "block %d allocated before start_kb is on 4 KiB pages with %zu KiB of them touched", i, touched >> 10);
  }
  tp_live_4k_t l;
  _tp_stats_live_4k(&l);
  cr_assert_leq(l.bytes, (size_t)TP_HPAGE / 4, "%zu bytes live on %zu hpages on 4 KiB pages past start_kb", l.bytes,
                l.hpages);
  for (int i = 0; i < N; i++) tp_free(before[i]), tp_free(after[i]);
  tp_free(big);
}

/* Under start_kb, a group that fills a start page (3/4 of it touched) with at least 4 MiB
 * carved in the heap grows up alone: its filled page is collapsed and its next hpages are huge
 * pages, while the heap is still young. A heap of 6 MiB of one site's 256-byte blocks is a
 * hot set of 6 MiB: 1536 TLB entries on 4 KiB pages, 3 on huge pages. */
Test(start_small, a_group_that_fills_a_start_page_under_start_kb_takes_huge_pages) {
  TP_NEEDS_POOL_AUTO();
  TP_NEEDS_GROUPS_APART(); /* the shared group, all there is under group:none, starts small whole */
  size_t start = _tp_opt.start_bytes;
  if (start < ((size_t)8 << 20)) cr_skip_test("start_kb %zu KiB: a 6 MiB heap is past it", start >> 10);
  enum { N = (6 << 20) / 256 };
  static void *p[N];
  site_blocks(p, N, 256);
  cr_assert(_tp_heap_starting(0), "a 6 MiB heap is past start_kb (%zu KiB)", start >> 10);
  size_t on_4k = 0;
  for (int i = 0; i < N; i += 16) { /* one block each 4 KiB */
    tp_hpage_t *h = _tp_hpage_of(p[i]);
    skip_if_collapse_refused(h);
    on_4k += h->source == TP_SRC_4K;
  }
  /* What may be left on 4 KiB pages: the site's first blocks, on the shared start page it
   * filled while young, when that page is under a quarter touched. */
  cr_assert_lt(on_4k, TP_SLOTS * TP_SLOT / 4096 / 4, "%zu of %d 4 KiB pages of one site's 6 MiB are on 4 KiB pages",
               on_4k, N / 16);
  for (int i = 0; i < N; i++) tp_free(p[i]);
}

/* ...and a small heap does not: 3 MiB of one site's blocks (a full start page, under 4 MiB
 * carved) stays on 4 KiB pages, as python3 -c pass does with its 2.7 MB peak. */
Test(start_small, a_group_that_fills_a_start_page_in_a_heap_under_4_mib_takes_no_huge_page) {
  TP_NEEDS_POOL_AUTO();
  if (_tp_opt.start_bytes < ((size_t)4 << 20)) cr_skip_test("start_kb %zu KiB: a 3 MiB heap is past it", _tp_opt.start_bytes >> 10);
  enum { N = (3 << 20) / 256 };
  static void *p[N];
  site_blocks(p, N, 256);
  tp_stats_t st;
  tp_stats_get(&st);
  cr_assert_eq(st.pages_hugetlbfs + st.pages_thp, 0, "%zu huge pages for one site's 3 MiB",
               st.pages_hugetlbfs + st.pages_thp);
  for (int i = 0; i < N; i++) tp_free(p[i]);
}

/* An explicit group grows up alone as a site group does: in a young heap with 4 MiB carved,
 * the group's first hpage (on 4 KiB pages, collapsed once full) is followed by huge pages, not
 * by start pages. A plan's ordered group of one hot site holding 3 MB of records had its
 * second hpage on 4 KiB pages: 264 TLB entries for a floor of 2 (commit 7b1bd6d). */
Test(start_small, an_explicit_group_that_fills_its_first_page_in_a_young_heap_takes_huge_pages) {
  TP_NEEDS_POOL_AUTO();
  if (_tp_opt.start_bytes < ((size_t)8 << 20)) cr_skip_test("start_kb %zu KiB: a 7 MiB heap is past it", _tp_opt.start_bytes >> 10);
  void *big = tp_malloc((size_t)4 << 20); /* 4 MiB carved: past the bound of a group growing up */
  cr_assert_not_null(big);
  tp_group_t *g = tp_group_create_arena("records");
  cr_assert_not_null(g);
  enum { N = (3 << 20) / 256 };
  static void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = tp_group_malloc(g, 256);
    cr_assert_not_null(p[i]);
    memset(p[i], 1, 256);
  }
  cr_assert(_tp_heap_starting(0), "a 7 MiB heap is past start_kb (%zu KiB)", _tp_opt.start_bytes >> 10);
  size_t on_4k = 0;
  for (int i = 0; i < N; i += 16) { /* one block each 4 KiB */
    tp_hpage_t *h = _tp_hpage_of(p[i]);
    skip_if_collapse_refused(h);
    on_4k += h->source == TP_SRC_4K;
  }
  cr_assert_eq(on_4k, 0, "%zu of the group's %d 4 KiB pages are on 4 KiB pages", on_4k, N / 16);
  tp_group_destroy(g);
  tp_free(big);
}

/* A group grows up at its start page's carves too, not only when it needs a new hpage: a site
 * whose page was 3/4 carved and written before the heap had carved 4 MiB, and that then goes on
 * carving slabs in the room left on that page, has the page collapsed once the heap is past
 * 8 MiB. Four threads building 3 MB of records in an 8 MiB heap needed 727-818 TLB
 * entries in some runs (the page never got a new hpage after the heap passed 4 MiB), 3 now. */
Test(start_small, a_group_whose_start_page_filled_early_grows_up_at_its_next_carve) {
  TP_NEEDS_POOL_AUTO();
  TP_NEEDS_GROUPS_APART();
  if (_tp_opt.start_bytes < ((size_t)12 << 20)) cr_skip_test("start_kb %zu KiB: a 9 MiB heap is past it", _tp_opt.start_bytes >> 10);
  enum { N1 = (15 << 20) / 8 / 256, N2 = 1024 }; /* 1.875 MiB, then 256 KiB more */
  static void *p[N1 + N2];
  site_blocks(p, N1, 256);
  tp_hpage_t *h = _tp_hpage_of(p[N1 - 1]);
  cr_assert_eq(h->source, TP_SRC_4K, "the site's page is not a start page (source %u)", h->source);
  cr_assert(h->nused >= TP_SLOTS * 3 / 4 && h->nused < TP_SLOTS, "the site's page has %u slots carved, want 48-63", h->nused);
  cr_assert_lt(_tp_heap_used_bytes, (size_t)4 << 20, "the heap carved %zu KiB before the big block", _tp_heap_used_bytes >> 10);
  void *big = tp_malloc((size_t)7 << 20); /* the heap passes 8 MiB carved, still under start_kb */
  cr_assert_not_null(big);
  site_blocks(p + N1, N2, 256);
  int on_h = 0;
  for (int i = N1; i < N1 + N2; i++) on_h += _tp_hpage_of(p[i]) == h;
  cr_assert_gt(on_h, 0, "no block of the site's next slabs is on its page");
  skip_if_collapse_refused(h);
  cr_assert_neq(h->source, TP_SRC_4K, "the site's filled page is on 4 KiB pages (%u slots carved)", h->nused);
  for (int i = 0; i < N1 + N2; i++) tp_free(p[i]);
  tp_free(big);
}
