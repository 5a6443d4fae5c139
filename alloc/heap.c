/* The heap: reserved address space grown in large contiguous chunks (each placed right after
 * the previous one when the kernel allows, so the page-table tree stays small), the records
 * of its hpages, backing them from the pool (or THP, or 4 KiB pages), and taking empty ones
 * back: retained for reuse, decayed, or given back beyond the retain limit. runs.c carves the
 * hpages into slot runs and large runs through the hpage layer declared in heap.h; which
 * hpage a slab goes to is filler.c's and policy.c's, and the groups' start-page rules (when a
 * start page is collapsed for a group, when a group grows up) are runs.c's: this file lists
 * the start pages and collapses the one a rule names; it reads no group record. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "heap.h"

tp_gib_t *_tp_map[TP_MAP_ENTRIES];
tp_lock_t _tp_heap_lock = TP_LOCK_INIT;
_Atomic uint64_t _tp_refill_clock;

tp_heap_counters_t _tp_heap_ctr;

#define TP_MAX_CHUNKS 256
typedef struct { uintptr_t start, end; } tp_chunk_t;
static tp_chunk_t chunks[TP_MAX_CHUNKS];
static unsigned nchunks;
static uintptr_t cursor, cursor_end; /* never-used hpages of the newest chunk */
static tp_hpage_t *free_list;        /* reserved, not backed (used before) */
static tp_hpage_t *empty_list;       /* backed and empty: reused first */
static tp_hpage_t *empty_tail;       /* its last: the page empty longest (pushed at the head) */
static size_t nfree_hp, nempty_hp;
static size_t nempty_4k, empty_4k_bytes; /* of the empty ones, those of large runs on 4 KiB
                                          * pages (tail4k 2), and what they count for */
static size_t held_bytes(const tp_hpage_t *h);
static size_t chunk_bytes = TP_GIB;
static void decay(void);

static void push(tp_hpage_t **head, tp_hpage_t *h, int which) {
  TP_LIST_PUSH(head, h, next, prev);
  h->listed = (uint8_t)which;
}

static void unlink_(tp_hpage_t **head, tp_hpage_t *h) {
  TP_LIST_UNLINK(head, h, next, prev);
  h->listed = TP_LIST_NONE;
}

static void take_off_list(tp_hpage_t *h) {
  if (h->listed == TP_LIST_FREE) {
    unlink_(&free_list, h);
    nfree_hp--;
  } else if (h->listed == TP_LIST_EMPTY) {
    if (h == empty_tail) empty_tail = h->prev;
    unlink_(&empty_list, h);
    nempty_hp--;
    if (h->tail4k == TP_RUN_ALL_4K) nempty_4k--, empty_4k_bytes -= held_bytes(h);
  }
}

/* The mirror of take_off_list: onto the free (TP_LIST_FREE) or empty list, counted. */
static void put_on_list(tp_hpage_t *h, int which) {
  if (which == TP_LIST_EMPTY) {
    if (empty_list == NULL) empty_tail = h;
    push(&empty_list, h, TP_LIST_EMPTY);
    nempty_hp++;
    if (h->tail4k == TP_RUN_ALL_4K) nempty_4k++, empty_4k_bytes += held_bytes(h);
  } else {
    push(&free_list, h, TP_LIST_FREE);
    nfree_hp++;
  }
}

/* The heap's answer to the OS layer's query (prim.h, _tp_os_page_state). */
static int os_page_state(uintptr_t a) {
  const tp_hpage_t *h = _tp_hpage_of((void *)a);
  if (h == NULL) return TP_OS_PAGE_NONE;
  return h->state == TP_HP_FREE && h->source == TP_SRC_NONE ? TP_OS_PAGE_UNBACKED : TP_OS_PAGE_OTHER;
}

void _tp_heap_init(void) {
  struct rlimit rl;
  /* Under an address-space limit, reserve modestly: the reservation itself counts. */
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) chunk_bytes = (size_t)64 << 20;
}

/* Hpage records for [start, end): meta blocks are created on first use. */
static int register_range(uintptr_t start, uintptr_t end) {
  _tp_os_page_state = os_page_state; /* before the first record: an address without one answers NONE */
  for (uintptr_t a = start; a < end; a += TP_HPAGE) {
    size_t bi = a >> TP_GIB_SHIFT;
    if (_tp_map[bi] == NULL) {
      tp_gib_t *b = _tp_meta_alloc(sizeof(tp_gib_t));
      if (b == NULL) return -1;
      __atomic_store_n(&_tp_map[bi], b, __ATOMIC_RELEASE);
    }
    tp_hpage_t *h = _tp_hpage_of((void *)a);
    h->slot_slab = &_tp_map[bi]->slab[((a >> TP_SLOT_SHIFT) & (TP_GIB_SLOTS - 1))];
    h->addr = a;
    h->state = TP_HP_FREE;
  }
  return 0;
}

