/* Shared workload plumbing. Bookkeeping (hot-set registry, trace buffer) lives in mmap'd memory
 * so that the allocator under test sees only the workload's own allocations; the only libc calls
 * that may malloc (qsort, printf) run after the measured phase. */
#define _GNU_SOURCE
#include "wl_common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

const char *wl_trace_path;
const char *wl_smaps_path;
unsigned long wl_trace_max = 3000000;
unsigned long wl_seed = 42;
int wl_pin;
static int pin_cpus[CPU_SETSIZE], pin_n; /* --pin: the CPUs allowed at start, in order */
static int pin_started;                  /* threads started pinned */
volatile uint64_t wl_sink;
long wl_peak_rss_override_kb = -1;
long wl_hugetlb_override_kb = -1;
const char *wl_malloc_from_override;
static const char *wl_prog = "workload";

void wl_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", wl_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

double wl_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- flags ------------------------------------------------------------------------------- */
static void wl_usage(FILE *f, const char *prog, const wl_flag_t *flags) {
  fprintf(f, "usage: %s [flags]\n", prog);
  for (const wl_flag_t *fl = flags; fl && fl->name; fl++) {
    char def[64] = "";
    if (fl->kind == 'u') snprintf(def, sizeof def, " (default %lu)", *(unsigned long *)fl->dst);
    fprintf(f, "  --%-14s %s%s\n", fl->name, fl->help, def);
  }
  fprintf(f, "  --trace FILE     record the data-structure accesses of the measured phase (binary trace)\n"
             "  --smaps FILE     copy /proc/self/smaps there at the end\n"
             "  --trace-max N    stop recording after N records (default 3000000)\n"
             "  --seed N         random seed (default 42)\n"
             "  --pin            run the workload's threads one per allowed CPU (round robin)\n");
}

static int wl_set(const char *prog, const wl_flag_t *fl, const char *val) {
  if (fl->kind == 'b') { *(int *)fl->dst = 1; return 0; }
  if (!val) { fprintf(stderr, "%s: --%s needs a value\n", prog, fl->name); exit(2); }
  if (fl->kind == 's') { *(const char **)fl->dst = val; return 1; }
  char *end;
  errno = 0;
  unsigned long v = strtoul(val, &end, 0);
  if (errno || end == val || *end || val[0] == '-') {
    fprintf(stderr, "%s: --%s wants a non-negative integer, got '%s'\n", prog, fl->name, val);
    exit(2);
  }
  *(unsigned long *)fl->dst = v;
  return 1;
}

void wl_parse_flags(const char *prog, int argc, char **argv, const wl_flag_t *flags) {
  wl_prog = prog;
  const wl_flag_t common[] = {
    {"trace", "", 's', &wl_trace_path},   {"smaps", "", 's', &wl_smaps_path},
    {"trace-max", "", 'u', &wl_trace_max}, {"seed", "", 'u', &wl_seed},
    {"pin", "", 'b', &wl_pin},            {NULL, NULL, 0, NULL}};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { wl_usage(stdout, prog, flags); exit(0); }
    if (strncmp(a, "--", 2) != 0) {
      fprintf(stderr, "%s: unexpected argument '%s' (flags start with --; see --help)\n", prog, a);
      exit(2);
    }
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    const wl_flag_t *hit = NULL;
    for (int pass = 0; pass < 2 && !hit; pass++)
      for (const wl_flag_t *fl = pass ? common : flags; fl && fl->name; fl++)
        if (strlen(fl->name) == nlen && !strncmp(fl->name, name, nlen)) { hit = fl; break; }
    if (!hit) {
      fprintf(stderr, "%s: unknown flag '%s' (see --help)\n", prog, a);
      exit(2);
    }
    if (eq) wl_set(prog, hit, eq + 1);
    else i += wl_set(prog, hit, i + 1 < argc ? argv[i + 1] : NULL);
  }
  if (wl_seed == 0) wl_seed = 42;  /* xorshift needs a nonzero state */
  if (wl_pin) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) wl_die("--pin: cannot read this process's CPUs: %s", strerror(errno));
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) pin_cpus[pin_n++] = c;
    if (pin_n < 2) fprintf(stderr, "%s: --pin: only %d CPU allowed; the threads share it\n", prog, pin_n);
  }
}

