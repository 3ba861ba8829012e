//! One client session: the command loop and its routing.
//!
//! The session owns its client socket and the backend connections serving
//! it (the master's and at most one replica's), in one task: a command is
//! read, planned, written to a backend and its response relayed, with no
//! channel hop in between.
//!
//! Session state, and where it lives:
//! - *Handshake* → *Ready* once authenticated and the default database, if
//!   any, was accepted by the master.
//! - *Ready*: reads go to a fresh replica or the master (see `route`);
//!   everything else to the master. Backend connections are checked out on
//!   first use, kept for the session, and synchronized with the session's
//!   tracked state (default database, replayable `SET`s) before each use.
//! - *Pinned*: after temporary tables, user variables, LOCK TABLES or named
//!   locks, every statement goes to the master for the rest of the session
//!   (until COM_RESET_CONNECTION / COM_CHANGE_USER).
//! - *In transaction* (the master's status flags say so, or autocommit is
//!   off): everything to the master. *Read-only transaction*
//!   (`START TRANSACTION READ ONLY` outside a transaction): everything to one
//!   fresh replica until the transaction ends there.
//! - A backend failure sends the client an error and drops that connection;
//!   the session stays *Ready* and reconnects on its next command.
//! - *Closed*: COM_QUIT, client EOF, or a client protocol error.
//!
//! The folder, in the order a statement meets it: `cmd/` (one file per
//! command) → `pipeline.rs` (plan → shards? → gate → ready → exec →
//! apply), whose steps are `sharded/` (statements on sharded tables),
//! `gate.rs` (Plan + state + health → Route, for sharded parts too),
//! `ready.rs` (the connection made ready for it), `exec.rs` (the one retry
//! loop), `state/apply.rs` (its effects, pure) and `followups.rs` (the work
//! they ask for). `state/` is the session's logical state (private fields),
//! `backends.rs` its connections, `refresh.rs` the move to a reloaded
//! configuration.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tracing::{debug, info, Instrument};

use crate::backend::PoolKey;
use crate::error;
use crate::freshness::monitor::GroupMonitor;
use crate::protocol::consts::*;
use crate::protocol::packets::{ok_packet, ErrPacket};
use crate::protocol::response::ResponseKind;
use crate::protocol::{PacketStream, ProtocolError};
use crate::runtime::Runtime;

use super::handshake::{self, Authed, HandshakeError};
use super::io::ClientIo;
use super::prepared::{self, Conn, Registry};
use super::shared::Shared;
use backends::sync_to_state;
use backends::Backends;

mod backends;
mod cmd;
mod default_db;
mod exec;
mod followups;
mod gate;
mod pipeline;
mod ready;
mod refresh;
mod sharded;
mod state;
use state::SessionState;

/// Serve one client connection; `slot` is its place among the connections in
/// their handshake, given up once the handshake ends.
pub async fn run(
    socket: TcpStream,
    peer: SocketAddr,
    conn_id: u32,
    shared: Arc<Shared>,
    slot: super::limits::HandshakeSlot,
) {
    let authed = match handshake::handshake(socket, peer, conn_id, &shared, slot).await {
        Ok(a) => a,
        Err(HandshakeError::Refused(e)) => {
            shared.metrics.login_refused(e.code); // metrics: refused, error by kind
            if matches!(
                e.code,
                errcode::ER_ACCESS_DENIED_ERROR | errcode::ER_ACCOUNT_HAS_BEEN_LOCKED
            ) {
                shared.metrics.account_login(None, 0);
            }
            info!(%peer, error = %e, "client refused");
            return;
        }
        Err(e) => {
            // metrics: refused, error by kind
            let broke = matches!(&e, HandshakeError::Protocol(p) if !p.is_disconnect());
            shared.metrics.handshake_failed(broke);
            debug!(%peer, error = %e, "handshake failed");
            return;
        }
    };
    debug!(%peer, user = %authed.user, "client authenticated");
    let labels = shared.runtime().config.auth.max_account_labels;
    shared.metrics.account_login(Some(&authed.user), labels); // metrics: logins by account
                                                              // hook(kill): the session is visible to others (processlist, KILL) by its handshake id.
    let proc = shared
        .sessions
        .register(conn_id, &authed.user, peer.to_string(), authed.db.as_deref());
    let mut session = Session::new(authed, shared, proc);
    if session.accept_login().await.is_ok() {
        session.release_idle().await;
        session.command_loop().await;
    }
    // Connections without session-only state go back to the pool clean;
    // the others are reset by the pool.
    session.close_all_stmts();
    session.backends.keep = None;
    session.release_idle().await;
    session.sweep_parked().await;
    // hook(abandon): nothing of the session survives on a backend.
    session.finish_connections().await;
    session.client.shutdown().await;
}

