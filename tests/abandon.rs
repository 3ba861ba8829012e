//! A client that goes away loses its transaction at once, as with the server
//! itself: real sockets closed at each point (idle in BEGIN, autocommit=0
//! after a write, mid-statement, in a lock wait, mid-write, 20 at once),
//! then checked on the master: the row locks are free (a locker waiting on
//! them gets them, and sees the rolled-back value), no transaction or thread
//! of the session survives, DDL gets its metadata lock, and the next clients'
//! writes commit. Also `wait_timeout` closes an idle session as the server
//! does. Times from disconnect to rollback are printed (run with
//! `--nocapture` to see them).

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::raw::{Frame, RawConn};
use mysql_async::prelude::*;
use mysql_async::Conn;

/// sluice over the shared cluster's master only, `pool_max` connections.
fn master_only(pool_max: usize) -> Sluice {
    let m = shared_cluster().master.addr();
    Sluice::start(&format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {m}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    replicas: []\nbackend: {{ pool_max: {pool_max}, connect_timeout: 2s }}\n",
        Sluice::users_yaml()
    ))
}

async fn direct() -> Conn {
    Conn::from_url(shared_cluster().master.sluice_url(""))
        .await
        .expect("connect to the master")
}

/// A logged-in raw client of sluice (its socket is closed by dropping it).
fn raw_client(s: &Sluice) -> RawConn {
    let mut c = RawConn::connect(s.port);
    let r = c.login(APP_USER, APP_PASSWORD);
    assert!(r.is_ok(), "login: {r:?}");
    c
}

/// Run `sql` and read its whole answer; panics on an error.
fn raw_ok(c: &mut RawConn, sql: &str) {
    let f = c.query(sql);
    assert!(f.err().is_none(), "{sql}: {f:?}");
    // A result set: read up to its end (small results only).
    if let Frame::Packet(_, p) = &f {
        if head(p) != Some(0x00) {
            let mut eofs = 0;
            while eofs < 2 {
                match c.read() {
                    Frame::Packet(_, p) if head(&p) == Some(0xfe) && p.len() < 9 => eofs += 1,
                    Frame::Packet(..) => {}
                    other => panic!("{sql}: {other:?}"),
                }
            }
        }
    }
}

/// The value of a one-row, one-column result (text).
fn raw_value(c: &mut RawConn, sql: &str) -> String {
    let f = c.query(sql);
    assert!(f.err().is_none(), "{sql}: {f:?}");
    let mut rows = Vec::new();
    let mut eofs = 0;
    while eofs < 2 {
        match c.read() {
            Frame::Packet(_, p) if head(&p) == Some(0xfe) && p.len() < 9 => eofs += 1,
            Frame::Packet(_, p) if eofs == 1 => rows.push(p),
            Frame::Packet(..) => {}
            other => panic!("{sql}: {other:?}"),
        }
    }
    let row = rows.first().expect("one row");
    let len = usize::from(row[0]);
    String::from_utf8_lossy(&row[1..1 + len]).into_owned()
}

/// The first byte of a packet (`first` is also a method of mysql_async's
/// prelude, which tests need).
fn head(p: &[u8]) -> Option<u8> {
    p.iter().next().copied()
}

/// Send a statement without waiting for its answer.
fn raw_send(c: &mut RawConn, sql: &str) {
    let mut p = vec![0x03];
    p.extend_from_slice(sql.as_bytes());
    c.write(0, &p);
}

fn make_db(prefix: &str, rows: usize) -> String {
    let db = unique_name(prefix);
    let values: Vec<String> = (1..=rows).map(|i| format!("({i}, 0)")).collect();
    shared_cluster().master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; \
         CREATE TABLE {db}.w (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB; \
         INSERT INTO {db}.t VALUES {}",
        values.join(",")
    ));
    db
}

/// Does a backend thread still exist, or hold an InnoDB transaction?
async fn survives(d: &mut Conn, thread: u64) -> (bool, bool) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let threads: Option<u64> = d
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {thread}"
            ))
            .await
            .expect("processlist");
        // INNODB_TRX is a cache refreshed at most every 0.1 s.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let trx: Option<u64> = d
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = {thread}"
            ))
            .await
            .expect("innodb_trx");
        let (t, x) = (threads.unwrap_or(0) > 0, trx.unwrap_or(0) > 0);
        if !(t || x) || Instant::now() > deadline {
            return (t, x);
        }
    }
}

