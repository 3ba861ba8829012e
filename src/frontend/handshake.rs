//! The server side of the MySQL handshake: greeting, optional TLS upgrade,
//! and authentication (mysql_native_password, caching_sha2_password, auth
//! switch). Ends before the final OK, which the session sends once it has
//! checked the default database on a backend.

use std::net::SocketAddr;

use mysql_common::constants::StatusFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use tokio::net::TcpStream;

use crate::error;
use crate::protocol::consts::{offered_capabilities, CapabilityFlags, SERVER_STATUS_AUTOCOMMIT};
use crate::protocol::packets::ErrPacket;
use crate::protocol::{PacketStream, ProtocolError};

use super::auth;
use super::auth_exchange::{self, ExchangeError};
use super::io::ClientIo;
use super::limits::{HandshakeSlot, UserSlot};
use super::shared::Shared;
/// A handshake response is small; refuse to buffer more.
const HANDSHAKE_MAX_PACKET: usize = 64 * 1024;
pub struct Authed {
    pub client: PacketStream<ClientIo>,
    pub user: String,
    pub caps: CapabilityFlags,
    pub collation: u8,
    /// MariaDB extended capabilities agreed with the client.
    pub mariadb_ext: u32,
    pub db: Option<String>,
    /// Sequence id for the next packet to the client (the final OK/ERR).
    pub seq: u8,
    /// The greeting's scramble, needed again by COM_CHANGE_USER.
    pub nonce: [u8; 20],
    /// This session counted against `users[].max_connections`.
    pub user_slot: UserSlot,
    /// Whom the session's statements run as on the backends (`None`: the
    /// group's account, for configured users without `backend:`).
    pub login: Option<std::sync::Arc<crate::backend::Login>>,
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    /// Refused with an error already sent (or attempted) to the client.
    #[error("{0}")]
    Refused(ErrPacket),
    #[error("handshake timed out")]
    Timeout,
}

use auth_exchange::NATIVE;

/// Greeting to authenticated, within `limits.handshake_timeout` (MariaDB's
/// connect_timeout). However it ends, the connection stops counting as
/// unauthenticated (`limits.max_unauthenticated*`): `slot` is dropped.
/// (Passed down, not held in a task-local: a task-local's scope is entered
/// and left at every poll of the session's task, for its whole life.)
pub async fn handshake(
    socket: TcpStream,
    peer: SocketAddr,
    conn_id: u32,
    shared: &Shared,
    slot: HandshakeSlot,
) -> Result<Authed, HandshakeError> {
    let timeout = shared.runtime().config.limits.handshake_timeout;
    let r = match tokio::time::timeout(timeout, handshake_inner(socket, peer, conn_id, shared)).await {
        Ok(r) => r,
        Err(_) => Err(HandshakeError::Timeout),
    };
    drop(slot);
    r
}

/// The greeting (protocol 10) offering `offered` and mysql_native_password
/// with `nonce`; `ext`: MariaDB extended capabilities, in the reserved bytes.
pub fn greeting(
    version: &[u8],
    conn_id: u32,
    nonce: &[u8; 20],
    offered: CapabilityFlags,
    collation: u8,
    ext: u32,
) -> Vec<u8> {
    let mut scramble_2 = nonce[8..].to_vec();
    scramble_2.push(0);
    let mut first8 = [0u8; 8];
    first8.copy_from_slice(&nonce[..8]);
    let greeting = HandshakePacket::new(
        10,
        version,
        conn_id,
        first8,
        Some(scramble_2),
        offered,
        collation,
        StatusFlags::from_bits_truncate(SERVER_STATUS_AUTOCOMMIT),
        Some(NATIVE),
    )
    .with_mariadb_ext_capabilities(mysql_common::constants::MariadbCapabilities::from_bits_truncate(
        ext,
    ));
    let mut buf = Vec::new();
    greeting.serialize(&mut buf);
    buf
}

/// The client's next packet in the handshake, which must carry sequence id
/// `*seq`; a packet out of order is refused with ERR 1156, as MariaDB does.
async fn read_in_order(
    client: &mut PacketStream<ClientIo>,
    seq: &mut u8,
) -> Result<bytes::BytesMut, HandshakeError> {
    let p = client.read_packet().await?;
    if p.seq != *seq {
        return Err(refuse(client, seq, out_of_order()).await);
    }
    *seq = p.seq.wrapping_add(1);
    Ok(p.payload)
}