int wl_thread_start(pthread_t *thread, void *(*fn)(void *), long i) {
  pthread_attr_t at;
  if (pthread_attr_init(&at) != 0) return -1;
  if (wl_pin && pin_n > 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(pin_cpus[i % pin_n], &one);
    if (pthread_attr_setaffinity_np(&at, sizeof one, &one) != 0) wl_die("--pin: cannot pin thread %ld", i);
  }
  int r = pthread_create(thread, &at, fn, (void *)i);
  pthread_attr_destroy(&at);
  if (r == 0 && wl_pin && pin_n > 0) __atomic_fetch_add(&pin_started, 1, __ATOMIC_RELAXED);
  return r;
}

/* ---- mmap'd growable arrays ----------------------------------------------------------------- */
static void *wl_grow(void *p, size_t *cap_bytes, size_t need) {
  if (need <= *cap_bytes) return p;
  size_t ncap = *cap_bytes ? *cap_bytes : (1u << 20);
  while (ncap < need) ncap *= 2;
  void *q = p ? mremap(p, *cap_bytes, ncap, MREMAP_MAYMOVE)
              : mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) wl_die("out of memory for bookkeeping (%zu bytes)", ncap);
  *cap_bytes = ncap;
  return q;
}

/* ---- hot set ------------------------------------------------------------------------------ */
typedef struct { uintptr_t addr; size_t len; } wl_range_t;
static wl_range_t *hot;
static size_t hot_n, hot_cap;

void wl_hot_add(const void *p, size_t n) {
  if (!n) return;
  hot = wl_grow(hot, &hot_cap, (hot_n + 1) * sizeof *hot);
  hot[hot_n].addr = (uintptr_t)p;
  hot[hot_n].len = n;
  hot_n++;
}
void wl_hot_reset(void) { hot_n = 0; }

static int wl_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

#define KPF_HUGE 17
#define KPF_THP 22

/* The 1 GiB hugetlb mappings of this process (KernelPageSize 1048576 kB in smaps), as ranges
 * of 4 KiB page numbers. Found in smaps because some kernels (6.18 here) show a 1 GiB hugetlb
 * page as not present in pagemap. Returns how many (at most max). */
static size_t wl_gib_ranges(uint64_t (*r)[2], size_t max) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return 0;
  char line[512];
  unsigned long long start = 0, end = 0, kb;
  size_t n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%llx-%llx ", &start, &end) == 2) continue;
    if (sscanf(line, "KernelPageSize: %llu kB", &kb) == 1 && kb == 1048576) {
      r[n][0] = start >> 12;
      r[n][1] = end >> 12;
      n++;
    }
  }
  fclose(f);
  return n;
}

