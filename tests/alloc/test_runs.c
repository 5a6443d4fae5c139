/* Run records (_tp_run_new / _tp_run_publish / _tp_run_release) against fake OS hooks: the
 * address space is a PROT_NONE reservation that nothing ever backs, so any touch of user
 * memory by the heap's bookkeeping would crash the test. The fakes record every call. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "modes.h"

static struct {
  size_t reserves, backs, decommits, promotes;
  size_t fail_at; /* when set, the fail_at-th back and those after it fail */
  int last_want;  /* the source the last back asked for */
  int wants[64];  /* the sources the first 64 backs asked for */
  uintptr_t lo, hi; /* everything the fake reserve handed out */
  int source;       /* what a back gives (0: THP; -1: what it asked for) */
  long pool_free;   /* free pool pages the fake reports */
} fake;

static void *fake_reserve(void *hint, size_t len, size_t align) {
  (void)hint;
  char *p = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
  fake.reserves++;
  if (fake.lo == 0 || a < fake.lo) fake.lo = a;
  if (a + len > fake.hi) fake.hi = a + len;
  return (void *)a;
}
static int fake_back(void *addr, int want, unsigned *fallbacks, int node, size_t pool_held) {
  (void)addr, (void)fallbacks, (void)node, (void)pool_held;
  fake.backs++;
  fake.last_want = want;
  if (fake.backs <= 64) fake.wants[fake.backs - 1] = want;
  if (fake.fail_at && fake.backs >= fake.fail_at) return TP_SRC_NONE;
  return fake.source < 0 ? want : fake.source ? fake.source : TP_SRC_THP;
}
static void fake_decommit(void *addr, size_t len) {
  (void)addr;
  fake.decommits += len / TP_HPAGE;
}
static int fake_promote(void *addr) {
  (void)addr;
  fake.promotes++;
  return 0;
}
static int fake_node(void) { return 0; }
static uint64_t fake_now_ms(void) { return 0; }
static struct {
  size_t calls;
  size_t bytes; /* what a call reports per 2 MiB (0: all of it) */
} res;
static size_t fake_resident(void *addr, size_t len) {
  (void)addr;
  res.calls++;
  return res.bytes ? res.bytes * ((len + TP_HPAGE - 1) / TP_HPAGE) : len;
}
static int fake_back_1g(void *addr) {
  (void)addr;
  return -1;
}
static long fake_pool_free(void) { return fake.pool_free; }

/* The lazy mapping of a large run's fresh hpages (os.c, _tp_os_back_lazy): off (NULL) unless a
 * test installs this fake, which records the ranges it is asked for. */
static struct {
  size_t calls, bytes;
  uintptr_t first;
  int fail;
} lazy;
static int fake_back_lazy(void *addr, size_t len, int node, size_t pool_held) {
  (void)node, (void)pool_held;
  lazy.calls++;
  lazy.bytes += len;
  if (lazy.first == 0) lazy.first = (uintptr_t)addr;
  return lazy.fail ? -1 : 0;
}

static tp_group_t *g;

static void setup(void) {
  memset(&fake, 0, sizeof fake);
  memset(&res, 0, sizeof res);
  _tp_os_hooks = (tp_os_hooks_t){fake_reserve, fake_back, fake_decommit, fake_promote, fake_node, fake_back_1g, fake_now_ms, fake_resident, fake_pool_free, NULL};
  g = tp_group_create("runs");
  cr_assert_not_null(g);
  g->exclusive = 0; /* as a site group before it has earned hpages of its own */
  _tp_opt.exclusive_bytes = 8 * TP_SLOT;
  _tp_opt.retain_bytes = 0; /* every empty hpage goes back at once: decommits are counted */
}

TestSuite(runs, .init = setup);

static int in_fake(uintptr_t a) { return a >= fake.lo && a < fake.hi; }

Test(runs, a_slot_run_is_carved_from_fake_memory_and_published_slot_by_slot) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  cr_assert_not_null(s);
  cr_assert_eq(fake.reserves, 1);
  cr_assert_eq(fake.backs, 1);
  cr_assert(in_fake(s->base), "run at %#lx outside the fake reservation", (unsigned long)s->base);
  cr_assert_eq(s->kind, TP_SLAB_MEDIUM);
  cr_assert_eq(s->nslots, 4);
  cr_assert_eq(s->group, g->id);
  cr_assert_eq(s->zeroed, 1, "a freshly backed run reads as zero");
  cr_assert_eq(s->hp->state, TP_HP_ACTIVE);
  cr_assert_eq(s->hp->owner, TP_SHARED_GROUP, "a group that is not exclusive carves shared hpages");
  cr_assert_eq(atomic_load(&g->slab_bytes), 4 * TP_SLOT);
  cr_assert_null(_tp_slab_of((void *)s->base), "the page map is written only by publish");
  _tp_run_publish(s);
  for (unsigned i = 0; i < 4; i++) cr_assert_eq(_tp_slab_of((void *)(s->base + i * TP_SLOT)), s);
  cr_assert_null(_tp_slab_of((void *)(s->base + 4 * TP_SLOT)));
}

