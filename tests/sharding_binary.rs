//! Sharded tables in the binary protocol, differentially (issue 12): the data set and the
//! query generator of `tests/sharding.rs` (`tests/sharding_gen/corpus.rs`), every generated
//! statement turned into a prepared statement by replacing its comparison, IN-list and
//! LIMIT literals with `?` and binding them with typed parameters (integers of every
//! width and sign, DECIMAL, DOUBLE, strings, BLOB bytes, DATETIME), plus typed probes
//! (`SELECT ?` and expressions of each bound type: DATE, DATETIME(6), TIME, NULL,
//! strings with quotes, backslashes and emoji, bytes that are not UTF-8, `LIMIT ?` with
//! a string or a double), run through sluice on the sharded table `post_reply` and
//! directly on the unsharded reference table `ref`. Compared: prepare answers (parameter
//! and column counts), column definitions (name, type, flags, decimals, length,
//! character set) and the raw bytes of every binary row (as a multiset where ORDER BY
//! does not fix the order). Refusals (1235) are counted by shape; a refusal of a shape
//! the issue lists as supported fails the test.
//!
//! Also the INSERT shapes with typed parameters (column list given, and none), checked
//! by the contents of both tables afterwards.

mod common;
use common::wire::def_diff;

mod sharding_gen {
    pub mod corpus;
    #[allow(dead_code)]
    pub mod schema;
}
use sharding_gen::corpus as gen;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cluster::*;
use common::wire::{self, lenenc_value as lenenc, raw, Column, Param, Part, Reply as WReply, Wire};
use gen::*;

/// Rows loaded: fewer than the text run (every statement here costs a prepare, an
/// execute and a close per shard), enough for every generated shape to have rows.
const ROWS: u32 = 20_000;

fn sharding_yaml(db: &str) -> String {
    format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.post_reply.tid.4\"]\n"
    )
}

async fn wire_to(addr: &str, user: &str, password: &str, db: &str) -> Wire {
    wire::driver_login(addr, user, password, db, Duration::from_secs(120)).await
}

