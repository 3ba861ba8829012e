//! The configured backend groups as live objects: a master and replicas, each
//! with its pools.

use std::sync::Arc;

use crate::config::{self, Config};

use super::conn::ConnectParams;
use super::pool::BackendPool;

pub struct Group {
    pub name: String,
    pub master: Arc<BackendPool>,
    pub replicas: Vec<Replica>,
}

pub struct Replica {
    pub pool: Arc<BackendPool>,
}

pub struct Topology {
    pub groups: Vec<Group>,
}

/// How to reach `b`; fails when its TLS files cannot be used.
pub(crate) fn params(b: &config::Backend, cfg: &Config) -> Result<ConnectParams, String> {
    let tls =
        super::tls::settings(cfg.backend_tls(b), &b.addr).map_err(|e| format!("backend {}: {e}", b.addr))?;
    Ok(ConnectParams {
        addr: b.addr.clone(),
        user: b.user.clone(),
        password: b.password.clone(),
        connect_timeout: cfg.backend.connect_timeout,
        max_age: cfg.backend.max_connection_age,
        tls,
    })
}

impl Topology {
    /// Per group its name and its backends' pool labels, the master's first,
    /// then each replica's (what `Metrics::retarget` resolves series by).
    pub fn labels(&self) -> Vec<(&str, Vec<&str>)> {
        self.groups
            .iter()
            .map(|g| {
                let mut labels = vec![g.master.label.as_str()];
                labels.extend(g.replicas.iter().map(|r| r.pool.label.as_str()));
                (g.name.as_str(), labels)
            })
            .collect()
    }

    /// The topology of `cfg`, taking over the pools of `previous` (the
    /// running configuration and its topology) for every backend that is
    /// the same server reached the same way: same group and role, same
    /// settings but the weight, same pool settings. Such a pool keeps its
    /// idle connections and the ones sessions hold; the others are new (none
    /// connects yet). Fails when a backend's TLS certificates or keys cannot
    /// be read.
    pub fn reusing(cfg: &Config, previous: Option<(&Config, &Topology)>) -> Result<Topology, String> {
        let mut spare: Vec<Reusable> = previous.map(|(c, t)| reusable(c, t)).unwrap_or_default();
        let same_pools = previous.is_some_and(|(c, _)| {
            c.backend.pools_equal(&cfg.backend)
                && c.auth.pool_max_per_account == cfg.auth.pool_max_per_account
        });
        let per_login = cfg.auth.pool_max_per_account.unwrap_or(cfg.backend.pool_max);
        // `label`: the name of a new pool, for logs and errors.
        let mut pool = |group: &str,
                        role: Role,
                        label: String,
                        b: &config::Backend|
         -> Result<Arc<BackendPool>, String> {
            let found = spare
                .iter()
                .position(|r| r.group == group && r.role == role && r.backend.same_server(b))
                .filter(|_| same_pools);
            Ok(match found {
                Some(at) => spare.swap_remove(at).pool,
                None => BackendPool::with_per_login(label, params(b, cfg)?, cfg.backend.pool_max, per_login),
            })
        };
        let mut groups = Vec::with_capacity(cfg.groups.len());
        for g in &cfg.groups {
            let master = pool(
                &g.name,
                Role::Master,
                format!("{} master {}", g.name, g.master.addr),
                &g.master,
            )?;
            let mut replicas = Vec::with_capacity(g.replicas.len());
            for (i, r) in g.replicas.iter().enumerate() {
                replicas.push(Replica {
                    pool: pool(
                        &g.name,
                        Role::Replica,
                        format!("{} replica{i} {}", g.name, r.addr),
                        r,
                    )?,
                });
            }
            groups.push(Group {
                name: g.name.clone(),
                master,
                replicas,
            });
        }
        Ok(Topology { groups })
    }

    /// Give group `gi` a master pool that refuses every checkout with `e`
    /// (no master: several servers are writable). A new pool, so sessions
    /// holding a connection of the old one see the master replaced.
    pub fn fence_master(
        &mut self,
        gi: usize,
        cfg: &Config,
        e: crate::protocol::packets::ErrPacket,
    ) -> Result<(), String> {
        let (Some(g), Some(gc)) = (self.groups.get_mut(gi), cfg.groups.get(gi)) else {
            return Err(format!("no group {gi}"));
        };
        let label = format!("{} master {} (no master)", gc.name, gc.master.addr);
        let pool = BackendPool::new(label, params(&gc.master, cfg)?, 1);
        pool.fence(e);
        g.master = pool;
        Ok(())
    }

    /// The default group (the first configured).
    pub fn default_group(&self) -> Option<&Group> {
        self.groups.first()
    }

    /// The first group other than the default whose master `new` replaced
    /// (another server, or none) and where `held(i)` (`i`: the group's index
    /// here) says a session's transaction was open: (old master, new
    /// master, whether the group has none now). The 1158 rule for every
    /// group (issue 43): what such a transaction did there is gone with
    /// that master, so it is lost as a whole, nothing replayed.
    pub fn master_lost_elsewhere(
        &self,
        new: &Topology,
        held: impl Fn(usize) -> bool,
    ) -> Option<(String, String, bool)> {
        self.groups.iter().enumerate().skip(1).find_map(|(i, old)| {
            let now = new.groups.iter().find(|g| g.name == old.name)?;
            (held(i) && old.master_replaced_by(now)).then(|| {
                (
                    old.master.addr().to_owned(),
                    now.master.addr().to_owned(),
                    now.master.fenced(),
                )
            })
        })
    }
}

impl Group {
    /// Is `new`'s master another server than this group's, or none (as
    /// opposed to a reload keeping the same master)?
    pub fn master_replaced_by(&self, new: &Group) -> bool {
        !Arc::ptr_eq(&self.master, &new.master)
            && (self.master.addr() != new.master.addr() || self.master.fenced() || new.master.fenced())
    }
}

/// A backend's role in its group. A replica keeps its pool when it moves in
/// the list, so its position is not part of it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Master,
    Replica,
}

/// A pool of the running topology that a new one may take over.
struct Reusable {
    group: String,
    role: Role,
    backend: config::Backend,
    pool: Arc<BackendPool>,
}

fn reusable(cfg: &Config, topology: &Topology) -> Vec<Reusable> {
    let mut out = Vec::new();
    for (gc, g) in cfg.groups.iter().zip(&topology.groups) {
        let mut add = |role, backend: &config::Backend, pool: &Arc<BackendPool>| {
            out.push(Reusable {
                group: gc.name.clone(),
                role,
                backend: backend.clone(),
                pool: pool.clone(),
            })
        };
        // A fenced pool (no master) is never taken over: it only refuses.
        if !g.master.fenced() {
            add(Role::Master, &gc.master, &g.master);
        }
        for (rc, r) in gc.replicas.iter().zip(&g.replicas) {
            add(Role::Replica, rc, &r.pool);
        }
    }
    out
}
