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
  int scale, runs, runs_given, sim, keep_traces, list, pin_threads, sweep, check;
  const char *out, *workloads, *allocators, *cpu, *tlbsim, *sweep_shapes;
  unsigned long sweep_max_mb, sweep_min_mb;
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
    "  --list             print the workloads and allocators and exit\n"
    "  --sweep            only the TLB sweep (also the last part of --full): wl_sweep's shapes over a\n"
    "                     live heap from 512 KiB up, x2 a step; tlbpack, tlbpack-plan, jemalloc,\n"
    "                     jemalloc-thp (--allocators filters); sweep.csv, sweep.md, sweep_entries*.png\n"
    "  --sweep-max-mb N   the sweep's largest heap (default: tiny 16, demo 256, full 2048)\n"
    "  --sweep-min-mb N   the sweep's smallest heap (default: 512 KiB; the plan is still made at 1 MiB)\n"
    "  --sweep-shapes a,b the sweep's shapes (default all; --list names them)\n"
    "  --check            exit 3 when a sweep point misses tlbpack's promise (sweep.md says which)\n");
}

static int has(const char *csv, const char *name) { return tb_csv_has(csv, name); }

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

/* A sweep heap bound in MiB (--sweep-min-mb, --sweep-max-mb): 1..65536, else exit 2. */
static unsigned long sweep_mb(const char *flag, const char *v) {
  char *e;
  unsigned long mb = strtoul(v, &e, 10);
  if (*e || !mb || mb > 65536) {
    fprintf(stderr, "tlbbench: %s wants 1..65536, got '%s'\n", flag, v);
    exit(2);
  }
  return mb;
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
    else if (!strcmp(a, "--sweep")) o->sweep = 1;
    else if (!strcmp(a, "--check")) o->check = 1;
    else if (!strcmp(a, "--sweep-shapes")) {
      NEEDV();
      char buf[512];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t k = 0;
        while (k < tb_sweep_nshapes && strcmp(tb_sweep_shapes[k].name, t)) k++;
        if (k == tb_sweep_nshapes) {
          fprintf(stderr, "tlbbench: unknown sweep shape '%s'; known:", t);
          for (k = 0; k < tb_sweep_nshapes; k++) fprintf(stderr, " %s", tb_sweep_shapes[k].name);
          fprintf(stderr, "\n");
          exit(2);
        }
      }
      o->sweep_shapes = v;
    } else if (!strcmp(a, "--sweep-min-mb") || !strcmp(a, "--sweep-max-mb")) {
      NEEDV();
      *(!strcmp(a, "--sweep-min-mb") ? &o->sweep_min_mb : &o->sweep_max_mb) = sweep_mb(a, v);
    }
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

/* One benchmark run: the options, where the programs are, the matrix of cells and what was
 * skipped, and the progress through it. */
typedef struct {
  tb_opts_t o;
  char self[4096], wl_dir[4200], tlbsim[4200], tmpdir[4200];
  const char *sel_allocs;
  const tb_alloc_t *order[64]; /* the allocators to run, tlbpack and jemalloc first */
  char libs[64][512];
  size_t nalloc;
  tb_cell_t *cells;
  size_t ncells;
  char (*skipped)[256];        /* lines of summary.md's "Not measured" */
  size_t nskipped;
  FILE *runs_csv;
  size_t done, total;          /* progress: runs done of all timed and traced runs */
  double t0;
} tb_bench_t;

static void list_names(void) {
  printf("workloads:\n");
  for (size_t i = 0; i < tb_nworkloads; i++) printf("  %-14s %s%s\n", tb_workloads[i].name, tb_workloads[i].what, tb_workloads[i].in_demo ? " [demo]" : "");
  printf("allocators:\n");
  for (size_t i = 0; i < tb_nallocs; i++) printf("  %-18s %s%s\n", tb_allocs[i].name, tb_allocs[i].what, has(demo_allocs, tb_allocs[i].name) ? " [demo]" : "");
  printf("sweep shapes (--sweep):\n");
  for (size_t i = 0; i < tb_sweep_nshapes; i++) printf("  %-22s %s\n", tb_sweep_shapes[i].name, tb_sweep_shapes[i].what);
}

