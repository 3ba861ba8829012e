//! `INSERT` / `REPLACE … VALUES` on a sharded table, split by sub-table at the token
//! level: the rows are found with the lexer (`lex.rs`), each row's shard key value is
//! read, and each sub-table's statement is built from the client's own bytes (the
//! statement's head with the table name replaced, its rows, its `ON DUPLICATE KEY UPDATE`),
//! so every literal, comment and spelling reaches the server as the client wrote it. It
//! reads bytes, not text: a dump made without `--hex-blob` holds binary values as raw
//! bytes in string literals, and each part carries them as they came (the caller checks
//! that the connection's character set lexes like UTF-8, see `lex.rs`).
//!
//! This is how a bulk load (a `mariadb-dump` restore: extended INSERTs of about 1 MB, up
//! to `max_allowed_packet`) goes through: one pass, no tree, memory for the parts (the size
//! of the statement) and a few words per row. Placeholders stay placeholders: each part
//! records which of the client's parameters it binds ([`Part::params`]), in its order.
//!
//! What this reader does not take (INSERT … SET or SELECT, PARTITION, RETURNING, a
//! sharded table named inside the rows, the key column named after ON DUPLICATE KEY
//! UPDATE, an executable comment) is left to the full planner ([`Split::Other`]). A key
//! that is not a literal value (or a parameter) is refused here, as there.

use std::collections::BTreeMap;

use super::columns::WANTS_COLUMNS;
use super::lex::{ident, quote_ident, word_is, Kind, Lexer, Tok};
use super::literal::{number, param_literal, unescape, Lit};
use super::plan::{Part, Refusal, ShardPlan};
use super::rule::{ShardRule, ShardRules};
use super::ParamValue;

/// What [`split_insert`] made of a statement.
#[derive(Debug)]
pub(crate) enum Split {
    /// Not a statement this reader takes; the sentence says why, for a statement too large
    /// for the full planner.
    Other(&'static str),
    Plan(Box<ShardPlan>),
}

/// One row of the VALUES list.
struct Row {
    start: usize,
    end: usize,
    /// Top-level values in the row.
    values: usize,
    /// The shard its key places it on; Err: why it cannot be placed.
    shard: Result<u32, String>,
    /// The client's index of its first placeholder, and how many it has.
    first_param: usize,
    params: usize,
}

/// The head of the statement: everything up to and including `VALUES`.
struct Head<'r> {
    rule: &'r ShardRule,
    /// Byte range of the table name's last part (replaced by the sub-table's name).
    name: (usize, usize),
    /// Column names when the statement lists them.
    columns: Option<Vec<String>>,
    /// Offset just after `VALUES` / `VALUE`.
    end: usize,
}

/// Reads the head; `Err(reason)` when the statement is not one this reader takes.
fn head<'r>(
    sql: &[u8],
    lx: &mut Lexer<'_>,
    db: Option<&str>,
    rules: &'r ShardRules,
) -> Result<Head<'r>, &'static str> {
    const NOT_VALUES: &str = "it is not a plain INSERT … VALUES";
    let first = lx.next_tok().ok_or(NOT_VALUES)?;
    if !(word_is(sql, &first, "INSERT") || word_is(sql, &first, "REPLACE")) {
        return Err(NOT_VALUES);
    }
    let mut t = lx.next_tok().ok_or(NOT_VALUES)?;
    while ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE"]
        .iter()
        .any(|w| word_is(sql, &t, w))
    {
        t = lx.next_tok().ok_or(NOT_VALUES)?;
    }
    if word_is(sql, &t, "INTO") {
        t = lx.next_tok().ok_or(NOT_VALUES)?;
    }
    let mut name_tok = t;
    let mut parts = vec![ident(sql, &t).ok_or(NOT_VALUES)?];
    t = lx.next_tok().ok_or(NOT_VALUES)?;
    if t.kind == Kind::Dot {
        name_tok = lx.next_tok().ok_or(NOT_VALUES)?;
        parts.push(ident(sql, &name_tok).ok_or(NOT_VALUES)?);
        t = lx.next_tok().ok_or(NOT_VALUES)?;
    }
    let (db, table) = match parts.as_slice() {
        [t] => (db.ok_or(NOT_VALUES)?.to_string(), t.as_str()),
        [d, t] => (d.clone(), t.as_str()),
        _ => return Err(NOT_VALUES),
    };
    let rule = rules
        .get(&db, table)
        .ok_or("it does not insert into a sharded table")?;
    let mut columns = None;
    if t.kind == Kind::LParen {
        let mut cols = Vec::new();
        loop {
            let c = lx.next_tok().ok_or(NOT_VALUES)?;
            if c.kind == Kind::RParen && cols.is_empty() {
                break;
            }
            cols.push(ident(sql, &c).ok_or(NOT_VALUES)?);
            let sep = lx.next_tok().ok_or(NOT_VALUES)?;
            match sep.kind {
                Kind::Comma => {}
                Kind::RParen => break,
                _ => return Err(NOT_VALUES),
            }
        }
        columns = Some(cols);
        t = lx.next_tok().ok_or(NOT_VALUES)?;
    }
    if !(word_is(sql, &t, "VALUES") || word_is(sql, &t, "VALUE")) {
        return Err(NOT_VALUES);
    }
    Ok(Head {
        rule,
        name: (name_tok.start, name_tok.end),
        columns,
        end: t.end,
    })
}

