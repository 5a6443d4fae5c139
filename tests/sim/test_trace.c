/* Trace readers: text, lackey, binary; detection; errors with line numbers. */
#include "helpers.h"

Test(trace, text_records_and_context_switches_are_counted) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  const char t[] = "# a comment\nR 0x1000 8\nW 2000\n\nI 400000 4\nP 0x5000\r\nC 2\nC 0x3\nR 1000 1\n";
  ts_format_t got;
  const char *p = tmpfile_with(t, sizeof t - 1);
  FILE *f = fopen(p, "r");
  cr_assert_eq(ts_run_fd(s, fileno(f), TS_FMT_AUTO, &got, err, sizeof err), 0, "%s", err);
  fclose(f);
  unlink(p);
  cr_expect_eq(got, TS_FMT_TEXT);
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->reads, 2);
  cr_expect_eq(st->writes, 1);
  cr_expect_eq(st->ifetches, 1);
  cr_expect_eq(st->prefetches, 1);
  cr_expect_eq(st->context_switches, 2);
  ts_sim_free(s);
}

Test(trace, lackey_output_is_read_as_it_is) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  const char t[] = "==12345== Lackey, an example Valgrind tool\n"
                   "==12345== Command: ./a.out\n"
                   "I  04016f80,3\n"
                   " S 1ffefffd68,8\n"
                   " L 04222cac,4\n"
                   " M 0421f7c0,8\n"
                   "I  04016f83,5\n"
                   "==12345== \n";
  ts_format_t got;
  const char *p = tmpfile_with(t, sizeof t - 1);
  FILE *f = fopen(p, "r");
  cr_assert_eq(ts_run_fd(s, fileno(f), TS_FMT_AUTO, &got, err, sizeof err), 0, "%s", err);
  fclose(f);
  unlink(p);
  cr_expect_eq(got, TS_FMT_LACKEY);
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->ifetches, 2);
  cr_expect_eq(st->reads, 1);
  cr_expect_eq(st->writes, 2);
  cr_expect_eq(st->l1i_misses, 1);
  ts_sim_free(s);
}

Test(trace, binary_records_match_the_text_ones) {
  char path[] = "/tmp/tlbsim-bin-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "wb");
  ts_bin_write_header(f);
  for (int i = 0; i < 100000; i++) ts_bin_write(f, 0x10000000ull + (uint64_t)(i % 300) * 4096, 8, i % 4 ? 'R' : 'W');
  ts_bin_write(f, 7, 0, 'C');
  ts_bin_write(f, 0x1000, 8, 'P');
  fclose(f);
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  ts_format_t got;
  fd = open(path, 0);
  cr_assert_eq(ts_run_fd(s, fd, TS_FMT_AUTO, &got, err, sizeof err), 0, "%s", err);
  close(fd);
  unlink(path);
  cr_expect_eq(got, TS_FMT_BIN);
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->accesses, 100000);
  cr_expect_eq(st->writes, 25000);
  cr_expect_eq(st->distinct_pages[TS_PS_4K], 301);   /* 300, and the prefetched page in space 7 */
  cr_expect_eq(st->walks, 300);
  cr_expect_eq(st->context_switches, 1);
  cr_expect_eq(st->prefetch_walks, 1);
  ts_sim_free(s);
}

static void bad(const char *text, size_t len, ts_format_t fmt, const char *want) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_expect_eq(run_str(s, text, len, fmt, err, sizeof err), -1, "accepted");
  cr_expect(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
  ts_sim_free(s);
}
#define BAD(t, fmt, want) bad(t, sizeof t - 1, fmt, want)

Test(trace, malformed_text_line_names_its_number_and_what_was_expected) {
  BAD("R 1000\nW 2000 8\nX 3000\n", TS_FMT_TEXT, "line 3: expected R|W|I|P <hex address> [size], C <asid> or B, got 'X 3000'");
  BAD("R 1000\nR\n", TS_FMT_TEXT, "line 2: expected");
  BAD("R 10000000000000000\n", TS_FMT_TEXT, "line 1: expected");   /* 17 hex digits */
  BAD("R 1000 8 9\n", TS_FMT_TEXT, "line 1: expected");
  BAD("R 1000 99999999999\n", TS_FMT_TEXT, "line 1: expected");
  BAD("R 1000 -1\n", TS_FMT_TEXT, "line 1: expected");
  BAD("C\n", TS_FMT_TEXT, "line 1: expected");
  BAD("C 18446744073709551616\n", TS_FMT_TEXT, "line 1: expected");   /* 2^64 */
  BAD("R 1000 4294967296\n", TS_FMT_TEXT, "line 1: expected");        /* 2^32 */
  BAD("R 0xg\n", TS_FMT_TEXT, "line 1: expected");
  BAD("R 1000\nR 2\0\n", TS_FMT_TEXT, "line 2: expected");
}

Test(trace, malformed_lackey_line_names_its_number) {
  BAD("==1== hi\n L 04222cac,4\n L 04222cac\n", TS_FMT_LACKEY, "line 3: expected a lackey --trace-mem=yes record");
  BAD(" X 04222cac,4\n", TS_FMT_LACKEY, "line 1: expected a lackey");
  BAD("I 04222cac,x\n", TS_FMT_LACKEY, "line 1: expected a lackey");
}

