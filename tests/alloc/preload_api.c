/* Runs under LD_PRELOAD=libtlbpack.so: the standard names, threads with cross-thread frees,
 * fork while other threads allocate, and (mode "phases") allocation in two phases around a
 * change of the hugetlbfs pool. Prints "ok" and exits 0, or names the failed check. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlbpack.h"

#define CHECK(c)                                                                    \
  do {                                                                              \
    if (!(c)) {                                                                     \
      fprintf(stderr, "preload_api: FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);     \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

static atomic_int stop;
static void *volatile sink;

static unsigned long long xs(unsigned long long *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Producer/consumer through a shared array: blocks are freed by other threads than the
 * ones that allocated them. Contents are checked before every free. */
#define SLOTS 4096
static _Atomic(unsigned char *) shared[SLOTS];

static void *churn(void *arg) {
  unsigned long long s = (uintptr_t)arg * 2654435761u + 1;
  for (int r = 0; r < 150000; r++) {
    size_t n = 1 + xs(&s) % 700;
    if (xs(&s) % 200 == 0) n = 1 + xs(&s) % (3 << 20);
    unsigned char *p = malloc(n);
    CHECK(p != NULL);
    p[0] = (unsigned char)n;
    p[n - 1] = (unsigned char)(n >> 3);
    unsigned char *old = atomic_exchange(&shared[xs(&s) % SLOTS], p);
    if (old) free(old);
  }
  return NULL;
}

static void *busy(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void *p = malloc(64 + (size_t)(rand() % 4000));
    sink = p;
    free(p);
  }
  return NULL;
}

static void api(void) {
  void *a = malloc(0), *b = malloc(0);
  CHECK(a && b && a != b);
  free(a);
  free(b);
  for (size_t n = 1; n < ((size_t)5 << 20); n = n * 3 / 2 + 1) {
    unsigned char *p = malloc(n);
    CHECK(p && (n < 16 || ((uintptr_t)p & 15) == 0));
    CHECK(malloc_usable_size(p) >= n);
    memset(p, 0xab, n);
    p = realloc(p, n * 2 + 1);
    CHECK(p && p[0] == 0xab && p[n - 1] == 0xab);
    free(p);
  }
  for (int k = 0; k < 3; k++) {
    size_t n = 100000;
    char *p = malloc(n);
    memset(p, 1, n);
    free(p);
    char *q = calloc(n, 1);
    for (size_t i = 0; i < n; i++) CHECK(q[i] == 0);
    free(q);
  }
  size_t huge = SIZE_MAX / 2;
  errno = 0;
  CHECK(calloc(huge, 4) == NULL && errno == ENOMEM);
  errno = 0;
  CHECK(malloc(huge + 100) == NULL && errno == ENOMEM);
  void *p;
  CHECK(posix_memalign(&p, 3, 10) == EINVAL);
  for (size_t al = 8; al <= ((size_t)2 << 20); al *= 2) {
    CHECK(posix_memalign(&p, al, 100) == 0 && (uintptr_t)p % al == 0);
    free(p);
    p = aligned_alloc(al, al * 3);
    CHECK(p && (uintptr_t)p % al == 0);
    free(p);
    p = memalign(al, 5);
    CHECK(p && (uintptr_t)p % al == 0);
    free(p);
  }
  p = valloc(10);
  CHECK(((uintptr_t)p & 4095) == 0);
  free(p);
  p = pvalloc(10);
  CHECK(((uintptr_t)p & 4095) == 0 && malloc_usable_size(p) >= 4096);
  free(p);
  p = reallocarray(NULL, 10, 10);
  CHECK(p);
  free(p);
  /* The glibc-internal names some programs call directly. */
  void *(*lm)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_malloc");
  void (*lf)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "__libc_free");
  int (*owns)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "tp_owns");
  CHECK(lm && lf && owns);
  p = lm(77);
  CHECK(owns(p));
  lf(p);
  p = malloc(10);
  CHECK(owns(p));
  free(p);
}

static void threads(void) {
  pthread_t t[4];
  for (long i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, churn, (void *)(i + 1)) == 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < SLOTS; i++) {
    unsigned char *q = atomic_exchange(&shared[i], NULL);
    if (q) free(q);
  }
}

