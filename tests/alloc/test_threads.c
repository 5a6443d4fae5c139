/* Threads side by side (slab.c, pick_partial): two threads allocating one class of one site
 * group fill from slabs of their own, so no line of live bytes or of small objects is written
 * by both; a thread that exits leaves its slabs to the next; a small block freed by another
 * thread goes back to its own thread's slabs. Each Criterion test runs in a fresh process. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "modes.h"
#include "tlbpack.h"

enum { SIDE_N = 200 };
static void *side_blocks[2][SIDE_N];
static const uintptr_t side_site = 0x700000;
static pthread_barrier_t side_bar;
static int side_by_side;
static void *side_alloc(void *arg) {
  int t = (int)(intptr_t)arg;
  if (side_by_side) pthread_barrier_wait(&side_bar); /* both threads live from here */
  for (int i = 0; i < SIDE_N; i++) side_blocks[t][i] = _tp_malloc_site(48, side_site);
  if (side_by_side) pthread_barrier_wait(&side_bar); /* neither exits before both allocated */
  return NULL;
}
Test(threads, two_threads_of_one_site_group_fill_from_slabs_of_their_own) {
  TP_NEEDS_SITE_GROUPS();
  unsigned g = TP_SHARED_GROUP;
  for (int k = 0; k < 64 && g == TP_SHARED_GROUP; k++) g = _tp_site_refill(side_site, 64 << 10);
  cr_assert_neq(g, TP_SHARED_GROUP, "the site did not grow up");
  pthread_t a, b;
  pthread_create(&a, NULL, side_alloc, (void *)(intptr_t)0);
  pthread_join(a, NULL); /* a has exited: its record is free, not its slabs' owner any more */
  pthread_create(&a, NULL, side_alloc, (void *)(intptr_t)1);
  pthread_join(a, NULL);
  cr_assert_eq(_tp_slab_of(side_blocks[0][SIDE_N - 1]), _tp_slab_of(side_blocks[1][0]),
               "the second thread did not take the slab the exited one left");
  /* Now side by side: both threads live while they allocate. */
  side_by_side = 1;
  pthread_barrier_init(&side_bar, NULL, 2);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < SIDE_N; i++) tp_free(side_blocks[t][i]);
  _tp_tcache_flush_all(_tp_tc);
  pthread_create(&a, NULL, side_alloc, (void *)(intptr_t)0);
  pthread_create(&b, NULL, side_alloc, (void *)(intptr_t)1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  int shared = 0;
  for (int i = 0; i < SIDE_N; i++)
    for (int j = 0; j < SIDE_N; j++) shared += _tp_slab_of(side_blocks[0][i]) == _tp_slab_of(side_blocks[1][j]);
  cr_assert_eq(shared, 0, "%d pairs of the two threads' blocks share a slab", shared);
}

/* A thread whose own slabs are full takes from another live thread's slab only words of
 * which that thread holds no block: a word's blocks share a line of live bytes (and, for
 * blocks under 64 B, lines of data), which both threads would then write. */
