/* tlbpack profile: which allocation sites cost TLB misses, and which sites are used together.
 *
 * PROGRAM runs under valgrind lackey (--trace-mem=yes) with libtlbpack-profile.so preloaded:
 * tlbpack's own placement, plus a log of every allocation (alloc/profile.c describes it; one
 * store to a marker word per record lines the log up with the trace). Each access of the trace
 * goes through libtlbsim (the model tlbsim uses); each data access is attributed to the live
 * object that holds it, and the L1 misses, L2 misses (page walks) and walk memory references
 * it caused to that object's allocation site. Sites are named module + offset from the load
 * address (the same in the next run of the same binary), and by function and file:line where
 * addr2line finds debug information. Then it writes a placement plan (README.md, "Placement
 * plans") for TLBPACK_CONF=plan:FILE. */
#include "cli.h"
#include "sitekey.h"
#include "tlbsim.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void profile_usage(FILE *out) {
  fprintf(out,
          "usage: tlbpack profile [--cpu PRESET] [--page-size 4k|2m] [--json] [--top N] [--plan FILE]\n"
          "                       [--keep DIR] [--lib PATH] [--] PROGRAM [ARGS...]\n"
          "       tlbpack profile [OPTIONS] --replay LOG TRACE\n"
          "\n"
          "Runs PROGRAM under valgrind's lackey tool with libtlbpack-profile.so preloaded (tlbpack's\n"
          "placement plus a log of every allocation), simulates the TLBs over every access (the\n"
          "model of tlbsim) and attributes each data access, L1 TLB miss, page walk and walk memory\n"
          "reference to the allocation site of the live object it touched. Prints per site:\n"
          "objects, bytes, accesses, distinct 4 KiB and 2 MiB pages, misses, walks, walk references\n"
          "and mean lifetime (in accesses of the trace); then the pairs of sites most often\n"
          "accessed close together in time. Writes a placement plan for TLBPACK_CONF=plan:FILE.\n"
          "Expect PROGRAM to run about 100-300x slower than alone: use a short run.\n"
          "\n"
          "  --cpu PRESET      TLB preset (default zen4): core2, skylake, goldencove, zen2, zen3, zen4\n"
          "  --page-size P     page size the simulator maps everything with (default 4k)\n"
          "  --json            one JSON object on stdout instead of the tables\n"
          "  --top N           rows of each table (default 15)\n"
          "  --plan FILE       where to write the plan (default tlbpack.plan; '-' for none)\n"
          "  --keep DIR        keep the allocation log and the maps copy in DIR\n"
          "  --lib PATH        the libtlbpack-profile.so to preload (default: beside tlbpack)\n"
          "  --replay LOG TRACE  analyse a kept log and a lackey or text trace instead of running\n"
          "  -h, --help        this text\n"
          "\n"
          "Progress goes to stderr. Example:\n"
          "  tlbpack profile --plan sq.plan -- sqlite3 :memory: < script.sql\n"
          "  tlbpack run --conf plan:sq.plan -- sqlite3 :memory: < script.sql\n");
}

/* ---- hash maps: u64 key -> u32 value, open addressing ---------------------------------- */
typedef struct {
  uint64_t *k;
  uint32_t *v;
  size_t cap, n;
} map_t;

