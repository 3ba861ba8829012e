//! Prepared statements: parameters substituted as literals before planning.

use super::*;

fn with_params(sql: &str, params: &[ParamValue]) -> ShardPlan {
    plan_with_params(sql, params, Some("test"), &rules())
        .unwrap()
        .unwrap()
}

#[test]
fn key_placeholder_routes() {
    let p = with_params(
        "SELECT id, subject FROM post_reply WHERE tid = ? AND subject = ?",
        &[ParamValue::Int(5), ParamValue::Bytes(b"it's a \\ test".to_vec())],
    );
    assert_eq!(
        sqls(&p),
        vec![(1, r"SELECT id, subject FROM post_reply_1 AS post_reply WHERE tid = 5 AND subject = 'it''s a \\ test'".to_string())]
    );
    let p = with_params(
        "SELECT id FROM post_reply WHERE tid IN (?, ?, ?)",
        &[
            ParamValue::UInt(4),
            ParamValue::Bytes(b"6".to_vec()),
            ParamValue::Int(-1),
        ],
    );
    assert_eq!(
        sqls(&p),
        vec![
            (
                0,
                "SELECT id FROM post_reply_0 AS post_reply WHERE tid IN (4)".to_string()
            ),
            (
                2,
                "SELECT id FROM post_reply_2 AS post_reply WHERE tid IN ('6')".to_string()
            ),
            (
                3,
                "SELECT id FROM post_reply_3 AS post_reply WHERE tid IN ((-1))".to_string()
            ),
        ]
    );
}

#[test]
fn limit_placeholders_with_values() {
    let p = with_params(
        "SELECT id FROM post_reply ORDER BY id LIMIT ?, ?",
        &[ParamValue::Int(20), ParamValue::Int(20)],
    );
    let ShardPlan::Select { parts, merge, .. } = p else {
        panic!()
    };
    assert!(parts
        .iter()
        .all(|x| x.sql.ends_with("ORDER BY 1 ASC LIMIT 0, 40")));
    assert_eq!(
        merge.limit,
        Some(crate::merge::Limit {
            offset: 20,
            count: 20
        })
    );
}

#[test]
fn insert_rows_with_placeholders() {
    let p = with_params(
        "INSERT INTO post_reply (id, tid, subject) VALUES (?, ?, ?), (?, ?, ?)",
        &[
            ParamValue::Int(1),
            ParamValue::Int(4),
            ParamValue::Bytes("中文😀".as_bytes().to_vec()),
            ParamValue::Int(2),
            ParamValue::Int(5),
            ParamValue::Null,
        ],
    );
    assert_eq!(
        sqls(&p),
        vec![
            (
                0,
                "INSERT INTO post_reply_0 (id, tid, subject) VALUES (1, 4, '中文😀')".to_string()
            ),
            (
                1,
                "INSERT INTO post_reply_1 (id, tid, subject) VALUES (2, 5, NULL)".to_string()
            ),
        ]
    );
}

#[test]
fn value_rendering() {
    let p = with_params(
        "SELECT ?, ?, ?, ?, ? FROM post_reply WHERE tid = 1",
        &[
            ParamValue::Float(1.5),
            ParamValue::Float(-2.0),
            ParamValue::Bytes(vec![0xff, 0x00, b'\'']),
            ParamValue::Bytes(b"a\0b".to_vec()),
            ParamValue::Int(i64::MIN),
        ],
    );
    assert_eq!(
        sqls(&p)[0].1,
        r"SELECT 1.5e0 AS `?`, (-2e0) AS `?`, X'FF0027' AS `?`, 'a\0b' AS `?`, (-9223372036854775808) AS `?` FROM post_reply_1 AS post_reply WHERE tid = 1"
    );
    // The server names such columns after the client's text.
    let p = with_params(
        "SELECT id, ? +  1, CONCAT(subject, ?) FROM post_reply WHERE tid = ?",
        &[
            ParamValue::Int(1),
            ParamValue::Bytes(b"x".to_vec()),
            ParamValue::Int(1),
        ],
    );
    assert_eq!(
        sqls(&p)[0].1,
        "SELECT id, 1 + 1 AS `? +  1`, CONCAT(subject, 'x') AS `CONCAT(subject, ?)` FROM post_reply_1 AS post_reply WHERE tid = 1"
    );
}

#[test]
fn placeholder_count_ignores_literals_and_comments() {
    assert_eq!(
        count_placeholders("SELECT '?', `?`, ? /* ? */ FROM t WHERE a = ? -- ?"),
        Some(2)
    );
    assert_eq!(count_placeholders("SELECT 'unterminated"), None);
    let p = with_params(
        "SELECT id FROM post_reply WHERE subject = 'why?' AND tid = ?",
        &[ParamValue::Int(2)],
    );
    assert_eq!(
        sqls(&p),
        vec![(
            2,
            "SELECT id FROM post_reply_2 AS post_reply WHERE subject = 'why?' AND tid = 2".to_string()
        )]
    );
}

#[test]
fn parameter_problems() {
    let e = plan_with_params(
        "SELECT id FROM post_reply WHERE tid = ?",
        &[],
        Some("test"),
        &rules(),
    )
    .unwrap_err();
    assert_eq!(
        e.0,
        "sluice: the statement has 1 placeholders but 0 parameters were given"
    );
    let e = plan_with_params(
        "SELECT id FROM post_reply WHERE tid = ?",
        &[ParamValue::Float(f64::NAN)],
        Some("test"),
        &rules(),
    )
    .unwrap_err();
    assert_eq!(e.0, "sluice: a NaN or infinite parameter is not a MySQL value");
    // Not a sharded table: nothing to do, the caller prepares it as usual.
    assert_eq!(
        plan_with_params(
            "SELECT ? FROM users",
            &[ParamValue::Int(1)],
            Some("test"),
            &rules()
        )
        .unwrap(),
        None
    );
}
