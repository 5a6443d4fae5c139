/* Out of memory is an error the library returns, never an abort: every allocation of the
 * simulator is made to fail in turn (the _ts_alloc_fail_in hook), and each is reported. */
#include "helpers.h"

/* Builds a sim (zen4: indexed fully associative arrays; nested: both walk-cache sets), loads
 * ranges, and runs accesses over many pages and address spaces, so that every growing table
 * grows several times. Returns 1 when all of it ran, 0 when a failure was reported (checked). */
static int run_once(unsigned long fail_at, uint64_t *accesses) {
  ts_config_t c;
  char err[256] = "";
  ts_config_preset(&c, "zen4");
  cr_assert_eq(ts_config_set(&c, "nested=4k", err, sizeof err), 0);
  _ts_alloc_fail_in = fail_at;
  ts_sim_t *s = ts_sim_new(&c, err, sizeof err);
  if (!s) {
    cr_expect(strstr(err, "out of memory"), "ts_sim_new: '%s'", err);
    _ts_alloc_fail_in = 0;
    return 0;
  }
  for (uint64_t r = 0; r < 40; r++) {
    uint64_t base = 0x100000000000ull + (r << 30);
    if (ts_sim_add_range(s, base, base + (2u << 20), r & 1 ? TS_PS_2M : TS_PS_4K, 0, err, sizeof err)) {
      cr_expect(strstr(err, "out of memory"), "ts_sim_add_range: '%s'", err);
      cr_expect_null(ts_sim_error(s), "a failed range load leaves the simulator usable");
      ts_sim_free(s);
      _ts_alloc_fail_in = 0;
      return 0;
    }
  }
  int done = 1;
  uint64_t i;
  for (i = 0; i < 60000; i++) {
    uint64_t va = (i % 7 == 0 ? 0x100000000000ull + ((i % 40) << 30) : 0x7f0000000000ull) + ((i * 2654435761u) % 40000) * 4096;
    int rc = i % 500 == 0 ? ts_context_switch(s, i / 500) : ts_access(s, va, 8, i & 1 ? 'W' : 'R');
    if (rc) {
      const char *why = ts_sim_error(s);
      cr_assert_not_null(why, "access %llu refused without a reason", (unsigned long long)i);
      cr_expect(strstr(why, "out of memory for"), "%s", why);
      const ts_stats_t *st = ts_sim_stats(s);
      uint64_t before = st->accesses, walks = st->walks;
      cr_expect_eq(ts_access(s, 0x5000, 8, 'R'), -1, "a failed simulator refuses later accesses");
      cr_expect_eq(ts_context_switch(s, 99999), -1);
      st = ts_sim_stats(s);
      cr_expect_eq(st->accesses, before, "nothing is counted after the failure");
      cr_expect_eq(st->walks, walks);
      done = 0;
      break;
    }
  }
  *accesses = i;
  char *buf;
  size_t len;
  FILE *m = open_memstream(&buf, &len);
  ts_print_json(m, s, "x");   /* printing a failed simulator works */
  fclose(m);
  cr_expect(len > 100);
  free(buf);
  ts_sim_free(s);
  _ts_alloc_fail_in = 0;
  return done;
}

Test(oom, every_allocation_failure_is_returned_as_an_error) {
  unsigned long n;
  int during_run = 0;
  uint64_t acc = 0;
  for (n = 1; n < 100000; n++) {
    if (run_once(n, &acc)) break;
    if (acc > 0) during_run++;
  }
  cr_log_info("%lu allocation points, %d of them during the run", n - 1, during_run);
  cr_expect(n > 20, "only %lu allocations seen", n);
  cr_expect(during_run >= 5, "only %d failures during a run (the footprint tables grow)", during_run);
}

Test(oom, a_trace_run_out_of_memory_returns_the_reason) {
  ts_sim_t *s = mk("skylake", NULL);
  char err[256] = "";
  /* the reader's buffer */
  _ts_alloc_fail_in = 1;
  cr_expect_eq(run_str(s, "R 1000\n", 7, TS_FMT_TEXT, err, sizeof err), -1);
  cr_expect(strstr(err, "out of memory"), "%s", err);
  cr_expect_null(ts_sim_error(s), "the buffer failed, not the simulator");
  _ts_alloc_fail_in = 0;
  /* the footprint, mid-trace: the second allocation after the buffer is a growth of a table */
  char *text = malloc(64 * 200000), *p = text;
  for (int i = 0; i < 200000; i++) p += sprintf(p, "R %llx\n", 0x10000000000ull + (unsigned long long)i * (1u << 21));
  _ts_alloc_fail_in = 6;
  cr_expect_eq(run_str(s, text, (size_t)(p - text), TS_FMT_TEXT, err, sizeof err), -1);
  _ts_alloc_fail_in = 0;
  cr_expect(strstr(err, "out of memory for the footprint"), "%s", err);
  cr_expect(!strncmp(err, "line ", 5), "names the line: %s", err);
  free(text);
  ts_sim_free(s);
}

Test(oom, ts_sim_new_reports_out_of_memory) {
  ts_config_t c;
  char err[256] = "";
  ts_config_preset(&c, "skylake");
  _ts_alloc_fail_in = 1;
  cr_expect_null(ts_sim_new(&c, err, sizeof err));
  _ts_alloc_fail_in = 0;
  cr_expect(strstr(err, "out of memory"), "%s", err);
}
