//! SELECT merge specs: aggregates, GROUP BY/HAVING, COUNT/SUM/AVG(DISTINCT), DISTINCT,
//! joins and GROUP_CONCAT (split from select.rs).

use super::*;
use crate::merge::{AggKind, AggSpec, CmpOp, Expr as MExpr, GroupSpec, Limit, Value as MValue};

#[test]
fn plain_aggregates() {
    let (parts, merge, _) =
        select("SELECT COUNT(*), SUM(x), MIN(create_time), MAX(id), COUNT(subject) FROM post_reply");
    assert_eq!(
        parts[3].1,
        "SELECT COUNT(*) AS `COUNT(*)`, SUM(x) AS `SUM(x)`, MIN(create_time) AS `MIN(create_time)`, MAX(id) AS `MAX(id)`, COUNT(subject) AS `COUNT(subject)` FROM post_reply_3 AS post_reply"
    );
    assert_eq!(
        merge,
        MergeSpec {
            visible: 5,
            order_by: vec![],
            limit: None,
            group: Some(GroupSpec {
                keys: vec![],
                aggs: vec![
                    AggSpec {
                        col: 0,
                        kind: AggKind::Count
                    },
                    AggSpec {
                        col: 1,
                        kind: AggKind::Sum
                    },
                    AggSpec {
                        col: 2,
                        kind: AggKind::Min
                    },
                    AggSpec {
                        col: 3,
                        kind: AggKind::Max
                    },
                    AggSpec {
                        col: 4,
                        kind: AggKind::Count
                    },
                ],
                having: None,
                order_after: vec![],
                tagged: None,
                concat: None,
            }),
            distinct: false,
        }
    );
}

#[test]
fn avg_becomes_sum_and_a_hidden_count() {
    let (parts, merge, _) = select("SELECT user_id, avg( x ) FROM post_reply GROUP BY user_id");
    assert_eq!(
        parts[0].1,
        "SELECT user_id, SUM(x) AS `avg( x )`, COUNT(x) FROM post_reply_0 AS post_reply GROUP BY 1 ORDER BY 1 ASC"
    );
    let g = merge.group.unwrap();
    assert_eq!(g.keys, vec![0]);
    assert_eq!(
        g.aggs,
        vec![AggSpec {
            col: 1,
            kind: AggKind::Avg { count_col: 2 }
        }]
    );
    assert_eq!(merge.visible, 2);
    assert_eq!(merge.order_by, vec![asc(0)]);
    // An alias is kept.
    let (parts, _, _) = select("SELECT AVG(x) AS a FROM post_reply");
    assert_eq!(
        parts[0].1,
        "SELECT SUM(x) AS a, COUNT(x) FROM post_reply_0 AS post_reply"
    );
}

#[test]
fn group_by_having_order_by_limit() {
    let (parts, merge, _) = select(
        "SELECT user_id, COUNT(*) AS n FROM post_reply GROUP BY user_id \
         HAVING n > 2 AND SUM(x) BETWEEN 1 AND 10 AND MAX(id) IS NOT NULL ORDER BY n DESC, user_id LIMIT 5, 10",
    );
    assert_eq!(
        parts[1].1,
        "SELECT user_id, COUNT(*) AS n, SUM(x), MAX(id) FROM post_reply_1 AS post_reply GROUP BY 1 ORDER BY 1 ASC"
    );
    let g = merge.group.clone().unwrap();
    assert_eq!(g.keys, vec![0]);
    assert_eq!(
        g.aggs,
        vec![
            AggSpec {
                col: 1,
                kind: AggKind::Count
            },
            AggSpec {
                col: 2,
                kind: AggKind::Sum
            },
            AggSpec {
                col: 3,
                kind: AggKind::Max
            },
        ]
    );
    let gt = MExpr::cmp(MExpr::Col(1), CmpOp::Gt, MExpr::Lit(MValue::Int(2)));
    let between = MExpr::and(
        MExpr::cmp(MExpr::Col(2), CmpOp::Ge, MExpr::Lit(MValue::Int(1))),
        MExpr::cmp(MExpr::Col(2), CmpOp::Le, MExpr::Lit(MValue::Int(10))),
    );
    let not_null = MExpr::not(MExpr::is_null(MExpr::Col(3)));
    assert_eq!(g.having, Some(MExpr::and(MExpr::and(gt, between), not_null)));
    assert_eq!(g.order_after, vec![desc(1), asc(0)]);
    assert_eq!(merge.order_by, vec![asc(0)]);
    assert_eq!(merge.limit, Some(Limit { offset: 5, count: 10 }));
    assert_eq!(merge.visible, 2);
}

