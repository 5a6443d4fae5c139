/* tlbpack internal types and cross-file functions (_tp_ prefix). Not installed.
 *
 * Memory flows OS -> huge pages (2 MiB, "hpages") -> slot runs (32 KiB slots, 64 per hpage)
 * -> slabs of one size class -> objects. All metadata lives out of band (meta.c), reached
 * from an address through a two-level map: 1 GiB blocks -> 512 hpage records.
 */
#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tlbpack.h"

#define TP_LIKELY(x) __builtin_expect(!!(x), 1)
#define TP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TP_INTERNAL __attribute__((visibility("hidden")))
#define TP_NOINLINE __attribute__((noinline))

#define TP_HPAGE_SHIFT 21
#define TP_HPAGE ((size_t)1 << TP_HPAGE_SHIFT)
#define TP_GIB ((size_t)1 << 30)
/* Slots of 32 KiB: every (group, class) pair starts with a slab of at least one slot, so the
 * slot bounds what a program pays per pair in memory (a program's pairs' first slabs, mostly
 * empty, filled its huge pages: 64 KiB slots held redis at 46.7 MiB against jemalloc's 38.9,
 * 32 KiB slots at 44.7, and the 13 programs of tlbbench at a memory geomean of 1.09x
 * jemalloc's against 1.07x; 16 KiB slots, with 128-bit masks, 1.06x but perl and lua
 * higher). */
#define TP_SLOT_SHIFT 15
#define TP_SLOT ((size_t)1 << TP_SLOT_SHIFT)
#define TP_SLOTS (TP_HPAGE / TP_SLOT) /* 64 */
#define TP_PAGE 4096
#define TP_BLOCK_SHIFT 30 /* the address map's first level: 1 GiB */
#define TP_MAP_ENTRIES ((size_t)1 << (47 - TP_BLOCK_SHIFT))
typedef uint64_t tp_slotmask_t; /* one bit per slot of an hpage */
static inline int _tp_slots_ctz(tp_slotmask_t m) { return __builtin_ctzll(m); }
static inline unsigned _tp_slots_count(tp_slotmask_t m) { return (unsigned)__builtin_popcountll(m); }
_Static_assert(TP_SLOTS == 8 * sizeof(tp_slotmask_t), "an hpage's slots are the bits of a mask");
#define TP_ALL_SLOTS (~(tp_slotmask_t)0)
/* Slots [slot, slot + n) of an hpage, 0 < n <= TP_SLOTS. */
#define TP_SLOT_RUN(slot, n) ((n) >= TP_SLOTS ? TP_ALL_SLOTS : ((((tp_slotmask_t)1 << (n)) - 1) << (slot)))

/* ---- size classes (sizeclass.c) ------------------------------------------------------ */
#define TP_NCLASSES 52
/* The entry of class c of group g in a thread's bin table (tp_tcache_t.bin_off), which a small
 * slab carries as its bin_idx. */
static inline uint32_t _tp_bin_index(unsigned g, unsigned c) { return (uint32_t)g * TP_NCLASSES + c; }
#define TP_SMALL_MAX ((size_t)256 << 10) /* largest slab class */
#define TP_MEDIUM_MAX (TP_HPAGE - TP_SLOT) /* larger requests get whole hpages */
/* Medium runs start at a multiple of the alignment up to this (64 KiB: a slot, or two); past
 * it, and past TP_MEDIUM_MAX, a block is a large run on whole hpages. */
#define TP_RUN_ALIGN_MAX ((size_t)64 << 10)

typedef struct tp_class_s {
  uint32_t size;   /* object size */
  uint32_t nobj;   /* objects per slab */
  uint8_t nslots;  /* slab length in slots */
  uint8_t nwords;  /* bitmap words */
  uint16_t tcache_cap;   /* a refill takes half of it (small classes: whole bitmap words up to it) */
  uint16_t tcache_limit; /* freed blocks a thread's bin holds before half go back (>= tcache_cap) */
  uint16_t tcache_grow;  /* what a bin that keeps overflowing may grow to (tcache.c, _tp_tbin_grow) */
  uint64_t recip;  /* _tp_obj_index(off, recip) == off / size for off < 2^32 */
} tp_class_t;

/* An object's index from its offset in its slab, one multiply instead of a divide: recip is
 * 2^64 / size rounded up (sizeclass.c, _tp_recip). The product's high 64 bits are off / size,
 * and its low 64 bits are below recip exactly when size divides off, for every off and size
 * below 2^32 (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019): the
 * free hit gets the index and the test that p starts a block from one `mul`. */
static inline uint64_t _tp_recip(uint32_t size) { return UINT64_MAX / size + 1; }
static inline uintptr_t _tp_obj_index(uintptr_t off, uint64_t recip) {
  return (uintptr_t)(((unsigned __int128)off * recip) >> 64);
}
/* Whether off is a multiple of the size whose recip this is (never for recip 0). */
static inline int _tp_obj_start(uintptr_t off, uint64_t recip) { return (uint64_t)((unsigned __int128)off * recip) < recip; }

extern tp_class_t _tp_classes[TP_NCLASSES] TP_INTERNAL;
void _tp_classes_init(void) TP_INTERNAL;