#define EMPTY UINT64_MAX
static void *xcalloc(size_t n, size_t s) {
  void *p = calloc(n ? n : 1, s);
  if (!p) {
    fprintf(stderr, "tlbpack profile: out of memory\n");
    exit(TPC_EXIT_FAIL);
  }
  return p;
}
static void *xrealloc(void *p, size_t n) {
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
static void map_init(map_t *m, size_t cap) {
  m->cap = cap;
  m->n = 0;
  m->k = xcalloc(cap, sizeof *m->k);
  m->v = xcalloc(cap, sizeof *m->v);
  memset(m->k, 0xff, cap * sizeof *m->k);
}
static uint32_t *map_slot(map_t *m, uint64_t key, int insert);
static void map_grow(map_t *m) {
  map_t o = *m;
  map_init(m, o.cap * 2);
  for (size_t i = 0; i < o.cap; i++)
    if (o.k[i] != EMPTY) *map_slot(m, o.k[i], 1) = o.v[i];
  free(o.k);
  free(o.v);
}
/* The value slot of key; NULL when absent and !insert. Inserted values start at 0. */
static uint32_t *map_slot(map_t *m, uint64_t key, int insert) {
  size_t i = h64(key) & (m->cap - 1);
  for (;;) {
    if (m->k[i] == key) return &m->v[i];
    if (m->k[i] == EMPTY) break;
    i = (i + 1) & (m->cap - 1);
  }
  if (!insert) return NULL;
  if ((m->n + 1) * 4 > m->cap * 3) {
    map_grow(m);
    return map_slot(m, key, 1);
  }
  m->k[i] = key;
  m->v[i] = 0;
  m->n++;
  return &m->v[i];
}
/* Removal with backward shift (keeps probe chains whole). */
static void map_del(map_t *m, uint64_t key) {
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

/* ---- state ----------------------------------------------------------------------------- */
typedef struct {
  uint64_t ra;             /* a return address, or a site + class key (sitekey.h) */
  uint64_t classes;        /* whole sites: the classes seen, to split wrappers as the allocator does */
  int split;
  uint64_t objects, bytes, accesses, visits, l1, l2, refs, pages4k, pages2m, freed;
  uint64_t life_sum;       /* accesses of the trace between birth and death (or the end) */
  uint64_t live_bytes;
  char name[PATH_MAX + 32], sym[512];
} site_t;

typedef struct {
  uint64_t start, end, birth;
  uint32_t site;
  uint32_t alive;
} obj_t;

/* Page index: for each 4 KiB page, a chain of the live objects overlapping it. */
typedef struct { uint32_t obj, next; } link_t;

static site_t *sites;
static size_t nsites, capsites;
static map_t site_of_ra, obj_of_start, page_head, pages_seen, pairs;
static obj_t *objs;
static size_t nobjs, capobjs;
static uint32_t *free_objs;
static size_t nfree_objs;
static link_t *links;
static size_t nlinks, caplinks;
static uint32_t free_link = UINT32_MAX;
static uint64_t now; /* data accesses so far */
static uint64_t total_data, unattributed, una_l1, una_l2, una_refs;
#define RING 8
static uint32_t ring[RING];
static unsigned ring_n;
static uint32_t last_site = UINT32_MAX;
static uint32_t last_obj = UINT32_MAX;

static uint32_t site_index(uint64_t ra) {
  uint32_t *v = map_slot(&site_of_ra, ra, 0);
  if (v) return *v - 1;
  if (nsites == capsites) {
    capsites = capsites ? capsites * 2 : 256;
    sites = xrealloc(sites, capsites * sizeof *sites);
  }
  memset(&sites[nsites], 0, sizeof sites[nsites]);
  sites[nsites].ra = ra;
  *map_slot(&site_of_ra, ra, 1) = (uint32_t)(nsites + 1);
  return (uint32_t)nsites++;
}

static uint32_t link_new(void) {
  if (free_link != UINT32_MAX) {
    uint32_t l = free_link;
    free_link = links[l].next;
    return l;
  }
  if (nlinks == caplinks) {
    caplinks = caplinks ? caplinks * 2 : 4096;
    links = xrealloc(links, caplinks * sizeof *links);
  }
  return (uint32_t)nlinks++;
}

static void obj_add(uint32_t site, uint64_t addr, uint64_t size, uint64_t birth) {
  uint32_t id;
  if (nfree_objs) id = free_objs[--nfree_objs];
  else {
    if (nobjs == capobjs) {
      capobjs = capobjs ? capobjs * 2 : 4096;
      objs = xrealloc(objs, capobjs * sizeof *objs);
      free_objs = xrealloc(free_objs, capobjs * sizeof *free_objs);
    }
    id = (uint32_t)nobjs++;
  }
  uint64_t end = addr + (size ? size : 1);
  objs[id] = (obj_t){addr, end, birth, site, 1};
  *map_slot(&obj_of_start, addr, 1) = id + 1;
  for (uint64_t pg = addr >> 12; pg <= (end - 1) >> 12; pg++) {
    uint32_t *h = map_slot(&page_head, pg, 1);
    uint32_t l = link_new();
    links[l] = (link_t){id, *h ? *h - 1 : UINT32_MAX};
    *h = l + 1;
  }
}

static void obj_remove(uint32_t id) {
  obj_t *o = &objs[id];
  for (uint64_t pg = o->start >> 12; pg <= (o->end - 1) >> 12; pg++) {
    uint32_t *h = map_slot(&page_head, pg, 0);
    if (!h) continue;
    uint32_t prev = UINT32_MAX, l = *h - 1;
    while (l != UINT32_MAX && links[l].obj != id) {
      prev = l;
      l = links[l].next;
    }
    if (l == UINT32_MAX) continue;
    if (prev == UINT32_MAX) {
      if (links[l].next == UINT32_MAX) map_del(&page_head, pg);
      else *h = links[l].next + 1;
    } else {
      links[prev].next = links[l].next;
    }
    links[l].next = free_link;
    free_link = l;
  }
  map_del(&obj_of_start, o->start);
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
  if (!sites[s].split) {
    sites[s].classes |= (uint64_t)1 << c;
    sites[s].split = _tp_wrapper_classes(sites[s].classes);
  }
  return sites[s].split ? site_index(_tp_key_of(ra, c)) : s;
}

static void do_alloc(uint64_t ra, uint64_t addr, uint64_t size) {
  uint32_t s = key_index(ra, size);
  uint32_t *old = map_slot(&obj_of_start, addr, 0);
  if (old) obj_remove(*old - 1); /* a block we missed the free of */
  obj_add(s, addr, size, now);
  sites[s].objects++;
  sites[s].bytes += size;
}

static void do_free(uint64_t addr) {
  uint32_t *v = map_slot(&obj_of_start, addr, 0);
  if (!v) return;
  uint32_t id = *v - 1;
  site_t *st = &sites[objs[id].site];
  st->life_sum += now - objs[id].birth;
  st->freed++;
  obj_remove(id);
}

static void do_realloc(uint64_t old, uint64_t addr, uint64_t size) {
  uint32_t *v = map_slot(&obj_of_start, old, 0);
  if (!v) return;
  uint32_t id = *v - 1;
  uint32_t s = objs[id].site;
  uint64_t birth = objs[id].birth;
  obj_remove(id);
  uint32_t *o2 = map_slot(&obj_of_start, addr, 0);
  if (o2) obj_remove(*o2 - 1);
  obj_add(s, addr, size, birth);
  sites[s].bytes += size;
}

static uint32_t find_obj(uint64_t a) {
  if (last_obj != UINT32_MAX && a >= objs[last_obj].start && a < objs[last_obj].end) return last_obj;
  uint32_t *h = map_slot(&page_head, a >> 12, 0);
  if (!h) return UINT32_MAX;
  for (uint32_t l = *h - 1; l != UINT32_MAX; l = links[l].next) {
    obj_t *o = &objs[links[l].obj];
    if (a >= o->start && a < o->end) return last_obj = links[l].obj;
  }
  return UINT32_MAX;
}

static void affinity(uint32_t s) {
  if (s == last_site) return;
  last_site = s;
  sites[s].visits++;
  for (unsigned i = 0; i < ring_n; i++) {
    uint32_t u = ring[i];
    if (u == s) continue;
    uint64_t key = s < u ? (uint64_t)s << 32 | u : (uint64_t)u << 32 | s;
    (*map_slot(&pairs, key, 1))++;
  }
  unsigned j = 0; /* move s to the front, most recent first */
  while (j < ring_n && ring[j] != s) j++;
  if (j == ring_n && ring_n < RING) ring_n++;
  if (j == RING) j = RING - 1;
  memmove(ring + 1, ring, j * sizeof *ring);
  ring[0] = s;
}

/* ---- the trace ------------------------------------------------------------------------- */
typedef struct {
  ts_sim_t *sim;
  const ts_stats_t *st;
  FILE *log;
  uint64_t marker;
  uint64_t events, lines;
} run_t;

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
  now++;
  total_data++;
  uint32_t id = find_obj(addr);
  if (id == UINT32_MAX) {
    unattributed++;
    una_l1 += l1;
    una_l2 += l2;
    una_refs += refs;
    return;
  }
  uint32_t s = objs[id].site;
  site_t *st = &sites[s];
  st->accesses++;
  st->l1 += l1;
  st->l2 += l2;
  st->refs += refs;
  uint32_t *p4 = map_slot(&pages_seen, (addr >> 12) << 20 | s, 1);
  if (*p4 == 0) st->pages4k++, *p4 = 1;
  uint32_t *p2 = map_slot(&pages_seen, ((addr >> 21) << 20 | s) | (1ull << 63), 1);
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
static int trace_line(run_t *r, const char *line) {
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

/* ---- naming sites ---------------------------------------------------------------------- */
typedef struct { uint64_t start, end, off; char path[PATH_MAX]; } mapping_t;
static mapping_t *maps;
static size_t nmaps;

static void load_maps(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[PATH_MAX + 128];
  while (fgets(line, sizeof line, f)) {
    mapping_t m = {0};
    char perms[8];
    unsigned long long s, e, off;
    int n = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &n) < 4 || n == 0) continue;
    char *pth = line + n;
    pth[strcspn(pth, "\n")] = 0;
    if (pth[0] != '/') continue;
    m.start = s, m.end = e, m.off = off;
    snprintf(m.path, sizeof m.path, "%s", pth);
    maps = xrealloc(maps, (nmaps + 1) * sizeof *maps);
    maps[nmaps++] = m;
  }
  fclose(f);
}

static uint64_t module_base(const char *path) {
  uint64_t b = 0;
  for (size_t i = 0; i < nmaps; i++)
    if (maps[i].off == 0 && !strcmp(maps[i].path, path) && (b == 0 || maps[i].start < b)) b = maps[i].start;
  return b;
}

static int elf_is_exec(const char *path) {
  unsigned char h[18];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, h, sizeof h);
  close(fd);
  return n == (ssize_t)sizeof h && h[16] == 2; /* ET_EXEC: addresses are absolute */
}

