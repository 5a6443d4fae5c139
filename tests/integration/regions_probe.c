/* For regions_file.sh: allocates 64 blocks of 48 KiB and 8 of 3 MiB, touches every 4 KiB page
 * of them, and prints a tlbsim text trace that reads each of those pages ("R 0x... 8"). The
 * blocks stay live until exit, when tlbpack writes its regions file (TLBPACK_CONF=regions:PATH). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  for (int i = 0; i < 72; i++) {
    size_t n = i < 64 ? (size_t)48 << 10 : (size_t)3 << 20;
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
