/* A large block is resident where the program touches it, not where it does not (heap.c,
 * back_large_lazily; os.c, _tp_os_back_lazy): on the pool its pages are reserved when it is
 * allocated and faulted in as touched, and the fallbacks (THP, 4 KiB) fault in as touched too.
 * Run under LD_PRELOAD=libtlbpack.so.
 *
 *   touch     a 40 MiB block with 1 MiB of it written grows RSS + hugetlb by less than 8 MiB,
 *             and by at least 38 MiB once all of it is written; a fork child writes all of
 *             another such block, of which the parent had written 1 MiB, and exits normally
 *   grow      a block grown by doubling, 4 MiB + 8 bytes to 32 MiB + 8, in place, with 1 MiB and
 *             the last byte of each size written, grows RSS + hugetlb by less than 12 MiB (its new
 *             hpages were claimed whole at each realloc: 28 MiB); a fork child then writes all
 *             of it and exits normally; freed, the block's pages go back at once (it is 8 MiB
 *             or more, freed once)
 *   cycle     a 32 MiB block written whole and freed once goes back (RSS + hugetlb falls by at
 *             least 28 MiB); allocated, written and freed again at once (the program cycles
 *             through such blocks), its pages are kept: at least retain_mb's 16 MiB of them
 *   reserved  blocks of 60 MiB until the pool has no room left to reserve another, then one
 *             more (on pages claimed one by one, then THP); every 2 MiB of every block is
 *             written (no SIGBUS); the pool is used, and more than one block is on it */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

/* Blocks stored here escape: the compiler may not drop a malloc and its writes as unused. */
static void *volatile sink;

static long field(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[256];
  long v = -1;
  size_t k = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, k) == 0) v = atol(line + k);
  fclose(f);
  return v;
}
/* RSS + hugetlb pages of this process, kB. */
static long resident_kb(void) {
  long h = field("/proc/self/status", "HugetlbPages:");
  return field("/proc/self/status", "VmRSS:") + (h > 0 ? h : 0);
}

static int touch(void) {
  size_t n = 40 * MiB;
  char *b = malloc(n);
  if (b == NULL) return printf("FAIL: malloc(40 MiB)\n"), 1;
  sink = b;
  long r0 = resident_kb();
  memset(b, 1, MiB);
  long r1 = resident_kb();
  memset(b, 2, n);
  long r2 = resident_kb();
  printf("40 MiB block: +%ld kB with 1 MiB written, +%ld kB with all of it (RSS + hugetlb %ld kB before)\n", r1 - r0, r2 - r0, r0);
  if (r1 - r0 >= 8 * 1024) return printf("FAIL: 1 MiB written of a 40 MiB block made %ld kB resident\n", r1 - r0), 1;
  if (r2 - r0 < 38 * 1024) return printf("FAIL: all of a 40 MiB block written: only %ld kB resident\n", r2 - r0), 1;
  free(b);
  char *c = malloc(n);
  if (c == NULL) return printf("FAIL: malloc(40 MiB)\n"), 1;
  sink = c;
  memset(c, 3, MiB);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    memset(c, 4, n);
    _exit(c[n - 1] == 4 && c[0] == 4 ? 0 : 3);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return printf("FAIL: fork\n"), 1;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return printf("FAIL: the fork child writing the block ended with %s %d\n", WIFEXITED(st) ? "status" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st)), 1;
  if (c[0] != 3) return printf("FAIL: the child's writes reached the parent\n"), 1;
  free(c);
  printf("PASS: touch\n");
  return 0;
}

static int grow(void) {
  /* stdio's first fopen takes a slab page; made before the block, it does not sit after it */
  if (resident_kb() <= 0) return printf("FAIL: cannot read /proc/self/status\n"), 1;
  size_t n = 4 * MiB;
  char *b = malloc(n + 8);
  if (b == NULL) return printf("FAIL: malloc(4 MiB + 8)\n"), 1;
  sink = b;
  memset(b, 1, MiB);
  long r0 = resident_kb();
  char *first = b;
  for (n = 8 * MiB; n <= 32 * MiB; n *= 2) {
    b = realloc(b, n + 8);
    if (b == NULL) return printf("FAIL: realloc to %zu MiB + 8\n", n / MiB), 1;
    sink = b;
    b[n] = 9;
  }
  n = 32 * MiB;
  long r1 = resident_kb();
  printf("4 -> 32 MiB + 8 by doubling (%s): +%ld kB with 1 MiB and the last bytes written\n",
         b == first ? "in place" : "moved", r1 - r0);
  if (b != first) return printf("FAIL: a fresh process's large block did not grow in place\n"), 1;
  if (r1 - r0 >= 12 * 1024) return printf("FAIL: growing made %ld kB resident that was never written\n", r1 - r0), 1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    memset(b, 4, n + 8);
    _exit(b[n] == 4 && b[0] == 4 ? 0 : 3);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return printf("FAIL: fork\n"), 1;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    return printf("FAIL: the fork child writing the grown block ended with %s %d\n", WIFEXITED(st) ? "status" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st)), 1;
  if (b[0] != 1 || b[n] != 9) return printf("FAIL: the grown block lost its contents\n"), 1;
  memset(b, 5, n + 8);
  long r2 = resident_kb();
  free(b);
  long r3 = resident_kb();
  printf("written whole: +%ld kB; freed: -%ld kB\n", r2 - r0, r2 - r3);
  if (r2 - r3 < 28 * 1024) return printf("FAIL: a 32 MiB block freed once kept %ld kB resident\n", 32 * 1024 - (r2 - r3)), 1;
  printf("PASS: grow\n");
  return 0;
}

