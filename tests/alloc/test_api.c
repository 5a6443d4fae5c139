/* The tp_* API through libtlbpack.a: semantics, errors that abort, groups, stats, warming. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect_abort.h"
#include "internal.h"
#include "modes.h"
#include "tlbpack.h"

Test(api, malloc_zero_returns_distinct_pointers) {
  void *a = tp_malloc(0), *b = tp_malloc(0);
  cr_assert(a && b && a != b);
  cr_assert(tp_owns(a) && tp_owns(b));
  tp_free(a);
  tp_free(b);
}

Test(api, blocks_are_16_byte_aligned_usable_and_writable_across_all_size_ranges) {
  for (size_t n = 16; n < ((size_t)9 << 20); n = n * 5 / 4 + 16) {
    unsigned char *p = tp_malloc(n);
    cr_assert_not_null(p, "size %zu", n);
    cr_assert_eq((uintptr_t)p & 15, 0, "size %zu at %p", n, (void *)p);
    cr_assert_geq(tp_malloc_usable_size(p), n);
    memset(p, 0x5a, n);
    cr_assert_eq(p[n - 1], 0x5a);
    tp_free(p);
  }
}

Test(api, calloc_zeroes_recycled_memory_and_detects_overflow) {
  for (size_t n = 8; n < ((size_t)6 << 20); n *= 3) {
    for (int round = 0; round < 3; round++) {
      unsigned char *p = tp_malloc(n);
      memset(p, 0xff, n);
      tp_free(p);
      unsigned char *q = tp_calloc(1, n);
      cr_assert_not_null(q);
      for (size_t i = 0; i < n; i += 61) cr_assert_eq(q[i], 0, "size %zu byte %zu", n, i);
      cr_assert_eq(q[n - 1], 0);
      tp_free(q);
    }
  }
  errno = 0;
  cr_assert_null(tp_calloc(SIZE_MAX / 8, 16));
  cr_assert_eq(errno, ENOMEM);
}

Test(api, impossible_sizes_return_null_with_enomem) {
  errno = 0;
  cr_assert_null(tp_malloc(SIZE_MAX - 4096));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(tp_malloc((size_t)1 << 62));
  cr_assert_eq(errno, ENOMEM);
  errno = 0;
  cr_assert_null(tp_reallocarray(NULL, SIZE_MAX / 2, 3));
  cr_assert_eq(errno, ENOMEM);
}

Test(api, realloc_keeps_contents_and_zero_size_frees) {
  char *p = tp_realloc(NULL, 10);
  memcpy(p, "abcdefghi", 10);
  for (size_t n = 20; n < ((size_t)5 << 20); n *= 4) {
    p = tp_realloc(p, n);
    cr_assert_str_eq(p, "abcdefghi");
  }
  p = tp_realloc(p, 10);
  cr_assert_str_eq(p, "abcdefghi");
  cr_assert_null(tp_realloc(p, 0));
}

Test(api, alignments_up_to_4_mib_hold_for_every_entry_point) {
  for (size_t al = 8; al <= ((size_t)4 << 20); al *= 2) {
    for (size_t n = 1; n < ((size_t)3 << 20); n = n * 7 + 5) {
      void *p = NULL;
      cr_assert_eq(tp_posix_memalign(&p, al, n), 0);
      cr_assert_eq((uintptr_t)p % al, 0, "posix_memalign(%zu, %zu) = %p", al, n, p);
      memset(p, 1, n);
      tp_free(p);
      p = tp_aligned_alloc(al, n);
      cr_assert_eq((uintptr_t)p % al, 0, "aligned_alloc(%zu, %zu) = %p", al, n, p);
      tp_free(p);
      p = tp_memalign(al, n);
      cr_assert_eq((uintptr_t)p % al, 0);
      tp_free(p);
    }
  }
  void *p = tp_valloc(1);
  cr_assert_eq((uintptr_t)p % 4096, 0);
  tp_free(p);
  p = tp_pvalloc(1);
  cr_assert_eq((uintptr_t)p % 4096, 0);
  cr_assert_geq(tp_malloc_usable_size(p), 4096);
  tp_free(p);
}

/* Up to 64 KiB an aligned request takes the malloc hit of its size rounded to the alignment:
 * every size there, densely, for every alignment that path takes. */
