/* The report over all cells: medians, ratios to jemalloc, the summary CSV, the Markdown table,
 * the targets of issues 4 and 5, and the gnuplot plots. */
#define _GNU_SOURCE
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void tb_cell_init(tb_cell_t *c, const tb_workload_t *w, const tb_alloc_t *a) {
  memset(c, 0, sizeof *c);
  c->w = w;
  c->a = a;
  c->hot_entries = c->hot_floor = c->hot_pages_4k = c->hot_bytes = NAN;
  c->ns_med = c->ns_spread = c->rss_med = NAN;
  c->res_anon_med = c->res_file_med = c->res_total_med = c->res_kb_med = NAN;
  c->traced_ops = NAN;
}

void tb_cell_add_run(tb_cell_t *c, const tb_kv_t *kv) {
  if (c->nruns == TB_MAX_RUNS) return;
  double v, h;
  c->ns[c->nruns] = tb_kv_num(kv, "ns_per_op", &v) == 0 ? v : NAN;
  double rss = tb_kv_num(kv, "peak_rss_kb", &v) == 0 ? v : NAN;
  if (tb_kv_num(kv, "hugetlb_kb", &h) == 0 && h > 0) rss += h;  /* hugetlbfs pages are not in RSS */
  c->rss_kb[c->nruns] = rss;
  double ra, rf, rr, rh;
  int res = tb_kv_num(kv, "res_entries_anon", &ra) == 0 && tb_kv_num(kv, "res_entries_file", &rf) == 0 &&
            tb_kv_num(kv, "res_rss_kb", &rr) == 0 && tb_kv_num(kv, "res_hugetlb_kb", &rh) == 0;
  c->res_anon[c->nruns] = res ? ra : NAN;
  c->res_file[c->nruns] = res ? rf : NAN;
  c->res_kb[c->nruns] = res ? rr + rh : NAN;
  static const char *fk[TB_FORK_FIGS] = {"fork_first_us", "fork_later_us", "fork_mem_kb",
                                         "entries_before", "entries_child", "entries_after"};
  for (int i = 0; i < TB_FORK_FIGS; i++)
    c->fork_fig[i][c->nruns] = tb_kv_num(kv, fk[i], &v) == 0 && v >= 0 ? v : NAN;
  c->cpu_rate[c->nruns] = tb_kv_num(kv, "ops_per_cpu_s", &v) == 0 && v > 0 ? v : NAN;
  c->nruns++;
  double *dst[] = {&c->hot_entries, &c->hot_floor, &c->hot_pages_4k, &c->hot_bytes};
  const char *keys[] = {"hot_entries", "hot_floor", "hot_pages_4k", "hot_bytes"};
  for (int i = 0; i < 4; i++) *dst[i] = tb_kv_num(kv, keys[i], &v) == 0 && v >= 0 ? v : NAN;
  const char *s;
  snprintf(c->tlb_source, sizeof c->tlb_source, "%s", (s = tb_kv_get(kv, "tlb_source")) ? s : "none");
  snprintf(c->malloc_from, sizeof c->malloc_from, "%s", (s = tb_kv_get(kv, "malloc_from")) ? s : "?");
  c->detail[0] = 0;
  const char *dk[] = {"layout", "warm_method", "hit_rate"};
  for (int i = 0; i < 3; i++)
    if ((s = tb_kv_get(kv, dk[i])) && strcmp(s, "malloc") != 0 && strcmp(s, "none") != 0) {
      size_t l = strlen(c->detail);
      snprintf(c->detail + l, sizeof c->detail - l, "%s%s=%s", l ? " " : "", dk[i], s);
    }
  if (c->w->stock && c->a->kind == TB_LIB_NONE)
    snprintf(c->detail, sizeof c->detail, "%s: no preload; the program's own malloc (%s)", c->w->stock,
             c->malloc_from);
}

const char *tb_alloc_label(const tb_cell_t *c, char *buf, size_t n) {
  if (c->w->stock && c->a->kind == TB_LIB_NONE)
    snprintf(buf, n, "%s (%s row: no preload, malloc from %s)", c->w->stock, c->a->name,
             c->nruns ? c->malloc_from : "its own linked library");
  else
    snprintf(buf, n, "%s", c->a->name);
  return buf;
}

void tb_summarize(tb_cell_t *cells, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tb_cell_t *c = &cells[i];
    c->ns_med = tb_median(c->ns, (size_t)c->nruns);
    c->ns_spread = tb_spread_pct(c->ns, (size_t)c->nruns);
    c->rss_med = tb_median(c->rss_kb, (size_t)c->nruns);
    double tot[TB_MAX_RUNS];
    for (int r = 0; r < c->nruns; r++) tot[r] = c->res_anon[r] + c->res_file[r];
    c->res_anon_med = tb_median(c->res_anon, (size_t)c->nruns);
    c->res_file_med = tb_median(c->res_file, (size_t)c->nruns);
    c->res_total_med = tb_median(tot, (size_t)c->nruns);
    c->res_kb_med = tb_median(c->res_kb, (size_t)c->nruns);
  }
}

