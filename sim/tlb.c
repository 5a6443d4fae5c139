/* Set-associative arrays and the TLBs built from them. Lookup and fill are inline in
 * internal.h; this file owns allocation, flushes and the page-size-to-array mapping. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int _ts_array_init(ts_array_t *a, uint32_t entries, uint32_t ways, int policy, uint64_t seed,
                   char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  a->mru = TS_INVALID;
  if (!entries) return 0;
  if (!ways) ways = entries;
  if (ways > entries || entries % ways) {
    _ts_err(err, errlen, "%u ways do not divide %u entries", ways, entries);
    return -1;
  }
  a->ways = ways;
  a->sets = entries / ways;
  a->pow2 = (a->sets & (a->sets - 1)) == 0;
  a->set_mask = a->sets - 1;
  a->odd = a->sets;
  while (!(a->odd & 1)) { a->odd >>= 1; a->odd_shift++; }
  a->recip = a->odd > 1 && a->odd <= (1u << 19) ? UINT64_MAX / a->odd + 1 : 0;
  a->policy = (uint8_t)policy;
  a->pol = &_ts_policies[policy];
  a->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
  a->keys = _ts_malloc((size_t)entries * sizeof *a->keys);
  a->tags = _ts_malloc((size_t)entries * sizeof *a->tags);
  bool oom = !a->tags;
  a->meta = _ts_calloc(a->sets, sizeof *a->meta);
  a->stamp = _ts_calloc(entries, sizeof *a->stamp);
  if (a->sets == 1 && a->ways > 16) {
    uint32_t n = 64;
    while (n < 4 * a->ways) n *= 2;
    a->hmask = n - 1;
    a->hidx = _ts_calloc(n, sizeof *a->hidx);
    if (!a->hidx) oom = true;
    if (policy == TS_POL_LRU && a->ways > 64) {
      a->lnext = _ts_malloc(a->ways * sizeof *a->lnext);
      a->lprev = _ts_malloc(a->ways * sizeof *a->lprev);
      if (!a->lnext || !a->lprev) oom = true;
    }
  }
  if (oom || !a->keys || !a->meta || !a->stamp) {
    _ts_array_free(a);
    _ts_err(err, errlen, "out of memory for a %u-entry array", entries);
    return -1;
  }
  _ts_array_flush(a);
  return 0;
}

void _ts_array_free(ts_array_t *a) {
  free(a->keys);
  free(a->meta);
  free(a->stamp);
  free(a->tags);
  free(a->hidx);
  free(a->lnext);
  free(a->lprev);
  a->hidx = NULL;
  a->lnext = a->lprev = NULL;
  a->tags = NULL;
  a->keys = NULL;
  a->meta = NULL;
  a->stamp = NULL;
}

uint32_t _ts_lru_victim(const ts_array_t *a, const uint32_t *st) {
  if (!a->lnext) return a->ways % 4 == 0 && a->ways <= 64 ? _ts_lru_victim_v(st, a->ways)
                                                          : _ts_lru_victim_n(st, a->ways);
  if (a->nvalid == a->ways) return a->ltail;   /* full: the least recent, as the stamps say */
  uint32_t w = 0;                              /* else the first empty entry (stamp 0) */
  while (a->keys[w] != TS_INVALID) w++;
  return w;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Each set's nonzero stamps become 1..k in the same order; the clock restarts above them. */
void _ts_array_renumber(ts_array_t *a) {
  uint64_t *tmp = _ts_malloc((size_t)a->ways * sizeof *tmp);
  uint32_t top = 0;
  for (uint32_t si = 0; si < a->sets; si++) {
    uint32_t *st = a->stamp + (size_t)si * a->ways, k = 0;
    if (tmp) {
      for (uint32_t w = 0; w < a->ways; w++)
        if (st[w]) tmp[k++] = (uint64_t)st[w] << 32 | w;
      qsort(tmp, k, sizeof *tmp, cmp_u64);
      for (uint32_t r = 0; r < k; r++) st[(uint32_t)tmp[r]] = r + 1;
    } else {   /* no memory for the sort: take the smallest unranked stamp, k times */
      for (;;) {
        uint32_t v = UINT32_MAX;
        for (uint32_t w = 0; w < a->ways; w++)
          if (st[w] && !(st[w] & 0x80000000u) && (v == UINT32_MAX || st[w] < st[v])) v = w;
        if (v == UINT32_MAX) break;
        st[v] = 0x80000000u | ++k;   /* ranked: the high bit keeps it out of the search */
      }
      for (uint32_t w = 0; w < a->ways; w++) st[w] &= ~0x80000000u;
    }
    if (k > top) top = k;
  }
  free(tmp);
  a->clock = top;
}

