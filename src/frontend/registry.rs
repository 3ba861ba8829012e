//! The live client sessions, by the thread id each was given in its
//! handshake: what `SHOW PROCESSLIST` lists and what `KILL <id>` acts on.
//!
//! The ids a client can see are the session's own (handshake, the rewritten
//! `CONNECTION_ID()`, processlist, `KILL`), never a backend thread's: with
//! multiplexing a session runs on many backend connections over its life,
//! and a backend's thread id may belong to an unrelated client.
//!
//! Cost on the hot path: the map is sharded and only touched when a
//! session starts or ends, and by `KILL` / `SHOW PROCESSLIST`. Per command a
//! session stores its command code and start time in atomics and copies the
//! statement text (capped, into a buffer it reuses: no allocation once
//! warm) under its own mutex, which only a concurrent processlist reader
//! ever contends for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use std::task::{Context, Poll, Waker};

const SHARDS: usize = 16;

/// Statement text kept for the processlist's `Info` column; longer
/// statements are shown cut (documented limit of `SHOW FULL PROCESSLIST`).
pub const INFO_MAX: usize = 64 * 1024;

/// What `KILL` asked of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillRequest {
    /// `KILL QUERY`: interrupt the statement running now, if any.
    Query,
    /// `KILL [CONNECTION]`: end the session (its transaction rolls back).
    Connection,
}

const KILL_NONE: u8 = 0;
const KILL_QUERY: u8 = 1;
const KILL_CONNECTION: u8 = 2;

/// What ends a session's wait for its next command besides the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// `KILL CONNECTION` from another session.
    Killed,
    /// sluice is shutting down.
    Shutdown,
}

/// The part of an entry that changes rarely or is text.
#[derive(Debug, Default)]
struct Text {
    user: String,
    db: Option<String>,
    /// The last text statement (shown while a COM_QUERY runs).
    info: Vec<u8>,
}

/// One session as others can see it.
pub struct Entry {
    pub id: u32,
    /// "ip:port" of the client, as MariaDB shows it.
    pub host: String,
    text: Mutex<Text>,
    /// The command being run (`COM_*`), `COM_SLEEP` between commands.
    command: AtomicU8,
    /// When the current command (or idle stretch) started, in ms since the
    /// registry was created.
    since_ms: AtomicU64,
    /// Identity of the session's database string last seen by `end`.
    db_ident: AtomicU64,
    kill: AtomicU8,
    /// The task waiting for a kill (the session's own: it waits either for
    /// its next command or in the relay, never both at once). A slot for
    /// one waker instead of a `Notify`: a `Notified` future links itself
    /// into the `Notify`'s list and out again under its lock on every
    /// command, twice per statement; this costs one uncontended lock per
    /// poll and no clone once the waker is stored.
    killed: Mutex<Option<Waker>>,
    epoch: Instant,
    /// The backend thread id of the master connection the session keeps
    /// across statements while it may hold named locks there (0: none):
    /// how `IS_USED_LOCK()` answers are mapped to session ids.
    lock_thread: AtomicU32,
    /// What the session keeps between commands (see [`Holds`]), for the
    /// operator's console (`SHOW SESSIONS`, `PAUSE` and `DRAIN` holders).
    holds: AtomicU32,
}

/// What a session keeps between commands: a master connection, a replica's
/// (by position), an open transaction. Packed in one atomic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holds {
    pub master: bool,
    pub replica: Option<usize>,
    pub in_transaction: bool,
}

impl Holds {
    fn pack(self) -> u32 {
        let r = self
            .replica
            .map_or(0, |i| (i as u32).saturating_add(1).min(0xffff));
        u32::from(self.master) | u32::from(self.in_transaction) << 1 | r << 16
    }

    fn unpack(v: u32) -> Holds {
        Holds {
            master: v & 1 != 0,
            in_transaction: v & 2 != 0,
            replica: (v >> 16).checked_sub(1).map(|i| i as usize),
        }
    }
}

impl Entry {
    /// hook(console): what the session keeps now that its command is done.
    /// (Compared first: a store per statement only when it changes.)
    pub fn set_holds(&self, h: Holds) {
        let v = h.pack();
        if self.holds.load(Ordering::Relaxed) != v {
            self.holds.store(v, Ordering::Relaxed);
        }
    }

    /// What the session kept at the end of its last command.
    pub fn holds(&self) -> Holds {
        Holds::unpack(self.holds.load(Ordering::Relaxed))
    }

    /// A command is running (not between commands).
    pub fn busy(&self) -> bool {
        self.command.load(Ordering::Relaxed) != crate::protocol::consts::COM_SLEEP
    }

