/* Trace readers: text, Valgrind lackey (--trace-mem=yes, as it is), and the binary format.
 * All stream through one fixed buffer: memory does not grow with the trace. */
#include "internal.h"
#include "access.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TS_BUF (1u << 20)   /* also the longest line accepted */

typedef struct reader_s {
  int fd;
  char *buf;
  size_t len, pos;
  bool eof;
} reader_t;

/* Tops the buffer up after moving the unread tail to the front. -1 on a read error. */
static int refill(reader_t *r, char *err, size_t errlen) {
  if (r->pos) {
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->len -= r->pos;
    r->pos = 0;
  }
  while (!r->eof && r->len < TS_BUF) {
    ssize_t n = read(r->fd, r->buf + r->len, TS_BUF - r->len);
    if (n < 0) {
      if (errno == EINTR) continue;
      _ts_err(err, errlen, "read error: %s", strerror(errno));
      return -1;
    }
    if (n == 0) r->eof = true;
    r->len += (size_t)n;
    if (r->len - r->pos >= TS_BUF / 2) break;   /* enough to go on; don't block on a pipe */
  }
  return 0;
}

const char *ts_format_name(ts_format_t f) {
  static const char *const n[] = {"auto", "text", "lackey", "bin"};
  return (unsigned)f < 4 ? n[f] : "?";
}

int ts_format_parse(const char *s) {
  for (int f = 0; f < 4; f++)
    if (!strcmp(s, ts_format_name((ts_format_t)f))) return f;
  return -1;
}

/* ---- parsing helpers ------------------------------------------------------------------- */

static const signed char hexval[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16};

/* At most 16 hex digits. Returns the end, or NULL. */
static inline const char *hex(const char *p, const char *end, uint64_t *out) {
  uint64_t v = 0;
  const char *s = p;
  while (p < end && hexval[(unsigned char)*p]) {
    v = v << 4 | (uint64_t)(hexval[(unsigned char)*p] - 1);
    p++;
  }
  if (p == s || p - s > 16) return NULL;
  *out = v;
  return p;
}

static inline const char *dec(const char *p, const char *end, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  const char *s = p;
  while (p < end && *p >= '0' && *p <= '9') {
    uint64_t d = (uint64_t)(*p - '0');
    if (v > (max - d) / 10) return NULL;
    v = v * 10 + d;
    p++;
  }
  if (p == s) return NULL;
  *out = v;
  return p;
}

static inline const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  return p;
}

static void bad_line(char *err, size_t errlen, uint64_t no, const char *what, const char *p,
                     const char *end) {
  int n = (int)(end - p > 60 ? 60 : end - p);
  char shown[64];
  int k = 0;
  for (int i = 0; i < n; i++) shown[k++] = (p[i] >= 32 && p[i] < 127) ? p[i] : '?';
  shown[k] = 0;
  _ts_err(err, errlen, "line %llu: expected %s, got '%s'", (unsigned long long)no, what, shown);
}

/* A context switch refused: too many address spaces, or the simulator ran out of memory. */
static int switch_failed(ts_sim_t *s, const char *unit, uint64_t no, char *err, size_t errlen) {
  if (s->state == TS_FAILED) _ts_err(err, errlen, "%s %llu: %s", unit, (unsigned long long)no, s->error);
  else _ts_err(err, errlen, "%s %llu: more than %u address spaces", unit, (unsigned long long)no,
               TS_MAX_SPACES);
  return -1;
}

static const char text_expect[] = "R|W|I|P <hex address> [size], C <asid> or B";

/* A B record: the measured region begins (when the warm-up waits for one; else ignored). */
static inline void marker(ts_sim_t *s) {
  if (s->warm_mode == TS_WARM_MARKER) ts_sim_measure_start(s);
}
static const char lackey_expect[] =
    "a lackey --trace-mem=yes record like ' L 04222cac,4' or 'I  0400d7d4,8'";

/* One text line (without its newline). Returns 0, or -1 with the message in err. */
static int text_line(ts_sim_t *s, const char *p, const char *end, uint64_t no, char *err,
                     size_t errlen) {
  const char *line = p;
  p = ws(p, end);
  if (p == end || *p == '#') return 0;
  char op = *p++;
  if (op == 'B') {
    if (ws(p, end) != end) goto bad;
    marker(s);
    return 0;
  }
  if (op != 'R' && op != 'W' && op != 'I' && op != 'P' && op != 'C') goto bad;
  const char *q = ws(p, end);
  if (q == p) goto bad;
  p = q;
  if (op == 'C') {
    uint64_t asid;
    if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p = hex(p + 2, end, &asid);
    else p = dec(p, end, UINT64_MAX, &asid);
    if (!p || ws(p, end) != end) goto bad;
    if (ts_context_switch(s, asid)) return switch_failed(s, "line", no, err, errlen);
    return 0;
  }
  if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  uint64_t addr, size = 1;
  if (!(p = hex(p, end, &addr))) goto bad;
  q = ws(p, end);
  if (q != end) {
    if (q == p || !(p = dec(q, end, UINT32_MAX, &size)) || ws(p, end) != end) goto bad;
  }
  _ts_access_inline(s, addr, (uint32_t)size, op);
  _ts_warm_step(s);
  return 0;
bad:
  bad_line(err, errlen, no, text_expect, line, end);
  return -1;
}

