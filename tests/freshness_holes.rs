//! The freshness holes of issue 11, each against its own master + replica
//! with the replica's SQL thread stopped (`STOP SLAVE SQL_THREAD`): every
//! test asserts where the read went (`@@server_id`) and that it returned
//! what the master returns.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::metric;
use common::reads::*;
use mysql_async::prelude::*;

/// A database with `tables` (SQL bodies of CREATE TABLE, by name), sluice's
/// triggers installed, replicas caught up.
async fn setup(cluster: &Cluster, prefix: &str, tables: &[(&str, &str)]) -> String {
    let db = unique_name(prefix);
    let mut sql = format!("CREATE DATABASE {db};");
    for (name, body) in tables {
        sql.push_str(&format!("CREATE TABLE {db}.{name} {body};"));
    }
    cluster.master.sql(&sql);
    install(cluster, &db).await;
    cluster.wait_replicas_caught_up();
    db
}

async fn install(cluster: &Cluster, db: &str) -> sluice::freshness::triggers::Report {
    let pool = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db).as_str());
    let mut conn = pool.get_conn().await.expect("connect to master");
    let r = sluice::freshness::triggers::install(&mut conn, "sluice", db, 16)
        .await
        .expect("install triggers");
    drop(conn);
    pool.disconnect().await.expect("disconnect");
    r
}

/// `(server_id, value)` of a read through sluice.
async fn read2(conn: &mut mysql_async::Conn, sql: &str) -> (u32, i64) {
    let row: Option<(u32, i64)> = conn.query_first(sql).await.expect(sql);
    row.expect("a row")
}

/// The same read's value straight from the master.
fn on_master(cluster: &Cluster, db: &str, sql: &str) -> i64 {
    let out = cluster.master.sql_in(db, sql);
    let v = out.split('\t').nth(1).expect("two columns");
    v.parse().expect("a number")
}

/// Reads of `db.t` reach a replica.
async fn warm(s: &Sluice, db: &str, cluster: &Cluster) -> u32 {
    let master_id = server_id(&cluster.master);
    wait_replica_reads(s, db, master_id).await;
    master_id
}

const T: &str = "(id INT PRIMARY KEY, v INT NOT NULL)";

#[tokio::test]
async fn versioned_comment_hides_no_table() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_vc", &[("t", T), ("a", T), ("b", T)]).await;
    cluster.master.sql(&format!(
        "INSERT INTO {db}.a VALUES (1, 1); INSERT INTO {db}.b VALUES (1, 1)"
    ));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("INSERT INTO b VALUES (2, 2)").await.expect("insert");
    // MariaDB skips the comment (999999 is above its version): FROM a, b.
    let q = "SELECT @@server_id, COUNT(*) FROM a /*!999999 WHERE */ , b";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!(n, on_master(&cluster, &db, q), "stale answer from {id}");
    assert_eq!(n, 2);
    assert_eq!(id, master_id, "b is stale on the replica");
    // A versioned comment MariaDB runs is code as well.
    let q = "SELECT @@server_id, COUNT(*) FROM a /*!100100 , b */";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!((id, n), (master_id, 2));
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn sql_mode_quoting_hides_no_table() {
    let cluster = Cluster::start(1);
    let db = setup(
        &cluster,
        "fh_mode",
        &[
            ("t", T),
            ("a", "(id INT PRIMARY KEY, v INT NOT NULL, `c\\` INT)"),
            ("b", T),
        ],
    )
    .await;
    // a.v = 2: counted when b has 2 rows.
    cluster.master.sql(&format!(
        "INSERT INTO {db}.a VALUES (1, 2, 1); INSERT INTO {db}.b VALUES (1, 1)"
    ));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    let mut w = sluice_conn(&s, &db).await;
    w.query_drop("INSERT INTO b VALUES (2, 2)").await.expect("insert");

    // NO_BACKSLASH_ESCAPES: 'C:\' ends at its second quote, the subquery on b is code.
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("SET sql_mode = 'NO_BACKSLASH_ESCAPES'")
        .await
        .expect("mode");
    let q = "SELECT @@server_id, COUNT(*) FROM a WHERE v = 'C:\\' OR v IN (SELECT COUNT(*) FROM b) -- '";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!(n, 1, "stale answer from server {id}");
    assert_eq!(id, master_id);

    // ANSI_QUOTES: "c\" is an identifier (no escapes), the subquery on b is code.
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("SET sql_mode = 'ANSI_QUOTES'").await.expect("mode");
    let q = "SELECT @@server_id, COUNT(*) FROM a WHERE \"c\\\" = 0 OR v IN (SELECT COUNT(*) FROM b) -- \"";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!(n, 1, "stale answer from server {id}");
    assert_eq!(id, master_id);
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn stored_function_reads_go_to_the_master() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_sf", &[("t", T), ("b", T), ("w", T)]).await;
    {
        // One statement per query: the bodies hold `;`.
        let pool = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db).as_str());
        let mut m = pool.get_conn().await.expect("connect");
        for q in [
            "CREATE FUNCTION cnt_b() RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM b)",
            "CREATE FUNCTION put_w(x INT) RETURNS INT DETERMINISTIC MODIFIES SQL DATA \
             BEGIN INSERT INTO w VALUES (x, x); RETURN x; END",
            "INSERT INTO t VALUES (1, 1)",
            "INSERT INTO b VALUES (1, 1)",
        ] {
            m.query_drop(q).await.expect(q);
        }
        drop(m);
        pool.disconnect().await.expect("disconnect");
    }
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("INSERT INTO b VALUES (2, 2)").await.expect("insert");
    for q in [
        format!("SELECT @@server_id, {db}.cnt_b()"),
        "SELECT @@server_id, cnt_b() FROM t".to_string(),
        "SELECT @@server_id, v FROM t WHERE v < cnt_b()".to_string(),
    ] {
        let (id, n) = read2(&mut c, &q).await;
        assert_eq!(
            id, master_id,
            "{q}: read tables it does not name on a stale replica"
        );
        assert_eq!(n, on_master(&cluster, &db, &q), "{q}");
    }
    // A writing function never runs on a replica (where sluice's account
    // could write despite read_only).
    let (id, x) = read2(&mut c, "SELECT @@server_id, put_w(7)").await;
    assert_eq!((id, x), (master_id, 7));
    assert_eq!(cluster.master.sql(&format!("SELECT COUNT(*) FROM {db}.w")), "1");
    cluster.replicas[0].start_sql_thread();
    cluster.wait_replicas_caught_up();
    assert_eq!(
        cluster.replicas[0].sql(&format!("SELECT COUNT(*) FROM {db}.w")),
        "1",
        "the function wrote on the replica too"
    );
}