    /// Command `cmd` starts now (`payload` is the whole command packet). A
    /// `KILL QUERY` that arrived between commands is forgotten, as the
    /// server does: it interrupts the statement running when it arrives.
    pub fn begin(&self, cmd: u8, payload: &[u8]) {
        self.command.store(cmd, Ordering::Relaxed);
        self.since_ms.store(self.now_ms(), Ordering::Relaxed);
        let _ = self
            .kill
            .compare_exchange(KILL_QUERY, KILL_NONE, Ordering::AcqRel, Ordering::Relaxed);
        if cmd == crate::protocol::consts::COM_QUERY {
            if let Ok(mut t) = self.text.lock() {
                let sql = payload.get(1..).unwrap_or_default();
                t.info.clear();
                t.info.extend_from_slice(&sql[..sql.len().min(INFO_MAX)]);
            }
        }
    }

    /// The command is answered; `db` is the session's default database now.
    /// Atomics only, unless the database changed: the identity (address
    /// and length) of the session's string is compared first, and only a
    /// new string (a `USE`, a COM_INIT_DB) takes the lock.
    pub fn end(&self, db: Option<&str>) {
        self.command
            .store(crate::protocol::consts::COM_SLEEP, Ordering::Relaxed);
        self.since_ms.store(self.now_ms(), Ordering::Relaxed);
        let ident = db.map_or(0, |d| (d.as_ptr() as u64) ^ ((d.len() as u64) << 48) | 1);
        if self.db_ident.swap(ident, Ordering::Relaxed) != ident {
            if let Ok(mut t) = self.text.lock() {
                if t.db.as_deref() != db {
                    t.db = db.map(str::to_owned);
                }
            }
        }
    }

    /// The session keeps backend thread `thread` of the master (0: none)
    /// and may hold named locks on it.
    pub fn set_lock_thread(&self, thread: u32) {
        if self.lock_thread.load(Ordering::Relaxed) != thread {
            self.lock_thread.store(thread, Ordering::Relaxed);
        }
    }

    pub fn set_user(&self, user: &str) {
        if let Ok(mut t) = self.text.lock() {
            t.user = user.to_owned();
        }
    }

