//! COM_RESET_CONNECTION.

use crate::frontend::session::gate::Route;
use crate::frontend::session::{CmdResult, Session};
use crate::protocol::response::ResponseKind;
use crate::router::plan::{Pins, RouteReason};

impl Session {
    /// The client's prepared statements are gone (end of session, reset):
    /// their texts are no longer open for this client.
    pub(in crate::frontend::session) fn close_all_stmts(&mut self) {
        for s in self.stmts.stmts.values() {
            if s.sharded.is_none() {
                self.shared.open_stmts.close(&s.sql);
            }
        }
        self.stmts.clear();
    }

    /// Forget all session state (after COM_RESET_CONNECTION/CHANGE_USER).
    pub(in crate::frontend::session) fn clear_state(&mut self) {
        self.close_all_stmts();
        // The master connection stays (the caller decides); the replica goes
        // back to the pool, which resets it.
        let master = self.backends.master.take();
        self.backends = crate::frontend::session::backends::Backends::default();
        self.backends.master = master;
        self.state.reset();
    }

    pub(in crate::frontend::session) async fn reset_connection(&mut self, payload: &[u8]) -> CmdResult {
        if self.backends.master.is_some() {
            let route = Route::master(RouteReason::SessionState);
            let r = self
                .run_on(route, payload, ResponseKind::Single, None, None)
                .await?;
            if let Some(m) = self.backends.master.as_mut() {
                // What the server keeps as default database after a reset is
                // version-dependent: make the next command re-sync it.
                m.conn.db = None;
                m.conn.state.forget();
                // The reset released the counter slot (`backend::slot`).
                if m.conn.claim_slot().await.is_err() {
                    m.conn.broken = true;
                }
            }
            // State the reset may not undo: MariaDB keeps a role set with
            // SET ROLE across COM_RESET_CONNECTION (measured on 10.11). Such
            // a connection is closed; the session starts on a fresh one, as
            // after a new login, and no other session ever gets it.
            if self.state.pins().has(Pins::CONNECTION_STATE) {
                if let Some(mut m) = self.backends.master.take() {
                    m.conn.no_reuse = true;
                }
            }
            self.clear_state();
            if r.is_some_and(|t| t.error) {
                return Ok(());
            }
            Ok(())
        } else {
            self.clear_state();
            self.send_ok().await
        }
    }
}
