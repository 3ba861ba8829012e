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
    /// Only the order of items equal under their collation differs inside a
    /// `GROUP_CONCAT(x ORDER BY x)` (the server's order of such ties is its sort's, not
    /// the statement's): the items are the same, and each equals the server's item at its
    /// place under x's collation (see [`OrderedConcat`]).
    Ties,
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
            Verdict::Spelling | Verdict::Ties => 3,
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

/// Case folded, Latin-1 accents dropped (`Å`, `ä` → `a`, as utf8mb4_general_ci compares),
/// supplementary characters taken as one, the dotless and dotted I taken as `i`
/// (utf8mb4_general_ci: `ı` = `İ` = `i`) and trailing
/// spaces (PAD SPACE) dropped: equal for the spellings a case-insensitive group or MIN/MAX
/// may show. (Looser than latin1_swedish_ci, where `Ä` is a letter of its own; a group the
/// server keeps apart shows up as another row count anyway.)
pub fn fold(s: &str) -> String {
    s.trim_end_matches(' ')
        .replace(['ı', 'İ'], "i")
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
            // utf8mb4_general_ci and unicode_ci weigh every supplementary character
            // alike (U+FFFD): `'😀'` = `'🙂'`.
            c if u32::from(c) > 0xFFFF => '\u{FFFD}',
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
    /// Both sessions are under `SET NAMES latin1`: text cells are read as latin1 for the
    /// representative's-spelling fold (both sides alike, so bytes that differ still differ).
    pub latin1: bool,
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
    /// own for the statement run directly on that sub-table instead. Rows that differ
    /// only in the order of ties inside the ordered GROUP_CONCAT columns `concats` are
    /// [`Verdict::Ties`].
    pub async fn differ(
        &mut self,
        sql: &str,
        proto: &Proto,
        ordered: bool,
        found_rows: bool,
        sub: Option<&str>,
        concats: &[OrderedConcat],
    ) -> Outcome {
        let (a, b) = (sql.replace("@T@", &self.t), sql.replace("@T@", &self.r));
        let mut got = run(&mut self.sl, &a, proto, &self.t).await;
        let mut want = run(&mut self.direct, &b, proto, &self.r).await;
        if self.latin1 {
            latin1_cells(&mut got);
            latin1_cells(&mut want);
        }
        let mut verdict = judge(&got, &want, ordered);
        // What the statement left on each connection is read before anything else runs
        // there (the ties' and the sub-table's checks below query the server).
        let warned = matches!(want, Seen::Rows { warnings, .. } | Seen::Ok { warnings, .. } if warnings > 0);
        let shown = if warned {
            Some((
                rendered(&mut self.sl, "SHOW WARNINGS").await,
                rendered(&mut self.direct, "SHOW WARNINGS").await,
            ))
        } else {
            None
        };
        let counted = if found_rows && matches!(proto, Proto::Text) {
            Some((
                rendered(&mut self.sl, "SELECT FOUND_ROWS()").await,
                rendered(&mut self.direct, "SELECT FOUND_ROWS()").await,
            ))
        } else {
            None
        };
        if matches!(verdict, Verdict::Wrong(_))
            && !concats.is_empty()
            && self.only_ties(&got, &want, ordered, concats).await
        {
            verdict = Verdict::Ties;
        }
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
        if let (true, Some((x, y))) = (verdict.rank() < Verdict::Refused(String::new()).rank(), shown) {
            if x != y {
                verdict = Verdict::Wrong(format!("SHOW WARNINGS: sluice {x:?} / server {y:?}"));
            }
        }
        if let (true, Some((x, y))) = (verdict.rank() < Verdict::Refused(String::new()).rank(), counted) {
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

/// A select item `GROUP_CONCAT(e ORDER BY e SEPARATOR 's')` (as the grammar writes it):
/// items equal under e's collation may come in any order (the server's is its sort's),
/// items that differ under it must come in the server's order.
#[derive(Debug, Clone)]
pub struct OrderedConcat {
    /// The item's result column.
    pub col: usize,
    /// `e`, naming the table `@T@` where it names it.
    pub expr: String,
    pub sep: Vec<u8>,
}

impl OrderedConcat {
    /// The item `item` at result column `col`, when it has exactly that form.
    pub fn parse(col: usize, item: &str) -> Option<OrderedConcat> {
        let inner = item.strip_prefix("GROUP_CONCAT(")?.strip_suffix(')')?;
        let (body, sep) = inner.rsplit_once(" SEPARATOR ")?;
        let sep = sep.strip_prefix('\'')?.strip_suffix('\'')?;
        let (expr, key) = body.split_once(" ORDER BY ")?;
        let plain = |t: &str| !t.contains(['\'', '\\']) && !t.contains("DISTINCT");
        (expr == key && plain(sep) && plain(expr)).then(|| OrderedConcat {
            col,
            expr: expr.to_string(),
            sep: sep.as_bytes().to_vec(),
        })
    }
}

/// A result's string cells read as latin1 (each byte a character), from its raw rows: a
/// latin1 session's `'É'` (0xC9) is then `É`, not U+FFFD, for the spelling fold. Other
/// cells stay as decoded.
fn latin1_cells(seen: &mut Seen) {
    let Seen::Rows {
        columns,
        prepared,
        rows,
        cells,
        ..
    } = seen
    else {
        return;
    };
    let string = |c: &String| {
        ["15", "249", "250", "251", "252", "253", "254"]
            .iter()
            .any(|t| c.contains(&format!("|type={t}|")))
    };
    let strings: Vec<bool> = columns.iter().map(string).collect();
    for (raw, row) in rows.iter().zip(cells.iter_mut()) {
        let Some(raw) = raw_cells(raw, columns, prepared.is_some()) else {
            continue;
        };
        for ((cell, bytes), _) in row.iter_mut().zip(raw).zip(&strings).filter(|(_, s)| **s) {
            if let Some(b) = bytes {
                *cell = b.iter().map(|&x| char::from(x)).collect();
            }
        }
    }
}

/// A row's cells as bytes (`None` for NULL), from its raw payload: text rows are
/// length-encoded strings; binary rows a null bitmap and values by column type
/// (`type=` and `flags=` of the rendered definitions).
fn raw_cells(row: &[u8], columns: &[String], binary: bool) -> Option<Vec<Option<Vec<u8>>>> {
    fn lenenc(b: &mut &[u8]) -> Option<usize> {
        let (n, skip) = match *b.first()? {
            x @ 0..=0xfa => (u64::from(x), 1),
            0xfc => (u64::from(u16::from_le_bytes([*b.get(1)?, *b.get(2)?])), 3),
            0xfd => (
                u64::from_le_bytes([*b.get(1)?, *b.get(2)?, *b.get(3)?, 0, 0, 0, 0, 0]),
                4,
            ),
            0xfe => (u64::from_le_bytes(b.get(1..9)?.try_into().ok()?), 9),
            _ => return None,
        };
        *b = b.get(skip..)?;
        usize::try_from(n).ok()
    }
    fn take(b: &mut &[u8], n: usize) -> Option<Vec<u8>> {
        let v = b.get(..n)?.to_vec();
        *b = &b[n..];
        Some(v)
    }
    let mut b = row;
    let mut out = Vec::with_capacity(columns.len());
    if !binary {
        for _ in columns {
            if b.first() == Some(&0xfb) {
                b = &b[1..];
                out.push(None);
            } else {
                let n = lenenc(&mut b)?;
                out.push(Some(take(&mut b, n)?));
            }
        }
        return b.is_empty().then_some(out);
    }
    b = b.get(1..)?;
    let bitmap = take(&mut b, (columns.len() + 9) / 8)?;
    for (i, c) in columns.iter().enumerate() {
        if bitmap[(i + 2) / 8] & (1 << ((i + 2) % 8)) != 0 {
            out.push(None);
            continue;
        }
        let ty: u8 = c.split("|type=").nth(1)?.split('|').next()?.parse().ok()?;
        let n = match ty {
            0x01 => 1,
            0x02 | 0x0d => 2,
            0x03 | 0x09 | 0x04 => 4,
            0x08 | 0x05 => 8,
            0x07 | 0x0a | 0x0b | 0x0c => {
                let n = usize::from(*b.first()?);
                b = &b[1..];
                n
            }
            _ => lenenc(&mut b)?,
        };
        out.push(Some(take(&mut b, n)?));
    }
    b.is_empty().then_some(out)
}

/// How the server compares one ordered GROUP_CONCAT's items: the character set the
/// client receives them in, and e's character set and collation.
struct ItemCollation {
    results: String,
    charset: String,
    collation: String,
}

impl Sides {
    /// Whether sluice's rows (`got`) are the server's (`want`) but for the order of items
    /// equal under their collation inside the columns of `concats`: every other cell
    /// equal, each such cell the same items, each equal (asked of the server) to the
    /// server's item at its place. Rows are paired in order when the statement fixes it,
    /// each with an unpaired equal server row otherwise.
    pub async fn only_ties(
        &mut self,
        got: &Seen,
        want: &Seen,
        ordered: bool,
        concats: &[OrderedConcat],
    ) -> bool {
        let (
            Seen::Rows {
                columns: c1,
                prepared: p1,
                rows: r1,
                warnings: w1,
                ..
            },
            Seen::Rows {
                columns: c2,
                prepared: p2,
                rows: r2,
                warnings: w2,
                ..
            },
        ) = (got, want)
        else {
            return false;
        };
        if c1 != c2 || p1 != p2 || w1 != w2 || r1.len() != r2.len() {
            return false;
        }
        let binary = p1.is_some();
        let decode = |rows: &[Vec<u8>]| -> Option<Vec<Vec<Option<Vec<u8>>>>> {
            rows.iter().map(|r| raw_cells(r, c1, binary)).collect()
        };
        let (Some(a), Some(b)) = (decode(r1), decode(r2)) else {
            return false;
        };
        let mut how = Vec::with_capacity(concats.len());
        for c in concats {
            match self.item_collation(c).await {
                Some(h) => how.push(h),
                None => return false,
            }
        }
        let mut used = vec![false; b.len()];
        for (i, x) in a.iter().enumerate() {
            let mut paired = false;
            for j in 0..b.len() {
                if used[j] || (ordered && i != j) {
                    continue;
                }
                if self.alike(x, &b[j], concats, &how).await {
                    used[j] = true;
                    paired = true;
                    break;
                }
            }
            if !paired {
                return false;
            }
        }
        true
    }

    /// `SELECT CHARSET(e), COLLATION(e)` on the reference table, and the session's
    /// `character_set_results` (e's own character set when NULL or binary).
    async fn item_collation(&mut self, c: &OrderedConcat) -> Option<ItemCollation> {
        let e = c.expr.replace("@T@", &self.r);
        let sql = format!(
            "SELECT CHARSET({e}), COLLATION({e}), @@character_set_results FROM {} LIMIT 1",
            self.r
        );
        let row = rendered(&mut self.direct, &sql).await.into_iter().next()?;
        let [charset, collation, results] = <[String; 3]>::try_from(row).ok()?;
        let results = if results == "NULL" || results == "binary" {
            charset.clone()
        } else {
            results
        };
        Some(ItemCollation {
            results,
            charset,
            collation,
        })
    }

    /// Two rows alike but for the order of ties in the `concats` columns.
    async fn alike(
        &mut self,
        x: &[Option<Vec<u8>>],
        y: &[Option<Vec<u8>>],
        concats: &[OrderedConcat],
        how: &[ItemCollation],
    ) -> bool {
        if x.len() != y.len() {
            return false;
        }
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            if p == q {
                continue;
            }
            let Some(k) = concats.iter().position(|c| c.col == i) else {
                return false;
            };
            let (Some(p), Some(q)) = (p, q) else {
                return false;
            };
            let split = |v: &[u8]| -> Vec<Vec<u8>> { split_bytes(v, &concats[k].sep) };
            let (ps, qs) = (split(p), split(q));
            let (mut sp, mut sq) = (ps.clone(), qs.clone());
            sp.sort();
            sq.sort();
            if sp != sq {
                return false;
            }
            for (u, v) in ps.iter().zip(&qs) {
                if u != v && !self.equal_under(&how[k], u, v).await {
                    return false;
                }
            }
        }
        true
    }

    /// Whether the server takes two items (bytes as the client received them) as equal
    /// under their collation.
    async fn equal_under(&mut self, h: &ItemCollation, a: &[u8], b: &[u8]) -> bool {
        if h.collation == "binary" {
            return false;
        }
        let conv = |v: &[u8]| {
            format!(
                "CONVERT(CONVERT(X'{}' USING {}) USING {})",
                crate::common::wire::hex(v),
                h.results,
                h.charset
            )
        };
        let sql = format!("SELECT {} COLLATE {} = {}", conv(a), h.collation, conv(b));
        rendered(&mut self.direct, &sql).await == [["1"]]
    }
}

/// `v` split at every `sep` (empty `sep`: no split).
fn split_bytes(v: &[u8], sep: &[u8]) -> Vec<Vec<u8>> {
    if sep.is_empty() {
        return vec![v.to_vec()];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + sep.len() <= v.len() {
        if &v[i..i + sep.len()] == sep {
            out.push(v[start..i].to_vec());
            i += sep.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(v[start..].to_vec());
    out
}
