/* Replacement policies, as a table of function pointers (ts_policy_t).
 *
 * Contract: a set is `ways` keys; TS_INVALID marks an empty way; a fill always uses an empty
 * way when there is one.
 */
#include "internal.h"

#include <string.h>

/* ---- LRU: a last-use stamp per entry; the hit update is inlined in internal.h --------- */
static void lru_hit(ts_array_t *a, uint64_t *set, uint32_t si, uint32_t w) {
  a->stamp[(size_t)(set - a->keys) + w] = _ts_tick(a);
  (void)si;
}
/* Empty entries have stamp 0 (flushes clear it), so the victim is the smallest stamp. */
static void lru_fill(ts_array_t *a, uint64_t *set, uint32_t si, uint64_t key) {
  (void)si;
  uint32_t *st = a->stamp + (set - a->keys);
  uint32_t v = _ts_lru_victim(a, st);
  _ts_array_place(a, (size_t)(set - a->keys) + v, key);
  st[v] = _ts_tick(a);
}

/* ---- tree-PLRU: ways-1 bits per set, a bit says which half was used less recently ---- */
/* Node n has children 2n+1, 2n+2; leaves are the ways. Bit set = go right for the victim. */
static void plru_touch(ts_array_t *a, uint32_t si, uint32_t w) {
  uint64_t bits = a->meta[si];
  uint32_t node = 0, lo = 0, span = a->ways;
  while (span > 1) {
    span >>= 1;
    if (w < lo + span) { bits |= 1ull << node; node = 2 * node + 1; }       /* used left: victim right */
    else { bits &= ~(1ull << node); lo += span; node = 2 * node + 2; }
  }
  a->meta[si] = bits;
}
static void plru_hit(ts_array_t *a, uint64_t *set, uint32_t si, uint32_t w) {
  (void)set;
  plru_touch(a, si, w);
}
static void plru_fill(ts_array_t *a, uint64_t *set, uint32_t si, uint64_t key) {
  uint32_t v = a->ways;
  for (uint32_t w = 0; w < a->ways; w++)
    if (set[w] == TS_INVALID) { v = w; break; }
  if (v == a->ways) {
    uint64_t bits = a->meta[si];
    uint32_t node = 0, lo = 0, span = a->ways;
    while (span > 1) {
      span >>= 1;
      if (bits & (1ull << node)) { lo += span; node = 2 * node + 2; }
      else node = 2 * node + 1;
    }
    v = lo;
  }
  _ts_array_place(a, (size_t)(set - a->keys) + v, key);
  plru_touch(a, si, v);
}

/* ---- random: seeded xorshift64*, reproducible run to run ----------------------------- */
static void rnd_hit(ts_array_t *a, uint64_t *set, uint32_t si, uint32_t w) {
  (void)a; (void)set; (void)si; (void)w;
}
static uint64_t rnd_next(ts_array_t *a) {
  uint64_t x = a->rng;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  a->rng = x;
  return x * 0x2545F4914F6CDD1Dull;
}
static void rnd_fill(ts_array_t *a, uint64_t *set, uint32_t si, uint64_t key) {
  (void)si;
  for (uint32_t w = 0; w < a->ways; w++)
    if (set[w] == TS_INVALID) { _ts_array_place(a, (size_t)(set - a->keys) + w, key); return; }
  _ts_array_place(a, (size_t)(set - a->keys) + (rnd_next(a) >> 32) % a->ways, key);
}

const ts_policy_t _ts_policies[TS_NPOLICIES] = {
    [TS_POL_LRU] = {"lru", lru_hit, lru_fill},
    [TS_POL_PLRU] = {"tree-plru", plru_hit, plru_fill},
    [TS_POL_RANDOM] = {"random", rnd_hit, rnd_fill},
};

int _ts_policy_parse(const char *s) {
  if (!strcmp(s, "lru")) return TS_POL_LRU;
  if (!strcmp(s, "tree-plru") || !strcmp(s, "plru")) return TS_POL_PLRU;
  if (!strcmp(s, "random")) return TS_POL_RANDOM;
  return -1;
}
