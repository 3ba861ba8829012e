//! `freshness.auto_install` (issue 11): new tables of tracked schemas get
//! sluice's triggers without a manual step, whether they were created
//! through sluice or directly on the master, and their reads reach a replica
//! only once their writes are counted. Every read asserts where it went
//! (`@@server_id`) and that it returned what the master returns; the
//! replica's SQL thread is stopped to make any stale answer show.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::metric;
use common::reads::*;
use mysql_async::prelude::*;

const T: &str = "(id INT PRIMARY KEY, v INT NOT NULL)";

/// `(server_id, COUNT(*))` of `table` through sluice.
async fn count(c: &mut mysql_async::Conn, table: &str) -> (u32, i64) {
    let sql = format!("SELECT @@server_id, COUNT(*) FROM {table}");
    let row: Option<(u32, i64)> = c.query_first(&sql).await.expect(&sql);
    row.expect("a row")
}

fn master_count(cluster: &Cluster, db: &str, table: &str) -> i64 {
    let out = cluster
        .master
        .sql_in(db, &format!("SELECT COUNT(*) FROM {table}"));
    out.trim().parse().expect("a number")
}

/// The sluice triggers on `db.table` (names), read on the master.
fn sluice_triggers(cluster: &Cluster, db: &str, table: &str) -> usize {
    let out = cluster.master.sql(&format!(
        "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}' \
         AND EVENT_OBJECT_TABLE = '{table}' AND TRIGGER_NAME LIKE 'sluice\\_a%'"
    ));
    out.trim().parse().expect("a number")
}

