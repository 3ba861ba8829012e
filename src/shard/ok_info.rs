//! The info text of a write's OK packet (`Records: 3  Duplicates: 1  Warnings: 1` after a
//! multi-row INSERT or REPLACE, `Rows matched: 9  Changed: 9  Warnings: 0` after an
//! UPDATE), added up over the parts that wrote to several sub-tables.
//!
//! The server counts rows, so the statement's counts are the sums of its parts': every
//! row is written by exactly one part. A part of one row has no info text (the server
//! writes none for a one-row INSERT); its counts follow from its affected rows and the
//! statement's kind, as the server computes them (`Duplicates` is `records - copied`
//! under IGNORE, `deleted + updated` otherwise). The warnings are the OK packet's own.

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
