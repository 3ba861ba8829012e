//! Prepared statements: planned with their placeholders kept, routed by their values,
//! which are never written into SQL.

use super::*;

/// A session with `SET NAMES utf8mb4`.
fn utf8() -> Charset {
    Charset::from_session("utf8mb4", "", 4)
}

fn with_charset(sql: &str, params: &[ParamValue], cs: &Charset) -> Result<Option<ShardPlan>, Refusal> {
    plan_prepared(sql, params, cs, Some("test"), &rules())
}

fn shards(parts: &[(u32, String, Vec<u16>)]) -> Vec<u32> {
    parts.iter().map(|p| p.0).collect()
}

#[test]
fn key_placeholder_routes() {
    let parts = prepared_parts(
        "SELECT id, subject FROM post_reply WHERE tid = ? AND subject = ?",
        &[ParamValue::Int(5), ParamValue::Bytes(b"it's a \\ test".to_vec())],
        &utf8(),
    );
    assert_eq!(shards(&parts), vec![1]);
    assert_eq!(parts[0].2, vec![0, 1]);
    assert!(
        parts[0].1.ends_with("WHERE tid = ? AND subject = ?"),
        "{}",
        parts[0].1
    );
    let parts = prepared_parts(
        "SELECT id FROM post_reply WHERE tid IN (?, ?, ?)",
        &[
            ParamValue::UInt(4),
            ParamValue::Bytes(b"6".to_vec()),
            ParamValue::Int(-1),
        ],
        &utf8(),
    );
    assert_eq!(shards(&parts), vec![0, 2, 3]);
    let order: Vec<Vec<u16>> = parts.iter().map(|p| p.2.clone()).collect();
    assert_eq!(order, vec![vec![0], vec![1], vec![2]]);
}

#[test]
fn limit_placeholders_with_values() {
    let p = with_charset(
        "SELECT id FROM post_reply ORDER BY id LIMIT ?, ?",
        &[ParamValue::Int(20), ParamValue::Int(20)],
        &utf8(),
    )
    .unwrap()
    .unwrap();
    let ShardPlan::Select { parts, merge, .. } = p else {
        panic!()
    };
    assert!(parts
        .iter()
        .all(|x| x.sql.text().ends_with("ORDER BY 1 ASC LIMIT 0, 40")));
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
    let parts = prepared_parts(
        "INSERT INTO post_reply (id, tid, subject) VALUES (?, ?, ?), (?, ?, ?)",
        &[
            ParamValue::Int(1),
            ParamValue::Int(4),
            ParamValue::Bytes("中文😀".as_bytes().to_vec()),
            ParamValue::Int(2),
            ParamValue::Int(5),
            ParamValue::Null,
        ],
        &utf8(),
    );
    assert_eq!(
        parts,
        vec![
            (
                0,
                "INSERT INTO post_reply_0 (id, tid, subject) VALUES (?, ?, ?)".to_string(),
                vec![0, 1, 2]
            ),
            (
                1,
                "INSERT INTO post_reply_1 (id, tid, subject) VALUES (?, ?, ?)".to_string(),
                vec![3, 4, 5]
            ),
        ]
    );
}

