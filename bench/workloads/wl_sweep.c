/* Workload: the TLB sweep's program, one point of it per run (tlbbench --sweep runs the grid).
 *
 * A program of the records family that is not tuned for: each record is a 48 B node, a 16-48 B
 * key and a 64-256 B value, allocated through
 *   --sites 1   one helper (every hot allocation has the helper's return address),
 *   --sites 3   three call sites,
 *   --sites 8   eight call sites (the node, key, value and five 16-64 B attributes chained
 *               from the node, each from its own site: many sites per record);
 * built
 *   --build pass    records back to back, the cold buffers after all of them,
 *   --build batch   in batches of 256 records, each batch followed by its cold buffers,
 *   --build inter   record by record, each followed by its cold buffers (other work between);
 * with --cold N long-lived cold buffers per record (log-uniform 16 B-2 KiB, written once, never
 * read again) and, with --temp 1, a short-lived temporary (16-256 B) per record freed 32
 * records later; by --threads T threads, each building its share of the records (the lookups run
 * in the main thread). --heap-kb K picks the number of records that makes K KiB of live data
 * (hot and cold); --records N sets it directly.
 *
 * Lookup: from the current record read its node, key, one word of its value and (sites 8) its
 * attributes, and follow a link chosen by what was read (dependent: the TLB cannot be hidden).
 * The hot set is every record's node, key, value and attributes. */
#define _GNU_SOURCE
#include "wl_common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct attr_s { /* 16-64 bytes: the lookup reads its first and last words */
  struct attr_s *next;
  uint32_t len;
  uint32_t word;
} attr_t;

typedef struct rec_s { /* 48 bytes */
  struct rec_s *link[2];
  const unsigned char *key;
  const unsigned char *val;
  attr_t *attrs;
  uint32_t klen, vlen;
} rec_t;

#define NATTRS 5
#define BATCH 256
#define RING 32

static unsigned long n_recs, heap_kb, n_lookups = 1000000, n_sites = 1, n_cold = 1, temp_on = 1, n_threads = 1;
static const char *build = "inter";
static int build_mode; /* 0 pass, 1 batch, 2 inter */
static rec_t **recs;

/* The one helper of --sites 1: not inlined, and not a tail call (the check after malloc), so
 * that every hot allocation has its return address. */
__attribute__((noinline)) static void *xalloc(size_t n) {
  void *p = malloc(n);
  if (p == NULL) wl_die("out of memory (%zu bytes)", n);
  __asm__ volatile("" ::: "memory");
  return p;
}

#define CHECKED(p) do { if ((p) == NULL) wl_die("out of memory"); } while (0)

static size_t log_uniform(uint64_t *s, size_t lo, size_t hi) {
  unsigned bands = 0;
  while ((lo << bands) < hi) bands++;
  unsigned b = (unsigned)(wl_rand(s) % (bands ? bands : 1));
  size_t a = lo << b, z = (lo << (b + 1)) < hi ? (lo << (b + 1)) : hi;
  return a + wl_rand(s) % (z - a + 1);
}

static void fill(void *p, size_t n, uint64_t *s) {
  unsigned char *c = p;
  for (size_t j = 0; j < n; j++) c[j] = (unsigned char)wl_rand(s);
}

static rec_t *make_record(uint64_t *s) {
  uint32_t klen = (uint32_t)wl_rand_range(s, 16, 48), vlen = (uint32_t)wl_rand_range(s, 64, 256);
  rec_t *r;
  unsigned char *k, *v;
  attr_t *head = NULL;
  if (n_sites == 1) {
    r = xalloc(sizeof *r);
    k = xalloc(klen);
    v = xalloc(vlen);
  } else {
    r = malloc(sizeof *r);
    CHECKED(r);
    k = malloc(klen);
    CHECKED(k);
    v = malloc(vlen);
    CHECKED(v);
  }
  if (n_sites >= 8) {
    /* five more sites, one per attribute: written out so that each has its own return address */
    attr_t *a[NATTRS];
    uint32_t len[NATTRS];
    for (int i = 0; i < NATTRS; i++) len[i] = (uint32_t)wl_rand_range(s, 16, 64);
    a[0] = malloc(len[0]); CHECKED(a[0]);
    a[1] = malloc(len[1]); CHECKED(a[1]);
    a[2] = malloc(len[2]); CHECKED(a[2]);
    a[3] = malloc(len[3]); CHECKED(a[3]);
    a[4] = malloc(len[4]); CHECKED(a[4]);
    for (int i = NATTRS - 1; i >= 0; i--) {
      fill(a[i], len[i], s);
      a[i]->next = head, a[i]->len = len[i], head = a[i];
    }
  }
  fill(k, klen, s);
  fill(v, vlen, s);
  memset(r, 0, sizeof *r);
  r->key = k, r->val = v, r->klen = klen, r->vlen = vlen, r->attrs = head;
  return r;
}