/* Module+offset for every site; for the ones printed, function and file:line by addr2line. */
static const char *site_module(const site_t *s, uint64_t *off) {
  uint64_t ra = _tp_key_site(s->ra);
  for (size_t i = 0; i < nmaps; i++)
    if (ra >= maps[i].start && ra < maps[i].end) {
      uint64_t b = module_base(maps[i].path);
      if (b == 0) return NULL;
      *off = ra - b;
      return maps[i].path;
    }
  return NULL;
}

/* MODULE+0xOFFSET, and " size N" (the class's size) for a site + class key: the plan's words. */
static void name_sites(void) {
  for (size_t i = 0; i < nsites; i++) {
    uint64_t off;
    const char *m = site_module(&sites[i], &off);
    int c = _tp_key_class(sites[i].ra);
    char cls[32] = "";
    if (c >= 0) snprintf(cls, sizeof cls, " size %zu", _tp_class_size((unsigned)c));
    if (m) snprintf(sites[i].name, sizeof sites[i].name, "%s+0x%llx%s", m, (unsigned long long)off, cls);
    else snprintf(sites[i].name, sizeof sites[i].name, "0x%llx%s", (unsigned long long)_tp_key_site(sites[i].ra), cls);
  }
}

static void symbolize(site_t *s) {
  uint64_t off;
  const char *m = site_module(s, &off);
  if (!m || s->sym[0]) return;
  uint64_t a = (elf_is_exec(m) ? _tp_key_site(s->ra) : off) - 1; /* the call, not the instruction after it */
  char cmd[PATH_MAX + 128];
  snprintf(cmd, sizeof cmd, "addr2line -f -C -e '%s' 0x%llx 2>/dev/null", m, (unsigned long long)a);
  FILE *p = popen(cmd, "r");
  if (!p) return;
  char fn[256] = "", fl[PATH_MAX] = "";
  if (fgets(fn, sizeof fn, p)) fn[strcspn(fn, "\n")] = 0;
  if (fgets(fl, sizeof fl, p)) fl[strcspn(fl, "\n")] = 0;
  pclose(p);
  const char *base = strrchr(fl, '/');
  base = base ? base + 1 : fl;
  if (fn[0] && strcmp(fn, "??")) {
    if (fl[0] && fl[0] != '?') snprintf(s->sym, sizeof s->sym, "%s %s", fn, base);
    else snprintf(s->sym, sizeof s->sym, "%s", fn);
  }
}

