//! ORDER BY and LIMIT: the seed's case, early stop, NULLs, hidden sort keys.

use super::*;
use crate::merge::testutil::int_rows;

// ---------------------------------------------------------------------------------
// The seed: Atlas sent `LIMIT 20, 20` to every sub-table and concatenated the results.

/// `post_reply (id, tid, user_id, subject, create_time, message)`.
fn post_reply_metas() -> Vec<ColumnMeta> {
    vec![
        ColumnMeta::new(types::LONG, flags::UNSIGNED | flags::NUM | flags::NOT_NULL, 63, 0),
        ColumnMeta::new(types::LONG, flags::UNSIGNED | flags::NUM | flags::NOT_NULL, 63, 0),
        ColumnMeta::new(types::LONG, flags::UNSIGNED | flags::NUM | flags::NOT_NULL, 63, 0),
        ColumnMeta::new(types::VAR_STRING, flags::NOT_NULL, 33, 0),
        ColumnMeta::new(types::DATETIME, flags::BINARY | flags::NOT_NULL, 63, 0),
        ColumnMeta::new(types::BLOB, flags::BLOB | flags::NOT_NULL, 33, 0),
    ]
}

struct Reply {
    id: u32,
    tid: u32,
    create_time: String,
}

fn reply_row(r: &Reply) -> TextRow {
    let (id, tid) = (r.id.to_string(), r.tid.to_string());
    row(&[
        Some(&id),
        Some(&tid),
        Some("123"),
        Some("re: hello"),
        Some(&r.create_time),
        Some("message body"),
    ])
}

/// Runs `ORDER BY create_time DESC LIMIT offset, count` over 4 shards (`tid % 4`),
/// each asked for `LIMIT 0, offset+count`, and compares with the unsharded page.
async fn seed_page(
    replies: &[Reply],
    offset: u64,
    count: u64,
) -> (Vec<Vec<Option<String>>>, Vec<Vec<Option<String>>>) {
    let by_time_desc = |a: &&Reply, b: &&Reply| {
        compare(
            Some(b.create_time.as_bytes()),
            Some(a.create_time.as_bytes()),
            &meta(types::DATETIME),
        )
    };
    let mut all: Vec<&Reply> = replies.iter().collect();
    all.sort_by(by_time_desc);
    let expected: Vec<Vec<Option<String>>> = all
        .iter()
        .skip(offset as usize)
        .take(count as usize)
        .map(|r| texts(reply_row(r).payload()))
        .collect();
    let sources: Vec<VecSource> = (0..4)
        .map(|shard| {
            let mut rows: Vec<&Reply> = replies.iter().filter(|r| r.tid % 4 == shard).collect();
            rows.sort_by(by_time_desc);
            rows.truncate((offset + count) as usize); // the rewritten LIMIT 0, offset+count
            VecSource::new(rows.iter().map(|r| reply_row(r)).collect())
        })
        .collect();
    let spec = MergeSpec {
        visible: 6,
        order_by: vec![SortKey::desc(4)],
        limit: Some(Limit { offset, count }),
        group: None,
        distinct: false,
    };
    let mut m = Merger::new(sources, spec, post_reply_metas()).expect("merger");
    let got = collect(&mut m).await;
    assert!(
        m.rows_merged() <= offset + count + 4,
        "{} rows pulled",
        m.rows_merged()
    );
    (got, expected)
}

fn time_of(i: u64) -> String {
    // Distinct times, not in id order, across two days (byte order = time order here,
    // but the comparison parses them).
    let s = (i * 7919) % 100_000;
    format!(
        "2013-05-{:02} {:02}:{:02}:{:02}",
        1 + s / 86_400,
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60
    )
}

#[tokio::test]
async fn seed_limit_20_20_matches_the_unsharded_page() {
    let tids = [228596u32, 225232, 228689, 228601, 228638, 209218, 224795, 228839];
    let replies: Vec<Reply> = (0..120u64)
        .map(|i| Reply {
            id: 1000 + i as u32,
            tid: tids[(i * 5 % 8) as usize],
            create_time: time_of(i),
        })
        .collect();
    let (got, expected) = seed_page(&replies, 20, 20).await;
    assert_eq!(got.len(), 20);
    assert_eq!(got, expected);
}

#[tokio::test]
async fn seed_with_ten_rows_per_shard_is_not_empty() {
    // Atlas' failure: 4 sub-tables with 10 matching rows each; `LIMIT 20, 20` on each
    // returned nothing. The merged page 2 has 20 rows.
    let replies: Vec<Reply> = (0..40u64)
        .map(|i| Reply {
            id: i as u32,
            tid: (i % 4) as u32 + 228_600,
            create_time: time_of(i),
        })
        .collect();
    let (got, expected) = seed_page(&replies, 20, 20).await;
    assert_eq!(got.len(), 20);
    assert_eq!(got, expected);
    let (got, expected) = seed_page(&replies, 35, 20).await;
    assert_eq!(got.len(), 5);
    assert_eq!(got, expected);
}