static int cycle(void) {
  size_t n = 32 * MiB;
  if (resident_kb() <= 0) return printf("FAIL: cannot read /proc/self/status\n"), 1;
  char *b = malloc(n);
  if (b == NULL) return printf("FAIL: malloc(32 MiB)\n"), 1;
  sink = b;
  memset(b, 1, n);
  long r1 = resident_kb();
  free(b);
  long r2 = resident_kb();
  b = malloc(n);
  if (b == NULL) return printf("FAIL: malloc(32 MiB) again\n"), 1;
  sink = b;
  memset(b, 2, n);
  long r2b = resident_kb(); /* a call the compiler cannot see through: the writes stay */
  free(b);
  long r3 = resident_kb();
  printf("32 MiB block freed once: -%ld kB; allocated and written again: +%ld kB, freed: +%ld kB kept\n", r1 - r2,
         r2b - r2, r3 - r2);
  if (r1 - r2 < 28 * 1024) return printf("FAIL: a 32 MiB block freed once kept %ld kB\n", 32 * 1024 - (r1 - r2)), 1;
  if (r3 - r2 < 14 * 1024) return printf("FAIL: a block the program cycles through kept only %ld kB\n", r3 - r2), 1;
  printf("PASS: cycle\n");
  return 0;
}

static int reserved(void) {
  long free0 = field("/proc/meminfo", "HugePages_Free:");
  /* Two 60 MiB blocks reserved whole, then room for less than one: 96 pages. */
  if (free0 < 96) return printf("SKIP: %ld free pool pages (96 wanted)\n", free0), 77;
  static char *b[22];
  size_t n = 60 * MiB;
  int nb = 0;
  while (nb < 20) { /* 1.2 GiB at most: a larger pool is not reserved out */
    b[nb] = malloc(n);
    if (b[nb] == NULL) return printf("FAIL: malloc(60 MiB) number %d\n", nb + 1), 1;
    sink = b[nb];
    b[nb][0] = 1;
    nb++;
    long room = field("/proc/meminfo", "HugePages_Free:") - field("/proc/meminfo", "HugePages_Rsvd:");
    if (room < 30) break;
  }
  b[nb] = malloc(n); /* no room to reserve it: claimed page by page, then THP */
  if (b[nb] == NULL) return printf("FAIL: malloc(60 MiB) past the pool\n"), 1;
  nb++;
  long h0 = field("/proc/self/status", "HugetlbPages:");
  for (int i = 0; i < nb; i++)
    for (size_t o = 0; o < n; o += 2 * MiB) b[i][o] = (char)(i + 1);
  long h1 = field("/proc/self/status", "HugetlbPages:");
  for (int i = 0; i < nb; i++)
    for (size_t o = 0; o < n; o += 2 * MiB)
      if (b[i][o] != (char)(i + 1)) return printf("FAIL: block %d lost a write at %zu\n", i, o), 1;
  printf("%d blocks of 60 MiB, every 2 MiB written: hugetlb %ld -> %ld kB (%ld free pool pages at start)\n", nb, h0,
         h1, free0);
  if (h1 < 2 * 30 * 2048L) return printf("FAIL: only %ld kB of the blocks on the pool\n", h1), 1;
  for (int i = 0; i < nb; i++) free(b[i]);
  printf("PASS: reserved\n");
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 2 && strcmp(argv[1], "touch") == 0) return touch();
  if (argc == 2 && strcmp(argv[1], "grow") == 0) return grow();
  if (argc == 2 && strcmp(argv[1], "cycle") == 0) return cycle();
  if (argc == 2 && strcmp(argv[1], "reserved") == 0) return reserved();
  fprintf(stderr, "usage: %s touch|grow|cycle|reserved\n", argv[0]);
  return 2;
}