const tb_cell_t *tb_peer(const tb_cell_t *cells, size_t n, const tb_cell_t *c, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (cells[i].w == c->w && !strcmp(cells[i].a->name, name)) return &cells[i];
  return NULL;
}

/* ---- derived figures ---------------------------------------------------------------------- */
enum { F_L1, F_L2, F_WALKS, F_LEVELS_PER_WALK, F_REFS, F_LEVELS, F_PF_WALKS };
static double simf(const tb_sim_t *s, int what) {
  if (!s->ok) return NAN;
  switch (what) {
    case F_L1: return tb_per_k(s->l1_misses, s->accesses);
    case F_L2: return tb_per_k(s->l2_misses, s->accesses);
    case F_WALKS: return tb_per_k(s->walks, s->accesses);
    case F_LEVELS_PER_WALK: return tb_ratio(s->walk_levels, s->walks);
    case F_REFS: return tb_per_k(s->walk_mem_refs, s->accesses);
    case F_LEVELS: return tb_per_k(s->walk_levels, s->accesses);
    case F_PF_WALKS: return tb_per_k(s->prefetch_walks, s->accesses);
  }
  return NAN;
}
/* baseline / this: how many times fewer this cell needs (a saving > 1 is good). None left in
 * the measured region against some for the baseline: infinitely fewer. */
static double saved(const tb_cell_t *base, const tb_cell_t *c, int nested, int what) {
  if (!base) return NAN;
  const tb_sim_t *b = nested ? &base->nested : &base->sim, *s = nested ? &c->nested : &c->sim;
  double x = simf(b, what), y = simf(s, what);
  if (y == 0 && x > 0) return INFINITY;
  return tb_ratio(x, y);
}

#define NUM(v, d) tb_fmt(bufs[k], sizeof bufs[k], (v), (d)), k++

/* A simulator count per op of the trace's measured region (NaN when the workload does not say
 * how many ops it holds, or nothing was simulated). */
static double per_op(const tb_cell_t *c, double count) {
  return c->sim.ok && c->traced_ops > 0 ? count / c->traced_ops : NAN;
}

