/* Workload 2: an ordered index (left-leaning red-black tree) — a database's shape.
 *
 * Each entry is a tree node (48 B) plus a separately allocated value (32-256 B); every insert
 * also allocates a short-lived temporary (a "log record", freed a few inserts later). After the
 * initial load, a timed mix runs: 50% point lookups, 20% inserts, 20% deletes, 10% range scans
 * of 32 keys. Each operation's key comes from the bytes the previous one read, so the descents
 * are dependent.
 *
 * Trace (--trace): every node visited by a descent or scan (R, 48 B), every value read (R, 8 B)
 * and every node or value written by insert/delete (W). */
#define _GNU_SOURCE
#include "wl_common.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct node_s {
  uint64_t key;
  struct node_s *left, *right;
  unsigned char *val;
  uint32_t vlen;
  uint32_t red;
} node_t;

static unsigned long n_keys = 100000, n_ops = 400000;
static uint64_t rng;
static void *tmp_ring[16];
static unsigned tmp_i;

static int is_red(const node_t *n) { return n && n->red; }
static node_t *rot_left(node_t *h) {
  node_t *x = h->right;
  h->right = x->left; x->left = h; x->red = h->red; h->red = 1;
  WL_TR('W', h, sizeof *h); WL_TR('W', x, sizeof *x);
  return x;
}
static node_t *rot_right(node_t *h) {
  node_t *x = h->left;
  h->left = x->right; x->right = h; x->red = h->red; h->red = 1;
  WL_TR('W', h, sizeof *h); WL_TR('W', x, sizeof *x);
  return x;
}
static void flip(node_t *h) {
  h->red = !h->red; h->left->red = !h->left->red; h->right->red = !h->right->red;
  WL_TR('W', h, sizeof *h);
}
static node_t *fixup(node_t *h) {
  if (is_red(h->right) && !is_red(h->left)) h = rot_left(h);
  if (is_red(h->left) && is_red(h->left->left)) h = rot_right(h);
  if (is_red(h->left) && is_red(h->right)) flip(h);
  return h;
}

static node_t *new_node(uint64_t key) {
  node_t *n = malloc(sizeof *n);
  uint32_t vlen = (uint32_t)wl_rand_range(&rng, 32, 256);
  unsigned char *v = malloc(vlen);
  void *tmp = malloc(wl_rand_range(&rng, 24, 200));  /* the insert's log record */
  if (!n || !v || !tmp) wl_die("out of memory inserting key %llu", (unsigned long long)key);
  for (uint32_t i = 0; i < vlen; i += 8) { uint64_t r = wl_rand(&rng); memcpy(v + i, &r, vlen - i < 8 ? vlen - i : 8); }
  memset(tmp, 0, 24);
  free(tmp_ring[tmp_i % 16]);
  tmp_ring[tmp_i++ % 16] = tmp;
  n->key = key; n->left = n->right = NULL; n->val = v; n->vlen = vlen; n->red = 1;
  WL_TR('W', n, sizeof *n); WL_TR('W', v, vlen);
  return n;
}

static node_t *insert(node_t *h, uint64_t key, int *added) {
  if (!h) { *added = 1; return new_node(key); }
  WL_TR('R', h, sizeof *h);
  if (key < h->key) h->left = insert(h->left, key, added);
  else if (key > h->key) h->right = insert(h->right, key, added);
  return fixup(h);
}

static node_t *move_red_left(node_t *h) {
  flip(h);
  if (is_red(h->right->left)) { h->right = rot_right(h->right); h = rot_left(h); flip(h); }
  return h;
}
static node_t *move_red_right(node_t *h) {
  flip(h);
  if (is_red(h->left->left)) { h = rot_right(h); flip(h); }
  return h;
}
static node_t *delete_min(node_t *h, node_t **out) {
  WL_TR('R', h, sizeof *h);
  if (!h->left) { *out = h; return NULL; }
  if (!is_red(h->left) && !is_red(h->left->left)) h = move_red_left(h);
  h->left = delete_min(h->left, out);
  return fixup(h);
}
/* key must be present */
static node_t *delete(node_t *h, uint64_t key) {
  WL_TR('R', h, sizeof *h);
  if (key < h->key) {
    if (!is_red(h->left) && !is_red(h->left->left)) h = move_red_left(h);
    h->left = delete(h->left, key);
  } else {
    if (is_red(h->left)) h = rot_right(h);
    if (key == h->key && !h->right) { free(h->val); free(h); return NULL; }
    if (!is_red(h->right) && !is_red(h->right->left)) h = move_red_right(h);
    if (key == h->key) {
      node_t *m;
      h->right = delete_min(h->right, &m);
      free(h->val);
      h->key = m->key; h->val = m->val; h->vlen = m->vlen;
      WL_TR('W', h, sizeof *h);
      free(m);
    } else {
      h->right = delete(h->right, key);
    }
  }
  return fixup(h);
}

