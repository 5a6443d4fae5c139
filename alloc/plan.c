/* Placement plans: `TLBPACK_CONF=plan:FILE` maps allocation sites (module + offset, so that a
 * plan outlives address-space randomization) to groups: an ordered group per set of hot sites
 * used together (placed in allocation order, as tp_group_create_arena does), and a group of
 * cold sites kept apart from the hot pages. Sites the plan does not name behave as without
 * one. Loaded during the first malloc: no malloc here, static storage only. A plan that cannot
 * be read, parsed or matched to this program gets one warning and is ignored. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"
#ifndef TP_PLAN_PARSER_ONLY /* the fuzz target takes the parser alone */
#include "group.h"
#endif

static void fail(char *err, size_t errlen, unsigned line, const char *what) {
  if (line) snprintf(err, errlen, "line %u: %s", line, what);
  else snprintf(err, errlen, "%s", what);
}

/* The next whitespace-separated word of [*s, end); its length, 0 at the end of the line. */
static size_t word(const char **s, const char *end, const char **w) {
  const char *p = *s;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  *w = p;
  while (p < end && *p != ' ' && *p != '\t') p++;
  *s = p;
  return (size_t)(p - *w);
}

static int is(const char *w, size_t n, const char *lit) { return strlen(lit) == n && memcmp(w, lit, n) == 0; }

static int printable_path(const char *w, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)w[i] < 0x21 || (unsigned char)w[i] > 0x7e) return 0;
  return n > 0 && n < TP_PLAN_PATH;
}

int _tp_plan_parse(tp_plan_t *p, const char *text, size_t n, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  const char *s = text, *end = text + n;
  unsigned line = 0;
  int header = 0;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    const char *le = nl ? nl : end;
    line++;
    const char *cur = s, *w, *w2, *w3;
    s = nl ? nl + 1 : end;
    const char *hash = memchr(cur, '#', (size_t)(le - cur));
    if (hash) le = hash;
    if (le > cur && le[-1] == '\r') le--;
    size_t n1 = word(&cur, le, &w);
    if (n1 == 0) continue;
    size_t n2 = word(&cur, le, &w2);
    size_t n3 = word(&cur, le, &w3);
    const char *w4, *w5;
    size_t n4 = word(&cur, le, &w4);
    if (word(&cur, le, &w5) != 0 || (n4 && !is(w, n1, "site")))
      return fail(err, errlen, line, "too many words"), -1;
    if (!header) {
      if (!is(w, n1, "tlbpack-plan") || !is(w2, n2, "1") || n3)
        return fail(err, errlen, line, "expected the header 'tlbpack-plan 1'"), -1;
      header = 1;
    } else if (is(w, n1, "program")) {
      if (!printable_path(w2, n2) || w2[0] != '/' || n3 || p->program[0])
        return fail(err, errlen, line, "expected 'program /ABSOLUTE/PATH', once"), -1;
      memcpy(p->program, w2, n2);
    } else if (is(w, n1, "group")) {
      int kind = is(w3, n3, "ordered") ? TP_PLAN_ORDERED : is(w3, n3, "apart") ? TP_PLAN_APART : 0;
      if (n2 == 0 || n2 >= sizeof p->groups[0].name || !printable_path(w2, n2) || kind == 0)
        return fail(err, errlen, line, "expected 'group NAME ordered|apart' (NAME up to 31 characters)"), -1;
      if (p->ngroups == TP_PLAN_MAX_GROUPS) return fail(err, errlen, line, "more than 64 groups"), -1;
      memcpy(p->groups[p->ngroups].name, w2, n2);
      p->groups[p->ngroups++].kind = (uint8_t)kind;
    } else if (is(w, n1, "site")) {
      if (p->ngroups == 0) return fail(err, errlen, line, "a site before any 'group' line"), -1;
      if (p->nsites == TP_PLAN_MAX_SITES) return fail(err, errlen, line, "more than 512 sites"), -1;
      const char *plus = NULL;
      for (const char *c = w2; c < w2 + n2; c++)
        if (*c == '+') plus = c;
      size_t ml = plus ? (size_t)(plus - w2) : 0;
      const char *h = plus ? plus + 1 : NULL;
      size_t hl = plus ? (size_t)(w2 + n2 - h) : 0;
      if (ml == 0 || w2[0] != '/' || !printable_path(w2, ml) || hl < 3 || hl > 18 || h[0] != '0' ||
          (h[1] != 'x' && h[1] != 'X'))
        return fail(err, errlen, line, "expected 'site /MODULE/PATH+0xOFFSET [size N]'"), -1;
      uint32_t size = 0;
      if (n3) {
        uint64_t v = 0;
        int okn = is(w3, n3, "size") && n4 > 0 && n4 <= 7;
        for (size_t i = 0; okn && i < n4; i++) {
          if (w4[i] < '0' || w4[i] > '9') okn = 0;
          v = v * 10 + (uint64_t)(w4[i] - '0');
        }
        if (!okn || v == 0 || v > TP_PLAN_MAX_SIZE)
          return fail(err, errlen, line, "expected 'site /MODULE/PATH+0xOFFSET size N' (N bytes, 1-262144)"), -1;
        size = (uint32_t)v;
      }
      uint64_t off = 0;
      for (size_t i = 2; i < hl; i++) {
        char c = h[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(err, errlen, line, "expected 'site /MODULE/PATH+0xOFFSET [size N]' (hex offset)"), -1;
        off = off << 4 | (uint64_t)d;
      }
      unsigned m = 0;
      while (m < p->nmodules && !(strlen(p->modules[m]) == ml && memcmp(p->modules[m], w2, ml) == 0)) m++;
      if (m == p->nmodules) {
        if (m == TP_PLAN_MAX_MODULES) return fail(err, errlen, line, "sites in more than 16 modules"), -1;
        memcpy(p->modules[m], w2, ml);
        p->nmodules++;
      }
      for (unsigned i = 0; i < p->nsites; i++)
        if (p->sites[i].module == m && p->sites[i].offset == off && p->sites[i].size == size)
          return fail(err, errlen, line, "this site is already in the plan"), -1;
      p->sites[p->nsites++] =
          (tp_plan_site_t){.offset = off, .module = (uint16_t)m, .group = (uint16_t)(p->ngroups - 1), .size = size};
    } else {
      return fail(err, errlen, line, "expected 'program', 'group' or 'site'"), -1;
    }
  }
  if (!header) return fail(err, errlen, 0, "empty: expected the header 'tlbpack-plan 1'"), -1;
  if (!p->program[0]) return fail(err, errlen, 0, "no 'program' line"), -1;
  return 0;
}

