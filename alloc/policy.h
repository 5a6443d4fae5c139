/* The policy layer: decisions as pure functions of plain values (policy.c), and the
 * thresholds the other layers share with them. Includes only the base: no state, no
 * records, so unit tests call them with made-up values. */
#ifndef TP_POLICY_H
#define TP_POLICY_H

#include "base.h"

/* ---- decisions (policy.c): pure functions of plain values ---------------------------- */
#define TP_IDLE_REFILLS 64 /* a site group that has not refilled in this many refills is idle */
#define TP_LEND_REFILLS 256 /* an exclusive group that has not refilled in this many lends its room */
uint32_t _tp_policy_site_demand(uint32_t demand, uint64_t *stamp, uint64_t now) TP_INTERNAL;
int _tp_policy_site_grows_up(uint32_t demand, size_t bytes) TP_INTERNAL;
int _tp_policy_exclusive(int exclusive, size_t slab_bytes, size_t exclusive_bytes, int group_mode,
                         int split_class) TP_INTERNAL;
int _tp_policy_bin_hot(int idle, uint64_t now, uint64_t last_fill, int aliased) TP_INTERNAL;
int _tp_policy_realloc_keeps(int small, size_t old, size_t size) TP_INTERNAL;
int _tp_policy_realloc_leaves_class_group(int key_class, size_t size) TP_INTERNAL;
int _tp_policy_share_slab(unsigned partial_slabs) TP_INTERNAL;
int _tp_policy_lend(int explicit_, int exclusive, uint64_t since_refill) TP_INTERNAL;
int _tp_policy_fill_holes(size_t hole_bytes, size_t page_bytes) TP_INTERNAL;
int _tp_policy_large_tail_4k(size_t last_bytes, int pool_auto) TP_INTERNAL;
/* A site's medium runs, and large ones of up to this many hpages, go on 4 KiB pages when it
 * fills them in part. */
#define TP_SPARSE_MAX_HPAGES 4
enum { TP_LARGE_UNKNOWN = 0, TP_LARGE_DENSE, TP_LARGE_SPARSE }; /* a site's large runs, as sampled */
int _tp_policy_large_on_4k(size_t nhpages, uint32_t site_runs, int verdict, int pool_auto) TP_INTERNAL;
int _tp_policy_large_sparse(size_t touched, size_t hpages_touched, size_t asked) TP_INTERNAL;
/* Where a site's block of a slab class above one slot comes from (policy.c). */
enum { TP_ROUTE_SLAB = 0, TP_ROUTE_SAMPLE, TP_ROUTE_4K };
int _tp_policy_slab_block_sampled(size_t size) TP_INTERNAL;
int _tp_policy_slab_block_route(uint32_t next, int verdict) TP_INTERNAL;
int _tp_policy_grow_lazily(size_t have, size_t adding) TP_INTERNAL;
#define TP_ONEOFF_LARGE_BYTES ((size_t)8 << 20)
int _tp_policy_give_back_large_run(size_t run_bytes, int cycling) TP_INTERNAL;
int _tp_policy_large_cycling(int gave_back, uint64_t gave_back_ms, uint64_t now_ms) TP_INTERNAL;
int _tp_policy_keep_large_run(size_t run_pool_bytes, size_t retain_bytes, long pool_free_pages) TP_INTERNAL;
int _tp_policy_free_remote(uint32_t size) TP_INTERNAL; /* slab_new sets the slab's remote_mask from it */
int _tp_policy_free_remote_stop(uint32_t flushes) TP_INTERNAL; /* alloc.c, free_small_slow */
int _tp_policy_meta_huge(size_t used, int first, size_t total) TP_INTERNAL; /* meta.c: a unit of metadata becomes a huge page */

int _tp_policy_promote_start(unsigned carved, unsigned touched, size_t heap_bytes, size_t added, int shared) TP_INTERNAL;
/* A group's start pages (runs.c): whether one holds data worth a huge page, and whether the
 * group filled one; a group grows up alone with TP_GROW_MIN_BYTES carved in the heap, and at
 * its start pages' carves too once the heap has carved TP_GROW_HALF_BYTES. */
#define TP_GROW_MIN_BYTES ((size_t)4 << 20)
#define TP_GROW_HALF_BYTES ((size_t)8 << 20)
int _tp_policy_start_holds_data(size_t touched, size_t carved) TP_INTERNAL;
int _tp_policy_start_filled(size_t touched, size_t heap_used) TP_INTERNAL;
int _tp_policy_borrow_shared(size_t own_avail, unsigned want, size_t shared_avail, size_t shared_slabs,
                             uint32_t nobj) TP_INTERNAL;
#define TP_KEEP_EMPTY_4K_BYTES ((size_t)64 << 20) /* a lane of the group on 4 KiB pages */
int _tp_policy_release_empty_slab(size_t lane_empty, size_t slab_bytes, uint32_t nobj, int hot, int on_4k) TP_INTERNAL;
#define TP_KEEP_EMPTY_BYTES ((size_t)128 << 10) /* empty slabs a lane keeps (policy.c) */
uint32_t _tp_policy_tbin_limit(int mode, unsigned g, unsigned thread_group, uint32_t cap) TP_INTERNAL;
#define TP_SLOW_START_POPS 64 /* a bin's first blocks come TP_SLOW_START_BATCH a refill */
#define TP_SLOW_START_BATCH 8
#define TP_SLOW_START_BYTES 8192 /* and at most this many bytes of a kilobyte class */
int _tp_policy_slow_start(uint64_t bin_pops, uint32_t size, unsigned *want) TP_INTERNAL;
int _tp_policy_slow_refill_counts(uint64_t bin_pops, uint32_t size, unsigned batch) TP_INTERNAL;
#define TP_ADOPT_FREE_BYTES (TP_HPAGE / 2) /* a donor's free blocks of the class, in its slabs */
int _tp_policy_adopt_donor(int is_other_site_group, int donor_aliased, unsigned cached, unsigned cap,
                           size_t donor_free_bytes, size_t donor_slab_bytes, size_t exclusive_bytes,
                           uint64_t since_donor_refill) TP_INTERNAL;


#endif
