//! Graceful shutdown of the `sluice` process: on SIGTERM it stops accepting, closes idle
//! sessions at once (without a packet, as MariaDB does at shutdown), lets running
//! statements finish and answer, and exits 0; after `limits.shutdown_timeout` it closes
//! what is still running and exits all the same.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cluster::{shared_cluster, unique_name, Sluice, APP_PASSWORD, APP_USER, TEST_DB};
use common::raw::{Frame, RawConn};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder};

async fn connect(s: &Sluice) -> Conn {
    let opts = OptsBuilder::from_opts(Opts::from_url(&s.app_url(TEST_DB)).expect("url")).prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(20), Conn::new(opts))
        .await
        .expect("connect timed out")
        .unwrap_or_else(|e| panic!("connect through sluice: {e}\n{}", s.log()))
}

/// Waits until the port refuses TCP connections (the listener is closed).
fn wait_refused(port: u16, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_err() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_statements_finish_then_exits_0() {
    let table = unique_name("shutdown");
    shared_cluster()
        .master
        .sql(&format!("CREATE TABLE {TEST_DB}.{table} (id INT PRIMARY KEY)"));
    let s = Sluice::start_for(shared_cluster(), "limits:\n  shutdown_timeout: 20s\n");
    let mut idle_driver = connect(&s).await;
    let mut idle_raw = RawConn::connect(s.port);
    assert!(idle_raw.login(APP_USER, APP_PASSWORD).is_ok());
    let mut busy = connect(&s).await;
    // A write in a statement that is still running when the signal arrives: its
    // answer must reach the client and the row must be there.
    let insert = format!("INSERT INTO {TEST_DB}.{table} SELECT 1 FROM DUAL WHERE SLEEP(2) = 0");
    let running = tokio::spawn(async move {
        let r = busy.query_drop(insert).await;
        let affected = busy.affected_rows();
        (r, affected, busy)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;

    let signalled = Instant::now();
    s.signal("TERM");
    // Idle sessions are closed at once, with nothing sent.
    idle_raw.set_timeout(Duration::from_secs(5));
    assert_eq!(
        idle_raw.read(),
        Frame::Closed,
        "an idle session is closed without a packet"
    );
    assert!(
        signalled.elapsed() < Duration::from_secs(1),
        "idle close took {:?}",
        signalled.elapsed()
    );
    // New connections are refused while the statement still runs.
    assert!(
        wait_refused(s.port, Duration::from_secs(1)),
        "sluice still accepts connections"
    );
    assert!(s.is_running(), "sluice must wait for the running statement");

    let (result, affected, _busy) = running.await.expect("statement task");
    result.unwrap_or_else(|e| panic!("the running statement must complete: {e}\n{}", s.log()));
    assert_eq!(affected, 1, "the running INSERT reported its row");
    assert!(
        idle_driver.query_drop("SELECT 1").await.is_err(),
        "the idle driver session was closed"
    );

    let status = s.wait_exit(Duration::from_secs(10));
    assert_eq!(
        status,
        Some(0),
        "sluice must exit 0 after the statement\n{}",
        s.log()
    );
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(8),
        "exit {took:?} after SIGTERM (statement ran ~1.5 s more)"
    );
    let master = &shared_cluster().master;
    assert_eq!(
        master.sql(&format!("SELECT COUNT(*) FROM {TEST_DB}.{table}")),
        "1"
    );
    master.sql(&format!("DROP TABLE {TEST_DB}.{table}"));
    let log = s.log();
    assert!(log.contains("shutting down"), "{log}");
    assert!(log.contains("every session ended"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_timeout_cuts_off_long_statements() {
    let s = Sluice::start_for(shared_cluster(), "limits:\n  shutdown_timeout: 1s\n");
    let mut busy = connect(&s).await;
    let running = tokio::spawn(async move { busy.query_drop("SELECT SLEEP(60)").await });
    tokio::time::sleep(Duration::from_millis(500)).await;

    let signalled = Instant::now();
    s.signal("TERM");
    assert!(
        wait_refused(s.port, Duration::from_secs(1)),
        "sluice still accepts connections"
    );
    let result = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the cut-off client must not hang")
        .expect("statement task");
    assert!(result.is_err(), "SLEEP(60) cannot have completed: {result:?}");
    let status = s.wait_exit(Duration::from_secs(10));
    let took = signalled.elapsed();
    assert_eq!(status, Some(0), "{}", s.log());
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "exited {took:?} after SIGTERM with shutdown_timeout 1s"
    );
    assert!(s.log().contains("limits.shutdown_timeout passed"), "{}", s.log());
}
