//! Counter slots (issue 40): every backend connection sluice opens for
//! clients carries `@sluice_slot`, a number no other live sluice connection
//! to the same server holds, and the freshness triggers bump row
//! `slots + @sluice_slot` of the table written (see
//! `freshness::triggers::trigger_body`). A counter row's lock is held until
//! COMMIT, so with a row per connection two transactions through sluice never
//! wait on each other's counter rows, and never deadlock on them.
//!
//! Who makes the numbers unique, across every sluice process in front of a
//! server: numbers come in blocks of [`BLOCK`], and a process uses a block
//! only while its *lease connection* to that server (one per process and
//! server, opened by the first claim, never lent to a client) holds the
//! named lock `sluice_slots_<block>`. The server releases the lock when that
//! connection ends, so a block of a process that died is free again. Within
//! a process the numbers of its blocks are handed out, lowest first (the
//! counter rows stay few), and taken back when a connection closes.
//!
//! Nothing of this is on a client's connection but the variable: an earlier
//! version held each number as a named lock on the client's own connection,
//! where the client's `RELEASE_ALL_LOCKS()` released it (and counted it in
//! its answer). The statement that gives a connection its number checks, in
//! the same round trip, that the lease connection still holds the block
//! (`IS_USED_LOCK`); when it does not (the lease connection was killed or
//! lost), the lease is taken again before the number is given out.
//!
//! COM_RESET_CONNECTION and COM_CHANGE_USER clear the variable, so sluice
//! gives the number again after each (`BackendConn::reset_as_new`
//! and a client's own reset relayed to the server).
//!
//! Freshness does not depend on any of this: a slot only chooses the row a
//! write bumps, and the probes read every row. A client that sets the
//! variable itself, or a lease lost after numbers were given out (another
//! process may then lease the block while they are in use), can at worst
//! make writes share a row again, and wait as every write did before.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use super::conn::{BackendConn, ConnectParams, PoolKey};
use super::error::BackendError;

/// As in the trigger body (`freshness::triggers::SLOT_VARIABLE`).
const VARIABLE: &str = "@sluice_slot";
/// Slots are `0..LIMIT` (the trigger falls back to the connection id for
/// anything else: `freshness::triggers::SLUICE_SLOTS`).
const LIMIT: u16 = 4096;
/// Numbers per lease: one named lock covers this many connections.
const BLOCK: u16 = 32;
/// Blocks tried per statement when a process needs one more.
const BLOCKS_PER_STATEMENT: u16 = 16;
/// The lease connection lives as long as the process: the server's idle
/// limit must not close it (31536000 s is MariaDB's maximum `wait_timeout`).
const LEASE_SESSION: &str = "SET SESSION wait_timeout = 31536000";

/// The named lock that leases `block`.
fn lock_name(block: u16) -> String {
    format!("sluice_slots_{block}")
}

/// The blocks a process leases on one server and the numbers in use.
#[derive(Debug, Default)]
struct Numbers {
    /// Blocks whose lock the lease connection holds.
    blocks: BTreeSet<u16>,
    /// Numbers held by this process's connections (or being given).
    used: BTreeSet<u16>,
    /// The thread id of the lease connection holding `blocks`.
    thread: Option<u32>,
}

impl Numbers {
    /// The free number of a leased block: `prefer` when it is one, else the
    /// lowest. Marked used.
    fn take(&mut self, prefer: Option<u16>) -> Option<u16> {
        let free = |n: &u16| self.blocks.contains(&(n / BLOCK)) && !self.used.contains(n);
        let n = prefer.filter(free).or_else(|| {
            self.blocks
                .iter()
                .flat_map(|b| b * BLOCK..(b + 1) * BLOCK)
                .find(free)
        })?;
        self.used.insert(n);
        Some(n)
    }
}

/// One process's lease on one server.
struct Lease {
    /// How to reach the server as the group's account (the latest a pool
    /// gave: a reload may change the password).
    params: Mutex<ConnectParams>,
    numbers: Mutex<Numbers>,
    /// The lease connection (`None` before the first lease or after it
    /// failed). Held across the lease statements, so leases are serial.
    conn: tokio::sync::Mutex<Option<BackendConn>>,
}

static LEASES: LazyLock<Mutex<HashMap<String, Arc<Lease>>>> = LazyLock::new(Default::default);

