//! Random statements over a random schema, from a grammar of what the README claims for
//! sharded tables: ORDER BY/LIMIT, aggregates, GROUP BY/HAVING, DISTINCT, UNION,
//! subqueries and joins on an unsharded table, expressions of every type, comments and
//! literal spellings. A statement is kept as parts so that a failure can be shrunk by
//! dropping parts; `@T@` stands for the table (sharded through sluice, the reference
//! table directly).

use super::schema::{literal, quote, Col, Kind, Rng, Schema, COLLATIONS};

#[derive(Debug, Clone, Default)]
pub struct Sel {
    pub distinct: bool,
    pub items: Vec<String>,
    pub join: bool,
    pub wheres: Vec<String>,
    pub group: Vec<String>,
    pub having: Option<String>,
    pub order: Vec<String>,
    pub limit: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Select(Sel),
    /// `a UNION [ALL] b [ORDER BY 1] [LIMIT …]` (both branches on the table).
    Union {
        all: bool,
        a: Sel,
        b: Sel,
        order: bool,
        limit: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub struct Gen {
    pub stmt: Stmt,
    /// The order of the rows is fixed by the statement (compare in order).
    pub ordered: bool,
    /// Statements run on both connections before it (user variables).
    pub pre: Vec<String>,
}

impl Sel {
    pub fn render(&self, table: &str) -> String {
        let mut s = String::from("SELECT ");
        if self.distinct {
            s.push_str("DISTINCT ");
        }
        s.push_str(&self.items.join(", "));
        s.push_str(" FROM @T@");
        if self.join {
            s.push_str(" JOIN u ON u.uk = @T@.k");
        }
        if !self.wheres.is_empty() {
            s.push_str(" WHERE ");
            s.push_str(&self.wheres.join(" AND "));
        }
        if !self.group.is_empty() {
            s.push_str(" GROUP BY ");
            s.push_str(&self.group.join(", "));
        }
        if let Some(h) = &self.having {
            s.push_str(" HAVING ");
            s.push_str(h);
        }
        if !self.order.is_empty() {
            s.push_str(" ORDER BY ");
            s.push_str(&self.order.join(", "));
        }
        if let Some(l) = &self.limit {
            s.push_str(" LIMIT ");
            s.push_str(l);
        }
        s.replace("@T@", table)
    }
}

impl Stmt {
    pub fn render(&self, table: &str) -> String {
        match self {
            Stmt::Select(s) => s.render(table),
            Stmt::Union {
                all,
                a,
                b,
                order,
                limit,
            } => {
                let mut s = format!(
                    "{} UNION {}{}",
                    a.render(table),
                    if *all { "ALL " } else { "" },
                    b.render(table)
                );
                if *order {
                    s.push_str(" ORDER BY 1");
                }
                if let Some(l) = limit {
                    s.push_str(" LIMIT ");
                    s.push_str(l);
                }
                s
            }
        }
    }

    /// Smaller statements: each with one part dropped.
    pub fn shrinks(&self) -> Vec<Stmt> {
        match self {
            Stmt::Select(s) => sel_shrinks(s).into_iter().map(Stmt::Select).collect(),
            Stmt::Union {
                all,
                a,
                b,
                order,
                limit,
            } => {
                let mut out = vec![Stmt::Select(a.clone()), Stmt::Select(b.clone())];
                let u = |all, a: &Sel, b: &Sel, order, limit: &Option<String>| Stmt::Union {
                    all,
                    a: a.clone(),
                    b: b.clone(),
                    order,
                    limit: limit.clone(),
                };
                if limit.is_some() {
                    out.push(u(*all, a, b, *order, &None));
                }
                if *order && limit.is_none() {
                    out.push(u(*all, a, b, false, &None));
                }
                for x in sel_shrinks(a) {
                    out.push(u(*all, &x, b, *order, limit));
                }
                for x in sel_shrinks(b) {
                    out.push(u(*all, a, &x, *order, limit));
                }
                out
            }
        }
    }
}

fn sel_shrinks(s: &Sel) -> Vec<Sel> {
    let mut out = Vec::new();
    let mut push = |f: &dyn Fn(&mut Sel)| {
        let mut x = s.clone();
        f(&mut x);
        out.push(x);
    };
    if s.limit.is_some() {
        push(&|x| x.limit = None);
    }
    if s.having.is_some() {
        push(&|x| x.having = None);
    }
    if s.distinct {
        push(&|x| x.distinct = false);
    }
    for i in 0..s.wheres.len() {
        push(&|x| {
            x.wheres.remove(i);
        });
    }
    if s.limit.is_none() {
        for i in 0..s.order.len() {
            push(&|x| {
                x.order.remove(i);
            });
        }
    }
    // A key leaves the select list with the GROUP BY (a non-aggregated column without
    // its GROUP BY would show whichever row the server met first); the last key only
    // goes when nothing else but aggregates remains.
    for i in 0..s.group.len() {
        push(&|x| {
            let key = x.group.remove(i);
            x.items.retain(|it| *it != key);
            x.order.retain(|o| !o.starts_with(key.as_str()));
        });
    }
    if s.items.len() > 1 {
        for i in (0..s.items.len()).filter(|&i| !s.group.contains(&s.items[i])) {
            push(&|x| {
                x.items.remove(i);
            });
        }
    }
    if s.join {
        push(&|x| x.join = false);
    }
    out
}

/// Session settings: one is applied to both connections every few statements.
pub const SETTINGS: &[&str] = &[
    "SET time_zone = '+00:00'",
    "SET time_zone = '-05:00'",
    "SET time_zone = '+13:45'",
    "SET time_zone = 'Europe/Berlin'",
    "SET time_zone = 'America/New_York'",
    "SET time_zone = DEFAULT",
    "SET max_sort_length = 8",
    "SET max_sort_length = 20",
    "SET max_sort_length = DEFAULT",
    "SET div_precision_increment = 0",
    "SET div_precision_increment = 7",
    "SET div_precision_increment = DEFAULT",
    "SET sql_mode = 'ANSI_QUOTES'",
    "SET sql_mode = 'PAD_CHAR_TO_FULL_LENGTH'",
    "SET sql_mode = 'ANSI'",
    "SET sql_mode = DEFAULT",
    "SET NAMES latin1",
    "SET NAMES utf8mb4",
    "SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci",
    "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
    "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci",
    "SET sql_select_limit = 5",
    "SET sql_select_limit = DEFAULT",
];

/// Expressions of a column (its own type, or another through a function).
fn expr(rng: &mut Rng, c: &Col) -> String {
    let n = &c.name;
    let forms: Vec<String> = match c.kind {
        Kind::Str { latin1 } => {
            let cs = if latin1 { "latin1" } else { "utf8mb4" };
            let other: Vec<&str> = COLLATIONS
                .iter()
                .filter(|(s, _)| *s == cs)
                .map(|(_, c)| *c)
                .collect();
            vec![
                n.clone(),
                n.clone(),
                format!("CONCAT({n}, '')"),
                format!("LOWER({n})"),
                format!("UPPER({n})"),
                format!("LEFT({n}, 2)"),
                format!("TRIM({n})"),
                format!("{n} COLLATE {}", rng.pick(&other)),
                format!("CHAR_LENGTH({n})"),
                format!("CONCAT({n}, k)"),
            ]
        }
        Kind::Int | Kind::Decimal | Kind::Float => vec![
            n.clone(),
            n.clone(),
            format!("{n} + 1"),
            format!("{n}  *  2"),
            format!("{n} / 3"),
            format!("{n} DIV 2"),
            format!("ABS({n})"),
            format!("CAST({n} AS CHAR)"),
            format!("ROUND({n}, 1)"),
        ],
        Kind::Date | Kind::DateTime | Kind::Timestamp => vec![
            n.clone(),
            n.clone(),
            format!("DATE({n})"),
            format!("{n} + INTERVAL 1 DAY"),
            format!("YEAR({n})"),
            format!("UNIX_TIMESTAMP({n})"),
            format!("DATE_FORMAT({n}, '%Y-%m')"),
            format!("CAST({n} AS CHAR)"),
        ],
        Kind::Time => vec![
            n.clone(),
            format!("{n} + 0"),
            format!("HOUR({n})"),
            format!("TIME_TO_SEC({n})"),
        ],
        Kind::Year => vec![n.clone(), format!("{n} + 0")],
        Kind::Bytes => vec![n.clone(), n.clone(), format!("HEX({n})"), format!("LENGTH({n})")],
        Kind::Bit => vec![n.clone(), format!("{n} + 0"), format!("BIN({n})")],
        Kind::Enum => vec![n.clone(), format!("{n} + 0"), format!("CONCAT({n}, '')")],
        Kind::Json => vec![
            n.clone(),
            format!("JSON_TYPE({n})"),
            format!("JSON_EXTRACT({n}, '$.a')"),
        ],
    };
    rng.pick(&forms).clone()
}

fn numeric(c: &Col) -> bool {
    matches!(
        c.kind,
        Kind::Int | Kind::Decimal | Kind::Year | Kind::Time | Kind::Bit
    )
}

/// A literal to compare a column with, in the spellings applications use.
fn cmp_literal(rng: &mut Rng, c: &Col) -> String {
    match c.kind {
        Kind::DateTime | Kind::Timestamp | Kind::Date if rng.chance(30) => rng
            .pick(&[
                "'9999/12/31'",
                "'99991231'",
                "10000101",
                "20210328",
                "'2021-03-28'",
            ])
            .to_string(),
        Kind::Time if rng.chance(30) => rng.pick(&["'100:00'", "1000000", "'12:30'"]).to_string(),
        Kind::Bytes | Kind::Int | Kind::Bit if rng.chance(20) => rng.pick(&["0x05", "0x41", "5"]).to_string(),
        _ => literal(rng, c.kind, &c.ty),
    }
}

fn condition(rng: &mut Rng, s: &Schema) -> String {
    if rng.chance(20) {
        return match rng.below(6) {
            0 => format!("k = {}", rng.below(10)),
            1 => format!("k IN ({}, {})", rng.below(10), rng.below(10)),
            2 => "k IN (SELECT uk FROM u WHERE uname <> 'x')".to_string(),
            3 => format!("k = {} /*!50700 OR k = 2 */", rng.below(10)),
            4 => "k > 0 /*M!100000 AND k < 5 */".to_string(),
            _ => "k > (SELECT MIN(uk) FROM u)".to_string(),
        };
    }
    let c = rng.pick(&s.cols).clone();
    let e = if rng.chance(70) {
        c.name.clone()
    } else {
        expr(rng, &c)
    };
    match rng.below(8) {
        0 => format!("{e} IS NULL"),
        1 => format!("{e} IS NOT NULL"),
        2 => format!("{e} IN ({}, {})", cmp_literal(rng, &c), cmp_literal(rng, &c)),
        3 if matches!(c.kind, Kind::Str { .. }) => format!("{e} LIKE 'a%'"),
        4 => format!("{e} <> {}", cmp_literal(rng, &c)),
        5 => format!("{e} < {}", cmp_literal(rng, &c)),
        6 => format!("{e} >= {}", cmp_literal(rng, &c)),
        _ => format!("{e} = {}", cmp_literal(rng, &c)),
    }
}

fn aggregate(rng: &mut Rng, s: &Schema) -> String {
    let c = rng.pick(&s.cols).clone();
    let e = if rng.chance(60) {
        c.name.clone()
    } else {
        expr(rng, &c)
    };
    match rng.below(9) {
        0 => "COUNT(*)".into(),
        1 => format!("COUNT({e})"),
        2 => format!("COUNT(DISTINCT {e})"),
        3 | 4 if numeric(&c) => format!("SUM({e})"),
        5 if numeric(&c) => format!("AVG({e})"),
        6 => format!("MIN({e})"),
        7 => format!("MAX({e})"),
        8 => format!("GROUP_CONCAT({e} ORDER BY {e} SEPARATOR ',')"),
        _ => format!("MAX({e})"),
    }
}

fn limit(rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => format!("{}", 1 + rng.below(5)),
        1 => format!("{}, {}", rng.below(6), 1 + rng.below(6)),
        _ => format!("{} OFFSET {}", 1 + rng.below(6), rng.below(4)),
    }
}

fn dir(rng: &mut Rng) -> &'static str {
    rng.pick::<&str>(&["", " ASC", " DESC"])
}

