//! The differential oracle, the one engine of the sharding differentials: a statement
//! through sluice on the sharded table and directly on the reference table, as text or
//! as a prepared statement (with typed parameters or none); what a client sees compared:
//! column definitions (every field, the table named by a placeholder) and the PREPARE
//! answer, rows (in order where the statement fixes it, as a multiset otherwise),
//! warnings and SHOW WARNINGS, errors, affected rows and insert ids, FOUND_ROWS().
//! The random statements (`tests/sharding_gen.rs`) and the fixed corpus (`fixed.rs`)
//! are judged by it alike.

use crate::common::wire::{Column, Param, Part, Reply, Wire};

pub const NOT_SUPPORTED: u16 = 1235;

/// What a client sees of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Rows {
        columns: Vec<String>,
        /// A prepared statement's PREPARE answer: its parameter count and columns.
        prepared: Option<(usize, Vec<String>)>,
        /// Raw row payloads.
        rows: Vec<Vec<u8>>,
        /// The same rows rendered cell by cell (`NULL` for SQL NULL).
        cells: Vec<Vec<String>>,
        warnings: u16,
    },
    Ok {
        affected: u64,
        insert_id: u64,
        warnings: u16,
    },
    Err(u16, String),
    Other(String),
}

impl Seen {
    /// In a few words, for a report (a result set can hold 100k rows).
    pub fn brief(&self) -> String {
        match self {
            Seen::Rows { rows, columns, .. } => format!("{} rows of {} columns", rows.len(), columns.len()),
            Seen::Ok {
                affected,
                insert_id,
                warnings,
            } => format!("OK: {affected} affected, insert id {insert_id}, {warnings} warnings"),
            Seen::Err(c, m) => format!("ERROR {c}: {m}"),
            Seen::Other(s) => s.chars().take(300).collect(),
        }
    }
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
    /// Only DOUBLE/FLOAT cells differ, and only past 12 significant digits: floating-point
    /// addition is not associative, and the server's own sum follows its scan order.
    Rounding,
    /// Same but for column definitions, which equal the server's own for the statement
    /// run on one sub-table (the server describes it otherwise on the reference table:
    /// two tables, two plans).
    SubTableDefs,
    /// A wrong answer: what differs.
    Wrong(String),
}

impl Verdict {
    /// Which of two verdicts a run reports: a wrong answer before a refusal before the
    /// accepted differences.
    pub fn rank(&self) -> u8 {
        match self {
            Verdict::Wrong(_) => 5,
            Verdict::Refused(_) => 4,
            Verdict::Spelling => 3,
            Verdict::Rounding => 2,
            Verdict::SubTableDefs => 1,
            Verdict::Same => 0,
        }
    }
}

/// How a statement is sent.
#[derive(Debug, Clone)]
pub enum Proto {
    Text,
    /// COM_STMT_PREPARE, then COM_STMT_EXECUTE with these parameters.
    Binary(Vec<Param>),
}

impl Proto {
    pub fn name(&self) -> &'static str {
        match self {
            Proto::Text => "text",
            Proto::Binary(_) => "binary",
        }
    }
}

/// A column definition, every field, with the table `physical` (sharded, reference or
/// sub-table) named `@T@` so that the sides compare.
pub fn def(c: &Column, physical: &str) -> String {
    let mut c = c.clone();
    for t in [&mut c.table, &mut c.org_table] {
        if t == physical {
            *t = "@T@".to_string();
        }
    }
    c.render()
}

fn seen(w: &mut Wire, r: Reply, physical: &str, prepared: Option<(usize, Vec<String>)>) -> Seen {
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
                columns: rs.columns.iter().map(|c| def(c, physical)).collect(),
                prepared,
                rows: raw,
                cells: rs.rows,
                warnings: rs.end.warnings,
            },
            Some(Part::Ok(ok)) => Seen::Ok {
                affected: ok.affected_rows,
                insert_id: ok.last_insert_id,
                warnings: ok.warnings,
            },
            Some(Part::Err(e)) => Seen::Err(e.code, e.message),
            other => Seen::Other(format!("{other:?}")),
        },
        Reply::PrepareErr(e) => Seen::Err(e.code, e.message),
        other => Seen::Other(format!("{other:?}")),
    }
}

