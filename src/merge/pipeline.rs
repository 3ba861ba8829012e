//! The merge pipeline: k-way merge → group merge → HAVING → DISTINCT → order_after →
//! offset/limit, yielding the client's row payloads.

use super::agg::{Acc, AggPlan};
use super::concat::{ConcatAcc, ConcatPlan};
use super::having::{self, Tri};
use super::kmerge::{cmp_rows, KMerge, OrderKey, RowSource};
use super::spec::{AggKind, Expr, Limit, MergeSpec, SortKey};
use super::value::{compare_opt, kind, orderable, ColumnMeta, Kind};
use super::{MergeError, TextRow};
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::HashSet;

/// Merges shard results into the client's rows.
pub struct Merger<S: RowSource> {
    kmerge: KMerge<S>,
    visible: usize,
    limit: Option<Limit>,
    distinct: bool,
    group: Option<Grouping>,
    out_metas: Vec<ColumnMeta>,
    out_kinds: Vec<Kind>,
    last_distinct: Option<TextRow>,
    skipped: u64,
    emitted: u64,
    done: bool,
    cuts: Cuts,
}

/// GROUP_CONCAT results cut at `group_concat_max_len`: the server's warnings 1260.
#[derive(Debug, Default)]
struct Cuts {
    /// Values each GROUP_CONCAT column has appended so far (the server's row counter).
    appended: Vec<u64>,
    /// `Row N` of the first [`MAX_CUT_WARNINGS`] warnings, in the server's order.
    rows: Vec<u64>,
    total: u64,
}

/// The sentence of [`Merger::over_read`] (also for a part read whole before the merge).
pub fn over_read_refusal(code: u16, message: &str) -> String {
    format!(
        "a part of this statement on a sub-table failed with error {code} ({message}) while \
         reading rows for the LIMIT, rows the server, applying the LIMIT to one table, may never \
         evaluate; refused rather than answered with an error the server may not give"
    )
}

/// A part's error under a HAVING the merge evaluates: the server may never meet it.
pub fn having_refusal(code: u16, message: &str) -> String {
    format!(
        "a part of this statement on a sub-table failed with error {code} ({message}) computing groups \
         its HAVING drops, rows the server, moving the HAVING into its WHERE, may never evaluate; \
         refused rather than answered with an error the server may not give"
    )
}

/// Warnings kept as text (the server's default `max_error_count`).
pub const MAX_CUT_WARNINGS: usize = 64;

impl Cuts {
    /// A group's GROUP_CONCAT values were computed (the server does so when the row is
    /// sent, or written for a final sort): count its values, warn for its cuts.
    fn record(&mut self, stats: &[(u64, bool)]) {
        self.appended.resize(stats.len(), 0);
        for (n, &(appended, cut)) in self.appended.iter_mut().zip(stats) {
            *n += appended;
            if cut {
                self.total += 1;
                if self.rows.len() < MAX_CUT_WARNINGS {
                    self.rows.push(*n);
                }
            }
        }
    }
}

struct Grouping {
    keys: Vec<(usize, Kind)>,
    aggs: Vec<AggPlan>,
    /// For each column, the index in `aggs` of the aggregate that produces it.
    agg_at: Vec<Option<usize>>,
    having: Option<Expr>,
    order_after: Vec<OrderKey>,
    pending: Option<TextRow>,
    exhausted: bool,
    /// A group was formed (or, without GROUP BY, the one row of no rows was given).
    started: bool,
    /// Columns of a shard row.
    columns: usize,
    sorted: Option<std::vec::IntoIter<TextRow>>,
    concats: Vec<ConcatPlan>,
    /// (values appended, cut) of each GROUP_CONCAT in the last group formed.
    last_concat: Vec<(u64, bool)>,
    /// HAVING reads a GROUP_CONCAT column.
    having_reads_concat: bool,
}

fn invalid(msg: impl Into<String>) -> MergeError {
    MergeError::InvalidSpec(msg.into())
}

fn unorderable() -> MergeError {
    MergeError::Unsupported(
        "ORDER BY, GROUP BY or DISTINCT on an ENUM, SET, JSON or GEOMETRY column across \
         shards (the server orders them by internal value, not by their text)"
            .to_string(),
    )
}

