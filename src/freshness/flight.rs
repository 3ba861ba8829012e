//! Single-flight probes: many callers that each need "a result of a probe
//! that *started after I asked*" share one probe instead of each sending
//! their own. This keeps strict mode's per-read master probe and causal
//! mode's per-write snapshot cheap under concurrency without weakening them.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{watch, Mutex};

type Shared<T> = Arc<Result<T, String>>;

pub struct Flight<T> {
    tickets: AtomicU64,
    running: Mutex<()>,
    /// (ticket at which the published probe started, its result)
    last: watch::Sender<Option<(u64, Shared<T>)>>,
}

impl<T: Send + Sync + 'static> Flight<T> {
    pub fn new() -> Self {
        Flight {
            tickets: AtomicU64::new(1),
            running: Mutex::new(()),
            last: watch::channel(None).0,
        }
    }

    /// A ticket marks "now": a probe satisfies it if it started later.
    pub fn ticket(&self) -> u64 {
        self.tickets.fetch_add(1, Ordering::SeqCst)
    }

    /// Get the result of a probe started after `ticket` was taken, running
    /// `probe` if no such probe is under way.
    pub async fn after<F, Fut>(&self, ticket: u64, probe: F) -> Shared<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        let mut rx = self.last.subscribe();
        loop {
            if let Some((started, r)) = rx.borrow_and_update().as_ref() {
                if *started > ticket {
                    return r.clone();
                }
            }
            if let Ok(_guard) = self.running.try_lock() {
                // Re-check: a probe may have finished between the check and
                // taking the lock.
                if let Some((started, r)) = self.last.borrow().as_ref() {
                    if *started > ticket {
                        return r.clone();
                    }
                }
                let started = self.ticket();
                let r = Arc::new(probe().await);
                self.last.send_replace(Some((started, r.clone())));
                return r;
            }
            // Someone else is probing: wait for their result and look again
            // (it may have started before our ticket).
            if rx.changed().await.is_err() {
                return Arc::new(Err("probe channel closed".into()));
            }
        }
    }
}

impl<T: Send + Sync + 'static> Default for Flight<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[tokio::test]
    async fn concurrent_callers_share_a_probe_started_after_them() {
        let flight = Arc::new(Flight::<u64>::new());
        let probes = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let flight = flight.clone();
            let probes = probes.clone();
            tasks.push(tokio::spawn(async move {
                let t = flight.ticket();
                let r = flight
                    .after(t, || {
                        let probes = probes.clone();
                        async move {
                            probes.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                            Ok(7)
                        }
                    })
                    .await;
                assert_eq!(*r, Ok(7));
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        let n = probes.load(Ordering::SeqCst);
        assert!((1..=20).contains(&n));
        // A ticket taken now is not satisfied by old results.
        let t = flight.ticket();
        let before = probes.load(Ordering::SeqCst);
        let _ = flight
            .after(t, || {
                let probes = probes.clone();
                async move {
                    probes.fetch_add(1, Ordering::SeqCst);
                    Ok(8)
                }
            })
            .await;
        assert_eq!(probes.load(Ordering::SeqCst), before + 1);
    }
}
