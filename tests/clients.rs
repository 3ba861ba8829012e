//! Real clients through sluice: the `mariadb` CLI (which does not send
//! CLIENT_DEPRECATE_EOF), PyMySQL (a pure-Python driver; 1.0.x does not send
//! DEPRECATE_EOF either, see tests/clients/pymysql_client.py) and sysbench (libmariadb,
//! with and without server-side prepared statements).
//!
//! Wherever the output is deterministic, the same client is also run directly against
//! the master (as the `sluice` backend account) and the two outputs must be identical
//! byte for byte: sluice forwards result sets as raw packets, so column definitions,
//! NULLs, escaping and multi-result framing must come out exactly as the server sent
//! them.
//!
//! A missing tool is a test failure (never a skip), with the apt command to install it.

mod common;

use common::cluster::{
    shared_cluster, unique_name, Cluster, Sluice, APP_PASSWORD, APP_USER, SLUICE_PASSWORD, SLUICE_USER,
    TEST_DB,
};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// The Debian interpreter: `python3` on PATH may be a pyenv build without pymysql.
const PYTHON: &str = "/usr/bin/python3";

// ---------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------

/// Absolute path of `name` (PATH, then the usual bin dirs), or a panic that says how to
/// install it.
fn require_tool(name: &str, apt_package: &str) -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin"] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("`{name}` is not installed: run `sudo apt-get install -y {apt_package}`"))
}

