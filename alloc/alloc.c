/* The malloc API. The fast paths come first: malloc pops the thread cache of its group and
 * size class, free checks the block against the out-of-band metadata and pushes it back.
 * Everything else (first use, refills, flushes, medium and large blocks, alignment) is the
 * generic path below. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

#define RA() ((uintptr_t)__builtin_return_address(0))

/* These never return (they abort); they are not declared _Noreturn so that the free path
 * reaches them with a jump, and needs no stack frame of its own. */
static TP_NOINLINE __attribute__((noipa)) void invalid_free(const void *p, const char *why) {
  _tp_fatal("invalid free of %p: %s", p, why);
}
static TP_NOINLINE __attribute__((noipa)) void double_free(const void *p) { _tp_fatal("double free of %p", p); }
static TP_NOINLINE __attribute__((noipa)) void *tag_lost(const void *p) {
  _tp_fatal("double free of %p, or a write after its free (its tag was gone when malloc took it from the thread cache)", p);
  return NULL;
}

/* ---- helpers ------------------------------------------------------------------------- */
/* The calling thread's cache; the core starts first when this is the process's first call. */
static inline tp_tcache_t *tcache_get(void) {
  tp_tcache_t *tc = _tp_tc;
  if (TP_LIKELY(tc != &_tp_tcache_empty)) return tc;
  if (atomic_load_explicit(&_tp_ready, memory_order_acquire) == 0) _tp_init();
  return _tp_tcache_get();
}

/* A block leaves bin b: its tag (types.h and tcache.h, _tp_block_cached), b's address, is checked and
 * cleared in one xor, so that a second copy of the block in a cache (a double free) finds no
 * tag when it leaves. The block's line is the one the program is about to write; its live
 * byte stays 1 from the refill, except for an entry with bit 0 (pop_fresh). */
static TP_NOINLINE void *pop_fresh(uintptr_t e);
static inline void *mark_live(tp_entry_t e, const tp_tbin_t *b) {
  if (TP_UNLIKELY((uintptr_t)e.p & 1)) return pop_fresh((uintptr_t)e.p);
  uintptr_t *tag = _tp_tag_word(e.p), t = *tag ^ (uintptr_t)b;
  *tag = t;
  if (TP_UNLIKELY(t != 0)) return tag_lost(e.p);
  return e.p;
}

/* An entry with bit 0: a block a refill took on 4 KiB pages without tagging it (slab.c), its
 * live byte still 0, set now (by the thread that took the block's word of live bytes). Its
 * second word may hold a tag from an earlier life of the block: cleared too. */
static TP_NOINLINE void *pop_fresh(uintptr_t e) {
  uintptr_t a = e & ~(uintptr_t)1;
  tp_slab_t *s = _tp_slab_of((void *)a);
  __atomic_store_n(&s->live[_tp_obj_index(a - s->base, s->recip)], 1, __ATOMIC_RELAXED);
  *_tp_tag_word((void *)a) = 0;
  return (void *)a;
}

/* Counters of what goes past the bins (medium, large, arena, uncached classes). */
static inline void count_alloc(tp_tcache_t *tc, size_t sz) {
  tc->nmalloc++;
  tc->bytes_alloc += sz;
  tc->live_bytes += (ptrdiff_t)sz;
}

static inline void count_free(tp_tcache_t *tc, size_t sz) {
  tc->nfree++;
  tc->live_bytes -= (ptrdiff_t)sz;
}

/* The malloc hit's pop: the top block of a bin known not to be empty, handed out. */
static inline void *tbin_pop(tp_tbin_t *b, tp_entry_t *top) {
  b->top = --top;
  b->nalloc++;
  return mark_live(*top, b);
}

/* The malloc hit's pop while the bin holds two blocks or more: the one under the top, the top
 * moved down into its place. The block freed last waits for the next pop: a thread that frees
 * another thread's block writes its tag, which asks that thread's cache for the line, and a pop
 * of it at once would wait for the line to check the tag. It costs the hit two instructions;
 * the top block goes last, when it is alone, through the hit's second test. */
