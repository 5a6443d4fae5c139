/* fork() while other threads write to their blocks, with the hugetlbfs pool nearly empty: an
 * allocator that, to keep fork children safe, moves the heap's huge pages at fork time must not
 * lose a write made meanwhile. Writer threads allocate 3 MiB blocks (their own huge pages),
 * increment counters spread over them and keep the same counts off the heap; every block is
 * compared before it is freed. The main thread forks FORKS times (children exit at once).
 * Run with TLBPACK_CONF=retain_mb:0 so that new blocks take new pages from the pool.
 * Exit 0 pass, 1 lost writes, 77 without a pool of KEEP + 4 free pages.
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
#include <unistd.h>

#define M 4096
#define STRIDE 64
static atomic_int stop;
static atomic_ulong lost, blocks, bad_blocks;

static void *writer(void *arg) {
  unsigned long *want = calloc(M, sizeof *want);
  if (!want) T_DIE("fork_writers: calloc failed");
  while (!atomic_load(&stop)) {
    unsigned long *b = malloc((size_t)M * STRIDE * sizeof *b + 4096);
    if (!b) T_DIE("fork_writers: malloc failed: %s", strerror(errno));
    memset(b, 0, (size_t)M * STRIDE * sizeof *b);
    memset(want, 0, M * sizeof *want);
    for (unsigned long k = 0; k < 1000000; k++) { b[(k % M) * STRIDE]++; want[k % M]++; }
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
  if (mmap(NULL, (size_t)(n - keep) << 21, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0) == MAP_FAILED)
    T_DIE("fork_writers: could not take %ld huge pages: %s", n - keep, strerror(errno));
  pthread_t th[64];
  for (int t = 0; t < nw; t++) pthread_create(&th[t], NULL, writer, NULL);
  int failures = 0;
  for (int f = 0; f < forks; f++) {
    pid_t c = fork();
    if (c < 0) T_DIE("fork_writers: fork failed: %s", strerror(errno));
    if (c == 0) _exit(0);
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failures++;
    usleep(1000);
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < nw; t++) pthread_join(th[t], NULL);
  printf("fork_writers: %d forks with %ld free huge pages left in the pool, %d writers: %lu blocks checked, "
         "%lu with lost writes (%lu increments lost), %d children failed\n",
         forks, keep, nw, (unsigned long)blocks, (unsigned long)bad_blocks, (unsigned long)lost, failures);
  return lost || failures ? 1 : 0;
}
