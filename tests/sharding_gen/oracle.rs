//! The differential oracle: one statement through sluice on the sharded table and
//! directly on the reference table, as text and as a prepared statement; what a client
//! sees compared (column definitions, rows, warnings, errors, FOUND_ROWS()).

use crate::common::wire::{Column, Part, Reply, Wire};

pub const NOT_SUPPORTED: u16 = 1235;

/// What a client sees of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Rows {
        columns: Vec<String>,
        /// Raw row payloads.
        rows: Vec<Vec<u8>>,
        warnings: u16,
    },
    Err(u16, String),
    Other(String),
}

/// The verdict on one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Same,
    /// Error 1235 through sluice: the sentence with names and numbers blanked.
    Refused(String),
    /// Only the spelling sluice picked among values equal under a case-insensitive
    /// collation differs (a group's or MIN/MAX's representative: the server keeps
    /// whichever its scan meets first, which no merge can know).
    Spelling,
    /// A wrong answer: what differs.
    Wrong(String),
}

/// A column definition without the table names (`t…` through sluice, `r…` directly).
pub fn def(c: &Column) -> String {
    format!(
        "{}|{}|cs={}|len={}|type={}|flags={:#x}|dec={}",
        c.name, c.org_name, c.charset, c.length, c.ty, c.flags, c.decimals
    )
}

fn seen(w: &mut Wire, r: Reply) -> Seen {
    let raw = std::mem::take(&mut w.raw_rows);
    match r {
        // Rows then an error (the server met an overflow midway): an error, as a client
        // sees it.
        Reply::Parts(p) if p.iter().any(|x| matches!(x, Part::Err(_))) => {
            match p.into_iter().find(|x| matches!(x, Part::Err(_))) {
                Some(Part::Err(e)) => Seen::Err(e.code, e.message),
                _ => Seen::Other("error".into()),
            }
        }
        Reply::Parts(p) => match p.into_iter().next() {
            Some(Part::Rows(rs)) => Seen::Rows {
                columns: rs.columns.iter().map(def).collect(),
                rows: raw,
                warnings: rs.end.warnings,
            },
            Some(Part::Err(e)) => Seen::Err(e.code, e.message),
            other => Seen::Other(format!("{other:?}")),
        },
        Reply::PrepareErr(e) => Seen::Err(e.code, e.message),
        other => Seen::Other(format!("{other:?}")),
    }
}

pub async fn text(w: &mut Wire, sql: &str) -> Seen {
    let r = w.query(sql).await;
    seen(w, r)
}

pub async fn binary(w: &mut Wire, sql: &str) -> Seen {
    let p = match w.prepare(sql).await {
        Reply::Prepared(p) => p,
        other => return seen(w, other),
    };
    let r = w.execute(p.stmt_id, &[]).await;
    let s = seen(w, r);
    w.close_stmt(p.stmt_id).await;
    s
}

/// The rows of a one-statement query, rendered (for SHOW WARNINGS, FOUND_ROWS()).
pub async fn rendered(w: &mut Wire, sql: &str) -> Vec<Vec<String>> {
    let r = w.query(sql).await;
    w.raw_rows.clear();
    match r {
        Reply::Parts(p) => match p.into_iter().next() {
            Some(Part::Rows(rs)) => rs.rows,
            other => vec![vec![format!("{other:?}")]],
        },
        other => vec![vec![format!("{other:?}")]],
    }
}

/// Error 1235's sentence as a kind: backquoted names, quoted text and numbers blanked.
pub fn refusal_kind(msg: &str) -> String {
    let mut out = String::new();
    let mut quote = None;
    for c in msg.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => {}
            None if c == '`' || c == '\'' => {
                quote = Some(c);
                out.push(c);
                out.push('…');
            }
            None if c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            None => out.push(c),
        }
    }
    out.chars().take(160).collect()
}

fn lower(rows: &[Vec<u8>]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        // Length prefixes of short values and trailing spaces (PAD SPACE) dropped.
        .map(|r| {
            String::from_utf8_lossy(r)
                .to_lowercase()
                .chars()
                .filter(|&c| c > ' ')
                .collect::<String>()
        })
        .collect();
    v.sort();
    v
}

fn show(rows: &[Vec<u8>], i: usize) -> String {
    rows.get(i)
        .map_or("-".into(), |r| format!("{:?}", String::from_utf8_lossy(r)))
}

/// Compares sluice's answer (`got`) with the server's (`want`); `ordered`: the
/// statement fixes the order of its rows.
pub fn judge(got: &Seen, want: &Seen, ordered: bool) -> Verdict {
    match (got, want) {
        (Seen::Err(NOT_SUPPORTED, m), _) => Verdict::Refused(refusal_kind(m)),
        (Seen::Err(a, _), Seen::Err(b, _)) if a == b => Verdict::Same,
        (
            Seen::Rows {
                columns: c1,
                rows: r1,
                warnings: w1,
            },
            Seen::Rows {
                columns: c2,
                rows: r2,
                warnings: w2,
            },
        ) => {
            let mut out = String::new();
            if c1 != c2 {
                for (i, (a, b)) in c1.iter().zip(c2).enumerate() {
                    if a != b {
                        out.push_str(&format!("column {i}: sluice {a} / server {b}; "));
                    }
                }
                if c1.len() != c2.len() {
                    out.push_str(&format!("{} columns vs {}; ", c1.len(), c2.len()));
                }
            }
            let (mut s1, mut s2) = (r1.clone(), r2.clone());
            let rows_fixed = |v: &mut Vec<Vec<u8>>| {
                if !ordered {
                    v.sort();
                }
            };
            rows_fixed(&mut s1);
            rows_fixed(&mut s2);
            let (s1, s2) = (s1, s2);
            if s1 != s2 {
                if out.is_empty() && lower(r1) == lower(r2) {
                    return Verdict::Spelling;
                }
                let i = s1
                    .iter()
                    .zip(&s2)
                    .position(|(a, b)| a != b)
                    .unwrap_or(s1.len().min(s2.len()));
                out.push_str(&format!(
                    "{} rows vs {}; row {i}: sluice {} / server {}; ",
                    s1.len(),
                    s2.len(),
                    show(&s1, i),
                    show(&s2, i)
                ));
            }
            // Column flags, origin, collation numbers and the warning count are part of
            // the answer: a difference is a wrong answer like any other.
            if w1 != w2 {
                out.push_str(&format!("warnings {w1} vs {w2}; "));
            }
            if out.is_empty() {
                Verdict::Same
            } else {
                Verdict::Wrong(out)
            }
        }
        _ => Verdict::Wrong(format!("sluice {got:?} / server {want:?}")),
    }
}
