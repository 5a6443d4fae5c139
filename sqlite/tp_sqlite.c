/* SQLite's allocator and page cache on tlbpack (tp_sqlite.h).
 *
 * Page cache. One plain (unordered) tlbpack group per cache: a page's buffer (szPage bytes,
 * a size class of its own when szPage is a power of two: no padding) and its record (our
 * header, then SQLite's szExtra bytes) are two blocks of the cache's group, so one database's
 * pages and records share huge pages apart from every other cache's. Not an ordered group
 * (tp_group_create_arena): buffers are larger than TP_ARENA_MAX, and a cache frees and reuses
 * pages one at a time (eviction, discard, truncate), which an arena gives back only when a
 * whole run empties.
 *
 * Threads. SQLite never calls one cache's methods from two threads at once, in any threading
 * mode: a cache belongs to one pager, used under its connection's mutex (serialized), by one
 * thread at a time (multi-thread), or under the shared-cache mutex. So a cache needs no lock;
 * the list of caches (create, destroy, stats, warm) has one. tlbpack's group API is itself
 * thread-safe. The counts that tp_sqlite_stats reads from other threads are relaxed atomics. */
#define _GNU_SOURCE
#include "tp_sqlite.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- sqlite3_mem_methods --------------------------------------------------------------- */
static void *mem_malloc(int n) { return n <= 0 ? NULL : tp_malloc((size_t)n); }
static void mem_free(void *p) { tp_free(p); }
static void *mem_realloc(void *p, int n) { return n <= 0 ? NULL : tp_realloc(p, (size_t)n); }
static int mem_size(void *p) { return (int)tp_malloc_usable_size(p); }
static int mem_roundup(int n) {
  if (n <= 0) return 0;
  size_t r = tp_good_size((size_t)n);
  return r > INT32_MAX ? n : (int)r; /* SQLite never asks for 2 GiB; keep the int in range */
}
static int mem_init(void *arg) { return SQLITE_OK; }
static void mem_shutdown(void *arg) {}

static const sqlite3_mem_methods mem_methods = {mem_malloc, mem_free, mem_realloc, mem_size,
                                                mem_roundup, mem_init, mem_shutdown, NULL};

/* ---- sqlite3_pcache_methods2 ------------------------------------------------------------ */
typedef struct tp_page_s tp_page_t;
struct tp_page_s {
  sqlite3_pcache_page base; /* what SQLite holds: pBuf, pExtra (right after this record) */
  unsigned key;
  int pinned;
  tp_page_t *hnext;         /* hash chain */
  tp_page_t *lprev, *lnext; /* LRU list of unpinned pages (lnext: towards the oldest) */
};

typedef struct tp_cache_s tp_cache_t;
struct tp_cache_s {
  tp_group_t *group;        /* NULL when tlbpack's group table is full: tp_malloc's groups */
  int sz_page, sz_extra, purgeable;
  unsigned max_pages, pin_limit; /* xCachesize, and 90% of it: createFlag 1's limit */
  unsigned npage, npinned;  /* read by tp_sqlite_stats: relaxed atomics */
  unsigned nhash;           /* a power of two */
  unsigned max_key;         /* no page has a larger key (xTruncate is O(1) above it) */
  tp_page_t **hash;
  tp_page_t lru;            /* sentinel: lru.lnext newest ... lru.lprev oldest */
  tp_cache_t *prev, *next;  /* the list of live caches */
};

static pthread_mutex_t caches_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_cache_t *caches;
static size_t n_recycled, n_freed, n_rekeyed, n_truncated; /* atomics */
static unsigned next_cache_id;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define COUNT(x, n) __atomic_fetch_add(&(x), (n), __ATOMIC_RELAXED)

static void *cache_alloc(tp_cache_t *c, size_t n) { return c->group ? tp_group_malloc(c->group, n) : tp_malloc(n); }

static unsigned bucket(const tp_cache_t *c, unsigned key) { return (key * 2654435761u) & (c->nhash - 1); }

static void lru_unlink(tp_page_t *p) {
  p->lprev->lnext = p->lnext;
  p->lnext->lprev = p->lprev;
  p->lprev = p->lnext = NULL;
}

