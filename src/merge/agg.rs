//! Aggregate accumulators: combine the shards' partial aggregates of one group
//! (new / accumulate / finish) and print the result as the server would.

use super::num::{format_double, Dec, DECIMAL_MAX_SCALE, DIV_PRECISION_INCREMENT, NOT_FIXED_DEC};
use super::spec::{AggKind, AggSpec};
use super::value::{compare_opt, flags, kind, parse_f64, parse_int, types, ColumnMeta, Kind};
use super::{MergeError, TextRow};
use bytes::Bytes;
use std::cmp::Ordering;

/// How one aggregate column is combined.
#[derive(Debug, Clone)]
pub(super) struct AggPlan {
    pub col: usize,
    op: Op,
    /// Kind of the shard column (`col`).
    kind: Kind,
    /// Scale of DECIMAL / decimals of DOUBLE of the shard column.
    decimals: u8,
    /// SUM/AVG(DISTINCT x): the column of x (and its kind); rows are taken once per run of
    /// equal x in the group (the stream is sorted by the keys, then x).
    once_per: Option<(usize, Kind)>,
    /// Tagged sub-streams ([`super::spec::Tagged`]): only rows whose column holds this tag
    /// (as text) are read.
    only: Option<(usize, usize, Box<[u8]>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Count,
    Sum,
    Min,
    Max,
    Avg { count_col: usize },
    CountDistinct,
}

/// Running state of one aggregate in one group.
#[derive(Debug, Clone)]
pub(super) enum Acc {
    Count(i128),
    SumInt(Option<i128>),
    SumDec(Option<Dec>),
    SumDouble(Option<f64>),
    Best(Option<Bytes>),
    Avg {
        sum: Acc2,
        count: i128,
    },
    Distinct {
        last: Option<Bytes>,
        n: i128,
    },
    /// An aggregate fed once per run of equal x (`last`: the x of the last run taken).
    Once {
        last: Option<Option<Bytes>>,
        inner: Box<Acc>,
    },
}

/// The SUM part of an AVG.
#[derive(Debug, Clone)]
pub(super) enum Acc2 {
    Dec(Option<Dec>),
    Double(Option<f64>),
}

fn bad(col: usize, v: &[u8]) -> MergeError {
    MergeError::BadValue {
        col,
        value: String::from_utf8_lossy(&v[..v.len().min(64)]).into_owned(),
    }
}

impl AggPlan {
    /// Checks an aggregate against the shard columns.
    pub fn new(spec: &AggSpec, metas: &[ColumnMeta]) -> Result<AggPlan, MergeError> {
        let meta = metas
            .get(spec.col)
            .ok_or_else(|| MergeError::InvalidSpec(format!("aggregate column {} out of range", spec.col)))?;
        let k = kind(meta);
        let op = match spec.kind {
            AggKind::Count => Op::Count,
            AggKind::Sum => Op::Sum,
            AggKind::Min => Op::Min,
            AggKind::Max => Op::Max,
            AggKind::Avg { count_col } => Op::Avg { count_col },
            AggKind::CountDistinct => Op::CountDistinct,
            AggKind::SumDistinct { .. } => Op::Sum,
            AggKind::AvgDistinct { count_col, .. } => Op::Avg { count_col },
        };
        let once_per = match spec.kind {
            AggKind::SumDistinct { x_col } | AggKind::AvgDistinct { x_col, .. } => {
                let m = metas.get(x_col).ok_or_else(|| {
                    MergeError::InvalidSpec(format!("DISTINCT argument column {x_col} out of range"))
                })?;
                if !super::value::orderable(m) {
                    return Err(MergeError::Unsupported(
                        "SUM/AVG(DISTINCT) over ENUM, SET, JSON or GEOMETRY across shards".to_string(),
                    ));
                }
                Some((x_col, kind(m)))
            }
            _ => None,
        };
        let numeric = matches!(k, Kind::Int | Kind::Decimal | Kind::Float);
        match op {
            Op::Count if k != Kind::Int => {
                return Err(MergeError::InvalidSpec(format!(
                    "COUNT partial in column {} is not an integer column",
                    spec.col
                )))
            }
            Op::Sum | Op::Avg { .. } if !numeric => {
                return Err(MergeError::Unsupported(format!(
                    "SUM/AVG partial in column {} is not numeric (type {})",
                    spec.col, meta.column_type
                )))
            }
            Op::Min | Op::Max | Op::CountDistinct if !super::value::orderable(meta) => {
                return Err(MergeError::Unsupported(
                    "MIN/MAX/COUNT(DISTINCT) over ENUM, SET, JSON or GEOMETRY across shards".to_string(),
                ))
            }
            _ => {}
        }
        if let Op::Avg { count_col } = op {
            match metas.get(count_col).map(kind) {
                Some(Kind::Int) => {}
                _ => {
                    return Err(MergeError::InvalidSpec(format!(
                        "AVG count column {count_col} missing or not an integer column"
                    )))
                }
            }
        }
        Ok(AggPlan {
            col: spec.col,
            op,
            kind: k,
            decimals: meta.decimals,
            once_per,
            only: None,
        })
    }

