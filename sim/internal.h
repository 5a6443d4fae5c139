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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define TS_LIKELY(x) __builtin_expect(!!(x), 1)
#define TS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TS_NOINLINE __attribute__((noinline))

#define TS_INVALID UINT64_MAX      /* an empty entry */
#define TS_MAX_SPACES (1u << 15)   /* software address spaces (15 bits of a footprint key) */
#define TS_PTC 64                  /* entries of the footprint's directory cache */

static inline unsigned _ts_shift(int ps) { return 12u + 9u * (unsigned)ps; }

void _ts_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Every allocation of the simulator goes through these. Test hook: with _ts_alloc_fail_in = n
 * (> 0), the n-th allocation from then on fails (and the counter stops at 0 = never). */
extern unsigned long _ts_alloc_fail_in;
void *_ts_malloc(size_t n);
void *_ts_calloc(size_t n, size_t size);
void *_ts_realloc(void *p, size_t n);

/* Bits of ts_config_t.given. Per TLB t, TS_G_TLB(t, f) with f one of the fields below; for a
 * separate array of page size ps (2M, 1G) the fields are 1 + 2 ps (entries) and 2 + 2 ps (ways). */
enum { TS_GF_WAYS = 0, TS_GF_SIZES = 1, TS_GF_POLICY = 2 };
#define TS_G_TLB(t, f) (1ull << (8 * (t) + (f)))
#define TS_G_HUGE_ENTRIES(t, ps) TS_G_TLB(t, 1 + 2 * (ps))
#define TS_G_HUGE_WAYS(t, ps) TS_G_TLB(t, 2 + 2 * (ps))
#define TS_G_L2_INSTR (1ull << 32)
#define TS_G_L1D_STORES (1ull << 33)
#define TS_G_PWC(k) (1ull << (32 + (k)))     /* pwc.lK, K = 2..5: bits 34..37 */
#define TS_G_HPWC (1ull << 38)               /* any hpwc.* key */
#define TS_G_HPWC_L(k) (1ull << (37 + (k)))  /* hpwc.lK: bits 39..42 */
#define TS_G_HOST_LEVELS (1ull << 43)
#define TS_G_ASID_COUNT (1ull << 44)
#define TS_G_SEED (1ull << 45)

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
/* An entry's key: page number << 14 | page-size code << 12 | ASID slot. Keys are the tags:
 * one contiguous array (TS_INVALID marks an empty way), the replacement state (LRU stamps,
 * tree-PLRU bits) lies apart so that a lookup reads only the set's keys.
 * Page numbers are below 2^45 (addresses are masked to 57 bits at most). */
typedef struct ts_array_s {
  uint64_t *keys;         /* sets * ways */
  uint32_t *tags;         /* a 32-bit fold of each key (_ts_tag32), compared four at a time */
  uint32_t *stamp;        /* LRU: last use of each entry (a per-array clock; 0 = empty) */
  uint64_t *meta;         /* per-set policy state (tree-PLRU bits) */
  uint32_t sets, ways;
  uint64_t set_mask;      /* sets - 1 when sets is a power of two */
  bool pow2;
  uint8_t policy;
  uint8_t odd_shift;      /* sets = odd << odd_shift when not a power of two */
  uint32_t odd;
  uint64_t recip;         /* floor(2^64 / odd) + 1 (exact for odd <= 2^19), or 0: divide */
  const ts_policy_t *pol;
  uint64_t rng;           /* random policy state */
  uint32_t clock;         /* LRU: below TS_STAMP_MAX (_ts_tick renumbers the stamps there) */
  /* The key of the last hit or fill: that entry is present and most recently used in its
   * set, so looking it up again is a hit that changes no policy state (LRU: it keeps the
   * largest stamp; tree-PLRU: touching a way twice sets the same bits; random: no state).
   * TS_INVALID after a flush. */
  uint64_t mru;
  /* Fully associative arrays of more than 16 ways (walk caches, Zen's L1 TLBs) also keep an
   * open-addressing index key -> way + 1 (0: empty slot), so a lookup probes a slot or two
   * instead of comparing every way. NULL for the others. */
  uint32_t *hidx;
  uint32_t hmask;
  /* With hidx, LRU and more than 64 ways, the valid entries also form a recency list (head:
   * most recent), so the victim (the first empty entry, else the least recent) needs no scan
   * of the stamps; up to 64 ways a vector scan is cheaper than keeping the list. */
  uint32_t *lnext, *lprev;  /* UINT32_MAX ends the list */
  uint32_t lhead, ltail, nvalid;
} ts_array_t;

