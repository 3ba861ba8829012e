//! The work after a statement that `SessionState::apply` asks for
//! ([`FollowUps`]), on the connection that ran it and the shared caches:
//! moving session state made on a replica connection to the master,
//! carrying LAST_INSERT_ID, recording SETs for replay, learning the
//! sql_mode and the idle limit a SET may have changed, the counter bumps
//! and the causal snapshot.
//!
//! After a `SET` that mentions `wait_timeout`/`interactive_timeout`, the
//! session reads its effective `@@session.wait_timeout` back from the
//! server that ran it; the command loop then closes the session when idle
//! that long (`wait::idle_limit`), silently, as MariaDB does.

use crate::error;
use crate::frontend::prepared::Conn;
use crate::frontend::session::backends::{lost, Held};
use crate::frontend::session::state::Outcome;
use crate::frontend::session::Session;
use crate::protocol::packets::ErrPacket;
use crate::router::classify::Classified;
use crate::router::lexer::LexOptions;
use crate::router::plan::Pins;
use crate::router::plan::Plan;
use std::time::Duration;

impl Session {
    /// Apply a statement's effects (`SessionState::apply`) and do the work
    /// they ask for, in this order. `sql`: the statement's text; `groups`:
    /// the backend groups it wrote to (`[0]` but for sharded writes), whose
    /// counters are bumped and snapshots taken.
    pub(super) async fn apply(&mut self, plan: &Plan<'_>, out: &Outcome<'_>, sql: &[u8], groups: &[usize]) {
        let f = self.state.apply(plan, out);
        let conn = out.conn;
        if f.take_state_from_replica {
            if let Err(e) = self.take_state_from_replica(conn, sql).await {
                tracing::warn!(error = %e.message, "cannot move user variables from a replica connection to the master");
            }
        }
        if f.keep_diagnostics.is_some() && self.backends.keep.is_none() {
            self.backends.keep = f.keep_diagnostics;
        }
        if f.forget_columns {
            self.shared.sequence_users.forget_all();
            // A sharded read's learned result columns may come from this table (a join
            // with an unsharded table): described again from now on.
            self.rt.shard_rules.forget_columns();
        }
        if let Some((reported, mentions)) = f.insert_id {
            self.note_insert_id(reported, mentions);
        }
        if f.keep_for_found_rows {
            self.backends.keep = Some(Conn::Master);
        }
        if let (Some(db), Some(h)) = (f.use_db, self.backends.slot(conn)) {
            // Its next borrower (another session maybe) must not be judged in
            // sync by `sync_to_state` and run in this session's database.
            h.conn.db = Some(db);
        }
        if f.record_set {
            self.record_set(sql, conn);
        }
        for bit in f.pinned.iter() {
            self.shared.metrics.session_pinned(Pins::name(bit)); // metrics: pins by reason
        }
        if f.learn_sql_mode {
            self.learn_sql_mode(conn).await;
        }
        if f.idle_limit {
            self.note_wait_timeout(conn).await;
        }
        if let Some(pins) = f.mirror_on_master {
            self.mirror_on_master(sql, pins).await;
        }
        if f.bump_global {
            for m in groups.iter().filter_map(|&g| self.rt.monitors.get(g)) {
                // freshness.auto_install: a new table gets its triggers now.
                if f.install_new_tables && crate::freshness::triggers::may_add_tables(sql) {
                    m.install_new_tables().await;
                }
                if f.forget_tracked {
                    m.forget_tracked();
                }
                m.bump_global().await;
            }
        }
        if f.snapshot {
            for m in groups.iter().filter_map(|&g| self.rt.monitors.get(g)) {
                m.after_write().await;
            }
        }
    }

    /// Remember a SET that ran on `ran_on`, to replay it on the session's
    /// other connections before they next serve it.
    fn record_set(&mut self, sql: &[u8], ran_on: Conn) {
        // The connection that ran it had run all the others (it was synced).
        let synced = self
            .backends
            .slot(ran_on)
            .filter(|h| h.conn.state.sets == *self.state.chain());
        if !self.state.push_set(sql) {
            self.pin(Pins::SESSION_STATE);
            return;
        }
        if let Some(h) = synced {
            h.conn.state.sets.push(sql);
        }
    }

