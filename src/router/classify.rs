//! The hot-path classifier for read/write splitting: a pure function of the
//! SQL text (bytes: any encoding, possibly several statements) to a
//! [`Classified`], with a hand-written tokenizer ([`super::lexer::Tokens`]) and
//! no parser. It allocates nothing for a plain statement except the `tables`
//! list of a read (and the name of `USE db`).
//!
//! Unknown or unparsable text is a [`Kind::Write`]: it goes to the master
//! untouched, which is always safe.

use super::lexer::{first_word, unquote_ident, LexOptions, Token, Tokens, DEFAULT_VERSION_RANGE};

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
    /// function that is not a MariaDB built-in (`StoredFunction`).
    ///
    /// Computed for every kind (for a write it is informative only). When
    /// several reasons apply: `MultiStatement` first, then `Hint`, then the
    /// first one found in the text.
    pub force_master: Option<MasterReason>,
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
    /// What `autocommit` is set to, as [`sets_autocommit`] returns it.
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MasterReason {
    LockingRead,
    SelectInto,
    LockFunction,
    LastInsertId,
    FoundRows,
    Sequence,
    UserVariable,
    Hint,
    MultiStatement,
    SideEffect,
    /// A read calls a function that is not a MariaDB built-in (`f()`,
    /// `db.f()`, in any clause): a stored function may read tables the
    /// statement does not name, or write. Lowest priority: reported only
    /// when no other reason applies.
    StoredFunction,
}

impl MasterReason {
    /// The route reason (the metric's label).
    pub fn reason(self) -> super::plan::RouteReason {
        use super::plan::RouteReason as R;
        match self {
            MasterReason::LockingRead => R::LockingRead,
            MasterReason::SelectInto => R::SelectInto,
            MasterReason::LockFunction => R::LockFunction,
            MasterReason::LastInsertId => R::LastInsertId,
            MasterReason::FoundRows => R::FoundRows,
            MasterReason::Sequence => R::Sequence,
            MasterReason::UserVariable => R::UserVariable,
            MasterReason::Hint => R::Hint,
            MasterReason::MultiStatement => R::MultiStatement,
            MasterReason::SideEffect => R::SideEffect,
            MasterReason::StoredFunction => R::StoredFunction,
        }
    }
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
                c.force_master = Some(MasterReason::Hint);
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
        force_master: Some(MasterReason::SideEffect),
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
            MasterReason::MultiStatement
        } else {
            MasterReason::SideEffect
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

/// Is `autocommit` being set (for the session), and to what?
/// (`SET autocommit=0`, `SET @@autocommit = OFF`, `SET SESSION autocommit=1`,
/// `SET autocommit='ON'`, ...). The last assignment in the text wins. None when
/// it is not set, set globally, or set to something other than a literal
/// (`DEFAULT`, `@v`, `1+0`): the OK packet's `SERVER_STATUS_AUTOCOMMIT` flag is
/// the authority then.
pub fn sets_autocommit(sql: &[u8]) -> Option<bool> {
    classify(sql).autocommit
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

// ---------------------------------------------------------------------------
// Keywords

/// The words the classifier looks at; every other word is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kw {
    None,
    Warnings,
    All,
    Analyze,
    And,
    As,
    Backup,
    Begin,
    Binary,
    Binlog,
    By,
    Chain,
    Character,
    Charset,
    Commit,
    Consistent,
    Count,
    Create,
    Current,
    Default,
    Delete,
    Desc,
    Describe,
    Diagnostics,
    Dual,
    Errors,
    Except,
    Explain,
    Export,
    Fetch,
    Flush,
    For,
    Force,
    From,
    Full,
    Get,
    Global,
    Group,
    Having,
    Help,
    Ignore,
    In,
    Index,
    Insert,
    Instance,
    Intersect,
    Into,
    Join,
    Key,
    Lateral,
    Limit,
    Local,
    Lock,
    Master,
    Mode,
    Names,
    Next,
    No,
    On,
    Only,
    Or,
    Order,
    Password,
    Persist,
    PersistOnly,
    Previous,
    Procedure,
    Processlist,
    Profile,
    Profiles,
    Read,
    Recursive,
    Relaylog,
    Release,
    Replace,
    Replica,
    Replicas,
    Role,
    Rollback,
    Select,
    Session,
    Set,
    Share,
    Show,
    Slave,
    Slaves,
    Snapshot,
    SqlCalcFoundRows,
    Stacked,
    Start,
    Statement,
    StraightJoin,
    SystemTime,
    Table,
    Tables,
    Temporary,
    Transaction,
    Union,
    Unlock,
    Update,
    Use,
    Using,
    Value,
    Values,
    Where,
    Window,
    With,
    Work,
    Write,
    GetLock,
    ReleaseLock,
    IsFreeLock,
    IsUsedLock,
    ReleaseAllLocks,
    LastInsertId,
    FoundRows,
    RowCount,
    Nextval,
    Lastval,
    Setval,
    MasterPosWait,
    MasterGtidWait,
    SourcePosWait,
    WaitForExecutedGtidSet,
    WaitUntilSqlThreadAfterGtids,
}

/// Sorted by bytes (upper case), at most 255 of them.
const KEYWORDS: &[(&[u8], Kw)] = &[
    (b"ALL", Kw::All),
    (b"ANALYZE", Kw::Analyze),
    (b"AND", Kw::And),
    (b"AS", Kw::As),
    (b"BACKUP", Kw::Backup),
    (b"BEGIN", Kw::Begin),
    (b"BINARY", Kw::Binary),
    (b"BINLOG", Kw::Binlog),
    (b"BY", Kw::By),
    (b"CHAIN", Kw::Chain),
    (b"CHARACTER", Kw::Character),
    (b"CHARSET", Kw::Charset),
    (b"COMMIT", Kw::Commit),
    (b"CONSISTENT", Kw::Consistent),
    (b"COUNT", Kw::Count),
    (b"CREATE", Kw::Create),
    (b"CURRENT", Kw::Current),
    (b"DEFAULT", Kw::Default),
    (b"DELETE", Kw::Delete),
    (b"DESC", Kw::Desc),
    (b"DESCRIBE", Kw::Describe),
    (b"DIAGNOSTICS", Kw::Diagnostics),
    (b"DUAL", Kw::Dual),
    (b"ERRORS", Kw::Errors),
    (b"EXCEPT", Kw::Except),
    (b"EXPLAIN", Kw::Explain),
    (b"EXPORT", Kw::Export),
    (b"FETCH", Kw::Fetch),
    (b"FLUSH", Kw::Flush),
    (b"FOR", Kw::For),
    (b"FORCE", Kw::Force),
    (b"FOUND_ROWS", Kw::FoundRows),
    (b"FROM", Kw::From),
    (b"FULL", Kw::Full),
    (b"GET", Kw::Get),
    (b"GET_LOCK", Kw::GetLock),
    (b"GLOBAL", Kw::Global),
    (b"GROUP", Kw::Group),
    (b"HAVING", Kw::Having),
    (b"HELP", Kw::Help),
    (b"IGNORE", Kw::Ignore),
    (b"IN", Kw::In),
    (b"INDEX", Kw::Index),
    (b"INSERT", Kw::Insert),
    (b"INSTANCE", Kw::Instance),
    (b"INTERSECT", Kw::Intersect),
    (b"INTO", Kw::Into),
    (b"IS_FREE_LOCK", Kw::IsFreeLock),
    (b"IS_USED_LOCK", Kw::IsUsedLock),
    (b"JOIN", Kw::Join),
    (b"KEY", Kw::Key),
    (b"LASTVAL", Kw::Lastval),
    (b"LAST_INSERT_ID", Kw::LastInsertId),
    (b"LATERAL", Kw::Lateral),
    (b"LIMIT", Kw::Limit),
    (b"LOCAL", Kw::Local),
    (b"LOCK", Kw::Lock),
    (b"MASTER", Kw::Master),
    (b"MASTER_GTID_WAIT", Kw::MasterGtidWait),
    (b"MASTER_POS_WAIT", Kw::MasterPosWait),
    (b"MODE", Kw::Mode),
    (b"NAMES", Kw::Names),
    (b"NEXT", Kw::Next),
    (b"NEXTVAL", Kw::Nextval),
    (b"NO", Kw::No),
    (b"ON", Kw::On),
    (b"ONLY", Kw::Only),
    (b"OR", Kw::Or),
    (b"ORDER", Kw::Order),
    (b"PASSWORD", Kw::Password),
    (b"PERSIST", Kw::Persist),
    (b"PERSIST_ONLY", Kw::PersistOnly),
    (b"PREVIOUS", Kw::Previous),
    (b"PROCEDURE", Kw::Procedure),
    (b"PROCESSLIST", Kw::Processlist),
    (b"PROFILE", Kw::Profile),
    (b"PROFILES", Kw::Profiles),
    (b"READ", Kw::Read),
    (b"RECURSIVE", Kw::Recursive),
    (b"RELAYLOG", Kw::Relaylog),
    (b"RELEASE", Kw::Release),
    (b"RELEASE_ALL_LOCKS", Kw::ReleaseAllLocks),
    (b"RELEASE_LOCK", Kw::ReleaseLock),
    (b"REPLACE", Kw::Replace),
    (b"REPLICA", Kw::Replica),
    (b"REPLICAS", Kw::Replicas),
    (b"ROLE", Kw::Role),
    (b"ROLLBACK", Kw::Rollback),
    (b"ROW_COUNT", Kw::RowCount),
    (b"SELECT", Kw::Select),
    (b"SESSION", Kw::Session),
    (b"SET", Kw::Set),
    (b"SETVAL", Kw::Setval),
    (b"SHARE", Kw::Share),
    (b"SHOW", Kw::Show),
    (b"SLAVE", Kw::Slave),
    (b"SLAVES", Kw::Slaves),
    (b"SNAPSHOT", Kw::Snapshot),
    (b"SOURCE_POS_WAIT", Kw::SourcePosWait),
    (b"SQL_CALC_FOUND_ROWS", Kw::SqlCalcFoundRows),
    (b"STACKED", Kw::Stacked),
    (b"START", Kw::Start),
    (b"STATEMENT", Kw::Statement),
    (b"STRAIGHT_JOIN", Kw::StraightJoin),
    (b"SYSTEM_TIME", Kw::SystemTime),
    (b"TABLE", Kw::Table),
    (b"TABLES", Kw::Tables),
    (b"TEMPORARY", Kw::Temporary),
    (b"TRANSACTION", Kw::Transaction),
    (b"UNION", Kw::Union),
    (b"UNLOCK", Kw::Unlock),
    (b"UPDATE", Kw::Update),
    (b"USE", Kw::Use),
    (b"USING", Kw::Using),
    (b"VALUE", Kw::Value),
    (b"VALUES", Kw::Values),
    (b"WAIT_FOR_EXECUTED_GTID_SET", Kw::WaitForExecutedGtidSet),
    (
        b"WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS",
        Kw::WaitUntilSqlThreadAfterGtids,
    ),
    (b"WARNINGS", Kw::Warnings),
    (b"WHERE", Kw::Where),
    (b"WINDOW", Kw::Window),
    (b"WITH", Kw::With),
    (b"WORK", Kw::Work),
    (b"WRITE", Kw::Write),
];

/// The longest keyword.
const MAX_KEYWORD: usize = 33;

/// The first 16 bytes of a word, upper-cased, big-endian and zero-padded: the
/// keys sort as the words do, and words of up to 16 bytes map one-to-one.
const fn pack(w: &[u8]) -> u128 {
    let mut key = 0u128;
    let mut i = 0;
    while i < 16 {
        let b = if i < w.len() { w[i].to_ascii_uppercase() } else { 0 };
        key = (key << 8) | b as u128;
        i += 1;
    }
    key
}

const ONES: u128 = u128::MAX / 255;

/// [`pack`], branch-free: load, then upper-case the ASCII letters of all 16
/// bytes at once (bytes >= 0x80 are left alone; no keyword has them).
fn pack_fast(w: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    let n = w.len().min(16);
    buf[..n].copy_from_slice(&w[..n]);
    let x = u128::from_be_bytes(buf);
    let low7 = x & (ONES * 0x7f);
    let ge_a = low7 + ONES * (0x80 - b'a' as u128);
    let gt_z = low7 + ONES * (0x80 - b'z' as u128 - 1);
    let lower = ge_a & !gt_z & !x & (ONES * 0x80);
    x ^ (lower >> 2)
}

/// [`KEYWORDS`] packed.
const KEYS: [u128; KEYWORDS.len()] = {
    let mut keys = [0u128; KEYWORDS.len()];
    let mut i = 0;
    while i < KEYWORDS.len() {
        keys[i] = pack(KEYWORDS[i].0);
        i += 1;
    }
    keys
};

/// Keyword lookup: a perfect hash of the packed word into [`SLOTS`]. If a
/// new keyword makes two collide, the build fails: run the ignored test
/// `find_keyword_hash` for a new multiplier.
const HASH_MUL: u64 = 0x0af9_b4c9_b980_a54b;
const SLOT_BITS: u32 = 10;

const fn slot(key: u128) -> usize {
    slot_with(key, HASH_MUL)
}

const fn slot_with(key: u128, mul: u64) -> usize {
    let mixed = (key >> 64) as u64 ^ key as u64;
    (mixed.wrapping_mul(mul) >> (64 - SLOT_BITS)) as usize
}

/// [`KEYS`] in memory, for lookups at run time.
static PACKED: [u128; KEYWORDS.len()] = KEYS;

/// Index + 1 into [`KEYWORDS`] per slot; 0 for none.
static SLOTS: [u8; 1 << SLOT_BITS] = {
    let mut slots = [0u8; 1 << SLOT_BITS];
    let mut i = 0;
    while i < KEYWORDS.len() {
        let s = slot(KEYS[i]);
        assert!(slots[s] == 0, "keyword hash collision: change HASH_MUL");
        slots[s] = (i + 1) as u8;
        i += 1;
    }
    slots
};

fn keyword(w: &[u8]) -> Kw {
    if w.is_empty() || w.len() > MAX_KEYWORD {
        return Kw::None;
    }
    let key = pack_fast(w);
    let i = usize::from(SLOTS[slot(key)]);
    if i == 0 {
        return Kw::None;
    }
    match (PACKED.get(i - 1), KEYWORDS.get(i - 1)) {
        (Some(&k), Some((word, kw)))
            if k == key && word.len() == w.len() && (w.len() <= 16 || word.eq_ignore_ascii_case(w)) =>
        {
            *kw
        }
        _ => Kw::None,
    }
}

// ---------------------------------------------------------------------------
// Tokens with their keyword

#[derive(Debug, Clone, Copy)]
struct Tk<'a> {
    tok: Token<'a>,
    kw: Kw,
}

