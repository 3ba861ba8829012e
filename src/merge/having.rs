//! HAVING over merged rows, with SQL three-valued logic.
//!
//! Comparison rules follow the server's for the common cases: two strings compare
//! under the column's collation; numbers compare exactly (integers, DECIMAL) or as
//! doubles when either side is FLOAT/DOUBLE; a number against a string compares as
//! doubles (the string's numeric prefix); a temporal column against a string literal
//! compares in time order. Any NULL operand makes a comparison UNKNOWN.

use super::collation::{Coll, CollKind};
use super::num::Dec;
use super::spec::{CmpOp, Expr, Value};
use super::value::{parse_datetime, parse_f64, parse_int, parse_time, Kind};
use super::TextRow;
use std::cmp::Ordering;

/// SQL truth value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    True,
    False,
    Unknown,
}

impl Tri {
    fn from_bool(b: bool) -> Tri {
        if b {
            Tri::True
        } else {
            Tri::False
        }
    }
    fn not(self) -> Tri {
        match self {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Unknown => Tri::Unknown,
        }
    }
}

/// An evaluated operand.
#[derive(Debug, Clone)]
enum Op<'a> {
    Null,
    Int(i128),
    Dec(Dec),
    Double(f64),
    /// A string; `Some(coll)` when it comes from a column.
    Str(&'a [u8], Option<Coll>),
    /// A DATE/DATETIME/TIMESTAMP (`time` false) or TIME value as text.
    Temporal(&'a [u8], bool),
}

/// Evaluates `expr` as a condition on `row` (columns typed by `kinds`).
pub(super) fn eval(expr: &Expr, row: &TextRow, kinds: &[Kind]) -> Tri {
    match expr {
        Expr::And(a, b) => match (eval(a, row, kinds), eval(b, row, kinds)) {
            (Tri::False, _) | (_, Tri::False) => Tri::False,
            (Tri::True, Tri::True) => Tri::True,
            _ => Tri::Unknown,
        },
        Expr::Or(a, b) => match (eval(a, row, kinds), eval(b, row, kinds)) {
            (Tri::True, _) | (_, Tri::True) => Tri::True,
            (Tri::False, Tri::False) => Tri::False,
            _ => Tri::Unknown,
        },
        Expr::Not(a) => eval(a, row, kinds).not(),
        Expr::IsNull(a) => Tri::from_bool(matches!(operand(a, row, kinds), Op::Null)),
        Expr::Cmp(a, op, b) => match compare(&operand(a, row, kinds), &operand(b, row, kinds)) {
            None => Tri::Unknown,
            Some(o) => Tri::from_bool(match op {
                CmpOp::Eq => o == Ordering::Equal,
                CmpOp::Ne => o != Ordering::Equal,
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::Le => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                CmpOp::Ge => o != Ordering::Less,
            }),
        },
        Expr::Col(_) | Expr::Lit(_) => truth(&operand(expr, row, kinds)),
    }
}

/// A value used as a condition: NULL is UNKNOWN, else true when non-zero.
fn truth(v: &Op) -> Tri {
    match v {
        Op::Null => Tri::Unknown,
        Op::Int(i) => Tri::from_bool(*i != 0),
        Op::Dec(d) => Tri::from_bool(!d.is_zero()),
        Op::Double(f) => Tri::from_bool(*f != 0.0),
        Op::Str(s, _) => Tri::from_bool(numeric_prefix(s) != 0.0),
        Op::Temporal(s, _) => Tri::from_bool(s.iter().any(|b| (b'1'..=b'9').contains(b))),
    }
}

fn operand<'a>(e: &'a Expr, row: &'a TextRow, kinds: &[Kind]) -> Op<'a> {
    match e {
        Expr::Col(i) => {
            let Some(v) = row.field(*i) else {
                return Op::Null;
            };
            match kinds.get(*i).copied().unwrap_or(Kind::Str(BINARY)) {
                Kind::Int => parse_int(v)
                    .map(Op::Int)
                    .or_else(|| Dec::parse(v).map(Op::Dec))
                    .unwrap_or(Op::Str(v, None)),
                Kind::Decimal => Dec::parse(v).map(Op::Dec).unwrap_or(Op::Str(v, None)),
                Kind::Float => parse_f64(v).map(Op::Double).unwrap_or(Op::Str(v, None)),
                Kind::DateTime => Op::Temporal(v, false),
                Kind::Time => Op::Temporal(v, true),
                Kind::Bit if v.len() <= 15 => {
                    Op::Int(v.iter().fold(0i128, |acc, &b| (acc << 8) | i128::from(b)))
                }
                Kind::Bit => Op::Str(v, Some(BINARY)),
                Kind::Null => Op::Null,
                Kind::Str(c) => Op::Str(v, Some(c)),
            }
        }
        Expr::Lit(v) => match v {
            Value::Null => Op::Null,
            Value::Int(i) => Op::Int(i128::from(*i)),
            Value::UInt(u) => Op::Int(i128::from(*u)),
            Value::Decimal(s) => Dec::parse(s.as_bytes())
                .map(Op::Dec)
                .unwrap_or(Op::Str(s.as_bytes(), None)),
            Value::Double(f) => Op::Double(*f),
            Value::Bytes(b) => Op::Str(b, None),
        },
        // A condition used as a value: 1, 0 or NULL.
        _ => match eval(e, row, kinds) {
            Tri::True => Op::Int(1),
            Tri::False => Op::Int(0),
            Tri::Unknown => Op::Null,
        },
    }
}

const BINARY: Coll = Coll {
    kind: CollKind::Binary,
    pad_space: false,
    chars: super::collation::Chars::Bytes,
};

fn compare(a: &Op, b: &Op) -> Option<Ordering> {
    use Op::*;
    match (a, b) {
        (Null, _) | (_, Null) => None,
        (Str(x, cx), Str(y, cy)) => Some(cx.or(*cy).unwrap_or(BINARY).compare(x, y)),
        (Temporal(x, tx), Temporal(y, ty)) if tx == ty => temporal_cmp(x, y, *tx),
        (Temporal(x, t), Str(y, _)) => temporal_cmp(x, y, *t).or_else(|| Some(x.cmp(y))),
        (Str(x, _), Temporal(y, t)) => temporal_cmp(x, y, *t).or_else(|| Some(x.cmp(y))),
        (Temporal(x, t), n) => compare(&temporal_number(x, *t)?, n),
        (n, Temporal(y, t)) => compare(n, &temporal_number(y, *t)?),
        (Str(s, _), n) => compare(&Double(numeric_prefix(s)), n),
        (n, Str(s, _)) => compare(n, &Double(numeric_prefix(s))),
        (Double(x), y) => x.partial_cmp(&as_f64(y)),
        (x, Double(y)) => as_f64(x).partial_cmp(y),
        (Int(x), Int(y)) => Some(x.cmp(y)),
        (x, y) => Some(as_dec(x)?.cmp_exact(&as_dec(y)?)),
    }
}

fn as_f64(v: &Op) -> f64 {
    match v {
        Op::Int(i) => *i as f64,
        Op::Dec(d) => parse_f64(d.format(d.scale()).as_bytes()).unwrap_or(0.0),
        Op::Double(f) => *f,
        Op::Str(s, _) => numeric_prefix(s),
        _ => 0.0,
    }
}

fn as_dec(v: &Op) -> Option<Dec> {
    match v {
        Op::Int(i) => Some(Dec::from_i128(*i)),
        Op::Dec(d) => Some(d.clone()),
        _ => None,
    }
}

fn temporal_cmp(x: &[u8], y: &[u8], time: bool) -> Option<Ordering> {
    if time {
        Some(parse_time(x)?.cmp(&parse_time(y)?))
    } else {
        Some(parse_datetime(x)?.cmp(&parse_datetime(y)?))
    }
}

/// A temporal value in numeric context: `YYYYMMDD`, `YYYYMMDDhhmmss[.ffffff]`, `hhmmss`.
fn temporal_number<'a>(s: &[u8], time: bool) -> Option<Op<'a>> {
    let neg = s.first() == Some(&b'-');
    let (main, frac) = match s.iter().position(|&b| b == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &s[s.len()..]),
    };
    let mut text: Vec<u8> = Vec::with_capacity(s.len() + 1);
    if neg && time {
        text.push(b'-');
    }
    text.extend(main.iter().filter(|b| b.is_ascii_digit()));
    if !frac.is_empty() {
        text.push(b'.');
        text.extend_from_slice(frac);
    }
    Dec::parse(&text).map(Op::Dec)
}

