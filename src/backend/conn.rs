//! One raw connection from sluice to a MySQL/MariaDB server.
//!
//! sluice authenticates to backends as its own configured user, with the
//! client's format-affecting capabilities and collation (see `PoolKey`), so
//! the server's response bytes can be relayed to that client untouched.

use std::time::Duration;

use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, AuthSwitchRequest, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use tokio::net::TcpStream;

use crate::protocol::consts::{CapabilityFlags, COM_INIT_DB, COM_PING, COM_QUERY, COM_RESET_CONNECTION};
use crate::protocol::packets::{parse_ok, ErrPacket, OkInfo};
use crate::protocol::response::{ResponseKind, ResponseTracker, Step};
use crate::protocol::{PacketStream, ProtocolError};

use super::error::BackendError;

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

/// Where and as whom to connect.
#[derive(Debug, Clone)]
pub struct ConnectParams {
    pub addr: String,
    pub user: String,
    pub password: String,
    pub connect_timeout: Duration,
}

pub struct BackendConn {
    pub stream: PacketStream<TcpStream>,
    /// The server's thread id for this connection.
    pub thread_id: u32,
    pub caps: CapabilityFlags,
    pub key: PoolKey,
    pub server_version: String,
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
    /// The greeting's scramble: COM_CHANGE_USER authenticates against it.
    nonce: Vec<u8>,
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
    /// Connect, authenticate, and return a ready connection.
    pub async fn connect(params: &ConnectParams, key: PoolKey) -> Result<BackendConn, BackendError> {
        let fut = Self::connect_inner(params, key);
        match tokio::time::timeout(params.connect_timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(BackendError::Timeout(params.connect_timeout)),
        }
    }

    async fn connect_inner(params: &ConnectParams, key: PoolKey) -> Result<BackendConn, BackendError> {
        let tcp = TcpStream::connect(&params.addr)
            .await
            .map_err(BackendError::Connect)?;
        tcp.set_nodelay(true).map_err(BackendError::Connect)?;
        let mut stream = PacketStream::new(tcp, BACKEND_MAX_PACKET);
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
        let caps = wanted & server_caps;
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
        let data = plugin.gen_data(Some(&params.password), &nonce_for_auth);
        let mut scramble = Vec::new();
        if let Some(d) = &data {
            d.serialize(&mut scramble);
        }
        let resp = HandshakeResponse::new(
            Some(scramble),
            hs.server_version_parsed().unwrap_or((5, 5, 5)),
            Some(params.user.as_bytes()),
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
        stream.write_packet(&mut seq, &buf).await?;
        authenticate(&mut stream, params).await?;
        Ok(BackendConn {
            stream,
            thread_id: hs.connection_id(),
            caps,
            key,
            server_version: hs.server_version_str().into_owned(),
            server_mariadb_ext: if server_caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD) {
                0
            } else {
                server_ext
            },
            db: None,
            broken: false,
            dirty: false,
            no_reuse: false,
            nonce,
        })
    }

