//! The column order of sharded tables, for `INSERT INTO t VALUES (…)` without a column list
//! (the shard key's position in each row comes from the table's definition).
//!
//! The planner is pure: it only reads this cache. The session fills it (from
//! `information_schema.COLUMNS` of sub-table 0 on its group's master, see
//! [`columns_query`]) when a plan is refused for want of it ([`columns_needed`]), and
//! empties it after DDL on a sharded table or its sub-tables passes through sluice, and
//! reads it again [`COLUMN_ORDER_TTL`] after it read it (DDL sent to the server directly).
//! A statement planned from the cache names the columns explicitly in every part, so a
//! definition changed behind sluice's back within that second can make a part fail or
//! fill other columns, but never puts a row on a sub-table other than its key's.
//!
//! One lock, taken only to plan an INSERT without a column list and after DDL: never on the
//! path of other statements.

use std::sync::Arc;
use std::time::Duration;

use sqlparser::ast::{SetExpr, Statement, TableObject};

use super::plan::{Ctx, Refusal, Resolved, INLINE_DEPTH};
use super::rule::ShardRules;
use super::text::{depth_bound, parse, tokenize, Source};

/// How the planner's refusal for want of a table's column order begins
/// ([`wants_columns`]).
pub(super) const WANTS_COLUMNS: &str = "sluice: an INSERT without a column list into sharded table";

/// Whether a refusal is the planner's for want of a table's column order: only then is
/// [`columns_needed`] worth its parse.
pub fn wants_columns(r: &Refusal) -> bool {
    r.0.starts_with(WANTS_COLUMNS)
}

/// Visible columns of each logical table `(db, table)`, in definition order.
pub(crate) type ColumnCache = super::learned::Learned<(String, String), Arc<[String]>>;

/// How long a table's column order is trusted. DDL through sluice empties the cache; DDL
/// sent to the server directly (a reorder by `ALTER TABLE … MODIFY c … AFTER d`, an
/// online schema change's table swap) is not seen, and an INSERT planned from the old
/// order would fill other columns than the client's `VALUES` mean: so the order is read
/// again after a second (one query on the master per INSERT without a column list at most
/// every second and table; a dump's extended INSERTs take longer than that each).
pub const COLUMN_ORDER_TTL: Duration = Duration::from_secs(1);

/// A table whose column order a statement needs and the cache lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedColumns {
    /// The logical table's database and name (the cache's key).
    pub db: String,
    pub table: String,
    /// Backend group holding sub-table 0, and its name (where the definition is read).
    pub group: usize,
    pub sub_table: String,
}

/// When `sql` is an INSERT/REPLACE … VALUES without a column list into a sharded table
/// whose columns are not cached: that table. Parses the statement; called only after a
/// plan was refused.
pub fn columns_needed(sql: &str, current_db: Option<&str>, rules: &ShardRules) -> Option<NeedColumns> {
    // INSERT … VALUES, read by its head as the planner reads it (`split.rs`), at any size.
    if let Some(rule) = super::split::without_column_list(sql.as_bytes(), current_db, rules) {
        return rules
            .column_order(&rule.db, &rule.table)
            .is_none()
            .then(|| NeedColumns {
                db: rule.db.clone(),
                table: rule.table.clone(),
                group: rule.group_of(0),
                sub_table: rule.sub_table(0),
            });
    }
    // The planner's own bounds: never a larger statement, nor a deeper tree than the
    // caller's stack takes (those are refused for other reasons anyway).
    let head = sql.trim_start().get(..7).unwrap_or("");
    if sql.len() > rules.max_statement_size()
        || !(head.eq_ignore_ascii_case("INSERT ") || head.eq_ignore_ascii_case("REPLACE"))
    {
        return None;
    }
    let tokens = tokenize(sql).ok()?;
    if depth_bound(&tokens) > INLINE_DEPTH {
        return None;
    }
    let mut stmts = parse(tokens.clone()).ok()?;
    if stmts.len() != 1 {
        return None;
    }
    let Statement::Insert(ins) = stmts.remove(0) else {
        return None;
    };
    let TableObject::TableName(name) = &ins.table else {
        return None;
    };
    if !ins.columns.is_empty()
        || !matches!(
            ins.source.as_deref().map(|q| q.body.as_ref()),
            Some(SetExpr::Values(_))
        )
    {
        return None;
    }
    let ctx = Ctx {
        rules,
        db: current_db,
        src: Source::new(sql),
        tokens,
        spliceable: false,
        forced_shards: None,
        values: None,
    };
    let Resolved { rule, .. } = ctx.resolve(name)?;
    if rules.column_order(&rule.db, &rule.table).is_some() {
        return None;
    }
    Some(NeedColumns {
        db: rule.db.clone(),
        table: rule.table.clone(),
        group: rule.group_of(0),
        sub_table: rule.sub_table(0),
    })
}

/// The query that reads a sub-table's visible columns in definition order (MariaDB's
/// INVISIBLE columns take no value in `INSERT … VALUES` without a column list). Names are
/// written as hex literals, so no name needs escaping.
pub fn columns_query(need: &NeedColumns) -> String {
    fn hex(s: &str) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(2 * s.len() + 24);
        out.push_str("CONVERT(X'");
        for b in s.as_bytes() {
            let _ = write!(out, "{b:02X}");
        }
        out.push_str("' USING utf8mb4)");
        out
    }
    format!(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND \
         TABLE_NAME = {} AND EXTRA NOT LIKE '%INVISIBLE%' ORDER BY ORDINAL_POSITION",
        hex(&need.db),
        hex(&need.sub_table)
    )
}

impl ShardRules {
    /// The visible columns of logical table `db.table`, when read less than
    /// [`COLUMN_ORDER_TTL`] ago.
    pub(crate) fn column_order(&self, db: &str, table: &str) -> Option<Arc<[String]>> {
        self.columns
            .get(&(db.to_owned(), table.to_owned()), COLUMN_ORDER_TTL)
    }

    /// Remember the visible columns of logical table `db.table` (read by the session).
    pub fn learn_columns(&self, db: &str, table: &str, columns: Vec<String>) {
        self.columns
            .learn((db.to_owned(), table.to_owned()), columns.into());
    }

    /// Forget every table's columns, every statement's learned result columns and every
    /// column's collation (after DDL that may have changed a definition).
    pub fn forget_columns(&self) {
        self.columns.forget_all();
        self.descriptions.forget_all();
        self.collations.forget_all();
    }
}
