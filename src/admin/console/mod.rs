//! The operator's console: one set of commands (`command.rs`) answered over
//! the MySQL protocol on `admin.sql_listen` (`wire.rs`) and over HTTP under
//! `/v1/` (`admin::v1`), from the same code, so both answer alike.
//!
//! Every command is logged with who asked (console user and peer, or
//! "token" for HTTP) and counted in `sluice_admin_commands_total{command,result}`.

pub mod command;
mod ops;
pub mod table;
pub mod views;
mod wire;

use std::sync::{Arc, Mutex};

use prometheus::IntCounterVec;
use tracing::{info, warn};

use crate::config::ConsoleRole;
use crate::frontend::Shared;
use crate::protocol::consts::errcode;
use crate::protocol::packets::ErrPacket;
use crate::reload::Reloader;

pub use command::{Command, View};
pub use table::Table;
pub use wire::serve;

/// What a command answered.
#[derive(Debug)]
pub enum Outcome {
    Rows(Table),
    /// Done; the sentence says what happened.
    Done(String),
    Failed(ErrPacket),
}

impl Outcome {
    fn result(&self) -> &'static str {
        match self {
            Outcome::Rows(_) | Outcome::Done(_) => "ok",
            Outcome::Failed(e) if e.code == errcode::ER_SPECIFIC_ACCESS_DENIED_ERROR => "denied",
            Outcome::Failed(_) => "error",
        }
    }
}

/// Who runs a command, for the audit log.
pub struct Who<'a> {
    pub user: &'a str,
    pub peer: &'a str,
    pub role: ConsoleRole,
}

/// The console's shared state: built once at start, used by the SQL port
/// and the HTTP endpoint.
pub struct Console {
    pub shared: Arc<Shared>,
    pub reloader: Arc<Reloader>,
    /// The topology follower (`/v1/topology`, `/v1/master`; the SQL
    /// `SHOW TOPOLOGY` and `MASTER` are for the coordinator to wire).
    pub follower: Arc<crate::follow::Follower>,
    commands: IntCounterVec,
    /// Addresses under `MAINTENANCE BACKEND` (for `SHOW BACKENDS`' state).
    maintenance: Mutex<Vec<String>>,
}

impl Console {
    pub fn new(
        shared: Arc<Shared>,
        reloader: Arc<Reloader>,
        follower: Arc<crate::follow::Follower>,
    ) -> Arc<Console> {
        let commands = IntCounterVec::new(
            prometheus::Opts::new(
                "sluice_admin_commands_total",
                "Console and /v1/ commands, by command and result (ok, error, denied).",
            ),
            &["command", "result"],
        )
        .expect("static metric");
        if let Err(e) = shared.metrics.registry.register(Box::new(commands.clone())) {
            warn!(error = %e, "cannot register sluice_admin_commands_total");
        }
        Arc::new(Console {
            shared,
            reloader,
            follower,
            commands,
            maintenance: Mutex::new(Vec::new()),
        })
    }

    /// Run `cmd` for `who`: the role check, the command, the audit line and
    /// the metric.
    pub async fn run(&self, who: &Who<'_>, cmd: &Command) -> Outcome {
        let out = if who.role == ConsoleRole::Monitor && !cmd.reads_only() {
            Outcome::Failed(ErrPacket::new(
                errcode::ER_SPECIFIC_ACCESS_DENIED_ERROR,
                "42000",
                format!(
                    "Access denied; you need (at least one of) the admin role for this operation \
                     (sluice: console user `{}` has role monitor, which may only run SHOW)",
                    crate::logging::escaped(who.user, 64)
                ),
            ))
        } else {
            self.execute(cmd).await
        };
        let result = out.result();
        if cmd.name() != "client" {
            self.commands.with_label_values(&[cmd.name(), result]).inc();
        }
        if !cmd.reads_only() || result == "denied" {
            let detail = match &out {
                Outcome::Done(s) => s.clone(),
                Outcome::Failed(e) => format!("{} {}", e.code, e.message),
                Outcome::Rows(_) => String::new(),
            };
            info!(
                user = %crate::logging::escaped(who.user, 64),
                peer = %who.peer,
                command = ?cmd,
                result,
                detail = %detail,
                "admin command"
            );
        }
        out
    }

    /// One arm per command.
    async fn execute(&self, cmd: &Command) -> Outcome {
        match cmd {
            Command::Show(v) => Outcome::Rows(views::build(
                *v,
                &self.shared,
                &self.maintenance_list(),
                &self.follower.topology(),
            )),
            Command::Warnings => Outcome::Rows(Table::new(&[
                ("Level", table::Kind::Text),
                ("Code", table::Kind::Int),
                ("Message", table::Kind::Text),
            ])),
            Command::Value { name, value } => {
                let mut t = Table::new(&[(name, table::Kind::Text)]);
                t.rows
                    .push(vec![value.map_or(table::Value::Null, table::Value::text)]);
                Outcome::Rows(t)
            }
            Command::Noop => Outcome::Done(String::new()),
            Command::Pause { writes, group, wait } => self.pause(*writes, group.as_deref(), *wait).await,
            Command::Resume { group } => self.resume(group.as_deref()),
            Command::Drain { addr, wait } => self.drain(addr, *wait).await,
            Command::Enable { addr } => self.enable(addr),
            Command::Maintenance { addr, after } => self.maintenance(addr, *after),
            Command::Kill { session } => self.kill(*session),
            Command::Master { addr, group } => match self.follower.set_master(group.as_deref(), addr).await {
                Ok(done) => Outcome::Done(done),
                Err(why) => Outcome::Failed(ErrPacket::new(
                    errcode::ER_WRONG_ARGUMENTS,
                    "HY000",
                    format!("sluice: {addr} was not made the master: {why}"),
                )),
            },
            Command::Reload => match crate::reload::reload(&self.reloader).await {
                Ok(summary) => Outcome::Done(summary),
                Err(e) => Outcome::Failed(ErrPacket::new(
                    errcode::ER_UNKNOWN_ERROR,
                    "HY000",
                    format!("sluice: the configuration file was rejected, the running one is kept: {e}"),
                )),
            },
        }
    }

    fn maintenance_list(&self) -> Vec<String> {
        self.maintenance.lock().map(|m| m.clone()).unwrap_or_default()
    }
}
