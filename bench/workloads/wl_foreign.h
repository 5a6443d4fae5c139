/* Workloads that run a foreign program (redis-server, sqlite3, perl) under the allocator under
 * test: starting it with pipes, waiting for a line it prints, and what its resident memory
 * costs in TLB entries, read from /proc/PID/smaps.
 *
 * A program's hot set is unknown, but the TLB entries needed to map everything it holds resident
 * are not: one per huge page (hugetlbfs pages by their page size, THP by 2 MiB) and one per other
 * resident 4 KiB page. That is the figure these workloads report, sampled at the program's peak
 * (its data loaded and worked on, before it frees anything or exits), anonymous memory (the heap:
 * what the allocator decides) and file-backed memory (the program's code, libraries, mapped
 * files) apart. */
#ifndef WL_FOREIGN_H
#define WL_FOREIGN_H

#include <stddef.h>
#include <sys/resource.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct wl_resident_s {
  long rss_kb;          /* Rss summed over every mapping (hugetlbfs pages are not in it) */
  long hugetlb_kb;      /* Private_Hugetlb + Shared_Hugetlb */
  long anon_kb;         /* of Rss: Anonymous (the heap, stacks, copied-on-write pages) */
  long file_kb;         /* of Rss: the rest (page cache: code, libraries, mapped files, shmem) */
  long thp_kb;          /* AnonHugePages */
  long file_pmd_kb;     /* FilePmdMapped + ShmemPmdMapped */
  long entries_anon;    /* hugetlb / its page size + THP / 2 MiB + (anon - THP) / 4 KiB */
  long entries_file;    /* file PMD-mapped / 2 MiB + (file - PMD-mapped) / 4 KiB */
} wl_resident_t;

/* Reads /proc/PID/smaps (or a copy of one). Returns 0, or -1 when it cannot be read. */
int wl_resident(pid_t pid, wl_resident_t *r);
int wl_resident_file(const char *smaps, wl_resident_t *r);
/* Formats r as RESULT fields: " res_entries=.. res_entries_anon=.. res_entries_file=..
 * res_rss_kb=.. res_hugetlb_kb=.. res_anon_kb=.. res_file_kb=.. res_thp_kb=..". */
void wl_resident_kv(const wl_resident_t *r, char *buf, size_t n);

/* A program with its stdin and stdout on pipes, stderr to a log file. */
typedef struct wl_child_s {
  pid_t pid;
  int in, out;          /* write end of its stdin, read end of its stdout */
  char log[4096];       /* its stderr */
  char buf[65536];      /* stdout read so far, not yet consumed as lines */
  size_t len;
} wl_child_t;

/* Starts argv[0] (a path) with envp (NULL: this environment), killed if this process dies. */
void wl_child_start(wl_child_t *c, char *const argv[], char *const envp[], const char *log);
/* Writes all of s to its stdin; dies if it has gone. */
void wl_child_write(wl_child_t *c, const char *s, size_t n);
/* Reads its stdout up to a line starting with prefix; returns that line (without the newline,
 * valid until the next call) and the clock (wl_now_ns) when it arrived. Dies, naming the log's
 * last line, on end of output or after timeout_s. Lines before it are passed to each_line
 * (may be NULL). */
const char *wl_child_wait(wl_child_t *c, const char *prefix, double timeout_s, double *at_ns,
                          void (*each_line)(const char *line, void *arg), void *arg);
/* Passes every remaining line of its stdout to each_line, up to the end of its output (within
 * timeout_s; dies after it). */
void wl_child_read_all(wl_child_t *c, double timeout_s, void (*each_line)(const char *line, void *arg),
                       void *arg);
/* Closes its stdin (the program sees the end of its input); wl_child_wait still reads its output. */
void wl_child_close_input(wl_child_t *c);
/* Closes its stdin and waits for it (up to timeout_s, then it is killed); dies unless it exits 0.
 * Its rusage in *ru when not NULL. */
void wl_child_finish(wl_child_t *c, double timeout_s, struct rusage *ru);
/* A kB field of /proc/PID/status ("VmHWM:", "HugetlbPages:"), or -1. */
long wl_status_kb(pid_t pid, const char *key);
/* Starts argv[0] (looked up on PATH) with this environment, its stdout on out_fd (-1:
 * /dev/null); dies, naming it, when it cannot be started. Returns its pid. */
pid_t wl_spawn_quiet(char *const argv[], int out_fd);
/* The last non-empty line of a file (a log), for messages. */
const char *wl_last_line(const char *path);

/* Reads valgrind lackey's log (--tool=lackey --trace-mem=yes) from fd and writes its data
 * loads, stores and modifies (instruction fetches dropped) to the trace (wl_trace_open first):
 * the last wl_trace_max of them. mark 0: the measured region (B record) starts after the first
 * quarter of those. mark = a page's address: the program writes its first half where its
 * measured phase starts and its second half where it ends; those accesses are not traced,
 * nothing after the end is, and the region starts at the first (with up to wl_trace_warm_max records of warm-up before
 * it) when the window holds it. span (may be NULL) says where the region fell. Returns the data
 * accesses lackey reported. */
typedef struct wl_lackey_span_s {
  int marked;          /* both marks seen */
  size_t between;      /* records between the marks (the whole measured phase) */
  size_t measured;     /* records from the B record to the end of the trace */
} wl_lackey_span_t;
size_t wl_lackey_convert(int fd, uintptr_t mark, wl_lackey_span_t *span);

#endif
