//! GROUP BY, aggregates, HAVING, COUNT(DISTINCT), DISTINCT.

use super::*;

// GROUP BY.

/// `SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), AVG(v) FROM t GROUP BY k` with `v INT`;
/// per shard `SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), SUM(v), COUNT(v) … GROUP BY k
/// ORDER BY k`.
pub(super) fn grouped_metas() -> Vec<ColumnMeta> {
    vec![
        meta(types::VAR_STRING),
        meta(types::LONGLONG),
        dec(0),
        meta(types::LONG),
        meta(types::LONG),
        dec(0),
        meta(types::LONGLONG),
    ]
}

pub(super) fn grouped_sources() -> Vec<VecSource> {
    vec![
        VecSource::new(vec![
            row(&[
                Some("a"),
                Some("2"),
                Some("3"),
                Some("1"),
                Some("2"),
                Some("3"),
                Some("2"),
            ]),
            row(&[Some("b"), Some("1"), None, None, None, None, Some("0")]),
            row(&[Some("d"), Some("1"), None, None, None, None, Some("0")]),
        ]),
        VecSource::new(vec![
            row(&[
                Some("A"),
                Some("1"),
                Some("4"),
                Some("4"),
                Some("4"),
                Some("4"),
                Some("1"),
            ]),
            row(&[
                Some("c"),
                Some("1"),
                Some("5"),
                Some("5"),
                Some("5"),
                Some("5"),
                Some("1"),
            ]),
        ]),
        VecSource::new(vec![
            row(&[
                Some("b"),
                Some("1"),
                Some("-3"),
                Some("-3"),
                Some("-3"),
                Some("-3"),
                Some("1"),
            ]),
            row(&[
                Some("c"),
                Some("2"),
                Some("7"),
                Some("7"),
                Some("7"),
                Some("7"),
                Some("1"),
            ]),
            row(&[Some("d "), Some("2"), None, None, None, None, Some("0")]),
        ]),
    ]
}

pub(super) fn grouped_spec(
    having: Option<Expr>,
    order_after: Vec<SortKey>,
    limit: Option<Limit>,
) -> MergeSpec {
    MergeSpec {
        visible: 6,
        order_by: vec![SortKey::asc(0)],
        limit,
        group: Some(GroupSpec {
            keys: vec![0],
            aggs: vec![
                AggSpec {
                    col: 1,
                    kind: AggKind::Count,
                },
                AggSpec {
                    col: 2,
                    kind: AggKind::Sum,
                },
                AggSpec {
                    col: 3,
                    kind: AggKind::Min,
                },
                AggSpec {
                    col: 4,
                    kind: AggKind::Max,
                },
                AggSpec {
                    col: 5,
                    kind: AggKind::Avg { count_col: 6 },
                },
            ],
            having,
            order_after,
            tagged: None,
            concat: None,
        }),
        distinct: false,
    }
}

#[tokio::test]
async fn group_by_merges_partial_groups() {
    let mut m = Merger::new(
        grouped_sources(),
        grouped_spec(None, vec![], None),
        grouped_metas(),
    )
    .expect("merger");
    let got = collect(&mut m).await;
    // 'a' and 'A' are one group under utf8mb4_general_ci (shown as the first met), so are
    // 'd' and 'd ' (PAD SPACE). Texts as the server prints them: SUM(int) is a DECIMAL
    // with scale 0, AVG(int) has 4 decimals, SUM/AVG of only NULLs is NULL.
    assert_eq!(
        got,
        strs(&[
            &[
                Some("a"),
                Some("3"),
                Some("7"),
                Some("1"),
                Some("4"),
                Some("2.3333")
            ],
            &[
                Some("b"),
                Some("2"),
                Some("-3"),
                Some("-3"),
                Some("-3"),
                Some("-3.0000")
            ],
            &[
                Some("c"),
                Some("3"),
                Some("12"),
                Some("5"),
                Some("7"),
                Some("6.0000")
            ],
            &[Some("d"), Some("3"), None, None, None, None],
        ])
    );
    assert_eq!(m.rows_merged(), 8);
    // The client's column for AVG is DECIMAL with 4 decimals.
    assert_eq!(m.output_metas()[5].column_type, types::NEWDECIMAL);
    assert_eq!(m.output_metas()[5].decimals, 4);
}