/* Makes sure the newest chunk has at least `bytes` of never-used space after aligning the
 * cursor to `align`. */
static int grow(size_t bytes, size_t align) {
  uintptr_t aligned = (cursor + align - 1) & ~(uintptr_t)(align - 1);
  if (cursor != 0 && aligned + bytes <= cursor_end) return 0;
  if (nchunks == TP_MAX_CHUNKS) return -1;
  size_t want = chunk_bytes;
  if (want < bytes + align) want = (bytes + align + chunk_bytes - 1) & ~(chunk_bytes - 1);
  size_t need = bytes + align; /* room for an aligned run of `bytes` wherever it lands */
  if (want < need) want = need;
  void *hint = cursor_end ? (void *)cursor_end : NULL;
  void *p = NULL;
  for (size_t len = want;; len = len / 2 > need ? len / 2 : need) {
    if (nchunks == 0 && len >= TP_GIB) /* the first chunk starts a page directory */
      p = _tp_os_hooks.reserve(hint, len, TP_GIB);
    if (p == NULL) p = _tp_os_hooks.reserve(hint, len, TP_HPAGE);
    if (p != NULL) {
      want = len;
      break;
    }
    if (len == need) break;
  }
  if (p == NULL) return -1;
  uintptr_t s = (uintptr_t)p, e = s + want;
  if (register_range(s, e) != 0) return -1;
  _tp_heap_ctr.reserved_bytes += want;
  if (s == cursor_end && nchunks > 0) {
    chunks[nchunks - 1].end = e; /* contiguous: the chunk simply grows */
  } else {
    /* Leftover never-used hpages of the old chunk join the free list. */
    for (uintptr_t a = cursor; a < cursor_end; a += TP_HPAGE) {
      put_on_list(_tp_hpage_of((void *)a), TP_LIST_FREE);
    }
    chunks[nchunks].start = s;
    chunks[nchunks].end = e;
    nchunks++;
    cursor = s;
  }
  cursor_end = e;
  return 0;
}

/* Address space for metadata when the process may map no more (RLIMIT_AS reached): an hpage
 * the heap reserved and does not use (decommitted, or never used past the cursor) leaves the
 * heap for good, made read-write in place, so the address space it already counts serves the
 * metadata allocator (meta.c). Without it, a program at its limit that freed everything could
 * not malloc a class it had not used before: every slab needs a record. NULL when there is
 * none. The heap lock is taken here: the caller must not hold the metadata lock. */
