//! Following the cluster: every server's role signals and replication
//! status, probed every `topology.interval`, decide
//!
//! - which replicas may serve reads (in every mode): IO and SQL threads
//!   running, replicating from the current master (`Master_Server_Id` is
//!   its `@@server_id`); see `freshness::monitor::eligibility`;
//! - in a `topology: follow` group, who the master is: the current one stays
//!   while it is the only writable server; it is replaced by the single
//!   candidate that is reachable, `read_only=0` and not replicating; with
//!   two or more such servers there is no master and writes get 1290 naming
//!   them. sluice never promotes anything.
//!
//! A change of master is a new runtime generation (`reload::roles`), after
//! a new counter generation (`#epoch`) was written on the new master, and
//! after comparing the old master's last seen GTID position with what the
//! new one applied (writes the promotion lost are logged and counted).
//! `POST /v1/master` (`http`) asks for a switch by hand, in any mode.

pub mod decide;
pub mod http;
mod metrics;
pub mod probe;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwap;
use mysql_async::prelude::Queryable;
use tracing::{error, info, warn};

use crate::config::{self, follow::TopologyMode, FreshnessMode};
use crate::freshness::monitor::eligibility::{new_generation_sql, Reason};
use crate::reload::roles::{self, Roles};
use crate::reload::Reloader;
use crate::runtime::Runtime;

use decide::{confirm, decide, lost_transactions, replica_reason, Decision};
use probe::ServerState;

/// One server as the console's `SHOW BACKENDS` and `GET /v1/topology` show it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerView {
    pub group: String,
    pub addr: String,
    /// `master`, `replica`, or `writable` (read_only=0 but not the master:
    /// a promotion sluice has not followed, or a split brain).
    pub role: &'static str,
    pub reachable: bool,
    pub read_only: Option<bool>,
    pub server_id: Option<u32>,
    /// May serve new reads (replicas; the master: reachable and the master).
    pub in_rotation: bool,
    /// Why (see `eligibility::Reason::as_str`; `master`, `no_master` for the
    /// master's row).
    pub reason: String,
    pub gtid_binlog_pos: Option<String>,
    pub gtid_current_pos: Option<String>,
    /// `SHOW ALL SLAVES STATUS`, or why it could not be read.
    pub replication: Result<Vec<probe::SlaveRow>, String>,
    pub error: Option<String>,
}

/// One group as `SHOW TOPOLOGY` and `GET /v1/topology` show it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GroupView {
    pub group: String,
    /// `static` or `follow`.
    pub topology: &'static str,
    /// `None`: no master (several servers writable).
    pub master: Option<String>,
    pub writable: Vec<String>,
    pub master_changes: u64,
    pub lost_transactions: u64,
    pub servers: Vec<ServerView>,
}

/// What one group's prober remembers between rounds.
#[derive(Default)]
struct Memory {
    states: HashMap<String, ServerState>,
    /// Highest `gtid_binlog_pos` seen per server, by domain.
    binlog: HashMap<String, HashMap<u32, u64>>,
    server_ids: HashMap<String, u32>,
    changes: u64,
    lost: u64,
    warned: HashSet<String>,
    /// The master named by `POST /v1/master`, kept while it is writable.
    chosen: Option<String>,
    /// The candidate the last round would have switched to (`confirm`).
    pending: Option<String>,
}

pub struct Follower {
    reloader: Arc<Reloader>,
    views: ArcSwap<Vec<GroupView>>,
    memory: tokio::sync::Mutex<HashMap<String, Memory>>,
}

impl Follower {
    pub fn new(reloader: Arc<Reloader>) -> Arc<Follower> {
        Arc::new(Follower {
            reloader,
            views: ArcSwap::from_pointee(Vec::new()),
            memory: Default::default(),
        })
    }

