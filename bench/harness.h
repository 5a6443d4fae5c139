/* tlbbench internals: the matrix (allocators x workloads), running one cell in its own process,
 * parsing what comes back (a workload's RESULT line, tlbsim's JSON), the summary maths and the
 * writers (CSV, Markdown, gnuplot). Names: `tb_` (this module only). */
#ifndef TB_HARNESS_H
#define TB_HARNESS_H

#include <stddef.h>
#include <stdio.h>

#define TB_MAX_ENV 4
#define TB_MAX_KV 96

/* ---- the matrix ---------------------------------------------------------------------------- */
typedef enum { TB_LIB_NONE, TB_LIB_PATH, TB_LIB_TLBPACK } tb_lib_kind_t;

typedef struct tb_alloc_s {
  const char *name;                /* "jemalloc-thp" */
  tb_lib_kind_t kind;
  const char *lib;                 /* for TB_LIB_PATH: the .so preloaded */
  const char *env[TB_MAX_ENV];     /* "KEY=VALUE", NULL-terminated */
  const char *extra_arg;           /* appended to the workload's flags ("--ideal"), or NULL */
  const char *expect_malloc;       /* basename the workload's malloc_from must show, or NULL */
  const char *what;                /* one line for --list */
  int planned;                     /* runs with a placement plan made by profiling a smaller run
                                      of the workload (only where the workload has plan_args) */
  int on_request;                  /* only in the workloads that list it (tb_workload_t.allocs) or
                                      when --allocators names it */
} tb_alloc_t;

enum { TB_SCALE_TINY, TB_SCALE_DEMO, TB_SCALE_FULL, TB_SCALES };

typedef struct tb_workload_s {
  const char *name;                /* "records" */
  const char *prog;                /* "wl_records", found in <dir of tlbbench>/bench/ */
  const char *args[TB_SCALES];     /* space-separated flags per scale */
  int ideal_ok;                    /* accepts --ideal */
  int in_demo;
  const char *what;
  /* A workload driving a foreign program: */
  const char *needs;               /* programs that must be on PATH, space-separated, or NULL */
  const char *no_trace;            /* why it records no trace (no traced run, no simulation), or NULL */
  const char *stock;               /* the program links its own malloc: label of the rows without a
                                      preload ("redis-stock"), which measure the stock program */
  int demo_runs;                   /* runs per cell in --demo at the default --runs (0: the same) */
  const char *unit;                /* what one op is, for throughput ("request"), NULL: not shown */
  const char *plan_args;           /* flags of the smaller run `tlbpack profile` makes the plan of
                                      the planned allocators from, or NULL (no planned rows) */
  const char *allocs;              /* the allocators it runs with (comma-separated), NULL: the
                                      scale's selection */
  int gpool[TB_SCALES];            /* free 1 GiB pool pages it wants per scale (0: none); without
                                      one it is skipped with a note */
} tb_workload_t;

extern const tb_alloc_t tb_allocs[];
extern const size_t tb_nallocs;
extern const tb_workload_t tb_workloads[];
extern const size_t tb_nworkloads;

const tb_alloc_t *tb_alloc_find(const char *name);
const tb_workload_t *tb_workload_find(const char *name);
/* Full path of the library an allocator preloads ("" for none) into buf; returns NULL (and a
 * reason in why) when it is missing. tlbpack is looked up in build_dir. */
const char *tb_alloc_lib(const tb_alloc_t *a, const char *build_dir, char *buf, size_t n,
                         const char **why);
/* Replaces a library path (--lib NAME=PATH), for tests and unusual installs. */
int tb_alloc_override(const char *name_eq_path);

/* The plan of a planned allocator for workload w: <wl_dir>/<workload>.plan, made by
 * `<self_dir>/tlbpack profile` over the workload's plan_args run unless the key file beside it
 * says the workload binary, the profiler and the flags are those it was made with. Returns 0
 * with the plan's path and a note saying how it was made, or -1 with the reason in note. */
int tb_plan_path(const tb_workload_t *w, const char *wl_dir, char *path, size_t n);
int tb_plan_make(const tb_workload_t *w, const char *self_dir, const char *wl_dir, double timeout_s,
                 char *path, size_t n, char *note, size_t nn);
/* ---- the 1 GiB pool ------------------------------------------------------------------------ */
/* Grows the 1 GiB hugetlbfs pool to `want` free pages (root). Returns the free pages there are
 * now (possibly fewer than wanted), or -1 with the reason in why when there is none. */
long tb_gpool_reserve(long want, char *why, size_t n);
/* Puts the pool back to the size tb_gpool_reserve found (no-op when it changed nothing). */
void tb_gpool_restore(void);

/* ---- key=value records ------------------------------------------------------------------- */
typedef struct tb_kv_s {
  int n;
  char key[TB_MAX_KV][32];
  char val[TB_MAX_KV][96];
} tb_kv_t;

