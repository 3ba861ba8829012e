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

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tracing::{debug, info, warn, Instrument};

use crate::backend::{BackendError, PoolKey};
use crate::error;
use crate::freshness::monitor::{Fallback, GroupMonitor, Provisional};
use crate::protocol::consts::*;
use crate::protocol::packets::{ok_packet, ErrPacket};
use crate::protocol::response::{ResponseKind, ResponseTracker};
use crate::protocol::{PacketStream, ProtocolError};
use crate::router::plan::RouteReason;
use crate::router::route::Source;
use crate::runtime::Runtime;
use pipeline::Exec;

use super::abandon::ReadWatch;
use super::change_user::parse_change_user;
use super::handshake::{self, Authed, HandshakeError};
use super::io::ClientIo;
use super::prepared::{self, Conn, Registry};
use super::relay::{self, RelayError};
use super::shared::Shared;
use backends::sync_to_state;
use backends::{lost, slot_of, Held, Pins};

mod backends;
mod pipeline;
// hook(abandon/kill/wait_timeout): the session's side of KILL, processlist,
// wait_timeout and its end.
mod control;
mod refresh;
mod sharded;
mod state;
mod statements;
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

/// Where a statement goes and why (the reason is a metric label).
#[derive(Debug, Clone, Copy)]
struct Route {
    conn: Conn,
    reason: RouteReason,
}

/// The backend connections serving a session (its master and at most one
/// replica of group 0, other groups' masters) and what is known of them.
struct Backends {
    master: Option<Held>,
    replica: Option<(usize, Held)>,
    /// The connection the next statement may ask about (see conns.rs).
    keep: Option<Conn>,
    /// The statement (client id) with an open cursor, and where.
    cursor: Option<(u32, Conn)>,
    /// The connection that ran the session's last statement.
    last_conn: Conn,
    /// Master connections of backend groups other than 0 (sharded tables
    /// placed there) and the transaction's writing group (`groups.rs`).
    groups: sharded::GroupConns,
}

impl Default for Backends {
    fn default() -> Backends {
        Backends {
            master: None,
            replica: None,
            keep: None,
            cursor: None,
            last_conn: Conn::Master,
            groups: sharded::GroupConns::default(),
        }
    }
}

