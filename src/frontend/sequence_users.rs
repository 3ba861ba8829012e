//! Tables whose writes change a sequence's `LASTVAL()` on the connection
//! without the statement's text saying so: a column `DEFAULT NEXTVAL(s)`
//! (or one reading `LASTVAL`/`SETVAL`), or a trigger calling them. An INSERT
//! into such a table leaves session state on the backend connection, so the
//! session is pinned like one that calls `NEXTVAL` itself; otherwise the
//! next session borrowing the connection would read this one's
//! `LASTVAL(s)`, and this one would lose it.
//!
//! Which tables those are is read from the master's `information_schema`
//! per schema, on a side connection (the session's own keeps its
//! diagnostics area and `FOUND_ROWS()`), and cached: per session without a
//! lock, behind a process-wide cache filled once per schema. Any statement
//! through sluice that may change definitions (DDL, procedures, dynamic SQL)
//! empties both; a definition changed elsewhere is seen within `TTL`.
//! A lookup that fails counts as "every table of the schema" (conservative).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a schema's answer is trusted.
pub const TTL: Duration = Duration::from_secs(10);

/// The tables of one schema, as read at `at`.
#[derive(Debug, Clone)]
pub struct Known {
    /// `None`: not known, every table counts.
    tables: Arc<Option<HashSet<String>>>,
    at: Instant,
}

impl Known {
    pub fn new(tables: Option<HashSet<String>>) -> Known {
        Known {
            tables: Arc::new(tables),
            at: Instant::now(),
        }
    }

    fn fresh(&self, now: Instant) -> bool {
        now.duration_since(self.at) < TTL
    }

    /// Some table of the schema (or, unknown, maybe any) uses sequences.
    pub fn any(&self) -> bool {
        self.tables.as_ref().as_ref().is_none_or(|t| !t.is_empty())
    }

    pub fn is_known(&self) -> bool {
        self.tables.is_some()
    }

    pub fn uses_sequences(&self, table: &str) -> bool {
        match &*self.tables {
            Some(t) => t.contains(table),
            None => true,
        }
    }
}

/// The process-wide cache (in `Shared`).
#[derive(Debug, Default)]
pub struct SequenceUsers {
    schemas: Mutex<HashMap<String, Known>>,
    /// Bumped whenever the cache is emptied; sessions compare it (a load)
    /// before trusting their own copies.
    generation: AtomicU64,
}

impl SequenceUsers {
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn get(&self, schema: &str) -> Option<Known> {
        let now = Instant::now();
        let m = self.schemas.lock().ok()?;
        m.get(schema).filter(|k| k.fresh(now)).cloned()
    }

    /// Store what was read, unless the cache was emptied since `generation`
    /// (the answer may predate the change).
    pub fn put(&self, schema: &str, known: Known, generation: u64) {
        if let Ok(mut m) = self.schemas.lock() {
            if self.generation() == generation {
                m.insert(schema.to_owned(), known);
            }
        }
    }

