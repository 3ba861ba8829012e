//! Random schemas and rows for the generative sharding differential: every column
//! type, latin1 and utf8mb4 under general_ci, unicode_ci and bin collations, NULLs,
//! ties (small value pools) and extreme values.

/// SplitMix64: small, deterministic, seedable.
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// How a column's values compare and what expressions fit it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Decimal,
    Float,
    Date,
    DateTime,
    Timestamp,
    Time,
    Year,
    /// A character string; `latin1`: its character set is latin1.
    Str {
        latin1: bool,
    },
    Bytes,
    Bit,
    Enum,
    Json,
}

#[derive(Debug, Clone)]
pub struct Col {
    pub name: String,
    /// The type as written in CREATE TABLE.
    pub ty: String,
    pub kind: Kind,
}

/// Character-set/collation pairs of string columns.
pub const COLLATIONS: &[(&str, &str)] = &[
    ("latin1", "latin1_swedish_ci"),
    ("latin1", "latin1_bin"),
    ("utf8mb4", "utf8mb4_general_ci"),
    ("utf8mb4", "utf8mb4_unicode_ci"),
    ("utf8mb4", "utf8mb4_bin"),
];

const INT_TYPES: &[&str] = &["TINYINT", "INT", "BIGINT", "BIGINT UNSIGNED", "SMALLINT UNSIGNED"];

pub fn random_col(rng: &mut Rng, i: usize) -> Col {
    let name = format!("c{i}");
    let (ty, kind) = match rng.below(14) {
        0 | 1 => (rng.pick(INT_TYPES).to_string(), Kind::Int),
        2 => ("DECIMAL(12,3)".to_string(), Kind::Decimal),
        3 => (rng.pick(&["DOUBLE", "FLOAT"]).to_string(), Kind::Float),
        4 => ("DATE".to_string(), Kind::Date),
        5 => (rng.pick(&["DATETIME", "DATETIME(3)"]).to_string(), Kind::DateTime),
        6 => ("TIMESTAMP NULL".to_string(), Kind::Timestamp),
        7 => (rng.pick(&["TIME", "YEAR"]).to_string(), Kind::Time),
        8..=10 => {
            let (cs, coll) = *rng.pick(COLLATIONS);
            let base = rng.pick(&["VARCHAR(40)", "CHAR(8)", "TEXT"]);
            (
                format!("{base} CHARACTER SET {cs} COLLATE {coll}"),
                Kind::Str {
                    latin1: cs == "latin1",
                },
            )
        }
        11 => (rng.pick(&["VARBINARY(16)", "BLOB"]).to_string(), Kind::Bytes),
        12 => (rng.pick(&["BIT(8)", "ENUM('b','A','c')"]).to_string(), Kind::Bit),
        _ => ("JSON".to_string(), Kind::Json),
    };
    let kind = match (kind, ty.as_str()) {
        (Kind::Time, "YEAR") => Kind::Year,
        (Kind::Bit, t) if t.starts_with("ENUM") => Kind::Enum,
        (k, _) => k,
    };
    Col { name, ty, kind }
}

/// A random table: `id` (unique, the tie breaker), `k` (the shard key), 3 to 5 columns.
#[derive(Debug, Clone)]
pub struct Schema {
    pub cols: Vec<Col>,
}

impl Schema {
    pub fn random(rng: &mut Rng) -> Schema {
        let n = 3 + rng.below(3);
        Schema {
            cols: (0..n).map(|i| random_col(rng, i)).collect(),
        }
    }

    pub fn create(&self, table: &str) -> String {
        let mut s = format!("CREATE TABLE `{table}` (id INT NOT NULL PRIMARY KEY, k INT NOT NULL");
        for c in &self.cols {
            s.push_str(&format!(", {} {} NULL", c.name, c.ty));
        }
        s.push_str(", KEY (k)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci");
        s
    }
}

/// Strings: case and accent variants (equal under _ci), trailing spaces, empty, long
/// values equal in their first bytes (for `max_sort_length`), quotes, backslashes.
const LATIN1_WORDS: &[&str] = &[
    "a", "A", "a ", "b", "B", "ä", "Ä", "ae", "ß", "ss", "é", "E", "e", "", " ", "O'Brien", "back\\", "zz",
    "Zz", "_", "-", "1", "10", "9",
];
const UTF8_WORDS: &[&str] = &["😀", "🙂", "回复", "Ǆ", "ǅ", "ı", "İ", "ﬀ", "ff", "Å", "Å"];