Test(api, aligned_blocks_up_to_64_kib_are_aligned_and_hold_their_size) {
  for (size_t al = 32; al <= 65536; al *= 2) {
    for (size_t n = 1; n <= 65536 + 64; n += n < 4096 ? 1 : 61) {
      void *p[5]; /* held together: not the same block each time */
      for (int k = 0; k < 5; k++) {
        p[k] = tp_aligned_alloc(al, n);
        cr_assert_not_null(p[k]);
        cr_assert_eq((uintptr_t)p[k] % al, 0, "aligned_alloc(%zu, %zu) = %p", al, n, p[k]);
        cr_assert_geq(tp_malloc_usable_size(p[k]), n, "aligned_alloc(%zu, %zu): %zu usable", al, n,
                      tp_malloc_usable_size(p[k]));
        memset(p[k], 0xa5, n);
      }
      for (int k = 0; k < 5; k++) tp_free(p[k]);
    }
  }
}

/* Alignments of 8 KiB up to a slot are size classes too (slabs start on a slot, and a class
 * that is a multiple of the alignment keeps every object aligned): a block takes its class,
 * not a slot of its own. Before, posix_memalign(8192, 8192) took a slot each: 5000 of them
 * held 316 MB against jemalloc's 44. */
Test(api, blocks_aligned_to_8_to_32_kib_share_slots) {
  for (size_t al = 8192; al <= 32768; al *= 2) {
    enum { N = 32 };
    void *p[N];
    uintptr_t slot[N];
    unsigned distinct = 0;
    for (int k = 0; k < N; k++) {
      cr_assert_eq(tp_posix_memalign(&p[k], al, al), 0);
      cr_assert_eq((uintptr_t)p[k] % al, 0);
      cr_assert_eq(tp_malloc_usable_size(p[k]), al, "posix_memalign(%zu, %zu): %zu usable", al, al,
                   tp_malloc_usable_size(p[k]));
      uintptr_t s = (uintptr_t)p[k] >> TP_SLOT_SHIFT;
      int seen = 0;
      for (unsigned j = 0; j < distinct; j++) seen |= slot[j] == s;
      if (!seen) slot[distinct++] = s;
    }
    /* TP_SLOT / al blocks a slot: N of them fill N * al / TP_SLOT slots (one more for a slab
     * that other tests left partly used) */
    cr_assert_leq(distinct, N * al / TP_SLOT + 1, "%u slots for %d blocks aligned to %zu", distinct, N, al);
    for (int k = 0; k < N; k++) tp_free(p[k]);
  }
}

/* An alignment past a slot, up to 64 KiB, is a medium run that starts at a multiple of it:
 * posix_memalign(65536, 100) takes one slot, not a huge page. */
Test(api, a_block_aligned_to_64_kib_is_a_medium_run_at_an_aligned_slot) {
  if (TP_SLOT >= ((size_t)64 << 10)) return; /* slots are 64 KiB: a size class serves it */
  enum { N = 40 };
  void *p[N];
  for (int k = 0; k < N; k++) {
    cr_assert_eq(tp_posix_memalign(&p[k], 65536, 100 + (size_t)k * 1000), 0);
    cr_assert_eq((uintptr_t)p[k] % 65536, 0, "posix_memalign(65536) = %p", p[k]);
    tp_slab_t *s = _tp_slab_of(p[k]);
    cr_assert_not_null(s);
    cr_assert_eq(s->kind, TP_SLAB_MEDIUM, "an aligned block of %d B is of kind %d", 100 + k * 1000, s->kind);
    cr_assert_eq(s->nslots, (100 + k * 1000 + TP_SLOT - 1) / TP_SLOT, "%u slots for %d bytes", s->nslots, 100 + k * 1000);
    memset(p[k], 0x5a, 100 + (size_t)k * 1000);
  }
  for (int k = 0; k < N; k++) tp_free(p[k]);
}