void *_tp_heap_give_to_meta(void) {
  _tp_lock(&_tp_heap_lock);
  tp_hpage_t *h = free_list;
  uintptr_t a = 0;
  if (h != NULL) {
    take_off_list(h);
    a = h->addr;
  } else if (cursor != 0 && cursor + TP_HPAGE <= cursor_end) {
    h = _tp_hpage_of((void *)cursor);
    a = cursor;
    cursor += TP_HPAGE;
  }
  if (h != NULL) {
    h->state = TP_HP_NONE; /* no longer the heap's: frees of pointers into it are foreign */
    h->source = TP_SRC_NONE;
    h->fresh_mask = 0;
    h->start = 0;
    _tp_heap_ctr.reserved_bytes -= TP_HPAGE;
  }
  _tp_unlock(&_tp_heap_lock);
  if (a == 0) return NULL;
  void *m = mmap((void *)a, TP_HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* Once the heap has grown past start_kb, the hpages it started on become huge pages too (THP,
 * collapsed in place), so the data placed there early costs one TLB entry per hpage like the
 * rest; when that is worth the memory (policy.c, _tp_policy_promote_start), since a collapse
 * makes all 2 MiB resident; what a page holds is counted in the 4 KiB pages the program has
 * touched (_tp_os_hooks.resident), not the slots carved (the policy says why). A sparse one is
 * tried again each time the heap backs a new huge page; what the kernel cannot collapse stays
 * on 4 KiB pages. */
#define TP_MAX_START_PAGES 64
static tp_hpage_t *start_pages[TP_MAX_START_PAGES];
static unsigned nstart_pages;
static int heap_grown; /* the heap has passed start_kb: no new start pages */
size_t _tp_heap_used_bytes; /* slot runs and large runs carved now (heap lock) */
static size_t promoted_room; /* free slots start pages had when collapsed (bytes) */
/* Bytes of the hpages the heap holds backed, of every source. */
static size_t backed_bytes(void) {
  size_t backed = 0;
  for (int s = 0; s < TP_SRC_COUNT; s++) backed += _tp_heap_ctr.pages_by_source[s];
  return backed * TP_HPAGE;
}

/* An hpage on 4 KiB pages collapsed into a huge page (THP), and counted as one; 0 on success. */
#define TP_COLLAPSE_NOW 4
int _tp_hpage_collapse(tp_hpage_t *h) {
  /* The kernel refuses a collapse for a transient reason (EAGAIN) while another thread faults
   * in or writes the page's 4 KiB pages: tried again at once a few times. */
  int ok = 0;
  for (int i = 0; i < TP_COLLAPSE_NOW && !ok; i++) {
    ok = _tp_os_hooks.promote((void *)h->addr) == 0;
    if (!ok && errno != EAGAIN) break;
    if (!ok) sched_yield();
  }
  if (!ok) return -1;
  _tp_heap_ctr.pages_by_source[TP_SRC_4K]--;
  _tp_heap_ctr.pages_by_source[TP_SRC_THP]++;
  _tp_heap_ctr.promoted++;
  h->source = TP_SRC_THP;
  return 0;
}

/* Bytes of the heap's backed hpages in memory: the 4 KiB pages touched (mincore; a pool page
 * counts whole once faulted). Backed is not what the program holds: a program may ask for
 * buffers it touches a part of, or fill one from both ends, and a start page collapsed because
 * its free room was 1/32 of the backed bytes would add most of 2 MiB to it. Counted again once
 * the backed bytes have moved by an eighth since the last count (one mincore an hpage, heap
 * lock held), the count before serving in between: a heap that grows by backing new hpages is
 * counted a few times, not at every hpage. Past a GiB backed it is not counted (a count would
 * hold the heap lock for a millisecond and more), and 2 MiB is a small part of what such a
 * process asked for. */
static size_t resident_bytes, resident_at; /* the last count, and the backed bytes then */
/* Whether the backed bytes have moved by more than an eighth from `then` (0: never counted). */
static int moved_by_an_eighth(size_t now, size_t then) {
  return then == 0 || now > then + then / 8 || now < then - then / 8;
}
static void add_resident(tp_hpage_t *h, void *arg) {
  if (h->state != TP_HP_NONE && h->source != TP_SRC_NONE) *(size_t *)arg += _tp_os_hooks.resident((void *)h->addr, TP_HPAGE);
}
static size_t heap_resident(size_t backed) {
  if (backed > TP_GIB) return backed;
  if (moved_by_an_eighth(backed, resident_at)) {
    size_t n = 0;
    _tp_heap_foreach(add_resident, &n);
    resident_bytes = n;
    resident_at = backed;
  }
  return resident_bytes < backed ? resident_bytes : backed;
}

/* A start page still on 4 KiB pages is looked at (a mincore) each time the heap backs an hpage
 * while there are at most TP_PROMOTE_EVERY of them; past that, once the backed bytes have
 * moved by an eighth since the last look: many sparse pages looked at for every hpage would
 * slow a heap that grows by large blocks. Few pages are looked at every time: one that fills
 * is collapsed before the heap backs more, and its room takes the shared group's next slabs
 * (waiting for an eighth every time, a small program would take one more pool page). */
#define TP_PROMOTE_EVERY 16
static size_t promote_looked_at; /* backed bytes at the last look (0: none yet) */
int _tp_heap_start_pending(const tp_hpage_t *h) {
  return h->start && h->source == TP_SRC_4K && h->state == TP_HP_ACTIVE;
}
static void promote_start_pages(void) {
  heap_grown = 1;
  size_t backed = backed_bytes(), resident = 0;
  unsigned pending = 0;
  for (unsigned i = 0; i < nstart_pages; i++) pending += (unsigned)_tp_heap_start_pending(start_pages[i]);
  if (pending == 0) return;
  if (pending > TP_PROMOTE_EVERY && !moved_by_an_eighth(backed, promote_looked_at)) return;
  promote_looked_at = backed;
  for (unsigned i = 0; i < nstart_pages; i++) {
    tp_hpage_t *h = start_pages[i];
    if (!_tp_heap_start_pending(h)) continue;
    size_t touched = _tp_os_hooks.resident((void *)h->addr, TP_HPAGE);
    unsigned full = (unsigned)(((touched < TP_HPAGE ? touched : TP_HPAGE) + TP_SLOT - 1) / TP_SLOT); /* slots */
    int shared = h->owner == TP_SHARED_GROUP;
    /* The policy only gets stricter as the heap gets smaller: backed bytes first, the count of
     * what is in memory only for a page they would collapse. */
    if (!_tp_policy_promote_start(h->nused, full, backed, promoted_room, shared)) continue;
    if (resident == 0) resident = heap_resident(backed);
    if (!_tp_policy_promote_start(h->nused, full, resident, promoted_room, shared)) continue;
    promoted_room += (size_t)(TP_SLOTS - full) * TP_SLOT;
    h->start = 0;
    _tp_hpage_collapse(h);
  }
}

/* Start small: under pool:auto a process takes huge pages once its heap is worth them. Until
 * the runs carved in it reach start_kb it is on 4 KiB pages, touched (and zeroed) only where
 * used: a short-lived process does not pay for zeroing 2 MiB pages it barely fills, nor hold
 * pool pages that other processes could use. Carved bytes, not backed hpages: groups that take
 * hpages of their own back several before any is full, so counted by hpages a small heap
 * would take huge pages early. */
static int starting(size_t adding) {
  return !heap_grown && nstart_pages < TP_MAX_START_PAGES && _tp_heap_used_bytes + adding <= _tp_opt.start_bytes;
}
int _tp_heap_starting(size_t adding) { return _tp_opt.pool == TP_POOL_AUTO && starting(adding); }
int _tp_heap_past_start(void) { return heap_grown || _tp_heap_used_bytes >= _tp_opt.start_bytes; }

/* Collapses start page h; one the kernel refuses (after _tp_hpage_collapse's tries) is tried
 * again at the page's next carves, TP_COLLAPSE_TRIES times in all (h->start counts them). */
#define TP_COLLAPSE_TRIES 8
void _tp_heap_collapse_start(tp_hpage_t *h) {
  if (_tp_hpage_collapse(h) == 0) h->start = 0;
  else h->start = h->start >= TP_COLLAPSE_TRIES ? 0 : (uint8_t)(h->start + 1);
}
static int group_grown_asks; /* _tp_hpage_get(TP_HPAGE_HUGE): a grown group's page, heap young */
static int want_source(size_t adding) {
  int src = TP_SRC_HUGETLB, start = 0;
  switch (_tp_opt.pool) {
  case TP_POOL_THP: src = TP_SRC_THP; break;
  case TP_POOL_4K: src = TP_SRC_4K; break; /* placed by node all the same */
  case TP_POOL_AUTO: {
    /* A program that forked with pool pages in its heap (they were copied off the pool) is
     * likely to fork again: its next huge pages are THP, which a fork does not copy (fork.c
     * collapses the ones copy-on-write splits once the child is gone). after_fork:pool keeps
     * the pool. */
    if (_tp_heap_ctr.forks_unshared && _tp_opt.after_fork == TP_AFTER_FORK_THP) src = TP_SRC_THP;
    if (group_grown_asks && starting(adding)) break; /* huge, and the heap still starts small */
    start = starting(adding);
    if (start) src = TP_SRC_4K;
    else promote_start_pages();
    break;
  }
  default: break;
  }
  /* Past the start pages the heap is placed by NUMA node: the next generic malloc, which holds
   * no lock, checks the nodes (os.c; it may load libnuma). */
  if (!start && _tp_os_discover_wanted == 0 && !_tp_os.discovered) _tp_os_discover_wanted = 1;
  return src;
}

/* Large runs of TP_LAZY_HPAGES hpages (64 MiB) or more are backed by THP under pool:auto:
 * faulted in as they are touched, where the pool's pages are backed (zeroed) whole at once. A
 * program that allocates a huge buffer and fills part of it (GNU sort sizes its buffer by the
 * memory, not its input) would otherwise zero and hold all of it, and drain the pool that the
 * small-object heap packs into. Smaller large runs stay on the pool: a fresh THP fault here
 * costs several times a pool page. */
#define TP_LAZY_HPAGES 32
static int run_source(size_t adding) {
  int want = want_source(adding);
  if (want == TP_SRC_HUGETLB && _tp_opt.pool == TP_POOL_AUTO && adding >= TP_LAZY_HPAGES * TP_HPAGE) want = TP_SRC_THP;
  return want;
}
static void backed(tp_hpage_t *h, int src, int tail4k, int node);
static int back(tp_hpage_t *h, size_t adding, int tail4k) {
  unsigned fb = 0;
  int node = _tp_os_hooks.current_node();
  int want = run_source(adding);
  if (tail4k == TP_RUN_ALL_4K || (tail4k && want != TP_SRC_4K)) want = TP_SRC_4K;
  else tail4k = 0;
  int src = _tp_os_hooks.back((void *)h->addr, want, &fb, node, _tp_heap_ctr.pages_by_source[TP_SRC_HUGETLB]);
  _tp_heap_ctr.fallbacks += fb;
  if (src == TP_SRC_NONE) return -1;
  backed(h, src, tail4k, node);
  return 0;
}
/* The record of an hpage just backed from source src. */
static void backed(tp_hpage_t *h, int src, int tail4k, int node) {
  h->source = (uint8_t)src;
  h->lazy = 0;
  h->tail4k = (uint8_t)tail4k;
  h->held_kb = 0; /* fresh */
  h->start = !tail4k && src == TP_SRC_4K && _tp_opt.pool == TP_POOL_AUTO && !heap_grown && nstart_pages < TP_MAX_START_PAGES;
  if (h->start) start_pages[nstart_pages++] = h;
  h->node = (uint8_t)(node & 7);
  h->fresh_mask = TP_ALL_SLOTS;
  _tp_heap_ctr.pages_by_source[src]++;
  _tp_heap_ctr.pages_by_node[h->node]++;
}

static void decommit(tp_hpage_t *h) {
  _tp_os_hooks.decommit((void *)h->addr, TP_HPAGE);
  _tp_heap_ctr.pages_by_source[h->source]--;
  _tp_heap_ctr.pages_by_node[h->node]--;
  _tp_heap_ctr.pages_returned++;
  h->source = TP_SRC_NONE;
  h->state = TP_HP_FREE;
  h->fresh_mask = 0;
  h->start = 0;
  h->tail4k = 0;
  h->lazy = 0;
}

/* 1 GiB pages. Past gpage_mb of backed heap, new memory at the end of the heap comes a GiB
 * at a time from the 1 GiB pool when it has a free page: its 512 hpages become empty records
 * of source TP_SRC_1G, used first. A 1 GiB page cannot be given back in parts, so they are
 * kept until exit (they never decay, whatever retain_mb says). */

static tp_hpage_t *grow_1g(void) {
  if (_tp_opt.gpages == TP_GPAGES_OFF || _tp_os_hooks.back_1g == NULL || backed_bytes() < _tp_opt.gpage_bytes)
    return NULL;
  if (_tp_os_hooks.back_1g(NULL) != 0) return NULL; /* no free 1 GiB page: reserve nothing */
  if (grow(TP_GIB, TP_GIB) != 0) return NULL;
  uintptr_t aligned = (cursor + TP_GIB - 1) & ~(uintptr_t)(TP_GIB - 1);
  if (aligned + TP_GIB > cursor_end) return NULL;
  if (_tp_os_hooks.back_1g((void *)aligned) != 0) return NULL; /* the cursor stays: 2 MiB pages */
  for (; cursor < aligned; cursor += TP_HPAGE) put_on_list(_tp_hpage_of((void *)cursor), TP_LIST_FREE);
  uint64_t now = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed);
  for (size_t i = TP_GIB / TP_HPAGE; i-- > 0;) {
    tp_hpage_t *h = _tp_hpage_of((void *)(aligned + i * TP_HPAGE));
    h->source = TP_SRC_1G;
    h->state = TP_HP_EMPTY;
    h->start = 0;
    h->node = 0;
    h->fresh_mask = TP_ALL_SLOTS;
    h->last_use = now;
    if (i > 0) put_on_list(h, TP_LIST_EMPTY); /* pushed last to first: used in address order */
  }
  cursor = aligned + TP_GIB;
  _tp_heap_ctr.pages_by_source[TP_SRC_1G] += TP_GIB / TP_HPAGE;
  _tp_heap_ctr.pages_by_node[0] += TP_GIB / TP_HPAGE;
  return _tp_hpage_of((void *)aligned);
}

/* One backed, empty hpage: a retained one first (prefer this node's), then address space;
 * when `small`, a new one is backed by 4 KiB pages (a start page while the heap is young, else
 * flagged tail4k: given back when emptied). */
tp_hpage_t *_tp_hpage_get(int small) {
  tp_hpage_t *h = NULL;
  decay();
  if (empty_list) {
    /* This node's first, a large run's 4 KiB pages last (they are given back for a huge one). */
    int node = _tp_os_hooks.current_node() & 7, best = -1;
    for (tp_hpage_t *e = empty_list; e && best < 2; e = e->next) {
      if (small == TP_HPAGE_4K_ONLY && (e->source != TP_SRC_4K || e->tail4k == TP_RUN_ALL_4K)) continue;
      if (small == TP_HPAGE_HUGE && e->source == TP_SRC_4K) continue;
      int score = (e->tail4k != TP_RUN_ALL_4K) + (e->node == node && e->tail4k != TP_RUN_ALL_4K);
      if (score > best) best = score, h = e;
    }
  }
  if (h != NULL) {
    take_off_list(h);
    if (h->tail4k != TP_RUN_ALL_4K) return h;
    decommit(h); /* a large run's 4 KiB pages: a fresh huge page for the slabs */
  } else if (free_list) {
    h = free_list;
    take_off_list(h);
  } else if ((h = grow_1g()) != NULL) {
    return h;
  } else {
    if (grow(TP_HPAGE, TP_HPAGE) != 0) return NULL;
    h = _tp_hpage_of((void *)cursor);
    cursor += TP_HPAGE;
  }
  group_grown_asks = small == TP_HPAGE_HUGE;
  int failed = back(h, TP_SLOT, small != 0 && small != TP_HPAGE_HUGE) != 0;
  group_grown_asks = 0;
  if (failed) {
    put_on_list(h, TP_LIST_FREE);
    return NULL;
  }
  h->state = TP_HP_EMPTY;
  return h;
}

/* Retained empty hpages decay: one left unused while the program made TP_DECAY_REFILLS
 * refills (its allocation clock) and for TP_DECAY_MS goes back, so a steady program does not
 * keep retain_mb of huge pages it no longer needs. On the refill clock alone, a program that
 * cycles through phases of many sizes would give a page back and fault it in again within a
 * millisecond: TP_DECAY_MS holds it that long at least. */
#define TP_DECAY_REFILLS 4096
#define TP_DECAY_MS 100
static void decay(void) {
  if (empty_list == NULL) return;
  uint64_t now = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed), ms = _tp_os_hooks.now_ms();
  for (tp_hpage_t *e = empty_list, *next; e; e = next) {
    next = e->next;
    if (e->source != TP_SRC_1G && now - e->last_use > TP_DECAY_REFILLS && ms - e->last_ms >= TP_DECAY_MS) {
      take_off_list(e);
      decommit(e);
      put_on_list(e, TP_LIST_FREE);
    }
  }
}