/// The literal a row's key tokens are (a number with an optional sign, a plain
/// single-quoted string, NULL, TRUE, FALSE, or a parameter with its value).
fn key_literal(sql: &[u8], toks: &[Tok], params: Option<&[ParamValue]>, param: Option<usize>) -> Option<Lit> {
    // None for bytes that are not UTF-8 (a key sluice cannot read is refused).
    let text = |t: &Tok| std::str::from_utf8(&sql[t.start..t.end]).unwrap_or("");
    match toks {
        [t] if t.kind == Kind::Num => number(text(t)),
        [s, t] if s.kind == Kind::Op && t.kind == Kind::Num && matches!(text(s), "-" | "+") => {
            match (text(s), number(text(t))?) {
                ("+", l) => Some(l),
                (_, Lit::Int(n)) => Some(Lit::Int(n.checked_neg()?)),
                (_, Lit::Decimal(d)) => Some(Lit::Decimal(format!("-{d}"))),
                (_, Lit::Float(f)) => Some(Lit::Float(format!("-{f}"))),
                _ => None,
            }
        }
        [t] if t.kind == Kind::Str => Some(Lit::Str(unescape(
            std::str::from_utf8(&sql[t.start + 1..t.end - 1]).ok()?,
            '\'',
        ))),
        [t] if t.kind == Kind::Word => match text(t).to_ascii_uppercase().as_str() {
            "NULL" => Some(Lit::Null),
            "TRUE" => Some(Lit::Int(1)),
            "FALSE" => Some(Lit::Int(0)),
            _ => None,
        },
        [t] if t.kind == Kind::Param => param_literal(params?.get(param?)?),
        _ => None,
    }
}

