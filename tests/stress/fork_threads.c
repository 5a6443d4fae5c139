/* fork() and fork()+exec from a process whose other threads allocate and free all the time.
 * Each child allocates (in its main thread and in a new thread), checks what it wrote, and
 * exits 0 — or, every fourth time, execs this program again (`--exec-child`), which does the
 * same and exits 42. A child that does not finish within CHILD_LIMIT seconds (an allocator lock
 * held across fork, or a machine far busier than any test run should see) is killed by its own
 * alarm; the parent reports it, forks no more, and fails.
 *
 * With KEEP given, the program first takes all but KEEP free pages of the hugetlbfs pool (mmap
 * MAP_HUGETLB, not through malloc) so that children fork from a heap on huge pages while the
 * pool is nearly empty: copy-on-write of a private huge page then needs a page the pool may not
 * have (the kernel sends SIGBUS), which the allocator must avoid. The heap must really be on
 * hugetlbfs pages then (this process's HugetlbPages beyond the pages it holds itself) when the
 * first fork starts, or the run proved nothing and fails. Exit 77 without a pool (or, on another
 * allocator than tlbpack, with a heap that is not on hugetlbfs pages).
 *
 * usage: fork_threads [FORKS [BUSY_THREADS [KEEP]]]
 */
#include "tp_shim.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_LIMIT 60 /* seconds; children take milliseconds, ctest allows the whole run 120 */
static atomic_int stop;
static atomic_ullong busy_ops;

static void *busy(void *arg) {
  unsigned long long rs = (uintptr_t)arg * 977 + 3;
  void *held[64] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    unsigned long long r = t_rand(&rs);
    int i = (int)(r % 64);
    free(held[i]);
    size_t s = (r >> 8) % 4 == 0 ? 1 + (r >> 16) % (256 << 10) : 1 + (r >> 16) % 512;
    held[i] = malloc(s);
    if (!held[i]) T_DIE("fork_threads: busy thread: malloc(%zu) failed", s);
    memset(held[i], (int)i, s < 64 ? s : 64);
    atomic_fetch_add_explicit(&busy_ops, 1, memory_order_relaxed);
  }
  for (int i = 0; i < 64; i++) free(held[i]);
  return NULL;
}

/* What every child does: allocate, check, free, in two threads. Returns 0 when all went well. */
static void *child_work(void *arg) {
  unsigned long long rs = (uintptr_t)arg + 11;
  enum { N = 2000 };
  unsigned char *p[N];
  size_t sz[N];
  for (int i = 0; i < N; i++) {
    sz[i] = 1 + t_rand(&rs) % (i % 100 == 0 ? (1 << 20) : 1024);
    p[i] = malloc(sz[i]);
    if (!p[i]) return (void *)1;
    memset(p[i], i & 0xff, sz[i]);
  }
  for (int i = 0; i < N; i++) {
    for (size_t j = 0; j < sz[i]; j += 97)
      if (p[i][j] != (unsigned char)(i & 0xff)) return (void *)2;
    free(p[i]);
  }
  return NULL;
}

static int child_body(void) {
  alarm(CHILD_LIMIT);  /* a deadlock in the child ends it with SIGALRM, which the parent reports */
  pthread_t t;
  void *r1 = child_work((void *)1), *r2 = (void *)3;
  if (pthread_create(&t, NULL, child_work, (void *)2) == 0) pthread_join(t, &r2);
  return r1 == NULL && r2 == NULL ? 0 : 1;
}

/* Huge pages free in the pool and not promised to another mapping (HugePages_Rsvd): what a
 * MAP_POPULATE mapping can still take. -1 when there is no pool information. */
