#!/usr/bin/env bash
# The sqlite3 shell running inserts, updates, deletes, an index build, queries and
# integrity_check, on a file database, with and without the preloaded allocator.
. "$(dirname "$0")/lib.sh"
tp_need_lib
tp_need_cmd sqlite3
tp_mktemp
rows=20000; [ "$TP_STRESS" = 1 ] && rows=200000

cat > "$TP_TMP/script.sql" <<SQL
PRAGMA journal_mode=WAL;
PRAGMA cache_size=-4000;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB, n REAL);
BEGIN;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $rows)
  INSERT INTO t SELECT i, 'key' || (i * 7919 % $rows), zeroblob(i % 700), i / 3.0 FROM c;
COMMIT;
BEGIN;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $rows / 10)
  INSERT INTO t(k, v, n) SELECT printf('extra%08d', i), randomblob(0), i FROM c;
COMMIT;
UPDATE t SET k = k || '-u', n = n * 2 WHERE id % 3 = 0;
UPDATE t SET v = zeroblob(length(v) * 2) WHERE id % 7 = 0;
DELETE FROM t WHERE id % 5 = 0;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_n ON t(n DESC, k);
SELECT count(*), sum(length(v)), round(sum(n), 3) FROM t;
SELECT k, id FROM t WHERE k LIKE 'key1%' ORDER BY k LIMIT 5;
SELECT count(*) FROM t INDEXED BY t_k WHERE k >= 'key2' AND k < 'key3';
SELECT substr(k, 1, 3) AS p, count(*), max(n) FROM t GROUP BY p ORDER BY p;
SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY n DESC LIMIT 20);
VACUUM;
PRAGMA integrity_check;
SQL

sqlite3 -batch -bail "$TP_TMP/plain.db" <"$TP_TMP/script.sql" >"$TP_TMP/plain.out" 2>&1 || tp_fail "plain sqlite3 failed: $(cat "$TP_TMP/plain.out")"
TLBPACK_CONF=$TP_CONF tp_pre sqlite3 -batch -bail "$TP_TMP/pre.db" <"$TP_TMP/script.sql" >"$TP_TMP/pre.out" 2>"$TP_TMP/pre.err"
rc=$?
[ $rc = 0 ] || { cat "$TP_TMP/pre.out" "$TP_TMP/pre.err" >&2; tp_fail "sqlite3 under $TP_LIB failed (status $rc)"; }
[ "$(tail -1 "$TP_TMP/pre.out")" = ok ] || tp_fail "integrity_check under preload says: $(tail -1 "$TP_TMP/pre.out")"
cmp -s "$TP_TMP/plain.out" "$TP_TMP/pre.out" || { diff "$TP_TMP/plain.out" "$TP_TMP/pre.out" >&2; tp_fail "sqlite3 output differs from the run without preload"; }
[ -z "$(tp_strip_stats "$TP_TMP/pre.err")" ] || { cat "$TP_TMP/pre.err" >&2; tp_fail "unexpected stderr under preload"; }
# The database outgrows the 4000 KiB page cache (cache_size=-4000), which VACUUM and
# integrity_check fill from malloc: at least 4000 KiB allocated.
db_kb=$(( $(stat -c %s "$TP_TMP/pre.db") / 1024 ))
[ "$db_kb" -gt 4000 ] || tp_fail "the database is only $db_kb KiB: it no longer fills the page cache the stats check relies on"
tp_check_stats "$TP_TMP/pre.err" "sqlite3" $((4000 * 1024))
tp_pass "$rows rows, $(sed -n 2p "$TP_TMP/pre.out" | cut -d'|' -f1) left after deletes, integrity ok, output identical"
