//! Single-flight probes: many callers that each need "a result of a probe
//! that *started after I asked*" share one probe instead of each sending
//! their own. This keeps strict mode's per-read master probe and causal
//! mode's per-write snapshot cheap under concurrency without weakening them.
//!
//! A ticket is a reading of the monotonic clock (nanoseconds since the
//! flight was made, never 0): taking one writes nothing shared, where a
//! counter would be one cache line written by every core per read. A probe
//! satisfies a ticket if its own start ticket is strictly later.
//!
//! Up to `parallel` probes may be in flight at once. With one, a caller
//! that arrives while a probe runs waits for the rest of it and then for a
//! whole new one (on average 1.5 probe round trips); with two, it starts
//! the second probe at once and waits one round trip, the time its replica
//! read takes anyway (strict mode's overlap), at the price of at most twice
//! the probes.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use arc_swap::ArcSwapOption;
use tokio::sync::watch;

type Shared<T> = Arc<Result<T, String>>;

pub struct Flight<T> {
    born: Instant,
    parallel: usize,
    /// (start ticket of the newest published probe, its result): read
    /// without a lock by callers a published result already satisfies
    /// (most of them under load); written under `running`'s lock.
    last: ArcSwapOption<(u64, Shared<T>)>,
    /// Start tickets of the probes under way. Held only for a few
    /// instructions, never across an await; taken by callers that must
    /// probe or wait.
    running: Mutex<Vec<u64>>,
    /// Bumped whenever a probe ends (published or abandoned): waiters
    /// re-examine `state`. A waiter subscribes before it looks, so no end
    /// after its look goes unseen.
    ended: watch::Sender<()>,
}

/// What a caller does after looking at the state.
enum Next<T> {
    Done(Shared<T>),
    Probe(u64),
    Wait,
}

/// A probe under way; its drop takes it off the list and wakes the
/// waiters, also when the prober's future is dropped mid-probe (a session
/// that ended), so nobody waits for a result that will never come.
struct Running<'a, T> {
    flight: &'a Flight<T>,
    started: u64,
}

impl<T> Drop for Running<'_, T> {
    fn drop(&mut self) {
        let mut running = self.flight.lock_running();
        if let Some(i) = running.iter().position(|t| *t == self.started) {
            running.swap_remove(i);
        }
        drop(running);
        self.flight.ended.send_replace(());
    }
}

impl<T> Flight<T> {
    /// (Nothing panics while holding it; a poisoned lock's list is as good.)
    fn lock_running(&self) -> MutexGuard<'_, Vec<u64>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Send + Sync + 'static> Flight<T> {
    /// One probe at a time.
    pub fn new() -> Self {
        Flight::with_parallel(1)
    }

    /// Up to `parallel` (at least 1) probes at a time.
    pub fn with_parallel(parallel: usize) -> Self {
        Flight {
            born: Instant::now(),
            parallel: parallel.max(1),
            last: ArcSwapOption::empty(),
            running: Mutex::new(Vec::with_capacity(parallel.max(1))),
            ended: watch::channel(()).0,
        }
    }

    /// A ticket marks "now": a probe satisfies it if it started later.
    pub fn ticket(&self) -> u64 {
        // Nanoseconds since `born`, +1 so that no ticket is 0 (callers use
        // 0 for "none"). u64 nanoseconds last 584 years.
        self.born.elapsed().as_nanos() as u64 + 1
    }

    /// Get the result of a probe started after `ticket` was taken, running
    /// `probe` if no such probe is under way (and fewer than `parallel`
    /// are), else waiting for one.
    pub async fn after<F, Fut>(&self, ticket: u64, probe: F) -> Shared<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        if let Some(r) = self.published_after(ticket) {
            return r;
        }
        loop {
            // Subscribed before `next` looks: a probe that ends after the
            // look bumps `ended`, and `changed` then returns at once.
            let mut ended = self.ended.subscribe();
            let started = match self.next(ticket) {
                Next::Done(r) => return r,
                Next::Wait => {
                    // Err: the sender is gone, which cannot be while `self`
                    // lives; look again either way.
                    let _ = ended.changed().await;
                    continue;
                }
                Next::Probe(started) => started,
            };
            let running = Running {
                flight: self,
                started,
            };
            let r = Arc::new(probe().await);
            {
                let _lock = self.lock_running();
                // Probes may end out of order: keep the newest start.
                if self.last.load().as_ref().is_none_or(|l| l.0 < started) {
                    self.last.store(Some(Arc::new((started, r.clone()))));
                }
            }
            drop(running);
            return r;
        }
    }

    /// The published result, if its probe started after `ticket`.
    fn published_after(&self, ticket: u64) -> Option<Shared<T>> {
        match self.last.load().as_ref() {
            Some(l) if l.0 > ticket => Some(l.1.clone()),
            _ => None,
        }
    }

    fn next(&self, ticket: u64) -> Next<T> {
        let mut running = self.lock_running();
        // Published while the caller was not looking (under the lock, so
        // consistent with `running`).
        if let Some(r) = self.published_after(ticket) {
            return Next::Done(r);
        }
        // A probe under way that started after the ticket will do; else
        // start one if there is room.
        if running.iter().any(|t| *t > ticket) || running.len() >= self.parallel {
            return Next::Wait;
        }
        let started = self.ticket();
        running.push(started);
        Next::Probe(started)
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
    use std::sync::atomic::{AtomicUsize, Ordering};

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

    /// With two probes allowed, a caller that arrives while a probe runs
    /// starts its own at once (it does not wait for the first to end) and
    /// gets the second's result; with one, it waits for the first (which
    /// started before it, so it cannot use its result). A first probe that
    /// ends after the second does not replace the newer published result.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_probe_starts_while_the_first_runs() {
        use tokio::sync::Notify;
        for parallel in [1usize, 2] {
            let flight = Arc::new(Flight::<u64>::with_parallel(parallel));
            let release_first = Arc::new(Notify::new());
            let started = Arc::new(AtomicUsize::new(0));
            let f = flight.clone();
            let (rel, st) = (release_first.clone(), started.clone());
            let t1 = f.ticket();
            let first = tokio::spawn(async move {
                f.after(t1, || {
                    let (rel, st) = (rel.clone(), st.clone());
                    async move {
                        st.fetch_add(1, Ordering::SeqCst);
                        rel.notified().await;
                        Ok(1)
                    }
                })
                .await
            });
            while started.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            let t2 = flight.ticket();
            let st = started.clone();
            let second = flight.after(t2, || {
                let st = st.clone();
                async move {
                    st.fetch_add(1, Ordering::SeqCst);
                    Ok(2)
                }
            });
            let got = tokio::time::timeout(std::time::Duration::from_millis(200), second).await;
            match parallel {
                // The second caller probed while the first probe ran.
                2 => assert_eq!(*got.expect("the second caller waited for the first probe"), Ok(2)),
                // It waits for the running probe (started before it).
                _ => assert!(got.is_err(), "the second caller did not wait for the first probe"),
            }
            release_first.notify_one();
            assert_eq!(*first.await.expect("task"), Ok(1));
            // The newest start is what is published, whatever ended last.
            let t3 = flight.ticket();
            assert!(flight.published_after(t2).is_some() == (parallel == 2));
            assert!(flight.published_after(t3).is_none());
        }
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
