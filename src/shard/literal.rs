//! Literal values in the AST: recognition, MySQL string unescaping, conversion for
//! placement ([`KeyValue`]) and for HAVING ([`spec::Value`]).

use sqlparser::ast::{Expr, UnaryOperator, Value};

use super::rule::KeyValue;
use super::spec;
use super::ParamValue;

/// A literal as the server reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Int(i128),
    /// Exact decimal text with its sign: `-12.50`.
    Decimal(String),
    /// Approximate number text with its sign: `1.5e3`.
    Float(String),
    /// A string's value, escapes resolved.
    Str(Vec<u8>),
    Null,
}

impl Lit {
    pub(crate) fn key_value(&self) -> KeyValue<'_> {
        match self {
            Lit::Int(n) => KeyValue::Int(*n),
            Lit::Decimal(d) => KeyValue::Decimal(d),
            Lit::Float(f) => KeyValue::Float(f),
            Lit::Str(s) => KeyValue::Str(s),
            Lit::Null => KeyValue::Null,
        }
    }

    /// The merge contract's value of this literal.
    pub(crate) fn to_spec(&self) -> spec::Value {
        match self {
            Lit::Int(n) => {
                if let Ok(v) = i64::try_from(*n) {
                    spec::Value::Int(v)
                } else if let Ok(v) = u64::try_from(*n) {
                    spec::Value::UInt(v)
                } else {
                    spec::Value::Decimal(n.to_string())
                }
            }
            Lit::Decimal(d) => spec::Value::Decimal(d.clone()),
            Lit::Float(f) => spec::Value::Double(f.parse().unwrap_or(f64::NAN)),
            Lit::Str(s) => spec::Value::Bytes(s.clone()),
            Lit::Null => spec::Value::Null,
        }
    }
}

/// The literal `e` is, or None when it is anything else (an expression, a placeholder, a
/// hex or bit literal, a string with a character set introducer).
pub(crate) fn literal(e: &Expr) -> Option<Lit> {
    match e {
        Expr::Nested(inner) => literal(inner),
        Expr::Value(v) => value_literal(&v.value),
        // `_cs X'…'` / `_cs '…'`: its bytes, when they mean what they would in a plain
        // literal of a UTF-8 session (placement hashes bytes): ASCII, or UTF-8 or binary
        // introducers. Others are not read.
        Expr::Prefixed { prefix, value } if prefix.quote_style.is_none() => {
            let bytes = match value.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::HexStringLiteral(h) => unhex(h)?,
                    Value::SingleQuotedString(raw) => unescape(raw, '\''),
                    _ => return None,
                },
                _ => return None,
            };
            let cs = prefix.value.to_ascii_lowercase();
            (bytes.is_ascii() || matches!(cs.as_str(), "_binary" | "_utf8mb4" | "_utf8mb3" | "_utf8"))
                .then_some(Lit::Str(bytes))
        }
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Lit::Int(n) => Some(Lit::Int(n.checked_neg()?)),
            Lit::Decimal(d) => Some(Lit::Decimal(negate_text(&d))),
            Lit::Float(f) => Some(Lit::Float(negate_text(&f))),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => match literal(expr)? {
            l @ (Lit::Int(_) | Lit::Decimal(_) | Lit::Float(_)) => Some(l),
            _ => None,
        },
        _ => None,
    }
}

/// The bytes of an `X'…'` literal's digits (an even number of them).
fn unhex(h: &str) -> Option<Vec<u8>> {
    let b = h.as_bytes();
    if b.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    b.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

fn negate_text(t: &str) -> String {
    match t.strip_prefix('-') {
        Some(rest) => rest.to_string(),
        None => format!("-{t}"),
    }
}

fn value_literal(v: &Value) -> Option<Lit> {
    match v {
        Value::Number(s, false) => number(s),
        Value::SingleQuotedString(raw) | Value::NationalStringLiteral(raw) => {
            Some(Lit::Str(unescape(raw, '\'')))
        }
        Value::DoubleQuotedString(raw) => Some(Lit::Str(unescape(raw, '"'))),
        Value::Boolean(b) => Some(Lit::Int(i128::from(*b))),
        Value::Null => Some(Lit::Null),
        _ => None,
    }
}

/// Classifies a numeric token's text.
pub(crate) fn number(s: &str) -> Option<Lit> {
    let b = s.as_bytes();
    if !b.is_empty() && b.iter().all(u8::is_ascii_digit) {
        return s.parse().ok().map(Lit::Int);
    }
    if s.contains(['e', 'E']) {
        let (m, e) = s.split_once(['e', 'E'])?;
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        return (decimal_shape(m) && !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit()))
            .then(|| Lit::Float(s.to_string()));
    }
    decimal_shape(s).then(|| Lit::Decimal(s.to_string()))
}