static inline void *tbin_pop_under(tp_tbin_t *b, tp_entry_t *top) {
  tp_entry_t e = top[-2];
  top[-2] = top[-1];
  b->top = top - 1;
  b->nalloc++;
  return mark_live(e, b);
}

static void *enomem(void) {
  errno = ENOMEM;
  return NULL;
}

/* ---- groups of the calling site ------------------------------------------------------ */
/* The group a malloc of `size` (class c; TP_NCLASSES past the slab classes) at site ra
 * allocates from, on the generic path: the Groups layer chooses it (group.c, _tp_group_for),
 * and the thread's site cache then points at its bins (tcache.h, _tp_tcache_point_site), so
 * the site's next call hits. */
static unsigned group_for(tp_tcache_t *tc, uintptr_t ra, size_t size, unsigned c, int *route) {
  uintptr_t key;
  unsigned base;
  unsigned g = _tp_group_for(tc, ra, size, c, route, &key, &base);
  if (base != TP_GROUP_KEEP_SLOT) _tp_tcache_point_site(tc, ra, key, base, g, c, size);
  return g;
}

/* ---- small, medium, large ------------------------------------------------------------ */
static void *alloc_small(tp_tcache_t *tc, unsigned g, unsigned c, size_t size, int zero) {
  tp_tbin_t *b = _tp_tbin_get(tc, g, c);
  const tp_tbin_t *from = b; /* the tag of the block handed out */
  tp_entry_t e;
  if (b != NULL) {
    if (b->top == b->lo && _tp_tcache_refill(tc, b, g, c) == 0) return enomem();
    e = *--b->top;
    b->nalloc++;
    /* A pop below the low mark (tcache.c, the trim) moves it down a quarter of the bin: a bin
     * drained misses four times, not at every pop. */
    if (b->top < b->low) {
      unsigned step = _tp_tbin_limit(b) / 4;
      b->low = b->top - b->lo > step ? b->top - step : b->lo;
    }
    if (_tp_class_trimmed(_tp_classes[c].size)) _tp_tcache_trim_tick(tc);
  } else {
    from = &_tp_tbin_empty; /* no bin: the block is tagged with the empty one's address */
    if (_tp_tcache_take_one(g, c, &e) == 0) return enomem();
    count_alloc(tc, _tp_classes[c].size);
  }
  void *p = mark_live(e, from);
  if (zero) memset(p, 0, size);
  return p;
}

/* A medium or large run's record set up as one block of `size` bytes (s->size: a medium run's
 * usable bytes, 0 for a large one), published and counted. */
static void *one_block(tp_tcache_t *tc, tp_slab_t *s, size_t size, int zero) {
  s->nobj = 1;
  s->live = (uint8_t *)s->data;
  __atomic_store_n(&s->live[0], 1, __ATOMIC_RELAXED);
  _tp_run_publish(s);
  count_alloc(tc, _tp_run_usable(s));
  _tp_stats_out((ptrdiff_t)_tp_run_usable(s));
  if (zero && !s->zeroed) memset((void *)s->base, 0, size);
  return (void *)s->base;
}

/* A medium block: its slots (on 4 KiB pages in an hpage of its own when its site fills its
 * runs in part: runs.c, then a large run that keeps the slots as its usable size). */
static void *alloc_medium(tp_tcache_t *tc, unsigned g, size_t size, size_t align, int zero, uintptr_t site) {
  _tp_heap_after_fork();
  unsigned n = (unsigned)((size + TP_SLOT - 1) >> TP_SLOT_SHIFT);
  tp_slab_t *s = _tp_run_new_site(_tp_groups[g], TP_SLAB_MEDIUM, n, align, TP_BIG_META, 0, site);
  if (s == NULL) return enomem();
  s->size = n * (uint32_t)TP_SLOT;
  return one_block(tc, s, size, zero);
}

