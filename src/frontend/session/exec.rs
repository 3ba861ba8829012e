//! Running a routed statement: `run_on_any` sends one command to its
//! connection and relays the answer; a read on a replica whose answer was
//! discarded (strict mode) or that failed before the client saw any of it
//! comes back `Stale`, and the retry loop runs it again on the master.

use crate::backend::BackendError;
use crate::error;
use crate::freshness::monitor::{Fallback, Provisional};
use crate::frontend::abandon::ReadWatch;
use crate::frontend::prepared::{self, Conn};
use crate::frontend::relay::{self, RelayError};
use crate::frontend::session::backends::lost;
use crate::frontend::session::gate::Route;
use crate::frontend::session::pipeline::Exec;
use crate::frontend::session::{Closed, Session, Stale};
use crate::protocol::response::{ResponseKind, ResponseTracker};
use tracing::{debug, warn};

impl Session {
    /// Run one command (not a statement: those go through the pipeline)
    /// on the routed backend and relay its response. `Ok(None)`: the
    /// command failed and the client got an error. `stmt_ids`: (backend
    /// id, client id) of a COM_STMT_* command.
    pub(super) async fn run_on(
        &mut self,
        route: Route,
        payload: &[u8],
        kind: ResponseKind,
        prepare_id: Option<u32>,
        stmt_ids: Option<(u32, u32)>,
    ) -> Result<Option<ResponseTracker>, Closed> {
        debug_assert!(kind != ResponseKind::Execute, "EXECUTE goes through the pipeline");
        let cmd = Exec::Command {
            payload,
            kind,
            prepare_id,
            stmt_ids,
        };
        Ok(self.execute(route, cmd, false, None).await?.map(|(t, _)| t))
    }

    /// Send `exec` to `route`'s connection and relay the answer: the one
    /// retry loop. `None`: it failed and the client got an error. A read
    /// sent to a replica before strict mode's probe answered
    /// (`provisional`, see `freshness::strict`) reaches the client only if
    /// the replica proves fresh; a discarded answer, or a read that failed
    /// on a replica before the client saw any of it, runs again on the
    /// master (an EXECUTE is prepared there first if need be).
    pub(super) async fn execute(
        &mut self,
        mut route: Route,
        exec: Exec<'_>,
        hold: bool,
        mut provisional: Option<Provisional>,
    ) -> Result<Option<(ResponseTracker, Conn)>, Closed> {
        loop {
            let checked = provisional.is_some();
            let ran = match exec {
                Exec::Text { payload } | Exec::Command { payload, .. } => {
                    let (kind, prepare_id, stmt_ids) = match exec {
                        Exec::Command {
                            kind,
                            prepare_id,
                            stmt_ids,
                            ..
                        } => (kind, prepare_id, stmt_ids),
                        _ => (ResponseKind::Query, None, None),
                    };
                    let p = provisional.take();
                    let ran = self
                        .run_on_any(route, payload, kind, hold, prepare_id, stmt_ids, p)
                        .await?;
                    ran.map(|t| t.map(|t| (t, self.backends.last_conn)))
                }
                Exec::Prepared {
                    id,
                    payload,
                    layout,
                    variant,
                    order,
                    ..
                } => {
                    self.execute_prepared_on(
                        id,
                        payload,
                        layout,
                        (variant, order),
                        route,
                        hold,
                        provisional.take(),
                    )
                    .await?
                }
                // Run on its sub-tables at the pipeline's first step, never here.
                Exec::Sharded { .. } => Ok(None),
            };
            let reason = match (ran, &exec) {
                (Ok(done), _) => return Ok(done),
                // The statement's id on the master may differ: prepared
                // there first if need be.
                (Err(Stale), Exec::Prepared { .. }) => match checked {
                    true => Fallback::Stale.reason(),
                    false => Fallback::Down.reason(),
                },
                (Err(Stale), _) => {
                    debug!("strict: replica behind the master's position, reading from the master");
                    route.reason
                }
            };
            // The replica may lack a write the read must see (its answer
            // was discarded), or failed: the master answers instead.
            route = Route::master(reason);
        }
    }