/// No value reaches the SQL, whatever it holds: bytes that are not UTF-8, NUL, quotes,
/// text that would be SQL, NaN, malformed DECIMAL text, zero dates. The server reads each
/// as the parameter it is.
#[test]
fn values_are_never_written_into_sql() {
    let values = [
        ParamValue::Bytes(vec![0xff, 0x00, b'\'']),
        ParamValue::Bytes(b"x' OR 1=1 -- ".to_vec()),
        ParamValue::Float(f64::NAN),
        ParamValue::Decimal(b"1;DROP TABLE t".to_vec()),
        ParamValue::Blob(vec![0xe4, 0x5c, b'\'']),
        ParamValue::Temporal(Temporal::Date {
            year: 0,
            month: 0,
            day: 0,
        }),
        ParamValue::Int(1),
    ];
    let parts = prepared_parts(
        "SELECT ?, ?, ?, ?, ?, ? FROM post_reply WHERE tid = ?",
        &values,
        &Charset::default(),
    );
    assert_eq!(shards(&parts), vec![1]);
    assert_eq!(parts[0].2, vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        parts[0].1,
        "SELECT ? AS `?`, ? AS `?`, ? AS `?`, ? AS `?`, ? AS `?`, ? AS `?` FROM post_reply_1 AS post_reply WHERE tid = ?"
    );
    // The server names such columns after the client's text.
    let parts = prepared_parts(
        "SELECT id, ? +  1, CONCAT(subject, ?) FROM post_reply WHERE tid = ?",
        &[
            ParamValue::Int(1),
            ParamValue::Bytes(b"x".to_vec()),
            ParamValue::Int(1),
        ],
        &utf8(),
    );
    assert!(
        parts[0]
            .1
            .starts_with("SELECT id, ? + 1 AS `? +  1`, CONCAT(subject, ?) AS `CONCAT(subject, ?)`"),
        "{}",
        parts[0].1
    );
}

#[test]
fn placeholder_count_ignores_literals_and_comments() {
    assert_eq!(
        count_placeholders("SELECT '?', `?`, ? /* ? */ FROM t WHERE a = ? -- ?"),
        Some(2)
    );
    assert_eq!(count_placeholders("SELECT 'unterminated"), None);
    let parts = prepared_parts(
        "SELECT id FROM post_reply WHERE subject = 'why?' AND tid = ?",
        &[ParamValue::Int(2)],
        &utf8(),
    );
    assert_eq!(shards(&parts), vec![2]);
    assert!(
        parts[0].1.ends_with("WHERE subject = 'why?' AND tid = ?"),
        "{}",
        parts[0].1
    );
    assert_eq!(parts[0].2, vec![0]);
}

#[test]
fn parameter_problems() {
    let e = with_charset("SELECT id FROM post_reply WHERE tid = ?", &[], &utf8()).unwrap_err();
    assert!(e.0.contains("planned with its parameter values"), "{e}");
    // NaN places nothing: every sub-table, the server reads the parameter.
    let parts = prepared_parts(
        "SELECT id FROM post_reply WHERE tid = ?",
        &[ParamValue::Float(f64::NAN)],
        &utf8(),
    );
    assert_eq!(shards(&parts), vec![0, 1, 2, 3]);
    // Not a sharded table: nothing to do, the caller prepares it as usual.
    assert_eq!(
        with_charset("SELECT ? FROM users", &[ParamValue::Int(1)], &utf8()).unwrap(),
        None
    );
    // DDL cannot carry parameters.
    let e = with_charset(
        "ALTER TABLE post_reply ADD COLUMN z INT DEFAULT ?",
        &[ParamValue::Int(1)],
        &utf8(),
    )
    .unwrap_err();
    assert!(e.0.contains("cannot rewrite this statement"), "{e}");
}

/// Issue 15's injection (`E4 B8 AD 5C` is 中 and `\` in UTF-8 but two GBK characters, the
/// second ending in 0x5C) cannot happen: no value is written into SQL. A non-ASCII string
/// in a client character set other than UTF-8 places nothing (the server converts it
/// before comparing): every sub-table is asked.
#[test]
fn string_parameters_in_other_character_sets_place_nothing() {
    let gbk = Charset::from_session("gbk", "", 2);
    assert!(!gbk.lexes_like_utf8());
    let injection = b" OR 1=1 UNION SELECT id, subject FROM post_reply_2 -- ".to_vec();
    let parts = prepared_parts(
        "SELECT id, subject FROM post_reply WHERE tid = ? AND subject = ? AND subject = ?",
        &[
            ParamValue::Int(1),
            ParamValue::Bytes(vec![0xe4, 0xb8, 0xad, 0x5c]),
            ParamValue::Bytes(injection),
        ],
        &gbk,
    );
    assert_eq!(shards(&parts), vec![1]);
    assert!(
        parts[0].1.ends_with("AND subject = ? AND subject = ?"),
        "{}",
        parts[0].1
    );
    let hash = ShardRules::new(vec![ShardRule::new("test", "users", "name", 3, ShardFn::Hash)]).unwrap();
    let lookup = |cs: &Charset| {
        plan_prepared(
            "SELECT id FROM users WHERE name = ?",
            &[ParamValue::Bytes("回复".as_bytes().to_vec())],
            cs,
            Some("test"),
            &hash,
        )
        .unwrap()
        .unwrap()
        .parts()
        .len()
    };
    assert_eq!(lookup(&utf8()), 1);
    assert_eq!(lookup(&gbk), 3);
    assert_eq!(lookup(&Charset::default()), 3);
}