static void *alloc_large(tp_tcache_t *tc, unsigned g, size_t size, size_t align, int zero, uintptr_t site) {
  if (size > TP_LARGE_MAX) return enomem();
  _tp_heap_after_fork();
  size_t n = (size + TP_HPAGE - 1) >> TP_HPAGE_SHIFT;
  tp_slab_t *s = _tp_run_new_site(_tp_groups[g], TP_SLAB_LARGE, n, align, TP_BIG_META, size - (n - 1) * TP_HPAGE, site);
  if (s == NULL) return enomem();
  return one_block(tc, s, size, zero);
}

/* A block of `size` in group g for thread tc; c is the class of size (1 for 0; TP_NCLASSES past
 * the slab classes), the one class the request's size becomes. */
static void *alloc_in(tp_tcache_t *tc, size_t size, size_t align, unsigned g, int zero, uintptr_t site, unsigned c) {
  if (TP_UNLIKELY(size > (size_t)PTRDIFF_MAX)) return enomem();
  size_t req = size ? size : 1;
  tp_group_t *grp = _tp_groups[g];
  if (grp->ordered && req <= TP_ARENA_MAX && align <= TP_GRANULE) {
    size_t usable;
    void *p = _tp_arena_alloc(grp, req, zero, &usable);
    if (p == NULL) return enomem();
    count_alloc(tc, usable);
    _tp_stats_out((ptrdiff_t)usable);
    return p;
  }
  if (align > 16) {
    /* Up to a slot (32 KiB) a class that is a multiple of the alignment keeps every object
     * aligned: slabs start on a slot. Up to 64 KiB a medium run starts at an aligned slot. */
    if (align <= TP_SLOT && req <= TP_SMALL_MAX) {
      size_t r = (req + align - 1) & ~(align - 1);
      if (r <= TP_SMALL_MAX) {
        unsigned ca = _tp_class_of(r); /* the aligned block's class: r's, not size's */
        if (_tp_classes[ca].size % align == 0) return alloc_small(tc, g, ca, size, zero);
      }
    }
    if (align <= TP_RUN_ALIGN_MAX && req <= TP_MEDIUM_MAX) return alloc_medium(tc, g, req, align, zero, site);
    return alloc_large(tc, g, req, align, zero, site);
  }
  if (req <= TP_SMALL_MAX) return alloc_small(tc, g, c, size, zero);
  if (req <= TP_MEDIUM_MAX) return alloc_medium(tc, g, req, 0, zero, site);
  return alloc_large(tc, g, req, TP_HPAGE, zero, site);
}

static inline unsigned class_of_request(size_t size) {
  return size <= TP_SMALL_MAX ? _tp_class_of(size ? size : 1) : TP_NCLASSES;
}

void *_tp_alloc(size_t size, size_t align, unsigned g, int zero, uintptr_t site) {
  return alloc_in(tcache_get(), size, align, g, zero, site, class_of_request(size));
}

/* ---- free ---------------------------------------------------------------------------- */
static TP_NOINLINE void free_big(void *p, tp_slab_t *s) {
  if (s->kind == TP_SLAB_ARENA) {
    size_t usable = _tp_arena_free(_tp_groups[s->group], s, p);
    count_free(tcache_get(), usable);
    _tp_stats_out(-(ptrdiff_t)usable);
    return;
  }
  if ((uintptr_t)p != s->base) invalid_free(p, "points inside a block, not at its start");
  /* An exchange, not a load and a store: two racing frees must not both release the run. */
  if (!__atomic_exchange_n(&s->live[0], 0, __ATOMIC_ACQ_REL)) double_free(p);
  size_t usable = _tp_run_usable(s);
  count_free(tcache_get(), usable);
  _tp_stats_out(-(ptrdiff_t)usable);
  _tp_run_release(s);
}

/* Whether a block of slab s freed by this thread goes to its remote bin (b: the thread's bin
 * for it). Another thread fills from s: reused here, the block would share its line with that
 * thread's blocks (passive false sharing), so small ones go back to the slab, a batch at a
 * time; not once that thread has exited (a thread that takes over an exited one's blocks
 * reuses them from its cache). A bin that keeps nothing (another thread's group under
 * group:thread) sends blocks back in batches too while that thread lives: one at a time, each
 * would take the bin lock. */
