/* Bad frees through the direct API (libtlbpack.a, tp_free): each must abort with SIGABRT and
 * tlbpack's message naming the pointer, never corrupt the heap or return. Good frees next to
 * them must not abort (so the aborts mean something). The program's own malloc stays glibc's:
 * Criterion uses it. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "tlbpack.h"
#include "../alloc/expect_abort.h"

/* Through a volatile pointer, so the compiler neither warns about nor removes the bad frees. */
static void (*volatile bad_free)(void *) = tp_free;

Test(tp_free, frees_of_valid_blocks_and_null_do_not_abort) {
  size_t sizes[] = {0, 1, 16, 100, 4096, 65536, (size_t)2 << 20, (size_t)5 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    char *p = tp_malloc(sizes[i]);
    cr_assert_not_null(p, "tp_malloc(%zu)", sizes[i]);
    cr_assert(tp_owns(p), "tp_owns(tp_malloc(%zu))", sizes[i]);
    tp_free(p);
  }
  tp_free(NULL);
}

/* Each bad free runs in a child process (expect_abort.h): SIGABRT and tlbpack's one line. */
static void call_bad_free(void *p) { bad_free(p); }
#define EXPECT_INVALID(p) expect_abort(call_bad_free, (p), "tlbpack: invalid free of %p", (void *)(p))
#define EXPECT_DOUBLE(p) expect_abort(call_bad_free, (p), "tlbpack: double free of %p", (void *)(p))

Test(tp_free, double_free_of_a_small_block_aborts) {
  void *p = tp_malloc(48);
  tp_free(p);
  EXPECT_DOUBLE(p);
}

Test(tp_free, double_free_of_a_large_block_aborts) {
  void *p = tp_malloc((size_t)4 << 20);
  tp_free(p);
  EXPECT_DOUBLE(p);
}

Test(tp_free, double_free_after_other_allocations_aborts) {
  void *p = tp_malloc(200), *keep[16];
  tp_free(p);
  for (int i = 0; i < 16; i++) keep[i] = tp_malloc(4000);  /* other classes: p stays free */
  EXPECT_DOUBLE(p);
  for (int i = 0; i < 16; i++) tp_free(keep[i]);
}

Test(tp_free, interior_pointer_of_a_small_block_aborts) {
  char *p = tp_malloc(64);
  EXPECT_INVALID(p + 16);
}

Test(tp_free, pointer_one_byte_into_a_block_aborts) {
  char *p = tp_malloc(256);
  EXPECT_INVALID(p + 1);
}

Test(tp_free, interior_pointer_of_a_huge_page_block_aborts) {
  char *p = tp_malloc((size_t)3 << 20);
  EXPECT_INVALID(p + 4096);
}

Test(tp_free, interior_pointer_of_an_aligned_block_aborts) {
  char *p = tp_aligned_alloc(4096, 8192);
  EXPECT_INVALID(p + 4096);
}

Test(tp_free, stack_pointer_aborts) {
  char local[64];
  memset(local, 0, sizeof local);
  EXPECT_INVALID(local);
}

Test(tp_free, pointer_from_the_system_malloc_aborts) {
  void *p = malloc(64);  /* glibc's: tlbpack never handed it out */
  EXPECT_INVALID(p);
  free(p);
}

Test(tp_free, pointer_into_a_foreign_mapping_aborts) {
  char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(m, MAP_FAILED);
  EXPECT_INVALID(m + 512);
}

Test(tp_free, wild_pointer_aborts) {
  EXPECT_INVALID((void *)(uintptr_t)0x10);
}

Test(tp_stats, live_bytes_and_objects_return_to_the_baseline) {
  tp_stats_t a, b;
  tp_stats_get(&a);
  void *p[1000];
  for (int i = 0; i < 1000; i++) p[i] = tp_malloc((size_t)(i * 37) % 9000 + 1);
  tp_stats_get(&b);
  cr_assert_gt(b.live_objects, a.live_objects, "live_objects did not grow");
  for (int i = 0; i < 1000; i++) tp_free(p[i]);
  tp_stats_get(&b);
  cr_assert_eq(b.live_objects, a.live_objects, "live objects: %zu before, %zu after", a.live_objects, b.live_objects);
  cr_assert_eq(b.live_bytes, a.live_bytes, "live bytes: %zu before, %zu after", a.live_bytes, b.live_bytes);
}