void tb_write_summary_csv(FILE *f, const tb_cell_t *cells, size_t n) {
  static const char *hdr[] = {
    "workload", "allocator", "library", "runs", "failures", "ns_per_op_median", "ns_per_op_min",
    "ns_per_op_max", "spread_pct", "time_vs_jemalloc", "peak_rss_kb", "rss_vs_jemalloc",
    "hot_bytes", "hot_entries", "hot_floor", "entries_vs_floor", "hot_pages_4k", "tlb_source",
    "malloc_from", "detail", "sim_accesses", "l1_miss_per_1k", "l2_miss_per_1k", "walks_per_1k",
    "walk_levels_per_walk", "walk_refs_per_1k", "prefetch_walks_per_1k", "distinct_pages_4k", "distinct_pages_2m",
    "page_table_pages", "nested_l2_miss_per_1k", "nested_walks_per_1k",
    "nested_walk_levels_per_walk", "nested_walk_refs_per_1k", "entries_saved_vs_jemalloc",
    "l2_misses_saved_vs_jemalloc", "walks_saved_vs_jemalloc", "walk_levels_saved_vs_jemalloc",
    "walk_refs_saved_vs_jemalloc", "nested_walk_refs_saved_vs_jemalloc", "sim_warmup_accesses",
    "resident_entries", "resident_entries_anon", "resident_entries_file", "resident_kb",
    "resident_entries_vs_jemalloc", "sim_l2_misses_per_op", "sim_walks_per_op", "sim_note", "error"};
  const size_t nh = sizeof hdr / sizeof hdr[0];
  tb_csv_row(f, hdr, nh);
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc");
    char bufs[64][48];
    const char *row[64];
    int k = 0;
    char runs[16], fails[16];
    snprintf(runs, sizeof runs, "%d", c->nruns);
    snprintf(fails, sizeof fails, "%d", c->failures);
    size_t r = 0;
    row[r++] = c->w->name; row[r++] = c->a->name; row[r++] = c->lib; row[r++] = runs; row[r++] = fails;
    row[r++] = NUM(c->ns_med, 2);
    row[r++] = NUM(tb_min(c->ns, (size_t)c->nruns), 2);
    row[r++] = NUM(tb_max(c->ns, (size_t)c->nruns), 2);
    row[r++] = NUM(c->ns_spread, 1);
    row[r++] = NUM(je ? tb_ratio(c->ns_med, je->ns_med) : NAN, 3);
    row[r++] = NUM(c->rss_med, 0);
    row[r++] = NUM(je ? tb_ratio(c->rss_med, je->rss_med) : NAN, 3);
    row[r++] = NUM(c->hot_bytes, 0);
    row[r++] = NUM(c->hot_entries, 0);
    row[r++] = NUM(c->hot_floor, 0);
    row[r++] = NUM(tb_ratio(c->hot_entries, c->hot_floor), 2);
    row[r++] = NUM(c->hot_pages_4k, 0);
    row[r++] = c->tlb_source; row[r++] = c->malloc_from; row[r++] = c->detail;
    row[r++] = NUM(c->sim.ok ? c->sim.accesses : NAN, 0);
    row[r++] = NUM(simf(&c->sim, F_L1), 2);
    row[r++] = NUM(simf(&c->sim, F_L2), 2);
    row[r++] = NUM(simf(&c->sim, F_WALKS), 2);
    row[r++] = NUM(simf(&c->sim, F_LEVELS_PER_WALK), 2);
    row[r++] = NUM(simf(&c->sim, F_REFS), 2);
    row[r++] = NUM(simf(&c->sim, F_PF_WALKS), 2);
    row[r++] = NUM(c->sim.ok ? c->sim.distinct_4k : NAN, 0);
    row[r++] = NUM(c->sim.ok ? c->sim.distinct_2m : NAN, 0);
    row[r++] = NUM(c->sim.ok ? c->sim.pt_pages : NAN, 0);
    row[r++] = NUM(simf(&c->nested, F_L2), 2);
    row[r++] = NUM(simf(&c->nested, F_WALKS), 2);
    row[r++] = NUM(simf(&c->nested, F_LEVELS_PER_WALK), 2);
    row[r++] = NUM(simf(&c->nested, F_REFS), 2);
    row[r++] = NUM(je ? tb_ratio(je->hot_entries, c->hot_entries) : NAN, 2);
    row[r++] = NUM(saved(je, c, 0, F_L2), 2);
    row[r++] = NUM(saved(je, c, 0, F_WALKS), 2);
    row[r++] = NUM(saved(je, c, 0, F_LEVELS), 2);
    row[r++] = NUM(saved(je, c, 0, F_REFS), 2);
    row[r++] = NUM(saved(je, c, 1, F_REFS), 2);
    row[r++] = NUM(c->sim.ok ? c->sim.warmup_accesses : NAN, 0);
    row[r++] = NUM(c->res_total_med, 0);
    row[r++] = NUM(c->res_anon_med, 0);
    row[r++] = NUM(c->res_file_med, 0);
    row[r++] = NUM(c->res_kb_med, 0);
    row[r++] = NUM(je ? tb_ratio(c->res_total_med, je->res_total_med) : NAN, 3);
    row[r++] = NUM(per_op(c, c->sim.l2_misses), 1);
    row[r++] = NUM(per_op(c, c->sim.walks), 1);
    row[r++] = c->sim_note; row[r++] = c->error;
    tb_csv_row(f, row, r);
  }
}

/* Real programs: the TLB entries their resident memory needs at their peak, per allocator. */
void tb_write_resident(FILE *f, const tb_cell_t *cells, size_t n) {
  int any = 0;
  for (size_t i = 0; i < n; i++) any |= !isnan(cells[i].res_total_med);
  if (!any) return;
  fprintf(f, "\n### Real programs: TLB entries for their resident memory\n\n"
             "| program | allocator | throughput (median) | time x je | RSS + hugetlb at peak MiB | x je "
             "| TLB entries: anonymous | file-backed | total | x je | sim L2 misses / op | walks / op |\n"
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    if (isnan(c->res_total_med)) continue;
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc");
    char b[10][32], label[160];
    tb_alloc_label(c, label, sizeof label);
    fprintf(f, "| %s | %s | %s %s/s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c->w->name, label,
            tb_fmt(b[0], 32, tb_ratio(1e9, c->ns_med), 0), c->w->unit ? c->w->unit : "op",
            tb_fmt(b[1], 32, je ? tb_ratio(c->ns_med, je->ns_med) : NAN, 2),
            tb_fmt(b[2], 32, c->res_kb_med / 1024.0, 1),
            tb_fmt(b[3], 32, je ? tb_ratio(c->res_kb_med, je->res_kb_med) : NAN, 2),
            tb_fmt(b[4], 32, c->res_anon_med, 0), tb_fmt(b[5], 32, c->res_file_med, 0),
            tb_fmt(b[6], 32, c->res_total_med, 0),
            tb_fmt(b[7], 32, je ? tb_ratio(c->res_total_med, je->res_total_med) : NAN, 3),
            tb_fmt(b[8], 32, per_op(c, c->sim.l2_misses), 1), tb_fmt(b[9], 32, per_op(c, c->sim.walks), 1));
  }
  fprintf(f, "\nTLB entries to map everything the program holds resident, from its /proc/PID/smaps at its "
             "peak (data loaded and worked on, before it frees anything): one per huge page (hugetlbfs by "
             "its page size, THP by 2 MiB) and one per other resident 4 KiB page; anonymous memory (the "
             "heap the allocator places) and file-backed (code, libraries) apart. Every program's data spans "
             "more than the L2 TLB reaches with 4 KiB pages (3072 x 4 KiB = 12 MiB). The memory column is "
             "Rss + hugetlb pages at that moment (peak RSS in the main table is VmHWM + hugetlb). Per-op "
             "simulator columns: the traced run's L2 TLB misses and page walks (tlbsim, measured region) "
             "divided by the ops that region holds, where the workload says (sqlite-lib: queries).\n");
}

