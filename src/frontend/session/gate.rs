//! The freshness gate: a statement's `Plan`, the session's state and the
//! replicas' health become a [`Route`] (a connection and the reason, which
//! is the route metric's label).

use crate::freshness::monitor::{Fallback, GroupMonitor, Provisional};
use crate::freshness::state::Scope;
use crate::frontend::prepared::Conn;
use crate::frontend::session::backends::lost;
use crate::frontend::session::pipeline::Exec;
use crate::frontend::session::state::SessionState;
use crate::frontend::session::Session;
use crate::protocol::packets::ErrPacket;
use crate::router::classify::{Classified, Kind};
use crate::router::plan::{Plan, ReadSet, RouteReason, Target};
use crate::router::route::{self};

impl Session {
    /// Where a statement runs: with long data on the master (it went
    /// there); else a fresh replica or the master, as the gate decides.
    ///
    /// hook(strict): a read that can be rerun may run on a replica while
    /// strict mode's master probe is under way (freshness::strict); its
    /// route is counted once its answer is released or rerun (exec.rs).
    /// A text read, or an EXECUTE that opens no cursor (a cursor's rows
    /// are fetched later, from that connection).
    pub(super) async fn route_statement(
        &mut self,
        plan: &Plan<'_>,
        c: &Classified,
        exec: &Exec<'_>,
    ) -> Result<(Route, Option<Provisional>), ErrPacket> {
        let rerunnable = match exec {
            Exec::Text { .. } => true,
            Exec::Prepared { layout, .. } => layout.cursor_flags == 0,
            Exec::Command { .. } | Exec::Sharded { .. } => false,
        };
        if matches!(exec, Exec::Prepared { long_data: true, .. }) {
            let route = Route::master(RouteReason::LongData);
            return Ok((route, None));
        }
        if rerunnable && plan.target == Target::FreshReplica {
            return Ok(self.pick_replica_overlapped(plan.read_set.tables()).await);
        }
        Ok((self.gate(plan, c).await?, None))
    }

    /// The freshness gate: resolve the plan's target to a connection.
    pub(super) async fn gate(&mut self, plan: &Plan<'_>, c: &Classified) -> Result<Route, ErrPacket> {
        Ok(match plan.target {
            Target::Master => Route::master(plan.reason),
            Target::Replica(i) => {
                if c.kind == Kind::Read && !self.read_only_tx_fresh(i, plan).await? {
                    // The replica's snapshot would miss writes this read must
                    // see: the transaction has read nothing that binds it
                    // (REPEATABLE READ before its first read), or every
                    // statement sees the latest commits anyway (READ
                    // COMMITTED), so it moves to the master unchanged.
                    self.move_read_only_tx_to_master().await?;
                    return Ok(Route::master(RouteReason::StaleReplica));
                }
                Route::new(Conn::Replica(i), plan.reason)
            }
            Target::Previous => {
                // A replica that answers about its previous statement must
                // also be fresh for the tables this statement reads.
                if let (Conn::Replica(i), true) = (self.backends.last_conn, c.previous_reads_tables) {
                    if self.pick_for(plan.read_set.tables(), Some(i)).await != Ok(i) {
                        return Ok(Route::master(RouteReason::StaleReplica));
                    }
                }
                Route::new(self.backends.last_conn, plan.reason)
            }
            Target::FreshReplica => self.pick_replica(plan.read_set.tables()).await,
        })
    }

    /// A read inside the read-only transaction on replica `i`: is the
    /// replica fresh enough for it? Under REPEATABLE READ the snapshot is
    /// taken at the first read, so that read must find every write
    /// committed before it (all tables: later reads see the same snapshot);
    /// under READ COMMITTED each statement must find the writes committed
    /// before it, for the tables it reads.
    pub(super) async fn read_only_tx_fresh(&mut self, i: usize, plan: &Plan<'_>) -> Result<bool, ErrPacket> {
        let rc = match self.state.read_committed() {
            Some(rc) => rc,
            None => self.learn_isolation(Conn::Replica(i)).await?,
        };
        if !rc && self.state.ro_checked() {
            return Ok(true);
        }
        let tables = match (rc, plan.read_set) {
            (true, ReadSet::Tables(t)) => Some(t),
            _ => None,
        };
        let fresh = self.pick_for(tables, Some(i)).await == Ok(i);
        if fresh && !rc {
            self.state.ro_snapshot_checked();
        }
        Ok(fresh)
    }

    /// The session's isolation level, as its connection `conn` reports it.
    pub(super) async fn learn_isolation(&mut self, conn: Conn) -> Result<bool, ErrPacket> {
        let label = self.label(conn);
        let h = self.backends.slot(conn).ok_or_else(|| lost(&label))?;
        let level = crate::error::answered(
            &label,
            h.conn.session_query_text("SELECT @@session.tx_isolation").await,
        )?
        .unwrap_or_default();
        let rc =
            level.eq_ignore_ascii_case("READ-COMMITTED") || level.eq_ignore_ascii_case("READ-UNCOMMITTED");
        self.state.learned_isolation(rc);
        Ok(rc)
    }

    /// End the read-only transaction on its replica (it has read nothing
    /// that binds it) and open the same one on the master.
    pub(super) async fn move_read_only_tx_to_master(&mut self) -> Result<(), ErrPacket> {
        if let Some((_, mut h)) = self.backends.replica.take() {
            if !matches!(h.conn.query_drop("ROLLBACK").await, Ok(Ok(()))) {
                h.conn.broken = true;
            }
        }
        self.held(Conn::Master).await?;
        let label = self.label(Conn::Master);
        let h = self.backends.slot(Conn::Master).ok_or_else(|| lost(&label))?;
        h.conn.dirty = true;
        crate::error::answered(&label, h.conn.query_drop("START TRANSACTION READ ONLY").await)?;
        self.state.ro_tx_moved_to_master();
        Ok(())
    }

