/* Workload 7: a real server — Debian's redis-server driven by redis-benchmark.
 *
 * redis-server starts on a free loopback port with no persistence (--save '' --appendonly no,
 * --dir in a private temporary directory under $TMPDIR) and inherits this process's environment,
 * so the allocator under test (LD_PRELOAD and its settings) serves the server. redis-benchmark
 * runs with every allocator variable removed: the client is the same program in every cell.
 * Without a preload the server is stock redis with the malloc it links (Debian: libjemalloc.so.2);
 * malloc_from reports which object redis-server's `malloc` binds to (the dynamic loader's
 * LD_DEBUG=bindings on `redis-server --version` under the same environment).
 *
 * --keys N first loads N keys ("key:%012lu", the names redis-benchmark's -r uses) with --datasize
 * byte values through one pipelined connection, so that the server's data spans more than the
 * L2 TLB reaches with 4 KiB pages (3072 x 4 KiB = 12 MiB); the benchmark then runs over them.
 *
 * rps = total requests / total time, the time of each command being redis-benchmark's own
 * (requests / its rps for that command): the client's start-up and connects are left out.
 * ns_per_op = 1e9 / rps. peak_rss_kb and hugetlb_kb are the server's VmHWM and HugetlbPages just
 * before SHUTDOWN NOSAVE; the server must then exit 0 and leave no file behind. At that point (its
 * peak: every key loaded and the benchmark done) the server's /proc/PID/smaps gives the TLB
 * entries for its resident memory (res_* fields, wl_foreign.h). No trace (the server's accesses
 * are not recorded) and no hot-set figures (the hot set of a foreign program is unknown). */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static unsigned long n_requests = 20000, n_clients = 8, n_pipeline = 16, n_keyspace = 10000,
                     n_datasize = 40, n_keys = 0;
static const char *tests = "set,get,incr,lpush,lpop,sadd,hset,mset";
static const char *server_arg = "redis-server", *bench_arg = "redis-benchmark";

static char dir[4096];
static int have_dir;
static pid_t server_pid = -1;

/* ---- housekeeping ------------------------------------------------------------------------- */
static const char *server_smaps = "", *server_log = "";

/* Copies a file (a /proc file too: read to its end), or dies naming it. */
static void copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in < 0 || out < 0) wl_die("cannot copy %s to %s: %s", from, to, strerror(errno));
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) wl_die("writing %s: %s", to, strerror(errno));
  close(in);
  close(out);
}

static void remove_dir(void) {
  if (!have_dir) return;
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
  }
  rmdir(dir);
  have_dir = 0;
}

/* on every exit (wl_die included): no server left running, no directory left behind */
static void cleanup(void) {
  if (server_pid > 0) {
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = -1;
  }
  remove_dir();
}

static const char *find_prog(const char *name, char *buf, size_t n) {
  if (strchr(name, '/')) {
    snprintf(buf, n, "%s", name);
    return access(buf, X_OK) == 0 ? buf : NULL;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    size_t l = strcspn(p, ":");
    snprintf(buf, n, "%.*s/%s", (int)l, p, name);
    if (l && access(buf, X_OK) == 0) return buf;
    p += l + (p[l] == ':');
  }
  return NULL;
}

/* the environment minus every variable that selects or tunes an allocator (for the client) */
static char **clean_env(void) {
  static const char *const pre[] = {"LD_PRELOAD=", "GLIBC_TUNABLES=", "MALLOC_CONF=", "MIMALLOC_",
                                    "TLBPACK_CONF=", "TCMALLOC_", "JE_MALLOC_CONF=", "LD_DEBUG", NULL};
  size_t ne = 0, k = 0;
  while (environ[ne]) ne++;
  char **env = calloc(ne + 1, sizeof *env);
  if (!env) wl_die("out of memory");
  for (size_t i = 0; i < ne; i++) {
    int drop = 0;
    for (int j = 0; pre[j] && !drop; j++) drop = !strncmp(environ[i], pre[j], strlen(pre[j]));
    if (!drop) env[k++] = environ[i];
  }
  env[k] = NULL;
  return env;
}