    /// One round now (start-up checks; in `follow`, the master is
    /// discovered before clients are served), then one every
    /// `topology.interval`. Fails when a `follow` group's probe account
    /// cannot read replication status.
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        self.round(true).await?;
        metrics::register(self);
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let Some(this) = me.upgrade() else { return };
                let period = this.reloader.shared().runtime().config.topology.interval;
                drop(this);
                tokio::time::sleep(period).await;
                let Some(this) = me.upgrade() else { return };
                if let Err(e) = this.round(false).await {
                    warn!(error = %e, "topology probe round failed");
                }
            }
        });
        Ok(())
    }

    /// Every group as last probed (`GET /v1/topology`, `SHOW TOPOLOGY`).
    pub fn topology(&self) -> Vec<GroupView> {
        self.views.load().as_ref().clone()
    }

    /// Make `addr` the master of `group` (the first group when `None`),
    /// in any topology mode, once a probe made now reads `read_only=0`
    /// there. `Ok`: a sentence saying what was done.
    pub async fn set_master(&self, group: Option<&str>, addr: &str) -> Result<String, String> {
        let mut memory = self.memory.lock().await;
        let rt = self.reloader.shared().runtime();
        let g = match group {
            Some(name) => rt.config.groups.iter().find(|g| g.name == name),
            None => rt.config.groups.first(),
        }
        .ok_or_else(|| format!("no group `{}`", group.unwrap_or_default()))?;
        if !roles::candidates(g).iter().any(|a| a == addr) {
            return Err(format!("{addr} is not a server of group `{}`", g.name));
        }
        let name = g.name.clone();
        let mem = memory.entry(name.clone()).or_default();
        self.probe_group(&rt, g, mem).await;
        let state = mem.states.get(addr).cloned().unwrap_or_default();
        if !state.reachable {
            return Err(format!(
                "{addr} cannot be reached: {}",
                state.error.as_deref().unwrap_or("no answer")
            ));
        }
        if state.read_only != Some(false) {
            return Err(format!(
                "{addr} has read_only=1: promote it first (STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only=0)"
            ));
        }
        let done = self.change_master(&rt, &name, mem, addr).await?;
        mem.chosen = Some(addr.to_owned());
        drop(memory);
        self.publish_views().await;
        Ok(done)
    }

    async fn round(&self, startup: bool) -> Result<(), String> {
        let mut memory = self.memory.lock().await;
        let rt = self.reloader.shared().runtime();
        let names: Vec<String> = rt.config.groups.iter().map(|g| g.name.clone()).collect();
        memory.retain(|k, _| names.contains(k));
        for g in &rt.config.groups {
            let mem = memory.entry(g.name.clone()).or_default();
            self.probe_group(&rt, g, mem).await;
            check_servers(g, mem, startup)?;
            if g.topology == TopologyMode::Follow {
                self.follow(&rt, g, mem, startup).await;
            }
        }
        // Eligibility against the (possibly new) running master.
        let now = self.reloader.shared().runtime();
        for (gi, g) in now.config.groups.iter().enumerate() {
            if let Some(mem) = memory.get(&g.name) {
                apply_eligibility(&now, gi, mem);
            }
        }
        drop(memory);
        self.publish_views().await;
        Ok(())
    }

    /// Probe every candidate of `g` at once, over the probe connections of
    /// the group's running freshness monitor (`GroupMonitor::probe_pool`):
    /// one set of probe connections per server. The two probes keep their
    /// own cadence: counters every `freshness.probe_interval` (50 ms by
    /// default, on the routing path), role and replication status
    /// (`SHOW ALL SLAVES STATUS`, heavier) every `topology.interval`.
    async fn probe_group(&self, rt: &Runtime, g: &config::Group, mem: &mut Memory) {
        let cands: Vec<&config::Backend> = std::iter::once(&g.master).chain(&g.replicas).collect();
        let listed = |a: &String| cands.iter().any(|b| b.addr == *a);
        mem.states.retain(|a, _| listed(a));
        mem.binlog.retain(|a, _| listed(a));
        mem.server_ids.retain(|a, _| listed(a));
        let monitor = rt
            .config
            .groups
            .iter()
            .position(|x| x.name == g.name)
            .and_then(|gi| rt.monitors.get(gi));
        let timeout = rt.config.freshness.probe_timeout * 2;
        let mut set = tokio::task::JoinSet::new();
        for b in &cands {
            let (Some(pool), addr) = (monitor.and_then(|m| m.probe_pool(&b.addr)), b.addr.clone()) else {
                continue;
            };
            let previous = mem.states.get(&b.addr).cloned();
            set.spawn(async move {
                let s = probe::probe(&pool, &addr, timeout, previous.as_ref()).await;
                (addr, s)
            });
        }
        while let Some(done) = set.join_next().await {
            let Ok((addr, s)) = done else { continue };
            if s.reachable {
                if let Some(id) = s.server_id {
                    mem.server_ids.insert(addr.clone(), id);
                }
                if let Some(pos) = ServerState::gtid(&s.gtid_binlog_pos) {
                    let seen = mem.binlog.entry(addr.clone()).or_default();
                    for (d, seq) in pos {
                        let m = seen.entry(d).or_insert(0);
                        *m = (*m).max(seq);
                    }
                }
            }
            mem.states.insert(addr, s);
        }
    }

    /// `topology: follow`: act on what the probes say.
    /// `startup`: the first round, before clients are served, switches at
    /// once (nothing was routed yet). Later, a switch away from a master
    /// that did not answer needs a second round to agree (`decide::confirm`).
    async fn follow(&self, rt: &Runtime, g: &config::Group, mem: &mut Memory, startup: bool) {
        let Some(gi) = rt.config.groups.iter().position(|x| x.name == g.name) else {
            return;
        };
        let fenced = rt.topology.groups[gi].master.fenced();
        let states: Vec<(String, ServerState)> = roles::candidates(g)
            .into_iter()
            .filter_map(|a| mem.states.get(&a).cloned().map(|s| (a, s)))
            .collect();
        if mem
            .chosen
            .as_ref()
            .is_some_and(|c| !states.iter().any(|(a, s)| a == c && s.writable()))
        {
            mem.chosen = None;
        }
        let mut decision = decide(&g.master.addr, &states, mem.chosen.as_deref());
        // Confirmed over a second round only when the current master did not
        // answer: one that answers `read_only=1` or replicating was demoted on
        // purpose, and every round of waiting there is a round in which
        // writes of accounts with READ_ONLY ADMIN (the group account's ALL
        // PRIVILEGES) still land on it and are lost with it.
        let current_answered = states.iter().any(|(a, s)| *a == g.master.addr && s.reachable);
        if startup || current_answered {
            mem.pending = None;
        } else {
            decision = confirm(&mut mem.pending, decision);
        }
        match decision {
            Decision::Keep if fenced => {
                info!(group = %g.name, master = %g.master.addr, "topology: no longer several writable servers: writes resume");
                if let Err(e) = roles::switch(
                    &self.reloader,
                    &g.name,
                    Roles::Master(g.master.addr.clone()),
                    |_| {},
                )
                .await
                {
                    error!(group = %g.name, error = %e, "topology: cannot lift the refusal of writes");
                }
            }
            Decision::Keep => {}
            Decision::Switch(addr) => {
                if let Err(e) = self.change_master(rt, &g.name, mem, &addr).await {
                    error!(group = %g.name, error = %e, "topology: cannot follow the new master");
                }
            }
            Decision::NoMaster(writable) => {
                let r =
                    roles::switch(&self.reloader, &g.name, Roles::NoMaster(writable.clone()), |_| {}).await;
                match r {
                    Ok(Some(_)) => error!(
                        group = %g.name,
                        writable = %writable.join(", "),
                        "topology: {} servers are writable: no master, writes are refused with 1290 until exactly one is",
                        writable.len()
                    ),
                    Ok(None) => {}
                    Err(e) => error!(group = %g.name, error = %e, "topology: cannot refuse writes"),
                }
            }
        }
    }

    /// Switch `group`'s master to `new`: count the writes lost, start a new
    /// counter generation there, publish the new roles.
    async fn change_master(
        &self,
        rt: &Runtime,
        group: &str,
        mem: &mut Memory,
        new: &str,
    ) -> Result<String, String> {
        let started = Instant::now();
        let gi = rt
            .config
            .groups
            .iter()
            .position(|g| g.name == group)
            .ok_or_else(|| format!("no group `{group}`"))?;
        let old = rt.config.groups[gi].master.addr.clone();
        let new_state = mem.states.get(new).cloned().unwrap_or_default();
        // What the old master had acknowledged: its last probe, and the last
        // master snapshot the freshness monitor took (after each write
        // through sluice in causal mode).
        let mut old_pos = mem.binlog.get(&old).cloned().unwrap_or_default();
        if let Some(g) = &rt.monitors[gi].target().gtid {
            for (d, seq) in g {
                let m = old_pos.entry(*d).or_insert(0);
                *m = (*m).max(*seq);
            }
        }
        let lost = if old == new {
            0
        } else {
            lost_transactions(&old_pos, &new_state)
        };
        // A new generation on the new master before anyone routes with it:
        // only replicas that applied it from there compare as fresh (not
        // the old master, whatever its counters say).
        if rt.config.freshness.mode != FreshnessMode::Off {
            if let Some(pool) = rt.monitors[gi].probe_pool(new) {
                let sql = new_generation_sql(&rt.config.freshness.schema);
                let fut = async {
                    let mut c = pool.get_conn().await.map_err(|e| e.to_string())?;
                    c.query_drop(sql).await.map_err(|e| e.to_string())
                };
                match tokio::time::timeout(rt.config.freshness.probe_timeout * 4, fut).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        warn!(master = %new, error = %e, "topology: cannot write a new #epoch on the new master")
                    }
                    Err(_) => {
                        warn!(master = %new, "topology: writing a new #epoch on the new master timed out")
                    }
                }
            }
        }
        let new_id = mem.server_ids.get(new).copied();
        let states = mem.states.clone();
        let published = roles::switch(&self.reloader, group, Roles::Master(new.to_owned()), |next| {
            set_reasons(next, gi, &states, new, new_id);
        })
        .await?;
        if published.is_none() {
            return Ok(format!("{new} is already the master of group `{group}`"));
        }
        mem.changes += 1;
        mem.lost += lost;
        info!(
            group,
            old_master = %old,
            new_master = %new,
            took_ms = started.elapsed().as_millis() as u64,
            "topology: master changed; sessions move at their next statement"
        );
        if lost > 0 {
            error!(
                group,
                old_master = %old,
                new_master = %new,
                lost_transactions = lost,
                "topology: the promotion lost {lost} transaction(s) that {old} had acknowledged \
                 (GTID positions: old master {:?}, new master applied {})",
                old_pos,
                new_state.gtid_slave_pos.as_deref().unwrap_or("?")
            );
        }
        Ok(format!(
            "group `{group}`: master {old} -> {new}{}",
            if lost > 0 {
                format!(" ({lost} transaction(s) of {old} lost)")
            } else {
                String::new()
            }
        ))
    }

    async fn publish_views(&self) {
        let memory = self.memory.lock().await;
        let rt = self.reloader.shared().runtime();
        let views = rt
            .config
            .groups
            .iter()
            .enumerate()
            .filter_map(|(gi, g)| memory.get(&g.name).map(|m| group_view(&rt, gi, m)))
            .collect();
        self.views.store(Arc::new(views));
    }
}

