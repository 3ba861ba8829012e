//! Pools of backend connections (deadpool), one pool per backend server,
//! login and `PoolKey`: a client is only ever served by connections logged
//! in as its own account (so the server enforces that account's GRANTs) and
//! whose response format (capabilities, collation) matches its own.
//!
//! Bounds: each (login, key) pool holds at most `pool_max_per_account`
//! connections (less when the account has `MAX_USER_CONNECTIONS`), and all
//! pools of one backend together at most `backend.pool_max` (a semaphore;
//! each connection holds a permit). When the backend is full, a new
//! connection for one account closes an idle one of another account first,
//! so idle connections of quiet accounts cannot starve busy ones.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};

use tokio::sync::Semaphore;

use super::conn::{BackendConn, ConnectParams, IdleState, Login, PoolKey};
use super::error::BackendError;

/// A checked-out connection. Dropping it gives it back to its pool, except
/// a connection that is broken, must not be reused, or whose last answer
/// said a transaction is open: that one is detached and closed at once, and
/// the server rolls the transaction back as soon as it reads the end of the
/// stream. (A pool only recycles on the next checkout, so such a connection
/// left in it would keep its socket, its transaction and its locks, or a
/// query the server is still streaming, alive until then; and the next
/// borrower would run inside another client's transaction.)
///
/// The pool holds `Box<BackendConn>`: a checkout and a give-back move the
/// pooled object in and out of deadpool's slots several times, and a
/// pointer moves in one instruction where the whole connection (stream
/// buffers' headers, state, login) was a `memcpy` each time (the largest
/// share of `memcpy` in the per-statement profile).
pub struct Pooled(Option<managed::Object<Manager>>);

impl std::ops::Deref for Pooled {
    type Target = BackendConn;
    fn deref(&self) -> &BackendConn {
        // Always Some until drop.
        self.0
            .as_deref()
            .map(|b| &**b)
            .unwrap_or_else(|| unreachable!("pooled connection used after drop"))
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut BackendConn {
        self.0
            .as_deref_mut()
            .map(|b| &mut **b)
            .unwrap_or_else(|| unreachable!("pooled connection used after drop"))
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(obj) = self.0.take() {
            // Closed rather than pooled when another account waits for a
            // place on this backend (the permit goes to it).
            if !reusable(&obj) || obj.budget.as_ref().is_some_and(|b| b.contended()) {
                drop(managed::Object::take(obj));
            }
        }
    }
}

pub struct Manager {
    params: ConnectParams,
    key: PoolKey,
    login: Arc<Login>,
    registry: std::sync::Weak<Registry>,
    /// Connections parked by sessions (see [`PoolHandle::park`]).
    parked: Parked,
}

/// The parked connections of one pool, as the pool sees them.
///
/// A session that gives a connection back while nobody waits for one of
/// its pool parks it in its own [`Lease`] instead of returning it to
/// deadpool, and takes it back for its next statement: no shared lock, no
/// semaphore, no recycle on the hot path of a session that runs statement
/// after statement. A parked connection is still free for anyone: a
/// checkout that finds no idle connection in the pool takes one from a
/// lease before it creates a connection or waits (`steal`), so a pool
/// holds no more connections than with plain give-back.
#[derive(Default)]
struct Parked {
    /// Leases that may hold a connection. A lease is listed when it parks
    /// while unlisted; `steal` unlists the empty ones it passes.
    listed: Mutex<Vec<Weak<Lease>>>,
    /// `listed.len()` as of its last change, read without the lock.
    hint: AtomicUsize,
    /// Checkouts waiting for a connection of this pool: while there are
    /// any, connections go back to the pool (which hands them to a waiter)
    /// instead of being parked.
    waiting: AtomicUsize,
}

/// One session's parking place on one pool (see [`Parked`]).
#[derive(Default)]
struct Lease {
    slot: Mutex<LeaseSlot>,
}

#[derive(Default)]
struct LeaseSlot {
    conn: Option<Pooled>,
    /// In its pool's `Parked::listed` (changed under this slot's lock).
    listed: bool,
}

impl Parked {
    /// Take a parked connection of another session (or None). Lock order
    /// everywhere: the registry, then `listed`, then a lease's slot.
    fn steal(&self) -> Option<Pooled> {
        let mut listed = self.listed.lock().ok()?;
        let mut got = None;
        listed.retain(|w| {
            if got.is_some() {
                return true;
            }
            let Some(lease) = w.upgrade() else {
                return false;
            };
            let Ok(mut slot) = lease.slot.lock() else {
                return false;
            };
            match slot.conn.take() {
                Some(c) => {
                    got = Some(c);
                    true // its session parks here again
                }
                None => {
                    slot.listed = false;
                    false
                }
            }
        });
        self.hint.store(listed.len(), Ordering::Relaxed);
        got
    }

