/* Runs: the one way a slab/run record is created and released. A run is a stretch of slots of
 * one hpage (small, medium and arena slabs) or of whole hpages (a large block), carved for a
 * group from the hpages the heap hands out (heap.c, through the hpage layer in heap.h),
 * all under the heap lock. This file decides where a group's slot run goes (its own hpages,
 * the shared ones, an idle group's room or other groups' holes), when a group's start pages
 * become huge pages and when a group grows up while the heap starts small, when a freed large
 * run keeps its pages, and how a run grows in place; heap.c owns the address space, backing
 * and retention of the hpages themselves. */
#include <string.h>

#include "runs.h"

__thread uint8_t _tp_run_side __attribute__((tls_model("initial-exec")));

/* ---- groups on start pages -----------------------------------------------------------
 * The rule start-small keeps past start (tests/alloc/test_start_small.c): no slot run is carved
 * on an hpage on 4 KiB pages that holds data (start_page_holds_data: a quarter of it touched,
 * or an eighth and half of what is carved), but on those of the group kept on them
 * (_tp_group_4k) and an explicit group's first. Start pages hold what was placed while the
 * heap (or the group) was young; a run carved on one past start is data placed like any other
 * past start, often the next part of a structure the program built through it, so a page that
 * holds data is collapsed first, with the shared start page the group filled while its site
 * was young. What that makes resident is at most the page's untouched part, no more than a
 * fresh huge page for the run would; a page with less touched (a few blocks of a site, or
 * slabs carved and barely written) is left to the heap's budgeted promotion of start pages
 * (heap.c), as a huge page would hold 2 MiB for it. A page whose collapse the kernel refuses
 * stays on 4 KiB pages. The decisions are policy.c's; the pages and their collapse, heap.c's. */
static int start_page_holds_data(const tp_hpage_t *h) {
  size_t touched = _tp_os_hooks.resident((void *)h->addr, TP_HPAGE);
  return _tp_policy_start_holds_data(touched, (size_t)h->nused * TP_SLOT);
}

/* A start page a group filled: 3/4 of it carved, and enough of it touched
 * (_tp_policy_start_filled). */
static int start_page_filled(const tp_hpage_t *h) {
  if (h->nused < TP_SLOTS * 3 / 4) return 0;
  return _tp_policy_start_filled(_tp_os_hooks.resident((void *)h->addr, TP_HPAGE), _tp_heap_used_bytes);
}

/* Collapses group g's filled start pages; it has grown up if there was one. */
static int grow_up(tp_group_t *g) {
  int grows = 0;
  for (unsigned used = TP_SLOTS * 3 / 4; used <= TP_SLOTS; used++)
    for (tp_hpage_t *h = g->filler.bucket[used]; h; h = h->next) {
      if (!h->start || h->source != TP_SRC_4K || !start_page_filled(h)) continue;
      grows = 1;
      _tp_heap_collapse_start(h);
    }
  g->grown = (uint8_t)grows;
  return grows;
}

/* Whether group g, about to take a new hpage while the heap starts small, has grown (heap
 * lock). A group that fills a start page while the heap is young holds a structure of 2 MiB
 * and more, which start_kb would keep on 4 KiB pages until the whole heap passes it: a program
 * with a heap of 2-16 MiB whose hot set is larger than the L1 TLB's reach is on 4 KiB pages.
 * Such a group grows up alone: its filled start pages (start_page_filled) are collapsed and its
 * next hpages are huge pages (tp_group_t.grown); the rest of the heap still starts small. Its
 * cost is the group's last page, partly used, as for any group past start_kb. Looked at when
 * the group needs a new hpage and when a run is carved on one of its start pages (start_carve),
 * with at least TP_GROW_MIN_BYTES carved in the heap: a process under it (a short script's
 * interpreter) takes no huge page. The shared group does not grow up: it holds every young
 * site's first blocks, and its pages are partly used. */
static int group_grows(tp_group_t *g) {
  if (g->grown) return 1;
  if (g->id == TP_SHARED_GROUP || g->on_4k || !_tp_heap_starting(TP_SLOT) || _tp_heap_used_bytes < TP_GROW_MIN_BYTES)
    return 0;
  return grow_up(g);
}

/* Past start (the heap's, or its owner's: `grown`), a start page holding data that a slot run
 * for group g is about to be carved on is collapsed into a huge page first, and so is the
 * shared start page g filled while young (its young_hp), if it holds data; heap lock. */