/// One client session: who the client is (login), its logical state
/// (`state`, the state machine of session_state.rs), the connections
/// serving it (`backends`) and its prepared statements. Each command is
/// handled by its own method (query, init_db, stmt_*, reset_connection,
/// change_user), and every statement goes through `pipeline::statement`.
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
        if self.state.db.is_some() {
            if let Err(e) = self.held(Conn::Master).await {
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
        let p = match (&self.state.db, track) {
            (Some(db), true) => crate::protocol::packets::ok_packet_with_schema(self.state.status, db),
            _ => ok_packet(0, 0, self.state.status, 0),
        };
        self.shared.metrics.client_bytes_out(p.len()); // metrics: bytes out
        let mut seq = self.reply_seq;
        self.client.write_packet(&mut seq, &p).await.map_err(|_| Closed)
    }

    async fn command_loop(&mut self) {
        loop {
            // hook(wait_timeout, kill): the session's idle limit; killed while idle.
            let idle =
                super::wait::idle_limit(self.rt.config.limits.idle_client_timeout, self.state.wait_timeout);
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
            // A statement boundary: take over a reloaded configuration.
            if self.refresh_runtime() {
                // Boxed: rare (after a reload), keeps the command future small.
                Box::pin(self.resync_causal()).await;
            }
            // metrics: bytes in
            self.shared.metrics.client_bytes_in(pkt.payload.len());
            // An empty packet is answered like an unknown command, as MariaDB does.
            let cmd = pkt.payload.first().copied().unwrap_or(COM_SLEEP);
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
            self.proc.end(self.state.db.as_deref()); // hook(kill)
            if r.is_err() {
                return;
            }
            self.release_idle().await;
            self.publish_lock_thread();
            self.client.trim();
        }
    }

    fn in_transaction(&self) -> bool {
        self.state.in_transaction()
    }

    /// COM_QUERY: a statement on a sharded table goes to the shard
    /// planner; every other one through the pipeline (pipeline.rs).
    async fn query(&mut self, payload: &[u8]) -> CmdResult {
        // hook(kill): KILL and SHOW PROCESSLIST are answered by sluice;
        // CONNECTION_ID() becomes the session's id, IS_USED_LOCK() the
        // holder's (thread_ids).
        if let Some(i) = super::kill::intercept(&payload[1..]) {
            return self.intercepted(i).await;
        }
        let rewritten;
        let registry = &self.shared.sessions;
        let payload =
            match super::thread_ids::rewrite(&payload[1..], self.proc.id, || registry.lock_holders()) {
                Some(sql) => {
                    rewritten = [&[COM_QUERY][..], &sql].concat();
                    &rewritten[..]
                }
                None => payload,
            };
        let sql = &payload[1..];
        let c = self.classify(sql);
        // hook(kill): a KILL or SHOW PROCESSLIST after the first statement
        // of a text would reach the server with sluice's ids (or list the
        // backend account's threads): refused, never forwarded.
        if c.multi_statement && later_intercept(sql) {
            return self
                .send_err(&ErrPacket::new(
                    errcode::ER_NOT_SUPPORTED_YET,
                    "42000",
                    "sluice answers KILL and SHOW PROCESSLIST itself only as the first statement \
                     of a multi-statement text; send them on their own",
                ))
                .await;
        }
        if self.try_sharded(&c, sql).await? {
            return Ok(());
        }
        self.statement(&c, sql, Source::Text, Exec::Text { payload })
            .await
    }

    /// Remember a SET that ran on `ran_on`, to replay it on the session's
    /// other connections before they next serve it.
    fn record_set(&mut self, sql: &[u8], ran_on: Conn) {
        // The connection that ran it had run all the others (it was synced).
        let synced = slot_of(&mut self.backends.master, &mut self.backends.replica, ran_on)
            .filter(|h| h.conn.state.sets == self.state.chain);
        if !self.state.push_set(sql) {
            self.pin(Pins::SESSION_STATE);
            return;
        }
        if let Some(h) = synced {
            h.conn.state.sets.push(sql);
        }
    }

    async fn init_db(&mut self, payload: &[u8]) -> CmdResult {
        let db = String::from_utf8_lossy(&payload[1..]).into_owned();
        let route = Route {
            conn: Conn::Master,
            reason: RouteReason::SessionState,
        };
        let Some(tracker) = self
            .run_on(route, payload, ResponseKind::Single, false, None)
            .await?
        else {
            return Ok(());
        };
        if !tracker.error {
            self.entered_db(Conn::Master, db);
        }
        Ok(())
    }

    async fn simple(&mut self, payload: &[u8], kind: ResponseKind) -> CmdResult {
        let route = Route {
            conn: Conn::Master,
            reason: RouteReason::Command,
        };
        self.run_on(route, payload, kind, false, None).await.map(drop)
    }

    async fn set_option(&mut self, payload: &[u8]) -> CmdResult {
        let r = self.simple(payload, ResponseKind::Single).await;
        // The option (multi-statements on/off) changes the connection's
        // behaviour for good; COM_RESET_CONNECTION does not undo it, so the
        // connection must not serve another client afterwards. Replicas
        // would not know it: keep this session on the master.
        if let Some(m) = self.backends.master.as_mut() {
            m.conn.no_reuse = true;
        }
        self.pin(Pins::SET_OPTION);
        // Known here too: `KILL <id>; …` is sluice's only with it on
        // (control.rs). The server accepts both values of the option.
        match payload.get(1..3) {
            Some([0, 0]) => self.caps.insert(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
            Some([1, 0]) => self.caps.remove(CapabilityFlags::CLIENT_MULTI_STATEMENTS),
            _ => {}
        }
        r
    }

    /// The client's prepared statements are gone (end of session, reset):
    /// their texts are no longer open for this client.
    fn close_all_stmts(&mut self) {
        for s in self.stmts.stmts.values() {
            if s.sharded.is_none() {
                self.shared.open_stmts.close(&s.sql);
            }
        }
        self.stmts.clear();
    }

    /// Forget all session state (after COM_RESET_CONNECTION/CHANGE_USER).
    fn clear_state(&mut self) {
        self.close_all_stmts();
        // The master connection stays (the caller decides); the replica goes
        // back to the pool, which resets it.
        let master = self.backends.master.take();
        self.backends = Backends::default();
        self.backends.master = master;
        self.state.reset();
    }

    async fn reset_connection(&mut self, payload: &[u8]) -> CmdResult {
        if self.backends.master.is_some() {
            let route = Route {
                conn: Conn::Master,
                reason: RouteReason::SessionState,
            };
            let r = self
                .run_on(route, payload, ResponseKind::Single, false, None)
                .await?;
            if let Some(m) = self.backends.master.as_mut() {
                // What the server keeps as default database after a reset is
                // version-dependent: make the next command re-sync it.
                m.conn.db = None;
                m.conn.state.forget();
            }
            // State the reset may not undo: MariaDB keeps a role set with
            // SET ROLE across COM_RESET_CONNECTION (measured on 10.11). Such
            // a connection is closed; the session starts on a fresh one, as
            // after a new login, and no other session ever gets it.
            if self.state.pins.has(Pins::CONNECTION_STATE) {
                if let Some(mut m) = self.backends.master.take() {
                    m.conn.no_reuse = true;
                }
            }
            self.clear_state();
            if r.is_some_and(|t| t.error) {
                return Ok(());
            }
            Ok(())
        } else {
            self.clear_state();
            self.send_ok().await
        }
    }

    /// COM_CHANGE_USER: authenticate again, then start over with clean
    /// backend state.
    async fn change_user(&mut self, payload: &[u8]) -> CmdResult {
        let Some(req) = parse_change_user(&payload[1..], self.caps) else {
            let _ = self
                .send_err(&error::bad_handshake("malformed COM_CHANGE_USER"))
                .await;
            return Err(Closed);
        };
        let mut seq = self.reply_seq;
        // The users of the newest configuration, as for a new login, and
        // the same bounded exchange (unknown users included), within
        // `limits.handshake_timeout`.
        let rt = self.shared.runtime();
        let plugin = req
            .plugin
            .map(|p| mysql_common::packets::AuthPlugin::from_bytes(&p).into_owned());
        let tls = self.client.get_ref().is_tls();
        let ip = self
            .client
            .get_ref()
            .peer_ip()
            .and_then(|ip| ip.parse().ok())
            .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let exchange = handshake::login(
            &mut self.client,
            &mut seq,
            &self.shared,
            &rt.config,
            &req.user,
            ip,
            plugin,
            &self.nonce,
            &req.auth,
            tls,
        );
        let verdict = match tokio::time::timeout(rt.config.limits.handshake_timeout, exchange).await {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                let _ = handshake::exchange_failed(&mut self.client, &mut seq, e).await;
                return Err(Closed);
            }
            Err(_) => return Err(Closed),
        };
        drop(rt);
        self.reply_seq = seq;
        let (login, account) = match verdict {
            handshake::Verdict::Accepted(l, account) => (l, account),
            handshake::Verdict::Denied(e) => {
                let _ = self.send_err(&e).await;
                return Err(Closed);
            }
        };
        // The session now counts against the new user's max_connections
        // (and keeps its place among all sessions).
        if let Err(e) = self
            .user_slot
            .switch_user(&self.shared.user_limits, &req.user, account.as_ref())
        {
            let _ = self.send_err(&e).await;
            return Err(Closed);
        }
        // Give the connections back and start clean, from now on as the new
        // account. One with state no reset undoes (a role: MariaDB keeps it
        // across COM_CHANGE_USER too) is closed, one with tracked state reset
        // (`finish_connections`).
        self.finish_connections().await;
        self.clear_state();
        self.login = login;
        self.user = req.user;
        self.proc.set_user(&self.user); // hook(kill)
        if let Some(c) = req.collation {
            self.key.collation = c;
        }
        self.state.db = req.db;
        if self.state.db.is_some() {
            if let Err(e) = self.held(Conn::Master).await {
                self.send_err(&e).await?;
                return Ok(());
            }
        }
        self.send_ok().await
    }

    /// Run one command on the routed backend and relay its response.
    /// `Ok(None)`: the command failed and the client got an error. A read
    /// that fails on a replica before any byte reached the client is retried
    /// on the master.
    async fn run_on(
        &mut self,
        route: Route,
        payload: &[u8],
        kind: ResponseKind,
        hold: bool,
        prepare_id: Option<u32>,
    ) -> Result<Option<ResponseTracker>, Closed> {
        self.run_on_stmt(route, payload, kind, hold, prepare_id, None)
            .await
    }

    /// `run_on` for a COM_STMT_* command: `stmt_ids` = (backend id, client id).
    async fn run_on_stmt(
        &mut self,
        route: Route,
        payload: &[u8],
        kind: ResponseKind,
        hold: bool,
        prepare_id: Option<u32>,
        stmt_ids: Option<(u32, u32)>,
    ) -> Result<Option<ResponseTracker>, Closed> {
        self.run_on_inner(route, payload, kind, hold, prepare_id, stmt_ids, None)
            .await
    }

    /// `run_on` for a text read sent to a replica before strict mode's
    /// probe answered (`provisional`, see `freshness::strict`): its answer
    /// reaches the client only if the replica proves fresh, else it is
    /// discarded and the read reruns on the master. Counts the route.
    pub(super) async fn run_on_checked(
        &mut self,
        route: Route,
        payload: &[u8],
        hold: bool,
        provisional: Option<Provisional>,
    ) -> Result<Option<ResponseTracker>, Closed> {
        self.run_on_inner(route, payload, ResponseKind::Query, hold, None, None, provisional)
            .await
    }

    /// `run_on_any` for a command that, if its provisional answer is
    /// discarded, reruns as it is on the master (a text read). Never an
    /// EXECUTE: its rerun needs the master's statement id (execute_prepared).
    #[allow(clippy::too_many_arguments)]
    async fn run_on_inner(
        &mut self,
        route: Route,
        payload: &[u8],
        kind: ResponseKind,
        hold: bool,
        prepare_id: Option<u32>,
        stmt_ids: Option<(u32, u32)>,
        provisional: Option<Provisional>,
    ) -> Result<Option<ResponseTracker>, Closed> {
        debug_assert!(kind != ResponseKind::Execute, "EXECUTE goes through run_on_any");
        let mut provisional = provisional;
        let mut route = route;
        loop {
            match self
                .run_on_any(
                    route,
                    payload,
                    kind,
                    hold,
                    prepare_id,
                    stmt_ids,
                    provisional.take(),
                )
                .await?
            {
                Ok(t) => return Ok(t),
                Err(Stale) => {
                    // The replica may lack a write the read must see: its
                    // answer was discarded; the master answers instead.
                    debug!("strict: replica behind the master's position, reading from the master");
                    route = Route {
                        conn: Conn::Master,
                        reason: route.reason,
                    };
                }
            }
        }
    }

    /// Send one command to `route`'s connection and relay its answer; a
    /// provisional answer (strict mode) that the check refuses is
    /// discarded: `Err(Stale)`, as is a read on a replica that failed
    /// before the client saw any of it when its caller must rerun it (an
    /// EXECUTE, whose payload names the replica's statement id).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_on_any(
        &mut self,
        route: Route,
        payload: &[u8],
        kind: ResponseKind,
        hold: bool,
        prepare_id: Option<u32>,
        stmt_ids: Option<(u32, u32)>,
        mut provisional: Option<Provisional>,
    ) -> Result<Result<Option<ResponseTracker>, Stale>, Closed> {
        let mut conn = route.conn;
        let rerunnable = matches!(kind, ResponseKind::Query | ResponseKind::Execute);
        if provisional.is_some() && (!rerunnable || self.state.ro_tx.is_some() || conn == Conn::Master) {
            // Only a plain read can be rerun: decide before sending it.
            provisional = None;
            self.shared.metrics.route(conn == Conn::Master, route.reason);
        }
        loop {
            // faults: a read on a replica gives up when the replica stops
            // answering, while connecting or syncing as well as while waiting
            // for its answer (see frontend::abandon); the existing fallbacks
            // below then retry it on the master or report it.
            let first_byte = self.rt.config.backend.replica_read_timeout;
            // (An EXECUTE too: its caller prepares it on the master.)
            let retryable =
                matches!(kind, ResponseKind::Query | ResponseKind::Execute) && self.state.ro_tx.is_none();
            let mut watch = ReadWatch::for_conn(&self.health, conn, &self.proc.entry, first_byte, retryable);
            let ready = match watch.as_mut() {
                None => self.held(conn).await,
                Some(w) => tokio::select! {
                    r = self.held(conn) => r,
                    err = w.abandoned(false) => Err(self.abandon_replica(conn, err)),
                },
            };
            if ready.is_err() && provisional.take().is_some() {
                // Counted as the plain gate counts it (the replica chosen).
                self.shared.metrics.route(false, route.reason);
            }
            if let Err(e) = ready {
                if let Conn::Replica(_) = conn {
                    if self.state.ro_tx.is_none() {
                        debug!(error = %e, "replica unusable, reading from the master");
                        self.backends.replica = None;
                        if kind == ResponseKind::Execute {
                            // The payload names the replica's statement id:
                            // the caller prepares it on the master.
                            return Ok(Err(Stale));
                        }
                        conn = Conn::Master;
                        continue;
                    }
                }
                self.send_err(&e).await?;
                return Ok(Ok(None));
            }
            let Some(h) = slot_of(&mut self.backends.master, &mut self.backends.replica, conn) else {
                return Ok(Ok(None));
            };
            h.conn.dirty = true;
            let opts = relay::Opts {
                kind,
                deprecate_eof: h.conn.deprecate_eof(),
                hold_final: hold,
                prepare_id,
                stmt_ids,
            };
            let started = std::time::Instant::now(); // metrics: command latency, slow-query log
            self.backends.keep = None;
            // hook(abandon, kill): the relay cancels the statement on the
            // backend when the client leaves or the session is killed.
            let guard = control::pool_for(&self.rt, conn).map(|pool| relay::Guard {
                entry: &self.proc,
                pool,
                thread: h.conn.thread_id,
            });
            let mut verdict = None;
            let checked = provisional.is_some();
            let relayed = match provisional.take() {
                None => relay::command(
                    &mut self.client,
                    &mut h.conn.stream,
                    payload,
                    opts,
                    watch.as_mut(),
                    guard.as_ref(),
                )
                .await
                .map(Some),
                Some(p) => {
                    let monitor = &self.monitor;
                    let arrival = relay::Arrival::new();
                    // (Boxed: the probe's future stays out of every
                    // statement's future.)
                    let check = Box::pin(async {
                        let fresh = monitor.verify(&p, arrival.wait()).await;
                        verdict = Some(fresh);
                        fresh
                    });
                    relay::command_checked(
                        &mut self.client,
                        &mut h.conn.stream,
                        payload,
                        opts,
                        watch.as_mut(),
                        guard.as_ref(),
                        &arrival,
                        check,
                    )
                    .await
                }
            };
            if checked {
                match verdict {
                    Some(false) => self.shared.metrics.route(true, Fallback::Stale.reason()),
                    // (None: the send failed before the check; counted as
                    // the plain gate counts it.)
                    Some(true) | None => self.shared.metrics.route(false, route.reason),
                }
            }
            match relayed {
                Ok(None) => return Ok(Err(Stale)),
                Ok(Some(tracker)) => {
                    h.conn.note_status(tracker.last_status); // hook(abandon): pool's check
                    self.backends.last_conn = conn;
                    if tracker.error || tracker.warnings {
                        // SHOW WARNINGS must find them here.
                        self.backends.keep = Some(conn);
                    }
                    // metrics: latency per backend, server errors, slow-query log
                    let slow = self.rt.config.log.slow_query;
                    self.shared
                        .metrics
                        .command_done(0, conn, started, tracker.error, payload, slow);
                    self.shared.metrics.relayed_bytes_out(tracker.relayed_bytes);
                    if conn == Conn::Master {
                        if let Some(st) = tracker.last_status {
                            self.state.master_status(st);
                        }
                    }
                    return Ok(Ok(Some(tracker)));
                }
                Err(RelayError::Client(e)) => {
                    // The backend is mid-response: it cannot serve anyone else.
                    h.conn.broken = true;
                    debug!(error = %e, "client gone during a response");
                    return Err(Closed);
                }
                Err(RelayError::Backend {
                    err,
                    relayed,
                    last_seq,
                }) => {
                    h.conn.broken = true;
                    let label = self.label(conn);
                    warn!(backend = %label, error = %err, "backend failed during a command");
                    if let (Conn::Replica(_), false, None) = (conn, relayed, self.state.ro_tx) {
                        if kind == ResponseKind::Query {
                            self.backends.replica = None;
                            conn = Conn::Master;
                            continue;
                        }
                        if kind == ResponseKind::Execute {
                            // A read the client saw nothing of (a discarded
                            // answer too big to drain among them): rerun on
                            // the master, where the caller prepares it.
                            self.backends.replica = None;
                            return Ok(Err(Stale));
                        }
                    }
                    if conn == Conn::Master {
                        self.backends.master = None;
                        // The server's transaction is gone with the connection.
                        self.state.master_lost();
                    } else {
                        self.backends.replica = None;
                        self.state.replica_lost();
                    }
                    if relayed {
                        self.reply_seq = last_seq.wrapping_add(1);
                    }
                    let e = error::backend_error_packet(&label, "", &BackendError::Protocol(err));
                    self.send_err(&e).await?;
                    return Ok(Ok(None));
                }
            }
        }
    }

    async fn send_ok(&mut self) -> CmdResult {
        let p = ok_packet(0, 0, self.state.status, 0);
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

/// A statement after the first of the text that sluice would answer itself.
/// (Cheap unless the text names KILL or PROCESSLIST.)
fn later_intercept(sql: &[u8]) -> bool {
    use crate::router::route::mentions;
    (mentions(sql, b"kill") || mentions(sql, b"processlist"))
        && crate::router::classify::split_statements(sql)
            .skip(1)
            .any(|s| super::kill::intercept(s).is_some())
}
