//! Hot reload: sluice runs as a binary against the shared cluster; each test
//! rewrites its configuration file in place and sends SIGHUP or calls
//! `POST /reload`, then checks what changed (logins, where reads go) and
//! that sessions in flight were not disturbed.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::{http_get, http_post};
use common::reads::{tracked_db, wait_replica_reads};
use mysql_async::prelude::*;

/// A group `main` with the shared cluster's master and the replicas
/// `replicas` (index into the cluster's replicas, weight).
fn group(cluster: &Cluster, replicas: &[(usize, u32)]) -> String {
    let mut y = format!(
        "groups:\n  - name: main\n    master: {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n",
        cluster.master.addr()
    );
    if replicas.is_empty() {
        y.push_str("    replicas: []\n");
    } else {
        y.push_str("    replicas:\n");
        for &(i, w) in replicas {
            y.push_str(&format!(
                "      - {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD}, weight: {w} }}\n",
                cluster.replicas[i].addr()
            ));
        }
    }
    y
}

fn freshness(mode: &str) -> String {
    format!("freshness:\n  mode: {mode}\n  probe_interval: 10ms\n  probe_timeout: 500ms\n")
}

/// The configuration text after sluice's listen lines.
fn body(users: &str, freshness: &str, group: &str) -> String {
    format!("users:\n{users}{freshness}{group}")
}

fn user(name: &str, password: &str) -> String {
    format!("  - {{ name: {name}, password: {password}, backend: group }}\n")
}

/// Replace the configuration file, keeping the listen addresses sluice runs on.
/// A new configuration for `s`, with the harness' defaults (see
/// `harness_defaults`) as at its start, so only what `body` changes differs.
fn rewrite(s: &Sluice, body: &str) {
    rewrite_raw(
        s,
        &harness_defaults(format!(
            "listen: 127.0.0.1:{}\nadmin_listen: 127.0.0.1:{}\n{body}",
            s.port, s.admin_port
        )),
    );
}

fn rewrite_raw(s: &Sluice, text: &str) {
    std::fs::write(s.config_path(), text).expect("rewrite the configuration");
}

/// A sample of sluice's /metrics without labels, or with the given label
/// string (`{result="ok"}`).
fn metric(s: &Sluice, series: &str) -> f64 {
    let (_, text) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    common::http::sample(&text, series).unwrap_or_else(|| panic!("no {series} in /metrics:\n{text}"))
}

fn reloads(s: &Sluice, result: &str) -> f64 {
    metric(s, &format!("sluice_config_reloads_total{{result=\"{result}\"}}"))
}