/* Gives back the retained empty page that has been empty longest (the list's tail: pages are
 * pushed at its head), 1 GiB pages aside; -1 when there is none. */
static int evict_oldest_empty(void) {
  tp_hpage_t *old = empty_tail; /* from the tail: a walk from the head made eviction loops quadratic */
  while (old != NULL && old->source == TP_SRC_1G) old = old->prev;
  if (old == NULL) return -1;
  take_off_list(old);
  decommit(old);
  put_on_list(old, TP_LIST_FREE);
  return 0;
}

/* What a retained page counts for against retain_mb: a huge page whole, a large run's hpage
 * on 4 KiB pages what it held in memory when the run was freed (held_kb, runs.c: resident only
 * where its runs wrote), at least an eighth of a huge page (a list of a few dozen at most,
 * walked by decay and by _tp_hpage_get). Counted whole, buffers written in their first tenth
 * would keep few of them under the default retain_mb and fault their pages in again at every
 * other buffer. */
static size_t retained_weight(void) { return (nempty_hp - nempty_4k) * TP_HPAGE + empty_4k_bytes; }
static size_t held_bytes(const tp_hpage_t *h) {
  size_t b = (size_t)h->held_kb * 1024;
  return b > TP_HPAGE / 8 ? b : TP_HPAGE / 8; /* at least an eighth: retained ones stay few */
}
static size_t weight(const tp_hpage_t *h) { return h->tail4k == TP_RUN_ALL_4K ? held_bytes(h) : TP_HPAGE; }

