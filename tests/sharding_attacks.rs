//! Issue 15's attacks on sharded statements, run against a real sluice process:
//!
//! - SQL injection through parameter binding, in every character set MariaDB lists in
//!   `SHOW CHARACTER SET`: the same prepared statement with the same parameters through
//!   sluice on the sharded table `pr` and directly on the unsharded reference `ref` must give
//!   the same rows (no row of another sub-table), or the same error when the server refuses
//!   the character set itself;
//! - a 4,000-term flat expression (the process must survive and keep serving others);
//! - a 1.9 MiB IN list (refused before it is planned; sluice's memory stays bounded).

mod common;

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Value};

const NOT_SUPPORTED: u16 = 1235;

const SCHEMA: &str = "(id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, subject VARCHAR(80) NOT NULL) \
                      DEFAULT CHARSET=utf8mb4";

fn yaml(db: &str) -> String {
    format!("log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.pr.tid.4\"]\n")
}

async fn connect(url: &str) -> Conn {
    Conn::from_url(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

fn code(e: mysql_async::Error) -> (u16, String) {
    match e {
        mysql_async::Error::Server(s) => (s.code, s.message),
        other => (0, other.to_string()),
    }
}

async fn setup(cluster: &Cluster, s: &Sluice, db: &str) -> (Conn, Conn) {
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, db)).await;
    let mut sl = connect(&s.app_url(db)).await;
    sl.query_drop(format!("CREATE TABLE pr {SCHEMA}"))
        .await
        .expect("CREATE TABLE pr through sluice");
    direct
        .query_drop(format!("CREATE TABLE ref {SCHEMA}"))
        .await
        .expect("CREATE TABLE ref");
    let rows: Vec<String> = (1..=40)
        .map(|i| format!("({i}, {}, 'secret of shard {}')", i % 8, i % 4))
        .chain(std::iter::once("(100, 1, 'hello')".to_string()))
        .collect();
    for (conn, t) in [(&mut sl, "pr"), (&mut direct, "ref")] {
        conn.query_drop(format!(
            "INSERT INTO {t} (id, tid, subject) VALUES {}",
            rows.join(", ")
        ))
        .await
        .unwrap_or_else(|e| panic!("load {t}: {e}"));
    }
    cluster.wait_replicas_caught_up();
    (sl, direct)
}

