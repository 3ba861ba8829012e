//! Prometheus metrics: one registry, typed handles, served over HTTP by
//! the admin endpoint (`crate::admin`).
//!
//! Hot-path cost: every per-statement call below resolves its series once
//! (label handles kept in arrays indexed by small enums or backend index)
//! and then costs a few relaxed atomic adds, to cells of the calling thread
//! (`hot.rs`, `sharded.rs`: no cache line that other cores' statements
//! write); nothing is allocated or looked up by label strings per statement. Per-replica and per-pool values are not
//! pushed at all: the admin endpoint's collector (`admin::topology`) reads the freshness
//! monitors' and pools' atomics when Prometheus scrapes.
//!
//! Labels are bounded: group and backend names come from the configuration,
//! destinations, reasons and error kinds are fixed sets. Never SQL text or
//! client addresses.

pub mod family;
mod hot;
pub mod slow;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use prometheus::{Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry};

use crate::protocol::consts::{errcode, MAX_FRAME};
use crate::router::plan::RouteReason;
use crate::stats::ShardedHistogram;

/// Where a statement went (the `destination` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Master,
    Replica,
    /// Several shards (fan-out and merge).
    Shards,
}

impl Destination {
    pub const ALL: [Destination; 3] = [Destination::Master, Destination::Replica, Destination::Shards];

    pub fn as_str(self) -> &'static str {
        match self {
            Destination::Master => "master",
            Destination::Replica => "replica",
            Destination::Shards => "shards",
        }
    }
}

