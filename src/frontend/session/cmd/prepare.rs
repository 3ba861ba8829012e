//! COM_STMT_PREPARE.

use crate::error;
use crate::frontend::prepared::{self, Conn, Stmt};
use crate::frontend::session::gate::Route;
use crate::frontend::session::{CmdResult, Session};
use crate::protocol::response::ResponseKind;
use crate::router::plan::RouteReason;

impl Session {
    pub(in crate::frontend::session) async fn stmt_prepare(&mut self, payload: &[u8]) -> CmdResult {
        if self.stmts.stmts.len() >= prepared::MAX_STMTS_PER_SESSION {
            // MariaDB's own answer when max_prepared_stmt_count is reached.
            return self
                .send_err(&error::too_many_prepared(prepared::MAX_STMTS_PER_SESSION))
                .await;
        }
        if self.stmts.bytes() + payload.len() > prepared::MAX_STMT_BYTES_PER_SESSION {
            return self
                .send_err(&error::too_many_prepared_bytes(
                    prepared::MAX_STMT_BYTES_PER_SESSION,
                ))
                .await;
        }
        // hook(kill): thread-id statements are sluice's; CONNECTION_ID() is the session's id.
        if crate::frontend::kill::intercept(&payload[1..]).is_some() {
            return self.send_err(&crate::frontend::kill::not_preparable()).await;
        }
        let rewritten;
        let payload = match crate::frontend::thread_ids::rewrite_connection_id(&payload[1..], self.proc.id) {
            Some(sql) => {
                rewritten = [&[crate::protocol::consts::COM_STMT_PREPARE][..], &sql].concat();
                &rewritten[..]
            }
            None => payload,
        };
        if self.sharded_prepare(payload).await? {
            return Ok(());
        }
        let sql = payload[1..].to_vec();
        let c = self.classify(&sql);
        let route = Route::master(RouteReason::Prepare);
        // The id is reserved now so the relay can put it in the response.
        let id = self.stmts.insert(Stmt::new(sql, c, 0));
        // A master connection kept for what the previous statement left
        // (FOUND_ROWS() after SQL_CALC_FOUND_ROWS, warnings) runs the
        // prepare and stays: PREPARE changes neither FOUND_ROWS() nor
        // ROW_COUNT(), and its own diagnostics are on that connection.
        let kept_master = self.backends.keep == Some(Conn::Master);
        let tracker = self
            .run_on(route, payload, ResponseKind::Prepare, Some(id), None)
            .await?;
        if kept_master && tracker.as_ref().is_some_and(|t| !t.error) {
            self.backends.keep = Some(Conn::Master);
        }
        if tracker.is_some() {
            let c = self.stmts.stmts.get(&id).map(|s| s.class.clone());
            if let Some(c) = c {
                self.apply_prepare(&c);
            }
        }
        match tracker.and_then(|t| t.prepared) {
            Some(info) => {
                if let Some(s) = self.stmts.stmts.get_mut(&id) {
                    s.params = info.params;
                }
                self.shared.open_stmts.open(&payload[1..]);
                if let Some(m) = self.backends.master.as_mut() {
                    let ctx = m.conn.stmt_context();
                    for old in m.conn.state.stmts.insert(ctx, &payload[1..], info.stmt_id) {
                        let _ = m.conn.close_stmt(old).await;
                    }
                }
            }
            None => {
                self.stmts.stmts.remove(&id);
            }
        }
        Ok(())
    }
}