/// The number a string means in numeric context: its longest numeric prefix (MySQL:
/// `'12abc'` is 12, `'abc'` is 0).
fn numeric_prefix(s: &[u8]) -> f64 {
    let t = std::str::from_utf8(s).unwrap_or("").trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let mut digits = false;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits = true;
        end = i;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits = true;
            end = i;
        }
    }
    if digits && i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            end = j;
        }
    }
    if !digits {
        return 0.0;
    }
    t[..end].parse().unwrap_or(0.0)
}

/// Refuses (`MergeError::Unsupported`) the comparisons whose server semantics sluice does
/// not reproduce: a DATE/DATETIME/TIMESTAMP or TIME column against a number or a string
/// that is not in the canonical form (`'9999/12/31'`, `'99991231'`, `10000101`,
/// `'100:00'` are read by the server's own rules), a BIT column against anything, and a
/// string read as a number (see [`reads_string_as_number`]).
pub(super) fn check_exact(e: &Expr, metas: &[super::ColumnMeta]) -> Result<(), super::MergeError> {
    let unsupported = |why: &str| Err(super::MergeError::Unsupported(why.to_string()));
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            check_exact(a, metas)?;
            check_exact(b, metas)
        }
        Expr::IsNull(a) if matches!(**a, Expr::Col(_) | Expr::Lit(_)) => Ok(()),
        Expr::Not(a) | Expr::IsNull(a) => check_exact(a, metas),
        Expr::Cmp(a, _, b) if reads_string_as_number(a, b, metas) => unsupported(STRING_AS_NUMBER),
        Expr::Col(_) | Expr::Lit(_) if reads_string_as_number(e, &Expr::Lit(Value::Int(0)), metas) => {
            unsupported(STRING_AS_NUMBER)
        }
        Expr::Cmp(a, _, b) => {
            // A FLOAT is compared by its stored value, of which a row's text shows a
            // rounded form (`1.23457` for 1.2345678): sluice cannot compare what it sees.
            let float = |x: &Expr| matches!(x, Expr::Col(c) if metas.get(*c).is_some_and(|m| m.column_type == super::value::types::FLOAT));
            if float(a) || float(b) {
                return unsupported(
                    "a HAVING comparison of a FLOAT column across shards is not supported (the server \
                     compares its stored value, sluice only sees its rounded text)",
                );
            }
            for (x, y) in [(a, b), (b, a)] {
                let (Expr::Col(c), Expr::Lit(l)) = (x.as_ref(), y.as_ref()) else {
                    continue;
                };
                let Some(m) = metas.get(*c) else { continue };
                match (super::value::kind(m), l) {
                    (_, Value::Null) => {}
                    (Kind::Bit, _) => {
                        return unsupported(
                            "a HAVING comparison of a BIT column across shards is not supported",
                        )
                    }
                    (Kind::DateTime, Value::Bytes(v)) if canonical_datetime(v) => {}
                    (Kind::Time, Value::Bytes(v)) if canonical_time(v) => {}
                    (Kind::DateTime | Kind::Time, _) => {
                        return unsupported(
                            "a HAVING comparison of a temporal column with a number or a string not \
                             written 'YYYY-MM-DD[ hh:mm:ss]' / 'hh:mm:ss' is not supported across shards",
                        )
                    }
                    _ => {}
                }
            }
            Ok(())
        }
        Expr::Col(_) | Expr::Lit(_) => Ok(()),
    }
}

