//! The one statement pipeline: every statement a client runs, whatever
//! command carried it, goes through
//! `classify → Plan (router::route) → shards? → gate → ready → execute → apply`.
//!
//! - COM_QUERY text and COM_STMT_EXECUTE of a prepared statement share it;
//!   the SQL-level dynamic statements (`EXECUTE IMMEDIATE`, `PREPARE`,
//!   `EXECUTE`, `CALL`, compound statements) are classified as opaque by the
//!   router: master, counted as writing everything, and the session pinned
//!   to its connection until reset.
//! - Statements on sharded tables are planned by `crate::shard` right after
//!   the router's Plan (`sharded/`): their parts are routed by the same gate
//!   (`gate::route_parts`: freshness, pauses), and a sharded write's effects
//!   are applied by the same `apply` with the same Plan.
//! - [`SessionState::apply`](super::state::SessionState::apply) is the only
//!   place where a statement's effects reach the session, decided from the
//!   Plan and the answer ([`Outcome`]); the work they ask for is done by
//!   `followups.rs`. (A COM_STMT_PREPARE runs nothing, but preparing may
//!   make user variables: [`Session::apply_prepare`].)

use std::sync::Arc;

use crate::config::FreshnessMode;
use crate::protocol::response::ResponseKind;
use crate::router::classify::{self, Classified};
use crate::router::memo;
use crate::router::route::{self, Source};

use super::prepared::{self, Conn};
use super::sharded::{self, Sharding, Shards};
use super::state::Outcome;
use super::{Closed, CmdResult, Session};
use crate::router::plan::Plan;

/// How a planned statement is sent to the backend.
#[derive(Clone, Copy)]
pub(super) enum Exec<'p> {
    /// A COM_QUERY packet, sent as it came.
    Text { payload: &'p [u8] },
    /// A command that is not a statement, answered as `kind` (exec.rs `run_on`).
    Command {
        payload: &'p [u8],
        kind: ResponseKind,
        prepare_id: Option<u32>,
        stmt_ids: Option<(u32, u32)>,
    },
    /// A COM_STMT_EXECUTE of client statement `id` on sharded tables:
    /// planned with its parameters at the pipeline's first step (`sharded/`).
    Sharded { id: u32, payload: &'p [u8] },
    /// A COM_STMT_EXECUTE of client statement `id`.
    Prepared {
        id: u32,
        payload: &'p [u8],
        layout: prepared::ExecuteLayout,
        /// SEND_LONG_DATA went to the master: so must the EXECUTE.
        long_data: bool,
        /// The text to prepare and run instead of the statement's own (its
        /// ROW_COUNT()/FOUND_ROWS() replaced by the session's values).
        variant: Option<&'p [u8]>,
        /// The client's parameters in the order `variant` binds them, when
        /// that is not their own order (thread_ids::rewrite_prepared).
        order: Option<&'p [u16]>,
    },
}

impl Session {
    /// Classify a statement under the session's sql_mode when it is known
    /// (it changes where strings end), else under both readings; a text
    /// of a shape seen before is answered by the memo (`router::memo`:
    /// on the texts it serves, the sql_mode changes nothing).
    pub(super) fn classify(&self, sql: &[u8]) -> Arc<Classified> {
        let lex = self.state.lex();
        memo::classified(sql, |sql| match lex {
            Some(opts) => classify::classify_in_mode(sql, opts),
            None => classify::classify_any_mode(sql),
        })
    }

    /// Run one statement through the pipeline. `sql` is its text (for a
    /// prepared statement, the text it was prepared with).
    pub(super) async fn statement(
        &mut self,
        c: &Classified,
        sql: &[u8],
        src: Source,
        exec: Exec<'_>,
    ) -> CmdResult {
        if std::mem::take(&mut self.backends.warnings_elsewhere)
            && c.refers_to_previous
            && sharded::asks_for_warnings(sql)
        {
            return self.send_err(&sharded::warnings_not_kept()).await;
        }
        let plan = route::plan(c, sql, src, &self.state.view());
        match self.sharding(sql, &exec).await? {
            Sharding::No => {}
            Sharding::Answered => return Ok(()),
            // Boxed: the sharded path's future (scatter, merge) is large.
            Sharding::On(shards) => return Box::pin(self.on_shards(&plan, shards, c, sql)).await,
        }
        // Sub-tables in other backend groups: one writing group per transaction.
        if self.groups_before(c).await? {
            return Ok(());
        }
        let (route, provisional) = match self.route_statement(&plan, c, &exec).await {
            Ok(r) => r,
            Err(e) => return self.send_err(&e).await,
        };
        let on_master = route.conn == Conn::Master;
        // A statement may also commit implicitly (SET autocommit=1, DDL, BEGIN
        // inside a transaction): anything on the master while in a
        // transaction may make writes visible, so its answer waits for the
        // causal snapshot (released below once it is decided).
        let was_in_tx = self.in_transaction();
        let was_in_server_tx = self.state.in_server_transaction();
        let hold = on_master && (plan.is_write || was_in_tx) && self.monitor.mode == FreshnessMode::Causal;
        if provisional.is_none() {
            self.shared.metrics.route(on_master, route.reason);
        }
        let ready = match self.ready(&plan, c, sql, route.conn, &exec).await {
            Ok(r) => r,
            Err(e) => return self.send_err(&e).await,
        };
        let values = self.session_values(c, sql, src, &exec, ready);
        let kept = self.backends.keep;
        let ran = self.execute(route, values.over(exec), hold, provisional).await?;
        self.groups_after(&c.kind, ran.as_ref().is_some_and(|(t, _)| !t.error))
            .await;
        let Some((tracker, conn)) = ran else {
            self.state.unanswered();
            return Ok(());
        };
        let out = Outcome {
            conn,
            conn_uid: self.gen_of(conn),
            answer: &tracker,
            was_in_server_tx,
            kept,
        };
        self.apply(&plan, &out, sql, &[0]).await;
        if hold {
            self.client.flush().await.map_err(|_| Closed)?;
        }
        Ok(())
    }

    /// The rest of the pipeline for a statement on sharded tables: its
    /// parts run where the gate routes them (`sharded/`), and a write's
    /// effects are applied as any other statement's.
    async fn on_shards(
        &mut self,
        plan: &Plan<'_>,
        shards: Box<Shards>,
        c: &Classified,
        sql: &[u8],
    ) -> CmdResult {
        let was_in_server_tx = self.state.in_server_transaction();
        let Some((answer, groups)) = self.run_shards(shards, c, sql).await? else {
            return Ok(());
        };
        let out = Outcome {
            conn: Conn::Master,
            conn_uid: self.gen_of(Conn::Master),
            answer: &answer,
            was_in_server_tx,
            kept: None,
        };
        self.apply(plan, &out, sql, &groups).await;
        self.client.flush().await.map_err(|_| Closed)
    }
}
