//! The statements about thread ids that sluice answers itself, as pure
//! functions of the statement text (unit-tested without sockets):
//!
//! - `KILL [HARD|SOFT] [CONNECTION|QUERY] <id>`: the id is a sluice session
//!   id; forwarding it would hit whatever backend thread has that number.
//! - `SHOW [FULL] PROCESSLIST`: sluice's sessions, in MariaDB's layout.
//!
//! The ids the server puts into statement results (`CONNECTION_ID()`,
//! `IS_USED_LOCK()`) are rewritten in `thread_ids`.
//!
//! A text that starts with `KILL <id>;` and goes on is `KillThen`: the
//! KILL is sluice's, the rest the server's. A KILL or SHOW PROCESSLIST
//! after a text's first statement is refused by the session, never
//! forwarded (session/cmd/query.rs `later_intercept`).

/// What sluice does instead of forwarding a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intercept {
    Kill {
        query_only: bool,
        target: KillTarget,
    },
    /// `KILL <id>; <more statements>` (a multi-statement): the KILL is
    /// sluice's, `rest` (from the `;` on) is the server's.
    KillThen {
        query_only: bool,
        target: KillTarget,
        rest: Vec<u8>,
    },
    Processlist {
        full: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillTarget {
    /// A thread id (a sluice session id).
    Thread(u64),
    /// `KILL CONNECTION_ID()`: the session itself.
    Own,
    /// `KILL QUERY ID <query id>`: sluice has no query ids.
    QueryId(u64),
    /// `KILL USER <name>`.
    User,
    /// Something else (an expression): refused, never forwarded.
    Other,
}

/// A token of SQL text: only what these statements need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    Word(&'a [u8]),
    Number(&'a [u8]),
    Punct(u8),
    /// A quoted string or identifier (never looked into).
    Quoted,
    /// `/*!…*/` or `/*M!…*/`: the server runs what is inside.
    Executable,
}

/// Tokens with their byte spans, comments and whitespace skipped.
pub(super) struct Lexer<'a> {
    sql: &'a [u8],
    at: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(sql: &'a [u8]) -> Self {
        Lexer { sql, at: 0 }
    }

    fn skip_blank(&mut self) {
        let s = self.sql;
        loop {
            match s.get(self.at..) {
                Some([c, ..]) if c.is_ascii_whitespace() => self.at += 1,
                Some([b'#', ..]) => self.skip_line(),
                Some([b'-', b'-', c, ..]) if c.is_ascii_whitespace() => self.skip_line(),
                Some([b'/', b'*', rest @ ..]) if !matches!(rest, [b'!', ..] | [b'M', b'!', ..]) => {
                    match find(&s[self.at + 2..], b"*/") {
                        Some(i) => self.at += 2 + i + 2,
                        None => self.at = s.len(),
                    }
                }
                _ => return,
            }
        }
    }

    fn skip_line(&mut self) {
        match self.sql[self.at..].iter().position(|&c| c == b'\n') {
            Some(i) => self.at += i + 1,
            None => self.at = self.sql.len(),
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    /// (token, start, end)
    type Item = (Tok<'a>, usize, usize);

    fn next(&mut self) -> Option<Self::Item> {
        self.skip_blank();
        let s = self.sql;
        let start = self.at;
        let c = *s.get(start)?;
        let tok = match c {
            b'\'' | b'"' | b'`' => {
                let mut i = start + 1;
                while i < s.len() {
                    if s[i] == b'\\' && c != b'`' {
                        i += 2;
                        continue;
                    }
                    if s[i] == c {
                        // A doubled quote continues the string.
                        if s.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                self.at = (i + 1).min(s.len());
                Tok::Quoted
            }
            b'/' if s.get(start + 1) == Some(&b'*') => {
                self.at = find(&s[start + 2..], b"*/").map_or(s.len(), |i| start + 2 + i + 2);
                Tok::Executable
            }
            c if c.is_ascii_digit() => {
                let n = s[start..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                self.at = start + n;
                Tok::Number(&s[start..self.at])
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 => {
                let n = s[start..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(**c, b'_' | b'$') || **c >= 0x80)
                    .count();
                self.at = start + n;
                Tok::Word(&s[start..self.at])
            }
            c => {
                self.at = start + 1;
                Tok::Punct(c)
            }
        };
        Some((tok, start, self.at))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub(super) fn is_word(t: Option<Tok<'_>>, w: &str) -> bool {
    matches!(t, Some(Tok::Word(x)) if x.eq_ignore_ascii_case(w.as_bytes()))
}

/// What follows a KILL's target.
enum Tail {
    /// Nothing, or a `;` alone.
    End,
    /// A `;` (at this offset) and another statement.
    More(usize),
    /// Anything else: not a literal id.
    Other,
}

fn tail(lx: &mut Lexer<'_>) -> Tail {
    match lx.next() {
        None => Tail::End,
        Some((Tok::Punct(b';'), at, _)) => {
            let mut probe = Lexer {
                sql: lx.sql,
                at: lx.at,
            };
            match probe.next() {
                None => Tail::End,
                Some(_) => Tail::More(at),
            }
        }
        _ => Tail::Other,
    }
}

/// Nothing but an optional `;` left.
fn at_end(lx: &mut Lexer<'_>) -> bool {
    match lx.next() {
        None => true,
        Some((Tok::Punct(b';'), _, _)) => lx.next().is_none(),
        _ => false,
    }
}

/// Whether sluice answers `sql` itself (cheap for everything else: one
/// look at the first word).
pub fn intercept(sql: &[u8]) -> Option<Intercept> {
    if plainly_other(sql) {
        return None;
    }
    let mut lx = Lexer::new(sql);
    let first = lx.next();
    // `/*!KILL 5*/`, `/*M!100100 KILL 5*/ …`: what the server would run is
    // the comment's text followed by the rest. A KILL there is sluice's too
    // (a thread id must never reach the server, whatever the version
    // number says).
    if let Some((Tok::Executable, start, end)) = first {
        let inner = executable_text(&sql[start..end])?;
        let joined = [inner, b" ", &sql[end..]].concat();
        // One level only: the server does not nest these comments (and a
        // recursion would let a client's bytes choose its depth).
        return intercept_plain(&joined);
    }
    // (The first token is already read: no second pass over it.)
    intercept_rest(first.map(|t| t.0), lx)
}

/// The text starts (after spaces) with a word that is neither KILL nor
/// SHOW: no lexer needed. The word is read up to the first byte outside
/// `[A-Za-z0-9_]`; the lexer's word may go on (`$`, bytes >= 0x80), but a
/// longer word is not KILL or SHOW either. Anything else (a comment, a
/// parenthesis) goes to the lexer.
fn plainly_other(sql: &[u8]) -> bool {
    let start = sql
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .unwrap_or(sql.len());
    let rest = &sql[start..];
    if !rest.first().is_some_and(u8::is_ascii_alphabetic) {
        return false;
    }
    let end = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(rest.len());
    let word = &rest[..end];
    !(word.eq_ignore_ascii_case(b"KILL") || word.eq_ignore_ascii_case(b"SHOW"))
}

/// [`intercept`] of a statement whose first token is not an executable
/// comment.
fn intercept_plain(sql: &[u8]) -> Option<Intercept> {
    let mut lx = Lexer::new(sql);
    let first = lx.next().map(|t| t.0);
    intercept_rest(first, lx)
}

/// [`intercept_plain`] once the first token (`first`) has been read from `lx`.
fn intercept_rest(first: Option<Tok<'_>>, mut lx: Lexer<'_>) -> Option<Intercept> {
    if is_word(first, "KILL") {
        return Some(parse_kill(&mut lx));
    }
    if is_word(first, "SHOW") {
        let mut next = lx.next().map(|t| t.0);
        let full = is_word(next, "FULL");
        if full {
            next = lx.next().map(|t| t.0);
        }
        if is_word(next, "PROCESSLIST") && at_end(&mut lx) {
            return Some(Intercept::Processlist { full });
        }
    }
    None
}

/// The text inside `/*!…*/` / `/*M!…*/`, after its version number.
fn executable_text(c: &[u8]) -> Option<&[u8]> {
    let body = c.strip_prefix(b"/*!").or_else(|| c.strip_prefix(b"/*M!"))?;
    let body = body.strip_suffix(b"*/").unwrap_or(body);
    let digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
    Some(&body[digits..])
}

fn parse_kill(lx: &mut Lexer<'_>) -> Intercept {
    let mut t = lx.next().map(|t| t.0);
    if is_word(t, "HARD") || is_word(t, "SOFT") {
        t = lx.next().map(|t| t.0);
    }
    let mut query_only = false;
    if is_word(t, "QUERY") {
        query_only = true;
        t = lx.next().map(|t| t.0);
    } else if is_word(t, "CONNECTION") {
        t = lx.next().map(|t| t.0);
    }
    let target = match t {
        Some(Tok::Number(n)) => match std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()) {
            Some(id) => match tail(lx) {
                Tail::End => KillTarget::Thread(id),
                Tail::More(at) => {
                    return Intercept::KillThen {
                        query_only,
                        target: KillTarget::Thread(id),
                        rest: lx.sql[at..].to_vec(),
                    }
                }
                Tail::Other => KillTarget::Other,
            },
            _ => KillTarget::Other,
        },
        _ if is_word(t, "ID") && query_only => match lx.next().map(|t| t.0) {
            Some(Tok::Number(n)) => match std::str::from_utf8(n).ok().and_then(|n| n.parse().ok()) {
                Some(id) if at_end(lx) => KillTarget::QueryId(id),
                _ => KillTarget::Other,
            },
            _ => KillTarget::Other,
        },
        _ if is_word(t, "USER") => KillTarget::User,
        _ if is_word(t, "CONNECTION_ID") => {
            let call = matches!(lx.next(), Some((Tok::Punct(b'('), _, _)))
                && matches!(lx.next(), Some((Tok::Punct(b')'), _, _)));
            if call && at_end(lx) {
                KillTarget::Own
            } else {
                KillTarget::Other
            }
        }
        _ => KillTarget::Other,
    };
    Intercept::Kill { query_only, target }
}

/// The answer to COM_STMT_PREPARE of a statement `intercept` recognizes:
/// sluice answers those only as text statements (never forwarded: the ids
/// are sluice's).
pub fn not_preparable() -> crate::protocol::packets::ErrPacket {
    crate::protocol::packets::ErrPacket::new(
        1295,
        "HY000",
        "This command is not supported in the prepared statement protocol yet (sluice answers KILL \
         and SHOW PROCESSLIST itself, as text statements)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kill(sql: &str) -> Option<(bool, KillTarget)> {
        match intercept(sql.as_bytes())? {
            Intercept::Kill { query_only, target } => Some((query_only, target)),
            _ => None,
        }
    }

    #[test]
    fn kill_forms() {
        use KillTarget::*;
        assert_eq!(kill("KILL 12"), Some((false, Thread(12))));
        assert_eq!(kill("kill connection 12;"), Some((false, Thread(12))));
        assert_eq!(kill("  /* c */ KILL QUERY 7 "), Some((true, Thread(7))));
        assert_eq!(kill("KILL HARD QUERY 7"), Some((true, Thread(7))));
        assert_eq!(kill("KILL SOFT 7"), Some((false, Thread(7))));
        assert_eq!(kill("KILL QUERY ID 99"), Some((true, QueryId(99))));
        assert_eq!(kill("KILL USER 'app'"), Some((false, User)));
        assert_eq!(kill("KILL CONNECTION_ID()"), Some((false, Own)));
        assert_eq!(kill("KILL QUERY connection_id ( )"), Some((true, Own)));
        assert_eq!(kill("KILL 1+1"), Some((false, Other)));
        assert_eq!(kill("KILL @id"), Some((false, Other)));
        assert_eq!(kill("KILL 5; SELECT 1"), None);
        assert_eq!(
            intercept(b"kill 5 ; select sleep(0.05)"),
            Some(Intercept::KillThen {
                query_only: false,
                target: Thread(5),
                rest: b"; select sleep(0.05)".to_vec()
            })
        );
        assert_eq!(kill("KILL 5;  "), Some((false, Thread(5))));
        assert_eq!(kill("KILL 5 6; SELECT 1"), Some((false, Other)));
        assert_eq!(kill("KILL 99999999999999999999999"), Some((false, Other)));
        assert_eq!(kill("KILL"), Some((false, Other)));
        assert_eq!(kill("SELECT 'KILL 5'"), None);
        assert_eq!(kill("KILLX 5"), None);
        assert_eq!(kill("/*! KILL 5 */"), Some((false, Thread(5))));
    }

    #[test]
    fn kill_in_executable_comments_is_sluices() {
        assert_eq!(kill("/*!KILL 5*/"), Some((false, KillTarget::Thread(5))));
        assert_eq!(
            kill("/*!100100 KILL QUERY 7 */"),
            Some((true, KillTarget::Thread(7)))
        );
        assert_eq!(kill("/*M!KILL*/ 9"), Some((false, KillTarget::Thread(9))));
        assert_eq!(kill("KILL /*!5*/"), Some((false, KillTarget::Other)));
        assert!(intercept(b"/*!40101 SET NAMES utf8 */").is_none());
        assert!(matches!(
            intercept(b"/*!SHOW PROCESSLIST*/"),
            Some(Intercept::Processlist { full: false })
        ));
    }

    #[test]
    fn processlist_forms() {
        let p = |s: &str| intercept(s.as_bytes());
        assert_eq!(
            p("SHOW PROCESSLIST"),
            Some(Intercept::Processlist { full: false })
        );
        assert_eq!(
            p("show full processlist ;"),
            Some(Intercept::Processlist { full: true })
        );
        assert_eq!(
            p("# x\nSHOW FULL PROCESSLIST"),
            Some(Intercept::Processlist { full: true })
        );
        assert_eq!(p("SHOW PROCESSLIST LIKE 'x'"), None);
        assert_eq!(p("SHOW TABLES"), None);
        assert_eq!(p("SELECT * FROM information_schema.PROCESSLIST"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("\u{1F600}"), None);
    }

    /// The shortcut never hides what the lexer would intercept.
    #[test]
    fn the_first_word_shortcut_agrees_with_the_lexer() {
        for s in [
            "SELECT 1",
            " \n\tkill 5",
            "KILL$ 5",
            "KILLx 5",
            "kill5",
            "SHOW PROCESSLIST",
            "SHOWx PROCESSLIST",
            "show\x0bprocesslist",
            "\x0bKILL 5",
            "/*!KILL 5*/",
            "(KILL 5)",
            "KIL",
            "S",
            "",
            "Kill\u{e9} 5",
            "SELECT$ 1",
        ] {
            let sql = s.as_bytes();
            let full = intercept_plain(sql);
            let full = match sql.first() {
                Some(b'/') => intercept(sql),
                _ => full,
            };
            assert_eq!(intercept(sql), full, "{s:?}");
            if plainly_other(sql) {
                assert_eq!(full, None, "{s:?}");
            }
        }
    }
}