#include "sitekey.h" /* _tp_class_of, site + class keys */

/* ---- options (options.c) ------------------------------------------------------------- */
enum { TP_POOL_AUTO, TP_POOL_HUGETLBFS, TP_POOL_THP, TP_POOL_4K };
enum { TP_GROUP_SITE, TP_GROUP_THREAD, TP_GROUP_NONE };
enum { TP_NUMA_DEFAULT, TP_NUMA_LOCAL, TP_NUMA_INTERLEAVE, TP_NUMA_OFF };
enum { TP_STATS_OFF, TP_STATS_TEXT, TP_STATS_JSON };
enum { TP_GPAGES_AUTO, TP_GPAGES_OFF };

#define TP_OPT_PATH 256
typedef struct tp_options_s {
  int stats;
  int pool;
  int group;
  int numa;
  int verbose;
  size_t retain_bytes;
  unsigned site_groups;       /* bound on allocation-site groups */
  size_t exclusive_bytes;     /* a group gets hpages of its own past this many slab bytes */
  size_t start_bytes;         /* pool:auto: the heap's first hpages up to this size are on 4 KiB pages */
  size_t pool_max;            /* most hpages held from the hugetlbfs pool (SIZE_MAX: no cap) */
  int gpages;                 /* TP_GPAGES_*: 1 GiB pool pages when a 1 GiB pool exists */
  size_t gpage_bytes;         /* ... once the heap's backed hpages reach this many bytes */
  char regions_path[TP_OPT_PATH];
  char plan_path[TP_OPT_PATH];     /* plan:FILE (plan.c) */
  char profile_path[TP_OPT_PATH];  /* profile:FILE, the allocation log of libtlbpack-profile.so */
} tp_options_t;

extern tp_options_t _tp_opt TP_INTERNAL;
/* Parses a TLBPACK_CONF string into opt (defaults first). Warnings go to `warn` (may be NULL).
 * Returns the number of warnings. Pure: usable by unit tests and fuzzers. */
int _tp_options_parse(tp_options_t *opt, const char *conf, FILE *warn) TP_INTERNAL;
void _tp_options_defaults(tp_options_t *opt) TP_INTERNAL;
/* Key i of the option table, for tools that describe TLBPACK_CONF (`tlbpack run --help`):
 * its name, and its values in `words` ("a|b|c", "N" for a whole number, "PATH"). NULL past
 * the last key. */
const char *_tp_options_key(unsigned i, char *words, size_t n) TP_INTERNAL;

/* ---- messages (alloc.c) -------------------------------------------------------------- */
void _tp_message(const char *fmt, ...) TP_INTERNAL __attribute__((format(printf, 1, 2)));
_Noreturn void _tp_fatal(const char *fmt, ...) TP_INTERNAL __attribute__((format(printf, 1, 2)));

/* ---- intrusive doubly linked lists: the one pair every list uses ------------------------
 * `head` is the address of the list's first-element pointer; `next` and `prev` name the
 * element's link fields. */
#define TP_LIST_PUSH(head, x, next, prev)                                                      \
  do {                                                                                         \
    (x)->prev = NULL;                                                                          \
    (x)->next = *(head);                                                                       \
    if (*(head)) (*(head))->prev = (x);                                                        \
    *(head) = (x);                                                                             \
  } while (0)
#define TP_LIST_UNLINK(head, x, next, prev)                                                    \
  do {                                                                                         \
    if ((x)->prev) (x)->prev->next = (x)->next;                                                \
    else *(head) = (x)->next;                                                                  \
    if ((x)->next) (x)->next->prev = (x)->prev;                                                \
    (x)->next = (x)->prev = NULL;                                                              \
  } while (0)

/* ---- decisions (policy.c): pure functions of plain values ---------------------------- */
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

/* ---- locks --------------------------------------------------------------------------- */
typedef pthread_mutex_t tp_lock_t;
#define TP_LOCK_INIT PTHREAD_MUTEX_INITIALIZER
void _tp_lock_contended(tp_lock_t *l) TP_INTERNAL;
/* A free lock is one locked instruction; a held one is spun on briefly before the thread
 * sleeps (_tp_lock_contended): the critical sections are a few hundred instructions, and a
 * futex sleep and wake-up cost far more than that. */
static inline void _tp_lock(tp_lock_t *l) {
  if (__builtin_expect(pthread_mutex_trylock(l) != 0, 0)) _tp_lock_contended(l);
}
static inline void _tp_unlock(tp_lock_t *l) { pthread_mutex_unlock(l); }
static inline int _tp_trylock(tp_lock_t *l) { return pthread_mutex_trylock(l) == 0; }
static inline void _tp_lock_reinit(tp_lock_t *l) { pthread_mutex_init(l, NULL); }

