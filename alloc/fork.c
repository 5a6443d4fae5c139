/* The heap's part of tlbpack's fork handlers: the heap lock held across fork(), and the heap's
 * pool pages moved off the pool before it, so that no hugetlbfs page is ever shared with a
 * child; while they move, the process's other threads are stopped (a signal whose handler
 * waits), so that none of them writes to a page being copied. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Fork and the pool. A private hugetlb page shared with a fork child is copied on the first
 * write to it, by whichever process writes first, from the pool's free pages. With none free
 * the writer gets SIGBUS (or, when the writer owns the mapping's reservation, the kernel
 * unmaps the page from the children, which die when they touch it); a write the kernel makes
 * for a system call fails with EFAULT instead. Free pages counted before the fork prove
 * nothing: other processes take pool pages at any moment, and the copies may be needed hours
 * later by a long-lived child. So no pool page is shared, whatever the pool holds:
 * - retained empty pool pages go back to the pool (_tp_heap_release_empty_pool);
 * - every other pool page the heap holds is moved onto anonymous memory (THP where the kernel
 *   has one): copied, and the copy moved over it with mremap. A lazy run's page not touched yet
 *   is replaced by fresh anonymous memory instead (both read as zeros).
 * With other threads running, they are stopped first (stop_others): each is sent
 * TP_STOP_SIGNAL, whose handler says so and waits until the pages have moved. A stopped thread
 * runs no code and no system call of it is in the middle of writing to the heap (a signal is
 * taken only between system calls, and SA_RESTART restarts most of the interrupted ones), so no
 * page needs to be made read-only: no write faults, no system call fails with EFAULT, whatever
 * signals the threads block (the Front's pthread_sigmask, sigprocmask, sigsuspend and sigwait
 * keep TP_STOP_SIGNAL deliverable). A thread that does not answer within
 * TP_STOP_WAIT_MS (it blocked the signal with a raw system call, or a debugger stopped it) is
 * the fallback's case: the pages are read-only while they move, and a write to one of them
 * waits in a SIGSEGV handler and is retried on the copy (a system call's write into one fails
 * with EFAULT). Alone, the forking thread is the only writer, and nothing is stopped. Anonymous
 * pages are copied on write by the kernel from ordinary memory, as under any other allocator.
 * The pages both processes take after the fork come from the pool again: the next fork moves
 * only those. */
static int is_hugetlb(const tp_hpage_t *h) { return h->source == TP_SRC_HUGETLB || h->source == TP_SRC_1G; }

static _Atomic uintptr_t converting; /* the range being moved, 0 when none */
static size_t converting_len = TP_HPAGE;
static struct sigaction segv_old;

/* Both of fork.c's handlers (segv_wait, stop_handler) go in front of the program's own: old is
 * what the program had for sig. Returns 1 when the program's handler ran (or, with ignore_ok,
 * it ignores sig); otherwise its default action is put back and 0 is returned, for the caller
 * to let that action happen. */
static int run_old_handler(const struct sigaction *old, int sig, siginfo_t *si, void *uc, int ignore_ok) {
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction) {
      old->sa_sigaction(sig, si, uc);
      return 1;
    }
  } else if (old->sa_handler == SIG_IGN) {
    if (ignore_ok) return 1;
  } else if (old->sa_handler != SIG_DFL) {
    old->sa_handler(sig);
    return 1;
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, NULL);
  return 0;
}

/* Installs fn for sig in front of the program's handler (saved in *old), unless it is there
 * already: a program that installed a handler of its own since gets ours in front again.
 * mask_all: no other signal runs while fn does. */
static int handler_in_front(int sig, void (*fn)(int, siginfo_t *, void *), struct sigaction *old, int mask_all) {
  struct sigaction cur;
  if (sigaction(sig, NULL, &cur) != 0) return -1;
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fn) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  if (mask_all) sigfillset(&sa.sa_mask);
  else sigemptyset(&sa.sa_mask);
  *old = cur;
  return sigaction(sig, &sa, NULL);
}