    /// Definitions may have changed through sluice.
    pub fn forget_all(&self) {
        if let Ok(mut m) = self.schemas.lock() {
            m.clear();
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// A session's own copies (no lock per statement).
#[derive(Debug, Default)]
pub struct Local {
    generation: u64,
    schemas: HashMap<String, Known>,
}

impl Local {
    /// The session's copy for `schema`, if still good.
    pub fn get(&mut self, schema: &str, shared: &SequenceUsers) -> Option<Known> {
        let g = shared.generation();
        if g != self.generation {
            self.schemas.clear();
            self.generation = g;
            return None;
        }
        self.schemas
            .get(schema)
            .filter(|k| k.fresh(Instant::now()))
            .cloned()
    }

    pub fn put(&mut self, schema: &str, known: Known) {
        self.schemas.insert(schema.to_owned(), known);
    }
}

/// One value: `<count>:<name>\0<name>…`, the tables of `schema` with a
/// column default or a trigger that calls a sequence function.
pub fn lookup_sql(schema: &str) -> String {
    let s = schema.replace('\\', "\\\\").replace('\'', "\\'");
    format!(
        "SELECT CONCAT(COUNT(*), ':', IFNULL(GROUP_CONCAT(t SEPARATOR '\\0'), '')) FROM (\
         SELECT TABLE_NAME AS t FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{s}' AND \
         (COLUMN_DEFAULT LIKE '%nextval(%' OR COLUMN_DEFAULT LIKE '%lastval(%' OR COLUMN_DEFAULT LIKE '%setval(%') \
         UNION SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = '{s}' AND \
         (ACTION_STATEMENT LIKE '%nextval%' OR ACTION_STATEMENT LIKE '%lastval%' OR ACTION_STATEMENT LIKE '%setval%' \
         OR ACTION_STATEMENT LIKE '%next%value%for%' OR ACTION_STATEMENT LIKE '%previous%value%for%')) u"
    )
}

/// The answer of `lookup_sql`; `None` when it cannot be trusted (cut short
/// by the session's `group_concat_max_len`, malformed).
pub fn parse(value: &str) -> Option<HashSet<String>> {
    let (count, names) = value.split_once(':')?;
    let count: usize = count.parse().ok()?;
    let set: HashSet<String> = match names {
        "" => HashSet::new(),
        n => n.split('\0').map(str::to_owned).collect(),
    };
    (set.len() == count).then_some(set)
}

/// The table a write statement writes, as far as the text shows it.
#[derive(Debug, PartialEq, Eq)]
pub enum Written<'a> {
    /// One table: (schema if written, name).
    One(Option<Cow<'a, str>>, Cow<'a, str>),
    /// An INSERT/REPLACE/UPDATE/DELETE/LOAD DATA whose table this does not
    /// read (multi-table UPDATE/DELETE, a comment before the table, …).
    Unknown,
    /// Not one of those statements: no column default or trigger runs
    /// (procedures, dynamic SQL and multi-statements are pinned anyway).
    NotDml,
}

/// The target of `INSERT|REPLACE [mods] [INTO] t`, `UPDATE [mods] t`,
/// `DELETE [mods] FROM t`, `LOAD DATA … INTO TABLE t`.
pub fn written_table(sql: &[u8]) -> Written<'_> {
    use super::kill::{Lexer, Tok};
    let toks: Vec<_> = Lexer::new(sql).take(64).collect();
    let word = |i: usize| match toks.get(i) {
        Some((Tok::Word(w), _, _)) => std::str::from_utf8(w).ok(),
        _ => None,
    };
    let is = |i: usize, w: &str| word(i).is_some_and(|x| x.eq_ignore_ascii_case(w));
    let Some(first) = word(0) else {
        // `/*!… INSERT …*/`: the server runs what the comment holds.
        return match toks.first() {
            Some((Tok::Executable, _, _)) => Written::Unknown,
            _ => Written::NotDml,
        };
    };
    let (skip, single_after): (&[&str], bool) = match first.to_ascii_uppercase().as_str() {
        "INSERT" | "REPLACE" => (
            &["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"],
            false,
        ),
        "UPDATE" => (&["LOW_PRIORITY", "IGNORE"], true),
        "DELETE" => (&["LOW_PRIORITY", "QUICK", "IGNORE", "FROM"], true),
        "LOAD" => {
            // LOAD DATA|XML [LOW_PRIORITY|CONCURRENT] [LOCAL] INFILE 'f' [REPLACE|IGNORE] INTO TABLE t
            match (1..toks.len()).find(|&i| is(i, "TABLE") && is(i - 1, "INTO")) {
                Some(i) => return name_at(sql, &toks, i + 1, false),
                None => return Written::Unknown,
            }
        }
        _ => return Written::NotDml,
    };
    let mut i = 1;
    while skip.iter().any(|w| is(i, w)) {
        i += 1;
    }
    name_at(sql, &toks, i, single_after)
}

/// The (possibly qualified) table name starting at token `i`. With
/// `single`, what follows must end a single-table reference (a multi-table
/// UPDATE/DELETE names several).
fn name_at<'a>(
    sql: &'a [u8],
    toks: &[(super::kill::Tok<'a>, usize, usize)],
    i: usize,
    single: bool,
) -> Written<'a> {
    use super::kill::Tok;
    let ident = |i: usize| -> Option<Cow<'a, str>> {
        let (t, start, end) = *toks.get(i)?;
        match t {
            Tok::Word(w) => std::str::from_utf8(w).ok().map(Cow::Borrowed),
            Tok::Quoted
                if sql.get(start) == Some(&b'`') && end >= start + 2 && sql.get(end - 1) == Some(&b'`') =>
            {
                let inner = std::str::from_utf8(&sql[start + 1..end - 1]).ok()?;
                Some(match inner.contains("``") {
                    true => Cow::Owned(inner.replace("``", "`")),
                    false => Cow::Borrowed(inner),
                })
            }
            _ => None,
        }
    };
    let Some(a) = ident(i) else {
        return Written::Unknown;
    };
    let (db, table, next) = match toks.get(i + 1) {
        Some((Tok::Punct(b'.'), _, _)) => match ident(i + 2) {
            Some(t) => (Some(a), t, i + 3),
            None => return Written::Unknown,
        },
        _ => (None, a, i + 1),
    };
    if single {
        let ends = match toks.get(next) {
            None => true,
            Some((Tok::Punct(b';'), _, _)) => true,
            Some((Tok::Word(w), _, _)) => ["SET", "WHERE", "ORDER", "LIMIT", "PARTITION", "RETURNING"]
                .iter()
                .any(|k| w.eq_ignore_ascii_case(k.as_bytes())),
            _ => false,
        };
        if !ends {
            return Written::Unknown;
        }
    }
    Written::One(db, table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_tables() {
        use Written::*;
        let one =
            |db: Option<&str>, t: &str| One(db.map(|d| Cow::Owned(d.to_owned())), Cow::Owned(t.to_owned()));
        assert_eq!(written_table(b"INSERT INTO ts (x) VALUES (1)"), one(None, "ts"));
        assert_eq!(
            written_table(b"insert ignore d.`t``x` values (1)"),
            one(Some("d"), "t`x")
        );
        assert_eq!(
            written_table(b"REPLACE LOW_PRIORITY INTO `d`.t SET x = 1"),
            one(Some("d"), "t")
        );
        assert_eq!(written_table(b"UPDATE t SET x = DEFAULT"), one(None, "t"));
        assert_eq!(written_table(b"UPDATE a, b SET a.x = b.x"), Unknown);
        assert_eq!(written_table(b"UPDATE a JOIN b USING (id) SET x = 1"), Unknown);
        assert_eq!(written_table(b"DELETE FROM t WHERE id = 1"), one(None, "t"));
        assert_eq!(written_table(b"DELETE a FROM a JOIN b"), Unknown);
        assert_eq!(
            written_table(b"LOAD DATA LOCAL INFILE 'f' REPLACE INTO TABLE d.t FIELDS TERMINATED BY ','"),
            one(Some("d"), "t")
        );
        assert_eq!(written_table(b"/* c */ INSERT INTO t VALUES (1)"), one(None, "t"));
        assert_eq!(written_table(b"SELECT 1"), NotDml);
        assert_eq!(written_table(b"EXECUTE s"), NotDml);
        assert_eq!(written_table(b"/*!INSERT INTO t VALUES (1)*/"), Unknown);
        assert_eq!(written_table(b"GET DIAGNOSTICS @n = NUMBER"), NotDml);
        assert_eq!(written_table(b"INSERT"), Unknown);
    }

    #[test]
    fn answers_parse_or_count_as_unknown() {
        assert_eq!(parse("0:"), Some(HashSet::new()));
        let two = parse("2:a\0b c").expect("two");
        assert!(two.contains("a") && two.contains("b c"));
        // Cut short by group_concat_max_len: the count disagrees.
        assert_eq!(parse("3:a\0b"), None);
        assert_eq!(parse("x"), None);
        assert_eq!(parse("1:"), None);
        assert!(lookup_sql("d'b").contains("'d\\'b'"));
    }

    #[test]
    fn emptied_cache_invalidates_sessions_and_late_answers() {
        let shared = SequenceUsers::default();
        let mut local = Local::default();
        let g = shared.generation();
        shared.put("db", Known::new(Some(HashSet::from(["t".to_owned()]))), g);
        local.put("db", shared.get("db").expect("cached"));
        assert!(local.get("db", &shared).is_some_and(|k| k.uses_sequences("t")));
        shared.forget_all();
        assert!(local.get("db", &shared).is_none());
        assert!(shared.get("db").is_none());
        // An answer read before the change is not stored.
        shared.put("db", Known::new(None), g);
        assert!(shared.get("db").is_none());
        assert!(Known::new(None).uses_sequences("any"));
    }
}