fn wheres(rng: &mut Rng, s: &Schema) -> Vec<String> {
    (0..rng.below(3)).map(|_| condition(rng, s)).collect()
}

/// A plain select: columns and expressions, ORDER BY (with `id` last when the order
/// is to be fixed), LIMIT only then.
fn plain(rng: &mut Rng, s: &Schema, short_sort: bool) -> (Sel, bool) {
    let mut sel = Sel {
        wheres: wheres(rng, s),
        join: rng.chance(10),
        ..Sel::default()
    };
    sel.items.push("id".into());
    for _ in 0..1 + rng.below(3) {
        let c = rng.pick(&s.cols).clone();
        sel.items.push(expr(rng, &c));
    }
    if sel.join {
        sel.items.push("uname".into());
    }
    // Names the server takes from the client's text (a parenthesis first, literals named
    // by their spelling), and what a statement computes over its row sequence or from
    // its connection (refused across sub-tables).
    match rng.below(14) {
        0 => sel.items.push("k  +  1".into()),
        1 => sel.items.push("0x41 + 0".into()),
        2 => sel.items.push("k /* the key */".into()),
        3 => sel.items.push("(k, 1) = (1, 1)".into()),
        4 => sel.items.push("( k  *  2 )".into()),
        5 => sel.items.push(
            rng.pick(&["x'41'", "b'01'", "- 1", "date '2020-01-01'", "( 'a' )"])
                .to_string(),
        ),
        6 => sel.items.push(
            rng.pick(&["RAND(3) < 2", "ROWNUM() > 0", "LAST_INSERT_ID()"])
                .to_string(),
        ),
        _ => {}
    }
    for _ in 0..rng.below(3) {
        let c = rng.pick(&s.cols).clone();
        let e = if rng.chance(60) {
            c.name.clone()
        } else {
            expr(rng, &c)
        };
        sel.order.push(format!("{e}{}", dir(rng)));
    }
    let total = rng.chance(75);
    if total {
        sel.order.push(format!("id{}", dir(rng)));
        if rng.chance(60) {
            sel.limit = Some(limit(rng));
        }
    }
    let _ = short_sort;
    (sel, total)
}