/* ---- the plan -------------------------------------------------------------------------- */
static size_t *order; /* site indices by L1 misses, most first */
static int by_misses(const void *a, const void *b) {
  const site_t *x = &sites[*(const size_t *)a], *y = &sites[*(const size_t *)b];
  if (x->l1 != y->l1) return x->l1 < y->l1 ? 1 : -1;
  return x->accesses < y->accesses ? 1 : x->accesses > y->accesses ? -1 : 0;
}

static uint32_t uf[1 << 16];
static uint32_t uf_find(uint32_t x) {
  while (uf[x] != x) x = uf[x] = uf[uf[x]];
  return x;
}

enum { K_REST = 0, K_HOT = 1, K_COLD = 2 };
static uint8_t *kind;

/* Cold: long-lived (most objects still live at the end, or a mean lifetime of at least a tenth
 * of the run), at least 16 KiB, touched at most once per 2 bytes allocated (written once, read
 * little), at most one L1 miss per 10 accesses (a first write runs through a page; a value read
 * at random misses far more often): kept apart from the hot pages. Hot: at least
 * 2% of the attributed L1 misses or 5% of the accesses to heap objects (a small run of a
 * program keeps a compact hot site on few pages, where it misses little: its share of accesses
 * still says it is hot at full size), 16 objects or more, long-lived: an ordered group never
 * reuses a freed block in place, so churning sites stay as they are. */
static void classify(uint64_t total_l1, uint64_t total_acc) {
  kind = xcalloc(nsites, 1);
  for (size_t i = 0; i < nsites; i++) {
    site_t *s = &sites[i];
    uint64_t live = s->objects - s->freed;
    uint64_t life = s->life_sum + 0;
    int long_lived = s->objects && (live * 2 >= s->objects || life / s->objects >= now / 10);
    if (long_lived && s->bytes >= 16384 && s->accesses * 2 <= s->bytes && s->l1 * 10 <= s->accesses) kind[i] = K_COLD;
    else if (((total_l1 && s->l1 * 50 >= total_l1) || (total_acc && s->accesses * 20 >= total_acc)) && long_lived &&
             s->objects >= 16 && nsites < (1 << 16))
      kind[i] = K_HOT;
  }
  for (uint32_t i = 0; i < nsites && i < (1 << 16); i++) uf[i] = i;
  for (size_t i = 0; i < pairs.cap; i++) {
    if (pairs.k[i] == EMPTY) continue;
    uint32_t a = (uint32_t)(pairs.k[i] >> 32), b = (uint32_t)pairs.k[i];
    if (a >= nsites || b >= nsites || kind[a] != K_HOT || kind[b] != K_HOT) continue;
    uint64_t m = sites[a].visits < sites[b].visits ? sites[a].visits : sites[b].visits;
    if ((uint64_t)pairs.v[i] * 5 >= m) uf[uf_find(a)] = uf_find(b);
  }
}

