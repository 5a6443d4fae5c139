/* Randomized fork stress: a parent with a heap of every size class and large blocks forks
 * children that live while it goes on allocating and writing; each child checks what it
 * inherited, then allocates, frees, reallocates and rewrites (its writes to inherited blocks
 * are copy-on-write faults on pages it shares with the parent), checks again and exits. Each
 * round also starts /bin/true by fork + exec, vfork + exec and posix_spawn. Worker
 * threads in the parent do the same to their own blocks, and one of them forks too. Every
 * block carries a tag at its start, at every 4 KiB and at its end; a mismatch is lost or
 * foreign data. A child must share no hugetlbfs page with its parent (Shared_Hugetlb in its
 * smaps_rollup, right after the fork). Nothing is allowed to die of a signal: a child's death is counted and fails the
 * run; the parent's own death is its exit status.
 *
 * Run under LD_PRELOAD of any malloc. Under tlbpack the parent prints its stats at exit
 * (stats:json), which fork_stress.sh reads to see that pool pages were moved at forks.
 *
 * usage: fork_stress [SECONDS [CHILDREN [HEAP_MIB [SEED [THREADS]]]]]
 * Exit 0: every check passed and no process died; 1 otherwise (the reasons on stdout).
 */
#include "tp_shim.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  unsigned char *p;
  size_t n;
  uint64_t tag;
} blk_t;

typedef struct {
  blk_t *b;
  size_t nb;
  size_t bytes; /* live bytes the set holds */
  unsigned long long rng;
  uint64_t gen;
} set_t;

static atomic_ulong mismatches;

/* Sizes of every kind: small classes, slot-sized and medium buffers, large blocks past 2 MiB. */
static size_t draw_size(unsigned long long *r) {
  unsigned k = (unsigned)(t_rand(r) % 100);
  if (k < 55) return 1 + t_rand(r) % 1024;
  if (k < 80) return 1024 + t_rand(r) % (32 << 10);
  if (k < 94) return (32 << 10) + t_rand(r) % (1 << 20);
  return (1 << 20) + t_rand(r) % (6 << 20);
}

static void put(unsigned char *p, size_t n, size_t at, uint64_t tag) {
  if (at + 8 <= n) memcpy(p + at, &tag, 8);
  else for (size_t i = at; i < n; i++) p[i] = (unsigned char)(tag >> (8 * (i - at)));
}

static int check1(unsigned char *p, size_t n, size_t at, uint64_t tag) {
  if (at + 8 <= n) {
    uint64_t v;
    memcpy(&v, p + at, 8);
    return v == tag;
  }
  for (size_t i = at; i < n; i++)
    if (p[i] != (unsigned char)(tag >> (8 * (i - at)))) return 0;
  return 1;
}

/* The last 8 bytes hold a tag too where they overlap none of the 4 KiB ones. */
static int end_tag(size_t n) {
  size_t o = (n - 8) % 4096;
  return n >= 16 && o >= 8 && o <= 4096 - 8;
}

/* The tag at the start, every 4 KiB and the end: every page of the block written. */
static void fill(blk_t *b) {
  for (size_t at = 0; at < b->n; at += 4096) put(b->p, b->n, at, b->tag);
  if (end_tag(b->n)) put(b->p, b->n, b->n - 8, b->tag);
}

static int check(const blk_t *b, const char *who) {
  int ok = 1;
  for (size_t at = 0; at < b->n && ok; at += 4096) ok = check1(b->p, b->n, at, b->tag);
  if (ok && end_tag(b->n)) ok = check1(b->p, b->n, b->n - 8, b->tag);
  if (!ok) {
    atomic_fetch_add(&mismatches, 1);
    printf("fork_stress: FAIL: %s (pid %d): block %p of %zu bytes lost its tag %llx\n", who, (int)getpid(),
           (void *)b->p, b->n, (unsigned long long)b->tag);
    fflush(stdout);
  }
  return ok;
}

static int check_all(set_t *s, const char *who) {
  int ok = 1;
  for (size_t i = 0; i < s->nb; i++)
    if (s->b[i].p && !check(&s->b[i], who)) ok = 0;
  return ok;
}

