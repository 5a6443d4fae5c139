/* The hpage filler: a group's hpages in buckets by slots used, so a new slab comes from the
 * fullest hpage that still has room (the idea behind TCMalloc's HugePageFiller: fuller pages
 * are less likely to empty, so fill them and let the others drain back to the pool).
 * Pure bookkeeping over tp_hpage_t records; the caller holds the heap lock. */
#include "heap.h"

int _tp_slots_find_run(tp_slotmask_t used_mask, unsigned n) { return _tp_slots_find_run_step(used_mask, n, 1); }

int _tp_slots_find_run_step(tp_slotmask_t used_mask, unsigned n, unsigned step) {
  if (n == 0 || n > TP_SLOTS || step == 0 || step > TP_SLOTS) return -1;
  tp_slotmask_t free_mask = ~used_mask;
  /* Bit i of m survives iff slots i..i+n-1 are all free: after m &= m >> len, bit i says
   * slots i..i+2len-1 are, so the run length doubles at each step, then the rest. The shifts
   * bring in zeros, so no run passes the last slot. */
  tp_slotmask_t m = free_mask;
  unsigned len = 1;
  for (; 2 * len <= n && m; len *= 2) m &= m >> len;
  if (len < n) m &= m >> (n - len);
  if (step > 1) {
    tp_slotmask_t starts = 0;
    for (unsigned i = 0; i < TP_SLOTS; i += step) starts |= (tp_slotmask_t)1 << i;
    m &= starts;
  }
  return m ? _tp_slots_ctz(m) : -1;
}

/* The buckets' lists, with the mask of those that hold a page: a pick looks at those only
 * (64 buckets a filler: most are empty). */
static void bucket_push(tp_filler_t *f, tp_hpage_t *h) {
  TP_LIST_PUSH(&f->bucket[h->nused], h, next, prev);
  if (h->nused < TP_SLOTS) f->nonempty |= (uint64_t)1 << h->nused;
}

static void bucket_unlink(tp_filler_t *f, tp_hpage_t *h) {
  TP_LIST_UNLINK(&f->bucket[h->nused], h, next, prev);
  if (h->nused < TP_SLOTS && f->bucket[h->nused] == NULL) f->nonempty &= ~((uint64_t)1 << h->nused);
}

void _tp_filler_insert(tp_filler_t *f, tp_hpage_t *h) {
  bucket_push(f, h);
  h->listed = TP_LIST_FILLER;
  f->hpages++;
  f->used += h->nused;
}

void _tp_filler_remove(tp_filler_t *f, tp_hpage_t *h) {
  bucket_unlink(f, h);
  h->listed = TP_LIST_NONE;
  f->hpages--;
  f->used -= h->nused;
}

/* The buckets from max_used down to min_used that hold a page, as a mask (empty if none). */
static uint64_t buckets_within(const tp_filler_t *f, int min_used, int max_used) {
  if (min_used < 0) min_used = 0;
  if (max_used < min_used || min_used >= (int)TP_SLOTS) return 0;
  uint64_t upto = max_used >= 63 ? ~(uint64_t)0 : ((uint64_t)1 << (max_used + 1)) - 1;
  return f->nonempty & upto & ~(((uint64_t)1 << min_used) - 1);
}

/* The fullest hpage with used slots in [min_used, max_used] and a free run of n slots that
 * starts at a multiple of `step`, those on 4 KiB pages left out when skip_4k. */
static tp_hpage_t *pick(tp_filler_t *f, unsigned n, unsigned step, int min_used, int max_used, int skip_4k, int *slot) {
  if (max_used > (int)TP_SLOTS - (int)n) max_used = (int)TP_SLOTS - (int)n;
  for (uint64_t b = buckets_within(f, min_used, max_used); b;) {
    int used = 63 - __builtin_clzll(b); /* the fullest bucket left */
    for (tp_hpage_t *h = f->bucket[used]; h; h = h->next) {
      int s = skip_4k && h->source == TP_SRC_4K ? -1 : _tp_slots_find_run_step(h->used_mask, n, step);
      if (s >= 0) {
        *slot = s;
        return h;
      }
    }
    b &= ~((uint64_t)1 << used);
  }
  return NULL;
}

tp_hpage_t *_tp_filler_pick_within(tp_filler_t *f, unsigned n, int min_used, int max_used, int skip_4k, int *slot) {
  return pick(f, n, 1, min_used, max_used, skip_4k, slot);
}

tp_hpage_t *_tp_filler_pick(tp_filler_t *f, unsigned n, int *slot) { return pick(f, n, 1, 0, TP_SLOTS, 0, slot); }

tp_hpage_t *_tp_filler_pick_step(tp_filler_t *f, unsigned n, unsigned step, int *slot) {
  return pick(f, n, step, 0, TP_SLOTS, 0, slot);
}

void _tp_filler_update(tp_filler_t *f, tp_hpage_t *h, unsigned slot, unsigned n, int u) {
  tp_slotmask_t bits = TP_SLOT_RUN(slot, n);
  int listed = h->listed == TP_LIST_FILLER;
  if (listed) bucket_unlink(f, h);
  if (u) h->used_mask |= bits;
  else h->used_mask &= ~bits;
  unsigned before = h->nused;
  h->nused = (uint16_t)_tp_slots_count(h->used_mask);
  if (listed) {
    bucket_push(f, h);
    f->used += h->nused;
    f->used -= before;
  }
}
