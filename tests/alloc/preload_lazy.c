/* Start-up cost: libhugetlbfs and libnuma are not loaded into a process whose heap stays on
 * 4 KiB pages (start_kb); once its heap takes huge pages they are loaded on a machine with more
 * than one NUMA node (placement) and not on one node; reading the stats loads them. Run under
 * LD_PRELOAD=libtlbpack.so; the program links neither. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlbpack.h"

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
  char online[64] = {0};
  FILE *f = fopen("/sys/devices/system/node/online", "r");
  if (f) {
    if (fgets(online, sizeof online, f) == NULL) online[0] = 0;
    fclose(f);
  }
  int nodes_many = online[0] && strcmp(online, "0\n") != 0 && strcmp(online, "0") != 0;
  if (mapped("libnuma") != nodes_many) {
    printf("FAIL: libnuma %s after the heap grew to 40 MiB on a machine with nodes %s", mapped("libnuma") ? "loaded" : "not loaded", online);
    return 1;
  }
  void (*stats_get)(tp_stats_t *) = (void (*)(tp_stats_t *))dlsym(RTLD_DEFAULT, "tp_stats_get");
  if (stats_get == NULL) {
    printf("FAIL: tp_stats_get is not exported\n");
    return 1;
  }
  tp_stats_t st;
  stats_get(&st);
  if (mapped("libnuma") != 1 || mapped("libhugetlbfs") != 1) {
    printf("FAIL: libnuma %d, libhugetlbfs %d after tp_stats_get\n", mapped("libnuma"), mapped("libhugetlbfs"));
    return 1;
  }
  for (int i = 0; i < BIG; i++) free(big[i]);
  for (int i = 0; i < SMALL; i++) free(small[i]);
  printf("PASS: not loaded by a small heap; %s by a grown one (nodes %.*s); loaded by the stats\n", nodes_many ? "loaded" : "not loaded", (int)strcspn(online, "\n"), online);
  return 0;
}
