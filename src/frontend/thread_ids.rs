//! Thread ids inside statement results. A client knows only sluice session
//! ids; the server answers with backend thread ids, which with multiplexing
//! change from statement to statement and may belong to unrelated clients.
//! Two functions carry them, and both are rewritten in the text before it
//! is sent (pure functions, unit-tested without sockets):
//!
//! - `CONNECTION_ID()`: the session's id as a literal of the function's type
//!   (`CAST(0000000042 AS UNSIGNED)`: INT UNSIGNED NOT NULL, display length
//!   10).
//! - `IS_USED_LOCK(name)`: the holder's backend thread id mapped to the
//!   session holding that connection, `CASE IS_USED_LOCK(name) WHEN
//!   CONNECTION_ID() THEN <own session> WHEN <thread> THEN <session> … ELSE
//!   IS_USED_LOCK(name) END` (same type: LONG, length 10, nullable). A lock
//!   outlives a statement only on a connection its session keeps (GET_LOCK
//!   pins it), so the connection running the statement and the sessions
//!   holding a master connection are all the holders sluice can name; any
//!   other holder is a client of the server itself and keeps its own id.
//!
//! A select item that contains a rewritten call and has no alias gets its
//! own text as the alias, so the column keeps the name the server gives it
//! (`IS_USED_LOCK('a') = CONNECTION_ID()`, as written). An item that may
//! already end in an alias (`x me`) is left unaliased rather than guessed.
//!
//! Not in `CREATE`/`ALTER` statements: stored code (triggers, routines,
//! views, events) runs later, in other sessions, and keeps the calls.

use super::kill::{is_word, Lexer, Tok};

/// (backend thread id, session id) of the sessions holding a master
/// connection.
pub type Holders = Vec<(u32, u32)>;

/// `sql` with `CONNECTION_ID()` and `IS_USED_LOCK()` rewritten (see the
/// module comment); `None` when it calls neither (the common case: one pass
/// over the bytes, no allocation). `holders` is called at most once, and
/// only when the text calls `IS_USED_LOCK`.
pub fn rewrite(sql: &[u8], session: u32, holders: impl FnOnce() -> Holders) -> Option<Vec<u8>> {
    rewrite_with(sql, session, Some(holders)).map(|r| r.sql)
}

/// A prepared statement's text for one execution (see [`rewrite`]), and the
/// order in which it binds the client's parameters when that is not the
/// client's own: the CASE repeats `IS_USED_LOCK()`'s argument, and with it
/// any parameter marker in it (`IS_USED_LOCK(?)` binds parameter 0 twice).
/// `params`: the statement's parameter count, as the server counted them;
/// when the markers found differ (one inside an executable comment), the
/// text is left alone.
pub fn rewrite_prepared(
    sql: &[u8],
    session: u32,
    params: u16,
    holders: impl FnOnce() -> Holders,
) -> Option<(Vec<u8>, Option<Vec<u16>>)> {
    let r = rewrite_with(sql, session, Some(holders))?;
    if r.params != params {
        return None;
    }
    let order = r.repeated.then_some(r.order);
    Some((r.sql, order))
}

/// `sql` with `CONNECTION_ID()` rewritten only: a statement being prepared,
/// whose `IS_USED_LOCK()` is mapped at each execution (its variant).
pub fn rewrite_connection_id(sql: &[u8], session: u32) -> Option<Vec<u8>> {
    rewrite_with(sql, session, None::<fn() -> Holders>).map(|r| r.sql)
}

struct Rewritten {
    sql: Vec<u8>,
    /// Parameter markers of the original text.
    params: u16,
    /// The client's parameter bound by each marker of `sql`, in order.
    order: Vec<u16>,
    /// Some parameter is bound more than once.
    repeated: bool,
}

fn rewrite_with(sql: &[u8], session: u32, holders: Option<impl FnOnce() -> Holders>) -> Option<Rewritten> {
    // Where a double-byte client character set may end a string elsewhere
    // than this lexer does, a rewrite could land inside a client's literal
    // (its stored data changed): the text goes untouched (issue 40).
    if crate::router::lexer::multibyte_view(sql).is_some() {
        return None;
    }
    let (ids, locks) = scan(sql);
    let locks = locks && holders.is_some();
    if !ids && !locks {
        return None;
    }
    let toks: Vec<_> = Lexer::new(sql).collect();
    let first = toks.first().map(|t| t.0);
    if is_word(first, "CREATE") || is_word(first, "ALTER") {
        return None;
    }
    let holders = match holders {
        Some(h) if locks => Some(h()),
        _ => None,
    };
    Some(Rewriter::new(sql, session, holders.as_deref()).run(&toks))
}

