//! Live freshness state of one backend group: background probes of the
//! master's and each replica's counters over pooled connections
//! (mysql_async), and the routing question "which replica may serve this
//! read?" answered per mode.
//!
//! By responsibility: `probe` (pools, the counter query, replica probes),
//! `master` (master snapshots and the target), `tracked` (the set of tables
//! with triggers, auto-install), `strict` (strict mode's overlapped reads),
//! `eligibility` (replication state, set by `crate::follow`); here the
//! monitor itself and the routing question.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use mysql_async::prelude::Queryable;
use rand::Rng;
use tracing::warn;

use crate::config::{self, Freshness, FreshnessMode};
use crate::router::plan::RouteReason;

use super::flight::Flight;
use super::health::{Health, HealthFlags};
use super::state::{gtid_at_least, Counters, LagHistory, Scope, EPOCH_ROW};
use super::triggers::CounterTables;

pub mod eligibility;
mod master;
mod probe;
mod strict;
mod tracked;
use probe::pool_for;
pub use strict::{strict_probe_sql, Provisional};

/// Why a read that could have gone to a replica went to the master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// The group has no replicas.
    NoReplica,
    /// Replicas are up but none has caught up far enough.
    Stale,
    /// No replica is in rotation (its last probe failed, or it is down and
    /// has not had `rise` good probes yet).
    Down,
    /// The read touches a table without sluice's triggers.
    Untracked,
    /// The master's counters could not be read: in strict mode for this
    /// read, in causal mode after a write (see `GroupMonitor::after_write`).
    MasterProbeFailed,
    /// A write through sluice could not be marked (its global bump failed)
    /// and no replica has provably applied it yet (by GTID position).
    Unmarked,
}

impl Fallback {
    pub fn reason(&self) -> RouteReason {
        match self {
            Fallback::NoReplica => RouteReason::NoReplica,
            Fallback::Stale => RouteReason::Stale,
            Fallback::Down => RouteReason::ReplicaDown,
            Fallback::Untracked => RouteReason::UntrackedTable,
            Fallback::MasterProbeFailed => RouteReason::MasterProbeFailed,
            Fallback::Unmarked => RouteReason::UnmarkedWrite,
        }
    }
}

pub struct ReplicaMonitor {
    pub label: String,
    /// `host:port` as configured.
    addr: String,
    pool: mysql_async::Pool,
    /// Share of reads; a reload may change it in place (see `set_weights`).
    weight: AtomicU32,
    /// Written only by this replica's probes (one at a time, `flight`).
    health: tokio::sync::watch::Sender<Health>,
    /// `health` for the routing path (see `HealthFlags`); reads running on
    /// the replica look at it when woken by `GroupMonitor`'s down hook
    /// (`frontend::abandon`).
    pub flags: Arc<HealthFlags>,
    counters: ArcSwap<Counters>,
    flight: Flight<Counters>,
    /// Last estimates, for metrics.
    pub lag_ms: AtomicU64,
    pub lag_writes: AtomicU64,
    pub probe_failures: AtomicU64,
    pub last_probe_us: AtomicU64,
    /// Probe round trips, exported by `admin::topology` at scrape time.
    pub probe_seconds: crate::stats::AtomicHistogram,
    /// Replication state (`crate::follow` sets it): part of `in_rotation`.
    pub eligibility: eligibility::Eligibility,
}

impl ReplicaMonitor {
    /// Up, in the hysteresis sense (see `health`).
    pub fn is_healthy(&self) -> bool {
        self.flags.up()
    }

    /// Up, its last probe succeeded, and it replicates from the master
    /// with both threads running: may serve new reads.
    pub fn in_rotation(&self) -> bool {
        self.flags.in_rotation() && self.eligibility.get().eligible()
    }

    pub fn counters(&self) -> Arc<Counters> {
        self.counters.load_full()
    }
}

/// Writes whose mark (the global bump) failed: what replicas must have
/// applied before they serve any read again.
#[derive(Debug, Clone)]
struct Unmarked {
    /// The master's GTID position after the writes; None until a master
    /// probe that started after the last failure has read it.
    gtid: Option<std::collections::HashMap<u32, u64>>,
    /// Master-flight ticket taken at the last failure.
    after_ticket: u64,
}

