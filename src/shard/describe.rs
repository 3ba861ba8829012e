//! What to prepare on a backend so that the server itself describes a prepared statement on
//! a sharded table (parameter count and definitions, result columns): the client's text with
//! every name of a sharded table replaced by its first sub-table, placeholders kept.
//!
//! The names are replaced in the text (token locations), not by rendering the AST, so the
//! server sees exactly the client's statement otherwise. A name is replaced wherever it
//! appears as an identifier (`FROM post_reply`, `post_reply.tid`, `db.post_reply`), which
//! keeps qualified column references consistent; a column or alias spelled like the
//! sharded table would be renamed too (the server then reports an unknown column).

//!
//! Also: the cache of result column definitions learned that way ([`DescriptionCache`]),
//! and the renaming of a sub-table to its logical table in a column definition
//! ([`logical_names`]), so no sub-table's name reaches a client.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use sqlparser::tokenizer::Token;

use super::rule::ShardRules;
use super::text::{tokenize, Source};
use crate::protocol::packets::read_lenenc;

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

/// A column definition (result set or PREPARE answer) with `table` and `org_table` naming
/// a sub-table of a sharded table (`post_reply_2`) renamed to the logical table
/// (`post_reply`): what the server names for the unsharded statement. A table alias the
/// client chose (`table` = `p`) is kept. `None` when nothing is renamed (or the payload is
/// malformed), so the definition can be sent as it is.
pub fn logical_names(def: &[u8], rules: &ShardRules) -> Option<Vec<u8>> {
    // catalog, schema, table, org_table, name, org_name, then the fixed fields.
    let mut fields: [&[u8]; 6] = [&[]; 6];
    let mut at = 0usize;
    for f in fields.iter_mut() {
        let (len, n) = read_lenenc(def.get(at..)?)?;
        let start = at.checked_add(n)?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        *f = def.get(start..end)?;
        at = end;
    }
    // A temporary table's column (DISTINCT or GROUP BY of a BIT, …) has no org_table;
    // its `table` is the name the statement gave, the sub-table's where sluice wrote it.
    let temporary = fields[3].is_empty();
    let logical = logical_table(fields[1], fields[if temporary { 2 } else { 3 }], rules)?.as_bytes();
    let mut out = Vec::with_capacity(def.len());
    for (i, f) in fields.iter().enumerate() {
        let renamed =
            ((i == 3 && !temporary) || (i == 2 && (temporary || fields[2] == fields[3]))).then_some(logical);
        put_lenenc_bytes(&mut out, renamed.unwrap_or(f));
    }
    out.extend_from_slice(def.get(at..)?);
    Some(out)
}

/// A length-encoded string, appended to `out`.
fn put_lenenc_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let n = s.len() as u64;
    match n {
        0..=0xfa => out.push(n as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    out.extend_from_slice(s);
}

/// The logical table whose sub-table `schema.org_table` is, if it is one, spelled as the
/// server spells the sub-table (its name without `_N`: under `lower_case_table_names` the
/// server's own case).
fn logical_table<'a>(schema: &[u8], org_table: &'a [u8], rules: &ShardRules) -> Option<&'a str> {
    let (schema, org_table) = (
        std::str::from_utf8(schema).ok()?,
        std::str::from_utf8(org_table).ok()?,
    );
    let (table, digits) = org_table.rsplit_once('_')?;
    // `ShardRule::sub_table`'s spelling of a shard number: no sign, no leading zero.
    let canonical = digits.bytes().all(|c| c.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    let n: u32 = digits.parse().ok().filter(|_| canonical)?;
    let rule = rules.get(schema, table)?;
    (n < rule.shards).then_some(table)
}

/// Whether the word UNION appears in `sql` (outside identifiers; a string or comment
/// holding it also counts): a union's result columns are the server's merge of its
/// branches' types, so the merged result takes them from the server's description. A
/// false positive only costs a description.
pub fn has_union(sql: &str) -> bool {
    has_word(sql, b"union")
}

/// Whether `sql` may hold a join (the word `JOIN`, or a comma-join, which the server
/// plans, and so describes, through other paths than one table's: a join with ORDER BY
/// and LIMIT sorts through a temporary table whose columns carry other flags and
/// origins). A false positive only costs a description.
pub fn has_join(sql: &str) -> bool {
    has_word(sql, b"join") || has_word(sql, b"straight_join")
}

/// Why a statement reading `parts` sub-tables would not be answered as the server answers
/// it on one table, if so: a join whose rows are ordered (`ordered`: ORDER BY without
/// grouping or DISTINCT), or a subquery (which the server may run as a semi-join) with
/// ORDER BY, grouping or DISTINCT (`grouped`). Whether the server goes through a
/// temporary table for them depends on the join order it picks for the tables' sizes,
/// and that table changes the result's column flags, origins and types and clips
/// fixed-decimal DOUBLEs: the parts, on tables a fraction of the size, pick otherwise.
/// (Grouped joins are described by the server itself, see `describe`, and matched the
/// reference in every test so far.)
pub fn plan_dependent_join(sql: &str, parts: usize, ordered: bool, grouped: bool) -> Option<String> {
    if parts < 2 {
        return None;
    }
    let subquery = count_word(sql, b"select") > 1 && !has_union(sql);
    let join = has_join(sql) && ordered;
    let semi = subquery && (ordered || grouped || has_word(sql, b"order"));
    (join || semi).then(|| {
        "sluice: a join with ORDER BY, or a subquery with ORDER BY, GROUP BY or DISTINCT, across \
         shards is not supported (the server's result columns depend on the join order it picks \
         for one table's size)"
            .to_string()
    })
}

