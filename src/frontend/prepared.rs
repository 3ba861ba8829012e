//! Prepared statements across several backend connections.
//!
//! The client sees sluice's own statement ids. Each statement remembers its
//! text, so it can be prepared lazily on whichever connection an EXECUTE is
//! routed to, and the id it has there. Connections are identified by a
//! generation number that changes whenever the session gets a new backend
//! connection, so an id from a lost connection is never reused (an EXECUTE
//! must never reach a server where the statement was not prepared).

use std::collections::HashMap;
use std::sync::Arc;

use crate::router::classify::Classified;

pub use crate::backend::Conn;

#[derive(Debug, Clone)]
pub struct Stmt {
    /// COM_STMT_PREPARE payload without the command byte (shared: every
    /// EXECUTE needs it, and copying it each time would cost).
    pub sql: Arc<[u8]>,
    /// The statement's classification, made once at PREPARE: each EXECUTE is
    /// planned from it like a text statement (see `frontend::pipeline`).
    pub class: Arc<Classified>,
    pub params: u16,
    /// The parameter types last bound by the client (2 bytes per parameter).
    pub types: Option<Vec<u8>>,
    /// SEND_LONG_DATA went to the master: the next EXECUTE must follow it.
    pub long_data: bool,
    /// Where the last EXECUTE ran: the slot and the connection's uid (FETCH
    /// and RESET follow it there while the session still holds it).
    pub last_exec: Option<(Conn, u64)>,
    /// Set for a statement on a sharded table: sluice plans it at each
    /// EXECUTE and it is prepared on no backend.
    pub sharded: Option<ShardedStmt>,
}

/// What sluice keeps of a prepared statement on a sharded table.
#[derive(Debug, Clone, Default)]
pub struct ShardedStmt {
    /// Bytes sent per parameter by COM_STMT_SEND_LONG_DATA since the last
    /// EXECUTE or RESET.
    pub long_data: Vec<Option<Vec<u8>>>,
    /// Bytes of long data received since the last EXECUTE or RESET, kept or
    /// not: past the cap the bytes are dropped and the EXECUTE fails
    /// (`session/sharded/prepared.rs`).
    pub long_data_sent: usize,
}

impl Stmt {
    pub fn new(sql: Vec<u8>, class: Arc<Classified>, params: u16) -> Stmt {
        Stmt {
            sql: sql.into(),
            class,
            params,
            types: None,
            long_data: false,
            last_exec: None,
            sharded: None,
        }
    }
}

/// Prepared statements one session may hold open at once (MariaDB bounds
/// them per server with `max_prepared_stmt_count`, 16382 by default; a
/// proxy bounds each session so no client can hold sluice's memory or the
/// servers' statement slots alone).
pub const MAX_STMTS_PER_SESSION: usize = 1024;

/// Bytes of statement text one session's prepared statements may hold
/// together (sluice keeps each text to prepare it again on another
/// connection): 400 statements of 256 KiB would otherwise hold 100 MiB.
pub const MAX_STMT_BYTES_PER_SESSION: usize = 16 << 20;

#[derive(Debug, Default)]
pub struct Registry {
    next_id: u32,
    /// Looked up several times per EXECUTE: foldhash rather than SipHash
    /// (the ids are sluice's own, sequential, so no client chooses keys).
    pub stmts: HashMap<u32, Stmt, foldhash::fast::RandomState>,
}

impl Registry {
    pub fn insert(&mut self, stmt: Stmt) -> u32 {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        while self.stmts.contains_key(&self.next_id) {
            self.next_id = self.next_id.wrapping_add(1).max(1);
        }
        self.stmts.insert(self.next_id, stmt);
        self.next_id
    }

    pub fn clear(&mut self) {
        self.stmts.clear();
    }

    /// Bytes of statement text held.
    pub fn bytes(&self) -> usize {
        self.stmts.values().map(|s| s.sql.len()).sum()
    }
}

/// The statement id of a COM_STMT_* packet (bytes 1..5).
pub fn stmt_id(payload: &[u8]) -> Option<u32> {
    let b = payload.get(1..5)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

pub fn set_stmt_id(payload: &mut [u8], id: u32) {
    if let Some(b) = payload.get_mut(1..5) {
        b.copy_from_slice(&id.to_le_bytes());
    }
}

/// What a COM_STMT_EXECUTE says about parameter types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecuteLayout {
    pub cursor_flags: u8,
    /// Offset of the new-params-bound flag, if the statement has parameters.
    pub bound_at: Option<usize>,
    pub bound: bool,
}

pub fn execute_layout(payload: &[u8], params: u16) -> Option<ExecuteLayout> {
    let flags = *payload.get(5)?;
    if params == 0 {
        return Some(ExecuteLayout {
            cursor_flags: flags,
            bound_at: None,
            bound: false,
        });
    }
    let bitmap = usize::from(params).div_ceil(8);
    let at = 10 + bitmap;
    let bound = *payload.get(at)? == 1;
    Some(ExecuteLayout {
        cursor_flags: flags,
        bound_at: Some(at),
        bound,
    })
}

/// The parameter types carried by an EXECUTE with the bound flag set.
pub fn bound_types<'a>(payload: &'a [u8], layout: &ExecuteLayout, params: u16) -> Option<&'a [u8]> {
    let at = layout.bound_at? + 1;
    payload.get(at..at + 2 * usize::from(params))
}

/// Rewrite an EXECUTE without types into one carrying `types`, for a
/// connection that has not seen them.
pub fn inject_types(payload: &[u8], bound_at: usize, types: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + types.len());
    out.extend_from_slice(&payload[..bound_at]);
    out.push(1);
    out.extend_from_slice(types);
    out.extend_from_slice(&payload[bound_at + 1..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_layout_and_injection() {
        // id 7, flags 0, iter 1, 2 params: bitmap 1 byte, bound=1, types, values
        let mut p = vec![
            0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b00, 1, 3, 0, 253, 0, 1, 0, 0, 0, 1, b'x',
        ];
        let l = execute_layout(&p, 2).expect("layout");
        assert_eq!(l.bound_at, Some(11));
        assert!(l.bound);
        assert_eq!(bound_types(&p, &l, 2), Some(&[3u8, 0, 253, 0][..]));
        // Same execute without types:
        let without: Vec<u8> = [&p[..11], &[0u8][..], &p[16..]].concat();
        let l2 = execute_layout(&without, 2).expect("layout");
        assert!(!l2.bound);
        assert_eq!(inject_types(&without, 11, &[3, 0, 253, 0]), p);
        set_stmt_id(&mut p, 9);
        assert_eq!(stmt_id(&p), Some(9));
    }
}
