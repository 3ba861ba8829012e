//! One raw connection from sluice to a MySQL/MariaDB server.
//!
//! sluice authenticates to backends as its own configured user, with the
//! client's format-affecting capabilities and collation (see `PoolKey`), so
//! the server's response bytes can be relayed to that client untouched.
//! Who it logs in as and the login exchange are in `conn/login.rs`.

use std::sync::Arc;
use std::time::Duration;

use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use tokio::net::TcpStream;

use crate::config::BackendTlsMode;
use crate::protocol::consts::{
    CapabilityFlags, COM_INIT_DB, COM_PING, COM_QUERY, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS,
};
use crate::protocol::packets::{parse_ok, ErrPacket, OkInfo};
use crate::protocol::response::{ResponseKind, ResponseTracker, Step};
use crate::protocol::transport::Transport;
use crate::protocol::{Packet, PacketStream, ProtocolError};

use super::error::BackendError;
use super::tls::TlsSettings;

mod login;

pub use login::Login;
use login::{authenticate, Secret};

/// A backend socket: plain, or TLS after sluice's SSL request.
pub type BackendIo = Transport<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;

/// Backend connections may carry any packet a client sends (1 GiB is the
/// largest max_allowed_packet MySQL accepts).
const BACKEND_MAX_PACKET: usize = 1 << 30;

/// What must be equal between a client and the backend connection serving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PoolKey {
    /// The client's bits of `consts::format_capabilities()`.
    pub caps: u32,
    /// The collation id the client sent in its handshake.
    pub collation: u8,
    /// MariaDB extended capabilities (`consts::MARIADB_RELAYED_EXT` bits).
    pub mariadb_ext: u32,
}

impl PoolKey {
    /// The key of sluice's own connections (start-up checks, /readyz).
    pub fn sluice_own() -> PoolKey {
        PoolKey {
            caps: 0,
            collation: 45,
            mariadb_ext: 0,
        }
    }
}

/// What waits on an idle connection's socket (`BackendConn::idle_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleState {
    /// Nothing: the server still holds the connection.
    Quiet,
    /// End of stream or a socket error: the server closed it.
    Closed,
    /// Bytes: unexpected on plaintext; TLS records under TLS.
    Data,
}

/// Where and as whom to connect. `Debug` never shows the password.
#[derive(Clone)]
pub struct ConnectParams {
    pub addr: String,
    pub user: String,
    pub password: String,
    pub connect_timeout: Duration,
    /// `backend.max_connection_age` (zero: none).
    pub max_age: Duration,
    /// `None`: plaintext (`tls.mode: disabled`).
    pub tls: Option<Arc<TlsSettings>>,
}

impl std::fmt::Debug for ConnectParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectParams")
            .field("addr", &self.addr)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("connect_timeout", &self.connect_timeout)
            .field("max_age", &self.max_age)
            .field("tls", &self.tls)
            .finish()
    }
}

pub struct BackendConn {
    pub stream: PacketStream<BackendIo>,
    /// The server's thread id for this connection.
    pub thread_id: u32,
    pub caps: CapabilityFlags,
    pub key: PoolKey,
    pub server_version: String,
    /// The collation id the server's greeting advertises (its default).
    pub server_collation: u8,
    /// MariaDB extended capabilities the server offers (0 for MySQL).
    pub server_mariadb_ext: u32,
    /// The default database as last set through this connection; `None` when
    /// unknown or none.
    pub db: Option<String>,
    /// Set when the connection is in an unknown protocol state (an error
    /// mid-response, a client gone mid-result) and must not be reused.
    pub broken: bool,
    /// Set when session state may differ from a fresh connection's.
    pub dirty: bool,
    /// Set when the connection may keep serving its session but must not
    /// go back to the pool (e.g. after COM_SET_OPTION, which no reset undoes).
    pub no_reuse: bool,
    /// What survives from one borrower to the next (see `state.rs`).
    pub state: super::state::ConnState,
    /// The server status flags of the last answer that carried them (OK or
    /// EOF), starting with the greeting's: whether a transaction is open on
    /// this connection (`in_transaction`). The pool refuses to hand on a
    /// connection whose last known status says so.
    pub status: u16,
    /// The greeting's scramble: COM_CHANGE_USER authenticates against it.
    nonce: Vec<u8>,
    /// When the connection logged in (`ConnectParams::max_age`).
    born: std::time::Instant,
    /// Whom this connection is logged in as (never changes).
    pub login: Arc<Login>,
    /// Its place within the backend's `pool_max` (all logins together).
    pub permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The budget the permit belongs to.
    pub budget: Option<Arc<super::pool::Budget>>,
    /// The session thread whose driver the socket is registered with
    /// (`None`: tokio's shared pool; see `crate::affinity`).
    home: Option<u16>,
    /// The counter slot it claims (pooled connections; see `slot.rs`).
    pub slot: Option<super::slot::Slot>,
}

