//! A memo of the classifier by statement *shape*: the text with its number
//! and string literals blanked out. Applications run the same few statement
//! texts with different values (`SELECT c FROM t WHERE id=42`, `... id=7`),
//! and the classifier's answer for a text does not depend on those values,
//! so one classification serves every text of the same shape. A lookup costs
//! one pass over the bytes and a hash; the classifier costs ~4,000
//! instructions for a point select (callgrind, benches/README.md).
//!
//! **Why a memo hit is exact.** A shape is only made of a plain subset of
//! SQL text (see [`shape_into`]), on which [`super::lexer::Tokens`] splits
//! two texts of the same shape into the same tokens, bytes included, except
//! the bytes inside `Number` and `Str` tokens; and on that subset the
//! lexer's options (ANSI_QUOTES, NO_BACKSLASH_ESCAPES, the server version)
//! change nothing (no `"`, no `\`, no comments). The classifier reads the
//! bytes of a number or a string in one place only: the value of
//! `SET autocommit = ...`, in statements that start with SET, which are never
//! memoized. So for every text of a shape the classifier returns the same
//! [`Classified`], under any session sql_mode. The property test
//! `literals_never_change_the_classification` checks this over a corpus
//! with random literals; a classifier change that starts reading literal
//! values must keep the statements that do out of the memo.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::classify::Classified;

/// Texts longer than this are classified without the memo (a long text is
/// rarely repeated, and its key would be as long).
pub const MAX_SHAPE: usize = 2048;

/// Entries per thread; the memo is emptied when it is full (a workload with
/// more shapes than this pays one classification per miss, as without it).
const CAPACITY: usize = 4096;

/// Bytes of shapes per thread, the other bound: 4,096 long shapes (varying
/// `IN (...)` lists, generated SQL) would hold 8 MiB per session thread, half
/// a GiB on 64 cores. Typical shapes are ~100 bytes, so this rarely binds first.
const MAX_KEY_BYTES: usize = 512 * 1024;

/// Stands for a number literal in a shape (never a byte of the subset).
const NUMBER: u8 = 0x01;
/// Stands for a string literal in a shape.
const STRING: u8 = 0x02;

/// Write the shape of `sql` into `out` (cleared first). `false` when the
/// text is outside the subset the memo may serve, which is: ASCII words
/// (`[A-Za-z0-9_]`), whitespace, `` `quoted identifiers` `` without a
/// doubled backtick, `'strings'` without a backslash or a doubled quote,
/// and the punctuation `( ) , . = * < > + - ! % & | ^ ~ :` (no `--`). No
/// comments, `"`, `\`, `@`, `#`, `/`, `;`, `?`, `$` or bytes >= 0x80
/// outside strings. A run of digits is a number (blanked) unless a `.`
/// touches it (`1.5`, `t.1`: kept as written, which is always exact).
pub fn shape_into(sql: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    if sql.len() > MAX_SHAPE {
        return false;
    }
    let n = sql.len();
    let class = |i: usize| CLASS[usize::from(sql[i])];
    // `sql[copied..i]` is still to be copied as it is: runs of verbatim
    // bytes go to `out` in one copy, when a literal or the end comes.
    let mut copied = 0;
    let mut i = 0;
    while i < n {
        match class(i) {
            LETTER => {
                i += 1;
                while i < n && matches!(class(i), LETTER | DIGIT) {
                    i += 1;
                }
            }
            DIGIT => {
                let start = i;
                while i < n && class(i) == DIGIT {
                    i += 1;
                }
                if i < n && class(i) == LETTER {
                    // A word that starts with digits (`1e5`, `2abc`).
                    while i < n && matches!(class(i), LETTER | DIGIT) {
                        i += 1;
                    }
                } else {
                    let touches_dot = (start > 0 && sql[start - 1] == b'.') || (i < n && sql[i] == b'.');
                    if touches_dot {
                        continue;
                    }
                    out.extend_from_slice(&sql[copied..start]);
                    out.push(NUMBER);
                    copied = i;
                }
            }
            OTHER => i += 1,
            DASH => {
                if i + 1 < n && sql[i + 1] == b'-' {
                    return false;
                }
                i += 1;
            }
            QUOTE => {
                let Some(len) = sql[i + 1..].iter().position(|&b| b == b'\'' || b == b'\\') else {
                    return false;
                };
                let close = i + 1 + len;
                if sql[close] == b'\\' || (close + 1 < n && sql[close + 1] == b'\'') {
                    return false;
                }
                out.extend_from_slice(&sql[copied..i]);
                out.push(STRING);
                i = close + 1;
                copied = i;
            }
            BACKTICK => {
                let Some(len) = sql[i + 1..].iter().position(|&b| b == b'`') else {
                    return false;
                };
                let close = i + 1 + len;
                if close + 1 < n && sql[close + 1] == b'`' {
                    return false;
                }
                i = close + 1;
            }
            _ => return false,
        }
    }
    out.extend_from_slice(&sql[copied..]);
    true
}

