/* SQLite linked in: a driver that links libsqlite3 and serves an order-entry database from its
 * page cache, under SQLite's default allocator (glibc), a preloaded allocator, or tlbpack's
 * SQLite adapter (--adapter LIB: dlopen'd, tp_sqlite_install before SQLite starts; no preload).
 *
 * The database (TPC-C's customer and order tables, cut down): --customers rows of customer(id,
 * name, city, balance, ~150 B of data) with indexes on name and city, and 5 orders each
 * (customer, time, amount, 30 B note) with indexes on customer and time; about 1 KiB per
 * customer. It is built by a child process into a file of a private temporary directory; this
 * process opens it, reads every page of every table and index into a page cache large enough
 * for all of it (scans), then runs --queries queries, 100 to a transaction: 40% point lookups
 * of a customer by name, 20% range scans of orders by time (~50 rows), 20% joins (a customer
 * by name, its orders by the customer index), 20% updates (a balance, an order's amount), keys
 * uniform. ns_per_op = time per query; answers = a hash of every query's answer (the same under
 * every allocator); at the peak (queries done, database open) the TLB entries of this process's
 * resident memory (wl_foreign.h), Rss and hugetlb pages.
 *
 * Trace (--trace): a smaller database (--trace-customers) is built natively, then this program
 * runs its query phase under `valgrind --tool=lackey` (the same allocator: preload or adapter):
 * it touches a mark page where --trace-queries queries start and where they end, after as many
 * warm-up queries; the trace is the accesses between, the B record at the first mark. The
 * RESULT's traced_ops says how many queries the measured region holds (per-query figures). */
#define _GNU_SOURCE
#include "wl_common.h"
#include "wl_foreign.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long n_customers = 40000, n_queries = 100000, trace_customers = 16000, trace_queries = 200;
static const char *adapter, *db_arg, *valgrind_bin = "/usr/bin/valgrind";
static int integrity, lackey_child;

#define ORDERS_PER 5
#define TXN_OPS 100
/* A page of its own that the traced phase touches at its start and end (wl_lackey_convert). */
#define MARK_ADDR ((uintptr_t)0x5a5a00000000ull)

static void check(sqlite3 *db, int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) wl_die("sqlite: %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) wl_die("sqlite: %s: %s", sql, err ? err : "?");
}

/* a customer's name: the same in C and in the build's SQL */
static void name_of(unsigned long k, char *buf, size_t n) {
  snprintf(buf, n, "c%010llu", (unsigned long long)((k * 2654435761ull) % 4294967296ull));
}

static void build(const char *path, unsigned long customers) {
  sqlite3 *db;
  check(NULL, sqlite3_open(path, &db), path);
  exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;"
           "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city INTEGER, balance INTEGER, data BLOB);"
           "CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER, ts INTEGER, amount INTEGER, note BLOB);");
  char sql[1024];
  unsigned long orders = customers * ORDERS_PER;
  snprintf(sql, sizeof sql,
           "BEGIN;"
           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)"
           " INSERT INTO customer SELECT x, printf('c%%010d', (x * 2654435761) %% 4294967296), x %% 1000,"
           " 1000, randomblob(100 + x %% 100) FROM c;"
           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%lu)"
           " INSERT INTO orders SELECT x, 1 + (x * 7919) %% %lu, (x * 2654435761) %% %lu, x %% 1000, randomblob(30) FROM c;"
           "COMMIT;"
           "CREATE INDEX customer_name ON customer(name); CREATE INDEX customer_city ON customer(city);"
           "CREATE INDEX orders_cust ON orders(cust); CREATE INDEX orders_ts ON orders(ts);",
           customers, orders, customers, 4 * orders);
  exec(db, sql);
  check(db, sqlite3_close(db), "close");
}

/* builds in a child process: the measured process starts from an opened file, as a server does */
static void build_in_child(const char *path, unsigned long customers) {
  pid_t pid = fork();
  if (pid < 0) wl_die("fork: %s", strerror(errno));
  if (pid == 0) {
    build(path, customers);
    _exit(0);
  }
  int st;
  if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) wl_die("building %s failed (status %#x)", path, st);
}

