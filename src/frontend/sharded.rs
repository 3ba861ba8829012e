//! Statements on sharded tables: the plan (`crate::shard`) says which
//! sub-tables get which SQL; the modules below run the parts on backend
//! connections and merge the answers exactly (`crate::merge`), streaming.
//!
//! - `shard_select.rs`: reads (scatter or in a transaction), the merge, text
//!   or binary rows;
//! - `shard_write.rs`: writes and DDL;
//! - `shard_prepared.rs`: COM_STMT_* on sharded tables;
//! - `groups.rs`: sub-tables in several backend groups (a master connection
//!   per group, one writing group per transaction);
//! - `shard_io.rs`: reading shard answers, the query log.

use crate::shard::ShardPlan;

#[path = "groups.rs"]
mod groups;
#[path = "shard_io.rs"]
mod shard_io;
#[path = "shard_prepared.rs"]
mod shard_prepared;
#[path = "shard_select.rs"]
mod shard_select;
#[path = "shard_write.rs"]
mod shard_write;

pub(super) use groups::GroupConns;
use shard_io::{not_supported, read_head, read_rows, send_query, Head};
use shard_select::RowFormat;

use super::{Closed, CmdResult, Conn, Session};

impl Session {
    /// Handle a COM_QUERY on a sharded table. `Ok(false)`: not sharded,
    /// the caller goes on as usual.
    pub(super) async fn try_sharded(&mut self, sql: &[u8]) -> Result<bool, Closed> {
        let rules = &self.rt.shard_rules;
        if rules.is_empty() {
            return Ok(false);
        }
        let text = String::from_utf8_lossy(sql);
        if !rules.mentioned_in(&text) {
            return Ok(false);
        }
        // The planner reads string literals with backslash escapes; under
        // NO_BACKSLASH_ESCAPES a key with a backslash would be placed wrongly.
        if text.contains('\\') && self.no_backslash_escapes().await {
            self.send_err(&not_supported(
                "sluice: a statement on a sharded table with a backslash in it is not supported \
                 while sql_mode has NO_BACKSLASH_ESCAPES",
            ))
            .await?;
            return Ok(true);
        }
        let rules = &self.rt.shard_rules;
        let planned = crate::shard::plan(&text, self.db.as_deref(), rules);
        match planned {
            Ok(None) => Ok(false),
            Err(r) => {
                self.send_err(&not_supported(r.0)).await?;
                Ok(true)
            }
            Ok(Some(plan)) => {
                self.run_plan(plan, RowFormat::Text).await?;
                Ok(true)
            }
        }
    }

    /// Does the session's sql_mode (on its master connection) have
    /// NO_BACKSLASH_ESCAPES? Asked only for sharded statements with a
    /// backslash; when it cannot be told, assume yes (refuse, never misplace).
    async fn no_backslash_escapes(&mut self) -> bool {
        if self.held(Conn::Master).await.is_err() {
            return true;
        }
        let Some(h) = self.master.as_mut() else {
            return true;
        };
        h.conn.dirty = true;
        if send_query(&mut h.conn, "SELECT @@session.sql_mode")
            .await
            .is_err()
        {
            return true;
        }
        let mode = match read_head(&mut h.conn).await {
            Ok(Head::Columns(_)) => match read_rows(&mut h.conn).await {
                Ok(rows) => rows
                    .front()
                    .and_then(|r| r.field(0))
                    .map(|f| String::from_utf8_lossy(f).into_owned()),
                Err(_) => None,
            },
            _ => None,
        };
        mode.is_none_or(|m| m.to_ascii_uppercase().contains("NO_BACKSLASH_ESCAPES"))
    }

    /// Run a plan; rows go back in `format`.
    async fn run_plan(&mut self, plan: ShardPlan, format: RowFormat) -> CmdResult {
        if let Some(pin) = self.pins.reason() {
            if plan.parts().iter().any(|p| p.group != 0) {
                // Such sessions keep state (user variables, temporary tables,
                // locks, unreplayed SETs) on their group-0 connection only.
                return self
                    .send_err(&not_supported(format!(
                        "sluice: this session is pinned to its master connection ({pin}); statements \
                         on sub-tables in other backend groups are not supported in it"
                    )))
                    .await;
            }
        }
        self.shared.metrics.shard_fanout(plan.parts().len(), "sharded");
        let r = match plan {
            ShardPlan::Write { parts, ddl } => self.run_write(parts, ddl).await,
            ShardPlan::Select {
                parts,
                merge,
                wildcard_helpers,
            } => self.run_select(parts, merge, wildcard_helpers, format).await,
        };
        self.groups_settle().await;
        r
    }
}
