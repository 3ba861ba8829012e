//! sluice as a drop-in MySQL endpoint, seen through a real driver (mysql_async, which
//! sends CLIENT_DEPRECATE_EOF): the text (`query`) and binary (`exec`) protocols,
//! column types, big packets, multi-statements, prepared statements, errors, default
//! databases, authentication, session commands, LOAD DATA LOCAL, concurrency and a
//! backend that is down.
//!
//! Most tests are differential: the same statements run directly on the master and
//! through sluice must give identical results (column definitions, values, NULLs,
//! OK-packet numbers, error code + SQLSTATE + message).
//!
//! Every connection is made with `prefer_socket=false`: by default mysql_async asks the
//! server for `@@socket` after connecting to a loopback address and silently moves to
//! that unix socket — through sluice that would be the *master's* socket.

mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::cluster::{
    free_port, shared_cluster, unique_name, Cluster, Sluice, APP_PASSWORD, APP_USER, HASH_PASSWORD,
    HASH_USER, TEST_DB,
};
use mysql_async::prelude::*;
use mysql_async::{
    ChangeUserOpts, Column, Conn, Opts, OptsBuilder, QueryResult, Row, Value, WhiteListFsHandler,
};

// ---------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------

/// One sluice per test process, in front of the shared cluster (never dropped: the
/// harness's guard stops it when the process exits).
fn sluice() -> &'static Sluice {
    static S: OnceLock<Sluice> = OnceLock::new();
    S.get_or_init(|| Sluice::start_for(shared_cluster(), ""))
}

fn builder(url: &str) -> OptsBuilder {
    OptsBuilder::from_opts(Opts::from_url(url).expect("url")).prefer_socket(false)
}

fn direct_url(db: &str) -> String {
    shared_cluster().master.sluice_url(db)
}

async fn connect(b: OptsBuilder, what: &str) -> Conn {
    match tokio::time::timeout(Duration::from_secs(20), Conn::new(b)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => panic!("connect {what}: {e}"),
        Err(_) => panic!("connect {what}: timed out after 20 s"),
    }
}

/// Directly to the master as the all-privileged `sluice` account.
async fn direct(db: &str) -> Conn {
    connect(builder(&direct_url(db)), "directly to the master").await
}

/// Through sluice as `app`.
async fn proxied(db: &str) -> Conn {
    let s = sluice();
    connect(builder(&s.app_url(db)), "through sluice").await
}

/// Runs `sql` directly on the master (setup/cleanup), panicking on error.
async fn setup(sql: &str) {
    let mut c = direct(TEST_DB).await;
    c.query_drop(sql)
        .await
        .unwrap_or_else(|e| panic!("setup failed: {e}\nSQL: {}", abbreviate(sql)));
    c.disconnect().await.ok();
}

fn abbreviate(s: &str) -> String {
    const MAX: usize = 4000;
    if s.len() > MAX {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &s[..end], s.len())
    } else {
        s.to_string()
    }
}

/// A bounded wait so a hang fails the test instead of stalling the run.
async fn within<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(secs), f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {secs} s"),
    }
}

// ---------------------------------------------------------------------------------------
// Capturing complete results for differential comparison
// ---------------------------------------------------------------------------------------

/// Everything a client can see of a column definition.
#[derive(Debug, Clone, PartialEq)]
struct Col {
    schema: String,
    table: String,
    org_table: String,
    name: String,
    org_name: String,
    length: u32,
    charset: u16,
    ty: String,
    flags: String,
    decimals: u8,
}

fn col(c: &Column) -> Col {
    Col {
        schema: c.schema_str().into_owned(),
        table: c.table_str().into_owned(),
        org_table: c.org_table_str().into_owned(),
        name: c.name_str().into_owned(),
        org_name: c.org_name_str().into_owned(),
        length: c.column_length(),
        charset: c.character_set(),
        ty: format!("{:?}", c.column_type()),
        flags: format!("{:?}", c.flags()),
        decimals: c.decimals(),
    }
}

#[derive(Debug, Clone, PartialEq)]
struct ResultSet {
    columns: Vec<Col>,
    rows: Vec<Vec<Value>>,
    affected_rows: u64,
    last_insert_id: Option<u64>,
    warnings: u16,
    info: String,
}

#[derive(Debug, Clone, PartialEq)]
struct ErrInfo {
    code: u16,
    state: String,
    message: String,
}

