/* A program built against an installed tlbpack (pkg-config or find_package) to prove the
 * installed headers and libraries are usable. */
#include <stdio.h>
#include <string.h>
#include <tlbpack.h>

int main(void) {
  char *p = tp_malloc(1000);
  if (!p) return fputs("tp_malloc failed\n", stderr), 1;
  memset(p, 1, 1000);
  if (!tp_owns(p)) return fputs("tp_owns denies a live block\n", stderr), 1;
  if (tp_malloc_usable_size(p) < 1000) return fputs("usable size too small\n", stderr), 1;
  tp_free(p);
  tp_stats_t st;
  tp_stats_get(&st);
  printf("consumer ok: tlbpack %d.%d.%d, allocated_total=%zu\n", TLBPACK_VERSION_MAJOR, TLBPACK_VERSION_MINOR,
         TLBPACK_VERSION_PATCH, st.allocated_total);
  return st.allocated_total >= 1000 ? 0 : 1;
}
