//! What every client session shares: the running configuration snapshot,
//! the limits, the registry of live sessions and the metrics. Built once by
//! `app::run`; read-mostly, nothing here is locked per statement.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::runtime::Runtime;

use super::limits::{ClientSlots, Handshakes, UserLimits};

/// Everything sessions share. Read-mostly; nothing here is locked per query.
pub struct Shared {
    /// The configuration and what is built from it, replaced by a reload;
    /// see [`Shared::runtime`].
    runtime: ArcSwap<Runtime>,
    pub tls: Option<TlsAcceptor>,
    /// The version string advertised to clients: the master's, once known.
    pub server_version: ArcSwap<String>,
    next_conn_id: AtomicU32,
    pub metrics: Arc<Metrics>,
    /// MariaDB extended capabilities of the master (0 until known).
    backend_ext: std::sync::atomic::AtomicU32,
    /// The collation the master's greeting advertises, advertised to clients
    /// in turn (drivers adopt it as the session's).
    backend_collation: std::sync::atomic::AtomicU8,
    /// Largest packet accepted from a client (`limits.max_packet_size`).
    pub max_packet: usize,
    /// Places for client sessions (`limits.max_client_connections`).
    pub clients: ClientSlots,
    /// Sessions per user (`users[].max_connections`).
    pub user_limits: UserLimits,
    /// Texts of the prepared statements clients have open (server-side
    /// statements nobody needs are closed; see `backend::state`).
    pub open_stmts: crate::backend::state::OpenStatements,
    /// Connections still in their handshake (`limits.max_unauthenticated*`).
    pub handshakes: Handshakes,
    /// Set at once on SIGTERM/SIGINT: `/readyz` answers 503 while sluice
    /// still accepts for `limits.drain_delay`.
    pub draining: AtomicBool,
    /// Set on SIGTERM/SIGINT after `limits.drain_delay`: stop accepting,
    /// close idle sessions.
    pub shutdown: Shutdown,
    /// The live sessions by thread id (processlist, KILL).
    pub sessions: Arc<super::registry::Registry>,
    /// The server's accounts (`auth:`), kept fresh by `auth::catalog::refresher`.
    pub accounts: Arc<crate::auth::Catalog>,
    /// Which tables' writes use sequences (column defaults, triggers).
    pub sequence_users: super::sequence_users::SequenceUsers,
    /// The operator's `PAUSE` (`crate::pause`), kept across reloads.
    pub pause: crate::pause::Gate,
}

/// Sluice is shutting down. Asked by every session before every command:
/// a flag read with a plain load, where `CancellationToken::is_cancelled`
/// takes the token's mutex, one lock that every session of every thread
/// would share per command. The listener awaits the token.
#[derive(Default)]
pub struct Shutdown {
    flag: AtomicBool,
    token: CancellationToken,
    /// Until when sessions without a transaction are left to their
    /// clients (`limits.shutdown_wait_for_clients`; unset: not at all).
    clients_until: std::sync::OnceLock<tokio::time::Instant>,
}

impl Shutdown {
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
        self.token.cancel();
    }

    /// [`Shutdown::cancel`], leaving idle sessions to their clients for
    /// `wait` (see `frontend::wait::next_command`).
    pub fn cancel_waiting_for_clients(&self, wait: std::time::Duration) {
        let _ = self.clients_until.set(tokio::time::Instant::now() + wait);
        self.cancel();
    }

    /// While sessions are left to their clients: until when.
    pub fn clients_until(&self) -> Option<tokio::time::Instant> {
        self.clients_until
            .get()
            .copied()
            .filter(|&t| tokio::time::Instant::now() < t)
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Resolves once [`Shutdown::cancel`] was called.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }
}

/// Advertised until a backend has told us its own version. The "5.5.5-"
/// prefix is how MariaDB servers present themselves to MySQL clients.
/// Advertised until the master's greeting was seen (utf8mb4_general_ci).
pub const GREETING_COLLATION_FALLBACK: u8 = 45;

pub const FALLBACK_VERSION: &str = "5.5.5-10.11.0-MariaDB-sluice";

impl Shared {
    /// Fails when a backend's TLS files cannot be used.
    pub fn new(
        config: Config,
        tls: Option<TlsAcceptor>,
        metrics: Arc<Metrics>,
    ) -> Result<Shared, crate::error::Error> {
        // Read at start-up only (see README, Hot reload).
        let max_packet = config.limits.max_packet_size;
        let clients = ClientSlots::new(config.limits.max_client_connections);
        let user_limits = UserLimits::new(&config.users);
        let handshakes = Handshakes::new(
            config.limits.max_unauthenticated,
            config.limits.max_unauthenticated_per_address,
        );
        let runtime = Runtime::first(config).map_err(crate::error::Error::Tls)?;
        Ok(Shared {
            runtime: ArcSwap::from_pointee(runtime),
            tls,
            server_version: ArcSwap::from_pointee(FALLBACK_VERSION.to_string()),
            backend_ext: std::sync::atomic::AtomicU32::new(0),
            backend_collation: std::sync::atomic::AtomicU8::new(GREETING_COLLATION_FALLBACK),
            next_conn_id: AtomicU32::new(1),
            metrics,
            max_packet,
            clients,
            user_limits,
            open_stmts: Default::default(),
            handshakes,
            draining: AtomicBool::new(false),
            shutdown: Shutdown::default(),
            sessions: Default::default(),
            accounts: Default::default(),
            sequence_users: Default::default(),
            pause: Default::default(),
        })
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
        self.metrics.retarget(rt.topology.labels());
        self.runtime.store(rt);
    }

    /// What a monitor calls when a replica goes down: every session looks
    /// again at what it waits for, and a read under way on that replica is
    /// abandoned (`frontend::abandon`). Rare, so all are woken rather than a
    /// list of readers kept per replica, which every read would lock.
    pub fn replica_down_hook(&self) -> crate::freshness::monitor::DownHook {
        let sessions = self.sessions.clone();
        Arc::new(move || sessions.wake_all())
    }

    /// Record the master's MariaDB extended capabilities.
    pub fn learn_backend_ext(&self, ext: u32) {
        self.backend_ext.store(ext, Ordering::Relaxed);
    }

    /// Record the collation the master's greeting advertises.
    pub fn learn_backend_collation(&self, collation: u8) {
        if collation != 0 {
            self.backend_collation.store(collation, Ordering::Relaxed);
        }
    }

    /// The collation sluice's greeting advertises: the master's, once known.
    pub fn greeting_collation(&self) -> u8 {
        self.backend_collation.load(Ordering::Relaxed)
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
