//! A statement's effects on the session: [`Session::apply`] is the one
//! place they reach it (pins taken and lifted, SETs recorded for replay,
//! the default database, the read-only transaction, LAST_INSERT_ID, the
//! counter bumps and the causal snapshot), decided from the `Plan` and the
//! server's answer. The async work it asks for is in `followups.rs`.

use crate::frontend::prepared::Conn;
use crate::frontend::session::backends::slot_of;
use crate::frontend::session::state::PREV_EVERYWHERE;
use crate::frontend::session::Session;
use crate::protocol::consts::*;
use crate::protocol::response::ResponseTracker;
use crate::router::classify::Classified;
use crate::router::plan::{Pins, Plan, WriteSet};
use crate::router::route::{self};

impl Session {
    /// What the connection that ran a statement tells the session before
    /// its effects apply: `kept` is the connection kept for this
    /// statement (it may ask about the one before).
    pub(super) async fn settle(
        &mut self,
        plan: &Plan<'_>,
        c: &Classified,
        sql: &[u8],
        conn: Conn,
        tracker: &ResponseTracker,
        kept: Option<Conn>,
    ) {
        // Session state set on a replica connection (GET DIAGNOSTICS @n on
        // the previous statement's, SET @x in a read-only transaction there)
        // moves to the master; that connection is never pooled again.
        // (A variable assignment is a pin effect: route::effects.)
        if matches!(conn, Conn::Replica(_)) && !plan.effects.pin.is_empty() {
            if let Err(e) = self.take_state_from_replica(conn, sql).await {
                tracing::warn!(error = %e.message, "cannot move user variables from a replica connection to the master");
            }
        }
        self.note_previous(tracker);
        // A result set from that connection makes its FOUND_ROWS() the
        // session's again (and ROW_COUNT() is -1 after it either way).
        if tracker.result_set {
            self.state.found_rows_unknown = false;
        }
        if tracker.result_set
            && (self.state.prev_clobbered == self.gen_of(conn)
                || self.state.prev_clobbered == PREV_EVERYWHERE)
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
        if e.changes_columns {
            self.shared.sequence_users.forget_all();
            // A sharded read's learned result columns may come from this table (a join
            // with an unsharded table): described again from now on.
            self.rt.shard_rules.forget_columns();
        }
        if on_master {
            let reported = tracker.last_ok.map(|(_, id)| id).unwrap_or(0);
            // A write answered with rows (INSERT … RETURNING) has no OK packet
            // to report its generated id: read LAST_INSERT_ID() back as for
            // a statement that names it.
            let rows_of_a_write = tracker.result_set && plan.write_set != WriteSet::Nothing;
            self.note_insert_id(reported, e.last_insert_id || rows_of_a_write);
            // FOUND_ROWS() after SQL_CALC_FOUND_ROWS is answered by this
            // connection. (Not kept after writes for ROW_COUNT(): idle
            // sessions would hold connections; see backends.rs.)
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
                    self.state.ro_checked = e.consistent_snapshot;
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
            // idle limit follows (see followups.rs).
            if e.idle_limit {
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

    /// Remember a SET that ran on `ran_on`, to replay it on the session's
    /// other connections before they next serve it.
    pub(super) fn record_set(&mut self, sql: &[u8], ran_on: Conn) {
        // The connection that ran it had run all the others (it was synced).
        let synced = slot_of(&mut self.backends.master, &mut self.backends.replica, ran_on)
            .filter(|h| h.conn.state.sets == self.state.chain);
        if !self.state.push_set(sql) {
            self.pin(Pins::SESSION_STATE);
            return;
        }
        if let Some(h) = synced {
            h.conn.state.sets.push(sql);
        }
    }
}
