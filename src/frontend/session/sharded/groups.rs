//! Sub-tables in several backend groups: the session's master connection per
//! group, and the rule that one transaction writes to one group.
//!
//! Group 0 (the first configured) is the session's own master connection
//! (`Session::master`); every other group a sharded statement reaches gets a
//! connection here, synchronized with the session (default database,
//! replayed SETs) like the others.
//!
//! Transactions. The client's BEGIN/COMMIT/ROLLBACK reach group 0's master
//! as usual. When a statement inside a transaction uses another group's
//! master, sluice opens a transaction there first (`START TRANSACTION`), so
//! reads in the transaction see its writes and a consistent snapshot. The
//! first group the transaction writes to (any statement other than a read
//! sent to group 0 counts as a write there) is remembered until it ends; a
//! write to a second group is refused with error 1235 before anything of it
//! runs, so a transaction never needs a two-phase commit. At COMMIT the
//! writing group commits first when it is not group 0 (a failure there rolls
//! everything back and the client gets the error); the other groups only
//! read and are rolled back once group 0 has answered.
//!
//! Outside a transaction the connections of other groups are only held for
//! the statement that needs them.

use crate::backend::{BackendConn, Pooled};
use crate::protocol::packets::ErrPacket;
use crate::router::classify::{Classified, Kind};

use super::io::{lost, not_supported, run_ok};
use super::{Closed, Conn, Session};

/// The session's connections to the masters of groups other than 0.
#[derive(Default)]
pub(in crate::frontend::session) struct GroupConns {
    /// Indexed by group; index 0 stays empty (that is `Session::master`).
    held: Vec<Option<GroupHeld>>,
    /// The group the current transaction has written to.
    wrote: Option<usize>,
}

struct GroupHeld {
    conn: Pooled,
    /// A transaction is open on this connection.
    in_tx: bool,
}

/// A connection dropped with sluice's transaction still open (the session
/// ended or was reset mid-transaction) is closed, not pooled: the server
/// rolls back as soon as it reads the end of the stream (see
/// `frontend::control`).
impl Drop for GroupHeld {
    fn drop(&mut self) {
        if self.in_tx {
            self.conn.no_reuse = true;
        }
    }
}

impl GroupConns {
    fn slot(&mut self, group: usize) -> &mut Option<GroupHeld> {
        if self.held.len() <= group {
            self.held.resize_with(group + 1, || None);
        }
        &mut self.held[group]
    }

    /// A connection to another group's master is held.
    pub(in crate::frontend::session) fn holds_any(&self) -> bool {
        self.wrote.is_some() || self.held.iter().any(Option::is_some)
    }

    /// hook(topo43): the default group's master changed under the
    /// transaction (`refresh`): what it wrote there is gone with it.
    pub(in crate::frontend::session) fn forget_default_group_write(&mut self) {
        if self.wrote == Some(0) {
            self.wrote = None;
        }
    }

    /// hook(topo43c): a transaction is open on group `g`'s master.
    pub(in crate::frontend::session) fn in_tx(&self, g: usize) -> bool {
        self.held
            .get(g)
            .is_some_and(|h| h.as_ref().is_some_and(|h| h.in_tx))
    }

    /// hook(topo43c): a master changed under the transaction: give up every
    /// other group's connection (closed when a transaction was open there,
    /// see `Drop`, so the server rolls it back).
    pub(in crate::frontend::session) fn give_up_all(&mut self) {
        self.held.clear();
        self.wrote = None;
    }

    fn open_transactions(&self) -> bool {
        self.held.iter().flatten().any(|h| h.in_tx)
    }
}

impl Session {
    /// A transaction the client has begun is open on a backend (the
    /// master's status says so, a read-only one runs on a replica, or
    /// another group's master holds one): at shutdown the session may
    /// finish it (`wait::next_command`). `autocommit=0` alone opens nothing.
    pub(in crate::frontend::session) fn transaction_open(&self) -> bool {
        self.state.in_server_transaction()
            || self.state.holds_replica()
            || self.backends.groups.open_transactions()
    }

    /// The master connection of `group`, checked out and synchronized with
    /// the session; inside a transaction, with a transaction open on it.
    pub(super) async fn group_master(&mut self, group: usize) -> Result<&mut BackendConn, ErrPacket> {
        if group == 0 {
            self.held(Conn::Master).await?;
            let h = self
                .backends
                .master
                .as_mut()
                .ok_or_else(|| lost("no master connection"))?;
            h.conn.dirty = true;
            return Ok(&mut h.conn);
        }
        let g = self
            .rt
            .topology
            .groups
            .get(group)
            .ok_or_else(|| lost("no such backend group"))?;
        let pool = g.master.clone();
        let in_tx = self.in_transaction();
        // Another group's master, held back by PAUSE as group 0's is in `held`.
        self.admit(group, Conn::Master).await?;
        let slot = self.backends.groups.slot(group);
        if slot.as_ref().is_none_or(|h| h.conn.broken) {
            let conn = self
                .checkout(&pool)
                .await
                .map_err(|e| crate::error::backend_error_packet(&pool.label, pool.addr(), &e))?;
            *self.backends.groups.slot(group) = Some(GroupHeld { conn, in_tx: false });
        }
        let Some(h) = self.backends.groups.slot(group).as_mut() else {
            return Err(lost(&pool.label));
        };
        // Outside a transaction it holds only tracked state (database,
        // SETs) and goes back to the pool clean after the statement.
        h.conn.dirty = in_tx;
        super::super::sync_to_state(&mut h.conn, &pool, &self.state).await?;
        if in_tx && !h.in_tx {
            run_ok(&mut h.conn, "START TRANSACTION").await?;
            h.in_tx = true;
        }
        Ok(&mut h.conn)
    }

