//! Faults at the edges of sluice: a backend that refuses connections (nothing listening,
//! or its max_connections reached) and slow clients (one that stops reading a big
//! result). In each: every failing client gets a clear error quickly, other clients keep
//! being served, no committed write is lost, and sluice recovers on its own.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::cluster::{shared_cluster, unique_name, Cluster, Sluice, TEST_DB};
use common::raw::RawConn;
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder};

async fn try_connect(s: &Sluice, db: &str) -> Result<Conn, mysql_async::Error> {
    let opts = OptsBuilder::from_opts(Opts::from_url(&s.app_url(db)).expect("url")).prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(20), Conn::new(opts))
        .await
        .expect("connecting through sluice must not hang")
}

fn code_of(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(s) => Some(s.code),
        _ => None,
    }
}

/// Runs `sql` through a fresh session; the error (code, message) and how long it took.
async fn failing(s: &Sluice, sql: &str) -> ((u16, String), Duration) {
    let t = Instant::now();
    let result = match try_connect(s, "").await {
        Ok(mut c) => c.query_drop(sql).await,
        Err(e) => Err(e),
    };
    let e = result.expect_err("the statement must fail");
    let mysql_async::Error::Server(e) = e else {
        panic!("expected an error sent by sluice, got {e:?}");
    };
    ((e.code, e.message), t.elapsed())
}

/// Retries `sql` through new sessions until it succeeds (10 s).
async fn eventually(s: &Sluice, sql: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = match try_connect(s, TEST_DB).await {
            Ok(mut c) => c.query_drop(sql).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => return,
            Err(e) if Instant::now() < deadline => {
                assert!(
                    matches!(code_of(&e), Some(1429 | 1040)),
                    "unexpected error: {e:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("sluice did not recover: {e}\n{}", s.log()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_backend_refusing_connections() {
    let cluster = Cluster::start(1);
    let (master, replica) = (&cluster.master, &cluster.replicas[0]);
    let table = format!("{TEST_DB}.refusing");
    master.sql(&format!("CREATE TABLE {table} (id INT PRIMARY KEY)"));
    // A backend account without SUPER: MariaDB keeps no spare connection for it.
    // (SLAVE MONITOR: without it no replica can be proved to replicate from
    // the master, and none serves reads; issue 43.)
    master.sql(
        "CREATE USER 'plain'@'%' IDENTIFIED BY 'plainpw';
         GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, SLAVE MONITOR ON *.* TO 'plain'@'%'",
    );
    cluster.wait_replicas_caught_up();
    let config = format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {}, user: plain, password: plainpw }}\n    replicas:\n      - {{ addr: {}, user: plain, password: plainpw }}\nbackend: {{ connect_timeout: 1s }}\nfreshness: {{ mode: off }}\n",
        Sluice::users_yaml(),
        master.addr(),
        replica.addr()
    );
    let s = Sluice::start(&config);
    eventually(&s, &format!("INSERT INTO {table} VALUES (1)")).await;

    // 1. Nothing listening on the master's port.
    master.stop();
    assert!(
        TcpStream::connect(master.addr()).is_err(),
        "the master port still accepts"
    );
    for _ in 0..3 {
        let ((code, message), took) = failing(&s, &format!("INSERT INTO {table} VALUES (2)")).await;
        assert_eq!(code, 1429, "{message}");
        assert!(
            message.starts_with(&format!("Can't connect to MySQL server on '{}'", master.addr())),
            "{message}"
        );
        assert!(took < Duration::from_secs(3), "the error took {took:?}");
    }
    // Reads are still served (by the replica), and so is the admin endpoint.
    // No default database: the login itself needs no master connection.
    let mut reader = try_connect(&s, "").await.expect("login while the master is down");
    let rows: Vec<i64> = reader
        .query(format!("SELECT id FROM {table}"))
        .await
        .unwrap_or_else(|e| panic!("read while the master is down: {e}\n{}", s.log()));
    assert_eq!(rows, vec![1], "the committed write is on the replica");
    drop(reader);
    assert!(common::http::http_get(s.admin_port, "/healthz")
        .expect("GET /healthz")
        .1
        .contains("ok"));

    master.restart();
    eventually(&s, &format!("INSERT INTO {table} VALUES (2)")).await;

    // 2. The master's max_connections reached: MariaDB answers 1040, and sluice passes
    //    that on (new backend connections only; pooled ones keep working).
    // These sessions hold master connections (an open transaction pins one;
    // multiplexed sessions otherwise give theirs back after each statement):
    // more of them than the pool has idle connections, so that what a new
    // session needs must be created, and is refused.
    let mut pinned = Vec::new();
    for i in 0..6 {
        let mut c = try_connect(&s, TEST_DB).await.expect("pinned session");
        c.query_drop("BEGIN").await.expect("begin");
        c.query_drop(format!("INSERT INTO {table} VALUES ({})", 100 + i))
            .await
            .expect("pinned session's write");
        pinned.push(c);
    }
    let mut keeper = try_connect(&s, TEST_DB).await.expect("keeper session");
    keeper.query_drop("BEGIN").await.expect("keeper begin");
    keeper
        .query_drop(format!("INSERT INTO {table} VALUES (3)"))
        .await
        .expect("keeper write");
    master.sql("SET GLOBAL max_connections = 10");
    let mut held = Vec::new();
    loop {
        let mut c = RawConn::connect(master.port);
        let answer = c.login("plain", "plainpw");
        if answer.err().is_some_and(|e| e.0 == 1040) {
            break;
        }
        assert!(answer.is_ok(), "filling the master: {answer:?}");
        held.push(c);
        assert!(held.len() < 20, "max_connections is not enforced");
    }
    // Every pooled connection was closed with the restart above; what a session needs
    // now must be created, and is refused.
    let mut refused = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let r = match try_connect(&s, TEST_DB).await {
            Ok(mut c) => {
                c.query_drop(format!("INSERT IGNORE INTO {table} VALUES (4)"))
                    .await
            }
            Err(e) => Err(e),
        };
        let took = t.elapsed();
        if let Err(e) = r {
            let mysql_async::Error::Server(e) = e else {
                panic!("expected an error sent by sluice, got {e:?}");
            };
            assert_eq!(
                (e.code, e.message.as_str()),
                (1040, "Too many connections"),
                "{e:?}"
            );
            assert!(took < Duration::from_secs(3), "the error took {took:?}");
            refused += 1;
        }
    }
    assert!(refused > 0, "no session was refused while the master was full");
    // The session that already had its connection is not affected.
    keeper
        .query_drop(format!("INSERT INTO {table} VALUES (5)"))
        .await
        .expect("a held connection keeps working while the master is full");
    keeper.query_drop("COMMIT").await.expect("keeper commit");
    for mut c in pinned {
        c.query_drop("ROLLBACK").await.expect("rollback");
    }
    drop(held);
    master.sql("SET GLOBAL max_connections = 3000");
    eventually(&s, &format!("INSERT IGNORE INTO {table} VALUES (4)")).await;

    // Every write that was acknowledged is there.
    assert_eq!(
        master.sql(&format!("SELECT GROUP_CONCAT(id ORDER BY id) FROM {table}")),
        "1,2,3,4,5"
    );
    assert!(s.is_running(), "sluice must keep running");
}

/// Resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .expect("VmRSS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_slow_client_stalls_nobody_and_memory_stays_bounded() {
    let cluster = shared_cluster();
    let table = unique_name("slowclient");
    cluster
        .master
        .sql(&format!("CREATE TABLE {TEST_DB}.{table} (id INT PRIMARY KEY)"));
    let s = Sluice::start_for(cluster, "");
    let mut other = try_connect(&s, TEST_DB).await.expect("other client");
    other.query_drop("SELECT 1").await.expect("warm up");
    let before = rss(s.pid());

    // About 200 MB of result to a client that does not read it.
    let marker = unique_name("bigresult");
    let mut slow = RawConn::connect(s.port);
    assert!(slow
        .login(common::cluster::APP_USER, common::cluster::APP_PASSWORD)
        .is_ok());
    let big = format!("SELECT '{marker}', REPEAT('x', 1000) FROM {TEST_DB}.seq_1_to_200000");
    let mut payload = vec![0x03];
    payload.extend_from_slice(big.as_bytes());
    slow.write(0, &payload);

    // Others are served meanwhile, quickly, and their writes commit.
    let mut peak = before;
    let t = Instant::now();
    let mut id = 0;
    while t.elapsed() < Duration::from_secs(3) {
        let q = Instant::now();
        id += 1;
        other
            .query_drop(format!("INSERT INTO {TEST_DB}.{table} VALUES ({id})"))
            .await
            .expect("write while a client stalls");
        let n: Option<i64> = other
            .query_first(format!("SELECT COUNT(*) FROM {TEST_DB}.{table}"))
            .await
            .expect("read while a client stalls");
        assert_eq!(n, Some(id));
        assert!(
            q.elapsed() < Duration::from_secs(1),
            "a statement took {:?}",
            q.elapsed()
        );
        peak = peak.max(rss(s.pid()));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let grown = peak.saturating_sub(before);
    eprintln!(
        "sluice RSS {} MiB before, {} MiB at most while the client stalled",
        before >> 20,
        peak >> 20
    );
    assert!(
        grown < 48 << 20,
        "sluice buffered the result: RSS grew by {} MiB",
        grown >> 20
    );

    // The slow client reads a little, then goes away mid-result.
    slow.set_timeout(Duration::from_secs(5));
    for _ in 0..100 {
        let _ = slow.read();
    }
    drop(slow);
    // The backend connection that was streaming is closed, not pooled: the server
    // stops the query.
    let running = format!(
        "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '%{marker}%' AND info NOT LIKE '%processlist%'"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while cluster.master.sql(&running) != "0" {
        assert!(
            Instant::now() < deadline,
            "the abandoned query still runs on the master"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // New sessions get clean connections with correct answers.
    for i in 0..20 {
        let mut c = try_connect(&s, TEST_DB).await.expect("new session");
        let v: Option<i64> = c.query_first(format!("SELECT {i}")).await.expect("query");
        assert_eq!(v, Some(i));
    }
    assert_eq!(
        cluster
            .master
            .sql(&format!("SELECT COUNT(*) FROM {TEST_DB}.{table}")),
        id.to_string(),
        "every acknowledged write is there"
    );
    cluster.master.sql(&format!("DROP TABLE {TEST_DB}.{table}"));
}