    /// The implicit COUNT merge of an AVG's count column.
    pub fn count_of(col: usize) -> AggPlan {
        AggPlan {
            col,
            op: Op::Count,
            kind: Kind::Int,
            decimals: 0,
            once_per: None,
            only: None,
        }
    }

    /// Reads only the rows whose column `tag_col` holds `tag`.
    pub fn only_tag(mut self, tag_col: usize, tag: usize) -> AggPlan {
        self.only = Some((tag_col, tag, tag.to_string().into_bytes().into_boxed_slice()));
        self
    }

    /// The tag column and tag this aggregate reads, if tagged.
    pub fn tag(&self) -> Option<(usize, usize)> {
        self.only.as_ref().map(|(c, t, _)| (*c, *t))
    }

    pub fn avg_count_col(&self) -> Option<usize> {
        match self.op {
            Op::Avg { count_col } => Some(count_col),
            _ => None,
        }
    }

    /// Metadata of the merged column (what the client should be told).
    /// Flags as MariaDB sends them for AVG and COUNT(DISTINCT): BINARY (and
    /// NOT_NULL for counts); NUM_FLAG is never sent (client libraries add it).
    pub fn output_meta(&self, input: &ColumnMeta) -> ColumnMeta {
        let num = flags::BINARY;
        match self.op {
            Op::CountDistinct => ColumnMeta::new(types::LONGLONG, num | flags::NOT_NULL, 63, 0),
            Op::Avg { .. } => match self.kind {
                Kind::Float => ColumnMeta::new(types::DOUBLE, num, 63, self.avg_double_decimals()),
                _ => ColumnMeta::new(types::NEWDECIMAL, num, 63, self.avg_scale() as u8),
            },
            _ => *input,
        }
    }

    fn avg_scale(&self) -> usize {
        (usize::from(self.decimals) + DIV_PRECISION_INCREMENT).min(DECIMAL_MAX_SCALE)
    }

    fn avg_double_decimals(&self) -> u8 {
        if self.decimals >= NOT_FIXED_DEC {
            NOT_FIXED_DEC
        } else {
            (self.decimals + DIV_PRECISION_INCREMENT as u8).min(NOT_FIXED_DEC)
        }
    }

    pub fn new_acc(&self) -> Acc {
        let inner = self.new_inner();
        match self.once_per {
            Some(_) => Acc::Once {
                last: None,
                inner: Box::new(inner),
            },
            None => inner,
        }
    }

    fn new_inner(&self) -> Acc {
        match self.op {
            Op::Count => Acc::Count(0),
            Op::Sum => match self.kind {
                Kind::Int => Acc::SumInt(None),
                Kind::Float => Acc::SumDouble(None),
                _ => Acc::SumDec(None),
            },
            Op::Min | Op::Max => Acc::Best(None),
            Op::Avg { .. } => Acc::Avg {
                sum: match self.kind {
                    Kind::Float => Acc2::Double(None),
                    _ => Acc2::Dec(None),
                },
                count: 0,
            },
            Op::CountDistinct => Acc::Distinct { last: None, n: 0 },
        }
    }

