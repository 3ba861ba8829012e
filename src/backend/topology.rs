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
    pub weight: u32,
}

pub struct Topology {
    pub groups: Vec<Group>,
}

/// How to reach `b`; fails when its TLS files cannot be used.
fn params(b: &config::Backend, cfg: &Config) -> Result<ConnectParams, String> {
    let tls =
        super::tls::settings(cfg.backend_tls(b), &b.addr).map_err(|e| format!("backend {}: {e}", b.addr))?;
    Ok(ConnectParams {
        addr: b.addr.clone(),
        user: b.user.clone(),
        password: b.password.clone(),
        connect_timeout: cfg.backend.connect_timeout,
        tls,
    })
}

impl Topology {
    /// The pools of every configured backend (none connects yet). Fails
    /// when a backend's TLS certificates or keys cannot be read.
    pub fn from_config(cfg: &Config) -> Result<Topology, String> {
        let mut groups = Vec::with_capacity(cfg.groups.len());
        for g in &cfg.groups {
            let master = BackendPool::new(
                format!("{} master {}", g.name, g.master.addr),
                params(&g.master, cfg)?,
                cfg.backend.pool_max,
            );
            let mut replicas = Vec::with_capacity(g.replicas.len());
            for (i, r) in g.replicas.iter().enumerate() {
                replicas.push(Replica {
                    pool: BackendPool::new(
                        format!("{} replica{} {}", g.name, i, r.addr),
                        params(r, cfg)?,
                        cfg.backend.pool_max,
                    ),
                    weight: r.weight,
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

    /// The default group (the first configured).
    pub fn default_group(&self) -> Option<&Group> {
        self.groups.first()
    }
}
