//! Every command path goes through the one statement pipeline: the session
//! effects of a statement are the same whether it came as text, as a
//! prepared statement (COM_STMT_EXECUTE) or as dynamic SQL (EXECUTE
//! IMMEDIATE, SQL PREPARE/EXECUTE, CALL). Each test runs the state setter in
//! session A and then probes, from session B over the same two-connection
//! pool, that none of it leaked, and from A that it is still A's.

mod common;

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

/// sluice over the shared cluster's master only, `pool_max` connections.
fn master_only(pool_max: usize) -> Sluice {
    master_only_of(&shared_cluster().master.addr(), pool_max)
}

fn master_only_of(master: &str, pool_max: usize) -> Sluice {
    Sluice::start(&format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {master}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    replicas: []\nbackend: {{ pool_max: {pool_max}, connect_timeout: 2s }}\n",
        Sluice::users_yaml()
    ))
}

async fn conn(s: &Sluice, db: &str) -> Conn {
    Conn::from_url(s.app_url(db))
        .await
        .expect("connect through sluice")
}

/// The first column of the first row as text (None: NULL).
async fn value(c: &mut Conn, sql: &str) -> Option<String> {
    let v: Option<Option<String>> = c.query_first(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    v.unwrap_or_else(|| panic!("{sql}: no row"))
}

fn text(s: &str) -> Option<String> {
    Some(s.to_string())
}

fn make_db(prefix: &str) -> String {
    let db = unique_name(prefix);
    shared_cluster().master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"
    ));
    db
}

/// B, several times (so it meets every pooled connection), must see
/// `expected` for `sql`.
async fn b_sees(b: &mut Conn, sql: &str, expected: Option<String>) {
    for _ in 0..6 {
        assert_eq!(value(b, sql).await, expected, "another session sees {sql} leak");
    }
}

#[tokio::test]
async fn prepared_user_variable_stays_with_its_session() {
    let s = master_only(2);
    let db = make_db("paths_uv");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a.exec_drop("SET @v = ?", (42,)).await.expect("prepared SET @v");
    b_sees(&mut b, "SELECT @v", None).await;
    assert_eq!(value(&mut a, "SELECT @v").await, text("42"));
}

#[tokio::test]
async fn prepared_named_lock_stays_with_its_session() {
    let s = master_only(2);
    let db = make_db("paths_lock");
    let lock = unique_name("lk");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    let got: Option<i64> = a
        .exec_first("SELECT GET_LOCK(?, 0)", (lock.as_str(),))
        .await
        .expect("prepared GET_LOCK");
    assert_eq!(got, Some(1));
    for _ in 0..6 {
        // On A's connection GET_LOCK would succeed again (locks nest).
        let v = value(&mut b, &format!("SELECT GET_LOCK('{lock}', 0)")).await;
        assert_eq!(v, text("0"), "B got A's lock");
    }
    let mine = value(
        &mut a,
        &format!("SELECT IS_USED_LOCK('{lock}') = CONNECTION_ID()"),
    )
    .await;
    assert_eq!(mine, text("1"));
    a.query_drop("SELECT RELEASE_ALL_LOCKS()").await.expect("release");
}

#[tokio::test]
async fn prepared_temporary_table_stays_with_its_session() {
    let s = master_only(2);
    let db = make_db("paths_tmp");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a.exec_drop("CREATE TEMPORARY TABLE tmp (x INT)", ())
        .await
        .expect("prepared CREATE TEMPORARY TABLE");
    a.exec_drop("INSERT INTO tmp VALUES (?)", (7,))
        .await
        .expect("prepared insert");
    for _ in 0..6 {
        let e = b.query_drop("SELECT * FROM tmp").await;
        assert!(e.is_err(), "B reads A's temporary table");
    }
    assert_eq!(value(&mut a, "SELECT x FROM tmp").await, text("7"));
}

#[tokio::test]
async fn prepared_session_variable_stays_with_its_session() {
    let s = master_only(2);
    let db = make_db("paths_tz");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    let before = value(&mut b, "SELECT @@session.time_zone").await;
    a.exec_drop("SET time_zone = ?", ("+05:00",))
        .await
        .expect("prepared SET time_zone");
    b_sees(&mut b, "SELECT @@session.time_zone", before).await;
    assert_eq!(value(&mut a, "SELECT @@session.time_zone").await, text("+05:00"));
}

#[tokio::test]
async fn dynamic_sql_effects_stay_with_their_session() {
    let s = master_only(2);
    let db = make_db("paths_dyn");
    let mut direct = Conn::from_url(shared_cluster().master.url(SLUICE_USER, SLUICE_PASSWORD, &db))
        .await
        .expect("direct");
    direct
        .query_drop("CREATE PROCEDURE setter() BEGIN SET @p = 3; CREATE TEMPORARY TABLE ptmp (x INT); END")
        .await
        .expect("create procedure");
    for setup in [
        "EXECUTE IMMEDIATE 'SET @d = 1'",
        "PREPARE st FROM 'SET @d = 1'",
        "CALL setter()",
    ] {
        let mut a = conn(&s, &db).await;
        let mut b = conn(&s, &db).await;
        a.query_drop(setup)
            .await
            .unwrap_or_else(|e| panic!("{setup}: {e}"));
        if setup.starts_with("PREPARE") {
            a.query_drop("EXECUTE st").await.expect("EXECUTE st");
        }
        let var = if setup.starts_with("CALL") { "@p" } else { "@d" };
        b_sees(&mut b, &format!("SELECT {var}"), None).await;
        assert_ne!(value(&mut a, &format!("SELECT {var}")).await, None, "{setup}");
        if setup.starts_with("CALL") {
            for _ in 0..6 {
                assert!(
                    b.query_drop("SELECT * FROM ptmp").await.is_err(),
                    "B reads A's ptmp"
                );
            }
            a.query_drop("SELECT * FROM ptmp").await.expect("A's own ptmp");
        }
    }
    // EXECUTE IMMEDIATE of a temporary table: same.
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a.query_drop("EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE itmp (x INT)'")
        .await
        .expect("immediate temp");
    for _ in 0..6 {
        assert!(
            b.query_drop("SELECT * FROM itmp").await.is_err(),
            "B reads A's itmp"
        );
    }
    a.query_drop("SELECT * FROM itmp").await.expect("A's own itmp");
}

