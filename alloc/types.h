/* The records the layers share (mimalloc's types.h): slab and run records, hpage records and
 * the address map that finds them, the filler, groups and their lanes, and a thread's cache.
 * Data and the inline accessors that read it; no layer's functions.
 *
 * Memory flows OS -> huge pages (2 MiB, "hpages") -> slot runs (32 KiB slots, 64 per hpage)
 * -> slabs of one size class -> objects. All metadata lives out of band (meta.c), reached
 * from an address through a two-level map: a record per GiB (tp_gib_t) -> 512 hpage records. */
#ifndef TP_TYPES_H
#define TP_TYPES_H

#include "base.h"

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
  tp_slab_t **slot_slab;  /* its TP_SLOTS entries in its GiB's flat slab map */
  tp_hpage_t *next, *prev;
  uintptr_t addr;
  uint64_t last_use;     /* heap clock when it became empty */
  uint64_t last_ms;      /* and the time (_tp_os_hooks.now_ms) */
};

enum { TP_LIST_NONE = 0, TP_LIST_FREE, TP_LIST_EMPTY, TP_LIST_FILLER };

/* The page map's record of one GiB of address space: the slab of every slot, flat (what free
 * reads), then the hpage records. "Block" names a program's allocation, never this. */
#define TP_GIB_SLOTS (1u << (TP_GIB_SHIFT - TP_SLOT_SHIFT))
typedef struct tp_gib_s {
  tp_slab_t *slab[TP_GIB_SLOTS];
  tp_hpage_t hp[1u << (TP_GIB_SHIFT - TP_HPAGE_SHIFT)];
} tp_gib_t;
extern tp_gib_t *_tp_map[TP_MAP_ENTRIES] TP_INTERNAL;

/* The slab holding address p, or NULL (not tlbpack's, or no slab there). */
/* Addresses past the user space (TP_VA_BITS) wrap around the map: the slab found (if any)
 * then does not hold them, which the caller's bounds check on the slab reports. */
/* The slab of address a in its GiB's record b (NULL: no slab there). */
static inline tp_slab_t *_tp_gib_slab(const tp_gib_t *b, uintptr_t a) {
  return __atomic_load_n(&b->slab[(a >> TP_SLOT_SHIFT) & (TP_GIB_SLOTS - 1)], __ATOMIC_ACQUIRE);
}

static inline tp_slab_t *_tp_slab_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  tp_gib_t *b = _tp_map[(a >> TP_GIB_SHIFT) & (TP_MAP_ENTRIES - 1)];
  if (TP_UNLIKELY(b == NULL)) return NULL;
  return _tp_gib_slab(b, a);
}

/* The record of address a's GiB, NULL past the user address space or where the heap has none. */
static inline tp_gib_t *_tp_gib_of(uintptr_t a) { return TP_UNLIKELY(a >> TP_VA_BITS) ? NULL : _tp_map[a >> TP_GIB_SHIFT]; }

static inline tp_hpage_t *_tp_hpage_of(const void *p) {
  uintptr_t a = (uintptr_t)p;
  tp_gib_t *b = _tp_gib_of(a);
  if (TP_UNLIKELY(b == NULL)) return NULL;
  return &b->hp[(a >> TP_HPAGE_SHIFT) & ((1u << (TP_GIB_SHIFT - TP_HPAGE_SHIFT)) - 1)];
}


/* ---- the hpage filler: a group's hpages bucketed by slots used (filler.c) ------------
 * Pure bookkeeping over tp_hpage_t records: unit-testable at fake addresses. */
typedef struct tp_filler_s {
  tp_hpage_t *bucket[TP_SLOTS + 1]; /* by nused; bucket[TP_SLOTS] holds full hpages */
  uint64_t nonempty;                /* bit u: bucket[u] holds an hpage (u < TP_SLOTS) */
  size_t hpages;
  size_t used;                      /* slots used in its hpages */
} tp_filler_t;

/* ---- group records (the table is group.c's) ------------------------------------------ */
#define TP_SHARED_GROUP 0

/* A group's small class has a bin in two lanes, one per thread side (tp_tcache_t.side, given
 * in turn as threads start): a thread fills from its side's lane, and a slab's blocks go back
 * to the lane the slab is in (tp_slab_t.lane). Two threads allocating side by side from one
 * group take and return blocks under locks, lists and counters of their own, instead of
 * waiting on one lock and its lines. A single thread uses one lane; a
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
                          * pages from then on, as past start_kb (runs.c, group_grows) */
  uint8_t ordered;       /* an arena: small blocks in allocation order (arena.c) */
  _Atomic uint8_t idle;  /* group:thread: its thread has exited and no new one took it yet */
  /* Bit i: lane i has filled. A lane never used is never read (its lines stay cold and, in a
   * process with one thread, its pages untouched): the other lane and the policies look at
   * it only once its bit is set. */
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
/* Each thread adds its refills to the refill clock (heap.h) TP_CLOCK_BATCH at a time: threads
 * refilling side by side do not write its line at every refill (the clock is read to within a
 * few batches). */
