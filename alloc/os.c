/* OS primitives: address-space reservation, backing an hpage from the first source that
 * works (hugetlbfs pool -> THP -> 4 KiB), giving memory back, and discovery of the hugetlbfs
 * pool (libhugetlbfs) and NUMA nodes (libnuma). Contract in prim.h.
 *
 * Pool pages live in windows: one private, MAP_NORESERVE mapping of a hugetlbfs file
 * (memfd_create with MFD_HUGETLB) over every not-yet-backed hpage around the one wanted, up to
 * its GiB. The kernel never merges hugetlb mappings (they are VM_SPECIAL), so a
 * mapping per page, as MAP_HUGETLB gives, would cap the heap at vm.max_map_count pages; a
 * window is one mapping for up to 512. An hpage is claimed with MADV_POPULATE_WRITE, which
 * reports a short pool as an error (no SIGBUS on a later touch), and given back with
 * MADV_DONTNEED, which returns the page to the pool and keeps the window. The mapping is
 * private: pages are anonymous copies that never enter the file, so the file holds nothing (and
 * a fork moves every pool page onto anonymous memory first: fork.c). The file offset of an
 * address is the address itself, so any window of any file lines up. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h> /* hugetlbfs.h uses size_t without including it */
#include <numaif.h> /* MPOL_* */
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "prim.h"
#include "types.h"

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << 26)
#endif
#ifndef MFD_HUGE_1GB
#define MFD_HUGE_1GB (30u << 26)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

tp_os_info_t _tp_os;

#define TP_MAX_CPUS 1024
static uint8_t cpu_node[TP_MAX_CPUS];

void *_tp_os_reserve(void *hint, size_t len, size_t align) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (hint != NULL) {
    void *p = mmap(hint, len, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == hint) return p;
    if (p != MAP_FAILED) munmap(p, len); /* old kernels ignore NOREPLACE and return elsewhere */
  }
  /* Over-reserve, then trim to the alignment. */
  size_t span = len + align;
  if (span < len) return NULL;
  char *p = mmap(NULL, span, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p, tail = span - head - len;
  if (head) munmap(p, head);
  if (tail) munmap((char *)start + len, tail);
  return (void *)start;
}

int (*_tp_os_page_state)(uintptr_t a);

/* What the heap says of the hpage at a (TP_OS_PAGE_NONE where it has set no query). */
static int page_state(uintptr_t a) { return _tp_os_page_state ? _tp_os_page_state(a) : TP_OS_PAGE_NONE; }

/* Which hpages are inside a window (claimed or not): a bit per hpage, 64 bytes per GiB, by GiB
 * as the heap's address map. This layer's own record; the heap's hpage records know nothing of
 * windows. A GiB's bits are made when a window first covers part of it (under the heap lock,
 * as every backing call), on 4 KiB pages mapped here, and kept. */
#define TP_WIN_WORDS ((TP_GIB / TP_HPAGE) / 64)
static uint64_t *win_map[TP_MAP_ENTRIES];
static uint64_t *win_free, *win_free_end; /* the rest of the last page mapped for them */

static uint64_t *win_bits(uintptr_t a, int make) {
  if (TP_UNLIKELY(a >> TP_VA_BITS)) return NULL;
  uint64_t **w = &win_map[a >> TP_GIB_SHIFT];
  if (*w != NULL || !make) return *w;
  if (win_free == win_free_end) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    win_free = p, win_free_end = win_free + 4096 / sizeof *win_free;
  }
  *w = win_free;
  win_free += TP_WIN_WORDS;
  return *w;
}
static unsigned win_index(uintptr_t a) { return (unsigned)((a >> TP_HPAGE_SHIFT) & ((TP_GIB / TP_HPAGE) - 1)); }
/* Whether the hpage at a is inside a window. */
static int in_window(uintptr_t a) {
  const uint64_t *w = win_bits(a, 0);
  return w != NULL && (w[win_index(a) / 64] >> (win_index(a) % 64) & 1);
}
/* The hpage at a is in no window now (a GiB with no bits has none). */
static void window_off(uintptr_t a) {
  uint64_t *w = win_bits(a, 0);
  if (w != NULL) w[win_index(a) / 64] &= ~(1ull << (win_index(a) % 64));
}

void _tp_os_window_forget(void *addr, size_t len) {
  for (size_t o = 0; o < len; o += TP_HPAGE) window_off((uintptr_t)addr + o);
}

