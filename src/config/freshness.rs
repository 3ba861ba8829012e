//! The `freshness:` section as read from the file.

use std::time::Duration;

use serde::Deserialize;

use super::de;
use super::{Freshness, FreshnessMode};

/// `freshness:`; defaults are those of [`Freshness::default`].
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { mode: causal, probe_interval: 50ms }"
)]
pub(super) struct RawFreshness {
    #[serde(default)]
    mode: RawFreshnessMode,
    #[serde(
        default = "default_schema",
        deserialize_with = "de::parse::<de::SchemaName, _>"
    )]
    schema: String,
    #[serde(
        default = "default_slots",
        deserialize_with = "de::bounded::<u16, 1, 1024, _>"
    )]
    slots: u16,
    #[serde(
        default = "default_probe_interval",
        deserialize_with = "de::parse::<de::Interval, _>"
    )]
    probe_interval: Duration,
    #[serde(
        default = "default_probe_timeout",
        deserialize_with = "de::parse::<de::Timeout, _>"
    )]
    probe_timeout: Duration,
    #[serde(default, deserialize_with = "de::parse::<de::AnyDuration, _>")]
    max_wait: Duration,
    #[serde(default = "default_rise", deserialize_with = "de::positive")]
    rise: u32,
    #[serde(default = "default_fall", deserialize_with = "de::positive")]
    fall: u32,
    /// Absent: detect from the account's grants.
    #[serde(default)]
    auto_install: Option<bool>,
}

impl Default for RawFreshness {
    fn default() -> Self {
        RawFreshness {
            mode: RawFreshnessMode::default(),
            schema: default_schema(),
            slots: default_slots(),
            probe_interval: default_probe_interval(),
            probe_timeout: default_probe_timeout(),
            max_wait: Duration::ZERO,
            rise: default_rise(),
            fall: default_fall(),
            auto_install: None,
        }
    }
}

fn default_schema() -> String {
    Freshness::default().schema
}

fn default_slots() -> u16 {
    Freshness::default().slots
}

fn default_probe_interval() -> Duration {
    Freshness::default().probe_interval
}

fn default_probe_timeout() -> Duration {
    Freshness::default().probe_timeout
}

fn default_rise() -> u32 {
    Freshness::default().rise
}

fn default_fall() -> u32 {
    Freshness::default().fall
}

impl From<RawFreshness> for Freshness {
    fn from(raw: RawFreshness) -> Self {
        let mode = match raw.mode {
            RawFreshnessMode::Strict => FreshnessMode::Strict,
            RawFreshnessMode::Causal => FreshnessMode::Causal,
            RawFreshnessMode::Off => FreshnessMode::Off,
        };
        Freshness {
            mode,
            schema: raw.schema,
            slots: raw.slots,
            probe_interval: raw.probe_interval,
            probe_timeout: raw.probe_timeout,
            max_wait: raw.max_wait,
            rise: raw.rise,
            fall: raw.fall,
            auto_install: raw.auto_install,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "lowercase", expecting = "strict, causal or off")]
enum RawFreshnessMode {
    Strict,
    #[default]
    Causal,
    Off,
}
