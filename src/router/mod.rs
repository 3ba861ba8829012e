//! Statement classification: pure functions from SQL text to what the
//! session needs to route it. No sockets here.
//!
//! `lexer` has the cheap word-level helpers; `classify` decides read/write,
//! session effects and the tables a read depends on; `memo` remembers its
//! answers by statement shape.

pub mod builtins;
pub mod classify;
pub mod lexer;
pub mod memo;
pub mod plan;
pub mod previous;
pub mod route;
