//! Randomized: sharded merge = unsharded reference.

use super::group::{grouped_metas, grouped_spec};
use super::*;

#[tokio::test]
async fn random_orders_match_reference() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let words = ["a", "A", "b", "B ", "é", "E", "z", "_", "ab", ""];
    let metas = vec![
        meta(types::LONG),
        meta(types::VAR_STRING),
        dec(2),
        meta(types::LONG),
    ];
    for round in 0..60 {
        let n = rng.below(200) as usize;
        let shards = 1 + rng.below(6) as usize;
        let rows: Vec<Vec<Option<String>>> = (0..n)
            .map(|i| {
                let a = (rng.below(10) > 0).then(|| (rng.below(20) as i64 - 10).to_string());
                let w = (rng.below(8) > 0).then(|| words[rng.below(words.len() as u64) as usize].to_string());
                let d = (rng.below(8) > 0)
                    .then(|| format!("{}.{:02}", rng.below(40) as i64 - 20, rng.below(100)));
                vec![a, w, d, Some(i.to_string())]
            })
            .collect();
        let mut order = vec![];
        for c in 0..3 {
            if rng.below(2) == 0 {
                order.push(SortKey {
                    col: c,
                    desc: rng.below(2) == 0,
                });
            }
        }
        order.push(SortKey::asc(3)); // unique tiebreak so the expected order is exact
        let cmp = |x: &Vec<Option<String>>, y: &Vec<Option<String>>| {
            for k in &order {
                let o = compare(
                    x[k.col].as_deref().map(str::as_bytes),
                    y[k.col].as_deref().map(str::as_bytes),
                    &metas[k.col],
                );
                let o = if k.desc { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        };
        let limit = (rng.below(3) > 0).then(|| Limit {
            offset: rng.below(50),
            count: rng.below(60),
        });
        let mut all = rows.clone();
        all.sort_by(cmp);
        let expected: Vec<Vec<Option<String>>> = match limit {
            Some(l) => all
                .iter()
                .skip(l.offset as usize)
                .take(l.count as usize)
                .map(|r| r[..3].to_vec())
                .collect(),
            None => all.iter().map(|r| r[..3].to_vec()).collect(),
        };
        let mut parts: Vec<Vec<Vec<Option<String>>>> = vec![Vec::new(); shards];
        for r in rows {
            parts[rng.below(shards as u64) as usize].push(r);
        }
        let sources = parts
            .into_iter()
            .map(|mut p| {
                p.sort_by(cmp);
                if let Some(l) = limit {
                    p.truncate((l.offset + l.count) as usize);
                }
                VecSource::new(
                    p.iter()
                        .map(|r| row(&r.iter().map(|f| f.as_deref()).collect::<Vec<_>>()))
                        .collect(),
                )
            })
            .collect();
        let spec = MergeSpec {
            visible: 3,
            order_by: order.clone(),
            limit,
            group: None,
            distinct: false,
        };
        let mut m = Merger::new(sources, spec, metas.clone()).expect("merger");
        assert_eq!(collect(&mut m).await, expected, "round {round}");
    }
}

#[tokio::test]
async fn random_groups_match_reference() {
    let mut rng = Rng(42);
    for round in 0..40 {
        let shards = 1 + rng.below(5) as usize;
        // Raw rows (k, v) per shard; v NULL sometimes.
        let raw: Vec<Vec<(i64, Option<i64>)>> = (0..shards)
            .map(|_| {
                (0..rng.below(60))
                    .map(|_| {
                        (
                            rng.below(12) as i64 - 3,
                            (rng.below(6) > 0).then(|| rng.below(2000) as i64 - 1000),
                        )
                    })
                    .collect()
            })
            .collect();
        // Shard partials: k, COUNT(*), SUM(v), MIN(v), MAX(v), SUM(v), COUNT(v), sorted by k.
        type Partial = (i64, i64, Option<i64>, Option<i64>, Option<i64>, i64);
        let partials = |rows: &[(i64, Option<i64>)]| -> Vec<Partial> {
            let mut by: std::collections::BTreeMap<i64, Partial> = Default::default();
            for &(k, v) in rows {
                let e = by.entry(k).or_insert((k, 0, None, None, None, 0));
                e.1 += 1;
                if let Some(v) = v {
                    e.2 = Some(e.2.unwrap_or(0) + v);
                    e.3 = Some(e.3.map_or(v, |m: i64| m.min(v)));
                    e.4 = Some(e.4.map_or(v, |m: i64| m.max(v)));
                    e.5 += 1;
                }
            }
            by.into_values().collect()
        };
        let show = |v: Option<i64>| v.map(|x| x.to_string());
        let to_row = |p: &Partial| {
            let f = [
                Some(p.0.to_string()),
                Some(p.1.to_string()),
                show(p.2),
                show(p.3),
                show(p.4),
                show(p.2),
                Some(p.5.to_string()),
            ];
            row(&f.iter().map(|x| x.as_deref()).collect::<Vec<_>>())
        };
        let sources = raw
            .iter()
            .map(|r| VecSource::new(partials(r).iter().map(to_row).collect()))
            .collect();
        let all: Vec<(i64, Option<i64>)> = raw.concat();
        let expected: Vec<Vec<Option<String>>> = partials(&all)
            .iter()
            .map(|p| {
                // AVG(int): scale 4, rounded half away from zero, computed independently.
                let avg = p.2.filter(|_| p.5 > 0).map(|s| {
                    let q = (s.unsigned_abs() as u128 * 100_000) / p.5 as u128;
                    let r = (q + 5) / 10;
                    let sign = if s < 0 && r != 0 { "-" } else { "" };
                    format!("{sign}{}.{:04}", r / 10_000, r % 10_000)
                });
                vec![
                    Some(p.0.to_string()),
                    Some(p.1.to_string()),
                    show(p.2),
                    show(p.3),
                    show(p.4),
                    avg,
                ]
            })
            .collect();
        let mut m = Merger::new(sources, grouped_spec(None, vec![], None), {
            let mut g = grouped_metas();
            g[0] = meta(types::LONG);
            g
        })
        .expect("merger");
        assert_eq!(collect(&mut m).await, expected, "round {round}");
    }
}
