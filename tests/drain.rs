//! Stopping as a load balancer or Kubernetes needs it, and `/readyz`: on SIGTERM
//! `/readyz` is 503 at once while sluice keeps accepting for `limits.drain_delay`; then
//! the port closes, idle sessions without a transaction are closed, and running
//! statements and open transactions finish (a session in a transaction is closed after
//! its COMMIT) within `limits.shutdown_timeout`. `/readyz` is otherwise 200 when every
//! group has a reachable server that can serve it (`readiness.require_master: true`:
//! every master), and `/healthz` answers for the process only.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::http_get;
use common::reads::sluice_conn;
use mysql_async::prelude::*;

fn status(s: &Sluice, path: &str) -> (u16, String) {
    http_get(s.admin_port, path).unwrap_or_else(|e| panic!("GET {path}: {e}\n{}", s.log()))
}

/// Polls `/readyz` until it answers `want`; the time it took.
fn wait_readyz(s: &Sluice, want: u16, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let (got, body) = status(s, "/readyz");
        if got == want {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "/readyz still {got} ({body}) after {within:?}, want {want}\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn refused(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_err()
}

fn rows(table: &str) -> String {
    shared_cluster().master.sql(&format!(
        "SELECT GROUP_CONCAT(id ORDER BY id) FROM {TEST_DB}.{table}"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_then_lets_statements_and_transactions_finish() {
    let table = unique_name("drain");
    let master = &shared_cluster().master;
    master.sql(&format!("CREATE TABLE {TEST_DB}.{table} (id INT PRIMARY KEY)"));
    let s = Sluice::start_for(
        shared_cluster(),
        "limits:\n  shutdown_timeout: 20s\n  drain_delay: 1500ms\n",
    );
    wait_readyz(&s, 200, Duration::from_secs(10));
    let mut idle = sluice_conn(&s, TEST_DB).await;
    let mut tx = sluice_conn(&s, TEST_DB).await;
    tx.query_drop("BEGIN").await.expect("begin");
    tx.query_drop(format!("INSERT INTO {TEST_DB}.{table} VALUES (1)"))
        .await
        .expect("insert 1");
    let mut busy = sluice_conn(&s, TEST_DB).await;
    let running = tokio::spawn(async move {
        let r: Result<Option<i64>, _> = busy.query_first("SELECT SLEEP(3) + 7").await;
        r
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let signalled = Instant::now();
    s.signal("TERM");
    let unready = wait_readyz(&s, 503, Duration::from_secs(1));
    assert!(
        unready < Duration::from_millis(100),
        "/readyz took {unready:?} to turn 503"
    );
    let (code, body) = status(&s, "/readyz");
    assert!(body.contains("draining"), "{code} {body}");
    assert_eq!(status(&s, "/healthz").0, 200, "/healthz answers for the process");

    // Within drain_delay: new clients are still served, idle sessions still work.
    let mut late = sluice_conn(&s, TEST_DB).await;
    let one: Option<i64> = late
        .query_first("SELECT 1")
        .await
        .expect("a client during drain_delay");
    assert_eq!(one, Some(1));
    let _: Option<i64> = idle
        .query_first("SELECT 2")
        .await
        .expect("idle session during drain_delay");
    assert!(
        signalled.elapsed() < Duration::from_millis(1500),
        "the checks outlasted drain_delay"
    );

    // Then the port closes and idle sessions without a transaction go.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !refused(s.port) {
        assert!(Instant::now() < deadline, "the port never closed\n{}", s.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let closed_after = signalled.elapsed();
    assert!(
        closed_after >= Duration::from_millis(1450),
        "the port closed {closed_after:?} after SIGTERM, before drain_delay"
    );
    assert!(
        idle.query_drop("SELECT 3").await.is_err(),
        "the idle session was closed"
    );
    assert!(
        late.query_drop("SELECT 4").await.is_err(),
        "the late idle session was closed"
    );
    assert!(
        s.is_running(),
        "sluice waits for the statement and the transaction"
    );

    // The open transaction goes on and commits. Its client may go on using
    // the session at once (limits.shutdown_wait_for_clients: a close now
    // could cross its next command); once quiet for 250 ms it is closed.
    tx.query_drop(format!("INSERT INTO {TEST_DB}.{table} VALUES (2)"))
        .await
        .unwrap_or_else(|e| panic!("a statement in the open transaction: {e}\n{}", s.log()));
    tx.query_drop("COMMIT")
        .await
        .unwrap_or_else(|e| panic!("COMMIT of the open transaction: {e}\n{}", s.log()));
    let five: Option<i64> = tx
        .query_first("SELECT 5")
        .await
        .unwrap_or_else(|e| panic!("a statement right after COMMIT: {e}\n{}", s.log()));
    assert_eq!(five, Some(5));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        tx.query_drop("SELECT 6").await.is_err(),
        "closed once quiet after its COMMIT"
    );

    let answer = running.await.expect("statement task");
    assert_eq!(
        answer.unwrap_or_else(|e| panic!("the running statement: {e}\n{}", s.log())),
        Some(7)
    );
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(0), "{}", s.log());
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(8), "exit {took:?} after SIGTERM");
    assert_eq!(rows(&table), "1,2", "both rows of the transaction are committed");
    master.sql(&format!("DROP TABLE {TEST_DB}.{table}"));
    let log = s.log();
    assert!(
        log.contains("still accepting connections for limits.drain_delay"),
        "{log}"
    );
    assert!(log.contains("every session ended"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_left_open_is_rolled_back_at_shutdown_timeout() {
    let table = unique_name("drain_cut");
    let master = &shared_cluster().master;
    master.sql(&format!("CREATE TABLE {TEST_DB}.{table} (id INT PRIMARY KEY)"));
    let s = Sluice::start_for(shared_cluster(), "limits:\n  shutdown_timeout: 1s\n");
    let mut tx = sluice_conn(&s, TEST_DB).await;
    tx.query_drop("BEGIN").await.expect("begin");
    tx.query_drop(format!("INSERT INTO {TEST_DB}.{table} VALUES (1)"))
        .await
        .expect("insert");
    let signalled = Instant::now();
    s.signal("TERM");
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(0), "{}", s.log());
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "exited {took:?} after SIGTERM with shutdown_timeout 1s and a transaction open"
    );
    assert!(tx.query_drop("COMMIT").await.is_err(), "the session was cut off");
    // The server rolls back what the closed connection left open.
    let deadline = Instant::now() + Duration::from_secs(5);
    while rows(&table) != "NULL" {
        assert!(
            Instant::now() < deadline,
            "the uncommitted row is there: {}",
            rows(&table)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    master.sql(&format!("DROP TABLE {TEST_DB}.{table}"));
    assert!(s.log().contains("limits.shutdown_timeout passed"), "{}", s.log());
}

/// SIGINT skips `drain_delay`; a second signal during a SIGTERM's `drain_delay` exits
/// at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_or_a_second_signal_skips_drain_delay() {
    for signals in [&["INT"][..], &["TERM", "TERM"]] {
        let s = Sluice::start_for(shared_cluster(), "limits:\n  drain_delay: 20s\n");
        for (i, sig) in signals.iter().enumerate() {
            if i > 0 {
                wait_readyz(&s, 503, Duration::from_secs(1));
                assert!(!refused(s.port), "still accepting during drain_delay");
            }
            s.signal(sig);
        }
        let last = Instant::now();
        assert_eq!(s.wait_exit(Duration::from_secs(5)), Some(0), "{}", s.log());
        let took = last.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "{signals:?}: exit {took:?} after the last"
        );
    }
}

/// A group whose master sluice cannot log in to (a wrong password: the master is never
/// reached, and the replica is proved by the address it replicates from, which is the
/// master's as configured) and whose replica is one of the shared cluster's: ready by default (the replica can serve reads), not
/// with `require_master`, not in strict mode (no read without a master probe), not
/// without a replica.
#[tokio::test]
async fn readyz_wants_a_server_that_can_serve_each_group() {
    let cluster = shared_cluster();
    // The counter table on the replica, which its probes read.
    let db = common::reads::tracked_db(cluster, "readyz").await;
    let dead = cluster.master.addr();
    let config = |readiness: &str, mode: &str, replicas: &str| {
        format!(
            "users:\n  - {{ name: {APP_USER}, password: {APP_PASSWORD}, backend: group }}\n\
             backend:\n  connect_timeout: 500ms\n\
             freshness:\n  mode: {mode}\n  probe_interval: 20ms\n\
             readiness:\n  require_master: {readiness}\n\
             groups:\n  - name: main\n    master: {{ addr: \"{dead}\", user: {SLUICE_USER}, password: not-the-password }}\n    \
             replicas: {replicas}\n"
        )
    };
    let replica = format!(
        "[ {{ addr: \"{}\", user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }} ]",
        cluster.replicas[0].addr()
    );
    let s = Sluice::start(&config("false", "causal", &replica));
    wait_readyz(&s, 200, Duration::from_secs(10));
    assert_eq!(status(&s, "/healthz").0, 200);

    let reload = |text: String, want: u16, needle: &str| {
        let gen = common::http::metric(s.admin_port, "sluice_config_generation").expect("generation");
        let text = harness_defaults(format!(
            "listen: 127.0.0.1:{}\nadmin_listen: 127.0.0.1:{}\n{text}",
            s.port, s.admin_port
        ));
        std::fs::write(s.config_path(), text).expect("rewrite");
        s.signal("HUP");
        let deadline = Instant::now() + Duration::from_secs(10);
        while common::http::metric(s.admin_port, "sluice_config_generation") == Some(gen) {
            assert!(Instant::now() < deadline, "no reload\n{}", s.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        wait_readyz(&s, want, Duration::from_secs(10));
        let (_, body) = status(&s, "/readyz");
        assert!(body.contains(needle), "/readyz: {body}");
    };
    reload(config("true", "causal", &replica), 503, &dead);
    reload(config("false", "strict", &replica), 503, &dead);
    reload(config("false", "causal", "[]"), 503, "no replica in rotation");
    reload(config("false", "off", &replica), 200, "ready");
    assert_eq!(status(&s, "/healthz").0, 200, "/healthz never looks at backends");
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