/* Gives back retained empty pages, the oldest first, while they and `adding` bytes more are
 * over `limit` (1 GiB pages aside); returns how many went back. */
static size_t evict_empty_over(size_t limit, size_t adding) {
  size_t n = 0;
  while (retained_weight() + adding > limit && evict_oldest_empty() == 0) n++;
  return n;
}

/* An hpage with nothing left on it: retained for reuse, or given back beyond `budget` bytes of
 * empty pages (retain_mb, or more for a large run: free_large). */
static void clear_empty(tp_hpage_t *h) {
  h->state = TP_HP_EMPTY;
  h->owner = 0;
  h->used_mask = 0;
  h->nused = 0;
  h->last_use = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed);
  h->last_ms = _tp_os_hooks.now_ms();
  memset(h->slot_slab, 0, TP_SLOTS * sizeof *h->slot_slab);
}

void _tp_hpage_empty(tp_hpage_t *h, size_t budget) {
  decay();
  clear_empty(h);
  /* Over retain_mb, the oldest retained page goes back, not this one: a block freed and
   * allocated again reuses its pages, while pages left over from earlier frees that no later
   * run fits between are given back; giving back this one, a block freed and allocated again
   * in a heap of such leftovers would be backed and zeroed anew every round. */
  int tail = h->tail4k == 1; /* a huge run's little-used tail; a run on 4 KiB pages is kept */
  if (!tail && h->source != TP_SRC_1G) evict_empty_over(budget, weight(h));
  if (tail || (h->source != TP_SRC_1G && retained_weight() + weight(h) > budget)) {
    decommit(h);
    put_on_list(h, TP_LIST_FREE);
  } else {
    put_on_list(h, TP_LIST_EMPTY);
  }
}