/// Errors by kind (the `kind` label of `sluice_errors_total`): errors sent
/// to clients, and client protocol violations that end a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A backend could not be connected to (connect error, timeout, pool).
    BackendUnreachable,
    /// A backend connection broke during a command.
    BackendLost,
    /// A client login or COM_CHANGE_USER was refused.
    AccessDenied,
    /// A client broke the protocol (bad handshake, malformed or oversized
    /// packet, unknown statement id).
    ClientProtocol,
    /// A command sluice does not support.
    UnknownCommand,
    /// The backend answered with an error (syntax, constraint, unknown
    /// database, ...), or sluice refused the statement as a server would.
    ServerError,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::BackendUnreachable,
        ErrorKind::BackendLost,
        ErrorKind::AccessDenied,
        ErrorKind::ClientProtocol,
        ErrorKind::UnknownCommand,
        ErrorKind::ServerError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::BackendUnreachable => "backend_unreachable",
            ErrorKind::BackendLost => "backend_lost",
            ErrorKind::AccessDenied => "access_denied",
            ErrorKind::ClientProtocol => "client_protocol",
            ErrorKind::UnknownCommand => "unknown_command",
            ErrorKind::ServerError => "server_error",
        }
    }

    /// The kind of an error packet sluice sends, by its MySQL error code
    /// (`crate::error` is where sluice picks those codes).
    pub fn from_code(code: u16) -> ErrorKind {
        match code {
            errcode::ER_CONNECT_TO_FOREIGN_DATA_SOURCE => ErrorKind::BackendUnreachable,
            errcode::ER_NET_READ_ERROR => ErrorKind::BackendLost,
            errcode::ER_ACCESS_DENIED_ERROR => ErrorKind::AccessDenied,
            errcode::ER_UNKNOWN_COM_ERROR => ErrorKind::UnknownCommand,
            errcode::ER_HANDSHAKE_ERROR
            | errcode::ER_NET_PACKET_TOO_LARGE
            | errcode::ER_UNKNOWN_STMT_HANDLER
            | errcode::ER_NOT_SUPPORTED_AUTH_MODE
            | errcode::ER_MALFORMED_PACKET
            | errcode::ER_SECURE_TRANSPORT_REQUIRED => ErrorKind::ClientProtocol,
            _ => ErrorKind::ServerError,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Every routing reason, the labels of `sluice_routed_statements_total`:
/// each has a pre-resolved counter cell (`hot.rs`), indexed by
/// `reason as usize`.
pub const REASONS: [RouteReason; RouteReason::ALL.len()] = RouteReason::ALL;

/// Which backend of a group: 0 the master, 1 + i replica i (what
/// `backend::Conn` converts to, so this layer needs no backend types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendIndex(pub usize);

/// Statement latency buckets (seconds): 100 µs to 10 s.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Shard fan-out buckets (number of shards a statement went to).
pub const FANOUT_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0, 128.0];

/// Pre-resolved series of one backend.
struct BackendHandles {
    /// The pool's label, e.g. "main replica0 127.0.0.1:3307" (for the
    /// slow-query log, never a metric label).
    label: String,
    destination: Destination,
    latency: Arc<ShardedHistogram>,
}

pub struct Metrics {
    pub registry: Registry,
    pub client_connections_open: IntGauge,
    pub client_connections_total: IntCounter,
    pub client_connections_refused: IntCounter,
    /// Sessions closed after `limits.idle_client_timeout` without a command.
    idle_sessions_closed: IntCounter,
    /// What every statement updates: routes, client bytes, latency
    /// (cells per thread, see `hot.rs`).
    hot: Arc<hot::Hot>,
    /// Sessions pinned to their backend connection, by reason.
    session_pins: IntCounterVec,
    /// Logins by account (bounded label set, see `account_login`).
    account_logins: IntCounterVec,
    account_labels: std::sync::Mutex<std::collections::HashSet<String>>,
    errors: [IntCounter; ErrorKind::ALL.len()],
    /// [group][0 = master, 1 + i = replica i] of the running topology, set
    /// by [`Metrics::retarget`]. (A session still on
    /// the snapshot before a reload that moved replicas records a statement
    /// or two under the new positions' labels.)
    backends: ArcSwap<Vec<Vec<BackendHandles>>>,
    shard_fanout: Histogram,
    merged_rows: IntCounter,
    /// Configuration reloads by result ([ok, error]).
    reloads: [IntCounter; 2],
    generation: IntGauge,
}

fn counter(name: &str, help: &str) -> IntCounter {
    IntCounter::new(name, help).expect("static metric")
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let client_connections_open = IntGauge::new(
            "sluice_client_connections_open",
            "Client connections currently open (logging in or logged in).",
        )
        .expect("static metric");
        let client_connections_total = counter(
            "sluice_client_connections_total",
            "Client TCP connections accepted.",
        );
        let client_connections_refused = counter(
            "sluice_client_connections_refused_total",
            "Client connections that never completed the login: access denied, handshake errors, \
             or timeouts and disconnects during the handshake.",
        );
        let idle_sessions_closed = counter(
            "sluice_client_idle_timeouts_total",
            "Client sessions closed because they sent no command for limits.idle_client_timeout.",
        );
        let hot = Arc::new(hot::Hot::new());
        let account_logins = IntCounterVec::new(
            Opts::new(
                "sluice_account_logins_total",
                "Client logins by account (user name) and result (ok, denied). Accounts get a label of \
                 their own up to auth.max_account_labels; later ones count as account=\"other\"; \
                 denied logins always count as account=\"-\" (names from unauthenticated clients are \
                 never labels).",
            ),
            &["account", "result"],
        )
        .expect("static metric");
        let session_pins = IntCounterVec::new(
            Opts::new(
                "sluice_session_pins_total",
                "Times a client session started keeping its backend connection between statements \
                 (no multiplexing until the state is gone), by reason: temporary_table, \
                 user_variable, lock_tables, named_lock, session_state, set_option, \
                 connection_state, next_transaction.",
            ),
            &["reason"],
        )
        .expect("static metric");
        let errors_vec = IntCounterVec::new(
            Opts::new(
                "sluice_errors_total",
                "Errors sent to clients, and client protocol violations, by kind.",
            ),
            &["kind"],
        )
        .expect("static metric");
        // Every kind exists from the start, at 0: a rate of errors is then 0,
        // not "no data".
        let errors = ErrorKind::ALL.map(|k| errors_vec.with_label_values(&[k.as_str()]));
        let shard_fanout = Histogram::with_opts(
            HistogramOpts::new(
                "sluice_shard_fanout",
                "Number of shards a sharded statement was sent to.",
            )
            .buckets(FANOUT_BUCKETS.to_vec()),
        )
        .expect("static metric");
        let merged_rows = counter(
            "sluice_merged_rows_total",
            "Rows read from shards by the cross-shard merge.",
        );
        let reloads_vec = IntCounterVec::new(
            Opts::new(
                "sluice_config_reloads_total",
                "Configuration reloads (SIGHUP or POST /reload), by result: ok, or error (the file \
                 was rejected and the running configuration kept).",
            ),
            &["result"],
        )
        .expect("static metric");
        let reloads = ["ok", "error"].map(|r| reloads_vec.with_label_values(&[r]));
        let generation = IntGauge::new(
            "sluice_config_generation",
            "Generation of the running configuration: 1 at startup, +1 per reload that changed it.",
        )
        .expect("static metric");
        generation.set(1);
        for c in [
            Box::new(hot::HotCollector::new(hot.clone())) as Box<dyn prometheus::core::Collector>,
            Box::new(session_pins.clone()),
            Box::new(account_logins.clone()),
            Box::new(reloads_vec),
            Box::new(generation.clone()),
            Box::new(client_connections_open.clone()),
            Box::new(client_connections_total.clone()),
            Box::new(client_connections_refused.clone()),
            Box::new(idle_sessions_closed.clone()),
            Box::new(errors_vec),
            Box::new(shard_fanout.clone()),
            Box::new(merged_rows.clone()),
        ] {
            registry.register(c).expect("unique metric names");
        }
        Metrics {
            registry,
            client_connections_open,
            client_connections_total,
            client_connections_refused,
            idle_sessions_closed,
            hot,
            session_pins,
            account_logins,
            account_labels: Default::default(),
            errors,
            backends: ArcSwap::from_pointee(Vec::new()),
            shard_fanout,
            merged_rows,
            reloads,
            generation,
        }
    }

    /// Point the per-backend series at the running topology (at startup and
    /// after a reload): per group its name and its backends' pool labels,
    /// the master's first, then each replica's (`backend::Topology::labels`).
    pub fn retarget<'a>(&self, groups: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>) {
        let handles = groups
            .into_iter()
            .map(|(group, labels)| {
                labels
                    .iter()
                    .enumerate()
                    .map(|(i, label)| {
                        let (destination, backend) = match i {
                            0 => (Destination::Master, "master".to_owned()),
                            _ => (Destination::Replica, family::replica_name(i - 1)),
                        };
                        BackendHandles {
                            label: (*label).to_owned(),
                            destination,
                            latency: self.hot.duration(group, destination, &backend),
                        }
                    })
                    .collect()
            })
            .collect();
        self.backends.store(Arc::new(handles));
    }

    /// A configuration reload finished; `generation` is the one now running.
    pub fn config_reloaded(&self, ok: bool, generation: u64) {
        self.reloads[usize::from(!ok)].inc();
        self.generation.set(i64::try_from(generation).unwrap_or(i64::MAX));
    }

    /// Count one routing decision to the master or a replica.
    pub fn route(&self, to_master: bool, reason: RouteReason) {
        let dest = if to_master {
            Destination::Master
        } else {
            Destination::Replica
        };
        self.route_to(dest, reason);
    }

    /// Count one routing decision: an atomic add to the calling thread's
    /// cell.
    pub fn route_to(&self, dest: Destination, reason: RouteReason) {
        self.hot.route(dest, reason);
    }

    /// A command relayed by backend `conn` of group `group` completed
    /// (`failed`: the backend answered with an error). Records its latency
    /// and logs it when it took at least `slow_query` (0 = never).
    pub fn command_done(
        &self,
        group: usize,
        conn: impl Into<BackendIndex>,
        started: Instant,
        failed: bool,
        payload: &[u8],
        slow_query: Duration,
    ) {
        let elapsed = started.elapsed();
        let BackendIndex(index) = conn.into();
        let backends = self.backends.load();
        let backend = backends.get(group).and_then(|b| b.get(index));
        if let Some(b) = backend {
            b.latency.observe(elapsed);
        }
        if failed {
            self.error(ErrorKind::ServerError);
        }
        if !slow_query.is_zero() && elapsed >= slow_query {
            let (dest, label) = match (backend, index) {
                (Some(b), _) => (b.destination, b.label.as_str()),
                (None, 0) => (Destination::Master, ""),
                (None, _) => (Destination::Replica, ""),
            };
            slow::log(elapsed, dest.as_str(), label, payload);
        }
    }

    pub fn error(&self, kind: ErrorKind) {
        self.errors[kind.index()].inc();
    }

    /// A client broke the protocol after logging in (the session ends).
    pub fn client_protocol_error(&self) {
        self.error(ErrorKind::ClientProtocol);
    }

    /// An error packet with MySQL error `code` was sent to a client.
    pub fn error_code(&self, code: u16) {
        self.error(ErrorKind::from_code(code));
    }

    /// The login was refused with error `code` (sent to the client).
    pub fn login_refused(&self, code: u16) {
        self.client_connections_refused.inc();
        self.error_code(code);
    }

    /// The handshake failed without a refusal. A client that broke the
    /// protocol also counts as a `client_protocol` error; a timeout or a
    /// plain disconnect does not.
    pub fn handshake_failed(&self, client_broke_protocol: bool) {
        self.client_connections_refused.inc();
        if client_broke_protocol {
            self.error(ErrorKind::ClientProtocol);
        }
    }

    /// A session was closed for idling longer than `limits.idle_client_timeout`.
    /// A session pinned itself to its backend connection for `reason`.
    /// A login of `account` (ok) or a refused one (`None`). At most
    /// `max_labels` accounts get a label; the rest are "other". Per login,
    /// not per statement, so a lock is fine here.
    pub fn account_login(&self, account: Option<&str>, max_labels: usize) {
        let Some(name) = account else {
            self.account_logins.with_label_values(&["-", "denied"]).inc();
            return;
        };
        let labelled = match self.account_labels.lock() {
            Ok(mut set) => {
                if set.contains(name) {
                    true
                } else if set.len() < max_labels {
                    set.insert(name.to_owned());
                    true
                } else {
                    false
                }
            }
            Err(_) => false,
        };
        let label = if labelled { name } else { "other" };
        self.account_logins.with_label_values(&[label, "ok"]).inc();
    }

    pub fn session_pinned(&self, reason: &'static str) {
        self.session_pins.with_label_values(&[reason]).inc();
    }

    pub fn idle_session_closed(&self) {
        self.idle_sessions_closed.inc();
    }

    pub fn client_connected(&self) {
        self.client_connections_open.inc();
        self.client_connections_total.inc();
    }

    pub fn client_disconnected(&self) {
        self.client_connections_open.dec();
    }

    /// A client packet with a payload of `len` bytes was read.
    pub fn client_bytes_in(&self, len: usize) {
        self.hot.bytes_received.inc_by(framed_len(len));
    }

    /// A packet with a payload of `len` bytes was written to a client.
    pub fn client_bytes_out(&self, len: usize) {
        self.hot.bytes_sent.inc_by(framed_len(len));
    }

    /// Bytes of a backend response relayed to the client (already framed).
    pub fn relayed_bytes_out(&self, bytes: u64) {
        self.hot.bytes_sent.inc_by(bytes);
    }

    /// A sharded statement was sent to `shards` shards (called by the
    /// sharding layer; counts the routing decision too).
    pub fn shard_fanout(&self, shards: usize, reason: RouteReason) {
        self.shard_fanout.observe(shards as f64);
        self.route_to(Destination::Shards, reason);
    }

    /// The cross-shard merge read `rows` rows from shards.
    pub fn merged_rows(&self, rows: u64) {
        self.merged_rows.inc_by(rows);
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let families = self.registry.gather();
        prometheus::TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_else(|e| format!("# encoding error: {e}\n"))
    }
}

