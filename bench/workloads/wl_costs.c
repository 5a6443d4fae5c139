/* What an allocator costs a program before any TLB saving: one workload per cost a user meets
 * first.
 *
 * --mode sites    64 allocation sites (64 distinct call sites), each keeping --keep blocks of
 *                 16-600 B live while it churns: memory must follow what is live, not
 *                 sites x size classes. ns per free+malloc.
 * --mode threads  two threads side by side, each with its own working set of --keep blocks of
 *                 16-512 B, freeing a random one and allocating another (glibc's thread
 *                 benchmark shape): no block or metadata line may be shared. ns per
 *                 free+malloc, per thread (wall time / ops of one thread).
 * --mode sizes    the same two threads with sizes spread evenly over the powers of two from 4 B
 *                 to 32 KiB (a 1/x distribution): a third of the blocks are over 1 KiB.
 * --mode glibc    glibc's thread benchmark's shape: each of two threads keeps --keep slots,
 *                 frees a slot and allocates a block for it, sizes 4 B-32 KiB from a 1/x^2
 *                 distribution (three blocks in four are 16 B or less, one in 250 is over
 *                 1 KiB), and writes the block whole, a byte at a time. Slots and sizes come
 *                 from two tables drawn before the clock starts (4 x --keep slots, 8000
 *                 sizes), so the loop is the allocator and the writes. ns per
 *                 free+malloc+write, per thread.
 * --mode scratch  Hoard's cache-scratch: the main thread allocates one 8-byte block per thread
 *                 (neighbours on one cache line) and hands them over; each of two threads frees
 *                 its block, then --ops times allocates 8 bytes, writes them 1000 times and
 *                 frees them. An allocator that gives a thread back the block it was handed
 *                 makes both threads write one line (passive false sharing). ns per
 *                 malloc + 1000 writes + free.
 * --mode churn    two threads replace random entries of a shared table of --keep blocks of
 *                 16-1024 B (server-style churn: about half the frees cross threads). ns per
 *                 free+malloc, per thread.
 * --mode batches  xmalloc-test's shape: each of two threads allocates batches of 64 blocks of
 *                 8-128 B, pushes each onto a shared stack (one mutex) and frees the batch
 *                 below it, the other thread's when the two alternate: blocks handed over a
 *                 batch at a time. ns per malloc+free of one block, per thread.
 * --mode bursts   sh6bench's shape with small blocks: each of two threads allocates a burst of
 *                 --keep blocks of 8-128 B at one call site (the same site in both threads),
 *                 writes each, then frees the burst, in reverse order every other time (a
 *                 request's or a parse's nodes). More blocks than a thread cache holds: the
 *                 bursts go through the shared slabs. ns per malloc+free of one block, per
 *                 thread.
 * --mode handover rptest's shape: each of two threads keeps --keep blocks of 16 B-16 KiB
 *                 (log-uniform: about as many in each doubling, most bytes in the large ones),
 *                 frees a random one and allocates another from one call site, writing it
 *                 whole; every 16th new block goes into a random slot of the other thread's
 *                 table, whose block it takes instead (atomic exchanges). Memory: what two
 *                 threads' mixed sizes hold when blocks move between them. ns per free+malloc
 *                 (and the writes), per thread.
 * --mode mixed   random-size blocks, a part of them handed between two threads: each of two
 *                 threads, --ops loops, allocates an array of --keep pointers and --keep
 *                 blocks of 8-16000 B (uniform; the first 64 bytes written), frees a random one
 *                 and allocates another in its place 100 times, frees all but the first tenth,
 *                 and hands the array with that tenth still live to the other thread (an atomic
 *                 exchange into the other's mailbox); then it frees the blocks and the array of
 *                 what it takes out of its own mailbox, which the other thread allocated
 *                 (cross-thread frees). An array of its own still in the other's mailbox (the
 *                 other thread has not taken it yet) comes back in the exchange and is freed
 *                 here. Every malloc and free is a memory operation; ns per memory operation
 *                 of the process's CPU time (getrusage: user + sys of both threads), not wall
 *                 time: time a thread spends descheduled on a shared machine is not the
 *                 allocator's. Also reported: ops_per_cpu_s, the wall time per op, and how many
 *                 arrays crossed threads and how many came back to their own thread.
 * --mode medium   one thread keeps --keep buffers of 64 KiB-1 MiB (a codec's or a parser's
 *                 buffers), frees a random one and allocates another, writing its first and last
 *                 bytes: the allocator's path for blocks between its small classes and whole
 *                 pages. ns per free+malloc.
 * --mode partial one thread keeps --keep buffers of 64 KiB-4 MiB, each written in its first
 *                 tenth only (buffers sized for the worst case: I/O, per-connection or scratch
 *                 buffers), frees a random one and allocates another, written the same way.
 *                 Memory is what a buffer used in part costs: the pages written, or every huge
 *                 page touched. ns per free+malloc+writes.
 * --mode buffers the same with buffers of 33-256 KiB (more than 32 KiB, the largest a slab
 *                 class holds: between a slot and a medium run), --keep of them live: the
 *                 allocator's path for the largest slab classes when the program writes a part of
 *                 each block.
 * --mode fork    a server that saves in the background (redis's BGSAVE shape): one process keeps
 *                 --keep records of 64 B-1 KiB, written whole; each of --ops rounds forks a child
 *                 that reads every record (the snapshot it would write) and exits, while the
 *                 parent replaces a tenth of the records at random (free + malloc + write), and
 *                 waits for the child. ns per round: the fork, the parent's writes beside a
 *                 live child (its copy-on-write faults) and the wait. Memory: the parent's peak.
 *                 Also reported (tlbbench's fork table): the first fork's and the later forks'
 *                 latency (the fork() call in the parent); the TLB entries that map the parent's
 *                 memory (smaps: one per 2 MiB page mapped huge, one per other 4 KiB page) before
 *                 the first fork, while each child lives (after the parent's writes), and after
 *                 the last child has exited and the parent has gone on replacing records for
 *                 --settle-ms; and the memory of parent and child together while the child lives
 *                 (their Pss + hugetlb pages; the most over the rounds). Measuring is not timed.
 * --mode startup  runs --prog (argv words split on ',', '_' for a space) --ops times, one after another,
 *                 each with this process's environment (so the allocator preloaded here is
 *                 preloaded there): ns per run. Memory: the program's own VmHWM + HugetlbPages,
 *                 from one more run of /usr/bin/python3 that reads /proc/self/status (when the
 *                 program is python3), else the children's peak RSS.
 * No trace: these measure time and memory, not placement. */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>