    /// Parked connections right now (for the pool's idle count).
    fn count(&self) -> usize {
        let Ok(listed) = self.listed.lock() else {
            return 0;
        };
        listed
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|l| l.slot.lock().is_ok_and(|s| s.conn.is_some()))
            .count()
    }

    /// Give every parked connection back to its pool (a closed pool drops it).
    fn drain(&self) {
        while let Some(c) = self.steal() {
            drop(c);
        }
    }
}

/// A checkout of this pool waiting (see `Parked::waiting`).
struct WaitingFor<'a>(&'a Parked);

impl<'a> WaitingFor<'a> {
    fn new(parked: &'a Parked) -> WaitingFor<'a> {
        parked.waiting.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `PoolHandle::park`: either that session
        // sees this waiter and gives its connection to the pool, or the
        // `steal` that follows sees the parked connection.
        fence(Ordering::SeqCst);
        WaitingFor(parked)
    }
}

impl Drop for WaitingFor<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A parked connection taken back or stolen may be used: not broken and
/// quiet since it was parked (what deadpool's recycle checks). One the
/// server closed is closed; a TLS one with records waiting (a session
/// ticket, or the server's close) goes back to the pool, whose recycle
/// proves it with a round trip before anyone uses it. One older than
/// `max_age` goes back to the pool too, whose recycle closes it.
fn usable(mut c: Pooled, max_age: Duration) -> Option<Pooled> {
    if c.broken || c.too_old(max_age) {
        return None;
    }
    match c.idle_state() {
        IdleState::Quiet => Some(c),
        IdleState::Data if c.is_tls() && c.stream.rbuf.is_empty() => None,
        _ => {
            c.broken = true; // detached and closed on drop, not pooled
            None
        }
    }
}

/// The pools of one backend and their shared budget.
struct Registry {
    pools: Mutex<HashMap<(u64, PoolKey), managed::Pool<Manager>>>,
    budget: Arc<Budget>,
    max: usize,
}

/// The connections of one backend, all logins together.
pub struct Budget {
    /// `backend.pool_max` permits, one per open connection.
    total: Arc<Semaphore>,
    /// Creations waiting for a permit.
    waiting: std::sync::atomic::AtomicUsize,
    /// An operator drains the backend (`DRAIN BACKEND`): connections given
    /// back are closed, no new checkout.
    drained: AtomicBool,
}

impl Budget {
    /// Someone waits for a place, or the backend is drained: a connection
    /// given back should be closed.
    pub fn contended(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0 || self.drained.load(Ordering::Acquire)
    }
}

struct Waiting<'a>(&'a Budget);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Registry {
    /// Close one idle connection of another pool than `except` (another
    /// login, or the same login for another client format). True if one
    /// was closed (its permit is free again).
    fn evict_idle(&self, except: (u64, PoolKey)) -> bool {
        let Ok(pools) = self.pools.lock() else {
            return false;
        };
        for (key, pool) in pools.iter() {
            if *key == except || pool.status().available == 0 {
                continue;
            }
            let mut left = 1;
            let r = pool.retain(|_, _| {
                if left == 0 {
                    return true;
                }
                left -= 1;
                false
            });
            if !r.removed.is_empty() {
                return true;
            }
        }
        // A connection parked by a session of another pool: closed on drop
        // (the budget is contended, see `Pooled::drop`).
        for (key, pool) in pools.iter() {
            if *key == except {
                continue;
            }
            if let Some(c) = pool.manager().parked.steal() {
                drop(c);
                return true;
            }
        }
        false
    }
}

