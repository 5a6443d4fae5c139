/* The writers: CSV fields and rows, the summary CSV, the Markdown table and the targets. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static char *capture(void (*fn)(FILE *, void *), void *arg) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  fn(f, arg);
  fclose(f);
  return buf;
}
static void field(FILE *f, void *s) { tb_csv_field(f, s); }

Test(csv, plain_field_is_written_as_is) {
  char *s = capture(field, "jemalloc-thp");
  cr_assert_str_eq(s, "jemalloc-thp");
  free(s);
}

Test(csv, field_with_comma_or_quote_is_quoted_and_quotes_doubled) {
  char *s = capture(field, "a,b");
  cr_assert_str_eq(s, "\"a,b\"");
  free(s);
  s = capture(field, "say \"hi\"");
  cr_assert_str_eq(s, "\"say \"\"hi\"\"\"");
  free(s);
  s = capture(field, "two\nlines");
  cr_assert_str_eq(s, "\"two\nlines\"");
  free(s);
}

Test(csv, null_field_is_empty) {
  char *s = capture(field, NULL);
  cr_assert_str_eq(s, "");
  free(s);
}

static void row3(FILE *f, void *arg) {
  const char *r[] = {"x", "1,5", ""};
  tb_csv_row(f, r, 3);
}
Test(csv, row_joins_fields_with_commas_and_ends_with_newline) {
  char *s = capture(row3, NULL);
  cr_assert_str_eq(s, "x,\"1,5\",\n");
  free(s);
}

/* counts the fields of each CSV line, honouring quotes; returns lines, -1 if fields differ */
static int csv_consistent(const char *s, int *fields) {
  int lines = 0, n = 1, inq = 0, want = -1;
  for (const char *p = s; *p; p++) {
    if (*p == '"') inq = !inq;
    else if (*p == ',' && !inq) n++;
    else if (*p == '\n' && !inq) {
      if (want < 0) want = n;
      else if (n != want) return -1;
      lines++;
      n = 1;
    }
  }
  *fields = want;
  return lines;
}

static tb_alloc_t je = {.name = "jemalloc"}, jt = {.name = "jemalloc-thp"}, tp = {.name = "tlbpack"};
static tb_workload_t wl = {.name = "records"};
static tb_cell_t cells[3];

static void fill(void) {
  const tb_alloc_t *as[] = {&je, &jt, &tp};
  double l2[] = {400, 50, 10}, refs[] = {1200, 100, 40}, entries[] = {5000, 300, 6};
  for (int i = 0; i < 3; i++) {
    tb_cell_init(&cells[i], &wl, as[i]);
    char line[256];
    snprintf(line, sizeof line, "RESULT workload=records ns_per_op=%d peak_rss_kb=1000 hugetlb_kb=0 "
             "hot_entries=%.0f hot_floor=5 tlb_source=pagemap malloc_from=x,y", 100 - 10 * i, entries[i]);
    tb_kv_t kv;
    const char *why;
    cr_assert_eq(tb_parse_result(line, &kv, &why), 0);
    tb_cell_add_run(&cells[i], &kv);
    tb_sim_t *s = &cells[i].sim;
    s->ok = 1; s->accesses = 1000000; s->l1_misses = l2[i] * 3000; s->l2_misses = l2[i] * 1000;
    s->walks = l2[i] * 1000; s->walk_levels = s->walks * (i == 2 ? 3 : 4); s->walk_mem_refs = refs[i] * 1000;
    s->distinct_4k = s->distinct_2m = s->pt_pages = NAN;
  }
  tb_summarize(cells, 3);
}

static void summary(FILE *f, void *arg) { tb_write_summary_csv(f, cells, 3); }
Test(summary_csv, has_a_header_and_one_row_per_cell_all_the_same_width) {
  fill();
  char *s = capture(summary, NULL);
  int fields = 0;
  cr_assert_eq(csv_consistent(s, &fields), 4, "header + 3 rows of equal width:\n%s", s);
  cr_assert_gt(fields, 30);
  cr_assert(strstr(s, "\"x,y\""), "a comma in a value is quoted");
  cr_assert(strstr(s, "records,tlbpack,"));
  free(s);
}

Test(summary_csv, savings_are_jemalloc_over_the_allocator) {
  fill();
  char *s = capture(summary, NULL);
  /* tlbpack: entries 5000/6 = 833.33, L2 misses 400/10 = 40, walk refs 1200/40 = 30 */
  char *row = strstr(s, "records,tlbpack,");
  cr_assert_not_null(row);
  cr_assert(strstr(row, "833.33,40.00,40.00,"), "row: %s", row);
  cr_assert(strstr(row, ",30.00,"), "row: %s", row);
  free(s);
}

