//! A database whose reads sluice may send to replicas.

use super::cluster::{unique_name, Cluster, SLUICE_PASSWORD, SLUICE_USER};

/// Create a database with one table `t (id INT PRIMARY KEY, v INT)`, install
/// sluice's triggers on it, and wait until the replicas have it all.
pub async fn tracked_db(cluster: &Cluster, prefix: &str) -> String {
    let db = unique_name(prefix);
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT NOT NULL)"
    ));
    let pool = mysql_async::Pool::new(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db).as_str());
    let mut conn = pool.get_conn().await.expect("connect to master");
    sluice::freshness::triggers::install(&mut conn, "sluice", &db, 16)
        .await
        .expect("install triggers");
    drop(conn);
    pool.disconnect().await.expect("disconnect");
    cluster.wait_replicas_caught_up();
    db
}