static void start_carve(tp_hpage_t *h, const tp_group_t *g) {
  tp_group_t *owner = _tp_groups[h->owner];
  int past = _tp_heap_past_start();
  /* An explicit group's first hpage has a rule of its own (alloc_slots). */
  int first = owner->explicit_ && h == owner->young_hp;
  if (_tp_heap_start_pending(h) && !owner->on_4k && !first && (past || owner->grown) && start_page_holds_data(h))
    _tp_heap_collapse_start(h);
  /* Once the heap has carved TP_GROW_HALF_BYTES, a group grows up alone (group_grows) at its
   * start pages' carves too, not only when it needs a new hpage: a group whose first page was
   * not filled enough when it took its second, and that needs no third, would keep its data on
   * 4 KiB pages or not as its threads happened to interleave. */
  else if (_tp_heap_start_pending(h) && h->owner != TP_SHARED_GROUP && !owner->on_4k && !first && !owner->grown &&
           _tp_heap_starting(TP_SLOT) && _tp_heap_used_bytes >= TP_GROW_HALF_BYTES)
    grow_up(owner);
  /* The group's first slabs, carved on a shared start page while its site was young, are
   * often the start of what it goes on building: that page is collapsed with it. */
  tp_hpage_t *y = g->young_hp;
  if (y && y != h && !g->explicit_ && _tp_heap_start_pending(y) && y->owner == TP_SHARED_GROUP && (past || g->grown) &&
      start_page_holds_data(y))
    _tp_heap_collapse_start(y);
}

/* Takes out of `holes` (free slots) and `pages` the hpages still on 4 KiB start pages of the
 * groups that lend and borrow (not explicit ones), whose free slots cost nothing until touched. */
static void start_holes(size_t *holes, size_t *pages) {
  tp_hpage_t *const *start;
  unsigned n = _tp_heap_start_pages(&start);
  for (unsigned i = 0; i < n; i++) {
    tp_hpage_t *h = start[i];
    if (h->state == TP_HP_ACTIVE && h->source == TP_SRC_4K && h->listed == TP_LIST_FILLER &&
        !_tp_groups[h->owner]->explicit_)
      *holes -= TP_SLOTS - h->nused, (*pages)--;
  }
}

/* Idle groups' room for a shared slab (policy.c, _tp_policy_lend): the fullest huge page with
 * a free run of n slots, up to TP_LEND_UPTO slots used, among those of exclusive groups that
 * stopped filling; *owner becomes the lender, whose filler keeps the hpage (heap lock held).
 * The lender keeps a quarter of the page for when it fills again. Hpages on 4 KiB pages are
 * not lent: their free slots cost nothing until touched, unlike a huge page's. */
#define TP_LEND_UPTO (TP_SLOTS * 3 / 4)
static tp_hpage_t *borrow_idle_room(unsigned n, int *slot, tp_group_t **owner) {
  uint64_t now = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed);
  tp_hpage_t *best = NULL;
  int best_slot = -1;
  for (unsigned i = 1, end = _tp_groups_end(); i < end; i++) {
    tp_group_t *g = _tp_groups[i];
    if (g == NULL || g->filler.hpages == 0 ||
        !_tp_policy_lend(g->explicit_, g->exclusive, now - atomic_load_explicit(&g->last_refill, memory_order_relaxed)))
      continue;
    int s;
    tp_hpage_t *h = _tp_filler_pick_within(&g->filler, n, best ? best->nused + 1 : 0, TP_LEND_UPTO - (int)n, 1, &s);
    if (h) best = h, best_slot = s, *owner = g;
  }
  *slot = best_slot;
  return best;
}

/* Other groups' holes (policy.c, _tp_policy_fill_holes): when the free slots of the huge pages
 * carved into slot runs pass a bound, a group whose own pages are full takes the fullest hole
 * of the shared pages, or of another site or thread group's pages up to 3/4 of one, before a
 * new hpage. A group that took pages of its own leaves its slabs on the shared pages; as they
 * empty, the shared pages keep their holes while the group fills new pages. Explicit
 * groups neither borrow nor lend, and their pages are not counted. Nor are pages on 4 KiB
 * pages: their free slots cost nothing until touched, and a start page filled up is collapsed
 * into a huge page (filling them would make it hold more, not less). */
