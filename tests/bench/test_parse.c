/* Parsing what workloads and tlbsim print. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness.h"

/* one line per workload, as each prints it (taken from real runs) */
static const char *lines[] = {
  "RESULT workload=records ns_per_op=58.25 op=lookup ops=2000000 records=60000 build_ms=71.3 cold_bytes=52448098 layout=malloc peak_rss_kb=77876 hugetlb_kb=0 hot_bytes=15351410 hot_pages_4k=17698 hot_entries=17698 hot_huge=0 hot_huge_hugetlb=0 hot_huge_thp=0 hot_floor=8 tlb_source=pagemap trace_records=0 trace_truncated=0 malloc_from=libc.so.6",
  "RESULT workload=index ns_per_op=1440.58 op=mixed-op ops=400000 keys=100130 load_ms=89.7 peak_rss_kb=28596 hugetlb_kb=0 hot_bytes=18434300 hot_pages_4k=5105 hot_entries=5105 hot_huge=0 hot_huge_hugetlb=0 hot_huge_thp=0 hot_floor=9 tlb_source=pagemap trace_records=0 trace_truncated=0 malloc_from=libjemalloc.so.2",
  "RESULT workload=chase-warm ns_per_op=12.68 op=step ops=2000000 nodes=100000 warm_ahead=8 warm_method=prefetch build_ms=52.6 peak_rss_kb=70588 hugetlb_kb=0 hot_bytes=2400000 hot_pages_4k=16350 hot_entries=16350 hot_huge=0 hot_huge_hugetlb=0 hot_huge_thp=0 hot_floor=2 tlb_source=pagemap trace_records=0 trace_truncated=0 malloc_from=libc.so.6",
  "RESULT workload=lru ns_per_op=595.36 op=request ops=1000000 capacity=50000 hit_rate=0.395 peak_rss_kb=26980 hugetlb_kb=0 hot_bytes=18845968 hot_pages_4k=5188 hot_entries=5188 hot_huge=0 hot_huge_hugetlb=0 hot_huge_thp=0 hot_floor=9 tlb_source=pagemap trace_records=0 trace_truncated=0 malloc_from=libc.so.6",
  "RESULT workload=strings ns_per_op=870.91 op=line ops=200000 input_mb=21.1 peak_rss_kb=25560 hugetlb_kb=0 hot_bytes=583853 hot_pages_4k=465 hot_entries=465 hot_huge=0 hot_huge_hugetlb=0 hot_huge_thp=0 hot_floor=1 tlb_source=pagemap trace_records=0 trace_truncated=0 malloc_from=libc.so.6",
  "RESULT workload=sqlite ns_per_op=4842.09 op=row ops=20000 wall_ms=96.8 traced=no tlb_source=unavailable:foreign-program peak_rss_kb=10436 hugetlb_kb=0 trace_records=0 trace_truncated=0 malloc_from=libc.so.6",
  "RESULT workload=malloc-st ns_per_op=37.75 op=malloc+free ops=4000000 threads=1 live=10000 peak_rss_kb=4328 hugetlb_kb=0 trace_records=0 trace_truncated=0 malloc_from=libc.so.6",
};

Test(result_line, every_workloads_line_parses_with_its_time_and_rss) {
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    tb_kv_t kv;
    const char *why = NULL;
    cr_assert_eq(tb_parse_result(lines[i], &kv, &why), 0, "line %zu: %s", i, why);
    double ns, rss;
    cr_assert_eq(tb_kv_num(&kv, "ns_per_op", &ns), 0);
    cr_assert_eq(tb_kv_num(&kv, "peak_rss_kb", &rss), 0);
    cr_assert_gt(ns, 0);
    cr_assert_gt(rss, 0);
    cr_assert_not_null(tb_kv_get(&kv, "malloc_from"));
  }
}

Test(result_line, hot_set_fields_are_read_as_numbers) {
  tb_kv_t kv;
  const char *why;
  cr_assert_eq(tb_parse_result(lines[0], &kv, &why), 0);
  double e, f;
  cr_assert_eq(tb_kv_num(&kv, "hot_entries", &e), 0);
  cr_assert_eq(tb_kv_num(&kv, "hot_floor", &f), 0);
  cr_assert_float_eq(e, 17698, 0.5);
  cr_assert_float_eq(f, 8, 0.5);
  cr_assert_str_eq(tb_kv_get(&kv, "tlb_source"), "pagemap");
}

Test(result_line, is_found_after_other_stdout_lines) {
  tb_kv_t kv;
  const char *why;
  cr_assert_eq(tb_parse_result("warming up\nnoise=1\nRESULT workload=x ns_per_op=3\n", &kv, &why), 0);
  cr_assert_str_eq(tb_kv_get(&kv, "workload"), "x");
}