    pub fn user_is(&self, user: &str) -> bool {
        self.text.lock().map(|t| t.user == user).unwrap_or(false)
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Ask the session to act on a `KILL`.
    pub fn request_kill(&self, k: KillRequest) {
        let v = match k {
            KillRequest::Query => KILL_QUERY,
            KillRequest::Connection => KILL_CONNECTION,
        };
        // A connection kill is never downgraded to a query kill.
        let _ = self.kill.fetch_max(v, Ordering::AcqRel);
        // After the flag: a waiter that registers after this lock sees the
        // flag in its check after registering (see `poll_kill`).
        self.wake();
    }

    /// Ready with `check`'s answer; otherwise registers the task to be
    /// woken by `request_kill`, then checks again (a kill between the first
    /// check and the registration is seen by the second).
    fn poll_kill<T>(&self, cx: &mut Context<'_>, check: impl Fn(&Self) -> Option<T>) -> Poll<T> {
        if let Some(k) = check(self) {
            return Poll::Ready(k);
        }
        if let Ok(mut w) = self.killed.lock() {
            match w.as_ref() {
                Some(old) if old.will_wake(cx.waker()) => {}
                _ => *w = Some(cx.waker().clone()),
            }
        }
        check(self).map_or(Poll::Pending, Poll::Ready)
    }

    /// The pending request, if any (a query kill is consumed).
    pub fn take_kill(&self) -> Option<KillRequest> {
        match self.kill.load(Ordering::Acquire) {
            KILL_CONNECTION => Some(KillRequest::Connection),
            KILL_QUERY => {
                let _ =
                    self.kill
                        .compare_exchange(KILL_QUERY, KILL_NONE, Ordering::AcqRel, Ordering::Relaxed);
                Some(KillRequest::Query)
            }
            _ => None,
        }
    }

    /// The session was killed (`KILL CONNECTION`).
    pub fn connection_killed(&self) -> bool {
        self.kill.load(Ordering::Acquire) == KILL_CONNECTION
    }

    /// Resolves with the next kill request (cancel-safe: the request stays
    /// in the flag until taken). One waiter at a time (see `killed`).
    pub async fn killed(&self) -> KillRequest {
        std::future::poll_fn(|cx| self.poll_kill(cx, Entry::take_kill)).await
    }

    /// Resolves when the session was killed with `KILL CONNECTION` or
    /// sluice is shutting down (`shutdown` cancelled; see
    /// [`Registry::wake_all`]; `None`: the session may outlive the
    /// shutdown's start, as one with an open transaction does); a `KILL
    /// QUERY` between commands does nothing, as on the server. One waiter
    /// at a time (see `killed`).
    pub async fn interrupted(&self, shutdown: Option<&super::shared::Shutdown>) -> Interrupt {
        std::future::poll_fn(|cx| {
            self.poll_kill(cx, |e| {
                if shutdown.is_some_and(|s| s.is_cancelled()) {
                    Some(Interrupt::Shutdown)
                } else {
                    e.connection_killed().then_some(Interrupt::Killed)
                }
            })
        })
        .await
    }

    /// Resolves once `check` says so: checked now and whenever the session
    /// is woken through its entry (a kill, shutdown, or a replica going
    /// down: [`Registry::wake_all`]). Shares the one waiter's place with
    /// [`Entry::killed`] (the same task waits on both).
    pub async fn woken_when<T>(&self, check: impl Fn() -> Option<T>) -> T {
        std::future::poll_fn(|cx| self.poll_kill(cx, |_| check())).await
    }

    /// Wake the session's task if it waits in [`Entry::interrupted`],
    /// [`Entry::killed`] or [`Entry::woken_when`] (it checks again what it
    /// waits for).
    fn wake(&self) {
        if let Ok(w) = self.killed.lock() {
            if let Some(w) = w.as_ref() {
                w.wake_by_ref();
            }
        }
    }

    /// When the session's current idle stretch began (the end of its last
    /// command, or its registration), rounded up to the millisecond: the
    /// idle timeout's start, without reading the clock again.
    pub fn idle_since(&self) -> Instant {
        self.epoch + std::time::Duration::from_millis(self.since_ms.load(Ordering::Relaxed) + 1)
    }

    /// A row of the processlist as of now.
    pub fn snapshot(&self) -> Row {
        let t = self
            .text
            .lock()
            .map(|t| (t.user.clone(), t.db.clone(), t.info.clone()));
        let (user, db, info) = t.unwrap_or_default();
        let cmd = self.command.load(Ordering::Relaxed);
        let since = self.since_ms.load(Ordering::Relaxed);
        Row {
            id: self.id,
            user,
            host: self.host.clone(),
            db,
            command: cmd,
            time_s: self.now_ms().saturating_sub(since) / 1000,
            // The text of the last statement stays in the buffer while idle.
            info: (cmd != crate::protocol::consts::COM_SLEEP && !info.is_empty()).then_some(info),
        }
    }
}

/// A processlist row (see `kill::processlist`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: u32,
    pub user: String,
    pub host: String,
    pub db: Option<String>,
    pub command: u8,
    pub time_s: u64,
    pub info: Option<Vec<u8>>,
}

/// Every live session of this sluice process.
pub struct Registry {
    shards: [Mutex<HashMap<u32, Arc<Entry>>>; SHARDS],
    epoch: Instant,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
            epoch: Instant::now(),
        }
    }
}

impl Registry {
    fn shard(&self, id: u32) -> &Mutex<HashMap<u32, Arc<Entry>>> {
        &self.shards[id as usize % SHARDS]
    }

    /// Register a session; it is removed when the handle is dropped.
    pub fn register(self: &Arc<Self>, id: u32, user: &str, host: String, db: Option<&str>) -> Handle {
        let entry = Arc::new(Entry {
            id,
            host,
            text: Mutex::new(Text {
                user: user.to_owned(),
                db: db.map(str::to_owned),
                info: Vec::new(),
            }),
            command: AtomicU8::new(crate::protocol::consts::COM_SLEEP),
            since_ms: AtomicU64::new(0),
            db_ident: AtomicU64::new(0),
            kill: AtomicU8::new(KILL_NONE),
            killed: Mutex::new(None),
            epoch: self.epoch,
            lock_thread: AtomicU32::new(0),
            holds: AtomicU32::new(0),
        });
        entry.since_ms.store(entry.now_ms(), Ordering::Relaxed);
        if let Ok(mut m) = self.shard(id).lock() {
            m.insert(id, entry.clone());
        }
        Handle {
            registry: self.clone(),
            entry,
        }
    }

    /// After the shutdown token was cancelled: wake every session waiting
    /// for its next command, so that idle sessions close. (Sessions wait on
    /// their own entry rather than on the token: a `Notified` of the shared
    /// token per command links itself into one list every session shares.)
    pub fn wake_all(&self) {
        for shard in &self.shards {
            if let Ok(m) = shard.lock() {
                m.values().for_each(|e| e.wake());
            }
        }
    }

