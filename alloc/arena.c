/* Ordered groups: an arena per group. Blocks up to TP_ARENA_MAX bytes are bumped one after
 * another through 64 KiB runs, in allocation order whatever their size, so a record's node,
 * key and value land in adjacent cache lines (size-class slabs would spread them over three
 * slabs). Freed space is not reused block by block: a run goes back to its huge page when its
 * last block is freed, and every run at tp_group_destroy. */
#include <string.h>

#include "runs.h"

static tp_slab_t *arena_run(tp_group_t *g) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_ARENA, 1, 0, TP_ARENA_META, 0);
  if (s == NULL) return NULL;
  s->size = TP_GRANULE;
  s->nobj = TP_ARENA_GRANULES;
  s->live = (uint8_t *)s->data;
  s->avail_hint = 0; /* the bump index, in granules */
  _tp_run_publish(s);
  return s;
}

void *_tp_arena_alloc(tp_group_t *g, size_t size, int zero, size_t *usable) {
  uint32_t need = (uint32_t)((size ? size : 1) + TP_GRANULE - 1) / TP_GRANULE;
  _tp_lock(&g->arena_lock);
  tp_slab_t *s = g->arena_cur;
  if (s == NULL || s->avail_hint + need > TP_ARENA_GRANULES) {
    tp_slab_t *old = s;
    s = arena_run(g);
    if (s == NULL) {
      _tp_unlock(&g->arena_lock);
      return NULL;
    }
    g->arena_cur = s;
    /* The old run is full: once its last block is freed it goes back (see _tp_arena_free). */
    if (old && atomic_load(&old->nlive) == 0) _tp_run_release(old);
  }
  uint32_t idx = s->avail_hint;
  s->avail_hint += need;
  atomic_fetch_add(&s->nlive, 1);
  __atomic_store_n(&s->live[idx], (uint8_t)need, __ATOMIC_RELEASE);
  int fresh = s->zeroed;
  _tp_unlock(&g->arena_lock);
  void *p = (void *)(s->base + (uintptr_t)idx * TP_GRANULE);
  if (zero && !fresh) memset(p, 0, size);
  *usable = (size_t)need * TP_GRANULE;
  return p;
}

size_t _tp_arena_usable(const tp_slab_t *s, const void *p) {
  uintptr_t off = (uintptr_t)p - s->base;
  if (off % TP_GRANULE) return 0;
  uint8_t v = __atomic_load_n(&s->live[off / TP_GRANULE], __ATOMIC_ACQUIRE);
  return (v & TP_ARENA_FREED) ? 0 : (size_t)v * TP_GRANULE;
}

/* Under the group's arena lock, like the switch to a new run: a run is released exactly once,
 * by whichever of the two sees it both retired and empty. */
size_t _tp_arena_free(tp_group_t *g, tp_slab_t *s, void *p) {
  uintptr_t off = (uintptr_t)p - s->base;
  if (off >= TP_SLOT) _tp_fatal("invalid free of %p: not a block tlbpack handed out", p);
  if (off % TP_GRANULE) _tp_fatal("invalid free of %p: points inside a block, not at its start", p);
  _tp_lock(&g->arena_lock);
  uint8_t *b = &s->live[off / TP_GRANULE];
  uint8_t len = __atomic_load_n(b, __ATOMIC_ACQUIRE);
  if (len == 0 || (len & TP_ARENA_FREED)) {
    _tp_unlock(&g->arena_lock);
    if (len) _tp_fatal("double free of %p", p);
    _tp_fatal("invalid free of %p: points inside a block, not at its start", p);
  }
  __atomic_store_n(b, (uint8_t)(len | TP_ARENA_FREED), __ATOMIC_RELEASE);
  if (atomic_fetch_sub(&s->nlive, 1) == 1 && g->arena_cur != s) _tp_run_release(s);
  _tp_unlock(&g->arena_lock);
  return (size_t)len * TP_GRANULE;
}