    /// Has the server closed this connection (restart, crash, `wait_timeout`)
    /// while it sat idle between commands? Asked before a held connection is
    /// reused: a statement sent into a dead connection gets an answer nobody
    /// can interpret (did it run?), while one sent after reconnecting either
    /// runs or gets a plain connect error.
    ///
    /// No system call in the common case: tokio remembers whether the socket
    /// became readable since the last short read, and an idle connection at a
    /// command boundary has nothing to read unless the server hung up.
    pub fn closed_while_idle(&self) -> bool {
        use std::task::{Context, Poll, Waker};
        if !self.stream.rbuf.is_empty() {
            return true; // bytes nobody asked for: not a usable command boundary
        }
        let mut cx = Context::from_waker(Waker::noop());
        match self.stream.get_ref().poll_read_ready(&mut cx) {
            Poll::Pending => false,
            Poll::Ready(Err(_)) => true,
            Poll::Ready(Ok(())) => {
                let mut probe = [0u8; 1];
                !matches!(
                    self.stream.get_ref().try_read(&mut probe),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
                )
            }
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
        let p = match self.stream.read_packet().await {
            Ok(p) => p,
            Err(e) => {
                self.broken = true;
                return Err(e.into());
            }
        };
        match p.payload.first() {
            Some(0x00) | Some(0xfe) => Ok(Ok(parse_ok(&p.payload).unwrap_or(OkInfo {
                affected_rows: 0,
                last_insert_id: 0,
                status: 0,
                warnings: 0,
            }))),
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

    /// Send one command and consume its whole response (sluice's own
    /// statements: nothing is relayed). Returns the response's tracker and the
    /// first ERR it contained.
    async fn command_consume(
        &mut self,
        cmd: u8,
        arg: &[u8],
        kind: ResponseKind,
    ) -> Result<(ResponseTracker, Option<ErrPacket>), BackendError> {
        self.send_command(cmd, arg).await?;
        let mut tracker = ResponseTracker::new(kind, self.deprecate_eof());
        let mut first_err = None;
        loop {
            let p = match self.stream.read_packet().await {
                Ok(p) => p,
                Err(e) => {
                    self.broken = true;
                    return Err(e.into());
                }
            };
            if p.payload.first() == Some(&0xff) && first_err.is_none() {
                first_err = ErrPacket::parse(&p.payload);
            }
            match tracker.feed(p.payload.len(), &p.payload) {
                Step::More => {}
                Step::Done => return Ok((tracker, first_err)),
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

    /// Bring the server session back to the state of a fresh connection:
    /// rolls back transactions, drops temporary tables, user variables,
    /// prepared statements and session variables.
    pub async fn reset(&mut self) -> Result<(), BackendError> {
        match self.simple_command(COM_RESET_CONNECTION, &[]).await? {
            Ok(_) => {
                self.db = None;
                self.dirty = false;
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(BackendError::Server(e))
            }
        }
    }

    /// Bring the connection back to the state of a fresh login with
    /// COM_CHANGE_USER: like COM_RESET_CONNECTION (transactions, temporary
    /// tables, variables, prepared statements) but also clears the default
    /// database, which MariaDB keeps across a reset, and restores the
    /// handshake collation.
    pub async fn reset_as_new(&mut self, params: &ConnectParams) -> Result<(), BackendError> {
        let plugin = AuthPlugin::MysqlNativePassword;
        let mut scramble = Vec::new();
        if let Some(d) = plugin.gen_data(Some(&params.password), &self.nonce) {
            d.serialize(&mut scramble);
        }
        let mut payload = Vec::with_capacity(64 + params.user.len());
        payload.push(crate::protocol::consts::COM_CHANGE_USER);
        payload.extend_from_slice(params.user.as_bytes());
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
            authenticate(&mut self.stream, params).await
        }
        .await;
        match r {
            Ok(()) => {
                self.db = None;
                self.dirty = false;
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
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

/// Finish authentication after the handshake response: handle auth switch,
/// caching_sha2 fast-auth success, and the final OK/ERR.
async fn authenticate(
    stream: &mut PacketStream<TcpStream>,
    params: &ConnectParams,
) -> Result<(), BackendError> {
    loop {
        let p = stream.read_packet().await?;
        let mut seq = p.seq.wrapping_add(1);
        match p.payload.first() {
            Some(0x00) => return Ok(()),
            Some(0xff) => return Err(server_err(&p.payload)),
            Some(0xfe) => {
                let sw: AuthSwitchRequest<'_> = ParseBuf(&p.payload)
                    .parse(())
                    .map_err(|_| ProtocolError::Malformed("auth switch request"))?;
                let plugin = sw.auth_plugin().into_owned();
                let mut nonce = sw.plugin_data().to_vec();
                // The nonce may carry a trailing NUL.
                if nonce.last() == Some(&0) {
                    nonce.pop();
                }
                let data = match plugin {
                    AuthPlugin::MysqlNativePassword | AuthPlugin::CachingSha2Password => {
                        plugin.gen_data(Some(&params.password), &nonce)
                    }
                    AuthPlugin::MysqlClearPassword => {
                        return Err(BackendError::Unsupported(
                            "backend asks for mysql_clear_password, which sluice only sends over TLS".into(),
                        ))
                    }
                    other => {
                        return Err(BackendError::Unsupported(format!(
                            "backend auth plugin {}",
                            String::from_utf8_lossy(other.as_bytes())
                        )))
                    }
                };
                let mut buf = Vec::new();
                if let Some(d) = data {
                    d.serialize(&mut buf);
                }
                stream.write_packet(&mut seq, &buf).await?;
            }
            Some(0x01) => {
                // caching_sha2_password: 0x03 = fast auth succeeded (an OK
                // follows); 0x04 = full auth needed, which requires TLS or RSA.
                match p.payload.get(1) {
                    Some(0x03) => continue,
                    Some(0x04) => {
                        return Err(BackendError::Unsupported(
                            "backend requires caching_sha2_password full authentication; \
                             connect once with the mysql client to fill the server's cache, \
                             or use mysql_native_password for the sluice user"
                                .into(),
                        ))
                    }
                    _ => return Err(ProtocolError::Malformed("auth more data").into()),
                }
            }
            _ => return Err(ProtocolError::Malformed("unexpected packet during authentication").into()),
        }
    }
}
