//! The pure part of following: who the master is, whether a replica may
//! serve reads, and how many writes a promotion lost. No I/O.

use std::collections::HashMap;

use crate::freshness::monitor::eligibility::Reason;

use super::probe::ServerState;

/// What the probes say a group's master should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The current master stays (valid, or nobody else is writable: writes
    /// then fail as they do against an unreachable master, 1429).
    Keep,
    /// The single writable, reachable, not replicating candidate.
    Switch(String),
    /// Two or more candidates are writable: no master.
    NoMaster(Vec<String>),
}

/// `current`: the master now; `states`: every candidate's last probe;
/// `chosen`: the master an operator named (`POST /v1/master`), which stays
/// while it is writable even when others are too (the operator knows which
/// of them is the master; sluice alone cannot tell).
pub fn decide(current: &str, states: &[(String, ServerState)], chosen: Option<&str>) -> Decision {
    let writable: Vec<String> = states
        .iter()
        .filter(|(_, s)| s.writable())
        .map(|(a, _)| a.clone())
        .collect();
    if let Some(c) = chosen.filter(|c| writable.iter().any(|w| w == c)) {
        return if c == current {
            Decision::Keep
        } else {
            Decision::Switch(c.to_owned())
        };
    }
    match writable.as_slice() {
        [] => Decision::Keep,
        [one] if one == current => Decision::Keep,
        [one] => Decision::Switch(one.clone()),
        _ => Decision::NoMaster(writable),
    }
}

/// Hysteresis, for a master that did not answer the round (the caller
/// asks only then): the switch is made only when two consecutive probe
/// rounds name the same candidate. `pending`: the candidate the previous
/// round named (kept between rounds). Only `Switch` waits: `Keep` clears
/// it, and `NoMaster` (writes refused, the safe side) is taken at once.
/// What it prevents: a master that misses one round (a slow answer, a
/// network blip) while another server looks like the only writable one (a
/// replica whose replication a DBA stopped on a server without
/// `read_only`), which would send writes to that server. What it costs: one
/// `topology.interval` more of 1429 for writes after a crash (measured in
/// docs/operations.md, "Limits"). A master that answers demoted
/// (`read_only=1`, replicating) is left at once, and a switch named by hand
/// (`MASTER`, `POST /v1/master`) does not wait.
pub fn confirm(pending: &mut Option<String>, d: Decision) -> Decision {
    match d {
        Decision::Switch(addr) if pending.as_deref() == Some(addr.as_str()) => {
            *pending = None;
            Decision::Switch(addr)
        }
        Decision::Switch(addr) => {
            *pending = Some(addr);
            Decision::Keep
        }
        other => {
            *pending = None;
            other
        }
    }
}

/// Whether replica `state` may serve reads while the master is `master_addr`
/// with `@@server_id` `master_id` (`None`: not known yet, the master was
/// never reached since start). A replica serves reads only when its source
/// is proved to be the master: by `Master_Server_Id`, or, while the
/// master's id is unknown, by the address it replicates from
/// (`Master_Host:Master_Port` spelled as the group's `master.addr`).
/// Unproved (replication status unreadable, or another spelling of the
/// address): out of rotation, `replication_unverified`.
pub fn replica_reason(state: &ServerState, master_addr: &str, master_id: Option<u32>) -> Reason {
    if !state.reachable {
        return Reason::Unreachable;
    }
    let Ok(slaves) = &state.slaves else {
        return Reason::Unverified;
    };
    if slaves.is_empty() {
        return Reason::NotReplicating;
    }
    let row = match master_id {
        Some(id) => match slaves.iter().find(|r| r.master_server_id == id) {
            Some(row) => row,
            None => return Reason::OtherMaster,
        },
        None => match slaves.iter().find(|r| r.source_is(master_addr)) {
            Some(row) => row,
            None => return Reason::Unverified,
        },
    };
    if !row.io_running() {
        Reason::IoThreadStopped
    } else if !row.sql_running() {
        Reason::SqlThreadStopped
    } else {
        Reason::Eligible
    }
}

