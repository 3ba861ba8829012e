//! The follower's metrics, computed at scrape time from its last views.

use std::sync::{Arc, Weak};

use prometheus::core::{Collector, Desc};
use prometheus::proto::{self, MetricType};
use tracing::warn;

use crate::metrics::family::{descs, family, finish, samples, Family};

use super::Follower;

const ELIGIBLE: usize = 0;
const REASON: usize = 1;
const CHANGES: usize = 2;
const LOST: usize = 3;
const WRITABLE: usize = 4;

static FAMILIES: [Family; 5] = [
    family(
        "sluice_replica_eligible",
        "1 when the replica may serve reads by its replication state: IO and SQL threads running, \
         replicating from the current master, and the current counter generation (#epoch) applied; \
         else 0 (the reason is in sluice_replica_eligibility). `replica` is the server's address.",
        MetricType::GAUGE,
        &["group", "replica"],
    ),
    family(
        "sluice_replica_eligibility",
        "Always 1, for the replica's current eligibility reason (eligible, io_thread_stopped, \
         sql_thread_stopped, replicates_from_another_master, not_replicating, unreachable, \
         epoch_not_applied, replication_unverified, not_probed_yet).",
        MetricType::GAUGE,
        &["group", "replica", "reason"],
    ),
    family(
        "sluice_master_changes_total",
        "Changes of the group's master sluice followed or was told of (POST /v1/master).",
        MetricType::COUNTER,
        &["group"],
    ),
    family(
        "sluice_failover_lost_transactions_total",
        "Transactions the old master had acknowledged (its last seen gtid_binlog_pos) that the new \
         master had not applied when sluice switched to it: writes the promotion lost.",
        MetricType::COUNTER,
        &["group"],
    ),
    family(
        "sluice_topology_writable_servers",
        "Servers of the group that are reachable, read_only=0 and not replicating (more than 1: \
         no master, writes are refused).",
        MetricType::GAUGE,
        &["group"],
    ),
];

struct FollowCollector {
    follower: Weak<Follower>,
    descs: Vec<Desc>,
}

pub(super) fn register(follower: &Arc<Follower>) {
    let c = FollowCollector {
        follower: Arc::downgrade(follower),
        descs: descs(&FAMILIES),
    };
    let metrics = &follower.reloader.shared().metrics;
    if let Err(e) = metrics.registry.register(Box::new(c)) {
        warn!(error = %e, "cannot register the topology metrics");
    }
}

impl Collector for FollowCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<proto::MetricFamily> {
        let mut s = samples(&FAMILIES);
        let Some(follower) = self.follower.upgrade() else {
            return Vec::new();
        };
        for g in follower.views.load().iter() {
            let group = g.group.as_str();
            s[CHANGES].counter(&[group], g.master_changes as f64);
            s[LOST].counter(&[group], g.lost_transactions as f64);
            s[WRITABLE].gauge(&[group], g.writable.len() as f64);
            for v in g.servers.iter().filter(|v| v.role != "master") {
                let key = [group, v.addr.as_str()];
                let eligible = v.reason == "eligible";
                s[ELIGIBLE].gauge(&key, f64::from(u8::from(eligible)));
                s[REASON].gauge(&[group, v.addr.as_str(), v.reason.as_str()], 1.0);
            }
        }
        finish(s)
    }
}
