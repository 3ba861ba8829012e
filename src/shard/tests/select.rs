//! SELECT: routing, IN splitting, the per-shard statements and the merge specs.

use super::*;
use crate::merge::Limit;

const SEED: &str = "SELECT * FROM post_reply WHERE `user_id`=123 AND `tid` \
    IN(228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839) ORDER BY `create_time` DESC LIMIT 20, 20";

/// The values of the first `IN (…)` list of a statement.
fn in_list(sql: &str) -> Vec<u64> {
    let start = sql.find("IN (").unwrap() + 4;
    let end = start + sql[start..].find(')').unwrap();
    sql[start..end]
        .split(',')
        .map(|v| v.trim().parse().unwrap())
        .collect()
}

#[test]
fn seed_query_splits_the_in_list_and_rewrites_the_limit() {
    let (parts, merge, wild) = select(SEED);
    assert_eq!(parts.len(), 4);
    let all = [228596u64, 225232, 228689, 228601, 228638, 209218, 224795, 228839];
    let mut seen = Vec::new();
    for (shard, sql) in &parts {
        let values = in_list(sql);
        assert!(!values.is_empty());
        for v in &values {
            assert_eq!(v % 4, u64::from(*shard), "{sql}");
        }
        let expected: Vec<u64> = all
            .iter()
            .copied()
            .filter(|v| v % 4 == u64::from(*shard))
            .collect();
        assert_eq!(values, expected, "{sql}");
        seen.extend(values);
        assert!(sql.ends_with("ORDER BY `create_time` DESC LIMIT 0, 40"), "{sql}");
        assert!(
            sql.contains(&format!("FROM post_reply_{shard} AS post_reply WHERE")),
            "{sql}"
        );
    }
    seen.sort_unstable();
    let mut all = all.to_vec();
    all.sort_unstable();
    assert_eq!(seen, all, "every value exactly once");
    assert_eq!(
        parts[0].1,
        "SELECT *, `create_time` FROM post_reply_0 AS post_reply WHERE `user_id` = 123 AND `tid` \
         IN (228596, 225232) ORDER BY `create_time` DESC LIMIT 0, 40"
    );
    // The sort key is a helper column after the `*` columns; offset and count apply after
    // the merge.
    assert_eq!(wild, Some(1));
    assert_eq!(merge.visible, 0);
    assert_eq!(merge.order_by, vec![desc(0)]);
    assert_eq!(
        merge.limit,
        Some(Limit {
            offset: 20,
            count: 20
        })
    );
    assert_eq!(merge.group, None);
    assert!(!merge.distinct);
    // With 6 table columns + the helper, the client sees 6 columns, sorted by column 6.
    let bound = bind_merge(&merge, wild, 7).unwrap();
    assert_eq!(bound.visible, 6);
    assert_eq!(bound.order_by, vec![desc(6)]);
    assert!(bind_merge(&merge, wild, 0).is_err());
}

#[test]
fn one_shard_keeps_the_statement() {
    let (parts, merge, wild) =
        select("SELECT id, subject FROM post_reply WHERE tid = 5 ORDER BY id LIMIT 10, 5");
    assert_eq!(
        parts,
        vec![(
            1,
            "SELECT id, subject FROM post_reply_1 AS post_reply WHERE tid = 5 ORDER BY id LIMIT 10, 5"
                .to_string()
        )]
    );
    assert_eq!(merge, MergeSpec::concat(2));
    assert_eq!(wild, None);
    // Aggregates, GROUP_CONCAT and window functions need no merge on one shard.
    let (parts, merge, _) = select(
        "SELECT user_id, GROUP_CONCAT(id), ROW_NUMBER() OVER (ORDER BY id) FROM post_reply WHERE tid = 7 GROUP BY user_id",
    );
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].0, 3);
    assert_eq!(merge, MergeSpec::concat(3));
    let (_, merge, wild) = select("SELECT * FROM post_reply WHERE tid = 5");
    assert_eq!((merge, wild), (MergeSpec::concat(0), Some(0)));
}

