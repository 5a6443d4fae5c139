/* The --set parser and the checks on a geometry. */
#include "helpers.h"

Test(config, unknown_preset_is_refused) {
  ts_config_t c;
  cr_expect_eq(ts_config_preset(&c, "pentium"), -1);
}

Test(config, set_changes_the_named_parameter) {
  ts_config_t c;
  char err[256];
  ts_config_preset(&c, "skylake");
  cr_assert_eq(ts_config_set(&c, "l1d.entries=32", err, sizeof err), 0, "%s", err);
  cr_assert_eq(ts_config_set(&c, "l1d.ways=8", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "l1d.policy=tree-plru", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "l2.2m.entries=64", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "pwc.l3=16", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "lat.ref=100", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "l1i.sizes=4k,2m", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "l1d.stores=0", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "l2.instr=0", err, sizeof err), 0);
  cr_expect_eq(c.l1d_stores, 0);
  cr_expect_eq(c.l2_instr, 0);
  cr_expect_eq(c.tlb[TS_L1D].main.entries, 32);
  cr_expect_eq(c.tlb[TS_L1D].main.ways, 8);
  cr_expect_eq(c.tlb[TS_L1D].policy, TS_POL_PLRU);
  cr_expect_eq(c.tlb[TS_L2].huge[TS_PS_2M].entries, 64);
  cr_expect_eq(c.tlb[TS_L2].sizes, 1u << TS_PS_4K, "a separate 2M array takes 2M out of the main one");
  cr_expect_eq(c.pwc[3], 16);
  cr_expect_eq(c.lat_ref, 100);
  cr_expect_eq(c.tlb[TS_L1I].sizes, 3);
}

Test(config, l2_entries_zero_means_no_l2_and_pwc_zero_no_walk_caches) {
  const char *sets[] = {"l2.entries=0", "pwc.entries=0", NULL};
  ts_sim_t *s = mk("skylake", sets);
  cr_expect(!s->tlb[TS_L2].by_size[TS_PS_4K]);
  for (int k = 2; k <= 5; k++) cr_expect(!s->pwc.on[k]);
  ts_access(s, 0x1000, 1, 'R');
  cr_expect_eq(ts_sim_stats(s)->l2_misses, 0);
  cr_expect_eq(ts_sim_stats(s)->walks, 1);
  ts_sim_free(s);
}

static void bad(const char *a, const char *want) {
  ts_config_t c;
  char err[256] = "";
  ts_config_preset(&c, "skylake");
  cr_expect_eq(ts_config_set(&c, a, err, sizeof err), -1, "%s accepted", a);
  cr_expect(strstr(err, want) != NULL, "%s: message '%s' lacks '%s'", a, err, want);
}

Test(config, bad_assignments_name_the_key_and_what_is_accepted) {
  bad("l1d.entries", "expected KEY=VALUE");
  bad("=3", "expected KEY=VALUE");
  bad("l1d.entries=-1", "whole number");
  bad("l1d.entries=abc", "whole number");
  bad("l1d.entries=99999999999", "whole number");
  bad("l1d.policy=fifo", "expected lru, tree-plru or random");
  bad("l1d.colour=3", "unknown field");
  bad("nosuch=1", "unknown key");
  bad("levels=6", "expected 4 or 5");
  bad("page_size=4m", "expected 4k, 2m or 1g");
  bad("asid.mode=pcid", "expected flush or asid");
  bad("asid.count=0", "1 to 4096");
  bad("l1d.sizes=3k", "page sizes");
  bad("pwc.l7=3", "expected pwc.entries");
}

Test(config, geometry_that_cannot_be_built_is_refused_with_a_reason) {
  ts_config_t c;
  char err[256] = "";
  ts_config_preset(&c, "skylake");
  ts_config_set(&c, "l1d.ways=5", err, sizeof err);
  cr_expect_null(ts_sim_new(&c, err, sizeof err));
  cr_expect(strstr(err, "5 ways do not divide 64 entries"), "%s", err);
  ts_config_preset(&c, "zen4");
  ts_config_set(&c, "l1d.policy=tree-plru", err, sizeof err);
  cr_expect_null(ts_sim_new(&c, err, sizeof err));
  cr_expect(strstr(err, "power-of-two"), "%s", err);
}

/* ---- a --set that the configuration cannot honour is refused, naming the key and why ---- */

/* Applies the assignments to a preset; returns ts_sim_new's error ("" when it built). */
static const char *build_err(const char *cpu, const char *const *sets) {
  static char err[512];
  ts_config_t c;
  err[0] = 0;
  cr_assert_eq(ts_config_preset(&c, cpu), 0);
  for (; *sets; sets++) cr_assert_eq(ts_config_set(&c, *sets, err, sizeof err), 0, "%s: %s", *sets, err);
  ts_sim_t *s = ts_sim_new(&c, err, sizeof err);
  if (s) { ts_sim_free(s); err[0] = 0; }
  return err;
}

static void refused(const char *cpu, const char *const *sets, const char *want) {
  const char *err = build_err(cpu, sets);
  cr_expect(strstr(err, want) != NULL, "%s %s...: message '%s' lacks '%s'", cpu, sets[0], err, want);
}