const STRING_AS_NUMBER: &str = "a HAVING condition that reads a string column as a number (compared with a \
     number, or as a truth value) is not supported across shards (the server warns for each string that is \
     not a number, warnings a merged result cannot give)";

/// Whether comparing `a` with `b` reads a string as a number: a string column against a
/// number (column or literal), or a string literal that is not plainly a number against a
/// numeric column. The server then warns `Truncated incorrect DOUBLE value` for each
/// string that is not a number (seed 303: `HAVING MAX(c0) >= 5` on a VARBINARY `''`).
fn reads_string_as_number(a: &Expr, b: &Expr, metas: &[super::ColumnMeta]) -> bool {
    let kind = |e: &Expr| match e {
        Expr::Col(c) => metas.get(*c).map(super::value::kind),
        _ => None,
    };
    let numeric_col = |e: &Expr| matches!(kind(e), Some(Kind::Int | Kind::Decimal | Kind::Float));
    let number = |e: &Expr| {
        numeric_col(e)
            || matches!(
                e,
                Expr::Lit(Value::Int(_) | Value::UInt(_) | Value::Decimal(_) | Value::Double(_))
            )
    };
    let string_col = |e: &Expr| matches!(kind(e), Some(Kind::Str(_)));
    let unclean_literal = |e: &Expr| matches!(e, Expr::Lit(Value::Bytes(v)) if !plain_number(v));
    [(a, b), (b, a)]
        .iter()
        .any(|(x, y)| (string_col(x) && number(y)) || (unclean_literal(x) && numeric_col(y)))
}

