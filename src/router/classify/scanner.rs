//! The scan over every token: tables read and written, locking reads,
//! functions that force the master, nested query levels.

use super::*;

pub(super) const MAX_DEPTH: usize = 32;

/// Where a query level is in its FROM clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FromState {
    /// Not in a FROM clause.
    Off,
    /// A table reference comes next (after FROM, JOIN, a comma).
    Expect,
    /// After AS: an alias comes next.
    Alias,
    /// After a table reference: alias, JOIN, ON, index hints, comma, clause end.
    AfterTable,
    /// In `USE|FORCE|IGNORE INDEX|KEY [FOR ...]`, before its list.
    IndexHint,
    /// In a join condition (ON/USING).
    Cond,
}

/// One parenthesis level.
#[derive(Debug, Clone, Copy)]
pub(super) struct Level {
    pub(super) state: FromState,
    /// A query (SELECT/VALUES/TABLE) runs at this level: FROM is a clause here,
    /// not a word in a function's arguments (`EXTRACT(YEAR FROM d)`).
    pub(super) query: bool,
}

pub(super) const TOP: Level = Level {
    state: FromState::Off,
    query: false,
};

/// Words that end a FROM clause (all reserved words: a non-reserved one could
/// be an alias, and `FROM t offset, u` must still see `u`). `WINDOW` is
/// checked apart; MINUS (Oracle mode) ends nothing but the next SELECT
/// starts a new query anyway.
pub(super) fn ends_from(k: Kw) -> bool {
    matches!(
        k,
        Kw::Where
            | Kw::Group
            | Kw::Having
            | Kw::Order
            | Kw::Limit
            | Kw::Union
            | Kw::Except
            | Kw::Intersect
            | Kw::Into
            | Kw::Lock
            | Kw::Procedure
            | Kw::Fetch
    )
}

/// The keyword a quoted identifier spells (`` `get_lock` ``), if any.
pub(super) fn quoted_keyword(q: &[u8]) -> Kw {
    let Some(&delim) = q.first() else {
        return Kw::None;
    };
    match q.get(1..q.len().saturating_sub(1)) {
        Some(inner) if !inner.contains(&delim) => keyword(inner),
        _ => Kw::None,
    }
}

pub(super) fn ident_name(t: Token<'_>) -> Option<String> {
    match t {
        Token::Word(w) => std::str::from_utf8(w).ok().map(str::to_owned),
        Token::Quoted(q) => unquote_ident(q),
        _ => None,
    }
}

