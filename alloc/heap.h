/* The heap layer: metadata (meta.c), the hpage filler (filler.c), the heap's address space,
 * backing and hpage lists (heap.c) and its part in a fork (fork.c). Below it: the OS (prim.h),
 * the records (types.h), the policies and the base. */
#ifndef TP_HEAP_H
#define TP_HEAP_H

#include "policy.h"
#include "prim.h"
#include "types.h"
#include <time.h>

_Static_assert(TP_SPARSE_MAX_HPAGES <= TP_OS_MINCORE_HPAGES, "os.c measures a sparse run with one mincore call");

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


/* ---- the hpage filler (filler.c) --------------------------------------------------- */
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


/* ---- heap: address space, backing, hpage lists (heap.c) ------------------------------ */
extern tp_lock_t _tp_heap_lock TP_INTERNAL;
/* The refill clock: the process's refills (thread caches add theirs TP_CLOCK_BATCH at a time).
 * The heap's logical time: an empty hpage's age (decay), and the lanes' and groups' idle tests
 * above it. The heap owns it; the cache layer advances it. */
extern _Atomic uint64_t _tp_refill_clock TP_INTERNAL;
void _tp_heap_init(void) TP_INTERNAL;
/* heap.c: retained empty pool pages (not 1 GiB ones) go back to the pool (heap lock held). */
void _tp_heap_release_empty_pool(void) TP_INTERNAL;
/* fork.c: the heap lock held across fork(), and every pool page of the heap moved onto
 * anonymous memory first: no hugetlbfs page is shared with a child. */
void _tp_heap_prefork(void) TP_INTERNAL;
void _tp_heap_postfork(int child) TP_INTERNAL;
/* The signal that stops the other threads while pool pages move before a fork (fork.c): the
 * Front keeps it out of the masks a program blocks and the sets it waits for. */
int _tp_fork_stop_signal(void) TP_INTERNAL;
/* After a fork, the parent's THP hpages that copy-on-write split are collapsed again once no
 * child shares them (recollapse.c): slow paths call _tp_heap_after_fork while this is set.
 * _tp_heap_cow_note lists them, from the fork handler (heap lock held). */
extern _Atomic int _tp_fork_cow_pending TP_INTERNAL;
void _tp_heap_after_fork_slow(void) TP_INTERNAL;
void _tp_heap_cow_note(int child) TP_INTERNAL;
/* Milliseconds of CLOCK_MONOTONIC (fork.c's stop deadline, recollapse.c's ticks). */
static inline double _tp_mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
void _tp_heap_after_fork_parent(void) TP_INTERNAL; /* init.c: once every lock is let go */
static inline void _tp_heap_after_fork(void) {
  if (__builtin_expect(atomic_load_explicit(&_tp_fork_cow_pending, memory_order_relaxed), 0)) _tp_heap_after_fork_slow();
}
/* SIGRTMAX minus this: a real-time signal (queued, told apart by round), far from SIGRTMIN+n,
 * the ones programs pick first. */
#define TP_STOP_SIGNAL_BELOW_MAX 3
/* How long a stop waits for a thread's answer before the moves fall back to read-only pages
 * (a thread in an uninterruptible system call answers when it returns). */
#define TP_STOP_WAIT_MS 2000
#define TP_STOP_MAX_THREADS 65536
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
/* Start pages (heap.c: the hpages on 4 KiB pages the heap started on), the mechanism the
 * groups' start-page rules call (runs.c): the list of them (*pages, the count returned);
 * whether h is one still on 4 KiB pages and carved; collapsing one into a huge page (one the
 * kernel refuses is tried again at its next carves, a few times); and whether the heap is
 * past start (start_kb carved, or it has backed past its start pages). Heap lock. */
unsigned _tp_heap_start_pages(tp_hpage_t *const **pages) TP_INTERNAL;
int _tp_heap_start_pending(const tp_hpage_t *h) TP_INTERNAL;
void _tp_heap_collapse_start(tp_hpage_t *h) TP_INTERNAL;
int _tp_heap_past_start(void) TP_INTERNAL;

typedef struct tp_heap_counters_s {
  size_t pages_by_source[TP_SRC_COUNT]; /* backed hpages now */
  size_t fallbacks;
  size_t pages_returned;
  size_t reserved_bytes;
  size_t fork_unshared;   /* pool pages moved onto anonymous memory before a fork (fork.c) */
  size_t forks_unshared;  /* forks before which the heap held pool pages, and moved them */
  size_t fork_unshare_failed; /* pool pages a fork could not move (no memory for the copy) */
  size_t fork_copy_helpers; /* helper threads that made a fork's copies beside the forking one */
  size_t forks_guarded;   /* forks whose moves ran with some other thread not stopped (fork.c) */
  size_t fork_stop_timeouts; /* stops in which a thread did not answer in TP_STOP_WAIT_MS */
  size_t fork_recollapsed;   /* THP hpages split by copy-on-write, collapsed once unshared */
  size_t fork_recollapse_failed; /* of those, collapses the kernel refused */
  size_t fork_collapse_threads;  /* helper threads started for them (fork_collapse:thread) */
  size_t promoted;        /* hpages the heap started on, collapsed into THP once it grew */
  size_t large_4k;        /* medium and large runs put on 4 KiB pages because their site fills
                           * them in part (stats large_runs_4k) */
  size_t pages_by_node[8];
} tp_heap_counters_t;
extern tp_heap_counters_t _tp_heap_ctr TP_INTERNAL;

/* malloc_trim (tp_trim): the retained empty hpages beyond `keep` bytes go back now, the
 * oldest first, 1 GiB pages aside; returns how many went back. */
size_t _tp_heap_trim(size_t keep) TP_INTERNAL;
/* Bytes of the empty hpages the heap retains for reuse (mallinfo's keepcost). */
size_t _tp_heap_retained_bytes(void) TP_INTERNAL;

#endif
