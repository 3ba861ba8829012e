//! Pools of backend connections (deadpool), one pool per backend server and
//! `PoolKey`: a client is only ever served by connections whose response
//! format (capabilities, collation) matches its own.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool::managed::{self, Metrics, RecycleError, RecycleResult};

use super::conn::{BackendConn, ConnectParams, IdleState, PoolKey};
use super::error::BackendError;

/// A checked-out connection. Dropping it gives it back to its pool, except
/// a connection that is broken, must not be reused, or whose last answer
/// said a transaction is open: that one is detached and closed at once, and
/// the server rolls the transaction back as soon as it reads the end of the
/// stream. (A pool only recycles on the next checkout, so such a connection
/// left in it would keep its socket, its transaction and its locks, or a
/// query the server is still streaming, alive until then; and the next
/// borrower would run inside another client's transaction.)
pub struct Pooled(Option<managed::Object<Manager>>);

impl std::ops::Deref for Pooled {
    type Target = BackendConn;
    fn deref(&self) -> &BackendConn {
        // Always Some until drop.
        self.0
            .as_deref()
            .unwrap_or_else(|| unreachable!("pooled connection used after drop"))
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut BackendConn {
        self.0
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("pooled connection used after drop"))
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(obj) = self.0.take() {
            if !reusable(&obj) {
                drop(managed::Object::take(obj));
            }
        }
    }
}

pub struct Manager {
    params: ConnectParams,
    key: PoolKey,
}

impl managed::Manager for Manager {
    type Type = BackendConn;
    type Error = BackendError;

    async fn create(&self) -> Result<BackendConn, BackendError> {
        // Boxed: a login's future (TLS, auth plugins) is kilobytes, and it
        // would otherwise be part of every checkout's future, which is
        // copied (memmove) into each statement's state.
        Box::pin(BackendConn::connect(&self.params, self.key)).await
    }

    async fn recycle(&self, conn: &mut BackendConn, _: &Metrics) -> RecycleResult<BackendError> {
        // Checked again at checkout, whatever path gave the connection back:
        // no borrower ever starts inside another client's transaction.
        if !reusable(conn) {
            return Err(RecycleError::message("connection not reusable"));
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
    pools: Mutex<HashMap<PoolKey, managed::Pool<Manager>>>,
    /// Checkouts that waited, for metrics (read at scrape time).
    pub waits: crate::metrics::WaitStats,
    /// A reload removed this backend (see [`BackendPool::close`]).
    closed: AtomicBool,
}

impl BackendPool {
    pub fn new(label: String, params: ConnectParams, max_size: usize) -> Arc<BackendPool> {
        Arc::new(BackendPool {
            label,
            params,
            max_size,
            pools: Mutex::new(HashMap::new()),
            waits: Default::default(), // metrics
            closed: AtomicBool::new(false),
        })
    }

    pub fn addr(&self) -> &str {
        &self.params.addr
    }

    fn pool_for(&self, key: PoolKey) -> Result<managed::Pool<Manager>, BackendError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(BackendError::Pool(
                "the backend was removed from the configuration".into(),
            ));
        }
        let mut pools = self
            .pools
            .lock()
            .map_err(|_| BackendError::Pool("pool registry poisoned".into()))?;
        if let Some(p) = pools.get(&key) {
            return Ok(p.clone());
        }
        let manager = Manager {
            params: self.params.clone(),
            key,
        };
        let pool = managed::Pool::builder(manager)
            .max_size(self.max_size)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(self.params.connect_timeout.max(Duration::from_secs(5))))
            .create_timeout(Some(self.params.connect_timeout))
            .recycle_timeout(Some(self.params.connect_timeout))
            .build()
            .map_err(|e| BackendError::Pool(e.to_string()))?;
        pools.insert(key, pool.clone());
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

    /// Check out a connection for `key`.
    pub async fn get(&self, key: PoolKey) -> Result<Pooled, BackendError> {
        let pool = self.pool_for(key)?;
        // metrics: pool waits and wait time. A checkout that does not
        // complete at its first poll waits (for a connection to be given
        // back or created); timed from then. (Not `pool.status()`, which
        // takes the pool's lock once more per checkout.)
        let mut get = std::pin::pin!(pool.get());
        let mut wait = None;
        let got = std::future::poll_fn(|cx| {
            let p = get.as_mut().poll(cx);
            if p.is_pending() && wait.is_none() {
                wait = Some(self.waits.begin(true));
            }
            p
        })
        .await;
        drop(wait);
        got.map(|o| Pooled(Some(o))).map_err(|e| match e {
            managed::PoolError::Backend(b) => b,
            managed::PoolError::Timeout(t) => match t {
                managed::TimeoutType::Create => BackendError::Timeout(self.params.connect_timeout),
                managed::TimeoutType::Wait => BackendError::PoolFull { max: self.max_size },
                other => BackendError::Pool(format!("timed out waiting for a connection ({other:?})")),
            },
            other => BackendError::Pool(other.to_string()),
        })
    }

    /// A reload removed this backend (or changed how it is reached): close
    /// the idle connections now and refuse new checkouts. Connections that
    /// sessions hold finish their statement or transaction and are closed
    /// when given back.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        if let Ok(pools) = self.pools.lock() {
            for p in pools.values() {
                p.close();
            }
        }
    }

    /// Connections open and idle, summed over keys.
    pub fn status(&self) -> (usize, usize) {
        let Ok(pools) = self.pools.lock() else {
            return (0, 0);
        };
        pools.values().fold((0, 0), |(size, avail), p| {
            let s = p.status();
            (size + s.size, avail + s.available)
        })
    }
}
