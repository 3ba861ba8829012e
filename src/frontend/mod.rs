//! Client side: the listener, TLS, authentication and the per-client session.

pub mod abandon;
pub mod auth;
pub mod auth_exchange;
pub mod backoff;
pub mod change_user;
pub mod cores;
pub mod handshake;
pub mod io;
pub mod kill;
pub mod limits;
pub mod listener;
pub mod params;
pub mod prepared;
pub mod registry;
pub mod relay;
pub mod sequence_users;
pub mod session;
pub mod shared;
pub mod thread_ids;
pub mod tls;
pub mod wait;

pub use listener::serve;
pub use shared::Shared;
