/* The public group API (tlbpack.h, tp_group_*): explicit groups made, checked, allocated from,
 * counted and destroyed. The groups themselves are group.c's. */
#include <errno.h>
#include <string.h>

#include "front.h"

tp_group_t *tp_group_create(const char *name) {
  if (atomic_load(&_tp_ready) == 0) _tp_init();
  return _tp_group_create(name, 0);
}

tp_group_t *tp_group_create_arena(const char *name) {
  if (atomic_load(&_tp_ready) == 0) _tp_init();
  return _tp_group_create(name, 1);
}

static tp_group_t *checked(const tp_group_t *g, const char *fn) {
  if (g == NULL) return NULL;
  unsigned id = _tp_group_handle_id(g);
  if (id == 0 || id >= TP_MAX_GROUPS || _tp_groups[id] != g || !g->explicit_)
    _tp_fatal("%s: %p is not a live group from tp_group_create", fn, (const void *)g);
  return (tp_group_t *)g;
}

void tp_group_destroy(tp_group_t *g) {
  if (g == NULL) return;
  checked(g, "tp_group_destroy");
  tp_group_stats_t st;
  tp_group_stats(g, &st);
  _tp_tcache_count_dropped(st.objects, st.bytes);
  _tp_group_retire(g);
}

void *tp_group_malloc(tp_group_t *g, size_t size) {
  if (g == NULL) return tp_malloc(size);
  checked(g, "tp_group_malloc");
  return _tp_alloc(size, 0, g->id, 0, 0);
}

void *tp_group_calloc(tp_group_t *g, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  if (g == NULL) return tp_calloc(count, size);
  checked(g, "tp_group_calloc");
  return _tp_alloc(total, 0, g->id, 1, 0);
}

void *tp_group_realloc(tp_group_t *g, void *p, size_t size) {
  if (g == NULL) return tp_realloc(p, size);
  checked(g, "tp_group_realloc");
  if (p == NULL) return _tp_alloc(size, 0, g->id, 0, 0);
  return _tp_realloc_block(p, size, g->id);
}

typedef struct { const tp_group_t *g; tp_group_stats_t *st; } gstat_t;

static void gstat_page(tp_hpage_t *h, void *arg) {
  gstat_t *a = arg;
  int counted = 0;
  if (h->state == TP_HP_ACTIVE) {
    for (unsigned i = 0; i < TP_SLOTS; i++) {
      tp_slab_t *s = h->slot_slab[i];
      if (s == NULL || s->first_slot != i || s->group != a->g->id) continue;
      size_t live = 0, bytes = 0;
      for (unsigned o = 0; o < s->nobj; o++) {
        uint8_t v = __atomic_load_n(&s->live[o], __ATOMIC_RELAXED);
        if (s->kind == TP_SLAB_ARENA && (v & TP_ARENA_FREED)) v = 0;
        if (s->kind == TP_SLAB_SMALL && v && _tp_block_cached(s->base + (uintptr_t)o * s->size)) v = 0;
        live += v != 0;
        bytes += s->kind == TP_SLAB_ARENA ? (size_t)v * TP_GRANULE : (v != 0) * (size_t)s->size;
      }
      a->st->objects += live;
      a->st->bytes += bytes;
      if (live && !counted) {
        a->st->huge_pages++;
        counted = 1;
      }
    }
  } else if (h->state == TP_HP_LARGE) {
    tp_slab_t *s = h->slot_slab[0];
    if (s && s->group == a->g->id && __atomic_load_n(&s->live[0], __ATOMIC_RELAXED)) {
      a->st->objects++;
      a->st->bytes += _tp_run_usable(s);
      a->st->huge_pages += s->nhpages;
    }
  }
}

void tp_group_stats(const tp_group_t *g, tp_group_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (g == NULL) return;
  checked(g, "tp_group_stats");
  gstat_t a = {g, out};
  _tp_lock(&_tp_heap_lock);
  _tp_heap_foreach(gstat_page, &a);
  _tp_unlock(&_tp_heap_lock);
}
