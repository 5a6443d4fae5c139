/* Set index and tag for each preset's geometry, and conflict misses that follow from them. */
#include "helpers.h"

typedef struct geo_s {
  char cpu[16];
  int tlb, ps;
  uint32_t sets, ways;
} geo_t;

static geo_t geos[] = {
    {"core2", TS_L1I, TS_PS_4K, 32, 4},    {"core2", TS_L1D, TS_PS_4K, 4, 4},
    {"core2", TS_L2, TS_PS_4K, 64, 4},     {"core2", TS_L2, TS_PS_2M, 8, 4},
    {"skylake", TS_L1D, TS_PS_4K, 16, 4},  {"skylake", TS_L1D, TS_PS_2M, 8, 4},
    {"skylake", TS_L1D, TS_PS_1G, 1, 4},   {"skylake", TS_L2, TS_PS_4K, 128, 12},
    {"skylake", TS_L2, TS_PS_2M, 128, 12}, {"skylake", TS_L1I, TS_PS_4K, 16, 8},
    {"goldencove", TS_L1D, TS_PS_4K, 16, 6}, {"goldencove", TS_L2, TS_PS_4K, 128, 16},
    {"zen2", TS_L1D, TS_PS_4K, 1, 64},     {"zen2", TS_L2, TS_PS_4K, 128, 16},
    {"zen3", TS_L1D, TS_PS_2M, 1, 64},     {"zen3", TS_L2I, TS_PS_4K, 64, 8},
    {"zen4", TS_L1D, TS_PS_4K, 1, 72},     {"zen4", TS_L1D, TS_PS_2M, 1, 72},
    {"zen4", TS_L1I, TS_PS_4K, 1, 64},     {"zen4", TS_L2, TS_PS_4K, 384, 8},
    {"zen4", TS_L2I, TS_PS_4K, 64, 8},
};

ParameterizedTestParameters(geometry, preset_sets_ways_index_and_tag) {
  return cr_make_param_array(geo_t, geos, sizeof geos / sizeof geos[0]);
}

ParameterizedTest(geo_t *g, geometry, preset_sets_ways_index_and_tag) {
  ts_sim_t *s = mk(g->cpu, NULL);
  ts_array_t *a = s->tlb[g->tlb].by_size[g->ps];
  cr_assert_not_null(a, "%s tlb %d size %d has no array", g->cpu, g->tlb, g->ps);
  cr_expect_eq(a->sets, g->sets, "%s: %u sets, expected %u", g->cpu, a->sets, g->sets);
  cr_expect_eq(a->ways, g->ways, "%s: %u ways, expected %u", g->cpu, a->ways, g->ways);
  /* set index = page number mod sets; tag = the rest of the page number, kept in the key */
  uint64_t va = 0x7f12345ab000ull, page = va >> _ts_shift(g->ps);
  cr_expect_eq(_ts_set_index(a, page), (uint32_t)(page % g->sets));
  uint64_t key = _ts_key(page, g->ps, 5);
  cr_expect_eq(key >> 14, page);
  cr_expect_eq((key >> 12) & 3, (uint64_t)g->ps);
  cr_expect_eq(key & 0xfff, 5);
  ts_sim_free(s);
}

Test(geometry, pages_one_set_apart_conflict_in_a_4_way_l1) {
  /* skylake L1 DTLB: 16 sets x 4 ways. Five pages 16 apart share a set: LRU misses every time
   * although the TLB has 64 entries; five pages 1 apart all hit after the first round. */
  ts_sim_t *a = mk("skylake", NULL), *b = mk("skylake", NULL);
  for (int r = 0; r < 10; r++)
    for (int i = 0; i < 5; i++) {
      ts_access(a, (uint64_t)(i * 16) << 12, 1, 'R');
      ts_access(b, (uint64_t)i << 12, 1, 'R');
    }
  cr_expect_eq(ts_sim_stats(a)->l1_misses, 50);
  cr_expect_eq(ts_sim_stats(a)->walks, 5);
  cr_expect_eq(ts_sim_stats(b)->l1_misses, 5);
  ts_sim_free(a);
  ts_sim_free(b);
}

Test(geometry, zen4_l2_with_384_sets_indexes_by_modulo) {
  ts_sim_t *s = mk("zen4", NULL);
  ts_array_t *a = s->tlb[TS_L2].by_size[TS_PS_4K];
  cr_expect(!a->pow2);
  cr_expect_eq(_ts_set_index(a, 384 + 7), 7);
  ts_sim_free(s);
}

Test(geometry, every_preset_builds_and_runs) {
  for (const char *const *p = ts_presets(); *p; p++) {
    ts_sim_t *s = mk(*p, NULL);
    for (int i = 0; i < 1000; i++) ts_access(s, (uint64_t)(i * 7919) << 12, 8, i % 3 ? 'R' : 'I');
    cr_expect_eq(ts_sim_stats(s)->accesses, 1000, "%s", *p);
    ts_sim_free(s);
  }
}
