/* A fork that moves many pool pages at once: every byte arrives, in the parent and in the child.
 * The program fills MIB blocks of 1 MiB with a pattern that depends on the block and the offset
 * (so a page copied to the wrong place, or twice, or not at all shows), forks, and the child
 * checks every block and that it maps no hugetlbfs page (none is ever shared with a child),
 * while the parent overwrites every block with a second pattern and checks it after the child
 * has exited. Under tlbpack the fork's copies are made by the forking thread and helper threads
 * on the other CPUs: with two CPUs or more, the stats must show a helper (fork_copy_helpers),
 * or the parallel copy was not tested.
 * The heap must be on hugetlbfs pages when it forks (run it with start_kb:0 and a pool), or
 * the run proved nothing: exit 77 saying so. Exit 0 when every check passed, 1 otherwise.
 *
 * usage: fork_copies [MIB]   (default 48) */
#include "tp_shim.h"
#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCK (1u << 20)

static uint64_t word(size_t block, size_t i, uint64_t salt) {
  uint64_t x = (block << 32) ^ i ^ salt;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 29);
}

static void fill(uint64_t **b, size_t n, uint64_t salt) {
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < BLOCK / 8; i++) b[k][i] = word(k, i, salt);
}

/* The number of words that differ from the pattern. */
static size_t check(uint64_t **b, size_t n, uint64_t salt, const char *who) {
  size_t bad = 0;
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < BLOCK / 8; i++)
      if (b[k][i] != word(k, i, salt) && bad++ < 3)
        fprintf(stderr, "fork_copies: %s: block %zu word %zu is %016llx, not %016llx\n", who, k, i,
                (unsigned long long)b[k][i], (unsigned long long)word(k, i, salt));
  return bad;
}

/* fork_copy_helpers from tlbpack's JSON stats; -1 when tlbpack is not loaded or says none. */
static long copy_helpers(void) {
  void (*print)(FILE *, int) = (void (*)(FILE *, int))dlsym(RTLD_DEFAULT, "tp_stats_print");
  if (!print) return -1;
  char buf[8192] = {0};
  FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  if (!f) return -1;
  print(f, 1);
  fclose(f);
  const char *p = strstr(buf, "\"fork_copy_helpers\":");
  return p ? atol(p + strlen("\"fork_copy_helpers\":")) : -1;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)atol(argv[1]) : 48;
  uint64_t **b = T_MALLOC(n * sizeof *b);
  if (!b) T_DIE("fork_copies: no memory for the block table");
  for (size_t k = 0; k < n; k++)
    if (!(b[k] = T_MALLOC(BLOCK))) T_DIE("fork_copies: malloc(1 MiB) failed");
  fill(b, n, 1);
  long huge_kb = t_hugetlb_kb();
  if (huge_kb < 8 * 2048) {
    printf("fork_copies: SKIP: the heap holds %ld kB of hugetlbfs pages before the fork, not the "
           "8 pool pages or more this test needs (no pool, or another allocator)\n", huge_kb);
    return 77;
  }
  pid_t pid = fork();
  if (pid < 0) T_DIE("fork_copies: fork failed");
  if (pid == 0) {
    size_t bad = check(b, n, 1, "child");
    long kb = t_hugetlb_kb();
    if (kb > 0) fprintf(stderr, "fork_copies: child: maps %ld kB of hugetlbfs pages: shared with its parent\n", kb);
    _exit(bad == 0 && kb <= 0 ? 0 : 1);
  }
  fill(b, n, 2); /* while the child checks: copy-on-write must keep its view */
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) T_DIE("fork_copies: waitpid failed");
  size_t bad = check(b, n, 2, "parent");
  int fails = 0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "fork_copies: the child failed (status %#x)\n", st);
    fails++;
  }
  if (bad) {
    fprintf(stderr, "fork_copies: parent: %zu words wrong\n", bad);
    fails++;
  }
  cpu_set_t cpus;
  int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  long helpers = copy_helpers();
  if (ncpu >= 2 && helpers <= 0) {
    fprintf(stderr, "fork_copies: %d CPUs, but no helper thread made the fork's copies (fork_copy_helpers %ld)\n", ncpu, helpers);
    fails++;
  }
  printf("fork_copies: %zu MiB, %ld kB on hugetlbfs pages at the fork, %d CPUs, %ld copy helpers: %s\n",
         n, huge_kb, ncpu, helpers, fails ? "FAILED" : "every byte arrived in both processes");
  for (size_t k = 0; k < n; k++) T_FREE(b[k]);
  T_FREE(b);
  return fails ? 1 : 0;
}
