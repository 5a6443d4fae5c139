/* Bad frees through the direct API (libtlbpack.a, tp_free): each must abort with SIGABRT, never
 * corrupt the heap or return. Good frees next to them must not abort (so the aborts mean
 * something). The program's own malloc stays glibc's: Criterion uses it. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "tlbpack.h"

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

Test(tp_free, double_free_of_a_small_block_aborts, .signal = SIGABRT) {
  void *p = tp_malloc(48);
  tp_free(p);
  bad_free(p);
}

Test(tp_free, double_free_of_a_large_block_aborts, .signal = SIGABRT) {
  void *p = tp_malloc((size_t)4 << 20);
  tp_free(p);
  bad_free(p);
}

Test(tp_free, double_free_after_other_allocations_aborts, .signal = SIGABRT) {
  void *p = tp_malloc(200), *keep[16];
  tp_free(p);
  for (int i = 0; i < 16; i++) keep[i] = tp_malloc(4000);  /* other classes: p stays free */
  bad_free(p);
  for (int i = 0; i < 16; i++) tp_free(keep[i]);
}

Test(tp_free, interior_pointer_of_a_small_block_aborts, .signal = SIGABRT) {
  char *p = tp_malloc(64);
  bad_free(p + 16);
}

Test(tp_free, pointer_one_byte_into_a_block_aborts, .signal = SIGABRT) {
  char *p = tp_malloc(256);
  bad_free(p + 1);
}

Test(tp_free, interior_pointer_of_a_huge_page_block_aborts, .signal = SIGABRT) {
  char *p = tp_malloc((size_t)3 << 20);
  bad_free(p + 4096);
}

Test(tp_free, interior_pointer_of_an_aligned_block_aborts, .signal = SIGABRT) {
  char *p = tp_aligned_alloc(4096, 8192);
  bad_free(p + 4096);
}

Test(tp_free, stack_pointer_aborts, .signal = SIGABRT) {
  char local[64];
  memset(local, 0, sizeof local);
  bad_free(local);
}

Test(tp_free, pointer_from_the_system_malloc_aborts, .signal = SIGABRT) {
  void *p = malloc(64);  /* glibc's: tlbpack never handed it out */
  bad_free(p);
}

Test(tp_free, pointer_into_a_foreign_mapping_aborts, .signal = SIGABRT) {
  char *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(m, MAP_FAILED);
  bad_free(m + 512);
}

Test(tp_free, wild_pointer_aborts, .signal = SIGABRT) {
  bad_free((void *)(uintptr_t)0x10);
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
