//! Read/write splitting with freshness, against a real master and replicas.
//! Every test asserts where reads went (by `@@server_id`, which differs per
//! server), not only what they returned.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::reads::*;
use mysql_async::prelude::*;

#[tokio::test]
async fn idle_caught_up_replica_takes_nearly_all_reads() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "split_idle").await;
    cluster.master.sql(&format!("INSERT INTO {db}.t VALUES (1, 10)"));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let mut conn = sluice_conn(&s, &db).await;
    // Other tests' DDL on the shared cluster moves the global counter, and
    // the reads right after each such statement rightly go to the master
    // until the replicas have it: so up to five windows of 200 reads, one
    // of which must have nearly all on a replica. (Reads that never or only
    // sometimes reach an idle replica fail all five.)
    let mut windows = Vec::new();
    for _ in 0..5 {
        let mut on_replica = 0;
        for _ in 0..200 {
            if who(&mut conn, "SELECT @@server_id + 0 * COUNT(*) FROM t").await != master_id {
                on_replica += 1;
            }
        }
        if on_replica >= 190 {
            return;
        }
        windows.push(on_replica);
    }
    panic!("no window of 200 reads had 190 on a replica: {windows:?}");
}

/// `read` on `c` reaches a replica within 5 s, nothing else sent in between
/// (the shared cluster's DDL from other tests moves the global counter, and a
/// read right after it rightly goes to the master).
async fn replica_read_within(c: &mut mysql_async::Conn, read: &str, master_id: u32, when: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while who(c, read).await == master_id {
        assert!(Instant::now() < deadline, "no read reached a replica {when}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn pinned_statements_go_to_the_master() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "split_pin").await;
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let read = "SELECT @@server_id + 0 * COUNT(*) FROM t";

    let mut c = sluice_conn(&s, &db).await;
    // Transactions.
    c.query_drop("BEGIN").await.expect("begin");
    assert_eq!(who(&mut c, read).await, master_id, "read inside BEGIN");
    c.query_drop("COMMIT").await.expect("commit");
    c.query_drop("SET autocommit=0").await.expect("autocommit off");
    assert_eq!(who(&mut c, read).await, master_id, "read with autocommit=0");
    c.query_drop("SET autocommit=1").await.expect("autocommit on");
    // The session is no longer held to the master.
    replica_read_within(&mut c, read, master_id, "after autocommit=1").await;
    // Locking reads and hints.
    assert_eq!(who(&mut c, &format!("{read} FOR UPDATE")).await, master_id);
    assert_eq!(
        who(&mut c, &format!("{read} LOCK IN SHARE MODE")).await,
        master_id
    );
    assert_eq!(who(&mut c, &format!("/*master*/ {read}")).await, master_id);
    assert_eq!(
        who(&mut c, &format!("/* sluice:master */ {read}")).await,
        master_id
    );
    assert_eq!(
        who(&mut c, "SELECT @@server_id + 0 * LAST_INSERT_ID()").await,
        master_id
    );
    assert_eq!(
        who(&mut c, "SELECT @@server_id + 0 * FOUND_ROWS()").await,
        master_id
    );
    assert_eq!(
        who(&mut c, "SELECT @@server_id + 0 * GET_LOCK('x', 0)").await,
        master_id
    );
    drop(c);

    // Temporary tables pin the session.
    let mut c = sluice_conn(&s, &db).await;
    replica_read_within(&mut c, read, master_id, "before the temporary table").await;
    c.query_drop("CREATE TEMPORARY TABLE tmp (x INT)")
        .await
        .expect("temp table");
    assert_eq!(who(&mut c, read).await, master_id, "read after temp table");
    assert_eq!(
        who(&mut c, "SELECT @@server_id + 0 * COUNT(*) FROM tmp").await,
        master_id
    );
    drop(c);

    // User variables pin the session.
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("SET @a = 5").await.expect("set user var");
    let row: Option<(u32, i64)> = c.query_first("SELECT @@server_id, @a").await.expect("q");
    assert_eq!(row, Some((master_id, 5)));
    drop(c);

    // A read-only transaction runs on one replica. It may read any table, so
    // the replica must have caught up on every counter row; other tests write
    // to the shared cluster meanwhile, hence a few attempts.
    let mut c = sluice_conn(&s, &db).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        c.query_drop("START TRANSACTION READ ONLY").await.expect("ro tx");
        let a = who(&mut c, read).await;
        let b = who(&mut c, read).await;
        c.query_drop("COMMIT").await.expect("commit");
        assert_eq!(a, b, "the whole read-only transaction on one server");
        if a != master_id {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no read-only transaction reached a replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn session_state_follows_reads_to_the_replica() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "split_state").await;
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let mut c = sluice_conn(&s, "").await;
    c.query_drop(format!("USE {db}")).await.expect("use");
    c.query_drop("SET time_zone = '+05:00'").await.expect("tz");
    c.query_drop("SET NAMES latin1").await.expect("names");
    c.query_drop("SET SESSION sql_mode = 'ANSI_QUOTES'")
        .await
        .expect("sql_mode");
    let row: Option<(u32, String, String, String, String)> = c
        .query_first(
            "SELECT @@server_id + 0 * COUNT(*), @@session.time_zone, @@character_set_client, \
             @@session.sql_mode, DATABASE() FROM t",
        )
        .await
        .expect("query");
    let (sid, tz, cs, mode, dbname) = row.expect("row");
    assert_ne!(sid, master_id, "the read went to a replica");
    assert_eq!(
        (tz.as_str(), cs.as_str(), mode.as_str(), dbname.as_str()),
        ("+05:00", "latin1", "ANSI_QUOTES", db.as_str())
    );
}

#[tokio::test]
async fn prepared_statements_route_by_kind() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "split_ps").await;
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let mut c = sluice_conn(&s, &db).await;
    let ins = c.prep("INSERT INTO t VALUES (?, ?)").await.expect("prep insert");
    let sel = c
        .prep("SELECT @@server_id, v FROM t WHERE id = ?")
        .await
        .expect("prep select");
    for i in 0..50 {
        c.exec_drop(&ins, (i, i * 2)).await.expect("insert");
        // Read-your-writes: the row is there whichever server answers.
        let row: Option<(u32, i32)> = c.exec_first(&sel, (i,)).await.expect("select");
        let (_, v) = row.unwrap_or_else(|| panic!("row {i} not visible right after its insert"));
        assert_eq!(v, i * 2);
    }
    cluster.wait_replicas_caught_up();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Other tests' DDL on the shared cluster moves the global counter, and a
    // read then rightly goes to the master until the replica has applied it;
    // another test may hold the replica's SQL thread for seconds (a lock on
    // the replica): the best round within 20 s counts.
    let mut best = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let mut replica_reads = 0;
        for i in 0..50 {
            let row: Option<(u32, i32)> = c.exec_first(&sel, (i,)).await.expect("select");
            let (sid, v) = row.expect("row");
            assert_eq!(v, i * 2);
            if sid != master_id {
                replica_reads += 1;
            }
        }
        best = best.max(replica_reads);
        if best >= 45 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        best >= 45,
        "prepared reads on replicas: {best}/50 in the best round"
    );
    c.close(sel).await.expect("close");
}

