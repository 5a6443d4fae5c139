/* Parsing what comes back from a run: a workload's RESULT line and tlbsim's JSON object. */
#define _GNU_SOURCE
#include "harness.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int tb_parse_result(const char *text, tb_kv_t *out, const char **why) {
  memset(out, 0, sizeof *out);
  const char *line = NULL;
  for (const char *p = text; p && *p;) {
    if (!strncmp(p, "RESULT ", 7)) { line = p + 7; break; }
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!line) { *why = "no line starting with 'RESULT ' on stdout"; return -1; }
  const char *p = line;
  while (*p && *p != '\n') {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p || *p == '\n') break;
    const char *tok = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
    const char *eq = memchr(tok, '=', (size_t)(p - tok));
    if (!eq || eq == tok) { *why = "RESULT token without key=value"; return -1; }
    if (out->n == TB_MAX_KV) { *why = "RESULT line has too many keys"; return -1; }
    size_t kl = (size_t)(eq - tok), vl = (size_t)(p - eq - 1);
    if (kl >= sizeof out->key[0] || vl >= sizeof out->val[0]) { *why = "RESULT key or value too long"; return -1; }
    memcpy(out->key[out->n], tok, kl);
    out->key[out->n][kl] = 0;
    memcpy(out->val[out->n], eq + 1, vl);
    out->val[out->n][vl] = 0;
    out->n++;
  }
  if (!tb_kv_get(out, "workload")) { *why = "RESULT line has no workload="; return -1; }
  return 0;
}

const char *tb_kv_get(const tb_kv_t *kv, const char *key) {
  for (int i = 0; i < kv->n; i++)
    if (!strcmp(kv->key[i], key)) return kv->val[i];
  return NULL;
}

int tb_kv_num(const tb_kv_t *kv, const char *key, double *v) {
  const char *s = tb_kv_get(kv, key);
  if (!s || !*s) return -1;
  char *end;
  double d = strtod(s, &end);
  if (*end || isnan(d)) return -1;
  *v = d;
  return 0;
}

/* ---- JSON: just enough to read numbers by key ---------------------------------------------- */
static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* sums the numbers inside the object/array starting at p; returns the end, NULL if malformed */
static const char *sum_container(const char *p, double *sum, int *count) {
  int depth = 0;
  do {
    if (*p == '"') {  /* skip strings (keys) */
      for (p++; *p && *p != '"'; p++) if (*p == '\\' && p[1]) p++;
      if (!*p) return NULL;
      p++;
      continue;
    }
    if (*p == '{' || *p == '[') depth++;
    else if (*p == '}' || *p == ']') depth--;
    else if (*p == '-' || isdigit((unsigned char)*p)) {
      char *end;
      double d = strtod(p, &end);
      *sum += d;
      (*count)++;
      p = end;
      continue;
    } else if (!*p) return NULL;
    p++;
  } while (depth > 0);
  return p;
}

int tb_json_num(const char *json, const char *key, double *v) {
  size_t kl = strlen(key);
  for (const char *p = json; (p = strchr(p, '"')) != NULL;) {
    const char *start = p + 1, *q = start;
    while (*q && *q != '"') { if (*q == '\\' && q[1]) q++; q++; }
    if (!*q) return -1;
    const char *after = skip_ws(q + 1);
    if ((size_t)(q - start) == kl && !strncmp(start, key, kl) && *after == ':') {
      const char *val = skip_ws(after + 1);
      if (*val == '{' || *val == '[') {
        double s = 0;
        int c = 0;
        if (!sum_container(val, &s, &c) || !c) return -1;
        *v = s;
        return 0;
      }
      char *end;
      double d = strtod(val, &end);
      if (end == val) return -1;
      *v = d;
      return 0;
    }
    p = q + 1;
  }
  return -1;
}

int tb_sim_from_json(const char *json, tb_sim_t *s, const char **why) {
  memset(s, 0, sizeof *s);
  struct { const char *key; double *dst; int required; } f[] = {
    {"accesses", &s->accesses, 1},     {"l1_misses", &s->l1_misses, 1},
    {"l2_misses", &s->l2_misses, 1},   {"walks", &s->walks, 1},
    {"walk_levels", &s->walk_levels, 1}, {"walk_mem_refs", &s->walk_mem_refs, 1},
    {"distinct_pages_4k", &s->distinct_4k, 0}, {"distinct_pages_2m", &s->distinct_2m, 0},
    {"page_table_pages", &s->pt_pages, 0}, {"est_walk_cycles", &s->est_walk_cycles, 0},
    {"prefetch_walks", &s->prefetch_walks, 0}, {"warmup_accesses", &s->warmup_accesses, 0},
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    if (tb_json_num(json, f[i].key, f[i].dst) != 0) {
      if (f[i].required) { *why = f[i].key; return -1; }
      *f[i].dst = NAN;
    }
  }
  s->ok = 1;
  return 0;
}

double tb_per_k(double x, double accesses) {
  if (isnan(x) || isnan(accesses) || accesses <= 0) return NAN;
  return x * 1000.0 / accesses;
}

int tb_csv_has(const char *csv, const char *name) {
  size_t n = strlen(name);
  for (const char *p = csv; p && *p;) {
    const char *c = strchr(p, ',');
    size_t l = c ? (size_t)(c - p) : strlen(p);
    if (l == n && !strncmp(p, name, n)) return 1;
    p = c ? c + 1 : NULL;
  }
  return 0;
}
