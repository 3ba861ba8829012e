//! The statement's text and tokens: tokenizing and parsing with the options sluice always
//! uses, placeholder substitution, mapping token locations back to byte offsets.

use sqlparser::ast::Statement;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserOptions};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use super::literal::escape;
use super::plan::Refusal;

/// A value bound to a `?` placeholder of a prepared statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A string (or any byte string) parameter.
    Bytes(Vec<u8>),
}

/// Tokenizes with the MySQL dialect, string literals kept byte for byte (no unescaping).
pub(crate) fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>, String> {
    Tokenizer::new(&MySqlDialect {}, sql)
        .with_unescape(false)
        .tokenize_with_location()
        .map_err(|e| e.to_string())
}

/// Parses tokens from [`tokenize`] with the MySQL dialect and unescaping off.
pub(crate) fn parse(tokens: Vec<TokenWithSpan>) -> Result<Vec<Statement>, String> {
    Parser::new(&MySqlDialect {})
        .with_options(ParserOptions::new().with_unescape(false))
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| e.to_string())
}

/// Maps token locations (1-based line, 1-based column in characters) to byte offsets.
pub(crate) struct Source<'a> {
    pub text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> Source<'a> {
    pub(crate) fn new(text: &'a str) -> Source<'a> {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source { text, line_starts }
    }

    /// Byte offset of `loc`, None for an empty or out-of-range location.
    pub(crate) fn offset(&self, loc: Location) -> Option<usize> {
        let line = usize::try_from(loc.line).ok()?.checked_sub(1)?;
        let col = usize::try_from(loc.column).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(line)?;
        let rest = &self.text[start..];
        if col == 0 {
            return Some(start);
        }
        match rest.char_indices().nth(col) {
            Some((i, _)) => Some(start + i),
            None if rest.chars().count() == col => Some(self.text.len()),
            None => None,
        }
    }
}

/// The number of `?` placeholders of a statement as [`super::plan_with_params`] counts them
/// (not inside string literals, quoted names or comments); None when the text cannot be
/// tokenized.
pub fn count_placeholders(sql: &str) -> Option<usize> {
    tokenize(sql).ok().map(|t| placeholders(&t))
}

/// Counts `?` placeholders.
pub(crate) fn placeholders(tokens: &[TokenWithSpan]) -> usize {
    tokens
        .iter()
        .filter(|t| matches!(&t.token, Token::Placeholder(_)))
        .count()
}

/// Replaces each `?` with its parameter's literal, in order. Negative numbers are
/// parenthesized (`(-5)`) so that no rendering can glue two minus signs into a comment.
pub(crate) fn substitute(
    tokens: Vec<TokenWithSpan>,
    params: &[ParamValue],
) -> Result<Vec<TokenWithSpan>, Refusal> {
    let count = placeholders(&tokens);
    if count != params.len() {
        return Err(Refusal(format!(
            "sluice: the statement has {count} placeholders but {} parameters were given",
            params.len()
        )));
    }
    let mut out = Vec::with_capacity(tokens.len() + 4 * params.len());
    let mut next = params.iter();
    for t in tokens {
        let Token::Placeholder(p) = &t.token else {
            out.push(t);
            continue;
        };
        if p != "?" {
            return Err(Refusal(format!("sluice: the placeholder {p} is not supported")));
        }
        let Some(param) = next.next() else {
            return Err(Refusal("sluice: too few parameters".into()));
        };
        let span = t.span;
        let wrap = |tok: Token| TokenWithSpan::new(tok, span);
        match param {
            ParamValue::Null => out.push(wrap(Token::make_keyword("NULL"))),
            ParamValue::Int(v) if *v < 0 => {
                out.push(wrap(Token::LParen));
                out.push(wrap(Token::Minus));
                out.push(wrap(Token::Number(v.unsigned_abs().to_string(), false)));
                out.push(wrap(Token::RParen));
            }
            ParamValue::Int(v) => out.push(wrap(Token::Number(v.to_string(), false))),
            ParamValue::UInt(v) => out.push(wrap(Token::Number(v.to_string(), false))),
            ParamValue::Float(f) => {
                if !f.is_finite() {
                    return Err(Refusal(
                        "sluice: a NaN or infinite parameter is not a MySQL value".into(),
                    ));
                }
                // `{:e}` is the shortest exact text with an exponent: a DOUBLE literal.
                let text = format!("{:e}", f.abs());
                if f.is_sign_negative() {
                    out.push(wrap(Token::LParen));
                    out.push(wrap(Token::Minus));
                    out.push(wrap(Token::Number(text, false)));
                    out.push(wrap(Token::RParen));
                } else {
                    out.push(wrap(Token::Number(text, false)));
                }
            }
            ParamValue::Bytes(b) => match std::str::from_utf8(b) {
                Ok(s) => out.push(wrap(Token::SingleQuotedString(escape(s)))),
                Err(_) => {
                    let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
                    out.push(wrap(Token::HexStringLiteral(hex)));
                }
            },
        }
    }
    Ok(out)
}

/// `0x141` is a valid MySQL hex literal (an implied leading zero) but the parser renders
/// every hex literal as `X'…'`, where an odd digit count is a syntax error: pad it.
pub(crate) fn pad_odd_hex(tokens: &mut [TokenWithSpan], src: &Source<'_>) {
    for t in tokens {
        if let Token::HexStringLiteral(h) = &mut t.token {
            let from_0x = src
                .offset(t.span.start)
                .and_then(|o| src.text.get(o..o + 2))
                .is_some_and(|p| p == "0x");
            if h.len() % 2 == 1 && from_0x {
                h.insert(0, '0');
            }
        }
    }
}
