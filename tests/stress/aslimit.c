/* Runs under an address-space limit (the caller does `ulimit -v`): allocations beyond it must
 * return NULL with errno ENOMEM — large blocks, then many small ones, calloc and realloc — and
 * after frees the process must allocate again as before. Only a few bytes of each block are
 * touched, so the limit, not memory, is what runs out.
 *
 * usage: aslimit LIMIT_MIB   (the limit the caller set, used to bound the loops)
 */
#include "tp_shim.h"
#include <errno.h>
#include <stdint.h>
#include <sys/resource.h>

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { printf("aslimit: FAIL: " __VA_ARGS__); printf("\n"); failures++; } } while (0)

/* Allocates blocks of `size` until one fails or `cap` succeed; returns how many succeeded. */
static size_t fill_up(void **v, size_t cap, size_t size, int *err) {
  size_t n = 0;
  *err = 0;
  for (; n < cap; n++) {
    errno = 0;
    unsigned char *p = malloc(size);
    if (!p) { *err = errno; break; }
    p[0] = 1;
    p[size - 1] = 2;
    v[n] = p;
  }
  return n;
}

int main(int argc, char **argv) {
  long limit_mib = argc > 1 ? atol(argv[1]) : 0;
  struct rlimit rl;
  getrlimit(RLIMIT_AS, &rl);
  if (limit_mib <= 0 || rl.rlim_cur == RLIM_INFINITY) {
    fprintf(stderr, "usage: ulimit -v KIB; aslimit LIMIT_MIB (no address-space limit is set)\n");
    return 2;
  }
  printf("aslimit: RLIMIT_AS %lu MiB\n", (unsigned long)(rl.rlim_cur >> 20));

  /* 1. Large blocks until the limit. */
  size_t big = (size_t)16 << 20, cap = (size_t)limit_mib / 16 * 2 + 8, n_big;
  void **v = calloc(cap + 65536 + (size_t)limit_mib * 64, sizeof *v);
  CHECK(v != NULL, "calloc of the pointer table failed");
  if (!v) return 1;
  int err;
  n_big = fill_up(v, cap, big, &err);
  CHECK(n_big < cap, "%zu blocks of 16 MiB (%zu MiB) allocated under a %ld MiB limit", n_big, n_big * 16, limit_mib);
  CHECK(err == ENOMEM, "malloc(16 MiB) beyond the limit set errno %d (%s), expected ENOMEM", err, strerror(err));
  printf("aslimit: %zu x 16 MiB allocated, then NULL/%s\n", n_big, err == ENOMEM ? "ENOMEM" : strerror(err));

  /* Small allocations still work (or fail cleanly) at the limit; calloc/realloc beyond fail. */
  char *s = malloc(100);
  if (s) { memset(s, 7, 100); free(s); }
  errno = 0;
  void *c = calloc(64, (size_t)8 << 20);
  CHECK(c == NULL && errno == ENOMEM, "calloc(64, 8 MiB) at the limit: %p errno %d", c, errno);
  free(c);
  if (n_big > 0) {
    errno = 0;
    unsigned char *keep = v[0];
    void *r = realloc(keep, (size_t)limit_mib << 21);
    CHECK(r == NULL && errno == ENOMEM, "realloc to twice the limit: %p errno %d", r, errno);
    if (r) v[0] = r;
    else CHECK(keep[0] == 1 && keep[big - 1] == 2, "realloc failure changed the block");
  }

  /* 2. Free everything: large allocations work again. */
  for (size_t i = 0; i < n_big; i++) free(v[i]);
  size_t again = fill_up(v, 4, big, &err);
  CHECK(again == 4 || (again > 0 && n_big < 4), "after freeing, only %zu of 4 x 16 MiB allocations succeeded (errno %d)", again, err);
  for (size_t i = 0; i < again; i++) free(v[i]);

  /* 3. Many 64 KiB blocks until the limit, then free and allocate again. */
  size_t small = 64 << 10, cap2 = (size_t)limit_mib * 16 * 2 + 64, n_small;
  n_small = fill_up(v, cap2, small, &err);
  CHECK(n_small < cap2, "%zu blocks of 64 KiB allocated under a %ld MiB limit", n_small, limit_mib);
  CHECK(err == ENOMEM, "malloc(64 KiB) beyond the limit set errno %d (%s), expected ENOMEM", err, strerror(err));
  printf("aslimit: %zu x 64 KiB allocated (%zu MiB), then NULL/%s\n", n_small, n_small / 16,
         err == ENOMEM ? "ENOMEM" : strerror(err));
  for (size_t i = 0; i < n_small; i++) free(v[i]);

  /* 4. Back to normal: a mix of sizes, and the large blocks once more. */
  for (int i = 0; i < 10000; i++) {
    size_t sz = 1 + (size_t)(i * 7919) % 20000;
    char *p = malloc(sz);
    CHECK(p != NULL, "malloc(%zu) failed after freeing everything", sz);
    if (!p) break;
    p[sz - 1] = 1;
    free(p);
  }
  again = fill_up(v, 4, big, &err);
  CHECK(again == 4 || (again > 0 && n_big < 4), "at the end, only %zu of 4 x 16 MiB allocations succeeded", again);
  for (size_t i = 0; i < again; i++) free(v[i]);
  free(v);
  printf("aslimit: %s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
