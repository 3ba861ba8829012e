//! A byte lexer for the few statement shapes sluice rewrites without a tree (`split.rs`):
//! it finds token boundaries only, in one pass and without allocating, so a statement of
//! any size costs memory for what the caller keeps, not per token.
//!
//! Exact where the caller uses it: the client character set lexes like UTF-8 (every byte
//! ≥ 0x80 belongs to a character whose other bytes are ≥ 0x80 too, so none hides a quote
//! or a backslash; bytes that are not UTF-8 at all, such as a binary value in a dump made
//! without `--hex-blob`, are single bytes ≥ 0x80 to the server's lexer as to this one) and backslashes escape inside strings (the callers refuse statements
//! with a backslash under NO_BACKSLASH_ESCAPES). What the lexer cannot read exactly (an
//! executable comment, an unterminated string or comment) comes out as [`Kind::Bad`], and
//! callers then leave the statement to the full planner.

/// What a token is, as far as splitting needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An unquoted word: keyword, identifier, or a literal such as `0x1F` or `1abc`.
    Word,
    /// A backquoted identifier.
    Quoted,
    /// A single-quoted string.
    Str,
    /// A double-quoted string (an identifier under ANSI_QUOTES).
    DqStr,
    /// A decimal number: `12`, `1.5`, `.5`, `1e3`, `2.5E-3`.
    Num,
    /// `?`.
    Param,
    LParen,
    RParen,
    Comma,
    Dot,
    Semi,
    /// Any other single byte (operators).
    Op,
    /// An executable comment (`/*! … */`, `/*M! … */`), or text that does not end where
    /// it should (an unterminated string, identifier or comment).
    Bad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tok {
    pub kind: Kind,
    /// Byte offsets into the statement.
    pub start: usize,
    pub end: usize,
}

pub(crate) struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    /// The previous token's kind (a `.` after a name is a qualifier, not a number).
    last: Option<Kind>,
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

impl<'a> Lexer<'a> {
    /// Over text or bytes (a statement need not be UTF-8: see the module documentation).
    pub(crate) fn new<S: AsRef<[u8]> + ?Sized>(text: &'a S) -> Lexer<'a> {
        Lexer {
            b: text.as_ref(),
            i: 0,
            last: None,
        }
    }

    /// The next token, skipping whitespace and plain comments; None at the end.
    pub(crate) fn next_tok(&mut self) -> Option<Tok> {
        let t = self.scan()?;
        self.last = Some(t.kind);
        Some(t)
    }

    fn tok(&mut self, kind: Kind, start: usize, end: usize) -> Option<Tok> {
        self.i = end;
        Some(Tok { kind, start, end })
    }

    fn scan(&mut self) -> Option<Tok> {
        let b = self.b;
        loop {
            while self.i < b.len() && b[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
            let s = self.i;
            let c = *b.get(s)?;
            let next = b.get(s + 1).copied();
            match c {
                b'#' => self.i = line_end(b, s),
                b'-' if next == Some(b'-')
                    && b.get(s + 2)
                        .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) =>
                {
                    self.i = line_end(b, s)
                }
                b'/' if next == Some(b'*') => {
                    let exec = matches!(b.get(s + 2), Some(b'!'))
                        || (b.get(s + 2) == Some(&b'M') && b.get(s + 3) == Some(&b'!'));
                    match b[s + 2..].windows(2).position(|w| w == b"*/") {
                        Some(p) if !exec => self.i = s + 2 + p + 2,
                        Some(p) => return self.tok(Kind::Bad, s, s + 2 + p + 2),
                        None => return self.tok(Kind::Bad, s, b.len()),
                    }
                }
                b'\'' | b'"' | b'`' => {
                    let kind = match c {
                        b'\'' => Kind::Str,
                        b'"' => Kind::DqStr,
                        _ => Kind::Quoted,
                    };
                    return match quoted_end(b, s, c, c != b'`') {
                        Some(e) => self.tok(kind, s, e),
                        None => self.tok(Kind::Bad, s, b.len()),
                    };
                }
                b'?' => return self.tok(Kind::Param, s, s + 1),
                b'(' => return self.tok(Kind::LParen, s, s + 1),
                b')' => return self.tok(Kind::RParen, s, s + 1),
                b',' => return self.tok(Kind::Comma, s, s + 1),
                b';' => return self.tok(Kind::Semi, s, s + 1),
                b'.' if next.is_some_and(|d| d.is_ascii_digit())
                    && !matches!(self.last, Some(Kind::Word | Kind::Quoted)) =>
                {
                    let e = number_end(b, s);
                    return self.tok(Kind::Num, s, e);
                }
                b'.' => return self.tok(Kind::Dot, s, s + 1),
                c if c.is_ascii_digit() => {
                    let e = number_end(b, s);
                    if b.get(e).is_some_and(|&c| ident_byte(c)) {
                        // `0x1F`, `1abc`: a word (never read as a key value).
                        let mut w = e;
                        while w < b.len() && ident_byte(b[w]) {
                            w += 1;
                        }
                        return self.tok(Kind::Word, s, w);
                    }
                    return self.tok(Kind::Num, s, e);
                }
                c if ident_byte(c) => {
                    let mut e = s;
                    while e < b.len() && ident_byte(b[e]) {
                        e += 1;
                    }
                    return self.tok(Kind::Word, s, e);
                }
                _ => return self.tok(Kind::Op, s, s + 1),
            }
        }
    }
}

/// `t` is the unquoted word `w` (any case).
pub(crate) fn word_is<S: AsRef<[u8]> + ?Sized>(sql: &S, t: &Tok, w: &str) -> bool {
    t.kind == Kind::Word && sql.as_ref()[t.start..t.end].eq_ignore_ascii_case(w.as_bytes())
}

/// An identifier's name: a word, or a backquoted name with its doubled quotes undone.
/// None for other tokens, and for a name that is not UTF-8 (in a statement that is not
/// UTF-8, a name sluice cannot compare with its rules: callers then leave the statement
/// to the planner, which refuses it).
pub(crate) fn ident<S: AsRef<[u8]> + ?Sized>(sql: &S, t: &Tok) -> Option<String> {
    let b = sql.as_ref();
    match t.kind {
        Kind::Word => std::str::from_utf8(&b[t.start..t.end]).ok().map(str::to_string),
        Kind::Quoted => std::str::from_utf8(&b[t.start + 1..t.end - 1])
            .ok()
            .map(|n| n.replace("``", "`")),
        _ => None,
    }
}

/// `name` backquoted.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The end of a number starting at `s`: digits, an optional fraction, an optional
/// exponent (only when digits follow it).
fn number_end(b: &[u8], s: usize) -> usize {
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = digits(s);
    if b.get(i) == Some(&b'.') {
        i = digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            i = digits(j);
        }
    }
    i
}

