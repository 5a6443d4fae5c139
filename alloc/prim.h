/* The OS contract (os.c). Rules every function here keeps:
 *  - none of them calls malloc, except _tp_os_discover(), which runs once after the core is
 *    ready (libhugetlbfs and libnuma allocate) and may therefore recurse into tlbpack;
 *  - addresses and lengths are multiples of TP_HPAGE unless stated;
 *  - failures return 0 / NULL / -1 and leave the address range as it was (reserved, PROT_NONE).
 */
#ifndef TP_PRIM_H
#define TP_PRIM_H

#include <stddef.h>
#include <stdint.h>

/* Reserves len bytes of address space (PROT_NONE, no commit charge) at `hint` if possible
 * (never replacing a mapping), else anywhere, aligned to `align`. */
void *_tp_os_reserve(void *hint, size_t len, size_t align) __attribute__((visibility("hidden")));

/* Backs one hpage at addr with the first source that works, starting at `want`
 * (TP_SRC_HUGETLB..TP_SRC_4K). Returns the source used; *fallbacks counts the failed ones.
 * Never fails: 4 KiB pages are the last resort (returns TP_SRC_NONE only if even that fails).
 * `pool_held`: the hugetlbfs pool pages the caller holds now, retained empty ones included (the
 * heap's count). The pool is skipped, as if it were empty, while that reaches pool_max, and that
 * is counted in _tp_os.pool_capped. */
int _tp_os_back(void *addr, int want, unsigned *fallbacks, int node, size_t pool_held) __attribute__((visibility("hidden")));

/* Backs the GiB at addr (1 GiB aligned, reserved) with one 1 GiB pool page: 0, or -1 with the
 * range left as it was (no 1 GiB pool, none free, gpages:off). Its memory is never given back
 * in parts; the heap keeps it until exit. With addr NULL, only whether a free 1 GiB page
 * exists now (0) or not (-1). */
int _tp_os_back_1g(void *addr) __attribute__((visibility("hidden")));

/* Gives the hpages' memory back (to the hugetlbfs pool or the OS); keeps the range reserved:
 * PROT_NONE, or for a pool page in a window the window itself, unbacked (see os.c). */
void _tp_os_decommit(void *addr, size_t len) __attribute__((visibility("hidden")));
/* A large run's fresh hpages on the pool, reserved at once and faulted in as touched (os.c);
 * refused (-1) when they would take the caller's `pool_held` pool pages past pool_max. */
int _tp_os_back_lazy(void *addr, size_t len, int node, size_t pool_held) __attribute__((visibility("hidden")));
/* Turns a backed 4 KiB-page hpage into a transparent huge page now (MADV_COLLAPSE): 0 when it
 * is one, -1 when the kernel could not (the memory stays as it was, contents kept). */
int _tp_os_promote(void *addr) __attribute__((visibility("hidden")));

/* Pool discovery through libhugetlbfs and NUMA set-up through libnuma (see rule 1). */
void _tp_os_discover(void) __attribute__((visibility("hidden")));
/* 1 (set under the heap lock) once the heap backs a page past the start pages: the next generic
 * malloc, which holds no lock, runs _tp_os_numa_check (it may load libraries, which allocate),
 * which sets 2 (done). */
extern int _tp_os_discover_wanted __attribute__((visibility("hidden")));
/* Runs discovery then if the machine has more than one NUMA node (else it waits for stats). */
void _tp_os_numa_check(void) __attribute__((visibility("hidden")));
/* The number after `key` in file `path` (key NULL: at its start), or -1. */
long _tp_os_file_long(const char *path, const char *key) __attribute__((visibility("hidden")));
/* Free pages of the 2 MiB and of the 1 GiB hugetlbfs pool, or -1 when it cannot be read. */
long _tp_os_pool_free(void) __attribute__((visibility("hidden")));
long _tp_os_gpool_free(void) __attribute__((visibility("hidden")));

