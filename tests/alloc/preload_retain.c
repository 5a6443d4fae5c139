/* Under LD_PRELOAD=libtlbpack.so with TLBPACK_CONF=retain_mb:N (or none): allocates BLOCKS
 * blocks of 2 MiB (a huge page each), touches them, frees them all, and prints what tlbpack's
 * stats say about the empty pages: how many it kept mapped and how many it gave back.
 *   retain: blocks B kept_pages K returned_pages R
 * usage: preload_retain BLOCKS */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlbpack.h"

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 12;
  void (*stats)(tp_stats_t *) = (void (*)(tp_stats_t *))dlsym(RTLD_DEFAULT, "tp_stats_get");
  if (n < 1 || n > 256 || stats == NULL) {
    fprintf(stderr, "usage: preload_retain BLOCKS (1..256), under LD_PRELOAD=libtlbpack.so\n");
    return 2;
  }
  static void *b[256];
  tp_stats_t before, full, after;
  free(malloc(100)); /* start-up allocations done */
  stats(&before);
  for (int i = 0; i < n; i++) {
    b[i] = malloc((size_t)2 << 20);
    if (b[i] == NULL) { fprintf(stderr, "preload_retain: malloc failed\n"); return 1; }
    memset(b[i], i, (size_t)2 << 20);
  }
  stats(&full);
  for (int i = 0; i < n; i++) free(b[i]);
  stats(&after);
  printf("retain: blocks %d mapped_for_blocks %zu kept_pages %zu returned_pages %zu\n", n,
         (full.mapped_bytes - before.mapped_bytes) >> 21, (after.mapped_bytes - before.mapped_bytes) >> 21,
         after.pages_returned - full.pages_returned);
  return 0;
}