static void make_empty(tp_hpage_t *h) { _tp_hpage_empty(h, _tp_opt.retain_bytes); }

void _tp_heap_release_empty_pool(void) {
  for (tp_hpage_t *e = empty_list, *next; e; e = next) {
    next = e->next;
    if (e->source != TP_SRC_HUGETLB) continue;
    take_off_list(e);
    decommit(e);
    put_on_list(e, TP_LIST_FREE);
  }
}

/* An hpage with nothing left on it goes back to the pool or the OS whatever the budget (a large
 * run freed once: free_large). */
void _tp_hpage_give_back(tp_hpage_t *h) {
  decay();
  clear_empty(h);
  decommit(h);
  put_on_list(h, TP_LIST_FREE);
}

size_t _tp_heap_trim(size_t keep) {
  _tp_lock(&_tp_heap_lock);
  size_t n = evict_empty_over(keep, 0);
  _tp_unlock(&_tp_heap_lock);
  return n;
}

size_t _tp_heap_retained_bytes(void) {
  _tp_lock(&_tp_heap_lock);
  size_t b = nempty_hp * TP_HPAGE;
  _tp_unlock(&_tp_heap_lock);
  return b;
}

unsigned _tp_heap_start_pages(tp_hpage_t *const **pages) {
  *pages = start_pages;
  return nstart_pages;
}