static void segv_wait(int sig, siginfo_t *si, void *uc) {
  uintptr_t a = (uintptr_t)si->si_addr, c = atomic_load(&converting);
  if (c != 0 && a - c < converting_len) {
    while (atomic_load(&converting) == c) sched_yield();
    return; /* the write is retried, on the copy */
  }
  /* A page moved after this fault was taken (a writable heap page cannot fault otherwise). */
  tp_hpage_t *h = _tp_hpage_of(si->si_addr);
  if (h != NULL && h->state != TP_HP_FREE && h->source != TP_SRC_NONE && !is_hugetlb(h)) return;
  /* Not ours: what the program would have had without tlbpack. A fault cannot be ignored: with
   * the default back, the fault repeats and ends the process as it would have. */
  run_old_handler(&segv_old, sig, si, uc, 0);
}

/* The handler stays once installed: a writer's fault taken during a move may be delivered after
 * the move is over, and the disposition is read at delivery. Faults that are not a moved heap
 * page go to the program's previous handler (or its default action). If the program has
 * installed a handler of its own since, ours goes in front of it again. */
static int segv_handler_in_front(void) { return handler_in_front(SIGSEGV, segv_wait, &segv_old, 0); }

/* Whether any of [a, a + len) is in memory (a lazy run's pages are faulted in as touched). */
static int touched(void *a, size_t len) {
  unsigned char v[TP_HPAGE / 4096];
  for (size_t o = 0; o < len; o += TP_HPAGE)
    if (mincore((char *)a + o, TP_HPAGE, v) != 0 || (v[0] & 1)) return 1; /* unknown: as touched */
  return 0;
}

/* Anonymous memory for copies of len bytes, 2 MiB-aligned and asking for THP; NULL when not
 * even that much address space is left. *base and *span are what to unmap around it. */
static char *huge_area(size_t len, char **base, size_t *span) {
  char *tmp = mmap(NULL, len + TP_HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED) return NULL;
  *base = tmp;
  *span = len + TP_HPAGE;
  char *al = (char *)(((uintptr_t)tmp + TP_HPAGE - 1) & ~(uintptr_t)(TP_HPAGE - 1));
  madvise(al, len, MADV_HUGEPAGE);
  return al;
}

/* Anonymous memory for a copy of len bytes, backed: huge_area's where the kernel gives that much
 * (a THP), else anywhere (4 KiB pages). */
static char *copy_area(size_t len, char **base, size_t *span) {
  char *al = huge_area(len, base, span);
  if (al != NULL) {
    /* Backed before the copy, as huge pages where the kernel has them: faulted in by the copy
     * itself, they came 4 KiB at a time or through a slower fault path. */
    madvise(al, len, MADV_POPULATE_WRITE);
    return al;
  }
  char *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *base = tmp;
  *span = len;
  return tmp == MAP_FAILED ? NULL : tmp;
}

/* Moves [a, a + len) onto anonymous memory, its contents kept; 0 on success. With `guard`
 * (other threads run) the range is read-only while it is copied and moved: only for the copy
 * itself, the copy area being backed beforehand. */
