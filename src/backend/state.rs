//! What a backend connection carries from one borrower to the next.
//!
//! With multiplexing a connection serves many client sessions in turn. It
//! goes back to the pool only when it holds no state that belongs to one
//! session (no transaction, temporary table, lock, user variable, cursor),
//! so what it still carries is: the default database (`BackendConn::db`),
//! the replayable `SET`s it has run, and the statements prepared on it. The
//! next borrower compares these with its own and applies only the
//! difference: a session whose state matches pays nothing per statement.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Statements kept prepared per backend connection. MariaDB's
/// `max_prepared_stmt_count` (16382 by default) is per server, shared by
/// every connection: 128 × 64 pooled connections stays well below it.
pub const STMT_CACHE_MAX: usize = 128;

/// A chain of hashes identifying a list of `SET` statements: element `i`
/// identifies the first `i + 1` statements, so "is this list a prefix of
/// that one" is one comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetChain(Vec<u64>);

impl SetChain {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn push(&mut self, sql: &[u8]) {
        // DefaultHasher::new() has fixed keys: the same list always gives
        // the same chain, in every session.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.0.last().copied().unwrap_or(0).hash(&mut h);
        sql.hash(&mut h);
        self.0.push(h.finish());
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// `self` is a prefix of `other` (the statements `self` ran are the
    /// first ones `other` needs).
    pub fn is_prefix_of(&self, other: &SetChain) -> bool {
        match self.0.len() {
            0 => true,
            n => other.0.get(n - 1) == self.0.last(),
        }
    }
}

/// A statement prepared on one backend connection.
#[derive(Debug, Clone)]
pub struct CachedStmt {
    /// The server's statement id on this connection.
    pub id: u32,
    /// Parameter types (2 bytes each) the server last received for it: an
    /// EXECUTE without types uses these, so a borrower with other types
    /// must send its own.
    pub types: Option<Vec<u8>>,
    last_used: u64,
}

/// Statements prepared on one connection, by context and text, shared by
/// every session that borrows it (a session's COM_STMT_CLOSE does not close
/// them: the next borrower preparing the same text reuses them).
///
/// The context (see `ConnState::context`) identifies the default database
/// and SETs in force when the statement was prepared: the server resolves
/// unqualified table names, and parses under sql_mode, at PREPARE time, so
/// the same text prepared under another database is another statement.
#[derive(Debug, Default)]
pub struct StmtCache {
    /// By context, then by text: a lookup by borrowed text allocates
    /// nothing (a key of (context, text) would need an owned copy of the
    /// text per EXECUTE). foldhash, not SipHash: this runs once per EXECUTE
    /// and SipHash of the text was the largest single cost of a prepared
    /// point select (about 1,000 instructions of 17,500, callgrind). Its
    /// per-process random seed, and the cap of `STMT_CACHE_MAX` entries per
    /// connection, bound what colliding texts from a client could cost.
    map: HashMap<u64, HashMap<Box<[u8]>, CachedStmt, FastHash>, FastHash>,
    len: usize,
    tick: u64,
}

type FastHash = foldhash::fast::RandomState;

impl StmtCache {
    pub fn get(&mut self, ctx: u64, sql: &[u8]) -> Option<&mut CachedStmt> {
        self.tick += 1;
        let tick = self.tick;
        let s = self.map.get_mut(&ctx)?.get_mut(sql)?;
        s.last_used = tick;
        Some(s)
    }

    /// Remember `id` for `sql`; returns statement ids the caller must close
    /// on the server (a replaced one, or the least recently used one when
    /// the cache is full).
    pub fn insert(&mut self, ctx: u64, sql: &[u8], id: u32) -> Vec<u32> {
        self.tick += 1;
        let mut close = Vec::new();
        let entry = CachedStmt {
            id,
            types: None,
            last_used: self.tick,
        };
        if let Some(old) = self.map.entry(ctx).or_default().insert(sql.into(), entry) {
            if old.id != id {
                close.push(old.id);
            }
            return close;
        }
        self.len += 1;
        if self.len > STMT_CACHE_MAX {
            let victim = self
                .map
                .iter()
                .flat_map(|(ctx, m)| m.iter().map(move |(sql, s)| (*ctx, sql, s)))
                .min_by_key(|(_, _, s)| s.last_used)
                .map(|(ctx, sql, s)| (ctx, sql.clone(), s.id));
            if let Some((vctx, vsql, vid)) = victim {
                self.remove(vctx, &vsql);
                close.push(vid);
            }
        }
        close
    }

