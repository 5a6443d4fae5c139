/* Running one benchmark process: a clean allocator environment, stdout and stderr captured,
 * a wall-clock limit. */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* variables that select or tune an allocator: never inherited from the caller */
static int allocator_var(const char *e) {
  static const char *const pre[] = {"LD_PRELOAD=", "GLIBC_TUNABLES=", "MALLOC_CONF=", "MIMALLOC_",
                                    "TLBPACK_CONF=", "TCMALLOC_", "JE_MALLOC_CONF=", NULL};
  for (int i = 0; pre[i]; i++)
    if (!strncmp(e, pre[i], strlen(pre[i]))) return 1;
  return 0;
}

int tb_self_dir(char *buf, size_t n) {
  ssize_t r = readlink("/proc/self/exe", buf, n - 1);
  if (r <= 0) return -1;
  buf[r] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return -1;
  *slash = 0;
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct { char *p; size_t n, cap, limit; } buf_t;
/* keeps everything up to limit, then only the tail (stderr can be chatty) */
static void buf_add(buf_t *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 4096;
    while (nc < b->n + n + 1) nc *= 2;
    char *q = realloc(b->p, nc);
    if (!q) return;
    b->p = q;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
  if (b->limit && b->n > b->limit) {
    size_t keep = b->limit / 2;
    memmove(b->p, b->p + b->n - keep, keep);
    b->n = keep;
    b->p[b->n] = 0;
  }
}

int tb_run(char *const argv[], const char *const env_add[], double timeout_s, tb_proc_t *p) {
  memset(p, 0, sizeof *p);
  p->status = -1;
  size_t ne = 0, na = 0;
  while (environ[ne]) ne++;
  while (env_add && env_add[na]) na++;
  char **envp = calloc(ne + na + 1, sizeof *envp);
  if (!envp) return -1;
  size_t k = 0;
  for (size_t i = 0; i < ne; i++)
    if (!allocator_var(environ[i])) envp[k++] = environ[i];
  for (size_t i = 0; i < na; i++) envp[k++] = (char *)env_add[i];
  envp[k] = NULL;

  int po[2], pe[2];
  if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) { free(envp); return -1; }
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) { free(envp); close(po[0]); close(po[1]); close(pe[0]); close(pe[1]); return -1; }
  if (pid == 0) {
    setpgid(0, 0);  /* its own group: a timeout kills its children too (sqlite3, valgrind) */
    dup2(po[1], 1);
    dup2(pe[1], 2);
    execve(argv[0], argv, envp);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  free(envp);
  close(po[1]);
  close(pe[1]);
  buf_t out = {0}, err = {.limit = 16384};
  struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  int open_fds = 2;
  char chunk[8192];
  while (open_fds) {
    double left = timeout_s - (now_s() - t0);
    if (left <= 0) { p->timed_out = 1; kill(-pid, SIGKILL); break; }
    int r = poll(fds, 2, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
      if (got > 0) buf_add(i ? &err : &out, chunk, (size_t)got);
      else { close(fds[i].fd); fds[i].fd = -1; open_fds--; }
    }
  }
  for (int i = 0; i < 2; i++) if (fds[i].fd >= 0) close(fds[i].fd);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  p->wall_s = now_s() - t0;
  p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  p->out = out.p ? out.p : strdup("");
  p->err = err.p ? err.p : strdup("");
  return 0;
}

void tb_proc_free(tb_proc_t *p) {
  free(p->out);
  free(p->err);
  p->out = p->err = NULL;
}