fn grouped(rng: &mut Rng, s: &Schema, short_sort: bool) -> (Sel, bool) {
    let mut sel = Sel {
        wheres: wheres(rng, s),
        ..Sel::default()
    };
    for _ in 0..1 + rng.below(2) {
        let c = rng.pick(&s.cols).clone();
        let e = if rng.chance(50) {
            c.name.clone()
        } else {
            expr(rng, &c)
        };
        if !sel.group.contains(&e) {
            sel.group.push(e);
        }
    }
    if rng.chance(15) {
        sel.group.push("k".into());
    }
    sel.items = sel.group.clone();
    for _ in 0..1 + rng.below(3) {
        sel.items.push(aggregate(rng, s));
    }
    if rng.chance(35) {
        sel.having = Some(match rng.below(3) {
            0 => format!("COUNT(*) > {}", rng.below(3)),
            1 => {
                let c = rng.pick(&s.cols).clone();
                format!("MAX({}) >= {}", c.name, cmp_literal(rng, &c))
            }
            _ => match s.cols.iter().find(|c| sel.group.contains(&c.name)) {
                Some(c) => format!("{} <> {}", c.name, cmp_literal(rng, c)),
                None => "COUNT(*) >= 1".into(),
            },
        });
    }
    let mut total = false;
    if rng.chance(70) {
        for g in &sel.group {
            sel.order.push(format!("{g}{}", dir(rng)));
        }
        if rng.chance(30) {
            let i = 1 + rng.below(sel.items.len());
            sel.order.insert(0, format!("{i}{}", dir(rng)));
        }
        total = !short_sort;
        if total && rng.chance(50) {
            sel.limit = Some(limit(rng));
        }
    }
    (sel, total)
}

