/* tlbpack-sqlite (tp_sqlite.h): SQLite's allocator and page cache on tlbpack. Each test runs in a
 * process of its own (Criterion), so each starts with SQLite uninitialized. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_sqlite.h"

static char dir[64];

static void mkdir_tmp(void) {
  snprintf(dir, sizeof dir, "/tmp/tp-sqlite-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(sqlite, .init = mkdir_tmp, .fini = rm_tmp, .timeout = 60);

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, err ? err : sqlite3_errstr(rc));
}

static int64_t one_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s: %s", sql, sqlite3_errmsg(db));
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static void integrity_ok(sqlite3 *db) {
  sqlite3_stmt *st;
  cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
  sqlite3_finalize(st);
}

static sqlite3 *open_db(const char *name) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  sqlite3 *db;
  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK, "open %s", path);
  return db;
}

/* A database of `rows` rows of about 200 bytes with two indexes, then a mix that moves pages
 * around: deletes and inserts under auto_vacuum=FULL (pages relocated: xRekey; the file
 * shrinks: xTruncate), updates, a VACUUM. Returns a hash of every query's answer. */
static uint64_t workload(sqlite3 *db, int rows) {
  exec(db, "PRAGMA auto_vacuum=FULL; PRAGMA cache_size=-65536; PRAGMA journal_mode=DELETE");
  exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, n INTEGER, v BLOB)");
  char sql[512];
  snprintf(sql, sizeof sql,
           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%d) "
           "INSERT INTO t SELECT x, printf('k%%08d', (x*7919) %% %d), x %% 97, zeroblob(150 + x %% 100) FROM c",
           rows, rows);
  exec(db, "BEGIN");
  exec(db, sql);
  exec(db, "COMMIT");
  exec(db, "CREATE INDEX tk ON t(k); CREATE INDEX tn ON t(n)");
  uint64_t h = 1469598103934665603ull;
  const char *q[] = {
      "SELECT count(*) FROM t WHERE k BETWEEN 'k00001000' AND 'k00002000'",
      "SELECT sum(length(v)) FROM t WHERE n = 13",
      "SELECT sum(a.id) FROM t a JOIN t b ON b.id = a.n + 1 WHERE a.k < 'k00000500'",
      "DELETE FROM t WHERE n < 40",
      "SELECT count(*) FROM t",
      "UPDATE t SET v = zeroblob(400) WHERE n = 50",
      "INSERT INTO t(k, n, v) SELECT k || 'x', n + 1000, zeroblob(90) FROM t WHERE n > 90",
      "DELETE FROM t WHERE n > 1000",
      "VACUUM",
      "SELECT sum(length(v)) + count(*) FROM t",
      "PRAGMA page_count",
  };
  for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
    if (strncmp(q[i], "SELECT", 6) && strncmp(q[i], "PRAGMA", 6)) {
      exec(db, q[i]);
      continue;
    }
    int64_t v = one_int(db, q[i]);
    h = (h ^ (uint64_t)v) * 1099511628211ull;
  }
  integrity_ok(db);
  return h;
}

/* Runs workload in a child process, with the adapter installed or not; returns its hash. */
static uint64_t workload_in_child(int install, const char *name) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(p[0]);
    if (install && tp_sqlite_install(TP_SQLITE_ALL) != SQLITE_OK) _exit(3);
    sqlite3 *db = open_db(name);
    uint64_t h = workload(db, 20000);
    if (sqlite3_close(db) != SQLITE_OK) _exit(4);
    if (write(p[1], &h, sizeof h) != sizeof h) _exit(5);
    _exit(0);
  }
  close(p[1]);
  uint64_t h = 0;
  ssize_t n = read(p[0], &h, sizeof h);
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "workload child (install=%d) failed: status %#x", install, st);
  cr_assert_eq(n, (ssize_t)sizeof h);
  return h;
}

Test(sqlite, answers_are_the_same_with_and_without_the_adapter) {
  uint64_t plain = workload_in_child(0, "plain.db");
  uint64_t adapted = workload_in_child(1, "adapted.db");
  cr_assert_eq(plain, adapted, "answers differ: %#lx without, %#lx with the adapter", (unsigned long)plain,
               (unsigned long)adapted);
}

Test(sqlite, rekey_and_truncate_are_exercised_and_keep_the_database_intact) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_OK);
  sqlite3 *db = open_db("rekey.db");
  workload(db, 20000); /* integrity_check inside */
  tp_sqlite_stats_t s;
  tp_sqlite_stats(&s);
  cr_assert_gt(s.rekeyed, 0, "auto_vacuum moved no page through xRekey");
  cr_assert_gt(s.truncated, 0, "no page was discarded by xTruncate");
  sqlite3_close(db);
}