int _tp_plan_resolve(tp_plan_t *p, const char *maps, size_t n, const char *exe, char *err, size_t errlen) {
  if (exe == NULL || strcmp(exe, p->program) != 0) {
    snprintf(err, errlen, "it is for %s, not this program (%s)", p->program, exe ? exe : "unknown");
    return -1;
  }
  for (unsigned m = 0; m < p->nmodules; m++) p->base[m] = 0;
  const char *s = maps, *end = maps + n;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    const char *le = nl ? nl : end;
    /* start-end perms offset dev inode path */
    uint64_t start = 0, off = 0;
    const char *c = s;
    int ok = 1;
    for (; c < le && *c != '-'; c++) {
      int d = *c >= '0' && *c <= '9' ? *c - '0' : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10 : -1;
      if (d < 0) ok = 0;
      start = start << 4 | (uint64_t)(d & 15);
    }
    const char *fld = c, *w;
    word(&fld, le, &w);           /* -end */
    word(&fld, le, &w);           /* perms */
    size_t ol = word(&fld, le, &w);
    for (size_t i = 0; i < ol; i++) {
      int d = w[i] >= '0' && w[i] <= '9' ? w[i] - '0' : w[i] >= 'a' && w[i] <= 'f' ? w[i] - 'a' + 10 : -1;
      if (d < 0) ok = 0;
      off = off << 4 | (uint64_t)(d & 15);
    }
    word(&fld, le, &w);           /* dev */
    word(&fld, le, &w);           /* inode */
    while (fld < le && *fld == ' ') fld++;
    size_t pl = (size_t)(le - fld);
    if (ok && off == 0 && pl > 0)
      for (unsigned m = 0; m < p->nmodules; m++)
        if (strlen(p->modules[m]) == pl && memcmp(p->modules[m], fld, pl) == 0 &&
            (p->base[m] == 0 || start < p->base[m]))
          p->base[m] = (uintptr_t)start;
    s = nl ? nl + 1 : end;
  }
  unsigned found = 0;
  for (unsigned i = 0; i < p->nsites; i++) {
    uintptr_t b = p->base[p->sites[i].module];
    p->sites[i].addr = b ? b + (uintptr_t)p->sites[i].offset : 0;
    found += b != 0;
  }
  if (p->nsites && !found) {
    snprintf(err, errlen, "none of its modules is loaded in this program");
    return -1;
  }
  return 0;
}