impl std::fmt::Debug for BackendConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendConn")
            .field("thread_id", &self.thread_id)
            .field("key", &self.key)
            .field("db", &self.db)
            .finish()
    }
}

/// Capabilities sluice itself needs on every backend connection.
fn base_capabilities() -> CapabilityFlags {
    CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
}

impl BackendConn {
    /// Connect as the group's account (`params`), authenticate, and return
    /// a ready connection.
    pub async fn connect(params: &ConnectParams, key: PoolKey) -> Result<BackendConn, BackendError> {
        let login = Login::password(&params.user, &params.password);
        Self::connect_as(params, &login, key).await
    }

    /// Connect as `login`.
    pub async fn connect_as(
        params: &ConnectParams,
        login: &Arc<Login>,
        key: PoolKey,
    ) -> Result<BackendConn, BackendError> {
        let fut = Self::connect_inner(params, login, key);
        match tokio::time::timeout(params.connect_timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(BackendError::Timeout(params.connect_timeout)),
        }
    }

    async fn connect_inner(
        params: &ConnectParams,
        login: &Arc<Login>,
        key: PoolKey,
    ) -> Result<BackendConn, BackendError> {
        let tcp = TcpStream::connect(&params.addr)
            .await
            .map_err(BackendError::Connect)?;
        tcp.set_nodelay(true).map_err(BackendError::Connect)?;
        let mut stream = PacketStream::new(Transport::Plain(tcp), BACKEND_MAX_PACKET);
        let hs_packet = stream.read_packet().await?;
        if hs_packet.payload.first() == Some(&0xff) {
            return Err(server_err(&hs_packet.payload));
        }
        let hs: HandshakePacket<'_> = ParseBuf(&hs_packet.payload)
            .parse(())
            .map_err(|_| ProtocolError::Malformed("backend handshake"))?;
        let server_caps = hs.capabilities();
        if !server_caps.contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
            return Err(BackendError::Unsupported("server without protocol 4.1".into()));
        }
        let mut wanted = base_capabilities() | CapabilityFlags::from_bits_truncate(key.caps);
        let server_ext = hs.mariadb_ext_capabilities().bits();
        let ext = key.mariadb_ext & server_ext;
        if ext != 0 {
            // A client without CLIENT_MYSQL (bit 0) announces MariaDB
            // extended capabilities in the handshake response.
            wanted.remove(CapabilityFlags::CLIENT_LONG_PASSWORD);
        }
        let mut caps = wanted & server_caps;
        let tls = match &params.tls {
            Some(tls) if server_caps.contains(CapabilityFlags::CLIENT_SSL) => {
                caps |= CapabilityFlags::CLIENT_SSL;
                Some(tls)
            }
            Some(tls) if tls.mode == BackendTlsMode::Preferred => None,
            Some(tls) => {
                return Err(BackendError::Tls(format!(
                    "the server does not offer TLS, and tls.mode is {}",
                    tls.mode.as_str()
                )))
            }
            None => None,
        };
        let nonce = hs.nonce();
        let nonce_for_auth = nonce.clone();
        let plugin = hs
            .auth_plugin()
            .map(|p| p.into_owned())
            .unwrap_or(AuthPlugin::MysqlNativePassword);
        let plugin = match plugin {
            AuthPlugin::MysqlNativePassword | AuthPlugin::CachingSha2Password => plugin,
            // Answer anything else with native; the server will switch us.
            _ => AuthPlugin::MysqlNativePassword,
        };
        // A login known only by SHA1(pw) answers with native; a server
        // that wants more switches us and gets a clear refusal.
        let plugin = match (&login.secret, plugin) {
            (Secret::NativeStage1(_), _) => AuthPlugin::MysqlNativePassword,
            (_, p) => p,
        };
        let scramble = login.scramble(&plugin, &nonce_for_auth)?;
        let resp = HandshakeResponse::new(
            Some(scramble),
            hs.server_version_parsed().unwrap_or((5, 5, 5)),
            Some(login.user.as_bytes()),
            None::<&[u8]>,
            Some(plugin.clone()),
            caps,
            None,
            BACKEND_MAX_PACKET as u32,
        )
        .with_mariadb_ext_capabilities(
            mysql_common::constants::MariadbCapabilities::from_bits_truncate(ext),
        );
        let mut buf = Vec::new();
        resp.serialize(&mut buf);
        // The collation byte comes from the client (HandshakeResponse::new
        // always writes utf8mb4_general_ci): offset 8 of the fixed header.
        buf[8] = key.collation;
        let mut seq = hs_packet.seq.wrapping_add(1);
        if let Some(tls) = tls {
            stream = super::tls::start(stream, &mut seq, &buf, tls, BACKEND_MAX_PACKET).await?;
        }
        stream.write_packet(&mut seq, &buf).await?;
        authenticate(&mut stream, params, login).await?;
        Ok(BackendConn {
            stream,
            thread_id: hs.connection_id(),
            caps,
            key,
            server_version: hs.server_version_str().into_owned(),
            server_collation: hs.default_collation(),
            server_mariadb_ext: if server_caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD) {
                0
            } else {
                server_ext
            },
            db: None,
            broken: false,
            dirty: false,
            no_reuse: false,
            state: super::state::ConnState::new(),
            status: hs.status_flags().bits(),
            nonce,
            born: std::time::Instant::now(),
            login: login.clone(),
            permit: None,
            budget: None,
            home: crate::affinity::here(),
            slot: None,
        })
    }

    /// Register the socket with the driver of the session thread this runs
    /// on, if it is registered with another one's (`runtime.per_core`; see
    /// `crate::affinity`): a borrower's call, before it uses the connection.
    /// A duplicate of the descriptor is registered here and the old one
    /// dropped (deregistered there, closed; the socket stays open through
    /// the duplicate), so buffers, TLS state and socket options are kept.
    /// Costs four system calls (dup, two `epoll_ctl`, close), once per move. When it fails the connection
    /// stays where it was and still works, woken through the other driver.
    /// `true`: it moved.
    pub fn settle(&mut self) -> bool {
        let here = crate::affinity::here();
        if self.home == here {
            return false;
        }
        let tcp = match self.stream.get_mut() {
            Transport::Plain(tcp) => tcp,
            Transport::Tls(tls) => tls.get_mut().0,
        };
        let moved = std::os::fd::AsFd::as_fd(&*tcp)
            .try_clone_to_owned()
            // (The duplicate shares the description's O_NONBLOCK, which
            // `from_std` requires.)
            .map(std::net::TcpStream::from)
            .and_then(TcpStream::from_std);
        match moved {
            Ok(new) => {
                *tcp = new;
                self.home = here;
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, "backend connection left on its first session thread");
                false
            }
        }
    }

    /// The statement-cache context of this connection's current state.
    pub fn stmt_context(&self) -> u64 {
        self.state.context(self.db.as_deref())
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        self.stream.get_ref().is_tls()
    }

    /// The TCP socket under any TLS.
    pub fn tcp(&self) -> &TcpStream {
        match self.stream.get_ref() {
            Transport::Plain(tcp) => tcp,
            Transport::Tls(tls) => tls.get_ref().0,
        }
    }

    /// What waits on the socket of a connection idle between commands.
    /// Peeks, never reads: under TLS a byte taken here would corrupt the
    /// stream. No system call in the common case: tokio remembers whether
    /// the socket became readable since the last short read.
    pub fn idle_state(&self) -> IdleState {
        use std::task::{Context, Poll, Waker};
        if !self.stream.rbuf.is_empty() {
            return IdleState::Data; // bytes nobody asked for
        }
        let mut probe = [0u8; 1];
        let mut buf = tokio::io::ReadBuf::new(&mut probe);
        let mut cx = Context::from_waker(Waker::noop());
        match self.tcp().poll_peek(&mut cx, &mut buf) {
            Poll::Pending => IdleState::Quiet,
            Poll::Ready(Err(_)) => IdleState::Closed,
            Poll::Ready(Ok(0)) => IdleState::Closed,
            Poll::Ready(Ok(_)) => IdleState::Data,
        }
    }

    /// Has the server closed this connection (restart, crash, `wait_timeout`)
    /// while it sat idle between commands? Asked before a held connection is
    /// reused: a statement sent into a dead connection gets an answer nobody
    /// can interpret (did it run?), while one sent after reconnecting either
    /// runs or gets a plain connect error. Unexpected bytes on a plaintext
    /// connection count as closed; under TLS they may be records such as
    /// session tickets, which the next read handles.
    pub fn closed_while_idle(&self) -> bool {
        match self.idle_state() {
            IdleState::Quiet => false,
            IdleState::Closed => true,
            IdleState::Data => !self.is_tls() || !self.stream.rbuf.is_empty(),
        }
    }

    /// The last answer said a transaction is open (SERVER_STATUS_IN_TRANS):
    /// its locks and uncommitted rows belong to the session that opened it.
    pub fn in_transaction(&self) -> bool {
        self.status & SERVER_STATUS_IN_TRANS != 0
    }

    /// Logged in longer ago than `max_age` (zero: never too old): the
    /// privileges it logged in with may no longer be the account's.
    pub fn too_old(&self, max_age: Duration) -> bool {
        !max_age.is_zero() && self.born.elapsed() > max_age
    }

    /// Record the status flags of an answer relayed to a client (`None`:
    /// the answer carried none, e.g. an ERR; the previous flags stand).
    pub fn note_status(&mut self, status: Option<u16>) {
        if let Some(st) = status {
            self.status = st;
        }
    }

    pub fn deprecate_eof(&self) -> bool {
        self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF)
    }

    /// Send a command whose answer is one OK or ERR packet.
    pub async fn simple_command(
        &mut self,
        cmd: u8,
        arg: &[u8],
    ) -> Result<Result<OkInfo, ErrPacket>, BackendError> {
        self.send_command(cmd, arg).await?;
        let p = self.read_packet().await?;
        match p.payload.first() {
            Some(0x00) | Some(0xfe) => {
                let ok = parse_ok(&p.payload).unwrap_or(OkInfo {
                    affected_rows: 0,
                    last_insert_id: 0,
                    status: self.status,
                    warnings: 0,
                });
                self.status = ok.status;
                Ok(Ok(ok))
            }
            Some(0xff) => Ok(Err(ErrPacket::parse(&p.payload)
                .unwrap_or_else(|| ErrPacket::new(2027, "HY000", "Malformed packet")))),
            _ => {
                self.broken = true;
                Err(ProtocolError::Malformed("unexpected answer to a simple command").into())
            }
        }
    }

    /// Send one command (sequence id 0); the caller reads the answer. A
    /// failed write leaves the connection broken.
    pub async fn send_command(&mut self, cmd: u8, arg: &[u8]) -> Result<(), BackendError> {
        let mut payload = Vec::with_capacity(1 + arg.len());
        payload.push(cmd);
        payload.extend_from_slice(arg);
        let mut seq = 0;
        if let Err(e) = self.stream.write_packet(&mut seq, &payload).await {
            self.broken = true;
            return Err(e.into());
        }
        Ok(())
    }

    /// Read one packet of an answer; a failed read leaves the connection
    /// broken.
    async fn read_packet(&mut self) -> Result<Packet, BackendError> {
        self.stream.read_packet().await.map_err(|e| {
            self.broken = true;
            e.into()
        })
    }

    /// Send one command and consume its whole response (sluice's own
    /// statements: nothing is relayed). Returns the response's tracker and the
    /// first ERR it contained.
    async fn command_consume(
        &mut self,
        cmd: u8,
        arg: &[u8],
        kind: ResponseKind,
    ) -> Result<(ResponseTracker, Option<ErrPacket>), BackendError> {
        self.command_consume_row(cmd, arg, kind, &mut None).await
    }

    /// `command_consume`, keeping the first row of the first result in `row`.
    async fn command_consume_row(
        &mut self,
        cmd: u8,
        arg: &[u8],
        kind: ResponseKind,
        row: &mut Option<Vec<u8>>,
    ) -> Result<(ResponseTracker, Option<ErrPacket>), BackendError> {
        self.send_command(cmd, arg).await?;
        let mut tracker = ResponseTracker::new(kind, self.deprecate_eof());
        let mut first_err = None;
        loop {
            let p = self.read_packet().await?;
            if p.payload.first() == Some(&0xff) && first_err.is_none() {
                first_err = ErrPacket::parse(&p.payload);
            }
            if row.is_none() && tracker.in_rows() && !matches!(p.payload.first(), Some(0xfe | 0xff)) {
                *row = Some(p.payload.to_vec());
            }
            match tracker.feed(p.payload.len(), &p.payload) {
                Step::More => {}
                Step::Done => {
                    self.note_status(tracker.last_status);
                    return Ok((tracker, first_err));
                }
                Step::LocalInfile => {
                    // Never expected from sluice's own statements: send no file.
                    let mut s = p.seq.wrapping_add(1);
                    if let Err(e) = self.stream.write_packet(&mut s, &[]).await {
                        self.broken = true;
                        return Err(e.into());
                    }
                    tracker.resume_after_infile();
                }
            }
        }
    }

    /// Run a statement and discard any result; returns the server's ERR if it failed.
    pub async fn query_drop(&mut self, sql: &str) -> Result<Result<(), ErrPacket>, BackendError> {
        let (_, err) = self
            .command_consume(COM_QUERY, sql.as_bytes(), ResponseKind::Query)
            .await?;
        Ok(match err {
            Some(e) => Err(e),
            None => Ok(()),
        })
    }

    /// Run a query returning one unsigned integer (first column of the first
    /// row; `None` for NULL, no row, or not a number).
    pub async fn query_u64(&mut self, sql: &str) -> Result<Result<Option<u64>, ErrPacket>, BackendError> {
        Ok(self
            .query_text(sql)
            .await?
            .map(|v| v.and_then(|t| t.parse().ok())))
    }

    /// [`Self::query_text`] for sluice's own query on a connection that has a
    /// session's settings: run without its `sql_select_limit`, which would cut the
    /// answer (to no row at all under 0).
    pub async fn session_query_text(
        &mut self,
        sql: &str,
    ) -> Result<Result<Option<String>, ErrPacket>, BackendError> {
        self.query_text(&unlimited(sql)).await
    }

    /// Run a query returning one text value (first column of the first row;
    /// `None` for NULL or no row).
    pub async fn query_text(&mut self, sql: &str) -> Result<Result<Option<String>, ErrPacket>, BackendError> {
        let mut row = None;
        let (_, err) = self
            .command_consume_row(COM_QUERY, sql.as_bytes(), ResponseKind::Query, &mut row)
            .await?;
        if let Some(e) = err {
            return Ok(Err(e));
        }
        let value = row.as_deref().and_then(|r| {
            let (len, n) = crate::protocol::packets::read_lenenc(r)?;
            let text = r.get(n..n + usize::try_from(len).ok()?)?;
            Some(String::from_utf8_lossy(text).into_owned())
        });
        Ok(Ok(value))
    }

    /// Prepare a statement for sluice's own use (lazily, on a connection the
    /// client did not prepare it on); the response is consumed here.
    pub async fn prepare(&mut self, sql: &[u8]) -> Result<Result<u32, ErrPacket>, BackendError> {
        let (tracker, err) = self
            .command_consume(
                crate::protocol::consts::COM_STMT_PREPARE,
                sql,
                ResponseKind::Prepare,
            )
            .await?;
        match (err, tracker.prepared) {
            (Some(e), _) => Ok(Err(e)),
            (None, Some(info)) => Ok(Ok(info.stmt_id)),
            (None, None) => {
                self.broken = true;
                Err(ProtocolError::Malformed("prepare answered without a statement id").into())
            }
        }
    }

    /// COM_STMT_CLOSE (no response).
    pub async fn close_stmt(&mut self, id: u32) -> Result<(), BackendError> {
        let mut payload = [crate::protocol::consts::COM_STMT_CLOSE, 0, 0, 0, 0];
        payload[1..5].copy_from_slice(&id.to_le_bytes());
        let mut seq = 0;
        self.stream.write_packet(&mut seq, &payload).await.map_err(|e| {
            self.broken = true;
            e.into()
        })
    }

    pub async fn init_db(&mut self, db: &str) -> Result<Result<(), ErrPacket>, BackendError> {
        let r = self.simple_command(COM_INIT_DB, db.as_bytes()).await?;
        if r.is_ok() {
            self.db = Some(db.to_string());
        }
        Ok(r.map(|_| ()))
    }

    /// Bring the connection back to the state of a fresh login with
    /// COM_CHANGE_USER: like COM_RESET_CONNECTION (transactions, temporary
    /// tables, variables, prepared statements) but also clears the default
    /// database, which MariaDB keeps across a reset, and restores the
    /// handshake collation.
    /// The connection stays logged in as its own `login`.
    pub async fn reset_as_new(&mut self, params: &ConnectParams) -> Result<(), BackendError> {
        let plugin = AuthPlugin::MysqlNativePassword;
        let login = self.login.clone();
        let scramble = match login.scramble(&plugin, &self.nonce) {
            Ok(s) => s,
            Err(e) => {
                self.broken = true;
                return Err(e);
            }
        };
        let mut payload = Vec::with_capacity(64 + login.user.len());
        payload.push(crate::protocol::consts::COM_CHANGE_USER);
        payload.extend_from_slice(login.user.as_bytes());
        payload.push(0);
        payload.push(scramble.len() as u8);
        payload.extend_from_slice(&scramble);
        payload.push(0); // no default database
        payload.extend_from_slice(&u16::from(self.key.collation).to_le_bytes());
        payload.extend_from_slice(plugin.as_bytes());
        payload.push(0);
        let mut seq = 0;
        let r = async {
            self.stream.write_packet(&mut seq, &payload).await?;
            authenticate(&mut self.stream, params, &login).await
        }
        .await;
        match r {
            Ok(()) => {
                self.db = None;
                self.dirty = false;
                self.state.forget();
                // COM_CHANGE_USER rolled back any transaction; a fresh
                // login's flags (its OK is consumed by `authenticate`).
                self.status = SERVER_STATUS_AUTOCOMMIT;
                self.claim_slot().await
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// `KILL QUERY <thread>` (`query_only`) or `KILL CONNECTION <thread>` on a
    /// side connection of its own, opened for this and closed at once: the
    /// connection running the statement is busy and cannot carry it. Used
    /// when the client of a running statement is gone, or another session
    /// killed it; `thread` must be a connection sluice still holds open, so
    /// the id cannot have been reused by the server for someone else's.
    pub async fn kill_thread(
        params: &ConnectParams,
        thread: u32,
        query_only: bool,
    ) -> Result<Result<(), ErrPacket>, BackendError> {
        let mut side = BackendConn::connect(params, PoolKey::sluice_own()).await?;
        let sql = if query_only {
            format!("KILL QUERY {thread}")
        } else {
            format!("KILL CONNECTION {thread}")
        };
        match tokio::time::timeout(params.connect_timeout, side.query_drop(&sql)).await {
            Ok(r) => r,
            Err(_) => Err(BackendError::Timeout(params.connect_timeout)),
        }
    }

    pub async fn ping(&mut self) -> Result<(), BackendError> {
        match self.simple_command(COM_PING, &[]).await? {
            Ok(_) => Ok(()),
            Err(e) => Err(BackendError::Server(e)),
        }
    }
}

fn server_err(payload: &[u8]) -> BackendError {
    BackendError::Server(
        ErrPacket::parse(payload).unwrap_or_else(|| ErrPacket::new(2027, "HY000", "Malformed packet")),
    )
}

/// `sql` (a SELECT of sluice's own, on a connection that has a session's settings) run
/// without the session's `sql_select_limit`, which the server would apply to its answer.
pub fn unlimited(sql: &str) -> String {
    format!("SET STATEMENT {NO_SELECT_LIMIT} FOR {sql}")
}

/// The assignment that lifts a session's `sql_select_limit` for one statement.
pub const NO_SELECT_LIMIT: &str = "sql_select_limit = 18446744073709551615";