/// MariaDB's answer to a packet out of order during authentication
/// (checked against MariaDB 10.11 by tests/security.rs).
pub fn out_of_order() -> ErrPacket {
    ErrPacket::new(
        crate::protocol::consts::errcode::ER_NET_PACKETS_OUT_OF_ORDER,
        "08S01",
        "Got packets out of order",
    )
}

/// Map a failed exchange: out-of-order packets get ERR 1156.
pub async fn exchange_failed<S>(
    client: &mut PacketStream<S>,
    seq: &mut u8,
    e: ExchangeError,
) -> HandshakeError
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match e {
        ExchangeError::Protocol(e) => HandshakeError::Protocol(e),
        ExchangeError::OutOfOrder { .. } => {
            let err = out_of_order();
            let _ = client.write_packet(seq, &err.encode()).await;
            HandshakeError::Refused(err)
        }
    }
}

async fn refuse(client: &mut PacketStream<ClientIo>, seq: &mut u8, err: ErrPacket) -> HandshakeError {
    let _ = client.write_packet(seq, &err.encode()).await;
    HandshakeError::Refused(err)
}

async fn handshake_inner(
    socket: TcpStream,
    peer: SocketAddr,
    conn_id: u32,
    shared: &Shared,
) -> Result<Authed, HandshakeError> {
    let mut client = PacketStream::new(ClientIo::Plain(socket), HANDSHAKE_MAX_PACKET);
    let nonce = auth::gen_nonce();
    let mut offered = offered_capabilities();
    if shared.tls.is_some() {
        offered |= CapabilityFlags::CLIENT_SSL;
    }
    let version = shared.server_version.load_full();
    let offered_ext = shared.offered_ext();
    if offered_ext != 0 {
        // Like a MariaDB server: no CLIENT_MYSQL bit, extended capabilities
        // in the greeting's reserved bytes.
        offered.remove(CapabilityFlags::CLIENT_LONG_PASSWORD);
    }
    let buf = greeting(
        version.as_bytes(),
        conn_id,
        &nonce,
        offered,
        shared.greeting_collation(),
        offered_ext,
    );
    let mut seq = 0u8;
    client.write_packet(&mut seq, &buf).await?;

    let mut p = read_in_order(&mut client, &mut seq).await?;
    // An SSL request is the first 32 bytes of a handshake response.
    if is_ssl_request(&p) {
        let Some(acceptor) = shared.tls.clone() else {
            return Err(refuse(
                &mut client,
                &mut seq,
                error::bad_handshake("TLS is not enabled on this sluice"),
            )
            .await);
        };
        let (ClientIo::Plain(tcp), early) = client.into_parts() else {
            return Err(ProtocolError::Malformed("TLS requested twice").into());
        };
        let tls = acceptor
            .accept(super::io::Prefixed::new(early, tcp))
            .await
            .map_err(ProtocolError::Io)?;
        client = PacketStream::new(ClientIo::Tls(Box::new(tls)), HANDSHAKE_MAX_PACKET);
        p = read_in_order(&mut client, &mut seq).await?;
    }
    let hello = match parse_handshake_response(&p, offered, offered_ext) {
        Ok(h) => h,
        Err(e) => return Err(refuse(&mut client, &mut seq, e).await),
    };
    let ClientResponse {
        caps,
        user: user_name,
        db,
        collation,
        mariadb_ext,
        scramble,
        plugin,
    } = hello;
    // The users of the newest configuration (a reload may have changed them).
    let rt = shared.runtime();
    let tls = client.get_ref().is_tls();
    let verdict = match login(
        &mut client,
        &mut seq,
        shared,
        &rt.config,
        &user_name,
        peer.ip(),
        plugin,
        &nonce,
        &scramble,
        tls,
    )
    .await
    {
        Ok(v) => v,
        Err(e) => return Err(exchange_failed(&mut client, &mut seq, e).await),
    };
    let backend_login = match verdict {
        Verdict::Accepted(l, account) => (l, account),
        Verdict::Denied(e) => return Err(refuse(&mut client, &mut seq, e).await),
    };
    let (backend_login, account) = backend_login;
    // A place among the client sessions, taken only now: connections still
    // in their handshake have a budget of their own, so they cannot lock
    // logins out.
    let Some(client_slot) = shared.clients.try_acquire() else {
        return Err(refuse(&mut client, &mut seq, error::too_many_connections()).await);
    };
    // Counted from here until the session ends (the slot is its guard).
    let user_slot = match shared.user_limits.acquire_for(&user_name, account.as_ref()) {
        Ok(slot) => slot.with_client(client_slot),
        Err(e) => return Err(refuse(&mut client, &mut seq, e).await),
    };
    client.set_max_packet(shared.max_packet);
    Ok(Authed {
        user_slot,
        client,
        user: user_name,
        caps,
        collation,
        mariadb_ext,
        db,
        seq,
        nonce,
        login: backend_login,
    })
}