#ifndef TP_PLAN_PARSER_ONLY
/* ---- the allocator's plan ------------------------------------------------------------- */
static tp_plan_t plan;
static int plan_ready;
static _Atomic uint16_t plan_gid[TP_PLAN_MAX_GROUPS];
static tp_lock_t plan_lock = TP_LOCK_INIT;
static char file_buf[64 << 10];
static char maps_buf[512 << 10];

static ssize_t read_all(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0) {
      close(fd);
      return -1;
    }
    if (r == 0) break;
    n += (size_t)r;
    if (n == cap) {
      close(fd);
      return -2;
    }
  }
  close(fd);
  return (ssize_t)n;
}

void _tp_plan_load(const char *path) {
  char err[320], exe[TP_PLAN_PATH];
  ssize_t n = read_all(path, file_buf, sizeof file_buf);
  if (n < 0) {
    _tp_message("plan %s: %s; plan ignored", path, n == -2 ? "larger than 64 KiB" : "cannot read the file");
    return;
  }
  if (_tp_plan_parse(&plan, file_buf, (size_t)n, err, sizeof err) != 0) {
    _tp_message("plan %s: %s; plan ignored", path, err);
    return;
  }
  ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[el > 0 ? el : 0] = 0;
  ssize_t m = read_all("/proc/self/maps", maps_buf, sizeof maps_buf);
  if (m == -1) m = 0;
  if (m == -2) m = (ssize_t)sizeof maps_buf;
  if (_tp_plan_resolve(&plan, maps_buf, (size_t)m, el > 0 ? exe : NULL, err, sizeof err) != 0) {
    _tp_message("plan %s: %s; plan ignored", path, err);
    return;
  }
  plan_ready = 1;
  if (_tp_opt.verbose) _tp_message("plan %s: %u sites in %u groups", path, plan.nsites, plan.ngroups);
}

int _tp_plan_splits(uintptr_t ra) {
  if (!plan_ready) return 0;
  for (unsigned i = 0; i < plan.nsites; i++)
    if (plan.sites[i].addr == ra && plan.sites[i].size) return 1;
  return 0;
}

unsigned _tp_plan_group(uintptr_t key) {
  if (!plan_ready) return TP_SHARED_GROUP;
  uintptr_t ra = _tp_key_site(key);
  int c = _tp_key_class(key);
  for (unsigned i = 0; i < plan.nsites; i++) {
    const tp_plan_site_t *ps = &plan.sites[i];
    if (ps->addr != ra || (ps->size ? c < 0 || (unsigned)c != _tp_class_of(ps->size) : c >= 0)) continue;
    unsigned k = plan.sites[i].group;
    unsigned id = atomic_load(&plan_gid[k]);
    if (id) return id;
    _tp_lock(&plan_lock);
    id = atomic_load(&plan_gid[k]);
    if (id == 0) {
      char name[48];
      snprintf(name, sizeof name, "plan:%s", plan.groups[k].name);
      tp_group_t *g = _tp_group_create(name, plan.groups[k].kind == TP_PLAN_ORDERED);
      if (g) atomic_store(&plan_gid[k], g->id);
      id = g ? g->id : TP_SHARED_GROUP;
    }
    _tp_unlock(&plan_lock);
    return id;
  }
  return TP_SHARED_GROUP;
}
#endif
