//! The console's views (`SHOW BACKENDS|POOLS|SESSIONS|STATE`, `GET /v1/...`),
//! read from what sluice keeps anyway: the running topology's pools, the
//! freshness monitors' atomics, the session registry and the pause gate.
//! Nothing here runs a query on a backend.

use std::sync::Arc;

use crate::backend::BackendPool;
use crate::config::FreshnessMode;
use crate::follow::{GroupView, ServerView};
use crate::freshness::state::Scope;
use crate::frontend::registry::Holds;
use crate::frontend::Shared;

use super::command::View;
use super::table::{Kind, Table, Value};

/// One backend of the running topology.
pub struct Backend {
    pub group: String,
    /// Index of the group in the configuration.
    pub group_index: usize,
    /// `None`: the master; `Some(i)`: replica `i`.
    pub replica: Option<usize>,
    pub pool: Arc<BackendPool>,
}

impl Backend {
    pub fn role(&self) -> &'static str {
        if self.replica.is_some() {
            "replica"
        } else {
            "master"
        }
    }

    /// The pool's label in metrics: "master", "replica0", ...
    pub fn name(&self) -> String {
        self.replica
            .map_or_else(|| "master".to_owned(), crate::metrics::family::replica_name)
    }

    /// A session holding this backend's connection (sessions use the
    /// first group; see `frontend::conns`).
    pub fn held_by(&self, h: &Holds) -> bool {
        self.group_index == 0
            && match self.replica {
                None => h.master,
                Some(i) => h.replica == Some(i),
            }
    }
}

/// Every backend of the running topology, masters first in each group.
pub fn backends(shared: &Shared) -> Vec<Backend> {
    let rt = shared.runtime();
    let mut out = Vec::new();
    for (gi, g) in rt.topology.groups.iter().enumerate() {
        out.push(Backend {
            group: g.name.clone(),
            group_index: gi,
            replica: None,
            pool: g.master.clone(),
        });
        for (i, r) in g.replicas.iter().enumerate() {
            out.push(Backend {
                group: g.name.clone(),
                group_index: gi,
                replica: Some(i),
                pool: r.pool.clone(),
            });
        }
    }
    out
}

/// `online`, `draining` (drained, connections still held), `drained`,
/// `maintenance`, `paused` (a master whose group is paused: DRAIN of a
/// master pauses its writes) or `down` (a replica whose probes fail).
pub fn state_of(b: &Backend, healthy: Option<bool>, maintenance: bool, paused: bool) -> &'static str {
    if b.replica.is_none() && (paused || maintenance) {
        if maintenance {
            "maintenance"
        } else {
            "paused"
        }
    } else if b.pool.is_drained() {
        if maintenance {
            "maintenance"
        } else if b.pool.in_use() > 0 {
            "draining"
        } else {
            "drained"
        }
    } else if healthy == Some(false) {
        "down"
    } else {
        "online"
    }
}

/// `groups`: what the topology probes saw (`crate::follow`), for
/// `SHOW TOPOLOGY` and `SHOW BACKENDS`' read_only, server_id and reason.
pub fn build(view: View, shared: &Shared, maintenance: &[String], groups: &[GroupView]) -> Table {
    match view {
        View::Backends => {
            let servers: Vec<ServerView> = groups.iter().flat_map(|g| g.servers.clone()).collect();
            show_backends(shared, maintenance, &servers)
        }
        View::Pools => show_pools(shared),
        View::Sessions => show_sessions(shared),
        View::State => show_state(shared),
        View::Topology => show_topology(groups),
    }
}

