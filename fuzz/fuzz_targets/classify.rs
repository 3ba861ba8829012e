//! Statement classification on arbitrary bytes (UTF-8 or not): the lexer,
//! `classify` under every `sql_mode` reading, `classify_any_mode`,
//! `split_statements` and the word-level helpers.
//!
//! Properties checked: nothing panics and every loop ends; tokens and split
//! statements are slices of the input, in order; the documented shape of a
//! classification holds (tables only for reads; a multi-statement is a write
//! forced to the master); `classify_any_mode` never makes a statement more
//! replica-eligible than the default reading.
#![no_main]

use libfuzzer_sys::fuzz_target;

use sluice::router::classify::{
    classify, classify_any_mode, classify_with, split_statements, Classified, Kind,
};
use sluice::router::lexer::{first_word, skip_space_and_comments, unquote_ident, LexOptions, Token, Tokens};
use sluice::router::plan::RouteReason;

/// Is `part` a slice of `whole`? Returns its offset. (An empty `part` may
/// be a static `&[]`, and is accepted as offset 0.)
fn offset_in(whole: &[u8], part: &[u8]) -> usize {
    if part.is_empty() {
        return 0;
    }
    let start = part.as_ptr() as usize;
    let base = whole.as_ptr() as usize;
    assert!(
        start >= base && start + part.len() <= base + whole.len(),
        "not a slice of the input"
    );
    start - base
}

fn check_shape(c: &Classified) {
    if c.tables.is_some() {
        assert_eq!(c.kind, Kind::Read, "tables reported for a non-read");
    }
    if c.multi_statement {
        assert_eq!(c.kind, Kind::Write);
        assert_eq!(c.force_master, Some(RouteReason::MultiStatement));
    }
}

fn lex(sql: &[u8], opts: LexOptions) {
    let mut lx = Tokens::with_options(sql, opts);
    let mut last = 0;
    let mut count = 0usize;
    while let Some(t) = lx.next() {
        count += 1;
        assert!(count <= sql.len() + 1, "the lexer does not advance");
        let off = lx.offset();
        assert!(
            off >= last && off <= sql.len(),
            "lexer offset went back or past the end"
        );
        last = off;
        match t {
            Token::Word(s) | Token::Number(s) | Token::UserVar(s) | Token::SysVar(s) | Token::Str(s) => {
                offset_in(sql, s);
            }
            Token::Quoted(s) => {
                offset_in(sql, s);
                let _ = unquote_ident(s);
            }
            _ => {}
        }
    }
    let _ = lx.master_hint();
}

fuzz_target!(|sql: &[u8]| {
    let modes = [
        LexOptions::default(),
        LexOptions {
            ansi_quotes: true,
            no_backslash_escapes: false,
            ..LexOptions::default()
        },
        LexOptions {
            ansi_quotes: false,
            no_backslash_escapes: true,
            ..LexOptions::default()
        },
        LexOptions {
            ansi_quotes: true,
            no_backslash_escapes: true,
            ..LexOptions::default()
        },
    ];
    for opts in modes {
        lex(sql, opts);
        check_shape(&classify_with(sql, opts));
    }

    let default = classify(sql);
    check_shape(&default);
    let any = classify_any_mode(sql);
    check_shape(&any);
    if any.replica_eligible() {
        assert!(
            default.replica_eligible(),
            "any-mode reading is laxer than the default"
        );
    }

    let mut end = 0;
    for stmt in split_statements(sql) {
        assert!(!stmt.is_empty(), "empty statement from split");
        let at = offset_in(sql, stmt);
        assert!(at >= end, "split statements overlap or go back");
        end = at + stmt.len();
        check_shape(&classify(stmt));
    }

    let rest = skip_space_and_comments(sql);
    offset_in(sql, rest);
    let (word, after) = first_word(sql);
    offset_in(sql, after);
    assert!(!word.bytes().any(|b| b.is_ascii_lowercase()));
});
