//! Statements on sharded tables: the plan (`crate::shard`) says which
//! sub-tables get which SQL; the modules below run the parts on backend
//! connections and merge the answers exactly (`crate::merge`), streaming.
//!
//! - `select.rs`: reads (scatter or in a transaction), the merge, text
//!   or binary rows;
//! - `write.rs`: writes and DDL;
//! - `prepared.rs`: COM_STMT_* on sharded tables;
//! - `groups.rs`: sub-tables in several backend groups (a master connection
//!   per group, one writing group per transaction);
//! - `io.rs`: reading shard answers, the query log.

use crate::protocol::response::{ResponseKind, ResponseTracker};
use crate::router::classify::Classified;
use crate::router::plan::{Pins, RouteReason};
use crate::shard::{Charset, ParamValue, Refusal, ShardPlan};

/// Statements (with their parameters) at least this large are planned on a
/// blocking thread: planning a 1 MiB statement takes about a second of CPU,
/// which must not stall the other sessions of an async worker.
const PLAN_OFF_WORKER: usize = 64 << 10;

fn run(
    text: &str,
    params: Option<(&[ParamValue], &Charset)>,
    db: Option<&str>,
    rt: &crate::runtime::Runtime,
) -> Result<Option<ShardPlan>, Refusal> {
    match params {
        None => crate::shard::plan(text, db, &rt.shard_rules),
        Some((p, cs)) => crate::shard::plan_prepared(text, p, cs, db, &rt.shard_rules),
    }
}

/// Whether `text` begins with a keyword of DDL that can change a table's
/// columns (leading comments are not skipped: only a cache is at stake, and
/// a part planned from it names its columns, see `crate::shard::columns_needed`).
fn starts_ddl(text: &str) -> bool {
    let word: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .take(8)
        .collect();
    ["ALTER", "CREATE", "DROP", "RENAME"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k))
}

/// Large statements planned at once, over all sessions: each can hold
/// hundreds of MiB while it is planned (`sharding.max_statement_size`
/// bounds one), so their number is bounded too.
static LARGE_PLANS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

mod described;
mod groups;
mod insert_id;
mod io;
mod prepared;
mod select;
mod sort_length;
mod write;

pub(super) use groups::GroupConns;
use io::{not_supported, read_head, read_rows, send_query, Head};
use select::RowFormat;

use super::pipeline::Exec;
use super::{Closed, Conn, Session};

/// A statement on sharded tables, planned by `crate::shard`: its parts, how
/// its rows go back, and a prepared statement's parameters as the client
/// sent them.
pub(in crate::frontend::session) struct Shards {
    plan: ShardPlan,
    format: RowFormat,
    params: Vec<crate::frontend::params::RawParam>,
}

/// What the shard planner says of a statement (the pipeline's first step).
pub(in crate::frontend::session) enum Sharding {
    /// It names no sharded table: the pipeline goes on as usual.
    No,
    /// Refused, the client has its error.
    Answered,
    On(Box<Shards>),
}

impl Session {
    /// Is the statement on sharded tables? A text that names one is
    /// planned by `crate::shard`; a sharded prepared statement at each
    /// EXECUTE, with its parameters (`prepared.rs`).
    pub(in crate::frontend::session) async fn sharding(
        &mut self,
        sql: &[u8],
        exec: &Exec<'_>,
    ) -> Result<Sharding, Closed> {
        match *exec {
            Exec::Text { .. } => {
                let rules = &self.rt.shard_rules;
                if rules.is_empty() {
                    return Ok(Sharding::No);
                }
                let text = String::from_utf8_lossy(sql);
                if !rules.mentioned_in(&text) {
                    return Ok(Sharding::No);
                }
                // Boxed: the sharded path's future (planning) is large, and
                // every COM_QUERY's future would otherwise include it.
                Box::pin(self.plan_text(sql, &text)).await
            }
            Exec::Sharded { id, payload } => Box::pin(self.plan_execute(id, payload)).await,
            _ => Ok(Sharding::No),
        }
    }

    /// Send `e`: the statement was refused before anything of it ran.
    async fn refuse(&mut self, e: &crate::protocol::packets::ErrPacket) -> Result<Sharding, Closed> {
        self.send_err(e).await?;
        Ok(Sharding::Answered)
    }