fn show_backends(shared: &Shared, maintenance: &[String], servers: &[ServerView]) -> Table {
    use Kind::{Int, Text};
    let mut t = Table::new(&[
        ("group", Text),
        ("role", Text),
        ("addr", Text),
        ("state", Text),
        ("in_rotation", Int),
        ("healthy", Int),
        ("fresh", Int),
        ("lag_ms", Int),
        ("read_only", Int),
        ("server_id", Int),
        ("reason", Text),
    ]);
    let rt = shared.runtime();
    for b in backends(shared) {
        let mon = rt.monitors.get(b.group_index);
        // What the freshness monitor knows of a replica (nothing of the master yet).
        let r = b.replica.and_then(|i| Some((mon?, mon?.replicas.get(i)?)));
        let (in_rotation, healthy, fresh, lag) = match r {
            Some((m, r)) => {
                let fresh = r.in_rotation()
                    && (m.mode == FreshnessMode::Off || r.counters().covers(&m.target(), Scope::All));
                let lag = r.lag_ms.load(std::sync::atomic::Ordering::Relaxed);
                (
                    Some(r.in_rotation()),
                    Some(r.is_healthy()),
                    Some(fresh),
                    Value::Int(i64::try_from(lag).unwrap_or(i64::MAX)),
                )
            }
            None => (None, None, None, Value::Null),
        };
        let probed = servers
            .iter()
            .find(|v| v.group == b.group && v.addr == b.pool.addr());
        // The master: what the topology probes say of it.
        let (in_rotation, healthy) = match (b.replica, probed) {
            (None, Some(v)) => (Some(v.in_rotation), Some(v.reachable)),
            _ => (in_rotation, healthy),
        };
        let m = maintenance.iter().any(|a| a == b.pool.addr());
        t.rows.push(vec![
            Value::text(&b.group),
            Value::text(b.role()),
            Value::text(b.pool.addr()),
            Value::text(state_of(&b, healthy, m, shared.pause.state(&b.group).is_some())),
            Value::opt_flag(in_rotation),
            Value::opt_flag(healthy),
            Value::opt_flag(fresh),
            lag,
            Value::opt_flag(probed.and_then(|v| v.read_only)),
            probed
                .and_then(|v| v.server_id)
                .map_or(Value::Null, |id| Value::Int(i64::from(id))),
            probed.map_or(Value::Null, |v| Value::text(&v.reason)),
        ]);
    }
    t
}

fn show_pools(shared: &Shared) -> Table {
    use Kind::{Int, Text};
    let mut t = Table::new(&[
        ("group", Text),
        ("backend", Text),
        ("addr", Text),
        ("open", Int),
        ("in_use", Int),
        ("idle", Int),
        ("waits", Int),
        ("max", Int),
        ("drained", Int),
    ]);
    let max = shared.runtime().config.backend.pool_max;
    for b in backends(shared) {
        let (open, idle) = b.pool.status();
        let n = |v: usize| Value::Int(i64::try_from(v).unwrap_or(i64::MAX));
        t.rows.push(vec![
            Value::text(&b.group),
            Value::text(b.name()),
            Value::text(b.pool.addr()),
            n(open),
            n(open.saturating_sub(idle)),
            n(idle),
            Value::Int(i64::try_from(b.pool.waits.waits()).unwrap_or(i64::MAX)),
            n(max),
            Value::flag(b.pool.is_drained()),
        ]);
    }
    t
}

/// Statements whose text may carry a password are not shown.
fn shown_info(info: &[u8]) -> String {
    let lower = String::from_utf8_lossy(info).to_ascii_lowercase();
    if lower.contains("password") || lower.contains("identified") {
        return "<hidden: the statement may hold a password>".into();
    }
    String::from_utf8_lossy(info).into_owned()
}

fn command_name(cmd: u8) -> String {
    use crate::protocol::consts::*;
    match cmd {
        COM_SLEEP => "Sleep".into(),
        COM_QUERY => "Query".into(),
        COM_INIT_DB => "Init DB".into(),
        COM_STMT_PREPARE => "Prepare".into(),
        COM_STMT_EXECUTE => "Execute".into(),
        COM_STMT_FETCH => "Fetch".into(),
        other => format!("Command {other}"),
    }
}

