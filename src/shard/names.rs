//! Select-list names: the server names an expression column after the client's own
//! text, which the rendered tree may spell otherwise (`k  +  1` renders `k + 1`).

use sqlparser::ast::{Expr, Ident, SelectItem, SetExpr, Statement};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use super::text::Source;

/// The server names a select-list expression after the text the client wrote (`k  +  1`,
/// `SELECT ?` gives a column `?`); the rendered tree spells it otherwise (`k + 1`), and a
/// substituted parameter would be named after its value: such an item gets the client's
/// own text as its alias. Column references keep their names (the server names them by
/// the column), as do items whose rendering is the client's text. `tokens` are the
/// substituted tokens (a parameter's tokens carry its placeholder's location).
pub(super) fn name_items_as_written(
    stmt: &mut Statement,
    tokens: &[TokenWithSpan],
    src: &Source<'_>,
    placeholder_at: &[Location],
) {
    let Statement::Query(q) = stmt else { return };
    let SetExpr::Select(sel) = q.body.as_mut() else {
        return;
    };
    // Expression spans of sqlparser 0.64 do not always start where the item does
    // (`CAST(x AS CHAR)` starts at x): the items are found on the tokens.
    let Some(starts) = item_starts(tokens) else {
        return;
    };
    if starts.len() != sel.projection.len() {
        return;
    }
    for (item, start) in sel.projection.iter_mut().zip(starts) {
        let SelectItem::UnnamedExpr(e) = item else {
            continue;
        };
        // A column, also in parentheses (`( k )` is named `k`).
        let mut inner = &*e;
        while let Expr::Nested(x) = inner {
            inner = x;
        }
        if matches!(inner, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            continue;
        }
        let Some(end) = item_end(tokens, start) else {
            continue;
        };
        // A string, TRUE, FALSE or NULL is named by its value, on the server as in the
        // rendering; one the client wrote as `?` by that text.
        let key = |l: &Location| (l.line, l.column);
        let bound = placeholder_at
            .iter()
            .any(|p| key(p) >= key(&start) && key(p) < key(&end));
        if !bound && named_by_value(e) {
            continue;
        }
        let Some(text) = src
            .offset(start)
            .zip(src.offset(end))
            .and_then(|(a, b)| src.text.get(a..b))
        else {
            continue;
        };
        // Longer names the server cuts (aliases it would refuse): left as they were.
        if text.chars().count() > MAX_ITEM_NAME || e.to_string() == text {
            continue;
        }
        *item = SelectItem::ExprWithAlias {
            expr: e.clone(),
            alias: Ident::with_quote('`', text),
        };
    }
}

/// Where each select-list item of a statement that starts with `SELECT` begins (its
/// first token after the modifiers, or after the comma before it); `None` for other
/// shapes (`(SELECT …)`, `WITH`).
fn item_starts(tokens: &[TokenWithSpan]) -> Option<Vec<Location>> {
    use sqlparser::keywords::Keyword as K;
    let mut it = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .peekable();
    match &it.next()?.token {
        Token::Word(w) if w.keyword == K::SELECT && w.quote_style.is_none() => {}
        _ => return None,
    }
    while let Some(t) = it.peek() {
        match &t.token {
            Token::Word(w)
                if w.quote_style.is_none()
                    && matches!(
                        w.keyword,
                        K::DISTINCT
                            | K::ALL
                            | K::DISTINCTROW
                            | K::HIGH_PRIORITY
                            | K::STRAIGHT_JOIN
                            | K::SQL_SMALL_RESULT
                            | K::SQL_BIG_RESULT
                            | K::SQL_BUFFER_RESULT
                            | K::SQL_NO_CACHE
                            | K::SQL_CALC_FOUND_ROWS
                    ) =>
            {
                it.next();
            }
            _ => break,
        }
    }
    let mut starts = vec![it.peek()?.span.start];
    let mut depth = 0u32;
    for t in it {
        // The first token after a comma starts the next item, a parenthesis included.
        if let Some(last) = starts.last_mut().filter(|l| l.line == 0) {
            *last = t.span.start;
        }
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return None,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => starts.push(Location::new(0, 0)),
            Token::Word(w)
                if depth == 0
                    && w.quote_style.is_none()
                    && matches!(w.keyword, K::FROM | K::INTO | K::UNION | K::EXCEPT | K::INTERSECT) =>
            {
                break
            }
            _ => {}
        }
    }
    starts.iter().all(|l| l.line != 0).then_some(starts)
}

/// A literal the server names by its value rather than by the client's text: a string
/// (`'a'`, `N'a'`, `_latin1'a'`, in parentheses), a literal after a unary `+` (which the
/// server drops), TRUE, FALSE and NULL (named in capitals however written). Every other literal
/// is named by its text (`x'42'`, `b'01'`, `- 1`, `date '2020-01-01'`), which the
/// rendering may spell otherwise (`X'42'`, `-1`, `DATE '2020-01-01'`).
fn named_by_value(e: &Expr) -> bool {
    use sqlparser::ast::{UnaryOperator, Value};
    match e {
        Expr::Value(v) => matches!(
            v.value,
            Value::SingleQuotedString(_)
                | Value::DoubleQuotedString(_)
                | Value::NationalStringLiteral(_)
                | Value::Boolean(_)
                | Value::Null
        ),
        Expr::Prefixed { value, .. } => named_by_value(value),
        Expr::Nested(expr) => named_by_value(expr),
        // The server names `+ 1` after its operand (`1`), which the rendering `+1` gets too.
        Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => matches!(expr.as_ref(), Expr::Value(_)) || named_by_value(expr),
        _ => false,
    }
}

/// Select-list names longer than this are not given the client's text as an alias.
const MAX_ITEM_NAME: usize = 64;

/// Where the select-list item starting at `start` ends: the end of its last token before
/// a `,`, `)` or clause keyword at its own parenthesis depth (expression spans of sqlparser
/// 0.64 stop short of a function call's closing parenthesis).
fn item_end(tokens: &[TokenWithSpan], start: Location) -> Option<Location> {
    use sqlparser::keywords::Keyword as K;
    let mut depth = 0u32;
    let mut end = None;
    let at = (start.line, start.column);
    for t in tokens
        .iter()
        .skip_while(|t| (t.span.start.line, t.span.start.column) < at)
    {
        match &t.token {
            Token::Whitespace(_) => continue,
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::Comma | Token::SemiColon | Token::EOF if depth == 0 => break,
            Token::Word(w)
                if depth == 0
                    && w.quote_style.is_none()
                    && matches!(
                        w.keyword,
                        K::FROM
                            | K::INTO
                            | K::WHERE
                            | K::GROUP
                            | K::HAVING
                            | K::ORDER
                            | K::LIMIT
                            | K::UNION
                            | K::WINDOW
                            | K::FOR
                            | K::LOCK
                            | K::EXCEPT
                            | K::INTERSECT
                    ) =>
            {
                break
            }
            _ => {}
        }
        end = Some(t.span.end);
    }
    end
}