/// Reads of `table` until one reaches a replica; every answer must equal
/// the master's (no writes run meanwhile). Returns how many reads it took.
async fn until_replica(
    c: &mut mysql_async::Conn,
    cluster: &Cluster,
    db: &str,
    table: &str,
    s: &Sluice,
) -> usize {
    let master_id = server_id(&cluster.master);
    let want = master_count(cluster, db, table);
    let started = Instant::now();
    for reads in 1.. {
        let (id, n) = count(c, table).await;
        assert_eq!(n, want, "stale answer from server {id}");
        if id != master_id {
            return reads;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "reads of {table} never reached the replica; log:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unreachable!()
}

/// With the SQL thread stopped, a write to `table` through `writer` and a
/// read of it through `reader`: the read must come from the master with
/// the new row.
async fn never_stale_after_write(
    writer: &mut mysql_async::Conn,
    reader: &mut mysql_async::Conn,
    cluster: &Cluster,
    db: &str,
    table: &str,
    id: i64,
) {
    let master_id = server_id(&cluster.master);
    writer
        .query_drop(format!("INSERT INTO {table} VALUES ({id}, {id})"))
        .await
        .expect("insert");
    let (server, n) = count(reader, table).await;
    assert_eq!(
        n,
        master_count(cluster, db, table),
        "stale answer from server {server}"
    );
    assert_eq!(server, master_id, "the replica lacks the insert");
}

#[tokio::test]
async fn create_table_through_sluice_gets_triggers_at_once() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fa_via").await;
    let s = Sluice::start_for(
        &cluster,
        &format!("{}  auto_install: true\n", freshness_yaml("causal")),
    );
    wait_replica_reads(&s, &db, server_id(&cluster.master)).await;
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop(format!("CREATE TABLE n {T}")).await.expect("create");
    // Before the client got its OK.
    assert_eq!(
        sluice_triggers(&cluster, &db, "n"),
        3,
        "triggers on n after CREATE TABLE; log:\n{}",
        s.log()
    );
    c.query_drop("INSERT INTO n VALUES (1, 1), (2, 2)")
        .await
        .expect("insert");
    cluster.wait_replicas_caught_up();
    until_replica(&mut c, &cluster, &db, "n", &s).await;
    // Counted: a write the replica lacks keeps reads of n on the master.
    cluster.replicas[0].stop_sql_thread();
    let mut reader = sluice_conn(&s, &db).await;
    never_stale_after_write(&mut c, &mut reader, &cluster, &db, "n", 3).await;
    cluster.replicas[0].start_sql_thread();
    assert!(
        metric(s.admin_port, "sluice_auto_installed_tables_total{group=\"main\"}").unwrap_or(0.0) >= 1.0,
        "auto-installed tables counted"
    );
}

#[tokio::test]
async fn table_created_on_the_master_is_picked_up_within_a_probe() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fa_direct").await;
    // Strict: writes that bypass sluice must not be served stale either.
    let s = Sluice::start_for(
        &cluster,
        &format!("{}  auto_install: true\n", freshness_yaml("strict")),
    );
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    // Created and filled behind sluice's back while the replica applies
    // nothing: the rows written before the triggers existed are counted by
    // no trigger, and the replica does not even have the table.
    cluster.replicas[0].stop_sql_thread();
    cluster.master.sql(&format!(
        "CREATE TABLE {db}.d {T}; INSERT INTO {db}.d VALUES (1, 1), (2, 2)"
    ));
    let started = Instant::now();
    while sluice_triggers(&cluster, &db, "d") < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "d got no triggers; log:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut c = sluice_conn(&s, &db).await;
    // Tracked now, but the replica lacks the table and its rows: the reads
    // go to the master for as long as the SQL thread is stopped.
    for _ in 0..20 {
        let (id, n) = count(&mut c, "d").await;
        assert_eq!(n, 2, "stale answer from server {id}");
        assert_eq!(id, master_id, "the replica lacks d");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.replicas[0].start_sql_thread();
    cluster.wait_replicas_caught_up();
    until_replica(&mut c, &cluster, &db, "d", &s).await;
    // Writes that bypass sluice are counted by d's triggers.
    cluster.replicas[0].stop_sql_thread();
    cluster.master.sql(&format!("INSERT INTO {db}.d VALUES (3, 3)"));
    let (id, n) = count(&mut c, "d").await;
    assert_eq!(n, 3, "stale answer from server {id}");
    assert_eq!(id, master_id);
    cluster.replicas[0].start_sql_thread();
}

#[tokio::test]
async fn auto_install_off_leaves_new_tables_untracked() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fa_off").await;
    let yaml = format!("{}  auto_install: false\n", freshness_yaml("causal"));
    let s = Sluice::start_for(&cluster, &yaml);
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop(format!("CREATE TABLE n {T}")).await.expect("create");
    cluster.master.sql(&format!("CREATE TABLE {db}.d {T}"));
    cluster.wait_replicas_caught_up();
    // Several refreshes of the tracked set later, still no triggers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sluice_triggers(&cluster, &db, "n"), 0);
    assert_eq!(sluice_triggers(&cluster, &db, "d"), 0);
    let before = metric(s.admin_port, "sluice_untracked_reads_total{group=\"main\"}").unwrap_or(0.0);
    for table in ["n", "d"] {
        assert_eq!(count(&mut c, table).await.0, master_id, "{table} is untracked");
    }
    let after = metric(s.admin_port, "sluice_untracked_reads_total{group=\"main\"}").unwrap_or(0.0);
    assert!(
        after >= before + 2.0,
        "untracked reads counted: {before} -> {after}"
    );
    // The gauge follows the tracked set's refresh, which may not have seen
    // `d` (created directly on the master) yet.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut untracked = None;
    while std::time::Instant::now() < deadline {
        untracked = metric(s.admin_port, "sluice_untracked_tables{group=\"main\"}");
        if untracked == Some(2.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        untracked,
        Some(2.0),
        "n and d are the untracked tables of the tracked schema"
    );
    // The tracked table still reaches the replica.
    wait_replica_reads(&s, &db, master_id).await;
}

#[tokio::test]
async fn newly_tracked_table_waits_for_the_replica_to_have_it() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fa_new").await;
    // Causal with probes far apart: the auto-install runs inside a probe
    // round, and nothing but that round tells this sluice of the change.
    let yaml =
        "freshness:\n  mode: causal\n  probe_interval: 2s\n  probe_timeout: 500ms\n  auto_install: true\n";
    let s = Sluice::start_for(&cluster, yaml);
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;
    // The replica will have neither the table nor its rows.
    cluster.replicas[0].stop_sql_thread();
    cluster.master.sql(&format!(
        "CREATE TABLE {db}.d {T}; INSERT INTO {db}.d VALUES (1, 1), (2, 2)"
    ));
    let mut c = sluice_conn(&s, &db).await;
    let started = Instant::now();
    let mut after_install = 0;
    // Through the round that installs d's triggers and two more rounds.
    while started.elapsed() < Duration::from_secs(7) {
        let row: Result<Option<(u32, i64)>, _> = c.query_first("SELECT @@server_id, COUNT(*) FROM d").await;
        let (id, n) = row
            .expect("a read of d (a replica without d would fail)")
            .expect("a row");
        assert_eq!((id, n), (master_id, 2), "read of d served by server {id}");
        if sluice_triggers(&cluster, &db, "d") == 3 {
            after_install += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        after_install > 10,
        "d's triggers were never installed; log:\n{}",
        s.log()
    );
    cluster.replicas[0].start_sql_thread();
}

/// A connection to the master as sluice's account, for `sluice::freshness::triggers`.
async fn master_admin(cluster: &Cluster, db: &str) -> (mysql_async::Pool, mysql_async::Conn) {
    let pool = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db).as_str());
    let conn = pool.get_conn().await.expect("connect to master");
    (pool, conn)
}

