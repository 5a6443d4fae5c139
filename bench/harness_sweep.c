/* The TLB sweep (tlbbench --sweep, and the last part of --full): the program of the records
 * family that tlbpack was not tuned on (bench/workloads/wl_sweep.c), over what a program can
 * vary: its live heap from 512 KiB to 2 GiB in steps of 2x, one, three or eight allocation
 * sites a record, records built in one pass, in batches or among other work, cold and
 * short-lived blocks beside them, one thread or several. At every point each allocator's hot
 * set is counted in TLB entries (pagemap + kpageflags, as the demo counts them) against the
 * floor, with its memory (peak RSS + hugetlb) and lookup time against jemalloc's, and tlbpack's
 * promise is checked (tb_sweep_verdict). Writes sweep.csv, sweep.md and the plots
 * sweep_entries*.png (entries over the floor against the heap, one line per allocator). */
#define _GNU_SOURCE
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const tb_sweep_shape_t tb_sweep_shapes[] = {
  {"one-site", "--sites 1 --build inter --cold 1 --temp 1 --threads 1",
   "node, key and value from one helper, each record among a cold buffer and a temporary (the issue's program)"},
  {"three-sites-batches", "--sites 3 --build batch --cold 1 --temp 1 --threads 1",
   "three sites, records in batches of 256, each batch's cold buffers after it"},
  {"many-sites", "--sites 8 --build pass --cold 0 --temp 0 --threads 1",
   "eight sites a record (five attributes), built in one pass, nothing else"},
  {"three-sites-2-threads", "--sites 3 --build inter --cold 2 --temp 1 --threads 2",
   "three sites, two cold buffers and a temporary a record, two threads building"},
  {"one-site-4-threads", "--sites 1 --build batch --cold 1 --temp 0 --threads 4",
   "one helper, four threads building in batches"},
};
const size_t tb_sweep_nshapes = sizeof tb_sweep_shapes / sizeof tb_sweep_shapes[0];

/* The allocators of the sweep: tlbpack with and without a plan, jemalloc with and without THP. */
static const char *const sweep_allocs[] = {"tlbpack", "tlbpack-plan", "jemalloc", "jemalloc-thp"};
#define NA (sizeof sweep_allocs / sizeof sweep_allocs[0])
enum { A_TP, A_PLAN, A_JE, A_JETHP };

#define MIN_KB 512
#define PLAN_KB 1024 /* the plan is made from the smallest point of the sweep proper (1 MiB) */

int tb_sweep_verdict(const tb_sweep_point_t *p, char *why, size_t n) {
  const tb_sweep_cell_t *tp = &p->cell[A_TP], *pl = &p->cell[A_PLAN], *je = &p->cell[A_JE];
  why[0] = 0;
  int miss = 0;
  size_t used = 0;
#define ADD(...) do { used += (size_t)snprintf(why + used, used < n ? n - used : 0, __VA_ARGS__); miss = 1; } while (0)
  if (tp->ok && tp->hot_bytes >= TB_SWEEP_HOT_MIN && tp->entries > 1.5 * tp->floor + 2)
    ADD("%sentries %ld > 1.5 x %ld + 2", miss ? "; " : "", tp->entries, tp->floor);
  if (pl->ok && pl->hot_bytes >= TB_SWEEP_HOT_MIN && pl->entries > ceil(1.1 * pl->floor))
    ADD("%splan entries %ld > 1.1 x %ld", miss ? "; " : "", pl->entries, pl->floor);
  if (tp->ok && je->ok && tp->mem_kb > 1.1 * je->mem_kb)
    ADD("%smemory %.1f MiB > 1.1 x jemalloc's %.1f", miss ? "; " : "", tp->mem_kb / 1024.0, je->mem_kb / 1024.0);
  if (tp->ok && p->heap_kb < 1024 && (tp->huge > 0 || tp->hugetlb_kb > 0))
    ADD("%s%ld huge pages under 1 MiB live", miss ? "; " : "", tp->huge > 0 ? tp->huge : tp->hugetlb_kb / 2048);
#undef ADD
  return miss;
}

