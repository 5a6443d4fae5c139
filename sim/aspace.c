/* Address spaces: the page size of every address (one size, or ranges from a regions or smaps
 * file), hardware ASID slots, and the footprint (distinct pages, page-table directories).
 * Memory here grows with the footprint and the number of ranges, never with trace length. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- page size per address ----------------------------------------------------------- */

int _ts_pagemap_add(ts_pagemap_t *m, int layer, uint64_t start, uint64_t end, int ps, char *err,
                    size_t errlen) {
  if (end <= start) {
    _ts_err(err, errlen, "empty range 0x%llx-0x%llx (END must be above START)",
            (unsigned long long)start, (unsigned long long)end);
    return -1;
  }
  for (size_t i = 0; i < m->n[layer]; i++) {
    const ts_range_t *r = &m->layer[layer][i];
    if (start < r->end && r->start < end) {
      _ts_err(err, errlen, "range 0x%llx-0x%llx overlaps 0x%llx-0x%llx given earlier",
              (unsigned long long)start, (unsigned long long)end, (unsigned long long)r->start,
              (unsigned long long)r->end);
      return -1;
    }
  }
  if (m->n[layer] == m->cap[layer]) {
    size_t cap = m->cap[layer] ? 2 * m->cap[layer] : 16;
    ts_range_t *p = _ts_realloc(m->layer[layer], cap * sizeof *p);
    if (!p) { _ts_err(err, errlen, "out of memory for ranges"); return -1; }
    m->layer[layer] = p;
    m->cap[layer] = cap;
  }
  m->layer[layer][m->n[layer]++] = (ts_range_t){start, end, ps, 1};
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static const ts_range_t *find(const ts_range_t *r, size_t n, uint64_t va) {
  size_t lo = 0, hi = n;   /* r sorted by start, non-overlapping */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r[mid].end <= va) lo = mid + 1;
    else if (r[mid].start > va) hi = mid;
    else return &r[mid];
  }
  return NULL;
}

static int cmp_range(const void *a, const void *b) {
  return cmp_u64(&((const ts_range_t *)a)->start, &((const ts_range_t *)b)->start);
}

/* Flattens the layers (regions over smaps over the default size) into sorted ranges that
 * cover every address, so that a lookup is one binary search, or none when it hits the range
 * of the previous lookup. */
int _ts_pagemap_build(ts_pagemap_t *m) {
  for (int l = 0; l < 2; l++)
    if (m->n[l]) qsort(m->layer[l], m->n[l], sizeof(ts_range_t), cmp_range);
  size_t nb = 2 * (m->n[0] + m->n[1]) + 2, k = 0;
  uint64_t *b = _ts_malloc(nb * sizeof *b);
  free(m->flat);
  m->flat = _ts_malloc(nb * sizeof *m->flat);
  m->nflat = 0;
  if (!b || !m->flat) { free(b); return -1; }
  b[k++] = 0;
  b[k++] = UINT64_MAX;
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < m->n[l]; i++) {
      b[k++] = m->layer[l][i].start;
      b[k++] = m->layer[l][i].end;
    }
  qsort(b, k, sizeof *b, cmp_u64);
  m->nflat = 0;
  for (size_t i = 0; i + 1 < k; i++) {
    if (b[i] == b[i + 1]) continue;
    const ts_range_t *r = find(m->layer[0], m->n[0], b[i]);
    if (!r) r = find(m->layer[1], m->n[1], b[i]);
    ts_range_t x = {b[i], b[i + 1], r ? r->ps : m->dflt, r != NULL};
    ts_range_t *prev = m->nflat ? &m->flat[m->nflat - 1] : NULL;
    if (prev && prev->ps == x.ps && prev->mapped == x.mapped && prev->end == x.start) prev->end = x.end;
    else m->flat[m->nflat++] = x;
  }
  free(b);
  m->last = m->flat[0];
  return 0;
}

int _ts_pagemap_lookup_slow(ts_pagemap_t *m, uint64_t va) {
  const ts_range_t *r = find(m->flat, m->nflat, va);
  if (!r) return m->dflt;   /* only va == UINT64_MAX */
  m->last = *r;
  return r->ps;
}

void _ts_pagemap_free(ts_pagemap_t *m) {
  free(m->layer[0]);
  free(m->layer[1]);
  free(m->flat);
  memset(m, 0, sizeof *m);
}

/* Directories per level needed to map every loaded range (not just the touched pages). */
void _ts_pagemap_pt_pages(const ts_pagemap_t *m, int levels, uint64_t *out) {
  memset(out, 0, (TS_MAX_LEVELS + 1) * sizeof *out);
  uint64_t vmask = (1ull << (12 + 9 * levels)) - 1;
  for (int k = 1; k <= levels; k++) {
    unsigned sh = 12 + 9 * (unsigned)k;
    bool any = false;
    uint64_t prev = 0;
    for (size_t i = 0; i < m->nflat; i++) {
      const ts_range_t *r = &m->flat[i];
      if (!r->mapped || r->ps + 1 > k || r->start > vmask) continue;
      uint64_t end = r->end - 1 > vmask ? vmask : r->end - 1;
      uint64_t first = r->start >> sh, last = end >> sh;
      out[k] += last - first + 1;
      if (any && first == prev) out[k]--;
      any = true;
      prev = last;
    }
  }
}