static tp_hpage_t *borrow_holes(const tp_group_t *g, unsigned n, int *slot, tp_group_t **owner) {
  if (g->explicit_) return NULL; /* its pages are its own, as for tp_group_destroy */
  size_t holes = 0, pages = 0;
  unsigned end = _tp_groups_end();
  for (unsigned i = 0; i < end; i++) {
    tp_group_t *o = _tp_groups[i];
    if (o != NULL && !o->explicit_) holes += o->filler.hpages * TP_SLOTS - o->filler.used, pages += o->filler.hpages;
  }
  start_holes(&holes, &pages); /* 4 KiB-backed: their free slots cost nothing */
  if (!_tp_policy_fill_holes(holes * TP_SLOT, pages * TP_HPAGE)) return NULL;
  tp_hpage_t *best = NULL;
  int best_slot = -1, s;
  for (unsigned i = 0; i < end; i++) {
    tp_group_t *o = _tp_groups[i];
    if (o == NULL || o == g || o->explicit_ || o->filler.hpages == 0) continue;
    int upto = i == TP_SHARED_GROUP ? (int)TP_SLOTS : TP_LEND_UPTO;
    tp_hpage_t *h = _tp_filler_pick_within(&o->filler, n, best ? best->nused + 1 : 0, upto - (int)n, 1, &s);
    if (h) best = h, best_slot = s, *owner = o;
  }
  *slot = best_slot;
  return best;
}

/* Carves a run of n slots for group g, starting at a multiple of `step` slots (a medium block
 * aligned past a slot), heap lock held. Returns the slot run's address, fills *hp_out and
 * *slot_out, and sets *zeroed when the memory is known to be zero. */
static void *alloc_slots(tp_group_t *g, unsigned n, unsigned step, tp_hpage_t **hp_out, unsigned *slot_out, int *zeroed) {
  tp_group_t *owner = g->exclusive ? g : &_tp_shared_group;
  int slot = -1;
  tp_hpage_t *h = NULL;
  /* A young group keeps to the shared hpage it already uses: its first slabs stay together. */
  tp_hpage_t *y = g->exclusive ? NULL : g->young_hp;
  if (y && y->state == TP_HP_ACTIVE && y->owner == TP_SHARED_GROUP &&
      (slot = _tp_slots_find_run_step(y->used_mask, n, step)) >= 0)
    h = y;
  else
    h = _tp_filler_pick_step(&owner->filler, n, step, &slot);
  /* Borrowing is for runs at any slot (step > 1 is rare: a medium block aligned past a slot). */
  if (h == NULL && step == 1 && owner == &_tp_shared_group) h = borrow_idle_room(n, &slot, &owner);
  if (h == NULL && step == 1) h = borrow_holes(g, n, &slot, &owner);
  if (h == NULL) {
    /* An explicit group starts small: its first hpage is on 4 KiB pages, resident only where
     * used, and is collapsed into a huge page when the group takes a second one (it is full
     * then): a program that makes a group for each of many small tables would otherwise hold
     * a huge page per group. The first pages made while the heap is young are start pages,
     * which the start policy collapses within its budget. Its pages stay its own. */
    int small = g->explicit_ && owner == g && _tp_opt.pool == TP_POOL_AUTO && g->filler.hpages == 0;
    if (g->on_4k) small = TP_HPAGE_4K_ONLY; /* every one of its hpages (_tp_group_4k) */
    /* Asked first, so that an explicit group whose first page is full grows up as a site group
     * does (its next hpages huge while the heap is young), not only has that page collapsed. */
    if (!small && group_grows(owner)) small = TP_HPAGE_HUGE;
    tp_hpage_t *y = g->explicit_ ? g->young_hp : NULL;
    if (y != NULL && (!small || small == TP_HPAGE_HUGE)) {
      g->young_hp = NULL;
      if (y->state == TP_HP_ACTIVE && y->owner == g->id && y->source == TP_SRC_4K && _tp_hpage_collapse(y) == 0)
        y->tail4k = 0, y->start = 0;
    }
    h = _tp_hpage_get(small);
    if (h == NULL) return NULL;
    if (small && h->source == TP_SRC_4K) g->young_hp = h;
    h->state = TP_HP_ACTIVE;
    h->owner = owner->id;
    h->used_mask = 0;
    h->side_mask = 0;
    h->nused = 0;
    _tp_filler_insert(&owner->filler, h);
    slot = 0;
  }
  /* Within the hpage, a run of slots the thread's side gave back last (or never used, for side
   * 0), if it has one: a slab a thread released is carved again by a thread of its side, whose
   * cache may still hold its lines, not by the other side's, which would write every line of
   * the other thread's released slabs. On 4 KiB pages only a run already touched: one never
   * touched would add resident pages where first fit reuses some. A process with one thread,
   * side 0, marks none and carves first fit. */
  if (step == 1) {
    tp_slotmask_t other = _tp_run_side ? ~h->side_mask : h->side_mask;
    if (other & ~h->used_mask & TP_SLOT_RUN(slot, n)) {
      int s = _tp_slots_find_run(h->used_mask | other | (h->source == TP_SRC_4K ? h->fresh_mask : 0), n);
      if (s >= 0) slot = s;
    }
  }
  if (h->start || (g->young_hp && g->young_hp->start)) start_carve(h, g);
  tp_slotmask_t bits = TP_SLOT_RUN(slot, n);
  *zeroed = (h->fresh_mask & bits) == bits;
  h->fresh_mask &= ~bits;
  _tp_filler_update(&owner->filler, h, (unsigned)slot, n, 1);
  _tp_heap_used_bytes += (size_t)n * TP_SLOT;
  if (!g->exclusive) g->young_hp = h;
  *hp_out = h;
  *slot_out = (unsigned)slot;
  return (void *)(h->addr + ((uintptr_t)slot << TP_SLOT_SHIFT));
}