    /// Adds one shard row's partial values.
    pub fn accumulate(&self, acc: &mut Acc, row: &TextRow) -> Result<(), MergeError> {
        if let Some((c, _, tag)) = &self.only {
            if row.field(*c) != Some(&tag[..]) {
                return Ok(());
            }
        }
        if let (Acc::Once { last, inner }, Some((x, xk))) = (&mut *acc, self.once_per) {
            let v = row.field(x);
            let same = last
                .as_ref()
                .is_some_and(|l| compare_opt(l.as_deref(), v, xk) == Ordering::Equal);
            if same {
                return Ok(());
            }
            *last = Some(row.field_bytes(x));
            return self.add(inner, row);
        }
        self.add(acc, row)
    }

    fn add(&self, acc: &mut Acc, row: &TextRow) -> Result<(), MergeError> {
        let col = self.col;
        let v = row.field(col);
        match acc {
            Acc::Count(n) => {
                if let Some(v) = v {
                    let x = parse_int(v).ok_or_else(|| bad(col, v))?;
                    *n = n.checked_add(x).ok_or_else(|| bad(col, v))?;
                }
            }
            Acc::SumInt(s) => {
                if let Some(v) = v {
                    let x = parse_int(v).ok_or_else(|| bad(col, v))?;
                    *s = Some(s.unwrap_or(0).checked_add(x).ok_or_else(|| bad(col, v))?);
                }
            }
            Acc::SumDec(s) => {
                if let Some(v) = v {
                    let x = Dec::parse(v).ok_or_else(|| bad(col, v))?;
                    *s = Some(match s.take() {
                        Some(prev) => prev.add(&x),
                        None => x,
                    });
                }
            }
            Acc::SumDouble(s) => {
                if let Some(v) = v {
                    let x = parse_f64(v).ok_or_else(|| bad(col, v))?;
                    *s = Some(s.unwrap_or(0.0) + x);
                }
            }
            Acc::Best(best) => {
                if v.is_some() {
                    let want = if self.op == Op::Min {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    };
                    let replace = match best {
                        None => true,
                        Some(b) => compare_opt(v, Some(b), self.kind) == want,
                    };
                    if replace {
                        *best = row.field_bytes(col);
                    }
                }
            }
            Acc::Avg { sum, count } => {
                let Op::Avg { count_col } = self.op else {
                    return Ok(());
                };
                if let Some(c) = row.field(count_col) {
                    let x = parse_int(c).ok_or_else(|| bad(count_col, c))?;
                    *count = count.checked_add(x).ok_or_else(|| bad(count_col, c))?;
                }
                if let Some(v) = v {
                    match sum {
                        Acc2::Dec(s) => {
                            let x = Dec::parse(v).ok_or_else(|| bad(col, v))?;
                            *s = Some(match s.take() {
                                Some(prev) => prev.add(&x),
                                None => x,
                            });
                        }
                        Acc2::Double(s) => {
                            let x = parse_f64(v).ok_or_else(|| bad(col, v))?;
                            *s = Some(s.unwrap_or(0.0) + x);
                        }
                    }
                }
            }
            Acc::Once { inner, .. } => return self.add(inner, row),
            Acc::Distinct { last, n } => {
                if v.is_some() {
                    let new = match last {
                        None => true,
                        Some(l) => compare_opt(v, Some(l), self.kind) != Ordering::Equal,
                    };
                    if new {
                        *n += 1;
                        *last = row.field_bytes(col);
                    }
                }
            }
        }
        Ok(())
    }