    /// What a COM_STMT_PREPARE itself leaves on the master connection it
    /// ran on (`route::prepare_pins`): the statement is not run, but the
    /// server may have made session state while preparing it. Taken as soon
    /// as the server answered, an error too (it may have failed after
    /// making the state): a pin costs only this session's multiplexing.
    pub(super) fn apply_prepare(&mut self, c: &Classified) {
        self.pin(crate::router::route::prepare_pins(c));
    }

    /// After a SET that may change sql_mode: read the mode the connection
    /// now has, so the next statements are classified under it. When it
    /// cannot be read, classify under every reading again.
    pub(super) async fn learn_sql_mode(&mut self, conn: Conn) {
        self.state.set_lex(None);
        let Some(h) = self.backends.slot(conn) else {
            return;
        };
        if let Ok(Ok(Some(mode))) = h.conn.session_query_text("SELECT @@session.sql_mode").await {
            let has = |flag: &str| mode.split(',').any(|m| m.eq_ignore_ascii_case(flag));
            self.state.set_lex(Some(LexOptions {
                ansi_quotes: has("ANSI_QUOTES"),
                no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
                ..LexOptions::default()
            }));
        }
    }

    /// hook(wait_timeout): after a `SET` mentioning `wait_timeout` or
    /// `interactive_timeout` succeeded on `conn`, read the session's
    /// effective value back there (DEFAULT, expressions and the server's
    /// clamping included). A failed read keeps the previous limit.
    pub(super) async fn note_wait_timeout(&mut self, conn: Conn) {
        let Some(h) = self.backends.slot(conn) else {
            return;
        };
        if let Ok(Ok(Some(secs))) = h.conn.query_u64("SELECT @@session.wait_timeout").await {
            self.state.set_wait_timeout(Duration::from_secs(secs));
        }
    }

    /// After a master statement: `reported` is the insert id of its OK
    /// packet (0 if none); `mentions` whether its text names LAST_INSERT_ID.
    pub(super) fn note_insert_id(&mut self, reported: u64, mentions: bool) {
        if reported == 0 && !mentions {
            return;
        }
        let Some(h) = self.backends.master.as_ref() else {
            return;
        };
        if !self.state.lid().unknown {
            self.state.lid_mut().unknown = true;
            self.state.lid_mut().prior = h.conn.state.last_insert_id;
        }
        self.state.lid_mut().owner = h.conn.state.uid;
        if reported != 0 {
            self.state.lid_mut().last_reported = reported;
        }
    }

    /// Read the connection's LAST_INSERT_ID() back before it leaves the
    /// session. An OK packet reports explicit ids too, which do not change
    /// LAST_INSERT_ID(): a value equal to the one before the statements is
    /// "unchanged" unless it is also the id they reported (an explicit id
    /// equal to another session's last generated id on this connection is
    /// the one ambiguous case; it is taken as generated).
    pub(super) async fn capture_last_insert_id(&mut self, h: &mut Held) -> Result<(), ()> {
        match h.conn.query_u64("SELECT LAST_INSERT_ID()").await {
            Ok(Ok(v)) => {
                let now = v.unwrap_or(0);
                h.conn.state.last_insert_id = now;
                let changed = now != self.state.lid().prior
                    || (self.state.lid().last_reported != 0 && now == self.state.lid().last_reported)
                    || self.state.lid().prior == self.state.lid().value;
                if changed {
                    self.state.lid_mut().value = now;
                }
                self.state.lid_mut().unknown = false;
                self.state.lid_mut().last_reported = 0;
                Ok(())
            }
            _ => Err(()),
        }
    }

    /// After a statement that set session state ran on replica connection
    /// `conn` (the previous statement's connection, for `GET DIAGNOSTICS
    /// @n = NUMBER` or `SET @w = @@warning_count`; or the read-only
    /// transaction's, for `SET @x = 1` or `SELECT ... INTO @x` in it): the
    /// session's state lives on its master connection, and a replica
    /// connection must never go back to the pool with it (the next borrower
    /// would read this session's variables). The connection's user
    /// variables, which are all this session's (connections are lent
    /// without any), are copied to the master with their types and
    /// collations, and the session is pinned there like any session with
    /// user variables; the replica connection is closed when the session
    /// lets it go, never pooled.
    pub(super) async fn take_state_from_replica(&mut self, conn: Conn, sql: &[u8]) -> Result<(), ErrPacket> {
        let label = self.label(conn);
        let h = self.backends.slot(conn).ok_or_else(|| lost(&label))?;
        h.conn.no_reuse = true;
        // GET DIAGNOSTICS names its targets and their types: no listing,
        // whose table read would empty the diagnostics area that SHOW
        // WARNINGS reads next.
        let listed = match diagnostics_targets(sql) {
            Some(l) => Some(l),
            None => error::answered(&label, h.conn.session_query_text(USER_VARIABLE_LIST).await)?,
        };
        let Some(read) = user_variable_copy_sql(listed.as_deref().unwrap_or_default()) else {
            return Ok(());
        };
        let Some(set) = error::answered(&label, h.conn.session_query_text(&read).await)? else {
            return Ok(());
        };
        self.held(Conn::Master).await?;
        let label = self.label(Conn::Master);
        let m = self.backends.slot(Conn::Master).ok_or_else(|| lost(&label))?;
        error::answered(&label, m.conn.query_drop(&set).await)?;
        self.pin(Pins::USER_VARIABLE);
        Ok(())
    }

