/* After a fork: the huge pages that copy-on-write split, collapsed again once no child shares
 * them (the heap's part after the fork; fork.c holds its part before it).
 * While a child shares the parent's transparent huge pages, the kernel copies a written one
 * 4 KiB at a time and maps it with 4 KiB entries; nothing puts it back together once the child
 * has exited, and a server that saves in the background would need as many TLB entries after
 * its first save as under any other allocator. So the parent notes its THP hpages at each fork
 * (cow_list) and looks at a few at a time, every TP_COW_TICK_MS, from a helper thread that
 * lives until the list is done (fork_collapse:thread, the default: a server whose mallocs and
 * frees balance reaches no slow path for seconds) or from its slow paths (_tp_heap_after_fork;
 * fork_collapse:alloc, and always in a child, which gets no thread): an hpage none of whose
 * pages a child still maps (pagemap's "exclusively mapped" bit on every page in memory) and
 * that is not mapped huge is collapsed
 * (MADV_COLLAPSE), one a pass, under the heap lock (so it is not freed meanwhile). While a child
 * still shares a page, the next look waits TP_COW_SHARED_MS. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap.h"

#define TP_COW_TICK_MS 5
#define TP_COW_SHARED_MS 20
#define TP_COW_LOOKS 32 /* hpages looked at in one pass at most */
#define TP_COW_THREAD_COLLAPSES 4 /* collapses in one pass of the helper thread */
_Atomic int _tp_fork_cow_pending;
static uintptr_t *cow_list;
static size_t cow_n, cow_cap, cow_at;
static double cow_next_ms;

static void note_thp(tp_hpage_t *h, void *arg) {
  (void)arg;
  if (h->state == TP_HP_FREE || h->source != TP_SRC_THP) return;
  if (cow_n == cow_cap) {
    size_t cap = cow_cap ? 2 * cow_cap : 1024;
    uintptr_t *t = mmap(NULL, cap * sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) return;
    if (cow_list) {
      memcpy(t, cow_list, cow_n * sizeof *t);
      munmap(cow_list, cow_cap * sizeof *t);
    }
    cow_list = t;
    cow_cap = cap;
  }
  cow_list[cow_n++] = h->addr;
}

/* PAGEMAP_SCAN (Linux 6.7): whether [a, a + TP_HPAGE) is mapped by one huge entry; -1 when the
 * kernel cannot say (then the collapse is asked for, a no-op on a page mapped huge). */
struct tp_pm_scan_arg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
struct tp_page_region {
  uint64_t start, end, categories;
};
#define TP_PAGEMAP_SCAN _IOWR('f', 16, struct tp_pm_scan_arg)
#define TP_PAGE_IS_PRESENT (1u << 3)
#define TP_PAGE_IS_HUGE (1u << 6)
static int mapped_huge(int fd, uintptr_t a) {
  struct tp_page_region r[4];
  struct tp_pm_scan_arg arg = {sizeof arg, 0, a, a + TP_HPAGE, 0, (uintptr_t)r, 4, 0, 0, TP_PAGE_IS_PRESENT, 0,
                               TP_PAGE_IS_PRESENT | TP_PAGE_IS_HUGE};
  long n = ioctl(fd, TP_PAGEMAP_SCAN, &arg);
  if (n < 0) return -1;
  return n == 1 && r[0].start == a && r[0].end == a + TP_HPAGE && (r[0].categories & TP_PAGE_IS_HUGE);
}

/* One pass: up to TP_COW_LOOKS hpages of the list, round robin from cow_at. An hpage that a
 * child still maps stays (it is looked at again on a later round); one mapped huge, given back,
 * or collapsed leaves the list. Ends after max_collapses collapses. */