int _ts_array_init(ts_array_t *a, uint32_t entries, uint32_t ways, int policy, uint64_t seed,
                   char *err, size_t errlen);
/* LRU stamps are 32-bit and stay below 2^31 (vector code compares them as signed lanes): at the
 * limit, each set's stamps are renumbered 1..k in the same order, which changes no decision. */
#define TS_STAMP_MAX 0x7fffffffu
void _ts_array_renumber(ts_array_t *a);
static inline uint32_t _ts_tick(ts_array_t *a) {
  if (TS_UNLIKELY(a->clock >= TS_STAMP_MAX)) _ts_array_renumber(a);
  return ++a->clock;
}
void _ts_array_free(ts_array_t *a);
void _ts_array_flush(ts_array_t *a);
void _ts_array_flush_slot(ts_array_t *a, uint32_t slot);

static inline uint64_t _ts_key(uint64_t page, int ps, uint32_t slot) {
  return (page << 14) | ((uint64_t)ps << 12) | slot;
}
/* page % sets without a division: sets = odd << k, so the remainder is
 * ((page >> k) % odd) << k | (page & (2^k - 1)); the odd part by a reciprocal multiply.
 * With q = floor(x * recip / 2^64) and x < 2^45, the error of x * recip / 2^64 against x / odd
 * is below x * odd / (odd * 2^64) < 2^-19 <= 1 / odd, so q = floor(x / odd) exactly. */
static inline uint32_t _ts_set_index_odd(const ts_array_t *a, uint64_t page) {
  uint64_t x = page >> a->odd_shift, lo = page & ((1ull << a->odd_shift) - 1);
  uint64_t q = TS_LIKELY(a->recip && x < (1ull << 45))
                   ? (uint64_t)(((unsigned __int128)x * a->recip) >> 64)
                   : x / a->odd;
  return (uint32_t)(((x - q * a->odd) << a->odd_shift) | lo);
}
static inline uint32_t _ts_set_index(const ts_array_t *a, uint64_t page) {
  return TS_LIKELY(a->pow2) ? (uint32_t)(page & a->set_mask) : _ts_set_index_odd(a, page);
}

/* A key folded to 32 bits; TS_INVALID folds to 0 (as can a valid key: a tag match is only a
 * candidate, the key decides). */
static inline uint32_t _ts_tag32(uint64_t key) { return (uint32_t)(key ^ (key >> 32)); }

/* The way of set holding key, or -1. W is a compile-time constant in the specialised copies
 * (the compare loop unrolls, no branches); the generic copy takes 4 ways per branch. */
static inline __attribute__((always_inline)) int _ts_find_n(const uint64_t *set, uint32_t W, uint64_t key) {
  uint32_t m = 0;
#pragma GCC unroll 16
  for (uint32_t w = 0; w < W; w++) m |= (uint32_t)(set[w] == key) << w;
  return __builtin_ffs((int)m) - 1;
}
static inline int _ts_find_wide(const uint64_t *set, uint32_t ways, uint64_t key) {
  uint32_t w = 0;
  for (; w + 4 <= ways; w += 4)
    if ((set[w] == key) | (set[w + 1] == key) | (set[w + 2] == key) | (set[w + 3] == key))
      return (int)w + _ts_find_n(set + w, 4, key);
  for (; w < ways; w++)
    if (set[w] == key) return (int)w;
  return -1;
}
static inline uint32_t _ts_hx_slot(const ts_array_t *a, uint64_t key) {
  return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & a->hmask;
}
static inline int _ts_hx_find(const ts_array_t *a, uint64_t key) {
  for (uint32_t j = _ts_hx_slot(a, key);; j = (j + 1) & a->hmask) {
    uint32_t h = a->hidx[j];
    if (!h) return -1;
    if (a->keys[h - 1] == key) return (int)h - 1;
  }
}
#define TS_NIL UINT32_MAX
static inline void _ts_list_unlink(ts_array_t *a, uint32_t i) {
  uint32_t p = a->lprev[i], n = a->lnext[i];
  if (p != TS_NIL) a->lnext[p] = n; else a->lhead = n;
  if (n != TS_NIL) a->lprev[n] = p; else a->ltail = p;
}
static inline void _ts_list_push(ts_array_t *a, uint32_t i) {
  a->lprev[i] = TS_NIL;
  a->lnext[i] = a->lhead;
  if (a->lhead != TS_NIL) a->lprev[a->lhead] = i; else a->ltail = i;
  a->lhead = i;
}
static inline void _ts_list_front(ts_array_t *a, uint32_t i) {
  if (a->lhead == i) return;
  _ts_list_unlink(a, i);
  _ts_list_push(a, i);
}
/* Puts key into entry i (an index into keys), keeping hidx (and the list) in step. */
void _ts_array_place_indexed(ts_array_t *a, size_t i, uint64_t key);
static inline void _ts_array_place(ts_array_t *a, size_t i, uint64_t key) {
  if (TS_UNLIKELY(a->hidx != NULL)) _ts_array_place_indexed(a, i, key);
  else a->keys[i] = key;
  a->tags[i] = _ts_tag32(key);
}

