/* The TLB sweep's verdict on a point (bench/harness_sweep.c, tb_sweep_verdict): tlbpack's
 * promise, part by part, on hand-made points. */
#include <criterion/criterion.h>
#include <string.h>

#include "harness.h"

/* tlbpack, tlbpack-plan, jemalloc, jemalloc-thp */
static tb_sweep_point_t point(size_t heap_kb, size_t hot, long floor, long tp, long plan, double tp_kb, double je_kb) {
  tb_sweep_point_t p;
  memset(&p, 0, sizeof p);
  p.heap_kb = heap_kb;
  for (int a = 0; a < 4; a++) p.cell[a].ok = 1, p.cell[a].hot_bytes = hot, p.cell[a].floor = floor;
  p.cell[0].entries = tp, p.cell[0].mem_kb = tp_kb;
  p.cell[1].entries = plan, p.cell[1].mem_kb = tp_kb;
  p.cell[2].entries = 3000, p.cell[2].mem_kb = je_kb;
  p.cell[3].entries = 500, p.cell[3].mem_kb = je_kb;
  return p;
}

Test(sweep_verdict, a_point_within_every_bound_is_kept) {
  tb_sweep_point_t p = point(32768, 12 << 20, 6, 11, 6, 40000, 40000);
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 0, "%s", why);
}

Test(sweep_verdict, entries_over_one_and_a_half_floor_plus_two_miss) {
  tb_sweep_point_t p = point(32768, 12 << 20, 6, 12, 6, 40000, 40000);
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 1);
  cr_assert(strstr(why, "entries 12 > 1.5 x 6 + 2"), "%s", why);
}

Test(sweep_verdict, entries_are_not_held_to_the_floor_under_4_mib_hot) {
  tb_sweep_point_t p = point(8192, (4 << 20) - 1, 2, 900, 900, 9000, 9000);
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 0, "%s", why);
}

Test(sweep_verdict, a_plan_is_held_to_1_1_floor) {
  tb_sweep_point_t p = point(65536, 24 << 20, 12, 14, 15, 80000, 80000);
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 1); /* 1.1 x 12 = 13.2: 14 at most */
  cr_assert(strstr(why, "plan entries 15 > 1.1 x 12"), "%s", why);
  p.cell[1].entries = 14;
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 0, "%s", why);
}

Test(sweep_verdict, memory_over_1_1_jemalloc_misses) {
  tb_sweep_point_t p = point(32768, 12 << 20, 6, 8, 6, 44100, 40000);
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 1);
  cr_assert(strstr(why, "memory 43.1 MiB > 1.1 x jemalloc's 39.1"), "%s", why);
}

Test(sweep_verdict, a_huge_page_under_1_mib_live_misses) {
  tb_sweep_point_t p = point(512, 200 << 10, 1, 1, 1, 3000, 4000);
  p.cell[0].huge = 1;
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 1);
  cr_assert(strstr(why, "huge pages under 1 MiB live"), "%s", why);
  p.cell[0].huge = 0;
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 0, "%s", why);
}

Test(sweep_verdict, an_allocator_that_did_not_run_is_not_judged) {
  tb_sweep_point_t p = point(32768, 12 << 20, 6, 8, 6, 44100, 40000);
  p.cell[2].ok = 0; /* no jemalloc: no memory bound */
  p.cell[1].ok = 0;
  char why[256];
  cr_assert_eq(tb_sweep_verdict(&p, why, sizeof why), 0, "%s", why);
}
