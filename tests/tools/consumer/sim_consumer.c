/* Built against the installed tlbpack::tlbsim: simulates a few accesses. */
#include <stdio.h>
#include <tlbsim.h>

int main(void) {
  ts_config_t cfg;
  char err[256];
  if (ts_config_preset(&cfg, "zen4") != 0) return fputs("no zen4 preset\n", stderr), 1;
  ts_sim_t *s = ts_sim_new(&cfg, err, sizeof err);
  if (!s) return fprintf(stderr, "ts_sim_new: %s\n", err), 1;
  for (unsigned long i = 0; i < 64; i++) ts_access(s, 0x10000000ul + i * 4096, 8, 'R');
  const ts_stats_t *st = ts_sim_stats(s);
  printf("sim consumer ok: accesses=%llu walks=%llu\n", (unsigned long long)st->accesses,
         (unsigned long long)st->walks);
  int bad = st->accesses != 64;
  ts_sim_free(s);
  return bad;
}