#ifdef __SSE2__
/* W a multiple of 4: the set's tags compared four per instruction, then the candidates'
 * keys (almost always none or one). */
static inline __attribute__((always_inline)) int _ts_find_tags(const uint32_t *tags, const uint64_t *set,
                                                               uint32_t W, uint64_t key) {
  __m128i t = _mm_set1_epi32((int)_ts_tag32(key));
  uint32_t m = 0;
#pragma GCC unroll 4
  for (uint32_t g = 0; g < W / 4; g++) {
    __m128i x = _mm_loadu_si128((const __m128i *)(tags + 4 * g));
    m |= (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(x, t))) << (4 * g);
  }
  for (; m; m &= m - 1) {
    uint32_t w = (uint32_t)__builtin_ctz(m);
    if (set[w] == key) return (int)w;
  }
  return -1;
}
#define TS_FIND_TAGS(W) return _ts_find_tags(a->tags + (set - a->keys), set, W, key)
#else
#define TS_FIND_TAGS(W) return _ts_find_n(set, W, key)
#endif

static inline __attribute__((always_inline)) int _ts_find(const ts_array_t *a, const uint64_t *set, uint64_t key) {
  switch (a->ways) {
  case 1: return _ts_find_n(set, 1, key);
  case 2: return _ts_find_n(set, 2, key);
  case 4: TS_FIND_TAGS(4);
  case 6: return _ts_find_n(set, 6, key);
  case 8: TS_FIND_TAGS(8);
  case 12: TS_FIND_TAGS(12);
  case 16: TS_FIND_TAGS(16);
  default: return a->hidx ? _ts_hx_find(a, key) : _ts_find_wide(set, a->ways, key);
  }
}

/* Looks key up; on a hit updates the policy state (LRU inline, the others through the
 * table). _ts_array_probe skips the check against mru: where a repeat is as likely as not
 * (an L1 lookup in a trace mixing streams), that branch mispredicts more than it saves. */
static inline __attribute__((always_inline)) bool _ts_array_probe(ts_array_t *a, uint64_t page, uint64_t key) {
  uint32_t si = _ts_set_index(a, page);
  size_t base = (size_t)si * a->ways;
  int f = _ts_find(a, a->keys + base, key);
  if (f < 0) return false;
  a->mru = key;
  if (TS_LIKELY(a->policy == TS_POL_LRU)) {
    a->stamp[base + (uint32_t)f] = _ts_tick(a);
    if (a->lnext) _ts_list_front(a, (uint32_t)f);
  } else {
    a->pol->hit(a, a->keys + base, si, (uint32_t)f);
  }
  return true;
}
static inline __attribute__((always_inline)) bool _ts_array_lookup(ts_array_t *a, uint64_t page, uint64_t key) {
  return key == a->mru || _ts_array_probe(a, page, key);
}