/// The hammer: writers read back their own rows immediately while a
/// replica's SQL thread is stopped and started every ~0.5 s. No stale read
/// in strict or causal mode (`off` runs alongside, for comparison).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn own_cluster_hammer_no_stale_reads() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "hammer").await;
    let master_id = server_id(&cluster.master);
    let secs: u64 = std::env::var("SLUICE_HAMMER_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    // `off` is measured for comparison only: it may serve stale reads.
    let modes = ["strict", "causal", "off"];
    const WORKERS: usize = 3;
    // A stored function reading t, and one table per worker that dynamic
    // DDL truncates; all tracked.
    let mut setup = format!(
        "CREATE FUNCTION {db}.fv(k BIGINT) RETURNS BIGINT READS SQL DATA \
         RETURN (SELECT v FROM {db}.t WHERE id = k);"
    );
    for m in 0..modes.len() {
        for w in 0..WORKERS {
            setup.push_str(&format!("CREATE TABLE {db}.d{m}{w} (id BIGINT PRIMARY KEY);"));
        }
    }
    cluster.master.sql(&setup);
    install_triggers(&cluster, &db).await;
    cluster.wait_replicas_caught_up();
    let sluices: Vec<Sluice> = modes
        .iter()
        .map(|m| Sluice::start_for(&cluster, &freshness_yaml(m)))
        .collect();
    for s in &sluices {
        wait_replica_reads(s, &db, master_id).await;
    }
    let stop_at = Instant::now() + Duration::from_secs(secs);
    let toggler = toggle_sql_thread(&cluster.replicas[0], stop_at, Duration::from_millis(500));
    let mut tasks = Vec::new();
    for (m, s) in sluices.iter().enumerate() {
        for w in 0..WORKERS {
            let url = s.app_url(&db);
            let s_url = url.clone();
            tasks.push(tokio::spawn(async move {
                let mut c = mysql_async::Conn::from_url(url.clone()).await.expect("connect");
                // Another client of the same sluice, committing with
                // autocommit=0 (PyMySQL's, JDBC's default).
                let mut ac = mysql_async::Conn::from_url(url).await.expect("connect");
                ac.query_drop("SET autocommit = 0").await.expect("autocommit=0");
                // A third client runs the dynamic DDL (PREPARE and EXECUTE
                // IMMEDIATE pin their session to the master).
                let mut ddl = mysql_async::Conn::from_url(s_url).await.expect("connect");
                let mut counts = [Count::default(); SHAPES.len()];
                let d = format!("d{m}{w}");
                let mut k: i64 = 0;
                while Instant::now() < stop_at {
                    let id = (m as i64 * 10 + w as i64) * 1_000_000 + k;
                    c.exec_drop("INSERT INTO t VALUES (?, ?)", (id, k))
                        .await
                        .expect("insert");
                    let row: Option<(u32, i64)> = c
                        .exec_first("SELECT @@server_id, v FROM t WHERE id = ?", (id,))
                        .await
                        .expect("read");
                    counts[PLAIN].note(row, k, master_id);
                    // An update, then read it back under ANSI_QUOTES ("t"
                    // is a table name there), the session's sql_mode
                    // changing back and forth.
                    c.exec_drop("UPDATE t SET v = v + 1 WHERE id = ?", (id,))
                        .await
                        .expect("update");
                    c.query_drop("SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")
                        .await
                        .expect("sql_mode");
                    let row: Option<(u32, i64)> = c
                        .query_first(format!("SELECT @@server_id, v FROM \"t\" WHERE id = {id}"))
                        .await
                        .expect("read");
                    counts[SQL_MODE].note(row, k + 1, master_id);
                    c.query_drop("SET SESSION sql_mode = DEFAULT")
                        .await
                        .expect("sql_mode");
                    // A stored function reading t.
                    let row: Option<(u32, i64)> = c
                        .query_first(format!("SELECT @@server_id, fv({id})"))
                        .await
                        .expect("function read");
                    counts[FUNCTION].note(row, k + 1, master_id);
                    // autocommit=0: UPDATE, COMMIT on `ac`, read on `c`.
                    ac.query_drop(format!("UPDATE t SET v = v + 1 WHERE id = {id}"))
                        .await
                        .expect("update");
                    ac.query_drop("COMMIT").await.expect("commit");
                    let row: Option<(u32, i64)> = c
                        .query_first(format!("SELECT @@server_id, v FROM t WHERE id = {id}"))
                        .await
                        .expect("read");
                    counts[AUTOCOMMIT0].note(row, k + 2, master_id);
                    // Now and then: a row in d, then TRUNCATE through
                    // EXECUTE IMMEDIATE, SQL PREPARE/EXECUTE or
                    // COM_STMT_PREPARE/EXECUTE on `ddl` (no trigger fires;
                    // each starts a new counter generation), read on `c`.
                    if k % 8 == 0 {
                        c.query_drop(format!("INSERT INTO {d} VALUES ({id})"))
                            .await
                            .expect("insert d");
                        let row: Option<(u32, i64)> = c
                            .query_first(format!("SELECT @@server_id, COUNT(*) FROM {d}"))
                            .await
                            .expect("count d");
                        counts[PLAIN].note(row, 1, master_id);
                        let truncate = format!("TRUNCATE TABLE {d}");
                        match (k / 8) % 3 {
                            0 => ddl.query_drop(format!("EXECUTE IMMEDIATE '{truncate}'")).await,
                            1 => {
                                ddl.query_drop(format!("PREPARE s FROM '{truncate}'"))
                                    .await
                                    .expect("prepare");
                                let r = ddl.query_drop("EXECUTE s").await;
                                ddl.query_drop("DEALLOCATE PREPARE s").await.expect("deallocate");
                                r
                            }
                            _ => ddl.exec_drop(truncate.as_str(), ()).await,
                        }
                        .expect("truncate");
                        let row: Option<(u32, i64)> = c
                            .query_first(format!("SELECT @@server_id, COUNT(*) FROM {d}"))
                            .await
                            .expect("count d");
                        counts[DDL].note(row, 0, master_id);
                    }
                    k += 1;
                }
                (m, counts)
            }));
        }
    }
    let mut totals = vec![[Count::default(); SHAPES.len()]; modes.len()];
    for t in tasks {
        let (m, counts) = match t.await {
            Ok(r) => r,
            Err(e) => panic!(
                "writer failed: {e}\nmaster error log:\n{}\nsluice logs:\n{}",
                cluster.master.error_log_tail(40),
                sluices
                    .iter()
                    .map(|s| s.log())
                    .collect::<Vec<_>>()
                    .join("\n---\n")
            ),
        };
        for (total, c) in totals[m].iter_mut().zip(counts) {
            total.add(c);
        }
    }
    toggler.await.expect("toggler");
    for (m, counts) in modes.iter().zip(&totals) {
        let mut all = Count::default();
        for (shape, c) in SHAPES.iter().zip(counts) {
            println!("hammer mode={m} {shape}: {}", c.line());
            all.add(*c);
        }
        println!("hammer mode={m} all: {}", all.line());
    }
    for (m, counts) in modes.iter().zip(&totals) {
        for (shape, c) in SHAPES.iter().zip(counts) {
            // (Dynamic DDL runs every 8th round: a few per worker.)
            let least = if *shape == "dynamic_ddl" { 3 } else { 20 };
            assert!(c.reads >= least, "mode {m}, {shape}: too few reads ({})", c.reads);
            if *m != "off" {
                assert_eq!(c.stale, 0, "mode {m}, {shape}: stale reads");
            }
        }
    }
}