/// How a login ended.
pub(crate) enum Verdict {
    /// Authenticated; statements run as this backend login (`None`: the
    /// group's account); a server account's session limit.
    Accepted(
        Option<std::sync::Arc<crate::backend::Login>>,
        Option<super::limits::AccountLimit>,
    ),
    /// Refused with this error (the server's own for the same case).
    Denied(ErrPacket),
}

/// Authenticate `name` connecting from `ip` (login or COM_CHANGE_USER):
/// against `users:` and/or the server's accounts (`auth.mode`), through
/// the same bounded exchange for unknown users (see `auth_exchange`), then
/// the TLS requirement and account locking, in the server's order.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn login<S>(
    client: &mut PacketStream<S>,
    seq: &mut u8,
    shared: &Shared,
    config: &crate::config::Config,
    name: &str,
    ip: std::net::IpAddr,
    plugin: Option<AuthPlugin<'static>>,
    nonce: &[u8; 20],
    scramble: &[u8],
    tls: bool,
) -> Result<Verdict, ExchangeError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use crate::config::{Credential, User};
    let auth = &config.auth;
    let host = ip.to_string();
    let denied = || Verdict::Denied(error::access_denied(name, &host, !scramble.is_empty()));
    let tls_required = config.tls.as_ref().is_some_and(|t| t.require);
    let configured = if auth.config() {
        config.users.iter().find(|u| u.name == name)
    } else {
        None
    };
    if let Some(u) = configured {
        let proof = auth_exchange::authenticate(client, seq, u, plugin, nonce, scramble, tls).await?;
        // Checked after the password, as MariaDB checks REQUIRE SSL: the answer
        // to a plaintext login is the same access denied as for a wrong one.
        let tls_ok = tls || !(u.require_tls || tls_required);
        if !(proof.proved && tls_ok) {
            return Ok(denied());
        }
        let login = u
            .backend
            .as_ref()
            .map(|b| shared.accounts.mapped_login(&b.user, &b.password));
        return Ok(Verdict::Accepted(login, None));
    }
    if !auth.server() {
        let (user, _) = auth_exchange::account(&config.users, name);
        let _ = auth_exchange::authenticate(client, seq, &user, plugin, nonce, scramble, tls).await?;
        return Ok(denied());
    }
    // The server's accounts. An account sluice cannot check (another
    // plugin) or none at all goes through the exchange of a made-up native
    // account, like every real one here.
    let snap = shared.accounts.snapshot();
    let account = snap.find(name, ip);
    let credential = match account.as_ref().map(|a| &a.method) {
        Some(crate::auth::Method::Native(h2)) => Credential::NativeHash(*h2),
        Some(crate::auth::Method::NoPassword) => Credential::Password(String::new()),
        _ => Credential::NativeHash(super::auth::gen_nonce()),
    };
    let checkable = account
        .as_ref()
        .is_some_and(|a| !matches!(a.method, crate::auth::Method::Unsupported(_)));
    let user = User {
        name: name.to_owned(),
        credential,
        max_connections: 0,
        require_tls: false,
        backend: None,
    };
    let proof = auth_exchange::authenticate(client, seq, &user, plugin, nonce, scramble, tls).await?;
    let mut found = (checkable && proof.proved).then(|| (account.clone(), proof.stage1));
    // The account as last read, for the log line of a refusal.
    let mut last_read = account.clone();
    if found.is_none() {
        // Maybe the account was created or its password changed since the
        // last read: read them again (rate-limited) and check the same
        // answer against what the server has now.
        if let Some(resp) = &proof.native_response {
            let wait = (auth.refresh / 2).max(std::time::Duration::from_millis(500));
            let snap = shared.accounts.refresh_now(wait).await;
            let again = snap.find(name, ip);
            last_read = again.clone();
            found = match again.as_ref().map(|a| &a.method) {
                Some(crate::auth::Method::Native(h2)) => {
                    crate::auth::native::recover_stage1(h2, nonce, resp).map(|h1| (again.clone(), Some(h1)))
                }
                Some(crate::auth::Method::NoPassword) if resp.is_empty() => Some((again.clone(), None)),
                _ => None,
            };
        }
    }
    let Some((Some(account), stage1)) = found else {
        if let Some(a) = &last_read {
            if let crate::auth::Method::Unsupported(p) = &a.method {
                tracing::info!(
                    account = %crate::logging::escaped(&a.name(), 256),
                    plugin = %crate::logging::escaped(p, 64),
                    "login refused: sluice cannot authenticate this account's plugin (only mysql_native_password)"
                );
            }
        }
        return Ok(denied());
    };
    if !tls && tls_required {
        return Ok(denied());
    }
    // The account's own REQUIRE, demanded of the client's connection to
    // sluice (whatever sluice's connections to the backends use), checked
    // after the password as the server checks it.
    match account.tls {
        crate::auth::rights::TlsRequirement::None => {}
        crate::auth::rights::TlsRequirement::Any if tls => {}
        crate::auth::rights::TlsRequirement::Any => return Ok(denied()),
        crate::auth::rights::TlsRequirement::X509 | crate::auth::rights::TlsRequirement::Specified => {
            tracing::info!(
                account = %crate::logging::escaped(&account.name(), 256),
                "login refused: the account requires a client certificate (REQUIRE X509, ISSUER, \
                 SUBJECT or CIPHER), which sluice does not verify; log in directly or drop the requirement"
            );
            return Ok(denied());
        }
    }
    if account.locked {
        // MariaDB checks the lock after the password (a wrong one gets 1045).
        return Ok(Verdict::Denied(ErrPacket::new(
            crate::protocol::consts::errcode::ER_ACCOUNT_HAS_BEEN_LOCKED,
            "HY000",
            "Access denied, this account is locked",
        )));
    }
    if let Some(limits) = &account.hourly_limits {
        tracing::info!(
            account = %crate::logging::escaped(&account.name(), 256),
            limits = %crate::logging::escaped(limits, 128),
            "login refused: the account has hourly resource limits, which the server would count \
             on sluice's pooled connections (sluice's own statements charged, replica reads and \
             reused logins not); log in directly or drop the limits"
        );
        // After the password (the client proved who it is), so the answer
        // may say why.
        return Ok(Verdict::Denied(ErrPacket::new(
            crate::protocol::consts::errcode::ER_ACCESS_DENIED_ERROR,
            "28000",
            format!(
                "Access denied for user '{name}'@'{host}': the account has {limits}, which sluice \
                 cannot count as the server does through pooled connections; log in to the server \
                 directly or drop the limit"
            ),
        )));
    }
    let max = account.max_user_connections as usize;
    let make = || match stage1 {
        Some(h1) => crate::backend::Login::native(name, h1, max),
        None => crate::backend::Login::password(name, ""),
    };
    // The anonymous account serves many names: no shared login.
    let login = if account.user.is_empty() {
        make()
    } else {
        account.login(make)
    };
    let limit = super::limits::AccountLimit {
        key: account.name(),
        max: account.max_user_connections,
    };
    Ok(Verdict::Accepted(Some(login), Some(limit)))
}