/* ---- metadata allocator (meta.c): out-of-band, never returns memory ------------------ */
void *_tp_meta_alloc(size_t size) TP_INTERNAL;  /* zeroed, 64-byte aligned */
int _tp_meta_holds(uintptr_t a, size_t len) TP_INTERNAL; /* [a, a + len) in a metadata region */
void *_tp_heap_give_to_meta(void) TP_INTERNAL;   /* a 2 MiB hpage of the heap's reservation */
void _tp_meta_free(void *p, size_t size) TP_INTERNAL;
void *_tp_meta_map(size_t len) TP_INTERNAL; /* zeroed, on 4 KiB pages; kept for good (NULL: none) */
int _tp_meta_mapped(uintptr_t a, size_t len) TP_INTERNAL; /* [a, a + len) in one of those (tests) */
void _tp_meta_prefork(void) TP_INTERNAL;
void _tp_meta_postfork(int child) TP_INTERNAL;
size_t _tp_meta_bytes(void) TP_INTERNAL;
/* How much metadata there is and on which pages (read from /proc/self/smaps: stats only). */
typedef struct tp_meta_pages_s {
  size_t used_bytes;      /* handed out (meta_bytes) */
  size_t reserved_bytes;  /* address space of the metadata regions */
  size_t resident_bytes;  /* of which resident */
  size_t thp_bytes;       /* resident on transparent huge pages */
  size_t small_bytes;     /* resident on 4 KiB pages */
  size_t tlb_entries;     /* thp_bytes / 2 MiB + small_bytes / 4 KiB */
  size_t mappings;
} tp_meta_pages_t;
int _tp_meta_pages(tp_meta_pages_t *m) TP_INTERNAL;

/* ---- OS primitives (os.c, contract in prim.h) ---------------------------------------- */
#include "prim.h"

/* ---- slabs and objects --------------------------------------------------------------- */
enum { TP_SLAB_SMALL = 1, TP_SLAB_MEDIUM = 2, TP_SLAB_LARGE = 3, TP_SLAB_ARENA = 4 };
extern const uint8_t _tp_no_live[1] TP_INTERNAL; /* free_live of every slab but small ones */
#define TP_GRANULE 16
#define TP_ARENA_GRANULES (TP_SLOT / TP_GRANULE) /* an arena run is one slot */
#define TP_BIG_META (sizeof(tp_slab_t) + sizeof(uint64_t)) /* medium / large record */

typedef struct tp_hpage_s tp_hpage_t;
typedef struct tp_slab_s tp_slab_t;

struct tp_slab_s {
  /* What every free reads, in the record's first cache line: */
  uintptr_t base;        /* first object */
  uint64_t recip;
  uint8_t *free_live;    /* what the free hit reads: `live` for small slabs; for the others a
                          * static 0 byte, which would send them to the generic free like a dead
                          * block (their recip is 0: the hit's start test sends them first) */
  /* Small: group * TP_NCLASSES + cls, the entry of a thread's bin table (tp_tcache_t.bin_off)
   * that names the bin its blocks go to: the free hit's one load from the slab to the bin. */
  uint32_t bin_idx;
  uint32_t size;         /* object size (small), usable bytes (medium; large: 0 for its hpages,
                          * or a medium block's slots in an hpage of its own, runs.c) */
  uint32_t nobj;
  uint16_t cls;
  uint16_t group;        /* the group whose bins this slab belongs to */
  uint8_t kind;
  uint8_t nslots;        /* small / medium: run length in slots */
  uint8_t first_slot;
  uint8_t zeroed;        /* medium / large: memory known to be zero */
  /* The thread cache that last filled from it (written under its lane's lock, only when it
   * changes): pick_partial keeps threads to slabs of their own, and the free hit caches a
   * block only in that thread; another thread's free sends it back (remote bins), so a block
   * is never reused by a thread other than the one whose slab it sits in. The free hit reads
   * it without the lock: a stale value only sends a free the other way, both correct. */
  const struct tp_tcache_s *filler;
  /* All ones where a free by a thread other than the filler goes to the remote bin
   * (_tp_policy_free_remote: small slabs of blocks under 64 B), else 0: the free hit tests
   * ((filler ^ tc) & remote_mask) with one branch (alloc.c, free_in_slab). Cleared for good
   * by the first free of a consumer (_tp_policy_free_remote_stop, alloc.c free_small_slow). */
  uintptr_t remote_mask;
  /* The rest the free hit does not read. */
  /* One byte per object, 1 = out of the slab (handed to the program, or in a thread cache:
   * a cached block holds its tag, _tp_block_cached). Written only by refills (1) and flushes
   * (0), a word's 64 blocks at a time, so the frees and mallocs of threads handing blocks over
   * only read these lines. Bytes, not bits: distinct objects never share a memory location. */
  uint8_t *live;
  tp_hpage_t *hp;        /* first hpage */
  uint32_t nhpages;      /* large: run length in hpages */
  uint32_t tail_unused;  /* large: bytes of its last hpage the block did not ask for (start_kb) */
  uint32_t meta_size;    /* bytes of this record (released with it) */
  uint8_t on_4k;         /* large: on 4 KiB pages because of its site (runs.c): a sample, a run
                          * measured when freed, or one not measured (0: not on them) */
  uint32_t held_kb;      /* large on 4 KiB pages: KiB its hpages held when it took them (retained) */
  uintptr_t site;        /* medium / large: the call site that asked for it (0: none known) */
  /* Protected by the lock of the lane it is in (`lane`): */
  tp_slab_t *next, *prev;
  uint32_t navail;       /* objects in the slab (not in any thread cache, not live) */
  uint32_t avail_hint;   /* first bitmap word that may have an available object */
  uint8_t in_partial;
  uint8_t nwords;
  _Atomic uint8_t lane;  /* the lane of its group's bin whose list and lock it is under: moved
                          * only with both lanes locked (slab.c) */
  _Atomic uint32_t nlive; /* arena: live blocks (any thread frees) */
  uint64_t *avail;       /* 1 = available in the slab (its lane's lock) */
  uint64_t data[];       /* avail words, then (from a cache line) live bytes */
};