/* A run of n hpages whose records are FREE or EMPTY (EMPTY on 4 KiB pages only, when
 * `unbacked`), starting at an aligned address. */
static tp_hpage_t *find_run(size_t n, size_t align, int unbacked) {
  if (nfree_hp + nempty_hp < n) return NULL;
  for (unsigned c = 0; c < nchunks; c++) {
    uintptr_t lim = (c == nchunks - 1) ? cursor : chunks[c].end;
    uintptr_t a = (chunks[c].start + align - 1) & ~(uintptr_t)(align - 1);
    while (a + n * TP_HPAGE <= lim) {
      size_t i = 0;
      for (; i < n; i++) {
        const tp_hpage_t *x = _tp_hpage_of((void *)(a + i * TP_HPAGE));
        if (x->state != TP_HP_FREE && (x->state != TP_HP_EMPTY || (unbacked && x->source != TP_SRC_4K))) break;
      }
      if (i == n) return _tp_hpage_of((void *)a);
      a = (a + (i + 1) * TP_HPAGE + align - 1) & ~(uintptr_t)(align - 1);
    }
  }
  return NULL;
}

uintptr_t _tp_heap_unused_run(size_t n, size_t align, int unbacked) {
  tp_hpage_t *h = NULL;
  if (unbacked && n == 1 && align <= TP_HPAGE) { /* one hpage on 4 KiB pages: a retained one, else a free one */
    for (tp_hpage_t *e = empty_list; e && h == NULL; e = e->next)
      if (e->source == TP_SRC_4K) h = e;
    if (h == NULL) h = free_list;
  }
  if (h == NULL) h = find_run(n, align, unbacked);
  if (h != NULL) return h->addr;
  if (grow(n * TP_HPAGE, align) != 0) return 0;
  uintptr_t aligned = (cursor + align - 1) & ~(uintptr_t)(align - 1);
  for (; cursor < aligned; cursor += TP_HPAGE) { /* skipped hpages stay usable */
    put_on_list(_tp_hpage_of((void *)cursor), TP_LIST_FREE);
  }
  uintptr_t a = cursor;
  cursor += n * TP_HPAGE;
  return a;
}

int _tp_heap_extend_run(uintptr_t end, uintptr_t new_end) {
  int at_cursor = end <= cursor && cursor < new_end;
  if (at_cursor && new_end > cursor_end) return 0;
  for (uintptr_t a = end; a < new_end; a += TP_HPAGE) {
    tp_hpage_t *x = _tp_hpage_of((void *)a);
    if (x == NULL || (x->state != TP_HP_FREE && x->state != TP_HP_EMPTY)) return 0;
    /* Past the cursor, only its own chunk's never-used hpages, taken from the cursor on. */
    if (a >= cursor && a < cursor_end && !at_cursor) return 0;
    if (x->listed == TP_LIST_NONE && !(a >= cursor && a < cursor_end)) return 0;
  }
  if (at_cursor) cursor = new_end; /* if taking them fails, the never-used ones go on the lists */
  return 1;
}