/* The sweep's smallest heap: 512 KiB, or the first point of the series at min_kb or more. */
static size_t first_kb(const tb_sweep_opts_t *o) {
  size_t kb = MIN_KB;
  while (kb < o->min_kb) kb *= 2;
  return kb;
}

/* Every name when no list is given. */
static int wanted(const char *csv, const char *name) { return !csv || tb_csv_has(csv, name); }

/* One run of wl_sweep at a point with allocator a; fills c. */
static void run_point(const tb_sweep_opts_t *o, const char *wl, const tb_sweep_shape_t *s, size_t heap_kb,
                      const tb_alloc_t *a, const char *lib, const char *plan, tb_sweep_cell_t *c) {
  char flags[512], *argv[40];
  snprintf(flags, sizeof flags, "--heap-kb %zu --lookups %lu %s", heap_kb, o->lookups, s->flags);
  int k = 0;
  argv[k++] = (char *)wl;
  char store[512];
  snprintf(store, sizeof store, "%s", flags);
  for (char *save, *t = strtok_r(store, " ", &save); t && k < 38; t = strtok_r(NULL, " ", &save)) argv[k++] = t;
  argv[k] = NULL;
  const char *env[TB_MAX_ENV + 2];
  char preload[4600], conf[4700];
  int e = 0;
  if (lib && lib[0]) { snprintf(preload, sizeof preload, "LD_PRELOAD=%.4400s", lib); env[e++] = preload; }
  for (int i = 0; i < TB_MAX_ENV && a->env[i]; i++) {
    if (plan && !strncmp(a->env[i], "TLBPACK_CONF=", 13)) {
      snprintf(conf, sizeof conf, "%.200s,plan:%.4400s", a->env[i], plan);
      env[e++] = conf;
    } else {
      env[e++] = a->env[i];
    }
  }
  env[e] = NULL;
  double ns[TB_MAX_RUNS];
  int nns = 0;
  memset(c, 0, sizeof *c);
  for (int r = 0; r < o->runs; r++) {
    tb_proc_t p;
    if (tb_run(argv, env, o->timeout_s, &p) != 0) { snprintf(c->note, sizeof c->note, "cannot run %.100s", wl); return; }
    tb_kv_t kv;
    const char *why = NULL;
    double v;
    if (p.status != 0 || tb_parse_result(p.out, &kv, &why) != 0) {
      snprintf(c->note, sizeof c->note, "exit %d%s", p.status, p.timed_out ? " (timed out)" : "");
      tb_proc_free(&p);
      return;
    }
    if (r == 0) { /* the layout: the first run's (the same every run but for threads' order) */
      if (tb_kv_num(&kv, "hot_entries", &v) == 0) c->entries = (long)v;
      if (tb_kv_num(&kv, "hot_floor", &v) == 0) c->floor = (long)v;
      if (tb_kv_num(&kv, "hot_bytes", &v) == 0) c->hot_bytes = (size_t)v;
      if (tb_kv_num(&kv, "hot_huge", &v) == 0) c->huge = (long)v;
      if (tb_kv_num(&kv, "hugetlb_kb", &v) == 0) c->hugetlb_kb = (long)v;
      double rss = 0;
      if (tb_kv_num(&kv, "peak_rss_kb", &rss) == 0) c->mem_kb = rss + (double)c->hugetlb_kb;
      const char *src = tb_kv_get(&kv, "tlb_source");
      c->ok = src && !strcmp(src, "pagemap") && c->entries >= 0;
      if (!c->ok) snprintf(c->note, sizeof c->note, "hot set not counted: %s", src ? src : "no tlb_source");
    }
    if (tb_kv_num(&kv, "ns_per_op", &v) == 0) ns[nns++] = v;
    tb_proc_free(&p);
  }
  c->ns = tb_median(ns, (size_t)nns);
}

/* entries over the floor against the heap, one line per allocator: for one shape (`shape` >= 0)
 * or the worst point over every shape (-1) */