Test(runs, release_undoes_page_map_slab_bytes_slots_and_backing) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  cr_assert_not_null(s);
  _tp_run_publish(s);
  uintptr_t base = s->base;
  tp_hpage_t *h = s->hp;
  size_t thp = _tp_heap_ctr.pages_by_source[TP_SRC_THP];
  _tp_run_release(s);
  for (unsigned i = 0; i < 4; i++) cr_assert_null(_tp_slab_of((void *)(base + i * TP_SLOT)));
  cr_assert_eq(atomic_load(&g->slab_bytes), 0);
  cr_assert_eq(h->nused, 0);
  cr_assert_eq(h->used_mask, 0);
  cr_assert_eq(h->state, TP_HP_FREE, "retain 0: the empty hpage goes back");
  cr_assert_eq(fake.decommits, 1);
  cr_assert_eq(_tp_heap_ctr.pages_by_source[TP_SRC_THP], thp - 1);
}

Test(runs, a_group_becomes_exclusive_past_exclusive_bytes_and_then_owns_its_hpages) {
  TP_NEEDS_GROUPS_APART();
  tp_slab_t *a = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  cr_assert_eq(g->exclusive, 0);
  tp_slab_t *b = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  cr_assert_eq(g->exclusive, 1, "8 slots reach exclusive_bytes");
  cr_assert_eq(a->hp, b->hp, "the young group's first runs share one hpage");
  cr_assert_eq(fake.backs, 1);
  tp_slab_t *c = _tp_run_new(g, TP_SLAB_MEDIUM, 2, 0, TP_BIG_META, 0);
  cr_assert_neq(c->hp, a->hp, "an exclusive group carves hpages of its own");
  cr_assert_eq(c->hp->owner, g->id);
  cr_assert_eq(fake.backs, 2);
  cr_assert_eq(atomic_load(&g->slab_bytes), 10 * TP_SLOT);
  _tp_run_release(a);
  _tp_run_release(b);
  _tp_run_release(c);
  cr_assert_eq(atomic_load(&g->slab_bytes), 0);
  cr_assert_eq(fake.decommits, 2);
}

Test(runs, a_large_run_is_whole_aligned_hpages_and_release_gives_each_back) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 3, (size_t)8 << 20, TP_BIG_META, 0);
  cr_assert_not_null(s);
  cr_assert_eq(s->base % ((size_t)8 << 20), 0);
  cr_assert(in_fake(s->base) && in_fake(s->base + 3 * TP_HPAGE - 1));
  cr_assert_eq(s->nhpages, 3);
  cr_assert_eq(fake.backs, 3);
  cr_assert_eq(s->hp->state, TP_HP_LARGE);
  for (unsigned i = 1; i < 3; i++) cr_assert_eq(_tp_hpage_of((void *)(s->base + i * TP_HPAGE))->state, TP_HP_LARGE_TAIL);
  cr_assert_eq(atomic_load(&g->slab_bytes), 0, "large runs are not slab bytes");
  _tp_run_publish(s);
  cr_assert_eq(_tp_slab_of((void *)s->base), s);
  uintptr_t base = s->base;
  _tp_run_release(s);
  cr_assert_null(_tp_slab_of((void *)base));
  for (unsigned i = 0; i < 3; i++) cr_assert_eq(_tp_hpage_of((void *)(base + i * TP_HPAGE))->state, TP_HP_FREE);
  cr_assert_eq(fake.decommits, 3);
}

Test(runs, retained_empty_hpages_are_reused_without_backing_again) {
  _tp_opt.retain_bytes = (size_t)16 << 20;
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  tp_hpage_t *h = s->hp;
  _tp_run_release(s);
  cr_assert_eq(h->state, TP_HP_EMPTY);
  cr_assert_eq(fake.decommits, 0);
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  cr_assert_eq(t->hp, h);
  cr_assert_eq(fake.backs, 1);
  cr_assert_eq(t->zeroed, 0, "its slots were handed out before: no longer known to be zero");
  _tp_run_release(t);
}

/* A large run of pool pages over retain_mb, freed, keeps its pages while the pool has as many
 * free besides (the next run of its size takes them without backing them again); with the
 * pool short they go back as before, beyond retain_mb. */
