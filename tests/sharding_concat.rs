//! GROUP_CONCAT across shards (issue 12), differentially: every statement runs through
//! sluice on the sharded table `t` (4 sub-tables) and directly on the unsharded
//! reference table `ref` with the same rows, as text (COM_QUERY) and as a prepared
//! statement with typed parameters (strings with quotes, backslashes and emoji, bytes
//! that are not UTF-8, NULL, DECIMAL, DATE, DATETIME), under several session values of
//! `group_concat_max_len` (4 bytes up to the default 1 MiB; 512 and 513 are where the
//! server's column turns from VARCHAR to a BLOB). Compared: the column definitions
//! (name, type, flags, decimals, length, character set), every row's bytes, the warning
//! count of the result's end, and what `SHOW WARNINGS` and `@@warning_count` say after
//! it (the server's `Row N was cut by GROUP_CONCAT()`, counted as the server counts).
//! Plus the refusals of the shapes that cannot be exact, each by its sentence.

mod common;

use std::time::Duration;

use common::cluster::*;
use common::wire::{self, Column, Param, Part, Reply as WReply, Wire};

const NOT_SUPPORTED: u16 = 1235;

fn schema(table: &str) -> String {
    format!(
        "CREATE TABLE `{table}` (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, g INT NULL, \
         s VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL, \
         b VARBINARY(16) NULL, amount DECIMAL(10,2) NOT NULL DEFAULT 0, d DATE NULL, \
         body TEXT NOT NULL, KEY (tid)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    )
}

/// Strings worth concatenating: quotes, backslashes, emoji, multi-byte characters that a
/// cut may split, case variants (equal under general_ci), empty strings.
const WORDS: [&str; 12] = [
    "alpha",
    "Alpha",
    "ALPHA",
    "it''s",
    "back\\\\slash",
    "emoji 😀",
    "回复",
    "naïve",
    "",
    "b",
    "B",
    "zzzzzzzzzz",
];

fn rows(n: i64) -> Vec<String> {
    (1..=n)
        .map(|i| {
            let tid = (i * 7919) % 53;
            let g = if i % 11 == 0 {
                "NULL".to_string()
            } else {
                (i % 7).to_string()
            };
            let s = if i % 13 == 0 {
                "NULL".to_string()
            } else {
                format!("'{}'", WORDS[(i as usize * 5) % WORDS.len()])
            };
            let b = if i % 5 == 0 {
                "NULL".to_string()
            } else {
                format!("X'{:02x}ff00{:02x}'", i % 256, (i * 3) % 256)
            };
            let d = if i % 9 == 0 {
                "NULL".to_string()
            } else {
                format!("'2021-0{}-{:02}'", 1 + i % 9, 1 + i % 28)
            };
            format!(
                "({i}, {tid}, {g}, {s}, {b}, {}.{:02}, {d}, REPEAT('x', {}))",
                (i * 37) % 1000 - 500,
                i % 100,
                i % 300
            )
        })
        .collect()
}

/// Sluice with `table` sharded by tid into 4 sub-tables, a fresh database, and two
/// connections: through sluice and directly to the master (where `ref` lives).
async fn setup(prefix: &str, table: &str) -> (Sluice, Wire, Wire, &'static Cluster) {
    let cluster = shared_cluster();
    let (s, sl, direct) = setup_on(cluster, prefix, table).await;
    (s, sl, direct, cluster)
}

/// [`setup`] on `cluster`.
async fn setup_on(cluster: &Cluster, prefix: &str, table: &str) -> (Sluice, Wire, Wire) {
    setup_with(cluster, prefix, table, schema).await
}

/// [`setup_on`] with the tables `schema` makes.
async fn setup_with(
    cluster: &Cluster,
    prefix: &str,
    table: &str,
    schema: fn(&str) -> String,
) -> (Sluice, Wire, Wire) {
    let db = unique_name(prefix);
    let yaml = format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.{table}.tid.4\"]\n"
    );
    let s = Sluice::start_for(cluster, &yaml);
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let timeout = Duration::from_secs(60);
    let mut sl = wire::driver_login(
        &format!("127.0.0.1:{}", s.port),
        APP_USER,
        APP_PASSWORD,
        &db,
        timeout,
    )
    .await;
    let mut direct =
        wire::driver_login(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db, timeout).await;
    must(&mut sl, &schema(table)).await;
    must(&mut direct, &schema("ref")).await;
    (s, sl, direct)
}