/// `[-+]digits[.digits][e[-+]digits]` and nothing else: a string the server reads as a
/// number without a warning.
fn plain_number(v: &[u8]) -> bool {
    let v = v.strip_prefix(b"-").or_else(|| v.strip_prefix(b"+")).unwrap_or(v);
    let (mantissa, exp) = match v.iter().position(|&c| c == b'e' || c == b'E') {
        Some(p) => (&v[..p], Some(&v[p + 1..])),
        None => (v, None),
    };
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let mantissa_ok = match mantissa.iter().position(|&c| c == b'.') {
        Some(p) => {
            let (i, f) = (&mantissa[..p], &mantissa[p + 1..]);
            (digits(i) || i.is_empty()) && (digits(f) || f.is_empty()) && !(i.is_empty() && f.is_empty())
        }
        None => digits(mantissa),
    };
    let exp_ok =
        exp.is_none_or(|e| digits(e.strip_prefix(b"-").or_else(|| e.strip_prefix(b"+")).unwrap_or(e)));
    mantissa_ok && exp_ok
}

/// `YYYY-MM-DD`, optionally followed by ` hh:mm:ss` and a fraction.
fn canonical_datetime(v: &[u8]) -> bool {
    let d = |i: usize| v.get(i).is_some_and(u8::is_ascii_digit);
    let date = v.len() >= 10 && (0..4).all(d) && v[4] == b'-' && d(5) && d(6) && v[7] == b'-' && d(8) && d(9);
    date && (v.len() == 10 || (v[10] == b' ' && canonical_time(&v[11..]) && !v[11..].starts_with(b"-")))
}

/// `hh:mm:ss` (hours of 2 or 3 digits, a sign allowed), optionally with a fraction.
fn canonical_time(v: &[u8]) -> bool {
    let v = v.strip_prefix(b"-").unwrap_or(v);
    let Some(colon) = v.iter().position(|&c| c == b':') else {
        return false;
    };
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let (h, rest) = v.split_at(colon);
    let frac_ok = |s: &[u8]| s.is_empty() || (s[0] == b'.' && digits(&s[1..]));
    (2..=3).contains(&h.len())
        && digits(h)
        && rest.len() >= 6
        && rest[0] == b':'
        && digits(&rest[1..3])
        && rest[3] == b':'
        && digits(&rest[4..6])
        && frac_ok(&rest[6..])
}

#[cfg(test)]
mod tests {
    use super::super::testutil::row;
    use super::super::value::{kind, types, ColumnMeta};
    use super::*;

    #[test]
    fn strings_read_as_numbers_are_refused() {
        let metas = [
            ColumnMeta::new(types::LONGLONG, 0, 63, 0),
            ColumnMeta::new(types::VAR_STRING, 0, 45, 0),
        ];
        let col = |c| Box::new(Expr::Col(c));
        let lit = |v| Box::new(Expr::Lit(v));
        let cmp = |a, b| Expr::Cmp(a, CmpOp::Ge, b);
        let refused = |e: &Expr| check_exact(e, &metas).is_err();
        assert!(refused(&cmp(col(1), lit(Value::Int(5)))));
        assert!(refused(&cmp(lit(Value::Decimal("1.5".into())), col(1))));
        assert!(refused(&cmp(col(1), col(0))));
        assert!(refused(&cmp(col(0), lit(Value::Bytes(b"2x".to_vec())))));
        assert!(refused(&Expr::Not(col(1))));
        assert!(!refused(&cmp(col(0), lit(Value::Bytes(b"-2.5e3".to_vec())))));
        assert!(!refused(&cmp(col(1), lit(Value::Bytes(b"abc".to_vec())))));
        assert!(!refused(&Expr::IsNull(col(1))));
        assert!(!plain_number(b"") && !plain_number(b".") && !plain_number(b" 1") && plain_number(b"1."));
    }

    fn kinds() -> Vec<Kind> {
        [
            ColumnMeta::new(types::LONGLONG, 0, 63, 0),   // 0 count
            ColumnMeta::new(types::NEWDECIMAL, 0, 63, 2), // 1 sum
            ColumnMeta::new(types::VAR_STRING, 0, 45, 0), // 2 name (general_ci)
            ColumnMeta::new(types::DATETIME, 0, 63, 0),   // 3 when
            ColumnMeta::new(types::DOUBLE, 0, 63, 31),    // 4 avg
            ColumnMeta::new(types::TIME, 0, 63, 0),       // 5 time
        ]
        .iter()
        .map(kind)
        .collect()
    }

    fn col(i: usize) -> Expr {
        Expr::Col(i)
    }
    fn int(i: i64) -> Expr {
        Expr::Lit(Value::Int(i))
    }
    fn s(t: &str) -> Expr {
        Expr::Lit(Value::Bytes(t.as_bytes().to_vec()))
    }

