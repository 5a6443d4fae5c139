/* malloc/realloc/free during process teardown: in atexit handlers (registered early from a
 * constructor, late from main, and from inside another handler), in pthread key destructors
 * (which store a new value, so glibc runs them again), in thread_local destructors
 * (__cxa_thread_atexit_impl, what C++ thread_local uses) and in ELF destructors. Each stage
 * writes one line to stdout with write(2); the caller checks that every line is there and the
 * exit status is 0.
 */
#include "tp_shim.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

extern void *__dso_handle;
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);

static void say(const char *s) {
  if (write(1, s, strlen(s)) < 0) {}
}

/* Allocates, fills and frees a mix of sizes; aborts if anything comes back wrong. */
static void churn(const char *who, int rounds) {
  for (int r = 0; r < rounds; r++) {
    char *a = malloc(24 + r), *b = calloc(100, 3);
    char *c = malloc((size_t)1 << (10 + r % 12));
    if (!a || !b || !c) T_DIE("exit_alloc: allocation failed in %s", who);
    memset(a, 'a', 24 + r);
    for (int i = 0; i < 300; i++) if (b[i]) T_DIE("exit_alloc: calloc not zeroed in %s", who);
    c = realloc(c, 3 << 20);
    if (!c) T_DIE("exit_alloc: realloc failed in %s", who);
    c[(3 << 20) - 1] = 1;
    free(a); free(b); free(c);
  }
}

static void atexit_inner(void) { churn("nested atexit handler", 20); say("stage: nested atexit\n"); }
static void atexit_late(void) {
  churn("atexit handler", 50);
  char *keep = strdup("still allocating while exiting");  /* left live on purpose */
  if (!keep) T_DIE("exit_alloc: strdup failed");
  atexit(atexit_inner);  /* registered during exit: runs after this one */
  say("stage: atexit (main)\n");
}
static void atexit_early(void) { churn("early atexit handler", 50); say("stage: atexit (constructor)\n"); }

__attribute__((constructor(101))) static void ctor(void) { churn("constructor", 5); atexit(atexit_early); }
__attribute__((destructor(101))) static void dtor(void) { churn("ELF destructor", 20); say("stage: ELF destructor\n"); }

static pthread_key_t key;
static atomic_int key_dtor_runs, tls_dtor_runs;

static void key_dtor(void *v) {
  int round = (int)(intptr_t)((char *)v)[0];
  free(v);
  churn("key destructor", 10);
  atomic_fetch_add(&key_dtor_runs, 1);
  if (round < 3) {  /* a new value: glibc calls the destructor again (up to 4 rounds) */
    char *n = malloc(64);
    if (!n) T_DIE("exit_alloc: malloc in key destructor failed");
    n[0] = (char)(round + 1);
    pthread_setspecific(key, n);
  }
}

static void tls_dtor(void *obj) {
  free(*(void **)obj);
  churn("thread_local destructor", 10);
  atomic_fetch_add(&tls_dtor_runs, 1);
}

static __thread void *tls_obj;

static void *thread_main(void *arg) {
  char *v = malloc(64);
  if (!v) T_DIE("exit_alloc: malloc failed");
  v[0] = 0;
  pthread_setspecific(key, v);
  tls_obj = malloc(1000);
  __cxa_thread_atexit_impl(tls_dtor, &tls_obj, &__dso_handle);
  churn("thread", 20);
  return arg;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 16;
  atexit(atexit_late);
  pthread_key_create(&key, key_dtor);
  for (int i = 0; i < threads; i++) {
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    if (i % 2) pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, thread_main, NULL)) T_DIE("exit_alloc: pthread_create failed");
    if (i % 2 == 0) pthread_join(t, NULL);
    pthread_attr_destroy(&at);
  }
  /* Detached threads finish on their own time: up to WAIT_S seconds, well inside the 120 s
   * ctest allows, for a busy machine. */
  enum { WAIT_S = 60 };
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  now = t0;
  while ((atomic_load(&tls_dtor_runs) < threads || atomic_load(&key_dtor_runs) < threads * 4) &&
         now.tv_sec - t0.tv_sec < WAIT_S) {
    usleep(1000);
    clock_gettime(CLOCK_MONOTONIC, &now);
  }
  int k = atomic_load(&key_dtor_runs), t = atomic_load(&tls_dtor_runs);
  char line[256];
  snprintf(line, sizeof line, "stage: threads %d, key destructor runs %d, thread_local destructor runs %d\n",
           threads, k, t);
  say(line);
  if (t != threads || k != threads * 4) {
    snprintf(line, sizeof line,
             "exit_alloc: FAIL: after %d s the threads' destructors had not all run: key destructor %d of %d runs, "
             "thread_local destructor %d of %d\n", WAIT_S, k, threads * 4, t, threads);
    say(line);
    return 1;
  }
  /* The main thread's own thread_local destructors run at exit(), too. */
  tls_obj = malloc(10);
  __cxa_thread_atexit_impl(tls_dtor, &tls_obj, &__dso_handle);
  say("stage: main returns\n");
  return 0;
}
