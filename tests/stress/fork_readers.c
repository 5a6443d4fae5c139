/* A multi-threaded program that forks while its other threads use the heap: two readers
 * read() 64 KiB chunks of a numbered stream from pipes into fresh heap buffers (a system call
 * that writes into the heap), two writers with every signal blocked (sigfillset +
 * pthread_sigmask, "signals go to one thread") allocate, write and check blocks of
 * 64 B - 64 KiB, and the main thread grows its heap by 2 MB and forks a child that checks
 * every chunk the parent wrote, again and again. Two feeder threads write the streams from
 * buffers on their stacks.
 *
 * Fails (exit 1, the reasons on stdout) on: a read() that fails (EFAULT: the kernel could not
 * write into a heap buffer), a stream number out of order, a writer's block that lost its
 * pattern, a child that saw memory other than the parent's at fork() or died, or no fork at
 * all. A thread killed by a signal ends the whole process: its status is the test's.
 *
 * usage: fork_readers [SECONDS [MAX_HEAP_MIB]]
 */
#include "tp_shim.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 << 10)
static atomic_int stop;
static atomic_ulong read_errors, stream_errors, block_errors, reads, blocks_checked;
static int errno_seen;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* Feeder: the stream 0, 1, 2, ... as 8-byte numbers, from its stack. */
static void *feeder(void *arg) {
  int fd = *(int *)arg;
  uint64_t buf[1024], next = 0;
  while (!atomic_load(&stop)) {
    for (int i = 0; i < 1024; i++) buf[i] = next++;
    size_t off = 0;
    while (off < sizeof buf) {
      ssize_t k = write(fd, (char *)buf + off, sizeof buf - off);
      if (k < 0) {
        if (errno == EINTR) continue;
        return NULL; /* reader gone */
      }
      off += (size_t)k;
    }
  }
  close(fd);
  return NULL;
}

/* Reader: 64 KiB at a time into a fresh heap buffer; the numbers must follow on. */
static void *reader(void *arg) {
  int fd = *(int *)arg;
  uint64_t expect = 0;
  size_t have = 0; /* bytes of a partial number carried over */
  unsigned char carry[8];
  while (!atomic_load(&stop)) {
    unsigned char *b = malloc(CHUNK);
    if (!b) T_DIE("fork_readers: malloc(%d) failed", CHUNK);
    ssize_t k = read(fd, b, CHUNK);
    if (k < 0) {
      if (errno != EINTR) {
        errno_seen = errno;
        atomic_fetch_add(&read_errors, 1);
        printf("fork_readers: FAIL: read() into a heap buffer failed: %s\n", strerror(errno));
        fflush(stdout);
      }
      free(b);
      continue;
    }
    atomic_fetch_add(&reads, 1);
    for (ssize_t i = 0; i < k; i++) {
      carry[have++] = b[i];
      if (have == 8) {
        uint64_t v;
        memcpy(&v, carry, 8);
        if (v != expect && atomic_fetch_add(&stream_errors, 1) < 3) {
          printf("fork_readers: FAIL: stream number %llu where %llu was due\n", (unsigned long long)v,
                 (unsigned long long)expect);
          fflush(stdout);
        }
        expect = v + 1;
        have = 0;
      }
    }
    free(b);
  }
  close(fd);
  return NULL;
}

/* Writer: every signal blocked; blocks of 64 B - 64 KiB, each filled with its own pattern and
 * checked before it is freed. */
