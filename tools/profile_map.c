/* tlbpack profile: open-addressing hash maps (u64 key -> u32 value) and allocation that exits
 * with a message when memory runs out. */
#include "cli.h"
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- hash maps: u64 key -> u32 value, open addressing ---------------------------------- */

void *tpp_xcalloc(size_t n, size_t s) {
  void *p = calloc(n ? n : 1, s);
  if (!p) {
    fprintf(stderr, "tlbpack profile: out of memory\n");
    exit(TPC_EXIT_FAIL);
  }
  return p;
}
void *tpp_xrealloc(void *p, size_t n) {
  p = realloc(p, n);
  if (!p) {
    fprintf(stderr, "tlbpack profile: out of memory\n");
    exit(TPC_EXIT_FAIL);
  }
  return p;
}
static inline size_t h64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}
void tpp_map_init(map_t *m, size_t cap) {
  m->cap = cap;
  m->n = 0;
  m->k = tpp_xcalloc(cap, sizeof *m->k);
  m->v = tpp_xcalloc(cap, sizeof *m->v);
  memset(m->k, 0xff, cap * sizeof *m->k);
}
uint32_t *tpp_map_slot(map_t *m, uint64_t key, int insert);
static void map_grow(map_t *m) {
  map_t o = *m;
  tpp_map_init(m, o.cap * 2);
  for (size_t i = 0; i < o.cap; i++)
    if (o.k[i] != EMPTY) *tpp_map_slot(m, o.k[i], 1) = o.v[i];
  free(o.k);
  free(o.v);
}
/* The value slot of key; NULL when absent and !insert. Inserted values start at 0. */
uint32_t *tpp_map_slot(map_t *m, uint64_t key, int insert) {
  size_t i = h64(key) & (m->cap - 1);
  for (;;) {
    if (m->k[i] == key) return &m->v[i];
    if (m->k[i] == EMPTY) break;
    i = (i + 1) & (m->cap - 1);
  }
  if (!insert) return NULL;
  if ((m->n + 1) * 4 > m->cap * 3) {
    map_grow(m);
    return tpp_map_slot(m, key, 1);
  }
  m->k[i] = key;
  m->v[i] = 0;
  m->n++;
  return &m->v[i];
}
/* Removal with backward shift (keeps probe chains whole). */
void tpp_map_del(map_t *m, uint64_t key) {
  size_t i = h64(key) & (m->cap - 1);
  while (m->k[i] != key) {
    if (m->k[i] == EMPTY) return;
    i = (i + 1) & (m->cap - 1);
  }
  size_t j = i;
  for (;;) {
    j = (j + 1) & (m->cap - 1);
    if (m->k[j] == EMPTY) break;
    size_t h = h64(m->k[j]) & (m->cap - 1);
    if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
      m->k[i] = m->k[j];
      m->v[i] = m->v[j];
      i = j;
    }
  }
  m->k[i] = EMPTY;
  m->n--;
}