    /// Forget a group's connection that broke (its transaction is gone).
    pub(super) fn drop_broken(&mut self, group: usize) {
        if group == 0 {
            if self.backends.master.as_ref().is_some_and(|h| h.conn.broken) {
                self.backends.master = None;
            }
        } else if let Some(slot) = self.backends.groups.held.get_mut(group) {
            if slot.as_ref().is_some_and(|h| h.conn.broken) {
                *slot = None;
            }
        }
    }

    /// Inside a transaction, a write is about to go to `group`: refuse it if
    /// the transaction already wrote to another group, else remember it.
    pub(in crate::frontend::session) fn note_tx_write(&mut self, group: usize) -> Result<(), ErrPacket> {
        if !self.in_transaction() {
            return Ok(());
        }
        match self.backends.groups.wrote {
            Some(w) if w != group => Err(not_supported(format!(
                "sluice: this transaction already wrote to backend group `{}`; a write to group `{}` \
                     in the same transaction is refused (sluice does not commit across groups); \
                     commit or roll back first",
                self.group_name(w),
                self.group_name(group)
            ))),
            _ => {
                self.backends.groups.wrote = Some(group);
                Ok(())
            }
        }
    }

    /// Hook before a text statement goes to group 0 (see the module docs):
    /// a write there counts for the transaction, and COMMIT (or BEGIN, which
    /// commits) first commits a writing group other than 0. `Ok(true)`: the
    /// statement was answered here (refused, or its commit failed).
    pub(in crate::frontend::session) async fn groups_before(
        &mut self,
        c: &Classified,
    ) -> Result<bool, Closed> {
        match c.kind {
            Kind::Write => {
                if let Err(e) = self.note_tx_write(0) {
                    self.send_err(&e).await?;
                    return Ok(true);
                }
                Ok(false)
            }
            Kind::Commit | Kind::Begin { .. } if self.in_transaction() => {
                let Some(w) = self.backends.groups.wrote.filter(|&w| w != 0) else {
                    return Ok(false);
                };
                let r = match self.backends.groups.held.get_mut(w).and_then(Option::as_mut) {
                    Some(h) if h.in_tx => {
                        let r = run_ok(&mut h.conn, "COMMIT").await;
                        h.in_tx = false;
                        r.map(drop)
                    }
                    _ => Err(lost("the transaction's connection to its writing group was lost")),
                };
                match r {
                    Ok(()) => {
                        self.rt.monitors[w].after_write().await;
                        Ok(false)
                    }
                    Err(e) => {
                        // The writes are gone: end the whole transaction.
                        if let Ok(conn) = self.group_master(0).await {
                            if let Ok(ok) = run_ok(conn, "ROLLBACK").await {
                                self.state.master_status(ok.status);
                            }
                        }
                        self.drop_broken(0);
                        self.groups_end(false).await;
                        self.send_err(&e).await?;
                        Ok(true)
                    }
                }
            }
            _ => Ok(false),
        }
    }

    /// Hook after a statement ran on group 0: when the session's transaction
    /// ended (or a new one began), end the transactions sluice opened on
    /// other groups. `committed`: it ended by a commit (explicit or
    /// implicit), not a rollback or a lost connection.
    pub(in crate::frontend::session) async fn groups_after(&mut self, kind: &Kind, committed: bool) {
        let restarted = matches!(kind, Kind::Begin { .. } | Kind::Commit | Kind::Rollback);
        if self.in_transaction() && !restarted {
            return;
        }
        self.groups_end(committed && *kind != Kind::Rollback).await;
    }

    /// End every transaction sluice opened on another group (the writing
    /// group commits if `commit`, the others roll back) and give the
    /// connections back.
    pub(super) async fn groups_end(&mut self, commit: bool) {
        let wrote = self.backends.groups.wrote.take();
        if !self.backends.groups.open_transactions() {
            self.backends.groups.held.clear();
            return;
        }
        for (g, slot) in self.backends.groups.held.iter_mut().enumerate() {
            let Some(h) = slot.as_mut() else { continue };
            if !h.in_tx {
                continue;
            }
            let sql = if commit && wrote == Some(g) {
                "COMMIT"
            } else {
                "ROLLBACK"
            };
            if let Err(e) = run_ok(&mut h.conn, sql).await {
                tracing::warn!(group = g, error = %e.message, "ending a transaction on a backend group failed");
                h.conn.broken = true;
            }
            h.in_tx = false;
            if sql == "COMMIT" {
                self.rt.monitors[g].after_write().await;
            }
        }
        self.backends.groups.held.clear();
    }

    /// After a sharded statement: outside a transaction, nothing is kept on
    /// other groups.
    pub(super) async fn groups_settle(&mut self) {
        if !self.in_transaction() {
            self.groups_end(true).await;
        }
    }
}
