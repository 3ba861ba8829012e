//! Writing a prepared statement's parameter values into SQL text, without ever escaping
//! client bytes in a character set sluice does not model.
//!
//! The server reads a statement's string literals in `character_set_client`; in the
//! multi-byte character sets GBK, Big5, SJIS, CP932 (…) the byte `0x5C` (`\`) can be the
//! second byte of a character, so escaping a value as if it were UTF-8 (`E4 B8 AD 5C` →
//! `… 5C 5C`) lets its last character swallow the escape and the quote after it: the next
//! parameter then runs as SQL. So a string value is written as an escaped literal only
//! when that is exact in every character set a client can use, and otherwise as hex:
//!
//! * ASCII without `\` or NUL: `'…'` with quotes doubled. The lead bytes of every multi-byte
//!   client character set are ≥ 0x80, so such bytes are single characters in all of them,
//!   and a doubled quote means one quote whatever `sql_mode` says.
//! * Otherwise `_cs X'…'` with `cs` = `character_set_client`: the same bytes in the same
//!   character set and, when `character_set_connection` is the same and
//!   `collation_connection` is its default collation, the same collation and coercibility
//!   as the parameter (MariaDB gives an introduced literal its character set's default
//!   collation, not the connection's).
//! * When the introducer form is not exact but the client character set is UTF-8 and the
//!   value valid UTF-8, an escaped literal (UTF-8 continuation bytes are all ≥ 0x80, so
//!   escaping is exact there), unless `NO_BACKSLASH_ESCAPES` is on and the value needs a
//!   backslash.
//! * Anything else is refused (error 1235) with a sentence that says what to change.
//!
//! BLOB-typed parameters are binary strings in MariaDB whatever the character set:
//! `_binary X'…'`. Numbers are written from their decoded value (never from client text),
//! DECIMAL text is checked digit by digit, temporal values (decoded from their binary
//! form) become typed literals (`DATE'…'`, `TIMESTAMP'…'`, `TIME'…'`) with fractional
//! digits only when the value has a fraction, as the server's parameter has.

use sqlparser::tokenizer::{Span, Token, TokenWithSpan};

use super::plan::Refusal;

/// A value bound to a `?` placeholder of a prepared statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A character string in `character_set_client` (VARCHAR, STRING, … and long data).
    Bytes(Vec<u8>),
    /// A BLOB-typed parameter: a binary string.
    Blob(Vec<u8>),
    /// A character string that is not ASCII, in a client character set other than UTF-8:
    /// never placed by its bytes (see `literal::param_literal`).
    Foreign(Vec<u8>),
    /// DECIMAL / NEWDECIMAL: the client's text, checked when written.
    Decimal(Vec<u8>),
    /// A DATE, DATETIME/TIMESTAMP or TIME parameter, decoded.
    Temporal(Temporal),
}

/// A temporal parameter as the binary protocol carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporal {
    Date {
        year: u16,
        month: u8,
        day: u8,
    },
    DateTime {
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        micro: u32,
    },
    Time {
        negative: bool,
        hours: u64,
        minute: u8,
        second: u8,
        micro: u32,
    },
}

/// The session's character set settings, as far as writing string values needs them.
/// [`Charset::default`] knows nothing: only ASCII strings without `\` or NUL can be bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Charset {
    /// `character_set_client`.
    pub client: Option<String>,
    /// `_client X'…'` is exactly the parameter: `character_set_connection` equals the
    /// client's and `collation_connection` is its default collation.
    pub introducer_exact: bool,
    /// `sql_mode` has NO_BACKSLASH_ESCAPES.
    pub no_backslash_escapes: bool,
    /// The most bytes a character of `character_set_client` takes (0: unknown).
    pub client_maxlen: u32,
}

impl Charset {
    /// From `@@character_set_client`, `@@character_set_connection`, `@@collation_connection`,
    /// the connection character set's default collation, `@@sql_mode` and the client
    /// character set's MAXLEN.
    pub fn from_session(
        client: &str,
        connection: &str,
        collation: &str,
        default_collation: &str,
        sql_mode: &str,
        client_maxlen: u32,
    ) -> Charset {
        let name_ok = !client.is_empty() && client.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        Charset {
            client: name_ok.then(|| client.to_ascii_lowercase()),
            introducer_exact: name_ok
                && client.eq_ignore_ascii_case(connection)
                && collation.eq_ignore_ascii_case(default_collation),
            no_backslash_escapes: sql_mode.to_ascii_uppercase().contains("NO_BACKSLASH_ESCAPES"),
            client_maxlen,
        }
    }

