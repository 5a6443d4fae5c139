/* One source, two builds: plain (malloc/free, run under LD_PRELOAD; tp_stats_get is looked up
 * at run time, so the program also runs on other allocators) and TP_DIRECT (linked with
 * libtlbpack.a, calling tp_* directly while the program's own malloc stays glibc's). */
#ifndef TP_SHIM_H
#define TP_SHIM_H
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tlbpack.h"

#ifdef TP_DIRECT
#define T_MALLOC tp_malloc
#define T_CALLOC tp_calloc
#define T_REALLOC tp_realloc
#define T_FREE tp_free
#define T_MEMALIGN tp_posix_memalign
#define T_USABLE tp_malloc_usable_size
#define T_MODE "direct (libtlbpack.a, tp_*)"
static inline int t_stats(tp_stats_t *s) { tp_stats_get(s); return 1; }
#else
#include <malloc.h>
#define T_MALLOC malloc
#define T_CALLOC calloc
#define T_REALLOC realloc
#define T_FREE free
#define T_MEMALIGN posix_memalign
#define T_USABLE malloc_usable_size
#define T_MODE "malloc (LD_PRELOAD)"
/* Nonzero when tlbpack is loaded (preloaded) and *s was filled. */
static inline int t_stats(tp_stats_t *s) {
  static void (*get)(tp_stats_t *);
  static int looked;
  if (!looked) {
    get = (void (*)(tp_stats_t *))dlsym(RTLD_DEFAULT, "tp_stats_get");
    looked = 1;
  }
  if (!get) return 0;
  memset(s, 0, sizeof *s);
  get(s);
  return 1;
}
#endif

/* Small deterministic PRNG (xorshift64*), one state per thread. */
static inline unsigned long long t_rand(unsigned long long *s) {
  unsigned long long x = *s;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *s = x;
  return x * 2685821657736338717ULL;
}

/* The kB figure of a "Key:" line of a /proc file of this process (status, smaps_rollup); -1
 * when the kernel does not say. */
static inline long t_proc_kb(const char *path, const char *key) {
  char line[256];
  long kb = -1;
  size_t n = strlen(key);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0) kb = atol(line + n);
  if (f) fclose(f);
  return kb;
}

/* This process's hugetlbfs pages in kB (HugetlbPages of /proc/self/status), whoever mapped
 * them; -1 when the kernel does not say. */
static inline long t_hugetlb_kb(void) { return t_proc_kb("/proc/self/status", "HugetlbPages:"); }

#define T_DIE(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)
#endif
