/* Fuzz target for the TLBPACK_CONF parser (_tp_options_parse in alloc/options.c).
 *
 * Invariants checked on every input (a violation aborts, which the fuzzer reports):
 *   - every option ends inside its documented range (enums, retain_mb, sites, exclusive_kb,
 *     pool_max),
 *     regions_path is NUL-terminated;
 *   - the warnings written are exactly `returned count` lines, each starting with
 *     "tlbpack: TLBPACK_CONF: ", at most 400 characters, with no newline inside (one warning
 *     line per bad entry, whatever bytes the input holds);
 *   - at most one warning per comma-separated entry;
 *   - parsing is deterministic (same input, same options and warnings).
 *
 * Build: scripts/fuzz.sh (`make fuzz`) builds it with build.sh and runs it with the other
 * targets; seeds in corpus/. build.sh picks libFuzzer or, with any compiler,
 * -DTP_FUZZ_STANDALONE: a driver that replays the files and directories given as arguments
 * and then mutates them for -runs=N runs or -max_total_time=S seconds.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parser itself, compiled in: this file needs no library (scripts/fuzz.sh links the
 * simulator's, which has no allocator in it). Paths are relative to this file, so that the
 * simulator's own internal.h on the include path is not picked up by mistake. */
#include "../../../alloc/options.c"

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_conf: invariant broken: " __VA_ARGS__); \
                                              fputc('\n', stderr); abort(); } } while (0)

static size_t parse_capture(const char *conf, tp_options_t *o, int *warnings, char **out) {
  size_t len = 0;
  FILE *w = open_memstream(out, &len);
  CHECK(w != NULL, "open_memstream failed");
  *warnings = _tp_options_parse(o, conf, w);
  fclose(w);
  return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *conf = malloc(size + 1);
  if (!conf) return 0;
  memcpy(conf, data, size);
  conf[size] = 0;  /* the environment cannot carry NUL bytes: the parser sees up to the first */
  size_t entries = 1;
  for (const char *c = conf; *c; c++) entries += *c == ',';

  tp_options_t a, b;
  int wa, wb;
  char *oa = NULL, *ob = NULL;
  size_t la = parse_capture(conf, &a, &wa, &oa);
  size_t lb = parse_capture(conf, &b, &wb, &ob);
  CHECK(wa == wb && la == lb && memcmp(oa, ob, la) == 0 && memcmp(&a, &b, sizeof a) == 0,
        "two parses of the same input differ");

  CHECK(a.stats >= TP_STATS_OFF && a.stats <= TP_STATS_JSON, "stats = %d", a.stats);
  CHECK(a.pool >= TP_POOL_AUTO && a.pool <= TP_POOL_4K, "pool = %d", a.pool);
  CHECK(a.group >= TP_GROUP_SITE && a.group <= TP_GROUP_NONE, "group = %d", a.group);
  CHECK(a.numa >= TP_NUMA_DEFAULT && a.numa <= TP_NUMA_OFF, "numa = %d", a.numa);
  CHECK(a.verbose == 0 || a.verbose == 1, "verbose = %d", a.verbose);
  CHECK(a.retain_bytes % (1u << 20) == 0 && a.retain_bytes <= ((size_t)1 << 40), "retain_bytes = %zu", a.retain_bytes);
  CHECK(a.site_groups >= 1 && a.site_groups <= 960, "site_groups = %u", a.site_groups);
  CHECK(a.exclusive_bytes % 1024 == 0 && a.exclusive_bytes <= ((size_t)1 << 32), "exclusive_bytes = %zu", a.exclusive_bytes);
  CHECK(a.pool_max == SIZE_MAX || a.pool_max <= ((size_t)1 << 20), "pool_max = %zu", a.pool_max);
  CHECK(memchr(a.regions_path, 0, sizeof a.regions_path) != NULL, "regions_path not terminated");

  CHECK(wa >= 0 && (size_t)wa <= entries, "%d warnings for %zu entries", wa, entries);
  int lines = 0;
  static const char prefix[] = "tlbpack: TLBPACK_CONF: ";
  for (size_t i = 0; i < la;) {
    const char *line = oa + i, *nl = memchr(line, '\n', la - i);
    CHECK(nl != NULL, "warning output does not end with a newline");
    size_t n = (size_t)(nl - line);
    CHECK(n >= sizeof prefix - 1 && memcmp(line, prefix, sizeof prefix - 1) == 0,
          "warning line %d does not start with '%s' (a newline from the input split it?): '%.*s'",
          lines + 1, prefix, (int)(n > 200 ? 200 : n), line);
    CHECK(n <= 400, "warning line %d is %zu characters long", lines + 1, n);
    lines++;
    i += n + 1;
  }
  CHECK(lines == wa, "%d warning lines written, %d warnings returned", lines, wa);
  free(oa);
  free(ob);
  free(conf);
  return 0;
}