fn count_word(sql: &str, word: &[u8]) -> usize {
    let b = sql.as_bytes();
    b.windows(word.len())
        .enumerate()
        .filter(|(i, w)| {
            w.eq_ignore_ascii_case(word)
                && (*i == 0 || !ident(b[i - 1]))
                && b.get(i + word.len()).is_none_or(|&c| !ident(c))
        })
        .count()
}

/// Whether `sql` may hold a LIMIT (a false positive only leaves FOUND_ROWS() alone).
pub fn has_limit(sql: &str) -> bool {
    has_word(sql, b"limit")
}

/// Whether `sql` may aggregate without GROUP BY (an aggregate's name and no word
/// `GROUP`): a one-part plan's merge does not see it, and after it the server's
/// FOUND_ROWS() is 1 or, when its optimizer finds the WHERE impossible, the count of the
/// statement before. A false positive only leaves FOUND_ROWS() unanswered.
pub fn may_aggregate_without_group_by(sql: &str) -> bool {
    const AGGREGATES: [&[u8]; 18] = [
        b"count",
        b"sum",
        b"min",
        b"max",
        b"avg",
        b"group_concat",
        b"bit_and",
        b"bit_or",
        b"bit_xor",
        b"std",
        b"stddev",
        b"stddev_pop",
        b"stddev_samp",
        b"variance",
        b"var_pop",
        b"var_samp",
        b"json_arrayagg",
        b"json_objectagg",
    ];
    // One pass over the words (this runs for every SELECT on one sub-table).
    let mut aggregate = false;
    for w in sql.as_bytes().split(|&c| !ident(c)) {
        if w.eq_ignore_ascii_case(b"group") {
            return false;
        }
        aggregate = aggregate || AGGREGATES.iter().any(|a| w.eq_ignore_ascii_case(a));
    }
    aggregate
}

/// A byte of an unquoted identifier.
fn ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

fn has_word(sql: &str, word: &[u8]) -> bool {
    let b = sql.as_bytes();
    b.windows(word.len()).enumerate().any(|(i, w)| {
        w.eq_ignore_ascii_case(word)
            && (i == 0 || !ident(b[i - 1]))
            && b.get(i + word.len()).is_none_or(|&c| !ident(c))
    })
}

/// Most statements a cache holds; past it the cache starts again empty (a workload with
/// more distinct statements than that pays a description per statement, never unbounded
/// memory).
const CACHE_CAPACITY: usize = 1024;

/// Result column definitions the server gave for original statements (the client's
/// text with the sharded table named by sub-table 0), keyed by the current database,
/// the text and a context hash chosen by the session (what else the definitions
/// follow: its replayed SETs and handshake collation, a prepared statement's parameter
/// types).
/// Shared by every session of one rule set; read without a lock (one atomic load), and
/// written only when a statement is described. Emptied after DDL through sluice on any
/// table, sharded or not (`ShardRules::forget_columns`: a description may read joined
/// unsharded tables too). DDL run on the server directly (or by a procedure) is not
/// seen: an entry is used for [`DESCRIPTION_TTL`] at most, so a changed length or flag
/// reaches clients within that time.
#[derive(Debug, Clone, Default)]
pub(crate) struct DescriptionCache(Arc<ArcSwap<HashMap<u64, Arc<Entry>>>>);

#[derive(Debug)]
struct Entry {
    db: Option<String>,
    sql: String,
    ctx: u64,
    columns: Arc<[Bytes]>,
    learned: Instant,
}

/// How long a learned description is trusted (DDL outside sluice).
pub const DESCRIPTION_TTL: Duration = Duration::from_secs(30);

/// The cache is not configuration (as for the column cache).
impl PartialEq for DescriptionCache {
    fn eq(&self, _: &DescriptionCache) -> bool {
        true
    }
}

fn key(db: Option<&str>, sql: &str, ctx: u64) -> u64 {
    let mut h = DefaultHasher::new();
    (db, sql, ctx).hash(&mut h);
    h.finish()
}

impl DescriptionCache {
    pub(crate) fn get(&self, db: Option<&str>, sql: &str, ctx: u64) -> Option<Arc<[Bytes]>> {
        let map = self.0.load();
        let e = map.get(&key(db, sql, ctx))?;
        let fresh = e.learned.elapsed() < DESCRIPTION_TTL;
        (fresh && e.db.as_deref() == db && e.sql == sql && e.ctx == ctx).then(|| e.columns.clone())
    }