static void lru_push(tp_cache_t *c, tp_page_t *p) {
  p->lnext = c->lru.lnext;
  p->lprev = &c->lru;
  c->lru.lnext->lprev = p;
  c->lru.lnext = p;
}

static void hash_unlink(tp_cache_t *c, tp_page_t *p) {
  tp_page_t **pp = &c->hash[bucket(c, p->key)];
  while (*pp != p) pp = &(*pp)->hnext;
  *pp = p->hnext;
}

static void hash_insert(tp_cache_t *c, tp_page_t *p) {
  unsigned b = bucket(c, p->key);
  p->hnext = c->hash[b];
  c->hash[b] = p;
}

/* Doubles the table when it holds more pages than buckets; a failed allocation keeps the old
 * one (chains grow longer, nothing is lost). */
static void hash_grow(tp_cache_t *c) {
  unsigned n = c->nhash ? c->nhash * 2 : 256;
  tp_page_t **h = c->group ? tp_group_calloc(c->group, n, sizeof *h) : tp_calloc(n, sizeof *h);
  if (!h) return;
  tp_page_t **old = c->hash;
  unsigned nold = c->nhash;
  c->hash = h;
  c->nhash = n;
  for (unsigned i = 0; i < nold; i++)
    for (tp_page_t *p = old[i], *nx; p; p = nx) {
      nx = p->hnext;
      hash_insert(c, p);
    }
  tp_free(old);
}

static tp_page_t *lookup(const tp_cache_t *c, unsigned key) {
  if (!c->nhash) return NULL;
  tp_page_t *p = c->hash[bucket(c, key)];
  while (p && p->key != key) p = p->hnext;
  return p;
}

/* Removes an unpinned or pinned page from the cache and gives its memory back. */
static void page_drop(tp_cache_t *c, tp_page_t *p) {
  hash_unlink(c, p);
  if (p->pinned) STORE(c->npinned, c->npinned - 1);
  else lru_unlink(p);
  STORE(c->npage, c->npage - 1);
  tp_free(p->base.pBuf);
  tp_free(p);
  COUNT(n_freed, 1);
}

/* Evicts the oldest unpinned pages while the cache holds more than `keep` (purgeable only). */
static void evict_to(tp_cache_t *c, unsigned keep) {
  while (c->npage > keep && c->lru.lprev != &c->lru) page_drop(c, c->lru.lprev);
}

static sqlite3_pcache *pc_create(int sz_page, int sz_extra, int purgeable) {
  tp_cache_t *c = tp_calloc(1, sizeof *c);
  if (!c) return NULL;
  c->sz_page = sz_page;
  c->sz_extra = sz_extra;
  c->purgeable = purgeable;
  c->max_pages = c->pin_limit = purgeable ? 100 : ~0u; /* until xCachesize says */
  c->lru.lnext = c->lru.lprev = &c->lru;
  char name[48];
  pthread_mutex_lock(&caches_lock);
  snprintf(name, sizeof name, "sqlite pcache %u (%d B pages)", next_cache_id++, sz_page);
  pthread_mutex_unlock(&caches_lock);
  c->group = tp_group_create(name);
  hash_grow(c);
  if (!c->hash) {
    tp_group_destroy(c->group);
    tp_free(c);
    return NULL;
  }
  pthread_mutex_lock(&caches_lock);
  c->next = caches;
  if (caches) caches->prev = c;
  caches = c;
  pthread_mutex_unlock(&caches_lock);
  return (sqlite3_pcache *)c;
}

static void pc_cachesize(sqlite3_pcache *pc, int n) {
  tp_cache_t *c = (tp_cache_t *)pc;
  if (!c->purgeable) return;
  c->max_pages = n > 0 ? (unsigned)n : 0;
  c->pin_limit = c->max_pages - c->max_pages / 10;
  evict_to(c, c->max_pages);
}

static int pc_pagecount(sqlite3_pcache *pc) { return (int)((tp_cache_t *)pc)->npage; }

/* Takes the oldest unpinned page out of the cache for reuse under another key. */
static tp_page_t *recycle(tp_cache_t *c) {
  tp_page_t *p = c->lru.lprev;
  hash_unlink(c, p);
  lru_unlink(p);
  STORE(c->npage, c->npage - 1);
  COUNT(n_recycled, 1);
  return p;
}

