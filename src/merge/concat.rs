//! GROUP_CONCAT across shards: the sub-groups' partials of one group appended in the
//! merged order and cut as the server cuts (see [`super::spec::Concat`]).
//!
//! The server appends one value at a time (the separator first, except before the
//! group's first value) and, once the result is longer than `group_concat_max_len`,
//! cuts the last append to its well-formed prefix within the limit, stops, and warns
//! `Row N was cut by GROUP_CONCAT()`, N counting the values this GROUP_CONCAT has
//! appended in the statement so far. A partial holds m copies of one value v (the
//! shards group by v's bytes), so which copy crosses the limit is arithmetic.

use super::collation::{collation_name, latin1_to_utf8, to_latin1};
use super::spec::{Concat, ConcatItem};
use super::value::{compare_opt, kind, parse_int, ColumnMeta, Kind};
use super::{MergeError, TextRow};
use bytes::Bytes;
use std::borrow::Cow;
use std::cmp::Ordering;

/// How a cut keeps whole characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Binary and single-byte character sets: any byte boundary.
    Bytes,
    /// UTF-8 (utf8mb3, utf8mb4): the longest well-formed prefix.
    Utf8,
    /// A latin1 result sent as UTF-8: the server cuts its latin1 bytes (one per
    /// character) and converts after, so the merge works on latin1 bytes and converts
    /// the merged value back.
    Latin1InUtf8,
}

/// One GROUP_CONCAT column of the merge.
#[derive(Debug, Clone)]
pub(super) struct ConcatPlan {
    pub col: usize,
    len_col: usize,
    rows_col: usize,
    max_len_col: usize,
    sep_col: usize,
    distinct: Option<(usize, Kind)>,
    cut: Cut,
}

/// Running state of one GROUP_CONCAT in one group. Holds at most
/// `group_concat_max_len` bytes (and the last DISTINCT value).
#[derive(Debug, Clone, Default)]
pub(super) struct ConcatAcc {
    out: Vec<u8>,
    any: bool,
    separator: Option<Bytes>,
    /// Values appended (the cut one included).
    pub appended: u64,
    pub cut: bool,
    last: Option<Option<Bytes>>,
}

fn bad(col: usize, v: Option<&[u8]>) -> MergeError {
    let v = v.unwrap_or(b"NULL");
    MergeError::BadValue {
        col,
        value: String::from_utf8_lossy(&v[..v.len().min(64)]).into_owned(),
    }
}

fn count(row: &TextRow, col: usize) -> Result<u64, MergeError> {
    let v = row.field(col);
    v.and_then(parse_int)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| bad(col, v))
}

impl ConcatPlan {
    /// Checks the GROUP_CONCAT columns against the shard columns.
    pub fn new(c: &Concat, item: &ConcatItem, metas: &[ColumnMeta]) -> Result<ConcatPlan, MergeError> {
        let int = |col: usize, what: &str| match metas.get(col).map(kind) {
            Some(Kind::Int) => Ok(()),
            _ => Err(MergeError::InvalidSpec(format!(
                "GROUP_CONCAT {what} column {col} missing or not an integer column"
            ))),
        };
        match metas.get(item.len_col).map(kind) {
            Some(Kind::Int | Kind::Decimal) => {}
            _ => {
                return Err(MergeError::InvalidSpec(format!(
                    "GROUP_CONCAT length column {} missing or not numeric",
                    item.len_col
                )))
            }
        }
        if item.sep_col >= metas.len() {
            return Err(MergeError::InvalidSpec(format!(
                "separator column {} out of range",
                item.sep_col
            )));
        }
        int(c.rows_col, "row count")?;
        int(c.max_len_col, "max length")?;
        let meta = metas.get(item.col).ok_or_else(|| {
            MergeError::InvalidSpec(format!("GROUP_CONCAT column {} out of range", item.col))
        })?;
        // The result's own character set (learned from the server) decides where the
        // server cuts; the one it is sent in (`wire`), what the partials' bytes are.
        let (own, wire) = (collation_name(meta.collation), collation_name(meta.wire));
        let set = |n: &str| n.split('_').next().unwrap_or_default().to_string();
        let (own, wire) = (set(&own), set(&wire));
        let cut = match (own.as_str(), wire.as_str()) {
            ("binary", _) | ("latin1", "latin1" | "binary") => Cut::Bytes,
            ("ascii", "ascii" | "latin1" | "binary" | "utf8mb3" | "utf8mb4" | "utf8") => Cut::Bytes,
            ("latin1", "utf8mb3" | "utf8mb4" | "utf8") => Cut::Latin1InUtf8,
            ("utf8mb3" | "utf8mb4" | "utf8", "utf8mb3" | "utf8mb4" | "utf8" | "binary") => Cut::Utf8,
            _ => {
                return Err(MergeError::Unsupported(format!(
                    "GROUP_CONCAT of {own} strings sent in {wire} (sluice cuts results at \
                     group_concat_max_len in binary, latin1, ascii and UTF-8, sent as themselves or latin1 as UTF-8)"
                )))
            }
        };
        let distinct = match item.distinct_col {
            None => None,
            Some(x) => {
                let m = metas.get(x).ok_or_else(|| {
                    MergeError::InvalidSpec(format!("GROUP_CONCAT DISTINCT column {x} out of range"))
                })?;
                Some((x, kind(m)))
            }
        };
        Ok(ConcatPlan {
            col: item.col,
            len_col: item.len_col,
            rows_col: c.rows_col,
            max_len_col: c.max_len_col,
            sep_col: item.sep_col,
            distinct,
            cut,
        })
    }