/* hpage states */
enum {
  TP_HP_NONE = 0,  /* not part of the heap */
  TP_HP_FREE,      /* reserved address space, not backed */
  TP_HP_EMPTY,     /* backed, nothing carved (retained for reuse) */
  TP_HP_ACTIVE,    /* carved into slot runs */
  TP_HP_LARGE,     /* first hpage of a large object */
  TP_HP_LARGE_TAIL
};
/* TP_SRC_HUGETLB: the hugetlbfs pool, mapped with MAP_HUGETLB (see _tp_os_discover). */
/* TP_SRC_1G: one of the 512 hpages of a 1 GiB pool page (the heap takes those a GiB at a
 * time, past gpage_mb of heap; they are kept until exit: see heap.c). */
enum { TP_SRC_NONE = 0, TP_SRC_HUGETLB, TP_SRC_THP, TP_SRC_4K, TP_SRC_1G, TP_SRC_COUNT };

struct tp_hpage_s {
  uint8_t state;
  uint8_t source;
  uint8_t node;
  uint8_t listed;        /* which list holds it (TP_LIST_*) */
  uint8_t start;         /* on 4 KiB pages because the heap was small (promoted once it grows) */
  uint8_t window;        /* os.c: inside a hugetlb-file mapping (a window), claimed or not */
  uint8_t tail4k;        /* the last hpage of a large run that uses little of it, on 4 KiB
                          * pages (_tp_policy_large_tail_4k): given back when emptied */
  uint8_t lazy;          /* on the pool, reserved, faulted in as touched (_tp_os_back_lazy) */
  uint16_t owner;        /* group owning this hpage's free slots (0 = shared) */
  uint16_t nused;        /* slots in use */
  uint32_t held_kb;      /* a large run's hpage on 4 KiB pages (tail4k TP_RUN_ALL_4K): KiB in
                          * memory when its run was freed (0: fresh); what it counts against
                          * retain_mb, and what the next run on it did not write */
  tp_slotmask_t used_mask;  /* bit i: slot i carved */
  tp_slotmask_t fresh_mask;  /* bit i: slot i untouched since backing (reads as zero) */
  tp_slotmask_t side_mask;   /* bit i: slot i was last given back by a thread of side 1
                              * (tp_tcache_t.side): a new run prefers its side's slots (runs.c) */
  tp_slab_t **slot_slab;  /* its TP_SLOTS entries in the block's flat slab map */
  tp_hpage_t *next, *prev;
  uintptr_t addr;
  uint64_t last_use;     /* heap clock when it became empty */
  uint64_t last_ms;      /* and the time (_tp_os_hooks.now_ms) */
};

enum { TP_LIST_NONE = 0, TP_LIST_FREE, TP_LIST_EMPTY, TP_LIST_FILLER };

/* One per GiB of address space: the slab of every slot, flat (what free reads), then the
 * hpage records. */
#define TP_BLOCK_SLOTS (1u << (TP_BLOCK_SHIFT - TP_SLOT_SHIFT))
typedef struct tp_block_s {
  tp_slab_t *slab[TP_BLOCK_SLOTS];
  tp_hpage_t hp[1u << (TP_BLOCK_SHIFT - TP_HPAGE_SHIFT)];
} tp_block_t;
extern tp_block_t *_tp_map[TP_MAP_ENTRIES] TP_INTERNAL;

/* The slab holding address p, or NULL (not tlbpack's, or no slab there). */
/* Addresses past the 47-bit user space wrap around the map: the slab found (if any) then does
 * not hold them, which the caller's bounds check on the slab reports. */
/* The slab of address a in its GiB's block b (NULL: no slab there). */
static inline tp_slab_t *_tp_block_slab(const tp_block_t *b, uintptr_t a) {
  return __atomic_load_n(&b->slab[(a >> TP_SLOT_SHIFT) & (TP_BLOCK_SLOTS - 1)], __ATOMIC_ACQUIRE);
}

static inline tp_slab_t *_tp_slab_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  tp_block_t *b = _tp_map[(a >> TP_BLOCK_SHIFT) & (TP_MAP_ENTRIES - 1)];
  if (TP_UNLIKELY(b == NULL)) return NULL;
  return _tp_block_slab(b, a);
}

/* The block of address a's GiB, NULL past the user address space or where the heap has none. */
static inline tp_block_t *_tp_block_of(uintptr_t a) { return TP_UNLIKELY(a >> 47) ? NULL : _tp_map[a >> TP_BLOCK_SHIFT]; }