    /// Run `sql`, a SQL PREPARE / DEALLOCATE PREPARE that ran on a replica
    /// inside a read-only transaction, on the master too, and keep the
    /// session there (`pins`): the statements after the transaction run on
    /// the master and must find the same named statements. The answer is not
    /// the client's (it had the replica's); the master gives the same one, as
    /// the text reads nothing that differs between them.
    pub(super) async fn mirror_on_master(&mut self, sql: &[u8], pins: Pins) {
        let Ok(text) = std::str::from_utf8(sql) else {
            // Not valid UTF-8 as one string: the replica's answer stands, and
            // the session is not pinned (nothing was made on the master).
            tracing::warn!("cannot repeat a PREPARE on the master: its text is not UTF-8");
            return;
        };
        if self.held(Conn::Master).await.is_err() {
            tracing::warn!("cannot repeat a PREPARE on the master: no master connection");
            return;
        }
        let Some(m) = self.backends.slot(Conn::Master) else {
            return;
        };
        m.conn.dirty = true;
        if let Err(e) = m.conn.query_drop(text).await {
            tracing::warn!(error = %e, "cannot repeat a PREPARE on the master");
            return;
        }
        self.pin(pins);
    }
}

/// The user variables of a connection, as `HEX(name):TYPE` items separated
/// by commas (NULL when it has none). Names in hex: no quoting to undo.
pub(super) const USER_VARIABLE_LIST: &str =
    "SELECT GROUP_CONCAT(CONCAT(HEX(VARIABLE_NAME), ':', VARIABLE_TYPE) \
     SEPARATOR ',') FROM information_schema.USER_VARIABLES";

/// From [`USER_VARIABLE_LIST`]'s answer: a query whose one value is the
/// `SET @a = ..., @b = ...` that recreates those variables elsewhere with the
/// same values, types and collations: numbers as numbers (DOUBLE with an
/// exponent), strings as `CONVERT(X'..' USING cs) COLLATE coll` (`_binary
/// X'..'` for binary ones), NULL as NULL. None when there is nothing to copy
/// or a name is not plain ASCII (the statement's text would then depend on
/// the connections' character sets).
pub(super) fn user_variable_copy_sql(listed: &str) -> Option<String> {
    let mut parts = Vec::new();
    for item in listed.split(',').filter(|i| !i.is_empty()) {
        let (hex, kind) = item.split_once(':')?;
        let name = decode_hex(hex)?;
        if !name.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            return None;
        }
        let name = String::from_utf8(name).ok()?;
        let var = format!("@`{}`", name.replace('`', "``"));
        let text = format!("CAST({var} AS CHAR)");
        let literal = match kind {
            "INT" | "DECIMAL" => text,
            // (A small unsigned value would read back signed.)
            "INT UNSIGNED" => format!("CONCAT('CAST(', {text}, ' AS UNSIGNED)')"),
            "DOUBLE" => format!("IF(LOCATE('e', {text}) > 0, {text}, CONCAT({text}, 'e0'))"),
            "VARCHAR" => format!(
                "IF(CHARSET({var}) = 'binary', CONCAT('_binary X''', HEX({var}), ''''), \
                 CONCAT('CONVERT(X''', HEX({var}), ''' USING ', CHARSET({var}), ') COLLATE `', \
                 COLLATION({var}), '`'))"
            ),
            _ => return None,
        };
        // The name inside a string literal of CONCAT: quotes and
        // backslashes doubled.
        let shown = var.replace('\\', "\\\\").replace('\'', "''");
        parts.push(format!(
            "CONCAT('{shown} = ', IF({var} IS NULL, 'NULL', {literal}))"
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "SELECT CONCAT('SET ', CONCAT_WS(', ', {}))",
        parts.join(", ")
    ))
}

