/* A process beside the ones under test that takes and gives back hugetlbfs pool pages for
 * SECONDS: 1 to MAX pages at a time (MAP_HUGETLB, populated at once: a short pool is an error
 * here, never a signal), written, held for a few milliseconds and unmapped. Prints how often
 * it got pages and how often the pool was short.
 *
 * usage: pool_churn SECONDS [MAX]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 0;
  long max = argc > 2 ? atol(argv[2]) : 8;
  if (secs <= 0 || max < 1) {
    fprintf(stderr, "usage: pool_churn SECONDS [MAX >= 1]\n");
    return 2;
  }
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long long r = 88172645463325252ULL;
  unsigned long got = 0, short_ = 0;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    size_t len = (size_t)(1 + r % (unsigned long long)max) << 21;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      short_++;
      usleep(2000);
      continue;
    }
    memset(p, 0x5a, len);
    got++;
    usleep(1000 + r % 8000);
    munmap(p, len);
  }
  printf("pool_churn: took pool pages %lu times, found the pool short %lu times\n", got, short_);
  return 0;
}
