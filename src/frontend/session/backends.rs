//! The session's backend connections: borrowing, synchronizing, giving back.
//!
//! With `backend.multiplex` (the default) a session borrows a connection
//! from the pool when a statement needs one and gives it back as soon as the
//! connection holds nothing that belongs to this session alone:
//!
//! - kept while a transaction is open (`in_transaction`), while the session
//!   is pinned (temporary tables, user variables, LOCK TABLES, named locks,
//!   SQL-level PREPARE/HANDLER/XA, CALL, `SET TRANSACTION` for the next
//!   transaction, COM_SET_OPTION, too many SETs to replay), while a
//!   read-only transaction runs on a replica, while a cursor is open or long
//!   data waits for its EXECUTE;
//! - kept for one more statement after a statement the next one may ask
//!   about on the same connection (`keep`): warnings or an error
//!   (`SHOW WARNINGS`, `@@warning_count`, `GET DIAGNOSTICS`),
//!   `SQL_CALC_FOUND_ROWS` (`FOUND_ROWS()`). Not after writes: every
//!   session idle after a write would hold a connection. So `ROW_COUNT()`
//!   in the statement after a write, and `FOUND_ROWS()` without
//!   `SQL_CALC_FOUND_ROWS`, see a connection whose previous statement was
//!   a sluice statement that left no warnings (-1 and 0): a documented limit of multiplexing, as in
//!   ProxySQL; `backend.multiplex: false` keeps one connection per session;
//! - `LAST_INSERT_ID()` is carried across connections: after a statement
//!   that may have changed it, its value is read back before the connection
//!   goes back to the pool, and set again (`DO LAST_INSERT_ID(n)`) on the
//!   connection that runs the next statement mentioning it.
//!
//! A connection given back while no other session waits for one of its
//! pool is parked with the session (`PoolHandle::park`) and taken back for
//! its next statement, skipping the pool; any checkout that finds no idle
//! connection in the pool takes a parked one first, so parking adds no
//! connections and lets no session wait.
//!
//! A borrowed connection is brought in line with the session before use:
//! default database, then the replayable SETs it has not run (see
//! `backend::state`); a connection whose SETs are not a prefix of the
//! session's is reset first.
//!
//! When the session ends (the client left, was killed, timed out), no
//! backend connection keeps anything of it (`finish_connections`): one with
//! a transaction open (or state sluice cannot know: CALL, SQL PREPARE,
//! HANDLER, XA, COM_SET_OPTION) is closed, so the server rolls back and
//! frees its locks as soon as it reads the end of the stream; one with other
//! session state (temporary tables, named locks, variables) is reset at once
//! and goes back to the pool clean; a failed reset closes it.

use crate::backend::pool::PoolHandle;
use crate::backend::state::SetChain;
use crate::backend::{BackendConn, BackendError, BackendPool, Pooled};
use crate::error;
use crate::protocol::packets::ErrPacket;

use super::prepared::Conn;
use super::sharded;
use super::Session;
pub(super) use crate::router::plan::Pins;
use crate::runtime::Runtime;
use std::time::Duration;

/// hook(perf): the session's pool handles, one for the master and one for
/// the replica it last read from: a checkout through a handle takes no lock
/// that every session of the backend shares besides the pool's own.
#[derive(Default)]
pub(super) struct PoolHandles {
    master: Option<PoolHandle>,
    replica: Option<PoolHandle>,
}

impl PoolHandles {
    fn slot(&mut self, conn: Conn) -> &mut Option<PoolHandle> {
        match conn {
            Conn::Master => &mut self.master,
            Conn::Replica(_) => &mut self.replica,
        }
    }
}

/// A backend connection held by the session.
pub(super) struct Held {
    pub(super) conn: Pooled,
}

/// What a session knows of `LAST_INSERT_ID()`.
#[derive(Debug, Default)]
pub(super) struct LastInsertId {
    /// The session's value, when known.
    pub value: u64,
    /// The connection (uid) whose server value is the session's; 0: none.
    pub owner: u64,
    /// The owner's value may differ from `value` (it ran a statement that
    /// can change it): read it back before giving the connection away.
    pub unknown: bool,
    /// The connection's value before the first such statement.
    pub(super) prior: u64,
    /// The last insert id an OK packet reported since then (0: none).
    pub(super) last_reported: u64,
}

