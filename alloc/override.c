/* The standard names, in libtlbpack.so only: each is an alias of its tp_ twin, so a call
 * costs nothing extra and the caller's return address (the allocation site) is preserved.
 * C++ operator new/delete are defined here too, so that `new` is grouped by the site that
 * called it rather than by libstdc++; when memory runs out they defer to the real operator
 * (found with RTLD_NEXT), which runs the new-handler and throws std::bad_alloc. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>

/* Aliases must sit in the translation unit that defines their targets. */
#include "alloc.c"

#define ALIAS(name, target) __typeof__(target) name __attribute__((alias(#target), visibility("default")))

ALIAS(malloc, tp_malloc);
ALIAS(free, tp_free);
ALIAS(calloc, tp_calloc);
ALIAS(realloc, tp_realloc);
ALIAS(reallocarray, tp_reallocarray);
ALIAS(aligned_alloc, tp_aligned_alloc);
ALIAS(memalign, tp_memalign);
ALIAS(posix_memalign, tp_posix_memalign);
ALIAS(valloc, tp_valloc);
ALIAS(pvalloc, tp_pvalloc);
ALIAS(malloc_usable_size, tp_malloc_usable_size);
ALIAS(cfree, tp_free);
ALIAS(malloc_trim, tp_trim);
ALIAS(__libc_malloc, tp_malloc);
ALIAS(__libc_free, tp_free);
ALIAS(__libc_calloc, tp_calloc);
ALIAS(__libc_realloc, tp_realloc);
ALIAS(__libc_memalign, tp_memalign);
ALIAS(__libc_valloc, tp_valloc);
ALIAS(__libc_pvalloc, tp_pvalloc);

/* ---- glibc's statistics names -------------------------------------------------------
 * A program that reads mallinfo2 (a server's memory report) or calls malloc_stats under
 * LD_PRELOAD sees tlbpack's heap, not glibc's empty arena. arena: bytes of the heap's pages
 * backed now; uordblks: bytes in live blocks (usable sizes); fordblks: the rest of arena (free
 * slots, thread caches, retained pages); keepcost: the empty pages retained for reuse, which
 * malloc_trim(0) gives back. The other fields describe glibc's chunks and are 0. mallopt and
 * malloc_info stay glibc's. The structs are glibc's (<malloc.h>, not included here: it
 * declares malloc_usable_size without const). */
struct mallinfo2 {
  size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct mallinfo {
  int arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
static struct mallinfo2 info2(void) {
  tp_stats_t st;
  tp_stats_get(&st);
  struct mallinfo2 m = {0};
  m.arena = st.mapped_bytes;
  m.uordblks = st.live_bytes < st.mapped_bytes ? st.live_bytes : st.mapped_bytes;
  m.fordblks = m.arena - m.uordblks;
  m.keepcost = atomic_load(&_tp_ready) ? _tp_heap_retained_bytes() : 0;
  return m;
}
__attribute__((visibility("default"))) struct mallinfo2 mallinfo2(void) { return info2(); }
static int clamp_int(size_t v) { return v > INT_MAX ? INT_MAX : (int)v; }
__attribute__((visibility("default"))) struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = info2();
  struct mallinfo m = {0};
  m.arena = clamp_int(m2.arena);
  m.uordblks = clamp_int(m2.uordblks);
  m.fordblks = clamp_int(m2.fordblks);
  m.keepcost = clamp_int(m2.keepcost);
  return m;
}
/* glibc prints its arenas to stderr; this prints tlbpack's stats there (as stats:1 does). */
__attribute__((visibility("default"))) void malloc_stats(void) { tp_stats_print(stderr, 0); }

/* ---- signal masks ---------------------------------------------------------------------
 * Before a fork, tlbpack stops the process's other threads with one signal (fork.c,
 * _tp_fork_stop_signal) while it moves the heap's pool pages. A thread that blocked every
 * signal (the common "signals go to one thread" design) must still take that one, as glibc
 * keeps its own SIGCANCEL and SIGSETXID: these drop it from a mask a program blocks, waits
 * under or waits for, then call glibc's own function. A mask set by a raw system call is not
 * seen here; such a thread does not answer, and the fork falls back to guarded moves. */
#include <signal.h>
#define SIGV __attribute__((visibility("default")))
static const sigset_t *without_stop(const sigset_t *set, sigset_t *buf) {
  int sig = _tp_fork_stop_signal();
  if (set == NULL || sigismember(set, sig) != 1) return set;
  *buf = *set;
  sigdelset(buf, sig);
  return buf;
}
static void *real_fn(void *_Atomic *slot, const char *name) {
  void *f = atomic_load_explicit(slot, memory_order_acquire);
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, name);
    if (f == NULL) _tp_fatal("no %s in the C library", name);
    atomic_store_explicit(slot, f, memory_order_release);
  }
  return f;
}
#define REAL(name) __typeof__(&name) real_##name = (__typeof__(&name))real_fn(&real_##name##_slot, #name)
static void *_Atomic real_pthread_sigmask_slot, *_Atomic real_sigprocmask_slot, *_Atomic real_sigsuspend_slot,
    *_Atomic real_sigwait_slot, *_Atomic real_sigwaitinfo_slot, *_Atomic real_sigtimedwait_slot;
