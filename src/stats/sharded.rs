//! Per-statement metrics in cells per thread, summed when Prometheus
//! scrapes: a statement adds to its own thread's cell (a cache line that
//! thread alone writes), never to one atomic that every core writes. With
//! sessions on one thread per core (`runtime.per_core`), a counter that
//! every statement bumps would otherwise move its cache line from core to
//! core on every statement: the first shared write to fall over on a
//! machine with many cores (benches/README.md, "Many cores").
//!
//! Cells are indexed by the session thread (`crate::affinity`); other
//! threads (tokio's shared pool with `per_core: false`, the admin runtime)
//! take a cell by a number given to each thread once. Two threads may share
//! a cell (more threads than cells): the adds stay exact, only the line is
//! shared.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use prometheus::proto;

/// One counter cell on a cache line of its own.
#[derive(Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

/// Cells per counter: one per CPU (at most 64), so that session threads,
/// one per CPU, each have their own.
fn cells() -> usize {
    static CELLS: OnceLock<usize> = OnceLock::new();
    *CELLS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 64)
    })
}

/// The calling thread's cell.
fn cell_index() -> usize {
    thread_local! {
        static INDEX: Cell<Option<usize>> = const { Cell::new(None) };
    }
    INDEX.with(|i| match i.get() {
        Some(k) => k,
        None => {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let k = match crate::affinity::here() {
                Some(t) => usize::from(t),
                None => NEXT.fetch_add(1, Ordering::Relaxed),
            } % cells();
            i.set(Some(k));
            k
        }
    })
}

/// A counter whose adds go to the calling thread's cell.
pub struct ShardedCounter {
    cells: Box<[Padded]>,
}

impl Default for ShardedCounter {
    fn default() -> Self {
        ShardedCounter {
            cells: (0..cells()).map(|_| Padded::default()).collect(),
        }
    }
}

impl ShardedCounter {
    pub fn inc_by(&self, n: u64) {
        if let Some(c) = self.cells.get(cell_index()) {
            c.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn inc(&self) {
        self.inc_by(1);
    }

    pub fn get(&self) -> u64 {
        self.cells.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
    }
}

/// 16 counters on a cache line pair of their own.
#[derive(Default)]
#[repr(align(128))]
struct Line([AtomicU64; 16]);

/// A histogram of durations whose observations go to the calling thread's
/// cells (two relaxed adds, as `AtomicHistogram`). Each thread's cells are
/// whole lines of their own: its bucket counts (non-cumulative; the last
/// counts values above every bound), then the sum in nanoseconds.
pub struct ShardedHistogram {
    bounds: &'static [f64],
    /// Lines per thread.
    stride: usize,
    lines: Box<[Line]>,
}

impl ShardedHistogram {
    pub fn new(bounds: &'static [f64]) -> ShardedHistogram {
        let stride = (bounds.len() + 2).div_ceil(16);
        ShardedHistogram {
            bounds,
            stride,
            lines: (0..cells() * stride).map(|_| Line::default()).collect(),
        }
    }

    /// Slot `j` of thread cell `k`: bucket `j` for `j <= bounds.len()`,
    /// the sum after them.
    fn slot(&self, k: usize, j: usize) -> Option<&AtomicU64> {
        self.lines.get(k * self.stride + j / 16).map(|l| &l.0[j % 16])
    }

    pub fn observe(&self, d: Duration) {
        let k = cell_index();
        let secs = d.as_secs_f64();
        let i = self.bounds.partition_point(|b| *b < secs);
        if let Some(b) = self.slot(k, i) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if let Some(sum) = self.slot(k, self.bounds.len() + 1) {
            sum.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// The samples as a Prometheus histogram (cumulative buckets; `+Inf` is
    /// added by the encoder from the count).
    pub fn snapshot(&self) -> proto::Histogram {
        let n = self.bounds.len();
        let mut counts = vec![0u64; n + 1];
        let mut sum_ns = 0u64;
        for k in 0..cells() {
            for (j, c) in counts.iter_mut().enumerate() {
                *c += self.slot(k, j).map_or(0, |a| a.load(Ordering::Relaxed));
            }
            sum_ns = sum_ns.wrapping_add(self.slot(k, n + 1).map_or(0, |a| a.load(Ordering::Relaxed)));
        }
        let mut cumulative = 0u64;
        let mut buckets = Vec::with_capacity(n);
        for (bound, c) in self.bounds.iter().zip(&counts) {
            cumulative += c;
            let mut b = proto::Bucket::default();
            b.set_upper_bound(*bound);
            b.set_cumulative_count(cumulative);
            buckets.push(b);
        }
        let mut h = proto::Histogram::default();
        h.set_bucket(buckets);
        h.set_sample_count(cumulative + counts[n]);
        h.set_sample_sum(sum_ns as f64 / 1e9);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let c = std::sync::Arc::new(ShardedCounter::default());
        let h = std::sync::Arc::new(ShardedHistogram::new(&[0.001, 0.01]));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (c, h) = (c.clone(), h.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.inc_by(2);
                        h.observe(Duration::from_micros(500));
                    }
                    h.observe(Duration::from_secs(1));
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(c.get(), 16_000);
        let s = h.snapshot();
        let counts: Vec<u64> = s.get_bucket().iter().map(|b| b.cumulative_count()).collect();
        assert_eq!(counts, vec![8000, 8000]);
        assert_eq!(s.get_sample_count(), 8008);
        assert!((s.get_sample_sum() - (8000.0 * 0.0005 + 8.0)).abs() < 1e-6);
    }
}