static int move_range(void *a, size_t len, int lazy, int guard) {
  char *base = NULL, *al = NULL;
  size_t span = 0;
  int rc = 0;
  converting_len = len;
  if (lazy) {
    atomic_store(&converting, (uintptr_t)a);
    if (guard) mprotect(a, len, PROT_READ); /* from here on, writers wait (segv_wait) */
    if (!touched(a, len)) {
      /* Never written: fresh anonymous memory in place reads the same zeros. */
      if (mmap(a, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != a) rc = -1;
      else madvise(a, len, MADV_HUGEPAGE);
      goto done;
    }
  }
  if ((al = copy_area(len, &base, &span)) == NULL) {
    rc = -1;
    goto done;
  }
  if (!lazy) {
    atomic_store(&converting, (uintptr_t)a);
    if (guard) mprotect(a, len, PROT_READ);
  }
  memcpy(al, a, len);
  if (mremap(al, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) != a)
    _tp_fatal("fork: could not move hugetlb page %p onto anonymous memory", a);
  /* What is left of the copy area around the moved range. */
  if (al > base) munmap(base, (size_t)(al - base));
  if (base + span > al + len) munmap(al + len, (size_t)(base + span - (al + len)));
done:
  if (rc != 0 && guard && atomic_load(&converting)) mprotect(a, len, PROT_READ | PROT_WRITE); /* as it was */
  atomic_store(&converting, 0);
  return rc;
}

/* Whether this process runs other threads (the Threads: line of /proc/self/status; unknown:
 * as if it did). */
static int other_threads(void) { return _tp_os_file_long("/proc/self/status", "Threads:") != 1; }

/* ---- stopping the other threads ------------------------------------------------------ */
/* Each thread sent TP_STOP_SIGNAL in this stop has a slot: its tid and the stop it answered. A
 * real-time signal queues, so a late answer to an earlier stop (one that timed out) is told
 * from this stop's by the round it names. */
typedef struct {
  pid_t tid;
  _Atomic unsigned answered; /* the round this thread answered */
} stop_slot_t;

static stop_slot_t *stop_slots;     /* mapped once (TP_STOP_MAX_THREADS slots), touched as used */
static _Atomic size_t stop_n;       /* slots in use this stop */
static _Atomic unsigned stop_round, resume_round; /* stopped while resume_round < stop_round */
static _Atomic unsigned stop_answers;               /* futex word: answers so far */
static struct sigaction stop_old;                    /* the program's own handler, if any */
static _Atomic pid_t stop_by;                        /* the forking thread of the stop on */

static long futex(_Atomic unsigned *w, int op, unsigned v, const struct timespec *t) {
  return syscall(SYS_futex, (unsigned *)w, op | FUTEX_PRIVATE_FLAG, v, t, NULL, 0);
}

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }


/* The stopped thread's side: answer, then wait (no write to the heap meanwhile) until the
 * forking thread has moved the pages. errno is the interrupted code's. */
static void stop_handler(int sig, siginfo_t *si, void *uc) {
  if (si->si_code != SI_TKILL || si->si_pid != getpid()) {
    /* Not tlbpack's: what the program would have had (its default ends the process). */
    if (!run_old_handler(&stop_old, sig, si, uc, 1)) syscall(SYS_tgkill, getpid(), my_tid(), sig);
    return;
  }
  int saved = errno;
  unsigned r = atomic_load(&stop_round), rr;
  /* A stop is on: this thread waits until it is over. It answers once the forking thread has
   * listed it (a late signal of an earlier stop can bring it here before that: this stop's own
   * signal then waits behind this handler, so the answer is given from here). */
  int answered = 0;
  pid_t me = my_tid();
  /* The forking thread itself never waits for its own stop (a late signal of a stop it did not
   * answer, delivered now that its mask lets it through). */
  while (me != atomic_load(&stop_by) && (rr = atomic_load(&resume_round)) < r) {
    for (size_t i = 0; !answered && i < atomic_load(&stop_n); i++)
      if (stop_slots[i].tid == me) {
        atomic_store(&stop_slots[i].answered, r);
        atomic_fetch_add(&stop_answers, 1);
        futex(&stop_answers, FUTEX_WAKE, INT_MAX, NULL);
        answered = 1;
      }
    struct timespec t = {0, answered ? 100000000L : 1000000L};
    futex(&resume_round, FUTEX_WAIT, rr, &t);
  }
  /* else a late signal of a stop that is over: nothing to do */
  errno = saved;
}

int _tp_fork_stop_signal(void) { return SIGRTMAX - TP_STOP_SIGNAL_BELOW_MAX; }

/* nothing else runs in a stopped thread */
static int stop_handler_in_front(void) { return handler_in_front(_tp_fork_stop_signal(), stop_handler, &stop_old, 1); }

static int slot_of(pid_t tid) {
  for (size_t i = 0; i < stop_n; i++)
    if (stop_slots[i].tid == tid) return 1;
  return 0;
}

