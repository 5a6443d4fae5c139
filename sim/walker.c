/* The page-table walker: an x86-64 radix tree of 4 or 5 levels, 9 index bits per level, the
 * leaf at level 1 (4K), 2 (2M) or 3 (1G). Level numbering follows the SDM: level 1 holds PTEs,
 * 2 PDEs, 3 PDPTEs, 4 PML4Es, 5 PML5Es.
 *
 * Page-walk caches: pwc level k caches level-k (non-leaf) entries, tagged by the address bits
 * that select them (va >> (12 + 9(k-1))) and the ASID slot. A walk looks for the deepest cached
 * entry and reads only the levels below it; it then fills the caches for the levels it read.
 *
 * Nested (2-D) walks: each guest table read needs the table's guest-physical address
 * translated by a host walk first, and the final guest-physical address too, so a 4-level
 * guest over a 4-level host costs 4*(4+1) + 4 = 24 references without caches. Guest-physical
 * addresses are synthetic: data pages are identity-mapped, guest page tables sit in their own
 * region, one 4 KiB page per directory. The host walk has its own caches (hpwc).
 */
#include "internal.h"

#include <string.h>

int _ts_pwcs_init(ts_pwcs_t *p, const uint32_t *entries, int levels, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  for (int k = 2; k <= levels; k++) {
    if (!entries[k]) continue;
    if (_ts_array_init(&p->level[k], entries[k], 0, TS_POL_LRU, 1, err, errlen)) {
      _ts_pwcs_free(p);
      return -1;
    }
    p->on[k] = true;
  }
  return 0;
}

void _ts_pwcs_free(ts_pwcs_t *p) {
  for (int k = 0; k <= TS_MAX_LEVELS; k++) _ts_array_free(&p->level[k]);
  memset(p->on, 0, sizeof p->on);
}

void _ts_pwcs_flush(ts_pwcs_t *p) {
  for (int k = 0; k <= TS_MAX_LEVELS; k++) _ts_array_flush(&p->level[k]);
}

void _ts_pwcs_flush_slot(ts_pwcs_t *p, uint32_t slot) {
  for (int k = 0; k <= TS_MAX_LEVELS; k++) _ts_array_flush_slot(&p->level[k], slot);
}

/* One host walk for a guest-physical address; returns its memory references. */
static uint32_t host_walk(ts_sim_t *s, uint64_t gpa) {
  int top = s->cfg.host_levels, leaf = s->cfg.nested - 1 + 1;
  gpa &= (1ull << (12 + 9 * top)) - 1;
  bool hit;
  int start = _ts_pwc_start(&s->hpwc, gpa, leaf, top, 0, &hit);
  _ts_pwc_fill(&s->hpwc, gpa, leaf, start, 0);
  return (uint32_t)(start - leaf + 1);
}

ts_walk_result_t _ts_walk(ts_sim_t *s, uint64_t va, int ps, uint32_t slot) {
  if (!s->cfg.nested) return _ts_walk_native(s, va, ps, slot);
  int top = s->cfg.levels, leaf = ps + 1;
  ts_walk_result_t r;
  bool hit;
  int start = _ts_pwc_start(&s->pwc, va, leaf, top, slot, &hit);
  _ts_pwc_fill(&s->pwc, va, leaf, start, slot);
  r.levels = (uint32_t)(top - leaf + 1);
  r.pwc_hit = hit;
  uint32_t refs = 0;
  for (int k = start; k >= leaf; k--) {
    /* The level-k directory covering va, placed at a synthetic guest-physical page. */
    uint64_t dir = va >> (12 + 9 * k);
    uint64_t gpa = ((uint64_t)k << 40) + (dir << 12) + (1ull << 39);
    refs += host_walk(s, gpa) + 1;
  }
  refs += host_walk(s, va);
  r.refs = refs;
  return r;
}
