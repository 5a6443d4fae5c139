/* Linked against libtlbpack.so (absolute run path, not preloaded), so that a set-user-ID copy
 * of it loads tlbpack the way /etc/ld.so.preload would. Allocates, checks and frees a mix of
 * sizes, then prints its user ids, whether it runs in secure-execution mode and whether
 * tlbpack's malloc served it, and exits 0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "tlbpack.h"

int main(void) {
  for (int i = 0; i < 2000; i++) {
    size_t n = 1 + (size_t)(i * 7919) % (i % 100 ? 4096 : (3 << 20));
    unsigned char *p = malloc(n);
    if (p == NULL) return printf("secure_probe: malloc(%zu) failed\n", n), 1;
    memset(p, i & 0xff, n);
    if (p[n - 1] != (unsigned char)(i & 0xff)) return printf("secure_probe: data corrupted\n"), 1;
    free(p);
  }
  void *p = calloc(1, 100);
  int ours = tp_owns(p);
  free(p);
  printf("secure_probe: ok uid=%d euid=%d secure=%lu tlbpack_malloc=%d\n", (int)getuid(), (int)geteuid(),
         getauxval(AT_SECURE), ours);
  return 0;
}
