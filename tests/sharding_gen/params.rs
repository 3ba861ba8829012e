//! Typed parameters for the binary protocol: the fixed corpus's statements turned into
//! prepared statements by replacing their comparison, IN-list and LIMIT literals with
//! `?` and binding them with typed values (integers of every width and sign, DECIMAL,
//! DOUBLE, strings, BLOB bytes, DATETIME), and typed probes (`SELECT ?` and expressions
//! of each bound type).

use super::corpus::Rng;
use crate::common::wire::{self, lenenc_value as lenenc, raw, Param};

pub const TINY: u8 = 0x01;
pub const SHORT: u8 = 0x02;
pub const LONG: u8 = 0x03;
pub const FLOAT: u8 = 0x04;
pub const DOUBLE: u8 = 0x05;
pub const TIMESTAMP: u8 = 0x07;
pub const LONGLONG: u8 = 0x08;
pub const DATE: u8 = 0x0a;
pub const TIME: u8 = 0x0b;
pub const DATETIME: u8 = 0x0c;
pub const NEWDECIMAL: u8 = 0xf6;
pub const BLOB: u8 = 0xfc;
pub const VAR_STRING: u8 = 0xfd;
pub const STRING: u8 = 0xfe;

pub fn p_str(ty: u8, s: &[u8]) -> Param {
    raw(ty, false, lenenc(s))
}
pub fn p_int(ty: u8, unsigned: bool, v: i64) -> Param {
    let w = match ty {
        TINY => 1,
        SHORT => 2,
        LONG => 4,
        _ => 8,
    };
    raw(ty, unsigned, v.to_le_bytes()[..w].to_vec())
}
pub fn p_double(v: f64) -> Param {
    raw(DOUBLE, false, v.to_le_bytes().to_vec())
}
pub fn p_float(v: f32) -> Param {
    raw(FLOAT, false, v.to_le_bytes().to_vec())
}
#[allow(clippy::too_many_arguments)]
pub fn p_datetime(ty: u8, y: u16, mo: u8, d: u8, h: u8, mi: u8, s: u8, micro: u32) -> Param {
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
pub fn p_time(neg: bool, days: u32, h: u8, mi: u8, s: u8, micro: u32) -> Param {
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
pub enum Lit {
    Int(i64),
    Dec(String),
    Str(Vec<u8>),
}

/// The typed parameter for a literal, the type chosen by `rng` among those MariaDB
/// converts to the same value; `limit`: a LIMIT operand (integers, or their string or
/// double form, which MariaDB also takes).
pub fn typed(l: &Lit, rng: &mut Rng, limit: bool) -> Param {
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
pub fn unescape(body: &str) -> Vec<u8> {
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
pub fn parameterize(sql: &str) -> (String, Vec<(Lit, bool)>) {
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

/// The parameters in one line (for a failure's report).
pub fn param_text(p: &[Param]) -> String {
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
pub fn probes() -> Vec<(&'static str, String, Vec<Param>)> {
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