/// COM_STMT_CLOSE frees server-side statements: after 300 prepare/close
/// cycles the master's Prepared_stmt_count is back at its baseline once the
/// pool's connections have been used again (sluice closes the statements no
/// client has open when a connection is checked out or given back). An own
/// cluster: the counter is server-wide.
#[tokio::test]
async fn own_cluster_prepare_close_loop_frees_server_statements() {
    let cluster = Cluster::start(0);
    let m = &cluster.master;
    m.sql("CREATE DATABASE IF NOT EXISTS paths_ps");
    let s = master_only_of(&m.addr(), 2);
    let count = || -> i64 {
        let out = m.sql("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'");
        out.split_whitespace()
            .last()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("Prepared_stmt_count: {out}"))
    };
    // Warm up the pool, then take the baseline.
    let mut a = conn(&s, "paths_ps").await;
    a.query_drop("SELECT 1").await.expect("warm up");
    let baseline = count();
    for i in 0..300 {
        let st = a.prep(format!("SELECT ? + {i}")).await.expect("prepare");
        let v: Option<i64> = a.exec_first(&st, (1,)).await.expect("execute");
        assert_eq!(v, Some(1 + i));
        a.close(st).await.expect("close");
    }
    let during = count();
    drop(a);
    // Use both pooled connections once more (two open transactions hold both).
    let mut x = conn(&s, "paths_ps").await;
    let mut y = conn(&s, "paths_ps").await;
    x.query_drop("BEGIN").await.expect("begin");
    y.query_drop("BEGIN").await.expect("begin");
    x.query_drop("SELECT 1").await.expect("x");
    y.query_drop("SELECT 1").await.expect("y");
    x.query_drop("COMMIT").await.expect("commit");
    y.query_drop("COMMIT").await.expect("commit");
    let after = count();
    println!("Prepared_stmt_count: baseline {baseline}, after the loop {during}, after reuse {after}");
    assert!(
        during <= baseline + 2,
        "statements pile up during the loop: {during} vs {baseline}"
    );
    assert_eq!(after, baseline, "server-side statements freed");
}

/// With CLIENT_SESSION_TRACK, the OK packets a client gets through sluice
/// carry exactly the session-state data the server sends (charset, time
/// zone, autocommit, schema, transaction state), byte for byte.
#[test]
fn session_track_data_is_the_servers() {
    use common::raw::{Frame, RawConn};
    const SESSION_TRACK: u32 = 0x0080_0000;
    let s = master_only(2);
    let db = make_db("paths_track");
    let other = make_db("paths_track2");
    let run = |port: u16, user: &str, pw: &str| -> Vec<Vec<u8>> {
        let mut c = RawConn::connect(port);
        match c.login_with(user, pw, SESSION_TRACK, Some(&db)) {
            Frame::Packet(_, p) if <[u8]>::first(&p) == Some(&0) => {}
            other => panic!("login on {port}: {other:?}"),
        }
        let mut out = Vec::new();
        for sql in [
            "SET NAMES latin1".to_string(),
            "SET time_zone = '+02:00'".to_string(),
            "SET autocommit = 0".to_string(),
            "SET autocommit = 1".to_string(),
            "SET SESSION sql_mode = 'ANSI_QUOTES'".to_string(),
            format!("USE {other}"),
            "SET NAMES utf8mb4".to_string(),
        ] {
            match c.query(&sql) {
                Frame::Packet(_, p) => out.push(p),
                f => panic!("{sql} on {port}: {f:?}"),
            }
        }
        out
    };
    let direct = run(shared_cluster().master.port, SLUICE_USER, SLUICE_PASSWORD);
    let through = run(s.port, APP_USER, APP_PASSWORD);
    assert_eq!(through, direct, "OK packets (with session-state data) differ");
    assert!(
        direct.iter().any(|p| p.len() > 7),
        "the server sent session-state data: {direct:?}"
    );
}

/// A text `USE` changes the default database of the connection that ran it:
/// the next borrower of that connection (one connection in the pool, so B
/// gets it) must be brought back to its own database, not run in A's.
#[tokio::test]
async fn use_stays_with_its_session() {
    let s = master_only(1);
    let db = make_db("paths_use");
    let other = make_db("paths_use_o");
    let mut a = conn(&s, &db).await;
    let mut b = conn(&s, &db).await;
    a.query_drop(format!("USE {other}")).await.expect("USE");
    b_sees(&mut b, "SELECT DATABASE()", text(&db)).await;
    assert_eq!(value(&mut a, "SELECT DATABASE()").await, text(&other));
    // And back: B's borrow moved the connection to B's database.
    a.query_drop(format!("USE {db}")).await.expect("USE");
    b.query_drop(format!("USE {other}")).await.expect("USE");
    assert_eq!(value(&mut a, "SELECT DATABASE()").await, text(&db));
    assert_eq!(value(&mut b, "SELECT DATABASE()").await, text(&other));
}
