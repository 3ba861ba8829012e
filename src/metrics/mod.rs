//! Prometheus metrics: one registry, typed handles, served over HTTP by
//! `metrics::http`.

pub mod http;

use prometheus::{IntCounter, IntGauge, Registry};

pub struct Metrics {
    pub registry: Registry,
    pub client_connections_open: IntGauge,
    pub client_connections_total: IntCounter,
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
        for c in [
            Box::new(client_connections_open.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(client_connections_total.clone()),
        ] {
            registry.register(c).expect("unique metric names");
        }
        Metrics {
            registry,
            client_connections_open,
            client_connections_total,
        }
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
