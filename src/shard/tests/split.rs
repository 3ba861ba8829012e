//! INSERT … VALUES split at the token level (`split.rs`): bytes kept, placeholders kept,
//! any size.

use super::*;

#[test]
fn rows_are_copied_byte_for_byte() {
    let (parts, _) = write(
        "insert /* c */ into test.`post_reply` (id, tid, s) values (1, 5, 0x05), (2,4,_binary'\\'x' 'y'), (3, -3, X'0A' /* k */)",
    );
    assert_eq!(
        parts,
        vec![
            (
                0,
                "insert /* c */ into test.`post_reply_0` (id, tid, s) values (2,4,_binary'\\'x' 'y')".to_string()
            ),
            (
                1,
                "insert /* c */ into test.`post_reply_1` (id, tid, s) values (1, 5, 0x05), (3, -3, X'0A' /* k */)"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn prepared_rows_keep_their_placeholders_in_order() {
    let parts = prepared_parts(
        "INSERT INTO post_reply (id, tid, s) VALUES (?, ?, ?), (?, 6, ?), (?, ?, 'x') ON DUPLICATE KEY UPDATE s = ?",
        &[
            ParamValue::Int(1),
            ParamValue::Bytes(b"5".to_vec()),
            ParamValue::Bytes(vec![0xff, 0x00, b'\'']),
            ParamValue::Int(2),
            ParamValue::Blob(vec![0x5c]),
            ParamValue::Int(3),
            ParamValue::Int(9),
            ParamValue::Null,
        ],
        &Charset::default(),
    );
    assert_eq!(
        parts,
        vec![
            (
                1,
                "INSERT INTO post_reply_1 (id, tid, s) VALUES (?, ?, ?), (?, ?, 'x') ON DUPLICATE KEY UPDATE s = ?"
                    .to_string(),
                vec![0, 1, 2, 5, 6, 7]
            ),
            (
                2,
                "INSERT INTO post_reply_2 (id, tid, s) VALUES (?, 6, ?) ON DUPLICATE KEY UPDATE s = ?".to_string(),
                vec![3, 4, 7]
            ),
        ]
    );
    // The value of a key parameter places the row; a NULL or temporal one is refused.
    for v in [
        ParamValue::Null,
        ParamValue::Temporal(Temporal::Date {
            year: 2020,
            month: 1,
            day: 1,
        }),
    ] {
        let e = plan_prepared(
            "INSERT INTO post_reply (id, tid) VALUES (1, ?)",
            &[v],
            &Charset::default(),
            Some("test"),
            &rules(),
        )
        .unwrap_err();
        assert!(e.0.contains("shard key tid"), "{e}");
    }
}

#[test]
fn large_inserts_are_split_and_what_cannot_be_split_is_refused() {
    let small = rules().with_max_statement_size(1024);
    let rows: Vec<String> = (0..2000)
        .map(|i| format!("({i}, {}, 'row {i}')", i % 7))
        .collect();
    let sql = format!("INSERT INTO post_reply (id, tid, s) VALUES {}", rows.join(","));
    let p = plan(&sql, Some("test"), &small).unwrap().unwrap();
    assert_eq!(p.parts().len(), 4);
    let total: usize = p
        .parts()
        .iter()
        .map(|x| x.sql.text().matches("'row ").count())
        .sum();
    assert_eq!(total, 2000);
    // A key that is an expression: refused with the reason, whatever the size.
    let sql = format!(
        "INSERT INTO post_reply (id, tid, s) VALUES {}, (1, 1 + 1, 'x')",
        rows[0]
    );
    let e = plan(&sql, Some("test"), &small).unwrap_err();
    assert!(e.0.contains("must be a literal value"), "{e}");
    // Not splittable by tokens (a sub-query) and too large for the planner: refused.
    let sql = format!(
        "INSERT INTO post_reply (id, tid, s) VALUES {}, (1, 1, (SELECT MAX(s) FROM post_reply))",
        rows.join(",")
    );
    let e = plan(&sql, Some("test"), &small).unwrap_err();
    assert!(
        e.0.contains("cannot be split row by row (a row names a sharded table)"),
        "{e}"
    );
}

/// A statement that is not UTF-8 (binary bytes written raw, as mariadb-dump does without
/// `--hex-blob`): an INSERT's parts carry the client's bytes; anything else on a sharded
/// table is refused, never planned from text with its bytes replaced.
#[test]
fn bytes_that_are_not_utf8_are_carried_or_refused() {
    let sql = b"INSERT INTO post_reply (id, tid, b) VALUES (1, 5, 'a\xff\\'\xc3'), (2, 4, _binary'\xf0\x9f')";
    let lossy = String::from_utf8_lossy(sql);
    let planned = plan_over_bytes(sql, run(&lossy), Some("test"), &rules())
        .unwrap()
        .unwrap();
    let parts: Vec<(u32, Vec<u8>)> = planned
        .parts()
        .iter()
        .map(|p| (p.shard, p.sql.as_bytes().to_vec()))
        .collect();
    assert_eq!(
        parts,
        vec![
            (
                0,
                b"INSERT INTO post_reply_0 (id, tid, b) VALUES (2, 4, _binary'\xf0\x9f')".to_vec()
            ),
            (
                1,
                b"INSERT INTO post_reply_1 (id, tid, b) VALUES (1, 5, 'a\xff\\'\xc3')".to_vec()
            ),
        ]
    );
    let update = b"UPDATE post_reply SET b = '\xff' WHERE tid = 1";
    let lossy = String::from_utf8_lossy(update);
    let r = plan_over_bytes(update, run(&lossy), Some("test"), &rules()).unwrap_err();
    assert!(r.0.contains("not valid UTF-8 text must be a plain INSERT"), "{r}");
    // A key that is not UTF-8 cannot be placed.
    let key = b"INSERT INTO post_reply (id, tid) VALUES (1, '\xff')";
    let lossy = String::from_utf8_lossy(key);
    assert!(plan_over_bytes(key, run(&lossy), Some("test"), &rules()).is_err());
    // Not on a sharded table: passes through (sent untouched).
    let other = b"INSERT INTO t (b) VALUES ('\xff')";
    let lossy = String::from_utf8_lossy(other);
    assert_eq!(
        plan_over_bytes(other, run(&lossy), Some("test"), &rules()),
        Ok(None)
    );
}
