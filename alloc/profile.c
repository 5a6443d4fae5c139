/* libtlbpack-profile.so: tlbpack with an allocation log, for `tlbpack profile`. The standard
 * malloc names place objects exactly as libtlbpack.so does (same sites, same groups) and, when
 * TLBPACK_CONF has profile:FILE, append one record per event to FILE through a raw fd (no
 * stdio, no malloc):
 *
 *   header  8 bytes "TPPROF1\0", 8 bytes: the address of the marker word
 *   record  4 x uint64: op ('A' alloc, 'F' free, 'R' realloc), site, address, size
 *           (for 'R', site holds the old address: the block keeps its site and birth)
 *
 * After writing each record the library stores to the marker word, under a lock. A memory
 * trace of the run (valgrind lackey) then holds one store to the marker per record, in the
 * same order: that is how the trace and the log line up in time. At the first event and at
 * exit, /proc/self/maps is copied to FILE.maps, so that sites can be named module + offset.
 * A separate library so that libtlbpack.so's fast paths carry no profiling test at all. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "front.h"

#define PUBLIC __attribute__((visibility("default")))
#define RA() ((uintptr_t)__builtin_return_address(0))

void *_tp_malloc_site(size_t size, uintptr_t site) TP_INTERNAL;

static volatile uint64_t marker __attribute__((aligned(64)));
static int log_fd = -2; /* -2: not opened yet, -1: no log */
static atomic_flag log_busy = ATOMIC_FLAG_INIT;

static void write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

static void copy_maps(void) {
  char path[TP_OPT_PATH + 8], buf[4096];
  snprintf(path, sizeof path, "%s.maps", _tp_opt.profile_path);
  int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in >= 0 && out >= 0)
    for (ssize_t r; (r = read(in, buf, sizeof buf)) > 0;) write_all(out, buf, (size_t)r);
  if (in >= 0) close(in);
  if (out >= 0) close(out);
}

static void event(uint64_t op, uintptr_t site, const void *p, size_t size) {
  if (log_fd == -1) return;
  int saved = errno;
  while (atomic_flag_test_and_set_explicit(&log_busy, memory_order_acquire)) sched_yield();
  if (log_fd == -2) {
    log_fd = -1;
    /* Only the program valgrind traces logs (valgrind puts its vgpreload_ libraries in that
     * one's LD_PRELOAD), not valgrind's launcher or the shell script around it, which run with
     * the preload too. O_EXCL: the first traced process logs, not the programs it runs. */
    const char *pre = getenv("LD_PRELOAD");
    if (_tp_opt.profile_path[0] && pre && strstr(pre, "vgpreload_")) {
      int fd = open(_tp_opt.profile_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) {
        uint64_t head[2];
        memcpy(head, "TPPROF1", 8);
        head[1] = (uint64_t)(uintptr_t)&marker;
        write_all(fd, head, sizeof head);
        log_fd = fd;
        copy_maps();
      } else if (errno != EEXIST) {
        _tp_message("profile %s: cannot create the file: %s", _tp_opt.profile_path, strerror(errno));
      }
    }
  }
  if (log_fd >= 0) {
    uint64_t rec[4] = {op, (uint64_t)site, (uint64_t)(uintptr_t)p, (uint64_t)size};
    write_all(log_fd, rec, sizeof rec);
    marker = rec[0];
  }
  atomic_flag_clear_explicit(&log_busy, memory_order_release);
  errno = saved;
}

__attribute__((destructor)) static void profile_end(void) {
  if (log_fd >= 0) copy_maps();
}

PUBLIC void *malloc(size_t n) {
  void *p = _tp_malloc_site(n, RA());
  if (p) event('A', RA(), p, n);
  return p;
}

PUBLIC void *calloc(size_t c, size_t n) {
  size_t t;
  if (__builtin_mul_overflow(c, n, &t)) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = _tp_malloc_site(t, RA());
  if (p) {
    memset(p, 0, t);
    event('A', RA(), p, t);
  }
  return p;
}

PUBLIC void free(void *p) {
  if (p) event('F', 0, p, 0);
  tp_free(p);
}
PUBLIC void cfree(void *p) { free(p); }

static void *realloc_at(void *p, size_t n, uintptr_t ra) {
  if (p == NULL) {
    void *q = _tp_malloc_site(n, ra);
    if (q) event('A', ra, q, n);
    return q;
  }
  void *q = tp_realloc(p, n);
  if (n == 0) event('F', 0, p, 0);
  else if (q) event('R', (uintptr_t)p, q, n);
  return q;
}

PUBLIC void *realloc(void *p, size_t n) { return realloc_at(p, n, RA()); }

PUBLIC void *reallocarray(void *p, size_t c, size_t n) {
  size_t t;
  if (__builtin_mul_overflow(c, n, &t)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_at(p, t, RA());
}

PUBLIC void *aligned_alloc(size_t a, size_t n) {
  void *p = tp_aligned_alloc(a, n);
  if (p) event('A', RA(), p, n);
  return p;
}
PUBLIC void *memalign(size_t a, size_t n) {
  void *p = tp_memalign(a, n);
  if (p) event('A', RA(), p, n);
  return p;
}
PUBLIC int posix_memalign(void **out, size_t a, size_t n) {
  int r = tp_posix_memalign(out, a, n);
  if (r == 0) event('A', RA(), *out, n);
  return r;
}
PUBLIC void *valloc(size_t n) {
  void *p = tp_valloc(n);
  if (p) event('A', RA(), p, n);
  return p;
}
PUBLIC void *pvalloc(size_t n) {
  void *p = tp_pvalloc(n);
  if (p) event('A', RA(), p, n);
  return p;
}
PUBLIC size_t malloc_usable_size(void *p) { return tp_malloc_usable_size(p); }

/* C++: `new` is logged at the site that called it, as libtlbpack.so groups it. */
static void *new_at(size_t n, uintptr_t ra) {
  void *p = _tp_malloc_site(n, ra);
  if (p == NULL) {
    void *(*real)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "_Znwm");
    if (real == NULL) _tp_fatal("out of memory in operator new (%zu bytes)", n);
    return real(n);
  }
  event('A', ra, p, n);
  return p;
}
PUBLIC void *_Znwm(size_t n) { return new_at(n, RA()); }
PUBLIC void *_Znam(size_t n) { return new_at(n, RA()); }
PUBLIC void _ZdlPv(void *p) { free(p); }
PUBLIC void _ZdaPv(void *p) { free(p); }
PUBLIC void _ZdlPvm(void *p, size_t n) { (void)n; free(p); }
PUBLIC void _ZdaPvm(void *p, size_t n) { (void)n; free(p); }
