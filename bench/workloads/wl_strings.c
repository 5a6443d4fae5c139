/* Workload 5: string-heavy parsing (many small strings and growing arrays).
 *
 * A synthetic log of lines like `ts=123 user=u42 path=/a/b/c status=200 tags=x,y,z` is parsed:
 * each line becomes a record holding a growing array of fields (realloc'd), every field name is
 * interned in a hash table (one strdup per new name), every value is strdup'd, tags are split
 * into their own array. The last --keep records stay alive (older ones are freed), so lifetimes
 * mix. Time is reported per line.
 *
 * Trace (--trace): R of each intern-table slot and interned string compared, W of each string
 * copied and each array slot written, R of the kept record an aggregation pass reads. */
#define _GNU_SOURCE
#include "wl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct { const char *name; char *val; } field_t;
typedef struct { field_t *f; size_t n, cap; char **tags; size_t ntags; } prec_t;
typedef struct intern_s { struct intern_s *next; uint64_t h; char s[]; } intern_t;

static unsigned long n_lines = 200000, keep = 4096, n_names = 2000;
static intern_t **itab;
static size_t itab_n = 4096;
static uint64_t rng;

static uint64_t hash_n(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}
static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) wl_die("out of memory copying a string");
  memcpy(d, s, n); d[n] = 0;
  WL_TR('W', d, (uint32_t)n + 1);
  return d;
}
static const char *intern(const char *s, size_t n) {
  uint64_t h = hash_n(s, n);
  intern_t **slot = &itab[h & (itab_n - 1)];
  WL_TR('R', slot, 8);
  for (intern_t *e = *slot; e; e = e->next) {
    WL_TR('R', e, 16 + (uint32_t)n);
    if (e->h == h && !strncmp(e->s, s, n) && !e->s[n]) return e->s;
  }
  intern_t *e = malloc(sizeof *e + n + 1);
  if (!e) wl_die("out of memory interning");
  e->h = h; memcpy(e->s, s, n); e->s[n] = 0; e->next = *slot; *slot = e;
  return e->s;
}
static void add_field(prec_t *r, const char *name, char *val) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 2;
    r->f = realloc(r->f, r->cap * sizeof *r->f);
    if (!r->f) wl_die("out of memory growing a record");
  }
  r->f[r->n].name = name; r->f[r->n].val = val;
  WL_TR('W', &r->f[r->n], sizeof *r->f);
  r->n++;
}
static void free_rec(prec_t *r) {
  for (size_t i = 0; i < r->n; i++) free(r->f[i].val);
  for (size_t i = 0; i < r->ntags; i++) free(r->tags[i]);
  free(r->f); free(r->tags); free(r);
}

/* one line in buf (no newline), returns its length */
static size_t gen_line(char *buf, size_t cap) {
  size_t n = 0;
  int nf = 3 + (int)(wl_rand(&rng) % 6);
  for (int i = 0; i < nf && n + 80 < cap; i++) {
    unsigned long name = wl_rand(&rng) % n_names;
    if (i == nf - 1)
      n += (size_t)snprintf(buf + n, cap - n, "tags=t%lu,t%lu,t%lu ", wl_rand(&rng) % 50,
                            wl_rand(&rng) % 50, wl_rand(&rng) % 50);
    else
      n += (size_t)snprintf(buf + n, cap - n, "field%lu=v%llx ", name,
                            (unsigned long long)(wl_rand(&rng) >> (wl_rand(&rng) % 56)));
  }
  return n;
}

static prec_t *parse_line(const char *p, size_t len) {
  prec_t *r = calloc(1, sizeof *r);
  if (!r) wl_die("out of memory for a record");
  const char *end = p + len;
  while (p < end) {
    const char *tok = p;
    while (p < end && *p != ' ') p++;
    const char *eq = memchr(tok, '=', (size_t)(p - tok));
    if (eq) {
      const char *name = intern(tok, (size_t)(eq - tok));
      if (!strcmp(name, "tags")) {
        const char *t = eq + 1;
        while (t < p) {
          const char *c = memchr(t, ',', (size_t)(p - t));
          if (!c) c = p;
          r->tags = realloc(r->tags, (r->ntags + 1) * sizeof *r->tags);
          if (!r->tags) wl_die("out of memory for tags");
          r->tags[r->ntags++] = dup_n(t, (size_t)(c - t));
          t = c + 1;
        }
      } else {
        add_field(r, name, dup_n(eq + 1, (size_t)(p - eq - 1)));
      }
    }
    while (p < end && *p == ' ') p++;
  }
  return r;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"lines", "log lines parsed (timed)", 'u', &n_lines},
    {"keep", "most recent parsed records kept alive", 'u', &keep},
    {"names", "distinct field names", 'u', &n_names},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_strings", argc, argv, flags);
  if (keep < 1 || n_names < 1) wl_die("--keep and --names must be at least 1");
  rng = wl_seed;
  itab = calloc(itab_n, sizeof *itab);
  /* the input text is generated up front into mmap'd memory (input, not heap) */
  size_t text_cap = n_lines * 400 + 4096, text_n = 0;
  char *text = mmap(NULL, text_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!itab || text == MAP_FAILED) wl_die("no memory for the input text");
  for (unsigned long i = 0; i < n_lines; i++) {
    text_n += gen_line(text + text_n, text_cap - text_n);
    text[text_n++] = '\n';
  }
  prec_t **ring = calloc(keep, sizeof *ring);
  if (!ring) wl_die("no memory for the record ring");
  uint64_t acc = 0;
  double t0 = wl_now_ns();
  const char *p = text, *end = text + text_n;
  for (unsigned long i = 0; p < end; i++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    prec_t *r = parse_line(p, (size_t)(nl - p));
    p = nl + 1;
    size_t slot = i % keep;
    if (ring[slot]) free_rec(ring[slot]);
    ring[slot] = r;
    /* aggregation over an older kept record: reads its strings back */
    prec_t *o = ring[(i * 7919) % keep];
    if (o) for (size_t k = 0; k < o->n; k++) { WL_TR('R', o->f[k].val, 8); acc += (unsigned char)o->f[k].val[0]; }
    /* trace from the second quarter; measure the second half (or from a quarter of the trace) */
    if (i == n_lines / 4 && wl_trace_path) wl_trace_open();
    if (i >= n_lines / 4 && (i == n_lines / 2 || wl_trace_count() >= wl_trace_warm_max())) wl_trace_mark();
  }
  double ns = wl_now_ns() - t0;
  wl_trace_close();
  wl_sink = acc;
  wl_hot_add(itab, itab_n * sizeof *itab);
  for (size_t b = 0; b < itab_n; b++)
    for (intern_t *e = itab[b]; e; e = e->next) wl_hot_add(e, sizeof *e + strlen(e->s) + 1);
  for (unsigned long i = 0; i < keep; i++)
    if (ring[i]) {
      wl_hot_add(ring[i]->f, ring[i]->n * sizeof *ring[i]->f);
      for (size_t k = 0; k < ring[i]->n; k++) wl_hot_add(ring[i]->f[k].val, strlen(ring[i]->f[k].val) + 1);
    }
  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[256];
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=line ops=%lu input_mb=%.1f",
           ns / (double)n_lines, n_lines, (double)text_n / 1048576.0);
  wl_result("strings", extra, &hs);
  return 0;
}
