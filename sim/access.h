/* The inlined access path, shared by ts_access() and the trace readers' loops so that a
 * binary trace runs without a call per record. Slow paths are out of line in sim.c. */
#ifndef TS_ACCESS_H
#define TS_ACCESS_H
#include "internal.h"

/* Before the first access: builds the page map. -1 when the simulator has failed. */
int _ts_start(ts_sim_t *s);
/* 1 + the op's class: 'R' 0, 'W' 1, 'I' 2, 'P' 3; 0 for anything else. */
extern const uint8_t _ts_op_class1[256];
/* How a translation enters the miss path. */
enum { TS_DEMAND = 0, TS_PREFETCH = 1, TS_BYPASS = 2 };
void _ts_l1_miss(ts_sim_t *s, uint64_t va, ts_array_t *a, int instr, int ps, int tps,
                 uint64_t page, uint64_t key);
void _ts_bypass(ts_sim_t *s, uint64_t va, int ps);
void _ts_prefetch(ts_sim_t *s, uint64_t va, int ps);
void _ts_straddle(ts_sim_t *s, uint64_t va, uint64_t last, int kind, int ps);

/* One page touched by a demand access. kind: 0 data, 1 instruction, 2 a store on a core whose
 * L1 DTLB serves loads only (core2's DTLB0). ps: the guest/native page size; the TLB holds the
 * smaller of it and the host page size in a nested setup. */
static inline __attribute__((always_inline)) void _ts_touch(ts_sim_t *s, uint64_t va, int kind, int ps) {
  if (TS_UNLIKELY(kind == 2)) {
    _ts_bypass(s, va, ps);
    return;
  }
  int instr = kind, tps = s->tps_of[ps];
  uint64_t page = va >> _ts_shift(tps);
  uint64_t key = _ts_key(page, tps, s->as.cur_slot);
  ts_array_t *a = s->l1_of[instr][tps];
  if (TS_LIKELY(a != NULL) && _ts_array_lookup(a, page, key)) {
    s->st.l1_hits++;
    return;
  }
  _ts_l1_miss(s, va, a, instr, ps, tps, page, key);
}

/* After a failure (state TS_FAILED) nothing is counted; callers look at s->state. */
static inline __attribute__((always_inline)) void _ts_access_inline(ts_sim_t *s, uint64_t addr, uint32_t size, char op) {
  if (TS_UNLIKELY(s->state != TS_RUNNING) && _ts_start(s)) return;
  uint64_t mask = s->va_mask, va = addr & mask;
  int ps = s->uniform ? s->cfg.page_size : _ts_pagemap_lookup(&s->pm, va);
  /* Branch-free on the op (reads and writes interleave unpredictably in most traces): its
   * class indexes the counters reads, writes, ifetches, prefetches (adjacent in ts_stats_t). */
  unsigned cls = _ts_op_class1[(unsigned char)op] - 1u;   /* other ops: UINT_MAX */
  if (TS_UNLIKELY(cls >= 3)) {
    if (cls == 3) { s->st.prefetches++; _ts_prefetch(s, va, ps); }
    return;
  }
  (&s->st.reads)[cls]++;
  int kind = s->kind_of[cls];
  uint64_t pmask = (1ull << _ts_shift(ps)) - 1;
  if (TS_LIKELY((va & pmask) + (size ? size : 1) - 1 <= pmask)) {   /* one page */
    _ts_touch(s, va, kind, ps);
    return;
  }
  uint64_t last = va + (size - 1);   /* size > 0 here */
  if (last > mask || last < va) last = mask;
  if ((va | pmask) >= last) _ts_touch(s, va, kind, ps);   /* clipped at the top of the space */
  else _ts_straddle(s, va, last, kind, ps);
}

/* After a demand access while a counted warm-up runs: ends it at its last access. */
static inline __attribute__((always_inline)) void _ts_warm_step(ts_sim_t *s) {
  if (TS_UNLIKELY(s->warm_mode == TS_WARM_COUNT) &&
      s->st.reads + s->st.writes + s->st.ifetches >= s->warm_until)
    ts_sim_measure_start(s);
}

#endif
