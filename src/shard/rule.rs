//! Shard rules: which logical tables are split into sub-tables, by which key column,
//! and which sub-table a key value belongs to.
//!
//! # Placement
//!
//! A logical table `db.t` with `N` shards is stored as the sub-tables `db.t_0 … db.t_{N-1}`.
//!
//! * [`ShardFn::Mod`] (integer key columns): shard = `key mod N`, computed with Euclidean
//!   remainder (`rem_euclid`), so the shard of a non-negative key is exactly Atlas'
//!   (`tid % 4`), and a negative key `-k` goes to `(-k).rem_euclid(N)` (`-1` → `N-1`),
//!   never to a negative index.
//! * [`ShardFn::Hash`] (string key columns): shard = `CRC32(normalized key) mod N`, CRC32 being
//!   the IEEE polynomial (zlib, MySQL's `CRC32()`), over the UTF-8 bytes of the key after
//!   normalization by the key column's collation kind ([`KeyCollation`]):
//!   - `Bin`: trailing spaces removed (PAD SPACE collations ignore them; removing them for
//!     a NO PAD column only puts more values together, which is always safe).
//!   - `Ci` (default): trailing spaces removed and ASCII letters upper-cased, so `'ABC'` and
//!     `'abc '` land in the same shard, as the server considers them equal. For an ASCII key
//!     the placement can be checked in SQL:
//!     `CRC32(UPPER(TRIM(TRAILING ' ' FROM k))) % N`.
//!     A `_ci` collation also equates many non-ASCII characters with others
//!     (`'é' = 'E'` in `utf8mb4_general_ci`, hiragana with katakana in `unicode_ci`, all
//!     emoji with each other in `general_ci`). sluice only places strings made of characters
//!     whose equals it knows exactly: printable ASCII, CJK ideographs (U+3400–U+4DBF,
//!     U+4E00–U+9FFF) and Hangul syllables (U+AC00–U+D7A3), which equal only themselves.
//!     A lookup of any other string asks every shard (always correct); an INSERT of one is
//!     refused (use a `Bin` rule when the column's collation is binary).
//!
//! Atlas put every string key in sub-table 0; sluice never does.
//!
//! # Comparisons the placement must agree with
//!
//! Routing a lookup `key = literal` to one shard is correct only when every row the server
//! considers equal to the literal lives in that shard:
//! * Mod rule, integer or exact-decimal literal with a zero fraction (`42`, `42.00`): exact.
//! * Mod rule, string literal: MySQL compares an INT column with a string as DOUBLE, so
//!   `'42'` matches 42. sluice routes a string literal only when it is an optionally signed
//!   run of digits (spaces around allowed) below 2^53 in magnitude (where DOUBLE is exact);
//!   anything else (`'42abc'`, `'4.2e1'`) asks every shard.
//! * Hash rule: string literals as described above; numeric literals match many strings
//!   (`'42'`, `'042'`, `'42.0'`) and ask every shard.
//! * Approximate literals (`4.2e1`), NULL, hex literals, expressions: every shard.
//!
//! The key column must match the function: an integer column for `Mod`, a string column
//! for `Hash` (sluice has no schema and cannot check this).

use std::borrow::Cow;

/// How a key value maps to a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardFn {
    /// Integer key: `key rem_euclid N`.
    Mod,
    /// String key: `CRC32(normalized key) mod N`.
    Hash,
}

/// How the key column's collation compares strings (only matters for [`ShardFn::Hash`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyCollation {
    /// Case-insensitive (`*_ci`): see the module documentation.
    #[default]
    Ci,
    /// Binary or case-sensitive (`*_bin`, `*_cs`, VARBINARY): bytes compare.
    Bin,
}

/// One sharded logical table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardRule {
    pub db: String,
    pub table: String,
    /// The shard key column (column names compare case-insensitively).
    pub key: String,
    /// Number of sub-tables (≥ 1).
    pub shards: u32,
    pub function: ShardFn,
    /// Backend group index of each sub-table (`placement[i]` holds `table_i`). Empty means
    /// all in group 0; [`ShardRules::new`] fills it in.
    pub placement: Vec<usize>,
    /// Collation kind of the key column (default `Ci`).
    pub collation: KeyCollation,
}