static unsigned long n_ops = 2000000, n_keep = 36;
static const char *mode = "sites", *prog = "/usr/bin/python3,-c,pass", *label;

static void *map_array(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) wl_die("no memory for %zu bytes of workload state", n);
  return p;
}

/* ---- sites ------------------------------------------------------------------------------ */
#define NSITES 64
typedef void *(*site_fn)(size_t);
/* noipa + the empty asm: 64 real call sites, not folded into one and not tail calls. */
#define SITE(i)                                                                                \
  static __attribute__((noipa)) void *site##i(size_t n) {                                      \
    void *p = malloc(n);                                                                       \
    __asm__ volatile("" ::: "memory");                                                         \
    return p;                                                                                  \
  }
#define SITE8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
SITE8(0) SITE8(1) SITE8(2) SITE8(3) SITE8(4) SITE8(5) SITE8(6) SITE8(7)
#define FN8(a) site##a##0, site##a##1, site##a##2, site##a##3, site##a##4, site##a##5, site##a##6, site##a##7
static const site_fn sites[NSITES] = {FN8(0), FN8(1), FN8(2), FN8(3), FN8(4), FN8(5), FN8(6), FN8(7)};

static double run_sites(void) {
  void **live = map_array(NSITES * n_keep * sizeof *live);
  uint64_t s = wl_seed;
  for (unsigned long i = 0; i < NSITES * n_keep; i++) {
    live[i] = sites[i / n_keep](wl_rand_range(&s, 16, 600));
    if (!live[i]) wl_die("out of memory");
    memset(live[i], 1, 16);
  }
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_ops; i++) {
    size_t k = wl_rand(&s) % (NSITES * n_keep);
    free(live[k]);
    live[k] = sites[k / n_keep](wl_rand_range(&s, 16, 600));
    if (!live[k]) wl_die("out of memory at op %lu", i);
    memset(live[k], (int)i, 16);
  }
  double ns = wl_now_ns() - t0;
  wl_note_peak();
  for (unsigned long i = 0; i < NSITES * n_keep; i++) free(live[i]);
  return ns;
}

/* ---- threads side by side, and churn across threads ------------------------------------- */
static void **table; /* churn: shared, one atomic exchange per replacement */
static pthread_barrier_t go;
static atomic_int go_n;
static double go_at[2];
/* The two threads' start: each notes when it passed the barrier, and a run is timed from the
 * earlier of the two to the end of both. Timed from the main thread's own pass, a run read
 * short whenever the main thread was descheduled there (one tiny run of bursts-mt read 0.13 ns
 * a malloc + free, its reruns 21-55). */