/// A command either leaves the session usable or ends it.
type CmdResult = Result<(), Closed>;

/// The session must end (client gone or broke the protocol).
#[derive(Debug)]
pub struct Closed;

/// strict: a read's provisional answer from a replica was discarded (the
/// replica may lack a write it must see); it must run on the master.
#[derive(Debug)]
pub struct Stale;

/// One client session: who the client is (login), its logical state
/// (`state`, the state machine of state.rs), the connections
/// serving it (`backends`) and its prepared statements. Each command is
/// handled by its own method in `cmd/`, and every statement goes through
/// `pipeline::statement`.
struct Session {
    shared: Arc<Shared>,
    /// The configuration snapshot this session routes with; replica
    /// indices (`Conn::Replica`) are positions in it. Moved to a newer one
    /// between commands (refresh.rs).
    rt: Arc<Runtime>,
    /// `rt.monitors[0]`.
    monitor: Arc<GroupMonitor>,
    /// The health flags of `monitor`'s replicas (`frontend::abandon`), in
    /// an allocation of the session's own: a read's watch clones this `Arc`,
    /// whose count no other session writes.
    health: Arc<[Arc<crate::freshness::health::HealthFlags>]>,
    client: PacketStream<ClientIo>,
    user: String,
    caps: CapabilityFlags,
    key: PoolKey,
    nonce: [u8; 20],
    /// Borrow connections per statement (`backend.multiplex`).
    multiplex: bool,
    state: SessionState,
    backends: Backends,
    stmts: Registry,
    /// seq of the first reply packet (the one after the client's command).
    reply_seq: u8,
    /// Counts the session against its user's `max_connections` until dropped.
    user_slot: super::limits::UserSlot,
    /// hook(kill): this session in the registry (processlist, KILL).
    proc: super::registry::Handle,
    /// Whom statements run as on the backends (`None`: the group's account).
    login: Option<Arc<crate::backend::Login>>,
    /// hook(perf): the idle timeout's timer, kept across commands.
    idle_timer: super::wait::IdleTimer,
    /// hook(perf): handles on the pools `held` checks out from.
    pools: backends::PoolHandles,
}

impl Session {
    fn new(a: Authed, shared: Arc<Shared>, proc: super::registry::Handle) -> Session {
        let key = PoolKey {
            caps: (a.caps & format_capabilities()).bits(),
            collation: a.collation,
            mariadb_ext: a.mariadb_ext,
        };
        let rt = shared.runtime();
        let monitor = rt.monitors[0].clone();
        let multiplex = rt.config.backend.multiplex;
        Session {
            shared,
            rt,
            health: monitor.health_flags().into(),
            monitor,
            client: a.client,
            user: a.user,
            caps: a.caps,
            key,
            nonce: a.nonce,
            multiplex,
            state: SessionState::new(a.db),
            backends: Backends::default(),
            stmts: Registry::default(),
            reply_seq: a.seq,
            user_slot: a.user_slot,
            proc,
            login: a.login,
            idle_timer: Default::default(),
            pools: Default::default(),
        }
    }

    /// Finish the login: check the default database on the master, then OK.
    async fn accept_login(&mut self) -> CmdResult {
        if self.state.db().is_some() {
            // hook(topo43c): the master, or a replica when it is absent or paused.
            if let Err(e) = self.check_login_db().await {
                self.send_err(&e).await?;
                return Err(Closed);
            }
        }
        self.send_login_ok().await
    }

    /// The OK that ends a login: with CLIENT_SESSION_TRACK and a default
    /// database, it reports the schema as the server's own login OK does.
    async fn send_login_ok(&mut self) -> CmdResult {
        let track = self.caps.contains(CapabilityFlags::CLIENT_SESSION_TRACK);
        let p = match (self.state.db(), track) {
            (Some(db), true) => crate::protocol::packets::ok_packet_with_schema(self.state.status(), db),
            _ => ok_packet(0, 0, self.state.status(), 0),
        };
        self.shared.metrics.client_bytes_out(p.len()); // metrics: bytes out
        let mut seq = self.reply_seq;
        self.client.write_packet(&mut seq, &p).await.map_err(|_| Closed)
    }

