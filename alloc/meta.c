/* Out-of-band metadata: slab records, bitmaps, thread caches, group records, the page map's
 * GiB records. Bump-allocated from its own regions (never from slabs of the heap it describes) with
 * exact-size free lists, so a stray write past a user block can never reach allocator state.
 * At the address-space limit a region is a whole 2 MiB hpage the heap gives up for good
 * (_tp_heap_give_to_meta): its own mapping then, as any other region.
 *
 * Every free reads metadata (the slab record, its live bytes), so metadata on 4 KiB pages
 * costs TLB entries on the hot path: a big heap's records would need about a thousand. The
 * regions are 2 MiB aligned, and each 2 MiB unit starts on 4 KiB pages: once the bump pointer
 * is half way through it (policy.c, _tp_policy_meta_huge; the process's first unit: once it is
 * full), it is advised MADV_HUGEPAGE and collapsed into a transparent huge page
 * (MADV_COLLAPSE). A small process does not pay for a 2 MiB page it barely uses, nor a
 * middling one for the 2 MiB its last unit would take if advised before it is touched; past
 * 8 MiB of metadata a unit is collapsed at its first record. Under pool:4k metadata stays on
 * 4 KiB pages like the heap. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "heap.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define META_REGION ((size_t)64 << 20)
#define META_ALIGN 64
#define META_BUCKETS 256 /* free lists for sizes up to 256 * 64 B */
#define META_MAX_REGIONS 256

static tp_lock_t meta_lock = TP_LOCK_INIT;
static char *cur, *end;
static char *advised; /* the current region's units below this are huge pages */
static void *free_lists[META_BUCKETS];
static size_t total;
/* Address ranges, listed once and never removed: each written (under meta_lock) before the
 * count that publishes it, so readers take no lock. */
typedef struct { char *start, *end; } meta_span_t;
static meta_span_t regions[META_MAX_REGIONS]; /* bump regions: where records are */
static unsigned nregions;
#define META_MAX_SIDE 4096
static meta_span_t side[META_MAX_SIDE]; /* mappings of their own (_tp_meta_map): the stats count them */
static unsigned nside;

static void spans_add(meta_span_t *s, unsigned *n, unsigned cap, char *a, size_t len) {
  if (*n >= cap) return;
  s[*n] = (meta_span_t){a, a + len};
  __atomic_store_n(n, *n + 1, __ATOMIC_RELEASE);
}
/* [a, a + len) within one span */
static int spans_hold(const meta_span_t *s, const unsigned *n, uintptr_t a, size_t len) {
  unsigned k = __atomic_load_n(n, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < k; i++)
    if (a >= (uintptr_t)s[i].start && a + len <= (uintptr_t)s[i].end) return 1;
  return 0;
}
/* [lo, hi) meets a span */
static int spans_meet(const meta_span_t *s, const unsigned *n, uintptr_t lo, uintptr_t hi) {
  unsigned k = __atomic_load_n(n, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < k; i++)
    if (lo < (uintptr_t)s[i].end && hi > (uintptr_t)s[i].start) return 1;
  return 0;
}
static size_t spans_bytes(const meta_span_t *s, const unsigned *n) {
  unsigned k = __atomic_load_n(n, __ATOMIC_ACQUIRE);
  size_t b = 0;
  for (unsigned i = 0; i < k; i++) b += (size_t)(s[i].end - s[i].start);
  return b;
}

static int meta_thp(void) { return _tp_opt.pool != TP_POOL_4K; }

/* Bump-allocates from [a, a + len) from now on, its units from `advise_from` on collapsed into
 * huge pages as they fill (meta_lock held). */
static void use_region(char *a, size_t len, char *advise_from) {
  cur = a;
  end = a + len;
  advised = advise_from;
  spans_add(regions, &nregions, META_MAX_REGIONS, a, len);
}

/* A new 2 MiB-aligned region of at least `size` bytes (meta_lock held). Touched only as used. */
static int new_region(size_t size) {
  struct rlimit rl;
  size_t len = META_REGION;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) len = (size_t)4 << 20;
  if (len < size) len = (size + TP_HPAGE - 1) & ~(TP_HPAGE - 1);
  char *m = mmap(NULL, len + TP_HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return -1;
  char *a = (char *)(((uintptr_t)m + TP_HPAGE - 1) & ~(uintptr_t)(TP_HPAGE - 1));
  if (a > m) munmap(m, (size_t)(a - m));
  if (m + len + TP_HPAGE > a + len) munmap(a + len, (size_t)(m + len + TP_HPAGE - (a + len)));
  use_region(a, len, a);
  return 0;
}

/* The units the bump pointer (p) has filled far enough become huge pages. */
static void advise_upto(char *p) {
  if (!meta_thp()) return;
  while (advised < end && p > advised &&
         _tp_policy_meta_huge((size_t)(p - advised), advised == regions[0].start, total)) {
    madvise(advised, TP_HPAGE, MADV_HUGEPAGE);
    madvise(advised, TP_HPAGE, MADV_COLLAPSE);
    advised += TP_HPAGE;
  }
}

