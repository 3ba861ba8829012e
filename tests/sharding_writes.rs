//! Writes with bound parameters on a sharded table, differentially (issue 42): the same
//! prepared statements, with the same typed parameters, run in the binary protocol
//! through sluice on the sharded table `pw` (4 sub-tables, `tid mod 4`) and directly on
//! the unsharded reference `ref`. Compared: each statement's answer (affected rows,
//! insert id and warnings of its OK, or its error code and message), then the stored
//! rows of every sub-table and of the reference, byte for byte, and every row's place.
//!
//! The values are what applications bind: bytes that are not UTF-8 (a UUID in BINARY(16),
//! a hash in VARBINARY) bound as string parameters, with 0x00, 0x5C (`\`), 0x27 (`'`);
//! every column type; NULLs; long data (COM_STMT_SEND_LONG_DATA, in pieces); multi-row
//! INSERTs over several sub-tables; ON DUPLICATE KEY UPDATE; UPDATE and DELETE with
//! bound keys. sluice runs each sub-table's part as a prepared statement with the
//! client's parameters, so none of this may differ from the one table.

mod common;

use std::time::Duration;

use common::cluster::*;
use common::wire::{self, lenenc_value as lenenc, raw, Param, Part, Reply, Wire};
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

const TINY: u8 = 0x01;
const DOUBLE: u8 = 0x05;
const FLOAT: u8 = 0x04;
const LONGLONG: u8 = 0x08;
const DATE: u8 = 0x0a;
const TIME: u8 = 0x0b;
const DATETIME: u8 = 0x0c;
const NEWDECIMAL: u8 = 0xf6;
const BLOB: u8 = 0xfc;
const VAR_STRING: u8 = 0xfd;
const STRING: u8 = 0xfe;

fn schema(table: &str) -> String {
    format!(
        "CREATE TABLE `{table}` (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT,
  tid INT NOT NULL,
  uuid BINARY(16) NULL,
  hash VARBINARY(64) NULL,
  data MEDIUMBLOB NULL,
  txt MEDIUMTEXT NULL,
  lat VARCHAR(40) CHARACTER SET latin1 NULL,
  amount DECIMAL(30,6) NULL,
  dbl DOUBLE NULL,
  flt FLOAT NULL,
  dt DATETIME(6) NULL,
  d DATE NULL,
  tm TIME(6) NULL,
  ts TIMESTAMP(6) NULL DEFAULT NULL,
  b BIT(12) NULL,
  e ENUM('a','b','c') NULL,
  s SET('x','y') NULL,
  j JSON NULL,
  y YEAR NULL,
  big BIGINT UNSIGNED NULL,
  tiny TINYINT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY (hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
    )
}

const COLUMNS: &str =
    "id, tid, uuid, hash, data, txt, lat, amount, dbl, flt, dt, d, tm, ts, b, e, s, j, y, big, tiny";

/// Bytes bound as a string parameter (VAR_STRING), as drivers bind a `&[u8]`.
fn bytes(b: &[u8]) -> Param {
    raw(VAR_STRING, false, lenenc(b))
}

fn int(v: i64) -> Param {
    raw(LONGLONG, false, v.to_le_bytes().to_vec())
}

#[allow(clippy::too_many_arguments)]
fn datetime(ty: u8, y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, micro: u32) -> Param {
    let mut v = y.to_le_bytes().to_vec();
    v.extend_from_slice(&[mo, d, h, mi, s]);
    v.extend_from_slice(&micro.to_le_bytes());
    let mut out = vec![v.len() as u8];
    out.extend(v);
    raw(ty, false, out)
}

fn time(neg: bool, days: u32, h: u8, mi: u8, s: u8, micro: u32) -> Param {
    let mut v = vec![u8::from(neg)];
    v.extend_from_slice(&days.to_le_bytes());
    v.extend_from_slice(&[h, mi, s]);
    v.extend_from_slice(&micro.to_le_bytes());
    let mut out = vec![v.len() as u8];
    out.extend(v);
    raw(TIME, false, out)
}

/// A UUID-like 16 bytes holding NUL, `\`, `'`, and bytes that are not UTF-8.
fn uuid(n: u8) -> Vec<u8> {
    vec![
        0x00, 0x5c, 0x27, 0xff, 0xfe, 0xc3, 0x28, n, 0x80, 0x00, 0x22, 0x5c, 0x5c, 0x27, 0x27, 0xe9,
    ]
}

/// One row of every column type; `n` varies the values, `tid` places it.
fn row(id: i64, tid: i64, n: u8, nulls: bool) -> Vec<Param> {
    if nulls {
        let mut r = vec![int(id), int(tid)];
        r.extend(std::iter::repeat_n(Param::Null, 19));
        return r;
    }
    let mut hash: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37).wrapping_add(n)).collect();
    hash.extend_from_slice(b"\\'\x00\"");
    vec![
        int(id),
        // The key as a string parameter on one row, as drivers often bind it.
        if n % 2 == 0 {
            int(tid)
        } else {
            bytes(tid.to_string().as_bytes())
        },
        bytes(&uuid(n)),
        bytes(&hash),
        raw(
            BLOB,
            false,
            lenenc(&[0x00, 0xff, n, 0x5c, 0x27, 0x0a, 0x0d, 0x1a]),
        ),
        bytes(format!("it's a \\ test {n} 😀 \"q\" \u{0}nul").as_bytes()),
        bytes("café naïve".as_bytes()),
        raw(
            NEWDECIMAL,
            false,
            lenenc(format!("-12345678901234567.{n:06}").as_bytes()),
        ),
        raw(
            DOUBLE,
            false,
            (0.1f64 + f64::from(n) / 3.0).to_le_bytes().to_vec(),
        ),
        raw(FLOAT, false, (1.5f32 / f32::from(n + 1)).to_le_bytes().to_vec()),
        datetime(DATETIME, 2024, 2, 29, 23, 59, n % 60, 123_456),
        datetime(DATE, 1999, 12, 31, 0, 0, 0, 0),
        time(n % 2 == 1, 1, 2, 3, 4, 5),
        datetime(DATETIME, 2021, 3, 28, 1, 30, 0, 999_999),
        bytes(&[0x0a, n]),
        bytes(b"b"),
        raw(STRING, false, lenenc(b"x,y")),
        bytes(format!("{{\"k\": \"v\\\\{n}\", \"n\": [1, 2.5, null]}}").as_bytes()),
        raw(TINY, false, vec![n]),
        raw(LONGLONG, true, u64::MAX.to_le_bytes().to_vec()),
        raw(TINY, false, vec![0x80 | n]),
    ]
}

