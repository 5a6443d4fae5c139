/* Readers for page-size ranges: tlbpack's regions file and a copy of /proc/PID/smaps.
 * Errors name FILE:LINE and what was expected. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* Hex number with optional 0x; returns the end or NULL. */
static const char *parse_hex(const char *p, uint64_t *out) {
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  if (!isxdigit((unsigned char)*p)) return NULL;
  uint64_t v = 0;
  int n = 0;
  while (isxdigit((unsigned char)*p)) {
    if (++n > 16) return NULL;
    int c = (unsigned char)*p++;
    v = v << 4 | (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
  }
  *out = v;
  return p;
}

static void chomp(char *line) {
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
}

int ts_sim_load_regions(ts_sim_t *s, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) { _ts_err(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
  char *line = NULL, sub[200];
  size_t cap = 0;
  long no = 0;
  int rc = 0;
  while (getline(&line, &cap, f) >= 0) {
    no++;
    chomp(line);
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    const char *p = skip_ws(line);
    if (!*p) continue;
    uint64_t a, b;
    const char *q = parse_hex(p, &a);
    if (q && *q == '-') q = parse_hex(q + 1, &b);
    else q = NULL;
    if (!q || (*q != ' ' && *q != '\t')) {
      _ts_err(err, errlen, "%s:%ld: expected START-END in hex (e.g. 0x7f2a00000000-0x7f2a00600000), got '%.60s'",
              path, no, p);
      rc = -1;
      break;
    }
    q = skip_ws(q);
    char size[8] = "";
    size_t n = strcspn(q, " \t");
    if (n && n < sizeof size) memcpy(size, q, n), size[n] = 0;
    int ps = ts_page_size_parse(size);
    if (ps < 0) {
      _ts_err(err, errlen, "%s:%ld: expected a page size 4k, 2m or 1g after the range, got '%.20s'",
              path, no, q);
      rc = -1;
      break;
    }
    q = skip_ws(q + n);
    if (*q) {   /* optional source word */
      q += strcspn(q, " \t");
      q = skip_ws(q);
      if (*q) {
        _ts_err(err, errlen, "%s:%ld: expected at most one source word after the page size, got '%.40s'",
                path, no, q);
        rc = -1;
        break;
      }
    }
    if (ts_sim_add_range(s, a, b, ps, 0, sub, sizeof sub)) {
      _ts_err(err, errlen, "%s:%ld: %s", path, no, sub);
      rc = -1;
      break;
    }
  }
  if (rc == 0 && !feof(f)) {   /* getline stopped on a read error or out of memory */
    _ts_err(err, errlen, "%s:%ld: cannot read: %s", path, no + 1, strerror(errno));
    rc = -1;
  }
  free(line);
  fclose(f);
  return rc;
}

/* smaps: an area header "START-END PERMS OFFSET DEV INODE [PATH]" then "Field:  value [kB]"
 * lines. KernelPageSize 2048 / 1048576 kB -> 2m / 1g (hugetlbfs). An area with 4 kB kernel
 * pages but AnonHugePages > 0 is THP-backed: its 2 MiB-aligned part counts as 2m (smaps does
 * not say which huge pages are populated; we assume all aligned ones), the ends as 4k. */
typedef struct area_s { uint64_t start, end, kps_kb, ahp_kb; long line; bool open; } area_t;

static int flush_area(ts_sim_t *s, const char *path, area_t *ar, char *err, size_t errlen) {
  char sub[200];
  if (!ar->open) return 0;
  ar->open = false;
  uint64_t vmask = (1ull << (12 + 9 * ts_sim_config(s)->levels)) - 1;
  if (ar->end - 1 > vmask) return 0;   /* [vsyscall] and other kernel areas */
  struct { uint64_t a, b; int ps; } part[3];
  int np = 0;
  if (ar->kps_kb == 2048 || ar->kps_kb == 1048576) {
    part[np++] = (typeof(part[0])){ar->start, ar->end, ar->kps_kb == 2048 ? TS_PS_2M : TS_PS_1G};
  } else if (ar->kps_kb == 4 || ar->kps_kb == 0) {
    uint64_t h = 1ull << 21, a = (ar->start + h - 1) & ~(h - 1), b = ar->end & ~(h - 1);
    if (ar->ahp_kb > 0 && a < b) {
      if (ar->start < a) part[np++] = (typeof(part[0])){ar->start, a, TS_PS_4K};
      part[np++] = (typeof(part[0])){a, b, TS_PS_2M};
      if (b < ar->end) part[np++] = (typeof(part[0])){b, ar->end, TS_PS_4K};
    } else {
      part[np++] = (typeof(part[0])){ar->start, ar->end, TS_PS_4K};
    }
  } else {
    _ts_err(err, errlen, "%s:%ld: KernelPageSize %llu kB: expected 4, 2048 or 1048576", path,
            ar->line, (unsigned long long)ar->kps_kb);
    return -1;
  }
  for (int i = 0; i < np; i++) {
    if (ts_sim_add_range(s, part[i].a, part[i].b, part[i].ps, 1, sub, sizeof sub)) {
      _ts_err(err, errlen, "%s:%ld: %s", path, ar->line, sub);
      return -1;
    }
  }
  return 0;
}

static int parse_kb(const char *p, uint64_t *out) {
  p = skip_ws(p);
  if (!isdigit((unsigned char)*p)) return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 10);
  if (errno) return -1;
  end = (char *)skip_ws(end);
  if (strcmp(end, "kB") && *end) return -1;
  *out = v;
  return 0;
}

int ts_sim_load_smaps(ts_sim_t *s, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) { _ts_err(err, errlen, "%s: cannot open: %s", path, strerror(errno)); return -1; }
  char *line = NULL;
  size_t cap = 0;
  long no = 0;
  int rc = 0;
  area_t ar = {0};
  while (rc == 0 && getline(&line, &cap, f) >= 0) {
    no++;
    chomp(line);
    if (!*skip_ws(line)) continue;
    uint64_t a, b;
    const char *q = parse_hex(line, &a);
    if (q && *q == '-' && (q = parse_hex(q + 1, &b)) && (*q == ' ' || *q == 0)) {
      if ((rc = flush_area(s, path, &ar, err, errlen))) break;
      if (b <= a) {
        _ts_err(err, errlen, "%s:%ld: area %.40s ends before it starts", path, no, line);
        rc = -1;
        break;
      }
      ar = (area_t){a, b, 0, 0, no, true};
      continue;
    }
    const char *colon = strchr(line, ':');
    const char *p = line;
    while (p < colon && (isalnum((unsigned char)*p) || *p == '_')) p++;
    if (!colon || p != colon || colon == line) {
      _ts_err(err, errlen, "%s:%ld: expected an area header (START-END PERMS ...) or 'Field: value', got '%.60s'",
              path, no, line);
      rc = -1;
      break;
    }
    bool kps = !strncmp(line, "KernelPageSize:", 15), ahp = !strncmp(line, "AnonHugePages:", 14);
    if (!kps && !ahp) continue;
    if (!ar.open) {
      _ts_err(err, errlen, "%s:%ld: '%.20s' before any area header", path, no, line);
      rc = -1;
      break;
    }
    uint64_t v;
    if (parse_kb(colon + 1, &v)) {
      _ts_err(err, errlen, "%s:%ld: expected a size in kB after '%.*s', got '%.40s'", path, no,
              (int)(colon - line + 1), line, colon + 1);
      rc = -1;
      break;
    }
    if (kps) ar.kps_kb = v;
    else ar.ahp_kb = v;
  }
  if (rc == 0 && !feof(f)) {
    _ts_err(err, errlen, "%s:%ld: cannot read: %s", path, no + 1, strerror(errno));
    rc = -1;
  }
  if (rc == 0) rc = flush_area(s, path, &ar, err, errlen);
  free(line);
  fclose(f);
  return rc;
}
