/* libFuzzer target: the --set parser and the geometry checks. The input is lines of
 * KEY=VALUE applied in order to a preset; a sim is built (when small) and run briefly. */
#include "tlbsim.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const cpus[] = {"skylake", "zen4", "core2", "goldencove", "custom"};
  ts_config_t c;
  char err[512], line[256];
  ts_config_preset(&c, cpus[size % 5]);
  size_t i = 0;
  while (i < size) {
    size_t n = 0;
    while (i < size && data[i] != '\n' && n < sizeof line - 1) line[n++] = (char)data[i++];
    while (i < size && data[i] != '\n') i++;
    i++;
    line[n] = 0;
    err[0] = 0;
    if (ts_config_set(&c, line, err, sizeof err) && !err[0]) abort();
  }
  /* Keep the fuzzer's memory bounded: the library allows up to 4M entries per array. */
  uint64_t total = 0;
  for (int t = 0; t < TS_NTLBS; t++) {
    total += c.tlb[t].main.entries;
    for (int p = 0; p < TS_NSIZES; p++) total += c.tlb[t].huge[p].entries;
  }
  for (int k = 0; k <= TS_MAX_LEVELS; k++) total += c.pwc[k] + c.hpwc[k];
  if (total > (1u << 16)) return 0;
  ts_sim_t *s = ts_sim_new(&c, err, sizeof err);
  if (!s) {
    if (!err[0]) abort();
    return 0;
  }
  for (uint64_t a = 0; a < 300; a++) {
    ts_access(s, a * 0x1234567ull, (uint32_t)(a * 37), "RWIP"[a & 3]);
    if (a % 50 == 0) ts_context_switch(s, a);
  }
  ts_sim_stats(s);
  ts_sim_free(s);
  return 0;
}
