//! From a classified statement and what the session is doing to a [`Plan`]:
//! a pure function, the one place that decides where a statement goes and
//! what it does to the session, for every command path.

use super::classify::{Classified, Kind, SetScope};
use super::lexer::{first_word, LexOptions, Token, Tokens};
use super::plan::{Effects, Pins, Plan, ReadSet, RouteReason, Target, TxEffect, WriteSet};

/// How the statement reached sluice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// COM_QUERY.
    Text,
    /// COM_STMT_EXECUTE of a statement prepared with COM_STMT_PREPARE, with
    /// this many parameters.
    Prepared { params: u16 },
}

/// What the router needs to know of the session.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// The replica running the session's read-only transaction.
    pub ro_tx: Option<usize>,
    /// Why the session is pinned to its master connection, if it is.
    pub pinned: Option<RouteReason>,
    /// A transaction is open (or autocommit is off).
    pub in_transaction: bool,
}

/// The plan for `c` (the classification of `sql`).
pub fn plan<'a>(c: &'a Classified, sql: &[u8], src: Source, v: &View) -> Plan<'a> {
    let (mut target, mut reason) = target(c, v);
    // Server-side objects made inside a read-only transaction on a replica
    // outlive it, but the session's later statements run on the master.
    let mut mirror_on_master = false;
    if v.ro_tx.is_some()
        && matches!(target, Target::Replica(_))
        && c.kind == Kind::Write
        && !c.multi_statement
    {
        let (word, rest) = first_word(sql);
        match word.as_str() {
            // A HANDLER's cursor is read where the session keeps it: opened on
            // the master (HANDLER reads are not snapshot reads, so the
            // transaction's snapshot does not apply to them).
            "HANDLER" => (target, reason) = (Target::Master, RouteReason::Handler),
            // A named statement (PREPARE / DEALLOCATE PREPARE) is made on the
            // replica, where the transaction's EXECUTEs run, and on the
            // master, where those after it run.
            "PREPARE" | "DEALLOCATE" => mirror_on_master = true,
            "DROP" if first_word(rest).0 == "PREPARE" => mirror_on_master = true,
            _ => {}
        }
    }
    let read_set = match &c.tables {
        Some(t) => ReadSet::Tables(t),
        None => ReadSet::All,
    };
    let write_set = write_set(c, sql);
    let mut effects = effects(c, sql, src, write_set);
    effects.mirror_on_master = mirror_on_master;
    Plan {
        target,
        reason,
        read_set,
        write_set,
        // `SET STATEMENT ... FOR INSERT ...` writes like its statement; a
        // stored function may write too (counted by triggers, and the
        // causal snapshot must follow it).
        is_write: matches!(c.kind, Kind::Write | Kind::Commit)
            || write_set != WriteSet::Nothing
            || c.force_master == Some(RouteReason::StoredFunction),
        tx: tx_effect(c, write_set, effects.commits),
        reads_no_table: c.refers_to_previous || c.tables.as_ref().is_some_and(|t| t.is_empty()),
        effects,
    }
}

/// Inside a transaction (before and after the statement): only what may
/// have committed it.
fn tx_effect(c: &Classified, write_set: WriteSet, commits: bool) -> TxEffect {
    let may = match c.kind {
        Kind::Rollback => return TxEffect::RollsBack,
        Kind::Read | Kind::Empty | Kind::Use(_) => false,
        Kind::Begin { .. } | Kind::Commit => true,
        Kind::SessionSet(_) => c.autocommit.is_some() || write_set == WriteSet::Everything,
        Kind::Write => commits || write_set == WriteSet::Everything,
    };
    if may {
        TxEffect::MayCommit
    } else {
        TxEffect::Keeps
    }
}