    /// Whether the server splits valid UTF-8 statement text into the same tokens as sluice's
    /// UTF-8 lexer: the client character set is UTF-8, or one byte per character (then no
    /// byte ≥ 0x80 can hide a `\` or a quote). Not so in GBK, Big5, SJIS, CP932, …, where
    /// `E4 B8 AD 5C` is two characters, the second ending in the byte of `\`.
    pub fn lexes_like_utf8(&self) -> bool {
        self.utf8_client() || self.client_maxlen == 1
    }

    pub(crate) fn utf8_client(&self) -> bool {
        matches!(self.client.as_deref(), Some("utf8mb4" | "utf8mb3" | "utf8"))
    }
}

/// Whether writing `v` needs the session's [`Charset`] (a string that is not plain ASCII).
pub fn needs_charset(v: &ParamValue) -> bool {
    matches!(v, ParamValue::Bytes(b) if !plain_ascii(b))
}

/// An upper bound on the bytes `v` takes once written into the SQL text.
pub(crate) fn written_len(v: &ParamValue) -> usize {
    match v {
        ParamValue::Bytes(b) | ParamValue::Foreign(b) | ParamValue::Blob(b) | ParamValue::Decimal(b) => {
            2 * b.len() + 24
        }
        _ => 48,
    }
}

/// ASCII bytes other than `\` and NUL: the same characters in every client character set.
fn plain_ascii(b: &[u8]) -> bool {
    b.iter().all(|&c| c.is_ascii() && c != b'\\' && c != 0)
}

/// Appends the tokens of `param` (standing at `span`) to `out`.
pub(crate) fn render(
    param: &ParamValue,
    cs: &Charset,
    span: Span,
    out: &mut Vec<TokenWithSpan>,
) -> Result<(), Refusal> {
    let mut push = |tok: Token| out.push(TokenWithSpan::new(tok, span));
    match param {
        ParamValue::Null => push(Token::make_keyword("NULL")),
        ParamValue::Int(v) if *v < 0 => negative(&mut push, v.unsigned_abs().to_string()),
        ParamValue::Int(v) => push(Token::Number(v.to_string(), false)),
        ParamValue::UInt(v) => push(Token::Number(v.to_string(), false)),
        ParamValue::Float(f) => {
            if !f.is_finite() {
                return Err(Refusal(
                    "sluice: a NaN or infinite parameter is not a MySQL value".into(),
                ));
            }
            // `{:e}` is the shortest exact text with an exponent: a DOUBLE literal.
            let text = format!("{:e}", f.abs());
            if f.is_sign_negative() {
                negative(&mut push, text);
            } else {
                push(Token::Number(text, false));
            }
        }
        ParamValue::Decimal(text) => {
            let (neg, digits) = decimal_text(text)?;
            if neg {
                negative(&mut push, digits);
            } else {
                push(Token::Number(digits, false));
            }
        }
        ParamValue::Temporal(t) => match temporal_literal(t) {
            Some((kw, text)) => {
                push(Token::make_word(kw, None));
                push(Token::SingleQuotedString(text));
            }
            // Out-of-range fields (a zero date, month 13): the value's text, which the
            // server converts with the same rules as for the parameter. Digits only.
            None => push(Token::SingleQuotedString(temporal_text(t))),
        },
        ParamValue::Blob(b) => {
            push(Token::make_word("_binary", None));
            push(Token::HexStringLiteral(hex(b)));
        }
        ParamValue::Bytes(b) | ParamValue::Foreign(b) => {
            if plain_ascii(b) {
                let s =
                    std::str::from_utf8(b).map_err(|_| Refusal("sluice: internal: ASCII check".into()))?;
                push(Token::SingleQuotedString(s.replace('\'', "''")));
            } else if let (true, Some(client)) = (cs.introducer_exact, &cs.client) {
                push(Token::make_word(&format!("_{client}"), None));
                push(Token::HexStringLiteral(hex(b)));
            } else if let (true, Ok(s)) = (cs.utf8_client(), std::str::from_utf8(b)) {
                if cs.no_backslash_escapes && s.contains(['\\', '\0']) {
                    return Err(Refusal(
                        "sluice: a string parameter with a backslash or NUL on a sharded table is not supported while \
                         sql_mode has NO_BACKSLASH_ESCAPES and collation_connection is not the default \
                         collation of character_set_client"
                            .into(),
                    ));
                }
                push(Token::SingleQuotedString(escape(s)));
            } else {
                return Err(Refusal(format!(
                    "sluice: cannot bind a non-ASCII string parameter on a sharded table safely with \
                     character_set_client {} unless character_set_connection is the same and \
                     collation_connection is its default collation (SET NAMES {0} does that)",
                    cs.client.as_deref().unwrap_or("unknown")
                )));
            }
        }
    }
    Ok(())
}