/// Whether the first `keys.len()` sort keys name exactly the columns of `keys`.
fn prefix_covers(order_by: &[SortKey], keys: &[usize]) -> bool {
    order_by.len() >= keys.len() && {
        let want: HashSet<usize> = keys.iter().copied().collect();
        let got: HashSet<usize> = order_by[..keys.len()].iter().map(|k| k.col).collect();
        want.len() == keys.len() && want == got
    }
}

/// Whether `e` reads column `col`.
fn reads_col(e: &Expr, col: usize) -> bool {
    match e {
        Expr::Col(i) => *i == col,
        Expr::Lit(_) => false,
        Expr::Cmp(a, _, b) | Expr::And(a, b) | Expr::Or(a, b) => reads_col(a, col) || reads_col(b, col),
        Expr::Not(a) | Expr::IsNull(a) => reads_col(a, col),
    }
}

fn check_expr(e: &Expr, n: usize) -> Result<(), MergeError> {
    match e {
        Expr::Col(i) if *i >= n => Err(invalid(format!("HAVING column {i} out of range"))),
        Expr::Col(_) | Expr::Lit(_) => Ok(()),
        Expr::Cmp(a, _, b) | Expr::And(a, b) | Expr::Or(a, b) => {
            check_expr(a, n)?;
            check_expr(b, n)
        }
        Expr::Not(a) | Expr::IsNull(a) => check_expr(a, n),
    }
}

impl<S: RowSource> Merger<S> {
    /// Checks the spec against the shard columns (`metas`, one per shard column,
    /// helpers included) and prepares the merge. [`MergeError::Unsupported`] means the
    /// statement must be refused with error 1235; [`MergeError::InvalidSpec`] is a
    /// planner bug.
    pub fn new(sources: Vec<S>, spec: MergeSpec, metas: Vec<ColumnMeta>) -> Result<Self, MergeError> {
        let n = metas.len();
        if spec.visible == 0 || spec.visible > n {
            return Err(invalid(format!(
                "{} visible columns of {n} shard columns",
                spec.visible
            )));
        }
        for k in &spec.order_by {
            let m = metas
                .get(k.col)
                .ok_or_else(|| invalid(format!("sort column {} out of range", k.col)))?;
            if !orderable(m) {
                return Err(unorderable());
            }
        }
        let mut out_metas = metas.clone();
        let group = match &spec.group {
            None => None,
            Some(g) => Some(Self::grouping(g, &spec, &metas, &mut out_metas)?),
        };
        if spec.distinct {
            match &group {
                None => {
                    let all: Vec<usize> = (0..spec.visible).collect();
                    if !prefix_covers(&spec.order_by, &all) {
                        return Err(invalid(
                            "DISTINCT needs the shards sorted by every visible column first",
                        ));
                    }
                }
                Some(g) => {
                    // Groups are unique by their keys: DISTINCT is a no-op when every
                    // key is visible, and cannot be streamed otherwise.
                    if g.keys.iter().any(|(c, _)| *c >= spec.visible) {
                        return Err(MergeError::Unsupported(
                            "DISTINCT over grouped rows that do not select every GROUP BY column".to_string(),
                        ));
                    }
                }
            }
        }
        let out_kinds = out_metas.iter().map(kind).collect();
        let kmerge = KMerge::new(sources, &spec.order_by, &metas)?;
        Ok(Merger {
            kmerge,
            visible: spec.visible,
            limit: spec.limit,
            distinct: spec.distinct && group.is_none(),
            group,
            out_metas,
            out_kinds,
            last_distinct: None,
            skipped: 0,
            emitted: 0,
            done: false,
            cuts: Cuts::default(),
        })
    }

