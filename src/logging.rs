//! Process-wide logging: `tracing` events to stderr, as text or JSON.

use crate::config::LogFormat;
use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `level` is an `EnvFilter` directive
/// ("info", "sluice=debug,warn"); a non-empty `RUST_LOG` overrides it, so an
/// operator can raise verbosity without editing the config. Logs go to stderr
/// to keep stdout free for command output. Fails if the filter is invalid or a
/// subscriber is already installed.
///
/// `sql_log`: the query log of sharded statements is on, so its target
/// (`sluice::sql_log`) is enabled at INFO whatever `level` says (unless
/// `level` or `RUST_LOG` names that target itself).
pub fn init(format: LogFormat, level: &str, sql_log: bool) -> Result<(), String> {
    let mut filter = filter(level)?;
    if sql_log && !filter.to_string().contains(SQL_LOG_TARGET) {
        let directive = format!("{SQL_LOG_TARGET}=info")
            .parse()
            .map_err(|e| format!("query log filter: {e}"))?;
        filter = filter.add_directive(directive);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a human at a terminal, not in files or journald.
        .with_ansi(std::io::stderr().is_terminal());
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    installed.map_err(|e| format!("cannot install the logger: {e}"))
}

/// The `tracing` target of the query log (`log.sql_log`).
pub const SQL_LOG_TARGET: &str = "sluice::sql_log";

fn filter(level: &str) -> Result<EnvFilter, String> {
    match std::env::var(EnvFilter::DEFAULT_ENV) {
        Ok(env) if !env.trim().is_empty() => {
            EnvFilter::try_new(&env).map_err(|e| format!("invalid {}=`{env}`: {e}", EnvFilter::DEFAULT_ENV))
        }
        _ => EnvFilter::try_new(level).map_err(|e| format!("invalid log level `{level}`: {e}")),
    }
}
