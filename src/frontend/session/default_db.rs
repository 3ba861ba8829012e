//! hook(topo43c): a default database named at login (handshake) or by
//! COM_INIT_DB while the master is absent or held back (issue 43). The
//! master answers as before when it can; when the group has no master, a
//! `PAUSE WRITES` holds it (`pause::Gate::db_from_replica`), or it cannot be
//! reached (1429), an eligible replica may confirm the database
//! instead. Only its yes counts: a replica in rotation replicates from the
//! master, so a database it has (and lets the account use) came from there;
//! a refusal there may be replication lag, so it goes to the master path as
//! before (1290, the pause, 1429).

use crate::protocol::packets::ErrPacket;

use super::prepared::Conn;
use super::Session;

/// ERR 1429: the master could not be reached (`error::backend_error_packet`).
const CANNOT_CONNECT: u16 = 1429;

impl Session {
    /// The login's default database, checked where it can be (see above).
    pub(super) async fn check_login_db(&mut self) -> Result<(), ErrPacket> {
        let g = &self.rt.topology.groups[0];
        let replica_first = self.shared.pause.db_from_replica(&g.name, g.master.fenced());
        if replica_first && self.db_on_replica().await {
            return Ok(());
        }
        match self.held(Conn::Master).await {
            Err(e) if !replica_first && e.code == CANNOT_CONNECT && self.db_on_replica().await => Ok(()),
            r => r,
        }
    }

    /// COM_INIT_DB `db` answered from a replica when the master is absent
    /// (no master, or it cannot be reached) or held back; `Ok(false)`: not
    /// answered, take the master path.
    pub(super) async fn init_db_on_replica(&mut self, db: &str) -> Result<bool, super::Closed> {
        if self.in_transaction() {
            return Ok(false);
        }
        let g = &self.rt.topology.groups[0];
        if !self.shared.pause.db_from_replica(&g.name, g.master.fenced()) {
            // Unreachable is known only by trying, as the master path would
            // (which then finds the connection checked out).
            match self.held(Conn::Master).await {
                Err(e) if e.code == CANNOT_CONNECT => {}
                _ => return Ok(false),
            }
        }
        let before = self.state.db().map(str::to_owned);
        self.state.set_db(Some(db.to_owned()));
        if !self.db_on_replica().await {
            self.state.set_db(before);
            return Ok(false);
        }
        self.send_login_ok().await.map(|()| true)
    }

    /// An eligible replica in `self.state.db` (synchronized: `USE` run
    /// there); false when none is or the replica refused it.
    async fn db_on_replica(&mut self) -> bool {
        let Some(i) = self.monitor.replicas.iter().position(|r| r.in_rotation()) else {
            return false;
        };
        self.held(Conn::Replica(i)).await.is_ok()
    }
}