/// Waits until `db.table` has the three sluice triggers (5 s at most).
async fn until_triggers(cluster: &Cluster, db: &str, table: &str, s: &Sluice) {
    let started = Instant::now();
    while sluice_triggers(cluster, db, table) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{db}.{table} got no triggers; log:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn empty_schema_named_by_install_gets_triggers_for_its_first_tables() {
    let cluster = Cluster::start(1);
    // An application's database before its first migration: no table, so
    // no trigger marks it as tracked; `triggers install` names it.
    let empty = unique_name("fa_empty");
    let unnamed = unique_name("fa_unnamed");
    cluster
        .master
        .sql(&format!("CREATE DATABASE {empty}; CREATE DATABASE {unnamed}"));
    let (pool, mut admin) = master_admin(&cluster, &empty).await;
    let report = sluice::freshness::triggers::install(&mut admin, "sluice", &empty, 16)
        .await
        .expect("install on an empty schema");
    assert_eq!(report.tables, 0);
    let status = sluice::freshness::triggers::status(&mut admin, "sluice", &empty)
        .await
        .expect("status");
    assert!(status.named, "install names the empty schema:\n{status}");
    cluster.wait_replicas_caught_up();
    let ready = tracked_db(&cluster, "fa_ready").await;
    let s = Sluice::start_for(
        &cluster,
        &format!("{}  auto_install: true\n", freshness_yaml("causal")),
    );
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &ready, master_id).await;

    // Through sluice: the triggers exist before the client gets its OK.
    let mut c = sluice_conn(&s, &empty).await;
    c.query_drop(format!("CREATE TABLE a {T}")).await.expect("create");
    assert_eq!(
        sluice_triggers(&cluster, &empty, "a"),
        3,
        "triggers on a after CREATE TABLE"
    );
    c.query_drop("INSERT INTO a VALUES (1, 1)").await.expect("insert");
    cluster.wait_replicas_caught_up();
    until_replica(&mut c, &cluster, &empty, "a", &s).await;
    cluster.replicas[0].stop_sql_thread();
    let mut reader = sluice_conn(&s, &empty).await;
    never_stale_after_write(&mut c, &mut reader, &cluster, &empty, "a", 2).await;
    cluster.replicas[0].start_sql_thread();

    // Created on the master directly: picked up within a probe.
    cluster.master.sql(&format!("CREATE TABLE {empty}.b {T}"));
    until_triggers(&cluster, &empty, "b", &s).await;

    // A schema nobody named stays untouched, through sluice or not.
    let mut u = sluice_conn(&s, &unnamed).await;
    u.query_drop(format!("CREATE TABLE x {T}")).await.expect("create");
    cluster.master.sql(&format!("CREATE TABLE {unnamed}.y {T}"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sluice_triggers(&cluster, &unnamed, "x"), 0);
    assert_eq!(sluice_triggers(&cluster, &unnamed, "y"), 0);

    // Uninstall takes the name away: new tables are left alone again.
    sluice::freshness::triggers::uninstall(&mut admin, "sluice", &empty)
        .await
        .expect("uninstall");
    let status = sluice::freshness::triggers::status(&mut admin, "sluice", &empty)
        .await
        .expect("status");
    assert!(!status.named, "uninstall removes the name:\n{status}");
    cluster.master.sql(&format!("CREATE TABLE {empty}.c {T}"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    for table in ["a", "b", "c"] {
        assert_eq!(
            sluice_triggers(&cluster, &empty, table),
            0,
            "{table} after uninstall; log:\n{}",
            s.log()
        );
    }
    drop(admin);
    pool.disconnect().await.expect("disconnect");
}

#[tokio::test]
async fn counter_schema_of_an_older_sluice_keeps_auto_install_across_the_upgrade() {
    let cluster = Cluster::start(1);
    let old = tracked_db(&cluster, "fa_old").await;
    // What an older sluice left: the counter table and triggers, no list of
    // named schemas (its schemas were tracked by their triggers alone).
    cluster.master.sql("DROP TABLE sluice.schemas");
    let s = Sluice::start_for(
        &cluster,
        &format!("{}  auto_install: true\n", freshness_yaml("causal")),
    );
    wait_replica_reads(&s, &old, server_id(&cluster.master)).await;
    cluster.master.sql(&format!("CREATE TABLE {old}.o1 {T}"));
    until_triggers(&cluster, &old, "o1", &s).await;

    // The first install by this version creates the list: it names the new
    // (empty) schema and every schema that already had triggers.
    let new = unique_name("fa_new_empty");
    cluster.master.sql(&format!("CREATE DATABASE {new}"));
    let (pool, mut admin) = master_admin(&cluster, &new).await;
    sluice::freshness::triggers::install(&mut admin, "sluice", &new, 16)
        .await
        .expect("install");
    for db in [&old, &new] {
        let status = sluice::freshness::triggers::status(&mut admin, "sluice", db)
            .await
            .expect("status");
        assert!(status.named, "{db} named after the upgrade:\n{status}");
    }
    cluster
        .master
        .sql(&format!("CREATE TABLE {old}.o2 {T}; CREATE TABLE {new}.n1 {T}"));
    until_triggers(&cluster, &old, "o2", &s).await;
    until_triggers(&cluster, &new, "n1", &s).await;
    drop(admin);
    pool.disconnect().await.expect("disconnect");
}