/// Statement shapes of the hammer.
const SHAPES: [&str; 5] = ["plain", "sql_mode", "function", "autocommit0", "dynamic_ddl"];
const PLAIN: usize = 0;
const SQL_MODE: usize = 1;
const FUNCTION: usize = 2;
const AUTOCOMMIT0: usize = 3;
const DDL: usize = 4;

/// Reads of one shape: how many, how many stale, how many on a replica.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    reads: u64,
    stale: u64,
    on_replica: u64,
}

impl Count {
    fn note(&mut self, row: Option<(u32, i64)>, want: i64, master_id: u32) {
        self.reads += 1;
        match row {
            Some((sid, v)) if v == want => {
                if sid != master_id {
                    self.on_replica += 1;
                }
            }
            _ => self.stale += 1,
        }
    }

    fn add(&mut self, other: Count) {
        self.reads += other.reads;
        self.stale += other.stale;
        self.on_replica += other.on_replica;
    }

    fn line(&self) -> String {
        format!(
            "{} reads, {} stale, {} on the replica ({:.1}%)",
            self.reads,
            self.stale,
            self.on_replica,
            100.0 * self.on_replica as f64 / self.reads.max(1) as f64
        )
    }
}

/// A paused replica (SIGSTOP) and a killed one: reads still succeed.
#[tokio::test]
async fn own_cluster_replica_down_or_paused_reads_still_succeed() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "down").await;
    cluster.master.sql(&format!("INSERT INTO {db}.t VALUES (1, 1)"));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let mut c = sluice_conn(&s, &db).await;
    cluster.replicas[0].pause();
    // Wait for the probe to notice (probe_timeout 500ms); reads meanwhile
    // must not hang forever either: give each a generous bound.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut c2 = sluice_conn(&s, &db).await;
    for _ in 0..20 {
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            who(&mut c2, "SELECT @@server_id + 0 * COUNT(*) FROM t"),
        )
        .await;
        assert_eq!(r.expect("read did not hang"), master_id);
    }
    cluster.replicas[0].resume();
    drop(c);
    cluster.replicas[0].kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    c = sluice_conn(&s, &db).await;
    for _ in 0..20 {
        assert_eq!(
            who(&mut c, "SELECT @@server_id + 0 * COUNT(*) FROM t").await,
            master_id
        );
    }
}

