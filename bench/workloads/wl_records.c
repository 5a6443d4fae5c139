/* Workload 1: co-used records with dependent lookups.
 *
 * Build: each record is a node (64 B) + key (16-48 B) + value (64-256 B), three malloc calls in a
 * row, interleaved with long-lived cold buffers (log-uniform 16 B-2 KiB, written once, never
 * read again) and short-lived temporaries (16-256 B, freed a few records later). A
 * size-segregated allocator puts node, key and value on three different slabs diluted by cold
 * objects of the same size classes; an allocator that groups by call site keeps them together.
 *
 * Lookup: from the current record read the node, hash the key, read one word of the value
 * chosen by that hash, and follow link[hash & 1]. Each lookup depends on the bytes the previous
 * one read, so the CPU cannot overlap misses (independent lookups would hide the TLB).
 *
 * --ideal: node, key and value are bump-allocated from one MAP_HUGETLB region (or, with no
 * pool, a 2 MiB-aligned region with MADV_HUGEPAGE): the layout limit to compare with.
 *
 * Trace (--trace): the lookups only: R node (64 B), R key (its length), R value word (8 B). */
#define _GNU_SOURCE
#include "wl_common.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct rec_s {
  struct rec_s *link[2];
  const unsigned char *key;
  const unsigned char *val;
  uint32_t klen, vlen;
  uint64_t pad[3];
} rec_t;

static unsigned long n_recs = 40000, n_lookups = 2000000, n_cold = 2;
static int ideal;
static int arena; /* hot objects from tlbpack's ordered group API, as a database would use it */
static void *group;
static void *(*group_malloc)(void *, size_t);

/* ---- the ideal layout: a bump allocator over huge pages ---------------------------------- */
static char *bump, *bump_end;
static const char *ideal_src = "none";

static void ideal_init(size_t bytes) {
  size_t len = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
  if (p != MAP_FAILED) {
    ideal_src = "hugetlb";
  } else {
    char *raw = mmap(NULL, len + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) wl_die("ideal layout: cannot map %zu bytes", len);
    p = (void *)(((uintptr_t)raw + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
    madvise(p, len, MADV_HUGEPAGE);
    ideal_src = "thp-madvise";
  }
  bump = p;
  bump_end = bump + len;
}

static void arena_init(void) {
  void *(*create)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "tp_group_create_arena");
  group_malloc = (void *(*)(void *, size_t))dlsym(RTLD_DEFAULT, "tp_group_malloc");
  if (!create || !group_malloc) wl_die("--arena needs tlbpack preloaded (tp_group_create_arena not found)");
  group = create("records");
  if (!group) wl_die("--arena: tp_group_create_arena failed");
}

static void *hot_alloc(size_t n) {
  if (arena) return group_malloc(group, n);
  if (!ideal) return malloc(n);
  n = (n + 15) & ~(size_t)15;
  if (bump + n > bump_end) wl_die("ideal layout: region too small");
  void *p = bump;
  bump += n;
  return p;
}

static size_t log_uniform(uint64_t *s, size_t lo, size_t hi) {
  /* pick a power-of-two band, then uniform inside it */
  unsigned bands = 0;
  while ((lo << bands) < hi) bands++;
  unsigned b = (unsigned)(wl_rand(s) % (bands ? bands : 1));
  size_t a = lo << b, z = (lo << (b + 1)) < hi ? (lo << (b + 1)) : hi;
  return a + wl_rand(s) % (z - a + 1);
}

/* word-at-a-time so the lookup stays memory-bound, not hash-bound */
static inline uint64_t key_hash(const unsigned char *k, uint32_t n) {
  uint64_t h = 1469598103934665603ULL, w;
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) { memcpy(&w, k + i, 8); h = (h ^ w) * 0x9E3779B97F4A7C15ULL; }
  if (i < n) { memcpy(&w, k + n - 8, 8); h = (h ^ w) * 0x9E3779B97F4A7C15ULL; }
  return h ^ (h >> 29);
}

/* The state carries every byte read so far: a walk that depended on the record alone would
 * fall into a short cycle (a random mapping's cycles are ~sqrt(n) long). */