    /// Send one command to `route`'s connection and relay its answer; a
    /// provisional answer (strict mode) that the check refuses is
    /// discarded: `Err(Stale)`, as is a read on a replica that failed
    /// before the client saw any of it when its caller must rerun it (an
    /// EXECUTE, whose payload names the replica's statement id).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_on_any(
        &mut self,
        route: Route,
        payload: &[u8],
        kind: ResponseKind,
        hold: bool,
        prepare_id: Option<u32>,
        stmt_ids: Option<(u32, u32)>,
        mut provisional: Option<Provisional>,
    ) -> Result<Result<Option<ResponseTracker>, Stale>, Closed> {
        let mut conn = route.conn;
        let rerunnable = matches!(kind, ResponseKind::Query | ResponseKind::Execute);
        if provisional.is_some() && (!rerunnable || self.state.ro_tx().is_some() || conn == Conn::Master) {
            // Only a plain read can be rerun: decide before sending it.
            provisional = None;
            self.shared.metrics.route(conn == Conn::Master, route.reason);
        }
        loop {
            // faults: a read on a replica gives up when the replica stops
            // answering, while connecting or syncing as well as while waiting
            // for its answer (see frontend::abandon); the existing fallbacks
            // below then retry it on the master or report it.
            let first_byte = self.rt.config.backend.replica_read_timeout;
            // (An EXECUTE too: its caller prepares it on the master.)
            let retryable =
                matches!(kind, ResponseKind::Query | ResponseKind::Execute) && self.state.ro_tx().is_none();
            let mut watch = ReadWatch::for_conn(&self.health, conn, &self.proc.entry, first_byte, retryable);
            let ready = match watch.as_mut() {
                None => self.held(conn).await,
                Some(w) => tokio::select! {
                    r = self.held(conn) => r,
                    err = w.abandoned(false) => Err(self.abandon_replica(conn, err)),
                },
            };
            if ready.is_err() && provisional.take().is_some() {
                // Counted as the plain gate counts it (the replica chosen).
                self.shared.metrics.route(false, route.reason);
            }
            if let Err(e) = ready {
                if let Conn::Replica(_) = conn {
                    if self.state.ro_tx().is_none() {
                        debug!(error = %e, "replica unusable, reading from the master");
                        self.backends.replica = None;
                        if kind == ResponseKind::Execute {
                            // The payload names the replica's statement id:
                            // the caller prepares it on the master.
                            return Ok(Err(Stale));
                        }
                        conn = Conn::Master;
                        continue;
                    }
                }
                self.send_err(&e).await?;
                return Ok(Ok(None));
            }
            // (`held` above made sure the connection is there.)
            self.backends.keep = None;
            let Some(h) = self.backends.slot(conn) else {
                return Ok(Ok(None));
            };
            h.conn.dirty = true;
            let opts = relay::Opts {
                kind,
                deprecate_eof: h.conn.deprecate_eof(),
                hold_final: hold,
                prepare_id,
                stmt_ids,
            };
            let started = std::time::Instant::now(); // metrics: command latency, slow-query log
                                                     // hook(abandon, kill): the relay cancels the statement on the
                                                     // backend when the client leaves or the session is killed.
            let guard = super::backends::pool_for(&self.rt, conn).map(|pool| relay::Guard {
                entry: &self.proc,
                pool,
                thread: h.conn.thread_id,
                finish_if_gone: conn == Conn::Master
                    && h.conn.status & crate::protocol::consts::SERVER_STATUS_AUTOCOMMIT != 0
                    && !h.conn.in_transaction(),
            });
            let mut verdict = None;
            let checked = provisional.is_some();
            let relayed = match provisional.take() {
                None => relay::command(
                    &mut self.client,
                    &mut h.conn.stream,
                    payload,
                    opts,
                    watch.as_mut(),
                    guard.as_ref(),
                )
                .await
                .map(Some),
                Some(p) => {
                    let monitor = &self.monitor;
                    let arrival = relay::Arrival::new();
                    // (Boxed: the probe's future stays out of every
                    // statement's future.)
                    let check = Box::pin(async {
                        let fresh = monitor.verify(&p, arrival.wait()).await;
                        verdict = Some(fresh);
                        fresh
                    });
                    relay::command_checked(
                        &mut self.client,
                        &mut h.conn.stream,
                        payload,
                        opts,
                        watch.as_mut(),
                        guard.as_ref(),
                        &arrival,
                        check,
                    )
                    .await
                }
            };
            if checked {
                match verdict {
                    Some(false) => self.shared.metrics.route(true, Fallback::Stale.reason()),
                    // (None: the send failed before the check; counted as
                    // the plain gate counts it.)
                    Some(true) | None => self.shared.metrics.route(false, route.reason),
                }
            }
            match relayed {
                Ok(None) => return Ok(Err(Stale)),
                Ok(Some(tracker)) => {
                    h.conn.note_status(tracker.last_status); // hook(abandon): pool's check
                    self.backends.last_conn = conn;
                    if tracker.error || tracker.warnings {
                        // SHOW WARNINGS must find them here.
                        self.backends.keep = Some(conn);
                    }
                    // metrics: latency per backend, server errors, slow-query log
                    let slow = self.rt.config.log.slow_query;
                    self.shared
                        .metrics
                        .command_done(0, conn, started, tracker.error, payload, slow);
                    self.shared.metrics.relayed_bytes_out(tracker.relayed_bytes);
                    if conn == Conn::Master {
                        if let Some(st) = tracker.last_status {
                            self.state.master_status(st);
                        }
                    }
                    return Ok(Ok(Some(tracker)));
                }
                Err(RelayError::Client(e)) => {
                    // The backend is mid-response: it cannot serve anyone else.
                    h.conn.broken = true;
                    debug!(error = %e, "client gone during a response");
                    return Err(Closed);
                }
                Err(RelayError::Backend {
                    err,
                    relayed,
                    last_seq,
                }) => {
                    h.conn.broken = true;
                    let label = self.label(conn);
                    warn!(backend = %label, error = %err, "backend failed during a command");
                    if let (Conn::Replica(_), false, None) = (conn, relayed, self.state.ro_tx()) {
                        if kind == ResponseKind::Query {
                            self.backends.replica = None;
                            conn = Conn::Master;
                            continue;
                        }
                        if kind == ResponseKind::Execute {
                            // A read the client saw nothing of (a discarded
                            // answer too big to drain among them): rerun on
                            // the master, where the caller prepares it.
                            self.backends.replica = None;
                            return Ok(Err(Stale));
                        }
                    }
                    if conn == Conn::Master {
                        self.backends.master = None;
                        // The server's transaction is gone with the connection.
                        self.state.master_lost();
                    } else {
                        self.backends.replica = None;
                        self.state.replica_lost();
                    }
                    if relayed {
                        self.reply_seq = last_seq.wrapping_add(1);
                    }
                    let e = error::backend_error_packet(&label, "", &BackendError::Protocol(err));
                    self.send_err(&e).await?;
                    return Ok(Ok(None));
                }
            }
        }
    }

    /// One try of [`Session::execute_prepared`] on `route`'s connection.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn execute_prepared_on(
        &mut self,
        id: u32,
        payload: &[u8],
        layout: prepared::ExecuteLayout,
        (variant, order): (Option<&[u8]>, Option<&[u16]>),
        route: Route,
        hold: bool,
        mut provisional: Option<Provisional>,
    ) -> Result<Result<Option<(ResponseTracker, Conn)>, Stale>, Closed> {
        // faults: see prepare_for_execute.
        let prepared = self.prepare_for_execute(id, route, variant).await;
        let moved = !matches!(&prepared, Ok((r, _)) if r.conn == route.conn);
        if provisional.is_some() && (moved || variant.is_some() || order.is_some()) {
            // Not the replica chosen (it failed, or the statement could not
            // be prepared there), or a variant made for this execution:
            // counted as the plain gate counts it, nothing to check.
            provisional = None;
            let conn = prepared.as_ref().map_or(route.conn, |(r, _)| r.conn);
            self.shared.metrics.route(conn == Conn::Master, route.reason);
        }
        let (route, backend_id) = match prepared {
            Ok(r) => r,
            Err(e) => {
                self.send_err(&e).await?;
                return Ok(Ok(None));
            }
        };
        let uid = self.gen_of(route.conn);
        let Some(stmt) = self.stmts.stmts.get_mut(&id) else {
            return Ok(Ok(None));
        };
        if layout.bound {
            // Most clients send the same types with every EXECUTE: copied
            // only when they change.
            let sent = prepared::bound_types(payload, &layout, stmt.params);
            if stmt.types.as_deref() != sent {
                stmt.types = sent.map(<[u8]>::to_vec);
            }
        }
        stmt.long_data = false;
        stmt.last_exec = Some((route.conn, uid));
        let sql: std::sync::Arc<[u8]> = variant.map_or_else(|| stmt.sql.clone(), std::sync::Arc::from);
        let types = stmt.types.as_deref();
        let rebound =
            order.map(|o| crate::frontend::params::rebind(payload, usize::from(stmt.params), types, o));
        // The server runs an EXECUTE without types with the types it last
        // received for this statement, possibly from another session: send
        // this session's whenever they differ.
        // (The label only for the error: it is a String, allocated per call.)
        let Some(h) = self.backends.slot(route.conn) else {
            let e = lost(&self.label(route.conn));
            self.send_err(&e).await?;
            return Ok(Ok(None));
        };
        let ctx = h.conn.stmt_context();
        let cached = h.conn.state.stmts.get(ctx, &sql);
        let mut packet = match (rebound, layout.bound_at, layout.bound, cached) {
            // A variant that binds the parameters in another order: every
            // EXECUTE of it carries its types.
            (Some(Ok(p)), ..) => p,
            (Some(Err(_)), ..) => {
                self.send_err(&crate::error::malformed_packet()).await?;
                return Ok(Ok(None));
            }
            (None, Some(_), true, Some(entry)) => {
                if entry.types.as_deref() != types {
                    entry.types = types.map(<[u8]>::to_vec);
                }
                payload.to_vec()
            }
            (None, Some(at), false, Some(entry)) if types.is_some() && entry.types.as_deref() != types => {
                let p = prepared::inject_types(payload, at, types.unwrap_or_default());
                entry.types = types.map(<[u8]>::to_vec);
                p
            }
            _ => payload.to_vec(),
        };
        prepared::set_stmt_id(&mut packet, backend_id);
        if self.backends.cursor.is_some_and(|(c, _)| c == id) {
            // A new EXECUTE closes the statement's cursor on the server.
            self.backends.cursor = None;
        }
        let tracker = match self
            .run_on_any(
                route,
                &packet,
                ResponseKind::Execute,
                hold,
                None,
                Some((backend_id, id)),
                provisional,
            )
            .await?
        {
            Ok(t) => t,
            Err(Stale) => return Ok(Err(Stale)),
        };
        let Some(tracker) = tracker else {
            return Ok(Ok(None));
        };
        if layout.cursor_flags != 0
            && tracker
                .last_status
                .is_some_and(|s| s & crate::protocol::consts::SERVER_STATUS_CURSOR_EXISTS != 0)
        {
            // Rows come with COM_STMT_FETCH on this connection.
            self.backends.cursor = Some((id, route.conn));
        }
        Ok(Ok(Some((tracker, self.backends.last_conn))))
    }
}
