//! The hot-path classifier for read/write splitting: a pure function of the
//! SQL text (bytes: any encoding, possibly several statements) to a
//! [`Classified`], with a hand-written tokenizer ([`super::lexer::Tokens`]) and
//! no parser. It allocates nothing for a plain statement except the `tables`
//! list of a read (and the name of `USE db`).
//!
//! Unknown or unparsable text is a [`Kind::Write`]: it goes to the master
//! untouched, which is always safe.
//!
//! `keywords.rs` finds the words that matter by a perfect hash, `head.rs`
//! reads a statement's first words (SHOW, transactions, SET), `scanner.rs`
//! scans every token for tables, locking reads and functions that force the
//! master; this file puts the answer together and splits multi-statements.

use super::lexer::{first_word, unquote_ident, LexOptions, Token, Tokens, DEFAULT_VERSION_RANGE};
use super::plan::RouteReason;

mod head;
mod keywords;
mod scanner;
#[cfg(test)]
mod tests;

use head::*;
use keywords::*;
use scanner::*;

/// What one COM_QUERY is, for routing and for the session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub kind: Kind,
    /// The statement must run on the master even though it is a read: locking
    /// read, `SELECT ... INTO`, `GET_LOCK()`/`RELEASE_LOCK()`/`IS_FREE_LOCK()`/
    /// `IS_USED_LOCK()`/`RELEASE_ALL_LOCKS()`, `LAST_INSERT_ID()`, `FOUND_ROWS()`,
    /// `ROW_COUNT()`, `SQL_CALC_FOUND_ROWS`, `NEXTVAL()`/`LASTVAL()`/`SETVAL()`,
    /// `NEXT VALUE FOR` / `PREVIOUS VALUE FOR`, `MASTER_POS_WAIT()`/`MASTER_GTID_WAIT()`,
    /// user-variable assignment `:=`, a routing hint naming the master, a
    /// multi-statement, a `SHOW` whose answer differs per server, or a call of a
    /// function that is not a MariaDB built-in (`StoredFunction`: a stored
    /// function may read tables the statement does not name, or write). The
    /// reason is the route's (its metric label): one of `LockingRead`,
    /// `SelectInto`, `LockFunction`, `LastInsertId`, `FoundRows`, `Sequence`,
    /// `UserVariable`, `Hint`, `MultiStatement`, `SideEffect`, `StoredFunction`.
    ///
    /// Computed for every kind (for a write it is informative only). When
    /// several reasons apply: `MultiStatement` first, then `Hint`, then the
    /// first one found in the text, `StoredFunction` only when no other applies.
    pub force_master: Option<RouteReason>,
    /// `SET @x = ...`, `SELECT @x := ...`, `SELECT ... INTO @x` (in any statement).
    pub sets_user_variable: bool,
    /// `CREATE [OR REPLACE] TEMPORARY TABLE` (or `TEMPORARY SEQUENCE`).
    pub creates_temp_table: bool,
    /// `LOCK TABLE(S)`, `LOCK INSTANCE FOR BACKUP`, `BACKUP LOCK`,
    /// `FLUSH TABLES ... WITH READ LOCK` / `FOR EXPORT`.
    pub locks_tables: bool,
    /// `GET_LOCK(` anywhere.
    pub takes_named_lock: bool,
    /// Tables a read reads, as written (`db.t` or `t`: unquoted, original
    /// case, each once), from every FROM/JOIN (comma joins, subqueries and
    /// derived tables, every UNION branch). `Some(vec![])` for a read of no
    /// table (`SELECT 1`, `VALUES (1)`). None when not [`Kind::Read`] or when
    /// the tables cannot be determined with confidence: `WITH` (CTE names),
    /// `JSON_TABLE(...)` and other table functions, `LATERAL`,
    /// `FOR SYSTEM_TIME`, unbalanced parentheses, names that are not UTF-8 or
    /// hold a dot (`` `a.b` ``),
    /// SHOW/EXPLAIN/DESCRIBE/HELP. Caveat: views may read tables not named
    /// here (they have no triggers, so they are untracked); a call of a
    /// function that is not a built-in sets `force_master: StoredFunction`.
    pub tables: Option<Vec<String>>,
    // ---- additions beyond the first API sketch ----
    /// The text holds more than one statement (also reported as
    /// `force_master: Some(MultiStatement)`). The kind is then `Write`; use
    /// [`split_statements`] to learn each one's effects.
    pub multi_statement: bool,
    /// A user variable is read (`SELECT @x`, `WHERE id = @id`): the answer
    /// depends on session state that only the connection which set it has.
    pub reads_user_variable: bool,
    /// `UNLOCK TABLES` / `UNLOCK TABLE` / `UNLOCK INSTANCE` / `BACKUP UNLOCK`.
    pub unlocks_tables: bool,
    /// The answer is about the previous statement on the same connection:
    /// `SHOW WARNINGS|ERRORS|COUNT(*) WARNINGS|PROFILE(S)`, `@@warning_count`,
    /// `@@error_count`, `FOUND_ROWS()`, `ROW_COUNT()`, `GET DIAGNOSTICS`. Best
    /// routed to the connection that ran that statement (force_master is set
    /// too, as a fallback).
    pub refers_to_previous: bool,
    /// Is `autocommit` being set (for the session), and to what?
    /// (`SET autocommit=0`, `SET @@autocommit = OFF`, `SET SESSION autocommit=1`,
    /// `SET autocommit='ON'`, ...). The last assignment in the text wins. None when
    /// it is not set, set globally, or set to something other than a literal
    /// (`DEFAULT`, `@v`, `1+0`): the OK packet's `SERVER_STATUS_AUTOCOMMIT` flag is
    /// the authority then.
    pub autocommit: Option<bool>,
    /// `refers_to_previous` and the read also reads tables
    /// (`SELECT @@warning_count, a FROM t`; `tables` names them, None:
    /// unknown, so every table): sending it to the previous statement's
    /// connection is right for the diagnostics but, when that connection is
    /// a replica, only if that replica is fresh for those tables. The router
    /// must check that freshness (or use the master); never send it to the
    /// previous replica unchecked. False for `SHOW WARNINGS` and reads of no
    /// table (`SELECT @@warning_count`).
    pub previous_reads_tables: bool,
}