#ifdef TP_FUZZ_STANDALONE
#include <dirent.h>
#include <time.h>
/* usage: fuzz_conf [-runs=N] [-max_total_time=S] [-seed=S] FILE|DIR... : each file once, then
 * random mutations of them (byte flips, insertions of separators and known keys, truncations,
 * doubling) until N runs or S seconds (default 100000 runs). Other -flags are ignored. */
static char bufs[64][4096];
static size_t lens[64];
static int n;

static void load(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(d)) != NULL)
      if (e->d_name[0] != '.') { snprintf(sub, sizeof sub, "%s/%s", path, e->d_name); load(sub); }
    closedir(d);
    return;
  }
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "fuzz_conf: cannot open %s\n", path); exit(2); }
  if (n < 64) { lens[n] = fread(bufs[n], 1, sizeof bufs[n], f); LLVMFuzzerTestOneInput((uint8_t *)bufs[n], lens[n]); n++; }
  fclose(f);
}
static const char *tokens[] = {"stats", "pool", "group", "numa", "verbose", "regions", "retain_mb",
                               "sites", "exclusive_kb", "pool_max", ":", ",", "1", "0", "json", "auto", "4k", "thp",
                               "hugetlbfs", "site", "thread", "none", "99999999999999999999", "-1", "\n"};

int main(int argc, char **argv) {
  long runs = -1, max_time = -1;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "-runs=", 6) == 0) { runs = atol(argv[i] + 6); continue; }
    if (strncmp(argv[i], "-max_total_time=", 16) == 0) { max_time = atol(argv[i] + 16); continue; }
    if (strncmp(argv[i], "-seed=", 6) == 0) { seed = strtoull(argv[i] + 6, NULL, 10); continue; }
    if (argv[i][0] == '-') continue;  /* other libFuzzer flags: ignored */
    load(argv[i]);
  }
  if (runs < 0 && max_time < 0) runs = 100000;
  time_t end = max_time >= 0 ? time(NULL) + max_time : 0;
  if (n == 0) { strcpy(bufs[0], "stats:1,pool:auto"); lens[0] = strlen(bufs[0]); n = 1; }
  char m[8192];
  long r = 0;
  for (; runs < 0 || r < runs; r++) {
    if (max_time >= 0 && (r & 1023) == 0 && time(NULL) >= end) break;
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    int src = (int)((seed >> 33) % (unsigned)n);
    size_t len = lens[src];
    memcpy(m, bufs[src], len);
    for (int k = 0; k < 1 + (int)((seed >> 20) % 4); k++) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      size_t pos = len ? (size_t)(seed >> 24) % len : 0;
      switch ((seed >> 60) % 4) {
      case 0: if (len) m[pos] = (char)(seed >> 8); break;
      case 1: { const char *t = tokens[(seed >> 8) % (sizeof tokens / sizeof *tokens)];
                size_t tl = strlen(t);
                if (len + tl < sizeof m) { memmove(m + pos + tl, m + pos, len - pos); memcpy(m + pos, t, tl); len += tl; }
                break; }
      case 2: len = pos; break;
      default: if (len * 2 < sizeof m) { memcpy(m + len, m, len); len *= 2; } break;
      }
    }
    LLVMFuzzerTestOneInput((uint8_t *)m, len);
  }
  printf("fuzz_conf: %d inputs replayed, %ld mutations run, no invariant broken\n", n, r);
  return 0;
}
#endif