static void go_wait(void) {
  pthread_barrier_wait(&go);
  double t = wl_now_ns();
  int i = atomic_fetch_add(&go_n, 1);
  if (i < 2) go_at[i] = t;
}

static int log_sizes; /* --mode sizes */

/* 16-512 B evenly; or (log_sizes) a power of two from 4 B to 16 KiB, evenly, plus up to as
 * much again: 4 B-32 KiB with about as many blocks in each doubling. */
static size_t side_size(uint64_t *s) {
  if (!log_sizes) return wl_rand_range(s, 16, 512);
  uint64_t r = wl_rand(s);
  size_t b = (size_t)4 << (r % 13);
  return b + (size_t)((r >> 8) % b);
}

static void *side_by_side(void *arg) {
  uint64_t s = wl_seed + (uint64_t)(uintptr_t)arg * 7919;
  void **own = map_array(n_keep * sizeof *own);
  for (unsigned long i = 0; i < n_keep; i++) {
    own[i] = malloc(side_size(&s));
    if (!own[i]) wl_die("out of memory");
  }
  go_wait();
  for (unsigned long i = 0; i < n_ops; i++) {
    size_t k = wl_rand(&s) % n_keep;
    free(own[k]);
    size_t n = side_size(&s);
    char *p = malloc(n);
    if (!p) wl_die("out of memory at op %lu", i);
    memset(p, (int)i, n < 16 ? n : 16);
    own[k] = p;
  }
  wl_note_peak();
  for (unsigned long i = 0; i < n_keep; i++) free(own[i]);
  munmap(own, n_keep * sizeof *own);
  return NULL;
}

/* --mode glibc: the tables both threads walk, drawn once (main, before the threads start). */
enum { GL_SIZES = 8000 };
static uint32_t gl_size[GL_SIZES], *gl_slot;
static unsigned long gl_nslot;

/* 4 B-32 KiB with density 1/x^2, by inverting its distribution function:
 * x = 1 / (1/4 - u (1/4 - 1/32768)), u uniform in [0, 1). */
static void glibc_tables(void) {
  uint64_t s = wl_seed;
  for (int i = 0; i < GL_SIZES; i++) {
    double u = (double)(wl_rand(&s) >> 11) / (double)(1ull << 53);
    double x = 1.0 / (0.25 - u * (0.25 - 1.0 / 32768));
    gl_size[i] = x < 4 ? 4 : x > 32768 ? 32768 : (uint32_t)x;
  }
  gl_nslot = 4 * n_keep;
  gl_slot = map_array(gl_nslot * sizeof *gl_slot);
  for (unsigned long i = 0; i < gl_nslot; i++) gl_slot[i] = (uint32_t)(wl_rand(&s) % n_keep);
}

static void *glibc_thread(void *arg) {
  void **own = map_array(n_keep * sizeof *own); /* all NULL: the first frees are free(NULL) */
  unsigned long si = (uintptr_t)arg * 997 % GL_SIZES, oi = 0;
  go_wait();
  for (unsigned long i = 0; i < n_ops; i++) {
    uint32_t k = gl_slot[oi], n = gl_size[si];
    oi = oi + 1 == gl_nslot ? 0 : oi + 1;
    si = si + 1 == GL_SIZES ? 0 : si + 1;
    free(own[k]);
    unsigned char *p = malloc(n);
    if (!p) wl_die("out of memory at op %lu", i);
    for (uint32_t j = 0; j < n; j++) ((volatile unsigned char *)p)[j] = (unsigned char)j;
    own[k] = p;
  }
  wl_note_peak();
  for (unsigned long i = 0; i < n_keep; i++) free(own[i]);
  munmap(own, n_keep * sizeof *own);
  return NULL;
}

static double run_medium(void) {
  void **own = map_array(n_keep * sizeof *own);
  uint64_t s = wl_seed;
  for (unsigned long i = 0; i < n_keep; i++) {
    size_t n = wl_rand_range(&s, 64 << 10, 1 << 20);
    char *p = malloc(n);
    if (!p) wl_die("out of memory");
    p[0] = p[n - 1] = 1;
    own[i] = p;
  }
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_ops; i++) {
    size_t k = wl_rand(&s) % n_keep, n = wl_rand_range(&s, 64 << 10, 1 << 20);
    free(own[k]);
    char *p = malloc(n);
    if (!p) wl_die("out of memory at op %lu", i);
    p[0] = p[n - 1] = (char)i;
    own[k] = p;
  }
  double ns = wl_now_ns() - t0;
  wl_note_peak();
  for (unsigned long i = 0; i < n_keep; i++) free(own[i]);
  munmap(own, n_keep * sizeof *own);
  return ns;
}

