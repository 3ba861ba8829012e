//! The server's own description of a merged statement: its result column definitions
//! (`Session::described`) and their real collations (`Session::result_collations`),
//! learned by running the client's statement once on sub-table 0 and cached per text
//! and context.

use std::sync::Arc;

use bytes::Bytes;

use crate::frontend::params::RawParam;
use crate::merge;
use crate::protocol::consts::{COM_QUERY, COM_STMT_PREPARE};

use super::io::{drain_rows, execute_prepared, read_head, Head};
use super::select::{Original, RowFormat};
use super::Session;

impl Session {
    /// The server's own result column definitions for the client's statement, when the
    /// merge's would not be sure to equal them: a merge of groups, aggregates, DISTINCT
    /// or UNION, whose parts the server runs (and describes) otherwise than the original
    /// statement (the shards group by a DISTINCT argument, read AVG as SUM and COUNT,
    /// group through a temporary table where the original does not, or the reverse).
    /// Learned by running the original statement (the client's text, the sharded table
    /// named by sub-table 0, as text or as a prepared statement with the client's
    /// parameters) on sub-table 0 and reading its column definitions (its rows are read
    /// and dropped): a PREPARE answer would not do, since the server decides there
    /// before planning (a GROUP BY key announced with its index flags at PREPARE comes
    /// back without them at EXECUTE when the server groups through a temporary table).
    /// Cached per (database, text, context): a repeated statement pays nothing.
    /// `None` (the merge's own definitions then, with the logical table's name) when not
    /// needed, not safe to run again (`Original::rerunnable`), or when it failed.
    pub(super) async fn described(
        &mut self,
        merge: &merge::MergeSpec,
        format: RowFormat,
        params: &[RawParam],
        original: Original<'_>,
    ) -> Option<Arc<[Bytes]>> {
        let needed = merge.group.is_some()
            || merge.distinct
            || crate::shard::has_union(original.sql)
            || crate::shard::has_join(original.sql);
        if !needed || !original.rerunnable {
            return None;
        }
        let ctx = self.description_context(format, params);
        // A repeated statement: one hash and one atomic load, nothing allocated.
        if let Some(d) = (self.rt.shard_rules).described_columns(self.state.db(), original.sql, ctx) {
            return Some(d);
        }
        let db = self.state.db().map(str::to_owned);
        let rt = self.rt.clone();
        let rules = &rt.shard_rules;
        let d = crate::shard::describe(original.sql, db.as_deref(), rules)?;
        let binary = (format == RowFormat::Binary).then_some(params);
        let columns = if self.in_transaction()
            || self.state.pins().reason().is_some()
            || self.state.ro_tx().is_some()
        {
            // The session's own connection of that group (what the parts use).
            let r = match self.group_master(d.group).await {
                Ok(conn) => run_for_columns(conn, &d.sql, binary).await,
                Err(_) => None,
            };
            self.drop_broken(d.group);
            r
        } else {
            let route = self.route_part(d.group).await.ok()?;
            let (mut conn, _) = self.scatter_conn(d.group, route).await.ok()?;
            run_for_columns(&mut conn, &d.sql, binary).await
        }?;
        let columns: Arc<[Bytes]> = columns
            .into_iter()
            .map(|c| crate::shard::logical_names(&c, rules).map_or(c, Bytes::from))
            .collect();
        rules.learn_description(db.as_deref(), original.sql, ctx, columns.clone());
        Some(columns)
    }

    /// The server's own collation of every result column of the client's statement: its
    /// column definitions under `character_set_results = NULL` (which then carry each
    /// column's collation, not the connection's), learned as `described` learns the
    /// definitions (the original statement on sub-table 0, cached per text and context).
    /// `None` when the statement may not run again or the server did not answer.
    pub(super) async fn result_collations(
        &mut self,
        format: RowFormat,
        params: &[RawParam],
        original: Original<'_>,
    ) -> Option<Arc<[Bytes]>> {
        if !original.rerunnable {
            return None;
        }
        // A cache key apart from the definitions `described` keeps for the same text.
        const SALT: u64 = 0x636f_6c6c_6174_696f;
        let key = self.description_context(format, params) ^ SALT;
        let rt = self.rt.clone();
        let rules = &rt.shard_rules;
        let db = self.state.db().map(str::to_owned);
        if let Some(d) = rules.described_columns(db.as_deref(), original.sql, key) {
            return Some(d);
        }
        let d = crate::shard::describe(original.sql, db.as_deref(), rules)?;
        let sql = format!("SET STATEMENT character_set_results = NULL FOR {}", d.sql);
        let binary = (format == RowFormat::Binary).then_some(params);
        // Always a connection of its own, never the session's, and not pooled again: the
        // server restores `character_set_results` after SET STATEMENT as the character
        // set's default collation (utf8mb4_general_ci after SET NAMES utf8mb4 COLLATE
        // utf8mb4_bin), so the connection would announce another collation number
        // afterwards. Column types do not depend on a transaction's rows.
        let route = self.route_part(d.group).await.ok()?;
        let (mut conn, _) = self.scatter_conn(d.group, route).await.ok()?;
        let columns = run_for_columns(&mut conn, &sql, binary).await;
        conn.broken = true;
        let columns = columns?;
        let columns: Arc<[Bytes]> = columns.into();
        rules.learn_description(db.as_deref(), original.sql, key, columns.clone());
        Some(columns)
    }

    /// What, besides the text and the database, the server's column definitions of a
    /// statement follow: the session's replayed SETs (character sets, sql_mode), the
    /// collation and capabilities it connected with (character set numbers, extended
    /// metadata), the protocol, and a prepared statement's parameter types.
    /// The protocol on its own, parameters or not: the server describes the same
    /// statement otherwise at a prepared statement's EXECUTE than as text (a grouped or
    /// DISTINCT `x COLLATE …` column carries GROUP_FLAG, 0x8000, in the binary protocol
    /// only), so one protocol's definitions must never answer the other's.
    fn description_context(&self, format: RowFormat, params: &[RawParam]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.state.sets().hash(&mut h);
        (self.key.caps, self.key.collation, self.key.mariadb_ext).hash(&mut h);
        format.hash(&mut h);
        if format == RowFormat::Binary {
            for p in params {
                (p.ty, p.null).hash(&mut h);
            }
        }
        h.finish()
    }
}

/// Run `sql` (the original statement on sub-table 0) on `conn`, as text, or with
/// `binary` parameters as a prepared statement (prepare, execute, close): its result's
/// column definitions, its rows read and dropped. `None` when the server refused it or
/// the connection failed (a failure leaves the connection marked broken).
async fn run_for_columns(
    conn: &mut crate::backend::BackendConn,
    sql: &str,
    binary: Option<&[RawParam]>,
) -> Option<Vec<Bytes>> {
    let cmd = if binary.is_some() {
        COM_STMT_PREPARE
    } else {
        COM_QUERY
    };
    conn.send_command(cmd, sql.as_bytes()).await.ok()?;
    if let Some(params) = binary {
        let bound: Vec<&RawParam> = params.iter().collect();
        execute_prepared(conn, Some(&bound)).await.ok()?;
    }
    let Ok(Head::Columns(defs)) = read_head(conn).await else {
        return None;
    };
    drain_rows(conn).await.ok()?;
    Some(defs)
}