#[test]
fn group_order_by_keys_needs_no_final_sort() {
    let (parts, merge, _) =
        select("SELECT a, b, COUNT(*) FROM post_reply GROUP BY a, b ORDER BY b DESC LIMIT 3");
    assert_eq!(
        parts[0].1,
        "SELECT a, b, COUNT(*) AS `COUNT(*)` FROM post_reply_0 AS post_reply GROUP BY 1, 2 ORDER BY 2 DESC, 1 ASC"
    );
    assert_eq!(merge.order_by, vec![desc(1), asc(0)]);
    assert_eq!(merge.group.unwrap().order_after, vec![]);
}

#[test]
fn group_keys_not_selected_become_helpers() {
    let (parts, merge, _) = select("SELECT COUNT(*) FROM post_reply GROUP BY user_id HAVING user_id > 3");
    assert_eq!(
        parts[0].1,
        "SELECT COUNT(*) AS `COUNT(*)`, user_id FROM post_reply_0 AS post_reply GROUP BY 2 ORDER BY 2 ASC"
    );
    assert_eq!(merge.visible, 1);
    let g = merge.group.unwrap();
    assert_eq!(g.keys, vec![1]);
    assert_eq!(
        g.having,
        Some(MExpr::cmp(MExpr::Col(1), CmpOp::Gt, MExpr::Lit(MValue::Int(3))))
    );
    // GROUP BY an alias or a position.
    let (parts, merge, _) = select("SELECT user_id AS u, COUNT(*) FROM post_reply GROUP BY u");
    assert_eq!(
        parts[0].1,
        "SELECT user_id AS u, COUNT(*) AS `COUNT(*)` FROM post_reply_0 AS post_reply GROUP BY 1 ORDER BY 1 ASC"
    );
    assert_eq!(merge.group.unwrap().keys, vec![0]);
    let (_, merge, _) = select("SELECT user_id, COUNT(*) FROM post_reply GROUP BY 1");
    assert_eq!(merge.group.unwrap().keys, vec![0]);
}

#[test]
fn order_by_an_unselected_aggregate() {
    let (parts, merge, _) =
        select("SELECT user_id FROM post_reply GROUP BY user_id ORDER BY COUNT(*) DESC, AVG(x) LIMIT 3");
    assert_eq!(
        parts[0].1,
        "SELECT user_id, COUNT(*), SUM(x), COUNT(x) FROM post_reply_0 AS post_reply GROUP BY 1 ORDER BY 1 ASC"
    );
    assert_eq!(merge.visible, 1);
    let g = merge.group.unwrap();
    assert_eq!(
        g.aggs,
        vec![
            AggSpec {
                col: 1,
                kind: AggKind::Count
            },
            AggSpec {
                col: 2,
                kind: AggKind::Avg { count_col: 3 }
            }
        ]
    );
    assert_eq!(g.order_after, vec![desc(1), asc(2)]);
}

#[test]
fn any_value_columns_merge_as_min() {
    let (_, merge, _) = select("SELECT user_id, subject, COUNT(*) FROM post_reply GROUP BY user_id");
    let g = merge.group.unwrap();
    assert_eq!(
        g.aggs,
        vec![
            AggSpec {
                col: 1,
                kind: AggKind::Min
            },
            AggSpec {
                col: 2,
                kind: AggKind::Count
            }
        ]
    );
}

#[test]
fn count_distinct() {
    let (parts, merge, _) = select(
        "SELECT subject, COUNT(DISTINCT user_id) FROM post_reply GROUP BY subject HAVING COUNT(DISTINCT user_id) > 1",
    );
    assert_eq!(
        parts[0].1,
        "SELECT subject, user_id AS `COUNT(DISTINCT user_id)` FROM post_reply_0 AS post_reply GROUP BY 1, 2 ORDER BY 1 ASC, 2 ASC"
    );
    assert_eq!(merge.order_by, vec![asc(0), asc(1)]);
    let g = merge.group.unwrap();
    assert_eq!(g.keys, vec![0]);
    assert_eq!(
        g.aggs,
        vec![AggSpec {
            col: 1,
            kind: AggKind::CountDistinct
        }]
    );
    assert_eq!(
        g.having,
        Some(MExpr::cmp(MExpr::Col(1), CmpOp::Gt, MExpr::Lit(MValue::Int(1))))
    );
    let (parts, merge, _) = select("SELECT COUNT(DISTINCT user_id) AS n FROM post_reply");
    assert_eq!(
        parts[0].1,
        "SELECT user_id AS n FROM post_reply_0 AS post_reply GROUP BY 1 ORDER BY 1 ASC"
    );
    assert_eq!(merge.order_by, vec![asc(0)]);
    assert!(merge.group.unwrap().keys.is_empty());
}

