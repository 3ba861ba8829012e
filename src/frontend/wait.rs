//! Waiting for a client's next command, and the two reasons sluice stops
//! waiting: the session was idle longer than `limits.idle_client_timeout`
//! (MariaDB's `wait_timeout`), or sluice is shutting down.
//!
//! Either way the session ends as if the client had left: MariaDB 10.11
//! sends nothing to a client it disconnects for inactivity or at shutdown
//! (it just closes the socket), and an unsolicited ERR packet would reach a
//! client as the answer to its *next* command with a sequence id it does
//! not expect. A statement that is running is never interrupted here: the
//! session only comes back to this wait once its statement is answered.

use tracing::{debug, info};

use crate::protocol::codec::Packet;
use crate::protocol::{PacketStream, ProtocolError};

use super::io::ClientIo;
use super::listener::Shared;

/// Reads the client's next command. `Err(ProtocolError::Closed)` also when
/// the session was idle longer than `idle` (0: never) or sluice is shutting
/// down (logged here).
pub async fn next_command(
    client: &mut PacketStream<ClientIo>,
    shared: &Shared,
    idle: std::time::Duration,
) -> Result<Packet, ProtocolError> {
    let shutdown = &shared.shutdown;
    if shutdown.is_cancelled() {
        debug!("closing the session: sluice is shutting down");
        return Err(ProtocolError::Closed);
    }
    let read = async {
        if idle.is_zero() {
            return Some(client.read_packet().await);
        }
        tokio::time::timeout(idle, client.read_packet()).await.ok()
    };
    tokio::select! {
        biased;
        _ = shutdown.cancelled() => {
            debug!("closing the idle session: sluice is shutting down");
            Err(ProtocolError::Closed)
        }
        read = read => match read {
            Some(result) => result,
            None => {
                shared.metrics.idle_session_closed();
                info!(idle_client_timeout = ?idle, "closing a session idle for longer than limits.idle_client_timeout");
                Err(ProtocolError::Closed)
            }
        },
    }
}

/// After refusing a packet that is too large: read and drop what the
/// client is still sending of it (for at most 2 s), so that closing the
/// socket does not reset the connection (unread data makes the kernel send
/// RST) before the client has read the ERR packet; a client still writing
/// would otherwise see a broken pipe instead of error 1153.
pub async fn discard_rest(client: &mut PacketStream<ClientIo>) {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, client.get_mut().read(&mut buf)).await {
        if n == 0 {
            break;
        }
    }
}
