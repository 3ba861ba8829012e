//! The info text of a write's OK packet (`Records: 3  Duplicates: 1  Warnings: 1` after a
//! multi-row INSERT or REPLACE, `Rows matched: 9  Changed: 9  Warnings: 0` after an
//! UPDATE), added up over the parts that wrote to several sub-tables.
//!
//! The server counts rows, so the statement's counts are the sums of its parts': every
//! row is written by exactly one part. A part of one row has no info text (the server
//! writes none for a one-row INSERT); its counts follow from its affected rows and the
//! statement's kind, as the server computes them (`Duplicates` is `records - copied`
//! under IGNORE, `deleted + updated` otherwise). The warnings are the OK packet's own.
//!
//! Also what the statement's insert id needs of the parts' text ([`last_row_value`],
//! [`calls_last_insert_id`]): the merge is `sharded::write`'s.

use super::lex::{ident, word_is, Kind as T, Lexer, Tok};

/// Counts of the statement so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InfoSum {
    /// `Records`/`Duplicates` (INSERT, REPLACE) or `Rows matched`/`Changed` (UPDATE).
    counts: Option<(Kind, u64, u64)>,
    /// A part whose counts could not be told: no info text is given.
    unknown: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Records,
    Matched,
}

/// What a one-row part's affected rows say, by statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Insert { ignore: bool, on_duplicate: bool },
    Replace,
    Other,
}

impl WriteKind {
    /// The kind of a part's statement text (the client's head: `INSERT [IGNORE] …`).
    /// Bytes: a split INSERT's part carries the client's bytes (`crate::shard::PartSql`).
    pub fn of<S: AsRef<[u8]> + ?Sized>(sql: &S) -> WriteKind {
        let sql = sql.as_ref();
        let words: Vec<String> = sql
            .split(|c: &u8| !c.is_ascii_alphanumeric() && *c != b'_')
            .filter(|w| !w.is_empty())
            .take(4)
            .map(|w| String::from_utf8_lossy(w).to_ascii_uppercase())
            .collect();
        let first = words.first().map(String::as_str);
        match first {
            Some("INSERT") => WriteKind::Insert {
                ignore: words.iter().any(|w| w == "IGNORE"),
                // std's searches (optimized even in a debug build): parts of a bulk load are
                // about 1 MB each.
                on_duplicate: String::from_utf8_lossy(&sql.to_ascii_uppercase())
                    .contains("ON DUPLICATE KEY UPDATE"),
            },
            Some("REPLACE") => WriteKind::Replace,
            _ => WriteKind::Other,
        }
    }
}

impl InfoSum {
    /// Adds one part's answer: its info text (if any) and affected rows.
    pub fn add(&mut self, info: Option<&str>, affected: u64, kind: WriteKind) {
        let part = match info.filter(|i| !i.is_empty()) {
            Some(text) => parse(text),
            None => one_row(affected, kind),
        };
        match (part, self.counts) {
            (None, _) => self.unknown = true,
            (Some((k, a, b)), None) => self.counts = Some((k, a, b)),
            (Some((k, a, b)), Some((k0, a0, b0))) if k == k0 => {
                self.counts = Some((k, a0.saturating_add(a), b0.saturating_add(b)))
            }
            (Some(_), Some(_)) => self.unknown = true,
        }
    }

    /// The statement's info text, with the OK packet's `warnings`.
    pub fn text(&self, warnings: u16) -> Option<String> {
        if self.unknown {
            return None;
        }
        Some(match self.counts? {
            (Kind::Records, r, d) => format!("Records: {r}  Duplicates: {d}  Warnings: {warnings}"),
            (Kind::Matched, m, c) => format!("Rows matched: {m}  Changed: {c}  Warnings: {warnings}"),
        })
    }
}

/// The counts of an info text the server wrote.
fn parse(text: &str) -> Option<(Kind, u64, u64)> {
    let nums: Vec<u64> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    let kind = if text.starts_with("Records:") {
        Kind::Records
    } else if text.starts_with("Rows matched:") {
        Kind::Matched
    } else {
        return None;
    };
    match nums.as_slice() {
        [a, b, _warnings] => Some((kind, *a, *b)),
        _ => None,
    }
}

