/* The loops whose instructions per operation bench/callgrind/ir_per_op.sh counts. One run is a
 * start-up plus N iterations: two runs (N and 2N) subtract the start-up out.
 *   0: malloc(32) + free of the same block
 *   1: free a random one of 1024 live blocks, malloc 16-512 bytes in its place
 *   2: calloc(1, 32) + free
 *   3: malloc(4400) + free of the same block (a kilobyte class: a 4 KiB page and its header) */
#include <stdint.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int mode = atoi(argv[1]);
  long n = atol(argv[2]);
  static void *live[1024];
  uint64_t x = 88172645463325252ull;
  if (mode == 0) {
    for (long i = 0; i < n; i++) {
      void *p = malloc(32);
      __asm__ volatile("" ::"r"(p) : "memory");
      free(p);
    }
  } else if (mode == 1) {
    for (int i = 0; i < 1024; i++) live[i] = malloc(16 + (size_t)(i * 37) % 497);
    for (long i = 0; i < n; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      unsigned k = x & 1023;
      free(live[k]);
      live[k] = malloc(16 + (x >> 20) % 497);
    }
  } else if (mode == 2) {
    for (long i = 0; i < n; i++) {
      void *p = calloc(1, 32);
      __asm__ volatile("" ::"r"(p) : "memory");
      free(p);
    }
  } else if (mode == 3) {
    for (long i = 0; i < n; i++) {
      void *p = malloc(4400);
      __asm__ volatile("" ::"r"(p) : "memory");
      free(p);
    }
  } else {
    return 2;
  }
  return 0;
}
