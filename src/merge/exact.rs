//! Where comparing merged rows would not be the server's comparison, whatever the
//! collation tables say: refusals decided from the merge spec and the columns' types.

use super::collation::{collation_name, Chars};
use super::spec::{AggKind, MergeSpec};
use super::value::{kind, types, ColumnMeta, Kind};

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

/// The GROUP_CONCAT columns the merge may cut at `group_concat_max_len`: where depends
/// on the result's own character set, which the column definition does not carry.
pub fn cut_columns(spec: &MergeSpec) -> Vec<usize> {
    let concat = spec.group.as_ref().and_then(|g| g.concat.as_ref());
    concat.map_or_else(Vec::new, |c| c.items.iter().map(|i| i.col).collect())
}

/// A string column, binary or not.
pub fn is_string(m: &ColumnMeta) -> bool {
    matches!(m.column_type, 15 | 249..=254)
}

/// A non-binary string column (its collation decides comparisons).
pub fn is_text(m: &ColumnMeta) -> bool {
    const BINARY_COLLATION: u16 = 63;
    is_string(m) && m.collation != BINARY_COLLATION
}

/// Why comparing the merged rows of `spec` would not be exactly the server's, if so.
/// `metas`: the columns with the collations they compare under and the ones their bytes
/// arrive in; `sort_length_in_statement`: the statement's own text (`SET STATEMENT …
/// FOR`) names `max_sort_length`.
pub fn inexact_comparison(
    spec: &MergeSpec,
    metas: &[ColumnMeta],
    sort_length_in_statement: bool,
) -> Option<String> {
    let compared = compared_columns(spec);
    let meta = |c: usize| metas.get(c);
    // Strings sent in another character set than their collation's (a utf8mb4 column to
    // a latin1 client): the merge does not convert them back (see `Chars::Foreign`).
    if let Some(m) = compared
        .iter()
        .filter_map(|&c| meta(c))
        .find(|m| is_text(m) && matches!(kind(m), Kind::Str(c) if c.chars == Chars::Foreign))
    {
        return Some(format!(
            "sluice: ordering, grouping or comparing a {} string column across shards for a client whose \
             results are in {} (SET NAMES) is not supported",
            collation_name(m.collation),
            collation_name(m.wire).split('_').next().unwrap_or_default()
        ));
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
    // MIN/MAX of a YEAR column: the server writes the year 0 as `0000` or `0` by plan
    // (through a temporary table or not).
    if spec.group.as_ref().is_some_and(|g| {
        g.aggs.iter().any(|a| {
            matches!(a.kind, AggKind::Min | AggKind::Max)
                && meta(a.col).is_some_and(|m| m.column_type == types::YEAR)
        })
    }) {
        return Some(
            "sluice: MIN/MAX of a YEAR column across shards is not supported (the server's text for the year 0 \
             depends on its plan)"
                .into(),
        );
    }
    // The server compares only the first max_sort_length bytes of strings when it
    // sorts (ORDER BY, and GROUP BY / DISTINCT done by sorting), all of them when it
    // reads an index or a temporary table's key: the merge refuses values past the
    // session's value (`beyond_sort_length`), which a statement setting its own hides.
    if sort_length_in_statement && compares_strings(spec, metas) {
        return Some(
            "sluice: ordering, grouping or comparing strings across shards in a statement that sets \
             max_sort_length (SET STATEMENT max_sort_length = … FOR) is not supported (the server compares a \
             prefix or the whole value depending on its plan)"
                .into(),
        );
    }
    None
}

/// Whether the merge compares strings (text or binary): what `max_sort_length` cuts.
fn compares_strings(spec: &MergeSpec, metas: &[ColumnMeta]) -> bool {
    compared_columns(spec)
        .iter()
        .any(|&c| metas.get(c).is_some_and(is_string))
}

/// Whether the merge compares a TIMESTAMP column (ORDER BY, GROUP BY, DISTINCT,
/// MIN/MAX): the server orders those by their UTC value, the merge by the text the
/// session's `time_zone` shows, which is the same order only while that zone keeps one
/// UTC offset (see [`ZONE_OFFSETS`]).
pub fn compares_timestamp(spec: &MergeSpec, metas: &[ColumnMeta]) -> bool {
    compared_columns(spec)
        .iter()
        .any(|&c| metas.get(c).is_some_and(|m| m.column_type == types::TIMESTAMP))
}

/// How many UTC offsets the session's `time_zone` shows, as the server applies it
/// (`SYSTEM`, the server's default, a named zone or one set from a variable alike),
/// sampled every half month from 1970 to 2038, the TIMESTAMP range: more than one is
/// daylight saving time or a changed offset. (Each sample's local text minus its UTC
/// instant, over the Sequence engine's `mysql.seq_0_to_1633`: qualified, so it needs no
/// default database; its BIGINT UNSIGNED made signed, since offsets can be negative.)
pub const ZONE_OFFSETS: &str = "SELECT COUNT(DISTINCT TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', \
     FROM_UNIXTIME(s)) - s) FROM (SELECT CAST(seq AS SIGNED) * 1314900 AS s FROM mysql.seq_0_to_1633) AS x";

/// The refusal of a TIMESTAMP comparison under a zone whose offset changes.
pub fn timestamp_refusal() -> String {
    "sluice: ordering, grouping or MIN/MAX of a TIMESTAMP column across shards under a time_zone with \
     daylight saving time (or another change of offset) is not supported (the server orders by UTC; \
     the text such a zone shows does not follow that order)"
        .to_string()
}

/// Why a merged result of groups or DISTINCT rows would not be the server's for a
/// FLOAT/DOUBLE expression with a fixed number of decimals (`ROUND(x, 1)`), if it has one
/// (`defs`: the result's column definitions): the server clips a value wider than that
/// type's width where it stores it in a temporary table (`1e30` becomes
/// `100000000000000000.0`) and not elsewhere, so its rows depend on its plan, which the
/// parts' (grouping by other keys, on smaller tables) do not share.
pub fn plan_dependent_double(spec: &MergeSpec, defs: &[bytes::Bytes]) -> Option<String> {
    /// Decimals of a FLOAT/DOUBLE whose digits are not fixed.
    const NOT_FIXED: u8 = 31;
    if spec.group.is_none() && !spec.distinct {
        return None;
    }
    let fixed_double_expr = defs.iter().take(spec.visible).any(|d| {
        let expression = super::value::column_origin(d).is_none_or(|o| o.2.is_empty());
        super::value::parse_column_def(d).is_some_and(|m| {
            matches!(m.column_type, types::FLOAT | types::DOUBLE) && m.decimals < NOT_FIXED && expression
        })
    });
    fixed_double_expr.then(|| {
        "sluice: grouping or DISTINCT across shards with a FLOAT/DOUBLE expression of fixed decimals \
         (ROUND(x, n), …) in the result is not supported (the server clips such values by plan)"
            .to_string()
    })
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