async fn must(w: &mut Wire, sql: &str) {
    match w.query(sql).await {
        WReply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))) => {}
        other => panic!("{sql}: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Typed parameters
// ---------------------------------------------------------------------------------------

const TINY: u8 = 0x01;
const SHORT: u8 = 0x02;
const LONG: u8 = 0x03;
const FLOAT: u8 = 0x04;
const DOUBLE: u8 = 0x05;
const TIMESTAMP: u8 = 0x07;
const LONGLONG: u8 = 0x08;
const DATE: u8 = 0x0a;
const TIME: u8 = 0x0b;
const DATETIME: u8 = 0x0c;
const NEWDECIMAL: u8 = 0xf6;
const BLOB: u8 = 0xfc;
const VAR_STRING: u8 = 0xfd;
const STRING: u8 = 0xfe;

fn p_str(ty: u8, s: &[u8]) -> Param {
    raw(ty, false, lenenc(s))
}
fn p_int(ty: u8, unsigned: bool, v: i64) -> Param {
    let w = match ty {
        TINY => 1,
        SHORT => 2,
        LONG => 4,
        _ => 8,
    };
    raw(ty, unsigned, v.to_le_bytes()[..w].to_vec())
}
fn p_double(v: f64) -> Param {
    raw(DOUBLE, false, v.to_le_bytes().to_vec())
}
fn p_float(v: f32) -> Param {
    raw(FLOAT, false, v.to_le_bytes().to_vec())
}
#[allow(clippy::too_many_arguments)]
fn p_datetime(ty: u8, y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, micro: u32) -> Param {
    let mut v = y.to_le_bytes().to_vec();
    v.extend_from_slice(&[mo, d]);
    if ty != DATE {
        v.extend_from_slice(&[h, mi, s]);
        if micro != 0 {
            v.extend_from_slice(&micro.to_le_bytes());
        }
    }
    let mut out = vec![v.len() as u8];
    out.extend(v);
    raw(ty, false, out)
}
fn p_time(neg: bool, days: u32, h: u8, mi: u8, s: u8, micro: u32) -> Param {
    let mut v = vec![u8::from(neg)];
    v.extend_from_slice(&days.to_le_bytes());
    v.extend_from_slice(&[h, mi, s]);
    if micro != 0 {
        v.extend_from_slice(&micro.to_le_bytes());
    }
    let mut out = vec![v.len() as u8];
    out.extend(v);
    raw(TIME, false, out)
}

/// A literal of a generated statement, as the parameter that replaces it.
#[derive(Clone, Debug)]
enum Lit {
    Int(i64),
    Dec(String),
    Str(Vec<u8>),
}

/// The typed parameter for a literal, the type chosen by `rng` among those MariaDB
/// converts to the same value; `limit`: a LIMIT operand (integers, or their string or
/// double form, which MariaDB also takes).
fn typed(l: &Lit, rng: &mut Rng, limit: bool) -> Param {
    match l {
        Lit::Int(n) => {
            let n = *n;
            let mut choices: Vec<Param> = vec![p_int(LONGLONG, false, n)];
            if i32::try_from(n).is_ok() {
                choices.push(p_int(LONG, false, n));
            }
            if i16::try_from(n).is_ok() {
                choices.push(p_int(SHORT, false, n));
            }
            if i8::try_from(n).is_ok() {
                choices.push(p_int(TINY, false, n));
            }
            if n >= 0 {
                choices.push(p_int(LONGLONG, true, n));
                if u8::try_from(n).is_ok() {
                    choices.push(p_int(TINY, true, n));
                }
            }
            choices.push(p_str(VAR_STRING, n.to_string().as_bytes()));
            if !limit {
                choices.push(p_str(NEWDECIMAL, n.to_string().as_bytes()));
            }
            choices.push(p_double(n as f64));
            let k = rng.below(choices.len() as u64) as usize;
            choices.swap_remove(k)
        }
        Lit::Dec(d) => match rng.below(3) {
            0 => p_str(NEWDECIMAL, d.as_bytes()),
            1 => p_str(VAR_STRING, d.as_bytes()),
            _ => p_str(NEWDECIMAL, d.as_bytes()),
        },
        Lit::Str(s) => match rng.below(4) {
            0 => p_str(STRING, s),
            _ => p_str(VAR_STRING, s),
        },
    }
}

/// Unescapes the body of a single-quoted literal (backslash escapes, doubled quotes).
fn unescape(body: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut it = body.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' => match it.next() {
                Some('n') => out.push(b'\n'),
                Some('0') => out.push(0),
                Some('t') => out.push(b'\t'),
                Some('r') => out.push(b'\r'),
                Some('Z') => out.push(26),
                Some('%') => out.extend_from_slice(b"\\%"),
                Some('_') => out.extend_from_slice(b"\\_"),
                Some(x) => {
                    let mut b = [0; 4];
                    out.extend_from_slice(x.encode_utf8(&mut b).as_bytes());
                }
                None => {}
            },
            '\'' => {
                // A doubled quote.
                it.next();
                out.push(b'\'');
            }
            c => {
                let mut b = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out
}

/// Replaces the literals a prepared statement would bind (operands of comparisons,
/// LIKE, BETWEEN, IN lists, LIMIT/OFFSET) with `?`; positions (`ORDER BY 2`), function
/// arguments and arithmetic operands stay. Returns the statement and its literals, each
/// with whether it is a LIMIT operand.
fn parameterize(sql: &str) -> (String, Vec<(Lit, bool)>) {
    let b: Vec<char> = sql.chars().collect();
    let mut out = String::with_capacity(sql.len());
    let mut lits = Vec::new();
    let mut prev = String::new(); // previous significant token, upper-cased
    let mut in_list: Vec<usize> = Vec::new(); // paren depths of open IN lists
    let mut depth = 0usize;
    let mut between = false;
    let mut after_limit = false;
    let mut i = 0;
    let binds = |prev: &str, in_list: &[usize], depth: usize, between: bool, after_limit: bool| {
        matches!(
            prev,
            "=" | "<" | ">" | "<=" | ">=" | "<>" | "!=" | "LIKE" | "BETWEEN" | "LIMIT" | "OFFSET"
        ) || (prev == "AND" && between)
            || (matches!(prev, "(" | ",") && in_list.last() == Some(&depth))
            || (prev == "," && after_limit)
    };
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            out.push(c);
            i += 1;
            continue;
        }
        if c == '\'' {
            let start = i;
            i += 1;
            while i < b.len() {
                if b[i] == '\\' {
                    i += 2;
                    continue;
                }
                if b[i] == '\'' {
                    if b.get(i + 1) == Some(&'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            let text: String = b[start..=i.min(b.len() - 1)].iter().collect();
            i += 1;
            if binds(&prev, &in_list, depth, between, after_limit) {
                let body = &text[1..text.len() - 1];
                lits.push((Lit::Str(unescape(body)), prev == "LIMIT" || after_limit));
                out.push('?');
                if prev == "AND" {
                    between = false;
                }
            } else {
                out.push_str(&text);
            }
            prev = "'".into();
            continue;
        }
        if c.is_ascii_digit()
            && !(i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_' || b[i - 1] == '.'))
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == '.') {
                i += 1;
            }
            let text: String = b[start..i].iter().collect();
            let glued = i < b.len() && (b[i].is_alphanumeric() || b[i] == '_');
            let limit_operand = prev == "LIMIT" || prev == "OFFSET" || after_limit;
            if !glued && binds(&prev, &in_list, depth, between, after_limit) {
                let lit = match text.parse::<i64>() {
                    Ok(n) => Lit::Int(n),
                    Err(_) => Lit::Dec(text.clone()),
                };
                lits.push((lit, limit_operand));
                out.push('?');
                if prev == "AND" {
                    between = false;
                }
                after_limit = prev == "LIMIT";
            } else {
                out.push_str(&text);
                after_limit = false;
            }
            prev = "0".into();
            continue;
        }
        if c == '`' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != '`' {
                i += 1;
            }
            i += 1;
            out.extend(&b[start..i.min(b.len())]);
            prev = "`".into();
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_' || b[i] == '.') {
                i += 1;
            }
            let w: String = b[start..i].iter().collect();
            out.push_str(&w);
            let up = w.to_ascii_uppercase();
            if up == "BETWEEN" {
                between = true;
            }
            if up == "IN" {
                // The next `(` opens a list.
                in_list.push(usize::MAX);
            }
            after_limit = false;
            prev = up;
            continue;
        }
        // Operators and punctuation.
        let two: String = b[i..(i + 2).min(b.len())].iter().collect();
        let op = if matches!(two.as_str(), "<=" | ">=" | "<>" | "!=") {
            two
        } else {
            c.to_string()
        };
        i += op.chars().count();
        out.push_str(&op);
        match op.as_str() {
            "(" => {
                depth += 1;
                if in_list.last() == Some(&usize::MAX) && prev == "IN" {
                    *in_list.last_mut().unwrap_or(&mut 0) = depth;
                }
            }
            ")" => {
                if in_list.last() == Some(&depth) {
                    in_list.pop();
                }
                depth = depth.saturating_sub(1);
            }
            "," => {}
            _ => after_limit = false,
        }
        if op != "," {
            after_limit = false;
        }
        if prev == "IN" && op != "(" {
            in_list.pop();
        }
        prev = op;
    }
    (out, lits)
}

