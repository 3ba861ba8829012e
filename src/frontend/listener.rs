//! Accepting clients: one task per client session.

use std::sync::Arc;

use bytes::BytesMut;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tracing::{info, warn, Instrument};

use crate::error;
use crate::protocol::codec::queue_frames;

use super::backoff::AcceptBackoff;
use super::cores;
use super::limits::HandshakeRefusal;
use super::session;
use super::shared::Shared;

/// Accept clients until sluice shuts down (`shared.shutdown`); the
/// listener is closed on return, so new connections are refused.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (socket, peer) = match accepted {
            Ok(x) => {
                backoff.reset();
                x
            }
            Err(e) => {
                // EMFILE and friends: keep serving existing clients, retry.
                warn!(error = %e, "accept failed");
                backoff.wait().await;
                continue;
            }
        };
        if shared.clients.full() {
            refuse_too_many(&socket, peer, &shared, "max_client_connections");
            continue;
        }
        // The session's own place is taken once it is authenticated (see
        // handshake.rs); until then it counts among the handshakes.
        let slot = match shared.handshakes.try_acquire(peer.ip()) {
            Ok(slot) => slot,
            Err(HandshakeRefusal::Total) => {
                refuse_too_many(&socket, peer, &shared, "max_unauthenticated");
                continue;
            }
            Err(HandshakeRefusal::Address) => {
                refuse_too_many(&socket, peer, &shared, "max_unauthenticated_per_address");
                continue;
            }
        };
        let _ = socket.set_nodelay(true);
        let conn_id = shared.next_conn_id();
        let shared = shared.clone();
        let span = tracing::info_span!("conn", id = conn_id);
        // runtime.per_core: on a session thread of its own (frontend::cores).
        cores::spawn_session(socket, move |socket| {
            async move {
                shared.metrics.client_connected();
                session::run(socket, peer, conn_id, shared.clone(), slot).await;
                shared.metrics.client_disconnected();
            }
            .instrument(span)
        });
    }
}

/// A limit is reached: answer as MariaDB does beyond its connection limit,
/// with ERR 1040 instead of the greeting (sequence id 0, no SQLSTATE, since
/// the client's protocol is not known yet), and close. The socket is new
/// and its send buffer empty, so the write cannot block the accept loop.
fn refuse_too_many(socket: &TcpStream, peer: SocketAddr, shared: &Shared, limit: &'static str) {
    let err = error::too_many_connections();
    let mut frame = BytesMut::new();
    queue_frames(&mut frame, &mut 0, &err.encode_pre_handshake());
    let _ = socket.try_write(&frame);
    shared.metrics.login_refused(err.code); // metrics: refused, error by kind
    info!(%peer, limit, "client refused: too many connections");
}

/// A listening socket on `addr`, as `TcpListener::bind` makes it (with
/// SO_REUSEADDR, backlog 1024), plus SO_REUSEPORT when `reuseport`
/// (`listen_reuseport`): a second sluice can then bind the same address, and
/// the kernel spreads new connections over both until one closes. Without
/// `net.ipv4.tcp_migrate_req=1` the connections still queued on the socket
/// that closes are reset: warned about here.
pub fn bind(addr: SocketAddr, reuseport: bool) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    if reuseport {
        socket.set_reuseport(true)?;
        if std::fs::read_to_string("/proc/sys/net/ipv4/tcp_migrate_req").is_ok_and(|v| v.trim() == "0") {
            warn!(
                %addr,
                "listen_reuseport is on but net.ipv4.tcp_migrate_req is 0: connections queued on \
                 this socket when it closes are reset instead of moving to the other process; \
                 set it to 1 (sysctl -w net.ipv4.tcp_migrate_req=1)"
            );
        }
    }
    socket.bind(addr)?;
    socket.listen(1024)
}

pub fn log_listening(addr: &std::net::SocketAddr) {
    info!(%addr, "listening for MySQL clients");
}