    #[test]
    fn comparisons_by_type() {
        let r = row(&[
            Some("3"),
            Some("-1.50"),
            Some("abc"),
            Some("2020-01-02 03:04:05"),
            Some("2.5"),
            Some("-01:00:00"),
        ]);
        let k = kinds();
        let t = |e: Expr| eval(&e, &r, &k);
        assert_eq!(t(Expr::cmp(col(0), CmpOp::Gt, int(2))), Tri::True);
        assert_eq!(t(Expr::cmp(col(0), CmpOp::Ge, int(3))), Tri::True);
        assert_eq!(t(Expr::cmp(col(0), CmpOp::Ne, int(3))), Tri::False);
        assert_eq!(
            t(Expr::cmp(
                col(1),
                CmpOp::Lt,
                Expr::Lit(Value::Decimal("-1.49".into()))
            )),
            Tri::True
        );
        assert_eq!(
            t(Expr::cmp(
                col(1),
                CmpOp::Eq,
                Expr::Lit(Value::Decimal("-1.5".into()))
            )),
            Tri::True
        );
        assert_eq!(t(Expr::cmp(col(1), CmpOp::Lt, int(-1))), Tri::True);
        assert_eq!(t(Expr::cmp(col(2), CmpOp::Eq, s("ABC "))), Tri::True); // general_ci, PAD SPACE
        assert_eq!(t(Expr::cmp(col(2), CmpOp::Lt, s("abd"))), Tri::True);
        assert_eq!(t(Expr::cmp(col(3), CmpOp::Gt, s("2020-01-02"))), Tri::True);
        assert_eq!(
            t(Expr::cmp(col(3), CmpOp::Lt, s("2020-01-02 03:04:06"))),
            Tri::True
        );
        assert_eq!(t(Expr::cmp(col(3), CmpOp::Gt, int(20200101))), Tri::True);
        assert_eq!(
            t(Expr::cmp(
                col(4),
                CmpOp::Eq,
                Expr::Lit(Value::Decimal("2.5".into()))
            )),
            Tri::True
        );
        assert_eq!(
            t(Expr::cmp(col(4), CmpOp::Gt, Expr::Lit(Value::Double(2.49)))),
            Tri::True
        );
        assert_eq!(t(Expr::cmp(col(5), CmpOp::Lt, s("00:00:00"))), Tri::True);
        assert_eq!(t(Expr::cmp(col(0), CmpOp::Eq, s("3abc"))), Tri::True); // numeric prefix
        assert_eq!(t(col(0)), Tri::True);
        assert_eq!(
            t(Expr::cmp(Expr::cmp(col(0), CmpOp::Gt, int(1)), CmpOp::Eq, int(1))),
            Tri::True
        );
    }

    #[test]
    fn three_valued_logic_with_nulls() {
        let r = row(&[Some("0"), None, Some("x"), None, None, None]);
        let k = kinds();
        let t = |e: Expr| eval(&e, &r, &k);
        let unknown = || Expr::cmp(col(1), CmpOp::Gt, int(0));
        let yes = || Expr::cmp(col(0), CmpOp::Eq, int(0));
        let no = || Expr::cmp(col(0), CmpOp::Ne, int(0));
        assert_eq!(t(unknown()), Tri::Unknown);
        assert_eq!(t(Expr::not(unknown())), Tri::Unknown);
        assert_eq!(t(Expr::and(unknown(), no())), Tri::False);
        assert_eq!(t(Expr::and(unknown(), yes())), Tri::Unknown);
        assert_eq!(t(Expr::or(unknown(), yes())), Tri::True);
        assert_eq!(t(Expr::or(unknown(), no())), Tri::Unknown);
        assert_eq!(t(Expr::is_null(col(1))), Tri::True);
        assert_eq!(t(Expr::is_null(col(0))), Tri::False);
        assert_eq!(t(Expr::not(Expr::is_null(col(1)))), Tri::False);
        assert_eq!(t(Expr::is_null(unknown())), Tri::True);
        assert_eq!(
            t(Expr::cmp(col(1), CmpOp::Eq, Expr::Lit(Value::Null))),
            Tri::Unknown
        );
        assert_eq!(
            t(Expr::cmp(
                Expr::Lit(Value::Null),
                CmpOp::Eq,
                Expr::Lit(Value::Null)
            )),
            Tri::Unknown
        );
        assert_eq!(t(col(0)), Tri::False); // 0 is false
        assert_eq!(t(col(1)), Tri::Unknown);
    }
}