/// A new database with sluice in front of it (the table `pr` sharded) and no tables:
/// the cluster, sluice, a client of sluice and a direct one.
async fn empty_database(prefix: &str) -> (&'static Cluster, Sluice, Conn, Conn) {
    let cluster = shared_cluster();
    let db = unique_name(prefix);
    let s = Sluice::start_for(cluster, &yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let sl = connect(&s.app_url(&db)).await;
    let direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    (cluster, s, sl, direct)
}

type Answer = Result<Vec<Vec<Value>>, (u16, String)>;

async fn exec(conn: &mut Conn, sql: &str, params: Vec<Value>) -> Answer {
    let rows: Vec<mysql_async::Row> = conn.exec(sql, params).await.map_err(code)?;
    let mut rows: Vec<Vec<Value>> = rows.into_iter().map(mysql_async::Row::unwrap).collect();
    rows.sort_by_key(|r| format!("{r:?}"));
    Ok(rows)
}

/// Each character set, each byte string that ends in a lead byte + 0x5C in some multi-byte
/// character set (GBK, Big5, SJIS/CP932, EUC), and the injection the issue reported.
#[tokio::test]
async fn no_injection_through_parameters_in_any_character_set() {
    let cluster = shared_cluster();
    let db = unique_name("shard_inj");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (mut sl, mut direct) = setup(cluster, &s, &db).await;
    let charsets: Vec<String> = direct
        .query("SELECT CHARACTER_SET_NAME FROM information_schema.CHARACTER_SETS ORDER BY 1")
        .await
        .expect("character sets");
    assert!(
        charsets.len() >= 30,
        "SHOW CHARACTER SET lists {}",
        charsets.len()
    );
    let payloads: [&[u8]; 6] = [
        &[0xe4, 0xb8, 0xad, 0x5c], // 中\ in UTF-8; two GBK characters, the second ending in 0x5C
        &[0x81, 0x5c],
        &[0xa1, 0x5c],
        &[0x8e, 0x5c],
        &[0xbf, 0x5c],
        b"\\",
    ];
    let injection = " OR 1=1 UNION SELECT id, subject FROM pr_2 -- ";
    let sql = "SELECT id, subject FROM {t} WHERE tid = ? AND subject = ? AND subject = ?";
    let (mut compared, mut refused_by_server, mut rows_seen, mut other_error) = (0, 0, 0, 0);
    for cs in &charsets {
        let set = format!("SET NAMES {cs}");
        let want = direct.query_drop(&set).await.map_err(code);
        let got = sl.query_drop(&set).await.map_err(code);
        match (&want, &got) {
            (Ok(()), Ok(())) => {}
            (Err(w), Err(g)) => {
                assert_eq!(g.0, w.0, "{set}: sluice {g:?}, server {w:?}");
                refused_by_server += 1;
                continue;
            }
            _ => panic!("{set}: sluice {got:?}, server {want:?}"),
        }
        for p in payloads {
            let params = vec![Value::from(1), Value::Bytes(p.to_vec()), Value::from(injection)];
            let want = exec(&mut direct, &sql.replace("{t}", "ref"), params.clone()).await;
            let got = exec(&mut sl, &sql.replace("{t}", "pr"), params).await;
            match (&got, &want) {
                // Bytes that are not a character of `cs`: the hex literal sluice binds is
                // refused (1300 "Invalid ... character string") where the server converts a
                // parameter or refuses it with another error. An error, never rows.
                (Err(g), w) if g.0 == 1300 && w.as_ref().map_or(true, Vec::is_empty) => {
                    other_error += 1;
                }
                _ => assert_eq!(got, want, "{cs} {p:02X?}"),
            }
            // The server may refuse the comparison itself (e.g. `ascii` against a utf8mb4
            // column: 1267); it never finds a row.
            assert!(
                want.as_ref().map_or(true, Vec::is_empty),
                "{cs}: the reference matched"
            );
            compared += 1;
        }
        // A plain match still works in this character set.
        let params = vec![Value::from(1), Value::from("hello"), Value::from("hello")];
        let want = exec(&mut direct, &sql.replace("{t}", "ref"), params.clone()).await;
        let got = exec(&mut sl, &sql.replace("{t}", "pr"), params).await;
        assert_eq!(got, want, "{cs} control");
        rows_seen += want.map(|r| r.len()).unwrap_or(0);
    }
    eprintln!(
        "injection: {} character sets, {compared} executions compared, {refused_by_server} \
         refused by the server itself (SET NAMES), {rows_seen} control rows, {other_error} refused \
         by sluice's hex literal as not characters of the character set (1300)",
        charsets.len()
    );
    assert!(compared >= 6 * 30);
    assert!(rows_seen >= 30, "control rows {rows_seen}");
}

fn chain(terms: usize) -> String {
    vec!["0"; terms].join(" + ")
}

#[tokio::test]
async fn deep_expressions_are_refused_and_sluice_keeps_serving() {
    let cluster = shared_cluster();
    let db = unique_name("shard_deep");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (mut sl, mut direct) = setup(cluster, &s, &db).await;
    let mut other = connect(&s.app_url(&db)).await;
    let deep = format!("SELECT id FROM pr WHERE {} = 0", chain(4000));
    let e = sl.query_drop(&deep).await.map_err(code).unwrap_err();
    assert_eq!(e.0, NOT_SUPPORTED, "{e:?}");
    assert!(e.1.contains("nest too deeply"), "{e:?}");
    let e = sl.exec_drop(&deep, ()).await.map_err(code).unwrap_err();
    assert_eq!(e.0, NOT_SUPPORTED, "prepared: {e:?}");
    // Named only in a comment: the server's own answer, untouched.
    let commented = format!("SELECT {} AS z /* pr */", chain(4000));
    let want: Result<Vec<i64>, _> = direct.query(&commented).await.map_err(code);
    let got: Result<Vec<i64>, _> = sl.query(&commented).await.map_err(code);
    assert_eq!(got, want);
    // Within the bound: planned (on a thread of its own) and answered exactly.
    let fine = format!(
        "SELECT id FROM {{t}} WHERE tid = 1 AND {} = 0 ORDER BY id",
        chain(150)
    );
    let want: Vec<i64> = direct
        .query(fine.replace("{t}", "ref"))
        .await
        .unwrap_or_else(|e| panic!("direct: {e}"));
    let got: Vec<i64> = sl
        .query(fine.replace("{t}", "pr"))
        .await
        .unwrap_or_else(|e| panic!("sluice: {e}"));
    assert_eq!(got, want);
    // The process is alive and serves other sessions.
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM pr")
        .await
        .expect("other session");
    assert_eq!(n, Some(41));
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime")
}

#[tokio::test]
async fn huge_in_lists_are_refused_in_bounded_memory() {
    let cluster = shared_cluster();
    let db = unique_name("shard_big");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (mut sl, _direct) = setup(cluster, &s, &db).await;
    let before = vm_hwm_kib(s.pid());
    let cpu0 = cpu_ticks(s.pid());
    let list = vec!["1"; 1_000_000].join(",");
    let sql = format!("SELECT id FROM pr WHERE tid IN ({list})");
    assert!(sql.len() > 1_900_000);
    let e = sl.query_drop(&sql).await.map_err(code).unwrap_err();
    assert_eq!(e.0, NOT_SUPPORTED, "{e:?}");
    assert!(e.1.contains("sharding.max_statement_size"), "{e:?}");
    // Just under the limit: planned and answered (off the async workers).
    let list = vec!["1"; 120_000].join(",");
    let n: Vec<i64> = sl
        .query(format!("SELECT id FROM pr WHERE tid IN ({list}) ORDER BY id"))
        .await
        .expect("240 KB IN list");
    assert_eq!(n.len(), 6);
    let after = vm_hwm_kib(s.pid());
    let cpu = cpu_ticks(s.pid()) - cpu0;
    eprintln!("sluice peak RSS {before} kB before, {after} kB after; CPU {cpu} ticks (1/100 s)");
    assert!(
        after < before + 400 * 1024,
        "peak RSS grew from {before} to {after} kB"
    );
}

/// COM_STMT_SEND_LONG_DATA on a sharded statement is capped at `sharding.max_long_data_size`
/// (sluice holds it until the EXECUTE says where it goes), with MariaDB's max_long_data_size
/// semantics: past the cap the bytes are dropped and the EXECUTE fails, instead of
/// sluice's memory growing by what the client sends.
#[tokio::test]
async fn long_data_is_capped() {
    let cluster = shared_cluster();
    let db = unique_name("shard_long");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (mut sl, _direct) = setup(cluster, &s, &db).await;
    let before = vm_hwm_kib(s.pid());
    // mysql_async sends a parameter this large with COM_STMT_SEND_LONG_DATA, in chunks.
    // Two 40 MiB parameters: held, they would add 80 MiB on top of the packet being read.
    let blob = vec![b'x'; 40 << 20];
    let e = sl
        .exec_drop(
            "INSERT INTO pr (id, tid, subject) VALUES (?, ?, CONCAT(?, ?))",
            (1000, 1, blob.clone(), blob),
        )
        .await
        .map_err(code)
        .unwrap_err();
    assert_eq!(e.0, NOT_SUPPORTED, "{e:?}");
    assert!(
        e.1.contains("long data") && e.1.contains("sharding.max_long_data_size"),
        "{e:?}"
    );
    let after = vm_hwm_kib(s.pid());
    eprintln!("long data: sluice peak RSS {before} kB before, {after} kB after 80 MiB of long data");
    // What remains is the one packet being read (up to limits.max_packet_size), held once:
    // a packet of 16 MiB or more is read straight into its payload, not also into the
    // read buffer (which made the peak +49..+82 MiB here, and this test flaky; +24 since).
    assert!(
        after < before + 48 * 1024,
        "peak RSS grew from {before} to {after} kB"
    );
    // The statement and the session still work.
    let n: Option<i64> = sl
        .exec_first("SELECT COUNT(*) FROM pr WHERE tid = ?", (1,))
        .await
        .expect("session still works");
    assert_eq!(n, Some(6));
}

/// TIMESTAMPs ordered across sub-tables when the server's own zone (the session's
/// `time_zone` left at SYSTEM/DEFAULT) has daylight saving time: the server orders by
/// UTC, a merge by the local text, which goes back an hour when the clocks do. Three
/// instants around Europe/Berlin's change of 2026-10-25 (02:30 CEST, 02:45 CEST, 02:30
/// CET) in three sub-tables: through sluice the order equals the server's or is refused
/// with 1235 (before: 02:30, 02:30, 02:45); under a fixed offset it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamps_under_a_server_zone_with_daylight_saving_are_exact_or_refused() {
    let cluster = Cluster::start(0);
    let tz = std::process::Command::new("mysql_tzinfo_to_sql")
        .args(["/usr/share/zoneinfo/Europe/Berlin", "Europe/Berlin"])
        .output()
        .expect("mysql_tzinfo_to_sql (mariadb-server)");
    assert!(tz.status.success(), "{}", String::from_utf8_lossy(&tz.stderr));
    cluster
        .master
        .sql(&format!("USE mysql; {}", String::from_utf8_lossy(&tz.stdout)));
    cluster.master.sql("SET GLOBAL time_zone = 'Europe/Berlin'");
    let db = unique_name("shard_tz");
    let s = Sluice::start_for(&cluster, &yaml(&db).replace(".pr.", ".ts."));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut sl = connect(&s.app_url(&db)).await;
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    // Written in UTC (Berlin's 02:30 is ambiguous on that day).
    let rows = "(1, 1, '2026-10-25 00:30:00'), (2, 2, '2026-10-25 00:45:00'), \
                (3, 3, '2026-10-25 01:30:00')";
    for (c, t) in [(&mut sl, "ts"), (&mut direct, "ref")] {
        c.query_drop("SET time_zone = '+00:00'").await.expect("utc");
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, tid INT, at TIMESTAMP NULL)"
        ))
        .await
        .expect("create");
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .await
            .expect("insert");
    }
    for zone in ["DEFAULT", "'+00:00'"] {
        for c in [&mut sl, &mut direct] {
            c.query_drop(format!("SET time_zone = {zone}"))
                .await
                .expect("zone");
        }
        for q in ["SELECT id, at FROM {t} ORDER BY at", "SELECT 0, MAX(at) FROM {t}"] {
            let want: Vec<(i64, String)> = direct.query(q.replace("{t}", "ref")).await.expect("direct");
            let got = sl
                .query::<(i64, String), _>(q.replace("{t}", "ts"))
                .await
                .map_err(code);
            let fixed = zone != "DEFAULT";
            assert!(
                got.as_ref() == Ok(&want) || (!fixed && got.as_ref().is_err_and(|e| e.0 == NOT_SUPPORTED)),
                "time_zone {zone}: {q}\n  sluice {got:?}\n  direct {want:?}"
            );
        }
    }
}