/// Writes the old master had (`old_binlog`: its last seen
/// `gtid_binlog_pos`) that the new master never received: per GTID domain,
/// how far the old master's sequence is ahead of what the new master had
/// applied from replication (`gtid_slave_pos`; its own binlog position
/// where it has none for the domain), summed.
pub fn lost_transactions(old_binlog: &HashMap<u32, u64>, new: &ServerState) -> u64 {
    let slave = ServerState::gtid(&new.gtid_slave_pos).unwrap_or_default();
    let current = ServerState::gtid(&new.gtid_current_pos).unwrap_or_default();
    old_binlog
        .iter()
        .map(|(d, old)| {
            let have = slave.get(d).or_else(|| current.get(d)).copied().unwrap_or(0);
            old.saturating_sub(have)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::super::probe::SlaveRow;
    use super::*;

    fn server(read_only: bool, slaves: Vec<SlaveRow>) -> ServerState {
        ServerState {
            reachable: true,
            read_only: Some(read_only),
            server_id: Some(1),
            slaves: Ok(slaves),
            ..Default::default()
        }
    }

    fn row(io: &str, sql: &str, master: u32) -> SlaveRow {
        SlaveRow {
            connection_name: String::new(),
            master_host: "127.0.0.1".into(),
            master_port: 1,
            io_running: io.into(),
            sql_running: sql.into(),
            master_server_id: master,
            last_io_error: String::new(),
            last_sql_error: String::new(),
        }
    }

    fn states(list: &[(&str, ServerState)]) -> Vec<(String, ServerState)> {
        list.iter().map(|(a, s)| (a.to_string(), s.clone())).collect()
    }

    #[test]
    fn the_master_is_sticky_and_replaced_only_by_a_single_writable_server() {
        let m = server(false, vec![]);
        let r = server(true, vec![row("Yes", "Yes", 1)]);
        let down = ServerState {
            reachable: false,
            ..m.clone()
        };
        assert_eq!(
            decide("m", &states(&[("m", m.clone()), ("r", r.clone())]), None),
            Decision::Keep
        );
        // Master gone, nobody promoted: keep (writes fail with 1429).
        assert_eq!(
            decide("m", &states(&[("m", down.clone()), ("r", r.clone())]), None),
            Decision::Keep
        );
        // Promoted: STOP SLAVE; RESET SLAVE ALL; read_only=0.
        let promoted = server(false, vec![]);
        assert_eq!(
            decide(
                "m",
                &states(&[("m", down.clone()), ("r", promoted.clone())]),
                None
            ),
            Decision::Switch("r".into())
        );
        // Writable but still replicating is no master.
        let replicating = server(false, vec![row("Yes", "Yes", 1)]);
        assert_eq!(
            decide("m", &states(&[("m", down), ("r", replicating)]), None),
            Decision::Keep
        );
        // Two writable: no master, both named.
        let both = states(&[("m", m), ("r", promoted)]);
        assert_eq!(
            decide("m", &both, None),
            Decision::NoMaster(vec!["m".into(), "r".into()])
        );
        // An operator named one of them: it is the master while writable.
        assert_eq!(decide("m", &both, Some("r")), Decision::Switch("r".into()));
        assert_eq!(decide("r", &both, Some("r")), Decision::Keep);
        let gone = states(&[("m", server(false, vec![])), ("r", server(true, vec![]))]);
        assert_eq!(decide("r", &gone, Some("r")), Decision::Switch("m".into()));
    }

    #[test]
    fn a_switch_needs_two_rounds_naming_the_same_candidate() {
        let mut pending = None;
        let sw = |a: &str| Decision::Switch(a.into());
        assert_eq!(confirm(&mut pending, sw("r1")), Decision::Keep);
        assert_eq!(confirm(&mut pending, sw("r1")), sw("r1"));
        assert_eq!(pending, None);
        // A round that disagrees starts again.
        assert_eq!(confirm(&mut pending, sw("r1")), Decision::Keep);
        assert_eq!(confirm(&mut pending, sw("r2")), Decision::Keep);
        assert_eq!(confirm(&mut pending, sw("r2")), sw("r2"));
        // The master came back in between: no switch.
        assert_eq!(confirm(&mut pending, sw("r1")), Decision::Keep);
        assert_eq!(confirm(&mut pending, Decision::Keep), Decision::Keep);
        assert_eq!(confirm(&mut pending, sw("r1")), Decision::Keep);
        // No master (writes refused) is taken at once.
        let none = Decision::NoMaster(vec!["m".into(), "r1".into()]);
        assert_eq!(confirm(&mut pending, none.clone()), none);
        assert_eq!(pending, None);
    }

    #[test]
    fn a_replica_is_eligible_only_with_both_threads_on_the_current_master() {
        let m = "127.0.0.1:1";
        let ok = server(true, vec![row("Yes", "Yes", 7)]);
        assert_eq!(replica_reason(&ok, m, Some(7)), Reason::Eligible);
        // A dead master leaves the IO thread retrying: still eligible.
        assert_eq!(
            replica_reason(&server(true, vec![row("Connecting", "Yes", 7)]), m, Some(7)),
            Reason::Eligible
        );
        assert_eq!(
            replica_reason(&server(true, vec![row("No", "Yes", 7)]), m, Some(7)),
            Reason::IoThreadStopped
        );
        assert_eq!(
            replica_reason(&server(true, vec![row("Yes", "No", 7)]), m, Some(7)),
            Reason::SqlThreadStopped
        );
        assert_eq!(replica_reason(&ok, m, Some(8)), Reason::OtherMaster);
        // The master never reached: its source is proved by address, or not at all.
        assert_eq!(replica_reason(&ok, m, None), Reason::Eligible);
        assert_eq!(replica_reason(&ok, "127.0.0.1:2", None), Reason::Unverified);
        assert_eq!(replica_reason(&ok, "localhost:1", None), Reason::Unverified);
        assert_eq!(
            replica_reason(&server(true, vec![row("Yes", "No", 7)]), m, None),
            Reason::SqlThreadStopped
        );
        assert_eq!(
            replica_reason(&server(true, vec![]), m, Some(7)),
            Reason::NotReplicating
        );
        // Replication status unreadable (no SLAVE MONITOR): unproved, out.
        let mut no_grant = ok.clone();
        no_grant.slaves = Err("denied".into());
        assert_eq!(replica_reason(&no_grant, m, Some(7)), Reason::Unverified);
        assert!(!Reason::Unverified.eligible());
        let mut gone = ok;
        gone.reachable = false;
        assert_eq!(replica_reason(&gone, m, Some(7)), Reason::Unreachable);
    }

    #[test]
    fn lost_writes_are_counted_per_domain_against_what_the_new_master_applied() {
        // The issue's case: the old master wrote 0-2-32 and 0-2-33 that no
        // replica received; the new master had applied up to 0-2-31 and has
        // since written 0-3-32 itself.
        let old: HashMap<u32, u64> = [(0, 33)].into_iter().collect();
        let new = ServerState {
            gtid_slave_pos: Some("0-2-31".into()),
            gtid_current_pos: Some("0-3-32".into()),
            ..Default::default()
        };
        assert_eq!(lost_transactions(&old, &new), 2);
        let caught_up = ServerState {
            gtid_slave_pos: Some("0-2-33".into()),
            ..Default::default()
        };
        assert_eq!(lost_transactions(&old, &caught_up), 0);
        // A domain only the old master had.
        let old: HashMap<u32, u64> = [(0, 5), (1, 3)].into_iter().collect();
        let new = ServerState {
            gtid_slave_pos: Some("0-1-5".into()),
            ..Default::default()
        };
        assert_eq!(lost_transactions(&old, &new), 3);
    }
}