async fn must(w: &mut Wire, sql: &str) {
    match w.query(sql).await {
        WReply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))) => {}
        other => panic!("{sql}: {other:?}"),
    }
}

/// A column definition without the table names (`t` through sluice, `ref` directly).
fn def(c: &Column) -> String {
    format!(
        "{}|{}|cs={}|len={}|type={}|flags={:#x}|dec={}",
        c.name, c.org_name, c.charset, c.length, c.ty, c.flags, c.decimals
    )
}

/// What a client sees of one statement and the diagnostics after it.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<u8>>,
        warnings: u16,
        show_warnings: Vec<Vec<String>>,
        warning_count: Vec<Vec<String>>,
    },
    Err(u16, String),
    Other(String),
}

/// The parts of two answers that differ.
fn diff(got: &Seen, want: &Seen) -> String {
    match (got, want) {
        (
            Seen::Rows {
                columns: c1,
                rows: r1,
                warnings: w1,
                show_warnings: s1,
                warning_count: n1,
            },
            Seen::Rows {
                columns: c2,
                rows: r2,
                warnings: w2,
                show_warnings: s2,
                warning_count: n2,
            },
        ) => {
            let mut out = String::new();
            if c1 != c2 {
                out.push_str(&format!("    columns: {c1:?}\n     server: {c2:?}\n"));
            }
            if r1 != r2 {
                let i = r1
                    .iter()
                    .zip(r2)
                    .position(|(a, b)| a != b)
                    .unwrap_or(r1.len().min(r2.len()));
                out.push_str(&format!(
                    "    {} rows vs {}; first different row {i}:\n      {:?}\n      {:?}\n",
                    r1.len(),
                    r2.len(),
                    r1.get(i).map(|r| String::from_utf8_lossy(r).into_owned()),
                    r2.get(i).map(|r| String::from_utf8_lossy(r).into_owned())
                ));
            }
            if (w1, n1) != (w2, n2) {
                out.push_str(&format!("    warnings {w1} {n1:?} vs {w2} {n2:?}\n"));
            }
            if s1 != s2 {
                out.push_str(&format!("    SHOW WARNINGS: {s1:?}\n           server: {s2:?}\n"));
            }
            out
        }
        _ => format!("    sluice: {got:?}\n    server: {want:?}"),
    }
}

async fn diagnostics(w: &mut Wire) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut out = Vec::new();
    for sql in ["SHOW WARNINGS", "SELECT @@warning_count"] {
        match w.query(sql).await {
            WReply::Parts(p) => match p.into_iter().next() {
                Some(Part::Rows(rs)) => out.push(rs.rows),
                other => out.push(vec![vec![format!("{other:?}")]]),
            },
            other => out.push(vec![vec![format!("{other:?}")]]),
        }
        w.raw_rows.clear();
    }
    let count = out.pop().unwrap_or_default();
    (out.pop().unwrap_or_default(), count)
}

async fn seen(w: &mut Wire, reply: WReply) -> Seen {
    let raw = std::mem::take(&mut w.raw_rows);
    let first = match reply {
        WReply::Parts(p) => p.into_iter().next(),
        other => return Seen::Other(format!("{other:?}")),
    };
    match first {
        Some(Part::Rows(rs)) => {
            let (show_warnings, warning_count) = diagnostics(w).await;
            Seen::Rows {
                columns: rs.columns.iter().map(def).collect(),
                rows: raw,
                warnings: rs.end.warnings,
                show_warnings,
                warning_count,
            }
        }
        Some(Part::Err(e)) => Seen::Err(e.code, e.message),
        other => Seen::Other(format!("{other:?}")),
    }
}

async fn text(w: &mut Wire, sql: &str) -> Seen {
    let r = w.query(sql).await;
    seen(w, r).await
}

async fn prepared(w: &mut Wire, sql: &str, params: &[Param]) -> Seen {
    let p = match w.prepare(sql).await {
        WReply::Prepared(p) => p,
        // sluice plans a prepared statement on a sharded table at PREPARE.
        WReply::PrepareErr(e) => return Seen::Err(e.code, e.message),
        other => return Seen::Other(format!("prepare: {other:?}")),
    };
    let r = w.execute(p.stmt_id, params).await;
    // The diagnostics are read before the close (COM_STMT_CLOSE has no answer and
    // leaves them alone, but keep the order a driver would have).
    let s = seen(w, r).await;
    let _ = w.close_stmt(p.stmt_id).await;
    s
}