/* ---- hash set of nonzero keys -------------------------------------------------------- */

static inline size_t hslot(uint64_t key, size_t mask) {
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

int _ts_hset_insert(ts_hset_t *h, uint64_t key) {
  if ((h->n + 1) * 4 > h->cap * 3) {
    size_t cap = h->cap ? 2 * h->cap : 1024;
    uint64_t *s = _ts_calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < h->cap; i++) {
      uint64_t k = h->slots[i];
      if (!k) continue;
      size_t j = hslot(k, cap - 1);
      while (s[j]) j = (j + 1) & (cap - 1);
      s[j] = k;
    }
    free(h->slots);
    h->slots = s;
    h->cap = cap;
  }
  size_t j = hslot(key, h->cap - 1);
  while (h->slots[j]) {
    if (h->slots[j] == key) return 0;
    j = (j + 1) & (h->cap - 1);
  }
  h->slots[j] = key;
  h->n++;
  return 1;
}

void _ts_hset_free(ts_hset_t *h) {
  free(h->slots);
  memset(h, 0, sizeof *h);
}

/* ---- footprint ----------------------------------------------------------------------- */

/* Key: tag (4 bits) | address space (15 bits) | page or directory number (45 bits). */
static inline uint64_t fkey(uint32_t tag, uint32_t space, uint64_t num) {
  return ((uint64_t)tag << 60) | ((uint64_t)space << 45) | (num & ((1ull << 45) - 1));
}

void _ts_ptmap_free(ts_ptmap_t *m) {
  free(m->keys);
  free(m->idx);
  free(m->bits);
  memset(m, 0, sizeof *m);
}

/* The bitmap of a level-1 directory (key nonzero); *created when it is new. NULL: out of
 * memory (the map is left as it was). */
static uint64_t *ptmap_bits(ts_ptmap_t *m, uint64_t key, bool *created) {
  *created = false;
  if (key == m->last_key) return m->bits + 8 * (size_t)m->last_idx;
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    uint64_t *k2 = _ts_calloc(cap, sizeof *k2);
    uint32_t *i2 = _ts_calloc(cap, sizeof *i2);
    if (!k2 || !i2) {
      free(k2);
      free(i2);
      return NULL;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = hslot(m->keys[i], cap - 1);
      while (k2[j]) j = (j + 1) & (cap - 1);
      k2[j] = m->keys[i];
      i2[j] = m->idx[i];
    }
    free(m->keys);
    free(m->idx);
    m->keys = k2;
    m->idx = i2;
    m->cap = cap;
  }
  size_t mask = m->cap - 1, j = hslot(key, mask);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & mask;
  if (!m->keys[j]) {
    if (m->n == m->bcap) {
      size_t bcap = m->bcap ? 2 * m->bcap : 64;
      uint64_t *b = _ts_realloc(m->bits, bcap * 8 * sizeof *b);
      if (!b) return NULL;
      m->bits = b;
      m->bcap = bcap;
    }
    memset(m->bits + 8 * m->n, 0, 8 * sizeof *m->bits);
    m->keys[j] = key;
    m->idx[j] = (uint32_t)m->n++;
    *created = true;
  }
  m->last_key = key;
  m->last_idx = m->idx[j];
  return m->bits + 8 * (size_t)m->idx[j];
}

/* Counts a new page and the new directories above it. A 4K page's level-1 directory and its
 * bit live in pt4k (the directory exists exactly when some 4K page under it was touched);
 * 2M and 1G pages and the directories above level 1 are keys in the touched set. */
int _ts_footprint_touch(ts_sim_t *s, uint64_t va, int ps) {
  uint32_t sp = s->as.cur_space;
  int k = ps + 1, r;
  if (ps == TS_PS_4K && s->cfg.levels > 1) {
    bool created;
    uint64_t *b = ptmap_bits(&s->pt4k, fkey(4 + 1, sp, va >> 21), &created);
    if (TS_UNLIKELY(!b)) return -1;
    size_t c = (va >> 21) & (TS_PTC - 1);
    s->ptc_key[c] = (((uint64_t)sp << 45) | ((va >> 21) & ((1ull << 45) - 1))) + 1;
    s->ptc_idx[c] = (uint32_t)((b - s->pt4k.bits) / 8);
    uint64_t bit = 1ull << ((va >> 12) & 63), *w = &b[(va >> 18) & 7];
    if (*w & bit) return 0;
    *w |= bit;
    s->st.distinct_pages[ps]++;
    if (!created) return 0;
    s->st.pt_pages[1]++;
    k = 2;
  } else {
    if ((r = _ts_hset_insert(&s->touched, fkey(1 + (uint32_t)ps, sp, va >> _ts_shift(ps)))) <= 0)
      return r;
    s->st.distinct_pages[ps]++;
  }
  for (; k <= s->cfg.levels; k++) {
    /* A new directory's parent may exist already; an existing one means all above exist. */
    uint64_t dir = k == s->cfg.levels ? 0 : va >> (12 + 9 * k);
    if ((r = _ts_hset_insert(&s->touched, fkey(4 + (uint32_t)k, sp, dir))) <= 0) return r;
    s->st.pt_pages[k]++;
  }
  return 0;
}

