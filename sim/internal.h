/* Internal types and cross-file functions of the simulator (`_ts_` names, `TS_` macros).
 *
 * Modules and the narrow interfaces between them:
 *   config.c   presets and the --set parser          -> ts_config_t
 *   policy.c   replacement policies (function table)  -> _ts_policies[]
 *   tlb.c      set-associative arrays and TLBs        -> _ts_array_*, _ts_tlb_*
 *   walker.c   page-table walker, walk caches, nested -> _ts_walk()
 *   aspace.c   page size per address, ASIDs, distinct pages and page-table footprint
 *   sim.c      the access path joining the above     -> ts_access()
 *   trace.c    text / lackey / binary readers         -> ts_run_fd()
 *   report.c   text and JSON printers over ts_stats_t
 */
#ifndef TS_INTERNAL_H
#define TS_INTERNAL_H

#include "tlbsim.h"
#include <stdbool.h>

#define TS_LIKELY(x) __builtin_expect(!!(x), 1)
#define TS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TS_NOINLINE __attribute__((noinline))

#define TS_INVALID UINT64_MAX      /* an empty entry */
#define TS_MAX_SPACES (1u << 15)   /* software address spaces (15 bits of a footprint key) */

static inline unsigned _ts_shift(int ps) { return 12u + 9u * (unsigned)ps; }

void _ts_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- replacement policies: one table of function pointers ---------------------------- */
struct ts_array_s;
typedef struct ts_policy_s {
  const char *name;
  /* A hit on way w of set (a pointer to that set's first key). */
  void (*hit)(struct ts_array_s *a, uint64_t *set, uint32_t setidx, uint32_t w);
  /* Places key in set, evicting by the policy's choice (empty ways first). */
  void (*fill)(struct ts_array_s *a, uint64_t *set, uint32_t setidx, uint64_t key);
} ts_policy_t;
extern const ts_policy_t _ts_policies[TS_NPOLICIES];
int _ts_policy_parse(const char *s);   /* lru | tree-plru | plru | random -> TS_POL_* or -1 */

/* ---- set-associative array ------------------------------------------------------------ */
/* An entry's key: page number << 14 | page-size code << 12 | ASID slot. */
typedef struct ts_array_s {
  uint64_t *keys;         /* sets * ways */
  uint64_t *stamp;        /* LRU: last use of each entry (a per-array clock) */
  uint64_t *meta;         /* per-set policy state (tree-PLRU bits) */
  uint32_t sets, ways;
  uint64_t set_mask;      /* sets - 1 when sets is a power of two */
  bool pow2;
  uint8_t policy;
  const ts_policy_t *pol;
  uint64_t rng;           /* random policy state */
  uint64_t clock;         /* LRU */
} ts_array_t;

int _ts_array_init(ts_array_t *a, uint32_t entries, uint32_t ways, int policy, uint64_t seed,
                   char *err, size_t errlen);
void _ts_array_free(ts_array_t *a);
void _ts_array_flush(ts_array_t *a);
void _ts_array_flush_slot(ts_array_t *a, uint32_t slot);

static inline uint64_t _ts_key(uint64_t page, int ps, uint32_t slot) {
  return (page << 14) | ((uint64_t)ps << 12) | slot;
}
static inline uint32_t _ts_set_index(const ts_array_t *a, uint64_t page) {
  return a->pow2 ? (uint32_t)(page & a->set_mask) : (uint32_t)(page % a->sets);
}
/* Looks key up; on a hit updates the policy state. The inlined hot path: the compare loop has
 * no early exit (branch-free for small sets) and LRU's update is inline; other policies are
 * called through the table. */
static inline __attribute__((always_inline)) bool _ts_array_lookup(ts_array_t *a, uint64_t page, uint64_t key) {
  uint32_t si = _ts_set_index(a, page);
  size_t base = (size_t)si * a->ways;
  const uint64_t *set = a->keys + base;
  int f = -1;
  if (a->ways <= 8) {
    for (uint32_t w = 0; w < a->ways; w++) f = set[w] == key ? (int)w : f;
  } else {
    for (uint32_t w = 0; w < a->ways; w++)
      if (set[w] == key) { f = (int)w; break; }
  }
  if (f < 0) return false;
  if (TS_LIKELY(a->policy == TS_POL_LRU)) a->stamp[base + (uint32_t)f] = ++a->clock;
  else a->pol->hit(a, a->keys + base, si, (uint32_t)f);
  return true;
}
static inline void _ts_array_fill(ts_array_t *a, uint64_t page, uint64_t key) {
  uint32_t si = _ts_set_index(a, page);
  a->pol->fill(a, a->keys + (size_t)si * a->ways, si, key);
}

/* A TLB: arrays by page size (several sizes may share the main array). */
typedef struct ts_tlb_s {
  ts_array_t main, huge[TS_NSIZES];
  ts_array_t *by_size[TS_NSIZES];   /* NULL: this TLB holds no entries of that size */
  bool present;
} ts_tlb_t;
int _ts_tlb_init(ts_tlb_t *t, const ts_tlb_cfg_t *c, uint64_t seed, const char *name,
                 char *err, size_t errlen);
