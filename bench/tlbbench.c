/* tlbbench: runs workloads x allocators, each run in its own process with LD_PRELOAD and the
 * allocator's environment, interleaved (A B C A B C ...), then one traced run per cell that
 * tlbsim replays natively and nested; writes runs.csv, summary.csv, summary.md and plots. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  int scale, runs, runs_given, sim, keep_traces, list, pin_threads;
  const char *out, *workloads, *allocators, *cpu, *tlbsim;
  unsigned long trace_max;
  double timeout_s;
} tb_opts_t;

/* Messages on stderr never split a line of stdout: stdout is line-buffered and flushed first.
 * On a terminal the progress is one line redrawn in place (cleared before anything else is
 * printed); otherwise each progress report is a line of its own. */
static int progress_tty, progress_shown;

static void progress_clear(void) {
  if (progress_shown) fputs("\r\033[K", stderr);
  progress_shown = 0;
}

/* stdout first, so that a message never lands inside a table line. */
static void vnote(const char *fmt, va_list ap) {
  fflush(stdout);
  progress_clear();
  vfprintf(stderr, fmt, ap);
}

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vnote(fmt, ap);
  va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void progress(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vnote(fmt, ap);
  va_end(ap);
  if (progress_tty) progress_shown = 1;
  else fputc('\n', stderr);
}

/* Timed runs per cell: a workload may run fewer times in --demo (a real program's run takes
 * seconds) unless --runs was given. */
static int runs_of(const tb_opts_t *o, const tb_workload_t *w) {
  if (o->scale == TB_SCALE_DEMO && !o->runs_given && w->demo_runs && w->demo_runs < o->runs) return w->demo_runs;
  return o->runs;
}

static const char *demo_allocs = "jemalloc,tlbpack,jemalloc-thp,glibc,mimalloc,tlbpack-arena,tlbpack-plan,ideal";

static void usage(FILE *f) {
  fprintf(f,
    "usage: tlbbench [--demo | --full | --scale tiny|demo|full] [options]\n"
    "  --demo             short matrix (under 3 minutes on 2 cores): headline workloads, tlbpack vs\n"
    "                     jemalloc (+ jemalloc-thp, glibc, mimalloc, ideal); the default\n"
    "  --full             every workload x every allocator, full sizes\n"
    "  --out DIR          where CSV, Markdown and plots go (default bench/results)\n"
    "  --runs N           timed runs per cell, interleaved across allocators (default 7; tiny: 1)\n"
    "  --workloads a,b    workloads to run (see --list)\n"
    "  --allocators x,y   allocators to run (see --list)\n"
    "  --cpu PRESET       tlbsim CPU preset (default zen4)\n"
    "  --tlbsim PATH      simulator binary (default: tlbsim next to tlbbench)\n"
    "  --no-sim           skip traces and simulation\n"
    "  --trace-max N      records per trace (default: tiny 20000, demo 1000000, full 3000000)\n"
    "  --keep-traces      keep the binary traces in DIR/tmp\n"
    "  --pin-threads      a workload's threads run one per CPU (--pin), the same placement every run\n"
    "  --lib NAME=PATH    preload PATH for allocator NAME (or its family, e.g. jemalloc)\n"
    "  --timeout S        seconds before a run is killed (default 300)\n"
    "  --list             print the workloads and allocators and exit\n");
}

static int has(const char *csv, const char *name) {
  size_t n = strlen(name);
  for (const char *p = csv; p && *p;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == n && !strncmp(p, name, n)) return 1;
    p = c ? c + 1 : NULL;
  }
  return 0;
}

/* every name in csv must be known: a typo is an error, not an empty matrix */
static int check_names(const char *csv, int allocs) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", csv);
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (allocs ? tb_alloc_find(t) != NULL : tb_workload_find(t) != NULL) continue;
    fprintf(stderr, "tlbbench: unknown %s '%s'; known:", allocs ? "allocator" : "workload", t);
    if (allocs) for (size_t i = 0; i < tb_nallocs; i++) fprintf(stderr, " %s", tb_allocs[i].name);
    else for (size_t i = 0; i < tb_nworkloads; i++) fprintf(stderr, " %s", tb_workloads[i].name);
    fprintf(stderr, "\n");
    return -1;
  }
  return 0;
}

