/* libFuzzer target: the regions and smaps readers. Byte 0 picks which; the rest is the file. */
#include "tlbsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  ts_config_t c;
  char err[512], path[64];
  ts_config_preset(&c, "skylake");
  ts_sim_t *s = ts_sim_new(&c, err, sizeof err);
  if (!s) abort();
  snprintf(path, sizeof path, "/tmp/tlbsim-fuzz-maps-%d", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  fwrite(data + 1, 1, size - 1, f);
  fclose(f);
  err[0] = 0;
  int rc = data[0] & 1 ? ts_sim_load_smaps(s, path, err, sizeof err)
                       : ts_sim_load_regions(s, path, err, sizeof err);
  if (rc && !err[0]) abort();
  for (uint64_t a = 0; a < 64; a++) ts_access(s, 0x7f0000000000ull + a * 0x1f0000ull, 64, 'R');
  ts_sim_stats(s);
  unlink(path);
  ts_sim_free(s);
  return 0;
}