    /// The merged value's text (`None` = NULL).
    pub fn finish(&self, acc: Acc) -> Option<Vec<u8>> {
        let text = match acc {
            Acc::Count(n) => n.to_string(),
            Acc::SumInt(s) => s?.to_string(),
            Acc::SumDec(s) => s?.saturate().format(usize::from(self.decimals)),
            Acc::SumDouble(s) => format_double(s?, self.decimals),
            Acc::Best(b) => return b.map(|b| b.to_vec()),
            Acc::Avg { sum, count } => {
                let count = u64::try_from(count).ok().filter(|&c| c > 0)?;
                match sum {
                    Acc2::Dec(s) => {
                        let s = s?.saturate().round_to(usize::from(self.decimals));
                        let q = s.avg_div(count)?;
                        q.format(self.avg_scale())
                    }
                    Acc2::Double(s) => format_double(s? / count as f64, self.avg_double_decimals()),
                }
            }
            Acc::Distinct { n, .. } => n.to_string(),
            Acc::Once { inner, .. } => return self.finish(*inner),
        };
        Some(text.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::row;
    use super::*;

    fn run(spec: AggSpec, metas: &[ColumnMeta], rows: &[&[Option<&str>]]) -> Option<String> {
        let plan = AggPlan::new(&spec, metas).expect("plan");
        let mut acc = plan.new_acc();
        for r in rows {
            plan.accumulate(&mut acc, &row(r)).expect("accumulate");
        }
        plan.finish(acc).map(|v| String::from_utf8(v).expect("utf8"))
    }

    fn dec(scale: u8) -> ColumnMeta {
        ColumnMeta::new(types::NEWDECIMAL, flags::BINARY | flags::NUM, 63, scale)
    }
    fn dbl(decimals: u8) -> ColumnMeta {
        ColumnMeta::new(types::DOUBLE, flags::BINARY | flags::NUM, 63, decimals)
    }
    fn bigint() -> ColumnMeta {
        ColumnMeta::new(types::LONGLONG, flags::BINARY | flags::NUM, 63, 0)
    }
    fn sum(col: usize) -> AggSpec {
        AggSpec {
            col,
            kind: AggKind::Sum,
        }
    }

    /// Texts as MariaDB 10.11 prints the same aggregate on an unsharded table.
    #[test]
    fn outputs_match_the_server() {
        // SUM(int) is a DECIMAL(…,0): `12`.
        assert_eq!(
            run(sum(0), &[dec(0)], &[&[Some("5")], &[Some("7")]]).as_deref(),
            Some("12")
        );
        // SUM(decimal(10,2)).
        assert_eq!(
            run(sum(0), &[dec(2)], &[&[Some("1.50")], &[Some("2.25")]]).as_deref(),
            Some("3.75")
        );
        assert_eq!(
            run(sum(0), &[dec(2)], &[&[Some("-1.50")], &[Some("1.50")]]).as_deref(),
            Some("0.00")
        );
        // SUM over only NULLs (or no rows) is NULL; NULL partials are skipped.
        assert_eq!(run(sum(0), &[dec(0)], &[&[None], &[None]]), None);
        assert_eq!(
            run(sum(0), &[dec(0)], &[&[None], &[Some("3")]]).as_deref(),
            Some("3")
        );
        // SUM(double): shortest text; SUM(double(10,2)): fixed 2 decimals.
        assert_eq!(
            run(sum(0), &[dbl(31)], &[&[Some("1.5")], &[Some("2.5")]]).as_deref(),
            Some("4")
        );
        assert_eq!(
            run(
                sum(0),
                &[dbl(31)],
                &[&[Some("1e20")], &[Some("1.0000000200408773e20")]]
            )
            .as_deref(),
            Some("2.0000000200408773e20")
        );
        assert_eq!(
            run(sum(0), &[dbl(2)], &[&[Some("3.75")], &[Some("1.26")]]).as_deref(),
            Some("5.01")
        );
        // COUNT adds; never NULL.
        let count = AggSpec {
            col: 0,
            kind: AggKind::Count,
        };
        assert_eq!(
            run(count, &[bigint()], &[&[Some("2")], &[Some("0")], &[Some("5")]]).as_deref(),
            Some("7")
        );
        // AVG(int): SUM(decimal scale 0) / COUNT → scale 4.
        let avg = AggSpec {
            col: 0,
            kind: AggKind::Avg { count_col: 1 },
        };
        let m = [dec(0), bigint()];
        assert_eq!(
            run(avg, &m, &[&[Some("3"), Some("1")], &[Some("2"), Some("1")]]).as_deref(),
            Some("2.5000")
        );
        assert_eq!(
            run(avg, &m, &[&[Some("-2"), Some("2")], &[Some("0"), Some("1")]]).as_deref(),
            Some("-0.6667")
        );
        assert_eq!(run(avg, &m, &[&[None, Some("0")], &[None, Some("0")]]), None);
        // AVG(decimal(10,2)) → scale 6; AVG(decimal(10,5)) → 9 digits, truncated.
        let m2 = [dec(2), bigint()];
        assert_eq!(
            run(
                avg,
                &m2,
                &[&[Some("1.50"), Some("1")], &[Some("2.25"), Some("1")]]
            )
            .as_deref(),
            Some("1.875000")
        );
        let m5 = [dec(5), bigint()];
        assert_eq!(
            run(
                avg,
                &m5,
                &[&[Some("-0.00002"), Some("2")], &[Some("0.00000"), Some("1")]]
            )
            .as_deref(),
            Some("-0.000006666")
        );
        // AVG(double) and AVG(double(10,2)).
        let md = [dbl(31), bigint()];
        assert_eq!(
            run(avg, &md, &[&[Some("1.5"), Some("1")], &[Some("2.5"), Some("1")]]).as_deref(),
            Some("2")
        );
        let md2 = [dbl(2), bigint()];
        assert_eq!(
            run(
                avg,
                &md2,
                &[&[Some("3.75"), Some("2")], &[Some("1.26"), Some("1")]]
            )
            .as_deref(),
            Some("1.670000")
        );
        // MIN/MAX keep the shard's text, compare by type, skip NULLs.
        let min = AggSpec {
            col: 0,
            kind: AggKind::Min,
        };
        let max = AggSpec {
            col: 0,
            kind: AggKind::Max,
        };
        let int = [ColumnMeta::new(types::LONG, 0, 63, 0)];
        assert_eq!(
            run(min, &int, &[&[Some("10")], &[None], &[Some("9")]]).as_deref(),
            Some("9")
        );
        assert_eq!(
            run(max, &int, &[&[Some("10")], &[None], &[Some("9")]]).as_deref(),
            Some("10")
        );
        assert_eq!(run(max, &int, &[&[None], &[None]]), None);
        let t = [ColumnMeta::new(types::TIME, 0, 63, 0)];
        assert_eq!(
            run(min, &t, &[&[Some("-01:00:00")], &[Some("00:30:00")]]).as_deref(),
            Some("-01:00:00")
        );
        let s = [ColumnMeta::new(types::VAR_STRING, 0, 45, 0)];
        assert_eq!(
            run(max, &s, &[&[Some("b")], &[Some("B")], &[Some("a")]]).as_deref(),
            Some("b")
        );
    }

    #[test]
    fn count_distinct_counts_runs() {
        let cd = AggSpec {
            col: 0,
            kind: AggKind::CountDistinct,
        };
        let s = [ColumnMeta::new(types::VAR_STRING, 0, 45, 0)];
        // Merged (sorted) x values of one group across shards; 'a' = 'A' under general_ci.
        let rows: &[&[Option<&str>]] = &[
            &[None],
            &[Some("a")],
            &[Some("A")],
            &[Some("b")],
            &[Some("b")],
            &[Some("c ")],
            &[Some("c")],
        ];
        assert_eq!(run(cd, &s, rows).as_deref(), Some("3"));
        assert_eq!(run(cd, &s, &[&[None]]).as_deref(), Some("0"));
    }

    #[test]
    fn rejects_what_cannot_merge() {
        let s = [ColumnMeta::new(types::VAR_STRING, 0, 45, 0)];
        assert!(matches!(
            AggPlan::new(&sum(0), &s),
            Err(MergeError::Unsupported(_))
        ));
        let e = [ColumnMeta::new(types::STRING, flags::ENUM, 45, 0)];
        let max = AggSpec {
            col: 0,
            kind: AggKind::Max,
        };
        assert!(matches!(AggPlan::new(&max, &e), Err(MergeError::Unsupported(_))));
        assert!(AggPlan::new(&sum(3), &s).is_err());
        let avg = AggSpec {
            col: 0,
            kind: AggKind::Avg { count_col: 1 },
        };
        assert!(AggPlan::new(&avg, &[dec(0), dec(0)]).is_err());
        let bad_row = AggPlan::new(&sum(0), &[dec(0)]).expect("plan");
        let mut acc = bad_row.new_acc();
        assert!(bad_row.accumulate(&mut acc, &row(&[Some("x1")])).is_err());
    }
}