#[tokio::test]
async fn seed_with_duplicate_times_gives_a_valid_page() {
    // Many equal create_time values: any order of ties is a correct page, but the sort
    // keys of the page must be the unsharded page's, and no row may repeat.
    let replies: Vec<Reply> = (0..160u64)
        .map(|i| Reply {
            id: i as u32,
            tid: (i * 3 % 8) as u32,
            create_time: time_of(i % 13),
        })
        .collect();
    let (got, expected) = seed_page(&replies, 20, 20).await;
    let keys = |rows: &[Vec<Option<String>>]| rows.iter().map(|r| r[4].clone()).collect::<Vec<_>>();
    assert_eq!(keys(&got), keys(&expected));
    let mut ids: Vec<_> = got.iter().map(|r| r[0].clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20);
}

#[tokio::test]
async fn deep_page_pulls_offset_plus_count_rows_only() {
    let n = 5000u64;
    let replies: Vec<Reply> = (0..n)
        .map(|i| Reply {
            id: i as u32,
            tid: (i % 4) as u32,
            create_time: time_of(i),
        })
        .collect();
    let (got, expected) = seed_page(&replies, 3000, 20).await;
    assert_eq!(got, expected);
}

// ---------------------------------------------------------------------------------
// LIMIT stops pulling.

#[tokio::test]
async fn limit_stops_pulling_sources() {
    // Sources 0,3,6,… / 1,4,7,… / 2,5,8,…; LIMIT 5, 10 needs rows 0..=14. Each
    // source errors if pulled once more than necessary (consumed rows + its head).
    let src = |start: i64, allowed: usize| {
        let rows = (0..100).map(|i| int_row(&[Some(start + 3 * i)])).collect();
        VecSource::new(rows).failing_after(allowed)
    };
    let sources = vec![src(0, 6), src(1, 6), src(2, 5)];
    let spec = MergeSpec {
        visible: 1,
        order_by: vec![SortKey::asc(0)],
        limit: Some(Limit { offset: 5, count: 10 }),
        group: None,
        distinct: false,
    };
    let mut m = Merger::new(sources, spec, vec![meta(types::LONG)]).expect("merger");
    let got = collect(&mut m).await;
    let want: Vec<Vec<Option<String>>> = (5..15).map(|i| vec![Some(i.to_string())]).collect();
    assert_eq!(got, want);
    assert_eq!(m.rows_merged(), 17);
    assert_eq!(m.rows_returned(), 10);
    // Further calls stay at the end without pulling.
    assert!(m.next_row().await.expect("end").is_none());
}

#[tokio::test]
async fn limit_zero_pulls_nothing() {
    let s = VecSource::new(vec![int_row(&[Some(1)])]).failing_after(0);
    let counter = s.pull_counter();
    let spec = MergeSpec {
        limit: Some(Limit { offset: 0, count: 0 }),
        ..MergeSpec::concat(1)
    };
    let mut m = Merger::new(vec![s], spec, vec![meta(types::LONG)]).expect("merger");
    assert!(m.next_row().await.expect("end").is_none());
    assert_eq!(counter.load(AtomicOrdering::SeqCst), 0);
}

#[tokio::test]
async fn source_errors_surface() {
    let s = VecSource::new(vec![int_row(&[Some(1)]), int_row(&[Some(2)])]).failing_after(1);
    let mut m = Merger::new(vec![s], MergeSpec::concat(1), vec![meta(types::LONG)]).expect("merger");
    assert!(m.next_row().await.expect("first").is_some());
    assert!(matches!(m.next_row().await, Err(MergeError::Source(_))));
    assert!(matches!(m.next_row().await, Err(MergeError::Aborted)));
}

// ---------------------------------------------------------------------------------
// ORDER BY details.

#[tokio::test]
async fn multi_key_order_with_nulls_and_hidden_sort_column() {
    // SELECT name FROM t ORDER BY score ASC, name DESC  → shard columns (name, score).
    let metas = vec![meta(types::VAR_STRING), dec(2)];
    let s0 = VecSource::new(vec![
        row(&[Some("x"), None]),
        row(&[Some("b"), Some("-10.50")]),
        row(&[Some("a"), Some("2.00")]),
    ]);
    let s1 = VecSource::new(vec![
        row(&[None, None]),
        row(&[Some("c"), Some("-9.75")]),
        row(&[Some("Z"), Some("2.00")]),
        row(&[Some("d"), Some("10.00")]),
    ]);
    let spec = MergeSpec {
        visible: 1,
        order_by: vec![SortKey::asc(1), SortKey::desc(0)],
        limit: None,
        group: None,
        distinct: false,
    };
    let mut m = Merger::new(vec![s0, s1], spec, metas).expect("merger");
    let got = collect(&mut m).await;
    // NULL score first (ASC); among them name DESC puts NULL last. -10.50 < -9.75
    // numerically (a byte comparison would say otherwise); 'Z' > 'a' under general_ci.
    assert_eq!(
        got,
        strs(&[
            &[Some("x")],
            &[None],
            &[Some("b")],
            &[Some("c")],
            &[Some("Z")],
            &[Some("a")],
            &[Some("d")]
        ])
    );
}

