/* Under LD_PRELOAD: once two call sites have shown that they keep memory (their first blocks
 * share slabs with other young sites; WARM blocks each is well past that), their blocks land
 * on disjoint 4 KiB pages, and one site's blocks are packed onto at most
 * ceil(bytes / 2 MiB) + 1 huge pages. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 50000
#define WARM 5000
static void *a[N], *b[N], *wa[WARM], *wb[WARM];

/* noipa: no identical-code folding of the two; the asm: no tail jump (see test_placement.c). */
static __attribute__((noipa)) void *hot(size_t n) {
  void *p = malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}
static __attribute__((noipa)) void *cold(size_t n) {
  void *p = malloc(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

static int cmp(const void *x, const void *y) {
  uintptr_t p = *(const uintptr_t *)x, q = *(const uintptr_t *)y;
  return p < q ? -1 : p > q;
}

int main(void) {
  size_t bytes = 0;
  for (int i = 0; i < WARM; i++) {
    wa[i] = hot(40 + (i % 3) * 60);
    wb[i] = cold(40);
  }
  for (int i = 0; i < N; i++) {
    a[i] = hot(40 + (i % 3) * 60);
    bytes += malloc_usable_size(a[i]);
    b[i] = cold(40);
  }
  static uintptr_t pa[N], ha[N];
  for (int i = 0; i < N; i++) {
    pa[i] = (uintptr_t)a[i] >> 12;
    ha[i] = (uintptr_t)a[i] >> 21;
  }
  qsort(pa, N, sizeof *pa, cmp);
  qsort(ha, N, sizeof *ha, cmp);
  for (int i = 0; i < N; i++) {
    uintptr_t first = (uintptr_t)b[i] >> 12, last = ((uintptr_t)b[i] + 39) >> 12;
    if (bsearch(&first, pa, N, sizeof *pa, cmp) || bsearch(&last, pa, N, sizeof *pa, cmp)) {
      fprintf(stderr, "preload_sites: FAIL: blocks of two sites share the 4 KiB page of %p\n", b[i]);
      return 1;
    }
  }
  size_t huge = 0;
  for (int i = 0; i < N; i++) huge += (i == 0 || ha[i] != ha[i - 1]);
  size_t floor_ = (bytes + (2u << 20) - 1) / (2u << 20);
  printf("hot site: %zu bytes on %zu huge pages (floor %zu)\n", bytes, huge, floor_);
  if (huge > floor_ + 1) {
    fprintf(stderr, "preload_sites: FAIL: %zu huge pages > floor %zu + 1\n", huge, floor_);
    return 1;
  }
  for (int i = 0; i < N; i++) {
    free(a[i]);
    free(b[i]);
  }
  for (int i = 0; i < WARM; i++) {
    free(wa[i]);
    free(wb[i]);
  }
  printf("ok\n");
  return 0;
}