/// Start-up: refuse `follow` without the grant; warn about settings that
/// make a promotion lose or reorder writes. Later: warn once per server.
fn check_servers(g: &config::Group, mem: &mut Memory, startup: bool) -> Result<(), String> {
    for addr in roles::candidates(g) {
        let Some(s) = mem.states.get(&addr) else { continue };
        if !s.reachable {
            continue;
        }
        if let Err(why) = &s.slaves {
            if g.topology == TopologyMode::Follow && startup {
                return Err(format!("group `{}` has `topology: follow`, but {why}", g.name));
            }
            if mem.warned.insert(format!("grant {addr}")) {
                warn!(
                    group = %g.name,
                    "{why}; a replica there cannot be proved to replicate from the master and \
                     serves no read (replication_unverified)"
                );
            }
        }
        if g.topology == TopologyMode::Follow {
            for (var, on) in [
                ("gtid_strict_mode", s.gtid_strict_mode),
                ("log_slave_updates", s.log_slave_updates),
            ] {
                if on == Some(false) && mem.warned.insert(format!("{var} {addr}")) {
                    warn!(
                        group = %g.name,
                        server = %addr,
                        "{var} is off on {addr}: a promotion may lose or reorder writes there \
                         (turn it on for `topology: follow`)"
                    );
                }
            }
        }
    }
    Ok(())
}

