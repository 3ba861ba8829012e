//! Streaming k-way merge of sorted shard results.
//!
//! One buffered head row per source in a binary heap: memory O(number of sources),
//! whatever the offset. A source is pulled again only when the merge needs its next
//! row (the refill of the source that produced the last row is deferred to the next
//! call), so a consumer that stops after its LIMIT never pulls more than it used plus
//! the one head row per source the first call needs.

use super::spec::SortKey;
use super::value::{
    beyond_sort_length, compare_opt, kind, sort_length_refusal, ColumnMeta, Kind, DEFAULT_MAX_SORT_LENGTH,
};
use super::{MergeError, TextRow};
use std::cmp::Ordering;
use std::future::Future;

/// Rows of one shard, in the order the merge spec says the shard sorted them.
/// `Ok(None)` ends the source; the merger never calls `next` again after that.
pub trait RowSource: Send {
    fn next(&mut self) -> impl Future<Output = Result<Option<TextRow>, MergeError>> + Send;
    /// The warnings the source's server reported at the end of its rows: `Some(0)` for a
    /// source without any, `None` while its end has not been read.
    fn warnings(&self) -> Option<u16> {
        Some(0)
    }
    /// The `max_sort_length` the source's rows were sorted under and the merge compares
    /// within (see [`super::value::beyond_sort_length`]).
    fn max_sort_length(&self) -> usize {
        DEFAULT_MAX_SORT_LENGTH
    }
}

/// A resolved ORDER BY term.
#[derive(Debug, Clone, Copy)]
pub(super) struct OrderKey {
    pub col: usize,
    pub desc: bool,
    pub kind: Kind,
}

impl OrderKey {
    pub(super) fn resolve(keys: &[SortKey], metas: &[ColumnMeta]) -> Result<Vec<OrderKey>, MergeError> {
        keys.iter()
            .map(|k| {
                let m = metas.get(k.col).ok_or_else(|| {
                    MergeError::InvalidSpec(format!(
                        "sort column {} out of range ({} columns)",
                        k.col,
                        metas.len()
                    ))
                })?;
                Ok(OrderKey {
                    col: k.col,
                    desc: k.desc,
                    kind: kind(m),
                })
            })
            .collect()
    }
}

