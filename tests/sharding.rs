//! Sharded tables: statements sluice must refuse (error 1235 with a sentence, and
//! nothing written), literals that must reach the sub-tables byte for byte (also under
//! NO_BACKSLASH_ESCAPES and ANSI_QUOTES), strings under each column's collation, a
//! string key under a hash rule, and (on a cluster of its own, since it stops
//! replication) the freshness of scatter reads. The logical table `post_reply` (4
//! sub-tables, `tid mod 4`) is compared with an unsharded reference table `ref` holding
//! the same rows directly on the master. The fixed corpus of queries by shape over the
//! seed's 100k rows, and the fixed writes, are cases of the generator's oracle
//! (`tests/sharding_gen.rs`, `sharding_gen/fixed.rs`).
//!
//! sluice runs with `freshness: off` against the shared cluster (reads go to the
//! replicas), so every read phase first waits until the replicas have applied everything.

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

mod sharding_gen {
    #[allow(dead_code)]
    pub mod cases;
    pub mod corpus;
    #[allow(dead_code)]
    pub mod oracle;
    #[allow(dead_code)]
    pub mod schema;
}
use gen::*;
use sharding_gen::cases::{Demands, Runner, SUPPORTED};
use sharding_gen::corpus as gen;
// ---------------------------------------------------------------------------------------
// Running and comparing
// ---------------------------------------------------------------------------------------

type Cell = Option<Vec<u8>>;

/// Names, types and rows of a result.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    columns: Vec<String>,
    /// Column type and decimals of each column, as the column definitions announce them.
    types: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

#[derive(Debug)]
enum Failure {
    /// Error packet from the server (or sluice): code and message.
    Server(u16, String),
    /// Anything else (connection lost, driver error).
    Other(String),
}

impl Failure {
    fn code(&self) -> Option<u16> {
        match self {
            Failure::Server(c, _) => Some(*c),
            Failure::Other(_) => None,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Server(c, m) => write!(f, "ERROR {c}: {m}"),
            Failure::Other(m) => write!(f, "{m}"),
        }
    }
}

fn failure(e: mysql_async::Error) -> Failure {
    match e {
        mysql_async::Error::Server(s) => Failure::Server(s.code, s.message),
        other => Failure::Other(other.to_string()),
    }
}

fn cell(v: Value) -> Cell {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(b),
        // The text protocol only yields bytes; keep anything else visible.
        other => Some(format!("{other:?}").into_bytes()),
    }
}

/// Runs one text statement; its (first) result set.
async fn run(conn: &mut Conn, sql: &str) -> Result<Answer, Failure> {
    let mut result = conn.query_iter(sql).await.map_err(failure)?;
    let columns: Vec<String> = result
        .columns()
        .map(|c| c.iter().map(|c| c.name_str().into_owned()).collect())
        .unwrap_or_default();
    let types: Vec<String> = result
        .columns()
        .map(|c| {
            c.iter()
                .map(|c| format!("{:?}({})", c.column_type(), c.decimals()))
                .collect()
        })
        .unwrap_or_default();
    let rows: Vec<Row> = result.collect().await.map_err(failure)?;
    result.drop_result().await.map_err(failure)?;
    let rows = rows
        .into_iter()
        .map(|r| r.unwrap().into_iter().map(cell).collect())
        .collect();
    Ok(Answer { columns, types, rows })
}

/// Runs a write; its affected-row count.
async fn write(conn: &mut Conn, sql: &str) -> Result<u64, Failure> {
    conn.query_drop(sql).await.map_err(failure)?;
    Ok(conn.affected_rows())
}

async fn connect(url: &str) -> Conn {
    Conn::from_url(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

fn show_cell(c: &Cell) -> String {
    match c {
        None => "NULL".into(),
        Some(b) => format!("{:?}", String::from_utf8_lossy(b)),
    }
}

fn show_row(r: &[Cell]) -> String {
    let s = r.iter().map(show_cell).collect::<Vec<_>>().join(", ");
    if s.chars().count() > 400 {
        format!("({}…)", s.chars().take(400).collect::<String>())
    } else {
        format!("({s})")
    }
}

// ---------------------------------------------------------------------------------------
// Setup helpers
// ---------------------------------------------------------------------------------------

fn sharding_yaml(db: &str) -> String {
    format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.post_reply.tid.4\"]\n  rules:\n    - {{ table: {db}.t2, key: name, shards: 4, function: hash, key_collation: ci }}\n"
    )
}

/// Creates database `db` on the master, `post_reply` through sluice (4 sub-tables) and the
/// reference `ref` directly.
async fn create_tables(cluster: &Cluster, s: &Sluice, db: &str) -> (Conn, Conn) {
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db)).await;
    let mut sl = connect(&s.app_url(db)).await;
    sl.query_drop(schema("post_reply"))
        .await
        .unwrap_or_else(|e| panic!("CREATE TABLE post_reply through sluice: {e}"));
    direct.query_drop(schema("ref")).await.expect("CREATE TABLE ref");
    let tables: Vec<String> = direct
        .query(format!(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY table_name"
        ))
        .await
        .expect("list tables");
    assert_eq!(
        tables,
        [
            "post_reply_0",
            "post_reply_1",
            "post_reply_2",
            "post_reply_3",
            "ref"
        ],
        "CREATE TABLE post_reply through sluice must create exactly the 4 sub-tables"
    );
    // The DDL reached every sub-table as written (comments in Chinese included).
    let comments: Vec<(String, String)> = direct
        .query(format!(
            "SELECT table_name, column_comment FROM information_schema.columns WHERE table_schema = '{db}' AND column_name = 'tid' ORDER BY table_name"
        ))
        .await
        .expect("column comments");
    for (t, c) in comments {
        assert_eq!(c, "帖子id", "comment of {t}.tid");
    }
    (sl, direct)
}

