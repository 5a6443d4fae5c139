/* Slabs: a run of slots carved for one size class of one group, with out-of-band bitmaps:
 * `avail` (in the slab, under its lane's lock) and `live` (out of the slab: handed out or cached).
 * Bins hand objects to thread caches in batches, tagged (types.h and tcache.h, _tp_block_cached), and
 * take them back. */
#include <string.h>

#include "runs.h"

/* The live bytes start on a cache line of their own (records are 64-byte aligned). */
static size_t live_offset(const tp_class_t *k) {
  return (sizeof(tp_slab_t) + (size_t)k->nwords * sizeof(uint64_t) + 63) & ~(size_t)63;
}

/* One live byte more than objects: a block-aligned pointer into the slab's tail (past its last
 * object) finds a 0 there, so the free hit needs no bound check. */
static size_t slab_meta_size(const tp_class_t *k) { return live_offset(k) + ((k->nobj + 1 + 63) & ~63u); }

/* Bits of word w when every object of it is available. */
static uint64_t word_full(const tp_slab_t *s, unsigned w) {
  unsigned left = s->nobj - w * 64;
  return left >= 64 ? ~0ull : ((1ull << left) - 1);
}

static tp_slab_t *slab_new(tp_group_t *g, unsigned c) {
  const tp_class_t *k = &_tp_classes[c];
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_SMALL, k->nslots, 0, slab_meta_size(k), 0);
  if (s == NULL) return NULL;
  s->recip = k->recip;
  s->size = k->size;
  s->nobj = k->nobj;
  s->cls = (uint16_t)c;
  s->bin_idx = _tp_bin_index(s->group, c); /* s->group: set by _tp_run_new */
  s->nwords = k->nwords;
  s->avail = s->data;
  s->live = (uint8_t *)s + live_offset(k);
  s->free_live = s->live;
  s->remote_mask = _tp_policy_free_remote(k->size) ? ~(uintptr_t)0 : 0;
  for (unsigned w = 0; w < k->nwords; w++) s->avail[w] = word_full(s, w);
  s->navail = k->nobj;
  _tp_run_publish(s);
  return s;
}

static void partial_push(tp_lane_t *l, tp_slab_t *s) {
  TP_LIST_PUSH(&l->partial, s, next, prev);
  s->in_partial = 1;
}

static void partial_unlink(tp_lane_t *l, tp_slab_t *s) {
  TP_LIST_UNLINK(&l->partial, s, next, prev);
  s->in_partial = 0;
}

/* Locks the lane slab s is in (it may move while unlocked: slabs move with both locks held);
 * *li: its index. */
static tp_lane_t *lock_lane_of(tp_group_t *g, const tp_slab_t *s, unsigned *li) {
  for (;;) {
    unsigned i = atomic_load_explicit(&s->lane, memory_order_relaxed);
    tp_lane_t *l = &g->lanes[i][s->cls];
    _tp_lock(&l->lock);
    if (atomic_load_explicit(&s->lane, memory_order_relaxed) == i) {
      *li = i;
      return l;
    }
    _tp_unlock(&l->lock);
  }
}

/* The first word of s whose objects are all available, or nwords. */
static unsigned free_word(const tp_slab_t *s) {
  unsigned w = s->avail_hint;
  while (w < s->nwords && s->avail[w] != word_full(s, w)) w++;
  return w;
}

/* Threads allocating side by side from one group take slabs of their own, as under a malloc
 * with an arena per thread: a slab whose objects two threads hand out and free has lines of
 * live bytes and of data written by both, and each write waits for the other thread's cache. So
 * among the first 16 partial slabs, the fullest this thread last filled from; else the fullest
 * nobody fills from now (never filled, or its thread exited); else, when the lane already has 2
 * partial slabs, another thread's (memory before separation): the fullest with a word of which
 * that thread holds nothing (*shared: the caller takes only such words), else the fullest; else
 * NULL: a new slab. Taking scattered blocks of the other thread's slab would put the two
 * threads' blocks on the same lines again. A single thread always finds its own or free ones. */
