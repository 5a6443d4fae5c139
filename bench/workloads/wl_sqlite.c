/* Workload 6: a real program — sqlite3 running a script (in-memory database: a table with an
 * index, bulk insert, point and range queries, updates, deletes, an aggregate).
 *
 * Timed: sqlite3 runs natively (it inherits this process's LD_PRELOAD, so the allocator under
 * test serves it); ns_per_op is wall time per row; peak RSS is sqlite3's own (wait4).
 * Trace (--trace): a smaller script (--trace-rows) runs under `valgrind --tool=lackey
 * --trace-mem=yes`; its data loads, stores and modifies (L/S/M; instruction fetches dropped)
 * are converted to the binary trace: the last --trace-max of them (the script's work rather than
 * the dynamic loader's start-up). The script's last command copies sqlite3's /proc/PID/smaps (--smaps).
 * hugetlb_kb is sqlite3's HugetlbPages at the end of its script (read by the script itself).
 * The hot set is not known for a foreign program, so no TLB-entry figures are reported. */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long n_rows = 20000, trace_rows = 300;
static const char *sqlite_bin = "/usr/bin/sqlite3";
static const char *valgrind_bin = "/usr/bin/valgrind";

/* smaps: copy sqlite3's smaps there at the end; htlb: write its HugetlbPages line there (the
 * hugetlbfs pages RSS leaves out; wait4 cannot see them) */
static void write_script(const char *path, unsigned long rows, const char *smaps, const char *htlb) {
  FILE *f = fopen(path, "w");
  if (!f) wl_die("cannot write %s: %s", path, strerror(errno));
  fprintf(f,
          "create table t(id integer primary key, k text, v blob, n integer);\n"
          "create index tk on t(k);\n"
          "begin;\n"
          "with recursive c(x) as (select 1 union all select x+1 from c where x<%lu)\n"
          "  insert into t select x, hex(randomblob(8)), randomblob(40 + abs(random()) %% 200), x %% 97 from c;\n"
          "commit;\n"
          "select count(*) from t where k between '4' and '8';\n"
          "with recursive c(x) as (select 1 union all select x+1 from c where x<%lu)\n"
          "  select sum(length(v)) from c join t on t.id = (x * 7919) %% %lu + 1;\n"
          "update t set v = randomblob(60) where n = 3;\n"
          "delete from t where n = 5;\n"
          "select n, count(*), sum(length(v)) from t group by n order by 2 desc limit 3;\n"
          "select k from t order by k limit 5 offset %lu;\n",
          rows, rows, rows, rows / 2);
  if (smaps) fprintf(f, ".shell cat /proc/$PPID/smaps > '%s'\n", smaps);
  if (htlb) fprintf(f, ".shell grep HugetlbPages /proc/$PPID/status > '%s'\n", htlb);
  fclose(f);
}

/* runs argv with stdin from `in`, stdout to /dev/null, fd 3 = log_fd (if >= 0) */
static pid_t spawn(char *const argv[], const char *in, int log_fd) {
  pid_t pid = fork();
  if (pid < 0) wl_die("fork: %s", strerror(errno));
  if (pid == 0) {
    int fi = open(in, O_RDONLY), fo = open("/dev/null", O_WRONLY);
    if (fi < 0 || fo < 0) _exit(126);
    dup2(fi, 0); dup2(fo, 1);
    if (log_fd >= 0) { dup2(log_fd, 3); if (log_fd != 3) close(log_fd); }
    execv(argv[0], argv);
    fprintf(stderr, "wl_sqlite: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  return pid;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"rows", "rows in the timed (native) run", 'u', &n_rows},
    {"trace-rows", "rows in the traced (lackey) run", 'u', &trace_rows},
    {"sqlite", "the sqlite3 binary", 's', &sqlite_bin},
    {"valgrind", "the valgrind binary (for --trace)", 's', &valgrind_bin},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_sqlite", argc, argv, flags);
  if (n_rows < 10 || trace_rows < 10) wl_die("--rows and --trace-rows must be at least 10");
  if (access(sqlite_bin, X_OK)) wl_die("sqlite3 not found at %s (install sqlite3 or pass --sqlite PATH)", sqlite_bin);
  char dir[] = "/tmp/tlbbench-sqlite-XXXXXX";
  if (!mkdtemp(dir)) wl_die("mkdtemp: %s", strerror(errno));
  char script[256];
  snprintf(script, sizeof script, "%s/run.sql", dir);

  char htlb[256];
  snprintf(htlb, sizeof htlb, "%s/hugetlb", dir);
  write_script(script, n_rows, NULL, htlb);
  char *nargv[] = {(char *)sqlite_bin, ":memory:", NULL};
  double t0 = wl_now_ns();
  pid_t pid = spawn(nargv, script, -1);
  int st;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0) wl_die("wait4: %s", strerror(errno));
  double ns = wl_now_ns() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) wl_die("sqlite3 failed (status 0x%x) on %s", st, script);
  wl_peak_rss_override_kb = ru.ru_maxrss;
  FILE *hf = fopen(htlb, "r");
  if (hf) {
    long kb;
    wl_hugetlb_override_kb = fscanf(hf, "HugetlbPages: %ld", &kb) == 1 ? kb : -1;
    fclose(hf);
    unlink(htlb);
  }

  const char *traced = "no";
  size_t lackey_total = 0;
  if (wl_trace_path) {
    if (access(valgrind_bin, X_OK)) {
      fprintf(stderr, "wl_sqlite: valgrind not found at %s: no trace recorded\n", valgrind_bin);
      traced = "no-valgrind";
    } else {
      char tscript[256];
      snprintf(tscript, sizeof tscript, "%s/trace.sql", dir);
      char smaps_abs[4096] = "";
      if (wl_smaps_path && !realpath(wl_smaps_path, smaps_abs)) {
        int fd = open(wl_smaps_path, O_WRONLY | O_CREAT, 0644);  /* realpath needs it to exist */
        if (fd >= 0) close(fd);
        if (!realpath(wl_smaps_path, smaps_abs)) wl_die("bad --smaps path %s", wl_smaps_path);
      }
      write_script(tscript, trace_rows, wl_smaps_path ? smaps_abs : NULL, NULL);
      int p[2];
      if (pipe(p)) wl_die("pipe: %s", strerror(errno));
      char *vargv[] = {(char *)valgrind_bin, "--tool=lackey", "--trace-mem=yes", "--log-fd=3",
                       (char *)sqlite_bin, ":memory:", NULL};
      wl_trace_open();
      pid_t vp = spawn(vargv, tscript, p[1]);
      close(p[1]);
      lackey_total = wl_lackey_convert(p[0], 0, NULL);
      close(p[0]);
      waitpid(vp, &st, 0);
      wl_trace_close();
      traced = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "lackey" : "lackey-failed";
      unlink(tscript);
    }
  }
  unlink(script);
  rmdir(dir);
  char extra[256];
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=row ops=%lu wall_ms=%.1f traced=%s lackey_accesses=%zu tlb_source=unavailable:foreign-program",
           ns / (double)n_rows, n_rows, ns / 1e6, traced, lackey_total);
  wl_result("sqlite", extra, NULL);
  return 0;
}