/// SIGHUP, then wait until sluice counted one more reload with `result`.
fn sighup(s: &Sluice, result: &str) {
    let before = reloads(s, result);
    s.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloads(s, result) <= before {
        assert!(
            Instant::now() < deadline,
            "no {result} reload after SIGHUP; log:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// POST /reload, expecting `status`; the body.
fn post_reload(s: &Sluice, status: u16) -> String {
    let (got, body) = http_post(s.admin_port, "/reload").expect("POST /reload");
    assert_eq!(got, status, "POST /reload answered {got}: {body}");
    body
}

async fn connect(s: &Sluice, user: &str, password: &str) -> Result<mysql_async::Conn, mysql_async::Error> {
    mysql_async::Conn::from_url(s.url(user, password, "")).await
}

async fn server_id_of(conn: &mut mysql_async::Conn, sql: &str) -> u32 {
    let row: Option<(u32,)> = conn.query_first(sql).await.expect("read @@server_id");
    row.expect("a row").0
}

fn server_id(s: &Server) -> u32 {
    s.sql("SELECT @@server_id").parse().expect("server id")
}

fn error_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(e) => Some(e.code),
        _ => None,
    }
}

/// Read `@@server_id` through sluice until it is `want` (probes need a few
/// rounds to put a new replica in rotation).
async fn wait_reads_reach(s: &Sluice, conn: &mut mysql_async::Conn, sql: &str, want: u32) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while server_id_of(conn, sql).await != want {
        assert!(
            Instant::now() < deadline,
            "reads never reached server {want}; log:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn users_are_added_and_removed_without_touching_sessions() {
    let cluster = shared_cluster();
    let group = group(cluster, &[]);
    let s = Sluice::start(&body(&user("app", "app"), "", &group));
    let mut app = connect(&s, "app", "app").await.expect("app logs in");
    let refused = connect(&s, "bob", "bobpw").await.expect_err("bob is unknown");
    assert_eq!(error_code(&refused), Some(1045), "{refused}");

    // Add bob by SIGHUP.
    let users = format!("{}{}", user("app", "app"), user("bob", "bobpw"));
    rewrite(&s, &body(&users, "", &group));
    sighup(&s, "ok");
    let mut bob = connect(&s, "bob", "bobpw")
        .await
        .expect("bob logs in after the reload");
    let one: Option<u32> = app
        .query_first("SELECT 1")
        .await
        .expect("app's session still works");
    assert_eq!(one, Some(1));
    assert!(s.log().contains("users added: bob"), "log:\n{}", s.log());

    // Remove bob by POST /reload: his session goes on, new logins are refused.
    rewrite(&s, &body(&user("app", "app"), "", &group));
    let summary = post_reload(&s, 200);
    assert!(summary.contains("users removed: bob"), "{summary}");
    let one: Option<u32> = bob
        .query_first("SELECT 1")
        .await
        .expect("bob's open session still works");
    assert_eq!(one, Some(1));
    let refused = connect(&s, "bob", "bobpw").await.expect_err("bob was removed");
    assert_eq!(error_code(&refused), Some(1045), "{refused}");
    // COM_CHANGE_USER checks the newest list too.
    let change = app
        .change_user(
            mysql_async::ChangeUserOpts::default()
                .with_user(Some("bob".into()))
                .with_pass(Some("bobpw".into())),
        )
        .await;
    assert!(change.is_err(), "COM_CHANGE_USER to a removed user succeeded");
    let mut app2 = connect(&s, "app", "app").await.expect("app still logs in");
    let _: Option<u32> = app2.query_first("SELECT 1").await.expect("query");
    assert_eq!(metric(&s, "sluice_config_generation"), 3.0);
}

#[tokio::test]
async fn a_replica_added_by_reload_serves_reads_and_one_removed_stops() {
    let cluster = shared_cluster();
    let master = server_id(&cluster.master);
    let replica = server_id(&cluster.replicas[0]);
    let users = user("app", "app");
    let off = freshness("off");
    let s = Sluice::start(&body(&users, &off, &group(cluster, &[])));
    let mut reader = connect(&s, "app", "app").await.expect("connect");
    for _ in 0..20 {
        assert_eq!(server_id_of(&mut reader, "SELECT @@server_id").await, master);
    }

    rewrite(&s, &body(&users, &off, &group(cluster, &[(0, 1)])));
    let summary = post_reload(&s, 200);
    assert!(summary.contains("replicas added"), "{summary}");
    wait_reads_reach(&s, &mut reader, "SELECT @@server_id", replica).await;

    // Across the removal: a read-only transaction on the replica finishes
    // there; a read-write transaction on the master commits.
    let db = unique_name("reload_tx");
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY)"
    ));
    let mut ro = connect(&s, "app", "app").await.expect("connect");
    let mut rw = connect(&s, "app", "app").await.expect("connect");
    ro.query_drop("START TRANSACTION READ ONLY")
        .await
        .expect("begin read only");
    let mut ro_server = server_id_of(&mut ro, "SELECT @@server_id").await;
    while ro_server != replica {
        // The replica may have been marked down for a moment: start again.
        ro.query_drop("COMMIT").await.expect("commit");
        tokio::time::sleep(Duration::from_millis(20)).await;
        ro.query_drop("START TRANSACTION READ ONLY")
            .await
            .expect("begin read only");
        ro_server = server_id_of(&mut ro, "SELECT @@server_id").await;
    }
    rw.query_drop("BEGIN").await.expect("begin");
    rw.query_drop(format!("INSERT INTO {db}.t VALUES (1)"))
        .await
        .expect("insert");

    rewrite(&s, &body(&users, &off, &group(cluster, &[])));
    sighup(&s, "ok");
    assert_eq!(
        server_id_of(&mut ro, "SELECT @@server_id").await,
        replica,
        "the read-only transaction left its replica"
    );
    ro.query_drop("COMMIT")
        .await
        .expect("read-only transaction commits");
    rw.query_drop(format!("INSERT INTO {db}.t VALUES (2)"))
        .await
        .expect("insert");
    rw.query_drop("COMMIT")
        .await
        .expect("transaction commits across the reload");
    let n: Option<u32> = rw
        .query_first(format!("SELECT COUNT(*) FROM {db}.t"))
        .await
        .expect("count");
    assert_eq!(n, Some(2));
    for conn in [&mut reader, &mut ro, &mut rw] {
        for _ in 0..20 {
            assert_eq!(
                server_id_of(conn, "SELECT @@server_id").await,
                master,
                "a read reached the removed replica"
            );
        }
    }
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// Causal mode: a replica added by reload gets reads of tracked tables once
/// it has caught up, and a client still reads its own writes.
#[tokio::test]
async fn causal_reads_use_a_replica_added_by_reload() {
    let cluster = shared_cluster();
    let master = server_id(&cluster.master);
    let replica = server_id(&cluster.replicas[1]);
    let db = tracked_db(cluster, "reload_causal").await;

    let users = user("app", "app");
    let causal = freshness("causal");
    let s = Sluice::start(&body(&users, &causal, &group(cluster, &[])));
    let mut c = mysql_async::Conn::from_url(s.url("app", "app", &db))
        .await
        .expect("connect");
    let read = "SELECT @@server_id + 0 * COUNT(*) FROM t";
    assert_eq!(server_id_of(&mut c, read).await, master);
    rewrite(&s, &body(&users, &causal, &group(cluster, &[(1, 1)])));
    sighup(&s, "ok");
    wait_reads_reach(&s, &mut c, read, replica).await;
    for i in 0..20 {
        c.query_drop(format!("INSERT INTO t VALUES ({i}, {i})"))
            .await
            .expect("insert");
        let n: Option<u32> = c.query_first("SELECT COUNT(*) FROM t").await.expect("count");
        assert_eq!(n, Some(i + 1), "a read missed this client's own write");
    }
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

#[tokio::test]
async fn weights_change_by_reload() {
    let cluster = shared_cluster();
    let ids = [server_id(&cluster.replicas[0]), server_id(&cluster.replicas[1])];
    let users = user("app", "app");
    let off = freshness("off");
    let s = Sluice::start(&body(&users, &off, &group(cluster, &[(0, 1), (1, 1)])));
    let mut c = connect(&s, "app", "app").await.expect("connect");
    wait_reads_reach(&s, &mut c, "SELECT @@server_id", ids[0]).await;
    wait_reads_reach(&s, &mut c, "SELECT @@server_id", ids[1]).await;
    let before = reads_on(&mut c, ids[0]).await;
    assert!(
        (60..=240).contains(&before),
        "weights 1:1 sent {before} of 300 reads to replica 0"
    );
    let in_rotation = |s: &Sluice| s.log().matches("replica healthy: in rotation").count();
    let rotations = in_rotation(&s);

    rewrite(&s, &body(&users, &off, &group(cluster, &[(0, 100), (1, 1)])));
    let summary = post_reload(&s, 200);
    assert!(summary.contains("weight 1 -> 100"), "{summary}");
    let after = reads_on(&mut c, ids[0]).await;
    assert!(
        after >= 270,
        "weights 100:1 sent only {after} of 300 reads to replica 0"
    );
    // Only weights changed: the group's freshness monitor was kept (a new
    // one would have put both replicas in rotation again).
    assert_eq!(in_rotation(&s), rotations, "log:\n{}", s.log());
}

/// How many of 300 reads reached server `id`.
async fn reads_on(c: &mut mysql_async::Conn, id: u32) -> u32 {
    let mut n = 0;
    for _ in 0..300 {
        if server_id_of(c, "SELECT @@server_id").await == id {
            n += 1;
        }
    }
    n
}

#[tokio::test]
async fn a_bad_file_is_rejected_and_the_running_configuration_kept() {
    let cluster = shared_cluster();
    let users = user("app", "app");
    let group = group(cluster, &[]);
    let s = Sluice::start(&body(&users, "", &group));
    let good = std::fs::read_to_string(s.config_path()).expect("read the configuration");

    // A YAML syntax error, by SIGHUP: logged with its line.
    rewrite_raw(&s, &format!("{good}users: [ {{ name: x\n"));
    sighup(&s, "error");
    let path = s.config_path().display().to_string();
    let log = s.log();
    let line = log
        .lines()
        .find(|l| l.contains("configuration reload failed"))
        .unwrap_or_else(|| panic!("no reload error in the log:\n{log}"));
    assert!(line.contains(&format!("{path}:")), "no file:line in {line}");
    assert!(line.contains("ERROR"), "not at ERROR: {line}");

    // A semantic error (unknown group in a placement), by POST /reload.
    let sharding =
        "sharding:\n  rules:\n    - { table: a.t, key: id, shards: 2, placement: [main, nowhere] }\n";
    rewrite(&s, &body(&users, sharding, &group));
    let err = post_reload(&s, 400);
    assert!(err.starts_with(&format!("{path}:")), "{err}");
    assert!(err.contains("nowhere"), "{err}");

    // A bad duration: the error names its line.
    rewrite(
        &s,
        &body(&users, "freshness:\n  probe_interval: 10 parsecs\n", &group),
    );
    let text = std::fs::read_to_string(s.config_path()).expect("read the configuration");
    let line = text
        .lines()
        .position(|l| l.contains("parsecs"))
        .expect("the bad line")
        + 1;
    let err = post_reload(&s, 400);
    let at = format!("{path}:{line}:");
    assert!(err.starts_with(&at), "expected {at}..., got {err}");

    // A key that needs a restart: the reload succeeds, the key is named.
    let other_port = free_port();
    rewrite_raw(
        &s,
        &format!(
            "listen: 127.0.0.1:{other_port}\nadmin_listen: 127.0.0.1:{}\n{}",
            s.admin_port,
            body(&format!("{users}{}", user("carol", "c")), "", &group)
        ),
    );
    let summary = post_reload(&s, 200);
    assert!(summary.contains("users added: carol"), "{summary}");
    assert!(
        s.log()
            .contains("`listen` changed but takes effect only after a restart"),
        "log:\n{}",
        s.log()
    );

    // Still running the good configuration: app logs in on the old port.
    let mut c = connect(&s, "app", "app").await.expect("app still logs in");
    let _: Option<u32> = c.query_first("SELECT 1").await.expect("query");
    assert_eq!(reloads(&s, "error"), 3.0);
    assert_eq!(metric(&s, "sluice_config_generation"), 2.0);
    assert_eq!(http_get(s.admin_port, "/reload").map(|r| r.0), Ok(405));
}

/// Sessions in flight across five reloads (replicas added, removed,
/// reweighted, freshness mode switched) see no error and read their own
/// writes throughout. Each client completes rounds between every two
/// reloads, so each reload falls among its statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_in_flight_are_not_broken_by_reloads() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;

    const CLIENTS: usize = 3;
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "reload_flight").await;
    let users = user("app", "app");
    let s = Sluice::start(&body(&users, &freshness("causal"), &group(cluster, &[(0, 1)])));
    let url = s.url("app", "app", &db);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds: Arc<[AtomicU32; CLIENTS]> = Arc::new(Default::default());
    let mut clients = Vec::new();
    for k in 0..CLIENTS {
        let (url, stop, rounds) = (url.clone(), stop.clone(), rounds.clone());
        clients.push(tokio::spawn(async move {
            let mut c = mysql_async::Conn::from_url(url).await?;
            let stmt = c.prep("SELECT v FROM t WHERE id = ?").await?;
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let id = k as u32 * 1_000_000 + n;
                c.query_drop(format!("INSERT INTO t VALUES ({id}, {n})")).await?;
                let _: Option<u32> = c.query_first("SELECT COUNT(*) FROM t").await?;
                c.query_drop("BEGIN").await?;
                c.query_drop(format!("UPDATE t SET v = v + 1 WHERE id = {id}"))
                    .await?;
                let _: Option<u32> = c.query_first("SELECT @@server_id").await?;
                c.query_drop("COMMIT").await?;
                let v: Option<u32> = c.exec_first(&stmt, (id,)).await?;
                assert_eq!(v, Some(n + 1), "client {k} read a stale row");
                n += 1;
                rounds[k].store(n, Ordering::Relaxed);
            }
            Ok::<u32, mysql_async::Error>(n)
        }));
    }
    // Wait until every client has completed another round (or one ended).
    let next_rounds = |clients: &[tokio::task::JoinHandle<_>]| {
        let before: Vec<u32> = rounds.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        while rounds
            .iter()
            .zip(&before)
            .any(|(r, b)| r.load(Ordering::Relaxed) <= *b)
        {
            if clients.iter().any(|c| c.is_finished()) {
                return;
            }
            assert!(Instant::now() < deadline, "clients stalled; log:\n{}", s.log());
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let configs = [
        body(&users, &freshness("causal"), &group(cluster, &[(0, 1), (1, 1)])),
        body(&users, &freshness("causal"), &group(cluster, &[(1, 1)])),
        body(&users, &freshness("strict"), &group(cluster, &[(1, 1)])),
        body(&users, &freshness("causal"), &group(cluster, &[(0, 5), (1, 1)])),
        body(&users, &freshness("causal"), &group(cluster, &[])),
    ];
    for (i, cfg) in configs.iter().enumerate() {
        next_rounds(&clients);
        rewrite(&s, cfg);
        if i % 2 == 0 {
            sighup(&s, "ok");
        } else {
            post_reload(&s, 200);
        }
    }
    next_rounds(&clients);
    stop.store(true, Ordering::Relaxed);
    for (k, client) in clients.into_iter().enumerate() {
        let n = client
            .await
            .expect("client task")
            .unwrap_or_else(|e| panic!("client {k} saw an error across reloads: {e}\nlog:\n{}", s.log()));
        assert!(n >= 6, "client {k} ran only {n} rounds; log:\n{}", s.log());
    }
    assert_eq!(metric(&s, "sluice_config_generation"), 6.0);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// A write that commits while a reload starts new freshness monitors (here: other
/// probe settings). The new monitor read its causal target before the commit, and
/// only the old one saw the write; the session's next read, on the new monitor, must
/// still see it. The replica lacks the write (its SQL thread is stopped) and the new
/// monitor probes again only seconds later: the read must not go there.
#[tokio::test]
async fn a_write_committed_across_a_reload_is_read_back() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "reload_causal").await;
    cluster.master.sql(&format!("INSERT INTO {db}.t VALUES (1, 0)"));
    cluster.wait_replicas_caught_up();
    let users = user("app", "app");
    let s = Sluice::start(&body(&users, &freshness("causal"), &group(&cluster, &[(0, 1)])));
    let mut c = mysql_async::Conn::from_url(s.url("app", "app", &db))
        .await
        .expect("connect");
    wait_replica_reads(&s, &db, server_id(&cluster.master)).await;
    cluster.replicas[0].stop_sql_thread();
    // The write runs for a second; the reload lands while it does.
    let write = tokio::spawn(async move {
        c.query_drop("UPDATE t SET v = 1 + SLEEP(1) WHERE id = 1")
            .await
            .expect("the slow write");
        c
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    rewrite(
        &s,
        &body(
            &users,
            "freshness:\n  mode: causal\n  probe_interval: 5s\n  probe_timeout: 500ms\n  rise: 1\n",
            &group(&cluster, &[(0, 1)]),
        ),
    );
    sighup(&s, "ok");
    let mut c = write.await.expect("writer");
    let v: Option<u32> = c
        .query_first("SELECT v FROM t WHERE id = 1")
        .await
        .expect("read back");
    cluster.replicas[0].start_sql_thread();
    assert_eq!(v, Some(1), "the session's own write, read after the reload");
}