Test(sqlite, memory_methods_are_tlbpacks) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_MALLOC), SQLITE_OK);
  cr_assert_eq(sqlite3_initialize(), SQLITE_OK);
  sqlite3_mem_methods m;
  cr_assert_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &m), SQLITE_MISUSE); /* initialized: refused */
  void *p = sqlite3_malloc(1000);
  cr_assert(tp_owns(p), "sqlite3_malloc's block is not tlbpack's");
  cr_assert_eq((size_t)sqlite3_msize(p), tp_malloc_usable_size(p));
  p = sqlite3_realloc(p, 5000);
  cr_assert(tp_owns(p));
  sqlite3_free(p);
}

Test(sqlite, roundup_is_the_size_malloc_gives) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_MALLOC), SQLITE_OK);
  sqlite3_mem_methods m;
  cr_assert_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &m), SQLITE_OK);
  for (int n = 1; n <= 32768; n += n < 512 ? 1 : 97) {
    void *p = m.xMalloc(n);
    cr_assert_not_null(p);
    cr_assert_geq(m.xRoundup(n), n);
    cr_assert_eq(m.xSize(p), m.xRoundup(n), "size %d: xSize %d, xRoundup %d", n, m.xSize(p), m.xRoundup(n));
    m.xFree(p);
  }
}

Test(sqlite, installing_after_initialize_gets_sqlites_misuse_and_sqlite_keeps_working) {
  cr_assert_eq(sqlite3_initialize(), SQLITE_OK);
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_MISUSE);
  sqlite3 *db = open_db("late.db");
  exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (42)");
  cr_assert_eq(one_int(db, "SELECT x FROM t"), 42);
  tp_sqlite_stats_t s;
  tp_sqlite_stats(&s);
  cr_assert_eq(s.caches, 0, "SQLite's own page cache should have stayed");
  sqlite3_close(db);
}

Test(sqlite, unknown_flags_get_misuse) {
  cr_assert_eq(tp_sqlite_install(0), SQLITE_MISUSE);
  cr_assert_eq(tp_sqlite_install(8), SQLITE_MISUSE);
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_OK, "a refused call must not install half");
}

Test(sqlite, the_adapter_survives_shutdown_and_initialize) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_OK);
  for (int round = 0; round < 3; round++) {
    cr_assert_eq(sqlite3_initialize(), SQLITE_OK);
    sqlite3 *db = open_db("again.db");
    exec(db, "CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES (1)");
    cr_assert_eq(one_int(db, "SELECT count(*) FROM t"), round + 1);
    tp_sqlite_stats_t s;
    tp_sqlite_stats(&s);
    cr_assert_geq(s.caches, 1, "round %d: the database's cache is not tlbpack's", round);
    void *p = sqlite3_malloc(64);
    cr_assert(tp_owns(p), "round %d: sqlite3_malloc is not tlbpack's", round);
    sqlite3_free(p);
    cr_assert_eq(sqlite3_close(db), SQLITE_OK);
    cr_assert_eq(sqlite3_shutdown(), SQLITE_OK);
  }
}

static void count_cache(tp_group_t *g, int page_size, size_t pages, void *arg) {
  if (pages > 1000) {
    tp_group_stats_t gs;
    tp_group_stats(g, &gs);
    *(tp_group_stats_t *)arg = gs;
  }
}

Test(sqlite, a_shrunk_cache_gives_its_pages_back_and_a_database_shares_few_huge_pages) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_OK);
  sqlite3 *db = open_db("shrink.db");
  exec(db, "PRAGMA cache_size=-100000; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)");
  exec(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<40000) "
           "INSERT INTO t SELECT x, zeroblob(200) FROM c");
  cr_assert_eq(one_int(db, "SELECT sum(length(v)) FROM t"), 40000 * 200);
  tp_sqlite_stats_t s;
  tp_sqlite_stats(&s);
  int64_t dbpages = one_int(db, "PRAGMA page_count");
  cr_assert_geq(s.pages, (size_t)dbpages, "cache holds %zu pages, the database %ld", s.pages, (long)dbpages);
  cr_assert_eq(s.pinned, 0, "pages left pinned outside a statement");
  /* 4 KiB buffers packed: the data needs pages * ~4.3 KiB; allow one spare huge page per class */
  size_t floor = (s.page_bytes + (2u << 20) - 1) / (2u << 20);
  cr_assert_leq(s.huge_pages, floor + 3, "%zu huge pages for %zu bytes of cache", s.huge_pages, s.page_bytes);
  cr_assert_eq(tp_sqlite_warm(), 1);

  tp_group_stats_t gs = {0};
  tp_sqlite_each_cache(count_cache, &gs);
  cr_assert_geq(gs.objects, 2 * s.pages, "a page is a buffer and a record in the cache's group");

  /* purge: a smaller cache size evicts, then shrink_memory frees every unpinned page */
  exec(db, "PRAGMA cache_size=50");
  tp_sqlite_stats(&s);
  cr_assert_leq(s.pages, 50);
  size_t freed = s.freed;
  exec(db, "PRAGMA shrink_memory");
  tp_sqlite_stats(&s);
  cr_assert_eq(s.pages, 0, "%zu pages left after shrink_memory", s.pages);
  cr_assert_gt(s.freed, freed);
  cr_assert_leq(s.huge_pages, 1, "%zu huge pages still held by an empty cache", s.huge_pages);
  cr_assert_eq(one_int(db, "SELECT count(*) FROM t"), 40000);
  integrity_ok(db);
  sqlite3_close(db);
  tp_sqlite_stats(&s);
  cr_assert_eq(s.caches, 0);
}