fn target(c: &Classified, v: &View) -> (Target, RouteReason) {
    // FOUND_ROWS() stays with the master, as the routing contract says
    // (SQL_CALC_FOUND_ROWS reads are sent there too).
    if c.refers_to_previous && c.force_master != Some(RouteReason::FoundRows) && v.ro_tx.is_none() {
        // SHOW WARNINGS, @@warning_count, ...: the answer lives on the
        // connection that ran the previous statement. (A pinned session's
        // previous statement ran on the master, but for the one that took
        // the pin on a replica: GET DIAGNOSTICS @n about a replica read.)
        return (Target::Previous, RouteReason::PreviousStatement);
    }
    match &c.kind {
        Kind::Read => match c.force_master {
            Some(r) if v.ro_tx.is_none() => (Target::Master, r),
            // GET_LOCK() & co. in a read-only transaction on a replica: a
            // named lock is the master's (where the other clients take it),
            // and it is no part of the transaction. (With a table read too,
            // the read needs the transaction's snapshot: it stays there.)
            Some(RouteReason::LockFunction) if c.tables.as_ref().is_some_and(|t| t.is_empty()) => {
                (Target::Master, RouteReason::LockFunction)
            }
            _ => read_target(v),
        },
        Kind::Begin { read_only: true } if !v.in_transaction && v.pinned.is_none() => read_target(v),
        // Inside a read-only transaction on a replica, everything stays
        // there until it ends (a write fails there as it would anywhere).
        _ if v.ro_tx.is_some() => read_target(v),
        Kind::SessionSet(_) | Kind::Use(_) => (Target::Master, RouteReason::SessionState),
        Kind::Begin { .. } | Kind::Commit | Kind::Rollback => (Target::Master, RouteReason::Transaction),
        _ => (Target::Master, RouteReason::Write),
    }
}

/// Where a read that its text allows on a replica goes, given the session.
pub fn read_target(v: &View) -> (Target, RouteReason) {
    if let Some(i) = v.ro_tx {
        return (Target::Replica(i), RouteReason::ReadOnlyTransaction);
    }
    if let Some(pin) = v.pinned {
        return (Target::Master, pin);
    }
    if v.in_transaction {
        return (Target::Master, RouteReason::Transaction);
    }
    (Target::FreshReplica, RouteReason::FreshReplica)
}

/// First words of statements whose effects on the session and on the data
/// sluice cannot know from their text: they run code or SQL built at run
/// time (procedures, dynamic SQL, compound statements) or create server-side
/// objects of the connection (SQL prepared statements, HANDLERs, XA).
const OPAQUE: [&str; 7] = [
    "CALL",
    "EXECUTE",
    "PREPARE",
    "DEALLOCATE",
    "HANDLER",
    "XA",
    "BEGIN",
];

/// What `c` may change. DDL, TRUNCATE and anything opaque count as touching
/// everything: no trigger fires for them, or what they touch is unknown.
pub fn write_set(c: &Classified, sql: &[u8]) -> WriteSet {
    match c.kind {
        Kind::Read | Kind::Use(_) | Kind::Rollback | Kind::Empty => return WriteSet::Nothing,
        Kind::Begin { .. } | Kind::Commit => return WriteSet::Nothing,
        Kind::SessionSet(_) => {
            // `SET STATEMENT ... FOR <statement>`: what matters is the statement.
            let (_, rest) = first_word(sql);
            return match set_statement_target(rest) {
                Some(inner) => write_set_of_text(inner),
                None => WriteSet::Nothing,
            };
        }
        Kind::Write => {}
    }
    // One list of what fires no trigger or touches unknown tables, shared
    // with the classifier (DDL, TRUNCATE, dynamic SQL, procedures, ...).
    if super::classify::writes_unknown_tables(c, sql) {
        WriteSet::Everything
    } else {
        WriteSet::Counted
    }
}

/// The write set of a statement known only by its text.
fn write_set_of_text(sql: &[u8]) -> WriteSet {
    let c = super::classify::classify(sql);
    match c.kind {
        Kind::Read => WriteSet::Nothing,
        _ => write_set(&c, sql),
    }
}

/// `SET STATEMENT var = value [, ...] FOR <statement>`: the statement.
pub fn set_statement_target(after_set: &[u8]) -> Option<&[u8]> {
    let (w, _) = first_word(after_set);
    if w != "STATEMENT" {
        return None;
    }
    let mut lx = Tokens::new(after_set);
    let mut depth = 0usize;
    while let Some(t) = lx.next() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(w) if depth == 0 && w.eq_ignore_ascii_case(b"FOR") => {
                return Some(&after_set[lx.offset()..]);
            }
            Token::Unterminated => return None,
            _ => {}
        }
    }
    None
}

