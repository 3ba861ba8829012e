//! What a reload changes, in words, and which settings it cannot change.
//! Pure functions of the running and the new configuration.

use std::fmt::Debug;

use crate::config::{Backend, Config, Group, User};

/// Settings a running sluice cannot take over: the listeners are bound, the
/// client TLS acceptor and the logger are built once at startup. A reload
/// keeps the running value and names the key in a warning.
pub fn restart_needed(running: &Config, new: &Config) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if running.listen != new.listen {
        keys.push("listen");
    }
    if running.admin_listen != new.admin_listen {
        keys.push("admin_listen");
    }
    if running.listen_reuseport != new.listen_reuseport {
        keys.push("listen_reuseport");
    }
    if running.tls != new.tls {
        keys.push("tls");
    }
    if running.log.format != new.log.format {
        keys.push("log.format");
    }
    if running.log.level != new.log.level {
        keys.push("log.level");
    }
    // Counted from start-up on (listener, codec, per-user slots).
    if running.limits.max_client_connections != new.limits.max_client_connections {
        keys.push("limits.max_client_connections");
    }
    if running.limits.max_packet_size != new.limits.max_packet_size {
        keys.push("limits.max_packet_size");
    }
    if running.limits.max_unauthenticated != new.limits.max_unauthenticated {
        keys.push("limits.max_unauthenticated");
    }
    if running.limits.max_unauthenticated_per_address != new.limits.max_unauthenticated_per_address {
        keys.push("limits.max_unauthenticated_per_address");
    }
    if running.log.max_sql_length != new.log.max_sql_length {
        keys.push("log.max_sql_length");
    }
    // The runtime's threads are started before the configuration is served.
    if running.runtime != new.runtime {
        keys.push("runtime");
    }
    if new
        .users
        .iter()
        .any(|u| u.max_connections != running_max_connections(running, &u.name))
    {
        keys.push("users[].max_connections");
    }
    keys
}

/// A user's `max_connections` in force (0: none, also for a user the
/// running configuration does not have).
fn running_max_connections(running: &Config, name: &str) -> u32 {
    running
        .users
        .iter()
        .find(|u| u.name == name)
        .map(|u| u.max_connections)
        .unwrap_or(0)
}

/// `new` with the settings of [`restart_needed`] put back to their running
/// values, so the published configuration says what sluice really does.
pub fn keep_running(running: &Config, mut new: Config) -> Config {
    new.listen = running.listen;
    new.admin_listen = running.admin_listen;
    new.listen_reuseport = running.listen_reuseport;
    new.tls = running.tls.clone();
    new.log.format = running.log.format;
    new.log.level = running.log.level.clone();
    new.limits.max_client_connections = running.limits.max_client_connections;
    new.limits.max_packet_size = running.limits.max_packet_size;
    new.limits.max_unauthenticated = running.limits.max_unauthenticated;
    new.limits.max_unauthenticated_per_address = running.limits.max_unauthenticated_per_address;
    new.log.max_sql_length = running.log.max_sql_length;
    new.runtime = running.runtime;
    for u in &mut new.users {
        u.max_connections = running_max_connections(running, &u.name);
    }
    new
}

/// The changes from `running` to `new`, one phrase each (empty: none).
/// Never shows a password.
pub fn changes(running: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    users(running, new, &mut out);
    groups(&running.groups, &new.groups, &mut out);
    let (a, b) = (&running.backend, &new.backend);
    setting(
        &mut out,
        "backend.connect_timeout",
        &a.connect_timeout,
        &b.connect_timeout,
    );
    setting(&mut out, "backend.pool_max", &a.pool_max, &b.pool_max);
    setting(&mut out, "backend.multiplex", &a.multiplex, &b.multiplex);
    let (a, b) = (&running.freshness, &new.freshness);
    setting(&mut out, "freshness.mode", &a.mode.as_str(), &b.mode.as_str());
    setting(&mut out, "freshness.schema", &a.schema, &b.schema);
    setting(&mut out, "freshness.slots", &a.slots, &b.slots);
    setting(
        &mut out,
        "freshness.probe_interval",
        &a.probe_interval,
        &b.probe_interval,
    );
    setting(
        &mut out,
        "freshness.probe_timeout",
        &a.probe_timeout,
        &b.probe_timeout,
    );
    setting(&mut out, "freshness.max_wait", &a.max_wait, &b.max_wait);
    setting(&mut out, "freshness.rise", &a.rise, &b.rise);
    setting(
        &mut out,
        "log.slow_query",
        &running.log.slow_query,
        &new.log.slow_query,
    );
    if running.sharding != new.sharding {
        out.push("sharding changed".to_owned());
    }
    let (a, b) = (&running.limits, &new.limits);
    setting(
        &mut out,
        "limits.shutdown_timeout",
        &a.shutdown_timeout,
        &b.shutdown_timeout,
    );
    setting(&mut out, "limits.drain_delay", &a.drain_delay, &b.drain_delay);
    setting(&mut out, "reload.watch", &running.reload.watch, &new.reload.watch);
    setting(
        &mut out,
        "readiness.require_master",
        &running.readiness.require_master,
        &new.readiness.require_master,
    );
    // A setting without a phrase of its own must still be published.
    if out.is_empty() && running != new {
        out.push("other settings changed".to_owned());
    }
    out
}

