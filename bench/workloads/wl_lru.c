/* Workload 4: an LRU cache under churn (allocation-heavy, mixed lifetimes).
 *
 * A chained hash table plus a doubly linked recency list. Each cached item is an entry (56 B),
 * a key string (12-40 B) and a value (64-512 B). Requests draw keys from a skewed distribution
 * over 4x the capacity; a hit reads the key and value and moves the entry to the front, a miss
 * allocates a new item and evicts (frees) the least recently used one. The next request's key
 * depends on the value bytes read.
 *
 * Trace (--trace): R of the bucket slot, every entry on the chain and the key compared, R of
 * the value word read, W of entries relinked, inserted or evicted. */
#define _GNU_SOURCE
#include "wl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ent_s {
  struct ent_s *hnext, *prev, *next;
  char *key;
  unsigned char *val;
  uint64_t hash;
  uint32_t klen, vlen;
} ent_t;

static unsigned long cap = 50000, n_ops = 1000000;
static ent_t **buckets;
static size_t nbuckets;
static ent_t head;  /* sentinel: head.next = most recent */
static size_t live;
static uint64_t rng;
static unsigned long hits, misses;

static uint64_t hash_str(const char *s, uint32_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (uint32_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}
static void unlink_ent(ent_t *e) { e->prev->next = e->next; e->next->prev = e->prev; }
static void push_front(ent_t *e) {
  e->next = head.next; e->prev = &head; head.next->prev = e; head.next = e;
  WL_TR('W', e, sizeof *e);
}

static void evict(void) {
  ent_t *e = head.prev;
  WL_TR('W', e, sizeof *e);
  unlink_ent(e);
  ent_t **pp = &buckets[e->hash & (nbuckets - 1)];
  while (*pp != e) { WL_TR('R', *pp, sizeof **pp); pp = &(*pp)->hnext; }
  *pp = e->hnext;
  free(e->key); free(e->val); free(e);
  live--;
}

static uint64_t request(uint64_t state) {
  /* skewed key: the smaller of two uniform draws over 4x capacity, so low ids are hot */
  uint64_t a = state % (cap * 4), b = (state >> 32) % (cap * 4);
  uint64_t id = a < b ? a : b;
  char kbuf[48];
  int kl = snprintf(kbuf, sizeof kbuf, "user:%llu:%llx", (unsigned long long)id,
                    (unsigned long long)(id * 0x9E3779B97F4A7C15ULL) >> (id % 40));
  uint64_t h = hash_str(kbuf, (uint32_t)kl);
  ent_t **slot = &buckets[h & (nbuckets - 1)];
  WL_TR('R', slot, 8);
  for (ent_t *e = *slot; e; e = e->hnext) {
    WL_TR('R', e, sizeof *e);
    if (e->hash == h && e->klen == (uint32_t)kl) {
      WL_TR('R', e->key, e->klen);
      if (memcmp(e->key, kbuf, (size_t)kl) == 0) {
        uint64_t w;
        memcpy(&w, e->val + (state >> 7) % (e->vlen - 7), 8);
        WL_TR('R', e->val, 8);
        unlink_ent(e); push_front(e);
        hits++;
        return (state ^ w) * 0x9E3779B97F4A7C15ULL + 1;
      }
    }
  }
  misses++;
  ent_t *e = malloc(sizeof *e);
  char *k = malloc((size_t)kl + 1);
  uint32_t vlen = (uint32_t)wl_rand_range(&rng, 64, 512);
  unsigned char *v = malloc(vlen);
  if (!e || !k || !v) wl_die("out of memory inserting an item");
  memcpy(k, kbuf, (size_t)kl + 1);
  memset(v, (int)(id & 0xff), vlen);
  e->key = k; e->klen = (uint32_t)kl; e->val = v; e->vlen = vlen; e->hash = h;
  e->hnext = *slot; *slot = e;
  WL_TR('W', k, (uint32_t)kl); WL_TR('W', v, vlen);
  push_front(e);
  if (++live > cap) evict();
  return (state ^ h) * 0x9E3779B97F4A7C15ULL + 1;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"capacity", "items the cache holds", 'u', &cap},
    {"ops", "requests timed", 'u', &n_ops},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_lru", argc, argv, flags);
  if (cap < 8) wl_die("--capacity must be at least 8");
  rng = wl_seed;
  nbuckets = 1;
  while (nbuckets < cap) nbuckets <<= 1;
  buckets = calloc(nbuckets, sizeof *buckets);
  if (!buckets) wl_die("no memory for %zu buckets", nbuckets);
  head.next = head.prev = &head;
  uint64_t state = wl_seed * 0x9E3779B97F4A7C15ULL + 1;
  for (unsigned long i = 0; i < cap * 2; i++) state = request(state);  /* fill and churn */
  hits = misses = 0;
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_ops; i++) state = request(state);
  double ns = wl_now_ns() - t0;
  unsigned long th = hits, tm = misses;
  if (wl_trace_path) {
    /* the warm-up of the timed run was 2 x capacity requests (at most a quarter of the trace) */
    wl_trace_open();
    for (unsigned long i = 0; i < cap * 2 && wl_trace_count() < wl_trace_warm_max(); i++) state = request(state);
    wl_trace_mark();
    while (wl_trace_on()) state = request(state);
    wl_trace_close();
  }
  wl_sink = state;
  wl_hot_add(buckets, nbuckets * sizeof *buckets);
  for (ent_t *e = head.next; e != &head; e = e->next) {
    wl_hot_add(e, sizeof *e); wl_hot_add(e->key, e->klen); wl_hot_add(e->val, e->vlen);
  }
  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[256];
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=request ops=%lu capacity=%lu hit_rate=%.3f",
           ns / (double)n_ops, n_ops, cap, (double)th / (double)(th + tm ? th + tm : 1));
  wl_result("lru", extra, &hs);
  return 0;
}
