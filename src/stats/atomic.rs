//! Lock-free measurement cells that live inside other layers' structs
//! (freshness monitors, backend pools) and are turned into Prometheus
//! samples only at scrape time, by `admin::topology`. They know nothing of
//! Prometheus labels or registries, so the freshness and backend layers need
//! no metrics handle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use prometheus::proto;

/// Upper bounds (seconds) for probe round trips: a loopback probe takes
/// ~0.2 ms, a timed-out one `probe_timeout` (default 500 ms).
pub const PROBE_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// A histogram of durations in fixed buckets, updated with two relaxed
/// atomic adds per observation.
pub struct AtomicHistogram {
    bounds: &'static [f64],
    /// Non-cumulative counts; the last cell counts values above every bound.
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl AtomicHistogram {
    pub fn new(bounds: &'static [f64]) -> AtomicHistogram {
        AtomicHistogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = self.bounds.partition_point(|b| *b < secs);
        if let Some(cell) = self.buckets.get(i) {
            cell.fetch_add(1, Ordering::Relaxed);
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The samples as a Prometheus histogram (cumulative buckets; `+Inf` is
    /// added by the encoder from the count).
    pub fn snapshot(&self) -> proto::Histogram {
        let mut cumulative = 0u64;
        let mut buckets = Vec::with_capacity(self.bounds.len());
        for (bound, cell) in self.bounds.iter().zip(self.buckets.iter()) {
            cumulative += cell.load(Ordering::Relaxed);
            let mut b = proto::Bucket::default();
            b.set_upper_bound(*bound);
            b.set_cumulative_count(cumulative);
            buckets.push(b);
        }
        let overflow = self
            .buckets
            .last()
            .map(|c| c.load(Ordering::Relaxed))
            .unwrap_or(0);
        let mut h = proto::Histogram::default();
        h.set_bucket(buckets);
        // The count is derived from the buckets read above, so the `+Inf`
        // bucket is never below the last finite one.
        h.set_sample_count(cumulative + overflow);
        h.set_sample_sum(self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9);
        h
    }
}

impl Default for AtomicHistogram {
    /// A histogram with [`PROBE_BUCKETS`].
    fn default() -> Self {
        AtomicHistogram::new(PROBE_BUCKETS)
    }
}

/// Checkouts from a connection pool that had to wait (no idle connection:
/// a new one was opened or a busy one awaited), and the time they waited.
#[derive(Default)]
pub struct WaitStats {
    waits: AtomicU64,
    wait_ns: AtomicU64,
}

impl WaitStats {
    /// Start timing a checkout; nothing is recorded (and no clock read)
    /// unless `waiting`. The wait ends when the guard is dropped.
    pub fn begin(&self, waiting: bool) -> WaitGuard<'_> {
        WaitGuard {
            timing: waiting.then(|| (self, Instant::now())),
        }
    }

    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    pub fn wait_seconds(&self) -> f64 {
        self.wait_ns.load(Ordering::Relaxed) as f64 / 1e9
    }
}

pub struct WaitGuard<'a> {
    timing: Option<(&'a WaitStats, Instant)>,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if let Some((stats, started)) = self.timing.take() {
            let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            stats.waits.fetch_add(1, Ordering::Relaxed);
            stats.wait_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_le() {
        let h = AtomicHistogram::new(&[0.001, 0.01]);
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(1)); // exactly on a bound: le
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_secs(1));
        let s = h.snapshot();
        let counts: Vec<u64> = s.get_bucket().iter().map(|b| b.cumulative_count()).collect();
        assert_eq!(counts, vec![2, 3]);
        assert_eq!(s.get_sample_count(), 4);
        assert!((s.get_sample_sum() - 1.0065).abs() < 1e-9);
    }

    #[test]
    fn waits_count_only_when_waiting() {
        let w = WaitStats::default();
        drop(w.begin(false));
        assert_eq!(w.waits(), 0);
        {
            let _g = w.begin(true);
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(w.waits(), 1);
        assert!(w.wait_seconds() >= 0.002);
    }
}
