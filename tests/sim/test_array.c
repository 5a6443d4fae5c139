/* The set-associative array's fast paths against plain reference computations: the set index
 * without division, and the key index plus recency list of large fully associative arrays. */
#include "helpers.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1Dull;
}

Test(array, set_index_without_division_equals_page_mod_sets) {
  static const uint32_t sets[] = {3, 5, 6, 12, 96, 200, 300, 384, 1000, 3u << 17, 524287, 524289};
  char err[128];
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    ts_array_t a;
    cr_assert_eq(_ts_array_init(&a, sets[i], 1, TS_POL_LRU, 1, err, sizeof err), 0, "%s", err);
    cr_assert(!a.pow2);
    uint64_t edge[] = {0, 1, sets[i] - 1, sets[i], (1ull << 45) - 1, (1ull << 45) - sets[i],
                       (uint64_t)sets[i] * 123456789u, (1ull << 44) + 12345};
    for (size_t e = 0; e < sizeof edge / sizeof edge[0]; e++)
      cr_expect_eq(_ts_set_index(&a, edge[e]), (uint32_t)(edge[e] % sets[i]), "sets %u page %llu",
                   sets[i], (unsigned long long)edge[e]);
    for (int n = 0; n < 200000; n++) {
      uint64_t page = next() >> (19 + n % 40);   /* page numbers below 2^45, all magnitudes */
      uint32_t got = _ts_set_index(&a, page), want = (uint32_t)(page % sets[i]);
      if (got != want)
        cr_assert_fail("sets %u page %llu: index %u, expected %u", sets[i],
                       (unsigned long long)page, got, want);
    }
    _ts_array_free(&a);
  }
}

/* Reference: a fully associative LRU array as a scan of stamps (first smallest stamp wins,
 * empty entries have stamp 0). */
typedef struct ref_s { uint64_t key[128], stamp[128], clock; uint32_t ways; } ref_t;
static bool ref_access(ref_t *r, uint64_t key) {
  for (uint32_t w = 0; w < r->ways; w++)
    if (r->key[w] == key) { r->stamp[w] = ++r->clock; return true; }
  uint32_t v = 0;
  for (uint32_t w = 1; w < r->ways; w++)
    if (r->stamp[w] < r->stamp[v]) v = w;
  r->key[v] = key;
  r->stamp[v] = ++r->clock;
  return false;
}

static void check_indexed_lru(uint32_t ways, uint32_t keys) {
  char err[128];
  ts_array_t a;
  cr_assert_eq(_ts_array_init(&a, ways, 0, TS_POL_LRU, 1, err, sizeof err), 0, "%s", err);
  cr_assert_not_null(a.hidx, "%u-way fully associative array has no index", ways);
  ref_t r = {.ways = ways};
  for (uint32_t w = 0; w < ways; w++) r.key[w] = TS_INVALID;
  for (int n = 0; n < 300000; n++) {
    uint64_t x = next();
    uint32_t slot = (uint32_t)(x >> 60) & 3;
    if ((x & 0xfff) == 0) {   /* now and then a partial flush, as an ASID reuse does */
      _ts_array_flush_slot(&a, slot);
      for (uint32_t w = 0; w < ways; w++)
        if (r.key[w] != TS_INVALID && (r.key[w] & 0xfff) == slot) { r.key[w] = TS_INVALID; r.stamp[w] = 0; }
      continue;
    }
    uint64_t page = (x >> 20) % keys, key = _ts_key(page, 0, slot);
    bool want = ref_access(&r, key);
    bool got = _ts_array_lookup(&a, page, key);
    if (!got) _ts_array_fill(&a, page, key);
    if (got != want) cr_assert_fail("%u ways, access %d: hit %d, reference %d", ways, n, got, want);
  }
  for (uint32_t w = 0; w < ways; w++) cr_expect_eq(a.keys[w], r.key[w], "way %u", w);
  _ts_array_free(&a);
}

Test(array, indexed_fully_associative_lru_evicts_exactly_like_a_scan_of_stamps) {
  check_indexed_lru(32, 40);
  check_indexed_lru(72, 100);
  check_indexed_lru(64, 300);
  check_indexed_lru(17, 18);
}

/* 32-bit LRU stamps: at the limit each set is renumbered in order, which changes no decision. */
static void same_decisions_across_the_stamp_limit(uint32_t entries, uint32_t ways, uint32_t keys) {
  ts_array_t a, b;
  char err[128];
  cr_assert_eq(_ts_array_init(&a, entries, ways, TS_POL_LRU, 1, err, sizeof err), 0, "%s", err);
  cr_assert_eq(_ts_array_init(&b, entries, ways, TS_POL_LRU, 1, err, sizeof err), 0, "%s", err);
  b.clock = TS_STAMP_MAX - 1000;   /* b crosses the limit early in the run */
  uint64_t x = 7;
  for (int n = 0; n < 20000; n++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t page = (x >> 20) % keys, key = _ts_key(page, 0, 0);
    bool ha = _ts_array_lookup(&a, page, key), hb = _ts_array_lookup(&b, page, key);
    if (!ha) _ts_array_fill(&a, page, key);
    if (!hb) _ts_array_fill(&b, page, key);
    if (ha != hb) cr_assert_fail("%u/%u ways, access %d: hit %d before the limit, %d across it", entries, ways, n, ha, hb);
  }
  cr_expect_lt(b.clock, 100000u, "b was renumbered");
  for (uint32_t i = 0; i < entries; i++) cr_expect_eq(a.keys[i], b.keys[i], "entry %u", i);
  _ts_array_free(&a);
  _ts_array_free(&b);
}

Test(array, lru_stamps_renumbered_at_their_limit_evict_as_before) {
  same_decisions_across_the_stamp_limit(64, 4, 200);
  same_decisions_across_the_stamp_limit(1536, 12, 4000);
  same_decisions_across_the_stamp_limit(32, 0, 60);     /* fully associative, vector victim */
  same_decisions_across_the_stamp_limit(72, 0, 100);    /* fully associative, recency list */
  same_decisions_across_the_stamp_limit(96, 6, 300);    /* 6 ways: the scalar victim */
}

Test(array, renumbering_without_memory_for_its_sort_ranks_the_same) {
  ts_array_t a;
  char err[128];
  cr_assert_eq(_ts_array_init(&a, 48, 12, TS_POL_LRU, 1, err, sizeof err), 0, "%s", err);
  for (uint64_t p = 0; p < 40; p++) {
    uint64_t page = (p * 7) % 45, key = _ts_key(page, 0, 0);
    if (!_ts_array_lookup(&a, page, key)) _ts_array_fill(&a, page, key);
  }
  uint32_t saved[48], sorted[48];
  memcpy(saved, a.stamp, sizeof saved);
  _ts_array_renumber(&a);
  memcpy(sorted, a.stamp, sizeof sorted);
  uint32_t clock = a.clock;
  memcpy(a.stamp, saved, sizeof saved);
  _ts_alloc_fail_in = 1;
  _ts_array_renumber(&a);
  _ts_alloc_fail_in = 0;
  for (int i = 0; i < 48; i++) cr_expect_eq(a.stamp[i], sorted[i], "entry %d", i);
  cr_expect_eq(a.clock, clock);
  cr_expect_leq(clock, 12u);
  _ts_array_free(&a);
}