/* The TLB sweep's settings from the options (--sweep, and the end of --full). */
static tb_sweep_opts_t sweep_opts(const tb_opts_t *o) {
  tb_sweep_opts_t so = {.out = o->out, .allocators = o->allocators, .shapes = o->sweep_shapes,
                       .runs = o->runs_given ? o->runs : 1, .check = o->check, .timeout_s = o->timeout_s};
  so.max_kb = (size_t)(o->sweep_max_mb ? o->sweep_max_mb : o->scale == TB_SCALE_TINY ? 16 : o->scale == TB_SCALE_DEMO ? 256 : 2048) << 10;
  so.min_kb = (size_t)o->sweep_min_mb << 10;
  if (so.min_kb > so.max_kb) {
    fprintf(stderr, "tlbbench: --sweep-min-mb %lu is over the largest heap, %zu MiB\n", o->sweep_min_mb, so.max_kb >> 10);
    exit(2);
  }
  so.lookups = o->scale == TB_SCALE_TINY ? 20000 : o->scale == TB_SCALE_DEMO ? 200000 : 1000000;
  return so;
}

/* The workload programs beside tlbbench, and tlbsim (the simulator columns go without it). */
static int find_tools(tb_bench_t *b) {
  if (tb_self_dir(b->self, sizeof b->self)) { note("tlbbench: cannot read /proc/self/exe\n"); return -1; }
  snprintf(b->wl_dir, sizeof b->wl_dir, "%s/bench", b->self);
  snprintf(b->tlbsim, sizeof b->tlbsim, "%s", b->o.tlbsim ? b->o.tlbsim : "");
  if (!b->o.tlbsim) snprintf(b->tlbsim, sizeof b->tlbsim, "%s/tlbsim", b->self);
  if (b->o.sim && access(b->tlbsim, X_OK) != 0) {
    note("tlbbench: tlbsim not found at %s: simulator columns (L1/L2 misses, walks, levels, refs) skipped\n", b->tlbsim);
    b->o.sim = 0;
  }
  b->sel_allocs = b->o.allocators ? b->o.allocators : b->o.scale == TB_SCALE_FULL ? NULL : demo_allocs;
  return 0;
}

/* The allocators some selected workload runs with, whose library is there: tlbpack and jemalloc
 * lead so that the headline pair sits together. */
static void pick_allocators(tb_bench_t *b) {
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < tb_nallocs; i++) {
      const tb_alloc_t *a = &tb_allocs[i];
      int lead = !strcmp(a->name, "jemalloc") || !strcmp(a->name, "tlbpack");
      if (lead != (pass == 0)) continue;
      int wanted = 0;
      for (size_t k = 0; k < tb_nworkloads && !wanted; k++)
        wanted = wl_selected(&b->o, &tb_workloads[k]) && cell_wanted(&b->o, b->sel_allocs, &tb_workloads[k], a);
      if (!wanted) continue;
      const char *why = NULL;
      if (!tb_alloc_lib(a, b->self, b->libs[b->nalloc], sizeof b->libs[b->nalloc], &why)) {
        snprintf(b->skipped[b->nskipped++], 256, "allocator %s: %s (%s)", a->name, why, b->libs[b->nalloc]);
        note("tlbbench: skipping allocator %s: %s (%s)\n", a->name, why, b->libs[b->nalloc]);
        continue;
      }
      b->order[b->nalloc++] = a;
    }
}

/* Workload w's cells, one per allocator it runs with: those whose program is not built or
 * needs a program not installed are skipped, and a planned allocator gets its plan now. */