/// The `@@server_id` replicas must replicate from in group `gi`: its
/// master's (the last one when it has none).
fn master_id(rt: &Runtime, gi: usize, mem: &Memory) -> Option<u32> {
    let g = rt.config.groups.get(gi)?;
    mem.server_ids.get(&g.master.addr).copied()
}

fn apply_eligibility(rt: &Runtime, gi: usize, mem: &Memory) {
    let master = &rt.config.groups[gi].master.addr;
    set_reasons(rt, gi, &mem.states, master, master_id(rt, gi, mem));
}

fn set_reasons(
    rt: &Runtime,
    gi: usize,
    states: &HashMap<String, ServerState>,
    master_addr: &str,
    master: Option<u32>,
) {
    let (Some(g), Some(m)) = (rt.topology.groups.get(gi), rt.monitors.get(gi)) else {
        return;
    };
    for (r, rm) in g.replicas.iter().zip(&m.replicas) {
        let reason = match states.get(r.pool.addr()) {
            Some(s) => replica_reason(s, master_addr, master),
            None => Reason::Unknown,
        };
        let before = rm.eligibility.set(reason);
        if before != reason && before != Reason::Unknown {
            if reason.eligible() {
                info!(replica = %rm.label, "replica eligible again: replicating from the master");
            } else {
                warn!(replica = %rm.label, reason = reason.as_str(), "replica out of rotation");
            }
        }
    }
}

