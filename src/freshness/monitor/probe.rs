//! The freshness probes: the connection pools sluice reads counters over
//! (also lent to the topology follower, `crate::follow`, so each server has
//! one set of probe connections), the counter and GTID query, and the
//! replicas' probe loops.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use tracing::{info, warn};

use crate::config::{self, FreshnessMode};
use crate::freshness::health::Health;
use crate::freshness::state::Counters;
use crate::freshness::triggers::CounterTables;

use super::GroupMonitor;

pub(super) fn pool_for(b: &config::Backend, tls: &config::BackendTls) -> mysql_async::Pool {
    let constraints = mysql_async::PoolConstraints::new(0, 4).unwrap_or_default();
    // Straight to the server, or through the guard that keeps the password
    // off connections whose certificate is not verified.
    let opts = crate::backend::auth_guard::mysql_async_opts(b, tls).unwrap_or_else(|e| {
        tracing::warn!(backend = %b.addr, error = %e, "freshness probes cannot reach this backend");
        // A socket that does not exist: every probe fails (not fresh).
        mysql_async::OptsBuilder::default().socket(Some("/nonexistent/sluice-probe.sock"))
    });
    let opts = opts
        .tcp_nodelay(true)
        .stmt_cache_size(0)
        .wait_timeout(Some(3600))
        .pool_opts(
            mysql_async::PoolOpts::default()
                .with_constraints(constraints)
                .with_inactive_connection_ttl(Duration::from_secs(60))
                .with_reset_connection(false),
        );
    mysql_async::Pool::new(opts)
}

/// The pseudo-slot that carries the server's GTID position in a probe's
/// answer (real slots are below 1024).
const GTID_SLOT: u16 = 65535;
/// The pseudo-slot of the master's DDL statement count in a probe's answer.
const DDL_SLOT: u16 = 65534;

/// Server status counters of the statements that can change which tables
/// have sluice's triggers, or rows without firing them, whoever runs them:
/// `DROP TRIGGER` by a DBA, a gh-ost/pt-osc `RENAME` swap, `sluice triggers
/// install` elsewhere, a TRUNCATE. The server counts a statement when it
/// starts, so a change is seen by the first probe after the statement began.
/// Reading them costs about 1 ms per master probe (information_schema
/// materializes every status variable), measured on 10.11.
const DDL_STATUS: &str = "'COM_CREATE_TRIGGER', 'COM_DROP_TRIGGER', 'COM_RENAME_TABLE', \
     'COM_ALTER_TABLE', 'COM_DROP_TABLE', 'COM_CREATE_TABLE', 'COM_TRUNCATE', 'COM_DROP_DB', \
     'COM_CREATE_DB', 'COM_ALTER_DB'";

/// Read the counter rows and, in the same round trip, the server's GTID
/// position: `gtid_binlog_pos` on the master (everything committed),
/// `gtid_slave_pos` on a replica (everything applied). The GTID position
/// covers writes no trigger counts (DDL, TRUNCATE, tables without triggers)
/// for reads whose tables are not known.
///
/// On the master (`ddl`), also the sum of the DDL statement counters
/// ([`DDL_STATUS`]): a change means the tracked set may have changed.
async fn read_counters(
    pool: &mysql_async::Pool,
    schema: &str,
    gtid_var: &str,
    timeout: Duration,
    ddl: bool,
    tables: CounterTables,
) -> Result<Counters, String> {
    let mut sql = format!(
        "{} UNION ALL SELECT @@global.{gtid_var}, {GTID_SLOT}, 0",
        crate::freshness::triggers::counters_select_sql(schema, tables)
    );
    if ddl {
        sql.push_str(&format!(
            " UNION ALL SELECT NULL, {DDL_SLOT}, CAST(SUM(VARIABLE_VALUE) AS UNSIGNED) \
             FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ({DDL_STATUS})"
        ));
    }
    let fut = async {
        let mut conn = pool.get_conn().await.map_err(|e| e.to_string())?;
        let rows: Vec<(Option<String>, u16, u64)> = conn.query(sql).await.map_err(|e| e.to_string())?;
        let mut c = Counters::default();
        for (tbl, slot, n) in rows {
            match (tbl, slot) {
                (Some(pos), GTID_SLOT) => c.gtid = crate::freshness::state::parse_gtid_pos(&pos),
                (None, DDL_SLOT) => c.ddl_statements = Some(n),
                (Some(tbl), _) => c.set(&tbl, usize::from(slot), n),
                (None, _) => {}
            }
        }
        Ok(c)
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!("probe timed out after {timeout:?}")),
    }
}