static void cow_pass(double now, int max_collapses) {
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    cow_n = 0; /* no way to tell: left as it is */
    atomic_store(&_tp_fork_cow_pending, 0);
    return;
  }
  size_t shared_seen = 0;
  for (int looks = 0; cow_n > 0 && looks < TP_COW_LOOKS; looks++) {
    if (cow_at >= cow_n) cow_at = 0;
    uintptr_t a = cow_list[cow_at];
    tp_hpage_t *h = _tp_hpage_of((void *)a);
    int done = h == NULL || h->state == TP_HP_FREE || h->source != TP_SRC_THP; /* given back or replaced */
    int collapsed = 0;
    if (!done) {
      uint64_t pm[TP_HPAGE / 4096];
      if (pread(fd, pm, sizeof pm, (off_t)(a / 4096 * sizeof(uint64_t))) != (ssize_t)sizeof pm) {
        cow_n = 0;
        break;
      }
      size_t present = 0, shared = 0;
      for (size_t i = 0; i < TP_HPAGE / 4096; i++)
        if (pm[i] >> 63) present++, shared += !((pm[i] >> 56) & 1);
      if (shared) {
        cow_at++; /* a child still maps part of it: on a later round */
        if (++shared_seen >= cow_n) break; /* every one is shared: wait */
        continue;
      }
      done = 1;
      if (present && mapped_huge(fd, a) != 1) {
        if (_tp_os_promote((void *)a) == 0) _tp_heap_ctr.fork_recollapsed++;
        else _tp_heap_ctr.fork_recollapse_failed++;
        collapsed = 1;
      }
    }
    if (done) cow_list[cow_at] = cow_list[--cow_n]; /* off the list; cow_at now names the next */
    if (collapsed && --max_collapses == 0) break; /* each a copy of up to 2 MiB */
  }
  close(fd);
  if (shared_seen && cow_n) cow_next_ms = now + TP_COW_SHARED_MS;
  if (cow_n == 0) atomic_store(&_tp_fork_cow_pending, 0);
}

static _Atomic int cow_thread_on; /* the helper runs (this process) */

static void *cow_thread(void *arg) {
  (void)arg;
  while (atomic_load(&_tp_fork_cow_pending)) {
    struct timespec t = {0, TP_COW_TICK_MS * 1000000L};
    nanosleep(&t, NULL);
    double now = _tp_mono_ms();
    if (now < cow_next_ms) continue;
    _tp_lock(&_tp_heap_lock);
    if (atomic_load(&_tp_fork_cow_pending)) {
      cow_next_ms = now + TP_COW_TICK_MS;
      cow_pass(now, TP_COW_THREAD_COLLAPSES);
    }
    _tp_unlock(&_tp_heap_lock);
  }
  atomic_store(&cow_thread_on, 0);
  return NULL;
}

/* After the parent's fork handlers have let go of every lock (init.c): the helper, if the
 * list has hpages and none runs. Its signals are blocked but the stop signal's (a fork from
 * another thread stops it like any thread). Without a thread, the slow paths do the work. */
void _tp_heap_after_fork_parent(void) {
  if (_tp_opt.fork_collapse != TP_FORK_COLLAPSE_THREAD || !atomic_load(&_tp_fork_cow_pending)) return;
  int off = 0;
  if (!atomic_compare_exchange_strong(&cow_thread_on, &off, 1)) return;
  pthread_attr_t at;
  pthread_t th;
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, _tp_fork_stop_signal());
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int ok = pthread_attr_init(&at) == 0;
  if (ok) {
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 64 << 10);
    ok = pthread_create(&th, &at, cow_thread, NULL) == 0;
    pthread_attr_destroy(&at);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!ok) atomic_store(&cow_thread_on, 0); /* the slow paths then */
  else _tp_heap_ctr.fork_collapse_threads++;
}

void _tp_heap_after_fork_slow(void) {
  if (_tp_opt.fork_collapse == TP_FORK_COLLAPSE_OFF) return;
  double now = _tp_mono_ms();
  if (now < cow_next_ms || !_tp_trylock(&_tp_heap_lock)) return;
  if (atomic_load(&_tp_fork_cow_pending)) {
    cow_next_ms = now + TP_COW_TICK_MS;
    cow_pass(now, 1); /* a malloc waits for it: one copy of up to 2 MiB */
  }
  _tp_unlock(&_tp_heap_lock);
}


/* The heap lock is held (fork.c's postfork). Every THP hpage may be split by the child's or the
 * parent's writes from now on: both processes watch theirs (a child that writes all of an hpage
 * gets it back huge too). */
void _tp_heap_cow_note(int child) {
  if (child) atomic_store(&cow_thread_on, 0); /* the parent's helper, if any, is not in the child */
  cow_n = cow_at = 0;
  _tp_heap_foreach(note_thp, NULL);
  cow_next_ms = _tp_mono_ms() + TP_COW_TICK_MS;
  atomic_store(&_tp_fork_cow_pending, cow_n > 0 && _tp_opt.fork_collapse != TP_FORK_COLLAPSE_OFF);
}