/// Where the client is when its socket closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    IdleInBegin,
    AutocommitOffAfterWrite,
    MidStatement,
    InLockWait,
    MidWrite,
}

impl Point {
    fn idle(self) -> bool {
        matches!(self, Point::IdleInBegin | Point::AutocommitOffAfterWrite)
    }
}

/// One abandoned session at `point`; returns the time from closing its
/// socket to a waiting locker getting its row lock.
async fn abandon_at(s: &Sluice, db: &str, point: Point) -> Duration {
    let mut d = direct().await;
    d.query_drop(format!("UPDATE {db}.t SET v = 0 WHERE id IN (1, 2)"))
        .await
        .expect("reset");
    let mut c = raw_client(s);
    if point == Point::AutocommitOffAfterWrite {
        raw_ok(&mut c, "SET autocommit = 0");
    } else {
        raw_ok(&mut c, "BEGIN");
    }
    raw_ok(&mut c, &format!("UPDATE {db}.t SET v = v + 1 WHERE id = 1"));
    // The backend thread serving the session (CONNECTION_ID() is sluice's).
    let thread: u64 = raw_value(&mut c, "SELECT @@pseudo_thread_id")
        .parse()
        .expect("thread id");
    let mut holder = None;
    match point {
        Point::MidStatement => raw_send(&mut c, "SELECT SLEEP(30)"),
        Point::InLockWait => {
            let mut h = direct().await;
            h.query_drop("BEGIN").await.expect("begin");
            h.query_drop(format!("SELECT v FROM {db}.t WHERE id = 2 FOR UPDATE"))
                .await
                .expect("hold row 2");
            raw_send(&mut c, &format!("UPDATE {db}.t SET v = v + 1 WHERE id = 2"));
            holder = Some(h);
        }
        Point::MidWrite => raw_send(
            &mut c,
            &format!("INSERT INTO {db}.w (v) SELECT SLEEP(0.01) FROM seq_1_to_3000"),
        ),
        Point::IdleInBegin | Point::AutocommitOffAfterWrite => {}
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A locker waits for row 1 (held by the abandoned transaction).
    let mut locker = direct().await;
    locker
        .query_drop("SET SESSION innodb_lock_wait_timeout = 30")
        .await
        .expect("set");
    let row1 = format!("SELECT v FROM {db}.t WHERE id = 1 FOR UPDATE");
    let lock = tokio::spawn(async move {
        let v: Option<i64> = locker.query_first(row1).await.expect("lock row 1");
        (v, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let closed = Instant::now();
    drop(c);
    let (v, got) = tokio::time::timeout(Duration::from_secs(20), lock)
        .await
        .unwrap_or_else(|_| {
            panic!("{point:?}: the abandoned transaction still holds its row lock after 20 s")
        })
        .expect("locker");
    assert_eq!(
        v,
        Some(0),
        "{point:?}: the abandoned update was rolled back, not committed"
    );
    let (thread_alive, trx_alive) = survives(&mut d, thread).await;
    assert!(
        !trx_alive,
        "{point:?}: the backend still has a transaction of the abandoned session"
    );
    assert!(
        !thread_alive,
        "{point:?}: the backend connection of an abandoned transaction is closed, not pooled"
    );
    if point == Point::MidWrite {
        let n: Option<u64> = d
            .query_first(format!("SELECT COUNT(*) FROM {db}.w"))
            .await
            .expect("count");
        assert_eq!(n, Some(0), "the interrupted INSERT … SELECT left no row");
    }
    drop(holder);
    got.saturating_duration_since(closed)
}

fn median_max(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[v.len() - 1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_abandoned_transaction_is_rolled_back_at_once_at_every_point() {
    let s = master_only(4);
    let db = make_db("abandon_points", 2);
    let points = [
        Point::IdleInBegin,
        Point::AutocommitOffAfterWrite,
        Point::MidStatement,
        Point::InLockWait,
        Point::MidWrite,
    ];
    let (mut idle, mut running) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for p in points {
            let t = abandon_at(&s, &db, p).await;
            eprintln!("round {round} {p:?}: rolled back {t:?} after the client closed its socket");
            assert!(t < Duration::from_secs(3), "{p:?}: rollback took {t:?}");
            if p.idle() {
                idle.push(t);
            } else {
                running.push(t);
            }
        }
    }
    let (im, ix) = median_max(idle);
    let (rm, rx) = median_max(running);
    eprintln!(
        "disconnect -> rollback: idle median {im:?} max {ix:?}; mid-statement median {rm:?} max {rx:?}"
    );
    // DDL gets its metadata lock: nothing of the sessions is left open.
    let mut d = direct().await;
    d.query_drop("SET SESSION lock_wait_timeout = 5")
        .await
        .expect("set");
    d.query_drop(format!("ALTER TABLE {db}.t ADD COLUMN extra INT"))
        .await
        .expect("ALTER TABLE after the abandoned sessions");
    d.query_drop(format!("DROP TABLE {db}.w"))
        .await
        .expect("DROP TABLE after the abandoned sessions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_clients_vanishing_at_once_leave_nothing_and_the_next_writes_commit() {
    let s = master_only(30);
    let db = make_db("abandon_twenty", 20);
    let mut clients = Vec::new();
    let mut threads = Vec::new();
    for i in 1..=20 {
        let mut c = raw_client(&s);
        raw_ok(&mut c, "BEGIN");
        raw_ok(&mut c, &format!("UPDATE {db}.t SET v = v + 1 WHERE id = {i}"));
        threads.push(raw_value(&mut c, "SELECT @@pseudo_thread_id"));
        clients.push(c);
    }
    let mut locker = direct().await;
    locker
        .query_drop("SET SESSION innodb_lock_wait_timeout = 30")
        .await
        .expect("set");
    let db2 = db.clone();
    let lock = tokio::spawn(async move {
        let n: Option<i64> = locker
            .query_first(format!("SELECT SUM(v) FROM {db2}.t FOR UPDATE"))
            .await
            .expect("lock all rows");
        (n, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let closed = Instant::now();
    drop(clients);
    let (sum, got) = tokio::time::timeout(Duration::from_secs(20), lock)
        .await
        .expect("20 abandoned transactions still hold their locks after 20 s")
        .expect("locker");
    let t = got.saturating_duration_since(closed);
    eprintln!("20 clients gone at once: all rolled back {t:?} after their sockets closed");
    assert_eq!(sum, Some(0), "every abandoned update was rolled back");
    assert!(t < Duration::from_secs(3), "rollback of 20 took {t:?}");
    let mut d = direct().await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let left: Option<u64> = d
        .query_first(format!(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id IN ({})",
            threads.join(",")
        ))
        .await
        .expect("innodb_trx");
    assert_eq!(left, Some(0), "no transaction of the 20 sessions survives");
    // The next 20 clients' writes all commit.
    let mut next = Vec::new();
    for i in 0..20 {
        let url = s.app_url(&db);
        next.push(tokio::spawn(async move {
            let mut c = Conn::from_url(url).await.expect("connect");
            c.query_drop(format!("INSERT INTO w (v) VALUES ({i})"))
                .await
                .expect("insert");
            c.query_drop("BEGIN").await.expect("begin");
            c.query_drop(format!("UPDATE t SET v = v + 1 WHERE id = {}", i + 1))
                .await
                .expect("update");
            c.query_drop("COMMIT").await.expect("commit");
            c.disconnect().await.expect("disconnect");
        }));
    }
    for h in next {
        h.await.expect("next client");
    }
    let (n, sum): (u64, i64) = d
        .query_first(format!(
            "SELECT (SELECT COUNT(*) FROM {db}.w), (SELECT SUM(v) FROM {db}.t)"
        ))
        .await
        .expect("check")
        .expect("row");
    assert_eq!((n, sum), (20, 20), "the next clients' writes all committed");
}

/// With a pool of one connection, the client after an abandoned transaction
/// gets the connection at once and is not inside that transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_client_never_runs_inside_an_abandoned_transaction() {
    let s = master_only(1);
    let db = make_db("abandon_pool", 1);
    for round in 0..3 {
        let mut c = raw_client(&s);
        raw_ok(&mut c, "BEGIN");
        raw_ok(&mut c, &format!("INSERT INTO {db}.w (v) VALUES ({round})"));
        drop(c);
        let started = Instant::now();
        let mut b = Conn::from_url(s.app_url(&db)).await.expect("connect");
        let in_tx: Option<u8> = b
            .query_first("SELECT @@in_transaction")
            .await
            .expect("in_transaction");
        assert_eq!(
            in_tx,
            Some(0),
            "round {round}: the next client is not in the abandoned transaction"
        );
        let n: Option<u64> = b.query_first("SELECT COUNT(*) FROM w").await.expect("count");
        assert_eq!(
            n,
            Some(0),
            "round {round}: the abandoned insert is invisible (rolled back)"
        );
        b.query_drop("INSERT INTO t (id, v) VALUES (100 + 0, 0) ON DUPLICATE KEY UPDATE v = v + 1")
            .await
            .expect("write");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "round {round}: the next client waited {:?} for the only connection",
            started.elapsed()
        );
        b.disconnect().await.expect("disconnect");
    }
    let mut d = direct().await;
    let v: Option<i64> = d
        .query_first(format!("SELECT v FROM {db}.t WHERE id = 100"))
        .await
        .expect("read");
    assert_eq!(v, Some(2), "every next client's write committed");
}

/// `SET SESSION wait_timeout = 1`: the session is closed when idle that long,
/// silently, directly and through sluice alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_timeout_closes_an_idle_session_like_the_server() {
    let s = master_only(2);
    let m = &shared_cluster().master;
    for (label, port, user, pw) in [
        ("direct", m.port, SLUICE_USER, SLUICE_PASSWORD),
        ("sluice", s.port, APP_USER, APP_PASSWORD),
    ] {
        let mut c = RawConn::connect(port);
        assert!(c.login(user, pw).is_ok(), "{label}: login");
        raw_ok(&mut c, "SET SESSION wait_timeout = 1");
        assert_eq!(raw_value(&mut c, "SELECT @@session.wait_timeout"), "1", "{label}");
        c.set_timeout(Duration::from_secs(10));
        let started = Instant::now();
        let f = c.read();
        let t = started.elapsed();
        assert_eq!(f, Frame::Closed, "{label}: closed without a packet");
        assert!(
            t >= Duration::from_millis(900) && t < Duration::from_secs(4),
            "{label}: closed after {t:?}, expected about 1 s"
        );
    }
    // DEFAULT goes back to the global value: the session stays open.
    let mut c = raw_client(&s);
    raw_ok(&mut c, "SET SESSION wait_timeout = 1");
    raw_ok(&mut c, "SET SESSION wait_timeout = DEFAULT");
    std::thread::sleep(Duration::from_millis(1800));
    assert_eq!(
        raw_value(&mut c, "SELECT 7"),
        "7",
        "wait_timeout back to its default"
    );
}

/// A client that vanishes while its autocommit statement runs (issue 40): MariaDB
/// completes the statement (go-sql-driver's `TestContextCancel*` check for the row),
/// and so does sluice now; it used to kill it. Directly against MariaDB first (the
/// baseline), then through sluice; each time the row is there afterwards.
#[tokio::test]
async fn an_autocommit_statement_completes_after_its_client_vanished() {
    let s = master_only(4);
    let db = make_db("ab_auto", 1);
    let master_port = shared_cluster().master.port;
    let mut d = direct().await;
    for (v, through_sluice) in [(1, false), (2, true)] {
        let mut c = if through_sluice {
            raw_client(&s)
        } else {
            let mut c = RawConn::connect(master_port);
            let r = c.login(SLUICE_USER, SLUICE_PASSWORD);
            assert!(r.is_ok(), "login: {r:?}");
            c
        };
        raw_send(&mut c, &format!("INSERT INTO {db}.w (v) SELECT {v} + SLEEP(1)"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(c);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let n: Option<u64> = d
                .query_first(format!("SELECT COUNT(*) FROM {db}.w WHERE v = {v}"))
                .await
                .expect("count");
            if n == Some(1) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "through sluice: {through_sluice}: the statement of a vanished client did not complete"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