Test(api, posix_memalign_rejects_bad_alignments_with_einval) {
  void *p = (void *)0x1;
  cr_assert_eq(tp_posix_memalign(&p, 0, 8), EINVAL);
  cr_assert_eq(tp_posix_memalign(&p, 3, 8), EINVAL);
  cr_assert_eq(tp_posix_memalign(&p, 4, 8), EINVAL);
  cr_assert_eq(tp_posix_memalign(&p, 24, 8), EINVAL);
  cr_assert_eq(p, (void *)0x1, "output untouched on error");
  errno = 0;
  cr_assert_null(tp_aligned_alloc(48, 10));
  cr_assert_eq(errno, EINVAL);
}

/* The bad call runs in a child process (expect_abort.h): the abort and tlbpack's message. */
static void call_free(void *p) { tp_free(p); }

Test(free, double_free_aborts) {
  void *p = tp_malloc(40);
  tp_free(p);
  expect_abort(call_free, p, "tlbpack: double free of %p", p);
}

/* realloc of a freed block that waits in a thread cache (not on top of its bin, where the free's
 * own check would see it) aborts with a message: it never frees the block a second time and
 * returns NULL without ENOMEM. */
static void call_realloc(void *p) { (void)tp_realloc(p, 100); }
Test(free, realloc_of_a_freed_block_aborts) {
  void *p = tp_malloc(40), *q = tp_malloc(40);
  tp_free(p);
  tp_free(q);
  expect_abort(call_realloc, p, "tlbpack: realloc of %p, a block freed already (it waits in a thread cache)", p);
}

/* A block in a thread cache carries its tag (its address under the process's key, in its second
 * word): written when a free caches it and when a refill takes it from its slab, checked and
 * cleared when a malloc hands it out, checked when a flush takes it back. */
static tp_tbin_t *bin_of(void *p) {
  tp_slab_t *s = _tp_slab_of(p);
  return _tp_tbin_get(_tp_tc, s->group, s->cls);
}

/* 48 B: tagged by the refill, the top of the bin. 1000 B on a young heap's 4 KiB pages: not
 * written until its malloc, its entry marked (bit 0) and its live byte still 0. Either way a
 * free of it is a double free, and it reads as not live. */
Test(tag, a_cached_block_never_handed_out_is_reported) {
  size_t sizes[] = {48, 1000};
  for (int k = 0; k < 2; k++) {
    static char *p[1000];
    int n = 0;
    tp_tbin_t *b;
    do { /* a new bin refills a few blocks at a time at first */
      p[n++] = tp_malloc(sizes[k]);
      b = bin_of(p[0]);
    } while (b->top == b->lo && n < 1000);
    cr_assert_gt(b->top, b->lo, "%zu B: %d refills left nothing in the cache", sizes[k], n);
    uintptr_t e = (uintptr_t)b->top[-1].p; /* the next block the cache hands out */
    void *q = (void *)(e & ~(uintptr_t)1);
    int on_4k = _tp_hpage_of(q)->source == TP_SRC_4K;
    cr_assert_eq(e & 1, sizes[k] > 128 && on_4k, "%zu B: entry bit 0 is %d on %s pages", sizes[k], (int)(e & 1),
                 on_4k ? "4 KiB" : "huge");
    cr_assert_eq(tp_malloc_usable_size(q), 0, "%zu B: a cached block reads as live", sizes[k]);
    expect_abort(call_free, q, "tlbpack: double free of %p", q);
    void *r = (uintptr_t)b->top[-1].p == e ? tp_malloc(sizes[k]) : NULL;
    cr_assert_eq(r, q, "%zu B: the cache did not hand out the block it held", sizes[k]);
    cr_assert_eq(tp_malloc_usable_size(q), _tp_class_size(_tp_class_of(sizes[k])));
    tp_free(q);
    for (int i = 0; i < n; i++) tp_free(p[i]);
  }
}