/* ---- fork: a background save ------------------------------------------------------------ */
static char *record(uint64_t *s, unsigned long i) {
  size_t n = wl_rand_range(s, 64, 1024);
  char *p = malloc(n);
  if (!p) wl_die("out of memory at record %lu", i);
  memset(p, (int)i, n);
  p[0] = (char)n; /* what the child reads back: every record's first byte */
  return p;
}

/* TLB entries that map process pid's memory: wl_resident's reading of its smaps (one per huge
 * page, one per other 4 KiB page in memory). */
static long map_entries(pid_t pid) {
  wl_resident_t r;
  return wl_resident(pid, &r) == 0 ? r.entries_anon + r.entries_file : -1;
}

/* Pss + hugetlb pages of pid, kB (a shared hugetlb page counted half in each of two). */
static long pss_kb(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long pss = 0, priv = 0, shared = 0, v;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "Pss: %ld", &v) == 1) pss = v;
    else if (sscanf(line, "Private_Hugetlb: %ld", &v) == 1) priv = v;
    else if (sscanf(line, "Shared_Hugetlb: %ld", &v) == 1) shared = v;
  }
  fclose(f);
  return pss + priv + shared / 2;
}

static double mix_cpu_s = -1; /* --mode mixed: CPU seconds of the two threads' phase */
static unsigned long settle_ms = 300;
static long fork_entries[3] = {-1, -1, -1}, fork_mem_kb = -1;
static double fork_first_ns = -1, fork_later_ns[64];
static unsigned fork_nlater;

static void replace_some(char **rec, uint64_t *s, unsigned long n) {
  for (unsigned long k = 0; k < n; k++) {
    size_t i = wl_rand(s) % n_keep;
    free(rec[i]);
    rec[i] = record(s, i);
  }
}

static double run_fork(void) {
  char **rec = map_array(n_keep * sizeof *rec);
  uint64_t s = wl_seed;
  for (unsigned long i = 0; i < n_keep; i++) rec[i] = record(&s, i);
  fork_entries[0] = map_entries(getpid());
  double t0 = wl_now_ns(), untimed = 0;
  for (unsigned long r = 0; r < n_ops; r++) {
    int ready[2], go[2];
    if (pipe(ready) || pipe(go)) wl_die("pipe: %s", strerror(errno));
    double tf = wl_now_ns();
    pid_t c = fork();
    tf = wl_now_ns() - tf;
    if (c < 0) wl_die("fork failed: %s", strerror(errno));
    if (c == 0) {
      unsigned long sum = 0;
      for (unsigned long i = 0; i < n_keep; i++) sum += (unsigned char)rec[i][0];
      char b = 1;
      /* Said read, then kept alive until the parent has measured both processes. */
      if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) < 0) _exit(2);
      _exit(sum == 0 ? 1 : 0);
    }
    if (r == 0) fork_first_ns = tf;
    else if (fork_nlater < 64) fork_later_ns[fork_nlater++] = tf;
    replace_some(rec, &s, n_keep / 10);
    char b;
    if (read(ready[0], &b, 1) != 1) b = 0; /* the child died: its status says so below */
    double tm = wl_now_ns();
    long e = map_entries(getpid()), m = pss_kb(getpid()), mc = pss_kb(c);
    if (e > fork_entries[1]) fork_entries[1] = e;
    if (m >= 0 && mc >= 0 && m + mc > fork_mem_kb) fork_mem_kb = m + mc;
    untimed += wl_now_ns() - tm;
    if (write(go[1], &b, 1) < 0) {}
    int st;
    while (waitpid(c, &st, 0) < 0 && errno == EINTR) {}
    close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      wl_die("round %lu: the child %s %d", r, WIFSIGNALED(st) ? "died of signal" : "exited with status",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  }
  double ns = wl_now_ns() - t0 - untimed;
  /* The children are gone: the parent goes on replacing records (a server's writes), a
   * thousandth of them a millisecond, then its entries are read. */
  double end = wl_now_ns() + settle_ms * 1e6;
  while (wl_now_ns() < end) {
    replace_some(rec, &s, n_keep / 1000 + 1);
    usleep(1000);
  }
  fork_entries[2] = map_entries(getpid());
  wl_note_peak();
  for (unsigned long i = 0; i < n_keep; i++) free(rec[i]);
  munmap(rec, n_keep * sizeof *rec);
  return ns;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* --mode partial: a buffer of 64 KiB-4 MiB written in its first tenth; --mode buffers: of
 * 33-256 KiB. */
