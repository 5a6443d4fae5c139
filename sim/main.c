/* tlbsim: the command line over libtlbsim.
 *
 *   tlbsim [options] [TRACE|-]
 *   tlbsim [options] --compare A [options for A] B [options for B]
 *
 * Options before the first trace apply to every run; in --compare mode options after a trace
 * apply to that trace only (its --regions/--smaps, or --asid-mode to cost both modes on one
 * trace). Exit status: 0, 2 for any bad input (usage, --set, a file, a trace line), 1 when the
 * simulator runs out of memory.
 */
#include "tlbsim.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXOPTS 256

typedef struct opt_s { const char *name, *val; } opt_t;
typedef struct side_s {
  const char *trace, *label;
  opt_t opt[MAXOPTS];
  int n;
} side_t;

static void usage(FILE *out) {
  fprintf(out,
      "usage: tlbsim [options] [TRACE|-]\n"
      "       tlbsim [options] --compare A [options for A] B [options for B]\n"
      "options:\n"
      "  --cpu NAME          a preset (listed at the end; default skylake)\n"
      "  --set KEY=VALUE     override one parameter (keys below)\n"
      "  --page-size 4k|2m|1g  page size of every address outside --regions/--smaps ranges\n"
      "  --regions FILE      page size per range, tlbpack's regions file\n"
      "  --smaps FILE        page size per range from a copy of /proc/PID/smaps\n"
      "  --levels 4|5        paging levels\n"
      "  --nested off|4k|2m|1g  virtualized: 2-D walk over host pages of that size (off: native)\n"
      "  --asid-mode flush|asid  context switches flush the TLBs, or tag entries with ASIDs\n"
      "  --warmup N|marker   measure from the N+1-th access, or from the trace's first B record:\n"
      "                      the warm-up fills the TLBs and walk caches; JSON warmup_accesses\n"
      "  --format auto|text|lackey|bin\n"
      "  --label NAME        name of the run in the report\n"
      "  --json              one JSON object on stdout\n"
      "  --compare           two traces side by side with ratios B/A\n"
      "trace: text lines 'R|W|I|P <hex addr> [size]' and 'C <asid>', Valgrind lackey\n"
      "  --trace-mem=yes output, or the binary format; '-' or nothing reads stdin.\n"
      "--set keys (e.g. --set l1d.entries=64 --set l2.entries=0 --set pwc.entries=0):\n%s",
      ts_config_keys());
  fprintf(out, "--cpu presets:");
  for (const char *const *p = ts_presets(); *p; p++) fprintf(out, " %s", *p);
  fputc('\n', out);
}

static int die(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "tlbsim: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 2;
}

static const char *const with_value[] = {"--cpu", "--set", "--page-size", "--regions", "--smaps",
                                         "--levels", "--nested", "--asid-mode", "--format",
                                         "--label", "--warmup", NULL};

/* Configures, loads ranges and runs one side. Returns the sim, or NULL (message printed) with
 * the exit status in *status. */
static ts_sim_t *run_side(const side_t *common, const side_t *side, bool compare, int *status) {
  char err[512];
  const char *cpu = "skylake", *fmt = "auto", *warmup = NULL;
  const side_t *parts[2] = {common, side};
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < parts[p]->n; i++) {
      if (!strcmp(parts[p]->opt[i].name, "--cpu")) cpu = parts[p]->opt[i].val;
      if (!strcmp(parts[p]->opt[i].name, "--format")) fmt = parts[p]->opt[i].val;
      if (!strcmp(parts[p]->opt[i].name, "--warmup")) warmup = parts[p]->opt[i].val;
    }
  *status = 2;
  ts_config_t cfg;
  if (ts_config_preset(&cfg, cpu)) {
    char names[160] = "";
    for (const char *const *p = ts_presets(); *p; p++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", *p);
    die("--cpu %s: expected one of %s", cpu, names);
    return NULL;
  }
  int f = ts_format_parse(fmt);
  if (f < 0) { die("--format %s: expected auto, text, lackey or bin%s", fmt, ""); return NULL; }
  uint64_t warm = 0;
  if (warmup && !strcmp(warmup, "marker")) {
    warm = TS_WARMUP_MARKER;
  } else if (warmup) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(warmup, &end, 10);
    if (!*warmup || *warmup == '-' || *warmup == '+' || *end || errno || x >= TS_WARMUP_MARKER) {
      die("--warmup %s: expected a number of accesses or 'marker'%s", warmup, "");
      return NULL;
    }
    warm = x;
  }
  static const struct { const char *opt, *key; } map[] = {
      {"--page-size", "page_size"}, {"--levels", "levels"}, {"--nested", "nested"},
      {"--asid-mode", "asid.mode"}};
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < parts[p]->n; i++) {
      const opt_t *o = &parts[p]->opt[i];
      char kv[600];
      if (!strcmp(o->name, "--set")) {
        snprintf(kv, sizeof kv, "%s", o->val);
      } else {
        kv[0] = 0;
        for (size_t m = 0; m < sizeof map / sizeof map[0]; m++)
          if (!strcmp(o->name, map[m].opt)) snprintf(kv, sizeof kv, "%s=%s", map[m].key, o->val);
        if (!kv[0]) continue;
      }
      if (ts_config_set(&cfg, kv, err, sizeof err)) {
        if (strcmp(o->name, "--set")) {   /* name the option the user typed */
          const char *colon = strchr(err, ':');
          die("%s: %s", o->name, colon ? colon + 2 : err);
        } else {
          die("%s%s", err, "");
        }
        return NULL;
      }
    }
  ts_sim_t *s = ts_sim_new(&cfg, err, sizeof err);
  if (!s) { die("%s%s", err, ""); return NULL; }
  ts_sim_set_warmup(s, warm, NULL, 0);   /* cannot fail: nothing has run yet */
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < parts[p]->n; i++) {
      const opt_t *o = &parts[p]->opt[i];
      int rc = 0;
      if (!strcmp(o->name, "--regions")) rc = ts_sim_load_regions(s, o->val, err, sizeof err);
      else if (!strcmp(o->name, "--smaps")) rc = ts_sim_load_smaps(s, o->val, err, sizeof err);
      if (rc) { die("%s%s", err, ""); ts_sim_free(s); return NULL; }
    }
  const char *path = side->trace ? side->trace : "-";
  int fd = strcmp(path, "-") ? open(path, O_RDONLY) : 0;
  if (fd < 0) {
    die("%s: cannot open: %s", path, strerror(errno));
    ts_sim_free(s);
    return NULL;
  }
  ts_format_t got;
  int rc = ts_run_fd(s, fd, (ts_format_t)f, &got, err, sizeof err);
  if (fd) close(fd);
  if (rc) {
    if (compare) die("%s: %s", path, err);
    else die("%s%s", err, "");
    if (ts_sim_error(s)) *status = 1;
    ts_sim_free(s);
    return NULL;
  }
  if (ts_sim_warming(s)) {   /* the measured region never began: nothing would be reported */
    const ts_stats_t *st = ts_sim_stats(s);
    char why[160];
    if (warm == TS_WARMUP_MARKER)
      snprintf(why, sizeof why, "the trace has no B record (the measured region's start)");
    else
      snprintf(why, sizeof why, "the trace has only %llu accesses",
               (unsigned long long)(st->reads + st->writes + st->ifetches));
    fprintf(stderr, "tlbsim: %s%s--warmup %s: %s; nothing was measured\n", compare ? path : "",
            compare ? ": " : "", warmup, why);
    ts_sim_free(s);
    return NULL;
  }
  *status = 0;
  return s;
}