static void *writer(void *arg) {
  unsigned long long rng = (uintptr_t)arg | 1;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  enum { N = 256 };
  unsigned char *p[N] = {0};
  size_t n[N] = {0};
  unsigned char tag[N] = {0};
  while (!atomic_load(&stop)) {
    unsigned i = (unsigned)(t_rand(&rng) % N);
    if (p[i]) {
      for (size_t o = 0; o < n[i]; o += 61)
        if (p[i][o] != (unsigned char)(tag[i] + o)) {
          if (atomic_fetch_add(&block_errors, 1) < 3) {
            printf("fork_readers: FAIL: a writer's block %p of %zu bytes lost its pattern at %zu\n", (void *)p[i], n[i], o);
            fflush(stdout);
          }
          break;
        }
      atomic_fetch_add(&blocks_checked, 1);
      free(p[i]);
    }
    n[i] = 64 + (size_t)(t_rand(&rng) % (64 << 10));
    p[i] = malloc(n[i]);
    if (!p[i]) T_DIE("fork_readers: malloc(%zu) failed", n[i]);
    tag[i] = (unsigned char)t_rand(&rng);
    for (size_t o = 0; o < n[i]; o++) p[i][o] = (unsigned char)(tag[i] + o);
  }
  for (unsigned i = 0; i < N; i++) free(p[i]);
  return NULL;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 5;
  long max_mib = argc > 2 ? atol(argv[2]) : 200;
  if (secs <= 0 || max_mib < 2) {
    fprintf(stderr, "usage: fork_readers [SECONDS > 0 [MAX_HEAP_MIB >= 2]]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a feeder writing after its reader stopped sees EPIPE */
  pthread_t th[6];
  int fds[2][2], nt = 0;
  for (int r = 0; r < 2; r++) {
    if (pipe(fds[r]) != 0) T_DIE("fork_readers: pipe: %s", strerror(errno));
    pthread_create(&th[nt++], NULL, feeder, &fds[r][1]);
    pthread_create(&th[nt++], NULL, reader, &fds[r][0]);
  }
  for (int w = 0; w < 2; w++) pthread_create(&th[nt++], NULL, writer, (void *)(uintptr_t)(w * 7919 + 13));
  size_t cap = (size_t)max_mib / 2, nc = 0;
  unsigned char **chunk = calloc(cap, sizeof *chunk);
  unsigned long forks = 0, child_bad = 0, child_signalled = 0;
  double end = now() + secs;
  while (now() < end) {
    if (nc < cap) { /* the heap grows by 2 MB, each chunk its own pattern */
      size_t sz = 2u << 20;
      unsigned char *c = malloc(sz);
      if (!c) T_DIE("fork_readers: malloc(2 MB) failed");
      for (size_t o = 0; o < sz; o += 512) c[o] = (unsigned char)(nc * 31 + o / 512);
      chunk[nc++] = c;
    }
    pid_t pid = fork();
    if (pid < 0) T_DIE("fork_readers: fork: %s", strerror(errno));
    if (pid == 0) {
      for (size_t i = 0; i < nc; i++)
        for (size_t o = 0; o < (2u << 20); o += 512)
          if (chunk[i][o] != (unsigned char)(i * 31 + o / 512)) _exit(3);
      _exit(0);
    }
    forks++;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(st)) {
      child_signalled++;
      printf("fork_readers: FAIL: child died of signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
    } else if (WEXITSTATUS(st) != 0) {
      child_bad++;
      printf("fork_readers: FAIL: child saw memory other than the parent's at fork() (status %d)\n", WEXITSTATUS(st));
    }
    fflush(stdout);
  }
  atomic_store(&stop, 1);
  for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
  printf("fork_readers: %lu forks, %lu reads into heap buffers (%lu failed%s%s), %lu stream errors, %lu writer blocks "
         "checked (%lu bad), %lu children bad, %lu died of a signal\n",
         forks, (unsigned long)reads, (unsigned long)read_errors, errno_seen ? ": " : "",
         errno_seen ? strerror(errno_seen) : "", (unsigned long)stream_errors, (unsigned long)blocks_checked,
         (unsigned long)block_errors, child_bad, child_signalled);
  for (size_t i = 0; i < nc; i++) free(chunk[i]);
  free(chunk);
  return read_errors || stream_errors || block_errors || child_bad || child_signalled || forks == 0 ? 1 : 0;
}
