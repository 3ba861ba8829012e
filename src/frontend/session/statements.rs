//! Prepared statements (COM_STMT_*): the client sees sluice's statement
//! ids; each statement is prepared lazily on every connection an EXECUTE is
//! routed to and kept in that connection's statement cache, shared with the
//! sessions that borrow it later (see `prepared.rs` for the registry and
//! packet rewriting, `backend::state` for the cache).

use tracing::debug;

use crate::error;
use crate::protocol::packets::ErrPacket;
use crate::protocol::response::ResponseKind;
use crate::router::plan::RouteReason;
use crate::router::route::Source;

use crate::frontend::abandon::ReadWatch;

use super::pipeline::Exec;
use super::prepared::{self, Conn, Stmt};
use super::{lost, slot_of, CmdResult, Route, Session};

impl Session {
    pub(super) async fn stmt_prepare(&mut self, payload: &[u8]) -> CmdResult {
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
        let route = Route {
            conn: Conn::Master,
            reason: RouteReason::Prepare,
        };
        // The id is reserved now so the relay can put it in the response.
        let id = self.stmts.insert(Stmt::new(sql, c, 0));
        // A master connection kept for what the previous statement left
        // (FOUND_ROWS() after SQL_CALC_FOUND_ROWS, warnings) runs the
        // prepare and stays: PREPARE changes neither FOUND_ROWS() nor
        // ROW_COUNT(), and its own diagnostics are on that connection.
        let kept_master = self.backends.keep == Some(Conn::Master);
        let tracker = self
            .run_on(route, payload, ResponseKind::Prepare, false, Some(id))
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

    /// COM_STMT_EXECUTE: planned and applied by the pipeline like a text
    /// statement, from the classification made at PREPARE.
    pub(super) async fn stmt_execute(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        let Some(stmt) = self.stmts.stmts.get(&id) else {
            return self
                .send_err(&error::unknown_stmt(id, "mysqld_stmt_execute"))
                .await;
        };
        if stmt.sharded.is_some() {
            return self.sharded_execute(id, payload).await;
        }
        let (class, sql, params, long_data) =
            (stmt.class.clone(), stmt.sql.clone(), stmt.params, stmt.long_data);
        let Some(layout) = prepared::execute_layout(payload, params) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        let exec = Exec::Prepared {
            id,
            payload,
            layout,
            long_data,
            variant: None,
            order: None,
        };
        self.statement(&class, &sql, Source::Prepared { params }, exec)
            .await
    }

    /// faults: `prepare_on` for an EXECUTE routed to `route`. On a replica,
    /// preparing is watched like a read (frontend::abandon): if the replica
    /// stops answering, or cannot prepare the statement, the EXECUTE goes to
    /// the master instead, since nothing has been sent to the client yet.
    pub(super) async fn prepare_for_execute(
        &mut self,
        id: u32,
        route: Route,
        variant: Option<&[u8]>,
    ) -> Result<(Route, u32), ErrPacket> {
        let first_byte = self.rt.config.backend.replica_read_timeout;
        let retryable = self.state.ro_tx.is_none();
        let Some(mut watch) =
            ReadWatch::for_conn(&self.health, route.conn, &self.proc.entry, first_byte, retryable)
        else {
            return self.prepare_on(id, route.conn, variant).await.map(|b| (route, b));
        };
        let on_replica = tokio::select! {
            r = self.prepare_on(id, route.conn, variant) => r,
            err = watch.abandoned(false) => Err(self.abandon_replica(route.conn, err)),
        };
        match on_replica {
            Ok(b) => Ok((route, b)),
            Err(e) if self.state.ro_tx.is_none() => {
                debug!(error = %e, "cannot prepare on the replica, executing on the master");
                self.backends.replica = None;
                let master = Route {
                    conn: Conn::Master,
                    reason: RouteReason::ReplicaFailed,
                };
                self.prepare_on(id, Conn::Master, variant)
                    .await
                    .map(|b| (master, b))
            }
            Err(e) => Err(e),
        }
    }

    /// The backend statement id of `id` on `conn`, preparing it there first
    /// if that connection has not got it yet. `variant`: the text to prepare
    /// instead of the statement's own (no client has it open, so the next
    /// checkout's sweep closes it on the server).
    async fn prepare_on(&mut self, id: u32, conn: Conn, variant: Option<&[u8]>) -> Result<u32, ErrPacket> {
        self.held(conn).await?;
        let own = &self
            .stmts
            .stmts
            .get(&id)
            .ok_or_else(|| error::unknown_stmt(id, "mysqld_stmt_execute"))?
            .sql;
        let sql: std::sync::Arc<[u8]> = variant.map_or_else(|| own.clone(), std::sync::Arc::from);
        // The label (a String, allocated per call) only on the way to an error.
        let Some(held) = slot_of(&mut self.backends.master, &mut self.backends.replica, conn) else {
            return Err(lost(&self.label(conn)));
        };
        let ctx = held.conn.stmt_context();
        if let Some(entry) = held.conn.state.stmts.get(ctx, &sql) {
            return Ok(entry.id);
        }
        let b = match held.conn.prepare(&sql).await {
            Ok(Ok(b)) => b,
            r => return error::answered(&self.label(conn), r),
        };
        for old in held.conn.state.stmts.insert(ctx, &sql, b) {
            let _ = held.conn.close_stmt(old).await;
        }
        Ok(b)
    }

    /// FETCH and RESET go where the statement last executed, if the session
    /// still holds that connection; otherwise there is no server-side state
    /// to act on (no cursor to fetch from, nothing to reset).
    pub(super) async fn stmt_follow(&mut self, payload: &[u8], kind: ResponseKind) -> CmdResult {
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
        let route = Route {
            conn,
            reason: RouteReason::Statement,
        };
        self.run_on_stmt(route, &packet, kind, false, None, Some((backend_id, id)))
            .await
            .map(drop)
    }

    pub(super) async fn stmt_long_data(&mut self, payload: &[u8]) -> CmdResult {
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
    pub(super) async fn stmt_close(&mut self, payload: &[u8]) -> CmdResult {
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
            if let Some(h) = self.slot(conn) {
                let ctx = h.conn.stmt_context();
                if let Some(backend_id) = h.conn.state.stmts.remove(ctx, &stmt.sql) {
                    let _ = h.conn.close_stmt(backend_id).await;
                }
            }
        }
        Ok(())
    }
}
