//! The fixed corpus of the sharding differential: the seed's table (`post_reply`, 100k
//! rows) and a list of queries by shape, cases of the generator's oracle (`fixed.rs` runs
//! them as text and as prepared statements). The random schemas and statements of
//! `tests/sharding_gen.rs` live next to it (`schema.rs`, `grammar.rs`); both draw from
//! one PRNG (`schema::Rng`).
#![allow(dead_code)]

/// Rows of the differential data set (the issue asks for at least 100k).
pub const N_ROWS: u32 = 100_000;
/// Rows per multi-row INSERT while loading.
pub const BATCH: usize = 1000;
/// The tids of the seed's query (two per shard).
pub const SEED_TIDS: [u32; 8] = [228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839];
/// The seed's query, exactly as the issue quotes it.
pub const SEED_QUERY: &str = "SELECT * FROM post_reply WHERE user_id=123 AND tid IN(228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839) ORDER BY create_time DESC LIMIT 20, 20";
/// The same with the article's backticks and line break.
pub const SEED_QUERY_ARTICLE: &str = "SELECT * FROM post_reply WHERE `user_id`=123 AND `tid` \nIN(228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839) ORDER BY `create_time` DESC LIMIT 20, 20";
/// Hot tids besides the seed's: skew, and several on the same shard.
pub const HOT_TIDS: [u32; 4] = [4, 8, 12, 1001];
/// Error 1235, ER_NOT_SUPPORTED_YET.
pub const NOT_SUPPORTED: u16 = 1235;

/// A statement in one line, cut at 300 characters (for a report).
pub fn short(sql: &str) -> String {
    let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 300 {
        format!("{}…", one_line.chars().take(300).collect::<String>())
    } else {
        one_line
    }
}

pub const COLUMNS: &str = "id, tid, user_id, subject, create_time, message, score, tag, amount";