static void md(FILE *f, void *arg) { tb_write_markdown(f, cells, 3); }
Test(markdown, has_one_table_row_per_cell) {
  fill();
  char *s = capture(md, NULL);
  int rows = 0;
  for (char *p = s; (p = strstr(p, "\n| records |")); p++) rows++;
  cr_assert_eq(rows, 3, "%s", s);
  cr_assert(strstr(s, "| 6 (5) |"), "entries with the floor: %s", s);
  free(s);
}

/* The per-run table: a workload that counts CPU time (ops_per_cpu_s) and one that does not
 * (throughput from ns_per_op), two runs each under jemalloc and tlbpack. */
static tb_workload_t wl_cpu = {.name = "churn-sizes-mt"}, wl_q = {.name = "sqlite-py", .unit = "query"};
static tb_cell_t rcells[5];
static void run_line(tb_cell_t *c, const char *line) {
  tb_kv_t kv;
  const char *why;
  cr_assert_eq(tb_parse_result(line, &kv, &why), 0, "%s", why);
  tb_cell_add_run(c, &kv);
}
static void rfill(void) {
  tb_cell_init(&rcells[0], &wl_cpu, &je);
  tb_cell_init(&rcells[1], &wl_cpu, &tp);
  tb_cell_init(&rcells[2], &wl_q, &je);
  tb_cell_init(&rcells[3], &wl_q, &tp);
  tb_cell_init(&rcells[4], &wl, &tp); /* records: not listed, not shown */
  run_line(&rcells[0], "RESULT workload=churn-sizes-mt ns_per_op=250 ops_per_cpu_s=4000000 peak_rss_kb=20480 hugetlb_kb=0");
  run_line(&rcells[0], "RESULT workload=churn-sizes-mt ns_per_op=200 ops_per_cpu_s=5000000 peak_rss_kb=18432 hugetlb_kb=0");
  run_line(&rcells[1], "RESULT workload=churn-sizes-mt ns_per_op=100 ops_per_cpu_s=10000000 peak_rss_kb=10240 hugetlb_kb=20480");
  run_line(&rcells[1], "RESULT workload=churn-sizes-mt ns_per_op=125 ops_per_cpu_s=8000000 peak_rss_kb=12288 hugetlb_kb=20480");
  rcells[1].failures = 1;
  run_line(&rcells[2], "RESULT workload=sqlite-py ns_per_op=5000 peak_rss_kb=102400 hugetlb_kb=0");
  run_line(&rcells[2], "RESULT workload=sqlite-py ns_per_op=4000 peak_rss_kb=104448 hugetlb_kb=0");
  run_line(&rcells[3], "RESULT workload=sqlite-py ns_per_op=2500 peak_rss_kb=2048 hugetlb_kb=98304");
  run_line(&rcells[3], "RESULT workload=sqlite-py ns_per_op=4000 peak_rss_kb=2048 hugetlb_kb=100352");
  run_line(&rcells[4], "RESULT workload=records ns_per_op=90 peak_rss_kb=1000 hugetlb_kb=0");
  tb_summarize(rcells, 5);
}
static void runs_table(FILE *f, void *arg) { tb_write_runs(f, rcells, 5, arg); }
Test(runs_table, shows_every_run_with_medians_and_ratios_to_jemalloc) {
  rfill();
  char *s = capture(runs_table, "churn-sizes-mt,sqlite-py");
  /* CPU rates in millions: medians 4.5 and 9.0 (x je 2.00); memory 20 / 18 MiB and 30 / 32 MiB */
  cr_assert(strstr(s, "| churn-sizes-mt | jemalloc | M memory ops / CPU s | 4.00, 5.00 | 4.50 | 1.00 | 20.0, 18.0 | 19.0 | 1.00 |"), "%s", s);
  cr_assert(strstr(s, "| churn-sizes-mt | tlbpack | M memory ops / CPU s | 10.00, 8.00 (1 failed) | 9.00 | 2.00 | 30.0, 32.0 | 31.0 | 1.63 |"), "%s", s);
  /* queries per second from ns_per_op: 200 k and 250 k for jemalloc, 400 k and 250 k for tlbpack */
  cr_assert(strstr(s, "| sqlite-py | jemalloc | k query / s | 200.0, 250.0 | 225.0 | 1.00 | 100.0, 102.0 | 101.0 | 1.00 |"), "%s", s);
  cr_assert(strstr(s, "| sqlite-py | tlbpack | k query / s | 400.0, 250.0 | 325.0 | 1.44 | 98.0, 100.0 | 99.0 | 0.98 |"), "%s", s);
  cr_assert_null(strstr(s, "| records |"), "a workload not listed is left out: %s", s);
  free(s);
  s = capture(runs_table, "records-big");
  cr_assert_str_eq(s, "", "nothing when no listed workload ran");
  free(s);
}