static void fork_while_busy(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, busy, NULL) == 0);
  for (int k = 0; k < 20; k++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      for (int i = 0; i < 1000; i++) free(malloc(16 + (size_t)i));
      void *big = malloc(3 << 20);
      memset(big, 1, 3 << 20);
      free(big);
      _exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

static void print_sources(const char *label) {
  void (*get)(tp_stats_t *) = (void (*)(tp_stats_t *))dlsym(RTLD_DEFAULT, "tp_stats_get");
  CHECK(get != NULL); /* found only when tlbpack is preloaded */
  tp_stats_t s;
  get(&s);
  printf("%s hugetlbfs=%zu thp=%zu 4k=%zu fallbacks=%zu\n", label, s.pages_hugetlbfs, s.pages_thp, s.pages_4k,
         s.fallbacks);
  fflush(stdout);
}

/* Two phases of 2 MiB blocks with a pause between, for exhaustion.sh to change the pool. */
static void phases(int n) {
  static char *keep[256];
  for (int i = 0; i < n; i++) {
    keep[i] = malloc((size_t)2 << 20);
    CHECK(keep[i]);
    memset(keep[i], i, (size_t)2 << 20);
  }
  print_sources("phase1");
  char line[16];
  CHECK(fgets(line, sizeof line, stdin) != NULL);
  for (int i = n; i < 2 * n; i++) {
    keep[i] = malloc((size_t)2 << 20);
    CHECK(keep[i]);
    memset(keep[i], i, (size_t)2 << 20);
  }
  for (int i = 0; i < 2 * n; i++) CHECK(keep[i][12345] == (char)i);
  print_sources("phase2");
}

/* glibc's malloc_trim, mallinfo2, mallinfo and malloc_stats answer for tlbpack's heap: live
 * bytes follow the program's blocks, the pages its frees emptied wait in keepcost, and
 * malloc_trim(0) gives them back (1), then finds nothing more (0). */
static void trim_and_info(void) {
  enum { N = 8 };
  const size_t sz = (size_t)3 << 20;
  void *big[N];
  struct mallinfo2 m0 = mallinfo2();
  CHECK(m0.arena > 0 && m0.uordblks <= m0.arena && m0.fordblks == m0.arena - m0.uordblks);
  for (int i = 0; i < N; i++) {
    CHECK((big[i] = malloc(sz)) != NULL);
    memset(big[i], i + 1, sz);
  }
  struct mallinfo2 m1 = mallinfo2();
  CHECK(m1.uordblks >= m0.uordblks + N * sz);
  CHECK(m1.arena >= m1.uordblks && m1.fordblks == m1.arena - m1.uordblks);
  struct mallinfo m1i = mallinfo();
  CHECK((size_t)m1i.uordblks == m1.uordblks && (size_t)m1i.arena == m1.arena);
  for (int i = 0; i < N; i++) free(big[i]);
  struct mallinfo2 m2 = mallinfo2();
  CHECK(m2.uordblks + N * sz <= m1.uordblks);
  CHECK(m2.keepcost > 0); /* retain_mb: 16 MiB of emptied pages kept for reuse */
  CHECK(malloc_trim(0) == 1);
  struct mallinfo2 m3 = mallinfo2();
  CHECK(m3.keepcost == 0);
  CHECK(m3.arena + m2.keepcost <= m2.arena);
  CHECK(malloc_trim(0) == 0);
  /* malloc_stats: tlbpack's counters on stderr */
  int fds[2];
  CHECK(pipe(fds) == 0);
  fflush(stderr);
  int saved = dup(2);
  CHECK(saved >= 0 && dup2(fds[1], 2) == 2);
  malloc_stats();
  fflush(stderr);
  CHECK(dup2(saved, 2) == 2);
  close(saved);
  close(fds[1]);
  char buf[8192];
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  CHECK(n > 0);
  buf[n] = 0;
  CHECK(strstr(buf, "tlbpack") != NULL && strstr(buf, "live_bytes") != NULL);
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "phases") == 0) {
    phases(atoi(argv[2]));
    return 0;
  }
  api();
  trim_and_info();
  threads();
  fork_while_busy();
  print_sources("sources");
  printf("ok\n");
  return 0;
}
