//! Replica eligibility in every mode and the topology's edges (issue 43): a
//! replica with a stopped SQL thread or replicating from another server is out
//! of rotation with its reason; two writable servers in a `follow` group
//! refuse writes naming both, and no write reaches either; `follow` refuses
//! to start without the grant to read replication status; `POST /v1/master`.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::failover::{promote, repoint, wait_for};
use common::http::{http_get, http_post, metric};
use common::reads::*;
use mysql_async::prelude::*;

fn reason_series(replica: &Server, reason: &str) -> String {
    format!(
        "sluice_replica_eligibility{{group=\"main\",replica=\"{}\",reason=\"{reason}\"}}",
        replica.addr()
    )
}

/// Which servers answered `n` plain reads of `t`.
async fn readers(s: &Sluice, db: &str, n: usize) -> Vec<u32> {
    let mut c = sluice_conn(s, db).await;
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(who(&mut c, "SELECT @@server_id + 0 * COUNT(*) FROM t").await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_leave_rotation_with_their_reason_in_static_mode() {
    let cluster = Cluster::start(2);
    let (m, r1, r2) = (&cluster.master, &cluster.replicas[0], &cluster.replicas[1]);
    let db = tracked_db(&cluster, "elig").await;
    let s = Sluice::start(&format!(
        // The default topology.interval (1s): the same file runs on a sluice
        // from before eligibility, where this test fails.
        "{}{}",
        Sluice::config_for(&cluster),
        freshness_yaml("causal")
    ));
    wait_replica_reads(&s, &db, m.server_id).await;
    assert_eq!(metric(s.admin_port, &reason_series(r1, "eligible")), Some(1.0));

    // R1's SQL thread stops: out of rotation, though its counters are fresh.
    r1.stop_sql_thread();
    wait_for("R1 sql_thread_stopped", &s, || {
        metric(s.admin_port, &reason_series(r1, "sql_thread_stopped")) == Some(1.0)
    });
    assert!(!readers(&s, &db, 30).await.contains(&r1.server_id));
    // R2 replicates from R1 instead of the master.
    repoint(r2, r1, "slave_pos", "SLAVE");
    wait_for("R2 replicates_from_another_master", &s, || {
        metric(s.admin_port, &reason_series(r2, "replicates_from_another_master")) == Some(1.0)
    });
    assert!(readers(&s, &db, 30).await.iter().all(|w| *w == m.server_id));
    let (_, topo) = http_get(s.admin_port, "/v1/topology").expect("GET /v1/topology");
    assert!(topo.contains("\"reason\": \"sql_thread_stopped\""), "{topo}");
    assert!(
        topo.contains("\"reason\": \"replicates_from_another_master\""),
        "{topo}"
    );

    // Back: R1 applies again and serves reads.
    r1.start_sql_thread();
    wait_for("R1 eligible", &s, || {
        metric(s.admin_port, &reason_series(r1, "eligible")) == Some(1.0)
    });
    wait_replica_reads(&s, &db, m.server_id).await;

    // A static group follows nothing by itself, but is told: POST
    // /v1/master switches once the server reads read_only=0.
    let post =
        |addr: String| http_post(s.admin_port, &format!("/v1/master?group=main&addr={addr}")).expect("POST");
    let (code, body) = post(r1.addr());
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("read_only=1"), "{body}");
    let (code, body) = post("127.0.0.1:1".into());
    assert_eq!(code, 409, "{body}");
    promote(r1);
    let (code, body) = post(r1.addr());
    assert_eq!(code, 200, "{body}");
    let mut w = sluice_conn(&s, &db).await;
    w.query_drop("INSERT INTO t VALUES (7, 7)")
        .await
        .expect("write after POST /v1/master");
    assert_eq!(r1.sql(&format!("SELECT COUNT(*) FROM {db}.t WHERE id = 7")), "1");
    assert_eq!(m.sql(&format!("SELECT COUNT(*) FROM {db}.t WHERE id = 7")), "0");
    // R2 replicates from R1, the master now: eligible again.
    wait_for("R2 eligible", &s, || {
        metric(s.admin_port, &reason_series(r2, "eligible")) == Some(1.0)
    });
    assert_eq!(
        metric(s.admin_port, "sluice_master_changes_total{group=\"main\"}"),
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writable_servers_refuse_writes_naming_both_until_one_remains() {
    let cluster = Cluster::start(2);
    let (m, r1, r2) = (&cluster.master, &cluster.replicas[0], &cluster.replicas[1]);
    let db = tracked_db(&cluster, "split").await;
    let s = Sluice::start(&format!(
        "{}groups:\n{}    topology: follow\ntopology:\n  interval: 100ms\n{}",
        Sluice::users_yaml(),
        Sluice::group_yaml("main", &cluster),
        freshness_yaml("causal")
    ));
    wait_replica_reads(&s, &db, m.server_id).await;
    let mut w = sluice_conn(&s, &db).await;
    w.query_drop("INSERT INTO t VALUES (1, 1)").await.expect("insert");
    r1.wait_for_gtid(&m.gtid_binlog_pos(), Duration::from_secs(10));
    r2.wait_for_gtid(&m.gtid_binlog_pos(), Duration::from_secs(10));
    // R1 is made writable while the master still is: a split brain.
    r1.sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0");
    wait_for("2 writable servers", &s, || {
        metric(s.admin_port, "sluice_topology_writable_servers{group=\"main\"}") == Some(2.0)
    });
    let (m_pos, r1_pos) = (m.gtid_binlog_pos(), r1.gtid_binlog_pos());
    let mut refused = 0;
    for id in 2..12 {
        // No default database: a login with one asks the master about it.
        let mut c = sluice_conn(&s, "").await;
        match c
            .query_drop(format!("INSERT INTO {db}.t VALUES ({id}, {id})"))
            .await
        {
            Err(mysql_async::Error::Server(e)) => {
                assert_eq!(e.code, 1290, "{}", e.message);
                assert!(
                    e.message.contains(&m.addr()) && e.message.contains(&r1.addr()),
                    "{}",
                    e.message
                );
                refused += 1;
            }
            other => panic!("a write while two servers are writable: {other:?}"),
        }
    }
    assert_eq!(refused, 10);
    assert_eq!(
        (m.gtid_binlog_pos(), r1.gtid_binlog_pos()),
        (m_pos.clone(), r1_pos),
        "a write reached a server"
    );
    // A reload of the file keeps the group without a master.
    let mut text = std::fs::read_to_string(s.config_path()).expect("config");
    text.push_str("limits:\n  idle_client_timeout: 1h\n");
    std::fs::write(s.config_path(), text).expect("rewrite config");
    let (code, body) = http_post(s.admin_port, "/reload").expect("POST /reload");
    assert_eq!(code, 200, "{body}");
    let mut c = sluice_conn(&s, "").await;
    let e = c
        .query_drop(format!("INSERT INTO {db}.t VALUES (60, 60)"))
        .await
        .expect_err("still no master after a reload");
    assert!(
        matches!(&e, mysql_async::Error::Server(x) if x.code == 1290),
        "{e}"
    );
    // The earlier session: its next statement says the master changed.
    let e = w
        .query_drop("INSERT INTO t VALUES (50, 50)")
        .await
        .expect_err("no master");
    assert!(
        matches!(&e, mysql_async::Error::Server(x) if x.code == 1158 || x.code == 1290),
        "{e}"
    );

    // The operator names R1 (POST /v1/master, the console's MASTER): it is
    // the master while it stays writable, though the old one still is.
    let (code, body) =
        http_post(s.admin_port, &format!("/v1/master?group=main&addr={}", r1.addr())).expect("POST");
    assert_eq!(code, 200, "{body}");
    for id in 100..105 {
        let mut c = sluice_conn(&s, &db).await;
        c.query_drop(format!("INSERT INTO t VALUES ({id}, {id})"))
            .await
            .expect("write once the operator named the master");
    }
    // Several probe rounds later, still R1, and nothing reached the old one.
    std::thread::sleep(Duration::from_millis(500));
    let mut c = sluice_conn(&s, &db).await;
    c.query_drop("INSERT INTO t VALUES (105, 105)")
        .await
        .expect("write");
    assert_eq!(
        r1.sql(&format!("SELECT COUNT(*) FROM {db}.t WHERE id >= 100")),
        "6"
    );
    assert_eq!(m.gtid_binlog_pos(), m_pos, "a write reached the old master");
    assert_eq!(
        metric(s.admin_port, "sluice_topology_writable_servers{group=\"main\"}"),
        Some(2.0)
    );
    // POST /v1/master refuses a read-only server.
    m.sql("SET GLOBAL read_only=1");
    let (code, body) = http_post(s.admin_port, &format!("/v1/master?addr={}", m.addr())).expect("POST");
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("read_only=1"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_refuses_to_start_without_the_grant_to_read_replication_status() {
    let cluster = Cluster::start(1);
    cluster.master.sql(
        "CREATE USER 'noslave'@'%' IDENTIFIED BY 'pw'; GRANT SELECT, INSERT, UPDATE, DELETE ON *.* TO 'noslave'@'%'",
    );
    cluster.wait_replicas_caught_up();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        "listen: 127.0.0.1:{}\nadmin_listen: 127.0.0.1:{}\n{}groups:\n  - name: main\n    topology: follow\n    \
         master: {{ addr: {}, user: noslave, password: pw }}\n    replicas:\n      - {{ addr: {}, user: noslave, password: pw }}\n",
        free_port(),
        free_port(),
        Sluice::users_yaml(),
        cluster.master.addr(),
        cluster.replicas[0].addr()
    );
    let path = dir.path().join("sluice.yaml");
    std::fs::write(&path, harness_defaults(config)).expect("write config");
    let bin = std::env::var_os("SLUICE_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_sluice").into());
    let mut child = std::process::Command::new(bin)
        .args(["serve", "--config"])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sluice");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sluice kept running without the grant");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().expect("output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!status.success(), "{text}");
    assert!(
        text.contains("SLAVE MONITOR") && text.contains("topology: follow"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_warns_when_a_server_would_lose_or_reorder_writes_in_a_promotion() {
    let cluster = Cluster::start_with_args(1, &["--gtid-strict-mode=0".to_owned()]);
    let s = Sluice::start(&format!(
        "{}groups:\n{}    topology: follow\n",
        Sluice::users_yaml(),
        Sluice::group_yaml("main", &cluster)
    ));
    let log = s.log();
    for server in [&cluster.master, &cluster.replicas[0]] {
        let warning = format!("gtid_strict_mode is off on {}", server.addr());
        assert!(log.contains(&warning), "no warning `{warning}`:\n{log}");
    }
    assert!(!log.contains("log_slave_updates is off"), "{log}");
}

/// Which servers answered `n` plain reads of `table`, from the `mariadb` CLI
/// without a default database (its login then needs no master, and it asks
/// nothing at connect time as mysql_async does).
async fn readers_of(s: &Sluice, table: &str, n: usize) -> Result<Vec<u32>, String> {
    let sql = format!("SELECT @@server_id + 0 * COUNT(*) FROM {table};").repeat(n);
    let out = std::process::Command::new("mariadb")
        .args(["-h127.0.0.1", &format!("-P{}", s.port), &format!("-u{APP_USER}")])
        .args([&format!("-p{APP_PASSWORD}"), "--ssl=0", "-N", "-B", "-e", &sql])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// `replication_unverified` (issue 43's rule): a replica whose source cannot
/// be proved to be the master serves no read. A `static` group whose account
/// may not read replication status: the replica is out of rotation, reads go
/// to the master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_source_cannot_be_read_serves_no_read() {
    let cluster = Cluster::start(1);
    let (m, r) = (&cluster.master, &cluster.replicas[0]);
    let db = unique_name("unverified");
    m.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY); \
         CREATE USER 'nomon'@'%' IDENTIFIED BY 'pw'; GRANT SELECT, INSERT ON *.* TO 'nomon'@'%'"
    ));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start(&format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {}, user: nomon, password: pw }}\n    replicas:\n      \
         - {{ addr: {}, user: nomon, password: pw }}\nfreshness: {{ mode: off }}\n",
        Sluice::users_yaml(),
        m.addr(),
        r.addr()
    ));
    wait_for("replication_unverified", &s, || {
        metric(s.admin_port, &reason_series(r, "replication_unverified")) == Some(1.0)
    });
    let eligible = format!(
        "sluice_replica_eligible{{group=\"main\",replica=\"{}\"}}",
        r.addr()
    );
    assert_eq!(metric(s.admin_port, &eligible), Some(0.0));
    let who = readers_of(&s, &format!("{db}.t"), 30).await.expect("reads");
    assert!(who.iter().all(|w| *w == m.server_id), "{who:?}");
    assert!(s.log().contains("SLAVE MONITOR"), "{}", s.log());
}