/// The seed's schema (with its Chinese comments: DDL must reach the sub-tables as written)
/// plus a nullable INT, a utf8mb4_general_ci VARCHAR and a DECIMAL.
pub fn schema(table: &str) -> String {
    format!(
        "CREATE TABLE `{table}` (
  `id` int(11) unsigned NOT NULL COMMENT '回复id',
  `tid` int(11) unsigned NOT NULL DEFAULT '0' COMMENT '帖子id',
  `user_id` int(11) unsigned NOT NULL DEFAULT '0' COMMENT '用户id',
  `subject` varchar(80) NOT NULL DEFAULT '' COMMENT '回复标题',
  `create_time` datetime NOT NULL DEFAULT '2000-01-01 00:00:00' COMMENT '发表时间',
  `message` mediumtext NOT NULL COMMENT '回复内容',
  `score` int NULL,
  `tag` varchar(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL,
  `amount` decimal(12,2) NOT NULL DEFAULT '0.00',
  PRIMARY KEY (`id`),
  KEY `idx_tid_time` (`tid`, `create_time`),
  KEY `idx_user` (`user_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
    )
}

// ---------------------------------------------------------------------------------------
// Deterministic data
// ---------------------------------------------------------------------------------------

/// The corpus' view of the shared SplitMix64 ([`super::schema::Rng`]): same data and
/// queries on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut core = super::schema::Rng(self.0);
        let v = core.next();
        self.0 = core.0;
        v
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    pub fn word(&mut self, v: &[&'static str]) -> &'static str {
        v[self.below(v.len() as u64) as usize]
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// Subjects: case variants, quotes, backslashes, multibyte, emoji, trailing spaces.
pub const SUBJECTS: &[&str] = &[
    "Re: hello",
    "re: HELLO",
    "RE: Hello",
    "It's fine",
    "say \"hi\"",
    "back\\slash",
    "C:\\path\\to\\",
    "tab\there",
    "new\nline",
    "100% sure_",
    "回复标题",
    "帖子 回复",
    "emoji 🙂",
    "emoji 😀",
    "Ärger",
    "ärger",
    "straße",
    "STRASSE",
    "naïve café",
    "  leading",
    "trailing  ",
    "",
    "'",
    "\\",
    "\\'",
    "''",
    "a\\'b",
    "日本語テキスト",
    "한국어 제목",
    "mixed 'quote' \\ and 😀",
    "zeta",
    "Zeta",
];

/// Tags (utf8mb4_general_ci): strings that differ only in case, accents, trailing spaces,
/// and supplementary characters (all equal to each other under general_ci).
pub const TAGS: &[&str] = &[
    "alpha", "Alpha", "ALPHA", "alpha ", "beta", "BETA", "Beta", "gamma", "Ärger", "ärger", "AERGER",
    "straße", "strase", "STRASSE", "🙂", "😀", "x🙂", "x😀", "", " ", "é", "E", "e", "O'Brien", "o'brien",
    "back\\", "BACK\\",
];

/// Days from 1970-01-01 to (y, m, d) (Howard Hinnant's civil_from_days, inverted use).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m as u32, d as u32)
}

/// `YYYY-MM-DD HH:MM:SS` of seconds since the epoch.
pub fn datetime(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// 2021-01-01 00:00:00 and 2019-06-01 00:00:00, in seconds since the epoch.
pub const T2021: i64 = 18_628 * 86_400;
pub const T2019: i64 = 18_048 * 86_400;

#[derive(Clone, Debug)]
pub struct Reply {
    pub id: u32,
    pub tid: u32,
    pub user: u32,
    pub subject: String,
    pub time: String,
    pub message: String,
    pub score: Option<i32>,
    pub tag: Option<String>,
    pub amount: String,
}

/// A string literal, backslash-escaped; a quote is written `\'` or `''` (`doubled`).
pub fn lit(s: &str, doubled: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' if doubled => out.push_str("''"),
            '\'' => out.push_str("\\'"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

impl Reply {
    pub fn values(&self) -> String {
        let doubled = self.id % 2 == 1;
        format!(
            "({}, {}, {}, {}, '{}', {}, {}, {}, {})",
            self.id,
            self.tid,
            self.user,
            lit(&self.subject, doubled),
            self.time,
            lit(&self.message, !doubled),
            self.score.map_or("NULL".to_string(), |s| s.to_string()),
            self.tag
                .as_deref()
                .map_or("NULL".to_string(), |t| lit(t, doubled)),
            self.amount
        )
    }
}

pub fn amount(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cents.abs() / 100, cents.abs() % 100)
}

/// Row `id` of the data set. Every 500th row belongs to user 123 on a seed tid with a
/// create_time no other row has, so the seed's query (ORDER BY create_time alone) has one
/// right answer; elsewhere create_time values repeat (about 2.5 rows per minute).
pub fn reply(rng: &mut Rng, id: u32) -> Reply {
    let seed_block = id % 500 == 0;
    let tid = if seed_block {
        SEED_TIDS[(id / 500 % 8) as usize]
    } else if rng.chance(0.30) {
        if rng.chance(0.7) {
            *rng.pick(&SEED_TIDS)
        } else {
            *rng.pick(&HOT_TIDS)
        }
    } else {
        200_000 + rng.below(40_000) as u32
    };
    let user = if seed_block {
        123
    } else {
        let mut u = if rng.chance(0.02) {
            123
        } else {
            1 + (rng.unit().powi(3) * 5000.0) as u32
        };
        if u == 123 && SEED_TIDS.contains(&tid) {
            u = 124;
        }
        u
    };
    let time = if seed_block {
        datetime(T2019 + i64::from(id) * 37)
    } else {
        datetime(T2021 + rng.range(0, 40_000) * 60)
    };
    let subject = match rng.below(4) {
        0 => rng.pick(SUBJECTS).to_string(),
        1 => format!("{} #{}", rng.pick(SUBJECTS), rng.below(50)),
        2 => format!("{} {}", rng.pick(TAGS), rng.pick(SUBJECTS)),
        _ => format!("post {}", rng.below(3000)),
    };
    let subject: String = subject.chars().take(80).collect();
    let mut message = format!("message {id}: ");
    for _ in 0..rng.below(4) {
        message.push_str(rng.word(SUBJECTS));
        message.push(' ');
    }
    let score = (!rng.chance(0.15)).then(|| rng.range(-100, 100) as i32);
    let tag = (!rng.chance(0.06)).then(|| rng.pick(TAGS).to_string());
    let amount = amount(rng.range(-1_000_000, 1_000_000));
    Reply {
        id,
        tid,
        user,
        subject,
        time,
        message,
        score,
        tag,
        amount,
    }
}

pub fn insert_sql(table: &str, rows: &[Reply]) -> String {
    let mut sql = format!("INSERT INTO {table} ({COLUMNS}) VALUES ");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            sql.push_str(",\n");
        }
        sql.push_str(&r.values());
    }
    sql
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    /// ORDER BY determines the order completely: compare row by row.
    Full,
    /// No (complete) order: compare as multisets.
    Multiset,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// A shape the issue lists as supported: a refusal fails the suite.
    Supported,
    /// Anything else: answered exactly, or refused with 1235.
    Extra,
}

#[derive(Clone, Debug)]
pub struct Q {
    pub kind: &'static str,
    pub sql: String,
    pub order: Order,
    pub shape: Shape,
    /// Columns whose value is one representative of a group of strings equal under
    /// utf8mb4_general_ci (GROUP BY / DISTINCT / MIN / MAX of `tag` or `subject`): which
    /// spelling the server shows is not determined, so these cells only have to be equal
    /// under the collation.
    pub ci_cols: Vec<usize>,
    /// The collation of those columns.
    pub ci_collation: &'static str,
    /// The answer must have at least this many rows (checks the data covers the query).
    pub min_rows: usize,
}

impl Q {
    pub fn new(kind: &'static str, sql: impl Into<String>) -> Q {
        Q {
            kind,
            sql: sql.into(),
            order: Order::Full,
            shape: Shape::Supported,
            ci_cols: Vec::new(),
            ci_collation: "utf8mb4_general_ci",
            min_rows: 0,
        }
    }
    pub fn multiset(mut self) -> Q {
        self.order = Order::Multiset;
        self
    }
    pub fn extra(mut self) -> Q {
        self.shape = Shape::Extra;
        self
    }
    pub fn ci(mut self, cols: &[usize]) -> Q {
        self.ci_cols = cols.to_vec();
        self
    }
    pub fn collation(mut self, c: &'static str) -> Q {
        self.ci_collation = c;
        self
    }
    pub fn at_least(mut self, n: usize) -> Q {
        self.min_rows = n;
        self
    }
}

// ---------------------------------------------------------------------------------------
// Query generation
// ---------------------------------------------------------------------------------------

/// Tids for routing: hot ones, cold existing ones, and some that do not exist.
pub fn some_tid(rng: &mut Rng, data: &[Reply]) -> u32 {
    match rng.below(4) {
        0 => *rng.pick(&SEED_TIDS),
        1 => *rng.pick(&HOT_TIDS),
        2 => data[rng.below(data.len() as u64) as usize].tid,
        _ => 1 + rng.below(100) as u32 * 4 + rng.below(4) as u32, // mostly absent
    }
}

pub fn tid_list(rng: &mut Rng, data: &[Reply], n: usize) -> String {
    let mut v: Vec<String> = (0..n).map(|_| some_tid(rng, data).to_string()).collect();
    if rng.chance(0.3) {
        let dup = v[0].clone();
        v.push(dup); // a duplicate value in the list
    }
    v.join(", ")
}

pub fn some_user(rng: &mut Rng, data: &[Reply]) -> u32 {
    match rng.below(4) {
        0 => *rng.pick(&[1, 2, 3, 123]),
        1 => 999_999, // no rows
        _ => data[rng.below(data.len() as u64) as usize].user,
    }
}

/// A condition that does not restrict the shards.
pub fn scatter_filter(rng: &mut Rng, data: &[Reply]) -> String {
    match rng.below(12) {
        0 => format!("user_id = {}", some_user(rng, data)),
        1 => format!("score > {}", rng.range(-100, 100)),
        2 => "score IS NULL".into(),
        3 => format!("score BETWEEN {} AND {}", rng.range(-100, 0), rng.range(0, 100)),
        4 => format!("tag = {}", lit(rng.word(TAGS), false)),
        5 => "tag IS NULL".into(),
        6 => "amount < 0".into(),
        7 => "amount BETWEEN -100.50 AND 100.25".into(),
        8 => {
            let d = rng.range(0, 25);
            format!(
                "create_time >= '{}' AND create_time < '{}'",
                datetime(T2021 + d * 86_400),
                datetime(T2021 + (d + 2) * 86_400)
            )
        }
        9 => "subject LIKE 'Re:%'".into(),
        10 => format!("id < {}", rng.range(1000, 20_000)),
        _ => format!("id % 7 = {}", rng.below(7)),
    }
}

/// A condition that is small enough to list every matching row.
pub fn selective_filter(rng: &mut Rng, data: &[Reply]) -> String {
    match rng.below(5) {
        0 => format!("user_id = {}", some_user(rng, data)),
        1 => format!("tid = {}", some_tid(rng, data)),
        2 => format!("tid IN ({})", tid_list(rng, data, 3)),
        3 => format!("id BETWEEN {0} AND {0} + 3000", rng.range(1, 90_000)),
        _ => format!(
            "user_id IN ({}, {}) AND score > 50",
            some_user(rng, data),
            some_user(rng, data)
        ),
    }
}

/// `LIMIT n`, `LIMIT o, n` or `LIMIT n OFFSET o`.
pub fn limit(rng: &mut Rng, max_offset: i64) -> String {
    let n = rng.range(1, 50);
    let o = if rng.chance(0.2) {
        0
    } else {
        rng.range(0, max_offset)
    };
    match rng.below(3) {
        0 => format!("LIMIT {n}"),
        1 => format!("LIMIT {o}, {n}"),
        _ => format!("LIMIT {n} OFFSET {o}"),
    }
}

pub const SORT_KEYS: &[&str] = &[
    "create_time",
    "score",
    "tag",
    "amount",
    "user_id",
    "subject",
    "tid",
    "message",
];
pub const SELECTABLE: &[&str] = &[
    "id",
    "tid",
    "user_id",
    "subject",
    "create_time",
    "score",
    "tag",
    "amount",
];

pub fn dir(rng: &mut Rng) -> &'static str {
    rng.word(&["", " ASC", " DESC"])
}

/// ORDER BY 1-3 keys plus `id` (unique): the order is fully determined.
pub fn order_by(rng: &mut Rng) -> String {
    let n = 1 + rng.below(3) as usize;
    let mut keys: Vec<&str> = Vec::new();
    while keys.len() < n {
        let k = *rng.pick(SORT_KEYS);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut terms: Vec<String> = keys.iter().map(|k| format!("{k}{}", dir(rng))).collect();
    terms.push(format!("id{}", dir(rng)));
    format!("ORDER BY {}", terms.join(", "))
}

pub fn select_list(rng: &mut Rng) -> String {
    if rng.chance(0.3) {
        return "*".into();
    }
    let mut cols: Vec<&str> = SELECTABLE.iter().copied().filter(|_| rng.chance(0.5)).collect();
    if cols.is_empty() {
        cols.push("id");
    }
    cols.join(", ")
}

pub fn generate(data: &[Reply]) -> Vec<Q> {
    let mut rng = Rng(0x5eed_0004);
    let r = &mut rng;
    let mut qs = Vec::new();

    // --- The seed's query, its neighbours and pages --------------------------------------
    qs.push(Q::new("seed query", SEED_QUERY).at_least(20));
    qs.push(Q::new("seed query", SEED_QUERY_ARTICLE).at_least(20));
    let seed_in = "tid IN(228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839)";
    for lim in [
        "LIMIT 20",
        "LIMIT 0, 20",
        "LIMIT 40, 20",
        "LIMIT 20 OFFSET 180",
        "LIMIT 190, 20",
        "LIMIT 1000, 20",
    ] {
        qs.push(Q::new(
            "seed pages",
            format!(
                "SELECT * FROM post_reply WHERE user_id=123 AND {seed_in} ORDER BY create_time DESC {lim}"
            ),
        ));
    }
    qs.push(Q::new(
        "seed pages",
        format!("SELECT * FROM post_reply WHERE user_id=123 AND {seed_in} ORDER BY create_time ASC, id DESC LIMIT 20, 20"),
    ).at_least(20));
    qs.push(Q::new(
        "seed pages",
        format!("SELECT id, subject FROM post_reply WHERE {seed_in} ORDER BY create_time DESC, id DESC LIMIT 20, 20"),
    ).at_least(20));

    // --- Routing by the key ----------------------------------------------------------------
    for _ in 0..15 {
        let t = some_tid(r, data);
        qs.push(Q::new(
            "key =",
            format!(
                "SELECT * FROM post_reply WHERE tid = {t} ORDER BY create_time DESC, id DESC {}",
                limit(r, 300)
            ),
        ));
    }
    for _ in 0..15 {
        let n = 2 + r.below(9) as usize;
        qs.push(Q::new(
            "key IN",
            format!(
                "SELECT id, tid, subject, score FROM post_reply WHERE tid IN ({}) {} {}",
                tid_list(r, data, n),
                order_by(r),
                limit(r, 2000)
            ),
        ));
    }
    for _ in 0..10 {
        qs.push(Q::new(
            "key OR",
            format!(
                "SELECT id, tid, user_id, create_time FROM post_reply WHERE tid = {} OR tid = {} OR tid IN ({}) ORDER BY create_time, id {}",
                some_tid(r, data),
                some_tid(r, data),
                tid_list(r, data, 2),
                limit(r, 2000)
            ),
        ));
    }
    for _ in 0..6 {
        qs.push(Q::new(
            "key OR + AND",
            format!(
                "SELECT * FROM post_reply WHERE (tid = {} OR tid IN ({})) AND user_id = {} ORDER BY id DESC",
                some_tid(r, data),
                tid_list(r, data, 3),
                some_user(r, data)
            ),
        ));
    }
    qs.push(Q::new(
        "key as string",
        "SELECT id, tid FROM post_reply WHERE tid = '228596' ORDER BY id LIMIT 30",
    ));
    // The server notes 1292 ("Truncated incorrect DECIMAL value: ' 12 '") for an IN list of
    // several values; a part with several gives it too, and a merged result cannot pass the
    // parts' warnings on: refused then (an exact answer otherwise).
    qs.push(
        Q::new(
            "key as string",
            "SELECT COUNT(*) FROM post_reply WHERE tid IN ('4', '8', ' 12 ', '228839')",
        )
        .extra(),
    );
    qs.push(Q::new(
        "key, one shard",
        "SELECT id, tid FROM post_reply WHERE tid IN (4, 8, 12, 228596, 225232) ORDER BY tid DESC, id LIMIT 50, 25",
    ));
    qs.push(Q::new(
        "key, contradiction",
        "SELECT * FROM post_reply WHERE tid = 4 AND tid = 1001",
    ));
    qs.push(Q::new(
        "key, contradiction",
        "SELECT COUNT(*), SUM(amount) FROM post_reply WHERE tid IN (228596) AND tid IN (228689)",
    ));
    qs.push(Q::new(
        "key, absent",
        "SELECT * FROM post_reply WHERE tid IN (1, 2, 3, 5, 6, 7) ORDER BY id",
    ));
    for _ in 0..5 {
        qs.push(
            Q::new(
                "key IN, no ORDER BY",
                format!(
                    "SELECT id, user_id, tag FROM post_reply WHERE tid IN ({})",
                    tid_list(r, data, 4)
                ),
            )
            .multiset(),
        );
    }

    // --- ORDER BY 1-3 keys, LIMIT forms, full scans ----------------------------------------
    for i in 0..60 {
        let list = select_list(r);
        let filter = match i % 3 {
            0 => String::new(),
            1 => format!("WHERE {}", scatter_filter(r, data)),
            _ => format!("WHERE {}", selective_filter(r, data)),
        };
        let lim = if i % 3 == 2 && r.chance(0.5) {
            String::new()
        } else {
            limit(r, 5000)
        };
        qs.push(Q::new(
            "ORDER BY + LIMIT",
            format!("SELECT {list} FROM post_reply {filter} {} {lim}", order_by(r)),
        ));
    }
    qs.push(
        Q::new(
            "deep page",
            "SELECT * FROM post_reply ORDER BY create_time, id LIMIT 50000, 20",
        )
        .at_least(20),
    );
    qs.push(
        Q::new(
            "deep page",
            "SELECT id, create_time FROM post_reply ORDER BY create_time DESC, id DESC LIMIT 20 OFFSET 99000",
        )
        .at_least(20),
    );
    qs.push(Q::new(
        "deep page",
        "SELECT id FROM post_reply ORDER BY id LIMIT 99990, 20",
    ));
    qs.push(Q::new(
        "deep page",
        "SELECT id FROM post_reply ORDER BY score, id LIMIT 500000, 5",
    ));
    qs.push(Q::new(
        "deep page",
        "SELECT id, tag FROM post_reply ORDER BY tag DESC, id LIMIT 30000, 30",
    ));
    for _ in 0..10 {
        qs.push(Q::new(
            "ORDER BY not selected",
            format!(
                "SELECT id, subject FROM post_reply WHERE {} ORDER BY create_time DESC, score, id {}",
                scatter_filter(r, data),
                limit(r, 500)
            ),
        ));
    }
    qs.push(Q::new(
        "ORDER BY not selected",
        "SELECT subject FROM post_reply WHERE user_id = 2 ORDER BY amount DESC, id",
    ));
    qs.push(Q::new(
        "ORDER BY not selected",
        "SELECT tid, create_time FROM post_reply ORDER BY score DESC, tag, id LIMIT 100, 10",
    ));
    qs.push(Q::new(
        "full scan",
        "SELECT id, tid, score FROM post_reply WHERE user_id = 1 ORDER BY score DESC, id",
    ));
    qs.push(
        Q::new("full scan", "SELECT id, tid, user_id, amount FROM post_reply")
            .multiset()
            .at_least(N_ROWS as usize),
    );
    qs.push(Q::new("full scan", "SELECT * FROM post_reply WHERE score = 17").multiset());

    // --- Aggregates ------------------------------------------------------------------------
    qs.push(Q::new("aggregates", "SELECT COUNT(*) FROM post_reply"));
    qs.push(Q::new(
        "aggregates",
        "SELECT count( * ), Sum(amount), avg( score ) FROM post_reply",
    ));
    qs.push(Q::new(
        "aggregates",
        "SELECT COUNT(*) AS n, SUM(amount) total, MIN(amount), MAX(amount), AVG(amount) AS mean FROM post_reply",
    ));
    for _ in 0..10 {
        qs.push(Q::new(
            "aggregates",
            format!(
                "SELECT COUNT(*), SUM(amount), MIN(amount), MAX(amount), AVG(amount), MIN(create_time), MAX(create_time) FROM post_reply WHERE {}",
                scatter_filter(r, data)
            ),
        ));
    }
    for _ in 0..8 {
        qs.push(Q::new(
            "aggregates over NULLs",
            format!(
                "SELECT COUNT(score), COUNT(*), SUM(score), MIN(score), MAX(score), AVG(score), COUNT(tag) FROM post_reply WHERE {}",
                scatter_filter(r, data)
            ),
        ));
    }
    for w in [
        "user_id = 999999",
        "tid = 7",
        "tid IN (1, 2, 3)",
        "amount > 999999",
    ] {
        qs.push(Q::new(
            "aggregates, empty set",
            format!("SELECT COUNT(*), COUNT(score), SUM(score), AVG(amount), MIN(tag), MAX(create_time) FROM post_reply WHERE {w}"),
        ));
    }
    qs.push(Q::new(
        "aggregates, all NULL",
        "SELECT COUNT(score), SUM(score), AVG(score), MIN(score), MAX(score) FROM post_reply WHERE score IS NULL",
    ));
    qs.push(Q::new(
        "aggregates, all NULL",
        "SELECT COUNT(tag), MIN(tag), MAX(tag) FROM post_reply WHERE tag IS NULL AND tid IN (4, 228596, 228689, 228638)",
    ));
    qs.push(
        Q::new(
            "aggregates, strings",
            "SELECT MIN(tag), MAX(tag), MIN(subject), MAX(subject) FROM post_reply",
        )
        .ci(&[0, 1, 2, 3]),
    );
    qs.push(
        Q::new(
            "aggregates, strings",
            "SELECT MIN(tag), MAX(subject), COUNT(*) FROM post_reply WHERE user_id = 123",
        )
        .ci(&[0, 1]),
    );
    for t in SEED_TIDS.iter().take(3) {
        qs.push(Q::new(
            "aggregates, one shard",
            format!("SELECT COUNT(*), SUM(amount), AVG(score) FROM post_reply WHERE tid = {t}"),
        ));
    }
    for w in [
        "",
        "WHERE user_id < 50",
        "WHERE tid IN (228596, 228689, 4, 1001)",
        "WHERE score IS NULL",
    ] {
        qs.push(Q::new(
            "COUNT(DISTINCT)",
            format!("SELECT COUNT(DISTINCT user_id) FROM post_reply {w}"),
        ));
    }
    qs.push(Q::new(
        "COUNT(DISTINCT)",
        "SELECT COUNT(DISTINCT tag) FROM post_reply",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT)",
        "SELECT COUNT(DISTINCT score) AS scores FROM post_reply WHERE amount > 0",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT)",
        "SELECT COUNT(DISTINCT create_time) FROM post_reply",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + GROUP BY",
        "SELECT tid, COUNT(DISTINCT user_id) FROM post_reply WHERE tid IN (228596, 228689, 228638, 224795, 4, 1001) GROUP BY tid ORDER BY tid",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + GROUP BY",
        "SELECT user_id, COUNT(DISTINCT tid) FROM post_reply WHERE user_id < 20 GROUP BY user_id ORDER BY user_id DESC",
    ));
    qs.push(
        Q::new(
            "COUNT(DISTINCT) + GROUP BY",
            "SELECT tag, COUNT(DISTINCT score) FROM post_reply GROUP BY tag ORDER BY tag",
        )
        .ci(&[0]),
    );

    // --- COUNT(DISTINCT) beside other aggregates (issue 12) -----------------------------
    qs.push(Q::new(
        "COUNT(DISTINCT) + aggregates",
        "SELECT SUM(tid), COUNT(DISTINCT user_id) FROM post_reply",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + aggregates",
        "SELECT COUNT(id), COUNT(DISTINCT tid), MIN(user_id) FROM post_reply",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + aggregates",
        format!(
            "SELECT COUNT(DISTINCT user_id), COUNT(*), AVG(score), MAX(amount), MIN(create_time) FROM post_reply WHERE tid IN ({})",
            tid_list(r, data, 6)
        ),
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + aggregates",
        "SELECT COUNT(DISTINCT score), SUM(amount), AVG(amount), COUNT(score) FROM post_reply WHERE user_id < 40",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + GROUP BY + aggregates",
        "SELECT DATE(create_time) d, COUNT(*), COUNT(DISTINCT user_id) FROM post_reply GROUP BY d ORDER BY d DESC LIMIT 10",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + GROUP BY + aggregates",
        "SELECT user_id, COUNT(*), COUNT(DISTINCT tid), SUM(amount), AVG(score) FROM post_reply WHERE user_id < 30 GROUP BY user_id ORDER BY user_id",
    ));
    qs.push(Q::new(
        "COUNT(DISTINCT) + GROUP BY + aggregates",
        "SELECT user_id, COUNT(DISTINCT tid) c, COUNT(*) n FROM post_reply GROUP BY user_id HAVING c > 2 ORDER BY n DESC, user_id LIMIT 10",
    ));
    qs.push(
        Q::new(
            "COUNT(DISTINCT) + GROUP BY + aggregates",
            "SELECT tag, COUNT(DISTINCT score), COUNT(score), MIN(amount) FROM post_reply GROUP BY tag ORDER BY tag",
        )
        .ci(&[0]),
    );

    // COUNT(DISTINCT shard key): the shards' distinct counts add, several times in one
    // query, beside other aggregates, in HAVING and ORDER BY.
    for sql in [
        "SELECT COUNT(DISTINCT tid) FROM post_reply",
        "SELECT COUNT(DISTINCT tid), COUNT(DISTINCT post_reply.tid) AS n, COUNT(*), SUM(amount) FROM post_reply WHERE user_id < 60",
        "SELECT user_id, COUNT(DISTINCT tid), AVG(score), COUNT(DISTINCT post_reply.tid) AS again FROM post_reply WHERE user_id < 25 GROUP BY user_id ORDER BY user_id",
        "SELECT DATE(create_time) d, COUNT(*), COUNT(DISTINCT tid) FROM post_reply GROUP BY d HAVING COUNT(DISTINCT tid) > 1 ORDER BY COUNT(DISTINCT tid) DESC, d LIMIT 10",
        "SELECT COUNT(DISTINCT tid) FROM post_reply WHERE tid IN (228596, 228689, 4, 1001, 5, 6)",
    ] {
        qs.push(Q::new("COUNT(DISTINCT key)", sql));
    }

    // --- GROUP BY, HAVING ----------------------------------------------------------------
    for _ in 0..10 {
        let w = if r.chance(0.5) {
            format!("WHERE {}", scatter_filter(r, data))
        } else {
            String::new()
        };
        qs.push(Q::new(
            "GROUP BY + HAVING",
            format!(
                "SELECT tid, COUNT(*), SUM(amount), AVG(score), MAX(create_time) FROM post_reply {w} GROUP BY tid HAVING COUNT(*) > {} ORDER BY tid{} {}",
                r.range(0, 5),
                dir(r),
                limit(r, 200)
            ),
        ));
    }
    for _ in 0..6 {
        qs.push(Q::new(
            "GROUP BY, ORDER BY aggregate",
            format!(
                "SELECT user_id, COUNT(*) AS c, MAX(create_time), SUM(score) FROM post_reply GROUP BY user_id HAVING c >= {} ORDER BY c DESC, user_id {}",
                r.range(1, 40),
                limit(r, 100)
            ),
        ));
    }
    qs.push(Q::new(
        "GROUP BY, ORDER BY aggregate",
        "SELECT user_id FROM post_reply GROUP BY user_id ORDER BY COUNT(*) DESC, user_id LIMIT 10",
    ));
    qs.push(Q::new(
        "GROUP BY, ORDER BY aggregate",
        "SELECT tid, AVG(amount) FROM post_reply WHERE tid < 300000 GROUP BY tid ORDER BY AVG(amount) DESC, tid LIMIT 15",
    ));
    qs.push(
        Q::new(
            "GROUP BY ci strings",
            "SELECT tag, COUNT(*), MIN(id), SUM(amount) FROM post_reply GROUP BY tag ORDER BY tag",
        )
        .ci(&[0]),
    );
    qs.push(
        Q::new(
            "GROUP BY ci strings",
            "SELECT tag, COUNT(*) FROM post_reply WHERE tid IN (228596, 228689) GROUP BY tag HAVING COUNT(*) > 10 ORDER BY tag DESC",
        )
        .ci(&[0]),
    );
    qs.push(
        Q::new(
            "GROUP BY ci strings",
            "SELECT subject, COUNT(*) AS n FROM post_reply WHERE user_id < 30 GROUP BY subject ORDER BY n DESC, subject LIMIT 40",
        )
        .ci(&[0]),
    );
    qs.push(Q::new(
        "GROUP BY NULL group",
        "SELECT score, COUNT(*), SUM(amount) FROM post_reply GROUP BY score ORDER BY score",
    ));
    qs.push(Q::new(
        "GROUP BY NULL group",
        "SELECT score, COUNT(*) FROM post_reply WHERE user_id = 3 GROUP BY score ORDER BY score DESC",
    ));
    qs.push(Q::new(
        "GROUP BY expression",
        "SELECT DATE(create_time) AS d, COUNT(*), MIN(amount) FROM post_reply GROUP BY d ORDER BY d LIMIT 30",
    ));
    qs.push(Q::new(
        "GROUP BY two keys",
        "SELECT tid, user_id, COUNT(*) FROM post_reply WHERE tid IN (4, 8, 228596, 228689, 228638) GROUP BY tid, user_id ORDER BY tid, user_id LIMIT 60, 50",
    ));
    qs.push(
        Q::new(
            "GROUP BY, no ORDER BY",
            "SELECT tid, COUNT(*) FROM post_reply WHERE tid < 1000000 GROUP BY tid HAVING COUNT(*) > 3",
        )
        .multiset(),
    );
    for h in [
        "SUM(amount) > 0 AND COUNT(*) BETWEEN 2 AND 50",
        "MAX(score) IS NULL OR MIN(score) < -90",
        "COUNT(*) IN (1, 3, 5)",
        "NOT (COUNT(*) > 2)",
        "AVG(score) >= 10",
        "c > 3 AND MAX(create_time) < '2021-01-20 00:00:00'",
    ] {
        qs.push(Q::new(
            "HAVING forms",
            format!(
                "SELECT user_id, COUNT(*) AS c FROM post_reply WHERE user_id BETWEEN 100 AND 600 GROUP BY user_id HAVING {h} ORDER BY user_id"
            ),
        ));
    }

    // --- DISTINCT ---------------------------------------------------------------------------
    for _ in 0..5 {
        qs.push(Q::new(
            "DISTINCT",
            format!(
                "SELECT DISTINCT tid FROM post_reply WHERE user_id = {} ORDER BY tid{}",
                some_user(r, data),
                dir(r)
            ),
        ));
    }
    for _ in 0..5 {
        qs.push(Q::new(
            "DISTINCT",
            format!(
                "SELECT DISTINCT user_id, tid FROM post_reply WHERE {} ORDER BY user_id DESC, tid {}",
                scatter_filter(r, data),
                limit(r, 100)
            ),
        ));
    }
    qs.push(Q::new("DISTINCT", "SELECT DISTINCT tag FROM post_reply ORDER BY tag").ci(&[0]));
    qs.push(
        Q::new(
            "DISTINCT",
            "SELECT DISTINCT score FROM post_reply WHERE tid IN (228596, 228601, 228638, 224795)",
        )
        .multiset(),
    );
    qs.push(Q::new(
        "DISTINCT",
        "SELECT DISTINCT DATE(create_time) FROM post_reply ORDER BY 1 DESC LIMIT 5",
    ));
    qs.push(Q::new(
        "DISTINCT",
        "SELECT DISTINCT create_time FROM post_reply ORDER BY create_time LIMIT 1000, 10",
    ));

    // --- SUM/AVG(DISTINCT x): the (keys, x) stream, each x taken once per group ---------
    for sql in [
        "SELECT SUM(DISTINCT score), AVG(DISTINCT score), COUNT(*) FROM post_reply",
        "SELECT user_id, COUNT(DISTINCT score), SUM(DISTINCT score), AVG(DISTINCT score), SUM(amount), COUNT(*) FROM post_reply WHERE user_id < 30 GROUP BY user_id ORDER BY user_id",
        "SELECT SUM(DISTINCT amount), AVG(DISTINCT amount), MAX(score) FROM post_reply WHERE tid IN (4, 8, 228596, 228689, 228601)",
        "SELECT SUM(DISTINCT tid), AVG(DISTINCT tid), COUNT(DISTINCT tid), COUNT(*) FROM post_reply WHERE user_id < 50",
        "SELECT DATE(create_time) d, SUM(DISTINCT score) s, AVG(DISTINCT score) FROM post_reply GROUP BY d HAVING s > 100 ORDER BY s DESC, d LIMIT 10",
        "SELECT SUM(DISTINCT score), AVG(DISTINCT score), COUNT(DISTINCT score) FROM post_reply WHERE user_id = 999999",
        "SELECT COUNT(DISTINCT user_id), user_id, COUNT(*) FROM post_reply WHERE amount > 99999999",
        "SELECT SUM(DISTINCT score) s FROM post_reply WHERE user_id = 999999 HAVING s IS NULL",
        "SELECT tid, AVG(DISTINCT user_id), SUM(DISTINCT user_id) FROM post_reply WHERE tid IN (228596, 228689, 228638, 4, 1001) GROUP BY tid ORDER BY tid",
    ] {
        qs.push(Q::new("SUM/AVG(DISTINCT)", sql));
    }

    // --- Several DISTINCT arguments: one tagged sub-stream each, merged in one stream ----
    for sql in [
        "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT score) FROM post_reply",
        "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT tid) FROM post_reply WHERE score > 0",
        "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT tag), COUNT(*), SUM(amount), MIN(create_time), AVG(score) FROM post_reply WHERE amount > 0",
        "SELECT COUNT(DISTINCT subject), COUNT(DISTINCT tag), COUNT(DISTINCT DATE(create_time)) FROM post_reply WHERE tid IN (228596, 228689, 228601, 4, 8, 1001)",
        "SELECT COUNT(DISTINCT score), COUNT(DISTINCT tag), COUNT(*), SUM(amount), MIN(id) FROM post_reply WHERE user_id = 999999",
        "SELECT DATE(create_time) d, COUNT(*), COUNT(DISTINCT user_id), COUNT(DISTINCT tid), SUM(amount) FROM post_reply GROUP BY d ORDER BY d DESC LIMIT 10",
        "SELECT user_id, COUNT(DISTINCT tid) c, COUNT(DISTINCT score) s, COUNT(*) n, AVG(amount) FROM post_reply WHERE user_id < 40 GROUP BY user_id HAVING c > 1 AND s > 1 ORDER BY n DESC, user_id LIMIT 10",
        "SELECT user_id, COUNT(DISTINCT score), SUM(DISTINCT score), AVG(DISTINCT tid), COUNT(DISTINCT DATE(create_time)), MAX(amount) FROM post_reply WHERE user_id < 20 GROUP BY user_id ORDER BY user_id",
        "SELECT score, COUNT(DISTINCT user_id) u, COUNT(DISTINCT tag) t FROM post_reply WHERE score IS NOT NULL GROUP BY score ORDER BY u DESC, t DESC, score LIMIT 15",
    ] {
        qs.push(Q::new("several COUNT(DISTINCT)", sql));
    }
    qs.push(
        Q::new(
            "several COUNT(DISTINCT)",
            // No MIN/MAX of a string: the server describes one beside a COUNT(DISTINCT) with
            // 39 decimals, the shards (grouping by the DISTINCT argument) with 0.
            "SELECT user_id, COUNT(DISTINCT tag), COUNT(DISTINCT amount), MIN(score), MAX(amount) FROM post_reply WHERE user_id BETWEEN 100 AND 130 GROUP BY user_id ORDER BY user_id DESC LIMIT 5, 10",
        ),
    );
    qs.push(
        Q::new(
            "several COUNT(DISTINCT)",
            "SELECT tag, COUNT(DISTINCT score), COUNT(DISTINCT user_id), MIN(amount) FROM post_reply GROUP BY tag ORDER BY tag",
        )
        .ci(&[0]),
    );

    // --- UNION ALL / UNION of sharded selects (each part runs the whole union) ------------
    for _ in 0..6 {
        qs.push(Q::new(
            "UNION ALL + ORDER BY + LIMIT",
            format!(
                "SELECT id, tid, subject, score FROM post_reply WHERE {} UNION ALL SELECT id, tid, subject, score FROM post_reply WHERE {} ORDER BY score{}, id{} {}",
                selective_filter(r, data),
                selective_filter(r, data),
                dir(r),
                dir(r),
                limit(r, 300)
            ),
        ));
    }
    for _ in 0..4 {
        qs.push(
            Q::new(
                "UNION ALL",
                format!(
                    "SELECT id, user_id, tag FROM post_reply WHERE {} UNION ALL SELECT id, user_id, tag FROM post_reply WHERE tid IN ({})",
                    selective_filter(r, data),
                    tid_list(r, data, 3)
                ),
            )
            .multiset(),
        );
    }
    qs.push(
        Q::new(
            "UNION ALL deep page",
            "SELECT id, create_time FROM post_reply WHERE score > 50 UNION ALL SELECT id, create_time FROM post_reply WHERE score < -50 ORDER BY create_time DESC, id LIMIT 5000, 20",
        )
        .at_least(20),
    );
    qs.push(Q::new(
        "UNION ALL, types of both branches",
        "SELECT id, amount FROM post_reply WHERE tid = 4 UNION ALL SELECT user_id, score FROM post_reply WHERE user_id = 2 ORDER BY 2, 1",
    ));
    qs.push(Q::new(
        "UNION ALL, types of both branches",
        "SELECT id, 'a' AS src, create_time FROM post_reply WHERE tid = 8 UNION ALL SELECT id, 'bbb', DATE(create_time) FROM post_reply WHERE tid = 228596 ORDER BY src, id LIMIT 40",
    ));
    qs.push(
        Q::new(
            "UNION ALL, SELECT *",
            "SELECT * FROM post_reply WHERE tid = 1001 UNION ALL SELECT * FROM post_reply WHERE user_id = 3",
        )
        .multiset(),
    );
    // A branch with aggregates or a LIMIT of its own is answered when its key routes to one
    // sub-table; in the binary differential a key parameter may be bound as a DOUBLE,
    // which routes nowhere exactly (all sub-tables), and the union is then refused.
    qs.push(
        Q::new(
            "UNION ALL, one sub-table per branch",
            "SELECT COUNT(*), SUM(amount) FROM post_reply WHERE tid = 4 UNION ALL SELECT COUNT(*), SUM(amount) FROM post_reply WHERE tid = 228689 UNION ALL SELECT MAX(score), MIN(amount) FROM post_reply WHERE tid = 228601",
        )
        .multiset()
        .extra(),
    );
    qs.push(
        Q::new(
            "UNION ALL, one sub-table per branch",
            "(SELECT id FROM post_reply WHERE tid = 4 ORDER BY id DESC LIMIT 3) UNION ALL (SELECT id FROM post_reply WHERE tid = 8 ORDER BY id LIMIT 2) ORDER BY id",
        )
        .extra(),
    );
    qs.push(Q::new(
        "UNION ALL with an unsharded table",
        "SELECT id, tid FROM post_reply WHERE user_id = 7 UNION ALL SELECT id, tid FROM ref WHERE user_id = 8 ORDER BY id DESC, tid",
    ));
    for _ in 0..3 {
        qs.push(Q::new(
            "UNION",
            format!(
                "SELECT tid, user_id FROM post_reply WHERE {} UNION SELECT tid, user_id FROM post_reply WHERE {} ORDER BY user_id{}, tid {}",
                selective_filter(r, data),
                scatter_filter(r, data),
                dir(r),
                limit(r, 100)
            ),
        ));
    }
    qs.push(Q::new(
        "UNION",
        "SELECT tid FROM post_reply WHERE user_id = 123 UNION SELECT tid FROM post_reply WHERE score = 17 UNION DISTINCT SELECT tid FROM post_reply WHERE amount > 9999 ORDER BY tid",
    ));
    qs.push(
        Q::new(
            "UNION",
            "SELECT user_id, score FROM post_reply WHERE tid IN (4, 8) UNION SELECT user_id, score FROM post_reply WHERE amount > 9000",
        )
        .multiset(),
    );
    qs.push(
        Q::new(
            "UNION",
            "SELECT tag FROM post_reply WHERE user_id < 10 UNION SELECT tag FROM post_reply WHERE tid = 4 ORDER BY tag",
        )
        .ci(&[0]),
    );

    // --- GROUP_CONCAT with its own ORDER BY (issue 12): merged per group in that order ------
    // ORDER BY ending in `id` (unique) fixes every value's place; `tag`/`subject` are
    // utf8mb4_general_ci, `tid`/`user_id` repeat (ties: only equal values may tie).
    for sql in [
        "SELECT GROUP_CONCAT(id ORDER BY id) FROM post_reply WHERE user_id < 4".to_string(),
        "SELECT GROUP_CONCAT(id ORDER BY id DESC SEPARATOR '') FROM post_reply WHERE tid IN (4, 8, 12, 1001)".to_string(),
        "SELECT GROUP_CONCAT(subject, '|', amount ORDER BY create_time DESC, id SEPARATOR ' ; ') AS s FROM post_reply WHERE user_id = 7".to_string(),
        "SELECT user_id, GROUP_CONCAT(id ORDER BY id) FROM post_reply WHERE user_id < 30 GROUP BY user_id ORDER BY user_id".to_string(),
        "SELECT user_id, GROUP_CONCAT(tag ORDER BY id SEPARATOR '\\n') t, COUNT(*), SUM(amount), MIN(create_time), MAX(score), AVG(score) FROM post_reply WHERE user_id < 40 GROUP BY user_id ORDER BY user_id DESC".to_string(),
        "SELECT tid, GROUP_CONCAT(score, ':', user_id ORDER BY score DESC, id) FROM post_reply WHERE tid IN (228596, 228689, 4, 8, 12) GROUP BY tid ORDER BY tid".to_string(),
        "SELECT user_id, GROUP_CONCAT(tid ORDER BY tid) FROM post_reply WHERE user_id < 50 GROUP BY user_id ORDER BY user_id LIMIT 5, 10".to_string(),
        "SELECT user_id, GROUP_CONCAT(id ORDER BY id) g, COUNT(*) n FROM post_reply WHERE user_id < 60 GROUP BY user_id HAVING n > 2 ORDER BY n DESC, user_id LIMIT 12".to_string(),
        "SELECT DATE(create_time) d, GROUP_CONCAT(id ORDER BY id DESC) FROM post_reply WHERE tid IN (4, 8, 12, 16, 20) GROUP BY d ORDER BY d".to_string(),
        "SELECT user_id, GROUP_CONCAT(id ORDER BY id), GROUP_CONCAT(amount ORDER BY id SEPARATOR '/') FROM post_reply WHERE user_id < 15 GROUP BY user_id ORDER BY user_id".to_string(),
        "SELECT GROUP_CONCAT(DISTINCT tid ORDER BY tid) FROM post_reply WHERE user_id < 20".to_string(),
        "SELECT user_id, GROUP_CONCAT(DISTINCT score ORDER BY score DESC) FROM post_reply WHERE user_id < 25 GROUP BY user_id ORDER BY user_id".to_string(),
        "SELECT user_id, COUNT(*), GROUP_CONCAT(create_time ORDER BY create_time, id) FROM post_reply WHERE user_id < 10 GROUP BY user_id ORDER BY user_id".to_string(),
        "SELECT GROUP_CONCAT(id ORDER BY id), COUNT(*), MAX(amount) FROM post_reply WHERE tid = 999999".to_string(),
        "SELECT user_id, GROUP_CONCAT(id ORDER BY id) FROM post_reply WHERE tid = 999999 GROUP BY user_id".to_string(),
        "SELECT user_id, GROUP_CONCAT(message ORDER BY id) FROM post_reply WHERE user_id < 3 GROUP BY user_id ORDER BY user_id".to_string(),
    ] {
        qs.push(Q::new("GROUP_CONCAT", sql));
    }
    // Not generated: GROUP_CONCAT(DISTINCT tag ORDER BY tag). Of values equal under
    // utf8mb4_general_ci ('a', 'A', 'a ') the server keeps the first its scan meets, and
    // sluice the first in merged order: a different spelling (docs/sharding.md, known limits).
    // Without its own ORDER BY the server's order is unspecified: refused (1235).
    qs.push(
        Q::new(
            "GROUP_CONCAT without ORDER BY",
            "SELECT user_id, GROUP_CONCAT(id) FROM post_reply GROUP BY user_id",
        )
        .extra(),
    );

    // --- Shapes beyond the list: answered exactly, or refused --------------------
    for sql in [
        "SELECT GROUP_CONCAT(id ORDER BY id) FROM post_reply WHERE tid = 4",
        "SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM post_reply WHERE user_id = 123 ORDER BY id",
        "SELECT id FROM post_reply WHERE tid = 4 UNION SELECT id FROM post_reply WHERE tid = 8 ORDER BY id",
        "SELECT COUNT(*) FROM post_reply WHERE user_id IN (SELECT user_id FROM post_reply WHERE tid = 4)",
        "SELECT COUNT(*) FROM (SELECT tid FROM post_reply WHERE user_id = 123) d",
        "SELECT COUNT(DISTINCT user_id), COUNT(*) FROM post_reply",
        "SELECT COUNT(DISTINCT user_id), COUNT(DISTINCT tid) FROM post_reply",
        "SELECT user_id, GROUP_CONCAT(id ORDER BY id) FROM post_reply WHERE user_id < 5 GROUP BY user_id ORDER BY user_id",
        "SELECT id FROM post_reply WHERE tid = 4 UNION ALL SELECT id FROM post_reply WHERE tid = 8 ORDER BY id",
        "SELECT COUNT(*) FROM post_reply WHERE tid IN (SELECT tid FROM ref WHERE user_id = 123)",
        "SELECT SUM(amount) + 1, COUNT(*) * 2 FROM post_reply",
        "SELECT SUM(DISTINCT score) FROM post_reply",
        "SELECT STDDEV(score) FROM post_reply WHERE tid = 4",
        "SELECT * FROM post_reply WHERE user_id = 123 ORDER BY 5 DESC, 1 LIMIT 10",
        "SELECT id, score FROM post_reply WHERE user_id = 2 ORDER BY 2 DESC, 1 LIMIT 10",
        "SELECT id AS i, score AS s FROM post_reply WHERE user_id = 2 ORDER BY s, i LIMIT 10",
        "SELECT id, LENGTH(subject) FROM post_reply WHERE user_id = 5 ORDER BY LENGTH(subject) DESC, id",
        "SELECT id FROM post_reply WHERE user_id = 5 ORDER BY amount * -1, id",
        "SELECT p.id, r.user_id FROM post_reply p JOIN ref r ON r.id = p.id WHERE p.tid IN (228596, 4) ORDER BY p.id LIMIT 30",
        "SELECT a.id FROM post_reply a JOIN post_reply b ON a.id = b.id WHERE a.tid = 4 ORDER BY a.id LIMIT 5",
        "SELECT tid, COUNT(*) FROM post_reply WHERE tid IN (4, 8) GROUP BY tid WITH ROLLUP",
        "SELECT DISTINCT * FROM post_reply WHERE tid = 1001 ORDER BY id",
        "SELECT SQL_CALC_FOUND_ROWS id FROM post_reply WHERE user_id = 7 ORDER BY id LIMIT 3",
        "SELECT id FROM post_reply WHERE subject LIKE '%\\\\%' ORDER BY id LIMIT 20",
        "SELECT id FROM post_reply WHERE tid NOT IN (4, 8) AND user_id = 9 ORDER BY id",
        "SELECT id, tid FROM post_reply WHERE tid BETWEEN 4 AND 12 ORDER BY id LIMIT 40",
        "SELECT COUNT(*) FROM post_reply WHERE tid = 4 OR user_id = 123",
        "SELECT 1 + 1, COUNT(*) FROM post_reply",
        "SELECT id FROM post_reply ORDER BY id LIMIT 0",
        "SELECT MAX(id) - MIN(id) FROM post_reply",
        "SELECT user_id, COUNT(*) FROM post_reply GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5",
        "SELECT id FROM post_reply WHERE id = 77 FOR UPDATE",
        "SELECT post_reply.id, post_reply.tid FROM post_reply WHERE post_reply.tid = 8 ORDER BY post_reply.id LIMIT 5",
    ] {
        qs.push(Q::new("beyond the list", sql).extra());
    }
    // '' = ' ' (PAD SPACE): which spelling names the group is not determined.
    qs.push(
        Q::new(
            "beyond the list",
            "SELECT UPPER(tag) AS t, COUNT(*) FROM post_reply GROUP BY UPPER(tag) ORDER BY t",
        )
        .extra()
        .ci(&[0]),
    );
    qs
}
