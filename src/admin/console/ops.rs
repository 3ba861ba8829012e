//! The console's actions: PAUSE / RESUME (`crate::pause`), DRAIN / ENABLE /
//! MAINTENANCE of a backend (the pool's drain, `BackendPool::set_drained`),
//! KILL SESSION (the session registry's KILL).
//!
//! PAUSE and DRAIN wait until the connections they cover are given back
//! (statements and transactions ended), at most WAIT seconds (default
//! `limits.pause_timeout`); past it they answer ERR 1205 naming the
//! sessions that still hold on, and stay in force.

use std::time::{Duration, Instant};

use crate::frontend::registry::{Holds, KillRequest};
use crate::pause::Mode;
use crate::protocol::consts::errcode;
use crate::protocol::packets::ErrPacket;

use super::views::{backends, Backend};
use super::{Console, Outcome};

const POLL: Duration = Duration::from_millis(10);

fn wrong(msg: String) -> Outcome {
    Outcome::Failed(ErrPacket::new(errcode::ER_WRONG_ARGUMENTS, "HY000", msg))
}

impl Console {
    /// The configured group names `group` designates (every group for `None`).
    fn groups(&self, group: Option<&str>) -> Result<Vec<String>, Outcome> {
        let rt = self.shared.runtime();
        let names: Vec<String> = rt.topology.groups.iter().map(|g| g.name.clone()).collect();
        match group {
            None => Ok(names),
            Some(g) if names.iter().any(|n| n == g) => Ok(vec![g.to_owned()]),
            Some(g) => Err(wrong(format!(
                "sluice: no group `{}`; the groups are: {}",
                crate::logging::escaped(g, 64),
                names.join(", ")
            ))),
        }
    }

    pub(super) async fn pause(&self, writes: bool, group: Option<&str>, wait: Option<Duration>) -> Outcome {
        let groups = match self.groups(group) {
            Ok(g) => g,
            Err(o) => return o,
        };
        let mode = if writes { Mode::Writes } else { Mode::All };
        self.shared.pause.pause(&groups, mode);
        let covered: Vec<Backend> = backends(&self.shared)
            .into_iter()
            .filter(|b| groups.contains(&b.group) && (b.replica.is_none() || mode == Mode::All))
            .collect();
        let what = if writes { "writes" } else { "all statements" };
        self.wait_given_back(
            &covered,
            wait,
            &format!("PAUSE ({what}) of {}", groups.join(", ")),
        )
        .await
        .unwrap_or_else(|| {
            Outcome::Done(format!(
                "paused {what} of {}; nothing in flight",
                groups.join(", ")
            ))
        })
    }

    pub(super) fn resume(&self, group: Option<&str>) -> Outcome {
        let groups = match self.groups(group) {
            Ok(g) => g,
            Err(o) => return o,
        };
        let lifted = self.shared.pause.resume(&groups);
        Outcome::Done(if lifted {
            format!("resumed {}", groups.join(", "))
        } else {
            format!("{} was not paused", groups.join(", "))
        })
    }

    /// The backends at `addr` (a server may be in several groups).
    fn at(&self, addr: &str) -> Result<Vec<Backend>, Outcome> {
        let all = backends(&self.shared);
        let known: Vec<String> = all.iter().map(|b| b.pool.addr().to_owned()).collect();
        let found: Vec<Backend> = all.into_iter().filter(|b| b.pool.addr() == addr).collect();
        if found.is_empty() {
            return Err(wrong(format!(
                "sluice: no backend at '{}'; the backends are: {}",
                crate::logging::escaped(addr, 128),
                known.join(", ")
            )));
        }
        Ok(found)
    }

    /// Drain the backends at `addr`: a replica's pool refuses checkouts and
    /// leaves rotation; a master's group is paused for writes (a master
    /// cannot be skipped; its writes wait instead of failing).
    fn start_drain(&self, addr: &str) -> Result<Vec<Backend>, Outcome> {
        let found = self.at(addr)?;
        self.set_drained(&found, true);
        Ok(found)
    }

    /// DRAIN (`on`) or ENABLE `found`.
    fn set_drained(&self, found: &[Backend], on: bool) {
        let rt = self.shared.runtime();
        for b in found {
            let group = std::slice::from_ref(&b.group);
            match b.replica {
                Some(i) => {
                    b.pool.set_drained(on);
                    if let Some(r) = rt.monitors.get(b.group_index).and_then(|m| m.replicas.get(i)) {
                        r.flags.set_drained(on);
                    }
                }
                None if on => self.shared.pause.pause(group, Mode::Writes),
                None => {
                    self.shared.pause.resume(group);
                }
            }
        }
    }

