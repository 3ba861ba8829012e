//! Waiting for a client's next command, and the three reasons sluice stops
//! waiting: the session was idle longer than its limit (the smaller of
//! `limits.idle_client_timeout` and the session's own `wait_timeout`, see
//! `idle_limit`), another session killed it (`KILL CONNECTION`), or sluice
//! is shutting down.
//!
//! Either way the session ends as if the client had left: MariaDB 10.11
//! sends nothing to a client it disconnects for inactivity or at shutdown
//! (it just closes the socket), and an unsolicited ERR packet would reach a
//! client as the answer to its *next* command with a sequence id it does
//! not expect. A statement that is running is never interrupted here: the
//! session only comes back to this wait once its statement is answered.

use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tracing::{debug, info};

use crate::protocol::codec::Packet;
use crate::protocol::{PacketStream, ProtocolError};

use super::io::ClientIo;
use super::registry::{Entry, Interrupt};
use super::shared::Shared;

/// The idle limit of a session: `config` (`limits.idle_client_timeout`, 0 =
/// none) and the session's `wait_timeout` (what its last `SET … wait_timeout`
/// left, read back from the server; `None` before any), whichever is
/// shorter. MariaDB closes a session idle for `wait_timeout` seconds; a
/// client with CLIENT_INTERACTIVE starts with the global
/// `interactive_timeout` there, which sluice's operator default stands for
/// until the client sets its own.
pub fn idle_limit(config: Duration, session: Option<Duration>) -> Duration {
    match session {
        Some(s) if !s.is_zero() && (config.is_zero() || s < config) => s,
        _ => config,
    }
}

/// The session's idle-timeout timer, armed once and moved lazily.
///
/// Re-arming a timer per command (`tokio::time::timeout`) inserts it into
/// and removes it from the runtime's timer wheel every time, under the
/// wheel's lock. Here the `Sleep` stays registered from command to command:
/// a command only computes its deadline; the timer is moved earlier when the
/// limit shrank (it would fire late), and when it fires before the deadline
/// (the session was busy meanwhile) it is pushed to the deadline then, at
/// most once per idle limit.
#[derive(Default)]
pub struct IdleTimer {
    sleep: Option<std::pin::Pin<Box<Sleep>>>,
}

impl IdleTimer {
    /// The timer, due no later than `due`.
    fn armed(&mut self, due: Instant) -> std::pin::Pin<&mut Sleep> {
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if sleep.deadline() > due {
            sleep.as_mut().reset(due);
        }
        sleep.as_mut()
    }
}

/// Reads the client's next command. `Err(ProtocolError::Closed)` also when
/// the session was idle longer than `idle` (0: never), was killed, or sluice
/// is shutting down (logged here) and the session has no open transaction
/// (`in_tx`): one with a transaction may finish it, as pgbouncer and
/// ProxySQL's PAUSE let it; it is closed after its COMMIT or ROLLBACK, or
/// cut off when `limits.shutdown_timeout` ends the process.
pub async fn next_command(
    client: &mut PacketStream<ClientIo>,
    shared: &Shared,
    idle: Duration,
    entry: &Entry,
    timer: &mut IdleTimer,
    in_tx: bool,
) -> Result<Packet, ProtocolError> {
    let shutdown = (!in_tx).then_some(&shared.shutdown);
    if shutdown.is_some_and(|s| s.is_cancelled()) && shared.shutdown.clients_until().is_none() {
        // Right behind the answer: the FIN follows it on the wire.
        debug!("closing the session: sluice is shutting down");
        return Err(ProtocolError::Closed);
    }
    let read = async {
        if idle.is_zero() {
            return Some(client.read_packet().await);
        }
        let due = Instant::from_std(entry.idle_since()) + idle;
        let mut sleep = timer.armed(due);
        let mut packet = std::pin::pin!(client.read_packet());
        loop {
            tokio::select! {
                biased;
                r = &mut packet => return Some(r),
                () = sleep.as_mut() => {
                    if Instant::now() >= due {
                        return None;
                    }
                    // Armed for an earlier command's deadline.
                    sleep.as_mut().reset(due);
                }
            }
        }
    };
    let mut read = std::pin::pin!(read);
    let why = tokio::select! {
        biased;
        why = entry.interrupted(shutdown) => why,
        read = &mut read => return answered(read, shared, idle),
    };
    if let Interrupt::Killed = why {
        // As the server does with a killed idle connection: close, send nothing.
        info!(
            session = entry.id,
            "closing the session: KILL CONNECTION from another session"
        );
        return Err(ProtocolError::Closed);
    }
    // Shutting down. While `limits.shutdown_wait_for_clients` runs, a
    // session is closed only once quiet: closing one its client is reusing
    // sends a FIN that crosses the client's next command, which no driver
    // can retry ("invalid connection"); a pool checks an idle connection
    // before reusing it and dials again when it finds it closed. A busy
    // session is served (its client's pool retires it by age) until the
    // wait ends; then it is closed now, or right after its next answer.
    let close_at = match shared.shutdown.clients_until() {
        Some(until) => until.min(Instant::from_std(entry.idle_since()) + SHUTDOWN_QUIET),
        None => Instant::now(),
    };
    tokio::select! {
        biased;
        read = &mut read => answered(read, shared, idle),
        () = tokio::time::sleep_until(close_at) => {
            debug!("closing the idle session: sluice is shutting down");
            Err(ProtocolError::Closed)
        }
    }
}

/// How long a session must have been idle before shutting down closes it
/// while waiting for clients (see `next_command`): long against the time a
/// FIN takes to reach the client and the gap between a pool's reuses of a
/// busy connection, short against `limits.shutdown_wait_for_clients`.
const SHUTDOWN_QUIET: Duration = Duration::from_millis(250);

/// The outcome of waiting for a command: the packet, or the idle limit
/// passed (`None`).
fn answered(
    read: Option<Result<Packet, ProtocolError>>,
    shared: &Shared,
    idle: Duration,
) -> Result<Packet, ProtocolError> {
    match read {
        Some(result) => result,
        None => {
            shared.metrics.idle_session_closed();
            info!(idle_limit = ?idle, "closing a session idle for longer than its wait_timeout (or limits.idle_client_timeout)");
            Err(ProtocolError::Closed)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shorter_limit_wins_and_zero_means_none() {
        let s = Duration::from_secs;
        assert_eq!(idle_limit(s(0), None), s(0));
        assert_eq!(idle_limit(s(60), None), s(60));
        assert_eq!(idle_limit(s(0), Some(s(5))), s(5));
        assert_eq!(idle_limit(s(60), Some(s(5))), s(5));
        assert_eq!(idle_limit(s(60), Some(s(600))), s(60));
        assert_eq!(idle_limit(s(60), Some(s(0))), s(60));
    }
}