void tb_write_fork(FILE *f, const tb_cell_t *cells, size_t n) {
  int any = 0;
  for (size_t i = 0; i < n; i++) any |= cells[i].nruns > 0 && !isnan(tb_median(cells[i].fork_fig[TB_FORK_FIRST], (size_t)cells[i].nruns));
  if (!any) return;
  fprintf(f, "\n### Fork: latency, memory and TLB entries around a background save\n\n"
             "| workload | allocator | first fork ms (each run) | later forks ms | x je | parent + child MiB while it lives | x je "
             "| TLB entries before the first fork | while a child lives | after it exited | after / before |\n"
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    size_t nr = (size_t)c->nruns;
    if (nr == 0 || isnan(tb_median(c->fork_fig[TB_FORK_FIRST], nr))) continue;
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc");
    double med[TB_FORK_FIGS], jm[TB_FORK_FIGS];
    for (int k = 0; k < TB_FORK_FIGS; k++) {
      med[k] = tb_median(c->fork_fig[k], nr);
      jm[k] = je && je->nruns ? tb_median(je->fork_fig[k], (size_t)je->nruns) : NAN;
    }
    char first[200] = "", b[9][32];
    for (size_t r = 0, l = 0; r < nr && l < sizeof first; r++)
      l += (size_t)snprintf(first + l, sizeof first - l, "%s%.1f", r ? ", " : "", c->fork_fig[TB_FORK_FIRST][r] / 1e3);
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c->w->name, c->a->name, first,
            tb_fmt(b[0], 32, med[TB_FORK_LATER] / 1e3, 2), tb_fmt(b[1], 32, tb_ratio(med[TB_FORK_LATER], jm[TB_FORK_LATER]), 2),
            tb_fmt(b[2], 32, med[TB_FORK_MEM] / 1024, 1), tb_fmt(b[3], 32, tb_ratio(med[TB_FORK_MEM], jm[TB_FORK_MEM]), 2),
            tb_fmt(b[4], 32, med[TB_FORK_E_BEFORE], 0), tb_fmt(b[5], 32, med[TB_FORK_E_CHILD], 0),
            tb_fmt(b[6], 32, med[TB_FORK_E_AFTER], 0), tb_fmt(b[7], 32, tb_ratio(med[TB_FORK_E_AFTER], med[TB_FORK_E_BEFORE]), 2));
  }
  fprintf(f, "\nFork latency: the fork() call in the parent (the first fork apart: tlbpack copies its pool "
             "pages off the pool then). Memory: the Pss + hugetlb pages of parent and child together while the "
             "child lives, the most over the rounds. TLB entries: the parent's /proc/PID/smaps, one per huge "
             "page and one per other 4 KiB page, before the first fork, while a child lives (after the parent's "
             "writes) and after the last child has exited and the parent has gone on writing for --settle-ms. "
             "Medians of the runs.\n");
}

/* A run's throughput: memory operations per CPU second where reported, else ops per second. */
static double run_rate(const tb_cell_t *c, int r) {
  return c->cpu_rate[r] > 0 ? c->cpu_rate[r] : tb_ratio(1e9, c->ns[r]);
}
/* The median of a cell's run throughputs (NaN with no run). */
static double median_rate(const tb_cell_t *c) {
  double v[TB_MAX_RUNS];
  for (int r = 0; r < c->nruns; r++) v[r] = run_rate(c, r);
  return c->nruns ? tb_median(v, (size_t)c->nruns) : NAN;
}