static inline int goes_remote(const tp_tcache_t *tc, const tp_slab_t *s, const tp_tbin_t *b) {
  if (b->end == b->lo) return !atomic_load_explicit(&_tp_groups[s->group]->idle, memory_order_relaxed);
  const tp_tcache_t *f = __atomic_load_n(&s->filler, __ATOMIC_RELAXED);
  return f != tc && s->remote_mask && f != NULL && !f->exited; /* the mask: _tp_policy_free_remote of its size */
}

/* The free miss: no bin yet, bin full, no cache (thread exit), a block for the remote bin. */
static TP_NOINLINE void free_small_slow(tp_entry_t e, tp_slab_t *s) {
  tp_tcache_t *tc = _tp_tc;
  /* A block for the remote bin, once there is one with room: no record or bin lookups. */
  tp_tgroup_t *tg = tc->groups[s->group];
  tp_tbin_t *r = tg->remote[s->cls], *lb = tg->bins[s->cls];
  /* A consumer's block (policy.c, _tp_policy_free_remote_stop): its slab's blocks are cached
   * by whichever thread frees them from now on, in the free hit. */
  if (r != NULL && _tp_policy_free_remote_stop(r->flushes)) {
    if (s->remote_mask) __atomic_store_n(&s->remote_mask, 0, __ATOMIC_RELAXED); /* a line every free reads */
    if (lb->top < lb->end) {
      _tp_tbin_push(lb, e); /* the free hit tagged it for lb already */
      return;
    }
  }
  if (r != NULL && r->top + 1 < r->end && !tc->dead && lb != &_tp_tbin_empty &&
      tg->gen == atomic_load_explicit(&_tp_groups[s->group]->gen, memory_order_relaxed) && goes_remote(tc, s, lb)) {
    count_free(tc, s->size);
    _tp_tbin_push(r, e);
    return;
  }
  tc = tcache_get();
  tp_tbin_t *b = _tp_tbin_get(tc, s->group, s->cls);
  /* A bin that keeps nothing, of a group whose thread has exited: the block goes back at once,
   * with what waits in the remote bin, so that the group goes back when it is empty. */
  if (b != NULL && b->end == b->lo && atomic_load_explicit(&_tp_groups[s->group]->idle, memory_order_relaxed)) {
    tp_tbin_t *rb = tc->groups[s->group]->remote[s->cls];
    if (rb) _tp_tbin_flush(tc, s->group, s->cls, rb, 0);
    b = NULL;
  }
  if (b == NULL) {
    count_free(tc, s->size);
    _tp_bin_flush(_tp_groups[s->group], s->cls, &e, 1);
    return;
  }
  if (goes_remote(tc, s, b)) {
    count_free(tc, s->size);
    _tp_tbin_remote(tc, s->group, s->cls, e);
    return;
  }
  if (b->top >= b->end && !_tp_tbin_grow(tc, b)) {
    tc->last_free_g[s->cls] = s->group; /* evidence for site adoption */
    _tp_tbin_flush(tc, s->group, s->cls, b, _tp_tbin_limit(b) / 2);
    b->flush_mark = b->nalloc;
    if (_tp_class_trimmed(s->size)) _tp_tcache_trim_tick(tc);
  }
  _tp_tbin_push(b, e); /* retagged: the free hit tagged it for the bin it found */
}

/* Not the start of a small block: a medium, large or arena block, or an invalid free. */
static TP_NOINLINE void free_other(void *p, tp_slab_t *s) {
  if ((uintptr_t)p >> TP_VA_BITS) invalid_free(p, "not a block tlbpack handed out"); /* wrapped around the map */
  else if (s->kind != TP_SLAB_SMALL) free_big(p, s);
  else invalid_free(p, "points inside a block, not at its start");
}

/* The free hit read a 0: a medium, large or arena block (their free_live is a 0 byte), a
 * block-aligned pointer past a small slab's last object, or a small block not live. */
static TP_NOINLINE void free_dead(void *p, tp_slab_t *s) {
  uintptr_t idx = _tp_obj_index((uintptr_t)p - s->base, s->recip);
  if (s->kind != TP_SLAB_SMALL) free_other(p, s);
  else if (idx >= s->nobj) invalid_free(p, "points inside a block, not at its start");
  else double_free(p);
}

