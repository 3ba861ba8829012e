//! One topology probe of one server: its role signals and its replication
//! status, over the group freshness monitor's probe pools (sluice's group
//! account; `GroupMonitor::probe_pool`).

use std::collections::HashMap;
use std::time::Duration;

use mysql_async::prelude::Queryable;

use crate::freshness::state::parse_gtid_pos;

/// One row of `SHOW ALL SLAVES STATUS`, the fields eligibility needs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SlaveRow {
    pub connection_name: String,
    pub master_host: String,
    pub master_port: u16,
    /// `Yes`, `No` or `Connecting`.
    pub io_running: String,
    pub sql_running: String,
    /// 0 until the IO thread has connected once.
    pub master_server_id: u32,
    pub last_io_error: String,
    pub last_sql_error: String,
}

impl SlaveRow {
    /// The IO thread is started (connected, or retrying to connect: a dead
    /// master leaves its replicas `Connecting` with what they had).
    pub fn io_running(&self) -> bool {
        self.io_running == "Yes" || self.io_running == "Connecting"
    }

    pub fn sql_running(&self) -> bool {
        self.sql_running == "Yes"
    }

    /// It replicates from `addr` (`host:port`) as spelled there.
    pub fn source_is(&self, addr: &str) -> bool {
        addr.rsplit_once(':')
            .is_some_and(|(h, p)| h == self.master_host && p.parse() == Ok(self.master_port))
    }

    /// Either thread runs: the server takes changes from a master.
    pub fn replicating(&self) -> bool {
        self.io_running() || self.sql_running()
    }
}

/// What one probe found. `error`: the server could not be reached or
/// queried; every other field is then as of the last good probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerState {
    pub reachable: bool,
    pub error: Option<String>,
    pub read_only: Option<bool>,
    pub server_id: Option<u32>,
    pub gtid_binlog_pos: Option<String>,
    pub gtid_current_pos: Option<String>,
    pub gtid_slave_pos: Option<String>,
    pub gtid_strict_mode: Option<bool>,
    pub log_slave_updates: Option<bool>,
    /// `Err`: the account may not read replication status (the sentence
    /// names the grant).
    pub slaves: Result<Vec<SlaveRow>, String>,
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState {
            reachable: false,
            error: None,
            read_only: None,
            server_id: None,
            gtid_binlog_pos: None,
            gtid_current_pos: None,
            gtid_slave_pos: None,
            gtid_strict_mode: None,
            log_slave_updates: None,
            slaves: Ok(Vec::new()),
        }
    }
}

impl ServerState {
    /// Reachable, `read_only=0`, and taking changes from no master.
    pub fn writable(&self) -> bool {
        self.reachable
            && self.read_only == Some(false)
            && self
                .slaves
                .as_ref()
                .is_ok_and(|s| !s.iter().any(SlaveRow::replicating))
    }

    /// GTID position, domain -> sequence.
    pub fn gtid(pos: &Option<String>) -> Option<HashMap<u32, u64>> {
        pos.as_deref().and_then(parse_gtid_pos)
    }
}

const ROLE_SQL: &str = "SELECT @@global.read_only, @@server_id, @@global.gtid_binlog_pos, \
     @@global.gtid_current_pos, @@global.gtid_slave_pos, @@global.gtid_strict_mode, \
     @@global.log_slave_updates";

/// The sentence for a server that refuses `SHOW ALL SLAVES STATUS`.
pub fn missing_grant(addr: &str, user_error: &str) -> String {
    format!(
        "the probe account cannot read replication status on {addr} ({user_error}): grant it \
         SLAVE MONITOR (MariaDB 10.5.9 and later; REPLICATION CLIENT before), e.g. \
         `GRANT SLAVE MONITOR ON *.* TO 'sluice'@'%'`"
    )
}

/// Probe `pool`'s server within `timeout`. `previous`: the last state, kept
/// for the fields an unreachable server cannot tell.
pub async fn probe(
    pool: &mysql_async::Pool,
    addr: &str,
    timeout: Duration,
    previous: Option<&ServerState>,
) -> ServerState {
    let fut = async {
        let mut conn = pool.get_conn().await.map_err(|e| e.to_string())?;
        type Role = (
            Option<u8>,
            Option<u32>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<u8>,
            Option<u8>,
        );
        let role: Option<Role> = conn.query_first(ROLE_SQL).await.map_err(|e| e.to_string())?;
        let slaves = match conn.query::<mysql_async::Row, _>("SHOW ALL SLAVES STATUS").await {
            Ok(rows) => Ok(rows.iter().map(slave_row).collect()),
            // 1227: access denied (the grant is missing); other errors too:
            // replication status unknown is not "not replicating".
            Err(mysql_async::Error::Server(e)) => Err(missing_grant(addr, &e.message)),
            Err(e) => return Err(e.to_string()),
        };
        Ok((role, slaves))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok((Some(r), slaves))) => ServerState {
            reachable: true,
            error: None,
            read_only: r.0.map(|v| v != 0),
            server_id: r.1,
            gtid_binlog_pos: r.2,
            gtid_current_pos: r.3,
            gtid_slave_pos: r.4,
            gtid_strict_mode: r.5.map(|v| v != 0),
            log_slave_updates: r.6.map(|v| v != 0),
            slaves,
        },
        Ok(Ok((None, _))) => unreachable_state(previous, "no answer to the role query".into()),
        Ok(Err(e)) => unreachable_state(previous, e),
        Err(_) => unreachable_state(previous, format!("probe timed out after {timeout:?}")),
    }
}

fn unreachable_state(previous: Option<&ServerState>, error: String) -> ServerState {
    let mut s = previous.cloned().unwrap_or_default();
    s.reachable = false;
    s.error = Some(error);
    s
}

fn slave_row(r: &mysql_async::Row) -> SlaveRow {
    let text = |name: &str| -> String {
        r.get_opt::<Option<String>, _>(name)
            .and_then(Result::ok)
            .flatten()
            .unwrap_or_default()
    };
    SlaveRow {
        connection_name: text("Connection_name"),
        master_host: text("Master_Host"),
        master_port: text("Master_Port").parse().unwrap_or(0),
        io_running: text("Slave_IO_Running"),
        sql_running: text("Slave_SQL_Running"),
        master_server_id: text("Master_Server_Id").parse().unwrap_or(0),
        last_io_error: text("Last_IO_Error"),
        last_sql_error: text("Last_SQL_Error"),
    }
}