    fn grouping(
        g: &super::spec::GroupSpec,
        spec: &MergeSpec,
        metas: &[ColumnMeta],
        out_metas: &mut [ColumnMeta],
    ) -> Result<Grouping, MergeError> {
        let n = metas.len();
        let mut keys = Vec::with_capacity(g.keys.len());
        for &c in &g.keys {
            let m = metas
                .get(c)
                .ok_or_else(|| invalid(format!("group key {c} out of range")))?;
            keys.push((c, kind(m)));
        }
        if !prefix_covers(&spec.order_by, &g.keys) {
            return Err(invalid("shards must sort partial groups by the group keys first"));
        }
        let mut agg_at: Vec<Option<usize>> = vec![None; n];
        let mut aggs = Vec::with_capacity(g.aggs.len() + 1);
        let mut distinct_col = None;
        for a in &g.aggs {
            if g.keys.contains(&a.col) {
                return Err(invalid(format!(
                    "column {} is both a key and an aggregate",
                    a.col
                )));
            }
            if agg_at.get(a.col).is_some_and(Option::is_some) {
                return Err(invalid(format!("two aggregates in column {}", a.col)));
            }
            let mut plan = AggPlan::new(a, metas)?;
            match (&g.tagged, a.kind.distinct_arg(a.col)) {
                (None, Some(x)) => {
                    if distinct_col.is_some_and(|c| c != x) {
                        return Err(MergeError::Unsupported(
                            "COUNT/SUM/AVG(DISTINCT) of two different expressions across shards".to_string(),
                        ));
                    }
                    distinct_col = Some(x);
                }
                (None, None) => {}
                (Some(t), x) => {
                    // The rows of x's own tag, or (other aggregates) those of tag 0.
                    let tag = match x {
                        Some(x) => t.x_cols.iter().position(|&c| c == x).ok_or_else(|| {
                            invalid(format!("DISTINCT argument column {x} is not a tagged stream's"))
                        })?,
                        None => 0,
                    };
                    plan = plan.only_tag(t.tag_col, tag);
                }
            }
            out_metas[a.col] = plan.output_meta(&metas[a.col]);
            agg_at[a.col] = Some(aggs.len());
            aggs.push(plan);
        }
        if let Some(x) = distinct_col {
            if spec.order_by.get(g.keys.len()).map(|k| k.col) != Some(x) {
                return Err(invalid(
                    "COUNT/SUM/AVG(DISTINCT x) needs the shards sorted by the group keys, then x",
                ));
            }
        }
        if let Some(t) = &g.tagged {
            // Sorted by the keys, the tag, then each stream's x (NULL outside its tag), so
            // the rows of one tag in a group come together, sorted by their x.
            let rest: Vec<usize> = spec.order_by[g.keys.len()..].iter().map(|k| k.col).collect();
            let want: Vec<usize> = std::iter::once(t.tag_col)
                .chain(t.x_cols.iter().copied())
                .collect();
            if t.x_cols.len() < 2 || rest.len() < want.len() || rest[..want.len()] != want[..] {
                return Err(invalid(
                    "tagged DISTINCT streams need the shards sorted by the group keys, the tag, then each x",
                ));
            }
            if metas.get(t.tag_col).map(kind) != Some(Kind::Int) {
                return Err(invalid("the tag column is not an integer column"));
            }
            distinct_col = Some(t.tag_col);
        }
        // Without GROUP BY the server's aggregate row may be the row of no rows (its other
        // columns NULL), so it marks MIN/MAX and the other selected columns nullable; the
        // shards, grouping by a DISTINCT argument, marked them as their columns are.
        if g.keys.is_empty() && distinct_col.is_some() {
            for a in &g.aggs {
                if matches!(a.kind, AggKind::Min | AggKind::Max) {
                    out_metas[a.col].flags &= !super::value::flags::NOT_NULL;
                }
            }
        }
        // An AVG's count column is merged as a COUNT too (it may be visible or in HAVING),
        // over the AVG's own rows.
        let counts: Vec<(usize, Option<(usize, usize)>)> = aggs
            .iter()
            .filter_map(|a| a.avg_count_col().map(|c| (c, a.tag())))
            .collect();
        for (c, tag) in counts {
            if g.keys.contains(&c) {
                return Err(invalid(format!("AVG count column {c} is a group key")));
            }
            if agg_at[c].is_none() {
                agg_at[c] = Some(aggs.len());
                let plan = AggPlan::count_of(c);
                aggs.push(match tag {
                    Some((col, t)) => plan.only_tag(col, t),
                    None => plan,
                });
            }
        }
        let mut concats = Vec::new();
        if let Some(c) = &g.concat {
            if distinct_col.is_some() {
                return Err(MergeError::Unsupported(
                    "GROUP_CONCAT beside COUNT/SUM/AVG(DISTINCT) across shards".to_string(),
                ));
            }
            for item in &c.items {
                if g.keys.contains(&item.col) || agg_at.get(item.col).is_some_and(Option::is_some) {
                    return Err(invalid(format!(
                        "GROUP_CONCAT column {} is also a key or an aggregate",
                        item.col
                    )));
                }
                concats.push(ConcatPlan::new(c, item, metas)?);
            }
        }
        if let Some(h) = &g.having {
            check_expr(h, n)?;
            having::check_exact(h, out_metas)?;
        }
        for k in &g.order_after {
            let m = out_metas
                .get(k.col)
                .ok_or_else(|| invalid(format!("order_after column {} out of range", k.col)))?;
            if !orderable(m) {
                return Err(unorderable());
            }
        }
        let order_after = OrderKey::resolve(&g.order_after, out_metas)?;
        Ok(Grouping {
            keys,
            aggs,
            agg_at,
            having: g.having.clone(),
            order_after,
            pending: None,
            exhausted: false,
            started: false,
            columns: n,
            sorted: None,
            last_concat: vec![(0, false); concats.len()],
            having_reads_concat: g
                .having
                .as_ref()
                .is_some_and(|h| concats.iter().any(|c| reads_col(h, c.col))),
            concats,
        })
    }