static inline tp_hpage_t *_tp_hpage_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  tp_block_t *b = _tp_block_of(a);
  if (TP_UNLIKELY(b == NULL)) return NULL;
  return &b->hp[(a >> TP_HPAGE_SHIFT) & ((1u << (TP_BLOCK_SHIFT - TP_HPAGE_SHIFT)) - 1)];
}

/* ---- the hpage filler: a group's hpages bucketed by slots used (filler.c) ------------
 * Pure bookkeeping over tp_hpage_t records: unit-testable at fake addresses. */
typedef struct tp_filler_s {
  tp_hpage_t *bucket[TP_SLOTS + 1]; /* by nused; bucket[TP_SLOTS] holds full hpages */
  uint64_t nonempty;                /* bit u: bucket[u] holds an hpage (u < TP_SLOTS) */
  size_t hpages;
  size_t used;                      /* slots used in its hpages */
} tp_filler_t;

int _tp_slots_find_run(tp_slotmask_t used_mask, unsigned n); /* first index of n free slots, -1 */
/* The same among runs that start at a multiple of `step` slots (a power of two). */
int _tp_slots_find_run_step(tp_slotmask_t used_mask, unsigned n, unsigned step);
void _tp_filler_insert(tp_filler_t *f, tp_hpage_t *h) TP_INTERNAL;
void _tp_filler_remove(tp_filler_t *f, tp_hpage_t *h) TP_INTERNAL;
/* The fullest hpage with a run of n free slots, or NULL. */
tp_hpage_t *_tp_filler_pick(tp_filler_t *f, unsigned n, int *slot) TP_INTERNAL;
/* The same for a run that starts at a multiple of `step` slots (a power of two). */
tp_hpage_t *_tp_filler_pick_step(tp_filler_t *f, unsigned n, unsigned step, int *slot) TP_INTERNAL;
/* The same among hpages with min_used to max_used slots used, those on 4 KiB pages left out
 * when skip_4k. */
tp_hpage_t *_tp_filler_pick_within(tp_filler_t *f, unsigned n, int min_used, int max_used, int skip_4k,
                                   int *slot) TP_INTERNAL;
/* Marks slots [slot, slot+n) used (u=1) or free (u=0), keeping the filler's buckets right. */
void _tp_filler_update(tp_filler_t *f, tp_hpage_t *h, unsigned slot, unsigned n, int u) TP_INTERNAL;

/* ---- groups (group.c) ---------------------------------------------------------------- */
#define TP_MAX_GROUPS 1024
#define TP_SHARED_GROUP 0

/* A group's small class has a bin in two lanes, one per thread side (tp_tcache_t.side, given
 * in turn as threads start): a thread fills from its side's lane, and a slab's blocks go back
 * to the lane the slab is in (tp_slab_t.lane). Two threads allocating side by side from one
 * group take and return blocks under locks, lists and counters of their own (two threads
 * bursting 10000 blocks of 8-128 B at one site spent 5.4 ns of 44 per malloc + free in the
 * shared bin's lock, against 1.3 with a group per thread). A single thread uses one lane; a
 * lane with no slab to give takes one from the other lane (slab.c). */
typedef struct tp_lane_s {
  tp_lock_t lock;
  tp_slab_t *partial;    /* slabs with available objects */
  size_t slabs;          /* read without the lock by the other lane and the policies: a hint */
  size_t navail;         /* objects available in its slabs (read without the lock by
                          * _tp_policy_borrow_shared: a hint) */
  uint64_t last_fill;    /* _tp_refill_clock at the last fill */
  uint32_t nempty;       /* slabs on `partial` with every object available: kept for the
                          * lane's next refills (_tp_policy_release_empty_slab) */
} tp_lane_t;
#define TP_LANES 2

struct tp_group_s {
  /* What the allocation paths read and rarely change: */
  uint16_t id;
  uint8_t explicit_;     /* created with tp_group_create */
  uint8_t exclusive;     /* owns its hpages (else slabs come from the shared hpages) */
  uint8_t on_4k;         /* its hpages are on 4 KiB pages, never collapsed (_tp_group_4k) */
  uint8_t grown;         /* it filled a start page while the heap was young: its hpages are huge
                          * pages from then on, as past start_kb (heap.c, _tp_heap_group_grows) */
  uint8_t ordered;       /* an arena: small blocks in allocation order (arena.c) */
  _Atomic uint8_t idle;  /* group:thread: its thread has exited and no new one took it yet */
  /* Bit i: lane i has filled. A lane never used is never read (its lines stay cold and, in a
   * process with one thread, its pages untouched): the other lane and the policies look at
   * it only once its bit is set (one thread of 64 sites ran 3% slower reading them). */
  _Atomic uint8_t lanes_used;
  _Atomic uint32_t gen;  /* bumped by destroy: thread caches drop stale entries */
  uintptr_t site;        /* allocation site for site groups */
  /* Site adoption (alloc.c): a site group that keeps needing fresh memory while the thread
   * holds freed blocks of an idle site group joins that group (`alias`): one site filled a
   * structure, another replaces its entries, and the space stays in use. */
  _Atomic uint16_t alias;
  _Atomic uint16_t vote_for;
  _Atomic uint32_t votes;       /* consecutive votes for vote_for (written when it changes) */
  char name[48];
  /* What threads write as they allocate, from the next line on: every refill of a site group
   * reads `alias` (group.c, _tp_site_group), and every free another thread makes into the
   * group's slabs reads `gen` and `idle`. */
  _Alignas(64) _Atomic size_t slab_bytes;
  _Atomic uint64_t last_refill; /* _tp_refill_clock at the group's last refill */
  /* By lane, bit c: lane (lane, c) keeps empty slabs (nempty > 0; written under that lane's
   * lock when it changes), for _tp_bin_sweep to find without reading the lanes. */
  _Atomic uint64_t kept[TP_LANES];
  tp_lock_t arena_lock;
  tp_slab_t *arena_cur;  /* the run being filled (arena_lock) */
  tp_hpage_t *young_hp;  /* while not exclusive: the shared hpage it fills first; an explicit
                          * group's first hpage while on 4 KiB pages (heap lock) */
  tp_slab_t *larges;     /* medium/large objects (heap lock), for destroy and stats */
  tp_filler_t filler;    /* hpages this group owns (heap lock) */
  /* By lane, then class: a program with one thread never touches the second lanes. */
  tp_lane_t lanes[TP_LANES][TP_NCLASSES];
};