Test(trace, malformed_binary_records_are_named) {
  BAD("TLBPTRC\0\2\0\0\0\20\0\0\0", TS_FMT_BIN, "binary header: expected magic TLBPTRC, version 1");
  BAD("TLBPTRC", TS_FMT_BIN, "binary header: expected 16 bytes");
  BAD("TLBPTRC\0\1\0\0\0\20\0\0\0" "\0\020\0\0\0\0\0\0\010\0\0\0R\0\0\0" "\0\020\0\0\0\0\0\0\010\0\0\0Z\0\0\0",
      TS_FMT_BIN, "record 2: op 0x5a: expected R, W, I, P, C or B");
  BAD("TLBPTRC\0\1\0\0\0\20\0\0\0" "\0\020\0\0\0\0\0\0\010\0\0\0R\0\0\0" "\0\020\0", TS_FMT_BIN,
      "record 2: truncated (expected 16 bytes, got 3)");
}

Test(trace, lines_across_buffer_refills_are_parsed_whole) {
  /* 3 MiB of text: lines straddle the 1 MiB reader buffer */
  size_t n = 200000, cap = n * 24, len = 0;
  char *t = malloc(cap);
  for (size_t i = 0; i < n; i++) len += (size_t)sprintf(t + len, "R %llx 8\n", (unsigned long long)(0x7f0000000000ull + (i % 1000) * 4096));
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_assert_eq(run_str(s, t, len, TS_FMT_AUTO, err, sizeof err), 0, "%s", err);
  cr_expect_eq(ts_sim_stats(s)->accesses, n);
  cr_expect_eq(ts_sim_stats(s)->distinct_pages[TS_PS_4K], 1000);
  free(t);
  ts_sim_free(s);
}

/* ---- B records: the start of the measured region ---- */

static const char marked[] = "R 1000\nR 2000\nR 3000\nB\nR 1000\nR 4000\n";

Test(marker, a_b_record_starts_the_measured_region_under_warmup_marker) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  ts_sim_set_warmup(s, TS_WARMUP_MARKER, err, sizeof err);
  cr_expect(ts_sim_warming(s));
  cr_assert_eq(run_str(s, marked, strlen(marked), TS_FMT_TEXT, err, sizeof err), 0, "%s", err);
  const ts_stats_t *st = ts_sim_stats(s);
  cr_expect_eq(st->warmup_accesses, 3);
  cr_expect_eq(st->accesses, 2);
  cr_expect_eq(st->l1_misses, 1);
  cr_expect_eq(st->distinct_pages[TS_PS_4K], 4);
  cr_expect_eq(ts_sim_warming(s), 0);
  ts_sim_free(s);
}

Test(marker, b_records_are_ignored_without_warmup_marker) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_assert_eq(run_str(s, marked, strlen(marked), TS_FMT_TEXT, err, sizeof err), 0, "%s", err);
  cr_expect_eq(ts_sim_stats(s)->accesses, 5);
  cr_expect_eq(ts_sim_stats(s)->warmup_accesses, 0);
  ts_sim_free(s);
}

Test(marker, binary_b_records_and_counted_warm_ups_split_a_chunk_exactly) {
  /* the binary reader ends a counted warm-up inside a chunk, at the exact record */
  char path[] = "/tmp/tlbsim-marker-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  ts_bin_write_header(f);
  for (int i = 0; i < 1000; i++) ts_bin_write(f, 0x10000 + (uint64_t)(i % 10) * 4096, 8, 'R');
  ts_bin_write(f, 0, 0, 'B');
  for (int i = 0; i < 1000; i++) ts_bin_write(f, 0x10000 + (uint64_t)(i % 20) * 4096, 8, 'W');
  fclose(f);
  uint64_t warms[] = {TS_WARMUP_MARKER, 1000, 1010, 0};
  uint64_t want_acc[] = {1000, 1000, 990, 2000}, want_miss[] = {10, 10, 10, 20};
  for (int k = 0; k < 4; k++) {
    ts_sim_t *s = mk("skylake", NULL);
    char err[256] = "";
    ts_sim_set_warmup(s, warms[k], err, sizeof err);
    fd = open(path, O_RDONLY);
    cr_assert_eq(ts_run_fd(s, fd, TS_FMT_AUTO, NULL, err, sizeof err), 0, "%s", err);
    close(fd);
    const ts_stats_t *st = ts_sim_stats(s);
    cr_expect_eq(st->accesses, want_acc[k], "warm-up %d: %llu accesses", k, (unsigned long long)st->accesses);
    cr_expect_eq(st->warmup_accesses, 2000 - want_acc[k]);
    cr_expect_eq(st->l1_misses, want_miss[k], "warm-up %d: %llu misses", k, (unsigned long long)st->l1_misses);
    ts_sim_free(s);
  }
  unlink(path);
}

Test(marker, a_b_line_with_operands_is_an_error) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  cr_expect_eq(run_str(s, "R 1\nB 12\n", 9, TS_FMT_TEXT, err, sizeof err), -1);
  cr_expect(strstr(err, "line 2: expected R|W|I|P <hex address> [size], C <asid> or B"), "%s", err);
  ts_sim_free(s);
}