static int wl_selected(const tb_opts_t *o, const tb_workload_t *w) {
  return o->workloads ? has(o->workloads, w->name) : (o->scale == TB_SCALE_FULL || w->in_demo);
}

/* Whether workload w runs with allocator a: the workload's own list when it has one, else the
 * scale's selection (sel); an on-request allocator only where it is named. --allocators, when
 * given, filters both. */
static int cell_wanted(const tb_opts_t *o, const char *sel, const tb_workload_t *w, const tb_alloc_t *a) {
  if (o->allocators && !has(o->allocators, a->name)) return 0;
  if (w->allocs) return has(w->allocs, a->name);
  if (a->on_request && !o->allocators) return 0;
  return !sel || has(sel, a->name);
}

static void parse(int argc, char **argv, tb_opts_t *o) {
  o->scale = TB_SCALE_DEMO; o->runs = -1; o->sim = 1; o->out = "bench/results";
  o->cpu = "zen4"; o->timeout_s = 300;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { fprintf(stderr, "tlbbench: %s needs a value\n", a); exit(2); } i++; } while (0)
    if (!strcmp(a, "--demo")) o->scale = TB_SCALE_DEMO;
    else if (!strcmp(a, "--full")) o->scale = TB_SCALE_FULL;
    else if (!strcmp(a, "--scale")) {
      NEEDV();
      if (!strcmp(v, "tiny")) o->scale = TB_SCALE_TINY;
      else if (!strcmp(v, "demo")) o->scale = TB_SCALE_DEMO;
      else if (!strcmp(v, "full")) o->scale = TB_SCALE_FULL;
      else { fprintf(stderr, "tlbbench: --scale wants tiny, demo or full, got '%s'\n", v); exit(2); }
    } else if (!strcmp(a, "--out")) { NEEDV(); o->out = v; }
    else if (!strcmp(a, "--runs")) {
      NEEDV();
      char *e;
      long r = strtol(v, &e, 10);
      if (*e || r < 1 || r > TB_MAX_RUNS) {
        fprintf(stderr, "tlbbench: --runs wants 1..%d, got '%s'\n", TB_MAX_RUNS, v);
        exit(2);
      }
      o->runs = (int)r;
    } else if (!strcmp(a, "--workloads")) { NEEDV(); if (check_names(v, 0)) exit(2); o->workloads = v; }
    else if (!strcmp(a, "--allocators")) { NEEDV(); if (check_names(v, 1)) exit(2); o->allocators = v; }
    else if (!strcmp(a, "--cpu")) { NEEDV(); o->cpu = v; }
    else if (!strcmp(a, "--tlbsim")) { NEEDV(); o->tlbsim = v; }
    else if (!strcmp(a, "--no-sim")) o->sim = 0;
    else if (!strcmp(a, "--keep-traces")) o->keep_traces = 1;
    else if (!strcmp(a, "--pin-threads")) o->pin_threads = 1;
    else if (!strcmp(a, "--list")) o->list = 1;
    else if (!strcmp(a, "--trace-max")) {
      NEEDV();
      char *e;
      o->trace_max = strtoul(v, &e, 10);
      if (*e || !o->trace_max) { fprintf(stderr, "tlbbench: --trace-max wants a positive integer, got '%s'\n", v); exit(2); }
    } else if (!strcmp(a, "--timeout")) {
      NEEDV();
      char *e;
      o->timeout_s = strtod(v, &e);
      if (*e || !(o->timeout_s > 0)) { fprintf(stderr, "tlbbench: --timeout wants seconds > 0, got '%s'\n", v); exit(2); }
    } else if (!strcmp(a, "--lib")) {
      NEEDV();
      if (tb_alloc_override(v)) { fprintf(stderr, "tlbbench: --lib wants NAME=PATH, got '%s'\n", v); exit(2); }
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
    else { fprintf(stderr, "tlbbench: unknown option '%s'\n", a); usage(stderr); exit(2); }
  }
  o->runs_given = o->runs > 0;
  if (o->runs < 0) o->runs = o->scale == TB_SCALE_TINY ? 1 : 7;
  if (!o->trace_max) o->trace_max = o->scale == TB_SCALE_TINY ? 20000 : o->scale == TB_SCALE_DEMO ? 1000000 : 3000000;
}

