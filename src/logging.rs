//! Process-wide logging: `tracing` events to stderr, as text or JSON.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// `log.format`: one line of text, or one JSON object, per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

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

/// Longest client-supplied name (user, database) written to a log line.
pub const MAX_LOGGED_NAME: usize = 256;

static MAX_SQL_LENGTH: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1024);

/// Set the cap on logged SQL text (`log.max_sql_length`).
pub fn set_max_sql_length(bytes: usize) {
    MAX_SQL_LENGTH.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// Client-supplied text as it may appear in a log line: control characters
/// (CR, LF, ESC, ...) and backslashes escaped, so a value can neither start a
/// fake log line nor move the terminal's cursor, and cut after `cap` bytes
/// of input (on a character boundary) with the size of what was left out.
/// Formats without allocating.
pub struct Escaped<'a> {
    text: &'a str,
    cap: usize,
}

/// See [`Escaped`].
pub fn escaped(text: &str, cap: usize) -> Escaped<'_> {
    Escaped { text, cap }
}

impl std::fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        let mut end = self.text.len().min(self.cap);
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        for c in self.text[..end].chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if c.is_control() => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                // Line and paragraph separators end lines in some viewers.
                '\u{2028}' | '\u{2029}' => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => f.write_char(c)?,
            }
        }
        if end < self.text.len() {
            write!(f, "...({} more bytes)", self.text.len() - end)?;
        }
        Ok(())
    }
}

/// Shown instead of a statement that mentions IDENTIFIED or PASSWORD.
pub const REDACTED: &str = "(text not logged: it may contain a password)";

/// `CREATE USER … IDENTIFIED BY`, `SET PASSWORD`, `PASSWORD('…')`, …: any
/// mention, in any case, anywhere in the statement.
pub fn may_hold_password(sql: &[u8]) -> bool {
    use crate::router::route::mentions;
    mentions(sql, b"IDENTIFIED") || mentions(sql, b"PASSWORD")
}

/// SQL text for the query log (`log.sql_log`): escaped and cut to
/// `log.max_sql_length`, or a placeholder for statements that mention a
/// password (their values, parameters included, are never logged).
pub fn loggable_sql(sql: &str) -> String {
    if may_hold_password(sql.as_bytes()) {
        return REDACTED.to_owned();
    }
    escaped(sql, MAX_SQL_LENGTH.load(std::sync::atomic::Ordering::Relaxed)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_text_capped() {
        let forged = "app\r\n2026-12-01T00:00:00Z  INFO sluice: admin logged in\u{1b}[2J";
        let line = escaped(forged, 256).to_string();
        assert!(!line.contains('\n') && !line.contains('\r') && !line.contains('\u{1b}'));
        assert_eq!(
            line,
            "app\\r\\n2026-12-01T00:00:00Z  INFO sluice: admin logged in\\u{1b}[2J"
        );
        let long = "é".repeat(30_000);
        let line = escaped(&long, 256).to_string();
        assert_eq!(line, format!("{}...(59744 more bytes)", "é".repeat(128)));
        assert_eq!(escaped("a\\b", 10).to_string(), "a\\\\b");
        assert_eq!(escaped("abc", 2).to_string(), "ab...(1 more bytes)");
    }

    #[test]
    fn query_log_hides_statements_with_passwords() {
        assert_eq!(loggable_sql("SET PASSWORD FOR u = PASSWORD('x')"), REDACTED);
        assert_eq!(
            loggable_sql("INSERT INTO t_1 VALUES ('a\nb')"),
            "INSERT INTO t_1 VALUES ('a\\nb')"
        );
    }
}
