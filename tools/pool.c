/* tlbpack pool: show, reserve and release the kernel's hugetlbfs huge page pool.
 * Discovery goes through libhugetlbfs (the library the allocator itself uses to find its
 * mount) when it is built in; the counts come from /sys/kernel/mm/hugepages, which is what
 * the kernel exposes per page size. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef TP_HAVE_HUGETLBFS
#include <stddef.h> /* hugetlbfs.h uses size_t without including it */
#include <hugetlbfs.h>
#endif

#define SYS_HP "/sys/kernel/mm/hugepages"
#define MAX_SIZES 8
#define MAX_MOUNTS 16

typedef struct {
  uint64_t page_size;
  long total, free, reserved, surplus, overcommit;
} hp_counts_t;

typedef struct {
  char path[PATH_MAX];
  uint64_t page_size;
} hp_mount_t;

static void pool_usage(FILE *out) {
  fprintf(out,
          "usage: tlbpack pool [status] [--page-size 2M|1G] [--json]\n"
          "       tlbpack pool reserve [--page-size 2M|1G] [--no-mount] SIZE\n"
          "       tlbpack pool release [--page-size 2M|1G] [--keep N]\n"
          "\n"
          "The hugetlbfs pool: huge pages the kernel sets aside, which tlbpack (pool:auto or\n"
          "pool:hugetlbfs) maps first. Without a pool tlbpack falls back to THP, then 4 KiB pages.\n"
          "\n"
          "  status           page sizes with total, free, reserved and surplus pages, the\n"
          "                   hugetlbfs mount points, pages per NUMA node and the THP mode, and\n"
          "                   the running processes that have libtlbpack.so loaded with the pool\n"
          "                   pages each holds, per page size (as root: every process; else\n"
          "                   your own)\n"
          "    --page-size S  only that page size: its pool, and each process's pages of it\n"
          "    --json         the same as one JSON object\n"
          "  reserve SIZE     grow the pool to at least SIZE (root): a size (256M, 1G, 512MiB)\n"
          "                   or a page count (128); mounts hugetlbfs at /dev/hugepages when\n"
          "                   none is mounted. Reports how many pages the kernel really gave:\n"
          "                   it can give fewer when free memory is fragmented (exit status 3)\n"
          "    --page-size S  the huge page size to reserve (default: the kernel's default)\n"
          "    --no-mount     do not mount hugetlbfs\n"
          "  release          shrink the pool to 0 pages (root); pages in use stay until freed\n"
          "    --keep N       keep N pages (a count or a size) instead of 0\n"
          "  -h, --help       this text\n");
}

/* ---- discovery ------------------------------------------------------------------------- */
static uint64_t default_page_size(void) {
#ifdef TP_HAVE_HUGETLBFS
  long s = gethugepagesize();
  if (s > 0) return (uint64_t)s;
#endif
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Hugepagesize: %lu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb << 10;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The huge page sizes this kernel supports, ascending. */
static int page_sizes(uint64_t *out, int max) {
  int n = 0;
#ifdef TP_HAVE_HUGETLBFS
  long sizes[MAX_SIZES];
  int got = gethugepagesizes(sizes, MAX_SIZES);
  for (int i = 0; i < got && n < max; i++) out[n++] = (uint64_t)sizes[i];
  if (n > 0) goto done;
#endif
  DIR *d = opendir(SYS_HP);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    unsigned long kb;
    if (sscanf(e->d_name, "hugepages-%lukB", &kb) == 1) out[n++] = (uint64_t)kb << 10;
  }
  closedir(d);
#ifdef TP_HAVE_HUGETLBFS
done:
#endif
  qsort(out, (size_t)n, sizeof *out, cmp_u64);
  return n;
}

static void sysfs_path(char *buf, size_t n, uint64_t page_size, const char *file) {
  snprintf(buf, n, SYS_HP "/hugepages-%" PRIu64 "kB/%s", page_size >> 10, file);
}

static long sysfs_long(uint64_t page_size, const char *file) {
  char path[PATH_MAX];
  long v;
  sysfs_path(path, sizeof path, page_size, file);
  return tpc_read_long(path, &v) == 0 ? v : -1;
}