/// COUNT(DISTINCT key): rows with equal keys share a shard, so the shards' distinct
/// counts add; it runs as written, also several times and beside other aggregates, and
/// in HAVING or ORDER BY, unless another COUNT(DISTINCT x) makes the shards group by x.
#[test]
fn count_distinct_of_the_key_adds() {
    let count = |col| AggSpec {
        col,
        kind: AggKind::Count,
    };
    let (parts, merge, _) = select(
        "SELECT user_id, COUNT(DISTINCT tid), COUNT(DISTINCT post_reply.tid) AS n, SUM(score) FROM post_reply \
         GROUP BY user_id HAVING COUNT(DISTINCT tid) > 1 ORDER BY COUNT(DISTINCT TID) DESC",
    );
    assert_eq!(
        parts[0].1,
        "SELECT user_id, COUNT(DISTINCT tid) AS `COUNT(DISTINCT tid)`, COUNT(DISTINCT post_reply.tid) AS n, \
         SUM(score) AS `SUM(score)` FROM post_reply_0 AS post_reply GROUP BY 1 ORDER BY 1 ASC"
    );
    let g = merge.group.unwrap();
    assert_eq!(g.keys, vec![0]);
    assert_eq!(
        g.aggs,
        vec![
            count(1),
            count(2),
            AggSpec {
                col: 3,
                kind: AggKind::Sum
            },
        ]
    );
    assert_eq!(g.order_after, vec![desc(1)]);
    let (parts, merge, _) = select("SELECT COUNT(DISTINCT tid) FROM post_reply");
    assert_eq!(
        parts[0].1,
        "SELECT COUNT(DISTINCT tid) AS `COUNT(DISTINCT tid)` FROM post_reply_0 AS post_reply"
    );
    assert_eq!(merge.group.unwrap().aggs, vec![count(0)]);
    // Beside COUNT(DISTINCT user_id) the key's count is a stream of its own (a per-shard
    // count grouped by user_id would split it).
    let (_, merge, _) = select("SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT tid) FROM post_reply");
    let t = merge.group.and_then(|g| g.tagged).expect("tagged streams");
    assert_eq!((t.tag_col, t.x_cols.clone()), (2, vec![0, 1]));
    assert_eq!(
        refused(
            "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT tid), COUNT(DISTINCT user_id) FROM post_reply"
        ),
        "sluice: the same COUNT(DISTINCT user_id) twice on sharded table post_reply is not supported across \
         shards (select it once)"
    );
}

