//! When to give up on a read that a replica is not answering.
//!
//! A replica can stop answering without closing its sockets (paused with
//! SIGSTOP, a hung disk, a network partition): a read waiting on it would wait
//! until its client gives up. The relay therefore also watches the replica's
//! health (`freshness::health`) while it waits for the backend:
//! - *nothing relayed yet, and the caller can run the read elsewhere*: it is
//!   abandoned as soon as the replica leaves rotation (one failed probe,
//!   about `probe_timeout`), or when `backend.replica_read_timeout` passes
//!   without a first byte.
//! - *bytes relayed, or nowhere else to go* (a read-only transaction lives on
//!   that replica; an EXECUTE whose statement is prepared there): cutting it
//!   off costs the client an error, so one slow probe must not do it; only a
//!   replica that is *down* (`fall` failed probes in a row) ends it.
//!
//! The backend connection of an abandoned read is in an unknown state: the
//! caller must close it, never pool it.

use std::io;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::freshness::health::Health;
use crate::freshness::monitor::GroupMonitor;
use crate::protocol::ProtocolError;

use super::prepared::Conn;

pub struct ReadWatch {
    health: watch::Receiver<Health>,
    /// The caller can run the read elsewhere as long as nothing was relayed.
    retryable: bool,
    /// The first byte must arrive before this, if set (retryable reads only).
    first_byte_by: Option<Instant>,
}

impl ReadWatch {
    /// The watch for a command about to run on `conn`: replicas only (the
    /// master has nowhere else to go, and a write must never be abandoned
    /// half-way: whether it committed would be unknown).
    pub fn for_conn(
        monitor: &GroupMonitor,
        conn: Conn,
        first_byte: Duration,
        retryable: bool,
    ) -> Option<ReadWatch> {
        match conn {
            Conn::Replica(i) => monitor
                .replicas
                .get(i)
                .map(|r| ReadWatch::new(r.watch_health(), first_byte, retryable)),
            Conn::Master => None,
        }
    }

    /// Watch a read that starts now; `first_byte` zero = no first-byte limit.
    pub fn new(health: watch::Receiver<Health>, first_byte: Duration, retryable: bool) -> ReadWatch {
        ReadWatch {
            health,
            retryable,
            first_byte_by: (retryable && !first_byte.is_zero()).then(|| Instant::now() + first_byte),
        }
    }

    /// Resolves (with the reason, as an error for the relay to report) when
    /// the read should be abandoned; pends forever otherwise. Cancel-safe.
    pub async fn abandoned(&mut self, relayed: bool) -> ProtocolError {
        let early = self.retryable && !relayed;
        let health = self
            .health
            .wait_for(|h| if early { !h.in_rotation() } else { !h.up });
        let why = match (early, self.first_byte_by) {
            (true, Some(by)) => tokio::select! {
                r = health => r.map(|_| LEFT_ROTATION).ok(),
                () = tokio::time::sleep_until(by) => Some(NO_FIRST_BYTE),
            },
            _ => health
                .await
                .map(|_| if early { LEFT_ROTATION } else { DOWN })
                .ok(),
        };
        match why {
            Some(why) => ProtocolError::Io(io::Error::new(io::ErrorKind::TimedOut, why)),
            // The monitor is gone (sluice is shutting down): never abandon.
            None => std::future::pending().await,
        }
    }
}

const LEFT_ROTATION: &str = "the replica stopped answering (its health probe failed) before sending anything";
const NO_FIRST_BYTE: &str = "the replica sent nothing within backend.replica_read_timeout";
const DOWN: &str = "the replica stopped answering (its health probes failed freshness.fall times \
                    in a row) and the statement could not be moved elsewhere (part of its result \
                    was delivered, or it belongs to a transaction or prepared statement on that \
                    replica); run the statement again";

#[cfg(test)]
mod tests {
    use super::*;

    fn state(up: bool, current: bool) -> Health {
        let mut h = Health::default();
        if up {
            h.record(true, 1, 1);
        }
        if !current {
            h.record(false, 1, 2);
        }
        assert_eq!((h.up, h.current), (up, current));
        h
    }

    async fn fires(w: &mut ReadWatch, relayed: bool) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(50), w.abandoned(relayed))
            .await
            .ok()
            .map(|e| e.to_string())
    }

    #[tokio::test]
    async fn waits_for_rotation_before_the_first_byte_and_for_down_after() {
        let tx = watch::Sender::new(state(true, true));
        let mut w = ReadWatch::new(tx.subscribe(), Duration::ZERO, true);
        assert_eq!(fires(&mut w, false).await, None);
        tx.send_replace(state(true, false));
        let e = fires(&mut w, false).await.expect("left rotation");
        assert!(e.contains("before sending anything"), "{e}");
        // Streaming: one failed probe is not enough to cut the client off.
        assert_eq!(fires(&mut w, true).await, None);
        tx.send_replace(state(false, false));
        let e = fires(&mut w, true).await.expect("down");
        assert!(e.contains("run the statement again"), "{e}");
    }

    #[tokio::test]
    async fn a_read_that_cannot_move_waits_for_down() {
        let tx = watch::Sender::new(state(true, false));
        let mut w = ReadWatch::new(tx.subscribe(), Duration::from_millis(10), false);
        assert_eq!(
            fires(&mut w, false).await,
            None,
            "one failed probe, no first-byte limit"
        );
        tx.send_replace(state(false, false));
        assert!(fires(&mut w, false).await.is_some());
    }

    #[tokio::test]
    async fn first_byte_timeout_applies_only_before_the_first_byte() {
        let tx = watch::Sender::new(state(true, true));
        let mut w = ReadWatch::new(tx.subscribe(), Duration::from_millis(10), true);
        let e = fires(&mut w, false).await.expect("first-byte timeout");
        assert!(e.contains("replica_read_timeout"), "{e}");
        assert_eq!(fires(&mut w, true).await, None);
        drop(tx);
        assert_eq!(fires(&mut w, true).await, None, "no monitor: never abandoned");
    }
}
