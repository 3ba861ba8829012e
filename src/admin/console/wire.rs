//! The console's MySQL port (`admin.sql_listen`): sluice's own greeting,
//! TLS upgrade, handshake parsing and authentication exchange (from
//! `frontend`), against `admin.users` only. Server accounts and `users:`
//! never log in here; with no `admin.users` every login gets ERR 1045.
//!
//! Text protocol only: COM_QUERY (one console command), COM_PING,
//! COM_INIT_DB (accepted, ignored) and COM_QUIT; anything else gets ERR
//! 1047. At most [`MAX_CONNECTIONS`] connections; the handshake within
//! `limits.handshake_timeout`, an idle connection closed after
//! [`IDLE_LIMIT`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use tokio::net::{TcpListener, TcpStream};
use tracing::debug;

use crate::config::{ConsoleRole, Credential, User};
use crate::error;
use crate::frontend::auth_exchange;
use crate::frontend::handshake::{exchange_failed, greeting, is_ssl_request, parse_handshake_response};
use crate::frontend::io::{ClientIo, Prefixed};
use crate::protocol::consts::{
    offered_capabilities, CapabilityFlags, COM_INIT_DB, COM_PING, COM_QUERY, COM_QUIT,
    SERVER_STATUS_AUTOCOMMIT,
};
use crate::protocol::packets::{ok_packet, put_lenenc_str, ErrPacket};
use crate::protocol::{PacketStream, ProtocolError};

use super::{command, Console, Outcome, Who};

/// Console connections at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A console connection idle this long is closed.
pub const IDLE_LIMIT: Duration = Duration::from_secs(3600);
/// Largest command accepted.
const MAX_PACKET: usize = 64 * 1024;
const VERSION: &str = "5.5.5-10.11.0-sluice-console";
const STATUS: u16 = SERVER_STATUS_AUTOCOMMIT;

pub async fn serve(listener: TcpListener, console: Arc<Console>) {
    super::super::accept_limited(listener, MAX_CONNECTIONS, "admin console", |stream, peer| {
        let console = console.clone();
        async move {
            let timeout = console.shared.runtime().config.limits.handshake_timeout;
            let authed = match tokio::time::timeout(timeout, login(stream, peer, &console)).await {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => return debug!(error = %e, %peer, "admin console: login ended"),
                Err(_) => return debug!(%peer, "admin console: handshake timed out"),
            };
            if let Err(e) = session(authed, peer, &console).await {
                debug!(error = %e, %peer, "admin console: connection ended");
            }
        }
    })
    .await
}

struct Authed {
    client: PacketStream<ClientIo>,
    caps: CapabilityFlags,
    user: String,
    role: ConsoleRole,
}

async fn refuse(client: &mut PacketStream<ClientIo>, seq: &mut u8, e: ErrPacket) -> ProtocolError {
    let _ = client.write_packet(seq, &e.encode()).await;
    ProtocolError::Malformed("login refused")
}