Test(runs, a_freed_pool_run_over_retain_mb_is_kept_while_the_pool_has_room) {
  _tp_opt.retain_bytes = 4 * TP_HPAGE;
  fake.source = TP_SRC_HUGETLB;
  fake.pool_free = 100;
  /* A run of 8 MiB or more freed once goes back whole, whatever retain_mb leaves room for. */
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 10, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(s);
  _tp_run_release(s);
  cr_assert_eq(fake.decommits, 10, "a run freed once gave back %zu of its 10 pages", fake.decommits);
  /* Another one within a second (the fake clock stands still): the program cycles through such
   * runs, and from now on a freed one keeps its pages while the pool has room. */
  s = _tp_run_new(g, TP_SLAB_LARGE, 10, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(s);
  uintptr_t base = s->base;
  _tp_run_release(s);
  cr_assert_eq(fake.decommits, 10, "%zu of the run's 10 pages went back with 100 free in the pool", fake.decommits - 10);
  size_t backs = fake.backs;
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_LARGE, 10, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_eq(t->base, base, "the kept run was not reused");
  cr_assert_eq(fake.backs, backs, "reusing the kept run backed %zu pages", fake.backs - backs);
  fake.pool_free = 9; /* fewer free than the run holds: it goes back beyond retain_mb */
  _tp_run_release(t);
  cr_assert_eq(fake.decommits, 16, "%zu pages went back, 6 expected (10 - retain_mb's 4)", fake.decommits - 10);
  /* The policy: only a run over retain_mb, only with as many pages free in the pool. */
  cr_assert_not(_tp_policy_keep_large_run(4 * TP_HPAGE, 4 * TP_HPAGE, 100));
  cr_assert(_tp_policy_keep_large_run(5 * TP_HPAGE, 4 * TP_HPAGE, 5));
  cr_assert_not(_tp_policy_keep_large_run(5 * TP_HPAGE, 4 * TP_HPAGE, 4));
  cr_assert_not(_tp_policy_keep_large_run(5 * TP_HPAGE, 4 * TP_HPAGE, -1), "pool unknown: nothing kept");
  cr_assert_not(_tp_policy_keep_large_run(5 * TP_HPAGE, 0, 100), "retain_mb:0 keeps nothing");
  /* Given back at once: 8 MiB or more, until the program cycles. */
  cr_assert(_tp_policy_give_back_large_run((size_t)8 << 20, 0));
  cr_assert_not(_tp_policy_give_back_large_run(((size_t)8 << 20) - TP_HPAGE, 0));
  cr_assert_not(_tp_policy_give_back_large_run((size_t)64 << 20, 1));
  cr_assert(_tp_policy_large_cycling(1, 5000, 6000));
  cr_assert_not(_tp_policy_large_cycling(1, 5000, 6001));
  cr_assert_not(_tp_policy_large_cycling(0, 0, 0), "nothing given back yet");
}

/* In-place growth (_tp_run_grow): a large run takes the reserved, unused hpages after it (the
 * never-used ones at the cursor, which moves past them, or ones given back before); a medium
 * run the free slots after it in its hpage. Never anything in use. */
Test(runs, a_large_run_grows_over_the_unused_hpages_after_it_and_the_cursor_moves) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 2, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(s);
  _tp_run_publish(s);
  uintptr_t base = s->base;
  cr_assert(_tp_run_grow(s, 5), "the hpages after a run at the cursor are never used");
  cr_assert_eq(s->nhpages, 5);
  cr_assert_eq(fake.backs, 5);
  for (unsigned i = 1; i < 5; i++) cr_assert_eq(_tp_hpage_of((void *)(base + i * TP_HPAGE))->state, TP_HP_LARGE_TAIL);
  /* The next run starts after it: the cursor moved past the grown run. */
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_LARGE, 1, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_geq(t->base, base + 5 * TP_HPAGE, "a new run at %#lx inside the grown one", (unsigned long)t->base);
  _tp_run_publish(t);
  cr_assert_not(_tp_run_grow(s, 6 + (t->base - base - 5 * TP_HPAGE) / TP_HPAGE), "grew over a run in use");
  cr_assert_eq(s->nhpages, 5);
  cr_assert_eq(t->hp->state, TP_HP_LARGE);
  _tp_run_release(s);
  cr_assert_eq(fake.decommits, 5, "release gave back %zu hpages, not the 5 of the grown run", fake.decommits);
  /* Given back, those hpages are free again: a run before them grows over them. */
  tp_slab_t *u = _tp_run_new(g, TP_SLAB_LARGE, 1, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_eq(u->base, base, "the first free hpage is %#lx, not the old run's", (unsigned long)u->base);
  cr_assert(_tp_run_grow(u, 4), "the 3 hpages after it were given back");
  cr_assert_eq(u->nhpages, 4);
  _tp_run_release(u);
  _tp_run_release(t);
}

Test(runs, a_large_run_that_cannot_be_backed_grows_no_further_and_gives_back_what_it_took) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 1, TP_HPAGE, TP_BIG_META, 0);
  _tp_run_publish(s);
  uintptr_t base = s->base;
  fake.fail_at = fake.backs + 3; /* the third hpage after it cannot be backed */
  cr_assert_not(_tp_run_grow(s, 5));
  cr_assert_eq(s->nhpages, 1);
  cr_assert_eq(fake.decommits, 2, "the two hpages it backed were not given back (%zu)", fake.decommits);
  fake.fail_at = 0;
  for (unsigned i = 1; i < 5; i++)
    cr_assert_eq(_tp_hpage_of((void *)(base + i * TP_HPAGE))->state, TP_HP_FREE, "hpage %u left in state %u", i,
                 _tp_hpage_of((void *)(base + i * TP_HPAGE))->state);
  /* Nothing is handed out twice: new runs of a whole hpage each, from the free list and from
   * the cursor (slot runs), and found by address (large runs); none on another's hpage. */
  tp_slab_t *r[8];
  for (int i = 0; i < 8; i++) {
    r[i] = i % 2 ? _tp_run_new(g, TP_SLAB_LARGE, 1, TP_HPAGE, TP_BIG_META, 0)
                 : _tp_run_new(g, TP_SLAB_MEDIUM, TP_SLOTS - 1, 0, TP_BIG_META, 0);
    cr_assert_not_null(r[i]);
    cr_assert_neq(r[i]->hp, s->hp);
    for (int j = 0; j < i; j++) cr_assert_neq(r[i]->hp, r[j]->hp, "hpage %#lx handed out twice", (unsigned long)r[i]->hp->addr);
  }
  for (int i = 0; i < 8; i++) _tp_run_release(r[i]);
  _tp_run_release(s);
}