static size_t part_min = 64 << 10, part_max = 4 << 20;
static char *partial_buffer(uint64_t *s, unsigned long i) {
  size_t n = wl_rand_range(s, part_min, part_max);
  char *p = malloc(n);
  if (!p) wl_die("out of memory at buffer %lu", i);
  memset(p, (int)(i & 0x7f) + 1, n / 10);
  return p;
}

static double run_partial(void) {
  char **own = map_array(n_keep * sizeof *own);
  uint64_t s = wl_seed;
  for (unsigned long i = 0; i < n_keep; i++) own[i] = partial_buffer(&s, i);
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_ops; i++) {
    size_t k = wl_rand(&s) % n_keep;
    free(own[k]);
    own[k] = partial_buffer(&s, i);
  }
  double ns = wl_now_ns() - t0;
  wl_note_peak();
  for (unsigned long i = 0; i < n_keep; i++) free(own[i]);
  munmap(own, n_keep * sizeof *own);
  return ns;
}

static void *scratch_given[2];
enum { SCRATCH_WRITES = 1000 };
static void *scratch(void *arg) {
  free(scratch_given[(uintptr_t)arg]);
  go_wait();
  for (unsigned long i = 0; i < n_ops; i++) {
    volatile char *p = malloc(8);
    if (!p) wl_die("out of memory at op %lu", i);
    for (int r = 0; r < SCRATCH_WRITES; r++) p[r & 7] = (char)(p[r & 7] + r);
    free((void *)p);
  }
  return NULL;
}

/* --mode handover: the two threads' tables (atomic slots: the other thread exchanges into them) */
static void **hand[2];

static size_t hand_size(uint64_t *s) { /* 16 B-16 KiB, log-uniform */
  uint64_t r = wl_rand(s);
  size_t b = (size_t)16 << (r % 10);
  return b + (size_t)((r >> 8) % b);
}

/* The one call site of every block (fill and loop alike), written whole. */
static __attribute__((noinline)) char *hand_alloc(size_t n, int c) {
  char *p = malloc(n);
  if (!p) wl_die("out of memory");
  memset(p, c, n);
  return p;
}

static void *handover(void *arg) {
  long me = (long)(uintptr_t)arg;
  uint64_t s = wl_seed + (uint64_t)me * 7727;
  void **own = hand[me], **other = hand[1 - me];
  for (unsigned long i = 0; i < n_keep; i++) {
    __atomic_store_n(&own[i], hand_alloc(hand_size(&s), 1), __ATOMIC_RELEASE);
  }
  go_wait();
  for (unsigned long i = 0; i < n_ops; i++) {
    size_t k = wl_rand(&s) % n_keep;
    free(__atomic_exchange_n(&own[k], NULL, __ATOMIC_ACQ_REL));
    char *p = hand_alloc(hand_size(&s), (int)i);
    if (i % 16 == 0) p = __atomic_exchange_n(&other[wl_rand(&s) % n_keep], p, __ATOMIC_ACQ_REL);
    free(__atomic_exchange_n(&own[k], p, __ATOMIC_ACQ_REL)); /* NULL unless the other thread put one there */
  }
  return NULL;
}

static void *churn(void *arg) {
  uint64_t s = wl_seed + (uint64_t)(uintptr_t)arg * 104729;
  go_wait();
  for (unsigned long i = 0; i < n_ops; i++) {
    char *p = malloc(wl_rand_range(&s, 16, 1024));
    if (!p) wl_die("out of memory at op %lu", i);
    memset(p, (int)i, 16);
    void *old = __atomic_exchange_n(&table[wl_rand(&s) % n_keep], p, __ATOMIC_ACQ_REL);
    free(old);
  }
  return NULL;
}

/* --mode mixed: each thread's mailbox, where the other thread leaves an array (atomic exchanges) */
static void **mix_box[2];
enum { MIX_REPLACE = 100, MIX_MIN = 8, MIX_MAX = 16000, MIX_WRITE = 64 };
static unsigned long mix_ops, mix_crossed, mix_returned; /* summed by the threads (atomic adds) */

static char *mix_block(uint64_t *s, int c) {
  size_t n = wl_rand_range(s, MIX_MIN, MIX_MAX);
  char *p = malloc(n);
  if (!p) wl_die("out of memory (a block of %zu bytes)", n);
  memset(p, c, n < MIX_WRITE ? n : MIX_WRITE);
  return p;
}

