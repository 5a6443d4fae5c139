/* The stop's fallback (alloc/fork.c): a thread that blocks every signal with a raw
 * rt_sigprocmask system call (which tlbpack's pthread_sigmask cannot see) never answers the
 * stop signal. The fork must still complete, after the stop's wait, with the pool pages moved
 * under the old guard, and the child must see the parent's memory. The thread only sleeps (a
 * thread that blocks SIGSEGV and writes to a page while it moves is the fallback's documented
 * limit). The main thread's heap is on pool pages (run with start_kb:0).
 * Exit 0 when the child saw every byte and the fork returned; the stats (stats:json) say
 * whether the fallback ran (forks_guarded, fork_stop_timeouts).
 * usage: fork_raw_mask [HEAP_MIB]
 */
#include "tp_shim.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int ready, stop;

static void *sleeper(void *arg) {
  (void)arg;
  unsigned long all = ~0ul; /* the kernel's sigset: 64 bits */
  if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, sizeof all) != 0) T_DIE("rt_sigprocmask: %s", strerror(errno));
  atomic_store(&ready, 1);
  while (!atomic_load(&stop)) {
    struct timespec t = {0, 10000000};
    nanosleep(&t, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  long mib = argc > 1 ? atol(argv[1]) : 16;
  size_t n = (size_t)mib << 20;
  unsigned char *p = malloc(n);
  if (!p) T_DIE("malloc(%zu) failed", n);
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + 3);
  pthread_t th;
  pthread_create(&th, NULL, sleeper, NULL);
  while (!atomic_load(&ready)) sched_yield();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t c = fork();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (c < 0) T_DIE("fork: %s", strerror(errno));
  if (c == 0) {
    for (size_t i = 0; i < n; i++)
      if (p[i] != (unsigned char)(i * 7 + 3)) _exit(3);
    _exit(0);
  }
  int st;
  while (waitpid(c, &st, 0) < 0 && errno == EINTR) {}
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  printf("fork_raw_mask: fork took %.0f ms; the child %s\n", ms,
         ok ? "saw every byte" : WIFSIGNALED(st) ? "died of a signal" : "saw other bytes");
  free(p);
  return ok ? 0 : 1;
}
