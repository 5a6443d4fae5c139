/* For regions_file.sh: allocates 64 blocks of 32 KiB and 8 of 3 MiB, touches every 4 KiB page
 * of them, and prints a tlbsim text trace that reads each of those pages ("R 0x... 8"). The
 * blocks stay live until exit, when tlbpack writes its regions file (TLBPACK_CONF=regions:PATH).
 * 32 KiB: the largest slab class whose blocks are not sampled (a site's second block of more
 * than a slot is a sample on 4 KiB pages, and a medium one found dense stays there: policy.c,
 * _tp_policy_slab_block_route), so that under pool:auto the whole heap is on 2 MiB pages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  for (int i = 0; i < 72; i++) {
    size_t n = i < 64 ? (size_t)32 << 10 : (size_t)3 << 20;
    char *p = malloc(n);
    if (p == NULL) {
      fprintf(stderr, "regions_probe: malloc(%zu) failed\n", n);
      return 1;
    }
    memset(p, i, n);
    for (size_t off = 0; off < n; off += 4096) printf("R %#lx 8\n", (unsigned long)(uintptr_t)(p + off));
  }
  return 0;
}