/// What a client sees of one statement: the fields of its OK, or its error.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Ok {
        affected: u64,
        insert_id: u64,
        warnings: u16,
        /// `Records: 3  Duplicates: 1  Warnings: 1`, `Rows matched: …`, or empty.
        info: String,
    },
    Err(u16, String),
}

fn outcome(r: Reply, what: &str) -> Outcome {
    match r {
        Reply::Parts(p) => match p.as_slice() {
            [Part::Ok(ok)] => Outcome::Ok {
                affected: ok.affected_rows,
                insert_id: ok.last_insert_id,
                warnings: ok.warnings,
                info: ok.info.clone(),
            },
            [Part::Err(e)] => Outcome::Err(e.code, e.message.clone()),
            other => panic!("{what}: not one OK or ERR: {other:?}"),
        },
        Reply::PrepareErr(e) => Outcome::Err(e.code, e.message),
        other => panic!("{what}: {other:?}"),
    }
}

/// Prepare `sql` (`{t}` names the table), send `long` as long data in pieces, execute
/// with `params`, close.
async fn run(w: &mut Wire, table: &str, sql: &str, params: &[Param], long: &[(u16, Vec<u8>)]) -> Outcome {
    let sql = sql.replace("{t}", table);
    let stmt = match w.prepare(&sql).await {
        Reply::Prepared(p) => p,
        other => return outcome(other, &sql),
    };
    for (index, data) in long {
        for piece in data.chunks(100_000) {
            let r = w.send_long_data(stmt.stmt_id, *index, piece).await;
            assert_eq!(r, Reply::Nothing, "long data of {sql}");
        }
    }
    let r = outcome(w.execute(stmt.stmt_id, params).await, &sql);
    w.close_stmt(stmt.stmt_id).await;
    r
}

struct Pair {
    sluice: Wire,
    direct: Wire,
}

