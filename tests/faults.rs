//! Faults, with real MariaDB servers and real clients (mysql_async): a replica
//! killed and restarted, a replica paused (SIGSTOP) and resumed, the master
//! killed and restarted, each under load through sluice. Every test checks
//! that no acknowledged write is lost, that every client that fails gets a
//! clear error (a MySQL code and a sentence naming sluice and the backend),
//! and that nothing hangs: every client operation has a timeout.
//!
//! Each test starts its own cluster (names contain `fault`: they run in the
//! limited-concurrency group of .config/nextest.toml). Measured times are
//! printed (`cargo nextest run --test faults --no-capture`).

mod common;

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::metric;
use common::reads::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, OptsBuilder};

/// No client operation may take longer: a hang is a failure.
const OP_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const PROBE_INTERVAL: Duration = Duration::from_millis(50);
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
const RISE: u32 = 2;
const FALL: u32 = 3;

fn config(mode: &str) -> String {
    format!(
        "freshness:\n  mode: {mode}\n  probe_interval: {}ms\n  probe_timeout: {}ms\n  rise: {RISE}\n  fall: {FALL}\n\
         backend:\n  connect_timeout: {}ms\n",
        PROBE_INTERVAL.as_millis(),
        PROBE_TIMEOUT.as_millis(),
        CONNECT_TIMEOUT.as_millis()
    )
}

/// `f`, or a panic naming `what` if it takes longer than [`OP_TIMEOUT`].
async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(OP_TIMEOUT, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {OP_TIMEOUT:?} (a hang)"),
    }
}

/// A client connection that runs no setup query of its own, so the first
/// statement it sends is the test's.
async fn connect(s: &Sluice, db: &str) -> Result<Conn, mysql_async::Error> {
    let opts = mysql_async::Opts::from_url(&s.app_url(db)).expect("url");
    let opts = OptsBuilder::from_opts(opts)
        .max_allowed_packet(Some(64 << 20))
        .wait_timeout(Some(28800));
    bounded("connect through sluice", Conn::new(opts)).await
}

/// A client-visible error: its MySQL code and message.
#[derive(Debug, Clone)]
struct ErrInfo {
    code: u16,
    message: String,
}

impl ErrInfo {
    fn of(e: mysql_async::Error) -> ErrInfo {
        match e {
            mysql_async::Error::Server(s) => ErrInfo {
                code: s.code,
                message: s.message,
            },
            // Not a clear error: the client saw its connection break.
            other => ErrInfo {
                code: 0,
                message: other.to_string(),
            },
        }
    }

    /// A clear error about a backend going away: a real client error code
    /// and a sentence that names sluice and the backend.
    fn assert_clear(&self, backend_addr: &str, context: &str) {
        let known = match self.code {
            1429 => self.message.starts_with("Can't connect to MySQL server on"),
            1158 => self
                .message
                .starts_with("Lost connection to MySQL server during query"),
            _ => false,
        };
        assert!(
            known && self.message.contains("sluice") && self.message.contains(backend_addr),
            "{context}: not a clear error about {backend_addr}: {self:?}"
        );
    }
}