static tp_slab_t *pick_partial(tp_lane_t *l, const tp_tcache_t *me, int whole, int can_share, int *shared) {
  tp_slab_t *own = NULL, *free_ = NULL, *any = NULL, *part = NULL;
  unsigned n = 0;
  *shared = 0;
  for (tp_slab_t *s = l->partial; s && n < 16; s = s->next, n++) {
    const tp_tcache_t *f = __atomic_load_n(&s->filler, __ATOMIC_RELAXED);
    if (f == me) {
      if (own == NULL || s->navail < own->navail) own = s;
    } else if (f == NULL || f->exited || f->dead) {
      if (free_ == NULL || s->navail < free_->navail) free_ = s;
    } else {
      if (part == NULL || s->navail < part->navail) part = s;
      if (whole && (any == NULL || s->navail < any->navail) && free_word(s) < s->nwords) any = s;
    }
  }
  if (own) return own;
  if (free_) return free_;
  if (!can_share || !_tp_policy_share_slab(n)) return NULL;
  if (any) {
    *shared = 1;
    return any;
  }
  return part;
}

/* Whether class c of g is in use: the later of its lanes' last fills (the other lane's read
 * without its lock). */
static int bin_hot(tp_group_t *g, unsigned c) {
  unsigned used = atomic_load_explicit(&g->lanes_used, memory_order_relaxed);
  uint64_t last = 0;
  for (unsigned i = 0; i < TP_LANES; i++)
    if (used & (1u << i)) {
      uint64_t f = __atomic_load_n(&g->lanes[i][c].last_fill, __ATOMIC_RELAXED);
      if (f > last) last = f;
    }
  return _tp_policy_bin_hot(atomic_load_explicit(&g->idle, memory_order_relaxed),
                            atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed), last,
                            atomic_load_explicit(&g->alias, memory_order_relaxed) != 0);
}
/* Bits set in x (x86-64's baseline has no popcnt instruction: without it the builtin is a
 * libgcc call). */
static inline unsigned popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* The lowest k of the bits set in x (k below their count). */
static inline uint64_t lowest_bits(uint64_t x, unsigned k) {
  uint64_t got = 0;
  while (k--) {
    uint64_t low = x & (0 - x);
    got |= low;
    x ^= low;
  }
  return got;
}

/* A fill takes whole bitmap words under the lane's lock (`take`), then writes the entries, the
 * live bytes and the blocks' tags after it: a slab whose objects a thread holds is not
 * released meanwhile. The entries come out highest address first, so that the thread cache,
 * which pops from the top, hands them out in address order (the order the words were taken). */
#define TP_FILL_MAX 64
typedef struct { const tp_slab_t *s; uint64_t bits; uint32_t w; } fill_take_t;

/* The lanes' counters, read by the other lane and the policies without the lock. */
static void lane_add(tp_lane_t *l, ptrdiff_t slabs, ptrdiff_t navail) {
  if (slabs) __atomic_store_n(&l->slabs, l->slabs + (size_t)slabs, __ATOMIC_RELAXED);
  if (navail) __atomic_store_n(&l->navail, l->navail + (size_t)navail, __ATOMIC_RELAXED);
}

/* Lane l (locked) of class c keeps d more empty slabs; the group's mask of lanes that keep
 * some follows it (written only when the lane starts or stops keeping any). */
static void empty_add(tp_group_t *g, tp_lane_t *l, unsigned c, int d) {
  uint32_t before = l->nempty;
  l->nempty = before + (uint32_t)d;
  if ((before == 0) == (l->nempty == 0)) return;
  unsigned i = (unsigned)(l - &g->lanes[0][0]) / TP_NCLASSES;
  if (l->nempty) atomic_fetch_or_explicit(&g->kept[i], 1ull << c, memory_order_relaxed);
  else atomic_fetch_and_explicit(&g->kept[i], ~(1ull << c), memory_order_relaxed);
}

