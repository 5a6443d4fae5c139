/* TLBPACK_CONF="key:value,key:value" (MALLOC_CONF style). One table, one warning per bad
 * entry naming the key and what would be accepted; the default is kept. No malloc here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

tp_options_t _tp_opt;

void _tp_options_defaults(tp_options_t *o) {
  memset(o, 0, sizeof *o);
  o->stats = TP_STATS_OFF;
  o->pool = TP_POOL_AUTO;
  o->group = TP_GROUP_SITE;
  o->numa = TP_NUMA_DEFAULT;
  o->retain_bytes = (size_t)16 << 20;
  o->site_groups = 128;
  o->exclusive_bytes = (size_t)256 << 10;
  o->start_bytes = (size_t)16 << 20;
  o->pool_max = SIZE_MAX;
  o->gpages = TP_GPAGES_AUTO;
  o->gpage_bytes = (size_t)1 << 30;
}

typedef struct { const char *name; int value; } tp_enum_t;

static const tp_enum_t stats_vals[] = {{"0", TP_STATS_OFF}, {"1", TP_STATS_TEXT}, {"text", TP_STATS_TEXT},
                                       {"json", TP_STATS_JSON}, {NULL, 0}};
static const tp_enum_t pool_vals[] = {{"auto", TP_POOL_AUTO}, {"hugetlbfs", TP_POOL_HUGETLBFS},
                                      {"thp", TP_POOL_THP}, {"4k", TP_POOL_4K}, {NULL, 0}};
static const tp_enum_t group_vals[] = {{"site", TP_GROUP_SITE}, {"thread", TP_GROUP_THREAD},
                                       {"none", TP_GROUP_NONE}, {NULL, 0}};
static const tp_enum_t numa_vals[] = {{"local", TP_NUMA_LOCAL}, {"interleave", TP_NUMA_INTERLEAVE},
                                      {"off", TP_NUMA_OFF}, {NULL, 0}};
static const tp_enum_t gpages_vals[] = {{"auto", TP_GPAGES_AUTO}, {"off", TP_GPAGES_OFF}, {NULL, 0}};
static const tp_enum_t after_fork_vals[] = {{"thp", TP_AFTER_FORK_THP}, {"pool", TP_AFTER_FORK_POOL}, {NULL, 0}};
static const tp_enum_t fork_collapse_vals[] = {{"thread", TP_FORK_COLLAPSE_THREAD}, {"alloc", TP_FORK_COLLAPSE_ALLOC},
                                              {"off", TP_FORK_COLLAPSE_OFF}, {NULL, 0}};
static const tp_enum_t bool_vals[] = {{"0", 0}, {"1", 1}, {NULL, 0}};

enum { K_ENUM, K_NUM, K_PATH };
typedef struct {
  const char *key;
  int kind;
  const tp_enum_t *vals;  /* K_ENUM */
  size_t off;             /* field offset in tp_options_t */
  unsigned long long lo, hi, scale; /* K_NUM: accepted range (in the key's unit) and unit */
  const char *accepted;   /* for the warning */
} tp_key_t;

#define OFF(f) offsetof(tp_options_t, f)
static const tp_key_t keys[] = {
    {"stats", K_ENUM, stats_vals, OFF(stats), 0, 0, 0, "0, 1, text or json"},
    {"pool", K_ENUM, pool_vals, OFF(pool), 0, 0, 0, "auto, hugetlbfs, thp or 4k"},
    {"group", K_ENUM, group_vals, OFF(group), 0, 0, 0, "site, thread or none"},
    {"numa", K_ENUM, numa_vals, OFF(numa), 0, 0, 0, "local, interleave or off"},
    {"verbose", K_ENUM, bool_vals, OFF(verbose), 0, 0, 0, "0 or 1"},
    {"after_fork", K_ENUM, after_fork_vals, OFF(after_fork), 0, 0, 0, "thp or pool"},
    {"fork_collapse", K_ENUM, fork_collapse_vals, OFF(fork_collapse), 0, 0, 0, "thread, alloc or off"},
    {"regions", K_PATH, NULL, OFF(regions_path), 0, 0, 0, "a file path"},
    {"plan", K_PATH, NULL, OFF(plan_path), 0, 0, 0, "a file path (a plan from `tlbpack profile`)"},
    {"profile", K_PATH, NULL, OFF(profile_path), 0, 0, 0, "a file path (read by libtlbpack-profile.so)"},
    {"retain_mb", K_NUM, NULL, OFF(retain_bytes), 0, 1u << 20, 1u << 20, "a whole number of MiB, 0-1048576"},
    {"sites", K_NUM, NULL, OFF(site_groups), 1, TP_MAX_GROUPS - 64, 1, "a whole number, 1-960"},
    {"exclusive_kb", K_NUM, NULL, OFF(exclusive_bytes), 0, 1u << 22, 1024, "a whole number of KiB, 0-4194304"},
    {"start_kb", K_NUM, NULL, OFF(start_bytes), 0, 1u << 22, 1024, "a whole number of KiB, 0-4194304"},
    {"pool_max", K_NUM, NULL, OFF(pool_max), 0, 1u << 20, 1, "a whole number of 2 MiB pages, 0-1048576"},
    {"gpages", K_ENUM, gpages_vals, OFF(gpages), 0, 0, 0, "auto or off"},
    {"gpage_mb", K_NUM, NULL, OFF(gpage_bytes), 0, 1u << 20, 1u << 20, "a whole number of MiB, 0-1048576"},
    {NULL, 0, NULL, 0, 0, 0, 0, NULL}};

