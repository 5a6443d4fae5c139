/* The cache layer (tcache.c): a thread's bins, its site cache and mixed bins, the tag a cached
 * block carries, and the helpers the hit paths (alloc.c) inline. The records are in types.h.
 * Below it: the groups (a thread's group) and the runs (flushes go back to the slabs). */
#ifndef TP_TCACHE_H
#define TP_TCACHE_H

#include "group.h"

/* The calling thread's cache record (tcache.c). Layers below get what they need of it as
 * arguments (_tp_bin_fill, _tp_bin_sweep) or through their own state (_tp_run_side). */
extern __thread tp_tcache_t *_tp_tc __attribute__((tls_model("initial-exec"))) TP_INTERNAL;

/* A freed block onto bin b, which has room: tagged with b's address, then pushed (the free
 * hit does the same in two steps, the tag before it knows whether the block stays). */
static inline void _tp_tbin_push(tp_tbin_t *b, tp_entry_t e) {
  *_tp_tag_word(e.p) = (uintptr_t)b;
  *b->top++ = e;
}
/* Whether the small block at a (live byte 1) is in a thread cache: its tag word is the
 * address of a bin (metadata, tp_tbin_t.check). Stats and malloc_usable_size only (tcache.c). */
int _tp_block_cached(uintptr_t a) TP_INTERNAL;
/* Per-process random (set by init.c at start-up): a bin's check word is its address xor this. */
extern uintptr_t _tp_free_key TP_INTERNAL;
/* No GiB in a thread's map cache: the non-canonical GiB at 2^63, whose slab map is all NULL. */
#define TP_NO_GIB ((uintptr_t)1 << 63)
extern tp_slab_t *_tp_no_slabs[TP_GIB_SLOTS] TP_INTERNAL;
extern tp_tbin_t _tp_tbin_empty TP_INTERNAL;
extern tp_tcache_t _tp_tcache_empty TP_INTERNAL;
/* The calling thread's cache, created on first use; a static record that never caches when
 * the thread has exited or no memory is left for one. */
tp_tcache_t *_tp_tcache_get(void) TP_INTERNAL;
static inline int _tp_tcache_started(const tp_tcache_t *tc) { return tc != &_tp_tcache_empty; }
/* The bin of group g, class c, created on first use; NULL where the class is not cached. */
tp_tbin_t *_tp_tbin_get(tp_tcache_t *tc, unsigned g, unsigned c) TP_INTERNAL;
/* The bins by size (`fast`) of group g in this thread, for the site cache. */
tp_tbin_t **_tp_tgroup_fast(tp_tcache_t *tc, unsigned g) TP_INTERNAL;
/* The mixed bins of site ra in this thread, with class c's entries set to group g's bin;
 * group g's own bins when the thread has no room for another mixed site. A split site's start
 * empty (base TP_MIXED_NO_BASE); a whole site's, when it takes a class from another group than
 * its own (a refill borrowed from the shared group: group.c, _tp_group_for), start as group base's
 * bins, so that its other classes keep hitting there. */
tp_tbin_t **_tp_tcache_mixed(tp_tcache_t *tc, uintptr_t ra, unsigned base, unsigned g, unsigned c) TP_INTERNAL;
/* Whether bins are the mixed bins of site ra in this thread. */
int _tp_tcache_is_mixed(const tp_tcache_t *tc, uintptr_t ra, tp_tbin_t *const *bins) TP_INTERNAL;

/* Points the site cache's slot of ra at the bins of group g (chosen for class c under `key`,
 * base: group.h, _tp_group_for), so that the site's next call of that size hits. A split
 * site's slot points at the thread's mixed bins for it: by size, the bins of each class's own
 * group, so the malloc hit stays the same few instructions; a larger size there (no class key)
 * leaves it alone. A whole site's slot points at its group's bins after any size, or its next
 * small call would miss; once one of its classes borrows the shared group's slabs, at mixed
 * bins too, its own group's for the other classes. Pointed at the shared group's bins whole,
 * the slot would swing back at the next call of another class, whose own bin there is empty,
 * and again at the borrowed class's next call: a miss each time, reading both lanes' counters
 * of the shared group, which other threads write. */
