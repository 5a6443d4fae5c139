/* The base of alloc/: what every layer may use. Compiler macros, the geometry (huge pages,
 * slots, the address map), size classes, the options, messages (diag.c), the one list pair,
 * locks (lock.c) and the live-byte counters (live.c). Not installed.
 *
 * alloc/ is built in layers, bottom first: base, policy (policy.h), types (types.h), OS
 * (prim.h), heap (heap.h), runs (runs.h), groups (group.h), cache (tcache.h), front
 * (front.h). A file includes its own layer's header and those below it, never one above:
 * alloc/layers.txt names each file's layer, and tests/alloc/layers.sh checks the includes.
 * internal.h includes every layer, for tests, tools and fuzzers. */
#ifndef TP_BASE_H
#define TP_BASE_H

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
 * slot bounds what a program pays per pair in memory (its pairs' first slabs, mostly empty,
 * fill its huge pages). Larger slots hold more back; smaller ones need slot masks wider than
 * 64 bits and gain little (docs/design.md, "Slots of 32 KiB"). */
#define TP_SLOT_SHIFT 15
#define TP_SLOT ((size_t)1 << TP_SLOT_SHIFT)
#define TP_SLOTS (TP_HPAGE / TP_SLOT) /* 64 */
#define TP_PAGE 4096
/* User addresses of x86-64 with 4-level page tables lie below 2^47: the address map covers
 * that much, and an address at or above it is none of tlbpack's. */
#define TP_VA_BITS 47
/* The largest block, half the user address space: a request above it fails at once, and no
 * arithmetic on a size up to it overflows. */
#define TP_LARGE_MAX ((size_t)1 << (TP_VA_BITS - 1))
#define TP_GIB_SHIFT 30 /* the address map's first level: 1 GiB */
#define TP_MAP_ENTRIES ((size_t)1 << (TP_VA_BITS - TP_GIB_SHIFT))
typedef uint64_t tp_slotmask_t; /* one bit per slot of an hpage */
static inline int _tp_slots_ctz(tp_slotmask_t m) { return __builtin_ctzll(m); }
static inline unsigned _tp_slots_count(tp_slotmask_t m) { return (unsigned)__builtin_popcountll(m); }
_Static_assert(TP_SLOTS == 8 * sizeof(tp_slotmask_t), "an hpage's slots are the bits of a mask");
#define TP_ALL_SLOTS (~(tp_slotmask_t)0)
/* Slots [slot, slot + n) of an hpage, 0 < n <= TP_SLOTS. */
#define TP_SLOT_RUN(slot, n) ((n) >= TP_SLOTS ? TP_ALL_SLOTS : ((((tp_slotmask_t)1 << (n)) - 1) << (slot)))

/* ---- size classes (sizeclass.c) ------------------------------------------------------ */
#define TP_NCLASSES 64
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
/* How many blocks a refill of class c's bin asks for: half its class's cap. */
static inline unsigned _tp_refill_want(unsigned c) {
  unsigned cap = _tp_classes[c].tcache_cap;
  return cap / 2 ? cap / 2 : 1;
}

#include "sitekey.h" /* _tp_class_of, site + class keys */

/* The fast path's bins by size: entries 0..64 by (size + 15) / 16 for sizes up to TP_FAST_MAX,
 * then eight entries per power of two above 1 KiB up to TP_FAST_BIG (the largest class a thread
 * caches; each class one or two of them), found from the size's top bits (_tp_fast_index): a malloc of 4 KiB hits like one of 32 B. */
#define TP_FAST_MAX 1024
#define TP_FAST_BIG 65536
#define TP_FAST_SMALL_N (TP_FAST_MAX / 16 + 1)
#define TP_FAST_CLASS_1K 19 /* _tp_class_of(TP_FAST_MAX) */
#define TP_FAST_N (TP_FAST_SMALL_N + 48) /* + eight entries per power of two, 1 KiB < size <= 64 KiB */
/* The fast entry of a size up to TP_FAST_BIG. */
static inline unsigned _tp_fast_index(size_t size) {
  if (size <= TP_FAST_MAX) return (unsigned)((size + 15) >> 4);
  size_t x = size - 1;
  unsigned e = 63u - (unsigned)__builtin_clzl(x); /* 10..15 */
  /* eight entries per power of two, k the three bits below the top one: the classes of 1-4
   * KiB and 32-64 KiB (four per power of two) take two consecutive entries each */
  return TP_FAST_SMALL_N + (e - 10) * 8 + (unsigned)((x >> (e - 3)) & 7);
}

extern uint8_t _tp_fast_class[TP_FAST_N] TP_INTERNAL;
/* The fast entries of class c: _tp_fast_lo[c] up to _tp_fast_end[c] (exclusive; equal when the
 * class is past TP_FAST_BIG). */
extern uint8_t _tp_fast_lo[TP_NCLASSES] TP_INTERNAL, _tp_fast_end[TP_NCLASSES] TP_INTERNAL;

/* ---- options (options.c) ------------------------------------------------------------- */
enum { TP_POOL_AUTO, TP_POOL_HUGETLBFS, TP_POOL_THP, TP_POOL_4K };
enum { TP_GROUP_SITE, TP_GROUP_THREAD, TP_GROUP_NONE };
enum { TP_NUMA_DEFAULT, TP_NUMA_LOCAL, TP_NUMA_INTERLEAVE, TP_NUMA_OFF };
enum { TP_STATS_OFF, TP_STATS_TEXT, TP_STATS_JSON };
enum { TP_GPAGES_AUTO, TP_GPAGES_OFF };
enum { TP_AFTER_FORK_THP, TP_AFTER_FORK_POOL };
enum { TP_FORK_COLLAPSE_THREAD, TP_FORK_COLLAPSE_ALLOC, TP_FORK_COLLAPSE_OFF };

#define TP_OPT_PATH 256
#define TP_MAX_GROUPS 1024 /* the group table (types.h); bounds the sites option */
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
  int after_fork;             /* TP_AFTER_FORK_*: where hpages come from once a fork moved pool pages */
  int fork_collapse;          /* TP_FORK_COLLAPSE_*: who collapses the hpages a fork's copy-on-write split */
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

/* ---- messages (diag.c) ------------------------------------------------------------- */
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

/* ---- locks (lock.c) ---------------------------------------------------------------- */
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


/* ---- live bytes (live.c) ----------------------------------------------------------- */
/* Bytes out of the slabs and runs (live, or waiting in a thread cache): changed where memory
 * moves between slabs and caches, and published by each thread in steps of 64 KiB, so the
 * peak is exact to within the caches' contents and 64 KiB a thread. */
extern _Atomic ptrdiff_t _tp_peak_live TP_INTERNAL;
extern _Atomic ptrdiff_t _tp_global_live TP_INTERNAL;
void _tp_stats_out(ptrdiff_t bytes) TP_INTERNAL;
void _tp_stats_out_flush(void) TP_INTERNAL; /* this thread's gathered changes, now */

#endif