/// A string key bound as a parameter routes by its bytes, as the plain literal would.
#[test]
fn string_keys_bound_as_parameters_route() {
    let rules = ShardRules::new(vec![{
        let mut r = ShardRule::new("test", "users", "name", 3, ShardFn::Hash);
        r.collation = KeyCollation::Ci;
        r
    }])
    .unwrap();
    let plain = plan("SELECT id FROM users WHERE name = '回复'", Some("test"), &rules)
        .unwrap()
        .unwrap();
    let bound = plan_prepared(
        "SELECT id FROM users WHERE name = ?",
        &[ParamValue::Bytes("回复".as_bytes().to_vec())],
        &utf8(),
        Some("test"),
        &rules,
    )
    .unwrap()
    .unwrap();
    assert_eq!(plain.parts().len(), 1);
    assert_eq!(bound.parts().len(), 1);
    assert_eq!(plain.parts()[0].shard, bound.parts()[0].shard);
    let insert = plan_prepared(
        "INSERT INTO users (id, name) VALUES (?, ?)",
        &[ParamValue::Int(1), ParamValue::Blob("回复".as_bytes().to_vec())],
        &utf8(),
        Some("test"),
        &rules,
    )
    .unwrap()
    .unwrap();
    assert_eq!(insert.parts()[0].shard, plain.parts()[0].shard);
}

// --- plan_prepared: SELECTs keep their placeholders --------------------------------------

fn prepared(sql: &str, params: &[ParamValue]) -> Vec<(u32, String, Vec<u16>)> {
    let p = plan_prepared(sql, params, &utf8(), Some("test"), &rules())
        .unwrap()
        .unwrap();
    p.parts()
        .iter()
        .map(|x| (x.shard, x.sql.to_string(), x.params.clone()))
        .collect()
}

#[test]
fn prepared_select_keeps_placeholders_and_routes_by_value() {
    let parts = prepared(
        "SELECT amount * ?, id FROM post_reply WHERE tid = ? AND amount = ?",
        &[
            ParamValue::Decimal(b"1.5".to_vec()),
            ParamValue::Int(6),
            ParamValue::Decimal(b"2".to_vec()),
        ],
    );
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].0, 2);
    assert!(!parts[0].1.contains("1.5"), "{}", parts[0].1);
    assert_eq!(parts[0].2, vec![0, 1, 2]);
    // IN list values route; each shard asked keeps the placeholders of its own values.
    let parts = prepared(
        "SELECT id FROM post_reply WHERE tid IN (?, ?) ORDER BY id",
        &[ParamValue::Int(1), ParamValue::Int(5)],
    );
    assert_eq!(parts.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1]);
    let parts = prepared(
        "SELECT id FROM post_reply WHERE tid IN (?, ?) ORDER BY id",
        &[ParamValue::Int(1), ParamValue::Int(2)],
    );
    assert_eq!(parts.iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(parts[0].2, vec![0]);
    assert_eq!(parts[1].2, vec![1]);
}