/* Frees a handed-over array: its first tenth of blocks (still live) and the array itself.
 * Returns the memory operations that took. */
static unsigned long mix_free_array(void **a) {
  unsigned long pass = n_keep / 10;
  for (unsigned long i = 0; i < pass; i++) free(a[i]);
  free(a);
  return pass + 1;
}

static void *mixed(void *arg) {
  long me = (long)(uintptr_t)arg;
  uint64_t s = wl_seed + (uint64_t)me * 6700417;
  unsigned long ops = 0, crossed = 0, returned = 0, pass = n_keep / 10;
  go_wait();
  for (unsigned long l = 0; l < n_ops; l++) {
    void **b = malloc(n_keep * sizeof *b);
    if (!b) wl_die("out of memory at loop %lu", l);
    for (unsigned long i = 0; i < n_keep; i++) b[i] = mix_block(&s, (int)i);
    for (int r = 0; r < MIX_REPLACE; r++) {
      size_t k = wl_rand(&s) % n_keep;
      free(b[k]);
      b[k] = mix_block(&s, r);
    }
    /* The data's peak is here, in every loop: noted in the last one only (a read of
     * /proc/self/status each loop would be CPU time the row counts). */
    if (l + 1 == n_ops) wl_note_peak();
    for (unsigned long i = pass; i < n_keep; i++) free(b[i]);
    ops += 1 + n_keep + 2 * MIX_REPLACE + (n_keep - pass);
    void **back = __atomic_exchange_n(&mix_box[1 - me], b, __ATOMIC_ACQ_REL);
    if (back) ops += mix_free_array(back), returned++; /* ours: the other thread had not taken it */
    void **got = __atomic_exchange_n(&mix_box[me], NULL, __ATOMIC_ACQ_REL);
    if (got) ops += mix_free_array(got), crossed++;    /* the other thread's: cross-thread frees */
  }
  __atomic_fetch_add(&mix_ops, ops, __ATOMIC_RELAXED);
  __atomic_fetch_add(&mix_crossed, crossed, __ATOMIC_RELAXED);
  __atomic_fetch_add(&mix_returned, returned, __ATOMIC_RELAXED);
  return NULL;
}

enum { BATCH = 64 };
typedef struct batch {
  struct batch *next;
  void *p[BATCH];
} batch_t;
static pthread_mutex_t batch_lock = PTHREAD_MUTEX_INITIALIZER;
static batch_t *batch_top; /* batches: the shared stack */

static void free_batch(batch_t *b) {
  for (int k = 0; k < BATCH; k++) free(b->p[k]);
  free(b);
}

static void *batches(void *arg) {
  uint64_t s = wl_seed + (uint64_t)(uintptr_t)arg * 15485863;
  go_wait();
  for (unsigned long i = 0; i < n_ops; i += BATCH) {
    batch_t *b = malloc(sizeof *b);
    if (!b) wl_die("out of memory at op %lu", i);
    for (int k = 0; k < BATCH; k++) {
      size_t n = wl_rand_range(&s, 8, 128);
      char *p = malloc(n);
      if (!p) wl_die("out of memory at op %lu", i);
      memset(p, k, 8);
      b->p[k] = p;
    }
    pthread_mutex_lock(&batch_lock);
    b->next = batch_top;
    batch_top = b;
    batch_t *g = b->next;
    if (g) b->next = g->next;
    pthread_mutex_unlock(&batch_lock);
    if (g) free_batch(g);
  }
  return NULL;
}

/* One allocation site for both threads' bursts (site_burst, like the sites mode's). */
SITE(_burst)

static void *bursts(void *arg) {
  uint64_t s = wl_seed + (uint64_t)(uintptr_t)arg * 15485863;
  char **p = map_array(n_keep * sizeof *p);
  go_wait();
  for (unsigned long i = 0, round = 0; i < n_ops; round++) {
    unsigned long n = n_ops - i < n_keep ? n_ops - i : n_keep;
    for (unsigned long k = 0; k < n; k++) {
      if (!(p[k] = site_burst(wl_rand_range(&s, 8, 128)))) wl_die("out of memory at op %lu", i + k);
      p[k][0] = (char)k;
    }
    if (round & 1)
      for (unsigned long k = n; k-- > 0;) free(p[k]);
    else
      for (unsigned long k = 0; k < n; k++) free(p[k]);
    i += n;
  }
  munmap(p, n_keep * sizeof *p);
  return NULL;
}