/// `(-x)`: parenthesized so that no rendering can glue two minus signs into a comment.
fn negative(push: &mut impl FnMut(Token), digits: String) {
    push(Token::LParen);
    push(Token::Minus);
    push(Token::Number(digits, false));
    push(Token::RParen);
}

fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(2 * b.len());
    for &x in b {
        s.push(char::from(DIGITS[usize::from(x >> 4)]));
        s.push(char::from(DIGITS[usize::from(x & 15)]));
    }
    s
}

/// The raw text (between single quotes) of a string literal holding `value`, escaped for
/// MySQL's default `sql_mode` (backslash escapes on): `'` → `''`, `\` → `\\`, NUL → `\0`.
/// Exact for UTF-8 text only (see the module comment).
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    for c in value.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out
}

/// The most digits a DECIMAL literal keeps exact (more make the server read a DOUBLE).
const MAX_DECIMAL_DIGITS: usize = 65;

/// A DECIMAL parameter's text as `(negative, digits[.digits])`, or a refusal when it is
/// not a plain decimal number.
fn decimal_text(text: &[u8]) -> Result<(bool, String), Refusal> {
    let refuse = || {
        Refusal(
            "sluice: a DECIMAL parameter on a sharded table must be a plain decimal number \
             (digits, an optional sign and decimal point, at most 65 digits)"
                .into(),
        )
    };
    let (neg, body) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let (int, frac) = match body.iter().position(|&c| c == b'.') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, &[][..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if (int.is_empty() && frac.is_empty())
        || !digits(int)
        || !digits(frac)
        || int.len() + frac.len() > MAX_DECIMAL_DIGITS
    {
        return Err(refuse());
    }
    let mut s = String::with_capacity(body.len() + 1);
    s.push_str(if int.is_empty() {
        "0"
    } else {
        std::str::from_utf8(int).map_err(|_| refuse())?
    });
    if !frac.is_empty() {
        s.push('.');
        s.push_str(std::str::from_utf8(frac).map_err(|_| refuse())?);
    }
    Ok((neg, s))
}

/// `.ffffff` when the value has a fraction (the server's parameter then has 6 decimals).
fn fraction(micro: u32) -> String {
    if micro == 0 {
        String::new()
    } else {
        format!(".{micro:06}")
    }
}

/// The typed literal of a temporal value whose fields are in range.
fn temporal_literal(t: &Temporal) -> Option<(&'static str, String)> {
    let date_ok = |y: u16, m: u8, d: u8| y <= 9999 && (1..=12).contains(&m) && (1..=31).contains(&d);
    match *t {
        Temporal::Date { year, month, day } => date_ok(year, month, day).then(|| ("DATE", temporal_text(t))),
        Temporal::DateTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            micro,
        } => (date_ok(year, month, day) && hour < 24 && minute < 60 && second < 60 && micro < 1_000_000)
            .then(|| ("TIMESTAMP", temporal_text(t))),
        Temporal::Time {
            hours,
            minute,
            second,
            micro,
            ..
        } => (hours <= 838 && minute < 60 && second < 60 && micro < 1_000_000)
            .then(|| ("TIME", temporal_text(t))),
    }
}

/// `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.ffffff]`, `[-]HH:MM:SS[.ffffff]`: digits only.
fn temporal_text(t: &Temporal) -> String {
    match *t {
        Temporal::Date { year, month, day } => format!("{year:04}-{month:02}-{day:02}"),
        Temporal::DateTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            micro,
        } => format!(
            "{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}{}",
            fraction(micro)
        ),
        Temporal::Time {
            negative,
            hours,
            minute,
            second,
            micro,
        } => format!(
            "{}{hours:02}:{minute:02}:{second:02}{}",
            if negative { "-" } else { "" },
            fraction(micro)
        ),
    }
}