fn show_sessions(shared: &Shared) -> Table {
    use Kind::{Int, Text};
    let mut t = Table::new(&[
        ("id", Int),
        ("user", Text),
        ("client", Text),
        ("db", Text),
        ("command", Text),
        ("time_s", Int),
        ("state", Text),
        ("in_tx", Int),
        ("backend", Text),
        ("info", Text),
    ]);
    let waiting = shared.pause.waiting();
    let all = backends(shared);
    for e in shared.sessions.all() {
        let row = e.snapshot();
        let h = e.holds();
        let state = if waiting.contains(&row.id) {
            "paused"
        } else if e.busy() {
            "running"
        } else {
            "idle"
        };
        let held: Vec<&str> = all
            .iter()
            .filter(|b| b.held_by(&h))
            .map(|b| b.pool.addr())
            .collect();
        t.rows.push(vec![
            Value::Int(i64::from(row.id)),
            Value::text(row.user),
            Value::text(row.host),
            row.db.map_or(Value::Null, Value::Text),
            Value::text(command_name(row.command)),
            Value::Int(i64::try_from(row.time_s).unwrap_or(i64::MAX)),
            Value::text(state),
            Value::flag(h.in_transaction),
            if held.is_empty() {
                Value::Null
            } else {
                Value::text(held.join(","))
            },
            row.info.map_or(Value::Null, |i| Value::text(shown_info(&i))),
        ]);
    }
    t
}

fn show_state(shared: &Shared) -> Table {
    use Kind::{Int, Text};
    let mut t = Table::new(&[
        ("group", Text),
        ("state", Text),
        ("paused_s", Int),
        ("waiting", Int),
        ("drained_backends", Int),
    ]);
    let rt = shared.runtime();
    let waiting = shared.pause.waiting().len();
    let all = backends(shared);
    for (gi, g) in rt.topology.groups.iter().enumerate() {
        let p = shared.pause.state(&g.name);
        let drained = all
            .iter()
            .filter(|b| b.group_index == gi && b.pool.is_drained())
            .count();
        t.rows.push(vec![
            Value::text(&g.name),
            Value::text(p.map_or("running", |p| p.mode.as_str())),
            p.map_or(Value::Null, |p| {
                Value::Int(i64::try_from(p.since.elapsed().as_secs()).unwrap_or(i64::MAX))
            }),
            // Sessions wait behind the first group's pause (see `frontend::conns`).
            Value::Int(if gi == 0 {
                i64::try_from(waiting).unwrap_or(0)
            } else {
                0
            }),
            Value::Int(i64::try_from(drained).unwrap_or(0)),
        ]);
    }
    t
}

/// `SHOW TOPOLOGY`: `GET /v1/topology` as rows, one per server of every
/// group: each group's fields (`writable` comma-separated) then each of its
/// servers' fields (`replication`: the same JSON as over HTTP), named as
/// the JSON names them. Same fields, same servers (tests/console.rs
/// compares them).
fn show_topology(groups: &[GroupView]) -> Table {
    use Kind::{Int, Text};
    let mut t = Table::new(&[
        ("group", Text),
        ("topology", Text),
        ("master", Text),
        ("writable", Text),
        ("master_changes", Int),
        ("lost_transactions", Int),
        ("addr", Text),
        ("role", Text),
        ("reachable", Int),
        ("read_only", Int),
        ("server_id", Int),
        ("in_rotation", Int),
        ("reason", Text),
        ("gtid_binlog_pos", Text),
        ("gtid_current_pos", Text),
        ("replication", Text),
        ("error", Text),
    ]);
    let opt_text = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::text);
    for g in groups {
        for s in &g.servers {
            t.rows.push(vec![
                Value::text(&g.group),
                Value::text(g.topology),
                opt_text(&g.master),
                Value::text(g.writable.join(",")),
                Value::Int(g.master_changes as i64),
                Value::Int(g.lost_transactions as i64),
                Value::text(&s.addr),
                Value::text(s.role),
                Value::flag(s.reachable),
                Value::opt_flag(s.read_only),
                s.server_id.map_or(Value::Null, |id| Value::Int(i64::from(id))),
                Value::flag(s.in_rotation),
                Value::text(&s.reason),
                opt_text(&s.gtid_binlog_pos),
                opt_text(&s.gtid_current_pos),
                Value::text(serde_json::to_string(&s.replication).unwrap_or_default()),
                opt_text(&s.error),
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert!(shown_info(b"SET PASSWORD = PASSWORD('x')").starts_with("<hidden"));
        assert!(shown_info(b"ALTER USER a IDENTIFIED BY 'x'").starts_with("<hidden"));
        assert_eq!(shown_info(b"SELECT 1"), "SELECT 1");
    }
}
