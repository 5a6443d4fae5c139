/* tlbpack profile: the placement plan. Sites are classified hot, cold or neither; hot sites
 * accessed together are joined (union-find over the affinity pairs) into ordered groups, cold
 * sites into one apart group; written in the format plan.c reads. */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan -------------------------------------------------------------------------- */
size_t *tpp_order; /* site indices by L1 misses, most first */
int tpp_by_misses(const void *a, const void *b) {
  const site_t *x = &tpp_sites[*(const size_t *)a], *y = &tpp_sites[*(const size_t *)b];
  if (x->l1 != y->l1) return x->l1 < y->l1 ? 1 : -1;
  return x->accesses < y->accesses ? 1 : x->accesses > y->accesses ? -1 : 0;
}

static uint32_t uf[1 << 16];
static uint32_t uf_find(uint32_t x) {
  while (uf[x] != x) x = uf[x] = uf[uf[x]];
  return x;
}

uint8_t *tpp_kind;

/* Cold: long-lived (most objects still live at the end, or a mean lifetime of at least a tenth
 * of the run), at least 16 KiB, touched at most once per 2 bytes allocated (written once, read
 * little), at most one L1 miss per 10 accesses (a first write runs through a page; a value read
 * at random misses far more often): kept apart from the hot pages. Hot: at least
 * 2% of the attributed L1 misses or 5% of the accesses to heap objects (a small run of a
 * program keeps a compact hot site on few pages, where it misses little: its share of accesses
 * still says it is hot at full size), 16 objects or more, long-lived: an ordered group never
 * reuses a freed block in place, so churning sites stay as they are. */
void tpp_classify(uint64_t total_l1, uint64_t total_acc) {
  tpp_kind = tpp_xcalloc(tpp_nsites, 1);
  for (size_t i = 0; i < tpp_nsites; i++) {
    site_t *s = &tpp_sites[i];
    uint64_t live = s->objects - s->freed;
    uint64_t life = s->life_sum + 0;
    int long_lived = s->objects && (live * 2 >= s->objects || life / s->objects >= tpp_now / 10);
    if (long_lived && s->bytes >= 16384 && s->accesses * 2 <= s->bytes && s->l1 * 10 <= s->accesses) tpp_kind[i] = K_COLD;
    else if (((total_l1 && s->l1 * 50 >= total_l1) || (total_acc && s->accesses * 20 >= total_acc)) && long_lived &&
             s->objects >= 16 && tpp_nsites < (1 << 16))
      tpp_kind[i] = K_HOT;
  }
  for (uint32_t i = 0; i < tpp_nsites && i < (1 << 16); i++) uf[i] = i;
  for (size_t i = 0; i < tpp_pairs.cap; i++) {
    if (tpp_pairs.k[i] == EMPTY) continue;
    uint32_t a = (uint32_t)(tpp_pairs.k[i] >> 32), b = (uint32_t)tpp_pairs.k[i];
    if (a >= tpp_nsites || b >= tpp_nsites || tpp_kind[a] != K_HOT || tpp_kind[b] != K_HOT) continue;
    uint64_t m = tpp_sites[a].visits < tpp_sites[b].visits ? tpp_sites[a].visits : tpp_sites[b].visits;
    if ((uint64_t)tpp_pairs.v[i] * 5 >= m) uf[uf_find(a)] = uf_find(b);
  }
}

int tpp_write_plan(const char *path, const char *program, unsigned *nhot, unsigned *ncold) {
  FILE *f = strcmp(path, "-") ? fopen(path, "w") : NULL;
  if (!f) return -1;
  fprintf(f,
          "tlbpack-plan 1\n"
          "# Written by `tlbpack profile`. Apply with TLBPACK_CONF=plan:THIS_FILE.\n"
          "# group NAME ordered: these sites share one group, placed in allocation order\n"
          "#   (as tp_group_create_arena does): sites used together, on the same pages and lines.\n"
          "# group NAME apart: cold sites, kept on pages of their own.\n"
          "# Sites are MODULE+OFFSET from the module's load address. Sites not named here are\n"
          "# placed as without a plan. Edit freely; '#' starts a comment.\n"
          "program %s\n",
          program);
  unsigned g = 0;
  *nhot = *ncold = 0;
  uint8_t *done = tpp_xcalloc(tpp_nsites, 1);
  for (size_t oi = 0; oi < tpp_nsites; oi++) {
    size_t i = tpp_order[oi];
    if (tpp_kind[i] != K_HOT || done[i]) continue;
    /* A hot site used with no other is a group of its own all the same: as a site group it
     * starts on the shared group's pages (its first blocks among other sites' until it grows
     * up) and rounds each block up to its size class, a slab per class; an ordered group
     * holds its blocks from the first one, in allocation order, at a 16-byte granule (a
     * record of three sizes from one helper: 5 TLB entries for a floor of 3 as a site group,
     * 4 as an ordered one, commit 3b23c4d). */
    uint32_t root = uf_find((uint32_t)i);
    fprintf(f, "\ngroup hot%u ordered\n", ++g);
    for (size_t oj = 0; oj < tpp_nsites; oj++) {
      size_t j = tpp_order[oj];
      if (tpp_kind[j] != K_HOT || uf_find((uint32_t)j) != root) continue;
      done[j] = 1;
      if (strchr(tpp_sites[j].name, '+') == NULL) continue;
      fprintf(f, "site %s   # %llu L1 misses, %llu objects%s%s\n", tpp_sites[j].name, (unsigned long long)tpp_sites[j].l1,
              (unsigned long long)tpp_sites[j].objects, tpp_sites[j].sym[0] ? ", " : "", tpp_sites[j].sym);
      (*nhot)++;
    }
  }
  int any_cold = 0;
  for (size_t oi = 0; oi < tpp_nsites; oi++) {
    size_t i = tpp_order[oi];
    if (tpp_kind[i] != K_COLD || strchr(tpp_sites[i].name, '+') == NULL) continue;
    if (!any_cold) fprintf(f, "\ngroup cold apart\n");
    any_cold = 1;
    fprintf(f, "site %s   # %llu bytes, %llu accesses\n", tpp_sites[i].name, (unsigned long long)tpp_sites[i].bytes,
            (unsigned long long)tpp_sites[i].accesses);
    (*ncold)++;
  }
  free(done);
  return fclose(f);
}
