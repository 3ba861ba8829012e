//! The one statement pipeline: every statement a client runs, whatever
//! command carried it, goes through
//! `classify → Plan (router::route) → freshness gate → execute → apply`.
//!
//! - COM_QUERY text and COM_STMT_EXECUTE of a prepared statement share it;
//!   the SQL-level dynamic statements (`EXECUTE IMMEDIATE`, `PREPARE`,
//!   `EXECUTE`, `CALL`, compound statements) are classified as opaque by the
//!   router: master, counted as writing everything, and the session pinned
//!   to its connection until reset.
//! - [`Session::apply`] is the only place where a statement's effects reach
//!   the session: pins taken and lifted, SETs recorded for replay, the
//!   default database, the read-only transaction, LAST_INSERT_ID, the global
//!   counter bump and the causal snapshot. (A COM_STMT_PREPARE runs nothing,
//!   but preparing may make user variables: [`Session::apply_prepare`].)
//! - Statements on sharded tables leave the pipeline before the plan
//!   (`sharded.rs`): their parts are planned by `crate::shard`.

use std::sync::Arc;

use crate::config::FreshnessMode;
use crate::freshness::monitor::Provisional;
use crate::freshness::state::Scope;
use crate::frontend::sequence_users;
use crate::protocol::consts::SERVER_STATUS_IN_TRANS;
use crate::protocol::packets::ErrPacket;
use crate::protocol::response::{ResponseKind, ResponseTracker};
use crate::router::classify::{self, Classified, Kind, MasterReason};
use crate::router::lexer::LexOptions;
use crate::router::memo;
use crate::router::plan::{Pins, Plan, ReadSet, RouteReason, Target, WriteSet};
use crate::router::previous;
use crate::router::route::{self, Source};

use super::prepared::{self, Conn};
use super::{lost, slot_of, Closed, CmdResult, Route, Session, Stale};

/// How a planned statement is sent to the backend.
pub(super) enum Exec<'p> {
    /// A COM_QUERY packet, sent as it came.
    Text { payload: &'p [u8] },
    /// A COM_STMT_EXECUTE of client statement `id`.
    Prepared {
        id: u32,
        payload: &'p [u8],
        layout: prepared::ExecuteLayout,
        /// SEND_LONG_DATA went to the master: so must the EXECUTE.
        long_data: bool,
        /// The text to prepare and run instead of the statement's own (its
        /// ROW_COUNT()/FOUND_ROWS() replaced by the session's values).
        variant: Option<&'p [u8]>,
        /// The client's parameters in the order `variant` binds them, when
        /// that is not their own order (thread_ids::rewrite_prepared).
        order: Option<&'p [u16]>,
    },
}

impl Session {
    /// Classify a statement under the session's sql_mode when it is known
    /// (it changes where strings end), else under both readings; a text
    /// of a shape seen before is answered by the memo (`router::memo`:
    /// on the texts it serves, the sql_mode changes nothing).
    pub(super) fn classify(&self, sql: &[u8]) -> Arc<Classified> {
        let lex = self.state.lex;
        memo::classified(sql, |sql| match lex {
            Some(opts) => classify::classify_with(sql, opts),
            None => classify::classify_any_mode(sql),
        })
    }