/// Compares two rows by ORDER BY terms (NULLs first in ASC, last in DESC).
pub(super) fn cmp_rows(a: &TextRow, b: &TextRow, keys: &[OrderKey]) -> Ordering {
    for k in keys {
        let o = compare_opt(a.field(k.col), b.field(k.col), k.kind);
        let o = if k.desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No source pulled yet.
    Fresh,
    /// Merging; the source whose head was handed out last still has to be refilled.
    Running { refill: Option<usize> },
    /// A source failed: the merged stream is incomplete and must not continue.
    Failed,
}

/// A k-way merge of row sources, yielding rows in `order_by` order; rows that compare
/// equal come in source order (stable).
pub struct KMerge<S: RowSource> {
    sources: Vec<S>,
    heads: Vec<Option<TextRow>>,
    /// Binary min-heap of the indices of sources that have a head row.
    heap: Vec<usize>,
    keys: Vec<OrderKey>,
    columns: usize,
    state: State,
    pulled: u64,
}

impl<S: RowSource> KMerge<S> {
    /// `metas` describe the columns every source returns; rows with another number of
    /// columns are an error.
    pub fn new(sources: Vec<S>, order_by: &[SortKey], metas: &[ColumnMeta]) -> Result<Self, MergeError> {
        let keys = OrderKey::resolve(order_by, metas)?;
        let n = sources.len();
        Ok(KMerge {
            sources,
            heads: (0..n).map(|_| None).collect(),
            heap: Vec::with_capacity(n),
            keys,
            columns: metas.len(),
            state: State::Fresh,
            pulled: 0,
        })
    }

    /// Rows pulled from the sources so far.
    pub fn rows_pulled(&self) -> u64 {
        self.pulled
    }

    /// Number of sources.
    pub fn sources(&self) -> usize {
        self.sources.len()
    }

    /// Reads every source to its end, at most `max_rows` more rows each (rows dropped),
    /// so that its warnings are known: what a part's server reported is only in its last
    /// packet. A source that has more is left as it is. Errors are the sources'.
    pub async fn drain(&mut self, max_rows: usize) -> Result<(), MergeError> {
        for s in &mut self.sources {
            let mut n = 0;
            while s.warnings().is_none() && n < max_rows {
                if s.next().await?.is_none() {
                    break;
                }
                n += 1;
            }
        }
        Ok(())
    }

    /// The warnings of all sources, `None` when some source's end was not read.
    pub fn warnings(&self) -> Option<u64> {
        self.sources
            .iter()
            .try_fold(0u64, |n, s| s.warnings().map(|w| n + u64::from(w)))
    }

    /// The next row in merged order; `Ok(None)` once every source is exhausted.
    pub async fn next(&mut self) -> Result<Option<TextRow>, MergeError> {
        match self.state {
            State::Failed => return Err(MergeError::Aborted),
            State::Fresh => {
                for i in 0..self.sources.len() {
                    self.pull(i).await?;
                }
            }
            State::Running { refill: Some(i) } => self.pull(i).await?,
            State::Running { refill: None } => {}
        }
        let Some(top) = self.pop() else {
            self.state = State::Running { refill: None };
            return Ok(None);
        };
        self.state = State::Running { refill: Some(top) };
        Ok(self.heads[top].take())
    }

    async fn pull(&mut self, i: usize) -> Result<(), MergeError> {
        let got = self.sources[i].next().await;
        match got {
            Ok(Some(row)) => {
                if row.len() != self.columns {
                    self.state = State::Failed;
                    return Err(MergeError::ColumnCount {
                        source_index: i,
                        expected: self.columns,
                        got: row.len(),
                    });
                }
                let max = self.sources[i].max_sort_length();
                if self
                    .keys
                    .iter()
                    .any(|k| beyond_sort_length(row.field(k.col), k.kind, max))
                {
                    self.state = State::Failed;
                    return Err(MergeError::Unsupported(sort_length_refusal(max)));
                }
                self.pulled += 1;
                self.heads[i] = Some(row);
                self.push(i);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    /// Source `i`'s head sorts before source `j`'s (ties: lower source index first).
    fn less(&self, i: usize, j: usize) -> bool {
        match (&self.heads[i], &self.heads[j]) {
            (Some(a), Some(b)) => cmp_rows(a, b, &self.keys).then(i.cmp(&j)) == Ordering::Less,
            _ => i < j,
        }
    }

    fn push(&mut self, src: usize) {
        self.heap.push(src);
        let mut c = self.heap.len() - 1;
        while c > 0 {
            let p = (c - 1) / 2;
            if self.less(self.heap[c], self.heap[p]) {
                self.heap.swap(c, p);
                c = p;
            } else {
                break;
            }
        }
    }

    fn pop(&mut self) -> Option<usize> {
        if self.heap.is_empty() {
            return None;
        }
        let top = self.heap.swap_remove(0);
        let n = self.heap.len();
        let mut p = 0;
        loop {
            let (l, r) = (2 * p + 1, 2 * p + 2);
            let mut m = p;
            if l < n && self.less(self.heap[l], self.heap[m]) {
                m = l;
            }
            if r < n && self.less(self.heap[r], self.heap[m]) {
                m = r;
            }
            if m == p {
                break;
            }
            self.heap.swap(p, m);
            p = m;
        }
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{int_rows, ints, VecSource};
    use super::super::value::types;
    use super::*;

    fn metas(n: usize) -> Vec<ColumnMeta> {
        vec![ColumnMeta::new(types::LONG, 0, 63, 0); n]
    }

    #[tokio::test]
    async fn merges_in_order_and_stably() {
        let sources = vec![
            VecSource::new(int_rows(&[&[1, 0], &[3, 0], &[5, 0]])),
            VecSource::new(int_rows(&[&[2, 1], &[3, 1], &[9, 1]])),
            VecSource::new(int_rows(&[])),
            VecSource::new(int_rows(&[&[0, 3], &[3, 3]])),
        ];
        let mut k = KMerge::new(sources, &[SortKey::asc(0)], &metas(2)).expect("kmerge");
        let mut got = Vec::new();
        while let Some(r) = k.next().await.expect("row") {
            got.push(ints(&r));
        }
        assert_eq!(
            got,
            vec![
                vec![Some(0), Some(3)],
                vec![Some(1), Some(0)],
                vec![Some(2), Some(1)],
                vec![Some(3), Some(0)], // equal keys: source order
                vec![Some(3), Some(1)],
                vec![Some(3), Some(3)],
                vec![Some(5), Some(0)],
                vec![Some(9), Some(1)],
            ]
        );
        assert_eq!(k.rows_pulled(), 8);
        assert!(k.next().await.expect("end").is_none());
    }

    #[tokio::test]
    async fn desc_puts_nulls_last() {
        let s = |v: &[Option<i64>]| {
            VecSource::new(v.iter().map(|x| super::super::testutil::int_row(&[*x])).collect())
        };
        let sources = vec![s(&[Some(5), Some(1), None]), s(&[Some(7), None])];
        let mut k = KMerge::new(sources, &[SortKey::desc(0)], &metas(1)).expect("kmerge");
        let mut got = Vec::new();
        while let Some(r) = k.next().await.expect("row") {
            got.push(ints(&r)[0]);
        }
        assert_eq!(got, vec![Some(7), Some(5), Some(1), None, None]);
    }

    #[tokio::test]
    async fn defers_refill_and_stops_on_errors() {
        // Source 0 fails on its third pull; the merge must not pull it before needed.
        let sources = vec![
            VecSource::new(int_rows(&[&[1], &[2]])).failing_after(2),
            VecSource::new(int_rows(&[&[10]])),
        ];
        let mut k = KMerge::new(sources, &[SortKey::asc(0)], &metas(1)).expect("kmerge");
        assert_eq!(ints(&k.next().await.expect("1").expect("row")), vec![Some(1)]);
        assert_eq!(k.rows_pulled(), 2);
        assert_eq!(ints(&k.next().await.expect("2").expect("row")), vec![Some(2)]);
        assert_eq!(k.rows_pulled(), 2 + 1);
        assert!(k.next().await.is_err()); // refilling source 0 fails
        assert!(matches!(k.next().await, Err(MergeError::Aborted)));
    }

    #[tokio::test]
    async fn wrong_width_is_an_error() {
        let sources = vec![VecSource::new(int_rows(&[&[1, 2]]))];
        let mut k = KMerge::new(sources, &[], &metas(1)).expect("kmerge");
        assert!(matches!(
            k.next().await,
            Err(MergeError::ColumnCount {
                expected: 1,
                got: 2,
                ..
            })
        ));
        assert!(KMerge::new(Vec::<VecSource>::new(), &[SortKey::asc(3)], &metas(1)).is_err());
    }
}
