//! The operator's console (`admin.sql_listen`, `admin.users`) and its HTTP
//! mirror (`/v1/`): every command from the `mariadb` CLI, PyMySQL and
//! mysql_async, column types checked, SQL and HTTP answers equal, roles and
//! logins, bad input; PAUSE / RESUME / DRAIN / KILL SESSION effects; and a
//! planned switchover under a write + read load with zero client errors.

mod common;

use std::collections::BTreeSet;
use std::process::Command as Cmd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::{http_get, http_post, metric};
use common::reads::tracked_db;
use mysql_async::prelude::*;
use mysql_async::{Conn, OptsBuilder};

const OPS: (&str, &str) = ("ops", "ops-pw-1");
const WATCH: (&str, &str) = ("watch", "watch-pw-1");
/// The Debian interpreter, which has python3-pymysql.
const PYTHON: &str = "/usr/bin/python3";

fn console_yaml(port: u16, extra_limits: &str) -> String {
    format!(
        "admin:\n  sql_listen: 127.0.0.1:{port}\n  users:\n    - {{ name: {}, password_hash: \"{}\", role: admin }}\n    - {{ name: {}, password_hash: \"{}\", role: monitor }}\nlimits:\n  handshake_timeout: 5s\n{extra_limits}",
        OPS.0,
        native_password_hash(OPS.1),
        WATCH.0,
        native_password_hash(WATCH.1)
    )
}

/// A sluice on `cluster` with the console on a free port: (sluice, console port).
fn start(cluster: &Cluster, extra_limits: &str) -> (Sluice, u16) {
    let port = free_port();
    (
        Sluice::start_for(cluster, &console_yaml(port, extra_limits)),
        port,
    )
}

fn opts(port: u16, (user, pw): (&str, &str)) -> OptsBuilder {
    // Set, so mysql_async asks no @@variables on connect (the console answers no queries).
    OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(pw))
        .prefer_socket(false)
        .max_allowed_packet(Some(16 << 20))
        .wait_timeout(Some(28800))
}

async fn console(port: u16, who: (&str, &str)) -> Conn {
    Conn::new(opts(port, who)).await.expect("console login")
}

fn server_err(e: mysql_async::Error) -> (u16, String) {
    match e {
        mysql_async::Error::Server(s) => (s.code, s.message),
        other => panic!("not a server error: {other}"),
    }
}

/// (column name, column type code) and text rows of one console command.
type Answer = (Vec<(String, u8)>, Vec<Vec<Option<String>>>);

async fn ask(c: &mut Conn, sql: &str) -> Answer {
    let mut r = c.query_iter(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let cols = r
        .columns_ref()
        .iter()
        .map(|c| (c.name_str().into_owned(), c.column_type() as u8))
        .collect();
    let rows: Vec<mysql_async::Row> = r.collect().await.expect("rows");
    let rows = rows
        .into_iter()
        .map(|row| {
            (0..row.len())
                .map(|i| match row.as_ref(i) {
                    Some(mysql_async::Value::NULL) | None => None,
                    Some(mysql_async::Value::Bytes(b)) => Some(String::from_utf8_lossy(b).into_owned()),
                    Some(v) => Some(v.as_sql(true)),
                })
                .collect()
        })
        .collect();
    (cols, rows)
}

/// The answer as the HTTP mirror renders it (integers bare, text quoted).
fn as_json((cols, rows): &Answer) -> String {
    let mut out = String::from("[");
    for (i, r) in rows.iter().enumerate() {
        out.push_str(if i == 0 { "\n  {" } else { ",\n  {" });
        for (j, ((name, ty), v)) in cols.iter().zip(r).enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let val = match v {
                None => "null".to_owned(),
                Some(v) if *ty == 8 => v.clone(),
                Some(v) => format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")),
            };
            out.push_str(&format!("\"{name}\": {val}"));
        }
        out.push('}');
    }
    out.push_str(if rows.is_empty() { "]\n" } else { "\n]\n" });
    out
}

const VIEWS: [(&str, &str); 4] = [
    ("SHOW BACKENDS", "/v1/backends"),
    ("SHOW POOLS", "/v1/pools"),
    ("SHOW SESSIONS", "/v1/sessions"),
    ("SHOW STATE", "/v1/state"),
];