fn shards_of(sql: &str) -> Vec<u32> {
    planned(sql).parts().iter().map(|p| p.shard).collect()
}

#[test]
fn routing_forms() {
    for w in [
        "tid = 5",
        "5 = tid",
        "(tid = 5)",
        "tid <=> 5",
        "tid = '5'",
        "tid = ' 5 '",
        "tid = 5.0",
        "post_reply.tid = 5",
        "test.post_reply.tid = 5",
        "TID = 5",
        "`tid` = 5",
        "tid = +5",
        "tid = 5 AND user_id = 3",
        "user_id = 3 AND (tid = 5 AND subject = 'x')",
        "tid IN (5)",
        "tid IN (5, 9, 13)",
        "tid = 5 OR tid = 9",
    ] {
        assert_eq!(
            shards_of(&format!("SELECT id FROM post_reply WHERE {w}")),
            vec![1],
            "{w}"
        );
    }
    assert_eq!(shards_of("SELECT id FROM post_reply WHERE tid = -1"), vec![3]);
    assert_eq!(
        shards_of("SELECT id FROM post_reply WHERE tid = 1 OR tid = 6"),
        vec![1, 2]
    );
    assert_eq!(
        shards_of("SELECT id FROM post_reply WHERE (tid = 1 OR tid = 2) AND user_id = 3"),
        vec![1, 2]
    );
    assert_eq!(
        shards_of("SELECT id FROM post_reply WHERE tid IN (1, 2) AND tid IN (2, 3)"),
        vec![2]
    );
    assert_eq!(shards_of("SELECT id FROM post_reply p WHERE p.tid = 2"), vec![2]);
    // Every shard: no key condition, a condition that is not an equality with literals, NOT,
    // OR with something else, a key of another table, a literal of unknown shard.
    for w in [
        "user_id = 5",
        "tid > 5",
        "tid = user_id",
        "tid IN (1, user_id)",
        "tid = 1 + 1",
        "tid NOT IN (1)",
        "NOT tid = 1",
        "tid = 1 OR user_id = 2",
        "tid = '5x'",
        "tid = 5.5",
        "tid = 5e0",
        "tid IS NULL",
        "tid = NULL",
        "tid IN (1, NULL)",
        "tid = ?x",
        "other.tid = 5",
        "tid BETWEEN 1 AND 2",
        "tid IN (SELECT id FROM users)",
    ] {
        if w.contains('?') {
            continue;
        }
        assert_eq!(
            shards_of(&format!("SELECT id FROM post_reply WHERE {w}")),
            vec![0, 1, 2, 3],
            "{w}"
        );
    }
    assert_eq!(
        shards_of("SELECT id FROM post_reply p JOIN users u ON u.id = p.user_id WHERE u.tid = 5"),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        shards_of("SELECT id FROM post_reply p JOIN users u ON u.id = p.user_id WHERE p.tid = 5"),
        vec![1]
    );
}

#[test]
fn misread_operators_are_not_routed() {
    // To MariaDB `||` is OR and XOR binds looser than AND; sqlparser reads both as tighter
    // than `=`. Such a condition is sent unchanged to every shard.
    for w in [
        "tid = 1 AND x = 2 || y = 3",
        "tid = 1 AND x = 2 XOR y = 3",
        "tid IN (1, 2) AND (a || b)",
    ] {
        let (parts, _, _) = select(&format!("SELECT id FROM post_reply WHERE {w}"));
        assert_eq!(parts.len(), 4, "{w}");
        for (s, sql) in parts {
            assert_eq!(
                sql,
                format!("SELECT id FROM post_reply_{s} AS post_reply WHERE {w}")
            );
        }
    }
    assert_eq!(
        write("UPDATE post_reply SET x = 1 WHERE tid = 1 AND x = 2 || y = 3")
            .0
            .len(),
        4
    );
    assert_eq!(
        write("DELETE FROM post_reply WHERE tid = 1 AND x = 2 XOR y = 3")
            .0
            .len(),
        4
    );
}