impl Session {
    /// Pin the session (see `Pins`); counted once per reason and session
    /// stretch, so operators see what keeps multiplexing from working.
    pub(super) fn pin(&mut self, bits: Pins) {
        for bit in self.state.take_pins(bits).iter() {
            self.shared.metrics.session_pinned(Pins::name(bit)); // metrics: pins by reason
        }
    }

    /// hook(kill): tell the registry which backend thread this session's
    /// named locks can be on: the master connection it keeps while pinned
    /// by a lock or by state sluice cannot see into (a procedure, dynamic
    /// SQL); every other session holds no lock past its statement.
    pub(super) fn publish_lock_thread(&self) {
        let pins = &self.state.pins();
        let may_lock = pins.has(Pins::NAMED_LOCK) || pins.has(Pins::CONNECTION_STATE);
        let thread = match &self.backends.master {
            Some(h) if may_lock => h.conn.thread_id,
            _ => 0,
        };
        self.proc.set_lock_thread(thread);
    }

    /// The uid of the connection held for `conn` (0 when none).
    pub(super) fn gen_of(&self, conn: Conn) -> u64 {
        match conn {
            Conn::Master => self
                .backends
                .master
                .as_ref()
                .map(|h| h.conn.state.uid)
                .unwrap_or(0),
            Conn::Replica(i) => match &self.backends.replica {
                Some((j, h)) if *j == i => h.conn.state.uid,
                _ => 0,
            },
        }
    }

    /// A connection of `pool` logged in as the session's account (the
    /// group's account for configured users without `backend:`).
    pub(super) async fn checkout(&self, pool: &BackendPool) -> Result<Pooled, BackendError> {
        match &self.login {
            Some(login) => pool.get_as(login, self.key).await,
            None => pool.get(self.key).await,
        }
    }

    pub(super) fn label(&self, conn: Conn) -> String {
        pool_for(&self.rt, conn)
            .map(|p| p.label.clone())
            .unwrap_or_default()
    }

    /// Make sure the connection for `conn` is checked out and in sync with
    /// the session (default database, replayed SETs). Errors are ready to
    /// send to the client.
    pub(super) async fn held(&mut self, conn: Conn) -> Result<(), ErrPacket> {
        // hook(pause): an operator's PAUSE holds the statement here (crate::pause;
        // boxed: rare, keeps the per-statement future small).
        if self.shared.pause.active() {
            Box::pin(self.wait_if_paused(conn)).await?;
        }
        // The session's handle on the pool (see `PoolHandles`), taken out of
        // the session while in use: `pool` borrows no field of `self`.
        let handle = self.pool_handle(conn)?;
        let r = self.held_with(conn, &handle).await;
        *self.pools.slot(conn) = Some(handle);
        r
    }

    /// The handle for `conn`'s pool: the one kept from an earlier statement
    /// unless a reload replaced the backend or the login changed.
    fn pool_handle(&mut self, conn: Conn) -> Result<PoolHandle, ErrPacket> {
        let group = &self.rt.topology.groups[0];
        let backend = match conn {
            Conn::Master => &group.master,
            Conn::Replica(i) => &group.replicas.get(i).ok_or_else(|| lost("replica"))?.pool,
        };
        let login = self.login.as_ref().unwrap_or_else(|| backend.own_login());
        let slot = self.pools.slot(conn);
        match slot.take() {
            Some(h) if h.is_for(backend, login, self.key) => Ok(h),
            _ => backend
                .handle(login, self.key)
                .map_err(|e| error::backend_error_packet(&backend.label, backend.addr(), &e)),
        }
    }

    async fn held_with(&mut self, conn: Conn, handle: &PoolHandle) -> Result<(), ErrPacket> {
        let pool = handle.backend();
        self.drop_if_closed(conn, &pool.label)?;
        let present = match conn {
            Conn::Master => self.backends.master.as_ref().is_some_and(|h| !h.conn.broken),
            Conn::Replica(i) => self
                .backends
                .replica
                .as_ref()
                .is_some_and(|(j, h)| *j == i && !h.conn.broken),
        };
        if !present {
            let c = handle.get().await.map_err(|e| {
                if matches!(e, BackendError::PoolFull { .. }) {
                    // The client gets 1040; operators need to see it too.
                    tracing::warn!(backend = %pool.label, error = %e, "no backend connection free");
                }
                error::backend_error_packet(&pool.label, pool.addr(), &e)
            })?;
            if conn == Conn::Master && **self.shared.server_version.load() != c.server_version {
                self.shared
                    .server_version
                    .store(std::sync::Arc::new(c.server_version.clone()));
                self.shared.learn_backend_ext(c.server_mariadb_ext);
                self.shared.learn_backend_collation(c.server_collation);
            }
            let mut held = Held { conn: c };
            if needs_sweep(&held, &self.shared.open_stmts) {
                // Boxed (rare): keeps the per-statement future small.
                Box::pin(sweep_stmts(&mut held, &self.shared.open_stmts)).await;
            }
            match conn {
                Conn::Master => self.backends.master = Some(held),
                Conn::Replica(i) => self.backends.replica = Some((i, held)),
            }
        }
        // Borrow the fields separately: nothing is cloned on this per-command path.
        let h = self.backends.slot(conn).ok_or_else(|| lost(&pool.label))?;
        sync_to_state(&mut h.conn, pool, &self.state).await
    }

