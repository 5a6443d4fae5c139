/* tlbpack profile: naming sites as module + offset from the load address (the same in the next
 * run of the same binary), with function and file:line from addr2line where there is debug
 * information. */
#include "profile.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sitekey.h"

/* ---- naming sites ---------------------------------------------------------------------- */
mapping_t *tpp_maps;
size_t tpp_nmaps;

void tpp_load_maps(const char *path) {
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
    tpp_maps = tpp_xrealloc(tpp_maps, (tpp_nmaps + 1) * sizeof *tpp_maps);
    tpp_maps[tpp_nmaps++] = m;
  }
  fclose(f);
}

static uint64_t module_base(const char *path) {
  uint64_t b = 0;
  for (size_t i = 0; i < tpp_nmaps; i++)
    if (tpp_maps[i].off == 0 && !strcmp(tpp_maps[i].path, path) && (b == 0 || tpp_maps[i].start < b)) b = tpp_maps[i].start;
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
  for (size_t i = 0; i < tpp_nmaps; i++)
    if (ra >= tpp_maps[i].start && ra < tpp_maps[i].end) {
      uint64_t b = module_base(tpp_maps[i].path);
      if (b == 0) return NULL;
      *off = ra - b;
      return tpp_maps[i].path;
    }
  return NULL;
}

/* MODULE+0xOFFSET, and " size N" (the class's size) for a site + class key: the plan's words. */
void tpp_name_sites(void) {
  for (size_t i = 0; i < tpp_nsites; i++) {
    uint64_t off;
    const char *m = site_module(&tpp_sites[i], &off);
    int c = _tp_key_class(tpp_sites[i].ra);
    char cls[32] = "";
    if (c >= 0) snprintf(cls, sizeof cls, " size %zu", _tp_class_size((unsigned)c));
    if (m) snprintf(tpp_sites[i].name, sizeof tpp_sites[i].name, "%s+0x%llx%s", m, (unsigned long long)off, cls);
    else snprintf(tpp_sites[i].name, sizeof tpp_sites[i].name, "0x%llx%s", (unsigned long long)_tp_key_site(tpp_sites[i].ra), cls);
  }
}

void tpp_symbolize(site_t *s) {
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
