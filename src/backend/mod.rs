//! Backend side: raw connections to MySQL/MariaDB servers and their pools.

pub mod auth_guard;
pub mod conn;
pub mod error;
pub mod pool;
pub mod slot;
pub mod state;
pub mod tls;
pub mod topology;

pub use conn::{BackendConn, BackendIo, ConnectParams, Login, PoolKey};
pub use error::BackendError;
pub use pool::{BackendPool, Pooled};
pub use topology::{Group, Topology};

/// Which backend of a group serves a statement: the master, or replica `i`
/// (a position in the group's configuration).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Conn {
    #[default]
    Master,
    Replica(usize),
}

/// The per-backend metric series of a group are indexed the same way.
impl From<Conn> for crate::metrics::BackendIndex {
    fn from(c: Conn) -> Self {
        crate::metrics::BackendIndex(match c {
            Conn::Master => 0,
            Conn::Replica(i) => i + 1,
        })
    }
}
