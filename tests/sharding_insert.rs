//! `INSERT INTO t VALUES (…)` / `REPLACE` without a column list on a sharded table, in the
//! text and the binary protocol, differentially: each statement runs through sluice on
//! the sharded table `sh_ins` (4 sub-tables, `tid mod 4`) and directly on the unsharded
//! reference `ref` (same definition); the outcome (affected rows, last insert id and
//! warnings, or the error code and message) and the resulting contents must be the same,
//! and every row must sit in its key's sub-table. Then the definition changes through
//! sluice (a column added first, the key moved, an INVISIBLE column): sluice must read
//! the new column order (a stale one would place rows by the wrong value or fail).
//!
//! Contents are read on the master directly (sub-tables and reference), so no read waits
//! for replication.

mod common;

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Params, Row, Value};

fn schema(table: &str) -> String {
    format!(
        "CREATE TABLE `{table}` (
  id INT UNSIGNED NOT NULL,
  tid INT UNSIGNED NOT NULL,
  `we``ird name` VARCHAR(40) NOT NULL DEFAULT '',
  amount DECIMAL(10,2) NULL,
  made DATETIME(3) NOT NULL DEFAULT '2020-01-01 00:00:00.000',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
    )
}

fn yaml(db: &str) -> String {
    format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.sh_ins.tid.4\"]\n"
    )
}

/// What a client sees of one write: its OK fields, or its error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Ok {
        affected: u64,
        insert_id: Option<u64>,
        warnings: u16,
    },
    Err(u16, String),
}

fn outcome(r: Result<(), mysql_async::Error>, c: &Conn) -> Outcome {
    match r {
        Ok(()) => Outcome::Ok {
            affected: c.affected_rows(),
            insert_id: c.last_insert_id(),
            warnings: c.get_warnings(),
        },
        Err(mysql_async::Error::Server(e)) => Outcome::Err(e.code, e.message),
        Err(e) => panic!("not a server answer: {e}"),
    }
}

async fn text(c: &mut Conn, sql: &str) -> Outcome {
    let r = c.query_drop(sql).await;
    outcome(r, c)
}

async fn prepared(c: &mut Conn, sql: &str, params: Vec<Value>) -> Outcome {
    let r = c.exec_drop(sql, Params::Positional(params)).await;
    outcome(r, c)
}

