/* The thread caches' types and their hit-path helpers (tcache.c, alloc.c): bins, a thread's
 * record, the site cache and the tag a cached block carries. Included by internal.h after the
 * slabs and groups it refers to; not on its own. */
#ifndef TP_TCACHE_H
#define TP_TCACHE_H

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

/* The fast path's bins by size: entries 0..64 by (size + 15) / 16 for sizes up to TP_FAST_MAX,
 * then one entry per class above 1 KiB up to TP_FAST_BIG (the largest class a thread caches),
 * found from the size's top bits (_tp_fast_index): a malloc of 4 KiB hits like one of 32 B. */
#define TP_FAST_MAX 1024
#define TP_FAST_BIG 65536
#define TP_FAST_SMALL_N (TP_FAST_MAX / 16 + 1)
#define TP_FAST_CLASS_1K 19 /* _tp_class_of(TP_FAST_MAX) */
#define TP_FAST_N (TP_FAST_SMALL_N + 24) /* + the classes of 1 KiB < size <= 64 KiB */
/* The fast entry of a size up to TP_FAST_BIG. */
static inline unsigned _tp_fast_index(size_t size) {
  if (size <= TP_FAST_MAX) return (unsigned)((size + 15) >> 4);
  size_t x = size - 1;
  unsigned e = 63u - (unsigned)__builtin_clzl(x); /* 10..15 */
  /* class 8 + (e - 7) * 4 + k, k the two bits below the top one */
  return TP_FAST_SMALL_N - TP_FAST_CLASS_1K - 1 + 8 + (e - 7) * 4 + (unsigned)((x >> (e - 2)) & 3);
}

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
  /* The start of the map's GiB this thread last freed in and its block's slab map: the free
   * hit tests p - map_base against a GiB and indexes map_slabs with what it got, one compare
   * instead of a walk from _tp_map (TP_NO_GIB and _tp_no_slabs, all NULL: none; the static
   * records keep them so, since threads share them). Blocks are never removed from the map. */
  uintptr_t map_base;
  tp_slab_t **map_slabs;
  /* The thread's bins by slab (tp_slab_t.bin_idx = group * TP_NCLASSES + cls): the byte offset
   * of bin (group, cls) from this record, 0 (`empty`) before the bin is created. The free hit
   * gets its bin with one load from the slab's line instead of three (group and class, the
   * group's record, its bin). A mapping of its own per record (TP_BIN_TABLE entries, 416 KiB
   * of address space on 4 KiB pages, touched only where the thread has bins: a page per ten
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
 * out of its slab; the tag, whether it is in a cache rather than handed out. Program data
 * holds a bin's address only if it was copied out of a freed block. Nothing the heap relies on
 * lives in user memory. */
/* The word of a small block that holds its tag. */
static inline uintptr_t *_tp_tag_word(const void *p) { return (uintptr_t *)p + 1; }
/* A freed block onto bin b, which has room: tagged with b's address, then pushed (the free
 * hit does the same in two steps, the tag before it knows whether the block stays). */
static inline void _tp_tbin_push(tp_tbin_t *b, tp_entry_t e) {
  *_tp_tag_word(e.p) = (uintptr_t)b;
  *b->top++ = e;
}
/* Whether the small block at a (live byte 1) is in a thread cache: its tag word is the
 * address of a bin (metadata, tp_tbin_t.check). Stats and malloc_usable_size only (tcache.c). */
int _tp_block_cached(uintptr_t a) TP_INTERNAL;
/* Per-process random (init.c): a bin's check word is its address xor this. */
extern uintptr_t _tp_free_key TP_INTERNAL;
/* No GiB in a thread's map cache: the non-canonical GiB at 2^63, whose slab map is all NULL. */
#define TP_NO_GIB ((uintptr_t)1 << 63)
extern tp_slab_t *_tp_no_slabs[TP_BLOCK_SLOTS] TP_INTERNAL;
extern tp_tbin_t _tp_tbin_empty TP_INTERNAL;
extern tp_tcache_t _tp_tcache_empty TP_INTERNAL;
extern __thread tp_tcache_t *_tp_tc __attribute__((tls_model("initial-exec"))) TP_INTERNAL;
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
 * its own (a refill borrowed from the shared group: alloc.c, group_for), start as group base's
 * bins, so that its other classes keep hitting there. */
#define TP_MIXED_NO_BASE (~0u)
tp_tbin_t **_tp_tcache_mixed(tp_tcache_t *tc, uintptr_t ra, unsigned base, unsigned g, unsigned c) TP_INTERNAL;
/* Whether bins are the mixed bins of site ra in this thread. */
int _tp_tcache_is_mixed(const tp_tcache_t *tc, uintptr_t ra, tp_tbin_t *const *bins) TP_INTERNAL;
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
extern uint8_t _tp_fast_class[TP_FAST_N] TP_INTERNAL;
/* The fast entries of class c: _tp_fast_lo[c] up to _tp_fast_end[c] (exclusive; equal when the
 * class is past TP_FAST_BIG). */
extern uint8_t _tp_fast_lo[TP_NCLASSES] TP_INTERNAL, _tp_fast_end[TP_NCLASSES] TP_INTERNAL;

#endif
