//! The statement's text and tokens: tokenizing and parsing with the options sluice always
//! uses, mapping token locations back to byte offsets.

use sqlparser::ast::Statement;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserOptions};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

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

/// The number of `?` placeholders of a statement as [`super::plan_prepared`] counts them
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

/// `0x41` is a hex *hybrid* in MariaDB (a number in numeric context: `0x41 + 0` is 65, an
/// INT; `k = 0x05` finds k = 5), `X'41'` a string (`X'41' + 0` is a DOUBLE): the parser
/// reads both as one hex string literal and renders it `X'…'`. A `0x` token becomes a
/// number token of the client's own spelling, which renders as written (and is not read
/// as a literal by routing or the merge: such a key condition reaches every shard).
pub(crate) fn keep_0x_hex(tokens: &mut [TokenWithSpan], src: &Source<'_>) {
    for t in tokens {
        if let Token::HexStringLiteral(h) = &t.token {
            let from_0x = src
                .offset(t.span.start)
                .and_then(|o| src.text.get(o..o + 2))
                .is_some_and(|p| p == "0x");
            if from_0x {
                t.token = Token::Number(format!("0x{h}"), false);
            }
        }
    }
}

/// The deepest expression tree sluice builds, walks, renders and drops for a statement on a
/// sharded table. sqlparser parses a chain `0 + 0 + … + 0` in a loop but builds a tree as
/// deep as the chain, and every later pass over it (walking, `Display`, `Clone`, `Drop`)
/// recurses: 4,000 terms overflowed a worker's stack and ended the process. 1,000 is far
/// beyond any real query (the server's own parser stack is about as deep) and stays well
/// within the 2 MiB of a tokio worker or blocking thread (tested in `tests/limits.rs`).
pub(crate) const MAX_EXPR_DEPTH: usize = 1000;

/// An upper bound on the depth of the expression trees the parser builds from `tokens`,
/// found without parsing: within each level of parentheses (or CASE … END), every operator
/// or keyword token since the last comma may add one level, and each open level adds one.
/// Literals and identifiers add none (they are leaves); commas start a sibling, which
/// does not deepen the tree. Counting every keyword (not only operators) keeps the bound
/// safe for constructs that nest without an operator token, at the cost of counting clause
/// keywords (`FROM`, `WHERE`) too: a few per statement.
pub(crate) fn depth_bound(tokens: &[TokenWithSpan]) -> usize {
    use sqlparser::keywords::Keyword;
    // One counter per open level: tokens that may deepen the tree since the last comma.
    let mut levels: Vec<usize> = vec![0];
    let mut sum = 0usize;
    let mut max = 0usize;
    for t in tokens {
        match &t.token {
            Token::Whitespace(_)
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Placeholder(_)
            | Token::SemiColon
            | Token::EOF => {}
            Token::Word(w) if w.quote_style.is_some() || w.keyword == Keyword::NoKeyword => {}
            Token::Comma => {
                if let Some(top) = levels.last_mut() {
                    sum -= *top;
                    *top = 0;
                }
            }
            Token::LParen | Token::LBracket | Token::LBrace => levels.push(0),
            Token::Word(w) if w.keyword == Keyword::CASE => levels.push(0),
            Token::RParen | Token::RBracket | Token::RBrace => pop(&mut levels, &mut sum),
            Token::Word(w) if w.keyword == Keyword::END => pop(&mut levels, &mut sum),
            _ => {
                if let Some(top) = levels.last_mut() {
                    *top += 1;
                    sum += 1;
                }
            }
        }
        max = max.max(sum + levels.len());
    }
    max
}

/// Closes a level (an unbalanced closer leaves the outermost level open: the parser refuses
/// such text anyway).
fn pop(levels: &mut Vec<usize>, sum: &mut usize) {
    if levels.len() > 1 {
        if let Some(top) = levels.pop() {
            *sum -= top;
        }
    }
}

/// Whether `sql` holds an executable comment (`/*!…*/`, `/*!50700 …*/`, `/*M!…*/`) outside
/// strings and quoted names. MariaDB runs their contents (by version); the parser expands
/// `/*!` whatever its version and drops `/*M!`, so a statement re-rendered from the tree
/// would mean something else.
pub(crate) fn has_executable_comment(sql: &str) -> bool {
    use super::lex::{Kind, Lexer};
    let mut lx = Lexer::new(sql);
    // The lexer reads an executable comment (and an unterminated one) as `Bad`.
    std::iter::from_fn(|| lx.next_tok())
        .any(|t| t.kind == Kind::Bad && sql.get(t.start..t.start + 2) == Some("/*"))
}

/// Whether `sql` names one of the sharded tables as an identifier (not inside a string
/// or a comment), read with the byte lexer (`lex.rs`), without tokenizing into memory: used
/// for statements too large to plan, to tell a refusal (it names a sharded table) from a
/// statement that only mentions one in a literal or comment and goes to the server
/// untouched. What the lexer cannot read (an executable comment, an unterminated string)
/// counts as naming one: such a statement is refused, never sent untouched by mistake.
pub(crate) fn names_table_cheaply(sql: &str, rules: &super::rule::ShardRules) -> bool {
    use super::lex::{Kind, Lexer};
    let mut lx = Lexer::new(sql);
    while let Some(t) = lx.next_tok() {
        let named = match t.kind {
            Kind::Bad => return true,
            Kind::Word => rules.is_table_name(&sql[t.start..t.end]),
            Kind::Quoted => rules.is_table_name(&sql[t.start + 1..t.end - 1].replace("``", "`")),
            _ => false,
        };
        if named {
            return true;
        }
    }
    false
}