/// Quick test before the token scan, one pass over the bytes: whether the
/// text names `connection_id` and `is_used_lock` at all, in any case.
fn scan(sql: &[u8]) -> (bool, bool) {
    const ID: &[u8] = b"connection_id";
    const LOCK: &[u8] = b"is_used_lock";
    // A call needs its parenthesis: most statements (a point select) have
    // none, and `contains` is core's word-at-a-time memchr, several times
    // cheaper per byte than the loop below.
    if !sql.contains(&b'(') {
        return (false, false);
    }
    let (mut ids, mut locks) = (false, false);
    for (i, c) in sql.iter().enumerate() {
        match c | 0x20 {
            b'c' if !ids => {
                ids = sql
                    .get(i..i + ID.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(ID))
            }
            b'i' if !locks => {
                locks = sql
                    .get(i..i + LOCK.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(LOCK))
            }
            _ => {}
        }
    }
    (ids, locks)
}

/// Words that end a select list at the depth where it started.
fn ends_select_list(w: &[u8]) -> bool {
    const ENDS: [&str; 13] = [
        "FROM",
        "INTO",
        "WHERE",
        "GROUP",
        "HAVING",
        "ORDER",
        "LIMIT",
        "UNION",
        "FOR",
        "LOCK",
        "WINDOW",
        "EXCEPT",
        "INTERSECT",
    ];
    ENDS.iter().any(|e| w.eq_ignore_ascii_case(e.as_bytes()))
}

/// Words between SELECT and its first item.
fn select_modifier(w: &[u8]) -> bool {
    const MODS: [&str; 11] = [
        "DISTINCT",
        "ALL",
        "DISTINCTROW",
        "HIGH_PRIORITY",
        "STRAIGHT_JOIN",
        "SQL_CALC_FOUND_ROWS",
        "SQL_NO_CACHE",
        "SQL_CACHE",
        "SQL_SMALL_RESULT",
        "SQL_BIG_RESULT",
        "SQL_BUFFER_RESULT",
    ];
    MODS.iter().any(|m| w.eq_ignore_ascii_case(m.as_bytes()))
}

/// A select item being read.
#[derive(Clone, Copy)]
struct Item {
    /// Byte offset of its first token.
    start: usize,
    /// It contains a rewritten call.
    rewritten: bool,
    /// It has `AS` at its own depth (an alias follows).
    aliased: bool,
}

/// One parenthesis depth.
#[derive(Clone, Copy, Default)]
struct Frame {
    in_select: bool,
    item: Option<Item>,
}

struct Rewriter<'a> {
    sql: &'a [u8],
    /// `None`: IS_USED_LOCK() is left as it is.
    holders: Option<&'a [(u32, u32)]>,
    session: u32,
    literal: String,
    out: Vec<u8>,
    /// Bytes of `sql` up to here are in `out` (or replaced).
    copied: usize,
    frames: Vec<Frame>,
    /// Parameter markers of `sql` seen so far.
    params: u16,
    /// The parameter each marker of `out` binds.
    order: Vec<u16>,
    repeated: bool,
}

impl<'a> Rewriter<'a> {
    fn new(sql: &'a [u8], session: u32, holders: Option<&'a [(u32, u32)]>) -> Self {
        Rewriter {
            sql,
            holders,
            session,
            literal: format!("CAST({session:010} AS UNSIGNED)"),
            out: Vec::with_capacity(sql.len() + 64),
            copied: 0,
            frames: vec![Frame::default()],
            params: 0,
            order: Vec::new(),
            repeated: false,
        }
    }