#[test]
fn contradiction_asks_one_shard() {
    // No row can match: shard 0 answers (no rows, or the aggregate of nothing), with the
    // right columns.
    let (parts, merge, _) = select("SELECT COUNT(*) FROM post_reply WHERE tid = 1 AND tid = 2");
    assert_eq!(
        parts,
        vec![(
            0,
            "SELECT COUNT(*) FROM post_reply_0 AS post_reply WHERE tid = 1 AND tid = 2".to_string()
        )]
    );
    assert_eq!(merge, MergeSpec::concat(1));
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE tid IN (1, 5) AND tid IN (2, 6)");
    assert_eq!(
        parts,
        vec![(
            0,
            "SELECT id FROM post_reply_0 AS post_reply WHERE false AND false".to_string()
        )]
    );
}

#[test]
fn in_lists_keep_duplicates_and_order() {
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE tid IN (9, 5, 2, 5, 1)");
    assert_eq!(
        parts,
        vec![
            (
                1,
                "SELECT id FROM post_reply_1 AS post_reply WHERE tid IN (9, 5, 5, 1)".to_string()
            ),
            (
                2,
                "SELECT id FROM post_reply_2 AS post_reply WHERE tid IN (2)".to_string()
            ),
        ]
    );
}

#[test]
fn or_of_in_lists_is_pruned_per_shard() {
    let (parts, _, _) =
        select("SELECT id FROM post_reply WHERE (tid IN (1, 2) AND x = 1) OR (tid IN (5, 3) AND x = 2)");
    assert_eq!(
        parts,
        vec![
            (1, "SELECT id FROM post_reply_1 AS post_reply WHERE (tid IN (1) AND x = 1) OR (tid IN (5) AND x = 2)".to_string()),
            (2, "SELECT id FROM post_reply_2 AS post_reply WHERE (tid IN (2) AND x = 1) OR (false AND x = 2)".to_string()),
            (3, "SELECT id FROM post_reply_3 AS post_reply WHERE (false AND x = 1) OR (tid IN (3) AND x = 2)".to_string()),
        ]
    );
    // An IN list beside an unrouted disjunct is still cut per shard (exact: a row of shard
    // s has a key of shard s), but every shard is asked.
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE tid IN (1, 2) OR user_id = 3");
    assert_eq!(parts.len(), 4);
    assert_eq!(
        parts[0].1,
        "SELECT id FROM post_reply_0 AS post_reply WHERE false OR user_id = 3"
    );
    assert_eq!(
        parts[1].1,
        "SELECT id FROM post_reply_1 AS post_reply WHERE tid IN (1) OR user_id = 3"
    );
    // Under NOT nothing is cut.
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE NOT tid IN (1, 2)");
    assert!(parts.iter().all(|(_, s)| s.ends_with("WHERE NOT tid IN (1, 2)")));
}