fn lex<'a>(lx: &mut Tokens<'a>) -> Option<Tk<'a>> {
    let tok = lx.next()?;
    let kw = match tok {
        Token::Word(w) => keyword(w),
        _ => Kw::None,
    };
    Some(Tk { tok, kw })
}

fn kw_of(t: &Option<Tk<'_>>) -> Kw {
    t.map_or(Kw::None, |t| t.kw)
}

fn tok_of<'a>(t: &Option<Tk<'a>>) -> Option<Token<'a>> {
    t.map(|t| t.tok)
}

/// The end of a statement: end of text, `;`, or a token that never ends.
fn is_end(t: &Option<Tk<'_>>) -> bool {
    matches!(tok_of(t), None | Some(Token::Semi) | Some(Token::Unterminated))
}

// ---------------------------------------------------------------------------
// The head of one statement: its kind and the effects its first words show

/// How a statement starts, for the rules that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lead {
    /// SELECT, `(SELECT`, VALUES, TABLE.
    Select,
    With,
    Set,
    Other,
}

struct Head {
    kind: Kind,
    lead: Lead,
    force: Option<MasterReason>,
    creates_temp_table: bool,
    locks_tables: bool,
    unlocks_tables: bool,
    sets_user_variable: bool,
    refers_to_previous: bool,
    /// Some(value) when the statement sets autocommit (value None: unknown).
    autocommit: Option<Option<bool>>,
}

fn analyze_head(mut lx: Tokens<'_>) -> Head {
    let mut h = Head {
        kind: Kind::Write,
        lead: Lead::Other,
        force: None,
        creates_temp_table: false,
        locks_tables: false,
        unlocks_tables: false,
        sets_user_variable: false,
        refers_to_previous: false,
        autocommit: None,
    };
    let Some(mut t) = lex(&mut lx) else {
        h.kind = Kind::Empty;
        return h;
    };
    if t.tok == Token::LParen {
        while t.tok == Token::LParen {
            match lex(&mut lx) {
                Some(n) => t = n,
                None => return h,
            }
        }
        if !matches!(t.kw, Kw::Select | Kw::Values | Kw::Table | Kw::With) {
            return h;
        }
    }
    let lx = &mut lx;
    match t.kw {
        Kw::Select | Kw::Values | Kw::Table => {
            h.kind = Kind::Read;
            h.lead = Lead::Select;
        }
        Kw::With => {
            h.kind = Kind::Read;
            h.lead = Lead::With;
        }
        Kw::Show => {
            h.kind = Kind::Read;
            show(lx, &mut h);
        }
        Kw::Describe | Kw::Desc | Kw::Explain if kw_of(&lex(lx)) != Kw::Analyze => {
            h.kind = Kind::Read;
        }
        Kw::Help => h.kind = Kind::Read,
        Kw::Set => {
            h.lead = Lead::Set;
            set_statement(lx, &mut h);
        }
        Kw::Use => {
            let name = match tok_of(&lex(lx)) {
                Some(Token::Word(w)) => std::str::from_utf8(w).ok().map(str::to_owned),
                Some(Token::Quoted(q)) => unquote_ident(q),
                _ => None,
            };
            if let Some(name) = name {
                if !name.is_empty() && is_end(&lex(lx)) {
                    h.kind = Kind::Use(name);
                }
            }
        }
        Kw::Begin => {
            let n = lex(lx);
            if is_end(&n) || (kw_of(&n) == Kw::Work && is_end(&lex(lx))) {
                h.kind = Kind::Begin { read_only: false };
            }
        }
        Kw::Start if kw_of(&lex(lx)) == Kw::Transaction => {
            if let Some(read_only) = start_transaction(lx) {
                h.kind = Kind::Begin { read_only };
            }
        }
        Kw::Commit if plain_transaction_end(lx) => h.kind = Kind::Commit,
        Kw::Rollback if plain_transaction_end(lx) => h.kind = Kind::Rollback,
        Kw::Lock => {
            if matches!(kw_of(&lex(lx)), Kw::Table | Kw::Tables | Kw::Instance) {
                h.locks_tables = true;
            }
        }
        Kw::Unlock => {
            if matches!(kw_of(&lex(lx)), Kw::Table | Kw::Tables | Kw::Instance) {
                h.unlocks_tables = true;
            }
        }
        Kw::Backup => match kw_of(&lex(lx)) {
            Kw::Lock => h.locks_tables = true,
            Kw::Unlock => h.unlocks_tables = true,
            _ => {}
        },
        Kw::Flush => {
            // FLUSH TABLES [t, ...] WITH READ LOCK / FOR EXPORT
            let (mut p1, mut p2) = (Kw::None, Kw::None);
            loop {
                let n = lex(lx);
                if is_end(&n) {
                    break;
                }
                let k = kw_of(&n);
                if (k == Kw::Lock && p1 == Kw::Read && p2 == Kw::With) || (k == Kw::Export && p1 == Kw::For) {
                    h.locks_tables = true;
                }
                (p2, p1) = (p1, k);
            }
        }
        Kw::Create => {
            let mut n = lex(lx);
            if kw_of(&n) == Kw::Or {
                n = lex(lx);
                if kw_of(&n) == Kw::Replace {
                    n = lex(lx);
                }
            }
            if kw_of(&n) == Kw::Temporary {
                h.creates_temp_table = true;
            }
        }
        Kw::Get => {
            let mut n = lex(lx);
            if matches!(kw_of(&n), Kw::Current | Kw::Stacked) {
                n = lex(lx);
            }
            if kw_of(&n) == Kw::Diagnostics {
                h.refers_to_previous = true;
                // `GET DIAGNOSTICS @n = NUMBER`, `... CONDITION 1 @e =
                // MYSQL_ERRNO`: the targets are user variables (in a stored
                // program they may be local ones, but this is a client's).
                loop {
                    let t = lex(lx);
                    if is_end(&t) {
                        break;
                    }
                    if matches!(tok_of(&t), Some(Token::UserVar(_))) {
                        h.sets_user_variable = true;
                    }
                }
            }
        }
        _ => {}
    }
    h
}

/// After SHOW: statements whose answer differs per server or is about the
/// previous statement.
fn show(lx: &mut Tokens<'_>, h: &mut Head) {
    let mut t = lex(lx);
    if matches!(kw_of(&t), Kw::Full | Kw::All | Kw::Global | Kw::Session) {
        t = lex(lx);
    }
    match kw_of(&t) {
        Kw::Master
        | Kw::Binlog
        | Kw::Binary
        | Kw::Slave
        | Kw::Slaves
        | Kw::Replica
        | Kw::Replicas
        | Kw::Relaylog
        | Kw::Processlist => h.force = Some(MasterReason::SideEffect),
        Kw::Warnings | Kw::Errors | Kw::Count | Kw::Profile | Kw::Profiles => {
            h.force = Some(MasterReason::SideEffect);
            h.refers_to_previous = true;
        }
        _ => {}
    }
}

/// After `START TRANSACTION`: Some(read_only) if only valid characteristics follow.
fn start_transaction(lx: &mut Tokens<'_>) -> Option<bool> {
    let (mut ro, mut rw) = (false, false);
    let mut t = lex(lx);
    while !is_end(&t) {
        match kw_of(&t) {
            Kw::Read => match kw_of(&lex(lx)) {
                Kw::Only => ro = true,
                Kw::Write => rw = true,
                _ => return None,
            },
            Kw::With => {
                if kw_of(&lex(lx)) != Kw::Consistent || kw_of(&lex(lx)) != Kw::Snapshot {
                    return None;
                }
            }
            _ => return None,
        }
        t = lex(lx);
        if tok_of(&t) == Some(Token::Comma) {
            t = lex(lx);
            if is_end(&t) {
                return None;
            }
        } else if !is_end(&t) {
            return None;
        }
    }
    Some(ro && !rw)
}

/// After COMMIT/ROLLBACK: `[WORK] [AND NO CHAIN] [[NO] RELEASE]` and nothing else.
fn plain_transaction_end(lx: &mut Tokens<'_>) -> bool {
    let mut t = lex(lx);
    if kw_of(&t) == Kw::Work {
        t = lex(lx);
    }
    if kw_of(&t) == Kw::And {
        // AND CHAIN starts the next transaction at once: not an end.
        if kw_of(&lex(lx)) != Kw::No || kw_of(&lex(lx)) != Kw::Chain {
            return false;
        }
        t = lex(lx);
    }
    if kw_of(&t) == Kw::No {
        if kw_of(&lex(lx)) != Kw::Release {
            return false;
        }
        t = lex(lx);
    } else if kw_of(&t) == Kw::Release {
        t = lex(lx);
    }
    is_end(&t)
}

/// `@@global.x` → (true, "x"); `@@session.x`, `@@local.x`, `@@x` → (false, "x").
fn sysvar_scope(name: &[u8]) -> (bool, &[u8]) {
    for (prefix, global) in [
        (&b"global."[..], true),
        (b"persist.", true),
        (b"persist_only.", true),
        (b"session.", false),
        (b"local.", false),
    ] {
        if name.len() > prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix) {
            return (global, &name[prefix.len()..]);
        }
    }
    (false, name)
}

/// A boolean system variable's literal value.
fn bool_value(t: Tk<'_>) -> Option<bool> {
    let v: &[u8] = match t.tok {
        Token::Number(n) => n,
        Token::Word(w) => w,
        Token::Str(s) => s.get(1..s.len().saturating_sub(1))?,
        _ => return None,
    };
    const TRUE: [&[u8]; 3] = [b"1", b"on", b"true"];
    const FALSE: [&[u8]; 3] = [b"0", b"off", b"false"];
    if TRUE.iter().any(|x| x.eq_ignore_ascii_case(v)) {
        Some(true)
    } else if FALSE.iter().any(|x| x.eq_ignore_ascii_case(v)) {
        Some(false)
    } else {
        None
    }
}

/// After SET: the scope of the whole statement, and autocommit.
fn set_statement(lx: &mut Tokens<'_>, h: &mut Head) {
    let (mut global, mut user, mut session) = (false, false, false);
    let mut t = lex(lx);
    if kw_of(&t) == Kw::Role {
        h.kind = Kind::SessionSet(SetScope::Role);
        return;
    }
    let master_only = match kw_of(&t) {
        Kw::Transaction | Kw::Statement | Kw::Password => true,
        Kw::Default => kw_of(&lex(&mut lx.clone())) == Kw::Role,
        _ => false,
    };
    if master_only {
        h.kind = Kind::SessionSet(SetScope::MasterOnly);
        return;
    }
    'items: loop {
        let Some(first) = t else {
            return; // `SET` alone or `SET a=1,`: not valid, a Write
        };
        // A session variable this item assigns (for autocommit).
        let mut var: Option<&[u8]> = None;
        match first.tok {
            Token::UserVar(_) => {
                user = true;
                h.sets_user_variable = true;
            }
            Token::SysVar(name) => {
                let (g, rest) = sysvar_scope(name);
                if g {
                    global = true;
                } else {
                    session = true;
                    var = Some(rest);
                }
            }
            Token::Word(w) => match first.kw {
                Kw::Global | Kw::Persist | Kw::PersistOnly => {
                    global = true;
                    if kw_of(&lex(&mut lx.clone())) == Kw::Transaction {
                        break 'items;
                    }
                }
                Kw::Session | Kw::Local => {
                    session = true;
                    let n = lex(lx);
                    match n.map(|n| (n.tok, n.kw)) {
                        Some((_, Kw::Transaction)) => break 'items,
                        Some((Token::Word(v), _)) => var = Some(v),
                        Some((Token::Quoted(q), _)) => var = q.get(1..q.len().saturating_sub(1)),
                        _ => return,
                    }
                }
                Kw::Names | Kw::Character | Kw::Charset => session = true,
                _ => {
                    session = true;
                    var = Some(w);
                }
            },
            Token::Quoted(q) => {
                session = true;
                var = q.get(1..q.len().saturating_sub(1));
            }
            _ => return,
        }
        let mut next = lex(lx);
        if var.is_some_and(|v| v.eq_ignore_ascii_case(b"autocommit"))
            && matches!(tok_of(&next), Some(Token::Eq | Token::Assign))
        {
            let value = lex(lx);
            next = lex(lx);
            let alone = is_end(&next) || tok_of(&next) == Some(Token::Comma);
            h.autocommit = Some(if alone { value.and_then(bool_value) } else { None });
        }
        // On to the next item, after a comma outside parentheses.
        let mut depth = 0usize;
        loop {
            match tok_of(&next) {
                None | Some(Token::Semi) | Some(Token::Unterminated) => break 'items,
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth = depth.saturating_sub(1),
                Some(Token::Comma) if depth == 0 => break,
                _ => {}
            }
            next = lex(lx);
        }
        t = lex(lx);
    }
    h.kind = Kind::SessionSet(if global {
        SetScope::Global
    } else if user {
        SetScope::UserVariable {
            also_session: session,
        }
    } else {
        SetScope::Session
    });
}

// ---------------------------------------------------------------------------
// The scan over every token

const MAX_DEPTH: usize = 32;

/// Where a query level is in its FROM clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FromState {
    /// Not in a FROM clause.
    Off,
    /// A table reference comes next (after FROM, JOIN, a comma).
    Expect,
    /// After AS: an alias comes next.
    Alias,
    /// After a table reference: alias, JOIN, ON, index hints, comma, clause end.
    AfterTable,
    /// In `USE|FORCE|IGNORE INDEX|KEY [FOR ...]`, before its list.
    IndexHint,
    /// In a join condition (ON/USING).
    Cond,
}