/// Bytes on the wire for a payload of `len`: 4-byte header per frame of at
/// most 16 MiB - 1 (a payload of exactly a multiple gets an empty last frame).
fn framed_len(len: usize) -> u64 {
    (len + 4 * (len / MAX_FRAME + 1)) as u64
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_has_its_cell_and_label() {
        for (i, r) in REASONS.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r}");
        }
        let labels: std::collections::BTreeSet<_> = REASONS.iter().map(|r| r.as_str()).collect();
        assert_eq!(labels.len(), REASONS.len(), "two reasons share a label");
    }

    #[test]
    fn routes_and_errors_are_exported() {
        let m = Metrics::new();
        m.route(true, RouteReason::Write);
        m.route(true, RouteReason::Write);
        m.route(false, RouteReason::FreshReplica);
        m.route(true, RouteReason::PreviousStatement);
        m.error_code(errcode::ER_NET_READ_ERROR);
        m.login_refused(errcode::ER_ACCESS_DENIED_ERROR);
        m.client_bytes_in(10);
        m.shard_fanout(3, RouteReason::Sharded);
        m.merged_rows(7);
        let text = m.render();
        for line in [
            "sluice_routed_statements_total{destination=\"master\",reason=\"write\"} 2",
            "sluice_routed_statements_total{destination=\"replica\",reason=\"fresh_replica\"} 1",
            "sluice_routed_statements_total{destination=\"master\",reason=\"previous_statement\"} 1",
            "sluice_routed_statements_total{destination=\"shards\",reason=\"sharded\"} 1",
            "sluice_errors_total{kind=\"backend_lost\"} 1",
            "sluice_errors_total{kind=\"access_denied\"} 1",
            "sluice_errors_total{kind=\"unknown_command\"} 0",
            "sluice_client_connections_refused_total 1",
            "sluice_client_received_bytes_total 14",
            "sluice_shard_fanout_count 1",
            "sluice_merged_rows_total 7",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn error_codes_map_to_kinds() {
        assert_eq!(ErrorKind::from_code(1429), ErrorKind::BackendUnreachable);
        assert_eq!(ErrorKind::from_code(1158), ErrorKind::BackendLost);
        assert_eq!(ErrorKind::from_code(1045), ErrorKind::AccessDenied);
        assert_eq!(ErrorKind::from_code(1047), ErrorKind::UnknownCommand);
        assert_eq!(ErrorKind::from_code(1153), ErrorKind::ClientProtocol);
        assert_eq!(ErrorKind::from_code(1049), ErrorKind::ServerError);
        for (i, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(k.index(), i);
        }
    }

    #[test]
    fn framing_overhead() {
        assert_eq!(framed_len(0), 4);
        assert_eq!(framed_len(7), 11);
        assert_eq!(framed_len(MAX_FRAME), (MAX_FRAME + 8) as u64);
    }
}