// ---------------------------------------------------------------------------------------
// Comparing
// ---------------------------------------------------------------------------------------

/// A column definition in one line, every field (name, org_name, table, org_table, schema,
/// character set, length, type, flags, decimals), with the table `physical` (the
/// reference table, or sub-table 0 when run directly) named by the logical table
/// `post_reply`, as sluice must name it.
fn logical_def(c: &Column, physical: &str) -> String {
    let mut c = c.clone();
    for t in [&mut c.table, &mut c.org_table] {
        if t == physical {
            *t = "post_reply".to_string();
        }
    }
    c.render()
}

/// What one side answered to a prepared statement.
#[derive(Debug)]
#[allow(dead_code)] // fields are read through Debug in mismatch reports
enum Seen {
    PrepareErr(u16, String),
    Err(u16, String),
    Rows {
        prepared: (usize, usize),
        /// The result set's column definitions ([`logical_def`]).
        columns: Vec<String>,
        /// The column definitions the PREPARE answer announced ([`logical_def`]).
        prepare_columns: Vec<String>,
        rows: Vec<Vec<u8>>,
        rendered: Vec<Vec<String>>,
    },
    Ok(u64),
    Broken(String),
}

/// `physical`: the table the statement names (its definitions are rendered with the
/// logical name in its place).
async fn run_prepared(w: &mut Wire, sql: &str, params: &[Param], physical: &str) -> Seen {
    let p = match w.prepare(sql).await {
        WReply::Prepared(p) => p,
        WReply::PrepareErr(e) => return Seen::PrepareErr(e.code, e.message),
        other => return Seen::Broken(format!("{other:?}")),
    };
    let r = w.execute(p.stmt_id, params).await;
    let raw = std::mem::take(&mut w.raw_rows);
    let _ = w.close_stmt(p.stmt_id).await;
    match r {
        WReply::Parts(parts) => match parts.into_iter().next() {
            Some(Part::Rows(rs)) => Seen::Rows {
                prepared: (p.params.len(), p.columns.len()),
                columns: rs.columns.iter().map(|c| logical_def(c, physical)).collect(),
                prepare_columns: p.columns.iter().map(|c| logical_def(c, physical)).collect(),
                rows: raw,
                rendered: rs.rows,
            },
            Some(Part::Ok(ok)) => Seen::Ok(ok.affected_rows),
            Some(Part::Err(e)) => Seen::Err(e.code, e.message),
            None => Seen::Broken("no result".into()),
        },
        other => Seen::Broken(format!("{other:?}")),
    }
}

/// Floating-point addition is not associative: a DOUBLE SUM over shards (partial sums
/// added) can differ from the server's one running sum in the last bits. Such cells are
/// counted and reported, not failed on, when equal to 12 significant digits.
fn double_close(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => false,
    }
}

/// Whether the server takes two strings as equal under utf8mb4_general_ci.
async fn ci_equal(direct: &mut Wire, a: &str, b: &str) -> bool {
    let sql = format!(
        "SELECT _utf8mb4 X'{}' = _utf8mb4 X'{}' COLLATE utf8mb4_general_ci",
        wire::hex(a.as_bytes()),
        wire::hex(b.as_bytes())
    );
    match direct.query(&sql).await {
        WReply::Parts(p) => {
            matches!(p.first(), Some(Part::Rows(r)) if r.rows.first().and_then(|x| x.first()).map(String::as_str) == Some("1"))
        }
        _ => false,
    }
}

/// PAD SPACE and utf8mb4_general_ci folding, for columns whose spelling within a group of
/// equal strings is not determined.
fn fold(s: &str) -> String {
    s.trim_end_matches(' ').to_lowercase()
}

#[derive(Default)]
struct Tally {
    queries: usize,
    rows: usize,
    mismatches: Vec<String>,
    refused: BTreeMap<String, (usize, String)>,
    refused_supported: Vec<String>,
    both_failed: usize,
    /// Result sets whose column definitions were compared (both sides answered rows).
    defs_compared: usize,
    /// ... equal (every field) to the reference table's.
    defs_equal_reference: usize,
    /// ... equal to the server's own for the statement run on sub-table 0 directly.
    defs_equal_sub0: usize,
    /// Statements the server itself describes differently on the reference table and
    /// on sub-table 0 (two tables, two plans), with the first 40 for the report.
    server_differs: usize,
    server_differs_examples: Vec<String>,
    /// Statements whose PREPARE answer's column definitions differ from their
    /// EXECUTE result's on sub-table 0 (the server itself), with examples.
    prepare_vs_execute: usize,
    prepare_vs_execute_examples: Vec<String>,
    /// DOUBLE cells equal to 12 significant digits but not to the last bit.
    double_rounding: usize,
}