async fn login(socket: TcpStream, peer: SocketAddr, console: &Console) -> Result<Authed, ProtocolError> {
    let shared = &console.shared;
    let mut client = PacketStream::new(ClientIo::Plain(socket), MAX_PACKET);
    let nonce = crate::frontend::auth::gen_nonce();
    let mut offered = offered_capabilities();
    if shared.tls.is_some() {
        offered |= CapabilityFlags::CLIENT_SSL;
    }
    let buf = greeting(
        VERSION.as_bytes(),
        0,
        &nonce,
        offered,
        crate::frontend::shared::GREETING_COLLATION_FALLBACK,
        0,
    );
    let mut seq = 0u8;
    client.write_packet(&mut seq, &buf).await?;
    let mut p = client.read_packet().await?;
    seq = p.seq.wrapping_add(1);
    if is_ssl_request(&p.payload) {
        let Some(acceptor) = shared.tls.clone() else {
            return Err(refuse(&mut client, &mut seq, error::bad_handshake("TLS is not enabled")).await);
        };
        let (ClientIo::Plain(tcp), early) = client.into_parts() else {
            return Err(ProtocolError::Malformed("TLS requested twice"));
        };
        let tls = acceptor
            .accept(Prefixed::new(early, tcp))
            .await
            .map_err(ProtocolError::Io)?;
        client = PacketStream::new(ClientIo::Tls(Box::new(tls)), MAX_PACKET);
        p = client.read_packet().await?;
        seq = p.seq.wrapping_add(1);
    }
    let hello = match parse_handshake_response(&p.payload, offered, 0) {
        Ok(h) => h,
        Err(e) => return Err(refuse(&mut client, &mut seq, e).await),
    };
    let rt = shared.runtime();
    let found = rt.config.admin.users.iter().find(|u| u.name == hello.user);
    // An unknown name goes through the same exchange against a made-up
    // hash, so the answers do not tell which names exist.
    let (hash, role) = match found {
        Some(u) => (u.password_hash, Some(u.role)),
        None => (crate::frontend::auth::gen_nonce(), None),
    };
    let user = User {
        name: hello.user.clone(),
        credential: Credential::NativeHash(hash),
        max_connections: 0,
        require_tls: false,
        backend: None,
    };
    let tls = client.get_ref().is_tls();
    let proof = match auth_exchange::authenticate(
        &mut client,
        &mut seq,
        &user,
        hello.plugin.clone(),
        &nonce,
        &hello.scramble,
        tls,
    )
    .await
    {
        Ok(p) => p,
        Err(e) => {
            // Out-of-order packets get ERR 1156 there, as at the client port.
            let _ = exchange_failed(&mut client, &mut seq, e).await;
            return Err(ProtocolError::Malformed("authentication exchange failed"));
        }
    };
    // `tls.require` holds here as at the client port: checked after the
    // password, the same access denied as a wrong one (MariaDB's REQUIRE SSL).
    let tls_ok = tls || !rt.config.tls.as_ref().is_some_and(|t| t.require);
    let Some(role) = role.filter(|_| proof.proved && tls_ok) else {
        let host = peer.ip().to_string();
        tracing::info!(user = %crate::logging::escaped(&hello.user, 64), %peer, "admin console: login refused");
        let denied = error::access_denied(&hello.user, &host, !hello.scramble.is_empty());
        return Err(refuse(&mut client, &mut seq, denied).await);
    };
    client.write_packet(&mut seq, &ok_packet(0, 0, STATUS, 0)).await?;
    Ok(Authed {
        client,
        caps: hello.caps,
        user: hello.user,
        role,
    })
}

/// An OK packet with a human message (the CLI prints it).
fn ok_with_info(caps: CapabilityFlags, info: &str) -> BytesMut {
    let mut out = ok_packet(0, 0, STATUS, 0);
    if info.is_empty() {
        return out;
    }
    if caps.contains(CapabilityFlags::CLIENT_SESSION_TRACK) {
        put_lenenc_str(&mut out, info.as_bytes());
    } else {
        out.put_slice(info.as_bytes());
    }
    out
}

async fn session(mut a: Authed, peer: SocketAddr, console: &Console) -> Result<(), ProtocolError> {
    let peer = peer.to_string();
    loop {
        let p = match tokio::time::timeout(IDLE_LIMIT, a.client.read_packet()).await {
            Ok(p) => p?,
            Err(_) => return Ok(()),
        };
        let mut seq = p.seq.wrapping_add(1);
        let cmd = p.payload.first().copied().unwrap_or(0xff);
        match cmd {
            COM_QUIT => return Ok(()),
            COM_PING | COM_INIT_DB => {
                a.client
                    .write_packet(&mut seq, &ok_packet(0, 0, STATUS, 0))
                    .await?
            }
            COM_QUERY => {
                let text = String::from_utf8_lossy(&p.payload[1..]);
                let out = match command::parse(&text) {
                    Ok(c) => {
                        let who = Who {
                            user: &a.user,
                            peer: &peer,
                            role: a.role,
                        };
                        console.run(&who, &c).await
                    }
                    Err(why) => Outcome::Failed(ErrPacket::new(
                        crate::protocol::consts::errcode::ER_PARSE_ERROR,
                        "42000",
                        format!("sluice console: {why}"),
                    )),
                };
                match out {
                    Outcome::Rows(t) => {
                        t.queue(&mut a.client.wbuf, &mut seq, a.caps, false, STATUS);
                        a.client.flush().await?;
                    }
                    Outcome::Done(info) => {
                        a.client
                            .write_packet(&mut seq, &ok_with_info(a.caps, &info))
                            .await?
                    }
                    Outcome::Failed(e) => a.client.write_packet(&mut seq, &e.encode()).await?,
                }
            }
            other => {
                a.client
                    .write_packet(&mut seq, &error::unknown_command(other).encode())
                    .await?
            }
        }
        a.client.trim();
    }
}
