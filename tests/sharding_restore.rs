//! A `mariadb-dump` restored through sluice into a sharded table (issue 42): the dump of
//! an unsharded table (long text, binary bytes, NULLs; extended INSERTs of about 1 MB, far
//! above `sharding.max_statement_size`), as mariadb-dump writes it by default (DROP and
//! CREATE TABLE, LOCK TABLES, `/*!40000 ALTER TABLE … DISABLE KEYS */`; `--hex-blob` for
//! the binary column, see docs/sharding.md), piped by the `mariadb` client into sluice,
//! must leave the sub-tables holding exactly the rows of the same dump restored directly
//! on the server, each row in its key's sub-table. Prints the restore's time and sluice's
//! peak RSS (VmHWM). The 200,000-row run is `scripts/shard-restore`.
//!
//! A dump made without `--hex-blob` writes BLOB and VARBINARY values as raw bytes in
//! string literals (not UTF-8): the sub-tables' statements must carry the client's bytes,
//! only the table name replaced.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};

const ROWS: u32 = 12_000;

fn cli(port: u16, user: &str, password: &str, db: &str, input: &[u8]) {
    let mut child = Command::new("mariadb")
        .arg("--no-defaults")
        .args([
            "--protocol=tcp",
            "-h127.0.0.1",
            &format!("-P{port}"),
            &format!("-u{user}"),
            &format!("-p{password}"),
            db,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run the mariadb client (apt-get install mariadb-client): {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("mariadb client");
    assert!(
        out.status.success(),
        "restore into {db} on port {port} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    writer.join().expect("writer").expect("write the dump");
}

async fn rows(c: &mut Conn, sql: &str) -> Vec<Vec<Value>> {
    let r: Vec<Row> = c.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    r.into_iter().map(Row::unwrap).collect()
}

/// The dump of `src`.`table` (made with `dump_args`) restored directly into a reference
/// database and through sluice into `table` sharded by `tid` over 4 sub-tables: the rows
/// must be equal, each in its key's sub-table. Returns the dump's INSERT count.
async fn restore_case(table: &str, create: &str, rows_wanted: usize, dump_args: &[&str]) -> usize {
    let cluster = shared_cluster();
    let db = unique_name("shard_rs");
    let (src, reference) = (format!("{db}_src"), format!("{db}_ref"));
    for d in [&db, &src, &reference] {
        cluster.master.sql(&format!("CREATE DATABASE {d}"));
    }
    cluster.master.sql_in(&src, create);
    let dump = Command::new("mariadb-dump")
        .arg("--no-defaults")
        .args([
            "--protocol=tcp",
            "-h127.0.0.1",
            &format!("-P{}", cluster.master.port),
            &format!("-u{SLUICE_USER}"),
            &format!("-p{SLUICE_PASSWORD}"),
        ])
        .args(dump_args)
        .args([&src, table])
        .output()
        .expect("run mariadb-dump");
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    let text = dump.stdout;
    // Each INSERT ends with `;` and a newline (its rows are lines of their own).
    let starts: Vec<usize> = text
        .windows(12)
        .enumerate()
        .filter(|(_, w)| *w == b"INSERT INTO ")
        .map(|(i, _)| i)
        .collect();
    let longest = starts
        .iter()
        .map(|&i| {
            text[i..]
                .windows(2)
                .position(|w| w == b";\n")
                .unwrap_or(text.len() - i)
        })
        .max()
        .unwrap_or(0);
    let inserts = starts.len();
    eprintln!(
        "dump: {} bytes, {inserts} INSERT statements, valid UTF-8: {}",
        text.len(),
        std::str::from_utf8(&text).is_ok()
    );

    cli(
        cluster.master.port,
        SLUICE_USER,
        SLUICE_PASSWORD,
        &reference,
        &text,
    );
    let s = Sluice::start_for(
        cluster,
        &format!(
            "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.{table}.tid.4\"]\n"
        ),
    );
    let before = vm_hwm_kib(s.pid());
    let t = Instant::now();
    cli(s.port, APP_USER, APP_PASSWORD, &db, &text);
    let took = t.elapsed();
    let after = vm_hwm_kib(s.pid());
    eprintln!(
        "restore of {rows_wanted} rows through sluice: {took:?}; sluice VmHWM {before} kB before, {after} kB after \
         (largest INSERT {longest} bytes)"
    );

    let mut direct = Conn::from_url(cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &db))
        .await
        .expect("connect direct");
    let subs = (0..4)
        .map(|k| format!("SELECT * FROM {db}.{table}_{k}"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let got = rows(&mut direct, &format!("{subs} ORDER BY id")).await;
    let want = rows(
        &mut direct,
        &format!("SELECT * FROM {reference}.{table} ORDER BY id"),
    )
    .await;
    assert_eq!(got.len(), rows_wanted);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "restored row");
    }
    for k in 0..4 {
        let wrong = rows(
            &mut direct,
            &format!("SELECT id FROM {db}.{table}_{k} WHERE MOD(MOD(tid, 4) + 4, 4) <> {k}"),
        )
        .await;
        assert!(wrong.is_empty(), "{table}_{k} holds rows of other sub-tables");
    }
    // Memory bounded by a small multiple of a statement (about 1 MB each), not the dump.
    assert!(
        after < before + 64 * 1024,
        "sluice's peak RSS grew from {before} kB to {after} kB"
    );
    drop(direct);
    for d in [&db, &src, &reference] {
        cluster.master.sql(&format!("DROP DATABASE {d}"));
    }
    inserts
}

#[tokio::test]
async fn a_dump_restored_through_sluice_equals_the_direct_copy() {
    // Text of 20..800 characters with quotes, backslashes, newlines and non-ASCII; a
    // UUID-like binary column; NULLs.
    let create = format!(
        "CREATE TABLE pr (id INT PRIMARY KEY, tid INT NOT NULL, body TEXT, u BINARY(16) NULL, \
         amount DECIMAL(12,2) NULL, made DATETIME(6) NULL) DEFAULT CHARSET=utf8mb4; \
         INSERT INTO pr SELECT seq, CAST((seq * 7919) % 1000 AS SIGNED) - 500, \
         IF(seq % 97 = 0, NULL, CONCAT(REPEAT(CONCAT('r', seq, ' it''s \\\\ \"é\" 回\\n'), 1 + seq % 40), '😀')), \
         IF(seq % 5 = 0, NULL, UNHEX(MD5(seq))), seq / 7, \
         TIMESTAMP('2024-01-01') + INTERVAL seq SECOND + INTERVAL seq % 1000 MICROSECOND \
         FROM seq_1_to_{ROWS}"
    );
    let inserts = restore_case("pr", &create, ROWS as usize, &["--hex-blob"]).await;
    assert!(
        inserts >= 3,
        "{inserts} INSERT statements: too few to be extended ones"
    );
}

/// Without `--hex-blob`, as mariadb-dump writes by default: BLOB and VARBINARY values
/// that are not UTF-8 (every byte value, the ones it escapes included: NUL, quote,
/// backslash, CR, LF, ^Z) reach the server as raw bytes inside string literals. Directly
/// they restore; through sluice too (before, refused: the statement is not UTF-8).
#[tokio::test]
async fn a_dump_without_hex_blob_restores_binary_bytes_exactly() {
    const N: usize = 3000;
    let create = format!(
        "CREATE TABLE bl (id INT PRIMARY KEY, tid INT NOT NULL, b BLOB NULL, v VARBINARY(80) NULL, \
         t VARCHAR(40) NULL) DEFAULT CHARSET=utf8mb4; \
         INSERT INTO bl SELECT seq, CAST((seq * 7919) % 1000 AS SIGNED) - 500, \
         IF(seq % 53 = 0, NULL, CONCAT(UNHEX(SHA2(seq, 256)), CHAR(0, 39, 92, 26, 13, 10, 255, 195, 34 USING binary), \
         UNHEX(SHA2(seq + 1, 512)))), \
         IF(seq % 7 = 0, NULL, CONCAT(CHAR(seq % 256 USING binary), UNHEX(MD5(seq)), CHAR(0xF0, 0x9F, 0x98 USING binary))), \
         CONCAT('é', seq, '回') FROM seq_1_to_{N}"
    );
    // A small net buffer: several extended INSERTs.
    let inserts = restore_case("bl", &create, N, &["--net-buffer-length=16384"]).await;
    assert!(inserts >= 3, "{inserts} INSERT statements");
}
