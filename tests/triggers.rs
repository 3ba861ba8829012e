//! `sluice::freshness::triggers` and `sluice triggers ...` against a real MariaDB (the
//! shared test cluster: every test uses its own schema and its own counter schema, so
//! tests never see each other's triggers or counter rows).
//!
//! Proved here: install is idempotent and coexists with user triggers (which still
//! fire); INSERT/UPDATE/DELETE bump exactly the row `(db.table, CONNECTION_ID() % slots)`
//! and the bumps replicate; odd names (quotes, backslashes, backticks, non-ASCII, 64
//! characters) work; changing the slot count replaces the triggers; a table created
//! after install is reported untracked; uninstall removes only sluice's triggers; the
//! generated script runs as is in the `mariadb` client; the CLI subcommands work.

mod common;

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};

use common::cluster::{shared_cluster, unique_name, Server, SLUICE_PASSWORD, SLUICE_USER};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts};
use sluice::freshness::triggers::{self, Event, TriggerError, TriggerState};

const WEIRD: &str = "o'r\\d`x";
const ACCENTED: &str = "tëst";

/// A connection to `server` over TCP (see tests/protocol.rs for why not the socket).
async fn connect(server: &Server) -> Conn {
    let url = server.sluice_url("");
    let opts = Opts::from_url(&url).expect("url");
    Conn::new(opts).await.expect("connect")
}

fn ident(name: &str) -> String {
    triggers::quote_ident(name)
}

fn qualified(db: &str, table: &str) -> String {
    format!("{}.{}", ident(db), ident(table))
}

/// The counter values of `key` by slot, read on `server`: the sum of its
/// rows in the three counter tables (one per event).
async fn counters(conn: &mut Conn, ctr: &str, key: &str) -> Vec<(u16, u64)> {
    let parts: Vec<String> = ["counters", "counters_update", "counters_delete"]
        .iter()
        .map(|t| format!("SELECT slot, n FROM {} WHERE tbl = ?", qualified(ctr, t)))
        .collect();
    conn.exec(
        format!(
            "SELECT slot, CAST(SUM(n) AS UNSIGNED) FROM ({}) AS r GROUP BY slot ORDER BY slot",
            parts.join(" UNION ALL ")
        ),
        (key, key, key),
    )
    .await
    .expect("read counters")
}

async fn trigger_names(conn: &mut Conn, db: &str) -> HashSet<String> {
    let rows: Vec<(String, String)> = conn
        .exec(
            "SELECT TRIGGER_SCHEMA, TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?",
            (db,),
        )
        .await
        .expect("read triggers");
    rows.into_iter()
        .filter(|(s, _)| s == db)
        .map(|(_, n)| n)
        .collect()
}

async fn drop_schemas(conn: &mut Conn, schemas: &[&str]) {
    for s in schemas {
        conn.query_drop(format!("DROP DATABASE IF EXISTS {}", ident(s)))
            .await
            .expect("drop schema");
    }
}