    /// COM_QUERY on text that mentions a sharded table.
    async fn plan_text(&mut self, sql: &[u8], text: &str) -> Result<Sharding, Closed> {
        let planned = self.plan_sharded(text, None).await;
        // hook(issue 42): text that is not UTF-8 runs only as an INSERT split over its bytes.
        let planned = crate::shard::plan_over_bytes(sql, planned, self.state.db(), &self.rt.shard_rules);
        if let Ok(None) = planned {
            // DDL naming a sub-table (`ALTER TABLE post_reply_0 …`) may change
            // the column order learned for INSERTs without a column list.
            if starts_ddl(text) {
                self.rt.shard_rules.forget_columns();
            }
            // Sent untouched: the server reads it as the client wrote it.
            return Ok(Sharding::No);
        }
        // A plan (or a refusal) is only right if sluice read the text as the
        // server will.
        if let Some(refusal) = self.unreadable_text(sql).await {
            return self.refuse(&not_supported(refusal)).await;
        }
        // The planner reads string literals with backslash escapes; under
        // NO_BACKSLASH_ESCAPES a key with a backslash would be placed wrongly.
        if text.contains('\\') && self.no_backslash_escapes().await {
            return self
                .refuse(&not_supported(
                    "sluice: a statement on a sharded table with a backslash in it is not supported \
                     while sql_mode has NO_BACKSLASH_ESCAPES",
                ))
                .await;
        }
        match planned {
            Ok(None) => Ok(Sharding::No),
            Err(r) => self.refuse(&not_supported(r.0)).await,
            Ok(Some(plan)) => Ok(Sharding::On(Box::new(Shards {
                plan,
                format: RowFormat::Text,
                params: Vec::new(),
            }))),
        }
    }

    /// Plan a statement on a sharded table (with its parameters and the
    /// session's character set for a prepared one). An INSERT without a
    /// column list refused for want of the table's column order has it read
    /// (`learn_columns`) and is planned again.
    pub(super) async fn plan_sharded(
        &mut self,
        text: &str,
        params: Option<(&[ParamValue], &Charset)>,
    ) -> Result<Option<ShardPlan>, Refusal> {
        let planned = self.plan_once(text, params).await;
        if matches!(&planned, Err(r) if crate::shard::wants_columns(r)) && self.learn_columns(text).await {
            return self.plan_once(text, params).await;
        }
        planned
    }

    /// When `text` is an INSERT without a column list into a sharded table
    /// whose column order sluice has not learned: read it from
    /// information_schema on the master of the group holding sub-table 0
    /// and remember it (`crate::shard::columns_needed`). True when learned.
    pub(super) async fn learn_columns(&mut self, text: &str) -> bool {
        let Some(need) = crate::shard::columns_needed(text, self.state.db(), &self.rt.shard_rules) else {
            return false;
        };
        let sql = crate::backend::conn::unlimited(&crate::shard::columns_query(&need));
        let read = async {
            let conn = self.group_master(need.group).await.ok()?;
            send_query(conn, &sql).await.ok()?;
            let Ok(Head::Columns(_)) = read_head(conn).await else {
                return None;
            };
            let rows = read_rows(conn).await.ok()?;
            rows.iter()
                .map(|r| r.field(0).map(|f| String::from_utf8_lossy(f).into_owned()))
                .collect::<Option<Vec<String>>>()
        }
        .await;
        self.drop_broken(need.group);
        self.groups_settle().await;
        match read {
            Some(cols) if !cols.is_empty() => {
                self.rt.shard_rules.learn_columns(&need.db, &need.table, cols);
                true
            }
            _ => false,
        }
    }

    /// [`Self::plan_sharded`] without learning; large statements off the
    /// async worker (see [`PLAN_OFF_WORKER`]).
    async fn plan_once(
        &self,
        text: &str,
        params: Option<(&[ParamValue], &Charset)>,
    ) -> Result<Option<ShardPlan>, Refusal> {
        let size = text.len()
            + params.map_or(0, |(p, _)| {
                p.iter()
                    .map(|v| match v {
                        ParamValue::Bytes(b) | ParamValue::Blob(b) | ParamValue::Decimal(b) => b.len(),
                        _ => 8,
                    })
                    .sum()
            });
        if size < PLAN_OFF_WORKER {
            return run(text, params, self.state.db(), &self.rt);
        }
        let Ok(_permit) = LARGE_PLANS.acquire().await else {
            return Err(Refusal("sluice: shutting down".into()));
        };
        let (rt, db, text) = (
            self.rt.clone(),
            self.state.db().map(str::to_owned),
            text.to_owned(),
        );
        let params = params.map(|(p, cs)| (p.to_vec(), cs.clone()));
        tokio::task::spawn_blocking(move || {
            run(
                &text,
                params.as_ref().map(|(p, cs)| (p.as_slice(), cs)),
                db.as_deref(),
                &rt,
            )
        })
        .await
        .unwrap_or_else(|_| {
            Err(Refusal(
                "sluice: planning this statement on a sharded table failed".into(),
            ))
        })
    }