static long pool_available(void) {
  long free_pages = -1, rsvd = 0;
  char line[256];
  FILE *mi = fopen("/proc/meminfo", "r");
  while (mi && fgets(line, sizeof line, mi)) {
    if (strncmp(line, "HugePages_Free:", 15) == 0) free_pages = atol(line + 15);
    if (strncmp(line, "HugePages_Rsvd:", 15) == 0) rsvd = atol(line + 15);
  }
  if (mi) fclose(mi);
  return free_pages < 0 ? -1 : free_pages - rsvd;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--exec-child") == 0) return child_body() == 0 ? 42 : 1;
  int forks = argc > 1 ? atoi(argv[1]) : 100;
  int nbusy = argc > 2 ? atoi(argv[2]) : 4;
  long keep = argc > 3 ? atol(argv[3]) : -1, held_kb = 0;
  if (keep >= 0) {
    long free_pages = pool_available();
    if (free_pages < keep + 8) {
      printf("fork_threads: SKIP: needs a hugetlbfs pool of at least %ld free pages, have %ld\n", keep + 8, free_pages);
      return 77;
    }
    /* Let the heap take its first huge pages from the pool, then take the rest. */
    /* The first two blocks stay live through the forks, so that the heap keeps hugetlbfs pages
     * whatever retain_mb says about the empty ones. */
    static void *warm[8];
    for (int i = 0; i < 8; i++) { warm[i] = malloc(3 << 20); memset(warm[i], 1, 3 << 20); }
    for (int i = 2; i < 8; i++) free(warm[i]);
    free_pages = pool_available();
    size_t hold = free_pages > keep ? (size_t)(free_pages - keep) << 21 : 0;
    if (hold && mmap(NULL, hold, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE,
                     -1, 0) == MAP_FAILED)
      T_DIE("fork_threads: could not take %zu huge pages: %s", hold >> 21, strerror(errno));
    held_kb = (long)(hold >> 21) * 2048;
    printf("fork_threads: hugetlbfs pool: %ld free pages, holding all but %ld; the heap holds %ld kB of hugetlbfs pages\n",
           free_pages, keep, t_hugetlb_kb() - held_kb);
  }
  if (forks < 1 || nbusy < 0 || nbusy > 64) {
    fprintf(stderr, "usage: fork_threads [FORKS >= 1 [BUSY_THREADS 0..64 [KEEP_FREE_HUGE_PAGES]]]\n");
    return 2;
  }
  pthread_t t[64];
  for (int i = 0; i < nbusy; i++)
    if (pthread_create(&t[i], NULL, busy, (void *)(intptr_t)i)) T_DIE("fork_threads: pthread_create failed");
  int failures = 0, execs = 0, hung = 0, from_hugetlb = 0, f;
  for (f = 0; f < forks && !hung; f++) {
    int do_exec = f % 4 == 3;
    if (keep >= 0 && t_hugetlb_kb() - held_kb > 0) from_hugetlb++; /* the heap's, right before the fork */
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) T_DIE("fork_threads: fork failed: %s", strerror(errno));
    if (pid == 0) {
      if (do_exec) {
        char *args[] = {argv[0], "--exec-child", NULL};
        alarm(CHILD_LIMIT);
        execv("/proc/self/exe", args);
        _exit(3);
      }
      _exit(child_body());
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) T_DIE("fork_threads: waitpid failed: %s", strerror(errno));
    int want = do_exec ? 42 : 0;
    execs += do_exec;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != want) {
      failures++;
      hung = WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM;
      if (hung)
        printf("fork_threads: child %d (%s) did not finish within %d s and was killed by its alarm (hung: a "
               "deadlock after fork?); no more forks\n", f, do_exec ? "exec" : "fork", CHILD_LIMIT);
      else if (WIFSIGNALED(st))
        printf("fork_threads: child %d (%s) killed by signal %d\n", f, do_exec ? "exec" : "fork", WTERMSIG(st));
      else
        printf("fork_threads: child %d (%s) exited %d, expected %d\n", f, do_exec ? "exec" : "fork",
               WEXITSTATUS(st), want);
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < nbusy; i++) pthread_join(t[i], NULL);
  printf("fork_threads: %d forks (%d with exec) while %d threads allocated (%llu ops): %d failures\n",
         f, execs, nbusy, (unsigned long long)busy_ops, failures);
  if (keep >= 0) {
    printf("fork_threads: %d forks from a heap on hugetlbfs pages\n", from_hugetlb);
    tp_stats_t st;
    if (from_hugetlb == 0 && !t_stats(&st)) {
      printf("fork_threads: SKIP: the heap was not on hugetlbfs pages at any fork (not tlbpack)\n");
      return 77;
    }
    if (from_hugetlb == 0) {
      printf("fork_threads: FAIL: the heap was not on hugetlbfs pages at any fork: it fell back (to THP?), "
             "the short pool was not tested\n");
      return 1;
    }
  }
  return failures ? 1 : 0;
}