/// sluice over the master and its first replica, causal freshness, and one
/// backend connection per server: every later statement borrows the
/// connection an earlier one used.
fn one_replica_pool_of_one(cluster: &Cluster) -> String {
    format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    \
         replicas:\n      - {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n\
         backend:\n  pool_max: 1\n{}",
        Sluice::users_yaml(),
        cluster.master.addr(),
        cluster.replicas[0].addr(),
        freshness_yaml("causal")
    )
}

/// START TRANSACTION READ ONLY on `a` until the transaction's first read runs
/// on a replica (not on the server `master_id`).
async fn begin_read_only_on_replica(a: &mut mysql_async::Conn, master_id: u32) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        a.query_drop("START TRANSACTION READ ONLY").await.expect("begin");
        let sid: Option<u32> = a
            .query_first("SELECT @@server_id + 0 * COUNT(*) FROM t")
            .await
            .expect("read in the transaction");
        if sid != Some(master_id) {
            return;
        }
        a.query_drop("COMMIT").await.expect("commit");
        assert!(
            Instant::now() < deadline,
            "the read-only transaction never ran on the replica"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A named statement (SQL PREPARE) and a HANDLER made inside a read-only
/// transaction that runs on a replica are the session's after it ends too,
/// as on one server; DEALLOCATE / DROP PREPARE there remove them; no other
/// client ever sees them.
#[tokio::test]
async fn server_side_objects_made_in_a_replica_transaction_outlive_it() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "split_ro_objects").await;
    cluster
        .master
        .sql(&format!("INSERT INTO {db}.t VALUES (1, 1), (2, 2)"));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start(&one_replica_pool_of_one(cluster));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let unknown = |r: Result<Vec<mysql_async::Row>, mysql_async::Error>, what: &str| match r {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1243, "{what}: {e:?}"),
        other => panic!("{what}: expected 1243, got {other:?}"),
    };

    let mut a = sluice_conn(&s, &db).await;
    begin_read_only_on_replica(&mut a, master_id).await;
    a.query_drop("PREPARE ro_s FROM 'SELECT COUNT(*) FROM t'")
        .await
        .expect("prepare");
    let n: Option<u64> = a
        .query_first("EXECUTE ro_s")
        .await
        .expect("execute in the transaction");
    assert_eq!(n, Some(2));
    a.query_drop("PREPARE ro_kept FROM 'SELECT 1'")
        .await
        .expect("prepare");
    a.query_drop("PREPARE ro_gone FROM 'SELECT 1'")
        .await
        .expect("prepare");
    a.query_drop("DROP PREPARE ro_gone").await.expect("drop prepare");
    a.query_drop("HANDLER t OPEN").await.expect("handler open");
    let first: Option<(u32, u32)> = a
        .query_first("HANDLER t READ `PRIMARY` FIRST")
        .await
        .expect("handler read first");
    assert_eq!(first, Some((1, 1)));
    a.query_drop("COMMIT").await.expect("commit");
    let n: Option<u64> = a
        .query_first("EXECUTE ro_s")
        .await
        .expect("execute after the transaction");
    assert_eq!(n, Some(2), "the statement prepared in the transaction");
    let next: Option<(u32, u32)> = a
        .query_first("HANDLER t READ `PRIMARY` NEXT")
        .await
        .expect("handler read next after the transaction");
    assert_eq!(next, Some((2, 2)), "the handler's cursor continues");
    unknown(
        a.query("EXECUTE ro_gone").await,
        "a statement dropped in the transaction",
    );
    let one: Option<u8> = a.query_first("EXECUTE ro_kept").await.expect("execute ro_kept");
    assert_eq!(one, Some(1));

    a.query_drop("HANDLER t CLOSE").await.expect("handler close");
    a.query_drop("DEALLOCATE PREPARE ro_s").await.expect("deallocate");
    unknown(a.query("EXECUTE ro_s").await, "after DEALLOCATE");
    let _ = a.disconnect().await;

    // The one master connection the session kept is the next client's now.
    let mut b = sluice_conn(&s, &db).await;
    unknown(b.query("EXECUTE ro_kept").await, "another client's EXECUTE");
    let _ = b.disconnect().await;
}

