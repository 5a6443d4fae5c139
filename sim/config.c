/* Presets (--cpu) and the --set parser. One config struct holds the whole geometry. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void _ts_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

#define B4K (1u << TS_PS_4K)
#define B2M (1u << TS_PS_2M)
#define B1G (1u << TS_PS_1G)

static const char *const preset_names[] = {"core2", "skylake", "goldencove", "zen2", "zen3",
                                           "zen4", "custom", NULL};
const char *const *ts_presets(void) { return preset_names; }

static void tlb(ts_config_t *c, int t, uint32_t entries, uint32_t ways, unsigned sizes) {
  c->tlb[t].main = (ts_array_cfg_t){entries, ways};
  c->tlb[t].sizes = (uint8_t)sizes;
}
static void huge(ts_config_t *c, int t, int ps, uint32_t entries, uint32_t ways) {
  c->tlb[t].huge[ps] = (ts_array_cfg_t){entries, ways};
}
static void pwc(ts_config_t *c, uint32_t l2, uint32_t l3, uint32_t l4, uint32_t l5) {
  c->pwc[2] = l2; c->pwc[3] = l3; c->pwc[4] = l4; c->pwc[5] = l5;
  memcpy(c->hpwc, c->pwc, sizeof c->pwc);
}

static void defaults(ts_config_t *c, const char *name) {
  memset(c, 0, sizeof *c);
  snprintf(c->cpu, sizeof c->cpu, "%s", name);
  c->levels = 4;
  c->host_levels = 4;
  c->page_size = TS_PS_4K;
  c->asid_mode = TS_ASID_FLUSH;
  /* Linux uses 6 dynamic PCIDs per CPU (TLB_NR_DYN_ASIDS, arch/x86/mm/tlb.c). */
  c->asid_count = 6;
  c->seed = 1;
  c->l2_instr = 1;
  c->l1d_stores = 1;
  c->lat_l2 = 7;
  c->lat_walk = 0;
  c->lat_ref = 20;
}