fn lenenc(b: &[u8]) -> Vec<u8> {
    let mut v = vec![u8::try_from(b.len()).expect("short value")];
    v.extend_from_slice(b);
    v
}

fn typed(ty: u8, value: &[u8]) -> Param {
    Param::Raw {
        ty,
        unsigned: false,
        value: lenenc(value),
    }
}

fn date(y: u16, m: u8, d: u8) -> Param {
    let mut v = vec![4];
    v.extend_from_slice(&y.to_le_bytes());
    v.extend_from_slice(&[m, d]);
    Param::Raw {
        ty: 0x0a,
        unsigned: false,
        value: v,
    }
}

fn datetime(y: u16, m: u8, d: u8, h: u8, mi: u8, s: u8, micro: u32) -> Param {
    let mut v = vec![11];
    v.extend_from_slice(&y.to_le_bytes());
    v.extend_from_slice(&[m, d, h, mi, s]);
    v.extend_from_slice(&micro.to_le_bytes());
    Param::Raw {
        ty: 0x0c,
        unsigned: false,
        value: v,
    }
}

/// Statements (`{t}` is the table) answered exactly across shards.
fn statements() -> Vec<&'static str> {
    vec![
        "SELECT GROUP_CONCAT(id ORDER BY id) FROM {t}",
        "SELECT GROUP_CONCAT(s ORDER BY id DESC SEPARATOR '') FROM {t} WHERE tid < 30",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) FROM {t} GROUP BY g",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) FROM {t} GROUP BY g ORDER BY g DESC",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) FROM {t} GROUP BY g LIMIT 2, 3",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) AS c, COUNT(*) n FROM {t} GROUP BY g ORDER BY n DESC, g",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) AS c, COUNT(*) n FROM {t} GROUP BY g HAVING n > 20 ORDER BY g",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) AS c FROM {t} GROUP BY g HAVING c < 'b' OR c > 'n'",
        "SELECT g, GROUP_CONCAT(s ORDER BY id) AS c, COUNT(*) n FROM {t} GROUP BY g HAVING c >= 'b' ORDER BY n, g LIMIT 1, 3",
        "SELECT g, GROUP_CONCAT(s, '|', amount, '|', d ORDER BY s DESC, id SEPARATOR ' ; '), SUM(amount), AVG(amount), MIN(d), MAX(s), COUNT(s) FROM {t} GROUP BY g ORDER BY g",
        "SELECT tid, GROUP_CONCAT(id ORDER BY id), GROUP_CONCAT(b ORDER BY id SEPARATOR 0x2c00) FROM {t} GROUP BY tid ORDER BY tid",
        "SELECT GROUP_CONCAT(DISTINCT g ORDER BY g DESC) FROM {t}",
        "SELECT g, GROUP_CONCAT(DISTINCT d ORDER BY d) FROM {t} GROUP BY g ORDER BY g",
        "SELECT g, GROUP_CONCAT(amount ORDER BY amount, id SEPARATOR '\\\\') FROM {t} GROUP BY g ORDER BY g",
        "SELECT g, GROUP_CONCAT(body ORDER BY id) FROM {t} WHERE id < 40 GROUP BY g ORDER BY g",
        "SELECT g, GROUP_CONCAT(tid ORDER BY tid) FROM {t} GROUP BY g ORDER BY g",
        "SELECT GROUP_CONCAT(id ORDER BY id), COUNT(*) FROM {t} WHERE tid = -1",
    ]
}

