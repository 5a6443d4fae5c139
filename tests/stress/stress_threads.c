/* Multi-threaded allocation stress: N threads (default 8) each run OPS operations on random
 * sizes from 1 B to 4 MiB (malloc, calloc, realloc, posix_memalign, free); a third of the
 * blocks are handed to another thread, which checks and frees them (producer/consumer frees).
 * Every block carries a pattern derived from its id, checked in full before it is freed or
 * resized. At the end live bytes and objects must be back to the baseline taken before the
 * threads started (tp_stats_get), or the run fails.
 *
 * usage: stress_threads [THREADS [OPS_PER_THREAD [SEED]]]
 */
#include "tp_shim.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define SLOTS 512
#define QCAP 4096
#define MAX_SIZE ((size_t)4 << 20)

typedef struct {
  unsigned char *p;
  size_t size;
  uint64_t id;
} block_t;

typedef struct {
  pthread_mutex_t lock;
  block_t items[QCAP];
  size_t head, count;
} queue_t;

static int nthreads = 8;
static long ops_per_thread = 200000;
static unsigned long long seed0 = 42;
static queue_t *queues;
static atomic_ullong bytes_checked, cross_frees, total_ops, max_size_seen, min_size_seen = ~0ULL;
static atomic_ullong reallocs, callocs, aligned, large_blocks;

static inline unsigned char pattern(uint64_t id) { return (unsigned char)(id * 131 + 7) | 1; }

/* The first 8 bytes hold the id (when the block has room), the rest the pattern byte. */
static void fill(const block_t *b) {
  size_t off = 0;
  if (b->size >= 8) { memcpy(b->p, &b->id, 8); off = 8; }
  memset(b->p + off, pattern(b->id), b->size - off);
}

static void check(const block_t *b, size_t len, const char *when) {
  size_t off = 0;
  if (len > b->size) len = b->size;
  if (b->size >= 8) {  /* the id's first bytes, when a shrinking realloc keeps fewer than 8 */
    off = len < 8 ? len : 8;
    if (memcmp(b->p, &b->id, off) != 0) {
      uint64_t id = 0;
      memcpy(&id, b->p, off);
      T_DIE("stress_threads: CORRUPTION (%s): block %p size %zu: id %" PRIu64 " expected %" PRIu64,
            when, (void *)b->p, b->size, id, b->id);
    }
  }
  unsigned char c = pattern(b->id);
  uint64_t word;
  memset(&word, c, 8);
  size_t i = off;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, b->p + i, 8);
    if (w != word) break;
  }
  for (; i < len; i++)
    if (b->p[i] != c)
      T_DIE("stress_threads: CORRUPTION (%s): block %p size %zu id %" PRIu64 ": byte %zu is 0x%02x, expected 0x%02x",
            when, (void *)b->p, b->size, b->id, i, b->p[i], c);
  atomic_fetch_add_explicit(&bytes_checked, len, memory_order_relaxed);
}

static size_t pick_size(unsigned long long *rs) {
  unsigned long long r = t_rand(rs);
  unsigned k = (unsigned)(r % 10000);
  r >>= 16;
  if (k == 0) return MAX_SIZE;                          /* the top of the range, exactly */
  if (k < 8500) return 1 + r % 256;
  if (k < 9700) return 257 + r % (8192 - 256);
  if (k < 9990) return (size_t)8192 << (r % 5) | (r >> 8) % 8192;        /* 8 KiB .. 256 KiB */
  return ((size_t)256 << 10 << (r % 4)) + (r >> 8) % (256 << 10);         /* 256 KiB .. 4 MiB */
}

static void note_size(size_t s) {
  unsigned long long m = atomic_load(&max_size_seen);
  while (s > m && !atomic_compare_exchange_weak(&max_size_seen, &m, s)) {}
  m = atomic_load(&min_size_seen);
  while (s < m && !atomic_compare_exchange_weak(&min_size_seen, &m, s)) {}
  if (s >= ((size_t)2 << 20)) atomic_fetch_add(&large_blocks, 1);
}

static void release(block_t *b, const char *when) {
  check(b, b->size, when);
  T_FREE(b->p);
  b->p = NULL;
}

static int push(int to, const block_t *b) {
  queue_t *q = &queues[to];
  int ok = 0;
  pthread_mutex_lock(&q->lock);
  if (q->count < QCAP) {
    q->items[(q->head + q->count) % QCAP] = *b;
    q->count++;
    ok = 1;
  }
  pthread_mutex_unlock(&q->lock);
  return ok;
}

static void drain(int self) {
  block_t local[64];
  for (;;) {
    size_t n = 0;
    queue_t *q = &queues[self];
    pthread_mutex_lock(&q->lock);
    while (q->count > 0 && n < 64) {
      local[n++] = q->items[q->head];
      q->head = (q->head + 1) % QCAP;
      q->count--;
    }
    pthread_mutex_unlock(&q->lock);
    if (n == 0) return;
    for (size_t i = 0; i < n; i++) release(&local[i], "consumer free");
    atomic_fetch_add_explicit(&cross_frees, n, memory_order_relaxed);
  }
}