static void read_counts(uint64_t ps, hp_counts_t *c) {
  c->page_size = ps;
  c->total = sysfs_long(ps, "nr_hugepages");
  c->free = sysfs_long(ps, "free_hugepages");
  c->reserved = sysfs_long(ps, "resv_hugepages");
  c->surplus = sysfs_long(ps, "surplus_hugepages");
  c->overcommit = sysfs_long(ps, "nr_overcommit_hugepages");
}

/* hugetlbfs mounts from /proc/mounts, each with its page size (the pagesize= option, else
 * the default size). */
static int hugetlbfs_mounts(hp_mount_t *out, int max) {
  FILE *f = fopen("/proc/mounts", "r");
  if (!f) return 0;
  char dev[256], dir[PATH_MAX], type[64], opts[1024];
  int n = 0;
  uint64_t def = default_page_size();
  while (n < max && fscanf(f, "%255s %4095s %63s %1023s %*d %*d", dev, dir, type, opts) == 4) {
    if (strcmp(type, "hugetlbfs") != 0) continue;
    uint64_t ps = def;
    char *p = strstr(opts, "pagesize=");
    if (p) {
      char val[32];
      if (sscanf(p + 9, "%31[^,]", val) == 1 && tpc_parse_page_size(val)) ps = tpc_parse_page_size(val);
    }
    snprintf(out[n].path, sizeof out[n].path, "%s", dir);
    out[n].page_size = ps;
    n++;
  }
  fclose(f);
  return n;
}

static const char *mount_for(uint64_t ps, const hp_mount_t *m, int nm) {
#ifdef TP_HAVE_HUGETLBFS
  /* libhugetlbfs picks the mount the allocator will use (it skips ones we cannot write). */
  const char *p = hugetlbfs_find_path_for_size((long)ps);
  if (p) return p;
#endif
  for (int i = 0; i < nm; i++)
    if (m[i].page_size == ps) return m[i].path;
  return NULL;
}

static void thp_mode(const char *file, char *out, size_t n) {
  char buf[256];
  snprintf(out, n, "unavailable");
  if (tpc_read_file(file, buf, sizeof buf) != 0) return;
  char *open = strchr(buf, '['), *close = open ? strchr(open, ']') : NULL;
  if (open && close) snprintf(out, n, "%.*s", (int)(close - open - 1), open + 1);
  else snprintf(out, n, "%s", buf);
}

static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

/* ---- processes using tlbpack ----------------------------------------------------------- */
/* A process uses tlbpack when libtlbpack.so is mapped (preloaded, /etc/ld.so.preload, or
 * linked): /proc/PID/maps. What it holds comes from /proc/PID/smaps, per mapping:
 * Private_Hugetlb + Shared_Hugetlb are its pool pages that have been touched (reserved but
 * untouched ones show only in the pool's reserved count), in pages of the mapping's
 * KernelPageSize (smaps_rollup would add 2 MiB and 1 GiB pages together); AnonHugePages is its
 * THP. Other users' processes can be read only by root. */
typedef struct {
  int pid;
  char comm[64];
  uint64_t hugetlb_kb, thp_kb, rss_kb;
  uint64_t hugetlb_kb_by_size[MAX_SIZES]; /* indexed like the page sizes passed in */
} tp_proc_t;

typedef struct {
  const uint64_t *sizes; /* the page sizes shown, ascending */
  int n;
  int main;              /* the size whose pages make the "pool pages" column */
} tp_size_view_t;

static int maps_have_tlbpack(int pid) {
  char path[64], line[PATH_MAX + 256];
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    const char *slash = strrchr(line, '/');
    found = slash && !strncmp(slash + 1, "libtlbpack.so", 13);
  }
  fclose(f);
  return found;
}

/* tlbpack's 1 GiB pages are mappings of this name, populated whole when mapped: their size is
 * what they hold. Counted so because some kernels (6.18 here) report a 1 GiB hugetlb page in
 * none of smaps' Hugetlb fields, status' HugetlbPages nor pagemap. */