enum { WORDS_N = 3000 };
static void *words_a[WORDS_N], *words_b[64];
static int words_a_live[WORDS_N];
static pthread_barrier_t words_bar;
static const uintptr_t words_site = 0x710000;
static void *words_thread_a(void *arg) {
  (void)arg;
  for (int i = 0; i < WORDS_N; i++) words_a[i] = _tp_malloc_site(48, words_site), words_a_live[i] = 1;
  /* Free blocks scattered over the first slab's first words, so that its fullest partial
   * slab has free blocks in words where this thread keeps others. */
  for (int i = 0; i < 512; i += 2) tp_free(words_a[i]), words_a_live[i] = 0;
  _tp_tcache_flush_all(_tp_tc);
  pthread_barrier_wait(&words_bar); /* a's slabs are ready */
  pthread_barrier_wait(&words_bar); /* b has allocated: a stays live until then */
  return NULL;
}
static void *words_thread_b(void *arg) {
  (void)arg;
  for (int i = 0; i < 64; i++) words_b[i] = _tp_malloc_site(48, words_site);
  return NULL;
}
static unsigned word_of(void *p) {
  tp_slab_t *s = _tp_slab_of(p);
  return (unsigned)(((uintptr_t)p - s->base) / s->size / 64);
}
Test(threads, another_live_threads_slab_gives_only_words_it_holds_nothing_in) {
  TP_NEEDS_SITE_GROUPS();
  unsigned g = TP_SHARED_GROUP;
  for (int k = 0; k < 64 && g == TP_SHARED_GROUP; k++) g = _tp_site_refill(words_site, 64 << 10);
  cr_assert_neq(g, TP_SHARED_GROUP, "the site did not grow up");
  pthread_barrier_init(&words_bar, NULL, 2);
  pthread_t a, b;
  pthread_create(&a, NULL, words_thread_a, NULL);
  pthread_barrier_wait(&words_bar);
  /* a stops filling: its lane goes idle after the process's next TP_IDLE_REFILLS refills (b,
   * started next, is of the other side, and takes from that lane only when it is idle). */
  atomic_fetch_add(&_tp_refill_clock, 2 * TP_IDLE_REFILLS);
  pthread_create(&b, NULL, words_thread_b, NULL);
  pthread_join(b, NULL);
  pthread_barrier_wait(&words_bar);
  pthread_join(a, NULL);
  int from_a = 0;
  for (int j = 0; j < 64; j++) {
    cr_assert_eq(_tp_slab_of(words_b[j])->group, g, "b's block is not in the site's group");
    for (int i = 0; i < WORDS_N; i++) {
      if (_tp_slab_of(words_a[i]) != _tp_slab_of(words_b[j])) continue;
      from_a++;
      cr_assert(!words_a_live[i] || word_of(words_a[i]) != word_of(words_b[j]),
                "b's block %p shares word %u of a slab with a's live block %p", words_b[j], word_of(words_b[j]),
                words_a[i]);
    }
  }
  cr_assert_gt(from_a, 0, "b took a new slab: the case under test did not arise");
  for (int i = 0; i < WORDS_N; i++)
    if (words_a_live[i]) tp_free(words_a[i]);
  for (int j = 0; j < 64; j++) tp_free(words_b[j]);
}

/* Hoard's cache-scratch: the main thread hands a small block to a thread that frees it and then
 * allocates blocks of the same size. Reused there, the block would share its cache line with
 * the main thread's neighbours (passive false sharing): it goes back to its slab instead. */
enum { SCRATCH_N = 300 };
static void *scratch_given[4], *scratch_got[SCRATCH_N];
static void *scratch_thread(void *arg) {
  (void)arg;
  tp_free(scratch_given[0]);
  for (int i = 0; i < SCRATCH_N; i++) scratch_got[i] = tp_malloc(16);
  for (int i = 0; i < SCRATCH_N; i++) tp_free(scratch_got[i]);
  tp_free(scratch_given[1]); /* 128 B: a line of its own, reused here as before */
  void *q = tp_malloc(128);
  int reused = q == scratch_given[1];
  tp_free(q);
  return (void *)(intptr_t)reused;
}
Test(threads, a_small_block_freed_by_another_thread_is_not_reused_there) {
  TP_NEEDS_NO_THREAD_GROUPS();
  cr_assert(_tp_policy_free_remote(16) && _tp_policy_free_remote(48), "blocks sharing a line are cached by the freeing thread");
  cr_assert(!_tp_policy_free_remote(64) && !_tp_policy_free_remote(128), "line-sized blocks go back to the slab");
  scratch_given[0] = tp_malloc(16);
  scratch_given[1] = tp_malloc(128);
  void *neighbour = tp_malloc(16); /* the main thread's block next to the given one */
  pthread_t t;
  void *reused;
  pthread_create(&t, NULL, scratch_thread, NULL);
  pthread_join(t, &reused);
  for (int i = 0; i < SCRATCH_N; i++)
    cr_assert_neq(scratch_got[i], scratch_given[0], "the thread handed out the block it freed (malloc %d)", i);
  cr_assert((intptr_t)reused, "a 128-byte block freed across threads was not reused by the freeing thread");
  /* The thread's exit returned the remote block to its slab: the main thread gets it again. */
  int back = 0;
  void *again[SCRATCH_N];
  for (int i = 0; i < SCRATCH_N; i++) back += (again[i] = tp_malloc(16)) == scratch_given[0];
  cr_assert_eq(back, 1, "the block freed by the other thread is %s", back ? "handed out twice" : "lost");
  for (int i = 0; i < SCRATCH_N; i++) tp_free(again[i]);
  tp_free(neighbour);
}

/* xmalloc-test's and larson's consumers: a thread that keeps freeing another live thread's small
 * blocks stops sending them back once its remote bin has filled _tp_policy_free_remote_stop
 * times, and caches them from then on like its own (each batch sent back cost a flush and a
 * refill: 1.37x jemalloc's time on tlbbench's batches-mt). */
