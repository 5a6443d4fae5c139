/* Helpers shared by the tlbpack verbs: messages, finding our files, sizes, sysfs, conf checks. */
#include "cli.h"
#include "internal.h" /* tp_options_t and _tp_options_parse (alloc/options.c) */

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by CMake: where `cmake --install` puts things, relative to the bindir and absolute. */
#ifndef TP_REL_LIBDIR
#define TP_REL_LIBDIR "../lib"
#endif
#ifndef TP_FULL_LIBDIR
#define TP_FULL_LIBDIR "/usr/local/lib"
#endif
#ifndef TP_FULL_BINDIR
#define TP_FULL_BINDIR "/usr/local/bin"
#endif

static void vmsg(const char *verb, const char *fmt, va_list ap) {
  fprintf(stderr, "tlbpack%s%s: ", verb ? " " : "", verb ? verb : "");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int tpc_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(verb, fmt, ap);
  va_end(ap);
  fprintf(stderr, "Try 'tlbpack %s --help'.\n", verb ? verb : "");
  return TPC_EXIT_USAGE;
}

int tpc_fail(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(verb, fmt, ap);
  va_end(ap);
  return TPC_EXIT_FAIL;
}

const char *tpc_self_dir(void) {
  static char dir[PATH_MAX];
  if (dir[0]) return dir;
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0) return dir[0] = 0, NULL;
  dir[n] = 0;
  char *slash = strrchr(dir, '/');
  if (!slash) return dir[0] = 0, NULL;
  if (slash == dir) slash[1] = 0;
  else *slash = 0;
  return dir;
}

static int usable_file(const char *path) { return access(path, R_OK) == 0; }

/* Absolute path with the directory resolved but the file name kept (libtlbpack.so.0 stays
 * the soname link rather than the versioned file it points to). */
static int abs_keep_name(const char *path, char *out) {
  char dir[PATH_MAX], resolved[PATH_MAX];
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  if (!realpath(dir, resolved)) return -1;
  snprintf(out, PATH_MAX, "%s/%s", strcmp(resolved, "/") ? resolved : "", name);
  return 0;
}

int tpc_is_elf(const char *path) {
  unsigned char magic[4];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, magic, sizeof magic);
  close(fd);
  return n == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

int tpc_find_lib(const char *verb, const char *explicit_path, char *out, size_t outsz) {
  char tried[4][PATH_MAX];
  int ntried = 0;
  (void)outsz; /* out holds PATH_MAX */
  if (explicit_path) {
    if (!usable_file(explicit_path) || abs_keep_name(explicit_path, out) != 0) {
      tpc_fail(verb, "--lib %s: %s (expected the path of libtlbpack.so)", explicit_path, strerror(errno));
      return -1;
    }
    if (!tpc_is_elf(explicit_path)) {
      tpc_fail(verb, "--lib %s: not an ELF shared library (expected the path of libtlbpack.so)", explicit_path);
      return -1;
    }
    return 0;
  }
  const char *self = tpc_self_dir();
  if (self) {
    /* The build tree puts the binary beside the library; an install puts it in the libdir. */
    snprintf(tried[ntried++], PATH_MAX, "%s/libtlbpack.so", self);
    snprintf(tried[ntried++], PATH_MAX, "%s/%s/libtlbpack.so.0", self, TP_REL_LIBDIR);
  }
  snprintf(tried[ntried++], PATH_MAX, "%s/libtlbpack.so.0", TP_FULL_LIBDIR);
  for (int i = 0; i < ntried; i++)
    if (usable_file(tried[i]) && abs_keep_name(tried[i], out) == 0) return 0;
  fprintf(stderr, "tlbpack %s: cannot find libtlbpack.so; looked for:\n", verb);
  for (int i = 0; i < ntried; i++) fprintf(stderr, "  %s\n", tried[i]);
  fprintf(stderr, "build it first (make) or pass --lib PATH\n");
  return -1;
}

int tpc_find_tool(const char *name, char *out, size_t outsz) {
  const char *self = tpc_self_dir();
  if (self) {
    snprintf(out, outsz, "%s/%s", self, name);
    if (access(out, X_OK) == 0) return 0;
  }
  snprintf(out, outsz, "%s/%s", TP_FULL_BINDIR, name);
  if (access(out, X_OK) == 0) return 0;
  const char *path = getenv("PATH");
  if (!path) return -1;
  const char *p = path;
  while (*p) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0) {
      snprintf(out, outsz, "%.*s/%s", (int)len, p, name);
      if (access(out, X_OK) == 0) return 0;
    }
    if (!end) break;
    p = end + 1;
  }
  return -1;
}