    pub(super) async fn drain(&self, addr: &str, wait: Option<Duration>) -> Outcome {
        let found = match self.start_drain(addr) {
            Ok(f) => f,
            Err(o) => return o,
        };
        self.wait_given_back(&found, wait, &format!("DRAIN of {addr}"))
            .await
            .unwrap_or_else(|| Outcome::Done(format!("drained {addr}: no connection in use")))
    }

    pub(super) fn enable(&self, addr: &str) -> Outcome {
        let found = match self.at(addr) {
            Ok(f) => f,
            Err(o) => return o,
        };
        self.set_drained(&found, false);
        if let Ok(mut m) = self.maintenance.lock() {
            m.retain(|a| a != addr);
        }
        Outcome::Done(format!("enabled {addr}"))
    }

    /// Drain now; after `after`, end the sessions that still hold a
    /// connection to it (as `KILL CONNECTION`: their transactions roll back).
    pub(super) fn maintenance(self: &Console, addr: &str, after: Duration) -> Outcome {
        let found = match self.start_drain(addr) {
            Ok(f) => f,
            Err(o) => return o,
        };
        if let Ok(mut m) = self.maintenance.lock() {
            if !m.iter().any(|a| a == addr) {
                m.push(addr.to_owned());
            }
        }
        let sessions = self.shared.sessions.clone();
        let addr_owned = addr.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let mut ended = Vec::new();
            for e in sessions.all() {
                let h = e.holds();
                if found.iter().any(|b| b.held_by(&h)) {
                    e.request_kill(KillRequest::Connection);
                    ended.push(e.id);
                }
            }
            if !ended.is_empty() {
                tracing::warn!(backend = %addr_owned, sessions = ?ended,
                    "maintenance: ended the sessions still holding a connection to the backend");
            }
        });
        Outcome::Done(format!(
            "maintenance of {addr}: drained; sessions still holding a connection after {:.0}s are ended",
            after.as_secs_f64()
        ))
    }

    pub(super) fn kill(&self, session: u32) -> Outcome {
        match self.shared.sessions.get(session) {
            Some(e) => {
                e.request_kill(KillRequest::Connection);
                Outcome::Done(format!("session {session} is being ended"))
            }
            None => Outcome::Failed(ErrPacket::new(
                errcode::ER_NO_SUCH_THREAD,
                "HY000",
                format!("Unknown thread id: {session} (sluice: no such client session; see SHOW SESSIONS)"),
            )),
        }
    }

    /// Wait until none of `covered` has a connection in use, at most `wait`
    /// (default `limits.pause_timeout`). `None` when they are all back;
    /// otherwise ERR 1205 naming who holds on.
    async fn wait_given_back(
        &self,
        covered: &[Backend],
        wait: Option<Duration>,
        what: &str,
    ) -> Option<Outcome> {
        let limit = wait.unwrap_or(self.shared.runtime().config.limits.pause_timeout);
        let start = Instant::now();
        loop {
            if covered.iter().all(|b| b.pool.in_use() == 0) {
                return None;
            }
            if start.elapsed() >= limit {
                break;
            }
            tokio::time::sleep(POLL.min(limit.saturating_sub(start.elapsed()))).await;
        }
        let waiting = self.shared.pause.waiting();
        let mut holders = Vec::new();
        for e in self.shared.sessions.all() {
            let h: Holds = e.holds();
            let holds = covered.iter().any(|b| b.held_by(&h));
            let why = if holds && h.in_transaction {
                "in a transaction"
            } else if e.busy() && !waiting.contains(&e.id) {
                "running a statement"
            } else if holds {
                "keeps its connection between statements"
            } else {
                continue;
            };
            holders.push(format!("{} ({why})", e.id));
        }
        let in_use: usize = covered.iter().map(|b| b.pool.in_use()).sum();
        Some(Outcome::Failed(ErrPacket::new(
            errcode::ER_LOCK_WAIT_TIMEOUT,
            "HY000",
            format!(
                "Lock wait timeout exceeded; try restarting transaction (sluice: {what} is in force, \
                 but after {:.1}s {in_use} connection(s) are still in use; sessions holding on: {}; \
                 they finish on their own, or end them with KILL SESSION n)",
                start.elapsed().as_secs_f64(),
                if holders.is_empty() {
                    "none found (sluice's own probes)".to_owned()
                } else {
                    holders.join(", ")
                }
            ),
        )))
    }
}
