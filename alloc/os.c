/* OS primitives: address-space reservation, backing an hpage from the first source that
 * works (hugetlbfs pool -> MAP_HUGETLB -> THP -> 4 KiB), giving memory back, and discovery
 * of the hugetlbfs pool (libhugetlbfs) and NUMA nodes (libnuma). Contract in prim.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h> /* hugetlbfs.h uses size_t without including it */
#include <hugetlbfs.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)
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

static void rereserve(void *addr, size_t len) {
  /* A failed MAP_FIXED may have left a hole: put the PROT_NONE reservation back at once. */
  mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

static void apply_numa(void *addr, size_t len, int node) {
  if (_tp_os.numa_mode == TP_NUMA_LOCAL) {
    unsigned long mask[TP_MAX_CPUS / 64] = {0};
    if (node < 0 || node >= TP_MAX_CPUS) node = 0;
    mask[node / 64] |= 1ul << (node % 64);
    mbind(addr, len, MPOL_PREFERRED, mask, TP_MAX_CPUS, 0);
  } else if (_tp_os.numa_mode == TP_NUMA_INTERLEAVE) {
    unsigned long mask[TP_MAX_CPUS / 64] = {0};
    int n = _tp_os.numa_nodes > 0 ? _tp_os.numa_nodes : 1;
    for (int i = 0; i < n && i < TP_MAX_CPUS; i++) mask[i / 64] |= 1ul << (i % 64);
    mbind(addr, len, MPOL_INTERLEAVE, mask, TP_MAX_CPUS, 0);
  }
}

static int try_source(void *addr, int src) {
  const int fixed = MAP_PRIVATE | MAP_FIXED;
  void *p = MAP_FAILED;
  switch (src) {
  case TP_SRC_HUGETLB:
    p = mmap(addr, TP_HPAGE, PROT_READ | PROT_WRITE, fixed | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB,
             -1, 0);
    break;
  case TP_SRC_THP:
    p = mmap(addr, TP_HPAGE, PROT_READ | PROT_WRITE, fixed | MAP_ANONYMOUS, -1, 0);
    if (p == addr) madvise(addr, TP_HPAGE, MADV_HUGEPAGE);
    break;
  case TP_SRC_4K:
    p = mmap(addr, TP_HPAGE, PROT_READ | PROT_WRITE, fixed | MAP_ANONYMOUS, -1, 0);
    if (p == addr) madvise(addr, TP_HPAGE, MADV_NOHUGEPAGE);
    break;
  }
  if (p == addr) return 0;
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

/* One process must not take a pool that others share: past pool_max pages, the pool is
 * treated as empty (THP, then 4 KiB). Pages held count retained empty ones: they still hold
 * pool memory. */
int _tp_os_back(void *addr, int want, unsigned *fallbacks, int node) {
  size_t held = _tp_heap_ctr.pages_by_source[TP_SRC_HUGETLB];
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

void _tp_os_decommit(void *addr, size_t len) { rereserve(addr, len); }

int _tp_os_current_node(void) {
  if (_tp_os.numa_nodes <= 1) return 0;
  int cpu = sched_getcpu();
  return (cpu >= 0 && cpu < TP_MAX_CPUS) ? cpu_node[cpu] : 0;
}

static void discover_numa(void) {
  int mode = _tp_opt.numa;
  if (numa_available() < 0) {
    _tp_os.numa_nodes = 0;
    if (mode == TP_NUMA_LOCAL || mode == TP_NUMA_INTERLEAVE)
      snprintf(_tp_os.numa_note, sizeof _tp_os.numa_note, "libnuma reports no NUMA support: numa:off");
    _tp_os.numa_mode = TP_NUMA_OFF;
    return;
  }
  _tp_os.numa_nodes = numa_max_node() + 1;
  int ncpu = numa_num_configured_cpus();
  for (int c = 0; c < ncpu && c < TP_MAX_CPUS; c++) {
    int n = numa_node_of_cpu(c);
    cpu_node[c] = (uint8_t)(n < 0 ? 0 : n);
  }
  if (mode == TP_NUMA_DEFAULT) mode = _tp_os.numa_nodes > 1 ? TP_NUMA_LOCAL : TP_NUMA_OFF;
  _tp_os.numa_mode = mode;
}

void _tp_os_discover(void) {
  if (_tp_opt.pool == TP_POOL_AUTO || _tp_opt.pool == TP_POOL_HUGETLBFS) {
    long sizes[8];
    int n = gethugepagesizes(sizes, 8);
    for (int i = 0; i < n; i++)
      if (sizes[i] == (long)TP_HPAGE) _tp_os.has_2m = 1;
    _tp_os.hpage_size = gethugepagesize();
    if (_tp_os.has_2m) {
      const char *m = hugetlbfs_find_path_for_size((long)TP_HPAGE);
      /* Pages are mapped with MAP_HUGETLB, from the same kernel pool the mount exposes. No
       * hugetlbfs file descriptor is kept: programs close and reuse descriptors (daemons close
       * all of them), and a reused number would make tlbpack map somebody else's file. */
      if (m != NULL) snprintf(_tp_os.mount, sizeof _tp_os.mount, "%s", m);
    }
  }
  discover_numa();
  _tp_os.discovered = 1;
}

tp_os_hooks_t _tp_os_hooks = {_tp_os_reserve, _tp_os_back, _tp_os_decommit, _tp_os_promote, _tp_os_current_node};
