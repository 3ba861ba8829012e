//! Prepared statements (COM_STMT_*): the client sees sluice's statement
//! ids; each statement is prepared lazily on every connection an EXECUTE is
//! routed to (see `prepared.rs` for the registry and packet rewriting).

use tracing::debug;

use crate::error;
use crate::protocol::packets::ErrPacket;
use crate::protocol::response::ResponseKind;
use crate::router::classify::{self, Kind};

use crate::frontend::abandon::ReadWatch;

use super::prepared::{self, Conn, Stmt};
use super::{lost, Closed, CmdResult, Route, Session};

impl Session {
    pub(super) async fn stmt_prepare(&mut self, payload: &[u8]) -> CmdResult {
        if let Some(e) = self.sharded_prepare_refusal(&payload[1..]) {
            return self.send_err(&e).await;
        }
        let sql = payload[1..].to_vec();
        let c = classify::classify_any_mode(&sql);
        let read = c.kind == Kind::Read && c.force_master.is_none();
        let route = Route {
            conn: Conn::Master,
            reason: "prepare",
        };
        // The id is reserved now so the relay can put it in the response.
        let id = self.stmts.insert(Stmt::new(sql, read, c.tables.clone(), 0));
        let tracker = self
            .run_on(route, payload, ResponseKind::Prepare, false, Some(id))
            .await?;
        match tracker.and_then(|t| t.prepared) {
            Some(info) => {
                let gen = self.master.as_ref().map(|m| m.gen).unwrap_or(0);
                if let Some(s) = self.stmts.stmts.get_mut(&id) {
                    s.params = info.params;
                    s.ids.insert(Conn::Master, (gen, info.stmt_id));
                }
            }
            None => {
                self.stmts.stmts.remove(&id);
            }
        }
        Ok(())
    }

    pub(super) async fn stmt_execute(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        let Some(stmt) = self.stmts.stmts.get(&id) else {
            return self
                .send_err(&error::unknown_stmt(id, "mysqld_stmt_execute"))
                .await;
        };
        let (read, long_data, tables, params) = (stmt.read, stmt.long_data, stmt.tables.clone(), stmt.params);
        let route = if read && !long_data {
            self.route_read(tables.as_deref()).await
        } else {
            Route {
                conn: Conn::Master,
                reason: if long_data { "long_data" } else { "write" },
            }
        };
        self.shared
            .metrics
            .route(route.conn == Conn::Master, route.reason);
        let Some(layout) = prepared::execute_layout(payload, params) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        // faults: see prepare_for_execute.
        let (route, backend_id) = match self.prepare_for_execute(id, route).await {
            Ok(r) => r,
            Err(e) => return self.send_err(&e).await,
        };
        let gen = self.gen_of(route.conn);
        let Some(stmt) = self.stmts.stmts.get_mut(&id) else {
            return Ok(());
        };
        let mut packet = if let (Some(at), false) = (layout.bound_at, layout.bound) {
            let sent = stmt.types_sent.contains(&(route.conn, gen));
            match (&stmt.types, sent) {
                (Some(types), false) => prepared::inject_types(payload, at, types),
                _ => payload.to_vec(),
            }
        } else {
            payload.to_vec()
        };
        if layout.bound {
            stmt.types = prepared::bound_types(payload, &layout, params);
            stmt.types_sent.clear();
        }
        if layout.bound_at.is_some() && !stmt.types_sent.contains(&(route.conn, gen)) {
            stmt.types_sent.push((route.conn, gen));
        }
        stmt.long_data = false;
        stmt.last_exec = Some((route.conn, gen));
        prepared::set_stmt_id(&mut packet, backend_id);
        let hold = !read && self.monitor.mode == crate::config::FreshnessMode::Causal;
        let tracker = self
            .run_on_stmt(
                route,
                &packet,
                ResponseKind::Execute,
                hold,
                None,
                Some((backend_id, id)),
            )
            .await?;
        if tracker.is_some() && !read {
            if !self.in_transaction() {
                self.monitor.after_write().await;
            }
            if hold {
                self.client.flush().await.map_err(|_| Closed)?;
            }
        }
        Ok(())
    }

