//! Prepared statements (COM_STMT_*): the client sees sluice's statement
//! ids; each statement is prepared lazily on every connection an EXECUTE is
//! routed to and kept in that connection's statement cache, shared with the
//! sessions that borrow it later (see `prepared.rs` for the registry and
//! packet rewriting, `backend::state` for the cache).

use tracing::debug;

use crate::error;
use crate::protocol::packets::ErrPacket;
use crate::router::plan::RouteReason;
use crate::router::route::Source;

use crate::frontend::abandon::ReadWatch;

use crate::frontend::prepared::{self, Conn};
use crate::frontend::session::backends::lost;
use crate::frontend::session::gate::Route;
use crate::frontend::session::pipeline::Exec;
use crate::frontend::session::{CmdResult, Session};

impl Session {
    /// COM_STMT_EXECUTE: planned and applied by the pipeline like a text
    /// statement, from the classification made at PREPARE.
    pub(in crate::frontend::session) async fn stmt_execute(&mut self, payload: &[u8]) -> CmdResult {
        let Some(id) = prepared::stmt_id(payload) else {
            return self.send_err(&error::malformed_packet()).await;
        };
        let Some(stmt) = self.stmts.stmts.get(&id) else {
            return self
                .send_err(&error::unknown_stmt(id, "mysqld_stmt_execute"))
                .await;
        };
        let (class, sql, params, long_data) =
            (stmt.class.clone(), stmt.sql.clone(), stmt.params, stmt.long_data);
        let src = Source::Prepared { params };
        if stmt.sharded.is_some() {
            return self
                .statement(&class, &sql, src, Exec::Sharded { id, payload })
                .await;
        }
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
        self.statement(&class, &sql, src, exec).await
    }

    /// faults: `prepare_on` for an EXECUTE routed to `route`. On a replica,
    /// preparing is watched like a read (frontend::abandon): if the replica
    /// stops answering, or cannot prepare the statement, the EXECUTE goes to
    /// the master instead, since nothing has been sent to the client yet.
    pub(in crate::frontend::session) async fn prepare_for_execute(
        &mut self,
        id: u32,
        route: Route,
        variant: Option<&[u8]>,
    ) -> Result<(Route, u32), ErrPacket> {
        let first_byte = self.rt.config.backend.replica_read_timeout;
        let retryable = self.state.ro_tx().is_none();
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
            Err(e) if self.state.ro_tx().is_none() => {
                debug!(error = %e, "cannot prepare on the replica, executing on the master");
                self.backends.replica = None;
                let master = Route::master(RouteReason::ReplicaFailed);
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
    pub(in crate::frontend::session) async fn prepare_on(
        &mut self,
        id: u32,
        conn: Conn,
        variant: Option<&[u8]>,
    ) -> Result<u32, ErrPacket> {
        self.held(conn).await?;
        let own = &self
            .stmts
            .stmts
            .get(&id)
            .ok_or_else(|| error::unknown_stmt(id, "mysqld_stmt_execute"))?
            .sql;
        let sql: std::sync::Arc<[u8]> = variant.map_or_else(|| own.clone(), std::sync::Arc::from);
        // The label (a String, allocated per call) only on the way to an error.
        let Some(held) = self.backends.slot(conn) else {
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
}