    /// Before reusing a held connection, make sure the server has not
    /// closed it meanwhile (a restarted or crashed backend). A closed one is
    /// dropped so that `held` connects again: the statement then runs, or
    /// fails with a plain connect error (1429), instead of being sent into a
    /// dead socket where its fate would be unknown. If the connection carried
    /// state the client relies on (a transaction, temporary tables, locks,
    /// variables, a read-only transaction), that state is gone: say so
    /// rather than carry on silently without it.
    fn drop_if_closed(&mut self, conn: Conn, label: &str) -> Result<(), ErrPacket> {
        let stateful = match conn {
            Conn::Master => self.in_transaction() || self.state.pins().reason().is_some(),
            Conn::Replica(_) => self.state.ro_tx().is_some(),
        };
        let Some(h) = self.backends.slot(conn) else {
            return Ok(());
        };
        if h.conn.broken || !h.conn.closed_while_idle() {
            return Ok(());
        }
        h.conn.broken = true;
        if !stateful {
            return Ok(());
        }
        match conn {
            Conn::Master => self.state.master_lost(),
            Conn::Replica(_) => self.state.replica_lost(),
        }
        Err(ErrPacket::new(
            crate::protocol::consts::errcode::ER_NET_READ_ERROR,
            "08S01",
            format!(
                "Lost connection to MySQL server during query (sluice: backend {label} closed the \
                 session's connection while it was idle; its transaction, temporary tables, locks \
                 and variables are gone; the statement was not run)"
            ),
        ))
    }

    /// The replica connection was abandoned mid-exchange (see
    /// frontend::abandon): close it, end a read-only transaction that lived
    /// on it, and describe why for the client.
    pub(super) fn abandon_replica(&mut self, conn: Conn, err: crate::protocol::ProtocolError) -> ErrPacket {
        if let Some((_, h)) = self.backends.replica.as_mut() {
            h.conn.broken = true;
        }
        self.state.replica_lost();
        error::backend_error_packet(&self.label(conn), "", &BackendError::Protocol(err))
    }

    /// Return a connection as clean (the session checked that it holds only
    /// tracked state: default database, SETs, prepared statements) through
    /// the session's handle on its pool, which parks it for the session's
    /// next statement while nobody else needs one (see `PoolHandle::park`).
    fn give_back(&mut self, conn: Conn, mut h: Held) {
        h.conn.dirty = false;
        match self.pools.slot(conn) {
            Some(handle) => handle.park(h.conn),
            None => drop(h),
        }
    }

    /// At the end of the session, after its statements were closed: the
    /// connections it parked go back to the pool swept of the backend
    /// statements no client has open any more, as a held one is before it
    /// is given back. (Left on a parked connection, they would stay on the
    /// server until its next borrower sweeps them, and count against
    /// `max_prepared_stmt_count`: seen as 1461 in mysql2's prepare-and-close
    /// test at a limit of 10.)
    ///
    /// Then up to two idle connections of each pool are swept too: with
    /// parking, sessions no longer go round the pool's idle connections (whose
    /// statements a session that ended left behind), so each session's end
    /// does a little of that upkeep.
    pub(super) async fn sweep_parked(&mut self) {
        for conn in [Conn::Master, Conn::Replica(0)] {
            let Some(handle) = self.pools.slot(conn).as_ref() else {
                continue;
            };
            if let Some(c) = handle.take_parked() {
                sweep_stmts(&mut Held { conn: c }, &self.shared.open_stmts).await;
            }
            for _ in 0..2 {
                let Some(c) = handle.idle_one().await else {
                    break;
                };
                sweep_stmts(&mut Held { conn: c }, &self.shared.open_stmts).await;
            }
        }
    }