    /// Why sluice cannot read the text of a statement on a sharded table as
    /// the server will, if it cannot: it is not ASCII and the session's
    /// character set splits it into other tokens than UTF-8 does (a GBK
    /// character can end in the byte of `\`). (Text that is not UTF-8 was
    /// planned over its bytes or refused by `crate::shard::plan_over_bytes`.)
    /// Plain ASCII text reads alike in every client character set: no round
    /// trip for it.
    async fn unreadable_text(&mut self, sql: &[u8]) -> Option<&'static str> {
        if sql.is_ascii() {
            return None;
        }
        if self.session_charset().await.lexes_like_utf8() {
            return None;
        }
        Some(
            "sluice: a statement on a sharded table with non-ASCII text is not supported under this \
             character_set_client (a multi-byte character set other than UTF-8); bind such values as \
             parameters or write them as X'...' literals",
        )
    }

    /// Whether the session's variables may have been changed where sluice did not see
    /// the text: a SET it does not replay, a procedure, dynamic SQL (the session is then
    /// pinned to its master connection, which has them).
    fn settings_unseen(&self) -> bool {
        let pins = self.state.pins();
        pins.has(Pins::SESSION_STATE) || pins.has(Pins::CONNECTION_STATE)
    }

    /// Whether the session may have a `sql_select_limit`: a replayed SET named it, or
    /// [`Self::settings_unseen`].
    pub(super) fn may_limit_selects(&self) -> bool {
        self.settings_unseen() || self.state.sets_name(b"sql_select_limit")
    }

    /// The session's `sql_select_limit` when it is not the default (no limit): the
    /// implicit LIMIT the server puts on a SELECT without one. Asked on the session's
    /// master connection, which has the session's own settings, after a replayed SET
    /// that names it or when [`Self::settings_unseen`] (`SET sql_select_limit = @n` is not
    /// replayed); an error when it cannot be told (the
    /// merge would otherwise answer every row). The server's own default is assumed to
    /// be no limit.
    async fn session_select_limit(&mut self) -> Result<Option<u64>, crate::protocol::packets::ErrPacket> {
        if !self.may_limit_selects() {
            return Ok(None);
        }
        // A limit of 0 answers this one-row SELECT with no row.
        let value = self
            .session_rows("SELECT @@sql_select_limit")
            .await
            .and_then(|rows| match rows.first() {
                None => Some(0),
                Some(row) => row.first().cloned().flatten()?.parse::<u64>().ok(),
            });
        match value {
            Some(u64::MAX) => Ok(None),
            Some(v) => Ok(Some(v)),
            None => Err(not_supported(
                "sluice: the session's sql_select_limit could not be read from its master connection, \
                 so a sharded SELECT cannot be limited as the server limits it",
            )),
        }
    }

    /// A SELECT's parts under the settings that make each compute what the one
    /// statement computes (`crate::shard::PartSettings`): the session's
    /// sql_select_limit lifted from the parts and applied to the merged answer (as
    /// `merge`'s LIMIT when the statement has none: a merge of several parts carries
    /// the statement's own), one time for all of them. One part runs as written, under
    /// the session's own settings, as the statement would.
    async fn read_settings(
        &mut self,
        parts: Vec<crate::shard::Part>,
        merge: &mut crate::merge::MergeSpec,
        sql: &str,
    ) -> Result<Vec<crate::shard::Part>, crate::protocol::packets::ErrPacket> {
        if parts.len() < 2 {
            return Ok(parts);
        }
        let mut settings = crate::shard::PartSettings::default();
        if let Some(count) = self.session_select_limit().await? {
            settings.no_select_limit = true;
            merge
                .limit
                .get_or_insert(crate::merge::Limit { offset: 0, count });
        }
        if crate::shard::mentions_statement_time(sql.as_bytes()) {
            settings.timestamp = Some(self.statement_time().await);
        }
        Ok(parts.into_iter().map(|p| p.under(&settings)).collect())
    }

    /// The time a statement over several parts gives all of them (`@@timestamp`, see
    /// `crate::shard::PartSettings`): the session's own after a SET that names
    /// `timestamp` or when [`Self::settings_unseen`] (asked on its master connection, which has the
    /// session's settings; the master's clock otherwise); else sluice's clock, read once
    /// for the statement as a server reads its own at the statement's start.
    async fn statement_time(&mut self) -> String {
        if self.settings_unseen() || self.state.sets_name(b"timestamp") {
            if let Some(t) = self
                .session_row("SELECT @@timestamp")
                .await
                .and_then(|row| row.into_iter().next().flatten())
            {
                return t;
            }
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{}.{:06}", now.as_secs(), now.subsec_micros())
    }

    /// Does the session's sql_mode (on its master connection) have
    /// NO_BACKSLASH_ESCAPES? Asked only for sharded statements with a
    /// backslash; when it cannot be told, assume yes (refuse, never misplace).
    async fn no_backslash_escapes(&mut self) -> bool {
        match self.session_row("SELECT @@session.sql_mode").await {
            Some(row) => row
                .first()
                .and_then(Option::as_deref)
                .is_none_or(|m| m.to_ascii_uppercase().contains("NO_BACKSLASH_ESCAPES")),
            None => true,
        }
    }

    /// The session's client character set and sql_mode (on its master
    /// connection), for reading statements and placing rows by string
    /// parameters (`crate::shard::Charset`). When they cannot be told:
    /// nothing known and NO_BACKSLASH_ESCAPES assumed.
    async fn session_charset(&mut self) -> Charset {
        const SQL: &str = "SELECT @@character_set_client, @@session.sql_mode, (SELECT MAXLEN FROM \
             information_schema.CHARACTER_SETS WHERE CHARACTER_SET_NAME = @@character_set_client)";
        let unknown = Charset {
            no_backslash_escapes: true,
            ..Charset::default()
        };
        let Some(row) = self.session_row(SQL).await else {
            return unknown;
        };
        let f = |i: usize| row.get(i).and_then(Option::as_deref).unwrap_or("");
        if row.len() != 3 {
            return unknown;
        }
        Charset::from_session(f(0), f(1), f(2).parse().unwrap_or(0))
    }

    /// The first row of `sql` run on the session's master connection, each
    /// field as text (None for NULL); None when it cannot be had.
    /// (Without the session's `sql_select_limit`.)
    async fn session_row(&mut self, sql: &str) -> Option<Vec<Option<String>>> {
        self.session_rows(&crate::backend::conn::unlimited(sql))
            .await?
            .into_iter()
            .next()
    }

    /// The rows of `sql` run on the session's master connection (at most a few:
    /// all are kept), each field as text (None for NULL); None on an error. Under the
    /// session's own `sql_select_limit`.
    async fn session_rows(&mut self, sql: &str) -> Option<Vec<Vec<Option<String>>>> {
        self.held(Conn::Master).await.ok()?;
        let h = self.backends.master.as_mut()?;
        h.conn.dirty = true;
        send_query(&mut h.conn, sql).await.ok()?;
        let Ok(Head::Columns(defs)) = read_head(&mut h.conn).await else {
            return None;
        };
        let n = defs.len();
        let rows = read_rows(&mut h.conn).await.ok()?;
        let text = |row: &crate::merge::TextRow| -> Vec<Option<String>> {
            (0..n)
                .map(|i| row.field(i).map(|f| String::from_utf8_lossy(f).into_owned()))
                .collect()
        };
        Some(rows.iter().map(text).collect())
    }

    /// Run a plan; rows go back in `format`. `c`, `sql`, `src`: the
    /// statement as the client sent it, planned by the router like any
    /// other, so a write's effects (counter bumps, causal snapshot,
    /// ROW_COUNT(), pins) are applied by the pipeline's one `apply`.
    /// `params`: a prepared statement's parameters as the client sent them.
    /// hook(sequences), as for an unsharded write (pipeline): a part that
    /// writes a sub-table whose column defaults or triggers call a sequence
    /// function leaves LASTVAL() on the session's master connection, which
    /// it then keeps. (Sub-tables of other groups: their connections go back
    /// to the pool after the statement, and only sharded statements, which
    /// never call LASTVAL() there, use them.)
    async fn pin_for_sequence_users(&mut self, parts: &[crate::shard::Part]) {
        if self.keeps_connection_state() {
            return;
        }
        for p in parts.iter().filter(|p| p.group == 0) {
            if self.writes_sequence_user(p.sql.as_bytes()).await {
                self.pin(Pins::SESSION_STATE);
                return;
            }
        }
    }

    /// Run a statement's parts: reads where the gate routes them
    /// (`gate::route_parts`), writes on their groups' masters. `plan`: the
    /// statement as the router planned it, like any other. A write that was
    /// applied comes back as its answer (queued, not flushed) and the
    /// groups it wrote to, for the pipeline to apply its effects.
    pub(in crate::frontend::session) async fn run_shards(
        &mut self,
        shards: Box<Shards>,
        c: &Classified,
        sql: &[u8],
    ) -> Result<Option<(ResponseTracker, Vec<usize>)>, Closed> {
        let Shards { plan, format, params } = *shards;
        let params = &params[..];
        if let Some(pin) = self.state.pins().reason() {
            if plan.parts().iter().any(|p| p.group != 0) {
                // Such sessions keep state (user variables, temporary tables,
                // locks, unreplayed SETs) on their group-0 connection only.
                self.send_err(&not_supported(format!(
                    "sluice: this session is pinned to its master connection ({pin}); statements \
                     on sub-tables in other backend groups are not supported in it"
                )))
                .await?;
                return Ok(None);
            }
        }
        self.shared
            .metrics
            .shard_fanout(plan.parts().len(), RouteReason::Sharded);
        let hide = self.rt.config.log.sql_log && crate::logging::may_hold_password(sql);
        let run = async {
            match plan {
                ShardPlan::Write {
                    parts,
                    ddl,
                    insert_id_from,
                } => {
                    self.pin_for_sequence_users(&parts).await;
                    // One time for the statement (NOW(), CURRENT_TIMESTAMP defaults and
                    // ON UPDATE) on every part.
                    let parts = if parts.len() > 1 {
                        let settings = crate::shard::PartSettings {
                            timestamp: Some(self.statement_time().await),
                            ..Default::default()
                        };
                        parts.into_iter().map(|p| p.under(&settings)).collect()
                    } else {
                        parts
                    };
                    let Some(done) = self.run_write(parts, ddl, insert_id_from, params).await? else {
                        self.state.unanswered();
                        return Ok(None);
                    };
                    // hook(issue 42): the statement after a write asks the master about it
                    // (SHOW WARNINGS after a one-part write reads its part's).
                    self.backends.last_conn = Conn::Master;
                    if done.warnings_on_master {
                        self.backends.keep = Some(Conn::Master);
                    }
                    self.backends.warnings_elsewhere = done.warnings_elsewhere;
                    let mut t = ResponseTracker::new(ResponseKind::Single, false);
                    t.last_ok = Some((done.affected, done.insert_id));
                    t.last_status = Some(done.status);
                    Ok(Some((t, done.groups)))
                }
                ShardPlan::Select {
                    parts,
                    merge,
                    wildcard_helpers,
                } => {
                    // A read has no effect the pipeline applies; what it leaves
                    // for ROW_COUNT() is -1.
                    let original = select::Original {
                        sql: &String::from_utf8_lossy(sql),
                        rerunnable: c.replica_eligible() && !c.reads_user_variable,
                    };
                    let r = (self.run_select(parts, merge, wildcard_helpers, format, params, original)).await;
                    self.state.unanswered();
                    r.map(|()| None)
                }
            }
        };
        let r = io::HIDE_PART_SQL.scope(hide, run).await;
        self.groups_settle().await;
        r
    }
}