/// Poll `check` until it holds; returns how long that took. Panics with
/// sluice's log after `within`.
async fn until<F, Fut>(s: &Sluice, what: &str, within: Duration, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let t0 = Instant::now();
    loop {
        if check().await {
            return t0.elapsed();
        }
        assert!(
            t0.elapsed() < within,
            "{what}: not within {within:?}; sluice log:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Wait until the metric `family` of replica `i` equals `want`.
async fn until_metric(s: &Sluice, family: &str, i: usize, want: f64, within: Duration) -> Duration {
    let series = format!("{family}{{group=\"main\",replica=\"replica{i}\"}}");
    let what = format!("{series} == {want}");
    until(s, &what, within, || async {
        metric(s.admin_port, &series) == Some(want)
    })
    .await
}

/// Wait until a read on a new connection is answered by the server with id
/// `want`. New connections, because a session keeps its replica while that
/// one stays eligible.
async fn until_read_on(s: &Sluice, db: &str, want: u32, within: Duration) -> Duration {
    let what = format!("a read answered by server {want}");
    until(s, &what, within, || async {
        let mut c = connect(s, db).await.expect("connect");
        bounded("read", who(&mut c, "SELECT @@server_id + 0 * COUNT(*) FROM t")).await == want
    })
    .await
}

// ---------------------------------------------------------------------------
// Mixed load
// ---------------------------------------------------------------------------

/// What the load's clients saw.
#[derive(Debug, Default)]
struct Outcome {
    /// Inserted ids the server acknowledged.
    acked: Vec<i64>,
    /// Inserts that failed: their outcome may be unknown.
    failed_writes: Vec<(i64, ErrInfo)>,
    read_errors: Vec<ErrInfo>,
    /// Reads answered per `@@server_id`.
    reads_by_server: HashMap<u32, u64>,
    /// A writer's read of its own acknowledged row did not find it.
    stale: u64,
}

impl Outcome {
    fn merge(&mut self, o: Outcome) {
        self.acked.extend(o.acked);
        self.failed_writes.extend(o.failed_writes);
        self.read_errors.extend(o.read_errors);
        for (k, v) in o.reads_by_server {
            *self.reads_by_server.entry(k).or_default() += v;
        }
        self.stale += o.stale;
    }
}

/// Writers insert unique ids and read each acknowledged row back at once
/// (read-your-writes: sluice's causal mode must find it, wherever it reads);
/// readers count rows. Every operation is bounded by [`OP_TIMEOUT`].
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Outcome>>,
}

impl Load {
    async fn start(s: &Sluice, db: &str, writers: usize, readers: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let next_id = Arc::new(AtomicI64::new(1_000_000));
        let mut tasks = Vec::new();
        for _ in 0..writers {
            let mut c = connect(s, db).await.expect("writer connects");
            let (stop, next_id) = (stop.clone(), next_id.clone());
            tasks.push(tokio::spawn(async move {
                let mut out = Outcome::default();
                while !stop.load(Ordering::Relaxed) {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let ins = c.exec_drop("INSERT INTO t VALUES (?, ?)", (id, id));
                    match bounded("insert", ins).await {
                        Ok(()) => out.acked.push(id),
                        Err(e) => {
                            out.failed_writes.push((id, ErrInfo::of(e)));
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            continue;
                        }
                    }
                    let read =
                        c.exec_first::<(u32, i64), _, _>("SELECT @@server_id, v FROM t WHERE id = ?", (id,));
                    match bounded("read back", read).await {
                        Ok(Some((sid, _v))) => *out.reads_by_server.entry(sid).or_default() += 1,
                        Ok(None) => out.stale += 1,
                        Err(e) => out.read_errors.push(ErrInfo::of(e)),
                    }
                }
                out
            }));
        }
        for _ in 0..readers {
            let mut c = connect(s, db).await.expect("reader connects");
            let stop = stop.clone();
            tasks.push(tokio::spawn(async move {
                let mut out = Outcome::default();
                while !stop.load(Ordering::Relaxed) {
                    let read = c.query_first::<(u32, i64), _>("SELECT @@server_id, COUNT(*) FROM t");
                    match bounded("read", read).await {
                        Ok(Some((sid, _))) => *out.reads_by_server.entry(sid).or_default() += 1,
                        Ok(None) => out.read_errors.push(ErrInfo {
                            code: 0,
                            message: "COUNT(*) returned no row".into(),
                        }),
                        Err(e) => out.read_errors.push(ErrInfo::of(e)),
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                out
            }));
        }
        Load { stop, tasks }
    }

    /// Stop the load and collect what its clients saw; a client that hung or
    /// failed fails the test, with sluice's log.
    async fn finish(self, s: &Sluice) -> Outcome {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = Outcome::default();
        for t in self.tasks {
            match tokio::time::timeout(OP_TIMEOUT * 2, t).await {
                Ok(Ok(out)) => all.merge(out),
                Ok(Err(e)) => panic!("a load client failed: {e}\nsluice log:\n{}", s.log()),
                Err(_) => panic!("a load client hung\nsluice log:\n{}", s.log()),
            }
        }
        all
    }
}

/// Every id in the table on `server`.
fn ids_on(server: &Server, db: &str) -> BTreeSet<i64> {
    let out = server.sql_in(db, "SELECT id FROM t");
    out.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// No acknowledged write is missing on the master, nor on any replica once
/// they caught up.
fn assert_acked_present(cluster: &Cluster, db: &str, acked: &[i64]) {
    cluster.wait_replicas_caught_up();
    for server in cluster.servers() {
        let present = ids_on(server, db);
        let lost: Vec<_> = acked.iter().filter(|id| !present.contains(id)).collect();
        assert!(
            lost.is_empty(),
            "acknowledged writes missing on 127.0.0.1:{}: {lost:?}",
            server.port
        );
    }
}

// ---------------------------------------------------------------------------
// Replica faults
// ---------------------------------------------------------------------------

/// SIGKILL a replica under mixed load: reads move to the other replica or the
/// master without a single error, writes are unaffected; restarted, the
/// replica comes back into rotation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_replica_killed_and_restarted() {
    let cluster = Cluster::start(2);
    let db = tracked_db(&cluster, "fault_kill").await;
    let s = Sluice::start_for(&cluster, &config("causal"));
    let master_id = server_id(&cluster.master);
    let victim_id = server_id(&cluster.replicas[0]);
    wait_replica_reads(&s, &db, master_id).await;
    until_read_on(&s, &db, victim_id, Duration::from_secs(10)).await;

    let load = Load::start(&s, &db, 3, 3).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    cluster.replicas[0].kill();
    let left = until_metric(&s, "sluice_replica_in_rotation", 0, 0.0, Duration::from_secs(3)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut c = connect(&s, &db).await.expect("connect");
    for _ in 0..20 {
        let sid = bounded("read", who(&mut c, "SELECT @@server_id + 0 * COUNT(*) FROM t")).await;
        assert_ne!(sid, victim_id, "a read reached the killed replica");
    }

    let restarted = Instant::now();
    cluster.replicas[0].restart();
    let restart_took = restarted.elapsed();
    let back = until_metric(&s, "sluice_replica_in_rotation", 0, 1.0, Duration::from_secs(15)).await;
    let reads_back = until_read_on(&s, &db, victim_id, Duration::from_secs(15)).await;
    let out = load.finish(&s).await;

    println!(
        "replica killed: out of rotation after {left:?}; restart took {restart_took:?}, back in rotation \
         {back:?} after it answered (reads reach it after {reads_back:?}); {} writes acked, reads per \
         server {:?}",
        out.acked.len(),
        out.reads_by_server
    );
    assert!(
        left < Duration::from_secs(1),
        "a killed replica must leave rotation at its next probe (took {left:?})"
    );
    assert!(
        out.failed_writes.is_empty(),
        "writes failed: {:?}",
        out.failed_writes
    );
    assert!(out.read_errors.is_empty(), "reads failed: {:?}", out.read_errors);
    assert_eq!(out.stale, 0, "a writer did not read its own acknowledged row");
    assert!(
        out.acked.len() > 50,
        "too little load: {} writes",
        out.acked.len()
    );
    assert_acked_present(&cluster, &db, &out.acked);
}

/// SIGSTOP a replica (it keeps its sockets and answers nothing): it leaves
/// rotation within about a probe timeout; once it is down (`fall` failed
/// probes), reads that were waiting on it are run on the master instead and
/// a result that was streaming from it ends with a clear error; after
/// SIGCONT it returns after `rise` good probes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_replica_paused_and_resumed() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fault_pause").await;
    // Rows for a result that streams slowly (below).
    cluster
        .master
        .sql_in(&db, "INSERT INTO t SELECT seq, seq FROM seq_1_to_60");
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &config("causal"));
    let master_id = server_id(&cluster.master);
    let replica_id = server_id(&cluster.replicas[0]);
    wait_replica_reads(&s, &db, master_id).await;

    // A result streaming from the replica: 20 KB rows, one every 50 ms.
    let mut streaming = connect(&s, &db).await.expect("connect");
    let mut stream = bounded(
        "streaming read",
        streaming.query_iter("SELECT @@server_id, REPEAT('x', 20000), SLEEP(0.05) FROM t"),
    )
    .await
    .expect("streaming read starts");
    let first: mysql_async::Row = bounded("first row", stream.next())
        .await
        .expect("first row")
        .expect("a row");
    let sid: u32 = first.get(0).expect("server id");
    assert_eq!(sid, replica_id, "the streaming read must run on the replica");

    // A prepared read waiting on the replica when it stops, started before
    // the load (whose writes send most reads of t to the master): once the
    // replica is down it is prepared and run again on the master.
    let mut pc = connect(&s, &db).await.expect("connect");
    let sql = "SELECT @@server_id + 0 * COUNT(*) FROM t WHERE ? = 1";
    let sid: Option<u32> = bounded("prepared read", pc.exec_first(sql, (1,)))
        .await
        .expect("read");
    assert_eq!(sid, Some(replica_id), "a prepared read must run on the replica");
    let prepared_in_flight = tokio::spawn(async move {
        let sql = "SELECT @@server_id, SLEEP(2) + COUNT(*) FROM t WHERE ? = 1";
        let r: Result<Option<(u32, i64)>, _> =
            bounded("in-flight prepared read", pc.exec_first(sql, (1,))).await;
        r.map_err(ErrInfo::of)
    });
    let load = Load::start(&s, &db, 2, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Reads that will be waiting on the replica when it stops.
    let mut in_flight = Vec::new();
    for _ in 0..3 {
        let mut c = connect(&s, &db).await.expect("connect");
        in_flight.push(tokio::spawn(async move {
            let t0 = Instant::now();
            let r: Result<Option<(u32, i64)>, _> = bounded(
                "in-flight read",
                c.query_first("SELECT @@server_id, SLEEP(0.6) + COUNT(*) FROM t"),
            )
            .await;
            (r.map_err(ErrInfo::of), t0.elapsed())
        }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let paused = Instant::now();
    cluster.replicas[0].pause();

    let left = until_metric(&s, "sluice_replica_in_rotation", 0, 0.0, Duration::from_secs(3)).await;
    let down = until_metric(&s, "sluice_replica_healthy", 0, 0.0, Duration::from_secs(5)).await;
    for t in in_flight {
        let (r, took) = bounded("in-flight task", t).await.expect("task");
        let (sid, _) = r
            .unwrap_or_else(|e| panic!("a read waiting on the paused replica failed: {e:?}"))
            .expect("row");
        assert_eq!(sid, master_id, "the read must have been run again on the master");
        assert!(
            // Started 150 ms before the pause, abandoned when the replica is
            // down (`fall` probes), then 0.6 s again on the master.
            took < (PROBE_TIMEOUT + PROBE_INTERVAL) * FALL + Duration::from_millis(150 + 600 + 1000),
            "the retried read took {took:?}"
        );
    }
    let (sid, _) = bounded("in-flight prepared task", prepared_in_flight)
        .await
        .expect("task")
        .unwrap_or_else(|e| panic!("a prepared read waiting on the paused replica failed: {e:?}"))
        .expect("row");
    assert_eq!(
        sid, master_id,
        "the prepared read must have been run again on the master"
    );
    // The streaming result: part of it reached the client, so it cannot be
    // run again; it ends with a clear error once the replica is down.
    let mut rows = 1;
    let err = loop {
        match bounded("rest of the streaming result", stream.next()).await {
            Ok(Some(_)) => rows += 1,
            Ok(None) => panic!("the streaming result completed although its replica was paused"),
            Err(e) => break ErrInfo::of(e),
        }
    };
    let cut_after = paused.elapsed();
    assert!(rows < 60, "{rows} rows");
    err.assert_clear(&cluster.replicas[0].addr(), "streaming read on a paused replica");
    assert_eq!(err.code, 1158);
    assert!(err.message.contains("run the statement again"), "{err:?}");
    drop(stream);
    // The session that got the error keeps working.
    assert!(
        bounded(
            "read after the error",
            who(&mut streaming, "SELECT @@server_id + 0 * COUNT(*) FROM t")
        )
        .await
            > 0
    );

    tokio::time::sleep(Duration::from_millis(500)).await;
    let resumed = Instant::now();
    cluster.replicas[0].resume();
    let back = until_metric(&s, "sluice_replica_in_rotation", 0, 1.0, Duration::from_secs(10)).await;
    let healthy = resumed.elapsed();
    let reads_back = until_read_on(&s, &db, replica_id, Duration::from_secs(10)).await;
    let out = load.finish(&s).await;

    println!(
        "replica paused: out of rotation after {left:?}, down (healthy=0) after {down:?}, streaming read \
         cut off after {cut_after:?} ({rows} rows relayed); resumed: back in rotation after {back:?} \
         (healthy after {healthy:?}), reads reach it after {reads_back:?}; {} writes acked, reads per \
         server {:?}",
        out.acked.len(),
        out.reads_by_server
    );
    let one_probe = PROBE_TIMEOUT + PROBE_INTERVAL;
    assert!(
        left < one_probe + Duration::from_millis(500),
        "leaving rotation took {left:?}"
    );
    assert!(
        down >= left && down < one_probe * FALL + Duration::from_millis(1000),
        "marking down took {down:?}"
    );
    assert!(
        out.failed_writes.is_empty(),
        "writes failed: {:?}",
        out.failed_writes
    );
    assert!(out.read_errors.is_empty(), "reads failed: {:?}", out.read_errors);
    assert_eq!(out.stale, 0);
    assert_acked_present(&cluster, &db, &out.acked);
}

// ---------------------------------------------------------------------------
// Master fault
// ---------------------------------------------------------------------------

/// One insert through a new session; the error if it failed, and how long it
/// took. The session logs in without a default database: checking one needs
/// the master.
async fn try_insert(s: &Sluice, db: &str, id: i64) -> (Result<(), ErrInfo>, Duration) {
    let t0 = Instant::now();
    let mut c = connect(s, "")
        .await
        .expect("login without a database needs no backend");
    let sql = format!("INSERT INTO {db}.t VALUES (?, ?)");
    let r = bounded("insert", c.exec_drop(sql, (id, id))).await;
    (r.map_err(ErrInfo::of), t0.elapsed())
}

/// SIGKILL the master: writes fail fast with a clear error; reads continue
/// on the replica in causal and off mode and fail clearly in strict mode;
/// after a restart, writes succeed again through the same sluices and
/// sessions, and every acknowledged write is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_master_killed_and_restarted() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fault_master").await;
    let master_id = server_id(&cluster.master);
    let replica_id = server_id(&cluster.replicas[0]);
    let modes = ["strict", "causal", "off"];
    let sluices: Vec<Sluice> = modes
        .iter()
        .map(|m| Sluice::start_for(&cluster, &config(m)))
        .collect();
    for s in &sluices {
        wait_replica_reads(s, &db, master_id).await;
    }
    let causal = &sluices[1];
    // Load through causal sluice, then quiet: a write acknowledged in the
    // instant the master dies, before sluice could snapshot the counters
    // after it, rightly keeps causal reads off the replica until the master
    // is back (see GroupMonitor::after_write), which would make the reads
    // below fail by design rather than by fault.
    let out = Load::start(causal, &db, 3, 2).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let before = out.finish(causal).await;
    assert!(
        before.failed_writes.is_empty() && before.read_errors.is_empty(),
        "{before:?}"
    );
    let mut acked = before.acked;
    // Sessions that hold a master connection when it dies.
    let mut held = Vec::new();
    for s in &sluices {
        let mut c = connect(s, &db).await.expect("connect");
        bounded(
            "write",
            c.query_drop("INSERT INTO t VALUES (1, 1) ON DUPLICATE KEY UPDATE v = v + 1"),
        )
        .await
        .expect("write before the fault");
        held.push(c);
    }

    // Replication is asynchronous: a write acknowledged just before the crash
    // may never reach the replica, and then causal reads rightly refuse it.
    // Here the replica has everything, so reads must continue.
    cluster.wait_replicas_caught_up();
    cluster.master.kill();
    let master_addr = cluster.master.addr();
    // A causal read compares the newest master snapshot with the replica's
    // counters as last probed: give the probes (every 50 ms) a moment to see
    // the replica's final state, or the read may rightly go to the master.
    tokio::time::sleep(PROBE_INTERVAL * 4).await;
    let mut slowest = Duration::ZERO;
    for (m, s) in modes.iter().zip(&sluices) {
        // Writes on a new session and on a session that held a connection.
        let (r, took) = try_insert(s, &db, 2_000_000).await;
        let e = r.expect_err("a write with the master down must fail");
        e.assert_clear(&master_addr, &format!("{m}: write on a new session"));
        assert_eq!(e.code, 1429, "{m}: {e:?}");
        slowest = slowest.max(took);
        let c = &mut held[modes.iter().position(|x| x == m).expect("mode")];
        let t0 = Instant::now();
        let r = bounded("write", c.query_drop("INSERT INTO t VALUES (2000001, 1)")).await;
        let e = ErrInfo::of(r.expect_err("a write with the master down must fail"));
        e.assert_clear(
            &master_addr,
            &format!("{m}: write on a session that held a master connection"),
        );
        assert_eq!(
            e.code, 1429,
            "{m}: the dead connection is noticed before the write is sent: {e:?}"
        );
        slowest = slowest.max(t0.elapsed());

        // Reads.
        let mut c = connect(s, "").await.expect("connect");
        let sql = format!("SELECT @@server_id, COUNT(*) FROM {db}.t");
        let r: Result<Option<(u32, i64)>, _> = bounded("read", c.query_first(sql)).await;
        match *m {
            "strict" => {
                // Without the master's counters no replica can be proven
                // fresh: the read fails, clearly and fast.
                let e = ErrInfo::of(r.expect_err("strict read without a master"));
                e.assert_clear(&master_addr, "strict read");
            }
            _ => {
                let (sid, n) = r
                    .unwrap_or_else(|e| panic!("{m}: read with the master down: {e:?}"))
                    .expect("row");
                assert_eq!(sid, replica_id, "{m}: the read must be served by the replica");
                let present = n as usize;
                assert!(
                    present > acked.len(),
                    "{m}: the replica lacks acknowledged writes ({present} rows)"
                );
            }
        }
    }
    assert!(
        slowest <= CONNECT_TIMEOUT + Duration::from_millis(500),
        "writes must fail within the connect timeout; slowest took {slowest:?}"
    );
    // The replica itself has every acknowledged write.
    let on_replica = ids_on(&cluster.replicas[0], &db);
    assert!(
        acked.iter().all(|id| on_replica.contains(id)),
        "replica lacks acknowledged writes"
    );

    let restarted = Instant::now();
    cluster.master.restart();
    let restart_took = restarted.elapsed();
    // The same sluices and the same sessions write again.
    let mut recovered = Duration::ZERO;
    for (k, (c, s)) in held.iter_mut().zip(&sluices).enumerate() {
        let id = 3_000_000 + k as i64;
        bounded(
            "write after restart",
            c.exec_drop("INSERT INTO t VALUES (?, ?)", (id, id)),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "write on the same session after the master returned: {e}\n{}",
                s.log()
            )
        });
        acked.push(id);
        let (r, _) = try_insert(s, &db, 4_000_000 + k as i64).await;
        r.unwrap_or_else(|e| panic!("write on a new session after the master returned: {e:?}"));
        acked.push(4_000_000 + k as i64);
        recovered = recovered.max(restarted.elapsed() - restart_took);
    }
    // Causal read-your-writes holds again.
    let mut c = connect(causal, &db).await.expect("connect");
    for k in 0..20 {
        let id = 5_000_000 + k;
        bounded("insert", c.exec_drop("INSERT INTO t VALUES (?, ?)", (id, id)))
            .await
            .expect("insert");
        acked.push(id);
        let row: Option<(u32, i64)> = bounded(
            "read back",
            c.exec_first("SELECT @@server_id, v FROM t WHERE id = ?", (id,)),
        )
        .await
        .expect("read back");
        assert!(row.is_some(), "causal read-your-writes after the master returned");
    }
    println!(
        "master killed: writes failed in at most {slowest:?} (connect_timeout {CONNECT_TIMEOUT:?}); \
         master restart took {restart_took:?}; writes succeeded again {recovered:?} after it answered"
    );
    // Writes that failed with 1429 never reached a server.
    let present = ids_on(&cluster.master, &db);
    assert!(!present.contains(&2_000_000) && !present.contains(&2_000_001));
    assert_acked_present(&cluster, &db, &acked);
}