static int lackey_line(ts_sim_t *s, const char *p, const char *end, uint64_t no, char *err,
                       size_t errlen) {
  const char *line = p;
  if (p == end) return 0;
  if (end - p >= 2 && p[0] == '=' && p[1] == '=') return 0;   /* ==pid== messages */
  char op;
  if (p[0] == 'I') op = 'I';
  else if (p[0] == ' ' && end - p > 1 && (p[1] == 'L' || p[1] == 'S' || p[1] == 'M'))
    op = p[1] == 'L' ? 'R' : 'W';   /* M (modify) = one read-modify-write of the same bytes */
  else goto bad;
  p += op == 'I' ? 1 : 2;
  const char *q = ws(p, end);
  if (q == p) goto bad;
  uint64_t addr, size;
  if (!(p = hex(q, end, &addr)) || p == end || *p != ',') goto bad;
  if (!(p = dec(p + 1, end, UINT32_MAX, &size)) || ws(p, end) != end) goto bad;
  _ts_access_inline(s, addr, (uint32_t)size, op);
  _ts_warm_step(s);
  return 0;
bad:
  bad_line(err, errlen, no, lackey_expect, line, end);
  return -1;
}

static int run_lines(ts_sim_t *s, reader_t *r, bool lackey, char *err, size_t errlen) {
  uint64_t no = 0;
  for (;;) {
    char *p = r->buf + r->pos, *e = r->buf + r->len;
    char *nl = memchr(p, '\n', (size_t)(e - p));
    if (!nl) {
      if (r->eof) {
        if (p == e) return 0;
        nl = e;   /* a last line without a newline */
      } else {
        if (r->pos == 0 && r->len == TS_BUF) {
          _ts_err(err, errlen, "line %llu: longer than %u bytes", (unsigned long long)no + 1, TS_BUF);
          return -1;
        }
        if (refill(r, err, errlen)) return -1;
        continue;
      }
    }
    no++;
    char *le = nl;
    if (le > p && le[-1] == '\r') le--;
    int rc = lackey ? lackey_line(s, p, le, no, err, errlen) : text_line(s, p, le, no, err, errlen);
    if (rc) return -1;
    if (TS_UNLIKELY(s->state == TS_FAILED)) {
      _ts_err(err, errlen, "line %llu: %s", (unsigned long long)no, s->error);
      return -1;
    }
    r->pos = (size_t)(nl - r->buf) + (nl < e);
    if (nl == e) return 0;
  }
}

/* Records [p + 16 i, p + 16 n), numbered from first_no + 1. warm: a counted warm-up is running;
 * the loop then stops after the record that ends it. Returns the records done, or -1. */
static inline __attribute__((always_inline)) ssize_t bin_loop(ts_sim_t *s, const unsigned char *p, size_t i,
                                                              size_t n, uint64_t first_no, bool warm,
                                                              char *err, size_t errlen) {
  for (p += 16 * i; i < n; i++, p += 16) {
    uint64_t addr;
    uint32_t size;
    memcpy(&addr, p, 8);
    memcpy(&size, p + 8, 4);
    unsigned char op = p[12];
    if (TS_LIKELY(op == 'R' || op == 'W' || op == 'I' || op == 'P')) {
      _ts_access_inline(s, addr, size, (char)op);
      if (warm && s->st.reads + s->st.writes + s->st.ifetches >= s->warm_until) {
        ts_sim_measure_start(s);
        return (ssize_t)i + 1;
      }
    } else if (op == 'C') {
      if (ts_context_switch(s, addr)) return switch_failed(s, "record", first_no + i + 1, err, errlen);
    } else if (op == 'B') {
      marker(s);
    } else {
      _ts_err(err, errlen, "record %llu: op 0x%02x: expected R, W, I, P, C or B",
              (unsigned long long)(first_no + i + 1), op);
      return -1;
    }
  }
  return (ssize_t)n;
}

/* Out of the tight loop below: a record that is not a plain one-page access (the general path). */
static TS_NOINLINE ssize_t bin_one(ts_sim_t *s, const unsigned char *p, size_t i, uint64_t first_no,
                                   char *err, size_t errlen) {
  return bin_loop(s, p, i, i + 1, first_no, false, err, errlen);
}

