//! Per-replica and per-pool metrics, computed when Prometheus scrapes: a
//! custom collector reads the running configuration's freshness monitors'
//! and backend pools' atomics. No background task, and nothing on the query
//! path. It lives here, above the layers it reads, so that `metrics` itself
//! imports neither `freshness` nor `backend`.
//!
//! Labels: `group` (the configured group name), `replica` / `backend`
//! ("master", "replica0", "replica1", ... in configuration order). The
//! address of each backend is in `sluice_backend_info`.

use std::sync::{Arc, Weak};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, MetricType};
use tracing::warn;

use crate::backend::{BackendPool, Topology};
use crate::config::FreshnessMode;
use crate::freshness::monitor::GroupMonitor;
use crate::freshness::state::Scope;
use crate::frontend::Shared;
use crate::metrics::family::{descs, family, finish, replica_name, samples, Family};

const GAUGE: MetricType = MetricType::GAUGE;
const COUNTER: MetricType = MetricType::COUNTER;
const HISTOGRAM: MetricType = MetricType::HISTOGRAM;
const BACKEND: &[&str] = &["group", "backend"];
const REPLICA: &[&str] = &["group", "replica"];

const BACKEND_INFO: usize = 0;
const POOL_OPEN: usize = 1;
const POOL_IN_USE: usize = 2;
const POOL_WAITS: usize = 3;
const POOL_WAIT_SECONDS: usize = 4;
const MASTER_COUNTER: usize = 5;
const REPLICA_COUNTER: usize = 6;
const LAG_WRITES: usize = 7;
const LAG_SECONDS: usize = 8;
const HEALTHY: usize = 9;
const FRESH: usize = 10;
const PROBE_FAILURES: usize = 11;
const PROBE_DURATION: usize = 12;
const IN_ROTATION: usize = 13;
const UNMARKED_WRITES: usize = 14;
const UNMARKED_PENDING: usize = 15;
const EPOCH_CHANGES: usize = 16;
// Freshness: untracked tables and auto-install (issue 11).
const UNTRACKED_TABLES: usize = 17;
const UNTRACKED_READS: usize = 18;
const AUTO_INSTALLED: usize = 19;
const STRICT_OVERLAPPED: usize = 20;
// runtime.per_core: connections moved between session threads.
const POOL_MOVES: usize = 21;