static char *read_file(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return NULL;
  size_t cap = 65536, n = 0;
  char *s = malloc(cap);
  ssize_t r;
  while (s && (r = read(fd, s + n, cap - n - 1)) > 0) {
    n += (size_t)r;
    if (cap - n < 4096) { char *t = realloc(s, cap *= 2); if (!t) { free(s); s = NULL; } else s = t; }
  }
  close(fd);
  if (s) s[n] = 0;
  return s;
}

/* last non-empty line of a log, for error messages */
static const char *last_line(const char *path) {
  static char line[256];
  char *s = read_file(path);
  line[0] = 0;
  if (!s) return "(no log)";
  char *end = s + strlen(s);
  while (end > s && (end[-1] == '\n' || end[-1] == '\r')) *--end = 0;
  char *nl = strrchr(s, '\n');
  snprintf(line, sizeof line, "%s", nl ? nl + 1 : s);
  free(s);
  return line[0] ? line : "(empty log)";
}

/* ---- a tiny RESP client: one inline command per connection ------------------------------ */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &l))
    wl_die("cannot pick a free loopback port: %s", strerror(errno));
  close(s);
  return ntohs(a.sin_port);
}

/* Sends `cmd` and reads one reply (a bulk reply whole) into out; returns its length, or -1 when
 * the connection fails. For SHUTDOWN the server closes the connection without a reply: 0. */
static long resp(int port, const char *cmd, char *out, size_t cap) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {5, 0};
  if (s < 0) return -1;
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(s, (struct sockaddr *)&a, sizeof a)) { close(s); return -1; }
  char line[256];
  int l = snprintf(line, sizeof line, "%s\r\n", cmd);
  if (write(s, line, (size_t)l) != l) { close(s); return -1; }
  size_t n = 0, want = 0;
  out[0] = 0;
  for (;;) {
    ssize_t r = read(s, out + n, cap - n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    out[n] = 0;
    char *eol = strstr(out, "\r\n");
    if (!eol) { if (n + 1 >= cap) break; continue; }
    if (out[0] != '$') break;                              /* +OK, -ERR, :123: one line */
    if (!want) want = (size_t)(eol - out) + 2 + strtoul(out + 1, NULL, 10) + 2;
    if (n >= want || n + 1 >= cap) break;
  }
  close(s);
  return (long)n;
}