    /// Run one statement through the pipeline. `sql` is its text (for a
    /// prepared statement, the text it was prepared with).
    pub(super) async fn statement(
        &mut self,
        c: &Classified,
        sql: &[u8],
        src: Source,
        exec: Exec<'_>,
    ) -> CmdResult {
        let plan = route::plan(c, sql, src, &self.state.view());
        // Sub-tables in other backend groups: one writing group per transaction.
        if self.groups_before(c).await? {
            return Ok(());
        }
        let long_data = matches!(exec, Exec::Prepared { long_data: true, .. });
        // hook(strict): a read that can be rerun may run on a replica while
        // strict mode's master probe is under way (freshness::strict); its
        // route is counted once its answer is released or rerun
        // (run_on_inner). A text read, or an EXECUTE that opens no cursor
        // (a cursor's rows are fetched later, from that connection).
        let mut provisional = None;
        let rerunnable = match &exec {
            Exec::Text { .. } => true,
            Exec::Prepared { layout, .. } => layout.cursor_flags == 0,
        };
        let route = if long_data {
            Route {
                conn: Conn::Master,
                reason: RouteReason::LongData,
            }
        } else if rerunnable && plan.target == Target::FreshReplica {
            let (r, p) = self.pick_replica_overlapped(plan.read_set.tables()).await;
            provisional = p;
            r
        } else {
            match self.gate(&plan, c).await {
                Ok(r) => r,
                Err(e) => return self.send_err(&e).await,
            }
        };
        let on_master = route.conn == Conn::Master;
        // A statement may also commit implicitly (SET autocommit=1, DDL, BEGIN
        // inside a transaction): anything on the master while in a
        // transaction may make writes visible, so its answer waits for the
        // causal snapshot (released below once it is decided).
        let was_in_tx = self.in_transaction();
        let was_in_server_tx = self.state.in_server_transaction();
        let hold = on_master && (plan.is_write || was_in_tx) && self.monitor.mode == FreshnessMode::Causal;
        if provisional.is_none() {
            self.shared.metrics.route(on_master, route.reason);
        }
        // The connection did not run this session's previous statement.
        let borrowed = self.gen_of(route.conn) == 0;
        if c.refers_to_previous && borrowed {
            // The connection that ran the previous statement went back to
            // the pool (it had no warnings, else it would be kept): make
            // sure the borrowed one answers with an empty diagnostics area,
            // never with another session's.
            if let Err(e) = self.clear_diagnostics(route.conn).await {
                return self.send_err(&e).await;
            }
        }
        // hook(sequences): a write to a table whose column defaults or
        // triggers call a sequence function leaves LASTVAL() on the
        // connection, like NEXTVAL() in the text (which the plan pins).
        if on_master
            && plan.is_write
            && !plan
                .effects
                .pin
                .intersects(Pins::SESSION_STATE | Pins::CONNECTION_STATE)
            && !self.keeps_connection_state()
            && self.writes_sequence_user(sql).await
        {
            self.pin(Pins::SESSION_STATE);
        }
        // ROW_COUNT()/FOUND_ROWS() on the connection are not the session's.
        let prev_foreign = borrowed
            || self.state.prev_clobbered == super::state::PREV_EVERYWHERE
            || (self.state.prev_clobbered != 0 && self.state.prev_clobbered == self.gen_of(route.conn));
        let lid_sensitive = on_master && plan.effects.last_insert_id;
        if lid_sensitive {
            if let Err(e) = self.held(Conn::Master).await {
                return self.send_err(&e).await;
            }
            if let Err(e) = self.sync_last_insert_id().await {
                return self.send_err(&e).await;
            }
        }
        // FOUND_ROWS() after a sharded read whose count the merge did not see (one
        // sub-table's LIMIT, a UNION's): refused rather than another statement's count.
        if c.refers_to_previous && self.state.found_rows_unknown {
            let text = match &exec {
                Exec::Text { payload } => payload.get(1..).unwrap_or_default(),
                _ => &[][..],
            };
            if text.windows(10).any(|w| w.eq_ignore_ascii_case(b"found_rows")) {
                let e = ErrPacket::new(
                    crate::protocol::consts::errcode::ER_NOT_SUPPORTED_YET,
                    "42000",
                    "sluice: FOUND_ROWS() after a SELECT on a sharded table with a LIMIT on one sub-table \
                     or a UNION with a LIMIT is not supported (sluice does not see the rows it counts)",
                );
                return self.send_err(&e).await;
            }
        }
        // ROW_COUNT()/FOUND_ROWS() on a connection that ran other sessions'
        // statements since this session's last one: the session's own values.
        let rewritten;
        let variant;
        let param_order;
        let exec = match exec {
            // (Not in a multi-statement: its own statements come before.)
            Exec::Text { payload } if c.refers_to_previous && prev_foreign && !c.multi_statement => {
                let lex = self.state.lex.unwrap_or_default();
                match previous::rewrite(&payload[1..], self.state.prev, lex) {
                    Some(sql) => {
                        rewritten = [&payload[..1], &sql[..]].concat();
                        Exec::Text { payload: &rewritten }
                    }
                    None => Exec::Text { payload },
                }
            }
            // A prepared one runs as its own variant statement on this
            // connection: the same parameters, the values in its text.
            // IS_USED_LOCK() in one maps the holder's thread id to the
            // holding session as it is now (thread_ids), so its variant
            // is made per execution.
            Exec::Prepared {
                id,
                payload,
                layout,
                long_data,
                variant: None,
                order: None,
            } if ((c.refers_to_previous && borrowed)
                || c.force_master == Some(MasterReason::LockFunction))
                && !c.multi_statement =>
            {
                let registry = &self.shared.sessions;
                let params = match src {
                    Source::Prepared { params } => params,
                    Source::Text => 0,
                };
                // (Not with long data: it went to the statement's own
                // server-side copy, which a variant is not.)
                let (mapped, order) = match c.force_master {
                    Some(MasterReason::LockFunction) if !long_data => {
                        crate::frontend::thread_ids::rewrite_prepared(sql, self.proc.id, params, || {
                            registry.lock_holders()
                        })
                        .map_or((None, None), |(s, o)| (Some(s), o))
                    }
                    _ => (None, None),
                };
                param_order = order;
                let base = mapped.as_deref().unwrap_or(sql);
                let lex = self.state.lex.unwrap_or_default();
                variant = match c.refers_to_previous && prev_foreign {
                    true => previous::rewrite(base, self.state.prev, lex).or(mapped),
                    false => mapped,
                };
                Exec::Prepared {
                    id,
                    payload,
                    layout,
                    long_data,
                    variant: variant.as_deref(),
                    order: param_order.as_deref(),
                }
            }
            other => other,
        };
        let kept = self.backends.keep;
        let ran = self.execute(route, exec, hold, provisional).await?;
        self.groups_after(&c.kind, ran.as_ref().is_some_and(|(t, _)| !t.error))
            .await;
        let Some((tracker, conn)) = ran else {
            self.state.prev.row_count = -1;
            return Ok(());
        };
        // Session state set on a replica connection (GET DIAGNOSTICS @n on
        // the previous statement's, SET @x in a read-only transaction there)
        // moves to the master; that connection is never pooled again.
        // (A variable assignment is a pin effect: route::effects.)
        if matches!(conn, Conn::Replica(_)) && !plan.effects.pin.is_empty() {
            if let Err(e) = self.take_state_from_replica(conn, sql).await {
                tracing::warn!(error = %e.message, "cannot move user variables from a replica connection to the master");
            }
        }
        self.note_previous(&tracker);
        // A result set from that connection makes its FOUND_ROWS() the
        // session's again (and ROW_COUNT() is -1 after it either way).
        if tracker.result_set {
            self.state.found_rows_unknown = false;
        }
        if tracker.result_set
            && (self.state.prev_clobbered == self.gen_of(conn)
                || self.state.prev_clobbered == super::state::PREV_EVERYWHERE)
        {
            self.state.prev_clobbered = 0;
        }
        // A statement that reads no table (SHOW WARNINGS, @@warning_count,
        // SELECT 1) leaves the diagnostics area as it was: the connection
        // holding it stays with the session for the next statement too.
        let no_table = c.refers_to_previous || c.tables.as_ref().is_some_and(|t| t.is_empty());
        if no_table && kept == Some(conn) && self.backends.keep.is_none() {
            self.backends.keep = Some(conn);
        }
        self.apply(&plan, c, sql, conn, &tracker, was_in_server_tx, &[0])
            .await;
        if hold {
            self.client.flush().await.map_err(|_| Closed)?;
        }
        Ok(())
    }

