//! What a rule set learns from the server at run time (a table's column order, a
//! column's collation), shared by the clones of the rule set: each answer with the time
//! it was read, used for a bounded time (DDL sent to the server directly is not seen) and
//! forgotten at once after DDL through sluice.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Answers by key, with when each was read.
#[derive(Debug)]
pub(crate) struct Learned<K, V>(Arc<Mutex<HashMap<K, (V, Instant)>>>);

impl<K, V> Default for Learned<K, V> {
    fn default() -> Self {
        Learned(Arc::default())
    }
}

impl<K, V> Clone for Learned<K, V> {
    fn clone(&self) -> Self {
        Learned(Arc::clone(&self.0))
    }
}

/// Not configuration: two rule sets with the same rules are equal whatever they learned.
impl<K, V> PartialEq for Learned<K, V> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<K: Eq + Hash, V: Clone> Learned<K, V> {
    /// The answer for `key` when it was read less than `ttl` ago.
    pub(crate) fn get(&self, key: &K, ttl: Duration) -> Option<V> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key)
            .filter(|(_, at)| at.elapsed() < ttl)
            .map(|(v, _)| v.clone())
    }

    pub(crate) fn learn(&self, key: K, value: V) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(key, (value, Instant::now()));
    }

    pub(crate) fn forget_all(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