impl Classified {
    /// A read that may go to a replica (subject to the session's state and
    /// freshness).
    pub fn replica_eligible(&self) -> bool {
        self.kind == Kind::Read && self.force_master.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// SELECT (also `(SELECT ...)`, `WITH ... SELECT` with no writing keyword),
    /// SHOW, DESCRIBE/DESC, EXPLAIN (not `EXPLAIN ANALYZE`), HELP, VALUES
    /// (MariaDB), TABLE t.
    Read,
    /// Everything else: DML, DDL, CALL, DO, LOAD, HANDLER,
    /// PREPARE/EXECUTE/DEALLOCATE, GRANT, FLUSH, KILL, ANALYZE, OPTIMIZE,
    /// `BEGIN NOT ATOMIC`, `COMMIT AND CHAIN`, `ROLLBACK TO SAVEPOINT`,
    /// multi-statements, unknown or unparsable text.
    Write,
    /// A SET statement.
    SessionSet(SetScope),
    /// `USE db`: the database name, unquoted.
    Use(String),
    /// `BEGIN [WORK]`, `START TRANSACTION [READ ONLY | READ WRITE | WITH
    /// CONSISTENT SNAPSHOT], ...`; read_only when READ ONLY is present and READ
    /// WRITE is not.
    Begin { read_only: bool },
    /// `COMMIT [WORK] [AND NO CHAIN] [[NO] RELEASE]` (`AND CHAIN` is a Write:
    /// the session stays in a transaction).
    Commit,
    /// `ROLLBACK [WORK] [AND NO CHAIN] [[NO] RELEASE]`; not `ROLLBACK TO
    /// [SAVEPOINT] x` nor `AND CHAIN` (those are Write: the transaction goes on).
    Rollback,
    /// Only whitespace, comments or `;`.
    Empty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetScope {
    /// SET of session state that must be replayed on every backend connection
    /// the session uses: `SET NAMES`, `SET CHARACTER SET` / `CHARSET`,
    /// `SET [SESSION|LOCAL|@@session.|@@local.|@@]var = ...` (time_zone,
    /// sql_mode, autocommit, ...), `SET SESSION TRANSACTION ...`.
    Session,
    /// Contains a user variable assignment (`SET @a = 1`); `also_session` when
    /// session variables are set too (`SET @a = 1, sql_mode = ''`).
    UserVariable { also_session: bool },
    /// `SET GLOBAL` / `@@global.` / `PERSIST` / `PERSIST_ONLY` (wins over any
    /// other assignment in the same statement): master only, never replayed.
    Global,
    /// `SET TRANSACTION ...` (next transaction only), a `SET STATEMENT`
    /// without a readable `FOR <statement>` (with one, the statement is
    /// classified as `<statement>`), `SET PASSWORD`, `SET DEFAULT ROLE`: master only, not replayed.
    MasterOnly,
    /// `SET ROLE r` / `SET ROLE NONE`: changes the privileges of the connection it
    /// runs on, which another connection cannot be made to share exactly (it
    /// would log in with the account's default role): master only, and the
    /// session stays on that connection, which never serves another session.
    Role,
}

/// Classify one COM_QUERY under the server's default `sql_mode`.
pub fn classify(sql: &[u8]) -> Classified {
    classify_with(sql, LexOptions::default())
}

/// Classify under a known `sql_mode` (`ANSI_QUOTES`, `NO_BACKSLASH_ESCAPES`
/// change where strings end) and server version (which versioned comments
/// are code; see [`LexOptions::server_version`]).
///
/// `SET STATEMENT var = value, ... FOR <statement>` is classified as
/// `<statement>` (a write if it writes, a read with its tables if it reads):
/// the variables last for that statement only, nothing is left to replay.
pub fn classify_with(sql: &[u8], opts: LexOptions) -> Classified {
    match set_statement_for(sql, opts) {
        None => classify_plain(sql, opts),
        Some(Err(())) => unknown_write(),
        Some(Ok((body, hint))) => {
            let mut c = classify_plain(body, opts);
            if hint && !c.multi_statement {
                c.force_master = Some(RouteReason::Hint);
            }
            c
        }
    }
}

/// [`classify_with`] without the `SET STATEMENT` prefix rule (so a nested
/// prefix, which the server refuses anyway, costs no recursion).
fn classify_plain(sql: &[u8], opts: LexOptions) -> Classified {
    let (c, doubt) = Scanner::new(sql, opts).run();
    if !doubt {
        return c;
    }
    // A versioned comment that a MariaDB 10.11 runs or skips depending on
    // its patch level, which is not known: read the text as the oldest and
    // the newest 10.11 would; when the readings differ, the master.
    let (low, high) = DEFAULT_VERSION_RANGE;
    let read_at = |v| {
        Scanner::new(
            sql,
            LexOptions {
                server_version: v,
                ..opts
            },
        )
        .run()
        .0
    };
    let (a, b) = (read_at(low), read_at(high));
    if a == b {
        a
    } else {
        disagreement(a, b)
    }
}

/// A statement whose effects cannot be read: a write for the master.
fn unknown_write() -> Classified {
    Classified {
        kind: Kind::Write,
        force_master: Some(RouteReason::SideEffect),
        sets_user_variable: false,
        creates_temp_table: false,
        locks_tables: false,
        takes_named_lock: false,
        tables: None,
        multi_statement: false,
        reads_user_variable: false,
        unlocks_tables: false,
        refers_to_previous: false,
        autocommit: None,
        previous_reads_tables: false,
    }
}

/// `SET STATEMENT ... FOR <body>`: Some(Ok((body, master hint in the
/// prefix))), Some(Err) when the prefix cannot be read safely (its `FOR` is
/// inside an executable or undecided versioned comment), None when the text
/// is not such a statement.
fn set_statement_for(sql: &[u8], opts: LexOptions) -> Option<Result<(&[u8], bool), ()>> {
    let mut lx = Tokens::with_options(sql, opts);
    if kw_of(&lex(&mut lx)) != Kw::Set || kw_of(&lex(&mut lx)) != Kw::Statement {
        return None;
    }
    let mut depth = 0usize;
    loop {
        let t = lex(&mut lx);
        match tok_of(&t) {
            None | Some(Token::Semi) | Some(Token::Unterminated) => return None,
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => depth = depth.saturating_sub(1),
            _ if depth == 0 && kw_of(&t) == Kw::For => break,
            _ => {}
        }
    }
    if lx.in_exec() || lx.version_doubt() {
        return Some(Err(()));
    }
    Some(Ok((&sql[lx.offset()..], lx.master_hint())))
}

/// The statement a text runs: after a `SET STATEMENT ... FOR` prefix, the
/// text itself otherwise.
fn statement_body(sql: &[u8]) -> &[u8] {
    match set_statement_for(sql, LexOptions::default()) {
        Some(Ok((body, _))) => body,
        _ => sql,
    }
}

/// Must a statement that ran on the master count as touching every table
/// (a bump of the global `*` row)? True when it may change rows without
/// firing sluice's triggers, or its tables cannot be known: DDL (`CREATE`,
/// `ALTER`, `DROP`, `RENAME`), `TRUNCATE`, `CALL` (a procedure may run DDL),
/// `EXECUTE` and `EXECUTE IMMEDIATE` (dynamic SQL), `BEGIN NOT ATOMIC`
/// blocks, `REPAIR`, `IMPORT`, any statement sluice does not know, and
/// multi-statements; also behind `SET STATEMENT ... FOR`. False for reads,
/// session statements and transaction control, and for DML whose every row
/// change fires the triggers (`INSERT`, `UPDATE`, `DELETE`, `REPLACE`,
/// `LOAD DATA`, `DO`, `WITH ... UPDATE`), and for `PREPARE`/`DEALLOCATE`,
/// which change nothing by themselves (the `EXECUTE` counts).
pub fn writes_unknown_tables(c: &Classified, sql: &[u8]) -> bool {
    if c.multi_statement {
        return true;
    }
    match c.kind {
        Kind::Write => {}
        Kind::Read
        | Kind::SessionSet(_)
        | Kind::Use(_)
        | Kind::Begin { .. }
        | Kind::Commit
        | Kind::Rollback
        | Kind::Empty => return false,
    }
    let (word, rest) = first_word(statement_body(sql));
    if word == "DELETE" {
        return deletes_history(rest);
    }
    !matches!(
        word.as_str(),
        "INSERT"
            | "UPDATE"
            | "DELETE"
            | "REPLACE"
            | "LOAD"
            | "SELECT"
            | "WITH"
            | "VALUES"
            | "TABLE"
            | "DO"
            | "SET"
            | "USE"
            | "COMMIT"
            | "ROLLBACK"
            | "SAVEPOINT"
            | "RELEASE"
            | "XA"
            | "KILL"
            | "HANDLER"
            | "PREPARE"
            | "DEALLOCATE"
            | "CHECK"
            | "CHECKSUM"
            | "SHOW"
            | "EXPLAIN"
            | "DESCRIBE"
            | "DESC"
            | "HELP"
            | "ANALYZE"
            | "FLUSH"
            | "LOCK"
            | "UNLOCK"
            | "BACKUP"
            | "GET"
            | "SIGNAL"
            | "RESIGNAL"
    )
}

/// [`classify_with`] under a known sql_mode, and, where a double-byte
/// client character set may read the text differently (issue 40, see
/// `lexer::multibyte_view`), that reading too: when the two differ, the
/// statement goes to the master with the effects of both ([`disagreement`]).
pub fn classify_in_mode(sql: &[u8], opts: LexOptions) -> Classified {
    let c = classify_with(sql, opts);
    match super::lexer::multibyte_view(sql).map(|v| classify_with(&v, opts)) {
        Some(other) if other != c => disagreement(c, other),
        _ => c,
    }
}

/// `DELETE HISTORY FROM t` (after `DELETE`): it purges the historical rows
/// of a system-versioned table without firing a trigger, so it counts like
/// TRUNCATE. An executable comment where the next word should be counts too
/// (it may hold `HISTORY`).
fn deletes_history(mut rest: &[u8]) -> bool {
    loop {
        let (word, after) = first_word(rest);
        match word.as_str() {
            "LOW_PRIORITY" | "QUICK" | "IGNORE" => rest = after,
            "HISTORY" | "" => return true,
            _ => return false,
        }
    }
}

/// Classify without knowing the session's `sql_mode`: where strings end
/// depends on NO_BACKSLASH_ESCAPES, so text with a backslash is classified
/// both ways, and when the readings disagree the statement is treated as a
/// write (it goes to the master untouched) with the session effects of both
/// readings (see [`disagreement`]). Without a backslash both readings are the
/// same and this costs nothing extra.
pub fn classify_any_mode(sql: &[u8]) -> Classified {
    let c = classify(sql);
    // A double-byte client character set reads some texts differently
    // (issue 40, see `multibyte_view`): when it does, both readings.
    let mut out = c.clone();
    if let Some(view) = super::lexer::multibyte_view(sql) {
        let other = classify(&view);
        if other != c {
            out = disagreement(out, other);
        }
    }
    if !sql.contains(&b'\\') {
        return out;
    }
    // With a backslash, a double quote also ends differently under
    // ANSI_QUOTES (an identifier has no escapes): read those ways too.
    let ansi = sql.contains(&b'"');
    let modes = [(false, true), (true, false), (true, true)];
    for (ansi_quotes, no_backslash_escapes) in modes {
        if ansi_quotes && !ansi {
            continue;
        }
        let other = classify_with(
            sql,
            LexOptions {
                ansi_quotes,
                no_backslash_escapes,
                ..LexOptions::default()
            },
        );
        // Every field counts: a table one reading sees and the other does
        // not is a read set sluice cannot be sure of.
        if other != c {
            out = disagreement(out, other);
        }
    }
    out
}

/// What two readings of one text that disagree amount to: a write for the
/// master that has every session effect either reading has (the session is
/// pinned if either would pin it, the global counter is bumped if either is a
/// multi-statement), never an answer "about the previous statement" (that
/// would route it to the previous statement's connection, maybe a replica),
/// no table list (only reads have one) and no `UNLOCK` or `autocommit` value
/// unless both readings agree.
fn disagreement(a: Classified, b: Classified) -> Classified {
    let multi = a.multi_statement || b.multi_statement;
    Classified {
        kind: Kind::Write,
        force_master: Some(if multi {
            RouteReason::MultiStatement
        } else {
            RouteReason::SideEffect
        }),
        sets_user_variable: a.sets_user_variable || b.sets_user_variable,
        creates_temp_table: a.creates_temp_table || b.creates_temp_table,
        locks_tables: a.locks_tables || b.locks_tables,
        takes_named_lock: a.takes_named_lock || b.takes_named_lock,
        tables: None,
        multi_statement: multi,
        reads_user_variable: a.reads_user_variable || b.reads_user_variable,
        unlocks_tables: a.unlocks_tables && b.unlocks_tables,
        refers_to_previous: false,
        autocommit: if a.autocommit == b.autocommit {
            a.autocommit
        } else {
            None
        },
        previous_reads_tables: false,
    }
}

/// The statements of a multi-statement text, split at `;` outside strings,
/// identifiers and comments, without the `;`; empty statements are skipped.
/// The split is lexical: a compound statement (`BEGIN NOT ATOMIC ... END`,
/// a stored program body) is cut at its inner `;` too.
pub fn split_statements(sql: &[u8]) -> Statements<'_> {
    Statements {
        sql,
        lx: Tokens::new(sql),
        start: 0,
        done: false,
    }
}

/// Iterator returned by [`split_statements`].
#[derive(Debug, Clone)]
pub struct Statements<'a> {
    sql: &'a [u8],
    lx: Tokens<'a>,
    start: usize,
    done: bool,
}

impl<'a> Iterator for Statements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.done {
            return None;
        }
        let mut any = false;
        loop {
            match self.lx.next() {
                None => {
                    self.done = true;
                    return any.then(|| &self.sql[self.start..]);
                }
                Some(Token::Unterminated) => {
                    self.done = true;
                    return Some(&self.sql[self.start..]);
                }
                Some(Token::Semi) => {
                    let end = self.lx.offset() - 1;
                    let stmt = &self.sql[self.start..end];
                    self.start = self.lx.offset();
                    if any {
                        return Some(stmt);
                    }
                }
                Some(_) => any = true,
            }
        }
    }
}