static void add_cells(tb_bench_t *b, const tb_workload_t *w) {
  char prog[4400];
  snprintf(prog, sizeof prog, "%s/%s", b->wl_dir, w->prog);
  if (access(prog, X_OK) != 0) {
    /* Built but out of reach (a folder this user cannot enter, no execute bit) is not "not built". */
    const char *why = errno == ENOENT ? "not built" : errno == EACCES ? "cannot be executed (permission denied)" : strerror(errno);
    snprintf(b->skipped[b->nskipped++], 256, "workload %s: %.150s %s", w->name, prog, why);
    note("tlbbench: skipping workload %s: %s %s\n", w->name, prog, why);
    return;
  }
  char miss[64];
  if (missing_prog(w->needs, miss, sizeof miss)) {
    snprintf(b->skipped[b->nskipped++], 256, "workload %s: not run: %s is not installed (not on PATH; `make setup` installs it)",
             w->name, miss);
    note("tlbbench: skipping workload %s: %s is not installed (not on PATH)\n", w->name, miss);
    return;
  }
  for (size_t j = 0; j < b->nalloc; j++) {
    const tb_alloc_t *a = b->order[j];
    /* an allocator with a flag of its own runs where the workload takes it: `ideal` in records,
     * the SQLite adapter where a workload lists it */
    if (a->extra_arg && !(w->allocs ? has(w->allocs, a->name) : w->ideal_ok && !a->on_request)) continue;
    if (a->planned && !w->plan_args) continue;   /* a plan is made for records only */
    if (!cell_wanted(&b->o, b->sel_allocs, w, a)) continue;
    tb_cell_t *c = &b->cells[b->ncells];
    tb_cell_init(c, w, a);
    snprintf(c->lib, sizeof c->lib, "%s", b->libs[j]);
    if (a->planned) {
      progress("tlbbench: %s x %s: the plan (tlbpack profile of a smaller run, under valgrind; cached)", w->name, a->name);
      if (tb_plan_make(w, b->self, b->wl_dir, b->o.timeout_s, c->plan, sizeof c->plan, c->plan_note, sizeof c->plan_note) != 0) {
        snprintf(b->skipped[b->nskipped++], 256, "allocator %s x %s: no plan: %.180s", a->name, w->name, c->plan_note);
        note("tlbbench: skipping %s x %s: no plan: %s\n", w->name, a->name, c->plan_note);
        continue;
      }
      note("tlbbench: %s x %s: %s\n", w->name, a->name, c->plan_note);
    }
    b->ncells++;
  }
}

/* The output directory, its tmp/ for traces, and runs.csv with its header. */
static int open_runs_csv(tb_bench_t *b) {
  char path[4400];
  snprintf(b->tmpdir, sizeof b->tmpdir, "%s/tmp", b->o.out);
  if (mkdirs(b->o.out) || mkdirs(b->tmpdir)) { note("tlbbench: cannot create %s: %s\n", b->tmpdir, strerror(errno)); return -1; }
  snprintf(path, sizeof path, "%s/runs.csv", b->o.out);
  b->runs_csv = fopen(path, "w");
  if (!b->runs_csv) { note("tlbbench: cannot write %s: %s\n", path, strerror(errno)); return -1; }
  const char *rh[] = {"workload", "allocator", "run", "status", "wall_s", "ns_per_op", "peak_rss_kb",
                      "hugetlb_kb", "hot_entries", "hot_floor", "malloc_from", "result"};
  tb_csv_row(b->runs_csv, rh, sizeof rh / sizeof rh[0]);
  return 0;
}