/// One parenthesis level.
#[derive(Debug, Clone, Copy)]
struct Level {
    state: FromState,
    /// A query (SELECT/VALUES/TABLE) runs at this level: FROM is a clause here,
    /// not a word in a function's arguments (`EXTRACT(YEAR FROM d)`).
    query: bool,
}

const TOP: Level = Level {
    state: FromState::Off,
    query: false,
};

/// Words that end a FROM clause (all reserved words: a non-reserved one could
/// be an alias, and `FROM t offset, u` must still see `u`). `WINDOW` is
/// checked apart; MINUS (Oracle mode) ends nothing but the next SELECT
/// starts a new query anyway.
fn ends_from(k: Kw) -> bool {
    matches!(
        k,
        Kw::Where
            | Kw::Group
            | Kw::Having
            | Kw::Order
            | Kw::Limit
            | Kw::Union
            | Kw::Except
            | Kw::Intersect
            | Kw::Into
            | Kw::Lock
            | Kw::Procedure
            | Kw::Fetch
    )
}

/// The keyword a quoted identifier spells (`` `get_lock` ``), if any.
fn quoted_keyword(q: &[u8]) -> Kw {
    let Some(&delim) = q.first() else {
        return Kw::None;
    };
    match q.get(1..q.len().saturating_sub(1)) {
        Some(inner) if !inner.contains(&delim) => keyword(inner),
        _ => Kw::None,
    }
}

fn ident_name(t: Token<'_>) -> Option<String> {
    match t {
        Token::Word(w) => std::str::from_utf8(w).ok().map(str::to_owned),
        Token::Quoted(q) => unquote_ident(q),
        _ => None,
    }
}

struct Scanner<'a> {
    lx: Tokens<'a>,
    /// Keywords of the current token and the three before it (None for
    /// other words and for punctuation).
    hist: [Kw; 4],
    /// The current token and the two before it (for `db.f(`).
    toks: [Option<Token<'a>>; 3],
    /// `WITH`: the main query (a SELECT at the top level) has started.
    with_main: bool,
    /// A read calls a function that is not a built-in (`f()`, `db.f()`):
    /// it may read or write any table (see `MasterReason::StoredFunction`).
    stored_function: bool,
    /// How the current statement starts.
    lead: Lead,
    /// Parenthesis depth in the current statement.
    paren: usize,
    /// Just after `INTO` or `INTO @a,`: user variables are targets.
    into_list: bool,

    statements: usize,
    first_kind: Kind,
    first_lead: Lead,
    seen_semi: bool,
    multi: bool,
    error: bool,
    with_write: bool,
    force: Option<MasterReason>,
    sets_user_variable: bool,
    creates_temp_table: bool,
    locks_tables: bool,
    unlocks_tables: bool,
    takes_named_lock: bool,
    reads_user_variable: bool,
    refers_to_previous: bool,
    autocommit: Option<Option<bool>>,

    /// Tables are collected for the first statement when it is a SELECT.
    collect: bool,
    tables: Vec<String>,
    tables_unknown: bool,
    levels: [Level; MAX_DEPTH],
    depth: usize,
    /// Levels beyond MAX_DEPTH (tables are unknown then).
    overflow: usize,
}

impl<'a> Scanner<'a> {
    fn new(sql: &'a [u8], opts: LexOptions) -> Scanner<'a> {
        Scanner {
            lx: Tokens::with_options(sql, opts),
            hist: [Kw::None; 4],
            toks: [None; 3],
            stored_function: false,
            with_main: false,
            lead: Lead::Other,
            paren: 0,
            into_list: false,
            statements: 0,
            first_kind: Kind::Empty,
            first_lead: Lead::Other,
            seen_semi: false,
            multi: false,
            error: false,
            with_write: false,
            force: None,
            sets_user_variable: false,
            creates_temp_table: false,
            locks_tables: false,
            unlocks_tables: false,
            takes_named_lock: false,
            reads_user_variable: false,
            refers_to_previous: false,
            autocommit: None,
            collect: false,
            tables: Vec::new(),
            tables_unknown: false,
            levels: [TOP; MAX_DEPTH],
            depth: 0,
            overflow: 0,
        }
    }

    /// The classification, and whether a versioned comment was undecided.
    fn run(mut self) -> (Classified, bool) {
        let mut at_start = true;
        loop {
            let before = at_start.then(|| self.lx.clone());
            let Some(t) = self.bump() else { break };
            match t.tok {
                Token::Unterminated => {
                    self.error = true;
                    break;
                }
                Token::Semi => {
                    self.end_statement();
                    self.seen_semi = true;
                    at_start = true;
                    continue;
                }
                _ => {}
            }
            if self.seen_semi {
                self.multi = true;
            }
            if let Some(before) = before {
                at_start = false;
                self.start_statement(analyze_head(before));
            }
            self.token(t);
        }
        self.end_statement();
        let doubt = self.lx.version_doubt();
        (self.finish(), doubt)
    }

    fn start_statement(&mut self, h: Head) {
        self.statements += 1;
        if self.statements == 1 {
            self.first_lead = h.lead;
            self.collect = h.lead == Lead::Select;
            self.first_kind = h.kind;
        } else {
            self.collect = false;
        }
        self.lead = h.lead;
        self.with_main = false;
        self.paren = 0;
        self.into_list = false;
        self.depth = 0;
        self.overflow = 0;
        self.levels[0] = TOP;
        if let Some(r) = h.force {
            self.reason(r);
        }
        self.creates_temp_table |= h.creates_temp_table;
        self.locks_tables |= h.locks_tables;
        self.unlocks_tables |= h.unlocks_tables;
        self.sets_user_variable |= h.sets_user_variable;
        self.refers_to_previous |= h.refers_to_previous;
        if h.autocommit.is_some() {
            self.autocommit = h.autocommit;
        }
    }

    fn end_statement(&mut self) {
        let dangling = matches!(
            self.levels[0].state,
            FromState::Expect | FromState::Alias | FromState::IndexHint
        );
        if self.collect && (self.depth != 0 || self.overflow != 0 || dangling) {
            self.tables_unknown = true;
        }
        self.collect = false;
    }

    fn finish(self) -> Classified {
        let kind = if self.error || self.multi {
            Kind::Write
        } else if self.statements == 0 {
            Kind::Empty
        } else if self.first_lead == Lead::With && self.with_write {
            Kind::Write
        } else {
            self.first_kind
        };
        let force = if self.multi {
            Some(MasterReason::MultiStatement)
        } else if self.lx.master_hint() {
            Some(MasterReason::Hint)
        } else {
            // Last: the session looks for some reasons (FOUND_ROWS) by name.
            self.force
                .or(self.stored_function.then_some(MasterReason::StoredFunction))
        };
        let tables = (kind == Kind::Read && self.first_lead == Lead::Select && !self.tables_unknown)
            .then_some(self.tables);
        let previous_reads_tables = self.refers_to_previous
            && kind == Kind::Read
            && matches!(self.first_lead, Lead::Select | Lead::With)
            && tables.as_ref().is_none_or(|t| !t.is_empty());
        Classified {
            kind,
            force_master: force,
            sets_user_variable: self.sets_user_variable,
            creates_temp_table: self.creates_temp_table,
            locks_tables: self.locks_tables,
            takes_named_lock: self.takes_named_lock,
            tables,
            multi_statement: self.multi,
            reads_user_variable: self.reads_user_variable,
            unlocks_tables: self.unlocks_tables,
            refers_to_previous: self.refers_to_previous,
            autocommit: self.autocommit.flatten(),
            previous_reads_tables,
        }
    }

    fn bump(&mut self) -> Option<Tk<'a>> {
        let t = lex(&mut self.lx)?;
        self.hist = [t.kw, self.hist[0], self.hist[1], self.hist[2]];
        self.toks = [Some(t.tok), self.toks[0], self.toks[1]];
        Some(t)
    }

