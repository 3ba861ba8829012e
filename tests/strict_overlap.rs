//! Strict mode's overlapped reads (`freshness::strict`): a text read is sent
//! to the replica while the master probe runs, and its answer is released
//! only if the replica's position, read before the statement was sent,
//! covers the master's. These tests race reads through sluice against
//! writes made directly on the master (another client, as another sluice of
//! a fleet would be) and check every answer against what the master had
//! committed before the read began, and where it came from (`@@server_id`).

mod common;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::metric;
use common::reads::*;
use mysql_async::prelude::*;

fn reruns(s: &Sluice) -> f64 {
    metric(s.admin_port, "sluice_strict_reruns_total{group=\"main\"}").expect("sluice_strict_reruns_total")
}

/// How many of 30 reads of row 1 (v = 0) a replica answered; text or
/// prepared (COM_STMT_EXECUTE).
async fn quiet_reads_on_replica(reader: &mut mysql_async::Conn, master_id: u32, prepared: bool) -> u32 {
    let mut on_replica = 0;
    for _ in 0..30 {
        let row: Option<(u32, i64)> = if prepared {
            reader
                .exec_first("SELECT @@server_id, v FROM t WHERE id = ?", (1,))
                .await
        } else {
            reader
                .query_first("SELECT @@server_id, v FROM t WHERE id = 1")
                .await
        }
        .expect("read");
        let (sid, v) = row.expect("a row");
        assert_eq!(v, 0);
        if sid != master_id {
            on_replica += 1;
        }
    }
    on_replica
}

fn master_conn_url(cluster: &Cluster, db: &str) -> String {
    cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn own_cluster_strict_read_racing_a_direct_write_is_never_released_stale() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "overlap").await;
    let master_id = server_id(&cluster.master);
    cluster.master.sql_in(&db, "INSERT INTO t VALUES (1, 0)");
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("strict"));
    wait_replica_reads(&s, &db, master_id).await;
    let mut reader = sluice_conn(&s, &db).await;
    let mut writer = mysql_async::Conn::from_url(master_conn_url(&cluster, &db))
        .await
        .expect("connect to the master");

    // Quiet: the overlapped reads are released from the replica.
    let before = reruns(&s);
    for prepared in [false, true] {
        let on_replica = quiet_reads_on_replica(&mut reader, master_id, prepared).await;
        assert!(
            on_replica >= 25,
            "only {on_replica} of 30 quiet reads (prepared: {prepared}) on the replica"
        );
        assert_eq!(
            reruns(&s),
            before,
            "a caught-up replica's answers (prepared: {prepared}) were discarded"
        );
    }

    // A write the replica cannot apply yet, made directly on the master: the
    // next read starts on the replica, whose answer (v = 0) must be thrown
    // away. The lag comes from a READ lock on `t` there, which the applier
    // waits for: a stopped SQL thread would take the replica out of rotation
    // (replica eligibility, issue 43) and the read would not start there.
    let mut lock = mysql_async::Conn::from_url(cluster.replicas[0].url(SLUICE_USER, SLUICE_PASSWORD, &db))
        .await
        .expect("connect to the replica");
    lock.query_drop("LOCK TABLES t READ")
        .await
        .expect("lock t on the replica");
    writer
        .query_drop("UPDATE t SET v = 1 WHERE id = 1")
        .await
        .expect("update");
    let (sid, v): (u32, i64) = reader
        .query_first("SELECT @@server_id, v FROM t WHERE id = 1")
        .await
        .expect("read")
        .expect("a row");
    assert_eq!(
        (sid, v),
        (master_id, 1),
        "read after the write: stale or not from the master"
    );
    assert!(
        reruns(&s) > before,
        "the replica's stale answer was not rerun on the master"
    );
    // The same for a prepared read (COM_STMT_EXECUTE, overlapped too: its
    // rerun prepares the statement on the master), once the overlap's
    // back-off after that rerun is over. The replica still lacks v = 1.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = reruns(&s);
    let (sid, v): (u32, i64) = reader
        .exec_first("SELECT @@server_id, v FROM t WHERE id = ?", (1,))
        .await
        .expect("prepared read")
        .expect("a row");
    assert_eq!(
        (sid, v),
        (master_id, 1),
        "prepared read after the write: stale or not from the master"
    );
    assert!(
        reruns(&s) > before,
        "the prepared read was not sent to the replica and rerun on the master"
    );
    lock.query_drop("UNLOCK TABLES").await.expect("unlock");
    drop(lock);
    cluster.wait_replicas_caught_up();

    // The race: a writer on the master publishes each value once its
    // UPDATE returned; readers through sluice (text and prepared) must see
    // at least the value published before they sent their read, while the
    // replica's SQL thread is stopped and started.
    let secs: u64 = std::env::var("SLUICE_HAMMER_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let stop_at = Instant::now() + Duration::from_secs(secs);
    let published = Arc::new(AtomicI64::new(1));
    let done = Arc::new(AtomicBool::new(false));
    let reruns_before_race = reruns(&s);
    let writer_task = {
        let published = published.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut k = 1i64;
            let mut n = 0u64;
            while Instant::now() < stop_at {
                k += 1;
                writer
                    .exec_drop("UPDATE t SET v = ? WHERE id = 1", (k,))
                    .await
                    .expect("update");
                published.store(k, Ordering::SeqCst);
                // Gaps between writes let the replica catch up, so reads
                // are released from it as well as rerun.
                n += 1;
                tokio::time::sleep(Duration::from_millis(if n % 4 == 0 { 120 } else { 5 })).await;
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let toggler = toggle_sql_thread(&cluster.replicas[0], stop_at, Duration::from_millis(700));
    let mut readers = Vec::new();
    for r in 0..3 {
        let url = s.app_url(&db);
        let published = published.clone();
        let done = done.clone();
        readers.push(tokio::spawn(async move {
            let mut c = mysql_async::Conn::from_url(url)
                .await
                .expect("connect through sluice");
            let (mut reads, mut stale, mut replica) = (0u64, Vec::new(), 0u64);
            while !done.load(Ordering::SeqCst) {
                let want = published.load(Ordering::SeqCst);
                let row: Option<(u32, i64)> = if r == 2 {
                    c.exec_first("SELECT @@server_id, v FROM t WHERE id = ?", (1,))
                        .await
                        .expect("prepared read")
                } else {
                    c.query_first("SELECT @@server_id, v FROM t WHERE id = 1")
                        .await
                        .expect("text read")
                };
                let (sid, v) = row.expect("a row");
                reads += 1;
                if v < want {
                    stale.push((sid, v, want));
                }
                if sid != master_id {
                    replica += 1;
                }
            }
            (reads, stale, replica)
        }));
    }
    writer_task.await.expect("writer");
    toggler.await.expect("toggler");
    let (mut reads, mut stale, mut replica) = (0, Vec::new(), 0);
    for t in readers {
        let (n, st, rep) = t.await.expect("reader");
        reads += n;
        stale.extend(st);
        replica += rep;
    }
    let reran = reruns(&s) - reruns_before_race;
    println!(
        "strict overlap race: {reads} reads, {replica} on the replica, {reran} reruns, {} stale",
        stale.len()
    );
    assert!(reads >= 100, "too few reads ({reads})");
    assert!(
        stale.is_empty(),
        "stale reads (server, value, published before the read): {:?}\n{}",
        &stale[..stale.len().min(10)],
        s.log()
    );
    assert!(replica > 0, "no read reached the replica during the race");
    assert!(reran > 0.0, "the race never exercised a rerun");
}