    /// Metadata of the merged columns (helpers included; the client sees the first
    /// `visible`). AVG columns become DECIMAL with 4 more decimals (or DOUBLE), and
    /// COUNT(DISTINCT) columns BIGINT: column definitions sent to the client should say so.
    pub fn output_metas(&self) -> &[ColumnMeta] {
        &self.out_metas
    }

    /// Number of columns the client sees.
    pub fn visible(&self) -> usize {
        self.visible
    }

    /// Shard rows consumed by the merge so far.
    pub fn rows_merged(&self) -> u64 {
        self.kmerge.rows_pulled()
    }

    /// What the server's `FOUND_ROWS()` says after the statement (without
    /// SQL_CALC_FOUND_ROWS): the rows it produced up to the LIMIT, those OFFSET skipped
    /// included.
    pub fn found_rows(&self) -> u64 {
        self.skipped + self.emitted
    }

    /// Rows returned to the client so far.
    pub fn rows_returned(&self) -> u64 {
        self.emitted
    }

    /// GROUP_CONCAT results cut so far: the `Row N` of the server's warnings 1260 (the
    /// first [`MAX_CUT_WARNINGS`]) and their number.
    pub fn cut_warnings(&self) -> (&[u64], u64) {
        (&self.cuts.rows, self.cuts.total)
    }

    /// The next output row payload (text protocol, visible columns only), or `None` at
    /// the end. Stops pulling from the sources as soon as the LIMIT is reached.
    pub async fn next_row(&mut self) -> Result<Option<Bytes>, MergeError> {
        loop {
            if self.done {
                return Ok(None);
            }
            if self.limit.is_some_and(|l| self.emitted >= l.count) {
                self.done = true;
                return Ok(None);
            }
            let next = self.next_stage().await;
            let Some(row) = next.map_err(|e| self.over_read(e))? else {
                self.done = true;
                return Ok(None);
            };
            if self.limit.is_some_and(|l| self.skipped < l.offset) {
                self.skipped += 1;
                continue;
            }
            // Sent: the server computes its GROUP_CONCATs now (not for rows OFFSET skips);
            // under a final sort it did when the group was formed (`next_stage`).
            if let Some(g) = self
                .group
                .as_ref()
                .filter(|g| g.order_after.is_empty() && !g.having_reads_concat)
            {
                self.cuts.record(&g.last_concat);
            }
            self.emitted += 1;
            return Ok(Some(row.visible_payload(self.visible)));
        }
    }