/* The tag is cleared when a block is handed out: one the program never writes frees cleanly,
 * reused from the cache or fresh from a refill. */
Test(tag, a_block_handed_out_again_frees_without_being_written) {
  int reused = 0;
  for (size_t size = 16; size <= 4096; size += size / 2) {
    void *p = tp_malloc(size);
    tp_free(p);
    void *q = tp_malloc(size); /* the same block, from the cache, when the class is cached */
    reused += q == p;
    cr_assert_eq(tp_malloc_usable_size(q), _tp_class_size(_tp_class_of(size)));
    tp_free(q);
    void *r = tp_malloc(size), *u = tp_malloc(size);
    tp_free(u);
    tp_free(r);
  }
  cr_assert_geq(reused, 8, "only %d sizes reused their block", reused);
}

/* A cached block's tag is the address of its bin, which carries its own address under the key:
 * a live block whose second word holds other metadata's address, a wild pointer or a small
 * number still reads as live (malloc_usable_size reads the word it points to only inside the
 * metadata regions). */
Test(tag, a_live_block_holding_an_address_is_not_taken_for_a_cached_one) {
  uintptr_t *p = tp_malloc(64);
  size_t want = _tp_class_size(_tp_class_of(64));
  uintptr_t words[] = {(uintptr_t)_tp_slab_of(p), (uintptr_t)_tp_slab_of(p) + 8, 0xdead0000beef000ull, 8, 1,
                       (uintptr_t)bin_of(p) + 64, (uintptr_t)p};
  for (unsigned i = 0; i < sizeof words / sizeof *words; i++) {
    p[1] = words[i];
    cr_assert_eq(tp_malloc_usable_size(p), want, "word %#lx: a live block read as cached", (unsigned long)words[i]);
  }
  p[1] = (uintptr_t)bin_of(p); /* its bin's address: what a cached block holds */
  cr_assert_eq(tp_malloc_usable_size(p), 0);
  tp_free(p);
}

/* A free writes the tag without reading it; a cached block is checked when it leaves the cache.
 * A block freed twice is in a cache twice: reported at once while it is the top of the bin
 * (free(p); free(p)), otherwise when its second copy leaves, before it is handed out or counted
 * in its slab again. So is a block written over its tag after its free. */
static size_t leave_size;
static void free_twice_apart_then_malloc(void *p) {
  void *q = tp_malloc(leave_size);
  tp_free(p);
  tp_free(q);
  tp_free(p); /* not the top of the bin: gets past the free */
  void *a = tp_malloc(leave_size), *b = tp_malloc(leave_size);
  if (a != p || b != q) abort(); /* not the cache's order: the message below is missing */
  void *c = tp_malloc(leave_size); /* p's second copy: its tag left with the first */
  (void)c;
}
static void free_twice_apart_then_flush(void *p) {
  void *q = tp_malloc(leave_size);
  tp_free(p);
  tp_free(q);
  tp_free(p); /* both copies tagged: the flush finds the second one's bit already available */
  _tp_tcache_flush_all(_tp_tc);
}
static void write_after_free_then_malloc(void *p) {
  tp_free(p);
  ((uintptr_t *)p)[1] = 0; /* the program's write after free */
  void *c = tp_malloc(leave_size);
  (void)c;
}
static void write_after_free_then_flush(void *p) {
  tp_free(p);
  ((uintptr_t *)p)[1] = 12345;
  _tp_tcache_flush_all(_tp_tc);
}

