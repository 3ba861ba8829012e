#!/usr/bin/python3
"""PyMySQL end-to-end check, run by tests/clients.rs directly against MariaDB and
through sluice. Checks every result itself; exits 1 on the first failing section with
a message, 0 when everything matched. Prints one `facts:` line that the Rust test
compares between the direct and the proxied run.

PyMySQL 1.0.x does not implement CLIENT_DEPRECATE_EOF (see the TODO in
pymysql/connections.py), so like the mariadb CLI it exercises the EOF-terminated
result format; it sends CLIENT_MULTI_STATEMENTS only when asked (client_flag).

Usage: pymysql_client.py --port P --user U --password PW --database DB --table T
"""
import argparse
import datetime
import decimal
import json
import os
import sys
import tempfile
import time
import traceback

import pymysql
import pymysql.cursors
from pymysql.constants import CLIENT, ER


class Mismatch(Exception):
    pass


def check(what, got, want):
    if got != want:
        raise Mismatch("%s: got %r, want %r" % (what, got, want))


def expect_error(what, code, fn):
    try:
        fn()
    except pymysql.err.MySQLError as e:
        check(what + " (error code)", e.args[0], code)
        return e
    raise Mismatch("%s: no error, want error %d" % (what, code))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--database", required=True)
    ap.add_argument("--table", required=True)
    a = ap.parse_args()
    t = a.table

    def connect(**kw):
        args = dict(host=a.host, port=a.port, user=a.user, password=a.password,
                    database=a.database, charset="utf8mb4", autocommit=True,
                    connect_timeout=10, read_timeout=60, write_timeout=60)
        args.update(kw)
        return pymysql.connect(**args)

    timings = {}

    def section(name):
        def deco(fn):
            t0 = time.monotonic()
            try:
                fn()
            except Exception:
                print("FAILED in section %r" % name, file=sys.stderr)
                raise
            timings[name] = round(time.monotonic() - t0, 3)
            print("ok   %-28s %.3fs" % (name, timings[name]))
            return fn
        return deco

    conn = connect()
    cur = conn.cursor()

    # -- DDL + executemany --------------------------------------------------------------
    base = datetime.datetime(2024, 2, 29, 12, 34, 56, 123456)
    rows = []
    for i in range(1, 1001):
        rows.append((
            "name%d" % i,
            i * 1.5 if i % 7 else None,
            bytes(range(i % 256)) if i % 11 else None,
            base + datetime.timedelta(seconds=i, microseconds=i),
            decimal.Decimal("%d.%02d" % (i * 1000, i % 100)),
        ))
    emoji = "emoji 😀🚀 ✓ ünïcödé 'quoted' \"dq\" back\\slash"
    rows.append((emoji, -0.5, b"\x00\xff\x00'\\", None, decimal.Decimal("-0.01")))

    @section("create + executemany")
    def _():
        cur.execute("DROP TABLE IF EXISTS `%s`" % t)
        cur.execute(
            "CREATE TABLE `%s` (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(200) NOT NULL,"
            " score DOUBLE NULL, data LONGBLOB NULL, created DATETIME(6) NULL,"
            " amount DECIMAL(12,2) NULL, UNIQUE KEY (name)) DEFAULT CHARSET=utf8mb4" % t)
        n = cur.executemany(
            "INSERT INTO `%s` (name, score, data, created, amount) VALUES (%%s, %%s, %%s, %%s, %%s)" % t,
            rows)
        check("executemany rowcount", n, len(rows))
        cur.execute("SELECT COUNT(*), SUM(id), MAX(id) FROM `%s`" % t)
        check("count after executemany", cur.fetchone(),
              (len(rows), decimal.Decimal(len(rows) * (len(rows) + 1) // 2), len(rows)))

    # -- parameterised selects ----------------------------------------------------------
    @section("select with parameters")
    def _():
        cur.execute("SELECT id, name, score, data, created, amount FROM `%s`"
                    " WHERE id BETWEEN %%s AND %%s ORDER BY id" % t, (10, 30))
        got = cur.fetchall()
        check("rows 10..30", [r[1:] for r in got], [tuple(r) for r in rows[9:30]])
        check("ids 10..30", [r[0] for r in got], list(range(10, 31)))
        check("description",
              [(d[0], d[1]) for d in cur.description],
              [("id", 3), ("name", 253), ("score", 5), ("data", 252), ("created", 12),
               ("amount", 246)])
        cur.execute("SELECT id, data FROM `%s` WHERE name = %%s" % t, (emoji,))
        check("emoji row", cur.fetchall(), ((len(rows), b"\x00\xff\x00'\\"),))
        cur.execute("SELECT %s, %s, %s, %s, %s, %s",
                    (None, 42, -1.25, "x😀", b"\x01\x02", datetime.date(2000, 1, 2)))
        check("literal params", cur.fetchone(),
              (None, 42, -1.25, "x😀", "\x01\x02", "2000-01-02"))
        n = cur.execute("SELECT id FROM `%s` WHERE id IN %%s ORDER BY id" % t, ((3, 5, 7, 100000),))
        check("IN list rowcount", n, 3)
        check("IN list", cur.fetchall(), ((3,), (5,), (7,)))
        n = cur.execute("SELECT * FROM `%s` WHERE id < 0" % t)
        check("empty result rowcount", n, 0)
        check("empty result", cur.fetchall(), ())
        check("empty result description", len(cur.description), 6)

    # -- DML results: rowcount, lastrowid, warnings, errors ----------------------------
    @section("dml, lastrowid, errors")
    def _():
        n = cur.execute("UPDATE `%s` SET score = COALESCE(score, 0) + 1 WHERE id <= %%s" % t, (10,))
        check("update rowcount", n, 10)
        cur.execute("INSERT INTO `%s` (name) VALUES ('lastrowid-probe')" % t)
        check("lastrowid", cur.lastrowid, len(rows) + 1)
        cur.execute("SELECT LAST_INSERT_ID()")
        check("LAST_INSERT_ID()", cur.fetchone()[0], len(rows) + 1)
        e = expect_error("duplicate key", ER.DUP_ENTRY,
                         lambda: cur.execute("INSERT INTO `%s` (name) VALUES ('name1')" % t))
        if not isinstance(e, pymysql.err.IntegrityError):
            raise Mismatch("duplicate key raised %r, want IntegrityError" % type(e))
        expect_error("syntax error", ER.PARSE_ERROR, lambda: cur.execute("SELEC 1"))
        expect_error("unknown table", ER.NO_SUCH_TABLE,
                     lambda: cur.execute("SELECT * FROM no_such_table_here"))
        # Still usable after the errors.
        cur.execute("SELECT 1 + 1")
        check("after errors", cur.fetchone(), (2,))
        cur.execute("SELECT CAST('abc' AS INT)")
        check("warning result", cur.fetchone(), (0,))
        cur.execute("SHOW WARNINGS")
        check("warning count", len(cur.fetchall()), 1)
        cur.execute("DELETE FROM `%s` WHERE name = 'lastrowid-probe'" % t)
        check("delete rowcount", cur.rowcount, 1)

    # -- transactions -------------------------------------------------------------------
    @section("transaction rollback/commit")
    def _():
        def snapshot(c):
            c.execute("SELECT COUNT(*), SUM(score), MAX(name) FROM `%s`" % t)
            return c.fetchone()
        other = connect()
        ocur = other.cursor()
        before = snapshot(cur)
        conn.begin()
        cur.execute("UPDATE `%s` SET name = CONCAT(name, '-changed') WHERE id <= 5" % t)
        cur.execute("INSERT INTO `%s` (name, score) VALUES ('in-tx', 1)" % t)
        cur.execute("SELECT COUNT(*) FROM `%s` WHERE name = 'in-tx'" % t)
        check("own uncommitted insert visible", cur.fetchone(), (1,))
        ocur.execute("SELECT COUNT(*) FROM `%s` WHERE name = 'in-tx'" % t)
        check("uncommitted insert invisible to another connection", ocur.fetchone(), (0,))
        conn.rollback()
        check("after rollback", snapshot(cur), before)
        conn.begin()
        cur.execute("INSERT INTO `%s` (name, score) VALUES ('committed', 2)" % t)
        conn.commit()
        ocur.execute("SELECT score FROM `%s` WHERE name = 'committed'" % t)
        check("committed insert visible to another connection", ocur.fetchone(), (2.0,))
        # autocommit off: implicit transaction, rolled back by rollback().
        conn.autocommit(False)
        cur.execute("DELETE FROM `%s` WHERE name = 'committed'" % t)
        conn.rollback()
        conn.autocommit(True)
        cur.execute("SELECT COUNT(*) FROM `%s` WHERE name = 'committed'" % t)
        check("autocommit=0 rollback", cur.fetchone(), (1,))
        cur.execute("DELETE FROM `%s` WHERE name = 'committed'" % t)
        other.close()

    # -- COM_PING, COM_INIT_DB, session state -------------------------------------------
    @section("ping, select_db, session vars")
    def _():
        conn.ping(reconnect=False)
        conn.select_db("information_schema")
        cur.execute("SELECT DATABASE()")
        check("select_db", cur.fetchone(), ("information_schema",))
        expect_error("select_db unknown", ER.BAD_DB_ERROR, lambda: conn.select_db("no_such_db_x"))
        conn.select_db(a.database)
        cur.execute("SET @py_var = 'kept', SESSION sql_mode = 'ANSI_QUOTES'")
        cur.execute("SELECT @py_var, @@SESSION.sql_mode")
        check("session state", cur.fetchone(), ("kept", "ANSI_QUOTES"))
        cur.execute("SET SESSION sql_mode = DEFAULT")

    # -- multi statements: nextset ------------------------------------------------------
    @section("multi statements + nextset")
    def _():
        # Without CLIENT_MULTI_STATEMENTS the server refuses a multi-statement query.
        expect_error("multi statement without the flag", ER.PARSE_ERROR,
                     lambda: cur.execute("SELECT 1; SELECT 2"))
        cur.execute("SELECT 'usable'")
        check("after refused multi statement", cur.fetchone(), ("usable",))

        m = connect(client_flag=CLIENT.MULTI_STATEMENTS)
        mc = m.cursor()
        mc.execute("SELECT 1 AS a; SELECT 'two' AS b, NULL AS c UNION ALL SELECT 'zwei😀', 2;"
                   " UPDATE `%s` SET score = score WHERE id < 0; SELECT COUNT(*) FROM `%s`;"
                   " SET @m = 5; SELECT @m * 2" % (t, t))
        results = []
        while True:
            results.append((mc.rowcount, mc.fetchall(),
                            tuple(d[0] for d in mc.description) if mc.description else None))
            if not mc.nextset():
                break
        check("multi results", results, [
            (1, ((1,),), ("a",)),
            (2, (("two", None), ("zwei😀", 2)), ("b", "c")),
            (0, (), None),
            (1, ((len(rows),),), ("COUNT(*)",)),
            (0, (), None),
            (1, ((10,),), ("@m * 2",)),
        ])
        # An error in the middle ends the batch; the connection stays usable.
        mc.execute("SELECT 1; SELECT * FROM no_such_table_y; SELECT 3")
        check("first result before error", mc.fetchall(), ((1,),))
        expect_error("error in the 2nd statement", ER.NO_SUCH_TABLE, mc.nextset)
        mc.execute("SELECT 'after'")
        check("usable after multi-statement error", mc.fetchall(), (("after",),))
        # A stored compound statement with several result sets.
        mc.execute("BEGIN NOT ATOMIC SELECT 'p1'; SELECT 'p2', 'p2b'; END")
        sets = [mc.fetchall()]
        while mc.nextset():
            sets.append(mc.fetchall())
        check("compound statement results", sets, [(("p1",),), (("p2", "p2b"),), ()])
        m.close()

    # -- server-side streaming: SSCursor ------------------------------------------------
    @section("SSCursor 100k rows")
    def _():
        sc = conn.cursor(pymysql.cursors.SSCursor)
        sc.execute("SELECT seq, CONCAT('row-', seq, '-😀'), seq * 2.5, IF(seq % 10 = 0, NULL, seq)"
                   " FROM seq_1_to_100000")
        n = 0
        total = 0
        for row in sc:
            n += 1
            if row[0] != n:
                raise Mismatch("row %d has id %r" % (n, row[0]))
            if row[1] != "row-%d-😀" % n or row[2] != decimal.Decimal(n) * decimal.Decimal("2.5"):
                raise Mismatch("row %d: %r" % (n, row))
            if (row[3] is None) != (n % 10 == 0):
                raise Mismatch("row %d NULL: %r" % (n, row))
            total += row[0]
        check("streamed rows", n, 100000)
        check("streamed sum", total, 100000 * 100001 // 2)
        sc.close()
        # Abandon a stream half way: close() drains it, the connection stays in sync.
        sc = conn.cursor(pymysql.cursors.SSCursor)
        sc.execute("SELECT seq FROM seq_1_to_50000")
        for _ in range(10):
            sc.fetchone()
        sc.close()
        cur.execute("SELECT 'in sync'")
        check("after abandoned stream", cur.fetchone(), ("in sync",))
        # SSDictCursor with fetchmany.
        dc = conn.cursor(pymysql.cursors.SSDictCursor)
        dc.execute("SELECT seq AS n FROM seq_1_to_1000")
        got = 0
        while True:
            chunk = dc.fetchmany(97)
            if not chunk:
                break
            got += sum(r["n"] for r in chunk)
        check("SSDictCursor fetchmany", got, 1000 * 1001 // 2)
        dc.close()

    # -- LOAD DATA LOCAL + a packet larger than 16 MiB -----------------------------------
    @section("load data local, 17 MiB packet")
    def _():
        lc = connect(local_infile=True)
        lcur = lc.cursor()
        with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False, encoding="utf-8") as f:
            for i in range(1, 2001):
                f.write("local-%d-😀\t%d.5\n" % (i, i))
            path = f.name
        try:
            n = lcur.execute("LOAD DATA LOCAL INFILE %%s INTO TABLE `%s` (name, score)" % t, (path,))
            check("load data rowcount", n, 2000)
        finally:
            os.unlink(path)
        lcur.execute("SELECT COUNT(*), SUM(score) FROM `%s` WHERE name LIKE 'local-%%'" % t)
        check("loaded rows", lcur.fetchone(), (2000, 2000 * 2001 / 2 + 1000.0))
        # A file the client cannot open: it sends an empty packet instead of data; the
        # server's answer must still reach it, and the connection stays in sync.
        try:
            lcur.execute("LOAD DATA LOCAL INFILE '/nonexistent/sluice.tsv' INTO TABLE `%s` (name)" % t)
            raise Mismatch("LOAD DATA LOCAL of a missing file did not fail")
        except pymysql.err.MySQLError:
            pass
        lcur.execute("SELECT 'in sync after missing file'")
        check("after missing local file", lcur.fetchone(), ("in sync after missing file",))
        big = bytes(range(256)) * (17 * 4096)  # 17 MiB
        lcur.execute("INSERT INTO `%s` (name, data) VALUES ('big', %%s)" % t, (big,))
        lcur.execute("SELECT data, LENGTH(data) FROM `%s` WHERE name = 'big'" % t)
        got, length = lcur.fetchone()
        check("17 MiB length", length, len(big))
        if got != big:
            raise Mismatch("17 MiB blob differs")
        lc.close()

    # -- facts compared by the Rust test; clean up -------------------------------------
    cur.execute("SELECT @@version, @@character_set_client, @@collation_connection, @@autocommit")
    ver, csc, coll, ac = cur.fetchone()
    facts = {
        "server_version": conn.get_server_info(),
        "protocol_version": conn.protocol_version,
        "version": ver,
        "charset": [csc, coll],
        "autocommit": ac,
        "multi_statements_advertised": bool(conn.server_capabilities & CLIENT.MULTI_STATEMENTS),
        "deprecate_eof_sent": bool(conn.client_flag & CLIENT.DEPRECATE_EOF),
    }
    cur.execute("DROP TABLE `%s`" % t)
    conn.close()
    print("facts: " + json.dumps(facts, sort_keys=True))
    print("all PyMySQL checks passed: " + json.dumps(timings))


if __name__ == "__main__":
    try:
        main()
    except Mismatch as e:
        print("MISMATCH: %s" % e, file=sys.stderr)
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