static void targets(FILE *f, void *arg) { tb_write_targets(f, cells, 3); }
Test(targets, are_judged_against_jemalloc_and_jemalloc_thp) {
  fill();
  char *s = capture(targets, NULL);
  cr_assert(strstr(s, "[met] records: L2 TLB misses, jemalloc / tlbpack = 40.00"), "%s", s);
  cr_assert(strstr(s, "[met] records: walk levels per walk (tlbpack) = 3.00"), "%s", s);
  cr_assert(strstr(s, "[met] records: L2 TLB misses, jemalloc-thp / tlbpack = 5.00"), "%s", s);
  cr_assert(strstr(s, "[met] records: TLB entries, jemalloc-thp / tlbpack = 50.00"), "%s", s);
  cr_assert(strstr(s, "[n/a] records: ns per lookup, tlbpack / ideal layout"), "no ideal cell: %s", s);
  free(s);
}

Test(targets, a_missed_target_says_missed) {
  fill();
  cells[2].sim.l2_misses = 200 * 1000;  /* only 2x fewer than jemalloc */
  char *s = capture(targets, NULL);
  cr_assert(strstr(s, "[MISSED] records: L2 TLB misses, jemalloc / tlbpack = 2.00"), "%s", s);
  free(s);
}

Test(targets, without_a_tlbpack_cell_say_so) {
  fill();
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  tb_write_targets(f, cells, 2);
  fclose(f);
  cr_assert(strstr(buf, "no tlbpack cell ran"));
  free(buf);
}

/* Programs in general: two prog-* rows under tlbpack, jemalloc and tcmalloc. tlbpack / jemalloc
 * time 0.5 and 1.2 (geomean 0.775, the slowest 1.2), tcmalloc / jemalloc 0.8 and 0.9; memory
 * 0.9 and 1.6 (geomean 1.2). */
static tb_workload_t wp1 = {.name = "prog-a"}, wp2 = {.name = "prog-b"};
static tb_alloc_t tc = {.name = "tcmalloc"};
static tb_cell_t pcells[6];
/* n cells of the given workloads and allocators, one run each of those ns, kB and hugetlb kB. */
static void fill_runs(tb_cell_t *cells, int n, const tb_workload_t *const *ws, const tb_alloc_t *const *as,
                      const double *ns, const double *kb, const double *huge) {
  for (int i = 0; i < n; i++) {
    tb_cell_init(&cells[i], ws[i], as[i]);
    char line[256];
    snprintf(line, sizeof line, "RESULT workload=%s ns_per_op=%.0f peak_rss_kb=%.0f hugetlb_kb=%.0f malloc_from=x",
             ws[i]->name, ns[i], kb[i], huge[i]);
    tb_kv_t kv;
    const char *why;
    cr_assert_eq(tb_parse_result(line, &kv, &why), 0);
    tb_cell_add_run(&cells[i], &kv);
  }
  tb_summarize(cells, (size_t)n);
}
static void fill_programs(void) {
  const tb_workload_t *ws[] = {&wp1, &wp1, &wp1, &wp2, &wp2, &wp2};
  const tb_alloc_t *as[] = {&je, &tp, &tc, &je, &tp, &tc};
  double ns[] = {1000, 500, 800, 1000, 1200, 900}, kb[] = {1000, 900, 1000, 1000, 1000, 1000},
         huge[] = {0, 0, 0, 0, 600, 0};
  fill_runs(pcells, 6, ws, as, ns, kb, huge);
}
static void ptargets(FILE *f, void *arg) { tb_write_targets(f, pcells, 6); }
Test(targets, programs_are_judged_by_geomeans_against_jemalloc_and_tcmalloc) {
  fill_programs();
  char *s = capture(ptargets, NULL);
  cr_assert(strstr(s, "[met] programs: time geomean over 2 programs, tlbpack / jemalloc = 0.77"), "%s", s);
  /* tlbpack / tcmalloc: sqrt(0.5 * 1.2) / sqrt(0.8 * 0.9) = 0.913 */
  cr_assert(strstr(s, "[met] programs: time geomean over 2 programs, tlbpack / tcmalloc = 0.91"), "%s", s);
  cr_assert(strstr(s, "[MISSED] programs: slowest program (prog-b), tlbpack / jemalloc = 1.20 (target <= 1.10)"), "%s", s);
  cr_assert(strstr(s, "[MISSED] programs: peak RSS + hugetlb geomean over 2 programs, tlbpack / jemalloc = 1.20"),
            "hugetlb pages count: %s", s);
  free(s);
}