static int slot_add(pid_t tid) {
  if (stop_slots == NULL) {
    void *t = mmap(NULL, TP_STOP_MAX_THREADS * sizeof *stop_slots, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (t == MAP_FAILED) return -1;
    stop_slots = t;
  }
  size_t n = atomic_load(&stop_n);
  if (n == TP_STOP_MAX_THREADS) return -1;
  stop_slots[n].tid = tid;
  atomic_store(&stop_slots[n].answered, 0);
  atomic_store(&stop_n, n + 1); /* the slot is whole before a handler can look for it */
  return 0;
}

/* The process's threads but this one not yet in the table: each is added and sent the signal.
 * Returns how many were sent, -1 when the task list cannot be read. No allocation (the heap
 * lock is held): the directory is read with getdents64 into a buffer on the stack. */
static long signal_new_threads(pid_t self, int sig) {
  int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  long sent = 0, n;
  while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
    for (long o = 0; o < n;) {
      struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d = (void *)(buf + o);
      o += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      pid_t tid = (pid_t)strtol(d->name, NULL, 10);
      if (tid == self || slot_of(tid)) continue;
      if (slot_add(tid) != 0) {
        sent = -1;
        break;
      }
      if (syscall(SYS_tgkill, getpid(), tid, sig) == 0) sent++;
      else stop_slots[stop_n - 1].answered = atomic_load(&stop_round); /* gone already */
    }
    if (sent < 0) break;
  }
  close(fd);
  return n < 0 ? -1 : sent;
}

/* Whether thread tid can still answer: it exists and is not a zombie (a main thread that called
 * pthread_exit stays listed as one). */
