/* Start-up cost: libhugetlbfs and libnuma are not loaded into a process whose heap stays on
 * 4 KiB pages (start_kb), and are loaded once its heap takes huge pages (NUMA placement) or
 * its stats are printed. Run under LD_PRELOAD=libtlbpack.so; the program links neither. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mapped(const char *lib) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL) return -1;
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, lib)) found = 1;
  fclose(f);
  return found;
}

int main(void) {
  enum { SMALL = 2000, BIG = 40 };
  static void *small[SMALL], *big[BIG];
  for (int i = 0; i < SMALL; i++) small[i] = malloc(16 + i % 300);
  if (mapped("libnuma") != 0 || mapped("libhugetlbfs") != 0) {
    printf("FAIL: libnuma or libhugetlbfs loaded into a process with %d small blocks\n", SMALL);
    return 1;
  }
  for (int i = 0; i < BIG; i++) big[i] = malloc(1 << 20); /* 40 MiB: past start_kb */
  for (int i = 0; i < SMALL; i++) free(small[i]), small[i] = malloc(16 + i % 300);
  if (mapped("libnuma") != 1 || mapped("libhugetlbfs") != 1) {
    printf("FAIL: libnuma %d, libhugetlbfs %d after the heap grew to 40 MiB\n", mapped("libnuma"),
           mapped("libhugetlbfs"));
    return 1;
  }
  for (int i = 0; i < BIG; i++) free(big[i]);
  for (int i = 0; i < SMALL; i++) free(small[i]);
  printf("PASS: loaded only once the heap took huge pages\n");
  return 0;
}
