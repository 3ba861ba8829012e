//! The operator's pause (`crate::pause`) holds sharded reads too: a scatter
//! read's parts take connections on every group's replicas (or masters), and
//! those connections are chosen by the session's gate like any other, so a
//! `PAUSE GROUP g` holds a part on `g` (1205 after `limits.pause_timeout`)
//! and `PAUSE WRITES` lets replica parts go on. Sub-tables `pr_0`/`pr_1` in
//! group `main` (the shared cluster), `pr_2`/`pr_3` in group `b` (a cluster
//! of this test's own, with one replica).

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::http_post;
use mysql_async::prelude::*;
use mysql_async::Conn;

fn code(e: &mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(s) => s.code,
        _ => 0,
    }
}

/// `sql` through `sl`: Ok(count) or the error code, and how long it took.
async fn timed(sl: &mut Conn, sql: &str) -> (Result<i64, u16>, Duration) {
    let t0 = Instant::now();
    let r = sl
        .query_first::<i64, _>(sql)
        .await
        .map(|v| v.expect("a row"))
        .map_err(|e| code(&e));
    (r, t0.elapsed())
}

fn post(port: u16, path: &str) {
    let (status, body) = http_post(port, path).unwrap_or_else(|e| panic!("POST {path}: {e}"));
    assert_eq!(status, 200, "POST {path}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_holds_sharded_reads_on_every_group() {
    let main = shared_cluster();
    let b = Cluster::start(1);
    let db = unique_name("pause_sharded");
    main.master.sql(&format!("CREATE DATABASE {db}"));
    b.master.sql(&format!("CREATE DATABASE {db}"));
    let yaml = format!(
        "{}groups:\n{}{}log:\n  level: warn\nlimits:\n  pause_timeout: 1s\nfreshness:\n  mode: \"off\"\n\
         sharding:\n  rules:\n    - {{ table: {db}.pr, key: tid, shards: 4, placement: [main, main, b, b] }}\n",
        Sluice::users_yaml(),
        Sluice::group_yaml("main", main),
        Sluice::group_yaml("b", &b),
    );
    let s = Sluice::start(&yaml);
    let mut sl = Conn::from_url(s.app_url(&db)).await.expect("connect");
    sl.query_drop("CREATE TABLE pr (id INT PRIMARY KEY, tid INT NOT NULL)")
        .await
        .expect("CREATE TABLE pr");
    // One row per sub-table (tid % 4), one group at a time.
    sl.query_drop("INSERT INTO pr VALUES (1, 0), (2, 1)")
        .await
        .expect("insert main");
    sl.query_drop("INSERT INTO pr VALUES (3, 2), (4, 3)")
        .await
        .expect("insert b");
    main.wait_replicas_caught_up();
    b.wait_replicas_caught_up();
    let all = "SELECT COUNT(*) FROM pr";
    let on_b = "SELECT COUNT(*) FROM pr WHERE tid = 2";
    let on_main = "SELECT COUNT(*) FROM pr WHERE tid = 0";
    assert_eq!(timed(&mut sl, all).await.0, Ok(4));

    // PAUSE GROUP b: a read with a part on b waits, then 1205; main's parts alone go on.
    post(s.admin_port, "/v1/pause?group=b");
    for sql in [all, on_b] {
        let (r, took) = timed(&mut sl, sql).await;
        assert_eq!(r, Err(1205), "{sql}: held by the pause of group b");
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(5),
            "{sql}: {took:?}"
        );
    }
    assert_eq!(timed(&mut sl, on_main).await.0, Ok(1), "group main is not paused");

    // PAUSE WRITES GROUP b: reads on b's replica go on.
    post(s.admin_port, "/v1/pause?writes=1&group=b");
    let (r, took) = timed(&mut sl, all).await;
    assert_eq!(r, Ok(4), "replica parts go on under PAUSE WRITES");
    assert!(took < Duration::from_millis(900), "{took:?}");
    post(s.admin_port, "/v1/resume?group=b");

    // PAUSE GROUP main holds the parts on main's replicas the same way.
    post(s.admin_port, "/v1/pause?group=main");
    let (r, _) = timed(&mut sl, on_main).await;
    assert_eq!(r, Err(1205), "held by the pause of group main");
    assert_eq!(timed(&mut sl, on_b).await.0, Ok(1), "group b is not paused");

    // A held read is released by RESUME.
    let waiter = tokio::spawn(async move {
        let r = timed(&mut sl, all).await;
        (r, sl)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    post(s.admin_port, "/v1/resume?group=main");
    let ((r, took), _sl) = waiter.await.expect("task");
    assert_eq!(r, Ok(4), "released by RESUME");
    assert!(took < Duration::from_millis(950), "{took:?}");
}