/// Is the client's first packet an SSL request: the first 32 bytes of a
/// handshake response, with CLIENT_SSL set?
pub fn is_ssl_request(payload: &[u8]) -> bool {
    payload.len() == 32 && caps_of(payload).contains(CapabilityFlags::CLIENT_SSL)
}

fn caps_of(payload: &[u8]) -> CapabilityFlags {
    let mut b = [0u8; 4];
    if let Some(head) = payload.get(..4) {
        b.copy_from_slice(head);
    }
    CapabilityFlags::from_bits_truncate(u32::from_le_bytes(b))
}

/// What sluice keeps of a client's handshake response.
#[derive(Debug, Clone)]
pub struct ClientResponse {
    /// Capabilities agreed: the client's, limited to those offered.
    pub caps: CapabilityFlags,
    /// The user name (lossily decoded).
    pub user: String,
    /// The default database, when one was given and is not empty.
    pub db: Option<String>,
    pub collation: u8,
    /// MariaDB extended capabilities agreed with the client (0 for a client
    /// that announced CLIENT_MYSQL).
    pub mariadb_ext: u32,
    /// The client's answer to the greeting's scramble.
    pub scramble: Vec<u8>,
    pub plugin: Option<AuthPlugin<'static>>,
}

/// Parse a client's handshake response against what the greeting offered.
/// Pure, so it can be tested and fuzzed without a socket; the error is the
/// packet to send to the client before closing.
pub fn parse_handshake_response(
    payload: &[u8],
    offered: CapabilityFlags,
    offered_ext: u32,
) -> Result<ClientResponse, ErrPacket> {
    if payload.len() < 32 {
        return Err(error::bad_handshake("handshake response too short"));
    }
    let resp: HandshakeResponse<'_> = ParseBuf(payload)
        .parse(())
        .map_err(|_| error::bad_handshake("malformed handshake response"))?;
    let client_caps = resp.capabilities();
    if !client_caps.contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
        return Err(error::bad_handshake(
            "clients before protocol 4.1 are not supported",
        ));
    }
    let mariadb_ext = if client_caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD) {
        0
    } else {
        resp.mariadb_ext_capabilities().bits() & offered_ext
    };
    Ok(ClientResponse {
        caps: client_caps & offered,
        user: String::from_utf8_lossy(resp.user()).into_owned(),
        db: resp
            .db_name()
            .filter(|d| !d.is_empty())
            .map(|d| String::from_utf8_lossy(d).into_owned()),
        collation: resp.collation(),
        mariadb_ext,
        scramble: resp.scramble_buf().to_vec(),
        plugin: resp.auth_plugin().map(|p| p.clone().into_owned()),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// What the mariadb CLI (libmariadb 3.3) sent to `-uapp -papp test`.
    const MARIADB_CLI: &str = "8ca2bf000000100021000000000000000000000000000000000000001d000000617070\
        00148d06bedbea5250932576e9c0d9cd07b4a2d2baec74657374006d7973716c5f6e61746976655f70617373776f7264\
        007f035f6f73054c696e75780c5f636c69656e745f6e616d650a6c69626d617269616462045f7069640532313834340f\
        5f636c69656e745f76657273696f6e06332e332e3230095f706c6174666f726d067838365f36340c70726f6772616d5f\
        6e616d65056d7973716c0c5f7365727665725f686f7374093132372e302e302e31";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn offered() -> CapabilityFlags {
        let mut c = offered_capabilities();
        c.remove(CapabilityFlags::CLIENT_LONG_PASSWORD);
        c
    }

    #[test]
    fn parses_a_mariadb_cli_response() {
        let payload = unhex(MARIADB_CLI);
        assert!(!is_ssl_request(&payload));
        let r = parse_handshake_response(&payload, offered(), 0x8).unwrap();
        assert_eq!(r.user, "app");
        assert_eq!(r.db.as_deref(), Some("test"));
        assert_eq!(r.collation, 33);
        assert_eq!(r.scramble.len(), 20);
        assert_eq!(r.plugin, Some(AuthPlugin::MysqlNativePassword));
        assert_eq!(
            r.mariadb_ext, 0x8,
            "extended capabilities limited to the offered ones"
        );
        assert!(offered().contains(r.caps));
        assert!(!r.caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD));
    }

    #[test]
    fn ssl_request_and_refusals() {
        let payload = unhex(MARIADB_CLI);
        let mut ssl = payload[..32].to_vec();
        ssl[1] |= 0x08; // CLIENT_SSL
        assert!(is_ssl_request(&ssl));
        assert!(!is_ssl_request(&payload[..32]));
        assert!(!is_ssl_request(&[]));
        assert!(!is_ssl_request(&ssl[..31]));

        let refused = |p: &[u8]| parse_handshake_response(p, offered(), 0).unwrap_err().message;
        assert_eq!(
            refused(&payload[..31]),
            "Bad handshake: handshake response too short"
        );
        assert_eq!(
            refused(&payload[..40]),
            "Bad handshake: malformed handshake response"
        );
        let mut old = payload.clone();
        old[1] &= !0x02; // no CLIENT_PROTOCOL_41
        assert_eq!(
            refused(&old),
            "Bad handshake: clients before protocol 4.1 are not supported"
        );
    }
}