/// Runs `sql` (naming the table `physical`) on one side.
pub async fn run(w: &mut Wire, sql: &str, proto: &Proto, physical: &str) -> Seen {
    match proto {
        Proto::Text => {
            let r = w.query(sql).await;
            seen(w, r, physical, None)
        }
        Proto::Binary(params) => {
            let p = match w.prepare(sql).await {
                Reply::Prepared(p) => p,
                other => return seen(w, other, physical, None),
            };
            let r = w.execute(p.stmt_id, params).await;
            let described = (
                p.params.len(),
                p.columns.iter().map(|c| def(c, physical)).collect(),
            );
            let s = seen(w, r, physical, Some(described));
            w.close_stmt(p.stmt_id).await;
            s
        }
    }
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

/// Case folded, Latin-1 accents dropped (`Å`, `ä` → `a`, as utf8mb4_general_ci compares)
/// and trailing spaces (PAD SPACE) dropped: equal for the spellings a case-insensitive
/// group or MIN/MAX may show. (Looser than latin1_swedish_ci, where `Ä` is a letter of its
/// own; a group the server keeps apart shows up as another row count anyway.)
pub fn fold(s: &str) -> String {
    s.trim_end_matches(' ')
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'à'..='å' => 'a',
            'ç' => 'c',
            'è'..='ë' => 'e',
            'ì'..='ï' => 'i',
            'ñ' => 'n',
            'ò'..='ö' | 'ø' => 'o',
            'ù'..='ü' => 'u',
            'ý' | 'ÿ' => 'y',
            c => c,
        })
        .collect()
}

/// Whether two DOUBLE/FLOAT renderings agree to 12 significant digits.
fn double_close(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => false,
    }
}

/// The rows' cells in the order compared: as given when the statement fixes the order,
/// sorted (by `key`) otherwise.
fn arranged(
    cells: &[Vec<String>],
    ordered: bool,
    key: impl Fn(&[String]) -> Vec<String>,
) -> Vec<Vec<String>> {
    let mut v = cells.to_vec();
    if !ordered {
        v.sort_by_key(|r| key(r));
    }
    v
}

fn show(rows: &[Vec<u8>], i: usize) -> String {
    rows.get(i)
        .map_or("-".into(), |r| format!("{:?}", String::from_utf8_lossy(r)))
}

/// Where two rows of cells differ only in cells that `same` accepts.
fn rows_alike(a: &[Vec<String>], b: &[Vec<String>], same: impl Fn(usize, &str, &str) -> bool) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .enumerate()
                    .all(|(i, (p, q))| p == q || same(i, p, q))
        })
}

/// Appends where two lists of column definitions differ.
fn defs(out: &mut String, what: &str, c1: &[String], c2: &[String]) {
    for (i, (a, b)) in c1.iter().zip(c2).enumerate() {
        if a != b {
            out.push_str(&format!("{what}column {i}: sluice {a} / server {b}; "));
        }
    }
    if c1.len() != c2.len() {
        out.push_str(&format!("{what}{} columns vs {}; ", c1.len(), c2.len()));
    }
}