static void rereserve(void *addr, size_t len) {
  /* A failed MAP_FIXED may have left a hole: put the PROT_NONE reservation back at once. */
  mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  _tp_os_window_forget(addr, len);
}

/* ---- hugetlb windows ----------------------------------------------------------------- */
static int win_fd = -1;
static dev_t win_dev;
static ino_t win_ino;
static int windows_off; /* memfd or MADV_POPULATE_WRITE unsupported: one MAP_HUGETLB per page */

/* The hugetlbfs file windows map. Programs close descriptors they did not open (daemons
 * close all of them) and reuse the numbers: the descriptor is used only while it is still
 * the file we created, else a new file serves further windows (mappings keep the old one). */
static int window_file(void) {
  struct stat st;
  if (win_fd >= 0 && fstat(win_fd, &st) == 0 && st.st_dev == win_dev && st.st_ino == win_ino) return win_fd;
  win_fd = -1; /* closed, or the number is somebody else's now: never touch it again */
  int fd = memfd_create("tlbpack", MFD_HUGETLB | MFD_HUGE_2MB | MFD_CLOEXEC);
  if (fd < 0) {
    windows_off = 1; /* no memfd (old kernel, sandbox): one MAP_HUGETLB mapping per page */
    return -1;
  }
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 100); /* out of the way of dup2 onto low numbers */
  if (high >= 0) {
    close(fd);
    fd = high;
  }
  if (fstat(fd, &st) != 0) {
    close(fd);
    return -1;
  }
  win_fd = fd;
  win_dev = st.st_dev;
  win_ino = st.st_ino;
  _tp_os.hugetlb_files++;
  return fd;
}

/* Reserved, never-backed, not yet in a window: what a window may cover. */
static int windowable(uintptr_t a) { return page_state(a) == TP_OS_PAGE_UNBACKED && !in_window(a); }

/* Maps a window over addr and its windowable neighbours in the same GiB. */
static int open_window(void *addr) {
  uintptr_t a = (uintptr_t)addr, block = a & ~(uintptr_t)(TP_GIB - 1);
  uintptr_t lo = a, hi = a + TP_HPAGE;
  while (lo > block && windowable(lo - TP_HPAGE)) lo -= TP_HPAGE;
  while (hi < block + TP_GIB && windowable(hi)) hi += TP_HPAGE;
  int fd = window_file();
  if (fd < 0) return -1;
  uint64_t *w = win_bits(a, 1);
  if (w == NULL) return -1;
  void *p = mmap((void *)lo, hi - lo, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd,
                 (off_t)lo);
  if (p != (void *)lo) {
    if (p != MAP_FAILED) munmap(p, hi - lo);
    rereserve((void *)lo, hi - lo);
    return -1;
  }
  for (uintptr_t x = lo; x < hi; x += TP_HPAGE) w[win_index(x) / 64] |= 1ull << (win_index(x) % 64);
  _tp_os.hugetlb_windows++;
  return 0;
}

