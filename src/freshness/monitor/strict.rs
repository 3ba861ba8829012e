//! Strict mode without a master round trip in front of every read.
//!
//! The plain strict gate (`GroupMonitor::pick`) waits for a master snapshot
//! taken after the read began, then sends the read to a replica whose
//! counters cover it: the read pays the probe's round trip before its own.
//! Here the two overlap:
//!
//! 1. [`GroupMonitor::pick_overlapped`] takes a ticket (now), chooses a
//!    replica and keeps that replica's last probed position (`seen`), read
//!    *before* the statement is sent to it;
//! 2. the session sends the read to the replica and, while the replica runs
//!    it, [`GroupMonitor::verify`] waits for one master probe that started
//!    after the ticket (shared by every read that began before that probe,
//!    `flight`): the master's GTID position, one row;
//! 3. the replica's answer is released to the client only if `seen` covers
//!    that position, domain by domain; otherwise it is discarded and the
//!    read runs again on the master.
//!
//! Why this is never stale: a write that completed before the read began is
//! in the master's binlog position read by a probe that started after the
//! ticket; the replica had applied everything up to `seen` before the read
//! was sent, and a replica only moves forward, so the read saw the write.
//! The GTID position covers every write (DDL, TRUNCATE, tables without
//! triggers, other sluices' writes), so no counter rows, tracked set or
//! generation are needed for this check.
//!
//! The reads overlapped: text reads, and COM_STMT_EXECUTEs that open no
//! cursor (rerun by preparing the statement on the master). Reads that
//! cannot be rerun (cursor EXECUTEs, read-only transactions, sharded
//! parts) take the plain gate, which tries the same one-row probe
//! first ([`GroupMonitor::pick_by_gtid`], sequential: a replica whose
//! position covers the master's is chosen after the probe) before the full
//! counter snapshot.
//!
//! When a check fails (writes keep moving the master's position), both are
//! switched off for [`OVERLAP_BACKOFF`]: reads then take the plain gate's
//! counter snapshot, whose per-table counters can still find a replica
//! fresh for the tables a read touches while other tables are written.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;

use super::{Fallback, GroupMonitor};
use crate::backend::{BackendPool, PoolKey};
use crate::config::FreshnessMode;
use crate::freshness::state::{gtid_at_least, parse_gtid_pos, Counters, Scope};

/// How long reads take the plain strict gate after an overlapped read found
/// its replica behind (its answer was thrown away and the read rerun).
const OVERLAP_BACKOFF: Duration = Duration::from_secs(1);

/// The strict probe: the master's binlog position, one row of one column
/// (no table read, nothing for the counter-table layout to change).
pub fn strict_probe_sql() -> &'static str {
    "SELECT @@global.gtid_binlog_pos"
}

/// Connections for the strict probe: sluice's own backend connections to
/// the master (the group's account), at most one per probe in flight. A raw
/// COM_QUERY and one text row cost a fraction of a `mysql_async` query
/// (its pool, its row decoding); the connections are apart from the
/// sessions' pools, so a probe never waits behind a full pool.
pub(super) fn probe_pool(
    group: &crate::config::Group,
    config: &crate::config::Config,
) -> Option<Arc<BackendPool>> {
    match crate::backend::topology::params(&group.master, config) {
        Ok(params) => Some(BackendPool::new(
            format!("{} master {} (strict probe)", group.name, group.master.addr),
            params,
            PROBES_IN_FLIGHT,
        )),
        Err(e) => {
            tracing::warn!(backend = %group.master.addr, error = %e, "strict probes go through mysql_async");
            None
        }
    }
}

/// Strict probes in flight at once (see `Flight::with_parallel`). One, with
/// the next queued behind it (reads that arrive meanwhile all wait for the
/// queued one): fewer probes per read than two in flight (0.39-0.65 master
/// statements per read against 0.67-0.85), which measured faster with
/// point selects on a CPU-bound 2-core machine (benches/README.md, session
/// 11). A read waits on average the rest of the running probe and one
/// more, more than its replica read takes under load; a CPU the probes
/// would have used serves reads instead.
pub(super) const PROBES_IN_FLIGHT: usize = 1;

/// One strict probe on a connection of `pool`.
async fn probe_raw(pool: &BackendPool) -> Result<HashMap<u32, u64>, String> {
    let mut conn = pool
        .get_unmoved(PoolKey::sluice_own())
        .await
        .map_err(|e| e.to_string())?;
    // A probe cut short by its timeout leaves its answer unread on the
    // connection: it must not go back to the pool then (the next probe
    // would read this one's answer). Cleared once the answer is read.
    conn.broken = true;
    let pos = conn
        .query_text(strict_probe_sql())
        .await
        .map_err(|e| e.to_string())?;
    conn.broken = false;
    let pos = pos.map_err(|e| e.message)?;
    pos.as_deref()
        .and_then(parse_gtid_pos)
        .ok_or_else(|| "the master reported no GTID position".to_owned())
}

/// A read sent to a replica before its freshness is known.
#[derive(Debug, Clone)]
pub struct Provisional {
    /// Master-probe ticket taken when the read began.
    ticket: u64,
    /// That replica's last probed counters, read before the statement was
    /// sent to it.
    seen: Arc<Counters>,
}