/* ---- ASIDs --------------------------------------------------------------------------- */

int _ts_aspace_init(ts_aspace_t *as, uint32_t nslots) {
  memset(as, 0, sizeof *as);
  as->nslots = nslots;
  as->slot_asid = _ts_calloc(nslots, sizeof *as->slot_asid);
  as->slot_used = _ts_calloc(nslots, sizeof *as->slot_used);
  as->map_cap = 64;
  as->map_keys = _ts_calloc(as->map_cap, sizeof *as->map_keys);
  as->map_vals = _ts_calloc(as->map_cap, sizeof *as->map_vals);
  if (!as->slot_asid || !as->slot_used || !as->map_keys || !as->map_vals) return -1;
  for (uint32_t i = 0; i < nslots; i++) as->slot_asid[i] = UINT64_MAX;   /* unused */
  as->slot_asid[0] = 0;
  as->slot_used[0] = ++as->clock;
  as->map_keys[hslot(1, as->map_cap - 1)] = 1;   /* ASID 0 -> space 0 */
  as->nspaces = 1;
  return 0;
}

void _ts_aspace_free(ts_aspace_t *as) {
  free(as->slot_asid);
  free(as->slot_used);
  free(as->map_keys);
  free(as->map_vals);
  memset(as, 0, sizeof *as);
}

/* Dense id of a software ASID, or -1 past TS_MAX_SPACES, -2 out of memory. */
static int64_t space_id(ts_aspace_t *as, uint64_t asid) {
  uint64_t key = asid + 1 ? asid + 1 : 1ull << 63;
  size_t mask = as->map_cap - 1, j = hslot(key, mask);
  while (as->map_keys[j]) {
    if (as->map_keys[j] == key) return as->map_vals[j];
    j = (j + 1) & mask;
  }
  if (as->nspaces >= TS_MAX_SPACES) return -1;
  if ((as->nspaces + 1) * 2 > as->map_cap) {
    size_t cap = as->map_cap * 2;
    uint64_t *k2 = _ts_calloc(cap, sizeof *k2);
    uint32_t *v2 = _ts_calloc(cap, sizeof *v2);
    if (!k2 || !v2) {
      free(k2);
      free(v2);
      return -2;
    }
    for (size_t i = 0; i < as->map_cap; i++) {
      if (!as->map_keys[i]) continue;
      size_t t = hslot(as->map_keys[i], cap - 1);
      while (k2[t]) t = (t + 1) & (cap - 1);
      k2[t] = as->map_keys[i];
      v2[t] = as->map_vals[i];
    }
    free(as->map_keys);
    free(as->map_vals);
    as->map_keys = k2;
    as->map_vals = v2;
    as->map_cap = cap;
    mask = cap - 1;
    j = hslot(key, mask);
    while (as->map_keys[j]) j = (j + 1) & mask;
  }
  as->map_keys[j] = key;
  as->map_vals[j] = as->nspaces;
  return as->nspaces++;
}

int ts_context_switch(ts_sim_t *s, uint64_t asid) {
  ts_aspace_t *as = &s->as;
  if (s->state == TS_FAILED) return -1;
  if (asid == as->cur_asid) return 0;
  int64_t id = space_id(as, asid);
  if (id == -2) _ts_fail(s, "address spaces");
  if (id < 0) return -1;
  s->st.context_switches++;
  as->cur_asid = asid;
  as->cur_space = (uint32_t)id;
  if (s->cfg.asid_mode == TS_ASID_FLUSH) {
    /* A CR3 write without PCIDs drops every non-global translation and walk-cache entry. */
    for (int t = 0; t < TS_NTLBS; t++) _ts_tlb_flush(&s->tlb[t]);
    _ts_pwcs_flush(&s->pwc);
    s->st.tlb_flushes++;
    return 0;
  }
  uint32_t slot = UINT32_MAX, victim = 0;
  for (uint32_t i = 0; i < as->nslots; i++) {
    if (as->slot_asid[i] == asid) { slot = i; break; }
    if (as->slot_used[i] < as->slot_used[victim]) victim = i;
  }
  if (slot == UINT32_MAX) {
    slot = victim;
    if (as->slot_asid[slot] != UINT64_MAX) {
      /* Reusing a slot: its old owner's entries must go (a partial flush). */
      for (int t = 0; t < TS_NTLBS; t++) _ts_tlb_flush_slot(&s->tlb[t], slot);
      _ts_pwcs_flush_slot(&s->pwc, slot);
      s->st.asid_evictions++;
    }
    as->slot_asid[slot] = asid;
  }
  as->slot_used[slot] = ++as->clock;
  as->cur_slot = slot;
  return 0;
}