/// A shard key value as a statement writes it, for placement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyValue<'a> {
    /// An integer literal (`TRUE`/`FALSE` are 1 and 0).
    Int(i128),
    /// An exact decimal literal as written, without exponent: `12.50`, `-3.0`, `.5`.
    Decimal(&'a str),
    /// An approximate literal (with an exponent): `4.2e1`.
    Float(&'a str),
    /// A string literal's value (escapes already resolved).
    Str(&'a [u8]),
    Null,
}

/// Largest magnitude below which every integer is exactly representable as a DOUBLE.
const DOUBLE_EXACT: i128 = 1 << 53;

impl ShardRule {
    /// A rule with all sub-tables in group 0 and a `Ci` key collation.
    pub fn new(db: &str, table: &str, key: &str, shards: u32, function: ShardFn) -> ShardRule {
        ShardRule {
            db: db.to_string(),
            table: table.to_string(),
            key: key.to_string(),
            shards,
            function,
            placement: vec![0; shards as usize],
            collation: KeyCollation::Ci,
        }
    }

    /// Name of sub-table `shard`: `post_reply` → `post_reply_3`.
    pub fn sub_table(&self, shard: u32) -> String {
        format!("{}_{}", self.table, shard)
    }

    /// Backend group holding sub-table `shard`.
    pub fn group_of(&self, shard: u32) -> usize {
        self.placement.get(shard as usize).copied().unwrap_or(0)
    }

    /// Whether the sub-tables live in more than one backend group.
    pub fn spans_groups(&self) -> bool {
        let first = self.group_of(0);
        (1..self.shards).any(|s| self.group_of(s) != first)
    }

    /// Checks the rule's own consistency.
    pub fn validate(&self) -> Result<(), String> {
        let name = format!("{}.{}", self.db, self.table);
        if self.db.is_empty() || self.table.is_empty() || self.key.is_empty() {
            return Err(format!(
                "shard rule {name}: database, table and key column must not be empty"
            ));
        }
        if self.shards == 0 {
            return Err(format!(
                "shard rule {name}: the number of shards must be at least 1"
            ));
        }
        if !self.placement.is_empty() && self.placement.len() != self.shards as usize {
            return Err(format!(
                "shard rule {name}: placement names {} groups for {} sub-tables",
                self.placement.len(),
                self.shards
            ));
        }
        Ok(())
    }

    /// Shard of an integer key under [`ShardFn::Mod`]: `v rem_euclid N`.
    pub fn shard_of_int(&self, v: i128) -> u32 {
        let n = i128::from(self.shards.max(1));
        // rem_euclid of a positive modulus is in 0..n, which fits u32.
        u32::try_from(v.rem_euclid(n)).unwrap_or(0)
    }

    /// Shard of a string key under [`ShardFn::Hash`]; None when the key holds characters
    /// whose collation equals sluice does not know (see the module documentation).
    pub fn shard_of_str(&self, s: &[u8]) -> Option<u32> {
        let norm = normalize_key(self.collation, s)?;
        Some(crc32(&norm) % self.shards.max(1))
    }

    /// The one shard holding every row whose key the server considers equal to `v`, or
    /// None when sluice cannot tell (then every shard must be asked).
    pub fn shard_for_lookup(&self, v: &KeyValue<'_>) -> Option<u32> {
        match self.function {
            ShardFn::Mod => {
                let n = match *v {
                    KeyValue::Int(n) => n,
                    KeyValue::Decimal(d) => integral_decimal(d)?,
                    KeyValue::Str(s) => {
                        let t = std::str::from_utf8(s).ok()?.trim_matches(' ');
                        let n = parse_signed_digits(t)?;
                        if n.abs() >= DOUBLE_EXACT {
                            return None;
                        }
                        n
                    }
                    KeyValue::Float(_) | KeyValue::Null => return None,
                };
                Some(self.shard_of_int(n))
            }
            ShardFn::Hash => match *v {
                KeyValue::Str(s) => self.shard_of_str(s),
                _ => None,
            },
        }
    }

    /// The shard a new row with key `v` belongs to (INSERT / REPLACE), or why it cannot be
    /// placed exactly.
    pub fn shard_for_insert(&self, v: &KeyValue<'_>) -> Result<u32, String> {
        let key = &self.key;
        match (self.function, *v) {
            (_, KeyValue::Null) => Err(format!("the shard key {key} must not be NULL")),
            (ShardFn::Mod, KeyValue::Int(n)) => Ok(self.shard_of_int(n)),
            (ShardFn::Mod, KeyValue::Decimal(d)) => match integral_decimal(d) {
                Some(n) => Ok(self.shard_of_int(n)),
                None => Err(format!(
                    "the shard key {key} value {d} is not an integer (the server would round it)"
                )),
            },
            (ShardFn::Mod, KeyValue::Str(s)) => std::str::from_utf8(s)
                .ok()
                .and_then(parse_signed_digits)
                .map(|n| self.shard_of_int(n))
                .ok_or_else(|| format!("the shard key {key} value is a string that is not an integer")),
            (ShardFn::Mod, KeyValue::Float(f)) => Err(format!(
                "the shard key {key} value {f} is an approximate number, not an integer"
            )),
            (ShardFn::Hash, KeyValue::Str(s)) => self.shard_of_str(s).ok_or_else(|| {
                format!(
                    "the string shard key {key} holds characters whose case-insensitive \
                     equals sluice does not know (only ASCII, CJK ideographs and Hangul \
                     are placed under a ci rule)"
                )
            }),
            (ShardFn::Hash, KeyValue::Int(n)) => {
                let text = n.to_string();
                self.shard_of_str(text.as_bytes())
                    .ok_or_else(|| format!("the shard key {key} cannot be placed"))
            }
            (ShardFn::Hash, KeyValue::Decimal(x) | KeyValue::Float(x)) => Err(format!(
                "the string shard key {key} is given the number {x}; write it as a string"
            )),
        }
    }
}

/// `[+-]?[0-9]+` → its value (None when longer than i128 or not of that shape).
fn parse_signed_digits(t: &str) -> Option<i128> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = digits.parse().ok()?;
    Some(if t.starts_with('-') { -v } else { v })
}

/// The integer value of an exact decimal literal whose fraction is all zeros (`42.00`).
fn integral_decimal(d: &str) -> Option<i128> {
    let (int, frac) = d.split_once('.').unwrap_or((d, ""));
    if !frac.bytes().all(|b| b == b'0') {
        return None;
    }
    match int {
        "" | "-" | "+" => Some(0),
        _ => parse_signed_digits(int),
    }
}

/// The bytes a string key is hashed from, or None when the collation's equals of some
/// character are unknown to sluice (see the module documentation).
pub fn normalize_key(collation: KeyCollation, s: &[u8]) -> Option<Cow<'_, [u8]>> {
    let end = s.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
    let s = &s[..end];
    match collation {
        KeyCollation::Bin => Some(Cow::Borrowed(s)),
        KeyCollation::Ci => {
            let text = std::str::from_utf8(s).ok()?;
            if !text.chars().all(ci_char_known) {
                return None;
            }
            if s.iter().any(u8::is_ascii_lowercase) {
                Some(Cow::Owned(s.to_ascii_uppercase()))
            } else {
                Some(Cow::Borrowed(s))
            }
        }
    }
}