/// Strings longer than `max_sort_length` (1,024 bytes by default) ordered, grouped or
/// made DISTINCT across sub-tables: the server compares their first 1,024 bytes when it
/// sorts and whole values where it reads a key, by plan, so two TEXT values equal in
/// their first 1,024 bytes are one group or two, in either order, by the server's plan;
/// the merge compared whole values. Through sluice each answer equals the server's or is
/// refused with 1235; strings under the limit are answered.
#[tokio::test]
async fn strings_longer_than_max_sort_length_are_exact_or_refused() {
    let (cluster, _s, mut sl, mut direct) = empty_database("shard_msl").await;
    let long = "x".repeat(1024);
    let rows = format!(
        "(1, 1, '{long}b', 'b'), (2, 2, '{long}a', 'a'), (3, 3, '{long}b', 'b'), (4, 0, 'short', 'c')"
    );
    for (c, t) in [(&mut sl, "pr"), (&mut direct, "ref")] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, tid INT, v TEXT, w VARCHAR(10)) DEFAULT CHARSET=utf8mb4"
        ))
        .await
        .expect("create");
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .await
            .expect("insert");
    }
    // Freshness is off here: the replicas must hold the sub-tables before reads reach them.
    cluster.wait_replicas_caught_up_within(std::time::Duration::from_secs(60));
    let ordered = |q: &str| !q.contains("GROUP BY") || q.contains("ORDER BY");
    for q in [
        "SELECT id, RIGHT(v, 1) FROM {t} ORDER BY v, id",
        "SELECT RIGHT(v, 1), COUNT(*) FROM {t} GROUP BY v",
        "SELECT DISTINCT LENGTH(v), v FROM {t} ORDER BY v",
        "SELECT w, COUNT(*) FROM {t} GROUP BY w ORDER BY w",
    ] {
        let mut want = text_rows(&mut direct, q.replace("{t}", "ref"))
            .await
            .expect("direct");
        let mut got = text_rows(&mut sl, q.replace("{t}", "pr")).await;
        if !ordered(q) {
            want.sort_by_key(|r| format!("{r:?}"));
            if let Ok(g) = got.as_mut() {
                g.sort_by_key(|r| format!("{r:?}"));
            }
        }
        let short = q.contains(" w");
        assert!(
            got.as_ref() == Ok(&want) || (!short && got.as_ref().is_err_and(|e| e.0 == NOT_SUPPORTED)),
            "{q}\n  sluice {got:?}\n  direct {want:?}"
        );
    }
}

