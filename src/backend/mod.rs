//! Backend side: raw connections to MySQL/MariaDB servers and their pools.

pub mod conn;
pub mod error;
pub mod pool;
pub mod state;
pub mod tls;
pub mod topology;

pub use conn::{BackendConn, BackendIo, ConnectParams, Login, PoolKey};
pub use error::BackendError;
pub use pool::{BackendPool, Pooled};
pub use topology::{Group, Topology};