/* A pool page at addr: claimed in a window, or (no windows here) one MAP_HUGETLB mapping. */
static void *claim_hugetlb(void *addr) {
  uintptr_t a = (uintptr_t)addr;
  if (!windows_off && page_state(a) != TP_OS_PAGE_NONE && (in_window(a) || open_window(addr) == 0)) {
    if (madvise(addr, TP_HPAGE, MADV_POPULATE_WRITE) == 0) return addr;
    if (errno != EINVAL) return MAP_FAILED; /* the pool is short: the window stays for later */
    windows_off = 1;                        /* a kernel before 5.14 */
  }
  window_off(a); /* the per-page mapping replaces this part of any window */
  return mmap(addr, TP_HPAGE, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
}

/* ---- libhugetlbfs and libnuma, loaded when first needed --------------------------------
 * They are not linked: a library the program needs loaded runs its constructor in every
 * process (libnuma's reads /proc/self/status twice and walks /sys/devices/system/node), and
 * a short-lived process never needs them: its heap stays on 4 KiB pages (start_kb) and pool
 * pages are mapped without them. They are opened with dlopen the first time discovery runs
 * (_tp_os_discover: at start-up only under verbose:1 or an explicit numa:local|interleave,
 * else once the heap passes start_kb or stats are printed), outside every allocator lock. */
static struct {
  int (*gethugepagesizes)(long *, int);
  long (*gethugepagesize)(void);
  const char *(*find_path_for_size)(long);
  int (*numa_available)(void);
  int (*numa_max_node)(void);
  int (*numa_num_configured_cpus)(void);
  int (*numa_node_of_cpu)(int);
  long (*mbind)(void *, unsigned long, int, const unsigned long *, unsigned long, unsigned);
} lib;

int _tp_os_discover_wanted;

static void *sym(void *h, const char *name) { return h ? dlsym(h, name) : NULL; }

static void load_libs(void) {
  void *h = dlopen("libhugetlbfs.so.0", RTLD_NOW | RTLD_LOCAL);
  lib.gethugepagesizes = (int (*)(long *, int))sym(h, "gethugepagesizes");
  lib.gethugepagesize = (long (*)(void))sym(h, "gethugepagesize");
  lib.find_path_for_size = (const char *(*)(long))sym(h, "hugetlbfs_find_path_for_size");
  void *n = dlopen("libnuma.so.1", RTLD_NOW | RTLD_LOCAL);
  lib.numa_available = (int (*)(void))sym(n, "numa_available");
  lib.numa_max_node = (int (*)(void))sym(n, "numa_max_node");
  lib.numa_num_configured_cpus = (int (*)(void))sym(n, "numa_num_configured_cpus");
  lib.numa_node_of_cpu = (int (*)(int))sym(n, "numa_node_of_cpu");
  lib.mbind = (long (*)(void *, unsigned long, int, const unsigned long *, unsigned long, unsigned))sym(n, "mbind");
}

static void apply_numa(void *addr, size_t len, int node) {
  if (lib.mbind == NULL) return; /* numa_mode is only set once libnuma is loaded */
  if (_tp_os.numa_mode == TP_NUMA_LOCAL) {
    unsigned long mask[TP_MAX_CPUS / 64] = {0};
    if (node < 0 || node >= TP_MAX_CPUS) node = 0;
    mask[node / 64] |= 1ul << (node % 64);
    lib.mbind(addr, len, MPOL_PREFERRED, mask, TP_MAX_CPUS, 0);
  } else if (_tp_os.numa_mode == TP_NUMA_INTERLEAVE) {
    unsigned long mask[TP_MAX_CPUS / 64] = {0};
    int n = _tp_os.numa_nodes > 0 ? _tp_os.numa_nodes : 1;
    for (int i = 0; i < n && i < TP_MAX_CPUS; i++) mask[i / 64] |= 1ul << (i % 64);
    lib.mbind(addr, len, MPOL_INTERLEAVE, mask, TP_MAX_CPUS, 0);
  }
}

static int try_source(void *addr, int src) {
  const int fixed = MAP_PRIVATE | MAP_FIXED;
  void *p = MAP_FAILED;
  switch (src) {
  case TP_SRC_HUGETLB: {
    p = claim_hugetlb(addr);
    if (p == addr && !in_window((uintptr_t)addr)) _tp_os.hugetlb_single++;
    if (p == addr) return 0;
    if (in_window((uintptr_t)addr)) return -1; /* short pool: the window stays, unbacked */
    break;
  }
  case TP_SRC_THP:
    p = mmap(addr, TP_HPAGE, PROT_READ | PROT_WRITE, fixed | MAP_ANONYMOUS, -1, 0);
    if (p == addr) madvise(addr, TP_HPAGE, MADV_HUGEPAGE);
    break;
  case TP_SRC_4K:
    p = mmap(addr, TP_HPAGE, PROT_READ | PROT_WRITE, fixed | MAP_ANONYMOUS, -1, 0);
    if (p == addr) madvise(addr, TP_HPAGE, MADV_NOHUGEPAGE);
    break;
  }
  if (p == addr) {
    window_off((uintptr_t)addr); /* an anonymous mapping over a window splits it */
    return 0;
  }
  if (p != MAP_FAILED) munmap(p, TP_HPAGE);
  rereserve(addr, TP_HPAGE);
  return -1;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
int _tp_os_promote(void *addr) {
  if (madvise(addr, TP_HPAGE, MADV_HUGEPAGE) != 0) return -1;
  return madvise(addr, TP_HPAGE, MADV_COLLAPSE) == 0 ? 0 : -1;
}

/* ---- /proc and /sys numbers --------------------------------------------------------- */
long _tp_os_file_long(const char *path, const char *key) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char *p = key ? strstr(buf, key) : buf;
  return p ? strtol(p + (key ? strlen(key) : 0), NULL, 10) : -1;
}

long _tp_os_pool_free(void) { return _tp_os_file_long("/proc/meminfo", "HugePages_Free:"); }
long _tp_os_gpool_free(void) {
  return _tp_os_file_long("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages", NULL);
}

/* One process must not take a pool that others share: past pool_max pages, the pool is
 * treated as empty (THP, then 4 KiB). Pages held count retained empty ones: they still hold
 * pool memory. */
int _tp_os_back(void *addr, int want, unsigned *fallbacks, int node, size_t pool_held) {
  size_t held = pool_held;
  for (int src = want; src <= TP_SRC_4K; src++) {
    if (src == TP_SRC_HUGETLB && held >= _tp_opt.pool_max) {
      _tp_os.pool_capped++;
      continue;
    }
    if (try_source(addr, src) == 0) {
      apply_numa(addr, TP_HPAGE, node);
      if (src == TP_SRC_HUGETLB && held + 1 > _tp_os.pool_peak) _tp_os.pool_peak = held + 1;
      return src;
    }
    if (fallbacks) (*fallbacks)++;
  }
  return TP_SRC_NONE;
}

/* A large run's fresh hpages on the pool, faulted in as the program touches them: one private
 * mapping of the window file without MAP_NORESERVE, so the kernel reserves all its pages at
 * once (or refuses: ENOMEM when the pool is short) and every later fault takes a reserved page,
 * never SIGBUS; a page given back with MADV_DONTNEED gets its reservation back. A claimed
 * window page is backed (zeroed) whole when claimed, so a program that allocates a large
 * buffer and fills part of it would hold all of it. The run's pages are reserved until its
 * hpages go back to the OS (rereserve), and held like claimed ones (pool_max). A fork moves
 * them off the pool first, like every other pool page (fork.c). */
int _tp_os_back_lazy(void *addr, size_t len, int node, size_t pool_held) {
  size_t held = pool_held + len / TP_HPAGE; /* with these */
  if (windows_off || held > _tp_opt.pool_max) return -1;
  int fd = window_file();
  if (fd < 0) return -1;
  void *p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, (off_t)(uintptr_t)addr);
  if (p != addr) {
    rereserve(addr, len); /* the fixed mapping replaced what was there, windows too */
    return -1;
  }
  _tp_os_window_forget(addr, len);
  apply_numa(addr, len, node);
  if (held > _tp_os.pool_peak) _tp_os.pool_peak = held;
  _tp_os.hugetlb_lazy++;
  return 0;
}