Test(tag, a_block_freed_twice_or_written_after_free_is_reported_when_it_leaves_the_cache) {
  size_t sizes[] = {48, 200}; /* 200 B on a young heap's 4 KiB pages: refilled untagged */
  for (int k = 0; k < 2; k++) {
    leave_size = sizes[k];
    void *p = tp_malloc(leave_size);
    expect_abort(free_twice_apart_then_malloc, p,
                 "tlbpack: double free of %p, or a write after its free (its tag was gone when malloc took it from the thread cache)", p);
    expect_abort(free_twice_apart_then_flush, p, "tlbpack: double free of %p (found when it went back to its slab)", p);
    expect_abort(write_after_free_then_malloc, p,
                 "tlbpack: double free of %p, or a write after its free (its tag was gone when malloc took it from the thread cache)", p);
    expect_abort(write_after_free_then_flush, p,
                 "tlbpack: double free of %p, or a write after its free (its tag was gone when it went back to its slab)", p);
    tp_free(p); /* none of it happened here: p is live and frees cleanly */
    void *r = tp_malloc(leave_size);
    tp_free(r);
  }
}

/* A destroyed group's memory is gone (here given back at once: retain_mb 0); the blocks this
 * thread still caches for it are dropped at the next flush without being read, not checked. */
Test(tag, a_destroyed_groups_cached_blocks_are_dropped_unread) {
  TP_NEEDS_NO_THREAD_GROUPS();
  size_t retain = _tp_opt.retain_bytes;
  _tp_opt.retain_bytes = 0;
  tp_group_t *g = tp_group_create("tag-destroyed");
  cr_assert_not_null(g);
  enum { N = 40 };
  void *p[N];
  for (int i = 0; i < N; i++) cr_assert_not_null(p[i] = tp_group_malloc(g, 48));
  for (int i = 0; i < N; i++) tp_free(p[i]);
  tp_tbin_t *b = _tp_tc->groups[g->id]->bins[_tp_class_of(48)];
  cr_assert_gt(_tp_tbin_count(b), 0, "nothing cached for the group");
  tp_group_destroy(g);
  _tp_tcache_flush_all(_tp_tc);
  cr_assert_eq(_tp_tbin_count(b), 0);
  _tp_opt.retain_bytes = retain;
  void *q = tp_malloc(48);
  tp_free(q);
}

/* Another thread frees the block and keeps it in its cache (200 B: reused there; 48 B: its
 * remote bin); this thread frees it again and takes it back from its own cache. The other
 * thread's copy is reported when it leaves that cache, at the thread's exit, rather than go back
 * to its slab while the block is handed out. */
static pthread_barrier_t held, done;
static void *free_and_hold(void *p) {
  tp_free(p);
  pthread_barrier_wait(&held);
  pthread_barrier_wait(&done);
  return NULL;
}
static void free_after_other_thread(void *p) {
  pthread_t t;
  pthread_barrier_init(&held, NULL, 2);
  pthread_barrier_init(&done, NULL, 2);
  pthread_create(&t, NULL, free_and_hold, p);
  pthread_barrier_wait(&held);
  tp_slab_t *s = _tp_slab_of(p);
  if (__atomic_load_n(&s->live[((uintptr_t)p - s->base) / s->size], __ATOMIC_RELAXED) != 1)
    abort(); /* the other thread's free went back to the slab, not to its cache */
  if (tp_malloc_usable_size(p) != 0) abort(); /* a block another thread freed reads as live */
  tp_free(p);
  if (tp_malloc(leave_size) != p) abort();
  pthread_barrier_wait(&done);
  pthread_join(t, NULL);
}

Test(tag, a_block_another_thread_freed_and_caches_is_reported_when_it_leaves_that_cache) {
  size_t sizes[] = {200, 48};
  for (int i = 0; i < 2; i++) {
    leave_size = sizes[i];
    void *p = tp_malloc(sizes[i]), *keep = tp_malloc(sizes[i]); /* keep: the slab stays this thread's */
    expect_abort(free_after_other_thread, p,
                 "tlbpack: double free of %p, or a write after its free (its tag was gone when it went back to its slab)", p);
    tp_free(p);
    tp_free(keep);
  }
}

