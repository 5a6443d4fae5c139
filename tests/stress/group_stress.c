/* Co-use groups under threads (direct API, libtlbpack.a): THREADS threads allocate from
 * GROUPS shared groups (tp_group_malloc/calloc/realloc), hand blocks to each other through a
 * shared exchange so that blocks are freed (tp_free) by threads that did not allocate them,
 * and check every block's pattern. At the quiescent points the per-group object counts kept
 * here must equal tp_group_stats(); then tp_group_destroy() frees the rest. Finally groups are
 * created and destroyed many times: live bytes back to the baseline, mapped bytes bounded.
 *
 * usage: group_stress [THREADS [OPS_PER_THREAD [GROUPS]]]
 */
#define TP_DIRECT 1
#include "tp_shim.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define SLOTS 256
#define XCHG 1024
#define MAXG 64

typedef struct { unsigned char *p; size_t n; int g; uint32_t tag; } blk_t;

static int nthreads = 8, ngroups = 4;
static long ops = 100000;
static tp_group_t *groups[MAXG];
static atomic_long group_live[MAXG];
static blk_t xchg[XCHG];
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ullong bytes_checked, foreign_frees;
static __thread int self_id;

static void fill(const blk_t *b) { memset(b->p, (int)(b->tag & 0xff) | 1, b->n); if (b->n >= 4) memcpy(b->p, &b->tag, 4); }
static void check(const blk_t *b, size_t n) {
  unsigned char c = (unsigned char)((b->tag & 0xff) | 1);
  size_t i = 0;
  if (b->n >= 4 && n >= 4) {
    uint32_t t;
    memcpy(&t, b->p, 4);
    if (t != b->tag) T_DIE("group_stress: CORRUPTION: block %p (group %d, %zu B) tag %u != %u", (void *)b->p, b->g, b->n, t, b->tag);
    i = 4;
  } else if (b->n >= 4) {
    i = n;  /* fewer than 4 bytes kept: they hold part of the tag */
  }
  for (; i < n; i++)
    if (b->p[i] != c) T_DIE("group_stress: CORRUPTION: block %p (group %d, %zu B) byte %zu", (void *)b->p, b->g, b->n, i);
  atomic_fetch_add_explicit(&bytes_checked, n, memory_order_relaxed);
}
static void release(blk_t *b) {
  check(b, b->n);
  tp_free(b->p);
  atomic_fetch_sub(&group_live[b->g], 1);
  b->p = NULL;
}