/* No slab at p: free(NULL), or an invalid or double free (reported, then abort). */
static TP_NOINLINE void free_unknown(void *p) {
  if (p == NULL) return;
  tp_hpage_t *h = _tp_hpage_of(p);
  if (h == NULL) invalid_free(p, "not a block tlbpack handed out");
  if (h->state == TP_HP_LARGE_TAIL) invalid_free(p, "points inside a large block");
  if (((uintptr_t)p & (TP_SLOT - 1)) == 0) double_free(p); /* a released block's start */
  invalid_free(p, "not a live block (already freed, or never handed out)");
}

/* The free hit: the block is checked against its slab (start of a block, live) and against the
 * top of its bin, tagged, then pushed onto this thread's bin when this thread fills from its
 * slab; everything else is one miss. */
static TP_NOINLINE void free_remap(void *p, tp_tcache_t *tc);

/* Every free of a block in slab s: the checks, then the thread's bin (tc: the calling thread's
 * record, or a static one, whose bins are full: the slow path). */
static inline __attribute__((always_inline)) void free_in_slab(void *p, tp_slab_t *s, tp_tcache_t *tc) {
  uintptr_t off = (uintptr_t)p - s->base; /* below 2 MiB: p is in one of s's slots */
  /* _tp_obj_index and _tp_obj_start written out: called in turn, GCC multiplies twice */
  unsigned __int128 m = (unsigned __int128)off * s->recip;
  uintptr_t idx = (uintptr_t)(m >> 64);
  if (TP_UNLIKELY((uint64_t)m >= s->recip)) { /* not a block's start, or recip 0: not small */
    free_other(p, s);
    return;
  }
  uint8_t *live = s->free_live + idx;
  if (TP_UNLIKELY(!*live)) { /* in its slab: written only by refills and flushes */
    free_dead(p, s);
    return;
  }
  /* Live byte 1: out of the slab, handed out or in a thread cache. The tag (types.h) is
   * written, not read: a cached block is checked when it leaves the bin, so the free does not
   * wait for the line of a block another thread wrote last (a consumer freeing what a producer
   * made). Written in the block rather than in a line of live bytes that the thread filling
   * from the slab writes too. A free of the block on top of the bin is reported here (lo[-1] is
   * NULL). */
  /* The bin: one load from the slab's line (tp_tcache_t.bin_off); a bin not created yet is the
   * record's empty one (offset 0), whose top is its end: the miss below. */
  tp_tbin_t *b = (tp_tbin_t *)((uintptr_t)tc + (uintptr_t)tc->bin_off[s->bin_idx]);
  tp_entry_t *top = b->top;
  if (TP_UNLIKELY(top[-1].p == p)) {
    double_free(p);
    return;
  }
  *_tp_tag_word(p) = (uintptr_t)b;
  /* Whether this thread fills from s is data, not a pattern (blocks of 64 B and up cross
   * threads and stay where they are freed, so their slab's filler is either thread): tested on
   * its own before the size, it would mispredict about every other cross-thread free; tested
   * with the mask it rarely does. */
  if (TP_LIKELY(top < b->end) && TP_LIKELY((((uintptr_t)s->filler ^ (uintptr_t)tc) & s->remote_mask) == 0)) {
    *top = (tp_entry_t){p};
    b->top = top + 1;
    return;
  }
  free_small_slow((tp_entry_t){p}, s);
}

/* The slab comes from the thread's map cache (tc->map_base / map_slabs): one compare for a
 * program whose heap is in one GiB; free_remap walks the map otherwise. */
static inline __attribute__((always_inline)) void free_block(void *p) {
  tp_tcache_t *tc = _tp_tc;
  uintptr_t off = (uintptr_t)p - tc->map_base; /* its offset in the cached GiB: no mask needed */
  if (TP_UNLIKELY(off >= ((uintptr_t)1 << TP_GIB_SHIFT))) {
    free_remap(p, tc);
    return;
  }
  tp_slab_t *s = __atomic_load_n(&tc->map_slabs[off >> TP_SLOT_SHIFT], __ATOMIC_ACQUIRE);
  if (TP_UNLIKELY(s == NULL)) {
    free_unknown(p);
    return;
  }
  free_in_slab(p, s, tc);
}