enum { CONSUMED_N = 64 * 6 };
static void *consumed[CONSUMED_N];
static void *consumer_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < CONSUMED_N; i++) tp_free(consumed[i]);
  void *q = tp_malloc(16);
  int reused = q == consumed[CONSUMED_N - 1];
  tp_free(q);
  return (void *)(intptr_t)reused;
}
Test(threads, a_thread_that_keeps_freeing_another_threads_small_blocks_caches_them) {
  TP_NEEDS_NO_THREAD_GROUPS();
  cr_assert(!_tp_policy_free_remote_stop(0) && !_tp_policy_free_remote_stop(3), "a few batches still go back");
  cr_assert(_tp_policy_free_remote_stop(4), "a consumer never stops sending back");
  for (int i = 0; i < CONSUMED_N; i++) consumed[i] = tp_malloc(16);
  tp_slab_t *s = _tp_slab_of(consumed[CONSUMED_N - 1]);
  cr_assert(s->filler == _tp_tc && s->remote_mask != 0, "the main thread does not fill from the last block's slab");
  pthread_t t;
  void *reused;
  pthread_create(&t, NULL, consumer_thread, NULL);
  pthread_join(t, &reused);
  cr_assert((intptr_t)reused, "the consumer sent its last block back instead of caching it");
  cr_assert_eq(s->remote_mask, 0, "the slab still sends every other thread's frees back");
  /* Every block went back once: the consumer's exit returned what it cached. */
  void *again[CONSUMED_N];
  int twice = 0;
  for (int i = 0; i < CONSUMED_N; i++) {
    again[i] = tp_malloc(16);
    for (int j = 0; j < i; j++) twice += again[j] == again[i];
  }
  cr_assert_eq(twice, 0, "a block was handed out twice");
  for (int i = 0; i < CONSUMED_N; i++) tp_free(again[i]);
}

/* A small block whose slab's filler has exited: no thread writes its neighbours' lines any
 * more, so the freeing thread caches it like its own (larson hands its blocks to a new thread
 * and exits; sent to remote bins, its small blocks went round through the slabs). */
static void *exited_block;
static void *exited_alloc(void *arg) {
  (void)arg;
  exited_block = tp_malloc(16);
  return NULL;
}
Test(threads, a_small_block_whose_filler_exited_is_reused_by_the_freeing_thread) {
  pthread_t t;
  pthread_create(&t, NULL, exited_alloc, NULL);
  pthread_join(t, NULL);
  tp_slab_t *s = _tp_slab_of(exited_block);
  cr_assert(s->filler != _tp_tc && s->filler->exited, "the block's slab is not the exited thread's");
  void *p = exited_block;
  tp_free(p);
  void *q = tp_malloc(16);
  cr_assert_eq(q, p, "the block freed after its filler exited went to the remote bin, not this thread's cache");
  tp_free(q);
}

/* fork: the child is the only thread left, so slabs the parent's other threads filled from are
 * the child's to use again (their records are marked exited in the child). */
static void *fork_block;
static pthread_barrier_t fork_bar;
static void *fork_filler(void *arg) {
  (void)arg;
  fork_block = tp_malloc(48); /* a class the main thread never uses */
  pthread_barrier_wait(&fork_bar); /* allocated */
  pthread_barrier_wait(&fork_bar); /* alive until the child has been forked */
  return NULL;
}
Test(threads, a_fork_child_reuses_the_slabs_of_threads_it_did_not_inherit) {
  TP_NEEDS_NO_THREAD_GROUPS();
  pthread_t t;
  pthread_barrier_init(&fork_bar, NULL, 2);
  pthread_create(&t, NULL, fork_filler, NULL);
  pthread_barrier_wait(&fork_bar);
  pid_t pid = fork();
  if (pid == 0) {
    tp_free(fork_block);
    _tp_tcache_flush_all(_tp_tc); /* the block is back in its slab */
    for (int i = 0; i < 200; i++)
      if (tp_malloc(48) == fork_block) _exit(0);
    _exit(1);
  }
  pthread_barrier_wait(&fork_bar);
  pthread_join(t, NULL);
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "the child never got the block back: the slab stayed the dead thread's (status %d)", st);
}

/* A group's bin has a lane per thread side (tp_lane_t): two threads started one after the
 * other fill from lanes of their own, and each slab's blocks go back under its lane's lock;
 * when every block is back, each lane keeps its empty slabs (up to TP_KEEP_EMPTY_BYTES, for its
 * next refills) and malloc_trim gives them back to the heap. */