static size_t make_cold(uint64_t *s) {
  size_t total = 0;
  for (unsigned long c = 0; c < n_cold; c++) {
    size_t n = log_uniform(s, 16, 2048);
    char *cb = malloc(n); /* cold and never freed: leaks on purpose */
    CHECKED(cb);
    memset(cb, 2, n);
    total += n;
  }
  return total;
}

typedef struct {
  unsigned long from, to;
  size_t cold_bytes;
} part_t;
static part_t parts[64];

static void *build_part(void *arg) {
  part_t *pt = &parts[(long)arg];
  uint64_t s = wl_seed * 0x9E3779B97F4A7C15ULL + (uint64_t)(long)arg + 1;
  void *ring[RING] = {0};
  unsigned ri = 0;
  for (unsigned long i = pt->from; i < pt->to; i++) {
    recs[i] = make_record(&s);
    if (temp_on) {
      void *tmp = malloc(wl_rand_range(&s, 16, 256));
      CHECKED(tmp);
      memset(tmp, 1, 16);
      free(ring[ri % RING]);
      ring[ri++ % RING] = tmp;
    }
    if (build_mode == 2) pt->cold_bytes += make_cold(&s);
    if (build_mode == 1 && ((i - pt->from + 1) % BATCH == 0 || i + 1 == pt->to))
      for (unsigned long j = 0; j < BATCH && j <= i - pt->from; j++) pt->cold_bytes += make_cold(&s);
  }
  if (build_mode == 0)
    for (unsigned long i = pt->from; i < pt->to; i++) pt->cold_bytes += make_cold(&s);
  for (unsigned i = 0; i < RING; i++) free(ring[i]);
  return NULL;
}

static inline uint64_t key_hash(const unsigned char *k, uint32_t n) {
  uint64_t h = 1469598103934665603ULL, w;
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) { memcpy(&w, k + i, 8); h = (h ^ w) * 0x9E3779B97F4A7C15ULL; }
  if (i < n) { memcpy(&w, k + n - 8, 8); h = (h ^ w) * 0x9E3779B97F4A7C15ULL; }
  return h ^ (h >> 29);
}

