/* The hugetlbfs pool runs out mid-run, then comes back. Run under LD_PRELOAD with a pool of
 * at least 8 free 2 MiB pages. The program itself takes all but KEEP free pages of the pool
 * (mmap MAP_HUGETLB directly, not through malloc), so tlbpack finds a tiny pool:
 *   phase 1: allocate BLOCKS x 2 MiB and touch every byte: more than the pool holds, so
 *            tlbpack must fall back (counted in `fallbacks`) and nothing may fail or SIGBUS;
 *   phase 2: give the held pages back (the pool "comes back") and allocate as much again:
 *            tlbpack must use hugetlbfs pages again (pages_hugetlbfs grows);
 *   phase 3: check and free everything: live objects back to the baseline.
 * Exit 0 pass, 1 fail, 77 when the pool is too small to run the test.
 *
 * usage: hugepool [BLOCKS [KEEP]]
 */
#include "tp_shim.h"
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#define HP ((size_t)2 << 20)

static long meminfo(const char *key) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') { v = atol(line + n + 1); break; }
  fclose(f);
  return v;
}

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { printf("hugepool: FAIL: " __VA_ARGS__); printf("\n"); failures++; } } while (0)

static void fill_and_check(unsigned char **b, int from, int to) {
  for (int i = from; i < to; i++) {
    b[i] = malloc(HP);
    CHECK(b[i] != NULL, "malloc(2 MiB) #%d failed: %s", i, strerror(errno));
    if (b[i]) memset(b[i], i + 1, HP);  /* every page touched: a missing huge page would SIGBUS here */
  }
}

static void print_stats(const char *when, const tp_stats_t *s) {
  printf("hugepool: %-22s pages hugetlbfs %zu thp %zu 4k %zu, fallbacks %zu, returned %zu, live objects %zu\n",
         when, s->pages_hugetlbfs, s->pages_thp, s->pages_4k, s->fallbacks, s->pages_returned, s->live_objects);
}

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 12;
  long keep = argc > 2 ? atol(argv[2]) : 4;
  if (blocks < 1 || blocks > 1000 || keep < 1) {
    fprintf(stderr, "usage: hugepool [BLOCKS 1..1000 [KEEP >= 1]]\n");
    return 2;
  }
  long free0 = meminfo("HugePages_Free"), size_kb = meminfo("Hugepagesize");
  if (size_kb != 2048 || free0 < keep + 4) {
    printf("hugepool: SKIP: needs a pool of at least %ld free 2 MiB huge pages, have %ld (page size %ld kB); "
           "`make test` reserves one when run as root\n", keep + 4, free0, size_kb);
    return 77;
  }
  tp_stats_t s0, s1, s2, s3;
  int have = t_stats(&s0);  /* first call: dlsym and stdout's buffer allocate before the baseline */
  printf("hugepool: %s\n", have ? "running on tlbpack" : "tp_stats_get not found (not running on tlbpack): checking only that nothing fails");
  unsigned char **b = calloc((size_t)blocks * 2, sizeof *b);
  if (have) t_stats(&s0);

  /* Take the pool down to `keep` free pages. */
  size_t held_len = (size_t)(free0 - keep) * HP;
  void *held = mmap(NULL, held_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
  if (held == MAP_FAILED) {
    printf("hugepool: SKIP: could not take %ld huge pages to shrink the pool: %s\n", free0 - keep, strerror(errno));
    return 77;
  }
  printf("hugepool: pool had %ld free pages; holding %ld, %ld left free (now %ld)\n", free0, free0 - keep, keep,
         meminfo("HugePages_Free"));

  fill_and_check(b, 0, blocks);
  if (have) { t_stats(&s1); print_stats("after exhausting:", &s1); }
  printf("hugepool: %ld free pages left in the pool\n", meminfo("HugePages_Free"));

  munmap(held, held_len);  /* the pool comes back */
  printf("hugepool: pool back to %ld free pages\n", meminfo("HugePages_Free"));
  fill_and_check(b, blocks, blocks * 2);
  if (have) { t_stats(&s2); print_stats("after it came back:", &s2); }

  for (int i = 0; i < blocks * 2; i++) {
    if (!b[i]) continue;
    for (size_t j = 0; j < HP; j += 4093)
      if (b[i][j] != (unsigned char)(i + 1)) { CHECK(0, "block %d corrupted at %zu", i, j); break; }
    free(b[i]);
  }
  if (have) {
    t_stats(&s3);
    print_stats("after freeing:", &s3);
    CHECK(s1.fallbacks > s0.fallbacks, "no fallback counted although %d x 2 MiB exceeded the %ld-page pool", blocks, keep);
    CHECK(s1.pages_hugetlbfs > 0, "no hugetlbfs page in use while the pool still had %ld pages", keep);
    CHECK(s2.pages_hugetlbfs > s1.pages_hugetlbfs,
          "hugetlbfs pages did not grow after the pool came back (%zu -> %zu): the source stays disabled",
          s1.pages_hugetlbfs, s2.pages_hugetlbfs);
    CHECK(s3.live_objects == s0.live_objects, "live objects %zu at the end, %zu at the start", s3.live_objects, s0.live_objects);
  }
  free(b);
  printf("hugepool: %s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