impl Lease {
    /// The lease of this process on `params.addr` (one per server, whatever
    /// the pool: numbers must be unique per server).
    fn of(params: &ConnectParams) -> Arc<Lease> {
        let mut all = LEASES.lock().unwrap_or_else(|e| e.into_inner());
        let lease = all
            .entry(params.addr.clone())
            .or_insert_with(|| {
                Arc::new(Lease {
                    params: Mutex::new(params.clone()),
                    numbers: Mutex::default(),
                    conn: tokio::sync::Mutex::new(None),
                })
            })
            .clone();
        *lease.params.lock().unwrap_or_else(|e| e.into_inner()) = params.clone();
        lease
    }

    fn params(&self) -> ConnectParams {
        self.params.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn numbers(&self) -> std::sync::MutexGuard<'_, Numbers> {
        self.numbers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn give_back(&self, n: u16) {
        self.numbers().used.remove(&n);
    }

    /// A number for a connection, with the lease connection's thread id
    /// (which holds its block's lock): from a block leased already, else
    /// from a new one. `stale`: the lease connection of that thread id was
    /// seen not to hold a block; it is opened again and its blocks taken
    /// again first. `None` when no block can be leased (the connection
    /// falls back to `CONNECTION_ID() % slots`).
    async fn take(&self, prefer: Option<u16>, stale: Option<u32>) -> Option<(u16, u32)> {
        // Nearly always: a free number of a leased block, no I/O, and no
        // wait behind another claim's lease statement.
        if stale.is_none() {
            let mut numbers = self.numbers();
            if let Some(thread) = numbers.thread {
                if let Some(n) = numbers.take(prefer) {
                    return Some((n, thread));
                }
            }
        }
        let mut guard = self.conn.lock().await;
        // Another claim may have renewed it meanwhile.
        if stale.is_some() && guard.as_ref().map(|c| c.thread_id) == stale {
            *guard = None;
        }
        if guard.as_ref().is_none_or(|c| c.broken) {
            *guard = self.reconnect().await;
        }
        let thread = guard.as_ref()?.thread_id;
        if let Some(n) = self.numbers().take(prefer) {
            return Some((n, thread));
        }
        let conn = guard.as_mut()?;
        let held = self.numbers().blocks.clone();
        let candidates: Vec<u16> = (0..LIMIT / BLOCK)
            .filter(|b| !held.contains(b))
            .take(BLOCKS_PER_STATEMENT.into())
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let leased = self.run(conn, &lease_sql(&candidates)).await;
        let block = leased
            .and_then(|v| v.parse::<u16>().ok())
            .filter(|b| candidates.contains(b))?;
        let mut numbers = self.numbers();
        numbers.blocks.insert(block);
        Some((numbers.take(prefer)?, thread))
    }

    /// A new lease connection, which takes again the blocks this process
    /// leased before (those another process took meanwhile are dropped:
    /// no new number comes from them).
    async fn reconnect(&self) -> Option<BackendConn> {
        let held: Vec<u16> = {
            let mut numbers = self.numbers();
            numbers.thread = None;
            std::mem::take(&mut numbers.blocks).into_iter().collect()
        };
        let params = self.params();
        let connect = BackendConn::connect(&params, PoolKey::sluice_own());
        let mut conn = match tokio::time::timeout(params.connect_timeout, connect).await {
            Ok(Ok(c)) => c,
            _ => return None,
        };
        self.run(&mut conn, LEASE_SESSION).await;
        if conn.broken {
            return None;
        }
        let again = match held.is_empty() {
            true => String::new(),
            false => self.run(&mut conn, &relock_sql(&held)).await.unwrap_or_default(),
        };
        if conn.broken {
            return None;
        }
        let mut numbers = self.numbers();
        let again = again.split(',').filter_map(|b| b.parse::<u16>().ok());
        numbers.blocks.extend(again.filter(|b| held.contains(b)));
        numbers.thread = Some(conn.thread_id);
        Some(conn)
    }

    /// One statement on the lease connection, bounded by the connect
    /// timeout; its first value, `None` on any error (a timed-out
    /// connection is marked broken: it is opened again next time).
    async fn run(&self, conn: &mut BackendConn, sql: &str) -> Option<String> {
        let timeout = self.params().connect_timeout;
        match tokio::time::timeout(timeout, conn.query_text(sql)).await {
            Ok(Ok(Ok(v))) => v,
            Ok(_) => None,
            Err(_) => {
                conn.broken = true;
                None
            }
        }
    }
}

/// `SELECT CASE WHEN GET_LOCK('sluice_slots_0', 0) = 1 THEN 0 WHEN ... END`:
/// the first block whose lock is free becomes this process's (CASE stops at
/// the first lock taken), NULL when none is.
fn lease_sql(blocks: &[u16]) -> String {
    let mut sql = String::from("SELECT CASE");
    for b in blocks {
        sql.push_str(&format!(" WHEN GET_LOCK('{}', 0) = 1 THEN {b}", lock_name(*b)));
    }
    sql.push_str(" ELSE NULL END");
    sql
}

/// The blocks of `blocks` whose locks a new lease connection could take,
/// comma-separated (`CONCAT_WS` skips the NULLs of those it could not).
fn relock_sql(blocks: &[u16]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .map(|b| format!("IF(GET_LOCK('{}', 0) = 1, {b}, NULL)", lock_name(*b)))
        .collect();
    format!("SELECT CONCAT_WS(',', {})", parts.join(", "))
}

/// Gives a connection number `n` if the lease connection (`thread`) still
/// holds its block, else NULL; answers the number given.
fn give_sql(n: u16, thread: u32) -> String {
    format!(
        "SELECT {VARIABLE} := IF(IS_USED_LOCK('{}') = {thread}, {n}, NULL)",
        lock_name(n / BLOCK)
    )
}

/// A connection's slot: `number` when it holds one. Dropping it gives the
/// number back to the process (the lease stays: the next connection takes
/// the number).
pub struct Slot {
    lease: Arc<Lease>,
    number: Option<u16>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("server", &self.lease.params().addr)
            .field("number", &self.number)
            .finish()
    }
}