/* --adapter auto: the library built beside this program (build/bench/.. = build/) */
static void install_adapter(void) {
  static char path[4200];
  if (!strcmp(adapter, "auto")) {
    char self[4096];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l <= 0) wl_die("cannot read /proc/self/exe");
    self[l] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(path, sizeof path, "%s/../libtlbpack-sqlite.so", self);
    adapter = path;
  }
  void *h = dlopen(adapter, RTLD_NOW | RTLD_LOCAL);
  if (!h) wl_die("--adapter %s: %s", adapter, dlerror());
  int (*install)(unsigned) = (int (*)(unsigned))dlsym(h, "tp_sqlite_install");
  if (!install) wl_die("--adapter %s has no tp_sqlite_install", adapter);
  int rc = install(3u); /* TP_SQLITE_ALL */
  if (rc != SQLITE_OK) wl_die("tp_sqlite_install: %s", sqlite3_errstr(rc));
}

typedef struct { sqlite3_stmt *point, *range, *join, *upd_c, *upd_o, *begin, *commit; } stmts_t;

static uint64_t fold(uint64_t h, int64_t v) { return (h ^ (uint64_t)v) * 1099511628211ull; }

static uint64_t step_all(sqlite3 *db, sqlite3_stmt *st, uint64_t h) {
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    for (int i = 0; i < sqlite3_column_count(st); i++) h = fold(h, sqlite3_column_int64(st, i));
  check(db, rc, sqlite3_sql(st));
  sqlite3_reset(st);
  return h;
}

/* n queries of the mix from seed; returns the hash of their answers folded into h */
static uint64_t run_queries(sqlite3 *db, stmts_t *s, unsigned long n, uint64_t seed, uint64_t h) {
  unsigned long orders = n_customers * ORDERS_PER;
  char name[24];
  for (unsigned long i = 0; i < n; i++) {
    if (i % TXN_OPS == 0) step_all(db, s->begin, 0);
    uint64_t r = wl_rand(&seed);
    unsigned long k = 1 + (r >> 8) % n_customers;
    switch (r % 10) {
    case 0: case 1: case 2: case 3:
      name_of(k, name, sizeof name);
      sqlite3_bind_text(s->point, 1, name, -1, SQLITE_STATIC);
      h = step_all(db, s->point, h);
      break;
    case 4: case 5:
      sqlite3_bind_int64(s->range, 1, (sqlite3_int64)((r >> 8) % (4 * orders)));
      h = step_all(db, s->range, h);
      break;
    case 6: case 7:
      name_of(k, name, sizeof name);
      sqlite3_bind_text(s->join, 1, name, -1, SQLITE_STATIC);
      h = step_all(db, s->join, h);
      break;
    case 8:
      sqlite3_bind_int64(s->upd_c, 1, (sqlite3_int64)k);
      sqlite3_bind_int64(s->upd_c, 2, (sqlite3_int64)(r & 255));
      step_all(db, s->upd_c, 0);
      h = fold(h, sqlite3_changes(db));
      break;
    default:
      sqlite3_bind_int64(s->upd_o, 1, (sqlite3_int64)(1 + (r >> 8) % orders));
      step_all(db, s->upd_o, 0);
      h = fold(h, sqlite3_changes(db));
    }
    if (i % TXN_OPS == TXN_OPS - 1 || i + 1 == n) step_all(db, s->commit, 0);
  }
  return h;
}

static void prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st) {
  check(db, sqlite3_prepare_v2(db, sql, -1, st, NULL), sql);
}

static volatile uint64_t *mark_page;

/* a store to the first half of the page marks the start, to the second half the end */
static void touch_mark(int end) {
  if (mark_page) mark_page[end ? 256 : 0] = 1;
}

typedef struct { double ns; uint64_t answers; long db_kb; int integrity_ok; wl_resident_t res; } phase_t;

/* Opens the database, reads all of it into the page cache, runs `warm` then `queries` queries
 * (the latter timed, between the marks when traced) and measures the peak. */