fn expected_columns(sql: &str) -> Vec<(&'static str, u8)> {
    const I: u8 = 8; // LONGLONG
    const T: u8 = 253; // VAR_STRING
    match sql {
        "SHOW BACKENDS" => vec![
            ("group", T),
            ("role", T),
            ("addr", T),
            ("state", T),
            ("in_rotation", I),
            ("healthy", I),
            ("fresh", I),
            ("lag_ms", I),
            ("read_only", I),
            ("server_id", I),
            ("reason", T),
        ],
        "SHOW POOLS" => vec![
            ("group", T),
            ("backend", T),
            ("addr", T),
            ("open", I),
            ("in_use", I),
            ("idle", I),
            ("waits", I),
            ("max", I),
            ("drained", I),
        ],
        "SHOW SESSIONS" => vec![
            ("id", I),
            ("user", T),
            ("client", T),
            ("db", T),
            ("command", T),
            ("time_s", I),
            ("state", T),
            ("in_tx", I),
            ("backend", T),
            ("info", T),
        ],
        _ => vec![
            ("group", T),
            ("state", T),
            ("paused_s", I),
            ("waiting", I),
            ("drained_backends", I),
        ],
    }
}

fn mariadb_cli(port: u16, (user, pw): (&str, &str), args: &[&str]) -> (bool, String, String) {
    let out = Cmd::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            &format!("-u{user}"),
            &format!("-p{pw}"),
        ])
        .args(["--ssl=0", "--connect-timeout=5"])
        .args(args)
        .output()
        .expect("run the mariadb CLI");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every view from mysql_async (types), the `mariadb` CLI (types as it
/// prints them) and PyMySQL (type codes), and the same rows over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_view_from_three_clients_and_http_agrees() {
    let cluster = shared_cluster();
    let (s, port) = start(cluster, "");
    let mut c = console(port, OPS).await;
    for (sql, path) in VIEWS {
        // SQL and HTTP read at slightly different moments (lag, times):
        // equal within a few tries.
        let mut last = (String::new(), String::new());
        let mut equal = false;
        for _ in 0..20 {
            let answer = ask(&mut c, sql).await;
            let got: Vec<(&str, u8)> = answer.0.iter().map(|(n, t)| (n.as_str(), *t)).collect();
            assert_eq!(got, expected_columns(sql), "{sql}: column names and types");
            let (status, body) = http_get(s.admin_port, path).expect("GET");
            assert_eq!(status, 200, "{path}: {body}");
            last = (as_json(&answer), body);
            if last.0 == last.1 {
                equal = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            equal,
            "{sql} and GET {path} differ:\nSQL:  {}\nHTTP: {}",
            last.0, last.1
        );
    }
    let (_, backends) = ask(&mut c, "show backends;").await;
    assert_eq!(backends.len(), 1 + cluster.replicas.len());
    assert_eq!(backends[0][1].as_deref(), Some("master"));
    assert_eq!(backends[0][2].as_deref(), Some(cluster.master.addr().as_str()));
    // read_only, server_id, reason: from the topology probes.
    let master_id = cluster.master.sql("SELECT @@server_id");
    assert_eq!(backends[0][8].as_deref(), Some("0"), "{backends:?}");
    assert_eq!(backends[0][9].as_deref(), Some(master_id.trim()), "{backends:?}");
    assert!(
        backends[1..].iter().all(|r| r[10].is_some()),
        "a reason per replica: {backends:?}"
    );
    let (_, sessions) = ask(&mut c, "SHOW SESSIONS").await;
    assert!(
        sessions.is_empty(),
        "the console's own connection is no client session"
    );
    // Without the token, /v1/ is refused even for GET (it lists sessions).
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", s.admin_port)).expect("connect");
    use std::io::{Read, Write};
    write!(raw, "GET /v1/backends HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").expect("write");
    let mut text = String::new();
    raw.read_to_string(&mut text).expect("read");
    assert!(
        text.starts_with("HTTP/1.0 401") || text.starts_with("HTTP/1.1 401"),
        "{text}"
    );

    // The mariadb CLI: what it sends on connect is answered, types as it prints them.
    let (ok, out, err) = mariadb_cli(port, OPS, &["-N", "-e", "select @@version_comment limit 1"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "sluice operator console");
    for (sql, _) in VIEWS {
        // Types are printed with the table format only.
        let (ok, out, err) = mariadb_cli(port, OPS, &["-t", "--column-type-info", "-e", sql]);
        assert!(ok, "{sql}: {err}");
        for (name, ty) in expected_columns(sql) {
            let want = if ty == 8 { "LONGLONG" } else { "VAR_STRING" };
            let block = out
                .split("Field ")
                .find(|b| {
                    b.lines()
                        .next()
                        .is_some_and(|l| l.trim_end().ends_with(&format!("`{name}`")))
                })
                .unwrap_or_else(|| panic!("{sql}: no column {name} in\n{out}"));
            let line = block.lines().find(|l| l.starts_with("Type:")).unwrap_or_default();
            assert_eq!(
                line.split_whitespace().nth(1),
                Some(want),
                "{sql} {name}: {block}"
            );
        }
    }
    let (ok, _, err) = mariadb_cli(port, OPS, &["-e", "SET NAMES utf8mb4; SHOW STATE"]);
    assert!(ok, "{err}");
    let (ok, _, err) = mariadb_cli(port, OPS, &["-e", "FROBNICATE"]);
    assert!(
        !ok && err.contains("1064") && err.contains("unknown command `FROBNICATE`"),
        "{err}"
    );

    // PyMySQL: type codes of each view's columns, the same as above.
    let script = r#"
import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user=sys.argv[2], password=sys.argv[3])
cur = c.cursor()
for sql in sys.argv[4:]:
    cur.execute(sql)
    print(sql + "|" + ",".join("%s:%d" % (d[0], d[1]) for d in cur.description) + "|%d" % len(cur.fetchall()))
try:
    cur.execute("PAUSE NOW")
except pymysql.err.MySQLError as e:
    print("error|%d|%s" % (e.args[0], e.args[1]))
"#;
    let mut cmd = Cmd::new(PYTHON);
    cmd.args(["-c", script, &port.to_string(), OPS.0, OPS.1]);
    cmd.args(VIEWS.iter().map(|(sql, _)| *sql));
    let out = cmd.output().expect("run PyMySQL");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (sql, _) in VIEWS {
        let want: Vec<String> = expected_columns(sql)
            .iter()
            .map(|(n, t)| format!("{n}:{t}"))
            .collect();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{sql}|")))
            .unwrap_or_else(|| panic!("{sql}: not in PyMySQL's output\n{text}"));
        assert_eq!(line.split('|').nth(1), Some(want.join(",").as_str()), "{line}");
    }
    assert!(
        text.contains("error|1064|sluice console: unexpected `NOW`"),
        "{text}"
    );
    let series = "sluice_admin_commands_total{command=\"show_backends\",result=\"ok\"}";
    assert!(metric(s.admin_port, series).is_some_and(|v| v >= 2.0), "{series}");
}

/// No default user: without `admin.users` every login gets 1045; a wrong
/// password too; server accounts and `users:` never log in here; `monitor`
/// may SHOW but gets 1227 for every action; bad input gets a sentence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_roles_and_bad_input() {
    let cluster = shared_cluster();
    let bare_port = free_port();
    let bare = Sluice::start_for(cluster, &format!("admin:\n  sql_listen: 127.0.0.1:{bare_port}\n"));
    for who in [
        OPS,
        (APP_USER, APP_PASSWORD),
        (SLUICE_USER, SLUICE_PASSWORD),
        ("root", ""),
    ] {
        let e = Conn::new(opts(bare_port, who)).await.err().map(server_err);
        assert_eq!(e.map(|e| e.0), Some(1045), "{who:?} without admin.users");
    }
    drop(bare);

    let (s, port) = start(cluster, "");
    for who in [
        (OPS.0, "wrong"),
        (APP_USER, APP_PASSWORD),
        (SLUICE_USER, SLUICE_PASSWORD),
    ] {
        let e = Conn::new(opts(port, who)).await.err().map(server_err);
        assert_eq!(e.map(|e| e.0), Some(1045), "{who:?}");
    }
    let mut m = console(port, WATCH).await;
    assert_eq!(ask(&mut m, "SHOW STATE").await.1.len(), 1);
    for action in [
        "PAUSE",
        "PAUSE WRITES WAIT 1",
        "RESUME",
        &format!("DRAIN BACKEND '{}'", cluster.replicas[0].addr()),
        &format!("ENABLE BACKEND '{}'", cluster.replicas[0].addr()),
        &format!("MAINTENANCE BACKEND '{}' AFTER 5", cluster.replicas[0].addr()),
        "KILL SESSION 1",
        "RELOAD",
    ] {
        let (code, msg) = server_err(m.query_drop(action).await.expect_err(action));
        assert_eq!(code, 1227, "{action}: {msg}");
        assert!(msg.contains("role monitor, which may only run SHOW"), "{msg}");
    }
    let mut a = console(port, OPS).await;
    for (bad, says) in [
        ("SHOW TABLES", (1064, "unknown SHOW")),
        ("SELECT * FROM t", (1064, "answers no queries")),
        ("PAUSE GROUP nosuch", (1210, "no group `nosuch`")),
        (
            "DRAIN BACKEND '127.0.0.1:1'",
            (1210, "no backend at '127.0.0.1:1'"),
        ),
        ("KILL SESSION 4000000000", (1094, "Unknown thread id")),
        ("DRAIN BACKEND 'x", (1064, "unterminated")),
    ] {
        let (code, msg) = server_err(a.query_drop(bad).await.expect_err(bad));
        assert_eq!(code, says.0, "{bad}: {msg}");
        assert!(msg.contains(says.1), "{bad}: {msg}");
    }
    // 300 random statements from the console's own words: each gets an
    // answer (OK, rows or an error with a code), the connection stays.
    let words = [
        "SHOW",
        "PAUSE",
        "WRITES",
        "GROUP",
        "WAIT",
        "RESUME",
        "DRAIN",
        "BACKEND",
        "ENABLE",
        "KILL",
        "SESSION",
        "'127.0.0.1:1'",
        "'",
        "\"",
        ";",
        "-1",
        "1e9",
        "0.01",
        "main",
        "STATE",
        "SELECT",
        "SET",
        "NAMES",
        "\\",
        "MAINTENANCE",
        "AFTER",
        "RELOAD",
        "x",
    ];
    let mut seed: u64 = 43;
    for _ in 0..300 {
        let mut text = String::new();
        for _ in 0..(seed % 6) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push_str(words[(seed >> 33) as usize % words.len()]);
            text.push(' ');
        }
        seed = seed.wrapping_add(7);
        // Skip what would really act (a random PAUSE would stall the next tests' waits).
        if text.starts_with("PAUSE") || text.starts_with("RELOAD") {
            continue;
        }
        match a.query_drop(&text).await {
            Ok(()) | Err(mysql_async::Error::Server(_)) => {}
            Err(e) => panic!("{text:?}: {e}"),
        }
    }
    a.query_drop("RESUME").await.expect("resume");
    // Nothing was paused or drained by the refused commands.
    let (_, state) = ask(&mut a, "SHOW STATE").await;
    assert_eq!(state[0][1].as_deref(), Some("running"));
    // Garbage packets end the connection, never the console.
    for junk in [&b"\x05\x00\x00\x00\x03\xff\xfe"[..], &[0xff; 64][..], b""] {
        let mut raw = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        use std::io::Write;
        let _ = raw.write_all(junk);
    }
    assert_eq!(
        ask(&mut a, "SHOW STATE").await.1.len(),
        1,
        "the console still answers"
    );
    let denied = "sluice_admin_commands_total{command=\"pause\",result=\"denied\"}";
    assert_eq!(metric(s.admin_port, denied), Some(2.0));
    assert!(s.log().contains("admin command"), "actions are logged");
}