impl Tally {
    /// `sub0`: the statement run directly on sub-table 0 (SELECTs only), whose column
    /// definitions sluice's must equal; those of the reference (`want`) may differ only
    /// where the server's own for sub-table 0 do too.
    #[allow(clippy::too_many_arguments)]
    async fn compare(
        &mut self,
        direct: &mut Wire,
        kind: &str,
        supported: bool,
        order: bool,
        ci: &[usize],
        what: &str,
        got: Seen,
        want: Seen,
        sub0: Option<Seen>,
    ) {
        self.queries += 1;
        match (&got, &want) {
            (Seen::PrepareErr(1235, m) | Seen::Err(1235, m), _)
                if !matches!(want, Seen::PrepareErr(..) | Seen::Err(..)) =>
            {
                let e = self
                    .refused
                    .entry(format!("{kind}: {m}"))
                    .or_insert((0, m.clone()));
                e.0 += 1;
                if supported {
                    self.refused_supported.push(format!("{what}\n    {m}"));
                }
            }
            (Seen::PrepareErr(a, _) | Seen::Err(a, _), Seen::PrepareErr(b, _) | Seen::Err(b, _)) => {
                self.both_failed += 1;
                if a != b {
                    self.mismatches
                        .push(format!("{what}\n    error {a} vs {b}: {got:?} / {want:?}"));
                }
            }
            (
                Seen::Rows {
                    prepared: pa,
                    columns: ca,
                    prepare_columns: qa,
                    rows: ra,
                    rendered: da,
                },
                Seen::Rows {
                    prepared: pb,
                    columns: cb,
                    rows: rb,
                    rendered: db,
                    ..
                },
            ) => {
                self.rows += rb.len();
                if pa != pb {
                    self.mismatches
                        .push(format!("{what}\n    prepare counts {pa:?} vs {pb:?}"));
                }
                match &sub0 {
                    Some(Seen::Rows {
                        columns: c0,
                        prepare_columns: q0,
                        ..
                    }) => {
                        self.defs_compared += 1;
                        self.defs_equal_reference += usize::from(ca == cb);
                        self.defs_equal_sub0 += usize::from(ca == c0);
                        if ca != c0 {
                            self.mismatches.push(format!(
                                "{what}\n    result columns differ from the server's own on sub-table 0 (sluice / server):{}",
                                def_diff(ca, c0)
                            ));
                        }
                        if qa != q0 {
                            self.mismatches.push(format!(
                                "{what}\n    PREPARE columns differ from the server's own on sub-table 0 (sluice / server):{}",
                                def_diff(qa, q0)
                            ));
                        }
                        if c0 != cb {
                            self.server_differs += 1;
                            if self.server_differs_examples.len() < 40 {
                                self.server_differs_examples.push(format!(
                                    "{what}\n    sub-table 0 / reference:{}",
                                    def_diff(c0, cb)
                                ));
                            }
                        }
                        if q0 != c0 {
                            self.prepare_vs_execute += 1;
                            if self.prepare_vs_execute_examples.len() < 40 {
                                self.prepare_vs_execute_examples
                                    .push(format!("{what}\n    PREPARE / EXECUTE:{}", def_diff(q0, c0)));
                            }
                        }
                    }
                    Some(other) => self.mismatches.push(format!(
                        "{what}\n    run directly on sub-table 0 the statement gave no rows: {other:?}"
                    )),
                    None => {
                        // A statement not run on sub-table 0: the reference decides.
                        if ca != cb {
                            self.mismatches.push(format!(
                                "{what}\n    result columns differ from the reference's (sluice / reference):{}",
                                def_diff(ca, cb)
                            ));
                        }
                    }
                }
                let doubles: Vec<bool> = ca.iter().map(|c| c.contains("|type=5|")).collect();
                let equal = if ci.is_empty() {
                    let (mut x, mut y) = (ra.clone(), rb.clone());
                    if !order {
                        x.sort();
                        y.sort();
                    }
                    x == y
                } else {
                    let f = |rows: &Vec<Vec<String>>| -> Vec<Vec<String>> {
                        let mut v: Vec<Vec<String>> = rows
                            .iter()
                            .map(|r| {
                                r.iter()
                                    .enumerate()
                                    .map(|(i, c)| if ci.contains(&i) { fold(c) } else { c.clone() })
                                    .collect()
                            })
                            .collect();
                        if !order {
                            v.sort();
                        }
                        v
                    };
                    f(da) == f(db)
                };
                let equal = equal || {
                    // Rows equal but for collation-equal spellings (asked of the server)
                    // or DOUBLE sums added in another order (see `double_close`).
                    let mut ok = (order || da.len() <= 1) && da.len() == db.len();
                    for (x, y) in da.iter().zip(db).take(if ok { da.len() } else { 0 }) {
                        for (i, (a, b)) in x.iter().zip(y).enumerate() {
                            if a == b {
                                continue;
                            }
                            if doubles.get(i) == Some(&true) && double_close(a, b) {
                                self.double_rounding += 1;
                                continue;
                            }
                            if ci.contains(&i) && ci_equal(direct, a, b).await {
                                continue;
                            }
                            ok = false;
                        }
                    }
                    ok
                };
                if !equal {
                    let show =
                        |r: &Vec<Vec<String>>| r.iter().take(5).map(|x| x.join("|")).collect::<Vec<_>>();
                    self.mismatches.push(format!(
                        "{what}\n    rows differ ({} vs {}):\n      sluice: {:?}\n      direct: {:?}",
                        da.len(),
                        db.len(),
                        show(da),
                        show(db)
                    ));
                }
            }
            (Seen::Ok(a), Seen::Ok(b)) => {
                if a != b {
                    self.mismatches
                        .push(format!("{what}\n    affected rows {a} vs {b}"));
                }
            }
            _ => self
                .mismatches
                .push(format!("{what}\n    sluice: {got:?}\n    direct: {want:?}")),
        }
    }
}