/* When lane l (locked) has no slab to give, a slab of the other lane o that pick_partial gives
 * (one whose thread exited, or, while o is idle, another thread's that it would share), if o
 * can be locked at once: the slab moves to l, the lane of its new filler. Both locks are held
 * only here, and the second only by a trylock: lanes never wait on each other. */
static tp_slab_t *take_from_other(const tp_tcache_t *tc, tp_group_t *g, tp_lane_t *l, tp_lane_t *o, unsigned side, int whole,
                                  int *shared) {
  if (!(atomic_load_explicit(&g->lanes_used, memory_order_relaxed) & (1u << (side ^ 1))) ||
      __atomic_load_n(&o->slabs, __ATOMIC_RELAXED) == 0 || !_tp_trylock(&o->lock))
    return NULL;
  /* Another live thread's slab only while that lane is idle: a lane its threads fill from keeps
   * its partial slabs for them, or threads bursting at one site take each other's slabs and
   * every flush of the blocks left in them crosses lanes. */
  int idle = atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed) - o->last_fill > TP_IDLE_REFILLS;
  tp_slab_t *s = o->partial ? pick_partial(o, tc, whole, idle, shared) : NULL;
  if (s != NULL) {
    partial_unlink(o, s);
    if (s->navail == s->nobj) empty_add(g, o, s->cls, -1), empty_add(g, l, s->cls, 1);
    lane_add(o, -1, -(ptrdiff_t)s->navail);
    atomic_store_explicit(&s->lane, (uint8_t)side, memory_order_relaxed);
    lane_add(l, 1, (ptrdiff_t)s->navail);
    partial_push(l, s);
  }
  _tp_unlock(&o->lock);
  return s;
}