/* Whether name is one of the comma-separated names in csv (NULL: none). */
int tb_csv_has(const char *csv, const char *name);
/* Finds the line starting "RESULT " in text and splits it. Returns 0, or -1 with a reason. */
int tb_parse_result(const char *text, tb_kv_t *out, const char **why);
const char *tb_kv_get(const tb_kv_t *kv, const char *key);
/* Numeric value of key; returns 0 and sets *v, or -1 (absent, or not a number). */
int tb_kv_num(const tb_kv_t *kv, const char *key, double *v);

/* Numeric value of the first "key": NUMBER in a JSON text (any depth); an object or array
 * value is summed over the numbers it contains (page_table_pages may be per level). */
int tb_json_num(const char *json, const char *key, double *v);

/* ---- simulator figures -------------------------------------------------------------------- */
typedef struct tb_sim_s {
  int ok;
  double accesses, l1_misses, l2_misses, walks, walk_levels, walk_mem_refs;
  double distinct_4k, distinct_2m, pt_pages, est_walk_cycles, prefetch_walks;
  double warmup_accesses;          /* accesses before the measured region (NaN: not reported) */
} tb_sim_t;
/* Fills s from tlbsim's --json output; returns 0, or -1 naming the missing field in why. */
int tb_sim_from_json(const char *json, tb_sim_t *s, const char **why);
double tb_per_k(double x, double accesses);  /* x per 1,000 accesses (NaN when no accesses) */

/* ---- maths ---------------------------------------------------------------------------------- */
double tb_median(const double *v, size_t n);  /* NaN values skipped; NaN when none */
double tb_min(const double *v, size_t n);
double tb_max(const double *v, size_t n);
/* (max - min) / median * 100, NaN when undefined */
double tb_spread_pct(const double *v, size_t n);
/* a / b, NaN when either is NaN or b is 0 */
double tb_ratio(double a, double b);

/* ---- running a process -------------------------------------------------------------------- */
typedef struct tb_proc_s {
  int status;       /* exit code, 128+signal, or -1 when it could not start */
  int timed_out;
  double wall_s;
  char *out;        /* stdout, NUL-terminated (malloc'd) */
  char *err;        /* stderr tail, NUL-terminated (malloc'd) */
} tb_proc_t;
/* Runs argv with the current environment minus every allocator variable, plus env_add
 * ("K=V", NULL-terminated). Kills it after timeout_s. */
int tb_run(char *const argv[], const char *const env_add[], double timeout_s, tb_proc_t *p);
void tb_proc_free(tb_proc_t *p);
/* Directory holding the running executable (build dir), from /proc/self/exe. */
int tb_self_dir(char *buf, size_t n);

/* ---- writing ------------------------------------------------------------------------------ */
/* Writes one CSV field (quoted when it holds a comma, quote, CR/LF or leading/trailing space). */
void tb_csv_field(FILE *f, const char *s);
/* Writes a row of n fields and a newline. */
void tb_csv_row(FILE *f, const char *const *fields, size_t n);
/* Formats a double for tables: "n/a" for NaN, else with the given decimals. */
const char *tb_fmt(char *buf, size_t n, double v, int decimals);

/* ---- one cell of the matrix and the report over all cells -------------------------------- */
#define TB_MAX_RUNS 64

enum { TB_FORK_FIRST, TB_FORK_LATER, TB_FORK_MEM, TB_FORK_E_BEFORE, TB_FORK_E_CHILD, TB_FORK_E_AFTER, TB_FORK_FIGS };
typedef struct tb_cell_s {
  const tb_workload_t *w;
  const tb_alloc_t *a;
  char lib[512];                 /* preloaded library ("" for none) */
  int nruns, failures;
  int skipped;                   /* not run: a resource it needs is missing (listed as such) */
  double ns[TB_MAX_RUNS];        /* ns per op of each good run */
  double rss_kb[TB_MAX_RUNS];    /* peak RSS + hugetlb pages of each good run */
  double hot_entries, hot_floor, hot_pages_4k, hot_bytes;  /* NaN when not measured */
  char tlb_source[64], malloc_from[64], detail[128], error[256];
  char plan[512];                /* planned allocator: the plan file ("" otherwise) */
  char plan_note[512];           /* how the plan was made (or found cached) */
  tb_sim_t sim, nested;          /* ok == 0: not simulated; sim_note says why */
  double traced_ops;             /* ops (queries) in the trace's measured region, from the traced
                                    run's traced_ops; NaN when it does not say (no per-op figures) */
  char sim_note[160];
  /* A foreign program's resident memory at its peak, per good run (NaN: not reported): TLB
   * entries for its anonymous and file-backed memory, Rss + hugetlb pages at that moment. */
  double res_anon[TB_MAX_RUNS], res_file[TB_MAX_RUNS], res_kb[TB_MAX_RUNS];
  /* The fork rows' figures per good run (NaN: not reported): the first fork's and the later
   * forks' latency (us), memory of parent and child while the child lives (kB), TLB entries of
   * the parent before the first fork, while a child lives, and after the last has exited. */
  double fork_fig[TB_FORK_FIGS][TB_MAX_RUNS];
  /* Memory operations per CPU second of the process, per good run, where the workload reports
   * it (ops_per_cpu_s: churn-sizes-mt); NaN otherwise. */
  double cpu_rate[TB_MAX_RUNS];
  /* filled by tb_summarize */
  double ns_med, ns_spread, rss_med;
  double res_anon_med, res_file_med, res_total_med, res_kb_med;
} tb_cell_t;