/// Splits an INSERT / REPLACE … VALUES into per-sub-table statements (see the module
/// documentation). `params`: a prepared statement's values (None for text; a text
/// statement with placeholders is refused, as by the planner).
pub(crate) fn split_insert(
    sql: &[u8],
    params: Option<&[ParamValue]>,
    db: Option<&str>,
    rules: &ShardRules,
) -> Result<Split, Refusal> {
    let mut lx = Lexer::new(sql);
    let h = match head(sql, &mut lx, db, rules) {
        Ok(h) => h,
        Err(why) => return Ok(Split::Other(why)),
    };
    let rule = h.rule;
    let table = &rule.table;
    let key = rule.key.as_str();
    let refuse_key = || {
        format!(
            "the shard key {key} of a row inserted into sharded table {table} must be a literal \
             value (not an expression, DEFAULT or a placeholder without its value)"
        )
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut param_count = 0usize;
    // The key's position, once the column list is known.
    let columns: std::sync::Arc<[String]> = match &h.columns {
        Some(c) => c.clone().into(),
        None => match rules.column_order(&rule.db, table) {
            Some(c) => c,
            // Checked below, after the rows (a row of defaults is refused first).
            None => std::sync::Arc::from(Vec::new()),
        },
    };
    let key_at = columns.iter().position(|c| c.eq_ignore_ascii_case(key));
    let mut suffix = None;
    'rows: while let Some(open) = lx.next_tok() {
        if open.kind != Kind::LParen {
            return Ok(Split::Other("its VALUES list is not a list of rows"));
        }
        let (mut depth, mut values, mut empty) = (1usize, 0usize, true);
        let first_param = param_count;
        let mut key_toks: Vec<Tok> = Vec::new();
        let mut key_long = false;
        let mut key_param = None;
        let mut prev: Option<Tok> = None;
        let end = loop {
            let Some(t) = lx.next_tok() else {
                return Ok(Split::Other("a row does not end"));
            };
            let before = prev.replace(t);
            match t.kind {
                Kind::Bad => return Ok(Split::Other("it holds an executable comment")),
                // What the planner checks on whole statements (`plan::session_value`,
                // `plan::per_row_sequence`): a call of such a function, `:=`, `@@name`.
                Kind::LParen
                    if before.is_some_and(|b| {
                        b.kind == Kind::Word
                            && std::str::from_utf8(&sql[b.start..b.end])
                                .is_ok_and(super::hazards::checked_call)
                    }) =>
                {
                    return Ok(Split::Other(
                        "a row calls a function sluice checks on the whole statement",
                    ))
                }
                Kind::Op if matches!(sql[t.start], b':' | b'@') => {
                    return Ok(Split::Other("a row assigns or reads a variable"))
                }
                Kind::LParen => depth += 1,
                Kind::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        break t.end;
                    }
                }
                Kind::Comma if depth == 1 => {
                    values += 1;
                    continue;
                }
                Kind::Param => {
                    if Some(values) == key_at {
                        key_param = Some(param_count);
                    }
                    param_count += 1;
                }
                Kind::Word => match std::str::from_utf8(&sql[t.start..t.end]) {
                    Err(_) => return Ok(Split::Other("a row holds a word that is not UTF-8")),
                    Ok(w) if rules.is_table_name(w) => {
                        return Ok(Split::Other("a row names a sharded table"))
                    }
                    Ok(_) => {}
                },
                Kind::Quoted => match ident(sql, &t) {
                    None => return Ok(Split::Other("a row holds a name that is not UTF-8")),
                    Some(n) if rules.is_table_name(&n) => {
                        return Ok(Split::Other("a row names a sharded table"))
                    }
                    Some(_) => {}
                },
                _ => {}
            }
            empty = false;
            if Some(values) == key_at && depth >= 1 {
                if key_toks.len() < 2 {
                    key_toks.push(t);
                } else {
                    key_long = true;
                }
            }
        };
        let values = if empty { 0 } else { values + 1 };
        let shard = if key_long {
            Err(refuse_key())
        } else {
            match key_literal(sql, &key_toks, params, key_param) {
                Some(lit) => rule.shard_for_insert(&lit.key_value()),
                None => Err(refuse_key()),
            }
        };
        rows.push(Row {
            start: open.start,
            end,
            values,
            shard,
            first_param,
            params: param_count - first_param,
        });
        match lx.next_tok() {
            None => break,
            Some(t) if t.kind == Kind::Comma => {}
            Some(t) if t.kind == Kind::Semi => {
                if lx.next_tok().is_some() {
                    return Ok(Split::Other("it is followed by another statement"));
                }
                break;
            }
            Some(t) if word_is(sql, &t, "ON") => {
                let (from, mut to, first) = (t.start, t.end, param_count);
                while let Some(u) = lx.next_tok() {
                    match u.kind {
                        Kind::Bad => return Ok(Split::Other("it holds an executable comment")),
                        Kind::Semi => {
                            if lx.next_tok().is_some() {
                                return Ok(Split::Other("it is followed by another statement"));
                            }
                            break;
                        }
                        Kind::Param => param_count += 1,
                        Kind::Word | Kind::Quoted => {
                            let Some(n) = ident(sql, &u) else {
                                return Ok(Split::Other(
                                    "its ON DUPLICATE KEY UPDATE holds a name that is not UTF-8",
                                ));
                            };
                            if n.eq_ignore_ascii_case(key)
                                || rules.is_table_name(&n)
                                || n.eq_ignore_ascii_case("RETURNING")
                            {
                                return Ok(Split::Other(
                                    "its ON DUPLICATE KEY UPDATE names the shard key or a sharded table",
                                ));
                            }
                        }
                        _ => {}
                    }
                    to = u.end;
                }
                suffix = Some((from, to, first));
                break 'rows;
            }
            Some(_) => return Ok(Split::Other("something other than rows follows VALUES")),
        }
    }
    if rows.is_empty() {
        return Ok(Split::Other("it has no rows"));
    }
    match params {
        None if param_count > 0 => {
            return Err(Refusal(
                "sluice: a statement with ? placeholders on a sharded table is planned with its \
                 parameter values (prepared statements)"
                    .into(),
            ))
        }
        Some(p) if p.len() != param_count => {
            return Err(Refusal(format!(
                "sluice: the statement has {param_count} placeholders but {} parameters were given",
                p.len()
            )))
        }
        _ => {}
    }
    if h.columns.is_none() {
        if rows.iter().any(|r| r.values == 0) {
            return Err(Refusal(format!(
                "sluice: an INSERT into sharded table {table} must give the shard key column {key} \
                 (a row of defaults has none)"
            )));
        }
        if columns.is_empty() {
            return Err(Refusal(format!(
                "{WANTS_COLUMNS} {table} needs the table's column order, which sluice could not read; \
                 name the columns"
            )));
        }
    }
    if key_at.is_none() {
        return Err(Refusal(format!(
            "sluice: an INSERT into sharded table {table} must give the shard key column {key}"
        )));
    }
    // A row whose length is not the column list's: the server's own error (1136), which it
    // gives before writing any row, from the whole statement on one sub-table.
    let mismatch = rows.iter().any(|r| r.values != columns.len());
    let mut per_shard: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let shard = if mismatch {
            0
        } else {
            match &r.shard {
                Ok(s) => *s,
                Err(m) => return Err(Refusal(format!("sluice: {m}"))),
            }
        };
        per_shard.entry(shard).or_default().push(i);
    }
    let insert_id_from = per_shard
        .iter()
        .filter_map(|(s, r)| r.last().map(|&i| (*s, i)))
        .max_by_key(|&(_, i)| i)
        .map(|(s, _)| s);
    let written_columns = match h.columns {
        Some(_) => String::new(),
        None => {
            let names: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
            format!(" ({})", names.join(", "))
        }
    };
    let mut parts = Vec::with_capacity(per_shard.len());
    for (shard, mine) in per_shard {
        let sub = rule.sub_table(shard);
        // Written as the client wrote the table's name: backquoted if it was.
        let plain = sql[h.name.0] != b'`'
            && sub.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
            && !sub.bytes().all(|c| c.is_ascii_digit());
        let sub = if plain { sub } else { quote_ident(&sub) };
        let rows_len: usize = mine.iter().map(|&i| rows[i].end - rows[i].start + 1).sum();
        let suffix_len = suffix.map_or(0, |(a, b, _)| b - a + 1);
        let mut text = Vec::with_capacity(h.end + sub.len() + written_columns.len() + rows_len + suffix_len);
        text.extend_from_slice(&sql[..h.name.0]);
        text.extend_from_slice(sub.as_bytes());
        text.extend_from_slice(written_columns.as_bytes());
        text.extend_from_slice(&sql[h.name.1..h.end]);
        let mut order = Vec::new();
        for (n, &i) in mine.iter().enumerate() {
            let r = &rows[i];
            text.extend_from_slice(if n == 0 { b" " } else { b", " });
            text.extend_from_slice(&sql[r.start..r.end]);
            order.extend(r.first_param..r.first_param + r.params);
        }
        if let Some((a, b, first)) = suffix {
            text.push(b' ');
            text.extend_from_slice(&sql[a..b]);
            order.extend(first..param_count);
        }
        let params = order
            .into_iter()
            .map(u16::try_from)
            .collect::<Result<Vec<u16>, _>>()
            .map_err(|_| Refusal("sluice: more than 65535 parameters".into()))?;
        parts.push(Part {
            shard,
            group: rule.group_of(shard),
            sql: text.into(),
            params,
            prepared: false,
        });
    }
    Ok(Split::Plan(Box::new(ShardPlan::Write {
        parts,
        ddl: false,
        insert_id_from,
    })))
}