#[tokio::test]
async fn install_counts_writes_coexists_and_uninstalls() {
    let cluster = shared_cluster();
    let mut conn = connect(&cluster.master).await;
    let db = unique_name("trg");
    let ctr = unique_name("ctr");
    let long = "l".repeat(64);
    let tables = ["audit", "orders", "items", WEIRD, ACCENTED, long.as_str()];
    conn.query_drop(format!("CREATE DATABASE {}", ident(&db)))
        .await
        .expect("create db");
    for sql in [
        format!(
            "CREATE TABLE {} (id INT AUTO_INCREMENT PRIMARY KEY, order_id INT)",
            qualified(&db, "audit")
        ),
        format!(
            "CREATE TABLE {} (id INT PRIMARY KEY, v INT)",
            qualified(&db, "orders")
        ),
        format!(
            "CREATE TABLE {} (id INT PRIMARY KEY, order_id INT, \
             FOREIGN KEY (order_id) REFERENCES {} (id) ON DELETE CASCADE) ENGINE=InnoDB",
            qualified(&db, "items"),
            qualified(&db, "orders")
        ),
        format!("CREATE TABLE {} (id INT PRIMARY KEY)", qualified(&db, WEIRD)),
        format!("CREATE TABLE {} (id INT PRIMARY KEY)", qualified(&db, ACCENTED)),
        format!("CREATE TABLE {} (id INT PRIMARY KEY)", qualified(&db, &long)),
        format!(
            "CREATE VIEW {} AS SELECT * FROM {}",
            qualified(&db, "v"),
            qualified(&db, "orders")
        ),
        // A user trigger on the same event as a sluice trigger.
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {} FOR EACH ROW INSERT INTO {} (order_id) VALUES (NEW.id)",
            qualified(&db, "audit_orders"),
            qualified(&db, "orders"),
            qualified(&db, "audit")
        ),
    ] {
        conn.query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    // Install, twice: the second run changes nothing.
    let first = triggers::install(&mut conn, &ctr, &db, 4).await.expect("install");
    assert_eq!(first.tables, tables.len(), "the view is not a base table");
    assert_eq!(first.created.len(), 3 * tables.len(), "{first}");
    // 4 slots of each table in each event's counter table, and of `*`.
    assert_eq!(first.rows_inserted, 4 * (3 * tables.len() as u64 + 1), "{first}");
    let second = triggers::install(&mut conn, &ctr, &db, 4)
        .await
        .expect("second install");
    assert!(
        second.created.is_empty() && second.replaced.is_empty() && second.dropped.is_empty(),
        "{second}"
    );
    assert_eq!(second.unchanged, 3 * tables.len());
    assert_eq!(second.rows_inserted, 0);
    let long_name = triggers::trigger_name(Event::Insert, &long);
    assert_eq!(long_name.chars().count(), 64);
    assert!(trigger_names(&mut conn, &db).await.contains(&long_name));

    // Writes on one connection bump its slot only: 2 inserts, 2 updates, 1 delete.
    let mut writer = connect(&cluster.master).await;
    let id: u64 = writer
        .query_first("SELECT CONNECTION_ID()")
        .await
        .expect("connection id")
        .expect("a row");
    let slot = (id % 4) as u16;
    for sql in [
        format!("INSERT INTO {} VALUES (1, 1), (2, 2)", qualified(&db, "orders")),
        format!("UPDATE {} SET v = v + 10", qualified(&db, "orders")),
        format!("DELETE FROM {} WHERE id = 2", qualified(&db, "orders")),
        format!("INSERT INTO {} VALUES (7)", qualified(&db, WEIRD)),
        format!("INSERT INTO {} VALUES (8)", qualified(&db, ACCENTED)),
        format!("INSERT INTO {} VALUES (9)", qualified(&db, &long)),
    ] {
        writer
            .query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let expect =
        |hits: u64| -> Vec<(u16, u64)> { (0..4).map(|s| (s, if s == slot { hits } else { 0 })).collect() };
    let key = |t: &str| triggers::counter_key(&db, t);
    assert_eq!(counters(&mut conn, &ctr, &key("orders")).await, expect(5));
    // The user trigger still fires, and its insert into `audit` fires audit's triggers.
    let audited: Vec<u32> = conn
        .query(format!(
            "SELECT order_id FROM {} ORDER BY order_id",
            qualified(&db, "audit")
        ))
        .await
        .expect("audit rows");
    assert_eq!(audited, [1, 2]);
    assert_eq!(counters(&mut conn, &ctr, &key("audit")).await, expect(2));
    for t in [WEIRD, ACCENTED, long.as_str()] {
        assert_eq!(counters(&mut conn, &ctr, &key(t)).await, expect(1), "{t}");
    }
    assert_eq!(counters(&mut conn, &ctr, &key("items")).await, expect(0));

    // The bumps replicate (ROW format: replicas apply the counter rows, not the triggers).
    cluster.wait_replicas_caught_up();
    for replica in &cluster.replicas {
        let mut r = connect(replica).await;
        assert_eq!(counters(&mut r, &ctr, &key("orders")).await, expect(5));
        assert_eq!(counters(&mut r, &ctr, &key(WEIRD)).await, expect(1));
        let _ = r.disconnect().await;
    }

    // Tracked: every table with its three triggers, except `items`, which a
    // foreign key cascades into (cascaded deletes fire no trigger).
    let tracked = triggers::tracked_tables(&mut conn, &ctr).await.expect("tracked");
    let mine: HashSet<String> = tracked
        .iter()
        .filter(|k| k.starts_with(&format!("{db}.")))
        .cloned()
        .collect();
    let expected: HashSet<String> = ["audit", "orders", WEIRD, ACCENTED, long.as_str()]
        .iter()
        .map(|t| key(t))
        .collect();
    assert_eq!(mine, expected);

    // A table created after install is reported untracked.
    conn.query_drop(format!("CREATE TABLE {} (id INT)", qualified(&db, "later")))
        .await
        .expect("create later");
    let status = triggers::status(&mut conn, &ctr, &db).await.expect("status");
    assert!(status.counter_table_exists);
    assert_eq!(status.untracked, ["later"]);
    let orders = status
        .tables
        .iter()
        .find(|t| t.table == "orders")
        .expect("orders");
    assert_eq!(orders.user_triggers, ["audit_orders"]);
    assert!(orders.is_tracked());
    assert_eq!(orders.state(Event::Update), TriggerState::Ok { slots: 4 });
    let items = status.tables.iter().find(|t| t.table == "items").expect("items");
    assert_eq!(items.cascaded_from, [key("orders")]);
    assert!(!items.is_tracked());
    let text = status.to_string();
    assert!(text.contains("tables without sluice triggers: later"), "{text}");
    assert!(!triggers::tracked_tables(&mut conn, &ctr)
        .await
        .expect("tracked")
        .contains(&key("later")));

    // Another slot count: sluice's triggers are replaced (in place), `later` gets its own.
    let resized = triggers::install(&mut conn, &ctr, &db, 8)
        .await
        .expect("install with 8 slots");
    assert_eq!(resized.replaced.len(), 3 * tables.len(), "{resized}");
    assert_eq!(resized.created.len(), 3, "{resized}");
    let status = triggers::status(&mut conn, &ctr, &db).await.expect("status");
    assert!(status.untracked.is_empty());
    for t in &status.tables {
        for e in Event::ALL {
            assert_eq!(t.state(e), TriggerState::Ok { slots: 8 }, "{}", t.table);
        }
    }
    assert_eq!(counters(&mut conn, &ctr, &key("orders")).await.len(), 8);

    // Uninstall: sluice's triggers and rows go, the user's trigger stays.
    let removed = triggers::uninstall(&mut conn, &ctr, &db)
        .await
        .expect("uninstall");
    assert_eq!(removed.dropped.len(), 3 * (tables.len() + 1), "{removed}");
    assert_eq!(
        trigger_names(&mut conn, &db).await,
        HashSet::from(["audit_orders".to_owned()])
    );
    assert!(counters(&mut conn, &ctr, &key("orders")).await.is_empty());
    let tracked = triggers::tracked_tables(&mut conn, &ctr).await.expect("tracked");
    assert!(!tracked.iter().any(|k| k.starts_with(&format!("{db}."))));
    conn.query_drop(format!("INSERT INTO {} VALUES (3, 3)", qualified(&db, "orders")))
        .await
        .expect("insert after uninstall");
    let status = triggers::status(&mut conn, &ctr, &db).await.expect("status");
    assert_eq!(status.untracked.len(), tables.len() + 1);

    drop_schemas(&mut conn, &[&db, &ctr]).await;
    let _ = writer.disconnect().await;
    let _ = conn.disconnect().await;
}

#[tokio::test]
async fn install_refuses_foreign_trigger_names_and_the_counter_schema() {
    let cluster = shared_cluster();
    let mut conn = connect(&cluster.master).await;
    let db = unique_name("trg");
    let ctr = unique_name("ctr");
    for sql in [
        format!("CREATE DATABASE {}", ident(&db)),
        format!("CREATE TABLE {} (id INT)", qualified(&db, "t")),
        // Named like sluice's trigger, but not sluice's.
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {} FOR EACH ROW SET @seen = NEW.id",
            qualified(&db, "sluice_ai_t"),
            qualified(&db, "t")
        ),
    ] {
        conn.query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let err = triggers::install(&mut conn, &ctr, &db, 16)
        .await
        .expect_err("name taken");
    assert!(matches!(err, TriggerError::NameTaken { .. }), "{err}");
    // Nothing was changed, and uninstall leaves the foreign trigger alone.
    triggers::uninstall(&mut conn, &ctr, &db)
        .await
        .expect("uninstall");
    assert_eq!(
        trigger_names(&mut conn, &db).await,
        HashSet::from(["sluice_ai_t".to_owned()])
    );

    let err = triggers::install(&mut conn, &ctr, &ctr, 16)
        .await
        .expect_err("counter schema");
    assert!(matches!(err, TriggerError::CounterSchema(_)), "{err}");
    let err = triggers::install(&mut conn, &ctr, "no_such_schema_x", 16)
        .await
        .expect_err("missing schema");
    assert!(matches!(err, TriggerError::NoSuchSchema(_)), "{err}");
    let err = triggers::status(&mut conn, &ctr, "no_such_schema_x")
        .await
        .expect_err("missing schema");
    assert!(matches!(err, TriggerError::NoSuchSchema(_)), "{err}");
    let err = triggers::install(&mut conn, &ctr, &db, 0)
        .await
        .expect_err("slots");
    assert!(matches!(err, TriggerError::Slots(0)), "{err}");
    drop_schemas(&mut conn, &[&db, &ctr]).await;
    let _ = conn.disconnect().await;
}

/// Runs `mariadb` with `input` on stdin as the sluice account; panics on failure.
fn mariadb_cli(server: &Server, input: &str) {
    let mut child = Command::new("mariadb")
        .args([
            "--no-defaults",
            "--protocol=tcp",
            "--host=127.0.0.1",
            &format!("--port={}", server.port),
            &format!("--user={SLUICE_USER}"),
            &format!("--password={SLUICE_PASSWORD}"),
            "--default-character-set=utf8mb4",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mariadb");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write script");
    let out = child.wait_with_output().expect("mariadb output");
    assert!(
        out.status.success(),
        "mariadb failed: {}\n--- script ---\n{input}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn generated_script_runs_in_the_mariadb_client() {
    let cluster = shared_cluster();
    let mut conn = connect(&cluster.master).await;
    let db = unique_name("trg");
    let ctr = unique_name("ctr");
    let tables = vec![
        "plain".to_owned(),
        WEIRD.to_owned(),
        ACCENTED.to_owned(),
        "semi;colon -- x".to_owned(),
    ];
    conn.query_drop(format!("CREATE DATABASE {}", ident(&db)))
        .await
        .expect("create db");
    for t in &tables {
        conn.query_drop(format!("CREATE TABLE {} (id INT)", qualified(&db, t)))
            .await
            .expect("create table");
    }
    let script = triggers::script(&ctr, &db, &tables, 16);
    assert!(!script.contains("DELIMITER"));
    mariadb_cli(&cluster.master, &script);
    // Twice: the script is re-runnable.
    mariadb_cli(&cluster.master, &script);
    let status = triggers::status(&mut conn, &ctr, &db).await.expect("status");
    assert!(status.counter_table_exists);
    assert_eq!(status.tracked().count(), tables.len(), "{status}");
    // What the script created is what `install` would: nothing to do.
    let report = triggers::install(&mut conn, &ctr, &db, 16)
        .await
        .expect("install");
    assert_eq!(report.unchanged, 3 * tables.len(), "{report}");
    assert!(
        report.created.is_empty() && report.replaced.is_empty(),
        "{report}"
    );
    drop_schemas(&mut conn, &[&db, &ctr]).await;
    let _ = conn.disconnect().await;
}

fn sluice_cli(args: &[&str], dir: &std::path::Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run sluice");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn cli_installs_reports_and_prints_sql() {
    let cluster = shared_cluster();
    let mut conn = connect(&cluster.master).await;
    let db = unique_name("trg");
    let ctr = unique_name("ctr");
    conn.query_drop(format!("CREATE DATABASE {}", ident(&db)))
        .await
        .expect("create db");
    conn.query_drop(format!("CREATE TABLE {} (id INT)", qualified(&db, "t1")))
        .await
        .expect("create t1");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("sluice.yaml");
    std::fs::write(
        &config,
        format!(
            "users:\n  - {{ name: app, password: app, backend: group }}\ngroups:\n  - name: other\n    \
             master: {{ addr: 127.0.0.1:1, user: nobody }}\n  - name: main\n    \
             master: {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n\
             freshness: {{ schema: {ctr}, slots: 2 }}\n",
            cluster.master.addr()
        ),
    )
    .expect("write config");
    let cfg = config.to_str().expect("utf-8 path");
    let target = ["--schema", db.as_str(), "--config", cfg, "--group", "main"];
    let run = |action: &str| {
        let mut args = vec!["triggers", action];
        args.extend(target);
        sluice_cli(&args, dir.path())
    };

    let (ok, out, err) = run("install");
    assert!(ok, "{out}{err}");
    assert!(out.contains("3 created"), "{out}");
    let (ok, out, err) = run("install");
    assert!(ok && out.contains("3 unchanged"), "{out}{err}");
    conn.query_drop(format!("CREATE TABLE {} (id INT)", qualified(&db, "t2")))
        .await
        .expect("create t2");
    let (ok, out, err) = run("status");
    assert!(ok, "{out}{err}");
    assert!(out.contains("ok/2"), "{out}");
    assert!(out.contains("tables without sluice triggers: t2"), "{out}");
    let (ok, out, err) = run("sql");
    assert!(ok, "{out}{err}");
    assert_eq!(out, triggers::script(&ctr, &db, &["t1".into(), "t2".into()], 2));
    let (ok, out, err) = run("uninstall");
    assert!(ok && out.contains("3 dropped"), "{out}{err}");

    // The first group's master is unreachable: a clear error, exit 1.
    let (ok, _, err) = sluice_cli(
        &["triggers", "status", "--schema", &db, "--config", cfg],
        dir.path(),
    );
    assert!(!ok);
    assert!(err.contains("cannot connect to the master 127.0.0.1:1"), "{err}");
    let (ok, _, err) = sluice_cli(
        &[
            "triggers", "status", "--schema", &db, "--config", cfg, "--group", "nope",
        ],
        dir.path(),
    );
    assert!(!ok && err.contains("no group `nope`"), "{err}");

    // `sql --tables` connects to nothing; without a config file it uses the defaults.
    let empty = tempfile::tempdir().expect("tempdir");
    let (ok, out, err) = sluice_cli(
        &[
            "triggers",
            "sql",
            "--schema",
            "shop",
            "--tables",
            "orders,customers",
        ],
        empty.path(),
    );
    assert!(ok, "{err}");
    assert_eq!(
        out,
        triggers::script("sluice", "shop", &["orders".into(), "customers".into()], 16)
    );
    let (ok, out, _) = sluice_cli(&["triggers", "--help"], empty.path());
    assert!(ok && out.contains("sluice_ai_<table>"), "{out}");

    drop_schemas(&mut conn, &[&db, &ctr]).await;
    let _ = conn.disconnect().await;
}
