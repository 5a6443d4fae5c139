/* Placement groups: objects of one group share huge pages whatever their size class, apart
 * from other groups. Groups come from allocation sites (default), threads, or the explicit
 * tp_group_* API. Group 0 is shared: sites past the bound, and `group:none`. */
#include <string.h>

#include "group.h"

tp_group_t *_tp_groups[TP_MAX_GROUPS];
tp_group_t _tp_shared_group;

static tp_lock_t groups_lock = TP_LOCK_INIT;
_Atomic unsigned _tp_groups_next = 1; /* every id ever given is below it (_tp_groups_end) */
static uint16_t free_ids[TP_MAX_GROUPS];
static unsigned nfree_ids;
static unsigned nsites, nthreads_groups;

#define SITE_TABLE 4096
static _Atomic uintptr_t site_key[SITE_TABLE];
static _Atomic uint16_t site_val[SITE_TABLE];
/* Young sites: demand is the site's recent refills of the shared group's caches (policy.c),
 * bytes what those refills took. */
static uint8_t site_young[SITE_TABLE];
static uint32_t site_demand[SITE_TABLE];
static uint64_t site_stamp[SITE_TABLE];
static size_t site_bytes[SITE_TABLE];
static unsigned site_used;
/* Wrappers (sitekey.h): the classes each site was seen allocating on the slow path, and
 * whether it is split into site + class keys (a wrapper, or named by size in the plan). A site
 * the plan names whole stays whole. */
static _Atomic uint64_t site_classes[SITE_TABLE];
static _Atomic uint8_t site_split[SITE_TABLE];
static uint8_t site_planned[SITE_TABLE];
static _Atomic unsigned nsplit;

static void group_setup(tp_group_t *g, unsigned id, const char *name) {
  g->id = (uint16_t)id;
  _tp_lock_reinit(&g->arena_lock);
  /* A lane never used holds zeros, an unlocked mutex: its pages stay untouched. */
  unsigned used = atomic_exchange(&g->lanes_used, 0);
  for (unsigned i = 0; i < TP_LANES; i++)
    for (unsigned c = 0; c < TP_NCLASSES && (i == 0 || (used & (1u << i))); c++) _tp_lock_reinit(&g->lanes[i][c].lock);
  /* Copied without stdio: a process that never grows a site group (a short command, `true`)
   * does not fault in libc's printf code for it. */
  if (name) {
    size_t n = strnlen(name, sizeof g->name - 1);
    memcpy(g->name, name, n);
    g->name[n] = 0;
  }
}

void _tp_groups_init(void) {
  group_setup(&_tp_shared_group, TP_SHARED_GROUP, "shared");
  _tp_shared_group.exclusive = 1; /* it owns the shared hpages */
  _tp_groups[TP_SHARED_GROUP] = &_tp_shared_group;
}

/* A new group id and record (groups_lock held); 0 when the table is full. */
static tp_group_t *group_new(const char *name) {
  unsigned id;
  tp_group_t *g;
  if (nfree_ids > 0) {
    id = free_ids[--nfree_ids];
    g = _tp_groups[id];
    uint32_t gen = atomic_load(&g->gen);
    memset(&g->filler, 0, sizeof g->filler);
    atomic_store(&g->slab_bytes, 0);
    g->exclusive = 0;
    g->explicit_ = 0;
    g->ordered = 0;
    g->on_4k = 0;
    g->grown = 0;
    g->arena_cur = NULL;
    g->young_hp = NULL;
    g->site = 0;
    g->name[0] = 0;
    atomic_store(&g->gen, gen); /* already bumped by destroy */
  } else {
    if (_tp_groups_next >= TP_MAX_GROUPS) return NULL;
    g = _tp_meta_alloc(sizeof(tp_group_t));
    if (g == NULL) return NULL;
    id = _tp_groups_next;
    atomic_store(&g->gen, 1);
  }
  group_setup(g, id, name);
  __atomic_store_n(&_tp_groups[id], g, __ATOMIC_RELEASE);
  if (id >= _tp_groups_next) atomic_store_explicit(&_tp_groups_next, id + 1, memory_order_release); /* after the record */
  return g;
}

