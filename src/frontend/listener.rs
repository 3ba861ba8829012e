//! Accepting clients: one task per client session.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::BytesMut;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn, Instrument};

use crate::backend::Topology;
use crate::config::Config;
use crate::error;
use crate::freshness::monitor::GroupMonitor;
use crate::metrics::Metrics;
use crate::protocol::codec::queue_frames;

use super::limits::{ClientSlots, UserLimits};
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
    /// Largest packet accepted from a client (`limits.max_packet_size`).
    pub max_packet: usize,
    /// Places for client sessions (`limits.max_client_connections`).
    pub clients: ClientSlots,
    /// Sessions per user (`users[].max_connections`).
    pub user_limits: UserLimits,
    /// Cancelled on SIGTERM/SIGINT: stop accepting, close idle sessions.
    pub shutdown: CancellationToken,
}

/// Advertised until a backend has told us its own version. The "5.5.5-"
/// prefix is how MariaDB servers present themselves to MySQL clients.
pub const FALLBACK_VERSION: &str = "5.5.5-10.11.0-MariaDB-sluice";

impl Shared {
    /// Fails when a backend's TLS files cannot be used.
    pub fn new(
        config: Config,
        tls: Option<TlsAcceptor>,
        metrics: Arc<Metrics>,
    ) -> Result<Shared, crate::error::Error> {
        let topology = Topology::from_config(&config).map_err(crate::error::Error::Tls)?;
        let shard_rules = config.sharding.rules.clone();
        let monitors = config
            .groups
            .iter()
            .map(|g| GroupMonitor::new(g, &config))
            .collect();
        Ok(Shared {
            topology,
            tls,
            server_version: ArcSwap::from_pointee(FALLBACK_VERSION.to_string()),
            backend_ext: std::sync::atomic::AtomicU32::new(0),
            next_conn_id: AtomicU32::new(1),
            metrics,
            monitors,
            shard_rules,
            max_packet: config.limits.max_packet_size,
            clients: ClientSlots::new(config.limits.max_client_connections),
            user_limits: UserLimits::new(&config.users),
            shutdown: CancellationToken::new(),
            config,
        })
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

/// Accept clients until sluice shuts down (`shared.shutdown`); the
/// listener is closed on return, so new connections are refused.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (socket, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: keep serving existing clients, retry.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = shared.clients.try_acquire() else {
            refuse_too_many(&socket, peer, &shared);
            continue;
        };
        let _ = socket.set_nodelay(true);
        let conn_id = shared.next_conn_id();
        let shared = shared.clone();
        let span = tracing::info_span!("conn", id = conn_id);
        tokio::spawn(
            async move {
                // Freed when the session ends, however it ends.
                let _slot = slot;
                shared.metrics.client_connected();
                session::run(socket, peer, conn_id, shared.clone()).await;
                shared.metrics.client_disconnected();
            }
            .instrument(span),
        );
    }
}

/// Every place is taken: answer as MariaDB does beyond its connection
/// limit, with ERR 1040 instead of the greeting (sequence id 0, no SQLSTATE,
/// since the client's protocol is not known yet), and close. The socket is
/// new and its send buffer empty, so the write cannot block the accept loop.
fn refuse_too_many(socket: &TcpStream, peer: SocketAddr, shared: &Shared) {
    let err = error::too_many_connections();
    let mut frame = BytesMut::new();
    queue_frames(&mut frame, &mut 0, &err.encode_pre_handshake());
    let _ = socket.try_write(&frame);
    shared.metrics.login_refused(err.code); // metrics: refused, error by kind
    info!(%peer, max_client_connections = shared.config.limits.max_client_connections, "client refused: too many connections");
}

pub fn log_listening(addr: &std::net::SocketAddr) {
    info!(%addr, "listening for MySQL clients");
}