/// DISTINCT aggregates of several expressions: each row joined with one tag per
/// expression, grouped and sorted by (keys, tag, x_j under tag j), every other aggregate
/// read from the rows of tag 0.
#[test]
fn several_distinct_arguments_make_tagged_streams() {
    use crate::merge::{AggKind, CollationOf};
    let (parts, merge, _) = select(
        "SELECT user_id, COUNT(DISTINCT tag), COUNT(*), COUNT(DISTINCT DATE(create_time)) d, \
         SUM(DISTINCT score), AVG(amount) FROM post_reply GROUP BY user_id HAVING d > 1 ORDER BY d DESC LIMIT 3",
    );
    assert_eq!(
        parts[1].1,
        "SELECT user_id, CASE WHEN __sluice_d.__sluice_w = 0 THEN tag END AS `COUNT(DISTINCT tag)`, \
         COUNT(*) AS `COUNT(*)`, CASE WHEN __sluice_d.__sluice_w = 1 THEN DATE(create_time) END AS d, \
         SUM(DISTINCT score) AS `SUM(DISTINCT score)`, SUM(amount) AS `AVG(amount)`, \
         CASE WHEN __sluice_d.__sluice_w = 2 THEN score END, COUNT(amount), __sluice_d.__sluice_w \
         FROM post_reply_1 AS post_reply, (SELECT 0 AS __sluice_w UNION ALL SELECT 1 UNION ALL SELECT 2) AS __sluice_d \
         GROUP BY 1, 9, 2, 4, 7 ORDER BY 1 ASC, 9 ASC, 2 ASC, 4 ASC, 7 ASC"
    );
    assert_eq!(merge.order_by, vec![asc(0), asc(8), asc(1), asc(3), asc(6)]);
    let g = merge.group.expect("grouped");
    assert_eq!(g.order_after, vec![desc(3)]);
    let t = g.tagged.expect("tagged");
    assert_eq!((t.tag_col, t.x_cols.clone()), (8, vec![1, 3, 6]));
    // `tag` and `score` are columns (their collation is looked up); DATE(…) is not.
    let cols: Vec<(usize, &str, &str)> = t
        .collation_of
        .iter()
        .map(|c: &CollationOf| (c.col, c.table.as_str(), c.column.as_str()))
        .collect();
    assert_eq!(
        cols,
        vec![(1, "post_reply_0", "tag"), (6, "post_reply_0", "score")]
    );
    assert!(g
        .aggs
        .iter()
        .any(|a| a.col == 4 && a.kind == AggKind::SumDistinct { x_col: 6 }));
    assert!(g
        .aggs
        .iter()
        .any(|a| a.col == 3 && a.kind == AggKind::CountDistinct));
}

#[test]
fn sum_and_avg_distinct_merge_once_per_x() {
    use crate::merge::AggKind;
    let (parts, merge, _) = select(
        "SELECT user_id, SUM(DISTINCT score), COUNT(*), AVG(DISTINCT score) a FROM post_reply GROUP BY user_id",
    );
    assert_eq!(
        parts[0].1,
        "SELECT user_id, SUM(DISTINCT score) AS `SUM(DISTINCT score)`, COUNT(*) AS `COUNT(*)`, \
         SUM(DISTINCT score) AS a, score, COUNT(DISTINCT score) FROM post_reply_0 AS post_reply \
         GROUP BY 1, 5 ORDER BY 1 ASC, 5 ASC"
    );
    let g = merge.group.unwrap();
    assert_eq!(g.keys, vec![0]);
    let kinds: Vec<(usize, AggKind)> = g.aggs.iter().map(|a| (a.col, a.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            (1, AggKind::SumDistinct { x_col: 4 }),
            (2, AggKind::Count),
            (
                3,
                AggKind::AvgDistinct {
                    count_col: 5,
                    x_col: 4
                }
            ),
        ]
    );
    // Beside COUNT(DISTINCT x) of the same x, x is that column.
    let (_, merge, _) = select("SELECT COUNT(DISTINCT score), SUM(DISTINCT score) FROM post_reply");
    let g = merge.group.unwrap();
    assert_eq!(g.aggs[0].kind, AggKind::CountDistinct);
    assert_eq!(g.aggs[1].kind, AggKind::SumDistinct { x_col: 0 });
    // Of the shard key, the shards' sums add.
    let (parts, merge, _) = select("SELECT SUM(DISTINCT tid), AVG(DISTINCT tid) FROM post_reply");
    assert_eq!(
        parts[0].1,
        "SELECT SUM(DISTINCT tid) AS `SUM(DISTINCT tid)`, SUM(DISTINCT tid) AS `AVG(DISTINCT tid)`, \
         COUNT(DISTINCT tid) FROM post_reply_0 AS post_reply"
    );
    let g = merge.group.unwrap();
    assert_eq!(g.aggs[0].kind, AggKind::Sum);
    assert_eq!(g.aggs[1].kind, AggKind::Avg { count_col: 2 });
}

#[test]
fn distinct() {
    let (parts, merge, _) =
        select("SELECT DISTINCT user_id, subject FROM post_reply ORDER BY subject DESC LIMIT 2, 3");
    assert_eq!(
        parts[0].1,
        "SELECT DISTINCT user_id, subject FROM post_reply_0 AS post_reply ORDER BY 2 DESC, 1 ASC LIMIT 0, 5"
    );
    assert_eq!(
        merge,
        MergeSpec {
            visible: 2,
            order_by: vec![desc(1), asc(0)],
            limit: Some(Limit { offset: 2, count: 3 }),
            group: None,
            distinct: true,
        }
    );
}