/* The common case as one tight loop: one page size for every address, stores through the L1
 * DTLB, no counted warm-up running. What does not change from record to record is held in
 * locals (the miss path changes the arrays' contents, never which arrays there are; a context
 * switch changes the ASID slot, reloaded after one). L1 hits are summed locally and added
 * before anything that could read or reset the counters (a B record starts the measured
 * region). */
static ssize_t bin_fast(ts_sim_t *s, const unsigned char *p, size_t i, size_t n, uint64_t first_no,
                        char *err, size_t errlen) {
  const uint64_t mask = s->va_mask;
  const int ps = s->cfg.page_size, tps = s->tps_of[ps];
  const unsigned shift = _ts_shift(tps);
  const uint64_t pmask = (1ull << _ts_shift(ps)) - 1, tag = (uint64_t)tps << 12;
  ts_array_t *const l1d = s->l1_of[0][tps], *const l1i = s->l1_of[1][tps];
  uint64_t slot = s->as.cur_slot, hits = 0;
  ts_stats_t *st = &s->st;
  const unsigned char *q = p + 16 * i;
  for (; i < n; i++, q += 16) {
    uint64_t addr;
    uint32_t size;
    memcpy(&addr, q, 8);
    memcpy(&size, q + 8, 4);
    unsigned cls = _ts_op_class1[q[12]] - 1u;
    uint64_t va = addr & mask;
    /* size 0 counts as 1: it never crosses a page either */
    if (TS_UNLIKELY(cls >= 3 || (va & pmask) + size > pmask + 1)) {
      st->l1_hits += hits;
      hits = 0;
      if (bin_one(s, p, i, first_no, err, errlen) < 0) return -1;
      slot = s->as.cur_slot;
      if (TS_UNLIKELY(s->state == TS_FAILED)) return (ssize_t)n;
      continue;
    }
    (&st->reads)[cls]++;
    uint64_t page = va >> shift, key = page << 14 | tag | slot;
    ts_array_t *a = cls == 2 ? l1i : l1d;
    if (TS_LIKELY(a != NULL) && _ts_array_lookup(a, page, key)) {
      hits++;
      continue;
    }
    _ts_l1_miss(s, va, a, cls == 2, ps, tps, page, key);
    if (TS_UNLIKELY(s->state == TS_FAILED)) break;
  }
  st->l1_hits += hits;
  return (ssize_t)n;
}

static int bin_records(ts_sim_t *s, const unsigned char *p, size_t n, uint64_t first_no, char *err,
                       size_t errlen) {
  ssize_t i = 0;
  if (TS_UNLIKELY(s->state == TS_NEW)) _ts_start(s);
  if (TS_UNLIKELY(s->warm_mode == TS_WARM_COUNT) && (i = bin_loop(s, p, 0, n, first_no, true, err, errlen)) < 0)
    return -1;
  if (s->state == TS_RUNNING && s->uniform && s->store_kind == 0 && s->warm_mode != TS_WARM_COUNT) {
    if (bin_fast(s, p, (size_t)i, n, first_no, err, errlen) < 0) return -1;
  } else if (bin_loop(s, p, (size_t)i, n, first_no, false, err, errlen) < 0) {
    return -1;
  }
  if (TS_UNLIKELY(s->state == TS_FAILED)) {   /* records after the failure were not counted */
    _ts_err(err, errlen, "%s", s->error);
    return -1;
  }
  return 0;
}

static int bin_header(const char *h, size_t len, char *err, size_t errlen) {
  uint32_t version, rec;
  if (len < 16) {
    _ts_err(err, errlen, "binary header: expected 16 bytes, got %zu", len);
    return -1;
  }
  memcpy(&version, h + 8, 4);
  memcpy(&rec, h + 12, 4);
  if (memcmp(h, TS_BIN_MAGIC, 8) || version != 1 || rec != 16) {
    _ts_err(err, errlen, "binary header: expected magic TLBPTRC, version 1, record_bytes 16 "
            "(got version %u, record_bytes %u)", version, rec);
    return -1;
  }
  return 0;
}

static int truncated(uint64_t no, size_t left, char *err, size_t errlen) {
  _ts_err(err, errlen, "record %llu: truncated (expected 16 bytes, got %zu)",
          (unsigned long long)no + 1, left);
  return -1;
}

static int run_bin(ts_sim_t *s, reader_t *r, char *err, size_t errlen) {
  if (bin_header(r->buf, r->len, err, errlen)) return -1;
  r->pos = 16;
  uint64_t no = 0;
  for (;;) {
    size_t n = (r->len - r->pos) / 16;
    if (bin_records(s, (const unsigned char *)r->buf + r->pos, n, no, err, errlen)) return -1;
    no += n;
    r->pos += n * 16;
    if (r->eof) return r->len != r->pos ? truncated(no, r->len - r->pos, err, errlen) : 0;
    if (refill(r, err, errlen)) return -1;
  }
}

