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