    /// Appends one sub-group's partial.
    pub fn accumulate(&self, acc: &mut ConcatAcc, row: &TextRow) -> Result<(), MergeError> {
        if acc.cut {
            return Ok(());
        }
        // NULL: every value of the sub-group had a NULL argument (skipped by the server).
        let Some(partial) = row.field(self.col) else {
            return Ok(());
        };
        let partial = match self.cut {
            Cut::Latin1InUtf8 => Cow::Owned(to_latin1(partial)),
            _ => Cow::Borrowed(partial),
        };
        let partial = &partial[..];
        if let Some((x, xk)) = self.distinct {
            let v = row.field(x);
            if acc
                .last
                .as_ref()
                .is_some_and(|l| compare_opt(l.as_deref(), v, xk) == Ordering::Equal)
            {
                return Ok(());
            }
            acc.last = Some(row.field_bytes(x));
        }
        let max = count(row, self.max_len_col)?;
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let rows = count(row, self.rows_col)?.max(1);
        // The values of a sub-group are byte-equal (the shards group by their bytes), so
        // each is total / rows long; a DISTINCT partial holds one of them.
        let vlen = count(row, self.len_col)? / rows;
        let m = if self.distinct.is_some() { 1 } else { rows };
        if acc.separator.is_none() {
            let sep = row.field_bytes(self.sep_col).unwrap_or_default();
            acc.separator = Some(match self.cut {
                Cut::Latin1InUtf8 => Bytes::from(to_latin1(&sep)),
                _ => sep,
            });
        }
        let sep = acc.separator.clone().unwrap_or_default();
        let s = sep.len() as u64;
        let lead: &[u8] = if acc.any { &sep } else { b"" };
        // The whole partial: m values, m - 1 separators.
        let full = m
            .checked_mul(vlen)
            .and_then(|v| v.checked_add((m - 1).checked_mul(s)?))
            .ok_or_else(|| bad(self.col, Some(partial)))?;
        // Values longer than the server's max_sort_length (1024 bytes) that share their
        // first 1024 group together: the lengths then do not add up. A partial shorter
        // than the limit by more than a character was not cut: take it as it is (the
        // warning's row number may then be off; the value is exact).
        let whole = partial.len() as u64 + 4 <= max as u64;
        let full = if whole { partial.len() as u64 } else { full };
        let base = acc.out.len() as u64 + lead.len() as u64;
        acc.any = true;
        if base + full <= max as u64 {
            acc.out.extend_from_slice(lead);
            acc.out.extend_from_slice(partial);
            acc.appended += m;
            return Ok(());
        }
        // Value k (1-based) ends at base + k·vlen + (k-1)·s: the first past `max` is cut.
        let room = max as u64 + s - base.min(max as u64 + s);
        let k = match vlen + s {
            0 => m,
            step => (room / step + 1).min(m),
        };
        acc.appended += k;
        acc.cut = true;
        // The cut append is the well-formed prefix of what fits (the earlier values are
        // whole characters, so the prefix of everything appended here is the same).
        let keep = max.saturating_sub(acc.out.len());
        let start = acc.out.len();
        let wanted = keep.saturating_sub(lead.len().min(keep));
        acc.out.extend_from_slice(&lead[..lead.len().min(keep)]);
        acc.out.extend_from_slice(&partial[..wanted.min(partial.len())]);
        if self.cut == Cut::Utf8 {
            let valid = match std::str::from_utf8(&acc.out[start..]) {
                Ok(_) => acc.out.len() - start,
                Err(e) => e.valid_up_to(),
            };
            acc.out.truncate(start + valid);
        }
        Ok(())
    }

