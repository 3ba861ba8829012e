//! When to give up on a read that a replica is not answering.
//!
//! A replica can stop answering without closing its sockets (paused with
//! SIGSTOP, a hung disk, a network partition): a read waiting on it would wait
//! until its client gives up. The relay therefore also watches the replica's
//! health (`freshness::health`) while it waits for the backend:
//! - the replica is *down* (`fall` failed probes in a row, see
//!   `freshness::health`): a read that has relayed nothing and could run
//!   elsewhere is abandoned so the caller runs it on the master; otherwise
//!   (bytes relayed, or nowhere else to go: a read-only transaction lives on
//!   that replica, an EXECUTE's statement is prepared there) it ends with an
//!   error for the client.
//! - `backend.replica_read_timeout` (if set) passes without a first byte, for
//!   a read that could run elsewhere.
//!
//! A single failed probe already keeps *new* reads away from the replica,
//! but does not abandon reads under way: on a merely overloaded replica that
//! would re-run every waiting read on the master at each slow probe (seen in
//! the soak: up to 100 reads at once at load average 50), which is the
//! opposite of relief. Waiting for `fall` failures bounds the wait on a
//! paused replica to about `fall` probe timeouts.
//!
//! A read subscribes to nothing shared: it waits in its session's own
//! wake-up slot (`registry::Entry`), which the monitor's down hook wakes in
//! every session when a replica goes down (rare); the read then looks at its
//! replica's health flags. (Subscribing to the replica's health watch per
//! read took that watch's locks, shared by every session reading there,
//! twice per read.)
//!
//! The backend connection of an abandoned read is in an unknown state: the
//! caller must close it, never pool it.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::freshness::health::HealthFlags;
use crate::protocol::ProtocolError;

use super::prepared::Conn;
use super::registry::Entry;

pub struct ReadWatch {
    /// The session's replicas' health flags (see `Session::health`).
    health: Arc<[Arc<HealthFlags>]>,
    /// The replica the read runs on.
    replica: usize,
    /// The session's entry: a replica going down wakes every session
    /// through it (`Shared::replica_down_hook`), and the read looks again.
    entry: Arc<Entry>,
    /// The caller can run the read elsewhere as long as nothing was relayed.
    retryable: bool,
    /// The first byte must arrive before this, if set (retryable reads only).
    first_byte_by: Option<Instant>,
}

impl ReadWatch {
    /// The watch for a command about to run on `conn`: replicas only (the
    /// master has nowhere else to go, and a write must never be abandoned
    /// half-way: whether it committed would be unknown). `health`: the
    /// session's copy of its replicas' flags (`GroupMonitor::health_flags`).
    pub fn for_conn(
        health: &Arc<[Arc<HealthFlags>]>,
        conn: Conn,
        entry: &Arc<Entry>,
        first_byte: Duration,
        retryable: bool,
    ) -> Option<ReadWatch> {
        match conn {
            Conn::Replica(i) if i < health.len() => Some(ReadWatch::new(
                health.clone(),
                i,
                entry.clone(),
                first_byte,
                retryable,
            )),
            _ => None,
        }
    }

    /// Watch a read of replica `replica` that starts now; `first_byte` zero
    /// = no first-byte limit.
    pub fn new(
        health: Arc<[Arc<HealthFlags>]>,
        replica: usize,
        entry: Arc<Entry>,
        first_byte: Duration,
        retryable: bool,
    ) -> ReadWatch {
        ReadWatch {
            health,
            replica,
            entry,
            retryable,
            first_byte_by: (retryable && !first_byte.is_zero()).then(|| Instant::now() + first_byte),
        }
    }

