//! The session's logical state: what the client believes its server holds
//! (default database, transaction, replayed SETs, pins, sql_mode, the
//! previous statement's counts), apart from the connections that serve it.
//!
//! Everything here is plain data changed only by the transitions below, so
//! the state machine can be read (and is tested) without a socket.
//!
//! Phases (derived from the fields, never stored; `view` hands them to the
//! router, `holds_*` to connection release):
//!
//! | from | event | to |
//! |---|---|---|
//! | Ready | master status has IN_TRANS, or autocommit off | InTransaction |
//! | InTransaction | master status without IN_TRANS, autocommit on | Ready |
//! | Ready | `START TRANSACTION READ ONLY` served by replica `i` | ReadOnly(i) |
//! | ReadOnly(i) | COMMIT/ROLLBACK there, replica lost, or moved to master | Ready / InTransaction |
//! | any | a statement whose effects cannot be undone elsewhere (temporary table, user variable, lock, unknown effects) | Pinned |
//! | Pinned | only COM_RESET_CONNECTION / COM_CHANGE_USER | Ready |
//! | any | master connection lost | Ready (its transaction is gone with it) |
//!
//! A pin outranks the others for routing (everything to the master
//! connection the session holds); InTransaction sends everything to the
//! master; ReadOnly(i) sends everything to replica `i`.

use crate::backend::state::SetChain;
use crate::protocol::consts::{SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS};
use crate::router::lexer::LexOptions;
use crate::router::plan::Pins;
use crate::router::previous::Previous;
use crate::router::route::View;

use super::backends::LastInsertId;

mod apply;
pub(super) use apply::Outcome;

/// Replayable `SET` statements kept per session; beyond this the session is
/// pinned to the master rather than growing without bound.
pub(super) const MAX_REPLAYED_SETS: usize = 64;

#[derive(Debug)]
pub(super) struct SessionState {
    /// The default database as the client sees it.
    db: Option<String>,
    /// Status flags of the master's last answer (autocommit, in transaction).
    status: u16,
    /// SET statements every backend connection of the session must run,
    /// and their hash chain (compared with a connection's own).
    sets: Vec<Vec<u8>>,
    chain: SetChain,
    /// Why the session is pinned to the master, if it is.
    pins: Pins,
    /// How the server reads quotes in this session (its sql_mode), when
    /// known; `None`: classify under every reading.
    lex: Option<LexOptions>,
    lid: LastInsertId,
    /// The replica running the session's read-only transaction.
    ro_tx: Option<usize>,
    /// The read-only transaction's snapshot is known to cover every write
    /// committed before it began (REPEATABLE READ: checked at its first
    /// read, or at START ... WITH CONSISTENT SNAPSHOT).
    ro_checked: bool,
    /// The session's isolation level is READ COMMITTED or READ UNCOMMITTED
    /// (every statement sees what committed before it), when known.
    read_committed: Option<bool>,
    /// ROW_COUNT() and FOUND_ROWS() of the session's previous statement,
    /// for when the next one runs on a connection that ran another's since.
    prev: Previous,
    /// The uid of a connection on which sluice ran a query of its own after
    /// the session's previous statement (so its server-side ROW_COUNT() and
    /// FOUND_ROWS() are sluice's, not the session's); 0: none.
    /// [`PREV_EVERYWHERE`]: the previous statement was a sharded read, so no
    /// connection's own values are the session's.
    prev_clobbered: u64,
    /// The previous statement was a sharded read whose FOUND_ROWS() sluice does not
    /// know (see `select::MergeCtx::found_rows_known`).
    found_rows_unknown: bool,
    /// The session's copies of which tables use sequences (sequence_users).
    sequences: crate::frontend::sequence_users::Local,
    /// The session's `wait_timeout` once it set one.
    wait_timeout: Option<std::time::Duration>,
    /// The last read's tables qualified (see [`SessionState::qualified`]).
    qualified: Option<Qualified>,
}

/// `tables` under default database `db`, qualified as `names`.
#[derive(Debug)]
struct Qualified {
    tables: Vec<String>,
    db: Option<String>,
    names: Option<Vec<String>>,
}

impl SessionState {
    pub fn new(db: Option<String>) -> SessionState {
        SessionState {
            db,
            status: SERVER_STATUS_AUTOCOMMIT,
            sets: Vec::new(),
            chain: SetChain::default(),
            pins: Pins::default(),
            lex: None,
            lid: LastInsertId::default(),
            ro_tx: None,
            ro_checked: false,
            read_committed: None,
            prev: Previous::default(),
            prev_clobbered: 0,
            found_rows_unknown: false,
            sequences: Default::default(),
            wait_timeout: None,
            qualified: None,
        }
    }

    // The fields as the rest of the session reads them (see their docs
    // above), and the changes made outside `apply`, each by its name.

    pub fn db(&self) -> Option<&str> {
        self.db.as_deref()
    }

