//! The `limits:` section (see `mod.rs` for how settings are added).

use std::time::Duration;

use serde::Deserialize;

use super::de;

/// `limits:` — what one sluice accepts from its clients, and how long it
/// waits for them when it stops. Every field has a default (see
/// [`Limits::default`]), so the whole section is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Client sessions at once; one more gets ERR 1040 "Too many
    /// connections" instead of the greeting, as MariaDB answers beyond its
    /// `max_connections`. 1..=1000000, default 10000.
    pub max_client_connections: usize,
    /// Largest packet accepted from a client (MariaDB's `max_allowed_packet`);
    /// a larger one gets ERR 1153 and the session ends. 1K..=1G, default 64M.
    pub max_packet_size: usize,
    /// A session that sends no command for this long is closed (MariaDB's
    /// `wait_timeout`); `0s` = never. Default 8h.
    pub idle_client_timeout: Duration,
    /// On SIGTERM/SIGINT, how long running statements and open
    /// transactions may take to finish before every session is closed.
    /// Counted from when the listener closes. Default 30s.
    pub shutdown_timeout: Duration,
    /// On SIGTERM, how long sluice keeps accepting new connections (while
    /// `/readyz` already answers 503) before it closes the listener, so a
    /// load balancer stops sending first. SIGINT skips it. Default 0s.
    pub drain_delay: Duration,
    /// After the listener closed, how long sessions without a transaction
    /// are left to their clients: such a session is closed only once it has
    /// been idle for a moment (its client is not about to reuse it), so a
    /// pool that retires connections by age (Go's `SetConnMaxLifetime`,
    /// HikariCP's `maxLifetime`) moves every connection without an error.
    /// Past it (capped at `shutdown_timeout`) each is closed right after its
    /// next answer. `0s`: at once. Default 10s.
    pub shutdown_wait_for_clients: Duration,
    /// A client must finish its handshake (greeting to authenticated, and
    /// each COM_CHANGE_USER exchange) within this time. Greater than zero;
    /// default 5s.
    pub handshake_timeout: Duration,
    /// Connections still in their handshake, in total. They do not count
    /// against `max_client_connections` (a place there is taken once a
    /// client is authenticated), so silent sockets cannot lock logins out.
    /// One more gets ERR 1040 at once. 1..=1000000, default 1024.
    pub max_unauthenticated: usize,
    /// Connections still in their handshake from one IP address; one more
    /// gets ERR 1040 at once. 1..=1000000, default 128.
    pub max_unauthenticated_per_address: usize,
    /// Longest a statement waits behind an operator's `PAUSE` before it
    /// gets ERR 1205 (see docs/operations.md). Greater than zero; default 30s.
    pub pause_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_client_connections: 10_000,
            max_packet_size: 64 << 20,
            idle_client_timeout: Duration::from_secs(8 * 3600),
            shutdown_timeout: Duration::from_secs(30),
            drain_delay: Duration::ZERO,
            shutdown_wait_for_clients: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(5),
            max_unauthenticated: 1024,
            max_unauthenticated_per_address: 128,
            pause_timeout: Duration::from_secs(30),
        }
    }
}

/// `limits:`; defaults are those of [`Limits::default`].
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { max_client_connections: 10000, idle_client_timeout: 8h }"
)]
pub(super) struct RawLimits {
    #[serde(
        default = "default_max_client_connections",
        deserialize_with = "de::bounded::<usize, 1, 1000000, _>"
    )]
    max_client_connections: usize,
    #[serde(
        default = "default_max_packet_size",
        deserialize_with = "de::parse::<de::PacketSize, _>"
    )]
    max_packet_size: usize,
    #[serde(
        default = "default_idle_client_timeout",
        deserialize_with = "de::parse::<de::AnyDuration, _>"
    )]
    idle_client_timeout: Duration,
    #[serde(
        default = "default_shutdown_timeout",
        deserialize_with = "de::parse::<de::AnyDuration, _>"
    )]
    shutdown_timeout: Duration,
    #[serde(default, deserialize_with = "de::parse::<de::AnyDuration, _>")]
    drain_delay: Duration,
    #[serde(
        default = "default_shutdown_wait_for_clients",
        deserialize_with = "de::parse::<de::AnyDuration, _>"
    )]
    shutdown_wait_for_clients: Duration,
    #[serde(
        default = "default_handshake_timeout",
        deserialize_with = "de::parse::<de::Timeout, _>"
    )]
    handshake_timeout: Duration,
    #[serde(
        default = "default_max_unauthenticated",
        deserialize_with = "de::bounded::<usize, 1, 1000000, _>"
    )]
    max_unauthenticated: usize,
    #[serde(
        default = "default_max_unauthenticated_per_address",
        deserialize_with = "de::bounded::<usize, 1, 1000000, _>"
    )]
    max_unauthenticated_per_address: usize,
    #[serde(
        default = "default_pause_timeout",
        deserialize_with = "de::parse::<de::Timeout, _>"
    )]
    pause_timeout: Duration,
}

fn default_pause_timeout() -> Duration {
    Limits::default().pause_timeout
}

impl Default for RawLimits {
    fn default() -> Self {
        let l = Limits::default();
        RawLimits {
            max_client_connections: l.max_client_connections,
            max_packet_size: l.max_packet_size,
            idle_client_timeout: l.idle_client_timeout,
            shutdown_timeout: l.shutdown_timeout,
            drain_delay: l.drain_delay,
            shutdown_wait_for_clients: l.shutdown_wait_for_clients,
            handshake_timeout: l.handshake_timeout,
            max_unauthenticated: l.max_unauthenticated,
            max_unauthenticated_per_address: l.max_unauthenticated_per_address,
            pause_timeout: l.pause_timeout,
        }
    }
}

fn default_handshake_timeout() -> Duration {
    Limits::default().handshake_timeout
}

fn default_max_unauthenticated() -> usize {
    Limits::default().max_unauthenticated
}

fn default_max_unauthenticated_per_address() -> usize {
    Limits::default().max_unauthenticated_per_address
}

fn default_max_client_connections() -> usize {
    Limits::default().max_client_connections
}

fn default_max_packet_size() -> usize {
    Limits::default().max_packet_size
}

fn default_idle_client_timeout() -> Duration {
    Limits::default().idle_client_timeout
}

fn default_shutdown_wait_for_clients() -> Duration {
    Limits::default().shutdown_wait_for_clients
}

fn default_shutdown_timeout() -> Duration {
    Limits::default().shutdown_timeout
}

impl From<RawLimits> for Limits {
    fn from(raw: RawLimits) -> Self {
        Limits {
            max_client_connections: raw.max_client_connections,
            max_packet_size: raw.max_packet_size,
            idle_client_timeout: raw.idle_client_timeout,
            shutdown_timeout: raw.shutdown_timeout,
            drain_delay: raw.drain_delay,
            shutdown_wait_for_clients: raw.shutdown_wait_for_clients,
            handshake_timeout: raw.handshake_timeout,
            max_unauthenticated: raw.max_unauthenticated,
            max_unauthenticated_per_address: raw.max_unauthenticated_per_address,
            pause_timeout: raw.pause_timeout,
        }
    }
}