void tb_write_runs(FILE *f, const tb_cell_t *cells, size_t n, const char *workloads) {
  int any = 0;
  for (size_t i = 0; i < n; i++) any |= cells[i].nruns > 0 && tb_csv_has(workloads, cells[i].w->name);
  if (!any) return;
  fprintf(f, "\n### Each run: throughput and peak memory\n\n"
             "| workload | allocator | throughput | each run | median | x je | peak RSS + hugetlb MiB, each run "
             "| median | x je |\n"
             "|---|---|---|---|---:|---:|---|---:|---:|\n");
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    if (c->nruns == 0 || !tb_csv_has(workloads, c->w->name)) continue;
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc");
    double rate[TB_MAX_RUNS];
    int cpu = 0;
    for (int r = 0; r < c->nruns; r++) rate[r] = run_rate(c, r), cpu |= c->cpu_rate[r] > 0;
    double med = median_rate(c), je_med = je ? median_rate(je) : NAN;
    /* one scale per workload, from its largest median: "10.68" M memory ops, "213.4" k queries */
    double top = 0;
    for (size_t j = 0; j < n; j++) {
      double m = cells[j].w == c->w && cells[j].nruns ? median_rate(&cells[j]) : 0;
      if (m > top) top = m;
    }
    double scale = top >= 1e6 ? 1e6 : top >= 1e4 ? 1e3 : 1;
    int dec = scale == 1e6 ? 2 : 1;
    char unit[96], runs[400] = "", mem[400] = "", b[4][32], label[160];
    snprintf(unit, sizeof unit, "%s%s", scale == 1e6 ? "M " : scale == 1e3 ? "k " : "",
             cpu ? "memory ops / CPU s" : c->w->unit ? c->w->unit : "op");
    if (!cpu) snprintf(unit + strlen(unit), sizeof unit - strlen(unit), "%s", " / s");
    for (int r = 0, l = 0, m = 0; r < c->nruns; r++) {
      if (l < (int)sizeof runs)
        l += snprintf(runs + l, sizeof runs - (size_t)l, "%s%s", r ? ", " : "", tb_fmt(b[0], 32, rate[r] / scale, dec));
      if (m < (int)sizeof mem)
        m += snprintf(mem + m, sizeof mem - (size_t)m, "%s%s", r ? ", " : "", tb_fmt(b[0], 32, c->rss_kb[r] / 1024, 1));
    }
    if (c->failures) {
      size_t l = strlen(runs);
      snprintf(runs + l, sizeof runs - l, " (%d failed)", c->failures);
    }
    tb_alloc_label(c, label, sizeof label);
    fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c->w->name, label, unit, runs,
            tb_fmt(b[0], 32, med / scale, dec), tb_fmt(b[1], 32, tb_ratio(med, je_med), 2), mem,
            tb_fmt(b[2], 32, c->rss_med / 1024, 1), tb_fmt(b[3], 32, je ? tb_ratio(c->rss_med, je->rss_med) : NAN, 2));
  }
  fprintf(f, "\nEvery good run, in the order they ran (runs are interleaved across allocators). Throughput: "
             "memory operations (each malloc and each free) per second of the process's CPU time (user + sys, "
             "getrusage) where the workload counts them, else the workload's ops per second of its timed phase; "
             "x je is the median over jemalloc's (above 1: more per second). Memory: peak RSS (VmHWM) + hugetlb "
             "pages of the process that holds the data (the program itself for a real program); x je is the median "
             "over jemalloc's (above 1: more memory).\n");
}

void tb_write_machine(FILE *f) {
  char model[256] = "unknown CPU", line[512];
  FILE *c = fopen("/proc/cpuinfo", "r");
  while (c && fgets(line, sizeof line, c)) {
    char *v = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && v) {
      snprintf(model, sizeof model, "%s", v + 2);
      model[strcspn(model, "\n")] = 0;
      break;
    }
  }
  if (c) fclose(c);
  long pool = -1;
  FILE *p = fopen("/proc/sys/vm/nr_hugepages", "r");
  if (p && fscanf(p, "%ld", &pool) != 1) pool = -1;
  if (p) fclose(p);
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  char when[64] = "unknown date";
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
  fprintf(f, "Machine: %s, %ld CPUs online, Linux %s, hugetlbfs pool %ld pages of the default size; "
             "written %s.\n\n", model, sysconf(_SC_NPROCESSORS_ONLN), u.release, pool, when);
}