/* Records a good run's RESULT into the cell. */
void tb_cell_add_run(tb_cell_t *c, const tb_kv_t *kv);
void tb_cell_init(tb_cell_t *c, const tb_workload_t *w, const tb_alloc_t *a);
void tb_summarize(tb_cell_t *cells, size_t n);
/* The allocator column of c as reports show it: "glibc", or for a row without a preload of a
 * program that links its own malloc "redis-stock (glibc row: no preload, malloc from ...)". */
const char *tb_alloc_label(const tb_cell_t *c, char *buf, size_t n);
/* The cell of the same workload for allocator name, or NULL. */
const tb_cell_t *tb_peer(const tb_cell_t *cells, size_t n, const tb_cell_t *c, const char *name);

void tb_write_summary_csv(FILE *f, const tb_cell_t *cells, size_t n);
void tb_write_markdown(FILE *f, const tb_cell_t *cells, size_t n);
/* One line naming the machine and the date of the run: CPU model, CPUs online, kernel release,
 * the default-size hugetlbfs pool and the UTC time. */
void tb_write_machine(FILE *f);
/* The real programs' table (TLB entries for their resident memory); nothing when none ran. */
void tb_write_resident(FILE *f, const tb_cell_t *cells, size_t n);
/* The fork rows' table (latency, memory, TLB entries around the fork); nothing when none ran. */
void tb_write_fork(FILE *f, const tb_cell_t *cells, size_t n);
/* The workloads whose every run is shown (tb_write_runs), comma-separated. */
extern const char *const tb_per_run_workloads;
/* A table of each run of the cells of the listed workloads (comma-separated names): per
 * allocator the throughput of every run (memory operations per CPU second where the workload
 * reports them, else ops per second from ns_per_op), its median and ratio to jemalloc's, and
 * the peak RSS + hugetlb of every run, its median and ratio; nothing when none of them ran. */
void tb_write_runs(FILE *f, const tb_cell_t *cells, size_t n, const char *workloads);
/* Checks the targets of issues 4 and 5 against the figures; one line each: met / missed / n/a. */
void tb_write_targets(FILE *f, const tb_cell_t *cells, size_t n);
/* The prog-* rows' geomeans against the overall targets on programs (called by tb_write_targets). */
void tb_write_program_targets(FILE *f, const tb_cell_t *cells, size_t n);
/* .dat + .gp + .png per plot in dir; returns the number of PNGs made (0 without gnuplot). */
int tb_write_plots(const char *dir, const tb_cell_t *cells, size_t n);

/* ---- the TLB sweep (harness_sweep.c, tlbbench --sweep) ------------------------------------- */
typedef struct tb_sweep_shape_s {
  const char *name;    /* "one-site" */
  const char *flags;   /* wl_sweep's flags but --heap-kb and --lookups */
  const char *what;
} tb_sweep_shape_t;
extern const tb_sweep_shape_t tb_sweep_shapes[];
extern const size_t tb_sweep_nshapes;
#define TB_SWEEP_HOT_MIN ((size_t)4 << 20) /* the promise on entries holds from this hot set on */
typedef struct tb_sweep_cell_s {
  int ok;              /* ran, and its hot set was counted from pagemap */
  long entries, floor, huge, hugetlb_kb;
  size_t hot_bytes;
  double mem_kb, ns;   /* peak RSS + hugetlb; median ns per lookup */
  char note[160];
} tb_sweep_cell_t;
typedef struct tb_sweep_point_s {
  size_t shape, heap_kb;
  tb_sweep_cell_t cell[4]; /* tlbpack, tlbpack-plan, jemalloc, jemalloc-thp */
  int miss;
  char why[256];
} tb_sweep_point_t;
typedef struct tb_sweep_opts_s {
  const char *out, *allocators, *shapes; /* allocators, shapes: comma-separated, NULL: all */
  size_t max_kb, min_kb; /* min_kb: 0 for the smallest point (512 KiB) */
  int runs, check;      /* check: exit 3 when a point misses the promise */
  unsigned long lookups;
  double timeout_s;
} tb_sweep_opts_t;
/* Whether point p misses tlbpack's promise (1: why says which parts, "; "-separated). */
int tb_sweep_verdict(const tb_sweep_point_t *p, char *why, size_t n);
int tb_sweep(const tb_sweep_opts_t *o);

#endif