static inline void lookup_step(const rec_t **cur, uint64_t *state, int tr) {
  const rec_t *r = *cur;
  uint64_t h = key_hash(r->key, r->klen) ^ *state, w;
  const unsigned char *vp = r->val + (uint32_t)(h % (r->vlen - 7));
  memcpy(&w, vp, 8);
  if (tr) { WL_TR('R', r, sizeof *r); WL_TR('R', r->key, r->klen); WL_TR('R', vp, 8); }
  h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
  *state = h;
  *cur = r->link[(h >> 40) & 1];
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"records", "number of records (hot set = about 256 B each)", 'u', &n_recs},
    {"lookups", "dependent lookups timed", 'u', &n_lookups},
    {"cold", "long-lived cold buffers allocated per record", 'u', &n_cold},
    {"ideal", "hot objects bump-allocated from one huge-page region", 'b', &ideal},
    {"arena", "hot objects from tlbpack's tp_group_create_arena (tlbpack preloaded)", 'b', &arena},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_records", argc, argv, flags);
  if (n_recs < 2) wl_die("--records must be at least 2");
  uint64_t s = wl_seed;

  rec_t **recs = mmap(NULL, n_recs * sizeof *recs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (recs == MAP_FAILED) wl_die("no memory for %lu record pointers", n_recs);
  if (ideal) ideal_init(n_recs * (sizeof(rec_t) + 48 + 256 + 32));
  if (arena) arena_init();

  enum { RING = 32 };
  void *ring[RING] = {0};
  size_t cold_bytes = 0;
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_recs; i++) {
    rec_t *r = hot_alloc(sizeof *r);
    uint32_t klen = (uint32_t)wl_rand_range(&s, 16, 48);
    unsigned char *k = hot_alloc(klen);
    void *tmp = malloc(wl_rand_range(&s, 16, 256));  /* a temporary between key and value */
    uint32_t vlen = (uint32_t)wl_rand_range(&s, 64, 256);
    unsigned char *v = hot_alloc(vlen);
    if (!r || !k || !v || !tmp) wl_die("out of memory at record %lu", i);
    for (uint32_t j = 0; j < klen; j++) k[j] = (unsigned char)wl_rand(&s);
    for (uint32_t j = 0; j < vlen; j++) v[j] = (unsigned char)wl_rand(&s);
    memset(tmp, 1, 16);
    r->key = k; r->val = v; r->klen = klen; r->vlen = vlen;
    recs[i] = r;
    for (unsigned long c = 0; c < n_cold; c++) {  /* cold and never freed: leaks on purpose */
      size_t n = log_uniform(&s, 16, 2048);
      char *cb = malloc(n);
      if (!cb) wl_die("out of memory (cold buffer)");
      memset(cb, 2, n);
      cold_bytes += n;
    }
    unsigned slot = (unsigned)(i % RING);
    free(ring[slot]);
    ring[slot] = tmp;
  }
  for (unsigned i = 0; i < RING; i++) free(ring[i]);
  /* links: link[0] follows a random cycle through every record, link[1] a random record */
  unsigned long *perm = mmap(NULL, n_recs * sizeof *perm, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (perm == MAP_FAILED) wl_die("no memory for the permutation");
  for (unsigned long i = 0; i < n_recs; i++) perm[i] = i;
  for (unsigned long i = n_recs - 1; i > 0; i--) {
    unsigned long j = wl_rand(&s) % (i + 1), t = perm[i];
    perm[i] = perm[j]; perm[j] = t;
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
  }

  const rec_t *cur = recs[0];
  uint64_t acc = 1;
  unsigned long warm = n_lookups / 10 < n_recs ? n_lookups / 10 : n_recs;
  for (unsigned long i = 0; i < warm; i++) lookup_step(&cur, &acc, 0);
  double t1 = wl_now_ns();
  for (unsigned long i = 0; i < n_lookups; i++) lookup_step(&cur, &acc, 0);
  double look_ns = wl_now_ns() - t1;

  if (wl_trace_path) {
    /* the traced run repeats the timed one: its warm-up (3 records a lookup), then the B record */
    wl_trace_open();
    cur = recs[0];
    for (unsigned long i = 0; i < warm && wl_trace_count() + 3 <= wl_trace_warm_max(); i++)
      lookup_step(&cur, &acc, 1);
    wl_trace_mark();
    while (wl_trace_on()) lookup_step(&cur, &acc, 1);
    wl_trace_close();
  }
  wl_sink = acc;

  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[512];
  snprintf(extra, sizeof extra,
           "ns_per_op=%.2f op=lookup ops=%lu records=%lu build_ms=%.1f cold_bytes=%zu layout=%s",
           look_ns / (double)n_lookups, n_lookups, n_recs, build_ns / 1e6, cold_bytes,
           ideal ? ideal_src : "malloc");
  wl_result("records", extra, &hs);
  return 0;
}