int ts_config_preset(ts_config_t *c, const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "core2")) {
    /* Intel Core 2 (Merom/Penryn). Source: Intel 64 and IA-32 Architectures Optimization
     * Reference Manual (2008+), "Intel Core Microarchitecture": ITLB 128 entries 4-way (4K),
     * 8 entries fully associative for large pages; DTLB0 16 entries (4K) and 16 (large), used by
     * loads; DTLB1 256 entries 4-way (4K) and 32 entries 4-way (large). Drepper §4.3 quotes the
     * 128 ITLB / 256 DTLB. Modelled as L1D = DTLB0 and a data-only L2 = DTLB1; as the manual
     * describes DTLB0 as serving loads only, stores look up DTLB1 directly (l1d.stores=0) and
     * fill only DTLB1 (which structure a store's walk fills is not documented). Core 2 has no 1G pages (PS
     * "large" here is 2M; 4M pages are not modelled) and its walk-cache size (the "PDE cache")
     * is not documented: 32 entries is our assumption. */
    defaults(c, name);
    tlb(c, TS_L1I, 128, 4, B4K); huge(c, TS_L1I, TS_PS_2M, 8, 0);
    tlb(c, TS_L1D, 16, 4, B4K); huge(c, TS_L1D, TS_PS_2M, 16, 4);
    tlb(c, TS_L2, 256, 4, B4K); huge(c, TS_L2, TS_PS_2M, 32, 4);
    c->l2_instr = 0;
    c->l1d_stores = 0;
    pwc(c, 32, 0, 0, 0);
    c->lat_l2 = 2; c->lat_ref = 20;
  } else if (!strcmp(name, "skylake")) {
    /* Intel Skylake client/server core. Source: Intel Optimization Reference Manual, Skylake
     * section (TLB parameters table): ITLB 128 entries 8-way (4K), 8 per thread fully assoc
     * (2M); DTLB 64 entries 4-way (4K), 32 4-way (2M), 4 fully assoc (1G); STLB 1536 entries
     * 12-way shared by 4K and 2M, 16 entries 4-way (1G). Walk-cache sizes are not documented
     * (Intel SDM §4.10.3 describes the PML4/PDPTE/PDE caches without sizes): PDE 32, PDPTE 4,
     * PML4 2 are our assumption, in line with published reverse-engineering. */
    defaults(c, name);
    tlb(c, TS_L1I, 128, 8, B4K); huge(c, TS_L1I, TS_PS_2M, 8, 0);
    tlb(c, TS_L1D, 64, 4, B4K); huge(c, TS_L1D, TS_PS_2M, 32, 4); huge(c, TS_L1D, TS_PS_1G, 4, 0);
    tlb(c, TS_L2, 1536, 12, B4K | B2M); huge(c, TS_L2, TS_PS_1G, 16, 4);
    pwc(c, 32, 4, 2, 2);
    c->lat_l2 = 9; c->lat_ref = 20;
  } else if (!strcmp(name, "goldencove")) {
    /* Intel Golden Cove (Alder Lake P-core, Sapphire Rapids). Source: Intel Optimization
     * Reference Manual, Golden Cove section: ITLB 256 entries 8-way (4K), 32 (2M); DTLB 96
     * entries 6-way (4K), 32 4-way (2M), 8 (1G); STLB 2048 entries 16-way shared by 4K and 2M,
     * 1024 entries 8-way (1G). The 1G DTLB associativity and the STLB 1G split are taken from
     * the manual's table but not confirmed by a measurement of ours; walk caches assumed as
     * skylake. */
    defaults(c, name);
    tlb(c, TS_L1I, 256, 8, B4K); huge(c, TS_L1I, TS_PS_2M, 32, 0);
    tlb(c, TS_L1D, 96, 6, B4K); huge(c, TS_L1D, TS_PS_2M, 32, 4); huge(c, TS_L1D, TS_PS_1G, 8, 0);
    tlb(c, TS_L2, 2048, 16, B4K | B2M); huge(c, TS_L2, TS_PS_1G, 1024, 8);
    pwc(c, 32, 4, 2, 2);
    c->lat_l2 = 8; c->lat_ref = 20;
  } else if (!strcmp(name, "zen2") || !strcmp(name, "zen3") || !strcmp(name, "zen4")) {
    /* AMD Zen 2 / Zen 3. Source: AMD Software Optimization Guide for family 17h model 30h
     * (Zen 2, pub. 56305) and family 19h (Zen 3, pub. 56665): L1 ITLB 64 entries fully assoc,
     * L1 DTLB 64 entries fully assoc, all page sizes; L2 ITLB 512 entries 8-way (4K, 2M);
     * L2 DTLB 2048 entries 16-way (4K, 2M; 1G pages are held as 2M "smashed" entries there,
     * which we model by letting the L2 array hold 1G entries too). Walk cache: AMD documents a
     * page-directory cache but no sizes per level; 64 PDE / 8 PDPTE / 4 PML4 is an assumption.
     * Zen 4: measured on our machine with CPUID 0x80000005/6/19 (see DESIGN.md): L1 DTLB 72
     * fully assoc (4K, 2M), L1 ITLB 64 fully assoc, L2 DTLB 3072 entries (CPUID: 8-way for 4K,
     * 6-way for 2M; modelled as one 8-way array of 384 sets holding both), L2 ITLB 512 (8-way
     * assumed, as Zen 3). No 1G TLB entries are reported; we let the arrays hold them. */
    defaults(c, name);
    uint32_t l1d = !strcmp(name, "zen4") ? 72 : 64;
    uint32_t l2d = !strcmp(name, "zen4") ? 3072 : 2048;
    uint32_t l2w = !strcmp(name, "zen4") ? 8 : 16;
    tlb(c, TS_L1I, 64, 0, B4K | B2M | B1G);
    tlb(c, TS_L1D, l1d, 0, B4K | B2M | B1G);
    tlb(c, TS_L2, l2d, l2w, B4K | B2M | B1G);
    tlb(c, TS_L2I, 512, 8, B4K | B2M | B1G);
    c->l2_instr = 0;
    pwc(c, 64, 8, 4, 4);
    c->lat_l2 = 7; c->lat_ref = 20;
  } else if (!strcmp(name, "custom")) {
    /* Nothing but one small fully associative L1 DTLB; build the rest with --set. */
    defaults(c, name);
    tlb(c, TS_L1I, 64, 0, B4K | B2M | B1G);
    tlb(c, TS_L1D, 64, 0, B4K | B2M | B1G);
    pwc(c, 0, 0, 0, 0);
  } else {
    return -1;
  }
  for (int t = 0; t < TS_NTLBS; t++) c->tlb[t].policy = TS_POL_LRU;
  return 0;
}

/* ---- --set ----------------------------------------------------------------------------- */