/// Compares sluice's answer (`got`) with the server's (`want`); `ordered`: the
/// statement fixes the order of its rows.
pub fn judge(got: &Seen, want: &Seen, ordered: bool) -> Verdict {
    match (got, want) {
        (Seen::Err(NOT_SUPPORTED, m), _) => Verdict::Refused(refusal_kind(m)),
        (Seen::Err(a, _), Seen::Err(b, _)) if a == b => Verdict::Same,
        (
            Seen::Ok {
                affected: a1,
                insert_id: i1,
                warnings: w1,
            },
            Seen::Ok {
                affected: a2,
                insert_id: i2,
                warnings: w2,
            },
        ) => {
            if (a1, i1, w1) == (a2, i2, w2) {
                Verdict::Same
            } else {
                Verdict::Wrong(format!("sluice {} / server {}", got.brief(), want.brief()))
            }
        }
        (
            Seen::Rows {
                columns: c1,
                prepared: p1,
                rows: r1,
                cells: d1,
                warnings: w1,
            },
            Seen::Rows {
                columns: c2,
                prepared: p2,
                rows: r2,
                cells: d2,
                warnings: w2,
            },
        ) => {
            let mut out = String::new();
            defs(&mut out, "", c1, c2);
            match (p1, p2) {
                (Some((n1, q1)), Some((n2, q2))) => {
                    if n1 != n2 {
                        out.push_str(&format!("PREPARE: {n1} parameters vs {n2}; "));
                    }
                    defs(&mut out, "PREPARE ", q1, q2);
                }
                (None, None) => {}
                _ => out.push_str("prepared on one side only; "),
            }
            // Column flags, origin, collation numbers and the warning count are part of
            // the answer: a difference is a wrong answer like any other.
            if w1 != w2 {
                out.push_str(&format!("warnings {w1} vs {w2}; "));
            }
            let (mut s1, mut s2) = (r1.clone(), r2.clone());
            if !ordered {
                s1.sort();
                s2.sort();
            }
            if s1 == s2 {
                return if out.is_empty() {
                    Verdict::Same
                } else {
                    Verdict::Wrong(out)
                };
            }
            if out.is_empty() {
                // Equal but for spellings of case-insensitive equals, in the same order
                // where the order is fixed.
                let folded = |r: &[String]| r.iter().map(|c| fold(c)).collect::<Vec<_>>();
                let (a, b) = (arranged(d1, ordered, folded), arranged(d2, ordered, folded));
                if rows_alike(&a, &b, |_, p, q| fold(p) == fold(q)) {
                    return Verdict::Spelling;
                }
                let doubles: Vec<bool> = c1
                    .iter()
                    .map(|c| c.contains("|type=4|") || c.contains("|type=5|"))
                    .collect();
                let (a, b) = (
                    arranged(d1, ordered, |r| r.to_vec()),
                    arranged(d2, ordered, |r| r.to_vec()),
                );
                if rows_alike(&a, &b, |i, p, q| {
                    doubles.get(i) == Some(&true) && double_close(p, q)
                }) {
                    return Verdict::Rounding;
                }
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
            Verdict::Wrong(out)
        }
        _ => Verdict::Wrong(format!("sluice {} / server {}", got.brief(), want.brief())),
    }
}

/// Both sides of the differential: sluice with the sharded table `t`, the server
/// directly with the reference table `r`.
pub struct Sides {
    pub sl: Wire,
    pub direct: Wire,
    pub t: String,
    pub r: String,
}

/// One statement's judged run in one protocol.
pub struct Outcome {
    pub verdict: Verdict,
    pub got: Seen,
    pub want: Seen,
}

impl Sides {
    /// Runs `sql` (`@T@` names the table) through sluice and directly in `proto` and
    /// judges the answers; when they agree and the server noted warnings, SHOW WARNINGS
    /// too; with `found_rows` (text only), `SELECT FOUND_ROWS()` after it as well. With
    /// `sub`, column definitions that differ from the reference's may equal the server's
    /// own for the statement run directly on that sub-table instead.
    pub async fn differ(
        &mut self,
        sql: &str,
        proto: &Proto,
        ordered: bool,
        found_rows: bool,
        sub: Option<&str>,
    ) -> Outcome {
        let (a, b) = (sql.replace("@T@", &self.t), sql.replace("@T@", &self.r));
        let got = run(&mut self.sl, &a, proto, &self.t).await;
        let want = run(&mut self.direct, &b, proto, &self.r).await;
        let mut verdict = judge(&got, &want, ordered);
        if let (Verdict::Wrong(_), Some(sub), Seen::Rows { .. }) = (&verdict, sub, &want) {
            if let Seen::Rows {
                columns, prepared, ..
            } = run(&mut self.direct, &sql.replace("@T@", sub), proto, sub).await
            {
                let mut like_sub = want.clone();
                if let Seen::Rows {
                    columns: c,
                    prepared: p,
                    ..
                } = &mut like_sub
                {
                    (*c, *p) = (columns, prepared);
                }
                if judge(&got, &like_sub, ordered) == Verdict::Same {
                    verdict = Verdict::SubTableDefs;
                }
            }
        }
        if verdict.rank() < Verdict::Refused(String::new()).rank()
            && matches!(want, Seen::Rows { warnings, .. } | Seen::Ok { warnings, .. } if warnings > 0)
        {
            let (x, y) = (
                rendered(&mut self.sl, "SHOW WARNINGS").await,
                rendered(&mut self.direct, "SHOW WARNINGS").await,
            );
            if x != y {
                verdict = Verdict::Wrong(format!("SHOW WARNINGS: sluice {x:?} / server {y:?}"));
            }
        }
        if verdict.rank() < Verdict::Refused(String::new()).rank()
            && found_rows
            && matches!(proto, Proto::Text)
        {
            let (x, y) = (
                rendered(&mut self.sl, "SELECT FOUND_ROWS()").await,
                rendered(&mut self.direct, "SELECT FOUND_ROWS()").await,
            );
            let refused = x
                .first()
                .and_then(|r| r.first())
                .is_some_and(|t| t.contains("code: 1235"));
            if refused {
                verdict = Verdict::Refused("then SELECT FOUND_ROWS(): refused".into());
            } else if x != y {
                verdict = Verdict::Wrong(format!("then SELECT FOUND_ROWS(): sluice {x:?} / server {y:?}"));
            }
        }
        Outcome { verdict, got, want }
    }
}