#[tokio::test]
async fn order_by_enum_is_refused() {
    let enum_col = ColumnMeta::new(types::STRING, flags::ENUM, 45, 0);
    let spec = MergeSpec {
        order_by: vec![SortKey::asc(0)],
        ..MergeSpec::concat(1)
    };
    let r = Merger::new(Vec::<VecSource>::new(), spec.clone(), vec![enum_col]);
    assert!(matches!(r, Err(MergeError::Unsupported(_))));
    // Unordered reads of ENUM columns are fine.
    assert!(Merger::new(Vec::<VecSource>::new(), MergeSpec::concat(1), vec![enum_col]).is_ok());
    let bad = MergeSpec { visible: 2, ..spec };
    assert!(matches!(
        Merger::new(Vec::<VecSource>::new(), bad, vec![meta(types::LONG)]),
        Err(MergeError::InvalidSpec(_))
    ));
}

// ---------------------------------------------------------------------------------
// What a merged result cannot pass on: the parts' warnings, errors past the LIMIT.

fn ordered(limit: Option<Limit>) -> MergeSpec {
    MergeSpec {
        visible: 1,
        order_by: vec![SortKey::asc(0)],
        limit,
        group: None,
        distinct: false,
    }
}

#[tokio::test]
async fn a_part_with_warnings_refuses_the_statement_at_its_end() {
    let sources = vec![
        VecSource::new(int_rows(&[&[1], &[3]])).warned(0),
        VecSource::new(int_rows(&[&[2]])).warned(2),
    ];
    let mut m = Merger::new(sources, ordered(None), vec![meta(types::LONG)]).expect("merger");
    assert_eq!(collect(&mut m).await.len(), 3);
    assert!(matches!(m.finish().await, Err(MergeError::Unsupported(w)) if w.contains("2 warning")));
}

#[tokio::test]
async fn parts_a_limit_stopped_are_read_to_their_end_for_their_warnings() {
    let a = VecSource::new(int_rows(&[&[1], &[2], &[3]])).warned(0);
    let pulls = a.pull_counter();
    let b = VecSource::new(int_rows(&[&[4], &[5], &[6]])).warned(1);
    let spec = ordered(Some(Limit { offset: 0, count: 1 }));
    let mut m = Merger::new(vec![a, b], spec, vec![meta(types::LONG)]).expect("merger");
    assert_eq!(collect(&mut m).await, strs(&[&[Some("1")]]));
    // The second part's warning is only in its last packet: it is read, and refused.
    assert!(matches!(m.finish().await, Err(MergeError::Unsupported(_))));
    assert_eq!(
        pulls.load(AtomicOrdering::SeqCst),
        4,
        "every row and the end of the first part"
    );
    let quiet = vec![
        VecSource::new(int_rows(&[&[1], &[2]])).warned(0),
        VecSource::new(int_rows(&[&[3]])).warned(0),
    ];
    let spec = ordered(Some(Limit { offset: 0, count: 1 }));
    let mut m = Merger::new(quiet, spec, vec![meta(types::LONG)]).expect("merger");
    collect(&mut m).await;
    assert!(m.finish().await.is_ok());
}

#[tokio::test]
async fn a_part_error_under_a_limit_is_a_refusal_not_the_server_answer() {
    let run = |limit| async move {
        let sources = vec![
            VecSource::new(int_rows(&[&[1], &[2]])),
            VecSource::new(int_rows(&[&[3]])).server_error_at_end(1690),
        ];
        let mut m = Merger::new(sources, ordered(limit), vec![meta(types::LONG)]).expect("merger");
        let mut last = Ok(None);
        for _ in 0..4 {
            last = m.next_row().await;
            if !matches!(last, Ok(Some(_))) {
                break;
            }
        }
        last
    };
    // Each part read rows for `LIMIT 0, offset+count`, which the server never evaluates.
    let limited = run(Some(Limit { offset: 1, count: 5 })).await;
    assert!(matches!(limited, Err(MergeError::Unsupported(w)) if w.contains("1690")));
    // Without a LIMIT the parts evaluate the rows the server evaluates: its own error.
    assert!(matches!(
        run(None).await,
        Err(MergeError::Server { code: 1690, .. })
    ));
}