impl Pair {
    /// The statement through sluice on `pw` and directly on `ref`: the same answer.
    async fn same(&mut self, sql: &str, params: &[Param], long: &[(u16, Vec<u8>)]) -> Outcome {
        let want = run(&mut self.direct, "ref", sql, params, long).await;
        let got = run(&mut self.sluice, "pw", sql, params, long).await;
        assert_eq!(got, want, "{sql}");
        want
    }
}

async fn rows(c: &mut Conn, sql: &str) -> Vec<Vec<Value>> {
    let r: Vec<Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    r.into_iter().map(Row::unwrap).collect()
}

/// The stored rows of the four sub-tables and of the reference, byte for byte; and every
/// row in its key's sub-table.
async fn same_contents(direct: &mut Conn) -> usize {
    let subs = (0..4)
        .map(|k| format!("SELECT {COLUMNS} FROM pw_{k}"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let got = rows(direct, &format!("{subs} ORDER BY id")).await;
    let want = rows(direct, &format!("SELECT {COLUMNS} FROM ref ORDER BY id")).await;
    assert_eq!(got.len(), want.len(), "row counts");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "stored row");
    }
    for k in 0..4 {
        let wrong: Vec<Vec<Value>> =
            rows(direct, &format!("SELECT id FROM pw_{k} WHERE MOD(tid, 4) <> {k}")).await;
        assert!(
            wrong.is_empty(),
            "pw_{k} holds rows of other sub-tables: {wrong:?}"
        );
    }
    want.len()
}

/// A new database with `table` sharded over 4 sub-tables by `tid`, a sluice for it, and
/// a connection directly to the master and one through sluice.
async fn sharded_pair(prefix: &str, table: &str) -> (&'static Cluster, Sluice, String, Conn, Conn) {
    let cluster = shared_cluster();
    let db = unique_name(prefix);
    let s = Sluice::start_for(
        cluster,
        &format!(
            "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.{table}.tid.4\"]\n"
        ),
    );
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let direct = Conn::from_url(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db))
        .await
        .expect("connect direct");
    let sl = Conn::from_url(s.app_url(&db)).await.expect("connect sluice");
    (cluster, s, db, direct, sl)
}

