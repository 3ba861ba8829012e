//! Tokens with their keyword, and what a statement's first words say (its
//! head): reads, writes, SHOW, transactions, SET.

use super::*;

#[derive(Debug, Clone, Copy)]
pub(super) struct Tk<'a> {
    pub(super) tok: Token<'a>,
    pub(super) kw: Kw,
}

pub(super) fn lex<'a>(lx: &mut Tokens<'a>) -> Option<Tk<'a>> {
    let tok = lx.next()?;
    let kw = match tok {
        Token::Word(w) => keyword(w),
        _ => Kw::None,
    };
    Some(Tk { tok, kw })
}

pub(super) fn kw_of(t: &Option<Tk<'_>>) -> Kw {
    t.map_or(Kw::None, |t| t.kw)
}

pub(super) fn tok_of<'a>(t: &Option<Tk<'a>>) -> Option<Token<'a>> {
    t.map(|t| t.tok)
}

/// The end of a statement: end of text, `;`, or a token that never ends.
pub(super) fn is_end(t: &Option<Tk<'_>>) -> bool {
    matches!(tok_of(t), None | Some(Token::Semi) | Some(Token::Unterminated))
}

// ---------------------------------------------------------------------------
// The head of one statement: its kind and the effects its first words show

/// How a statement starts, for the rules that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lead {
    /// SELECT, `(SELECT`, VALUES, TABLE.
    Select,
    With,
    Set,
    Other,
}

pub(super) struct Head {
    pub(super) kind: Kind,
    pub(super) lead: Lead,
    pub(super) force: Option<RouteReason>,
    pub(super) creates_temp_table: bool,
    pub(super) locks_tables: bool,
    pub(super) unlocks_tables: bool,
    pub(super) sets_user_variable: bool,
    pub(super) refers_to_previous: bool,
    /// Some(value) when the statement sets autocommit (value None: unknown).
    pub(super) autocommit: Option<Option<bool>>,
}

pub(super) fn analyze_head(mut lx: Tokens<'_>) -> Head {
    let mut h = Head {
        kind: Kind::Write,
        lead: Lead::Other,
        force: None,
        creates_temp_table: false,
        locks_tables: false,
        unlocks_tables: false,
        sets_user_variable: false,
        refers_to_previous: false,
        autocommit: None,
    };
    let Some(mut t) = lex(&mut lx) else {
        h.kind = Kind::Empty;
        return h;
    };
    if t.tok == Token::LParen {
        while t.tok == Token::LParen {
            match lex(&mut lx) {
                Some(n) => t = n,
                None => return h,
            }
        }
        if !matches!(t.kw, Kw::Select | Kw::Values | Kw::Table | Kw::With) {
            return h;
        }
    }
    let lx = &mut lx;
    match t.kw {
        Kw::Select | Kw::Values | Kw::Table => {
            h.kind = Kind::Read;
            h.lead = Lead::Select;
        }
        Kw::With => {
            h.kind = Kind::Read;
            h.lead = Lead::With;
        }
        Kw::Show => {
            h.kind = Kind::Read;
            show(lx, &mut h);
        }
        Kw::Describe | Kw::Desc | Kw::Explain if kw_of(&lex(lx)) != Kw::Analyze => {
            h.kind = Kind::Read;
        }
        Kw::Help => h.kind = Kind::Read,
        Kw::Set => {
            h.lead = Lead::Set;
            set_statement(lx, &mut h);
        }
        Kw::Use => {
            let name = match tok_of(&lex(lx)) {
                Some(Token::Word(w)) => std::str::from_utf8(w).ok().map(str::to_owned),
                Some(Token::Quoted(q)) => unquote_ident(q),
                _ => None,
            };
            if let Some(name) = name {
                if !name.is_empty() && is_end(&lex(lx)) {
                    h.kind = Kind::Use(name);
                }
            }
        }
        Kw::Begin => {
            let n = lex(lx);
            if is_end(&n) || (kw_of(&n) == Kw::Work && is_end(&lex(lx))) {
                h.kind = Kind::Begin { read_only: false };
            }
        }
        Kw::Start if kw_of(&lex(lx)) == Kw::Transaction => {
            if let Some(read_only) = start_transaction(lx) {
                h.kind = Kind::Begin { read_only };
            }
        }
        Kw::Commit if plain_transaction_end(lx) => h.kind = Kind::Commit,
        Kw::Rollback if plain_transaction_end(lx) => h.kind = Kind::Rollback,
        Kw::Lock => {
            if matches!(kw_of(&lex(lx)), Kw::Table | Kw::Tables | Kw::Instance) {
                h.locks_tables = true;
            }
        }
        Kw::Unlock => {
            if matches!(kw_of(&lex(lx)), Kw::Table | Kw::Tables | Kw::Instance) {
                h.unlocks_tables = true;
            }
        }
        Kw::Backup => match kw_of(&lex(lx)) {
            Kw::Lock => h.locks_tables = true,
            Kw::Unlock => h.unlocks_tables = true,
            _ => {}
        },
        Kw::Flush => {
            // FLUSH TABLES [t, ...] WITH READ LOCK / FOR EXPORT
            let (mut p1, mut p2) = (Kw::None, Kw::None);
            loop {
                let n = lex(lx);
                if is_end(&n) {
                    break;
                }
                let k = kw_of(&n);
                if (k == Kw::Lock && p1 == Kw::Read && p2 == Kw::With) || (k == Kw::Export && p1 == Kw::For) {
                    h.locks_tables = true;
                }
                (p2, p1) = (p1, k);
            }
        }
        Kw::Create => {
            let mut n = lex(lx);
            if kw_of(&n) == Kw::Or {
                n = lex(lx);
                if kw_of(&n) == Kw::Replace {
                    n = lex(lx);
                }
            }
            if kw_of(&n) == Kw::Temporary {
                h.creates_temp_table = true;
            }
        }
        Kw::Get => {
            let mut n = lex(lx);
            if matches!(kw_of(&n), Kw::Current | Kw::Stacked) {
                n = lex(lx);
            }
            if kw_of(&n) == Kw::Diagnostics {
                h.refers_to_previous = true;
                // `GET DIAGNOSTICS @n = NUMBER`, `... CONDITION 1 @e =
                // MYSQL_ERRNO`: the targets are user variables (in a stored
                // program they may be local ones, but this is a client's).
                loop {
                    let t = lex(lx);
                    if is_end(&t) {
                        break;
                    }
                    if matches!(tok_of(&t), Some(Token::UserVar(_))) {
                        h.sets_user_variable = true;
                    }
                }
            }
        }
        _ => {}
    }
    h
}

