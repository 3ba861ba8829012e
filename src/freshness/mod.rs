//! Freshness: may a replica serve this read?
//!
//! Triggers on the master bump rows of a counter table (`triggers`);
//! replication carries them to replicas; probes read both sides
//! (`monitor`); the comparison itself is pure (`state`).

pub mod flight;
pub mod monitor;
pub mod state;
pub mod triggers;