static void new_block(set_t *s, size_t i) {
  size_t n = draw_size(&s->rng);
  unsigned char *p = malloc(n);
  if (!p) T_DIE("fork_stress: malloc(%zu) failed: %s", n, strerror(errno));
  s->b[i] = (blk_t){p, n, ((uint64_t)getpid() << 40) ^ (++s->gen << 8) ^ i};
  s->bytes += n;
  fill(&s->b[i]);
}

static void set_init(set_t *s, size_t bytes, unsigned long long seed) {
  memset(s, 0, sizeof *s);
  s->rng = seed | 1;
  size_t cap = 1024;
  s->b = calloc(cap, sizeof *s->b);
  while (s->bytes < bytes) {
    if (s->nb == cap) {
      s->b = realloc(s->b, 2 * cap * sizeof *s->b);
      if (!s->b) T_DIE("fork_stress: realloc of the block list failed");
      memset(s->b + cap, 0, cap * sizeof *s->b);
      cap *= 2;
    }
    new_block(s, s->nb++);
  }
}

/* One random operation: rewrite in place, replace, or realloc (kept contents checked). */
static void mutate(set_t *s, const char *who) {
  size_t i = (size_t)(t_rand(&s->rng) % s->nb);
  blk_t *b = &s->b[i];
  switch (t_rand(&s->rng) % 3) {
  case 0:
    if (!check(b, who)) return;
    b->tag ^= (uint64_t)1 << 63 | ++s->gen;
    fill(b);
    break;
  case 1:
    if (!check(b, who)) return;
    s->bytes -= b->n;
    free(b->p);
    new_block(s, i);
    break;
  default: {
    if (!check(b, who)) return;
    size_t n = draw_size(&s->rng), keep = n < b->n ? n : b->n;
    unsigned char *p = realloc(b->p, n);
    if (!p) T_DIE("fork_stress: realloc(%zu) failed: %s", n, strerror(errno));
    /* What realloc kept: the tags below min(old, new), as far as they are whole. */
    blk_t kept = {p, keep & ~(size_t)4095, b->tag};
    if (kept.n >= 4096) {
      for (size_t at = 0; at < kept.n; at += 4096)
        if (!check1(p, kept.n, at, kept.tag)) {
          atomic_fetch_add(&mismatches, 1);
          printf("fork_stress: FAIL: %s (pid %d): realloc to %zu lost the contents at %zu\n", who, (int)getpid(), n, at);
          break;
        }
    }
    s->bytes += n - b->n;
    *b = (blk_t){p, n, b->tag ^ ++s->gen};
    fill(b);
  }
  }
}

static void set_free(set_t *s) {
  for (size_t i = 0; i < s->nb; i++) free(s->b[i].p);
  free(s->b);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* A child: checks what it inherited, works on it (and on new memory) for a while, checks again.
 * It shares no hugetlbfs page with its parent: a shared one is copied on write from the pool,
 * and with none free the writer dies of SIGBUS. */
static void child(set_t *s, unsigned long long seed, double live_s) {
  s->rng ^= seed * 0x9E3779B97F4A7C15ULL;
  long shared = t_proc_kb("/proc/self/smaps_rollup", "Shared_Hugetlb:");
  if (shared > 0) {
    atomic_fetch_add(&mismatches, 1);
    printf("fork_stress: FAIL: child (pid %d) shares %ld kB of hugetlbfs pages with its parent\n", (int)getpid(), shared);
    fflush(stdout);
  }
  int ok = check_all(s, "child, inherited");
  set_t extra;
  set_init(&extra, s->bytes / 4, seed + 7); /* new pages of its own */
  double end = now() + live_s;
  unsigned long ops = 0;
  while (now() < end || ops < 200) {
    mutate(s, "child");
    if (ops++ % 4 == 0) mutate(&extra, "child, own blocks");
  }
  ok &= check_all(s, "child, end") & check_all(&extra, "child, own blocks at end");
  set_free(&extra);
  exit(ok && atomic_load(&mismatches) == 0 ? 0 : 3); /* exit(): the child's stats are printed too */
}

static atomic_int stop;
static atomic_ulong forks, child_ok, child_bad, child_signalled, signals_seen[65];
static int nchildren;
static double child_live;

static void reap(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    atomic_fetch_add(&child_signalled, 1);
    atomic_fetch_add(&signals_seen[sig & 63], 1);
    printf("fork_stress: FAIL: child %d died of signal %d (%s)\n", (int)pid, sig, strsignal(sig));
    fflush(stdout);
  } else if (WEXITSTATUS(st) == 0) {
    atomic_fetch_add(&child_ok, 1);
  } else {
    atomic_fetch_add(&child_bad, 1);
    printf("fork_stress: FAIL: child %d exited with status %d\n", (int)pid, WEXITSTATUS(st));
    fflush(stdout);
  }
}