static const node_t *find(const node_t *h, uint64_t key) {
  while (h) {
    WL_TR('R', h, sizeof *h);
    if (key == h->key) return h;
    h = key < h->key ? h->left : h->right;
  }
  return NULL;
}

/* sum of the first word of up to `count` values with keys >= lo, in order */
static uint64_t scan(const node_t *h, uint64_t lo, unsigned *count) {
  if (!h || !*count) return 0;
  WL_TR('R', h, sizeof *h);
  uint64_t s = 0;
  if (lo < h->key) s += scan(h->left, lo, count);
  if (*count && h->key >= lo) {
    uint64_t w; memcpy(&w, h->val, 8); WL_TR('R', h->val, 8);
    s += w; (*count)--;
  }
  if (*count) s += scan(h->right, lo, count);
  return s;
}

static void hot_walk(const node_t *h) {
  if (!h) return;
  wl_hot_add(h, sizeof *h); wl_hot_add(h->val, h->vlen);
  hot_walk(h->left); hot_walk(h->right);
}

/* live keys, for picking deletions and lookups that hit (mmap'd: not the allocator's business) */
static uint64_t *keys;
static size_t n_live, keys_cap;

static uint64_t run_ops(node_t **root, unsigned long ops, uint64_t state) {
  for (unsigned long i = 0; i < ops; i++) {
    unsigned kind = (unsigned)(state % 10);
    size_t idx = (size_t)((state >> 8) % n_live);
    if (kind < 5) {  /* point lookup of a live key */
      const node_t *n = find(*root, keys[idx]);
      uint64_t w; memcpy(&w, n->val + (state >> 20) % (n->vlen - 7), 8);
      WL_TR('R', n->val, 8);
      state = (state ^ w) * 0x9E3779B97F4A7C15ULL;
    } else if (kind < 7) {  /* insert a fresh key */
      if (n_live == keys_cap) { state = state * 31 + 7; continue; }
      uint64_t k = wl_rand(&rng);
      int added = 0;
      *root = insert(*root, k, &added); (*root)->red = 0;
      if (added) keys[n_live++] = k;
      state = (state ^ k) * 0x9E3779B97F4A7C15ULL;
    } else if (kind < 9) {  /* delete a live key */
      if (n_live < 2) { state = state * 31 + 7; continue; }
      *root = delete(*root, keys[idx]);
      if (*root) (*root)->red = 0;
      keys[idx] = keys[--n_live];
      state = (state + idx) * 0x9E3779B97F4A7C15ULL;
    } else {  /* range scan */
      unsigned count = 32;
      state = (state ^ scan(*root, keys[idx], &count)) * 0x9E3779B97F4A7C15ULL;
    }
    state ^= state >> 31;
  }
  return state;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"keys", "keys loaded before the timed mix", 'u', &n_keys},
    {"ops", "operations in the timed mix", 'u', &n_ops},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_index", argc, argv, flags);
  if (n_keys < 16) wl_die("--keys must be at least 16");
  rng = wl_seed;
  keys_cap = n_keys * 2;
  keys = mmap(NULL, keys_cap * sizeof *keys, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (keys == MAP_FAILED) wl_die("no memory for the key list");

  node_t *root = NULL;
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_keys; i++) {
    uint64_t k = wl_rand(&rng);
    int added = 0;
    root = insert(root, k, &added); root->red = 0;
    if (added) keys[n_live++] = k;
  }
  double load_ns = wl_now_ns() - t0;
  uint64_t warm_state = 12345;
  uint64_t state = run_ops(&root, n_ops / 10, warm_state);  /* warm-up */
  double t1 = wl_now_ns();
  state = run_ops(&root, n_ops, state);
  double mix_ns = wl_now_ns() - t1;
  if (wl_trace_path) {
    /* a warm-up in steps of 100 operations (at most a quarter of the trace), the B record */
    wl_trace_open();
    for (unsigned long w = 0; w < n_ops / 10 && wl_trace_count() < wl_trace_warm_max(); w += 100)
      state = run_ops(&root, 100, state);
    wl_trace_mark();
    while (wl_trace_on()) state = run_ops(&root, 1000, state);
    wl_trace_close();
  }
  wl_sink = state;
  hot_walk(root);
  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[256];
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=mixed-op ops=%lu keys=%zu load_ms=%.1f",
           mix_ns / (double)n_ops, n_ops, n_live, load_ns / 1e6);
  wl_result("index", extra, &hs);
  return 0;
}
