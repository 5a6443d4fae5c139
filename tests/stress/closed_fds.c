/* A program that closes every descriptor it did not open, as daemons do, and reuses the
 * numbers: the allocator must hold no descriptor it relies on (it maps pool pages with
 * MAP_HUGETLB, keeps no hugetlbfs file open) and must never write to a number the program now
 * uses for its own file. After a first allocation (the allocator is set up), the program
 * closes descriptors 3 and up ("daemon": 0, 1 and 2 too, reopened on /dev/null), opens DATA
 * and puts it on every number that was open before, allocates and checks 100 MiB in blocks up
 * to 3 MiB (new huge pages) and in a forked child, then writes one line to DATA and exits. The
 * caller checks that DATA holds that line only.
 *
 * usage: closed_fds keep-stdio|daemon DATA
 */
#include "tp_shim.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *what) {
  /* stderr may be /dev/null by now: the status says it, the caller prints the file. */
  (void)what;
  _exit(3);
}

/* The descriptors open now, up to max. */
static int open_fds(int *fds, int max) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0, self = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd != self) fds[n++] = fd;
  }
  closedir(d);
  return n;
}

static size_t churn(unsigned long long seed) {
  enum { N = 400 };
  static unsigned char *p[N];
  static size_t sz[N];
  size_t total = 0;
  for (int i = 0; i < N; i++) {
    sz[i] = i % 8 == 0 ? ((size_t)2 << 20) + (t_rand(&seed) % (1 << 20)) : 1 + t_rand(&seed) % 65536;
    p[i] = malloc(sz[i]);
    if (!p[i]) fail("malloc");
    memset(p[i], i & 0xff, sz[i]);
    total += sz[i];
  }
  for (int i = 0; i < N; i++) {
    for (size_t j = 0; j < sz[i]; j += 4093)
      if (p[i][j] != (unsigned char)(i & 0xff)) fail("contents");
    free(p[i]);
  }
  return total;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "keep-stdio") && strcmp(argv[1], "daemon"))) {
    fprintf(stderr, "usage: closed_fds keep-stdio|daemon DATA\n");
    return 2;
  }
  int daemon_mode = !strcmp(argv[1], "daemon");
  free(malloc(1000)); /* the allocator is set up */
  int before[256], nb = open_fds(before, 256);
  if (nb < 0) return fail("/proc/self/fd");
  for (int i = 0; i < nb; i++)
    if (before[i] > 2 || daemon_mode) close(before[i]);
  if (daemon_mode) {
    int z = open("/dev/null", O_RDWR);
    if (z != 0 || dup2(0, 1) != 1 || dup2(0, 2) != 2) return fail("/dev/null");
  }
  int data = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (data < 0) return fail("open DATA");
  for (int i = 0; i < nb; i++)
    if (before[i] > 2 && before[i] != data && dup2(data, before[i]) != before[i]) return fail("dup2");
  size_t total = churn(1) + churn(2);
  pid_t c = fork();
  if (c < 0) return fail("fork");
  if (c == 0) _exit(churn(3) > 0 ? 0 : 1);
  int st;
  if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return fail("child");
  char line[128];
  int n = snprintf(line, sizeof line, "closed_fds: ok: %d descriptors were open, %s closed; %zu bytes checked\n", nb,
                   daemon_mode ? "all" : "those from 3 up", total);
  if (write(data, line, (size_t)n) != n) return fail("write DATA");
  return 0;
}
