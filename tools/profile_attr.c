/* tlbpack profile: attribution. The allocation log and the trace are read in step (one marker
 * store in the trace per log record); each data access goes through the TLB model and is
 * charged, with the misses, walks and walk references it caused, to the site (or site + class
 * key, behind a wrapper) of the live object that holds it; sites touched close together in
 * time are counted in pairs (the affinity graph). */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sitekey.h"

/* ---- state ----------------------------------------------------------------------------- */


/* Page index: for each 4 KiB page, a chain of the live objects overlapping it. */
typedef struct { uint32_t obj, next; } link_t;

site_t *tpp_sites;
size_t tpp_nsites;
static size_t capsites;
map_t tpp_site_of_ra, tpp_obj_of_start, tpp_page_head, tpp_pages_seen, tpp_pairs;
obj_t *tpp_objs;
size_t tpp_nobjs;
static size_t capobjs;
static uint32_t *free_objs;
static size_t nfree_objs;
static link_t *links;
static size_t nlinks, caplinks;
static uint32_t free_link = UINT32_MAX;
uint64_t tpp_now; /* data accesses so far */
uint64_t tpp_total_data, tpp_unattributed, tpp_una_l1, tpp_una_l2, tpp_una_refs;
static uint32_t ring[RING];
static unsigned ring_n;
static uint32_t last_site = UINT32_MAX;
static uint32_t last_obj = UINT32_MAX;

static uint32_t site_index(uint64_t ra) {
  uint32_t *v = tpp_map_slot(&tpp_site_of_ra, ra, 0);
  if (v) return *v - 1;
  if (tpp_nsites == capsites) {
    capsites = capsites ? capsites * 2 : 256;
    tpp_sites = tpp_xrealloc(tpp_sites, capsites * sizeof *tpp_sites);
  }
  memset(&tpp_sites[tpp_nsites], 0, sizeof tpp_sites[tpp_nsites]);
  tpp_sites[tpp_nsites].ra = ra;
  *tpp_map_slot(&tpp_site_of_ra, ra, 1) = (uint32_t)(tpp_nsites + 1);
  return (uint32_t)tpp_nsites++;
}

static uint32_t link_new(void) {
  if (free_link != UINT32_MAX) {
    uint32_t l = free_link;
    free_link = links[l].next;
    return l;
  }
  if (nlinks == caplinks) {
    caplinks = caplinks ? caplinks * 2 : 4096;
    links = tpp_xrealloc(links, caplinks * sizeof *links);
  }
  return (uint32_t)nlinks++;
}

static void obj_add(uint32_t site, uint64_t addr, uint64_t size, uint64_t birth) {
  uint32_t id;
  if (nfree_objs) id = free_objs[--nfree_objs];
  else {
    if (tpp_nobjs == capobjs) {
      capobjs = capobjs ? capobjs * 2 : 4096;
      tpp_objs = tpp_xrealloc(tpp_objs, capobjs * sizeof *tpp_objs);
      free_objs = tpp_xrealloc(free_objs, capobjs * sizeof *free_objs);
    }
    id = (uint32_t)tpp_nobjs++;
  }
  uint64_t end = addr + (size ? size : 1);
  tpp_objs[id] = (obj_t){addr, end, birth, site, 1};
  *tpp_map_slot(&tpp_obj_of_start, addr, 1) = id + 1;
  for (uint64_t pg = addr >> 12; pg <= (end - 1) >> 12; pg++) {
    uint32_t *h = tpp_map_slot(&tpp_page_head, pg, 1);
    uint32_t l = link_new();
    links[l] = (link_t){id, *h ? *h - 1 : UINT32_MAX};
    *h = l + 1;
  }
}

