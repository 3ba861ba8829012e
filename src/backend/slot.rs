//! Counter slots (issue 40): every backend connection sluice opens for
//! clients carries `@sluice_slot`, a number no other live sluice connection
//! to the same server holds, and the freshness triggers bump row
//! `slots + @sluice_slot` of the table written (see
//! `freshness::triggers::trigger_body`). A counter row's lock is held until
//! COMMIT, so with a row per connection two transactions through sluice never
//! wait on each other's counter rows, and never deadlock on them.
//!
//! The server makes the numbers unique, across every sluice process in front
//! of it: a connection holds slot `k` as the named lock `sluice_slot_k`
//! (`GET_LOCK(name, 0)` takes it only if no other connection holds it; the
//! server releases it when the connection ends). COM_RESET_CONNECTION and
//! COM_CHANGE_USER release the lock and clear the variable, so sluice claims
//! again after each (`BackendConn::reset`, `reset_as_new`, and a client's
//! own reset relayed to the server). Within one process, the numbers its
//! connections hold on each server are remembered, so a claim tries numbers
//! that are likely free, lowest first (the counter rows stay few).
//!
//! Freshness does not depend on any of this: a slot only chooses the row a
//! write bumps, and the probes read every row. A client that releases the
//! lock itself (`RELEASE_ALL_LOCKS()` on its pinned connection) or sets the
//! variable can at worst make writes share a row again, and wait as every
//! write did before.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use super::conn::BackendConn;
use super::error::BackendError;

/// As in the trigger body (`freshness::triggers::SLOT_VARIABLE`).
const VARIABLE: &str = "@sluice_slot";
/// Slots are `0..LIMIT` (the trigger falls back to the connection id for
/// anything else: `freshness::triggers::SLUICE_SLOTS`).
const LIMIT: u16 = 4096;
/// Numbers tried per statement after the first, which tries one (the
/// lowest this process does not hold, nearly always free when one sluice
/// runs: concurrent claims then get consecutive numbers, where reserving 16
/// each spread 64 connections over slots up to 1,000), and statements per
/// claim: a claim fails (the connection falls back to
/// `CONNECTION_ID() % slots`) only when 65 numbers are held by other
/// processes' connections.
const PER_STATEMENT: usize = 16;
const STATEMENTS: usize = 5;

/// Numbers held, or being claimed, by this process's connections, per server.
static HELD: LazyLock<Mutex<HashMap<Arc<str>, BTreeSet<u16>>>> = LazyLock::new(Default::default);

fn held() -> std::sync::MutexGuard<'static, HashMap<Arc<str>, BTreeSet<u16>>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection's slot on `server`: `number` when it holds one. Dropping it
/// frees the number in this process (the server frees the lock when the
/// connection closes, or at the next reset).
#[derive(Debug)]
pub struct Slot {
    server: Arc<str>,
    number: Option<u16>,
}

impl Slot {
    /// A connection to `server` that claims slots, holding none yet.
    pub fn new(server: &str) -> Slot {
        Slot {
            server: Arc::from(server),
            number: None,
        }
    }

    pub fn number(&self) -> Option<u16> {
        self.number
    }

    fn release(&mut self) -> Option<u16> {
        let n = self.number.take()?;
        if let Some(set) = held().get_mut(&self.server) {
            set.remove(&n);
        }
        Some(n)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.release();
    }
}

/// Reserves up to `count` numbers not held in this process, `prefer` first
/// when it is free, then the lowest; skipping `tried`.
fn reserve(server: &Arc<str>, prefer: Option<u16>, tried: &BTreeSet<u16>, count: usize) -> Vec<u16> {
    let mut all = held();
    let set = all.entry(server.clone()).or_default();
    let mut out = Vec::with_capacity(count);
    let candidates = prefer.into_iter().chain(0..LIMIT);
    for n in candidates {
        if out.len() == count {
            break;
        }
        if !set.contains(&n) && !tried.contains(&n) && !out.contains(&n) {
            out.push(n);
        }
    }
    set.extend(out.iter().copied());
    out
}

/// `SELECT @sluice_slot := CASE WHEN GET_LOCK('sluice_slot_3', 0) = 1 THEN 3
/// WHEN ... END`: the first free number becomes the connection's (CASE
/// stops at the first lock taken), NULL when none is.
fn claim_sql(numbers: &[u16]) -> String {
    let mut sql = format!("SELECT {VARIABLE} := CASE");
    for n in numbers {
        sql.push_str(&format!(" WHEN GET_LOCK('sluice_slot_{n}', 0) = 1 THEN {n}"));
    }
    sql.push_str(" ELSE NULL END");
    sql
}

impl BackendConn {
    /// Claims a slot for this connection (see the module docs): after
    /// connecting, and again after each reset, which released it. The
    /// number held before a reset is tried first. A server error leaves the
    /// connection without a slot (its writes fall back to the connection
    /// id); a transport error is returned.
    pub async fn claim_slot(&mut self) -> Result<(), BackendError> {
        let Some(slot) = self.slot.as_mut() else {
            return Ok(());
        };
        let prefer = slot.release();
        let server = slot.server.clone();
        let mut tried = BTreeSet::new();
        for attempt in 0..STATEMENTS {
            let count = if attempt == 0 { 1 } else { PER_STATEMENT };
            let numbers = reserve(&server, prefer, &tried, count);
            if numbers.is_empty() {
                break;
            }
            let answer = self.query_u64(&claim_sql(&numbers)).await;
            let won = match &answer {
                Ok(Ok(Some(n))) => u16::try_from(*n).ok().filter(|n| numbers.contains(n)),
                _ => None,
            };
            {
                let mut all = held();
                if let Some(set) = all.get_mut(&server) {
                    for n in numbers.iter().filter(|n| Some(**n) != won) {
                        set.remove(n);
                    }
                }
            }
            if let Some(slot) = self.slot.as_mut() {
                slot.number = won;
            }
            match answer {
                Err(e) => return Err(e),
                // No privilege, an old server: no slot, nothing to retry.
                Ok(Err(_)) => return Ok(()),
                Ok(Ok(_)) if won.is_some() => return Ok(()),
                // Held by other processes' connections: the next numbers.
                Ok(Ok(_)) => tried.extend(numbers),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_lowest_free_numbers_and_frees_them_on_drop() {
        let server: Arc<str> = Arc::from("slot-test:1");
        let a = reserve(&server, None, &BTreeSet::new(), 3);
        assert_eq!(a, vec![0, 1, 2]);
        let b = reserve(&server, Some(9), &BTreeSet::from([3]), 2);
        assert_eq!(b, vec![9, 4]);
        let mut slot = Slot::new("slot-test:1");
        slot.number = Some(1);
        drop(slot);
        assert_eq!(reserve(&server, None, &BTreeSet::new(), 1), vec![1]);
        assert_eq!(
            claim_sql(&[0, 5]),
            "SELECT @sluice_slot := CASE WHEN GET_LOCK('sluice_slot_0', 0) = 1 THEN 0 \
             WHEN GET_LOCK('sluice_slot_5', 0) = 1 THEN 5 ELSE NULL END"
        );
    }
}