/// Computed strings compared across sub-tables. `COUNT(DISTINCT x)`: the shards send x
/// in the COUNT's column, and sluice took x's collation from the server's definition of
/// the client's column there, the COUNT's (binary): `COUNT(DISTINCT UPPER(u))` over a
/// utf8mb4_unicode_ci column counted 6 where the server counts 3 (`'A'` and `'A '`,
/// `'SS'` and `'ß'` are one). `SELECT DISTINCT … ORDER BY … x COLLATE …` (or a VARCHAR
/// `CONCAT(b, 'x')`): MariaDB deduplicates by the other ORDER BY terms only, the merge
/// did not. Through sluice each answer (text and binary) equals the server's or is
/// refused.
#[tokio::test]
async fn computed_strings_compared_across_sub_tables_are_exact_or_refused() {
    let (cluster, _s, mut sl, mut direct) = empty_database("shard_cdx").await;
    let rows = "(1, 0, 'a', 'a'), (2, 1, 'A ', 'A '), (3, 2, 'ß', 'ß'), (4, 3, 'ss', 'ss'), \
                (5, 0, 'é', 'é'), (6, 1, 'E', 'E'), (7, 2, NULL, NULL)";
    for (c, t) in [(&mut sl, "pr"), (&mut direct, "ref")] {
        c.query_drop(format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, tid INT, \
             u TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci, \
             b VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)"
        ))
        .await
        .expect("create");
        c.query_drop(format!("INSERT INTO {t} VALUES {rows}"))
            .await
            .expect("insert");
    }
    cluster.wait_replicas_caught_up_within(std::time::Duration::from_secs(60));
    let mut wrong = Vec::new();
    for q in [
        "SELECT COUNT(DISTINCT UPPER(u)) FROM {t}",
        "SELECT COUNT(DISTINCT CONCAT(u, '')) FROM {t}",
        "SELECT COUNT(DISTINCT UPPER(b)) FROM {t}",
        "SELECT tid % 2 AS g, COUNT(DISTINCT LOWER(b)) FROM {t} GROUP BY g ORDER BY g",
        "SELECT COUNT(DISTINCT b) FROM {t}",
        // MariaDB's own rule (one row of seven); the alias form is plain DISTINCT.
        "SELECT DISTINCT id > 0, b COLLATE utf8mb4_general_ci FROM {t} ORDER BY id > 0, b COLLATE utf8mb4_general_ci",
        "SELECT DISTINCT id > 0 AS p, b COLLATE utf8mb4_general_ci AS x FROM {t} ORDER BY p, x",
        "SELECT DISTINCT id > 0, CONCAT(b, 'x') FROM {t} ORDER BY id > 0, CONCAT(b, 'x')",
    ] {
        let (on_pr, on_ref) = (q.replace("{t}", "pr"), q.replace("{t}", "ref"));
        let answers = [
            (
                exec(&mut sl, &on_pr, vec![]).await,
                exec(&mut direct, &on_ref, vec![]).await,
            ),
            (
                text_rows(&mut sl, on_pr.clone()).await,
                text_rows(&mut direct, on_ref).await,
            ),
        ];
        for (got, want) in answers {
            if got != want && !got.as_ref().is_err_and(|e| e.0 == NOT_SUPPORTED) {
                wrong.push(format!("{q}\n  sluice {got:?}\n  direct {want:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

async fn text_rows(c: &mut Conn, sql: String) -> Answer {
    let rows: Vec<mysql_async::Row> = c.query(sql).await.map_err(code)?;
    Ok(rows.into_iter().map(mysql_async::Row::unwrap).collect())
}

/// The columns' names and the rows (as text) of a statement's last result.
async fn named_rows(
    c: &mut Conn,
    sql: &str,
    binary: bool,
) -> Result<(Vec<String>, Vec<Vec<Value>>), (u16, String)> {
    let rows: Vec<mysql_async::Row> = if binary {
        c.exec(sql, ()).await.map_err(code)?
    } else {
        c.query(sql).await.map_err(code)?
    };
    let names = rows.first().map_or(vec![], |r| {
        r.columns_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect()
    });
    Ok((names, rows.into_iter().map(mysql_async::Row::unwrap).collect()))
}

/// What the server computes from the session or from the statement's row sequence, and
/// what it names after the client's text, on a sharded table against one table, text and
/// binary protocol: `sql_select_limit` (each sub-table applied it to its own rows: 6
/// rows where the server sends 2), `RAND(seed)`, `ROWNUM()`, `:=` (one sequence per
/// sub-table), `LAST_INSERT_ID()`, `ROW_COUNT()`, `@@warning_count` (the pooled part
/// connection's values), and select items that start with a parenthesis or are literals
/// the server names by their text (`(k, 1) = (1, 1)` was named `k`, and `ORDER BY id`
/// then sorted by it). Reads equal the server's answer, names included, or are refused
/// with 1235 where marked; writes equal it (rows affected and the table after) or are
/// refused with 1235 and write nothing. Last, the statement's time: `NOW(6)` and an
/// `ON UPDATE CURRENT_TIMESTAMP(6)` column take one value per statement, as on the
/// server (each part read its own clock: 4 distinct values where the server has 1).
#[tokio::test]
async fn session_values_row_sequences_and_names_are_exact_or_refused() {
    let cluster = shared_cluster();
    let db = unique_name("shard_seq");
    let s = Sluice::start_for(cluster, &yaml(&db));
    let (_, mut setup_conn) = setup(cluster, &s, &db).await;
    setup_conn
        .query_drop("CREATE PROCEDURE limit_2() SET sql_select_limit = 2")
        .await
        .expect("CREATE PROCEDURE");
    cluster.wait_replicas_caught_up();
    let mut wrong = Vec::new();
    // (statements before, the statement, whether 1235 is acceptable)
    let reads: &[(&str, &str, bool)] = &[
        (
            "SET sql_select_limit = 2",
            "SELECT id FROM {t} ORDER BY id",
            false,
        ),
        (
            "SET sql_select_limit = 3",
            "SELECT tid, COUNT(*) FROM {t} GROUP BY tid ORDER BY tid",
            false,
        ),
        (
            "SET sql_select_limit = 3",
            "SELECT tid, COUNT(*) FROM {t} GROUP BY tid ORDER BY tid LIMIT 5",
            false,
        ),
        (
            "SET sql_select_limit = 0",
            "SELECT id FROM {t} ORDER BY id",
            false,
        ),
        (
            "SET @n = 4; SET sql_select_limit = @n",
            "SELECT id FROM {t} ORDER BY id DESC",
            false,
        ),
        ("CALL limit_2()", "SELECT id FROM {t} ORDER BY id DESC", false),
        (
            "EXECUTE IMMEDIATE 'SET sql_select_limit = 1'",
            "SELECT id FROM {t} ORDER BY id",
            false,
        ),
        (
            "SET sql_select_limit = 2",
            "SELECT id FROM {t} UNION ALL SELECT id FROM {t} ORDER BY 1",
            false,
        ),
        ("DO 0", "SELECT id, RAND(1) FROM {t} ORDER BY id", true),
        ("DO 0", "SELECT id FROM {t} ORDER BY RAND(3) LIMIT 3", true),
        ("DO 0", "SELECT id, ROWNUM() FROM {t} ORDER BY id", true),
        ("DO 0", "SELECT id FROM {t} WHERE ROWNUM() <= 3 ORDER BY id", true),
        (
            "SET @rn = 0",
            "SELECT id, @rn := @rn + 1 FROM {t} ORDER BY id",
            true,
        ),
        (
            "SELECT LAST_INSERT_ID(77)",
            "SELECT id, LAST_INSERT_ID() FROM {t} WHERE tid = 2 ORDER BY id",
            true,
        ),
        (
            "DO 0",
            "SELECT id, ROW_COUNT() FROM {t} WHERE tid = 2 ORDER BY id",
            true,
        ),
        (
            "SELECT CAST('x' AS INT)",
            "SELECT id, @@warning_count FROM {t} WHERE tid = 2 ORDER BY id",
            true,
        ),
        ("DO 0", "SELECT id, (id, 1) = (1, 1) FROM {t} ORDER BY id", false),
        (
            "DO 0",
            "SELECT id, (id  +  1), ( id ) FROM {t} ORDER BY id",
            false,
        ),
        (
            "DO 0",
            "SELECT id, x'42', b'01', - 1, date '2020-01-01', true, ( 'a' ) FROM {t} ORDER BY id",
            false,
        ),
    ];
    for binary in [false, true] {
        for (before, q, may_refuse) in reads {
            let mut sl = connect(&s.app_url(&db)).await;
            let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
            for c in [&mut sl, &mut direct] {
                c.query_drop(*before).await.expect(before);
            }
            let want = named_rows(&mut direct, &q.replace("{t}", "ref"), binary).await;
            let got = named_rows(&mut sl, &q.replace("{t}", "pr"), binary).await;
            if !(got == want || (*may_refuse && got.as_ref().is_err_and(|e| e.0 == NOT_SUPPORTED))) {
                wrong.push(format!(
                    "{before}; {q} (binary {binary})\n  sluice {got:?}\n  direct {want:?}"
                ));
            }
        }
    }
    let writes = [
        "UPDATE {t} SET subject = ROWNUM() WHERE tid IN (1, 2)",
        "UPDATE {t} SET subject = RAND(1) WHERE tid IN (1, 2)",
        "UPDATE {t} SET subject = (@c := @c + 1) WHERE tid IN (1, 2)",
        "UPDATE {t} SET subject = ROW_COUNT() WHERE tid IN (1, 2)",
        "INSERT INTO {t} VALUES (201, 1, ROWNUM()), (202, 2, ROWNUM())",
        "INSERT INTO {t} VALUES (203, 1, RAND(2)), (204, 2, RAND(2))",
        "INSERT INTO {t} VALUES (205, 1, @@warning_count), (206, 2, 'x')",
        "DELETE FROM {t} WHERE id = ROWNUM() + 9",
        "UPDATE {t} SET subject = ROWNUM() WHERE tid = 2",
        "INSERT INTO {t} VALUES (207, 1, 'ROWNUM() := @@x rand('), (208, 2, 'y')",
    ];
    let mut sl = connect(&s.app_url(&db)).await;
    let mut direct = connect(&cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db)).await;
    for w in writes {
        for c in [&mut sl, &mut direct] {
            c.query_drop("SET @c = 0").await.expect("SET @c");
        }
        let table = "SELECT id, tid, subject FROM {t} ORDER BY id";
        let before = text_rows(&mut sl, table.replace("{t}", "pr"))
            .await
            .expect("table");
        let want = direct
            .query_drop(w.replace("{t}", "ref"))
            .await
            .map(|_| direct.affected_rows())
            .map_err(code);
        let got = sl
            .query_drop(w.replace("{t}", "pr"))
            .await
            .map(|_| sl.affected_rows())
            .map_err(code);
        let after = text_rows(&mut sl, table.replace("{t}", "pr"))
            .await
            .expect("table");
        if got.as_ref().is_err_and(|e| e.0 == NOT_SUPPORTED) {
            if after != before {
                wrong.push(format!("{w}: refused, yet the table changed"));
            }
            // Keep the reference equal for the next statements.
            direct
                .query_drop("DELETE FROM ref; INSERT INTO ref SELECT * FROM pr_0 UNION ALL SELECT * FROM pr_1 UNION ALL SELECT * FROM pr_2 UNION ALL SELECT * FROM pr_3")
                .await
                .expect("reset ref");
            continue;
        }
        let reference = text_rows(&mut direct, table.replace("{t}", "ref"))
            .await
            .expect("ref");
        if got != want || after != reference {
            wrong.push(format!(
                "{w}\n  sluice {got:?} {after:?}\n  direct {want:?} {reference:?}"
            ));
            direct
                .query_drop("DELETE FROM ref; INSERT INTO ref SELECT * FROM pr_0 UNION ALL SELECT * FROM pr_1 UNION ALL SELECT * FROM pr_2 UNION ALL SELECT * FROM pr_3")
                .await
                .expect("reset ref");
        }
    }
    // The statement's time is one for all its rows (the server reads its clock once per
    // statement); each part used to read its own. Compared: how many distinct values.
    for (c, t) in [(&mut sl, "pr"), (&mut direct, "ref")] {
        c.query_drop(format!(
            "ALTER TABLE {t} ADD COLUMN at TIMESTAMP(6) NULL ON UPDATE CURRENT_TIMESTAMP(6)"
        ))
        .await
        .expect("ALTER");
    }
    for q in [
        "SELECT DISTINCT NOW(6) FROM {t}",
        "UPDATE {t} SET subject = 'now' WHERE tid IN (1, 2, 3)",
        "SELECT DISTINCT at FROM {t} WHERE at IS NOT NULL",
        "INSERT INTO {t} (id, tid, subject, at) VALUES (301, 1, 'a', NOW(6)), (302, 2, 'b', NOW(6))",
        "SELECT DISTINCT at FROM {t} WHERE id > 300",
    ] {
        let want = text_rows(&mut direct, q.replace("{t}", "ref"))
            .await
            .map(|r| r.len());
        let got = text_rows(&mut sl, q.replace("{t}", "pr")).await.map(|r| r.len());
        if got != want {
            wrong.push(format!(
                "{q}: distinct times\n  sluice {got:?}\n  direct {want:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong answer(s):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