/* A page for key: a recycled one when the cache is at its size, else two new blocks of the
 * group; when those cannot be had, createFlag 2 recycles whatever the size. */
static tp_page_t *page_new(tp_cache_t *c, unsigned key, int create_flag) {
  tp_page_t *p = NULL;
  int have_lru = c->lru.lprev != &c->lru;
  if (c->purgeable && have_lru && c->npage >= c->max_pages) {
    p = recycle(c);
  } else {
    void *buf = cache_alloc(c, (size_t)c->sz_page);
    p = buf ? cache_alloc(c, sizeof *p + (size_t)c->sz_extra) : NULL;
    if (p) {
      p->base.pBuf = buf;
      p->base.pExtra = p + 1;
    } else {
      tp_free(buf);
      if (create_flag != 2 || !have_lru) return NULL;
      p = recycle(c);
    }
  }
  /* SQLite's header in pExtra starts zeroed on a new page (pcache.c tests its pPage field). */
  memset(p->base.pExtra, 0, (size_t)c->sz_extra);
  p->key = key;
  p->pinned = 1;
  p->lprev = p->lnext = NULL;
  if (key > c->max_key) c->max_key = key;
  hash_insert(c, p);
  STORE(c->npage, c->npage + 1);
  STORE(c->npinned, c->npinned + 1);
  if (c->npage > c->nhash) hash_grow(c);
  return p;
}

static sqlite3_pcache_page *pc_fetch(sqlite3_pcache *pc, unsigned key, int create_flag) {
  tp_cache_t *c = (tp_cache_t *)pc;
  tp_page_t *p = lookup(c, key);
  if (p) {
    if (!p->pinned) {
      lru_unlink(p);
      p->pinned = 1;
      STORE(c->npinned, c->npinned + 1);
    }
    return &p->base;
  }
  if (create_flag == 0) return NULL;
  /* 1: only when it is easy: not with 90% of the cache pinned (SQLite then spills dirty pages
   * and asks again with 2). */
  if (create_flag == 1 && c->purgeable && c->npinned >= c->pin_limit) return NULL;
  p = page_new(c, key, create_flag);
  return p ? &p->base : NULL;
}

static tp_page_t *page_of(sqlite3_pcache_page *pg) { return (tp_page_t *)pg; }

static void pc_unpin(sqlite3_pcache *pc, sqlite3_pcache_page *pg, int discard) {
  tp_cache_t *c = (tp_cache_t *)pc;
  tp_page_t *p = page_of(pg);
  if (discard || (c->purgeable && c->npage > c->max_pages)) {
    page_drop(c, p);
    return;
  }
  p->pinned = 0;
  STORE(c->npinned, c->npinned - 1);
  lru_push(c, p);
}

static void pc_rekey(sqlite3_pcache *pc, sqlite3_pcache_page *pg, unsigned old_key, unsigned new_key) {
  tp_cache_t *c = (tp_cache_t *)pc;
  tp_page_t *p = page_of(pg);
  tp_page_t *q = lookup(c, new_key); /* never pinned (SQLite's contract): discarded */
  if (q && q != p) page_drop(c, q);
  COUNT(n_rekeyed, 1);
  hash_unlink(c, p);
  p->key = new_key;
  if (new_key > c->max_key) c->max_key = new_key;
  hash_insert(c, p);
}

static void truncate_page(tp_cache_t *c, tp_page_t *p) {
  page_drop(c, p);
  COUNT(n_truncated, 1);
}

/* Discards every page whose key is iLimit or more, pinned ones too (SQLite's contract: they are
 * implicitly unpinned). SQLite calls it at the end of every transaction with the database's
 * size: nothing to do unless the file shrank, and then the keys past it are looked up one by
 * one when they are fewer than the table's buckets. */
static void pc_truncate(sqlite3_pcache *pc, unsigned limit) {
  tp_cache_t *c = (tp_cache_t *)pc;
  if (limit > c->max_key) return;
  if (c->max_key - limit < c->nhash / 2) {
    for (unsigned k = limit;; k++) {
      tp_page_t *p = lookup(c, k);
      if (p) truncate_page(c, p);
      if (k == c->max_key) break;
    }
  } else {
    for (unsigned b = 0; b < c->nhash; b++)
      for (tp_page_t *p = c->hash[b], *nx; p; p = nx) {
        nx = p->hnext;
        if (p->key >= limit) truncate_page(c, p);
      }
  }
  c->max_key = limit ? limit - 1 : 0;
}

