//! Measurement cells: lock-free counters and histograms that the layers
//! write on their own paths (freshness monitors, backend pools, the
//! per-statement metrics) and that `metrics` and the admin endpoint's
//! scrape-time collector turn into Prometheus samples. A leaf: it imports no
//! other layer but `affinity` (which thread a cell belongs to), so every
//! layer may hold a cell without depending on `metrics`.

mod atomic;
mod sharded;

pub use atomic::{AtomicHistogram, WaitGuard, WaitStats};
pub use sharded::{ShardedCounter, ShardedHistogram};