#[tokio::test]
async fn having_uses_three_valued_logic() {
    let run = |having: Expr| async move {
        let mut m = Merger::new(
            grouped_sources(),
            grouped_spec(Some(having), vec![], None),
            grouped_metas(),
        )
        .expect("merger");
        collect(&mut m)
            .await
            .into_iter()
            .map(|r| r[0].clone().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let sum_gt_3 = || Expr::cmp(Expr::Col(2), CmpOp::Gt, Expr::Lit(Value::Int(3)));
    // HAVING SUM(v) > 3: d's SUM is NULL → UNKNOWN → dropped.
    assert_eq!(run(sum_gt_3()).await, vec!["a", "c"]);
    // HAVING NOT (SUM(v) > 3): UNKNOWN stays UNKNOWN.
    assert_eq!(run(Expr::not(sum_gt_3())).await, vec!["b"]);
    // HAVING SUM(v) IS NULL.
    assert_eq!(run(Expr::is_null(Expr::Col(2))).await, vec!["d"]);
    // HAVING SUM(v) > 3 OR SUM(v) IS NULL.
    assert_eq!(
        run(Expr::or(sum_gt_3(), Expr::is_null(Expr::Col(2)))).await,
        vec!["a", "c", "d"]
    );
    // HAVING COUNT(*) >= 3 AND AVG(v) > 2.5 (on the merged AVG text).
    let h = Expr::and(
        Expr::cmp(Expr::Col(1), CmpOp::Ge, Expr::Lit(Value::Int(3))),
        Expr::cmp(Expr::Col(5), CmpOp::Gt, Expr::Lit(Value::Decimal("2.5".into()))),
    );
    assert_eq!(run(h).await, vec!["c"]);
    // HAVING on the hidden COUNT(v) helper (merged as a count too): COUNT(v) = 2.
    let h = Expr::cmp(Expr::Col(6), CmpOp::Eq, Expr::Lit(Value::Int(2)));
    assert_eq!(run(h).await, vec!["c"]);
    // HAVING k = 'A ' (general_ci, PAD SPACE).
    let h = Expr::cmp(Expr::Col(0), CmpOp::Eq, Expr::Lit(Value::Bytes(b"A ".to_vec())));
    assert_eq!(run(h).await, vec!["a"]);
}

#[tokio::test]
async fn order_after_grouping_buffers_and_limits() {
    // … GROUP BY k ORDER BY COUNT(*) DESC, MAX(v) ASC LIMIT 1, 2
    let order = vec![SortKey::desc(1), SortKey::asc(4)];
    let spec = grouped_spec(None, order.clone(), Some(Limit { offset: 1, count: 2 }));
    let mut m = Merger::new(grouped_sources(), spec, grouped_metas()).expect("merger");
    let keys: Vec<_> = collect(&mut m).await.into_iter().map(|r| r[0].clone()).collect();
    // counts: a 3 (max 4), b 2, c 3 (max 7), d 3 (max NULL): d, a, c, b → skip d.
    assert_eq!(keys, vec![Some("a".to_string()), Some("c".to_string())]);
    // Without a limit, all groups in the new order.
    let mut m = Merger::new(
        grouped_sources(),
        grouped_spec(None, order, None),
        grouped_metas(),
    )
    .expect("merger");
    let keys: Vec<_> = collect(&mut m)
        .await
        .into_iter()
        .filter_map(|r| r[0].clone())
        .collect();
    assert_eq!(keys, vec!["d", "a", "c", "b"]);
}

#[tokio::test]
async fn aggregates_without_group_by() {
    // SELECT COUNT(*), SUM(d), AVG(d) FROM t  (d DECIMAL(10,2)); one shard is empty.
    let metas = vec![meta(types::LONGLONG), dec(2), dec(2), meta(types::LONGLONG)];
    let sources = vec![
        VecSource::new(vec![row(&[Some("2"), Some("3.75"), Some("3.75"), Some("2")])]),
        VecSource::new(vec![row(&[Some("0"), None, None, Some("0")])]),
        VecSource::new(vec![row(&[Some("1"), Some("-1.25"), Some("-1.25"), Some("1")])]),
    ];
    let spec = MergeSpec {
        visible: 3,
        order_by: vec![],
        limit: None,
        group: Some(GroupSpec {
            keys: vec![],
            aggs: vec![
                AggSpec {
                    col: 0,
                    kind: AggKind::Count,
                },
                AggSpec {
                    col: 1,
                    kind: AggKind::Sum,
                },
                AggSpec {
                    col: 2,
                    kind: AggKind::Avg { count_col: 3 },
                },
            ],
            having: None,
            order_after: vec![],
            tagged: None,
            concat: None,
        }),
        distinct: false,
    };
    let mut m = Merger::new(sources, spec, metas).expect("merger");
    assert_eq!(
        collect(&mut m).await,
        strs(&[&[Some("3"), Some("2.50"), Some("0.833333")]])
    );
}

#[tokio::test]
async fn count_distinct_across_shards() {
    // SELECT k, COUNT(DISTINCT x), COUNT(*) FROM t GROUP BY k
    // per shard: SELECT k, x, COUNT(*) … GROUP BY k, x ORDER BY k, x
    let metas = vec![meta(types::LONG), meta(types::VAR_STRING), meta(types::LONGLONG)];
    let sources = vec![
        VecSource::new(vec![
            row(&[Some("1"), None, Some("2")]),
            row(&[Some("1"), Some("apple"), Some("1")]),
            row(&[Some("1"), Some("pear"), Some("3")]),
            row(&[Some("2"), Some("fig"), Some("1")]),
        ]),
        VecSource::new(vec![
            row(&[Some("1"), Some("Apple"), Some("2")]),
            row(&[Some("1"), Some("kiwi"), Some("1")]),
            row(&[Some("3"), None, Some("1")]),
        ]),
        VecSource::new(vec![
            row(&[Some("1"), Some("pear"), Some("1")]),
            row(&[Some("2"), Some("fig"), Some("4")]),
            row(&[Some("2"), Some("grape"), Some("1")]),
        ]),
    ];
    let spec = MergeSpec {
        visible: 3,
        order_by: vec![SortKey::asc(0), SortKey::asc(1)],
        limit: None,
        group: Some(GroupSpec {
            keys: vec![0],
            aggs: vec![
                AggSpec {
                    col: 1,
                    kind: AggKind::CountDistinct,
                },
                AggSpec {
                    col: 2,
                    kind: AggKind::Count,
                },
            ],
            having: None,
            order_after: vec![],
            tagged: None,
            concat: None,
        }),
        distinct: false,
    };
    let mut m = Merger::new(sources, spec, metas).expect("merger");
    assert_eq!(m.output_metas()[1].column_type, types::LONGLONG);
    // k=1: apple (= Apple under general_ci), kiwi, pear → 3, NULL not counted; 10 rows.
    assert_eq!(
        collect(&mut m).await,
        strs(&[
            &[Some("1"), Some("3"), Some("10")],
            &[Some("2"), Some("2"), Some("6")],
            &[Some("3"), Some("0"), Some("1")],
        ])
    );
}

#[tokio::test]
async fn grouped_spec_checks() {
    let mut spec = grouped_spec(None, vec![], None);
    spec.order_by = vec![SortKey::asc(1)];
    assert!(matches!(
        Merger::new(grouped_sources(), spec, grouped_metas()),
        Err(MergeError::InvalidSpec(_))
    ));
    let mut spec = grouped_spec(None, vec![], None);
    spec.distinct = true; // keys visible: a no-op
    assert!(Merger::new(grouped_sources(), spec, grouped_metas()).is_ok());
    let mut spec = grouped_spec(None, vec![], None);
    if let Some(g) = spec.group.as_mut() {
        g.aggs.push(AggSpec {
            col: 0,
            kind: AggKind::Max,
        });
    }
    assert!(Merger::new(grouped_sources(), spec, grouped_metas()).is_err());
}

// ---------------------------------------------------------------------------------
// DISTINCT.

#[tokio::test]
async fn distinct_across_shards() {
    // SELECT DISTINCT name, n FROM t ORDER BY n DESC → shards sort by (n DESC, name).
    let metas = vec![meta(types::VAR_STRING), meta(types::LONG)];
    let sources = vec![
        VecSource::new(vec![
            row(&[Some("bob"), Some("2")]),
            row(&[None, Some("1")]),
            row(&[Some("amy"), Some("1")]),
        ]),
        VecSource::new(vec![
            row(&[Some("Bob"), Some("2")]),
            row(&[Some("cat"), Some("2")]),
            row(&[Some("amy "), Some("1")]),
            row(&[None, None]),
        ]),
        VecSource::new(vec![
            row(&[Some("cat"), Some("2")]),
            row(&[None, Some("1")]),
            row(&[None, None]),
        ]),
    ];
    let spec = MergeSpec {
        visible: 2,
        order_by: vec![SortKey::desc(1), SortKey::asc(0)],
        limit: Some(Limit { offset: 1, count: 10 }),
        group: None,
        distinct: true,
    };
    let mut m = Merger::new(sources, spec, metas.clone()).expect("merger");
    assert_eq!(
        collect(&mut m).await,
        strs(&[
            // (bob, 2) skipped by the offset; 'Bob' duplicates it under general_ci.
            &[Some("cat"), Some("2")],
            &[None, Some("1")],
            &[Some("amy"), Some("1")],
            &[None, None],
        ])
    );
    let bad = MergeSpec {
        visible: 2,
        order_by: vec![SortKey::desc(1)],
        limit: None,
        group: None,
        distinct: true,
    };
    assert!(matches!(
        Merger::new(Vec::<VecSource>::new(), bad, metas),
        Err(MergeError::InvalidSpec(_))
    ));
}

#[tokio::test]
async fn sum_and_avg_distinct_take_each_x_once() {
    // SELECT k, SUM(DISTINCT x), AVG(DISTINCT x), COUNT(*) FROM t GROUP BY k
    // per shard: SELECT k, SUM(DISTINCT x), SUM(DISTINCT x), COUNT(*), x, COUNT(DISTINCT x)
    //            … GROUP BY k, x ORDER BY k, x
    let dec = ColumnMeta::new(types::NEWDECIMAL, flags::BINARY, 63, 0);
    let metas = vec![
        meta(types::LONG),
        dec,
        dec,
        meta(types::LONGLONG),
        meta(types::LONG),
        meta(types::LONGLONG),
    ];
    let r = |k: &str, x: Option<&str>, n: &str| {
        row(&[
            Some(k),
            x,
            x,
            Some(n),
            x,
            Some(if x.is_some() { "1" } else { "0" }),
        ])
    };
    let sources = vec![
        VecSource::new(vec![
            r("1", None, "2"),
            r("1", Some("5"), "1"),
            r("1", Some("7"), "3"),
        ]),
        VecSource::new(vec![
            r("1", Some("5"), "2"),
            r("1", Some("8"), "1"),
            r("2", None, "1"),
        ]),
        VecSource::new(vec![r("1", Some("7"), "1"), r("2", None, "4")]),
    ];
    let spec = MergeSpec {
        visible: 4,
        order_by: vec![SortKey::asc(0), SortKey::asc(4)],
        limit: None,
        group: Some(GroupSpec {
            keys: vec![0],
            aggs: vec![
                AggSpec {
                    col: 1,
                    kind: AggKind::SumDistinct { x_col: 4 },
                },
                AggSpec {
                    col: 2,
                    kind: AggKind::AvgDistinct {
                        count_col: 5,
                        x_col: 4,
                    },
                },
                AggSpec {
                    col: 3,
                    kind: AggKind::Count,
                },
            ],
            having: None,
            order_after: vec![],
            tagged: None,
            concat: None,
        }),
        distinct: false,
    };
    let mut m = Merger::new(sources, spec, metas).expect("merger");
    // k=1: x in {5, 7, 8} (5 and 7 on two shards each): 20, 6.6667; k=2: only NULLs.
    assert_eq!(
        collect(&mut m).await,
        strs(&[
            &[Some("1"), Some("20"), Some("6.6667"), Some("10")],
            &[Some("2"), None, None, Some("5")],
        ])
    );
}

#[tokio::test]
async fn aggregates_without_group_by_over_no_rows_answer_one_row() {
    // SELECT COUNT(DISTINCT x), SUM(DISTINCT x), COUNT(*) FROM t WHERE false: the shards
    // grouped by x return nothing; the server answers 0, NULL, 0.
    let metas = vec![
        meta(types::LONG),
        ColumnMeta::new(types::NEWDECIMAL, flags::BINARY, 63, 0),
        meta(types::LONGLONG),
    ];
    let sources = vec![VecSource::new(vec![]), VecSource::new(vec![])];
    let spec = MergeSpec {
        visible: 3,
        order_by: vec![SortKey::asc(0)],
        limit: None,
        group: Some(GroupSpec {
            keys: vec![],
            aggs: vec![
                AggSpec {
                    col: 0,
                    kind: AggKind::CountDistinct,
                },
                AggSpec {
                    col: 1,
                    kind: AggKind::SumDistinct { x_col: 0 },
                },
                AggSpec {
                    col: 2,
                    kind: AggKind::Count,
                },
            ],
            having: None,
            order_after: vec![],
            tagged: None,
            concat: None,
        }),
        distinct: false,
    };
    let mut m = Merger::new(sources, spec, metas).expect("merger");
    assert_eq!(collect(&mut m).await, strs(&[&[Some("0"), None, Some("0")]]));
}

/// `SELECT k, COUNT(DISTINCT a), COUNT(DISTINCT b), COUNT(*), SUM(DISTINCT b) … GROUP BY k`:
/// per shard `SELECT k, CASE WHEN w = 0 THEN a END, CASE WHEN w = 1 THEN b END, COUNT(*),
/// SUM(DISTINCT b), w FROM t, (SELECT 0 AS w UNION ALL SELECT 1) d GROUP BY k, w, 2, 3
/// ORDER BY k, w, 2, 3`.
#[tokio::test]
async fn tagged_streams_count_each_argument_in_its_own_rows() {
    let metas = vec![
        meta(types::LONG),
        meta(types::VAR_STRING),
        meta(types::LONG),
        meta(types::LONGLONG),
        dec(0),
        meta(types::LONGLONG),
    ];
    // Rows (k, a, b): shard A (1,'x',1), (1,'X',2), (1,NULL,2), (2,'y',NULL); shard B
    // (1,'z',1), (1,'x',3), (2,'y',5).
    let sources = || {
        vec![
            VecSource::new(vec![
                row(&[Some("1"), None, None, Some("1"), Some("2"), Some("0")]),
                row(&[Some("1"), Some("x"), None, Some("2"), Some("3"), Some("0")]),
                row(&[Some("1"), None, Some("1"), Some("1"), Some("1"), Some("1")]),
                row(&[Some("1"), None, Some("2"), Some("2"), Some("2"), Some("1")]),
                row(&[Some("2"), Some("y"), None, Some("1"), None, Some("0")]),
                row(&[Some("2"), None, None, Some("1"), None, Some("1")]),
            ]),
            VecSource::new(vec![
                row(&[Some("1"), Some("x"), None, Some("1"), Some("3"), Some("0")]),
                row(&[Some("1"), Some("z"), None, Some("1"), Some("1"), Some("0")]),
                row(&[Some("1"), None, Some("1"), Some("1"), Some("1"), Some("1")]),
                row(&[Some("1"), None, Some("3"), Some("1"), Some("3"), Some("1")]),
                row(&[Some("2"), Some("y"), None, Some("1"), Some("5"), Some("0")]),
                row(&[Some("2"), None, Some("5"), Some("1"), Some("5"), Some("1")]),
            ]),
        ]
    };
    let spec = |having: Option<Expr>| MergeSpec {
        visible: 5,
        order_by: vec![SortKey::asc(0), SortKey::asc(5), SortKey::asc(1), SortKey::asc(2)],
        limit: None,
        group: Some(GroupSpec {
            keys: vec![0],
            aggs: vec![
                AggSpec {
                    col: 1,
                    kind: AggKind::CountDistinct,
                },
                AggSpec {
                    col: 2,
                    kind: AggKind::CountDistinct,
                },
                AggSpec {
                    col: 3,
                    kind: AggKind::Count,
                },
                AggSpec {
                    col: 4,
                    kind: AggKind::SumDistinct { x_col: 2 },
                },
            ],
            having,
            order_after: vec![],
            tagged: Some(Box::new(Tagged {
                tag_col: 5,
                x_cols: vec![1, 2],
                collation_of: vec![],
            })),
            concat: None,
        }),
        distinct: false,
    };
    let mut m = Merger::new(sources(), spec(None), metas.clone()).expect("merger");
    // k=1: a in {x, z} ('x' = 'X'), b in {1, 2, 3}, 5 rows, 1+2+3; k=2: y, 5, 2 rows, 5.
    assert_eq!(
        collect(&mut m).await,
        strs(&[
            &[Some("1"), Some("2"), Some("3"), Some("5"), Some("6")],
            &[Some("2"), Some("1"), Some("1"), Some("2"), Some("5")],
        ])
    );
    let having = Expr::cmp(Expr::Col(2), CmpOp::Gt, Expr::Lit(Value::Int(1)));
    let mut m = Merger::new(sources(), spec(Some(having)), metas.clone()).expect("merger");
    assert_eq!(
        collect(&mut m).await,
        strs(&[&[Some("1"), Some("2"), Some("3"), Some("5"), Some("6")]])
    );
    // The shards must sort by the keys, the tag, then each x.
    let mut bad = spec(None);
    bad.order_by = vec![SortKey::asc(0), SortKey::asc(1), SortKey::asc(5), SortKey::asc(2)];
    assert!(matches!(
        Merger::new(sources(), bad, metas.clone()),
        Err(MergeError::InvalidSpec(_))
    ));
    // A DISTINCT aggregate whose x is no stream's column.
    let mut bad = spec(None);
    if let Some(g) = bad.group.as_mut() {
        g.aggs[3].kind = AggKind::SumDistinct { x_col: 4 };
    }
    assert!(matches!(
        Merger::new(sources(), bad, metas),
        Err(MergeError::InvalidSpec(_))
    ));
}
