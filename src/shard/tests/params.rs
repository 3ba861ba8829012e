//! Prepared statements: parameters substituted as literals before planning.

use super::*;

/// A session with `SET NAMES utf8mb4` (its default collation).
fn utf8() -> Charset {
    Charset::from_session(
        "utf8mb4",
        "utf8mb4",
        "utf8mb4_general_ci",
        "utf8mb4_general_ci",
        "",
        4,
    )
}

fn with_params(sql: &str, params: &[ParamValue]) -> ShardPlan {
    with_charset(sql, params, &utf8()).unwrap().unwrap()
}

fn with_charset(sql: &str, params: &[ParamValue], cs: &Charset) -> Result<Option<ShardPlan>, Refusal> {
    plan_with_charset(sql, params, cs, Some("test"), &rules())
}

#[test]
fn key_placeholder_routes() {
    let p = with_params(
        "SELECT id, subject FROM post_reply WHERE tid = ? AND subject = ?",
        &[ParamValue::Int(5), ParamValue::Bytes(b"it's a \\ test".to_vec())],
    );
    assert_eq!(
        sqls(&p),
        vec![(1, "SELECT id, subject FROM post_reply_1 AS post_reply WHERE tid = 5 AND subject = _utf8mb4 X'697427732061205C2074657374'".to_string())]
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
                "INSERT INTO post_reply_0 (id, tid, subject) VALUES (1, 4, _utf8mb4 X'E4B8ADE69687F09F9880')"
                    .to_string()
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
        "SELECT 1.5e0 AS `?`, (-2e0) AS `?`, _utf8mb4 X'FF0027' AS `?`, _utf8mb4 X'610062' AS `?`, (-9223372036854775808) AS `?` FROM post_reply_1 AS post_reply WHERE tid = 1"
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

/// Issue 15's injection: `E4 B8 AD 5C` is 中 and `\` in UTF-8 but two GBK characters, the
/// second ending in 0x5C; escaped as UTF-8 (`… 5C 5C`) its closing quote would be escaped in
/// GBK and the next parameter would run as SQL. Written as hex, no byte of a value is ever
/// read as SQL, in any character set.
#[test]
fn string_parameters_are_hex_in_multibyte_charsets() {
    let gbk = Charset::from_session("gbk", "gbk", "gbk_chinese_ci", "gbk_chinese_ci", "", 2);
    assert!(!gbk.lexes_like_utf8());
    let p = with_charset(
        "SELECT id, subject FROM post_reply WHERE tid = ? AND subject = ? AND subject = ?",
        &[
            ParamValue::Int(1),
            ParamValue::Bytes(vec![0xe4, 0xb8, 0xad, 0x5c]),
            ParamValue::Bytes(b" OR 1=1 UNION SELECT id, subject FROM post_reply_2 -- ".to_vec()),
        ],
        &gbk,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        sqls(&p),
        vec![(
            1,
            "SELECT id, subject FROM post_reply_1 AS post_reply WHERE tid = 1 AND subject = _gbk X'E4B8AD5C' \
             AND subject = ' OR 1=1 UNION SELECT id, subject FROM post_reply_2 -- '"
                .to_string()
        )]
    );
    // A quote inside plain ASCII is doubled, which means one quote in every sql_mode.
    let p = with_charset(
        "SELECT id FROM post_reply WHERE tid = 1 AND subject = ?",
        &[ParamValue::Bytes(b"it's".to_vec())],
        &Charset::default(),
    )
    .unwrap()
    .unwrap();
    assert!(sqls(&p)[0].1.ends_with("subject = 'it''s'"), "{:?}", sqls(&p));
}

#[test]
fn string_parameters_that_cannot_be_bound_exactly_are_refused() {
    let values = [ParamValue::Int(1), ParamValue::Bytes("中\\".as_bytes().to_vec())];
    let sql = "SELECT id FROM post_reply WHERE tid = ? AND subject = ?";
    // Nothing known of the session (its variables could not be read).
    let e = with_charset(sql, &values, &Charset::default()).unwrap_err();
    assert!(e.0.contains("cannot bind a non-ASCII string parameter"), "{e}");
    // GBK with a collation other than its default: the introducer would change it.
    let gbk_bin = Charset::from_session("gbk", "gbk", "gbk_bin", "gbk_chinese_ci", "", 2);
    let e = with_charset(sql, &values, &gbk_bin).unwrap_err();
    assert!(e.0.contains("character_set_client gbk"), "{e}");
    // UTF-8 with another collation: escaping is exact in UTF-8.
    let uni = Charset::from_session(
        "utf8mb4",
        "utf8mb4",
        "utf8mb4_unicode_ci",
        "utf8mb4_general_ci",
        "",
        4,
    );
    let p = with_charset(sql, &values, &uni).unwrap().unwrap();
    assert!(sqls(&p)[0].1.ends_with(r"subject = '中\\'"), "{:?}", sqls(&p));
    // ... but not under NO_BACKSLASH_ESCAPES.
    let nbe = Charset::from_session(
        "utf8mb4",
        "utf8mb4",
        "utf8mb4_unicode_ci",
        "utf8mb4_general_ci",
        "STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES",
        4,
    );
    let e = with_charset(sql, &values, &nbe).unwrap_err();
    assert!(e.0.contains("NO_BACKSLASH_ESCAPES"), "{e}");
    // A name that is not a character set name is never written as an introducer.
    let odd = Charset::from_session("gbk X'00' --", "gbk X'00' --", "a", "a", "", 2);
    assert!(with_charset(sql, &values, &odd).is_err());
}

#[test]
fn typed_parameters() {
    let p = with_params(
        "SELECT ?, ?, ?, ?, ?, ?, ? FROM post_reply WHERE tid = 1",
        &[
            ParamValue::Blob(vec![0xe4, 0x5c, b'\'']),
            ParamValue::Decimal(b"-1.23456789".to_vec()),
            ParamValue::Decimal(b"+.5".to_vec()),
            ParamValue::Temporal(Temporal::DateTime {
                year: 2024,
                month: 1,
                day: 31,
                hour: 23,
                minute: 59,
                second: 58,
                micro: 5,
            }),
            ParamValue::Temporal(Temporal::Date {
                year: 2024,
                month: 2,
                day: 29,
            }),
            ParamValue::Temporal(Temporal::Time {
                negative: true,
                hours: 838,
                minute: 59,
                second: 59,
                micro: 0,
            }),
            ParamValue::Temporal(Temporal::Date {
                year: 0,
                month: 0,
                day: 0,
            }),
        ],
    );
    assert_eq!(
        sqls(&p)[0].1,
        "SELECT _binary X'E45C27' AS `?`, (-1.23456789) AS `?`, 0.5 AS `?`, \
         TIMESTAMP '2024-01-31 23:59:58.000005' AS `?`, DATE '2024-02-29' AS `?`, \
         TIME '-838:59:59' AS `?`, '0000-00-00' AS `?` FROM post_reply_1 AS post_reply WHERE tid = 1"
    );
    for bad in [
        &b"1e5"[..],
        b"1.2.3",
        b"",
        b"-",
        b"0x10",
        b"1;DROP TABLE t",
        &[b'9'; 66],
    ] {
        let e = with_charset(
            "SELECT ? FROM post_reply WHERE tid = 1",
            &[ParamValue::Decimal(bad.to_vec())],
            &utf8(),
        )
        .unwrap_err();
        assert!(e.0.contains("plain decimal number"), "{bad:?}: {e}");
    }
}

/// A key bound as hex routes by its bytes, as the plain literal would.
#[test]
fn hex_bound_keys_route() {
    let rules = ShardRules::new(vec![{
        let mut r = ShardRule::new("test", "users", "name", 3, ShardFn::Hash);
        r.collation = KeyCollation::Ci;
        r
    }])
    .unwrap();
    let plain = plan("SELECT id FROM users WHERE name = '回复'", Some("test"), &rules)
        .unwrap()
        .unwrap();
    let bound = plan_with_charset(
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
    let insert = plan_with_charset(
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
        .map(|x| (x.shard, x.sql.clone(), x.params.clone()))
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
fn prepared_having_parameter_falls_back_to_literals() {
    let p = plan_prepared(
        "SELECT tid, COUNT(*) FROM post_reply GROUP BY tid HAVING COUNT(*) > ? ORDER BY tid LIMIT ?",
        &[ParamValue::Int(2), ParamValue::Bytes(b"5".to_vec())],
        &utf8(),
        Some("test"),
        &rules(),
    )
    .unwrap()
    .unwrap();
    for part in p.parts() {
        assert!(part.params.is_empty() && !part.sql.contains('?'), "{}", part.sql);
    }
}