/// After SHOW: statements whose answer differs per server or is about the
/// previous statement.
pub(super) fn show(lx: &mut Tokens<'_>, h: &mut Head) {
    let mut t = lex(lx);
    if matches!(kw_of(&t), Kw::Full | Kw::All | Kw::Global | Kw::Session) {
        t = lex(lx);
    }
    match kw_of(&t) {
        Kw::Master
        | Kw::Binlog
        | Kw::Binary
        | Kw::Slave
        | Kw::Slaves
        | Kw::Replica
        | Kw::Replicas
        | Kw::Relaylog
        | Kw::Processlist => h.force = Some(RouteReason::SideEffect),
        Kw::Warnings | Kw::Errors | Kw::Count | Kw::Profile | Kw::Profiles => {
            h.force = Some(RouteReason::SideEffect);
            h.refers_to_previous = true;
        }
        _ => {}
    }
}

/// After `START TRANSACTION`: Some(read_only) if only valid characteristics follow.
pub(super) fn start_transaction(lx: &mut Tokens<'_>) -> Option<bool> {
    let (mut ro, mut rw) = (false, false);
    let mut t = lex(lx);
    while !is_end(&t) {
        match kw_of(&t) {
            Kw::Read => match kw_of(&lex(lx)) {
                Kw::Only => ro = true,
                Kw::Write => rw = true,
                _ => return None,
            },
            Kw::With => {
                if kw_of(&lex(lx)) != Kw::Consistent || kw_of(&lex(lx)) != Kw::Snapshot {
                    return None;
                }
            }
            _ => return None,
        }
        t = lex(lx);
        if tok_of(&t) == Some(Token::Comma) {
            t = lex(lx);
            if is_end(&t) {
                return None;
            }
        } else if !is_end(&t) {
            return None;
        }
    }
    Some(ro && !rw)
}

/// After COMMIT/ROLLBACK: `[WORK] [AND NO CHAIN] [[NO] RELEASE]` and nothing else.
pub(super) fn plain_transaction_end(lx: &mut Tokens<'_>) -> bool {
    let mut t = lex(lx);
    if kw_of(&t) == Kw::Work {
        t = lex(lx);
    }
    if kw_of(&t) == Kw::And {
        // AND CHAIN starts the next transaction at once: not an end.
        if kw_of(&lex(lx)) != Kw::No || kw_of(&lex(lx)) != Kw::Chain {
            return false;
        }
        t = lex(lx);
    }
    if kw_of(&t) == Kw::No {
        if kw_of(&lex(lx)) != Kw::Release {
            return false;
        }
        t = lex(lx);
    } else if kw_of(&t) == Kw::Release {
        t = lex(lx);
    }
    is_end(&t)
}