static void *worker(void *arg) {
  self_id = (int)(intptr_t)arg;
  unsigned long long rs = (unsigned long long)self_id * 104729 + 3;
  blk_t slots[SLOTS] = {{0}};
  uint32_t tag = (uint32_t)self_id << 24;
  for (long op = 0; op < ops; op++) {
    unsigned long long r = t_rand(&rs);
    blk_t *b = &slots[r % SLOTS];
    unsigned act = (unsigned)((r >> 16) % 100);
    if (act < 10) {  /* swap with the shared exchange: the block may be freed by another thread */
      pthread_mutex_lock(&xlock);
      blk_t *x = &xchg[(r >> 24) % XCHG], t = *x;
      *x = *b;
      *b = t;
      pthread_mutex_unlock(&xlock);
      if (b->p) atomic_fetch_add_explicit(&foreign_frees, 1, memory_order_relaxed);
      continue;
    }
    if (b->p && act < 25) {  /* grow or shrink within its group */
      size_t n = 1 + (r >> 32) % 6000;
      unsigned char *q = tp_group_realloc(groups[b->g], b->p, n);
      if (!q) T_DIE("group_stress: tp_group_realloc(%zu) failed", n);
      b->p = q;
      check(b, n < b->n ? n : b->n);
      b->n = n;
      fill(b);
      continue;
    }
    if (b->p) release(b);
    b->g = (int)((r >> 40) % (unsigned)ngroups);
    b->n = (r >> 48) % 50 == 0 ? 1 + (r >> 8) % (300 << 10) : 1 + (r >> 8) % 1500;
    b->tag = ++tag;
    b->p = act < 35 ? tp_group_calloc(groups[b->g], 1, b->n) : tp_group_malloc(groups[b->g], b->n);
    if (!b->p) T_DIE("group_stress: group allocation of %zu failed", b->n);
    atomic_fetch_add(&group_live[b->g], 1);
    fill(b);
  }
  for (int i = 0; i < SLOTS; i++)
    if (slots[i].p) release(&slots[i]);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) ops = atol(argv[2]);
  if (argc > 3) ngroups = atoi(argv[3]);
  if (nthreads < 1 || nthreads > 128 || ops < 1 || ngroups < 1 || ngroups > MAXG) {
    fprintf(stderr, "usage: group_stress [THREADS 1..128 [OPS >= 1 [GROUPS 1..%d]]]\n", MAXG);
    return 2;
  }
  tp_stats_t base, s;
  tp_stats_get(&base);
  int failures = 0;
  for (int g = 0; g < ngroups; g++) {
    char name[32];
    snprintf(name, sizeof name, "stress-%d", g);
    groups[g] = tp_group_create(name);
    if (!groups[g]) T_DIE("group_stress: tp_group_create failed");
  }
  pthread_t t[128];
  for (int i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  long in_xchg = 0;
  for (int i = 0; i < XCHG; i++) in_xchg += xchg[i].p != NULL;
  for (int g = 0; g < ngroups; g++) {
    tp_group_stats_t gs;
    tp_group_stats(groups[g], &gs);
    if ((long)gs.objects != atomic_load(&group_live[g])) {
      printf("group_stress: FAIL: group %d: tp_group_stats says %zu objects, %ld are live\n", g, gs.objects,
             atomic_load(&group_live[g]));
      failures++;
    }
  }
  /* Free half of what is left one by one; tp_group_destroy frees the rest. */
  for (int i = 0; i < XCHG; i += 2)
    if (xchg[i].p) release(&xchg[i]);
  for (int g = 0; g < ngroups; g++) tp_group_destroy(groups[g]);
  tp_stats_get(&s);
  if (s.live_bytes != base.live_bytes || s.live_objects != base.live_objects) {
    printf("group_stress: FAIL: after destroying the groups: live %zu B / %zu objects, baseline %zu B / %zu\n",
           s.live_bytes, s.live_objects, base.live_bytes, base.live_objects);
    failures++;
  }
  /* Group churn: create, fill, destroy. Mapped memory must not grow with the groups gone. */
  size_t mapped_first = 0;
  for (int round = 0; round < 2000; round++) {
    tp_group_t *g = tp_group_create("churn");
    if (!g) T_DIE("group_stress: tp_group_create failed in round %d", round);
    for (int k = 0; k < 200; k++) {
      void *p = tp_group_malloc(g, (size_t)(16 + (k * 37) % 3000));
      if (!p) T_DIE("group_stress: tp_group_malloc failed in round %d", round);
      memset(p, k, 16);
      if (k % 2) tp_free(p);
    }
    tp_group_destroy(g);
    if (round == 10) { tp_stats_get(&s); mapped_first = s.mapped_bytes; }
  }
  tp_stats_get(&s);
  printf("group_stress: %d threads x %ld ops on %d groups: %llu bytes checked, %llu blocks moved between threads, "
         "%ld left in the exchange; 2000 groups created and destroyed, mapped %.1f -> %.1f MiB\n",
         nthreads, ops, ngroups, (unsigned long long)bytes_checked, (unsigned long long)foreign_frees, in_xchg,
         mapped_first / 1048576.0, s.mapped_bytes / 1048576.0);
  if (s.live_bytes != base.live_bytes || s.live_objects != base.live_objects) {
    printf("group_stress: FAIL: after the group churn: live %zu B / %zu objects, baseline %zu B / %zu\n",
           s.live_bytes, s.live_objects, base.live_bytes, base.live_objects);
    failures++;
  }
  if (s.mapped_bytes > 2 * mapped_first + ((size_t)16 << 20)) {
    printf("group_stress: FAIL: mapped bytes grow as groups are created and destroyed\n");
    failures++;
  }
  printf("group_stress: %s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
