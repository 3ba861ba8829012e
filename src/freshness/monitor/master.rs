//! The master's snapshots: probing its counters, folding them into the
//! target replicas must reach (generations, resets, unmarked writes), and
//! the master's probe loop (which also re-reads the tracked set).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tracing::{info, warn};

use crate::config::FreshnessMode;
use crate::freshness::state::Counters;

use super::{GroupMonitor, Unmarked, AUTO_OFF, NO_DDL_SEEN};

/// How often the set of tables with sluice's triggers is re-read.
const TRACKED_REFRESH: Duration = Duration::from_secs(30);
/// After DDL on the master, how long (at least) the probe loop keeps
/// looking for new tables to auto-install (see `master_loop`).
const RESCAN_WINDOW: Duration = Duration::from_secs(1);

impl GroupMonitor {
    /// A master snapshot `c` (its probe started after `ticket`) arrived:
    /// notice DDL and changes of generation, learn the position of
    /// unmarked writes, and fold it into the target. Returns the new target.
    pub(super) fn absorb_master(&self, c: &Counters, ticket: u64) -> Arc<Counters> {
        if let Some(n) = c.ddl_statements {
            let before = self.ddl_seen.swap(n, Ordering::AcqRel);
            if before != NO_DDL_SEEN && before != n {
                // Triggers may have been dropped or created, tables
                // renamed or truncated: trust no table until the set is
                // read again (reads go to the master meanwhile).
                info!(backend = %self.master_label, "DDL on the master: re-reading the tables with triggers");
                self.forget_tracked();
            }
        }
        let unmarked = self.unmarked.load_full();
        if let Some(u) = unmarked.as_ref() {
            if u.gtid.is_none() && ticket >= u.after_ticket {
                if let Some(g) = &c.gtid {
                    let filled = Unmarked {
                        gtid: Some(g.clone()),
                        after_ticket: u.after_ticket,
                    };
                    let _ = self.unmarked.compare_and_swap(&unmarked, Arc::new(Some(filled)));
                }
            }
        }
        // Lock-free: the closure may run more than once.
        let old = self.target.rcu(|prev| {
            if c.reset {
                // Counters changed by hand: their values start again, like a
                // new generation's; the old target says nothing about them.
                // (What a newer snapshot in the old target held is covered by
                // the position required below.)
                Arc::new(c.clone())
            } else if prev.epoch == c.epoch {
                let mut merged = (**prev).clone();
                merged.merge_max(c);
                merged.seq = prev.seq.max(c.seq);
                Arc::new(merged)
            } else if c.seq >= prev.seq {
                // A new generation: its counters start again; the old
                // target says nothing about them.
                Arc::new(c.clone())
            } else {
                // An older snapshot of another generation: keep the newer.
                prev.clone()
            }
        });
        if c.reset {
            self.counters_reset(c, &old, ticket);
        }
        if old.epoch != c.epoch && c.seq >= old.seq && old.seq != 0 {
            self.epoch_changes.fetch_add(1, Ordering::Relaxed);
            info!(
                backend = %self.master_label,
                "the counter table changed generation (install, uninstall, slot count, truncation \
                 or DDL through a sluice): counters compared afresh, tables with triggers re-read"
            );
            self.forget_tracked();
        }
        self.target.load_full()
    }

