/* Printers: a text table and JSON over the same counters (one field list), single runs and
 * two runs side by side with ratios. Counting lives in sim.c; nothing here changes a count. */
#include "internal.h"

#include <string.h>

typedef struct field_s {
  const char *json, *label;
  uint64_t v;
  bool show_rate;   /* also print per 1000 accesses in the text table */
} field_t;

#define MAXF 40

static size_t fields(ts_sim_t *s, field_t *f) {
  const ts_stats_t *st = ts_sim_stats(s);
  size_t n = 0;
#define F(j, l, val, r) f[n++] = (field_t){j, l, (uint64_t)(val), r}
  F("accesses", "accesses (demand)", st->accesses, false);
  F("reads", "  reads", st->reads, false);
  F("writes", "  writes", st->writes, false);
  F("ifetches", "  instruction fetches", st->ifetches, false);
  F("straddles", "  straddling two pages", st->straddles, true);
  F("prefetches", "software prefetches", st->prefetches, false);
  F("context_switches", "context switches", st->context_switches, false);
  F("warmup_accesses", "warm-up accesses (before the above)", st->warmup_accesses, false);
  F("l1_hits", "L1 TLB hits", st->l1_hits, false);
  F("l1_misses", "L1 TLB misses", st->l1_misses, true);
  F("l1i_misses", "  L1 ITLB misses", st->l1i_misses, true);
  F("l1d_misses", "  L1 DTLB misses", st->l1d_misses, true);
  F("l1_bypasses", "stores sent straight to the L2 TLB", st->l1_bypasses, true);
  F("l2_hits", "L2 TLB hits", st->l2_hits, true);
  F("l2_misses", "L2 TLB misses", st->l2_misses, true);
  F("walks", "page walks", st->walks, true);
  F("walk_levels", "  levels on the walk paths", st->walk_levels, true);
  F("walk_mem_refs", "  memory references (after walk caches)", st->walk_mem_refs, true);
  F("pwc_hits", "  walks helped by a walk cache", st->pwc_hits, true);
  F("prefetch_hits", "prefetches already in L1", st->prefetch_hits, false);
  F("prefetch_walks", "prefetch walks (not demand misses)", st->prefetch_walks, false);
  F("prefetch_walk_refs", "  their memory references", st->prefetch_walk_refs, false);
  F("tlb_flushes", "full TLB flushes", st->tlb_flushes, false);
  F("asid_evictions", "ASID reuses (partial flushes)", st->asid_evictions, false);
  F("distinct_pages_4k", "distinct 4K pages touched", st->distinct_pages[TS_PS_4K], false);
  F("distinct_pages_2m", "distinct 2M pages touched", st->distinct_pages[TS_PS_2M], false);
  F("distinct_pages_1g", "distinct 1G pages touched", st->distinct_pages[TS_PS_1G], false);
  uint64_t pt = 0, mpt = 0;
  for (int k = 1; k <= TS_MAX_LEVELS; k++) pt += st->pt_pages[k], mpt += st->mapped_pt_pages[k];
  F("page_table_pages", "page-table pages for touched addresses", pt, false);
  static const char *const lv[] = {"", "page_table_pages_l1", "page_table_pages_l2",
                                   "page_table_pages_l3", "page_table_pages_l4",
                                   "page_table_pages_l5"};
  static const char *const ll[] = {"", "  level 1 (page tables)", "  level 2 (page directories)",
                                   "  level 3 (PDPTs)", "  level 4 (PML4s)", "  level 5 (PML5s)"};
  for (int k = 1; k <= s->cfg.levels; k++) F(lv[k], ll[k], st->pt_pages[k], false);
  if (!s->uniform) F("mapped_page_table_pages", "page-table pages to map all given ranges", mpt, false);
  F("est_walk_cycles", "est. translation cycles (ESTIMATE)", st->est_walk_cycles, true);
#undef F
  return n;
}

static void describe(char *buf, size_t n, const ts_sim_t *s) {
  const ts_config_t *c = &s->cfg;
  char nested[24] = "";
  if (c->nested) snprintf(nested, sizeof nested, ", nested over %s", ts_page_size_name(c->nested - 1));
  snprintf(buf, n, "%s, %d-level paging, %s pages%s%s, asid mode %s", c->cpu, c->levels,
           s->uniform ? ts_page_size_name(c->page_size) : "per-range", s->uniform ? "" : " (regions/smaps)",
           nested, c->asid_mode == TS_ASID_FLUSH ? "flush" : "asid");
  (void)n;
}

static void json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c < 32) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