void tp_free(void *p) { free_block(p); }

/* The free hit's map cache missed: p lies in another GiB than this thread's last free (or is
 * NULL, or not tlbpack's). A GiB the map holds becomes the thread's (never in the static
 * records, which threads share); anything else goes to free_unknown. */
static TP_NOINLINE void free_remap(void *p, tp_tcache_t *tc) {
  uintptr_t a = (uintptr_t)p;
  tp_gib_t *b = _tp_gib_of(a);
  tp_slab_t *s = b ? _tp_gib_slab(b, a) : NULL;
  if (s == NULL) {
    free_unknown(p); /* NULL, not tlbpack's, or no slab there */
    return;
  }
  if (!tc->dead) {
    tc->map_slabs = b->slab;
    tc->map_base = a & ~(((uintptr_t)1 << TP_GIB_SHIFT) - 1);
  }
  free_in_slab(p, s, tc);
}

void _tp_free_checked(void *p) { tp_free(p); }

size_t _tp_usable_size(const void *p, tp_slab_t **slab_out) {
  tp_hpage_t *h = _tp_hpage_of(p);
  tp_slab_t *s = h ? h->slot_slab[((uintptr_t)p >> TP_SLOT_SHIFT) & (TP_SLOTS - 1)] : NULL;
  if (s == NULL) return 0;
  if (slab_out) *slab_out = s;
  if (s->kind == TP_SLAB_ARENA) return _tp_arena_usable(s, p);
  if (s->kind != TP_SLAB_SMALL)
    return (uintptr_t)p == s->base && __atomic_load_n(&s->live[0], __ATOMIC_RELAXED) ? _tp_run_usable(s) : 0;
  uintptr_t off = (uintptr_t)p - s->base;
  uint32_t idx = (uint32_t)_tp_obj_index(off, s->recip);
  if (!_tp_obj_start(off, s->recip) || idx >= s->nobj) return 0;
  if (!__atomic_load_n(&s->live[idx], __ATOMIC_RELAXED)) return 0;
  if (_tp_block_cached((uintptr_t)p)) return 0;
  return s->size;
}

/* ---- the public API ------------------------------------------------------------------ */
static TP_NOINLINE void *malloc_generic(size_t size, uintptr_t ra, int zero) {
  if (TP_UNLIKELY(_tp_os_discover_wanted == 1)) _tp_os_numa_check(); /* no lock held */
  tp_tcache_t *tc = tcache_get();
  int route;
  unsigned c = class_of_request(size);
  unsigned g = group_for(tc, ra, size, c, &route);
  if (route == TP_ROUTE_SAMPLE) return alloc_medium(tc, g, size, 0, zero, ra); /* measured on 4 KiB pages */
  return alloc_in(tc, size, 0, g, zero, ra, c);
}

/* The malloc hit: the site slot's bins (the static empty ones before the thread's first miss)
 * have a block of this class, the one under the top while there are two (tbin_pop_under).
 * Everything else is one miss, to malloc_generic. */
static inline __attribute__((always_inline)) void *malloc_ra(size_t size, uintptr_t ra) {
  tp_tcache_t *tc = _tp_tc;
  unsigned i;
  if (TP_LIKELY(size <= TP_FAST_MAX)) i = (unsigned)((size + 15) >> 4);
  else if (size <= TP_FAST_BIG) i = _tp_fast_index(size);
  else return malloc_generic(size, ra, 0);
  tp_site_slot_t *st = &tc->site[TP_SITE_SLOT(ra)];
  tp_tbin_t *b = st->bins[i];
  tp_entry_t *top = b->top;
  if (TP_LIKELY(st->ra == ra)) {
    if (TP_LIKELY(top - 1 > b->low)) return tbin_pop_under(b, top);
    /* low read again: the compare above then takes it from memory, one instruction less */
    if (top > __atomic_load_n(&b->low, __ATOMIC_RELAXED)) return tbin_pop(b, top);
  }
  return malloc_generic(size, ra, 0);
}

