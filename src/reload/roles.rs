//! A change of a group's master (followed by `crate::follow`, or asked for
//! with `POST /v1/master`) as a new [`Runtime`] generation: the same
//! configuration with the roles swapped, published like a reload.
//!
//! The new master's pool and the group's freshness monitor are new (a pool
//! or monitor is taken over only for the same server in the same role): the
//! old master's snapshots are dropped with its monitor, and sessions move
//! between statements (`frontend::refresh`, where a session whose
//! transaction or pinned state was on the old master gets 1158).
//!
//! With no master (several servers writable) the group keeps its last master
//! in the configuration, but its pool is replaced by one that refuses every
//! checkout with 1290 naming the writable servers.

use std::sync::Arc;

use tracing::info;

use crate::config::{self, Config};
use crate::protocol::consts::errcode;
use crate::protocol::packets::ErrPacket;
use crate::runtime::Runtime;

use super::Reloader;

/// What a group's master becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roles {
    /// This candidate (`host:port` as configured) is the master.
    Master(String),
    /// No master: these servers are writable; writes are refused.
    NoMaster(Vec<String>),
}

/// The error writes get while a group has no master.
pub fn no_master_error(group: &str, writable: &[String]) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_OPTION_PREVENTS_STATEMENT,
        "HY000",
        format!(
            "The MariaDB server is running with the --read-only option so it cannot execute this statement \
             (sluice: group `{group}` has no master: {} servers are writable ({}); writes are refused until \
             exactly one is)",
            writable.len(),
            writable.join(", ")
        ),
    )
}

/// `group` with `master` as its master and every other candidate (master
/// and replicas together) as a replica, in the order of `order` (the
/// configuration file's candidates; others after them). `None`: `master` is
/// not a candidate.
pub fn with_master(group: &config::Group, order: &[String], master: &str) -> Option<config::Group> {
    let mut all: Vec<config::Backend> = std::iter::once(group.master.clone())
        .chain(group.replicas.iter().cloned())
        .collect();
    let rank = |b: &config::Backend| order.iter().position(|a| *a == b.addr).unwrap_or(usize::MAX);
    all.sort_by_key(rank);
    let at = all.iter().position(|b| b.addr == master)?;
    let mut new_master = all.remove(at);
    new_master.weight = 1;
    Some(config::Group {
        name: group.name.clone(),
        master: new_master,
        replicas: all,
        topology: group.topology,
    })
}

/// A group's candidates in the configuration file's order.
pub fn candidates(group: &config::Group) -> Vec<String> {
    std::iter::once(group.master.addr.clone())
        .chain(group.replicas.iter().map(|r| r.addr.clone()))
        .collect()
}

/// Publish `roles` for `group` as a new generation; `prepare` runs on the
/// new runtime before sessions can see it (the caller sets the replicas'
/// eligibility for the new master). Serialized with reloads. Returns the
/// new runtime, or `None` when `roles` are already in force.
pub async fn switch(
    reloader: &Reloader,
    group: &str,
    roles: Roles,
    prepare: impl FnOnce(&Runtime),
) -> Result<Option<Arc<Runtime>>, String> {
    let _one_at_a_time = reloader.lock.lock().await;
    let shared = &*reloader.shared;
    let running = shared.runtime();
    let gi = running
        .config
        .groups
        .iter()
        .position(|g| g.name == group)
        .ok_or_else(|| format!("no group `{group}`"))?;
    let current = &running.config.groups[gi];
    let fenced = running.topology.groups[gi].master.fenced();
    let order = reloader.file_order(group).unwrap_or_else(|| candidates(current));
    let mut config: Config = running.config.clone();
    match &roles {
        Roles::Master(addr) => {
            if *addr == current.master.addr && !fenced {
                return Ok(None);
            }
            config.groups[gi] = with_master(current, &order, addr)
                .ok_or_else(|| format!("{addr} is not a server of group `{group}`"))?;
        }
        Roles::NoMaster(_) if fenced => return Ok(None),
        Roles::NoMaster(_) => {}
    }
    let mut next = running.next(config)?;
    if let Roles::NoMaster(writable) = &roles {
        let e = no_master_error(group, writable);
        next.topology.fence_master(gi, &next.config, e)?;
    }
    prepare(&next);
    let next = Arc::new(next);
    next.start(&shared.replica_down_hook());
    shared.publish(next.clone());
    running.retire(&next);
    info!(generation = next.generation, group, roles = ?roles, "topology: new roles published");
    Ok(Some(next))
}

/// A reload of the file: keep the master sluice switched to (and a
/// group's lack of master) where the file did not change that group's
/// master. `file_before`: each group's candidates in the file at the
/// previous load, its master first.
pub(super) fn carry(running: &Runtime, file_before: &[(String, Vec<String>)], mut new: Config) -> Config {
    for g in new.groups.iter_mut() {
        let Some(old) = running.config.groups.iter().find(|o| o.name == g.name) else {
            continue;
        };
        let unchanged = file_before
            .iter()
            .any(|(name, c)| *name == g.name && c.first() == Some(&g.master.addr));
        if !unchanged || old.master.addr == g.master.addr {
            continue;
        }
        let order = candidates(g);
        if let Some(moved) = with_master(g, &order, &old.master.addr) {
            *g = moved;
        }
    }
    new
}

/// After [`carry`]: a group that had no master still has none in `next`.
pub(super) fn refence(running: &Runtime, next: &mut Runtime) -> Result<(), String> {
    for (gi, g) in running.topology.groups.iter().enumerate() {
        let Some(e) = g.master.refusal() else {
            continue;
        };
        let same = next.config.groups.get(gi).is_some_and(|n| {
            n.name == g.name && Some(&n.master.addr) == running.config.groups.get(gi).map(|o| &o.master.addr)
        });
        if same {
            next.topology.fence_master(gi, &next.config, e)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(addr: &str, weight: u32) -> config::Backend {
        config::Backend {
            addr: addr.into(),
            user: "u".into(),
            password: "p".into(),
            weight,
            tls: None,
        }
    }

    #[test]
    fn a_replica_becomes_master_and_the_others_keep_the_file_order() {
        let g = config::Group {
            name: "main".into(),
            master: backend("m:1", 1),
            replicas: vec![backend("r:1", 3), backend("r:2", 5)],
            topology: config::follow::TopologyMode::Follow,
        };
        let order = candidates(&g);
        let moved = with_master(&g, &order, "r:1").expect("a candidate");
        assert_eq!(moved.master.addr, "r:1");
        let replicas: Vec<_> = moved
            .replicas
            .iter()
            .map(|r| (r.addr.as_str(), r.weight))
            .collect();
        assert_eq!(replicas, vec![("m:1", 1), ("r:2", 5)]);
        // Back again: the same order as the file.
        let back = with_master(&moved, &order, "m:1").expect("a candidate");
        let addrs: Vec<_> = back.replicas.iter().map(|r| r.addr.as_str()).collect();
        assert_eq!(addrs, vec!["r:1", "r:2"]);
        assert!(with_master(&g, &order, "x:9").is_none());
    }

    #[test]
    fn the_no_master_error_names_every_writable_server() {
        let e = no_master_error("main", &["a:1".into(), "b:2".into()]);
        assert_eq!(e.code, 1290);
        assert!(e.message.contains("a:1, b:2"), "{}", e.message);
    }
}