#define TP_GPAGE_MEMFD "/memfd:tlbpack-1g"

static void add_hugetlb(tp_proc_t *p, const tp_size_view_t *v, unsigned long long page_kb, unsigned long long kb) {
  p->hugetlb_kb += kb;
  for (int i = 0; i < v->n; i++)
    if (v->sizes[i] >> 10 == page_kb) p->hugetlb_kb_by_size[i] += kb;
}

static int read_usage(tp_proc_t *p, const tp_size_view_t *v) {
  char path[64], line[PATH_MAX + 256];
  snprintf(path, sizeof path, "/proc/%d/smaps", p->pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  unsigned long long kb, page_kb = 0, start, end, gpage_kb = 0;
  char key[64];
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%llx-%llx ", &start, &end) == 2) { /* a mapping's first line */
      add_hugetlb(p, v, page_kb, gpage_kb);
      gpage_kb = strstr(line, TP_GPAGE_MEMFD) ? (end - start) >> 10 : 0;
      continue;
    }
    if (sscanf(line, "%63[^:]: %llu kB", key, &kb) != 2) continue;
    if (!strcmp(key, "KernelPageSize")) {
      page_kb = kb; /* comes before the mapping's Hugetlb lines */
    } else if (!strcmp(key, "Private_Hugetlb") || !strcmp(key, "Shared_Hugetlb")) {
      if (gpage_kb == 0) add_hugetlb(p, v, page_kb, kb);
    } else if (!strcmp(key, "AnonHugePages")) {
      p->thp_kb += kb;
    } else if (!strcmp(key, "Rss")) {
      p->rss_kb += kb;
    }
  }
  add_hugetlb(p, v, page_kb, gpage_kb);
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/comm", p->pid);
  if (tpc_read_file(path, p->comm, sizeof p->comm) != 0) snprintf(p->comm, sizeof p->comm, "?");
  return 0;
}

/* Pool pages of size v->sizes[i] that p holds. */
static uint64_t pages_of(const tp_proc_t *p, const tp_size_view_t *v, int i) {
  return i < v->n ? p->hugetlb_kb_by_size[i] / (v->sizes[i] >> 10) : 0;
}

static int by_pool_pages(const void *a, const void *b) {
  const tp_proc_t *x = a, *y = b;
  if (x->hugetlb_kb != y->hugetlb_kb) return x->hugetlb_kb < y->hugetlb_kb ? 1 : -1;
  return x->pid - y->pid;
}

/* The processes with libtlbpack.so mapped, most pool pages first; *unreadable counts the
 * processes whose maps could not be read (other users' when not root). Caller frees. */
static tp_proc_t *tlbpack_processes(const tp_size_view_t *sv, int *count, int *unreadable) {
  *count = *unreadable = 0;
  DIR *d = opendir("/proc");
  if (!d) return NULL;
  tp_proc_t *v = NULL;
  int cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    int has = maps_have_tlbpack((int)pid);
    if (has < 0 && errno == EACCES) (*unreadable)++;
    if (has <= 0) continue;
    if (*count == cap) {
      tp_proc_t *nv = realloc(v, (size_t)(cap = cap ? 2 * cap : 32) * sizeof *v);
      if (!nv) break;
      v = nv;
    }
    tp_proc_t *p = &v[*count];
    memset(p, 0, sizeof *p);
    p->pid = (int)pid;
    if (read_usage(p, sv) == 0) (*count)++; /* gone meanwhile: skipped */
    else if (errno == EACCES) (*unreadable)++;
  }
  closedir(d);
  if (*count > 1) qsort(v, (size_t)*count, sizeof *v, by_pool_pages);
  return v;
}

/* The "pool pages" column counts pages of the main size; another size gets a column of its own
 * when its pool has pages or a process holds some. */