fn aggregates(rng: &mut Rng, s: &Schema) -> (Sel, bool) {
    let sel = Sel {
        wheres: wheres(rng, s),
        items: (0..1 + rng.below(4)).map(|_| aggregate(rng, s)).collect(),
        ..Sel::default()
    };
    (sel, true)
}

fn distinct(rng: &mut Rng, s: &Schema, short_sort: bool) -> (Sel, bool) {
    let mut sel = Sel {
        distinct: true,
        wheres: wheres(rng, s),
        ..Sel::default()
    };
    for _ in 0..1 + rng.below(2) {
        let c = rng.pick(&s.cols).clone();
        sel.items.push(expr(rng, &c));
    }
    let total = rng.chance(60);
    if total {
        sel.order = sel.items.iter().map(|e| format!("{e}{}", dir(rng))).collect();
        if !short_sort && rng.chance(50) {
            sel.limit = Some(limit(rng));
        }
    }
    (sel, total && !short_sort)
}

fn union(rng: &mut Rng, s: &Schema, short_sort: bool) -> (Stmt, bool) {
    let c = rng.pick(&s.cols).clone();
    let e = expr(rng, &c);
    let branch = |rng: &mut Rng| Sel {
        items: vec![e.clone()],
        wheres: vec![condition(rng, s)],
        ..Sel::default()
    };
    let a = branch(rng);
    let b = branch(rng);
    let all = rng.chance(50);
    let order = rng.chance(70);
    // UNION ALL keeps equal-sorting values apart: their order, and a LIMIT's cut, is not fixed.
    let total = order && !all && !short_sort;
    let limit = (total && rng.chance(50)).then(|| limit(rng));
    (
        Stmt::Union {
            all,
            a,
            b,
            order,
            limit,
        },
        total,
    )
}