impl managed::Manager for Manager {
    type Type = Box<BackendConn>;
    type Error = BackendError;

    async fn create(&self) -> Result<Box<BackendConn>, BackendError> {
        let registry = self
            .registry
            .upgrade()
            .ok_or_else(|| BackendError::Pool("the backend's pools are gone".into()))?;
        let total = registry.budget.total.clone();
        let max = registry.max;
        let permit = match total.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // The backend is full. An idle connection of another
                // account makes room now; while this creation waits, every
                // connection given back is closed instead of pooled (see
                // `Pooled::drop`), so one busy account cannot keep the
                // backend to itself. The semaphore queues waiters in order.
                registry.budget.waiting.fetch_add(1, Ordering::SeqCst);
                // Pairs with the fence in `PoolHandle::park` (see `WaitingFor`).
                fence(Ordering::SeqCst);
                let _done = Waiting(&registry.budget);
                registry.evict_idle((self.login.id, self.key));
                let wait = checkout_wait(&self.params);
                match tokio::time::timeout(wait, total.acquire_owned()).await {
                    Ok(Ok(p)) => p,
                    _ => return Err(BackendError::PoolFull { max }),
                }
            }
        };
        let budget = registry.budget.clone();
        drop(registry);
        // Boxed: a login's future (TLS, auth plugins) is kilobytes, and it
        // would otherwise be part of every checkout's future, which is
        // copied (memmove) into each statement's state.
        let mut conn = Box::pin(BackendConn::connect_as(&self.params, &self.login, self.key)).await?;
        conn.slot = Some(super::slot::Slot::new(&self.params));
        Box::pin(conn.claim_slot()).await?;
        conn.permit = Some(permit);
        conn.budget = Some(budget);
        Ok(Box::new(conn))
    }

    async fn recycle(&self, conn: &mut Box<BackendConn>, _: &Metrics) -> RecycleResult<BackendError> {
        // Checked again at checkout, whatever path gave the connection back:
        // no borrower ever starts inside another client's transaction.
        if !reusable(conn) {
            return Err(RecycleError::message("connection not reusable"));
        }
        if conn.too_old(self.params.max_age) {
            return Err(RecycleError::message("older than backend.max_connection_age"));
        }
        if conn.dirty {
            // State sluice does not track (a session ended pinned or in a
            // transaction): one round trip that both cleans the session and
            // proves the server still holds the connection.
            // Boxed for the same reason as `create`.
            Box::pin(conn.reset_as_new(&self.params))
                .await
                .map_err(RecycleError::Backend)?;
            return Ok(());
        }
        // Clean apart from tracked state (default database, SETs, prepared
        // statements), which the next borrower reconciles.
        match conn.idle_state() {
            IdleState::Quiet => Ok(()),
            // A TLS server may send records other than a close (session
            // tickets): a round trip reads them and proves the connection.
            IdleState::Data if conn.is_tls() && conn.stream.rbuf.is_empty() => {
                Box::pin(conn.ping()).await.map_err(RecycleError::Backend)
            }
            _ => Err(RecycleError::message("connection closed while idle")),
        }
    }
}

/// How long a checkout may wait for a connection (then: error 1040).
fn checkout_wait(params: &ConnectParams) -> Duration {
    params.connect_timeout.max(Duration::from_secs(5))
}

/// A connection may serve another borrower: not broken, not marked
/// `no_reuse`, and no transaction open as far as its last answer said.
fn reusable(conn: &BackendConn) -> bool {
    !(conn.broken || conn.no_reuse || conn.in_transaction())
}

