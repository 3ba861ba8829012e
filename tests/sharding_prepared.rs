//! Prepared statements (binary protocol) on sharded tables, differentially: the same
//! statements with the same parameters through sluice on the sharded table `pr`
//! (4 sub-tables, `tid mod 4`) and directly on the unsharded reference table `ref`, with
//! mysql_async's `exec` (COM_STMT_PREPARE / COM_STMT_EXECUTE). Column names, types,
//! flags and decimals, and the decoded binary values must be identical (row order too
//! wherever ORDER BY fixes it). Writes with parameters must leave both tables equal and
//! every row in its own sub-table.
//!
//! sluice runs with `freshness: off` against the shared cluster (reads go to the
//! replicas), so every read phase first waits until the replicas have applied everything.

mod common;

use common::cluster::*;
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

const NOT_SUPPORTED: u16 = 1235;
const N_ROWS: u32 = 1500;

fn schema(table: &str) -> String {
    format!(
        "CREATE TABLE `{table}` (
  id INT UNSIGNED NOT NULL,
  tid INT UNSIGNED NOT NULL,
  user_id INT UNSIGNED NOT NULL,
  subject VARCHAR(80) NOT NULL DEFAULT '',
  create_time DATETIME(3) NOT NULL,
  day DATE NULL,
  dur TIME(2) NULL,
  score INT NULL,
  ratio DOUBLE NULL,
  amount DECIMAL(12,2) NOT NULL DEFAULT '0.00',
  big BIGINT NULL,
  flag TINYINT UNSIGNED NULL,
  PRIMARY KEY (id),
  KEY (tid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    )
}

const SUBJECTS: &[&str] = &[
    "hello",
    "Hello",
    "It's fine",
    "say \"hi\"",
    "back\\slash",
    "C:\\path\\",
    "\\'",
    "''",
    "回复标题",
    "emoji 😀",
    "naïve café",
    "trailing  ",
    "",
    "new\nline",
    "100% sure_",
];

/// A string literal with backslash escapes.
fn lit(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Deterministic row `i` as a VALUES tuple.
fn row(i: u32) -> String {
    let h = i.wrapping_mul(2_654_435_761);
    let tid = 1 + h % 61;
    let user = 1 + (h >> 8) % 23;
    let subject = SUBJECTS[(h >> 4) as usize % SUBJECTS.len()];
    let secs = (h >> 3) % 86_400;
    let ms = (h >> 5) % 1000;
    let day = 1 + (h >> 6) % 28;
    let null = |k: u32, v: String| if (h >> k) % 7 == 0 { "NULL".to_string() } else { v };
    format!(
        "({i}, {tid}, {user}, {}, '2021-{:02}-{day:02} {:02}:{:02}:{:02}.{ms:03}', {}, {}, {}, {}, '{}.{:02}', {}, {})",
        lit(subject),
        1 + (h >> 2) % 12,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        null(1, format!("'2020-02-{day:02}'")),
        null(2, format!("'{}{}:{:02}:{:02}.{:02}'", if h % 5 == 0 { "-" } else { "" }, (h >> 9) % 830, (h >> 3) % 60, h % 60, (h >> 7) % 100)),
        null(3, format!("{}", (h % 2001) as i64 - 1000)),
        null(4, format!("{}", f64::from(h % 1000) / 7.0)),
        (h >> 10) % 100_000,
        h % 100,
        null(5, format!("{}", i64::from(h) * if h % 2 == 0 { -1_000_003 } else { 999_983 })),
        null(6, format!("{}", h % 256)),
    )
}

async fn connect(url: &str) -> Conn {
    Conn::from_url(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

type Col = (String, ColumnType, ColumnFlags, u8);

/// The column flags that say how values are encoded and compared. Index flags
/// (PRI/UNIQUE/MULTIPLE/PART_KEY, NO_DEFAULT_VALUE) are left out: a shard's query that
/// groups through a temporary table does not report them (known, harmless for values).
const VALUE_FLAGS: ColumnFlags = ColumnFlags::NOT_NULL_FLAG
    .union(ColumnFlags::UNSIGNED_FLAG)
    .union(ColumnFlags::BINARY_FLAG)
    .union(ColumnFlags::BLOB_FLAG)
    .union(ColumnFlags::ZEROFILL_FLAG)
    .union(ColumnFlags::ENUM_FLAG)
    .union(ColumnFlags::SET_FLAG)
    .union(ColumnFlags::NUM_FLAG);

#[derive(Debug)]
struct Answer {
    cols: Vec<Col>,
    rows: Vec<Vec<Value>>,
}

async fn exec(conn: &mut Conn, sql: &str, params: Vec<Value>) -> Result<Answer, (u16, String)> {
    let err = |e: mysql_async::Error| match e {
        mysql_async::Error::Server(s) => (s.code, s.message),
        other => (0, other.to_string()),
    };
    let mut r = conn.exec_iter(sql, params).await.map_err(err)?;
    let cols = r
        .columns()
        .map(|c| {
            c.iter()
                .map(|c| {
                    (
                        c.name_str().into_owned(),
                        c.column_type(),
                        c.flags() & VALUE_FLAGS,
                        c.decimals(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let rows: Vec<Row> = r.collect().await.map_err(err)?;
    Ok(Answer {
        cols,
        rows: rows.into_iter().map(Row::unwrap).collect(),
    })
}

/// Runs `sql` (with `{t}`) on `pr` through sluice and on `ref` directly; panics on any
/// difference. Returns the number of rows.
async fn same(sl: &mut Conn, direct: &mut Conn, sql: &str, params: Vec<Value>, ordered: bool) -> usize {
    let want = exec(direct, &sql.replace("{t}", "ref"), params.clone())
        .await
        .unwrap_or_else(|e| panic!("direct: {sql} {params:?}: {e:?}"));
    let got = exec(sl, &sql.replace("{t}", "pr"), params.clone())
        .await
        .unwrap_or_else(|e| panic!("sluice: {sql} {params:?}: {e:?}"));
    assert_eq!(got.cols, want.cols, "columns of {sql} {params:?}");
    let (mut a, mut b) = (want.rows, got.rows);
    if !ordered {
        a.sort_by_key(|r| format!("{r:?}"));
        b.sort_by_key(|r| format!("{r:?}"));
    }
    assert_eq!(b.len(), a.len(), "row count of {sql} {params:?}");
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(y, x, "row {i} of {sql} {params:?}");
    }
    a.len()
}

fn yaml(db: &str) -> String {
    format!("log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.pr.tid.4\"]\n")
}

async fn setup(cluster: &Cluster, s: &Sluice, db: &str) -> (Conn, Conn) {
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db)).await;
    let mut sl = connect(&s.app_url(db)).await;
    sl.query_drop(schema("pr"))
        .await
        .expect("CREATE TABLE pr through sluice");
    direct.query_drop(schema("ref")).await.expect("CREATE TABLE ref");
    let rows: Vec<String> = (1..=N_ROWS).map(row).collect();
    let cols = "(id, tid, user_id, subject, create_time, day, dur, score, ratio, amount, big, flag)";
    for chunk in rows.chunks(300) {
        let values = chunk.join(", ");
        sl.query_drop(format!("INSERT INTO pr {cols} VALUES {values}"))
            .await
            .expect("load pr");
        direct
            .query_drop(format!("INSERT INTO ref {cols} VALUES {values}"))
            .await
            .expect("load ref");
    }
    cluster.wait_replicas_caught_up();
    (sl, direct)
}

fn v<T: Into<Value>>(x: T) -> Value {
    x.into()
}

#[tokio::test]
async fn prepared_reads_match_the_reference() {
    let cluster = shared_cluster();
    let db = unique_name("shard_ps");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (mut sl, mut direct) = setup(cluster, &s, &db).await;
    let (sl, d) = (&mut sl, &mut direct);
    let mut total = 0;

    // The key as a parameter, every type a client may bind it with.
    for tid in [1u32, 4, 7, 60, 61, 999] {
        total += same(
            sl,
            d,
            "SELECT * FROM {t} WHERE tid = ? ORDER BY id",
            vec![v(tid)],
            true,
        )
        .await;
        total += same(
            sl,
            d,
            "SELECT * FROM {t} WHERE tid = ?",
            vec![v(i64::from(tid))],
            false,
        )
        .await;
        total += same(
            sl,
            d,
            "SELECT id, subject FROM {t} WHERE tid = ?",
            vec![v(tid.to_string())],
            false,
        )
        .await;
    }
    // IN lists of parameters, duplicates, mixed shards; with other parameters around.
    for (a, b, c) in [(1u32, 2u32, 3u32), (4, 8, 12), (5, 5, 9), (3, 60, 61)] {
        total += same(
            sl,
            d,
            "SELECT id, tid, create_time FROM {t} WHERE tid IN (?, ?, ?) AND user_id > ? ORDER BY create_time DESC, id",
            vec![v(a), v(b), v(c), v(3)],
            true,
        )
        .await;
    }
    // ORDER BY / LIMIT with parameters (the seed's page 2), deep offsets.
    for (user, off, n) in [(5u32, 20u64, 20u64), (1, 0, 5), (7, 40, 100), (9, 1000, 10)] {
        total += same(
            sl,
            d,
            "SELECT * FROM {t} WHERE user_id = ? ORDER BY create_time DESC, id LIMIT ?, ?",
            vec![v(user), v(off), v(n)],
            true,
        )
        .await;
    }
    total += same(
        sl,
        d,
        "SELECT id, ratio FROM {t} WHERE ratio > ? ORDER BY ratio, id LIMIT ?",
        vec![v(100.5f64), v(25)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id, big FROM {t} ORDER BY big DESC, id LIMIT ?",
        vec![v(30)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id, dur, day FROM {t} WHERE tid IN (?, ?) ORDER BY dur, id",
        vec![v(2), v(3)],
        true,
    )
    .await;
    // Aggregates, GROUP BY, HAVING, DISTINCT with parameters.
    total += same(
        sl,
        d,
        "SELECT COUNT(*), SUM(amount), AVG(score), MIN(create_time), MAX(ratio), MIN(dur), MAX(day), SUM(big), AVG(amount) FROM {t} WHERE user_id <= ?",
        vec![v(12)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT tid, COUNT(*) AS n, SUM(score), AVG(ratio) FROM {t} WHERE user_id < ? GROUP BY tid HAVING COUNT(*) > ? ORDER BY tid LIMIT ?",
        vec![v(15), v(10), v(30)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT DISTINCT user_id FROM {t} WHERE tid > ? ORDER BY user_id",
        vec![v(30)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT tid, COUNT(DISTINCT subject) FROM {t} WHERE tid = ? OR tid = ? GROUP BY tid ORDER BY tid",
        vec![v(10), v(11)],
        true,
    )
    .await;
    // Strings with quotes, backslashes and multibyte characters as parameters.
    for subject in SUBJECTS {
        total += same(
            sl,
            d,
            "SELECT id, tid FROM {t} WHERE subject = ? ORDER BY id",
            vec![v(*subject)],
            true,
        )
        .await;
        total += same(
            sl,
            d,
            "SELECT ?, COUNT(*) FROM {t} WHERE tid = ? AND subject <> ?",
            vec![v(*subject), v(9), v(*subject)],
            true,
        )
        .await;
    }
    total += same(
        sl,
        d,
        "SELECT id FROM {t} WHERE subject LIKE ? ORDER BY id",
        vec![v("%\\%%")],
        true,
    )
    .await;
    // NULL parameters.
    total += same(
        sl,
        d,
        "SELECT id FROM {t} WHERE score <=> ? ORDER BY id",
        vec![Value::NULL],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id FROM {t} WHERE tid = ? ORDER BY id",
        vec![Value::NULL],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT COUNT(*) FROM {t} WHERE tid IN (?, ?)",
        vec![Value::NULL, v(3)],
        true,
    )
    .await;
    // Temporal and decimal parameters.
    total += same(
        sl,
        d,
        "SELECT id, create_time FROM {t} WHERE create_time >= ? AND create_time < ? ORDER BY create_time, id",
        vec![
            Value::Date(2021, 3, 1, 0, 0, 0, 0),
            Value::Date(2021, 3, 9, 12, 30, 0, 500_000),
        ],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id FROM {t} WHERE day = ? ORDER BY id",
        vec![Value::Date(2020, 2, 7, 0, 0, 0, 0)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id, dur FROM {t} WHERE dur > ? ORDER BY id",
        vec![Value::Time(false, 20, 3, 0, 0, 0)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id FROM {t} WHERE dur < ? ORDER BY id",
        vec![Value::Time(true, 1, 2, 3, 4, 250_000)],
        true,
    )
    .await;
    total += same(
        sl,
        d,
        "SELECT id, amount FROM {t} WHERE amount BETWEEN ? AND ? ORDER BY amount, id",
        vec![v("120.50"), v("130")],
        true,
    )
    .await;
    // The statement is cached by mysql_async and executed again with other values.
    for tid in 1..=12u32 {
        total += same(
            sl,
            d,
            "SELECT id, amount, flag FROM {t} WHERE tid = ? ORDER BY amount DESC, id LIMIT 3",
            vec![v(tid)],
            true,
        )
        .await;
    }
    assert!(total > 3000, "the differential reads returned only {total} rows");

    // Refused at PREPARE: cannot be merged exactly whatever the parameters.
    let e = exec(
        sl,
        "SELECT a.id FROM pr a JOIN pr b ON a.id = b.id WHERE a.tid = ?",
        vec![v(1)],
    )
    .await
    .expect_err("a join of two sharded tables");
    assert_eq!(e.0, NOT_SUPPORTED, "{e:?}");
    // NO_BACKSLASH_ESCAPES: a backslash in a parameter is bound as hex (never escaped),
    // so it is answered exactly.
    sl.query_drop("SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        .await
        .expect("set sql_mode");
    d.query_drop("SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        .await
        .expect("set sql_mode");
    let n = same(
        sl,
        d,
        "SELECT id FROM {t} WHERE subject = ?",
        vec![v("back\\slash")],
        false,
    )
    .await;
    assert!(n > 0, "no row has the backslash subject");
    same(
        sl,
        d,
        "SELECT id FROM {t} WHERE subject = ? ORDER BY id",
        vec![v("It's fine")],
        true,
    )
    .await;
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// Rows per sub-table, checking that each holds only its own tids.
async fn check_placement(direct: &mut Conn) {
    for k in 0..4 {
        let wrong: u64 = direct
            .query_first(format!("SELECT COUNT(*) FROM pr_{k} WHERE tid % 4 <> {k}"))
            .await
            .expect("count sub-table")
            .expect("a row");
        assert_eq!(wrong, 0, "pr_{k} holds rows of another shard");
    }
}

async fn contents(conn: &mut Conn, table: &str) -> Vec<Row> {
    conn.query(format!("SELECT * FROM {table} ORDER BY id"))
        .await
        .unwrap_or_else(|e| panic!("read {table}: {e}"))
}

#[tokio::test]
async fn prepared_writes_match_the_reference() {
    let cluster = shared_cluster();
    let db = unique_name("shard_psw");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (mut sl, mut direct) = setup(cluster, &s, &db).await;
    let insert = "INSERT INTO {t} (id, tid, user_id, subject, create_time, amount, score, ratio, dur) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
    let insert2 = "INSERT INTO {t} (id, tid, user_id, subject, create_time, amount) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)";
    let writes: Vec<(&str, Vec<Value>)> = vec![
        (
            insert,
            vec![
                v(10_001),
                v(5),
                v(1),
                v("it's a \\ test 😀"),
                Value::Date(2022, 1, 2, 3, 4, 5, 678_000),
                v("12.34"),
                Value::NULL,
                v(0.1f64 + 0.2f64),
                Value::Time(true, 0, 1, 2, 3, 0),
            ],
        ),
        (
            insert,
            vec![
                v(10_002),
                v(6u64),
                v(2),
                v("中文"),
                Value::Date(2022, 1, 3, 0, 0, 0, 0),
                v(-5.5f64),
                v(-7),
                Value::NULL,
                Value::NULL,
            ],
        ),
        // Two rows, two shards: split, all-or-nothing.
        (
            insert2,
            vec![
                v(10_003),
                v(7),
                v(3),
                v("a"),
                Value::Date(2022, 2, 2, 0, 0, 0, 0),
                v("1"),
                v(10_004),
                v(8),
                v(3),
                v("b"),
                Value::Date(2022, 2, 3, 0, 0, 0, 0),
                v("2"),
            ],
        ),
        (
            "UPDATE {t} SET subject = ?, score = ? WHERE tid = ? AND id = ?",
            vec![v("up\\dated ''"), v(42), v(5), v(10_001)],
        ),
        (
            "UPDATE {t} SET score = score + ? WHERE user_id = ?",
            vec![v(3), v(4)],
        ),
        (
            "UPDATE {t} SET ratio = ? WHERE tid IN (?, ?)",
            vec![Value::NULL, v(9), v(10)],
        ),
        ("DELETE FROM {t} WHERE tid = ? AND id = ?", vec![v(6), v(10_002)]),
        ("DELETE FROM {t} WHERE score < ?", vec![v(-990)]),
        (
            "REPLACE INTO {t} (id, tid, user_id, create_time) VALUES (?, ?, ?, ?)",
            vec![v(10_003), v(7), v(9), Value::Date(2023, 1, 1, 0, 0, 0, 0)],
        ),
    ];
    for (sql, params) in &writes {
        direct
            .exec_drop(sql.replace("{t}", "ref"), params.clone())
            .await
            .unwrap_or_else(|e| panic!("direct {sql}: {e}"));
        let want = direct.affected_rows();
        sl.exec_drop(sql.replace("{t}", "pr"), params.clone())
            .await
            .unwrap_or_else(|e| panic!("sluice {sql}: {e}"));
        assert_eq!(sl.affected_rows(), want, "affected rows of {sql} {params:?}");
    }
    // A duplicate key in a split INSERT: the server's error, nothing written.
    let dup = vec![
        v(10_010),
        v(1),
        v(1),
        v("x"),
        Value::Date(2022, 1, 1, 0, 0, 0, 0),
        v("1"),
        v(10_003),
        v(7),
        v(1),
        v("y"),
        Value::Date(2022, 1, 1, 0, 0, 0, 0),
        v("1"),
    ];
    let e = sl
        .exec_drop(insert2.replace("{t}", "pr"), dup)
        .await
        .expect_err("duplicate key");
    assert!(e.to_string().contains("Duplicate"), "{e}");
    check_placement(&mut direct).await;
    cluster.wait_replicas_caught_up();
    let want = contents(&mut direct, "ref").await;
    let got = contents(&mut sl, "pr").await;
    assert_eq!(got.len(), want.len());
    for (a, b) in want.into_iter().zip(got) {
        assert_eq!(b.unwrap(), a.unwrap());
    }
    // Insert with a NULL key: refused like the text form, nothing written.
    let before = contents(&mut sl, "pr").await.len();
    let e = sl
        .exec_drop(
            insert.replace("{t}", "pr"),
            vec![
                v(20_000),
                Value::NULL,
                v(1),
                v("n"),
                Value::Date(2022, 1, 1, 0, 0, 0, 0),
                v("1"),
                Value::NULL,
                Value::NULL,
                Value::NULL,
            ],
        )
        .await
        .expect_err("NULL key");
    assert!(
        e.to_string().contains("1235") || e.to_string().contains("sluice"),
        "{e}"
    );
    cluster.wait_replicas_caught_up();
    assert_eq!(contents(&mut sl, "pr").await.len(), before);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