/// Prepared statements with typed parameters.
fn with_params() -> Vec<(&'static str, Vec<Param>)> {
    let s = |v: &str| Param::Str(v.to_string());
    vec![
        (
            "SELECT g, GROUP_CONCAT(s, ? ORDER BY id SEPARATOR ',') FROM {t} WHERE tid IN (?, ?, ?, ?) GROUP BY g ORDER BY g",
            vec![s("it's \"q\" \\ 😀"), Param::Int(1), Param::Int(2), Param::Int(3), Param::Int(4)],
        ),
        (
            "SELECT g, GROUP_CONCAT(s, ? ORDER BY id) FROM {t} GROUP BY g ORDER BY g",
            vec![Param::Null],
        ),
        (
            "SELECT g, GROUP_CONCAT(b, ? ORDER BY id) FROM {t} WHERE g < ? GROUP BY g ORDER BY g",
            vec![typed(0xfc, &[0x00, 0xff, 0x5c, 0x27]), Param::Int(4)],
        ),
        (
            "SELECT g, GROUP_CONCAT(amount * ? ORDER BY id) FROM {t} WHERE amount > ? GROUP BY g ORDER BY g",
            vec![typed(0xf6, b"1.23456789"), typed(0xf6, b"-100.5")],
        ),
        (
            "SELECT GROUP_CONCAT(id, ':', d ORDER BY d, id) FROM {t} WHERE d > ?",
            vec![date(2021, 5, 1)],
        ),
        (
            "SELECT g, GROUP_CONCAT(? ORDER BY id) FROM {t} WHERE tid < ? GROUP BY g ORDER BY g",
            vec![datetime(2021, 1, 15, 3, 4, 5, 123_456), Param::Int(10)],
        ),
        (
            "SELECT g, GROUP_CONCAT(s ORDER BY id) FROM {t} GROUP BY g ORDER BY g LIMIT ?, ?",
            vec![s("1"), Param::Int(3)],
        ),
    ]
}

/// Shapes refused with 1235, each with its sentence.
fn refused() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "SELECT g, GROUP_CONCAT(s) FROM t GROUP BY g",
            "GROUP_CONCAT without its own ORDER BY",
        ),
        (
            "SELECT GROUP_CONCAT(DISTINCT s ORDER BY id) FROM t",
            "DISTINCT other than GROUP_CONCAT(DISTINCT x ORDER BY x)",
        ),
        (
            "SELECT GROUP_CONCAT(s ORDER BY LENGTH(s)) FROM t",
            "not positions, aliases or expressions",
        ),
        (
            "SELECT GROUP_CONCAT(s ORDER BY id), GROUP_CONCAT(s ORDER BY s) FROM t",
            "different ORDER BY",
        ),
        (
            "SELECT GROUP_CONCAT(s ORDER BY id), COUNT(DISTINCT g) FROM t",
            "beside COUNT/SUM/AVG(DISTINCT",
        ),
        (
            "SELECT g FROM t GROUP BY g HAVING GROUP_CONCAT(s ORDER BY id) > ''",
            "must be a selected one",
        ),
    ]
}

