/* The access path: page size -> L1 TLB -> L2 TLB -> page walk -> fills. The L1 hit is inline
 * and allocation-free; everything after an L1 miss is in one out-of-line function. */
#include "internal.h"
#include "access.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned long _ts_alloc_fail_in;

static inline bool alloc_fails(void) {
  return TS_UNLIKELY(_ts_alloc_fail_in) && --_ts_alloc_fail_in == 0;
}
void *_ts_malloc(size_t n) { return alloc_fails() ? NULL : malloc(n); }
void *_ts_calloc(size_t n, size_t size) { return alloc_fails() ? NULL : calloc(n, size); }
void *_ts_realloc(void *p, size_t n) { return alloc_fails() ? NULL : realloc(p, n); }

void _ts_fail(ts_sim_t *s, const char *what) {
  if (s->state == TS_FAILED) return;
  s->state = TS_FAILED;
  snprintf(s->error, sizeof s->error, "out of memory for %s after %llu accesses", what,
           (unsigned long long)(s->st.reads + s->st.writes + s->st.ifetches + s->st.prefetches));
}

const char *ts_sim_error(const ts_sim_t *s) { return s->state == TS_FAILED ? s->error : NULL; }

const uint8_t _ts_op_class1[256] = {['R'] = 1, ['W'] = 2, ['I'] = 3, ['P'] = 4};
_Static_assert(offsetof(ts_stats_t, writes) == offsetof(ts_stats_t, reads) + 8 &&
               offsetof(ts_stats_t, ifetches) == offsetof(ts_stats_t, reads) + 16,
               "reads, writes, ifetches are indexed by op class");

ts_sim_t *ts_sim_new(const ts_config_t *cfg, char *err, size_t errlen) {
  static const char *const names[] = {"l1i", "l1d", "l2", "l2i"};
  if (ts_config_check(cfg, err, errlen)) return NULL;
  ts_sim_t *s = _ts_calloc(1, sizeof *s);
  if (!s) { _ts_err(err, errlen, "out of memory"); return NULL; }
  s->cfg = *cfg;
  for (int t = 0; t < TS_NTLBS; t++) {
    if (_ts_tlb_init(&s->tlb[t], &cfg->tlb[t], cfg->seed + 101u * (uint64_t)t, names[t], err,
                     errlen))
      goto fail;
  }
  s->l2_for[0] = s->tlb[TS_L2I].present ? &s->tlb[TS_L2I]
                 : (cfg->l2_instr && s->tlb[TS_L2].present) ? &s->tlb[TS_L2] : NULL;
  s->l2_for[1] = s->tlb[TS_L2].present ? &s->tlb[TS_L2] : NULL;
  if (_ts_pwcs_init(&s->pwc, cfg->pwc, cfg->levels, err, errlen)) goto fail;
  if (cfg->nested && _ts_pwcs_init(&s->hpwc, cfg->hpwc, cfg->host_levels, err, errlen)) goto fail;
  if (_ts_aspace_init(&s->as, cfg->asid_mode == TS_ASID_TAGGED ? cfg->asid_count : 1)) {
    _ts_err(err, errlen, "out of memory");
    goto fail;
  }
  s->pm.dflt = cfg->page_size;
  s->store_kind = cfg->l1d_stores ? 0 : 2;
  s->kind_of[0] = 0;
  s->kind_of[1] = (uint8_t)s->store_kind;
  s->kind_of[2] = 1;
  s->va_mask = (1ull << (12 + 9 * cfg->levels)) - 1;
  for (int ps = 0; ps < TS_NSIZES; ps++) {
    s->l1_of[0][ps] = s->tlb[TS_L1D].by_size[ps];
    s->l1_of[1][ps] = s->tlb[TS_L1I].by_size[ps];
  }
  for (int ps = 0; ps < TS_NSIZES; ps++)
    s->tps_of[ps] = (uint8_t)(cfg->nested && cfg->nested - 1 < ps ? cfg->nested - 1 : ps);
  s->uniform = true;
  return s;
fail:
  ts_sim_free(s);
  return NULL;
}

