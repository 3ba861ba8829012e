//! The server side of the MySQL handshake: greeting, optional TLS upgrade,
//! and authentication (mysql_native_password, caching_sha2_password, auth
//! switch). Ends before the final OK, which the session sends once it has
//! checked the default database on a backend.

use std::net::SocketAddr;
use std::time::Duration;

use mysql_common::constants::StatusFlags;
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, HandshakePacket, HandshakeResponse};
use mysql_common::proto::MySerialize;
use tokio::net::TcpStream;

use crate::config::{Credential, User};
use crate::error;
use crate::protocol::consts::{offered_capabilities, CapabilityFlags, SERVER_STATUS_AUTOCOMMIT};
use crate::protocol::packets::ErrPacket;
use crate::protocol::{PacketStream, ProtocolError};

use super::auth;
use super::io::ClientIo;
use super::limits::UserSlot;
use super::listener::Shared;

/// The whole handshake must finish within this time (MySQL's connect_timeout).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
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

const NATIVE: &[u8] = b"mysql_native_password";
const SHA2: &[u8] = b"caching_sha2_password";

pub async fn handshake(
    socket: TcpStream,
    peer: SocketAddr,
    conn_id: u32,
    shared: &Shared,
) -> Result<Authed, HandshakeError> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake_inner(socket, peer, conn_id, shared)).await {
        Ok(r) => r,
        Err(_) => Err(HandshakeError::Timeout),
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
    let mut scramble_2 = nonce[8..].to_vec();
    scramble_2.push(0);
    let mut first8 = [0u8; 8];
    first8.copy_from_slice(&nonce[..8]);
    let greeting = HandshakePacket::new(
        10,
        version.as_bytes(),
        conn_id,
        first8,
        Some(scramble_2),
        offered,
        shared.greeting_collation(),
        StatusFlags::from_bits_truncate(SERVER_STATUS_AUTOCOMMIT),
        Some(NATIVE),
    )
    .with_mariadb_ext_capabilities(mysql_common::constants::MariadbCapabilities::from_bits_truncate(
        offered_ext,
    ));
    let mut buf = Vec::new();
    greeting.serialize(&mut buf);
    let mut seq = 0u8;
    client.write_packet(&mut seq, &buf).await?;

    let mut p = client.read_packet().await?;
    seq = p.seq.wrapping_add(1);
    // An SSL request is the first 32 bytes of a handshake response.
    if is_ssl_request(&p.payload) {
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
        p = client.read_packet().await?;
        seq = p.seq.wrapping_add(1);
    }
    let hello = match parse_handshake_response(&p.payload, offered, offered_ext) {
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
    let host = peer.ip().to_string();

    // The users of the newest configuration (a reload may have changed them).
    let rt = shared.runtime();
    let user = rt.config.users.iter().find(|u| u.name == user_name);
    let ok = match user {
        None => {
            // Answer as slowly and in the same shape as for a wrong password.
            false
        }
        Some(user) => authenticate(&mut client, &mut seq, user, plugin, &nonce, &scramble).await?,
    };
    if !ok {
        let using_password = !scramble.is_empty();
        return Err(refuse(
            &mut client,
            &mut seq,
            error::access_denied(&user_name, &host, using_password),
        )
        .await);
    }
    // Counted from here until the session ends (the slot is its guard).
    let user_slot = match shared.user_limits.acquire(&user_name) {
        Ok(slot) => slot,
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
    })
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

/// Run the plugin exchange for a known user. Returns whether the password matched.
pub(crate) async fn authenticate(
    client: &mut PacketStream<ClientIo>,
    seq: &mut u8,
    user: &User,
    plugin: Option<AuthPlugin<'static>>,
    nonce: &[u8; 20],
    scramble: &[u8],
) -> Result<bool, ProtocolError> {
    match plugin {
        None | Some(AuthPlugin::MysqlNativePassword) => {
            Ok(auth::verify_native(&user.credential, nonce, scramble))
        }
        // The client picked caching_sha2 but answered the greeting's native
        // scramble with nothing (it expects a switch): ask it for a
        // caching_sha2 scramble of our nonce, then verify as usual.
        Some(AuthPlugin::CachingSha2Password)
            if scramble.is_empty()
                && !matches!(&user.credential, Credential::Password(p) if p.is_empty())
                && (matches!(user.credential, Credential::Password(_)) || client.get_ref().is_tls()) =>
        {
            let reply = switch_plugin(client, seq, SHA2, nonce).await?;
            Box::pin(authenticate(
                client,
                seq,
                user,
                Some(AuthPlugin::CachingSha2Password),
                nonce,
                &reply,
            ))
            .await
        }
        Some(AuthPlugin::CachingSha2Password) => match &user.credential {
            Credential::Password(pw) => {
                if !auth::verify_sha2_fast(pw, nonce, scramble) {
                    return Ok(false);
                }
                // "fast auth success"; the OK follows.
                client.write_packet(seq, &[0x01, 0x03]).await?;
                Ok(true)
            }
            Credential::NativeHash(_) if client.get_ref().is_tls() => {
                // "perform full authentication": the client sends its
                // password in clear text over the encrypted channel.
                client.write_packet(seq, &[0x01, 0x04]).await?;
                let p = client.read_packet().await?;
                *seq = p.seq.wrapping_add(1);
                Ok(auth::verify_cleartext(&user.credential, &p.payload))
            }
            Credential::NativeHash(_) => switch_to_native(client, seq, user, nonce).await,
        },
        Some(_) => switch_to_native(client, seq, user, nonce).await,
    }
}

/// Send an auth switch request for `plugin` with our nonce; returns the
/// client's answer.
async fn switch_plugin(
    client: &mut PacketStream<ClientIo>,
    seq: &mut u8,
    plugin: &[u8],
    nonce: &[u8; 20],
) -> Result<Vec<u8>, ProtocolError> {
    let mut req = Vec::with_capacity(1 + plugin.len() + 1 + 21);
    req.push(0xfe);
    req.extend_from_slice(plugin);
    req.push(0);
    req.extend_from_slice(nonce);
    req.push(0);
    client.write_packet(seq, &req).await?;
    let p = client.read_packet().await?;
    *seq = p.seq.wrapping_add(1);
    Ok(p.payload.to_vec())
}

async fn switch_to_native(
    client: &mut PacketStream<ClientIo>,
    seq: &mut u8,
    user: &User,
    nonce: &[u8; 20],
) -> Result<bool, ProtocolError> {
    let reply = switch_plugin(client, seq, NATIVE, nonce).await?;
    Ok(auth::verify_native(&user.credential, nonce, &reply))
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