Test(free, double_free_of_a_large_block_aborts) {
  void *p = tp_malloc((size_t)5 << 20);
  tp_free(p);
  expect_abort(call_free, p, "tlbpack: double free of %p", p);
}

Test(free, interior_pointer_aborts) {
  char *p = tp_malloc(100);
  expect_abort(call_free, p + 16, "tlbpack: invalid free of %p", (void *)(p + 16));
}

Test(free, interior_pointer_of_a_medium_block_aborts) {
  char *p = tp_malloc(600 << 10);
  expect_abort(call_free, p + 4096, "tlbpack: invalid free of %p", (void *)(p + 4096));
}

Test(free, pointer_tlbpack_never_handed_out_aborts) {
  static char not_ours[64];
  expect_abort(call_free, not_ours, "tlbpack: invalid free of %p", (void *)not_ours);
}

Test(free, stack_pointer_aborts) {
  int x;
  expect_abort(call_free, &x, "tlbpack: invalid free of %p", (void *)&x);
}

/* The slab map is indexed by address bits 30-46: a pointer past the 47-bit user space lands
 * on a live block's slab, and must still be reported as not tlbpack's. */
Test(free, a_pointer_past_user_space_aliasing_a_live_block_aborts) {
  char *p = tp_malloc(64);
  void *alias = (void *)((uintptr_t)p | ((uintptr_t)1 << 63));
  expect_abort(call_free, alias, "tlbpack: invalid free of %p: not a block tlbpack handed out", alias);
  void *above = (void *)((uintptr_t)p + ((uintptr_t)1 << 47));
  expect_abort(call_free, above, "tlbpack: invalid free of %p: not a block tlbpack handed out", above);
  tp_free(p);
}

Test(free, null_is_ignored) { tp_free(NULL); }

Test(stats, count_what_was_allocated_and_freed) {
  tp_stats_t a, b, c;
  tp_stats_get(&a);
  void *p[100];
  for (int i = 0; i < 100; i++) p[i] = tp_malloc(1000);
  tp_stats_get(&b);
  cr_assert_eq(b.live_objects - a.live_objects, 100);
  cr_assert_geq(b.live_bytes - a.live_bytes, 100 * 1000);
  cr_assert_geq(b.allocated_total - a.allocated_total, 100 * 1000);
  cr_assert_gt(b.mapped_bytes, 0);
  cr_assert_gt(b.pages_hugetlbfs + b.pages_thp + b.pages_4k, 0);
  for (int i = 0; i < 100; i++) tp_free(p[i]);
  tp_stats_get(&c);
  cr_assert_eq(c.live_objects, a.live_objects);
  cr_assert_eq(c.live_bytes, a.live_bytes);
  cr_assert_geq(c.peak_live_bytes, b.live_bytes - 0);
}

Test(stats, print_emits_text_and_parseable_json) {
  void *p = tp_malloc(123);
  char buf[4096] = {0};
  FILE *f = fmemopen(buf, sizeof buf, "w");
  tp_stats_print(f, 1);
  fclose(f);
  cr_assert_eq(buf[0], '{', "%s", buf);
  cr_assert(strstr(buf, "\"live_objects\":") && strstr(buf, "\"pages_hugetlbfs\":") &&
            strstr(buf, "\"density\":") && strstr(buf, "}\n"), "%s", buf);
  memset(buf, 0, sizeof buf);
  f = fmemopen(buf, sizeof buf, "w");
  tp_stats_print(f, 0);
  fclose(f);
  cr_assert(strstr(buf, "tlbpack:   allocated_total ") != NULL, "%s", buf);
  cr_assert(strstr(buf, "tlbpack:   fallbacks ") != NULL, "%s", buf);
  tp_free(p);
}