    /// The merged value (`None` = NULL: no value in the group).
    pub fn finish(&self, acc: &ConcatAcc) -> Option<Vec<u8>> {
        acc.any.then(|| match self.cut {
            Cut::Latin1InUtf8 => latin1_to_utf8(&acc.out),
            _ => acc.out.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::row;
    use super::super::value::{flags, types};
    use super::*;

    fn plan(sep: &'static str, collation: u16) -> (ConcatPlan, &'static str) {
        let metas = [
            ColumnMeta::new(types::VAR_STRING, 0, collation, 0),
            ColumnMeta::new(types::LONGLONG, flags::BINARY, 63, 0),
            ColumnMeta::new(types::LONGLONG, flags::BINARY, 63, 0),
            ColumnMeta::new(types::LONGLONG, flags::BINARY, 63, 0),
            ColumnMeta::new(types::VAR_STRING, 0, collation, 0),
        ];
        let c = Concat {
            rows_col: 2,
            max_len_col: 3,
            items: vec![ConcatItem {
                col: 0,
                len_col: 1,
                sep_col: 4,
                distinct_col: None,
            }],
        };
        (ConcatPlan::new(&c, &c.items[0], &metas).expect("plan"), sep)
    }

    /// Partials (value text, copies) → merged text, values appended, cut.
    fn run(
        (p, sep): &(ConcatPlan, &str),
        max: u64,
        parts: &[(Option<&str>, u64, u64)],
    ) -> (Option<String>, u64, bool) {
        let mut acc = ConcatAcc::default();
        for (v, m, vlen) in parts {
            let (total, m, max) = ((m * vlen).to_string(), m.to_string(), max.to_string());
            p.accumulate(
                &mut acc,
                &row(&[*v, Some(&total), Some(&m), Some(&max), Some(sep)]),
            )
            .expect("accumulate");
        }
        let out = p.finish(&acc).map(|v| String::from_utf8(v).expect("utf8"));
        (out, acc.appended, acc.cut)
    }

    /// What MariaDB 10.11 gives for the same values, one row each (group_concat_max_len
    /// 6, utf8mb4): `aaaa,b` (row 2 cut), `cc,ddd`, `é,é` fits in 5 bytes, `éé,é` is cut
    /// to `éé,` within 6 bytes.
    #[test]
    fn appends_and_cuts_as_the_server() {
        let p = plan(",", 45);
        assert_eq!(
            run(&p, 6, &[(Some("aaaa"), 1, 4), (Some("bbbb"), 1, 4)]),
            (Some("aaaa,b".into()), 2, true)
        );
        assert_eq!(
            run(&p, 6, &[(Some("cc,cc"), 2, 2)]),
            (Some("cc,cc".into()), 2, false)
        );
        assert_eq!(
            run(&p, 6, &[(Some("cc,cc"), 2, 2), (Some("dd"), 1, 2)]),
            (Some("cc,cc,".into()), 3, true)
        );
        // A partial the shard cut itself (m = 5 copies of `x`): the third value crosses.
        assert_eq!(
            run(&p, 4, &[(Some("x,x,x,"), 5, 1)]),
            (Some("x,x,".into()), 3, true)
        );
        assert_eq!(
            run(&p, 6, &[(Some("éé"), 1, 4), (Some("é"), 1, 2)]),
            (Some("éé,".into()), 2, true)
        );
        assert_eq!(run(&p, 6, &[(None, 3, 0)]), (None, 0, false));
        assert_eq!(
            run(&p, 6, &[(None, 3, 0), (Some(""), 1, 0)]),
            (Some("".into()), 1, false)
        );
        // A binary result is cut at any byte.
        let b = plan("", 63);
        assert_eq!(
            run(&b, 3, &[(Some("ab"), 1, 2), (Some("cd"), 1, 2)]),
            (Some("abc".into()), 2, true)
        );
    }
}
