//! Prometheus metrics: one registry, typed handles, served over HTTP by
//! `metrics::http`.

pub mod http;

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

pub struct Metrics {
    pub registry: Registry,
    pub client_connections_open: IntGauge,
    pub client_connections_total: IntCounter,
    /// Statements by destination (master/replica) and routing reason.
    pub routed: IntCounterVec,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let client_connections_open =
            IntGauge::new("sluice_client_connections", "Client connections currently open.")
                .expect("static metric");
        let client_connections_total =
            IntCounter::new("sluice_client_connections_total", "Client connections accepted.")
                .expect("static metric");
        let routed = IntCounterVec::new(
            Opts::new(
                "sluice_routed_statements_total",
                "Statements routed, by destination (master, replica) and reason.",
            ),
            &["destination", "reason"],
        )
        .expect("static metric");
        for c in [
            Box::new(routed.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(client_connections_open.clone()),
            Box::new(client_connections_total.clone()),
        ] {
            registry.register(c).expect("unique metric names");
        }
        Metrics {
            registry,
            client_connections_open,
            client_connections_total,
            routed,
        }
    }

    /// Count one routing decision. Reasons are a fixed set of static labels.
    pub fn route(&self, to_master: bool, reason: &'static str) {
        let dest = if to_master { "master" } else { "replica" };
        self.routed.with_label_values(&[dest, reason]).inc();
    }

    pub fn client_connected(&self) {
        self.client_connections_open.inc();
        self.client_connections_total.inc();
    }

    pub fn client_disconnected(&self) {
        self.client_connections_open.dec();
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let families = self.registry.gather();
        prometheus::TextEncoder::new()
            .encode_to_string(&families)
            .unwrap_or_else(|e| format!("# encoding error: {e}\n"))
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