static inline size_t site_hash(uintptr_t ra) {
  uint64_t x = (uint64_t)ra * 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 40) & (SITE_TABLE - 1);
}

/* The table slot of site ra, -1 when the table is crowded (groups_lock held to insert). */
static int site_slot(uintptr_t ra, int insert) {
  size_t i = site_hash(ra);
  for (unsigned probe = 0; probe < SITE_TABLE; probe++, i = (i + 1) & (SITE_TABLE - 1)) {
    uintptr_t k = atomic_load_explicit(&site_key[i], memory_order_acquire);
    if (k == ra) return (int)i;
    if (k == 0) break;
  }
  if (!insert) return -1;
  unsigned planned = _tp_plan_group(ra); /* outside the lock: it may create the group */
  int split = _tp_key_class(ra) < 0 && planned == TP_SHARED_GROUP && _tp_plan_splits(ra);
  _tp_lock(&groups_lock);
  int slot = -1;
  if (site_used * 4 < SITE_TABLE * 3) { /* else crowded: shared, not remembered */
    i = site_hash(ra);
    for (;; i = (i + 1) & (SITE_TABLE - 1)) {
      uintptr_t k = atomic_load_explicit(&site_key[i], memory_order_relaxed);
      if (k == ra || k == 0) break;
    }
    if (atomic_load_explicit(&site_key[i], memory_order_relaxed) == 0) {
      atomic_store_explicit(&site_val[i], (uint16_t)planned, memory_order_relaxed);
      site_young[i] = planned == TP_SHARED_GROUP; /* a planned site skips the young phase */
      site_planned[i] = planned != TP_SHARED_GROUP;
      if (split) {
        atomic_store_explicit(&site_split[i], 1, memory_order_relaxed);
        atomic_fetch_add(&nsplit, 1);
      }
      atomic_store_explicit(&site_key[i], ra, memory_order_release);
      site_used++;
    }
    slot = (int)i;
  }
  _tp_unlock(&groups_lock);
  return slot;
}

uintptr_t _tp_site_key(uintptr_t ra, unsigned c) {
  int i = site_slot(ra, 1);
  if (i < 0 || site_planned[i]) return ra;
  if (atomic_load_explicit(&site_split[i], memory_order_relaxed)) return _tp_key_of(ra, c);
  uint64_t bit = (uint64_t)1 << c;
  uint64_t m = atomic_load_explicit(&site_classes[i], memory_order_relaxed);
  if (m & bit) return ra;
  m = atomic_fetch_or(&site_classes[i], bit) | bit;
  if (!_tp_wrapper_classes(m)) return ra;
  uint8_t zero = 0;
  if (atomic_compare_exchange_strong(&site_split[i], &zero, 1)) {
    atomic_fetch_add(&nsplit, 1);
    if (_tp_opt.verbose) _tp_message("site %#lx is a wrapper: split by size class", (unsigned long)ra);
  }
  return _tp_key_of(ra, c);
}

int _tp_site_is_split(uintptr_t ra) {
  int i = site_slot(ra, 0);
  return i >= 0 && atomic_load_explicit(&site_split[i], memory_order_relaxed);
}

void _tp_site_counts(unsigned *sites, unsigned *split, unsigned *class_keys) {
  unsigned whole = 0, by_class = 0;
  for (unsigned i = 0; i < SITE_TABLE; i++) {
    uintptr_t k = atomic_load_explicit(&site_key[i], memory_order_acquire);
    if (k) whole += _tp_key_class(k) < 0, by_class += _tp_key_class(k) >= 0;
  }
  *sites = whole;
  *split = atomic_load(&nsplit);
  *class_keys = by_class;
}