void ts_sim_free(ts_sim_t *s) {
  if (!s) return;
  for (int t = 0; t < TS_NTLBS; t++) _ts_tlb_free(&s->tlb[t]);
  _ts_pwcs_free(&s->pwc);
  _ts_pwcs_free(&s->hpwc);
  _ts_pagemap_free(&s->pm);
  _ts_aspace_free(&s->as);
  _ts_hset_free(&s->touched);
  _ts_ptmap_free(&s->pt4k);
  free(s);
}

const ts_config_t *ts_sim_config(const ts_sim_t *s) { return &s->cfg; }

static inline uint64_t va_mask(const ts_sim_t *s) { return (1ull << (12 + 9 * s->cfg.levels)) - 1; }

int ts_sim_add_range(ts_sim_t *s, uint64_t start, uint64_t end, int ps, int from_smaps, char *err,
                     size_t errlen) {
  if (s->state != TS_NEW) {
    _ts_err(err, errlen, "page-size ranges must be given before the first access");
    return -1;
  }
  if (ps < 0 || ps >= TS_NSIZES) {
    _ts_err(err, errlen, "page size code %d: expected 4k, 2m or 1g", ps);
    return -1;
  }
  uint64_t align = 1ull << _ts_shift(ps);
  if ((start & (align - 1)) || (end & (align - 1))) {
    _ts_err(err, errlen, "range 0x%llx-0x%llx is not %s aligned", (unsigned long long)start,
            (unsigned long long)end, ps == TS_PS_2M ? "2 MiB" : ps == TS_PS_1G ? "1 GiB" : "4 KiB");
    return -1;
  }
  if (end - 1 > va_mask(s)) {
    _ts_err(err, errlen, "range 0x%llx-0x%llx lies beyond the %d-bit address space of %d-level paging",
            (unsigned long long)start, (unsigned long long)end, 12 + 9 * s->cfg.levels, s->cfg.levels);
    return -1;
  }
  return _ts_pagemap_add(&s->pm, from_smaps ? 1 : 0, start, end, ps, err, errlen);
}

int _ts_start(ts_sim_t *s) {
  if (s->state == TS_FAILED) return -1;
  s->state = TS_RUNNING;
  if (s->pm.n[0] + s->pm.n[1] == 0) return 0;
  if (_ts_pagemap_build(&s->pm)) {
    _ts_fail(s, "the page-size ranges");
    return -1;
  }
  s->uniform = false;
  return 0;
}

/* After an L1 miss (or for a prefetch that missed L1): L2, then a walk, then the fills.
 * a: the L1 array for this page size (NULL: none, or a bypassing store). Inlined into one
 * copy per mode, so that the demand path carries no prefetch or bypass tests. */
static inline __attribute__((always_inline)) void l1_miss(ts_sim_t *s, uint64_t va, ts_array_t *a,
                                                          int instr, int ps, int tps, uint64_t page,
                                                          uint64_t key, int mode) {
  ts_stats_t *st = &s->st;
  bool prefetch = mode == TS_PREFETCH;
  if (mode == TS_DEMAND) {
    st->l1_misses++;
    (&st->l1i_misses)[!instr]++;
  }
  ts_tlb_t *l2 = s->l2_for[instr ? 0 : 1];
  ts_array_t *b = l2 ? l2->by_size[tps] : NULL;
  if (l2) {
    if (b && _ts_array_probe(b, page, key)) {
      if (!prefetch) st->l2_hits++;
      if (a) _ts_array_fill(a, page, key);
      return;
    }
    if (!prefetch) st->l2_misses++;
  }
  ts_walk_result_t r = TS_LIKELY(!s->cfg.nested) ? _ts_walk_native(s, va, ps, s->as.cur_slot)
                                                 : _ts_walk(s, va, ps, s->as.cur_slot);
  if (prefetch) {
    st->prefetch_walks++;
    st->prefetch_walk_refs += r.refs;
  } else {
    st->walks++;
    st->walk_levels += r.levels;
    st->walk_mem_refs += r.refs;
    st->pwc_hits += r.pwc_hit;
  }
  if (TS_UNLIKELY(_ts_footprint(s, va, ps))) {
    _ts_fail(s, "the footprint (distinct pages and page-table directories)");
    return;
  }
  if (b) _ts_array_fill(b, page, key);
  if (a) _ts_array_fill(a, page, key);
}

