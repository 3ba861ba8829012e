//! Row sources and row builders for the merge tests.

use super::kmerge::RowSource;
use super::{MergeError, TextRow};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A source serving rows from memory. It panics if pulled after it reported its end
/// and, with [`VecSource::failing_after`], errors on the pull after the n-th.
pub struct VecSource {
    rows: VecDeque<TextRow>,
    pulls: Arc<AtomicUsize>,
    fail_after: Option<usize>,
    ended: bool,
    /// The warnings its end reports (`None`: a source that knows of none, as before).
    warnings: Option<u16>,
    /// The server error its pull after the last row answers instead of the end.
    server_error: Option<u16>,
}

impl VecSource {
    pub fn new(rows: Vec<TextRow>) -> Self {
        VecSource {
            rows: rows.into(),
            pulls: Arc::new(AtomicUsize::new(0)),
            fail_after: None,
            ended: false,
            warnings: None,
            server_error: None,
        }
    }

    /// Its end reports `n` warnings (known only once the end is read).
    pub fn warned(mut self, n: u16) -> Self {
        self.warnings = Some(n);
        self
    }

    /// After its rows, the server's error `code` (an overflow met on the next row).
    pub fn server_error_at_end(mut self, code: u16) -> Self {
        self.server_error = Some(code);
        self
    }

    /// Pulls beyond the first `n` return an error (a shard that must not be read on).
    pub fn failing_after(mut self, n: usize) -> Self {
        self.fail_after = Some(n);
        self
    }

    /// A counter of this source's pulls, readable after the source moved into a merger.
    pub fn pull_counter(&self) -> Arc<AtomicUsize> {
        self.pulls.clone()
    }
}

impl RowSource for VecSource {
    fn warnings(&self) -> Option<u16> {
        match self.warnings {
            Some(n) => self.ended.then_some(n),
            None => Some(0),
        }
    }

    async fn next(&mut self) -> Result<Option<TextRow>, MergeError> {
        assert!(!self.ended, "source pulled after its end");
        let n = self.pulls.fetch_add(1, Ordering::SeqCst);
        if self.fail_after.is_some_and(|max| n >= max) {
            return Err(MergeError::Source(format!("pulled too far: pull #{}", n + 1)));
        }
        let row = self.rows.pop_front();
        self.ended = row.is_none();
        match self.server_error {
            Some(code) if row.is_none() => Err(MergeError::Server {
                code,
                sql_state: "22003".into(),
                message: "BIGINT value is out of range".into(),
            }),
            _ => Ok(row),
        }
    }
}

pub fn row(fields: &[Option<&str>]) -> TextRow {
    TextRow::from_fields(fields.iter().map(|f| f.map(str::as_bytes)))
}

pub fn int_row(fields: &[Option<i64>]) -> TextRow {
    let texts: Vec<Option<String>> = fields.iter().map(|f| f.map(|v| v.to_string())).collect();
    TextRow::from_fields(texts.iter().map(|t| t.as_deref().map(str::as_bytes)))
}

pub fn int_rows(rows: &[&[i64]]) -> Vec<TextRow> {
    rows.iter()
        .map(|r| int_row(&r.iter().map(|&v| Some(v)).collect::<Vec<_>>()))
        .collect()
}

pub fn ints(r: &TextRow) -> Vec<Option<i64>> {
    (0..r.len())
        .map(|i| {
            r.field(i).map(|f| {
                std::str::from_utf8(f)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(i64::MIN)
            })
        })
        .collect()
}

/// The fields of an output row payload as strings (`None` = NULL).
pub fn texts(payload: &bytes::Bytes) -> Vec<Option<String>> {
    let r = TextRow::parse(payload.clone()).expect("output row parses");
    (0..r.len())
        .map(|i| r.field(i).map(|f| String::from_utf8_lossy(f).into_owned()))
        .collect()
}
