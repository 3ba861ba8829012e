//! Which session thread the running code is on (`runtime.per_core`).
//!
//! With `per_core` every session runs on one single-threaded runtime for its
//! whole life (`frontend::cores`), and a socket is woken through the driver
//! of the runtime it was registered with. A pooled backend connection made
//! by a session on thread A and borrowed later by a session on thread B
//! would be woken by A's driver, which then has to wake B (an `eventfd`
//! write and a context switch per answer, measured at 0.48 `write` calls per
//! query before connections moved; benches/README.md). So a connection
//! records the thread whose driver it is registered with, and a borrower on
//! another thread moves it to its own (`BackendConn::settle`).
//!
//! On tokio's shared worker pool (`per_core: false`) no thread is a session
//! thread: [`here`] is `None` everywhere and nothing ever moves.

use std::cell::Cell;

thread_local! {
    static HERE: Cell<Option<u16>> = const { Cell::new(None) };
}

/// The session thread this code runs on, if it runs on one.
pub fn here() -> Option<u16> {
    HERE.with(Cell::get)
}

/// Mark the calling thread as session thread `k` (once, when it starts).
pub fn set_here(k: u16) {
    HERE.with(|h| h.set(Some(k)));
}