/// The counts of a one-row part (no info text), from its affected rows: a row written
/// counts 1 (2 when REPLACE deleted or ON DUPLICATE KEY UPDATE changed a row, 0 when it
/// changed nothing).
fn one_row(affected: u64, kind: WriteKind) -> Option<(Kind, u64, u64)> {
    let duplicates = match (kind, affected) {
        (
            WriteKind::Insert {
                ignore: true,
                on_duplicate: true,
            },
            _,
        ) => return None,
        (WriteKind::Insert { ignore: true, .. }, 0) => 1,
        (WriteKind::Insert { ignore: true, .. }, 1) => 0,
        (
            WriteKind::Insert {
                on_duplicate: true, ..
            },
            0 | 1,
        ) => 0,
        (
            WriteKind::Insert {
                on_duplicate: true, ..
            },
            2,
        ) => 1,
        (WriteKind::Insert { .. }, 1) => 0,
        (WriteKind::Replace, 1) => 0,
        (WriteKind::Replace, 2) => 1,
        _ => return None,
    };
    Some((Kind::Records, 1, duplicates))
}

/// Whether a part's text calls `LAST_INSERT_ID(expr)` (with an argument, which sets the
/// value the server reports and keeps: the last call it evaluated, in row order). A cheap
/// search first (std's, optimized even in a debug build: parts of a bulk load are about
/// 1 MB each), then the tokens, so a string or comment naming it does not count.
pub fn calls_last_insert_id<S: AsRef<[u8]> + ?Sized>(sql: &S) -> bool {
    let sql = sql.as_ref();
    if !String::from_utf8_lossy(&sql.to_ascii_lowercase()).contains("last_insert_id") {
        return false;
    }
    let mut lx = Lexer::new(sql);
    let (mut a, mut b) = (None::<Tok>, None::<Tok>);
    while let Some(c) = lx.next_tok() {
        if let (Some(x), Some(y)) = (a, b) {
            if word_is(sql, &x, "LAST_INSERT_ID") && y.kind == T::LParen && c.kind != T::RParen {
                return true;
            }
        }
        (a, b) = (b, Some(c));
    }
    false
}

/// A value of the last row of an `INSERT … VALUES` part, as far as its AUTO_INCREMENT
/// column needs: the server's OK packet reports that column's value in the statement's
/// last row when it wrote a row and generated none (a duplicate skipped by IGNORE
/// included), which a part that wrote nothing does not report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowValue {
    /// An integer literal, or a string literal holding only one (`'12'`).
    Int(i128),
    /// The part's `?` number `n` (0-based, in the part's text).
    Param(usize),
    /// `NULL`, `DEFAULT`, or the column not given: the server generates the value.
    Generated,
    /// Anything else (an expression, a decimal): its stored value is not read here.
    Other,
}

/// The table an `INSERT … VALUES` part names (schema if qualified, name), and the value its
/// last row gives `column` (matched without case, as the server matches column names).
/// None when the part is not of that shape (`INSERT … SELECT`, `… SET`, no column list).
pub fn last_row_value<S: AsRef<[u8]> + ?Sized>(
    sql: &S,
    column: &str,
) -> Option<((Option<String>, String), RowValue)> {
    let sql = sql.as_ref();
    let mut lx = Lexer::new(sql);
    let mut t = lx.next_tok()?;
    const HEAD: [&str; 7] = [
        "INSERT",
        "REPLACE",
        "LOW_PRIORITY",
        "DELAYED",
        "HIGH_PRIORITY",
        "IGNORE",
        "INTO",
    ];
    while HEAD.iter().any(|w| word_is(sql, &t, w)) {
        t = lx.next_tok()?;
    }
    let mut name = ident(sql, &t)?;
    let mut schema = None;
    t = lx.next_tok()?;
    if t.kind == T::Dot {
        schema = Some(name);
        name = ident(sql, &lx.next_tok()?)?;
        t = lx.next_tok()?;
    }
    if word_is(sql, &t, "PARTITION") {
        skip_group(&mut lx)?;
        t = lx.next_tok()?;
    }
    let mut at = None;
    if t.kind == T::LParen {
        let mut i = 0;
        loop {
            let c = lx.next_tok()?;
            if ident(sql, &c).is_some_and(|n| n.eq_ignore_ascii_case(column)) {
                at = Some(i);
            }
            match lx.next_tok()?.kind {
                T::Comma => i += 1,
                T::RParen => break,
                _ => return None,
            }
        }
        t = lx.next_tok()?;
    } else {
        // No column list: the columns are the table's, which this text does not say.
        return None;
    }
    if !(word_is(sql, &t, "VALUES") || word_is(sql, &t, "VALUE")) {
        return None;
    }
    let mut params = 0usize;
    let mut last;
    loop {
        if lx.next_tok()?.kind != T::LParen {
            return None;
        }
        // The row's values, the one at `at` kept (its tokens while at depth 1).
        let (mut i, mut depth, mut toks): (usize, usize, Vec<Tok>) = (0, 1, Vec::new());
        let mut value = RowValue::Generated;
        loop {
            let c = lx.next_tok()?;
            match c.kind {
                T::Bad => return None,
                T::LParen => depth += 1,
                T::RParen | T::Comma if depth == 1 => {
                    if Some(i) == at {
                        let own = toks.iter().filter(|t| t.kind == T::Param).count();
                        value = classify(sql, &toks, params - own);
                    }
                    if c.kind == T::RParen {
                        break;
                    }
                    i += 1;
                    toks.clear();
                    continue;
                }
                T::RParen => depth -= 1,
                _ => {}
            }
            if Some(i) == at {
                toks.push(c);
            }
            if c.kind == T::Param {
                params += 1;
            }
        }
        last = value;
        match lx.next_tok() {
            Some(c) if c.kind == T::Comma => {}
            _ => break,
        }
    }
    Some(((schema, name), last))
}

