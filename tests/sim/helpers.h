/* Shared helpers for the simulator's unit tests. */
#ifndef TS_TEST_HELPERS_H
#define TS_TEST_HELPERS_H
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include "internal.h"

/* A preset with overrides; fails the test on any bad key. */
static inline ts_sim_t *mk(const char *cpu, const char *const *sets) {
  ts_config_t c;
  char err[256] = "";
  cr_assert_eq(ts_config_preset(&c, cpu), 0, "preset %s", cpu);
  for (; sets && *sets; sets++) cr_assert_eq(ts_config_set(&c, *sets, err, sizeof err), 0, "%s: %s", *sets, err);
  ts_sim_t *s = ts_sim_new(&c, err, sizeof err);
  cr_assert_not_null(s, "ts_sim_new: %s", err);
  return s;
}

/* Writes text to a temporary file and returns its path (static buffer). */
static inline const char *tmpfile_with(const char *text, size_t len) {
  static char path[64];
  strcpy(path, "/tmp/tlbsim-test-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, text, len), (ssize_t)len);
  close(fd);
  return path;
}

/* Runs a trace given as a string through s; returns ts_run_fd's result. */
static inline int run_str(ts_sim_t *s, const char *text, size_t len, ts_format_t fmt, char *err, size_t errlen) {
  const char *p = tmpfile_with(text, len);
  FILE *f = fopen(p, "r");
  int rc = ts_run_fd(s, fileno(f), fmt, NULL, err, errlen);
  fclose(f);
  unlink(p);
  return rc;
}
#endif
