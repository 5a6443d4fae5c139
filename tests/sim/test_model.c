/* The model against closed-form results, not against its own output. */
#include "helpers.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

/* One fully associative LRU level of E entries, no L2, no walk caches. */
static ts_sim_t *one_level(uint32_t e, const char *policy) {
  char ent[32], way[32], pol[40];
  snprintf(ent, sizeof ent, "l1d.entries=%u", e);
  snprintf(way, sizeof way, "l1d.ways=0");
  snprintf(pol, sizeof pol, "l1d.policy=%s", policy);
  const char *sets[] = {ent, way, pol, "l2.entries=0", "l2i.entries=0", "pwc.entries=0", NULL};
  return mk("custom", sets);
}

Test(model, uniform_random_access_misses_at_one_minus_e_over_n) {
  const uint32_t E = 64, N = 256;
  const uint64_t n = 400000;
  const char *pols[] = {"lru", "random", "tree-plru"};
  for (int p = 0; p < 3; p++) {
    ts_sim_t *s = one_level(E, pols[p]);
    for (uint64_t i = 0; i < n; i++) ts_access(s, 0x10000000 + (next() % N) * 4096, 8, 'R');
    const ts_stats_t *st = ts_sim_stats(s);
    double rate = (double)st->l1_misses / (double)n, want = 1.0 - (double)E / N;
    cr_expect(rate > want - 0.01 && rate < want + 0.01, "%s: miss rate %.4f, expected %.4f +- 0.01",
              pols[p], rate, want);
    ts_sim_free(s);
  }
}

Test(model, cyclic_scan_larger_than_the_tlb_misses_every_time_under_lru) {
  ts_sim_t *s = one_level(64, "lru");
  for (int r = 0; r < 10; r++)
    for (int i = 0; i < 65; i++) ts_access(s, (uint64_t)i << 12, 1, 'R');
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->l1_misses, 650);
  cr_expect_eq(st->l1_hits, 0);
  cr_expect_eq(st->walks, 650);
  ts_sim_free(s);
}

Test(model, scan_that_fits_gives_only_compulsory_misses) {
  const char *pols[] = {"lru", "random", "tree-plru"};
  for (int p = 0; p < 3; p++) {
    ts_sim_t *s = one_level(64, pols[p]);
    for (int r = 0; r < 10; r++)
      for (int i = 0; i < 64; i++) ts_access(s, (uint64_t)i << 12, 1, 'R');
    const ts_stats_t *st = ts_sim_stats(s);
    cr_expect_eq(st->l1_misses, 64, "%s: %llu misses", pols[p], (unsigned long long)st->l1_misses);
    cr_expect_eq(st->distinct_pages[TS_PS_4K], 64);
    ts_sim_free(s);
  }
}

/* Walk levels without walk caches: 4/3/2 for 4K/2M/1G leaves, 5/4/3 with 5-level paging. */
static void walk_levels(const char *levels, const char *ps, uint64_t want) {
  char l[16], p[24];
  snprintf(l, sizeof l, "levels=%s", levels);
  snprintf(p, sizeof p, "page_size=%s", ps);
  const char *sets[] = {l, p, "pwc.entries=0", "l2.entries=0", NULL};
  ts_sim_t *s = mk("skylake", sets);
  for (int i = 0; i < 10; i++) ts_access(s, (uint64_t)i << 30, 1, 'R');   /* 10 distinct 1G regions */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->walks, 10);
  cr_expect_eq(st->walk_levels, 10 * want, "%s-level %s: %llu levels", levels, ps, (unsigned long long)st->walk_levels);
  cr_expect_eq(st->walk_mem_refs, 10 * want);
  ts_sim_free(s);
}

Test(walker, walks_without_caches_traverse_4_3_2_levels) {
  walk_levels("4", "4k", 4);
  walk_levels("4", "2m", 3);
  walk_levels("4", "1g", 2);
}

Test(walker, five_level_paging_walks_traverse_5_4_3_levels) {
  walk_levels("5", "4k", 5);
  walk_levels("5", "2m", 4);
  walk_levels("5", "1g", 3);
}