static int write_plan(const char *path, const char *program, unsigned *nhot, unsigned *ncold) {
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
  uint8_t *done = xcalloc(nsites, 1);
  for (size_t oi = 0; oi < nsites; oi++) {
    size_t i = order[oi];
    if (kind[i] != K_HOT || done[i]) continue;
    uint32_t root = uf_find((uint32_t)i);
    unsigned members = 0;
    for (size_t j = 0; j < nsites; j++) members += kind[j] == K_HOT && uf_find((uint32_t)j) == root;
    if (members < 2) continue; /* alone, a hot site does as well in its own site group */
    fprintf(f, "\ngroup hot%u ordered\n", ++g);
    for (size_t oj = 0; oj < nsites; oj++) {
      size_t j = order[oj];
      if (kind[j] != K_HOT || uf_find((uint32_t)j) != root) continue;
      done[j] = 1;
      if (strchr(sites[j].name, '+') == NULL) continue;
      fprintf(f, "site %s   # %llu L1 misses, %llu objects%s%s\n", sites[j].name, (unsigned long long)sites[j].l1,
              (unsigned long long)sites[j].objects, sites[j].sym[0] ? ", " : "", sites[j].sym);
      (*nhot)++;
    }
  }
  int any_cold = 0;
  for (size_t oi = 0; oi < nsites; oi++) {
    size_t i = order[oi];
    if (kind[i] != K_COLD || strchr(sites[i].name, '+') == NULL) continue;
    if (!any_cold) fprintf(f, "\ngroup cold apart\n");
    any_cold = 1;
    fprintf(f, "site %s   # %llu bytes, %llu accesses\n", sites[i].name, (unsigned long long)sites[i].bytes,
            (unsigned long long)sites[i].accesses);
    (*ncold)++;
  }
  free(done);
  return fclose(f);
}

/* ---- reports --------------------------------------------------------------------------- */
static void json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(o, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(o, "\\u%04x", *s);
    else fputc(*s, o);
  }
  fputc('"', o);
}

typedef struct { uint32_t a, b, n; } pair_t;
static int by_count(const void *x, const void *y) {
  const pair_t *p = x, *q = y;
  return p->n < q->n ? 1 : p->n > q->n ? -1 : 0;
}