static void free_slots(tp_hpage_t *h, unsigned slot, unsigned n) {
  tp_group_t *owner = _tp_groups[h->owner];
  for (unsigned i = slot; i < slot + n; i++) h->slot_slab[i] = NULL;
  if (_tp_run_side)
    h->side_mask |= TP_SLOT_RUN(slot, n);
  else
    h->side_mask &= ~TP_SLOT_RUN(slot, n);
  _tp_filler_update(&owner->filler, h, slot, n, 0);
  _tp_heap_used_bytes -= (size_t)n * TP_SLOT;
  if (h->nused == 0) {
    _tp_filler_remove(&owner->filler, h);
    _tp_hpage_empty(h, _tp_opt.retain_bytes);
  }
}

/* Whether the program allocates runs of TP_ONEOFF_LARGE_BYTES or more again soon after one was
 * given back (policy.c, _tp_policy_give_back_large_run); heap lock. */
static int large_cycling, large_gave_back;
static uint64_t large_gave_back_ms;

/* Sites' medium and large runs (policy.c, _tp_policy_large_on_4k): what each of the last
 * TP_LARGE_SITES sites seen (by a hash of the site; a site that takes another's entry starts
 * over) has shown of its runs, under the heap lock. */
#define TP_LARGE_SITES 256
typedef struct {
  uintptr_t site;     /* 0: a free entry */
  uint32_t runs;      /* its medium runs and large ones of up to TP_SPARSE_MAX_HPAGES hpages (saturates) */
  uint8_t verdict;    /* TP_LARGE_UNKNOWN, _DENSE or _SPARSE: what its last measured run showed */
  uint8_t resample;   /* a run measured on retained hpages read dense: the next run is a sample */
  uint32_t written_kb; /* what the last measured run wrote, per hpage (KiB) */
  tp_slab_t *watched; /* its last run on 4 KiB pages while live and not measured yet */
} large_site_t;
static large_site_t large_sites[TP_LARGE_SITES];
/* s->on_4k: on 4 KiB pages; a sample (on fresh pages: what it wrote is what is in memory, its
 * measure is the site's verdict), a run measured when freed (on retained pages, what it wrote
 * is only estimated: read dense, it asks for a sample) or a run not measured. */
enum { TP_ON_4K_SAMPLE = 1, TP_ON_4K_MEASURED, TP_ON_4K };
#define TP_MEASURE_EVERY 8

static large_site_t *large_site(uintptr_t site, int insert) {
  large_site_t *e = &large_sites[((site >> 4) * 0x9E3779B97F4A7C15ull) >> 56];
  if (e->site == site) return e;
  if (!insert) return NULL;
  *e = (large_site_t){.site = site};
  return e;
}

/* Bytes of a run in memory (mincore). */
static size_t run_resident(const tp_slab_t *s) {
  return _tp_os_hooks.resident((void *)s->base, (size_t)s->nhpages * TP_HPAGE);
}
/* What it wrote, as far as mincore tells: what is in memory less what its hpages held when it
 * took them. A run on retained hpages would otherwise read as having written every page the
 * runs before it wrote: a site's buffers, each written at both ends, would read dense after
 * some rounds on one retained hpage, go back to huge pages, and come back at the next sample. */
static size_t run_written(const tp_slab_t *s, size_t resident) {
  size_t before = (size_t)s->held_kb * 1024;
  return resident > before ? resident - before : 0;
}