/// Skips a parenthesized group (the next token opens it).
fn skip_group(lx: &mut Lexer<'_>) -> Option<()> {
    if lx.next_tok()?.kind != T::LParen {
        return None;
    }
    let mut depth = 1;
    while depth > 0 {
        match lx.next_tok()?.kind {
            T::LParen => depth += 1,
            T::RParen => depth -= 1,
            T::Bad => return None,
            _ => {}
        }
    }
    Some(())
}

/// One value's tokens; `params`: the `?` before them.
fn classify(sql: &[u8], toks: &[Tok], params: usize) -> RowValue {
    let text = |t: &Tok| &sql[t.start..t.end];
    let int = |b: &[u8], neg: bool| -> RowValue {
        if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
            return RowValue::Other;
        }
        // Saturating: the column's range clips far sooner.
        let v = b.iter().fold(0i128, |v, d| {
            v.saturating_mul(10).saturating_add(i128::from(d - b'0'))
        });
        RowValue::Int(if neg { -v } else { v })
    };
    match toks {
        [t] if t.kind == T::Num => int(text(t), false),
        [s, t] if s.kind == T::Op && t.kind == T::Num && matches!(text(s), b"-" | b"+") => {
            int(text(t), text(s) == b"-")
        }
        [t] if t.kind == T::Str => {
            let b = &text(t)[1..t.end - t.start - 1];
            match b.split_first() {
                Some((b'-', rest)) => int(rest, true),
                Some((b'+', rest)) => int(rest, false),
                _ => int(b, false),
            }
        }
        [t] if t.kind == T::Param => RowValue::Param(params),
        [t] if word_is(sql, t, "NULL") || word_is(sql, t, "DEFAULT") => RowValue::Generated,
        _ => RowValue::Other,
    }
}