static int thread_alive(pid_t tid) {
  if (syscall(SYS_tgkill, getpid(), tid, 0) != 0) return 0;
  char path[64], st[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t k = read(fd, st, sizeof st - 1);
  close(fd);
  if (k <= 0) return 0;
  st[k] = 0;
  const char *p = strrchr(st, ')');
  return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* Stops every other thread of the process (they wait in stop_handler until resume_others).
 * Returns 0 when all did, 1 when some did not answer in TP_STOP_WAIT_MS (the caller then
 * guards the pages), -1 when the threads could not be listed or signalled at all. */
static int stop_others(void) {
  int sig = _tp_fork_stop_signal();
  if (stop_handler_in_front() != 0) return -1;
  pid_t self = my_tid();
  atomic_store(&stop_by, self);
  atomic_store(&stop_n, 0);
  unsigned r = atomic_fetch_add(&stop_round, 1) + 1;
  double deadline = _tp_mono_ms() + TP_STOP_WAIT_MS;
  for (;;) {
    long sent = signal_new_threads(self, sig);
    if (sent < 0) return stop_n ? 1 : -1;
    if (sent == 0) return 0; /* every thread listed has answered, and no new one appeared */
    /* Wait for this batch: a thread that exits or turns zombie meanwhile is done. */
    for (;;) {
      size_t waiting = 0;
      unsigned seen = atomic_load(&stop_answers);
      for (size_t i = 0; i < stop_n; i++)
        if (atomic_load(&stop_slots[i].answered) != r) {
          if (thread_alive(stop_slots[i].tid)) waiting++;
          else atomic_store(&stop_slots[i].answered, r);
        }
      if (waiting == 0) break;
      if (_tp_mono_ms() > deadline) {
        _tp_heap_ctr.fork_stop_timeouts++;
        return 1;
      }
      struct timespec t = {0, 1000000}; /* 1 ms: then liveness again */
      futex(&stop_answers, FUTEX_WAIT, seen, &t);
    }
    /* New threads may have been created before the ones listed stopped: list again. */
  }
}

static void resume_others(void) {
  atomic_store(&resume_round, atomic_load(&stop_round));
  futex(&resume_round, FUTEX_WAKE, INT_MAX, NULL);
}

typedef struct {
  int guard;
  size_t failed;
} move_t;

/* The records of [a, a + n hpages) after their move: THP now. */
static void moved(uintptr_t a, size_t n) {
  _tp_os_window_forget((void *)a, n * TP_HPAGE); /* the copy took this part of the window's mapping */
  for (size_t i = 0; i < n; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(a + i * TP_HPAGE));
    _tp_heap_ctr.pages_by_source[x->source]--;
    _tp_heap_ctr.pages_by_source[TP_SRC_THP]++;
    x->source = TP_SRC_THP;
    x->lazy = 0;
  }
  _tp_heap_ctr.fork_unshared += n;
}

/* The hpages of the pool range that starts at h: 1 for a pool hpage, a whole 1 GiB page from
 * its first hpage (the kernel cannot split it), 0 when h starts none (not on the pool, or inside
 * a 1 GiB page). */
static size_t pool_range(const tp_hpage_t *h) {
  if (!is_hugetlb(h)) return 0;
  if (h->source != TP_SRC_1G) return 1;
  return (h->addr & (TP_GIB - 1)) == 0 ? TP_GIB / TP_HPAGE : 0;
}

/* The guarded moves (some thread did not stop): one page at a time, each read-only while it
 * is copied. */
static void move_off_pool(tp_hpage_t *h, void *arg) {
  move_t *m = arg;
  size_t n = pool_range(h);
  if (n == 0) return;
  if (move_range((void *)h->addr, n * TP_HPAGE, h->lazy, m->guard) != 0) {
    m->failed++;
    return;
  }
  moved(h->addr, n);
}

/* ---- the unguarded moves, their copies made on every CPU the process may use -------------
 * With nothing else writing to the heap (no other thread, or all of them stopped), the pool
 * pages are moved in batches: one anonymous area is mapped for a batch's copies, the copies
 * are backed and made 2 MiB at a time by the forking thread and up to TP_COPY_HELPERS helper
 * threads (one fewer than the CPUs the process may run on), and each copy is then moved over
 * its page with mremap by the forking thread. Backing the copies is most of a fork's time
 * (the kernel zeroes each huge page, and a VM's host backs memory the guest touches for the
 * first time); the helpers split it and the copying between CPUs. A helper is a bare thread
 * (clone), not a pthread: pthread_create may call malloc, whose locks the fork handlers hold.
 * It runs only copy_items (memcpy and madvise; all its signals blocked, as the forking
 * thread's are while it moves pages) and exits; the forking thread waits for it on its thread
 * ID, which the kernel clears at its exit. */
#define TP_COPY_HELPERS 3
#define TP_COPY_HELPER_STACK (64u << 10)
#define TP_MOVE_BATCH (64u << 20) /* the copies mapped at once (a 1 GiB page is one batch) */

typedef struct {
  uintptr_t a;        /* the range moved: a pool hpage, or a whole 1 GiB page */
  size_t len;
  char *copy;         /* its copy, in the batch's area */
  _Atomic int failed; /* a part of the copy could not be backed: the range stays */
} move_job_t;

typedef struct {
  char *src, *dst;
  move_job_t *job;
} copy_item_t; /* 2 MiB of a job */

typedef struct {
  copy_item_t *item;
  size_t n;
  _Atomic size_t next; /* the next item to take */
} copy_work_t;

/* madvise, its error returned (-errno) instead of set: a helper thread shares errno's storage. */
static long raw_madvise(void *a, size_t len, int advice) {
#if defined(__x86_64__)
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_madvise), "D"(a), "S"(len), "d"((long)advice) : "rcx", "r11", "memory");
  return r;
#else
  return madvise(a, len, advice) == 0 ? 0 : -errno;
#endif
}

/* Backs and makes copies until none is left. Only madvise and memcpy: a helper shares the
 * forking thread's thread-local data (errno's storage too, which raw_madvise leaves alone). */
static void copy_items(copy_work_t *w) {
  for (;;) {
    size_t i = atomic_fetch_add(&w->next, 1);
    if (i >= w->n) return;
    copy_item_t *c = &w->item[i];
    if (atomic_load(&c->job->failed)) continue;
    /* EINVAL: a kernel without MADV_POPULATE_WRITE (5.14); the copy then faults it in. */
    long r = raw_madvise(c->dst, TP_HPAGE, MADV_POPULATE_WRITE);
    if (r != 0 && r != -EINVAL) {
      atomic_store(&c->job->failed, 1);
      continue;
    }
    memcpy(c->dst, c->src, TP_HPAGE);
  }
}