    /// At the end of a command: give back every connection the session no
    /// longer needs (see the module comment).
    pub(super) async fn release_idle(&mut self) {
        if !self.multiplex {
            return;
        }
        // (An error keeps the connection too, see `keep`: an ERR carries
        // no status flags.)
        let keep_master = self.backends.master.is_none()
            || self.state.holds_master()
            || self.backends.cursor.is_some_and(|(_, c)| c == Conn::Master)
            || self.backends.keep == Some(Conn::Master)
            || self.stmts.stmts.values().any(|s| s.long_data);
        if let Some(mut h) = if keep_master {
            None
        } else {
            self.backends.master.take()
        } {
            let needs_capture =
                self.state.lid().unknown && self.state.lid().owner == h.conn.state.uid && !h.conn.broken;
            // A failed capture on a live connection keeps it: its
            // LAST_INSERT_ID() is the only copy.
            let keep = needs_capture && self.capture_last_insert_id(&mut h).await.is_err() && !h.conn.broken;
            if keep {
                self.backends.master = Some(h);
            } else {
                if needs_capture {
                    self.state.lid_mut().unknown = false;
                }
                if self.state.lid().owner == h.conn.state.uid {
                    self.state.lid_mut().owner = 0;
                }
                sweep_stmts(&mut h, &self.shared.open_stmts).await;
                self.give_back(Conn::Master, h);
            }
        }
        let replica_busy = self.state.holds_replica()
            || matches!(self.backends.keep, Some(Conn::Replica(_)))
            || matches!(self.backends.cursor, Some((_, Conn::Replica(_))));
        if !replica_busy {
            if let Some((i, mut h)) = self.backends.replica.take() {
                sweep_stmts(&mut h, &self.shared.open_stmts).await;
                self.give_back(Conn::Replica(i), h);
            }
        }
    }
}

/// Close the connection's cached statements that no client has open any
/// more, when some were closed since its last sweep (COM_STMT_CLOSE has no
/// response: nothing is waited for).
/// Does `sweep_stmts` have anything to do?
fn needs_sweep(h: &Held, open: &crate::backend::state::OpenStatements) -> bool {
    h.conn.state.swept != open.generation() && !h.conn.broken
}

async fn sweep_stmts(h: &mut Held, open: &crate::backend::state::OpenStatements) {
    let generation = open.generation();
    if h.conn.state.swept == generation || h.conn.broken {
        return;
    }
    h.conn.state.swept = generation;
    for id in h.conn.state.stmts.sweep(open) {
        if h.conn.close_stmt(id).await.is_err() {
            return;
        }
    }
}

/// Why a connection could not be brought in line with the session.
pub(in crate::frontend) enum SyncError {
    /// The server refused (e.g. the default database is gone).
    Server(ErrPacket),
    Backend(BackendError),
}

impl SyncError {
    pub(in crate::frontend) fn into_packet(self, pool: &BackendPool) -> ErrPacket {
        match self {
            SyncError::Server(e) => e,
            SyncError::Backend(e) => error::backend_error_packet(&pool.label, pool.addr(), &e),
        }
    }
}

/// Bring a backend connection in line with the session: reset it if it ran
/// SETs the session did not (or has a default database the session has
/// not), then its default database, then the session's SETs it has not run.
/// Bring `conn` to the session's tracked state (default database, SETs);
/// an error is the ERR packet to send the client.
pub(in crate::frontend) async fn sync_to_state(
    conn: &mut BackendConn,
    pool: &BackendPool,
    state: &super::SessionState,
) -> Result<(), ErrPacket> {
    if in_sync(conn, state.db(), state.sets(), state.chain()) {
        return Ok(());
    }
    // Boxed: a reset (COM_CHANGE_USER) and the replayed statements make a
    // future of kilobytes that every statement would otherwise carry (and
    // copy) for a path most statements skip.
    Box::pin(sync_conn(conn, pool, state.db(), state.sets(), state.chain()))
        .await
        .map_err(|e| e.into_packet(pool))
}

/// Is `conn` already in line with the session (nothing for `sync_conn` to do)?
fn in_sync(conn: &BackendConn, db: Option<&str>, sets: &[Vec<u8>], chain: &SetChain) -> bool {
    conn.state.sets.is_prefix_of(chain) && conn.db.as_deref() == db && conn.state.sets.len() >= sets.len()
}