/// The statement asks for the previous statement's warnings (`SHOW WARNINGS`,
/// `SHOW ERRORS`, `SHOW COUNT(*) WARNINGS`, `@@warning_count`, `GET DIAGNOSTICS`),
/// as opposed to its row counts (`ROW_COUNT()`, `FOUND_ROWS()`), which sluice keeps.
pub(super) fn asks_for_warnings(sql: &[u8]) -> bool {
    let upper = sql.to_ascii_uppercase();
    [&b"WARNING"[..], b"ERRORS", b"DIAGNOSTICS", b"ERROR_COUNT"]
        .iter()
        .any(|w| upper.windows(w.len()).any(|x| x == *w))
}

/// The refusal of a statement asking for warnings no connection holds.
pub(super) fn warnings_not_kept() -> crate::protocol::packets::ErrPacket {
    not_supported(
        "the warnings of the previous statement, a write to a sharded table's sub-tables, \
         are not kept (each sub-table's COMMIT cleared its own, and their order would not be \
         the server's): its OK packet gave their count",
    )
}

impl Session {
    /// Whether the session's `time_zone` shows more than one UTC offset over the
    /// TIMESTAMP range ([`crate::merge::ZONE_OFFSETS`]), asked on the session's master
    /// connection, where its SETs are replayed. Unknown (no master, an error) counts as
    /// changing: the merge then refuses rather than guesses.
    async fn zone_offset_moves(&mut self) -> bool {
        if self.held(Conn::Master).await.is_err() {
            return true;
        }
        let Some(h) = self.backends.slot(Conn::Master) else {
            return true;
        };
        !matches!(h.conn.session_query_text(crate::merge::ZONE_OFFSETS).await, Ok(Ok(Some(n))) if n == "1")
    }
}