fn setting<T: PartialEq + Debug>(out: &mut Vec<String>, key: &str, old: &T, new: &T) {
    if old != new {
        out.push(format!("{key} {old:?} -> {new:?}"));
    }
}

fn users(running: &Config, new: &Config, out: &mut Vec<String>) {
    let same = |a: &User, b: &User| a.name == b.name;
    let changed: Vec<&str> = new
        .users
        .iter()
        .filter(|u| running.users.iter().any(|r| same(r, u) && r != *u))
        .map(|u| u.name.as_str())
        .collect();
    list(
        out,
        "users added",
        &missing(&new.users, &running.users, same, |u| &u.name),
    );
    list(
        out,
        "users removed",
        &missing(&running.users, &new.users, same, |u| &u.name),
    );
    list(out, "users with a new password", &changed);
}

fn groups(running: &[Group], new: &[Group], out: &mut Vec<String>) {
    for g in new {
        let Some(old) = running.iter().find(|o| o.name == g.name) else {
            out.push(format!("group {} added", g.name));
            continue;
        };
        if !old.master.same_server(&g.master) {
            out.push(format!(
                "group {}: master {} -> {}",
                g.name, old.master.addr, g.master.addr
            ));
        }
        let added = missing(&g.replicas, &old.replicas, Backend::same_server, addr);
        let removed = missing(&old.replicas, &g.replicas, Backend::same_server, addr);
        list(out, &format!("group {}: replicas added", g.name), &added);
        list(out, &format!("group {}: replicas removed", g.name), &removed);
        for r in &g.replicas {
            let before = old.replicas.iter().find(|o| o.same_server(r));
            if let Some(o) = before.filter(|o| o.weight != r.weight) {
                out.push(format!(
                    "group {}: replica {} weight {} -> {}",
                    g.name, r.addr, o.weight, r.weight
                ));
            }
        }
    }
    for g in running {
        if !new.iter().any(|n| n.name == g.name) {
            out.push(format!("group {} removed", g.name));
        }
    }
}

fn addr(b: &Backend) -> &str {
    &b.addr
}

/// The names of the items of `list` that have no `same` item in `other`.
fn missing<'a, T>(
    list: &'a [T],
    other: &[T],
    same: impl Fn(&T, &T) -> bool,
    name: impl Fn(&'a T) -> &'a str,
) -> Vec<&'a str> {
    list.iter()
        .filter(|x| !other.iter().any(|o| same(x, o)))
        .map(name)
        .collect()
}

fn list(out: &mut Vec<String>, what: &str, names: &[&str]) {
    if !names.is_empty() {
        out.push(format!("{what}: {}", names.join(", ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Config {
        let text = format!(
            "users:\n  - {{ name: app, password: app, backend: group }}\n{extra}groups:\n  - name: main\n    \
             master: {{ addr: 127.0.0.1:3306, user: s, password: s }}\n    replicas:\n      \
             - {{ addr: 127.0.0.1:3307, user: s, password: s, weight: 1 }}\n"
        );
        Config::from_yaml_str(&text, "test.yaml").expect("valid test config")
    }

    #[test]
    fn same_file_changes_nothing() {
        let a = config("");
        assert!(changes(&a, &a).is_empty());
        assert!(restart_needed(&a, &a).is_empty());
    }

    #[test]
    fn users_replicas_weights_and_settings_are_named() {
        let a = config("");
        let mut b = config("freshness: { mode: off }\n");
        b.users[0].credential = crate::config::Credential::Password("new".into());
        b.users.push(crate::config::User {
            name: "bob".into(),
            credential: crate::config::Credential::Password("pw".into()),
            max_connections: 0,
            require_tls: false,
            backend: None,
        });
        let mut r = b.groups[0].replicas[0].clone();
        b.groups[0].replicas[0].weight = 3;
        r.addr = "127.0.0.1:3308".into();
        b.groups[0].replicas.push(r);
        let text = changes(&a, &b).join("; ");
        assert_eq!(
            text,
            "users added: bob; users with a new password: app; \
             group main: replicas added: 127.0.0.1:3308; \
             group main: replica 127.0.0.1:3307 weight 1 -> 3; freshness.mode \"causal\" -> \"off\""
        );
        let c = config("");
        let mut d = c.clone();
        d.groups[0].replicas.clear();
        d.users.clear();
        assert_eq!(
            changes(&c, &d).join("; "),
            "users removed: app; group main: replicas removed: 127.0.0.1:3307"
        );
    }

    #[test]
    fn startup_only_settings_are_kept_and_named() {
        let a = config("");
        let b = config(
            "listen: 127.0.0.1:7000\nlog: { format: json, slow_query: 2s }\nruntime: { worker_threads: 1 }\n",
        );
        assert_eq!(restart_needed(&a, &b), vec!["listen", "log.format", "runtime"]);
        let kept = keep_running(&a, b);
        assert_eq!(kept.listen, a.listen);
        assert_eq!(kept.runtime, a.runtime);
        assert_eq!(kept.log.format, a.log.format);
        assert_eq!(kept.log.slow_query, std::time::Duration::from_secs(2));
        assert_eq!(changes(&a, &kept), vec!["log.slow_query 1s -> 2s"]);
    }
}