static void *worker(void *arg) {
  int self = (int)(intptr_t)arg;
  unsigned long long rs = seed0 * 0x9E3779B97F4A7C15ULL + (unsigned long long)self * 7919 + 1;
  block_t *slots = T_CALLOC(SLOTS, sizeof *slots);
  if (!slots) T_DIE("stress_threads: calloc of the slot table failed");
  uint64_t next_id = (uint64_t)self << 48;
  for (long op = 0; op < ops_per_thread; op++) {
    if ((op & 63) == 0) drain(self);
    unsigned long long r = t_rand(&rs);
    block_t *b = &slots[r % SLOTS];
    unsigned action = (unsigned)((r >> 20) % 100);
    if (b->p && action < 15) {                         /* resize, keeping the common prefix */
      size_t ns = pick_size(&rs);
      unsigned char *np = T_REALLOC(b->p, ns);
      if (!np) T_DIE("stress_threads: realloc(%zu) failed: %s", ns, strerror(errno));
      b->p = np;
      check(b, ns < b->size ? ns : b->size, "after realloc");
      b->size = ns;
      fill(b);
      note_size(ns);
      atomic_fetch_add_explicit(&reallocs, 1, memory_order_relaxed);
      continue;
    }
    if (b->p) {
      if (action < 50 && nthreads > 1) {               /* hand to a consumer thread */
        int to = (int)((unsigned)(self + 1 + (r >> 40) % (unsigned)(nthreads - 1)) % (unsigned)nthreads);
        if (push(to, b)) { b->p = NULL; }
        else release(b, "free (queue full)");
      } else {
        release(b, "free");
      }
    }
    size_t s = pick_size(&rs);
    b->id = ++next_id;
    b->size = s;
    if (action >= 90) {
      b->p = T_CALLOC(1, s);
      if (!b->p) T_DIE("stress_threads: calloc(1, %zu) failed: %s", s, strerror(errno));
      for (size_t i = 0; i < s; i += (s > 4096 ? 61 : 1))
        if (b->p[i]) T_DIE("stress_threads: calloc(1, %zu) returned non-zero byte %zu", s, i);
      atomic_fetch_add_explicit(&callocs, 1, memory_order_relaxed);
    } else if (action >= 85) {
      size_t align = (size_t)16 << ((r >> 50) % 13);    /* 16 B .. 64 KiB */
      void *p = NULL;
      int e = T_MEMALIGN(&p, align, s);
      if (e) T_DIE("stress_threads: posix_memalign(%zu, %zu) failed: %s", align, s, strerror(e));
      if ((uintptr_t)p % align) T_DIE("stress_threads: posix_memalign(%zu) returned %p", align, p);
      b->p = p;
      atomic_fetch_add_explicit(&aligned, 1, memory_order_relaxed);
    } else {
      b->p = T_MALLOC(s);
      if (!b->p) T_DIE("stress_threads: malloc(%zu) failed: %s", s, strerror(errno));
    }
    if (s >= 16 && (uintptr_t)b->p % 16) T_DIE("stress_threads: malloc(%zu) = %p not 16-byte aligned", s, (void *)b->p);
    if (T_USABLE(b->p) < s) T_DIE("stress_threads: usable size %zu < %zu", T_USABLE(b->p), s);
    note_size(s);
    fill(b);
  }
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].p) release(&slots[i], "final free");
  T_FREE(slots);
  drain(self);
  atomic_fetch_add(&total_ops, (unsigned long long)ops_per_thread);
  return NULL;
}

static void *warm(void *arg) {
  void *p = T_MALLOC(32);
  T_FREE(p);
  return arg;
}

static int run_threads(void *(*fn)(void *)) {
  pthread_t *t = calloc((size_t)nthreads, sizeof *t);   /* glibc's or tlbpack's: balanced below */
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i)) T_DIE("stress_threads: pthread_create failed");
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  free(t);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) ops_per_thread = atol(argv[2]);
  if (argc > 3) seed0 = strtoull(argv[3], NULL, 10);
  if (nthreads < 1 || nthreads > 256 || ops_per_thread < 1) {
    fprintf(stderr, "usage: stress_threads [THREADS 1..256 [OPS_PER_THREAD >= 1 [SEED]]]\n");
    return 2;
  }
  printf("stress_threads: %s, %d threads x %ld ops, seed %llu\n", T_MODE, nthreads, ops_per_thread, seed0);
  fflush(stdout);
  queues = calloc((size_t)nthreads, sizeof *queues);
  for (int i = 0; i < nthreads; i++) pthread_mutex_init(&queues[i].lock, NULL);
  run_threads(warm);  /* thread stacks and TLS blocks are cached by libc: take them before the baseline */

  tp_stats_t before, after;
  int have_stats = t_stats(&before);
  run_threads(worker);
  for (int i = 0; i < nthreads; i++) drain(i);  /* nothing should be left; checked anyway */
  int ok = 1;
  if (have_stats) {
    t_stats(&after);
    printf("stress_threads: live bytes %zu -> %zu, live objects %zu -> %zu, peak live %zu, allocated_total %zu\n",
           before.live_bytes, after.live_bytes, before.live_objects, after.live_objects,
           after.peak_live_bytes, after.allocated_total);
    if (after.live_bytes != before.live_bytes || after.live_objects != before.live_objects) {
      printf("stress_threads: LEAK: live bytes/objects not back to the baseline\n");
      ok = 0;
    }
    if (after.allocated_total <= before.allocated_total) {
      printf("stress_threads: allocated_total did not grow: allocations not served by tlbpack\n");
      ok = 0;
    }
  } else {
    printf("stress_threads: tp_stats_get not found (not running on tlbpack): leak check skipped\n");
  }
  printf("stress_threads: ops %llu, threads %d, bytes checked %llu, cross-thread frees %llu, "
         "reallocs %llu, callocs %llu, aligned %llu, blocks >= 2 MiB %llu, sizes %llu..%llu\n",
         (unsigned long long)total_ops, nthreads, (unsigned long long)bytes_checked,
         (unsigned long long)cross_frees, (unsigned long long)reallocs, (unsigned long long)callocs,
         (unsigned long long)aligned, (unsigned long long)large_blocks,
         (unsigned long long)min_size_seen, (unsigned long long)max_size_seen);
  printf("stress_threads: %s\n", ok ? "OK" : "FAILED");
  return ok ? (have_stats ? 0 : 3) : 1;
}