    /// After the last row: reads the parts to their ends for their warnings, and
    /// refuses the statement when they reported some. A merged result cannot give the server's warnings: their number follows
    /// the rows each part evaluated (rows past a LIMIT the server never reaches, a
    /// group's rows evaluated once per part) and their order the parts' plans. Warnings
    /// of GROUP_CONCAT cuts the merge computes itself ([`Merger::cut_warnings`]): with
    /// such cuts, the parts' own (a cut sub-group) are not counted. Every row left is
    /// read (and dropped: memory stays bounded): a part's warnings are only in its last
    /// packet, and a part stopped earlier would leave the statement answered without
    /// warnings the server gives. Parts of an ORDER BY … LIMIT carry the LIMIT, so
    /// this costs little there; a grouped statement's parts may send many rows more.
    pub async fn finish(&mut self) -> Result<(), MergeError> {
        let drained = self.kmerge.drain(usize::MAX).await;
        drained.map_err(|e| self.over_read(e))?;
        match self.kmerge.warnings() {
            Some(n) if n > 0 && self.cuts.total == 0 => Err(MergeError::Unsupported(format!(
                "the parts of this statement on the sub-tables gave {n} warning(s), which a merged \
                 result cannot pass on as the server gives them (their number follows the rows each \
                 part read, their order its plan); refused rather than answered without them"
            ))),
            _ => Ok(()),
        }
    }

    /// A part's own error met while merging a statement with a LIMIT: each part reads
    /// `offset + count` rows and evaluates the select list on all of them, where the
    /// server, applying the LIMIT to one table, evaluates it only on the rows it sends (a
    /// BIGINT overflow on a row past the window is no error there). Refused: the error
    /// may not be the server's answer.
    fn over_read(&self, e: MergeError) -> MergeError {
        match e {
            MergeError::Server { code, message, .. } if self.limit.is_some() => {
                MergeError::Unsupported(over_read_refusal(code, &message))
            }
            // The merge applies the HAVING; the server moves a HAVING on the group keys
            // into its WHERE and never evaluates the select list on those rows.
            MergeError::Server { code, message, .. }
                if self.group.as_ref().is_some_and(|g| g.having.is_some()) =>
            {
                MergeError::Unsupported(having_refusal(code, &message))
            }
            e => e,
        }
    }

    /// The next row after grouping, HAVING, DISTINCT and order_after (before the limit).
    async fn next_stage(&mut self) -> Result<Option<TextRow>, MergeError> {
        let Some(g) = self.group.as_mut() else {
            loop {
                let Some(row) = self.kmerge.next().await? else {
                    return Ok(None);
                };
                if self.distinct {
                    let kinds = &self.out_kinds[..self.visible];
                    if let Some(last) = &self.last_distinct {
                        let same = kinds
                            .iter()
                            .enumerate()
                            .all(|(i, k)| compare_opt(last.field(i), row.field(i), *k) == Ordering::Equal);
                        if same {
                            continue;
                        }
                    }
                    self.last_distinct = Some(row.clone());
                }
                return Ok(Some(row));
            }
        };
        if g.order_after.is_empty() {
            return next_passing_group(g, &mut self.kmerge, &self.out_kinds, &mut self.cuts).await;
        }
        if g.sorted.is_none() {
            // Buffer the groups; with a LIMIT keep only the best offset+count.
            let cap = self
                .limit
                .map(|l| usize::try_from(l.offset.saturating_add(l.count)).unwrap_or(usize::MAX));
            let mut buf: Vec<(u64, TextRow)> = Vec::new();
            let mut seq = 0u64;
            let keys = g.order_after.clone();
            let sort = |buf: &mut Vec<(u64, TextRow)>| {
                buf.sort_by(|a, b| cmp_rows(&a.1, &b.1, &keys).then(a.0.cmp(&b.0)));
            };
            while let Some(row) =
                next_passing_group(g, &mut self.kmerge, &self.out_kinds, &mut self.cuts).await?
            {
                if !g.having_reads_concat {
                    self.cuts.record(&g.last_concat);
                }
                buf.push((seq, row));
                seq += 1;
                if let Some(cap) = cap {
                    if buf.len() >= cap.saturating_mul(2).max(1024) {
                        sort(&mut buf);
                        buf.truncate(cap);
                    }
                }
            }
            sort(&mut buf);
            if let Some(cap) = cap {
                buf.truncate(cap);
            }
            let rows: Vec<TextRow> = buf.into_iter().map(|(_, r)| r).collect();
            g.sorted = Some(rows.into_iter());
        }
        Ok(g.sorted.as_mut().and_then(Iterator::next))
    }
}