/// All pools of one backend server.
pub struct BackendPool {
    /// A name for logs and errors, e.g. "main master 127.0.0.1:3306".
    pub label: String,
    params: ConnectParams,
    max_size: usize,
    /// Most connections of one login (`auth.pool_max_per_account`).
    per_login: usize,
    /// The group's account (`params.user`): probes' and admin work's, and
    /// the sessions of configured users without a `backend:` account.
    own: Arc<Login>,
    registry: Arc<Registry>,
    /// Checkouts that waited, for metrics (read at scrape time).
    pub waits: crate::stats::WaitStats,
    /// A reload removed this backend (see [`BackendPool::close`]).
    closed: AtomicBool,
    /// What every checkout gets instead of a connection: the group has no
    /// master (several servers are writable, see `crate::follow`).
    refusal: std::sync::OnceLock<crate::protocol::packets::ErrPacket>,
    /// Checkouts that moved their connection to the borrower's session
    /// thread (`BackendPool::settled`), for metrics.
    moves: AtomicU64,
}

impl BackendPool {
    pub fn new(label: String, params: ConnectParams, max_size: usize) -> Arc<BackendPool> {
        BackendPool::with_per_login(label, params, max_size, max_size)
    }

    /// `per_login`: most connections one login may hold here.
    pub fn with_per_login(
        label: String,
        params: ConnectParams,
        max_size: usize,
        per_login: usize,
    ) -> Arc<BackendPool> {
        let own = Login::password(&params.user, &params.password);
        Arc::new(BackendPool {
            label,
            params,
            max_size,
            per_login: per_login.clamp(1, max_size.max(1)),
            own,
            registry: Arc::new(Registry {
                pools: Mutex::new(HashMap::new()),
                budget: Arc::new(Budget {
                    total: Arc::new(Semaphore::new(max_size)),
                    waiting: Default::default(),
                    drained: AtomicBool::new(false),
                }),
                max: max_size,
            }),
            waits: Default::default(), // metrics
            closed: AtomicBool::new(false),
            refusal: std::sync::OnceLock::new(),
            moves: AtomicU64::new(0),
        })
    }

    pub fn addr(&self) -> &str {
        &self.params.addr
    }

    /// The group's account on this backend.
    pub fn own_login(&self) -> &Arc<Login> {
        &self.own
    }