    /// Already pinned for state the server keeps on the connection (a
    /// sequence's LASTVAL() among it): no sequence-user lookup needed.
    pub(super) fn keeps_connection_state(&self) -> bool {
        self.state.pins.has(Pins::SESSION_STATE) || self.state.pins.has(Pins::CONNECTION_STATE)
    }

    /// Whether the write `sql` touches a table whose column defaults or
    /// triggers call a sequence function (see sequence_users): the table it
    /// writes, or, when the text does not show one table, any table of the
    /// session's database. Looked up per schema: the session's copy, the
    /// process's, or the master's information_schema, read on the
    /// session's master connection.
    pub(super) async fn writes_sequence_user(&mut self, sql: &[u8]) -> bool {
        let written = sequence_users::written_table(sql);
        let (db, table) = match &written {
            sequence_users::Written::One(Some(db), t) => (db.as_ref(), Some(t.as_ref())),
            sequence_users::Written::One(None, t) => match self.state.db.as_deref() {
                Some(db) => (db, Some(t.as_ref())),
                // No database: the statement fails (1046).
                None => return false,
            },
            sequence_users::Written::Unknown => match self.state.db.as_deref() {
                Some(db) => (db, None),
                None => return false,
            },
            sequence_users::Written::NotDml => return false,
        };
        let shared = &self.shared.sequence_users;
        let known = match self.state.sequences.get(db, shared) {
            Some(k) => k,
            None => {
                let cached = shared.get(db);
                let db = db.to_owned();
                let k = match cached {
                    Some(k) => k,
                    None => Box::pin(self.look_up_sequence_users(&db)).await,
                };
                self.state.sequences.put(&db, k.clone());
                k
            }
        };
        match table {
            Some(t) => known.uses_sequences(t),
            None => known.any(),
        }
    }

