/* The 1 GiB hugetlbfs pool for a workload that asks for one (tb_workload_t.gpool): grown to the
 * free pages it wants before its runs (root), and put back to the size it had after them, also
 * when tlbbench exits early or is interrupted (SIGINT, SIGTERM, SIGHUP). */
#define _GNU_SOURCE
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GP_DIR "/sys/kernel/mm/hugepages/hugepages-1048576kB"

static char saved[24]; /* nr_hugepages to write back ("" when nothing to restore) */

static long read_num(const char *file) {
  char path[128], buf[32];
  snprintf(path, sizeof path, GP_DIR "/%s", file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  return strtol(buf, NULL, 10);
}

/* Async-signal-safe: called from the signal handler too. */
static int write_str(const char *path, const char *s) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t w = write(fd, s, strlen(s));
  close(fd);
  return w == (ssize_t)strlen(s) ? 0 : -1;
}

void tb_gpool_restore(void) {
  if (saved[0] == 0) return;
  (void)write_str(GP_DIR "/nr_hugepages", saved);
  saved[0] = 0;
}

static void on_signal(int sig) {
  tb_gpool_restore();
  signal(sig, SIG_DFL);
  raise(sig);
}

long tb_gpool_reserve(long want, char *why, size_t n) {
  static int hooked;
  long total = read_num("nr_hugepages"), free_ = read_num("free_hugepages");
  if (total < 0 || free_ < 0) {
    snprintf(why, n, "this kernel offers no 1 GiB huge pages (" GP_DIR " is missing)");
    return -1;
  }
  if (free_ >= want) return free_;
  if (geteuid() != 0) {
    snprintf(why, n, "the 1 GiB pool has %ld free pages of the %ld wanted, and growing it needs root "
             "(sudo tlbpack pool reserve --page-size 1G %ld)", free_, want, total + want - free_);
    return free_ > 0 ? free_ : -1;
  }
  if (!hooked) {
    atexit(tb_gpool_restore);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    hooked = 1;
  }
  snprintf(saved, sizeof saved, "%ld", total);
  char num[24];
  snprintf(num, sizeof num, "%ld", total + want - free_);
  if (write_str(GP_DIR "/nr_hugepages", num) != 0 && errno != ENOMEM) {
    snprintf(why, n, "cannot write " GP_DIR "/nr_hugepages: %s", strerror(errno));
    tb_gpool_restore();
    return -1;
  }
  if (read_num("free_hugepages") < want) { /* contiguous GiBs are rare: compact once, ask again */
    (void)write_str("/proc/sys/vm/compact_memory", "1");
    (void)write_str(GP_DIR "/nr_hugepages", num);
  }
  long got = read_num("free_hugepages");
  if (got < 1) {
    snprintf(why, n, "the kernel gave no free 1 GiB page (asked for %ld; physical memory too fragmented?)", want);
    tb_gpool_restore();
    return -1;
  }
  return got;
}