#[test]
fn table_names_aliases_and_qualifiers() {
    let one = |sql: &str| select(sql).0.remove(0).1;
    assert_eq!(
        one("SELECT id FROM test.post_reply WHERE tid = 1"),
        "SELECT id FROM test.post_reply_1 AS post_reply WHERE tid = 1"
    );
    assert_eq!(
        one("SELECT id FROM `post_reply` WHERE tid = 1"),
        "SELECT id FROM `post_reply_1` AS `post_reply` WHERE tid = 1"
    );
    assert_eq!(
        one("SELECT id FROM `test`.`post_reply` WHERE tid = 1"),
        "SELECT id FROM `test`.`post_reply_1` AS `post_reply` WHERE tid = 1"
    );
    assert_eq!(
        one("SELECT p.id FROM post_reply p WHERE p.tid = 1"),
        "SELECT p.id FROM post_reply_1 p WHERE p.tid = 1"
    );
    assert_eq!(
        one("SELECT p.id FROM post_reply AS p WHERE p.tid = 1"),
        "SELECT p.id FROM post_reply_1 AS p WHERE p.tid = 1"
    );
    assert_eq!(
        one("SELECT post_reply.id, post_reply.* FROM post_reply WHERE post_reply.tid = 1"),
        "SELECT post_reply.id, post_reply.* FROM post_reply_1 AS post_reply WHERE post_reply.tid = 1"
    );
    // `db.table.column` cannot name the alias: it becomes `table.column`.
    assert_eq!(
        one("SELECT test.post_reply.id, test.post_reply.* FROM test.post_reply WHERE test.post_reply.tid = 1 ORDER BY test.post_reply.id"),
        "SELECT post_reply.id, post_reply.* FROM test.post_reply_1 AS post_reply WHERE post_reply.tid = 1 ORDER BY post_reply.id"
    );
    // Another database, no current database, another case: not the sharded table.
    assert_eq!(run("SELECT id FROM other.post_reply").unwrap(), None);
    assert_eq!(plan("SELECT id FROM post_reply", None, &rules()).unwrap(), None);
    assert_eq!(
        plan("SELECT id FROM post_reply", Some("other"), &rules()).unwrap(),
        None
    );
    assert!(plan("SELECT id FROM test.post_reply", Some("other"), &rules())
        .unwrap()
        .is_some());
    assert_eq!(run("SELECT id FROM POST_REPLY").unwrap(), None);
    let folded = rules().with_lower_case_table_names(true);
    assert!(plan("SELECT id FROM POST_REPLY", Some("test"), &folded)
        .unwrap()
        .is_some());
}

#[test]
fn statements_without_sharded_tables() {
    for sql in [
        "SELECT * FROM users",
        "SELECT * FROM post_reply_0",
        "SELECT * FROM post_reply_archive WHERE tid = 1",
        "SELECT 'post_reply' FROM users",
        "SELECT post_reply FROM other",
        "SELECT * FROM other AS post_reply",
        "SHOW TABLES LIKE 'post_reply%'",
        "INSERT INTO users (id) VALUES (1)",
        "UPDATE users SET post_reply = 1",
        "SELECT * FROM users WHERE id IN (SELECT user_id FROM post_reply_0)",
        "SELECT 1",
        "",
        "SELECT * FROM users -- post_reply",
    ] {
        assert_eq!(run(sql).unwrap(), None, "{sql}");
    }
}

#[test]
fn byte_for_byte_literals() {
    let lits = [
        r"'it''s'",
        r"'a\'b'",
        r"'a\\'",
        r"'a\\\'b'",
        r#""x\"y""#,
        r#""x""y""#,
        "'中文😀'",
        r"'%\_\%'",
        r"'tab\there'",
        "'multi\nline'",
        "''",
        "X'0A1b'",
        "N'n'",
    ];
    for lit in lits {
        let sql = format!("SELECT id, {lit} FROM post_reply WHERE subject = {lit} AND message LIKE {lit}");
        let (parts, _, _) = select(&sql);
        assert_eq!(parts.len(), 4);
        for (_, s) in &parts {
            assert_eq!(s.matches(lit).count(), 3, "{lit} in {s}");
        }
        let sql = format!("INSERT INTO post_reply (id, tid, subject) VALUES (1, 2, {lit}), (2, 3, {lit})");
        let (parts, _) = write(&sql);
        assert_eq!(parts.len(), 2);
        for (_, s) in &parts {
            assert!(s.ends_with(&format!(", {lit})")), "{lit} in {s}");
        }
    }
    // A character set introducer comes back with a space, which MySQL accepts.
    let (parts, _, _) = select("SELECT _utf8mb4'a\\'b' FROM post_reply");
    assert_eq!(
        parts[0].1,
        "SELECT _utf8mb4 'a\\'b' FROM post_reply_0 AS post_reply"
    );
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE subject = 'O\\'Brien' AND tid = 1");
    assert_eq!(
        parts[0].1,
        "SELECT id FROM post_reply_1 AS post_reply WHERE subject = 'O\\'Brien' AND tid = 1"
    );
}

