//! Moving a session to the newest configuration snapshot after a reload.
//!
//! A session routes with one [`Runtime`] at a time: `Conn::Replica(i)`, the
//! read-only transaction's replica, the kept and cursor connections and
//! each prepared statement's last connection are positions in *its*
//! snapshot's replica list. Before each command the session checks whether
//! a newer snapshot was published and moves to it when everything it holds
//! exists there too:
//!
//! - a held master connection needs the same master pool (a reload keeps
//!   the pool of an unchanged backend), else the session waits until it has
//!   given the connection back (end of its transaction or pin);
//! - replica positions are translated by pool identity (a replica keeps its
//!   pool when others are added or removed before it);
//! - a replica a reload removed: a session whose read-only transaction,
//!   cursor or kept connection is on it finishes there first; an idle held
//!   connection to it (`backend.multiplex: false`) is simply given up.
//!
//! Until it moves, the session keeps the old snapshot alive, with the pools
//! and freshness monitor it needs: a statement or transaction in flight is
//! never broken by a reload.
//!
//! A change of master (`reload::roles`: another server, or none) is
//! different: the old master is gone or no longer the master, so nothing is
//! waited for. A session holding a master connection gives it up (closed,
//! so the server rolls back what was open) and moves; if its transaction or
//! pinned state was there, its next statement (COMMIT included) gets 1158
//! saying so instead of running. Nothing is replayed.

use std::sync::Arc;

use crate::backend::topology::Group;
use crate::runtime::Runtime;

use super::prepared::Conn;
use super::Session;
use crate::protocol::consts::{COM_QUIT, COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA};
use crate::protocol::packets::ErrPacket;

/// What [`Session::refresh_runtime`] did.
pub(super) enum Refreshed {
    /// Nothing to do, or the session cannot move yet.
    Stayed,
    /// Moved; `true`: to a freshness monitor it did not use before.
    Moved(bool),
    /// The master changed under the session's transaction or pinned state:
    /// answer this command with the error instead of running it.
    MasterLost(ErrPacket, bool),
}

impl Session {
    /// Adopt the newest snapshot when there is one and the session's state
    /// allows it (see the module comment). One atomic load when nothing was
    /// reloaded.
    ///
    /// Returns whether the session moved to a freshness monitor it did not
    /// use before (a reload that changed a group's servers or freshness
    /// settings starts new ones): that monitor's causal target may have been
    /// read before this session's last writes committed, which only the old
    /// monitor saw. [`Self::resync_causal`] must run before the next read.
    ///
    /// `cmd`: the command about to run (a master change is applied only
    /// before one that gets an answer).
    pub(super) fn refresh_runtime(&mut self, cmd: u8) -> Refreshed {
        if self.shared.runtime_generation() == self.rt.generation {
            return Refreshed::Stayed;
        }
        let latest = self.shared.runtime();
        let mut lost = None;
        if master_replaced(&self.rt, &latest) && self.backends.master.is_some() {
            if matches!(cmd, COM_QUIT | COM_STMT_CLOSE | COM_STMT_SEND_LONG_DATA) {
                return Refreshed::Stayed;
            }
            lost = self.give_up_old_master(&latest);
        }
        // hook(topo43c): the 1158 rule for every group (`Topology::master_lost_elsewhere`).
        let elsewhere = (!matches!(cmd, COM_QUIT | COM_STMT_CLOSE | COM_STMT_SEND_LONG_DATA))
            .then(|| {
                (self.rt.topology).master_lost_elsewhere(&latest.topology, |g| self.backends.groups.in_tx(g))
            })
            .flatten();
        if lost.is_some() || elsewhere.is_some() {
            if let (None, Some((old, new, none))) = (&lost, elsewhere) {
                let _ = self.give_up_old_master(&latest);
                lost = Some(crate::error::master_changed(&old, &new, none));
            }
            self.backends.groups.give_up_all();
        }
        if self.move_to(&latest).is_none() {
            return match lost {
                Some(e) => Refreshed::MasterLost(e, false),
                None => Refreshed::Stayed,
            };
        }
        let new_monitor = latest
            .monitors
            .iter()
            .any(|m| !self.rt.monitors.iter().any(|o| Arc::ptr_eq(o, m)));
        self.monitor = latest.monitors[0].clone();
        self.health = self.monitor.health_flags().into();
        self.rt = latest;
        match lost {
            Some(e) => Refreshed::MasterLost(e, new_monitor),
            None => Refreshed::Moved(new_monitor),
        }
    }

    /// The group's master changed: close the session's connection to the
    /// old one. The error for the client when something of the session's
    /// lived there (an open transaction, a pin such as a temporary table or
    /// a named lock).
    fn give_up_old_master(&mut self, latest: &Runtime) -> Option<ErrPacket> {
        let had_state = self.state.holds_master();
        if let Some(mut h) = self.backends.master.take() {
            h.conn.no_reuse = true;
        }
        self.state.master_lost();
        self.state.unpin_all();
        self.backends.groups.forget_default_group_write();
        if self.backends.keep == Some(Conn::Master) {
            self.backends.keep = None;
        }
        if matches!(self.backends.cursor, Some((_, Conn::Master))) {
            self.backends.cursor = None;
        }
        self.publish_lock_thread();
        let (old, new) = (self.rt.topology.groups.first()?, latest.topology.groups.first()?);
        had_state
            .then(|| crate::error::master_changed(old.master.addr(), new.master.addr(), new.master.fenced()))
    }