#define TP_CLOCK_BATCH 8
#define TP_ADOPT_VOTES 4
extern tp_group_t _tp_shared_group TP_INTERNAL;
/* One past the highest group id ever given (group.c): loops over the groups stop there. */
extern _Atomic unsigned _tp_groups_next TP_INTERNAL;
static inline unsigned _tp_groups_end(void) { return atomic_load_explicit(&_tp_groups_next, memory_order_acquire); }

/* ---- a block as a thread cache holds it -------------------------------------------- */
typedef struct tp_entry_s { void *p; } tp_entry_t;

/* ---- thread caches (tcache.c) -------------------------------------------------------- 
 * A thread starts on a static empty cache (`_tp_tcache_empty`) whose site slots and bins hold
 * nothing, so "not initialised", "no bin yet" and "bin empty" are one cheap miss in malloc and
 * free; the miss goes to the generic path, which creates what is missing. Bin pointers are never
 * NULL: a bin not created yet is `_tp_tbin_empty` (count 0, limit 0), which also turns every
 * free into a miss. Counters live in the bins (written beside `count`) and are summed for stats. */
typedef struct tp_tbin_s {
  tp_entry_t *top;       /* where the next freed block goes: count = top - lo */
  tp_entry_t *end;       /* lo + limit: frees cache up to here (cap, or less for another
                          * thread's group) */
  tp_entry_t *lo;        /* the entries: e, or a larger array once the bin grew */
  tp_entry_t *low;       /* the malloc hit pops while top is above it (one memory operand): lo,
                          * or for a kilobyte bin the lowest top since its last trim, so that the
                          * first pop below it misses and moves it down (tcache.c, the trim) */
  uint64_t nalloc;       /* pops: stats */
  int64_t out;           /* blocks filled into the bin minus blocks flushed out: stats (the
                          * bin's live blocks are out - count, its frees nalloc - that; a
                          * remote bin's only goes down and is never read) */
  /* _tp_tbin_grow's batch test: nalloc at the last refill and at the last overflow
   * (UINT64_MAX before any) */
  uint64_t fill_mark, flush_mark;
  uint32_t cap, cls;     /* cap: entries at lo */
  uint32_t flushes;      /* a remote bin's flushes when full (_tp_policy_free_remote_stop) */
  uintptr_t check;       /* its address xor _tp_free_key: a word that names it is a tag */
  tp_entry_t below;      /* lo[-1] while lo is e, always NULL (so is the word before a grown
                          * array): the free's compare with the top entry needs no count */
  tp_entry_t e[];        /* the entries the bin was created with */
} tp_tbin_t;

static inline unsigned _tp_tbin_count(const tp_tbin_t *b) { return (unsigned)(b->top - b->lo); }
static inline unsigned _tp_tbin_limit(const tp_tbin_t *b) { return (unsigned)(b->end - b->lo); }

typedef struct tp_tgroup_s {
  tp_tbin_t *bins[TP_NCLASSES];
  /* Blocks this thread freed from slabs another thread fills from: never handed out here,
   * returned to their slabs a batch at a time (created on first use; NULL before). */
  tp_tbin_t *remote[TP_NCLASSES];
  tp_tbin_t *fast[TP_FAST_N]; /* bins by _tp_fast_index(size): malloc needs no class lookup */
  uint32_t gen;
  /* The clock this thread last wrote into the group's last_refill: it writes again 8 refills
   * of the process later, without reading the line other threads write too (alloc.c). */
  uint64_t refill_mark;
} tp_tgroup_t;

/* The site cache: a return address and the bins (by size, `fast`) of the group it allocates
 * from, in this thread. Outside group:site every slot points at the one group's bins. */
typedef struct tp_site_slot_s {
  uintptr_t ra;
  tp_tbin_t **bins;
} tp_site_slot_t;

/* A split site's bins by size in one thread: entry _tp_fast_index(size) is the bin of the group
 * that size's class goes to (group_for), so one site slot serves every class of a wrapper. */
typedef struct tp_mixed_s {
  uintptr_t ra;
  tp_tbin_t *fast[TP_FAST_N];
} tp_mixed_t;
#define TP_MIXED_SITES 16 /* split sites a thread keeps mixed bins for; others share slots */

#define TP_BIG_BINS 64
#define TP_GROWN_BINS 32
#define TP_TRIM_BINS 128 /* kilobyte bins a thread trims (tcache.c); later ones are not trimmed */
#define TP_TRIM_EVERY 8  /* kilobyte-bin misses between two trims */
#define TP_SITE_CACHE 128
#define TP_SITE_SLOT(ra) (((ra) >> 4) & (TP_SITE_CACHE - 1))
/* The fields of an empty bin the free hit reads (top, end, the entry under top): the first
 * fields of tp_tbin_t. */
typedef struct tp_empty_bin_s {
  tp_entry_t *top, *end;
  tp_entry_t below;      /* NULL: top[-1] */
  uintptr_t unused;      /* 32 bytes: the site slots after it never cross a cache line */
} tp_empty_bin_t;
#define TP_BIN_TABLE (TP_MAX_GROUPS * TP_NCLASSES)
_Static_assert(offsetof(tp_tbin_t, top) == offsetof(tp_empty_bin_t, top) && offsetof(tp_tbin_t, end) == offsetof(tp_empty_bin_t, end),
               "a record's empty bin must read as a tp_tbin_t's top and end");

