/* Holds memory from the allocator until told to stop, for the tests that share one hugetlbfs
 * pool between processes. Allocates BLOCKS blocks of 2 MiB (one huge page each under
 * tlbpack), writes every 4 KiB page of them, prints "pool_hold: holding BLOCKS" and waits
 * until the file STOP exists (at most 120 s), then checks the data and exits 0 without freeing
 * (stats:1 then shows the pages held). Without STOP it exits at once.
 *
 * usage: pool_hold BLOCKS [STOP]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK ((size_t)2 << 20)

int main(int argc, char **argv) {
  int blocks = argc > 1 ? atoi(argv[1]) : 0;
  const char *stop = argc > 2 ? argv[2] : NULL;
  if (blocks < 1 || blocks > 4096) {
    fprintf(stderr, "usage: pool_hold BLOCKS(1..4096) [STOP]\n");
    return 2;
  }
  unsigned char **b = calloc((size_t)blocks, sizeof *b);
  if (b == NULL) return printf("pool_hold: FAIL: calloc\n"), 1;
  for (int i = 0; i < blocks; i++) {
    b[i] = malloc(BLOCK);
    if (b[i] == NULL) return printf("pool_hold: FAIL: malloc(2 MiB) #%d returned NULL\n", i), 1;
    for (size_t o = 0; o < BLOCK; o += 4096) b[i][o] = (unsigned char)(i + 1);
  }
  printf("pool_hold: holding %d\n", blocks);
  fflush(stdout);
  for (int t = 0; stop && t < 12000 && access(stop, F_OK) != 0; t++) usleep(10000);
  for (int i = 0; i < blocks; i++)
    for (size_t o = 0; o < BLOCK; o += 4096)
      if (b[i][o] != (unsigned char)(i + 1)) return printf("pool_hold: FAIL: block %d changed\n", i), 1;
  return 0;
}
