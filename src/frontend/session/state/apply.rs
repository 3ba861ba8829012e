//! A statement's effects on the session: [`SessionState::apply`] is the one
//! place they reach it (ROW_COUNT() and FOUND_ROWS(), pins taken and lifted,
//! the default database, the read-only transaction, the isolation level),
//! decided from the `Plan` and the server's answer (an [`Outcome`]), without
//! the SQL text and without waiting for anything. What needs a connection, a
//! shared cache or a round trip (SETs recorded for replay, LAST_INSERT_ID,
//! the counter bumps and the causal snapshot, …) it asks for in
//! [`FollowUps`], which `followups.rs` runs in a fixed order.

use crate::frontend::prepared::Conn;
use crate::protocol::consts::SERVER_STATUS_IN_TRANS;
use crate::protocol::response::ResponseTracker;
use crate::router::plan::{Pins, Plan, WriteSet};
use crate::router::route;

use super::{SessionState, PREV_EVERYWHERE};

/// What running a statement gave, as [`SessionState::apply`] reads it.
pub(in crate::frontend::session) struct Outcome<'a> {
    /// The connection that answered (group 0's master for a sharded write).
    pub conn: Conn,
    /// That connection's uid (`Session::gen_of`; 0: none held).
    pub conn_uid: u64,
    pub answer: &'a ResponseTracker,
    /// The master's status said a transaction was open before the statement.
    pub was_in_server_tx: bool,
    /// The connection kept for this statement (it may ask about the one before).
    pub kept: Option<Conn>,
}

/// The work [`SessionState::apply`] asks the session for, in the order
/// `Session::follow_up` does it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::frontend::session) struct FollowUps {
    /// Session state made on a replica connection moves to the master.
    pub take_state_from_replica: bool,
    /// Keep the connection that ran it, unless one is kept already: its
    /// diagnostics area answers the next statement.
    pub keep_diagnostics: Option<Conn>,
    /// DDL: forget what was learned of columns (sequence users, sharded reads).
    pub forget_columns: bool,
    /// On the master: the insert id its OK reported, and whether the
    /// session's LAST_INSERT_ID() may have changed anyway.
    pub insert_id: Option<(u64, bool)>,
    /// The master connection answers FOUND_ROWS() next: keep it.
    pub keep_for_found_rows: bool,
    /// The connection that ran it entered this database (`USE`).
    pub use_db: Option<String>,
    /// Record the SET for replay on the session's other connections.
    pub record_set: bool,
    /// Pins taken now (counted in the metrics).
    pub pinned: Pins,
    /// Read back the sql_mode / the idle limit a SET may have changed.
    pub learn_sql_mode: bool,
    pub idle_limit: bool,
    /// Run the statement on the master too, and take these pins.
    pub mirror_on_master: Option<Pins>,
    /// The tracked tables may have changed (DDL, unknown effects): install
    /// new tables' triggers (`freshness.auto_install`) if it succeeded.
    pub install_new_tables: bool,
    pub forget_tracked: bool,
    /// Bump the global counter row of the groups it wrote to.
    pub bump_global: bool,
    /// Take a causal snapshot of those groups.
    pub snapshot: bool,
}