Test(runs, a_medium_run_grows_into_the_free_slots_after_it_only) {
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_MEDIUM, 4, 0, TP_BIG_META, 0);
  _tp_run_publish(s);
  cr_assert_eq(s->first_slot, 0);
  cr_assert(_tp_run_grow(s, 6));
  cr_assert_eq(s->nslots, 6);
  cr_assert_eq(s->hp->nused, 6);
  cr_assert_eq(atomic_load(&g->slab_bytes), 6 * TP_SLOT);
  cr_assert_eq(_tp_slab_of((void *)(s->base + 5 * TP_SLOT)), s, "the page map does not know its new slots");
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_MEDIUM, 2, 0, TP_BIG_META, 0);
  _tp_run_publish(t);
  cr_assert_eq(t->hp, s->hp);
  cr_assert_eq(t->first_slot, 6);
  cr_assert_not(_tp_run_grow(s, 7), "grew over the run after it");
  cr_assert_not(_tp_run_grow(t, TP_SLOTS - 6 + 1), "grew past the end of its hpage");
  cr_assert_eq(s->nslots, 6);
  cr_assert_eq(_tp_slab_of((void *)t->base), t);
  _tp_run_release(s);
  cr_assert_eq(atomic_load(&g->slab_bytes), 2 * TP_SLOT);
  _tp_run_release(t);
}

/* Under pool:auto a large run of 64 MiB or more asks for THP (faulted in as touched), a smaller
 * one for the pool; pool:hugetlbfs asks for the pool whatever the size. */
Test(runs, a_large_run_of_64_mib_or_more_is_backed_lazily_under_pool_auto) {
  _tp_opt.pool = TP_POOL_AUTO;
  _tp_opt.start_bytes = 0; /* past the start pages */
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 31, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(s);
  cr_assert_eq(fake.last_want, TP_SRC_HUGETLB, "a 62 MiB run asked for source %d", fake.last_want);
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_LARGE, 32, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(t);
  cr_assert_eq(fake.last_want, TP_SRC_THP, "a 64 MiB run asked for source %d", fake.last_want);
  _tp_run_release(t);
  _tp_opt.pool = TP_POOL_HUGETLBFS;
  t = _tp_run_new(g, TP_SLAB_LARGE, 32, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_eq(fake.last_want, TP_SRC_HUGETLB, "pool:hugetlbfs: a 64 MiB run asked for source %d", fake.last_want);
  _tp_run_release(t);
  _tp_run_release(s);
}

/* Under pool:auto the last hpage of a large run that uses at most an eighth of it is backed by
 * 4 KiB pages (8.5 MB blocks: 128 KiB past 8 MiB); it is given back when the run goes, whatever
 * retain_mb says, and collapsed into a huge page when the run grows past it. */
Test(runs, a_large_runs_little_used_last_hpage_is_on_4k_pages_and_given_back_with_it) {
  _tp_opt.pool = TP_POOL_AUTO;
  _tp_opt.start_bytes = 0;
  _tp_opt.retain_bytes = (size_t)64 << 20;
  /* A run that grows past its 4 KiB tail has that hpage collapsed. */
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_LARGE, 2, TP_HPAGE, TP_BIG_META, 4096);
  cr_assert_not_null(t);
  _tp_run_publish(t);
  tp_hpage_t *tail = _tp_hpage_of((void *)(t->base + TP_HPAGE));
  cr_assert(tail->tail4k);
  size_t p0 = fake.promotes;
  cr_assert(_tp_run_grow(t, 4));
  cr_assert_eq(fake.promotes, p0 + 1, "the old tail was not collapsed");
  cr_assert_not(tail->tail4k);
  cr_assert_eq(tail->source, TP_SRC_THP);
  _tp_run_release(t);

  /* 4 MiB + 128 KiB: under 8 MiB, so its full hpages are retained when it is freed once. */
  size_t b0 = fake.backs;
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 3, TP_HPAGE, TP_BIG_META, 131168);
  cr_assert_not_null(s);
  cr_assert_eq(fake.backs - b0, 3);
  for (unsigned i = 0; i < 2; i++) cr_assert_eq(fake.wants[b0 + i], TP_SRC_HUGETLB, "hpage %u asked for %d", i, fake.wants[b0 + i]);
  cr_assert_eq(fake.wants[b0 + 2], TP_SRC_4K, "the last hpage (128 KiB used) asked for %d", fake.wants[b0 + 2]);
  tp_hpage_t *last = _tp_hpage_of((void *)(s->base + 2 * TP_HPAGE));
  cr_assert(last->tail4k);
  _tp_run_publish(s);
  uintptr_t base = s->base;
  size_t d0 = fake.decommits;
  _tp_run_release(s);
  cr_assert_eq(fake.decommits - d0, 1, "retained: the 2 full hpages stay, the tail goes back (%zu)", fake.decommits - d0);
  cr_assert_eq(last->state, TP_HP_FREE);
  cr_assert_not(last->tail4k);
  for (unsigned i = 0; i < 2; i++) cr_assert_eq(_tp_hpage_of((void *)(base + i * TP_HPAGE))->state, TP_HP_EMPTY);

  /* More than an eighth used: a huge page. */
  b0 = fake.backs;
  t = _tp_run_new(g, TP_SLAB_LARGE, 2, TP_HPAGE, TP_BIG_META, TP_HPAGE / 8 + 1);
  cr_assert_not_null(t);
  for (size_t i = b0; i < fake.backs; i++) cr_assert_eq(fake.wants[i], TP_SRC_HUGETLB);
  cr_assert_not(_tp_hpage_of((void *)(t->base + TP_HPAGE))->tail4k);
  _tp_run_release(t);

  /* pool:hugetlbfs: the pool whatever the tail. */
  _tp_opt.pool = TP_POOL_HUGETLBFS;
  _tp_opt.retain_bytes = 0;
  b0 = fake.backs;
  t = _tp_run_new(g, TP_SLAB_LARGE, 9, TP_HPAGE, TP_BIG_META, 8);
  cr_assert_not_null(t);
  for (size_t i = b0; i < fake.backs; i++) cr_assert_eq(fake.wants[i], TP_SRC_HUGETLB);
  _tp_run_release(t);
}