fn err_info(e: mysql_async::Error) -> ErrInfo {
    match e {
        mysql_async::Error::Server(s) => ErrInfo {
            code: s.code,
            state: s.state,
            message: s.message,
        },
        other => ErrInfo {
            code: 0,
            state: "client".into(),
            message: other.to_string(),
        },
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Outcome {
    sets: Vec<ResultSet>,
    error: Option<ErrInfo>,
}

impl Outcome {
    fn rows(&self) -> &[Vec<Value>] {
        assert!(self.error.is_none(), "unexpected error: {:?}", self.error);
        &self.sets.first().expect("a result set").rows
    }

    fn err(&self) -> &ErrInfo {
        self.error
            .as_ref()
            .unwrap_or_else(|| panic!("expected an error, got {:?}", self.sets))
    }
}

async fn drain<P: Protocol>(mut r: QueryResult<'_, 'static, P>) -> Outcome {
    let mut out = Outcome::default();
    loop {
        let columns = r
            .columns()
            .map(|c| c.iter().map(col).collect())
            .unwrap_or_default();
        match r.collect::<Row>().await {
            Ok(rows) => out.sets.push(ResultSet {
                columns,
                rows: rows.into_iter().map(Row::unwrap).collect(),
                affected_rows: r.affected_rows(),
                last_insert_id: r.last_insert_id(),
                warnings: r.warnings(),
                info: r.info().into_owned(),
            }),
            Err(e) => {
                out.error = Some(err_info(e));
                break;
            }
        }
        if r.is_empty() {
            // An ERR after the first result set is kept by mysql_async as a pending
            // result: surface it.
            if let Err(e) = r.next().await {
                out.error = Some(err_info(e));
            }
            break;
        }
    }
    out
}

/// Text protocol (COM_QUERY), all result sets.
async fn text(c: &mut Conn, sql: &str) -> Outcome {
    within(60, &format!("query {}", abbreviate(sql)), async {
        match c.query_iter(sql).await {
            Ok(r) => drain(r).await,
            Err(e) => Outcome {
                sets: vec![],
                error: Some(err_info(e)),
            },
        }
    })
    .await
}

/// Binary protocol (COM_STMT_PREPARE + COM_STMT_EXECUTE), all result sets.
async fn binary(c: &mut Conn, sql: &str, params: Vec<Value>) -> Outcome {
    within(60, &format!("exec {}", abbreviate(sql)), async {
        match c.exec_iter(sql, params).await {
            Ok(r) => drain(r).await,
            Err(e) => Outcome {
                sets: vec![],
                error: Some(err_info(e)),
            },
        }
    })
    .await
}

#[track_caller]
fn assert_same(what: &str, direct: &Outcome, proxied: &Outcome) {
    if direct != proxied {
        panic!(
            "{what}: sluice differs from the master\n--- direct ---\n{}\n--- through sluice ---\n{}",
            abbreviate(&format!("{direct:#?}")),
            abbreviate(&format!("{proxied:#?}"))
        );
    }
}

/// Run `sql` on both connections with the text protocol and compare.
async fn same_text(d: &mut Conn, p: &mut Conn, sql: &str) -> Outcome {
    let a = text(d, sql).await;
    let b = text(p, sql).await;
    assert_same(&format!("text `{}`", abbreviate(sql)), &a, &b);
    b
}

/// Run `sql` on both connections with the binary protocol and compare.
async fn same_binary(d: &mut Conn, p: &mut Conn, sql: &str, params: Vec<Value>) -> Outcome {
    let a = binary(d, sql, params.clone()).await;
    let b = binary(p, sql, params).await;
    assert_same(&format!("binary `{}`", abbreviate(sql)), &a, &b);
    b
}

fn bytes(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(3 + 2 * b.len());
    s.push_str("X'");
    for x in b {
        s.push_str(&format!("{x:02X}"));
    }
    s.push('\'');
    s
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

// ---------------------------------------------------------------------------------------
// Column types
// ---------------------------------------------------------------------------------------

const TYPES_DDL: &str = "(
    id INT PRIMARY KEY,
    ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
    mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
    bi BIGINT, biu BIGINT UNSIGNED,
    de DECIMAL(65,30), f FLOAT, d DOUBLE, b BIT(64),
    dt DATE, dtm DATETIME(6), ts TIMESTAMP(6) NULL DEFAULT NULL, tm TIME(6), y YEAR,
    c CHAR(10), vc VARCHAR(255), bn BINARY(8), vb VARBINARY(64),
    tx TEXT, bl BLOB, e ENUM('a','b','c'), st SET('x','y','z'), j JSON
) DEFAULT CHARSET=utf8mb4";

/// One row of the types table, as a SQL literal list and as statement parameters.
struct TypesRow {
    literal: Vec<String>,
    params: Vec<Value>,
}

fn types_rows() -> Vec<TypesRow> {
    let s = |v: &str| (hex(v.as_bytes()), bytes(v));
    let b = |v: &[u8]| (hex(v), Value::Bytes(v.to_vec()));
    let lit = |v: &str, p: Value| (v.to_string(), p);
    let min_dec = "-99999999999999999999999999999999999.999999999999999999999999999999";
    let max_dec = "99999999999999999999999999999999999.999999999999999999999999999999";
    let long_text = "long text with ünïcödé and 😀 ".repeat(400);
    let blob_max = pseudo_random(65535, 7);
    let blob_misc = pseudo_random(1000, 11);
    let vb_max: Vec<u8> = (0u8..64).collect();
    let cols = |v: Vec<(String, Value)>| {
        let (literal, params) = v.into_iter().unzip();
        TypesRow { literal, params }
    };
    vec![
        // Minimums / empty values.
        cols(vec![
            lit("1", Value::Int(1)),
            lit("-128", Value::Int(-128)),
            lit("0", Value::UInt(0)),
            lit("-32768", Value::Int(-32768)),
            lit("0", Value::UInt(0)),
            lit("-8388608", Value::Int(-8388608)),
            lit("0", Value::UInt(0)),
            lit("-2147483648", Value::Int(-2147483648)),
            lit("0", Value::UInt(0)),
            lit("-9223372036854775808", Value::Int(i64::MIN)),
            lit("0", Value::UInt(0)),
            lit(min_dec, bytes(min_dec)),
            lit("-3.4028234663852886e38", Value::Float(f32::MIN)),
            lit("-1.7976931348623157e308", Value::Double(f64::MIN)),
            lit("0", Value::UInt(0)),
            lit("'1000-01-01'", Value::Date(1000, 1, 1, 0, 0, 0, 0)),
            lit(
                "'1000-01-01 00:00:00.000000'",
                Value::Date(1000, 1, 1, 0, 0, 0, 0),
            ),
            lit(
                "'1970-01-01 00:00:01.000000'",
                Value::Date(1970, 1, 1, 0, 0, 1, 0),
            ),
            lit("'-838:59:59.000000'", Value::Time(true, 34, 22, 59, 59, 0)),
            lit("1901", Value::Int(1901)),
            s(""),
            s(""),
            b(&[0u8; 8]),
            b(&[]),
            s(""),
            b(&[]),
            s("a"),
            s(""),
            s("[]"),
        ]),
        // Maximums.
        cols(vec![
            lit("2", Value::Int(2)),
            lit("127", Value::Int(127)),
            lit("255", Value::UInt(255)),
            lit("32767", Value::Int(32767)),
            lit("65535", Value::UInt(65535)),
            lit("8388607", Value::Int(8388607)),
            lit("16777215", Value::UInt(16777215)),
            lit("2147483647", Value::Int(2147483647)),
            lit("4294967295", Value::UInt(4294967295)),
            lit("9223372036854775807", Value::Int(i64::MAX)),
            lit("18446744073709551615", Value::UInt(u64::MAX)),
            lit(max_dec, bytes(max_dec)),
            lit("3.4028234663852886e38", Value::Float(f32::MAX)),
            lit("1.7976931348623157e308", Value::Double(f64::MAX)),
            lit("18446744073709551615", Value::UInt(u64::MAX)),
            lit("'9999-12-31'", Value::Date(9999, 12, 31, 0, 0, 0, 0)),
            lit(
                "'9999-12-31 23:59:59.999999'",
                Value::Date(9999, 12, 31, 23, 59, 59, 999999),
            ),
            lit(
                "'2038-01-19 03:14:07.999999'",
                Value::Date(2038, 1, 19, 3, 14, 7, 999999),
            ),
            lit("'838:59:59.000000'", Value::Time(false, 34, 22, 59, 59, 0)),
            lit("2155", Value::Int(2155)),
            s("ÿÿÿÿÿÿÿÿÿÿ"),
            s(&"x".repeat(255)),
            b(&[0xff; 8]),
            b(&vb_max),
            s(&long_text),
            b(&blob_max),
            s("c"),
            s("x,y,z"),
            s(r#"{"k": [1, 2.5, "s", null, true, false], "nested": {"a": {}}}"#),
        ]),
        // NULL everywhere.
        cols(
            std::iter::once(lit("3", Value::Int(3)))
                .chain((0..28).map(|_| lit("NULL", Value::NULL)))
                .collect(),
        ),
        // Assorted values: fractions, negative sub-second TIME, emoji, bytes that need
        // escaping in text form.
        cols(vec![
            lit("4", Value::Int(4)),
            lit("0", Value::Int(0)),
            lit("1", Value::UInt(1)),
            lit("-1", Value::Int(-1)),
            lit("1", Value::UInt(1)),
            lit("0", Value::Int(0)),
            lit("1", Value::UInt(1)),
            lit("-1", Value::Int(-1)),
            lit("1", Value::UInt(1)),
            lit("-1", Value::Int(-1)),
            lit("9223372036854775808", Value::UInt(9223372036854775808)),
            lit(
                "0.000000000000000000000000000001",
                bytes("0.000000000000000000000000000001"),
            ),
            lit("1.5", Value::Float(1.5)),
            lit("0.1", Value::Double(0.1)),
            lit("10", Value::UInt(10)),
            lit("'2024-02-29'", Value::Date(2024, 2, 29, 0, 0, 0, 0)),
            lit(
                "'2024-02-29 12:34:56.789012'",
                Value::Date(2024, 2, 29, 12, 34, 56, 789012),
            ),
            lit(
                "'2001-02-03 04:05:06.123456'",
                Value::Date(2001, 2, 3, 4, 5, 6, 123456),
            ),
            lit("'-00:00:01.500000'", Value::Time(true, 0, 0, 0, 1, 500000)),
            lit("2024", Value::Int(2024)),
            s("héllo😀"),
            s("emoji 😀🎉🚀 ünïcödé \\ ' \" \n\t end"),
            b(&[0x00, 0xff, 0x7f, 0x80, 0x00, 0x5c, 0x27, 0x0d]),
            b(&[0x00, 0x0a, 0x0d, 0x5c, 0x27, 0x22, 0x1a, 0x00]),
            s("line1\nline2\ttab \\ backslash 'quote' 😀"),
            b(&blob_misc),
            s("b"),
            s("x,z"),
            s(r#"{"emoji": "😀", "n": -1.5e10}"#),
        ]),
    ]
}

/// Every common column type round-trips via INSERT with parameters through sluice and
/// SELECT with both protocols; results equal the master's own answer.
#[tokio::test]
async fn column_types_roundtrip_text_and_binary() {
    let lit_t = unique_name("types_lit");
    let par_t = unique_name("types_par");
    let rows = types_rows();
    let mut ddl = format!("CREATE TABLE {lit_t} {TYPES_DDL}; CREATE TABLE {par_t} LIKE {lit_t};");
    for r in &rows {
        ddl.push_str(&format!("INSERT INTO {lit_t} VALUES ({});", r.literal.join(", ")));
    }
    setup(&ddl).await;

    let mut d = direct(TEST_DB).await;
    let mut p = proxied(TEST_DB).await;

    // Insert through sluice with parameters (binary protocol).
    let placeholders = vec!["?"; 29].join(", ");
    let insert = format!("INSERT INTO {par_t} VALUES ({placeholders})");
    for r in &rows {
        let o = binary(&mut p, &insert, r.params.clone()).await;
        assert!(o.error.is_none(), "insert through sluice: {:?}", o.error);
        assert_eq!(o.sets.first().map(|s| s.affected_rows), Some(1));
    }

    // The parameters arrived intact: same rows as the literal INSERTs (checked directly).
    for proto in ["text", "binary"] {
        let q = |t: &str| format!("SELECT * FROM {t} ORDER BY id");
        let (a, b) = if proto == "text" {
            (text(&mut d, &q(&lit_t)).await, text(&mut d, &q(&par_t)).await)
        } else {
            (
                binary(&mut d, &q(&lit_t), vec![]).await,
                binary(&mut d, &q(&par_t), vec![]).await,
            )
        };
        assert_eq!(a.rows().len(), 4);
        for (x, y) in a.rows().iter().zip(b.rows()) {
            assert_eq!(
                x, y,
                "{proto}: row inserted with parameters through sluice differs from the literal row"
            );
        }
    }

    // SELECT through sluice equals SELECT directly, text and binary, whole table and
    // row by row with a parameter.
    let all = format!("SELECT * FROM {par_t} ORDER BY id");
    let t = same_text(&mut d, &mut p, &all).await;
    let bin = same_binary(&mut d, &mut p, &all, vec![]).await;
    assert_eq!(t.rows().len(), 4);
    for id in 1..=4 {
        same_binary(
            &mut d,
            &mut p,
            &format!("SELECT * FROM {par_t} WHERE id = ?"),
            vec![Value::Int(id)],
        )
        .await;
        same_text(&mut d, &mut p, &format!("SELECT * FROM {par_t} WHERE id = {id}")).await;
    }

    // Spot checks of decoded binary values (the comparison above is only as good as the
    // driver's decoding; make sure the extremes really are there).
    // Columns: id 0, ti 1, tiu 2, si 3, siu 4, mi 5, miu 6, i 7, iu 8, bi 9, biu 10,
    // de 11, f 12, d 13, b 14, dt 15, dtm 16, ts 17, tm 18, y 19, c 20, vc 21, bn 22,
    // vb 23, tx 24, bl 25, e 26, st 27, j 28.
    let r = bin.rows();
    assert_eq!(r[0][9], Value::Int(i64::MIN));
    assert_eq!(r[1][9], Value::Int(i64::MAX));
    assert_eq!(r[1][10], Value::UInt(u64::MAX));
    assert_eq!(r[0][18], Value::Time(true, 34, 22, 59, 59, 0));
    assert_eq!(r[3][18], Value::Time(true, 0, 0, 0, 1, 500000));
    assert_eq!(r[1][16], Value::Date(9999, 12, 31, 23, 59, 59, 999999));
    assert_eq!(
        r[1][11],
        bytes("99999999999999999999999999999999999.999999999999999999999999999999")
    );
    assert_eq!(r[3][20], bytes("héllo😀"));
    assert_eq!(r[1][25], Value::Bytes(pseudo_random(65535, 7)));
    assert_eq!(
        r[3][22],
        Value::Bytes(vec![0x00, 0xff, 0x7f, 0x80, 0x00, 0x5c, 0x27, 0x0d])
    );
    assert!(
        r[2][1..].iter().all(|v| *v == Value::NULL),
        "row 3 must be all NULL: {:?}",
        r[2]
    );
    assert_eq!(t.rows()[1][10], bytes("18446744073709551615"));
    assert_eq!(t.rows()[2][5], Value::NULL);

    // Expressions: NULLs at every position of the binary NULL bitmap, literals of
    // every kind, parameters of every kind echoed back.
    same_text(
        &mut d,
        &mut p,
        "SELECT NULL, 1, NULL, -1, 18446744073709551615, 1.5e0, 2.50, 'str', X'00FF', NULL, \
         DATE '2020-01-02', TIME '-12:34:56.5', TIMESTAMP '2020-01-02 03:04:05.6', NULL AS `null`",
    )
    .await;
    same_binary(
        &mut d,
        &mut p,
        "SELECT NULL, 1, NULL, -1, 18446744073709551615, 1.5e0, 2.50, 'str', X'00FF', NULL, \
         DATE '2020-01-02', TIME '-12:34:56.5', TIMESTAMP '2020-01-02 03:04:05.6', NULL AS `null`",
        vec![],
    )
    .await;
    for r in &rows {
        same_binary(
            &mut d,
            &mut p,
            &format!("SELECT {placeholders}"),
            r.params.clone(),
        )
        .await;
    }
    // Metadata of an empty result: column definitions only.
    same_text(&mut d, &mut p, &format!("SELECT * FROM {par_t} WHERE id < 0")).await;
    same_binary(
        &mut d,
        &mut p,
        &format!("SELECT * FROM {par_t} WHERE id < ?"),
        vec![Value::Int(0)],
    )
    .await;

    d.query_drop(format!("DROP TABLE {lit_t}, {par_t}"))
        .await
        .expect("cleanup");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// utf8mb4
// ---------------------------------------------------------------------------------------

/// Emoji in values (text literals, parameters, results) and non-ASCII identifiers;
/// MariaDB refuses 4-byte characters in identifiers (error 1300) and sluice must pass
/// that error on unchanged.
#[tokio::test]
async fn utf8mb4_emoji_values_and_identifiers() {
    let t = format!("{}_tü列", unique_name("utf8"));
    setup(&format!(
        "CREATE TABLE `{t}` (id INT PRIMARY KEY, `värde列` VARCHAR(100), tx TEXT) DEFAULT CHARSET=utf8mb4"
    ))
    .await;
    let mut d = direct(TEST_DB).await;
    let mut p = proxied(TEST_DB).await;

    same_text(&mut d, &mut p, "SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection").await;

    let emoji = "😀🎉🚀👩‍👩‍👧‍👦 ünïcödé 中文 𝄞";
    let o = text(
        &mut p,
        &format!("INSERT INTO `{t}` VALUES (1, '{emoji}', '{emoji}{emoji}')"),
    )
    .await;
    assert!(o.error.is_none(), "{o:?}");
    let o = binary(
        &mut p,
        &format!("INSERT INTO `{t}` (id, `värde列`, tx) VALUES (?, ?, ?)"),
        vec![Value::Int(2), bytes(emoji), bytes(&emoji.repeat(100))],
    )
    .await;
    assert!(o.error.is_none(), "{o:?}");

    let q = format!("SELECT id, `värde列` AS `alias_é列`, tx, CHAR_LENGTH(`värde列`), LENGTH(`värde列`) FROM `{t}` ORDER BY id");
    let r = same_text(&mut d, &mut p, &q).await;
    assert_eq!(r.rows()[0][1], bytes(emoji));
    assert_eq!(r.rows()[1][2], bytes(&emoji.repeat(100)));
    assert_eq!(r.sets[0].columns[1].name, "alias_é列");
    assert_eq!(r.sets[0].columns[1].org_name, "värde列");
    assert_eq!(r.sets[0].columns[0].table, t);
    same_binary(&mut d, &mut p, &q, vec![]).await;
    same_binary(
        &mut d,
        &mut p,
        &format!("SELECT id FROM `{t}` WHERE `värde列` = ?"),
        vec![bytes(emoji)],
    )
    .await;
    let r = same_text(
        &mut d,
        &mut p,
        "SELECT '😀' AS smiley, CHAR_LENGTH('😀'), LENGTH('😀'), HEX('😀')",
    )
    .await;
    assert_eq!(r.rows()[0][0], bytes("😀"));

    // 4-byte characters in identifiers: MariaDB's error, passed through unchanged.
    let e = same_text(&mut d, &mut p, "SELECT 1 AS `😀`").await;
    assert_eq!(e.err().code, 1300, "{e:?}");
    let e = same_text(
        &mut d,
        &mut p,
        &format!("CREATE TABLE `{}😀` (a INT)", unique_name("emoji")),
    )
    .await;
    assert_eq!(e.err().code, 1300, "{e:?}");

    d.query_drop(format!("DROP TABLE `{t}`")).await.expect("cleanup");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Big packets
// ---------------------------------------------------------------------------------------

/// A 20 MiB BLOB parameter (mysql_async sends it with COM_STMT_SEND_LONG_DATA) read back
/// with both protocols, and a 17 MiB query text (a client→server packet split into
/// 16 MiB frames).
#[tokio::test]
async fn blob_20mib_prepared_and_17mib_query_literal() {
    let t = unique_name("bigblob");
    setup(&format!("CREATE TABLE {t} (id INT PRIMARY KEY, b LONGBLOB)")).await;
    let mut p = proxied(TEST_DB).await;
    let mut d = direct(TEST_DB).await;

    let blob = pseudo_random(20 << 20, 42);
    within(
        60,
        "insert 20 MiB",
        p.exec_drop(format!("INSERT INTO {t} VALUES (?, ?)"), (1, blob.clone())),
    )
    .await
    .expect("insert 20 MiB blob through sluice");

    // Read back through sluice: binary and text.
    let got: Option<Vec<u8>> = within(
        60,
        "select 20 MiB (binary)",
        p.exec_first(format!("SELECT b FROM {t} WHERE id = ?"), (1,)),
    )
    .await
    .expect("select blob (binary)");
    let got = got.expect("row 1");
    assert_eq!(got.len(), blob.len(), "binary: length of the blob read back");
    assert!(got == blob, "binary: blob read back through sluice differs");
    let got: Option<Vec<u8>> = within(
        60,
        "select 20 MiB (text)",
        p.query_first(format!("SELECT b FROM {t} WHERE id = 1")),
    )
    .await
    .expect("select blob (text)");
    assert!(
        got.expect("row 1") == blob,
        "text: blob read back through sluice differs"
    );
    // And it is stored as sent (checked directly on the master).
    let direct_len: Option<u64> = d
        .query_first(format!("SELECT LENGTH(b) FROM {t} WHERE id = 1"))
        .await
        .expect("len");
    assert_eq!(direct_len, Some(blob.len() as u64));
    let direct_blob: Option<Vec<u8>> = d
        .query_first(format!("SELECT b FROM {t} WHERE id = 1"))
        .await
        .expect("direct blob");
    assert!(
        direct_blob.expect("row") == blob,
        "blob stored on the master differs from what was sent"
    );

    // 17 MiB of query text.
    let body: String = (0..(17usize << 20))
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let sql = format!("INSERT INTO {t} VALUES (2, '{body}')");
    assert!(sql.len() > 0xFF_FFFF);
    within(60, "17 MiB query", p.query_drop(&sql))
        .await
        .expect("17 MiB INSERT through sluice");
    let (len, ok): (u64, u8) = d
        .query_first(format!(
            "SELECT LENGTH(b), b = LEFT(REPEAT('abcdefghijklmnopqrstuvwxyz', {}), {}) FROM {t} WHERE id = 2",
            body.len() / 26 + 1,
            body.len()
        ))
        .await
        .expect("check")
        .expect("row 2");
    assert_eq!(len, body.len() as u64);
    assert_eq!(
        ok, 1,
        "the 17 MiB literal stored on the master differs from what was sent"
    );
    let back: Option<Vec<u8>> = p
        .query_first(format!("SELECT b FROM {t} WHERE id = 2"))
        .await
        .expect("read back");
    assert!(
        back.expect("row 2") == body.as_bytes(),
        "17 MiB text read back differs"
    );

    // The session is still fine.
    let one: Option<i32> = p.query_first("SELECT 1").await.expect("after big packets");
    assert_eq!(one, Some(1));
    d.query_drop(format!("DROP TABLE {t}")).await.expect("cleanup");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Multi-statements and multiple result sets
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn multi_statements_and_error_in_the_middle() {
    let mut d = direct(TEST_DB).await;
    let mut p = proxied(TEST_DB).await;
    let tmp = unique_name("tmp_multi");

    let o = same_text(
        &mut d,
        &mut p,
        &format!(
            "SELECT 1; SELECT 2 AS two, NULL AS n, 'x' AS s; \
             CREATE TEMPORARY TABLE {tmp} (a INT AUTO_INCREMENT PRIMARY KEY, b VARCHAR(10)); \
             INSERT INTO {tmp} (b) VALUES ('a'), (NULL), ('c'); \
             SELECT * FROM {tmp} ORDER BY a; DO 1; SELECT COUNT(*) FROM {tmp}"
        ),
    )
    .await;
    assert!(o.error.is_none(), "{o:?}");
    let with_rows: Vec<_> = o.sets.iter().filter(|s| !s.columns.is_empty()).collect();
    assert_eq!(with_rows.len(), 4, "result sets with columns: {o:#?}");
    assert_eq!(with_rows[0].rows, vec![vec![bytes("1")]]);
    assert_eq!(with_rows[2].rows.len(), 3);
    assert_eq!(with_rows[3].rows, vec![vec![bytes("3")]]);

    // An error in the middle: the first result arrives, then the error; nothing after.
    let o = same_text(
        &mut d,
        &mut p,
        "SELECT 1; SELECT * FROM no_such_table_multi; SELECT 3",
    )
    .await;
    assert_eq!(o.err().code, 1146);
    assert_eq!(o.sets.len(), 1, "{o:?}");
    // The connection is still usable afterwards, with the same session.
    let o = same_text(&mut d, &mut p, &format!("SELECT COUNT(*) FROM {tmp}; SELECT 42")).await;
    assert_eq!(
        o.sets.last().map(|s| s.rows.clone()),
        Some(vec![vec![bytes("42")]])
    );
    let o = same_text(&mut d, &mut p, "SELEC 1; SELECT 2").await;
    assert_eq!(o.err().code, 1064);
    same_binary(&mut d, &mut p, "SELECT ?", vec![Value::Int(5)]).await;

    // A stored procedure: several result sets then the CALL's own OK, with both protocols.
    let proc_name = unique_name("proc_multi");
    setup(&format!(
        "CREATE PROCEDURE {proc_name}(IN n INT) BEGIN SELECT n AS first; SELECT n + 1 AS second, 'two'; SELECT * FROM seq_1_to_3; END"
    ))
    .await;
    let o = same_text(&mut d, &mut p, &format!("CALL {proc_name}(10)")).await;
    assert!(o.error.is_none() && o.sets.len() >= 3, "{o:#?}");
    let o = same_binary(
        &mut d,
        &mut p,
        &format!("CALL {proc_name}(?)"),
        vec![Value::Int(20)],
    )
    .await;
    assert!(o.error.is_none() && o.sets.len() >= 3, "{o:#?}");
    same_text(&mut d, &mut p, "SELECT 'after CALL'").await;
    setup(&format!("DROP PROCEDURE {proc_name}")).await;

    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Prepared statements
// ---------------------------------------------------------------------------------------

/// A status counter of the server `c` is connected to (directly: through
/// sluice, SESSION status would be that of whichever pooled connection
/// serves the SHOW).
async fn global_status(c: &mut Conn, name: &str) -> u64 {
    let r: Option<(String, u64)> = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .await
        .expect("show status");
    r.expect("status row").1
}

#[tokio::test]
async fn prepared_statements_params_reexecute_close_many() {
    let t = unique_name("ps");
    setup(&format!(
        "CREATE TABLE {t} (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(50), n BIGINT)"
    ))
    .await;
    let mut d = connect(builder(&direct_url(TEST_DB)).stmt_cache_size(0), "direct").await;
    let mut p = connect(builder(&sluice().app_url(TEST_DB)).stmt_cache_size(0), "sluice").await;

    // All parameter types, echoed back (binary result) and compared.
    let params = vec![
        Value::NULL,
        Value::Int(-5),
        Value::Int(i64::MIN),
        Value::UInt(u64::MAX),
        Value::Float(-1.25),
        Value::Double(6.02214076e23),
        bytes("text ✓ 😀"),
        Value::Bytes(vec![0, 1, 2, 255]),
        Value::Date(2020, 2, 29, 0, 0, 0, 0),
        Value::Date(2020, 2, 29, 23, 59, 58, 123456),
        Value::Time(false, 1, 2, 3, 4, 5),
        Value::Time(true, 0, 0, 0, 0, 1),
        Value::NULL,
    ];
    let echo = format!("SELECT {}", vec!["?"; params.len()].join(", "));
    same_binary(&mut d, &mut p, &echo, params.clone()).await;

    // One statement, re-executed with different parameters.
    let stmt_p = p
        .prep("SELECT ? + 1 AS x, CONCAT('<', ?, '>') AS y")
        .await
        .expect("prepare");
    let stmt_d = d
        .prep("SELECT ? + 1 AS x, CONCAT('<', ?, '>') AS y")
        .await
        .expect("prepare");
    assert_eq!(stmt_p.num_params(), 2);
    assert_eq!(
        stmt_p.columns().iter().map(col).collect::<Vec<_>>(),
        stmt_d.columns().iter().map(col).collect::<Vec<_>>(),
        "prepared statement column definitions"
    );
    for (i, s) in [(1i64, "a"), (41, "bb"), (-7, "")].into_iter().enumerate() {
        let a = drain(d.exec_iter(&stmt_d, (s.0, s.1)).await.expect("exec")).await;
        let b = drain(p.exec_iter(&stmt_p, (s.0, s.1)).await.expect("exec")).await;
        assert_same(&format!("re-execution {i}"), &a, &b);
        assert_eq!(b.rows()[0][1], bytes(&format!("<{}>", s.1)));
    }
    let o = drain(
        p.exec_iter(&stmt_p, (Value::NULL, Value::NULL))
            .await
            .expect("exec NULL"),
    )
    .await;
    assert_eq!(o.rows()[0], vec![Value::NULL, Value::NULL]);

    // INSERT through a statement: affected rows and last insert id as the server says.
    let ins = p
        .prep(format!("INSERT INTO {t} (v, n) VALUES (?, ?)"))
        .await
        .expect("prepare insert");
    let mut ids = vec![];
    for i in 0..5 {
        p.exec_drop(&ins, (format!("v{i}"), i * 1000))
            .await
            .expect("insert");
        assert_eq!(p.affected_rows(), 1);
        ids.push(p.last_insert_id().expect("insert id"));
    }
    let max_id: Option<u64> = d
        .query_first(format!("SELECT MAX(id) FROM {t}"))
        .await
        .expect("max");
    assert_eq!(ids.last().copied(), max_id);
    assert!(ids.windows(2).all(|w| w[1] > w[0]), "{ids:?}");

    // COM_STMT_CLOSE forgets the client's ids (the backend statements stay
    // in their connections' caches for reuse; tests/multiplex.rs checks that a
    // closed id is refused).
    p.close(ins).await.expect("close");
    p.close(stmt_p).await.expect("close");

    // A statement that fails to prepare: the server's error.
    let a = binary(&mut d, "SELEC ?", vec![Value::Int(1)]).await;
    let b = binary(&mut p, "SELEC ?", vec![Value::Int(1)]).await;
    assert_same("prepare error", &a, &b);
    assert_eq!(b.err().code, 1064);

    // Many statements open at once, executed out of order, then closed.
    let prepared_before = global_status(&mut d, "Com_stmt_prepare").await;
    let mut stmts = Vec::new();
    for i in 0..300 {
        stmts.push(
            p.prep(format!("SELECT ? * 2 + {i} AS v{i}"))
                .await
                .unwrap_or_else(|e| panic!("prepare #{i}: {e}")),
        );
    }
    for (i, s) in stmts.iter().enumerate().rev() {
        let v: Option<i64> = p
            .exec_first(s, (i as i64,))
            .await
            .unwrap_or_else(|e| panic!("exec #{i}: {e}"));
        assert_eq!(v, Some(3 * i as i64));
    }
    for (i, s) in stmts.iter().enumerate().step_by(7) {
        let v: Option<i64> = p.exec_first(s, (1,)).await.expect("exec again");
        assert_eq!(v, Some(2 + i as i64));
    }
    let prepared = global_status(&mut d, "Com_stmt_prepare").await - prepared_before;
    assert!(
        prepared >= 300,
        "the master prepared {prepared} statements, not all 300"
    );
    // A client's COM_STMT_CLOSE forgets its id; the backend statement stays
    // in its connection's cache (at most 128 per connection, the oldest
    // closed on the server) for the next session preparing the same text.
    for s in stmts {
        p.close(s).await.expect("close");
    }
    let one: Option<i32> = p.query_first("SELECT 1").await.expect("still usable");
    assert_eq!(one, Some(1));

    d.query_drop(format!("DROP TABLE {t}")).await.expect("cleanup");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn errors_code_sqlstate_message_identical_to_direct() {
    let t = unique_name("errs");
    setup(&format!(
        "CREATE TABLE {t} (id INT PRIMARY KEY, v INT); INSERT INTO {t} VALUES (1, 1)"
    ))
    .await;
    let mut d = direct(TEST_DB).await;
    let mut p = proxied(TEST_DB).await;
    let cases: Vec<(String, u16, &str)> = vec![
        ("SELEC 1".into(), 1064, "42000"),
        (format!("SELECT * FROM {t}_missing"), 1146, "42S02"),
        (format!("INSERT INTO {t} VALUES (1, 2)"), 1062, "23000"),
        (format!("SELECT no_such_column FROM {t}"), 1054, "42S22"),
        ("SELECT * FROM no_such_db_xyz.t".into(), 1146, "42S02"),
        (
            "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom ✓ message', MYSQL_ERRNO = 1644".into(),
            1644,
            "45000",
        ),
    ];
    for (sql, code, state) in &cases {
        let o = same_text(&mut d, &mut p, sql).await;
        let e = o.err();
        assert_eq!((e.code, e.state.as_str()), (*code, *state), "text `{sql}`: {e:?}");
        if !sql.starts_with("SIGNAL") {
            let o = same_binary(&mut d, &mut p, sql, vec![]).await;
            let e = o.err();
            assert_eq!(
                (e.code, e.state.as_str()),
                (*code, *state),
                "binary `{sql}`: {e:?}"
            );
        }
    }
    // Messages as MariaDB words them (checked once explicitly, besides the comparison).
    let o = text(&mut p, &format!("SELECT * FROM {t}_missing")).await;
    assert_eq!(
        o.err().message,
        format!("Table '{TEST_DB}.{t}_missing' doesn't exist")
    );
    let o = text(&mut p, &format!("INSERT INTO {t} VALUES (1, 2)")).await;
    assert_eq!(o.err().message, "Duplicate entry '1' for key 'PRIMARY'");

    // Warnings count and SHOW WARNINGS reach the client from the same backend session.
    let o = same_text(&mut d, &mut p, "SELECT 1/0").await;
    assert_eq!(o.sets[0].warnings, 1);
    same_text(&mut d, &mut p, "SHOW WARNINGS").await;
    // Still usable after all those errors.
    same_text(&mut d, &mut p, &format!("SELECT * FROM {t}")).await;

    d.query_drop(format!("DROP TABLE {t}")).await.expect("cleanup");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Default database
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn default_database_url_use_and_unknown_database() {
    let db1 = unique_name("db_a");
    let db2 = unique_name("db_b");
    setup(&format!(
        "CREATE DATABASE {db1}; CREATE DATABASE {db2};
         CREATE TABLE {db1}.t1 (a INT); INSERT INTO {db1}.t1 VALUES (1);
         CREATE TABLE {db2}.t2 (a INT); INSERT INTO {db2}.t2 VALUES (2);"
    ))
    .await;

    // Database in the handshake.
    let mut p = proxied(&db1).await;
    let mut d = direct(&db1).await;
    let r = same_text(&mut d, &mut p, "SELECT DATABASE()").await;
    assert_eq!(r.rows()[0][0], bytes(&db1));
    same_text(&mut d, &mut p, "SELECT a FROM t1").await;

    // USE switches it, for text and prepared statements.
    let r = same_text(&mut d, &mut p, &format!("USE {db2}")).await;
    assert!(r.error.is_none());
    let r = same_text(&mut d, &mut p, "SELECT DATABASE(), a FROM t2").await;
    assert_eq!(r.rows()[0], vec![bytes(&db2), bytes("2")]);
    same_binary(&mut d, &mut p, "SELECT DATABASE(), a FROM t2", vec![]).await;
    // USE of a missing database: 1049 and the old one stays.
    let r = same_text(&mut d, &mut p, "USE no_such_database_q").await;
    assert_eq!((r.err().code, r.err().state.as_str()), (1049, "42000"));
    let r = same_text(&mut d, &mut p, "SELECT DATABASE()").await;
    assert_eq!(r.rows()[0][0], bytes(&db2));
    // USE inside a multi-statement.
    let r = same_text(&mut d, &mut p, &format!("USE {db1}; SELECT DATABASE()")).await;
    assert!(r.error.is_none());
    same_text(&mut d, &mut p, "SELECT DATABASE(), a FROM t1").await;
    p.disconnect().await.ok();
    d.disconnect().await.ok();

    // No database. (The backend connection serving this session may have been used
    // by the session above: it must not keep that session's database.)
    let mut p = proxied("").await;
    let mut d = direct("").await;
    let r = text(&mut p, "SELECT DATABASE()").await;
    assert_eq!(
        r.rows()[0][0],
        Value::NULL,
        "a session that logged in without a database has a default database through sluice"
    );
    same_text(&mut d, &mut p, "SELECT DATABASE()").await;
    let r = same_text(&mut d, &mut p, "SELECT * FROM t1").await;
    assert_eq!(r.err().code, 1046, "no database selected: {r:?}");
    p.disconnect().await.ok();
    d.disconnect().await.ok();

    // Unknown database in the handshake: 1049, exactly as the server says it.
    let pe = Conn::new(builder(&sluice().app_url("no_such_db_in_url")))
        .await
        .err()
        .map(err_info);
    let de = Conn::new(builder(&direct_url("no_such_db_in_url")))
        .await
        .err()
        .map(err_info);
    let pe = pe.expect("connecting through sluice with an unknown database must fail");
    assert_eq!(Some(pe.clone()), de);
    assert_eq!((pe.code, pe.state.as_str()), (1049, "42000"), "{pe:?}");
    assert_eq!(pe.message, "Unknown database 'no_such_db_in_url'");

    // A session's USE does not leak into later sessions served by the same pooled
    // backend connection.
    let mut p = proxied("").await;
    p.query_drop(format!("USE {db2}")).await.expect("use");
    p.query_drop("SET @leak = 'leaked'").await.expect("set");
    p.disconnect().await.ok();
    for i in 0..5 {
        let mut p = proxied("").await;
        let r: Option<(Option<String>, Option<String>)> =
            p.query_first("SELECT DATABASE(), @leak").await.expect("select");
        assert_eq!(
            r,
            Some((None, None)),
            "session {i} inherited state of an earlier session"
        );
        p.disconnect().await.ok();
    }

    setup(&format!("DROP DATABASE {db1}; DROP DATABASE {db2}")).await;
}

// ---------------------------------------------------------------------------------------
// Authentication
// ---------------------------------------------------------------------------------------

async fn login_error(url: &str) -> ErrInfo {
    match within(20, "login", Conn::new(builder(url))).await {
        Ok(c) => {
            c.disconnect().await.ok();
            panic!("login to {url} succeeded but must fail")
        }
        Err(e) => err_info(e),
    }
}

#[tokio::test]
async fn auth_wrong_password_unknown_user_and_hash_user() {
    let s = sluice();
    let m = &shared_cluster().master;

    // Wrong password: 1045 / 28000 in MySQL's words, as MariaDB itself answers for the
    // same (there unknown) account.
    let e = login_error(&s.url(APP_USER, "wrong", "")).await;
    assert_eq!(
        e,
        ErrInfo {
            code: 1045,
            state: "28000".into(),
            message: format!("Access denied for user '{APP_USER}'@'127.0.0.1' (using password: YES)"),
        }
    );
    assert_eq!(
        login_error(&m.url(APP_USER, "wrong", "")).await,
        e,
        "sluice vs MariaDB"
    );
    // Unknown user.
    let e = login_error(&s.url("nobody_here", "pw", TEST_DB)).await;
    assert_eq!(e, login_error(&m.url("nobody_here", "pw", TEST_DB)).await);
    assert_eq!(e.code, 1045);
    // No password.
    let e = login_error(&format!("mysql://{APP_USER}@127.0.0.1:{}/", s.port)).await;
    assert_eq!(
        e.message,
        format!("Access denied for user '{APP_USER}'@'127.0.0.1' (using password: NO)")
    );
    // The hash-configured user with a wrong password.
    let e = login_error(&s.url(HASH_USER, "nothashpw", "")).await;
    assert_eq!(e.code, 1045);

    // The hash-configured user logs in and works.
    let mut c = connect(builder(&s.url(HASH_USER, HASH_PASSWORD, TEST_DB)), "hashuser").await;
    let r: Option<(i32, String)> = c.query_first("SELECT 1, DATABASE()").await.expect("query");
    assert_eq!(r, Some((1, TEST_DB.to_string())));
    c.disconnect().await.ok();
    // And app, after all those failures (no lockout, nothing broken).
    let mut c = proxied(TEST_DB).await;
    c.ping().await.expect("ping");
    c.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Session commands
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn ping_reset_connection_change_user() {
    let db2 = unique_name("cu_db");
    setup(&format!(
        "CREATE DATABASE {db2}; CREATE TABLE {db2}.only_here (x INT); INSERT INTO {db2}.only_here VALUES (7)"
    ))
    .await;
    let mut d = direct(TEST_DB).await;
    let mut p = proxied(TEST_DB).await;

    // COM_PING
    within(10, "ping", p.ping())
        .await
        .expect("COM_PING through sluice");

    // COM_RESET_CONNECTION: user variables, session variables, temporary tables and
    // SQL-level prepared statements are gone; the default database stays.
    let tmp = unique_name("tmp_reset");
    let dirty = format!(
        "SET @v = 5, SESSION sql_mode = 'ANSI_QUOTES', SESSION auto_increment_increment = 7; \
         CREATE TEMPORARY TABLE {tmp} (a INT); PREPARE s1 FROM 'SELECT 1'"
    );
    for c in [&mut d, &mut p] {
        let o = text(c, &dirty).await;
        assert!(o.error.is_none(), "{o:?}");
    }
    same_text(
        &mut d,
        &mut p,
        "SELECT @v, @@session.sql_mode, @@session.auto_increment_increment",
    )
    .await;
    let rd = d.reset().await.expect("reset direct");
    let rp = within(10, "reset", p.reset())
        .await
        .expect("COM_RESET_CONNECTION through sluice");
    assert!(
        rd && rp,
        "mysql_async must see a server that supports COM_RESET_CONNECTION (direct {rd}, sluice {rp})"
    );
    let r = same_text(
        &mut d,
        &mut p,
        "SELECT @v, @@session.sql_mode = @@global.sql_mode, @@session.auto_increment_increment, DATABASE()",
    )
    .await;
    assert_eq!(
        r.rows()[0],
        vec![Value::NULL, bytes("1"), bytes("1"), bytes(TEST_DB)]
    );
    let r = same_text(&mut d, &mut p, &format!("SELECT * FROM {tmp}")).await;
    assert_eq!(r.err().code, 1146);
    let r = same_text(&mut d, &mut p, "EXECUTE s1").await;
    assert_eq!(r.err().code, 1243);
    within(10, "ping", p.ping()).await.expect("ping after reset");

    // COM_CHANGE_USER to the other user and another database: a fresh session.
    p.query_drop("SET @v = 'before change_user'").await.expect("set");
    within(
        10,
        "change_user",
        p.change_user(
            ChangeUserOpts::default()
                .with_user(Some(HASH_USER.into()))
                .with_pass(Some(HASH_PASSWORD.into()))
                .with_db_name(Some(db2.clone())),
        ),
    )
    .await
    .expect("COM_CHANGE_USER to hashuser through sluice");
    let r: Option<(Option<String>, String, i32)> = p
        .query_first("SELECT @v, DATABASE(), x FROM only_here")
        .await
        .expect("after change_user");
    assert_eq!(r, Some((None, db2.clone(), 7)));
    // Back to app, without a database.
    p.change_user(
        ChangeUserOpts::default()
            .with_user(Some(APP_USER.into()))
            .with_pass(Some(APP_PASSWORD.into()))
            .with_db_name(None),
    )
    .await
    .expect("COM_CHANGE_USER back to app");
    let r: Option<Option<String>> = p.query_first("SELECT DATABASE()").await.expect("db");
    assert_eq!(
        r,
        Some(None),
        "COM_CHANGE_USER without a database must leave no default database"
    );
    // The same on the master directly gives the same answers.
    d.change_user(ChangeUserOpts::default().with_db_name(Some(db2.clone())))
        .await
        .expect("direct change_user");
    let rd: Option<(Option<String>, String, i32)> = d
        .query_first("SELECT @v, DATABASE(), x FROM only_here")
        .await
        .expect("direct");
    assert_eq!(rd, Some((None, db2.clone(), 7)));

    // A wrong password in COM_CHANGE_USER: 1045, like the server.
    let e = p
        .change_user(
            ChangeUserOpts::default()
                .with_user(Some(APP_USER.into()))
                .with_pass(Some("wrong".into())),
        )
        .await
        .err()
        .map(err_info)
        .expect("change_user with a wrong password must fail");
    assert_eq!(e.code, 1045, "{e:?}");
    assert_eq!(
        e.message,
        format!("Access denied for user '{APP_USER}'@'127.0.0.1' (using password: YES)")
    );
    drop(p);

    // sluice still serves new sessions.
    let mut p = proxied(TEST_DB).await;
    p.ping().await.expect("ping");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
    setup(&format!("DROP DATABASE {db2}")).await;
}

// ---------------------------------------------------------------------------------------
// LOAD DATA LOCAL INFILE
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn load_data_local_infile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rows.tsv");
    let n = 5000u64;
    let mut data = String::new();
    for i in 1..=n {
        data.push_str(&format!("{i}\tname_{i}_ü😀\t{}\n", i as f64 * 0.25));
    }
    std::fs::write(&path, &data).expect("write data file");
    let path_s = path.to_str().expect("utf-8 path").to_string();

    let t_p = unique_name("infile_p");
    let t_d = unique_name("infile_d");
    setup(&format!(
        "CREATE TABLE {t_p} (id INT PRIMARY KEY, name VARCHAR(64), v DOUBLE) DEFAULT CHARSET=utf8mb4; CREATE TABLE {t_d} LIKE {t_p}"
    ))
    .await;
    let empty = dir.path().join("empty.tsv");
    std::fs::write(&empty, "").expect("write empty file");
    let handler = || WhiteListFsHandler::new([path.clone(), empty.clone()]);
    let mut p = connect(
        builder(&sluice().app_url(TEST_DB)).local_infile_handler(Some(handler())),
        "sluice",
    )
    .await;
    let mut d = connect(
        builder(&direct_url(TEST_DB)).local_infile_handler(Some(handler())),
        "direct",
    )
    .await;
    let local: Option<i64> = d
        .query_first("SELECT @@local_infile")
        .await
        .expect("local_infile");
    assert_eq!(local, Some(1), "the master must allow LOCAL INFILE");

    let load = |t: &str| {
        format!("LOAD DATA LOCAL INFILE '{path_s}' INTO TABLE {t} CHARACTER SET utf8mb4 (id, name, v)")
    };
    within(60, "LOAD DATA through sluice", p.query_drop(load(&t_p)))
        .await
        .expect("LOAD DATA LOCAL through sluice");
    assert_eq!(p.affected_rows(), n);
    let info_p = p.info().into_owned();
    d.query_drop(load(&t_d)).await.expect("LOAD DATA LOCAL directly");
    assert_eq!(info_p, d.info().into_owned(), "LOAD DATA info line");

    let check = |t: &str| {
        format!("SELECT COUNT(*), SUM(id), SUM(v), BIT_XOR(CRC32(CONCAT_WS('|', id, name, v))) FROM {t}")
    };
    let a: Option<(u64, u64, f64, u64)> = d.query_first(check(&t_p)).await.expect("check");
    let b: Option<(u64, u64, f64, u64)> = d.query_first(check(&t_d)).await.expect("check");
    assert_eq!(
        a, b,
        "table loaded through sluice differs from the one loaded directly"
    );
    let a = a.expect("row");
    assert_eq!((a.0, a.1), (n, n * (n + 1) / 2));
    let sample: Option<String> = d
        .query_first(format!("SELECT name FROM {t_p} WHERE id = 4321"))
        .await
        .expect("sample");
    assert_eq!(sample.as_deref(), Some("name_4321_ü😀"));

    // The session goes on normally, also with a second LOAD (duplicate keys: IGNORE).
    let r: Option<i32> = p.query_first("SELECT 1").await.expect("after LOAD DATA");
    assert_eq!(r, Some(1));
    p.query_drop(format!(
        "LOAD DATA LOCAL INFILE '{path_s}' IGNORE INTO TABLE {t_p} CHARACTER SET utf8mb4 (id, name, v)"
    ))
    .await
    .expect("second LOAD DATA");
    assert_eq!(p.affected_rows(), 0);

    // An empty file: just the terminating empty packet.
    let empty_load = format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE {t_p} (id)",
        empty.to_str().expect("path")
    );
    within(30, "empty LOAD DATA", p.query_drop(&empty_load))
        .await
        .expect("LOAD DATA of an empty file");
    assert_eq!(p.affected_rows(), 0);
    let r: Option<i32> = within(10, "after LOAD DATA", p.query_first("SELECT 2"))
        .await
        .expect("usable after LOAD DATA");
    assert_eq!(r, Some(2));

    d.query_drop(format!("DROP TABLE {t_p}, {t_d}"))
        .await
        .expect("cleanup");
    p.disconnect().await.ok();
    d.disconnect().await.ok();
}

// ---------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_sessions() {
    let s = sluice();
    let url = s.app_url(TEST_DB);
    let tasks = 50u64;
    let per_task = 200u64;
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let url = url.clone();
        handles.push(tokio::spawn(async move {
            let mut c = connect(builder(&url), "concurrent session").await;
            c.query_drop(format!("SET @me = {t}")).await.expect("set");
            for i in 0..per_task {
                let k = t * 100_000 + i;
                if i % 2 == 0 {
                    let r: Option<(u64, String, u64)> = c
                        .query_first(format!("SELECT {k}, REPEAT('x', {}), @me", i % 50))
                        .await
                        .unwrap_or_else(|e| panic!("task {t} query {i}: {e}"));
                    assert_eq!(
                        r,
                        Some((k, "x".repeat((i % 50) as usize), t)),
                        "task {t} query {i}"
                    );
                } else {
                    let r: Option<(u64, String)> = c
                        .exec_first("SELECT ? + 0, CONCAT(?, '-', @me)", (k, t))
                        .await
                        .unwrap_or_else(|e| panic!("task {t} exec {i}: {e}"));
                    assert_eq!(r, Some((k, format!("{t}-{t}"))), "task {t} exec {i}");
                }
            }
            c.disconnect().await.ok();
        }));
    }
    for h in handles {
        within(110, "concurrent sessions", h)
            .await
            .expect("task panicked");
    }
    eprintln!("{} queries in {:.2?}", tasks * per_task, t0.elapsed());
    assert!(s.is_running());
}

// ---------------------------------------------------------------------------------------
// Backends that are down
// ---------------------------------------------------------------------------------------

fn config_with_master(addr: &str, backend: &str) -> String {
    format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {addr}, user: sluice, password: sluice }}\n    replicas: []\n{backend}",
        Sluice::users_yaml()
    )
}

/// Options that make mysql_async run no setup query on connect, so the first statement
/// is ours.
fn bare(url: &str) -> OptsBuilder {
    builder(url)
        .max_allowed_packet(Some(64 << 20))
        .wait_timeout(Some(28800))
}

#[tokio::test]
async fn backend_down_fault_gives_1429_quickly() {
    // Nothing listens on this port.
    let closed = free_port();
    let s = Sluice::start(&config_with_master(&format!("127.0.0.1:{closed}"), ""));
    let t0 = Instant::now();
    let mut c = within(10, "login with the backend down", Conn::new(bare(&s.app_url(""))))
        .await
        .expect("login without a default database needs no backend and must succeed");
    let e = within(10, "query with the backend down", c.query_drop("SELECT 1"))
        .await
        .err()
        .map(err_info);
    let elapsed = t0.elapsed();
    let e = e.expect("a query with the backend down must fail");
    assert_eq!(e.code, 1429, "{e:?}");
    assert!(
        e.message.contains(&format!("127.0.0.1:{closed}")),
        "the message must name the backend: {e:?}"
    );
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    // The session survives; the next query fails the same way (no hang, no disconnect).
    let e2 = within(10, "second query", c.query_drop("SELECT 1"))
        .await
        .err()
        .map(err_info)
        .expect("error");
    assert_eq!(e2.code, 1429);
    c.ping().await.expect("COM_PING is answered by sluice itself");
    // Login with a default database needs the backend: an error, not a hang.
    let t0 = Instant::now();
    let e = within(10, "login with db", Conn::new(bare(&s.app_url(TEST_DB))))
        .await
        .err()
        .map(err_info)
        .expect("must fail");
    assert_eq!(e.code, 1429, "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3));

    // A backend that accepts TCP but never greets: bounded by backend.connect_timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_addr = silent.local_addr().expect("addr");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        silent.set_nonblocking(true).ok();
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end && !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((sock, _)) = silent.accept() {
                held.push(sock);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let s2 = Sluice::start(&config_with_master(
        &silent_addr.to_string(),
        "backend:\n  connect_timeout: 1s\n",
    ));
    let mut c = within(10, "login", Conn::new(bare(&s2.app_url(""))))
        .await
        .expect("login");
    let t0 = Instant::now();
    let e = within(10, "query against a silent backend", c.query_drop("SELECT 1"))
        .await
        .err()
        .map(err_info)
        .expect("must fail");
    assert_eq!(e.code, 1429, "{e:?}");
    assert!(e.message.contains(&silent_addr.to_string()), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(3), "took {:?}", t0.elapsed());
    assert!(s.is_running() && s2.is_running());
    drop(c);
    drop(s2);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = holder.join();
}

#[tokio::test]
async fn backend_restart_own_cluster_reconnects() {
    let cluster = Cluster::start(0);
    let s = Sluice::start_for(&cluster, "");
    let mut c = connect(bare(&s.app_url(TEST_DB)), "sluice").await;
    let mut c2 = connect(bare(&s.app_url(TEST_DB)), "sluice").await;
    let v: Option<i32> = c.query_first("SELECT 1").await.expect("before the crash");
    assert_eq!(v, Some(1));
    let _: Option<i32> = c2.query_first("SELECT 1").await.expect("before the crash");
    c2.query_drop("SET @x = 1").await.expect("set");

    cluster.master.kill();
    let t0 = Instant::now();
    let e = within(15, "query after the master died", c.query_drop("SELECT 1"))
        .await
        .err()
        .map(err_info);
    let e = e.expect("a query to a dead master must fail");
    assert!([1429, 1158, 2006, 2013].contains(&e.code), "{e:?}");
    assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}", t0.elapsed());
    let e = within(15, "second query", c.query_drop("SELECT 1"))
        .await
        .err()
        .map(err_info)
        .expect("must fail");
    assert_eq!(e.code, 1429, "{e:?}");

    cluster.master.restart();
    // The same client sessions work again, default database restored.
    let v: Option<(i32, String)> = within(15, "query after restart", c.query_first("SELECT 2, DATABASE()"))
        .await
        .expect("sluice must reconnect once the master is back");
    assert_eq!(v, Some((2, TEST_DB.to_string())));
    let v: Option<(i32, String)> = within(
        15,
        "second session after restart",
        c2.query_first("SELECT 3, DATABASE()"),
    )
    .await
    .unwrap_or_else(|e| {
        // Its backend connection died with the server: one error is acceptable
        // only if it is a clear MySQL error; the next query must work.
        eprintln!("second session, first query after restart: {e}");
        None
    });
    if v.is_none() {
        let v: Option<(i32, String)> = c2.query_first("SELECT 3, DATABASE()").await.expect("second try");
        assert_eq!(v, Some((3, TEST_DB.to_string())));
    } else {
        assert_eq!(v, Some((3, TEST_DB.to_string())));
    }
    let mut fresh = connect(bare(&s.app_url(TEST_DB)), "after restart").await;
    let v: Option<i32> = fresh.query_first("SELECT 4").await.expect("new session");
    assert_eq!(v, Some(4));
    assert!(s.is_running());
}
