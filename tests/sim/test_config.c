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