    pub fn set_db(&mut self, db: Option<String>) {
        self.db = db;
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn sets(&self) -> &[Vec<u8>] {
        &self.sets
    }

    /// Whether a replayed SET names `var` (a plain search of its text, case-insensitive).
    pub fn sets_name(&self, var: &[u8]) -> bool {
        self.sets
            .iter()
            .any(|s| s.windows(var.len()).any(|w| w.eq_ignore_ascii_case(var)))
    }

    pub fn chain(&self) -> &SetChain {
        &self.chain
    }

    pub fn pins(&self) -> Pins {
        self.pins
    }

    /// A reloaded configuration moved the session to a new master: the
    /// state its pins kept there is gone.
    pub fn unpin_all(&mut self) {
        self.pins = Pins::default();
    }

    pub fn lex(&self) -> Option<LexOptions> {
        self.lex
    }

    pub fn set_lex(&mut self, lex: Option<LexOptions>) {
        self.lex = lex;
    }

    pub fn lid(&self) -> &LastInsertId {
        &self.lid
    }

    pub fn lid_mut(&mut self) -> &mut LastInsertId {
        &mut self.lid
    }

    pub fn ro_tx(&self) -> Option<usize> {
        self.ro_tx
    }

    /// The read-only transaction moves to replica `ro_tx` (a reload
    /// renumbered the replicas) or ends (`None`).
    pub fn set_ro_tx(&mut self, ro_tx: Option<usize>) {
        self.ro_tx = ro_tx;
    }

    pub fn ro_checked(&self) -> bool {
        self.ro_checked
    }

    pub fn ro_snapshot_checked(&mut self) {
        self.ro_checked = true;
    }

    /// The read-only transaction (it read nothing that binds it) ended on
    /// its replica and began again on the master.
    pub fn ro_tx_moved_to_master(&mut self) {
        self.ro_tx = None;
        self.ro_checked = false;
        self.status |= SERVER_STATUS_IN_TRANS;
    }

    pub fn read_committed(&self) -> Option<bool> {
        self.read_committed
    }

    pub fn learned_isolation(&mut self, read_committed: bool) {
        self.read_committed = Some(read_committed);
    }

    pub fn prev(&self) -> Previous {
        self.prev
    }

    pub fn prev_clobbered(&self) -> u64 {
        self.prev_clobbered
    }

    /// Sluice ran a query of its own on connection `uid`.
    pub fn clobbered(&mut self, uid: u64) {
        self.prev_clobbered = uid;
    }

    pub fn found_rows_unknown(&self) -> bool {
        self.found_rows_unknown
    }

    /// A sharded read begins: until its merge ends well, FOUND_ROWS() has
    /// no answer sluice knows.
    pub fn merging(&mut self) {
        self.found_rows_unknown = true;
    }

    /// A sharded read's merge ended: FOUND_ROWS() is `found_rows` on
    /// whichever connection it runs, or unknown.
    pub fn merged(&mut self, found_rows: Option<u64>) {
        if let Some(n) = found_rows {
            self.prev.found_rows = n;
            self.prev_clobbered = PREV_EVERYWHERE;
        }
        self.found_rows_unknown = found_rows.is_none();
    }

    pub fn sequences_mut(&mut self) -> &mut crate::frontend::sequence_users::Local {
        &mut self.sequences
    }

    /// The default database and [`Self::sequences_mut`] at once.
    pub fn db_and_sequences(&mut self) -> (Option<&str>, &mut crate::frontend::sequence_users::Local) {
        (self.db.as_deref(), &mut self.sequences)
    }

    pub fn wait_timeout(&self) -> Option<std::time::Duration> {
        self.wait_timeout
    }

    pub fn set_wait_timeout(&mut self, t: std::time::Duration) {
        self.wait_timeout = Some(t);
    }

    /// In a transaction on the master (by its last status), or autocommit off.
    pub fn in_transaction(&self) -> bool {
        self.in_server_transaction() || self.status & SERVER_STATUS_AUTOCOMMIT == 0
    }

    /// The master's last status says a transaction is open there.
    pub fn in_server_transaction(&self) -> bool {
        self.status & SERVER_STATUS_IN_TRANS != 0
    }

    /// The master connection must stay with the session: a transaction is
    /// open on the server (its status flags say so; autocommit=0 alone is a
    /// replayed SET, and such a session holds its connection from its first
    /// statement to COMMIT like any transaction), or the session is pinned.
    pub fn holds_master(&self) -> bool {
        self.in_server_transaction() || self.pins.reason().is_some()
    }

    /// A replica connection must stay: it runs the read-only transaction.
    pub fn holds_replica(&self) -> bool {
        self.ro_tx.is_some()
    }

    /// What the router needs to know of the session (`router::route::plan`).
    pub fn view(&self) -> View {
        View {
            ro_tx: self.ro_tx,
            pinned: self.pins.reason(),
            in_transaction: self.in_transaction(),
        }
    }

    /// The master answered with status flags `st`.
    pub fn master_status(&mut self, st: u16) {
        self.status = st;
    }

    /// The master connection is gone, and the server's transaction with it.
    pub fn master_lost(&mut self) {
        self.status = SERVER_STATUS_AUTOCOMMIT;
    }

    /// The read-only transaction's replica is gone.
    pub fn replica_lost(&mut self) {
        self.ro_tx = None;
    }

    /// Remember a replayable SET. `false`: too many; pin instead (the
    /// caller records the pin, which is counted in metrics).
    pub fn push_set(&mut self, sql: &[u8]) -> bool {
        if self.sets.len() >= MAX_REPLAYED_SETS {
            return false;
        }
        self.sets.push(sql.to_vec());
        self.chain.push(sql);
        true
    }

    /// COM_RESET_CONNECTION / COM_CHANGE_USER: the state a new login has
    /// (the default database is the caller's to set).
    pub fn reset(&mut self) {
        let db = self.db.take();
        *self = SessionState::new(db);
    }

    /// `db.table` names for the freshness scope (unqualified names take the
    /// session's default database); `None` when one has no database. Made
    /// once for the tables and database of the last read that asked: a
    /// session repeats its statements, and comparing the names costs less
    /// than making them (a `format!` and an allocation per table on every
    /// read of the freshness gate).
    pub fn qualified(&mut self, tables: &[String]) -> Option<&[String]> {
        let fresh = |q: &Qualified| q.tables == tables && q.db == self.db;
        if !self.qualified.as_ref().is_some_and(fresh) {
            self.qualified = Some(Qualified {
                tables: tables.to_vec(),
                db: self.db.clone(),
                names: qualify(self.db.as_deref(), tables),
            });
        }
        self.qualified.as_ref().and_then(|q| q.names.as_deref())
    }
}

fn qualify(db: Option<&str>, tables: &[String]) -> Option<Vec<String>> {
    tables
        .iter()
        .map(|t| {
            if t.contains('.') {
                Some(t.clone())
            } else {
                db.map(|db| format!("{db}.{t}"))
            }
        })
        .collect()
}

/// `prev_clobbered` after a sharded read: every connection's ROW_COUNT() and
/// FOUND_ROWS() are foreign to the session.
pub(crate) const PREV_EVERYWHERE: u64 = u64::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_follow_the_master_status() {
        let mut s = SessionState::new(None);
        assert!(!s.view().in_transaction && !s.holds_master());
        s.master_status(SERVER_STATUS_AUTOCOMMIT | SERVER_STATUS_IN_TRANS);
        assert!(s.view().in_transaction && s.holds_master());
        s.master_status(SERVER_STATUS_AUTOCOMMIT);
        assert!(!s.view().in_transaction && !s.holds_master());
        // autocommit=0: everything to the master, but the connection is
        // held only once the server has a transaction open.
        s.master_status(0);
        assert!(s.view().in_transaction && !s.holds_master());
        s.master_lost();
        assert!(!s.view().in_transaction);
    }