void wl_hot_measure(wl_hotset_t *hs) {
  memset(hs, 0, sizeof *hs);
  size_t npages = 0, cap = 0;
  uint64_t *pages = NULL;
  for (size_t i = 0; i < hot_n; i++) {
    hs->hot_bytes += hot[i].len;
    uint64_t first = hot[i].addr >> 12, last = (hot[i].addr + hot[i].len - 1) >> 12;
    for (uint64_t v = first; v <= last; v++) {
      pages = wl_grow(pages, &cap, (npages + 1) * sizeof *pages);
      pages[npages++] = v;
    }
  }
  if (npages) qsort(pages, npages, sizeof *pages, wl_cmp_u64);
  size_t u = 0;
  for (size_t i = 0; i < npages; i++)
    if (u == 0 || pages[u - 1] != pages[i]) pages[u++] = pages[i];
  npages = u;
  hs->pages_4k = npages;
  hs->floor = (hs->hot_bytes + (2u << 20) - 1) >> 21;
  hs->entries = hs->huge_pages = hs->huge_hugetlb = hs->huge_thp = hs->huge_1g = -1;
  uint64_t gib[64][2];
  size_t ngib = wl_gib_ranges(gib, 64);

  int pm = open("/proc/self/pagemap", O_RDONLY);
  int kf = open("/proc/kpageflags", O_RDONLY);
  if (pm < 0 || kf < 0) {
    hs->source = pm < 0 ? "unavailable:no-pagemap" : "unavailable:kpageflags-needs-root";
  } else {
    long entries = 0, huge = 0, htlb = 0, thp = 0, g1 = 0;
    uint64_t last_huge = UINT64_MAX, last_gib = UINT64_MAX;
    int ok = 1;
    for (size_t i = 0; i < npages && ok; i++) {
      uint64_t e = 0, fl = 0;
      size_t k = 0;
      while (k < ngib && !(pages[i] >= gib[k][0] && pages[i] < gib[k][1])) k++;
      if (k < ngib) { /* one entry per 1 GiB page */
        if (pages[i] >> 18 != last_gib) { entries++; huge++; htlb++; g1++; last_gib = pages[i] >> 18; }
        continue;
      }
      if (pread(pm, &e, 8, (off_t)(pages[i] * 8)) != 8) { ok = 0; break; }
      uint64_t pfn = e & ((1ULL << 55) - 1);
      int present = (int)(e >> 63);
      if (present && pfn == 0) { ok = 0; break; }  /* PFNs hidden: not root */
      int is_htlb = 0, is_thp = 0;
      if (present && pread(kf, &fl, 8, (off_t)(pfn * 8)) == 8) {
        is_htlb = (int)((fl >> KPF_HUGE) & 1);
        is_thp = (int)((fl >> KPF_THP) & 1);
      }
      if (is_htlb || is_thp) {
        uint64_t h = pages[i] >> 9;  /* 2 MiB virtual frame */
        if (h != last_huge) { entries++; huge++; is_htlb ? htlb++ : thp++; last_huge = h; }
      } else {
        entries++;
      }
    }
    if (ok) {
      hs->entries = entries; hs->huge_pages = huge; hs->huge_hugetlb = htlb; hs->huge_thp = thp;
      hs->huge_1g = g1;
      hs->source = "pagemap";
    } else {
      hs->source = "unavailable:pfn-hidden-not-root";
    }
  }
  if (pm >= 0) close(pm);
  if (kf >= 0) close(kf);
  if (pages) munmap(pages, cap);
}

/* ---- trace -------------------------------------------------------------------------------- */
#define WL_TBUF_RECS 65536
typedef struct { uint64_t addr; uint32_t size; uint8_t op, pad[3]; } wl_trec_t;
static int tr_fd = -1, tr_full;
static wl_trec_t *tr_buf;
static size_t tr_n, tr_total;
static long tr_marker = -1;   /* records before the B record; -1: none written */

int wl_trace_on(void) { return tr_fd >= 0 && !tr_full; }
int wl_trace_full(void) { return tr_full; }
size_t wl_trace_count(void) { return tr_total; }

static void wl_trace_flush(void) {
  size_t bytes = tr_n * sizeof *tr_buf, off = 0;
  while (off < bytes) {
    ssize_t w = write(tr_fd, (char *)tr_buf + off, bytes - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) wl_die("writing trace %s: %s", wl_trace_path, strerror(errno));
    off += (size_t)w;
  }
  tr_n = 0;
}

void wl_trace_open(void) {
  if (!wl_trace_path) return;
  tr_fd = open(wl_trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tr_fd < 0) wl_die("cannot create trace file %s: %s", wl_trace_path, strerror(errno));
  tr_buf = mmap(NULL, WL_TBUF_RECS * sizeof *tr_buf, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tr_buf == MAP_FAILED) wl_die("no memory for the trace buffer");
  char hdr[16] = "TLBPTRC";
  uint32_t ver = 1, rb = 16;
  memcpy(hdr + 8, &ver, 4);
  memcpy(hdr + 12, &rb, 4);
  if (write(tr_fd, hdr, 16) != 16) wl_die("writing trace header to %s: %s", wl_trace_path, strerror(errno));
}

void wl_trace_rec(char op, const void *addr, uint32_t size) {
  if (tr_total >= wl_trace_max) { tr_full = 1; return; }
  wl_trec_t *r = &tr_buf[tr_n++];
  r->addr = (uint64_t)(uintptr_t)addr;
  r->size = size;
  r->op = (uint8_t)op;
  r->pad[0] = r->pad[1] = r->pad[2] = 0;
  tr_total++;
  if (tr_n == WL_TBUF_RECS) wl_trace_flush();
}

