//! The statements `mariadb-dump` writes around a table's rows, on a sharded table, read at
//! the token level (`lex.rs`) and rewritten by replacing the table's name:
//!
//! * `LOCK TABLES t WRITE` (any lock list naming sharded tables): one statement locking
//!   every sub-table in place of the table, in the same mode, on the group holding them
//!   (refused when they are in several groups, or when a sharded table has an alias: the
//!   sub-tables cannot all take one alias).
//! * `/*!40000 ALTER TABLE t DISABLE KEYS */` and `ENABLE KEYS`: a statement that is one
//!   executable comment whose version every MariaDB runs (none, or five digits) is the
//!   comment's text; `ALTER TABLE t {DISABLE|ENABLE} KEYS` goes to every sub-table.
//!
//! Anything else is left to the planner (`None`).

use super::lex::{ident, quote_ident, word_is, Kind, Lexer, Tok};
use super::plan::{Part, Refusal, ShardPlan};
use super::rule::{ShardRule, ShardRules};

/// The statement inside `sql` when `sql` is one executable comment that MariaDB always
/// runs (`/*! … */` or `/*!NNNNN … */` with a five-digit version), with an optional `;`.
fn executable_body(sql: &str) -> Option<&str> {
    let t = sql.trim().trim_end_matches(';').trim_end();
    let inner = t.strip_prefix("/*!")?.strip_suffix("*/")?;
    if inner.contains("*/") {
        return None;
    }
    let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
    match digits {
        0 | 5 => Some(&inner[digits..]),
        _ => None,
    }
}

/// A table name at `toks[i..]` (`t` or `db.t`).
struct Name<'r> {
    /// Its rule, if it is sharded.
    rule: Option<&'r ShardRule>,
    /// Where the name starts, and the byte range of its last part (the table's name).
    start: usize,
    table: (usize, usize),
    /// The token index after it.
    after: usize,
}

fn table_at<'r>(
    sql: &str,
    toks: &[Tok],
    i: usize,
    db: Option<&str>,
    rules: &'r ShardRules,
) -> Option<Name<'r>> {
    let first = toks.get(i)?;
    let a = ident(sql, first)?;
    let (name_db, table, after) = match (toks.get(i + 1), toks.get(i + 2)) {
        (Some(d), Some(t)) if d.kind == Kind::Dot => (Some(a), ident(sql, t)?, i + 3),
        _ => (db.map(str::to_string), a, i + 1),
    };
    let last = toks[after - 1];
    Some(Name {
        rule: name_db.and_then(|d| rules.get(&d, &table)),
        start: first.start,
        table: (last.start, last.end),
        after,
    })
}

/// Plans a dump's LOCK TABLES or DISABLE/ENABLE KEYS on a sharded table; None for any other
/// statement.
pub(crate) fn plan_dump_statement(
    sql: &str,
    db: Option<&str>,
    rules: &ShardRules,
) -> Option<Result<ShardPlan, Refusal>> {
    let body = executable_body(sql);
    let text = body.unwrap_or(sql);
    // Only statements that begin so are read further (a bulk INSERT is never lexed twice).
    let first = Lexer::new(text).next_tok()?;
    if !(word_is(text, &first, "LOCK") || word_is(text, &first, "ALTER")) {
        return None;
    }
    let mut lx = Lexer::new(text);
    let mut toks = Vec::new();
    while let Some(t) = lx.next_tok() {
        if t.kind == Kind::Bad || toks.len() > 4096 {
            return None;
        }
        toks.push(t);
    }
    if toks.last().is_some_and(|t| t.kind == Kind::Semi) {
        toks.pop();
    }
    let first = toks.first()?;
    if body.is_none() && word_is(text, first, "LOCK") {
        return lock_tables(text, &toks, db, rules);
    }
    if word_is(text, first, "ALTER") {
        return keys(text, &toks, db, rules);
    }
    None
}