void tb_write_markdown(FILE *f, const tb_cell_t *cells, size_t n) {
  fprintf(f, "| workload | allocator | ns/op (median) | spread | time x je | peak RSS MiB | RSS x je "
             "| TLB entries (floor) | L2 TLB miss/1k | walks/1k | levels/walk | walk refs/1k "
             "| nested refs/1k | saved vs je: entries / L2 miss / walk refs |\n");
  fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc");
    char b[16][32], label[160];
    char ent[80] = "n/a";
    tb_alloc_label(c, label, sizeof label);
    if (!isnan(c->hot_entries))
      snprintf(ent, sizeof ent, "%.0f (%.0f)", c->hot_entries, c->hot_floor);
    else if (!isnan(c->hot_floor))
      snprintf(ent, sizeof ent, "n/a: %s (%.0f)", c->tlb_source, c->hot_floor);
    if (c->nruns == 0) {
      fprintf(f, "| %s | %s | failed: %s | | | | | | | | | | | |\n", c->w->name, label,
              c->error[0] ? c->error : "no good run");
      continue;
    }
    fprintf(f, "| %s | %s | %s | %s%% | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s |\n",
            c->w->name, label, tb_fmt(b[0], 32, c->ns_med, 1), tb_fmt(b[1], 32, c->ns_spread, 0),
            tb_fmt(b[2], 32, je ? tb_ratio(c->ns_med, je->ns_med) : NAN, 2),
            tb_fmt(b[3], 32, c->rss_med / 1024.0, 1),
            tb_fmt(b[4], 32, je ? tb_ratio(c->rss_med, je->rss_med) : NAN, 2), ent,
            tb_fmt(b[5], 32, simf(&c->sim, F_L2), 2), tb_fmt(b[6], 32, simf(&c->sim, F_WALKS), 2),
            tb_fmt(b[7], 32, simf(&c->sim, F_LEVELS_PER_WALK), 2),
            tb_fmt(b[8], 32, simf(&c->sim, F_REFS), 2), tb_fmt(b[9], 32, simf(&c->nested, F_REFS), 2),
            tb_fmt(b[10], 32, je ? tb_ratio(je->hot_entries, c->hot_entries) : NAN, 1),
            tb_fmt(b[11], 32, saved(je, c, 0, F_L2), 1), tb_fmt(b[12], 32, saved(je, c, 0, F_REFS), 1));
  }
  tb_write_resident(f, cells, n);
  tb_write_fork(f, cells, n);
  tb_write_runs(f, cells, n, tb_per_run_workloads);
  /* a workload around a program that links its own malloc: say what its rows measure, once */
  for (size_t i = 0; i < n; i++) {
    const tb_workload_t *w = cells[i].w;
    size_t j;
    for (j = 0; j < i && cells[j].w != w; j++) {}
    if (j < i || !w->stock) continue;
    fprintf(f, "\n%s: the rows without a preload (%s) are the stock program with the malloc it links "
               "itself (GLIBC_TUNABLES have no effect on it); every other row preloads its allocator into the "
               "server only (the client runs without a preload). ns/op = 1e9 / requests per second. "
               "Hot-set TLB entries n/a (the hot set of a foreign program is unknown); the entries its "
               "resident memory needs are in the real programs' table.%s%s%s\n",
            w->name, w->stock, w->no_trace ? " No simulator columns: " : "", w->no_trace ? w->no_trace : "",
            w->no_trace ? "." : "");
    fprintf(f, "\n%s requests/s (median of runs, = 1e9 / ns/op):", w->name);
    for (size_t j = i; j < n; j++) {
      if (cells[j].w != w) continue;
      char b[32];
      fprintf(f, "%s %s %s", j > i ? ";" : "", cells[j].a->kind == TB_LIB_NONE ? w->stock : cells[j].a->name,
              tb_fmt(b, sizeof b, tb_ratio(1e9, cells[j].ns_med), 0));
      if (cells[j].a->kind == TB_LIB_NONE && strcmp(cells[j].a->name, "glibc")) fprintf(f, " (%s row)", cells[j].a->name);
    }
    fprintf(f, ".\n");
  }
}

/* ---- targets ------------------------------------------------------------------------------ */
/* A value that reads as its limit at two decimals gets up to two more, so that a line never
 * says "[MISSED] ... = 1.05 (target <= 1.05)" for 1.0503. */
static void target(FILE *f, const char *what, const char *wl, double v, double limit, int at_least) {
  const char *verdict = isnan(v) ? "n/a" : (at_least ? v >= limit : v <= limit) ? "met" : "MISSED";
  char b[32], l[32];
  int d = 2;
  while (d < 4 && v != limit && !strcmp(tb_fmt(b, sizeof b, v, d), tb_fmt(l, sizeof l, limit, d))) d++;
  fprintf(f, "- [%s] %s: %s = %s (target %s %.2f)\n", verdict, wl, what, tb_fmt(b, sizeof b, v, d),
          at_least ? ">=" : "<=", limit);
}