/* "key:value\r\n" from an INFO reply */
static long info_num(const char *info, const char *key) {
  const char *p = strstr(info, key);
  return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* ---- the server ------------------------------------------------------------------------- */
/* Which object redis-server's own `malloc` binds to, under this environment. */
static const char *server_malloc_from(const char *server) {
  static char from[96] = "unknown";
  char out[4200];
  snprintf(out, sizeof out, "%s/ld", dir);
  pid_t pid = fork();
  if (pid < 0) wl_die("fork: %s", strerror(errno));
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
    setenv("LD_DEBUG", "bindings", 1);
    setenv("LD_DEBUG_OUTPUT", out, 1);
    execl(server, server, "--version", (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  snprintf(out + strlen(out), sizeof out - strlen(out), ".%d", (int)pid);
  char *log = read_file(out);
  unlink(out);
  if (!log) return from;
  const char *base = strrchr(server, '/') ? strrchr(server, '/') + 1 : server;
  /* "binding file /usr/bin/redis-server [0] to /lib/.../libjemalloc.so.2 [0]: normal symbol `malloc'" */
  for (char *ln = log, *next; ln && *ln; ln = next) {
    next = strchr(ln, '\n');
    if (next) *next++ = 0;
    char *f = strstr(ln, "binding file "), *to = strstr(ln, "] to ");
    if (!f || !to || !strstr(ln, "symbol `malloc'")) continue;
    f += strlen("binding file ");
    char *fend = strstr(f, " [");
    if (!fend) continue;
    *fend = 0;
    const char *fb = strrchr(f, '/') ? strrchr(f, '/') + 1 : f;
    if (strcmp(fb, base) != 0) continue;
    char *lib = to + strlen("] to "), *lend = strstr(lib, " [");
    if (!lend) continue;
    *lend = 0;
    snprintf(from, sizeof from, "%s", strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib);
    break;
  }
  free(log);
  return from;
}

/* Starts redis-server on a free port and waits for PONG; returns the port. A port taken between
 * picking and binding is retried with another. */
static int start_server(const char *server) {
  char log[4200], reply[256];
  snprintf(log, sizeof log, "%s/server.log", dir);
  for (int attempt = 0; attempt < 5; attempt++) {
    int port = free_port();
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    pid_t pid = fork();
    if (pid < 0) wl_die("fork: %s", strerror(errno));
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  /* never outlive this workload */
      int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_RDONLY);
      if (fd < 0 || nul < 0) _exit(126);
      dup2(nul, 0); dup2(fd, 1); dup2(fd, 2);
      execl(server, server, "--bind", "127.0.0.1", "--port", ports, "--save", "", "--appendonly", "no",
            "--dir", dir, "--logfile", "", "--daemonize", "no", (char *)NULL);
      fprintf(stderr, "cannot run %s: %s\n", server, strerror(errno));
      _exit(127);
    }
    server_pid = pid;
    for (int i = 0; i < 200; i++) {  /* 10 s */
      if (resp(port, "PING", reply, sizeof reply) > 0 && !strncmp(reply, "+PONG", 5)) return port;
      int st;
      if (waitpid(pid, &st, WNOHANG) == pid) {
        server_pid = -1;
        char *s = read_file(log);
        int taken = s && strstr(s, "Address already in use");
        free(s);
        if (taken) break;
        wl_die("redis-server exited at start (status 0x%x): %s", st, last_line(log));
      }
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (server_pid > 0) wl_die("redis-server did not answer PING on 127.0.0.1:%d within 10 s: %s", port, last_line(log));
  }
  wl_die("no free loopback port for redis-server after 5 attempts");
}

/* SHUTDOWN NOSAVE, then the server must exit 0 within 10 s */
static void stop_server(int port) {
  char reply[256], log[4200];
  snprintf(log, sizeof log, "%s/server.log", dir);
  if (resp(port, "SHUTDOWN NOSAVE", reply, sizeof reply) > 0)
    wl_die("redis-server refused SHUTDOWN NOSAVE: %.100s", reply);
  int st = 0;
  for (int i = 0; i < 200; i++) {
    pid_t r = waitpid(server_pid, &st, WNOHANG);
    if (r == server_pid) break;
    if (i == 199) wl_die("redis-server still running 10 s after SHUTDOWN NOSAVE");
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  server_pid = -1;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    wl_die("redis-server ended with status 0x%x after SHUTDOWN NOSAVE: %s", st, last_line(log));
}

/* ---- loading the keys ---------------------------------------------------------------------- */
/* SET key:%012lu <datasize bytes> for every key, pipelined 1000 at a time on one connection; every
 * reply must be +OK. */
static void load_keys(int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {30, 0};
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a)) wl_die("cannot connect to load keys: %s", strerror(errno));
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  enum { BATCH = 1000 };
  size_t cmd_len = 4 + 16 + 1 + n_datasize + 2, cap = BATCH * cmd_len + 64;
  char *out = malloc(cap), *val = malloc(n_datasize + 1), in[8192];
  if (!out || !val) wl_die("out of memory");
  memset(val, 'x', n_datasize);
  val[n_datasize] = 0;
  for (unsigned long k = 0; k < n_keys;) {
    unsigned long b = n_keys - k < BATCH ? n_keys - k : BATCH;
    size_t len = 0;
    for (unsigned long i = 0; i < b; i++)
      len += (size_t)snprintf(out + len, cap - len, "SET key:%012lu %s\r\n", k + i, val);
    for (size_t off = 0; off < len;) {
      ssize_t w = write(s, out + off, len - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) wl_die("loading keys: write: %s", strerror(errno));
      off += (size_t)w;
    }
    size_t want = 5 * b, got = 0;   /* "+OK\r\n" each */
    while (got < want) {
      ssize_t r = read(s, in, sizeof in < want - got ? sizeof in : want - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) wl_die("loading keys: the server stopped answering after %lu keys", k);
      for (ssize_t i = 0; i < r; i++)
        if (in[i] != "+OK\r\n"[(got + (size_t)i) % 5]) wl_die("loading keys: unexpected reply '%.40s'", in);
      got += (size_t)r;
    }
    k += b;
  }
  close(s);
  free(out);
  free(val);
}

/* ---- the client --------------------------------------------------------------------------- */
typedef struct { char name[24]; double rps; } cmd_rps_t;

/* Runs redis-benchmark (no allocator preload) and parses its CSV; returns the number of rows and
 * the wall time of the whole client in *wall_ns. */
static int run_benchmark(const char *bench, int port, cmd_rps_t *rows, int cap, double *wall_ns) {
  char ports[16], n[24], c[24], p[24], r[24], d[24], err[4200];
  snprintf(ports, sizeof ports, "%d", port);
  snprintf(n, sizeof n, "%lu", n_requests); snprintf(c, sizeof c, "%lu", n_clients);
  snprintf(p, sizeof p, "%lu", n_pipeline); snprintf(r, sizeof r, "%lu", n_keyspace);
  snprintf(d, sizeof d, "%lu", n_datasize);
  snprintf(err, sizeof err, "%s/bench.err", dir);
  char *argv[] = {(char *)bench, "-h", "127.0.0.1", "-p", ports, "-n", n, "-P", p, "-c", c, "-r", r,
                  "-d", d, "-t", (char *)tests, "--csv", NULL};
  char **env = clean_env();
  int po[2];
  if (pipe2(po, O_CLOEXEC)) wl_die("pipe: %s", strerror(errno));
  double t0 = wl_now_ns();
  pid_t pid = fork();
  if (pid < 0) wl_die("fork: %s", strerror(errno));
  if (pid == 0) {
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_RDONLY);
    if (fe < 0 || nul < 0) _exit(126);
    dup2(nul, 0); dup2(po[1], 1); dup2(fe, 2);
    execve(bench, argv, env);
    fprintf(stderr, "cannot run %s: %s\n", bench, strerror(errno));
    _exit(127);
  }
  free(env);
  close(po[1]);
  size_t len = 0, bcap = 65536;
  char *out = malloc(bcap);
  if (!out) wl_die("out of memory");
  ssize_t got;
  while ((got = read(po[0], out + len, bcap - len - 1)) > 0 || (got < 0 && errno == EINTR))
    if (got > 0 && (len += (size_t)got) + 1 >= bcap) break;
  out[len] = 0;
  close(po[0]);
  int st;
  waitpid(pid, &st, 0);
  *wall_ns = wl_now_ns() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    wl_die("redis-benchmark failed (status 0x%x): %s", st, last_line(err));
  unlink(err);
  int k = 0;
  for (char *ln = out, *next; ln && *ln && k < cap; ln = next) {
    next = strchr(ln, '\n');
    if (next) *next++ = 0;
    /* "MSET (10 keys)","219780.22",... ; the header starts with "test" */
    if (ln[0] != '"' || !strncmp(ln, "\"test\"", 6)) continue;
    char *q = strchr(ln + 1, '"');
    if (!q || strncmp(q, "\",\"", 3)) continue;
    size_t l = 0;
    for (char *s = ln + 1; s < q && *s != ' ' && l < sizeof rows[k].name - 1; s++)
      rows[k].name[l++] = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '_';
    rows[k].name[l] = 0;
    char *end;
    rows[k].rps = strtod(q + 3, &end);
    if (end == q + 3 || *end != '"' || !isfinite(rows[k].rps) || rows[k].rps <= 0)
      wl_die("redis-benchmark gave no usable requests/s for %s ('%.40s'): too few requests for its "
             "millisecond clock? raise --requests", rows[k].name, q + 3);
    k++;
  }
  if (!k) wl_die("redis-benchmark printed no CSV rows (got '%.100s')", out);
  free(out);
  return k;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"requests", "requests per command (redis-benchmark -n)", 'u', &n_requests},
    {"clients", "parallel connections (-c)", 'u', &n_clients},
    {"pipeline", "requests per pipeline (-P)", 'u', &n_pipeline},
    {"keyspace", "random keys per command (-r)", 'u', &n_keyspace},
    {"datasize", "value size in bytes (-d, and of the loaded keys)", 'u', &n_datasize},
    {"keys", "keys loaded before the benchmark (key:0.. key:N-1; 0: none)", 'u', &n_keys},
    {"tests", "commands (-t), comma-separated", 's', &tests},
    {"server", "redis-server binary (name on PATH or path)", 's', &server_arg},
    {"benchmark", "redis-benchmark binary (name on PATH or path)", 's', &bench_arg},
    {"server-smaps", "copy the server's /proc/PID/smaps here before SHUTDOWN", 's', &server_smaps},
    {"server-log", "copy the server's output (the allocator's stats) here after it exits", 's', &server_log},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_redis", argc, argv, flags);
  if (n_requests < 100 || !n_clients || !n_pipeline || !n_keyspace || !n_datasize)
    wl_die("--requests must be at least 100 and --clients, --pipeline, --keyspace, --datasize positive");
  if (!*tests || strspn(tests, "abcdefghijklmnopqrstuvwxyz_,") != strlen(tests))
    wl_die("--tests wants comma-separated redis-benchmark test names, got '%s'", tests);
  char server[4096], bench[4096];
  if (!find_prog(server_arg, server, sizeof server))
    wl_die("%s not found (install Debian's redis-server: make setup, or pass --server PATH)", server_arg);
  if (!find_prog(bench_arg, bench, sizeof bench))
    wl_die("%s not found (install Debian's redis-tools: make setup, or pass --benchmark PATH)", bench_arg);
  if (wl_trace_path) fprintf(stderr, "wl_redis: --trace ignored: the server's accesses are not recorded\n");

  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tlbbench-redis-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) wl_die("mkdtemp %s: %s", dir, strerror(errno));
  have_dir = 1;
  atexit(cleanup);
  signal(SIGPIPE, SIG_IGN);

  const char *from = server_malloc_from(server);
  int port = start_server(server);
  if (n_keys) load_keys(port);
  cmd_rps_t rows[32];
  double wall_ns;
  int nrows = run_benchmark(bench, port, rows, 32, &wall_ns);

  char info[16384];
  long dbsize = -1, used_kb = -1;
  if (resp(port, "DBSIZE", info, sizeof info) > 0 && info[0] == ':') dbsize = strtol(info + 1, NULL, 10);
  if (dbsize <= 0) wl_die("the server holds %ld keys after the benchmark (expected some)", dbsize);
  if (resp(port, "INFO memory", info, sizeof info) > 0) used_kb = info_num(info, "used_memory:") / 1024;
  wl_peak_rss_override_kb = wl_status_kb(server_pid, "VmHWM:");
  wl_hugetlb_override_kb = wl_status_kb(server_pid, "HugetlbPages:");
  wl_resident_t res;
  if (wl_resident(server_pid, &res)) wl_die("cannot read /proc/%d/smaps", (int)server_pid);
  char path[4300];
  if (*server_smaps) {
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)server_pid);
    copy_file(path, server_smaps);
  }
  stop_server(port);
  if (*server_log) {
    snprintf(path, sizeof path, "%s/server.log", dir);
    copy_file(path, server_log);
  }

  /* nothing may be left but our own logs: no dump.rdb, no appendonly files */
  char left[512] = "";
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "server.log"))
      snprintf(left + strlen(left), sizeof left - strlen(left), " %s", e->d_name);
  if (d) closedir(d);
  if (left[0]) wl_die("redis-server left files behind in its --dir:%s", left);
  remove_dir();

  double secs = 0;
  for (int i = 0; i < nrows; i++) secs += (double)n_requests / rows[i].rps;
  double total = (double)n_requests * nrows, rps = total / secs;
  char extra[1800], resf[400];
  wl_resident_kv(&res, resf, sizeof resf);
  int l = snprintf(extra, sizeof extra,
                   "ns_per_op=%.2f op=request ops=%.0f rps=%.0f rps_wall=%.0f bench_wall_ms=%.1f "
                   "requests_per_cmd=%lu clients=%lu pipeline=%lu keyspace=%lu datasize=%lu keys=%lu dbsize=%ld "
                   "used_memory_kb=%ld traced=no tlb_source=unavailable:foreign-program%s",
                   1e9 / rps, total, rps, total / (wall_ns / 1e9), wall_ns / 1e6, n_requests, n_clients,
                   n_pipeline, n_keyspace, n_datasize, n_keys, dbsize, used_kb, resf);
  for (int i = 0; i < nrows && l < (int)sizeof extra - 48; i++)
    l += snprintf(extra + l, sizeof extra - (size_t)l, " rps_%s=%.0f", rows[i].name, rows[i].rps);
  wl_malloc_from_override = from;
  wl_result("redis", extra, NULL);
  return 0;
}