    async fn command_loop(&mut self) {
        loop {
            // hook(wait_timeout, kill): the session's idle limit; killed while idle.
            let idle = super::wait::idle_limit(
                self.rt.config.limits.idle_client_timeout,
                self.state.wait_timeout(),
            );
            let in_tx = self.transaction_open();
            let pkt = match super::wait::next_command(
                &mut self.client,
                &self.shared,
                idle,
                &self.proc,
                &mut self.idle_timer,
                in_tx,
            )
            .await
            {
                Ok(p) => p,
                Err(ProtocolError::TooLarge { .. }) => {
                    self.reply_seq = 1;
                    if self.send_err(&error::packet_too_large()).await.is_ok() {
                        super::wait::discard_rest(&mut self.client).await;
                    }
                    return;
                }
                Err(e) => {
                    if !e.is_disconnect() {
                        self.shared.metrics.client_protocol_error(); // metrics: errors by kind
                        info!(error = %e, "client protocol error");
                    }
                    return;
                }
            };
            self.reply_seq = pkt.seq.wrapping_add(1);
            // An empty packet is answered like an unknown command, as MariaDB does.
            let cmd = pkt.payload.first().copied().unwrap_or(COM_SLEEP);
            // hook(topo43): a statement boundary: take over a reloaded
            // configuration or a new master (see `refresh`).
            match self.refresh_runtime(cmd) {
                refresh::Refreshed::Stayed => {}
                // Boxed: rare (after a reload), keeps the command future small.
                refresh::Refreshed::Moved(new_monitor) => {
                    if new_monitor {
                        Box::pin(self.resync_causal()).await;
                    }
                }
                refresh::Refreshed::MasterLost(e, new_monitor) => {
                    if new_monitor {
                        Box::pin(self.resync_causal()).await;
                    }
                    if self.send_err(&e).await.is_err() {
                        return;
                    }
                    continue;
                }
            }
            // metrics: bytes in
            self.shared.metrics.client_bytes_in(pkt.payload.len());
            let p = &pkt.payload[..];
            self.proc.begin(cmd, p); // hook(kill): processlist Command/Time/Info
            let r = match cmd {
                COM_QUIT => return,
                COM_PING => self.send_ok().await,
                // A span per statement only at DEBUG: an instrumented future
                // enters and leaves its span at every poll, and is one more
                // copy of the statement's future (boxed here, off the hot path).
                COM_QUERY if tracing::enabled!(tracing::Level::DEBUG) => {
                    Box::pin(
                        self.query(p)
                            .instrument(tracing::debug_span!("statement", command = "query")),
                    )
                    .await
                }
                COM_QUERY => self.query(p).await,
                COM_INIT_DB => self.init_db(p).await,
                COM_FIELD_LIST => self.simple(p, ResponseKind::FieldList).await,
                COM_STATISTICS => self.simple(p, ResponseKind::Single).await,
                COM_STMT_PREPARE => self.stmt_prepare(p).await,
                COM_STMT_EXECUTE if tracing::enabled!(tracing::Level::DEBUG) => {
                    Box::pin(
                        self.stmt_execute(p)
                            .instrument(tracing::debug_span!("statement", command = "execute")),
                    )
                    .await
                }
                COM_STMT_EXECUTE => self.stmt_execute(p).await,
                COM_STMT_FETCH => self.stmt_follow(p, ResponseKind::Fetch).await,
                COM_STMT_RESET => self.stmt_follow(p, ResponseKind::Single).await,
                COM_STMT_SEND_LONG_DATA => self.stmt_long_data(p).await,
                COM_STMT_CLOSE => self.stmt_close(p).await,
                COM_SET_OPTION => self.set_option(p).await,
                COM_RESET_CONNECTION => self.reset_connection(p).await,
                COM_CHANGE_USER => self.change_user(p).await,
                COM_PROCESS_KILL => self.process_kill(p).await, // hook(kill)
                other => self.send_err(&error::unknown_command(other)).await,
            };
            self.proc.end(self.state.db()); // hook(kill)
            if r.is_err() {
                return;
            }
            self.release_idle().await;
            self.publish_lock_thread();
            // hook(console): what PAUSE, DRAIN and SHOW SESSIONS see it hold.
            self.proc.set_holds(crate::frontend::registry::Holds {
                master: self.backends.master.is_some(),
                replica: self.backends.replica.as_ref().map(|(i, _)| *i),
                in_transaction: self.in_transaction(),
            });
            self.client.trim();
        }
    }

    fn in_transaction(&self) -> bool {
        self.state.in_transaction()
    }

    async fn send_ok(&mut self) -> CmdResult {
        let p = ok_packet(0, 0, self.state.status(), 0);
        self.shared.metrics.client_bytes_out(p.len()); // metrics: bytes out
        let mut seq = self.reply_seq;
        self.client.write_packet(&mut seq, &p).await.map_err(|_| Closed)
    }

    async fn send_err(&mut self, e: &ErrPacket) -> CmdResult {
        self.shared.metrics.error_code(e.code); // metrics: errors by kind
        let mut seq = self.reply_seq;
        self.client
            .write_packet(&mut seq, &e.encode())
            .await
            .map_err(|_| Closed)
    }
}