static uint64_t unit_multiplier(const char *u) {
  /* K/M/G/T with an optional "B" or "iB": always binary, as huge page sizes are. */
  static const struct { const char *name; uint64_t mul; } units[] = {
      {"", 0},       {"b", 1},           {"k", 1ull << 10},  {"kb", 1ull << 10}, {"kib", 1ull << 10},
      {"m", 1ull << 20}, {"mb", 1ull << 20}, {"mib", 1ull << 20}, {"g", 1ull << 30},
      {"gb", 1ull << 30}, {"gib", 1ull << 30}, {"t", 1ull << 40}, {"tb", 1ull << 40},
      {"tib", 1ull << 40}, {NULL, 0}};
  char low[8];
  size_t n = strlen(u);
  if (n >= sizeof low) return UINT64_MAX;
  for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)u[i]);
  for (int i = 0; units[i].name; i++)
    if (!strcmp(low, units[i].name)) return units[i].mul;
  return UINT64_MAX;
}

int tpc_parse_size(const char *s, uint64_t *value, int *is_bytes) {
  if (!s || !isdigit((unsigned char)s[0])) return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  uint64_t mul = unit_multiplier(end);
  if (mul == UINT64_MAX) return -1;
  if (mul == 0) {
    *value = v;
    *is_bytes = 0;
    return 0;
  }
  if (v > UINT64_MAX / mul) return -1;
  *value = v * mul;
  *is_bytes = 1;
  return 0;
}

uint64_t tpc_parse_page_size(const char *s) {
  uint64_t v;
  int is_bytes;
  if (tpc_parse_size(s, &v, &is_bytes) != 0) return 0;
  return v;
}

const char *tpc_fmt_bytes(uint64_t b, char *buf, size_t n) {
  static const char *names[] = {"TiB", "GiB", "MiB", "KiB"};
  static const int shifts[] = {40, 30, 20, 10};
  for (int i = 0; i < 4; i++) {
    uint64_t unit = 1ull << shifts[i];
    if (b >= unit && b % unit == 0) {
      snprintf(buf, n, "%" PRIu64 " %s", b / unit, names[i]);
      return buf;
    }
  }
  snprintf(buf, n, "%" PRIu64 " B", b);
  return buf;
}

int tpc_read_file(const char *path, char *buf, size_t bufsz) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, bufsz - 1);
  int saved = errno;
  close(fd);
  if (n < 0) return errno = saved, -1;
  buf[n] = 0;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  return 0;
}

int tpc_read_long(const char *path, long *out) {
  char buf[64];
  if (tpc_read_file(path, buf, sizeof buf) != 0) return -1;
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno || end == buf) return errno = EINVAL, -1;
  *out = v;
  return 0;
}

int tpc_write_long(const char *path, long value) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%ld\n", value);
  ssize_t n = write(fd, buf, (size_t)len);
  int saved = errno;
  if (close(fd) != 0 && n == len) return -1;
  if (n != len) return errno = (n < 0 ? saved : EIO), -1;
  return 0;
}

/* ---- TLBPACK_CONF ---------------------------------------------------------------------- */
/* Checked by the allocator's own option parser (alloc/options.c is built into this command),
 * so the keys, values and messages are the ones the library applies. */
int tpc_conf_check(const char *verb, const char *conf) {
  char *msg = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&msg, &len);
  if (m == NULL) return -1;
  tp_options_t scratch;
  int warnings = _tp_options_parse(&scratch, conf, m);
  fclose(m);
  if (warnings) {
    for (char *line = msg, *nl; line && *line; line = nl ? nl + 1 : NULL) {
      nl = strchr(line, '\n');
      if (nl) *nl = 0;
      char *text = strncmp(line, "tlbpack: TLBPACK_CONF: ", 23) ? line : line + 23;
      /* What the library does with a bad item (keeps going) is not what this command does. */
      char *tail = strstr(text, "; ignored");
      if (!tail) tail = strstr(text, "; default kept");
      if (tail) *tail = 0;
      fprintf(stderr, "tlbpack %s: --conf: %s\n", verb, text);
    }
  }
  free(msg);
  return warnings ? -1 : 0;
}

int tpc_conf_has(const char *conf, const char *key) {
  size_t klen = strlen(key);
  const char *item = conf;
  while (item && *item) {
    if (!strncmp(item, key, klen) && item[klen] == ':') return 1;
    item = strchr(item, ',');
    if (item) item++;
  }
  return 0;
}