#[tokio::test]
async fn bound_writes_match_the_reference_byte_for_byte() {
    let (cluster, s, db, mut direct, mut sl) = sharded_pair("shard_bw", "pw").await;
    sl.query_drop(schema("pw"))
        .await
        .expect("CREATE TABLE pw through sluice");
    direct.query_drop(schema("ref")).await.expect("CREATE TABLE ref");
    let timeout = Duration::from_secs(60);
    let mut pair = Pair {
        sluice: wire::driver_login(
            &format!("127.0.0.1:{}", s.port),
            APP_USER,
            APP_PASSWORD,
            &db,
            timeout,
        )
        .await,
        direct: wire::driver_login(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db, timeout).await,
    };
    let one = format!("({})", vec!["?"; 21].join(", "));
    let four = format!(
        "INSERT INTO {{t}} ({COLUMNS}) VALUES {}",
        [one.as_str(); 4].join(", ")
    );

    // Four rows on four sub-tables, every type, binary bytes, a row of NULLs.
    let mut params = Vec::new();
    for (id, tid, n, nulls) in [
        (1, 1, 1, false),
        (2, 2, 2, false),
        (3, 7, 3, true),
        (4, 8, 4, false),
    ] {
        params.extend(row(id, tid, n, nulls));
    }
    let o = pair.same(&four, &params, &[]).await;
    assert!(matches!(o, Outcome::Ok { affected: 4, .. }), "{o:?}");

    // One row, one sub-table; then the insert id of a row whose key is a string.
    pair.same(
        &format!("INSERT INTO {{t}} ({COLUMNS}) VALUES {one}"),
        &row(5, 13, 5, false),
        &[],
    )
    .await;
    pair.same(
        "INSERT INTO {t} (id, tid, uuid) VALUES (?, ?, ?), (?, ?, ?)",
        &[
            int(6),
            int(6),
            bytes(&uuid(6)),
            int(7),
            bytes(b"-3"),
            bytes(&uuid(7)),
        ],
        &[],
    )
    .await;

    // A duplicate in a split INSERT: the server's error, nothing written; INSERT IGNORE:
    // its warnings and affected rows.
    let dup = [
        int(20),
        int(5),
        bytes(&[0xff; 3]),
        int(21),
        int(6),
        bytes(&uuid(6)),
    ];
    let o = pair
        .same(
            "INSERT INTO {t} (id, tid, uuid) VALUES (?, ?, ?), (?, ?, ?)",
            &[
                dup[0].clone(),
                dup[1].clone(),
                dup[2].clone(),
                int(6),
                int(6),
                bytes(&uuid(6)),
            ],
            &[],
        )
        .await;
    assert!(matches!(o, Outcome::Err(1062, _)), "{o:?}");
    let o = pair
        .same(
            "INSERT IGNORE INTO {t} (id, tid, uuid) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?)",
            &[dup.to_vec(), vec![int(2), int(2), bytes(b"\x00")]].concat(),
            &[],
        )
        .await;
    assert!(
        matches!(
            o,
            Outcome::Ok {
                affected: 2,
                warnings: 1,
                ..
            }
        ),
        "{o:?}"
    );

    // The OK's info text is the server's for the whole statement (sub-tables' counts
    // added up, a one-row part counted from its affected rows).
    assert!(
        matches!(&o, Outcome::Ok { info, .. } if info == "Records: 3  Duplicates: 1  Warnings: 1"),
        "{o:?}"
    );
    // ON DUPLICATE KEY UPDATE with parameters in the rows and after them.
    let o = pair
        .same(
            "INSERT INTO {t} (id, tid, hash) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE hash = ?, data = VALUES(hash)",
            &[int(1), int(1), bytes(b"\x01\x5c"), int(30), int(10), bytes(b"\x27\x00"), bytes(&[0xfe, 0x00, 0x5c])],
            &[],
        )
        .await;
    assert!(matches!(o, Outcome::Ok { affected: 3, .. }), "{o:?}");

    // Long data: a BLOB and a string parameter sent in pieces (300 kB of every byte).
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let text: Vec<u8> = "\\'é\u{0}x".repeat(20_000).into_bytes();
    let o = pair
        .same(
            "INSERT INTO {t} (id, tid, data, txt, hash) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)",
            &[
                int(40),
                int(40),
                raw(BLOB, false, Vec::new()),
                raw(VAR_STRING, false, Vec::new()),
                bytes(b"l1"),
                int(41),
                int(41),
                Param::Null,
                bytes(b"short"),
                bytes(b"l2"),
            ],
            &[(2, big.clone()), (3, text.clone())],
        )
        .await;
    assert!(matches!(o, Outcome::Ok { affected: 2, .. }), "{o:?}");
    pair.same(
        "UPDATE {t} SET data = ? WHERE tid = ? AND id = ?",
        &[raw(BLOB, false, Vec::new()), int(41), int(41)],
        &[(0, big.iter().rev().copied().collect())],
    )
    .await;

    // UPDATE and DELETE with bound keys and binary values, on one and on every sub-table.
    let o = pair
        .same(
            "UPDATE {t} SET hash = ?, lat = ? WHERE tid = ? AND uuid = ?",
            &[
                bytes(&[0x00, 0x00, 0x5c]),
                bytes("ÿ".as_bytes()),
                int(2),
                bytes(&uuid(2)),
            ],
            &[],
        )
        .await;
    assert!(matches!(o, Outcome::Ok { affected: 1, .. }), "{o:?}");
    pair.same(
        "UPDATE {t} SET amount = amount + ?, txt = CONCAT(txt, ?) WHERE uuid <> ?",
        &[
            raw(NEWDECIMAL, false, lenenc(b"0.000001")),
            bytes(b"\\'"),
            bytes(&uuid(4)),
        ],
        &[],
    )
    .await;
    pair.same(
        "UPDATE {t} SET tiny = ? WHERE tid IN (?, ?, ?)",
        &[Param::Null, int(1), bytes(b"7"), int(-3)],
        &[],
    )
    .await;
    let o = pair
        .same(
            "DELETE FROM {t} WHERE tid = ? AND hash = ?",
            &[int(10), bytes(b"\x27\x00")],
            &[],
        )
        .await;
    assert!(matches!(o, Outcome::Ok { affected: 1, .. }), "{o:?}");
    pair.same("DELETE FROM {t} WHERE uuid = ?", &[bytes(&uuid(7))], &[])
        .await;
    pair.same(
        "REPLACE INTO {t} (id, tid, uuid, hash) VALUES (?, ?, ?, ?)",
        &[int(5), int(13), bytes(&uuid(9)), bytes(b"\x00\x00")],
        &[],
    )
    .await;

    let n = same_contents(&mut direct).await;
    assert!(n >= 10, "{n} rows");
    drop(pair);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// What a text statement leaves: its OK (affected rows, insert id, warnings, info), then
/// `SHOW WARNINGS` and `LAST_INSERT_ID()` asked after it.
async fn text_outcome(c: &mut Conn, sql: &str) -> (String, Result<Vec<Vec<Value>>, u16>, Vec<Vec<Value>>) {
    let ok = match c.query_drop(sql).await {
        Ok(()) => format!(
            "ok affected {} insert id {:?} warnings {} info {:?}",
            c.affected_rows(),
            c.last_insert_id(),
            c.get_warnings(),
            c.info()
        ),
        Err(e) => format!("error {e}"),
    };
    let warnings = match c.query::<Row, _>("SHOW WARNINGS").await {
        Ok(r) => Ok(r.into_iter().map(Row::unwrap).collect()),
        Err(mysql_async::Error::Server(e)) => Err(e.code),
        Err(e) => panic!("SHOW WARNINGS: {e}"),
    };
    let id = rows(c, "SELECT LAST_INSERT_ID(), @@warning_count").await;
    (ok, warnings, id)
}

/// `INSERT IGNORE` on a sharded table, differentially in the text protocol against one
/// table: the OK (affected rows, insert id, warning count, info text), then `SHOW
/// WARNINGS` (the duplicates' 1062, in row order), `LAST_INSERT_ID()` and
/// `@@warning_count` asked after it. Statements whose rows reach one sub-table are
/// compared whole (before, `SHOW WARNINGS` after them was empty); over several
/// sub-tables the OK, and `SHOW WARNINGS` after one with warnings is refused with 1235
/// rather than answered empty (see docs/sharding.md: their warnings are not kept). Insert
/// ids: `insert_ids_answer_as_one_table`.
#[tokio::test]
async fn insert_ignore_answers_as_one_table() {
    let (cluster, _s, db, mut direct, mut sl) = sharded_pair("shard_ig", "ig").await;
    let create = |t: &str| {
        format!("CREATE TABLE {t} (id INT AUTO_INCREMENT PRIMARY KEY, tid INT NOT NULL, u INT NULL, UNIQUE KEY uu (tid, u))")
    };
    sl.query_drop(create("ig")).await.expect("create through sluice");
    direct.query_drop(create("ref")).await.expect("create ref");
    // Keys that are duplicates only ever repeat the row's shard key (a unique key is
    // enforced per sub-table: that is sharding, not a difference sluice can hide).
    // (statement, whole answer compared)
    let statements = [
        (
            "INSERT INTO {t} (id, tid, u) VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)",
            true,
        ),
        // One sub-table: the last row a duplicate of the unique key, then of the primary key.
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (50, 4, 50), (51, 4, 4)",
            true,
        ),
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (52, 8, 52), (4, 4, 53), (53, 0, 53)",
            true,
        ),
        ("INSERT IGNORE INTO {t} (id, tid, u) VALUES (1, 5, 1)", true),
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (1, 5, 1), (1, 9, 91)",
            true,
        ),
        // Several sub-tables, the last row a duplicate in a sub-table that wrote a row.
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (10, 1, 10), (11, 2, 11), (1, 1, 12)",
            false,
        ),
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (70, 1, 70), (71, 2, 71), (2, 2, 72), (72, 3, 72)",
            false,
        ),
        // Every row a duplicate.
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (1, 1, 40), (2, 2, 41)",
            false,
        ),
        (
            "INSERT IGNORE INTO {t} (id, tid, u) VALUES (60, 1, 60), (61, 2, 61)",
            false,
        ),
    ];
    let mut failures = Vec::new();
    for (sql, whole) in statements {
        let want = text_outcome(&mut direct, &sql.replace("{t}", "ref")).await;
        let got = text_outcome(&mut sl, &sql.replace("{t}", "ig")).await;
        let same = if whole {
            got == want
        } else {
            let had_warnings = want.1.as_ref().is_ok_and(|w| !w.is_empty());
            got.0 == want.0 && (!had_warnings || got.1 == Err(1235))
        };
        if !same {
            failures.push(format!("{sql}\n  sluice: {got:?}\n  direct: {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    drop(sl);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// A statement's OK fields (or its error code) and `LAST_INSERT_ID()` after it.
async fn id_outcome(
    c: &mut Conn,
    sql: &str,
    params: Option<Vec<Value>>,
) -> (Result<(u64, u64, String), u16>, u64) {
    let r = match params {
        None => c.query_drop(sql).await,
        Some(p) => c.exec_drop(sql, p).await,
    };
    let ok = match r {
        Ok(()) => Ok((
            c.affected_rows(),
            c.last_insert_id().unwrap_or(0),
            c.info().into_owned(),
        )),
        Err(mysql_async::Error::Server(e)) => Err(e.code),
        Err(e) => panic!("{sql}: {e}"),
    };
    let id: Option<u64> = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .expect("LAST_INSERT_ID()");
    (ok, id.unwrap_or(0))
}

/// The OK packet's insert id (and `LAST_INSERT_ID()` after) of multi-row INSERT, INSERT
/// IGNORE, ON DUPLICATE KEY UPDATE and REPLACE on a sharded table, differentially against
/// one table: explicit ids (integers, strings, out of range, negative), duplicates first,
/// in the middle and last, the last row's sub-table writing nothing, `LAST_INSERT_ID(expr)`,
/// bound parameters, a table without AUTO_INCREMENT, and inside a transaction. Each
/// statement is answered as the one table answers it, or refused with 1235 where the
/// value cannot be told (then nothing is written: the reference's statement is rolled
/// back, and the stored rows are compared at the end). Before, the insert id was 0 when
/// the last row's sub-table wrote nothing, and in a transaction a statement whose second
/// part failed left its first part's rows.
#[tokio::test]
async fn insert_ids_answer_as_one_table() {
    let cluster = shared_cluster();
    let db = unique_name("shard_iid");
    let _s = Sluice::start_for(
        cluster,
        &format!(
            "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.ai.tid.4\", \"{db}.na.tid.4\"]\n"
        ),
    );
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut direct = Conn::from_url(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db))
        .await
        .expect("connect direct");
    let mut sl = Conn::from_url(_s.app_url(&db)).await.expect("connect sluice");
    let create = |t: &str, id: &str| {
        format!("CREATE TABLE {t} (id {id} PRIMARY KEY, tid INT NOT NULL, u INT NULL, v INT NULL, UNIQUE KEY uu (tid, u))")
    };
    for (t, r, id) in [("ai", "ai_ref", "INT AUTO_INCREMENT"), ("na", "na_ref", "INT")] {
        sl.query_drop(create(t, id)).await.expect("create through sluice");
        direct.query_drop(create(r, id)).await.expect("create reference");
    }
    // (statement, parameters, may be refused). Duplicates repeat a row's shard key (a
    // unique key holds per sub-table): tid 1 and 5 share sub-table 1.
    let int = |v: i64| Value::Int(v);
    let statements: Vec<(&str, Option<Vec<Value>>, bool)> = vec![
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)",
            None,
            false,
        ),
        (
            "INSERT INTO {na} (id, tid, u) VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)",
            None,
            false,
        ),
        // The last row a duplicate (unique key, then primary key) in a sub-table that
        // wrote nothing.
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (10, 2, 10), (11, 3, 11), (5, 1, 1)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (12, 2, 12), (1, 5, 50)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (tid, u, id) VALUES (2, 13, 13), (1, 1, '14')",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (15, 2, 15), (9999999999, 1, 1)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (16, 2, 16), (-3, 1, 1)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (?, ?, ?), (?, ?, ?)",
            Some(vec![int(30), int(2), int(30), int(31), int(1), int(1)]),
            false,
        ),
        // The first or middle row a duplicate; every row one; the last row's sub-table
        // writing another row.
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (17, 1, 1), (18, 2, 18)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (32, 3, 32), (33, 1, 1), (34, 2, 34)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (1, 1, 1), (2, 2, 2)",
            None,
            false,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (1, 1, 1), (19, 2, 19), (20, 5, 20)",
            None,
            false,
        ),
        // Not an integer the last row gives: refused (or exact).
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (21, 2, 21), (1 + 1, 1, 1)",
            None,
            true,
        ),
        // ON DUPLICATE KEY UPDATE: the last row met a row it changed, or changed nothing.
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (23, 2, 23), (50, 1, 1) ON DUPLICATE KEY UPDATE v = 7",
            None,
            false,
        ),
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (22, 2, 22), (1, 1, 1) ON DUPLICATE KEY UPDATE v = v",
            None,
            true,
        ),
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (1, 1, 1), (2, 2, 2) ON DUPLICATE KEY UPDATE v = v",
            None,
            true,
        ),
        // LAST_INSERT_ID(expr): on one sub-table as the server; over several refused.
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (26, 2, LAST_INSERT_ID(26)), (27, 6, 27)",
            None,
            false,
        ),
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (24, 2, LAST_INSERT_ID(24)), (25, 3, 25)",
            None,
            true,
        ),
        (
            "REPLACE INTO {ai} (id, tid, u) VALUES (2, 2, 2), (28, 1, 1)",
            None,
            false,
        ),
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (35, 2, 35), (36, 3, 36)",
            None,
            false,
        ),
        // No AUTO_INCREMENT column.
        (
            "INSERT IGNORE INTO {na} (id, tid, u) VALUES (10, 2, 10), (5, 1, 1)",
            None,
            false,
        ),
        (
            "INSERT INTO {na} (id, tid, u) VALUES (11, 2, 11), (6, 1, 1) ON DUPLICATE KEY UPDATE v = v",
            None,
            true,
        ),
        // In a transaction: a refused statement and a failing one leave nothing of
        // themselves (the server undoes a failed statement), the others stay.
        ("BEGIN", None, false),
        ("INSERT INTO {ai} (id, tid, u) VALUES (40, 2, 40)", None, false),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (41, 2, 41), (1 + 1, 1, 1)",
            None,
            true,
        ),
        (
            "INSERT IGNORE INTO {ai} (id, tid, u) VALUES (42, 2, 42), (43, 5, 1)",
            None,
            false,
        ),
        (
            "INSERT INTO {ai} (id, tid, u) VALUES (44, 1, 44), (2, 2, 99)",
            None,
            false,
        ),
        ("COMMIT", None, false),
    ];
    let mut failures = Vec::new();
    let mut in_tx = false;
    // LAST_INSERT_ID() before the statement: a refused one leaves it (the reference's
    // rollback does not undo a LAST_INSERT_ID(expr) it evaluated: set back).
    let mut before = 0;
    for (sql, params, may_refuse) in statements {
        let named = |ai: &str, na: &str| sql.replace("{ai}", ai).replace("{na}", na);
        if sql == "BEGIN" || sql == "COMMIT" {
            in_tx = sql == "BEGIN";
            direct.query_drop(sql).await.expect("direct");
            sl.query_drop(sql).await.expect("through sluice");
            continue;
        }
        // The reference's statement in a transaction (or behind a savepoint) of its own,
        // undone if sluice refuses it.
        direct
            .query_drop(if in_tx { "SAVEPOINT d" } else { "START TRANSACTION" })
            .await
            .expect("direct");
        let want = id_outcome(&mut direct, &named("ai_ref", "na_ref"), params.clone()).await;
        let got = id_outcome(&mut sl, &named("ai", "na"), params).await;
        let refused = got.0 == Err(1235);
        let undo = match (refused, in_tx) {
            (true, true) => "ROLLBACK TO SAVEPOINT d",
            (true, false) => "ROLLBACK",
            (false, true) => "RELEASE SAVEPOINT d",
            (false, false) => "COMMIT",
        };
        direct.query_drop(undo).await.expect("direct");
        if refused {
            direct
                .query_drop(format!("DO LAST_INSERT_ID({before})"))
                .await
                .expect("direct");
        }
        if !(got == want || (refused && may_refuse && got.1 == before)) {
            failures.push(format!("{sql}\n  sluice: {got:?}\n  direct: {want:?}"));
        }
        before = if refused { before } else { want.1 };
    }
    for (t, r) in [("ai", "ai_ref"), ("na", "na_ref")] {
        let subs = (0..4)
            .map(|k| format!("SELECT id, tid, u, v FROM {t}_{k}"))
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let got = rows(&mut direct, &format!("{subs} ORDER BY id")).await;
        let want = rows(&mut direct, &format!("SELECT id, tid, u, v FROM {r} ORDER BY id")).await;
        if got != want {
            failures.push(format!(
                "stored rows of {t}:\n  sluice: {got:?}\n  direct: {want:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    drop(sl);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