/* Timed run r (from 0) of cell c, of `runs`: its measures go into the cell and a row of runs.csv. */
static void run_timed(tb_bench_t *b, tb_cell_t *c, int r, int runs) {
  const tb_opts_t *o = &b->o;
  b->done++;
  progress("[%zu/%zu] %s x %s run %d/%d (elapsed %.0f s)", b->done, b->total, c->w->name, c->a->name, r + 1, runs, now_s() - b->t0);
  char *av[32], store[8192], preload[600], conf[700];
  const char *env[TB_MAX_ENV + 2];
  build_argv(av, store, sizeof store, b->wl_dir, c, o->scale, o->pin_threads ? "--pin" : NULL);
  env_for(c, env, preload, sizeof preload, conf, sizeof conf);
  tb_proc_t p;
  tb_kv_t kv;
  const char *why = NULL;
  char line[200], runno[16], status[16], wall[32];
  if (tb_run(av, env, o->timeout_s, &p) != 0) {
    snprintf(c->error, sizeof c->error, "cannot start %s", av[0]);
    note("tlbbench: %s x %s run %d failed: %s\n", c->w->name, c->a->name, r + 1, c->error);
    c->failures++;
    return;
  }
  int bad = p.timed_out || p.status != 0 || tb_parse_result(p.out, &kv, &why) != 0;
  if (bad) {
    c->failures++;
    if (p.timed_out) snprintf(c->error, sizeof c->error, "timed out after %.0f s", o->timeout_s);
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
  tb_csv_row(b->runs_csv, row, 12);
  fflush(b->runs_csv);
  tb_proc_free(&p);
}

/* Cell c's traced run, replayed by the simulator natively and nested. */
static void run_traced(tb_bench_t *b, tb_cell_t *c) {
  const tb_opts_t *o = &b->o;
  if (c->w->no_trace) { snprintf(c->sim_note, sizeof c->sim_note, "%s", c->w->no_trace); return; }
  b->done++;
  progress("[%zu/%zu] %s x %s traced run + tlbsim (elapsed %.0f s)", b->done, b->total, c->w->name, c->a->name, now_s() - b->t0);
  char trace[4600], smaps[4600], more[9400];
  snprintf(trace, sizeof trace, "%s/%s.%s.trace", b->tmpdir, c->w->name, c->a->name);
  snprintf(smaps, sizeof smaps, "%s/%s.%s.smaps", b->tmpdir, c->w->name, c->a->name);
  snprintf(more, sizeof more, "--trace %s --smaps %s --trace-max %lu%s", trace, smaps, o->trace_max,
           o->pin_threads ? " --pin" : "");
  char *av[32], store[16384], preload[600], conf[700];
  const char *env[TB_MAX_ENV + 2];
  build_argv(av, store, sizeof store, b->wl_dir, c, o->scale, more);
  env_for(c, env, preload, sizeof preload, conf, sizeof conf);
  tb_proc_t p;
  char line[160];
  unlink(trace);
  if (tb_run(av, env, o->timeout_s, &p) != 0 || p.status != 0 || p.timed_out) {
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
      simulate(c, b->tlbsim, o->cpu, trace, smaps, !isnan(mark), o->timeout_s);
  }
  if (c->sim_note[0]) note("tlbbench: %s x %s: %s\n", c->w->name, c->a->name, c->sim_note);
  tb_proc_free(&p);
  if (!o->keep_traces) unlink(trace);
}

/* Cells [first, last), one workload's: the 1 GiB pool it wants (for its runs only, or it is
 * skipped), its timed runs interleaved (run r of every allocator, then run r+1 ...), then one
 * traced run per cell. */
static void run_workload(tb_bench_t *b, size_t first, size_t last) {
  const tb_workload_t *w = b->cells[first].w;
  int gpool = w->gpool[b->o.scale];
  if (gpool > 0) {
    char why[240];
    long got = tb_gpool_reserve(gpool, why, sizeof why);
    if (got < 0) {
      snprintf(b->skipped[b->nskipped++], 256, "workload %s: not run: no 1 GiB pool: %.200s", w->name, why);
      note("tlbbench: skipping workload %s: no 1 GiB pool: %s\n", w->name, why);
      for (size_t i = first; i < last; i++) b->cells[i].skipped = 1;
      b->done += (size_t)runs_of(&b->o, w) * (last - first);
      return;
    }
    note("tlbbench: %s: the 1 GiB pool has %ld free page(s) (%d wanted)%s\n", w->name, got, gpool,
         got < gpool ? ": the rest of the heap goes on 2 MiB pages" : "");
  }
  int runs = runs_of(&b->o, w);
  for (int r = 0; r < runs; r++)
    for (size_t i = first; i < last; i++) run_timed(b, &b->cells[i], r, runs);
  for (size_t i = first; i < last && b->o.sim; i++) run_traced(b, &b->cells[i]);
  if (gpool > 0) tb_gpool_restore();
}

/* Every cell's runs, a workload at a time; then the skipped cells leave the table (summary.md
 * lists them under "Not measured", not as empty rows). */
static void run_all(tb_bench_t *b) {
  size_t traced = 0, timed = 0;
  for (size_t i = 0; i < b->ncells; i++) traced += !b->cells[i].w->no_trace;
  for (size_t i = 0; i < b->ncells; i++) timed += (size_t)runs_of(&b->o, b->cells[i].w);
  b->total = timed + (b->o.sim ? traced : 0);
  b->t0 = now_s();
  note("tlbbench: %zu cells x %d runs + %zu traced run(s), results in %s\n", b->ncells, b->o.runs,
          b->o.sim ? traced : 0, b->o.out);
  for (size_t first = 0; first < b->ncells;) {
    size_t last = first;
    while (last < b->ncells && b->cells[last].w == b->cells[first].w) last++;
    run_workload(b, first, last);
    first = last;
  }
  fclose(b->runs_csv);
  size_t kept = 0;
  for (size_t i = 0; i < b->ncells; i++)
    if (!b->cells[i].skipped) b->cells[kept++] = b->cells[i];
  b->ncells = kept;
}

/* summary.md's text (also printed): the table, the targets, what was not measured, the notes. */
static void write_summary_md(const tb_bench_t *b, FILE *x) {
  const tb_opts_t *o = &b->o;
  const tb_cell_t *cells = b->cells;
  size_t ncells = b->ncells;
  fprintf(x, "\n## tlbbench %s: %zu cells, %d runs each (medians; spread = (max-min)/median)\n\n",
          o->scale == TB_SCALE_FULL ? "full" : o->scale == TB_SCALE_DEMO ? "demo" : "tiny", ncells, o->runs);
  tb_write_machine(x);
  for (size_t i = 0; i < ncells; i++)
    if (runs_of(o, cells[i].w) != o->runs && (i == 0 || cells[i - 1].w != cells[i].w))
      fprintf(x, "(%s: %d runs per cell in --demo: each run of the real program takes seconds)\n\n",
              cells[i].w->name, runs_of(o, cells[i].w));
  if (o->pin_threads)
    fprintf(x, "(--pin-threads: each workload thread ran on a CPU of its own, thread i on the i-th CPU "
               "tlbbench may use, the same in every run)\n\n");
  tb_write_markdown(x, b->cells, ncells);
  fprintf(x, "\nje = jemalloc (default). TLB entries: pagemap + kpageflags, one per huge page and per "
             "other 4 KiB page holding hot bytes; floor = ceil(hot bytes / 2 MiB). Simulator: tlbsim "
             "--cpu %s on each workload's own trace (native; nested = --nested 4k), counted from the "
             "trace's B record (--warmup marker): the records before it repeat the warm-up of the "
             "timed phase and only fill the TLBs and walk caches (summary.csv: sim_warmup_accesses). "
             "Per 1k = per 1,000 accesses of that measured region; inf = none left in it.\n", o->cpu);
  fprintf(x, "\n### Targets (tlbpack = pool:auto,group:site)\n\n");
  tb_write_targets(x, b->cells, ncells);
  if (b->nskipped || !o->sim) {
    fprintf(x, "\n### Not measured\n\n");
    for (size_t s = 0; s < b->nskipped; s++) fprintf(x, "- %s\n", b->skipped[s]);
    if (!o->sim) fprintf(x, "- simulator columns: %s\n", access(b->tlbsim, X_OK) ? "tlbsim not built" : "--no-sim given");
  }
  int hdr = 0;
  for (size_t i = 0; i < ncells; i++)
    if (cells[i].detail[0] || cells[i].failures || cells[i].sim_note[0] || cells[i].plan_note[0])
      fprintf(x, "%s- %s x %s: %s%s%s%s%s%s%s\n", hdr++ ? "" : "\n### Notes per cell\n\n", cells[i].w->name, cells[i].a->name,
              cells[i].plan_note, cells[i].plan_note[0] && cells[i].detail[0] ? "; " : "", cells[i].detail, cells[i].failures ? " failures: " : "", cells[i].failures ? cells[i].error : "",
              cells[i].sim_note[0] ? " sim: " : "", cells[i].sim_note);
}

/* summary.csv, the plots and summary.md (printed on stdout too); returns the plots written. */
static int write_results(tb_bench_t *b) {
  char path[4400];
  tb_summarize(b->cells, b->ncells);
  snprintf(path, sizeof path, "%s/summary.csv", b->o.out);
  FILE *f = fopen(path, "w");
  if (f) { tb_write_summary_csv(f, b->cells, b->ncells); fclose(f); }
  else note("tlbbench: cannot write %s: %s\n", path, strerror(errno));
  int plots = tb_write_plots(b->o.out, b->cells, b->ncells);
  snprintf(path, sizeof path, "%s/summary.md", b->o.out);
  f = fopen(path, "w");
  progress_clear();
  FILE *outs[2] = {stdout, f};
  for (int k = 0; k < 2; k++) {
    if (!outs[k]) { note("tlbbench: cannot write %s: %s\n", path, strerror(errno)); continue; }
    write_summary_md(b, outs[k]);
  }
  if (f) fclose(f);
  return plots;
}

int main(int argc, char **argv) {
  static tb_bench_t b; /* large: the allocators' library paths */
  setvbuf(stdout, NULL, _IOLBF, 0);
  progress_tty = isatty(2);
  parse(argc, argv, &b.o);
  if (b.o.list) {
    list_names();
    return 0;
  }
  tb_sweep_opts_t so = sweep_opts(&b.o);
  if (b.o.sweep) {
    if (mkdirs(b.o.out)) { note("tlbbench: cannot create %s: %s\n", b.o.out, strerror(errno)); return 1; }
    return tb_sweep(&so);
  }
  if (find_tools(&b)) return 1;
  /* the matrix; missing pieces are reported here, once, and listed in summary.md */
  size_t cap = tb_nworkloads * tb_nallocs;
  b.cells = calloc(cap, sizeof *b.cells);
  b.skipped = calloc(cap + tb_nallocs, sizeof *b.skipped);
  int rc = 1; /* from here every return goes through `out`, which frees the tables */
  if (!b.cells || !b.skipped) { note("tlbbench: out of memory\n"); goto out; }
  pick_allocators(&b);
  for (size_t i = 0; i < tb_nworkloads; i++)
    if (wl_selected(&b.o, &tb_workloads[i])) add_cells(&b, &tb_workloads[i]);
  if (!b.ncells) { note("tlbbench: nothing to run (no workload x allocator cell is available)\n"); goto out; }
  if (open_runs_csv(&b)) goto out;
  run_all(&b);
  int plots = write_results(&b);
  note("tlbbench: done in %.0f s; %s/{runs.csv,summary.csv,summary.md}, %d plot(s)\n", now_s() - b.t0, b.o.out, plots);
  rc = 0;
  for (size_t i = 0; i < b.ncells; i++)
    if (b.cells[i].nruns == 0) rc = 1;  /* a cell that never ran is a failure of the benchmark */
  if (b.o.scale == TB_SCALE_FULL && !b.o.workloads) { /* --full ends with the whole sweep */
    int sr = tb_sweep(&so);
    if (sr && !rc) rc = sr;
  }
out:
  free(b.cells);
  free(b.skipped);
  return rc;
}