/// Called when a replica goes down (see [`GroupMonitor::spawn`]).
pub type DownHook = Arc<dyn Fn() + Send + Sync>;

pub struct GroupMonitor {
    pub mode: FreshnessMode,
    cfg: Freshness,
    pub master_label: String,
    master_addr: String,
    master: mysql_async::Pool,
    /// What replicas must reach: the newest master snapshot (background or
    /// taken after a write through sluice), merged by max.
    target: ArcSwap<Counters>,
    master_flight: Flight<Counters>,
    /// Causal mode: nonzero when a write through sluice completed but the
    /// master snapshot after it failed, so `target` may lack it. Holds a
    /// master-flight ticket taken after that failure; a master snapshot
    /// satisfying a later ticket covers the write and clears it.
    write_not_in_target: AtomicU64,
    pub replicas: Vec<ReplicaMonitor>,
    /// Writes whose global bump failed, until every replica has their
    /// GTID position (see `bump_global`).
    unmarked: ArcSwap<Option<Unmarked>>,
    /// Writes whose global bump failed, since start (metric).
    pub unmarked_writes: AtomicU64,
    /// Changes of the counter generation seen (metric).
    pub epoch_changes: AtomicU64,
    /// Sum of the master's DDL statement counters at the last probe
    /// (`NO_DDL_SEEN` before the first).
    ddl_seen: AtomicU64,
    /// Master probes started: orders snapshots (an older one never replaces
    /// a newer target across a change of generation).
    probe_seq: AtomicU64,
    /// The newest master snapshot whose probe has ended: a probe compares
    /// its own with the one it found here when it began (a counter that
    /// went down in between is a reset, see `Counters::went_down_from`).
    last_master: arc_swap::ArcSwapOption<Result<Counters, String>>,
    /// `db.table` names with all three sluice triggers; `None` until known.
    tracked: ArcSwap<Option<super::state::TableSet>>,
    /// Set by `forget_tracked`: re-read the set at the next probe.
    tracked_forgotten: AtomicBool,
    /// Cascading foreign keys as last read (see `tracked_tables_reusing`).
    cascades: Mutex<Option<super::triggers::CascadeCache>>,
    history: Mutex<LagHistory>,
    warned_missing_table: AtomicBool,
    /// `freshness.auto_install`: AUTO_DETECT until the account's grants
    /// were read once, then AUTO_ON or AUTO_OFF.
    auto_install: AtomicU8,
    /// One auto-install at a time (the pipeline's hook and the probe loop).
    installing: tokio::sync::Mutex<()>,
    /// The tracked set as last read, kept across `forget_tracked`: tables
    /// new in a set read later had writes no trigger counted.
    last_tracked: Mutex<Option<HashSet<String>>>,
    /// Base tables of tracked schemas that are not tracked, at the last
    /// re-read of the tracked set (metric).
    pub untracked_tables: AtomicU64,
    /// Which counter tables the probes read ([`CounterTables::bits`]),
    /// learned with the tracked set (whose tables' triggers bump only these).
    counter_tables: AtomicU8,
    /// Reads sent to the master because a table they read is not tracked
    /// (metric; not counted while the tracked set is being re-read).
    pub untracked_reads: AtomicU64,
    /// Tables whose triggers `auto_install` created (metric).
    pub auto_installed: AtomicU64,
    /// Strict mode's overlapped reads: one master GTID probe shared by
    /// every read that began before it (see `strict`).
    gtid_flight: Flight<std::collections::HashMap<u32, u64>>,
    /// sluice's own connections to the master for that probe (raw
    /// COM_QUERY, see `strict`); `None` when its TLS settings cannot be
    /// used (the probe then goes through `master`).
    gtid_pool: Option<Arc<crate::backend::BackendPool>>,
    /// Strict reads take the plain gate until then (ms after `born`; see
    /// `strict`). Written only when an overlapped read was behind.
    overlap_off_until_ms: AtomicU64,
    born: Instant,
    /// Overlapped strict reads rerun on the master (metric; only reruns are
    /// counted: no shared counter is written per released read).
    overlap_rerun: AtomicU64,
    /// The probe loops were started (`spawn` is idempotent).
    started: AtomicBool,
    /// See [`GroupMonitor::spawn`].
    down_hook: std::sync::OnceLock<DownHook>,
    /// A reload replaced this monitor: the probe loops end.
    stopped: AtomicBool,
}