unsigned _tp_site_group(uintptr_t ra, int *young) {
  int i = site_slot(ra, 1);
  *young = 0;
  if (i < 0) return TP_SHARED_GROUP;
  unsigned id = atomic_load_explicit(&site_val[i], memory_order_acquire);
  if (id == TP_SHARED_GROUP) {
    *young = site_young[i];
    return id;
  }
  unsigned a = atomic_load_explicit(&_tp_groups[id]->alias, memory_order_relaxed);
  return a ? a : id;
}

unsigned _tp_site_refill(uintptr_t ra, size_t bytes) {
  int i = site_slot(ra, 0);
  if (i < 0 || !site_young[i]) {
    int young;
    return _tp_site_group(ra, &young);
  }
  uint64_t now = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed);
  site_demand[i] = _tp_policy_site_demand(site_demand[i], &site_stamp[i], now);
  site_bytes[i] += bytes;
  if (!_tp_policy_site_grows_up(site_demand[i], site_bytes[i]) || _tp_opt.group != TP_GROUP_SITE)
    return TP_SHARED_GROUP;
  _tp_lock(&groups_lock);
  unsigned id = atomic_load_explicit(&site_val[i], memory_order_relaxed);
  if (site_young[i]) {
    site_young[i] = 0; /* grown up: past the bound it stays on the shared group */
    if (nsites < _tp_opt.site_groups) {
      tp_group_t *g = group_new(NULL);
      if (g) {
        g->site = ra;
        if (_tp_key_class(ra) < 0) snprintf(g->name, sizeof g->name, "site:%#lx", (unsigned long)ra);
        else
          snprintf(g->name, sizeof g->name, "site:%#lx/%zu", (unsigned long)_tp_key_site(ra),
                   _tp_class_size((unsigned)_tp_key_class(ra)));
        id = g->id;
        nsites++;
        atomic_store_explicit(&site_val[i], (uint16_t)id, memory_order_release);
        if (_tp_opt.verbose) _tp_message("site %#lx grows up: group %u", (unsigned long)ra, id);
      }
    }
  }
  _tp_unlock(&groups_lock);
  return id;
}

static uint16_t idle_thread_groups[TP_MAX_GROUPS];
static unsigned nidle_thread_groups;

void _tp_thread_group_release(unsigned id) {
  tp_group_t *g = _tp_groups[id];
  /* Idle: its bins keep no empty slab (for the frees other threads still make into it), and
   * the ones kept while its thread ran go back now. */
  atomic_store(&g->idle, 1);
  _tp_bin_trim(g);
  _tp_lock(&groups_lock);
  if (nidle_thread_groups < TP_MAX_GROUPS) idle_thread_groups[nidle_thread_groups++] = (uint16_t)id;
  _tp_unlock(&groups_lock);
}

unsigned _tp_thread_group(void) {
  _tp_lock(&groups_lock);
  unsigned id = TP_SHARED_GROUP;
  if (nidle_thread_groups > 0) {
    id = idle_thread_groups[--nidle_thread_groups];
    atomic_store(&_tp_groups[id]->idle, 0);
  } else if (nthreads_groups < _tp_opt.site_groups) {
    tp_group_t *g = group_new(NULL);
    if (g) {
      snprintf(g->name, sizeof g->name, "thread:%u", nthreads_groups);
      id = g->id;
      nthreads_groups++;
    }
  }
  _tp_unlock(&groups_lock);
  return id;
}

/* The group whose hpages stay on 4 KiB pages: the blocks of slab classes above one slot of
 * sites that write little of them (policy.c, _tp_policy_slab_block_route), made at the first
 * such site; TP_SHARED_GROUP when the group table is full. */
static _Atomic unsigned group_4k;
unsigned _tp_group_4k(void) {
  unsigned id = atomic_load_explicit(&group_4k, memory_order_acquire);
  if (id != 0) return id;
  _tp_lock(&groups_lock);
  id = atomic_load(&group_4k);
  if (id == 0) {
    tp_group_t *g = group_new("sparse buffers (4 KiB pages)");
    if (g) {
      g->exclusive = 1;
      g->on_4k = 1;
      id = g->id;
      atomic_store_explicit(&group_4k, id, memory_order_release);
    }
  }
  _tp_unlock(&groups_lock);
  return id;
}