/// The master is down when sluice starts, so its `@@server_id` is unknown:
/// a replica still serves reads when the address it replicates from is the
/// group's `master.addr` (proved), and not when it replicates from elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_master_never_reached_a_replica_is_proved_by_its_source_address() {
    let cluster = Cluster::start(2);
    let (m, r1, r2) = (&cluster.master, &cluster.replicas[0], &cluster.replicas[1]);
    let db = unique_name("nomaster");
    m.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY)"
    ));
    cluster.wait_replicas_caught_up();
    // R2 replicates from R1: not the group's master.
    repoint(r2, r1, "slave_pos", "SLAVE");
    m.stop();
    let s = Sluice::start(&format!(
        "{}freshness: {{ mode: off }}\n",
        Sluice::config_for(&cluster)
    ));
    wait_for("R1 eligible by address", &s, || {
        metric(s.admin_port, &reason_series(r1, "eligible")) == Some(1.0)
    });
    wait_for("R2 unverified", &s, || {
        metric(s.admin_port, &reason_series(r2, "replication_unverified")) == Some(1.0)
    });
    // Eligible (the follower's round) and probed in rotation (the freshness
    // monitor's): the read's route asks both.
    wait_for("R1 in rotation", &s, || {
        metric(
            s.admin_port,
            "sluice_replica_in_rotation{group=\"main\",replica=\"replica0\"}",
        ) == Some(1.0)
    });
    let who = readers_of(&s, &format!("{db}.t"), 30)
        .await
        .unwrap_or_else(|e| panic!("reads with the master down: {e}\n{}", s.log()));
    assert!(who.iter().all(|w| *w == r1.server_id), "{who:?}");
}