_Static_assert(offsetof(struct tp_group_s, id) == 0, "a group starts with its id");
_Static_assert(TP_NCLASSES <= 64, "a group's kept masks have a bit per class");
/* The id at the start of a group handle from the program, read as bytes: a pointer that is not
 * a group may not be aligned as one (a group's written fields start a cache line of their
 * own), so it is read as a group only once _tp_groups[id] names it (group.c, checked). */
static inline unsigned _tp_group_handle_id(const tp_group_t *g) {
  uint16_t id;
  memcpy(&id, (const void *)g, sizeof id);
  return id;
}
extern tp_group_t *_tp_groups[TP_MAX_GROUPS] TP_INTERNAL;
/* Over the lanes marked used: the objects available in the slabs of class c of g (slabs = 0),
 * or its slabs (slabs = 1), read without the locks: hints. */
static inline size_t _tp_bin_total(const tp_group_t *g, unsigned c, int slabs) {
  unsigned used = atomic_load_explicit(&g->lanes_used, memory_order_relaxed);
  size_t n = 0;
  for (unsigned i = 0; i < TP_LANES; i++)
    if (used & (1u << i)) n += __atomic_load_n(slabs ? &g->lanes[i][c].slabs : &g->lanes[i][c].navail, __ATOMIC_RELAXED);
  return n;
}
extern _Atomic uint64_t _tp_refill_clock TP_INTERNAL;
#define TP_IDLE_REFILLS 64 /* a site group that has not refilled in this many refills is idle */
/* Each thread adds its refills to the clock TP_CLOCK_BATCH at a time: threads refilling side by
 * side do not write its line at every refill (the clock is read to within a few batches). */
#define TP_CLOCK_BATCH 8
#define TP_ADOPT_VOTES 4
#define TP_LEND_REFILLS 256 /* an exclusive group that has not refilled in this many lends its room */
extern tp_group_t _tp_shared_group TP_INTERNAL;
void _tp_groups_init(void) TP_INTERNAL;
/* One past the highest group id ever given: loops over the groups stop there (heap.c). */
unsigned _tp_groups_end(void) TP_INTERNAL;
/* The group of allocation site `site`; *young is set while the site allocates from the shared
 * group because it has not yet shown that it keeps memory. */
unsigned _tp_site_group(uintptr_t site, int *young) TP_INTERNAL;
/* The group whose hpages stay on 4 KiB pages (made on first use; TP_SHARED_GROUP if none can be). */
unsigned _tp_group_4k(void) TP_INTERNAL;
/* A young site is about to refill a cache of the shared group with `bytes`: counts its demand,
 * and returns the group it allocates from now (its own, once it has earned one). */
unsigned _tp_site_refill(uintptr_t site, size_t bytes) TP_INTERNAL;
unsigned _tp_thread_group(void) TP_INTERNAL;
/* Placement plans (plan.c): loads plan:FILE at start-up (one warning and no plan on any
 * error), and gives the group a planned site belongs to (TP_SHARED_GROUP: not planned). */
void _tp_plan_load(const char *path) TP_INTERNAL;
unsigned _tp_plan_group(uintptr_t key) TP_INTERNAL;
/* Whether the plan names site ra by size (`site ... size N`): ra is then split by class. */
int _tp_plan_splits(uintptr_t ra) TP_INTERNAL;
/* The key group:site places a small allocation of class c at site ra under: ra, or ra + c when
 * ra is a wrapper (sitekey.h) or the plan names it by size. Counts ra's classes (slow path). */
uintptr_t _tp_site_key(uintptr_t ra, unsigned c) TP_INTERNAL;
/* Whether site ra is split into site + class keys. */
int _tp_site_is_split(uintptr_t ra) TP_INTERNAL;
/* Stats: distinct return addresses seen, how many of them are split by class, and the
 * site + class keys they were split into. */