async fn connect(url: &str) -> Conn {
    Conn::from_url(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

/// The sharded table's rows (all sub-tables) and the reference's, by id, as text; and
/// the number of rows found in a sub-table other than their key's.
async fn contents(direct: &mut Conn) -> (Vec<String>, Vec<String>, u64) {
    // Sorted: compared as multisets (the definition changes, so no fixed ORDER BY).
    let dump = |rows: Vec<Row>| -> Vec<String> {
        let mut v: Vec<String> = rows.into_iter().map(|r| format!("{:?}", r.unwrap())).collect();
        v.sort();
        v
    };
    let mut misplaced = 0;
    let mut union = Vec::new();
    for k in 0..4 {
        let n: u64 = direct
            .query_first(format!("SELECT COUNT(*) FROM sh_ins_{k} WHERE tid % 4 <> {k}"))
            .await
            .expect("placement")
            .expect("a row");
        misplaced += n;
        union.push(format!("SELECT * FROM sh_ins_{k}"));
    }
    let sharded: Vec<Row> = direct
        .query(union.join(" UNION ALL "))
        .await
        .expect("read sub-tables");
    let reference: Vec<Row> = direct.query("SELECT * FROM ref").await.expect("read ref");
    (dump(sharded), dump(reference), misplaced)
}

struct Diff {
    sl: Conn,
    direct: Conn,
    checked: usize,
    mismatches: Vec<String>,
}

impl Diff {
    /// Runs `sql` (naming `ins`) through sluice and on `ref` directly, as text or as a
    /// prepared statement with `params`, and compares outcomes and contents.
    async fn check(&mut self, sql: &str, params: Option<Vec<Value>>) -> Outcome {
        let on_ref = sql.replace("sh_ins", "ref");
        let (want, got) = match &params {
            None => (
                text(&mut self.direct, &on_ref).await,
                text(&mut self.sl, sql).await,
            ),
            Some(p) => (
                prepared(&mut self.direct, &on_ref, p.clone()).await,
                prepared(&mut self.sl, sql, p.clone()).await,
            ),
        };
        let how = if params.is_some() { "prepared" } else { "text" };
        if want != got {
            self.mismatches.push(format!(
                "{how} {sql}\n    reference: {want:?}\n    sluice:    {got:?}"
            ));
        }
        let (sharded, reference, misplaced) = contents(&mut self.direct).await;
        if sharded != reference || misplaced != 0 {
            self.mismatches.push(format!(
                "{how} {sql}: contents differ ({} rows sharded, {} reference, {misplaced} misplaced)",
                sharded.len(),
                reference.len()
            ));
        }
        self.checked += 1;
        got
    }

    /// DDL through sluice on `ins` and directly on `ref`; both must succeed.
    async fn ddl(&mut self, sql: &str) {
        self.sl
            .query_drop(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql} through sluice: {e}"));
        self.direct
            .query_drop(sql.replace("sh_ins", "ref"))
            .await
            .unwrap_or_else(|e| panic!("{sql} on ref: {e}"));
    }
}

fn is_ok(o: &Outcome) -> bool {
    matches!(o, Outcome::Ok { .. })
}

fn is_1136(o: &Outcome) -> bool {
    matches!(o, Outcome::Err(1136, _))
}

/// A database with `sh_ins` made through sluice and `ref` directly: sluice, its client,
/// a direct client, the database's name.
async fn tables(prefix: &str) -> (Sluice, Conn, Conn, String) {
    let cluster = shared_cluster();
    let db = unique_name(prefix);
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let s = Sluice::start_for(cluster, &yaml(&db));
    let mut sl = connect(&s.app_url(&db)).await;
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    sl.query_drop(schema("sh_ins"))
        .await
        .unwrap_or_else(|e| panic!("CREATE TABLE sh_ins through sluice: {e}"));
    direct.query_drop(schema("ref")).await.expect("CREATE TABLE ref");
    (s, sl, direct, db)
}

#[tokio::test]
async fn insert_without_column_list_matches_the_server() {
    let (_s, sl, mut direct, db) = tables("shard_ins").await;
    let tables: Vec<String> = direct
        .query(format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY 1"
        ))
        .await
        .expect("list tables");
    assert_eq!(
        tables,
        ["ref", "sh_ins_0", "sh_ins_1", "sh_ins_2", "sh_ins_3"],
        "CREATE TABLE through sluice creates the 4 sub-tables"
    );
    let mut d = Diff {
        sl,
        direct,
        checked: 0,
        mismatches: Vec::new(),
    };

    // Text protocol: one row, several rows over several shards, REPLACE, ON DUPLICATE KEY
    // UPDATE, a key written as a string.
    // (No AUTO_INCREMENT: each sub-table has its own counter, whatever the column list.)
    let oks = [
        "INSERT INTO sh_ins VALUES (1, 4, 'one', 1.50, '2021-01-01 10:00:00.125')",
        "INSERT INTO sh_ins VALUES (2, 5, 'two', NULL, DEFAULT), (3, 6, 'it''s', -2.25, '2021-01-01 23:59:59.999'), \
         (4, 7, 'back\\\\slash', 0, '2021-01-02'), (5, 8, '回复 😀', 9.99, '2021-01-03')",
        "REPLACE INTO sh_ins VALUES (2, 5, 'two replaced', 2.00, '2021-02-01'), (6, 9, 'six', 6, '2021-02-02')",
        "REPLACE sh_ins VALUES (3, 6, 'three replaced', 3, '2021-02-03')",
        "INSERT INTO sh_ins VALUES (1, 4, 'dup', 1, '2021-03-01') ON DUPLICATE KEY UPDATE amount = amount + 10",
        "INSERT INTO sh_ins VALUES (7, 10, 'seven', 1, '2021-03-02')",
        "INSERT INTO sh_ins VALUES (0, 11, 'id 0', 1, '2021-03-03'), (8, 15, 'eight', 2, '2021-03-04')",
        "INSERT INTO sh_ins VALUES (20, '12', 'string key', 1, '2021-03-05')",
        "INSERT IGNORE INTO sh_ins VALUES (20, 12, 'ignored duplicate', 1, '2021-03-06')",
        "INSERT INTO sh_ins VALUES (21, 13, 'decimal truncated', 1.005, '2021-03-07')",
    ];
    for sql in oks {
        let got = d.check(sql, None).await;
        assert!(is_ok(&got), "{sql}: {got:?}");
    }
    // A row with too few or too many values: the server's own 1136, naming the row, and
    // nothing written (also when other rows would fit).
    let errs = [
        "INSERT INTO sh_ins VALUES (30, 4, 'short')",
        "INSERT INTO sh_ins VALUES (31, 5, 'ok', 1, '2021-01-01'), (32, 6, 'long', 1, '2021-01-01', 7)",
        "REPLACE INTO sh_ins VALUES (33, 6)",
    ];
    for sql in errs {
        let got = d.check(sql, None).await;
        assert!(is_1136(&got), "{sql}: {got:?}");
    }
    // The server's duplicate-key error, from the sub-table.
    let got = d
        .check("INSERT INTO sh_ins VALUES (1, 4, 'dup', 1, '2021-01-01')", None)
        .await;
    assert!(matches!(got, Outcome::Err(1062, _)), "{got:?}");

    // Binary protocol: the same shapes with typed parameters.
    let p = |id: Option<u64>, tid: Value, name: &str| -> Vec<Value> {
        vec![
            id.map_or(Value::NULL, Value::UInt),
            tid,
            Value::Bytes(name.as_bytes().to_vec()),
            Value::Bytes(b"12.34".to_vec()),
            Value::Date(2022, 5, 6, 7, 8, 9, 123_000),
        ]
    };
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (?, ?, ?, ?, ?)",
            Some(p(Some(40), Value::Int(17), "p one")),
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    let mut two = p(Some(41), Value::UInt(18), "p 'two'");
    two.extend(p(Some(42), Value::Bytes(b"19".to_vec()), "p \\ three 😀"));
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)",
            Some(two),
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    let got = d
        .check(
            "REPLACE INTO sh_ins VALUES (?, ?, ?, ?, ?)",
            Some(p(Some(40), Value::Int(17), "p replaced")),
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (?, ?, ?)",
            Some(vec![Value::UInt(50), Value::Int(4), Value::NULL]),
        )
        .await;
    assert!(is_1136(&got), "{got:?}");

    // The definition changes through sluice: a column added first (every value moves
    // one place), then the key moved to the end, then an INVISIBLE column (which takes no
    // value). A stale column order would read the key from the wrong place.
    d.ddl("ALTER TABLE sh_ins ADD COLUMN first_col INT NOT NULL DEFAULT 0 FIRST")
        .await;
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (1, 60, 21, 'after add', 1, '2021-04-01')",
            None,
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (61, 22, 'old shape', 1, '2021-04-01')",
            None,
        )
        .await;
    assert!(is_1136(&got), "{got:?}");
    d.ddl("ALTER TABLE sh_ins MODIFY tid INT UNSIGNED NOT NULL AFTER made")
        .await;
    let got = d
        .check("INSERT INTO sh_ins VALUES (2, 62, 'key last', 1, '2021-04-02', 23), (3, 63, 'key last 2', 1, '2021-04-02', 26)", None)
        .await;
    assert!(is_ok(&got), "{got:?}");
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (?, ?, ?, ?, ?, ?)",
            Some(vec![
                Value::Int(4),
                Value::UInt(64),
                Value::Bytes(b"prepared key last".to_vec()),
                Value::NULL,
                Value::Date(2022, 1, 1, 0, 0, 0, 0),
                Value::Int(29),
            ]),
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    d.ddl("ALTER TABLE sh_ins ADD COLUMN hidden INT INVISIBLE DEFAULT 5")
        .await;
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (5, 65, 'with invisible', 1, '2021-04-03', 30)",
            None,
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    // The table dropped and created again with another shape, both through sluice.
    d.ddl("DROP TABLE sh_ins").await;
    d.ddl("CREATE TABLE sh_ins (tid INT NOT NULL, v VARCHAR(10), PRIMARY KEY (tid, v))")
        .await;
    let got = d
        .check("INSERT INTO sh_ins VALUES (7, 'a'), (8, 'b'), (9, 'c')", None)
        .await;
    assert!(is_ok(&got), "{got:?}");

    // AUTO_INCREMENT ids given explicitly: the server's OK packet reports the id of the
    // statement's last row (5 for ids 2..5), whichever sub-table it went to.
    d.ddl("DROP TABLE sh_ins").await;
    d.ddl("CREATE TABLE sh_ins (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, tid INT NOT NULL, v VARCHAR(10))")
        .await;
    for sql in [
        "INSERT INTO sh_ins (id, tid, v) VALUES (2, 2, 'a'), (3, 3, 'b'), (4, 4, 'c'), (5, 5, 'd')",
        "INSERT INTO sh_ins (id, tid, v) VALUES (9, 1, 'e'), (7, 6, 'f'), (8, 3, 'g')",
        "INSERT INTO sh_ins VALUES (12, 8, 'h'), (11, 5, 'i'), (10, 8, 'j')",
        "INSERT INTO sh_ins (id, tid, v) VALUES (20, 4, 'k')",
        "INSERT INTO sh_ins SET id = 21, tid = 7, v = 'set'",
        "REPLACE INTO sh_ins (id, tid, v) VALUES (3, 3, 'b2'), (31, 2, 'l')",
    ] {
        let got = d.check(sql, None).await;
        assert!(is_ok(&got), "{sql}: {got:?}");
    }
    let got = d
        .check(
            "INSERT INTO sh_ins (id, tid, v) VALUES (?, ?, ?), (?, ?, ?)",
            Some(vec![
                Value::UInt(41),
                Value::Int(3),
                Value::Bytes(b"p1".to_vec()),
                Value::UInt(40),
                Value::Int(6),
                Value::Bytes(b"p2".to_vec()),
            ]),
        )
        .await;
    assert!(is_ok(&got), "{got:?}");

    assert!(
        d.mismatches.is_empty(),
        "{} of {} statements differ:\n{}",
        d.mismatches.len(),
        d.checked,
        d.mismatches.join("\n")
    );
    eprintln!("sharding_insert: {} statements, 0 mismatches", d.checked);
    drop(d);
    shared_cluster().master.sql(&format!("DROP DATABASE {db}"));
}

