//! Connection multiplexing: client sessions borrow backend connections per
//! statement, so many clients share a few connections, and each session
//! still behaves as if it had a server of its own. Most tests use a pool of
//! ONE master connection, so two sessions provably share it (same
//! backend thread id, `@@pseudo_thread_id`: CONNECTION_ID() is the session's own
//! id through sluice), and check that no state leaks from one to the other.

mod common;

use std::time::Duration;

use common::cluster::*;
use common::http::http_get;
use mysql_async::prelude::*;
use mysql_async::{Conn, Value};

/// sluice over the shared cluster's master only (every statement goes to the
/// master, so the pool limit is the master's), with `pool_max` connections.
fn master_only(pool_max: usize) -> Sluice {
    let m = shared_cluster().master.addr();
    Sluice::start(&format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {m}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    replicas: []\nbackend: {{ pool_max: {pool_max}, connect_timeout: 2s }}\n",
        Sluice::users_yaml()
    ))
}

async fn conn(s: &Sluice, db: &str) -> Conn {
    Conn::from_url(s.app_url(db))
        .await
        .expect("connect through sluice")
}

async fn one<T: FromValue + Send + 'static>(c: &mut Conn, sql: &str) -> T {
    let v: Option<T> = c.query_first(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    v.unwrap_or_else(|| panic!("{sql}: no row"))
}

fn make_db(prefix: &str) -> String {
    let db = unique_name(prefix);
    shared_cluster().master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
    ));
    db
}

