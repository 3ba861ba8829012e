//! Accepting clients: one task per client session.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn, Instrument};

use crate::backend::Topology;
use crate::config::Config;
use crate::freshness::monitor::GroupMonitor;
use crate::metrics::Metrics;

use super::session;

/// Everything sessions share. Read-mostly; nothing here is locked per query.
pub struct Shared {
    pub config: Config,
    pub topology: Topology,
    pub tls: Option<TlsAcceptor>,
    /// The version string advertised to clients: the master's, once known.
    pub server_version: ArcSwap<String>,
    next_conn_id: AtomicU32,
    pub metrics: Arc<Metrics>,
    /// Sharded tables (empty: sharding off).
    pub shard_rules: crate::shard::ShardRules,
    /// Freshness state per backend group (same order as `topology.groups`).
    pub monitors: Vec<Arc<GroupMonitor>>,
    /// MariaDB extended capabilities of the master (0 until known).
    backend_ext: std::sync::atomic::AtomicU32,
    /// Largest packet accepted from a client.
    pub max_packet: usize,
}

/// Advertised until a backend has told us its own version. The "5.5.5-"
/// prefix is how MariaDB servers present themselves to MySQL clients.
pub const FALLBACK_VERSION: &str = "5.5.5-10.11.0-MariaDB-sluice";

impl Shared {
    pub fn new(config: Config, tls: Option<TlsAcceptor>, metrics: Arc<Metrics>) -> Shared {
        let topology = Topology::from_config(&config);
        let shard_rules = config.sharding.rules.clone();
        let monitors = config
            .groups
            .iter()
            .map(|g| GroupMonitor::new(g, &config.freshness))
            .collect();
        Shared {
            config,
            topology,
            tls,
            server_version: ArcSwap::from_pointee(FALLBACK_VERSION.to_string()),
            backend_ext: std::sync::atomic::AtomicU32::new(0),
            next_conn_id: AtomicU32::new(1),
            metrics,
            monitors,
            shard_rules,
            max_packet: 1 << 30,
        }
    }

    /// Record the master's MariaDB extended capabilities.
    pub fn learn_backend_ext(&self, ext: u32) {
        self.backend_ext.store(ext, Ordering::Relaxed);
    }

    /// The MariaDB extended capabilities sluice offers clients: those it can
    /// relay that the master has.
    pub fn offered_ext(&self) -> u32 {
        self.backend_ext.load(Ordering::Relaxed) & crate::protocol::consts::MARIADB_RELAYED_EXT
    }

    pub fn next_conn_id(&self) -> u32 {
        // Never 0: some clients treat a zero thread id as "unknown".
        loop {
            let id = self.next_conn_id.fetch_add(1, Ordering::Relaxed);
            if id != 0 {
                return id;
            }
        }
    }
}

/// Accept clients until the listener fails fatally.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: keep serving existing clients, retry.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        let conn_id = shared.next_conn_id();
        let shared = shared.clone();
        let span = tracing::info_span!("conn", id = conn_id);
        tokio::spawn(
            async move {
                shared.metrics.client_connected();
                session::run(socket, peer, conn_id, shared.clone()).await;
                shared.metrics.client_disconnected();
            }
            .instrument(span),
        );
    }
}

pub fn log_listening(addr: &std::net::SocketAddr) {
    info!(%addr, "listening for MySQL clients");
}