// Byte classes of the subset (everything else is `BAD`).
const BAD: u8 = 0;
/// `[A-Za-z_]`
const LETTER: u8 = 1;
const DIGIT: u8 = 2;
/// Whitespace and punctuation other than `-`: kept as written.
const OTHER: u8 = 3;
const DASH: u8 = 4;
const QUOTE: u8 = 5;
const BACKTICK: u8 = 6;

static CLASS: [u8; 256] = {
    let mut t = [BAD; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => LETTER,
            b'0'..=b'9' => DIGIT,
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => OTHER,
            b'(' | b')' | b',' | b'.' | b'=' | b'*' | b'<' | b'>' | b'+' | b'!' | b'%' | b'&' | b'|'
            | b'^' | b'~' | b':' => OTHER,
            b'-' => DASH,
            b'\'' => QUOTE,
            b'`' => BACKTICK,
            _ => BAD,
        };
        i += 1;
    }
    t
};

/// Whether a statement of this shape may be memoized: not a SET (the one
/// kind whose classification reads a literal, `SET autocommit = 0`).
fn memoizable(shape: &[u8]) -> bool {
    let start = shape
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(shape.len());
    let word = &shape[start..];
    let set = word.len() >= 3 && word[..3].eq_ignore_ascii_case(b"SET");
    // (`SETTINGS` is a word that starts with SET, not SET.)
    !set || word
        .get(3)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// One thread's memo (sessions of one runtime thread share it; no lock).
struct Memo {
    map: HashMap<Box<[u8]>, Arc<Classified>, foldhash::fast::RandomState>,
    /// The shape being looked up (reused: no allocation per statement).
    key: Vec<u8>,
    /// Sum of the stored shapes' lengths (bounded by [`MAX_KEY_BYTES`]).
    key_bytes: usize,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo {
        map: HashMap::with_hasher(foldhash::fast::RandomState::default()),
        key: Vec::new(),
        key_bytes: 0,
    });
}