    /// A read its text allows on a replica (sharded parts use this too):
    /// the session's state first (read-only transaction, pins, transaction),
    /// then freshness.
    pub(super) async fn route_read(&mut self, tables: Option<&[String]>) -> Route {
        match route::read_target(&self.state.view()) {
            (Target::FreshReplica, _) => self.pick_replica(tables).await,
            (Target::Replica(i), reason) => Route::new(Conn::Replica(i), reason),
            (_, reason) => Route::master(reason),
        }
    }

    /// The gate for the parts of a sharded read run outside a transaction
    /// (scatter reads), one [`Route`] per part's backend group, counted in
    /// the routing metrics: group 0 by the session's read rules, another
    /// group by its own replicas' freshness (outside a transaction and
    /// unpinned, the rules of `route_read` reduce to that); then the pause
    /// gate of that group ([`Session::admit`]), once per statement, before
    /// anything of it runs.
    pub(super) async fn route_parts(
        &mut self,
        groups: impl Iterator<Item = usize>,
    ) -> Result<Vec<Route>, ErrPacket> {
        let mut routes = Vec::with_capacity(groups.size_hint().0);
        for group in groups {
            let route = self.route_part(group).await?;
            self.shared
                .metrics
                .route(route.conn == Conn::Master, route.reason);
            routes.push(route);
        }
        Ok(routes)
    }

    /// [`Session::route_parts`] for one part, not counted (a description's
    /// run of the original statement, see `sharded/select.rs`).
    pub(super) async fn route_part(&mut self, group: usize) -> Result<Route, ErrPacket> {
        let route = if group == 0 {
            self.route_read(None).await
        } else {
            Route::picked(self.rt.monitors[group].pick(Scope::All, None).await)
        };
        self.admit(group, route.conn).await?;
        Ok(route)
    }

    /// hook(pause): wait while `PAUSE` covers `conn` of backend group
    /// `group` (`crate::pause`), for connections taken outside `held`:
    /// sharded parts and other groups' masters. (Group 0's held
    /// connections wait in `held`, which may also take a reloaded master.)
    pub(super) async fn admit(&self, group: usize, conn: Conn) -> Result<(), ErrPacket> {
        if !self.shared.pause.active() {
            return Ok(());
        }
        let Some(g) = self.rt.topology.groups.get(group) else {
            return Ok(());
        };
        let (master, t) = (conn == Conn::Master, self.rt.config.limits.pause_timeout);
        // Boxed: rare, keeps the per-statement future small.
        Box::pin(
            self.shared
                .pause
                .admit(self.proc.id, &g.name, master, self.in_transaction(), t),
        )
        .await
        .map(drop)
    }

    /// A fresh replica for a read of `tables` (None: unknown), or the master.
    pub(super) async fn pick_replica(&mut self, tables: Option<&[String]>) -> Route {
        let current = self.backends.replica.as_ref().map(|(i, _)| *i);
        Route::picked(self.pick_for(tables, current).await)
    }

    /// [`Session::pick_replica`] for a text read that may start on the
    /// replica before strict mode's probe has answered: the provisional
    /// decides whether its answer is released (see `freshness::strict`).
    pub(super) async fn pick_replica_overlapped(
        &mut self,
        tables: Option<&[String]>,
    ) -> (Route, Option<Provisional>) {
        let current = self.backends.replica.as_ref().map(|(i, _)| *i);
        let scope = scope(&self.monitor, &mut self.state, tables);
        match self.monitor.pick_overlapped(scope, current).await {
            Ok((i, p)) => (Route::picked(Ok(i)), p),
            Err(f) => (Route::master(f.reason()), None),
        }
    }

    /// The freshness gate's choice for a read of `tables` (None: unknown),
    /// preferring replica `current`.
    pub(super) async fn pick_for(
        &mut self,
        tables: Option<&[String]>,
        current: Option<usize>,
    ) -> Result<usize, Fallback> {
        let scope = scope(&self.monitor, &mut self.state, tables);
        self.monitor.pick(scope, current).await
    }
}

/// The freshness scope of a read of `tables` (None: unknown): the
/// allocated `db.table` names only matter when the gate compares counters.
fn scope<'s>(monitor: &GroupMonitor, state: &'s mut SessionState, tables: Option<&[String]>) -> Scope<'s> {
    match tables
        .filter(|_| monitor.compares_counters())
        .and_then(|t| state.qualified(t))
    {
        Some(t) => Scope::Tables(t),
        None => Scope::All,
    }
}

/// Where a statement goes and why (the reason is a metric label).
#[derive(Debug, Clone, Copy)]
pub(super) struct Route {
    pub(super) conn: Conn,
    pub(super) reason: RouteReason,
}

impl Route {
    pub(super) fn new(conn: Conn, reason: RouteReason) -> Route {
        Route { conn, reason }
    }

    pub(super) fn master(reason: RouteReason) -> Route {
        Route::new(Conn::Master, reason)
    }

    /// The freshness gate's choice: a fresh replica, or the master and why.
    fn picked(r: Result<usize, Fallback>) -> Route {
        match r {
            Ok(i) => Route::new(Conn::Replica(i), RouteReason::FreshReplica),
            Err(f) => Route::master(f.reason()),
        }
    }
}