/// A SELECT run directly on sub-table 0 (its definitions renamed to the logical table),
/// the description sluice's must equal.
async fn on_sub0(direct: &mut Wire, sql: &str, params: &[Param]) -> Option<Seen> {
    Some(
        run_prepared(
            direct,
            &sql.replace("post_reply", "post_reply_0"),
            params,
            "post_reply_0",
        )
        .await,
    )
}

fn param_text(p: &[Param]) -> String {
    p.iter()
        .map(|x| match x {
            Param::Null => "NULL".to_string(),
            Param::Int(i) => i.to_string(),
            Param::Str(s) => format!("{s:?}"),
            Param::Raw { ty, unsigned, value } => {
                format!(
                    "{ty:#04x}{}:{}",
                    if *unsigned { "u" } else { "" },
                    wire::hex(value)
                )
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Typed probes: each bound type selected, computed with, compared against.
fn probes() -> Vec<(&'static str, String, Vec<Param>)> {
    let w = "FROM post_reply WHERE tid IN (4, 8, 12, 228596) ORDER BY id LIMIT 7";
    let values: Vec<(&str, Param)> = vec![
        ("TINY", p_int(TINY, false, -5)),
        ("TINY UNSIGNED", p_int(TINY, true, 200)),
        ("SHORT", p_int(SHORT, false, -300)),
        ("LONG", p_int(LONG, false, 70_000)),
        ("LONGLONG", p_int(LONGLONG, false, -5_000_000_000)),
        (
            "LONGLONG UNSIGNED",
            raw(LONGLONG, true, u64::MAX.to_le_bytes().to_vec()),
        ),
        ("FLOAT", p_float(1.1)),
        ("DOUBLE", p_double(0.1)),
        ("DOUBLE", p_double(-1.5e300)),
        ("DECIMAL", p_str(NEWDECIMAL, b"1.23456789")),
        ("DECIMAL", p_str(NEWDECIMAL, b"99999999.9999")),
        ("DECIMAL", p_str(NEWDECIMAL, b"-0012.50")),
        (
            "DECIMAL",
            p_str(NEWDECIMAL, b"12345678901234567890123456789012345.123456789"),
        ),
        ("VAR_STRING", p_str(VAR_STRING, b"plain")),
        ("VAR_STRING quotes", p_str(VAR_STRING, b"it's \"quoted\" ''")),
        (
            "VAR_STRING backslashes",
            p_str(VAR_STRING, b"C:\\path\\ \\' \\\\"),
        ),
        (
            "VAR_STRING emoji",
            p_str(VAR_STRING, "emoji 😀 回复 naïve".as_bytes()),
        ),
        ("VAR_STRING empty", p_str(VAR_STRING, b"")),
        ("STRING", p_str(STRING, b"fixed")),
        ("BLOB bytes", p_str(BLOB, &[0x00, 0xff, 0x5c, 0x27, 0x80, 0x41])),
        ("BLOB text", p_str(BLOB, b"Hello")),
        ("DATE", p_datetime(DATE, 2021, 1, 2, 0, 0, 0, 0)),
        ("DATETIME", p_datetime(DATETIME, 2021, 1, 15, 3, 4, 5, 0)),
        ("DATETIME(6)", p_datetime(DATETIME, 2021, 1, 15, 3, 4, 5, 123_456)),
        (
            "TIMESTAMP",
            p_datetime(TIMESTAMP, 2021, 1, 20, 23, 59, 59, 500_000),
        ),
        ("TIME", p_time(false, 0, 3, 4, 5, 0)),
        ("TIME negative(6)", p_time(true, 1, 3, 4, 5, 123_456)),
        ("NULL", Param::Null),
    ];
    let mut out = Vec::new();
    for (name, v) in &values {
        let one = vec![v.clone()];
        out.push((*name, format!("SELECT ?, id {w}"), one.clone()));
        out.push((
            *name,
            format!("SELECT id, ? AS p, amount * ?, score + ?, create_time < ? {w}"),
            vec![v.clone(); 4],
        ));
        out.push((
            *name,
            format!("SELECT id, CONCAT(subject, ?), COALESCE(?, tag) {w}"),
            vec![v.clone(); 2],
        ));
        out.push((
            *name,
            "SELECT COUNT(*), SUM(amount * ?), MAX(?) FROM post_reply WHERE tid IN (4, 8, 12, 228596)"
                .to_string(),
            vec![v.clone(); 2],
        ));
        out.push((
            *name,
            "SELECT id FROM post_reply WHERE create_time > ? AND tid IN (4, 8) ORDER BY id LIMIT 5"
                .to_string(),
            one.clone(),
        ));
        out.push((*name, "SELECT id, subject FROM post_reply WHERE subject = ? OR amount = ? OR score = ? ORDER BY id LIMIT 5".to_string(), vec![v.clone(); 3]));
        out.push((
            *name,
            "SELECT user_id, GROUP_CONCAT(subject, ?, amount ORDER BY create_time DESC, id SEPARATOR ';') FROM post_reply \
             WHERE tid IN (4, 8, 12, 228596) GROUP BY user_id ORDER BY user_id LIMIT 20"
                .to_string(),
            one.clone(),
        ));
    }
    let dec = |s: &str| p_str(NEWDECIMAL, s.as_bytes());
    out.push((
        "DECIMAL arithmetic",
        "SELECT amount * ?, id FROM post_reply WHERE amount = ? OR tid = 4 ORDER BY id LIMIT 10".into(),
        vec![dec("1.23456789"), dec("-9543.21")],
    ));
    out.push((
        "DECIMAL arithmetic",
        "SELECT SUM(amount * ?), AVG(amount + ?) FROM post_reply".into(),
        vec![dec("1.23456789"), dec("99999999.9999")],
    ));
    for lim in [
        p_str(VAR_STRING, b"3"),
        p_double(3.0),
        p_int(LONGLONG, false, 3),
        p_int(TINY, true, 3),
        p_str(NEWDECIMAL, b"3"),
    ] {
        out.push((
            "LIMIT ?",
            "SELECT id FROM post_reply WHERE user_id = 123 ORDER BY id LIMIT ?".into(),
            vec![lim.clone()],
        ));
        out.push((
            "LIMIT ?, ?",
            "SELECT id, tid FROM post_reply ORDER BY create_time DESC, id LIMIT ?, ?".into(),
            vec![lim.clone(), lim.clone()],
        ));
        out.push((
            "LIMIT ? OFFSET ?",
            "SELECT id FROM post_reply WHERE tid = 4 ORDER BY id LIMIT ? OFFSET ?".into(),
            vec![lim.clone(), lim],
        ));
    }
    out.push(("COUNT(DISTINCT) + GROUP BY", "SELECT user_id, COUNT(*), COUNT(DISTINCT tid), SUM(amount * ?) FROM post_reply WHERE user_id < ? GROUP BY user_id ORDER BY user_id".into(), vec![dec("2.5"), p_int(TINY, false, 40)]));
    out.push(("COUNT(DISTINCT) + GROUP BY", "SELECT DATE(create_time) d, COUNT(*), COUNT(DISTINCT user_id) FROM post_reply WHERE create_time >= ? GROUP BY d ORDER BY d DESC LIMIT ?".into(), vec![p_datetime(DATETIME, 2021, 1, 10, 0, 0, 0, 0), p_str(VAR_STRING, b"10")]));
    out
}

#[tokio::test]
async fn binary_protocol_differential() {
    let cluster = shared_cluster();
    let db = unique_name("shard_bin");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let sluice_addr = format!("127.0.0.1:{}", s.port);
    let mut sl = wire_to(&sluice_addr, APP_USER, APP_PASSWORD, &db).await;
    let mut direct = wire_to(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db).await;
    must(&mut sl, &schema("post_reply")).await;
    must(&mut direct, &schema("ref")).await;

    // --- Load: the text differential's rows (its generator, a prefix of its ids). -------
    let mut rng = Rng(0xa7_1a5);
    let data: Vec<Reply> = (1..=ROWS).map(|id| reply(&mut rng, id)).collect();
    for chunk in data.chunks(BATCH) {
        must(&mut sl, &insert_sql("post_reply", chunk)).await;
        must(&mut direct, &insert_sql("ref", chunk)).await;
    }
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));

    // --- The generated queries, prepared with typed parameters. ------------------------
    let mut tally = Tally::default();
    let mut prng = Rng(0xb1a7);
    let queries = generate(&data);
    let mut parameterized = 0usize;
    for q in &queries {
        let (sql, lits) = parameterize(&q.sql);
        if lits.is_empty() {
            continue;
        }
        parameterized += 1;
        let params: Vec<Param> = lits.iter().map(|(l, lim)| typed(l, &mut prng, *lim)).collect();
        let got = run_prepared(&mut sl, &sql, &params, "post_reply").await;
        let want = run_prepared(&mut direct, &sql.replace("post_reply", "ref"), &params, "ref").await;
        let sub0 = on_sub0(&mut direct, &sql, &params).await;
        let what = format!("[{}] {sql}\n    params: {}", q.kind, param_text(&params));
        tally
            .compare(
                &mut direct,
                q.kind,
                q.shape == Shape::Supported,
                q.order == Order::Full,
                &q.ci_cols,
                &what,
                got,
                want,
                sub0,
            )
            .await;
    }
    let generated = tally.queries;

    // --- INSERT with typed parameters, then the rows read back (both protocols). ------
    let ins = format!("INSERT INTO post_reply ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    let mut inserted = 0usize;
    for k in 0..24u32 {
        let id = 900_001 + k;
        let params = vec![
            p_int(
                if k % 2 == 0 { LONG } else { LONGLONG },
                k % 3 == 0,
                i64::from(id),
            ),
            match k % 4 {
                0 => p_int(TINY, true, i64::from(k)),
                1 => p_str(VAR_STRING, (228_596 + k).to_string().as_bytes()),
                2 => p_int(LONGLONG, true, i64::from(4 + k)),
                _ => p_str(NEWDECIMAL, format!("{}", 1001 + k).as_bytes()),
            },
            p_int(SHORT, false, 123),
            p_str(VAR_STRING, format!("typed 😀 it's \\ {k}").as_bytes()),
            p_datetime(
                DATETIME,
                2022,
                3,
                1 + (k % 28) as u8,
                10,
                20,
                30,
                250_000 * (k % 4),
            ),
            p_str(BLOB, &[b'm', 0xc3, 0xa9, b'\\', b'\'', b'0' + (k % 10) as u8]),
            if k % 5 == 0 {
                Param::Null
            } else {
                p_int(LONGLONG, false, -i64::from(k))
            },
            if k % 3 == 0 {
                Param::Null
            } else {
                p_str(STRING, b"Alpha")
            },
            p_str(NEWDECIMAL, format!("-{k}.5").as_bytes()),
        ];
        let got = run_prepared(&mut sl, &ins, &params, "post_reply").await;
        let want = run_prepared(&mut direct, &ins.replace("post_reply", "ref"), &params, "ref").await;
        inserted += usize::from(matches!(got, Seen::Ok(1)));
        let what = format!(
            "[INSERT, typed parameters] {ins}\n    params: {}",
            param_text(&params)
        );
        tally
            .compare(
                &mut direct,
                "INSERT, typed parameters",
                true,
                true,
                &[],
                &what,
                got,
                want,
                None,
            )
            .await;
    }
    // A DOUBLE shard key (MariaDB converts 8.0 to 8): refused or exact.
    let mut params = vec![p_int(LONG, false, 900_200), p_double(8.0)];
    params.extend([
        p_int(SHORT, false, 5),
        p_str(VAR_STRING, b"double key"),
        p_datetime(DATETIME, 2022, 1, 1, 0, 0, 0, 0),
        p_str(VAR_STRING, b"m"),
        Param::Null,
        Param::Null,
        p_str(NEWDECIMAL, b"0"),
    ]);
    let got = run_prepared(&mut sl, &ins, &params, "post_reply").await;
    let want = run_prepared(&mut direct, &ins.replace("post_reply", "ref"), &params, "ref").await;
    tally
        .compare(
            &mut direct,
            "INSERT, DOUBLE shard key",
            false,
            true,
            &[],
            &ins,
            got,
            want,
            None,
        )
        .await;
    // Without a column list: the table's column order (read by sluice from the definition).
    let bare = "INSERT INTO post_reply VALUES (?, ?, 7, 'bare', '2022-01-01 00:00:00', 'm', NULL, NULL, ?)";
    let params = vec![
        p_int(LONG, false, 900_100),
        p_int(LONG, false, 4),
        p_str(NEWDECIMAL, b"1.25"),
    ];
    let got = run_prepared(&mut sl, bare, &params, "post_reply").await;
    let want = run_prepared(&mut direct, &bare.replace("post_reply", "ref"), &params, "ref").await;
    tally
        .compare(
            &mut direct,
            "INSERT without a column list",
            false,
            true,
            &[],
            bare,
            got,
            want,
            None,
        )
        .await;
    // What sluice refused was written to the reference only: take it back out.
    must(&mut direct, "DELETE FROM ref WHERE id IN (900100, 900200)").await;
    must(&mut sl, "DELETE FROM post_reply WHERE id IN (900100, 900200)").await;
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    let back = format!("SELECT {COLUMNS} FROM post_reply WHERE id > 900000 ORDER BY id");
    let got = run_prepared(&mut sl, &back, &[], "post_reply").await;
    let want = run_prepared(&mut direct, &back.replace("post_reply", "ref"), &[], "ref").await;
    let sub0 = on_sub0(&mut direct, &back, &[]).await;
    tally
        .compare(
            &mut direct,
            "INSERT, rows read back",
            true,
            true,
            &[],
            &back,
            got,
            want,
            sub0,
        )
        .await;
    let a = format!(
        "{:?}",
        sl.query(&format!(
            "SELECT {COLUMNS} FROM post_reply WHERE id > 900000 ORDER BY id"
        ))
        .await
    );
    let b = format!(
        "{:?}",
        direct
            .query(&format!(
                "SELECT {COLUMNS} FROM ref WHERE id > 900000 ORDER BY id"
            ))
            .await
    );
    let rows_a = std::mem::take(&mut sl.raw_rows);
    let rows_b = std::mem::take(&mut direct.raw_rows);
    tally.queries += 1;
    tally.rows += rows_b.len();
    if rows_a != rows_b {
        tally.mismatches.push(format!(
            "[INSERT, rows read back as text]\n    sluice: {a}\n    direct: {b}"
        ));
    }
    assert_eq!(inserted, 24, "typed INSERTs through sluice");

    // --- Typed probes. -------------------------------------------------------------------
    for (kind, sql, params) in probes() {
        let got = run_prepared(&mut sl, &sql, &params, "post_reply").await;
        let want = run_prepared(&mut direct, &sql.replace("post_reply", "ref"), &params, "ref").await;
        let sub0 = on_sub0(&mut direct, &sql, &params).await;
        let what = format!("[{kind}] {sql}\n    params: {}", param_text(&params));
        let order = sql.contains("ORDER BY") && !sql.contains("GROUP BY d ORDER BY d DESC LIMIT");
        tally
            .compare(&mut direct, kind, true, order, &[], &what, got, want, sub0)
            .await;
    }

    eprintln!(
        "binary differential: {} statements ({} generated, {} of {} generated queries had literals to bind; {} typed probes), \
         {} rows compared, {} mismatches, {} refused ({} of supported shapes), {} failed alike on both, {} DOUBLE cells equal to 12 digits only",
        tally.queries,
        generated,
        parameterized,
        queries.len(),
        tally.queries - generated,
        tally.rows,
        tally.mismatches.len(),
        tally.refused.values().map(|v| v.0).sum::<usize>(),
        tally.refused_supported.len(),
        tally.both_failed,
        tally.double_rounding,
    );
    eprintln!(
        "binary column definitions: {} result sets compared, {} equal to the reference's, {} equal to the server's own on sub-table 0, \
         {} described differently by the server itself on the reference and on sub-table 0, \
         {} whose PREPARE answer differs from their EXECUTE result on sub-table 0",
        tally.defs_compared,
        tally.defs_equal_reference,
        tally.defs_equal_sub0,
        tally.server_differs,
        tally.prepare_vs_execute,
    );
    for (shape, (n, _)) in &tally.refused {
        eprintln!("  refused {n}× [{shape}]");
    }
    for m in &tally.server_differs_examples {
        eprintln!("  the server describes it differently on two tables: {m}");
    }
    for m in &tally.prepare_vs_execute_examples {
        eprintln!("  PREPARE and EXECUTE describe it differently on sub-table 0: {m}");
    }
    for m in tally.mismatches.iter().take(40) {
        eprintln!("MISMATCH {m}");
    }
    for m in tally.refused_supported.iter().take(20) {
        eprintln!("REFUSED (supported shape) {m}");
    }
    assert!(
        tally.mismatches.is_empty() && tally.refused_supported.is_empty(),
        "{} mismatches, {} refusals of supported shapes (see above)\n{}",
        tally.mismatches.len(),
        tally.refused_supported.len(),
        s.log()
    );
    assert!(tally.rows > 1000, "too few rows compared: {}", tally.rows);
}

/// The columns of a prepared statement's EXECUTE (no parameters).
async fn executed_columns(w: &mut Wire, sql: &str) -> Vec<String> {
    let p = match w.prepare(sql).await {
        WReply::Prepared(p) => p,
        other => panic!("{sql}: {other:?}"),
    };
    let r = w.execute(p.stmt_id, &[]).await;
    w.close_stmt(p.stmt_id).await;
    match r {
        WReply::Parts(parts) => parts
            .iter()
            .filter_map(|x| match x {
                Part::Rows(rs) => Some(rs.columns.iter().map(|c| format!("{:#x} {}", c.flags, c.name))),
                _ => None,
            })
            .flatten()
            .collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

/// A prepared statement without placeholders reaching one sub-table runs there as a
/// prepared statement (before: as text), so its column definitions are the server's
/// binary-protocol ones: a TEXT column grouped through a temporary table carries
/// GROUP_FLAG (0x8000) only in the binary protocol (seed 7 of `scripts/shard-gen`).
#[tokio::test]
async fn a_prepared_statement_without_placeholders_is_described_as_prepared() {
    let cluster = shared_cluster();
    let db = unique_name("shard_binp");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut sl = wire_to(&format!("127.0.0.1:{}", s.port), APP_USER, APP_PASSWORD, &db).await;
    let mut direct = wire_to(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db).await;
    let create = |t: &str| {
        format!(
            "CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, c2 TEXT CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_bin NULL, KEY (tid)) DEFAULT CHARSET=utf8mb4"
        )
    };
    let rows = (1..=48)
        .map(|i| format!("({i}, {}, 'v{}')", i % 13, i % 5))
        .collect::<Vec<_>>()
        .join(", ");
    for (w, t) in [(&mut sl, "post_reply"), (&mut direct, "ref")] {
        must(w, &create(t)).await;
        must(w, &format!("INSERT INTO {t} (id, tid, c2) VALUES {rows}")).await;
    }
    for q in [
        "SELECT c2 COLLATE utf8mb4_unicode_ci FROM {t} WHERE tid = 6 GROUP BY c2 COLLATE utf8mb4_unicode_ci",
        "SELECT c2, COUNT(*) FROM {t} WHERE tid = 1 GROUP BY c2",
    ] {
        let got = executed_columns(&mut sl, &q.replace("{t}", "post_reply")).await;
        let want = executed_columns(&mut direct, &q.replace("{t}", "ref")).await;
        assert_eq!(got, want, "{q}");
    }
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