static inline void _tp_tcache_point_site(tp_tcache_t *tc, uintptr_t ra, uintptr_t key, unsigned base, unsigned g,
                                         unsigned c, size_t size) {
  if (size <= TP_FAST_BIG || (tc->mode == TP_GROUP_SITE && key == ra && !_tp_site_is_split(ra))) {
    tp_site_slot_t *st = &tc->site[TP_SITE_SLOT(ra)];
    if (key != ra)
      st->bins = _tp_tcache_mixed(tc, ra, TP_MIXED_NO_BASE, g, c);
    else if (base != TP_MIXED_NO_BASE || (st->ra == ra && _tp_tcache_is_mixed(tc, ra, st->bins)))
      st->bins = _tp_tcache_mixed(tc, ra, base, g, c); /* already mixed: only class c changes */
    else
      st->bins = _tp_tgroup_fast(tc, g);
    st->ra = ra;
  }
}

/* The Cache's refills. _tp_tcache_refill fills bin b (group g, class c), empty, from the
 * group's slabs and returns how many blocks it took (0: no memory); it keeps the refill clock
 * (the group's last refill, the thread's batch of the process's clock and what runs on it:
 * the sweep of kept empty slabs, the collapse of pages a fork split) and the bin's slow start.
 * _tp_tcache_take_one takes one block of a class the thread does not cache. */
unsigned _tp_tcache_refill(tp_tcache_t *tc, tp_tbin_t *b, unsigned g, unsigned c) TP_INTERNAL;
unsigned _tp_tcache_take_one(unsigned g, unsigned c, tp_entry_t *out) TP_INTERNAL;
void _tp_tbin_flush(tp_tcache_t *tc, unsigned g, unsigned c, tp_tbin_t *b, unsigned keep) TP_INTERNAL;
/* Bin b, full, doubles its room instead of flushing, when it overflows a second time with no
 * pop since the first and was popped from since its last refill (a batch allocated here and
 * freed again: not a thread that frees what others allocate, nor one whose frees and mallocs
 * alternate), this thread may cache all it has room for and its class lets it grow
 * (tcache_grow); 0 when it does not. */
int _tp_tbin_grow(tp_tcache_t *tc, tp_tbin_t *b) TP_INTERNAL;
/* A free of a block whose slab another thread fills from: into the remote bin of (g, c), which
 * goes back to the slabs when full; straight back when there is no room for one. */
void _tp_tbin_remote(tp_tcache_t *tc, unsigned g, unsigned c, tp_entry_t e) TP_INTERNAL;
void _tp_tcache_flush_all(tp_tcache_t *tc) TP_INTERNAL;
/* A miss of a kilobyte bin (a refill, a pop below its low mark, an overflow): every
 * TP_TRIM_EVERY of them, the next of the thread's kilobyte bins is trimmed (tcache.c). */
void _tp_tcache_trim_tick(tp_tcache_t *tc) TP_INTERNAL;
static inline int _tp_class_trimmed(uint32_t size) { return size > 1024; }
void _tp_tcache_prefork(void) TP_INTERNAL;
void _tp_tcache_postfork(int child) TP_INTERNAL;
/* Sums live counters over every thread (stats). */
void _tp_tcache_sum(size_t *nmalloc, size_t *nfree, size_t *bytes_alloc, ptrdiff_t *live_bytes) TP_INTERNAL;
void _tp_tcache_key_init(void) TP_INTERNAL;

/* Counts blocks dropped without free (tp_group_destroy) as freed. */
void _tp_tcache_count_dropped(size_t objects, size_t bytes) TP_INTERNAL;

#endif