/* Gives a run on 4 KiB pages, of which `touched` bytes are in memory, its site's verdict; 0 when
 * a run measured while live (`live`) has nothing touched yet: it is left for later. A large
 * one found dense while live is collapsed into huge pages, each hpage with more than an eighth
 * of it touched (as a large block's tail: policy.c, _tp_policy_large_tail_4k); the others stay
 * on 4 KiB pages and go back when the run is freed. A medium one stays as it is: as a huge page
 * its hpage would hold 2 MiB for the block's slots. */
static int measure_large(large_site_t *e, tp_slab_t *s, size_t touched, int live) {
  size_t hpages = s->nhpages;
  size_t asked = (size_t)s->nhpages * TP_HPAGE - s->tail_unused;
  if (live && touched == 0) return 0;
  /* The hpages touched one by one only when the verdict hangs on them (a quarter of one
   * huge page touched or less is sparse whatever they are). */
  if (s->nhpages > 1 &&
      _tp_policy_large_sparse(touched, s->nhpages, asked) != _tp_policy_large_sparse(touched, 1, asked)) {
    hpages = 0;
    for (uint32_t i = 0; i < s->nhpages; i++)
      hpages += _tp_os_hooks.resident((void *)(s->base + (uintptr_t)i * TP_HPAGE), TP_HPAGE) != 0;
  }
  int sparse = _tp_policy_large_sparse(touched, hpages, asked);
  e->written_kb = (uint32_t)(touched / s->nhpages / 1024);
  if (s->on_4k != TP_ON_4K_SAMPLE) { /* on retained pages: a verdict only from a sample */
    if (!sparse) e->resample = 1;
    return 1;
  }
  e->verdict = sparse ? TP_LARGE_SPARSE : TP_LARGE_DENSE;
  if (!live || sparse || asked <= TP_MEDIUM_MAX) return 1;
  int all = 1;
  for (uint32_t i = 0; i < s->nhpages; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(s->base + (uintptr_t)i * TP_HPAGE));
    if (x->source != TP_SRC_4K) continue;
    if (_tp_os_hooks.resident((void *)x->addr, TP_HPAGE) > TP_HPAGE / 8 && _tp_hpage_collapse(x) == 0)
      x->tail4k = 0, x->start = 0;
    else
      all = 0;
  }
  if (all) s->on_4k = 0;
  return 1;
}

/* A run of n whole hpages aligned to `align` (a power of two >= 2 MiB); heap lock held. The
 * block leaves `tail` bytes of its last hpage unasked for: it counts toward start_kb without
 * them, and when what it uses of that hpage is little (policy.c, _tp_policy_large_tail_4k),
 * the hpage is backed by 4 KiB pages if it is not backed already. `on_4k`: every hpage on
 * 4 KiB pages (its site fills its runs in part), TP_RUN_ALL_4K reusing retained ones,
 * TP_RUN_FRESH_4K (a sample) none ever touched: what a retained one held would read as
 * written when the sample is measured. */
static void *alloc_large(size_t n, size_t align, size_t tail, int on_4k, tp_hpage_t **hp_out, int *zeroed) {
  if (n == 0 || n > ((size_t)1 << (TP_VA_BITS - TP_HPAGE_SHIFT))) return NULL;
  if (!large_cycling && n * TP_HPAGE >= TP_ONEOFF_LARGE_BYTES)
    large_cycling = _tp_policy_large_cycling(large_gave_back, large_gave_back_ms, _tp_os_hooks.now_ms());
  uintptr_t a = _tp_heap_unused_run(n, align, on_4k);
  if (a == 0) return NULL;
  int zero = 1;
  size_t bytes = n * TP_HPAGE - tail;
  int tail4k = on_4k ? on_4k : _tp_policy_large_tail_4k(TP_HPAGE - tail, _tp_opt.pool == TP_POOL_AUTO);
  if (_tp_heap_take_run(a, n, bytes, 1, tail4k, 1, &zero) != 0) return NULL;
  _tp_heap_used_bytes += bytes;
  *hp_out = _tp_hpage_of((void *)a);
  *zeroed = zero;
  return (void *)a;
}