const AUTO_DETECT: u8 = 0;
const AUTO_ON: u8 = 1;
const AUTO_OFF: u8 = 2;

const NO_DDL_SEEN: u64 = u64::MAX;

impl GroupMonitor {
    /// The monitor of `group`, with `config`'s freshness and backend TLS settings.
    pub fn new(group: &config::Group, config: &config::Config) -> Arc<GroupMonitor> {
        let cfg = &config.freshness;
        let replicas = group
            .replicas
            .iter()
            .enumerate()
            .map(|(i, r)| ReplicaMonitor {
                label: format!("{} replica{} {}", group.name, i, r.addr),
                addr: r.addr.clone(),
                pool: pool_for(r, config.backend_tls(r)),
                weight: AtomicU32::new(r.weight.max(1)),
                health: tokio::sync::watch::Sender::new(Health::default()),
                flags: Arc::default(),
                counters: ArcSwap::from_pointee(Counters::default()),
                flight: Flight::new(),
                lag_ms: AtomicU64::new(0),
                lag_writes: AtomicU64::new(0),
                probe_failures: AtomicU64::new(0),
                last_probe_us: AtomicU64::new(0),
                probe_seconds: crate::stats::AtomicHistogram::default(), // metrics
                eligibility: Default::default(),
            })
            .collect();
        Arc::new(GroupMonitor {
            mode: cfg.mode,
            cfg: cfg.clone(),
            master_label: format!("{} master {}", group.name, group.master.addr),
            master_addr: group.master.addr.clone(),
            master: pool_for(&group.master, config.backend_tls(&group.master)),
            target: ArcSwap::from_pointee(Counters::default()),
            master_flight: Flight::new(),
            write_not_in_target: AtomicU64::new(0),
            replicas,
            unmarked: ArcSwap::from_pointee(None),
            unmarked_writes: AtomicU64::new(0),
            epoch_changes: AtomicU64::new(0),
            ddl_seen: AtomicU64::new(NO_DDL_SEEN),
            probe_seq: AtomicU64::new(0),
            last_master: arc_swap::ArcSwapOption::empty(),
            tracked: ArcSwap::from_pointee(None),
            tracked_forgotten: AtomicBool::new(false),
            cascades: Mutex::new(None),
            history: Mutex::new(LagHistory::default()),
            warned_missing_table: AtomicBool::new(false),
            auto_install: AtomicU8::new(match (cfg.mode, cfg.auto_install) {
                (FreshnessMode::Off, _) | (_, Some(false)) => AUTO_OFF,
                (_, Some(true)) => AUTO_ON,
                (_, None) => AUTO_DETECT,
            }),
            installing: tokio::sync::Mutex::new(()),
            last_tracked: Mutex::new(None),
            untracked_tables: AtomicU64::new(0),
            counter_tables: AtomicU8::new(CounterTables::INSERT_ONLY.bits()),
            untracked_reads: AtomicU64::new(0),
            auto_installed: AtomicU64::new(0),
            // One strict probe in flight, the next one queued behind it:
            // fewer probes per read than two in flight, which measured
            // faster on a CPU-bound machine (see strict::PROBES_IN_FLIGHT).
            gtid_flight: Flight::with_parallel(strict::PROBES_IN_FLIGHT),
            gtid_pool: strict::probe_pool(group, config),
            overlap_off_until_ms: AtomicU64::new(0),
            born: Instant::now(),
            overlap_rerun: AtomicU64::new(0),
            started: AtomicBool::new(false),
            down_hook: std::sync::OnceLock::new(),
            stopped: AtomicBool::new(false),
        })
    }

    /// The counters replicas must reach (for metrics: master counter, lag).
    pub fn target(&self) -> Arc<Counters> {
        self.target.load_full()
    }