#[test]
fn hex_hybrid_literal_stays_as_written() {
    // `0x141` (a number in numeric context) is not `X'0141'` (a string).
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE tid = 1 AND x = 0x141 AND y = X'05'");
    assert_eq!(
        parts[0].1,
        "SELECT id FROM post_reply_1 AS post_reply WHERE tid = 1 AND x = 0x141 AND y = X'05'"
    );
}

#[test]
fn limit_forms() {
    for (l, o, n) in [
        ("LIMIT 10", 0, 10),
        ("LIMIT 5, 10", 5, 10),
        ("LIMIT 10 OFFSET 5", 5, 10),
        ("LIMIT 0", 0, 0),
    ] {
        let (parts, merge, _) = select(&format!("SELECT id FROM post_reply ORDER BY id {l}"));
        assert_eq!(merge.limit, Some(Limit { offset: o, count: n }), "{l}");
        for (_, s) in parts {
            assert!(s.ends_with(&format!("ORDER BY 1 ASC LIMIT 0, {}", o + n)), "{s}");
        }
    }
    // No ORDER BY: any rows, still o+n from each shard.
    let (parts, merge, _) = select("SELECT id FROM post_reply LIMIT 3, 2");
    assert!(parts[0].1.ends_with("LIMIT 0, 5"));
    assert_eq!(merge.order_by, vec![]);
    assert_eq!(merge.limit, Some(Limit { offset: 3, count: 2 }));
    let (parts, merge, _) = select("SELECT id FROM post_reply LIMIT 18446744073709551615 OFFSET 5");
    assert!(parts[0].1.ends_with("LIMIT 0, 18446744073709551615"));
    assert_eq!(
        merge.limit,
        Some(Limit {
            offset: 5,
            count: u64::MAX
        })
    );
}

#[test]
fn order_by_terms_map_to_columns_or_helpers() {
    let (parts, merge, wild) = select(
        "SELECT id, subject AS s, create_time, user_id + 1 FROM post_reply \
         ORDER BY s DESC, 1, post_reply.create_time ASC, user_id + 1 DESC, message, `s` LIMIT 5",
    );
    assert_eq!(wild, None);
    assert_eq!(merge.visible, 4);
    // By alias, position, column, same expression, then a helper; the repeated `s` adds
    // nothing.
    assert_eq!(merge.order_by, vec![desc(1), asc(0), asc(2), desc(3), asc(4)]);
    // The shards sort by exactly the columns the merge compares.
    assert_eq!(
        parts[0].1,
        "SELECT id, subject AS s, create_time, user_id + 1, message FROM post_reply_0 AS post_reply \
         ORDER BY 2 DESC, 1 ASC, 3 ASC, 4 DESC, 5 ASC LIMIT 0, 5"
    );
    // ORDER BY NULL asks for no order.
    let (parts, merge, _) = select("SELECT id FROM post_reply ORDER BY NULL");
    assert_eq!(merge.order_by, vec![]);
    assert!(parts[0].1.ends_with("ORDER BY NULL"));
    // A random order: each shard sorts by its helper column, the merge by the same values.
    let (parts, merge, _) = select("SELECT id FROM post_reply ORDER BY RAND() LIMIT 3");
    assert_eq!(
        parts[0].1,
        "SELECT id, RAND() FROM post_reply_0 AS post_reply ORDER BY 2 ASC LIMIT 0, 3"
    );
    assert_eq!(merge.order_by, vec![asc(1)]);
}

#[test]
fn select_star_with_order_by() {
    let (parts, merge, wild) = select("SELECT * FROM post_reply ORDER BY create_time DESC, id");
    assert_eq!(
        parts[2].1,
        "SELECT *, create_time, id FROM post_reply_2 AS post_reply ORDER BY create_time DESC, id"
    );
    assert_eq!(wild, Some(2));
    assert_eq!(merge.order_by, vec![desc(0), asc(1)]);
    let bound = bind_merge(&merge, wild, 9).unwrap();
    assert_eq!(bound.visible, 7);
    assert_eq!(bound.order_by, vec![desc(7), asc(8)]);
    // A term naming a listed item sorts by that item's expression.
    let (parts, _, wild) =
        select("SELECT p.*, u.name AS n FROM post_reply p JOIN users u ON u.id = p.user_id ORDER BY n");
    assert_eq!(wild, Some(1));
    assert_eq!(
        parts[0].1,
        "SELECT p.*, u.name AS n, u.name FROM post_reply_0 p JOIN users u ON u.id = p.user_id ORDER BY n"
    );
}

