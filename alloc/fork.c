/* The heap's part of tlbpack's fork handlers: the heap lock held across fork(), and the heap's
 * pool pages moved off the pool before it, so that no hugetlbfs page is ever shared with a
 * child. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
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
 * With other threads running, a page is read-only while it moves: a thread that writes to it
 * then takes a SIGSEGV, which a handler turns into a wait, and its write is retried on the
 * copy. Alone, the forking thread is the only writer, and nothing is made read-only. Anonymous pages are copied on write by the
 * kernel from ordinary memory, as under any other allocator. The pages both processes take
 * after the fork come from the pool again: the next fork moves only those. */
static int is_hugetlb(const tp_hpage_t *h) { return h->source == TP_SRC_HUGETLB || h->source == TP_SRC_1G; }

static _Atomic uintptr_t converting; /* the range being moved, 0 when none */
static size_t converting_len = TP_HPAGE;
static struct sigaction segv_old;

static void segv_wait(int sig, siginfo_t *si, void *uc) {
  uintptr_t a = (uintptr_t)si->si_addr, c = atomic_load(&converting);
  if (c != 0 && a - c < converting_len) {
    while (atomic_load(&converting) == c) sched_yield();
    return; /* the write is retried, on the copy */
  }
  /* A page moved after this fault was taken (a writable heap page cannot fault otherwise). */
  tp_hpage_t *h = _tp_hpage_of(si->si_addr);
  if (h != NULL && h->state != TP_HP_FREE && h->source != TP_SRC_NONE && !is_hugetlb(h)) return;
  /* Not ours: what the program would have had without tlbpack. */
  if (segv_old.sa_flags & SA_SIGINFO) {
    if (segv_old.sa_sigaction) {
      segv_old.sa_sigaction(sig, si, uc);
      return;
    }
  } else if (segv_old.sa_handler != SIG_DFL && segv_old.sa_handler != SIG_IGN) {
    segv_old.sa_handler(sig);
    return;
  }
  /* Default action: back to it, and the fault repeats and ends the process as it would have. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGSEGV, &dfl, NULL);
}

/* The handler stays once installed: a writer's fault taken during a move may be delivered after
 * the move is over, and the disposition is read at delivery. Faults that are not a moved heap
 * page go to the program's previous handler (or its default action). If the program has
 * installed a handler of its own since, ours goes in front of it again. */
static int segv_handler_in_front(void) {
  struct sigaction cur;
  if (sigaction(SIGSEGV, NULL, &cur) != 0) return -1;
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == segv_wait) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv_wait;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  segv_old = cur;
  return sigaction(SIGSEGV, &sa, NULL);
}

/* Whether any of [a, a + len) is in memory (a lazy run's pages are faulted in as touched). */
static int touched(void *a, size_t len) {
  unsigned char v[TP_HPAGE / 4096];
  for (size_t o = 0; o < len; o += TP_HPAGE)
    if (mincore((char *)a + o, TP_HPAGE, v) != 0 || (v[0] & 1)) return 1; /* unknown: as touched */
  return 0;
}

/* Anonymous memory for a copy of len bytes, 2 MiB-aligned where the kernel gives that much (a
 * THP), else anywhere (4 KiB pages): *base and *span are what to unmap around it. */
static char *copy_area(size_t len, char **base, size_t *span) {
  char *tmp = mmap(NULL, len + TP_HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp != MAP_FAILED) {
    *base = tmp;
    *span = len + TP_HPAGE;
    char *al = (char *)(((uintptr_t)tmp + TP_HPAGE - 1) & ~(uintptr_t)(TP_HPAGE - 1));
    /* Backed before the copy, as huge pages where the kernel has them: faulted in by the copy
     * itself, they came 4 KiB at a time or through a slower fault path. */
    madvise(al, len, MADV_HUGEPAGE);
    madvise(al, len, MADV_POPULATE_WRITE);
    return al;
  }
  tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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

typedef struct {
  int guard;
  size_t failed;
} move_t;

static void move_off_pool(tp_hpage_t *h, void *arg) {
  move_t *m = arg;
  if (!is_hugetlb(h)) return;
  /* A 1 GiB page moves whole, from its first hpage (the kernel cannot split it). */
  size_t n = h->source == TP_SRC_1G ? TP_GIB / TP_HPAGE : 1;
  if (n > 1 && (h->addr & (TP_GIB - 1)) != 0) return;
  if (move_range((void *)h->addr, n * TP_HPAGE, h->lazy, m->guard) != 0) {
    m->failed++;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(h->addr + i * TP_HPAGE));
    _tp_heap_ctr.pages_by_source[x->source]--;
    _tp_heap_ctr.pages_by_source[TP_SRC_THP]++;
    x->source = TP_SRC_THP;
    x->window = 0; /* the copy took this part of the hugetlb window's mapping */
    x->lazy = 0;
  }
  _tp_heap_ctr.fork_unshared += n;
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
  /* Alone, nothing else can write to the heap meanwhile: no page is made read-only, so no
   * write of another thread waits and no system call of another thread can fail with EFAULT. */
  move_t m = {other_threads(), 0};
  if (m.guard && segv_handler_in_front() != 0)
    _tp_message("fork: no SIGSEGV handler for moving pool pages: %s", strerror(errno));
  _tp_heap_foreach(move_off_pool, &m);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (m.failed) {
    _tp_heap_ctr.fork_unshare_failed += m.failed;
    _tp_message("fork: %zu pool pages could not be moved off the pool (no memory for their copies): "
                "they are shared with the child", m.failed);
  }
}

void _tp_heap_postfork(int child) {
  if (child) _tp_lock_reinit(&_tp_heap_lock);
  else _tp_unlock(&_tp_heap_lock);
}
