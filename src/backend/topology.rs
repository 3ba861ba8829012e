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

fn params(b: &config::Backend, cfg: &Config) -> ConnectParams {
    ConnectParams {
        addr: b.addr.clone(),
        user: b.user.clone(),
        password: b.password.clone(),
        connect_timeout: cfg.backend.connect_timeout,
    }
}

impl Topology {
    pub fn from_config(cfg: &Config) -> Topology {
        let groups = cfg
            .groups
            .iter()
            .map(|g| Group {
                name: g.name.clone(),
                master: BackendPool::new(
                    format!("{} master {}", g.name, g.master.addr),
                    params(&g.master, cfg),
                    cfg.backend.pool_max,
                ),
                replicas: g
                    .replicas
                    .iter()
                    .enumerate()
                    .map(|(i, r)| Replica {
                        pool: BackendPool::new(
                            format!("{} replica{} {}", g.name, i, r.addr),
                            params(r, cfg),
                            cfg.backend.pool_max,
                        ),
                        weight: r.weight,
                    })
                    .collect(),
            })
            .collect();
        Topology { groups }
    }

    /// The default group (the first configured).
    pub fn default_group(&self) -> Option<&Group> {
        self.groups.first()
    }
}
