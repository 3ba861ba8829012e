//! Freshness through the session pipeline: writes that leave a mark however
//! the session commits them, and read-only transactions that see what they
//! must. The replica's SQL thread is stopped, so any read it serves after a
//! write is stale; every check asserts what the read returned.

mod common;

use common::cluster::*;
use common::reads::*;
use mysql_async::prelude::*;

struct Lagging {
    cluster: Cluster,
    db: String,
    sluice: Sluice,
}

/// An own cluster (one replica), causal mode, reads reaching the replica,
/// then the replica's SQL thread stopped.
async fn lagging() -> Lagging {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fs").await;
    cluster.master.sql(&format!("INSERT INTO {db}.t VALUES (1, 1)"));
    cluster.wait_replicas_caught_up();
    // Probes far apart: only sluice's own snapshots after writes move the
    // causal target during a test, so a write that leaves no mark shows.
    let yaml = "freshness:\n  mode: causal\n  probe_interval: 5s\n  probe_timeout: 500ms\n";
    let sluice = Sluice::start_for(&cluster, yaml);
    wait_replica_reads(&sluice, &db, server_id(&cluster.master)).await;
    cluster.replicas[0].sql("STOP SLAVE SQL_THREAD");
    Lagging { cluster, db, sluice }
}

async fn v_of(c: &mut mysql_async::Conn, id: i64) -> Option<i64> {
    c.query_first(format!("SELECT v FROM t WHERE id = {id}"))
        .await
        .expect("read")
}

#[tokio::test]
async fn own_cluster_autocommit_off_commits_are_seen_by_other_clients() {
    let l = lagging().await;
    let mut writer = sluice_conn(&l.sluice, &l.db).await;
    let mut reader = sluice_conn(&l.sluice, &l.db).await;
    // PyMySQL, mysqlclient, Django, JDBC pools: autocommit off.
    writer
        .query_drop("SET autocommit = 0")
        .await
        .expect("autocommit 0");
    for (id, how) in [(10, "COMMIT"), (11, "COMMIT AND CHAIN"), (12, "BEGIN")] {
        writer
            .query_drop(format!("INSERT INTO t VALUES ({id}, {id})"))
            .await
            .expect("insert");
        writer
            .query_drop(how)
            .await
            .unwrap_or_else(|e| panic!("{how}: {e}"));
        assert_eq!(
            v_of(&mut reader, id).await,
            Some(id),
            "after {how}, another client reads stale"
        );
    }
    writer.query_drop("COMMIT").await.expect("commit");
    // A prepared INSERT in autocommit mode, and SET STATEMENT ... FOR INSERT.
    writer
        .query_drop("SET autocommit = 1")
        .await
        .expect("autocommit 1");
    writer
        .exec_drop("INSERT INTO t VALUES (?, ?)", (20, 20))
        .await
        .expect("prepared insert");
    assert_eq!(
        v_of(&mut reader, 20).await,
        Some(20),
        "prepared write not covered"
    );
    writer
        .query_drop("SET STATEMENT max_statement_time = 10 FOR INSERT INTO t VALUES (21, 21)")
        .await
        .expect("set statement insert");
    assert_eq!(
        v_of(&mut reader, 21).await,
        Some(21),
        "SET STATEMENT ... FOR INSERT not covered"
    );
    drop(l.cluster);
}

#[tokio::test]
async fn own_cluster_prepared_and_dynamic_ddl_count_as_writing_everything() {
    let l = lagging().await;
    let mut writer = sluice_conn(&l.sluice, &l.db).await;
    let mut reader = sluice_conn(&l.sluice, &l.db).await;
    // TRUNCATE fires no trigger: only the global row can mark it.
    writer
        .exec_drop("TRUNCATE TABLE t", ())
        .await
        .expect("prepared truncate");
    assert_eq!(
        v_of(&mut reader, 1).await,
        None,
        "prepared TRUNCATE: stale row read"
    );
    writer
        .query_drop("INSERT INTO t VALUES (2, 2)")
        .await
        .expect("insert");
    assert_eq!(v_of(&mut reader, 2).await, Some(2));
    writer
        .query_drop("EXECUTE IMMEDIATE 'TRUNCATE TABLE t'")
        .await
        .expect("immediate truncate");
    assert_eq!(
        v_of(&mut reader, 2).await,
        None,
        "EXECUTE IMMEDIATE TRUNCATE: stale row read"
    );
}

#[tokio::test]
async fn own_cluster_read_only_transaction_sees_commits_before_its_first_read() {
    let l = lagging().await;
    let mut writer = sluice_conn(&l.sluice, &l.db).await;
    let mut reader = sluice_conn(&l.sluice, &l.db).await;
    // START on the replica while it is still fresh for everything so far...
    l.cluster.replicas[0].sql("START SLAVE SQL_THREAD");
    l.cluster.wait_replicas_caught_up();
    reader
        .query_drop("START TRANSACTION READ ONLY")
        .await
        .expect("start ro");
    l.cluster.replicas[0].sql("STOP SLAVE SQL_THREAD");
    // ...a commit lands before the transaction's first read (REPEATABLE
    // READ: the snapshot starts at the first read, and must include it).
    writer
        .query_drop("INSERT INTO t VALUES (30, 30)")
        .await
        .expect("insert");
    assert_eq!(
        v_of(&mut reader, 30).await,
        Some(30),
        "first read of the ro transaction is stale"
    );
    // The snapshot holds from then on, as on the server.
    writer
        .query_drop("INSERT INTO t VALUES (31, 31)")
        .await
        .expect("insert");
    assert_eq!(
        v_of(&mut reader, 31).await,
        None,
        "repeatable read broke its snapshot"
    );
    reader.query_drop("COMMIT").await.expect("commit");
    // READ COMMITTED: every statement sees what committed before it.
    reader
        .query_drop("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        .await
        .expect("rc");
    l.cluster.replicas[0].sql("START SLAVE SQL_THREAD");
    l.cluster.wait_replicas_caught_up();
    reader
        .query_drop("START TRANSACTION READ ONLY")
        .await
        .expect("start ro");
    assert_eq!(v_of(&mut reader, 31).await, Some(31));
    l.cluster.replicas[0].sql("STOP SLAVE SQL_THREAD");
    writer
        .query_drop("INSERT INTO t VALUES (32, 32)")
        .await
        .expect("insert");
    assert_eq!(
        v_of(&mut reader, 32).await,
        Some(32),
        "read committed statement is stale"
    );
    reader.query_drop("COMMIT").await.expect("commit");
}
