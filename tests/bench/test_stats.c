/* The summary maths: medians, spread, ratios (NaN = not measured). */
#include <criterion/criterion.h>
#include <math.h>

#include "harness.h"

Test(median, of_an_odd_count_is_the_middle_value) {
  double v[] = {9, 1, 5};
  cr_assert_float_eq(tb_median(v, 3), 5, 0);
}

Test(median, of_an_even_count_is_the_mean_of_the_middle_two) {
  double v[] = {4, 1, 3, 2};
  cr_assert_float_eq(tb_median(v, 4), 2.5, 1e-12);
}

Test(median, skips_unmeasured_values) {
  double v[] = {NAN, 10, NAN, 20, 30};
  cr_assert_float_eq(tb_median(v, 5), 20, 0);
}

Test(median, of_nothing_is_nan) {
  double v[] = {NAN};
  cr_assert(isnan(tb_median(v, 1)));
  cr_assert(isnan(tb_median(v, 0)));
}

Test(median, leaves_the_input_in_its_order) {
  double v[] = {3, 1, 2};
  tb_median(v, 3);
  cr_assert_float_eq(v[0], 3, 0);
  cr_assert_float_eq(v[1], 1, 0);
}

Test(spread, is_range_over_median_in_percent) {
  double v[] = {90, 100, 110};
  cr_assert_float_eq(tb_spread_pct(v, 3), 20.0, 1e-9);
  cr_assert_float_eq(tb_min(v, 3), 90, 0);
  cr_assert_float_eq(tb_max(v, 3), 110, 0);
}

Test(spread, of_a_single_run_is_zero) {
  double v[] = {42};
  cr_assert_float_eq(tb_spread_pct(v, 1), 0, 0);
}

Test(ratio, divides_and_guards_zero_and_nan) {
  cr_assert_float_eq(tb_ratio(30, 3), 10, 1e-12);
  cr_assert(isnan(tb_ratio(1, 0)));
  cr_assert(isnan(tb_ratio(NAN, 1)));
  cr_assert(isnan(tb_ratio(1, NAN)));
}

Test(summary, medians_and_jemalloc_ratios_come_from_the_runs) {
  tb_alloc_t je = {.name = "jemalloc"}, tp = {.name = "tlbpack"};
  tb_workload_t w = {.name = "records"};
  tb_cell_t c[2];
  tb_cell_init(&c[0], &w, &je);
  tb_cell_init(&c[1], &w, &tp);
  const char *je_runs[] = {"RESULT workload=records ns_per_op=100 peak_rss_kb=1000 hugetlb_kb=0 hot_entries=4000 hot_floor=5",
                           "RESULT workload=records ns_per_op=140 peak_rss_kb=1000 hugetlb_kb=0 hot_entries=4000 hot_floor=5",
                           "RESULT workload=records ns_per_op=120 peak_rss_kb=1200 hugetlb_kb=0 hot_entries=4000 hot_floor=5"};
  const char *tp_runs[] = {"RESULT workload=records ns_per_op=60 peak_rss_kb=100 hugetlb_kb=1024 hot_entries=6 hot_floor=5",
                           "RESULT workload=records ns_per_op=50 peak_rss_kb=100 hugetlb_kb=1024 hot_entries=6 hot_floor=5"};
  tb_kv_t kv;
  const char *why;
  for (int i = 0; i < 3; i++) { cr_assert_eq(tb_parse_result(je_runs[i], &kv, &why), 0); tb_cell_add_run(&c[0], &kv); }
  for (int i = 0; i < 2; i++) { cr_assert_eq(tb_parse_result(tp_runs[i], &kv, &why), 0); tb_cell_add_run(&c[1], &kv); }
  tb_summarize(c, 2);
  cr_assert_float_eq(c[0].ns_med, 120, 0);
  cr_assert_float_eq(c[1].ns_med, 55, 1e-9);
  cr_assert_float_eq(c[1].rss_med, 1124, 0, "hugetlbfs pages count toward peak RSS");
  cr_assert_eq(tb_peer(c, 2, &c[1], "jemalloc"), &c[0]);
  cr_assert_null(tb_peer(c, 2, &c[1], "mimalloc"));
  cr_assert_float_eq(tb_ratio(c[1].ns_med, c[0].ns_med), 55.0 / 120.0, 1e-12);
  cr_assert_float_eq(tb_ratio(c[0].hot_entries, c[1].hot_entries), 4000.0 / 6.0, 1e-9);
}
