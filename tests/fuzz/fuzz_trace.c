/* libFuzzer target: the trace readers. Byte 0 picks the format (auto, text, lackey, bin) and
 * the preset; the rest is the trace. Any input must end in success or a clean error message. */
#define _GNU_SOURCE
#include "tlbsim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  static const char *const cpus[] = {"skylake", "zen4", "core2", "custom"};
  ts_config_t c;
  char err[512];
  ts_config_preset(&c, cpus[(data[0] >> 2) & 3]);
  if (data[0] & 0x10) ts_config_set(&c, "asid.mode=asid", err, sizeof err);
  if (data[0] & 0x20) ts_config_set(&c, "nested=4k", err, sizeof err);
  if (data[0] & 0x40) ts_config_set(&c, "levels=5", err, sizeof err);
  ts_sim_t *s = ts_sim_new(&c, err, sizeof err);
  if (!s) abort();
  int fd = memfd_create("trace", 0);
  if (fd < 0) abort();
  if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) abort();
  lseek(fd, 0, SEEK_SET);
  err[0] = 0;
  int rc = ts_run_fd(s, fd, (ts_format_t)(data[0] & 3), NULL, err, sizeof err);
  if (rc && !err[0]) abort();   /* an error always says what was wrong */
  const ts_stats_t *st = ts_sim_stats(s);
  if (st->l1_hits + st->l1_misses + st->l1_bypasses < st->accesses) abort();   /* every page touched is counted once */
  close(fd);
  ts_sim_free(s);
  return 0;
}