/// A new database with an empty `t (id INT PRIMARY KEY)`, without triggers.
fn table_t(cluster: &Cluster, prefix: &str) -> String {
    let db = unique_name(prefix);
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY)"
    ));
    db
}

async fn session_id(c: &mut Conn) -> u32 {
    c.query_first("SELECT CONNECTION_ID()")
        .await
        .expect("id")
        .expect("row")
}

/// A session inside a transaction that inserted `id` into `t`, and its id.
async fn in_transaction(s: &Sluice, db: &str, id: i64) -> (Conn, u32) {
    let mut c = app(s, db).await;
    c.query_drop("BEGIN").await.expect("begin");
    c.query_drop(format!("INSERT INTO t VALUES ({id})"))
        .await
        .expect("insert");
    let sid = session_id(&mut c).await;
    (c, sid)
}

async fn app(s: &Sluice, db: &str) -> Conn {
    Conn::from_url(s.app_url(db)).await.expect("app connect")
}

/// PAUSE waits for an open transaction and, past WAIT, answers 1205 naming
/// the session; a statement held past `limits.pause_timeout` gets 1205; KILL
/// SESSION ends the holder; RESUME releases what waits. The same over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_waits_for_transactions_and_times_out() {
    let cluster = shared_cluster();
    let db = table_t(cluster, "pause");
    let (s, port) = start(cluster, "  pause_timeout: 1s\n");
    let mut a = console(port, OPS).await;
    // Connected before the pause: a login checks its database on the master,
    // so it would wait behind the pause too.
    let mut late = app(&s, &db).await;

    let (mut holder, holder_id) = in_transaction(&s, &db, 1).await;

    let t0 = Instant::now();
    let (code, msg) = server_err(a.query_drop("PAUSE WAIT 0.5").await.expect_err("still held"));
    assert_eq!(code, 1205, "{msg}");
    assert!(msg.contains(&format!("{holder_id} (in a transaction)")), "{msg}");
    assert!(t0.elapsed() < Duration::from_secs(3));
    let (_, state) = ask(&mut a, "SHOW STATE").await;
    assert_eq!(
        state[0][1].as_deref(),
        Some("paused"),
        "PAUSE stays in force after 1205"
    );

    // The transaction goes on under the pause; a new statement waits, then 1205.
    holder
        .query_drop("INSERT INTO t VALUES (2)")
        .await
        .expect("in a transaction: not held");
    let t0 = Instant::now();
    let (code, msg) = server_err(
        late.query_drop("INSERT INTO t VALUES (3)")
            .await
            .expect_err("held"),
    );
    let waited = t0.elapsed();
    assert_eq!(code, 1205, "{msg}");
    assert!(msg.contains("limits.pause_timeout"), "{msg}");
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(3),
        "{waited:?}"
    );

    // KILL SESSION ends the holder (its transaction rolls back): PAUSE is then done.
    a.query_drop(format!("KILL SESSION {holder_id}"))
        .await
        .expect("kill");
    a.query_drop("PAUSE WAIT 5")
        .await
        .expect("nothing in flight any more");
    assert!(
        holder.query_drop("SELECT 1").await.is_err(),
        "the killed session is gone"
    );

    // A held statement is released by RESUME (over HTTP this time).
    let waiter = tokio::spawn(async move {
        let t0 = Instant::now();
        let r = late.query_drop("INSERT INTO t VALUES (4)").await;
        (r.map_err(|e| e.to_string()), t0.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, body) = http_get(s.admin_port, "/v1/sessions").expect("GET");
    assert!(status == 200 && body.contains("\"state\": \"paused\""), "{body}");
    let (status, body) = http_post(s.admin_port, "/v1/resume").expect("POST");
    assert_eq!(status, 200, "{body}");
    let (r, took) = waiter.await.expect("task");
    assert!(r.is_ok(), "{r:?}");
    assert!(took >= Duration::from_millis(250), "{took:?}");
    let rows = cluster
        .master
        .sql(&format!("SELECT GROUP_CONCAT(id ORDER BY id) FROM {db}.t"));
    assert_eq!(
        rows.trim(),
        "4",
        "the killed transaction rolled back, the timed-out insert never ran"
    );

    // HTTP: pause with a wait, refused while a transaction is open (409).
    let (mut holder, _) = in_transaction(&s, &db, 5).await;
    let (status, body) = http_post(s.admin_port, "/v1/pause?writes=1&wait=300ms").expect("POST");
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("\"code\": 1205") && body.contains("in a transaction"),
        "{body}"
    );
    holder
        .query_drop("COMMIT")
        .await
        .expect("the transaction ends under the pause");
    let (status, body) = http_post(s.admin_port, "/v1/pause?writes=1&wait=2s").expect("POST");
    assert_eq!(status, 200, "{body}");
    let (status, body) = http_post(s.admin_port, "/v1/resume").expect("POST");
    assert_eq!(status, 200, "{body}");
}