static void print_processes(int json, const tp_size_view_t *sv) {
  int n, unreadable;
  tp_proc_t *v = tlbpack_processes(sv, &n, &unreadable);
  uint64_t total_kb = 0, held[MAX_SIZES] = {0};
  int shown[MAX_SIZES] = {0};
  char b1[32], b2[32];
  for (int i = 0; i < n; i++)
    for (int k = 0; k < sv->n; k++) held[k] += pages_of(&v[i], sv, k);
  for (int k = 0; k < sv->n; k++) {
    shown[k] = k != sv->main && (held[k] > 0 || sysfs_long(sv->sizes[k], "nr_hugepages") > 0);
    if (k == sv->main || shown[k]) total_kb += held[k] * (sv->sizes[k] >> 10);
  }
  if (json) {
    printf(",\"processes\":[");
    for (int i = 0; i < n; i++) {
      printf("%s{\"pid\":%d,\"comm\":", i ? "," : "", v[i].pid);
      json_str(v[i].comm);
      printf(",\"hugetlb_pages\":%" PRIu64 ",\"hugetlb_kb\":%" PRIu64 ",\"hugetlb_pages_by_size\":{",
             pages_of(&v[i], sv, sv->main), v[i].hugetlb_kb);
      for (int k = 0; k < sv->n; k++)
        printf("%s\"%" PRIu64 "\":%" PRIu64, k ? "," : "", sv->sizes[k], pages_of(&v[i], sv, k));
      printf("},\"thp_kb\":%" PRIu64 ",\"rss_kb\":%" PRIu64 "}", v[i].thp_kb, v[i].rss_kb);
    }
    printf("],\"processes_unreadable\":%d", unreadable);
  } else {
    printf("processes using tlbpack (libtlbpack.so mapped): %d", n);
    if (n) {
      printf(", holding %" PRIu64 " pool pages of %s", held[sv->main],
             sv->n ? tpc_fmt_bytes(sv->sizes[sv->main], b2, sizeof b2) : "?");
      for (int k = 0; k < sv->n; k++)
        if (shown[k]) printf(" + %" PRIu64 " x %s", held[k], tpc_fmt_bytes(sv->sizes[k], b1, sizeof b1));
      printf(" (%s) in all", tpc_fmt_bytes(total_kb << 10, b1, sizeof b1));
    }
    putchar('\n');
    if (n) {
      printf("  %8s %11s", "pid", "pool pages");
      for (int k = 0; k < sv->n; k++)
        if (shown[k]) {
          char head[48];
          snprintf(head, sizeof head, "%s pages", tpc_fmt_bytes(sv->sizes[k], b1, sizeof b1));
          printf(" %11s", head);
        }
      printf(" %10s %10s  %s\n", "thp", "rss", "command");
    }
    for (int i = 0; i < n; i++) {
      printf("  %8d %11" PRIu64, v[i].pid, pages_of(&v[i], sv, sv->main));
      for (int k = 0; k < sv->n; k++)
        if (shown[k]) printf(" %11" PRIu64, pages_of(&v[i], sv, k));
      printf(" %10s %10s  %s\n", tpc_fmt_bytes(v[i].thp_kb << 10, b1, sizeof b1),
             tpc_fmt_bytes(v[i].rss_kb << 10, b2, sizeof b2), v[i].comm);
    }
    if (unreadable)
      printf("  (%d %s could not be read%s)\n", unreadable, unreadable == 1 ? "process" : "processes",
             geteuid() ? ": run as root to see every process" : "");
  }
  free(v);
}

/* ---- status ---------------------------------------------------------------------------- */
static void print_nodes(uint64_t ps, int json) {
  DIR *d = opendir("/sys/devices/system/node");
  if (!d) return;
  struct dirent *e;
  int first = 1;
  while ((e = readdir(d))) {
    int node;
    if (sscanf(e->d_name, "node%d", &node) != 1) continue;
    char path[PATH_MAX];
    long total = -1, free_ = -1;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/hugepages/hugepages-%" PRIu64 "kB/nr_hugepages",
             node, ps >> 10);
    if (tpc_read_long(path, &total) != 0) continue;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/hugepages/hugepages-%" PRIu64 "kB/free_hugepages",
             node, ps >> 10);
    (void)tpc_read_long(path, &free_);
    if (json) printf("%s{\"node\":%d,\"total\":%ld,\"free\":%ld}", first ? "" : ",", node, total, free_);
    else printf(" node%d %ld/%ld", node, total, free_);
    first = 0;
  }
  closedir(d);
}