/* "stats, pool, ...": every key, for the unknown-key warning (built once; no malloc). */
static const char *key_list(void) {
  static char buf[256];
  if (buf[0] == 0) {
    size_t o = 0;
    for (const tp_key_t *t = keys; t->key && o + 32 < sizeof buf; t++)
      o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", o ? ", " : "", t->key);
  }
  return buf;
}

const char *_tp_options_key(unsigned i, char *words, size_t n) {
  if (i >= sizeof keys / sizeof keys[0] - 1 || n == 0) return NULL;
  const tp_key_t *k = &keys[i];
  size_t o = 0;
  snprintf(words, n, "%s", k->kind == K_NUM ? "N" : k->kind == K_PATH ? "PATH" : "");
  for (const tp_enum_t *e = k->kind == K_ENUM ? k->vals : NULL; e && e->name && o < n; e++)
    o += (size_t)snprintf(words + o, n - o, "%s%s", o ? "|" : "", e->name);
  return k->key;
}

/* The user's text, at most 64 bytes, with anything unprintable as \xNN: a newline or an
 * escape sequence in TLBPACK_CONF must not forge or split a line of ours. */
static const char *printable(char *out, const char *s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n && i < 64; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') out[o++] = (char)c;
    else o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
  }
  if (n > 64) o += (size_t)snprintf(out + o, 4, "...");
  out[o] = 0;
  return out;
}

static const char *key_list(void);

static void warn_line(FILE *w, const char *what, const char *k, size_t kl, const char *v, size_t vl,
                      const char *accepted) {
  if (w == NULL) return;
  char kb[64 * 4 + 4], vb[64 * 4 + 4];
  if (accepted)
    fprintf(w, "tlbpack: TLBPACK_CONF: %s '%s' for key '%s' (accepted: %s); default kept\n", what,
            printable(vb, v, vl), printable(kb, k, kl), accepted);
  else
    fprintf(w, "tlbpack: TLBPACK_CONF: %s '%s'%s (the keys: %s); ignored\n", what, printable(kb, k, kl),
            vl ? " with a value" : "", key_list());
}

static int parse_num(const char *v, size_t vl, unsigned long long *out) {
  if (vl == 0 || vl > 20) return -1;
  unsigned long long x = 0;
  for (size_t i = 0; i < vl; i++) {
    if (v[i] < '0' || v[i] > '9') return -1;
    unsigned long long d = (unsigned long long)(v[i] - '0');
    if (x > (~0ull - d) / 10) return -1;
    x = x * 10 + d;
  }
  *out = x;
  return 0;
}

static int set_one(tp_options_t *o, const char *k, size_t kl, const char *v, size_t vl, FILE *w) {
  const tp_key_t *key = NULL;
  for (const tp_key_t *t = keys; t->key; t++)
    if (strlen(t->key) == kl && memcmp(t->key, k, kl) == 0) key = t;
  if (key == NULL) {
    warn_line(w, "unknown key", k, kl, v, vl, NULL);
    return 1;
  }
  char *field = (char *)o + key->off;
  switch (key->kind) {
  case K_ENUM:
    for (const tp_enum_t *e = key->vals; e->name; e++)
      if (strlen(e->name) == vl && memcmp(e->name, v, vl) == 0) {
        *(int *)field = e->value;
        return 0;
      }
    break;
  case K_NUM: {
    unsigned long long x;
    if (parse_num(v, vl, &x) == 0 && x >= key->lo && x <= key->hi) {
      if (key->off == OFF(site_groups)) *(unsigned *)field = (unsigned)x;
      else *(size_t *)field = (size_t)(x * key->scale);
      return 0;
    }
    break;
  }
  case K_PATH:
    if (vl > 0 && vl < TP_OPT_PATH) {
      memcpy(field, v, vl);
      field[vl] = 0;
      return 0;
    }
    break;
  }
  warn_line(w, vl ? "bad value" : "empty value", k, kl, v, vl, key->accepted);
  return 1;
}

int _tp_options_parse(tp_options_t *o, const char *conf, FILE *w) {
  _tp_options_defaults(o);
  if (conf == NULL) return 0;
  int warnings = 0;
  const char *s = conf;
  while (*s) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len > 0) {
      const char *colon = memchr(s, ':', len);
      if (colon == NULL) {
        char buf[64 * 4 + 4];
        if (w) fprintf(w, "tlbpack: TLBPACK_CONF: '%s' is not key:value; ignored\n", printable(buf, s, len));
        warnings++;
      } else {
        warnings += set_one(o, s, (size_t)(colon - s), colon + 1, len - (size_t)(colon - s) - 1, w);
      }
    }
    if (!end) break;
    s = end + 1;
  }
  return warnings;
}
