/* tlbpack — a hugepage-aware malloc that packs co-used objects onto few huge pages.
 *
 * Two ways to use it:
 *   - LD_PRELOAD=libtlbpack.so PROGRAM: every malloc/free/... of PROGRAM is served by tlbpack.
 *   - link libtlbpack.a (or -ltlbpack) and call the tp_* functions below; the program's own
 *     malloc is left alone when the static library is linked.
 *
 * Configuration: TLBPACK_CONF="key:value,key:value" (tlbpack(3), ENVIRONMENT, has every key).
 */
#ifndef TLBPACK_H
#define TLBPACK_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TP_API __attribute__((visibility("default")))
#define TP_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#else
#define TP_API
#define TP_MALLOC_ATTR
#endif

#define TLBPACK_VERSION_MAJOR 0
#define TLBPACK_VERSION_MINOR 1
#define TLBPACK_VERSION_PATCH 0

/* ---- the malloc API ---------------------------------------------------------------- */
TP_API TP_MALLOC_ATTR void *tp_malloc(size_t size);
TP_API TP_MALLOC_ATTR void *tp_calloc(size_t count, size_t size);
TP_API void *tp_realloc(void *p, size_t size);
TP_API void *tp_reallocarray(void *p, size_t count, size_t size);
TP_API void tp_free(void *p);
TP_API TP_MALLOC_ATTR void *tp_aligned_alloc(size_t alignment, size_t size);
TP_API TP_MALLOC_ATTR void *tp_memalign(size_t alignment, size_t size);
TP_API int tp_posix_memalign(void **out, size_t alignment, size_t size);
TP_API TP_MALLOC_ATTR void *tp_valloc(size_t size);
TP_API TP_MALLOC_ATTR void *tp_pvalloc(size_t size);
TP_API size_t tp_malloc_usable_size(const void *p);
/* The usable size tp_malloc(size) gives (its size class; whole 32 KiB slots, then whole 2 MiB
 * pages, past 256 KiB): jemalloc's nallocx, SQLite's xRoundup. Blocks of 33-256 KiB that a
 * site writes little of may be given whole slots, more than this. */
TP_API size_t tp_good_size(size_t size);
/* Gives memory back now (glibc's malloc_trim, which is this function under LD_PRELOAD): the
 * calling thread's cached free blocks go back to their slabs, and the empty 2 MiB pages the
 * heap retains for reuse (retain_mb), beyond `pad` bytes of them, go back to the pool or the
 * OS without waiting for their decay. Pages that still hold a live block stay. Returns 1 when
 * a page went back, else 0. */
TP_API int tp_trim(size_t pad);

/* Nonzero when p points to the start of a live block handed out by tlbpack. */
TP_API int tp_owns(const void *p);

/* ---- co-use groups (explicit placement) -------------------------------------------- */
/* A group's objects share huge pages whatever their size class and apart from other groups:
 * one group per index or table in a database. tp_free() works on any group's pointer. */
typedef struct tp_group_s tp_group_t;

TP_API tp_group_t *tp_group_create(const char *name);
/* An ordered group (an arena): blocks up to TP_ARENA_MAX bytes are placed one after another in
 * allocation order whatever their size, so parts of a record allocated together share cache
 * lines as well as pages. Freed space comes back when a whole 64 KiB run of the group empties,
 * and at tp_group_destroy: meant for data that lives and dies together (an index, a table). */
TP_API tp_group_t *tp_group_create_arena(const char *name);
#define TP_ARENA_MAX 2032
TP_API TP_MALLOC_ATTR void *tp_group_malloc(tp_group_t *g, size_t size);
TP_API TP_MALLOC_ATTR void *tp_group_calloc(tp_group_t *g, size_t count, size_t size);
TP_API void *tp_group_realloc(tp_group_t *g, void *p, size_t size);
/* Frees every object of the group at once (an arena) and the group itself. */
TP_API void tp_group_destroy(tp_group_t *g);

typedef struct tp_group_stats_s {
  size_t objects;    /* live objects */
  size_t bytes;      /* live bytes (usable sizes) */
  size_t huge_pages; /* 2 MiB pages holding at least one of the group's objects */
} tp_group_stats_t;
TP_API void tp_group_stats(const tp_group_t *g, tp_group_stats_t *out);

/* ---- TLB warming --------------------------------------------------------------------- */
/* Hardware prefetchers stop at page boundaries and do not walk page tables: these issue one
 * software prefetch per page so translations are in the TLB before a phase needs them.
 * Warming hides walk latency; it does not add TLB capacity. */
TP_API void tp_warm(const void *p);
TP_API void tp_warm_range(const void *p, size_t n);
TP_API void tp_group_warm(const tp_group_t *g);

/* Pointer-chasing helper: walks a linked structure, warming `ahead` nodes in front of the one
 * handed to visit(). next(node) returns the following node or NULL. Returns nodes visited. */
TP_API size_t tp_chase_warm(const void *head, const void *(*next)(const void *node),
                            void (*visit)(const void *node, void *arg), void *arg,
                            unsigned ahead);

/* ---- visibility ---------------------------------------------------------------------- */
typedef struct tp_stats_s {
  size_t allocated_total;  /* bytes handed out over the process's life */
  size_t live_bytes;       /* bytes in live blocks (usable sizes) */
  size_t peak_live_bytes;
  size_t live_objects;
  size_t mapped_bytes;     /* bytes of heap pages currently backed */
  size_t pages_hugetlbfs;  /* 2 MiB pages now backed by each source */
  size_t pages_thp;
  size_t pages_4k;         /* 2 MiB pages backed by plain 4 KiB pages */
  size_t fallbacks;        /* times a source failed and the next one was used */
  size_t pages_returned;   /* 2 MiB pages given back to the pool / OS */
  double density;          /* live_bytes / mapped_bytes */
} tp_stats_t;

TP_API void tp_stats_get(tp_stats_t *out);
/* Prints the stats as text (json = 0) or one JSON object (json = 1). */
TP_API void tp_stats_print(FILE *out, int json);
/* Writes the heap's regions with their page sizes, in the format `tlbsim --regions` reads.
 * Returns 0 on success, -1 with errno set. */
TP_API int tp_regions_write(const char *path);

#ifdef __cplusplus
}
#endif
#endif