    /// Resolves (with the reason, as an error for the relay to report) when
    /// the read should be abandoned; pends otherwise. Cancel-safe.
    pub async fn abandoned(&mut self, relayed: bool) -> ProtocolError {
        let early = self.retryable && !relayed;
        let health = self.health.get(self.replica);
        let down = self
            .entry
            .woken_when(|| health.is_none_or(|h| !h.up()).then_some(()));
        let why = match (early, self.first_byte_by) {
            (true, Some(by)) => tokio::select! {
                () = down => DOWN_BEFORE_ANSWER,
                () = tokio::time::sleep_until(by) => NO_FIRST_BYTE,
            },
            _ => {
                down.await;
                if early {
                    DOWN_BEFORE_ANSWER
                } else {
                    DOWN
                }
            }
        };
        ProtocolError::Io(io::Error::new(io::ErrorKind::TimedOut, why))
    }
}

const DOWN_BEFORE_ANSWER: &str = "the replica stopped answering (its health probes failed \
                                  freshness.fall times in a row) before sending anything";
const NO_FIRST_BYTE: &str = "the replica sent nothing within backend.replica_read_timeout";
const DOWN: &str = "the replica stopped answering (its health probes failed freshness.fall times \
                    in a row) and the statement could not be moved elsewhere (part of its result \
                    was delivered, or it belongs to a transaction or prepared statement on that \
                    replica); run the statement again";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::freshness::health::Health;
    use crate::frontend::registry::Registry;

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

    fn one(flags: &Arc<HealthFlags>) -> Arc<[Arc<HealthFlags>]> {
        Arc::from(vec![flags.clone()])
    }

    async fn fires(w: &mut ReadWatch, relayed: bool) -> Option<String> {
        tokio::time::timeout(Duration::from_millis(50), w.abandoned(relayed))
            .await
            .ok()
            .map(|e| e.to_string())
    }

    #[tokio::test]
    async fn waits_for_down_not_for_one_failed_probe() {
        let registry = Arc::new(Registry::default());
        let session = registry.register(1, "app", "h:1".into(), None);
        let flags = Arc::new(HealthFlags::default());
        for (retryable, relayed) in [(true, false), (true, true), (false, false)] {
            flags.store(&state(true, true));
            let mut w = ReadWatch::new(one(&flags), 0, session.entry.clone(), Duration::ZERO, retryable);
            assert_eq!(fires(&mut w, relayed).await, None);
            flags.store(&state(true, false));
            registry.wake_all();
            assert_eq!(fires(&mut w, relayed).await, None, "one failed probe");
            // Down while the read waits: the hook's wake makes it look.
            let waiting = tokio::spawn({
                let (flags, entry) = (flags.clone(), session.entry.clone());
                async move {
                    let mut w = ReadWatch::new(one(&flags), 0, entry, Duration::ZERO, retryable);
                    tokio::time::timeout(Duration::from_secs(5), w.abandoned(relayed))
                        .await
                        .map(|e| e.to_string())
                }
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
            flags.store(&state(false, false));
            registry.wake_all();
            let e = waiting.await.expect("task").expect("woken when down");
            let movable = retryable && !relayed;
            assert_eq!(e.contains("before sending anything"), movable, "{e}");
            assert_eq!(e.contains("run the statement again"), !movable, "{e}");
        }
    }

    #[tokio::test]
    async fn no_first_byte_limit_for_reads_that_cannot_move() {
        let registry = Arc::new(Registry::default());
        let session = registry.register(1, "app", "h:1".into(), None);
        let flags = Arc::new(HealthFlags::default());
        flags.store(&state(true, true));
        let mut w = ReadWatch::new(
            one(&flags),
            0,
            session.entry.clone(),
            Duration::from_millis(10),
            false,
        );
        assert_eq!(fires(&mut w, false).await, None);
    }

    #[tokio::test]
    async fn first_byte_timeout_applies_only_before_the_first_byte() {
        let registry = Arc::new(Registry::default());
        let session = registry.register(1, "app", "h:1".into(), None);
        let flags = Arc::new(HealthFlags::default());
        flags.store(&state(true, true));
        let mut w = ReadWatch::new(
            one(&flags),
            0,
            session.entry.clone(),
            Duration::from_millis(10),
            true,
        );
        let e = fires(&mut w, false).await.expect("first-byte timeout");
        assert!(e.contains("replica_read_timeout"), "{e}");
        assert_eq!(fires(&mut w, true).await, None);
    }
}
