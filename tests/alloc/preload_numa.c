/* Under LD_PRELOAD: prints the memory policy the kernel holds for a freshly allocated block,
 * read back with get_mempolicy(MPOL_F_ADDR): default, preferred (numa:local) or interleave. */
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  char *p = malloc(3 << 20); /* whole huge pages: mapped (and bound) for this block */
  memset(p, 1, 3 << 20);
  int mode = -1;
  if (get_mempolicy(&mode, NULL, 0, p, MPOL_F_ADDR) != 0) {
    perror("get_mempolicy");
    return 1;
  }
  const char *name = mode == MPOL_DEFAULT ? "default" : mode == MPOL_PREFERRED ? "preferred"
                   : mode == MPOL_INTERLEAVE ? "interleave" : mode == MPOL_BIND ? "bind" : "other";
  printf("policy=%s\n", name);
  free(p);
  return 0;
}
