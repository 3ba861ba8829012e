//! Thread ids and KILL: the ids a client sees (handshake, CONNECTION_ID(),
//! SHOW PROCESSLIST) are its sluice session's, and KILL with them acts on
//! that session, from a second session, as the server does directly (each
//! behaviour is run against the master too and compared).

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Error, Row};

fn master_only(pool_max: usize) -> Sluice {
    let m = shared_cluster().master.addr();
    Sluice::start(&format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {m}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    replicas: []\nbackend: {{ pool_max: {pool_max}, connect_timeout: 2s }}\n",
        Sluice::users_yaml()
    ))
}

/// Direct to the master, or through sluice.
#[derive(Debug, Clone, Copy)]
enum Via {
    Direct,
    Sluice,
}

async fn connect(s: &Sluice, via: Via) -> Conn {
    let url = match via {
        Via::Direct => shared_cluster().master.sluice_url(TEST_DB),
        Via::Sluice => s.app_url(TEST_DB),
    };
    Conn::from_url(url).await.expect("connect")
}

fn server_code(e: &Error) -> Option<(u16, String)> {
    match e {
        Error::Server(e) => Some((e.code, e.message.clone())),
        _ => None,
    }
}

/// KILL QUERY from a second session interrupts a running SLEEP with 1317;
/// the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_interrupts_the_running_statement_like_the_server() {
    let s = master_only(4);
    let mut seen = Vec::new();
    for via in [Via::Direct, Via::Sluice] {
        let mut a = connect(&s, via).await;
        let mut b = connect(&s, via).await;
        let id = a.id();
        let started = Instant::now();
        let running = tokio::spawn(async move {
            let r = a.query_drop("SELECT SLEEP(20)").await;
            (a, r)
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        b.query_drop(format!("KILL QUERY {id}"))
            .await
            .expect("KILL QUERY");
        let (mut a, r) = running.await.expect("task");
        let err = r.expect_err("the statement is interrupted");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{via:?}: {:?}",
            started.elapsed()
        );
        let code = server_code(&err);
        assert_eq!(
            code,
            Some((1317, "Query execution was interrupted".into())),
            "{via:?}: {err:?}"
        );
        let one: Option<i64> = a.query_first("SELECT 1").await.expect("the session goes on");
        assert_eq!(one, Some(1));
        seen.push(code);
    }
    assert_eq!(seen[0], seen[1], "direct and through sluice alike");
}

/// KILL ends the other session, rolling back its transaction; a running
/// statement ends at once and its client sees the connection lost (no
/// server error), as directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_ends_the_session_and_rolls_back_like_the_server() {
    let s = master_only(4);
    let db = unique_name("kill_tx");
    shared_cluster().master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO {db}.t VALUES (1, 0)"
    ));
    for via in [Via::Direct, Via::Sluice] {
        // Idle in a transaction.
        let mut a = connect(&s, via).await;
        let mut b = connect(&s, via).await;
        a.query_drop("BEGIN").await.expect("begin");
        a.query_drop(format!("UPDATE {db}.t SET v = v + 1 WHERE id = 1"))
            .await
            .expect("update");
        let mut locker = connect(&s, Via::Direct).await;
        locker
            .query_drop("SET SESSION innodb_lock_wait_timeout = 20")
            .await
            .expect("set");
        let sql = format!("SELECT v FROM {db}.t WHERE id = 1 FOR UPDATE");
        let lock = tokio::spawn(async move { locker.query_first::<i64, _>(sql).await });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let killed = Instant::now();
        b.query_drop(format!("KILL {}", a.id())).await.expect("KILL");
        let v = tokio::time::timeout(Duration::from_secs(5), lock)
            .await
            .unwrap_or_else(|_| panic!("{via:?}: the killed session's row lock is still held"))
            .expect("task")
            .expect("locker");
        eprintln!("{via:?}: KILL -> row lock free in {:?}", killed.elapsed());
        assert_eq!(v, Some(0), "{via:?}: the killed session's update was rolled back");
        let err = a
            .query_drop("SELECT 1")
            .await
            .expect_err("the killed session is gone");
        assert!(
            matches!(server_code(&err), None | Some((1927 | 2013, _))),
            "{via:?}: the killed session's connection is closed: {err:?}"
        );

        // Mid-statement.
        let mut a = connect(&s, via).await;
        let id = a.id();
        let started = Instant::now();
        let running = tokio::spawn(async move { a.query_drop("SELECT SLEEP(20)").await });
        tokio::time::sleep(Duration::from_millis(400)).await;
        b.query_drop(format!("KILL CONNECTION {id}"))
            .await
            .expect("KILL CONNECTION");
        let err = tokio::time::timeout(Duration::from_secs(5), running)
            .await
            .unwrap_or_else(|_| panic!("{via:?}: the killed statement still runs"))
            .expect("task")
            .expect_err("the statement ends with the connection");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            server_code(&err).is_none(),
            "{via:?}: the client sees the connection lost: {err:?}"
        );
    }
}