fn decimal_shape(s: &str) -> bool {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    (!i.is_empty() || !f.is_empty())
        && i.bytes().all(|c| c.is_ascii_digit())
        && f.bytes().all(|c| c.is_ascii_digit())
}

/// The value of a MySQL string literal from its raw text between the quotes (as the
/// tokenizer keeps it with unescaping off): a doubled quote is one quote; backslash escapes
/// `\0 \' \" \b \n \r \t \Z \\` are resolved, `\%` and `\_` keep their backslash, and any
/// other escaped character stands for itself.
pub(crate) fn unescape(raw: &str, quote: char) -> Vec<u8> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('0') => out.push('\0'),
                Some('b') => out.push('\u{8}'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('Z') => out.push('\u{1a}'),
                Some(k @ ('%' | '_')) => {
                    out.push('\\');
                    out.push(k);
                }
                Some(k) => out.push(k),
                None => out.push('\\'),
            }
        } else if c == quote && chars.peek() == Some(&quote) {
            chars.next();
            out.push(quote);
        } else {
            out.push(c);
        }
    }
    out.into_bytes()
}

/// A non-negative integer literal (ORDER BY / GROUP BY position, LIMIT).
pub(crate) fn unsigned(e: &Expr) -> Option<u64> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(s, false) if s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The literal a prepared statement's parameter stands for when placing rows and routing
/// (its value is never written into SQL: the sub-tables get the parameter itself). None
/// for values whose placement sluice cannot tell: temporal values (as a temporal literal
/// key is not read either), NaN, and strings in a client character set other than UTF-8
/// ([`ParamValue::Foreign`]: the server converts them before comparing).
pub(crate) fn param_literal(v: &ParamValue) -> Option<Lit> {
    match v {
        ParamValue::Null => Some(Lit::Null),
        ParamValue::Int(i) => Some(Lit::Int(i128::from(*i))),
        ParamValue::UInt(u) => Some(Lit::Int(i128::from(*u))),
        ParamValue::Float(f) if f.is_finite() => Some(Lit::Float(format!("{f:e}"))),
        ParamValue::Decimal(t) => {
            let s = std::str::from_utf8(t).ok()?;
            let (neg, body) = match s.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, s.strip_prefix('+').unwrap_or(s)),
            };
            match (number(body)?, neg) {
                (l @ (Lit::Int(_) | Lit::Decimal(_)), false) => Some(l),
                (Lit::Int(n), true) => Some(Lit::Int(-n)),
                (Lit::Decimal(d), true) => Some(Lit::Decimal(format!("-{d}"))),
                _ => None,
            }
        }
        ParamValue::Bytes(b) | ParamValue::Blob(b) => Some(Lit::Str(b.clone())),
        ParamValue::Float(_) | ParamValue::Foreign(_) | ParamValue::Temporal(_) => None,
    }
}

/// The literal `e` stands for: a literal, or a placeholder tagged with its parameter's
/// index (`?3`, see `plan.rs`) whose value `values` holds.
pub(crate) fn literal_or_param(e: &Expr, values: Option<&[ParamValue]>) -> Option<Lit> {
    if let Some(l) = literal(e) {
        return Some(l);
    }
    match e {
        Expr::Nested(inner) => literal_or_param(inner, values),
        Expr::Value(v) => match &v.value {
            Value::Placeholder(tag) => {
                let i: usize = tag.strip_prefix('?')?.parse().ok()?;
                param_literal(values?.get(i)?)
            }
            _ => None,
        },
        _ => None,
    }
}