    /// Each replica's health flags, in replica order (see `HealthFlags`).
    pub fn health_flags(&self) -> Vec<Arc<HealthFlags>> {
        self.replicas.iter().map(|r| r.flags.clone()).collect()
    }

    /// Start the background probe loops (once; later calls do nothing).
    ///
    /// The loops hold the monitor only weakly between probes, and end at
    /// their next tick once it is stopped or dropped (no task outlives the
    /// configuration it probes for).
    ///
    /// `on_down` is called when a replica goes down: it must wake the
    /// sessions whose reads run there (`frontend::abandon`).
    pub fn spawn(self: &Arc<Self>, on_down: &DownHook) {
        let _ = self.down_hook.set(on_down.clone());
        if self.replicas.is_empty() || self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::downgrade(self);
        tokio::spawn(Self::master_loop(me, self.cfg.probe_interval));
        for i in 0..self.replicas.len() {
            let me = Arc::downgrade(self);
            tokio::spawn(Self::replica_loop(me, i, self.cfg.probe_interval));
        }
    }

    /// A reload replaced this monitor: end its probe loops at their next
    /// tick. Sessions still routing with it (until their transaction ends)
    /// see its replicas' counters frozen, which can only send reads to the
    /// master, never to a stale replica.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// A loop's monitor for one more round, unless it is gone or stopped.
    fn for_round(me: &Weak<Self>) -> Option<Arc<Self>> {
        me.upgrade().filter(|m| !m.stopped.load(Ordering::Acquire))
    }

    /// Take over what a monitor of the same master and counter schema
    /// (replaced by a reload) knew of the master: the counters replicas
    /// must reach, and the set of tables with triggers. So a new monitor
    /// neither forgets writes it must wait for nor asks information_schema
    /// again at once (that query is heavy; see `master_loop`). Call before
    /// [`GroupMonitor::spawn`].
    pub fn inherit_master_state(&self, old: &GroupMonitor) {
        self.target.store(old.target.load_full());
        // Snapshots are ordered by probe number: continue the old count.
        self.probe_seq
            .store(old.probe_seq.load(Ordering::Acquire), Ordering::Release);
        self.tracked.store(old.tracked.load_full());
        self.counter_tables
            .store(old.counter_tables.load(Ordering::Acquire), Ordering::Release);
        if let (Ok(mut mine), Ok(theirs)) = (self.cascades.lock(), old.cascades.lock()) {
            *mine = theirs.clone();
        }
        if let (Ok(mut mine), Ok(theirs)) = (self.last_tracked.lock(), old.last_tracked.lock()) {
            *mine = theirs.clone();
        }
    }

    /// A reload changed only the replicas' weights: apply them in place, so
    /// the replicas' freshness state and health are kept. `weights` is in
    /// replica order; a missing entry leaves its replica as it is.
    pub fn set_weights(&self, weights: &[u32]) {
        for (r, w) in self.replicas.iter().zip(weights) {
            r.weight.store((*w).max(1), Ordering::Relaxed);
        }
    }