void *tp_malloc(size_t size) { return malloc_ra(size, RA()); }

void *_tp_malloc_site(size_t size, uintptr_t site) { return malloc_ra(size, site); }


void *tp_calloc(size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) return enomem();
  if (total > TP_FAST_BIG) return malloc_generic(total, RA(), 1);
  void *p = malloc_ra(total, RA());
  if (p) memset(p, 0, total);
  return p;
}

void *_tp_realloc_block(void *p, size_t size, int g) {
  tp_slab_t *s = NULL;
  size_t old = _tp_usable_size(p, &s);
  if (old == 0) {
    /* A freed block waiting in a thread cache: freed again, it would be cached twice. */
    if (s != NULL && s->kind == TP_SLAB_SMALL && _tp_block_cached((uintptr_t)p))
      _tp_fatal("realloc of %p, a block freed already (it waits in a thread cache)", p);
    tp_free(p); /* reports what is wrong with p and aborts */
    _tp_fatal("realloc of %p, not a block in use", p);
  }
  if (_tp_policy_realloc_keeps(s->kind == TP_SLAB_SMALL, old, size)) return p;
  unsigned grp = g < 0 ? s->group : (unsigned)g;
  /* A wrapper's group of one class (sitekey.h) holds that class only: a block that leaves it
   * goes where the wrapper's calls of the new size go. Kept in the group, every buffer grown
   * through the wrapper would take a slab of each class it passed in its first class's group,
   * most of them barely used. */
  uintptr_t key = g < 0 ? _tp_groups[grp]->site : 0;
  int leaves = _tp_policy_realloc_leaves_class_group(_tp_key_class(key), size);
  /* A medium or large block that grows takes the free slots or hpages after it, where it is,
   * without a copy: a buffer grown a little at a time is not copied at every slot it crosses. */
  if (!leaves && size > old && grp == s->group &&
      ((s->kind == TP_SLAB_MEDIUM && size <= TP_MEDIUM_MAX &&
        _tp_run_grow(s, (size + TP_SLOT - 1) >> TP_SLOT_SHIFT)) ||
       (s->kind == TP_SLAB_LARGE && size <= TP_LARGE_MAX &&
        _tp_run_grow(s, (size + TP_HPAGE - 1) >> TP_HPAGE_SHIFT)))) {
    size_t grown = _tp_run_usable(s) - old;
    tp_tcache_t *tc = tcache_get();
    tc->bytes_alloc += grown;
    tc->live_bytes += (ptrdiff_t)grown;
    _tp_stats_out((ptrdiff_t)grown);
    return p;
  }
  void *q = NULL;
  if (leaves) {
    q = malloc_ra(size, _tp_key_site(key));
  } else {
    /* The malloc hit on the group's own bins (the thread's static empty ones before it used
     * the group, and always empty for an ordered group); a group destroyed since is a miss. */
    tp_tgroup_t *tg = _tp_tc->groups[grp];
    if (size <= TP_FAST_BIG && tg->gen == atomic_load_explicit(&_tp_groups[grp]->gen, memory_order_relaxed)) {
      tp_tbin_t *b = tg->fast[_tp_fast_index(size)];
      if (b->top > b->low) q = tbin_pop(b, b->top);
    }
  }
  /* A medium or large block keeps its site: what its runs show is the same buffer's. */
  uintptr_t site = s->site;
  if (q == NULL && (leaves || (q = _tp_alloc(size, 0, grp, 0, site)) == NULL)) return NULL;
  memcpy(q, p, old < size ? old : size);
  tp_free(p);
  return q;
}

static void *realloc_ra(void *p, size_t size, uintptr_t ra) {
  if (p == NULL) return malloc_ra(size, ra);
  if (size == 0) { /* glibc: realloc(p, 0) frees and returns NULL */
    tp_free(p);
    return NULL;
  }
  return _tp_realloc_block(p, size, -1); /* keeps the block in its placement group */
}

