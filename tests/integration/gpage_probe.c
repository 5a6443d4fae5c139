/* For gpages.sh: allocates MIB MiB of 256-byte blocks (small objects: slabs on hpages taken
 * one at a time, the path that takes a 1 GiB page once the heap has passed gpage_mb), writes
 * every block, and prints a tlbsim text trace that reads each block ("R 0x... 8"). While the
 * blocks are live it prints the 1 GiB pool's free count to stderr, so that the script can see
 * the page held; the blocks stay live until exit, when tlbpack writes its regions file.
 * Usage: it_gpage_probe MIB */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPAGES_FREE "/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages"
#define BLOCK 256

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: it_gpage_probe MIB\n");
    return 2;
  }
  size_t n = strtoul(argv[1], NULL, 10) * ((size_t)1 << 20) / BLOCK;
  for (size_t i = 0; i < n; i++) {
    char *p = malloc(BLOCK);
    if (p == NULL) {
      fprintf(stderr, "gpage_probe: malloc(%d) failed after %zu blocks\n", BLOCK, i);
      return 1;
    }
    memset(p, (int)i, BLOCK);
    printf("R %#lx 8\n", (unsigned long)(uintptr_t)p);
  }
  long held = -1;
  FILE *f = fopen(GPAGES_FREE, "r");
  if (f != NULL) {
    if (fscanf(f, "%ld", &held) != 1) held = -1;
    fclose(f);
  }
  fprintf(stderr, "gpage_probe: 1 GiB pages free while held: %ld\n", held);
  return 0;
}
