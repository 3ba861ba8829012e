//! Replica eligibility: whether a replica may serve reads at all, by its
//! replication state, apart from its counters (see `crate::follow`, which
//! probes it and sets it here).
//!
//! A replica is eligible while its IO and SQL threads run and it replicates
//! from the group's current master (`Master_Server_Id` is the master's
//! `@@server_id`). The counters' generation (`#epoch`) is checked per read
//! on top of this (`Counters::covers`), and reported as a reason here.

use std::sync::atomic::{AtomicU8, Ordering};

/// Why a replica is (not) in rotation, apart from its probe health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    /// Not probed yet: out of rotation until the first topology probe.
    Unknown = 0,
    Eligible = 1,
    /// Its source cannot be proved to be the master: replication status
    /// cannot be read (a missing grant), or the master's `@@server_id` is
    /// not known yet (never reached) and the replica's `Master_Host:Port`
    /// is not the group's `master.addr`. Out of rotation.
    Unverified = 2,
    /// The topology probe could not reach it.
    Unreachable = 3,
    /// No replication configured (`SHOW ALL SLAVES STATUS` is empty).
    NotReplicating = 4,
    /// `Slave_IO_Running: No` (an error such as 1236, or STOP SLAVE).
    IoThreadStopped = 5,
    /// `Slave_SQL_Running: No`.
    SqlThreadStopped = 6,
    /// `Master_Server_Id` is not the current master's `@@server_id`.
    OtherMaster = 7,
    /// It has not applied the counters' current generation (`#epoch`) yet.
    OldEpoch = 8,
}

impl Reason {
    pub const ALL: [Reason; 9] = [
        Reason::Unknown,
        Reason::Eligible,
        Reason::Unverified,
        Reason::Unreachable,
        Reason::NotReplicating,
        Reason::IoThreadStopped,
        Reason::SqlThreadStopped,
        Reason::OtherMaster,
        Reason::OldEpoch,
    ];

    /// May it serve reads (counters permitting)?
    pub fn eligible(self) -> bool {
        self == Reason::Eligible
    }

    /// The metric label and console word.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Unknown => "not_probed_yet",
            Reason::Eligible => "eligible",
            Reason::Unverified => "replication_unverified",
            Reason::Unreachable => "unreachable",
            Reason::NotReplicating => "not_replicating",
            Reason::IoThreadStopped => "io_thread_stopped",
            Reason::SqlThreadStopped => "sql_thread_stopped",
            Reason::OtherMaster => "replicates_from_another_master",
            Reason::OldEpoch => "epoch_not_applied",
        }
    }

    fn from_u8(v: u8) -> Reason {
        Reason::ALL
            .into_iter()
            .find(|r| *r as u8 == v)
            .unwrap_or(Reason::Unknown)
    }
}

/// A replica's [`Reason`], read by the routing path with one atomic load.
#[derive(Debug, Default)]
pub struct Eligibility(AtomicU8);

impl Eligibility {
    pub fn get(&self) -> Reason {
        Reason::from_u8(self.0.load(Ordering::Acquire))
    }

    /// Returns the reason it had before.
    pub fn set(&self, r: Reason) -> Reason {
        Reason::from_u8(self.0.swap(r as u8, Ordering::AcqRel))
    }
}

/// The statement that starts a new counter generation on a master: a
/// random `#epoch` (as DDL through sluice does, see `bump_global`), so only
/// replicas that applied it from that master compare as fresh.
pub fn new_generation_sql(schema: &str) -> String {
    use rand::Rng;
    let epoch: u64 = rand::rng().random_range(1..i64::MAX as u64);
    format!(
        "INSERT INTO `{}`.`counters` (tbl, slot, n) VALUES ('{}', 0, 1), ('{}', 0, {epoch}) \
         ON DUPLICATE KEY UPDATE n = IF(tbl = '{}', VALUES(n), n + 1)",
        schema.replace('`', "``"),
        crate::freshness::state::GLOBAL_ROW,
        crate::freshness::state::EPOCH_ROW,
        crate::freshness::state::EPOCH_ROW,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip_and_only_one_is_eligible() {
        let e = Eligibility::default();
        assert_eq!(e.get(), Reason::Unknown);
        for r in Reason::ALL {
            e.set(r);
            assert_eq!(e.get(), r);
            assert_eq!(r.eligible(), r == Reason::Eligible);
        }
    }
}
