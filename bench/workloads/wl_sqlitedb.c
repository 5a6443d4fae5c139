/* A real program: the sqlite3 command-line shell on a database file larger than the L2 TLB
 * reaches with 4 KiB pages (3072 x 4 KiB = 12 MiB): --rows rows of --datasize random bytes with
 * a text key and an index on it (~30 MB at the demo size), a page cache large enough to hold all
 * of it (sqlite's page cache is heap memory: the allocator under test places it), then --queries
 * random point queries by rowid and as many through the index, each statement timed by sqlite3
 * itself (.timer). sqlite3 inherits LD_PRELOAD and the allocator's settings.
 *
 * --via python3 (the sqlite-py row): the same database built and cached by a program that embeds
 * SQLite, python3 with its sqlite3 module (libsqlite3 linked into the interpreter, not the shell),
 * and the point queries made one at a time from Python, each a statement executed and its row
 * fetched into a Python object, timed by python3 (time.perf_counter). The queries run in one read
 * transaction, as the shell's two statements do: in autocommit each query would take and drop
 * the file's lock and re-read its header (system calls, not memory). The interpreter's own
 * objects live beside SQLite's page cache in the heap.
 *
 * ns_per_op = the two query phases' time per query. At its peak (database loaded into the
 * cache and queried, before the program frees anything) sqlite3 or python3 waits on its input
 * while this workload reads its /proc/PID/smaps: the TLB entries for its resident memory
 * (wl_foreign.h), VmHWM and HugetlbPages. The database lives in a private temporary directory,
 * removed at the end. No trace. */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long n_rows = 150000, n_queries = 200000, datasize = 150;
static const char *sqlite_bin = "/usr/bin/sqlite3", *python_bin = "/usr/bin/python3", *via = "sqlite3";

typedef struct { double secs[4]; int n; } timers_t;

/* "Run Time: real 0.284 user 0.154401 sys 0.020576" */
static void timer_line(const char *line, void *arg) {
  timers_t *t = arg;
  if (!strncmp(line, "Run Time: real ", 15) && t->n < 4) t->secs[t->n++] = strtod(line + 15, NULL);
}

/* --via python3: argv = db, the SQL that builds it, rows, queries, seed, datasize. Reads the
 * whole database into the page cache (the table, then the index), then the queries one
 * statement each, and prints the two phases' seconds; then waits on stdin (the peak). The keys
 * are those the SQL gives row x: 'k' + (x * 2654435761 mod 2^32), ten digits (odd multiplier:
 * one row per key). */
static const char py_script[] =
    "import random, sqlite3, sys, time\n"
    "db, setup = sys.argv[1], sys.argv[2]\n"
    "rows, queries, seed, size = (int(a) for a in sys.argv[3:7])\n"
    "con = sqlite3.connect(db, isolation_level=None)\n"
    "con.executescript(setup)\n"
    "cur = con.cursor()\n"
    "n, total = cur.execute('SELECT count(*), sum(length(v)) FROM t').fetchone()\n"
    "ni = cur.execute(\"SELECT count(*) FROM t WHERE k > ''\").fetchone()[0]\n"
    "if n != rows or ni != rows or total != rows * size:\n"
    "    sys.exit('wl_sqlitedb: the database has %d rows (%d through the index, %d bytes), expected %d' % (n, ni, total, rows))\n"
    "rnd = random.Random(seed)\n"
    "s = 0\n"
    "cur.execute('BEGIN')\n"
    "t0 = time.perf_counter()\n"
    "for _ in range(queries):\n"
    "    s += len(cur.execute('SELECT v FROM t WHERE id = ?', (rnd.randint(1, rows),)).fetchone()[0])\n"
    "t1 = time.perf_counter()\n"
    "for _ in range(queries):\n"
    "    k = 'k%010d' % (rnd.randint(1, rows) * 2654435761 % 4294967296)\n"
    "    s += len(cur.execute('SELECT v FROM t WHERE k = ?', (k,)).fetchone()[0])\n"
    "t2 = time.perf_counter()\n"
    "cur.execute('COMMIT')\n"
    "print('TLBBENCH-PEAK rowid_s=%.6f index_s=%.6f bytes=%d' % (t1 - t0, t2 - t1, s), flush=True)\n"
    "sys.stdin.read()\n";

/* The private directory, its database and the program's log: removed at exit, a failed run's
 * (wl_die) too, so that no half-built database of hundreds of MB stays in TMPDIR. */