/* A large run whose source is the pool (heap.c, back_large_lazily): its fresh hpages are mapped
 * in one call, reserved and faulted in as the program touches them, instead of claimed (and
 * zeroed) one by one; they count as pool pages; released, they go back like any. */
Test(runs, a_large_run_on_the_pool_is_mapped_in_one_call_and_faulted_in_as_touched) {
  TP_NEEDS(_tp_opt.pool == TP_POOL_AUTO || _tp_opt.pool == TP_POOL_HUGETLBFS, "a pool mode (pool:auto or pool:hugetlbfs)");
  memset(&lazy, 0, sizeof lazy);
  _tp_os_hooks.back_lazy = fake_back_lazy;
  size_t pool = _tp_heap_ctr.pages_by_source[TP_SRC_HUGETLB];
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 10, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(s);
  cr_assert_eq(lazy.calls, 1, "%zu lazy mappings for one run of fresh hpages", lazy.calls);
  cr_assert_eq(lazy.bytes, 10 * TP_HPAGE);
  cr_assert_eq(lazy.first, s->base);
  cr_assert_eq(fake.backs, 0, "%zu hpages backed one by one besides", fake.backs);
  cr_assert_eq(_tp_heap_ctr.pages_by_source[TP_SRC_HUGETLB], pool + 10);
  cr_assert_eq(s->zeroed, 1, "fresh pool pages read as zero");
  for (unsigned i = 0; i < 10; i++) {
    tp_hpage_t *h = _tp_hpage_of((void *)(s->base + i * TP_HPAGE));
    cr_assert(h->lazy && h->source == TP_SRC_HUGETLB, "hpage %u: lazy %d source %d", i, h->lazy, h->source);
    cr_assert_eq(h->state, i == 0 ? TP_HP_LARGE : TP_HP_LARGE_TAIL);
  }
  uintptr_t base = s->base;
  _tp_run_release(s);
  cr_assert_eq(fake.decommits, 10);
  for (unsigned i = 0; i < 10; i++) {
    tp_hpage_t *h = _tp_hpage_of((void *)(base + i * TP_HPAGE));
    cr_assert(h->state == TP_HP_FREE && !h->lazy && h->source == TP_SRC_NONE, "hpage %u given back: state %d lazy %d",
              i, h->state, h->lazy);
  }
  cr_assert_eq(_tp_heap_ctr.pages_by_source[TP_SRC_HUGETLB], pool);
}

/* Its 4 KiB tail is backed alone (_tp_policy_large_tail_4k); and when the pool cannot reserve the
 * run (the mapping fails), every hpage is backed one by one, from the pool first, as before. */
Test(runs, a_large_runs_small_tail_is_backed_alone_and_a_failed_lazy_mapping_backs_each_hpage) {
  TP_NEEDS_POOL_AUTO();
  memset(&lazy, 0, sizeof lazy);
  _tp_os_hooks.back_lazy = fake_back_lazy;
  fake.source = TP_SRC_HUGETLB;
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 10, TP_HPAGE, TP_BIG_META, 1024);
  cr_assert_not_null(s);
  cr_assert_eq(lazy.calls, 1);
  cr_assert_eq(lazy.bytes, 9 * TP_HPAGE, "the lazy mapping covered %zu hpages, not the 9 before the tail", lazy.bytes / TP_HPAGE);
  cr_assert_eq(fake.backs, 1);
  cr_assert_eq(fake.last_want, TP_SRC_4K, "the tail asked for source %d", fake.last_want);
  cr_assert(_tp_hpage_of((void *)(s->base + 9 * TP_HPAGE))->tail4k);
  _tp_run_release(s);
  lazy.fail = 1;
  size_t backs = fake.backs;
  tp_slab_t *t = _tp_run_new(g, TP_SLAB_LARGE, 10, TP_HPAGE, TP_BIG_META, 0);
  cr_assert_not_null(t);
  cr_assert_eq(lazy.calls, 2);
  cr_assert_eq(fake.backs - backs, 10, "%zu hpages backed one by one after the lazy mapping failed", fake.backs - backs);
  for (size_t i = backs; i < fake.backs; i++) cr_assert_eq(fake.wants[i], TP_SRC_HUGETLB, "back %zu asked for %d", i, fake.wants[i]);
  for (unsigned i = 0; i < 10; i++) cr_assert_not(_tp_hpage_of((void *)(t->base + i * TP_HPAGE))->lazy);
  _tp_run_release(t);
}