fn require_pymysql() {
    assert!(
        Path::new(PYTHON).is_file(),
        "{PYTHON} is missing: run `sudo apt-get install -y python3 python3-pymysql`"
    );
    let out = Command::new(PYTHON)
        .args(["-c", "import pymysql"])
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/python3");
    assert!(
        out.status.success(),
        "PyMySQL is not importable by {PYTHON}: run `sudo apt-get install -y python3-pymysql`\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where a client connects: host is always 127.0.0.1 over TCP.
#[derive(Clone, Copy)]
struct Endpoint {
    port: u16,
    user: &'static str,
    password: &'static str,
}

fn direct(c: &Cluster) -> Endpoint {
    Endpoint {
        port: c.master.port,
        user: SLUICE_USER,
        password: SLUICE_PASSWORD,
    }
}

fn via(s: &Sluice) -> Endpoint {
    Endpoint {
        port: s.port,
        user: APP_USER,
        password: APP_PASSWORD,
    }
}

/// Output of one client run, for comparisons and assertion messages.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// `mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P.. -u.. -p.. <args>` with utf8mb4
/// as the client character set (the CLI's default follows the locale).
fn mariadb(ep: Endpoint, args: &[&str], stdin: Option<&str>) -> Run {
    let bin = require_tool("mariadb", "mariadb-client");
    let mut cmd = Command::new(bin);
    cmd.args([
        "--no-defaults",
        "--protocol=tcp",
        "--host=127.0.0.1",
        "--connect-timeout=10",
        "--default-character-set=utf8mb4",
    ])
    .arg(format!("--port={}", ep.port))
    .arg(format!("--user={}", ep.user))
    .arg(format!("--password={}", ep.password))
    .args(args)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("spawn mariadb");
    if let Some(input) = stdin {
        let mut w = child.stdin.take().expect("stdin");
        w.write_all(input.as_bytes()).expect("write mariadb stdin");
    }
    child.wait_with_output().expect("wait for mariadb").into()
}

/// Run the same CLI invocation directly and through sluice; both must succeed with
/// identical stdout and stderr. Returns the (shared) stdout.
fn same_both_ways(c: &Cluster, s: &Sluice, args: &[&str]) -> String {
    let d = mariadb(direct(c), args, None);
    let p = mariadb(via(s), args, None);
    assert_eq!(d.code, Some(0), "direct run failed: {d:#?}");
    if p != d {
        panic!(
            "mariadb {args:?}: through sluice differs from direct\n{}\n{}",
            first_difference(&format!("{p:?}"), &format!("{d:?}")),
            common::cluster::tail(s.log_path(), 30)
        );
    }
    d.stdout
}

/// The first differing line of two long texts, with a little context.
fn first_difference(via_sluice: &str, direct: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (via_sluice.split("\\n").collect(), direct.split("\\n").collect());
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = i.saturating_sub(12);
    let cut = |v: &[&str]| v[from.min(v.len())..(i + 3).min(v.len())].join("\n");
    format!(
        "first difference at output line {i}\n--- through sluice ---\n{}\n--- direct ---\n{}",
        cut(&a),
        cut(&b)
    )
}

/// Run setup SQL directly on the master with a utf8mb4 client (the harness's
/// `Server::sql` uses the CLI's default character set, which cannot carry emoji).
fn master_sql_utf8(c: &Cluster, sql: &str) -> String {
    let r = mariadb(direct(c), &["-N", "-B", "-e", sql], None);
    assert_eq!(r.code, Some(0), "setup SQL failed: {r:#?}\nSQL: {sql}");
    r.stdout
}

// ---------------------------------------------------------------------------------------
// mariadb CLI
// ---------------------------------------------------------------------------------------

#[test]
fn cli_execute_several_statements() {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    // First, on a fresh sluice: the handshake advertises the backend's version and
    // `status` agrees except for the per-connection lines.
    let status = |ep| {
        let r = mariadb(ep, &["-e", "status"], None);
        assert_eq!(r.code, Some(0), "{r:?}");
        r.stdout
            .lines()
            .filter(|l| {
                ![
                    "Connection id:",
                    "TCP port:",
                    "Uptime:",
                    "Threads:",
                    "Current user:",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (d, p) = (status(direct(c)), status(via(&s)));
    assert_eq!(p, d);
    assert!(d.contains("Server version:"), "{d}");

    let sql = "SELECT 1 AS one; \
               SELECT 'x' AS b, NULL AS c UNION ALL SELECT 'y😀', 2; \
               DO 1; \
               SELECT 1/0 AS div0; SHOW WARNINGS; \
               SET @v := 41; SELECT @v + 1 AS v; \
               USE sluice_test; SELECT DATABASE() AS db; \
               SELECT @@character_set_client, @@character_set_results, @@collation_connection";
    // Default batch output (tab separated with headers), table output, and -vv (echoes
    // each statement with "Query OK, N rows affected" / "N rows in set").
    let out = same_both_ways(c, &s, &["-e", sql]);
    assert!(out.contains("one\n1\n"), "{out}");
    assert!(out.contains("b\tc\nx\tNULL\ny😀\t2\n"), "{out}");
    assert!(out.contains("Warning\t1365\tDivision by 0"), "{out}");
    assert!(out.contains("v\n42\n"), "{out}");
    assert!(out.contains(&format!("db\n{TEST_DB}\n")), "{out}");
    assert!(out.contains("utf8mb4\tutf8mb4\tutf8mb4_general_ci"), "{out}");
    same_both_ways(c, &s, &["-t", "-e", sql]);
    same_both_ways(c, &s, &["-vv", "-e", sql]);

    // An error in the middle: without --force the CLI stops there (exit 1), with --force
    // it goes on; the error text (code, SQLSTATE, message) is the server's.
    let bad = "SELECT 1; SELECT * FROM sluice_test.no_such_table; SELECT 2";
    for args in [&["-e", bad][..], &["--force", "-e", bad][..]] {
        let d = mariadb(direct(c), args, None);
        let p = mariadb(via(&s), args, None);
        assert_eq!(p, d, "{args:?}");
        assert_eq!(d.code, Some(1));
        assert!(
            d.stderr
                .contains("ERROR 1146 (42S02) at line 1: Table 'sluice_test.no_such_table' doesn't exist"),
            "{d:?}"
        );
    }
}

/// Session state set by one client must not be visible to the next client that gets the
/// same pooled backend connection: default database, user variables, sql_mode, character
/// set, temporary tables, an open transaction.
#[test]
fn cli_no_session_state_leaks_between_clients() {
    let c = shared_cluster();
    // One backend connection at most, so the second client surely reuses the first's.
    let s = Sluice::start_for(c, "backend:\n  pool_max: 1\n");
    let probe = "SELECT DATABASE(), @leak, @@sql_mode, @@character_set_client, @@autocommit, \
                 @@in_transaction, @@time_zone; \
                 SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'leak_tmp'";
    let fresh = mariadb(direct(c), &["-N", "-B", "-e", probe], None);
    assert_eq!(fresh.code, Some(0), "{fresh:?}");
    let first = mariadb(via(&s), &["-N", "-B", "-e", probe], None);
    assert_eq!(
        first, fresh,
        "a fresh client through sluice differs from a fresh direct client"
    );
    let dirty = mariadb(
        via(&s),
        &[
            "-N",
            "-B",
            "-e",
            "USE sluice_test; SET @leak = 'leaked'; SET sql_mode = 'ANSI_QUOTES'; SET NAMES latin1; \
             SET autocommit = 0; SET time_zone = '+05:00'; CREATE TEMPORARY TABLE leak_tmp (a INT); \
             BEGIN; SELECT 1",
        ],
        None,
    );
    assert_eq!(dirty.code, Some(0), "{dirty:?}");
    let next = mariadb(via(&s), &["-N", "-B", "-e", probe], None);
    assert_eq!(
        next, fresh,
        "state of a previous client leaked into a new session through the backend pool"
    );
    // A temporary table of the previous client must be gone too.
    let t = mariadb(
        via(&s),
        &["-N", "-B", "-e", "SELECT * FROM sluice_test.leak_tmp"],
        None,
    );
    assert!(t.stderr.contains("ERROR 1146 (42S02)"), "{t:?}");
}

/// Creates a table with every common column type (and MariaDB's JSON, INET6, UUID,
/// POINT), NULLs, emoji and characters the batch format escapes. Returns its
/// qualified name and three queries over it.
fn create_types_table(c: &Cluster) -> (String, String) {
    let t = format!("{TEST_DB}.{}", unique_name("cli_types"));
    master_sql_utf8(
        c,
        &format!(
            "CREATE TABLE {t} (
           id INT PRIMARY KEY,
           ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, i INT, bi BIGINT, bu BIGINT UNSIGNED,
           fl FLOAT, db DOUBLE, de DECIMAL(30,10),
           d DATE, tm TIME(3), dt DATETIME(6), ts TIMESTAMP(2) NULL, yr YEAR,
           ch CHAR(10), vc VARCHAR(200), tx TEXT, mt MEDIUMTEXT, bl BLOB, vb VARBINARY(32), bn BINARY(4),
           en ENUM('a','b','c d'), st SET('x','y','z'), bt BIT(12), js JSON, ip INET6, u UUID,
           lat VARCHAR(20) CHARACTER SET latin1, pt POINT NULL
         ) DEFAULT CHARSET=utf8mb4;
         INSERT INTO {t} (id) VALUES (1);
         INSERT INTO {t} VALUES
          (2, -128, 65535, -8388608, -2147483648, -9223372036854775808, 18446744073709551615,
           3.25, 2.718281828459045, -12345678901234567890.0123456789,
           '1000-01-01', '-838:59:59.000', '1000-01-01 00:00:00.000000', '1980-01-01 00:00:01.00', 1901,
           '', '', '', '', '', '', 0x00000000,
           'a', '', b'0', '[]', '::', '00000000-0000-0000-0000-000000000000', '', ST_GeomFromText('POINT(0 0)')),
          (3, 127, 0, 8388607, 2147483647, 9223372036854775807, 0,
           -1.5e-10, -1.7976931348623157e308, 99999999999999999999.9999999999,
           '9999-12-31', '838:59:59.999', '9999-12-31 23:59:59.999999', '2037-12-31 23:59:59.99', 2155,
           'chär', 'emoji 😀🚀 ✓ — ünïcödé', 'tab\there\nnewline\\\\backslash', REPEAT('long ', 2000),
           0x00FF10, 0xDEADBEEF, 0x41420043,
           'c d', 'x,z', b'101010101010', '{{\"k\": [1, null, \"v😀\"]}}', '2001:db8::1',
           '123e4567-e89b-12d3-a456-426614174000', 'café', ST_GeomFromText('POINT(1.5 -2)')),
          (4, 0, 1, 0, 0, 0, 1, 0, 0, 0, '2024-02-29', '00:00:00', '2024-02-29 12:34:56.5', NULL, NULL,
           NULL, 'NULL', '\\\\N', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);"
        ),
    );

    let q = format!(
        "SELECT * FROM {t} ORDER BY id;
         SELECT id, HEX(bl), bt + 0, LENGTH(mt), CONCAT(vc, '|', COALESCE(tx, 'nil')), JSON_EXTRACT(js, '$.k[2]'),
                ts + INTERVAL 1 DAY, CAST(de AS CHAR), fl * 2, -0.0, 1e300, NULL, '', ST_AsText(pt)
           FROM {t} ORDER BY id DESC;
         SELECT COUNT(*), SUM(bi), MIN(d), MAX(vc), GROUP_CONCAT(en ORDER BY id) FROM {t}"
    );
    (t, q)
}

/// `-N -B` (batch) and `-t` (table) output must be identical directly and through
/// sluice for every type.
#[test]
fn cli_batch_output_all_types_identical() {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let (t, q) = create_types_table(c);
    let out = same_both_ways(c, &s, &["-N", "-B", "-e", &q]);
    assert!(out.contains("emoji 😀🚀 ✓ — ünïcödé"), "{out}");
    assert!(out.contains("tab\\there\\nnewline\\\\backslash"), "{out}");
    assert!(out.starts_with("1\tNULL\tNULL"), "{out}");
    assert!(out.contains("\tNULL\t\\\\N\t"), "{out}");
    same_both_ways(c, &s, &["-t", "-e", &q]);
    c.master.sql(&format!("DROP TABLE {t}"));
}

/// Column metadata as the CLI shows it (`--column-type-info`: type, charset, length,
/// decimals, flags, and MariaDB's extended type info such as `BLOB (format=json)` or
/// `STRING (type=inet6)`, which the server only sends to clients that negotiated
/// MARIADB_CLIENT_EXTENDED_METADATA) must be identical directly and through sluice.
#[test]
fn cli_column_metadata_identical() {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let (t, q) = create_types_table(c);
    let meta = same_both_ways(c, &s, &["--column-type-info", "-t", "-e", &q]);
    assert!(meta.contains("Type:       NEWDECIMAL"), "{meta}");
    assert!(meta.contains("(format=json)"), "{meta}");
    c.master.sql(&format!("DROP TABLE {t}"));
}

/// `source` of a file with multi-statements: several statements on one line, a
/// DELIMITER block whose body is sent as ONE COM_QUERY with several result sets, a
/// compound statement (BEGIN NOT ATOMIC) producing result sets, temporary tables.
#[test]
fn cli_source_file_with_multi_statements() {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("script.sql");
    fs::write(
        &file,
        "CREATE TEMPORARY TABLE src_t (id INT PRIMARY KEY, v VARCHAR(50));
INSERT INTO src_t VALUES (1, 'a'), (2, 'b'); INSERT INTO src_t VALUES (3, 'c😀');
SELECT * FROM src_t ORDER BY id;
DELIMITER //
SELECT COUNT(*) FROM src_t; SELECT MAX(id) FROM src_t; UPDATE src_t SET v = 'z' WHERE id = 1; SELECT v FROM src_t WHERE id = 1//
BEGIN NOT ATOMIC DECLARE x INT DEFAULT 5; SELECT x * 2 AS y; SELECT x + 1 AS z; END//
SELECT 'no-op' FROM DUAL WHERE 1 = 0; SELECT 'after empty'//
DELIMITER ;
SHOW CREATE TABLE src_t;
SELECT GROUP_CONCAT(v ORDER BY id SEPARATOR ',') AS vs FROM src_t;
SELECT 'done';
",
    )
    .expect("write sql file");
    let src = format!("source {}", file.display());
    let out = same_both_ways(c, &s, &["-vv", "--database", TEST_DB, "-e", &src]);
    for want in [
        "y\n10\n",
        "z\n6\n",
        "vs\nz,b,c😀\n",
        "Rows matched: 1  Changed: 1",
        "after empty\n",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    // The same file read from stdin (the usual `mariadb db < file.sql`).
    let script = fs::read_to_string(&file).expect("read sql file");
    let d = mariadb(direct(c), &["-vv", "--database", TEST_DB], Some(&script));
    let p = mariadb(via(&s), &["-vv", "--database", TEST_DB], Some(&script));
    assert_eq!(d.code, Some(0), "{d:?}");
    assert_eq!(p, d);
}

#[test]
fn cli_wrong_password_and_unknown_database() {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let bad_pw = |ep: Endpoint| {
        mariadb(
            Endpoint {
                password: "definitely-wrong",
                ..ep
            },
            &["-e", "SELECT 1"],
            None,
        )
    };
    let p = bad_pw(via(&s));
    assert_eq!(p.code, Some(1), "{p:?}");
    assert_eq!(
        p.stderr.trim_end(),
        "ERROR 1045 (28000): Access denied for user 'app'@'127.0.0.1' (using password: YES)"
    );
    // Same shape as the server's own message.
    let d = bad_pw(direct(c));
    assert_eq!(d.stderr.replace("'sluice'@", "'app'@"), p.stderr);

    // No password at all.
    let p = mariadb(
        Endpoint {
            password: "",
            ..via(&s)
        },
        &["--skip-password", "-e", "SELECT 1"],
        None,
    );
    assert_eq!(
        p.stderr.trim_end(),
        "ERROR 1045 (28000): Access denied for user 'app'@'127.0.0.1' (using password: NO)",
        "{p:?}"
    );

    // Unknown default database: 1049, exactly as the server says it.
    let args = ["--database", "nosuchdb", "-e", "SELECT 1"];
    let d = mariadb(direct(c), &args, None);
    let p = mariadb(via(&s), &args, None);
    assert_eq!(p.code, Some(1), "{p:?}");
    assert_eq!(
        p.stderr.trim_end(),
        "ERROR 1049 (42000): Unknown database 'nosuchdb'"
    );
    assert_eq!(p, d);
    // `use nosuchdb` after a good login (the CLI sends COM_INIT_DB and stops on error).
    let args = ["-e", "SELECT 'before'; use nosuchdb; SELECT 'not reached'"];
    let d = mariadb(direct(c), &args, None);
    let p = mariadb(via(&s), &args, None);
    assert_eq!(p, d);
    assert_eq!(p.stdout, "before\nbefore\n", "{p:?}");
    assert_eq!(
        p.stderr.trim_end(),
        "ERROR 1049 (42000) at line 1: Unknown database 'nosuchdb'"
    );

    // sluice is still serving after the failed logins.
    assert_eq!(
        mariadb(via(&s), &["-N", "-B", "-e", "SELECT 'ok'"], None).stdout,
        "ok\n"
    );
}

#[test]
fn cli_load_data_local_infile() {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("rows.tsv");
    let mut tsv = String::new();
    for i in 1..=5000 {
        let name = match i % 4 {
            0 => "\\N".to_string(),
            1 => format!("row {i} 😀"),
            2 => format!("tab\\there {i}"),
            _ => "x".repeat(i % 300),
        };
        let score = if i % 5 == 0 {
            "\\N".to_string()
        } else {
            format!("{}.25", i)
        };
        tsv.push_str(&format!("{i}\t{name}\t{score}\n"));
    }
    // A row that the server rejects softly (warnings: a non-number in a DOUBLE column).
    tsv.push_str("5001\tbad\tnot-a-number\n");
    fs::write(&data, &tsv).expect("write tsv");

    let (td, ts) = (unique_name("ld_direct"), unique_name("ld_sluice"));
    for t in [&td, &ts] {
        c.master.sql(&format!(
            "CREATE TABLE {TEST_DB}.{t} (id INT PRIMARY KEY, name VARCHAR(400) NULL, score DOUBLE NULL) DEFAULT CHARSET=utf8mb4"
        ));
    }
    let load = |ep: Endpoint, t: &str| {
        let sql = format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE {t}; SHOW WARNINGS; SELECT COUNT(*) FROM {t};
             LOAD DATA LOCAL INFILE '{}' INTO TABLE {t}; SELECT 'after missing file'",
            data.display(),
            dir.path().join("missing.tsv").display()
        );
        mariadb(
            ep,
            &[
                "--local-infile=1",
                "--force",
                "-vv",
                "--database",
                TEST_DB,
                "-e",
                &sql,
            ],
            None,
        )
    };
    let d = load(direct(c), &td);
    let p = load(via(&s), &ts);
    assert_eq!(p.code, d.code, "{p:#?}\n{d:#?}");
    assert_eq!(p.stdout.replace(&ts, "T"), d.stdout.replace(&td, "T"));
    assert_eq!(p.stderr, d.stderr);
    assert!(
        p.stdout
            .contains("Records: 5001  Deleted: 0  Skipped: 0  Warnings: 1"),
        "{p:#?}"
    );
    // A missing local file is a client-side error that ends the CLI run (even with
    // --force); it must look the same as directly.
    assert!(p.stderr.contains("missing.tsv' not found"), "{p:#?}");
    // The rows that arrived through sluice are exactly the rows loaded directly.
    let dump = |t: &str| {
        c.master.sql(&format!(
            "SELECT id, name, HEX(name), score FROM {TEST_DB}.{t} ORDER BY id"
        ))
    };
    let (rd, rs) = (dump(&td), dump(&ts));
    assert_eq!(rd.lines().count(), 5001);
    assert!(rs == rd, "rows loaded through sluice differ from the direct load");
    c.master
        .sql(&format!("DROP TABLE {TEST_DB}.{td}, {TEST_DB}.{ts}"));
}

// ---------------------------------------------------------------------------------------
// PyMySQL
// ---------------------------------------------------------------------------------------

fn pymysql_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/pymysql_client.py")
}

fn run_pymysql(ep: Endpoint, table: &str) -> Run {
    let out = Command::new(PYTHON)
        .arg(pymysql_script())
        .args(["--port", &ep.port.to_string()])
        .args(["--user", ep.user, "--password", ep.password])
        .args(["--database", TEST_DB, "--table", table])
        .stdin(Stdio::null())
        .output()
        .expect("run /usr/bin/python3");
    out.into()
}

/// The script checks every result itself and exits non-zero on any mismatch; it prints
/// one `facts:` line (server version, capabilities it saw) that must agree directly and
/// through sluice.
#[test]
fn pymysql_through_sluice() {
    require_pymysql();
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let t0 = Instant::now();
    let d = run_pymysql(direct(c), &unique_name("py_direct"));
    assert_eq!(
        d.code,
        Some(0),
        "PyMySQL directly against the master failed (a bug in the script?)\n{d:#?}"
    );
    let direct_time = t0.elapsed();
    let t0 = Instant::now();
    let p = run_pymysql(via(&s), &unique_name("py_sluice"));
    assert_eq!(
        p.code,
        Some(0),
        "PyMySQL through sluice failed\n{p:#?}\n{}",
        common::cluster::tail(s.log_path(), 40)
    );
    eprintln!(
        "pymysql: direct {direct_time:.2?}, through sluice {:.2?}\n{}",
        t0.elapsed(),
        p.stdout
    );
    let facts = |r: &Run| {
        r.stdout
            .lines()
            .find(|l| l.starts_with("facts:"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no facts line in {r:?}"))
    };
    assert_eq!(facts(&p), facts(&d));
}

// ---------------------------------------------------------------------------------------
// sysbench
// ---------------------------------------------------------------------------------------

fn sysbench(test: &str, ep: Endpoint, db: &str, extra: &[&str], what: &str) -> Run {
    let bin = require_tool("sysbench", "sysbench");
    let out = Command::new(bin)
        .arg(test)
        .args([
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={}", ep.port),
            &format!("--mysql-user={}", ep.user),
            &format!("--mysql-password={}", ep.password),
            &format!("--mysql-db={db}"),
            "--tables=1",
            "--table-size=10000",
        ])
        .args(extra)
        .arg(what)
        .stdin(Stdio::null())
        .output()
        .expect("run sysbench");
    out.into()
}

/// Value of a sysbench report line such as `    ignored errors:   0   (0.00 per sec.)`.
fn sysbench_count(out: &str, label: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` line in sysbench output:\n{out}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("cannot parse `{line}`"))
}

/// Prepare 1×10k rows directly on the master, then `test` through sluice for 3 s with 2
/// threads, with prepared statements (`--db-ps-mode=auto`) and without (`disable`).
fn sysbench_through_sluice(test: &str) {
    let c = shared_cluster();
    let s = Sluice::start_for(c, "");
    let db = unique_name("sbtest");
    c.master.sql(&format!("CREATE DATABASE {db}"));
    let prep = sysbench(test, direct(c), &db, &[], "prepare");
    assert_eq!(prep.code, Some(0), "sysbench prepare (direct) failed: {prep:#?}");
    for ps_mode in ["auto", "disable"] {
        let mode = format!("--db-ps-mode={ps_mode}");
        let r = sysbench(
            test,
            via(&s),
            &db,
            &["--threads=2", "--time=3", "--report-interval=0", &mode],
            "run",
        );
        let all = format!("{}\n{}", r.stdout, r.stderr);
        assert_eq!(
            r.code,
            Some(0),
            "sysbench {test} {mode} through sluice failed:\n{all}\n{}",
            common::cluster::tail(s.log_path(), 40)
        );
        assert!(!all.contains("FATAL"), "{all}");
        assert_eq!(sysbench_count(&all, "ignored errors:"), 0, "{all}");
        assert_eq!(sysbench_count(&all, "reconnects:"), 0, "{all}");
        let tx = sysbench_count(&all, "transactions:");
        let q = sysbench_count(&all, "queries:");
        assert!(tx > 0 && q >= tx, "{all}");
        eprintln!("sysbench {test} {mode} via sluice: {tx} transactions, {q} queries in 3 s");
    }
    // The data is intact (oltp_read_write deletes and re-inserts the same ids).
    assert_eq!(
        c.master.sql(&format!("SELECT COUNT(*) FROM {db}.sbtest1")),
        "10000"
    );
    c.master.sql(&format!("DROP DATABASE {db}"));
    assert!(s.is_running());
}

#[test]
fn sysbench_oltp_point_select() {
    sysbench_through_sluice("oltp_point_select");
}

#[test]
fn sysbench_oltp_read_write() {
    sysbench_through_sluice("oltp_read_write");
}