static const char keys_help[] =
    "  T.entries, T.ways        main array of TLB T (ways=0: fully associative;\n"
    "                           entries=0: no TLB T at all)\n"
    "  T.2m.entries, T.2m.ways  separate 2M array (likewise T.1g.*)\n"
    "  T.sizes=4k,2m,1g         page sizes the main array holds\n"
    "  T.policy=lru|tree-plru|random\n"
    "      T is l1i, l1d, l2 (L2 TLB; l2.entries=0: no L2) or l2i (separate L2 ITLB)\n"
    "  l2.instr=0|1             the L2 TLB also serves instruction misses\n"
    "  l1d.stores=0|1           0: stores skip the L1 DTLB and look up the L2 (core2's DTLB0)\n"
    "  pwc.entries=N            every page-walk cache (0: none); pwc.l2..pwc.l5 (.entries) one level\n"
    "                           (level 2 caches PDEs, 3 PDPTEs, 4 PML4Es, 5 PML5Es)\n"
    "  hpwc.entries=N           the host's walk caches in nested walks (hpwc.l2.. likewise)\n"
    "  levels=4|5, host.levels=4|5, page_size=4k|2m|1g, nested=off|4k|2m|1g\n"
    "  asid.mode=flush|asid, asid.count=N (1..4096), seed=N\n"
    "  lat.l2, lat.walk, lat.ref  cycles for est_walk_cycles (an estimate)\n"
    "  A key the configuration would ignore (l2.ways while l2.entries is 0, asid.count in\n"
    "  flush mode, seed without random replacement, ...) is an error. A TLB that had no main\n"
    "  array (custom's l2, l2i) holds 4k pages once T.entries is given, unless T.sizes says.\n";
const char *ts_config_keys(void) { return keys_help; }

int ts_page_size_parse(const char *s) {
  if (!strcmp(s, "4k") || !strcmp(s, "4K")) return TS_PS_4K;
  if (!strcmp(s, "2m") || !strcmp(s, "2M")) return TS_PS_2M;
  if (!strcmp(s, "1g") || !strcmp(s, "1G")) return TS_PS_1G;
  return -1;
}
const char *ts_page_size_name(int ps) {
  static const char *const n[] = {"4k", "2m", "1g"};
  return ps >= 0 && ps < TS_NSIZES ? n[ps] : "?";
}

static int parse_u32(const char *v, uint32_t max, uint32_t *out) {
  if (!*v || *v == '-' || *v == '+' || *v == ' ') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || *end || x > max) return -1;
  *out = (uint32_t)x;
  return 0;
}

static int tlb_index(const char *s, size_t n) {
  static const char *const names[] = {"l1i", "l1d", "l2", "l2i"};
  for (int i = 0; i < TS_NTLBS; i++)
    if (strlen(names[i]) == n && !memcmp(s, names[i], n)) return i;
  return -1;
}

static int parse_sizes(const char *v, uint8_t *out) {
  uint8_t m = 0;
  char buf[64];
  if (strlen(v) >= sizeof buf) return -1;
  strcpy(buf, v);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",+", &save); tok; tok = strtok_r(NULL, ",+", &save)) {
    int ps = ts_page_size_parse(tok);
    if (ps < 0) return -1;
    m |= (uint8_t)(1u << ps);
  }
  if (!m) return -1;
  *out = m;
  return 0;
}

#define BAD(...) do { _ts_err(err, errlen, __VA_ARGS__); return -1; } while (0)