static void report(FILE *o, int json, unsigned top, const ts_stats_t *st, const char *plan, unsigned nhot,
                   unsigned ncold) {
  pair_t *pl = xcalloc(pairs.n, sizeof *pl);
  size_t np = 0;
  for (size_t i = 0; i < pairs.cap; i++)
    if (pairs.k[i] != EMPTY) pl[np++] = (pair_t){(uint32_t)(pairs.k[i] >> 32), (uint32_t)pairs.k[i], pairs.v[i]};
  qsort(pl, np, sizeof *pl, by_count);
  size_t ns = nsites < top ? nsites : top;
  size_t npr = np < top ? np : top;
  if (json) {
    fprintf(o, "{\"accesses\": %llu, \"data_accesses\": %llu, \"l1_misses\": %llu, \"l2_misses\": %llu, "
               "\"walk_mem_refs\": %llu, \"unattributed\": {\"accesses\": %llu, \"l1_misses\": %llu, "
               "\"l2_misses\": %llu, \"walk_mem_refs\": %llu}, \"nsites\": %zu, \"plan\": ",
            (unsigned long long)st->accesses, (unsigned long long)total_data, (unsigned long long)st->l1_misses,
            (unsigned long long)st->l2_misses, (unsigned long long)st->walk_mem_refs,
            (unsigned long long)unattributed, (unsigned long long)una_l1, (unsigned long long)una_l2,
            (unsigned long long)una_refs, nsites);
    if (plan) json_str(o, plan);
    else fputs("null", o);
    fprintf(o, ", \"plan_hot_sites\": %u, \"plan_cold_sites\": %u,\n \"sites\": [", nhot, ncold);
    for (size_t k = 0; k < ns; k++) {
      const site_t *s = &sites[order[k]];
      fprintf(o, "%s\n  {\"site\": ", k ? "," : "");
      json_str(o, s->name);
      fprintf(o, ", \"symbol\": ");
      json_str(o, s->sym);
      fprintf(o, ", \"objects\": %llu, \"bytes\": %llu, \"accesses\": %llu, \"pages_4k\": %llu, "
                 "\"pages_2m\": %llu, \"l1_misses\": %llu, \"l2_misses\": %llu, \"walk_mem_refs\": %llu, "
                 "\"freed\": %llu, \"mean_lifetime\": %.1f, \"plan\": \"%s\"}",
              (unsigned long long)s->objects, (unsigned long long)s->bytes, (unsigned long long)s->accesses,
              (unsigned long long)s->pages4k, (unsigned long long)s->pages2m, (unsigned long long)s->l1,
              (unsigned long long)s->l2, (unsigned long long)s->refs, (unsigned long long)s->freed,
              s->objects ? (double)(s->life_sum + (s->objects - s->freed) * 0) / (double)s->objects : 0.0,
              kind[order[k]] == K_HOT ? "hot" : kind[order[k]] == K_COLD ? "cold" : "");
    }
    fprintf(o, "],\n \"pairs\": [");
    for (size_t k = 0; k < npr; k++) {
      fprintf(o, "%s\n  {\"a\": ", k ? "," : "");
      json_str(o, sites[pl[k].a].name);
      fprintf(o, ", \"b\": ");
      json_str(o, sites[pl[k].b].name);
      fprintf(o, ", \"count\": %u}", pl[k].n);
    }
    fprintf(o, "]}\n");
  } else {
    fprintf(o, "%llu accesses (%llu data); L1 TLB misses %llu, L2 misses (walks) %llu, walk refs %llu\n",
            (unsigned long long)st->accesses, (unsigned long long)total_data, (unsigned long long)st->l1_misses,
            (unsigned long long)st->l2_misses, (unsigned long long)st->walk_mem_refs);
    fprintf(o, "not in any heap object (stack, globals, code data, allocator metadata): %llu data accesses, "
               "%llu L1 misses, %llu walks\n\n",
            (unsigned long long)unattributed, (unsigned long long)una_l1, (unsigned long long)una_l2);
    fprintf(o, "%-4s %9s %11s %11s %7s %5s %9s %8s %9s %11s  %s\n", "plan", "objects", "bytes", "accesses", "4k-pg",
            "2m-pg", "l1-miss", "walks", "walk-ref", "mean-life", "site");
    for (size_t k = 0; k < ns; k++) {
      const site_t *s = &sites[order[k]];
      fprintf(o, "%-4s %9llu %11llu %11llu %7llu %5llu %9llu %8llu %9llu %11.0f  %s%s%s%s\n",
              kind[order[k]] == K_HOT ? "hot" : kind[order[k]] == K_COLD ? "cold" : "-",
              (unsigned long long)s->objects, (unsigned long long)s->bytes, (unsigned long long)s->accesses,
              (unsigned long long)s->pages4k, (unsigned long long)s->pages2m, (unsigned long long)s->l1,
              (unsigned long long)s->l2, (unsigned long long)s->refs,
              s->objects ? (double)s->life_sum / (double)s->objects : 0.0, s->name, s->sym[0] ? " (" : "", s->sym,
              s->sym[0] ? ")" : "");
    }
    if (nsites > ns) fprintf(o, "... %zu more sites\n", nsites - ns);
    fprintf(o, "\nsites accessed close together (within %d site switches):\n", RING);
    for (size_t k = 0; k < npr; k++)
      fprintf(o, "%10u  %s%s%s  <->  %s%s%s\n", pl[k].n, sites[pl[k].a].name, sites[pl[k].a].sym[0] ? " " : "",
              sites[pl[k].a].sym, sites[pl[k].b].name, sites[pl[k].b].sym[0] ? " " : "", sites[pl[k].b].sym);
    if (plan) fprintf(o, "\nplan: %s (%u hot sites in ordered groups, %u cold sites apart)\n", plan, nhot, ncold);
  }
  free(pl);
}

/* ---- running --------------------------------------------------------------------------- */
static int find_profile_lib(const char *explicit_path, char *out, size_t n) {
  if (explicit_path) {
    if (!realpath(explicit_path, out)) return -1;
    return 0;
  }
  const char *dir = tpc_self_dir();
  if (dir) {
    snprintf(out, n, "%s/libtlbpack-profile.so", dir);
    if (access(out, R_OK) == 0) return 0;
#ifdef TP_REL_LIBDIR
    snprintf(out, n, "%s/%s/libtlbpack-profile.so", dir, TP_REL_LIBDIR);
    if (access(out, R_OK) == 0) return 0;
#endif
  }
  return -1;
}

static int resolve_program(const char *prog, char *out, size_t n) {
  if (strchr(prog, '/')) return realpath(prog, out) ? 0 : -1;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/bin:/bin";
  while (*path) {
    size_t l = strcspn(path, ":");
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, "%.*s/%s", (int)l, path, prog);
    if (access(cand, X_OK) == 0 && realpath(cand, out)) return 0;
    path += l + (path[l] == ':');
  }
  (void)n;
  return -1;
}