/// The oracle's cases on table `t` through sluice and `r` directly.
async fn oracle(cluster: &Cluster, s: &Sluice, db: &str, t: &str, r: &str) -> Runner {
    Runner::new(&format!("127.0.0.1:{}", s.port), &cluster.master.addr(), db, t, r).await
}

async fn fingerprint(direct: &mut Conn, db: &str) -> Vec<String> {
    let mut out = Vec::new();
    for t in [
        "post_reply_0",
        "post_reply_1",
        "post_reply_2",
        "post_reply_3",
        "ref",
    ] {
        let a = run(direct, &format!("SELECT * FROM {t} ORDER BY id"))
            .await
            .unwrap_or_else(|e| panic!("read {t}: {e}"));
        out.push(format!("{t}: {:?}", a.rows));
    }
    let tables = run(
        direct,
        &format!("SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY table_name"),
    )
    .await
    .expect("tables");
    out.push(format!("tables: {:?}", tables.rows));
    let cols = run(
        direct,
        &format!("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = '{db}' ORDER BY table_name, ordinal_position"),
    )
    .await
    .expect("columns");
    out.push(format!("columns: {:?}", cols.rows));
    out
}

// ---------------------------------------------------------------------------------------
// Refusals: error 1235 with a sentence, and nothing written
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn unsupported_statements_are_refused_and_write_nothing() {
    let cluster = shared_cluster();
    let db = unique_name("shard_refuse");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    let (mut sl, mut direct) = create_tables(cluster, &s, &db).await;
    let mut rng = Rng(77);
    let data: Vec<Reply> = (1..=400).map(|id| reply(&mut rng, id)).collect();
    write(&mut sl, &insert_sql("post_reply", &data))
        .await
        .expect("load through sluice");
    write(&mut direct, &insert_sql("ref", &data))
        .await
        .expect("load ref");
    let before = fingerprint(&mut direct, &db).await;

    let row =
        |id: u32, tid: &str| format!("({id}, {tid}, 1, 's', '2021-01-01 00:00:00', 'm', 1, 'alpha', 1.00)");
    let cols = COLUMNS;
    let refused: Vec<String> = vec![
        // Reads that cannot be answered exactly.
        "SELECT * FROM post_reply a JOIN post_reply b ON a.id = b.id".into(),
        "SELECT * FROM ref r LEFT JOIN post_reply p ON p.id = r.id".into(),
        "SELECT GROUP_CONCAT(subject) FROM post_reply".into(),
        "SELECT * FROM post_reply ORDER BY 2".into(),
        "WITH c AS (SELECT * FROM post_reply) SELECT * FROM c".into(),
        // The key column changes.
        "UPDATE post_reply SET tid = 5 WHERE id = 1".into(),
        "UPDATE post_reply SET tid = tid + 4, subject = 'moved'".into(),
        "UPDATE post_reply SET subject = 'x', `TID` = 1 WHERE tid = 4".into(),
        format!(
            "INSERT INTO post_reply ({cols}) VALUES {} ON DUPLICATE KEY UPDATE tid = 3",
            row(1, "4")
        ),
        // INSERTs sluice cannot place.
        "INSERT INTO post_reply (id, subject) VALUES (9002, 'no key')".into(),
        format!(
            "INSERT INTO post_reply ({cols}) VALUES {}, {}",
            row(9003, "4"),
            row(9004, "NULL")
        ),
        format!(
            "INSERT INTO post_reply ({cols}) VALUES {}, {}",
            row(9005, "8"),
            row(9006, "1 + 1")
        ),
        format!(
            "INSERT INTO post_reply ({cols}) VALUES {}, {}",
            row(9007, "8"),
            row(9008, "'12abc'")
        ),
        format!("INSERT INTO post_reply ({cols}) VALUES {}", row(9009, "4.5")),
        format!("INSERT INTO post_reply ({cols}) SELECT {cols} FROM ref WHERE id < 10"),
        "INSERT INTO ref SELECT * FROM post_reply WHERE tid = 4".into(),
        // Multi-shard UPDATE/DELETE with ORDER BY/LIMIT, multi-table, subqueries.
        "UPDATE post_reply SET subject = 'x' ORDER BY id LIMIT 3".into(),
        "DELETE FROM post_reply ORDER BY id LIMIT 3".into(),
        "DELETE FROM post_reply WHERE id IN (SELECT id FROM post_reply WHERE tid = 4)".into(),
        "UPDATE post_reply p JOIN ref r ON r.id = p.id SET p.subject = 'joined'".into(),
        "DELETE p FROM post_reply p JOIN ref r ON r.id = p.id".into(),
        "UPDATE ref SET subject = (SELECT MAX(subject) FROM post_reply)".into(),
        "DELETE FROM ref WHERE id IN (SELECT id FROM post_reply)".into(),
        // DDL and other statements.
        "CREATE TABLE copy1 LIKE post_reply".into(),
        "CREATE TABLE copy2 AS SELECT * FROM post_reply".into(),
        "CREATE VIEW v1 AS SELECT * FROM post_reply".into(),
        "ALTER TABLE post_reply DROP COLUMN tid".into(),
        "RENAME TABLE post_reply TO renamed".into(),
        "ALTER TABLE post_reply RENAME TO renamed".into(),
        // Several statements in one query.
        "SELECT 1 FROM post_reply WHERE tid = 4; DELETE FROM post_reply".into(),
        "UPDATE post_reply SET score = 0 WHERE tid = 4; DELETE FROM ref".into(),
        // String keys the hash rule cannot place exactly (emoji under a ci rule).
        "INSERT INTO t2 (id, name) VALUES (1, '🙂')".into(),
    ];
    let mut failures = Vec::new();
    let mut sentences = Vec::new();
    for sql in &refused {
        match write(&mut sl, sql).await {
            Err(Failure::Server(NOT_SUPPORTED, msg)) => {
                if !(msg.starts_with("sluice") && msg.len() > 25) {
                    failures.push(format!("{sql}\n    1235 without a sentence: {msg:?}"));
                }
                sentences.push(format!("{} -> {msg}", short(sql)));
            }
            Err(Failure::Other(e)) => {
                failures.push(format!("{sql}\n    connection failure instead of 1235: {e}"));
                sl = connect(&s.app_url(&db)).await;
            }
            other => failures.push(format!("{sql}\n    expected error 1235, got {other:?}")),
        }
        let now = fingerprint(&mut direct, &db).await;
        if now != before {
            failures.push(format!("{sql}\n    was refused (or not) but changed the data"));
            panic!(
                "{}\nafter `{sql}` the tables or their contents changed",
                failures.join("\n")
            );
        }
    }

    // Prepared statements (see tests/sharding_prepared.rs) are refused in the same shapes,
    // at PREPARE or, when a parameter decides (a NULL key), at EXECUTE; also writes.
    let prepared: Vec<(&str, Vec<Value>)> = vec![
        (
            "SELECT a.id FROM post_reply a JOIN post_reply b ON a.id = b.id WHERE a.tid = ?",
            vec![Value::from(4)],
        ),
        ("SELECT GROUP_CONCAT(subject) FROM post_reply WHERE user_id = ?", vec![Value::from(4)]),
        (
            "INSERT INTO post_reply (id, tid, user_id, subject, create_time, message) VALUES (?, ?, 1, 's', '2021-01-01', 'm')",
            vec![Value::from(9100), Value::NULL],
        ),
        ("UPDATE post_reply SET tid = ? WHERE id = ?", vec![Value::from(5), Value::from(4)]),
        ("DELETE FROM post_reply WHERE user_id = ? ORDER BY id LIMIT 1", vec![Value::from(4)]),
    ];
    for (sql, params) in prepared {
        let params = if params.is_empty() {
            mysql_async::Params::Empty
        } else {
            mysql_async::Params::Positional(params)
        };
        match sl.exec_drop(sql, params).await.map_err(failure) {
            Err(Failure::Server(NOT_SUPPORTED, msg)) => {
                sentences.push(format!("(prepared) {sql} -> {msg}"));
            }
            Err(Failure::Other(e)) => {
                failures.push(format!(
                    "prepared {sql}\n    connection failure instead of 1235: {e}"
                ));
                sl = connect(&s.app_url(&db)).await;
            }
            other => failures.push(format!("prepared {sql}\n    expected error 1235, got {other:?}")),
        }
        assert_eq!(
            fingerprint(&mut direct, &db).await,
            before,
            "prepared `{sql}` changed the data"
        );
    }

    // A multi-row INSERT over several sub-tables that fails on one (duplicate id there):
    // the server's error, and none of its rows anywhere.
    let dup = &data[5];
    let sql = format!(
        "INSERT INTO post_reply ({cols}) VALUES {}, {}, {}, {}",
        row(9200, "4"),
        row(9201, "5"),
        row(9202, "6"),
        row(dup.id, &dup.tid.to_string())
    );
    match write(&mut sl, &sql).await {
        Err(Failure::Server(1062, _)) => {}
        other => failures.push(format!("{sql}\n    expected error 1062, got {other:?}")),
    }
    assert_eq!(
        fingerprint(&mut direct, &db).await,
        before,
        "a failed multi-shard INSERT left rows behind"
    );
    // The session still works and sees the data unchanged.
    let n: Option<u64> = sl
        .query_first("SELECT COUNT(*) FROM post_reply")
        .await
        .expect("count after refusals");
    assert_eq!(n, Some(400));

    eprintln!("refused statements and their sentences:");
    for l in &sentences {
        eprintln!("  {l}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    drop(sl);
    drop(direct);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

// ---------------------------------------------------------------------------------------
// Literals, byte for byte
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn literals_arrive_byte_for_byte() {
    let cluster = shared_cluster();
    let db = unique_name("shard_lit");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    let (mut sl, mut direct) = create_tables(cluster, &s, &db).await;
    let mut x = oracle(cluster, &s, &db, "post_reply", "ref").await;
    // Refused (1235) or answered exactly.
    let may_refuse = Demands {
        supported: false,
        ..SUPPORTED
    };

    // (literal as written in SQL, the bytes the server must store). The second half is
    // written differentially: whatever the server makes of it directly is the truth.
    let cases: Vec<(&str, Option<&str>)> = vec![
        ("'plain'", Some("plain")),
        ("'it''s'", Some("it's")),
        ("'it\\'s'", Some("it's")),
        ("'back\\\\slash'", Some("back\\slash")),
        ("'C:\\\\path\\\\'", Some("C:\\path\\")),
        ("'\\\\'", Some("\\")),
        ("'\\\\\\''", Some("\\'")),
        ("'say \"hi\"'", Some("say \"hi\"")),
        ("'\"'", Some("\"")),
        ("'tab\\there'", Some("tab\there")),
        ("'line\\nbreak'", Some("line\nbreak")),
        ("'raw\nnewline'", Some("raw\nnewline")),
        ("'nul\\0byte'", Some("nul\0byte")),
        ("'回复标题 帖子'", Some("回复标题 帖子")),
        ("'emoji 🙂😀 and ZWJ 👩‍💻'", Some("emoji 🙂😀 and ZWJ 👩‍💻")),
        ("'combining e\u{301}'", Some("combining e\u{301}")),
        ("'한국어'", Some("한국어")),
        ("'what? ?'", Some("what? ?")),
        (
            "'post_reply and post_reply_0'",
            Some("post_reply and post_reply_0"),
        ),
        ("'/* post_reply */ -- x'", Some("/* post_reply */ -- x")),
        ("'`tid` = 4'", Some("`tid` = 4")),
        ("\"double quoted\"", Some("double quoted")),
        ("\"it's \\\"dq\\\"\"", Some("it's \"dq\"")),
        ("'100% \\% \\_'", None),
        ("'\\Z \\b \\r'", None),
        ("'\\x \\q'", None),
        ("_utf8mb4'introducer'", None),
        ("X'E59B9EE5A48D'", None),
        ("'con' 'cat' \"enated\"", None),
        ("CONCAT('a\\'', \"b\\\\\", 'c''')", None),
        ("''", Some("")),
        ("'  trailing  '", Some("  trailing  ")),
    ];
    let mut failures = Vec::new();
    let mut lookups = Vec::new();
    for (i, (literal, expected)) in cases.iter().enumerate() {
        let id = 1 + i as u32;
        let tid = 4 + i as u32; // every shard in turn
        let values =
            format!("({id}, {tid}, 1, {literal}, '2021-01-01 00:00:00', {literal}, NULL, {literal}, 0)");
        let sql_sharded = format!("INSERT INTO post_reply ({COLUMNS}) VALUES {values}");
        let sql_ref = format!("INSERT INTO ref ({COLUMNS}) VALUES {values}");
        let want = write(&mut direct, &sql_ref).await;
        let got = write(&mut sl, &sql_sharded).await;
        match (&want, &got) {
            (Ok(1), Ok(1)) => {}
            (_, Err(Failure::Server(NOT_SUPPORTED, m))) => {
                eprintln!("literal {literal}: refused ({m}); the reference: {want:?}");
                direct
                    .query_drop(format!("DELETE FROM ref WHERE id = {id}"))
                    .await
                    .expect("delete from ref");
                continue;
            }
            (Err(w), Err(g)) if w.code() == g.code() => continue,
            _ => {
                failures.push(format!("{literal}: reference {want:?}, sluice {got:?}"));
                continue;
            }
        }
        let read = |t: String| format!("SELECT subject, message, tag FROM {t} WHERE id = {id}");
        let stored = run(&mut direct, &read(format!("post_reply_{}", tid % 4)))
            .await
            .expect("read sub-table");
        let reference = run(&mut direct, &read("ref".into())).await.expect("read ref");
        if stored.rows != reference.rows || stored.rows.len() != 1 {
            failures.push(format!(
                "{literal}: stored {:?}, reference {:?}",
                stored.rows.iter().map(|r| show_row(r)).collect::<Vec<_>>(),
                reference.rows.iter().map(|r| show_row(r)).collect::<Vec<_>>()
            ));
            continue;
        }
        if let Some(exp) = expected {
            for c in &stored.rows[0] {
                if c.as_deref() != Some(exp.as_bytes()) {
                    failures.push(format!("{literal}: stored {}, expected {:?}", show_cell(c), exp));
                }
            }
        }
        // To find again through sluice by the same literal (one shard by key, and all).
        for (col, by_key) in [("subject", true), ("message", false)] {
            let q = |t: &str| {
                if by_key {
                    format!("SELECT id FROM {t} WHERE {col} = {literal} AND tid = {tid}")
                } else {
                    format!("SELECT id FROM {t} WHERE {col} = {literal} ORDER BY id")
                }
            };
            lookups.push(q("@T@"));
        }
    }
    // sluice reads from the replicas (freshness off): let them catch up.
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
    for q in &lookups {
        let found = Demands {
            min_rows: 1,
            ..SUPPORTED
        };
        x.both(q, q, q.contains("ORDER BY"), found).await;
    }
    // In the default sql_mode "x" is a string: sorting or grouping by it is by a constant.
    for sql in [
        "SELECT id FROM post_reply WHERE tid IN (4, 5, 6, 7, 8, 9) ORDER BY \"create_time\" DESC, id LIMIT 5",
        "SELECT id, \"tid\" FROM post_reply ORDER BY \"tid\", id DESC LIMIT 5",
        "SELECT \"k\" AS k, COUNT(*) FROM post_reply GROUP BY \"k\"",
        "SELECT COUNT(*), MAX(\"tid\") FROM post_reply WHERE subject = \"plain\" OR message = \"it's\"",
    ] {
        let label = format!("[double-quoted strings] {sql}");
        x.both(&label, &sql.replace("post_reply", "@T@"), true, may_refuse)
            .await;
    }
    // UPDATE with literals, by key and broadcast.
    for sql in [
        "UPDATE post_reply SET subject = 'upd \\\\ it''s 🙂' WHERE tid = 5",
        "UPDATE post_reply SET message = CONCAT(message, '\\'', \"\\\\\") WHERE id = 3",
    ] {
        let a = write(&mut sl, sql).await;
        let b = write(&mut direct, &sql.replace("post_reply", "ref")).await;
        match (&a, &b) {
            (Ok(x), Ok(y)) if x == y => {}
            _ => failures.push(format!("{sql}: sluice {a:?}, reference {b:?}")),
        }
    }
    let sub: Vec<Answer> = {
        let mut v = Vec::new();
        for k in 0..4 {
            v.push(
                run(
                    &mut direct,
                    &format!("SELECT id, subject, message, tag FROM post_reply_{k}"),
                )
                .await
                .expect("read"),
            );
        }
        v
    };
    let mut all: Vec<Vec<Cell>> = sub.into_iter().flat_map(|a| a.rows).collect();
    all.sort();
    let mut reference = run(&mut direct, "SELECT id, subject, message, tag FROM ref")
        .await
        .expect("read ref")
        .rows;
    reference.sort();
    if all != reference {
        failures.push("after the UPDATEs the sub-tables differ from the reference".into());
    }

    // NO_BACKSLASH_ESCAPES: a backslash is an ordinary character. sluice must either keep
    // the bytes or refuse; never store something else.
    sl.query_drop("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        .await
        .expect("set sql_mode through sluice");
    direct
        .query_drop("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        .await
        .expect("set sql_mode");
    let values = "(900, 7, 1, 'C:\\path\\', '2021-01-01 00:00:00', 'a\\''b', NULL, '\\', 0)";
    let want = write(
        &mut direct,
        &format!("INSERT INTO ref ({COLUMNS}) VALUES {values}"),
    )
    .await;
    let got = write(
        &mut sl,
        &format!("INSERT INTO post_reply ({COLUMNS}) VALUES {values}"),
    )
    .await;
    match (&want, &got) {
        (Ok(_), Ok(_)) => {
            let q = |t: &str| format!("SELECT subject, message, tag FROM {t} WHERE id = 900");
            let a = run(&mut direct, &q("post_reply_3")).await.map(|a| a.rows);
            let b = run(&mut direct, &q("ref")).await.map(|a| a.rows);
            match (a, b) {
                (Ok(a), Ok(b)) if a == b => {}
                (a, b) => failures.push(format!("NO_BACKSLASH_ESCAPES: stored {a:?}, reference {b:?}")),
            }
        }
        (Ok(_), Err(Failure::Server(NOT_SUPPORTED, m))) => {
            eprintln!("NO_BACKSLASH_ESCAPES literal refused: {m}");
            direct
                .query_drop("DELETE FROM ref WHERE id = 900")
                .await
                .expect("delete from ref");
        }
        _ => failures.push(format!(
            "NO_BACKSLASH_ESCAPES: reference {want:?}, sluice {got:?}"
        )),
    }

    // ANSI_QUOTES: "x" is an identifier (a column), not a string. Merged reads that sort,
    // group or select by such a name must follow the column, or be refused.
    let ansi = "SET SESSION sql_mode = 'ANSI_QUOTES'";
    sl.query_drop(ansi).await.expect("set sql_mode through sluice");
    direct.query_drop(ansi).await.expect("set sql_mode");
    x.both_must(ansi).await;
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
    for sql in [
        "SELECT id, \"subject\" FROM post_reply WHERE tid IN (4, 5, 6, 7, 8, 9) ORDER BY \"id\" DESC LIMIT 4",
        "SELECT id FROM post_reply ORDER BY \"tid\" DESC, id LIMIT 5",
        "SELECT \"tid\" % 4 AS s, COUNT(*) FROM post_reply GROUP BY \"tid\" % 4 ORDER BY s",
        "SELECT MAX(\"id\"), SUM(\"tid\") FROM post_reply",
        "SELECT COUNT(DISTINCT \"tid\") FROM post_reply",
    ] {
        let label = format!("[ANSI_QUOTES] {sql}");
        x.both(&label, &sql.replace("post_reply", "@T@"), true, may_refuse)
            .await;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    x.assert_none_failed();
    drop(sl);
    drop(direct);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

// ---------------------------------------------------------------------------------------
// Strings under each column's collation
// ---------------------------------------------------------------------------------------

/// ORDER BY, GROUP BY, DISTINCT, COUNT(DISTINCT), MIN/MAX of string columns must follow
/// the column's collation ("strings under the column's collation"), whatever the
/// connection's collation is: general_ci, unicode_ci (punctuation before letters,
/// 'ß' = 'ss'), unicode_520_ci, a NO PAD collation, _bin, VARBINARY and latin1.
#[tokio::test]
async fn string_collations_merge_like_the_server() {
    let cluster = shared_cluster();
    let db = unique_name("shard_coll");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    let mut sl = connect(&s.app_url(&db)).await;
    // (column, its collation for equality checks; None: bytes)
    let cols: [(&str, &str, Option<&str>); 7] = [
        (
            "gen",
            "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
            Some("utf8mb4_general_ci"),
        ),
        (
            "uni",
            "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
            Some("utf8mb4_unicode_ci"),
        ),
        (
            "u520",
            "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci",
            Some("utf8mb4_unicode_520_ci"),
        ),
        (
            "nopad",
            "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_nopad_ci",
            Some("utf8mb4_general_nopad_ci"),
        ),
        (
            "bin",
            "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            Some("utf8mb4_bin"),
        ),
        ("vb", "VARBINARY(40)", None),
        (
            "lat",
            "VARCHAR(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci",
            Some("latin1_swedish_ci"),
        ),
    ];
    let ddl = |t: &str| {
        let defs: Vec<String> = cols.iter().map(|(c, ty, _)| format!("{c} {ty} NULL")).collect();
        format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, tid INT NOT NULL, {})",
            defs.join(", ")
        )
    };
    sl.query_drop(ddl("post_reply"))
        .await
        .expect("CREATE TABLE post_reply through sluice");
    direct.query_drop(ddl("ref")).await.expect("CREATE TABLE ref");
    let labels = [
        "a_b", "aB", "a-b", "a b", "A.b", "ab", "Ab", "é", "e", "E", "z", "_", "1", "a'b", "ß", "ss", "s",
        "Æ", "ae", "中", "🙂", "😀", "-", "a", "", " ", "a ", "Ä", "\\", "Ö", "o", "ü", "y",
    ];
    let mut rng = Rng(99);
    let mut values = Vec::new();
    for id in 1..=600u32 {
        let mut row = vec![id.to_string(), rng.below(1000).to_string()];
        for (c, _, _) in &cols {
            let l = *rng.pick(&labels);
            let latin1 = l
                .chars()
                .all(|ch| (ch as u32) < 0x80 || ('\u{a0}'..='\u{ff}').contains(&ch));
            row.push(if rng.chance(0.05) || (*c == "lat" && !latin1) {
                "NULL".into()
            } else {
                lit(l, false)
            });
        }
        values.push(format!("({})", row.join(", ")));
    }
    let names: Vec<&str> = cols.iter().map(|c| c.0).collect();
    let insert = format!(
        "INSERT INTO post_reply (id, tid, {}) VALUES {}",
        names.join(", "),
        values.join(", ")
    );
    let a = write(&mut sl, &insert).await.expect("insert through sluice");
    let b = write(&mut direct, &insert.replace("INTO post_reply", "INTO ref"))
        .await
        .expect("insert ref");
    assert_eq!(a, b);
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));

    let mut x = oracle(cluster, &s, &db, "post_reply", "ref").await;
    let mut summary = Vec::new();
    for (c, _, coll) in &cols {
        let ci = |q: Q, k: &[usize]| match coll {
            Some(name) => q.ci(k).collation(name),
            None => q,
        };
        let queries = [
            Q::new(
                "ORDER BY",
                format!("SELECT id, {c} FROM post_reply ORDER BY {c}, id"),
            ),
            Q::new(
                "ORDER BY DESC + LIMIT",
                format!("SELECT id, {c} FROM post_reply ORDER BY {c} DESC, id DESC LIMIT 50, 100"),
            ),
            ci(
                Q::new(
                    "GROUP BY",
                    format!("SELECT {c}, COUNT(*) FROM post_reply GROUP BY {c} ORDER BY {c}"),
                ),
                &[0],
            ),
            ci(
                Q::new(
                    "DISTINCT",
                    format!("SELECT DISTINCT {c} FROM post_reply ORDER BY {c} DESC"),
                ),
                &[0],
            ),
            Q::new(
                "COUNT(DISTINCT)",
                format!("SELECT COUNT(DISTINCT {c}) FROM post_reply"),
            ),
            // Several DISTINCT arguments: `c` behind a CASE, compared under its own collation.
            Q::new(
                "several COUNT(DISTINCT)",
                format!("SELECT COUNT(DISTINCT {c}), COUNT(DISTINCT tid), COUNT(*) FROM post_reply"),
            ),
            Q::new(
                "several COUNT(DISTINCT) + GROUP BY",
                format!(
                    "SELECT tid % 3 AS k, COUNT(DISTINCT {c}), COUNT(DISTINCT id % 50) FROM post_reply GROUP BY k ORDER BY k"
                ),
            ),
            ci(
                Q::new("MIN/MAX", format!("SELECT MIN({c}), MAX({c}) FROM post_reply")),
                &[0, 1],
            ),
        ];
        let before = x.tally.failures.len();
        for q in &queries {
            // Refused (1235) or answered exactly; spellings may differ in `q.ci_cols` only.
            let d = Demands {
                supported: false,
                ci: &q.ci_cols,
                collation: q.ci_collation,
                min_rows: 0,
            };
            let label = format!("[{} on {c}, {}] {}", q.kind, coll.unwrap_or("bytes"), q.sql);
            x.both(
                &label,
                &q.sql.replace("post_reply", "@T@"),
                q.order == Order::Full,
                d,
            )
            .await;
        }
        summary.push(format!(
            "{c} ({}): {}/{} runs wrong",
            coll.unwrap_or("bytes"),
            x.tally.failures.len() - before,
            2 * queries.len()
        ));
    }
    eprintln!("collations: {}", summary.join("; "));
    x.assert_none_failed();
    drop(sl);
    drop(direct);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

// ---------------------------------------------------------------------------------------
// A string key under the hash rule
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn hash_rule_places_and_finds_case_variants() {
    let cluster = shared_cluster();
    let db = unique_name("shard_hash");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    let mut sl = connect(&s.app_url(&db)).await;
    let ddl = |t: &str| {
        format!("CREATE TABLE {t} (id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL, v INT NULL)")
    };
    sl.query_drop(ddl("t2"))
        .await
        .expect("CREATE TABLE t2 through sluice");
    direct.query_drop(ddl("ref2")).await.expect("CREATE TABLE ref2");
    let names = [
        "alice",
        "Alice",
        "ALICE",
        "alice ",
        "bob",
        "BOB",
        "Bob  ",
        "carol",
        "O'Neil",
        "o'neil",
        "a\\b",
        "A\\B",
        "張三",
        "李四",
        "김철수",
        "dave",
        "DAVE",
        "",
        " ",
    ];
    let mut values = Vec::new();
    for i in 0..400u32 {
        let n = names[(i as usize * 7 + i as usize / 19) % names.len()];
        let v = if i % 9 == 0 {
            "NULL".to_string()
        } else {
            (i % 37).to_string()
        };
        values.push(format!("({i}, {}, {v})", lit(n, i % 2 == 0)));
    }
    let sql = format!("INSERT INTO t2 (id, name, v) VALUES {}", values.join(", "));
    let a = write(&mut sl, &sql).await.expect("insert through sluice");
    let b = write(&mut direct, &sql.replace("INTO t2", "INTO ref2"))
        .await
        .expect("insert ref2");
    assert_eq!(a, b);
    // Placement: CRC32 of the upper-cased, right-trimmed name (ASCII and CJK/Hangul).
    let misplaced = hash_misplaced(&mut direct).await;
    assert!(misplaced.is_empty(), "misplaced rows: {misplaced:?}");
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
    let mut mismatches: Vec<String> = Vec::new();
    let mut x = oracle(cluster, &s, &db, "t2", "ref2").await;
    let queries = [
        Q::new(
            "hash key =",
            "SELECT id, name, v FROM t2 WHERE name = 'ALICE' ORDER BY id",
        ),
        Q::new(
            "hash key =",
            "SELECT id, name FROM t2 WHERE name = 'bob   ' ORDER BY id",
        ),
        Q::new(
            "hash key IN",
            "SELECT id, name FROM t2 WHERE name IN ('o''neil', 'A\\\\b', '張三', 'nobody') ORDER BY id DESC",
        ),
        Q::new(
            "hash key OR",
            "SELECT COUNT(*), SUM(v) FROM t2 WHERE name = 'Dave' OR name = '김철수'",
        ),
        Q::new(
            "hash GROUP BY",
            "SELECT name, COUNT(*), SUM(v), AVG(v) FROM t2 GROUP BY name ORDER BY name",
        )
        .ci(&[0]),
        Q::new("hash DISTINCT", "SELECT DISTINCT name FROM t2 ORDER BY name DESC").ci(&[0]),
        Q::new("hash COUNT(DISTINCT)", "SELECT COUNT(DISTINCT name) FROM t2"),
        Q::new(
            "hash ORDER BY",
            "SELECT id, name FROM t2 ORDER BY name, id DESC LIMIT 30, 40",
        ),
        Q::new("hash key =", "SELECT id FROM t2 WHERE name = '' ORDER BY id"),
    ];
    for q in &queries {
        let d = Demands {
            ci: &q.ci_cols,
            collation: q.ci_collation,
            ..SUPPORTED
        };
        let label = format!("[{}] {}", q.kind, q.sql);
        x.both(
            &label,
            &q.sql.replace("FROM t2", "FROM @T@"),
            q.order == Order::Full,
            d,
        )
        .await;
    }
    let updated = write(&mut sl, "UPDATE t2 SET v = 1000 WHERE name = 'alice'").await;
    let updated_ref = write(&mut direct, "UPDATE ref2 SET v = 1000 WHERE name = 'alice'").await;
    assert_eq!(
        format!("{updated:?}"),
        format!("{updated_ref:?}"),
        "UPDATE by a string key"
    );

    // Under NO_BACKSLASH_ESCAPES, 'p\\q' is p, two backslashes, q: a key must be placed
    // (and looked up) by that value, or the statement refused.
    let nbe = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')";
    // Each lookup finds its rows.
    let found = Demands {
        min_rows: 1,
        ..SUPPORTED
    };
    sl.query_drop(nbe).await.expect("sql_mode through sluice");
    direct.query_drop(nbe).await.expect("sql_mode");
    x.both_must(nbe).await;
    let ins = "INSERT INTO t2 (id, name, v) VALUES (1000, 'p\\\\q', 1), (1001, 'x\\\\', 2)";
    match write(&mut sl, ins).await {
        Ok(2) => {
            let misplaced = hash_misplaced(&mut direct).await;
            if !misplaced.is_empty() {
                mismatches.push(format!(
                    "{ins} under NO_BACKSLASH_ESCAPES put rows in the wrong sub-table: {misplaced:?}"
                ));
            }
            write(&mut direct, &ins.replace("INTO t2", "INTO ref2"))
                .await
                .expect("insert ref2");
            cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
            for q in [
                "SELECT id, name FROM t2 WHERE name = 'P\\\\Q' ORDER BY id",
                "SELECT id, name FROM t2 WHERE name IN ('X\\\\', 'p\\\\q') ORDER BY id",
            ] {
                let label = format!("{q} (NO_BACKSLASH_ESCAPES)");
                x.both(&label, &q.replace("FROM t2", "FROM @T@"), true, found)
                    .await;
            }
            // The same rows looked up by a session in the default sql_mode.
            let default_mode = "SET SESSION sql_mode = REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', '')";
            sl.query_drop(default_mode)
                .await
                .expect("sql_mode through sluice");
            direct.query_drop(default_mode).await.expect("sql_mode");
            x.both_must(default_mode).await;
            for q in [
                "SELECT id, name FROM t2 WHERE name = 'P\\\\\\\\Q' ORDER BY id",
                "SELECT id, name FROM t2 WHERE name = 'x\\\\\\\\' ORDER BY id",
            ] {
                let label = format!("{q} (default sql_mode, rows inserted under NO_BACKSLASH_ESCAPES)");
                x.both(&label, &q.replace("FROM t2", "FROM @T@"), true, found)
                    .await;
            }
        }
        Err(Failure::Server(NOT_SUPPORTED, m)) => {
            eprintln!("NO_BACKSLASH_ESCAPES string key refused: {m}")
        }
        other => mismatches.push(format!("{ins} under NO_BACKSLASH_ESCAPES: {other:?}")),
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    x.assert_none_failed();
    drop(sl);
    drop(direct);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// Rows of t2_k whose name does not hash to k (CRC32 of the upper-cased, right-trimmed
/// name, the rule's documented placement for ASCII, CJK and Hangul keys).
async fn hash_misplaced(direct: &mut Conn) -> Vec<String> {
    let mut out = Vec::new();
    for k in 0..4 {
        let rows: Vec<(u32, String)> = direct
            .query(format!(
                "SELECT id, name FROM t2_{k} WHERE CRC32(UPPER(TRIM(TRAILING ' ' FROM name))) % 4 <> {k}"
            ))
            .await
            .expect("placement");
        out.extend(
            rows.into_iter()
                .map(|(id, n)| format!("t2_{k}: id {id} name {n:?}")),
        );
    }
    out
}

// ---------------------------------------------------------------------------------------
// Freshness of scatter reads (own cluster: it stops replication)
// ---------------------------------------------------------------------------------------

/// "A scatter read goes to each group's fresh replica or master by the same rules as
/// unsharded reads": in `causal` mode a client reads its own completed writes, and reads
/// of tables without sluice's triggers go to the master. Here the sub-tables are created
/// after the triggers were installed (so they have none), the replica stops applying, and
/// a write through sluice must still be seen by the next read through sluice.
#[tokio::test]
async fn causal_scatter_reads_see_own_writes_own_cluster() {
    let cluster = Cluster::start(1);
    let db = "shard_fresh";
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.tracked (id INT PRIMARY KEY)"
    ));
    let mut admin = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db)).await;
    sluice::freshness::triggers::install(&mut admin, "sluice", db, 16)
        .await
        .expect("install triggers");
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
    let s = Sluice::start_for(
        &cluster,
        &format!(
            "log:\n  level: warn\nfreshness:\n  mode: causal\n  probe_interval: 10ms\n  probe_timeout: 500ms\nsharding:\n  tables: [\"{db}.post_reply.tid.4\"]\n"
        ),
    );
    let mut c = connect(&s.app_url(db)).await;
    c.query_drop(schema("post_reply"))
        .await
        .expect("CREATE TABLE post_reply through sluice");
    c.query_drop("CREATE TABLE plain (id INT PRIMARY KEY)")
        .await
        .expect("CREATE TABLE plain through sluice");
    let mut rng = Rng(5);
    let rows: Vec<Reply> = (1..=8).map(|id| reply(&mut rng, id)).collect();
    c.query_drop(insert_sql("post_reply", &rows))
        .await
        .expect("insert through sluice");
    c.query_drop("INSERT INTO tracked VALUES (1)")
        .await
        .expect("insert");
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
    // Wait until sluice sends reads of the tracked table to the replica.
    let master_id: u32 = cluster.master.sql("SELECT @@server_id").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let sid: Option<u32> = c
            .query_first("SELECT @@server_id + 0 * COUNT(*) FROM tracked")
            .await
            .expect("read tracked");
        if sid != Some(master_id) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reads never reached the replica\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    cluster.replicas[0].stop_sql_thread();
    let mut problems = Vec::new();
    let more: Vec<Reply> = (9..=16).map(|id| reply(&mut rng, id)).collect();
    c.query_drop(insert_sql("post_reply", &more))
        .await
        .expect("insert through sluice");
    c.query_drop("INSERT INTO plain VALUES (1)")
        .await
        .expect("insert plain");
    let one_sql = format!("SELECT COUNT(*) FROM post_reply WHERE tid = {}", more[0].tid);
    let one = rows.iter().chain(&more).filter(|r| r.tid == more[0].tid).count() as u64;
    for (sql, want) in [
        ("SELECT COUNT(*) FROM plain", 1u64),
        ("SELECT COUNT(*) FROM post_reply", 16),
        (
            "SELECT COUNT(*) FROM post_reply WHERE id > 0 ORDER BY 1 LIMIT 1",
            16,
        ),
        (one_sql.as_str(), one),
    ] {
        let got: Option<u64> = c.query_first(sql).await.expect("read through sluice");
        if got != Some(want) {
            problems.push(format!(
                "{sql}: {got:?} through sluice right after the write, {want} on the master (a stale replica answered)"
            ));
        }
    }
    cluster.replicas[0].start_sql_thread();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