static void json_body(FILE *out, ts_sim_t *s, const char *label, const char *indent) {
  field_t f[MAXF];
  size_t n = fields(s, f);
  const ts_config_t *c = &s->cfg;
  fprintf(out, "%s\"trace\": ", indent);
  json_str(out, label ? label : "");
  fprintf(out, ",\n%s\"cpu\": ", indent);
  json_str(out, c->cpu);
  fprintf(out, ",\n%s\"levels\": %d,\n%s\"page_size\": \"%s\",\n%s\"nested\": \"%s\",\n"
          "%s\"asid_mode\": \"%s\",\n", indent, c->levels, indent,
          s->uniform ? ts_page_size_name(c->page_size) : "ranges", indent,
          c->nested ? ts_page_size_name(c->nested - 1) : "off", indent,
          c->asid_mode == TS_ASID_FLUSH ? "flush" : "asid");
  for (size_t i = 0; i < n; i++) fprintf(out, "%s\"%s\": %llu,\n", indent, f[i].json, (unsigned long long)f[i].v);
  const ts_stats_t *st = &s->st;
  double t = (double)(st->l1_hits + st->l1_misses);
  fprintf(out, "%s\"l1_miss_rate\": %.6f,\n", indent, t ? (double)st->l1_misses / t : 0.0);
  fprintf(out, "%s\"est_walk_cycles_note\": \"estimate: lat.l2=%u per L2 lookup, lat.walk=%u per walk, "
          "lat.ref=%u per page-table reference\"", indent, c->lat_l2, c->lat_walk, c->lat_ref);
}

void ts_print_json(FILE *out, ts_sim_t *s, const char *label) {
  fputs("{\n", out);
  json_body(out, s, label, "  ");
  fputs("\n}\n", out);
}

void ts_print_text(FILE *out, ts_sim_t *s, const char *label) {
  field_t f[MAXF];
  size_t n = fields(s, f);
  char d[160];
  describe(d, sizeof d, s);
  fprintf(out, "tlbsim: %s\n", d);
  if (label) fprintf(out, "trace: %s\n", label);
  double acc = (double)s->st.accesses;
  fprintf(out, "%-44s %16s %14s\n", "", "count", "per 1k acc.");
  for (size_t i = 0; i < n; i++) {
    fprintf(out, "%-44s %16llu", f[i].label, (unsigned long long)f[i].v);
    if (f[i].show_rate && acc > 0) fprintf(out, " %14.3f", 1000.0 * (double)f[i].v / acc);
    fputc('\n', out);
  }
  const ts_stats_t *st = &s->st;
  double t = (double)(st->l1_hits + st->l1_misses);
  fprintf(out, "%-44s %15.3f%%\n", "L1 TLB miss rate", t ? 100.0 * (double)st->l1_misses / t : 0.0);
  fprintf(out, "(est. cycles are an estimate: lat.l2=%u per L2 lookup, lat.walk=%u per walk, "
          "lat.ref=%u per page-table reference; change with --set lat.*)\n",
          s->cfg.lat_l2, s->cfg.lat_walk, s->cfg.lat_ref);
}

static void ratio(char *buf, size_t n, uint64_t a, uint64_t b) {
  if (a == 0) snprintf(buf, n, "%s", b ? "inf" : "-");
  else snprintf(buf, n, "%.4g", (double)b / (double)a);
}

/* Fields are matched by name: the two runs may differ in levels (and so in rows). */
static const field_t *by_name(const field_t *f, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(f[i].json, name)) return &f[i];
  return NULL;
}

void ts_print_compare_text(FILE *out, ts_sim_t *a, const char *la, ts_sim_t *b, const char *lb) {
  field_t fa[MAXF], fb[MAXF];
  size_t na = fields(a, fa), nb = fields(b, fb);
  char d[160];
  describe(d, sizeof d, a);
  fprintf(out, "A: %s\n   %s\n", la ? la : "", d);
  describe(d, sizeof d, b);
  fprintf(out, "B: %s\n   %s\n", lb ? lb : "", d);
  fprintf(out, "%-44s %16s %16s %10s\n", "", "A", "B", "B/A");
  for (size_t i = 0; i < na; i++) {
    const field_t *y = by_name(fb, nb, fa[i].json);
    char r[32];
    ratio(r, sizeof r, fa[i].v, y ? y->v : 0);
    fprintf(out, "%-44s %16llu %16llu %10s\n", fa[i].label, (unsigned long long)fa[i].v,
            (unsigned long long)(y ? y->v : 0), y ? r : "-");
  }
  for (size_t i = 0; i < nb; i++)
    if (!by_name(fa, na, fb[i].json))
      fprintf(out, "%-44s %16s %16llu %10s\n", fb[i].label, "-", (unsigned long long)fb[i].v, "-");
  fprintf(out, "(est. cycles are an estimate from the configured latencies)\n");
}

void ts_print_compare_json(FILE *out, ts_sim_t *a, const char *la, ts_sim_t *b, const char *lb) {
  field_t fa[MAXF], fb[MAXF];
  size_t na = fields(a, fa), nb = fields(b, fb);
  fputs("{\n  \"a\": {\n", out);
  json_body(out, a, la, "    ");
  fputs("\n  },\n  \"b\": {\n", out);
  json_body(out, b, lb, "    ");
  fputs("\n  },\n  \"ratio_b_over_a\": {", out);
  bool first = true;
  for (size_t i = 0; i < na; i++) {
    const field_t *y = by_name(fb, nb, fa[i].json);
    if (!y) continue;
    fprintf(out, "%s\n    \"%s\": ", first ? "" : ",", fa[i].json);
    if (fa[i].v) fprintf(out, "%.6f", (double)y->v / (double)fa[i].v);
    else fputs("null", out);
    first = false;
  }
  fputs("\n  }\n}\n", out);
}