/// The first word, if it is one of the opaque statements (see [`OPAQUE`]).
pub fn is_opaque(c: &Classified, sql: &[u8]) -> bool {
    if c.multi_statement {
        return true;
    }
    if !matches!(c.kind, Kind::Write) {
        return false;
    }
    let (mut word, _) = first_word(sql);
    if word.is_empty() {
        // `/*!CALL p() */`, `/*M!100000 XA START 'x' */`: the server runs an
        // executable comment's body as code (a versioned one whose fate
        // depends on the patch level is read as code: the pin is the safe
        // side).
        if let Some(crate::router::lexer::Token::Word(w)) = crate::router::lexer::Tokens::new(sql).next() {
            word = String::from_utf8_lossy(w).to_ascii_uppercase();
        }
    }
    OPAQUE.contains(&word.as_str())
}

/// The pins a COM_STMT_PREPARE takes by itself, before any EXECUTE: MariaDB
/// creates the user variables a statement assigns (`@v := ...`, `SET @v =
/// ?`) when it prepares it, as NULL strings in the connection's character
/// set, so the connection it was prepared on now holds session state (a
/// later `SELECT @v` there, by any session, shows a NULL string where a
/// fresh connection shows a NULL binary). (`SELECT ... INTO @v` creates
/// nothing at PREPARE; it is pinned with the rest, to keep one rule with
/// [`effects`].)
pub fn prepare_pins(c: &Classified) -> Pins {
    if assigns_user_variable(c) {
        Pins::USER_VARIABLE
    } else {
        Pins::empty()
    }
}

fn assigns_user_variable(c: &Classified) -> bool {
    c.sets_user_variable || matches!(c.kind, Kind::SessionSet(SetScope::UserVariable { .. }))
}

fn effects(c: &Classified, sql: &[u8], src: Source, write_set: WriteSet) -> Effects {
    let mut e = Effects::default();
    if c.creates_temp_table {
        e.pin |= Pins::TEMP_TABLE;
    }
    if assigns_user_variable(c) {
        e.pin |= Pins::USER_VARIABLE;
    }
    if c.locks_tables {
        e.pin |= Pins::LOCK_TABLES;
    }
    if c.takes_named_lock {
        e.pin |= Pins::NAMED_LOCK;
    }
    // NEXTVAL/SETVAL/NEXT VALUE FOR set the connection's LASTVAL() of the
    // sequence: session state only that connection has. (The text is
    // searched only when a master-only function was seen at all.)
    if c.force_master.is_some()
        && (mentions(sql, b"nextval") || mentions(sql, b"setval") || mentions(sql, b"next value"))
    {
        e.pin |= Pins::SESSION_STATE;
    }
    // Server-side objects of this connection, or effects not known: what a
    // procedure, dynamic SQL or a multi-statement leaves behind stays on the
    // connection, so the session keeps it until it is reset.
    if is_opaque(c, sql) {
        e.pin |= Pins::CONNECTION_STATE;
    }
    if c.unlocks_tables {
        e.unpin |= Pins::LOCK_TABLES;
    }
    // `SELECT RELEASE_ALL_LOCKS()` lifts the pin. Only that form: in any
    // other (`... FROM t WHERE 0`, inside IF(), a CASE) the call may not run,
    // and a lock still held would stay on a connection the session left.
    if !c.takes_named_lock && c.force_master == Some(RouteReason::LockFunction) && releases_all_locks(sql) {
        e.unpin |= Pins::NAMED_LOCK;
    }
    match c.kind {
        Kind::SessionSet(scope) => {
            let session_part = matches!(
                scope,
                SetScope::Session | SetScope::UserVariable { also_session: true }
            );
            if session_part {
                // Replayed on every connection the session borrows: only
                // what gives the same result there (no parameters, no
                // subqueries or functions with effects).
                let params = matches!(src, Source::Prepared { params } if params > 0);
                if !params && replayable_set(sql) {
                    e.replay_set = true;
                } else {
                    e.pin |= Pins::SESSION_STATE;
                }
                if mentions(sql, b"sql_mode") {
                    e.sql_mode = true;
                }
                if mentions(sql, b"isolation") {
                    e.isolation = true;
                }
            }
            // The connection's privileges changed: nothing else may use
            // it, and the session may use nothing else (see SetScope::Role).
            if scope == SetScope::Role {
                e.pin |= Pins::CONNECTION_STATE;
            }
            if scope == SetScope::MasterOnly {
                let (first, rest) = first_word(sql);
                if first == "SET" && first_word(rest).0 == "TRANSACTION" {
                    e.next_transaction = true;
                }
            }
        }
        Kind::Use(ref db) => e.use_db = Some(db.clone()),
        Kind::Begin { read_only: true } => {
            e.begin_read_only = true;
            e.consistent_snapshot = mentions(sql, b"consistent snapshot");
        }
        _ => {}
    }
    if let Kind::SessionSet(_) = c.kind {
        e.idle_limit = mentions(sql, b"wait_timeout") || mentions(sql, b"interactive_timeout");
    }
    e.commits = match c.kind {
        Kind::Commit | Kind::Begin { .. } => true,
        Kind::Write => first_word(sql).0 == "COMMIT",
        _ => false,
    };
    e.last_insert_id = mentions(sql, b"last_insert_id");
    e.keep_for_found_rows = c.force_master == Some(RouteReason::FoundRows);
    e.refresh_tracked = write_set == WriteSet::Everything;
    e.changes_columns = e.refresh_tracked && is_ddl(sql);
    e
}

