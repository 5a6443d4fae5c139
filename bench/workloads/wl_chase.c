/* Workload 3: pointer chasing through a list linked in random order, with and without warming.
 *
 * Nodes (32-192 B) are allocated one after another, each followed by a cold buffer (never read
 * again), then linked in a random permutation. Every node also holds a jump pointer to the node
 * `--warm` steps ahead; with --warm K > 0 each step warms that node's page before moving on:
 * through tp_warm() when the allocator under test exports it (found with dlsym), else with
 * __builtin_prefetch. The RESULT line says which (warm_method=tp_warm|prefetch|none).
 *
 * Trace (--trace): R of each node visited (16 B: next and payload), P (prefetch) of the warmed
 * node when warming. */
#define _GNU_SOURCE
#include "wl_common.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct cnode_s {
  struct cnode_s *next;
  struct cnode_s *ahead;  /* `warm` steps further along the list */
  uint64_t payload;
  uint32_t size;
} cnode_t;

static unsigned long n_nodes = 100000, n_steps = 2000000, warm_k, cold_per = 1;

typedef void (*warm_fn)(const void *);

static uint64_t chase(const cnode_t *n, unsigned long steps, warm_fn wf, int tr) {
  uint64_t acc = 0;
  for (unsigned long i = 0; i < steps; i++) {
    if (warm_k) {
      if (wf) wf(n->ahead); else __builtin_prefetch(n->ahead);
      if (tr) WL_TR('P', n->ahead, 1);
    }
    if (tr) WL_TR('R', n, 24);
    acc += n->payload;
    n = n->next;
  }
  return acc;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"nodes", "list length", 'u', &n_nodes},
    {"steps", "steps timed", 'u', &n_steps},
    {"warm", "warm the node this many steps ahead (0 = no warming)", 'u', &warm_k},
    {"cold", "cold buffers allocated after each node", 'u', &cold_per},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_chase", argc, argv, flags);
  if (n_nodes < 2) wl_die("--nodes must be at least 2");
  uint64_t s = wl_seed;
  warm_fn wf = NULL;
  const char *method = "none";
  if (warm_k) {
    wf = (warm_fn)dlsym(RTLD_DEFAULT, "tp_warm");
    method = wf ? "tp_warm" : "prefetch";
  }
  cnode_t **v = mmap(NULL, n_nodes * sizeof *v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (v == MAP_FAILED) wl_die("no memory for %lu node pointers", n_nodes);
  double t0 = wl_now_ns();
  for (unsigned long i = 0; i < n_nodes; i++) {
    uint32_t sz = (uint32_t)wl_rand_range(&s, sizeof(cnode_t), 192);
    v[i] = malloc(sz);
    if (!v[i]) wl_die("out of memory at node %lu", i);
    memset(v[i], 0, sz);
    v[i]->size = sz;
    v[i]->payload = wl_rand(&s);
    for (unsigned long c = 0; c < cold_per; c++) {
      size_t cn = wl_rand_range(&s, 32, 1024);
      char *cb = malloc(cn);
      if (!cb) wl_die("out of memory (cold buffer)");
      memset(cb, 3, cn);
    }
  }
  for (unsigned long i = n_nodes - 1; i > 0; i--) {  /* random order */
    unsigned long j = wl_rand(&s) % (i + 1);
    cnode_t *t = v[i]; v[i] = v[j]; v[j] = t;
  }
  for (unsigned long i = 0; i < n_nodes; i++) {
    v[i]->next = v[(i + 1) % n_nodes];
    v[i]->ahead = v[(i + (warm_k ? warm_k : 1)) % n_nodes];
    wl_hot_add(v[i], 24);
  }
  double build_ns = wl_now_ns() - t0;
  unsigned long warm_steps = n_nodes < n_steps / 10 ? n_nodes : n_steps / 10;
  uint64_t acc = chase(v[0], warm_steps, wf, 0);
  double t1 = wl_now_ns();
  acc += chase(v[0], n_steps, wf, 0);
  double ns = wl_now_ns() - t1;
  if (wl_trace_path) {
    /* as the timed run: a warm-up from v[0], the B record, then from v[0] again */
    wl_trace_open();
    unsigned long per = warm_k ? 2 : 1, w = wl_trace_warm_max() / per;
    if (w > warm_steps) w = warm_steps;
    acc += chase(v[0], w, wf, 1);
    wl_trace_mark();
    acc += chase(v[0], wl_trace_max / per - w, wf, 1);
    wl_trace_close();
  }
  wl_sink = acc;
  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[256];
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=step ops=%lu nodes=%lu warm_ahead=%lu warm_method=%s build_ms=%.1f",
           ns / (double)n_steps, n_steps, n_nodes, warm_k, method, build_ns / 1e6);
  wl_result(warm_k ? "chase-warm" : "chase", extra, &hs);
  return 0;
}