impl Slot {
    /// A connection to the server of `params` (the group's own account,
    /// which opens the lease connection) that claims slots, holding none yet.
    pub fn new(params: &ConnectParams) -> Slot {
        Slot {
            lease: Lease::of(params),
            number: None,
        }
    }

    fn release(&mut self) -> Option<u16> {
        let n = self.number.take()?;
        self.lease.give_back(n);
        Some(n)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.release();
    }
}

impl BackendConn {
    /// Gives this connection a slot (see the module docs): after
    /// connecting, and again after each reset, which cleared the variable.
    /// The number held before a reset is given again when it can be. A
    /// server error, or no lease, leaves the connection without a slot (its
    /// writes fall back to the connection id); a transport error is
    /// returned.
    pub async fn claim_slot(&mut self) -> Result<(), BackendError> {
        let Some(slot) = self.slot.as_mut() else {
            return Ok(());
        };
        let prefer = slot.release();
        let lease = slot.lease.clone();
        // Twice at most: the second time after renewing a lease the first
        // answer showed lost.
        let mut stale = None;
        for _ in 0..2 {
            let Some((n, thread)) = lease.take(prefer, stale).await else {
                return Ok(());
            };
            let answer = self.query_u64(&give_sql(n, thread)).await;
            let given = matches!(answer, Ok(Ok(Some(v))) if v == u64::from(n));
            if given {
                if let Some(slot) = self.slot.as_mut() {
                    slot.number = Some(n);
                }
                return Ok(());
            }
            lease.give_back(n);
            match answer {
                Err(e) => return Err(e),
                // No privilege, an old server: no slot, nothing to retry.
                Ok(Err(_)) => return Ok(()),
                // The lease connection no longer holds the block.
                Ok(Ok(_)) => stale = Some(thread),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_come_from_leased_blocks_lowest_first() {
        let mut n = Numbers::default();
        assert_eq!(n.take(None), None, "no block leased yet");
        n.blocks.insert(0);
        assert_eq!(n.take(None), Some(0));
        assert_eq!(n.take(None), Some(1));
        assert_eq!(n.take(Some(7)), Some(7), "the number held before a reset");
        assert_eq!(
            n.take(Some(1)),
            Some(2),
            "a preferred number in use is not given twice"
        );
        assert_eq!(n.take(Some(40)), Some(3), "nor one of a block not leased");
        n.used.remove(&1);
        assert_eq!(n.take(None), Some(1));
        n.used.extend(0..BLOCK);
        assert_eq!(n.take(None), None, "the block is full");
        n.blocks.insert(2);
        assert_eq!(n.take(None), Some(2 * BLOCK));
    }

    #[test]
    fn statements() {
        assert_eq!(
            lease_sql(&[0, 5]),
            "SELECT CASE WHEN GET_LOCK('sluice_slots_0', 0) = 1 THEN 0 \
             WHEN GET_LOCK('sluice_slots_5', 0) = 1 THEN 5 ELSE NULL END"
        );
        assert_eq!(
            relock_sql(&[1, 3]),
            "SELECT CONCAT_WS(',', IF(GET_LOCK('sluice_slots_1', 0) = 1, 1, NULL), \
             IF(GET_LOCK('sluice_slots_3', 0) = 1, 3, NULL))"
        );
        assert_eq!(
            give_sql(33, 812),
            "SELECT @sluice_slot := IF(IS_USED_LOCK('sluice_slots_1') = 812, 33, NULL)"
        );
    }
}
