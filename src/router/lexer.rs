//! A cheap lexer for the statements sluice must recognize on the hot path,
//! without a full parse: it skips whitespace and comments and reads words.

/// Skip whitespace and comments (`-- `, `#`, `/* */`). Executable comments
/// (`/*!...*/`, `/*M!...*/`) are content, so they are not skipped.
pub fn skip_space_and_comments(mut s: &[u8]) -> &[u8] {
    loop {
        let before = s.len();
        while let Some((c, rest)) = s.split_first() {
            if c.is_ascii_whitespace() {
                s = rest;
            } else {
                break;
            }
        }
        if s.starts_with(b"/*") && !s.starts_with(b"/*!") && !s.starts_with(b"/*M!") {
            match find(s, b"*/") {
                Some(end) => s = &s[end + 2..],
                None => return &[],
            }
        } else if s.starts_with(b"#")
            || s.starts_with(b"-- ")
            || s == b"--"
            || s.starts_with(b"--\t")
            || s.starts_with(b"--\n")
        {
            match s.iter().position(|&c| c == b'\n') {
                Some(nl) => s = &s[nl + 1..],
                None => return &[],
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Where `sql` may read differently in a double-byte client character set
/// (sjis, cp932, gbk, big5): there the second byte of a character may be
/// `\` (0x5C) or a backtick (0x60), which this lexer, reading bytes, takes
/// for an escape or the end of an identifier (`'表'` is `27 95 5C 27` in
/// Shift_JIS). Returns the text as such a character set reads it, same
/// length, with those second bytes replaced by `x`, when it differs; `None`
/// when no byte `0x81..=0xFE` is followed by one of them (every other
/// second byte is read alike both ways: quotes, `#`, `-`, `/`, `*` are
/// below 0x40). UTF-8 text can match too (`é` before a backslash): the
/// caller treats the two readings as it treats any two that may differ.
pub fn multibyte_view(sql: &[u8]) -> Option<Vec<u8>> {
    // Most statements are ASCII, which `is_ascii` checks a word at a time:
    // the byte loop below cost ~330 instructions per point select.
    if sql.is_ascii() {
        return None;
    }
    let mut view: Option<Vec<u8>> = None;
    let mut i = 0;
    while i + 1 < sql.len() {
        let b = sql[i];
        if !(0x81..=0xFE).contains(&b) {
            i += 1;
            continue;
        }
        let next = sql[i + 1];
        if next == b'\\' || next == b'`' {
            view.get_or_insert_with(|| sql.to_vec())[i + 1] = b'x';
        }
        // A lead byte and its second byte: one character.
        i += if next >= 0x40 { 2 } else { 1 };
    }
    view
}

/// The first keyword, upper-cased, and the rest after it.
pub fn first_word(sql: &[u8]) -> (String, &[u8]) {
    let s = skip_space_and_comments(sql);
    let end = s
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(s.len());
    (String::from_utf8_lossy(&s[..end]).to_ascii_uppercase(), &s[end..])
}

/// How the server reads the text: its `sql_mode` flags `ANSI_QUOTES` (a
/// double-quoted text is an identifier) and `NO_BACKSLASH_ESCAPES` (a
/// backslash in a string is an ordinary character), and its version, which
/// decides which versioned comments (`/*!NNNNN ... */`) are code. The default
/// is MySQL's quoting and a MariaDB 10.11 of unknown patch level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LexOptions {
    pub ansi_quotes: bool,
    pub no_backslash_escapes: bool,
    /// The server's version as `MYSQL_VERSION_ID` spells it (10.11.6 is
    /// 101106). 0: a MariaDB 10.11 whose patch level is unknown; a comment
    /// versioned 101101..=101199 is then undecided (see
    /// [`Tokens::version_doubt`]).
    pub server_version: u32,
}

/// The lowest and highest version id of a MariaDB 10.11 (the default when the
/// server's version is not known).
pub const DEFAULT_VERSION_RANGE: (u32, u32) = (101101, 101199);

/// What MariaDB's lexer does with a versioned comment `/*!NNNNN` (or
/// `/*M!NNNNN` when `mariadb_only`) on a server of version id `server`: its
/// body is code when NNNNN <= the server's version, except that plain `/*!`
/// comments in MySQL's 5.7+ range (50700..=99999) are always skipped.
pub fn versioned_comment_runs(version: u32, mariadb_only: bool, server: u32) -> bool {
    version <= server && (mariadb_only || !(50700..=99999).contains(&version))
}

/// One token of SQL text. Slices borrow the input; quoted tokens keep their
/// delimiters (and their escapes), so nothing is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    /// A bare word: keyword or identifier (`[A-Za-z0-9_$]` and any byte >= 0x80).
    Word(&'a [u8]),
    /// A quoted identifier with its delimiters: `` `a``b` `` (or `"a"` under `ANSI_QUOTES`).
    Quoted(&'a [u8]),
    /// A string literal with its delimiters: `'it''s'`, `"a\"b"`.
    Str(&'a [u8]),
    /// An unsigned number: `42`, `1.5`, `2.5e-3`.
    Number(&'a [u8]),
    /// `@name`, `@'name'`, `` @`name` ``: the text after `@`.
    UserVar(&'a [u8]),
    /// `@@name`, `@@global.name`: the text after `@@`.
    SysVar(&'a [u8]),
    /// `:=`
    Assign,
    Semi,
    LParen,
    RParen,
    Comma,
    Dot,
    Eq,
    /// Any other byte of punctuation or operator.
    Op(u8),
    /// A string, quoted identifier or comment that never ends; the last token.
    Unterminated,
}

/// A tokenizer over SQL bytes (any encoding, invalid UTF-8 included). It skips
/// whitespace and comments, treats the content of executable comments
/// (`/*! ... */`, `/*!50100 ... */`, `/*M! ... */`) as code, and remembers whether
/// a comment named the master (`/*master*/`, `/* sluice:master */`).
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    s: &'a [u8],
    pos: usize,
    opts: LexOptions,
    in_exec: bool,
    master_hint: bool,
    /// A versioned comment whose fate depends on the patch level of an
    /// unknown 10.11 (`server_version` 0); read as code here.
    version_doubt: bool,
    done: bool,
    /// End of the last word, string or quoted identifier: an `@` right there
    /// separates a user from a host (`'u'@'h'`), it starts no variable.
    name_end: usize,
}

impl<'a> Tokens<'a> {
    pub fn new(s: &'a [u8]) -> Tokens<'a> {
        Tokens::with_options(s, LexOptions::default())
    }

    pub fn with_options(s: &'a [u8], opts: LexOptions) -> Tokens<'a> {
        Tokens {
            s,
            pos: 0,
            opts,
            in_exec: false,
            master_hint: false,
            version_doubt: false,
            done: false,
            name_end: usize::MAX,
        }
    }

    /// Whether a comment seen so far contains the word `master` (any case).
    pub fn master_hint(&self) -> bool {
        self.master_hint
    }

    /// Whether a versioned comment was met that a MariaDB 10.11 runs or skips
    /// depending on its patch level (only when `server_version` is 0): the
    /// caller should read the text both ways (see `classify_with`).
    pub fn version_doubt(&self) -> bool {
        self.version_doubt
    }

    /// Whether the next token is inside an executable comment.
    pub fn in_exec(&self) -> bool {
        self.in_exec
    }

    /// Byte offset of the next unread byte.
    pub fn offset(&self) -> usize {
        self.pos
    }

    fn at(&self, i: usize) -> u8 {
        self.s.get(i).copied().unwrap_or(0)
    }

    /// Skip whitespace and comments; false if a comment never ends.
    fn skip_trivia(&mut self) -> bool {
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return true;
            };
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'#' => self.skip_line(),
                b'-' if self.at(self.pos + 1) == b'-'
                    && (self.pos + 2 >= self.s.len() || self.at(self.pos + 2) <= b' ') =>
                {
                    self.skip_line()
                }
                b'/' if self.at(self.pos + 1) == b'*' => {
                    let exec = if self.at(self.pos + 2) == b'!' {
                        Some(3)
                    } else if self.at(self.pos + 2) == b'M' && self.at(self.pos + 3) == b'!' {
                        Some(4)
                    } else {
                        None
                    };
                    if let Some(skip) = exec {
                        if self.executable_comment(skip) {
                            continue;
                        }
                        return false;
                    }
                    let body_start = self.pos + 2;
                    match find(&self.s[body_start.min(self.s.len())..], b"*/") {
                        Some(n) => {
                            if mentions_master(&self.s[body_start..body_start + n]) {
                                self.master_hint = true;
                            }
                            self.pos = body_start + n + 2;
                        }
                        None => return false,
                    }
                }
                b'*' if self.in_exec && self.at(self.pos + 1) == b'/' => {
                    self.in_exec = false;
                    self.pos += 2;
                }
                _ => return true,
            }
        }
    }

    /// At `/*!` (`skip` 3) or `/*M!` (4): MariaDB's rule (sql_lex.cc). Five
    /// digits, or six when a sixth follows, are a version: the body is code
    /// when [`versioned_comment_runs`], else the comment is skipped up to its
    /// `*/` (one nested `/* */` allowed, quotes not looked at). Fewer than
    /// five digits are no version: they and the rest are code. False if a
    /// skipped comment never ends.
    fn executable_comment(&mut self, skip: usize) -> bool {
        let start = self.pos + skip;
        let digits = self.s[start.min(self.s.len())..]
            .iter()
            .take(6)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits < 5 {
            self.pos = start;
            self.in_exec = true;
            return true;
        }
        let version = self.s[start..start + digits]
            .iter()
            .fold(0u32, |v, d| v * 10 + u32::from(d - b'0'));
        let mariadb_only = skip == 4;
        let runs = if self.opts.server_version != 0 {
            versioned_comment_runs(version, mariadb_only, self.opts.server_version)
        } else {
            let (low, high) = DEFAULT_VERSION_RANGE;
            let at_low = versioned_comment_runs(version, mariadb_only, low);
            if at_low != versioned_comment_runs(version, mariadb_only, high) {
                self.version_doubt = true;
            }
            at_low
        };
        if runs {
            self.pos = start + digits;
            self.in_exec = true;
            return true;
        }
        // Skipped: up to the first `*/`, one nested comment allowed.
        let mut i = start + digits;
        let mut nested = false;
        while i < self.s.len() {
            if !nested && self.at(i) == b'/' && self.at(i + 1) == b'*' {
                nested = true;
                i += 2;
            } else if self.at(i) == b'*' && self.at(i + 1) == b'/' {
                i += 2;
                if !nested {
                    self.pos = i;
                    return true;
                }
                nested = false;
            } else {
                i += 1;
            }
        }
        self.pos = self.s.len();
        false
    }

    fn skip_line(&mut self) {
        let start = self.pos;
        let end = match self.s[start..].iter().position(|&c| c == b'\n') {
            Some(n) => start + n + 1,
            None => self.s.len(),
        };
        if mentions_master(&self.s[start..end]) {
            self.master_hint = true;
        }
        self.pos = end;
    }

    /// Past a quoted run starting at `self.pos` (on the opening quote `q`);
    /// false if it never ends. Doubled quotes stand for one; a backslash
    /// escapes the next byte when `escapes`.
    fn skip_quoted(&mut self, q: u8, escapes: bool) -> bool {
        let mut i = self.pos + 1;
        while let Some(&c) = self.s.get(i) {
            if c == b'\\' && escapes {
                i += 2;
            } else if c == q {
                if self.at(i + 1) == q && i + 1 < self.s.len() {
                    i += 2;
                } else {
                    self.pos = i + 1;
                    return true;
                }
            } else {
                i += 1;
            }
        }
        self.pos = self.s.len();
        false
    }

    fn quoted(&mut self, q: u8, ident: bool) -> Token<'a> {
        let start = self.pos;
        let escapes = !ident && !self.opts.no_backslash_escapes;
        if !self.skip_quoted(q, escapes) {
            self.done = true;
            return Token::Unterminated;
        }
        self.name_end = self.pos;
        let raw = &self.s[start..self.pos];
        if ident {
            Token::Quoted(raw)
        } else {
            Token::Str(raw)
        }
    }

    fn is_ident_quote(&self, c: u8) -> bool {
        c == b'`' || (c == b'"' && self.opts.ansi_quotes)
    }

    fn word_end(&self, from: usize) -> usize {
        let mut i = from;
        while self.s.get(i).is_some_and(|&c| is_ident_byte(c)) {
            i += 1;
        }
        i
    }
}

/// Bytes of an unquoted identifier.
pub fn is_ident_byte(c: u8) -> bool {
    IDENT[c as usize]
}

static IDENT: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
        i += 1;
    }
    t
};

/// Whether a comment's text contains the word `master` (ASCII letters and
/// digits around it make it part of another word; `_`, `:` etc. do not).
fn mentions_master(body: &[u8]) -> bool {
    body.windows(6).enumerate().any(|(i, w)| {
        w.eq_ignore_ascii_case(b"master")
            && (i == 0 || !body[i - 1].is_ascii_alphanumeric())
            && !body.get(i + 6).is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        if self.done {
            return None;
        }
        if !self.skip_trivia() {
            self.done = true;
            return Some(Token::Unterminated);
        }
        let start = self.pos;
        let &c = self.s.get(start)?;
        if is_ident_byte(c) {
            let end = self.word_end(start);
            if self.s[start..end].iter().all(u8::is_ascii_digit) {
                // A number; identifiers may start with digits (`1abc`).
                let mut i = end;
                if self.at(i) == b'.' && self.at(i + 1).is_ascii_digit() {
                    i = self.word_end(i + 1);
                } else if self.at(i) == b'.' && !is_ident_byte(self.at(i + 1)) {
                    i += 1;
                }
                self.pos = i;
                return Some(Token::Number(&self.s[start..i]));
            }
            self.pos = end;
            self.name_end = end;
            return Some(Token::Word(&self.s[start..end]));
        }
        if c == b'\'' || c == b'"' {
            let ident = self.is_ident_quote(c);
            return Some(self.quoted(c, ident));
        }
        if c == b'`' {
            return Some(self.quoted(c, true));
        }
        self.pos += 1;
        let tok = match c {
            b'@' if start == self.name_end => Token::Op(b'@'),
            b'@' if self.at(start + 1) == b'@' => {
                let end = {
                    let mut i = start + 2;
                    while self.s.get(i).is_some_and(|&c| is_ident_byte(c) || c == b'.') {
                        i += 1;
                    }
                    i
                };
                if end == start + 2 {
                    Token::Op(b'@')
                } else {
                    self.pos = end;
                    Token::SysVar(&self.s[start + 2..end])
                }
            }
            b'@' => {
                let q = self.at(start + 1);
                if q == b'\'' || q == b'"' || q == b'`' {
                    self.pos = start + 1;
                    match self.quoted(q, q == b'`') {
                        Token::Unterminated => Token::Unterminated,
                        _ => Token::UserVar(&self.s[start + 1..self.pos]),
                    }
                } else {
                    let mut i = start + 1;
                    while self.s.get(i).is_some_and(|&c| is_ident_byte(c) || c == b'.') {
                        i += 1;
                    }
                    if i == start + 1 {
                        Token::Op(b'@')
                    } else {
                        self.pos = i;
                        Token::UserVar(&self.s[start + 1..i])
                    }
                }
            }
            b':' if self.at(start + 1) == b'=' => {
                self.pos += 1;
                Token::Assign
            }
            b';' => Token::Semi,
            b'(' => Token::LParen,
            b')' => Token::RParen,
            b',' => Token::Comma,
            b'.' => Token::Dot,
            b'=' => Token::Eq,
            _ => Token::Op(c),
        };
        Some(tok)
    }
}

/// A quoted identifier's name: delimiters removed, doubled quotes undone;
/// None if it is not valid UTF-8.
pub fn unquote_ident(raw: &[u8]) -> Option<String> {
    let (&q, rest) = raw.split_first()?;
    let inner = rest.strip_suffix(&[q])?;
    let s = std::str::from_utf8(inner).ok()?;
    let qq = [q, q];
    let qq = std::str::from_utf8(&qq).ok()?;
    if s.contains(qq) {
        Some(s.replace(qq, &qq[..1]))
    } else {
        Some(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_byte_second_bytes_that_read_as_ascii() {
        // Shift_JIS `表` (95 5C) and `ソ` (83 5C), GBK `胼` (EB 60): a view with x.
        assert_eq!(
            multibyte_view(b"SELECT '\x95\x5c', '\x83\x5c' FROM t").as_deref(),
            Some(&b"SELECT '\x95x', '\x83x' FROM t"[..])
        );
        assert_eq!(multibyte_view(b"`\xeb\x60`").as_deref(), Some(&b"`\xebx`"[..]));
        // Other second bytes read alike; UTF-8 characters pair up (`é` = C3 A9).
        assert_eq!(multibyte_view(b"SELECT '\x95\x41', '\xc3\xa9\\n'"), None);
        assert_eq!(multibyte_view(b"SELECT 'plain \\' x'"), None);
    }

    #[test]
    fn words_and_comments() {
        assert_eq!(first_word(b"  /* x */ select 1").0, "SELECT");
        assert_eq!(first_word(b"-- c\nINSERT").0, "INSERT");
        assert_eq!(first_word(b"/*!40101 SET x=1*/").0, "");
        assert_eq!(first_word(b"").0, "");
    }

    fn toks(s: &[u8]) -> Vec<Token<'_>> {
        Tokens::new(s).collect()
    }

    #[test]
    fn tokens() {
        use Token::*;
        assert_eq!(
            toks(b"SELECT a.b, 'x''y' , \"z\\\"\" FROM `t``u`;"),
            vec![
                Word(b"SELECT"),
                Word(b"a"),
                Dot,
                Word(b"b"),
                Comma,
                Str(b"'x''y'"),
                Comma,
                Str(b"\"z\\\"\""),
                Word(b"FROM"),
                Quoted(b"`t``u`"),
                Semi
            ]
        );
        assert_eq!(
            toks(b"@a := @@global.x = @'q' (1.5) 12abc $d"),
            vec![
                UserVar(b"a"),
                Assign,
                SysVar(b"global.x"),
                Eq,
                UserVar(b"'q'"),
                LParen,
                Number(b"1.5"),
                RParen,
                Word(b"12abc"),
                Word(b"$d")
            ]
        );
        // user@host is no variable.
        assert_eq!(
            toks(b"'u'@'h' u@h"),
            vec![
                Str(b"'u'"),
                Op(b'@'),
                Str(b"'h'"),
                Word(b"u"),
                Op(b'@'),
                Word(b"h")
            ]
        );
        assert_eq!(
            toks(b"1--2"),
            vec![Number(b"1"), Op(b'-'), Op(b'-'), Number(b"2")]
        );
        assert_eq!(
            toks(b"1 -- 2\n3 # 4\n5 /* 6 */ 7"),
            vec![Number(b"1"), Number(b"3"), Number(b"5"), Number(b"7")]
        );
        assert_eq!(
            toks(b"/*!40101 a */ b /*M!100100 c*/"),
            vec![Word(b"a"), Word(b"b"), Word(b"c")]
        );
        assert_eq!(toks(b"'abc"), vec![Unterminated]);
        assert_eq!(toks(b"a /* b"), vec![Word(b"a"), Unterminated]);
        assert_eq!(toks(b""), vec![]);
    }

    fn toks_at(s: &[u8], server_version: u32) -> Vec<Token<'_>> {
        Tokens::with_options(
            s,
            LexOptions {
                server_version,
                ..LexOptions::default()
            },
        )
        .collect()
    }

    #[test]
    fn versioned_comments() {
        use Token::*;
        // Above the server's version: skipped, so `WHERE` is not code.
        assert_eq!(
            toks_at(b"a /*!999999 WHERE */ , b", 101106),
            vec![Word(b"a"), Comma, Word(b"b")]
        );
        assert_eq!(
            toks(b"a /*!999999 WHERE */ , b"),
            vec![Word(b"a"), Comma, Word(b"b")]
        );
        // MySQL 5.7+ range: skipped by MariaDB, unless `/*M!`.
        assert_eq!(toks_at(b"/*!50700 x */ y", 101106), vec![Word(b"y")]);
        assert_eq!(toks_at(b"/*!80000 x */ y", 101106), vec![Word(b"y")]);
        assert_eq!(toks_at(b"/*M!50700 x */ y", 101106), vec![Word(b"x"), Word(b"y")]);
        assert_eq!(toks_at(b"/*!50699 x */ y", 101106), vec![Word(b"x"), Word(b"y")]);
        // At or below the version: code; six digits.
        assert_eq!(toks_at(b"/*!101106 x */", 101106), vec![Word(b"x")]);
        assert_eq!(toks_at(b"/*!101107 x */ y", 101106), vec![Word(b"y")]);
        assert_eq!(toks_at(b"/*M!101107 x */ y", 101106), vec![Word(b"y")]);
        // Fewer than five digits: no version, the digits are code.
        assert_eq!(toks_at(b"/*!1234 */", 101106), vec![Number(b"1234")]);
        assert_eq!(toks_at(b"/*!x*/", 101106), vec![Word(b"x")]);
        // A skipped comment ignores quotes and allows one nested comment.
        assert_eq!(toks_at(b"/*!99999 ' */ y", 101106), vec![Word(b"y")]);
        assert_eq!(toks_at(b"/*!999999 a /* b */ c */ d", 101106), vec![Word(b"d")]);
        assert_eq!(toks_at(b"/*!999999 a", 101106), vec![Unterminated]);
        // Unknown 10.11 patch level: read as at 10.11.1, with a doubt.
        let mut t = Tokens::new(b"/*!101150 x */ y");
        assert_eq!(t.by_ref().collect::<Vec<_>>(), vec![Word(b"y")]);
        assert!(t.version_doubt());
        let mut t = Tokens::new(b"/*!100100 x */ /*!999999 y */");
        assert_eq!(t.by_ref().collect::<Vec<_>>(), vec![Word(b"x")]);
        assert!(!t.version_doubt());
    }

    #[test]
    fn token_options() {
        let ansi = LexOptions {
            ansi_quotes: true,
            ..LexOptions::default()
        };
        let t: Vec<_> = Tokens::with_options(b"\"a\"\"b\"", ansi).collect();
        assert_eq!(t, vec![Token::Quoted(b"\"a\"\"b\"")]);
        let nbe = LexOptions {
            no_backslash_escapes: true,
            ..LexOptions::default()
        };
        let t: Vec<_> = Tokens::with_options(b"'a\\' x", nbe).collect();
        assert_eq!(t, vec![Token::Str(b"'a\\'"), Token::Word(b"x")]);
        assert_eq!(toks(b"'a\\' x"), vec![Token::Unterminated]);
    }

    #[test]
    fn master_hints() {
        let hint = |s: &[u8]| {
            let mut t = Tokens::new(s);
            t.by_ref().for_each(drop);
            t.master_hint()
        };
        assert!(hint(b"/*master*/ SELECT 1"));
        assert!(hint(b"SELECT 1 -- sluice:MASTER"));
        assert!(!hint(b"SELECT 'master'"));
        assert!(!hint(b"/* masterful */"));
        assert!(!hint(b"/*!master */"));
    }

    #[test]
    fn unquote() {
        assert_eq!(unquote_ident(b"`a``b`"), Some("a`b".into()));
        assert_eq!(unquote_ident(b"\"a\"\"b\""), Some("a\"b".into()));
        assert_eq!(unquote_ident(b"``"), Some(String::new()));
        assert_eq!(unquote_ident(b"`\xff`"), None);
        assert_eq!(unquote_ident(b"`"), None);
        assert_eq!(unquote_ident(b""), None);
    }
}
