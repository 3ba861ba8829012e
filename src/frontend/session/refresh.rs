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

use std::sync::Arc;

use crate::backend::topology::Group;
use crate::runtime::Runtime;

use super::prepared::Conn;
use super::Session;

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
    pub(super) fn refresh_runtime(&mut self) -> bool {
        if self.shared.runtime_generation() == self.rt.generation {
            return false;
        }
        let latest = self.shared.runtime();
        if self.move_to(&latest).is_none() {
            return false;
        }
        let new_monitor = latest
            .monitors
            .iter()
            .any(|m| !self.rt.monitors.iter().any(|o| Arc::ptr_eq(o, m)));
        self.monitor = latest.monitors[0].clone();
        self.health = self.monitor.health_flags().into();
        self.rt = latest;
        new_monitor
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
        let ro_tx = match self.state.ro_tx {
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
        self.state.ro_tx = ro_tx;
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