    pub fn get(&self, id: u32) -> Option<Arc<Entry>> {
        self.shard(id).lock().ok()?.get(&id).cloned()
    }

    /// (backend thread id, session id) of every session that keeps a master
    /// connection that may hold named locks.
    pub fn lock_holders(&self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for shard in &self.shards {
            if let Ok(m) = shard.lock() {
                v.extend(m.values().filter_map(|e| {
                    let t = e.lock_thread.load(Ordering::Relaxed);
                    (t != 0).then_some((t, e.id))
                }));
            }
        }
        v.sort_unstable();
        v
    }

    /// Every session, by id.
    pub fn all(&self) -> Vec<Arc<Entry>> {
        let mut v: Vec<Arc<Entry>> = self
            .shards
            .iter()
            .filter_map(|s| s.lock().ok().map(|m| m.values().cloned().collect::<Vec<_>>()))
            .flatten()
            .collect();
        v.sort_by_key(|e| e.id);
        v
    }
}

/// A session's place in the registry, for as long as the session lives.
pub struct Handle {
    registry: Arc<Registry>,
    pub entry: Arc<Entry>,
}

impl std::ops::Deref for Handle {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        &self.entry
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Ok(mut m) = self.registry.shard(self.entry.id).lock() {
            m.remove(&self.entry.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::consts::{COM_QUERY, COM_SLEEP};

    #[test]
    fn sessions_register_and_leave() {
        let r = Arc::new(Registry::default());
        let a = r.register(7, "app", "127.0.0.1:5000".into(), Some("db1"));
        let b = r.register(23, "other", "127.0.0.1:5001".into(), None);
        assert_eq!(r.all().iter().map(|e| e.id).collect::<Vec<_>>(), vec![7, 23]);
        assert!(r.get(7).is_some_and(|e| e.user_is("app")));
        drop(a);
        assert!(r.get(7).is_none());
        assert_eq!(r.all().len(), 1);
        drop(b);
        assert!(r.all().is_empty());
    }

    #[test]
    fn a_command_shows_its_text_until_answered() {
        let r = Arc::new(Registry::default());
        let h = r.register(1, "app", "h:1".into(), None);
        h.begin(COM_QUERY, b"\x03SELECT SLEEP(5)");
        let row = h.snapshot();
        assert_eq!(
            (row.command, row.info.as_deref()),
            (COM_QUERY, Some(&b"SELECT SLEEP(5)"[..]))
        );
        h.end(Some("d"));
        let row = h.snapshot();
        assert_eq!(
            (row.command, row.info, row.db.as_deref()),
            (COM_SLEEP, None, Some("d"))
        );
    }

    #[tokio::test]
    async fn kill_query_between_commands_is_forgotten_kill_connection_is_not() {
        let r = Arc::new(Registry::default());
        let h = r.register(1, "app", "h:1".into(), None);
        h.request_kill(KillRequest::Query);
        h.begin(COM_QUERY, b"\x03SELECT 1");
        assert_eq!(h.take_kill(), None);
        h.request_kill(KillRequest::Query);
        assert_eq!(h.killed().await, KillRequest::Query);
        assert_eq!(h.take_kill(), None, "a query kill is consumed");
        h.request_kill(KillRequest::Connection);
        h.request_kill(KillRequest::Query);
        h.begin(COM_QUERY, b"\x03SELECT 1");
        assert_eq!(h.killed().await, KillRequest::Connection);
        assert!(h.connection_killed());
        let shutdown = crate::frontend::shared::Shutdown::default();
        let told = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            h.interrupted(Some(&shutdown)),
        );
        assert_eq!(
            told.await.ok(),
            Some(Interrupt::Killed),
            "a killed session is told at once"
        );
    }

    #[tokio::test]
    async fn shutdown_wakes_a_waiting_session() {
        let r = Arc::new(Registry::default());
        let h = r.register(1, "app", "h:1".into(), None);
        let shutdown = Arc::new(crate::frontend::shared::Shutdown::default());
        let entry = h.entry.clone();
        let token = shutdown.clone();
        let waiter = tokio::spawn(async move { entry.interrupted(Some(&token)).await });
        tokio::task::yield_now().await;
        shutdown.cancel();
        r.wake_all();
        let told = tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await;
        assert!(matches!(told, Ok(Ok(Interrupt::Shutdown))), "{told:?}");
    }
}
