/* Allocating threads interrupted by signals: THREADS threads each run OPS malloc/realloc/free
 * operations while a signaller thread sends them SIGUSR1 (handler: async-signal-safe, no
 * malloc) and SIGUSR2 (handler: none installed, ignored) as fast as it can. If the allocator's
 * own locks misbehave under interruption the run hangs: a watchdog (alarm, WATCHDOG_S seconds,
 * below the 300 s ctest allows) then fails it and says how far each worker got.
 *
 * usage: signals [THREADS [OPS_PER_THREAD]]
 */
#include "tp_shim.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_S 200
static atomic_int finished;  /* workers done; the signaller stops after the last */
static atomic_long progress[64]; /* operations done by each worker */
static long ops = 200000;
static int nworkers = 4;
static atomic_ullong handled, sent;
static volatile sig_atomic_t handler_depth;

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;  /* the handler must not disturb the interrupted thread's errno */
  handler_depth++;
  char buf[64];
  memset(buf, 'x', sizeof buf);  /* some work on the stack; nothing that can allocate */
  atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
  handler_depth--;
  errno = saved;
}

/* Async-signal-safe output for the watchdog: strings and decimal numbers through write(2). */
static void say(const char *s) {
  if (write(2, s, strlen(s)) < 0) {}
}
static void say_num(long v) {
  char b[24];
  int i = sizeof b;
  b[--i] = 0;
  do b[--i] = (char)('0' + v % 10); while ((v /= 10) > 0 && i > 0);
  say(b + i);
}

static void on_alarm(int sig) {
  (void)sig;
  say("signals: FAIL: watchdog: after ");
  say_num(WATCHDOG_S);
  say(" s, ");
  say_num(nworkers - atomic_load(&finished));
  say(" of ");
  say_num(nworkers);
  say(" workers still running (a deadlock in the allocator?); operations done of ");
  say_num(ops);
  say(":");
  for (int i = 0; i < nworkers; i++) {
    say(" ");
    say_num(atomic_load(&progress[i]));
  }
  say("\n");
  _exit(1);
}

static void *alloc_loop(void *arg) {
  int me = (int)(uintptr_t)arg;
  unsigned long long rs = (uintptr_t)arg * 31 + 5;
  unsigned char *held[32] = {0};
  size_t sz[32] = {0};
  for (long i = 0; i < ops; i++) {
    atomic_store_explicit(&progress[me], i, memory_order_relaxed);
    unsigned long long r = t_rand(&rs);
    int k = (int)(r % 32);
    if (held[k]) {
      for (size_t j = 0; j < sz[k]; j += 61)
        if (held[k][j] != (unsigned char)k) T_DIE("signals: block %d corrupted at byte %zu", k, j);
    }
    size_t s = (r >> 10) % 50 == 0 ? 1 + (r >> 20) % (1 << 20) : 1 + (r >> 20) % 2048;
    if (held[k] && (r >> 8) % 3 == 0) {
      unsigned char *np = realloc(held[k], s);
      if (!np) T_DIE("signals: realloc(%zu) failed", s);
      held[k] = np;
    } else {
      free(held[k]);
      held[k] = malloc(s);
      if (!held[k]) T_DIE("signals: malloc(%zu) failed", s);
    }
    sz[k] = s;
    memset(held[k], k, s);
  }
  for (int k = 0; k < 32; k++) free(held[k]);
  atomic_store(&progress[me], ops);
  atomic_fetch_add(&finished, 1);
  return NULL;
}

static pthread_t workers[64];

static void *signaller(void *arg) {
  (void)arg;
  unsigned long long rs = 99;
  while (atomic_load(&finished) < nworkers) {
    unsigned long long r = t_rand(&rs);
    int w = (int)(r % (unsigned)nworkers);
    if (pthread_kill(workers[w], (r >> 8) % 8 == 0 ? SIGUSR2 : SIGUSR1) == 0)
      atomic_fetch_add_explicit(&sent, 1, memory_order_relaxed);
    if ((r >> 16) % 4 == 0) {
      struct timespec ts = {0, (long)((r >> 24) % 20000)};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nworkers = atoi(argv[1]);
  if (argc > 2) ops = atol(argv[2]);
  if (nworkers < 1 || nworkers > 64 || ops < 1) {
    fprintf(stderr, "usage: signals [THREADS 1..64 [OPS_PER_THREAD >= 1]]\n");
    return 2;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  /* no SA_RESTART: interrupted system calls (futex, mmap...) see EINTR */
  sigaction(SIGUSR1, &sa, NULL);
  signal(SIGUSR2, SIG_IGN);
  signal(SIGALRM, on_alarm);
  alarm(WATCHDOG_S);
  for (int i = 0; i < nworkers; i++)
    if (pthread_create(&workers[i], NULL, alloc_loop, (void *)(intptr_t)i)) T_DIE("signals: pthread_create failed");
  pthread_t sig;
  pthread_create(&sig, NULL, signaller, NULL);
  pthread_join(sig, NULL);  /* first: it must not signal a thread that has been joined */
  for (int i = 0; i < nworkers; i++) pthread_join(workers[i], NULL);
  alarm(0);
  printf("signals: %d threads x %ld ops; %llu signals sent, %llu handled\n", nworkers, ops,
         (unsigned long long)sent, (unsigned long long)handled);
  if (handled == 0) {
    printf("signals: FAIL: no signal was handled, the test proved nothing\n");
    return 1;
  }
  return 0;
}