#[test]
fn prepared_rewrites_keep_each_parameter_in_place() {
    // AVG(x * ?) becomes SUM(x * ?) and a hidden COUNT(x * ?): the parameter twice; the
    // ORDER BY term with a parameter becomes a hidden column after them.
    let parts = prepared(
        "SELECT user_id, AVG(score * ?) FROM post_reply WHERE user_id < ? GROUP BY user_id ORDER BY MAX(score + ?)",
        &[ParamValue::Int(2), ParamValue::Int(50), ParamValue::Int(7)],
    );
    assert_eq!(parts.len(), 4);
    for (_, sql, order) in &parts {
        // The alias `AVG(score * ?)` is a quoted name (the client's column name).
        assert_eq!(sql.matches('?').count(), order.len() + 1, "{sql}");
        assert_eq!(order, &vec![0, 0, 2, 1], "{sql}");
        assert!(!sql.contains("?0") && !sql.contains("?1"), "{sql}");
    }
    // A `?` inside a string literal or quoted name is not a placeholder.
    let parts = prepared(
        "SELECT 'a?b' AS `q?`, ? FROM post_reply WHERE tid = 4",
        &[ParamValue::Int(1)],
    );
    assert_eq!(parts[0].2, vec![0]);
    assert!(parts[0].1.contains("'a?b'"), "{}", parts[0].1);
}

#[test]
fn prepared_limit_takes_whole_numbers_in_any_form() {
    for v in [
        ParamValue::Int(3),
        ParamValue::UInt(3),
        ParamValue::Bytes(b"3".to_vec()),
        ParamValue::Float(3.0),
        ParamValue::Decimal(b"3".to_vec()),
    ] {
        let parts = prepared(
            "SELECT id FROM post_reply ORDER BY id LIMIT ?",
            std::slice::from_ref(&v),
        );
        assert_eq!(parts.len(), 4);
        for p in &parts {
            assert!(p.1.ends_with("LIMIT 0, 3"), "{v:?}: {}", p.1);
            assert!(p.2.is_empty());
        }
    }
    for v in [
        ParamValue::Float(2.5),
        ParamValue::Int(-1),
        ParamValue::Bytes(b"x".to_vec()),
    ] {
        let e = plan_prepared(
            "SELECT id FROM post_reply ORDER BY id LIMIT ?",
            std::slice::from_ref(&v),
            &utf8(),
            Some("test"),
            &rules(),
        )
        .unwrap_err();
        assert!(e.0.contains("LIMIT"), "{v:?}: {e}");
    }
}

#[test]
fn prepared_having_parameter_is_compared_by_the_merge() {
    let p = plan_prepared(
        "SELECT tid, COUNT(*) FROM post_reply GROUP BY tid HAVING COUNT(*) > ? ORDER BY tid LIMIT ?",
        &[ParamValue::Int(2), ParamValue::Bytes(b"5".to_vec())],
        &utf8(),
        Some("test"),
        &rules(),
    )
    .unwrap()
    .unwrap();
    // HAVING is evaluated by the merge (with the parameter's value); LIMIT by its count.
    for part in p.parts() {
        assert!(
            part.params.is_empty() && !part.sql.text().contains('?'),
            "{}",
            part.sql
        );
    }
}

/// A prepared SELECT has no literal plan to fall back on: what the text plan refuses
/// for reads (executable comments, `:=` across sub-tables) is refused here too; `0x…`
/// stays as the client wrote it, and an expression holding `?` is named by its text.
#[test]
fn prepared_reads_keep_the_text_plans_read_rules() {
    let one = [ParamValue::Int(1)];
    let m = with_charset(
        "SELECT id FROM post_reply WHERE tid = ? /*!50700 OR tid = 2 */",
        &one,
        &utf8(),
    )
    .unwrap_err()
    .0;
    assert!(m.contains("executable comments"), "{m}");
    let m = with_charset(
        "SELECT id, @rn := @rn + 1 FROM post_reply WHERE x = ?",
        &one,
        &utf8(),
    )
    .unwrap_err()
    .0;
    assert!(m.contains("user variable"), "{m}");
    let parts = prepared_parts(
        "SELECT id, @rn := @rn + 1 FROM post_reply WHERE tid = ?",
        &one,
        &utf8(),
    );
    assert_eq!(shards(&parts), vec![1]);
    let parts = prepared_parts(
        "SELECT id, ?  +  1 FROM post_reply WHERE tid = 1 AND x = 0x141",
        &one,
        &utf8(),
    );
    assert_eq!(
        parts[0].1,
        "SELECT id, ? + 1 AS `?  +  1` FROM post_reply_1 AS post_reply WHERE tid = 1 AND x = 0x141"
    );
}