/// An id that is not one of sluice's sessions: 1094, as the server answers
/// for an unknown thread, and nothing reaches the master (the backend thread
/// that has that number is untouched).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_id_is_refused_with_1094_and_never_forwarded() {
    let s = master_only(4);
    let mut via_sluice = connect(&s, Via::Sluice).await;
    // A backend thread whose id sluice has not given to a session (sluice's
    // ids of this test are small; a collision opens another).
    let mut victim = connect(&s, Via::Direct).await;
    let mut spare = Vec::new();
    while victim.id() < 20 {
        spare.push(victim);
        victim = connect(&s, Via::Direct).await;
    }
    let vid = victim.id();
    let sessions: Vec<Row> = via_sluice.query("SHOW PROCESSLIST").await.expect("processlist");
    let ids: Vec<u64> = sessions.iter().map(|r| r.get::<u64, _>(0).expect("id")).collect();
    assert!(
        !ids.contains(&u64::from(vid)),
        "test setup: {vid} is a sluice session id {ids:?}"
    );
    for kill in ["KILL", "KILL QUERY", "KILL CONNECTION"] {
        let err = via_sluice
            .query_drop(format!("{kill} {vid}"))
            .await
            .expect_err("unknown id");
        assert_eq!(
            server_code(&err),
            Some((1094, format!("Unknown thread id: {vid}"))),
            "{kill}: {err:?}"
        );
    }
    drop(spare);
    let one: Option<i64> = victim
        .query_first("SELECT 1")
        .await
        .expect("the backend thread was not killed");
    assert_eq!(one, Some(1));
    // The server's own answer to an unknown id reads the same.
    let mut d = connect(&s, Via::Direct).await;
    let direct = d.query_drop("KILL 4000000000").await.expect_err("unknown");
    let through = via_sluice
        .query_drop("KILL 4000000000")
        .await
        .expect_err("unknown");
    assert_eq!(server_code(&direct), server_code(&through));
}

/// Another user's session: 1095, and the processlist does not show it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_session_cannot_be_killed() {
    let s = master_only(4);
    let mut other = Conn::from_url(s.url(HASH_USER, HASH_PASSWORD, TEST_DB))
        .await
        .expect("connect as hashuser");
    let mut app = connect(&s, Via::Sluice).await;
    let oid = other.id();
    let err = app
        .query_drop(format!("KILL {oid}"))
        .await
        .expect_err("not owner");
    assert_eq!(
        server_code(&err),
        Some((1095, format!("You are not owner of thread {oid}"))),
        "{err:?}"
    );
    let rows: Vec<Row> = app.query("SHOW PROCESSLIST").await.expect("processlist");
    assert!(rows
        .iter()
        .all(|r| r.get::<String, _>(1).as_deref() == Some(APP_USER)));
    let one: Option<i64> = other.query_first("SELECT 1").await.expect("still alive");
    assert_eq!(one, Some(1));
}

/// The column metadata a client sees, for a differential comparison.
async fn columns(c: &mut Conn, sql: &str) -> Vec<(String, String, u32, u16, u8)> {
    let r = c.query_iter(sql).await.expect(sql);
    let cols = r
        .columns_ref()
        .iter()
        .map(|c| {
            (
                c.name_str().into_owned(),
                format!("{:?}", c.column_type()),
                c.column_length(),
                c.flags().bits(),
                c.decimals(),
            )
        })
        .collect();
    r.drop_result().await.expect("drop");
    cols
}

