/* A real program: the sqlite3 command-line shell on a database file larger than the L2 TLB
 * reaches with 4 KiB pages (3072 x 4 KiB = 12 MiB): --rows rows of --datasize random bytes with
 * a text key and an index on it (~30 MB at the demo size), a page cache large enough to hold all
 * of it (sqlite's page cache is heap memory: the allocator under test places it), then --queries
 * random point queries by rowid and as many through the index, each statement timed by sqlite3
 * itself (.timer). sqlite3 inherits LD_PRELOAD and the allocator's settings.
 *
 * ns_per_op = the two query statements' time per query. At its peak (database loaded into the
 * cache and queried, before sqlite3 frees anything) sqlite3 waits on its input while this
 * workload reads its /proc/PID/smaps: the TLB entries for its resident memory (wl_foreign.h),
 * VmHWM and HugetlbPages. The database lives in a private temporary directory, removed at the
 * end. No trace. */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long n_rows = 150000, n_queries = 200000, datasize = 150;
static const char *sqlite_bin = "/usr/bin/sqlite3";

typedef struct { double secs[4]; int n; } timers_t;

/* "Run Time: real 0.284 user 0.154401 sys 0.020576" */
static void timer_line(const char *line, void *arg) {
  timers_t *t = arg;
  if (!strncmp(line, "Run Time: real ", 15) && t->n < 4) t->secs[t->n++] = strtod(line + 15, NULL);
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"rows", "rows in the database", 'u', &n_rows},
    {"queries", "random point queries by rowid, and as many through the index", 'u', &n_queries},
    {"datasize", "bytes per row's value", 'u', &datasize},
    {"sqlite", "the sqlite3 binary", 's', &sqlite_bin},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_sqlitedb", argc, argv, flags);
  if (n_rows < 10 || n_queries < 10 || !datasize) wl_die("--rows and --queries must be at least 10, --datasize positive");
  if (access(sqlite_bin, X_OK)) wl_die("sqlite3 not found at %s (install sqlite3: make setup, or pass --sqlite PATH)", sqlite_bin);
  if (wl_trace_path) fprintf(stderr, "wl_sqlitedb: --trace ignored: sqlite3's accesses are not recorded\n");
  const char *tmp = getenv("TMPDIR");
  char dir[4096], db[4200], log[4200];
  snprintf(dir, sizeof dir, "%s/tlbbench-sqlitedb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) wl_die("mkdtemp %s: %s", dir, strerror(errno));
  snprintf(db, sizeof db, "%s/db", dir);
  snprintf(log, sizeof log, "%s/log", dir);

  /* a page cache twice the data: the whole database stays in it */
  unsigned long cache_kb = 2 * n_rows * (datasize + 40) / 1024 + 4096;
  char script[4096];
  int n = snprintf(script, sizeof script,
      "PRAGMA journal_mode=OFF;\n"
      "PRAGMA synchronous=OFF;\n"
      "PRAGMA cache_size=-%lu;\n"
      "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);\n"
      "BEGIN;\n"
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)\n"
      "  INSERT INTO t SELECT x, printf('k%%010d', (x * 2654435761) %% 4294967296), randomblob(%lu) FROM c;\n"
      "COMMIT;\n"
      "CREATE INDEX tk ON t(k);\n"
      "SELECT count(*), sum(length(v)) FROM t;\n"           /* warm-up: table and index into the cache */
      "SELECT count(*) FROM t WHERE k > '';\n"
      ".timer on\n"
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)\n"
      "  SELECT sum(length(v)) FROM c JOIN t ON t.id = 1 + abs(random()) %% %lu;\n"
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)\n"
      "  SELECT sum(length(v)) FROM c JOIN t ON t.k = printf('k%%010d', ((1 + abs(random()) %% %lu) * 2654435761) %% 4294967296);\n"
      ".timer off\n"
      ".shell echo TLBBENCH-PEAK\n",
      cache_kb, n_rows, datasize, n_queries, n_rows, n_queries, n_rows);
  if (n >= (int)sizeof script) wl_die("script too long");
  char *sargv[] = {(char *)sqlite_bin, "-batch", db, NULL};
  wl_child_t c;
  wl_child_start(&c, sargv, NULL, log);
  wl_child_write(&c, script, (size_t)n);
  timers_t t = {{0}, 0};   /* sqlite3 flushes its output before .shell, or at its exit */
  wl_child_wait(&c, "TLBBENCH-PEAK", 600, NULL, timer_line, &t);
  /* the peak: sqlite3 waits for more input */
  wl_resident_t r;
  if (wl_resident(c.pid, &r)) wl_die("cannot read /proc/%d/smaps", (int)c.pid);
  wl_peak_rss_override_kb = wl_status_kb(c.pid, "VmHWM:");
  wl_hugetlb_override_kb = wl_status_kb(c.pid, "HugetlbPages:");
  wl_child_close_input(&c);
  wl_child_read_all(&c, 60, timer_line, &t);
  wl_child_finish(&c, 60, NULL);
  unlink(db);
  unlink(log);
  rmdir(dir);
  if (t.n != 2 || !(t.secs[0] > 0) || !(t.secs[1] > 0))
    wl_die("sqlite3 printed %d timings (expected 2 positive 'Run Time: real' lines)", t.n);
  double ns = (t.secs[0] + t.secs[1]) * 1e9;
  char res[400], extra[800];
  wl_resident_kv(&r, res, sizeof res);
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=query ops=%lu rows=%lu datasize=%lu rowid_s=%.3f index_s=%.3f "
           "traced=no tlb_source=unavailable:foreign-program%s",
           ns / (2.0 * (double)n_queries), 2 * n_queries, n_rows, datasize, t.secs[0], t.secs[1], res);
  wl_result("sqlite-db", extra, NULL);
  return 0;
}