static int pick_page_size(const char *verb, const char *arg, uint64_t *out);

/* ps_arg: --page-size (NULL: every size). */
static int pool_status(int json, const char *ps_arg) {
  uint64_t sizes[MAX_SIZES];
  int ns = page_sizes(sizes, MAX_SIZES), rc;
  hp_mount_t mounts[MAX_MOUNTS];
  int nm = hugetlbfs_mounts(mounts, MAX_MOUNTS);
  uint64_t def = default_page_size();
  if (ps_arg != NULL) {
    if ((rc = pick_page_size("pool", ps_arg, &sizes[0])) != 0) return rc;
    ns = 1;
  }
  tp_size_view_t sv = {sizes, ns, 0};
  for (int i = 0; i < ns; i++)
    if (ps_arg == NULL && sizes[i] == def) sv.main = i;
  char thp[256], defrag[256], b1[32], b2[32], b3[32];
  thp_mode("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
  thp_mode("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);

  if (json) {
    printf("{\"default_page_size\":%" PRIu64 ",\"sizes\":[", def);
    for (int i = 0; i < ns; i++) {
      hp_counts_t c;
      read_counts(sizes[i], &c);
      const char *m = mount_for(sizes[i], mounts, nm);
      printf("%s{\"page_size\":%" PRIu64 ",\"total\":%ld,\"free\":%ld,\"reserved\":%ld,\"surplus\":%ld,"
             "\"overcommit\":%ld,\"mount\":",
             i ? "," : "", c.page_size, c.total, c.free, c.reserved, c.surplus, c.overcommit);
      if (m) json_str(m);
      else printf("null");
      printf(",\"nodes\":[");
      print_nodes(sizes[i], 1);
      printf("]}");
    }
    printf("],\"mounts\":[");
    for (int i = 0; i < nm; i++) {
      printf("%s{\"path\":", i ? "," : "");
      json_str(mounts[i].path);
      printf(",\"page_size\":%" PRIu64 "}", mounts[i].page_size);
    }
    printf("],\"thp\":\"%s\",\"thp_defrag\":\"%s\"", thp, defrag);
    print_processes(1, &sv);
    printf("}\n");
    return 0;
  }

  if (ns == 0) {
    printf("hugetlbfs pool: this kernel offers no huge pages (%s is missing)\n", SYS_HP);
  } else {
    printf("hugetlbfs pool (default huge page size %s)\n", tpc_fmt_bytes(def, b1, sizeof b1));
    printf("  %-10s %8s %8s %9s %8s %11s  %s\n", "page size", "total", "free", "reserved", "surplus",
           "overcommit", "mount");
    for (int i = 0; i < ns; i++) {
      hp_counts_t c;
      read_counts(sizes[i], &c);
      const char *m = mount_for(sizes[i], mounts, nm);
      printf("  %-10s %8ld %8ld %9ld %8ld %11ld  %s\n", tpc_fmt_bytes(sizes[i], b1, sizeof b1), c.total,
             c.free, c.reserved, c.surplus, c.overcommit, m ? m : "-");
    }
    for (int i = 0; i < ns; i++) {
      hp_counts_t c;
      read_counts(sizes[i], &c);
      if (c.total <= 0) continue;
      printf("  %s pages: %s in the pool, %s free; per NUMA node (total/free):",
             tpc_fmt_bytes(sizes[i], b1, sizeof b1), tpc_fmt_bytes((uint64_t)c.total * sizes[i], b2, sizeof b2),
             tpc_fmt_bytes((uint64_t)c.free * sizes[i], b3, sizeof b3));
      print_nodes(sizes[i], 0);
      putchar('\n');
    }
  }
  printf("hugetlbfs mounts:");
  if (nm == 0) printf(" none (tlbpack pool reserve mounts /dev/hugepages)\n");
  else putchar('\n');
  for (int i = 0; i < nm; i++)
    printf("  %s (%s pages)\n", mounts[i].path, tpc_fmt_bytes(mounts[i].page_size, b1, sizeof b1));
  printf("transparent huge pages: %s (defrag: %s)\n", thp, defrag);
  print_processes(0, &sv);

  hp_counts_t d;
  read_counts(def, &d);
  if (d.total <= 0)
    printf("note: no huge pages reserved: tlbpack uses THP or 4 KiB pages; as root: tlbpack pool reserve 256M\n");
  else if (nm == 0)
    printf("note: no hugetlbfs mount: tlbpack maps pool pages with MAP_HUGETLB; mount one with tlbpack pool reserve\n");
  return 0;
}

/* ---- reserve / release ----------------------------------------------------------------- */
static int pick_page_size(const char *verb, const char *arg, uint64_t *out) {
  uint64_t sizes[MAX_SIZES];
  int ns = page_sizes(sizes, MAX_SIZES);
  char b[32];
  if (ns == 0) return tpc_fail(verb, "this kernel offers no huge pages (%s is missing)", SYS_HP);
  uint64_t want = arg ? tpc_parse_page_size(arg) : default_page_size();
  for (int i = 0; i < ns; i++)
    if (sizes[i] == want) return *out = want, 0;
  fprintf(stderr, "tlbpack %s: --page-size %s: this kernel offers", verb, arg ? arg : "(default)");
  for (int i = 0; i < ns; i++) fprintf(stderr, "%s %s", i ? "," : "", tpc_fmt_bytes(sizes[i], b, sizeof b));
  fprintf(stderr, " (e.g. --page-size 2M)\n");
  return TPC_EXIT_USAGE;
}

/* Pages from a SIZE or COUNT argument; rounds sizes up to whole pages. */
static int pages_from_arg(const char *verb, const char *what, const char *arg, uint64_t ps, long *pages) {
  uint64_t v;
  int is_bytes;
  if (tpc_parse_size(arg, &v, &is_bytes) != 0)
    return tpc_usage_error(verb, "%s '%s' is neither a size (256M, 1G, 512MiB) nor a page count (128)", what, arg);
  uint64_t n = is_bytes ? (v + ps - 1) / ps : v;
  if (n > (uint64_t)LONG_MAX / 2) return tpc_usage_error(verb, "%s '%s' is too large", what, arg);
  *pages = (long)n;
  return 0;
}

static int need_root(const char *verb, const char *path) {
  if (geteuid() == 0) return 0;
  fprintf(stderr,
          "tlbpack pool %s: needs root: changing the pool writes %s\n"
          "  run it as root (sudo tlbpack pool %s ...); `tlbpack pool status` works for anyone\n",
          verb, path, verb);
  return TPC_EXIT_FAIL;
}

static int write_pages(const char *verb, const char *path, long pages) {
  if (tpc_write_long(path, pages) == 0) return 0;
  int err = errno;
  fprintf(stderr, "tlbpack pool %s: cannot write %ld to %s: %s%s\n", verb, pages, path, strerror(err),
          err == EROFS || err == EACCES || err == EPERM
              ? " (inside a container /sys is often read-only: change the pool on the host)"
              : "");
  return TPC_EXIT_FAIL;
}

/* Mounts hugetlbfs for this page size unless one is mounted. Prints what it did. */
static void ensure_mount(uint64_t ps) {
  hp_mount_t mounts[MAX_MOUNTS];
  int nm = hugetlbfs_mounts(mounts, MAX_MOUNTS);
  char b[32], dir[64], opt[64];
  for (int i = 0; i < nm; i++)
    if (mounts[i].page_size == ps) {
      printf("hugetlbfs already mounted at %s\n", mounts[i].path);
      return;
    }
  /* /dev/hugepages is the usual place (systemd uses it); another size gets its own dir. */
  snprintf(dir, sizeof dir, "/dev/hugepages");
  for (int i = 0; i < nm; i++)
    if (!strcmp(mounts[i].path, dir)) snprintf(dir, sizeof dir, "/dev/hugepages-%" PRIu64 "kB", ps >> 10);
  snprintf(opt, sizeof opt, "pagesize=%" PRIu64 "K", ps >> 10);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    printf("warning: cannot create %s: %s; hugetlbfs not mounted (tlbpack still maps pool pages with "
           "MAP_HUGETLB)\n", dir, strerror(errno));
    return;
  }
  if (mount("nodev", dir, "hugetlbfs", 0, opt) != 0) {
    printf("warning: cannot mount hugetlbfs at %s: %s (tlbpack still maps pool pages with MAP_HUGETLB)\n", dir,
           strerror(errno));
    return;
  }
  printf("mounted hugetlbfs (%s pages) at %s\n", tpc_fmt_bytes(ps, b, sizeof b), dir);
}

static int pool_reserve(int argc, char **argv) {
  static const struct option opts[] = {{"page-size", required_argument, 0, 'p'},
                                       {"no-mount", no_argument, 0, 'M'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *ps_arg = NULL;
  int no_mount = 0, c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":p:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': ps_arg = optarg; break;
    case 'M': no_mount = 1; break;
    case 'h': pool_usage(stdout); return 0;
    case ':': return tpc_usage_error("pool", "reserve: option '%s' needs a value", argv[optind - 1]);
    default:
      return tpc_usage_error("pool", "reserve: unknown option '%s' (accepted: --page-size, --no-mount)",
                             argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return tpc_usage_error("pool", "reserve needs a SIZE: a size (256M, 1G) or a page count (128)");
  if (optind + 1 < argc) return tpc_usage_error("pool", "reserve: unexpected argument '%s'", argv[optind + 1]);
  uint64_t ps;
  long want, rc;
  if ((rc = pick_page_size("pool", ps_arg, &ps)) != 0) return (int)rc;
  if ((rc = pages_from_arg("pool", "reserve: SIZE", argv[optind], ps, &want)) != 0) return (int)rc;
  if (want == 0) return tpc_usage_error("pool", "reserve: SIZE '%s' is zero pages; to empty the pool use: tlbpack pool release", argv[optind]);

  char path[PATH_MAX], b1[32], b2[32];
  sysfs_path(path, sizeof path, ps, "nr_hugepages");
  if ((rc = need_root("reserve", path)) != 0) return (int)rc;
  long before = sysfs_long(ps, "nr_hugepages");
  if (before < 0) return tpc_fail("pool", "reserve: cannot read %s: %s", path, strerror(errno));
  const char *psz = tpc_fmt_bytes(ps, b1, sizeof b1);
  if (before >= want) {
    printf("pool already holds %ld x %s pages (%s), at least the %ld asked for: left as it is\n", before, psz,
           tpc_fmt_bytes((uint64_t)before * ps, b2, sizeof b2), want);
    if (!no_mount) ensure_mount(ps);
    return 0;
  }
  if ((rc = write_pages("reserve", path, want)) != 0) return (int)rc;
  long got = sysfs_long(ps, "nr_hugepages");
  if (got < want) {
    /* Huge pages need physically contiguous memory: compact once and ask again. */
    (void)tpc_write_long("/proc/sys/vm/compact_memory", 1);
    (void)tpc_write_long(path, want);
    got = sysfs_long(ps, "nr_hugepages");
  }
  int status = 0;
  if (got >= want) {
    printf("reserved %ld x %s huge pages (%s); the pool had %ld\n", got, psz,
           tpc_fmt_bytes((uint64_t)got * ps, b2, sizeof b2), before);
  } else {
    printf("asked for %ld x %s huge pages, the kernel gave %ld (%s", want, psz, got,
           tpc_fmt_bytes((uint64_t)(got > 0 ? got : 0) * ps, b2, sizeof b2));
    printf(" of %s): not enough physically contiguous free memory, even after compaction.\n",
           tpc_fmt_bytes((uint64_t)want * ps, b2, sizeof b2));
    printf("  free some memory and retry, or reserve at boot (hugepages=%ld on the kernel command line);\n"
           "  tlbpack falls back to THP and 4 KiB pages for what the pool cannot give\n", want);
    status = TPC_EXIT_PARTIAL;
  }
  if (!no_mount && got > 0) ensure_mount(ps);
  return status;
}

static int pool_release(int argc, char **argv) {
  static const struct option opts[] = {{"page-size", required_argument, 0, 'p'},
                                       {"keep", required_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *ps_arg = NULL, *keep_arg = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":p:k:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': ps_arg = optarg; break;
    case 'k': keep_arg = optarg; break;
    case 'h': pool_usage(stdout); return 0;
    case ':': return tpc_usage_error("pool", "release: option '%s' needs a value", argv[optind - 1]);
    default:
      return tpc_usage_error("pool", "release: unknown option '%s' (accepted: --keep N, --page-size)",
                             argv[optind - 1]);
    }
  }
  if (optind < argc) return tpc_usage_error("pool", "release: unexpected argument '%s' (did you mean --keep %s?)",
                                            argv[optind], argv[optind]);
  uint64_t ps;
  long keep = 0, rc;
  if ((rc = pick_page_size("pool", ps_arg, &ps)) != 0) return (int)rc;
  if (keep_arg && (rc = pages_from_arg("pool", "release: --keep", keep_arg, ps, &keep)) != 0) return (int)rc;
  char path[PATH_MAX], b1[32], b2[32];
  sysfs_path(path, sizeof path, ps, "nr_hugepages");
  if ((rc = need_root("release", path)) != 0) return (int)rc;
  long before = sysfs_long(ps, "nr_hugepages");
  if (before < 0) return tpc_fail("pool", "release: cannot read %s: %s", path, strerror(errno));
  const char *psz = tpc_fmt_bytes(ps, b1, sizeof b1);
  if (keep > before)
    return tpc_usage_error("pool", "release: --keep %ld is more than the %ld pages in the pool; to grow it use: "
                                   "tlbpack pool reserve %ld", keep, before, keep);
  if (keep == before) {
    printf("pool holds %ld x %s pages, as --keep asks: nothing to release\n", before, psz);
    return 0;
  }
  if ((rc = write_pages("release", path, keep)) != 0) return (int)rc;
  long now = sysfs_long(ps, "nr_hugepages"), surplus = sysfs_long(ps, "surplus_hugepages");
  printf("released %ld x %s huge pages; the pool now holds %ld (%s)\n", before - now, psz, now,
         tpc_fmt_bytes((uint64_t)(now > 0 ? now : 0) * ps, b2, sizeof b2));
  if (surplus > 0)
    printf("  %ld pages are still mapped by running programs; the kernel frees them when they are unmapped\n",
           surplus);
  return 0;
}

int tpc_cmd_pool(int argc, char **argv) {
  /* argv[0] is "pool"; argv[1] is the sub-verb (status when absent). */
  if (argc < 2) return pool_status(0, NULL);
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
    pool_usage(stdout);
    return 0;
  }
  if (!strcmp(sub, "--json")) return argc == 2 ? pool_status(1, NULL) : tpc_usage_error("pool", "unexpected argument '%s'", argv[2]);
  if (!strcmp(sub, "status")) {
    int json = 0;
    const char *ps_arg = NULL;
    for (int i = 2; i < argc; i++) {
      if (!strcmp(argv[i], "--json")) json = 1;
      else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return pool_usage(stdout), 0;
      else if (!strcmp(argv[i], "--page-size") && i + 1 < argc) ps_arg = argv[++i];
      else if (!strncmp(argv[i], "--page-size=", 12)) ps_arg = argv[i] + 12;
      else if (!strcmp(argv[i], "--page-size")) return tpc_usage_error("pool", "status: option '--page-size' needs a value (2M or 1G)");
      else return tpc_usage_error("pool", "status: unknown argument '%s' (accepted: --page-size S, --json)", argv[i]);
    }
    return pool_status(json, ps_arg);
  }
  if (!strcmp(sub, "reserve")) return pool_reserve(argc - 1, argv + 1);
  if (!strcmp(sub, "release")) return pool_release(argc - 1, argv + 1);
  return tpc_usage_error("pool", "unknown action '%s' (accepted: status, reserve SIZE, release)", sub);
}
