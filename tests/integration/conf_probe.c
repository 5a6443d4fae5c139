/* A small program for the TLBPACK_CONF tests: allocates, checks and frees a mix of sizes in
 * two threads, prints "conf_probe: ok" and exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *work(void *arg) {
  for (int i = 0; i < 400; i++) {
    size_t n = 1 + (size_t)(i * 7919) % (i % 50 ? 4096 : (3 << 20));
    unsigned char *p = malloc(n);
    if (!p) return (void *)1;
    memset(p, i & 0xff, n);
    p = realloc(p, n * 2);
    if (!p || p[n - 1] != (unsigned char)(i & 0xff)) return (void *)2;
    free(p);
  }
  return arg;
}

int main(void) {
  pthread_t t;
  void *r1, *r2 = (void *)3;
  pthread_create(&t, NULL, work, NULL);
  r1 = work(NULL);
  pthread_join(t, &r2);
  if (r1 || r2) { printf("conf_probe: allocation failed or data corrupted\n"); return 1; }
  printf("conf_probe: ok\n");
  return 0;
}