    /// Forget `sql`; returns its id for the caller to close.
    pub fn remove(&mut self, ctx: u64, sql: &[u8]) -> Option<u32> {
        let m = self.map.get_mut(&ctx)?;
        let id = m.remove(sql)?.id;
        if m.is_empty() {
            self.map.remove(&ctx);
        }
        self.len -= 1;
        Some(id)
    }

    /// The server forgot every statement (reset, change user).
    pub fn clear(&mut self) {
        self.map.clear();
        self.len = 0;
    }

    /// Forget every statement no client has open any more (see
    /// [`OpenStatements`]); returns their ids for the caller to close.
    pub fn sweep(&mut self, open: &OpenStatements) -> Vec<u32> {
        let mut close = Vec::new();
        for m in self.map.values_mut() {
            m.retain(|sql, s| {
                let keep = open.is_open(sql);
                if !keep {
                    close.push(s.id);
                }
                keep
            });
        }
        self.map.retain(|_, m| !m.is_empty());
        self.len -= close.len();
        close
    }
}

/// How many client statements (COM_STMT_PREPARE not yet closed, in any
/// session) have each text. A connection's cached statement whose text no
/// client has open is closed on the server the next time the connection is
/// checked out or given back ([`StmtCache::sweep`]), so server-side
/// statements stay bounded by what clients hold and go back to the baseline
/// after a prepare/close loop. Touched only by PREPARE and CLOSE (and a
/// sweep when something was closed since the connection's last one), never
/// per EXECUTE.
#[derive(Debug, Default)]
pub struct OpenStatements {
    counts: std::sync::Mutex<HashMap<Box<[u8]>, u32>>,
    /// Bumped whenever a text's count drops to zero.
    generation: AtomicU64,
}

impl OpenStatements {
    pub fn open(&self, sql: &[u8]) {
        if let Ok(mut m) = self.counts.lock() {
            *m.entry(sql.into()).or_insert(0) += 1;
        }
    }

    pub fn close(&self, sql: &[u8]) {
        let Ok(mut m) = self.counts.lock() else {
            return;
        };
        if let Some(n) = m.get_mut(sql) {
            *n -= 1;
            if *n == 0 {
                m.remove(sql);
                self.generation.fetch_add(1, Ordering::Release);
            }
        }
    }

    pub fn is_open(&self, sql: &[u8]) -> bool {
        // A poisoned lock keeps everything (never closes a statement in use).
        self.counts.lock().map(|m| m.contains_key(sql)).unwrap_or(true)
    }

    /// Changes whenever some text stopped being open.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

/// The part of a connection's server-side state sluice tracks for
/// multiplexing.
#[derive(Debug, Default)]
pub struct ConnState {
    /// Unique for the life of the process: identifies this connection
    /// across checkouts (a session may borrow it again later).
    pub uid: u64,
    /// The `SET`s run on it since it was last reset.
    pub sets: SetChain,
    pub stmts: StmtCache,
    /// The server's LAST_INSERT_ID() for this connection, as last read or
    /// set by sluice (0 on a fresh or reset connection).
    pub last_insert_id: u64,
    /// `OpenStatements::generation` when `stmts` was last swept.
    pub swept: u64,
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

impl ConnState {
    pub fn new() -> ConnState {
        ConnState {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            ..Default::default()
        }
    }

    /// Identifies the default database and SETs in force (for the
    /// statement cache).
    pub fn context(&self, db: Option<&str>) -> u64 {
        // Per EXECUTE: foldhash, fixed seed (only compared within this
        // process, never with another's).
        let mut h = std::hash::BuildHasher::build_hasher(&foldhash::fast::FixedState::default());
        db.hash(&mut h);
        self.sets.0.last().hash(&mut h);
        h.finish()
    }