/* A large run that grows in place by half or more (a buffer grown by doubling) backs its new
 * hpages as a new run does: on the pool in one lazy mapping, faulted in as touched; its last
 * hpage stays a huge page (the buffer grows into it), and an old 4 KiB tail is collapsed. A
 * smaller step takes window pages one by one, as before. Before, each new hpage was claimed
 * (and zeroed) at the realloc. */
Test(runs, a_large_run_that_grows_by_half_backs_its_new_hpages_lazily) {
  TP_NEEDS_POOL_AUTO();
  memset(&lazy, 0, sizeof lazy);
  _tp_os_hooks.back_lazy = fake_back_lazy;
  fake.source = TP_SRC_HUGETLB;
  _tp_opt.start_bytes = 0; /* past the start pages */
  tp_slab_t *s = _tp_run_new(g, TP_SLAB_LARGE, 2, TP_HPAGE, TP_BIG_META, 4096); /* a 4 KiB tail */
  cr_assert_not_null(s);
  _tp_run_publish(s);
  cr_assert_eq(lazy.calls, 1, "%zu lazy mappings for a new run (%zu hpages backed one by one)", lazy.calls, fake.backs);
  tp_hpage_t *tail = _tp_hpage_of((void *)(s->base + TP_HPAGE));
  cr_assert(tail->tail4k);
  size_t backs = fake.backs, p0 = fake.promotes;
  cr_assert(_tp_run_grow(s, 6), "the hpages after a run at the cursor are never used");
  cr_assert_eq(s->nhpages, 6);
  cr_assert_eq(lazy.calls, 2, "%zu lazy mappings: the grown hpages were not mapped lazily", lazy.calls);
  cr_assert_eq(lazy.bytes, 1 * TP_HPAGE + 4 * TP_HPAGE, "the grow mapped %zu hpages lazily, not 4", lazy.bytes / TP_HPAGE - 1);
  cr_assert_eq(fake.backs, backs, "%zu hpages backed one by one besides", fake.backs - backs);
  cr_assert_eq(fake.promotes, p0 + 1, "the old tail was not collapsed");
  cr_assert_not(tail->tail4k);
  for (unsigned i = 2; i < 6; i++) {
    tp_hpage_t *h = _tp_hpage_of((void *)(s->base + i * TP_HPAGE));
    cr_assert(h->lazy && !h->tail4k && h->source == TP_SRC_HUGETLB && h->state == TP_HP_LARGE_TAIL,
              "hpage %u: lazy %d tail4k %d source %d state %d", i, h->lazy, h->tail4k, h->source, h->state);
  }
  /* By less than half (6 -> 8 hpages): claimed from the windows one by one, no mapping of its own. */
  cr_assert(_tp_run_grow(s, 8));
  cr_assert_eq(lazy.calls, 2, "a step of 2 hpages on a run of 6 was mapped lazily");
  cr_assert_eq(fake.backs - backs, 2);
  cr_assert_eq(fake.last_want, TP_SRC_HUGETLB);
  cr_assert_not(_tp_hpage_of((void *)(s->base + 7 * TP_HPAGE))->lazy);
  _tp_run_release(s);
}

Test(runs, a_large_run_grows_lazily_by_half_or_more) {
  cr_assert(_tp_policy_grow_lazily(1, 1));
  cr_assert(_tp_policy_grow_lazily(2, 1));
  cr_assert(_tp_policy_grow_lazily(16, 8));
  cr_assert(_tp_policy_grow_lazily(9, 16));
  cr_assert_not(_tp_policy_grow_lazily(3, 1));
  cr_assert_not(_tp_policy_grow_lazily(17, 8));
  cr_assert_not(_tp_policy_grow_lazily(4, 0));
}

/* Start pages still on 4 KiB pages are looked at (one mincore each) every time the heap backs
 * an hpage while there are at most 16 of them; with more, once the backed bytes have moved by
 * an eighth since the last look. Exclusive groups' sparse pages (4 KiB touched of 2 MiB), on a
 * heap too small to collapse them (under 64 MiB, 32x their free room: no count of the heap's
 * bytes in memory either, so every mincore call is a look at a page). */