static double run_two(void *(*fn)(void *)) {
  if (fn == scratch)
    for (int i = 0; i < 2; i++)
      if (!(scratch_given[i] = malloc(8))) wl_die("out of memory");
  if (fn == handover)
    for (int i = 0; i < 2; i++) hand[i] = map_array(n_keep * sizeof *hand[i]);
  if (fn == churn) {
    table = map_array(n_keep * sizeof *table);
    uint64_t s = wl_seed;
    for (unsigned long i = 0; i < n_keep; i++) table[i] = malloc(wl_rand_range(&s, 16, 1024));
  }
  pthread_barrier_init(&go, NULL, 3);
  atomic_store(&go_n, 0);
  pthread_t th[2];
  for (long i = 0; i < 2; i++)
    if (wl_thread_start(&th[i], fn, i)) wl_die("cannot start thread %ld", i);
  pthread_barrier_wait(&go);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  double ns = wl_now_ns() - (go_at[0] < go_at[1] ? go_at[0] : go_at[1]);
  wl_note_peak();
  if (fn == churn)
    for (unsigned long i = 0; i < n_keep; i++) free(table[i]);
  if (fn == handover)
    for (int t = 0; t < 2; t++) {
      for (unsigned long i = 0; i < n_keep; i++) free(hand[t][i]);
      munmap(hand[t], n_keep * sizeof *hand[t]);
    }
  for (batch_t *b = batch_top, *next; b; b = next) { /* batches: what is left on the stack */
    next = b->next;
    free_batch(b);
  }
  batch_top = NULL;
  for (int t = 0; t < 2; t++) { /* mixed: the arrays left in the mailboxes */
    void **a = __atomic_exchange_n(&mix_box[t], NULL, __ATOMIC_ACQ_REL);
    if (a) mix_ops += mix_free_array(a);
  }
  return ns;
}

/* ---- start-up ---------------------------------------------------------------------------- */
/* --prog: argv words separated by ',', with '_' for a space inside a word (the harness splits
 * a workload's flags on spaces): "sh,-c,seq_50|while_read_i;do_/bin/true;done". */
static char **split(const char *cmd) {
  static char buf[1024];
  static char *argv[32];
  snprintf(buf, sizeof buf, "%s", cmd);
  for (char *c = buf; *c; c++)
    if (*c == '_') *c = ' ';
  int n = 0;
  for (char *t = strtok(buf, ","); t && n < 31; t = strtok(NULL, ",")) argv[n++] = t;
  argv[n] = NULL;
  if (n == 0) wl_die("--prog is empty");
  return argv;
}

static int run_child(char **argv, int out_fd) {
  pid_t pid = wl_spawn_quiet(argv, out_fd);
  int st;
  if (waitpid(pid, &st, 0) != pid) wl_die("waitpid %s failed", argv[0]);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static double run_startup(void) {
  char **argv = split(prog);
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_ops; i++) {
    int rc = run_child(argv, -1);
    if (rc != 0) wl_die("%s exited with status %d (run %lu)", prog, rc, i);
  }
  double ns = wl_now_ns() - t0;
  /* The memory a run costs, hugetlb pages included (RSS leaves them out). */
  if (strstr(argv[0], "python3")) {
    char *pargv[] = {argv[0], "-c", "print(open('/proc/self/status').read())", NULL};
    char tmpl[] = "/tmp/wl_costs_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) wl_die("mkstemp: %s", strerror(errno));
    unlink(tmpl);
    if (run_child(pargv, fd) != 0) wl_die("python3 reading its status failed");
    char text[8192] = {0};
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    if (n <= 0) wl_die("python3 printed no status");
    wl_peak_rss_override_kb = wl_status_field(text, "VmHWM:");
    wl_hugetlb_override_kb = wl_status_field(text, "HugetlbPages:");
  } else {
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    wl_peak_rss_override_kb = ru.ru_maxrss;
  }
  return ns;
}

