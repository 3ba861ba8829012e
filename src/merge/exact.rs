//! Where comparing merged rows would not be the server's comparison, whatever the
//! collation tables say: refusals decided from the merge spec and the columns' types.

use super::spec::{AggKind, MergeSpec};
use super::value::{types, ColumnMeta};

/// The columns whose values the merge compares (sort keys, group keys, MIN/MAX and
/// COUNT(DISTINCT) arguments, all visible columns for DISTINCT).
pub fn compared_columns(spec: &MergeSpec) -> Vec<usize> {
    let mut cols: Vec<usize> = spec.order_by.iter().map(|k| k.col).collect();
    if let Some(g) = &spec.group {
        cols.extend(&g.keys);
        cols.extend(g.order_after.iter().map(|k| k.col));
        cols.extend(
            g.aggs
                .iter()
                .filter(|a| matches!(a.kind, AggKind::Min | AggKind::Max))
                .map(|a| a.col),
        );
        cols.extend(g.aggs.iter().filter_map(|a| a.kind.distinct_arg(a.col)));
    }
    if spec.distinct {
        cols.extend(0..spec.visible);
    }
    cols
}

/// A non-binary string column (its collation decides comparisons).
pub fn is_text(m: &ColumnMeta) -> bool {
    const BINARY_COLLATION: u16 = 63;
    matches!(m.column_type, 15 | 249..=254) && m.collation != BINARY_COLLATION
}

/// Why comparing the merged rows of `spec` would not be exactly the server's, if so.
/// `metas`: the columns with the collations they compare under; `sent`: the collation
/// each shard column definition announced (the connection's); `sort_length_set`: the
/// session has set `max_sort_length`.
pub fn inexact_comparison(
    spec: &MergeSpec,
    metas: &[ColumnMeta],
    sent: &[Option<u16>],
    sort_length_set: bool,
) -> Option<String> {
    let compared = compared_columns(spec);
    let meta = |c: usize| metas.get(c);
    // A latin1 client gets other character sets' strings converted to latin1 bytes,
    // which a UTF-8 collation would compare as raw bytes.
    let latin1 = |id: u16| super::collation::collation_name(id).starts_with("latin1");
    if compared.iter().any(|&c| {
        let s = sent.get(c).copied().flatten();
        meta(c).is_some_and(|m| {
            is_text(m) && s.is_some_and(|s| latin1(s) && s != m.collation && !latin1(m.collation))
        })
    }) {
        return Some(
            "sluice: ordering, grouping or comparing a non-latin1 string column across shards for a latin1 \
             client (SET NAMES latin1) is not supported"
                .into(),
        );
    }
    // BIT: the server sends its bytes, or its number as text (aggregating or
    // deduplicating through a temporary table), by plan.
    if compared
        .iter()
        .any(|&c| meta(c).is_some_and(|m| m.column_type == types::BIT))
    {
        return Some(
            "sluice: MIN/MAX, DISTINCT, GROUP BY or ORDER BY of a BIT column across shards is not supported \
             (the server's text for it depends on its plan)"
                .into(),
        );
    }
    // The server compares only the first max_sort_length bytes of strings when it
    // sorts (ORDER BY, and GROUP BY / DISTINCT done by sorting), all of them when it
    // reads an index or a temporary table's key: a session value other than the default
    // makes that choice visible on ordinary values.
    if sort_length_set
        && compared
            .iter()
            .any(|&c| meta(c).is_some_and(|m| matches!(m.column_type, 15 | 249..=254)))
    {
        return Some(
            "sluice: ordering, grouping or comparing strings across shards after SET max_sort_length is not \
             supported (the server compares a prefix or the whole value depending on its plan)"
                .into(),
        );
    }
    None
}

/// Why the merged AVG would not be the server's, if so: the merge divides with the
/// server's default `div_precision_increment` (4), so a session that set another is
/// refused.
pub fn inexact_avg(spec: &MergeSpec, div_precision_set: bool) -> Option<String> {
    let avg = spec.group.as_ref().is_some_and(|g| {
        g.aggs
            .iter()
            .any(|a| matches!(a.kind, AggKind::Avg { .. } | AggKind::AvgDistinct { .. }))
    });
    (avg && div_precision_set).then(|| {
        "sluice: AVG across shards after SET div_precision_increment is not supported (the merge divides \
         with the default increment of 4)"
            .to_string()
    })
}