unsigned _tp_bin_fill(const tp_tcache_t *tc, tp_group_t *g, unsigned c, tp_entry_t *out, unsigned want, unsigned room,
                      int slow, const void *tag) {
  unsigned side = tc->side;
  tp_lane_t *l = &g->lanes[side][c];
  fill_take_t take[TP_FILL_MAX];
  unsigned n = 0, nt = 0;
  if (room > TP_FILL_MAX) room = TP_FILL_MAX;
  if (want > room) want = room;
  if (!(atomic_load_explicit(&g->lanes_used, memory_order_relaxed) & (1u << side)))
    atomic_fetch_or(&g->lanes_used, (uint8_t)(1u << side));
  _tp_lock(&l->lock);
  __atomic_store_n(&l->last_fill, atomic_load_explicit(&_tp_refill_clock, memory_order_relaxed), __ATOMIC_RELAXED);
  /* Another thread's slab gives only words of which it holds no object (while there is room
   * for a whole word): their live bytes and data lines are not that thread's. */
  int whole = room >= 64, shared = 0;
  while (n < want) {
    shared = 0;
    int kept = 0; /* s is an empty slab the lane kept */
    tp_slab_t *s = l->partial ? pick_partial(l, tc, whole, 1, &shared) : NULL;
    if (s == NULL) s = take_from_other(tc, g, l, &g->lanes[side ^ 1][c], side, whole, &shared);
    if (s == NULL) {
      s = slab_new(g, c);
      if (s == NULL) break;
      atomic_store_explicit(&s->lane, (uint8_t)side, memory_order_relaxed);
      lane_add(l, 1, s->nobj);
      partial_push(l, s);
    } else if (shared && room - n < 64) {
      break; /* no room for a whole word of it */
    } else {
      kept = s->navail == s->nobj;
    }
    if (__atomic_load_n(&s->filler, __ATOMIC_RELAXED) != tc) /* a line every free reads */
      __atomic_store_n(&s->filler, tc, __ATOMIC_RELAXED);
    /* Whole bitmap words while there is room: a word's objects share a line of live bytes,
     * and one thread taking all of them keeps other threads off that line. A slow-start refill
     * takes just what it wants, except from another thread's slab. */
    unsigned lim = slow && !shared ? want : room;
    for (unsigned w = s->avail_hint; w < s->nwords && n < want; w++) {
      uint64_t bits = s->avail[w];
      if (bits == 0) {
        if (w == s->avail_hint) s->avail_hint = w + 1;
        continue;
      }
      if (shared && (bits != word_full(s, w) || room - n < 64)) continue;
      unsigned k = popcount64(bits);
      uint64_t got = bits;
      if (k > lim - n) {
        k = lim - n;
        got = lowest_bits(bits, k);
      }
      bits ^= got;
      s->avail[w] = bits;
      s->navail -= k;
      n += k;
      take[nt].s = s;
      take[nt].bits = got;
      take[nt++].w = w;
      if (bits == 0 && w == s->avail_hint) s->avail_hint = w + 1;
      if (n >= lim) break;
    }
    if (kept && s->navail != s->nobj) empty_add(g, l, c, -1); /* filled from now */
    if (s->navail == 0) partial_unlink(l, s);
    if (n >= room) break;
  }
  lane_add(l, 0, -(ptrdiff_t)n);
  _tp_unlock(&l->lock);
  tp_entry_t *o = out + n; /* written from the end: the first taken is popped first */
  uintptr_t tagv = (uintptr_t)tag;
  for (unsigned t = 0; t < nt; t++) {
    const tp_slab_t *s = take[t].s;
    uintptr_t size = s->size, base = s->base + (uintptr_t)take[t].w * 64 * size;
    uint8_t *live = s->live + (uintptr_t)take[t].w * 64;
    /* Tagged where the page is resident whole, and on 4 KiB pages where a batch of 64 spans at
     * most two pages (blocks up to 128 B), which its first pops touch anyway. Larger blocks
     * there are not written until their malloc: tagged, every page with a cached block would
     * become resident before the program asks for it. Their live bytes stay 0 and their entries
     * carry bit 0 (alloc.c, pop_fresh sets the byte): every free is still checked, and the
     * group stats still count only blocks handed out. */
    if (s->hp->source == TP_SRC_4K && size > 128) {
      for (uint64_t bits = take[t].bits; bits; bits &= bits - 1)
        (--o)->p = (void *)((base + (unsigned)__builtin_ctzll(bits) * size) | 1);
      continue;
    }
    if (take[t].bits == ~0ull) { /* a whole word, the usual take: the loop below without a
                                  * bit scan */
      memset(live, 1, 64);
      for (uintptr_t a = base, end = base + 64 * size; a < end; a += size) {
        *_tp_tag_word((void *)a) = tagv;
        (--o)->p = (void *)a;
      }
      continue;
    }
    for (uint64_t bits = take[t].bits; bits; bits &= bits - 1) {
      unsigned bit = (unsigned)__builtin_ctzll(bits);
      uintptr_t a = base + bit * size;
      *_tp_tag_word((void *)a) = tagv;
      (--o)->p = (void *)a;
      __atomic_store_n(live + bit, 1, __ATOMIC_RELAXED);
    }
  }
  _tp_stats_out((ptrdiff_t)n * _tp_classes[c].size);
  return n;
}