static void free_large(tp_hpage_t *h, size_t n, size_t tail_unused) {
  uintptr_t a = h->addr;
  _tp_heap_used_bytes -= n * TP_HPAGE - tail_unused;
  size_t budget = _tp_opt.retain_bytes;
  int all_back = _tp_policy_give_back_large_run(n * TP_HPAGE, large_cycling);
  if (all_back) {
    large_gave_back = 1;
    large_gave_back_ms = _tp_os_hooks.now_ms();
  } else {
    size_t pool = 0;
    for (size_t i = 0; i < n; i++) pool += _tp_hpage_of((void *)(a + i * TP_HPAGE))->source == TP_SRC_HUGETLB;
    /* The pool's count is read (/proc/meminfo) only for a run over the budget: 0 answers no. */
    if (_tp_policy_keep_large_run(pool * TP_HPAGE, budget, pool * TP_HPAGE > budget ? _tp_os_hooks.pool_free() : 0))
      budget = pool * TP_HPAGE;
  }
  for (size_t i = 0; i < n; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(a + i * TP_HPAGE));
    if (all_back && x->source != TP_SRC_1G) /* a 1 GiB page is kept whole until exit */
      _tp_hpage_give_back(x);
    else
      _tp_hpage_empty(x, budget);
  }
}

/* ---- runs ---------------------------------------------------------------------------- */
/* Counts `bytes` more of slot runs for group g, which gets hpages of its own once they pass
 * its threshold (policy.c, _tp_policy_exclusive; heap lock). */
static void add_slab_bytes(tp_group_t *g, size_t bytes) {
  size_t total = atomic_fetch_add(&g->slab_bytes, bytes) + bytes;
  if (_tp_policy_exclusive(g->exclusive, total, _tp_opt.exclusive_bytes, _tp_opt.group,
                           g->site != 0 && _tp_key_class(g->site) >= 0))
    g->exclusive = 1;
}

/* Points the page map's slots [from, to) of the run's first hpage at it. */
static void map_slots(tp_slab_t *s, unsigned from, unsigned to) {
  for (unsigned i = from; i < to; i++) __atomic_store_n(&s->hp->slot_slab[i], s, __ATOMIC_RELEASE);
}

const uint8_t _tp_no_live[1];

/* The site's sample still live, looked at again (heap lock): forgotten once it has a verdict. */
static void look_at_watched(large_site_t *e) {
  if (e->watched != NULL && measure_large(e, e->watched, run_written(e->watched, run_resident(e->watched)), 1))
    e->watched = NULL;
}

int _tp_run_site_route(uintptr_t site, size_t size) {
  if (site == 0 || _tp_opt.pool != TP_POOL_AUTO) return TP_ROUTE_SLAB;
  /* A site seen before, with no sample to look at: counted without the heap lock, which a
   * program allocating such blocks one after another would wait on at every block. A count
   * lost to a race only moves its next sample. */
  size_t bytes = (size + TP_SLOT - 1) & ~(TP_SLOT - 1);
  large_site_t *e = large_site(site, 0);
  if (e != NULL && __atomic_load_n(&e->watched, __ATOMIC_RELAXED) == NULL && !_tp_heap_starting(bytes)) {
    uint32_t runs = __atomic_load_n(&e->runs, __ATOMIC_RELAXED);
    uint32_t next = runs < UINT32_MAX ? runs + 1 : runs;
    int route = _tp_policy_slab_block_route(next, __atomic_load_n(&e->verdict, __ATOMIC_RELAXED));
    if (route != TP_ROUTE_SAMPLE) {
      __atomic_store_n(&e->runs, next, __ATOMIC_RELAXED);
      return route;
    }
  }
  int route = TP_ROUTE_SLAB;
  _tp_lock(&_tp_heap_lock);
  if (!_tp_heap_starting(bytes)) { /* as _tp_run_new_site */
    e = large_site(site, 1);
    look_at_watched(e);
    uint32_t next = e->runs < UINT32_MAX ? e->runs + 1 : e->runs;
    route = _tp_policy_slab_block_route(next, e->verdict);
    if (route == TP_ROUTE_SAMPLE) e->resample = 1; /* _tp_run_new_site: a sample, whatever the verdict */
    else e->runs = next;
  }
  _tp_unlock(&_tp_heap_lock);
  return route;
}

tp_slab_t *_tp_run_new(tp_group_t *g, int kind, size_t n, size_t align, size_t meta_size, size_t last) {
  return _tp_run_new_site(g, kind, n, align, meta_size, last, 0);
}