static char dir[4096], db[4200], log_path[4200];
static void remove_dir(void) {
  unlink(db);
  unlink(log_path);
  rmdir(dir);
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"rows", "rows in the database", 'u', &n_rows},
    {"queries", "random point queries by rowid, and as many through the index", 'u', &n_queries},
    {"datasize", "bytes per row's value", 'u', &datasize},
    {"via", "the program: sqlite3 (the shell, the sqlite-db row) or python3 (its sqlite3 module, sqlite-py)", 's', &via},
    {"sqlite", "the sqlite3 binary", 's', &sqlite_bin},
    {"python", "the python3 binary (--via python3)", 's', &python_bin},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_sqlitedb", argc, argv, flags);
  int py = !strcmp(via, "python3");
  if (!py && strcmp(via, "sqlite3")) wl_die("--via must be sqlite3 or python3, got '%s'", via);
  if (n_rows < 10 || n_queries < 10 || !datasize) wl_die("--rows and --queries must be at least 10, --datasize positive");
  if (!py && access(sqlite_bin, X_OK)) wl_die("sqlite3 not found at %s (install sqlite3: make setup, or pass --sqlite PATH)", sqlite_bin);
  if (py && access(python_bin, X_OK)) wl_die("python3 not found at %s (pass --python PATH)", python_bin);
  if (wl_trace_path) fprintf(stderr, "wl_sqlitedb: --trace ignored: %s's accesses are not recorded\n", via);
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tlbbench-sqlitedb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) wl_die("mkdtemp %s: %s", dir, strerror(errno));
  snprintf(db, sizeof db, "%s/db", dir);
  snprintf(log_path, sizeof log_path, "%s/log", dir);
  atexit(remove_dir);

  /* a page cache twice the data: the whole database stays in it */
  unsigned long cache_kb = 2 * n_rows * (datasize + 40) / 1024 + 4096;
  char setup[2048];
  int ls = snprintf(setup, sizeof setup,
      "PRAGMA journal_mode=OFF;\n"
      "PRAGMA synchronous=OFF;\n"
      "PRAGMA cache_size=-%lu;\n"
      "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);\n"
      "BEGIN;\n"
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)\n"
      "  INSERT INTO t SELECT x, printf('k%%010d', (x * 2654435761) %% 4294967296), randomblob(%lu) FROM c;\n"
      "COMMIT;\n"
      "CREATE INDEX tk ON t(k);\n",
      cache_kb, n_rows, datasize);
  if (ls >= (int)sizeof setup) wl_die("setup script too long");
  char script[4096];
  int n = 0;
  if (!py) {
    n = snprintf(script, sizeof script,
        "%s"
        "SELECT count(*), sum(length(v)) FROM t;\n"           /* warm-up: table and index into the cache */
        "SELECT count(*) FROM t WHERE k > '';\n"
        ".timer on\n"
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)\n"
        "  SELECT sum(length(v)) FROM c JOIN t ON t.id = 1 + abs(random()) %% %lu;\n"
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)\n"
        "  SELECT sum(length(v)) FROM c JOIN t ON t.k = printf('k%%010d', ((1 + abs(random()) %% %lu) * 2654435761) %% 4294967296);\n"
        ".timer off\n"
        ".shell echo TLBBENCH-PEAK\n",
        setup, n_queries, n_rows, n_queries, n_rows);
    if (n >= (int)sizeof script) wl_die("script too long");
  }
  char a[4][24];
  snprintf(a[0], sizeof a[0], "%lu", n_rows);
  snprintf(a[1], sizeof a[1], "%lu", n_queries);
  snprintf(a[2], sizeof a[2], "%lu", wl_seed);
  snprintf(a[3], sizeof a[3], "%lu", datasize);
  char *sargv[] = {(char *)sqlite_bin, "-batch", db, NULL};
  char *pargv[] = {(char *)python_bin, "-c", (char *)py_script, db, setup, a[0], a[1], a[2], a[3], NULL};
  wl_child_t c;
  wl_child_start(&c, py ? pargv : sargv, NULL, log_path);
  if (!py) wl_child_write(&c, script, (size_t)n);
  timers_t t = {{0}, 0};   /* sqlite3 flushes its output before .shell, or at its exit */
  const char *peak = wl_child_wait(&c, "TLBBENCH-PEAK", 600, NULL, py ? NULL : timer_line, &t);
  if (py) {
    const char *p;
    double bytes = -1;
    if ((p = strstr(peak, "rowid_s="))) t.secs[t.n++] = strtod(p + 8, NULL);
    if ((p = strstr(peak, "index_s="))) t.secs[t.n++] = strtod(p + 8, NULL);
    if ((p = strstr(peak, "bytes="))) bytes = strtod(p + 6, NULL);
    /* every query found its row: a wrong key would have failed in python3 (no row to fetch) */
    if (bytes != 2.0 * (double)n_queries * (double)datasize)
      wl_die("python3 reported '%s' (expected bytes=%lu: %lu queries of %lu bytes)", peak,
             2 * n_queries * datasize, 2 * n_queries, datasize);
  }
  /* the peak: the program waits for more input */
  wl_resident_t r;
  if (wl_resident(c.pid, &r)) wl_die("cannot read /proc/%d/smaps", (int)c.pid);
  wl_peak_rss_override_kb = wl_status_kb(c.pid, "VmHWM:");
  wl_hugetlb_override_kb = wl_status_kb(c.pid, "HugetlbPages:");
  wl_child_close_input(&c);
  wl_child_read_all(&c, 60, py ? NULL : timer_line, &t);
  wl_child_finish(&c, 60, NULL);
  struct stat st;
  long db_kb = stat(db, &st) == 0 ? (long)(st.st_size / 1024) : -1;
  remove_dir();
  if (t.n != 2 || !(t.secs[0] > 0) || !(t.secs[1] > 0))
    wl_die("%s printed %d timings (expected 2 positive ones%s)", via, t.n, py ? "" : ": 'Run Time: real' lines");
  double ns = (t.secs[0] + t.secs[1]) * 1e9;
  char res[400], extra[800];
  wl_resident_kv(&r, res, sizeof res);
  snprintf(extra, sizeof extra, "ns_per_op=%.2f op=query ops=%lu rows=%lu datasize=%lu db_kb=%ld rowid_s=%.3f index_s=%.3f "
           "via=%s traced=no tlb_source=unavailable:foreign-program%s",
           ns / (2.0 * (double)n_queries), 2 * n_queries, n_rows, datasize, db_kb, t.secs[0], t.secs[1], via, res);
  wl_result(py ? "sqlite-py" : "sqlite-db", extra, NULL);
  return 0;
}