/// User variables a statement sets on a replica connection (`GET DIAGNOSTICS @n`
/// about a replica read, `SET @x` and `SELECT ... INTO @y` inside a read-only
/// transaction there) belong to the session: it reads them afterwards, and no
/// other client ever does. Before, the replica connection went back to the pool
/// with them (the next borrower read `@n`) and the session lost them once it moved
/// to the master. One replica connection, so that every later read borrows it.
#[tokio::test]
async fn user_variables_set_on_a_replica_stay_with_their_session() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "split_uvar").await;
    cluster
        .master
        .sql(&format!("INSERT INTO {db}.t VALUES (1, 1), (2, 2)"));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start(&one_replica_pool_of_one(cluster));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    // Nobody else sees them, whichever server answers.
    let others_see = |vars: &'static str| {
        let s = &s;
        let db = &db;
        async move {
            let mut b = sluice_conn(s, db).await;
            let row: Option<(Option<String>, u32)> = b
                .query_first(format!(
                    "SELECT CONCAT_WS(',', {vars}), @@server_id + 0 * COUNT(*) FROM t"
                ))
                .await
                .expect("read of another client");
            let _ = b.disconnect().await;
            row.expect("a row")
        }
    };

    let mut a = sluice_conn(&s, &db).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (sid, _): (u32, Option<u8>) = a
            .query_first("SELECT @@server_id + 0 * COUNT(*), 1/0 FROM t GROUP BY id ORDER BY id LIMIT 1")
            .await
            .expect("read with a warning")
            .expect("a row");
        if sid != master_id {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the read with a warning never went to the replica"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.query_drop("GET DIAGNOSTICS @n = NUMBER")
        .await
        .expect("get diagnostics");
    // GET DIAGNOSTICS leaves the diagnostics area as it was, as on the server.
    let warnings: Vec<(String, u32, String)> = a.query("SHOW WARNINGS").await.expect("show warnings");
    assert_eq!(
        warnings,
        [("Warning".to_owned(), 1365, "Division by 0".to_owned())],
        "SHOW WARNINGS after GET DIAGNOSTICS"
    );
    let n: Option<u64> = a.query_first("SELECT @n").await.expect("select @n").flatten();
    assert_eq!(n, Some(1), "the session's own @n");
    drop(a);
    let (seen, sid) = others_see("@n").await;
    assert_eq!(
        seen.as_deref(),
        Some(""),
        "another client read @n from server {sid}"
    );

    let mut a = sluice_conn(&s, &db).await;
    begin_read_only_on_replica(&mut a, master_id).await;
    a.query_drop("SET @x = 'ß'").await.expect("set @x");
    a.query_drop("SELECT COUNT(*) INTO @y FROM t")
        .await
        .expect("select into");
    a.query_drop("COMMIT").await.expect("commit");
    let row: Option<(String, i64, String, u32)> = a
        .query_first("SELECT @x, @y, COLLATION(@x), @@server_id")
        .await
        .expect("the session's variables");
    let (x, y, collation, _) = row.expect("a row");
    assert_eq!((x.as_str(), y), ("ß", 2));
    let direct = cluster
        .master
        .sql("SET NAMES utf8mb4; SET @x = 'ß'; SELECT COLLATION(@x)");
    assert_eq!(collation, direct.trim(), "the value keeps its collation");
    drop(a);
    let (seen, sid) = others_see("@x, @y").await;
    assert_eq!(
        seen.as_deref(),
        Some(""),
        "another client read @x/@y from server {sid}"
    );
}