/// CREATE / ALTER / DROP / RENAME: may change column defaults or triggers.
fn is_ddl(sql: &[u8]) -> bool {
    let (word, _) = first_word(sql);
    matches!(word.as_str(), "CREATE" | "ALTER" | "DROP" | "RENAME")
}

/// Functions whose value depends only on their arguments (and on session
/// variables the replay has set already): a SET using them gives the same
/// result on every connection.
const PURE_FUNCTIONS: [&[u8]; 14] = [
    b"CONCAT",
    b"CONCAT_WS",
    b"REPLACE",
    b"LOWER",
    b"UPPER",
    b"LCASE",
    b"UCASE",
    b"TRIM",
    b"IF",
    b"IFNULL",
    b"COALESCE",
    b"NULLIF",
    b"SUBSTRING",
    b"CAST",
];

/// Can this SET be replayed verbatim on another connection with the same
/// result? Literals, names, system variables and a few pure functions: yes.
/// Subqueries, user variables and any other function (a stored function, a
/// sequence, RAND(), a lock): no, their value or effect differs per run.
/// `SELECT RELEASE_ALL_LOCKS()` or `DO RELEASE_ALL_LOCKS()`, alone (an alias
/// and a `;` allowed): the call certainly runs, once.
fn releases_all_locks(sql: &[u8]) -> bool {
    let mut t = Tokens::new(sql);
    let head = matches!(t.next(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(b"SELECT") || w.eq_ignore_ascii_case(b"DO"));
    let call = matches!(t.next(), Some(Token::Word(w)) if w.eq_ignore_ascii_case(b"RELEASE_ALL_LOCKS"))
        && t.next() == Some(Token::LParen)
        && t.next() == Some(Token::RParen);
    let rest: Vec<Token<'_>> = t.collect();
    let alias = match rest.as_slice() {
        [] | [Token::Semi] => true,
        [Token::Word(a), ..] if a.eq_ignore_ascii_case(b"AS") => {
            matches!(
                &rest[1..],
                [Token::Word(_) | Token::Quoted(_) | Token::Str(_)]
                    | [Token::Word(_) | Token::Quoted(_) | Token::Str(_), Token::Semi]
            )
        }
        [Token::Word(_) | Token::Quoted(_) | Token::Str(_)]
        | [Token::Word(_) | Token::Quoted(_) | Token::Str(_), Token::Semi] => true,
        _ => false,
    };
    head && call && alias
}

/// Session variables the server consumes at the next statement.
const ONE_SHOT: [&[u8]; 4] = [b"insert_id", b"last_insert_id", b"rand_seed1", b"rand_seed2"];

/// `w` is `name` or `scope.name` (`session.insert_id`), in any case.
fn ends_with_name(w: &[u8], name: &[u8]) -> bool {
    w.len() >= name.len()
        && w[w.len() - name.len()..].eq_ignore_ascii_case(name)
        && (w.len() == name.len() || w[w.len() - name.len() - 1] == b'.')
}

pub fn replayable_set(sql: &[u8]) -> bool {
    let mut prev_word: Option<&[u8]> = None;
    // The word before `prev_word` was followed by a dot: `db.concat(` is a
    // stored function named like a built-in one.
    let mut qualified = false;
    let mut after_dot = false;
    for t in Tokens::with_options(sql, LexOptions::default()) {
        match t {
            Token::LParen => {
                let pure = !qualified
                    && prev_word.is_some_and(|w| PURE_FUNCTIONS.iter().any(|f| w.eq_ignore_ascii_case(f)));
                if !pure {
                    return false;
                }
            }
            Token::Word(w) if w.eq_ignore_ascii_case(b"SELECT") => return false,
            Token::UserVar(_) | Token::Unterminated | Token::Semi => return false,
            // Used up by the connection's next statement (`SET insert_id = N`
            // gives the next INSERT that id): replayed on another connection
            // later, it would take effect there a second time.
            Token::Word(w) | Token::SysVar(w) if ONE_SHOT.iter().any(|v| ends_with_name(w, v)) => {
                return false
            }
            _ => {}
        }
        qualified = after_dot && matches!(t, Token::Word(_) | Token::Quoted(_));
        after_dot = t == Token::Dot;
        prev_word = match t {
            Token::Word(w) => Some(w),
            _ => None,
        };
    }
    true
}

/// `sql` contains `needle`, ignoring ASCII case in both.
///
/// Run on every statement (LAST_INSERT_ID, sql_mode, ...): it looks for the
/// needle's first byte and compares the rest only there, instead of a
/// case-folding compare of every window (which was ~45 % of
/// `route::plan`'s instructions on a point select).
pub fn mentions(sql: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let Some(last) = sql.len().checked_sub(needle.len()) else {
        return false;
    };
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    sql[..=last]
        .iter()
        .enumerate()
        .any(|(i, &b)| (b == lower || b == upper) && sql[i + 1..i + needle.len()].eq_ignore_ascii_case(rest))
}

/// Does a statement that ran on the master while the session's transaction
/// state went from `was_in_tx` to `now_in_tx` (the server's IN_TRANS flag)
/// need a causal snapshot before its answer is released? Yes whenever it may
/// have made writes visible to others: a write outside a transaction, or
/// anything that ended or may have implicitly committed one (COMMIT, COMMIT
/// AND CHAIN, BEGIN inside a transaction, DDL, SET autocommit=1, ...). Plain
/// DML and reads inside a transaction commit nothing.
pub fn needs_snapshot(plan: &Plan<'_>, was_in_tx: bool, now_in_tx: bool) -> bool {
    if !plan.on_master() || plan.tx == TxEffect::RollsBack {
        return false;
    }
    if was_in_tx && !now_in_tx {
        return true;
    }
    if !was_in_tx {
        return plan.is_write && !now_in_tx;
    }
    plan.tx == TxEffect::MayCommit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::classify::classify;

    #[test]
    fn mentions_is_a_case_insensitive_substring_search() {
        let naive = |sql: &[u8], n: &[u8]| sql.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
        let texts: [&[u8]; 9] = [
            b"",
            b"l",
            b"last_insert_id",
            b"SELECT LAST_INSERT_ID()",
            b"select last_insert_i",
            b"llast_insert_idd",
            b"SELECT c FROM sbtest1 WHERE id=5",
            b"/* Last_Insert_Id */ SELECT 1",
            b"SET sql_mode='ANSI', SESSION transaction_isolation='x'",
        ];
        for sql in texts {
            for n in [&b"last_insert_id"[..], b"l", b"sql_mode", b"isolation", b"id"] {
                assert_eq!(mentions(sql, n), naive(sql, n), "{:?} in {:?}", n, sql);
            }
            assert!(mentions(sql, b""));
        }
    }

    fn p(sql: &str, src: Source, v: View) -> (Target, WriteSet, Effects) {
        let c = classify(sql.as_bytes());
        let plan = plan(&c, sql.as_bytes(), src, &v);
        (plan.target, plan.write_set, plan.effects)
    }

    fn text(sql: &str) -> (Target, WriteSet, Effects) {
        p(sql, Source::Text, View::default())
    }

    #[test]
    fn what_apply_used_to_read_from_the_text_is_in_the_effects() {
        let e = |sql: &str| text(sql).2;
        assert!(e("  alter table t add c int default nextval(s)").changes_columns);
        assert!(e("DROP TABLE t").changes_columns);
        assert!(!e("CALL p()").changes_columns);
        assert!(!e("INSERT INTO t VALUES (1)").changes_columns);
        assert!(e("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").consistent_snapshot);
        assert!(!e("START TRANSACTION READ ONLY").consistent_snapshot);
        assert!(e("SET SESSION wait_timeout = 5").idle_limit);
        assert!(e("SET @@interactive_timeout = DEFAULT").idle_limit);
        assert!(!e("SET @x = 1").idle_limit);
    }

    #[test]
    fn preparing_an_assignment_pins_like_running_it() {
        let pins = |sql: &str| prepare_pins(&classify(sql.as_bytes()));
        assert_eq!(pins("SELECT @v := 1"), Pins::USER_VARIABLE);
        assert_eq!(pins("SET @v = ?"), Pins::USER_VARIABLE);
        assert_eq!(
            pins("UPDATE t SET v = (@old := v) + ? WHERE id = 1"),
            Pins::USER_VARIABLE
        );
        assert_eq!(pins("SELECT @v"), Pins::empty());
        assert_eq!(pins("SELECT ? AS x"), Pins::empty());
    }

    #[test]
    fn server_side_objects_in_a_read_only_transaction_on_a_replica() {
        let ro = View {
            ro_tx: Some(0),
            in_transaction: true,
            ..View::default()
        };
        let (t, _, e) = p("HANDLER t OPEN", Source::Text, ro);
        assert_eq!(t, Target::Master);
        assert!(!e.mirror_on_master);
        assert!(e.pin.contains(Pins::CONNECTION_STATE));
        for sql in [
            "PREPARE s FROM 'SELECT 1'",
            "DEALLOCATE PREPARE s",
            "drop prepare s",
        ] {
            let (t, _, e) = p(sql, Source::Text, ro);
            assert_eq!(t, Target::Replica(0), "{sql}");
            assert!(e.mirror_on_master, "{sql}");
        }
        for sql in ["EXECUTE s", "SELECT 1", "PREPARE s FROM 'SELECT 1'; SELECT 2"] {
            assert!(!p(sql, Source::Text, ro).2.mirror_on_master, "{sql}");
        }
        // Outside such a transaction the master runs them anyway.
        assert!(!text("PREPARE s FROM 'SELECT 1'").2.mirror_on_master);
        assert_eq!(text("HANDLER t OPEN").0, Target::Master);
    }

    #[test]
    fn reads_and_writes() {
        assert_eq!(text("SELECT * FROM t").0, Target::FreshReplica);
        assert_eq!(text("SELECT * FROM t FOR UPDATE").0, Target::Master);
        assert_eq!(text("INSERT INTO t VALUES (1)").1, WriteSet::Counted);
        assert_eq!(text("TRUNCATE t").1, WriteSet::Everything);
        assert_eq!(text("ALTER TABLE t ADD c INT").1, WriteSet::Everything);
        assert_eq!(text("CALL p()").1, WriteSet::Everything);
        assert_eq!(text("EXECUTE IMMEDIATE 'TRUNCATE t'").1, WriteSet::Everything);
        assert_eq!(text("EXECUTE s").1, WriteSet::Everything);
        assert_eq!(text("BEGIN NOT ATOMIC TRUNCATE t; END").1, WriteSet::Everything);
        assert_eq!(
            text("SET STATEMENT max_statement_time=1 FOR TRUNCATE t").1,
            WriteSet::Everything
        );
        assert_eq!(
            text("SET STATEMENT max_statement_time=1 FOR INSERT INTO t VALUES (1)").1,
            WriteSet::Counted
        );
        assert_eq!(text("SELECT 1; DROP TABLE t").1, WriteSet::Everything);
        assert_eq!(text("BEGIN").1, WriteSet::Nothing);
        assert_eq!(text("SET time_zone = '+00:00'").1, WriteSet::Nothing);
        let c = classify(b"SET STATEMENT sql_mode='' FOR UPDATE t SET a = 1");
        assert!(
            plan(
                &c,
                b"SET STATEMENT sql_mode='' FOR UPDATE t SET a = 1",
                Source::Text,
                &View::default()
            )
            .is_write
        );
    }

    #[test]
    fn inside_transactions_and_pins() {
        let tx = View {
            in_transaction: true,
            ..View::default()
        };
        assert_eq!(p("SELECT 1", Source::Text, tx).0, Target::Master);
        let pinned = View {
            pinned: Some(RouteReason::UserVariable),
            ..View::default()
        };
        assert_eq!(p("SELECT * FROM t", Source::Text, pinned).0, Target::Master);
        let ro = View {
            ro_tx: Some(1),
            ..View::default()
        };
        assert_eq!(p("SELECT * FROM t", Source::Text, ro).0, Target::Replica(1));
        assert_eq!(p("COMMIT", Source::Text, ro).0, Target::Replica(1));
        assert_eq!(p("SET @x = 1", Source::Text, ro).0, Target::Replica(1));
        assert_eq!(p("SELECT GET_LOCK('a', 0)", Source::Text, ro).0, Target::Master);
        assert_eq!(
            p("SELECT GET_LOCK('a', 0), COUNT(*) FROM t", Source::Text, ro).0,
            Target::Replica(1)
        );
    }

    #[test]
    fn session_effects_in_every_path() {
        let prepared = Source::Prepared { params: 1 };
        // A SET with a parameter cannot be replayed: the session keeps its connection.
        let (t, _, e) = p("SET time_zone = ?", prepared, View::default());
        assert_eq!(t, Target::Master);
        assert!(!e.replay_set);
        assert!(e.pin.contains(Pins::SESSION_STATE));
        let (_, _, e) = p("SET time_zone = '+01:00'", Source::Text, View::default());
        assert!(e.replay_set);
        assert_eq!(e.pin, Pins::empty());
        let (_, _, e) = p("SET @v = ?", prepared, View::default());
        assert!(e.pin.contains(Pins::USER_VARIABLE));
        let (t, _, e) = p("SELECT GET_LOCK(?, 0)", prepared, View::default());
        assert_eq!(t, Target::Master);
        assert!(e.pin.contains(Pins::NAMED_LOCK));
        let (_, _, e) = p("CREATE TEMPORARY TABLE tt (a INT)", prepared, View::default());
        assert!(e.pin.contains(Pins::TEMP_TABLE));
        for opaque in [
            "CALL p()",
            "EXECUTE IMMEDIATE 'SET @a = 1'",
            "PREPARE s FROM 'SELECT 1'",
            "EXECUTE s",
            // Executable comments are code to the server.
            "/*!CALL p()*/",
            "/* a comment */ /*!PREPARE s FROM 'SELECT 1' */",
            "/*!50100 XA START 'x' */",
            "/*M!100000 EXECUTE s */",
        ] {
            let (t, _, e) = text(opaque);
            assert_eq!(t, Target::Master, "{opaque}");
            assert!(e.pin.contains(Pins::CONNECTION_STATE), "{opaque}");
        }
        let (_, _, e) = text("SELECT NEXTVAL(sq)");
        assert!(e.pin.contains(Pins::SESSION_STATE));
        let (_, _, e) = text("INSERT INTO t VALUES (NEXT VALUE FOR sq)");
        assert!(e.pin.contains(Pins::SESSION_STATE));
        let (_, _, e) = text("SELECT RELEASE_ALL_LOCKS()");
        assert!(e.unpin.contains(Pins::NAMED_LOCK));
        let (_, _, e) = text("SET sql_mode = 'ANSI_QUOTES'");
        assert!(e.sql_mode && e.replay_set);
        let (_, _, e) = text("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
        assert!(e.next_transaction);
    }

    #[test]
    fn replayable_sets() {
        assert!(replayable_set(b"SET time_zone = '+00:00'"));
        assert!(replayable_set(b"SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci"));
        assert!(replayable_set(
            b"SET sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')"
        ));
        assert!(replayable_set(
            b"SET SESSION wait_timeout = 28800, autocommit = 1"
        ));
        assert!(!replayable_set(
            b"SET time_zone = (SELECT tz FROM config LIMIT 1)"
        ));
        assert!(!replayable_set(b"SET sql_mode = f()"));
        assert!(!replayable_set(b"SET time_zone = @tz"));
        assert!(!replayable_set(b"SET max_statement_time = RAND()"));
        // A stored function named like a built-in one.
        assert!(!replayable_set(b"SET time_zone = app.CONCAT('x')"));
        assert!(!replayable_set(b"SET time_zone = `app` . concat ('x')"));
        assert!(replayable_set(b"SET time_zone = CONCAT('+0', '0:00')"));
        for one_shot in [
            "SET insert_id = 5",
            "SET SESSION INSERT_ID = 5",
            "SET @@insert_id = 5",
            "SET @@session.insert_id = 5",
            "SET last_insert_id = 7",
            "SET rand_seed1 = 1, rand_seed2 = 2",
        ] {
            assert!(!replayable_set(one_shot.as_bytes()), "{one_shot}");
        }
        assert!(replayable_set(b"SET sql_mode = 'insert_id'"));
    }

    #[test]
    fn only_a_certain_release_all_locks_lifts_the_pin() {
        for yes in [
            "SELECT RELEASE_ALL_LOCKS()",
            "select release_all_locks();",
            "DO RELEASE_ALL_LOCKS()",
            "SELECT RELEASE_ALL_LOCKS() AS n",
            "SELECT RELEASE_ALL_LOCKS() n",
        ] {
            assert!(releases_all_locks(yes.as_bytes()), "{yes}");
        }
        for no in [
            "SELECT RELEASE_ALL_LOCKS() FROM t WHERE 1 = 0",
            "SELECT IF(0, RELEASE_ALL_LOCKS(), 1)",
            "SELECT 1 FROM t WHERE RELEASE_ALL_LOCKS() > 5",
            "SELECT RELEASE_ALL_LOCKS() + 0 FROM dual WHERE 0",
            "SELECT RELEASE_ALL_LOCKS(), GET_LOCK('a', 0)",
        ] {
            assert!(!releases_all_locks(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn snapshots() {
        let snap = |sql: &str, was: bool, now: bool| {
            let c = classify(sql.as_bytes());
            let v = View {
                in_transaction: was,
                ..View::default()
            };
            let plan = plan(&c, sql.as_bytes(), Source::Text, &v);
            needs_snapshot(&plan, was, now)
        };
        assert!(snap("INSERT INTO t VALUES (1)", false, false));
        // autocommit=0: the first write opens a transaction and commits nothing.
        assert!(!snap("INSERT INTO t VALUES (1)", false, true));
        assert!(!snap("INSERT INTO t VALUES (1)", true, true));
        assert!(snap("COMMIT", true, false));
        assert!(snap("COMMIT AND CHAIN", true, true));
        assert!(snap("BEGIN", true, true));
        assert!(snap("CREATE TABLE x (a INT)", true, true));
        assert!(snap("SET autocommit = 1", true, false));
        assert!(!snap("SELECT 1", true, true));
        assert!(!snap("ROLLBACK", true, false));
    }
}
