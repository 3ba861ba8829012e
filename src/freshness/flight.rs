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
    ///
    /// Callers queue on `running` (tokio's mutex is fair): whoever holds it
    /// probes, publishes, and releases it; the next caller in line then
    /// finds that result, or probes itself if the result is older than its
    /// ticket. Waiting on the mutex rather than on the published value
    /// leaves no wake-up to lose: a caller that found the lock taken is
    /// woken by its release, also when the prober's future was dropped
    /// mid-probe (a session that ended).
    pub async fn after<F, Fut>(&self, ticket: u64, probe: F) -> Shared<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        if let Some(r) = self.published_after(ticket) {
            return r;
        }
        let _guard = self.running.lock().await;
        // The probe we waited for may have started after our ticket.
        if let Some(r) = self.published_after(ticket) {
            return r;
        }
        let started = self.ticket();
        let r = Arc::new(probe().await);
        self.last.send_replace(Some((started, r.clone())));
        r
    }

    /// The published result, if its probe started after `ticket`.
    fn published_after(&self, ticket: u64) -> Option<Shared<T>> {
        match self.last.borrow().as_ref() {
            Some((started, r)) if *started > ticket => Some(r.clone()),
            _ => None,
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

    /// A caller waiting behind a prober whose future is dropped mid-probe
    /// (its session ended) probes itself instead of waiting forever; and
    /// callers queued behind a finished probe that predates their ticket
    /// are not left waiting for a result nobody will publish.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_caller_waits_for_a_probe_nobody_runs() {
        let flight = Arc::new(Flight::<u64>::new());
        let t = flight.ticket();
        let f = flight.clone();
        let stuck =
            tokio::spawn(async move { f.after(t, std::future::pending::<Result<u64, String>>).await });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let t2 = flight.ticket();
        let f = flight.clone();
        let waiter = tokio::spawn(async move { f.after(t2, || async { Ok(5) }).await });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        stuck.abort();
        let r = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("the waiter was left waiting")
            .expect("task");
        assert_eq!(*r, Ok(5));
        for round in 0..200u64 {
            let mut tasks = Vec::new();
            for _ in 0..8 {
                let f = flight.clone();
                tasks.push(tokio::spawn(async move {
                    let t = f.ticket();
                    f.after(t, || async move { Ok(round) }).await
                }));
            }
            for t in tasks {
                tokio::time::timeout(std::time::Duration::from_secs(5), t)
                    .await
                    .expect("a caller was left waiting")
                    .expect("task");
            }
        }
    }
}
