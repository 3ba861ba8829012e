//! Streaming merge of cross-shard SELECT results (text protocol).
//!
//! The planner (`src/shard/`) rewrites a statement per shard and describes the merge
//! in a [`MergeSpec`]; the executor feeds each shard's rows through a [`RowSource`];
//! a [`Merger`] yields the client's rows:
//!
//! ```text
//! k-way merge (order_by) → group merge (aggregates, GROUP_CONCAT) → HAVING → DISTINCT →
//! order_after → offset/limit
//! ```
//!
//! Executor's side, in short: parse each shard's column definitions with
//! [`parse_column_def`] (put the column's real collation id in [`ColumnMeta::collation`]
//! when the schema is known: a column definition carries the *connection's* collation),
//! build the [`Merger`] (a [`MergeError::Unsupported`] answer becomes error 1235 before
//! anything is sent), send the client the first `visible` column definitions (rewritten
//! with [`rewrite_column_def`] from [`Merger::output_metas`] for AVG / COUNT(DISTINCT)
//! columns), then each payload of [`Merger::next_row`] as a row packet. Prepared
//! statements: [`binary_row_to_text`] in, [`text_row_to_binary`] out.
//!
//! Memory is O(number of shards) for ORDER BY / LIMIT / DISTINCT / GROUP BY in shard
//! order, whatever the offset; only a grouped query whose final order differs from the
//! group order (`order_after`) buffers groups (at most `offset + count` of them with a
//! LIMIT). Values compare as the server compares them ([`compare`]).
//!
//! What is approximated (everything else is meant to be byte-exact with MariaDB 10.11,
//! and is tested against texts captured from it):
//! - string order under `utf8mb4_unicode_ci` and other UCA collations, and under
//!   case-insensitive collations other than `utf8mb4/utf8mb3_general_ci` and
//!   `latin1_swedish_ci` (see [`collation`]). ORDER BY then still returns every row, but
//!   two strings the approximation orders differently from the server may come out of
//!   order, and GROUP BY / DISTINCT keys it judges differently may split or join groups
//!   ([`exact_order`] tells the planner when a column is affected);
//! - SUM/AVG of FLOAT/DOUBLE add the shards' already-printed partial sums, so the last
//!   bit may differ from the server's single running sum (and a `DOUBLE(M,D)` partial
//!   is already rounded to D decimals);
//! - the representative value of a non-aggregated, non-key column in a group (MariaDB
//!   without ONLY_FULL_GROUP_BY) and of a group key whose spellings differ only in case
//!   is the first row in merged order, where the server shows whichever row it met first;
//!   likewise the spelling `GROUP_CONCAT(DISTINCT x ORDER BY x)` keeps of values equal
//!   under the collation, and the row numbers of GROUP_CONCAT's cut warnings with TEXT/BLOB
//!   arguments (the server numbers those by its scan; see `concat.rs`).
//!
//! Callers must refuse (error 1235) what [`Merger::new`] rejects with
//! [`MergeError::Unsupported`], e.g. ORDER BY / GROUP BY / DISTINCT over ENUM or SET
//! columns (the server sorts those by index; see [`orderable`]).

mod agg;
mod binary;
pub mod collation;
mod collation_tables;
mod concat;
mod exact;
mod having;
mod kmerge;
mod num;
mod pipeline;
mod row;
mod spec;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;
mod value;

pub use binary::{binary_row_to_text, parse_binary_row, text_row_to_binary};
pub use exact::{
    compared_columns, compares_timestamp, cut_columns, inexact_avg, inexact_comparison, is_string, is_text,
    plan_dependent_double, timestamp_refusal, ZONE_OFFSETS,
};
pub use having::Tri;
pub use kmerge::{KMerge, RowSource};
pub use num::format_double;
pub use pipeline::{having_refusal, over_read_refusal, Merger, MAX_CUT_WARNINGS};
pub use row::{encode_text_row, TextRow};
pub use spec::{
    AggKind, AggSpec, CmpOp, CollationOf, Concat, ConcatItem, Expr, GroupSpec, Limit, MergeSpec, SortKey,
    Tagged, Value,
};
pub use value::{
    column_length, column_origin, compare, computed_column_def, exact_order, flags, orderable,
    parse_column_def, rewrite_column_def, types, ColumnMeta,
};

/// Errors of the merge. [`MergeError::Unsupported`] maps to `ER_NOT_SUPPORTED_YET`
/// (1235); [`MergeError::Server`] carries a shard's own error to forward to the client;
/// the others are internal errors (a broken shard stream or a planner bug).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MergeError {
    /// A row packet that is not a valid text-protocol row.
    #[error("malformed row from a shard: {0}")]
    Malformed(&'static str),
    /// A shard row with another number of columns than the result's definition.
    #[error("shard {source_index} returned {got} columns, expected {expected}")]
    ColumnCount {
        source_index: usize,
        expected: usize,
        got: usize,
    },
    /// A value that does not parse as its column's type (in an aggregate).
    #[error("unexpected value {value:?} in column {col}")]
    BadValue { col: usize, value: String },
    /// The merge spec does not fit the shard columns (a planner bug).
    #[error("invalid merge spec: {0}")]
    InvalidSpec(String),
    /// The statement cannot be merged exactly: refuse it with error 1235.
    #[error("not supported across shards: {0}")]
    Unsupported(String),
    /// An error packet from a shard.
    #[error("shard error {code} ({sql_state}): {message}")]
    Server {
        code: u16,
        sql_state: String,
        message: String,
    },
    /// A row source failed (connection lost, timeout, …).
    #[error("shard read failed: {0}")]
    Source(String),
    /// The merge was called again after an error: its output would be incomplete.
    #[error("merge aborted after an earlier error")]
    Aborted,
}
