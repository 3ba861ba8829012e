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
    let total: usize = p.parts().iter().map(|x| x.sql.matches("'row ").count()).sum();
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
