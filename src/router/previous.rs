//! `ROW_COUNT()` and `FOUND_ROWS()` answer about the previous statement of
//! the connection. With multiplexing, the connection a session borrows may
//! have run another session's statement last; the session then knows the
//! right values itself (from its previous statement's answer), and the
//! statement's calls are replaced by them:
//! `ROW_COUNT()` becomes `COALESCE(<n>,ROW_COUNT())`, which has the same type,
//! length and flags as the call (BIGINT, 21, NOT NULL) and the session's
//! value; a select-list item that had no alias gets the name MariaDB would
//! have given it (its text as written), so result metadata is unchanged.

use super::lexer::{LexOptions, Token, Tokens};

/// The session's values for its previous statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Previous {
    pub row_count: i64,
    pub found_rows: u64,
}

impl Default for Previous {
    /// A new connection: no statement yet. (MariaDB's own FOUND_ROWS() is
    /// then whatever the thread it reuses from its cache last had.)
    fn default() -> Self {
        Previous {
            row_count: 0,
            found_rows: 0,
        }
    }
}

/// Words that end a select list at depth 0.
const ENDS_SELECT_LIST: [&[u8]; 12] = [
    b"FROM",
    b"INTO",
    b"WHERE",
    b"GROUP",
    b"HAVING",
    b"ORDER",
    b"LIMIT",
    b"UNION",
    b"FOR",
    b"LOCK",
    b"WINDOW",
    b"PROCEDURE",
];

struct Item {
    start: usize,
    end: usize,
    replaced: bool,
    /// Kinds of its last two tokens, for alias detection.
    last: Option<Kind>,
    before_last: Option<Kind>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Name,
    As,
    Close,
    Value,
    Other,
}