/// `classify(sql)` through this thread's memo: `classify` must give the
/// answer of [`super::classify::classify_with`] (any options) for texts of
/// the memo's subset.
pub fn classified(sql: &[u8], classify: impl FnOnce(&[u8]) -> Classified) -> Arc<Classified> {
    MEMO.with(|m| {
        let Ok(mut m) = m.try_borrow_mut() else {
            return Arc::new(classify(sql));
        };
        let m = &mut *m;
        if !shape_into(sql, &mut m.key) || !memoizable(&m.key) {
            return Arc::new(classify(sql));
        }
        if let Some(c) = m.map.get(&m.key[..]) {
            return c.clone();
        }
        let c = Arc::new(classify(sql));
        if m.map.len() >= CAPACITY || m.key_bytes + m.key.len() > MAX_KEY_BYTES {
            m.map.clear();
            m.key_bytes = 0;
        }
        m.key_bytes += m.key.len();
        m.map.insert(m.key.as_slice().into(), c.clone());
        c
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::classify::{classify, classify_any_mode, classify_with};
    use crate::router::lexer::LexOptions;

    fn shape(s: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        shape_into(s.as_bytes(), &mut out).then_some(out)
    }

    #[test]
    fn literals_are_blanked_and_the_rest_kept() {
        assert_eq!(
            shape("SELECT c FROM sbtest1 WHERE id=42"),
            shape("SELECT c FROM sbtest1 WHERE id=7")
        );
        assert_eq!(shape("SELECT 'a' FROM t"), shape("SELECT 'bcd' FROM t"));
        assert_ne!(shape("SELECT c FROM t1"), shape("SELECT c FROM t2"));
        assert_ne!(shape("SELECT 1 FROM t"), shape("SELECT '1' FROM t"));
        assert_ne!(shape("SELECT 1 FROM t"), shape("SELECT 1  FROM t"));
        // A dot keeps the digits: `1.5` and `t.1` stay as written.
        assert_ne!(shape("SELECT 1.5"), shape("SELECT 2.5"));
        assert_ne!(shape("SELECT t.1 FROM t"), shape("SELECT t.2 FROM t"));
        // Digits inside a word are the word.
        assert_ne!(shape("SELECT a1"), shape("SELECT a2"));
        assert_ne!(shape("SELECT 1e5"), shape("SELECT 2e5"));
        assert_eq!(
            shape("SELECT `a b` FROM `t`"),
            Some(b"SELECT `a b` FROM `t`".to_vec())
        );
    }

    #[test]
    fn text_outside_the_subset_has_no_shape() {
        for s in [
            "SELECT 1 -- c",
            "SELECT 1 /* c */",
            "SELECT 1 # c",
            "SELECT \"a\"",
            "SELECT 'a\\'b'",
            "SELECT 'it''s'",
            "SELECT 'open",
            "SELECT `a``b`",
            "SELECT `open",
            "SELECT @a",
            "SELECT 1; SELECT 2",
            "SELECT ?",
            "SELECT a$",
            "SELECT é",
            "SELECT 4/2",
        ] {
            assert_eq!(shape(s), None, "{s}");
        }
        assert!(
            shape("SELECT 'é;\"/*'").is_some(),
            "anything but a quote or a backslash inside a string"
        );
        assert_eq!(shape(&"x".repeat(MAX_SHAPE + 1)), None);
    }

    #[test]
    fn set_statements_are_not_memoized() {
        let s = |t: &str| shape(t).expect("in the subset");
        assert!(!memoizable(&s("SET autocommit=0")));
        assert!(!memoizable(&s("  set autocommit=1,")));
        assert!(memoizable(&s("SELECT 1")));
        assert!(memoizable(&s("SETTINGS")));
        assert!(memoizable(&s("UPDATE t SET a=1")));
    }

    #[test]
    fn the_memo_answers_as_the_classifier() {
        let a = classified(b"SELECT c FROM memo_t WHERE id=1", classify);
        let b = classified(b"SELECT c FROM memo_t WHERE id=2", |_| unreachable!("a memo hit"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, classify(b"SELECT c FROM memo_t WHERE id=2"));
        // SET is classified every time: `SET autocommit=0` and `=1` share a shape.
        let on = classified(b"SET autocommit=1", classify);
        let off = classified(b"SET autocommit=0", classify);
        assert_ne!(on.autocommit, off.autocommit);
    }

    #[test]
    fn the_memo_stays_within_its_entry_and_byte_bounds() {
        // Long distinct shapes (~1,900 bytes each, under MAX_SHAPE) fill the
        // byte budget long before the entry count.
        let cols: Vec<String> = (0..170).map(|i| format!("column_{i}")).collect();
        let cols = cols.join(",");
        let mut cleared = false;
        for n in 0..400 {
            let sql = format!("SELECT {cols} FROM memo_bound_t{n} WHERE id=1");
            assert!(sql.len() <= MAX_SHAPE);
            classified(sql.as_bytes(), classify);
            MEMO.with(|m| {
                let m = m.borrow();
                assert!(m.key_bytes <= MAX_KEY_BYTES, "{} bytes", m.key_bytes);
                assert_eq!(m.key_bytes, m.map.keys().map(|k| k.len()).sum::<usize>());
                cleared |= m.map.len() < n + 1;
            });
        }
        assert!(cleared, "400 shapes of ~1,900 bytes must overflow the budget");
        // ... and many short ones the entry count.
        for i in 0..CAPACITY + 10 {
            let sql = format!("SELECT c FROM memo_bound_{i} WHERE id=1");
            classified(sql.as_bytes(), classify);
            MEMO.with(|m| assert!(m.borrow().map.len() <= CAPACITY));
        }
    }

    /// Statements of many kinds, literals marked `#n` (number) and `#s`
    /// (string): each is classified with random values there, under every
    /// lexer option, and must classify alike whenever the shapes are equal.
    const CORPUS: &[&str] = &[
        "SELECT c FROM sbtest1 WHERE id=#n",
        "SELECT c FROM sbtest1 WHERE id BETWEEN #n AND #n ORDER BY c",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN #n AND #n",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN #n AND #n ORDER BY c",
        "UPDATE sbtest1 SET k=k+#n WHERE id=#n",
        "UPDATE sbtest1 SET c=#s WHERE id=#n",
        "DELETE FROM sbtest1 WHERE id=#n",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (#n, #n, #s, #s)",
        "SELECT a, b FROM t1 JOIN t2 ON t1.id = t2.id WHERE t1.x = #s LIMIT #n",
        "SELECT * FROM t WHERE a IN (#n, #n, #n) FOR UPDATE",
        "SELECT * FROM t WHERE a = #n LOCK IN SHARE MODE",
        "SELECT GET_LOCK(#s, #n)",
        "SELECT RELEASE_LOCK(#s)",
        "SELECT LAST_INSERT_ID()",
        "SELECT FOUND_ROWS()",
        "SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT #n",
        "SELECT NEXTVAL(s)",
        "SELECT f(#n) FROM t",
        "SELECT db.f(#s)",
        "SELECT * FROM (SELECT a FROM t WHERE b = #n) x",
        "SELECT a FROM t UNION SELECT b FROM u WHERE c = #s",
        "WITH x AS (SELECT #n) SELECT * FROM x",
        "SHOW TABLES",
        "SHOW WARNINGS LIMIT #n",
        "SELECT * FROM t INTO OUTFILE #s",
        "CREATE TEMPORARY TABLE tt (a INT DEFAULT #n)",
        "LOCK TABLES t READ",
        "BEGIN",
        "START TRANSACTION READ ONLY",
        "COMMIT",
        "ROLLBACK",
        "USE db1",
        "CALL p(#n, #s)",
        "PREPARE s FROM #s",
        "EXECUTE IMMEDIATE #s",
        "DO #n",
        "SELECT * FROM t FOR SYSTEM_TIME AS OF #s",
        "SELECT JSON_EXTRACT(#s, #s) FROM t",
        "SELECT * FROM t WHERE a = #s COLLATE utf8mb4_bin",
        "SELECT _utf8mb4#s, X#s, N#s",
        "SELECT * FROM `weird table` WHERE `c` = #n",
        "SELECT a FROM t WHERE b > #n AND c <> #s OR d != #n",
        "SELECT MASTER_GTID_WAIT(#s, #n)",
        "SELECT * FROM t WHERE id = -#n",
        "SELECT #n + #n",
        "SELECT 1.#n, #n.5 FROM t",
        "SET autocommit=#n",
        "SET autocommit=#s",
        "SET SESSION sql_mode=#s",
        "SET NAMES #s",
        "TRUNCATE t",
        "ALTER TABLE t ADD COLUMN x INT DEFAULT #n",
        "SELECT * FROM t WHERE a = #s #s",
        "(SELECT a FROM t WHERE b = #n)",
        "KILL #n",
        "SELECT * FROM t1, t2 AS #s",
    ];

    fn literal(rng: &mut u64, string: bool) -> String {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        let pick = *rng % 12;
        if string {
            let words = [
                "",
                "a",
                "0",
                "1",
                "on",
                "OFF",
                "true",
                "x y",
                "ANSI_QUOTES",
                "utf8mb4",
                ";",
                "*/",
            ];
            format!("'{}'", words[pick as usize])
        } else {
            [
                "0",
                "1",
                "2",
                "42",
                "007",
                "123456789012345678901234567890",
                "9",
                "10",
                "3",
                "99",
                "5",
                "11",
            ][pick as usize]
                .to_owned()
        }
    }

    fn instantiate(template: &str, rng: &mut u64) -> String {
        let mut out = String::new();
        let mut rest = template;
        while let Some(at) = rest.find('#') {
            out.push_str(&rest[..at]);
            let string = rest[at + 1..].starts_with('s');
            out.push_str(&literal(rng, string));
            rest = &rest[at + 2..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn literals_never_change_the_classification() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let modes = [
            LexOptions::default(),
            LexOptions {
                ansi_quotes: true,
                ..LexOptions::default()
            },
            LexOptions {
                no_backslash_escapes: true,
                ..LexOptions::default()
            },
            LexOptions {
                server_version: 101106,
                ..LexOptions::default()
            },
        ];
        let mut memoized = 0;
        for template in CORPUS {
            // The first classification of each shape, as the memo keeps it.
            let mut seen: HashMap<Vec<u8>, Classified> = HashMap::new();
            for _ in 0..50 {
                let text = instantiate(template, &mut rng);
                let Some(key) = shape(&text).filter(|k| memoizable(k)) else {
                    continue;
                };
                let expected = seen.entry(key).or_insert_with(|| classify(text.as_bytes()));
                assert_eq!(&classify_any_mode(text.as_bytes()), expected, "{text}");
                for opts in modes {
                    assert_eq!(&classify_with(text.as_bytes(), opts), expected, "{text} {opts:?}");
                }
            }
            memoized += usize::from(!seen.is_empty());
        }
        // (Most of the corpus is in the subset: the test must test something.)
        assert!(memoized >= CORPUS.len() - 8, "{memoized} of {}", CORPUS.len());
    }
}