    /// Read which tables of `db` use sequences. Unknown (no master, an
    /// error): every table counts, for this session only.
    async fn look_up_sequence_users(&mut self, db: &str) -> sequence_users::Known {
        let generation = self.shared.sequence_users.generation();
        if self.held(Conn::Master).await.is_err() {
            return sequence_users::Known::new(None);
        }
        let Some(h) = self.slot(Conn::Master) else {
            return sequence_users::Known::new(None);
        };
        let uid = h.conn.state.uid;
        let answer = h.conn.query_text(&sequence_users::lookup_sql(db)).await;
        self.state.prev_clobbered = uid;
        let tables = match answer {
            Ok(Ok(Some(v))) => sequence_users::parse(&v),
            _ => None,
        };
        let known = sequence_users::Known::new(tables);
        if known.is_known() {
            self.shared.sequence_users.put(db, known.clone(), generation);
        }
        known
    }

    /// What ROW_COUNT() and FOUND_ROWS() say after this answer.
    pub(super) fn note_previous(&mut self, t: &ResponseTracker) {
        if t.error {
            self.state.prev.row_count = -1;
        } else if t.result_set {
            self.state.prev.row_count = -1;
            self.state.prev.found_rows = t.rows;
        } else {
            let affected = t.last_ok.map(|(a, _)| a).unwrap_or(0);
            self.state.prev.row_count = i64::try_from(affected).unwrap_or(i64::MAX);
        }
    }

    /// The freshness gate: resolve the plan's target to a connection.
    async fn gate(&mut self, plan: &Plan<'_>, c: &Classified) -> Result<Route, ErrPacket> {
        Ok(match plan.target {
            Target::Master => Route {
                conn: Conn::Master,
                reason: plan.reason,
            },
            Target::Replica(i) => {
                if c.kind == Kind::Read && !self.read_only_tx_fresh(i, plan).await? {
                    // The replica's snapshot would miss writes this read must
                    // see: the transaction has read nothing that binds it
                    // (REPEATABLE READ before its first read), or every
                    // statement sees the latest commits anyway (READ
                    // COMMITTED), so it moves to the master unchanged.
                    self.move_read_only_tx_to_master().await?;
                    return Ok(Route {
                        conn: Conn::Master,
                        reason: RouteReason::StaleReplica,
                    });
                }
                Route {
                    conn: Conn::Replica(i),
                    reason: plan.reason,
                }
            }
            Target::Previous => {
                // A replica that answers about its previous statement must
                // also be fresh for the tables this statement reads.
                if let (Conn::Replica(i), true) = (self.backends.last_conn, c.previous_reads_tables) {
                    if !self.replica_fresh_for(i, plan.read_set.tables()).await {
                        return Ok(Route {
                            conn: Conn::Master,
                            reason: RouteReason::StaleReplica,
                        });
                    }
                }
                Route {
                    conn: self.backends.last_conn,
                    reason: plan.reason,
                }
            }
            Target::FreshReplica => self.pick_replica(plan.read_set.tables()).await,
        })
    }

