//! Clients in a double-byte character set (issue 40): in Shift_JIS `'表'` is
//! `27 95 5C 27`, and a lexer reading bytes takes the 0x5C for a backslash, so the
//! string seems to go on. Through sluice, a session with `SET NAMES sjis`:
//!
//! - a table after such a string stays in the read set: a read of the session's own
//!   write, with the replica's SQL thread stopped, is answered by the master with the
//!   write in it (`@@server_id`, the count);
//! - the `CONNECTION_ID()` rewrite never alters a client's literal: the bytes stored by
//!   an INSERT through sluice equal those of the same INSERT straight to MariaDB.
//!
//! Raw sockets: the statements are not UTF-8, so no driver sends them as they are.

mod common;

use common::cluster::*;
use common::raw::{Frame, RawConn};
use common::reads::*;

/// `表` in Shift_JIS: its second byte is a backslash in ASCII.
const HYO: &[u8] = b"\x95\x5c";

/// A logged-in raw client on `port` with `SET NAMES sjis`.
fn sjis_client(port: u16, user: &str, password: &str, db: &str) -> RawConn {
    let mut c = RawConn::connect(port);
    let r = c.login_with(user, password, 0, Some(db));
    assert!(r.is_ok(), "login: {r:?}");
    run(&mut c, b"SET NAMES sjis");
    c
}

/// Runs `sql`; the rows of its answer as text columns (none for an OK).
fn run(c: &mut RawConn, sql: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut p = vec![0x03];
    p.extend_from_slice(sql);
    c.write(0, &p);
    let first = c.read();
    if let Some(e) = first.err() {
        panic!("{}: {e:?}", String::from_utf8_lossy(sql));
    }
    let Frame::Packet(_, head) = first else {
        panic!("{first:?}")
    };
    if head.first() == Some(&0x00) {
        return Vec::new();
    }
    let mut rows = Vec::new();
    let mut eofs = 0;
    while eofs < 2 {
        match c.read() {
            Frame::Packet(_, p) if p.first() == Some(&0xfe) && p.len() < 9 => eofs += 1,
            Frame::Packet(_, p) if eofs == 1 => {
                let mut cols = Vec::new();
                let mut i = 0;
                while i < p.len() {
                    let len = usize::from(p[i]);
                    cols.push(p[i + 1..i + 1 + len].to_vec());
                    i += 1 + len;
                }
                rows.push(cols);
            }
            Frame::Packet(..) => {}
            other => panic!("{other:?}"),
        }
    }
    rows
}

fn sql(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[tokio::test]
async fn own_cluster_sjis_strings_keep_the_read_set_and_the_stored_bytes() {
    let cluster = Cluster::start(1);
    let db = tracked_db(&cluster, "fcs").await;
    cluster.master.sql(&format!(
        "CREATE TABLE {db}.s (id INT PRIMARY KEY, a VARCHAR(50) CHARACTER SET sjis, b VARCHAR(50))"
    ));
    install_triggers(&cluster, &db).await;
    cluster.wait_replicas_caught_up();
    let s = Sluice::start_for(&cluster, &freshness_yaml("causal"));
    let master_id = server_id(&cluster.master);
    wait_replica_reads(&s, &db, master_id).await;

    let mut c = sjis_client(s.port, APP_USER, APP_PASSWORD, &db);
    cluster.replicas[0].stop_sql_thread();
    run(&mut c, b"INSERT INTO t VALUES (1, 1)");
    // The table comes after the string.
    let read = sql(&[b"SELECT '", HYO, b"', @@server_id, (SELECT COUNT(*) FROM t), 'z'"]);
    for _ in 0..3 {
        let rows = run(&mut c, &read);
        let row = &rows[0];
        assert_eq!(row[0], HYO, "the string comes back as sent");
        assert_eq!(
            (row[1].as_slice(), row[2].as_slice()),
            (master_id.to_string().as_bytes(), &b"1"[..]),
            "the read of the session's own write is fresh"
        );
    }
    cluster.replicas[0].start_sql_thread();

    // The same INSERT through sluice and straight to the master.
    let insert = |id: &[u8]| {
        sql(&[
            b"INSERT INTO s VALUES (",
            id,
            b", '",
            HYO,
            b"', 'CONNECTION_ID() IS_USED_LOCK(''x'')')",
        ])
    };
    run(&mut c, &insert(b"1"));
    let mut d = sjis_client(cluster.master.port, SLUICE_USER, SLUICE_PASSWORD, &db);
    run(&mut d, &insert(b"2"));
    let stored = cluster
        .master
        .sql(&format!("SELECT HEX(a), HEX(b) FROM {db}.s ORDER BY id"));
    let rows: Vec<&str> = stored.lines().collect();
    assert_eq!(rows.len(), 2, "{stored}");
    assert_eq!(rows[0], rows[1], "stored through sluice vs directly:\n{stored}");
}