    /// hook(pause): wait while `PAUSE` covers `conn` (`crate::pause`). A
    /// master statement that waited takes a configuration reloaded meanwhile
    /// (a planned switchover's new master), as it would have at the statement
    /// boundary: it holds nothing yet, and the plan's target is the master.
    pub(super) async fn wait_if_paused(
        &mut self,
        conn: Conn,
    ) -> Result<(), crate::protocol::packets::ErrPacket> {
        let (g, t) = (
            &self.rt.topology.groups[0].name,
            self.rt.config.limits.pause_timeout,
        );
        let master = conn == Conn::Master;
        let admit = self
            .shared
            .pause
            .admit(self.proc.id, g, master, self.in_transaction(), t);
        if !(admit.await? && master) {
            return Ok(());
        }
        match self.refresh_runtime(crate::protocol::consts::COM_QUERY) {
            Refreshed::Stayed => Ok(()),
            Refreshed::Moved(new_monitor) => {
                if new_monitor {
                    self.resync_causal().await;
                }
                Ok(())
            }
            // The session kept state on the old master (see `give_up_old_master`).
            Refreshed::MasterLost(e, new_monitor) => {
                if new_monitor {
                    self.resync_causal().await;
                }
                Err(e)
            }
        }
    }

    /// After a move to new monitors: one master snapshot (shared by the
    /// sessions that moved at once) taken now covers every write the session
    /// committed before it, as `after_write` does after a write.
    pub(super) async fn resync_causal(&self) {
        for m in &self.rt.monitors {
            m.after_write().await;
        }
    }

    /// Translate every replica position the session holds into `latest`'s;
    /// `None` (nothing changed) when some cannot be translated yet.
    fn move_to(&mut self, latest: &Runtime) -> Option<()> {
        let (old, new) = (self.rt.topology.groups.first()?, latest.topology.groups.first()?);
        if self.backends.master.is_some() && !Arc::ptr_eq(&old.master, &new.master) {
            return None;
        }
        // Connections to other groups' masters (sharded tables placed there)
        // are indexed by group in this snapshot: finish with them first.
        if self.backends.groups.holds_any() {
            return None;
        }
        let map = Positions { old, new };
        // Computed before anything changes: all or nothing.
        let ro_tx = match self.state.ro_tx() {
            Some(i) => Some(map.replica(i)?),
            None => None,
        };
        let keep = match self.backends.keep {
            Some(c) => Some(map.conn(c)?),
            None => None,
        };
        let cursor = match self.backends.cursor {
            Some((id, c)) => Some((id, map.conn(c)?)),
            None => None,
        };
        match self.backends.replica.as_mut().map(|(i, _)| map.replica(*i)) {
            Some(Some(j)) => {
                if let Some((i, _)) = self.backends.replica.as_mut() {
                    *i = j;
                }
            }
            // Removed, and not busy (else `ro_tx`/`keep`/`cursor` failed above).
            Some(None) => self.backends.replica = None,
            None => {}
        }
        self.state.set_ro_tx(ro_tx);
        self.backends.keep = keep;
        self.backends.cursor = cursor;
        // The previous statement's connection went back to the pool (else
        // `keep` would name it): a removed replica's answer is gone anyway.
        self.backends.last_conn = map.conn(self.backends.last_conn).unwrap_or(Conn::Master);
        for s in self.stmts.stmts.values_mut() {
            s.last_exec = s.last_exec.and_then(|(c, uid)| map.conn(c).map(|c| (c, uid)));
        }
        Some(())
    }
}

/// Did the default group's master change between `old` and `new` (another
/// server, or none), as opposed to a reload keeping the same master?
fn master_replaced(old: &Runtime, new: &Runtime) -> bool {
    match (old.topology.groups.first(), new.topology.groups.first()) {
        (Some(o), Some(n)) => o.master_replaced_by(n),
        _ => false,
    }
}

/// Replica positions of one group in two snapshots.
struct Positions<'a> {
    old: &'a Group,
    new: &'a Group,
}

impl Positions<'_> {
    /// Where replica `i` of the old snapshot is in the new one, if there.
    fn replica(&self, i: usize) -> Option<usize> {
        let pool = &self.old.replicas.get(i)?.pool;
        self.new.replicas.iter().position(|r| Arc::ptr_eq(&r.pool, pool))
    }

    fn conn(&self, c: Conn) -> Option<Conn> {
        match c {
            Conn::Master => Some(Conn::Master),
            Conn::Replica(i) => self.replica(i).map(Conn::Replica),
        }
    }
}