void tb_write_targets(FILE *f, const tb_cell_t *cells, size_t n) {
  int any = 0;
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    if (strcmp(c->a->name, "tlbpack") != 0) continue;
    any = 1;
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc"), *jt = tb_peer(cells, n, c, "jemalloc-thp");
    const char *wl = c->w->name;
    int core = !strcmp(wl, "records") || !strcmp(wl, "records-big") || !strcmp(wl, "index") ||
               !strcmp(wl, "chase") || !strcmp(wl, "chase-warm");
    if (core) {
      target(f, "L2 TLB misses, jemalloc / tlbpack", wl, saved(je, c, 0, F_L2), 10, 1);
      target(f, "walk memory refs, jemalloc / tlbpack", wl, saved(je, c, 0, F_REFS), 10, 1);
      if (c->sim.ok && c->sim.walks == 0 && c->sim.accesses > 0)
        fprintf(f, "- [met] %s: walk levels per walk (tlbpack): no walk in the measured region (target <= 3.00)\n", wl);
      else
        target(f, "walk levels per walk (tlbpack)", wl, simf(&c->sim, F_LEVELS_PER_WALK), 3, 0);
      target(f, "L2 TLB misses, jemalloc-thp / tlbpack", wl, saved(jt, c, 0, F_L2), 2, 1);
    }
    if (!strcmp(wl, "records")) {
      const tb_cell_t *id = tb_peer(cells, n, c, "ideal");
      target(f, "TLB entries / floor (site mode)", wl, tb_ratio(c->hot_entries, c->hot_floor), 1.5, 0);
      target(f, "TLB entries, jemalloc-thp / tlbpack", wl, jt ? tb_ratio(jt->hot_entries, c->hot_entries) : NAN, 20, 1);
      target(f, "ns per lookup, tlbpack / ideal layout", wl, id ? tb_ratio(c->ns_med, id->ns_med) : NAN, 1.1, 0);
      target(f, "ns per lookup, tlbpack / jemalloc (must be < 1)", wl, je ? tb_ratio(c->ns_med, je->ns_med) : NAN, 0.999, 0);
      const tb_cell_t *ar = tb_peer(cells, n, c, "tlbpack-arena");
      if (ar) {
        target(f, "TLB entries / floor (tlbpack-arena)", wl, tb_ratio(ar->hot_entries, ar->hot_floor), 1.5, 0);
        target(f, "ns per lookup, tlbpack-arena / ideal layout", wl, id ? tb_ratio(ar->ns_med, id->ns_med) : NAN, 1.1, 0);
      }
      const tb_cell_t *pl = tb_peer(cells, n, c, "tlbpack-plan");
      if (pl) {
        target(f, "TLB entries / floor (tlbpack-plan)", wl, tb_ratio(pl->hot_entries, pl->hot_floor), 1.1, 0);
        target(f, "ns per lookup, tlbpack-plan / ideal layout", wl, id ? tb_ratio(pl->ns_med, id->ns_med) : NAN, 1.1, 0);
      }
    }
    if (!strcmp(wl, "chase-warm")) {
      const tb_cell_t *cold = NULL;
      for (size_t j = 0; j < n; j++)
        if (!strcmp(cells[j].w->name, "chase") && cells[j].a == c->a) cold = &cells[j];
      target(f, "ns per step with warming / without (tlbpack)", wl, cold ? tb_ratio(c->ns_med, cold->ns_med) : NAN, 0.999, 0);
    }
    /* ns_per_op is CPU time where the workload counts CPU time (churn-sizes-mt) */
    target(f, c->nruns && c->cpu_rate[0] > 0 ? "CPU time per memory op, tlbpack / jemalloc" : "wall time, tlbpack / jemalloc",
           wl, je ? tb_ratio(c->ns_med, je->ns_med) : NAN, 1.05, 0);
    target(f, "peak RSS, tlbpack / jemalloc", wl, je ? tb_ratio(c->rss_med, je->rss_med) : NAN, 1.2, 0);
  }
  if (!any) fprintf(f, "- [n/a] no tlbpack cell ran (libtlbpack.so missing or not selected): no target can be checked\n");
  tb_write_program_targets(f, cells, n);
}

/* Programs in general (the prog-* rows): geomeans over the programs that ran under tlbpack and
 * jemalloc (and tcmalloc, for its time), against issue 11's overall targets: time geomean at or
 * under tcmalloc's, no program over 1.1x jemalloc's time, memory geomean at or under jemalloc's. */
void tb_write_program_targets(FILE *f, const tb_cell_t *cells, size_t n) {
  double lt = 0, lm = 0, ltc = 0, worst = NAN;
  int np = 0, ntc = 0;
  const char *worst_wl = "";
  for (size_t i = 0; i < n; i++) {
    const tb_cell_t *c = &cells[i];
    if (strcmp(c->a->name, "tlbpack") != 0 || strncmp(c->w->name, "prog-", 5) != 0) continue;
    const tb_cell_t *je = tb_peer(cells, n, c, "jemalloc"), *tc = tb_peer(cells, n, c, "tcmalloc");
    double t = je ? tb_ratio(c->ns_med, je->ns_med) : NAN, m = je ? tb_ratio(c->rss_med, je->rss_med) : NAN;
    if (isnan(t) || isnan(m) || t <= 0 || m <= 0) continue;
    np++;
    lt += log(t);
    lm += log(m);
    if (isnan(worst) || t > worst) worst = t, worst_wl = c->w->name;
    double tt = tc ? tb_ratio(tc->ns_med, je->ns_med) : NAN;
    if (!isnan(tt) && tt > 0) ntc++, ltc += log(tt);
  }
  if (np == 0) return;
  char what[128];
  snprintf(what, sizeof what, "time geomean over %d programs, tlbpack / jemalloc", np);
  target(f, what, "programs", exp(lt / np), 1.0, 0);
  if (ntc == np) {
    snprintf(what, sizeof what, "time geomean over %d programs, tlbpack / tcmalloc", np);
    target(f, what, "programs", exp((lt - ltc) / np), 1.0, 0);
  } else {
    fprintf(f, "- [n/a] programs: time geomean, tlbpack / tcmalloc: tcmalloc did not run every program\n");
  }
  snprintf(what, sizeof what, "slowest program (%s), tlbpack / jemalloc", worst_wl);
  target(f, what, "programs", worst, 1.1, 0);
  snprintf(what, sizeof what, "peak RSS + hugetlb geomean over %d programs, tlbpack / jemalloc", np);
  target(f, what, "programs", exp(lm / np), 1.0, 0);
}

