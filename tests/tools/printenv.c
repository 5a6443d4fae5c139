/* Test helper for `tlbpack run`: prints the variables tlbpack sets and whether the allocator
 * is really in the process; `--exit N` exits with N; `--malloc` allocates a little first;
 * `--big` allocates 24 MiB in 3 MiB blocks (past tlbpack's start_kb of 16 MiB, so on huge pages),
 * touching one byte per 4 KiB page (cheap under valgrind). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *pre = getenv("LD_PRELOAD"), *conf = getenv("TLBPACK_CONF");
  printf("LD_PRELOAD=%s\n", pre ? pre : "(unset)");
  printf("TLBPACK_CONF=%s\n", conf ? conf : "(unset)");
  printf("tp_malloc=%s\n", dlsym(RTLD_DEFAULT, "tp_malloc") ? "present" : "absent");
  printf("args=%d\n", argc - 1);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--malloc")) {
      for (int k = 0; k < 1000; k++) free(malloc((size_t)(16 + k)));
    } else if (!strcmp(argv[i], "--big")) {
      char *b[8];
      for (int k = 0; k < 8; k++) {
        b[k] = malloc((size_t)3 << 20);
        for (size_t off = 0; b[k] && off < ((size_t)3 << 20); off += 4096) b[k][off] = (char)k;
      }
      for (int k = 0; k < 8; k++) free(b[k]);
    } else if (!strcmp(argv[i], "--exit") && i + 1 < argc) {
      fflush(stdout);
      return atoi(argv[i + 1]);
    }
  }
  return 0;
}