async fn ping(pool: &mysql_async::Pool, timeout: Duration) -> Result<Counters, String> {
    let fut = async {
        let mut conn = pool.get_conn().await.map_err(|e| e.to_string())?;
        conn.ping().await.map_err(|e| e.to_string())?;
        Ok(Counters::default())
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!("probe timed out after {timeout:?}")),
    }
}

impl GroupMonitor {
    /// The probe pool of server `addr` of this group (master or replica):
    /// the topology follower probes over it too, so each server has one set
    /// of probe connections (`crate::follow::probe`).
    pub fn probe_pool(&self, addr: &str) -> Option<mysql_async::Pool> {
        if self.master_addr == addr {
            return Some(self.master.clone());
        }
        self.replicas
            .iter()
            .find(|r| r.addr == addr)
            .map(|r| r.pool.clone())
    }

    pub(super) fn counter_tables(&self) -> CounterTables {
        CounterTables::from_bits(self.counter_tables.load(Ordering::Acquire))
    }

    pub(super) async fn probe_master(&self) -> Result<Counters, String> {
        let seq = self.probe_seq.fetch_add(1, Ordering::AcqRel) + 1;
        // Ended before this probe began: its snapshot is older than ours.
        let before = self.last_master.load_full();
        let mut c = read_counters(
            &self.master,
            &self.cfg.schema,
            "gtid_binlog_pos",
            self.cfg.probe_timeout,
            true,
            self.counter_tables(),
        )
        .await?;
        c.seq = seq;
        c.reset = before
            .as_deref()
            .and_then(|b| b.as_ref().ok())
            .is_some_and(|b| c.went_down_from(b));
        Ok(c)
    }

    pub(super) async fn probe_replica(&self, i: usize) -> Result<Counters, String> {
        let r = &self.replicas[i];
        let started = Instant::now();
        let res = if self.mode == FreshnessMode::Off {
            ping(&r.pool, self.cfg.probe_timeout).await
        } else {
            read_counters(
                &r.pool,
                &self.cfg.schema,
                "gtid_slave_pos",
                self.cfg.probe_timeout,
                false,
                self.counter_tables(),
            )
            .await
        };
        r.last_probe_us
            .store(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        r.probe_seconds.observe(started.elapsed()); // metrics: probe latency histogram
        let (rise, fall) = (self.cfg.rise, self.cfg.fall);
        let mut before = Health::default();
        r.health.send_if_modified(|h| {
            before = *h;
            h.record(res.is_ok(), rise, fall)
        });
        let after = *r.health.borrow();
        r.flags.store(&after);
        if before.up && !after.up {
            // Reads under way on it look again (after the flags changed).
            if let Some(wake) = self.down_hook.get() {
                wake();
            }
        }
        match &res {
            Ok(c) => {
                r.counters.store(Arc::new(c.clone()));
                self.clear_unmarked_if_applied();
                if after.in_rotation() && !before.in_rotation() {
                    info!(replica = %r.label, "replica healthy: in rotation");
                }
                let target = self.target.load();
                let (mt, rt) = (target.total(), c.total());
                r.lag_writes.store(mt.saturating_sub(rt), Ordering::Relaxed);
                if let Ok(h) = self.history.lock() {
                    r.lag_ms
                        .store(h.lag(rt, Instant::now()).as_millis() as u64, Ordering::Relaxed);
                }
            }
            Err(e) => {
                r.probe_failures.fetch_add(1, Ordering::Relaxed);
                if before.in_rotation() {
                    warn!(replica = %r.label, error = %e, "replica probe failed: out of rotation");
                }
                if before.up && !after.up {
                    warn!(
                        replica = %r.label,
                        error = %e,
                        "replica down after {fall} failed probes in a row: reads streaming from it are cut off"
                    );
                }
            }
        }
        res
    }

    pub(super) async fn replica_probe_shared(&self, i: usize, ticket: u64) -> Result<Counters, String> {
        let r = &self.replicas[i];
        let res = r.flight.after(ticket, || self.probe_replica(i)).await;
        res.as_ref().clone()
    }

    pub(super) async fn replica_loop(me: Weak<Self>, i: usize, period: Duration) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(this) = Self::for_round(&me) else {
                return;
            };
            let t = this.replicas[i].flight.ticket();
            let _ = this.replica_probe_shared(i, t).await;
        }
    }
}
