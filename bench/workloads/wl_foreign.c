/* Foreign programs: pipes, waiting for their lines, and their resident memory in TLB entries. */
#define _GNU_SOURCE
#include "wl_foreign.h"
#include "wl_common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- resident memory ---------------------------------------------------------------------- */

static long kb_after(const char *line, const char *key) {
  size_t n = strlen(key);
  return strncmp(line, key, n) ? -1 : strtol(line + n, NULL, 10);
}

int wl_resident(pid_t pid, wl_resident_t *r) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
  return wl_resident_file(path, r);
}

int wl_resident_file(const char *path, wl_resident_t *r) {
  char line[512];
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  memset(r, 0, sizeof *r);
  long kps = 4, huge = 0, v;
  /* hugetlb pages are summed per mapping, then divided by that mapping's page size */
#define CLOSE_MAPPING() do { if (huge) r->entries_anon += huge / (kps > 0 ? kps : 2048); huge = 0; } while (0)
  while (fgets(line, sizeof line, f)) {
    /* a mapping's header starts with its lower-case hex address; field names are capitalised */
    if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
      CLOSE_MAPPING();
      kps = 4;
      continue;
    }
    if ((v = kb_after(line, "Rss:")) >= 0) r->rss_kb += v;
    else if ((v = kb_after(line, "Anonymous:")) >= 0) r->anon_kb += v;
    else if ((v = kb_after(line, "AnonHugePages:")) >= 0) r->thp_kb += v;
    else if ((v = kb_after(line, "FilePmdMapped:")) >= 0) r->file_pmd_kb += v;
    else if ((v = kb_after(line, "ShmemPmdMapped:")) >= 0) r->file_pmd_kb += v;
    else if ((v = kb_after(line, "Shared_Hugetlb:")) >= 0) { r->hugetlb_kb += v; huge += v; }
    else if ((v = kb_after(line, "Private_Hugetlb:")) >= 0) { r->hugetlb_kb += v; huge += v; }
    else if ((v = kb_after(line, "KernelPageSize:")) >= 0) kps = v;
  }
  CLOSE_MAPPING();
#undef CLOSE_MAPPING
  fclose(f);
  r->file_kb = r->rss_kb - r->anon_kb;
  long anon4k = r->anon_kb - r->thp_kb, file4k = r->file_kb - r->file_pmd_kb;
  r->entries_anon += r->thp_kb / 2048 + (anon4k > 0 ? anon4k / 4 : 0);
  r->entries_file = r->file_pmd_kb / 2048 + (file4k > 0 ? file4k / 4 : 0);
  return 0;
}

void wl_resident_kv(const wl_resident_t *r, char *buf, size_t n) {
  snprintf(buf, n,
           " res_entries=%ld res_entries_anon=%ld res_entries_file=%ld res_rss_kb=%ld res_hugetlb_kb=%ld"
           " res_anon_kb=%ld res_file_kb=%ld res_thp_kb=%ld",
           r->entries_anon + r->entries_file, r->entries_anon, r->entries_file, r->rss_kb, r->hugetlb_kb,
           r->anon_kb, r->file_kb, r->thp_kb);
}

/* ---- a child on pipes -------------------------------------------------------------------- */

void wl_child_start(wl_child_t *c, char *const argv[], char *const envp[], const char *log) {
  int pi[2], po[2];
  memset(c, 0, sizeof *c);
  snprintf(c->log, sizeof c->log, "%s", log);
  if (pipe2(pi, O_CLOEXEC) || pipe2(po, O_CLOEXEC)) wl_die("pipe: %s", strerror(errno));
  c->pid = fork();
  if (c->pid < 0) wl_die("fork: %s", strerror(errno));
  if (c->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fe = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe < 0) _exit(126);
    dup2(pi[0], 0); dup2(po[1], 1); dup2(fe, 2);
    execve(argv[0], argv, envp ? envp : environ);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(pi[0]);
  close(po[1]);
  c->in = pi[1];
  c->out = po[0];
  signal(SIGPIPE, SIG_IGN);
}