/* LRU victim: the first entry with the smallest stamp (empty entries have stamp 0). */
static inline __attribute__((always_inline)) uint32_t _ts_lru_victim_n(const uint32_t *st, uint32_t W) {
  uint32_t v = 0, m = st[0];
#pragma GCC unroll 16
  for (uint32_t w = 1; w < W; w++) {
    uint32_t lt = 0 - (uint32_t)(st[w] < m);   /* masks: the compiler keeps them branch-free */
    m ^= (m ^ st[w]) & lt;
    v ^= (v ^ w) & lt;
  }
  return v;
}
#ifdef __SSE2__
static inline __m128i _ts_min_epi32(__m128i a, __m128i b) {   /* SSE2 has no 32-bit min */
  __m128i lt = _mm_cmplt_epi32(a, b);
  return _mm_or_si128(_mm_and_si128(lt, a), _mm_andnot_si128(lt, b));
}
/* W a multiple of 4, at most 64: the minimum four lanes at a time, then the first lane equal
 * to it. Stamps are below 2^31, so signed lanes order them correctly. */
static inline __attribute__((always_inline)) uint32_t _ts_lru_victim_v(const uint32_t *st, uint32_t W) {
  __m128i m = _mm_loadu_si128((const __m128i *)st);
#pragma GCC unroll 16
  for (uint32_t g = 1; g < W / 4; g++) m = _ts_min_epi32(m, _mm_loadu_si128((const __m128i *)(st + 4 * g)));
  m = _ts_min_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _ts_min_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  uint64_t eq = 0;
#pragma GCC unroll 16
  for (uint32_t g = 0; g < W / 4; g++)
    eq |= (uint64_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(st + 4 * g)), m)))
          << (4 * g);
  return (uint32_t)__builtin_ctzll(eq);
}
#else
#define _ts_lru_victim_v _ts_lru_victim_n
#endif
uint32_t _ts_lru_victim(const ts_array_t *a, const uint32_t *st);
static inline __attribute__((always_inline)) void _ts_array_fill(ts_array_t *a, uint64_t page, uint64_t key) {
  uint32_t si = _ts_set_index(a, page);
  size_t base = (size_t)si * a->ways;
  a->mru = key;
  if (TS_LIKELY(a->policy == TS_POL_LRU)) {
    uint32_t *st = a->stamp + base;
    uint32_t v;
    switch (a->ways) {
    case 4: v = _ts_lru_victim_v(st, 4); break;
    case 8: v = _ts_lru_victim_v(st, 8); break;
    case 12: v = _ts_lru_victim_v(st, 12); break;
    case 16: v = _ts_lru_victim_v(st, 16); break;
    default: v = _ts_lru_victim(a, st); break;
    }
    _ts_array_place(a, base + v, key);
    st[v] = _ts_tick(a);
    return;
  }
  a->pol->fill(a, a->keys + base, si, key);
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
/* Any walk (nested ones out of line); _ts_walk_native inline for the common case. */
ts_walk_result_t _ts_walk(ts_sim_t *s, uint64_t va, int ps, uint32_t slot);

/* A walk-cache lookup: one set (fully associative), always LRU. */
static inline __attribute__((always_inline)) bool _ts_pwc_lookup(ts_array_t *a, uint64_t key) {
  if (key == a->mru) return true;
  int f = a->hidx ? _ts_hx_find(a, key) : _ts_find(a, a->keys, key);
  if (f < 0) return false;
  a->mru = key;
  a->stamp[f] = _ts_tick(a);
  if (a->lnext) _ts_list_front(a, (uint32_t)f);
  return true;
}

/* Returns the level whose entry is read first (top if nothing is cached). */
static inline __attribute__((always_inline)) int _ts_pwc_start(ts_pwcs_t *p, uint64_t va, int leaf,
                                                           int top, uint32_t slot, bool *hit) {
  for (int k = leaf + 1; k <= top; k++) {
    if (!p->on[k]) continue;
    uint64_t pre = va >> (12 + 9 * (k - 1));
    if (_ts_pwc_lookup(&p->level[k], _ts_key(pre, 0, slot))) {
      *hit = true;
      return k - 1;
    }
  }
  *hit = false;
  return top;
}

static inline __attribute__((always_inline)) void _ts_pwc_fill(ts_pwcs_t *p, uint64_t va, int leaf,
                                                           int start, uint32_t slot) {
  for (int k = leaf + 1; k <= start; k++) {
    if (!p->on[k]) continue;
    uint64_t pre = va >> (12 + 9 * (k - 1));
    _ts_array_fill(&p->level[k], pre, _ts_key(pre, 0, slot));
  }
}


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
int _ts_hset_insert(ts_hset_t *h, uint64_t key);   /* 1: key was new, 0: known, -1: out of memory */
void _ts_hset_free(ts_hset_t *h);

/* The 4K pages touched under each page table (level-1 directory): an open-addressing map from
 * a level-1 directory's footprint key to a 512-bit bitmap. A walk then tests one bit in a
 * small, hot table instead of probing a set of every page; memory grows with the footprint. */
typedef struct ts_ptmap_s {
  uint64_t *keys;        /* cap slots, 0 = empty */
  uint32_t *idx;         /* bitmap number of each slot */
  uint64_t *bits;        /* 8 words per bitmap */
  size_t cap, n, bcap;
  uint64_t last_key;     /* the previous lookup, 0 = none */
  uint32_t last_idx;
} ts_ptmap_t;
void _ts_ptmap_free(ts_ptmap_t *m);

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
  uint8_t state;            /* TS_NEW, TS_RUNNING, or TS_FAILED (out of memory: error says) */
  uint8_t warm_mode;        /* TS_WARM_*: a warm-up still running, and how it ends */
  uint64_t warm_until;      /* TS_WARM_COUNT: the demand access that ends it */
  ts_aspace_t as;
  ts_hset_t touched;        /* distinct 2M/1G pages and directories above level 1 (footprint keys) */
  ts_ptmap_t pt4k;          /* level-1 directories and the 4K pages touched under each */
  /* Recent level-1 directories of pt4k, direct-mapped by address: (space << 45 | directory
   * number) + 1 (0: empty), and the bitmap number; pt4k never drops a directory, so an entry
   * stays right. */
  uint64_t ptc_key[TS_PTC];
  uint32_t ptc_idx[TS_PTC];
  int store_kind;           /* 2 when stores skip the L1 DTLB (l1d.stores=0), else 0 */
  uint8_t kind_of[3];       /* _ts_touch's kind for a read, a write, an instruction fetch */
  uint8_t tps_of[TS_NSIZES];/* page size held in the TLBs: the smaller of guest and host */
  uint64_t va_mask;         /* addresses wrap at 12 + 9 * levels bits */
  ts_array_t *l1_of[2][TS_NSIZES];  /* [0] data, [1] instructions: the L1 array by page size */
  ts_stats_t st;
  char error[160];          /* why the state is TS_FAILED */
};
enum { TS_NEW = 0, TS_RUNNING = 1, TS_FAILED = 2 };
enum { TS_WARM_NONE = 0, TS_WARM_COUNT = 1, TS_WARM_MARKER = 2 };

