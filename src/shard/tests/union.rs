//! UNION / UNION ALL of selects on sharded tables: every part runs the whole union, each
//! branch on one of its sub-tables (or with LIMIT 0 where it has none), the merge
//! concatenates, or merges by the outer ORDER BY, applying the offset and DISTINCT.

use super::*;

#[test]
fn union_all_runs_the_whole_union_per_slot() {
    let (parts, merge, w) = select(
        "SELECT id FROM post_reply WHERE tid = 5 UNION ALL SELECT id FROM post_reply WHERE tid IN (4, 6)",
    );
    assert_eq!(w, None);
    assert_eq!(merge, MergeSpec::concat(1));
    assert_eq!(
        parts,
        vec![
            (
                1,
                "SELECT id FROM post_reply_1 AS post_reply WHERE tid = 5 UNION ALL \
                 SELECT id FROM post_reply_0 AS post_reply WHERE tid IN (4)"
                    .to_string()
            ),
            (
                2,
                "(SELECT id FROM post_reply_1 AS post_reply WHERE tid = 5 LIMIT 0) UNION ALL \
                 SELECT id FROM post_reply_2 AS post_reply WHERE tid IN (6)"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn one_slot_keeps_the_outer_order_and_limit() {
    let (parts, merge, _) = select(
        "SELECT id FROM post_reply WHERE tid = 4 UNION ALL SELECT id FROM post_reply WHERE tid = 8 ORDER BY id LIMIT 3, 2",
    );
    assert_eq!(merge, MergeSpec::concat(1));
    assert_eq!(parts.len(), 1);
    assert_eq!(
        parts[0].1,
        "SELECT id FROM post_reply_0 AS post_reply WHERE tid = 4 UNION ALL \
         SELECT id FROM post_reply_0 AS post_reply WHERE tid = 8 ORDER BY id LIMIT 3, 2"
    );
}

#[test]
fn outer_order_and_limit_merge_by_positions() {
    let (parts, merge, _) = select(
        "SELECT id, tid AS t FROM post_reply UNION ALL SELECT id, user_id FROM post_reply WHERE tid = 4 ORDER BY t DESC, 1 LIMIT 10, 5",
    );
    assert_eq!(parts.len(), 4);
    assert_eq!(
        merge,
        MergeSpec {
            visible: 2,
            order_by: vec![SortKey::desc(1), SortKey::asc(0)],
            limit: Some(crate::merge::Limit { offset: 10, count: 5 }),
            group: None,
            distinct: false,
        }
    );
    assert_eq!(
        parts[3].1,
        "SELECT id, tid AS t FROM post_reply_3 AS post_reply UNION ALL \
         (SELECT id, user_id FROM post_reply_0 AS post_reply WHERE tid = 4 LIMIT 0) \
         ORDER BY 2 DESC, 1 ASC LIMIT 0, 15"
    );
}

#[test]
fn union_distinct_sorts_every_column() {
    let (parts, merge, _) = select(
        "SELECT tid, user_id FROM post_reply WHERE user_id < 3 UNION SELECT tid, score FROM post_reply ORDER BY user_id DESC",
    );
    assert!(merge.distinct);
    assert_eq!(merge.order_by, vec![SortKey::desc(1), SortKey::asc(0)]);
    assert!(parts[0].1.contains(" UNION DISTINCT SELECT "), "{}", parts[0].1);
    assert!(parts[0].1.ends_with("ORDER BY 2 DESC, 1 ASC"), "{}", parts[0].1);
}

#[test]
fn an_unsharded_branch_runs_once() {
    let (parts, _, _) = select("SELECT id FROM post_reply UNION ALL SELECT id FROM users WHERE id < 3");
    assert_eq!(parts.len(), 4);
    assert!(
        parts[0]
            .1
            .ends_with("UNION ALL SELECT id FROM users WHERE id < 3"),
        "{}",
        parts[0].1
    );
    for p in &parts[1..] {
        assert!(
            p.1.ends_with("UNION ALL (SELECT id FROM users WHERE id < 3 LIMIT 0)"),
            "{}",
            p.1
        );
    }
    // A union of unsharded tables only is not sluice's business.
    assert_eq!(run("SELECT id FROM users UNION SELECT id FROM t2").unwrap(), None);
}

#[test]
fn single_sub_table_branches_keep_their_shape() {
    let (parts, merge, _) = select(
        "(SELECT COUNT(*) FROM post_reply WHERE tid = 4) UNION ALL (SELECT id FROM post_reply WHERE tid = 5 ORDER BY id LIMIT 1)",
    );
    assert_eq!(merge, MergeSpec::concat(1));
    assert_eq!(
        parts,
        vec![(
            0,
            "SELECT COUNT(*) FROM post_reply_0 AS post_reply WHERE tid = 4 UNION ALL \
             (SELECT id FROM post_reply_1 AS post_reply WHERE tid = 5 ORDER BY id LIMIT 1)"
                .to_string()
        )]
    );
}

#[test]
fn shapes_that_cannot_be_exact_are_refused() {
    for (sql, want) in [
        (
            "SELECT COUNT(*) FROM post_reply UNION ALL SELECT 1",
            "sluice: a UNION branch with aggregates, GROUP BY, DISTINCT, ORDER BY or LIMIT of its own",
        ),
        (
            "SELECT id FROM post_reply UNION ALL (SELECT id FROM post_reply ORDER BY id LIMIT 1)",
            "sluice: a UNION branch with aggregates",
        ),
        (
            "SELECT id FROM post_reply UNION SELECT id FROM post_reply UNION ALL SELECT id FROM post_reply",
            "sluice: a chain mixing UNION and UNION ALL",
        ),
        (
            "SELECT id FROM post_reply EXCEPT SELECT id FROM post_reply",
            "sluice: EXCEPT of queries",
        ),
        (
            "SELECT * FROM post_reply UNION ALL SELECT * FROM post_reply ORDER BY 1",
            "sluice: ORDER BY or UNION (distinct) over SELECT *",
        ),
        (
            "SELECT id FROM post_reply UNION ALL SELECT id FROM post_reply ORDER BY id + 1",
            "sluice: the ORDER BY of a UNION on sharded table post_reply must name result columns",
        ),
        (
            "SELECT id AS a, tid AS a FROM post_reply UNION ALL SELECT id, tid FROM post_reply ORDER BY a",
            "sluice: ORDER BY a of a UNION",
        ),
        (
            "SELECT id FROM post_reply a JOIN post_reply b USING (id) UNION ALL SELECT 1",
            "sluice: a JOIN of two sharded tables",
        ),
    ] {
        match run(sql) {
            Err(Refusal(m)) => assert!(m.starts_with(want), "{sql}: {m}"),
            other => panic!("{sql}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn prepared_unions_keep_their_placeholders_and_route_per_branch() {
    let union = |op: &str| {
        let sql = format!(
            "SELECT id FROM post_reply WHERE tid {op} ? UNION ALL SELECT id FROM post_reply WHERE tid {op} ? ORDER BY id LIMIT ?"
        );
        let params = [ParamValue::Int(4), ParamValue::Int(5), ParamValue::Int(3)];
        match plan_prepared(&sql, &params, &Charset::default(), Some("test"), &rules()) {
            Ok(Some(ShardPlan::Select { parts, merge, .. })) => (parts, merge),
            other => panic!("{sql}: {other:?}"),
        }
    };
    // Each branch routes by its own value (4 → sub-table 0, 5 → sub-table 1), both in
    // one group: the server runs the whole UNION, its parameters bound in order.
    let (parts, merge) = union("=");
    assert_eq!(merge.limit, None);
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].params, vec![0, 1], "{}", parts[0].sql);
    assert!(parts[0].sql.text().contains("post_reply_0 ") && parts[0].sql.text().contains("post_reply_1 "));
    assert!(
        parts[0].sql.text().ends_with("ORDER BY id LIMIT 0, 3"),
        "{}",
        parts[0].sql
    );
    // Values that need every sub-table: four parts, each binding both parameters.
    let (parts, merge) = union(">");
    assert_eq!(merge.limit, Some(crate::merge::Limit { offset: 0, count: 3 }));
    assert_eq!(parts.len(), 4);
    for part in &parts {
        assert_eq!(part.params, vec![0, 1], "{}", part.sql);
        assert!(
            part.sql.text().ends_with("ORDER BY 1 ASC LIMIT 0, 3"),
            "{}",
            part.sql
        );
    }
}

#[test]
fn bound_limits_of_branches_are_written_as_numbers() {
    // `LIMIT ?` bound to 2e0 or '3' (MariaDB takes both) is written as the number.
    let p = plan_prepared(
        "(SELECT id FROM post_reply WHERE tid = ? ORDER BY id LIMIT ?) UNION ALL (SELECT id FROM post_reply WHERE tid = ? LIMIT ?) ORDER BY id LIMIT ?",
        &[
            ParamValue::Int(4),
            ParamValue::Float(2.0),
            ParamValue::Int(5),
            ParamValue::Bytes(b"3".to_vec()),
            ParamValue::Float(4.0),
        ],
        &Charset::default(),
        Some("test"),
        &rules(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        sqls(&p),
        vec![(
            0,
            "(SELECT id FROM post_reply_0 AS post_reply WHERE tid = ? ORDER BY id LIMIT 0, 2) UNION ALL \
             (SELECT id FROM post_reply_1 AS post_reply WHERE tid = ? LIMIT 0, 3) ORDER BY id LIMIT 0, 4"
                .to_string()
        )]
    );
}