void _tp_site_counts(unsigned *sites, unsigned *split, unsigned *class_keys) TP_INTERNAL;
/* An exited thread's group goes to the next new thread (its pages and slabs are reused). */
void _tp_thread_group_release(unsigned id) TP_INTERNAL;
/* Counts blocks dropped without free (tp_group_destroy) as freed. */
void _tp_tcache_count_dropped(size_t objects, size_t bytes) TP_INTERNAL;
void _tp_groups_prefork(void) TP_INTERNAL;
void _tp_groups_postfork(int child) TP_INTERNAL;

/* ---- heap: address space, backing, hpage lists (heap.c) ------------------------------ */
extern tp_lock_t _tp_heap_lock TP_INTERNAL;
void _tp_heap_init(void) TP_INTERNAL;
/* heap.c: retained empty pool pages (not 1 GiB ones) go back to the pool (heap lock held). */
void _tp_heap_release_empty_pool(void) TP_INTERNAL;
/* fork.c: the heap lock held across fork(), and every pool page of the heap moved onto
 * anonymous memory first: no hugetlbfs page is shared with a child. */
void _tp_heap_prefork(void) TP_INTERNAL;
void _tp_heap_postfork(int child) TP_INTERNAL;
/* Calls fn for every heap hpage record in address order (heap lock held by caller). */
void _tp_heap_foreach(void (*fn)(tp_hpage_t *h, void *arg), void *arg) TP_INTERNAL;

/* The hpage layer that runs.c carves runs from; every call with the heap lock held. */
extern size_t _tp_heap_used_bytes TP_INTERNAL; /* slot runs and large runs carved now */
/* One backed, empty hpage (a retained one first, then address space); `small`: a new one on
 * 4 KiB pages. NULL when even 4 KiB pages fail. */
tp_hpage_t *_tp_hpage_get(int small) TP_INTERNAL;
/* The same, on 4 KiB pages whatever it is: a retained one on 4 KiB pages, else a new one. */
#define TP_HPAGE_4K_ONLY 2
/* The same, a new one on a huge page even while the heap starts small (a grown group's). */
#define TP_HPAGE_HUGE 3
/* An hpage with nothing left on it: retained, or given back beyond `budget` bytes of retained
 * empty pages (the oldest go first); _tp_hpage_give_back gives it back whatever the budget. */
void _tp_hpage_empty(tp_hpage_t *h, size_t budget) TP_INTERNAL;
void _tp_hpage_give_back(tp_hpage_t *h) TP_INTERNAL;
/* An hpage on 4 KiB pages collapsed into a huge page (THP), counted as one; 0 on success. */
int _tp_hpage_collapse(tp_hpage_t *h) TP_INTERNAL;
/* The address of n reserved, unused hpages aligned to `align` (on the lists, or new address
 * space past the cursor, which moves past them); 0 when no address space is left. `unbacked`:
 * none retained backed (a run on 4 KiB pages leaves the retained huge pages to the others). */
uintptr_t _tp_heap_unused_run(size_t n, size_t align, int unbacked) TP_INTERNAL;
/* Whether the heap still starts small (pool:auto, under start_kb with `adding` bytes more: its
 * hpages on 4 KiB pages); heap lock. */
int _tp_heap_starting(size_t adding) TP_INTERNAL;
/* Takes hpages [a, a + n hpages) for a large run: backs the unbacked ones (`adding`: the bytes
 * the run adds, for the page source; `lazy`: on the pool, reserved at once and faulted in as
 * touched; `tail4k`: 1, the last on 4 KiB pages if not backed already; TP_RUN_ALL_4K, every
 * one, those retained on huge pages given back first; TP_RUN_FRESH_4K, every one on 4 KiB
 * pages never touched, all retained ones given back first), marks the first the run's head
 * when `head` and the others its tail, and clears *zero when one held data before. -1 when
 * even 4 KiB pages fail: every hpage goes back where it was. */
#define TP_RUN_ALL_4K 2
#define TP_RUN_FRESH_4K 3
int _tp_heap_take_run(uintptr_t a, size_t n, size_t adding, int head, int tail4k, int lazy, int *zero) TP_INTERNAL;
/* Whether the hpages [end, new_end) after a large run are reserved and unused, so that it can
 * grow over them (never-used ones at the cursor: the cursor moves past them); 1 if so. */
int _tp_heap_extend_run(uintptr_t end, uintptr_t new_end) TP_INTERNAL;
/* Past start (the heap's, or its owner's: `grown`), a start page holding data (heap.c) that a
 * slot run for group g is about to be carved on is collapsed into a huge page first, and so is
 * the shared start page g filled while young (its young_hp), if it holds data; heap lock. */
void _tp_heap_start_carve(tp_hpage_t *h, const tp_group_t *g) TP_INTERNAL;
/* Whether group g, about to take a new hpage while the heap starts small, has grown: it has
 * filled a start page (3/4 of it touched), which is collapsed then; its hpages are huge pages
 * from then on (heap lock). */
int _tp_heap_group_grows(tp_group_t *g) TP_INTERNAL;
/* Takes out of `holes` (free slots) and `pages` the hpages still on 4 KiB start pages, whose
 * free slots cost nothing until touched. */