/// The next merged group that passes HAVING.
async fn next_passing_group<S: RowSource>(
    g: &mut Grouping,
    k: &mut KMerge<S>,
    out_kinds: &[Kind],
    cuts: &mut Cuts,
) -> Result<Option<TextRow>, MergeError> {
    loop {
        let Some(row) = next_group(g, k).await? else {
            return Ok(None);
        };
        // A HAVING that reads a GROUP_CONCAT makes the server compute it (and warn for
        // its cut) for every group, passing or not.
        if g.having_reads_concat {
            cuts.record(&g.last_concat);
        }
        match &g.having {
            Some(h) if having::eval(h, &row, out_kinds) != Tri::True => continue,
            _ => return Ok(Some(row)),
        }
    }
}

/// Aggregates without GROUP BY answer one row even over no rows (COUNT 0, SUM NULL, …).
/// Shards give their own such row unless they grouped by a COUNT/SUM/AVG(DISTINCT x)
/// argument, and then none: the merge gives it. Other columns are NULL, as the server
/// gives a column of no row (the planner refuses other expressions there).
fn empty_aggregate(g: &mut Grouping) -> Option<TextRow> {
    if !g.keys.is_empty() || g.started {
        return None;
    }
    g.started = true;
    let outs: Vec<Option<Vec<u8>>> = g.aggs.iter().map(|a| a.finish(a.new_acc())).collect();
    g.last_concat.iter_mut().for_each(|s| *s = (0, false));
    let fields = (0..g.columns).map(|i| match g.agg_at.get(i).copied().flatten() {
        Some(j) => outs[j].as_deref(),
        None => None,
    });
    Some(TextRow::from_fields(fields))
}

/// Combines the consecutive rows of the next group (equal keys under each key's
/// collation) into one row.
async fn next_group<S: RowSource>(
    g: &mut Grouping,
    k: &mut KMerge<S>,
) -> Result<Option<TextRow>, MergeError> {
    let first = match g.pending.take() {
        Some(r) => r,
        None if g.exhausted => return Ok(None),
        None => match k.next().await? {
            Some(r) => r,
            None => {
                g.exhausted = true;
                return Ok(empty_aggregate(g));
            }
        },
    };
    g.started = true;
    let mut accs: Vec<Acc> = g.aggs.iter().map(AggPlan::new_acc).collect();
    for (a, acc) in g.aggs.iter().zip(accs.iter_mut()) {
        a.accumulate(acc, &first)?;
    }
    let mut cats: Vec<ConcatAcc> = vec![ConcatAcc::default(); g.concats.len()];
    for (c, acc) in g.concats.iter().zip(cats.iter_mut()) {
        c.accumulate(acc, &first)?;
    }
    loop {
        match k.next().await? {
            None => {
                g.exhausted = true;
                break;
            }
            Some(r) => {
                let same = g
                    .keys
                    .iter()
                    .all(|(c, kd)| compare_opt(first.field(*c), r.field(*c), *kd) == Ordering::Equal);
                if !same {
                    g.pending = Some(r);
                    break;
                }
                for (a, acc) in g.aggs.iter().zip(accs.iter_mut()) {
                    a.accumulate(acc, &r)?;
                }
                for (c, acc) in g.concats.iter().zip(cats.iter_mut()) {
                    c.accumulate(acc, &r)?;
                }
            }
        }
    }
    let outs: Vec<Option<Vec<u8>>> = g.aggs.iter().zip(accs).map(|(a, acc)| a.finish(acc)).collect();
    let cat_outs: Vec<Option<Vec<u8>>> = g
        .concats
        .iter()
        .zip(&cats)
        .map(|(c, acc)| c.finish(acc))
        .collect();
    for (s, acc) in g.last_concat.iter_mut().zip(&cats) {
        *s = (acc.appended, acc.cut);
    }
    let fields = (0..first.len()).map(|i| match g.agg_at.get(i).copied().flatten() {
        Some(j) => outs[j].as_deref(),
        None => match g.concats.iter().position(|c| c.col == i) {
            Some(j) => cat_outs[j].as_deref(),
            None => first.field(i),
        },
    });
    Ok(Some(TextRow::from_fields(fields)))
}