Test(sqlite, in_memory_databases_keep_every_page) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_OK);
  sqlite3 *db;
  cr_assert_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  exec(db, "PRAGMA cache_size=10; CREATE TABLE t(v BLOB)");
  exec(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<5000) "
           "INSERT INTO t SELECT zeroblob(500) FROM c");
  exec(db, "PRAGMA shrink_memory");
  cr_assert_eq(one_int(db, "SELECT sum(length(v)) FROM t"), 5000 * 500);
  tp_sqlite_stats_t s;
  tp_sqlite_stats(&s);
  cr_assert_geq(s.pages, 600, "an in-memory database lost pages to cache_size/shrink: %zu", s.pages);
  integrity_ok(db);
  sqlite3_close(db);
}

/* Serialized mode: connections on threads of their own, and one connection shared by all. */
typedef struct { int id; sqlite3 *shared; int64_t sum; } job_t;

static void *thread_main(void *arg) {
  job_t *j = arg;
  char name[32];
  snprintf(name, sizeof name, "th%d.db", j->id);
  sqlite3 *db = open_db(name);
  exec(db, "PRAGMA cache_size=200; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)");
  for (int r = 0; r < 5; r++) {
    exec(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<3000) "
             "INSERT INTO t(v) SELECT zeroblob(300) FROM c");
    exec(db, "DELETE FROM t WHERE id % 3 = 0");
    char sql[96];
    snprintf(sql, sizeof sql, "INSERT INTO s VALUES (%d)", j->id * 100 + r);
    exec(j->shared, sql);
  }
  j->sum = one_int(db, "SELECT sum(length(v)) FROM t");
  integrity_ok(db);
  sqlite3_close(db);
  return NULL;
}

Test(sqlite, connections_on_four_threads_and_one_shared_connection) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_ALL), SQLITE_OK);
  cr_assert(sqlite3_threadsafe(), "libsqlite3 built without threads");
  cr_assert_eq(sqlite3_config(SQLITE_CONFIG_SERIALIZED), SQLITE_OK);
  sqlite3 *shared;
  cr_assert_eq(sqlite3_open(":memory:", &shared), SQLITE_OK);
  exec(shared, "CREATE TABLE s(x)");
  pthread_t th[4];
  job_t jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job_t){i, shared, 0};
    cr_assert_eq(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  /* 5 rounds of 3000 rows, a third deleted each round (ids are not reused after the max) */
  int64_t want = -1;
  for (int i = 0; i < 4; i++) {
    if (want < 0) want = jobs[i].sum;
    cr_assert_eq(jobs[i].sum, want, "thread %d: %ld, thread 0: %ld", i, (long)jobs[i].sum, (long)want);
  }
  cr_assert_eq(want, 10000 * 300);
  cr_assert_eq(one_int(shared, "SELECT count(*) FROM s"), 20);
  sqlite3_close(shared);
}

Test(sqlite, closing_a_database_gives_all_of_its_cache_back) {
  cr_assert_eq(tp_sqlite_install(TP_SQLITE_PCACHE), SQLITE_OK); /* only the cache is tlbpack's */
  cr_assert_eq(sqlite3_initialize(), SQLITE_OK);
  tp_stats_t before, full, after;
  tp_stats_get(&before);
  sqlite3 *db = open_db("close.db");
  exec(db, "PRAGMA cache_size=-100000; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)");
  exec(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<20000) "
           "INSERT INTO t SELECT x, zeroblob(300) FROM c");
  tp_stats_get(&full);
  cr_assert_gt(full.live_bytes, before.live_bytes + 6000000, "the cache's ~7 MB are not in tlbpack's heap");
  cr_assert_eq(sqlite3_close(db), SQLITE_OK);
  tp_stats_get(&after);
  cr_assert_leq(after.live_bytes, before.live_bytes, "%zu bytes left live after close (%zu before open)",
                after.live_bytes, before.live_bytes);
}