/* Marks the simulator failed (the first reason is kept): every later access is refused. */
void _ts_fail(ts_sim_t *s, const char *what);

/* Records a first touch of a page; counts new pages and directories. -1: out of memory. */
int _ts_footprint_touch(ts_sim_t *s, uint64_t va, int ps);

/* A native walk (no nesting): the deepest cached upper-level entry, then the levels below it. */
static inline __attribute__((always_inline)) ts_walk_result_t _ts_walk_native(ts_sim_t *s, uint64_t va,
                                                                             int ps, uint32_t slot) {
  int top = s->cfg.levels, leaf = ps + 1;
  bool hit;
  int start = _ts_pwc_start(&s->pwc, va, leaf, top, slot, &hit);
  _ts_pwc_fill(&s->pwc, va, leaf, start, slot);
  return (ts_walk_result_t){(uint32_t)(top - leaf + 1), (uint32_t)(start - leaf + 1), hit};
}

/* The footprint of a walk: for a 4K page whose page table is in the direct-mapped cache, one
 * bit says whether the page is new; everything else out of line. -1: out of memory. */
static inline __attribute__((always_inline)) int _ts_footprint(ts_sim_t *s, uint64_t va, int ps) {
  if (TS_LIKELY(ps == TS_PS_4K)) {
    size_t c = (va >> 21) & (TS_PTC - 1);
    if (s->ptc_key[c] == (((uint64_t)s->as.cur_space << 45) | ((va >> 21) & ((1ull << 45) - 1))) + 1) {
      uint64_t bit = 1ull << ((va >> 12) & 63);
      if (s->pt4k.bits[8 * (size_t)s->ptc_idx[c] + ((va >> 18) & 7)] & bit) return 0;
    }
  }
  return _ts_footprint_touch(s, va, ps);
}
int _ts_aspace_init(ts_aspace_t *as, uint32_t nslots);
void _ts_aspace_free(ts_aspace_t *as);

#endif