static uint64_t nested_refs(const char *guest_levels, const char *guest_ps, const char *host_ps) {
  char l[16], p[24], n[24];
  snprintf(l, sizeof l, "levels=%s", guest_levels);
  snprintf(p, sizeof p, "page_size=%s", guest_ps);
  snprintf(n, sizeof n, "nested=%s", host_ps);
  const char *sets[] = {l, p, n, "pwc.entries=0", "hpwc.entries=0", "l2.entries=0", NULL};
  ts_sim_t *s = mk("skylake", sets);
  ts_access(s, 0x7f1234567000ull & ((1ull << 47) - 1), 8, 'R');
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->walks, 1);
  uint64_t r = st->walk_mem_refs;
  ts_sim_free(s);
  return r;
}

Test(walker, nested_4k_over_4k_walk_without_caches_costs_24_references) {
  cr_expect_eq(nested_refs("4", "4k", "4k"), 24);
  /* (n+1)(m+1)-1 in general: a 2M host leaf is a 3-level host walk, a 2M guest leaf 3 levels */
  cr_expect_eq(nested_refs("4", "4k", "2m"), 4 * 4 + 3);
  cr_expect_eq(nested_refs("4", "2m", "4k"), 3 * 5 + 4);
  cr_expect_eq(nested_refs("5", "4k", "4k"), 29);
}

Test(walker, walk_cache_hit_on_a_neighbouring_page_costs_one_reference) {
  const char *sets[] = {"l2.entries=0", NULL};
  ts_sim_t *s = mk("skylake", sets);
  ts_access(s, 0x40000000, 1, 'R');
  ts_access(s, 0x40001000, 1, 'R');   /* same page table: the PDE is cached */
  ts_access(s, 0x40200000, 1, 'R');   /* same page directory: the PDPTE is cached */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->walks, 3);
  cr_expect_eq(st->walk_levels, 12);
  cr_expect_eq(st->walk_mem_refs, 4 + 1 + 2);
  cr_expect_eq(st->pwc_hits, 2);
  ts_sim_free(s);
}

Test(sim, l2_tlb_catches_l1_capacity_misses) {
  ts_sim_t *s = mk("skylake", NULL);
  for (int r = 0; r < 5; r++)
    for (int i = 0; i < 200; i++) ts_access(s, (uint64_t)i << 12, 1, 'W');
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->walks, 200);          /* 200 pages fit the 1536-entry STLB */
  cr_expect_eq(st->l2_hits, 4 * 200);    /* 200 > 64: every later access misses L1 */
  ts_sim_free(s);
}

Test(sim, software_prefetch_walks_and_fills_without_a_demand_miss) {
  ts_sim_t *s = mk("skylake", NULL);
  ts_access(s, 0x5000, 1, 'P');
  ts_access(s, 0x5008, 8, 'R');
  ts_access(s, 0x5010, 1, 'P');
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->prefetches, 2);
  cr_expect_eq(st->prefetch_walks, 1);
  cr_expect_eq(st->prefetch_hits, 1);
  cr_expect_eq(st->accesses, 1);
  cr_expect_eq(st->l1_misses, 0);
  cr_expect_eq(st->walks, 0);
  ts_sim_free(s);
}

Test(sim, straddling_access_touches_both_pages) {
  ts_sim_t *s = mk("skylake", NULL);
  ts_access(s, 0x1ffc, 8, 'R');
  ts_access(s, 0x1ff8, 8, 'R');   /* ends at 0x1fff: one page */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->accesses, 2);
  cr_expect_eq(st->straddles, 1);
  cr_expect_eq(st->l1_misses, 2);
  cr_expect_eq(st->l1_hits, 1);
  cr_expect_eq(st->distinct_pages[TS_PS_4K], 2);
  ts_sim_free(s);
}

Test(sim, page_table_pages_count_directories_per_level) {
  ts_sim_t *s = mk("skylake", NULL);
  ts_access(s, 0x000000400000ull, 1, 'R');   /* two pages in one page table */
  ts_access(s, 0x000000401000ull, 1, 'R');
  ts_access(s, 0x000000600000ull, 1, 'R');   /* next 2M: a second page table, same PD */
  ts_access(s, 0x7f0000000000ull, 1, 'R');   /* far away: new PT, PD and PDPT */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->pt_pages[1], 3);
  cr_expect_eq(st->pt_pages[2], 2);
  cr_expect_eq(st->pt_pages[3], 2);
  cr_expect_eq(st->pt_pages[4], 1);
  ts_sim_free(s);
}

