//! Counting that goes backwards or is skipped (issue 40):
//!
//! - master counter rows changed by hand between two probes (deleted and inserted again
//!   in one transaction, as a restore from a backup does) go down: a replica that has
//!   not applied that change still holds the higher values and passed for fresh. Each
//!   read after such a reset is answered by the master (`@@server_id`, with the
//!   master's row count) until the replica has the master's position, in strict and in
//!   causal mode; then reads return to the replica;
//! - `DELETE HISTORY` on a system-versioned table fires no trigger: counted like
//!   TRUNCATE, so a read `FOR SYSTEM_TIME ALL` right after it does not return the purged
//!   rows from a replica that lacks the purge.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::reads::*;
use mysql_async::prelude::*;

async fn read2(conn: &mut mysql_async::Conn, sql: &str) -> (u32, i64) {
    let row: Option<(u32, i64)> = conn.query_first(sql).await.expect(sql);
    row.expect("a row")
}

#[tokio::test]
async fn own_cluster_counters_reset_by_hand_are_a_new_generation() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fr_reset").await;
    let strict = Sluice::start_for(&cluster, &freshness_yaml("strict"));
    let causal = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    // A writer that bypasses sluice: one connection, so one counter row.
    let mut direct = mysql_async::Conn::from_url(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db))
        .await
        .expect("connect to master");
    for i in 0..5 {
        direct
            .query_drop(format!("INSERT INTO t VALUES ({i}, 0)"))
            .await
            .expect("insert");
    }
    cluster.wait_replicas_caught_up();
    for s in [&strict, &causal] {
        // Both have probed the counters at 5.
        wait_replica_reads(s, &db, master_id).await;
    }
    cluster.replicas[0].stop_sql_thread();
    // The counter rows of `t` deleted and inserted again at 0, in one transaction.
    cluster.master.sql(&format!(
        "BEGIN; DELETE FROM sluice.counters WHERE tbl = '{db}.t'; \
         INSERT INTO sluice.counters (tbl, slot, n) SELECT '{db}.t', seq, 0 FROM sluice.seq_0_to_15; COMMIT"
    ));
    // Between probes.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The same row counts again from 0: 1 on the master, 5 on the stopped replica.
    direct
        .query_drop("INSERT INTO t VALUES (100, 0)")
        .await
        .expect("insert");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let q = "SELECT @@server_id, COUNT(*) FROM t";
    for s in [&strict, &causal] {
        let mut c = sluice_conn(s, &db).await;
        for _ in 0..5 {
            assert_eq!(
                read2(&mut c, q).await,
                (master_id, 6),
                "a read after the reset is not served stale:\n{}",
                s.log()
            );
        }
    }
    // Not the master forever: once the replica has the reset and the write.
    cluster.replicas[0].start_sql_thread();
    cluster.wait_replicas_caught_up();
    for s in [&strict, &causal] {
        let mut c = sluice_conn(s, &db).await;
        let started = Instant::now();
        loop {
            let (id, n) = read2(&mut c, q).await;
            assert_eq!(n, 6);
            if id != master_id {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "after the reset reads never reached the replica again"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn own_cluster_delete_history_counts_like_truncate() {
    let cluster = Cluster::start(1);
    let db = unique_name("fr_hist");
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT NOT NULL) WITH SYSTEM VERSIONING"
    ));
    install_triggers(&cluster, &db).await;
    cluster.master.sql(&format!(
        "INSERT INTO {db}.t VALUES (1, 1), (2, 2); UPDATE {db}.t SET v = v + 10; DELETE FROM {db}.t WHERE id = 2"
    ));
    cluster.wait_replicas_caught_up();
    let master_id = server_id(&cluster.master);
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    wait_replica_reads(&s, &db, master_id).await;
    let mut c = sluice_conn(&s, &db).await;
    let all = "SELECT @@server_id, COUNT(*) FROM t FOR SYSTEM_TIME ALL";
    let started = Instant::now();
    loop {
        let (id, n) = read2(&mut c, all).await;
        assert_eq!(n, 4, "current and historical rows");
        if id != master_id {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "history reads reach the replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cluster.replicas[0].stop_sql_thread();
    // By another client of this sluice: the reader has written nothing itself.
    let mut purger = sluice_conn(&s, &db).await;
    purger
        .query_drop("DELETE HISTORY FROM t")
        .await
        .expect("delete history");
    for q in [
        all,
        "SELECT @@server_id, COUNT(*) FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2000-01-01 00:00:00'",
    ] {
        let (id, n) = read2(&mut c, q).await;
        let on_master: i64 = cluster
            .master
            .sql_in(&db, &q.replace("@@server_id, ", ""))
            .parse()
            .expect("a number");
        assert_eq!((id, n), (master_id, on_master), "{q}: the purge is seen");
    }
    cluster.replicas[0].start_sql_thread();
    cluster.wait_replicas_caught_up();
}
