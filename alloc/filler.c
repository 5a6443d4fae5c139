/* The hpage filler: a group's hpages in buckets by slots used, so a new slab comes from the
 * fullest hpage that still has room (the idea behind TCMalloc's HugePageFiller: fuller pages
 * are less likely to empty, so fill them and let the others drain back to the pool).
 * Pure bookkeeping over tp_hpage_t records; the caller holds the heap lock. */
#include "internal.h"

int _tp_slots_find_run(uint32_t used_mask, unsigned n) {
  if (n == 0 || n > TP_SLOTS) return -1;
  uint32_t free_mask = ~used_mask;
  /* Bit i of m survives iff slots i..i+n-1 are all free. */
  uint32_t m = free_mask;
  for (unsigned k = 1; k < n && m; k++) m &= free_mask >> k;
  if (n > 1) m &= (n == TP_SLOTS) ? 1u : ((1u << (TP_SLOTS - n + 1)) - 1);
  return m ? __builtin_ctz(m) : -1;
}

void _tp_filler_insert(tp_filler_t *f, tp_hpage_t *h) {
  TP_LIST_PUSH(&f->bucket[h->nused], h, next, prev);
  h->listed = TP_LIST_FILLER;
  f->hpages++;
  f->used += h->nused;
}

void _tp_filler_remove(tp_filler_t *f, tp_hpage_t *h) {
  TP_LIST_UNLINK(&f->bucket[h->nused], h, next, prev);
  h->listed = TP_LIST_NONE;
  f->hpages--;
  f->used -= h->nused;
}

tp_hpage_t *_tp_filler_pick_within(tp_filler_t *f, unsigned n, int min_used, int max_used, int skip_4k, int *slot) {
  if (max_used > (int)TP_SLOTS - (int)n) max_used = (int)TP_SLOTS - (int)n;
  for (int used = max_used; used >= min_used && used >= 0; used--) {
    for (tp_hpage_t *h = f->bucket[used]; h; h = h->next) {
      int s = skip_4k && h->source == TP_SRC_4K ? -1 : _tp_slots_find_run(h->used_mask, n);
      if (s >= 0) {
        *slot = s;
        return h;
      }
    }
  }
  return NULL;
}

tp_hpage_t *_tp_filler_pick(tp_filler_t *f, unsigned n, int *slot) {
  return _tp_filler_pick_within(f, n, 0, TP_SLOTS, 0, slot);
}

void _tp_filler_update(tp_filler_t *f, tp_hpage_t *h, unsigned slot, unsigned n, int u) {
  uint32_t bits = (n == TP_SLOTS) ? TP_ALL_SLOTS : (((1u << n) - 1) << slot);
  int listed = h->listed == TP_LIST_FILLER;
  if (listed) TP_LIST_UNLINK(&f->bucket[h->nused], h, next, prev);
  if (u) h->used_mask |= bits;
  else h->used_mask &= ~bits;
  unsigned before = h->nused;
  h->nused = (uint16_t)__builtin_popcount(h->used_mask);
  if (listed) {
    TP_LIST_PUSH(&f->bucket[h->nused], h, next, prev);
    f->used += h->nused;
    f->used -= before;
  }
}
