//! Sub-tables in two backend groups: `pr` has 4 sub-tables, `pr_0`/`pr_1` in group `main`
//! (the shared cluster) and `pr_2`/`pr_3` in group `b` (a cluster of this test's own, with
//! one replica whose replication the test stops). The unsharded reference table `ref` lives
//! on main's master.
//!
//! Checked: DDL reaches both groups; reads (text and prepared) match the reference; a
//! write whose rows fall in one group works, one spanning both is refused with nothing
//! written; a transaction writes to one group only (a second is refused, the first group's
//! writes commit or roll back with the client's COMMIT/ROLLBACK), and reads in it see its
//! own writes; scatter reads use group b's own replica; the query log (`log.sql_log`)
//! names each rewritten statement and its backend, and is silent for unsharded statements.

mod common;

use std::time::Duration;

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

const NOT_SUPPORTED: u16 = 1235;
const COLS: &str = "id, tid, user_id, subject, amount";

fn schema(table: &str) -> String {
    format!(
        "CREATE TABLE `{table}` (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, user_id INT NOT NULL, \
         subject VARCHAR(40) NOT NULL DEFAULT '', amount DECIMAL(10,2) NOT NULL DEFAULT 0, KEY (tid)) \
         ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    )
}

fn row(i: i64) -> String {
    let tid = (i * 7919) % 97;
    format!(
        "({i}, {tid}, {}, 'subject {}', {}.{:02})",
        i % 13,
        i % 17,
        (i * 31) % 1000,
        i % 100
    )
}

/// Group of a tid: sub-tables 0 and 1 in main (0), 2 and 3 in b (1).
fn group_of(tid: i64) -> usize {
    usize::from(tid % 4 >= 2)
}

async fn connect(url: &str) -> Conn {
    Conn::from_url(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

fn code(e: &mysql_async::Error) -> u16 {
    match e {
        mysql_async::Error::Server(s) => s.code,
        _ => 0,
    }
}

async fn rows(conn: &mut Conn, sql: &str) -> Vec<Vec<Value>> {
    let r: Vec<Row> = conn.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    r.into_iter().map(Row::unwrap).collect()
}

async fn count(conn: &mut Conn, sql: &str) -> i64 {
    conn.query_first(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .expect("a row")
}

/// `sql` (with `{t}`) through sluice on `pr` and directly on `ref`, as text and prepared.
async fn same(sl: &mut Conn, direct: &mut Conn, sql: &str, params: Vec<Value>) {
    let (on_pr, on_ref) = (sql.replace("{t}", "pr"), sql.replace("{t}", "ref"));
    let want: Vec<Row> = direct
        .exec(&on_ref, params.clone())
        .await
        .unwrap_or_else(|e| panic!("direct {sql}: {e}"));
    let got: Vec<Row> = sl
        .exec(&on_pr, params.clone())
        .await
        .unwrap_or_else(|e| panic!("sluice {sql}: {e}"));
    let (want, got): (Vec<_>, Vec<_>) = (
        want.into_iter().map(Row::unwrap).collect(),
        got.into_iter().map(Row::unwrap).collect(),
    );
    assert_eq!(got, want, "prepared {sql} {params:?}");
    if params.is_empty() {
        assert_eq!(rows(sl, &on_pr).await, rows(direct, &on_ref).await, "text {sql}");
    }
}

#[tokio::test]
async fn two_groups_own_cluster() {
    let main = shared_cluster();
    let b = Cluster::start(1);
    let db = unique_name("shard_groups");
    main.master.sql(&format!("CREATE DATABASE {db}"));
    b.master.sql(&format!("CREATE DATABASE {db}"));
    let yaml = format!(
        "{}groups:\n{}{}log:\n  level: warn\n  sql_log: true\nfreshness:\n  mode: \"off\"\n\
         sharding:\n  rules:\n    - {{ table: {db}.pr, key: tid, shards: 4, placement: [main, main, b, b] }}\n",
        Sluice::users_yaml(),
        Sluice::group_yaml("main", main),
        Sluice::group_yaml("b", &b),
    );
    let s = Sluice::start(&yaml);
    let mut sl = connect(&s.app_url(&db)).await;
    let mut direct = connect(&main.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    let mut direct_b = connect(&b.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;

    // DDL reaches the sub-tables of both groups.
    sl.query_drop(schema("pr")).await.expect("CREATE TABLE pr");
    direct.query_drop(schema("ref")).await.expect("CREATE TABLE ref");
    let tables = |c: &'static str| {
        format!("SELECT GROUP_CONCAT(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = '{db}' AND table_name {c}")
    };
    let on_main: Option<String> = direct
        .query_first(tables("LIKE 'pr%'"))
        .await
        .expect("tables")
        .flatten();
    let on_b: Option<String> = direct_b
        .query_first(tables("LIKE 'pr%'"))
        .await
        .expect("tables")
        .flatten();
    assert_eq!(on_main.as_deref(), Some("pr_0,pr_1"));
    assert_eq!(on_b.as_deref(), Some("pr_2,pr_3"));

    // Loading: one INSERT per group works; one spanning both groups is refused.
    let (mut a_rows, mut b_rows) = (vec![], vec![]);
    for i in 1..=400 {
        let r = row(i);
        let tid = (i * 7919) % 97;
        if group_of(tid) == 0 {
            a_rows.push(r)
        } else {
            b_rows.push(r)
        }
    }
    for part in [&a_rows, &b_rows] {
        sl.query_drop(format!("INSERT INTO pr ({COLS}) VALUES {}", part.join(", ")))
            .await
            .expect("single-group INSERT");
    }
    direct
        .query_drop(format!(
            "INSERT INTO ref ({COLS}) VALUES {}, {}",
            a_rows.join(", "),
            b_rows.join(", ")
        ))
        .await
        .expect("load ref");
    let e = sl
        .query_drop(format!(
            "INSERT INTO pr ({COLS}) VALUES (1000, 1, 1, 'x', 1), (1001, 2, 1, 'y', 1)"
        ))
        .await
        .expect_err("INSERT spanning two groups");
    assert_eq!(code(&e), NOT_SUPPORTED, "{e}");
    assert!(e.to_string().contains("several backend groups"), "{e}");
    let e = sl
        .query_drop("UPDATE pr SET amount = 0 WHERE user_id = 3")
        .await
        .expect_err("broadcast UPDATE spanning two groups");
    assert_eq!(code(&e), NOT_SUPPORTED, "{e}");
    main.wait_replicas_caught_up();
    b.wait_replicas_caught_up();
    assert_eq!(
        count(
            &mut direct,
            "SELECT COUNT(*) FROM pr_0 WHERE id >= 1000 OR amount = 0"
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &mut direct_b,
            "SELECT COUNT(*) FROM pr_2 WHERE id >= 1000 OR amount = 0"
        )
        .await,
        0
    );

    // Differential reads across both groups.
    for (sql, params) in [
        ("SELECT * FROM {t} ORDER BY amount DESC, id LIMIT 10, 15", vec![]),
        (
            "SELECT user_id, COUNT(*), SUM(amount), AVG(amount) FROM {t} GROUP BY user_id ORDER BY user_id",
            vec![],
        ),
        (
            "SELECT * FROM {t} WHERE tid = ? ORDER BY id",
            vec![Value::from(2)],
        ),
        (
            "SELECT * FROM {t} WHERE tid = ? ORDER BY id",
            vec![Value::from(5)],
        ),
        (
            "SELECT id, tid FROM {t} WHERE tid IN (?, ?, ?, ?) ORDER BY tid, id",
            vec![Value::from(3), Value::from(4), Value::from(6), Value::from(9)],
        ),
        (
            "SELECT COUNT(*), MIN(subject), MAX(id) FROM {t} WHERE user_id < ?",
            vec![Value::from(6)],
        ),
    ] {
        same(&mut sl, &mut direct, sql, params).await;
    }

    // Single-group writes, text and prepared, checked against the reference.
    for (sql, params) in [
        (
            "UPDATE {t} SET amount = amount + 1 WHERE tid = ?",
            vec![Value::from(2)],
        ),
        (
            "UPDATE {t} SET subject = ? WHERE tid IN (?, ?)",
            vec![Value::from("both in b"), Value::from(3), Value::from(6)],
        ),
        (
            "DELETE FROM {t} WHERE tid = ? AND id % 2 = 0",
            vec![Value::from(1)],
        ),
    ] {
        direct
            .exec_drop(sql.replace("{t}", "ref"), params.clone())
            .await
            .expect("direct write");
        let want = direct.affected_rows();
        sl.exec_drop(sql.replace("{t}", "pr"), params)
            .await
            .expect("sluice write");
        assert_eq!(sl.affected_rows(), want, "{sql}");
    }
    main.wait_replicas_caught_up();
    b.wait_replicas_caught_up();
    same(&mut sl, &mut direct, "SELECT * FROM {t} ORDER BY id", vec![]).await;

    // Transactions: the first group written to is the only one.
    sl.query_drop("BEGIN").await.expect("BEGIN");
    sl.query_drop(format!("INSERT INTO pr ({COLS}) VALUES (2000, 2, 1, 'tx', 1)"))
        .await
        .expect("write to b in a transaction");
    assert_eq!(
        count(&mut sl, "SELECT COUNT(*) FROM pr WHERE id = 2000").await,
        1,
        "own write"
    );
    let in_ref = count(&mut direct, "SELECT COUNT(*) FROM ref").await;
    assert_eq!(
        count(&mut sl, "SELECT COUNT(*) FROM pr").await,
        in_ref + 1,
        "scatter read in the transaction"
    );
    assert_eq!(
        count(&mut direct_b, "SELECT COUNT(*) FROM pr_2 WHERE id = 2000").await,
        0,
        "uncommitted"
    );
    let e = sl
        .query_drop(format!("INSERT INTO pr ({COLS}) VALUES (2001, 1, 1, 'tx', 1)"))
        .await
        .expect_err("a second group in the transaction");
    assert_eq!(code(&e), NOT_SUPPORTED, "{e}");
    let e = sl
        .query_drop("INSERT INTO ref (id, tid, user_id) VALUES (2002, 1, 1)")
        .await
        .expect_err("an unsharded write (group main) in the transaction");
    assert_eq!(code(&e), NOT_SUPPORTED, "{e}");
    sl.query_drop("COMMIT").await.expect("COMMIT");
    assert_eq!(
        count(&mut direct_b, "SELECT COUNT(*) FROM pr_2 WHERE id = 2000").await,
        1,
        "committed"
    );
    assert_eq!(
        count(&mut direct, "SELECT COUNT(*) FROM pr_1 WHERE id = 2001").await,
        0
    );

    // ROLLBACK undoes group b's write; a new transaction may write to main.
    sl.query_drop("START TRANSACTION").await.expect("BEGIN");
    sl.query_drop(format!("INSERT INTO pr ({COLS}) VALUES (2003, 3, 1, 'rb', 1)"))
        .await
        .expect("write to b");
    sl.query_drop("ROLLBACK").await.expect("ROLLBACK");
    assert_eq!(
        count(&mut direct_b, "SELECT COUNT(*) FROM pr_3 WHERE id = 2003").await,
        0,
        "rolled back"
    );
    sl.query_drop("BEGIN").await.expect("BEGIN");
    sl.query_drop(format!("INSERT INTO pr ({COLS}) VALUES (2004, 4, 1, 'a', 1)"))
        .await
        .expect("write to main");
    sl.query_drop("INSERT INTO ref (id, tid, user_id) VALUES (2004, 4, 1)")
        .await
        .expect("unsharded write, same group");
    let e = sl
        .exec_drop(
            format!("INSERT INTO pr ({COLS}) VALUES (?, ?, 1, 'b', 1)"),
            (2005, 6),
        )
        .await
        .expect_err("prepared write to b after main");
    assert_eq!(code(&e), NOT_SUPPORTED, "{e}");
    sl.query_drop("COMMIT").await.expect("COMMIT");
    assert_eq!(
        count(&mut direct, "SELECT COUNT(*) FROM pr_0 WHERE id = 2004").await,
        1
    );
    assert_eq!(
        count(&mut direct_b, "SELECT COUNT(*) FROM pr_2 WHERE id = 2005").await,
        0
    );
    // autocommit=0: the same rules, COMMIT ends it.
    sl.query_drop("SET autocommit = 0").await.expect("autocommit 0");
    sl.query_drop(format!("INSERT INTO pr ({COLS}) VALUES (2006, 7, 1, 'ac', 1)"))
        .await
        .expect("write to b");
    assert_eq!(
        count(&mut direct_b, "SELECT COUNT(*) FROM pr_3 WHERE id = 2006").await,
        0
    );
    sl.query_drop("COMMIT").await.expect("COMMIT");
    sl.query_drop("SET autocommit = 1").await.expect("autocommit 1");
    assert_eq!(
        count(&mut direct_b, "SELECT COUNT(*) FROM pr_3 WHERE id = 2006").await,
        1
    );

    // Scatter reads use group b's own replica: with its SQL thread stopped (and
    // freshness off) a new row of b is not seen there, then is once it applies.
    let replica = &b.replicas[0];
    replica.stop_sql_thread();
    sl.query_drop(format!("INSERT INTO pr ({COLS}) VALUES (3000, 10, 1, 'lag', 1)"))
        .await
        .expect("write to b");
    main.wait_replicas_caught_up();
    assert_eq!(
        count(
            &mut sl,
            "SELECT COUNT(*) FROM pr WHERE id = 3000 OR user_id = 999"
        )
        .await,
        0,
        "read from b's stopped replica"
    );
    replica.start_sql_thread();
    b.wait_replicas_caught_up_within(Duration::from_secs(20));
    assert_eq!(
        count(
            &mut sl,
            "SELECT COUNT(*) FROM pr WHERE id = 3000 OR user_id = 999"
        )
        .await,
        1
    );

    // The query log: rewritten statements with their backends, nothing for `ref`.
    let log = s.log();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("sluice::sql_log")).collect();
    assert!(
        lines.iter().any(|l| l.contains("pr_2") && l.contains("b master")),
        "no query-log line for a write to pr_2 on b's master:\n{}",
        lines.join("\n")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("pr_3") && l.contains("b replica0")),
        "no query-log line for a read on b's replica:\n{}",
        lines.join("\n")
    );
    assert!(
        lines.iter().all(|l| l.contains("elapsed_us=")),
        "{}",
        lines.join("\n")
    );
    assert!(
        !lines.iter().any(|l| l.contains("ref")),
        "unsharded statements in the query log:\n{}",
        lines.join("\n")
    );
    drop(sl);
    main.master.sql(&format!("DROP DATABASE {db}"));
}