/// `@@global.x` → (true, "x"); `@@session.x`, `@@local.x`, `@@x` → (false, "x").
pub(super) fn sysvar_scope(name: &[u8]) -> (bool, &[u8]) {
    for (prefix, global) in [
        (&b"global."[..], true),
        (b"persist.", true),
        (b"persist_only.", true),
        (b"session.", false),
        (b"local.", false),
    ] {
        if name.len() > prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix) {
            return (global, &name[prefix.len()..]);
        }
    }
    (false, name)
}

/// A boolean system variable's literal value.
pub(super) fn bool_value(t: Tk<'_>) -> Option<bool> {
    let v: &[u8] = match t.tok {
        Token::Number(n) => n,
        Token::Word(w) => w,
        Token::Str(s) => s.get(1..s.len().saturating_sub(1))?,
        _ => return None,
    };
    const TRUE: [&[u8]; 3] = [b"1", b"on", b"true"];
    const FALSE: [&[u8]; 3] = [b"0", b"off", b"false"];
    if TRUE.iter().any(|x| x.eq_ignore_ascii_case(v)) {
        Some(true)
    } else if FALSE.iter().any(|x| x.eq_ignore_ascii_case(v)) {
        Some(false)
    } else {
        None
    }
}

/// After SET: the scope of the whole statement, and autocommit.
pub(super) fn set_statement(lx: &mut Tokens<'_>, h: &mut Head) {
    let (mut global, mut user, mut session) = (false, false, false);
    let mut t = lex(lx);
    if kw_of(&t) == Kw::Role {
        h.kind = Kind::SessionSet(SetScope::Role);
        return;
    }
    let master_only = match kw_of(&t) {
        Kw::Transaction | Kw::Statement | Kw::Password => true,
        Kw::Default => kw_of(&lex(&mut lx.clone())) == Kw::Role,
        _ => false,
    };
    if master_only {
        h.kind = Kind::SessionSet(SetScope::MasterOnly);
        return;
    }
    'items: loop {
        let Some(first) = t else {
            return; // `SET` alone or `SET a=1,`: not valid, a Write
        };
        // A session variable this item assigns (for autocommit).
        let mut var: Option<&[u8]> = None;
        match first.tok {
            Token::UserVar(_) => {
                user = true;
                h.sets_user_variable = true;
            }
            Token::SysVar(name) => {
                let (g, rest) = sysvar_scope(name);
                if g {
                    global = true;
                } else {
                    session = true;
                    var = Some(rest);
                }
            }
            Token::Word(w) => match first.kw {
                Kw::Global | Kw::Persist | Kw::PersistOnly => {
                    global = true;
                    if kw_of(&lex(&mut lx.clone())) == Kw::Transaction {
                        break 'items;
                    }
                }
                Kw::Session | Kw::Local => {
                    session = true;
                    let n = lex(lx);
                    match n.map(|n| (n.tok, n.kw)) {
                        Some((_, Kw::Transaction)) => break 'items,
                        Some((Token::Word(v), _)) => var = Some(v),
                        Some((Token::Quoted(q), _)) => var = q.get(1..q.len().saturating_sub(1)),
                        _ => return,
                    }
                }
                Kw::Names | Kw::Character | Kw::Charset => session = true,
                _ => {
                    session = true;
                    var = Some(w);
                }
            },
            Token::Quoted(q) => {
                session = true;
                var = q.get(1..q.len().saturating_sub(1));
            }
            _ => return,
        }
        let mut next = lex(lx);
        if var.is_some_and(|v| v.eq_ignore_ascii_case(b"autocommit"))
            && matches!(tok_of(&next), Some(Token::Eq | Token::Assign))
        {
            let value = lex(lx);
            next = lex(lx);
            let alone = is_end(&next) || tok_of(&next) == Some(Token::Comma);
            h.autocommit = Some(if alone { value.and_then(bool_value) } else { None });
        }
        // On to the next item, after a comma outside parentheses.
        let mut depth = 0usize;
        loop {
            match tok_of(&next) {
                None | Some(Token::Semi) | Some(Token::Unterminated) => break 'items,
                Some(Token::LParen) => depth += 1,
                Some(Token::RParen) => depth = depth.saturating_sub(1),
                Some(Token::Comma) if depth == 0 => break,
                _ => {}
            }
            next = lex(lx);
        }
        t = lex(lx);
    }
    h.kind = Kind::SessionSet(if global {
        SetScope::Global
    } else if user {
        SetScope::UserVariable {
            also_session: session,
        }
    } else {
        SetScope::Session
    });
}
