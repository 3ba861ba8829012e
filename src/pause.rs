//! The operator's pause (`PAUSE [WRITES] [GROUP g]` / `RESUME`): statements
//! that would take a connection the pause covers wait here, without an
//! error, until `RESUME` or `limits.pause_timeout` (then ERR 1205).
//!
//! What waits: with `WRITES`, statements about to take a master connection;
//! without it, every statement. A session inside a transaction passes, so
//! the transaction can end (the pause waits for it, see `admin::console`).
//! Reads on replicas go on under `WRITES`: nothing is written meanwhile, so
//! what they see stays current.
//!
//! Cost when nothing is paused: one relaxed atomic load per checkout
//! ([`Gate::admit`]). The state lives in `Shared` (not in a runtime
//! snapshot or a pool), so a reload that changes the master, the usual step
//! of a planned switchover, keeps the pause.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::protocol::packets::ErrPacket;

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every statement.
    All,
    /// Statements that need the master.
    Writes,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::All => "paused",
            Mode::Writes => "paused_writes",
        }
    }
}

/// One group's pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paused {
    pub mode: Mode,
    pub since: Instant,
}

/// The pauses in force, by group name, and who waits behind them.
#[derive(Default)]
pub struct Gate {
    /// Any group paused: the only thing an unpaused checkout reads.
    any: AtomicBool,
    groups: Mutex<BTreeMap<String, Paused>>,
    /// Bumped at every change; waiters look again.
    changed: watch::Sender<u64>,
    /// Sessions waiting now (ids), for `SHOW STATE` and the holders list.
    waiting: Mutex<BTreeSet<u32>>,
}

/// ERR 1205, as the server answers a lock wait that ran out.
pub fn timeout_error(waited: Duration) -> ErrPacket {
    ErrPacket::new(
        crate::protocol::consts::errcode::ER_LOCK_WAIT_TIMEOUT,
        "HY000",
        format!(
            "Lock wait timeout exceeded; try restarting transaction (sluice: an operator paused \
             traffic and the statement waited {:.1}s, limits.pause_timeout; it was not run)",
            waited.as_secs_f64()
        ),
    )
}

impl Gate {
    /// Pause `groups` (each of them) in `mode`; a paused group takes the
    /// new mode and keeps its start.
    pub fn pause(&self, groups: &[String], mode: Mode) {
        if let Ok(mut g) = self.groups.lock() {
            for name in groups {
                let since = g.get(name).map_or_else(Instant::now, |p| p.since);
                g.insert(name.clone(), Paused { mode, since });
            }
            self.any.store(!g.is_empty(), Ordering::Release);
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Lift the pause of `groups`; true if one was paused.
    pub fn resume(&self, groups: &[String]) -> bool {
        let mut lifted = false;
        if let Ok(mut g) = self.groups.lock() {
            for name in groups {
                lifted |= g.remove(name).is_some();
            }
            self.any.store(!g.is_empty(), Ordering::Release);
        }
        self.changed.send_modify(|n| *n += 1);
        lifted
    }

    /// Some group is paused (one relaxed load: asked before every checkout).
    pub fn active(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// The pause of `group`, if any.
    pub fn state(&self, group: &str) -> Option<Paused> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.groups.lock().ok()?.get(group).copied()
    }

    /// Sessions waiting behind a pause now.
    pub fn waiting(&self) -> Vec<u32> {
        self.waiting
            .lock()
            .map(|w| w.iter().copied().collect())
            .unwrap_or_default()
    }

    /// A database named at login or by COM_INIT_DB may be confirmed by an
    /// eligible replica instead of `group`'s master (issue 43): when the
    /// group has no master (`master_fenced`: several servers writable) or a
    /// `PAUSE WRITES` holds the master back while replicas go on. (A full
    /// `PAUSE` holds replicas too: the login waits as every statement does.)
    pub fn db_from_replica(&self, group: &str, master_fenced: bool) -> bool {
        master_fenced || (self.active() && self.holds_back(group, true) && !self.holds_back(group, false))
    }

    fn holds_back(&self, group: &str, master: bool) -> bool {
        match self.state(group) {
            Some(p) => p.mode == Mode::All || master,
            None => false,
        }
    }

    /// hook(pause): called where session `id` of `group` is about to use a
    /// backend connection (`master`: the master's). Returns at once unless
    /// a pause covers it and the session is outside a transaction; then
    /// waits for `RESUME`, at most `timeout` (ERR 1205 after it). True
    /// when it waited.
    pub async fn admit(
        &self,
        id: u32,
        group: &str,
        master: bool,
        in_transaction: bool,
        timeout: Duration,
    ) -> Result<bool, ErrPacket> {
        if !self.any.load(Ordering::Relaxed) || in_transaction || !self.holds_back(group, master) {
            return Ok(false);
        }
        let start = Instant::now();
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(id);
        }
        let mut rx = self.changed.subscribe();
        let released = tokio::time::timeout(timeout, rx.wait_for(|_| !self.holds_back(group, master))).await;
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&id);
        }
        match released {
            Ok(_) => Ok(true),
            Err(_) => Err(timeout_error(start.elapsed())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str) -> Vec<String> {
        vec![name.to_owned()]
    }

    #[tokio::test]
    async fn writes_pause_holds_the_master_only_and_resume_releases() {
        let gate = std::sync::Arc::new(Gate::default());
        let t = Duration::from_secs(5);
        gate.pause(&g("main"), Mode::Writes);
        assert_eq!(
            gate.admit(1, "main", false, false, t).await.ok(),
            Some(false),
            "replica reads go on"
        );
        assert_eq!(
            gate.admit(1, "other", true, false, t).await.ok(),
            Some(false),
            "another group goes on"
        );
        assert_eq!(
            gate.admit(1, "main", true, true, t).await.ok(),
            Some(false),
            "a transaction ends"
        );
        let g2 = gate.clone();
        let held = tokio::spawn(async move { g2.admit(7, "main", true, false, t).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(gate.waiting(), vec![7]);
        assert!(!held.is_finished());
        assert!(gate.resume(&g("main")));
        assert!(held.await.is_ok_and(|r| matches!(r, Ok(true))), "it waited");
        assert!(gate.waiting().is_empty());
    }

    #[tokio::test]
    async fn a_held_statement_times_out_with_1205() {
        let gate = Gate::default();
        gate.pause(&g("main"), Mode::All);
        let e = gate
            .admit(1, "main", false, false, Duration::from_millis(30))
            .await
            .err();
        assert_eq!(e.map(|e| e.code), Some(1205));
        assert!(gate.waiting().is_empty());
    }
}