void wl_child_write(wl_child_t *c, const char *s, size_t n) {
  while (n) {
    ssize_t w = write(c->in, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) wl_die("%s stopped reading its input: %s", c->log, wl_last_line(c->log));
    s += w;
    n -= (size_t)w;
  }
}

const char *wl_child_wait(wl_child_t *c, const char *prefix, double timeout_s, double *at_ns,
                          void (*each_line)(const char *line, void *arg), void *arg) {
  static char line[4096];
  double end = wl_now_ns() + timeout_s * 1e9;
  for (;;) {
    char *nl;
    while ((nl = memchr(c->buf, '\n', c->len))) {
      size_t l = (size_t)(nl - c->buf);
      if (l >= sizeof line) l = sizeof line - 1;
      memcpy(line, c->buf, l);
      line[l] = 0;
      size_t used = (size_t)(nl - c->buf) + 1;
      memmove(c->buf, c->buf + used, c->len - used);
      c->len -= used;
      if (!strncmp(line, prefix, strlen(prefix))) {
        if (at_ns) *at_ns = wl_now_ns();
        return line;
      }
      if (each_line) each_line(line, arg);
    }
    if (c->len == sizeof c->buf) c->len = 0;   /* an endless line: drop it */
    double left = end - wl_now_ns();
    if (left <= 0) wl_die("no '%s' from the program within %.0f s (log: %s)", prefix, timeout_s, wl_last_line(c->log));
    struct pollfd p = {c->out, POLLIN, 0};
    int k = poll(&p, 1, (int)(left / 1e6) + 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) continue;
    ssize_t r = read(c->out, c->buf + c->len, sizeof c->buf - c->len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) wl_die("the program ended its output before '%s': %s", prefix, wl_last_line(c->log));
    c->len += (size_t)r;
  }
}

void wl_child_read_all(wl_child_t *c, double timeout_s, void (*each_line)(const char *line, void *arg),
                       void *arg) {
  double end = wl_now_ns() + timeout_s * 1e9;
  for (;;) {
    char *nl;
    while ((nl = memchr(c->buf, '\n', c->len))) {
      *nl = 0;
      each_line(c->buf, arg);
      size_t used = (size_t)(nl - c->buf) + 1;
      memmove(c->buf, c->buf + used, c->len - used);
      c->len -= used;
    }
    if (c->len == sizeof c->buf) c->len = 0;
    double left = end - wl_now_ns();
    if (left <= 0) wl_die("the program's output did not end within %.0f s (log: %s)", timeout_s, wl_last_line(c->log));
    struct pollfd p = {c->out, POLLIN, 0};
    if (poll(&p, 1, (int)(left / 1e6) + 1) <= 0) continue;
    ssize_t r = read(c->out, c->buf + c->len, sizeof c->buf - c->len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (c->len) { c->buf[c->len < sizeof c->buf ? c->len : sizeof c->buf - 1] = 0; each_line(c->buf, arg); c->len = 0; }
      return;
    }
    c->len += (size_t)r;
  }
}

void wl_child_close_input(wl_child_t *c) {
  if (c->in >= 0) close(c->in);
  c->in = -1;
}