tp_group_t *_tp_group_create(const char *name, int ordered) {
  _tp_lock(&groups_lock);
  tp_group_t *g = group_new(name ? name : "");
  if (g) {
    g->explicit_ = 1;
    g->exclusive = 1;
  }
  _tp_unlock(&groups_lock);
  if (g && ordered) g->ordered = 1;
  return g;
}

void _tp_group_retire(tp_group_t *g) {
  atomic_fetch_add(&g->gen, 1); /* thread caches holding its objects drop them */
  _tp_bin_release_all(g);
  _tp_lock(&groups_lock);
  g->explicit_ = 0;
  free_ids[nfree_ids++] = g->id;
  _tp_unlock(&groups_lock);
}

void _tp_groups_prefork(void) {
  _tp_lock(&groups_lock);
  for (unsigned i = 0; i < TP_MAX_GROUPS; i++) {
    tp_group_t *g = _tp_groups[i];
    if (g) {
      for (unsigned l = 0; l < TP_LANES; l++)
        for (unsigned c = 0; c < TP_NCLASSES; c++) _tp_lock(&g->lanes[l][c].lock);
      _tp_lock(&g->arena_lock);
    }
  }
}

void _tp_groups_postfork(int child) {
  for (unsigned i = 0; i < TP_MAX_GROUPS; i++) {
    tp_group_t *g = _tp_groups[i];
    if (g) {
      for (unsigned l = 0; l < TP_LANES; l++)
        for (unsigned c = 0; c < TP_NCLASSES; c++) {
          if (child) _tp_lock_reinit(&g->lanes[l][c].lock);
          else _tp_unlock(&g->lanes[l][c].lock);
        }
      if (child) _tp_lock_reinit(&g->arena_lock);
      else _tp_unlock(&g->arena_lock);
    }
  }
  if (child) _tp_lock_reinit(&groups_lock);
  else _tp_unlock(&groups_lock);
}

/* ---- which group serves a request ---------------------------------------------------- */
/* Site adoption (see tp_group_s): called when group g's cache for class c is empty. Returns the
 * group to allocate from: g, or the idle site group g has joined. */
static unsigned adopt(tp_tcache_t *tc, unsigned g, unsigned c) {
  tp_group_t *grp = _tp_groups[g];
  unsigned a = atomic_load_explicit(&grp->alias, memory_order_relaxed);
  if (a == 0 && grp->site != 0) {
    unsigned h = tc->last_free_g[c];
    tp_group_t *hg = _tp_groups[h];
    tp_tbin_t *hb = tc->groups[h]->bins[c];
    uint64_t now = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed);
    int donor = 0;
    /* Not itself: its own counters, which every thread refilling here writes, are not read. */
    if (hg != NULL && h != g) {
      unsigned cached = _tp_tbin_count(hb), cap = _tp_classes[c].tcache_cap;
      uint64_t since = now - atomic_load(&hg->last_refill);
      /* Its lanes' counts (lines its refills write) only where they can decide: an idle donor
       * whose blocks are not in this thread's cache. */
      size_t free_bytes = since > TP_IDLE_REFILLS && cached < cap / 2 ? _tp_bin_total(hg, c, 0) * _tp_classes[c].size : 0;
      donor = _tp_policy_adopt_donor(hg->site != 0, atomic_load(&hg->alias) != 0, cached, cap, free_bytes,
                                     atomic_load(&hg->slab_bytes), _tp_opt.exclusive_bytes, since);
    }
    if (!donor) {
      /* Written only when it changes: the line holds gen and idle, which every free of this
       * group's blocks by another thread reads. */
      if (atomic_load_explicit(&grp->votes, memory_order_relaxed) != 0)
        atomic_store_explicit(&grp->votes, 0, memory_order_relaxed);
    } else if (atomic_exchange(&grp->vote_for, (uint16_t)h) != h) {
      atomic_store_explicit(&grp->votes, 1, memory_order_relaxed);
    } else if (atomic_fetch_add(&grp->votes, 1) + 1 >= TP_ADOPT_VOTES) {
      uint16_t zero16 = 0;
      if (atomic_compare_exchange_strong(&grp->alias, &zero16, (uint16_t)h) && _tp_opt.verbose)
        _tp_message("site group %u (%s) joins idle group %u (%s)", g, grp->name, h, hg->name);
      a = atomic_load(&grp->alias);
    }
  }
  return a ? a : g;
}

