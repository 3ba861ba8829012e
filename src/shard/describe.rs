//! What to prepare on a backend so that the server itself describes a prepared statement on
//! a sharded table (parameter count and definitions, result columns): the client's text with
//! every name of a sharded table replaced by its first sub-table, placeholders kept.
//!
//! The names are replaced in the text (token locations), not by rendering the AST, so the
//! server sees exactly the client's statement otherwise. A name is replaced wherever it
//! appears as an identifier (`FROM post_reply`, `post_reply.tid`, `db.post_reply`), which
//! keeps qualified column references consistent; a column or alias spelled like the
//! sharded table would be renamed too (the server then reports an unknown column).

use sqlparser::tokenizer::Token;

use super::rule::ShardRules;
use super::text::{tokenize, Source};

/// The statement to prepare on a backend in place of the client's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Describe {
    pub sql: String,
    /// The backend group holding the sub-table named in `sql` (of the first sharded table).
    pub group: usize,
}

/// [`Describe`] for `sql`, or None when no sharded table is named in it (or it cannot be
/// tokenized).
pub fn describe(sql: &str, current_db: Option<&str>, rules: &ShardRules) -> Option<Describe> {
    if rules.is_empty() || !rules.mentioned_in(sql) {
        return None;
    }
    let tokens = tokenize(sql).ok()?;
    let src = Source::new(sql);
    let mut out = String::with_capacity(sql.len() + 8);
    let mut copied = 0;
    let mut group = None;
    // The last two non-whitespace tokens before the current one.
    let mut prev: [Option<&Token>; 2] = [None, None];
    for t in &tokens {
        if matches!(t.token, Token::Whitespace(_)) {
            continue;
        }
        let earlier = prev;
        prev = [Some(&t.token), earlier[0]];
        let Token::Word(w) = &t.token else { continue };
        if !rules.is_table_name(&w.value) {
            continue;
        }
        let db = match earlier {
            [Some(Token::Period), Some(Token::Word(d))] => Some(d.value.as_str()),
            _ => current_db,
        };
        let Some(rule) = db.and_then(|db| rules.get(db, &w.value)) else {
            continue;
        };
        let (a, b) = src.offset(t.span.start).zip(src.offset(t.span.end))?;
        let name = rule.sub_table(0);
        let written = match w.quote_style {
            Some(q) => format!("{q}{}{q}", w.value),
            None => w.value.clone(),
        };
        if sql.get(a..b) != Some(written.as_str()) || a < copied {
            return None;
        }
        out.push_str(&sql[copied..a]);
        match w.quote_style {
            Some(q) => out.push_str(&format!("{q}{name}{q}")),
            None => out.push_str(&name),
        }
        copied = b;
        group.get_or_insert(rule.group_of(0));
    }
    out.push_str(&sql[copied..]);
    Some(Describe {
        sql: out,
        group: group?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::ShardRules;

    fn rules() -> ShardRules {
        let mut r = crate::shard::parse_atlas("test.post_reply.tid.4").expect("rule");
        r.placement = vec![1, 1, 0, 0];
        ShardRules::new(vec![r]).expect("rules")
    }

    #[test]
    fn names_become_the_first_sub_table() {
        let d = describe(
            "SELECT post_reply.id, `post_reply`.tid FROM test.`post_reply` WHERE tid = ? AND subject = 'post_reply ?'",
            Some("test"),
            &rules(),
        )
        .expect("describe");
        assert_eq!(
            d.sql,
            "SELECT post_reply_0.id, `post_reply_0`.tid FROM test.`post_reply_0` WHERE tid = ? AND subject = 'post_reply ?'"
        );
        assert_eq!(d.group, 1);
        let d = describe(
            "INSERT INTO post_reply (id, tid, subject) VALUES (?, ?, '中文')",
            Some("test"),
            &rules(),
        )
        .expect("describe");
        assert_eq!(
            d.sql,
            "INSERT INTO post_reply_0 (id, tid, subject) VALUES (?, ?, '中文')"
        );
    }

    #[test]
    fn other_databases_and_tables_are_left_alone() {
        assert_eq!(
            describe("SELECT ? FROM other.post_reply", Some("test"), &rules()),
            None
        );
        assert_eq!(
            describe("SELECT ? FROM post_reply", Some("other"), &rules()),
            None
        );
        assert_eq!(describe("SELECT ? FROM post_reply", None, &rules()), None);
        assert_eq!(describe("SELECT ? FROM users", Some("test"), &rules()), None);
    }
}