#[tokio::test]
async fn set_statement_for_a_write_marks_it() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_ss", &[("t", T)]).await;
    cluster
        .master
        .sql(&format!("INSERT INTO {db}.t VALUES (1, 1), (2, 2)"));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("strict"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("SET STATEMENT max_statement_time = 60 FOR TRUNCATE t")
        .await
        .expect("truncate");
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!(n, 0, "stale rows from server {id}");
    assert_eq!(id, master_id);
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn trigger_dropped_outside_sluice_is_noticed() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_drop", &[("t", T)]).await;
    let s = Sluice::start_for(&cluster, &freshness_yaml("strict"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    // A DBA drops the trigger, then a write nothing counts.
    cluster.master.sql(&format!(
        "DROP TRIGGER {db}.sluice_ai_t; INSERT INTO {db}.t VALUES (5, 5)"
    ));
    let mut c = sluice_conn(&s, &db).await;
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    for _ in 0..20 {
        let (id, n) = read2(&mut c, q).await;
        assert_eq!(n, 1, "stale answer from server {id}");
        assert_eq!(id, master_id);
    }
    cluster.replicas[0].start_sql_thread();
}

/// Causal mode: a DBA drops the trigger, then this client writes through
/// sluice (nothing counts it) and reads: the snapshot taken after the write
/// (before its OK) must notice the DDL, whatever the next periodic probe
/// would see. A probe interval far longer than the test's statements, so
/// that only the after-write snapshot can notice it in time.
#[tokio::test]
async fn causal_write_after_trigger_dropped_outside_sluice_is_seen() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_cdrop", &[("t", T)]).await;
    let yaml = "freshness:\n  mode: causal\n  probe_interval: 2s\n  probe_timeout: 500ms\n";
    let s = Sluice::start_for(&cluster, yaml);
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    cluster.master.sql(&format!("DROP TRIGGER {db}.sluice_ai_t"));
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("INSERT INTO t VALUES (5, 5)").await.expect("insert");
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!(n, 1, "own write missing: stale answer from server {id}");
    assert_eq!(id, master_id);
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn install_is_noticed_within_one_probe() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_inst", &[("t", T)]).await;
    // The manual step (auto_install would install u by itself).
    let yaml = format!("{}  auto_install: false\n", freshness_yaml("causal"));
    let s = Sluice::start_for(&cluster, &yaml);
    let master_id = warm(&s, &db, &cluster).await;
    cluster.master.sql(&format!("CREATE TABLE {db}.u {T}"));
    cluster.wait_replicas_caught_up();
    let mut c = sluice_conn(&s, &db).await;
    let q = "SELECT @@server_id + 0 * COUNT(*) FROM u";
    assert_eq!(who(&mut c, q).await, master_id, "u has no triggers yet");
    install(&cluster, &db).await;
    cluster.wait_replicas_caught_up();
    let started = Instant::now();
    // The tracked set used to be re-read every 30 s.
    while who(&mut c, q).await == master_id {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "reads of the newly tracked table never reached the replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn counter_reset_is_neither_stale_nor_master_forever() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_reset", &[("t", T)]).await;
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = warm(&s, &db, &cluster).await;
    let mut c = sluice_conn(&s, &db).await;
    for i in 0..50 {
        c.query_drop(format!("INSERT INTO t VALUES ({i}, {i})"))
            .await
            .expect("insert");
    }
    // Reset: the counters start again from 0.
    cluster.master.sql("TRUNCATE sluice.counters");
    install(&cluster, &db).await;
    cluster.wait_replicas_caught_up();
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    let started = Instant::now();
    loop {
        let (id, n) = read2(&mut c, q).await;
        assert_eq!(n, 50);
        if id != master_id {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "after a counter reset reads never reached the replica again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And the new generation is compared for real.
    cluster.replicas[0].stop_sql_thread();
    c.query_drop("INSERT INTO t VALUES (100, 100)")
        .await
        .expect("insert");
    let (id, n) = read2(&mut c, q).await;
    assert_eq!((id, n), (master_id, 51));
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn failed_global_bump_keeps_reads_on_the_master() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_bump", &[("t", T)]).await;
    cluster
        .master
        .sql(&format!("INSERT INTO {db}.t VALUES (1, 1), (2, 2)"));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    // Someone holds the `*` row: sluice's bump times out.
    let locker = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db).as_str());
    let mut lock = locker.get_conn().await.expect("connect");
    lock.query_drop("BEGIN").await.expect("begin");
    lock.query_drop("SELECT * FROM sluice.counters WHERE tbl = '*' AND slot = 0 FOR UPDATE")
        .await
        .expect("lock");
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("TRUNCATE t").await.expect("truncate");
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        let (id, n) = read2(&mut c, q).await;
        assert_eq!(n, 0, "stale rows from server {id}");
        assert_eq!(id, master_id);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        metric(s.admin_port, "sluice_unmarked_writes_total{group=\"main\"}").unwrap_or(0.0) >= 1.0,
        "the unmarked write is not in the metrics"
    );
    lock.query_drop("ROLLBACK").await.expect("rollback");
    drop(lock);
    locker.disconnect().await.expect("disconnect");
    // Once the replica has applied it, reads go back there.
    cluster.replicas[0].start_sql_thread();
    cluster.wait_replicas_caught_up();
    let started = Instant::now();
    loop {
        let (id, n) = read2(&mut c, q).await;
        assert_eq!(n, 0);
        if id != master_id {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "reads stayed on the master"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn non_transactional_tables_stay_untracked() {
    let cluster = Cluster::start(1);
    let db = setup(
        &cluster,
        "fh_myisam",
        &[
            ("t", T),
            ("m", "(id INT PRIMARY KEY, v INT NOT NULL) ENGINE=MyISAM"),
        ],
    )
    .await;
    let report = install(&cluster, &db).await;
    assert_eq!(report.non_transactional, vec!["m".to_string()]);
    let triggers = cluster.master.sql(&format!(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}' AND EVENT_OBJECT_TABLE = 'm'"
    ));
    assert_eq!(triggers, "0", "no triggers on a MyISAM table");
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = warm(&s, &db, &cluster).await;
    cluster.replicas[0].stop_sql_thread();
    let mut c = sluice_conn(&s, &db).await;
    // A rolled-back transaction keeps its MyISAM rows (they replicate).
    c.query_drop("BEGIN").await.expect("begin");
    c.query_drop("INSERT INTO m VALUES (1, 1)").await.expect("insert");
    let _ = c.query_drop("ROLLBACK").await;
    let q = "SELECT @@server_id, COUNT(*) FROM m";
    let (id, n) = read2(&mut c, q).await;
    assert_eq!((id, n), (master_id, 1));
    // `triggers status` says why.
    let pool = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db).as_str());
    let mut conn = pool.get_conn().await.expect("connect");
    let status = sluice::freshness::triggers::status(&mut conn, "sluice", &db)
        .await
        .expect("status");
    drop(conn);
    pool.disconnect().await.expect("disconnect");
    assert!(status.to_string().contains("non-transactional"), "{status}");
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn strict_mode_is_never_stale_across_two_sluices() {
    let cluster = Cluster::start(1);
    let db = setup(&cluster, "fh_two", &[("t", T)]).await;
    let writer = Sluice::start_for(&cluster, &freshness_yaml("strict"));
    let reader = Sluice::start_for(&cluster, &freshness_yaml("strict"));
    let master_id = warm(&reader, &db, &cluster).await;
    let mut w = sluice_conn(&writer, &db).await;
    let mut r = sluice_conn(&reader, &db).await;
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    let (mut stale, mut on_replica) = (0, 0);
    // The SQL thread toggles while one sluice writes and the other reads.
    for i in 0..60 {
        if i % 10 == 0 {
            cluster.replicas[0].stop_sql_thread();
        } else if i % 10 == 5 {
            cluster.replicas[0].start_sql_thread();
        }
        w.query_drop(format!("INSERT INTO t VALUES ({i}, {i})"))
            .await
            .expect("insert");
        let (id, n) = read2(&mut r, q).await;
        if n != i + 1 {
            stale += 1;
        }
        if id != master_id {
            on_replica += 1;
        }
    }
    assert_eq!(
        stale, 0,
        "stale reads across instances ({on_replica} on the replica)"
    );
    cluster.replicas[0].start_sql_thread();
}