static int copy_helper(void *arg) {
  copy_items(arg);
  return 0; /* glibc's clone ends the thread (exit, not exit_group) */
}

/* Helper threads for n items: one fewer than the CPUs this process may run on, at most
 * TP_COPY_HELPERS, and none for fewer than 4 items. */
static int copy_helpers_for(size_t n) {
  cpu_set_t cpus;
  if (n < 4 || sched_getaffinity(0, sizeof cpus, &cpus) != 0) return 0;
  size_t h = (size_t)CPU_COUNT(&cpus);
  h = h > 1 ? h - 1 : 0;
  if (h > TP_COPY_HELPERS) h = TP_COPY_HELPERS;
  if (h > n / 2) h = n / 2;
  return (int)h;
}

static void *thread_pointer(void) {
#if defined(__x86_64__)
  void *tp;
  __asm__("mov %%fs:0, %0" : "=r"(tp)); /* the TCB's first word points at itself */
  return tp;
#else
  return __builtin_thread_pointer();
#endif
}

static void copy_all(copy_work_t *w) {
  struct {
    char *stack;
    _Atomic int tid; /* set by the kernel at clone, cleared at the helper's exit */
  } h[TP_COPY_HELPERS];
  int want = copy_helpers_for(w->n), started = 0;
  for (int i = 0; i < want; i++) {
    char *st = mmap(NULL, TP_COPY_HELPER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (st == MAP_FAILED) break;
    atomic_store(&h[started].tid, 0);
    /* glibc's own flags for a thread (a seccomp filter that lets pthreads be made lets this
     * one be), its thread pointer the forking thread's. */
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    if (clone(copy_helper, st + TP_COPY_HELPER_STACK, flags, w, (int *)&h[started].tid, thread_pointer(),
              (int *)&h[started].tid) == -1) {
      munmap(st, TP_COPY_HELPER_STACK);
      break; /* the forking thread makes the copies itself */
    }
    h[started++].stack = st;
  }
  copy_items(w);
  for (int i = 0; i < started; i++) {
    int t;
    /* The kernel's wake at a thread's exit is a shared futex's: no FUTEX_PRIVATE_FLAG. */
    while ((t = atomic_load(&h[i].tid)) != 0) {
      struct timespec ts = {0, 10000000};
      syscall(SYS_futex, (int *)&h[i].tid, FUTEX_WAIT, t, &ts, NULL, 0);
    }
    munmap(h[i].stack, TP_COPY_HELPER_STACK);
  }
  _tp_heap_ctr.fork_copy_helpers += (uint64_t)started;
}

/* Moves a batch of jobs (lazy pages never touched excepted: the caller replaced those). */
static void move_batch(move_job_t *job, size_t nj, copy_item_t *item, size_t *failed) {
  size_t total = 0;
  for (size_t i = 0; i < nj; i++) total += job[i].len;
  char *base, *al;
  size_t span;
  if ((al = huge_area(total, &base, &span)) == NULL) {
    for (size_t i = 0; i < nj; i++) /* one at a time, each with an area of its own */
      if (move_range((void *)job[i].a, job[i].len, 0, 0) != 0) (*failed)++;
      else moved(job[i].a, job[i].len / TP_HPAGE);
    return;
  }
  /* In the heap's order: the copies of neighbouring pages lie side by side and, moved, join one
   * mapping. */
  copy_work_t w = {item, 0, 0};
  char *at = al;
  for (size_t i = 0; i < nj; i++) {
    job[i].copy = at;
    for (size_t o = 0; o < job[i].len; o += TP_HPAGE)
      item[w.n++] = (copy_item_t){(char *)job[i].a + o, at + o, &job[i]};
    at += job[i].len;
  }
  copy_all(&w);
  for (size_t i = 0; i < nj; i++) {
    if (atomic_load(&job[i].failed)) {
      (*failed)++;
      continue;
    }
    if (mremap(job[i].copy, job[i].len, job[i].len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)job[i].a) != (void *)job[i].a)
      _tp_fatal("fork: could not move hugetlb page %p onto anonymous memory", (void *)job[i].a);
    moved(job[i].a, job[i].len / TP_HPAGE);
  }
  munmap(base, span); /* what was not moved out of it: the alignment, failed copies */
}

