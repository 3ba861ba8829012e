//! sluice: a MySQL proxy.
//!
//! Layers, each knowing only the one below it:
//! `frontend` (client sessions) → `router` (statement → [`router::Plan`]) →
//! `backend` (pooled raw connections) ; `protocol` is shared wire code.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]

pub mod admin;
pub mod affinity;
pub mod app;
pub mod auth;
pub mod backend;
pub mod config;
pub mod error;
pub mod follow;
pub mod freshness;
pub mod frontend;
pub mod logging;
pub mod merge;
pub mod metrics;
pub mod pause;
pub mod protocol;
pub mod reload;
pub mod router;
pub mod runtime;
pub mod shard;
pub mod stats;