/// `sql` with its ROW_COUNT()/FOUND_ROWS() calls replaced by `prev`'s values,
/// or None when it has none.
pub fn rewrite(sql: &[u8], prev: Previous, opts: LexOptions) -> Option<Vec<u8>> {
    let base = sql.as_ptr() as usize;
    let start_of = |t: &[u8]| t.as_ptr() as usize - base;
    let toks: Vec<(Token<'_>, usize, usize)> = {
        let mut lx = Tokens::with_options(sql, opts);
        let mut v = Vec::new();
        let mut last_end = 0usize;
        while let Some(t) = lx.next() {
            let end = lx.offset();
            let start = match t {
                Token::Word(w) | Token::Quoted(w) | Token::Str(w) | Token::Number(w) => start_of(w),
                // One-byte tokens end where they start + 1.
                Token::LParen
                | Token::RParen
                | Token::Comma
                | Token::Dot
                | Token::Eq
                | Token::Semi
                | Token::Op(_) => end.saturating_sub(1),
                _ => last_end,
            };
            if matches!(t, Token::Unterminated) {
                return None;
            }
            v.push((t, start, end));
            last_end = end;
        }
        v
    };
    let is_call = |i: usize, name: &[u8]| {
        matches!(toks.get(i), Some((Token::Word(w), _, _)) if w.eq_ignore_ascii_case(name))
            && matches!(toks.get(i + 1), Some((Token::LParen, _, _)))
            && matches!(toks.get(i + 2), Some((Token::RParen, _, _)))
    };
    let mut replacements: Vec<(usize, usize, String)> = Vec::new();
    let mut aliases: Vec<(usize, String)> = Vec::new();
    let top_select =
        matches!(toks.first(), Some((Token::Word(w), _, _)) if w.eq_ignore_ascii_case(b"SELECT"));
    let mut in_list = top_select;
    let mut depth = 0usize;
    let mut item: Option<Item> = None;
    let close_item = |item: &mut Option<Item>, aliases: &mut Vec<(usize, String)>| {
        if let Some(it) = item.take() {
            let aliased = matches!(
                (it.before_last, it.last),
                (
                    Some(Kind::As | Kind::Close | Kind::Name | Kind::Value),
                    Some(Kind::Name)
                )
            );
            if it.replaced && !aliased {
                let text = String::from_utf8_lossy(&sql[it.start..it.end]).replace('`', "``");
                aliases.push((it.end, format!(" AS `{text}`")));
            }
        }
    };
    let mut i = 0;
    while i < toks.len() {
        let (t, start, end) = toks[i];
        if i == 0 && top_select {
            i += 1;
            continue;
        }
        let call = if is_call(i, b"ROW_COUNT") {
            Some(prev.row_count.to_string())
        } else if is_call(i, b"FOUND_ROWS") {
            Some(prev.found_rows.to_string())
        } else {
            None
        };
        if in_list && depth == 0 {
            match t {
                Token::Comma => {
                    close_item(&mut item, &mut aliases);
                    i += 1;
                    continue;
                }
                Token::Semi => {
                    close_item(&mut item, &mut aliases);
                    in_list = false;
                }
                Token::Word(w) if ENDS_SELECT_LIST.iter().any(|e| w.eq_ignore_ascii_case(e)) => {
                    close_item(&mut item, &mut aliases);
                    in_list = false;
                }
                _ => {}
            }
        }
        if let Some(value) = &call {
            let name = match t {
                Token::Word(w) => String::from_utf8_lossy(w).into_owned(),
                _ => String::new(),
            };
            let call_end = toks[i + 2].2;
            replacements.push((start, call_end, format!("COALESCE({value},{name}())")));
        }
        if in_list {
            let it = item.get_or_insert(Item {
                start,
                end,
                replaced: false,
                last: None,
                before_last: None,
            });
            let (span_end, kind, advance) = match call {
                Some(_) => (toks[i + 2].2, Kind::Close, 3),
                None => {
                    let kind = match t {
                        Token::Word(w) if w.eq_ignore_ascii_case(b"AS") => Kind::As,
                        Token::Word(_) | Token::Quoted(_) => Kind::Name,
                        Token::RParen => Kind::Close,
                        Token::Number(_) | Token::Str(_) => Kind::Value,
                        _ => Kind::Other,
                    };
                    (end, kind, 1)
                }
            };
            it.end = span_end;
            it.replaced |= call.is_some();
            it.before_last = it.last;
            it.last = Some(kind);
            if call.is_none() {
                match t {
                    Token::LParen => depth += 1,
                    Token::RParen => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            i += advance;
            continue;
        }
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += if call.is_some() { 3 } else { 1 };
    }
    if in_list {
        close_item(&mut item, &mut aliases);
    }
    if replacements.is_empty() {
        return None;
    }
    let mut edits: Vec<(usize, usize, String)> = replacements;
    edits.extend(aliases.into_iter().map(|(at, s)| (at, at, s)));
    // By position; an insertion before a replacement starting at the same place.
    edits.sort_by_key(|(s, e, _)| (*s, *e != *s));
    let mut out = Vec::with_capacity(sql.len() + 64);
    let mut at = 0;
    for (s, e, text) in edits {
        if s < at {
            continue;
        }
        out.extend_from_slice(&sql[at..s]);
        out.extend_from_slice(text.as_bytes());
        at = e;
    }
    out.extend_from_slice(&sql[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(sql: &str) -> String {
        let prev = Previous {
            row_count: 2,
            found_rows: 7,
        };
        rewrite(sql.as_bytes(), prev, LexOptions::default())
            .map(|v| String::from_utf8(v).expect("utf8"))
            .unwrap_or_else(|| "(none)".to_string())
    }

    #[test]
    fn calls_become_values_named_as_the_server_names_them() {
        assert_eq!(
            rw("SELECT ROW_COUNT()"),
            "SELECT COALESCE(2,ROW_COUNT()) AS `ROW_COUNT()`"
        );
        assert_eq!(rw("select row_count() rc"), "select COALESCE(2,row_count()) rc");
        assert_eq!(
            rw("SELECT ROW_COUNT() AS n"),
            "SELECT COALESCE(2,ROW_COUNT()) AS n"
        );
        assert_eq!(
            rw("SELECT FOUND_ROWS(), ROW_COUNT() + 1 FROM dual"),
            "SELECT COALESCE(7,FOUND_ROWS()) AS `FOUND_ROWS()`, COALESCE(2,ROW_COUNT()) + 1 AS `ROW_COUNT() + 1` FROM dual"
        );
        assert_eq!(
            rw("SELECT LAST_INSERT_ID(), ROW_COUNT()"),
            "SELECT LAST_INSERT_ID(), COALESCE(2,ROW_COUNT()) AS `ROW_COUNT()`"
        );
        assert_eq!(
            rw("INSERT INTO t VALUES (ROW_COUNT())"),
            "INSERT INTO t VALUES (COALESCE(2,ROW_COUNT()))"
        );
        assert_eq!(rw("SELECT 'ROW_COUNT()'"), "(none)");
        assert_eq!(rw("SELECT 1"), "(none)");
        assert_eq!(
            rw("SELECT * FROM t WHERE n = ROW_COUNT()"),
            "SELECT * FROM t WHERE n = COALESCE(2,ROW_COUNT())"
        );
    }
}