typedef struct tp_tcache_s {
  /* An empty bin at the record's start (top == end, over a NULL entry), the bin that a 0 in
   * bin_off names: a free of a block whose bin this thread has not created yet reads it and
   * takes the miss, as one into the static empty bin does (set by reset_record, and by the
   * static records' initializer, tcache.c). */
  tp_empty_bin_t empty;
  tp_site_slot_t site[TP_SITE_CACHE]; /* from byte 32 of the record (64-byte aligned) */
  /* The start of the map's GiB this thread last freed in and its record's slab map: the free
   * hit tests p - map_base against a GiB and indexes map_slabs with what it got, one compare
   * instead of a walk from _tp_map (TP_NO_GIB and _tp_no_slabs, all NULL: none; the static
   * records keep them so, since threads share them). GiB records are never removed from the map. */
  uintptr_t map_base;
  tp_slab_t **map_slabs;
  /* The thread's bins by slab (tp_slab_t.bin_idx = group * TP_NCLASSES + cls): the byte offset
   * of bin (group, cls) from this record, 0 (`empty`) before the bin is created. The free hit
   * gets its bin with one load from the slab's line instead of three (group and class, the
   * group's record, its bin). A mapping of its own per record (TP_BIN_TABLE entries, 512 KiB
   * of address space on 4 KiB pages, touched only where the thread has bins: a page per eight
   * groups; _tp_meta_map), kept with the record for its next thread like the bins it names;
   * the static records share one of zeros. */
  intptr_t *bin_off;
  uint16_t thread_group;
  uint8_t owns_thread_group;
  uint8_t dead;          /* the static records: never caches (exited thread), or not started */
  uint8_t exited;        /* its thread has exited (the record waits for a new thread) */
  uint8_t side;          /* 0 or 1, in turn as threads start: the lane of a group's bins it
                          * fills from (tp_lane_t) */
  uint16_t big_bins;     /* bins created with a class's tcache_limit above its tcache_cap
                          * (at most TP_BIG_BINS: a thread holds at most 16 MiB that way) */
  uint16_t grown_bins;   /* bins grown past their class's tcache_limit (at most TP_GROWN_BINS) */
  int mode;
  /* Up to here, fields the thread's hits read and that change rarely; another thread reads
   * `exited` at every free of this thread's blocks (alloc.c, goes_remote). What the misses
   * write starts on the next line. */
  _Alignas(64) uint8_t refills; /* refills not yet added to _tp_refill_clock (up to TP_CLOCK_BATCH) */
  uint8_t trim_tick;     /* kilobyte-bin misses since the last trim (up to TP_TRIM_EVERY) */
  uint16_t sweep_next;   /* the group _tp_bin_sweep visits next (slab.c) */
  uint16_t ntrim, trim_next; /* entries of trim[] (kept with the record), the next one to trim */
  uint16_t last_free_g[TP_NCLASSES]; /* per class, the group whose cache last overflowed here */
  /* counters of what bypasses the bins (medium, large, arena, uncached classes),
   * folded into the globals at thread exit */
  size_t nmalloc, nfree, bytes_alloc;
  ptrdiff_t live_bytes;  /* may go negative in a thread that frees others' blocks */
  struct tp_tcache_s *next_all, *prev_all;
  tp_mixed_t *mixed[TP_MIXED_SITES]; /* kept with the record, cleared for its next thread */
  struct { tp_tbin_t *b; uint16_t g; } trim[TP_TRIM_BINS]; /* the kilobyte bins, in turn */
  tp_tgroup_t *groups[TP_MAX_GROUPS];
} tp_tcache_t;
/* A small block in a thread cache holds a tag in its second word (every class is at least 16
 * bytes): the address of the cache bin that holds it (tcache.c). A refill and a free write it
 * (the free without reading it: one store, no wait for the line of a block another thread
 * wrote last); the block is checked when it leaves the bin: a malloc finds the tag and clears
 * it, a flush finds it (tcache.c). A block freed twice is in a cache twice: the copy that
 * leaves second finds the tag cleared, another bin's, or overwritten by the program, and is
 * reported before it is handed out or counted in its slab again; so is a block written over
 * its tag after its free. The free itself compares the block with the bin's top entry
 * (`free(p); free(p)`, reported at the second free). The block's live byte says whether it is
 * out of its slab; the tag, whether it is in a cache rather than handed out. A block going back
 * to its slab has its tag cleared (slab.c, _tp_bin_flush; _tp_bin_release_all for a destroyed
 * group's cached blocks), so memory handed out again holds none, whatever block it becomes part
 * of: program data holds a bin's address only if it was copied out of a freed block. Nothing
 * the heap relies on lives in user memory. */
/* The word of a small block that holds its tag. */
static inline uintptr_t *_tp_tag_word(const void *p) { return (uintptr_t *)p + 1; }


#endif