Test(stats, regions_file_lists_the_heap_with_page_sizes) {
  void *p = tp_malloc(3 << 20);
  memset(p, 1, 3 << 20);
  char path[] = "/tmp/tp_regions_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  cr_assert_eq(tp_regions_write(path), 0);
  FILE *f = fopen(path, "r");
  char line[256];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') continue;
    unsigned long s, e;
    char size[8], src[16];
    cr_assert_eq(sscanf(line, "%lx-%lx %7s %15s", &s, &e, size, src), 4, "bad line: %s", line);
    cr_assert_lt(s, e);
    cr_assert(!strcmp(size, "2m") || !strcmp(size, "4k"), "%s", line);
    if ((uintptr_t)p >= s && (uintptr_t)p + (3 << 20) <= e) found = 1;
  }
  fclose(f);
  unlink(path);
  cr_assert(found, "the block at %p is in no listed region", p);
  tp_free(p);
  cr_assert_eq(tp_regions_write("/nonexistent-dir/x"), -1);
}

struct node { struct node *next; long v; };
static const void *node_next(const void *n) { return ((const struct node *)n)->next; }
static void node_visit(const void *n, void *arg) { *(long *)arg += ((const struct node *)n)->v; }

Test(warm, warming_never_faults_and_chase_visits_every_node_once) {
  struct node *head = NULL;
  for (int i = 0; i < 1000; i++) {
    struct node *n = tp_malloc(sizeof *n);
    n->v = i;
    n->next = head;
    head = n;
  }
  tp_warm(head);
  tp_warm(NULL); /* a prefetch never faults */
  tp_warm_range(head, 0);
  tp_warm_range((void *)0x1000, (size_t)1 << 30); /* unmapped: still no fault */
  long sum = 0;
  cr_assert_eq(tp_chase_warm(head, node_next, node_visit, &sum, 8), 1000);
  cr_assert_eq(sum, 999 * 1000 / 2);
  sum = 0;
  cr_assert_eq(tp_chase_warm(head, node_next, node_visit, &sum, 0), 1000, "ahead 0 still walks");
  cr_assert_eq(sum, 999 * 1000 / 2);
  cr_assert_eq(tp_chase_warm(NULL, node_next, node_visit, &sum, 8), 0);
  while (head) {
    struct node *n = head->next;
    tp_free(head);
    head = n;
  }
}

/* The free hit has no bound check against a slab's object count: a block-aligned pointer into
 * the tail a slab leaves past its last object must find a 0 live byte, not the next record's
 * memory, and be reported like any pointer inside the slab. */
Test(free, a_block_aligned_pointer_past_a_slabs_last_object_aborts) {
  char *p = tp_malloc(48); /* 64 KiB / 48 leaves a 16-byte tail */
  tp_slab_t *s = _tp_slab_of(p);
  cr_assert_not_null(s);
  char *tail = (char *)s->base + (size_t)s->nobj * s->size;
  cr_assert_lt((uintptr_t)tail, s->base + (size_t)s->nslots * TP_SLOT, "the class leaves no tail: pick another");
  cr_assert_eq(_tp_slab_of(tail), s);
  expect_abort(call_free, tail, "tlbpack: invalid free of %p: points inside a block, not at its start", (void *)tail);
  tp_free(p);
}

/* A shrink into a smaller size class moves the block there (contents kept); within the class
 * it stays. */
Test(api, realloc_shrinking_into_a_smaller_class_moves_the_block) {
  char *p = tp_malloc(120);
  for (int i = 0; i < 120; i++) p[i] = (char)i;
  char *same = tp_realloc(p, 114);
  cr_assert_eq(same, p, "114 bytes fit class 128: in place");
  char *q = tp_realloc(p, 104);
  cr_assert_neq(q, p);
  cr_assert_eq(_tp_slab_of(q)->size, 112, "the block moved to class 112, not %u", _tp_slab_of(q)->size);
  for (int i = 0; i < 104; i++) cr_assert_eq(q[i], (char)i);
  tp_free(q);
}

/* A medium block that grows takes the free slots after it in place (runs.c, _tp_run_grow):
 * same address, contents kept, its slots counted; where the next slot is taken, it moves. */