    /// A read inside the read-only transaction on replica `i`: is the
    /// replica fresh enough for it? Under REPEATABLE READ the snapshot is
    /// taken at the first read, so that read must find every write
    /// committed before it (all tables: later reads see the same snapshot);
    /// under READ COMMITTED each statement must find the writes committed
    /// before it, for the tables it reads.
    async fn read_only_tx_fresh(&mut self, i: usize, plan: &Plan<'_>) -> Result<bool, ErrPacket> {
        let rc = match self.state.read_committed {
            Some(rc) => rc,
            None => self.learn_isolation(Conn::Replica(i)).await?,
        };
        if !rc && self.state.ro_checked {
            return Ok(true);
        }
        let tables = match (rc, plan.read_set) {
            (true, ReadSet::Tables(t)) => Some(t),
            _ => None,
        };
        let fresh = self.replica_fresh_for(i, tables).await;
        if fresh && !rc {
            self.state.ro_checked = true;
        }
        Ok(fresh)
    }

    /// The session's isolation level, as its connection `conn` reports it.
    async fn learn_isolation(&mut self, conn: Conn) -> Result<bool, ErrPacket> {
        let label = self.label(conn);
        let h = self.slot(conn).ok_or_else(|| lost(&label))?;
        let level = crate::error::answered(&label, h.conn.query_text("SELECT @@session.tx_isolation").await)?
            .unwrap_or_default();
        let rc =
            level.eq_ignore_ascii_case("READ-COMMITTED") || level.eq_ignore_ascii_case("READ-UNCOMMITTED");
        self.state.read_committed = Some(rc);
        Ok(rc)
    }

    /// End the read-only transaction on its replica (it has read nothing
    /// that binds it) and open the same one on the master.
    async fn move_read_only_tx_to_master(&mut self) -> Result<(), ErrPacket> {
        if let Some((_, mut h)) = self.backends.replica.take() {
            if !matches!(h.conn.query_drop("ROLLBACK").await, Ok(Ok(()))) {
                h.conn.broken = true;
            }
        }
        self.state.ro_tx = None;
        self.state.ro_checked = false;
        self.held(Conn::Master).await?;
        let label = self.label(Conn::Master);
        let h = self.slot(Conn::Master).ok_or_else(|| lost(&label))?;
        h.conn.dirty = true;
        crate::error::answered(&label, h.conn.query_drop("START TRANSACTION READ ONLY").await)?;
        self.state.status |= SERVER_STATUS_IN_TRANS;
        Ok(())
    }

    /// A read its text allows on a replica (sharded parts use this too):
    /// the session's state first (read-only transaction, pins, transaction),
    /// then freshness.
    pub(super) async fn route_read(&mut self, tables: Option<&[String]>) -> Route {
        match route::read_target(&self.state.view()) {
            (Target::FreshReplica, _) => self.pick_replica(tables).await,
            (Target::Replica(i), reason) => Route {
                conn: Conn::Replica(i),
                reason,
            },
            (_, reason) => Route {
                conn: Conn::Master,
                reason,
            },
        }
    }

    /// A fresh replica for a read of `tables` (None: unknown), or the master.
    pub(super) async fn pick_replica(&mut self, tables: Option<&[String]>) -> Route {
        let current = self.backends.replica.as_ref().map(|(i, _)| *i);
        match self.pick_for(tables, current).await {
            Ok(i) => Route {
                conn: Conn::Replica(i),
                reason: RouteReason::FreshReplica,
            },
            Err(f) => Route {
                conn: Conn::Master,
                reason: f.reason(),
            },
        }
    }

    /// [`Session::pick_replica`] for a text read that may start on the
    /// replica before strict mode's probe has answered: the provisional
    /// decides whether its answer is released (see `freshness::strict`).
    async fn pick_replica_overlapped(&mut self, tables: Option<&[String]>) -> (Route, Option<Provisional>) {
        let current = self.backends.replica.as_ref().map(|(i, _)| *i);
        let qualified = tables
            .filter(|_| self.monitor.compares_counters())
            .and_then(|t| self.state.qualified(t));
        let scope = match qualified {
            Some(t) => Scope::Tables(t),
            None => Scope::All,
        };
        match self.monitor.pick_overlapped(scope, current).await {
            Ok((i, p)) => (
                Route {
                    conn: Conn::Replica(i),
                    reason: RouteReason::FreshReplica,
                },
                p,
            ),
            Err(f) => (
                Route {
                    conn: Conn::Master,
                    reason: f.reason(),
                },
                None,
            ),
        }
    }