/* the first program of a space-separated list that is not on PATH, or NULL when all are */
static const char *missing_prog(const char *progs, char *buf, size_t n) {
  char list[256];
  snprintf(list, sizeof list, "%s", progs ? progs : "");
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (char *save, *t = strtok_r(list, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    int found = 0;
    for (const char *p = path; *p && !found;) {
      size_t l = strcspn(p, ":");
      char full[4096];
      snprintf(full, sizeof full, "%.*s/%s", (int)l, p, t);
      found = l && access(full, X_OK) == 0;
      p += l + (p[l] == ':');
    }
    if (!found) { snprintf(buf, n, "%s", t); return buf; }
  }
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int mkdirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') { *p = 0; if (mkdir(buf, 0755) && errno != EEXIST) return -1; *p = '/'; }
  return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* argv for one run of cell c: program, scale flags, the allocator's extra flag, extra flags */
static int build_argv(char **argv, char *store, size_t cap, const char *wl_dir, const tb_cell_t *c,
                      int scale, const char *more) {
  int n = 0;
  size_t used = 0;
  int w = snprintf(store, cap, "%s/%s", wl_dir, c->w->prog);
  argv[n++] = store;
  used = (size_t)w + 1;
  char line[1024];
  snprintf(line, sizeof line, "%s %s %s", c->w->args[scale], c->a->extra_arg ? c->a->extra_arg : "",
           more ? more : "");
  for (char *save, *t = strtok_r(line, " ", &save); t && n < 30; t = strtok_r(NULL, " ", &save)) {
    size_t l = strlen(t) + 1;
    if (used + l > cap) break;
    memcpy(store + used, t, l);
    argv[n++] = store + used;
    used += l;
  }
  argv[n] = NULL;
  return n;
}

/* preload and conf are the caller's storage for the two variables built here; a planned
 * allocator's TLBPACK_CONF gets ",plan:FILE" added. */
static void env_for(const tb_cell_t *c, const char **env, char *preload, size_t n, char *conf, size_t cn) {
  int k = 0;
  if (c->lib[0]) { snprintf(preload, n, "LD_PRELOAD=%s", c->lib); env[k++] = preload; }
  for (int i = 0; i < TB_MAX_ENV && c->a->env[i]; i++) {
    if (c->plan[0] && !strncmp(c->a->env[i], "TLBPACK_CONF=", 13)) {
      snprintf(conf, cn, "%s,plan:%s", c->a->env[i], c->plan);
      env[k++] = conf;
    } else {
      env[k++] = c->a->env[i];
    }
  }
  env[k] = NULL;
}

static const char *first_line(const char *s, char *buf, size_t n) {
  const char *end = s;
  /* the last non-empty line of stderr is usually the reason */
  const char *best = s;
  for (const char *p = s; *p; p++)
    if (*p == '\n' && p[1] && p[1] != '\n') best = p + 1;
  end = strchr(best, '\n');
  size_t l = end ? (size_t)(end - best) : strlen(best);
  if (l >= n) l = n - 1;
  memcpy(buf, best, l);
  buf[l] = 0;
  for (char *p = buf; *p; p++) if (*p == ',' || *p == '|') *p = ';';
  return buf;
}

/* marked: the trace has a B record (the workload's RESULT says trace_marker=N): tlbsim then
 * measures from it, after the warm-up the workload recorded before its timed phase. */
static void simulate(tb_cell_t *c, const char *tlbsim, const char *cpu, const char *trace,
                     const char *smaps, int marked, double timeout_s) {
  struct stat st;
  int have_smaps = stat(smaps, &st) == 0 && st.st_size > 0;
  if (!have_smaps) snprintf(c->sim_note, sizeof c->sim_note, "no smaps copy: simulated with 4 KiB pages");
  for (int nested = 0; nested < 2; nested++) {
    char *argv[14];
    int k = 0;
    argv[k++] = (char *)tlbsim; argv[k++] = "--json"; argv[k++] = "--cpu"; argv[k++] = (char *)cpu;
    if (marked) { argv[k++] = "--warmup"; argv[k++] = "marker"; }
    if (have_smaps) { argv[k++] = "--smaps"; argv[k++] = (char *)smaps; }
    if (nested) { argv[k++] = "--nested"; argv[k++] = "4k"; }
    argv[k++] = (char *)trace;
    argv[k] = NULL;
    tb_proc_t p;
    const char *why = NULL;
    tb_sim_t *dst = nested ? &c->nested : &c->sim;
    char line[160];
    if (tb_run(argv, NULL, timeout_s, &p) != 0) { snprintf(c->sim_note, sizeof c->sim_note, "cannot run tlbsim"); return; }
    if (p.status != 0)
      snprintf(c->sim_note, sizeof c->sim_note, "tlbsim%s exit %d: %s", nested ? " --nested" : "", p.status, first_line(p.err, line, sizeof line));
    else if (tb_sim_from_json(p.out, dst, &why) != 0)
      snprintf(c->sim_note, sizeof c->sim_note, "tlbsim JSON lacks field %s", why);
    tb_proc_free(&p);
  }
}

int main(int argc, char **argv) {
  tb_opts_t o = {0};
  setvbuf(stdout, NULL, _IOLBF, 0);
  progress_tty = isatty(2);
  parse(argc, argv, &o);
  if (o.list) {
    printf("workloads:\n");
    for (size_t i = 0; i < tb_nworkloads; i++) printf("  %-14s %s%s\n", tb_workloads[i].name, tb_workloads[i].what, tb_workloads[i].in_demo ? " [demo]" : "");
    printf("allocators:\n");
    for (size_t i = 0; i < tb_nallocs; i++) printf("  %-18s %s%s\n", tb_allocs[i].name, tb_allocs[i].what, has(demo_allocs, tb_allocs[i].name) ? " [demo]" : "");
    return 0;
  }
  char self[4096], wl_dir[4200], tlbsim[4200];
  if (tb_self_dir(self, sizeof self)) { note("tlbbench: cannot read /proc/self/exe\n"); return 1; }
  snprintf(wl_dir, sizeof wl_dir, "%s/bench", self);
  snprintf(tlbsim, sizeof tlbsim, "%s", o.tlbsim ? o.tlbsim : "");
  if (!o.tlbsim) snprintf(tlbsim, sizeof tlbsim, "%s/tlbsim", self);
  if (o.sim && access(tlbsim, X_OK) != 0) {
    note("tlbbench: tlbsim not found at %s: simulator columns (L1/L2 misses, walks, levels, refs) skipped\n", tlbsim);
    o.sim = 0;
  }
  const char *sel_allocs = o.allocators ? o.allocators : o.scale == TB_SCALE_FULL ? NULL : demo_allocs;

  /* the matrix; missing pieces are reported here, once, and listed in summary.md */
  size_t cap = tb_nworkloads * tb_nallocs;
  tb_cell_t *cells = calloc(cap, sizeof *cells);
  char (*skipped)[256] = calloc(cap + tb_nallocs, sizeof *skipped);
  size_t ncells = 0, nskipped = 0;
  int rc = 1; /* from here every return goes through `out`, which frees the tables */
  if (!cells || !skipped) { note("tlbbench: out of memory\n"); goto out; }
  const tb_alloc_t *order[64];
  char libs[64][512];
  size_t nalloc = 0;
  /* tlbpack and jemalloc lead so that the headline pair sits together */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < tb_nallocs; i++) {
      const tb_alloc_t *a = &tb_allocs[i];
      int lead = !strcmp(a->name, "jemalloc") || !strcmp(a->name, "tlbpack");
      if (lead != (pass == 0)) continue;
      int wanted = 0;
      for (size_t k = 0; k < tb_nworkloads && !wanted; k++)
        wanted = wl_selected(&o, &tb_workloads[k]) && cell_wanted(&o, sel_allocs, &tb_workloads[k], a);
      if (!wanted) continue;
      const char *why = NULL;
      if (!tb_alloc_lib(a, self, libs[nalloc], sizeof libs[nalloc], &why)) {
        snprintf(skipped[nskipped++], 256, "allocator %s: %s (%s)", a->name, why, libs[nalloc]);
        note("tlbbench: skipping allocator %s: %s (%s)\n", a->name, why, libs[nalloc]);
        continue;
      }
      order[nalloc++] = a;
    }
  for (size_t i = 0; i < tb_nworkloads; i++) {
    const tb_workload_t *w = &tb_workloads[i];
    if (!wl_selected(&o, w)) continue;
    char prog[4400];
    snprintf(prog, sizeof prog, "%s/%s", wl_dir, w->prog);
    if (access(prog, X_OK) != 0) {
      snprintf(skipped[nskipped++], 256, "workload %s: %.200s not built", w->name, prog);
      note("tlbbench: skipping workload %s: %s not built\n", w->name, prog);
      continue;
    }
    char miss[64];
    if (missing_prog(w->needs, miss, sizeof miss)) {
      snprintf(skipped[nskipped++], 256, "workload %s: not run: %s is not installed (not on PATH; `make setup` installs it)",
               w->name, miss);
      note("tlbbench: skipping workload %s: %s is not installed (not on PATH)\n", w->name, miss);
      continue;
    }
    for (size_t j = 0; j < nalloc; j++) {
      /* an allocator with a flag of its own runs where the workload takes it: `ideal` in records,
       * the SQLite adapter where a workload lists it */
      if (order[j]->extra_arg && !(w->allocs ? has(w->allocs, order[j]->name) : w->ideal_ok && !order[j]->on_request))
        continue;
      if (order[j]->planned && !w->plan_args) continue;   /* a plan is made for records only */
      if (!cell_wanted(&o, sel_allocs, w, order[j])) continue;
      tb_cell_init(&cells[ncells], w, order[j]);
      snprintf(cells[ncells].lib, sizeof cells[ncells].lib, "%s", libs[j]);
      if (order[j]->planned) {
        tb_cell_t *c = &cells[ncells];
        progress("tlbbench: %s x %s: the plan (tlbpack profile of a smaller run, under valgrind; cached)", w->name,
                 order[j]->name);
        if (tb_plan_make(w, self, wl_dir, o.timeout_s, c->plan, sizeof c->plan, c->plan_note, sizeof c->plan_note) != 0) {
          snprintf(skipped[nskipped++], 256, "allocator %s x %s: no plan: %.180s", order[j]->name, w->name, c->plan_note);
          note("tlbbench: skipping %s x %s: no plan: %s\n", w->name, order[j]->name, c->plan_note);
          continue;
        }
        note("tlbbench: %s x %s: %s\n", w->name, order[j]->name, c->plan_note);
      }
      ncells++;
    }
  }
  if (!ncells) { note("tlbbench: nothing to run (no workload x allocator cell is available)\n"); goto out; }

  char tmpdir[4200], path[4400];
  snprintf(tmpdir, sizeof tmpdir, "%s/tmp", o.out);
  if (mkdirs(o.out) || mkdirs(tmpdir)) { note("tlbbench: cannot create %s: %s\n", tmpdir, strerror(errno)); goto out; }
  snprintf(path, sizeof path, "%s/runs.csv", o.out);
  FILE *runs_csv = fopen(path, "w");
  if (!runs_csv) { note("tlbbench: cannot write %s: %s\n", path, strerror(errno)); goto out; }
  const char *rh[] = {"workload", "allocator", "run", "status", "wall_s", "ns_per_op", "peak_rss_kb",
                      "hugetlb_kb", "hot_entries", "hot_floor", "malloc_from", "result"};
  tb_csv_row(runs_csv, rh, sizeof rh / sizeof rh[0]);

  size_t traced = 0, timed = 0;
  for (size_t i = 0; i < ncells; i++) traced += !cells[i].w->no_trace;
  for (size_t i = 0; i < ncells; i++) timed += (size_t)runs_of(&o, cells[i].w);
  size_t total = timed + (o.sim ? traced : 0), done = 0;
  double t0 = now_s();
  note("tlbbench: %zu cells x %d runs + %zu traced run(s), results in %s\n", ncells, o.runs,
          o.sim ? traced : 0, o.out);
  for (size_t first = 0; first < ncells;) {
    size_t last = first;
    while (last < ncells && cells[last].w == cells[first].w) last++;
    /* A workload that wants the 1 GiB pool gets it for its runs only, or is skipped. */
    int gpool = cells[first].w->gpool[o.scale];
    if (gpool > 0) {
      char why[240];
      long got = tb_gpool_reserve(gpool, why, sizeof why);
      if (got < 0) {
        snprintf(skipped[nskipped++], 256, "workload %s: not run: no 1 GiB pool: %.200s", cells[first].w->name, why);
        note("tlbbench: skipping workload %s: no 1 GiB pool: %s\n", cells[first].w->name, why);
        for (size_t i = first; i < last; i++) cells[i].skipped = 1;
        done += (size_t)runs_of(&o, cells[first].w) * (last - first);
        first = last;
        continue;
      }
      note("tlbbench: %s: the 1 GiB pool has %ld free page(s) (%d wanted)%s\n", cells[first].w->name, got, gpool,
           got < gpool ? ": the rest of the heap goes on 2 MiB pages" : "");
    }
    /* interleaved: run r of every allocator, then run r+1 ... */
    int runs = runs_of(&o, cells[first].w);
    for (int r = 0; r < runs; r++)
      for (size_t i = first; i < last; i++) {
        tb_cell_t *c = &cells[i];
        done++;
        progress("[%zu/%zu] %s x %s run %d/%d (elapsed %.0f s)", done, total, c->w->name, c->a->name, r + 1, runs, now_s() - t0);
        char *av[32], store[8192], preload[600], conf[700];
        const char *env[TB_MAX_ENV + 2];
        build_argv(av, store, sizeof store, wl_dir, c, o.scale, o.pin_threads ? "--pin" : NULL);
        env_for(c, env, preload, sizeof preload, conf, sizeof conf);
        tb_proc_t p;
        tb_kv_t kv;
        const char *why = NULL;
        char line[200], runno[16], status[16], wall[32];
        if (tb_run(av, env, o.timeout_s, &p) != 0) {
          snprintf(c->error, sizeof c->error, "cannot start %s", av[0]);
          note("tlbbench: %s x %s run %d failed: %s\n", c->w->name, c->a->name, r + 1, c->error);
          c->failures++;
          continue;
        }
        int bad = p.timed_out || p.status != 0 || tb_parse_result(p.out, &kv, &why) != 0;
        if (bad) {
          c->failures++;
          if (p.timed_out) snprintf(c->error, sizeof c->error, "timed out after %.0f s", o.timeout_s);
          else if (p.status != 0) snprintf(c->error, sizeof c->error, "exit %d: %s", p.status, first_line(p.err, line, sizeof line));
          else snprintf(c->error, sizeof c->error, "%s", why);
          note("tlbbench: %s x %s run %d failed: %s\n", c->w->name, c->a->name, r + 1, c->error);
        } else {
          tb_cell_add_run(c, &kv);
          const char *mf = tb_kv_get(&kv, "malloc_from");
          const char *want = c->lib[0] ? strrchr(c->lib, '/') : "/libc.so.6";
          want = want ? want + 1 : c->lib;
          int stock = c->w->stock && !c->lib[0];  /* the program's own malloc: nothing to expect */
          if (mf && strcmp(mf, want) != 0 && r == 0 && !stock)
            note("tlbbench: warning: %s x %s: malloc comes from %s, expected %s (preload not effective?)\n",
                    c->w->name, c->a->name, mf, want);
        }
        snprintf(runno, sizeof runno, "%d", r + 1);
        snprintf(status, sizeof status, "%d", p.timed_out ? -1 : p.status);
        snprintf(wall, sizeof wall, "%.3f", p.wall_s);
        const char *nl = strstr(p.out, "RESULT ");
        char res[1024] = "";
        if (nl) { size_t l = strcspn(nl, "\n"); if (l >= sizeof res) l = sizeof res - 1; memcpy(res, nl, l); res[l] = 0; }
        const char *g[] = {"ns_per_op", "peak_rss_kb", "hugetlb_kb", "hot_entries", "hot_floor", "malloc_from"};
        const char *row[12] = {c->w->name, c->a->name, runno, status, wall};
        for (int k = 0; k < 6; k++) row[5 + k] = bad ? "" : (tb_kv_get(&kv, g[k]) ? tb_kv_get(&kv, g[k]) : "");
        row[11] = res;
        tb_csv_row(runs_csv, row, 12);
        fflush(runs_csv);
        tb_proc_free(&p);
      }
    /* one traced run per cell, replayed by the simulator natively and nested */
    for (size_t i = first; i < last && o.sim; i++) {
      tb_cell_t *c = &cells[i];
      if (c->w->no_trace) { snprintf(c->sim_note, sizeof c->sim_note, "%s", c->w->no_trace); continue; }
      done++;
      progress("[%zu/%zu] %s x %s traced run + tlbsim (elapsed %.0f s)", done, total, c->w->name, c->a->name, now_s() - t0);
      char trace[4600], smaps[4600], more[9400];
      snprintf(trace, sizeof trace, "%s/%s.%s.trace", tmpdir, c->w->name, c->a->name);
      snprintf(smaps, sizeof smaps, "%s/%s.%s.smaps", tmpdir, c->w->name, c->a->name);
      snprintf(more, sizeof more, "--trace %s --smaps %s --trace-max %lu%s", trace, smaps, o.trace_max,
               o.pin_threads ? " --pin" : "");
      char *av[32], store[16384], preload[600], conf[700];
      const char *env[TB_MAX_ENV + 2];
      build_argv(av, store, sizeof store, wl_dir, c, o.scale, more);
      env_for(c, env, preload, sizeof preload, conf, sizeof conf);
      tb_proc_t p;
      char line[160];
      unlink(trace);
      if (tb_run(av, env, o.timeout_s, &p) != 0 || p.status != 0 || p.timed_out) {
        snprintf(c->sim_note, sizeof c->sim_note, "traced run failed: %s", p.err ? first_line(p.err, line, sizeof line) : "cannot start");
      } else {
        struct stat st;
        tb_kv_t kv;
        const char *why, *traced = NULL;
        double mark = NAN;
        if (tb_parse_result(p.out, &kv, &why) == 0) {
          traced = tb_kv_get(&kv, "traced");
          if (tb_kv_num(&kv, "trace_marker", &mark) != 0) mark = NAN;
          double ops;
          if (tb_kv_num(&kv, "traced_ops", &ops) == 0 && ops > 0) c->traced_ops = ops;
        }
        if (stat(trace, &st) != 0 || st.st_size <= 16)
          snprintf(c->sim_note, sizeof c->sim_note, "no trace recorded%s%s", traced ? ": traced=" : " (none in this mode)",
                   traced ? traced : "");
        else
          simulate(c, tlbsim, o.cpu, trace, smaps, !isnan(mark), o.timeout_s);
      }
      if (c->sim_note[0]) note("tlbbench: %s x %s: %s\n", c->w->name, c->a->name, c->sim_note);
      tb_proc_free(&p);
      if (!o.keep_traces) unlink(trace);
    }
    if (gpool > 0) tb_gpool_restore();
    first = last;
  }
  fclose(runs_csv);
  size_t kept = 0; /* skipped cells are listed under "Not measured", not as empty rows */
  for (size_t i = 0; i < ncells; i++)
    if (!cells[i].skipped) cells[kept++] = cells[i];
  ncells = kept;

  tb_summarize(cells, ncells);
  snprintf(path, sizeof path, "%s/summary.csv", o.out);
  FILE *f = fopen(path, "w");
  if (f) { tb_write_summary_csv(f, cells, ncells); fclose(f); }
  else note("tlbbench: cannot write %s: %s\n", path, strerror(errno));
  int plots = tb_write_plots(o.out, cells, ncells);
  snprintf(path, sizeof path, "%s/summary.md", o.out);
  f = fopen(path, "w");
  progress_clear();
  FILE *outs[2] = {stdout, f};
  for (int k = 0; k < 2; k++) {
    FILE *x = outs[k];
    if (!x) { note("tlbbench: cannot write %s: %s\n", path, strerror(errno)); continue; }
    fprintf(x, "\n## tlbbench %s: %zu cells, %d runs each (medians; spread = (max-min)/median)\n\n",
            o.scale == TB_SCALE_FULL ? "full" : o.scale == TB_SCALE_DEMO ? "demo" : "tiny", ncells, o.runs);
    for (size_t i = 0; i < ncells; i++)
      if (runs_of(&o, cells[i].w) != o.runs && (i == 0 || cells[i - 1].w != cells[i].w))
        fprintf(x, "(%s: %d runs per cell in --demo: each run of the real program takes seconds)\n\n",
                cells[i].w->name, runs_of(&o, cells[i].w));
    if (o.pin_threads)
      fprintf(x, "(--pin-threads: each workload thread ran on a CPU of its own, thread i on the i-th CPU "
                 "tlbbench may use, the same in every run)\n\n");
    tb_write_markdown(x, cells, ncells);
    fprintf(x, "\nje = jemalloc (default). TLB entries: pagemap + kpageflags, one per huge page and per "
               "other 4 KiB page holding hot bytes; floor = ceil(hot bytes / 2 MiB). Simulator: tlbsim "
               "--cpu %s on each workload's own trace (native; nested = --nested 4k), counted from the "
               "trace's B record (--warmup marker): the records before it repeat the warm-up of the "
               "timed phase and only fill the TLBs and walk caches (summary.csv: sim_warmup_accesses). "
               "Per 1k = per 1,000 accesses of that measured region; inf = none left in it.\n", o.cpu);
    fprintf(x, "\n### Targets (tlbpack = pool:auto,group:site)\n\n");
    tb_write_targets(x, cells, ncells);
    if (nskipped || !o.sim) {
      fprintf(x, "\n### Not measured\n\n");
      for (size_t s = 0; s < nskipped; s++) fprintf(x, "- %s\n", skipped[s]);
      if (!o.sim) fprintf(x, "- simulator columns: %s\n", access(tlbsim, X_OK) ? "tlbsim not built" : "--no-sim given");
    }
      int hdr = 0;
    for (size_t i = 0; i < ncells; i++)
      if (cells[i].detail[0] || cells[i].failures || cells[i].sim_note[0] || cells[i].plan_note[0])
        fprintf(x, "%s- %s x %s: %s%s%s%s%s%s%s\n", hdr++ ? "" : "\n### Notes per cell\n\n", cells[i].w->name, cells[i].a->name,
                cells[i].plan_note, cells[i].plan_note[0] && cells[i].detail[0] ? "; " : "", cells[i].detail, cells[i].failures ? " failures: " : "", cells[i].failures ? cells[i].error : "",
                cells[i].sim_note[0] ? " sim: " : "", cells[i].sim_note);
  }
  if (f) fclose(f);
  note("tlbbench: done in %.0f s; %s/{runs.csv,summary.csv,summary.md}, %d plot(s)\n", now_s() - t0, o.out, plots);
  rc = 0;
  for (size_t i = 0; i < ncells; i++)
    if (cells[i].nruns == 0) rc = 1;  /* a cell that never ran is a failure of the benchmark */
out:
  free(cells);
  free(skipped);
  return rc;
}