Test(api, realloc_grows_a_medium_block_in_place_while_the_next_slots_are_free) {
  TP_NEEDS_NO_THREAD_GROUPS();
  size_t before = 0, after = 0;
  tp_stats_t st;
  const unsigned na = (unsigned)(((300 << 10) + TP_SLOT - 1) / TP_SLOT), nb = (unsigned)(((440 << 10) + TP_SLOT - 1) / TP_SLOT);
  char *p = tp_malloc(300 << 10); /* na slots */
  tp_slab_t *s = _tp_slab_of(p);
  cr_assert_eq(s->kind, TP_SLAB_MEDIUM);
  cr_assert_eq(s->nslots, na);
  cr_assert_leq(s->first_slot + nb + 1, TP_SLOTS, "the run starts at slot %u: no room after it to test", s->first_slot);
  tp_hpage_t *h = s->hp;
  for (unsigned i = s->first_slot + na; i < s->first_slot + nb + 1; i++)
    cr_assert_null(h->slot_slab[i], "slot %u after the new run is taken", i);
  memset(p, 7, 300 << 10);
  size_t slabs = _tp_groups[s->group]->slab_bytes;
  tp_stats_get(&st);
  before = st.live_bytes;
  char *q = tp_realloc(p, 440 << 10); /* nb slots */
  cr_assert_eq(q, p, "the block moved although the slots after it were free");
  cr_assert_eq(s->nslots, nb);
  cr_assert_eq(tp_malloc_usable_size(q), (size_t)nb * TP_SLOT);
  cr_assert_eq(_tp_slab_of(q + (430 << 10)), s, "the page map does not know the new slots");
  cr_assert_eq(_tp_groups[s->group]->slab_bytes, slabs + (nb - na) * TP_SLOT);
  tp_stats_get(&st);
  after = st.live_bytes;
  cr_assert_eq(after - before, (size_t)(nb - na) * TP_SLOT, "live bytes grew by %zu", after - before);
  for (size_t i = 0; i < (300 << 10); i += 4096) cr_assert_eq(q[i], 7);
  memset(q, 8, 440 << 10);
  /* The slot after it taken: the block moves, contents kept, and its old slots are freed. */
  void *next = (void *)(s->base + nb * TP_SLOT);
  enum { K = 64 };
  void *m[K];
  int nm = 0, blocked = 0;
  while (nm < K && !blocked) { /* 2-slot blocks until one lands right after the run */
    m[nm] = tp_malloc((64 << 10) + 1);
    blocked = _tp_slab_of(m[nm])->base == (uintptr_t)next;
    nm++;
  }
  cr_assert(blocked, "none of %d medium blocks landed right after the run", nm);
  char *r = tp_realloc(q, 600 << 10);
  cr_assert_neq(r, q, "grew over the block after it");
  for (size_t i = 0; i < (440 << 10); i += 4096) cr_assert_eq(r[i], 8);
  cr_assert_null(_tp_slab_of(q), "the old run's slots still map to a slab");
  tp_free(r);
  for (int i = 0; i < nm; i++) tp_free(m[i]);
}

/* A large block grown by realloc (in place or not) keeps its contents and its new size. */
Test(api, realloc_grows_a_large_block_keeping_its_contents) {
  size_t a = (size_t)3 << 20, b = (size_t)7 << 20;
  unsigned char *p = tp_malloc(a);
  for (size_t i = 0; i < a; i += 4096) p[i] = (unsigned char)(i >> 12);
  unsigned char *q = tp_realloc(p, b);
  cr_assert_not_null(q);
  cr_assert_geq(tp_malloc_usable_size(q), b);
  for (size_t i = 0; i < a; i += 4096) cr_assert_eq(q[i], (unsigned char)(i >> 12), "byte %zu changed", i);
  memset(q + a, 1, b - a);
  unsigned char *r = tp_realloc(q, (size_t)12 << 20);
  cr_assert_eq(r[b - 1], 1);
  cr_assert_eq(r[4096], 1);
  tp_free(r);
}