/// `ALTER TABLE t DISABLE KEYS` / `ENABLE KEYS`.
fn keys(sql: &str, toks: &[Tok], db: Option<&str>, rules: &ShardRules) -> Option<Result<ShardPlan, Refusal>> {
    if toks.len() < 5 || !word_is(sql, &toks[1], "TABLE") {
        return None;
    }
    let name = table_at(sql, toks, 2, db, rules)?;
    let rule = name.rule?;
    let [mode, k] = toks.get(name.after..)? else {
        return None;
    };
    if !(word_is(sql, mode, "DISABLE") || word_is(sql, mode, "ENABLE")) || !word_is(sql, k, "KEYS") {
        return None;
    }
    let parts = (0..rule.shards)
        .map(|s| Part {
            shard: s,
            group: rule.group_of(s),
            sql: format!(
                "{}{}{}",
                &sql[toks[0].start..name.table.0],
                quote_ident(&rule.sub_table(s)),
                &sql[name.table.1..k.end]
            )
            .into(),
            params: Vec::new(),
            prepared: false,
        })
        .collect();
    Some(Ok(ShardPlan::Write {
        parts,
        ddl: true,
        insert_id_from: None,
    }))
}

/// `LOCK TABLE[S] item, …` where an item is `name [[AS] alias] lock_type`.
fn lock_tables(
    sql: &str,
    toks: &[Tok],
    db: Option<&str>,
    rules: &ShardRules,
) -> Option<Result<ShardPlan, Refusal>> {
    let kw = toks.get(1)?;
    if !(word_is(sql, kw, "TABLES") || word_is(sql, kw, "TABLE")) {
        return None;
    }
    let mut out = sql[toks[0].start..kw.end].to_string();
    let mut groups = Vec::new();
    let mut any = false;
    let mut i = 2;
    loop {
        let name = table_at(sql, toks, i, db, rules)?;
        let after = name.after;
        // The item's lock type: up to the next comma.
        let end = toks[after..]
            .iter()
            .position(|t| t.kind == Kind::Comma)
            .map_or(toks.len(), |p| after + p);
        if after >= end {
            return None;
        }
        let mode = &sql[toks[after].start..toks[end - 1].end];
        let lock_words = ["READ", "LOCAL", "WRITE", "LOW_PRIORITY", "CONCURRENT"];
        let plain = toks[after..end]
            .iter()
            .all(|t| lock_words.iter().any(|w| word_is(sql, t, w)));
        out.push_str(if i == 2 { " " } else { ", " });
        match name.rule {
            Some(rule) if !plain => {
                return Some(Err(Refusal(format!(
                    "sluice: LOCK TABLES with an alias for sharded table {} is not supported (its \
                     sub-tables cannot share one alias); lock it by its name",
                    rule.table
                ))))
            }
            Some(rule) => {
                any = true;
                let items: Vec<String> = (0..rule.shards)
                    .map(|s| {
                        groups.push(rule.group_of(s));
                        let qualifier = &sql[name.start..name.table.0];
                        format!("{qualifier}{} {mode}", quote_ident(&rule.sub_table(s)))
                    })
                    .collect();
                out.push_str(&items.join(", "));
            }
            None => {
                groups.push(0);
                out.push_str(&sql[name.start..toks[end - 1].end]);
            }
        }
        if end >= toks.len() {
            break;
        }
        i = end + 1;
    }
    if !any {
        return None;
    }
    groups.sort_unstable();
    groups.dedup();
    if groups != [0] {
        return Some(Err(Refusal(
            "sluice: LOCK TABLES on sharded tables is supported only when every table it locks \
             is in the first backend group"
                .into(),
        )));
    }
    Some(Ok(ShardPlan::Write {
        parts: vec![Part {
            shard: 0,
            group: 0,
            sql: out.into(),
            params: Vec::new(),
            prepared: false,
        }],
        ddl: false,
        insert_id_from: None,
    }))
}