/// A read of `db.t` from the `mariadb` CLI naming `db` at login (`-D`, the
/// handshake's database) and, in a second session, by `use db` (COM_INIT_DB:
/// the CLI sends it when the database differs from the current one).
/// `Ok` with the server ids that answered, or the CLI's error.
fn login_with_db(s: &Sluice, db: &str) -> Result<Vec<u32>, String> {
    reads_naming_db(s, db, true)
}

/// [`login_with_db`]; `init_db`: the second session (`use db`) too.
fn reads_naming_db(s: &Sluice, db: &str, init_db: bool) -> Result<Vec<u32>, String> {
    let read = "SELECT @@server_id + 0 * COUNT(*) FROM t";
    let mut who = Vec::new();
    let use_db = format!("use {db}; {read}");
    let forms = [vec!["-D", db, "-e", read], vec!["-e", use_db.as_str()]];
    for args in forms.iter().take(if init_db { 2 } else { 1 }) {
        let out = std::process::Command::new("mariadb")
            .args(["-h127.0.0.1", &format!("-P{}", s.port), &format!("-u{APP_USER}")])
            .args([&format!("-p{APP_PASSWORD}"), "--ssl=0", "-N", "-B"])
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("{args:?}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        who.push(
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .map_err(|e| format!("{e}"))?,
        );
    }
    Ok(who)
}