    fn run(mut self, toks: &[(Tok<'_>, usize, usize)]) -> Rewritten {
        let mut i = 0;
        while i < toks.len() {
            let (tok, start, _) = toks[i];
            // The previous token ends the item that `tok` terminates.
            let prev = i.checked_sub(1).map(|p| toks[p]);
            match tok {
                Tok::Punct(b'(') => {
                    self.start_item(start);
                    self.frames.push(Frame::default());
                }
                Tok::Punct(b')') if self.frames.len() > 1 => {
                    self.end_item(prev);
                    self.frames.pop();
                }
                Tok::Punct(b',') => {
                    self.end_item(prev);
                }
                Tok::Punct(b';') => {
                    self.end_item(prev);
                    self.frames.truncate(1);
                    self.frames[0] = Frame::default();
                }
                Tok::Word(w) if w.eq_ignore_ascii_case(b"SELECT") => {
                    self.end_item(prev);
                    let f = self.top();
                    f.in_select = true;
                    f.item = None;
                }
                Tok::Word(w) if ends_select_list(w) => {
                    self.end_item(prev);
                    self.top().in_select = false;
                }
                Tok::Word(w) if self.top().in_select && self.top().item.is_none() && select_modifier(w) => {}
                Tok::Word(w) if w.eq_ignore_ascii_case(b"AS") => {
                    if let Some(item) = self.top().item.as_mut() {
                        item.aliased = true;
                    }
                }
                _ => self.start_item(start),
            }
            match self.replace_call(toks, i) {
                Some(span) => i += span,
                None => {
                    if tok == Tok::Punct(b'?') {
                        self.order.push(self.params);
                        self.params = self.params.saturating_add(1);
                    }
                    i += 1;
                }
            }
        }
        self.end_item(toks.last().copied());
        self.out.extend_from_slice(&self.sql[self.copied..]);
        Rewritten {
            sql: self.out,
            params: self.params,
            order: self.order,
            repeated: self.repeated,
        }
    }

    fn top(&mut self) -> &mut Frame {
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn start_item(&mut self, start: usize) {
        let f = self.top();
        if f.in_select && f.item.is_none() {
            f.item = Some(Item {
                start,
                rewritten: false,
                aliased: false,
            });
        }
    }

    /// The current item of the top frame ends after token `last`: alias it
    /// with its own text if it needs one and surely has none.
    fn end_item(&mut self, last: Option<(Tok<'_>, usize, usize)>) {
        let Some(item) = self.top().item.take() else {
            return;
        };
        let Some((last, _, end)) = last else {
            return;
        };
        // An item ending in `)`, a number or a parameter marker cannot end
        // in an alias.
        let bare = matches!(last, Tok::Punct(b')' | b'?') | Tok::Number(_));
        if !item.rewritten || item.aliased || !bare || end < self.copied {
            return;
        }
        self.out.extend_from_slice(&self.sql[self.copied..end]);
        self.out.extend_from_slice(b" AS `");
        for &c in &self.sql[item.start..end] {
            if c == b'`' {
                self.out.push(b'`');
            }
            self.out.push(c);
        }
        self.out.push(b'`');
        self.copied = end;
    }

    /// If a call to rewrite starts at token `i`, writes its replacement and
    /// returns how many tokens it spans.
    fn replace_call(&mut self, toks: &[(Tok<'_>, usize, usize)], i: usize) -> Option<usize> {
        let Tok::Word(w) = toks[i].0 else {
            return None;
        };
        // `db.connection_id()` is someone's stored function.
        if matches!(i.checked_sub(1).map(|p| toks[p].0), Some(Tok::Punct(b'.'))) {
            return None;
        }
        if !matches!(toks.get(i + 1), Some((Tok::Punct(b'('), _, _))) {
            return None;
        }
        let start = toks[i].1;
        let (span, end, text) = if w.eq_ignore_ascii_case(b"CONNECTION_ID") {
            let (_, _, end) = *toks.get(i + 2).filter(|t| t.0 == Tok::Punct(b')'))?;
            (3, end, None)
        } else if let (true, Some(holders)) = (w.eq_ignore_ascii_case(b"IS_USED_LOCK"), self.holders) {
            let close = matching_paren(toks, i + 1)?;
            // The CASE has the argument twice, and its markers with it.
            let markers = toks[i + 2..close]
                .iter()
                .filter(|t| t.0 == Tok::Punct(b'?'))
                .count();
            let first = self.params;
            self.params = self.params.saturating_add(markers as u16);
            for _ in 0..2 {
                self.order.extend(first..self.params);
            }
            self.repeated |= markers > 0;
            let arg = &self.sql[toks[i + 1].2..toks[close].1];
            // The session's id inside the lock's name is the session's too.
            let arg = if crate::router::route::mentions(arg, b"connection_id") {
                let toks: Vec<_> = Lexer::new(arg).collect();
                Rewriter::new(arg, self.session, None).run(&toks).sql
            } else {
                arg.to_vec()
            };
            (close + 1 - i, toks[close].2, Some(self.lock_case(&arg, holders)))
        } else {
            return None;
        };
        self.out.extend_from_slice(&self.sql[self.copied..start]);
        // CONNECTION_ID(): the session's literal.
        let text = text.as_deref().unwrap_or(self.literal.as_bytes());
        self.out.extend_from_slice(text);
        self.copied = end;
        for f in self.frames.iter_mut().filter(|f| f.in_select) {
            if let Some(item) = f.item.as_mut() {
                item.rewritten = true;
            }
        }
        Some(span)
    }

    fn lock_case(&self, arg: &[u8], holders: &[(u32, u32)]) -> Vec<u8> {
        let mut s = Vec::with_capacity(96 + 2 * arg.len() + 24 * holders.len());
        s.extend_from_slice(b"CASE IS_USED_LOCK(");
        s.extend_from_slice(arg);
        s.extend_from_slice(b")");
        // The connection running the statement is this session's while it
        // runs: a lock it holds may have been taken by this very statement
        // (`SELECT GET_LOCK('a', 0), IS_USED_LOCK('a')`), before the session
        // could publish the connection's thread among the holders.
        s.extend_from_slice(format!(" WHEN CONNECTION_ID() THEN {}", self.session).as_bytes());
        for (thread, session) in holders {
            s.extend_from_slice(format!(" WHEN {thread} THEN {session}").as_bytes());
        }
        s.extend_from_slice(b" ELSE IS_USED_LOCK(");
        s.extend_from_slice(arg);
        s.extend_from_slice(b") END");
        s
    }
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_paren(toks: &[(Tok<'_>, usize, usize)], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.0 {
            Tok::Punct(b'(') => depth += 1,
            Tok::Punct(b')') => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(sql: &str) -> Option<String> {
        rewrite_connection_id(sql.as_bytes(), 42).map(|v| String::from_utf8(v).expect("utf8"))
    }

    fn rwl(sql: &str) -> Option<String> {
        rewrite(sql.as_bytes(), 42, || vec![(1007, 42), (1009, 5)])
            .map(|v| String::from_utf8(v).expect("utf8"))
    }

    const ID: &str = "CAST(0000000042 AS UNSIGNED)";

    #[test]
    fn connection_id_rewrites() {
        assert_eq!(rw("SELECT 1"), None);
        assert_eq!(
            rw("SELECT CONNECTION_ID()").as_deref(),
            Some(format!("SELECT {ID} AS `CONNECTION_ID()`").as_str())
        );
        assert_eq!(
            rw("select connection_id( ), 1").as_deref(),
            Some(format!("select {ID} AS `connection_id( )`, 1").as_str())
        );
        assert_eq!(
            rw("SELECT CONNECTION_ID() AS me").as_deref(),
            Some(format!("SELECT {ID} AS me").as_str())
        );
        assert_eq!(
            rw("SELECT CONNECTION_ID() me FROM t").as_deref(),
            Some(format!("SELECT {ID} me FROM t").as_str())
        );
        assert_eq!(
            rw("SELECT a FROM t WHERE id = CONNECTION_ID()").as_deref(),
            Some(format!("SELECT a FROM t WHERE id = {ID}").as_str())
        );
        assert_eq!(
            rw("SELECT CONCAT('x', CONNECTION_ID())").as_deref(),
            Some(format!("SELECT CONCAT('x', {ID}) AS `CONCAT('x', CONNECTION_ID())`").as_str())
        );
        assert_eq!(
            rw("SELECT (SELECT CONNECTION_ID()) FROM t").as_deref(),
            Some(
                format!("SELECT (SELECT {ID} AS `CONNECTION_ID()`) AS `(SELECT CONNECTION_ID())` FROM t")
                    .as_str()
            )
        );
        assert_eq!(
            rw("SELECT DISTINCT CONNECTION_ID() + 1, 2 FROM t").as_deref(),
            Some(format!("SELECT DISTINCT {ID} + 1 AS `CONNECTION_ID() + 1`, 2 FROM t").as_str())
        );
        // A word at the end may be an alias: not guessed.
        assert_eq!(
            rw("SELECT CONNECTION_ID() IS NULL").as_deref(),
            Some(format!("SELECT {ID} IS NULL").as_str())
        );
        assert_eq!(
            rw("SELECT CONNECTION_ID(); SELECT CONNECTION_ID() AS x").as_deref(),
            Some(format!("SELECT {ID} AS `CONNECTION_ID()`; SELECT {ID} AS x").as_str())
        );
        assert_eq!(
            rw("INSERT INTO t VALUES (CONNECTION_ID())").as_deref(),
            Some(format!("INSERT INTO t VALUES ({ID})").as_str())
        );
        // Stored code is left to the server.
        assert_eq!(
            rw("CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW SET @c = CONNECTION_ID()"),
            None
        );
        assert_eq!(rw("create view v as select connection_id()"), None);
        // Strings, quoted names, comments and other functions stay as they are.
        for same in [
            "SELECT 'CONNECTION_ID()'",
            "SELECT `CONNECTION_ID`()",
            "SELECT db.connection_id()",
            "SELECT my_connection_id()",
            "SELECT 1 /* CONNECTION_ID() */",
        ] {
            assert_eq!(rw(same).as_deref(), Some(same));
        }
        // Unterminated quotes and odd bytes never panic.
        for s in [
            "SELECT 'CONNECTION_ID()",
            "CONNECTION_ID(",
            "connection_id",
            "SELECT \u{e9}connection_id()",
            "SELECT (((CONNECTION_ID()",
            ")))SELECT CONNECTION_ID())))",
        ] {
            let _ = rw(s);
            let _ = rwl(s);
        }
    }

    #[test]
    fn lock_holders_are_mapped_to_sessions() {
        let case = "CASE IS_USED_LOCK('a') WHEN CONNECTION_ID() THEN 42 WHEN 1007 THEN 42 WHEN 1009 THEN 5 \
                    ELSE IS_USED_LOCK('a') END";
        assert_eq!(
            rwl("SELECT IS_USED_LOCK('a')").as_deref(),
            Some(format!("SELECT {case} AS `IS_USED_LOCK('a')`").as_str())
        );
        assert_eq!(
            rwl("SELECT IS_USED_LOCK('a') = CONNECTION_ID(), IS_FREE_LOCK('a')").as_deref(),
            Some(
                format!("SELECT {case} = {ID} AS `IS_USED_LOCK('a') = CONNECTION_ID()`, IS_FREE_LOCK('a')")
                    .as_str()
            )
        );
        assert_eq!(
            rwl("SELECT 1 FROM t WHERE IS_USED_LOCK('a') IS NOT NULL").as_deref(),
            Some(format!("SELECT 1 FROM t WHERE {case} IS NOT NULL").as_str())
        );
        // The session's id inside the lock's name is the session's, too.
        assert_eq!(
            rwl("SELECT IS_USED_LOCK(CONCAT('l', CONNECTION_ID())) AS h").as_deref(),
            Some(
                format!(
                    "SELECT CASE IS_USED_LOCK(CONCAT('l', {ID})) WHEN CONNECTION_ID() THEN 42 WHEN 1007 \
                     THEN 42 WHEN 1009 THEN 5 ELSE IS_USED_LOCK(CONCAT('l', {ID})) END AS h"
                )
                .as_str()
            )
        );
        // No session holds a connection: only the running one is mapped.
        assert_eq!(
            rewrite(b"SELECT GET_LOCK('a', 0), IS_USED_LOCK('a')", 42, Vec::new).as_deref(),
            Some(
                &b"SELECT GET_LOCK('a', 0), CASE IS_USED_LOCK('a') WHEN CONNECTION_ID() THEN 42 \
                   ELSE IS_USED_LOCK('a') END AS `IS_USED_LOCK('a')`"[..]
            )
        );
        assert_eq!(rwl("SELECT 1"), None);
        // Parameter markers in the argument are bound twice.
        let (sql, order) = rewrite_prepared(b"SELECT ?, IS_USED_LOCK(CONCAT(?, ?)) = ?", 42, 4, Vec::new)
            .expect("rewritten");
        assert_eq!(
            String::from_utf8(sql).expect("utf8"),
            format!(
                "SELECT ?, CASE IS_USED_LOCK(CONCAT(?, ?)) WHEN CONNECTION_ID() THEN 42 ELSE \
                 IS_USED_LOCK(CONCAT(?, ?)) END = ? AS `IS_USED_LOCK(CONCAT(?, ?)) = ?`"
            )
        );
        assert_eq!(order, Some(vec![0, 1, 2, 1, 2, 3]));
        assert_eq!(
            rewrite_prepared(b"SELECT IS_USED_LOCK('a') = ?", 42, 1, Vec::new).map(|r| r.1),
            Some(None)
        );
        // The server counted a marker sluice did not see: left alone.
        assert_eq!(
            rewrite_prepared(b"SELECT IS_USED_LOCK(?) /*! + ? */", 42, 2, Vec::new),
            None
        );
        // At PREPARE only CONNECTION_ID() (the mapping is per execution).
        assert_eq!(
            rewrite_connection_id(b"SELECT IS_USED_LOCK(?) = CONNECTION_ID()", 42).as_deref(),
            Some(format!("SELECT IS_USED_LOCK(?) = {ID} AS `IS_USED_LOCK(?) = CONNECTION_ID()`").as_bytes())
        );
    }
}
