/* Placement: groups keep their objects on their own pages, packed onto few huge pages.
 * Each Criterion test runs in a fresh process, so "a fresh heap" holds. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
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

static __attribute__((noinline)) void *site_a(size_t n) { return tp_malloc(n); }
static __attribute__((noinline)) void *site_b(size_t n) { return tp_malloc(n); }

Test(site, objects_from_two_call_sites_never_share_a_4k_page) {
  enum { N = 3000 };
  static void *a[N], *b[N];
  for (int i = 0; i < N; i++) {
    a[i] = site_a(48);
    b[i] = site_b(48);
  }
  cr_assert_not(pages_shared(a, N, 48, b, N, 48), "site A and site B blocks share a 4 KiB page");
  for (int i = 0; i < N; i++) {
    tp_free(a[i]);
    tp_free(b[i]);
  }
}

Test(site, a_hot_site_is_packed_apart_from_interleaved_cold_buffers) {
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
  tp_stats_t before, after;
  tp_group_t *g = tp_group_create("arena");
  tp_stats_get(&before);
  for (int i = 0; i < 20000; i++) cr_assert_not_null(tp_group_malloc(g, 100 + i % 300));
  for (int i = 0; i < 4; i++) cr_assert_not_null(tp_group_malloc(g, (size_t)3 << 20));
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  cr_assert_eq(st.objects, 20004);
  tp_group_destroy(g);
  tp_stats_get(&after);
  /* The pages are back (retained empty or returned); a new group starts from nothing. */
  tp_group_t *g2 = tp_group_create("again");
  tp_group_stats(g2, &st);
  cr_assert_eq(st.objects, 0);
  cr_assert_eq(st.huge_pages, 0);
  void *p = tp_group_malloc(g2, 100);
  cr_assert_not_null(p);
  tp_free(p);
  tp_group_destroy(g2);
  (void)before;
  (void)after;
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

Test(group, a_pointer_that_is_not_a_group_aborts, .signal = SIGABRT) {
  static char fake[4096];
  void *p = tp_group_malloc((tp_group_t *)fake, 10);
  (void)p;
}

Test(group, null_group_means_the_default_placement) {
  void *p = tp_group_malloc(NULL, 10);
  cr_assert(tp_owns(p));
  tp_free(p);
}