static FAMILIES: [Family; 22] = [
    family(
        "sluice_backend_info",
        "Configured backends: always 1, with the backend's address and role.",
        GAUGE,
        &["group", "backend", "role", "addr"],
    ),
    family(
        "sluice_backend_pool_connections",
        "Backend connections open in sluice's pools (idle or in use).",
        GAUGE,
        BACKEND,
    ),
    family(
        "sluice_backend_pool_connections_in_use",
        "Backend connections checked out by client sessions (running a statement or held for session state; not those parked between statements).",
        GAUGE,
        BACKEND,
    ),
    family(
        "sluice_backend_pool_waits_total",
        "Checkouts that found no idle backend connection and waited for a new or released one.",
        COUNTER,
        BACKEND,
    ),
    family(
        "sluice_backend_pool_wait_seconds_total",
        "Time spent by checkouts waiting for a backend connection.",
        COUNTER,
        BACKEND,
    ),
    family(
        "sluice_master_counted_writes",
        "Writes counted by sluice's triggers on the master (sum of the counter table, as last \
         probed or seen after a write through sluice): the position replicas must reach.",
        GAUGE,
        &["group"],
    ),
    family(
        "sluice_replica_counted_writes",
        "Counted writes the replica has applied (sum of its counter table, as last probed).",
        GAUGE,
        REPLICA,
    ),
    family(
        "sluice_replica_lag_writes",
        "Replica lag in counted writes: master counter minus replica counter at the last probe.",
        GAUGE,
        REPLICA,
    ),
    family(
        "sluice_replica_lag_seconds",
        "Replica lag in time: how long ago the master reached the first counter value the \
         replica has not reached yet (0 when caught up).",
        GAUGE,
        REPLICA,
    ),
    family(
        "sluice_replica_healthy",
        "1 when the replica is up: 0 after freshness.fall failed probes in a row, 1 again after \
         freshness.rise good probes in a row (hysteresis). A single failed probe already takes it \
         out of rotation: see sluice_replica_fresh.",
        GAUGE,
        REPLICA,
    ),
    family(
        "sluice_replica_fresh",
        "1 when the replica is in rotation (up, and its last probe succeeded) and has every write \
         the master had (all counter rows caught up), so it may serve any read; else 0.",
        GAUGE,
        REPLICA,
    ),
    family(
        "sluice_replica_probe_failures_total",
        "Replica probes that failed or timed out.",
        COUNTER,
        REPLICA,
    ),
    family(
        "sluice_replica_probe_duration_seconds",
        "Round-trip time of replica probes (reading the counter table).",
        HISTOGRAM,
        REPLICA,
    ),
    family(
        "sluice_replica_in_rotation",
        "1 when the replica may serve new reads (freshness permitting): it is up and its last \
         probe succeeded; a single failed probe makes it 0.",
        GAUGE,
        REPLICA,
    ),
    family(
        "sluice_unmarked_writes_total",
        "Writes through sluice that fire no trigger (DDL, TRUNCATE, CALL, dynamic SQL) whose bump \
         of the global counter row failed: reads then go to the master until every replica has \
         the master's GTID position after them.",
        COUNTER,
        &["group"],
    ),
    family(
        "sluice_unmarked_write_pending",
        "1 while an unmarked write is not yet applied by every replica (reads to the master, \
         or to a replica that has its GTID position).",
        GAUGE,
        &["group"],
    ),
    family(
        "sluice_freshness_epoch_changes_total",
        "Changes of the counter table's generation seen (install, uninstall, slot count, \
         truncation, DDL through a sluice): counters are then compared afresh.",
        COUNTER,
        &["group"],
    ),
    family(
        "sluice_untracked_tables",
        "Base tables of tracked schemas (schemas with sluice triggers) that are not tracked: no \
         or incomplete triggers, a non-transactional engine, or a cascading foreign key into \
         them. Reads of them go to the master. As of the last re-read of the tracked set.",
        GAUGE,
        &["group"],
    ),
    family(
        "sluice_untracked_reads_total",
        "Reads that could have gone to a replica but went to the master because a table they \
         read is not tracked by triggers.",
        COUNTER,
        &["group"],
    ),
    family(
        "sluice_auto_installed_tables_total",
        "Tables whose triggers freshness.auto_install created.",
        COUNTER,
        &["group"],
    ),
    family(
        "sluice_strict_reruns_total",
        "Strict mode: reads sent to a replica while the master probe ran whose replica then \
         proved behind: the answer was discarded and the read rerun on the master (counted \
         again there as destination master, reason stale).",
        COUNTER,
        &["group"],
    ),
    family(
        "sluice_backend_pool_moves_total",
        "runtime.per_core: checkouts that moved their backend connection to the borrowing \
         session's thread (made or last used by a session on another thread). Climbing with \
         the statements: sessions keep trading connections across threads.",
        COUNTER,
        BACKEND,
    ),
];

struct BackendView {
    /// "master", "replica0", ...
    name: String,
    addr: String,
    pool: Arc<BackendPool>,
}

struct GroupView {
    name: String,
    monitor: Option<Arc<GroupMonitor>>,
    backends: Vec<BackendView>,
}

/// Reads the running configuration snapshot of `Shared` at every scrape
/// (so a reload needs no step here). Weak: the collector sits in the
/// registry that `Shared` owns through its metrics.
pub struct TopologyCollector {
    shared: Weak<Shared>,
    descs: Vec<Desc>,
}

/// Register the collector of replica and pool state with `shared`'s
/// metrics. Called once at startup (`app::run`).
pub fn register(shared: &Arc<Shared>) {
    let collector = TopologyCollector {
        shared: Arc::downgrade(shared),
        descs: descs(&FAMILIES),
    };
    if let Err(e) = shared.metrics.registry.register(Box::new(collector)) {
        warn!(error = %e, "cannot register the replica and pool metrics");
    }
}