tp_slab_t *_tp_run_new_site(tp_group_t *g, int kind, size_t n, size_t align, size_t meta_size, size_t last,
                            uintptr_t site) {
  tp_slab_t *s = _tp_meta_alloc(meta_size);
  if (s == NULL) return NULL;
  tp_hpage_t *h;
  int zeroed;
  void *mem;
  _tp_lock(&_tp_heap_lock);
  /* A medium or large run of a site: what its runs have shown so far. */
  large_site_t *e = NULL;
  int on_4k = 0, sample = 0;
  /* (Not while the heap starts small: its hpages are on 4 KiB pages anyway.) */
  if (site && (kind == TP_SLAB_MEDIUM || (kind == TP_SLAB_LARGE && n <= TP_SPARSE_MAX_HPAGES)) &&
      !_tp_heap_starting(kind == TP_SLAB_LARGE ? n * TP_HPAGE : n * TP_SLOT)) {
    e = large_site(site, 1);
    look_at_watched(e);
    if (e->runs < UINT32_MAX) e->runs++;
    on_4k = _tp_policy_large_on_4k(kind == TP_SLAB_LARGE ? n : 1, e->runs, e->verdict, _tp_opt.pool == TP_POOL_AUTO);
    sample = on_4k && (e->verdict != TP_LARGE_SPARSE || e->resample);
    if (sample) e->resample = 0;
    if (on_4k && kind == TP_SLAB_MEDIUM) { /* a run of one hpage of its own, on 4 KiB pages */
      last = n * TP_SLOT;
      kind = TP_SLAB_LARGE;
      n = 1;
      align = 0;
    }
  }
  if (kind == TP_SLAB_LARGE) {
    size_t tail = last ? TP_HPAGE - last : 0;
    mem = alloc_large(n, align < TP_HPAGE ? TP_HPAGE : align, tail,
                      !on_4k ? 0 : sample ? TP_RUN_FRESH_4K : TP_RUN_ALL_4K, &h, &zeroed);
    if (mem) {
      h->owner = g->id;
      s->tail_unused = (uint32_t)tail;
      s->base = (uintptr_t)mem; /* before another thread's run of the site can measure it */
      s->nhpages = (uint32_t)n;
      s->site = site;
      /* Measured when freed: a sample, and one in TP_MEASURE_EVERY runs of a site found sparse
       * (a mincore; the others are taken to write what the last one measured did). */
      s->on_4k = !on_4k ? 0 : sample ? TP_ON_4K_SAMPLE : e->runs % TP_MEASURE_EVERY == 0 ? TP_ON_4K_MEASURED : TP_ON_4K;
      if (on_4k) {
        /* What its hpages held already (retained ones): not written by it. */
        for (uint32_t i = 0; i < n; i++) s->held_kb += _tp_hpage_of((char *)mem + (uintptr_t)i * TP_HPAGE)->held_kb;
        /* A sample is looked at again at the site's next run, and collapsed there if the
         * program filled it; a run of a site found sparse only when it is freed. */
        if (sample) e->watched = s;
        _tp_heap_ctr.large_4k++;
      }
    }
  } else {
    unsigned slot;
    mem = alloc_slots(g, (unsigned)n, align > TP_SLOT ? (unsigned)(align / TP_SLOT) : 1, &h, &slot, &zeroed);
    if (mem) {
      s->nslots = (uint8_t)n;
      s->first_slot = (uint8_t)slot;
      s->site = site;
      add_slab_bytes(g, n * TP_SLOT);
    }
  }
  _tp_unlock(&_tp_heap_lock);
  if (mem == NULL) {
    _tp_meta_free(s, meta_size);
    return NULL;
  }
  s->base = (uintptr_t)mem;
  s->group = g->id;
  s->kind = (uint8_t)kind;
  s->hp = h;
  s->zeroed = (uint8_t)zeroed;
  s->meta_size = (uint32_t)meta_size;
  s->free_live = (uint8_t *)_tp_no_live; /* slab_new points small slabs at their live bytes */
  return s;
}

void _tp_run_publish(tp_slab_t *s) {
  if (s->kind == TP_SLAB_LARGE) map_slots(s, 0, 1);
  else map_slots(s, s->first_slot, s->first_slot + s->nslots);
}