int ts_config_set(ts_config_t *c, const char *a, char *err, size_t errlen) {
  const char *eq = a ? strchr(a, '=') : NULL;
  if (!eq || eq == a) BAD("--set %s: expected KEY=VALUE", a ? a : "(null)");
  char key[48];
  size_t kn = (size_t)(eq - a);
  if (kn >= sizeof key) BAD("--set: key too long (%zu characters)", kn);
  memcpy(key, a, kn);
  key[kn] = 0;
  const char *v = eq + 1;
  uint32_t u;
#define U32(max, dst) do { if (parse_u32(v, (max), &u)) \
      BAD("--set %s: expected a whole number from 0 to %u, got '%s'", key, (unsigned)(max), v); \
    (dst) = u; } while (0)

  const char *dot = strchr(key, '.');
  int t = dot ? tlb_index(key, (size_t)(dot - key)) : -1;
  if (t >= 0) {
    ts_tlb_cfg_t *tc = &c->tlb[t];
    const char *f = dot + 1;
    if (t == TS_L1D && !strcmp(f, "stores")) { U32(1, c->l1d_stores); c->given |= TS_G_L1D_STORES; return 0; }
    if (t == TS_L2 && !strcmp(f, "instr")) { U32(1, c->l2_instr); c->given |= TS_G_L2_INSTR; return 0; }
    if (!strcmp(f, "entries")) {   /* 0: no such TLB at all, huge-page arrays included */
      U32(TS_MAX_ENTRIES, tc->main.entries);
      if (!u) memset(tc->huge, 0, sizeof tc->huge);
      /* A TLB that had no main array (custom's L2) holds 4 KiB pages unless T.sizes says. */
      if (u && !tc->sizes) tc->sizes = B4K;
      return 0;
    }
    if (!strcmp(f, "ways")) {
      U32(TS_MAX_ENTRIES, tc->main.ways);
      c->given |= TS_G_TLB(t, TS_GF_WAYS);
      return 0;
    }
    if (!strcmp(f, "sizes")) {
      if (parse_sizes(v, &tc->sizes)) BAD("--set %s: expected page sizes like 4k,2m,1g, got '%s'", key, v);
      c->given |= TS_G_TLB(t, TS_GF_SIZES);
      return 0;
    }
    if (!strcmp(f, "policy")) {
      int p = _ts_policy_parse(v);
      if (p < 0) BAD("--set %s: expected lru, tree-plru or random, got '%s'", key, v);
      tc->policy = (uint8_t)p;
      c->given |= TS_G_TLB(t, TS_GF_POLICY);
      return 0;
    }
    for (int ps = TS_PS_2M; ps <= TS_PS_1G; ps++) {
      char e[24], w[24];
      snprintf(e, sizeof e, "%s.entries", ts_page_size_name(ps));
      snprintf(w, sizeof w, "%s.ways", ts_page_size_name(ps));
      if (!strcmp(f, e)) {   /* a separate array: the main one stops holding that size */
        U32(TS_MAX_ENTRIES, tc->huge[ps].entries);
        if (u) tc->sizes &= (uint8_t)~(1u << ps);
        c->given |= TS_G_HUGE_ENTRIES(t, ps);
        return 0;
      }
      if (!strcmp(f, w)) {
        U32(TS_MAX_ENTRIES, tc->huge[ps].ways);
        c->given |= TS_G_HUGE_WAYS(t, ps);
        return 0;
      }
    }
    BAD("--set %s: unknown field '%s' (expected entries, ways, sizes, policy, 2m.entries, "
        "2m.ways, 1g.entries, 1g.ways)", key, f);
  }
  if (!strncmp(key, "pwc.", 4) || !strncmp(key, "hpwc.", 5)) {
    uint32_t *arr = key[0] == 'h' ? c->hpwc : c->pwc;
    const char *f = strchr(key, '.') + 1;
    bool host = key[0] == 'h';
    if (!strcmp(f, "entries")) {
      U32(65536, u);
      for (int k = 2; k <= TS_MAX_LEVELS; k++) arr[k] = u;
      if (host) c->given |= TS_G_HPWC;
      return 0;
    }
    if (f[0] == 'l' && f[1] >= '2' && f[1] <= '5' && (!f[2] || !strcmp(f + 2, ".entries"))) {
      int k = f[1] - '0';
      U32(65536, arr[k]);
      c->given |= host ? TS_G_HPWC | TS_G_HPWC_L(k) : TS_G_PWC(k);
      return 0;
    }
    BAD("--set %s: expected %.*s.entries or %.*s.l2 .. %.*s.l5", key, (int)(f - key - 1), key,
        (int)(f - key - 1), key, (int)(f - key - 1), key);
  }
  if (!strcmp(key, "levels") || !strcmp(key, "host.levels")) {
    if (strcmp(v, "4") && strcmp(v, "5")) BAD("--set %s: expected 4 or 5, got '%s'", key, v);
    *(key[0] == 'h' ? &c->host_levels : &c->levels) = v[0] - '0';
    if (key[0] == 'h') c->given |= TS_G_HOST_LEVELS;
    return 0;
  }
  if (!strcmp(key, "page_size")) {
    int ps = ts_page_size_parse(v);
    if (ps < 0) BAD("--set %s: expected 4k, 2m or 1g, got '%s'", key, v);
    c->page_size = ps;
    return 0;
  }
  if (!strcmp(key, "nested")) {
    int ps = strcmp(v, "off") ? ts_page_size_parse(v) : -1;
    if (ps < 0 && strcmp(v, "off")) BAD("--set %s: expected off, 4k, 2m or 1g, got '%s'", key, v);
    c->nested = ps + 1;
    return 0;
  }
  if (!strcmp(key, "asid.mode")) {
    if (!strcmp(v, "flush")) c->asid_mode = TS_ASID_FLUSH;
    else if (!strcmp(v, "asid")) c->asid_mode = TS_ASID_TAGGED;
    else BAD("--set %s: expected flush or asid, got '%s'", key, v);
    return 0;
  }
  if (!strcmp(key, "asid.count")) {
    U32(TS_MAX_ASIDS, c->asid_count);
    if (!c->asid_count) BAD("--set %s: expected 1 to %u hardware ASIDs, got 0", key, TS_MAX_ASIDS);
    c->given |= TS_G_ASID_COUNT;
    return 0;
  }
  if (!strcmp(key, "seed")) {
    char *end;
    errno = 0;
    if (!*v || *v == '-') BAD("--set seed: expected a whole number, got '%s'", v);
    unsigned long long x = strtoull(v, &end, 0);
    if (errno || *end) BAD("--set seed: expected a whole number, got '%s'", v);
    c->seed = x;
    c->given |= TS_G_SEED;
    return 0;
  }
  if (!strcmp(key, "lat.l2")) { U32(1000000, c->lat_l2); return 0; }
  if (!strcmp(key, "lat.walk")) { U32(1000000, c->lat_walk); return 0; }
  if (!strcmp(key, "lat.ref")) { U32(1000000, c->lat_ref); return 0; }
  BAD("--set: unknown key '%s' (try tlbsim --help for the list)", key);
}