/// DRAIN BACKEND takes a replica out of rotation and closes its
/// connections; reads go on (elsewhere); ENABLE brings it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_and_enable_a_replica() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "drain").await;
    let (s, port) = start(cluster, "");
    let mut a = console(port, OPS).await;
    let r0 = cluster.replicas[0].addr();
    let mut readers = Vec::new();
    for _ in 0..4 {
        readers.push(app(&s, &db).await);
    }
    for c in readers.iter_mut() {
        c.query_drop("SELECT COUNT(*) FROM t").await.expect("read");
    }
    a.query_drop(format!("DRAIN BACKEND '{r0}' WAIT 5"))
        .await
        .expect("drain");
    let row = |rows: &Vec<Vec<Option<String>>>, addr: &str| {
        rows.iter()
            .find(|r| r[2].as_deref() == Some(addr))
            .cloned()
            .expect("row")
    };
    let (_, backends) = ask(&mut a, "SHOW BACKENDS").await;
    let b = row(&backends, &r0);
    assert_eq!(
        (b[3].as_deref(), b[4].as_deref()),
        (Some("drained"), Some("0")),
        "{b:?}"
    );
    for _ in 0..20 {
        for c in readers.iter_mut() {
            c.query_drop("SELECT COUNT(*) FROM t").await.expect("reads go on");
        }
    }
    let (_, pools) = ask(&mut a, "SHOW POOLS").await;
    let p = row(&pools, &r0);
    assert_eq!(
        (p[3].as_deref(), p[8].as_deref()),
        (Some("0"), Some("1")),
        "no connection to it: {p:?}"
    );
    let (status, body) = http_post(s.admin_port, &format!("/v1/backends/{r0}/enable")).expect("POST");
    assert_eq!(status, 200, "{body}");
    let (_, backends) = ask(&mut a, "SHOW BACKENDS").await;
    assert_eq!(row(&backends, &r0)[3].as_deref(), Some("online"));
    let ok = "sluice_admin_commands_total{command=\"enable\",result=\"ok\"}";
    assert_eq!(metric(s.admin_port, ok), Some(1.0));
}

