/* fork() while other threads write to their blocks, with the hugetlbfs pool nearly empty: an
 * allocator that, to keep fork children safe, moves the heap's huge pages at fork time must not
 * lose a write made meanwhile. Writer threads allocate 2 MiB + 4 KiB blocks (their own huge
 * pages), increment counters spread over them and keep the same counts off the heap; every
 * block is compared before it is freed. The main thread forks FORKS times (children exit at
 * once). Run with TLBPACK_CONF=retain_mb:0,start_kb:0 so that new blocks take new pages from
 * the pool (start_kb:0: huge pages from the first byte, however small the heap).
 * The run proves something only if, besides no write being lost: blocks were written, some
 * block was being written while a fork happened, and the heap had hugetlbfs pages (this
 * process's HugetlbPages beyond what it holds itself) when some fork started; the main thread
 * forks on past FORKS (for up to 60 s) until the last two have happened, and fails if they
 * never do (a heap that silently fell back to THP tests nothing here).
 * Exit 0 pass, 1 lost writes or a run that proved nothing, 77 without a pool of KEEP + 4 free
 * pages (or, on another allocator than tlbpack, a heap never on hugetlbfs pages).
 *
 * usage: fork_writers [FORKS [WRITERS [KEEP]]]
 */
#include "tp_shim.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define M 4096
#define STRIDE 64
static atomic_int stop;
static atomic_ulong lost, blocks, bad_blocks, spanning, forks_done;

static void *writer(void *arg) {
  unsigned long *want = calloc(M, sizeof *want);
  if (!want) T_DIE("fork_writers: calloc failed");
  while (!atomic_load(&stop)) {
    unsigned long *b = malloc((size_t)M * STRIDE * sizeof *b + 4096);
    if (!b) T_DIE("fork_writers: malloc failed: %s", strerror(errno));
    unsigned long forks_before = atomic_load(&forks_done);
    memset(b, 0, (size_t)M * STRIDE * sizeof *b);
    memset(want, 0, M * sizeof *want);
    for (unsigned long k = 0; k < 1000000; k++) { b[(k % M) * STRIDE]++; want[k % M]++; }
    if (atomic_load(&forks_done) != forks_before) atomic_fetch_add(&spanning, 1);
    unsigned long l = 0;
    for (int i = 0; i < M; i++) l += want[i] - b[i * STRIDE];
    if (l) { atomic_fetch_add(&lost, l); atomic_fetch_add(&bad_blocks, 1); }
    free(b);
    atomic_fetch_add(&blocks, 1);
  }
  free(want);
  return arg;
}

static long free_huge(void) {
  char l[128];
  long v = -1;
  FILE *f = fopen("/proc/meminfo", "r");
  while (f && fgets(l, sizeof l, f)) if (!strncmp(l, "HugePages_Free:", 15)) v = atol(l + 15);
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 300;
  int nw = argc > 2 ? atoi(argv[2]) : 2;
  long keep = argc > 3 ? atol(argv[3]) : 4;
  if (forks < 1 || nw < 1 || nw > 64 || keep < 0) {
    fprintf(stderr, "usage: fork_writers [FORKS >= 1 [WRITERS 1..64 [KEEP >= 0]]]\n");
    return 2;
  }
  free(malloc(100));
  long n = free_huge();
  if (n < keep + 4) {
    printf("fork_writers: SKIP: needs a hugetlbfs pool of at least %ld free pages, have %ld\n", keep + 4, n);
    return 77;
  }
  long held_kb = (n - keep) * 2048, base_kb = t_hugetlb_kb();
  if (mmap(NULL, (size_t)(n - keep) << 21, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0) == MAP_FAILED)
    T_DIE("fork_writers: could not take %ld huge pages: %s", n - keep, strerror(errno));
  pthread_t th[64];
  for (int t = 0; t < nw; t++) pthread_create(&th[t], NULL, writer, NULL);
  int failures = 0, f = 0, on_hugetlb = 0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;; f++) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    int proven = on_hugetlb > 0 && atomic_load(&spanning) > 0;
    if (f >= forks && (proven || now.tv_sec - t0.tv_sec >= 60)) break;
    /* The heap's hugetlbfs pages right before this fork: all of the process's, less ours. */
    if (t_hugetlb_kb() - base_kb - held_kb > 0) on_hugetlb++;
    pid_t c = fork();
    if (c < 0) T_DIE("fork_writers: fork failed: %s", strerror(errno));
    if (c == 0) _exit(0);
    int st;
    waitpid(c, &st, 0);
    atomic_fetch_add(&forks_done, 1);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failures++;
    usleep(1000);
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < nw; t++) pthread_join(th[t], NULL);
  printf("fork_writers: %d forks with %ld free huge pages left in the pool, %d writers: %lu blocks checked, "
         "%lu with lost writes (%lu increments lost), %d children failed; %lu blocks written across a fork, "
         "%d forks from a heap on hugetlbfs pages\n",
         f, keep, nw, (unsigned long)blocks, (unsigned long)bad_blocks, (unsigned long)lost, failures,
         (unsigned long)spanning, on_hugetlb);
  tp_stats_t st;
  if (on_hugetlb == 0 && !t_stats(&st)) {
    printf("fork_writers: SKIP: the heap never had hugetlbfs pages at a fork (not tlbpack: it does not use the pool)\n");
    return 77;
  }
  int proved = 1;
  if (blocks == 0) { printf("fork_writers: FAIL: no block was written and checked\n"); proved = 0; }
  if (spanning == 0) { printf("fork_writers: FAIL: no block was being written while a fork happened (in %d forks, 60 s)\n", f); proved = 0; }
  if (on_hugetlb == 0) {
    printf("fork_writers: FAIL: the heap had no hugetlbfs pages at any of %d forks: it fell back (to THP?), the short pool was not tested\n", f);
    proved = 0;
  }
  return lost || failures || !proved ? 1 : 0;
}