    fn pool_for(&self, login: &Arc<Login>, key: PoolKey) -> Result<managed::Pool<Manager>, BackendError> {
        self.removed()?;
        let mut pools = self
            .registry
            .pools
            .lock()
            .map_err(|_| BackendError::Pool("pool registry poisoned".into()))?;
        if let Some(p) = pools.get(&(login.id, key)) {
            return Ok(p.clone());
        }
        // Pools of logins nobody uses any more (an account whose password
        // changed, a dropped one) that hold no connection: forget them.
        pools.retain(|_, p| {
            let s = p.status();
            !(s.size == 0 && Arc::strong_count(&p.manager().login) <= 1)
        });
        let manager = Manager {
            params: self.params.clone(),
            key,
            login: login.clone(),
            registry: Arc::downgrade(&self.registry),
            parked: Parked::default(),
        };
        let mut max = self.per_login;
        if login.max_connections > 0 {
            max = max.min(login.max_connections);
        }
        let pool = managed::Pool::builder(manager)
            .max_size(max)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(checkout_wait(&self.params)))
            // A creation may first wait for a place among all logins'
            // connections; the connect itself has its own timeout.
            .create_timeout(Some(checkout_wait(&self.params) + self.params.connect_timeout))
            .recycle_timeout(Some(self.params.connect_timeout))
            .build()
            .map_err(|e| BackendError::Pool(e.to_string()))?;
        pools.insert((login.id, key), pool.clone());
        Ok(pool)
    }

    /// Bring a connection of this backend back to a fresh login's state
    /// (COM_CHANGE_USER as sluice's backend user).
    pub async fn reset(&self, conn: &mut BackendConn) -> Result<(), BackendError> {
        conn.reset_as_new(&self.params).await
    }

    /// `KILL QUERY` (`query_only`) or `KILL CONNECTION` of one of this
    /// backend's threads, on a side connection (see `BackendConn::kill_thread`).
    pub async fn kill(&self, thread: u32, query_only: bool) -> Result<(), BackendError> {
        match BackendConn::kill_thread(&self.params, thread, query_only).await? {
            Ok(()) => Ok(()),
            Err(e) => Err(BackendError::Server(e)),
        }
    }

    /// Check out a connection of the group's account for `key`.
    pub async fn get(&self, key: PoolKey) -> Result<Pooled, BackendError> {
        let own = self.own.clone();
        self.get_as(&own, key).await
    }

    /// Check out a connection logged in as `login` for `key`.
    pub async fn get_as(&self, login: &Arc<Login>, key: PoolKey) -> Result<Pooled, BackendError> {
        let pool = self.pool_for(login, key)?;
        self.checkout(&pool, true).await
    }

    /// [`BackendPool::get`] for one command whose next use is as likely on
    /// another session thread (the strict probe, run by whichever read's
    /// session needs it): the connection is not moved to this thread
    /// (`settled`). Moving it cost four system calls at nearly every probe
    /// (strace, strict mode per core: 0.16 moves per query); left where it
    /// is, its answer wakes this thread through the other's driver.
    pub async fn get_unmoved(&self, key: PoolKey) -> Result<Pooled, BackendError> {
        let pool = self.pool_for(&self.own, key)?;
        self.checkout(&pool, false).await
    }

    /// A session's handle on its (login, key) pool here: checkouts through
    /// it skip the registry (its mutex, shared by every session of the
    /// backend, the key's hash and an `Arc` clone of the pool per checkout).
    pub fn handle(self: &Arc<Self>, login: &Arc<Login>, key: PoolKey) -> Result<PoolHandle, BackendError> {
        Ok(PoolHandle {
            pool: self.pool_for(login, key)?,
            backend: self.clone(),
            login: login.id,
            key,
            lease: Arc::default(),
        })
    }

    /// `settle`: move the connection to the caller's session thread if it
    /// did not have to wait for it (see `settled`).
    async fn checkout(&self, pool: &managed::Pool<Manager>, settle: bool) -> Result<Pooled, BackendError> {
        let parked = &pool.manager().parked;
        let settled = |c: Pooled| if settle { self.settled(c) } else { c };
        // No idle connection in the pool but some parked by sessions: take
        // one of those rather than open another connection. (`status()`
        // takes the pool's lock: only when something is parked.)
        if parked.hint.load(Ordering::Relaxed) > 0 && pool.status().available == 0 {
            if let Some(c) = parked.steal().and_then(|c| usable(c, self.params.max_age)) {
                return Ok(settled(c));
            }
        }
        // metrics: pool waits and wait time. A checkout that does not
        // complete at its first poll waits (for a connection to be given
        // back or created); timed from then. (Not `pool.status()`, which
        // takes the pool's lock once more per checkout.)
        let mut get = std::pin::pin!(pool.get());
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(get.as_mut().poll(cx))).await;
        let got = match first {
            std::task::Poll::Ready(r) => r,
            std::task::Poll::Pending => {
                let _wait = self.waits.begin(true);
                // Sessions stop parking while this waits; one parked
                // before is taken now (see `WaitingFor`).
                let _waiting = WaitingFor::new(parked);
                // Not moved to this session's thread (`settled`): while
                // checkouts wait, a connection changes hands after every
                // statement (nobody parks), so it would move again at the
                // next one, four system calls each time (0.5 moves per query
                // with 1,000 clients over 64 connections, benches/multiplex.sh),
                // where a borrower woken through another thread's driver
                // costs that driver one eventfd write per answer.
                if let Some(c) = parked.steal().and_then(|c| usable(c, self.params.max_age)) {
                    return Ok(c);
                }
                return get
                    .await
                    .map(|o| Pooled(Some(o)))
                    .map_err(|e| self.checkout_error(e));
            }
        };
        got.map(|o| settled(Pooled(Some(o))))
            .map_err(|e| self.checkout_error(e))
    }

    fn checkout_error(&self, e: managed::PoolError<BackendError>) -> BackendError {
        match e {
            managed::PoolError::Backend(b) => b,
            managed::PoolError::Timeout(t) => match t {
                managed::TimeoutType::Create => BackendError::Timeout(self.params.connect_timeout),
                managed::TimeoutType::Wait => BackendError::PoolFull { max: self.max_size },
                other => BackendError::Pool(format!("timed out waiting for a connection ({other:?})")),
            },
            other => BackendError::Pool(other.to_string()),
        }
    }

    /// `c`, registered with the caller's session thread (`runtime.per_core`;
    /// see `BackendConn::settle`): the last step of a checkout that did not
    /// wait.
    fn settled(&self, mut c: Pooled) -> Pooled {
        if c.settle() {
            self.moves.fetch_add(1, Ordering::Relaxed); // metrics
        }
        c
    }

    /// Connections moved between session threads at checkout (metric).
    pub fn moves(&self) -> u64 {
        self.moves.load(Ordering::Relaxed)
    }

    /// Refuse every checkout with `e` from now on (a pool made for this:
    /// the group has no master, see `Topology::fence_master`).
    pub fn fence(&self, e: crate::protocol::packets::ErrPacket) {
        let _ = self.refusal.set(e);
    }

    /// See [`BackendPool::fence`].
    pub fn fenced(&self) -> bool {
        self.refusal.get().is_some()
    }

    /// The error a fenced pool answers with.
    pub fn refusal(&self) -> Option<crate::protocol::packets::ErrPacket> {
        self.refusal.get().cloned()
    }

    fn removed(&self) -> Result<(), BackendError> {
        if let Some(e) = self.refusal.get() {
            return Err(BackendError::Server(e.clone()));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(BackendError::Pool(
                "the backend was removed from the configuration".into(),
            ));
        }
        if self.is_drained() {
            return Err(BackendError::Pool(
                "an operator drained this backend (DRAIN BACKEND; ENABLE BACKEND undoes it)".into(),
            ));
        }
        Ok(())
    }

    /// `DRAIN BACKEND` (`true`) / `ENABLE BACKEND` (`false`). Draining
    /// refuses new checkouts and closes the idle and parked connections now;
    /// those that sessions hold are closed when given back, at the end of
    /// their statement or transaction. A reload that keeps the pool keeps
    /// the state.
    pub fn set_drained(&self, drained: bool) {
        self.registry.budget.drained.store(drained, Ordering::Release);
        if !drained {
            return;
        }
        if let Ok(pools) = self.registry.pools.lock() {
            for p in pools.values() {
                p.retain(|_, _| false);
                p.manager().parked.drain();
            }
        }
    }

    pub fn is_drained(&self) -> bool {
        self.registry.budget.drained.load(Ordering::Acquire)
    }

    /// Connections checked out now (open minus idle and parked).
    pub fn in_use(&self) -> usize {
        let (open, idle) = self.status();
        open.saturating_sub(idle)
    }

    /// A reload removed this backend (or changed how it is reached): close
    /// the idle connections now and refuse new checkouts. Connections that
    /// sessions hold finish their statement or transaction and are closed
    /// when given back.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Ok(pools) = self.registry.pools.lock() {
            for p in pools.values() {
                p.close();
                p.manager().parked.drain();
            }
        }
    }

    /// Connections open and idle (in the pool or parked by a session),
    /// summed over keys.
    pub fn status(&self) -> (usize, usize) {
        let Ok(pools) = self.registry.pools.lock() else {
            return (0, 0);
        };
        pools.values().fold((0, 0), |(size, avail), p| {
            let s = p.status();
            (size + s.size, avail + s.available + p.manager().parked.count())
        })
    }
}

