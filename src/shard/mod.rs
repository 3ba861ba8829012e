//! Table sharding: a logical table split into sub-tables (`post_reply_0 … post_reply_{N-1}`),
//! with statements planned so that every answer is exact or refused.
//!
//! * [`rule`]: shard rules (Atlas shorthand `db.table.column.N` or the full form) and the
//!   placement of key values (`Mod`: Euclidean remainder; `Hash`: CRC32 of the key
//!   normalized by its collation kind).
//! * [`plan()`] / [`plan_prepared`]: one statement → [`ShardPlan`] (per-shard SQL rewritten
//!   on the sqlparser AST, or for `INSERT … VALUES` cut from the client's bytes, and the
//!   [`crate::merge::MergeSpec`] of the answers), `Ok(None)` when no sharded table is
//!   involved, or a [`Refusal`] sentence for error 1235.
//!
//! Pure code: no sockets, no I/O.
//!
//! # Decisions worth knowing
//!
//! * Parsing always uses the MySQL dialect with unescaping off, so string literals reach the
//!   shards byte for byte. The per-shard text of queries and writes is the rendering of the
//!   rewritten AST (comments other than `/*+ hints */` and `/*! … */` contents are dropped;
//!   `0x141` stays as written (a hex hybrid, not the string `X'0141'`), `_utf8mb4'a'` becomes `_utf8mb4 'a'`, adjacent literals are
//!   joined). DDL keeps the client's text with only the table name token replaced (see
//!   `ddl.rs`: sqlparser renders some DDL wrongly).
//! * A statement routed to one shard is sent as written (table renamed, IN lists pruned) with
//!   a plain spec; merge limitations (GROUP_CONCAT, window functions, …) only apply when
//!   several shards answer.
//! * A contradiction (`tid = 1 AND tid = 2`) asks shard 0 alone, so the answer still has its
//!   columns (or the aggregate of no rows). Duplicates in IN lists are kept.
//! * `SELECT *`: the number of visible columns is only known from the shards' answer;
//!   [`ShardPlan::Select`] carries `wildcard_helpers` and [`bind_merge`] makes the spec.
//! * Without a wildcard, shards sort and group by select-list positions (`ORDER BY 2 DESC`,
//!   `GROUP BY 1`), so they order exactly by the columns the merge compares.
//! * Names: a GROUP BY/HAVING name equal to a select alias is taken as the alias (MySQL
//!   prefers a table column of that name; sluice has no schema). Table names compare
//!   case-sensitively (MariaDB on Linux) unless [`ShardRules::with_lower_case_table_names`].
//! * sqlparser 0.64 misreads the precedence of `||` and `XOR`; a WHERE holding them is not
//!   routed or pruned (sent unchanged to every shard), a HAVING holding them is refused.
//! * Prepared statements: parameter values are never written into SQL. Every part keeps its
//!   placeholders and runs as a prepared statement on its sub-table with the client's own
//!   typed parameters (`Part::params` says which, in its order); the values only choose the
//!   sub-tables and feed the merge (HAVING, LIMIT).
//! * `INSERT … VALUES` is split by `split.rs` at the token level (`lex.rs`): each part is the
//!   client's bytes (head with the sub-table's name, its rows, ON DUPLICATE KEY UPDATE), at any
//!   size; only what it cannot read goes to the tree planner, which `max_statement_size` bounds.

pub mod plan;
pub mod rule;

mod collations;
mod columns;
mod concat;
mod ddl;
mod describe;
mod dml;
mod dump;
mod group;
mod hazards;
mod learned;
mod lex;
mod literal;
mod names;
pub mod ok_info;
mod params;
mod part;
mod route;
mod select;
mod shape;
mod split;
mod text;
mod union;
mod visitors;
mod walk;

/// The merge contract (`src/merge/spec.rs`, re-exported by `crate::merge`).
use crate::merge as spec;

pub use columns::{columns_needed, columns_query, wants_columns, NeedColumns};
pub use describe::{
    describe, has_join, has_limit, has_union, logical_names, may_aggregate_without_group_by,
    plan_dependent_join, Describe,
};
pub use params::{needs_charset, Charset, ParamValue, Temporal};
pub use plan::{
    bind_merge, mentions_statement_time, plan, plan_prepared, Part, PartSettings, PartSql, Refusal, ShardPlan,
};
pub use rule::{
    crc32, normalize_key, parse_atlas, KeyCollation, KeyValue, ShardFn, ShardRule, ShardRules,
    DEFAULT_MAX_LONG_DATA_SIZE, DEFAULT_MAX_STATEMENT_SIZE,
};
pub use split::plan_over_bytes;
pub use text::count_placeholders;

#[cfg(test)]
mod tests;
