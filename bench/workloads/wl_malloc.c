/* malloc/free throughput (issue 2's microbenchmarks).
 *
 * --threads 1: one thread keeps --live objects of random sizes 16-512 B; each op frees a random
 *              one (random free order) and allocates a new one, touching its first bytes.
 * --threads 2: each thread allocates objects and hands them to the other through a
 *              single-producer ring; each frees what it receives (every free is cross-thread).
 * Reports ns per malloc+free pair and peak RSS. Trace (--trace): W of the first 16 bytes of
 * every allocated object (single-thread mode only). */
#define _GNU_SOURCE
#include "wl_common.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static unsigned long n_ops = 4000000, n_live = 10000, n_threads = 1;

static double run_single(void) {
  void **slots = mmap(NULL, n_live * sizeof *slots, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (slots == MAP_FAILED) wl_die("no memory for %lu slots", n_live);
  uint64_t s = wl_seed;
  for (unsigned long i = 0; i < n_live; i++) {
    slots[i] = malloc(wl_rand_range(&s, 16, 512));
    if (!slots[i]) wl_die("out of memory");
    memset(slots[i], 1, 16);
  }
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_ops; i++) {
    /* the first n_live replacements (a quarter of the trace at most) warm the simulated TLBs */
    if (i == (n_live < n_ops / 4 ? n_live : n_ops / 4) || wl_trace_count() == wl_trace_warm_max()) wl_trace_mark();
    size_t k = wl_rand(&s) % n_live;
    free(slots[k]);
    char *p = malloc(wl_rand_range(&s, 16, 512));
    if (!p) wl_die("out of memory at op %lu", i);
    memset(p, (int)i, 16);
    WL_TR('W', p, 16);
    slots[k] = p;
  }
  double ns = wl_now_ns() - t0;
  wl_note_peak();
  for (unsigned long i = 0; i < n_live; i++) free(slots[i]);
  return ns;
}

/* ---- two threads, cross-thread frees ---------------------------------------------------- */
#define RING 4096
typedef struct {
  void *slot[RING];
  _Atomic unsigned long head, tail;  /* producer writes head, consumer tail */
} ring_t;
static ring_t *rings[2];

static void *worker(void *arg) {
  long me = (long)arg;
  ring_t *out = rings[me], *in = rings[1 - me];
  uint64_t s = wl_seed + (uint64_t)me * 7777;
  unsigned long made = 0, freed = 0, per = n_ops / 2;
  int noted = 0;
  while (made < per || freed < per) {
    int progress = 0;
    unsigned long h = atomic_load_explicit(&out->head, memory_order_relaxed);
    if (made < per && h - atomic_load_explicit(&out->tail, memory_order_acquire) < RING) {
      char *p = malloc(wl_rand_range(&s, 16, 512));
      if (!p) wl_die("out of memory in thread %ld", me);
      memset(p, 1, 16);
      out->slot[h % RING] = p;
      atomic_store_explicit(&out->head, h + 1, memory_order_release);
      made++;
      progress = 1;
    }
    unsigned long t = atomic_load_explicit(&in->tail, memory_order_relaxed);
    if (t != atomic_load_explicit(&in->head, memory_order_acquire)) {
      free(in->slot[t % RING]);
      atomic_store_explicit(&in->tail, t + 1, memory_order_release);
      freed++;
      progress = 1;
    }
    if (made == per / 2 && !noted) noted = 1, wl_note_peak(); /* half way, the rings full */
    if (!progress) sched_yield();  /* 2 vCPUs shared with other work: do not spin out a slice */
  }
  return NULL;
}

static double run_two(void) {
  for (int i = 0; i < 2; i++) {
    rings[i] = mmap(NULL, sizeof(ring_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (rings[i] == MAP_FAILED) wl_die("no memory for the rings");
  }
  pthread_t th[2];
  double t0 = wl_now_ns();
  for (long i = 0; i < 2; i++)
    if (wl_thread_start(&th[i], worker, i)) wl_die("cannot start thread %ld", i);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  return wl_now_ns() - t0;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"ops", "malloc+free pairs", 'u', &n_ops},
    {"live", "live objects kept (single-thread mode)", 'u', &n_live},
    {"threads", "1 (random free order) or 2 (cross-thread frees)", 'u', &n_threads},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_malloc", argc, argv, flags);
  if (n_threads != 1 && n_threads != 2) wl_die("--threads must be 1 or 2, got %lu", n_threads);
  if (n_live < 1) wl_die("--live must be at least 1");
  if (n_threads == 1) wl_trace_open();
  double ns = n_threads == 1 ? run_single() : run_two();
  wl_trace_close();
  wl_smaps_copy();
  char extra[160];
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=malloc+free ops=%lu threads=%lu live=%lu",
           ns / (double)n_ops, n_ops, n_threads, n_live);
  wl_result(n_threads == 1 ? "malloc-st" : "malloc-mt", extra, NULL);
  return 0;
}