Test(result_line, missing_line_is_an_error_with_a_reason) {
  tb_kv_t kv;
  const char *why = NULL;
  cr_assert_eq(tb_parse_result("nothing here\n", &kv, &why), -1);
  cr_assert_not_null(why);
  cr_assert(strstr(why, "RESULT"));
}

Test(result_line, token_without_equals_is_rejected) {
  tb_kv_t kv;
  const char *why = NULL;
  cr_assert_eq(tb_parse_result("RESULT workload=x garbage\n", &kv, &why), -1);
  cr_assert(strstr(why, "key=value"));
}

Test(result_line, line_without_workload_is_rejected) {
  tb_kv_t kv;
  const char *why = NULL;
  cr_assert_eq(tb_parse_result("RESULT ns_per_op=1\n", &kv, &why), -1);
}

Test(result_line, non_numeric_value_is_not_a_number) {
  tb_kv_t kv;
  const char *why;
  double v = 7;
  cr_assert_eq(tb_parse_result("RESULT workload=x ns_per_op=fast hot_entries=-1\n", &kv, &why), 0);
  cr_assert_eq(tb_kv_num(&kv, "ns_per_op", &v), -1);
  cr_assert_eq(tb_kv_num(&kv, "absent", &v), -1);
  cr_assert_float_eq(v, 7, 0);
}

/* ---- tlbsim JSON --------------------------------------------------------------------------- */
static const char *sim_json =
  "{\"cpu\": \"zen4\", \"accesses\": 1000000, \"l1_hits\": 900000, \"l1_misses\": 100000,\n"
  " \"l2_hits\": 60000, \"l2_misses\": 40000, \"walks\": 40000, \"walk_levels\": 160000,\n"
  " \"walk_mem_refs\": 52000, \"pwc_hits\": 108000, \"prefetch_walks\": 0,\n"
  " \"distinct_pages_4k\": 9000, \"distinct_pages_2m\": 40, \"distinct_pages_1g\": 1,\n"
  " \"est_walk_cycles\": 1.5e6, \"page_table_pages\": {\"pml4\": 1, \"pdpt\": 1, \"pd\": 2, \"pt\": 40}}";

Test(tlbsim_json, fields_are_read_and_per_level_counts_summed) {
  tb_sim_t s;
  const char *why = NULL;
  cr_assert_eq(tb_sim_from_json(sim_json, &s, &why), 0, "%s", why);
  cr_assert(s.ok);
  cr_assert_float_eq(s.accesses, 1e6, 0.5);
  cr_assert_float_eq(s.l2_misses, 40000, 0.5);
  cr_assert_float_eq(s.walk_mem_refs, 52000, 0.5);
  cr_assert_float_eq(s.est_walk_cycles, 1.5e6, 0.5);
  cr_assert_float_eq(s.pt_pages, 44, 0.5);
  cr_assert_float_eq(tb_per_k(s.l2_misses, s.accesses), 40.0, 1e-9);
}

Test(tlbsim_json, key_inside_a_string_value_is_not_a_match) {
  double v = 0;
  cr_assert_eq(tb_json_num("{\"note\": \"walks\", \"walks\": 5}", "walks", &v), 0);
  cr_assert_float_eq(v, 5, 0);
}

Test(tlbsim_json, missing_required_field_is_named) {
  tb_sim_t s;
  const char *why = NULL;
  cr_assert_eq(tb_sim_from_json("{\"accesses\": 10, \"l1_misses\": 1}", &s, &why), -1);
  cr_assert_str_eq(why, "l2_misses");
  cr_assert_eq(s.ok, 0);
}

Test(tlbsim_json, optional_fields_missing_become_nan) {
  tb_sim_t s;
  const char *why;
  cr_assert_eq(tb_sim_from_json("{\"accesses\":10,\"l1_misses\":1,\"l2_misses\":1,\"walks\":1,"
                                "\"walk_levels\":4,\"walk_mem_refs\":2}", &s, &why), 0);
  cr_assert(isnan(s.pt_pages));
  cr_assert(isnan(s.distinct_2m));
}

Test(tlbsim_json, garbage_is_rejected) {
  double v;
  cr_assert_eq(tb_json_num("not json at all", "walks", &v), -1);
  cr_assert_eq(tb_json_num("{\"walks\": }", "walks", &v), -1);
  cr_assert_eq(tb_json_num("{\"walks", "walks", &v), -1);
}

Test(tlbsim_json, per_k_of_zero_accesses_is_nan) {
  cr_assert(isnan(tb_per_k(5, 0)));
  cr_assert(isnan(tb_per_k(NAN, 10)));
}