    /// Is replica `i` (the one the session uses) fresh for a read of `tables`?
    async fn replica_fresh_for(&mut self, i: usize, tables: Option<&[String]>) -> bool {
        self.pick_for(tables, Some(i)).await == Ok(i)
    }

    /// The freshness gate's choice for a read of `tables` (None: unknown),
    /// preferring replica `current`.
    async fn pick_for(
        &mut self,
        tables: Option<&[String]>,
        current: Option<usize>,
    ) -> Result<usize, crate::freshness::monitor::Fallback> {
        // The scope (allocated `db.table` names) only matters when the
        // gate compares counters.
        let qualified = tables
            .filter(|_| self.monitor.compares_counters())
            .and_then(|t| self.state.qualified(t));
        let scope = match qualified {
            Some(t) => Scope::Tables(t),
            None => Scope::All,
        };
        self.monitor.pick(scope, current).await
    }

    /// Send the statement to `route`'s connection and relay the answer.
    /// `None`: it failed and the client got an error.
    async fn execute(
        &mut self,
        route: Route,
        exec: Exec<'_>,
        hold: bool,
        provisional: Option<Provisional>,
    ) -> Result<Option<(ResponseTracker, Conn)>, Closed> {
        match exec {
            Exec::Text { payload } => {
                let t = self.run_on_checked(route, payload, hold, provisional).await?;
                Ok(t.map(|t| (t, self.backends.last_conn)))
            }
            Exec::Prepared {
                id,
                payload,
                layout,
                variant,
                order,
                ..
            } => {
                self.execute_prepared(id, payload, layout, (variant, order), route, hold, provisional)
                    .await
            }
        }
    }