/* Looked up at load time, not at a first call that may come from a signal handler (dlsym is not
 * async-signal-safe). */
__attribute__((constructor)) static void real_signal_fns(void) {
  real_fn(&real_pthread_sigmask_slot, "pthread_sigmask");
  real_fn(&real_sigprocmask_slot, "sigprocmask");
  real_fn(&real_sigsuspend_slot, "sigsuspend");
  real_fn(&real_sigwait_slot, "sigwait");
  real_fn(&real_sigwaitinfo_slot, "sigwaitinfo");
  real_fn(&real_sigtimedwait_slot, "sigtimedwait");
}

SIGV int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  REAL(pthread_sigmask);
  sigset_t buf;
  return real_pthread_sigmask(how, how == SIG_UNBLOCK ? set : without_stop(set, &buf), old);
}
SIGV int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  REAL(sigprocmask);
  sigset_t buf;
  return real_sigprocmask(how, how == SIG_UNBLOCK ? set : without_stop(set, &buf), old);
}
SIGV int sigsuspend(const sigset_t *mask) {
  REAL(sigsuspend);
  sigset_t buf;
  return real_sigsuspend(without_stop(mask, &buf));
}
/* The waits: the stop signal is never taken for the program's (it stays blocked for them only
 * if they blocked it; it is not, so it is handled, and the wait goes on). */
SIGV int sigwait(const sigset_t *set, int *sig) {
  REAL(sigwait);
  sigset_t buf;
  return real_sigwait(without_stop(set, &buf), sig);
}
SIGV int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  REAL(sigwaitinfo);
  sigset_t buf;
  return real_sigwaitinfo(without_stop(set, &buf), info);
}
SIGV int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout) {
  REAL(sigtimedwait);
  sigset_t buf;
  return real_sigtimedwait(without_stop(set, &buf), info, timeout);
}

/* ---- C++ ----------------------------------------------------------------------------- */
#define CXX __attribute__((visibility("default")))
typedef void *(*new_fn)(size_t);
typedef void *(*new_al_fn)(size_t, size_t);

static TP_NOINLINE void *real_new(const char *sym, size_t n) {
  new_fn f = (new_fn)dlsym(RTLD_NEXT, sym);
  if (f == NULL) _tp_fatal("out of memory in operator new (%zu bytes) and no %s to report it", n, sym);
  return f(n);
}
static TP_NOINLINE void *real_new_al(const char *sym, size_t n, size_t al) {
  new_al_fn f = (new_al_fn)dlsym(RTLD_NEXT, sym);
  if (f == NULL) _tp_fatal("out of memory in aligned operator new (%zu bytes) and no %s to report it", n, sym);
  return f(n, al);
}

#define NEW_BODY(sym, n)                                                                   \
  void *p = _tp_malloc_site(n, (uintptr_t)__builtin_return_address(0));                    \
  return p ? p : real_new(sym, n)

CXX void *_Znwm(size_t n) { NEW_BODY("_Znwm", n); }
CXX void *_Znam(size_t n) { NEW_BODY("_Znam", n); }
CXX void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt) {
  (void)nt;
  return _tp_malloc_site(n, (uintptr_t)__builtin_return_address(0));
}
CXX void *_ZnamRKSt9nothrow_t(size_t n, const void *nt) {
  (void)nt;
  return _tp_malloc_site(n, (uintptr_t)__builtin_return_address(0));
}
CXX void *_ZnwmSt11align_val_t(size_t n, size_t al) {
  void *p = _tp_aligned_site(al, n, (uintptr_t)__builtin_return_address(0));
  return p ? p : real_new_al("_ZnwmSt11align_val_t", n, al);
}
CXX void *_ZnamSt11align_val_t(size_t n, size_t al) {
  void *p = _tp_aligned_site(al, n, (uintptr_t)__builtin_return_address(0));
  return p ? p : real_new_al("_ZnamSt11align_val_t", n, al);
}
CXX void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt) {
  (void)nt;
  return _tp_aligned_site(al, n, (uintptr_t)__builtin_return_address(0));
}
CXX void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt) {
  (void)nt;
  return _tp_aligned_site(al, n, (uintptr_t)__builtin_return_address(0));
}
CXX void _ZdlPv(void *p) { tp_free(p); }
CXX void _ZdaPv(void *p) { tp_free(p); }
CXX void _ZdlPvm(void *p, size_t n) { (void)n; tp_free(p); }
CXX void _ZdaPvm(void *p, size_t n) { (void)n; tp_free(p); }
CXX void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; tp_free(p); }
CXX void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; tp_free(p); }
CXX void _ZdlPvSt11align_val_t(void *p, size_t al) { (void)al; tp_free(p); }
CXX void _ZdaPvSt11align_val_t(void *p, size_t al) { (void)al; tp_free(p); }
CXX void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t al) { (void)n; (void)al; tp_free(p); }
CXX void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t al) { (void)n; (void)al; tp_free(p); }
CXX void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt) { (void)al; (void)nt; tp_free(p); }
CXX void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt) { (void)al; (void)nt; tp_free(p); }