    #[test]
    fn a_pin_outranks_everything_and_only_reset_lifts_it() {
        let mut s = SessionState::new(Some("shop".into()));
        s.ro_tx = Some(1);
        assert_eq!(s.view().ro_tx, Some(1));
        assert!(s.holds_replica() && !s.holds_master());
        s.pins.insert(Pins::TEMP_TABLE);
        assert_eq!(
            s.view().pinned,
            Some(crate::router::plan::RouteReason::TemporaryTable)
        );
        s.master_status(SERVER_STATUS_AUTOCOMMIT);
        s.replica_lost();
        assert!(s.holds_master() && !s.holds_replica());
        s.reset();
        assert!(s.view().pinned.is_none() && !s.holds_master());
        assert_eq!(s.db.as_deref(), Some("shop"), "reset keeps the default database");
        assert!(s.sets.is_empty() && s.lex.is_none() && s.wait_timeout.is_none());
    }

    #[test]
    fn replayed_sets_are_bounded() {
        let mut s = SessionState::new(None);
        for i in 0..MAX_REPLAYED_SETS {
            assert!(s.push_set(format!("SET @a{i}=1").as_bytes()));
        }
        assert!(!s.push_set(b"SET @one_too_many=1"));
        assert_eq!(s.sets.len(), MAX_REPLAYED_SETS);
    }

    #[test]
    fn names_are_qualified_with_the_default_database() {
        let t = vec!["a".to_string(), "d.b".to_string()];
        // Remembered, and made again when the tables or the database change.
        let mut s = SessionState::new(None);
        assert_eq!(s.qualified(&[]), Some(&[][..]));
        assert_eq!(s.qualified(&t), None);
        s.db = Some("shop".into());
        assert_eq!(
            s.qualified(&t),
            Some(&["shop.a".to_string(), "d.b".to_string()][..])
        );
        assert_eq!(s.qualified(&t[..1]), Some(&["shop.a".to_string()][..]));
        s.db = Some("other".into());
        assert_eq!(s.qualified(&t[..1]), Some(&["other.a".to_string()][..]));
    }
}
