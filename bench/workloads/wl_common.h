/* What every benchmark workload shares: flags, a fast RNG, a clock, the hot-set registry that
 * turns hot object addresses into the TLB entries they need (pagemap + kpageflags), the binary
 * trace writer (format in tlbsim(1), TRACE FORMATS), the smaps copy and the one RESULT line.
 *
 * Contract with the harness: a workload prints exactly one line starting "RESULT " on stdout,
 * made of space-separated key=value pairs (values without spaces). Everything else goes to
 * stderr. Exit status 0 on success, 2 on bad flags. */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- flags ------------------------------------------------------------------------------- */
typedef struct wl_flag_s {
  const char *name;  /* without the leading "--" */
  const char *help;
  char kind;         /* 'u' = unsigned long, 's' = string, 'b' = boolean (no value) */
  void *dst;         /* unsigned long*, const char**, int* */
} wl_flag_t;

/* Parses argv against flags (terminated by a {NULL} entry) plus the common ones
 * (--trace FILE, --smaps FILE, --trace-max N, --seed N, --pin, --help). Exits 2 with a message
 * that names the bad flag. */
void wl_parse_flags(const char *prog, int argc, char **argv, const wl_flag_t *flags);

extern const char *wl_trace_path;   /* --trace FILE, or NULL */
extern const char *wl_smaps_path;   /* --smaps FILE, or NULL */
extern unsigned long wl_trace_max;  /* records at most (default 3,000,000) */
extern unsigned long wl_seed;
extern int wl_pin;                  /* --pin: wl_thread_start pins thread i to the i-th allowed CPU */

/* Starts the workload's thread i (fn gets (void *)i). With --pin it runs on the i-th CPU of
 * those the process may use at start (round robin), so that a two-thread row measures threads on
 * two CPUs every run, not whichever placement the scheduler picked; the RESULT line then says
 * pinned=N (threads started pinned) and cpus=M. Returns pthread_create's result. */
int wl_thread_start(pthread_t *thread, void *(*fn)(void *), long i);

/* ---- RNG and clock ------------------------------------------------------------------------ */
static inline uint64_t wl_rand(uint64_t *s) {  /* xorshift64* */
  uint64_t x = *s;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}
static inline uint64_t wl_rand_range(uint64_t *s, uint64_t lo, uint64_t hi) { /* [lo, hi] */
  return lo + wl_rand(s) % (hi - lo + 1);
}
double wl_now_ns(void);

/* ---- hot set ------------------------------------------------------------------------------ */
/* Register each hot object (bytes read in the measured phase). Storage is mmap'd, so
 * registering does not disturb the allocator under test. */
void wl_hot_add(const void *p, size_t n);
void wl_hot_reset(void);

typedef struct wl_hotset_s {
  size_t hot_bytes;
  size_t pages_4k;       /* distinct 4 KiB pages holding hot bytes */
  long entries;          /* TLB entries: huge pages holding hot bytes + other 4 KiB pages; -1 unknown */
  long huge_pages;       /* of which huge (hugetlbfs or THP); -1 unknown */
  long huge_hugetlb;     /* huge pages from hugetlbfs */
  long huge_thp;         /* huge pages that are THP */
  long huge_1g;          /* of the hugetlbfs ones, 1 GiB pages (one entry per GiB) */
  size_t floor;          /* ceil(hot_bytes / 2 MiB) */
  const char *source;    /* "pagemap" or why not: "unavailable:<reason>" */
} wl_hotset_t;
void wl_hot_measure(wl_hotset_t *out);

/* ---- trace -------------------------------------------------------------------------------- */
/* Records go to wl_trace_path (if set) in the binary format; the writer stops silently after
 * wl_trace_max records (wl_trace_full() says so). Buffers are mmap'd, not malloc'd. */
int wl_trace_on(void);            /* nonzero while recording */
void wl_trace_open(void);         /* opens wl_trace_path (no-op when unset) */
void wl_trace_rec(char op, const void *addr, uint32_t size);
int wl_trace_full(void);
size_t wl_trace_count(void);
void wl_trace_close(void);
/* Writes the B record (the measured region begins: the point of the traced run that stands for
 * the start of the timed phase; `tlbsim --warmup marker` counts from there). Once per trace;
 * written even when the trace is full, so that a B record is never lost. The records before it
 * are the warm-up: a workload keeps them below wl_trace_warm_max(). */
void wl_trace_mark(void);
size_t wl_trace_warm_max(void);   /* a quarter of wl_trace_max */
#define WL_TR(op, p, n) do { if (wl_trace_on()) wl_trace_rec((op), (p), (uint32_t)(n)); } while (0)

/* Copies /proc/self/smaps to wl_smaps_path (if set). */
void wl_smaps_copy(void);

/* ---- result ------------------------------------------------------------------------------- */
/* Prints "RESULT workload=NAME <extra> peak_rss_kb=.. hugetlb_kb=.. hot_*=.. trace_records=..".
 * `extra` is a preformatted "key=value key=value" string; hs may be NULL (no hot set). */
void wl_result(const char *name, const char *extra, const wl_hotset_t *hs);
/* When >= 0, reported as peak_rss_kb instead of this process's own (a workload that measures a
 * child program sets it from wait4). */
extern long wl_peak_rss_override_kb;
extern long wl_hugetlb_override_kb;  /* likewise for hugetlb_kb */
/* Notes this process's hugetlb pages now: a workload calls it where its data is at its peak,
 * before it frees it (any thread may). hugetlb_kb reports the most noted or held at the end:
 * an allocator that gives pool pages back as the data is freed would otherwise be measured
 * after it did (RSS has its kernel-kept peak, VmHWM; hugetlb pages have none). */
void wl_note_peak(void);
/* When set, reported as malloc_from instead of this process's own (a workload whose allocator
 * under test serves a child program, e.g. redis-server, says which object the child's malloc is). */
extern const char *wl_malloc_from_override;

/* The number after key ("VmHWM:", "HugetlbPages:") in the text of a /proc/PID/status, or -1
 * when the text has no such field. */
long wl_status_field(const char *text, const char *key);
/* The text of /proc/PID/status (pid 0: this process's own) in buf, NUL-terminated: its length,
 * or -1 when it cannot be read. */
long wl_status_read(int pid, char *buf, size_t n);

/* Dies with "PROG: message" on stderr, exit 1 (allocation failure and the like). */
void wl_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Keeps the compiler from dropping a computed value. */
extern volatile uint64_t wl_sink;

#endif