static void obj_remove(uint32_t id) {
  obj_t *o = &tpp_objs[id];
  for (uint64_t pg = o->start >> 12; pg <= (o->end - 1) >> 12; pg++) {
    uint32_t *h = tpp_map_slot(&tpp_page_head, pg, 0);
    if (!h) continue;
    uint32_t prev = UINT32_MAX, l = *h - 1;
    while (l != UINT32_MAX && links[l].obj != id) {
      prev = l;
      l = links[l].next;
    }
    if (l == UINT32_MAX) continue;
    if (prev == UINT32_MAX) {
      if (links[l].next == UINT32_MAX) tpp_map_del(&tpp_page_head, pg);
      else *h = links[l].next + 1;
    } else {
      links[prev].next = links[l].next;
    }
    links[l].next = free_link;
    free_link = l;
  }
  tpp_map_del(&tpp_obj_of_start, o->start);
  o->alive = 0;
  free_objs[nfree_objs++] = id;
  if (last_obj == id) last_obj = UINT32_MAX;
}

/* The allocator's key for an allocation (group.c _tp_site_key): behind a wrapper, site + class,
 * from the allocation that shows the site to be one. */
static uint32_t key_index(uint64_t ra, uint64_t size) {
  uint32_t s = site_index(ra);
  if (size > (256u << 10)) return s;
  unsigned c = _tp_class_of(size ? size : 1);
  if (!tpp_sites[s].split) {
    tpp_sites[s].classes |= (uint64_t)1 << c;
    tpp_sites[s].split = _tp_wrapper_classes(tpp_sites[s].classes);
  }
  return tpp_sites[s].split ? site_index(_tp_key_of(ra, c)) : s;
}

static void do_alloc(uint64_t ra, uint64_t addr, uint64_t size) {
  uint32_t s = key_index(ra, size);
  uint32_t *old = tpp_map_slot(&tpp_obj_of_start, addr, 0);
  if (old) obj_remove(*old - 1); /* a block we missed the free of */
  obj_add(s, addr, size, tpp_now);
  tpp_sites[s].objects++;
  tpp_sites[s].bytes += size;
}

static void do_free(uint64_t addr) {
  uint32_t *v = tpp_map_slot(&tpp_obj_of_start, addr, 0);
  if (!v) return;
  uint32_t id = *v - 1;
  site_t *st = &tpp_sites[tpp_objs[id].site];
  st->life_sum += tpp_now - tpp_objs[id].birth;
  st->freed++;
  obj_remove(id);
}

static void do_realloc(uint64_t old, uint64_t addr, uint64_t size) {
  uint32_t *v = tpp_map_slot(&tpp_obj_of_start, old, 0);
  if (!v) return;
  uint32_t id = *v - 1;
  uint32_t s = tpp_objs[id].site;
  uint64_t birth = tpp_objs[id].birth;
  obj_remove(id);
  uint32_t *o2 = tpp_map_slot(&tpp_obj_of_start, addr, 0);
  if (o2) obj_remove(*o2 - 1);
  obj_add(s, addr, size, birth);
  tpp_sites[s].bytes += size;
}

static uint32_t find_obj(uint64_t a) {
  if (last_obj != UINT32_MAX && a >= tpp_objs[last_obj].start && a < tpp_objs[last_obj].end) return last_obj;
  uint32_t *h = tpp_map_slot(&tpp_page_head, a >> 12, 0);
  if (!h) return UINT32_MAX;
  for (uint32_t l = *h - 1; l != UINT32_MAX; l = links[l].next) {
    obj_t *o = &tpp_objs[links[l].obj];
    if (a >= o->start && a < o->end) return last_obj = links[l].obj;
  }
  return UINT32_MAX;
}

static void affinity(uint32_t s) {
  if (s == last_site) return;
  last_site = s;
  tpp_sites[s].visits++;
  for (unsigned i = 0; i < ring_n; i++) {
    uint32_t u = ring[i];
    if (u == s) continue;
    uint64_t key = s < u ? (uint64_t)s << 32 | u : (uint64_t)u << 32 | s;
    (*tpp_map_slot(&tpp_pairs, key, 1))++;
  }
  unsigned j = 0; /* move s to the front, most recent first */
  while (j < ring_n && ring[j] != s) j++;
  if (j == ring_n && ring_n < RING) ring_n++;
  if (j == RING) j = RING - 1;
  memmove(ring + 1, ring, j * sizeof *ring);
  ring[0] = s;
}