fn group_view(rt: &Runtime, gi: usize, mem: &Memory) -> GroupView {
    let gc = &rt.config.groups[gi];
    let g = &rt.topology.groups[gi];
    let monitor = &rt.monitors[gi];
    let fenced = g.master.fenced();
    let target_epoch = monitor.target().epoch;
    let counts = monitor.mode != FreshnessMode::Off && !monitor.replicas.is_empty();
    let writable: Vec<String> = roles::candidates(gc)
        .into_iter()
        .filter(|a| mem.states.get(a).is_some_and(ServerState::writable))
        .collect();
    let mut servers = Vec::new();
    for addr in roles::candidates(gc) {
        let s = mem.states.get(&addr).cloned().unwrap_or_default();
        let is_master = addr == gc.master.addr;
        let replica = g
            .replicas
            .iter()
            .position(|r| r.pool.addr() == addr)
            .and_then(|i| monitor.replicas.get(i));
        let (role, in_rotation, reason) = if is_master {
            let reason = if fenced {
                "no_master"
            } else if s.reachable {
                "master"
            } else {
                "unreachable"
            };
            ("master", !fenced && s.reachable, reason.to_owned())
        } else if let Some(r) = replica {
            let mut reason = r.eligibility.get();
            if reason.eligible() && counts && target_epoch.is_some() && r.counters().epoch != target_epoch {
                reason = Reason::OldEpoch;
            }
            let role = if s.writable() { "writable" } else { "replica" };
            (
                role,
                r.in_rotation() && reason.eligible(),
                reason.as_str().to_owned(),
            )
        } else {
            ("replica", false, Reason::Unknown.as_str().to_owned())
        };
        servers.push(ServerView {
            group: gc.name.clone(),
            addr,
            role,
            reachable: s.reachable,
            read_only: s.read_only,
            server_id: s.server_id,
            in_rotation,
            reason,
            gtid_binlog_pos: s.gtid_binlog_pos.clone(),
            gtid_current_pos: s.gtid_current_pos.clone(),
            replication: s.slaves.clone(),
            error: s.error.clone(),
        });
    }
    GroupView {
        group: gc.name.clone(),
        topology: match gc.topology {
            TopologyMode::Static => "static",
            TopologyMode::Follow => "follow",
        },
        master: (!fenced).then(|| gc.master.addr.clone()),
        writable,
        master_changes: mem.changes,
        lost_transactions: mem.lost,
        servers,
    }
}