/* A regular file in the binary format is mapped a window at a time (no copy through a buffer;
 * memory stays bounded by the window). Returns 1 when the file is not suitable. */
#define TS_WINDOW ((size_t)64 << 20)
static int run_bin_mapped(ts_sim_t *s, int fd, char *err, size_t errlen) {
  struct stat sb;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size < 16) return 1;
  off_t start = lseek(fd, 0, SEEK_CUR);
  if (start != 0) return 1;
  uint64_t size = (uint64_t)sb.st_size, off = 16, no = 0;
  char h[16];
  if (pread(fd, h, 16, 0) != 16) return 1;
  if (bin_header(h, 16, err, errlen)) return -1;
  while (size - off >= 16) {
    uint64_t base = off & ~(uint64_t)(TS_WINDOW - 1);   /* windows are 16-byte aligned */
    size_t maplen = (size_t)(size - base < TS_WINDOW ? size - base : TS_WINDOW);
    void *m = mmap(NULL, maplen, PROT_READ, MAP_PRIVATE, fd, (off_t)base);
    if (m == MAP_FAILED) {
      _ts_err(err, errlen, "cannot map the trace: %s", strerror(errno));
      return -1;
    }
    madvise(m, maplen, MADV_SEQUENTIAL);
    size_t n = (size_t)(base + maplen - off) / 16;
    int rc = bin_records(s, (const unsigned char *)m + (off - base), n, no, err, errlen);
    munmap(m, maplen);
    if (rc) return -1;
    no += n;
    off += n * 16;
  }
  return size != off ? truncated(no, (size_t)(size - off), err, errlen) : 0;
}

static ts_format_t detect(const reader_t *r) {
  if (r->len >= 8 && !memcmp(r->buf, TS_BIN_MAGIC, 8)) return TS_FMT_BIN;
  const char *p = r->buf, *e = r->buf + r->len;
  while (p < e) {   /* the first line that is not blank or a comment decides */
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    if (!nl) nl = e;
    const char *q = ws(p, nl);
    if (q < nl && *q != '#' && *q != '\r') {
      if (nl - p >= 2 && p[0] == '=' && p[1] == '=') return TS_FMT_LACKEY;
      return memchr(p, ',', (size_t)(nl - p)) ? TS_FMT_LACKEY : TS_FMT_TEXT;
    }
    p = nl + 1;
  }
  return TS_FMT_TEXT;
}

int ts_run_fd(ts_sim_t *s, int fd, ts_format_t fmt, ts_format_t *detected, char *err,
              size_t errlen) {
  char head[16];
  if ((fmt == TS_FMT_BIN || fmt == TS_FMT_AUTO) && lseek(fd, 0, SEEK_CUR) == 0 &&
      pread(fd, head, 16, 0) == 16 && (fmt == TS_FMT_BIN || !memcmp(head, TS_BIN_MAGIC, 8))) {
    int rc = run_bin_mapped(s, fd, err, errlen);
    if (rc != 1) {
      if (detected) *detected = TS_FMT_BIN;
      return rc;
    }
  }
  reader_t r = {fd, _ts_malloc(TS_BUF), 0, 0, false};
  if (!r.buf) { _ts_err(err, errlen, "out of memory"); return -1; }
  int rc = refill(&r, err, errlen);
  /* Auto-detection wants a whole first line; a pipe may deliver less at first. */
  while (rc == 0 && !r.eof && r.len < 4096 && !memchr(r.buf, '\n', r.len)) rc = refill(&r, err, errlen);
  if (rc == 0) {
    if (fmt == TS_FMT_AUTO) fmt = detect(&r);
    if (detected) *detected = fmt;
    if (fmt == TS_FMT_BIN) rc = run_bin(s, &r, err, errlen);
    else rc = run_lines(s, &r, fmt == TS_FMT_LACKEY, err, errlen);
  }
  free(r.buf);
  return rc;
}

/* ---- binary writer ------------------------------------------------------------------- */

int ts_bin_write_header(FILE *f) {
  unsigned char h[16] = "TLBPTRC";
  uint32_t v = 1, rb = 16;
  memcpy(h + 8, &v, 4);
  memcpy(h + 12, &rb, 4);
  return fwrite(h, 1, 16, f) == 16 ? 0 : -1;
}

int ts_bin_write(FILE *f, uint64_t addr, uint32_t size, char op) {
  ts_bin_record_t rec = {addr, size, (uint8_t)op, {0, 0, 0}};
  return fwrite(&rec, 1, sizeof rec, f) == sizeof rec ? 0 : -1;
}
