//! What a statement on a sharded table computes from the connection it runs on or from
//! the order it reads its rows, which its parts on other connections, each over its own
//! rows, would compute otherwise: refused before anything runs (executable comments too,
//! which the parser does not read as MariaDB does).

use sqlparser::ast::Statement;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::plan::{Refusal, ShardPlan};
use super::text::has_executable_comment;

/// What a SELECT on a sharded table cannot be answered with: an executable comment
/// (`/*!…*/`, `/*M!…*/`: MariaDB runs its contents by version, the parser expands or drops
/// them) and a value of the session's own connection (see [`session_value`]) are refused.
/// Returns what the SELECT computes row by row in the order it reads them (see
/// [`per_row_sequence`]), which [`refuse_per_row_across`] refuses once the plan reads
/// several sub-tables. Text and prepared plans alike (a prepared statement has no other
/// plan to fall back on).
pub(super) fn refuse_read_hazards(
    stmt: &Statement,
    tokens: &[TokenWithSpan],
    sql: &str,
    named: &str,
) -> Result<Hazards, Refusal> {
    let words = || -> Vec<&Token> {
        tokens
            .iter()
            .map(|t| &t.token)
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect()
    };
    if matches!(
        stmt,
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
    ) {
        let words = words();
        return Ok(Hazards {
            per_row: per_row_sequence(&words),
            session: session_value(&words),
        });
    }
    if !matches!(stmt, Statement::Query(_)) {
        return Ok(Hazards::default());
    }
    if has_executable_comment(sql) {
        return Err(Refusal(format!(
            "sluice: executable comments (/*! … */, /*M! … */) in a SELECT on sharded table {named} are \
             not supported (sluice would not read them as MariaDB runs them)"
        )));
    }
    let words = words();
    if let Some(what) = session_value(&words) {
        return Err(Refusal(format!(
            "sluice: {what} in a SELECT on sharded table {named} is not supported (the sub-tables are \
             read on other connections than the session's, which holds that value)"
        )));
    }
    Ok(Hazards {
        per_row: per_row_sequence(&words),
        session: None,
    })
}

/// What [`refuse_hazards_across`] refuses once the plan is known.
#[derive(Default)]
pub(super) struct Hazards {
    /// See [`per_row_sequence`].
    per_row: Option<&'static str>,
    /// A write's [`session_value`]: exact only in one part on the session's own master
    /// connection (group 0's sub-table, run unwrapped); each other part of a write runs
    /// after the one before it changed that value (`ROW_COUNT()`, `LAST_INSERT_ID()`).
    session: Option<&'static str>,
}

/// The functions [`session_value`] and [`per_row_sequence`] look for (the split of
/// `INSERT … VALUES` leaves rows calling them to the planner).
pub(super) fn checked_call(name: &str) -> bool {
    SESSION_FUNCTIONS
        .iter()
        .chain(&["ROWNUM", "RAND"])
        .any(|f| f.eq_ignore_ascii_case(name))
}

/// Functions whose value is the session's own connection's: see [`session_value`].
const SESSION_FUNCTIONS: [&str; 12] = [
    "LAST_INSERT_ID",
    "ROW_COUNT",
    "FOUND_ROWS",
    "CONNECTION_ID",
    "GET_LOCK",
    "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS",
    "IS_FREE_LOCK",
    "IS_USED_LOCK",
    "LASTVAL",
    "NEXTVAL",
    "SETVAL",
];

/// A word as a function name (`NAME(`), as written.
fn called<'t>(words: &[&'t Token], i: usize) -> Option<&'t str> {
    match (words.get(i), words.get(i + 1)) {
        (Some(Token::Word(w)), Some(Token::LParen)) if w.quote_style.is_none() => Some(&w.value),
        _ => None,
    }
}

/// A value only the session's own connection has: its last insert id, row counts,
/// connection id, diagnostics, user locks, sequences (`NEXTVAL`, `NEXT VALUE FOR` also
/// change them). A sub-table's part runs on a pooled connection, which has its own.
fn session_value(words: &[&Token]) -> Option<&'static str> {
    const VARIABLES: [&str; 7] = [
        "@@warning_count",
        "@@error_count",
        "@@last_insert_id",
        "@@identity",
        "@@insert_id",
        "@@pseudo_thread_id",
        "@@last_gtid",
    ];
    for i in 0..words.len() {
        if let Some(name) = called(words, i) {
            if let Some(f) = SESSION_FUNCTIONS.iter().find(|f| f.eq_ignore_ascii_case(name)) {
                return Some(f);
            }
        }
        match words[i] {
            Token::Word(w) if w.quote_style.is_none() => {
                let v = w.value.as_str();
                if let Some(var) = v.strip_prefix("@@") {
                    let scoped = |p: &str| {
                        var.get(..p.len())
                            .filter(|h| h.eq_ignore_ascii_case(p))
                            .map(|_| &var[p.len()..])
                    };
                    let var = scoped("session.").or_else(|| scoped("local.")).unwrap_or(var);
                    if let Some(n) = VARIABLES.iter().find(|n| n[2..].eq_ignore_ascii_case(var)) {
                        return Some(n);
                    }
                }
                let next = |k: usize| matches!(words.get(i + k), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(["", "VALUE", "FOR"][k]));
                if (v.eq_ignore_ascii_case("next") || v.eq_ignore_ascii_case("previous"))
                    && next(1)
                    && next(2)
                {
                    return Some("NEXT VALUE FOR / PREVIOUS VALUE FOR");
                }
            }
            _ => {}
        }
    }
    None
}

/// What the server computes row after row in the order the statement reads them: `:=`
/// (a user variable assigned on each row), `ROWNUM()`, `RAND(seed)` (one seeded sequence
/// over the statement's rows; `RAND()` without a seed draws independently).
fn per_row_sequence(words: &[&Token]) -> Option<&'static str> {
    for i in 0..words.len() {
        if matches!(words[i], Token::Assignment) {
            return Some("assigning a user variable (:=)");
        }
        match called(words, i) {
            Some(f) if f.eq_ignore_ascii_case("ROWNUM") => return Some("ROWNUM()"),
            Some(f) if f.eq_ignore_ascii_case("RAND") && !matches!(words.get(i + 2), Some(Token::RParen)) => {
                return Some("RAND(seed)")
            }
            _ => {}
        }
    }
    None
}

/// A [`Hazards`] the plan makes inexact: a [`per_row_sequence`] in a statement on several
/// sub-tables (each would compute it on its own rows, in its own order), a write's
/// [`session_value`] anywhere but in one part of group 0.
pub(super) fn refuse_hazards_across(
    h: Hazards,
    planned: Option<&ShardPlan>,
    named: &str,
) -> Result<(), Refusal> {
    let parts = planned.map_or(&[][..], |p| p.parts());
    match (h.per_row, h.session) {
        (Some(what), _) if parts.len() > 1 => Err(Refusal(format!(
            "sluice: {what} in a statement on sharded table {named} that reaches several sub-tables \
             is not supported (each sub-table would compute it on its own rows, in its own order)"
        ))),
        (_, Some(what)) if parts.len() > 1 || parts.iter().any(|p| p.group != 0) => Err(Refusal(format!(
            "sluice: {what} in a write on sharded table {named} that reaches several sub-tables or \
             another group is not supported (each part would see the value the part before it left)"
        ))),
        _ => Ok(()),
    }
}