impl SessionState {
    /// The one place where a statement's effects reach the session.
    pub(in crate::frontend::session) fn apply(&mut self, plan: &Plan<'_>, out: &Outcome<'_>) -> FollowUps {
        let t = out.answer;
        let ok = !t.error;
        let on_master = out.conn == Conn::Master;
        let e = &plan.effects;
        let mut f = FollowUps {
            // Session state set on a replica connection (GET DIAGNOSTICS @n
            // on the previous statement's, SET @x in a read-only transaction
            // there) moves to the master; that connection is never pooled
            // again. (A variable assignment is a pin effect: route::effects.)
            take_state_from_replica: !on_master && !e.pin.is_empty(),
            // DDL: column defaults or triggers may have changed (a procedure or
            // dynamic SQL running DDL is seen within sequence_users::TTL).
            forget_columns: e.changes_columns,
            ..FollowUps::default()
        };
        self.note_previous(t);
        // A result set from that connection makes its FOUND_ROWS() the
        // session's again (and ROW_COUNT() is -1 after it either way).
        if t.result_set {
            self.found_rows_unknown = false;
            if self.prev_clobbered == out.conn_uid || self.prev_clobbered == PREV_EVERYWHERE {
                self.prev_clobbered = 0;
            }
        }
        if plan.reads_no_table && out.kept == Some(out.conn) {
            f.keep_diagnostics = Some(out.conn);
        }
        if on_master {
            let reported = t.last_ok.map(|(_, id)| id).unwrap_or(0);
            // A write answered with rows (INSERT … RETURNING) has no OK packet
            // to report its generated id: read LAST_INSERT_ID() back as for
            // a statement that names it.
            let rows_of_a_write = t.result_set && plan.write_set != WriteSet::Nothing;
            f.insert_id = Some((reported, e.last_insert_id || rows_of_a_write));
            // FOUND_ROWS() after SQL_CALC_FOUND_ROWS is answered by this
            // connection. (Not kept after writes for ROW_COUNT(): idle
            // sessions would hold connections; see backends.rs.)
            f.keep_for_found_rows = e.keep_for_found_rows;
        }
        let was_next_tx = self.pins.has(Pins::NEXT_TRANSACTION);
        if ok {
            if let Some(db) = &e.use_db {
                self.db = Some(db.clone());
                f.use_db = Some(db.clone());
            }
            f.record_set = e.replay_set;
            if let (true, Conn::Replica(i)) = (e.begin_read_only, out.conn) {
                self.ro_tx = Some(i);
                // START was checked against every table; WITH CONSISTENT
                // SNAPSHOT takes the snapshot right then.
                self.ro_checked = e.consistent_snapshot;
            }
            if e.isolation {
                self.read_committed = None;
            }
            // Only master statements leave state the session must keep on
            // its master connection.
            if on_master {
                f.pinned = self.take_pins(e.pin);
                self.pins.remove(e.unpin);
                if e.next_transaction {
                    f.pinned |= self.take_pins(Pins::NEXT_TRANSACTION);
                }
            }
            f.learn_sql_mode = e.sql_mode;
            // SET [SESSION] wait_timeout / interactive_timeout: the
            // session's idle limit follows (see followups.rs).
            f.idle_limit = e.idle_limit;
        }
        if e.mirror_on_master && !on_master {
            f.mirror_on_master = Some(e.pin);
        }
        // `SET TRANSACTION ...` applies to the connection's next transaction.
        if was_next_tx && !(ok && e.next_transaction) && !self.in_transaction() {
            self.pins.remove(Pins::NEXT_TRANSACTION);
        }
        let ro_tx_ended = t.last_status.is_some_and(|s| s & SERVER_STATUS_IN_TRANS == 0);
        if !on_master && ro_tx_ended {
            self.ro_tx = None;
        }
        if on_master && plan.write_set == WriteSet::Everything {
            // DDL, TRUNCATE, dynamic SQL, procedures: no trigger counted
            // them, and the tracked set may have changed.
            f.install_new_tables = ok && e.refresh_tracked;
            f.forget_tracked = e.refresh_tracked;
            f.bump_global = true;
        }
        f.snapshot = route::needs_snapshot(plan, out.was_in_server_tx, self.in_server_transaction());
        f
    }

    /// What ROW_COUNT() and FOUND_ROWS() say after this answer.
    fn note_previous(&mut self, t: &ResponseTracker) {
        if t.error {
            self.prev.row_count = -1;
        } else if t.result_set {
            self.prev.row_count = -1;
            self.prev.found_rows = t.rows;
        } else {
            let affected = t.last_ok.map(|(a, _)| a).unwrap_or(0);
            self.prev.row_count = i64::try_from(affected).unwrap_or(i64::MAX);
        }
    }

    /// A statement the client got an error for before any backend answered
    /// it (or a read merged from sub-tables): ROW_COUNT() is -1 after it.
    pub(in crate::frontend::session) fn unanswered(&mut self) {
        self.prev.row_count = -1;
    }

    /// Take the pins of `bits`; returns those not taken before (counted
    /// once per reason and session stretch, see `Session::pin`).
    pub(in crate::frontend::session) fn take_pins(&mut self, bits: Pins) -> Pins {
        let new = bits.difference(self.pins);
        self.pins.insert(bits);
        new
    }
}
