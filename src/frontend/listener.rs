//! Accepting clients: one task per client session.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn, Instrument};

use crate::config::Config;
use crate::metrics::Metrics;
use crate::reload::Reloader;
use crate::runtime::Runtime;

use super::session;

/// Everything sessions share. Read-mostly; nothing here is locked per query.
pub struct Shared {
    /// The configuration and what is built from it, replaced by a reload;
    /// see [`Shared::runtime`].
    runtime: ArcSwap<Runtime>,
    pub reloader: Reloader,
    pub tls: Option<TlsAcceptor>,
    /// The version string advertised to clients: the master's, once known.
    pub server_version: ArcSwap<String>,
    next_conn_id: AtomicU32,
    pub metrics: Arc<Metrics>,
    /// MariaDB extended capabilities of the master (0 until known).
    backend_ext: std::sync::atomic::AtomicU32,
    /// Largest packet accepted from a client.
    pub max_packet: usize,
}

/// Advertised until a backend has told us its own version. The "5.5.5-"
/// prefix is how MariaDB servers present themselves to MySQL clients.
pub const FALLBACK_VERSION: &str = "5.5.5-10.11.0-MariaDB-sluice";

impl Shared {
    /// `reloader` names the file `config` was read from.
    pub fn new(
        config: Config,
        reloader: Reloader,
        tls: Option<TlsAcceptor>,
        metrics: Arc<Metrics>,
    ) -> Shared {
        Shared {
            runtime: ArcSwap::from_pointee(Runtime::first(config)),
            reloader,
            tls,
            server_version: ArcSwap::from_pointee(FALLBACK_VERSION.to_string()),
            backend_ext: std::sync::atomic::AtomicU32::new(0),
            next_conn_id: AtomicU32::new(1),
            metrics,
            max_packet: 1 << 30,
        }
    }

    /// The newest configuration snapshot. Sessions keep theirs and move to
    /// a newer one between statements (`frontend::refresh`).
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.load_full()
    }

    /// The generation of the newest snapshot (no reference count touched:
    /// sessions ask this before every command).
    pub fn runtime_generation(&self) -> u64 {
        self.runtime.load().generation
    }

    /// Make `rt` the newest snapshot (after a reload started its monitors),
    /// and point the scrape-time metrics at it.
    pub fn publish(&self, rt: Arc<Runtime>) {
        self.metrics.retarget(&rt.topology, &rt.monitors);
        self.runtime.store(rt);
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