enum { CUR_N = 600 };
static void *cur_blocks[2][CUR_N];
static tp_group_t *cur_group;
static int cur_side[2], cur_own[2];
static pthread_barrier_t cur_bar;
static void *cur_thread(void *arg) {
  int t = (int)(intptr_t)arg;
  pthread_barrier_wait(&cur_bar);
  for (int i = 0; i < CUR_N; i++) cur_blocks[t][i] = tp_group_malloc(cur_group, 48);
  cur_side[t] = _tp_tc->side;
  /* Every slab of its blocks is in its side's lane and filled by it. */
  cur_own[t] = 1;
  for (int i = 0; i < CUR_N; i++) {
    const tp_slab_t *s = _tp_slab_of(cur_blocks[t][i]);
    if (s->lane != cur_side[t] || s->filler != _tp_tc) cur_own[t] = 0;
  }
  pthread_barrier_wait(&cur_bar); /* both have looked before either exits */
  return NULL;
}
Test(threads, two_threads_fill_from_lanes_of_their_own_and_their_empty_slabs_go_back_at_trim) {
  cur_group = tp_group_create("sides");
  cr_assert_not_null(cur_group);
  pthread_barrier_init(&cur_bar, NULL, 2);
  pthread_t a, b;
  pthread_create(&a, NULL, cur_thread, (void *)(intptr_t)0);
  pthread_create(&b, NULL, cur_thread, (void *)(intptr_t)1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  cr_assert_neq(cur_side[0], cur_side[1], "two threads started one after the other share a side");
  cr_assert(cur_own[0] && cur_own[1], "a thread's blocks sit in slabs of another lane or thread (%d, %d)",
            cur_own[0], cur_own[1]);
  unsigned c = _tp_class_of(48);
  tp_group_t *g = _tp_groups[cur_group->id];
  cr_assert_gt(g->lanes[0][c].slabs, 0, "lane 0 has no slab");
  cr_assert_gt(g->lanes[1][c].slabs, 0, "lane 1 has no slab");
  cr_assert_eq(g->lanes_used, 3, "the group counts lanes %#x as used", (unsigned)g->lanes_used);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < CUR_N; i++) tp_free(cur_blocks[t][i]);
  _tp_tcache_flush_all(_tp_tc);
  size_t keep = TP_KEEP_EMPTY_BYTES / ((size_t)_tp_classes[c].nslots * TP_SLOT);
  for (int i = 0; i < TP_LANES; i++) {
    tp_lane_t *l = &g->lanes[i][c];
    _tp_lock(&l->lock);
    size_t avail = 0, listed = 0, empty = 0;
    for (tp_slab_t *s = l->partial; s; s = s->next, listed++) {
      cr_assert_eq(s->lane, i, "a slab listed in lane %d says lane %d", i, s->lane);
      avail += s->navail;
      empty += s->navail == s->nobj;
    }
    cr_assert_eq(l->navail, avail, "lane %d counts %zu available, its slabs %zu", i, l->navail, avail);
    cr_assert_eq(empty, listed, "lane %d: a slab is not empty with every block back", i);
    cr_assert_eq(l->slabs, listed, "lane %d counts %zu slabs and lists %zu", i, l->slabs, listed);
    cr_assert_eq(l->nempty, empty, "lane %d counts %u empty slabs and lists %zu", i, l->nempty, empty);
    cr_assert_leq(empty, keep, "lane %d keeps %zu empty slabs, past the bound of %zu", i, empty, keep);
    _tp_unlock(&l->lock);
  }
  tp_trim(0);
  for (int i = 0; i < TP_LANES; i++)
    cr_assert_eq(g->lanes[i][c].slabs, 0, "malloc_trim left lane %d %zu empty slabs", i, g->lanes[i][c].slabs);
  /* The bin refills after that, from the slab it kept or a new one. */
  void *p = tp_group_malloc(cur_group, 48);
  cr_assert_not_null(p);
  tp_free(p);
  tp_group_destroy(cur_group);
}

/* A run of slots a thread gives back is marked with its side (tp_hpage_t.side_mask): a thread of
 * the other side carves another run it has touched before while it can, so the lines the first
 * thread's cache holds stay that side's. The other side's run comes first in the hpage, where
 * first fit would take it. */