impl GroupMonitor {
    /// Strict mode's gate for a read the caller can rerun on the master
    /// (a text query or an EXECUTE without a cursor, outside a transaction): a replica and, when its
    /// freshness is still to be checked, the [`Provisional`] to pass to
    /// [`GroupMonitor::verify`] once the statement was sent. Other modes,
    /// and strict mode while overlapping is backed off, answer as
    /// [`GroupMonitor::pick`] (no provisional).
    pub async fn pick_overlapped(
        &self,
        scope: Scope<'_>,
        current: Option<usize>,
    ) -> Result<(usize, Option<Provisional>), Fallback> {
        if self.mode != FreshnessMode::Strict || self.overlap_backed_off() {
            return self.pick(scope, current).await.map(|i| (i, None));
        }
        // The same refusals as the plain gate, before any probe.
        if self.replicas.is_empty() {
            return Err(Fallback::NoReplica);
        }
        if !self.replicas.iter().any(super::ReplicaMonitor::in_rotation) {
            return Err(Fallback::Down);
        }
        if !self.scope_tracked(scope) {
            self.count_untracked();
            return Err(Fallback::Untracked);
        }
        let ticket = self.gtid_flight.ticket();
        // A replica whose position is unknown can prove nothing: the plain
        // gate decides (and may probe it).
        let Some(i) = self.choose(current, |i| self.replicas[i].counters().gtid.is_some()) else {
            return self.pick(scope, current).await.map(|i| (i, None));
        };
        let seen = self.replicas[i].counters();
        Ok((i, Some(Provisional { ticket, seen })))
    }

    /// May the answer of the provisional read `p` be released? Waits for a
    /// master probe that started after the read began. `false` (the
    /// replica may lack a write, or the probe failed): discard the answer
    /// and rerun the read on the master.
    ///
    /// `answered` resolves when the replica's answer has begun to arrive:
    /// while reads overlap, the probe this read would start waits for it
    /// (see `Flight::after_lingering`), so that one probe answers every
    /// read that began until this one needs it.
    pub async fn verify(&self, p: &Provisional, answered: impl std::future::Future<Output = ()>) -> bool {
        let master = self
            .gtid_flight
            .after_lingering(p.ticket, Some(answered), || self.probe_master_gtid())
            .await;
        let fresh = match master.as_ref() {
            // An empty position proves nothing about a replica (no binlog,
            // or nothing written yet): take the plain gate next time.
            Ok(pos) => !pos.is_empty() && gtid_at_least(p.seen.gtid.as_ref(), pos),
            Err(_) => false,
        };
        if !fresh {
            self.overlap_rerun.fetch_add(1, Ordering::Relaxed);
            self.back_off_overlap();
        }
        fresh
    }

    /// Overlapped reads rerun on the master since start (metric).
    pub fn overlap_reruns(&self) -> u64 {
        self.overlap_rerun.load(Ordering::Relaxed)
    }

    /// The plain strict gate's first try (reads that cannot be rerun:
    /// cursor EXECUTEs, read-only transactions, sharded parts): one
    /// shared GTID probe that started after now, and a replica whose last
    /// probed position covers it. The read is sent after this returns and a
    /// replica only moves forward, so it sees every write the master had
    /// committed. `None`: no replica proved fresh this way (the caller
    /// compares counters instead); then this try is skipped for a while.
    pub(super) async fn pick_by_gtid(&self, current: Option<usize>) -> Option<usize> {
        if self.overlap_backed_off() {
            return None;
        }
        let ticket = self.gtid_flight.ticket();
        let master = self.gtid_flight.after(ticket, || self.probe_master_gtid()).await;
        let picked = match master.as_ref() {
            Ok(pos) if !pos.is_empty() => self.choose(current, |i| {
                gtid_at_least(self.replicas[i].counters().gtid.as_ref(), pos)
            }),
            _ => None,
        };
        if picked.is_none() {
            self.back_off_overlap();
        }
        picked
    }

    async fn probe_master_gtid(&self) -> Result<HashMap<u32, u64>, String> {
        if let Some(pool) = &self.gtid_pool {
            // (Boxed: a checkout's future stays out of every read's.)
            let fut = Box::pin(probe_raw(pool));
            return match tokio::time::timeout(self.cfg.probe_timeout, fut).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "strict probe timed out after {:?}",
                    self.cfg.probe_timeout
                )),
            };
        }
        let fut = async {
            let mut conn = self.master.get_conn().await.map_err(|e| e.to_string())?;
            let pos: Option<String> = conn
                .query_first(strict_probe_sql())
                .await
                .map_err(|e| e.to_string())?;
            pos.as_deref()
                .and_then(parse_gtid_pos)
                .ok_or_else(|| "the master reported no GTID position".to_owned())
        };
        match tokio::time::timeout(self.cfg.probe_timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "strict probe timed out after {:?}",
                self.cfg.probe_timeout
            )),
        }
    }

    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    /// Read per statement; written only when a check fails.
    fn overlap_backed_off(&self) -> bool {
        let until = self.overlap_off_until_ms.load(Ordering::Relaxed);
        until != 0 && self.now_ms() < until
    }

    fn back_off_overlap(&self) {
        let until = self.now_ms() + OVERLAP_BACKOFF.as_millis() as u64;
        self.overlap_off_until_ms.fetch_max(until, Ordering::Relaxed);
    }
}