/// The collector's view of `topology`; `monitors` in the order of
/// `topology.groups` (as in `Runtime`).
fn views(topology: &Topology, monitors: &[Arc<GroupMonitor>]) -> Vec<GroupView> {
    topology
        .groups
        .iter()
        .enumerate()
        .map(|(gi, g)| {
            let mut backends = vec![BackendView {
                name: "master".to_owned(),
                addr: g.master.addr().to_owned(),
                pool: g.master.clone(),
            }];
            backends.extend(g.replicas.iter().enumerate().map(|(i, r)| BackendView {
                name: replica_name(i),
                addr: r.pool.addr().to_owned(),
                pool: r.pool.clone(),
            }));
            GroupView {
                name: g.name.clone(),
                monitor: monitors.get(gi).cloned(),
                backends,
            }
        })
        .collect()
}

impl Collector for TopologyCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        let mut s = samples(&FAMILIES);
        let Some(shared) = self.shared.upgrade() else {
            return Vec::new();
        };
        let rt = shared.runtime();
        for g in views(&rt.topology, &rt.monitors).iter() {
            let group = g.name.as_str();
            for b in &g.backends {
                let role = if b.name == "master" { "master" } else { "replica" };
                let key = [group, b.name.as_str()];
                s[BACKEND_INFO].gauge(&[group, &b.name, role, &b.addr], 1.0);
                let (open, idle) = b.pool.status();
                s[POOL_OPEN].gauge(&key, open as f64);
                s[POOL_IN_USE].gauge(&key, open.saturating_sub(idle) as f64);
                s[POOL_WAITS].counter(&key, b.pool.waits.waits() as f64);
                s[POOL_WAIT_SECONDS].counter(&key, b.pool.waits.wait_seconds());
                s[POOL_MOVES].counter(&key, b.pool.moves() as f64);
            }
            let Some(mon) = &g.monitor else {
                continue;
            };
            let target = mon.target();
            s[MASTER_COUNTER].gauge(&[group], target.total() as f64);
            let relaxed = std::sync::atomic::Ordering::Relaxed;
            s[UNMARKED_WRITES].counter(&[group], mon.unmarked_writes.load(relaxed) as f64);
            s[UNMARKED_PENDING].gauge(&[group], f64::from(u8::from(mon.unmarked_pending())));
            s[EPOCH_CHANGES].counter(&[group], mon.epoch_changes.load(relaxed) as f64);
            s[UNTRACKED_TABLES].gauge(&[group], mon.untracked_tables.load(relaxed) as f64);
            s[UNTRACKED_READS].counter(&[group], mon.untracked_reads.load(relaxed) as f64);
            s[AUTO_INSTALLED].counter(&[group], mon.auto_installed.load(relaxed) as f64);
            s[STRICT_OVERLAPPED].counter(&[group], mon.overlap_reruns() as f64);
            for (i, r) in mon.replicas.iter().enumerate() {
                let name = replica_name(i);
                let key = [group, name.as_str()];
                let counters = r.counters();
                let healthy = r.is_healthy();
                let fresh = r.in_rotation()
                    && (mon.mode == FreshnessMode::Off || counters.covers(&target, Scope::All));
                let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
                s[REPLICA_COUNTER].gauge(&key, counters.total() as f64);
                s[LAG_WRITES].gauge(&key, load(&r.lag_writes) as f64);
                s[LAG_SECONDS].gauge(&key, load(&r.lag_ms) as f64 / 1000.0);
                s[HEALTHY].gauge(&key, f64::from(u8::from(healthy)));
                s[FRESH].gauge(&key, f64::from(u8::from(fresh)));
                s[IN_ROTATION].gauge(&key, f64::from(u8::from(r.in_rotation())));
                s[PROBE_FAILURES].counter(&key, load(&r.probe_failures) as f64);
                s[PROBE_DURATION].histogram(&key, r.probe_seconds.snapshot());
            }
        }
        finish(s)
    }
}