/* What discovery found. */
typedef struct tp_os_info_s {
  int discovered;
  long hpage_size;          /* default huge page size the kernel reports (0: none) */
  int has_2m;               /* 2 MiB huge pages supported */
  char mount[256];          /* hugetlbfs mount for 2 MiB pages ("" if none) */
  int numa_nodes;           /* 0 = libnuma unavailable */
  int numa_mode;            /* the mode in force after discovery */
  char numa_note[96];
  /* Counted by _tp_os_back under the heap lock: */
  size_t pool_capped;       /* hpages that skipped the hugetlbfs pool because of pool_max */
  size_t pool_peak;         /* most hugetlbfs pool pages held at once */
  size_t hugetlb_windows;   /* window mappings made (one hugetlbfs-file mapping, up to 1 GiB) */
  size_t hugetlb_files;     /* hugetlbfs files opened for windows (a closed one is replaced) */
  size_t gpages_taken;      /* 1 GiB pool pages the heap took */
  size_t hugetlb_single;    /* pool pages mapped one mapping each (no window could be made) */
  size_t hugetlb_lazy;      /* large runs mapped on the pool to be faulted in as touched */
} tp_os_info_t;
extern tp_os_info_t _tp_os __attribute__((visibility("hidden")));

/* The NUMA node of the calling thread (0 when unknown). */
int _tp_os_current_node(void) __attribute__((visibility("hidden")));

/* What the OS layer asks the heap of the hpage at address a, for its windows (os.c): the heap
 * sets this query as it makes its first hpage records (heap.c, register_range); unset, every
 * address answers TP_OS_PAGE_NONE, as one without a record does. TP_OS_PAGE_NONE: no hpage of the heap there (unit tests' own memory: never
 * in a window); TP_OS_PAGE_UNBACKED: reserved and never backed, what a window may cover;
 * TP_OS_PAGE_OTHER: any other hpage of the heap. Which hpages are in a window is this layer's
 * own record. */
enum { TP_OS_PAGE_NONE = 0, TP_OS_PAGE_UNBACKED, TP_OS_PAGE_OTHER };
extern int (*_tp_os_page_state)(uintptr_t a) __attribute__((visibility("hidden")));
/* The hpages of [addr, addr + len) are in no window any more: a mapping of the caller's replaced
 * that part of it (a fork's copy off the pool, fork.c). */
void _tp_os_window_forget(void *addr, size_t len) __attribute__((visibility("hidden")));

/* resident() reads up to this many hpages with one mincore call: a large run on 4 KiB pages
 * (at most TP_SPARSE_MAX_HPAGES hpages, policy.h; heap.h checks it) in one. */
#define TP_OS_MINCORE_HPAGES 4

/* The heap reaches the OS only through this table (jemalloc's hpa_hooks idea): it starts as
 * the functions above, and unit tests replace entries with fakes that hand out addresses
 * without memory behind them and record the calls, so the heap's bookkeeping can be tested
 * without mmap. Written only before the first allocation (or, in a test, before any use). */
typedef struct tp_os_hooks_s {
  void *(*reserve)(void *hint, size_t len, size_t align);
  int (*back)(void *addr, int want, unsigned *fallbacks, int node, size_t pool_held);
  void (*decommit)(void *addr, size_t len);
  int (*promote)(void *addr);
  int (*current_node)(void);
  int (*back_1g)(void *addr);
  uint64_t (*now_ms)(void); /* a monotonic clock in milliseconds (the decay of empty hpages) */
  size_t (*resident)(void *addr, size_t len); /* bytes of the range in memory (len if unknown) */
  long (*pool_free)(void); /* free pages of the 2 MiB hugetlbfs pool (-1 if unknown) */
  /* [addr, addr + len), hpages not backed yet, on the pool with its pages reserved now and
   * faulted in as touched; 0 when mapped, -1 when the caller must back them one by one
   * (NULL: never). */
  int (*back_lazy)(void *addr, size_t len, int node, size_t pool_held);
} tp_os_hooks_t;
extern tp_os_hooks_t _tp_os_hooks __attribute__((visibility("hidden")));

#endif