pub fn statement(rng: &mut Rng, s: &Schema, short_sort: bool) -> Gen {
    let mut pre = Vec::new();
    let (stmt, ordered) = match rng.below(20) {
        0..=5 => {
            let (s, t) = plain(rng, s, short_sort);
            (Stmt::Select(s), t)
        }
        6..=7 => {
            let (s, t) = aggregates(rng, s);
            (Stmt::Select(s), t)
        }
        8..=13 => {
            let (s, t) = grouped(rng, s, short_sort);
            (Stmt::Select(s), t)
        }
        14..=16 => {
            let (s, t) = distinct(rng, s, short_sort);
            (Stmt::Select(s), t)
        }
        17..=18 => union(rng, s, short_sort),
        _ => {
            // A user variable counting rows: the server numbers every row once.
            pre.push("SET @rn = 0".to_string());
            let sel = Sel {
                items: vec!["id".into(), "@rn := @rn + 1".into()],
                wheres: vec![condition(rng, s)],
                order: vec!["id".into()],
                ..Sel::default()
            };
            (Stmt::Select(sel), true)
        }
    };
    Gen { stmt, ordered, pre }
}

/// The unsharded lookup table (same on both sides, reached through sluice unsharded).
pub fn lookup_table() -> Vec<String> {
    vec![
        "CREATE TABLE u (uk INT NOT NULL PRIMARY KEY, uname VARCHAR(10) NOT NULL)".to_string(),
        format!(
            "INSERT INTO u VALUES {}",
            (0..8)
                .map(|i| format!(
                    "({}, {})",
                    i * 2 - 2,
                    quote(if i % 2 == 0 { "even" } else { "Odd" })
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ]
}
