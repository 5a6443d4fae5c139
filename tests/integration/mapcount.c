/* A heap of several GiB under a lowered vm.max_map_count (mapcount.sh sets it): every malloc
 * succeeds and the process's mappings stay within about one per GiB of heap plus a constant,
 * after growing, and again after freeing most of it and allocating as much again. Then the
 * program closes every descriptor from 3 up (the allocator's hugetlbfs file among them) and
 * puts a file of its own on each number, and grows the heap by another GiB: the new memory
 * still comes from the pool (a new file serves it) and the program's file stays empty.
 * Usage: it_mapcount MIB BOUND_PER_GIB SLACK TMPFILE. Prints one line per phase; exit 1 on a
 * failed check (the line says which). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
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
  if (argc != 5) {
    fprintf(stderr, "usage: it_mapcount MIB BOUND_PER_GIB SLACK TMPFILE\n");
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
  if (bad) printf("mapcount: FAIL: more mappings than the bound\n");

  /* Close every descriptor from 3 up, as daemons do, and reuse the numbers for our file. */
  int fds[256], nfd = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) return 2;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && nfd < 256)
    if (e->d_name[0] != '.' && atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d)) fds[nfd++] = atoi(e->d_name);
  closedir(d);
  for (int i = 0; i < nfd; i++) close(fds[i]);
  int own = open(argv[4], O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (own < 0) return 2;
  for (int i = 0; i < nfd; i++)
    if (fds[i] != own) dup2(own, fds[i]);
  size_t before = hugetlb_pages(), more = 1100;
  char **q = calloc(more, sizeof *q);
  for (size_t i = 0; i < more; i++) {
    q[i] = malloc(1 << 20);
    if (q[i] == NULL) {
      printf("mapcount: FAIL: malloc returned NULL after the descriptors were closed\n");
      return 1;
    }
    memset(q[i], 1, 4096);
  }
  struct stat st;
  fstat(own, &st);
  size_t after = hugetlb_pages();
  printf("mapcount: closed: %d descriptors closed and reused, %zu MiB more, hugetlbfs pages %zu -> %zu, "
         "the program's file holds %lld bytes, %ld mappings\n",
         nfd, more, before, after, (long long)st.st_size, mappings());
  if (st.st_size != 0) {
    printf("mapcount: FAIL: something wrote to the program's file\n");
    bad = 1;
  }
  if (after < before + more / 2 * 9 / 10) {
    printf("mapcount: FAIL: the heap's growth after the descriptors were closed did not come from the pool\n");
    bad = 1;
  }
  for (size_t i = 0; i < more; i++) free(q[i]);
  for (size_t i = 0; i < n; i++) free(p[i]);
  free(p);
  return bad;
}