async fn sync_conn(
    conn: &mut BackendConn,
    pool: &BackendPool,
    db: Option<&str>,
    sets: &[Vec<u8>],
    chain: &SetChain,
) -> Result<(), SyncError> {
    if !conn.state.sets.is_prefix_of(chain) || (db.is_none() && conn.db.is_some()) {
        pool.reset(conn).await.map_err(SyncError::Backend)?;
    }
    if let Some(db) = db {
        if conn.db.as_deref() != Some(db) {
            conn.init_db(db)
                .await
                .map_err(SyncError::Backend)?
                .map_err(SyncError::Server)?;
        }
    }
    while conn.state.sets.len() < sets.len() {
        let stmt = &sets[conn.state.sets.len()];
        let sql = String::from_utf8_lossy(stmt);
        conn.query_drop(&sql)
            .await
            .map_err(SyncError::Backend)?
            .map_err(SyncError::Server)?;
        conn.state.sets.push(stmt);
    }
    Ok(())
}

pub(super) fn lost(label: &str) -> ErrPacket {
    ErrPacket::new(
        crate::protocol::consts::errcode::ER_NET_READ_ERROR,
        "08S01",
        format!("Lost connection to MySQL server during query (sluice: backend {label})"),
    )
}

impl Session {
    /// hook(abandon): at the end of the session, after `release_idle`.
    pub(super) async fn finish_connections(&mut self) {
        let in_tx = self.in_transaction();
        let unknown =
            self.state.pins().has(Pins::CONNECTION_STATE) || self.state.pins().has(Pins::SET_OPTION);
        if let Some(mut h) = self.backends.master.take() {
            match pool_for(&self.rt, Conn::Master) {
                Some(pool) => finish(&mut h.conn, pool, in_tx || unknown).await,
                None => h.conn.no_reuse = true,
            }
        }
        if let Some((i, mut h)) = self.backends.replica.take() {
            match pool_for(&self.rt, Conn::Replica(i)) {
                Some(pool) => finish(&mut h.conn, pool, self.state.ro_tx().is_some()).await,
                None => h.conn.no_reuse = true,
            }
        }
    }
}

/// The backend connections serving a session (its master and at most one
/// replica of group 0, other groups' masters) and what is known of them.
#[derive(Default)]
pub(super) struct Backends {
    pub(super) master: Option<Held>,
    pub(super) replica: Option<(usize, Held)>,
    /// The connection the next statement may ask about (see the module doc).
    pub(super) keep: Option<Conn>,
    /// The statement (client id) with an open cursor, and where.
    pub(super) cursor: Option<(u32, Conn)>,
    /// The connection that ran the session's last statement.
    pub(super) last_conn: Conn,
    /// The last statement was a sharded write whose warnings no connection holds
    /// (see `sharded::WriteDone`): the next statement may not ask for them.
    pub(super) warnings_elsewhere: bool,
    /// Master connections of backend groups other than 0 (sharded tables
    /// placed there) and the transaction's writing group (`groups.rs`).
    pub(super) groups: sharded::GroupConns,
}

impl Backends {
    /// The held connection for `conn` (borrowing only the connections, so
    /// callers can use the client socket or the state at the same time).
    pub(super) fn slot(&mut self, conn: Conn) -> Option<&mut Held> {
        match conn {
            Conn::Master => self.master.as_mut(),
            Conn::Replica(i) => match &mut self.replica {
                Some((j, h)) if *j == i => Some(h),
                _ => None,
            },
        }
    }
}

/// How long resetting a connection at the end of a session may take before
/// it is closed instead.
const END_RESET_TIMEOUT: Duration = Duration::from_secs(5);

/// The pool a session connection comes from (no reference count touched:
/// borrowed from the session's configuration snapshot).
pub(super) fn pool_for(rt: &Runtime, conn: Conn) -> Option<&BackendPool> {
    let g = rt.topology.groups.first()?;
    match conn {
        Conn::Master => Some(&g.master),
        Conn::Replica(i) => g.replicas.get(i).map(|r| &*r.pool),
    }
}

/// Give a session's connection back at the end of the session, or close it
/// (`close`: it holds a transaction or state nobody can reset reliably).
async fn finish(conn: &mut Pooled, pool: &BackendPool, close: bool) {
    if conn.broken || conn.no_reuse {
        return;
    }
    if close || conn.in_transaction() {
        conn.no_reuse = true;
        return;
    }
    if conn.dirty {
        match tokio::time::timeout(END_RESET_TIMEOUT, pool.reset(conn)).await {
            Ok(Ok(())) => {}
            _ => conn.broken = true,
        }
    }
}