void _tp_run_release(tp_slab_t *s) {
  _tp_lock(&_tp_heap_lock);
  if (s->kind == TP_SLAB_LARGE) {
    __atomic_store_n(&s->hp->slot_slab[0], NULL, __ATOMIC_RELEASE);
    if (s->on_4k) {
      large_site_t *e = large_site(s->site, 0);
      size_t held; /* what its hpages hold now */
      if (s->on_4k != TP_ON_4K || e == NULL) {
        held = run_resident(s);
        if (e != NULL) { /* its site's verdict, from what it wrote */
          if (e->watched == s) e->watched = NULL;
          measure_large(e, s, run_written(s, held), 0);
        }
      } else {
        held = (size_t)s->held_kb * 1024 + (size_t)e->written_kb * 1024 * s->nhpages;
        if (held > (size_t)s->nhpages * TP_HPAGE) held = (size_t)s->nhpages * TP_HPAGE;
      }
      /* What its hpages hold while retained (heap.c): their share of it. */
      uint32_t kb = (uint32_t)(held / s->nhpages / 1024);
      for (uint32_t i = 0; i < s->nhpages; i++) _tp_hpage_of((void *)(s->base + (uintptr_t)i * TP_HPAGE))->held_kb = kb;
    }
    free_large(s->hp, s->nhpages, s->tail_unused);
  } else {
    atomic_fetch_sub(&_tp_groups[s->group]->slab_bytes, (size_t)s->nslots * TP_SLOT);
    free_slots(s->hp, s->first_slot, s->nslots); /* clears the page map for its slots */
  }
  _tp_unlock(&_tp_heap_lock);
  _tp_meta_free(s, s->meta_size);
}

/* A large run of s->nhpages grows to n hpages in place when the hpages after it are reserved
 * and unused: retained or decommitted ones (on the lists), or never-used ones at the cursor,
 * which then moves past them (heap lock held). When the run grows by at least half
 * (_tp_policy_grow_lazily), its new hpages on the pool are reserved and faulted in as touched,
 * in one mapping (back_large_lazily), as a new run's are: a buffer grown by doubling would
 * otherwise have every new hpage claimed and zeroed at the realloc, its last for a few bytes.
 * Smaller steps are claimed one by one from the windows: a mapping per step would let a buffer
 * grown 2 MiB at a time use up vm.max_map_count, where growth by half keeps them to a logarithm
 * of its size. A growing buffer's last hpage is not put on 4 KiB pages as a new block's
 * little-used one is: the buffer grows into it, and would fault it 4 KiB at a time only to have
 * it collapsed at the next step. */
static int grow_large(tp_slab_t *s, size_t n) {
  uintptr_t end = s->base + (uintptr_t)s->nhpages * TP_HPAGE, new_end = s->base + (uintptr_t)n * TP_HPAGE;
  if (new_end < end || (new_end >> TP_VA_BITS) != 0) return 0;
  if (!_tp_heap_extend_run(end, new_end)) return 0;
  int zero = 1;
  int lazy = _tp_policy_grow_lazily(s->nhpages, n - s->nhpages);
  if (_tp_heap_take_run(end, n - s->nhpages, (size_t)(new_end - end), 0, 0, lazy, &zero) != 0) return 0;
  /* Its last hpage is no longer a little-used tail: collapsed into a huge page if it can be. */
  tp_hpage_t *t = _tp_hpage_of((void *)(end - TP_HPAGE));
  if (t->tail4k && _tp_hpage_collapse(t) == 0) t->tail4k = 0;
  _tp_heap_used_bytes += (size_t)(new_end - end) + s->tail_unused; /* its old last hpage is used now */
  s->tail_unused = 0;
  s->nhpages = (uint32_t)n;
  return 1;
}

int _tp_run_grow(tp_slab_t *s, size_t n) {
  if (s->kind == TP_SLAB_LARGE) {
    /* A run on 4 KiB pages for its site moves (a new run, from what the site has shown). */
    if (n <= s->nhpages || n > UINT32_MAX || s->on_4k) return 0;
    _tp_lock(&_tp_heap_lock);
    int ok = grow_large(s, n);
    _tp_unlock(&_tp_heap_lock);
    return ok;
  }
  unsigned first = s->first_slot, have = s->nslots;
  if (s->kind != TP_SLAB_MEDIUM || n <= have || first + n > TP_SLOTS) return 0;
  tp_slotmask_t bits = TP_SLOT_RUN(first + have, n - have); /* n - have < TP_SLOTS */
  tp_hpage_t *h = s->hp;
  _tp_lock(&_tp_heap_lock);
  int ok = (h->used_mask & bits) == 0;
  if (ok) {
    _tp_filler_update(&_tp_groups[h->owner]->filler, h, first + have, (unsigned)(n - have), 1);
    h->fresh_mask &= ~bits;
    _tp_heap_used_bytes += (size_t)(n - have) * TP_SLOT;
    add_slab_bytes(_tp_groups[s->group], (n - have) * TP_SLOT);
    s->nslots = (uint8_t)n;
    s->size = (uint32_t)(n * TP_SLOT);
    map_slots(s, first + have, first + (unsigned)n);
  }
  _tp_unlock(&_tp_heap_lock);
  return ok;
}