/// When `sql` is an INSERT / REPLACE … VALUES without a column list into a sharded table:
/// that table's rule. Reads the statement's head only.
pub(crate) fn without_column_list<'r>(
    sql: &[u8],
    db: Option<&str>,
    rules: &'r ShardRules,
) -> Option<&'r ShardRule> {
    let h = head(sql, &mut Lexer::new(sql), db, rules).ok()?;
    h.columns.is_none().then_some(h.rule)
}

/// The plan of a statement that is not UTF-8 (a dump made without `--hex-blob` writes
/// binary values as raw bytes in string literals): `planned` was made from its text with
/// invalid bytes replaced, which must never reach a sub-table; an `INSERT … VALUES` is
/// split again over the client's own bytes, anything else on a sharded table is refused.
/// A UTF-8 statement's plan, and a statement on no sharded table (sent untouched), pass
/// through. The caller checks that the connection's character set lexes like UTF-8.
pub fn plan_over_bytes(
    sql: &[u8],
    planned: Result<Option<ShardPlan>, Refusal>,
    db: Option<&str>,
    rules: &ShardRules,
) -> Result<Option<ShardPlan>, Refusal> {
    if matches!(planned, Ok(None)) || std::str::from_utf8(sql).is_ok() {
        return planned;
    }
    match split_insert(sql, None, db, rules)? {
        Split::Plan(p) => Ok(Some(*p)),
        Split::Other(why) => Err(Refusal(format!(
            "sluice: a statement on a sharded table that is not valid UTF-8 text must be a plain \
             INSERT … VALUES ({why}); write binary bytes as X'...' literals (mariadb-dump --hex-blob) \
             or bind them as parameters"
        ))),
    }
}
