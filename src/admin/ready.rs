//! `/readyz`: may a load balancer send this sluice new clients?
//!
//! - Never while it stops (`Shared::draining`, set at the first SIGTERM or
//!   SIGINT, before the listener closes), so the Service or the balancer
//!   stops sending before connections would be refused.
//! - Otherwise every backend group must have a reachable server that can
//!   serve it: a replica in rotation (its last probe succeeded, no I/O
//!   here), else its master (a connection and a ping). A master outage then
//!   does not take every sluice out of its Service at once while replicas
//!   can serve reads. In `strict` freshness mode a replica serves no read
//!   without a master probe, so the master is required there, as it is for
//!   every group with `readiness.require_master: true` (the rule before).

use std::sync::atomic::Ordering;

use crate::backend::PoolKey;
use crate::config::FreshnessMode;
use crate::frontend::Shared;

/// `Ok`: ready. `Err`: why not, one phrase per failing group.
pub async fn check(shared: &Shared) -> Result<(), String> {
    if shared.draining.load(Ordering::Acquire) {
        return Err("draining: sluice is shutting down".to_owned());
    }
    let rt = shared.runtime();
    let require_master = rt.config.readiness.require_master;
    let mut failures = Vec::new();
    for (group, monitor) in rt.topology.groups.iter().zip(&rt.monitors) {
        let master_needed = require_master || monitor.mode == FreshnessMode::Strict;
        if !master_needed && monitor.replicas.iter().any(|r| r.in_rotation()) {
            continue;
        }
        let reached = match group.master.get(PoolKey::sluice_own()).await {
            Ok(mut c) => c.ping().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = reached {
            let why = if master_needed {
                ""
            } else {
                "; no replica in rotation"
            };
            failures.push(format!(
                "group {}: master {}: {e}{why}",
                group.name, group.master.label
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