void *tp_realloc(void *p, size_t size) { return realloc_ra(p, size, RA()); }

void *tp_reallocarray(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) return enomem();
  return realloc_ra(p, total, RA());
}

static inline int pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

/* Alignments up to 16 are every block's: the malloc hit serves them. */
static inline void *aligned_ra(size_t alignment, size_t size, uintptr_t ra) {
  if (alignment <= 16) return malloc_ra(size, ra);
  /* Up to a slot (32 KiB), a class whose size is a multiple of the alignment is aligned by
   * itself (slabs start on a slot): the malloc hit of the rounded size. */
  if (alignment <= TP_SLOT && size <= TP_FAST_BIG) {
    size_t r = (size + alignment - 1) & ~(alignment - 1);
    if (r <= TP_FAST_BIG && r != 0 && _tp_class_size(_tp_class_of(r)) % alignment == 0) return malloc_ra(r, ra);
  }
  tp_tcache_t *tc = tcache_get();
  unsigned c = class_of_request(size);
  return alloc_in(tc, size, alignment, group_for(tc, ra, size, c, NULL), 0, ra, c);
}

void *tp_aligned_alloc(size_t alignment, size_t size) {
  if (!pow2(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return aligned_ra(alignment, size, RA());
}

void *_tp_aligned_site(size_t alignment, size_t size, uintptr_t site) {
  if (!pow2(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return aligned_ra(alignment, size, site);
}

void *tp_memalign(size_t alignment, size_t size) {
  if (alignment > ((size_t)1 << 40)) return enomem();
  if (!pow2(alignment)) { /* glibc rounds up to the next power of two */
    size_t a = 1;
    while (a < alignment) a <<= 1;
    alignment = a;
  }
  return aligned_ra(alignment, size, RA());
}

int tp_posix_memalign(void **out, size_t alignment, size_t size) {
  if (!pow2(alignment) || alignment % sizeof(void *) != 0) return EINVAL;
  int saved = errno;
  void *p = aligned_ra(alignment, size, RA());
  if (p == NULL) {
    errno = saved;
    return ENOMEM;
  }
  *out = p;
  return 0;
}

void *tp_valloc(size_t size) {
  tp_tcache_t *tc = tcache_get();
  uintptr_t ra = RA();
  unsigned c = class_of_request(size);
  return alloc_in(tc, size, TP_PAGE, group_for(tc, ra, size, c, NULL), 0, ra, c);
}

void *tp_pvalloc(size_t size) {
  size_t r = (size + TP_PAGE - 1) & ~(size_t)(TP_PAGE - 1);
  if (r < size) return enomem();
  tp_tcache_t *tc = tcache_get();
  uintptr_t ra = RA();
  unsigned c = class_of_request(size);
  return alloc_in(tc, r ? r : TP_PAGE, TP_PAGE, group_for(tc, ra, size, c, NULL), 0, ra, c); /* aligned: its class is r's */
}

size_t tp_malloc_usable_size(const void *p) { return p ? _tp_usable_size(p, NULL) : 0; }

size_t tp_good_size(size_t size) {
  if (size <= TP_SMALL_MAX) return _tp_class_size(_tp_class_of(size));
  if (size <= TP_MEDIUM_MAX) return (size + TP_SLOT - 1) & ~(size_t)(TP_SLOT - 1);
  size_t r = (size + TP_HPAGE - 1) & ~(size_t)(TP_HPAGE - 1);
  return r < size ? size : r;
}

int tp_trim(size_t pad) {
  if (atomic_load(&_tp_ready) == 0) return 0;
  tp_tcache_t *tc = _tp_tc;
  if (_tp_tcache_started(tc) && !tc->dead) _tp_tcache_flush_all(tc);
  /* The empty slabs the lanes keep for their next refills go back too (policy.c). */
  for (unsigned i = 0, end = _tp_groups_end(); i < end; i++)
    if (_tp_groups[i] != NULL) _tp_bin_trim(_tp_groups[i]);
  return _tp_heap_trim(pad) != 0;
}

int tp_owns(const void *p) { return p != NULL && _tp_usable_size(p, NULL) != 0; }