static unsigned sparse_start_pages(unsigned n) {
  _tp_opt.pool = TP_POOL_AUTO;
  _tp_opt.start_bytes = (size_t)256 << 20;
  fake.source = TP_SRC_4K;
  res.bytes = 4096;
  for (unsigned i = 0; i < n; i++) {
    tp_group_t *o = tp_group_create("sparse");
    cr_assert_not_null(o);
    o->exclusive = 1;
    tp_slab_t *s = _tp_run_new(o, TP_SLAB_MEDIUM, 1, 0, TP_BIG_META, 0);
    cr_assert_not_null(s);
    _tp_run_publish(s);
    cr_assert(s->hp->start, "group %u's page is not a start page", i);
  }
  _tp_opt.start_bytes = 0; /* the heap has grown past start_kb: every back looks */
  return n;
}
static size_t looks_over_backs(unsigned backs) {
  size_t c0 = res.calls;
  for (unsigned i = 0; i < backs; i++) cr_assert_not_null(_tp_run_new(g, TP_SLAB_LARGE, 1, TP_HPAGE, TP_BIG_META, 0));
  return res.calls - c0;
}

Test(runs, few_sparse_start_pages_are_looked_at_every_time_the_heap_backs_an_hpage) {
  TP_NEEDS_GROUPS_APART();
  unsigned n = sparse_start_pages(10);
  size_t calls = looks_over_backs(8);
  cr_assert_eq(calls, 8 * n, "%zu mincore calls for %u pending pages over 8 backs", calls, n);
}

Test(runs, many_sparse_start_pages_are_looked_at_once_the_heap_has_grown_by_an_eighth) {
  TP_NEEDS_GROUPS_APART();
  unsigned n = sparse_start_pages(20); /* 20 hpages backed: an eighth is 2.5 */
  size_t calls = looks_over_backs(10);
  cr_assert_geq(calls, n, "no look at all over 10 backs");
  cr_assert_leq(calls, 4 * n, "%zu mincore calls for %u pending pages over 10 backs (looked at every time: %u)", calls,
                n, 10 * n);
}

/* Sites' medium and large runs (runs.c; policy.c, _tp_policy_large_on_4k): a site's second run
 * is a sample on fresh 4 KiB pages. Measured sparse when freed, the site's next runs go on 4 KiB
 * pages too, a medium one as a large run of one hpage of its own; measured dense, they are on
 * huge pages again. Runs past TP_SPARSE_MAX_HPAGES, and other pool modes, are never sampled. */
#define SITE ((uintptr_t)0x401234)
static tp_slab_t *site_run(int kind, size_t n) {
  tp_slab_t *s = _tp_run_new_site(g, kind, n, kind == TP_SLAB_LARGE ? TP_HPAGE : 0, TP_BIG_META, 0, SITE);
  cr_assert_not_null(s);
  _tp_run_publish(s);
  return s;
}
/* The site's next large run of n hpages: on 4 KiB pages or not as `on_4k` says, every hpage
 * from source `src`. */
static tp_slab_t *next_large(size_t n, int on_4k, int src, const char *what) {
  tp_slab_t *s = site_run(TP_SLAB_LARGE, n);
  cr_assert_eq(s->on_4k != 0, on_4k, "%s: on 4 KiB pages %d, not %d", what, s->on_4k, on_4k);
  for (size_t i = 0; i < n; i++) {
    int got = _tp_hpage_of((void *)(s->base + i * TP_HPAGE))->source;
    cr_assert_eq(got, src, "%s: hpage %zu from source %d, not %d", what, i, got, src);
  }
  return s;
}