/* The hpages of a large run not backed yet, but its 4 KiB tail, go on the pool in stretches
 * reserved at once and faulted in as touched (os.c, _tp_os_back_lazy), when the run's source
 * is the pool; what that cannot map, back() backs one hpage at a time. */
static void back_large_lazily(uintptr_t a, size_t n, size_t adding, int tail4k) {
  if (_tp_os_hooks.back_lazy == NULL || tail4k >= TP_RUN_ALL_4K) return;
  size_t m = tail4k ? n - 1 : n;
  int want = -1, node = 0;
  for (size_t i = 0; i < m;) {
    if (_tp_hpage_of((void *)(a + i * TP_HPAGE))->state != TP_HP_FREE) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < m && _tp_hpage_of((void *)(a + j * TP_HPAGE))->state == TP_HP_FREE) j++;
    if (want < 0) {
      want = run_source(adding);
      node = _tp_os_hooks.current_node();
    }
    if (want != TP_SRC_HUGETLB) return;
    if (_tp_os_hooks.back_lazy((void *)(a + i * TP_HPAGE), (j - i) * TP_HPAGE, node,
                              _tp_heap_ctr.pages_by_source[TP_SRC_HUGETLB]) == 0)
      for (size_t k = i; k < j; k++) { /* backed and empty, fresh: take_run carves them */
        tp_hpage_t *x = _tp_hpage_of((void *)(a + k * TP_HPAGE));
        take_off_list(x);
        backed(x, TP_SRC_HUGETLB, 0, node);
        x->lazy = 1;
        x->state = TP_HP_EMPTY;
      }
    i = j;
  }
}

/* Takes hpages [a, a + n hpages) for a large run: reserved and unused ones, on the lists or
 * never used past a cursor already moved beyond them. Backs the FREE ones (`adding`: the bytes
 * the run adds, for want_source; first through back_large_lazily when `lazy`) and marks the
 * first the run's head when `head`, the others its tail; clears *zero when one held data
 * before. Out of memory even for 4 KiB pages: every
 * one goes back (those taken so far empty, the others on their lists) and it returns -1. */
int _tp_heap_take_run(uintptr_t a, size_t n, size_t adding, int head, int tail4k, int lazy, int *zero) {
  if (lazy) back_large_lazily(a, n, adding, tail4k);
  for (size_t i = 0; i < n; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(a + i * TP_HPAGE));
    take_off_list(x);
    /* A run all on 4 KiB pages gets fresh ones: a retained page kept whole would hold all of
     * itself, and read as touched whole when the run is measured (runs.c). */
    if (x->state == TP_HP_EMPTY && x->source != TP_SRC_1G &&
        (tail4k >= TP_RUN_ALL_4K ? tail4k == TP_RUN_FRESH_4K || x->source != TP_SRC_4K : x->tail4k == TP_RUN_ALL_4K))
      decommit(x);
    if (x->state == TP_HP_FREE) {
      if (back(x, adding, tail4k >= TP_RUN_ALL_4K ? TP_RUN_ALL_4K : tail4k && i == n - 1) != 0) {
        for (size_t j = 0; j < i; j++) make_empty(_tp_hpage_of((void *)(a + j * TP_HPAGE)));
        put_on_list(x, TP_LIST_FREE);
        for (size_t j = i + 1; j < n; j++) {
          tp_hpage_t *y = _tp_hpage_of((void *)(a + j * TP_HPAGE));
          if (y->listed == TP_LIST_NONE) put_on_list(y, y->state == TP_HP_EMPTY ? TP_LIST_EMPTY : TP_LIST_FREE);
        }
        return -1;
      }
    } else if (x->fresh_mask != TP_ALL_SLOTS) {
      *zero = 0;
    }
    x->state = head && i == 0 ? TP_HP_LARGE : TP_HP_LARGE_TAIL;
    x->fresh_mask = 0;
    x->used_mask = TP_ALL_SLOTS;
    x->nused = TP_SLOTS;
  }
  return 0;
}

void _tp_heap_foreach(void (*fn)(tp_hpage_t *h, void *arg), void *arg) {
  for (unsigned c = 0; c < nchunks; c++) {
    uintptr_t lim = (c == nchunks - 1) ? cursor : chunks[c].end;
    for (uintptr_t a = chunks[c].start; a < lim; a += TP_HPAGE) fn(_tp_hpage_of((void *)a), arg);
  }
}