static void pc_destroy(sqlite3_pcache *pc) {
  tp_cache_t *c = (tp_cache_t *)pc;
  pthread_mutex_lock(&caches_lock);
  if (c->prev) c->prev->next = c->next;
  else caches = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_unlock(&caches_lock);
  COUNT(n_freed, c->npage);
  if (c->group) {
    tp_group_destroy(c->group); /* every page and the table at once */
  } else {
    for (unsigned b = 0; b < c->nhash; b++)
      for (tp_page_t *p = c->hash[b], *nx; p; p = nx) {
        nx = p->hnext;
        tp_free(p->base.pBuf);
        tp_free(p);
      }
    tp_free(c->hash);
  }
  tp_free(c);
}

/* Frees every unpinned page (sqlite3_db_release_memory, PRAGMA shrink_memory). */
static void pc_shrink(sqlite3_pcache *pc) {
  tp_cache_t *c = (tp_cache_t *)pc;
  if (c->purgeable) evict_to(c, 0);
}

static int pc_init(void *arg) { return SQLITE_OK; }
static void pc_shutdown(void *arg) {}

static const sqlite3_pcache_methods2 pcache_methods = {
    1, NULL, pc_init, pc_shutdown, pc_create, pc_cachesize, pc_pagecount, pc_fetch,
    pc_unpin, pc_rekey, pc_truncate, pc_destroy, pc_shrink};

/* ---- install, stats, warming ------------------------------------------------------------ */
int tp_sqlite_install(unsigned flags) {
  if (!flags || (flags & ~TP_SQLITE_ALL)) {
    sqlite3_log(SQLITE_MISUSE, "tp_sqlite_install: flags %#x name nothing known (TP_SQLITE_MALLOC %#x, "
                "TP_SQLITE_PCACHE %#x, TP_SQLITE_ALL)", flags, TP_SQLITE_MALLOC, TP_SQLITE_PCACHE);
    return SQLITE_MISUSE;
  }
  int rc = SQLITE_OK;
  if (flags & TP_SQLITE_MALLOC) rc = sqlite3_config(SQLITE_CONFIG_MALLOC, &mem_methods);
  if (rc == SQLITE_OK && (flags & TP_SQLITE_PCACHE)) rc = sqlite3_config(SQLITE_CONFIG_PCACHE2, &pcache_methods);
  return rc;
}

void tp_sqlite_each_cache(void (*fn)(tp_group_t *group, int page_size, size_t pages, void *arg), void *arg) {
  pthread_mutex_lock(&caches_lock);
  for (tp_cache_t *c = caches; c; c = c->next) fn(c->group, c->sz_page, LOAD(c->npage), arg);
  pthread_mutex_unlock(&caches_lock);
}

void tp_sqlite_stats(tp_sqlite_stats_t *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&caches_lock);
  for (tp_cache_t *c = caches; c; c = c->next) {
    size_t n = LOAD(c->npage);
    out->caches++;
    out->pages += n;
    out->pinned += LOAD(c->npinned);
    if (c->group) {
      tp_group_stats_t gs;
      tp_group_stats(c->group, &gs);
      out->page_bytes += gs.bytes;
      out->huge_pages += gs.huge_pages;
    } else {
      out->page_bytes += n * (tp_good_size((size_t)c->sz_page) + tp_good_size(sizeof(tp_page_t) + (size_t)c->sz_extra));
    }
  }
  pthread_mutex_unlock(&caches_lock);
  out->recycled = LOAD(n_recycled);
  out->freed = LOAD(n_freed);
  out->rekeyed = LOAD(n_rekeyed);
  out->truncated = LOAD(n_truncated);
}

static void warm_one(tp_group_t *g, int page_size, size_t pages, void *arg) {
  if (g && pages) {
    tp_group_warm(g);
    ++*(size_t *)arg;
  }
}

size_t tp_sqlite_warm(void) {
  size_t n = 0;
  tp_sqlite_each_cache(warm_one, &n);
  return n;
}