/// The user variables `GET [CURRENT] DIAGNOSTICS [CONDITION n] @a = ITEM, …`
/// sets, with the types the server gives them, as [`USER_VARIABLE_LIST`]
/// lists them (`HEX(name):TYPE,…`); `None` for another statement, a quoted
/// name or an item not known here.
pub(super) fn diagnostics_targets(sql: &[u8]) -> Option<String> {
    use crate::router::lexer::{first_word, Token, Tokens};
    if first_word(sql).0 != "GET" {
        return None;
    }
    let toks: Vec<Token<'_>> = Tokens::new(sql).collect();
    let mut listed = Vec::new();
    for w in toks.windows(3) {
        let [Token::UserVar(name), Token::Eq, Token::Word(item)] = w else {
            continue;
        };
        if !name
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$')
        {
            return None;
        }
        let item = String::from_utf8_lossy(item).to_ascii_uppercase();
        let kind = match item.as_str() {
            "NUMBER" | "MYSQL_ERRNO" => "INT UNSIGNED",
            "ROW_COUNT" => "INT",
            "CLASS_ORIGIN" | "SUBCLASS_ORIGIN" | "RETURNED_SQLSTATE" | "MESSAGE_TEXT"
            | "CONSTRAINT_CATALOG" | "CONSTRAINT_SCHEMA" | "CONSTRAINT_NAME" | "CATALOG_NAME"
            | "SCHEMA_NAME" | "TABLE_NAME" | "COLUMN_NAME" | "CURSOR_NAME" => "VARCHAR",
            _ => return None,
        };
        let hex: String = name.iter().map(|b| format!("{b:02X}")).collect();
        listed.push(format!("{hex}:{kind}"));
    }
    (!listed.is_empty()).then(|| listed.join(","))
}

pub(super) fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{diagnostics_targets, user_variable_copy_sql};

    #[test]
    pub(super) fn diagnostics_targets_come_with_their_types() {
        let t = |s: &str| diagnostics_targets(s.as_bytes());
        assert_eq!(
            t("GET DIAGNOSTICS @n = NUMBER, @r = row_count").as_deref(),
            Some("6E:INT UNSIGNED,72:INT")
        );
        assert_eq!(
            t("get current diagnostics condition 1 @e = MYSQL_ERRNO, @m = MESSAGE_TEXT").as_deref(),
            Some("65:INT UNSIGNED,6D:VARCHAR")
        );
        // A quoted name, an item not known here, another statement: listed by the server.
        assert_eq!(t("GET DIAGNOSTICS @`n` = NUMBER"), None);
        assert_eq!(t("GET DIAGNOSTICS CONDITION 1 @x = ROW_NUMBER"), None);
        assert_eq!(t("SET @w = @@warning_count"), None);
    }

    #[test]
    pub(super) fn user_variables_are_copied_by_type() {
        // `n` (INT UNSIGNED), `B` (DECIMAL), `c` (DOUBLE), `d` (VARCHAR) and a
        // name with a backtick and a quote.
        let listed = "6E:INT UNSIGNED,42:DECIMAL,63:DOUBLE,64:VARCHAR,612762:INT";
        let sql = user_variable_copy_sql(listed).expect("a query");
        assert!(sql.starts_with("SELECT CONCAT('SET ', CONCAT_WS(', ', CONCAT('@`n` = ', IF(@`n` IS NULL"));
        assert!(sql.contains("CONCAT('CAST(', CAST(@`n` AS CHAR), ' AS UNSIGNED)')"));
        assert!(sql.contains("CONCAT('@`B` = ', IF(@`B` IS NULL, 'NULL', CAST(@`B` AS CHAR)))"));
        assert!(sql.contains("CONCAT(CAST(@`c` AS CHAR), 'e0')"));
        assert!(sql.contains("COLLATION(@`d`)"));
        assert!(sql.contains("CONCAT('@`a''b` = ', IF(@`a'b` IS NULL"), "{sql}");
        assert_eq!(user_variable_copy_sql(""), None);
        // Not ASCII, odd hex, an unknown type: nothing is guessed.
        assert_eq!(user_variable_copy_sql("C39F:INT"), None);
        assert_eq!(user_variable_copy_sql("6:INT"), None);
        assert_eq!(user_variable_copy_sql("6E:GEOMETRY"), None);
    }
}