/// A login naming a database, and COM_INIT_DB, work from an eligible replica
/// while the master is held back by `PAUSE WRITES` (they waited behind it,
/// then 1205) and while the group has no master (they got 1290).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_named_at_login_is_confirmed_by_a_replica_without_the_master() {
    let cluster = Cluster::start(2);
    let (m, r1, r2) = (&cluster.master, &cluster.replicas[0], &cluster.replicas[1]);
    let db = unique_name("dblogin");
    m.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY)"
    ));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start(&format!(
        "{}groups:\n{}    topology: follow\ntopology:\n  interval: 100ms\nfreshness: {{ mode: \"off\" }}\n\
         limits:\n  pause_timeout: 3s\n",
        Sluice::users_yaml(),
        Sluice::group_yaml("main", &cluster),
    ));
    wait_for("R2 eligible", &s, || {
        metric(s.admin_port, &reason_series(r2, "eligible")) == Some(1.0)
    });
    // Replicas up (health probes) and serving reads.
    let replicas = [r1.server_id, r2.server_id];
    wait_for("reads on replicas", &s, || {
        login_with_db(&s, &db).is_ok_and(|who| who.iter().all(|w| replicas.contains(w)))
    });

    // PAUSE WRITES: the master is held back, replicas go on.
    let (code, body) = http_post(s.admin_port, "/v1/pause?writes=1").expect("POST /v1/pause");
    assert_eq!(code, 200, "{body}");
    let t = Instant::now();
    let who = login_with_db(&s, &db);
    let took = t.elapsed();
    let (code, body) = http_post(s.admin_port, "/v1/resume").expect("POST /v1/resume");
    assert_eq!(code, 200, "{body}");
    let who = who.unwrap_or_else(|e| panic!("login with a database under PAUSE WRITES: {e}\n{}", s.log()));
    assert!(who.iter().all(|w| replicas.contains(w)), "{who:?}");
    assert!(took < Duration::from_secs(2), "the login waited {took:?}");

    // No master: R1 made writable while the master still is.
    r1.sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0");
    wait_for("two writable servers", &s, || {
        metric(s.admin_port, "sluice_topology_writable_servers{group=\"main\"}") == Some(2.0)
    });
    let who = login_with_db(&s, &db).unwrap_or_else(|e| panic!("login with a database, no master: {e}"));
    assert_eq!(who, vec![r2.server_id, r2.server_id]);
    // Writes are still refused.
    let out = std::process::Command::new("mariadb")
        .args(["-h127.0.0.1", &format!("-P{}", s.port), &format!("-u{APP_USER}")])
        .args([
            &format!("-p{APP_PASSWORD}"),
            "--ssl=0",
            "-D",
            &db,
            "-e",
            "INSERT INTO t VALUES (1)",
        ])
        .output()
        .expect("mariadb");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1290"), "{out:?}");
}

/// The master cannot be reached (stopped, nobody promoted): a login naming a
/// database, and COM_INIT_DB, are confirmed by the replica (they got 1429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_named_at_login_is_confirmed_by_a_replica_while_the_master_is_down() {
    let cluster = Cluster::start(1);
    let (m, r) = (&cluster.master, &cluster.replicas[0]);
    let db = unique_name("dbdown");
    m.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY)"
    ));
    cluster.wait_replicas_caught_up();
    let s = Sluice::start(&format!(
        "{}freshness: {{ mode: \"off\" }}\nbackend: {{ connect_timeout: 1s }}\n",
        Sluice::config_for(&cluster)
    ));
    wait_for("reads on the replica", &s, || {
        reads_naming_db(&s, &db, false).is_ok_and(|who| who == vec![r.server_id])
    });
    m.stop();
    let who = reads_naming_db(&s, &db, true)
        .unwrap_or_else(|e| panic!("login with a database, master down: {e}\n{}", s.log()));
    assert_eq!(who, vec![r.server_id, r.server_id]);
}