#define SETS(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(config_honoured, a_new_l2_tlb_holds_4k_pages_by_default) {
  const char *sets[] = {"l2.entries=1536", "l2.ways=12", NULL};
  ts_sim_t *s = mk("custom", sets);
  cr_expect_eq(s->cfg.tlb[TS_L2].sizes, 1u << TS_PS_4K);
  /* 100 pages cycled: the 64-entry L1 misses every time, the L2 holds them all */
  for (int r = 0; r < 10; r++)
    for (uint64_t p = 0; p < 100; p++) ts_access(s, 0x40000000 + (p << 12), 8, 'R');
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->l1_misses, 1000);
  cr_expect_eq(st->l2_hits, 900, "l2_hits %llu", (unsigned long long)st->l2_hits);
  cr_expect_eq(st->walks, 100);
  ts_sim_free(s);
}

Test(config_honoured, an_explicit_sizes_keeps_its_page_sizes_whatever_the_order) {
  ts_config_t c;
  char err[256];
  ts_config_preset(&c, "custom");
  cr_assert_eq(ts_config_set(&c, "l2.sizes=4k,2m", err, sizeof err), 0);
  cr_assert_eq(ts_config_set(&c, "l2.entries=1024", err, sizeof err), 0);
  cr_expect_eq(c.tlb[TS_L2].sizes, (1u << TS_PS_4K) | (1u << TS_PS_2M));
  cr_expect_str_empty(build_err("custom", SETS("l2.ways=8", "l2.entries=1024")));
}

Test(config_honoured, ways_without_entries_is_refused) {
  refused("custom", SETS("l2.ways=12"), "--set l2.ways=12 has no effect: l2.entries is 0");
  refused("skylake", SETS("l2.ways=4", "l2.entries=0"), "--set l2.ways=4 has no effect");
}

Test(config_honoured, sizes_without_entries_is_refused) {
  refused("custom", SETS("l2i.sizes=4k,2m"), "--set l2i.sizes has no effect: l2i.entries is 0");
}

Test(config_honoured, a_main_array_holding_no_page_size_is_refused) {
  refused("zen4", SETS("l1d.sizes=2m", "l1d.2m.entries=32"), "l1d.entries=72: the main array holds no page size");
}

Test(config_honoured, policy_of_an_absent_tlb_is_refused) {
  refused("skylake", SETS("l2i.policy=random"), "--set l2i.policy has no effect: l2i has no entries");
}

Test(config_honoured, huge_ways_without_huge_entries_is_refused) {
  refused("zen4", SETS("l2.2m.ways=4"), "--set l2.2m.ways=4 has no effect: l2.2m.entries is 0");
  refused("skylake", SETS("l1d.1g.ways=2", "l1d.1g.entries=0"), "--set l1d.1g.ways=2 has no effect");
}

Test(config_honoured, a_huge_array_shadowed_by_the_main_array_is_refused) {
  refused("skylake", SETS("l2.2m.entries=32", "l2.sizes=4k,2m"),
          "--set l2.2m.entries=32 has no effect: l2.sizes puts 2m pages in the main array");
  cr_expect_str_empty(build_err("skylake", SETS("l2.sizes=4k,2m", "l2.2m.entries=32")),
                      "the later 2m.entries takes 2m out of the main array");
}

Test(config_honoured, l2_instr_without_an_l2_or_beside_an_l2_itlb_is_refused) {
  refused("custom", SETS("l2.instr=1"), "--set l2.instr=1 has no effect: there is no L2 TLB");
  refused("zen4", SETS("l2.instr=1"), "the L2 ITLB (l2i) serves instruction misses");
  cr_expect_str_empty(build_err("zen4", SETS("l2.instr=1", "l2i.entries=0")));
}

Test(config_honoured, l1d_stores_without_an_l1_dtlb_is_refused) {
  refused("skylake", SETS("l1d.stores=0", "l1d.entries=0"), "--set l1d.stores=0 has no effect: there is no L1 DTLB");
}

Test(config_honoured, a_walk_cache_above_the_top_level_is_refused) {
  refused("skylake", SETS("pwc.l5=8"), "--set pwc.l5 has no effect with 4-level paging");
  cr_expect_str_empty(build_err("skylake", SETS("pwc.l5=8", "levels=5")));
  cr_expect_str_empty(build_err("skylake", SETS("pwc.entries=8")), "pwc.entries sets every level there is");
}

Test(config_honoured, host_settings_without_nested_paging_are_refused) {
  refused("skylake", SETS("hpwc.entries=0"), "--set hpwc.* has no effect without nested paging");
  refused("skylake", SETS("host.levels=5"), "--set host.levels=5 has no effect without nested paging");
  refused("skylake", SETS("nested=4k", "hpwc.l5=4"), "--set hpwc.l5 has no effect with 4-level host paging");
  cr_expect_str_empty(build_err("skylake", SETS("hpwc.entries=0", "nested=4k", "host.levels=5", "hpwc.l5=4")));
}

Test(config_honoured, asid_count_in_flush_mode_is_refused) {
  refused("skylake", SETS("asid.count=2"), "--set asid.count=2 has no effect in asid.mode=flush");
  cr_expect_str_empty(build_err("skylake", SETS("asid.count=2", "asid.mode=asid")));
}

Test(config_honoured, seed_without_random_replacement_is_refused) {
  refused("skylake", SETS("seed=7"), "--set seed=7 has no effect: no TLB uses random replacement");
  cr_expect_str_empty(build_err("skylake", SETS("seed=7", "l2.policy=random")));
}

Test(config_honoured, presets_alone_build) {
  for (const char *const *p = ts_presets(); *p; p++) {
    const char *none[] = {NULL};
    cr_expect_str_empty(build_err(*p, none), "%s", *p);
  }
}