void *_tp_meta_alloc(size_t size) {
  size = (size + META_ALIGN - 1) & ~(size_t)(META_ALIGN - 1);
  size_t b = size / META_ALIGN;
  _tp_lock(&meta_lock);
  void *p = NULL;
  if (b < META_BUCKETS && free_lists[b] != NULL) {
    p = free_lists[b];
    free_lists[b] = *(void **)p;
    _tp_unlock(&meta_lock);
    memset(p, 0, size);
    return p;
  }
  if (cur == NULL || (size_t)(end - cur) < size) {
    if (new_region(size) != 0) {
      /* No address space left (RLIMIT_AS): a 2 MiB hpage the heap reserved and does not use.
       * The heap lock is taken after this one is released (the heap takes them in the other
       * order); the hpage then becomes the current region. */
      _tp_unlock(&meta_lock);
      char *h = size <= TP_HPAGE ? _tp_heap_give_to_meta() : NULL;
      if (h == NULL) return NULL;
      _tp_lock(&meta_lock);
      use_region(h, TP_HPAGE, h + TP_HPAGE); /* left on 4 KiB pages: the process is at its limit */
    }
  }
  p = cur;
  cur += size;
  total += size;
  advise_upto(cur);
  _tp_unlock(&meta_lock);
  return p; /* fresh anonymous memory is zero */
}

void _tp_meta_free(void *p, size_t size) {
  if (p == NULL) return;
  size = (size + META_ALIGN - 1) & ~(size_t)(META_ALIGN - 1);
  size_t b = size / META_ALIGN;
  if (b >= META_BUCKETS) return; /* large metadata is kept (rare: per-block maps) */
  _tp_lock(&meta_lock);
  *(void **)p = free_lists[b];
  free_lists[b] = p;
  _tp_unlock(&meta_lock);
}

/* A mapping of its own for metadata that is mostly address space (a thread's bin table,
 * tcache.c): 4 KiB pages touched only where written, never huge (collapsed, it would be
 * resident whole). Listed apart from the regions (it holds no records: _tp_meta_holds does
 * not look at it), for the stats to count as metadata while the list has room. */
void *_tp_meta_map(size_t len) {
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  (void)madvise(m, len, MADV_NOHUGEPAGE);
  _tp_lock(&meta_lock);
  spans_add(side, &nside, META_MAX_SIDE, m, len);
  _tp_unlock(&meta_lock);
  return m;
}

int _tp_meta_mapped(uintptr_t a, size_t len) { return spans_hold(side, &nside, a, len); }

size_t _tp_meta_bytes(void) { return total; }

int _tp_meta_holds(uintptr_t a, size_t len) { return spans_hold(regions, &nregions, a, len); }

/* ---- where metadata sits, from /proc/self/smaps (stats only; no malloc) ---------------- */
static int in_regions(uintptr_t lo, uintptr_t hi) {
  return spans_meet(regions, &nregions, lo, hi) || spans_meet(side, &nside, lo, hi);
}

static void smaps_line(const char *l, int *inside, tp_meta_pages_t *m) {
  if ((l[0] >= '0' && l[0] <= '9') || (l[0] >= 'a' && l[0] <= 'f')) {
    char *dash;
    uintptr_t lo = strtoul(l, &dash, 16), hi = *dash == '-' ? strtoul(dash + 1, NULL, 16) : lo;
    *inside = in_regions(lo, hi);
    if (*inside) m->mappings++;
  } else if (*inside && strncmp(l, "Rss:", 4) == 0) {
    m->resident_bytes += (size_t)strtoul(l + 4, NULL, 10) << 10;
  } else if (*inside && strncmp(l, "AnonHugePages:", 14) == 0) {
    m->thp_bytes += (size_t)strtoul(l + 14, NULL, 10) << 10;
  }
}

int _tp_meta_pages(tp_meta_pages_t *m) {
  memset(m, 0, sizeof *m);
  m->used_bytes = total;
  m->reserved_bytes = spans_bytes(regions, &nregions) + spans_bytes(side, &nside);
  int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[8192], line[512];
  size_t ll = 0;
  int inside = 0;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        if (ll < sizeof line - 1) line[ll++] = buf[i];
        continue;
      }
      line[ll] = 0;
      smaps_line(line, &inside, m);
      ll = 0;
    }
  }
  close(fd);
  m->small_bytes = m->resident_bytes > m->thp_bytes ? m->resident_bytes - m->thp_bytes : 0;
  /* TLB entries its resident memory needs: one per 2 MiB huge page, one per other 4 KiB page */
  m->tlb_entries = m->thp_bytes / TP_HPAGE + m->small_bytes / TP_PAGE;
  return 0;
}

void _tp_meta_prefork(void) { _tp_lock(&meta_lock); }
void _tp_meta_postfork(int child) {
  if (child) _tp_lock_reinit(&meta_lock);
  else _tp_unlock(&meta_lock);
}
