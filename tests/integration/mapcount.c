/* A heap of several GiB under a lowered vm.max_map_count (mapcount.sh sets it): every malloc
 * succeeds and the process's mappings stay within about one per GiB of heap plus a constant,
 * after growing, and again after freeing most of it and allocating as much again.
 * Usage: it_mapcount MIB BOUND_PER_GIB SLACK. Prints one line per phase; exit 1 on a failed
 * check (the line says which). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlbpack.h"

static long mappings(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL) return -1;
  long n = 0;
  int c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static size_t hugetlb_pages(void) {
  void (*get)(tp_stats_t *) = (void (*)(tp_stats_t *))dlsym(RTLD_DEFAULT, "tp_stats_get");
  if (get == NULL) return 0;
  tp_stats_t st;
  get(&st);
  return st.pages_hugetlbfs;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: it_mapcount MIB BOUND_PER_GIB SLACK\n");
    return 2;
  }
  size_t n = strtoul(argv[1], NULL, 10);
  long per_gib = strtol(argv[2], NULL, 10), slack = strtol(argv[3], NULL, 10);
  char **p = calloc(n, sizeof *p);
  if (p == NULL) return 2;
  long base = mappings(), gib = (long)((n + 1023) / 1024), bound = base + per_gib * gib + slack;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    p[i] = malloc(1 << 20);
    if (p[i] == NULL) {
      printf("mapcount: FAIL: malloc of 1 MiB returned NULL after %zu MiB, with %ld mappings\n", i, mappings());
      return 1;
    }
    memset(p[i], (int)i, 4096);
  }
  long grown = mappings();
  printf("mapcount: grow: %zu MiB, %ld mappings (before: %ld, bound %ld), hugetlbfs pages %zu\n", n, grown, base,
         bound, hugetlb_pages());
  if (grown > bound) bad = 1;
  /* Free seven blocks in eight, in 64 MiB stretches: most of the heap goes back. */
  size_t freed = 0;
  for (size_t i = 0; i < n; i++)
    if ((i / 64) % 8 != 0) {
      free(p[i]);
      p[i] = NULL;
      freed++;
    }
  long after_free = mappings();
  printf("mapcount: free: %zu MiB freed, %ld mappings, hugetlbfs pages %zu\n", freed, after_free, hugetlb_pages());
  for (size_t i = 0; i < n; i++)
    if (p[i] == NULL) {
      p[i] = malloc(1 << 20);
      if (p[i] == NULL) {
        printf("mapcount: FAIL: malloc of 1 MiB returned NULL while allocating again, %ld mappings\n", mappings());
        return 1;
      }
      memset(p[i], (int)i, 4096);
    }
  long regrown = mappings();
  long bound2 = base + 2 * per_gib * gib + slack;
  printf("mapcount: again: %zu MiB, %ld mappings (bound %ld), hugetlbfs pages %zu\n", freed, regrown, bound2,
         hugetlb_pages());
  if (regrown > bound2) bad = 1;
  for (size_t i = 0; i < n; i++) free(p[i]);
  free(p);
  if (bad) printf("mapcount: FAIL: more mappings than the bound\n");
  return bad;
}
