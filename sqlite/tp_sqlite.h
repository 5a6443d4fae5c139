/* tlbpack-sqlite: SQLite's heap and page cache on tlbpack, through SQLite's own hooks.
 *
 *   #include <sqlite3.h>
 *   #include <tp_sqlite.h>
 *   int rc = tp_sqlite_install(TP_SQLITE_ALL);   (before sqlite3_initialize or any sqlite3_open)
 *
 * TP_SQLITE_MALLOC serves sqlite3_malloc and everything SQLite allocates (SQLITE_CONFIG_MALLOC)
 * from tlbpack's tp_* API; the program's own malloc is left alone. TP_SQLITE_PCACHE replaces
 * the page cache (SQLITE_CONFIG_PCACHE2): each cache (one per open database file of each
 * connection, one per temporary or in-memory database) keeps its pages in a tlbpack group of
 * its own, so that a database's pages share few huge pages and a cold cache never mixes with a
 * hot one. Link with `pkg-config --libs tlbpack-sqlite` (libtlbpack-sqlite carries tlbpack). */
#ifndef TP_SQLITE_H
#define TP_SQLITE_H

#include <stddef.h>

#include "tlbpack.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TP_SQLITE_MALLOC 1u /* sqlite3_mem_methods on tp_malloc/tp_free/... */
#define TP_SQLITE_PCACHE 2u /* sqlite3_pcache_methods2: one tlbpack group per cache */
#define TP_SQLITE_ALL (TP_SQLITE_MALLOC | TP_SQLITE_PCACHE)

/* Installs the hooks named in flags with sqlite3_config. Returns SQLITE_OK, or SQLite's own
 * error: SQLITE_MISUSE after sqlite3_initialize (SQLite then keeps its allocator and cache, and
 * says so through sqlite3_log), or for flags that name nothing known. Call it once, before
 * SQLite is initialized; it survives sqlite3_shutdown (SQLite keeps its configuration). */
TP_API int tp_sqlite_install(unsigned flags);

typedef struct tp_sqlite_stats_s {
  size_t caches;        /* live page caches */
  size_t pages;         /* pages in them (pinned or not) */
  size_t pinned;        /* of which SQLite holds pinned */
  size_t page_bytes;    /* usable bytes their groups hold: page buffers, records (our header and
                           SQLite's extra), hash tables */
  size_t huge_pages;    /* 2 MiB pages holding at least one of their blocks (tp_group_stats) */
  size_t recycled;      /* pages reused for another key since install */
  size_t freed;         /* pages given back to tlbpack since install (discard, shrink, truncate) */
  size_t rekeyed;       /* xRekey calls (pages moved, e.g. by auto_vacuum) */
  size_t truncated;     /* pages discarded by xTruncate */
} tp_sqlite_stats_t;
/* Totals over every live page cache. Safe from any thread; counts of caches that another
 * thread is using may be a moment old. */
TP_API void tp_sqlite_stats(tp_sqlite_stats_t *out);

/* Issues one prefetch per page of every live cache's group (tp_group_warm): the translations of
 * the caches' pages are in the TLB before a scan. Returns the caches warmed. */
TP_API size_t tp_sqlite_warm(void);

/* Calls fn for each live page cache with its group (for tp_group_warm / tp_group_stats of one
 * cache; NULL when tlbpack's group table was full), its page size and its page count; fn must
 * not open or close SQLite databases. */
TP_API void tp_sqlite_each_cache(void (*fn)(tp_group_t *group, int page_size, size_t pages, void *arg),
                                 void *arg);

#ifdef __cplusplus
}
#endif
#endif