#[test]
fn expression_columns_keep_the_clients_names() {
    for (item, alias) in [
        ("tid  +  1", Some("`tid  +  1`")),
        ("cast(tid as char)", Some("`cast(tid as char)`")),
        ("CAST(tid AS CHAR)", None),
        ("tid /* c */ + 1", Some("`tid /* c */ + 1`")),
        ("tid + 1", None),
        ("'it''s'", None),
        ("tid", None),
    ] {
        let (parts, _, _) = select(&format!("SELECT id, {item} FROM post_reply WHERE tid = 1"));
        let sql = &parts[0].1;
        match alias {
            Some(a) => assert!(sql.contains(&format!(" AS {a}")), "{item}: {sql}"),
            None => assert!(!sql.contains(" AS `"), "{item}: {sql}"),
        }
    }
}

#[test]
fn executable_comments_and_assignments_across_shards_are_refused() {
    let m = refused("SELECT id FROM post_reply WHERE tid = 1 /*!50700 OR tid = 2 */");
    assert!(m.contains("executable comments"), "{m}");
    let m = refused("SELECT id FROM post_reply WHERE tid = 1 /*M!100000 OR tid = 2 */");
    assert!(m.contains("executable comments"), "{m}");
    let m = refused("SELECT id, @rn := @rn + 1 FROM post_reply");
    assert!(m.contains("user variable"), "{m}");
    // One sub-table numbers every row itself; a plain comment changes nothing.
    assert_eq!(
        select("SELECT id, @rn := @rn + 1 FROM post_reply WHERE tid = 1")
            .0
            .len(),
        1
    );
    assert_eq!(
        select("SELECT id FROM post_reply /* t */ WHERE tid = 1").0.len(),
        1
    );
}

#[test]
fn sql_prepare_of_a_sharded_statement_is_refused() {
    let m = refused("PREPARE s FROM 'SELECT * FROM post_reply WHERE tid = ?'");
    assert!(m.contains("PREPARE"), "{m}");
    let m = refused("EXECUTE IMMEDIATE 'SELECT COUNT(*) FROM post_reply'");
    assert!(m.contains("EXECUTE IMMEDIATE"), "{m}");
    assert!(run("SELECT 'post_reply' FROM other").unwrap().is_none());
    assert!(run("PREPARE s FROM 'SELECT 1'").unwrap().is_none());
}

/// An IN list of several values that the server compares with a conversion warning (a
/// string that is not a plain integer for an integer key, or strings mixed with numbers:
/// then per row) is neither routed nor pruned: cut down per sub-table it would warn
/// otherwise (`tid IN (' 12 ')` warns nothing where `tid IN ('4', ' 12 ')` warns once).
#[test]
fn in_lists_that_convert_with_warnings_are_not_pruned() {
    for w in ["tid IN ('5', ' 13 ')", "tid IN ('5x', 9)", "tid IN ('5', '9.0')"] {
        let sql = format!("SELECT id FROM post_reply WHERE {w}");
        let parts = sqls(&planned(&sql));
        assert_eq!(parts.len(), 4, "{w}");
        for (_, s) in &parts {
            assert!(s.contains(w.trim_start_matches("tid ")), "{w}: {s}");
        }
    }
    // Plain integers, as numbers or strings, mixed: routed and pruned.
    assert_eq!(
        shards_of("SELECT id FROM post_reply WHERE tid IN ('5', 6, -7)"),
        vec![1, 2]
    );
    // One value: an equality to the server, routed as before.
    assert_eq!(
        shards_of("SELECT id FROM post_reply WHERE tid IN (' 13 ')"),
        vec![1]
    );
}
