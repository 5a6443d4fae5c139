/* Frees that must be caught: prints the pointer it is about to pass to free() on stdout, then
 * does it. Under tlbpack the process must print `tlbpack: invalid free of 0x...` or
 * `tlbpack: double free of 0x...` (that address) on stderr and die of SIGABRT; the caller
 * checks both.
 *
 * usage: bad_free double|interior|interior-large|stack|unowned|realloc-interior
 */
#include "tp_shim.h"
#include <stdint.h>
#include <sys/mman.h>

static void announce(const void *p) { printf("%p\n", p); fflush(stdout); }
/* Through a volatile pointer, so the compiler neither warns about nor optimizes the bad frees. */
static void (*volatile do_free)(void *) = free;
static void *(*volatile do_realloc)(void *, size_t) = realloc;

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  char *p = malloc(64), *big = malloc((size_t)3 << 20);
  if (!p || !big) return 3;
  memset(p, 1, 64);
  if (strcmp(mode, "double") == 0) {
    do_free(p);
    announce(p);
    do_free(p);
  } else if (strcmp(mode, "interior") == 0) {
    announce(p + 16);
    do_free(p + 16);
  } else if (strcmp(mode, "interior-large") == 0) {
    announce(big + 4096);
    do_free(big + 4096);
  } else if (strcmp(mode, "stack") == 0) {
    char local[32] = {0};
    announce(local);
    do_free(local);
  } else if (strcmp(mode, "unowned") == 0) {
    /* Memory tlbpack never handed out: a fresh anonymous mapping. */
    char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 3;
    announce(m + 256);
    do_free(m + 256);
  } else if (strcmp(mode, "realloc-interior") == 0) {
    announce(p + 8);
    char *q = do_realloc(p + 8, 1000);
    (void)q;
  } else {
    fprintf(stderr, "usage: bad_free double|interior|interior-large|stack|unowned|realloc-interior\n");
    return 2;
  }
  return 0;  /* not reached under tlbpack */
}