/// A planned switchover under load: PAUSE WRITES, promote the replica by
/// hand, point sluice at it (a reload of the master address), RESUME. No
/// client error, no write reaches the old master after `read_only`, every
/// acknowledged row is on the new master, reads went on during the pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_switchover_under_load_has_no_client_errors() {
    switchover(Repoint::Reload).await;
}

/// The same, with sluice told by the console's `MASTER 'addr'` (what
/// `POST /v1/master` does too; tests/topology.rs uses that) instead of a
/// reload; `SHOW TOPOLOGY` then names the new master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planned_switchover_told_by_the_console_has_no_client_errors() {
    switchover(Repoint::Master).await;
}

/// How the test points sluice at the promoted replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repoint {
    Reload,
    Master,
}

async fn switchover(how: Repoint) {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "switch").await;
    let (s, port) = start(&cluster, "  pause_timeout: 20s\n");
    let mut a = console(port, OPS).await;
    let (old, new) = (&cluster.master, &cluster.replicas[0]);

    let stop = Arc::new(AtomicBool::new(false));
    let paused = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::<i64>::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let reads_in_pause = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(1));
    let mut tasks = Vec::new();
    for w in 0..2 {
        let (stop, acked, errors, next) = (stop.clone(), acked.clone(), errors.clone(), next.clone());
        let mut c = app(&s, &db).await;
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let id = next.fetch_add(1, Ordering::Relaxed) as i64;
                let r = if (id + w) % 2 == 0 {
                    c.query_drop(format!("INSERT INTO t VALUES ({id}, {w})")).await
                } else {
                    async {
                        c.query_drop("BEGIN").await?;
                        c.query_drop(format!("INSERT INTO t VALUES ({id}, {w})")).await?;
                        c.query_drop("COMMIT").await
                    }
                    .await
                };
                match r {
                    Ok(()) => acked.lock().expect("acked").push(id),
                    Err(e) => errors.lock().expect("errors").push(format!("write {id}: {e}")),
                }
            }
        }));
    }
    {
        let (stop, errors) = (stop.clone(), errors.clone());
        let mut c = app(&s, &db).await;
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Err(e) = c.query_first::<i64, _>("SELECT COUNT(*) FROM t").await {
                    errors.lock().expect("errors").push(format!("read: {e}"));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    // A reader that starts once the pause is in force (the load's own reader
    // may be waiting behind it: its read went to the master while the replica
    // was behind the writes).
    let new_id: i64 = new.sql("SELECT @@server_id").trim().parse().expect("server id");
    {
        let (stop, errors, paused, reads) = (
            stop.clone(),
            errors.clone(),
            paused.clone(),
            reads_in_pause.clone(),
        );
        let mut c = app(&s, &db).await;
        tasks.push(tokio::spawn(async move {
            while !paused.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // The replica's next probes see it caught up with the last writes:
            // until then a read goes to the master, and waits there.
            tokio::time::sleep(Duration::from_millis(200)).await;
            while paused.load(Ordering::Relaxed) {
                let sql = "SELECT @@server_id + 0 * COUNT(*) FROM t";
                match c.query_first::<i64, _>(sql).await {
                    Ok(Some(sid)) if sid == new_id && paused.load(Ordering::Relaxed) => {
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(e) => errors.lock().expect("errors").push(format!("read in pause: {e}")),
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let t_pause = Instant::now();
    a.query_drop("PAUSE WRITES WAIT 5").await.expect("PAUSE WRITES");
    paused.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    old.sql("SET GLOBAL read_only=1");
    let fenced = old.gtid_binlog_pos();
    new.wait_for_gtid(&fenced, Duration::from_secs(10));
    new.sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0");
    // Point sluice at the new master.
    if how == Repoint::Reload {
        let text = std::fs::read_to_string(s.config_path()).expect("config");
        let (head, rest) = text.split_at(text.find("    replicas:\n").expect("replicas block"));
        let tail: String = rest
            .lines()
            .skip(1)
            .skip_while(|l| l.starts_with("      - "))
            .map(|l| format!("{l}\n"))
            .collect();
        let moved = format!("{head}    replicas: []\n{tail}").replace(&old.addr(), &new.addr());
        std::fs::write(s.config_path(), moved).expect("rewrite config");
        a.query_drop("RELOAD").await.expect("RELOAD");
    } else {
        a.query_drop(format!("MASTER '{}'", new.addr()))
            .await
            .unwrap_or_else(|e| panic!("MASTER: {e}\n{}", s.log()));
        // One row per server, each with its group's fields.
        let topology: Vec<mysql_async::Row> = a.query("SHOW TOPOLOGY").await.expect("SHOW TOPOLOGY");
        assert_eq!(topology.len(), 2, "{topology:?}");
        for row in &topology {
            assert_eq!(
                row.get::<Option<String>, _>("master").flatten(),
                Some(new.addr()),
                "{topology:?}"
            );
            assert_eq!(row.get::<i64, _>("master_changes"), Some(1), "{topology:?}");
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    paused.store(false, Ordering::Relaxed);
    a.query_drop("RESUME").await.expect("RESUME");
    let pause_took = t_pause.elapsed();
    let acked_at_resume = acked.lock().expect("acked").len();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("load task");
    }

    let errors = errors.lock().expect("errors").clone();
    assert!(errors.is_empty(), "client errors: {errors:?}");
    assert_eq!(
        old.gtid_binlog_pos(),
        fenced,
        "a write reached the old master after read_only"
    );
    let acked: BTreeSet<i64> = acked.lock().expect("acked").iter().copied().collect();
    assert!(acked.len() > acked_at_resume, "writes went on after RESUME");
    let on_new: BTreeSet<i64> = new
        .sql_in(
            &db,
            "SET SESSION group_concat_max_len = 1 << 24; SELECT GROUP_CONCAT(id) FROM t",
        )
        .trim()
        .split(',')
        .filter_map(|v| v.parse().ok())
        .collect();
    assert_eq!(
        acked, on_new,
        "every acknowledged write, and only those, is on the new master"
    );
    let reads = reads_in_pause.load(Ordering::Relaxed);
    eprintln!(
        "switchover ({how:?}): pause {pause_took:?}, {} writes acknowledged, {reads} reads during the pause, 0 errors",
        acked.len()
    );
    assert!(reads > 0, "reads on the replica go on under PAUSE WRITES");
}

/// `method path` on the admin endpoint with the test's admin token.
fn http(method: &str, port: u16, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n",
        common::http::TEST_ADMIN_TOKEN
    )
    .expect("write");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        text.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default(),
    )
}

/// MAINTENANCE of the master pauses its writes and, after AFTER, ends the
/// sessions still holding a master connection; ENABLE undoes it. A session
/// is also ended over HTTP (`DELETE /v1/sessions/{id}`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_ends_who_holds_on_and_http_kills_a_session() {
    let cluster = shared_cluster();
    let db = table_t(cluster, "maint");
    let (s, port) = start(cluster, "");
    let mut a = console(port, OPS).await;
    let master = cluster.master.addr();
    let (mut holder, _) = in_transaction(&s, &db, 1).await;
    let mut other = app(&s, &db).await;
    let other_id = session_id(&mut other).await;

    let t0 = Instant::now();
    a.query_drop(format!("MAINTENANCE BACKEND '{master}' AFTER 0.5"))
        .await
        .expect("maintenance");
    assert!(
        t0.elapsed() < Duration::from_millis(400),
        "MAINTENANCE answers at once"
    );
    let (_, backends) = ask(&mut a, "SHOW BACKENDS").await;
    assert_eq!(backends[0][3].as_deref(), Some("maintenance"), "{backends:?}");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(holder.query_drop("COMMIT").await.is_err(), "the holder was ended");
    assert_eq!(
        cluster.master.sql(&format!("SELECT COUNT(*) FROM {db}.t")).trim(),
        "0",
        "rolled back"
    );

    let (status, body) = http("POST", s.admin_port, &format!("/v1/backends/{master}/enable"));
    assert_eq!(status, 200, "{body}");
    let (_, backends) = ask(&mut a, "SHOW BACKENDS").await;
    assert_eq!(backends[0][3].as_deref(), Some("online"));
    other
        .query_drop("INSERT INTO t VALUES (2)")
        .await
        .expect("writes go on after ENABLE");

    let (status, body) = http("DELETE", s.admin_port, &format!("/v1/sessions/{other_id}"));
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(other.query_drop("SELECT 1").await.is_err(), "ended over HTTP");
    let (status, body) = http("DELETE", s.admin_port, &format!("/v1/sessions/{other_id}"));
    assert!(
        status == 404 && body.contains("\"code\": 1094"),
        "{status} {body}"
    );
}

/// `SHOW TOPOLOGY` is `GET /v1/topology` as rows: one per server of every
/// group, with every field the JSON has (a group's and its server's), and
/// the same values. The two are read one after the other, so a probe round
/// in between (GTID positions of a shared cluster move) is retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_topology_has_the_fields_and_servers_of_get_v1_topology() {
    let cluster = shared_cluster();
    let (s, port) = start(cluster, "");
    let mut c = console(port, OPS).await;
    let mut last = String::new();
    for _ in 0..40 {
        let (_, before) = http_get(s.admin_port, "/v1/topology").expect("GET /v1/topology");
        let (cols, rows) = ask(&mut c, "SHOW TOPOLOGY").await;
        let (_, after) = http_get(s.admin_port, "/v1/topology").expect("GET /v1/topology");
        let probed = !before.contains("not_probed_yet");
        if before != after || !probed {
            last = before;
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let groups: serde_json::Value = serde_json::from_str(&before).expect("JSON");
        let groups = groups.as_array().expect("a list of groups");
        // Same fields: a group's (but its server list) and a server's.
        let mut fields: BTreeSet<String> = BTreeSet::new();
        for g in groups {
            let g = g.as_object().expect("group object");
            fields.extend(g.keys().filter(|k| *k != "servers").cloned());
            for sv in g["servers"].as_array().expect("servers") {
                fields.extend(sv.as_object().expect("server object").keys().cloned());
            }
        }
        let names: BTreeSet<String> = cols.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names, fields, "SHOW TOPOLOGY columns vs GET /v1/topology fields");
        // Same servers, same values.
        let mut expected = Vec::new();
        for g in groups {
            for sv in g["servers"].as_array().expect("servers") {
                let row: Vec<Option<String>> = cols
                    .iter()
                    .map(|(n, _)| {
                        let v = sv.get(n).unwrap_or(&g[n]);
                        match v {
                            serde_json::Value::Null => None,
                            serde_json::Value::Bool(b) => Some(u8::from(*b).to_string()),
                            serde_json::Value::Number(n) => Some(n.to_string()),
                            serde_json::Value::String(s) => Some(s.clone()),
                            serde_json::Value::Array(a) if n == "writable" => Some(
                                a.iter()
                                    .map(|x| x.as_str().expect("address").to_owned())
                                    .collect::<Vec<_>>()
                                    .join(","),
                            ),
                            other => Some(other.to_string()),
                        }
                    })
                    .collect();
                expected.push(row);
            }
        }
        // `replication` is JSON text in SQL: compare it parsed.
        let at = cols
            .iter()
            .position(|(n, _)| n == "replication")
            .expect("replication");
        let parsed = |rows: &[Vec<Option<String>>]| -> Vec<Vec<Option<String>>> {
            rows.iter()
                .map(|r| {
                    let mut r = r.clone();
                    r[at] = r[at].as_deref().map(|t| {
                        serde_json::from_str::<serde_json::Value>(t)
                            .expect("replication as JSON")
                            .to_string()
                    });
                    r
                })
                .collect()
        };
        assert!(!rows.is_empty());
        assert_eq!(parsed(&rows), parsed(&expected), "{before}");
        assert_eq!(
            rows.len(),
            3,
            "the shared cluster's master and two replicas: {rows:?}"
        );
        return;
    }
    panic!(
        "no two equal reads of /v1/topology around SHOW TOPOLOGY: {last}\n{}",
        s.log()
    );
}

/// TLS on the console: with `tls: { require: true }` a plaintext login is
/// refused as at the client port (the same 1045), and logins over TLS from
/// mysql_async and the `mariadb` CLI are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_takes_tls_logins_and_tls_require_refuses_plaintext() {
    let pem = common::tls::self_signed();
    let cluster = shared_cluster();
    let port = free_port();
    let s = Sluice::start_for(
        cluster,
        &format!(
            "{}tls:\n  cert: {}\n  key: {}\n  require: true\n",
            console_yaml(port, ""),
            pem.cert.display(),
            pem.key.display()
        ),
    );
    let plain = Conn::new(opts(port, OPS)).await.map(|_| ()).map_err(server_err);
    let (code, message) = plain.expect_err("a plaintext console login under tls.require");
    assert_eq!(code, 1045, "{message}");
    let mut c = Conn::new(opts(port, OPS).ssl_opts(Some(common::tls::any_cert())))
        .await
        .unwrap_or_else(|e| panic!("console login over TLS: {e}\n{}", s.log()));
    let (_, rows) = ask(&mut c, "SHOW STATE").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    // The CLI: over TLS served, without refused.
    let cli = |ssl: &str| {
        let out = Cmd::new("mariadb")
            .args(["-h127.0.0.1", &format!("-P{port}"), &format!("-u{}", OPS.0)])
            .args([
                &format!("-p{}", OPS.1),
                ssl,
                "--connect-timeout=5",
                "-e",
                "SHOW STATE",
            ])
            .output()
            .expect("run the mariadb CLI");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    };
    let (ok, stdout, stderr) = cli("--ssl");
    assert!(
        ok && stdout.contains("running"),
        "mariadb --ssl: {stdout}{stderr}"
    );
    let (ok, _, stderr) = cli("--ssl=0");
    assert!(!ok && stderr.contains("1045"), "{stderr}");
}