/// One (backend, login, key) pool as a session holds it between statements
/// (see [`BackendPool::handle`]). It holds the backend's `Arc`, so a reload
/// that replaces the backend is seen by [`PoolHandle::is_for`] failing, and
/// one that removes it by the checkout's error (the pool is closed).
pub struct PoolHandle {
    backend: Arc<BackendPool>,
    login: u64,
    key: PoolKey,
    pool: managed::Pool<Manager>,
    /// Where the session parks a connection of this pool between
    /// statements (see [`Parked`]). Dropped with the handle: a parked
    /// connection then goes back to the pool.
    lease: Arc<Lease>,
}

impl PoolHandle {
    /// The handle serves `backend` for `login` and `key`.
    pub fn is_for(&self, backend: &Arc<BackendPool>, login: &Login, key: PoolKey) -> bool {
        Arc::ptr_eq(&self.backend, backend) && self.login == login.id && self.key == key
    }

    pub fn backend(&self) -> &Arc<BackendPool> {
        &self.backend
    }

    /// Check out a connection, as [`BackendPool::get_as`] would: the one
    /// this handle parked if it is still there and alive.
    pub async fn get(&self) -> Result<Pooled, BackendError> {
        self.backend.removed()?;
        if let Some(c) = self.take_parked() {
            return Ok(self.backend.settled(c));
        }
        self.backend.checkout(&self.pool, true).await
    }

