//! Helpers for tests that check where reads go: a database with sluice's
//! triggers, `@@server_id` of the server that answered, waiting until sluice
//! routes reads to a replica.

use std::time::{Duration, Instant};

use mysql_async::prelude::*;

use super::cluster::*;

/// Create a database with one table `t (id INT PRIMARY KEY, v INT)`, install
/// sluice's triggers on it, and wait until the replicas have it all.
pub async fn tracked_db(cluster: &Cluster, prefix: &str) -> String {
    let db = unique_name(prefix);
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT NOT NULL)"
    ));
    install_triggers(cluster, &db).await;
    cluster.wait_replicas_caught_up();
    db
}

/// `sluice triggers install` (counter schema `sluice`, 16 slots) on every table of `db`.
pub async fn install_triggers(cluster: &Cluster, db: &str) {
    let pool = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db).as_str());
    let mut conn = pool.get_conn().await.expect("connect to master");
    sluice::freshness::triggers::install(&mut conn, "sluice", db, 16)
        .await
        .expect("install triggers");
    drop(conn);
    pool.disconnect().await.expect("disconnect");
}

/// Stop and start `replica`'s SQL thread every `period` until `stop_at`,
/// then leave it running.
pub fn toggle_sql_thread(
    replica: &Server,
    stop_at: Instant,
    period: Duration,
) -> tokio::task::JoinHandle<()> {
    let url = replica.url(SLUICE_USER, SLUICE_PASSWORD, "");
    tokio::spawn(async move {
        let mut c = mysql_async::Conn::from_url(url).await.expect("replica admin");
        let mut stopped = false;
        while Instant::now() < stop_at {
            let sql = if stopped {
                "START SLAVE SQL_THREAD"
            } else {
                "STOP SLAVE SQL_THREAD"
            };
            c.query_drop(sql).await.expect("toggle sql thread");
            stopped = !stopped;
            tokio::time::sleep(period).await;
        }
        c.query_drop("START SLAVE SQL_THREAD")
            .await
            .expect("restart sql thread");
    })
}

pub fn server_id(s: &Server) -> u32 {
    s.sql("SELECT @@server_id").parse().expect("server id")
}

pub async fn sluice_conn(s: &Sluice, db: &str) -> mysql_async::Conn {
    mysql_async::Conn::from_url(s.app_url(db))
        .await
        .expect("connect through sluice")
}

pub async fn who(conn: &mut mysql_async::Conn, sql: &str) -> u32 {
    let row: Option<(u32,)> = conn.query_first(sql).await.expect("query");
    row.expect("a row").0
}

pub fn freshness_yaml(mode: &str) -> String {
    format!("freshness:\n  mode: {mode}\n  probe_interval: 10ms\n  probe_timeout: 500ms\n")
}

/// Wait until sluice routes a plain read of `db.t` to a replica (probes
/// have seen the replicas healthy and caught up).
pub async fn wait_replica_reads(s: &Sluice, db: &str, master_id: u32) {
    let mut conn = sluice_conn(s, db).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if who(&mut conn, "SELECT @@server_id + 0 * COUNT(*) FROM t").await != master_id {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "reads never reached a replica; log:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