/* CPU time of the whole process (every thread, those that have exited included), seconds. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"mode", "sites, threads, sizes, glibc, scratch, churn, batches, bursts, handover, mixed, medium, partial, buffers, fork or startup", 's', &mode},
    {"ops", "operations (per thread in the two-thread modes; loops per thread for mixed; runs for startup)", 'u', &n_ops},
    {"keep", "blocks kept live (per site; per thread; in the shared table; per array for mixed)", 'u', &n_keep},
    {"settle-ms", "--mode fork: ms of record replacing after the last child, before the entries are read", 'u', &settle_ms},
    {"label", "the workload name on the RESULT line (default: from --mode)", 's', &label},
    {"prog", "startup: the command, argv words split on ',' ('_' = a space)", 's', &prog},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_costs", argc, argv, flags);
  if (n_ops < 1 || n_keep < 1) wl_die("--ops and --keep must be at least 1");
  double ns;
  const char *name, *op;
  if (!strcmp(mode, "sites")) ns = run_sites(), name = "sites", op = "free+malloc";
  else if (!strcmp(mode, "threads")) ns = run_two(side_by_side), name = "threads", op = "free+malloc";
  else if (!strcmp(mode, "sizes")) log_sizes = 1, ns = run_two(side_by_side), name = "threads-sizes", op = "free+malloc";
  else if (!strcmp(mode, "glibc")) {
    glibc_tables();
    ns = run_two(glibc_thread), name = "threads-glibc", op = "free+malloc+write";
    munmap(gl_slot, gl_nslot * sizeof *gl_slot);
  }
  else if (!strcmp(mode, "scratch")) ns = run_two(scratch), name = "scratch-mt", op = "malloc+1000_writes+free";
  else if (!strcmp(mode, "churn")) ns = run_two(churn), name = "churn-mt", op = "free+malloc";
  else if (!strcmp(mode, "batches")) {
    n_ops = (n_ops + BATCH - 1) / BATCH * BATCH; /* whole batches: the ops run and reported */
    ns = run_two(batches), name = "batches-mt", op = "malloc+free";
  }
  else if (!strcmp(mode, "bursts")) ns = run_two(bursts), name = "bursts-mt", op = "malloc+free";
  else if (!strcmp(mode, "handover")) ns = run_two(handover), name = "handover-mt", op = "free+malloc+write";
  else if (!strcmp(mode, "mixed")) {
    if (n_keep < 10) wl_die("--mode mixed: --keep must be at least 10 (a tenth of each array is handed over)");
    mix_cpu_s = cpu_s();
    ns = run_two(mixed), name = "churn-sizes-mt", op = "malloc_or_free_cpu";
    mix_cpu_s = cpu_s() - mix_cpu_s;
  }
  else if (!strcmp(mode, "medium")) ns = run_medium(), name = "medium", op = "free+malloc";
  else if (!strcmp(mode, "partial")) ns = run_partial(), name = "partial", op = "free+malloc+write_a_tenth";
  else if (!strcmp(mode, "buffers")) {
    part_min = 33 << 10, part_max = 256 << 10;
    ns = run_partial(), name = "buffers", op = "free+malloc+write_a_tenth";
  }
  else if (!strcmp(mode, "fork")) ns = run_fork(), name = "fork", op = "fork+writes+wait";
  else if (!strcmp(mode, "startup")) ns = run_startup(), name = "startup", op = "run";
  else wl_die("--mode must be sites, threads, sizes, glibc, scratch, churn, batches, bursts, handover, mixed, medium, partial, buffers, fork or startup, got '%s'", mode);
  if (label) name = label;
  wl_smaps_copy();
  char extra[600];
  double per_op = ns / (double)n_ops;
  if (mix_cpu_s >= 0) per_op = mix_cpu_s * 1e9 / (double)mix_ops; /* CPU ns per malloc or free */
  size_t l = (size_t)snprintf(extra, sizeof extra, "ns_per_op=%.2f op=%s ops=%lu keep=%lu", per_op, op, n_ops, n_keep);
  if (mix_cpu_s >= 0 && l < sizeof extra)
    l += (size_t)snprintf(extra + l, sizeof extra - l,
                          " ops_per_cpu_s=%.0f mem_ops=%lu cpu_s=%.4f wall_ns_per_op=%.2f arrays_crossed=%lu arrays_returned=%lu",
                          (double)mix_ops / mix_cpu_s, mix_ops, mix_cpu_s, ns / (double)mix_ops, mix_crossed, mix_returned);
  if (fork_first_ns >= 0 && l < sizeof extra) {
    qsort(fork_later_ns, fork_nlater, sizeof *fork_later_ns, cmp_double);
    double later = fork_nlater ? fork_later_ns[fork_nlater / 2] : -1;
    snprintf(extra + l, sizeof extra - l,
             " fork_first_us=%.0f fork_later_us=%.0f fork_mem_kb=%ld entries_before=%ld entries_child=%ld entries_after=%ld",
             fork_first_ns / 1e3, later >= 0 ? later / 1e3 : -1, fork_mem_kb, fork_entries[0], fork_entries[1], fork_entries[2]);
  }
  wl_result(name, extra, NULL);
  return 0;
}