Test(aspace, flush_mode_loses_everything_at_each_switch_and_asids_keep_it) {
  const char *flush[] = {"asid.mode=flush", NULL}, *tagged[] = {"asid.mode=asid", NULL};
  ts_sim_t *f = mk("skylake", flush), *t = mk("skylake", tagged);
  for (int r = 0; r < 10; r++)
    for (uint64_t as = 1; as <= 2; as++) {
      cr_assert_eq(ts_context_switch(f, as), 0);
      cr_assert_eq(ts_context_switch(t, as), 0);
      for (int i = 0; i < 8; i++) ts_access(f, (uint64_t)i << 12, 1, 'R'), ts_access(t, (uint64_t)i << 12, 1, 'R');
    }
  cr_expect_eq(ts_sim_stats(f)->l1_misses, 20 * 8);
  cr_expect_eq(ts_sim_stats(f)->tlb_flushes, 20);
  cr_expect_eq(ts_sim_stats(t)->l1_misses, 2 * 8);   /* only the compulsory ones per space */
  cr_expect_eq(ts_sim_stats(t)->asid_evictions, 0);
  ts_sim_free(f);
  ts_sim_free(t);
}

Test(aspace, too_few_asids_flush_the_reused_slot_only) {
  const char *sets[] = {"asid.mode=asid", "asid.count=2", NULL};
  ts_sim_t *s = mk("skylake", sets);
  /* spaces 0 (initial), 1, 2 round robin over 2 slots: every switch reuses a slot */
  for (int r = 0; r < 4; r++)
    for (uint64_t as = 0; as <= 2; as++) {
      ts_context_switch(s, as);
      ts_access(s, 0x1000, 1, 'R');
    }
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->context_switches, 11);
  cr_expect_eq(st->asid_evictions, 10);   /* all but the first switch to space 1 */
  cr_expect_eq(st->l1_misses, 12);
  cr_expect_eq(st->tlb_flushes, 0);
  ts_sim_free(s);
}

Test(policy, tree_plru_evicts_the_way_its_bits_point_to) {
  ts_sim_t *s = one_level(4, "tree-plru");
  uint64_t A = 0x1000, B = 0x2000, C = 0x3000, D = 0x4000, E = 0x5000;
  ts_access(s, A, 1, 'R'); ts_access(s, B, 1, 'R'); ts_access(s, C, 1, 'R'); ts_access(s, D, 1, 'R');
  ts_access(s, A, 1, 'R');   /* root now points right, the right node at C */
  ts_access(s, E, 1, 'R');   /* evicts C (true LRU would evict B) */
  uint64_t before = ts_sim_stats(s)->l1_misses;
  ts_access(s, B, 1, 'R'); ts_access(s, D, 1, 'R'); ts_access(s, E, 1, 'R');
  cr_expect_eq(ts_sim_stats(s)->l1_misses, before, "B, D and E should hit");
  ts_access(s, C, 1, 'R');
  cr_expect_eq(ts_sim_stats(s)->l1_misses, before + 1, "C should have been evicted");
  ts_sim_free(s);
}

Test(policy, lru_evicts_the_least_recently_used_way) {
  ts_sim_t *s = one_level(4, "lru");
  uint64_t A = 0x1000, B = 0x2000, C = 0x3000, D = 0x4000, E = 0x5000;
  ts_access(s, A, 1, 'R'); ts_access(s, B, 1, 'R'); ts_access(s, C, 1, 'R'); ts_access(s, D, 1, 'R');
  ts_access(s, A, 1, 'R');
  ts_access(s, E, 1, 'R');   /* evicts B */
  uint64_t before = ts_sim_stats(s)->l1_misses;
  ts_access(s, A, 1, 'R'); ts_access(s, C, 1, 'R'); ts_access(s, D, 1, 'R'); ts_access(s, E, 1, 'R');
  cr_expect_eq(ts_sim_stats(s)->l1_misses, before);
  ts_access(s, B, 1, 'R');
  cr_expect_eq(ts_sim_stats(s)->l1_misses, before + 1);
  ts_sim_free(s);
}

