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
  a->keys = malloc((size_t)entries * sizeof *a->keys);
  a->meta = calloc(a->sets, sizeof *a->meta);
  a->stamp = calloc(entries, sizeof *a->stamp);
  if (!a->keys || !a->meta || !a->stamp) {
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
  a->keys = NULL;
  a->meta = NULL;
  a->stamp = NULL;
}

uint32_t _ts_lru_victim(const ts_array_t *a, const uint64_t *st) {
  return _ts_lru_victim_n(st, a->ways);
}

void _ts_array_flush(ts_array_t *a) {
  a->mru = TS_INVALID;
  if (!a->keys) return;
  memset(a->keys, 0xff, (size_t)a->sets * a->ways * sizeof *a->keys);   /* TS_INVALID */
  memset(a->meta, 0, (size_t)a->sets * sizeof *a->meta);
  memset(a->stamp, 0, (size_t)a->sets * a->ways * sizeof *a->stamp);
}

/* A partial flush: entries tagged with one ASID slot (low 12 bits of the key). */
void _ts_array_flush_slot(ts_array_t *a, uint32_t slot) {
  a->mru = TS_INVALID;
  if (!a->keys) return;
  size_t n = (size_t)a->sets * a->ways;
  for (size_t i = 0; i < n; i++)
    if (a->keys[i] != TS_INVALID && (a->keys[i] & 0xfff) == slot) {
      a->keys[i] = TS_INVALID;
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