fn long_word(rng: &mut Rng) -> String {
    // 40 equal bytes, then a differing tail.
    format!("{}{}", "p".repeat(40), rng.pick(&["a", "B", "c", "a "]))
}

pub fn string_value(rng: &mut Rng, latin1: bool) -> String {
    if rng.chance(12) {
        return long_word(rng);
    }
    if !latin1 && rng.chance(25) {
        return rng.pick(UTF8_WORDS).to_string();
    }
    rng.pick(LATIN1_WORDS).to_string()
}

/// A SQL string literal (backslash-escaped).
pub fn quote(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("''"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A literal value of the column's type (as SQL), NULL sometimes.
pub fn value(rng: &mut Rng, c: &Col) -> String {
    if rng.chance(12) {
        return "NULL".into();
    }
    literal(rng, c.kind, &c.ty)
}

pub fn literal(rng: &mut Rng, kind: Kind, ty: &str) -> String {
    match kind {
        Kind::Int => {
            let extremes: &[&str] = match ty {
                "TINYINT" => &["-128", "127"],
                "INT" => &["-2147483648", "2147483647"],
                "BIGINT" => &["-9223372036854775808", "9223372036854775807"],
                "BIGINT UNSIGNED" => &["18446744073709551615", "0"],
                _ => &["65535", "0"],
            };
            if rng.chance(10) {
                rng.pick(extremes).to_string()
            } else {
                rng.pick(&["0", "1", "2", "3", "7", "42", "100"]).to_string()
            }
        }
        Kind::Decimal => rng
            .pick(&[
                "0.000",
                "1.500",
                "-1.500",
                "2.250",
                "999999999.999",
                "-999999999.999",
                "0.001",
                "3",
            ])
            .to_string(),
        Kind::Float => rng
            .pick(&["0", "1.5", "-2.25", "1e30", "-0.125", "3"])
            .to_string(),
        Kind::Date => quote(rng.pick::<&str>(&[
            "1000-01-01",
            "9999-12-31",
            "2021-03-28",
            "2021-10-31",
            "1970-01-01",
            "2000-02-29",
        ])),
        Kind::DateTime | Kind::Timestamp => {
            let v = rng.pick(&[
                "2021-03-28 01:30:00",
                "2021-03-28 03:30:00",
                "2021-10-31 01:30:00",
                "2021-10-31 02:30:00",
                "1970-01-01 00:00:01",
                "2038-01-19 03:14:07",
                "2000-01-01 00:00:00",
                "2021-06-01 12:00:00",
            ]);
            if kind == Kind::DateTime && rng.chance(15) {
                quote(rng.pick::<&str>(&["9999-12-31 23:59:59", "1000-01-01 00:00:00"]))
            } else {
                quote(v)
            }
        }
        Kind::Time => quote(rng.pick::<&str>(&[
            "-838:59:59",
            "838:59:59",
            "100:00:00",
            "00:00:00",
            "12:30:00",
            "-01:00:00",
        ])),
        Kind::Year => rng.pick(&["1901", "2155", "2000", "2021", "0"]).to_string(),
        Kind::Str { latin1 } => quote(&string_value(rng, latin1)),
        Kind::Bytes => rng
            .pick(&["X'00'", "X'0000'", "X'FF'", "X'41'", "X'61'", "''", "X'05'"])
            .to_string(),
        Kind::Bit => rng
            .pick(&["b'0'", "b'1'", "b'11111111'", "b'101'", "5"])
            .to_string(),
        Kind::Enum => rng.pick(&["'b'", "'A'", "'c'", "'a'"]).to_string(),
        Kind::Json => rng
            .pick(&[
                "'{\"a\": 1}'",
                "'[1, 2]'",
                "'\"x\"'",
                "'null'",
                "'{\"a\":1}'",
                "'1'",
            ])
            .to_string(),
    }
}

/// Rows `(id, k, values…)`: k from a small pool (ties, several per shard).
pub fn rows(rng: &mut Rng, s: &Schema, n: usize) -> Vec<String> {
    (1..=n)
        .map(|id| {
            let k = rng.below(12) as i64 - 2;
            let mut r = format!("({id}, {k}");
            for c in &s.cols {
                r.push_str(", ");
                r.push_str(&value(rng, c));
            }
            r.push(')');
            r
        })
        .collect()
}
