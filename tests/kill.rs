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

/// Another user's session, with the clients' own server accounts (`auth.account`):
/// KILL from an account without CONNECTION ADMIN/SUPER gets 1095 and the list shows
/// only its own sessions; with CONNECTION ADMIN or SUPER the KILL ends the session;
/// PROCESS lists every user's. Each step runs directly on the master and through
/// sluice, and the answers are compared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_of_another_users_session_follows_the_accounts_privileges() {
    let cluster = shared_cluster();
    let p = unique_name("kp");
    let (victim, plain, admin, superu, process) = (
        format!("{p}_v"),
        format!("{p}_n"),
        format!("{p}_ca"),
        format!("{p}_su"),
        format!("{p}_pr"),
    );
    cluster.master.sql(&format!(
        "CREATE USER '{victim}'@'%' IDENTIFIED BY 'pw'; CREATE USER '{plain}'@'%' IDENTIFIED BY 'pw'; \
         CREATE USER '{admin}'@'%' IDENTIFIED BY 'pw'; GRANT CONNECTION ADMIN ON *.* TO '{admin}'@'%'; \
         CREATE USER '{superu}'@'%' IDENTIFIED BY 'pw'; GRANT SUPER ON *.* TO '{superu}'@'%'; \
         CREATE USER '{process}'@'%' IDENTIFIED BY 'pw'; GRANT PROCESS ON *.* TO '{process}'@'%';"
    ));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start(&format!(
        "auth:\n  account: {{ user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\ngroups:\n{}",
        Sluice::group_yaml("main", cluster)
    ));
    let url = |via: Via, user: &str| match via {
        Via::Direct => cluster.master.url(user, "pw", ""),
        Via::Sluice => s.url(user, "pw", ""),
    };
    for via in [Via::Direct, Via::Sluice] {
        let mut v = Conn::from_url(url(via, &victim)).await.expect("victim");
        let vid = v.id();
        // Plain account: 1095, and only its own session in the list.
        let mut n = Conn::from_url(url(via, &plain)).await.expect("plain");
        let err = n.query_drop(format!("KILL {vid}")).await.expect_err("not owner");
        assert_eq!(
            server_code(&err),
            Some((1095, format!("You are not owner of thread {vid}"))),
            "{via:?}: {err:?}"
        );
        let rows: Vec<Row> = n.query("SHOW PROCESSLIST").await.expect("processlist");
        assert!(
            rows.iter()
                .all(|r| r.get::<String, _>(1).as_deref() == Some(plain.as_str())),
            "{via:?}: a plain account sees only its own sessions: {rows:?}"
        );
        // PROCESS: the victim's session is listed.
        let mut pr = Conn::from_url(url(via, &process)).await.expect("process");
        let rows: Vec<Row> = pr.query("SHOW PROCESSLIST").await.expect("processlist");
        assert!(
            rows.iter().any(|r| r.get::<u64, _>(0) == Some(u64::from(vid))),
            "{via:?}: PROCESS lists other users' sessions"
        );
        let err = pr
            .query_drop(format!("KILL {vid}"))
            .await
            .expect_err("PROCESS is not enough");
        assert_eq!(server_code(&err).map(|c| c.0), Some(1095), "{via:?}");
        // CONNECTION ADMIN: KILL QUERY of a running statement, then KILL.
        let mut ca = Conn::from_url(url(via, &admin)).await.expect("admin");
        let running = tokio::spawn(async move {
            let r = v.query_drop("SELECT SLEEP(20)").await;
            (v, r)
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        ca.query_drop(format!("KILL QUERY {vid}"))
            .await
            .expect("CONNECTION ADMIN may");
        let (mut v, r) = tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("interrupted in time")
            .expect("task");
        let one: Option<i64> = match r {
            Err(e) => {
                assert_eq!(server_code(&e).map(|c| c.0), Some(1317), "{via:?}: {e:?}");
                None
            }
            Ok(()) => v.query_first("SELECT 1").await.expect("alive"),
        };
        let _ = one;
        // SUPER ends the session.
        let mut su = Conn::from_url(url(via, &superu)).await.expect("super");
        su.query_drop(format!("KILL {vid}")).await.expect("SUPER may");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            v.query_drop("DO 1").await.is_err(),
            "{via:?}: the killed session is gone"
        );
        for c in [n, pr, ca, su] {
            let _ = c.disconnect().await;
        }
    }
    cluster.master.sql(&format!(
        "DROP USER '{victim}'@'%', '{plain}'@'%', '{admin}'@'%', '{superu}'@'%', '{process}'@'%'"
    ));
}

