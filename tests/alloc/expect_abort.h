/* Misuse must abort with tlbpack's own message. A Criterion test declared `.signal = SIGABRT`
 * passes on any abort, an assert inside tlbpack included; expect_abort() instead runs the
 * faulty call in a child process with stderr captured and checks both the signal and the
 * message: exactly one line on stderr, the expected text, optionally followed by ": reason".
 *
 *   expect_abort(call_free, p, "tlbpack: double free of %p", p);
 */
#ifndef TP_EXPECT_ABORT_H
#define TP_EXPECT_ABORT_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn(arg) in a child process; its stderr goes to err (NUL-terminated, cut at cap - 1
 * bytes). Returns the child's wait status. */
static int tp_run_captured(void (*fn)(void *), void *arg, char *err, size_t cap) {
  int pfd[2];
  cr_assert_eq(pipe(pfd), 0, "pipe failed");
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0, "fork failed");
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); /* the abort is expected: no core file */
    dup2(pfd[1], 2);
    close(pfd[0]);
    close(pfd[1]);
    fn(arg);
    _exit(0); /* returned: no abort */
  }
  close(pfd[1]);
  size_t n = 0;
  char sink[512];
  for (;;) {
    ssize_t r = n + 1 < cap ? read(pfd[0], err + n, cap - 1 - n) : read(pfd[0], sink, sizeof sink);
    if (r <= 0) break;
    if (n + 1 < cap) n += (size_t)r;
  }
  err[n] = 0;
  close(pfd[0]);
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid, "waitpid failed");
  return st;
}

static void expect_abort(void (*fn)(void *), void *arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void expect_abort(void (*fn)(void *), void *arg, const char *fmt, ...) {
  char want[256], err[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(want, sizeof want, fmt, ap);
  va_end(ap);
  int st = tp_run_captured(fn, arg, err, sizeof err);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
            "expected an abort (SIGABRT) with '%s'; the child %s %d instead; its stderr: '%s'", want,
            WIFSIGNALED(st) ? "died of signal" : "exited with status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
            err);
  size_t wl = strlen(want), lines = 0;
  for (const char *c = err; *c; c++) lines += *c == '\n';
  int match = strncmp(err, want, wl) == 0 && (err[wl] == '\n' || (err[wl] == ':' && err[wl + 1] == ' '));
  cr_assert(match && lines == 1, "aborted, but stderr is '%s'; expected one line '%s' (or '%s: reason')", err, want,
            want);
}

#endif
