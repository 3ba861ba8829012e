//! What a configuration reload replaces, as one immutable snapshot: the
//! configuration and the live objects built from it (backend pools,
//! freshness monitors, shard rules).
//!
//! `Shared` publishes the newest snapshot behind an `ArcSwap`; each session
//! keeps the one it started with and moves to a newer one between
//! statements (`frontend::refresh`). Indices into a snapshot (`Conn::Replica(i)`
//! is replica `i` of group 0) only ever refer to the snapshot the session
//! holds. When a reload replaces a snapshot, the pools and monitors the new
//! one does not take over are closed and stopped at once (`retire`); the
//! snapshot itself is dropped when no session uses it any more.

use std::sync::Arc;

use crate::backend::{BackendPool, Topology};
use crate::config::{self, Config};
use crate::freshness::monitor::GroupMonitor;
use crate::shard::ShardRules;

pub struct Runtime {
    /// 1 for the configuration sluice started with, +1 per successful reload.
    pub generation: u64,
    pub config: Config,
    pub topology: Topology,
    /// Freshness state per backend group (same order as `topology.groups`).
    pub monitors: Vec<Arc<GroupMonitor>>,
    /// Sharded tables (empty: sharding off).
    pub shard_rules: ShardRules,
}

impl Runtime {
    /// The snapshot of the configuration sluice starts with.
    /// Fails when a backend's TLS files cannot be used.
    pub fn first(config: Config) -> Result<Runtime, String> {
        let monitors = config
            .groups
            .iter()
            .map(|g| GroupMonitor::new(g, &config))
            .collect();
        Ok(Runtime {
            generation: 1,
            topology: Topology::reusing(&config, None)?,
            monitors,
            shard_rules: config.sharding.rules.clone(),
            config,
        })
    }

    /// The snapshot after this one for `config`. Pools of unchanged backends
    /// are taken over (see `Topology::reusing`); so is the monitor of a group
    /// whose servers and freshness settings are unchanged (its probes'
    /// state is kept; new weights are applied to it in place). Call
    /// [`Runtime::start`] before publishing it.
    /// Fails when a backend's TLS files cannot be used.
    pub fn next(&self, config: Config) -> Result<Runtime, String> {
        let topology = Topology::reusing(&config, Some((&self.config, &self.topology)))?;
        let monitors: Vec<Arc<GroupMonitor>> = config
            .groups
            .iter()
            .map(|g| match self.monitor_for(g, &config) {
                Some(m) => {
                    let weights: Vec<u32> = g.replicas.iter().map(|r| r.weight).collect();
                    m.set_weights(&weights);
                    m
                }
                None => {
                    let m = GroupMonitor::new(g, &config);
                    if let Some(old) = self.monitor_of_master(g, &config.freshness) {
                        m.inherit_master_state(&old);
                    }
                    m
                }
            })
            .collect();
        carry_drains(&topology, &monitors);
        let next = Runtime {
            generation: self.generation + 1,
            topology,
            monitors,
            shard_rules: config.sharding.rules.clone(),
            config,
        };
        next.inherit_eligibility(self);
        Ok(next)
    }

    /// New monitors start with their replicas not eligible until a topology
    /// probe (`crate::follow`); a replica `previous` knew keeps its reason
    /// meanwhile (a reload does not take every replica out of rotation).
    fn inherit_eligibility(&self, previous: &Runtime) {
        let new = self
            .config
            .groups
            .iter()
            .zip(&self.monitors)
            .filter(|(_, m)| !previous.monitors.iter().any(|o| Arc::ptr_eq(o, m)));
        for (gc, m) in new {
            for (rc, r) in gc.replicas.iter().zip(&m.replicas) {
                let old = previous
                    .config
                    .groups
                    .iter()
                    .zip(&previous.monitors)
                    .find_map(|(oc, om)| {
                        let at = oc.replicas.iter().position(|o| o.addr == rc.addr)?;
                        om.replicas.get(at).map(|o| o.eligibility.get())
                    });
                if let Some(reason) = old {
                    r.eligibility.set(reason);
                }
            }
        }
    }

    /// The running monitor of a group with the same name, servers (in the
    /// same order) and freshness settings as `group`, if any.
    fn monitor_for(&self, group: &config::Group, config: &Config) -> Option<Arc<GroupMonitor>> {
        let (old, monitor) = self.same_master(group)?;
        // Its probe connections were made with the backend TLS default.
        let same = self.config.freshness == config.freshness
            && self.config.backend.tls == config.backend.tls
            && old.replicas.len() == group.replicas.len()
            && old
                .replicas
                .iter()
                .zip(&group.replicas)
                .all(|(a, b)| a.same_server(b));
        same.then_some(monitor)
    }

    /// The running monitor of a group with the same name, master and
    /// counter schema as `group` (its replicas may differ).
    fn monitor_of_master(
        &self,
        group: &config::Group,
        freshness: &config::Freshness,
    ) -> Option<Arc<GroupMonitor>> {
        let (_, monitor) = self.same_master(group)?;
        (self.config.freshness.schema == freshness.schema).then_some(monitor)
    }

    /// The running group named as `group`, with the same master, and its monitor.
    fn same_master(&self, group: &config::Group) -> Option<(&config::Group, Arc<GroupMonitor>)> {
        let at = self.config.groups.iter().position(|g| g.name == group.name)?;
        let old = &self.config.groups[at];
        let monitor = self.monitors.get(at)?.clone();
        old.master.same_server(&group.master).then_some((old, monitor))
    }

    /// After `next` replaced this snapshot: close the pools and stop the
    /// monitors that `next` does not use. Sessions still on this snapshot
    /// finish what they hold (see `BackendPool::close`, `GroupMonitor::stop`).
    pub fn retire(&self, next: &Runtime) {
        let kept_pool = |p: &Arc<BackendPool>| {
            next.topology
                .groups
                .iter()
                .any(|g| Arc::ptr_eq(&g.master, p) || g.replicas.iter().any(|r| Arc::ptr_eq(&r.pool, p)))
        };
        for g in &self.topology.groups {
            let pools = std::iter::once(&g.master).chain(g.replicas.iter().map(|r| &r.pool));
            for p in pools.filter(|p| !kept_pool(p)) {
                p.close();
            }
        }
        for m in &self.monitors {
            if !next.monitors.iter().any(|n| Arc::ptr_eq(n, m)) {
                m.stop();
            }
        }
    }

    /// Start the probe loops of monitors that are not running yet;
    /// `on_replica_down` wakes the sessions (see `GroupMonitor::spawn`).
    pub fn start(&self, on_replica_down: &crate::freshness::monitor::DownHook) {
        for m in &self.monitors {
            m.spawn(on_replica_down);
        }
    }
}

/// hook(console): a drained replica whose pool a reload kept stays out of
/// rotation under the new monitors (`DRAIN BACKEND` lives on the pool).
fn carry_drains(topology: &Topology, monitors: &[Arc<GroupMonitor>]) {
    for (g, m) in topology.groups.iter().zip(monitors) {
        for (r, rm) in g.replicas.iter().zip(&m.replicas) {
            rm.flags.set_drained(r.pool.is_drained());
        }
    }
}