static void ptargets4(FILE *f, void *cells4) { tb_write_targets(f, cells4, 4); }
Test(targets, programs_without_tcmalloc_say_so) {
  fill_programs();
  tb_cell_t two[4] = {pcells[0], pcells[1], pcells[3], pcells[4]};
  char *buf = capture(ptargets4, two);
  cr_assert(strstr(buf, "[n/a] programs: time geomean, tlbpack / tcmalloc: tcmalloc did not run every program"), "%s", buf);
  cr_assert(strstr(buf, "time geomean over 2 programs, tlbpack / jemalloc = 0.77"), "%s", buf);
  free(buf);
}

/* Two programs under jemalloc and tlbpack, tlbpack's ns and kB given (jemalloc's: 1000, 1000). */
static tb_cell_t ncells[4];
static void fill_near(const double tp_ns[2], const double tp_kb[2]) {
  const tb_workload_t *ws[] = {&wp1, &wp1, &wp2, &wp2};
  const tb_alloc_t *as[] = {&je, &tp, &je, &tp};
  double ns[] = {1000, tp_ns[0], 1000, tp_ns[1]}, kb[] = {1000, tp_kb[0], 1000, tp_kb[1]}, huge[4] = {0};
  fill_runs(ncells, 4, ws, as, ns, kb, huge);
}
static void ntargets(FILE *f, void *arg) { tb_write_targets(f, ncells, 4); }
Test(targets, a_value_that_rounds_to_its_limit_shows_the_decimals_that_decide) {
  /* memory geomean sqrt(1.000 * 1.004) = 1.002: missed, though it reads 1.00 at two decimals;
   * time geomean sqrt(0.998 * 1.000) = 0.999: met; the slowest program 1.000: its limit is 1.10 */
  fill_near((double[]){998, 1000}, (double[]){1000, 1004});
  char *s = capture(ntargets, NULL);
  cr_assert(strstr(s, "[MISSED] programs: peak RSS + hugetlb geomean over 2 programs, tlbpack / jemalloc = 1.002 (target <= 1.00)"), "%s", s);
  cr_assert(strstr(s, "[met] programs: time geomean over 2 programs, tlbpack / jemalloc = 0.999 (target <= 1.00)"), "%s", s);
  cr_assert(strstr(s, "tlbpack / jemalloc = 1.00 (target <= 1.10)"), "a value away from its limit keeps two decimals: %s", s);
  free(s);
  /* exactly the limit: two decimals, met */
  fill_near((double[]){1000, 1000}, (double[]){1000, 1000});
  s = capture(ntargets, NULL);
  cr_assert(strstr(s, "[met] programs: peak RSS + hugetlb geomean over 2 programs, tlbpack / jemalloc = 1.00 (target <= 1.00)"), "%s", s);
  free(s);
}

Test(format, nan_prints_as_na) {
  char b[16];
  cr_assert_str_eq(tb_fmt(b, sizeof b, NAN, 2), "n/a");
  cr_assert_str_eq(tb_fmt(b, sizeof b, 1.234, 1), "1.2");
}

Test(spec, allocators_and_workloads_are_found_by_name) {
  cr_assert_not_null(tb_alloc_find("jemalloc-thp"));
  cr_assert_not_null(tb_alloc_find("tlbpack-none"));
  cr_assert_null(tb_alloc_find("jemallox"));
  cr_assert_not_null(tb_workload_find("records"));
  cr_assert_null(tb_workload_find("nope"));
}

Test(spec, a_missing_library_is_reported_with_a_reason) {
  cr_assert_eq(tb_alloc_override("tcmalloc=/nonexistent/libtcmalloc.so"), 0);
  char buf[512];
  const char *why = NULL;
  cr_assert_null(tb_alloc_lib(tb_alloc_find("tcmalloc"), "/tmp", buf, sizeof buf, &why));
  cr_assert_not_null(why);
  cr_assert_null(tb_alloc_lib(tb_alloc_find("tlbpack"), "/nonexistent-build", buf, sizeof buf, &why));
  cr_assert(strstr(why, "libtlbpack.so"));
  cr_assert_not_null(tb_alloc_lib(tb_alloc_find("glibc"), "/tmp", buf, sizeof buf, &why));
  cr_assert_str_eq(buf, "");
  cr_assert_eq(tb_alloc_override("no-equals-sign"), -1);
}