static int check_array(const ts_array_cfg_t *a, int policy, const char *what, char *err,
                       size_t errlen) {
  if (!a->entries) return 0;
  uint32_t ways = a->ways ? a->ways : a->entries;
  if (ways > a->entries || a->entries % ways)
    BAD("%s: %u ways do not divide %u entries", what, ways, a->entries);
  if (policy == TS_POL_PLRU && ((ways & (ways - 1)) || ways > 64))
    BAD("%s: tree-plru needs a power-of-two number of ways up to 64, got %u", what, ways);
  return 0;
}

/* A --set that the rest of the configuration makes meaningless is refused, naming the key and
 * why, rather than silently ignored. Checked on the final configuration, so the order of the
 * --set options does not matter. */
static int check_given(const ts_config_t *c, char *err, size_t errlen) {
  static const char *const names[] = {"l1i", "l1d", "l2", "l2i"};
  const uint64_t g = c->given;
  for (int t = 0; t < TS_NTLBS; t++) {
    const ts_tlb_cfg_t *tc = &c->tlb[t];
    const char *n = names[t];
    bool any = tc->main.entries || tc->huge[TS_PS_2M].entries || tc->huge[TS_PS_1G].entries;
    if ((g & TS_G_TLB(t, TS_GF_WAYS)) && !tc->main.entries)
      BAD("--set %s.ways=%u has no effect: %s.entries is 0 (no main array); give %s.entries too",
          n, tc->main.ways, n, n);
    if ((g & TS_G_TLB(t, TS_GF_SIZES)) && !tc->main.entries)
      BAD("--set %s.sizes has no effect: %s.entries is 0 (no main array); give %s.entries too",
          n, n, n);
    if (tc->main.entries && !tc->sizes)
      BAD("%s.entries=%u: the main array holds no page size; give %s.sizes=4k (or 2m, 1g)", n,
          tc->main.entries, n);
    if ((g & TS_G_TLB(t, TS_GF_POLICY)) && !any)
      BAD("--set %s.policy has no effect: %s has no entries (%s.entries is 0)", n, n, n);
    for (int ps = TS_PS_2M; ps <= TS_PS_1G; ps++) {
      const char *p = ts_page_size_name(ps);
      if ((g & TS_G_HUGE_WAYS(t, ps)) && !tc->huge[ps].entries)
        BAD("--set %s.%s.ways=%u has no effect: %s.%s.entries is 0 (no %s array); give "
            "%s.%s.entries too", n, p, tc->huge[ps].ways, n, p, p, n, p);
      if ((g & TS_G_HUGE_ENTRIES(t, ps)) && tc->huge[ps].entries && tc->main.entries &&
          (tc->sizes & (1u << ps)))
        BAD("--set %s.%s.entries=%u has no effect: %s.sizes puts %s pages in the main array; "
            "leave %s out of %s.sizes", n, p, tc->huge[ps].entries, n, p, p, n);
    }
  }
  bool l2 = c->tlb[TS_L2].main.entries || c->tlb[TS_L2].huge[TS_PS_2M].entries ||
            c->tlb[TS_L2].huge[TS_PS_1G].entries;
  bool l2i = c->tlb[TS_L2I].main.entries || c->tlb[TS_L2I].huge[TS_PS_2M].entries ||
             c->tlb[TS_L2I].huge[TS_PS_1G].entries;
  bool l1d = c->tlb[TS_L1D].main.entries || c->tlb[TS_L1D].huge[TS_PS_2M].entries ||
             c->tlb[TS_L1D].huge[TS_PS_1G].entries;
  if ((g & TS_G_L2_INSTR) && !l2)
    BAD("--set l2.instr=%d has no effect: there is no L2 TLB (l2.entries is 0)", c->l2_instr);
  if ((g & TS_G_L2_INSTR) && l2i)
    BAD("--set l2.instr=%d has no effect: the L2 ITLB (l2i) serves instruction misses; "
        "l2i.entries=0 removes it", c->l2_instr);
  if ((g & TS_G_L1D_STORES) && !l1d)
    BAD("--set l1d.stores=%d has no effect: there is no L1 DTLB (l1d.entries is 0)", c->l1d_stores);
  for (int k = c->levels + 1; k <= TS_MAX_LEVELS; k++)
    if (g & TS_G_PWC(k))
      BAD("--set pwc.l%d has no effect with %d-level paging (levels=5 uses it)", k, c->levels);
  if ((g & TS_G_HPWC) && !c->nested)
    BAD("--set hpwc.* has no effect without nested paging (nested=4k|2m|1g, --nested)");
  for (int k = c->host_levels + 1; k <= TS_MAX_LEVELS; k++)
    if (g & TS_G_HPWC_L(k))
      BAD("--set hpwc.l%d has no effect with %d-level host paging (host.levels=5 uses it)", k,
          c->host_levels);
  if ((g & TS_G_HOST_LEVELS) && !c->nested)
    BAD("--set host.levels=%d has no effect without nested paging (nested=4k|2m|1g, --nested)",
        c->host_levels);
  if ((g & TS_G_ASID_COUNT) && c->asid_mode != TS_ASID_TAGGED)
    BAD("--set asid.count=%u has no effect in asid.mode=flush (asid.mode=asid, --asid-mode asid, "
        "uses it)", c->asid_count);
  if (g & TS_G_SEED) {
    bool random = false;
    for (int t = 0; t < TS_NTLBS; t++) {
      const ts_tlb_cfg_t *tc = &c->tlb[t];
      if (tc->policy == TS_POL_RANDOM &&
          (tc->main.entries || tc->huge[TS_PS_2M].entries || tc->huge[TS_PS_1G].entries))
        random = true;
    }
    if (!random)
      BAD("--set seed=%llu has no effect: no TLB uses random replacement (T.policy=random)",
          (unsigned long long)c->seed);
  }
  return 0;
}

int ts_config_check(const ts_config_t *c, char *err, size_t errlen) {
  static const char *const names[] = {"l1i", "l1d", "l2", "l2i"};
  char what[32];
  for (int t = 0; t < TS_NTLBS; t++) {
    const ts_tlb_cfg_t *tc = &c->tlb[t];
    snprintf(what, sizeof what, "%s", names[t]);
    if (check_array(&tc->main, tc->policy, what, err, errlen)) return -1;
    for (int ps = TS_PS_2M; ps <= TS_PS_1G; ps++) {
      snprintf(what, sizeof what, "%s.%s", names[t], ts_page_size_name(ps));
      if (check_array(&tc->huge[ps], tc->policy, what, err, errlen)) return -1;
    }
  }
  if (c->levels != 4 && c->levels != 5) BAD("levels: expected 4 or 5, got %d", c->levels);
  if (c->host_levels != 4 && c->host_levels != 5)
    BAD("host.levels: expected 4 or 5, got %d", c->host_levels);
  if (c->asid_count < 1 || c->asid_count > TS_MAX_ASIDS)
    BAD("asid.count: expected 1 to %u, got %u", TS_MAX_ASIDS, c->asid_count);
  return check_given(c, err, errlen);
}