TS_NOINLINE void _ts_l1_miss(ts_sim_t *s, uint64_t va, ts_array_t *a, int instr, int ps, int tps,
                             uint64_t page, uint64_t key) {
  l1_miss(s, va, a, instr, ps, tps, page, key, TS_DEMAND);
}

TS_NOINLINE void _ts_bypass(ts_sim_t *s, uint64_t va, int ps) {
  int tps = ps;
  if (s->cfg.nested && s->cfg.nested - 1 < ps) tps = s->cfg.nested - 1;
  uint64_t page = va >> _ts_shift(tps);
  s->st.l1_bypasses++;
  l1_miss(s, va, NULL, 0, ps, tps, page, _ts_key(page, tps, s->as.cur_slot), TS_BYPASS);
}

TS_NOINLINE void _ts_prefetch(ts_sim_t *s, uint64_t va, int ps) {
  int tps = ps;
  if (s->cfg.nested && s->cfg.nested - 1 < ps) tps = s->cfg.nested - 1;
  uint64_t page = va >> _ts_shift(tps);
  uint64_t key = _ts_key(page, tps, s->as.cur_slot);
  ts_array_t *a = s->tlb[TS_L1D].by_size[tps];
  if (a && _ts_array_lookup(a, page, key)) {
    s->st.prefetch_hits++;
    return;
  }
  l1_miss(s, va, a, 0, ps, tps, page, key, TS_PREFETCH);
}

TS_NOINLINE void _ts_straddle(ts_sim_t *s, uint64_t va, uint64_t last, int kind, int ps) {
  s->st.straddles++;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  /* A fuzzed record of 4 GiB touches a million pages: correct, but it times the fuzzer out. */
  if (last - va > (64u << 12)) last = va + (64u << 12);
#endif
  for (;;) {
    _ts_touch(s, va, kind, ps);
    uint64_t next = (va | ((1ull << _ts_shift(ps)) - 1)) + 1;
    if (next == 0 || next > last || TS_UNLIKELY(s->state == TS_FAILED)) return;
    va = next;
    ps = s->uniform ? s->cfg.page_size : _ts_pagemap_lookup(&s->pm, va);
  }
}

int ts_access(ts_sim_t *s, uint64_t addr, uint32_t size, char op) {
  _ts_access_inline(s, addr, size, op);
  _ts_warm_step(s);
  return TS_UNLIKELY(s->state == TS_FAILED) ? -1 : 0;
}

int ts_sim_set_warmup(ts_sim_t *s, uint64_t n, char *err, size_t errlen) {
  if (s->state != TS_NEW) {
    _ts_err(err, errlen, "the warm-up must be set before the first access");
    return -1;
  }
  s->warm_mode = n == 0 ? TS_WARM_NONE : n == TS_WARMUP_MARKER ? TS_WARM_MARKER : TS_WARM_COUNT;
  s->warm_until = n;
  return 0;
}

int ts_sim_warming(const ts_sim_t *s) { return s->warm_mode != TS_WARM_NONE; }

void ts_sim_measure_start(ts_sim_t *s) {
  ts_stats_t *st = &s->st, keep = *st;
  memset(st, 0, sizeof *st);
  memcpy(st->distinct_pages, keep.distinct_pages, sizeof st->distinct_pages);
  memcpy(st->pt_pages, keep.pt_pages, sizeof st->pt_pages);
  st->warmup_accesses = keep.warmup_accesses + keep.reads + keep.writes + keep.ifetches;
  s->warm_mode = TS_WARM_NONE;
}

const ts_stats_t *ts_sim_stats(ts_sim_t *s) {
  if (s->state == TS_NEW) _ts_start(s);
  ts_stats_t *st = &s->st;
  st->accesses = st->reads + st->writes + st->ifetches;
  st->est_walk_cycles = (st->l2_hits + st->l2_misses) * s->cfg.lat_l2 +
                        st->walks * s->cfg.lat_walk + st->walk_mem_refs * s->cfg.lat_ref;
  if (!s->uniform) _ts_pagemap_pt_pages(&s->pm, s->cfg.levels, st->mapped_pt_pages);
  return st;
}