typedef struct {
  move_job_t *job;
  size_t n;
  size_t failed;
} jobs_t;

/* Lists the pool pages to copy; a lazy page not touched yet is replaced here (no copy). */
static void list_job(tp_hpage_t *h, void *arg) {
  jobs_t *js = arg;
  size_t n = pool_range(h);
  if (n == 0) return;
  if (h->lazy && !touched((void *)h->addr, n * TP_HPAGE)) {
    if (move_range((void *)h->addr, n * TP_HPAGE, 1, 0) != 0) js->failed++;
    else moved(h->addr, n);
    return;
  }
  js->job[js->n++] = (move_job_t){h->addr, n * TP_HPAGE, NULL, 0};
}

/* The unguarded moves of the `held` pool hpages: 0, or -1 when no memory was left to list them
 * (the caller moves them one at a time). */
static int move_all(size_t held, size_t *failed) {
  size_t bytes = held * (sizeof(move_job_t) + sizeof(copy_item_t));
  void *scratch = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (scratch == MAP_FAILED) return -1;
  jobs_t js = {scratch, 0, 0};
  copy_item_t *item = (copy_item_t *)((char *)scratch + held * sizeof(move_job_t));
  _tp_heap_foreach(list_job, &js);
  for (size_t i = 0; i < js.n;) {
    size_t k = i, total = 0;
    do total += js.job[k++].len;
    while (k < js.n && total + js.job[k].len <= TP_MOVE_BATCH);
    move_batch(js.job + i, k - i, item, &js.failed);
    i = k;
  }
  *failed += js.failed;
  munmap(scratch, bytes);
  return 0;
}

static void count_hugetlb(tp_hpage_t *h, void *arg) { *(size_t *)arg += is_hugetlb(h); }

void _tp_heap_prefork(void) {
  _tp_lock(&_tp_heap_lock);
  _tp_heap_release_empty_pool();
  size_t held = 0;
  _tp_heap_foreach(count_hugetlb, &held);
  if (held == 0) return;
  _tp_heap_ctr.forks_unshared++;
  /* No signal handler of this thread runs during the moves: one that wrote to the page being
   * moved would wait for a move that cannot go on. Faults stay deliverable. */
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGILL);
  sigdelset(&all, SIGFPE);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  /* Alone, or with every other thread stopped, nothing else can write to the heap meanwhile:
   * no page is made read-only, so no write of another thread waits and no system call of
   * another thread can fail with EFAULT. Only threads that did not stop leave the guard on. */
  int others = other_threads(), stopped = others ? stop_others() : 0;
  move_t m = {stopped != 0, 0};
  if (stopped != 0) _tp_heap_ctr.forks_guarded++;
  if (m.guard && segv_handler_in_front() != 0)
    _tp_message("fork: no SIGSEGV handler for moving pool pages: %s", strerror(errno));
  int err = errno; /* a failed mmap or madvise of the moves is none of the program's business */
  if (m.guard || move_all(held, &m.failed) != 0) _tp_heap_foreach(move_off_pool, &m);
  errno = err;
  if (others) resume_others();
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (m.failed) {
    _tp_heap_ctr.fork_unshare_failed += m.failed;
    _tp_message("fork: %zu pool pages could not be moved off the pool (no memory for their copies): "
                "they are shared with the child", m.failed);
  }
}

void _tp_heap_postfork(int child) {
  if (child) _tp_lock_reinit(&_tp_heap_lock);
  _tp_heap_cow_note(child); /* recollapse.c */
  if (!child) _tp_unlock(&_tp_heap_lock);
}