    /// faults: `prepare_on` for an EXECUTE routed to `route`. On a replica,
    /// preparing is watched like a read (frontend::abandon): if the replica
    /// stops answering, or cannot prepare the statement, the EXECUTE goes to
    /// the master instead, since nothing has been sent to the client yet.
    async fn prepare_for_execute(&mut self, id: u32, route: Route) -> Result<(Route, u32), ErrPacket> {
        let first_byte = self.shared.config.backend.replica_read_timeout;
        let retryable = self.ro_tx.is_none();
        let Some(mut watch) = ReadWatch::for_conn(&self.monitor, route.conn, first_byte, retryable) else {
            return self.prepare_on(id, route.conn).await.map(|b| (route, b));
        };
        let on_replica = tokio::select! {
            r = self.prepare_on(id, route.conn) => r,
            err = watch.abandoned(false) => Err(self.abandon_replica(route.conn, err)),
        };
        match on_replica {
            Ok(b) => Ok((route, b)),
            Err(e) if self.ro_tx.is_none() => {
                debug!(error = %e, "cannot prepare on the replica, executing on the master");
                self.replica = None;
                let master = Route {
                    conn: Conn::Master,
                    reason: "replica_failed",
                };
                self.prepare_on(id, Conn::Master).await.map(|b| (master, b))
            }
            Err(e) => Err(e),
        }
    }

    /// The backend statement id of `id` on `conn`, preparing it there first
    /// if needed.
    async fn prepare_on(&mut self, id: u32, conn: Conn) -> Result<u32, ErrPacket> {
        self.held(conn).await?;
        let gen = self.gen_of(conn);
        let stmt = self
            .stmts
            .stmts
            .get(&id)
            .ok_or_else(|| error::unknown_stmt(id, "mysqld_stmt_execute"))?;
        if let Some(b) = stmt.id_on(conn, gen) {
            return Ok(b);
        }
        let sql = stmt.sql.clone();
        let label = self.label(conn);
        let held = self.slot(conn).ok_or_else(|| lost(&label))?;
        let b = match held.conn.prepare(&sql).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Err(e),
            Err(e) => return Err(error::backend_error_packet(&label, "", &e)),
        };
        if let Some(s) = self.stmts.stmts.get_mut(&id) {
            s.ids.insert(conn, (gen, b));
        }
        Ok(b)
    }

    /// FETCH and RESET go where the statement last executed.
    pub(super) async fn stmt_follow(&mut self, payload: &[u8], kind: ResponseKind) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        let Some(stmt) = self.stmts.stmts.get(&id) else {
            let during = if kind == ResponseKind::Fetch {
                "mysqld_stmt_fetch"
            } else {
                "mysqld_stmt_reset"
            };
            return self.send_err(&error::unknown_stmt(id, during)).await;
        };
        let conn = match stmt.last_exec {
            Some((c, g)) if self.gen_of(c) == g => c,
            _ => Conn::Master,
        };
        if kind == ResponseKind::Single {
            if let Some(s) = self.stmts.stmts.get_mut(&id) {
                s.long_data = false;
            }
        }
        let backend_id = match self.prepare_on(id, conn).await {
            Ok(b) => b,
            Err(e) => return self.send_err(&e).await,
        };
        let mut packet = payload.to_vec();
        prepared::set_stmt_id(&mut packet, backend_id);
        let route = Route {
            conn,
            reason: "statement",
        };
        self.run_on_stmt(route, &packet, kind, false, None, Some((backend_id, id)))
            .await
            .map(drop)
    }

    pub(super) async fn stmt_long_data(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return Ok(());
        };
        if !self.stmts.stmts.contains_key(&id) {
            return Ok(()); // no response is defined; the EXECUTE will fail
        }
        let Ok(backend_id) = self.prepare_on(id, Conn::Master).await else {
            return Ok(());
        };
        if let Some(s) = self.stmts.stmts.get_mut(&id) {
            s.long_data = true;
        }
        let mut packet = payload.to_vec();
        prepared::set_stmt_id(&mut packet, backend_id);
        if let Some(m) = self.master.as_mut() {
            let mut seq = 0;
            if m.conn.stream.write_packet(&mut seq, &packet).await.is_err() {
                m.conn.broken = true;
            }
        }
        Ok(())
    }

    pub(super) async fn stmt_close(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return Ok(());
        };
        let Some(stmt) = self.stmts.stmts.remove(&id) else {
            return Ok(());
        };
        for (conn, (gen, backend_id)) in stmt.ids {
            if self.gen_of(conn) != gen {
                continue;
            }
            if let Some(h) = self.slot(conn) {
                let _ = h.conn.close_stmt(backend_id).await;
            }
        }
        Ok(())
    }
}