static uint64_t random_run(const char *seed) {
  const char *sets[] = {"l1d.entries=16", "l1d.ways=0", "l1d.policy=random", "l2.entries=0", seed, NULL};
  ts_sim_t *s = mk("custom", sets);
  for (int r = 0; r < 50; r++)
    for (int i = 0; i < 20; i++) ts_access(s, (uint64_t)i << 12, 1, 'R');
  uint64_t m = ts_sim_stats(s)->l1_misses;
  ts_sim_free(s);
  return m;
}

Test(policy, random_replacement_is_reproducible_for_a_seed) {
  cr_expect_eq(random_run("seed=1"), random_run("seed=1"));
  uint64_t a = random_run("seed=1"), b = random_run("seed=2"), c = random_run("seed=3");
  cr_expect(a != b || b != c, "three seeds gave the same %llu misses", (unsigned long long)a);
  cr_expect(a > 20 && a < 1000);   /* better than LRU's 1000 on a cyclic scan of 20 > 16 */
}

Test(sim, core2_stores_skip_dtlb0_and_use_dtlb1) {
  ts_sim_t *s = mk("core2", NULL);
  ts_access(s, 0x1000, 8, 'W');   /* walk, fills DTLB1 only */
  ts_access(s, 0x1000, 8, 'W');   /* DTLB1 hit */
  ts_access(s, 0x1000, 8, 'R');   /* DTLB0 miss, DTLB1 hit, fills DTLB0 */
  ts_access(s, 0x1000, 8, 'R');   /* DTLB0 hit */
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->l1_bypasses, 2);
  cr_expect_eq(st->walks, 1);
  cr_expect_eq(st->l2_hits, 2);
  cr_expect_eq(st->l1_misses, 1);
  cr_expect_eq(st->l1_hits, 1);
  ts_sim_free(s);
}

/* ---- the measured region: a warm-up fills the TLBs and walk caches, then counting starts ---- */

static ts_sim_t *warm_sim(uint32_t e, uint64_t warm) {
  ts_sim_t *s = one_level(e, "lru");
  char err[128];
  cr_assert_eq(ts_sim_set_warmup(s, warm, err, sizeof err), 0, "%s", err);
  return s;
}

Test(warmup, a_cyclic_scan_that_fits_misses_only_in_the_warm_up) {
  const uint32_t E = 64, K = 48, R = 10;
  for (int w = 0; w < 2; w++) {
    ts_sim_t *s = warm_sim(E, w ? K : 0);
    for (uint32_t r = 0; r < R; r++)
      for (uint64_t p = 0; p < K; p++) ts_access(s, 0x40000000 + (p << 12), 8, 'R');
    const ts_stats_t *st = ts_sim_stats(s);
    /* without: K compulsory misses in K*R accesses; with a warm-up of K: none in K*(R-1) */
    cr_expect_eq(st->accesses, w ? K * (R - 1) : K * R);
    cr_expect_eq(st->warmup_accesses, w ? K : 0);
    cr_expect_eq(st->l1_misses, w ? 0 : K);
    cr_expect_eq(st->walks, w ? 0 : K);
    cr_expect_eq(st->distinct_pages[TS_PS_4K], K, "the footprint covers the warm-up too");
    cr_expect_eq(st->pt_pages[1], 1);
    ts_sim_free(s);
  }
}

Test(warmup, a_cyclic_scan_larger_than_lru_misses_every_time_either_way) {
  const uint32_t E = 64, K = 65, R = 10;
  for (int w = 0; w < 2; w++) {
    ts_sim_t *s = warm_sim(E, w ? 100 : 0);
    for (uint32_t r = 0; r < R; r++)
      for (uint64_t p = 0; p < K; p++) ts_access(s, 0x40000000 + (p << 12), 8, 'R');
    const ts_stats_t *st = ts_sim_stats(s);
    cr_expect_eq(st->l1_misses, st->accesses);
    cr_expect_eq(st->accesses, K * R - (w ? 100 : 0));
    ts_sim_free(s);
  }
}