    /// The one place where a statement's effects reach the session.
    ///
    /// `groups`: the backend groups the statement wrote to (`[0]` but for
    /// sharded writes); the counter bumps and snapshots are theirs.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn apply(
        &mut self,
        plan: &Plan<'_>,
        c: &Classified,
        sql: &[u8],
        conn: Conn,
        tracker: &ResponseTracker,
        was_in_server_tx: bool,
        groups: &[usize],
    ) {
        let ok = !tracker.error;
        let on_master = conn == Conn::Master;
        let e = &plan.effects;
        // DDL: column defaults or triggers may have changed (a procedure or
        // dynamic SQL running DDL is seen within sequence_users::TTL).
        if plan.write_set == WriteSet::Everything && sequence_users::is_ddl(sql) {
            self.shared.sequence_users.forget_all();
            // A sharded read's learned result columns may come from this table (a join
            // with an unsharded table): described again from now on.
            self.rt.shard_rules.forget_columns();
        }
        if on_master {
            let reported = tracker.last_ok.map(|(_, id)| id).unwrap_or(0);
            self.note_insert_id(reported, e.last_insert_id);
            // FOUND_ROWS() after SQL_CALC_FOUND_ROWS is answered by this
            // connection. (Not kept after writes for ROW_COUNT(): idle
            // sessions would hold connections; see conns.rs.)
            if e.keep_for_found_rows {
                self.backends.keep = Some(Conn::Master);
            }
        }
        let was_next_tx = self.state.pins.has(Pins::NEXT_TRANSACTION);
        if ok {
            if let Some(db) = &e.use_db {
                self.entered_db(conn, db.clone());
            }
            if e.replay_set {
                self.record_set(sql, conn);
            }
            if e.begin_read_only {
                if let Conn::Replica(i) = conn {
                    self.state.ro_tx = Some(i);
                    // START was checked against every table; WITH
                    // CONSISTENT SNAPSHOT takes the snapshot right then.
                    self.state.ro_checked = route::mentions(sql, b"consistent snapshot");
                }
            }
            if e.isolation {
                self.state.read_committed = None;
            }
            // Only master statements leave state the session must keep on
            // its master connection.
            if on_master {
                self.pin_all(e.pin);
                self.state.pins.remove(e.unpin);
                if e.next_transaction {
                    self.pin(Pins::NEXT_TRANSACTION);
                }
            }
            if e.sql_mode {
                self.learn_sql_mode(conn).await;
            }
            // SET [SESSION] wait_timeout / interactive_timeout: the session's
            // idle limit follows (see control.rs).
            if matches!(c.kind, Kind::SessionSet(_)) && super::control::mentions_timeouts(sql) {
                self.note_wait_timeout(conn).await;
            }
        }
        if e.mirror_on_master && matches!(conn, Conn::Replica(_)) {
            self.mirror_on_master(sql, e.pin).await;
        }
        // `SET TRANSACTION ...` applies to the connection's next transaction.
        if was_next_tx && !(ok && e.next_transaction) && !self.in_transaction() {
            self.state.pins.remove(Pins::NEXT_TRANSACTION);
        }
        if let Conn::Replica(_) = conn {
            if self.state.ro_tx.is_some()
                && tracker
                    .last_status
                    .is_some_and(|s| s & SERVER_STATUS_IN_TRANS == 0)
            {
                self.state.ro_tx = None;
            }
        }
        if on_master && plan.write_set == WriteSet::Everything {
            // DDL, TRUNCATE, dynamic SQL, procedures: no trigger counted
            // them, and the tracked set may have changed.
            for m in groups.iter().filter_map(|&g| self.rt.monitors.get(g)) {
                // freshness.auto_install: a new table gets its triggers now.
                if ok && e.refresh_tracked && crate::freshness::triggers::may_add_tables(sql) {
                    m.install_new_tables().await;
                }
                if e.refresh_tracked {
                    m.forget_tracked();
                }
                m.bump_global().await;
            }
        }
        let now_in_server_tx = self.state.in_server_transaction();
        if route::needs_snapshot(plan, c, was_in_server_tx, now_in_server_tx) {
            for m in groups.iter().filter_map(|&g| self.rt.monitors.get(g)) {
                m.after_write().await;
            }
        }
    }

    /// What a COM_STMT_PREPARE itself leaves on the master connection it
    /// ran on (`route::prepare_pins`): the statement is not run, but the
    /// server may have made session state while preparing it. Taken as soon
    /// as the server answered, an error too (it may have failed after
    /// making the state): a pin costs only this session's multiplexing.
    pub(super) fn apply_prepare(&mut self, c: &Classified) {
        self.pin_all(route::prepare_pins(c));
    }

    /// After a SET that may change sql_mode: read the mode the connection
    /// now has, so the next statements are classified under it. When it
    /// cannot be read, classify under every reading again.
    async fn learn_sql_mode(&mut self, conn: Conn) {
        self.state.lex = None;
        let Some(h) = self.slot(conn) else {
            return;
        };
        if let Ok(Ok(Some(mode))) = h.conn.query_text("SELECT @@session.sql_mode").await {
            let has = |flag: &str| mode.split(',').any(|m| m.eq_ignore_ascii_case(flag));
            self.state.lex = Some(LexOptions {
                ansi_quotes: has("ANSI_QUOTES"),
                no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
                ..LexOptions::default()
            });
        }
    }

    /// COM_STMT_EXECUTE of a prepared statement on `route`'s connection.
    #[allow(clippy::too_many_arguments)]
    async fn execute_prepared(
        &mut self,
        id: u32,
        payload: &[u8],
        layout: prepared::ExecuteLayout,
        (variant, order): (Option<&[u8]>, Option<&[u16]>),
        mut route: Route,
        hold: bool,
        mut provisional: Option<Provisional>,
    ) -> Result<Option<(ResponseTracker, Conn)>, Closed> {
        loop {
            use crate::freshness::monitor::Fallback;
            let checked = provisional.is_some();
            let ran = self
                .execute_prepared_on(
                    id,
                    payload,
                    layout,
                    (variant, order),
                    route,
                    hold,
                    provisional.take(),
                )
                .await?;
            match ran {
                Ok(done) => return Ok(done),
                // strict: the replica may lack a write the read must see, so
                // its answer was discarded; or the replica failed before the
                // client saw any of it. The master answers instead (the
                // statement is prepared there first if need be).
                Err(Stale) => {
                    let reason = if checked { Fallback::Stale } else { Fallback::Down };
                    route = Route {
                        conn: Conn::Master,
                        reason: reason.reason(),
                    };
                }
            }
        }
    }

    /// One try of [`Session::execute_prepared`] on `route`'s connection.
    #[allow(clippy::too_many_arguments)]
    async fn execute_prepared_on(
        &mut self,
        id: u32,
        payload: &[u8],
        layout: prepared::ExecuteLayout,
        (variant, order): (Option<&[u8]>, Option<&[u16]>),
        route: Route,
        hold: bool,
        mut provisional: Option<Provisional>,
    ) -> Result<Result<Option<(ResponseTracker, Conn)>, Stale>, Closed> {
        // faults: see prepare_for_execute.
        let prepared = self.prepare_for_execute(id, route, variant).await;
        let moved = !matches!(&prepared, Ok((r, _)) if r.conn == route.conn);
        if provisional.is_some() && (moved || variant.is_some() || order.is_some()) {
            // Not the replica chosen (it failed, or the statement could not
            // be prepared there), or a variant made for this execution:
            // counted as the plain gate counts it, nothing to check.
            provisional = None;
            let conn = prepared.as_ref().map_or(route.conn, |(r, _)| r.conn);
            self.shared.metrics.route(conn == Conn::Master, route.reason);
        }
        let (route, backend_id) = match prepared {
            Ok(r) => r,
            Err(e) => {
                self.send_err(&e).await?;
                return Ok(Ok(None));
            }
        };
        let uid = self.gen_of(route.conn);
        let Some(stmt) = self.stmts.stmts.get_mut(&id) else {
            return Ok(Ok(None));
        };
        if layout.bound {
            // Most clients send the same types with every EXECUTE: copied
            // only when they change.
            let sent = prepared::bound_types(payload, &layout, stmt.params);
            if stmt.types.as_deref() != sent {
                stmt.types = sent.map(<[u8]>::to_vec);
            }
        }
        stmt.long_data = false;
        stmt.last_exec = Some((route.conn, uid));
        let sql: std::sync::Arc<[u8]> = variant.map_or_else(|| stmt.sql.clone(), std::sync::Arc::from);
        let types = stmt.types.as_deref();
        let rebound =
            order.map(|o| crate::frontend::params::rebind(payload, usize::from(stmt.params), types, o));
        // The server runs an EXECUTE without types with the types it last
        // received for this statement, possibly from another session: send
        // this session's whenever they differ.
        // (The label only for the error: it is a String, allocated per call.)
        let Some(h) = slot_of(&mut self.backends.master, &mut self.backends.replica, route.conn) else {
            let e = lost(&self.label(route.conn));
            self.send_err(&e).await?;
            return Ok(Ok(None));
        };
        let ctx = h.conn.stmt_context();
        let cached = h.conn.state.stmts.get(ctx, &sql);
        let mut packet = match (rebound, layout.bound_at, layout.bound, cached) {
            // A variant that binds the parameters in another order: every
            // EXECUTE of it carries its types.
            (Some(Ok(p)), ..) => p,
            (Some(Err(_)), ..) => {
                self.send_err(&crate::error::malformed_packet()).await?;
                return Ok(Ok(None));
            }
            (None, Some(_), true, Some(entry)) => {
                if entry.types.as_deref() != types {
                    entry.types = types.map(<[u8]>::to_vec);
                }
                payload.to_vec()
            }
            (None, Some(at), false, Some(entry)) if types.is_some() && entry.types.as_deref() != types => {
                let p = prepared::inject_types(payload, at, types.unwrap_or_default());
                entry.types = types.map(<[u8]>::to_vec);
                p
            }
            _ => payload.to_vec(),
        };
        prepared::set_stmt_id(&mut packet, backend_id);
        if self.backends.cursor.is_some_and(|(c, _)| c == id) {
            // A new EXECUTE closes the statement's cursor on the server.
            self.backends.cursor = None;
        }
        let tracker = match self
            .run_on_any(
                route,
                &packet,
                ResponseKind::Execute,
                hold,
                None,
                Some((backend_id, id)),
                provisional,
            )
            .await?
        {
            Ok(t) => t,
            Err(Stale) => return Ok(Err(Stale)),
        };
        let Some(tracker) = tracker else {
            return Ok(Ok(None));
        };
        if layout.cursor_flags != 0
            && tracker
                .last_status
                .is_some_and(|s| s & crate::protocol::consts::SERVER_STATUS_CURSOR_EXISTS != 0)
        {
            // Rows come with COM_STMT_FETCH on this connection.
            self.backends.cursor = Some((id, route.conn));
        }
        Ok(Ok(Some((tracker, self.backends.last_conn))))
    }
}