int tpc_cmd_profile(int argc, char **argv) {
  static const struct option opts[] = {{"cpu", required_argument, 0, 'c'},   {"page-size", required_argument, 0, 'p'},
                                       {"json", no_argument, 0, 'j'},        {"top", required_argument, 0, 't'},
                                       {"plan", required_argument, 0, 'P'},  {"keep", required_argument, 0, 'k'},
                                       {"lib", required_argument, 0, 'l'},   {"replay", no_argument, 0, 'r'},
                                       {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
  const char *cpu = "zen4", *plan = "tlbpack.plan", *keep = NULL, *lib_arg = NULL;
  int json = 0, replay = 0, ps = TS_PS_4K, c;
  unsigned top = 15;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
    switch (c) {
    case 'c': cpu = optarg; break;
    case 'p':
      ps = ts_page_size_parse(optarg);
      if (ps != TS_PS_4K && ps != TS_PS_2M) return tpc_usage_error("profile", "--page-size '%s': expected 4k or 2m", optarg);
      break;
    case 'j': json = 1; break;
    case 't': {
      char *e;
      long v = strtol(optarg, &e, 10);
      if (*e || v < 1 || v > 100000) return tpc_usage_error("profile", "--top '%s': expected a number 1-100000", optarg);
      top = (unsigned)v;
      break;
    }
    case 'P': plan = optarg; break;
    case 'k': keep = optarg; break;
    case 'l': lib_arg = optarg; break;
    case 'r': replay = 1; break;
    case 'h': profile_usage(stdout); return 0;
    case ':': return tpc_usage_error("profile", "option '%s' needs a value", argv[optind - 1]);
    default:
      return tpc_usage_error("profile", "unknown option '%s' (accepted: --cpu, --page-size, --json, --top, --plan, "
                             "--keep, --lib, --replay, --help)", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return tpc_usage_error("profile", replay ? "--replay needs LOG and TRACE" : "no PROGRAM given (usage: tlbpack profile [OPTIONS] -- PROGRAM [ARGS])");
  if (replay && argc - optind != 2) return tpc_usage_error("profile", "--replay needs LOG and TRACE, nothing else");

  ts_config_t cfg;
  if (ts_config_preset(&cfg, cpu) != 0) return tpc_usage_error("profile", "--cpu '%s': expected core2, skylake, goldencove, zen2, zen3, zen4 or custom", cpu);
  cfg.page_size = ps;
  char err[512];
  run_t r = {0};
  r.sim = ts_sim_new(&cfg, err, sizeof err);
  if (!r.sim) return tpc_fail("profile", "%s", err);
  r.st = ts_sim_stats(r.sim);

  char dir[PATH_MAX], log_path[PATH_MAX], maps_path[PATH_MAX + 8], program[PATH_MAX] = "";
  FILE *trace = NULL;
  pid_t pid = -1;
  if (replay) {
    snprintf(log_path, sizeof log_path, "%s", argv[optind]);
    trace = strcmp(argv[optind + 1], "-") ? fopen(argv[optind + 1], "r") : stdin;
    if (!trace) return tpc_fail("profile", "cannot open the trace %s: %s", argv[optind + 1], strerror(errno));
  } else {
    char lib[PATH_MAX];
    if (find_profile_lib(lib_arg, lib, sizeof lib) != 0)
      return tpc_fail("profile", "libtlbpack-profile.so not found%s%s (build it: make build)", lib_arg ? ": " : "",
                      lib_arg ? lib_arg : "");
    if (resolve_program(argv[optind], program, sizeof program) != 0)
      return tpc_fail("profile", "cannot find the program '%s'", argv[optind]);
    if (keep) {
      if (mkdir(keep, 0755) != 0 && errno != EEXIST) return tpc_fail("profile", "cannot create %s: %s", keep, strerror(errno));
      snprintf(dir, sizeof dir, "%s", keep);
    } else {
      const char *tmp = getenv("TMPDIR");
      snprintf(dir, sizeof dir, "%s/tlbpack-profile.XXXXXX", tmp && *tmp ? tmp : "/tmp");
      if (!mkdtemp(dir)) return tpc_fail("profile", "cannot create a temporary directory: %s", strerror(errno));
    }
    snprintf(log_path, sizeof log_path, "%s/alloc.log", dir);
    unlink(log_path);
    int fds[2];
    if (pipe(fds) != 0) return tpc_fail("profile", "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
      close(fds[0]);
      char logfd[32];
      snprintf(logfd, sizeof logfd, "--log-fd=%d", fds[1]);
      const char *old = getenv("TLBPACK_CONF");
      char *conf = malloc(strlen(log_path) + (old ? strlen(old) : 0) + 16);
      sprintf(conf, "%s%sprofile:%s", old && *old ? old : "", old && *old ? "," : "", log_path);
      setenv("TLBPACK_CONF", conf, 1);
      setenv("LD_PRELOAD", lib, 1); /* valgrind's launcher loads it too, and logs nothing */
      char **av = calloc((size_t)(argc - optind + 8), sizeof *av);
      int k = 0;
      av[k++] = "valgrind";
      av[k++] = "--tool=lackey";
      av[k++] = "--trace-mem=yes";
      av[k++] = logfd;
      for (int i = optind; i < argc; i++) av[k++] = argv[i];
      execvp("valgrind", av);
      fprintf(stderr, "tlbpack profile: cannot run valgrind: %s (install it: apt-get install valgrind)\n", strerror(errno));
      _exit(127);
    }
    close(fds[1]);
    if (pid < 0) return tpc_fail("profile", "fork: %s", strerror(errno));
    trace = fdopen(fds[0], "r");
    fprintf(stderr, "tlbpack profile: tracing %s under valgrind lackey (about 100-300x slower than alone)\n", program);
  }

  map_init(&site_of_ra, 1024);
  map_init(&obj_of_start, 1 << 16);
  map_init(&page_head, 1 << 16);
  map_init(&pages_seen, 1 << 16);
  map_init(&pairs, 1024);
  char line[4096];
  int log_ok = 1;
  while (fgets(line, sizeof line, trace)) {
    /* The log exists before the first marker store (an 8-byte store): look for it there. */
    if (r.log == NULL && r.marker == 0 && (replay || (line[0] == ' ' && line[1] == 'S' && strstr(line, ",8")))) {
      r.log = fopen(log_path, "rb");
      if (r.log) {
        uint64_t head[2];
        if (fread(head, sizeof head, 1, r.log) != 1 || memcmp(head, "TPPROF1", 8) != 0) {
          fclose(r.log);
          r.log = NULL; /* not written yet: try again at the next line */
        } else {
          r.marker = head[1];
        }
      }
    }
    if (trace_line(&r, line) != 0) log_ok = 0;
  }
  if (trace != stdin) fclose(trace);
  fprintf(stderr, "tlbpack profile: %llu accesses, %llu allocation events\n", (unsigned long long)r.lines,
          (unsigned long long)r.events);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (!r.log) fprintf(stderr, "tlbpack profile: warning: no allocation log (%s): nothing to attribute\n", log_path);
  if (!log_ok) fprintf(stderr, "tlbpack profile: warning: the trace has more markers than the log has records\n");
  if (pid > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    fprintf(stderr, "tlbpack profile: warning: %s exited with status %d under valgrind\n", program,
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));

  /* Objects still live at the end: their lifetime runs to the end of the trace. */
  for (size_t i = 0; i < nobjs; i++)
    if (objs[i].alive) sites[objs[i].site].life_sum += now - objs[i].birth;
  snprintf(maps_path, sizeof maps_path, "%s.maps", log_path);
  load_maps(maps_path);
  name_sites();
  order = xcalloc(nsites, sizeof *order);
  for (size_t i = 0; i < nsites; i++) order[i] = i;
  qsort(order, nsites, sizeof *order, by_misses);
  for (size_t k = 0; k < nsites && k < top; k++) symbolize(&sites[order[k]]);
  const ts_stats_t *st = ts_sim_stats(r.sim);
  uint64_t attributed_l1 = st->l1_misses - una_l1;
  classify(attributed_l1, total_data - unattributed);
  for (size_t k = 0; k < nsites; k++)
    if (kind[k] != K_REST) symbolize(&sites[k]);
  unsigned nhot = 0, ncold = 0;
  const char *plan_written = NULL;
  if (strcmp(plan, "-") != 0) {
    if (!program[0]) {
      /* replay: the program is the module of the first site found in the maps, if any */
      for (size_t i = 0; i < nmaps && !program[0]; i++)
        if (maps[i].off == 0 && strstr(maps[i].path, ".so") == NULL) snprintf(program, sizeof program, "%s", maps[i].path);
      if (!program[0]) snprintf(program, sizeof program, "/unknown");
    }
    if (write_plan(plan, program, &nhot, &ncold) != 0) fprintf(stderr, "tlbpack profile: cannot write the plan %s: %s\n", plan, strerror(errno));
    else plan_written = plan;
  }
  report(stdout, json, top, st, plan_written, nhot, ncold);
  if (r.log) fclose(r.log);
  ts_sim_free(r.sim);
  if (!replay && !keep) {
    unlink(log_path);
    unlink(maps_path);
    rmdir(dir);
  }
  return r.log ? 0 : TPC_EXIT_FAIL;
}