/* ---- the trace ------------------------------------------------------------------------- */

static int next_event(run_t *r) {
  uint64_t rec[4];
  /* The log grows while it is read: read at the record's offset, never at a sticky EOF. */
  if (pread(fileno(r->log), rec, sizeof rec, (off_t)(16 + r->events * sizeof rec)) != (ssize_t)sizeof rec) return -1;
  r->events++;
  if (rec[0] == 'A') do_alloc(rec[1], rec[2], rec[3]);
  else if (rec[0] == 'F') do_free(rec[2]);
  else if (rec[0] == 'R') do_realloc(rec[1], rec[2], rec[3]);
  return 0;
}

static void access1(run_t *r, uint64_t addr, uint32_t size, char op) {
  if (op == 'I') {
    ts_access(r->sim, addr, size, op);
    return;
  }
  uint64_t l1 = r->st->l1_misses, l2 = r->st->l2_misses, refs = r->st->walk_mem_refs;
  ts_access(r->sim, addr, size, op);
  l1 = r->st->l1_misses - l1;
  l2 = r->st->l2_misses - l2;
  refs = r->st->walk_mem_refs - refs;
  tpp_now++;
  tpp_total_data++;
  uint32_t id = find_obj(addr);
  if (id == UINT32_MAX) {
    tpp_unattributed++;
    tpp_una_l1 += l1;
    tpp_una_l2 += l2;
    tpp_una_refs += refs;
    return;
  }
  uint32_t s = tpp_objs[id].site;
  site_t *st = &tpp_sites[s];
  st->accesses++;
  st->l1 += l1;
  st->l2 += l2;
  st->refs += refs;
  uint32_t *p4 = tpp_map_slot(&tpp_pages_seen, (addr >> 12) << 20 | s, 1);
  if (*p4 == 0) st->pages4k++, *p4 = 1;
  uint32_t *p2 = tpp_map_slot(&tpp_pages_seen, ((addr >> 21) << 20 | s) | (1ull << 63), 1);
  if (*p2 == 0) st->pages2m++, *p2 = 1;
  affinity(s);
}

static int hexval(const char **p, uint64_t *out) {
  const char *c = *p;
  if (c[0] == '0' && (c[1] == 'x' || c[1] == 'X')) c += 2;
  uint64_t v = 0;
  int n = 0;
  for (;; c++, n++) {
    int d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
            : *c >= 'A' && *c <= 'F' ? *c - 'A' + 10 : -1;
    if (d < 0) break;
    v = v << 4 | (uint64_t)d;
  }
  *p = c;
  *out = v;
  return n ? 0 : -1;
}

/* One line of a lackey trace (" L addr,size", "I  addr,size") or a text trace ("R addr size");
 * other lines (valgrind's ==pid== messages) are skipped. */
int tpp_trace_line(run_t *r, const char *line) {
  const char *p = line;
  char op;
  if (p[0] == 'I' && p[1] == ' ') op = 'I', p += 1;
  else if (p[0] == ' ' && (p[1] == 'L' || p[1] == 'S' || p[1] == 'M')) op = p[1] == 'L' ? 'R' : 'W', p += 2;
  else if ((p[0] == 'R' || p[0] == 'W') && p[1] == ' ') op = p[0], p += 1;
  else return 0;
  while (*p == ' ') p++;
  uint64_t addr, size = 1;
  if (hexval(&p, &addr) != 0) return 0;
  if (*p == ',' || *p == ' ') size = strtoull(p + 1, NULL, 10);
  r->lines++;
  if (op == 'W' && addr == r->marker && size == 8) {
    if (next_event(r) != 0) return -1;
    return 0;
  }
  access1(r, addr, (uint32_t)(size ? size : 1), op);
  if ((r->lines & ((1u << 24) - 1)) == 0)
    fprintf(stderr, "tlbpack profile: %llu M accesses, %llu allocation events\n",
            (unsigned long long)(r->lines >> 20), (unsigned long long)r->events);
  return 0;
}