static inline void lookup_step(const rec_t **cur, uint64_t *state) {
  const rec_t *r = *cur;
  uint64_t h = key_hash(r->key, r->klen) ^ *state, w;
  memcpy(&w, r->val + (uint32_t)(h % (r->vlen - 7)), 8);
  for (const attr_t *a = r->attrs; a; a = a->next) {
    uint64_t last;
    memcpy(&last, (const char *)a + a->len - 8, 8);
    w ^= last;
  }
  h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
  *state = h;
  *cur = r->link[(h >> 40) & 1];
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"heap-kb", "live data to build, in KiB (picks --records)", 'u', &heap_kb},
    {"records", "number of records (instead of --heap-kb)", 'u', &n_recs},
    {"sites", "allocation sites per record: 1 (one helper), 3, 8", 'u', &n_sites},
    {"build", "pass | batch | inter: when the cold buffers are made", 's', &build},
    {"cold", "long-lived cold buffers per record (16 B-2 KiB)", 'u', &n_cold},
    {"temp", "1: a short-lived temporary per record; 0: none", 'u', &temp_on},
    {"threads", "threads building the records (1-64)", 'u', &n_threads},
    {"lookups", "dependent lookups timed", 'u', &n_lookups},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_sweep", argc, argv, flags);
  if (n_sites != 1 && n_sites != 3 && n_sites != 8) wl_die("--sites must be 1, 3 or 8, got %lu", n_sites);
  if (!strcmp(build, "pass")) build_mode = 0;
  else if (!strcmp(build, "batch")) build_mode = 1;
  else if (!strcmp(build, "inter")) build_mode = 2;
  else wl_die("--build must be pass, batch or inter, got '%s'", build);
  if (n_threads < 1 || n_threads > 64) wl_die("--threads must be 1-64, got %lu", n_threads);
  if (temp_on > 1) wl_die("--temp must be 0 or 1, got %lu", temp_on);
  /* live bytes a record brings, on average: node 48, key 32, value 160, attributes 5 x 40, and
   * the cold buffers' log-uniform 16 B-2 KiB (bands of 16-32 ... 1024-2048: 435 B) */
  size_t per = 48 + 32 + 160 + (n_sites >= 8 ? NATTRS * 40 : 0) + n_cold * 435;
  if (heap_kb) n_recs = (unsigned long)((heap_kb << 10) / per);
  if (n_recs < 2) wl_die("need at least 2 records (--records, or a larger --heap-kb)");
  if (n_recs < n_threads) n_threads = n_recs;

  recs = mmap(NULL, n_recs * sizeof *recs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (recs == MAP_FAILED) wl_die("no memory for %lu record pointers", n_recs);
  double t0 = wl_now_ns();
  pthread_t th[64];
  for (unsigned long t = 0; t < n_threads; t++) {
    parts[t].from = n_recs * t / n_threads;
    parts[t].to = n_recs * (t + 1) / n_threads;
  }
  if (n_threads == 1) build_part((void *)0L);
  else {
    for (unsigned long t = 0; t < n_threads; t++)
      if (wl_thread_start(&th[t], build_part, (long)t) != 0) wl_die("cannot start thread %lu", t);
    for (unsigned long t = 0; t < n_threads; t++) pthread_join(th[t], NULL);
  }
  size_t cold_bytes = 0;
  for (unsigned long t = 0; t < n_threads; t++) cold_bytes += parts[t].cold_bytes;

  uint64_t s = wl_seed;
  unsigned long *perm = mmap(NULL, n_recs * sizeof *perm, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (perm == MAP_FAILED) wl_die("no memory for the permutation");
  for (unsigned long i = 0; i < n_recs; i++) perm[i] = i;
  for (unsigned long i = n_recs - 1; i > 0; i--) {
    unsigned long j = wl_rand(&s) % (i + 1), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  for (unsigned long i = 0; i < n_recs; i++) {
    recs[perm[i]]->link[0] = recs[perm[(i + 1) % n_recs]];
    recs[perm[i]]->link[1] = recs[wl_rand(&s) % n_recs];
  }
  double build_ns = wl_now_ns() - t0;
  for (unsigned long i = 0; i < n_recs; i++) {
    wl_hot_add(recs[i], sizeof(rec_t));
    wl_hot_add(recs[i]->key, recs[i]->klen);
    wl_hot_add(recs[i]->val, recs[i]->vlen);
    for (attr_t *a = recs[i]->attrs; a; a = a->next) wl_hot_add(a, a->len);
  }

  const rec_t *cur = recs[0];
  uint64_t acc = 1;
  unsigned long warm = n_lookups / 10 < n_recs ? n_lookups / 10 : n_recs;
  for (unsigned long i = 0; i < warm; i++) lookup_step(&cur, &acc);
  double t1 = wl_now_ns();
  for (unsigned long i = 0; i < n_lookups; i++) lookup_step(&cur, &acc);
  double look_ns = wl_now_ns() - t1;
  wl_sink = acc;

  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[512];
  snprintf(extra, sizeof extra,
           "ns_per_op=%.2f op=lookup ops=%lu records=%lu sites=%lu build=%s cold=%lu temp=%lu threads=%lu"
           " build_ms=%.1f cold_bytes=%zu",
           n_lookups ? look_ns / (double)n_lookups : 0.0, n_lookups, n_recs, n_sites, build, n_cold, temp_on,
           n_threads, build_ns / 1e6, cold_bytes);
  wl_result("sweep", extra, &hs);
  return 0;
}