/// The value an integer column of `column_type` (`int(11)`, `bigint(20) unsigned`, as
/// `information_schema.COLUMNS` shows it) stores for `v`, clipped to its range as the
/// server clips it under IGNORE, and as the OK packet carries it (a negative value as its
/// 64-bit two's complement). None for 0 (the server generates a value for it) and for
/// columns that are not integers.
pub fn stored_insert_id(v: i128, column_type: &str) -> Option<u64> {
    let t = column_type.to_ascii_lowercase();
    let bits = [
        ("tinyint", 8),
        ("smallint", 16),
        ("mediumint", 24),
        ("bigint", 64),
        ("int", 32),
    ]
    .iter()
    .find(|(n, _)| t.starts_with(n))
    .map(|&(_, b)| b)?;
    let (lo, hi) = if t.contains("unsigned") {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    };
    let v = v.clamp(lo, hi);
    let carried = if v < 0 { v as i64 as u64 } else { v as u64 };
    (v != 0).then_some(carried)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IGNORE: WriteKind = WriteKind::Insert {
        ignore: true,
        on_duplicate: false,
    };

    #[test]
    fn parts_with_info_add_up() {
        let mut s = InfoSum::default();
        s.add(Some("Records: 2  Duplicates: 1  Warnings: 1"), 1, IGNORE);
        s.add(Some("Records: 3  Duplicates: 0  Warnings: 0"), 3, IGNORE);
        assert_eq!(
            s.text(1).as_deref(),
            Some("Records: 5  Duplicates: 1  Warnings: 1")
        );
        let mut u = InfoSum::default();
        u.add(
            Some("Rows matched: 4  Changed: 3  Warnings: 0"),
            3,
            WriteKind::Other,
        );
        u.add(
            Some("Rows matched: 5  Changed: 5  Warnings: 0"),
            5,
            WriteKind::Other,
        );
        assert_eq!(
            u.text(0).as_deref(),
            Some("Rows matched: 9  Changed: 8  Warnings: 0")
        );
    }

    #[test]
    fn one_row_parts_count_from_their_affected_rows() {
        let mut s = InfoSum::default();
        s.add(None, 0, IGNORE);
        s.add(Some("Records: 2  Duplicates: 0  Warnings: 0"), 2, IGNORE);
        assert_eq!(
            s.text(1).as_deref(),
            Some("Records: 3  Duplicates: 1  Warnings: 1")
        );
        let mut r = InfoSum::default();
        r.add(None, 2, WriteKind::Replace);
        r.add(None, 1, WriteKind::Replace);
        assert_eq!(
            r.text(0).as_deref(),
            Some("Records: 2  Duplicates: 1  Warnings: 0")
        );
        // DELETE: no info anywhere.
        let mut d = InfoSum::default();
        d.add(None, 3, WriteKind::Other);
        assert_eq!(d.text(0), None);
        // IGNORE with ON DUPLICATE KEY UPDATE: not told apart, so no text.
        let mut x = InfoSum::default();
        let both = WriteKind::Insert {
            ignore: true,
            on_duplicate: true,
        };
        x.add(None, 0, both);
        assert_eq!(x.text(0), None);
    }

    #[test]
    fn last_rows_give_their_auto_increment_value() {
        let v = |sql: &str| last_row_value(sql, "id").map(|(_, v)| v);
        assert_eq!(
            last_row_value(
                "INSERT IGNORE INTO `d`.t_1 (`ID`, tid) VALUES (1, 1), (-7, 5)",
                "id"
            ),
            Some(((Some("d".into()), "t_1".into()), RowValue::Int(-7)))
        );
        assert_eq!(
            v("INSERT INTO t_1 (tid, id) VALUES (1, (2)), (5, '13')"),
            Some(RowValue::Int(13))
        );
        assert_eq!(
            v("INSERT INTO t_1 (tid, id) VALUES (?, ?), (?, ?) ON DUPLICATE KEY UPDATE x = ?"),
            Some(RowValue::Param(3))
        );
        assert_eq!(
            v("INSERT INTO t_1 (tid, id) VALUES (1, NULL)"),
            Some(RowValue::Generated)
        );
        assert_eq!(
            v("INSERT INTO t_1 (tid, u) VALUES (1, 2)"),
            Some(RowValue::Generated)
        );
        assert_eq!(
            v("INSERT INTO t_1 (tid, id) VALUES (1, 2.5)"),
            Some(RowValue::Other)
        );
        assert_eq!(
            v("INSERT INTO t_1 (tid, id) VALUES (1, 1 + 1)"),
            Some(RowValue::Other)
        );
        assert_eq!(
            v("INSERT INTO t_1 PARTITION (p0) (id) VALUE (+4)"),
            Some(RowValue::Int(4))
        );
        assert_eq!(v("INSERT INTO t_1 VALUES (1, 2)"), None);
        assert_eq!(v("INSERT INTO t_1 (id) SELECT 1"), None);
    }

    #[test]
    fn stored_ids_clip_to_the_column() {
        assert_eq!(stored_insert_id(9_999_999_999, "int(11)"), Some(2_147_483_647));
        assert_eq!(stored_insert_id(-5, "int(11)"), Some(18_446_744_073_709_551_611));
        assert_eq!(stored_insert_id(-5, "int(10) unsigned"), None);
        assert_eq!(stored_insert_id(300, "tinyint(3) unsigned"), Some(255));
        assert_eq!(stored_insert_id(i128::MAX, "bigint(20) unsigned"), Some(u64::MAX));
        assert_eq!(stored_insert_id(12, "double"), None);
    }

    #[test]
    fn last_insert_id_calls_are_tokens() {
        assert!(calls_last_insert_id(
            "INSERT INTO t_1 (a) VALUES (last_insert_id (5))"
        ));
        assert!(!calls_last_insert_id(
            "INSERT INTO t_1 (a) VALUES (LAST_INSERT_ID())"
        ));
        assert!(!calls_last_insert_id(
            "INSERT INTO t_1 (a) VALUES ('LAST_INSERT_ID(5)')"
        ));
    }

    #[test]
    fn kinds_are_read_from_the_head() {
        assert_eq!(WriteKind::of("INSERT IGNORE INTO t_1 VALUES (1)"), IGNORE);
        assert_eq!(
            WriteKind::of("insert into t_1 values (1) on duplicate key update c = 2"),
            WriteKind::Insert {
                ignore: false,
                on_duplicate: true
            }
        );
        assert_eq!(WriteKind::of("REPLACE INTO t_0 VALUES (1)"), WriteKind::Replace);
        assert_eq!(WriteKind::of("UPDATE t_0 SET c = 1"), WriteKind::Other);
    }
}
