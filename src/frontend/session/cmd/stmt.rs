//! COM_STMT_FETCH, COM_STMT_RESET, COM_STMT_SEND_LONG_DATA and COM_STMT_CLOSE:
//! commands on a prepared statement that run nothing new.

use crate::error;
use crate::frontend::prepared::{self, Conn};
use crate::frontend::session::gate::Route;
use crate::frontend::session::{CmdResult, Session};
use crate::protocol::response::ResponseKind;
use crate::router::plan::RouteReason;

impl Session {
    /// FETCH and RESET go where the statement last executed, if the session
    /// still holds that connection; otherwise there is no server-side state
    /// to act on (no cursor to fetch from, nothing to reset).
    pub(in crate::frontend::session) async fn stmt_follow(
        &mut self,
        payload: &[u8],
        kind: ResponseKind,
    ) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        let fetch = kind == ResponseKind::Fetch;
        let Some(stmt) = self.stmts.stmts.get(&id) else {
            let during = if fetch {
                "mysqld_stmt_fetch"
            } else {
                "mysqld_stmt_reset"
            };
            return self.send_err(&error::unknown_stmt(id, during)).await;
        };
        if stmt.sharded.is_some() {
            return self.sharded_follow(id, kind).await;
        }
        let conn = match stmt.last_exec {
            Some((c, uid)) if uid != 0 && self.gen_of(c) == uid => Some(c),
            _ => None,
        };
        if !fetch {
            if let Some(s) = self.stmts.stmts.get_mut(&id) {
                s.long_data = false;
            }
            if self.backends.cursor.is_some_and(|(c, _)| c == id) {
                self.backends.cursor = None;
            }
        }
        let Some(conn) = conn else {
            return if fetch {
                self.send_err(&error::no_open_cursor(id)).await
            } else {
                self.send_ok().await
            };
        };
        let backend_id = match self.prepare_on(id, conn, None).await {
            Ok(b) => b,
            Err(e) => return self.send_err(&e).await,
        };
        let mut packet = payload.to_vec();
        prepared::set_stmt_id(&mut packet, backend_id);
        let route = Route::new(conn, RouteReason::Statement);
        self.run_on(route, &packet, kind, None, Some((backend_id, id)))
            .await
            .map(drop)
    }

    pub(in crate::frontend::session) async fn stmt_long_data(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return Ok(());
        };
        match self.stmts.stmts.get(&id) {
            None => return Ok(()), // no response is defined; the EXECUTE will fail
            Some(s) if s.sharded.is_some() => {
                self.sharded_long_data(id, payload);
                return Ok(());
            }
            Some(_) => {}
        }
        let Ok(backend_id) = self.prepare_on(id, Conn::Master, None).await else {
            return Ok(());
        };
        if let Some(s) = self.stmts.stmts.get_mut(&id) {
            s.long_data = true;
        }
        let mut packet = payload.to_vec();
        prepared::set_stmt_id(&mut packet, backend_id);
        if let Some(m) = self.backends.master.as_mut() {
            m.conn.dirty = true;
            let mut seq = 0;
            if m.conn.stream.write_packet(&mut seq, &packet).await.is_err() {
                m.conn.broken = true;
            }
        }
        Ok(())
    }

    /// COM_STMT_CLOSE: forget the client's id. The backend statements stay
    /// in their connections' caches for whoever prepares the same text next.
    pub(in crate::frontend::session) async fn stmt_close(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return Ok(());
        };
        let Some(stmt) = self.stmts.stmts.remove(&id) else {
            return Ok(());
        };
        if stmt.sharded.is_none() {
            self.shared.open_stmts.close(&stmt.sql);
        }
        if let Some((_, conn)) = self.backends.cursor.filter(|(c, _)| *c == id) {
            // Its cursor is open on the server: closing the backend
            // statement is what closes it.
            self.backends.cursor = None;
            if let Some(h) = self.backends.slot(conn) {
                let ctx = h.conn.stmt_context();
                if let Some(backend_id) = h.conn.state.stmts.remove(ctx, &stmt.sql) {
                    let _ = h.conn.close_stmt(backend_id).await;
                }
            }
        }
        Ok(())
    }
}
