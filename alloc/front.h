/* The front layer: the malloc API and its generic paths (alloc.c, override.c), the public
 * group API (group_api.c), start-up (init.c), stats (stats.c), warming (warm.c) and the
 * allocation log (profile.c). Everything below it. */
#ifndef TP_FRONT_H
#define TP_FRONT_H

#include "tcache.h"

/* ---- init (init.c) ------------------------------------------------------------------- */
extern _Atomic int _tp_ready TP_INTERNAL; /* 0 none, 1 core ready, 2 fully ready */
void _tp_init(void) TP_INTERNAL;

/* ---- stats (stats.c) ----------------------------------------------------------------- */
void _tp_atexit_report(void) TP_INTERNAL;
void _tp_stats_keep_stderr(void) TP_INTERNAL;
/* Data on 4 KiB pages (the stats hpages_4k_live, live_4k_bytes, hpages_4k_start): hpages on
 * 4 KiB pages holding blocks the program has, the bytes of those blocks, and of those hpages the
 * slab pages of groups that are not kept on 4 KiB pages by design (the sparse buffers' group, an
 * explicit group's first page): start pages, which past start are collapsed as soon as a run is
 * carved on them (runs.c, start_carve). */
typedef struct { size_t hpages, bytes, young; } tp_live_4k_t;
void _tp_stats_live_4k(tp_live_4k_t *out) TP_INTERNAL;

/* ---- the generic paths (alloc.c) ----------------------------------------------------- */
/* `site`: the call site, for a medium or large block (runs.c samples its sites' runs; 0: none
 * known). */
void *_tp_alloc(size_t size, size_t align, unsigned g, int zero, uintptr_t site) TP_INTERNAL;
void _tp_free_checked(void *p) TP_INTERNAL;
/* realloc of p (not NULL) to size: in place while _tp_policy_realloc_keeps says so, else a new
 * block in group g (-1: p's own group), the contents copied and p freed; an invalid p is
 * reported and aborts. */
void *_tp_realloc_block(void *p, size_t size, int g) TP_INTERNAL;
/* malloc on behalf of an allocation site (operator new passes its caller's address). */
void *_tp_malloc_site(size_t size, uintptr_t site) TP_INTERNAL;
/* aligned_alloc on behalf of an allocation site (aligned operator new). */
void *_tp_aligned_site(size_t alignment, size_t size, uintptr_t site) TP_INTERNAL;
size_t _tp_usable_size(const void *p, tp_slab_t **slab_out) TP_INTERNAL;

#endif