Test(warmup, uniform_random_access_after_a_warm_up_misses_at_one_minus_e_over_n) {
  /* A short trace: 2N accesses. Without a warm-up, the fill phase is counted: with k of E
   * entries filled an access misses with probability 1 - k/N, so filling takes
   * A = sum_{k<E} N/(N-k) accesses with exactly E misses, and the rate over n accesses is
   * (E + (n - A)(1 - E/N)) / n. After a warm-up of N accesses the steady state 1 - E/N shows. */
  const uint32_t E = 64, N = 256;
  const uint64_t n = 2 * N;
  double rate[2];
  for (int w = 0; w < 2; w++) {
    double sum = 0;
    for (int trial = 0; trial < 200; trial++) {
      ts_sim_t *s = warm_sim(E, w ? N : 0);
      for (uint64_t i = 0; i < n + (w ? N : 0); i++) ts_access(s, 0x10000000 + (next() % N) * 4096, 8, 'R');
      const ts_stats_t *st = ts_sim_stats(s);
      cr_assert_eq(st->accesses, n);
      sum += (double)st->l1_misses / (double)n;
      ts_sim_free(s);
    }
    rate[w] = sum / 200;
  }
  double want = 1.0 - (double)E / N, A = 0;
  for (uint32_t k = 0; k < E; k++) A += (double)N / (N - k);
  double cold = (E + ((double)n - A) * want) / (double)n;
  cr_expect(rate[1] > want - 0.004 && rate[1] < want + 0.004, "after warm-up %.4f, expected %.4f", rate[1], want);
  cr_expect(rate[0] > cold - 0.004 && rate[0] < cold + 0.004, "without warm-up %.4f, expected %.4f", rate[0], cold);
}

Test(warmup, walk_caches_stay_warm_so_each_walk_reads_one_level) {
  /* no L2, PDE cache on: 4K pages in one 2 MiB region. The first walk reads 4 levels, every
   * later one only the PTE (1 reference). */
  const char *sets[] = {"l1d.entries=4", "l1d.ways=0", "l2.entries=0", "pwc.entries=0", "pwc.l2=8", NULL};
  for (int w = 0; w < 2; w++) {
    ts_sim_t *s = mk("skylake", sets);
    char err[128];
    cr_assert_eq(ts_sim_set_warmup(s, w ? 1 : 0, err, sizeof err), 0);
    for (uint64_t p = 0; p < 100; p++) ts_access(s, 0x40000000 + (p << 12), 8, 'R');
    const ts_stats_t *st = ts_sim_stats(s);
    cr_expect_eq(st->walks, w ? 99 : 100);
    cr_expect_eq(st->walk_mem_refs, w ? 99 : 4 + 99);
    cr_expect_eq(st->pwc_hits, 99);
    cr_expect_eq(st->walk_levels, 4 * st->walks);
    ts_sim_free(s);
  }
}

Test(warmup, measure_start_by_call_and_the_order_rules) {
  ts_sim_t *s = one_level(8, "lru");
  char err[128] = "";
  ts_access(s, 0x1000, 1, 'R');
  cr_expect_eq(ts_sim_set_warmup(s, 5, err, sizeof err), -1);
  cr_expect(strstr(err, "before the first access"), "%s", err);
  ts_context_switch(s, 3);
  ts_access(s, 0x2000, 1, 'W');
  ts_access(s, 0x3000, 1, 'P');
  ts_sim_measure_start(s);
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->warmup_accesses, 2, "demand accesses only");
  cr_expect_eq(st->accesses + st->prefetches + st->context_switches + st->l1_misses + st->walks, 0);
  cr_expect_eq(st->distinct_pages[TS_PS_4K], 3);
  ts_access(s, 0x3000, 1, 'R');   /* prefetched during the warm-up: a hit now */
  cr_expect_eq(ts_sim_stats(s)->l1_hits, 1);
  cr_expect_eq(ts_sim_warming(s), 0);
  ts_sim_free(s);
}