/// `sluice_backend_pool_connections` summed over the master's pools.
fn master_pool_connections(s: &Sluice) -> f64 {
    let (_, body) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    body.lines()
        .filter(|l| l.starts_with("sluice_backend_pool_connections{") && l.contains("backend=\"master\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn many_clients_share_a_few_backend_connections() {
    let s = master_only(4);
    let db = make_db("mux_many");
    let mut clients = Vec::new();
    for _ in 0..60 {
        clients.push(conn(&s, &db).await);
    }
    // All 60 run statements at the same time, several rounds each.
    let tasks = clients.into_iter().enumerate().map(|(i, mut c)| async move {
        for round in 0..5 {
            let v: i64 = one(&mut c, &format!("SELECT {i} * 10 + {round}")).await;
            assert_eq!(v, (i * 10 + round) as i64);
            c.query_drop(format!("INSERT INTO t (v) VALUES ({i})"))
                .await
                .expect("insert");
        }
        c
    });
    let clients = futures_util_join_all(tasks).await;
    // pool_max is per client format (capabilities, collation): these
    // clients are all alike; sluice's own start-up check uses one more.
    let open = master_pool_connections(&s);
    assert!(
        (1.0..=5.0).contains(&open),
        "60 clients should share at most 4 master connections (+1 of sluice's own), pool has {open}"
    );
    let n: i64 = one(
        &mut clients.into_iter().next().expect("a client"),
        "SELECT COUNT(*) FROM t",
    )
    .await;
    assert_eq!(n, 300, "every acknowledged insert is there");
}

/// `futures::future::join_all` without the dependency: run on tokio tasks.
async fn futures_util_join_all<F, T>(futs: impl Iterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

#[tokio::test]
async fn session_state_does_not_leak_between_sessions() {
    let s = master_only(1);
    let db1 = make_db("mux_st1");
    let db2 = make_db("mux_st2");
    let mut a = conn(&s, &db1).await;
    let mut b = Conn::from_url(s.url(APP_USER, APP_PASSWORD, ""))
        .await
        .expect("b");
    let a_id: u64 = one(&mut a, "SELECT @@pseudo_thread_id").await;
    let b_id: u64 = one(&mut b, "SELECT @@pseudo_thread_id").await;
    assert_eq!(
        a_id, b_id,
        "with a pool of one, both sessions use the same backend connection"
    );

    a.query_drop("SET time_zone = '+05:00'").await.expect("set tz");
    a.query_drop("SET SESSION sql_mode = 'ANSI_QUOTES'")
        .await
        .expect("set mode");
    for _ in 0..3 {
        let tz: String = one(&mut b, "SELECT @@time_zone").await;
        assert_eq!(tz, "SYSTEM", "b must not see a's time zone");
        let mode: String = one(&mut b, "SELECT @@sql_mode").await;
        assert!(
            !mode.contains("ANSI_QUOTES"),
            "b must not see a's sql_mode: {mode}"
        );
        let d: Option<Option<String>> = b.query_first("SELECT DATABASE()").await.expect("db");
        assert_eq!(d, Some(None), "b has no default database");
        let tz: String = one(&mut a, "SELECT @@time_zone").await;
        assert_eq!(tz, "+05:00");
        let mode: String = one(&mut a, "SELECT @@sql_mode").await;
        assert_eq!(mode, "ANSI_QUOTES");
        let d: String = one(&mut a, "SELECT DATABASE()").await;
        assert_eq!(d, db1);
    }
    b.query_drop(format!("USE {db2}")).await.expect("use");
    let d: String = one(&mut b, "SELECT DATABASE()").await;
    assert_eq!(d, db2);
    let d: String = one(&mut a, "SELECT DATABASE()").await;
    assert_eq!(d, db1);
    // SET NAMES changes how results are encoded: each session gets its own.
    a.query_drop("SET NAMES latin1").await.expect("names");
    let cs: String = one(&mut a, "SELECT @@character_set_results").await;
    assert_eq!(cs, "latin1");
    let cs: String = one(&mut b, "SELECT @@character_set_results").await;
    assert_ne!(cs, "latin1");
}

#[tokio::test]
async fn last_insert_id_follows_its_session() {
    let s = master_only(1);
    let db = make_db("mux_lid");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a.query_drop("INSERT INTO t (v) VALUES (1)")
        .await
        .expect("a insert");
    let a_lid = a.last_insert_id().expect("a insert id");
    b.query_drop("INSERT INTO t (v) VALUES (2), (3)")
        .await
        .expect("b insert");
    let b_lid = b.last_insert_id().expect("b insert id");
    assert_ne!(a_lid, b_lid);
    let v: u64 = one(&mut a, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, a_lid);
    let v: u64 = one(&mut b, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, b_lid);
    // An explicit id does not change LAST_INSERT_ID(); LAST_INSERT_ID(expr) does.
    a.query_drop("INSERT INTO t (id, v) VALUES (1000, 1)")
        .await
        .expect("explicit");
    let v: u64 = one(&mut a, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, a_lid);
    let v: u64 = one(&mut b, "SELECT LAST_INSERT_ID(77)").await;
    assert_eq!(v, 77);
    let v: u64 = one(&mut a, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, a_lid);
    let v: u64 = one(&mut b, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, 77);
    // Used inside a write, too.
    a.query_drop("INSERT INTO t (v) VALUES (LAST_INSERT_ID())")
        .await
        .expect("insert lid");
    let v: i64 = one(&mut a, "SELECT v FROM t WHERE id = LAST_INSERT_ID()").await;
    assert_eq!(v as u64, a_lid);
    // A fresh session starts at 0.
    let mut c = conn(&s, &db).await;
    let v: u64 = one(&mut c, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, 0);
}

#[tokio::test]
async fn warnings_row_count_and_found_rows_answer_the_previous_statement() {
    let s = master_only(2);
    let db = make_db("mux_prev");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a.query_drop("INSERT INTO t (v) VALUES (1), (2), (3)")
        .await
        .expect("insert");
    // Another session's statements in between must not change a's answers.
    // b wrote last on some connection: a's ROW_COUNT() must never be b's.
    a.query_drop("UPDATE t SET v = v + 1 WHERE v >= 2")
        .await
        .expect("update");
    b.query_drop("UPDATE t SET v = v WHERE v < 0")
        .await
        .expect("b update");
    b.query_drop("DELETE FROM t WHERE v = 3").await.expect("b delete");
    let rc: i64 = one(&mut a, "SELECT ROW_COUNT()").await;
    assert!(
        rc == 2 || rc == -1,
        "a's ROW_COUNT() is its own or unknown (-1), got {rc}"
    );
    b.query_drop("INSERT INTO t (v) VALUES (3)")
        .await
        .expect("b insert back");
    a.query_drop("SELECT CAST('12abc' AS INT)")
        .await
        .expect("warning");
    b.query_drop("SELECT 1").await.expect("b");
    let w: Vec<(String, u32, String)> = a.query("SHOW WARNINGS").await.expect("warnings");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].1, 1292);
    let w: Vec<(String, u32, String)> = b.query("SHOW WARNINGS").await.expect("b warnings");
    assert!(w.is_empty(), "b must not see a's warnings: {w:?}");
    let n: i64 = one(&mut b, "SELECT @@warning_count").await;
    assert_eq!(n, 0);
    let rows: Vec<i64> = a
        .query("SELECT SQL_CALC_FOUND_ROWS v FROM t ORDER BY v LIMIT 1")
        .await
        .expect("calc");
    assert_eq!(rows.len(), 1);
    b.query_drop("SELECT 1").await.expect("b");
    let n: i64 = one(&mut a, "SELECT FOUND_ROWS()").await;
    assert_eq!(n, 3);
    // An error is a warning too.
    assert!(a.query_drop("SELECT * FROM no_such_table").await.is_err());
    let n: i64 = one(&mut a, "SELECT @@error_count").await;
    assert_eq!(n, 1);
}

#[tokio::test]
async fn pinned_state_stays_with_its_session() {
    let s = master_only(2);
    let db = make_db("mux_pin");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    // Temporary table: a keeps its connection, b never sees the table.
    a.query_drop("CREATE TEMPORARY TABLE tmp (x INT)")
        .await
        .expect("temp");
    a.query_drop("INSERT INTO tmp VALUES (42)")
        .await
        .expect("temp insert");
    for _ in 0..3 {
        assert!(
            b.query_drop("SELECT * FROM tmp").await.is_err(),
            "b sees a's temporary table"
        );
        let x: i64 = one(&mut a, "SELECT x FROM tmp").await;
        assert_eq!(x, 42);
    }
    // User variables.
    b.query_drop("SET @v = 'b'").await.expect("b var");
    let v: String = one(&mut b, "SELECT @v").await;
    assert_eq!(v, "b");
    let v: Option<Option<String>> = a.query_first("SELECT @v").await.expect("a var");
    assert_eq!(v, Some(None), "a must not see b's variable");
    drop((a, b));
    let (_, body) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    for reason in ["temporary_table", "user_variable"] {
        let line = format!("sluice_session_pins_total{{reason=\"{reason}\"}} ");
        assert!(
            body.lines().any(|l| l.starts_with(&line) && !l.ends_with(" 0")),
            "pins by reason are counted ({reason}):\n{body}"
        );
    }

    // A transaction keeps its connection to the end: another session sees
    // its writes only after COMMIT.
    let mut c = conn(&s, &db).await;
    let mut d = conn(&s, &db).await;
    c.query_drop("BEGIN").await.expect("begin");
    c.query_drop("INSERT INTO t (v) VALUES (7)")
        .await
        .expect("insert");
    let seen: i64 = one(&mut d, "SELECT COUNT(*) FROM t WHERE v = 7").await;
    assert_eq!(seen, 0);
    let mine: i64 = one(&mut c, "SELECT COUNT(*) FROM t WHERE v = 7").await;
    assert_eq!(mine, 1);
    c.query_drop("COMMIT").await.expect("commit");
    let seen: i64 = one(&mut d, "SELECT COUNT(*) FROM t WHERE v = 7").await;
    assert_eq!(seen, 1);
    // SET TRANSACTION applies to the session's next transaction only.
    c.query_drop("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        .await
        .expect("set tx");
    d.query_drop("SELECT 1").await.expect("d");
    c.query_drop("BEGIN").await.expect("begin");
    let _: i64 = one(&mut c, "SELECT COUNT(*) FROM t").await;
    let iso: String = one(
        &mut c,
        "SELECT trx_isolation_level FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = @@pseudo_thread_id",
    )
    .await;
    c.query_drop("COMMIT").await.expect("commit");
    assert_eq!(
        iso, "SERIALIZABLE",
        "SET TRANSACTION must reach the session's next transaction"
    );
    // LOCK TABLES pins until UNLOCK TABLES; afterwards the session is free again.
    c.query_drop("LOCK TABLES t READ").await.expect("lock");
    let n: i64 = one(&mut c, "SELECT COUNT(*) FROM t").await;
    assert!(n >= 1);
    c.query_drop("UNLOCK TABLES").await.expect("unlock");
    d.query_drop("INSERT INTO t (v) VALUES (8)")
        .await
        .expect("d writes after unlock");
}

#[tokio::test]
async fn prepared_statements_are_shared_per_connection_not_per_session() {
    let s = master_only(1);
    let db = make_db("mux_ps");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    let sa = a.prep("SELECT ? AS x, @@pseudo_thread_id").await.expect("prep a");
    let sb = b.prep("SELECT ? AS x, @@pseudo_thread_id").await.expect("prep b");
    for i in 0..5 {
        let (x, ca): (i64, u64) = a.exec_first(&sa, (i,)).await.expect("exec a").expect("row");
        assert_eq!(x, i);
        let (y, cb): (String, u64) = b
            .exec_first(&sb, (format!("s{i}"),))
            .await
            .expect("exec b")
            .expect("row");
        assert_eq!(y, format!("s{i}"));
        assert_eq!(ca, cb, "one backend connection serves both");
    }
    // Writes through statements, with their insert ids.
    let ins = a.prep("INSERT INTO t (v) VALUES (?)").await.expect("prep ins");
    a.exec_drop(&ins, (5,)).await.expect("ins");
    let id = a.last_insert_id().expect("id");
    let v: u64 = one(&mut a, "SELECT LAST_INSERT_ID()").await;
    assert_eq!(v, id);
    a.close(sa).await.expect("close");
    // b's statement with the same text still works after a closed its own.
    let (y, _): (String, u64) = b.exec_first(&sb, ("after",)).await.expect("exec b").expect("row");
    assert_eq!(y, "after");
    // NULL and other types through the same backend statement.
    let r: Option<(Option<i64>, u64)> = b.exec_first(&sb, (Value::NULL,)).await.expect("null");
    assert_eq!(r.map(|r| r.0), Some(None));
}

#[tokio::test]
async fn an_idle_session_holds_no_backend_connection() {
    let s = master_only(1);
    let db = make_db("mux_idle");
    // With one master connection, 20 sessions that each ran a statement and
    // went idle must leave it free for the next one (else it would wait for
    // the pool and fail with 1040).
    let mut idle = Vec::new();
    for i in 0..20 {
        let mut c = conn(&s, &db).await;
        let v: i64 = tokio::time::timeout(Duration::from_secs(10), one(&mut c, &format!("SELECT {i}")))
            .await
            .expect("no wait for a connection");
        assert_eq!(v, i);
        idle.push(c);
    }
    // Also after a write (kept for ROW_COUNT() only until its next statement).
    let mut w = conn(&s, &db).await;
    w.query_drop("INSERT INTO t (v) VALUES (1)").await.expect("write");
    w.query_drop("SELECT 1").await.expect("next");
    let mut last = conn(&s, &db).await;
    let n: i64 = one(&mut last, "SELECT COUNT(*) FROM t").await;
    assert_eq!(n, 1);
}

/// Between statements a session keeps (parks) the connection it gave back
/// while nobody else needs one; one the server closed meanwhile is not
/// used: the next statement runs on a new connection, without an error.
#[tokio::test]
async fn a_parked_connection_the_server_closed_is_not_reused() {
    let s = master_only(2);
    let db = make_db("mux_park");
    let mut a = conn(&s, &db).await;
    let first: u64 = one(&mut a, "SELECT @@pseudo_thread_id").await;
    let again: u64 = one(&mut a, "SELECT @@pseudo_thread_id").await;
    assert_eq!(first, again, "a session running alone keeps its connection");
    shared_cluster().master.sql(&format!("KILL {first}"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let next: u64 = one(&mut a, "SELECT @@pseudo_thread_id").await;
    assert_ne!(next, first, "the killed connection is not used again");
    let n: i64 = one(&mut a, "SELECT COUNT(*) FROM t").await;
    assert_eq!(n, 0);
}

#[tokio::test]
async fn the_same_statement_text_in_two_databases_is_two_statements() {
    let s = master_only(1);
    let db1 = make_db("mux_ctx1");
    let db2 = make_db("mux_ctx2");
    let m = &shared_cluster().master;
    m.sql(&format!("INSERT INTO {db1}.t (v) VALUES (1)"));
    m.sql(&format!("INSERT INTO {db2}.t (v) VALUES (2)"));
    let mut a = conn(&s, &db1).await;
    let mut b = conn(&s, &db2).await;
    // One backend connection serves both; the server resolves `t` at
    // PREPARE time, so each session needs its own backend statement.
    let sa = a.prep("SELECT v FROM t").await.expect("prep a");
    let sb = b.prep("SELECT v FROM t").await.expect("prep b");
    for _ in 0..3 {
        let v: Option<i64> = a.exec_first(&sa, ()).await.expect("exec a");
        assert_eq!(v, Some(1), "a reads {db1}.t");
        let v: Option<i64> = b.exec_first(&sb, ()).await.expect("exec b");
        assert_eq!(v, Some(2), "b reads {db2}.t");
    }
}

#[tokio::test]
async fn autocommit_off_sessions_hold_a_connection_only_inside_a_transaction() {
    // PyMySQL and JDBC with autocommit=false send SET autocommit=0 at login:
    // idle sessions like that must not hold a connection each.
    let s = master_only(1);
    let db = make_db("mux_ac");
    let mut sessions = Vec::new();
    for _ in 0..5 {
        let mut c = conn(&s, &db).await;
        c.query_drop("SET AUTOCOMMIT = 0").await.expect("autocommit off");
        sessions.push(c);
    }
    for (i, c) in sessions.iter_mut().enumerate() {
        let fut = async {
            c.query_drop(format!("INSERT INTO t (v) VALUES ({i})"))
                .await
                .expect("insert");
            let ac: i64 = one(c, "SELECT @@autocommit").await;
            assert_eq!(ac, 0, "autocommit=0 follows the session");
            c.query_drop("COMMIT").await.expect("commit");
        };
        tokio::time::timeout(Duration::from_secs(10), fut)
            .await
            .expect("a session with autocommit=0 found the connection free");
    }
    // Uncommitted work stays with its session and is not visible to others.
    let (first, rest) = sessions.split_at_mut(1);
    first[0]
        .query_drop("INSERT INTO t (v) VALUES (100)")
        .await
        .expect("uncommitted");
    let n: i64 = one(&mut first[0], "SELECT COUNT(*) FROM t").await;
    assert_eq!(n, 6);
    first[0].query_drop("ROLLBACK").await.expect("rollback");
    let n: i64 = one(&mut rest[0], "SELECT COUNT(*) FROM t").await;
    assert_eq!(n, 5);
    rest[0].query_drop("COMMIT").await.expect("commit");
}

/// The type a fresh `SELECT <expr>` reports for its one column, on `c`:
/// (column type, character set, length, flags). An unset user variable is a
/// NULL binary string; one the server created (a SET, or a PREPARE of a
/// statement that assigns it) is a NULL string in the connection's
/// character set.
async fn column_type_of(c: &mut Conn, expr: &str) -> (String, u16, u32, String) {
    let sql = format!("SELECT {expr}");
    let r = c
        .query_iter(sql.as_str())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let col = r
        .columns_ref()
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("{sql}: no column"));
    let _: Vec<mysql_async::Row> = r
        .collect_and_drop()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    (
        format!("{:?}", col.column_type()),
        col.character_set(),
        col.column_length(),
        format!("{:?}", col.flags()),
    )
}

#[tokio::test]
async fn preparing_a_variable_assignment_is_session_state() {
    // MariaDB creates the variables a statement assigns when it PREPAREs it,
    // without any EXECUTE. Over one master connection: if sluice gave that
    // connection back after the PREPARE, b would find a's variables on it.
    let s = master_only(1);
    let db = make_db("mux_prepvar");
    let master = &shared_cluster().master;
    let prepare_and_close = |mut c: Conn| async move {
        for sql in ["SELECT @pv := 1", "SET @sv = ?"] {
            let st = c.prep(sql).await.unwrap_or_else(|e| panic!("prepare {sql}: {e}"));
            c.close(st).await.expect("close");
        }
        c
    };
    // What the server itself shows: in the session that prepared, and in
    // another one.
    let mut direct_a =
        prepare_and_close(Conn::from_url(master.sluice_url(&db)).await.expect("direct a")).await;
    let mut direct_b = Conn::from_url(master.sluice_url(&db)).await.expect("direct b");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a = prepare_and_close(a).await;
    // b asks while a is connected: it must wait for the one connection
    // until a lets it go (reset), never find a's variables on it.
    let b_task = tokio::spawn(async move {
        let seen = (
            column_type_of(&mut b, "@pv").await,
            column_type_of(&mut b, "@sv").await,
        );
        (seen, b)
    });
    for var in ["@pv", "@sv"] {
        assert_eq!(
            column_type_of(&mut a, var).await,
            column_type_of(&mut direct_a, var).await,
            "{var} in the session that prepared it"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.disconnect().await.expect("a quits");
    let ((pv, sv), _b) = tokio::time::timeout(Duration::from_secs(10), b_task)
        .await
        .expect("b gets the connection once a has gone")
        .expect("b task");
    assert_eq!(
        pv,
        column_type_of(&mut direct_b, "@pv").await,
        "@pv in another session"
    );
    assert_eq!(
        sv,
        column_type_of(&mut direct_b, "@sv").await,
        "@sv in another session"
    );
}