    fn peek(&self) -> Option<Tk<'a>> {
        lex(&mut self.lx.clone())
    }

    fn reason(&mut self, r: MasterReason) {
        if self.force.is_none() {
            self.force = Some(r);
        }
    }

    /// Whether the current token is the target of a SET item (`SET @a = 1`):
    /// the head analysis has counted it.
    fn set_target(&self) -> bool {
        self.lead == Lead::Set
            && self.paren == 0
            && matches!(tok_of(&self.peek()), Some(Token::Eq | Token::Assign))
    }

    fn token(&mut self, t: Tk<'a>) {
        let into = std::mem::take(&mut self.into_list);
        match t.tok {
            Token::Word(_) => self.word(t),
            Token::UserVar(_) => {
                if into {
                    self.sets_user_variable = true;
                    self.into_list = true;
                } else if !self.set_target() {
                    if tok_of(&self.peek()) == Some(Token::Assign) {
                        self.sets_user_variable = true;
                        self.reason(MasterReason::UserVariable);
                    } else {
                        self.reads_user_variable = true;
                    }
                }
            }
            Token::Comma if into => self.into_list = true,
            Token::SysVar(name) if !self.set_target() => self.sysvar(name),
            Token::LParen => {
                // Only words have keywords; a quoted built-in name calls the
                // built-in too (`` `get_lock`('x', 0) ``).
                match self.toks[1] {
                    Some(Token::Quoted(q)) => self.function(quoted_keyword(q)),
                    _ => self.function(self.hist[1]),
                }
                if matches!(self.lead, Lead::Select | Lead::With) && self.calls_routine() {
                    self.stored_function = true;
                }
                self.paren += 1;
            }
            Token::RParen => self.paren = self.paren.saturating_sub(1),
            _ => {}
        }
        if self.collect {
            self.tables_step(t);
        }
    }

    fn word(&mut self, t: Tk<'a>) {
        let p1 = self.hist[1];
        if self.lead == Lead::With && self.paren == 0 && t.kw == Kw::Select {
            self.with_main = true;
        }
        match t.kw {
            Kw::Update if p1 == Kw::For => self.reason(MasterReason::LockingRead),
            Kw::Update if self.lead == Lead::With => self.with_write = true,
            Kw::Share if p1 == Kw::For => self.reason(MasterReason::LockingRead),
            Kw::Mode if p1 == Kw::Share && self.hist[2] == Kw::In && self.hist[3] == Kw::Lock => {
                self.reason(MasterReason::LockingRead)
            }
            Kw::For if p1 == Kw::Value && matches!(self.hist[2], Kw::Next | Kw::Previous) => {
                self.reason(MasterReason::Sequence)
            }
            Kw::SqlCalcFoundRows => self.reason(MasterReason::FoundRows),
            Kw::Into if matches!(self.lead, Lead::Select | Lead::With) => {
                self.reason(MasterReason::SelectInto);
                self.into_list = true;
            }
            // INSERT(...) and REPLACE(...) are also string functions.
            Kw::Insert | Kw::Replace
                if self.lead == Lead::With && tok_of(&self.peek()) != Some(Token::LParen) =>
            {
                self.with_write = true
            }
            Kw::Delete if self.lead == Lead::With => self.with_write = true,
            _ => {}
        }
    }

    /// A word followed by `(` (spaces allowed, as with IGNORE_SPACE).
    fn function(&mut self, k: Kw) {
        match k {
            Kw::GetLock => {
                self.takes_named_lock = true;
                self.reason(MasterReason::LockFunction);
            }
            Kw::ReleaseLock | Kw::IsFreeLock | Kw::IsUsedLock | Kw::ReleaseAllLocks => {
                self.reason(MasterReason::LockFunction)
            }
            Kw::LastInsertId => self.reason(MasterReason::LastInsertId),
            Kw::FoundRows | Kw::RowCount => {
                self.reason(MasterReason::FoundRows);
                self.refers_to_previous = true;
            }
            Kw::Nextval | Kw::Lastval | Kw::Setval => self.reason(MasterReason::Sequence),
            Kw::MasterPosWait
            | Kw::MasterGtidWait
            | Kw::SourcePosWait
            | Kw::WaitForExecutedGtidSet
            | Kw::WaitUntilSqlThreadAfterGtids => self.reason(MasterReason::SideEffect),
            _ => {}
        }
    }

    /// At `(`: is the token before it the name of a stored function (any
    /// function that is not a built-in)? `db.f(` always is, and so is a
    /// quoted name (`` `f`( ``, `"f"(` under ANSI_QUOTES; a string before `(`
    /// too, in case the mode is ANSI_QUOTES after all). `AGAINST`, `ESCAPE`,
    /// `OF` are keywords only in their place (after `)`, a string, `AS`);
    /// elsewhere MariaDB would call a stored function of that name.
    fn calls_routine(&self) -> bool {
        match self.toks[1] {
            Some(Token::Word(w)) => {
                if self.toks[2] == Some(Token::Dot) {
                    return true;
                }
                if self.cte_list() {
                    return false;
                }
                if super::builtins::is_builtin(w) {
                    return false;
                }
                let after = self.toks[2];
                let is = |k: &[u8]| w.eq_ignore_ascii_case(k);
                !((is(b"AGAINST") && after == Some(Token::RParen))
                    || (is(b"ESCAPE") && matches!(after, Some(Token::Str(_))))
                    || (is(b"OF") && self.hist[2] == Kw::As))
            }
            Some(Token::Quoted(q)) => {
                self.toks[2] == Some(Token::Dot)
                    || !unquote_ident(q).is_some_and(|n| super::builtins::is_builtin(n.as_bytes()))
            }
            Some(Token::Str(_)) => true,
            // A CTE's column list: `WITH c(a) AS`, `, d(b) AS` before the
            // main SELECT.
            _ => false,
        }
    }

    /// In `WITH` before the main query, at the top level: a word before `(`
    /// after `WITH`, `RECURSIVE` or `,` names a CTE with a column list.
    fn cte_list(&self) -> bool {
        self.lead == Lead::With
            && !self.with_main
            && self.paren == 0
            && (matches!(self.hist[2], Kw::With | Kw::Recursive) || self.toks[2] == Some(Token::Comma))
    }

    fn sysvar(&mut self, name: &[u8]) {
        let (_, v) = sysvar_scope(name);
        let is = |x: &[u8]| v.eq_ignore_ascii_case(x);
        if is(b"last_insert_id") || is(b"identity") || is(b"insert_id") {
            self.reason(MasterReason::LastInsertId);
        } else if is(b"warning_count") || is(b"error_count") {
            self.reason(MasterReason::SideEffect);
            self.refers_to_previous = true;
        } else if is(b"last_gtid") {
            self.reason(MasterReason::SideEffect);
        }
    }

    // ---- tables ----

    fn tables_step(&mut self, t: Tk<'a>) {
        match t.tok {
            Token::LParen => {
                let (parent, child) = match self.levels[self.depth].state {
                    // A derived table or a parenthesized join.
                    FromState::Expect => (FromState::AfterTable, FromState::Expect),
                    FromState::IndexHint => (FromState::AfterTable, FromState::Off),
                    s => (s, FromState::Off),
                };
                if self.overflow == 0 {
                    self.levels[self.depth].state = parent;
                }
                self.push(Level {
                    state: child,
                    query: child == FromState::Expect,
                });
                return;
            }
            Token::RParen => {
                self.pop();
                return;
            }
            _ => {}
        }
        if self.overflow > 0 {
            return;
        }
        let d = self.depth;
        let mut lvl = self.levels[d];
        match t.kw {
            Kw::Select | Kw::Values => {
                lvl.query = true;
                lvl.state = FromState::Off;
            }
            Kw::Table => {
                lvl.query = true;
                lvl.state = FromState::Expect;
            }
            // CTE names would pass for tables.
            Kw::With => self.tables_unknown = true,
            _ => lvl.state = self.advance_from(lvl, t),
        }
        self.levels[d] = lvl;
    }

    fn give_up(&mut self) -> FromState {
        self.tables_unknown = true;
        FromState::Off
    }

    fn advance_from(&mut self, lvl: Level, t: Tk<'a>) -> FromState {
        match lvl.state {
            FromState::Off => match t.kw {
                Kw::From | Kw::Join if lvl.query => FromState::Expect,
                _ => FromState::Off,
            },
            FromState::Expect => match t.tok {
                Token::Word(_) | Token::Quoted(_) => match t.kw {
                    Kw::Dual => FromState::AfterTable,
                    Kw::Lateral => self.give_up(),
                    _ => self.table_name(t.tok),
                },
                _ => self.give_up(),
            },
            FromState::Alias => match t.tok {
                Token::Word(_) | Token::Quoted(_) | Token::Str(_) => FromState::AfterTable,
                _ => self.give_up(),
            },
            FromState::AfterTable => match t.tok {
                Token::Comma => FromState::Expect,
                Token::Quoted(_) | Token::Str(_) => FromState::AfterTable,
                Token::Word(_) => match t.kw {
                    Kw::As => FromState::Alias,
                    Kw::Join | Kw::StraightJoin => FromState::Expect,
                    Kw::On | Kw::Using => FromState::Cond,
                    Kw::Use | Kw::Force | Kw::Ignore => FromState::IndexHint,
                    // FOR UPDATE/SHARE ends the query; FOR SYSTEM_TIME ... may
                    // hold FROM x TO y.
                    Kw::For if kw_of(&self.peek()) == Kw::SystemTime => self.give_up(),
                    Kw::For => FromState::Off,
                    Kw::From => self.give_up(),
                    Kw::Window if self.window_clause() => FromState::Off,
                    k if ends_from(k) => FromState::Off,
                    // An alias, a join modifier (LEFT, NATURAL, ...), PARTITION.
                    _ => FromState::AfterTable,
                },
                _ => self.give_up(),
            },
            FromState::IndexHint => match t.kw {
                Kw::Index | Kw::Key | Kw::For | Kw::Join | Kw::Order | Kw::Group | Kw::By => {
                    FromState::IndexHint
                }
                _ => self.give_up(),
            },
            FromState::Cond => match t.tok {
                Token::Comma => FromState::Expect,
                Token::Word(_) => match t.kw {
                    Kw::Join | Kw::StraightJoin => FromState::Expect,
                    Kw::For => FromState::Off,
                    Kw::From => self.give_up(),
                    Kw::Window if self.window_clause() => FromState::Off,
                    k if ends_from(k) => FromState::Off,
                    _ => FromState::Cond,
                },
                _ => FromState::Cond,
            },
        }
    }

    /// `WINDOW w AS (...)` (not an alias named `window`).
    fn window_clause(&self) -> bool {
        let mut la = self.lx.clone();
        matches!(tok_of(&lex(&mut la)), Some(Token::Word(_) | Token::Quoted(_)))
            && kw_of(&lex(&mut la)) == Kw::As
    }

    /// A table reference starting with `first`: `t` or `db.t`.
    fn table_name(&mut self, first: Token<'a>) -> FromState {
        match tok_of(&self.peek()) {
            // JSON_TABLE(...) and other table functions.
            Some(Token::LParen) => return self.give_up(),
            Some(Token::Dot) => {
                self.bump();
                match tok_of(&self.peek()) {
                    Some(second @ (Token::Word(_) | Token::Quoted(_))) => {
                        self.bump();
                        self.record(first, Some(second));
                    }
                    _ => return self.give_up(),
                }
            }
            _ => self.record(first, None),
        }
        FromState::AfterTable
    }

    fn record(&mut self, a: Token<'_>, b: Option<Token<'_>>) {
        // A dot inside a quoted name would read as `db.table`.
        let Some(mut name) = ident_name(a).filter(|n| !n.contains('.')) else {
            self.tables_unknown = true;
            return;
        };
        if let Some(b) = b {
            let Some(b) = ident_name(b).filter(|n| !n.contains('.')) else {
                self.tables_unknown = true;
                return;
            };
            name.push('.');
            name.push_str(&b);
        }
        if !self.tables.contains(&name) {
            self.tables.push(name);
        }
    }

    fn push(&mut self, l: Level) {
        if self.overflow == 0 && self.depth + 1 < MAX_DEPTH {
            self.depth += 1;
            self.levels[self.depth] = l;
        } else {
            self.overflow += 1;
            self.tables_unknown = true;
        }
    }

    fn pop(&mut self) {
        if self.overflow > 0 {
            self.overflow -= 1;
        } else if self.depth > 0 {
            self.depth -= 1;
        } else {
            self.tables_unknown = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MasterReason as R;

    fn c(s: &str) -> Classified {
        classify(s.as_bytes())
    }
    fn k(s: &str) -> Kind {
        c(s).kind
    }
    fn fm(s: &str) -> Option<MasterReason> {
        c(s).force_master
    }
    fn tables(s: &str) -> Option<Vec<String>> {
        c(s).tables
    }
    fn tt(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }
    /// A plain read a replica may serve.
    fn plain_read(s: &str) {
        let r = c(s);
        assert_eq!(r.kind, Kind::Read, "{s}");
        assert_eq!(r.force_master, None, "{s}");
        assert!(r.replica_eligible(), "{s}");
    }
    fn read_forced(s: &str, why: MasterReason) {
        let r = c(s);
        assert_eq!(r.kind, Kind::Read, "{s}");
        assert_eq!(r.force_master, Some(why), "{s}");
        assert!(!r.replica_eligible(), "{s}");
    }
    fn write(s: &str) {
        assert_eq!(k(s), Kind::Write, "{s}");
    }
    fn set(s: &str) -> SetScope {
        match k(s) {
            Kind::SessionSet(scope) => scope,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn keyword_table_is_sorted_and_unique() {
        for w in KEYWORDS.windows(2) {
            assert!(w[0].0 < w[1].0, "{:?} {:?}", w[0].0, w[1].0);
        }
        for w in KEYS.windows(2) {
            assert!(w[0] < w[1]);
        }
        for (word, kw) in KEYWORDS {
            assert!(word.len() <= MAX_KEYWORD);
            assert!(word.iter().all(|c| c.is_ascii_uppercase() || *c == b'_'));
            assert_eq!(keyword(word), *kw);
            assert_eq!(keyword(&word.to_ascii_lowercase()), *kw);
        }
        assert!(KEYWORDS.len() < 256);
        for (i, k) in KEYS.iter().enumerate() {
            assert_eq!(usize::from(SLOTS[slot(*k)]), i + 1);
        }
        assert_eq!(keyword(b"SeLeCt"), Kw::Select);
        assert_eq!(keyword(b"_select"), Kw::None);
        assert_eq!(keyword(b"1select"), Kw::None);
        assert_eq!(keyword(b"SELECTX"), Kw::None);
        assert_eq!(keyword(b"SELEC"), Kw::None);
        assert_eq!(keyword(b""), Kw::None);
        assert_eq!(keyword(b"s\xffl"), Kw::None);
        for w in [
            &b"select"[..],
            b"SeLeCt_x",
            b"a@[`{z",
            b"\xe1\xfa",
            b"0123456789abcdefXYZ",
            b"",
        ] {
            assert_eq!(pack_fast(w), pack(w), "{w:?}");
        }
        for (word, _) in KEYWORDS {
            assert_eq!(pack_fast(&word.to_ascii_lowercase()), pack(word));
        }
        // Long keywords are compared in full.
        assert_eq!(keyword(b"sql_calc_found_rows"), Kw::SqlCalcFoundRows);
        assert_eq!(keyword(b"SQL_CALC_FOUND_ROWX"), Kw::None);
        assert_eq!(keyword(b"SQL_CALC_FOUND_R"), Kw::None);
        assert_eq!(keyword(b"RELEASE_ALL_LOCKS_"), Kw::None);
    }

    #[test]
    fn reads() {
        for s in [
            "SELECT 1",
            "select * from t where id = 1",
            "  \n\tSELECT 1  ",
            "(SELECT 1)",
            "((select a from t)) union (select b from u)",
            "(SELECT 1) ORDER BY 1 LIMIT 1",
            "VALUES (1), (2)",
            "TABLE t",
            "SHOW TABLES",
            "show full columns from t",
            "SHOW CREATE TABLE t",
            "SHOW VARIABLES LIKE 'master%'",
            "SHOW GLOBAL STATUS",
            "DESCRIBE t",
            "desc t",
            "DESC db.t col",
            "EXPLAIN SELECT * FROM t",
            "EXPLAIN FORMAT=JSON SELECT 1",
            "EXPLAIN EXTENDED SELECT 1",
            "EXPLAIN UPDATE t SET a = 1",
            "EXPLAIN DELETE FROM t",
            "EXPLAIN t",
            "HELP 'contents'",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "with recursive r(n) as (select 1 union all select n+1 from r where n < 3) select * from r",
            "SELECT * FROM t WHERE name = 'x' ORDER BY id DESC LIMIT 10 OFFSET 5",
            "SELECT SLEEP(1)",
            "SELECT NOW(), UUID(), RAND()",
            "SELECT 1;",
            "SELECT 1 ; -- done",
            "SELECT 1; /* trailing */ ",
            "SELECT 1;;",
        ] {
            plain_read(s);
        }
    }

    #[test]
    fn writes_and_unknown() {
        for s in [
            "INSERT INTO t VALUES (1)",
            "insert t set a = 1",
            "UPDATE t SET a = 1",
            "DELETE FROM t",
            "REPLACE INTO t VALUES (1)",
            "CREATE TABLE t (a int)",
            "DROP TABLE t",
            "ALTER TABLE t ADD c int",
            "TRUNCATE t",
            "RENAME TABLE a TO b",
            "CALL p()",
            "DO 1",
            "LOAD DATA INFILE 'x' INTO TABLE t",
            "HANDLER t OPEN",
            "PREPARE s FROM 'SELECT 1'",
            "EXECUTE s",
            "DEALLOCATE PREPARE s",
            "DROP PREPARE s",
            "GRANT SELECT ON *.* TO 'u'@'h'",
            "REVOKE ALL ON *.* FROM u",
            "FLUSH PRIVILEGES",
            "KILL 42",
            "KILL QUERY 42",
            "ANALYZE TABLE t",
            "ANALYZE SELECT * FROM t",
            "ANALYZE FORMAT=JSON SELECT 1",
            "OPTIMIZE TABLE t",
            "CHECK TABLE t",
            "CHECKSUM TABLE t",
            "REPAIR TABLE t",
            "EXPLAIN ANALYZE SELECT * FROM t",
            "explain analyze select 1",
            "DESCRIBE ANALYZE SELECT 1",
            "SAVEPOINT s",
            "RELEASE SAVEPOINT s",
            "XA START 'x'",
            "XA COMMIT 'x'",
            "START SLAVE",
            "STOP REPLICA",
            "RESET MASTER",
            "PURGE BINARY LOGS TO 'x'",
            "CHANGE MASTER TO MASTER_HOST='h'",
            "INSTALL PLUGIN p SONAME 'x'",
            "SHUTDOWN",
            "SIGNAL SQLSTATE '45000'",
            "BINLOG 'abc'",
            "CREATE PROCEDURE p() BEGIN SELECT 1; END",
            "BEGIN NOT ATOMIC SELECT 1; END",
            "FOO BAR",
            "SELEC 1",
            "1",
            "'SELECT 1'",
            "`SELECT` 1",
            "@a",
            "(INSERT INTO t VALUES (1))",
            "(",
            "((",
            ")",
            "\u{0}\u{1}\u{2}",
            "DELIMITER //",
        ] {
            write(s);
        }
        assert_eq!(c("INSERT INTO t VALUES (1)").tables, None);
        assert_eq!(c("INSERT INTO t VALUES (1)").force_master, None);
    }

    #[test]
    fn with_statements() {
        plain_read("WITH a AS (SELECT 1) SELECT * FROM a");
        assert_eq!(tables("WITH a AS (SELECT * FROM t) SELECT * FROM a"), None);
        write("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a");
        write("WITH a AS (SELECT 1) UPDATE t JOIN a SET t.x = 1");
        write("WITH a AS (SELECT 1) DELETE FROM t WHERE id IN (SELECT * FROM a)");
        write("WITH a AS (SELECT 1) REPLACE INTO t SELECT * FROM a");
        write("with a as (select 1) insert t select * from a");
        // String functions and words in strings are no writes.
        plain_read("WITH a AS (SELECT REPLACE(x, 'a', 'b') AS y FROM t) SELECT * FROM a");
        plain_read("WITH a AS (SELECT INSERT('abc', 1, 1, 'x')) SELECT * FROM a");
        plain_read("WITH a AS (SELECT 'DELETE FROM t' AS q) SELECT * FROM a");
        plain_read("WITH a AS (SELECT `update` FROM t) SELECT * FROM a");
        read_forced("WITH a AS (SELECT 1) SELECT * FROM t FOR UPDATE", R::LockingRead);
        read_forced("WITH a AS (SELECT 1) SELECT * INTO @x FROM a", R::SelectInto);
        plain_read("(WITH a AS (SELECT 1) SELECT * FROM a)");
    }

    #[test]
    fn quoting() {
        plain_read("SELECT 'FOR UPDATE'");
        plain_read("SELECT \"FOR UPDATE\" FROM t");
        plain_read("SELECT 'a'';DELETE FROM t;'");
        plain_read("SELECT 'it''s', 'a\\'b FOR UPDATE', 'c\\\\'");
        plain_read("SELECT \"a\"\"b; INSERT\", \"x\\\"; DELETE\"");
        plain_read("SELECT `into` FROM t");
        plain_read("SELECT `a``; DELETE` FROM t");
        // A quoted built-in name calls the built-in (checked on 10.11).
        read_forced("SELECT `get_lock`(1)", R::LockFunction);
        plain_read("SELECT 'GET_LOCK(1)', \"LAST_INSERT_ID()\"");
        plain_read("SELECT '/*master*/', '-- master'");
        plain_read("SELECT ';' ; ");
        plain_read("SELECT N'x', _utf8mb4'y', X'00', B'1', 0x1F, 1.5e3, .5");
        plain_read("SELECT '\\\\' FROM t WHERE a = '\\''");
        assert_eq!(tables("SELECT * FROM `my db`.`t``x`"), tt(&["my db.t`x"]));
        // Unterminated text is unparsable.
        write("SELECT 'abc");
        write("SELECT \"abc");
        write("SELECT `abc");
        write("SELECT 'abc\\'");
        write("SELECT 1 /* never closed");
        write("/* never closed");
    }

    #[test]
    fn comments() {
        plain_read("-- c\nSELECT 1");
        plain_read("# c\nSELECT 1");
        plain_read("/* c */ SELECT /* d */ 1 /* e */");
        plain_read("/**/SELECT/**/1");
        plain_read("SELECT 1 -- ; DELETE FROM t");
        plain_read("SELECT 1 # ; DELETE FROM t");
        plain_read("SELECT 1 /* ; DELETE FROM t */");
        plain_read("SELECT 1 --\tx");
        plain_read("SELECT 1 --");
        // `--` without a space is two minus signs, not a comment.
        plain_read("SELECT 1--1");
        write("SELECT 1--1; DELETE FROM t");
        // An executable comment's content is code.
        write("/*!40101 INSERT INTO t VALUES (1) */");
    }

    #[test]
    fn hints() {
        for s in [
            "/*master*/ SELECT 1",
            "/* master */ SELECT 1",
            "SELECT /* sluice:master */ * FROM t",
            "SELECT 1 /*MASTER*/",
            "/* route: Master please */ SELECT 1",
            "/*+ master */ SELECT 1",
            "-- master\nSELECT 1",
            "SELECT 1 # master",
            "/* force_master */ SELECT 1",
        ] {
            read_forced(s, R::Hint);
        }
        for s in [
            "/* masters */ SELECT 1",
            "/* remaster */ SELECT 1",
            "/* slave */ SELECT 1",
            "SELECT 'master'",
            "SELECT `master` FROM master",
            "SELECT 1 /*!master_col */",
        ] {
            assert_ne!(fm(s), Some(R::Hint), "{s}");
        }
        // A hint wins over other reasons; a multi-statement wins over the hint.
        assert_eq!(fm("/*master*/ SELECT 1 FOR UPDATE"), Some(R::Hint));
        assert_eq!(fm("/*master*/ SELECT 1; SELECT 2"), Some(R::MultiStatement));
        // Hints on other kinds are reported too.
        assert_eq!(fm("/*master*/ INSERT INTO t VALUES (1)"), Some(R::Hint));
        let e = c("/*master*/");
        assert_eq!(e.kind, Kind::Empty);
        assert_eq!(e.force_master, Some(R::Hint));
        assert_eq!(tables("/*master*/ SELECT * FROM t"), tt(&["t"]));
    }

    #[test]
    fn executable_comments() {
        assert_eq!(set("/*!40101 SET NAMES utf8 */"), SetScope::Session);
        assert_eq!(
            set("/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;"),
            SetScope::UserVariable { also_session: true }
        );
        read_forced("SELECT /*!50000 SQL_CALC_FOUND_ROWS */ * FROM t", R::FoundRows);
        read_forced("SELECT * FROM t /*! FOR UPDATE */", R::LockingRead);
        // MariaDB skips MySQL 5.7+ versioned comments.
        plain_read("SELECT * FROM t /*!80000 FOR SHARE */");
        read_forced("SELECT * FROM t /*!50000 FOR UPDATE */", R::LockingRead);
        read_forced("SELECT 1 /*M!100100 FOR UPDATE */", R::LockingRead);
        plain_read("/*M!100100 SELECT 1 */");
        plain_read("/*!SELECT*/ 1");
        plain_read("/*!40001 SELECT '*/' */");
        assert_eq!(k("/*!*/"), Kind::Empty);
        assert_eq!(
            tables("SELECT /*!40001 SQL_NO_CACHE */ * FROM /*!t*/ JOIN u"),
            tt(&["t", "u"])
        );
        // A comment inside is still a comment (and can hint).
        read_forced("/*!50000 SELECT /* master */ 1 */", R::Hint);
    }

    #[test]
    fn case_insensitive() {
        read_forced("SeLeCt * FrOm t fOr UpDaTe", R::LockingRead);
        read_forced("select * from t lock in share mode", R::LockingRead);
        read_forced("select get_lock('a', 1)", R::LockFunction);
        read_forced("SELECT Last_Insert_Id()", R::LastInsertId);
        assert_eq!(k("begin"), Kind::Begin { read_only: false });
        assert_eq!(k("Commit"), Kind::Commit);
        assert_eq!(set("set Names utf8"), SetScope::Session);
        assert_eq!(tables("select * FROM T1 join Db.T2"), tt(&["T1", "Db.T2"]));
    }

    #[test]
    fn locking_reads() {
        for s in [
            "SELECT * FROM t WHERE id = 1 FOR UPDATE",
            "SELECT * FROM t FOR UPDATE NOWAIT",
            "SELECT * FROM t FOR UPDATE SKIP LOCKED",
            "SELECT * FROM t FOR UPDATE WAIT 5",
            "SELECT * FROM t FOR UPDATE OF t",
            "SELECT * FROM t FOR SHARE",
            "SELECT * FROM t FOR SHARE SKIP LOCKED",
            "SELECT * FROM t LOCK IN SHARE MODE",
            "SELECT * FROM t LOCK  IN\nSHARE /* x */ MODE",
            "SELECT * FROM t LIMIT 1 FOR UPDATE",
            "(SELECT * FROM t FOR UPDATE)",
            "SELECT * FROM t WHERE id IN (SELECT id FROM u FOR UPDATE)",
        ] {
            read_forced(s, R::LockingRead);
        }
        for s in [
            "SELECT 'FOR UPDATE'",
            "SELECT for_update FROM t",
            "SELECT `for` FROM `update`",
            "SELECT * FROM t WHERE `lock` IN ('share', 'mode')",
            "SELECT 'LOCK IN SHARE MODE'",
            "SELECT * FROM t FORCE INDEX FOR JOIN (i)",
        ] {
            plain_read(s);
        }
        assert_eq!(tables("SELECT * FROM t FOR UPDATE"), tt(&["t"]));
        assert!(!c("SELECT * FROM t FOR UPDATE").locks_tables);
    }

    #[test]
    fn multi_statements() {
        for s in [
            "SELECT 1; SELECT 2",
            "SELECT 1;SELECT 2;",
            "SELECT 1; DELETE FROM t",
            "SELECT 1; /* c */ SELECT 2",
            "BEGIN; SELECT 1",
            "; SELECT 1",
            "USE db; SELECT 1",
            "SELECT 1;\n-- c\nx",
        ] {
            let r = c(s);
            assert_eq!(r.kind, Kind::Write, "{s}");
            assert_eq!(r.force_master, Some(R::MultiStatement), "{s}");
            assert!(r.multi_statement, "{s}");
            assert_eq!(r.tables, None, "{s}");
        }
        for s in ["SELECT 1;", "SELECT 1 ; ", "SELECT 1; -- x", "SELECT ';'"] {
            assert!(!c(s).multi_statement, "{s}");
        }
        // Effects of every statement are collected.
        let r = c("SET @a = 1; SELECT @a");
        assert!(r.sets_user_variable && r.reads_user_variable);
        assert!(c("SELECT 1; CREATE TEMPORARY TABLE t (a int)").creates_temp_table);
        assert!(c("SELECT 1; LOCK TABLES t READ").locks_tables);
        assert!(c("SELECT 1; SELECT GET_LOCK('a', 1)").takes_named_lock);
        assert_eq!(sets_autocommit(b"SET autocommit=0; SELECT 1"), Some(false));
        assert_eq!(sets_autocommit(b"SET autocommit=0; SET autocommit=1"), Some(true));
    }

    #[test]
    fn split() {
        let v: Vec<&[u8]> =
            split_statements(b"SELECT 1; SELECT ';' ;; -- x;\n INSERT INTO t VALUES (';')").collect();
        assert_eq!(
            v,
            vec![
                &b"SELECT 1"[..],
                b" SELECT ';' ",
                b" -- x;\n INSERT INTO t VALUES (';')"
            ]
        );
        assert_eq!(split_statements(b"").count(), 0);
        assert_eq!(split_statements(b" ; ;/* x */").count(), 0);
        assert_eq!(
            split_statements(b"SELECT 1;").collect::<Vec<_>>(),
            vec![&b"SELECT 1"[..]]
        );
        assert_eq!(
            split_statements(b"SELECT 1; SELECT 'x").collect::<Vec<_>>(),
            vec![&b"SELECT 1"[..], b" SELECT 'x"]
        );
        let kinds: Vec<Kind> = split_statements(b"BEGIN; USE `d`; SELECT 1; COMMIT")
            .map(|s| classify(s).kind)
            .collect();
        assert_eq!(
            kinds,
            vec![
                Kind::Begin { read_only: false },
                Kind::Use("d".into()),
                Kind::Read,
                Kind::Commit
            ]
        );
    }

    #[test]
    fn select_into() {
        let r = c("SELECT a INTO @x FROM t");
        assert_eq!(r.force_master, Some(R::SelectInto));
        assert!(r.sets_user_variable);
        assert!(!r.reads_user_variable);
        let r = c("SELECT a, b FROM t INTO @x, @y");
        assert_eq!(r.force_master, Some(R::SelectInto));
        assert!(r.sets_user_variable && !r.reads_user_variable);
        let r = c("SELECT * FROM t INTO OUTFILE '/tmp/x'");
        assert_eq!(r.force_master, Some(R::SelectInto));
        assert!(!r.sets_user_variable);
        read_forced("SELECT * INTO DUMPFILE '/tmp/x' FROM t", R::SelectInto);
        read_forced("SELECT a INTO v FROM t", R::SelectInto);
        read_forced("(SELECT a FROM t INTO @v)", R::SelectInto);
        // INTO of a write, words in strings and identifiers.
        let r = c("INSERT INTO t VALUES (1)");
        assert!(!r.sets_user_variable);
        plain_read("SELECT `into` FROM t");
        plain_read("SELECT 'INTO @x'");
        let r = c("SELECT @x, a INTO @y FROM t");
        assert!(r.reads_user_variable && r.sets_user_variable);
    }

    #[test]
    fn master_functions() {
        let cases = [
            ("SELECT GET_LOCK('a', 10)", R::LockFunction),
            ("SELECT GET_LOCK ('a', 10)", R::LockFunction),
            ("SELECT RELEASE_LOCK('a')", R::LockFunction),
            ("SELECT IS_FREE_LOCK('a')", R::LockFunction),
            ("SELECT IS_USED_LOCK('a')", R::LockFunction),
            ("SELECT RELEASE_ALL_LOCKS()", R::LockFunction),
            ("SELECT LAST_INSERT_ID()", R::LastInsertId),
            ("SELECT last_insert_id ( )", R::LastInsertId),
            ("SELECT @@last_insert_id", R::LastInsertId),
            ("SELECT @@IDENTITY", R::LastInsertId),
            ("SELECT @@session.insert_id", R::LastInsertId),
            ("SELECT FOUND_ROWS()", R::FoundRows),
            ("SELECT ROW_COUNT()", R::FoundRows),
            ("SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", R::FoundRows),
            ("SELECT NEXTVAL(s)", R::Sequence),
            ("SELECT LASTVAL(s)", R::Sequence),
            ("SELECT SETVAL(s, 10)", R::Sequence),
            ("SELECT NEXT VALUE FOR s", R::Sequence),
            ("SELECT next value for db.s", R::Sequence),
            ("SELECT PREVIOUS VALUE FOR s", R::Sequence),
            ("SELECT MASTER_POS_WAIT('log', 4)", R::SideEffect),
            ("SELECT MASTER_GTID_WAIT('0-1-1', 1)", R::SideEffect),
            ("SELECT SOURCE_POS_WAIT('log', 4)", R::SideEffect),
            ("SELECT WAIT_FOR_EXECUTED_GTID_SET('x')", R::SideEffect),
            ("SELECT @@warning_count", R::SideEffect),
            ("SELECT @@last_gtid", R::SideEffect),
            ("SELECT @a := 1", R::UserVariable),
            ("SELECT @a:=a FROM t", R::UserVariable),
            ("SELECT * FROM t WHERE (@n := @n + 1) > 0", R::UserVariable),
        ];
        for (s, why) in cases {
            read_forced(s, why);
        }
        assert!(c("SELECT GET_LOCK('a', 1)").takes_named_lock);
        assert!(!c("SELECT RELEASE_LOCK('a')").takes_named_lock);
        assert!(c("SELECT @a := 1").sets_user_variable);
        // The first reason found wins.
        assert_eq!(fm("SELECT LAST_INSERT_ID(), FOUND_ROWS()"), Some(R::LastInsertId));
        // Only calls count.
        for s in [
            "SELECT get_lock FROM t",
            "SELECT last_insert_id, found_rows FROM t",
            "SELECT * FROM nextval",
            "SELECT t.row_count FROM t",
            "SELECT next_value FROM t",
            "SELECT 1 FROM t ORDER BY a OFFSET 1 ROWS FETCH NEXT 2 ROWS ONLY",
            "SELECT @@sql_mode, @@session.time_zone",
        ] {
            plain_read(s);
        }
        // Effects of writes are reported too.
        let r = c("DO GET_LOCK('x', 1)");
        assert_eq!(r.kind, Kind::Write);
        assert!(r.takes_named_lock);
        assert!(c("DO @a := 1").sets_user_variable);
        assert!(c("INSERT INTO t VALUES (GET_LOCK('x', 1))").takes_named_lock);
    }

    #[test]
    fn user_variables() {
        let r = c("SELECT @a");
        assert_eq!(r.kind, Kind::Read);
        assert_eq!(r.force_master, None);
        assert!(r.reads_user_variable && !r.sets_user_variable);
        assert!(c("SELECT * FROM t WHERE id = @id").reads_user_variable);
        assert!(c("SELECT @`a b`, @'c', @\"d\"").reads_user_variable);
        assert!(!c("SELECT @@sql_mode").reads_user_variable);
        assert!(!c("SELECT 'a@b'").reads_user_variable);
        assert!(!c("CREATE USER 'u'@'localhost'").reads_user_variable);
        assert!(!c("GRANT ALL ON *.* TO u@localhost").reads_user_variable);
        assert!(!c("SET PASSWORD FOR 'u'@'%' = 'x'").reads_user_variable);
    }

    #[test]
    fn set_scopes() {
        for s in [
            "SET NAMES utf8mb4",
            "set names 'utf8' collate 'utf8_bin'",
            "SET NAMES DEFAULT",
            "SET CHARACTER SET utf8",
            "SET CHARSET 'utf8'",
            "SET sql_mode = ''",
            "SET sql_mode := 'ANSI'",
            "SET SESSION sql_mode = 'x'",
            "SET LOCAL sql_mode = 'x'",
            "SET @@session.sql_mode = 'x'",
            "SET @@LOCAL.sql_mode = 'x'",
            "SET @@sql_mode = 'x'",
            "SET time_zone = '+00:00'",
            "SET autocommit = 0",
            "SET `sql_mode` = ''",
            "SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')",
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SET @@session.transaction_isolation = 'READ-COMMITTED', time_zone = 'UTC'",
            "SET max_execution_time = 10, SESSION wait_timeout = 5",
            "SET sql_mode = DEFAULT",
        ] {
            assert_eq!(set(s), SetScope::Session, "{s}");
            assert!(!c(s).sets_user_variable, "{s}");
        }
        for s in [
            "SET @a = 1",
            "SET @a := 1",
            "set @a=1, @b=(SELECT 1, 2)",
            "SET @`x y` = 'z'",
        ] {
            assert_eq!(set(s), SetScope::UserVariable { also_session: false }, "{s}");
            let r = c(s);
            assert!(r.sets_user_variable, "{s}");
            assert!(!r.reads_user_variable, "{s}");
            assert_eq!(r.force_master, None, "{s}");
        }
        for s in [
            "SET @a = 1, sql_mode = ''",
            "SET sql_mode = '', @a = 1",
            "SET NAMES utf8, @a = 1",
            "SET @a = CONCAT('a', 'b'), SESSION x = 2",
        ] {
            assert_eq!(set(s), SetScope::UserVariable { also_session: true }, "{s}");
        }
        assert!(c("SET @a = @b").reads_user_variable);
        assert!(c("SET sql_mode = @old").reads_user_variable);
        assert!(c("SET @a = GET_LOCK('x', 1)").takes_named_lock);
        for s in [
            "SET GLOBAL max_connections = 10",
            "SET @@global.max_connections = 10",
            "SET PERSIST max_connections = 10",
            "SET PERSIST_ONLY max_connections = 10",
            "SET @@persist.x = 1",
            "SET GLOBAL x = 1, SESSION y = 2",
            "SET sql_mode = '', GLOBAL x = 1",
            "SET @a = 1, @@global.x = 1",
            "SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        ] {
            assert_eq!(set(s), SetScope::Global, "{s}");
        }
        for s in [
            "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SET TRANSACTION READ ONLY",
            "SET STATEMENT max_statement_time = 1",
            "SET PASSWORD = 'x'",
            "SET PASSWORD FOR 'u'@'h' = PASSWORD('x')",
            "SET DEFAULT ROLE r TO u",
        ] {
            assert_eq!(set(s), SetScope::MasterOnly, "{s}");
        }
        for s in ["SET ROLE r", "set role NONE", "/*!SET ROLE r*/", "SET ROLE `r-1`"] {
            assert_eq!(set(s), SetScope::Role, "{s}");
        }
        // `SET` inside another statement is no SET statement.
        write("UPDATE t SET a = 1");
        // Not valid SET statements.
        write("SET");
        write("SET a = 1,");
        write("SET = 1");
        write("SET SESSION");
    }

    #[test]
    fn autocommit() {
        let cases: &[(&str, Option<bool>)] = &[
            ("SET autocommit=0", Some(false)),
            ("SET autocommit = 1", Some(true)),
            ("set AUTOCOMMIT=ON", Some(true)),
            ("SET autocommit = off", Some(false)),
            ("SET autocommit = TRUE", Some(true)),
            ("SET autocommit = false", Some(false)),
            ("SET autocommit = 'ON'", Some(true)),
            ("SET autocommit = \"off\"", Some(false)),
            ("SET @@autocommit = OFF", Some(false)),
            ("SET @@session.autocommit=1", Some(true)),
            ("SET @@LOCAL.autocommit=0", Some(false)),
            ("SET SESSION autocommit=1", Some(true)),
            ("SET LOCAL autocommit := 0", Some(false)),
            ("SET `autocommit` = 0", Some(false)),
            ("SET autocommit=0, sql_mode=''", Some(false)),
            ("SET sql_mode='', autocommit=1", Some(true)),
            ("SET autocommit=0, autocommit=1", Some(true)),
            ("/*!40101 SET autocommit=0 */", Some(false)),
            ("SET autocommit=0;", Some(false)),
            ("SET GLOBAL autocommit=0", None),
            ("SET @@global.autocommit=0", None),
            ("SET autocommit=DEFAULT", None),
            ("SET autocommit = 1+0", None),
            ("SET autocommit = @v", None),
            ("SET autocommit = 2", None),
            ("SET @autocommit = 0", None),
            ("SET autocommit_x = 0", None),
            ("SET sql_mode = 'autocommit=0'", None),
            ("SELECT 1", None),
            ("SET STATEMENT autocommit=0 FOR SELECT 1", None),
            ("UPDATE t SET autocommit = 0", None),
        ];
        for (s, want) in cases {
            assert_eq!(sets_autocommit(s.as_bytes()), *want, "{s}");
            assert_eq!(c(s).autocommit, *want, "{s}");
        }
    }

    #[test]
    fn use_db() {
        assert_eq!(k("USE db"), Kind::Use("db".into()));
        assert_eq!(k("use Db1"), Kind::Use("Db1".into()));
        assert_eq!(k("USE `we``ird db`;"), Kind::Use("we`ird db".into()));
        assert_eq!(k("USE db -- c"), Kind::Use("db".into()));
        assert_eq!(k("/* x */ USE db /* y */ ;"), Kind::Use("db".into()));
        assert_eq!(k("USE données"), Kind::Use("données".into()));
        assert_eq!(classify(b"USE \xff").kind, Kind::Write);
        write("USE");
        write("USE a b");
        write("USE ``");
        write("USE 'db'");
        write("USER x");
        let r = c("USE a; SELECT 1");
        assert_eq!(r.kind, Kind::Write);
        assert!(r.multi_statement);
    }

    #[test]
    fn transactions() {
        let b = |ro| Kind::Begin { read_only: ro };
        assert_eq!(k("BEGIN"), b(false));
        assert_eq!(k("begin work"), b(false));
        assert_eq!(k("BEGIN;"), b(false));
        assert_eq!(k("START TRANSACTION"), b(false));
        assert_eq!(k("START TRANSACTION READ ONLY"), b(true));
        assert_eq!(k("start transaction read only;"), b(true));
        assert_eq!(k("START TRANSACTION READ WRITE"), b(false));
        assert_eq!(k("START TRANSACTION READ ONLY, READ WRITE"), b(false));
        assert_eq!(k("START TRANSACTION WITH CONSISTENT SNAPSHOT"), b(false));
        assert_eq!(
            k("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"),
            b(true)
        );
        assert_eq!(
            k("START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT"),
            b(true)
        );
        write("BEGIN NOT ATOMIC SELECT 1; END");
        write("BEGIN x");
        write("START TRANSACTION READ");
        write("START TRANSACTION READ ONLY,");
        write("START TRANSACTION READ ONLY READ WRITE");
        write("START TRANSACTION WITH CONSISTENT");
        write("START");
        write("START SLAVE");

        assert_eq!(k("COMMIT"), Kind::Commit);
        assert_eq!(k("commit work"), Kind::Commit);
        assert_eq!(k("COMMIT AND NO CHAIN"), Kind::Commit);
        assert_eq!(k("COMMIT NO RELEASE"), Kind::Commit);
        assert_eq!(k("COMMIT RELEASE"), Kind::Commit);
        assert_eq!(k("COMMIT WORK AND NO CHAIN NO RELEASE;"), Kind::Commit);
        write("COMMIT AND CHAIN");
        write("COMMIT WORK AND CHAIN NO RELEASE");
        write("COMMIT foo");
        write("COMMIT AND");

        assert_eq!(k("ROLLBACK"), Kind::Rollback);
        assert_eq!(k("rollback work"), Kind::Rollback);
        assert_eq!(k("ROLLBACK AND NO CHAIN RELEASE"), Kind::Rollback);
        write("ROLLBACK TO SAVEPOINT s");
        write("ROLLBACK TO s");
        write("rollback work to savepoint s");
        write("ROLLBACK AND CHAIN");
    }

    #[test]
    fn empty() {
        for s in [
            "",
            "   ",
            "\n\t",
            "-- c",
            "# c\n",
            "/* c */",
            ";",
            " ; ; ",
            "/*!*/",
            "/*M!100000 */",
        ] {
            assert_eq!(k(s), Kind::Empty, "{s:?}");
            assert_eq!(c(s).force_master, None, "{s:?}");
        }
    }

    #[test]
    fn table_locks_and_temporary_tables() {
        for s in [
            "LOCK TABLES t READ",
            "lock table t write, u read",
            "LOCK TABLES",
            "LOCK INSTANCE FOR BACKUP",
            "BACKUP LOCK t",
            "FLUSH TABLES WITH READ LOCK",
            "FLUSH TABLES t1, t2 WITH READ LOCK",
            "flush tables t for export",
        ] {
            let r = c(s);
            assert_eq!(r.kind, Kind::Write, "{s}");
            assert!(r.locks_tables, "{s}");
        }
        for s in [
            "FLUSH TABLES",
            "FLUSH LOGS",
            "SELECT * FROM t LOCK IN SHARE MODE",
            "UNLOCK TABLES",
        ] {
            assert!(!c(s).locks_tables, "{s}");
        }
        for s in [
            "UNLOCK TABLES",
            "unlock table",
            "UNLOCK INSTANCE",
            "BACKUP UNLOCK",
        ] {
            assert!(c(s).unlocks_tables, "{s}");
        }
        for s in [
            "CREATE TEMPORARY TABLE t (a int)",
            "create temporary table if not exists t select 1",
            "CREATE OR REPLACE TEMPORARY TABLE t (a int)",
            "CREATE TEMPORARY SEQUENCE s",
        ] {
            let r = c(s);
            assert_eq!(r.kind, Kind::Write, "{s}");
            assert!(r.creates_temp_table, "{s}");
        }
        for s in [
            "CREATE TABLE t (a int)",
            "CREATE TABLE temporary_t (a int)",
            "DROP TEMPORARY TABLE t",
            "SELECT 'CREATE TEMPORARY TABLE'",
        ] {
            assert!(!c(s).creates_temp_table, "{s}");
        }
    }

    #[test]
    fn show_statements() {
        for s in [
            "SHOW MASTER STATUS",
            "show master logs",
            "SHOW BINLOG EVENTS",
            "SHOW BINARY LOGS",
            "SHOW SLAVE STATUS",
            "SHOW SLAVE HOSTS",
            "SHOW REPLICA STATUS",
            "SHOW REPLICAS",
            "SHOW ALL SLAVES STATUS",
            "SHOW RELAYLOG EVENTS",
            "SHOW PROCESSLIST",
            "SHOW FULL PROCESSLIST",
        ] {
            read_forced(s, R::SideEffect);
            assert!(!c(s).refers_to_previous, "{s}");
        }
        for s in [
            "SHOW WARNINGS",
            "SHOW ERRORS LIMIT 1",
            "SHOW COUNT(*) WARNINGS",
            "SHOW PROFILES",
            "SHOW PROFILE FOR QUERY 1",
        ] {
            read_forced(s, R::SideEffect);
            assert!(c(s).refers_to_previous, "{s}");
        }
        for s in [
            "SHOW TABLES",
            "SHOW DATABASES",
            "SHOW VARIABLES",
            "SHOW CREATE TABLE master",
        ] {
            plain_read(s);
        }
        assert_eq!(tables("SHOW TABLES"), None);
    }

    #[test]
    fn refers_to_previous() {
        for s in [
            "SELECT @@warning_count",
            "SELECT @@session.error_count",
            "SELECT FOUND_ROWS()",
            "SELECT ROW_COUNT()",
            "GET DIAGNOSTICS @n = NUMBER",
            "GET CURRENT DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT",
            "SHOW WARNINGS",
        ] {
            assert!(c(s).refers_to_previous, "{s}");
        }
        assert!(!c("SELECT 1").refers_to_previous);
        assert!(!c("SELECT LAST_INSERT_ID()").refers_to_previous);
        // Its targets are user variables: session state, as with SET @n.
        assert!(c("GET DIAGNOSTICS @n = NUMBER").sets_user_variable);
        assert!(c("GET DIAGNOSTICS CONDITION 1 @e = MYSQL_ERRNO, @m = MESSAGE_TEXT").sets_user_variable);
    }

    #[test]
    fn tables_simple() {
        let cases: &[(&str, &[&str])] = &[
            ("SELECT 1", &[]),
            ("SELECT 1 FROM DUAL", &[]),
            ("SELECT NOW()", &[]),
            ("VALUES (1), (2)", &[]),
            ("SELECT c FROM sbtest1 WHERE id = 42", &["sbtest1"]),
            ("SELECT * FROM db.t", &["db.t"]),
            ("SELECT * FROM `db`.`t`", &["db.t"]),
            ("SELECT * FROM db . t", &["db.t"]),
            ("SELECT * FROM MyTable", &["MyTable"]),
            ("SELECT * FROM données", &["données"]),
            ("SELECT * FROM t1 AS a", &["t1"]),
            ("SELECT * FROM t1 a WHERE a.x = 1", &["t1"]),
            ("SELECT * FROM status s, user u, log", &["status", "user", "log"]),
            ("SELECT * FROM a, b, c", &["a", "b", "c"]),
            ("SELECT * FROM a,b", &["a", "b"]),
            ("SELECT * FROM t a JOIN t b ON a.id = b.id", &["t"]),
            ("TABLE t", &["t"]),
            ("TABLE db.t ORDER BY a LIMIT 1", &["db.t"]),
            ("SELECT COUNT(*) FROM t", &["t"]),
            ("SELECT CAST(a AS CHAR) FROM t", &["t"]),
            ("SELECT * FROM t WHERE a = 'FROM x'", &["t"]),
            ("SELECT * FROM t WHERE a = \"JOIN x\"", &["t"]),
            (
                "SELECT a FROM t GROUP BY a HAVING COUNT(*) > 1 ORDER BY a LIMIT 1",
                &["t"],
            ),
            ("SELECT * FROM t LIMIT 1 FOR UPDATE", &["t"]),
            ("SELECT * FROM t LOCK IN SHARE MODE", &["t"]),
            ("SELECT * FROM t PARTITION (p0, p1) WHERE a = 1", &["t"]),
            ("SELECT * FROM t AS x PARTITION (p0)", &["t"]),
            ("SELECT * FROM t USE INDEX (i1, i2) WHERE a = 1", &["t"]),
            ("SELECT * FROM t FORCE INDEX FOR JOIN (i) JOIN u", &["t", "u"]),
            ("SELECT * FROM t IGNORE KEY FOR ORDER BY (a), u", &["t", "u"]),
            ("SELECT * FROM t a USE INDEX () WHERE 1", &["t"]),
            ("SELECT GROUP_CONCAT(a ORDER BY b SEPARATOR ',') FROM t", &["t"]),
            ("SELECT EXTRACT(YEAR FROM d) FROM t", &["t"]),
            (
                "SELECT TRIM(BOTH 'x' FROM s), SUBSTRING(s FROM 2 FOR 3) FROM t",
                &["t"],
            ),
            ("SELECT * FROM t WINDOW w AS (PARTITION BY a)", &["t"]),
            ("SELECT * FROM t JOIN u ON 1 WINDOW w AS ()", &["t", "u"]),
            ("SELECT * FROM t window, u", &["t", "u"]),
            ("SELECT * FROM t offset, u returning, v minus", &["t", "u", "v"]),
            ("SELECT a FROM t MINUS SELECT a FROM u", &["t", "u"]),
            ("SELECT a FROM t INTO @x", &["t"]),
        ];
        for (s, want) in cases {
            assert_eq!(tables(s), tt(want), "{s}");
        }
    }

    #[test]
    fn tables_joins_and_subqueries() {
        let cases: &[(&str, &[&str])] = &[
            ("SELECT * FROM a JOIN b ON a.id = b.id", &["a", "b"]),
            ("SELECT * FROM a INNER JOIN b USING (id)", &["a", "b"]),
            (
                "SELECT * FROM a LEFT JOIN b ON a.x = b.x RIGHT OUTER JOIN c ON 1",
                &["a", "b", "c"],
            ),
            (
                "SELECT * FROM a NATURAL JOIN b NATURAL LEFT JOIN c",
                &["a", "b", "c"],
            ),
            ("SELECT * FROM a CROSS JOIN b, c", &["a", "b", "c"]),
            ("SELECT * FROM a STRAIGHT_JOIN b ON a.x = b.x", &["a", "b"]),
            ("SELECT STRAIGHT_JOIN x FROM a JOIN b", &["a", "b"]),
            ("SELECT * FROM a JOIN b ON a.x = b.x, c", &["a", "b", "c"]),
            (
                "SELECT * FROM a JOIN b ON LEFT(a.x, 2) = b.x JOIN c",
                &["a", "b", "c"],
            ),
            (
                "SELECT * FROM a JOIN b ON a.x IN (1, 2) JOIN c ON 1",
                &["a", "b", "c"],
            ),
            (
                "SELECT * FROM a JOIN b ON a.x = (SELECT MAX(y) FROM c) WHERE 1",
                &["a", "b", "c"],
            ),
            (
                "SELECT * FROM (a JOIN b ON a.id = b.id) JOIN c ON 1",
                &["a", "b", "c"],
            ),
            ("SELECT * FROM (a, b) JOIN c", &["a", "b", "c"]),
            ("SELECT * FROM a LEFT JOIN (b, c) ON 1", &["a", "b", "c"]),
            ("SELECT * FROM (SELECT * FROM b) AS x", &["b"]),
            (
                "SELECT * FROM (SELECT * FROM b) x JOIN c ON x.id = c.id",
                &["b", "c"],
            ),
            (
                "SELECT * FROM (SELECT a FROM b UNION SELECT a FROM c) d (col)",
                &["b", "c"],
            ),
            ("SELECT * FROM ((SELECT 1) UNION (SELECT a FROM b)) x", &["b"]),
            ("SELECT * FROM (VALUES (1)) v", &[]),
            ("SELECT * FROM t WHERE id IN (SELECT id FROM u)", &["t", "u"]),
            (
                "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)",
                &["t", "u"],
            ),
            ("SELECT * FROM t WHERE a = ANY (TABLE u)", &["t", "u"]),
            ("SELECT (SELECT MAX(a) FROM u), b FROM t", &["u", "t"]),
            ("SELECT (SELECT 1 FROM (SELECT 2 FROM v) x) FROM t", &["v", "t"]),
            ("SELECT a FROM t1 UNION SELECT b FROM t2", &["t1", "t2"]),
            (
                "SELECT a FROM t1 UNION ALL SELECT b FROM t2 ORDER BY 1",
                &["t1", "t2"],
            ),
            ("(SELECT a FROM t1) UNION (SELECT b FROM t2)", &["t1", "t2"]),
            (
                "SELECT a FROM t1 EXCEPT SELECT a FROM t2 INTERSECT TABLE t3",
                &["t1", "t2", "t3"],
            ),
            ("SELECT 1 UNION SELECT a FROM t", &["t"]),
            (
                "SELECT * FROM t WHERE a IN (1, 2, 3) AND b = (1 + (2 * 3))",
                &["t"],
            ),
            (
                "SELECT CASE WHEN a THEN (SELECT 1 FROM u) ELSE 2 END FROM t",
                &["u", "t"],
            ),
        ];
        for (s, want) in cases {
            assert_eq!(tables(s), tt(want), "{s}");
        }
    }

    #[test]
    fn tables_unknown() {
        for s in [
            "SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) j",
            "SELECT * FROM t, JSON_TABLE(t.j, '$' COLUMNS (a INT PATH '$')) j",
            "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a) x",
            "SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2020-01-01'",
            "SELECT * FROM t FOR SYSTEM_TIME FROM '2020-01-01' TO NOW()",
            "WITH a AS (SELECT * FROM t) SELECT * FROM a",
            "SELECT * FROM t WHERE a IN (WITH x AS (SELECT 1) SELECT * FROM x)",
            "SELECT * FROM (SELECT 1",
            "SELECT 1)",
            "SELECT * FROM 'str'",
            "SELECT * FROM",
            "SELECT * FROM db.",
            "SELECT * FROM db.*",
            "SELECT * FROM \u{0}",
            "SELECT 1; SELECT 2",
            "INSERT INTO t SELECT * FROM u",
            "SHOW TABLES",
            "EXPLAIN SELECT * FROM t",
            "DESCRIBE t",
            "HELP 'x'",
            "SELECT 'x",
        ] {
            assert_eq!(tables(s), None, "{s}");
        }
        assert_eq!(tables("SELECT * FROM `a.b`"), None);
        assert_eq!(tables("SELECT * FROM db.`a.b`"), None);
        assert_eq!(classify(b"SELECT * FROM \xff\xfe").tables, None);
        assert_eq!(classify(b"SELECT * FROM `\xff`").tables, None);
        assert_eq!(classify(b"SELECT * FROM db.\xff").tables, None);
    }

    #[test]
    fn ansi_quotes_and_backslashes() {
        let ansi = LexOptions {
            ansi_quotes: true,
            ..LexOptions::default()
        };
        let nbe = LexOptions {
            no_backslash_escapes: true,
            ..LexOptions::default()
        };
        let s = b"SELECT * FROM \"my\"\"t\" WHERE a = 'x'";
        assert_eq!(classify(s).tables, None);
        assert_eq!(classify_with(s, ansi).tables, tt(&["my\"t"]));
        // Where a string ends depends on NO_BACKSLASH_ESCAPES.
        let s = b"SELECT 'a\\' ; DELETE FROM t; -- '";
        assert_eq!(classify(s).kind, Kind::Read);
        let r = classify_with(s, nbe);
        assert_eq!(r.kind, Kind::Write);
        assert!(r.multi_statement);
        // ANSI identifiers have no backslash escapes either.
        let s = b"SELECT \"a\\\" ; DELETE FROM t; -- \"";
        assert_eq!(classify(s).kind, Kind::Read);
        assert_eq!(classify_with(s, ansi).kind, Kind::Write);
    }

    #[test]
    fn invalid_utf8_and_binary() {
        let r = classify(b"SELECT '\xff\xfe' FROM t WHERE a = _binary'\x00\x01' FOR UPDATE");
        assert_eq!(r.kind, Kind::Read);
        assert_eq!(r.force_master, Some(R::LockingRead));
        assert_eq!(r.tables, tt(&["t"]));
        let r = classify(b"SELECT \xc3A FROM t");
        assert_eq!(r.kind, Kind::Read);
        assert_eq!(r.tables, tt(&["t"]));
        assert_eq!(classify(b"\xff\xfe\xfd").kind, Kind::Write);
        assert_eq!(classify(b"\x00SELECT 1").kind, Kind::Write);
        assert_eq!(classify(b"SELECT 1 \x00").kind, Kind::Read);
        assert_eq!(
            classify(b"/*\xff master \xfe*/ SELECT 1").force_master,
            Some(R::Hint)
        );
        assert_eq!(
            classify(b"SET NAMES latin1, @a = '\xe9'").kind,
            Kind::SessionSet(SetScope::UserVariable { also_session: true })
        );
        // Every prefix of a tricky text classifies without panicking.
        let text = "/*!40101 SET @a:=1*/; SELECT `a``b`, 'c\\'d', \"e\"\"f\" FROM t1 JOIN (SELECT * FROM t2) x ON (1) -- z\n# w\n/* v";
        for i in 0..=text.len() {
            let _ = classify(&text.as_bytes()[..i]);
            let _ = sets_autocommit(&text.as_bytes()[..i]);
            let _ = split_statements(&text.as_bytes()[..i]).count();
        }
    }

    #[test]
    fn long_input() {
        let mut s = String::from("SELECT * FROM t WHERE id IN (");
        for i in 0..100_000 {
            s.push_str(&format!("{i},"));
        }
        s.push_str("0)");
        let r = c(&s);
        assert_eq!(r.kind, Kind::Read);
        assert_eq!(r.tables, tt(&["t"]));

        // Deep nesting: still a read, tables unknown past the depth limit.
        let deep = format!("{}SELECT * FROM t{}", "(".repeat(10_000), ")".repeat(10_000));
        let r = c(&deep);
        assert_eq!(r.kind, Kind::Read);
        assert_eq!(r.tables, None);
        let deep = format!("SELECT {}1{} FROM t", "(".repeat(20), ")".repeat(20));
        assert_eq!(tables(&deep), tt(&["t"]));

        let big = format!("SELECT '{}' FROM t FOR UPDATE", "x".repeat(1 << 20));
        read_forced(&big, R::LockingRead);
        let big = format!("/* {} */ SELECT 1", "y".repeat(1 << 20));
        plain_read(&big);
        let many = "SELECT 1;".repeat(10_000);
        assert!(c(&many).multi_statement);
    }

    /// Finds a collision-free HASH_MUL after the keyword list changed.
    #[test]
    #[ignore]
    fn find_keyword_hash() {
        let mut mul: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..1_000_000 {
            mul = mul
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407)
                | 1;
            let mut seen = [false; 1 << SLOT_BITS];
            if KEYS
                .iter()
                .all(|k| !std::mem::replace(&mut seen[slot_with(*k, mul)], true))
            {
                eprintln!("HASH_MUL = {mul:#018x}");
                return;
            }
        }
        panic!("no multiplier found: raise SLOT_BITS");
    }

    #[test]
    fn reason_labels() {
        let all = [
            (R::LockingRead, "locking_read"),
            (R::SelectInto, "select_into"),
            (R::LockFunction, "lock_function"),
            (R::LastInsertId, "last_insert_id"),
            (R::FoundRows, "found_rows"),
            (R::Sequence, "sequence"),
            (R::UserVariable, "user_variable"),
            (R::Hint, "hint"),
            (R::MultiStatement, "multi_statement"),
            (R::SideEffect, "side_effect"),
        ];
        for (r, label) in all {
            assert_eq!(r.reason().as_str(), label);
        }
    }
}

#[cfg(test)]
mod any_mode_tests {
    use super::*;

    #[test]
    fn backslash_ambiguity_goes_to_the_master() {
        // One string under the default sql_mode, but a multi-statement with a
        // DELETE under NO_BACKSLASH_ESCAPES: never a replica read.
        let c = classify_any_mode(b"SELECT 'a\\' ; DELETE FROM t; -- '");
        assert_eq!(c.kind, Kind::Write);
        // Unambiguous backslashes keep their reading.
        let c = classify_any_mode(b"SELECT 'a\\\\b' FROM t");
        assert_eq!(c.kind, Kind::Read);
        assert_eq!(c.force_master, None);
        assert_eq!(classify_any_mode(b"SELECT 1").kind, Kind::Read);
    }

    /// Found by the `classify` fuzz target: a disagreement kept the default
    /// reading's table list (tables are only for reads) and lost the other
    /// reading's effects.
    #[test]
    fn backslash_ambiguity_keeps_both_readings_effects() {
        let c = classify_any_mode(b"SELECT \"a\\\" ; DELETE FROM t; -- \"");
        assert_eq!(c.kind, Kind::Write);
        assert_eq!(c.tables, None);
        assert!(c.multi_statement);
        assert_eq!(c.force_master, Some(MasterReason::MultiStatement));

        // Under NO_BACKSLASH_ESCAPES this creates a temporary table, sets a
        // user variable, takes a named lock: the session must be pinned.
        let c = classify_any_mode(b"SELECT 'a\\' ; CREATE TEMPORARY TABLE tt (a INT); -- '");
        assert!(c.creates_temp_table);
        let c = classify_any_mode(b"SELECT 'a\\' ; SET @x = 1; -- '");
        assert!(c.sets_user_variable);
        let c = classify_any_mode(b"SELECT 'a\\', GET_LOCK('n', 1) -- '");
        assert!(c.takes_named_lock);
        assert_eq!(c.kind, Kind::Write);

        // A statement about the previous one under one reading only is not
        // sent to the previous statement's connection: it may be a write.
        let c = classify_any_mode(b"SELECT @@warning_count, 'a\\' ; DELETE FROM t; -- '");
        assert!(classify(b"SELECT @@warning_count, 'a\\' ; DELETE FROM t; -- '").refers_to_previous);
        assert!(!c.refers_to_previous);
        assert_eq!(c.kind, Kind::Write);

        // autocommit only when both readings agree.
        let c = classify_any_mode(b"SET autocommit = 0, @v = 'a\\' ; SET autocommit = 1; -- '");
        assert_eq!(c.autocommit, None);
    }
}

/// The read sets and write marks that issue 11 found missing: versioned
/// comments, quoting under each sql_mode, stored functions, `SET STATEMENT`,
/// diagnostics reads with tables, and which writes touch unknown tables.
#[cfg(test)]
mod read_set_tests {
    use super::*;

    fn tt(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|s| s.to_string()).collect())
    }

    fn at(v: u32) -> LexOptions {
        LexOptions {
            server_version: v,
            ..LexOptions::default()
        }
    }

    #[test]
    fn versioned_comments_hide_nothing() {
        let s = b"SELECT * FROM a /*!999999 WHERE */ , b";
        assert_eq!(classify(s).tables, tt(&["a", "b"]));
        assert_eq!(classify_with(s, at(101106)).tables, tt(&["a", "b"]));
        // MySQL-only range: skipped by MariaDB whatever its version.
        let s = b"SELECT * FROM a /*!80000 WHERE */ , b";
        assert_eq!(classify(s).tables, tt(&["a", "b"]));
        // Run by MariaDB: code.
        let s = b"SELECT * FROM a /*!100100 , b */ , c";
        assert_eq!(classify(s).tables, tt(&["a", "b", "c"]));
        let s = b"SELECT * FROM a /*M!80000 , b */";
        assert_eq!(classify(s).tables, tt(&["a", "b"]));
        // Exactly at the boundary of a known server.
        let s = b"SELECT * FROM a /*!101106 WHERE */ , b";
        assert_eq!(classify_with(s, at(101106)).tables, tt(&["a"]));
        assert_eq!(classify_with(s, at(101105)).tables, tt(&["a", "b"]));
        // Unknown 10.11 patch level: both readings; they differ, so the master.
        let c = classify(s);
        assert_eq!(c.kind, Kind::Write);
        assert!(!c.replica_eligible());
        // A skipped comment hides a write keyword too: still a read.
        let c = classify(b"SELECT 1 /*!999999 ; DELETE FROM t */");
        assert_eq!(c.kind, Kind::Read);
        // And a run one shows it.
        let c = classify(b"SELECT 1 /*!100000 ; DELETE FROM t */");
        assert!(c.multi_statement);
    }

    #[test]
    fn quoting_under_each_sql_mode() {
        let nbe = LexOptions {
            no_backslash_escapes: true,
            ..LexOptions::default()
        };
        let ansi = LexOptions {
            ansi_quotes: true,
            ..LexOptions::default()
        };
        // 'C:\' ends at the second quote only without NO_BACKSLASH_ESCAPES.
        let s = b"SELECT * FROM t WHERE a = 'C:\\' AND b IN (SELECT x FROM u) -- '";
        assert_eq!(classify(s).tables, tt(&["t"]));
        assert_eq!(classify_with(s, nbe).tables, tt(&["t", "u"]));
        let any = classify_any_mode(s);
        assert!(!any.replica_eligible(), "{any:?}");
        // "a\" is an identifier without escapes under ANSI_QUOTES.
        let s = b"SELECT * FROM t WHERE a = \"a\\\" AND b IN (SELECT x FROM u) -- \"";
        assert_eq!(classify(s).tables, tt(&["t"]));
        assert_eq!(classify_with(s, ansi).tables, tt(&["t", "u"]));
        assert_eq!(classify_with(s, nbe).tables, tt(&["t", "u"]));
        let any = classify_any_mode(s);
        assert!(!any.replica_eligible(), "{any:?}");
        // Under ANSI_QUOTES a double-quoted table is a table.
        let s = b"SELECT * FROM t JOIN \"u\" ON 1";
        assert_eq!(classify_with(s, ansi).tables, tt(&["t", "u"]));
        assert_eq!(classify(s).tables, None);
        // Unambiguous backslashes keep one reading.
        let s = b"SELECT * FROM t WHERE a = 'x\\\\y'";
        assert_eq!(classify_any_mode(s).tables, tt(&["t"]));
    }

    #[test]
    fn stored_functions_are_master_only() {
        let sf = Some(MasterReason::StoredFunction);
        for s in [
            &b"SELECT f()"[..],
            b"SELECT db.f()",
            b"SELECT db.f(), x FROM t",
            b"SELECT `db`.`f`(1) FROM t",
            b"SELECT x FROM t WHERE y = f(x)",
            b"SELECT x FROM t ORDER BY my_rank(x)",
            b"SELECT x FROM t GROUP BY x HAVING g (x) > 1",
            b"SELECT x FROM (SELECT f(1) AS x) d",
            b"SELECT `my_f`('a')",
            b"SELECT against(1)",
            b"SELECT point(1)",
            b"SELECT vec_distance(1, 2)",
            b"SELECT * FROM t WHERE a IN (SELECT f(b) FROM u)",
        ] {
            let c = classify(s);
            assert_eq!(c.kind, Kind::Read, "{}", String::from_utf8_lossy(s));
            assert_eq!(c.force_master, sf, "{}", String::from_utf8_lossy(s));
            assert!(!c.replica_eligible());
        }
        for s in [
            &b"SELECT COUNT(*), CONCAT(a, 'x'), CAST(a AS DECIMAL(10,2)) FROM t"[..],
            b"SELECT * FROM t WHERE a IN (1, 2) AND EXISTS (SELECT 1 FROM u)",
            b"SELECT * FROM t WHERE MATCH (a) AGAINST ('x' IN BOOLEAN MODE)",
            b"SELECT * FROM t WHERE a LIKE 'x!%' ESCAPE ('!')",
            b"SELECT SUM(a) OVER (PARTITION BY b ORDER BY c) FROM t",
            b"SELECT JSON_EXTRACT(j, '$.a'), ST_X(ST_POINTFROMTEXT('POINT(1 2)')), IF(a, 1, 2) FROM t",
            b"SELECT CONVERT(a, CHAR(10)), CONVERT(a USING utf8mb4) FROM t",
            b"SELECT * FROM t USE INDEX (i) WHERE (a, b) = (1, 2)",
            b"SELECT a FROM t UNION (SELECT b FROM u)",
            b"SELECT TRIM(BOTH 'x' FROM a), EXTRACT(YEAR FROM (d)) FROM t",
            b"SELECT ROW_NUMBER() OVER (), LAG(a) OVER w FROM t WINDOW w AS (ORDER BY a)",
            b"SELECT NOW(6), CURRENT_TIMESTAMP(), DATE(d), MOD(a, 2) FROM t",
            // A quoted built-in name calls the built-in (checked on 10.11).
            b"SELECT `concat`('a')",
            // CTE column lists are no calls.
            b"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3), s(m) AS (SELECT 1) SELECT * FROM r, s",
        ] {
            let c = classify(s);
            assert!(c.replica_eligible(), "{} {c:?}", String::from_utf8_lossy(s));
        }
        // After the main SELECT of a WITH, a word before `(` is a call again.
        let c = classify(b"WITH c(a) AS (SELECT 1) SELECT f(a), g(a) FROM c");
        assert_eq!(c.force_master, sf);
        // Other reasons win (the session looks for FOUND_ROWS by name).
        let c = classify(b"SELECT f(), FOUND_ROWS()");
        assert_eq!(c.force_master, Some(MasterReason::FoundRows));
        assert_eq!(
            classify(b"/*master*/ SELECT f()").force_master,
            Some(MasterReason::Hint)
        );
        // Writes go to the master anyway; the reason is informative.
        assert_eq!(classify(b"INSERT INTO t (a) VALUES (f(1))").kind, Kind::Write);
    }

    #[test]
    fn set_statement_is_its_statement() {
        let c = classify(b"SET STATEMENT max_statement_time=1 FOR SELECT * FROM t JOIN u");
        assert_eq!(c.kind, Kind::Read);
        assert_eq!(c.tables, tt(&["t", "u"]));
        assert!(c.replica_eligible());
        let s = b"SET STATEMENT sql_mode='', foreign_key_checks=0 FOR INSERT INTO t VALUES (1)";
        let c = classify(s);
        assert_eq!(c.kind, Kind::Write);
        assert!(!writes_unknown_tables(&c, s));
        let s = b"SET STATEMENT lock_wait_timeout=(SELECT 1) FOR TRUNCATE t";
        let c = classify(s);
        assert_eq!(c.kind, Kind::Write);
        assert!(writes_unknown_tables(&c, s));
        let s = b"set statement x=1 for alter table t add c int";
        assert!(writes_unknown_tables(&classify(s), s));
        assert_eq!(
            classify(b"/*master*/ SET STATEMENT x=1 FOR SELECT 1").force_master,
            Some(MasterReason::Hint)
        );
        assert_eq!(
            classify(b"SET STATEMENT x=1 FOR SELECT f() FROM t").force_master,
            Some(MasterReason::StoredFunction)
        );
        let c = classify(b"SET STATEMENT x=1 FOR SELECT 1; DELETE FROM t");
        assert!(c.multi_statement);
        // No FOR: a master-only SET, as before.
        assert_eq!(
            classify(b"SET STATEMENT x=1").kind,
            Kind::SessionSet(SetScope::MasterOnly)
        );
        // A FOR the prefix cannot place surely: a write.
        let c = classify(b"SET STATEMENT x=1 /*! FOR SELECT 1 */");
        assert_eq!(c.kind, Kind::Write);
    }

    #[test]
    fn diagnostics_reads_with_tables() {
        let c = classify(b"SELECT @@warning_count, a FROM t");
        assert!(c.refers_to_previous && c.previous_reads_tables);
        assert_eq!(c.tables, tt(&["t"]));
        let c = classify(b"SELECT @@warning_count, (SELECT a FROM t LIMIT 1)");
        assert!(c.previous_reads_tables);
        let c = classify(b"SELECT @@warning_count");
        assert!(c.refers_to_previous && !c.previous_reads_tables);
        let c = classify(b"SHOW WARNINGS");
        assert!(c.refers_to_previous && !c.previous_reads_tables);
        let c = classify(b"SELECT a FROM t");
        assert!(!c.previous_reads_tables);
    }

    #[test]
    fn which_writes_touch_unknown_tables() {
        let w = |s: &[u8]| writes_unknown_tables(&classify(s), s);
        for s in [
            &b"TRUNCATE t"[..],
            b"ALTER TABLE t ADD c INT",
            b"CREATE TABLE x (a INT)",
            b"DROP TABLE t",
            b"RENAME TABLE a TO b",
            b"CALL p()",
            b"EXECUTE IMMEDIATE 'TRUNCATE t'",
            b"EXECUTE s",
            b"BEGIN NOT ATOMIC TRUNCATE t; END",
            b"INSERT INTO t VALUES (1); TRUNCATE u",
            b"REPAIR TABLE t",
            b"frobnicate",
            b"/*!100000 TRUNCATE t */",
            // No trigger fires for the purged history (issue 40).
            b"DELETE HISTORY FROM t",
            b"delete /* x */ history from t before system_time now()",
            b"DELETE /*!100300 HISTORY */ FROM t",
            b"SET STATEMENT max_statement_time=1 FOR DELETE HISTORY FROM t",
        ] {
            assert!(w(s), "{}", String::from_utf8_lossy(s));
        }
        for s in [
            &b"INSERT INTO t VALUES (1)"[..],
            b"update t set a = 1",
            b"DELETE FROM t",
            b"DELETE LOW_PRIORITY QUICK IGNORE FROM t",
            b"DELETE t FROM t JOIN u USING (id)",
            b"REPLACE INTO t VALUES (1)",
            b"LOAD DATA INFILE 'x' INTO TABLE t",
            b"DO f()",
            b"SELECT 1",
            b"SET @a = 1",
            b"COMMIT",
            b"COMMIT AND CHAIN",
            b"BEGIN",
            b"PREPARE s FROM 'TRUNCATE t'",
            b"DEALLOCATE PREPARE s",
            b"SAVEPOINT a",
            b"ROLLBACK TO SAVEPOINT a",
            b"",
        ] {
            assert!(!w(s), "{}", String::from_utf8_lossy(s));
        }
    }
}