void _ts_array_flush(ts_array_t *a) {
  a->mru = TS_INVALID;
  if (!a->keys) return;
  memset(a->keys, 0xff, (size_t)a->sets * a->ways * sizeof *a->keys);   /* TS_INVALID */
  memset(a->tags, 0, (size_t)a->sets * a->ways * sizeof *a->tags);       /* its tag */
  memset(a->meta, 0, (size_t)a->sets * sizeof *a->meta);
  memset(a->stamp, 0, (size_t)a->sets * a->ways * sizeof *a->stamp);
  if (a->hidx) memset(a->hidx, 0, ((size_t)a->hmask + 1) * sizeof *a->hidx);
  a->lhead = a->ltail = TS_NIL;
  a->nvalid = 0;
}

/* Linear probing with backward-shift deletion: removing the old key of entry i moves later
 * members of its probe run up, so lookups never need tombstones. */
static void hx_erase(ts_array_t *a, uint64_t key) {
  uint32_t m = a->hmask, j = _ts_hx_slot(a, key);
  while (a->hidx[j] && a->keys[a->hidx[j] - 1] != key) j = (j + 1) & m;
  if (!a->hidx[j]) return;
  uint32_t hole = j;
  for (uint32_t k = (j + 1) & m; a->hidx[k]; k = (k + 1) & m) {
    uint32_t home = _ts_hx_slot(a, a->keys[a->hidx[k] - 1]);
    /* k's entry may fill the hole unless its home lies cyclically in (hole, k]. */
    if (((k - home) & m) >= ((k - hole) & m)) {
      a->hidx[hole] = a->hidx[k];
      hole = k;
    }
  }
  a->hidx[hole] = 0;
}

void _ts_array_place_indexed(ts_array_t *a, size_t i, uint64_t key) {
  if (a->keys[i] != TS_INVALID) {
    hx_erase(a, a->keys[i]);
    if (a->lnext) _ts_list_unlink(a, (uint32_t)i);
  } else {
    a->nvalid++;
  }
  if (a->lnext) _ts_list_push(a, (uint32_t)i);
  a->keys[i] = key;
  uint32_t j = _ts_hx_slot(a, key);
  while (a->hidx[j]) j = (j + 1) & a->hmask;
  a->hidx[j] = (uint32_t)i + 1;
}

/* A partial flush: entries tagged with one ASID slot (low 12 bits of the key). */
void _ts_array_flush_slot(ts_array_t *a, uint32_t slot) {
  a->mru = TS_INVALID;
  if (!a->keys) return;
  size_t n = (size_t)a->sets * a->ways;
  for (size_t i = 0; i < n; i++)
    if (a->keys[i] != TS_INVALID && (a->keys[i] & 0xfff) == slot) {
      if (a->hidx) {
        hx_erase(a, a->keys[i]);
        if (a->lnext) _ts_list_unlink(a, (uint32_t)i);
        a->nvalid--;
      }
      a->keys[i] = TS_INVALID;
      a->tags[i] = 0;
      a->stamp[i] = 0;
    }
}

int _ts_tlb_init(ts_tlb_t *t, const ts_tlb_cfg_t *c, uint64_t seed, const char *name,
                 char *err, size_t errlen) {
  char sub[128];
  memset(t, 0, sizeof *t);
  if (_ts_array_init(&t->main, c->main.entries, c->main.ways, c->policy, seed, sub, sizeof sub))
    goto fail_main;
  for (int ps = 0; ps < TS_NSIZES; ps++) {
    if ((c->sizes & (1u << ps)) && t->main.keys) {
      t->by_size[ps] = &t->main;
    } else if (ps != TS_PS_4K && c->huge[ps].entries) {
      if (_ts_array_init(&t->huge[ps], c->huge[ps].entries, c->huge[ps].ways, c->policy,
                         seed + (uint64_t)ps, sub, sizeof sub)) {
        _ts_err(err, errlen, "%s.%s: %s", name, ts_page_size_name(ps), sub);
        _ts_tlb_free(t);
        return -1;
      }
      t->by_size[ps] = &t->huge[ps];
    }
    if (t->by_size[ps]) t->present = true;
  }
  return 0;
fail_main:
  _ts_err(err, errlen, "%s: %s", name, sub);
  return -1;
}

void _ts_tlb_free(ts_tlb_t *t) {
  _ts_array_free(&t->main);
  for (int ps = 0; ps < TS_NSIZES; ps++) _ts_array_free(&t->huge[ps]);
}

void _ts_tlb_flush(ts_tlb_t *t) {
  _ts_array_flush(&t->main);
  for (int ps = 0; ps < TS_NSIZES; ps++) _ts_array_flush(&t->huge[ps]);
}

void _ts_tlb_flush_slot(ts_tlb_t *t, uint32_t slot) {
  _ts_array_flush_slot(&t->main, slot);
  for (int ps = 0; ps < TS_NSIZES; ps++) _ts_array_flush_slot(&t->huge[ps], slot);
}
