/* The heap's part of tlbpack's fork handlers: the heap lock held across fork(), and, when the
 * pool is too short for the copies a fork makes, the heap's pool pages (heap.c) moved onto
 * THP before it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* Fork with a short pool. A private hugetlb page shared with a fork child is copied on the
 * first write to it, from the pool. With no free page the kernel either kills the child
 * (SIGBUS on its write) or, when the parent writes first, gives the page to the parent and
 * takes it from the child. The child cannot repair this (glibc's fork writes to heap FILEs
 * before any atfork handler runs). So before the fork, when the pool cannot cover the heap's
 * hugetlb pages, the parent moves them onto anonymous (THP) memory: each page is made
 * read-only, copied, and the copy moved over it with mremap; a thread that writes to the page
 * meanwhile takes a SIGSEGV, which a handler turns into a wait, and its write is retried on
 * the copy. Nothing is lost; later pages come from the pool. */
static int is_hugetlb(const tp_hpage_t *h) { return h->source == TP_SRC_HUGETLB || h->source == TP_SRC_1G; }

/* Pool pages the heap holds, in pages of each size: [0] 2 MiB, [1] 1 GiB. */
static void count_hugetlb(tp_hpage_t *h, void *arg) {
  size_t *n = arg;
  if (h->source == TP_SRC_HUGETLB) n[0]++;
  else if (h->source == TP_SRC_1G && (h->addr & (TP_GIB - 1)) == 0) n[1]++;
}

/* A large run's pool pages not touched yet (heap.c, back_large_lazily) are faulted in before
 * the fork: their reservations are this process's, and a child's first touch of one would need
 * a free pool page of its own (SIGBUS when there is none). They are then pool pages like the
 * others, counted below. */
static void populate_lazy(tp_hpage_t *h, void *arg) {
  (void)arg;
  if (!h->lazy) return;
  _tp_os_populate((void *)h->addr, TP_HPAGE);
  h->lazy = 0;
}

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

/* Copies [a, a + len) onto anonymous THP memory and moves the copy over it. */
static int move_range(void *a, size_t len) {
  char *tmp = mmap(NULL, len + TP_HPAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED) return -1; /* no memory to copy into: fork as it is */
  char *al = (char *)(((uintptr_t)tmp + TP_HPAGE - 1) & ~(uintptr_t)(TP_HPAGE - 1));
  madvise(al, len, MADV_HUGEPAGE);
  converting_len = len;
  atomic_store(&converting, (uintptr_t)a);
  mprotect(a, len, PROT_READ);
  memcpy(al, a, len);
  if (mremap(al, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, a) != a)
    _tp_fatal("fork: could not move hugetlb page %p onto anonymous memory", a);
  atomic_store(&converting, 0);
  if (al > tmp) munmap(tmp, (size_t)(al - tmp));
  if (tmp + len + TP_HPAGE > al + len) munmap(al + len, (size_t)(tmp + len + TP_HPAGE - (al + len)));
  return 0;
}

static void move_to_thp(tp_hpage_t *h, void *arg) {
  int *failed = arg;
  if (*failed || !is_hugetlb(h)) return;
  /* A 1 GiB page moves whole, from its first hpage (the kernel cannot split it). */
  size_t n = h->source == TP_SRC_1G ? TP_GIB / TP_HPAGE : 1;
  if (n > 1 && (h->addr & (TP_GIB - 1)) != 0) return;
  if (move_range((void *)h->addr, n * TP_HPAGE) != 0) {
    *failed = 1;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    tp_hpage_t *x = _tp_hpage_of((void *)(h->addr + i * TP_HPAGE));
    _tp_heap_ctr.pages_by_source[x->source]--;
    _tp_heap_ctr.pages_by_source[TP_SRC_THP]++;
    x->source = TP_SRC_THP;
    x->window = 0; /* the copy took this part of the hugetlb window's mapping */
  }
  _tp_heap_ctr.fork_unshared += n;
}

void _tp_heap_prefork(void) {
  _tp_lock(&_tp_heap_lock);
  if (_tp_os.hugetlb_lazy) _tp_heap_foreach(populate_lazy, NULL);
  size_t held[2] = {0, 0};
  _tp_heap_foreach(count_hugetlb, held);
  size_t need = held[0];
  if (need == 0 && held[1] == 0) return;
  long avail = _tp_os_pool_free(), avail_1g = _tp_os_gpool_free();
  if (avail >= 0 && (size_t)avail >= need && (held[1] == 0 || (avail_1g >= 0 && (size_t)avail_1g >= held[1]))) {
    _tp_os_forking();
    return;
  }
  /* The handler stays once installed: a writer's fault taken during a move may be delivered
   * after the move is over, and the disposition is read at delivery. Faults that are not a
   * moved heap page go to the program's previous handler (or its default action). If the
   * program has installed a handler of its own since, ours goes in front of it again. */
  struct sigaction cur;
  if (sigaction(SIGSEGV, NULL, &cur) != 0) return;
  if (!((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == segv_wait)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv_wait;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    segv_old = cur;
    if (sigaction(SIGSEGV, &sa, NULL) != 0) return;
  }
  int failed = 0;
  _tp_heap_foreach(move_to_thp, &failed);
}

void _tp_heap_postfork(int child) {
  if (child) _tp_lock_reinit(&_tp_heap_lock);
  else _tp_unlock(&_tp_heap_lock);
}
