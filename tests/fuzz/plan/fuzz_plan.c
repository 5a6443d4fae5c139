/* Fuzz target for the placement plan parser and resolver (_tp_plan_parse, _tp_plan_resolve in
 * alloc/plan.c). The input is split at the first NUL byte: a plan, then a /proc/self/maps text.
 *
 * Invariants checked on every input (a violation aborts, which the fuzzer reports):
 *   - a parse either fails with a one-line message starting "line N: " or naming what is
 *     missing, or succeeds with a NUL-terminated program path and every count in its bounds,
 *     every site pointing at an existing group and module;
 *   - parsing is deterministic;
 *   - resolving never writes past the plan, and resolves a site only against a module that
 *     the maps text names.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP_PLAN_PARSER_ONLY
#include "../../../alloc/plan.c"

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_plan: invariant broken: " __VA_ARGS__); \
                                              fputc('\n', stderr); abort(); } } while (0)

static tp_plan_t a, b;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const char *nul = memchr(text, 0, size);
  size_t pl = nul ? (size_t)(nul - text) : size;
  const char *maps = nul ? nul + 1 : "";
  size_t ml = nul ? size - pl - 1 : 0;
  char ea[320] = "", eb[320] = "";
  int ra = _tp_plan_parse(&a, text, pl, ea, sizeof ea);
  int rb = _tp_plan_parse(&b, text, pl, eb, sizeof eb);
  CHECK(ra == rb && strcmp(ea, eb) == 0 && (ra != 0 || memcmp(&a, &b, sizeof a) == 0), "two parses differ");
  if (ra != 0) {
    CHECK(ea[0] != 0 && strchr(ea, '\n') == NULL, "error message empty or multi-line: '%s'", ea);
    return 0;
  }
  CHECK(memchr(a.program, 0, sizeof a.program) != NULL && a.program[0] == '/', "program path");
  CHECK(a.ngroups <= TP_PLAN_MAX_GROUPS && a.nsites <= TP_PLAN_MAX_SITES && a.nmodules <= TP_PLAN_MAX_MODULES, "counts");
  for (unsigned i = 0; i < a.nsites; i++)
    CHECK(a.sites[i].group < a.ngroups && a.sites[i].module < a.nmodules, "site %u out of range", i);
  char err[320];
  if (_tp_plan_resolve(&a, maps, ml, a.program, err, sizeof err) == 0)
    for (unsigned i = 0; i < a.nsites; i++)
      CHECK(a.sites[i].addr == 0 || a.base[a.sites[i].module] != 0, "site %u resolved without a module", i);
  return 0;
}

#ifdef TP_FUZZ_STANDALONE
/* Replays the files given as arguments (a corpus check without libFuzzer). */
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') continue;
    FILE *f = fopen(argv[i], "rb");
    if (!f) continue;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, n);
  }
  return 0;
}
#endif