void _ts_tlb_free(ts_tlb_t *t);
void _ts_tlb_flush(ts_tlb_t *t);
void _ts_tlb_flush_slot(ts_tlb_t *t, uint32_t slot);

/* ---- page-walk caches and the walker ------------------------------------------------- */
typedef struct ts_pwcs_s {
  ts_array_t level[TS_MAX_LEVELS + 1];   /* level[k] caches level-k entries; k = 2..levels */
  bool on[TS_MAX_LEVELS + 1];
} ts_pwcs_t;
int _ts_pwcs_init(ts_pwcs_t *p, const uint32_t *entries, int levels, char *err, size_t errlen);
void _ts_pwcs_free(ts_pwcs_t *p);
void _ts_pwcs_flush(ts_pwcs_t *p);
void _ts_pwcs_flush_slot(ts_pwcs_t *p, uint32_t slot);

typedef struct ts_walk_result_s {
  uint32_t levels;     /* levels of the guest/native path: levels - leaf + 1 */
  uint32_t refs;       /* memory references after walk caches (nested: 2-D total) */
  bool pwc_hit;
} ts_walk_result_t;
struct ts_walker_s;
ts_walk_result_t _ts_walk(ts_sim_t *s, uint64_t va, int ps, uint32_t slot);

/* ---- address space ------------------------------------------------------------------- */
typedef struct ts_range_s { uint64_t start, end; int ps, mapped; } ts_range_t;   /* end exclusive */
typedef struct ts_pagemap_s {
  ts_range_t *layer[2];   /* [0] regions, [1] smaps, as loaded */
  size_t n[2], cap[2];
  ts_range_t *flat;       /* non-overlapping, sorted, covering every address */
  size_t nflat;
  ts_range_t last;        /* the range of the previous lookup */
  int dflt;
} ts_pagemap_t;
int _ts_pagemap_add(ts_pagemap_t *m, int layer, uint64_t start, uint64_t end, int ps,
                    char *err, size_t errlen);
int _ts_pagemap_build(ts_pagemap_t *m);
void _ts_pagemap_free(ts_pagemap_t *m);
int _ts_pagemap_lookup_slow(ts_pagemap_t *m, uint64_t va);
static inline int _ts_pagemap_lookup(ts_pagemap_t *m, uint64_t va) {
  if (TS_LIKELY(va - m->last.start < m->last.end - m->last.start)) return m->last.ps;
  return _ts_pagemap_lookup_slow(m, va);
}
void _ts_pagemap_pt_pages(const ts_pagemap_t *m, int levels, uint64_t *out);

/* An open-addressing set of nonzero 64-bit keys; grows with the footprint only. */
typedef struct ts_hset_s { uint64_t *slots; size_t cap, n; } ts_hset_t;
bool _ts_hset_insert(ts_hset_t *h, uint64_t key);   /* true when key was new */
void _ts_hset_free(ts_hset_t *h);

/* Hardware ASID slots for TS_ASID_TAGGED, and dense ids for software address spaces. */
typedef struct ts_aspace_s {
  uint64_t *slot_asid;      /* software ASID held by each hardware slot */
  uint64_t *slot_used;      /* last use, for LRU reuse */
  uint32_t nslots, cur_slot;
  uint64_t cur_asid, clock;
  uint32_t cur_space;       /* dense id of cur_asid, for footprint keys */
  uint64_t *map_keys;       /* open-addressed map: software ASID + 1 -> dense id */
  uint32_t *map_vals;
  size_t map_cap;
  uint32_t nspaces;
} ts_aspace_t;

/* ---- the simulator ------------------------------------------------------------------- */
struct ts_sim_s {
  ts_config_t cfg;
  ts_tlb_t tlb[TS_NTLBS];
  ts_tlb_t *l2_for[2];      /* [0] instruction misses, [1] data misses; NULL: straight to walk */
  ts_pwcs_t pwc, hpwc;
  ts_pagemap_t pm;
  bool uniform;             /* no ranges loaded: every address has cfg.page_size */
  bool started;
  ts_aspace_t as;
  ts_hset_t touched;        /* distinct pages and page-table directories (footprint keys) */
  /* The key of the last lookup in each L1 TLB ([0] data, [1] instructions). It is in the TLB
   * and most recent in its set, so a repeat is a hit that changes no policy state (for every
   * policy). Reset by flushes. */
  uint64_t last_key[2];
  int store_kind;           /* 2 when stores skip the L1 DTLB (l1d.stores=0), else 0 */
  ts_stats_t st;
};

/* Records a first touch of a page; counts new pages and directories. */
void _ts_footprint_touch(ts_sim_t *s, uint64_t va, int ps);
int _ts_aspace_init(ts_aspace_t *as, uint32_t nslots);
void _ts_aspace_free(ts_aspace_t *as);

#endif