static void phase(const char *path, unsigned long warm, unsigned long queries, phase_t *out) {
  sqlite3 *db;
  check(NULL, sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), path);
  off_t bytes = 0;
  int fd = open(path, O_RDONLY);
  if (fd >= 0) { bytes = lseek(fd, 0, SEEK_END); close(fd); }
  out->db_kb = (long)(bytes / 1024);
  char sql[256];
  /* a cache for all of the file and what the updates add, without the OS's mmap of it */
  snprintf(sql, sizeof sql, "PRAGMA cache_size=-%ld; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA mmap_size=0",
           out->db_kb + out->db_kb / 4 + 4096);
  exec(db, sql);
  /* every page of every b-tree, cheaply (the traced run does this under lackey): count(*) on a
   * table walks its pages without decoding rows; dbstat reads each index's pages through the
   * same pager, so they land in this connection's cache */
  const char *load[] = {"SELECT count(*) FROM customer NOT INDEXED", "SELECT count(*) FROM orders NOT INDEXED",
                        "SELECT sum(ncell) FROM dbstat WHERE name = 'customer_name'",
                        "SELECT sum(ncell) FROM dbstat WHERE name = 'customer_city'",
                        "SELECT sum(ncell) FROM dbstat WHERE name = 'orders_cust'",
                        "SELECT sum(ncell) FROM dbstat WHERE name = 'orders_ts'"};
  for (size_t i = 0; i < sizeof load / sizeof load[0]; i++) exec(db, load[i]);
  stmts_t s;
  prepare(db, "SELECT id, balance, city FROM customer WHERE name = ?1", &s.point);
  prepare(db, "SELECT count(*), sum(amount) FROM orders WHERE ts BETWEEN ?1 AND ?1 + 200", &s.range);
  prepare(db, "SELECT count(*), sum(o.amount) FROM customer c JOIN orders o ON o.cust = c.id WHERE c.name = ?1", &s.join);
  prepare(db, "UPDATE customer SET balance = balance + ?2 WHERE id = ?1", &s.upd_c);
  prepare(db, "UPDATE orders SET amount = amount + 1 WHERE id = ?1", &s.upd_o);
  prepare(db, "BEGIN", &s.begin);
  prepare(db, "COMMIT", &s.commit);
  run_queries(db, &s, warm, wl_seed * 7 + 1, 0);
  touch_mark(0);
  double t0 = wl_now_ns();
  out->answers = run_queries(db, &s, queries, wl_seed, 1469598103934665603ull);
  out->ns = wl_now_ns() - t0;
  touch_mark(1);
  /* the peak: every page cached, the queries done */
  wl_note_peak();
  if (wl_resident(getpid(), &out->res)) wl_die("cannot read /proc/self/smaps");
  wl_smaps_copy();
  out->integrity_ok = -1;
  if (integrity) {
    sqlite3_stmt *st;
    prepare(db, "PRAGMA integrity_check", &st);
    out->integrity_ok = sqlite3_step(st) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
  }
  sqlite3_stmt *all[] = {s.point, s.range, s.join, s.upd_c, s.upd_o, s.begin, s.commit};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
  check(db, sqlite3_close(db), "close");
}

/* The traced phase: this program on a smaller database under valgrind lackey. Returns the
 * queries of the measured region (estimated from the records when the window cut the phase),
 * or -1 when nothing was recorded. */
static double trace_run(const char *dir, char *traced, size_t tn, size_t *lackey_total) {
  snprintf(traced, tn, "no");
  if (access(valgrind_bin, X_OK)) {
    fprintf(stderr, "wl_sqlitelib: valgrind not found at %s: no trace recorded\n", valgrind_bin);
    snprintf(traced, tn, "no-valgrind");
    return -1;
  }
  char db[4200], cust[32], q[32], warm[32], self[4096];
  snprintf(db, sizeof db, "%s/trace.db", dir);
  build_in_child(db, trace_customers);
  ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
  if (l <= 0) wl_die("cannot read /proc/self/exe");
  self[l] = 0;
  snprintf(cust, sizeof cust, "%lu", trace_customers);
  snprintf(q, sizeof q, "%lu", trace_queries);
  snprintf(warm, sizeof warm, "%lu", wl_seed);
  char *argv[24];
  int k = 0;
  argv[k++] = (char *)valgrind_bin; argv[k++] = "--tool=lackey"; argv[k++] = "--trace-mem=yes";
  argv[k++] = "--log-fd=3"; argv[k++] = self; argv[k++] = "--lackey-child"; argv[k++] = "--db"; argv[k++] = db;
  argv[k++] = "--customers"; argv[k++] = cust; argv[k++] = "--queries"; argv[k++] = q;
  argv[k++] = "--seed"; argv[k++] = warm;
  if (adapter) { argv[k++] = "--adapter"; argv[k++] = (char *)adapter; }
  if (wl_smaps_path) { argv[k++] = "--smaps"; argv[k++] = (char *)wl_smaps_path; }
  argv[k] = NULL;
  int p[2];
  if (pipe(p)) wl_die("pipe: %s", strerror(errno));
  wl_trace_open();
  pid_t pid = fork();
  if (pid < 0) wl_die("fork: %s", strerror(errno));
  if (pid == 0) {
    close(p[0]); /* before the dup2s: it may be fd 3 */
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    if (p[1] != 3) { dup2(p[1], 3); close(p[1]); }
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  wl_lackey_span_t span;
  *lackey_total = wl_lackey_convert(p[0], MARK_ADDR, &span);
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  wl_trace_close();
  unlink(db);
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    snprintf(traced, tn, "lackey-failed");
    return -1;
  }
  snprintf(traced, tn, span.marked ? "lackey" : "lackey-unmarked");
  if (!span.marked || !span.between) return -1;
  return (double)trace_queries * (double)span.measured / (double)span.between;
}