static int plot(const char *dir, const char *name, const char *title, const tb_sweep_point_t *pts, size_t npts,
                int shape, const int *on) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s.dat", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  fprintf(f, "heap_MiB");
  for (size_t a = 0; a < NA; a++) if (on[a]) fprintf(f, " %s", sweep_allocs[a]);
  fprintf(f, "\n");
  size_t rows = 0;
  for (size_t kb = MIN_KB; kb <= (size_t)1 << 31; kb *= 2) {
    int any = 0;
    double worst[NA];
    for (size_t a = 0; a < NA; a++) worst[a] = NAN;
    for (size_t i = 0; i < npts; i++) {
      if (pts[i].heap_kb != kb || (shape >= 0 && pts[i].shape != (size_t)shape)) continue;
      for (size_t a = 0; a < NA; a++) {
        const tb_sweep_cell_t *c = &pts[i].cell[a];
        if (!c->ok || c->floor <= 0) continue;
        double r = (double)c->entries / (double)c->floor;
        if (isnan(worst[a]) || r > worst[a]) worst[a] = r;
        any = 1;
      }
    }
    if (!any) continue;
    fprintf(f, "%g", kb / 1024.0);
    for (size_t a = 0; a < NA; a++)
      if (on[a]) isnan(worst[a]) ? fprintf(f, " ?") : fprintf(f, " %g", worst[a]);
    fprintf(f, "\n");
    rows++;
  }
  fclose(f);
  if (!rows) return 0;
  snprintf(path, sizeof path, "%s/%s.gp", dir, name);
  f = fopen(path, "w");
  if (!f) return 0;
  fprintf(f,
          "set terminal pngcairo size 1000,600 noenhanced\nset output '%s/%s.png'\nset datafile missing '?'\n"
          "set title '%s'\nset logscale x 2\nset logscale y 10\nset xlabel 'live heap (MiB)'\n"
          "set ylabel 'hot-set TLB entries / floor (log scale)'\nset key outside right top\nset grid\n"
          "plot for [i=2:%d] '%s/%s.dat' using 1:i with linespoints title columnheader(i)\n",
          dir, name, title, 1 + on[0] + on[1] + on[2] + on[3], dir, name);
  fclose(f);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "gnuplot '%s/%s.gp' 2>'%s/%s.gnuplot.log' || { sed -i 's/pngcairo/png/' '%s/%s.gp' && gnuplot '%s/%s.gp' 2>>'%s/%s.gnuplot.log'; }",
           dir, name, dir, name, dir, name, dir, name, dir, name);
  return system(cmd) == 0;
}

static const char *num(char *b, size_t n, double v, const char *fmt) {
  if (isnan(v)) snprintf(b, n, "?");
  else snprintf(b, n, fmt, v);
  return b;
}