/// The index after the closing quote of the quoted text at `b[s]` (a doubled quote stays
/// inside; a backslash escapes the next byte when `backslash`); None when unterminated.
fn quoted_end(b: &[u8], s: usize, q: u8, backslash: bool) -> Option<usize> {
    let mut i = s + 1;
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
        } else if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
            } else {
                return Some(i + 1);
            }
        } else {
            i += 1;
        }
    }
    None
}

fn line_end(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Kind, &str)> {
        let mut l = Lexer::new(s);
        std::iter::from_fn(|| l.next_tok())
            .map(|t| (t.kind, &s[t.start..t.end]))
            .collect()
    }

    #[test]
    fn tokens() {
        use Kind::*;
        assert_eq!(
            kinds(
                "INSERT /* c */ INTO `a``b`.t -- x\n VALUES (1.5e3, 'it''s \\' x', \"d\", ?, -.5, 0x1F) # e"
            ),
            vec![
                (Word, "INSERT"),
                (Word, "INTO"),
                (Quoted, "`a``b`"),
                (Dot, "."),
                (Word, "t"),
                (Word, "VALUES"),
                (LParen, "("),
                (Num, "1.5e3"),
                (Comma, ","),
                (Str, "'it''s \\' x'"),
                (Comma, ","),
                (DqStr, "\"d\""),
                (Comma, ","),
                (Param, "?"),
                (Comma, ","),
                (Op, "-"),
                (Num, ".5"),
                (Comma, ","),
                (Word, "0x1F"),
                (RParen, ")"),
            ]
        );
        assert_eq!(kinds("a /*!50700 x */")[1].0, Bad);
        assert_eq!(kinds("a /*M!100000 x */")[1].0, Bad);
        assert_eq!(kinds("'open")[0].0, Bad);
        assert_eq!(kinds("1--2"), vec![(Num, "1"), (Op, "-"), (Op, "-"), (Num, "2")]);
        assert_eq!(kinds("t.5"), vec![(Word, "t"), (Dot, "."), (Num, "5")]);
    }
}