    /// After COM_RESET_CONNECTION / COM_CHANGE_USER.
    pub fn forget(&mut self) {
        self.sets.clear();
        self.stmts.clear();
        self.last_insert_id = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_compare_as_prefixes() {
        let mut a = SetChain::default();
        let mut b = SetChain::default();
        assert!(a.is_prefix_of(&b));
        b.push(b"SET NAMES utf8mb4");
        assert!(a.is_prefix_of(&b));
        assert!(!b.is_prefix_of(&a));
        a.push(b"SET NAMES utf8mb4");
        assert!(a.is_prefix_of(&b) && b.is_prefix_of(&a));
        b.push(b"SET time_zone='+00:00'");
        a.push(b"SET time_zone='+01:00'");
        assert!(!a.is_prefix_of(&b));
        // Same statements in another order are another state.
        let mut c = SetChain::default();
        c.push(b"SET time_zone='+00:00'");
        c.push(b"SET NAMES utf8mb4");
        assert!(!c.is_prefix_of(&b));
    }

    #[test]
    fn context_follows_database_and_sets() {
        let mut st = ConnState::new();
        let a = st.context(Some("db1"));
        assert_ne!(a, st.context(Some("db2")));
        assert_ne!(a, st.context(None));
        st.sets.push(b"SET sql_mode='ANSI_QUOTES'");
        assert_ne!(a, st.context(Some("db1")));
    }

    #[test]
    fn cache_evicts_least_recently_used() {
        let mut c = StmtCache::default();
        for i in 0..STMT_CACHE_MAX as u32 {
            assert!(c.insert(7, format!("s{i}").as_bytes(), i).is_empty());
        }
        assert!(c.get(7, b"s0").is_some()); // s0 is now the most recent
        let closed = c.insert(7, b"new", 9999);
        assert_eq!(closed, vec![1]);
        assert_eq!(c.len, STMT_CACHE_MAX);
        assert!(c.get(7, b"s0").is_some() && c.get(7, b"s1").is_none());
        // Re-preparing the same text replaces (and closes) the old id.
        assert_eq!(c.insert(7, b"new", 10000), vec![9999]);
        // The same text in another context is another statement.
        assert!(c.get(8, b"new").is_none());
    }

    /// The cap counts every context's statements; the victim is the least
    /// recently used of all of them.
    #[test]
    fn cache_cap_spans_contexts() {
        let mut c = StmtCache::default();
        for i in 0..STMT_CACHE_MAX as u32 {
            assert!(c
                .insert(u64::from(i % 2), format!("s{i}").as_bytes(), i)
                .is_empty());
        }
        assert!(c.get(0, b"s0").is_some());
        assert_eq!(c.insert(5, b"x", 500), vec![1], "s1 (context 1) is the oldest");
        assert_eq!(c.len, STMT_CACHE_MAX);
        assert_eq!(c.remove(5, b"x"), Some(500));
        assert_eq!(c.remove(5, b"x"), None);
        assert_eq!(c.len, STMT_CACHE_MAX - 1);
        c.clear();
        assert!(c.len == 0 && c.get(0, b"s0").is_none());
    }

    #[test]
    fn sweeps_close_what_no_client_has_open() {
        let open = OpenStatements::default();
        let mut c = StmtCache::default();
        c.insert(1, b"a", 10);
        c.insert(2, b"b", 11);
        open.open(b"a");
        open.open(b"b");
        open.open(b"b");
        let g = open.generation();
        assert!(c.sweep(&open).is_empty());
        open.close(b"b");
        assert_eq!(open.generation(), g, "b is still open once");
        open.close(b"b");
        assert_ne!(open.generation(), g);
        assert_eq!(c.sweep(&open), vec![11]);
        assert_eq!(c.len, 1);
        open.close(b"a");
        assert_eq!(c.sweep(&open), vec![10]);
        assert!(c.len == 0);
    }
}
