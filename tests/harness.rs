//! Tests of the test harness itself (tests/common/cluster.rs). They start MariaDB but
//! never sluice, so they pass regardless of the state of the proxy.

mod common;

use common::cluster::{native_password_hash, shared_cluster, unique_name, Cluster, HASH_PASSWORD, TEST_DB};
use std::time::{Duration, Instant};

#[test]
fn harness_replication_and_lag_on_demand() {
    let t0 = Instant::now();
    let c = Cluster::start(1);
    eprintln!(
        "harness: cluster (master + 1 replica) ready in {:.2?}",
        t0.elapsed()
    );
    let (m, r) = (&c.master, &c.replicas[0]);

    m.sql(&format!(
        "CREATE TABLE {TEST_DB}.h (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO {TEST_DB}.h VALUES (1, 'one')"
    ));
    c.wait_replicas_caught_up();
    assert_eq!(r.sql(&format!("SELECT v FROM {TEST_DB}.h WHERE id = 1")), "one");
    assert_eq!(r.sql("SELECT @@read_only"), "1");
    assert_ne!(m.sql("SELECT @@server_id"), r.sql("SELECT @@server_id"));

    // Lag on demand: the replica receives the event but does not apply it.
    r.stop_sql_thread();
    m.sql(&format!("INSERT INTO {TEST_DB}.h VALUES (2, 'two')"));
    let master_pos = m.gtid_binlog_pos();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(r.sql(&format!("SELECT COUNT(*) FROM {TEST_DB}.h")), "1");
    assert_ne!(r.gtid_slave_pos(), master_pos);
    r.start_sql_thread();
    c.wait_replicas_caught_up();
    assert_eq!(r.sql(&format!("SELECT COUNT(*) FROM {TEST_DB}.h")), "2");
    assert_eq!(r.gtid_slave_pos(), master_pos);

    // The hash helper matches the server's own mysql_native_password hash.
    assert_eq!(
        native_password_hash(HASH_PASSWORD),
        m.sql(&format!("SELECT PASSWORD('{HASH_PASSWORD}')"))
    );
    eprintln!("harness: total {:.2?}", t0.elapsed());
}

#[test]
fn harness_faults_pause_kill_restart() {
    let c = Cluster::start(1);
    let (m, r) = (&c.master, &c.replicas[0]);
    m.sql(&format!("CREATE TABLE {TEST_DB}.f (id INT PRIMARY KEY)"));

    // A paused server accepts TCP but answers nothing.
    r.pause();
    let t = Instant::now();
    let res = std::thread::scope(|s| {
        let h = s.spawn(|| r.try_sql("SELECT 1"));
        std::thread::sleep(Duration::from_millis(500));
        r.resume();
        h.join().expect("join")
    });
    assert!(res.is_ok(), "query after resume: {res:?}");
    assert!(
        t.elapsed() >= Duration::from_millis(450),
        "query answered while paused"
    );

    // Crash the master, bring it back; the replica reconnects by itself.
    let old_pid = m.pid();
    m.kill();
    assert!(!m.is_running());
    assert!(m.try_sql("SELECT 1").is_err());
    m.restart();
    assert_ne!(m.pid(), old_pid);
    m.sql(&format!("INSERT INTO {TEST_DB}.f VALUES (1)"));
    c.wait_replicas_caught_up();
    assert_eq!(r.sql(&format!("SELECT COUNT(*) FROM {TEST_DB}.f")), "1");

    // Clean restart of the replica.
    r.restart();
    m.sql(&format!("INSERT INTO {TEST_DB}.f VALUES (2)"));
    c.wait_replicas_caught_up();
    assert_eq!(r.sql(&format!("SELECT COUNT(*) FROM {TEST_DB}.f")), "2");
}

#[test]
fn harness_shared_cluster() {
    let c = shared_cluster();
    let t = unique_name("shared");
    c.master.sql(&format!(
        "CREATE TABLE {TEST_DB}.{t} (id INT PRIMARY KEY); INSERT INTO {TEST_DB}.{t} VALUES (7)"
    ));
    c.wait_replicas_caught_up();
    for r in &c.replicas {
        assert_eq!(r.sql(&format!("SELECT id FROM {TEST_DB}.{t}")), "7");
    }
    c.master.sql(&format!("DROP TABLE {TEST_DB}.{t}"));
}
