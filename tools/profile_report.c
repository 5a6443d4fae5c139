/* tlbpack profile: the report, per site and per pair of sites, as text tables or one JSON
 * object. */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- reports --------------------------------------------------------------------------- */
static void json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(o, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(o, "\\u%04x", *s);
    else fputc(*s, o);
  }
  fputc('"', o);
}

typedef struct { uint32_t a, b, n; } pair_t;
static int by_count(const void *x, const void *y) {
  const pair_t *p = x, *q = y;
  return p->n < q->n ? 1 : p->n > q->n ? -1 : 0;
}

void tpp_report(FILE *o, int json, unsigned top, const ts_stats_t *st, const char *plan, unsigned nhot,
                   unsigned ncold) {
  pair_t *pl = tpp_xcalloc(tpp_pairs.n, sizeof *pl);
  size_t np = 0;
  for (size_t i = 0; i < tpp_pairs.cap; i++)
    if (tpp_pairs.k[i] != EMPTY) pl[np++] = (pair_t){(uint32_t)(tpp_pairs.k[i] >> 32), (uint32_t)tpp_pairs.k[i], tpp_pairs.v[i]};
  qsort(pl, np, sizeof *pl, by_count);
  size_t ns = tpp_nsites < top ? tpp_nsites : top;
  size_t npr = np < top ? np : top;
  if (json) {
    fprintf(o, "{\"accesses\": %llu, \"data_accesses\": %llu, \"l1_misses\": %llu, \"l2_misses\": %llu, "
               "\"walk_mem_refs\": %llu, \"unattributed\": {\"accesses\": %llu, \"l1_misses\": %llu, "
               "\"l2_misses\": %llu, \"walk_mem_refs\": %llu}, \"nsites\": %zu, \"plan\": ",
            (unsigned long long)st->accesses, (unsigned long long)tpp_total_data, (unsigned long long)st->l1_misses,
            (unsigned long long)st->l2_misses, (unsigned long long)st->walk_mem_refs,
            (unsigned long long)tpp_unattributed, (unsigned long long)tpp_una_l1, (unsigned long long)tpp_una_l2,
            (unsigned long long)tpp_una_refs, tpp_nsites);
    if (plan) json_str(o, plan);
    else fputs("null", o);
    fprintf(o, ", \"plan_hot_sites\": %u, \"plan_cold_sites\": %u,\n \"sites\": [", nhot, ncold);
    for (size_t k = 0; k < ns; k++) {
      const site_t *s = &tpp_sites[tpp_order[k]];
      fprintf(o, "%s\n  {\"site\": ", k ? "," : "");
      json_str(o, s->name);
      fprintf(o, ", \"symbol\": ");
      json_str(o, s->sym);
      fprintf(o, ", \"objects\": %llu, \"bytes\": %llu, \"accesses\": %llu, \"pages_4k\": %llu, "
                 "\"pages_2m\": %llu, \"l1_misses\": %llu, \"l2_misses\": %llu, \"walk_mem_refs\": %llu, "
                 "\"freed\": %llu, \"mean_lifetime\": %.1f, \"plan\": \"%s\"}",
              (unsigned long long)s->objects, (unsigned long long)s->bytes, (unsigned long long)s->accesses,
              (unsigned long long)s->pages4k, (unsigned long long)s->pages2m, (unsigned long long)s->l1,
              (unsigned long long)s->l2, (unsigned long long)s->refs, (unsigned long long)s->freed,
              s->objects ? (double)(s->life_sum + (s->objects - s->freed) * 0) / (double)s->objects : 0.0,
              tpp_kind[tpp_order[k]] == K_HOT ? "hot" : tpp_kind[tpp_order[k]] == K_COLD ? "cold" : "");
    }
    fprintf(o, "],\n \"pairs\": [");
    for (size_t k = 0; k < npr; k++) {
      fprintf(o, "%s\n  {\"a\": ", k ? "," : "");
      json_str(o, tpp_sites[pl[k].a].name);
      fprintf(o, ", \"b\": ");
      json_str(o, tpp_sites[pl[k].b].name);
      fprintf(o, ", \"count\": %u}", pl[k].n);
    }
    fprintf(o, "]}\n");
  } else {
    fprintf(o, "%llu accesses (%llu data); L1 TLB misses %llu, L2 misses (walks) %llu, walk refs %llu\n",
            (unsigned long long)st->accesses, (unsigned long long)tpp_total_data, (unsigned long long)st->l1_misses,
            (unsigned long long)st->l2_misses, (unsigned long long)st->walk_mem_refs);
    fprintf(o, "not in any heap object (stack, globals, code data, allocator metadata): %llu data accesses, "
               "%llu L1 misses, %llu walks\n\n",
            (unsigned long long)tpp_unattributed, (unsigned long long)tpp_una_l1, (unsigned long long)tpp_una_l2);
    fprintf(o, "%-4s %9s %11s %11s %7s %5s %9s %8s %9s %11s  %s\n", "plan", "objects", "bytes", "accesses", "4k-pg",
            "2m-pg", "l1-miss", "walks", "walk-ref", "mean-life", "site");
    for (size_t k = 0; k < ns; k++) {
      const site_t *s = &tpp_sites[tpp_order[k]];
      fprintf(o, "%-4s %9llu %11llu %11llu %7llu %5llu %9llu %8llu %9llu %11.0f  %s%s%s%s\n",
              tpp_kind[tpp_order[k]] == K_HOT ? "hot" : tpp_kind[tpp_order[k]] == K_COLD ? "cold" : "-",
              (unsigned long long)s->objects, (unsigned long long)s->bytes, (unsigned long long)s->accesses,
              (unsigned long long)s->pages4k, (unsigned long long)s->pages2m, (unsigned long long)s->l1,
              (unsigned long long)s->l2, (unsigned long long)s->refs,
              s->objects ? (double)s->life_sum / (double)s->objects : 0.0, s->name, s->sym[0] ? " (" : "", s->sym,
              s->sym[0] ? ")" : "");
    }
    if (tpp_nsites > ns) fprintf(o, "... %zu more sites\n", tpp_nsites - ns);
    fprintf(o, "\nsites accessed close together (within %d site switches):\n", RING);
    for (size_t k = 0; k < npr; k++)
      fprintf(o, "%10u  %s%s%s  <->  %s%s%s\n", pl[k].n, tpp_sites[pl[k].a].name, tpp_sites[pl[k].a].sym[0] ? " " : "",
              tpp_sites[pl[k].a].sym, tpp_sites[pl[k].b].name, tpp_sites[pl[k].b].sym[0] ? " " : "", tpp_sites[pl[k].b].sym);
    if (plan) fprintf(o, "\nplan: %s (%u hot sites in ordered groups, %u cold sites apart)\n", plan, nhot, ncold);
  }
  free(pl);
}