void _tp_bin_flush(tp_group_t *g, unsigned c, const tp_entry_t *in, unsigned n) {
  /* Each run of blocks goes back under the lock of its slab's lane: one lane for the blocks
   * of a thread's own slabs. */
  tp_lane_t *l = NULL;
  unsigned li = 0;
  size_t navail = 0;
  /* Blocks of one batch mostly come from a few slabs: a run of blocks of one slab is counted
   * in registers and written to the slab's record once. */
  for (unsigned i = 0; i < n;) {
    const void *p0 = (const void *)((uintptr_t)in[i].p & ~(uintptr_t)1); /* bit 0: alloc.c, pop_fresh */
    tp_slab_t *s = _tp_hpage_of(p0)->slot_slab[((uintptr_t)p0 >> TP_SLOT_SHIFT) & (TP_SLOTS - 1)];
    /* Held, lane li's lock keeps s in it or out of it (slabs move with both locks held). */
    if (l == NULL || atomic_load_explicit(&s->lane, memory_order_relaxed) != li) {
      if (l != NULL) {
        __atomic_store_n(&l->navail, navail, __ATOMIC_RELAXED);
        _tp_unlock(&l->lock);
      }
      l = lock_lane_of(g, s, &li);
      navail = l->navail;
    }
    uintptr_t lo = s->base, span = (uintptr_t)s->nobj * s->size;
    uint64_t recip = s->recip, *avail = s->avail;
    uint8_t *live = s->live;
    uint32_t hint = s->avail_hint, cnt = 0;
    do {
      uintptr_t e = (uintptr_t)in[i].p, off = (e & ~(uintptr_t)1) - lo;
      if (off >= span) break;
      uint32_t idx = (uint32_t)_tp_obj_index(off, recip);
      uint64_t bit = 1ull << (idx & 63);
      /* Already available: the block was cached twice, both copies still tagged (a double
       * free the bin's checks could not see). Counted twice, the slab would look empty with a
       * block live. */
      if (TP_UNLIKELY(avail[idx >> 6] & bit)) _tp_fatal("double free of %p (found when it went back to its slab)", (void *)(lo + off));
      /* Its tag goes with it (an entry with bit 0 carries none, and its page may not be in
       * memory): left in the slab, it would outlive the block in memory handed out again, where
       * nothing writes that word: the second word of a medium block carved over a released
       * slab's first block, which realloc (or the program) copies into a small block that then
       * reads as cached (_tp_block_cached: malloc_usable_size 0, realloc failing). */
      if (!(e & 1)) *_tp_tag_word((void *)e) = 0;
      avail[idx >> 6] |= bit;
      __atomic_store_n(live + idx, 0, __ATOMIC_RELAXED);
      if (idx >> 6 < hint) hint = idx >> 6;
      cnt++;
    } while (++i < n);
    s->avail_hint = hint;
    s->navail += cnt;
    navail += cnt;
    /* An empty slab stays in its lane for the next refills, up to TP_KEEP_EMPTY_BYTES of
     * them, while the bin is in use and holds many objects a slab (policy.c): an idle bin (a
     * dead thread's group, a site that joined another) keeps none, nor do classes of a few
     * large objects per slab, so that empty slabs do not pin huge pages. pick_partial gives a
     * thread its fullest slab first, so the empty ones are the last it fills from. */
    if (s->navail == s->nobj) {
      if (_tp_policy_release_empty_slab(l->nempty, (size_t)s->nslots * TP_SLOT, s->nobj, bin_hot(g, c), g->on_4k)) {
        if (s->in_partial) partial_unlink(l, s);
        lane_add(l, -1, 0);
        navail -= s->nobj;
        _tp_run_release(s);
        continue;
      }
      empty_add(g, l, c, 1);
    }
    if (!s->in_partial) partial_push(l, s);
  }
  if (l != NULL) {
    __atomic_store_n(&l->navail, navail, __ATOMIC_RELAXED);
    _tp_unlock(&l->lock);
  }
  _tp_stats_out(-(ptrdiff_t)n * _tp_classes[c].size);
}

/* Gives back the empty slabs lane l (locked) of class c keeps. */
static void lane_release_empty(tp_group_t *g, tp_lane_t *l, unsigned c) {
  for (tp_slab_t *s = l->partial, *next; s && l->nempty; s = next) {
    next = s->next;
    if (s->navail != s->nobj) continue;
    partial_unlink(l, s);
    empty_add(g, l, c, -1);
    lane_add(l, -1, -(ptrdiff_t)s->nobj);
    _tp_run_release(s);
  }
}

void _tp_bin_trim(tp_group_t *g) {
  unsigned used = atomic_load(&g->lanes_used);
  for (unsigned i = 0; i < TP_LANES; i++)
    for (unsigned c = 0; c < TP_NCLASSES && (used & (1u << i)); c++) {
      tp_lane_t *l = &g->lanes[i][c];
      _tp_lock(&l->lock);
      lane_release_empty(g, l, c);
      _tp_unlock(&l->lock);
    }
}