int main(int argc, char **argv) {
  static side_t sides[3];   /* [0] common, [1] A, [2] B */
  bool json = false, compare = false;
  int cur = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--compare")) { compare = true; continue; }
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
    if (!strcmp(a, "--json")) { json = true; continue; }
    if (!strcmp(a, "--compare")) continue;
    if (a[0] == '-' && a[1] == '-') {
      char name[32];
      const char *val = NULL, *eq = strchr(a, '=');
      size_t n = eq ? (size_t)(eq - a) : strlen(a);
      if (n >= sizeof name) return die("unknown option '%s'%s", a, "");
      memcpy(name, a, n);
      name[n] = 0;
      int k = 0;
      while (with_value[k] && strcmp(with_value[k], name)) k++;
      if (!with_value[k]) { usage(stderr); return die("unknown option '%s'%s", a, ""); }
      if (eq) val = eq + 1;
      else if (i + 1 < argc) val = argv[++i];
      else return die("%s needs a value%s", name, "");
      side_t *sd = &sides[compare ? cur : 0];
      if (sd->n == MAXOPTS) return die("too many options%s%s", "", "");
      sd->opt[sd->n++] = (opt_t){with_value[k], val};
      if (!strcmp(name, "--label")) sd->label = val;
      continue;
    }
    if (a[0] == '-' && a[1]) { usage(stderr); return die("unknown option '%s'%s", a, ""); }
    /* a trace */
    if (cur == 2 || (!compare && sides[1].trace))
      return die("unexpected argument '%s' (%s)", a, compare ? "--compare takes two traces" : "one trace, or use --compare");
    sides[++cur].trace = a;
  }
  if (compare && cur != 2) return die("--compare needs two traces (A then B)%s%s", "", "");
  if (compare && !strcmp(sides[1].trace, "-") && !strcmp(sides[2].trace, "-"))
    return die("--compare: only one of the traces can be stdin ('-')%s%s", "", "");
  if (!compare && cur == 0) {
    cur = 1;
    if (isatty(0)) fprintf(stderr, "tlbsim: reading a trace from stdin (see --help)\n");
  }
  int status;
  if (!compare) {
    ts_sim_t *s = run_side(&sides[0], &sides[1], false, &status);
    if (!s) return status;
    const char *label = sides[0].label ? sides[0].label : sides[1].trace ? sides[1].trace : "-";
    if (json) ts_print_json(stdout, s, label);
    else ts_print_text(stdout, s, label);
    ts_sim_free(s);
    return 0;
  }
  ts_sim_t *a = run_side(&sides[0], &sides[1], true, &status);
  if (!a) return status;
  ts_sim_t *b = run_side(&sides[0], &sides[2], true, &status);
  if (!b) { ts_sim_free(a); return status; }
  const char *la = sides[1].label ? sides[1].label : sides[1].trace;
  const char *lb = sides[2].label ? sides[2].label : sides[2].trace;
  if (json) ts_print_compare_json(stdout, a, la, b, lb);
  else ts_print_compare_text(stdout, a, la, b, lb);
  ts_sim_free(a);
  ts_sim_free(b);
  return 0;
}