    /// An idle connection of the pool, if it has one now: never opens one
    /// or waits (for upkeep, see `Session::sweep_parked`).
    pub async fn idle_one(&self) -> Option<Pooled> {
        if self.backend.removed().is_err() || self.pool.status().available == 0 {
            return None;
        }
        let t = managed::Timeouts {
            wait: Some(Duration::ZERO),
            create: Some(Duration::ZERO),
            recycle: Some(self.backend.params.connect_timeout),
        };
        self.pool.timeout_get(&t).await.ok().map(|o| Pooled(Some(o)))
    }

    /// The connection this handle parked, if it is still there and alive.
    pub fn take_parked(&self) -> Option<Pooled> {
        let mine = self.lease.slot.lock().ok().and_then(|mut s| s.conn.take());
        // The session's own connection: not aged here (a clock read per
        // statement); the age bounds what other sessions get (recycle, steal).
        mine.and_then(|c| usable(c, Duration::ZERO))
    }

    /// Give a connection back: parked for this handle's next [`Self::get`]
    /// while no checkout of the pool (nor of another account on the
    /// backend) waits, else returned to the pool. Only a reusable
    /// connection of this very pool is parked.
    pub fn park(&self, c: Pooled) {
        let parked = &self.pool.manager().parked;
        let ours = c.key == self.key
            && c.login.id == self.login
            && c.budget
                .as_ref()
                .is_some_and(|b| Arc::ptr_eq(b, &self.backend.registry.budget));
        let contended = |c: &Pooled| {
            parked.waiting.load(Ordering::SeqCst) > 0 || c.budget.as_ref().is_some_and(|b| b.contended())
        };
        if !ours || !reusable(&c) || contended(&c) || self.backend.closed.load(Ordering::Acquire) {
            return drop(c);
        }
        let Ok(mut slot) = self.lease.slot.lock() else {
            return drop(c);
        };
        let list = !std::mem::replace(&mut slot.listed, true);
        let old = slot.conn.replace(c);
        drop(slot);
        drop(old);
        if list {
            if let Ok(mut listed) = parked.listed.lock() {
                listed.push(Arc::downgrade(&self.lease));
                parked.hint.store(listed.len(), Ordering::Relaxed);
            }
        }
        // Pairs with the fence in `WaitingFor::new` and `Manager::create`:
        // a checkout that began waiting before the connection was parked
        // must get it, from the pool if not by `steal`.
        fence(Ordering::SeqCst);
        let Ok(mut slot) = self.lease.slot.lock() else {
            return;
        };
        if slot.conn.as_ref().is_some_and(contended) {
            let c = slot.conn.take();
            drop(slot);
            drop(c);
        }
    }
}