/* A lane keeps its empty slabs while its class is in use (policy.c, _tp_policy_release_empty_slab);
 * once the class has not refilled for TP_IDLE_REFILLS refills of the process, the next thread
 * whose turn reaches the group gives them back, so that a class a program stopped using does
 * not hold them (each thread visits one group every TP_CLOCK_BATCH refills: a lane locked at
 * that moment waits for the next turn). */
void _tp_bin_sweep(struct tp_tcache_s *tc) {
  unsigned end = _tp_groups_end();
  unsigned i = tc->sweep_next < end ? tc->sweep_next : 0;
  tc->sweep_next = (uint16_t)(i + 1);
  tp_group_t *g = i < end ? __atomic_load_n(&_tp_groups[i], __ATOMIC_ACQUIRE) : NULL;
  if (g == NULL) return;
  for (unsigned side = 0; side < TP_LANES; side++)
    for (uint64_t m = atomic_load_explicit(&g->kept[side], memory_order_relaxed); m; m &= m - 1) {
      unsigned c = (unsigned)__builtin_ctzll(m);
      if (bin_hot(g, c)) continue;
      tp_lane_t *l = &g->lanes[side][c];
      if (!_tp_trylock(&l->lock)) continue;
      lane_release_empty(g, l, c);
      _tp_unlock(&l->lock);
    }
}

typedef struct { tp_group_t *g; tp_slab_t **list; size_t n, cap; } collect_t;

static void collect_owned(tp_hpage_t *h, void *arg) {
  collect_t *c = arg;
  if (h->owner != c->g->id) return;
  if (h->state == TP_HP_ACTIVE) {
    for (unsigned i = 0; i < TP_SLOTS; i++) {
      tp_slab_t *s = h->slot_slab[i];
      if (s && s->first_slot == i && s->group == c->g->id && c->n < c->cap) c->list[c->n++] = s;
    }
  } else if (h->state == TP_HP_LARGE && c->n < c->cap) {
    c->list[c->n++] = h->slot_slab[0];
  }
}

void _tp_bin_release_all(tp_group_t *g) {
  unsigned used = atomic_load(&g->lanes_used) | 1u; /* lane 0 always: its locks are the group's */
  for (unsigned i = 0; i < TP_LANES; i++)
    for (unsigned c = 0; c < TP_NCLASSES && (used & (1u << i)); c++) _tp_lock(&g->lanes[i][c].lock);
  _tp_lock(&g->arena_lock);
  for (;;) {
    collect_t col = {g, NULL, 0, 4096};
    col.list = _tp_meta_alloc(col.cap * sizeof(tp_slab_t *));
    if (col.list == NULL) break;
    _tp_lock(&_tp_heap_lock);
    _tp_heap_foreach(collect_owned, &col);
    _tp_unlock(&_tp_heap_lock);
    for (size_t i = 0; i < col.n; i++) {
      /* Blocks out of a small slab may sit in thread caches, tagged: their tags go before the
       * memory does (as a flush clears them, _tp_bin_flush). */
      tp_slab_t *s = col.list[i];
      if (s->kind == TP_SLAB_SMALL)
        for (uint32_t o = 0; o < s->nobj; o++)
          if (__atomic_load_n(&s->live[o], __ATOMIC_RELAXED)) *_tp_tag_word((void *)(s->base + (uintptr_t)o * s->size)) = 0;
      _tp_run_release(s);
    }
    size_t n = col.n;
    _tp_meta_free(col.list, col.cap * sizeof(tp_slab_t *));
    if (n < col.cap) break;
  }
  g->arena_cur = NULL;
  _tp_unlock(&g->arena_lock);
  for (unsigned i = 0; i < TP_LANES; i++) {
    atomic_store_explicit(&g->kept[i], 0, memory_order_relaxed); /* every lane of side i still locked */
    for (unsigned c = 0; c < TP_NCLASSES && (used & (1u << i)); c++) {
      tp_lane_t *l = &g->lanes[i][c];
      l->partial = NULL;
      l->nempty = 0;
      __atomic_store_n(&l->slabs, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&l->navail, 0, __ATOMIC_RELAXED);
      _tp_unlock(&l->lock);
    }
  }
}