pub(super) struct Scanner<'a> {
    pub(super) lx: Tokens<'a>,
    /// Keywords of the current token and the three before it (None for
    /// other words and for punctuation).
    pub(super) hist: [Kw; 4],
    /// The current token and the two before it (for `db.f(`).
    pub(super) toks: [Option<Token<'a>>; 3],
    /// `WITH`: the main query (a SELECT at the top level) has started.
    pub(super) with_main: bool,
    /// A read calls a function that is not a built-in (`f()`, `db.f()`):
    /// it may read or write any table (see `RouteReason::StoredFunction`).
    pub(super) stored_function: bool,
    /// How the current statement starts.
    pub(super) lead: Lead,
    /// Parenthesis depth in the current statement.
    pub(super) paren: usize,
    /// Just after `INTO` or `INTO @a,`: user variables are targets.
    pub(super) into_list: bool,

    pub(super) statements: usize,
    pub(super) first_kind: Kind,
    pub(super) first_lead: Lead,
    pub(super) seen_semi: bool,
    pub(super) multi: bool,
    pub(super) error: bool,
    pub(super) with_write: bool,
    pub(super) force: Option<RouteReason>,
    pub(super) sets_user_variable: bool,
    pub(super) creates_temp_table: bool,
    pub(super) locks_tables: bool,
    pub(super) unlocks_tables: bool,
    pub(super) takes_named_lock: bool,
    pub(super) reads_user_variable: bool,
    pub(super) refers_to_previous: bool,
    pub(super) autocommit: Option<Option<bool>>,

    /// Tables are collected for the first statement when it is a SELECT.
    pub(super) collect: bool,
    pub(super) tables: Vec<String>,
    pub(super) tables_unknown: bool,
    pub(super) levels: [Level; MAX_DEPTH],
    pub(super) depth: usize,
    /// Levels beyond MAX_DEPTH (tables are unknown then).
    pub(super) overflow: usize,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(sql: &'a [u8], opts: LexOptions) -> Scanner<'a> {
        Scanner {
            lx: Tokens::with_options(sql, opts),
            hist: [Kw::None; 4],
            toks: [None; 3],
            stored_function: false,
            with_main: false,
            lead: Lead::Other,
            paren: 0,
            into_list: false,
            statements: 0,
            first_kind: Kind::Empty,
            first_lead: Lead::Other,
            seen_semi: false,
            multi: false,
            error: false,
            with_write: false,
            force: None,
            sets_user_variable: false,
            creates_temp_table: false,
            locks_tables: false,
            unlocks_tables: false,
            takes_named_lock: false,
            reads_user_variable: false,
            refers_to_previous: false,
            autocommit: None,
            collect: false,
            tables: Vec::new(),
            tables_unknown: false,
            levels: [TOP; MAX_DEPTH],
            depth: 0,
            overflow: 0,
        }
    }

    /// The classification, and whether a versioned comment was undecided.
    pub(super) fn run(mut self) -> (Classified, bool) {
        let mut at_start = true;
        loop {
            let before = at_start.then(|| self.lx.clone());
            let Some(t) = self.bump() else { break };
            match t.tok {
                Token::Unterminated => {
                    self.error = true;
                    break;
                }
                Token::Semi => {
                    self.end_statement();
                    self.seen_semi = true;
                    at_start = true;
                    continue;
                }
                _ => {}
            }
            if self.seen_semi {
                self.multi = true;
            }
            if let Some(before) = before {
                at_start = false;
                self.start_statement(analyze_head(before));
            }
            self.token(t);
        }
        self.end_statement();
        let doubt = self.lx.version_doubt();
        (self.finish(), doubt)
    }

    pub(super) fn start_statement(&mut self, h: Head) {
        self.statements += 1;
        if self.statements == 1 {
            self.first_lead = h.lead;
            self.collect = h.lead == Lead::Select;
            self.first_kind = h.kind;
        } else {
            self.collect = false;
        }
        self.lead = h.lead;
        self.with_main = false;
        self.paren = 0;
        self.into_list = false;
        self.depth = 0;
        self.overflow = 0;
        self.levels[0] = TOP;
        if let Some(r) = h.force {
            self.reason(r);
        }
        self.creates_temp_table |= h.creates_temp_table;
        self.locks_tables |= h.locks_tables;
        self.unlocks_tables |= h.unlocks_tables;
        self.sets_user_variable |= h.sets_user_variable;
        self.refers_to_previous |= h.refers_to_previous;
        if h.autocommit.is_some() {
            self.autocommit = h.autocommit;
        }
    }

    pub(super) fn end_statement(&mut self) {
        let dangling = matches!(
            self.levels[0].state,
            FromState::Expect | FromState::Alias | FromState::IndexHint
        );
        if self.collect && (self.depth != 0 || self.overflow != 0 || dangling) {
            self.tables_unknown = true;
        }
        self.collect = false;
    }

    pub(super) fn finish(self) -> Classified {
        let kind = if self.error || self.multi {
            Kind::Write
        } else if self.statements == 0 {
            Kind::Empty
        } else if self.first_lead == Lead::With && self.with_write {
            Kind::Write
        } else {
            self.first_kind
        };
        let force = if self.multi {
            Some(RouteReason::MultiStatement)
        } else if self.lx.master_hint() {
            Some(RouteReason::Hint)
        } else {
            // Last: the session looks for some reasons (FOUND_ROWS) by name.
            self.force
                .or(self.stored_function.then_some(RouteReason::StoredFunction))
        };
        let tables = (kind == Kind::Read && self.first_lead == Lead::Select && !self.tables_unknown)
            .then_some(self.tables);
        let previous_reads_tables = self.refers_to_previous
            && kind == Kind::Read
            && matches!(self.first_lead, Lead::Select | Lead::With)
            && tables.as_ref().is_none_or(|t| !t.is_empty());
        Classified {
            kind,
            force_master: force,
            sets_user_variable: self.sets_user_variable,
            creates_temp_table: self.creates_temp_table,
            locks_tables: self.locks_tables,
            takes_named_lock: self.takes_named_lock,
            tables,
            multi_statement: self.multi,
            reads_user_variable: self.reads_user_variable,
            unlocks_tables: self.unlocks_tables,
            refers_to_previous: self.refers_to_previous,
            autocommit: self.autocommit.flatten(),
            previous_reads_tables,
        }
    }

    pub(super) fn bump(&mut self) -> Option<Tk<'a>> {
        let t = lex(&mut self.lx)?;
        self.hist = [t.kw, self.hist[0], self.hist[1], self.hist[2]];
        self.toks = [Some(t.tok), self.toks[0], self.toks[1]];
        Some(t)
    }

    pub(super) fn peek(&self) -> Option<Tk<'a>> {
        lex(&mut self.lx.clone())
    }

    pub(super) fn reason(&mut self, r: RouteReason) {
        if self.force.is_none() {
            self.force = Some(r);
        }
    }

    /// Whether the current token is the target of a SET item (`SET @a = 1`):
    /// the head analysis has counted it.
    pub(super) fn set_target(&self) -> bool {
        self.lead == Lead::Set
            && self.paren == 0
            && matches!(tok_of(&self.peek()), Some(Token::Eq | Token::Assign))
    }

    pub(super) fn token(&mut self, t: Tk<'a>) {
        let into = std::mem::take(&mut self.into_list);
        match t.tok {
            Token::Word(_) => self.word(t),
            Token::UserVar(_) => {
                if into {
                    self.sets_user_variable = true;
                    self.into_list = true;
                } else if !self.set_target() {
                    if tok_of(&self.peek()) == Some(Token::Assign) {
                        self.sets_user_variable = true;
                        self.reason(RouteReason::UserVariable);
                    } else {
                        self.reads_user_variable = true;
                    }
                }
            }
            Token::Comma if into => self.into_list = true,
            Token::SysVar(name) if !self.set_target() => self.sysvar(name),
            Token::LParen => {
                // Only words have keywords; a quoted built-in name calls the
                // built-in too (`` `get_lock`('x', 0) ``).
                match self.toks[1] {
                    Some(Token::Quoted(q)) => self.function(quoted_keyword(q)),
                    _ => self.function(self.hist[1]),
                }
                if matches!(self.lead, Lead::Select | Lead::With) && self.calls_routine() {
                    self.stored_function = true;
                }
                self.paren += 1;
            }
            Token::RParen => self.paren = self.paren.saturating_sub(1),
            _ => {}
        }
        if self.collect {
            self.tables_step(t);
        }
    }

    pub(super) fn word(&mut self, t: Tk<'a>) {
        let p1 = self.hist[1];
        if self.lead == Lead::With && self.paren == 0 && t.kw == Kw::Select {
            self.with_main = true;
        }
        match t.kw {
            Kw::Update if p1 == Kw::For => self.reason(RouteReason::LockingRead),
            Kw::Update if self.lead == Lead::With => self.with_write = true,
            Kw::Share if p1 == Kw::For => self.reason(RouteReason::LockingRead),
            Kw::Mode if p1 == Kw::Share && self.hist[2] == Kw::In && self.hist[3] == Kw::Lock => {
                self.reason(RouteReason::LockingRead)
            }
            Kw::For if p1 == Kw::Value && matches!(self.hist[2], Kw::Next | Kw::Previous) => {
                self.reason(RouteReason::Sequence)
            }
            Kw::SqlCalcFoundRows => self.reason(RouteReason::FoundRows),
            Kw::Into if matches!(self.lead, Lead::Select | Lead::With) => {
                self.reason(RouteReason::SelectInto);
                self.into_list = true;
            }
            // INSERT(...) and REPLACE(...) are also string functions.
            Kw::Insert | Kw::Replace
                if self.lead == Lead::With && tok_of(&self.peek()) != Some(Token::LParen) =>
            {
                self.with_write = true
            }
            Kw::Delete if self.lead == Lead::With => self.with_write = true,
            _ => {}
        }
    }

    /// A word followed by `(` (spaces allowed, as with IGNORE_SPACE).
    pub(super) fn function(&mut self, k: Kw) {
        match k {
            Kw::GetLock => {
                self.takes_named_lock = true;
                self.reason(RouteReason::LockFunction);
            }
            Kw::ReleaseLock | Kw::IsFreeLock | Kw::IsUsedLock | Kw::ReleaseAllLocks => {
                self.reason(RouteReason::LockFunction)
            }
            Kw::LastInsertId => self.reason(RouteReason::LastInsertId),
            Kw::FoundRows | Kw::RowCount => {
                self.reason(RouteReason::FoundRows);
                self.refers_to_previous = true;
            }
            Kw::Nextval | Kw::Lastval | Kw::Setval => self.reason(RouteReason::Sequence),
            Kw::MasterPosWait
            | Kw::MasterGtidWait
            | Kw::SourcePosWait
            | Kw::WaitForExecutedGtidSet
            | Kw::WaitUntilSqlThreadAfterGtids => self.reason(RouteReason::SideEffect),
            _ => {}
        }
    }

    /// At `(`: is the token before it the name of a stored function (any
    /// function that is not a built-in)? `db.f(` always is, and so is a
    /// quoted name (`` `f`( ``, `"f"(` under ANSI_QUOTES; a string before `(`
    /// too, in case the mode is ANSI_QUOTES after all). `AGAINST`, `ESCAPE`,
    /// `OF` are keywords only in their place (after `)`, a string, `AS`);
    /// elsewhere MariaDB would call a stored function of that name.
    pub(super) fn calls_routine(&self) -> bool {
        match self.toks[1] {
            Some(Token::Word(w)) => {
                if self.toks[2] == Some(Token::Dot) {
                    return true;
                }
                if self.cte_list() {
                    return false;
                }
                if crate::router::builtins::is_builtin(w) {
                    return false;
                }
                let after = self.toks[2];
                let is = |k: &[u8]| w.eq_ignore_ascii_case(k);
                !((is(b"AGAINST") && after == Some(Token::RParen))
                    || (is(b"ESCAPE") && matches!(after, Some(Token::Str(_))))
                    || (is(b"OF") && self.hist[2] == Kw::As))
            }
            Some(Token::Quoted(q)) => {
                self.toks[2] == Some(Token::Dot)
                    || !unquote_ident(q).is_some_and(|n| crate::router::builtins::is_builtin(n.as_bytes()))
            }
            Some(Token::Str(_)) => true,
            // A CTE's column list: `WITH c(a) AS`, `, d(b) AS` before the
            // main SELECT.
            _ => false,
        }
    }

    /// In `WITH` before the main query, at the top level: a word before `(`
    /// after `WITH`, `RECURSIVE` or `,` names a CTE with a column list.
    pub(super) fn cte_list(&self) -> bool {
        self.lead == Lead::With
            && !self.with_main
            && self.paren == 0
            && (matches!(self.hist[2], Kw::With | Kw::Recursive) || self.toks[2] == Some(Token::Comma))
    }

    pub(super) fn sysvar(&mut self, name: &[u8]) {
        let (_, v) = sysvar_scope(name);
        let is = |x: &[u8]| v.eq_ignore_ascii_case(x);
        if is(b"last_insert_id") || is(b"identity") || is(b"insert_id") {
            self.reason(RouteReason::LastInsertId);
        } else if is(b"warning_count") || is(b"error_count") {
            self.reason(RouteReason::SideEffect);
            self.refers_to_previous = true;
        } else if is(b"last_gtid") {
            self.reason(RouteReason::SideEffect);
        }
    }

    // ---- tables ----

    pub(super) fn tables_step(&mut self, t: Tk<'a>) {
        match t.tok {
            Token::LParen => {
                let (parent, child) = match self.levels[self.depth].state {
                    // A derived table or a parenthesized join.
                    FromState::Expect => (FromState::AfterTable, FromState::Expect),
                    FromState::IndexHint => (FromState::AfterTable, FromState::Off),
                    s => (s, FromState::Off),
                };
                if self.overflow == 0 {
                    self.levels[self.depth].state = parent;
                }
                self.push(Level {
                    state: child,
                    query: child == FromState::Expect,
                });
                return;
            }
            Token::RParen => {
                self.pop();
                return;
            }
            _ => {}
        }
        if self.overflow > 0 {
            return;
        }
        let d = self.depth;
        let mut lvl = self.levels[d];
        match t.kw {
            Kw::Select | Kw::Values => {
                lvl.query = true;
                lvl.state = FromState::Off;
            }
            Kw::Table => {
                lvl.query = true;
                lvl.state = FromState::Expect;
            }
            // CTE names would pass for tables.
            Kw::With => self.tables_unknown = true,
            _ => lvl.state = self.advance_from(lvl, t),
        }
        self.levels[d] = lvl;
    }

    pub(super) fn give_up(&mut self) -> FromState {
        self.tables_unknown = true;
        FromState::Off
    }

    pub(super) fn advance_from(&mut self, lvl: Level, t: Tk<'a>) -> FromState {
        match lvl.state {
            FromState::Off => match t.kw {
                Kw::From | Kw::Join if lvl.query => FromState::Expect,
                _ => FromState::Off,
            },
            FromState::Expect => match t.tok {
                Token::Word(_) | Token::Quoted(_) => match t.kw {
                    Kw::Dual => FromState::AfterTable,
                    Kw::Lateral => self.give_up(),
                    _ => self.table_name(t.tok),
                },
                _ => self.give_up(),
            },
            FromState::Alias => match t.tok {
                Token::Word(_) | Token::Quoted(_) | Token::Str(_) => FromState::AfterTable,
                _ => self.give_up(),
            },
            FromState::AfterTable => match t.tok {
                Token::Comma => FromState::Expect,
                Token::Quoted(_) | Token::Str(_) => FromState::AfterTable,
                Token::Word(_) => match t.kw {
                    Kw::As => FromState::Alias,
                    Kw::Join | Kw::StraightJoin => FromState::Expect,
                    Kw::On | Kw::Using => FromState::Cond,
                    Kw::Use | Kw::Force | Kw::Ignore => FromState::IndexHint,
                    // FOR UPDATE/SHARE ends the query; FOR SYSTEM_TIME ... may
                    // hold FROM x TO y.
                    Kw::For if kw_of(&self.peek()) == Kw::SystemTime => self.give_up(),
                    Kw::For => FromState::Off,
                    Kw::From => self.give_up(),
                    Kw::Window if self.window_clause() => FromState::Off,
                    k if ends_from(k) => FromState::Off,
                    // An alias, a join modifier (LEFT, NATURAL, ...), PARTITION.
                    _ => FromState::AfterTable,
                },
                _ => self.give_up(),
            },
            FromState::IndexHint => match t.kw {
                Kw::Index | Kw::Key | Kw::For | Kw::Join | Kw::Order | Kw::Group | Kw::By => {
                    FromState::IndexHint
                }
                _ => self.give_up(),
            },
            FromState::Cond => match t.tok {
                Token::Comma => FromState::Expect,
                Token::Word(_) => match t.kw {
                    Kw::Join | Kw::StraightJoin => FromState::Expect,
                    Kw::For => FromState::Off,
                    Kw::From => self.give_up(),
                    Kw::Window if self.window_clause() => FromState::Off,
                    k if ends_from(k) => FromState::Off,
                    _ => FromState::Cond,
                },
                _ => FromState::Cond,
            },
        }
    }

    /// `WINDOW w AS (...)` (not an alias named `window`).
    pub(super) fn window_clause(&self) -> bool {
        let mut la = self.lx.clone();
        matches!(tok_of(&lex(&mut la)), Some(Token::Word(_) | Token::Quoted(_)))
            && kw_of(&lex(&mut la)) == Kw::As
    }

    /// A table reference starting with `first`: `t` or `db.t`.
    pub(super) fn table_name(&mut self, first: Token<'a>) -> FromState {
        match tok_of(&self.peek()) {
            // JSON_TABLE(...) and other table functions.
            Some(Token::LParen) => return self.give_up(),
            Some(Token::Dot) => {
                self.bump();
                match tok_of(&self.peek()) {
                    Some(second @ (Token::Word(_) | Token::Quoted(_))) => {
                        self.bump();
                        self.record(first, Some(second));
                    }
                    _ => return self.give_up(),
                }
            }
            _ => self.record(first, None),
        }
        FromState::AfterTable
    }

    pub(super) fn record(&mut self, a: Token<'_>, b: Option<Token<'_>>) {
        // A dot inside a quoted name would read as `db.table`.
        let Some(mut name) = ident_name(a).filter(|n| !n.contains('.')) else {
            self.tables_unknown = true;
            return;
        };
        if let Some(b) = b {
            let Some(b) = ident_name(b).filter(|n| !n.contains('.')) else {
                self.tables_unknown = true;
                return;
            };
            name.push('.');
            name.push_str(&b);
        }
        if !self.tables.contains(&name) {
            self.tables.push(name);
        }
    }

    pub(super) fn push(&mut self, l: Level) {
        if self.overflow == 0 && self.depth + 1 < MAX_DEPTH {
            self.depth += 1;
            self.levels[self.depth] = l;
        } else {
            self.overflow += 1;
            self.tables_unknown = true;
        }
    }

    pub(super) fn pop(&mut self) {
        if self.overflow > 0 {
            self.overflow -= 1;
        } else if self.depth > 0 {
            self.depth -= 1;
        } else {
            self.tables_unknown = true;
        }
    }
}
