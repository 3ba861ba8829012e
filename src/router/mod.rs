//! Statement classification and planning: pure functions from a statement
//! and the session's state to a [`Plan`]. No sockets here.

pub mod lexer;

/// Which server of a group a statement goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Master,
    Replica,
}

/// Why the router chose the target (exported as a metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Read/write splitting is not enabled for this statement kind.
    Default,
}

impl Reason {
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Default => "default",
        }
    }
}

/// Where one statement goes: plain data, decided before any socket is touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Index into the topology's groups.
    pub group: usize,
    pub target: Target,
    pub reason: Reason,
}

impl Plan {
    pub fn master(group: usize, reason: Reason) -> Plan {
        Plan {
            group,
            target: Target::Master,
            reason,
        }
    }
}

/// What the session needs to know about a statement after it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEffect {
    None,
    /// `USE db`: the session's default database changes if the statement succeeds.
    UseDb(String),
}

/// Plan a COM_QUERY. Every statement goes to the default group's master
/// until read/write splitting is enabled.
pub fn plan_query(sql: &[u8]) -> (Plan, SessionEffect) {
    let effect = match lexer::use_database(sql) {
        Some(db) => SessionEffect::UseDb(db),
        None => SessionEffect::None,
    };
    (Plan::master(0, Reason::Default), effect)
}
