//! More than one sluice in front of one cluster (issue 11). Strict mode is
//! never stale across instances (`freshness_holes::strict_mode_is_never_
//! stale_across_two_sluices`, with the SQL thread toggling); this file
//! measures causal mode's cross-instance window: how long after a write
//! through sluice A has been acknowledged a read through sluice B may still
//! be served stale by a replica. B learns of A's write only from its own
//! background master probe, so the window is bounded by about one
//! `probe_interval` plus a probe's round trip.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::reads::*;
use mysql_async::prelude::*;

#[tokio::test]
async fn causal_cross_instance_window_is_about_one_probe_interval() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fm_causal").await;
    let master_id = server_id(&cluster.master);
    // The default probe interval: the figure docs/configuration.md states.
    let interval = Duration::from_millis(50);
    let yaml = "freshness:\n  mode: causal\n  probe_interval: 50ms\n  probe_timeout: 500ms\n";
    let a = Sluice::start_for(&cluster, yaml);
    let b = Sluice::start_for(&cluster, yaml);
    wait_replica_reads(&b, &db, master_id).await;
    let mut w = sluice_conn(&a, &db).await;
    let mut r = sluice_conn(&b, &db).await;
    let mut windows: Vec<Duration> = Vec::new();
    let (mut stale_reads, mut own_stale) = (0u64, 0u64);
    for i in 0..20i64 {
        // Each trial from a caught-up replica that B reads from; then the
        // replica applies nothing: a read it serves after the write is stale.
        cluster.replicas[0].start_sql_thread();
        cluster.wait_replicas_caught_up();
        wait_replica_reads(&b, &db, master_id).await;
        cluster.replicas[0].stop_sql_thread();
        // Anywhere in B's probe period.
        tokio::time::sleep(Duration::from_millis(7 * (i as u64 % 8))).await;
        w.query_drop(format!("INSERT INTO t VALUES ({i}, {i})"))
            .await
            .expect("insert");
        let acked = Instant::now();
        // A's own clients never see it stale (read-your-writes per instance).
        let mine: Option<(u32, i64)> = w
            .query_first(format!("SELECT @@server_id, COUNT(*) FROM t WHERE id = {i}"))
            .await
            .expect("read on a");
        if mine.map(|m| m.1) != Some(1) {
            own_stale += 1;
        }
        loop {
            let row: Option<(u32, i64)> = r
                .query_first(format!("SELECT @@server_id, COUNT(*) FROM t WHERE id = {i}"))
                .await
                .expect("read on b");
            let (id, n) = row.expect("a row");
            if n == 1 {
                windows.push(acked.elapsed());
                break;
            }
            assert_ne!(id, master_id, "the master has the row");
            stale_reads += 1;
            assert!(
                acked.elapsed() < Duration::from_secs(10),
                "sluice b never noticed the write; log:\n{}",
                b.log()
            );
        }
        // Once B has noticed, it stays noticed (its target only grows).
        for _ in 0..3 {
            let row: Option<(u32, i64)> = r
                .query_first(format!("SELECT @@server_id, COUNT(*) FROM t WHERE id = {i}"))
                .await
                .expect("read on b");
            assert_eq!(row.map(|r| r.1), Some(1), "stale again after the window");
        }
    }
    cluster.replicas[0].start_sql_thread();
    windows.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "causal cross-instance window (probe_interval {interval:?}, {} writes): median {:.1} ms, \
         p90 {:.1} ms, max {:.1} ms; {stale_reads} stale reads through the other sluice",
        windows.len(),
        ms(windows[windows.len() / 2]),
        ms(windows[windows.len() * 9 / 10]),
        ms(windows[windows.len() - 1]),
    );
    assert_eq!(own_stale, 0, "a sluice's own clients must read their writes");
    // The bound on a loaded 2-core machine: one interval, a probe, and
    // scheduling noise; much more means B is not probing as configured.
    assert!(
        windows[windows.len() / 2] < interval * 4,
        "median window {:?} is far above one probe interval",
        windows[windows.len() / 2]
    );
}