/// COM_PROCESS_KILL (the old `mysql_kill()` command): as KILL CONNECTION, for the
/// session's own ids; an unknown id is 1094, as the server says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn com_process_kill_acts_like_kill() {
    let s = master_only(4);
    let mut seen = Vec::new();
    for via in [Via::Direct, Via::Sluice] {
        let victim = connect(&s, via).await;
        let vid = victim.id();
        let mut raw = match via {
            Via::Direct => {
                let mut r = common::raw::RawConn::connect(shared_cluster().master.port);
                assert!(r.login(SLUICE_USER, SLUICE_PASSWORD).is_ok());
                r
            }
            Via::Sluice => {
                let mut r = common::raw::RawConn::connect(s.port);
                assert!(r.login(APP_USER, APP_PASSWORD).is_ok());
                r
            }
        };
        let mut cmd = vec![0x0c];
        cmd.extend_from_slice(&vid.to_le_bytes());
        raw.write(0, &cmd);
        let ok = raw.read();
        let mut cmd = vec![0x0c];
        cmd.extend_from_slice(&(u32::MAX - 7).to_le_bytes());
        raw.write(0, &cmd);
        let unknown = raw.read();
        seen.push((ok.is_ok(), unknown.err().map(|e| e.0)));
        let mut victim = victim;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(victim.query_drop("DO 1").await.is_err(), "{via:?}: killed");
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], (true, Some(1094)));
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
    // The session is marked idle right after its answer is sent (as the
    // server sets COM_SLEEP after end_statement): a listing taken at once may
    // still see it finishing.
    let mut rows: Vec<Row> = Vec::new();
    for _ in 0..50 {
        rows = b.query("SHOW PROCESSLIST").await.expect("processlist");
        let idle = rows
            .iter()
            .any(|r| r.get::<u64, _>(0) == Some(aid) && r.get::<String, _>(4).as_deref() == Some("Sleep"));
        if idle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

/// `KILL <id>; SELECT …` in one text (mysql2's pool tests send `kill ?;
/// select sleep(0.05)`): the KILL acts and the rest's answers follow, and a
/// refused KILL ends the text there, the same directly and through sluice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_first_in_a_multi_statement_acts_and_the_rest_runs() {
    let s = master_only(4);
    let mut seen = Vec::new();
    for via in [Via::Direct, Via::Sluice] {
        let mut victim = connect(&s, via).await;
        let mut killer = connect(&s, via).await;
        let mut answers = Vec::new();
        {
            let mut r = killer
                .query_iter(format!("KILL {}; SELECT 7 AS x; SELECT 8", victim.id()))
                .await
                .expect("multi-statement with KILL");
            while !r.is_empty() {
                let rows: Vec<Row> = r.collect().await.expect("a result of the text");
                answers.push(rows.iter().map(|row| row.get::<i64, _>(0)).collect::<Vec<_>>());
            }
        }
        let err = victim
            .query_drop("SELECT 1")
            .await
            .expect_err("the killed session is gone");
        assert!(
            matches!(server_code(&err), None | Some((1927 | 2013, _))),
            "{via:?}: the killed session's connection is closed: {err:?}"
        );
        let refused = killer
            .query_drop("KILL 4000000000; SELECT 9")
            .await
            .expect_err("unknown thread id");
        let after: i64 = killer
            .query_first("SELECT 10")
            .await
            .expect("the session goes on")
            .expect("row");
        seen.push((answers, server_code(&refused), after));
    }
    assert_eq!(seen[0], seen[1], "direct vs sluice");
    assert_eq!(seen[1].0, vec![vec![], vec![Some(7)], vec![Some(8)]]);
}

/// A KILL or SHOW PROCESSLIST after the first statement of a text is
/// refused (1235), never forwarded: the server would read the number as
/// one of its own threads (here a direct client's, which must survive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_after_the_first_statement_is_refused_not_forwarded() {
    let s = master_only(4);
    let mut bystander = connect(&s, Via::Direct).await;
    let thread = bystander.id();
    let mut c = connect(&s, Via::Sluice).await;
    for sql in [
        format!("SELECT 1; KILL {thread}"),
        format!("DO 1; /*!KILL {thread} */"),
        "SELECT 1; SHOW PROCESSLIST".to_owned(),
    ] {
        let err = c.query_drop(&sql).await.expect_err("refused");
        assert_eq!(server_code(&err).map(|e| e.0), Some(1235), "{sql}: {err:?}");
    }
    let alive: i64 = bystander
        .query_first("SELECT 1")
        .await
        .expect("the direct client's thread was not killed")
        .expect("row");
    assert_eq!(alive, 1);
    let v: i64 = c
        .query_first("SELECT 2")
        .await
        .expect("the session goes on")
        .expect("row");
    assert_eq!(v, 2);
}