/* A window's pool page goes back to the pool and the window stays; anything else becomes
 * PROT_NONE reservation again. */
void _tp_os_decommit(void *addr, size_t len) {
  for (size_t o = 0; o < len; o += TP_HPAGE) {
    char *a = (char *)addr + o;
    if (in_window((uintptr_t)a) && madvise(a, TP_HPAGE, MADV_DONTNEED) == 0) continue;
    rereserve(a, TP_HPAGE);
  }
}

int _tp_os_current_node(void) {
  if (_tp_os.numa_nodes <= 1) return 0;
  int cpu = sched_getcpu();
  return (cpu >= 0 && cpu < TP_MAX_CPUS) ? cpu_node[cpu] : 0;
}

static void discover_numa(void) {
  int mode = _tp_opt.numa;
  if (lib.numa_available == NULL || lib.numa_max_node == NULL || lib.numa_num_configured_cpus == NULL ||
      lib.numa_node_of_cpu == NULL || lib.mbind == NULL || lib.numa_available() < 0) {
    _tp_os.numa_nodes = 0;
    if (mode == TP_NUMA_LOCAL || mode == TP_NUMA_INTERLEAVE)
      snprintf(_tp_os.numa_note, sizeof _tp_os.numa_note, "%s: numa:off",
               lib.numa_available ? "libnuma reports no NUMA support" : "libnuma.so.1 could not be loaded");
    _tp_os.numa_mode = TP_NUMA_OFF;
    return;
  }
  _tp_os.numa_nodes = lib.numa_max_node() + 1;
  int ncpu = lib.numa_num_configured_cpus();
  for (int c = 0; c < ncpu && c < TP_MAX_CPUS; c++) {
    int n = lib.numa_node_of_cpu(c);
    cpu_node[c] = (uint8_t)(n < 0 ? 0 : n);
  }
  if (mode == TP_NUMA_DEFAULT) mode = _tp_os.numa_nodes > 1 ? TP_NUMA_LOCAL : TP_NUMA_OFF;
  _tp_os.numa_mode = mode;
}

