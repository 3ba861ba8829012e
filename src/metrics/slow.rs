//! The slow-query log: statements that took at least `log.slow_query` are
//! logged at WARN. This is the one place where statement text reaches the
//! logs, cut to [`MAX_SQL_CHARS`] characters and never for statements that
//! may carry a password.

use std::time::Duration;

use tracing::warn;

use crate::logging::{may_hold_password, REDACTED};
use crate::protocol::consts::{COM_QUERY, COM_STMT_EXECUTE, COM_STMT_PREPARE};

/// How much of a statement the log shows.
pub const MAX_SQL_CHARS: usize = 200;

/// Log one slow command. `payload` is the client's command packet (command
/// byte first). Called only once a command is known to be slow, so the cost
/// here does not matter.
pub fn log(elapsed: Duration, destination: &str, backend: &str, payload: &[u8]) {
    let text = statement_text(payload);
    warn!(
        target: "sluice::slow_query",
        duration_ms = elapsed.as_secs_f64() * 1000.0,
        destination,
        backend,
        sql = %text,
        "slow query"
    );
}

/// What the log shows of a command: the start of the text of a COM_QUERY or
/// COM_STMT_PREPARE (control characters escaped, so one statement stays one
/// log line), or the command's name.
pub fn statement_text(payload: &[u8]) -> String {
    match payload.split_first() {
        Some((&(COM_QUERY | COM_STMT_PREPARE), sql)) => {
            if may_hold_password(sql) {
                return REDACTED.to_owned();
            }
            let text = String::from_utf8_lossy(sql);
            let mut out: String = text
                .chars()
                .take(MAX_SQL_CHARS)
                .flat_map(char::escape_default)
                .collect();
            if text.chars().nth(MAX_SQL_CHARS).is_some() {
                out.push_str("...");
            }
            out
        }
        Some((&COM_STMT_EXECUTE, _)) => "(execute of a prepared statement)".to_owned(),
        Some((cmd, _)) => format!("(command 0x{cmd:02x})"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(sql: &str) -> Vec<u8> {
        let mut p = vec![COM_QUERY];
        p.extend_from_slice(sql.as_bytes());
        p
    }

    #[test]
    fn short_statements_are_shown_whole() {
        assert_eq!(statement_text(&query("SELECT SLEEP(2)")), "SELECT SLEEP(2)");
    }

    #[test]
    fn long_statements_are_cut_at_200_chars() {
        let sql = format!("SELECT '{}'", "é".repeat(300));
        let text = statement_text(&query(&sql));
        assert!(text.ends_with("..."));
        // 200 characters (é is escaped as \u{e9}), then the marker.
        let shown = &text[..text.len() - 3];
        assert_eq!(shown.matches("\\u{e9}").count(), 200 - "SELECT '".len());
    }

    #[test]
    fn newlines_stay_on_one_line() {
        assert_eq!(statement_text(&query("SELECT 1\nFROM t")), "SELECT 1\\nFROM t");
    }

    #[test]
    fn passwords_are_never_logged() {
        for sql in [
            "CREATE USER u IDENTIFIED BY 'secret'",
            "alter user u identified via mysql_native_password using 'x'",
            "SET PASSWORD FOR u = PASSWORD('secret')",
            "select password('secret')",
        ] {
            assert_eq!(statement_text(&query(sql)), REDACTED, "{sql}");
        }
    }

    #[test]
    fn other_commands_are_named() {
        assert_eq!(
            statement_text(&[COM_STMT_EXECUTE, 1, 0, 0, 0]),
            "(execute of a prepared statement)"
        );
        assert_eq!(statement_text(&[0x02, b'd']), "(command 0x02)");
    }
}