/// A write to a sub-table whose column default calls NEXTVAL leaves LASTVAL() on the
/// connection, as on one server: the session keeps it (it is pinned there, as for an
/// unsharded table), and no other client reads it.
#[tokio::test]
async fn sequence_defaults_of_sub_tables_stay_with_the_session() {
    let cluster = shared_cluster();
    let db = unique_name("shard_seq");
    cluster
        .master
        .sql(&format!("CREATE DATABASE {db}; CREATE SEQUENCE {db}.sq"));
    let s = Sluice::start_for(
        cluster,
        &format!(
            "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nbackend:\n  pool_max: 1\n\
             sharding:\n  tables: [\"{db}.sh_seq.tid.2\"]\n"
        ),
    );
    // (Its text names NEXTVAL: the session that runs it is pinned.)
    let mut ddl = connect(&s.app_url(&db)).await;
    ddl.query_drop(
        "CREATE TABLE sh_seq (id INT NOT NULL DEFAULT NEXTVAL(sq), tid INT NOT NULL, PRIMARY KEY (id))",
    )
    .await
    .expect("CREATE TABLE sh_seq through sluice");
    let _ = ddl.disconnect().await;
    let mut a = connect(&s.app_url(&db)).await;
    a.query_drop("INSERT INTO sh_seq (tid) VALUES (3)")
        .await
        .expect("insert");
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    let id: Option<i64> = direct
        .query_first("SELECT id FROM sh_seq_1")
        .await
        .expect("read the sub-table");
    let last: Option<Option<i64>> = a.query_first("SELECT LASTVAL(sq)").await.expect("lastval");
    assert_eq!(last.flatten(), id, "the session's LASTVAL(sq) after its insert");
    let _ = a.disconnect().await;
    // The next client gets the one master connection A used.
    let mut b = connect(&s.app_url(&db)).await;
    let other: Option<Option<i64>> = b.query_first("SELECT LASTVAL(sq)").await.expect("lastval");
    assert_eq!(other.flatten(), None, "another client's LASTVAL(sq)");
    let _ = b.disconnect().await;
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// DDL sent to the server directly, behind sluice's back (an online schema change, a
/// reorder on each sub-table): sluice does not see it, so it reads a table's column order
/// again a second after it read it. The columns are reordered keeping their names and
/// types (the amount moved first): an INSERT without a column list planned from the old
/// order named the columns in that order, and filled other columns than the client's
/// VALUES mean, silently.
#[tokio::test]
async fn a_reorder_sent_to_the_server_directly_is_seen_within_a_second() {
    let (_s, sl, direct, _) = tables("shard_ins_ro").await;
    let mut d = Diff {
        sl,
        direct,
        checked: 0,
        mismatches: Vec::new(),
    };
    let got = d
        .check(
            "INSERT INTO sh_ins VALUES (1, 4, 'one', 1.50, '2021-01-01'), (2, 5, 'two', 2.50, '2021-01-02')",
            None,
        )
        .await;
    assert!(is_ok(&got), "{got:?}");
    for t in ["sh_ins_0", "sh_ins_1", "sh_ins_2", "sh_ins_3", "ref"] {
        d.direct
            .query_drop(format!("ALTER TABLE {t} MODIFY amount DECIMAL(10,2) NULL FIRST"))
            .await
            .unwrap_or_else(|e| panic!("reorder {t}: {e}"));
    }
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // The new order: amount, id, tid, name, made.
    let got = d
        .check("INSERT INTO sh_ins VALUES (3.50, 3, 6, 'three', '2021-01-03'), (4.50, 4, 7, 'four', '2021-01-04')", None)
        .await;
    assert!(is_ok(&got), "{got:?}");
    assert!(d.mismatches.is_empty(), "{}", d.mismatches.join("\n"));
}