Test(runs, a_sites_second_run_is_a_4k_sample_and_a_site_found_sparse_keeps_its_runs_on_4k_pages) {
  _tp_opt.pool = TP_POOL_AUTO;
  _tp_opt.start_bytes = 0;
  _tp_opt.retain_bytes = (size_t)16 << 20; /* freed runs' hpages are retained */
  fake.source = -1;
  tp_slab_t *a = site_run(TP_SLAB_LARGE, 2);
  cr_assert_not(a->on_4k, "a site's first run is never a sample");
  tp_slab_t *b = next_large(2, 1, TP_SRC_4K, "the site's second run, a sample");
  res.bytes = 100 << 10; /* 200 KiB of its 4 MiB written */
  _tp_run_release(b);
  tp_slab_t *c = next_large(3, 1, TP_SRC_4K, "the next run of a site found sparse");
  tp_slab_t *m = site_run(TP_SLAB_MEDIUM, 8);
  cr_assert_eq(m->kind, TP_SLAB_LARGE, "a sparse site's medium run is not a run of its own");
  cr_assert_eq(m->nhpages, 1);
  cr_assert(m->on_4k);
  cr_assert_eq(m->tail_unused, TP_HPAGE - 8 * TP_SLOT, "it asked for 8 slots");
  cr_assert_eq(_tp_hpage_of((void *)m->base)->source, TP_SRC_4K);
  tp_slab_t *big = site_run(TP_SLAB_LARGE, TP_SPARSE_MAX_HPAGES + 1);
  cr_assert_not(big->on_4k, "a run past TP_SPARSE_MAX_HPAGES went on 4 KiB pages");
  /* From now on every page reads written. Runs on retained hpages are measured one in 8 (the
   * site's 8th run here: a, b, c, m and these four); read dense, the next run is a sample, on
   * fresh pages, and that one written whole makes the site dense: huge pages again. */
  res.bytes = 0;
  _tp_run_release(c);
  _tp_run_release(m);
  tp_slab_t *r[4];
  for (int i = 0; i < 4; i++) r[i] = next_large(1, 1, TP_SRC_4K, "a run of a site found sparse");
  for (int i = 0; i < 3; i++) _tp_run_release(r[i]);
  size_t b0 = fake.backs;
  tp_slab_t *again = next_large(1, 1, TP_SRC_4K, "the run after three estimated ones");
  cr_assert_eq(fake.backs, b0, "a run of a site found sparse did not reuse a retained hpage");
  _tp_run_release(again);
  _tp_run_release(r[3]); /* the 8th run: measured, dense */
  b0 = fake.backs;
  tp_slab_t *sample = next_large(1, 1, TP_SRC_4K, "the run after one read dense");
  cr_assert_eq(fake.backs, b0 + 1, "the sample is not on fresh pages");
  _tp_run_release(sample);
  tp_slab_t *d = next_large(2, 0, TP_SRC_HUGETLB, "the next run of a site whose sample was dense");
  tp_slab_t *md = site_run(TP_SLAB_MEDIUM, 8);
  cr_assert_eq(md->kind, TP_SLAB_MEDIUM);
  cr_assert_gt(_tp_heap_ctr.large_4k, 2, "large_runs_4k counts them");
  for (tp_slab_t **x = (tp_slab_t *[]){a, big, d, md}, **e = x + 4; x < e; x++) _tp_run_release(*x);
  /* Aligned past an hpage, a sample of one hpage keeps its alignment (a retained or free hpage
   * taken as is would not: several are on the lists now). */
  const uintptr_t aligned_site = SITE + 0x2000;
  for (int i = 0; i < 2; i++) {
    tp_slab_t *al = _tp_run_new_site(g, TP_SLAB_LARGE, 1, 4 * TP_HPAGE, TP_BIG_META, 0, aligned_site);
    cr_assert_not_null(al);
    cr_assert_eq(al->on_4k != 0, i == 1, "run %d of the site", i + 1);
    cr_assert_eq(al->base % (4 * TP_HPAGE), 0, "a run aligned to 8 MiB at %#lx", (unsigned long)al->base);
    _tp_run_publish(al);
    _tp_run_release(al);
  }
  /* pool:hugetlbfs (or thp, 4k): asked for, never sampled. */
  _tp_opt.pool = TP_POOL_HUGETLBFS;
  for (int i = 0; i < 4; i++) {
    tp_slab_t *x = site_run(TP_SLAB_LARGE, 2);
    cr_assert_not(x->on_4k);
    _tp_run_release(x);
  }
}

Test(runs, a_large_sample_written_whole_is_collapsed_at_the_sites_next_run_and_a_medium_one_is_not) {
  _tp_opt.pool = TP_POOL_AUTO;
  _tp_opt.start_bytes = 0;
  fake.source = -1;
  tp_slab_t *a = site_run(TP_SLAB_LARGE, 2), *b = site_run(TP_SLAB_LARGE, 2);
  cr_assert(b->on_4k);
  res.bytes = 0; /* every page written */
  size_t p0 = fake.promotes;
  tp_slab_t *c = site_run(TP_SLAB_LARGE, 2);
  cr_assert_eq(fake.promotes - p0, 2, "%zu of the sample's 2 hpages collapsed", fake.promotes - p0);
  cr_assert_not(b->on_4k);
  for (int i = 0; i < 2; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(b->base + (uintptr_t)i * TP_HPAGE));
    cr_assert_eq(x->source, TP_SRC_THP);
    cr_assert_not(x->tail4k);
  }
  cr_assert_not(c->on_4k, "the site's next run after a dense sample is on 4 KiB pages");
  /* A medium site: its sample stays on 4 KiB pages, a huge page would hold 2 MiB for 8 slots. */
  const uintptr_t other = SITE + 0x1000;
  tp_slab_t *m1 = _tp_run_new_site(g, TP_SLAB_MEDIUM, 8, 0, TP_BIG_META, 0, other);
  tp_slab_t *m2 = _tp_run_new_site(g, TP_SLAB_MEDIUM, 8, 0, TP_BIG_META, 0, other);
  cr_assert_eq(m1->kind, TP_SLAB_MEDIUM);
  cr_assert_eq(m2->kind, TP_SLAB_LARGE);
  _tp_run_publish(m1), _tp_run_publish(m2);
  res.bytes = 8 * TP_SLOT; /* its slots written whole */
  p0 = fake.promotes;
  tp_slab_t *m3 = _tp_run_new_site(g, TP_SLAB_MEDIUM, 8, 0, TP_BIG_META, 0, other);
  cr_assert_eq(fake.promotes, p0, "a medium sample was collapsed");
  cr_assert_eq(m3->kind, TP_SLAB_MEDIUM, "a medium site found dense put its next run on 4 KiB pages");
  _tp_run_publish(m3);
  for (tp_slab_t **r = (tp_slab_t *[]){a, b, c, m1, m2, m3}, **e = r + 6; r < e; r++) _tp_run_release(*r);
}
