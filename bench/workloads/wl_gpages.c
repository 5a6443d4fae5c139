/* A heap of GiBs of small objects with random dependent lookups: the 1 GiB page workload.
 *
 * --heap-mb MiB of --size byte objects are allocated one after another and written. One object
 * in every --stride (default: one per 4 KiB of heap) is a lookup node; the nodes are linked in
 * one random cycle (Sattolo's shuffle), so each lookup reads a node that the previous one named,
 * somewhere else in the heap. The lookups' hot set is spread over the whole heap: on 4 KiB pages
 * it needs one TLB entry per node, on 2 MiB pages one per 2 MiB of heap, on 1 GiB pages one per
 * GiB. The harness gives the 1 GiB pool (tlbbench reserves it for this workload) to tlbpack
 * with gpage_mb:0.
 *
 * RESULT: ns_per_op per lookup, and gpages_mapped (1 GiB pages this process has mapped, from
 * smaps). Trace (--trace): R of each node looked up (16 B). */
#define _GNU_SOURCE
#include "wl_common.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct gnode_s {
  struct gnode_s *next;
  uint64_t key;
} gnode_t;

static unsigned long heap_mb = 4096, obj_size = 64, stride, n_lookups = 2000000;

static uint64_t lookups(const gnode_t *n, unsigned long steps, int tr) {
  uint64_t acc = 0;
  for (unsigned long i = 0; i < steps; i++) {
    if (tr) WL_TR('R', n, 16);
    acc += n->key;
    n = n->next;
  }
  return acc;
}

/* 1 GiB pages mapped by this process (KernelPageSize 1048576 kB mappings in smaps). */
static long gpages_mapped(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  char line[512];
  unsigned long long start = 0, end = 0, kb;
  long n = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%llx-%llx ", &start, &end) == 2) continue;
    if (sscanf(line, "KernelPageSize: %llu kB", &kb) == 1 && kb == 1048576) n += (long)((end - start) >> 30);
  }
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"heap-mb", "MiB of small objects allocated", 'u', &heap_mb},
    {"size", "bytes per object (16 or more)", 'u', &obj_size},
    {"stride", "one lookup node every this many objects (default: one per 4 KiB)", 'u', &stride},
    {"lookups", "dependent lookups timed", 'u', &n_lookups},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_gpages", argc, argv, flags);
  if (obj_size < sizeof(gnode_t)) wl_die("--size must be at least %zu", sizeof(gnode_t));
  if (!stride) stride = 4096 / obj_size ? 4096 / obj_size : 1;
  unsigned long n_objs = (heap_mb << 20) / obj_size, n_nodes = n_objs / stride;
  if (n_nodes < 2) wl_die("--heap-mb %lu with --stride %lu gives fewer than 2 lookup nodes", heap_mb, stride);
  uint64_t s = wl_seed;
  gnode_t **v = mmap(NULL, n_nodes * sizeof *v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (v == MAP_FAILED) wl_die("no memory for %lu node pointers", n_nodes);
  double t0 = wl_now_ns();
  for (unsigned long i = 0, k = 0; i < n_objs; i++) {
    gnode_t *o = malloc(obj_size);
    if (!o) wl_die("out of memory after %lu objects (%lu MiB)", i, (i * obj_size) >> 20);
    memset(o, 0, obj_size);
    o->key = wl_rand(&s);
    if (i % stride == 0 && k < n_nodes) v[k++] = o;
  }
  for (unsigned long i = n_nodes - 1; i > 0; i--) { /* Sattolo: one cycle through every node */
    unsigned long j = wl_rand(&s) % i;
    gnode_t *t = v[i]; v[i] = v[j]; v[j] = t;
  }
  for (unsigned long i = 0; i < n_nodes; i++) {
    v[i]->next = v[(i + 1) % n_nodes];
    wl_hot_add(v[i], sizeof(gnode_t));
  }
  double build_ns = wl_now_ns() - t0;
  unsigned long warm = n_nodes < n_lookups / 4 ? n_nodes : n_lookups / 4;
  uint64_t acc = lookups(v[0], warm, 0);
  double t1 = wl_now_ns();
  acc += lookups(v[0], n_lookups, 0);
  double ns = wl_now_ns() - t1;
  if (wl_trace_path) {
    /* as the timed run: a warm-up from v[0], the B record, then from v[0] again */
    wl_trace_open();
    unsigned long w = wl_trace_warm_max() < warm ? wl_trace_warm_max() : warm;
    acc += lookups(v[0], w, 1);
    wl_trace_mark();
    acc += lookups(v[0], wl_trace_max - w, 1);
    wl_trace_close();
  }
  wl_sink = acc;
  munmap(v, n_nodes * sizeof *v);
  wl_hotset_t hs;
  wl_hot_measure(&hs);
  wl_smaps_copy();
  char extra[320];
  snprintf(extra, sizeof extra,
           "ns_per_op=%.2f op=lookup ops=%lu heap_mb=%lu objects=%lu object_size=%lu nodes=%lu gpages_mapped=%ld "
           "build_ms=%.1f",
           ns / (double)n_lookups, n_lookups, heap_mb, n_objs, obj_size, n_nodes, gpages_mapped(), build_ns / 1e6);
  wl_result("gpages", extra, &hs);
  return 0;
}