/* ---- plots -------------------------------------------------------------------------------- */
typedef double (*metric_fn)(const tb_cell_t *c);
static double m_walks(const tb_cell_t *c) { return simf(&c->sim, F_WALKS); }
static double m_entries(const tb_cell_t *c) { return c->hot_entries; }
static double m_time(const tb_cell_t *c) { return c->ns_med; }
static double m_resident(const tb_cell_t *c) { return c->res_total_med; }
static double m_walks_per_op(const tb_cell_t *c) { return per_op(c, c->sim.walks); }

static int plot_one(const char *dir, const char *name, const char *ylabel, metric_fn m,
                    const tb_cell_t *cells, size_t n) {
  const tb_workload_t *wls[64];
  const tb_alloc_t *als[64];
  size_t nw = 0, na = 0;
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < n; i++) {
    double v = m(&cells[i]);
    if (isnan(v)) continue;
    if (v > 0 && v < lo) lo = v;
    if (v > hi) hi = v;
    size_t j;
    for (j = 0; j < nw && wls[j] != cells[i].w; j++) {}
    if (j == nw && nw < 64) wls[nw++] = cells[i].w;
    for (j = 0; j < na && als[j] != cells[i].a; j++) {}
    if (j == na && na < 64) als[na++] = cells[i].a;
  }
  if (!nw) return 0;  /* nothing measured for this metric */
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.dat", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  fprintf(f, "workload");
  for (size_t a = 0; a < na; a++) fprintf(f, " %s", als[a]->name);
  fprintf(f, "\n");
  for (size_t w = 0; w < nw; w++) {
    fprintf(f, "%s", wls[w]->name);
    for (size_t a = 0; a < na; a++) {
      double v = NAN;
      for (size_t i = 0; i < n; i++)
        if (cells[i].w == wls[w] && cells[i].a == als[a]) v = m(&cells[i]);
      if (isnan(v) || v <= 0) fprintf(f, " ?");
      else fprintf(f, " %g", v);
    }
    fprintf(f, "\n");
  }
  fclose(f);
  int logy = lo > 0 && hi / lo > 20;
  char yr[96];
  /* on a log axis the bars start at the decade below the smallest value, so small bars show */
  if (logy) snprintf(yr, sizeof yr, "set logscale y\nset yrange [%g:*]", pow(10, floor(log10(lo))));
  else snprintf(yr, sizeof yr, "set yrange [0:*]");
  snprintf(path, sizeof path, "%s/%s.gp", dir, name);
  f = fopen(path, "w");
  if (!f) return 0;
  fprintf(f,
          "set terminal pngcairo size 1200,600 noenhanced\nset output '%s/%s.png'\n"
          "set datafile missing '?'\nset style data histogram\nset style histogram clustered gap 1\n"
          "set style fill solid 0.8 border -1\nset key outside right top\nset ylabel '%s%s'\n"
          "set grid ytics\nset xtics rotate by -20\n%s\n"
          "plot for [i=2:%zu] '%s/%s.dat' using i:xtic(1) title columnheader(i)\n",
          dir, name, ylabel, logy ? " (log scale)" : "", yr, na + 1, dir, name);
  fclose(f);
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>'%s/%s.gnuplot.log'", path, dir, name);
  int st = system(cmd);
  if (st != 0) {
    /* pngcairo may be missing: try the plain png terminal once */
    snprintf(cmd, sizeof cmd, "sed -i 's/pngcairo/png/' '%s' && gnuplot '%s' 2>>'%s/%s.gnuplot.log'", path, path, dir, name);
    st = system(cmd);
  }
  return st == 0;
}

int tb_write_plots(const char *dir, const tb_cell_t *cells, size_t n) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "tlbbench: gnuplot not found: no plots (install gnuplot-nox); data files still written\n");
  }
  int made = 0;
  made += plot_one(dir, "walks_per_1k", "simulated page walks per 1,000 accesses", m_walks, cells, n);
  made += plot_one(dir, "tlb_entries", "TLB entries the hot set needs", m_entries, cells, n);
  made += plot_one(dir, "time", "ns per operation (median)", m_time, cells, n);
  made += plot_one(dir, "resident_entries", "real programs: TLB entries for their resident memory at peak",
                   m_resident, cells, n);
  made += plot_one(dir, "walks_per_op", "simulated page walks per op (sqlite-lib: per query)", m_walks_per_op, cells, n);
  return made;
}