#[tokio::test]
async fn group_concat_matches_the_server() {
    let (_s, mut sl, mut direct, cluster) = setup("shard_gc", "t").await;
    let values = rows(400);
    for chunk in values.chunks(100) {
        must(&mut sl, &format!("INSERT INTO t VALUES {}", chunk.join(", "))).await;
        must(
            &mut direct,
            &format!("INSERT INTO ref VALUES {}", chunk.join(", ")),
        )
        .await;
    }
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));

    let mut compared = 0usize;
    let mut rows_compared = 0usize;
    let mut cut = 0usize;
    let mut mismatches = Vec::new();
    for max_len in [4u64, 7, 25, 100, 512, 513, 4096, 1_048_576] {
        let set = format!("SET SESSION group_concat_max_len = {max_len}");
        must(&mut sl, &set).await;
        must(&mut direct, &set).await;
        let mut check = |what: String, mut got: Seen, mut want: Seen| {
            compared += 1;
            // TEXT/BLOB arguments: the server numbers its cuts by the order rows reach it
            // (its scan), not by the GROUP_CONCAT's order; sluice does not reproduce that
            // numbering (docs/sharding.md), so only the warnings' count and codes are compared.
            if what.contains("body") {
                for s in [&mut got, &mut want] {
                    if let Seen::Rows { show_warnings, .. } = s {
                        for w in show_warnings.iter_mut() {
                            w.retain(|f| !f.starts_with("Row "));
                        }
                    }
                }
            }
            if let Seen::Rows { rows, warnings, .. } = &want {
                rows_compared += rows.len();
                cut += usize::from(*warnings > 0);
            }
            if got != want {
                mismatches.push(format!("{what}\n{}", diff(&got, &want)));
            }
        };
        for sql in statements() {
            let (on_t, on_ref) = (sql.replace("{t}", "t"), sql.replace("{t}", "ref"));
            let (got, want) = (text(&mut sl, &on_t).await, text(&mut direct, &on_ref).await);
            check(format!("[max {max_len}, text] {on_t}"), got, want);
            let (got, want) = (
                prepared(&mut sl, &on_t, &[]).await,
                prepared(&mut direct, &on_ref, &[]).await,
            );
            check(format!("[max {max_len}, prepared] {on_t}"), got, want);
        }
        for (sql, params) in with_params() {
            let (on_t, on_ref) = (sql.replace("{t}", "t"), sql.replace("{t}", "ref"));
            let (got, want) = (
                prepared(&mut sl, &on_t, &params).await,
                prepared(&mut direct, &on_ref, &params).await,
            );
            check(format!("[max {max_len}, prepared] {on_t} {params:?}"), got, want);
        }
    }
    let mut refusals = 0usize;
    for (sql, why) in refused() {
        for got in [text(&mut sl, sql).await, prepared(&mut sl, sql, &[]).await] {
            match &got {
                Seen::Err(NOT_SUPPORTED, m) if m.contains(why) => refusals += 1,
                other => mismatches.push(format!("{sql}: want a refusal naming `{why}`, got {other:?}")),
            }
        }
    }
    eprintln!(
        "GROUP_CONCAT differential: {compared} statements compared ({rows_compared} rows, {cut} with \
         cut values), {} mismatches, {refusals} refusals",
        mismatches.len()
    );
    assert!(
        cut > 10,
        "the limits cut too few results ({cut}): the test checks nothing of the cut"
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Latin1 strings are compared and cut in latin1, whatever the client's character set:
/// under `SET NAMES latin1` sluice took bytes that happen to be valid UTF-8 (latin1
/// `'Ã\x9F'`, stored from `X'C39F'`) for UTF-8 (`'ß'`, which sorts after `'zz'`), and a
/// GROUP_CONCAT of latin1 values sent as UTF-8 was cut at `group_concat_max_len` UTF-8
/// bytes where the server cuts latin1 ones (one per character), with the warnings'
/// row numbers off too; latin1_bin ordered `'€'` (latin1 0x80) after `'é'` (0xE9) as
/// UTF-8 does.
#[tokio::test]
async fn latin1_strings_compare_and_cut_in_their_own_character_set() {
    fn latin1_schema(table: &str) -> String {
        format!(
            "CREATE TABLE `{table}` (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, \
             l VARCHAR(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci NULL, \
             lb VARCHAR(40) CHARACTER SET latin1 COLLATE latin1_bin NULL, KEY (tid)) \
             ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        )
    }
    let cluster = shared_cluster();
    let (_s, mut sl, mut direct) = setup_with(cluster, "shard_l1", "t", latin1_schema).await;
    // No two values equal under latin1_swedish_ci (a tie's representative is the plan's).
    let values = [
        "'ß'",
        "'zz'",
        "X'C39F'",
        "'ééé'",
        "'ääää'",
        "'€€'",
        "'E'",
        "'Ä'",
        "'b'",
        "NULL",
    ];
    let rows: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("({i}, {}, {v}, {v})", i * 7 % 11))
        .collect();
    must(&mut sl, &format!("INSERT INTO t VALUES {}", rows.join(", "))).await;
    must(
        &mut direct,
        &format!("INSERT INTO ref VALUES {}", rows.join(", ")),
    )
    .await;
    // Freshness is off here: reads go to replicas, which must hold the rows first.
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    let statements = [
        "SELECT MAX(l), MIN(l), MAX(lb), MIN(lb) FROM {t}",
        "SELECT l FROM {t} ORDER BY l DESC, id",
        "SELECT lb FROM {t} ORDER BY lb, id",
        "SELECT GROUP_CONCAT(l ORDER BY l, id) FROM {t}",
        "SELECT GROUP_CONCAT(lb ORDER BY id SEPARATOR 'é') FROM {t}",
        "SELECT GROUP_CONCAT(CONCAT(l, 'x') ORDER BY id) FROM {t}",
        "SELECT tid, GROUP_CONCAT(l ORDER BY lb DESC) FROM {t} GROUP BY tid",
    ];
    let mut compared = 0usize;
    let mut mismatches = Vec::new();
    for names in ["latin1", "utf8mb4"] {
        for max_len in [4u64, 5, 6, 9, 1024] {
            let set = format!("SET NAMES {names}, SESSION group_concat_max_len = {max_len}");
            must(&mut sl, &set).await;
            must(&mut direct, &set).await;
            for sql in statements {
                let (on_t, on_ref) = (sql.replace("{t}", "t"), sql.replace("{t}", "ref"));
                let pairs = [
                    (
                        "text",
                        text(&mut sl, &on_t).await,
                        text(&mut direct, &on_ref).await,
                    ),
                    (
                        "prepared",
                        prepared(&mut sl, &on_t, &[]).await,
                        prepared(&mut direct, &on_ref, &[]).await,
                    ),
                ];
                for (how, got, want) in pairs {
                    compared += 1;
                    if got != want {
                        mismatches.push(format!(
                            "[{names}, max {max_len}, {how}] {on_t}\n{}",
                            diff(&got, &want)
                        ));
                    }
                }
            }
        }
    }
    eprintln!(
        "latin1 differential: {compared} compared, {} mismatches",
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The result columns sluice learned for a merged read (see `src/shard/describe.rs`) are
/// forgotten after DDL through sluice on any table the statement reads: here an
/// unsharded table joined to the sharded one, whose column grows. (The sharded table is
/// `pr`: no word of the ALTER names it, so the ALTER takes the unsharded path.)
#[tokio::test]
async fn descriptions_follow_ddl_through_sluice() {
    let (_s, mut sl, mut direct, cluster) = setup("shard_desc", "pr").await;
    must(
        &mut sl,
        "CREATE TABLE u (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL)",
    )
    .await;
    let values = rows(60);
    must(&mut sl, &format!("INSERT INTO pr VALUES {}", values.join(", "))).await;
    must(
        &mut direct,
        &format!("INSERT INTO ref VALUES {}", values.join(", ")),
    )
    .await;
    must(
        &mut sl,
        "INSERT INTO u VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, 'three')",
    )
    .await;
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    let sql = "SELECT u.name, COUNT(*), GROUP_CONCAT(x.id ORDER BY x.id) FROM {t} x JOIN u ON u.id = x.g \
               GROUP BY u.name ORDER BY u.name";
    let (on_t, on_ref) = (sql.replace("{t}", "pr"), sql.replace("{t}", "ref"));
    for round in ["before", "after"] {
        if round == "after" {
            must(&mut sl, "ALTER TABLE u MODIFY name VARCHAR(30) NOT NULL").await;
            cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
        }
        for _ in 0..2 {
            let (got, want) = (text(&mut sl, &on_t).await, text(&mut direct, &on_ref).await);
            assert_eq!(got, want, "{round} the ALTER:\n{}", diff(&got, &want));
            let (got, want) = (
                prepared(&mut sl, &on_t, &[]).await,
                prepared(&mut direct, &on_ref, &[]).await,
            );
            assert_eq!(got, want, "{round} the ALTER (prepared):\n{}", diff(&got, &want));
        }
    }
}

/// A statement's rows, or its error code (after rows already sent, too).
async fn rows_or_code(w: &mut Wire, sql: &str) -> Result<Vec<Vec<String>>, u16> {
    match w.query(sql).await {
        WReply::Parts(p) => {
            if let Some(Part::Err(e)) = p.iter().find(|x| matches!(x, Part::Err(_))) {
                return Err(e.code);
            }
            Ok(p.into_iter()
                .filter_map(|x| match x {
                    Part::Rows(r) => Some(r.rows),
                    _ => None,
                })
                .next_back()
                .unwrap_or_default())
        }
        other => panic!("{sql}: {other:?}"),
    }
}

/// Twelve rows in `t` (through sluice) and `ref`: TEXT values equal in their first 70
/// characters, in the reverse order of their ids, and short strings (two bytes: a sort key
/// within 64).
async fn sort_length_rows(sl: &mut Wire, direct: &mut Wire) {
    let mut values = Vec::new();
    for id in 1..=12i64 {
        let long = format!("{}{}", "p".repeat(70), (b'a' + (12 - id) as u8) as char);
        let short = format!("{}{}", (b'a' + (id % 3) as u8) as char, id % 2);
        values.push(format!("({id}, {id}, {}, '{short}', '{long}')", id % 3));
    }
    for (w, t) in [(sl, "t"), (direct, "ref")] {
        must(
            w,
            &format!(
                "INSERT INTO {t} (id, tid, g, s, body) VALUES {}",
                values.join(", ")
            ),
        )
        .await;
    }
}

const SORT_LENGTH_QUERIES: [&str; 3] = [
    "SELECT id, body FROM {t} ORDER BY body, id",
    "SELECT id, s FROM {t} ORDER BY s, id",
    "SELECT DISTINCT s FROM {t} ORDER BY s",
];

/// `max_sort_length` as the server has it, differentially: TEXT values that share their
/// first 70 characters are ordered by a prefix (then by id) by a server whose session value
/// is 64 (its least),
/// by their whole value by the merge. The value is set through the paths that SET text
/// does not show (a procedure, a prepared SET, `SET STATEMENT … FOR`) and through a plain
/// SET, on both connections; each statement through sluice must give the server's rows or
/// be refused with 1235. Before, sluice assumed the default (1,024) unless the session's
/// SET text named the variable: the procedure and prepared paths came back in the merge's
/// order. Strings within 64 bytes of sort key stay answered after the procedure.
#[tokio::test]
async fn max_sort_length_is_the_servers() {
    let (_s, mut sl, mut direct, cluster) = setup("shard_msl", "t").await;
    sort_length_rows(&mut sl, &mut direct).await;
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    must(
        &mut direct,
        "CREATE PROCEDURE set_msl(n INT) SET SESSION max_sort_length = n",
    )
    .await;
    let paths: [(&[&str], &str); 4] = [
        (&["CALL set_msl(64)"], ""),
        (
            &["PREPARE p FROM 'SET SESSION max_sort_length = 64'", "EXECUTE p"],
            "",
        ),
        (&[], "SET STATEMENT max_sort_length = 64 FOR "),
        (&["SET SESSION max_sort_length = 64"], ""),
    ];
    let mut failures = Vec::new();
    let mut answered = 0;
    for (setup, prefix) in paths {
        for w in [&mut sl, &mut direct] {
            for sql in setup {
                must(w, sql).await;
            }
        }
        for q in SORT_LENGTH_QUERIES {
            let want = rows_or_code(&mut direct, &format!("{prefix}{}", q.replace("{t}", "ref"))).await;
            let got = rows_or_code(&mut sl, &format!("{prefix}{}", q.replace("{t}", "t"))).await;
            if got == Err(NOT_SUPPORTED) {
                continue;
            }
            answered += 1;
            if got != want {
                failures.push(format!(
                    "{setup:?} {prefix}{q}\n  sluice: {got:?}\n  direct: {want:?}"
                ));
            }
        }
        for w in [&mut sl, &mut direct] {
            must(w, "SET SESSION max_sort_length = DEFAULT").await;
        }
    }
    // The long values really are ordered by their prefix under 64.
    let full = rows_or_code(&mut direct, "SELECT id, body FROM ref ORDER BY body, id").await;
    let cut = rows_or_code(
        &mut direct,
        "SET STATEMENT max_sort_length = 64 FOR SELECT id, body FROM ref ORDER BY body, id",
    )
    .await;
    assert_ne!(
        full, cut,
        "the server's order does not depend on max_sort_length here"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The short strings of the procedure, the prepared SET and the plain SET at least (a
    // statement setting the variable for itself stays refused whole).
    assert!(answered >= 6, "short strings were refused: {answered} answered");
}

/// A server started with a smaller global `max_sort_length` (64, as my.cnf would set it):
/// every connection sluice opens has it. Through sluice each statement gives the server's
/// rows or is refused with 1235, and strings within 64 bytes of sort key are answered.
/// Before, the merge assumed 1,024 and ordered the long values by their whole text.
#[tokio::test]
async fn max_sort_length_of_a_server_configured_smaller() {
    let cluster = Cluster::start_with_args(0, &["--max-sort-length=64".to_owned()]);
    let (_s, mut sl, mut direct) = setup_on(&cluster, "shard_mslg", "t").await;
    sort_length_rows(&mut sl, &mut direct).await;
    let mut failures = Vec::new();
    let mut answered = 0;
    for q in SORT_LENGTH_QUERIES {
        let want = rows_or_code(&mut direct, &q.replace("{t}", "ref")).await;
        let got = rows_or_code(&mut sl, &q.replace("{t}", "t")).await;
        if got == Err(NOT_SUPPORTED) {
            continue;
        }
        answered += 1;
        if got != want {
            failures.push(format!("{q}\n  sluice: {got:?}\n  direct: {want:?}"));
        }
    }
    let cut = rows_or_code(&mut direct, "SELECT id, body FROM ref ORDER BY body, id").await;
    let full = rows_or_code(
        &mut direct,
        "SET STATEMENT max_sort_length = 1024 FOR SELECT id, body FROM ref ORDER BY body, id",
    )
    .await;
    assert_ne!(
        full, cut,
        "the server's order does not depend on max_sort_length here"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(answered, 2, "short strings were refused");
}