/// Characters whose equals under a `_ci` collation (general_ci and unicode_ci alike) are
/// known: printable ASCII (a letter equals its other case only, among these characters),
/// CJK ideographs and Hangul syllables (each equals only itself).
fn ci_char_known(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7A3}')
}

/// CRC-32 (IEEE 802.3, as zlib and MySQL's `CRC32()`): `crc32(b"123456789") == 0xCBF43926`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Parses Atlas' shorthand `db.table.column.N`: `N` sub-tables `table_0 … table_{N-1}` in
/// the same database, integer key `column`, placement `column mod N`, all in group 0.
pub fn parse_atlas(s: &str) -> Result<ShardRule, String> {
    let parts: Vec<&str> = s.trim().split('.').map(str::trim).collect();
    let [db, table, key, n] = parts.as_slice() else {
        return Err(format!(
            "shard rule {s:?}: expected db.table.column.N (e.g. test.post_reply.tid.4)"
        ));
    };
    let shards: u32 = n
        .parse()
        .map_err(|_| format!("shard rule {s:?}: {n:?} is not a number of shards"))?;
    let rule = ShardRule::new(db, table, key, shards, ShardFn::Mod);
    rule.validate().map_err(|e| format!("{e} (in {s:?})"))?;
    Ok(rule)
}

/// All shard rules, looked up by (database, table).
///
/// Database and table names compare case-sensitively, as MariaDB/MySQL do on Linux with
/// `lower_case_table_names=0`; [`ShardRules::with_lower_case_table_names`] makes them
/// case-insensitive for servers that fold names. Column names always compare
/// case-insensitively.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardRules {
    rules: Vec<ShardRule>,
    fold_names: bool,
    /// 0: [`DEFAULT_MAX_STATEMENT_SIZE`].
    max_statement_size: usize,
    /// 0: [`DEFAULT_MAX_LONG_DATA_SIZE`].
    max_long_data_size: usize,
    /// Column order of the tables, for INSERTs without a column list (learned at run
    /// time, shared by the clones of these rules).
    pub(super) columns: super::columns::ColumnCache,
    /// Result column definitions the server gave for original statements (learned at run
    /// time, shared by the clones of these rules).
    pub(super) descriptions: super::describe::DescriptionCache,
    /// Collations of table columns (learned at run time, shared by the clones).
    pub(super) collations: super::collations::CollationCache,
}

