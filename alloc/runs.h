/* The runs layer: slot and hpage runs and their records (runs.c), slabs and the bins that
 * hand their objects out (slab.c), arena runs (arena.c). Below it: the heap. */
#ifndef TP_RUNS_H
#define TP_RUNS_H

#include "heap.h"

/* ---- runs (runs.c): the one way a slab/run record is created and released ------------
 * A run is n slots (small, medium, arena) or n whole hpages (large) carved for group g, with
 * a zeroed record of meta_size bytes whose base, group, kind, hp, first_slot / nslots or
 * nhpages, zeroed and meta_size are set. The caller fills in the rest of the record and then
 * publishes it: only then can free() find it. Slot runs count in g->slab_bytes, and the group
 * becomes exclusive (hpages of its own) past exclusive_kb, under the heap lock. Release undoes
 * all of it: page map, slab bytes, slots or hpages, record. The heap is the only writer of the
 * page map. `last`: for a large run, the bytes the block uses of its last hpage (0: all). */
tp_slab_t *_tp_run_new(tp_group_t *g, int kind, size_t n, size_t align, size_t meta_size, size_t last) TP_INTERNAL;
/* The same, for a medium or large run asked for by call site `site` (0: none known), whose
 * runs are sampled and go on 4 KiB pages when the site fills them in part (policy.c,
 * _tp_policy_large_on_4k): a medium one then comes back as a large run of one hpage (kind
 * TP_SLAB_LARGE, `last` its slots' bytes), which the caller sets up as a large block. */
tp_slab_t *_tp_run_new_site(tp_group_t *g, int kind, size_t n, size_t align, size_t meta_size, size_t last,
                            uintptr_t site) TP_INTERNAL;
/* Where the next block of a slab class that _tp_policy_slab_block_sampled names, asked for by
 * `site`, comes from (TP_ROUTE_*); counts the site's blocks (a sample, a run, counts itself in
 * _tp_run_new_site). TP_ROUTE_SLAB while the heap starts small, and outside pool:auto. */
int _tp_run_site_route(uintptr_t site, size_t size) TP_INTERNAL;
void _tp_run_publish(tp_slab_t *s) TP_INTERNAL;
/* The calling thread's side (0 or 1, tp_tcache_t.side): a new slot run prefers the slots its
 * side gave back last, and a released run marks its slots with it (runs.c). The runs layer's
 * own: the cache layer sets it as a thread takes its cache record, and back to 0 as it leaves. */
extern __thread uint8_t _tp_run_side __attribute__((tls_model("initial-exec"))) TP_INTERNAL;
void _tp_run_release(tp_slab_t *s) TP_INTERNAL;
/* A medium or large block's usable bytes: a large one's hpages (may exceed 32 bits: size 0),
 * else its slots (a medium block in an hpage of its own on 4 KiB pages keeps them). */
static inline size_t _tp_run_usable(const tp_slab_t *s) {
  return s->kind == TP_SLAB_LARGE && s->size == 0 ? (size_t)s->nhpages * TP_HPAGE : s->size;
}
/* Grows a medium run (one block, its caller's) in place to n slots when the slots after it in
 * its hpage are free, or a large run to n hpages when the hpages after it are reserved and
 * unused; returns 1 when it did (the run is then that long), 0 when it could not. */
int _tp_run_grow(tp_slab_t *s, size_t n) TP_INTERNAL;


/* ---- slabs and bins (slab.c) --------------------------------------------------------- */
/* Moves at least `want` objects (when memory allows) and at most `room` of class c of group g
 * into out[] (as tcache entries, the ones taken last first: a cache popping from the top
 * hands them out in the order taken); a slow-start refill (`slow`) takes just `want`, except
 * whole words of another thread's slab. `room` is at most 64 (TP_FILL_MAX). */
/* The blocks are tagged with `tag` (the bin they go to), except the entries with bit 0. `tc`
 * is the calling thread's cache: its side picks the lane, and the slabs it fills from become
 * its own (tp_slab_t.filler). */
unsigned _tp_bin_fill(const struct tp_tcache_s *tc, tp_group_t *g, unsigned c, tp_entry_t *out, unsigned want,
                      unsigned room, int slow, const void *tag) TP_INTERNAL;
/* Returns objects to their slabs, their live bytes to 0; one that is already available (in a
 * cache twice, both copies tagged) is reported as a double free. All belong to group g, class
 * c. The tags of blocks from a thread cache are checked before (_tp_tbin_flush). */
void _tp_bin_flush(tp_group_t *g, unsigned c, const tp_entry_t *in, unsigned n) TP_INTERNAL;
/* Releases every slab of a group (destroy). */
void _tp_bin_release_all(tp_group_t *g) TP_INTERNAL;
/* Gives back the empty slabs the group's lanes keep for their next refills (thread group
 * release, malloc_trim). */
void _tp_bin_trim(tp_group_t *g) TP_INTERNAL;
/* The next group in the calling thread's turn (tc->sweep_next): the empty slabs kept by its
 * lanes of classes no longer in use (_tp_policy_bin_hot) go back. Called every
 * TP_CLOCK_BATCH refills of a thread, with no lock held. */
void _tp_bin_sweep(struct tp_tcache_s *tc) TP_INTERNAL;


/* ---- ordered groups (arena.c) --------------------------------------------------------- */
/* Arena runs: one byte per 16-byte granule. At a block's first granule it holds the length in
 * granules (1-127) while the block is live, and TP_ARENA_FREED | length once freed; 0 elsewhere.
 * Out of band, and enough to tell a double free from an invalid one. */
#define TP_ARENA_FREED 0x80
void *_tp_arena_alloc(tp_group_t *g, size_t size, int zero, size_t *usable) TP_INTERNAL;
/* Frees p from arena run s of group g (s->group's record); returns its usable size. Aborts on
 * an invalid or double free. */
size_t _tp_arena_free(tp_group_t *g, tp_slab_t *s, void *p) TP_INTERNAL;
size_t _tp_arena_usable(const tp_slab_t *s, const void *p) TP_INTERNAL;
#define TP_ARENA_META (sizeof(tp_slab_t) + TP_ARENA_GRANULES)


#endif