void wl_child_finish(wl_child_t *c, double timeout_s, struct rusage *ru) {
  wl_child_close_input(c);
  char sink[4096];
  int fl = fcntl(c->out, F_GETFL);
  fcntl(c->out, F_SETFL, fl | O_NONBLOCK);
  int st = 0;
  struct rusage r0;
  for (double end = wl_now_ns() + timeout_s * 1e9;;) {
    while (read(c->out, sink, sizeof sink) > 0) {}   /* never let it block on a full pipe */
    pid_t w = wait4(c->pid, &st, WNOHANG, ru ? ru : &r0);
    if (w == c->pid) break;
    if (wl_now_ns() > end) {
      kill(c->pid, SIGKILL);
      waitpid(c->pid, NULL, 0);
      wl_die("the program did not exit within %.0f s of the end of its input", timeout_s);
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  close(c->out);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    wl_die("the program ended with status 0x%x: %s", st, wl_last_line(c->log));
}

long wl_status_kb(pid_t pid, const char *key) {
  char buf[8192];
  if (wl_status_read((int)pid, buf, sizeof buf) < 0) return -1;
  long v = wl_status_field(buf, key);
  return v < 0 ? 0 : v; /* no such field (a kernel without hugetlb): none */
}

pid_t wl_spawn_quiet(char *const argv[], int out_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  else posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) wl_die("cannot run %s: %s", argv[0], strerror(rc));
  return pid;
}

const char *wl_last_line(const char *path) {
  static char last[256];
  char line[1024];
  FILE *f = fopen(path, "r");
  snprintf(last, sizeof last, "%s", f ? "(empty log)" : "(no log)");
  if (!f) return last;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (line[0]) snprintf(last, sizeof last, "%.255s", line);
  }
  fclose(f);
  return last;
}

/* ---- valgrind lackey traces --------------------------------------------------------------- */
typedef struct { uint64_t addr; uint32_t size; char op; } lk_rec_t;

size_t wl_lackey_convert(int fd, uintptr_t mark, wl_lackey_span_t *span) {
  static char buf[1 << 16];
  char line[128];
  size_t ln = 0, cap = wl_trace_max ? wl_trace_max : 1, n = 0, total = 0;
  size_t start = (size_t)-1, end = (size_t)-1; /* record indexes of the two marks */
  lk_rec_t *ring = mmap(NULL, cap * sizeof *ring, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) wl_die("no memory for a %zu-record trace ring", cap);
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < r; i++) {
      char c = buf[i];
      if (c != '\n') { if (ln < sizeof line - 1) line[ln++] = c; continue; }
      line[ln] = 0;
      ln = 0;
      if (line[0] != ' ' || (line[1] != 'L' && line[1] != 'S' && line[1] != 'M')) continue;
      char *e;
      unsigned long long a = strtoull(line + 3, &e, 16);
      unsigned long sz = *e == ',' ? strtoul(e + 1, NULL, 10) : 1;
      total++;
      if (end != (size_t)-1) continue;                 /* after the second mark: the program's exit */
      if (mark && (a & ~(uint64_t)4095) == mark) {     /* the program touched its mark page */
        if ((a & 4095) >= 2048) end = n;
        else if (start == (size_t)-1) start = n;
        continue;
      }
      lk_rec_t *rec = &ring[n++ % cap];
      rec->addr = a;
      rec->size = (uint32_t)(sz ? sz : 1);
      rec->op = line[1] == 'L' ? 'R' : 'W';
    }
  }
  int seen_end = end != (size_t)-1;
  if (!seen_end) end = n;
  size_t first = end > cap ? end - cap : 0;
  /* The measured region starts at the first mark when the window holds it with no more warm-up
   * before it than wl_trace_warm_max; otherwise after the window's first quarter. */
  size_t b = first + (end - first) / 4;
  if (start != (size_t)-1 && start >= first) {
    b = start;
    if (start - first > wl_trace_warm_max()) first = start - wl_trace_warm_max();
  }
  for (size_t i = first; i < end; i++) {
    if (i == b) wl_trace_mark();
    lk_rec_t *rec = &ring[i % cap];
    WL_TR(rec->op, (const void *)(uintptr_t)rec->addr, rec->size);
  }
  munmap(ring, cap * sizeof *ring);
  if (span) {
    span->marked = start != (size_t)-1 && seen_end;
    span->between = span->marked ? end - start : 0;
    span->measured = end - b;
  }
  return total;
}