#[test]
fn joins_with_unsharded_tables() {
    let (parts, _, wild) =
        select("SELECT p.id, u.name FROM post_reply p JOIN users u ON u.id = p.user_id WHERE p.tid = 3");
    assert_eq!(
        parts,
        vec![(
            3,
            "SELECT p.id, u.name FROM post_reply_3 p JOIN users u ON u.id = p.user_id WHERE p.tid = 3"
                .to_string()
        )]
    );
    assert_eq!(wild, None);
    for sql in [
        "SELECT p.id FROM post_reply p LEFT JOIN users u ON u.id = p.user_id",
        "SELECT p.id FROM users u RIGHT JOIN post_reply p ON u.id = p.user_id",
        "SELECT p.id FROM users u, post_reply p WHERE u.id = p.user_id",
        "SELECT p.id FROM users u CROSS JOIN post_reply p",
        "SELECT p.id FROM post_reply p STRAIGHT_JOIN users u ON u.id = p.user_id",
        "SELECT p.id FROM post_reply p JOIN (SELECT id FROM users) d ON d.id = p.user_id",
        "SELECT p.id FROM post_reply p WHERE p.user_id IN (SELECT id FROM users WHERE vip = 1)",
        "SELECT p.id FROM post_reply p WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = p.user_id)",
        "SELECT id FROM post_reply WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = post_reply.user_id)",
        "SELECT id FROM post_reply WHERE user_id IN (SELECT u.post_reply FROM users u)",
    ] {
        assert_eq!(planned(sql).parts().len(), 4, "{sql}");
    }
}

#[test]
fn locking_reads_across_shards() {
    let (parts, _, _) = select("SELECT id FROM post_reply WHERE user_id = 1 FOR UPDATE");
    assert_eq!(parts.len(), 4);
    assert!(parts
        .iter()
        .all(|(_, s)| s.ends_with("WHERE user_id = 1 FOR UPDATE")));
}

#[test]
fn bind_merge_checks_the_column_count() {
    let (_, merge, wild) = select("SELECT id FROM post_reply ORDER BY create_time");
    assert_eq!(wild, None);
    assert_eq!(bind_merge(&merge, wild, 2).unwrap(), merge);
    assert!(bind_merge(&merge, wild, 1).is_err());
}

#[test]
fn group_concat_is_merged_per_sub_group() {
    let (parts, merge, _) = select(
        "SELECT user_id, GROUP_CONCAT(subject, '|', id ORDER BY create_time DESC, id SEPARATOR ';'), COUNT(*) \
         FROM post_reply GROUP BY user_id ORDER BY user_id DESC LIMIT 2",
    );
    // The shards group by (keys, order keys, the values' bytes) and sort by (keys, order
    // keys); each sub-group's own GROUP_CONCAT (no ORDER BY) holds copies of one value.
    assert_eq!(
        parts[0].1,
        "SELECT user_id, GROUP_CONCAT(subject, '|', id SEPARATOR ';') AS `GROUP_CONCAT(subject, '|', id ORDER BY create_time DESC, id SEPARATOR ';')`, \
         COUNT(*) AS `COUNT(*)`, create_time, id, COUNT(*), @@group_concat_max_len, SUM(LENGTH(CONCAT(subject, '|', id))), ';' \
         FROM post_reply_0 AS post_reply GROUP BY 1, 4, 5, CAST(CONCAT(subject, '|', id) AS BINARY) \
         ORDER BY 1 DESC, 4 DESC, 5 ASC"
    );
    assert_eq!(merge.order_by, vec![desc(0), desc(3), asc(4)]);
    let g = merge.group.expect("grouped");
    let c = g.concat.expect("concat");
    assert_eq!((c.rows_col, c.max_len_col), (5, 6));
    assert_eq!(
        c.items,
        vec![crate::merge::ConcatItem {
            col: 1,
            len_col: 7,
            sep_col: 8,
            distinct_col: None
        }]
    );
    // DISTINCT x ORDER BY x: runs of equal x are taken once, compared as the order key.
    let (_, merge, _) = select("SELECT GROUP_CONCAT(DISTINCT subject ORDER BY subject) FROM post_reply");
    let c = merge.group.and_then(|g| g.concat).expect("concat");
    assert_eq!(c.items[0].distinct_col, Some(1));
}
