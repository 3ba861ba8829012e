//! Client side: the listener, TLS, authentication and the per-client session.

pub mod abandon;
pub mod auth;
pub mod handshake;
pub mod io;
pub mod listener;
pub mod prepared;
pub mod relay;
pub mod session;
pub mod tls;

pub use listener::{serve, Shared};
