//! Statement classification: pure functions from SQL text to what the
//! session needs to route it. No sockets here.
//!
//! `lexer` has the cheap word-level helpers; `classify` decides read/write,
//! session effects and the tables a read depends on.

pub mod builtins;
pub mod classify;
pub mod lexer;
pub mod plan;
pub mod previous;
pub mod route;