int tb_sweep(const tb_sweep_opts_t *o) {
  char self[4096], wl[4400];
  if (tb_self_dir(self, sizeof self)) { fprintf(stderr, "tlbbench: cannot read /proc/self/exe\n"); return 1; }
  snprintf(wl, sizeof wl, "%s/bench/wl_sweep", self);
  if (access(wl, X_OK) != 0) { fprintf(stderr, "tlbbench --sweep: %s is not built\n", wl); return 1; }
  const tb_alloc_t *al[NA];
  char libs[NA][4400];
  int on[NA];
  for (size_t a = 0; a < NA; a++) {
    al[a] = tb_alloc_find(sweep_allocs[a]);
    const char *why = NULL;
    on[a] = al[a] && wanted(o->allocators, sweep_allocs[a]) && tb_alloc_lib(al[a], self, libs[a], sizeof libs[a], &why);
    if (al[a] && wanted(o->allocators, sweep_allocs[a]) && !on[a])
      fprintf(stderr, "tlbbench --sweep: %s not run: %s\n", sweep_allocs[a], why ? why : "unknown");
  }
  size_t nh = 0;
  for (size_t kb = first_kb(o); kb <= o->max_kb; kb *= 2) nh++;
  size_t cap = nh * tb_sweep_nshapes;
  tb_sweep_point_t *pts = calloc(cap ? cap : 1, sizeof *pts);
  if (!pts) return 1;
  /* plans: one a shape, from `tlbpack profile` of its 1 MiB point */
  char plans[16][4400];
  for (size_t s = 0; s < tb_sweep_nshapes && s < 16; s++) {
    plans[s][0] = 0;
    if (!on[A_PLAN] || !wanted(o->shapes, tb_sweep_shapes[s].name)) continue;
    char name[64], args[600], note[600];
    snprintf(name, sizeof name, "sweep-%s", tb_sweep_shapes[s].name);
    snprintf(args, sizeof args, "--heap-kb %d --lookups 20000 %s", PLAN_KB, tb_sweep_shapes[s].flags);
    tb_workload_t w = {0};
    w.name = name;
    w.prog = "wl_sweep";
    w.plan_args = args;
    char wl_dir[4400];
    snprintf(wl_dir, sizeof wl_dir, "%s/bench", self);
    if (tb_plan_make(&w, self, wl_dir, o->timeout_s * 4, plans[s], sizeof plans[s], note, sizeof note) != 0) {
      fprintf(stderr, "tlbbench --sweep: no plan for %s: %s\n", tb_sweep_shapes[s].name, note);
      plans[s][0] = 0;
    }
  }
  size_t npts = 0;
  for (size_t s = 0; s < tb_sweep_nshapes; s++) {
    if (!wanted(o->shapes, tb_sweep_shapes[s].name)) continue;
    for (size_t kb = first_kb(o); kb <= o->max_kb; kb *= 2) {
      tb_sweep_point_t *p = &pts[npts++];
      p->shape = s;
      p->heap_kb = kb;
      for (size_t a = 0; a < NA; a++) {
        if (!on[a] || (a == A_PLAN && !plans[s][0])) continue;
        fprintf(stderr, "tlbbench --sweep: %s, %zu KiB, %s\n", tb_sweep_shapes[s].name, kb, sweep_allocs[a]);
        run_point(o, wl, &tb_sweep_shapes[s], kb, al[a], libs[a], a == A_PLAN ? plans[s] : NULL, &p->cell[a]);
      }
      p->miss = tb_sweep_verdict(p, p->why, sizeof p->why);
    }
  }
  /* sweep.csv and sweep.md */
  char path[4400];
  snprintf(path, sizeof path, "%s/sweep.csv", o->out);
  FILE *csv = fopen(path, "w");
  snprintf(path, sizeof path, "%s/sweep.md", o->out);
  FILE *md = fopen(path, "w");
  if (!csv || !md) {
    fprintf(stderr, "tlbbench --sweep: cannot write in %s\n", o->out);
    if (csv) fclose(csv);
    if (md) fclose(md);
    free(pts);
    return 1;
  }
  fprintf(csv, "shape,heap_kb,allocator,hot_bytes,floor,entries,entries_over_floor,huge_pages,mem_kb,mem_vs_jemalloc,"
               "ns_per_lookup,time_vs_jemalloc,note\n");
  fprintf(md, "TLB sweep (`tlbbench --sweep`): hot-set TLB entries (pagemap + kpageflags: one per huge page,\n"
              "one per other 4 KiB page) against the floor (hot bytes / 2 MiB, rounded up); memory is peak RSS +\n"
              "hugetlb, MiB; time is ns per lookup (median of %d run%s, %lu lookups). Promise (tlbpack): at most\n"
              "1.5 x floor + 2 entries where the hot set is 4 MiB or more, 1.1 x floor with a plan made by\n"
              "`tlbpack profile` of the shape's 1 MiB point, memory at most 1.1 x jemalloc's, no huge page under\n"
              "1 MiB live.\n\n",
          o->runs, o->runs > 1 ? "s" : "", o->lookups);
  int misses = 0;
  for (size_t s = 0; s < tb_sweep_nshapes; s++) {
    if (!wanted(o->shapes, tb_sweep_shapes[s].name)) continue;
    fprintf(md, "**%s** (`%s`): %s\n\n", tb_sweep_shapes[s].name, tb_sweep_shapes[s].flags, tb_sweep_shapes[s].what);
    fprintf(md, "| heap | hot MB | floor | tlbpack | plan | jemalloc thp | jemalloc | tlbpack MiB | jemalloc MiB | "
                "time vs je | promise |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < npts; i++) {
      const tb_sweep_point_t *p = &pts[i];
      if (p->shape != s) continue;
      const tb_sweep_cell_t *c = p->cell;
      char b[9][32], heap[32];
      if (p->heap_kb >= 1024) snprintf(heap, sizeof heap, "%zu MiB", p->heap_kb / 1024);
      else snprintf(heap, sizeof heap, "%zu KiB", p->heap_kb);
      const tb_sweep_cell_t *any = NULL;
      for (size_t a = 0; a < NA && !any; a++) if (c[a].ok) any = &c[a];
      fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", heap,
              num(b[0], 32, any ? any->hot_bytes / 1e6 : NAN, "%.1f"), num(b[1], 32, any ? (double)any->floor : NAN, "%.0f"),
              num(b[2], 32, c[A_TP].ok ? (double)c[A_TP].entries : NAN, "%.0f"),
              num(b[3], 32, c[A_PLAN].ok ? (double)c[A_PLAN].entries : NAN, "%.0f"),
              num(b[4], 32, c[A_JETHP].ok ? (double)c[A_JETHP].entries : NAN, "%.0f"),
              num(b[5], 32, c[A_JE].ok ? (double)c[A_JE].entries : NAN, "%.0f"),
              num(b[6], 32, c[A_TP].ok ? c[A_TP].mem_kb / 1024 : NAN, "%.1f"),
              num(b[7], 32, c[A_JE].ok ? c[A_JE].mem_kb / 1024 : NAN, "%.1f"),
              num(b[8], 32, c[A_TP].ok && c[A_JE].ok ? tb_ratio(c[A_TP].ns, c[A_JE].ns) : NAN, "%.2fx"),
              p->miss ? p->why : "kept");
      misses += p->miss;
      for (size_t a = 0; a < NA; a++) {
        if (!on[a]) continue;
        const tb_sweep_cell_t *x = &c[a];
        fprintf(csv, "%s,%zu,%s,%zu,%ld,%ld,%s,%ld,%.0f,%s,%s,%s,", tb_sweep_shapes[s].name, p->heap_kb, sweep_allocs[a],
                x->hot_bytes, x->floor, x->entries,
                num(b[0], 32, x->ok && x->floor > 0 ? (double)x->entries / (double)x->floor : NAN, "%.3f"), x->huge,
                x->mem_kb, num(b[1], 32, x->ok && c[A_JE].ok ? tb_ratio(x->mem_kb, c[A_JE].mem_kb) : NAN, "%.3f"),
                num(b[2], 32, x->ns, "%.2f"),
                num(b[3], 32, x->ok && c[A_JE].ok ? tb_ratio(x->ns, c[A_JE].ns) : NAN, "%.3f"));
        tb_csv_field(csv, x->note);
        fprintf(csv, "\n");
      }
    }
    fprintf(md, "\n");
  }
  fprintf(md, "%d point%s missed the promise.\n", misses, misses == 1 ? "" : "s");
  fclose(csv);
  fclose(md);
  if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
    plot(o->out, "sweep_entries", "worst point over the shapes", pts, npts, -1, on);
    for (size_t s = 0; s < tb_sweep_nshapes; s++) {
      char name[96];
      snprintf(name, sizeof name, "sweep_entries_%s", tb_sweep_shapes[s].name);
      if (wanted(o->shapes, tb_sweep_shapes[s].name)) plot(o->out, name, tb_sweep_shapes[s].name, pts, npts, (int)s, on);
    }
  }
  printf("tlbbench --sweep: %zu points, %d missed the promise; %s/sweep.{csv,md}, sweep_entries*.png\n", npts, misses,
         o->out);
  free(pts);
  return o->check && misses ? 3 : 0;
}