/// Default of `sharding.max_statement_size`. Planning with a tree holds the statement's
/// tokens and tree, several hundred bytes per token (a 1.9 MiB `IN (1,1,…)` list took
/// 1.24 GiB before the limit; an 800 KB one about 500 MiB in a debug build), so large
/// statements on sharded tables are refused rather than allowed to exhaust sluice's
/// memory. `INSERT … VALUES` is split without a tree (`split.rs`) and is not bound by it.
pub const DEFAULT_MAX_STATEMENT_SIZE: usize = 256 << 10;

/// Default of `sharding.max_long_data_size`: COM_STMT_SEND_LONG_DATA bytes held for one
/// prepared statement on a sharded table until its EXECUTE says where they go (MariaDB's
/// `max_long_data_size` plays this part on the server).
pub const DEFAULT_MAX_LONG_DATA_SIZE: usize = 16 << 20;

impl ShardRules {
    /// Validates each rule, fills in default placements and rejects duplicates.
    pub fn new(rules: Vec<ShardRule>) -> Result<ShardRules, String> {
        let mut out = ShardRules {
            rules: Vec::with_capacity(rules.len()),
            fold_names: false,
            max_statement_size: 0,
            max_long_data_size: 0,
            columns: Default::default(),
            descriptions: Default::default(),
            collations: Default::default(),
        };
        for mut rule in rules {
            rule.validate()?;
            if rule.placement.is_empty() {
                rule.placement = vec![0; rule.shards as usize];
            }
            if out.get(&rule.db, &rule.table).is_some() {
                return Err(format!("shard rule {}.{} is given twice", rule.db, rule.table));
            }
            out.rules.push(rule);
        }
        Ok(out)
    }

    /// Rules from Atlas shorthands (`["test.post_reply.tid.4"]`).
    pub fn from_atlas<'a>(specs: impl IntoIterator<Item = &'a str>) -> Result<ShardRules, String> {
        let rules = specs
            .into_iter()
            .map(parse_atlas)
            .collect::<Result<Vec<_>, _>>()?;
        ShardRules::new(rules)
    }

    /// Database and table names compare case-insensitively (`lower_case_table_names=1/2`).
    /// Largest statement on a sharded table planned (bytes, with its parameters as they
    /// are written into it); larger ones are refused with 1235 before they are parsed.
    pub fn with_max_statement_size(mut self, bytes: usize) -> ShardRules {
        self.max_statement_size = bytes;
        self
    }

    /// Most COM_STMT_SEND_LONG_DATA bytes held for one prepared statement.
    pub fn with_max_long_data_size(mut self, bytes: usize) -> ShardRules {
        self.max_long_data_size = bytes;
        self
    }

    pub fn max_long_data_size(&self) -> usize {
        if self.max_long_data_size == 0 {
            DEFAULT_MAX_LONG_DATA_SIZE
        } else {
            self.max_long_data_size
        }
    }

    pub fn max_statement_size(&self) -> usize {
        if self.max_statement_size == 0 {
            DEFAULT_MAX_STATEMENT_SIZE
        } else {
            self.max_statement_size
        }
    }

    pub fn with_lower_case_table_names(mut self, on: bool) -> ShardRules {
        self.fold_names = on;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[ShardRule] {
        &self.rules
    }

    /// The rule of logical table `db.table`.
    pub fn get(&self, db: &str, table: &str) -> Option<&ShardRule> {
        self.rules
            .iter()
            .find(|r| self.name_eq(&r.db, db) && self.name_eq(&r.table, table))
    }

    /// Whether `name` is the table name of some rule (any database).
    pub fn is_table_name(&self, name: &str) -> bool {
        self.rules.iter().any(|r| self.name_eq(&r.table, name))
    }

    /// Cheap pre-check: does `sql` contain a sharded table name (ASCII case-insensitive
    /// substring)? When not, the statement cannot touch a sharded table.
    pub fn mentioned_in(&self, sql: &str) -> bool {
        self.rules.iter().any(|r| {
            !r.table.is_empty() && crate::router::route::mentions(sql.as_bytes(), r.table.as_bytes())
        })
    }

    fn name_eq(&self, a: &str, b: &str) -> bool {
        if self.fold_names {
            a.to_lowercase() == b.to_lowercase()
        } else {
            a == b
        }
    }
}