/// CONNECTION_ID() is the handshake's thread id, in text and prepared
/// statements, with the column the server would send; two sessions sharing
/// one backend connection still see their own ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_id_is_the_sessions_own() {
    let s = master_only(1);
    let mut a = connect(&s, Via::Sluice).await;
    let mut b = connect(&s, Via::Sluice).await;
    for c in [&mut a, &mut b] {
        let id = u64::from(c.id());
        let text: Option<u64> = c.query_first("SELECT CONNECTION_ID()").await.expect("text");
        let prepared: Option<u64> = c
            .exec_first("SELECT CONNECTION_ID()", ())
            .await
            .expect("prepared");
        let param: Option<u8> = c
            .exec_first("SELECT CONNECTION_ID() = ?", (id,))
            .await
            .expect("prepared with a parameter");
        let lower: Option<u64> = c.query_first("select connection_id ( )").await.expect("lower");
        assert_eq!(
            (text, prepared, param, lower),
            (Some(id), Some(id), Some(1), Some(id))
        );
    }
    assert_ne!(a.id(), b.id());
    let mut d = connect(&s, Via::Direct).await;
    for sql in [
        "SELECT CONNECTION_ID()",
        "SELECT connection_id( ), 1",
        "SELECT CONNECTION_ID() AS me",
    ] {
        assert_eq!(columns(&mut a, sql).await, columns(&mut d, sql).await, "{sql}");
    }
    // Inside an expression the type is the server's (the name shows sluice's literal).
    let mut through = columns(&mut a, "SELECT CONNECTION_ID() + 1").await;
    let mut direct = columns(&mut d, "SELECT CONNECTION_ID() + 1").await;
    through[0].0.clear();
    direct[0].0.clear();
    assert_eq!(through, direct);
}

/// SHOW [FULL] PROCESSLIST lists sluice's sessions by their ids, in MariaDB's
/// exact column layout, with the running statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processlist_shows_the_sessions() {
    let s = master_only(4);
    let mut a = connect(&s, Via::Sluice).await;
    let mut b = connect(&s, Via::Sluice).await;
    let (aid, bid) = (u64::from(a.id()), u64::from(b.id()));
    let running = tokio::spawn(async move {
        a.query_drop("SELECT SLEEP(2)").await.expect("sleep");
        a
    });
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let rows: Vec<Row> = b.query("SHOW FULL PROCESSLIST").await.expect("processlist");
    let row = |id: u64| {
        rows.iter()
            .find(|r| r.get::<u64, _>(0) == Some(id))
            .unwrap_or_else(|| panic!("session {id} listed: {rows:?}"))
    };
    let ra = row(aid);
    assert_eq!(ra.get::<String, _>(1).as_deref(), Some(APP_USER));
    assert_eq!(ra.get::<Option<String>, _>(3).flatten().as_deref(), Some(TEST_DB));
    assert_eq!(ra.get::<String, _>(4).as_deref(), Some("Query"));
    assert!(
        ra.get::<u64, _>(5).is_some_and(|t| t >= 1),
        "Time counts the running statement"
    );
    assert_eq!(
        ra.get::<Option<String>, _>(7).flatten().as_deref(),
        Some("SELECT SLEEP(2)")
    );
    let rb = row(bid);
    assert_eq!(
        rb.get::<Option<String>, _>(7).flatten().as_deref(),
        Some("SHOW FULL PROCESSLIST")
    );
    let mut a = running.await.expect("task");
    let rows: Vec<Row> = b.query("SHOW PROCESSLIST").await.expect("processlist");
    let ra = rows
        .iter()
        .find(|r| r.get::<u64, _>(0) == Some(aid))
        .expect("listed");
    assert_eq!(ra.get::<String, _>(4).as_deref(), Some("Sleep"));
    assert_eq!(
        ra.get::<Option<String>, _>(7).flatten(),
        None,
        "no Info while idle"
    );
    let mut d = connect(&s, Via::Direct).await;
    for sql in ["SHOW PROCESSLIST", "SHOW FULL PROCESSLIST"] {
        assert_eq!(columns(&mut b, sql).await, columns(&mut d, sql).await, "{sql}");
    }
    a.query_drop("DO 1").await.expect("a is fine");
    drop(a);
}
