//! `groups[].topology` and `topology:`: whether sluice follows a master
//! that an external tool promotes (see `crate::follow`).

use std::time::Duration;

use serde::Deserialize;

use super::de;

/// `groups[].topology`: who the group's master is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`static` or `follow`")]
pub enum TopologyMode {
    /// The configured `master` is the master (sluice's behaviour before
    /// `follow`); it changes only by a reload or `POST /v1/master`.
    #[default]
    Static,
    /// `master` and `replicas` are candidates; the master is the one that is
    /// writable and not replicating (sticky), discovered by probes.
    Follow,
}

/// `topology:` — how the servers' roles and replication are probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologySettings {
    /// How often every server's `read_only`, `server_id`, GTID positions and
    /// `SHOW ALL SLAVES STATUS` are read. Default 1s.
    pub interval: Duration,
}

impl Default for TopologySettings {
    fn default() -> Self {
        TopologySettings {
            interval: Duration::from_secs(1),
        }
    }
}

/// `topology:` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping such as { interval: 1s }")]
pub(super) struct RawTopology {
    #[serde(
        default = "default_interval",
        deserialize_with = "de::parse::<de::Interval, _>"
    )]
    interval: Duration,
}

fn default_interval() -> Duration {
    TopologySettings::default().interval
}

impl Default for RawTopology {
    fn default() -> Self {
        RawTopology {
            interval: default_interval(),
        }
    }
}

impl From<RawTopology> for TopologySettings {
    fn from(raw: RawTopology) -> Self {
        TopologySettings {
            interval: raw.interval,
        }
    }
}