    pub(crate) fn learn(&self, db: Option<&str>, sql: &str, ctx: u64, columns: Arc<[Bytes]>) {
        let k = key(db, sql, ctx);
        let entry = Arc::new(Entry {
            db: db.map(str::to_owned),
            sql: sql.to_owned(),
            ctx,
            columns,
            learned: Instant::now(),
        });
        self.0.rcu(|map| {
            let mut map = if map.len() >= CACHE_CAPACITY {
                HashMap::new()
            } else {
                HashMap::clone(map)
            };
            map.insert(k, entry.clone());
            map
        });
    }

    pub(crate) fn forget_all(&self) {
        self.0.store(Arc::new(HashMap::new()));
    }
}

impl ShardRules {
    /// The result columns learned for `sql` (see [`DescriptionCache`]).
    pub fn described_columns(&self, db: Option<&str>, sql: &str, ctx: u64) -> Option<Arc<[Bytes]>> {
        self.descriptions.get(db, sql, ctx)
    }

    /// Remember the result columns the server gave for `sql`.
    pub fn learn_description(&self, db: Option<&str>, sql: &str, ctx: u64, columns: Arc<[Bytes]>) {
        self.descriptions.learn(db, sql, ctx, columns);
    }
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
    fn unions_are_found_as_words() {
        assert!(has_union("SELECT a FROM t UNION SELECT b FROM u"));
        assert!(has_union("(SELECT 1)union(SELECT 2)"));
        assert!(!has_union("SELECT union_id, reunion FROM t"));
        assert!(!has_union("SELECT 1"));
    }

    #[test]
    fn aggregates_without_group_by_are_found_as_words() {
        assert!(may_aggregate_without_group_by("SELECT SUM(c) FROM t WHERE k = 3"));
        assert!(may_aggregate_without_group_by("select count(*)from t"));
        assert!(!may_aggregate_without_group_by(
            "SELECT k, COUNT(*) FROM t GROUP BY k"
        ));
        assert!(!may_aggregate_without_group_by(
            "SELECT summary, max_id FROM t WHERE k = 1"
        ));
        assert!(may_aggregate_without_group_by(
            "SELECT GROUP_CONCAT(s ORDER BY s) FROM t"
        ));
    }

    /// A column definition: catalog, schema, table, org_table, name, org_name, fixed part.
    fn def(schema: &str, table: &str, org_table: &str, name: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for f in ["def", schema, table, org_table, name, name] {
            put_lenenc_bytes(&mut out, f.as_bytes());
        }
        out.extend_from_slice(&[0x0c, 63, 0, 11, 0, 0, 0, 3, 0x21, 0, 0, 0, 0]);
        out
    }

    #[test]
    fn sub_tables_are_named_by_their_logical_table() {
        let r = rules();
        // No alias: table and org_table are the sub-table's.
        assert_eq!(
            logical_names(&def("test", "post_reply_3", "post_reply_3", "tid"), &r),
            Some(def("test", "post_reply", "post_reply", "tid"))
        );
        // The parts' alias, or the client's own, is kept.
        assert_eq!(
            logical_names(&def("test", "post_reply", "post_reply_0", "tid"), &r),
            Some(def("test", "post_reply", "post_reply", "tid"))
        );
        assert_eq!(
            logical_names(&def("test", "p", "post_reply_1", "tid"), &r),
            Some(def("test", "p", "post_reply", "tid"))
        );
        // A temporary table's column: no org_table, the table as the statement named it.
        assert_eq!(
            logical_names(&def("test", "post_reply_2", "", "b"), &r),
            Some(def("test", "post_reply", "", "b"))
        );
        // Not a sub-table: no shard 4 of 4, not the spelling of a shard number, another
        // database, another table, an expression.
        for d in [
            def("test", "post_reply_4", "post_reply_4", "tid"),
            def("test", "post_reply_01", "post_reply_01", "tid"),
            def("test", "post_reply_+1", "post_reply_+1", "tid"),
            def("other", "post_reply_0", "post_reply_0", "tid"),
            def("test", "post_reply", "post_reply", "tid"),
            def("", "", "", "COUNT(*)"),
        ] {
            assert_eq!(logical_names(&d, &r), None);
        }
        assert_eq!(logical_names(b"\x05abc", &r), None);
    }

    #[test]
    fn descriptions_are_cached_per_database_text_and_context() {
        let r = rules();
        let cols: Arc<[Bytes]> = vec![Bytes::from_static(b"x")].into();
        r.learn_description(Some("test"), "SELECT 1", 7, cols.clone());
        assert_eq!(r.described_columns(Some("test"), "SELECT 1", 7), Some(cols));
        assert_eq!(r.described_columns(Some("test"), "SELECT 1", 8), None);
        assert_eq!(r.described_columns(None, "SELECT 1", 7), None);
        assert_eq!(r.described_columns(Some("test"), "SELECT 2", 7), None);
        // A clone of the rules shares the cache; DDL empties it.
        let clone = r.clone();
        clone.forget_columns();
        assert_eq!(r.described_columns(Some("test"), "SELECT 1", 7), None);
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
