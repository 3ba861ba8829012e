//! Freshness: may a replica serve this read?
//!
//! Triggers on the master bump rows of a counter table (`triggers`);
//! replication carries them to replicas; probes read both sides
//! (`monitor`); the comparison itself is pure (`state`), and so is replica
//! health with its hysteresis (`health`).

pub mod flight;
pub mod health;
pub mod monitor;
pub mod state;
pub mod triggers;