/* The group a malloc of `size` at site ra allocates from, on the generic path (group.h). Under
 * group:site a site starts young, on the shared group's slabs, and gets a group of its own
 * once its refills show it keeps memory; a grown site group may join an idle one (adopt). */
unsigned _tp_group_for(tp_tcache_t *tc, uintptr_t ra, size_t size, unsigned c, int *route, uintptr_t *key_out,
                       unsigned *base_out) {
  unsigned g, base = TP_MIXED_NO_BASE; /* base: the site's own group when a refill borrows */
  uintptr_t key = ra;
  if (tc->mode != TP_GROUP_SITE) {
    g = tc->mode == TP_GROUP_THREAD ? tc->thread_group : TP_SHARED_GROUP; /* every slot: g */
  } else {
    int young = 0;
    /* Behind a wrapper the key is site + class: each class has its own group. */
    if (c < TP_NCLASSES) key = _tp_site_key(ra, c);
    g = _tp_site_group(key, &young);
    const tp_tbin_t *hb = c < TP_NCLASSES ? tc->groups[g]->bins[c] : NULL;
    if (hb != NULL && _tp_tbin_count(hb) == 0) { /* about to refill */
      if (young) {
        if (_tp_policy_slow_refill_counts(hb->nalloc, _tp_classes[c].size, _tp_refill_want(c)))
          g = _tp_site_refill(key, (size_t)(_tp_classes[c].tcache_cap ? _tp_classes[c].tcache_cap : 1) *
                                       _tp_classes[c].size);
      } else if ((g = adopt(tc, g, c)) != TP_SHARED_GROUP) {
        /* The own group's lane this thread fills from: the other lane's counters are the
         * other side's threads' to write (read here, they would cost each refill a cache
         * miss). */
        const tp_group_t *sh = _tp_groups[TP_SHARED_GROUP];
        const tp_lane_t *own = &_tp_groups[g]->lanes[tc->side][c];
        if (_tp_policy_borrow_shared(__atomic_load_n(&own->navail, __ATOMIC_RELAXED), _tp_refill_want(c), _tp_bin_total(sh, c, 0),
                                     _tp_bin_total(sh, c, 1), _tp_classes[c].nobj))
          base = g, g = TP_SHARED_GROUP;
      }
    }
  }
  *key_out = key;
  /* A block of a few slots of a site that writes little of them: from the group on 4 KiB
   * pages, its sample a medium run (policy.c, _tp_policy_slab_block_route). */
  if (route != NULL) { /* NULL: an aligned block, never routed */
    *route = _tp_policy_slab_block_sampled(size) ? _tp_run_site_route(ra, size) : TP_ROUTE_SLAB;
    unsigned g4 = *route == TP_ROUTE_4K ? _tp_group_4k() : TP_SHARED_GROUP;
    if (g4 != TP_SHARED_GROUP) {
      if (size > TP_FAST_BIG) { /* no bin by size: the slot stays as it is */
        *base_out = TP_GROUP_KEEP_SLOT;
        return g4;
      }
      if (key == ra) base = base != TP_MIXED_NO_BASE ? base : g;
      g = g4;
    }
  }
  *base_out = base;
  return g;
}
