//! The metrics every statement updates: where it was routed, the bytes to
//! and from the client, and its latency per backend. They live in cells
//! per thread (`stats::ShardedCounter`) and become Prometheus samples when scraped, so a
//! statement writes no cache line that statements on other cores write.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, MetricType};

use super::family::{descs, family, finish, samples, Family};
use super::{Destination, LATENCY_BUCKETS, REASONS};
use crate::router::plan::RouteReason;
use crate::stats::{ShardedCounter, ShardedHistogram};

const ROUTED: usize = 0;
const RECEIVED: usize = 1;
const SENT: usize = 2;
const DURATION: usize = 3;

static FAMILIES: [Family; 4] = [
    family(
        "sluice_routed_statements_total",
        "Statements routed, by destination (master, replica, shards) and reason.",
        MetricType::COUNTER,
        &["destination", "reason"],
    ),
    family(
        "sluice_client_received_bytes_total",
        "Bytes of client commands received (MySQL packets with their headers; TLS overhead \
         and LOCAL INFILE data not included).",
        MetricType::COUNTER,
        &[],
    ),
    family(
        "sluice_client_sent_bytes_total",
        "Bytes sent to clients: relayed backend responses and sluice's own packets, \
         headers included (TLS overhead not included).",
        MetricType::COUNTER,
        &[],
    ),
    family(
        "sluice_statement_duration_seconds",
        "Time from sending a command to a backend until its whole response was relayed \
         to the client, by group, destination and backend.",
        MetricType::HISTOGRAM,
        &["group", "destination", "backend"],
    ),
];

/// Routing counters of the known reasons: [destination][reason], made on
/// first use (a series appears once it counts something).
type RouteCounters = [[OnceLock<ShardedCounter>; REASONS.len()]; Destination::ALL.len()];

/// (group, destination, backend) of a latency series.
type DurationKey = (String, &'static str, String);

pub(super) struct Hot {
    routed_known: Box<RouteCounters>,
    pub bytes_received: ShardedCounter,
    pub bytes_sent: ShardedCounter,
    /// Every latency series made so far, kept across reloads (a backend
    /// that stays keeps counting in the same series).
    durations: Mutex<BTreeMap<DurationKey, Arc<ShardedHistogram>>>,
}

impl Hot {
    pub fn new() -> Hot {
        Hot {
            routed_known: Box::new(std::array::from_fn(|_| std::array::from_fn(|_| OnceLock::new()))),
            bytes_received: ShardedCounter::default(),
            bytes_sent: ShardedCounter::default(),
            durations: Mutex::default(),
        }
    }

    /// Count one statement routed to `dest` for `reason`.
    pub fn route(&self, dest: Destination, reason: RouteReason) {
        self.routed_known[dest as usize][reason as usize]
            .get_or_init(ShardedCounter::default)
            .inc();
    }

    /// The latency series of one backend (made once, then shared).
    pub fn duration(&self, group: &str, dest: Destination, backend: &str) -> Arc<ShardedHistogram> {
        let key = (group.to_owned(), dest.as_str(), backend.to_owned());
        let mut map = self.durations.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key)
            .or_insert_with(|| Arc::new(ShardedHistogram::new(LATENCY_BUCKETS)))
            .clone()
    }
}

/// Turns [`Hot`]'s cells into samples when Prometheus scrapes.
pub(super) struct HotCollector {
    hot: Arc<Hot>,
    descs: Vec<Desc>,
}

impl HotCollector {
    pub fn new(hot: Arc<Hot>) -> HotCollector {
        HotCollector {
            hot,
            descs: descs(&FAMILIES),
        }
    }
}

impl Collector for HotCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        let mut s = samples(&FAMILIES);
        for (d, row) in Destination::ALL.iter().zip(self.hot.routed_known.iter()) {
            for (reason, cell) in REASONS.iter().zip(row) {
                if let Some(c) = cell.get() {
                    s[ROUTED].counter(&[d.as_str(), reason.as_str()], c.get() as f64);
                }
            }
        }
        s[RECEIVED].counter(&[], self.hot.bytes_received.get() as f64);
        s[SENT].counter(&[], self.hot.bytes_sent.get() as f64);
        let durations = self.hot.durations.lock().unwrap_or_else(|e| e.into_inner());
        for ((group, dest, backend), h) in durations.iter() {
            s[DURATION].histogram(&[group, dest, backend], h.snapshot());
        }
        finish(s)
    }
}