int main(int argc, char **argv) {
  const wl_flag_t flags[] = {
    {"customers", "customers in the database (5 orders each; ~1 KiB per customer)", 'u', &n_customers},
    {"queries", "queries in the timed phase", 'u', &n_queries},
    {"adapter", "libtlbpack-sqlite.so (or auto: the one built beside this program): install tlbpack's SQLite adapter (tp_sqlite_install) first", 's', &adapter},
    {"integrity", "run PRAGMA integrity_check at the end (integrity=ok|bad in the RESULT)", 'b', &integrity},
    {"trace-customers", "customers in the traced run's database", 'u', &trace_customers},
    {"trace-queries", "queries in the traced run (after as many warm-up queries)", 'u', &trace_queries},
    {"valgrind", "the valgrind binary (for --trace)", 's', &valgrind_bin},
    {"lackey-child", "(internal) the traced phase itself, on --db", 'b', &lackey_child},
    {"db", "(internal) the database the traced phase opens", 's', &db_arg},
    {NULL, NULL, 0, NULL}};
  wl_parse_flags("wl_sqlitelib", argc, argv, flags);
  if (n_customers < 100 || trace_customers < 100 || !n_queries || !trace_queries)
    wl_die("--customers and --trace-customers must be at least 100, --queries and --trace-queries positive");
  if (adapter) install_adapter(); /* before anything starts SQLite */
  phase_t ph;
  if (lackey_child) {
    if (!db_arg) wl_die("--lackey-child needs --db");
    void *m = mmap((void *)MARK_ADDR, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m == (void *)MARK_ADDR) mark_page = m;
    else fprintf(stderr, "wl_sqlitelib: no mark page at %#lx: the trace's region is estimated\n", (unsigned long)MARK_ADDR);
    phase(db_arg, n_queries, n_queries, &ph);
    return 0;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[4096], db[4200];
  snprintf(dir, sizeof dir, "%s/tlbbench-sqlitelib-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) wl_die("mkdtemp %s: %s", dir, strerror(errno));
  snprintf(db, sizeof db, "%s/db", dir);
  build_in_child(db, n_customers);
  phase(db, n_queries / 10, n_queries, &ph);
  unlink(db);
  if (integrity && ph.integrity_ok != 1) wl_die("PRAGMA integrity_check did not say ok");

  char traced[32] = "no";
  size_t lackey_total = 0;
  double traced_ops = -1;
  if (wl_trace_path) {
    traced_ops = trace_run(dir, traced, sizeof traced, &lackey_total);
  }
  rmdir(dir);
  char res[400], extra[900];
  wl_resident_kv(&ph.res, res, sizeof res);
  snprintf(extra, sizeof extra,
           "ns_per_op=%.2f op=query ops=%lu qps=%.0f customers=%lu db_kb=%ld answers=%016llx integrity=%s "
           "adapter=%s traced=%s lackey_accesses=%zu traced_ops=%.1f tlb_source=unavailable:page-cache%s",
           ph.ns / (double)n_queries, n_queries, (double)n_queries * 1e9 / ph.ns, n_customers, ph.db_kb,
           (unsigned long long)ph.answers, ph.integrity_ok < 0 ? "skipped" : ph.integrity_ok ? "ok" : "bad",
           adapter ? "yes" : "no", traced, lackey_total, traced_ops, res);
  wl_result("sqlite-lib", extra, NULL);
  return 0;
}
