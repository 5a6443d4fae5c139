/* realloc growing, shrinking and moving medium and large blocks (256 KiB to 6 MiB) in several
 * threads at once, so that in-place growth (heap.c, _tp_run_grow) races with other threads'
 * slabs, runs and frees in the same hpages. Every block carries a pattern of its own, checked
 * before and after each realloc; any byte out of place aborts with the thread, slot and offset.
 * Usage: it_realloc_grow THREADS ITERATIONS
 */
#include "tp_shim.h"
#include <pthread.h>
#include <stdint.h>

static long iters;

static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

enum { SLOTS = 16, STRIDE = 4093 };

static void check(const unsigned char *p, size_t n, unsigned char tag, long t, int k, const char *when) {
  for (size_t i = 0; i < n; i += STRIDE)
    if (p[i] != (unsigned char)(tag + i)) T_DIE("realloc_grow: thread %ld slot %d: byte %zu changed %s", t, k, i, when);
}

static void *work(void *arg) {
  long t = (long)(uintptr_t)arg;
  uint64_t x = 12345 + (uint64_t)t;
  unsigned char *p[SLOTS] = {0}, tag[SLOTS] = {0};
  size_t sz[SLOTS] = {0};
  for (long it = 0; it < iters; it++) {
    int k = (int)(rnd(&x) % SLOTS);
    uint64_t r = rnd(&x) % 100;
    size_t n;
    if (r < 40) n = sz[k] + rnd(&x) % (256u << 10);            /* grow a little */
    else if (r < 60) n = rnd(&x) % (6u << 20) + 1;             /* any size up to 6 MiB */
    else if (r < 70) n = sz[k] / 2 + 1;                        /* shrink */
    else if (r < 75) {                                         /* free */
      check(p[k], sz[k], tag[k], t, k, "before free");
      free(p[k]);
      p[k] = NULL, sz[k] = 0;
      continue;
    } else n = rnd(&x) % (3u << 20) + (256u << 10);            /* medium or large */
    if (n > (8u << 20)) n = 1u << 20;
    check(p[k], sz[k], tag[k], t, k, "before realloc");
    unsigned char *q = realloc(p[k], n);
    if (q == NULL) T_DIE("realloc_grow: realloc of %zu bytes failed", n);
    check(q, sz[k] < n ? sz[k] : n, tag[k], t, k, "by realloc");
    tag[k] = (unsigned char)rnd(&x);
    for (size_t i = 0; i < n; i += STRIDE) q[i] = (unsigned char)(tag[k] + i);
    q[n - 1] = 0; /* the last byte is the caller's */
    p[k] = q, sz[k] = n - 1;
  }
  for (int k = 0; k < SLOTS; k++) {
    check(p[k], sz[k], tag[k], t, k, "at the end");
    free(p[k]);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 4;
  iters = argc > 2 ? atol(argv[2]) : 4000;
  if (nt < 1 || nt > 64 || iters < 1) T_DIE("usage: it_realloc_grow THREADS ITERATIONS");
  pthread_t th[64];
  for (long i = 0; i < nt; i++)
    if (pthread_create(&th[i], NULL, work, (void *)(uintptr_t)i) != 0) T_DIE("realloc_grow: cannot start a thread");
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
  printf("realloc_grow: %d threads x %ld reallocs, contents kept\n", nt, iters);
  return 0;
}
