/* Sizes at and around every boundary an allocator has (powers of two and their neighbours,
 * 4 KiB pages, 64 KiB slots, 256 KiB, 2 MiB huge pages and runs of them), through malloc,
 * calloc, realloc (growing and shrinking across each boundary, contents kept), posix_memalign /
 * aligned_alloc / memalign (alignments 1 B .. 4 MiB) and malloc_usable_size. Every byte of
 * every block is written and checked; no two live blocks may overlap.
 *
 * usage: edge_sizes [ROUNDS]
 */
#include "tp_shim.h"
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { if (failures++ < 20) { printf("edge_sizes: FAIL: " __VA_ARGS__); printf("\n"); } } } while (0)

static size_t sizes[4096];
static int nsizes;

static void add(size_t s) { if (nsizes < 4096) sizes[nsizes++] = s; }

static void build_sizes(void) {
  add(0);
  for (int b = 0; b <= 22; b++) {
    size_t p = (size_t)1 << b;
    for (long d = -17; d <= 17; d += (b < 5 ? 1 : 8)) {
      long s = (long)p + d;
      if (s > 0) add((size_t)s);
    }
  }
  size_t marks[] = {4096, 65536, 256 << 10, (2 << 20) - 65536, 2 << 20, 4 << 20, 6 << 20, 10 << 20};
  for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
    for (long d = -2; d <= 2; d++) add((size_t)((long)marks[i] + d));
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 31 + (i >> 8));
}
static size_t check(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i * 31 + (i >> 8))) return i;
  return (size_t)-1;
}

typedef struct { unsigned char *p; size_t n; } live_t;
static int cmp_live(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const live_t *)a)->p, y = (uintptr_t)((const live_t *)b)->p;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 1;
  build_sizes();
  unsigned long long checked = 0;
  for (int r = 0; r < rounds; r++) {
    /* All sizes live at once: written, checked, no overlaps. */
    live_t *lv = calloc((size_t)nsizes, sizeof *lv);
    for (int i = 0; i < nsizes; i++) {
      size_t s = sizes[i];
      unsigned char *p = (i % 3 == 0) ? calloc(1, s) : malloc(s);
      CHECK(p != NULL, "%s(%zu) returned NULL", i % 3 ? "malloc" : "calloc", s);
      if (!p) continue;
      if (i % 3 == 0)
        for (size_t k = 0; k < s; k++) if (p[k]) { CHECK(0, "calloc(1, %zu) byte %zu not zero", s, k); break; }
      CHECK(s < 16 || (uintptr_t)p % 16 == 0, "malloc(%zu) = %p is not 16-byte aligned", s, (void *)p);
      size_t u = T_USABLE(p);
      CHECK(u >= s, "malloc_usable_size(malloc(%zu)) = %zu", s, u);
      fill(p, u, (unsigned)i);  /* the whole usable size is the program's to write */
      lv[i].p = p;
      lv[i].n = u;
    }
    for (int i = 0; i < nsizes; i++)
      if (lv[i].p) {
        size_t bad = check(lv[i].p, lv[i].n, (unsigned)i);
        CHECK(bad == (size_t)-1, "block of %zu (usable %zu) changed at byte %zu", sizes[i], lv[i].n, bad);
        checked += lv[i].n;
      }
    qsort(lv, (size_t)nsizes, sizeof *lv, cmp_live);
    for (int i = 1; i < nsizes; i++)
      if (lv[i - 1].p && lv[i].p)
        CHECK(lv[i - 1].p + lv[i - 1].n <= lv[i].p, "blocks %p (+%zu) and %p overlap", (void *)lv[i - 1].p, lv[i - 1].n,
              (void *)lv[i].p);
    for (int i = 0; i < nsizes; i++) free(lv[i].p);
    free(lv);

    /* realloc across every boundary, up and down, contents kept. */
    unsigned char *p = NULL;
    size_t have = 0;
    for (int step = 0; step < 2 * nsizes; step++) {
      int i = step < nsizes ? step : 2 * nsizes - 1 - step;
      size_t s = sizes[i];
      if (s == 0) continue;
      unsigned char *q = realloc(p, s);
      CHECK(q != NULL, "realloc(%p, %zu) returned NULL", (void *)p, s);
      if (!q) break;
      size_t keep = have < s ? have : s;
      size_t bad = check(q, keep, 7);
      CHECK(bad == (size_t)-1, "realloc from %zu to %zu lost byte %zu", have, s, bad);
      checked += keep;
      fill(q, s, 7);
      p = q;
      have = s;
    }
    free(p);

    /* Aligned allocations: every power-of-two alignment, several sizes. */
    for (size_t a = 1; a <= ((size_t)4 << 20); a <<= 1) {
      size_t ss[] = {1, a / 2 + 1, a, a + 1, 3 * a + 5, 100000};
      for (size_t k = 0; k < sizeof ss / sizeof *ss; k++) {
        size_t s = ss[k];
        if (a >= sizeof(void *)) {
          void *x = NULL;
          int e = T_MEMALIGN(&x, a, s);
          CHECK(e == 0 && x && (uintptr_t)x % a == 0, "posix_memalign(%zu, %zu) = %d, %p", a, s, e, x);
          if (x) { memset(x, 0xab, s); CHECK(T_USABLE(x) >= s, "usable size of posix_memalign(%zu, %zu)", a, s); free(x); }
        }
#ifndef TP_DIRECT
        void *y = memalign(a, s);
        CHECK(y && (uintptr_t)y % a == 0, "memalign(%zu, %zu) = %p", a, s, y);
        if (y) { memset(y, 0xcd, s); free(y); }
        if (s % a == 0) {
          void *z = aligned_alloc(a, s);
          CHECK(z && (uintptr_t)z % a == 0, "aligned_alloc(%zu, %zu) = %p", a, s, z);
          free(z);
        }
#endif
      }
    }
    void *bad = NULL;
    CHECK(T_MEMALIGN(&bad, 24, 100) == EINVAL, "posix_memalign with alignment 24 did not return EINVAL");
    CHECK(T_MEMALIGN(&bad, 0, 100) == EINVAL, "posix_memalign with alignment 0 did not return EINVAL");
    /* Impossible sizes, through volatiles so that the compiler does not reject them. */
    volatile size_t huge1 = SIZE_MAX - 4096, half = SIZE_MAX / 2, huge2 = SIZE_MAX - 100;
    errno = 0;
    CHECK(T_MALLOC(huge1) == NULL && errno == ENOMEM, "malloc(SIZE_MAX - 4096) did not fail with ENOMEM");
    errno = 0;
    CHECK(T_CALLOC(half, 3) == NULL && errno == ENOMEM, "calloc overflow did not fail with ENOMEM");
    errno = 0;
    unsigned char *volatile big = T_MALLOC(16);
    if (big) {
      big[15] = 5;
      void *r = T_REALLOC(big, huge2);
      CHECK(r == NULL && errno == ENOMEM, "realloc to SIZE_MAX - 100 did not fail with ENOMEM");
      CHECK(big[15] == 5, "a failed realloc changed the block");
      T_FREE(r ? r : big);
    }
  }
  printf("edge_sizes: %d rounds, %d sizes from 0 to %zu, %llu bytes checked, %d failures\n", rounds, nsizes,
         sizes[nsizes - 1], checked, failures);
  return failures ? 1 : 0;
}