    /// A statement that fires no trigger (DDL, TRUNCATE, unanalysable) ran
    /// through sluice: bump the global row so no replica counts as fresh
    /// before it has applied that statement too.
    ///
    /// The same statement gives the counters a new generation
    /// ([`EPOCH_ROW`]), so every sluice in front of this master re-reads its
    /// tracked set within one probe. When the bump fails (no privilege, a
    /// row lock, a slow master) the write is *unmarked*: reads go to the
    /// master until every replica has applied the master's GTID position
    /// after it (`sluice_unmarked_writes_total` counts them).
    pub async fn bump_global(&self) {
        if self.mode == FreshnessMode::Off || self.replicas.is_empty() {
            return;
        }
        let epoch: u64 = rand::rng().random_range(1..i64::MAX as u64);
        let sql = format!(
            "INSERT INTO `{}`.`counters` (tbl, slot, n) VALUES ('{}', 0, 1), ('{EPOCH_ROW}', 0, {epoch}) \
             ON DUPLICATE KEY UPDATE n = IF(tbl = '{EPOCH_ROW}', VALUES(n), n + 1)",
            self.cfg.schema.replace('`', "``"),
            super::state::GLOBAL_ROW
        );
        let fut = async {
            let mut conn = self.master.get_conn().await.map_err(|e| e.to_string())?;
            conn.query_drop(sql).await.map_err(|e| e.to_string())
        };
        let failure = match tokio::time::timeout(self.cfg.probe_timeout, fut).await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(_) => "timed out".to_owned(),
        };
        self.unmarked_writes.fetch_add(1, Ordering::Relaxed);
        warn!(
            error = %failure,
            "could not bump the global counter row: reads go to the master until the replicas \
             have the master's GTID position after this write"
        );
        // Position unknown yet: every read to the master. A master probe
        // that starts after now learns it (the write has completed).
        let after_ticket = self.master_flight.ticket();
        self.unmarked.store(Arc::new(Some(Unmarked {
            gtid: None,
            after_ticket,
        })));
        let _ = self.master_snapshot(after_ticket).await;
    }

    /// Unmarked writes are covered once every replica has their position.
    fn clear_unmarked_if_applied(&self) {
        let current = self.unmarked.load_full();
        let Some(Unmarked { gtid: Some(need), .. }) = current.as_ref() else {
            return;
        };
        if self
            .replicas
            .iter()
            .all(|r| gtid_at_least(r.counters().gtid.as_ref(), need))
        {
            let _ = self.unmarked.compare_and_swap(&current, Arc::new(None));
        }
    }

    /// Writes whose mark failed are waiting for the replicas (metric).
    pub fn unmarked_pending(&self) -> bool {
        self.unmarked.load().is_some()
    }

    /// Causal mode: a write through sluice has completed; make sure the
    /// target includes it before the client learns it completed.
    pub async fn after_write(&self) {
        if self.mode != FreshnessMode::Causal || self.replicas.is_empty() {
            return;
        }
        let ticket = self.master_flight.ticket();
        if self.master_snapshot(ticket).await.is_err() {
            // The write committed (the server said so) but the target may
            // not include it, and a replica that lacks it could then pass
            // for fresh. Until a later snapshot succeeds, causal reads go to
            // the master. (The client still gets its OK: the write is done.)
            self.write_not_in_target
                .fetch_max(self.master_flight.ticket(), Ordering::AcqRel);
        }
    }

    /// Does `pick` look at its scope? (Not without replicas, nor in mode
    /// `off`: callers skip building one.)
    pub fn compares_counters(&self) -> bool {
        !self.replicas.is_empty() && self.mode != FreshnessMode::Off
    }

    /// Choose a replica for a read, or say why the master must serve it.
    /// `current`: the replica the session already holds (preferred if eligible).
    pub async fn pick(&self, scope: Scope<'_>, current: Option<usize>) -> Result<usize, Fallback> {
        if self.replicas.is_empty() {
            return Err(Fallback::NoReplica);
        }
        if !self.replicas.iter().any(ReplicaMonitor::in_rotation) {
            return Err(Fallback::Down);
        }
        if self.mode != FreshnessMode::Off && !self.scope_tracked(scope) {
            self.count_untracked();
            return Err(Fallback::Untracked);
        }
        let target = match self.mode {
            FreshnessMode::Off => return self.choose(current, |_| true).ok_or(Fallback::Down),
            FreshnessMode::Causal => {
                if self.write_not_in_target.load(Ordering::Acquire) != 0 {
                    return Err(Fallback::MasterProbeFailed);
                }
                self.target.load_full()
            }
            FreshnessMode::Strict => {
                if let Some(i) = self.pick_by_gtid(current).await {
                    return Ok(i);
                }
                let ticket = self.master_flight.ticket();
                let t = self
                    .master_snapshot(ticket)
                    .await
                    .map_err(|_| Fallback::MasterProbeFailed)?;
                // That probe may have seen DDL (the tracked set is being
                // re-read) or a new generation.
                if !self.scope_tracked(scope) {
                    self.count_untracked();
                    return Err(Fallback::Untracked);
                }
                t
            }
        };
        let unmarked = self.unmarked.load_full();
        let need = match unmarked.as_ref() {
            None => None,
            Some(Unmarked { gtid: None, .. }) => return Err(Fallback::Unmarked),
            Some(Unmarked { gtid: Some(g), .. }) => Some(g),
        };
        let fresh = |i: usize| {
            let c = self.replicas[i].counters();
            c.covers(&target, scope) && need.is_none_or(|g| gtid_at_least(c.gtid.as_ref(), g))
        };
        if let Some(i) = self.choose(current, fresh) {
            return Ok(i);
        }
        // Cached replica counters are behind the target: ask the replicas
        // now (strict always; causal only when waiting is allowed), and keep
        // asking up to max_wait.
        if self.mode == FreshnessMode::Causal && self.cfg.max_wait.is_zero() {
            return Err(if need.is_some() {
                Fallback::Unmarked
            } else {
                Fallback::Stale
            });
        }
        let deadline = Instant::now() + self.cfg.max_wait;
        loop {
            for i in 0..self.replicas.len() {
                if self.replicas[i].in_rotation() {
                    let t = self.replicas[i].flight.ticket();
                    let _ = self.replica_probe_shared(i, t).await;
                }
            }
            if let Some(i) = self.choose(current, fresh) {
                return Ok(i);
            }
            if Instant::now() >= deadline {
                return Err(if need.is_some() {
                    Fallback::Unmarked
                } else {
                    Fallback::Stale
                });
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The collation id of column `schema.table.column` on the master: `Some(None)` when
    /// it is not a string column, `None` when the server did not answer. Not cached here:
    /// the shard rules keep it with the definitions they forget after DDL
    /// (`ShardRules::column_collation`).
    pub async fn column_collation(&self, schema: &str, table: &str, column: &str) -> Option<Option<u16>> {
        let fut = async {
            let mut conn = self.master.get_conn().await.ok()?;
            let id: Option<u16> = conn
                .exec_first(
                    "SELECT co.ID FROM information_schema.COLUMNS c \
                     JOIN information_schema.COLLATIONS co ON co.COLLATION_NAME = c.COLLATION_NAME \
                     WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ? AND c.COLUMN_NAME = ?",
                    (schema, table, column),
                )
                .await
                .ok()?;
            Some(id)
        };
        tokio::time::timeout(self.cfg.probe_timeout * 4, fut)
            .await
            .ok()
            .flatten()
    }

    /// Weighted random choice among replicas in rotation passing `ok`, keeping
    /// `current` when it qualifies.
    fn choose(&self, current: Option<usize>, ok: impl Fn(usize) -> bool) -> Option<usize> {
        let eligible = |i: usize| self.replicas[i].in_rotation() && ok(i);
        if let Some(c) = current {
            if c < self.replicas.len() && eligible(c) {
                return Some(c);
            }
        }
        let weight = |i: usize| self.replicas[i].weight.load(Ordering::Relaxed);
        // The candidates, without an allocation per read: a bit per replica
        // (a group of more than 64 replicas takes a list).
        if self.replicas.len() <= 64 {
            let cands = (0..self.replicas.len())
                .filter(|&i| eligible(i))
                .fold(0u64, |m, i| m | 1 << i);
            if cands.count_ones() == 1 {
                let only = cands.trailing_zeros() as usize;
                return (weight(only) > 0).then_some(only);
            }
            return weighted((0..self.replicas.len()).filter(|i| cands & (1 << i) != 0), weight);
        }
        let cands: Vec<usize> = (0..self.replicas.len()).filter(|&i| eligible(i)).collect();
        weighted(cands.into_iter(), weight)
    }
}

/// One of `cands` at random, each as likely as its weight; None when their
/// weights sum to 0.
fn weighted(cands: impl Iterator<Item = usize> + Clone, weight: impl Fn(usize) -> u32) -> Option<usize> {
    let total: u32 = cands.clone().map(&weight).sum();
    if total == 0 {
        return None;
    }
    let mut x = rand::rng().random_range(0..total);
    let mut last = None;
    for i in cands {
        let w = weight(i);
        if x < w {
            return Some(i);
        }
        x -= w;
        last = Some(i);
    }
    last
}