void wl_trace_mark(void) {
  if (tr_fd < 0 || tr_marker >= 0) return;
  tr_marker = (long)tr_total;
  wl_trec_t *r = &tr_buf[tr_n++];
  memset(r, 0, sizeof *r);
  r->op = 'B';
  if (tr_n == WL_TBUF_RECS) wl_trace_flush();
}

size_t wl_trace_warm_max(void) { return wl_trace_max / 4; }

void wl_trace_close(void) {
  if (tr_fd < 0) return;
  wl_trace_flush();
  close(tr_fd);
  tr_fd = -1;
}

void wl_smaps_copy(void) {
  if (!wl_smaps_path) return;
  int in = open("/proc/self/smaps", O_RDONLY);
  int out = open(wl_smaps_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in < 0 || out < 0) wl_die("cannot copy /proc/self/smaps to %s: %s", wl_smaps_path, strerror(errno));
  char buf[65536];
  ssize_t r;
  while ((r = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)r) != r) wl_die("writing %s: %s", wl_smaps_path, strerror(errno));
  close(in);
  close(out);
}

/* ---- result ------------------------------------------------------------------------------- */
long wl_status_field(const char *text, const char *key) {
  const char *p = strstr(text, key);
  return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

long wl_status_read(int pid, char *buf, size_t n) {
  char path[64];
  if (pid) snprintf(path, sizeof path, "/proc/%d/status", pid);
  else snprintf(path, sizeof path, "/proc/self/status");
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ssize_t k = read(fd, buf, n - 1);
  close(fd);
  if (k <= 0) return -1;
  buf[k] = 0;
  return (long)k;
}

static long self_status_kb(const char *key) {
  char buf[8192];
  if (wl_status_read(0, buf, sizeof buf) < 0) return -1;
  long v = wl_status_field(buf, key);
  return v < 0 ? 0 : v; /* no such field (a kernel without hugetlb): none */
}

static long wl_hugetlb_peak_kb;

void wl_note_peak(void) {
  long kb = self_status_kb("HugetlbPages:");
  long cur = __atomic_load_n(&wl_hugetlb_peak_kb, __ATOMIC_RELAXED);
  while (kb > cur && !__atomic_compare_exchange_n(&wl_hugetlb_peak_kb, &cur, kb, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void wl_result(const char *name, const char *extra, const wl_hotset_t *hs) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long htlb = wl_hugetlb_override_kb >= 0 ? wl_hugetlb_override_kb : self_status_kb("HugetlbPages:");
  if (wl_hugetlb_override_kb < 0 && wl_hugetlb_peak_kb > htlb) htlb = wl_hugetlb_peak_kb;
  long rss = wl_peak_rss_override_kb >= 0 ? wl_peak_rss_override_kb : ru.ru_maxrss;
  printf("RESULT workload=%s %s peak_rss_kb=%ld hugetlb_kb=%ld", name, extra ? extra : "", rss, htlb);
  if (wl_pin) printf(" pinned=%d cpus=%d", __atomic_load_n(&pin_started, __ATOMIC_RELAXED), pin_n);
  if (hs)
    printf(" hot_bytes=%zu hot_pages_4k=%zu hot_entries=%ld hot_huge=%ld hot_huge_hugetlb=%ld"
           " hot_huge_thp=%ld hot_huge_1g=%ld hot_floor=%zu tlb_source=%s",
           hs->hot_bytes, hs->pages_4k, hs->entries, hs->huge_pages, hs->huge_hugetlb,
           hs->huge_thp, hs->huge_1g, hs->floor, hs->source);
  /* which object's malloc this process calls: proves the preload took effect */
  Dl_info di;
  void *(*volatile mf)(size_t) = malloc;
  const char *from = dladdr((void *)mf, &di) && di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
  from = from ? from + 1 : (di.dli_fname && *di.dli_fname ? di.dli_fname : "unknown");
  if (wl_malloc_from_override) from = wl_malloc_from_override;
  char mark[24] = "none";
  if (tr_marker >= 0) snprintf(mark, sizeof mark, "%ld", tr_marker);
  printf(" trace_records=%zu trace_truncated=%d trace_marker=%s malloc_from=%s\n", tr_total, tr_full,
         mark, from);
  fflush(stdout);
}