extern char **environ;

/* /bin/true three ways; each must exit 0. */
static void spawn_true(void) {
  char *argv[] = {"true", NULL};
  pid_t c = fork();
  if (c == 0) {
    execv("/bin/true", argv);
    _exit(127);
  }
  if (c > 0) reap(c);
  c = vfork();
  if (c == 0) {
    execv("/bin/true", argv);
    _exit(127);
  }
  if (c > 0) reap(c);
  if (posix_spawn(&c, "/bin/true", NULL, NULL, argv, environ) == 0) reap(c);
  else atomic_fetch_add(&child_bad, 1);
  atomic_fetch_add(&forks, 3);
}

typedef struct {
  set_t set;
  int forker;
  unsigned long long seed;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  unsigned long ops = 0;
  while (!atomic_load(&stop)) {
    mutate(&w->set, "parent thread");
    if (w->forker && ++ops % 2000 == 0) {
      fflush(stdout);
      pid_t c = fork();
      if (c < 0) T_DIE("fork_stress: fork from a thread failed: %s", strerror(errno));
      if (c == 0) child(&w->set, w->seed + ops, child_live / 2);
      atomic_fetch_add(&forks, 1);
      reap(c);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 5;
  nchildren = argc > 2 ? atoi(argv[2]) : 3;
  long heap_mib = argc > 3 ? atol(argv[3]) : 100;
  unsigned long long seed = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
  int nthreads = argc > 5 ? atoi(argv[5]) : 2;
  if (secs <= 0 || nchildren < 1 || nchildren > 64 || heap_mib < 1 || nthreads < 0 || nthreads > 16) {
    fprintf(stderr, "usage: fork_stress [SECONDS > 0 [CHILDREN 1..64 [HEAP_MIB >= 1 [SEED [THREADS 0..16]]]]]\n");
    return 2;
  }
  child_live = 0.3;
  set_t main_set;
  set_init(&main_set, (size_t)heap_mib << 20, seed);
  worker_t *w = calloc((size_t)nthreads + 1, sizeof *w);
  pthread_t th[16];
  for (int t = 0; t < nthreads; t++) {
    w[t].forker = t == 0;
    w[t].seed = seed * 31 + (unsigned long long)t;
    set_init(&w[t].set, ((size_t)heap_mib << 20) / 8, w[t].seed);
    pthread_create(&th[t], NULL, worker, &w[t]);
  }
  pid_t kids[64];
  int nk = 0;
  unsigned long rounds = 0;
  double end = now() + secs;
  while (now() < end) {
    /* Children overlap: a new one is forked while the others still live and write. */
    for (int k = 0; k < nchildren; k++) {
      fflush(stdout);
      pid_t c = fork();
      if (c < 0) T_DIE("fork_stress: fork failed: %s", strerror(errno));
      if (c == 0) child(&main_set, seed * 1000003 + rounds * 64 + (unsigned long long)k, child_live);
      atomic_fetch_add(&forks, 1);
      kids[nk++] = c;
      for (int m = 0; m < 300; m++) mutate(&main_set, "parent"); /* writes while children live */
    }
    spawn_true();
    for (int k = 0; k < nk; k++) reap(kids[k]);
    nk = 0;
    check_all(&main_set, "parent");
    rounds++;
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < nthreads; t++) {
    pthread_join(th[t], NULL);
    check_all(&w[t].set, "parent thread, end");
  }
  check_all(&main_set, "parent, end");
  printf("fork_stress: %lu forks (%lu rounds of %d children and 3 of /bin/true, %d threads, one forking), %lu children ok, "
         "%lu died of a signal, %lu exited with an error, %lu mismatches in the parent's and children's checks\n",
         (unsigned long)forks, rounds, nchildren, nthreads, (unsigned long)child_ok, (unsigned long)child_signalled,
         (unsigned long)child_bad, (unsigned long)mismatches);
  for (int t = 0; t < nthreads; t++) set_free(&w[t].set);
  set_free(&main_set);
  free(w);
  return child_signalled || child_bad || mismatches || forks == 0 ? 1 : 0;
}