void _tp_heap_start_holes(size_t *holes, size_t *pages) TP_INTERNAL;

/* Data on 4 KiB pages (stats.c; the stats hpages_4k_live, live_4k_bytes, hpages_4k_start):
 * hpages on 4 KiB pages holding blocks the program has, the bytes of those blocks, and of those
 * hpages the slab pages of groups that are not kept on 4 KiB pages by design (the sparse
 * buffers' group, an explicit group's first page): start pages, which past start are collapsed
 * as soon as a run is carved on them (heap.c, _tp_heap_start_carve). */
typedef struct { size_t hpages, bytes, young; } tp_live_4k_t;
void _tp_stats_live_4k(tp_live_4k_t *out) TP_INTERNAL;

typedef struct tp_heap_counters_s {
  size_t pages_by_source[TP_SRC_COUNT]; /* backed hpages now */
  size_t fallbacks;
  size_t pages_returned;
  size_t reserved_bytes;
  size_t fork_unshared;   /* pool pages moved onto anonymous memory before a fork (fork.c) */
  size_t forks_unshared;  /* forks before which the heap held pool pages, and moved them */
  size_t fork_unshare_failed; /* pool pages a fork could not move (no memory for the copy) */
  size_t promoted;        /* hpages the heap started on, collapsed into THP once it grew */
  size_t large_4k;        /* medium and large runs put on 4 KiB pages because their site fills
                           * them in part (stats large_runs_4k) */
  size_t pages_by_node[8];
} tp_heap_counters_t;
extern tp_heap_counters_t _tp_heap_ctr TP_INTERNAL;

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
void _tp_run_release(tp_slab_t *s) TP_INTERNAL;
/* A medium or large block's usable bytes: a large one's hpages (may exceed 32 bits: size 0),
 * else its slots (a medium block in an hpage of its own on 4 KiB pages keeps them). */
static inline size_t _tp_run_usable(const tp_slab_t *s) {
  return s->kind == TP_SLAB_LARGE && s->size == 0 ? (size_t)s->nhpages * TP_HPAGE : s->size;
}
/* malloc_trim (tp_trim): the retained empty hpages beyond `keep` bytes go back now, the
 * oldest first, 1 GiB pages aside; returns how many went back. */
size_t _tp_heap_trim(size_t keep) TP_INTERNAL;
/* Bytes of the empty hpages the heap retains for reuse (mallinfo's keepcost). */
size_t _tp_heap_retained_bytes(void) TP_INTERNAL;
/* Grows a medium run (one block, its caller's) in place to n slots when the slots after it in
 * its hpage are free, or a large run to n hpages when the hpages after it are reserved and
 * unused; returns 1 when it did (the run is then that long), 0 when it could not. */
int _tp_run_grow(tp_slab_t *s, size_t n) TP_INTERNAL;

/* ---- slabs and bins (slab.c) --------------------------------------------------------- */
/* Moves at least `want` objects (when memory allows) and at most `room` of class c of group g
 * into out[] (as tcache entries, the ones taken last first: a cache popping from the top
 * hands them out in the order taken); a slow-start refill (`slow`) takes just `want`, except
 * whole words of another thread's slab. `room` is at most 64 (TP_FILL_MAX). */
typedef struct tp_entry_s { void *p; } tp_entry_t;
/* The blocks are tagged with `tag` (the bin they go to), except the entries with bit 0. */
unsigned _tp_bin_fill(tp_group_t *g, unsigned c, tp_entry_t *out, unsigned want, unsigned room, int slow,
                      const void *tag) TP_INTERNAL;
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
/* Frees p from arena run s; returns its usable size. Aborts on an invalid or double free. */
size_t _tp_arena_free(tp_slab_t *s, void *p) TP_INTERNAL;
size_t _tp_arena_usable(const tp_slab_t *s, const void *p) TP_INTERNAL;
#define TP_ARENA_META (sizeof(tp_slab_t) + TP_ARENA_GRANULES)

/* ---- thread caches (tcache.c): tcache.h ---------------------------------------------- */
#include "tcache.h"

/* ---- init (init.c) ------------------------------------------------------------------- */
extern _Atomic int _tp_ready TP_INTERNAL; /* 0 none, 1 core ready, 2 fully ready */
void _tp_init(void) TP_INTERNAL;

/* ---- stats (stats.c) ----------------------------------------------------------------- */
/* Bytes out of the slabs and runs (live, or waiting in a thread cache): changed where memory
 * moves between slabs and caches, and published by each thread in steps of 64 KiB, so the
 * peak is exact to within the caches' contents and 64 KiB a thread. */
extern _Atomic ptrdiff_t _tp_peak_live TP_INTERNAL;
extern _Atomic ptrdiff_t _tp_global_live TP_INTERNAL;
void _tp_stats_out(ptrdiff_t bytes) TP_INTERNAL;
void _tp_stats_out_flush(void) TP_INTERNAL; /* this thread's gathered changes, now */
void _tp_atexit_report(void) TP_INTERNAL;
void _tp_stats_keep_stderr(void) TP_INTERNAL;

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