/* The heap takes huge pages: NUMA placement needs libnuma, but only where there is more than
 * one node. The kernel's list of online nodes says so without loading it ("0" on one node);
 * with one node, numa stays off and libnuma waits for the stats (loading a library mid-run
 * also puts its allocations among the program's). */
void _tp_os_numa_check(void) {
  _tp_os_discover_wanted = 2; /* checked: not again */
  char buf[64] = {0};
  int fd = open("/sys/devices/system/node/online", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  int one_node = n > 0 && strspn(buf, "0\n") == (size_t)n; /* "0": node 0 alone */
  if (one_node && _tp_opt.numa != TP_NUMA_LOCAL && _tp_opt.numa != TP_NUMA_INTERLEAVE) return;
  _tp_os_discover();
}

void _tp_os_discover(void) {
  static atomic_flag busy = ATOMIC_FLAG_INIT;
  if (_tp_os.discovered || atomic_flag_test_and_set(&busy)) return; /* once; a racing thread goes on */
  load_libs();
  if ((_tp_opt.pool == TP_POOL_AUTO || _tp_opt.pool == TP_POOL_HUGETLBFS) && lib.gethugepagesizes &&
      lib.gethugepagesize && lib.find_path_for_size) {
    long sizes[8];
    int n = lib.gethugepagesizes(sizes, 8);
    for (int i = 0; i < n; i++)
      if (sizes[i] == (long)TP_HPAGE) _tp_os.has_2m = 1;
    _tp_os.hpage_size = lib.gethugepagesize();
    if (_tp_os.has_2m) {
      const char *m = lib.find_path_for_size((long)TP_HPAGE);
      /* Pages are mapped with MAP_HUGETLB, from the same kernel pool the mount exposes. No
       * hugetlbfs file descriptor is kept: programs close and reuse descriptors (daemons close
       * all of them), and a reused number would make tlbpack map somebody else's file. */
      if (m != NULL) snprintf(_tp_os.mount, sizeof _tp_os.mount, "%s", m);
    }
  }
  discover_numa();
  __atomic_store_n(&_tp_os.discovered, 1, __ATOMIC_RELEASE);
}

/* ---- 1 GiB pages ------------------------------------------------------------------------
 * One file per page, its descriptor closed at once (the mapping keeps the file): nothing for
 * a program that closes descriptors to break, and a GiB is one mapping anyway. */
int _tp_os_back_1g(void *addr) {
  const size_t g = TP_GIB;
  if (_tp_opt.gpages == TP_GPAGES_OFF || (_tp_opt.pool != TP_POOL_AUTO && _tp_opt.pool != TP_POOL_HUGETLBFS)) return -1;
  if (_tp_os_gpool_free() < 1) return -1;
  if (addr == NULL) return 0;
  int fd = memfd_create("tlbpack-1g", MFD_HUGETLB | MFD_HUGE_1GB | MFD_CLOEXEC);
  if (fd < 0) return -1;
  void *p = mmap(addr, g, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd, 0);
  close(fd);
  if (p != addr || madvise(addr, g, MADV_POPULATE_WRITE) != 0) {
    if (p != MAP_FAILED && p != addr) munmap(p, g);
    rereserve(addr, g);
    return -1;
  }
  _tp_os.gpages_taken++;
  return 0;
}

static uint64_t now_ms(void) {
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &t) != 0) return 0;
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Bytes of [addr, addr + len) in memory, by mincore (len when it fails: as if all touched). */
static size_t resident(void *addr, size_t len) {
  unsigned char v[TP_OS_MINCORE_HPAGES * TP_HPAGE / 4096]; /* a large run on 4 KiB pages in one call */
  size_t n = 0;
  for (size_t o = 0; o < len; o += sizeof v * 4096) {
    size_t part = len - o < sizeof v * 4096 ? len - o : sizeof v * 4096;
    if (mincore((char *)addr + o, part, v) != 0) return len;
    for (size_t i = 0; i < (part + 4095) / 4096; i++) n += v[i] & 1;
  }
  return n * 4096;
}

tp_os_hooks_t _tp_os_hooks = {_tp_os_reserve, _tp_os_back, _tp_os_decommit, _tp_os_promote, _tp_os_current_node,
                              _tp_os_back_1g, now_ms, resident, _tp_os_pool_free, _tp_os_back_lazy};