static tp_group_t *slot_group;
static void *slot_block;
static int slot_side;
static pthread_barrier_t slot_bar;
static void *slot_thread(void *arg) {
  (void)arg;
  slot_block = tp_group_malloc(slot_group, 100 << 10); /* a medium run of 4 slots */
  slot_side = _tp_tc->side; /* the thread's cache starts at its first malloc */
  pthread_barrier_wait(&slot_bar); /* the main thread carves its run after this one */
  pthread_barrier_wait(&slot_bar);
  tp_free(slot_block); /* given back at once, marked with this thread's side */
  return NULL;
}
Test(threads, a_run_given_back_by_one_side_is_carved_again_by_that_side_first) {
  slot_group = tp_group_create("slots");
  cr_assert_not_null(slot_group);
  void *keep = tp_group_malloc(slot_group, 48); /* the group's hpage stays in use */
  cr_assert_not_null(keep);
  int me = _tp_tc->side;
  pthread_barrier_init(&slot_bar, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, slot_thread, NULL);
  pthread_barrier_wait(&slot_bar);
  if (slot_side == me) { /* sides alternate as threads start: the next one is the other */
    pthread_barrier_wait(&slot_bar);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, slot_thread, NULL);
    pthread_barrier_wait(&slot_bar);
  }
  cr_assert_neq(slot_side, me, "no thread of the other side");
  void *mine = tp_group_malloc(slot_group, 100 << 10); /* after the other side's run */
  cr_assert_not_null(mine);
  pthread_barrier_wait(&slot_bar);
  pthread_join(t, NULL);
  tp_free(mine); /* given back: touched, marked with this side */
  cr_assert_eq(_tp_hpage_of(slot_block), _tp_hpage_of(keep), "the run was carved on another hpage");
  cr_assert_eq(_tp_hpage_of(mine), _tp_hpage_of(keep), "the second run was carved on another hpage");
  cr_assert_lt((uintptr_t)slot_block, (uintptr_t)mine, "the other side's run is not the first fit");
  void *q = tp_group_malloc(slot_group, 100 << 10);
  cr_assert_not_null(q);
  cr_assert_neq(q, slot_block, "side %d carved the run side %d gave back, with a run of its own free", me, slot_side);
  cr_assert_eq(q, mine, "side %d did not carve the run it gave back", me);
  tp_free(q);
  tp_free(keep);
  tp_group_destroy(slot_group);
}

/* On 4 KiB pages a run never touched would add resident pages: a side carves one of those only
 * where first fit does, even when first fit is a run the other side gave back. */
static void *fresh_thread(void *arg) {
  (void)arg;
  slot_block = tp_group_malloc(slot_group, 100 << 10);
  slot_side = _tp_tc->side;
  tp_free(slot_block);
  return NULL;
}
Test(threads, on_4k_pages_a_side_takes_no_untouched_run_to_avoid_the_other_sides) {
  slot_group = tp_group_create("fresh");
  cr_assert_not_null(slot_group);
  void *keep = tp_group_malloc(slot_group, 48);
  cr_assert_not_null(keep);
  int me = _tp_tc->side;
  pthread_t t;
  for (int k = 0; k < 2; k++) { /* sides alternate as threads start: one of two is the other */
    pthread_create(&t, NULL, fresh_thread, NULL);
    pthread_join(t, NULL);
    if (slot_side != me) break;
  }
  cr_assert_neq(slot_side, me, "no thread of the other side");
  tp_hpage_t *h = _tp_hpage_of(keep);
  cr_assert_eq(_tp_hpage_of(slot_block), h, "the run was carved on another hpage");
  void *q = tp_group_malloc(slot_group, 100 << 10); /* every other free run is untouched */
  cr_assert_not_null(q);
  if (h->source == TP_SRC_4K)
    cr_assert_eq(q, slot_block, "side %d touched a new run on 4 KiB pages instead of the one side %d gave back", me,
                 slot_side);
  else
    cr_assert_neq(q, slot_block, "side %d carved the run side %d gave back on a huge page", me, slot_side);
  tp_free(q);
  tp_free(keep);
  tp_group_destroy(slot_group);
}

/* A group one thread allocates from uses its side's lane only, and marks only that one used:
 * the other lane's lines are never read. */
Test(threads, one_thread_marks_only_its_own_lane_used) {
  tp_group_t *grp = tp_group_create("one lane");
  cr_assert_not_null(grp);
  void *p[300];
  for (int i = 0; i < 300; i++) p[i] = tp_group_malloc(grp, 48 + 16 * (i % 8));
  tp_group_t *g = _tp_groups[grp->id];
  unsigned side = _tp_tc->side;
  cr_assert_eq(g->lanes_used, 1u << side, "one thread of side %u marked lanes %#x", side, (unsigned)g->lanes_used);
  for (unsigned c = 0; c < TP_NCLASSES; c++)
    cr_assert_eq(g->lanes[side ^ 1][c].slabs, 0, "the other lane holds slabs of class %u", c);
  for (int i = 0; i < 300; i++) tp_free(p[i]);
  tp_group_destroy(grp);
}