    /// Master counters went down between two probes (`c.reset`): a replica
    /// that has not applied that change yet still has the higher values and
    /// would pass for fresh. Like a write whose mark failed (`bump_global`),
    /// no replica serves a read before it has the master's GTID position of
    /// this snapshot (and of the previous target, which the new one
    /// replaced); without a position, none serves one until a probe reads it.
    pub(super) fn counters_reset(&self, c: &Counters, old: &Counters, ticket: u64) {
        self.epoch_changes.fetch_add(1, Ordering::Relaxed);
        warn!(
            backend = %self.master_label,
            "a counter row of the master went down (rows deleted or restored by hand): counted as a \
             new generation; replicas serve reads again once they have the master's position"
        );
        let need = match (&c.gtid, &old.gtid) {
            (Some(new), Some(prev)) => {
                let mut need = new.clone();
                for (d, seq) in prev {
                    let e = need.entry(*d).or_insert(0);
                    *e = (*e).max(*seq);
                }
                Some(need)
            }
            (Some(new), None) => Some(new.clone()),
            _ => None,
        };
        self.unmarked.rcu(|cur| match (cur.as_ref(), &need) {
            // Position still unknown: stays so (it will be a later one).
            (Some(Unmarked { gtid: None, .. }), _) => cur.clone(),
            (
                Some(Unmarked {
                    gtid: Some(g),
                    after_ticket,
                }),
                Some(n),
            ) => {
                let mut merged = g.clone();
                for (d, seq) in n {
                    let e = merged.entry(*d).or_insert(0);
                    *e = (*e).max(*seq);
                }
                Arc::new(Some(Unmarked {
                    gtid: Some(merged),
                    after_ticket: *after_ticket,
                }))
            }
            (_, need) => Arc::new(Some(Unmarked {
                gtid: need.clone(),
                after_ticket: ticket,
            })),
        });
        self.forget_tracked();
    }

    /// A master snapshot taken after now; merged into the target.
    pub(super) async fn master_snapshot(&self, ticket: u64) -> Result<Arc<Counters>, String> {
        let r = self.master_flight.after(ticket, || self.probe_master()).await;
        // The newest ended probe, for the next probes' comparison.
        if let Ok(c) = r.as_ref() {
            self.last_master.rcu(|cur| match cur.as_deref() {
                Some(Ok(prev)) if prev.seq >= c.seq => cur.clone(),
                _ => Some(r.clone()),
            });
        }
        match r.as_ref() {
            Ok(c) => {
                // This probe started after `ticket`: it includes every write
                // that completed before a failed snapshot with an older ticket.
                let pending = self.write_not_in_target.load(Ordering::Acquire);
                if pending != 0 && ticket >= pending {
                    let _ = self.write_not_in_target.compare_exchange(
                        pending,
                        0,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                }
                let merged = self.absorb_master(c, ticket);
                if let Ok(mut h) = self.history.lock() {
                    h.record(Instant::now(), merged.total());
                }
                Ok(merged)
            }
            Err(e) => {
                if e.contains("1146") && !self.warned_missing_table.swap(true, Ordering::Relaxed) {
                    warn!(
                        backend = %self.master_label,
                        "the counter table {}.counters is missing: all reads go to the master until \
                         `sluice triggers install` is run",
                        self.cfg.schema
                    );
                }
                Err(e.clone())
            }
        }
    }

    pub(super) async fn master_loop(me: Weak<Self>, period: Duration) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Inherited from a monitor a reload replaced: not due at once.
        let mut last_tracked_refresh = me
            .upgrade()
            .filter(|m| m.tracked.load().is_some())
            .map(|_| Instant::now());
        let mut rescan_until: Option<Instant> = None;
        loop {
            tick.tick().await;
            let Some(this) = Self::for_round(&me) else {
                return;
            };
            if this.mode == FreshnessMode::Off {
                continue;
            }
            let _ = this.master_snapshot(this.master_flight.ticket()).await;
            // The list of tables with triggers comes from information_schema,
            // which opens every table: read it rarely (a busy MariaDB 10.11
            // was seen crashing in such a query under concurrent load), and
            // at once after DDL through sluice cleared it.
            let due = last_tracked_refresh.is_none_or(|t| t.elapsed() >= TRACKED_REFRESH);
            let forgotten = this.tracked_forgotten.swap(false, Ordering::AcqRel);
            if due || forgotten {
                last_tracked_refresh = Some(Instant::now());
                this.refresh_tracked().await;
                if forgotten {
                    rescan_until = Some(Instant::now() + (this.cfg.probe_interval * 10).max(RESCAN_WINDOW));
                }
            } else if rescan_until.is_some_and(|t| Instant::now() < t)
                && this.auto_install.load(Ordering::Acquire) != AUTO_OFF
            {
                // The DDL counters move when a statement starts: the CREATE
                // TABLE seen may not have been done at the re-read. Look for
                // new tables a while longer (an install moves the counters
                // again, which re-reads the tracked set).
                this.rescan_new_tables().await;
            }
        }
    }
}
