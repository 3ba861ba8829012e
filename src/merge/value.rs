//! Column metadata and value comparison with the server's semantics, on text-protocol
//! values (`None` = SQL NULL).

use super::collation::{Coll, CollKind};
use super::num::cmp_decimal_text;
use std::cmp::Ordering;

/// MySQL column types (`enum_field_types`).
pub mod types {
    pub const DECIMAL: u8 = 0;
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const NULL: u8 = 6;
    pub const TIMESTAMP: u8 = 7;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const DATETIME: u8 = 12;
    pub const YEAR: u8 = 13;
    pub const NEWDATE: u8 = 14;
    pub const VARCHAR: u8 = 15;
    pub const BIT: u8 = 16;
    pub const TIMESTAMP2: u8 = 17;
    pub const DATETIME2: u8 = 18;
    pub const TIME2: u8 = 19;
    pub const JSON: u8 = 245;
    pub const NEWDECIMAL: u8 = 246;
    pub const ENUM: u8 = 247;
    pub const SET: u8 = 248;
    pub const TINY_BLOB: u8 = 249;
    pub const MEDIUM_BLOB: u8 = 250;
    pub const LONG_BLOB: u8 = 251;
    pub const BLOB: u8 = 252;
    pub const VAR_STRING: u8 = 253;
    pub const STRING: u8 = 254;
    pub const GEOMETRY: u8 = 255;
}

/// Column definition flags.
pub mod flags {
    pub const NOT_NULL: u16 = 0x0001;
    pub const BLOB: u16 = 0x0010;
    pub const UNSIGNED: u16 = 0x0020;
    pub const BINARY: u16 = 0x0080;
    pub const ENUM: u16 = 0x0100;
    pub const SET: u16 = 0x0800;
    pub const NUM: u16 = 0x8000;
}

/// What the merger needs to know of a result column.
///
/// `collation` decides string comparison. A column definition carries the collation of
/// the connection (`character_set_results`), not the column's: put the column's real
/// collation id here when the schema is known (see [`super::collation`]); `wire` keeps
/// the announced one, the character set the values' bytes arrive in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnMeta {
    pub column_type: u8,
    pub flags: u16,
    pub collation: u16,
    pub decimals: u8,
    pub wire: u16,
}

impl ColumnMeta {
    pub fn new(column_type: u8, flags: u16, collation: u16, decimals: u8) -> Self {
        ColumnMeta {
            column_type,
            flags,
            collation,
            decimals,
            wire: collation,
        }
    }
}

/// Parses a MySQL 4.1 column definition packet payload: catalog, schema, table,
/// org_table, name, org_name (length-encoded strings), then the length of the fixed
/// fields (0x0c), charset u16, column length u32, type u8, flags u16, decimals u8.
pub fn parse_column_def(payload: &[u8]) -> Option<ColumnMeta> {
    let pos = fixed_fields(payload)?;
    let f = payload.get(pos..pos + 10)?;
    let collation = u16::from_le_bytes([f[0], f[1]]);
    Some(ColumnMeta {
        collation,
        column_type: f[6],
        flags: u16::from_le_bytes([f[7], f[8]]),
        decimals: f[9],
        wire: collation,
    })
}

/// Offset of the fixed-length fields (after their 0x0c length byte). Skips the six
/// names and, when MariaDB's MARIADB_CLIENT_EXTENDED_METADATA is in use, the extra
/// length-encoded type-info string that follows them.
fn fixed_fields(payload: &[u8]) -> Option<usize> {
    let mut pos = 0usize;
    for _ in 0..6 {
        let (len, n) = read_lenenc_int(payload.get(pos..)?)?;
        pos = pos.checked_add(n)?.checked_add(usize::try_from(len).ok()?)?;
    }
    // Standard layout: 0x0c and 12 bytes end the packet of a result-set column.
    let standard = payload.get(pos) == Some(&0x0c) && payload.len() == pos + 13;
    if !standard && payload.len() != pos + 13 {
        // Extended metadata: one more length-encoded string.
        let (len, n) = read_lenenc_int(payload.get(pos..)?)?;
        pos = pos.checked_add(n)?.checked_add(usize::try_from(len).ok()?)?;
    }
    let (fixed_len, n) = read_lenenc_int(payload.get(pos..)?)?;
    if fixed_len < 10 || payload.len() < pos + n + 10 {
        return None;
    }
    Some(pos + n)
}

/// Where a result column comes from: (schema, org_table, org_name), when it
/// is a table column (empty names for expressions).
pub fn column_origin(payload: &[u8]) -> Option<(String, String, String)> {
    let mut pos = 0usize;
    let mut names: [&[u8]; 6] = [&[]; 6];
    for name in names.iter_mut() {
        let (len, n) = read_lenenc_int(payload.get(pos..)?)?;
        let start = pos.checked_add(n)?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        *name = payload.get(start..end)?;
        pos = end;
    }
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some((s(names[1]), s(names[3]), s(names[5])))
}

/// A copy of a column definition payload with the type, flags, decimals and character
/// set of `meta` (e.g. for a merged AVG column, see [`super::Merger::output_metas`]).
/// Names and the display length are kept. `None` if the payload is malformed.
pub fn rewrite_column_def(payload: &[u8], meta: &ColumnMeta) -> Option<Vec<u8>> {
    let pos = fixed_fields(payload)?;
    let mut out = payload.to_vec();
    // A string stays a string: the definition keeps the character set the bytes are sent
    // in (the connection's); `meta.collation` may be the column's own, looked up for
    // comparing, which a driver would decode the bytes by.
    let was_string = is_string_type(*payload.get(pos + 6)?);
    if !(was_string && is_string_type(meta.column_type)) {
        out[pos..pos + 2].copy_from_slice(&meta.collation.to_le_bytes());
    }
    out[pos + 6] = meta.column_type;
    out[pos + 7..pos + 9].copy_from_slice(&meta.flags.to_le_bytes());
    out[pos + 9] = meta.decimals;
    Some(out)
}

fn is_string_type(t: u8) -> bool {
    matches!(t, 15 | 249..=254)
}

/// The display length of a column definition.
pub fn column_length(payload: &[u8]) -> Option<u32> {
    let pos = fixed_fields(payload)?;
    let f = payload.get(pos + 2..pos + 6)?;
    Some(u32::from_le_bytes([f[0], f[1], f[2], f[3]]))
}

/// A copy of a column definition with `meta`'s type, flags, decimals and character
/// set, the display length `length`, and, when `expression`, no origin (schema, table,
/// org_table and org_name empty: the server sends none for a computed column such as
/// `COUNT(DISTINCT x)`, while the shard's column was `x` itself). `None` if malformed.
pub fn computed_column_def(
    payload: &[u8],
    meta: &ColumnMeta,
    length: u32,
    expression: bool,
) -> Option<Vec<u8>> {
    let mut out = rewrite_column_def(payload, meta)?;
    let pos = fixed_fields(&out)?;
    out[pos + 2..pos + 6].copy_from_slice(&length.to_le_bytes());
    if !expression {
        return Some(out);
    }
    // catalog, schema, table, org_table, name, org_name: keep catalog and name.
    let mut fields: Vec<&[u8]> = Vec::with_capacity(6);
    let mut at = 0usize;
    for _ in 0..6 {
        let (len, n) = read_lenenc_int(out.get(at..)?)?;
        let start = at.checked_add(n)?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        fields.push(out.get(start..end)?);
        at = end;
    }
    let mut def = bytes::BytesMut::with_capacity(out.len());
    for (i, f) in fields.iter().enumerate() {
        let keep: &[u8] = if i == 0 || i == 4 { f } else { &[] };
        super::row::put_lenenc_int(&mut def, keep.len() as u64);
        def.extend_from_slice(keep);
    }
    def.extend_from_slice(out.get(at..)?);
    Some(def.to_vec())
}

/// Reads a length-encoded integer: (value, bytes used). `0xFB` (NULL) and `0xFF` are
/// not integers here.
pub(super) fn read_lenenc_int(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let fixed = |n: usize| -> Option<(u64, usize)> {
        let bytes = b.get(1..1 + n)?;
        let mut v = 0u64;
        for (i, &x) in bytes.iter().enumerate() {
            v |= u64::from(x) << (8 * i);
        }
        Some((v, 1 + n))
    };
    match first {
        0..=0xFA => Some((u64::from(first), 1)),
        0xFC => fixed(2),
        0xFD => fixed(3),
        0xFE => fixed(8),
        _ => None,
    }
}

/// How values of a column compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// TINYINT … BIGINT (signed or unsigned), YEAR.
    Int,
    /// DECIMAL.
    Decimal,
    /// FLOAT, DOUBLE.
    Float,
    /// DATE, DATETIME, TIMESTAMP.
    DateTime,
    /// TIME (may be negative, hours up to 838).
    Time,
    /// BIT(n): big-endian bytes in the text protocol.
    Bit,
    /// The NULL type (every value is NULL).
    Null,
    /// Character and binary strings, ENUM, SET, JSON, GEOMETRY.
    Str(Coll),
}

pub(super) fn kind(m: &ColumnMeta) -> Kind {
    use types::*;
    match m.column_type {
        TINY | SHORT | LONG | LONGLONG | INT24 | YEAR => Kind::Int,
        DECIMAL | NEWDECIMAL => Kind::Decimal,
        FLOAT | DOUBLE => Kind::Float,
        DATE | NEWDATE | DATETIME | DATETIME2 | TIMESTAMP | TIMESTAMP2 => Kind::DateTime,
        TIME | TIME2 => Kind::Time,
        BIT => Kind::Bit,
        NULL => Kind::Null,
        _ => Kind::Str(Coll::resolve(m.collation, m.flags).arriving_in(m.wire)),
    }
}

/// Whether rows can be merged in the server's order of this column. ENUM and SET sort
/// by their index on the server (the text protocol only shows the string), GEOMETRY and
/// (MySQL's) JSON by internal forms: ORDER BY / GROUP BY / DISTINCT on them across
/// shards must be refused (error 1235).
pub fn orderable(m: &ColumnMeta) -> bool {
    !matches!(
        m.column_type,
        types::ENUM | types::SET | types::GEOMETRY | types::JSON
    ) && m.flags & (flags::ENUM | flags::SET) == 0
}

/// Whether comparing this column is exactly the server's comparison (false for
/// approximated collations, see [`super::collation`]).
pub fn exact_order(m: &ColumnMeta) -> bool {
    match kind(m) {
        Kind::Str(c) => c.is_exact(),
        _ => true,
    }
}

/// The server's default `max_sort_length`: what a [`super::RowSource`] that does not know
/// its connection's value assumes.
pub const DEFAULT_MAX_SORT_LENGTH: usize = 1024;

/// Whether a sort key value may be longer than `max_sort_length` bytes (the session's,
/// as its master connection reports it): the server sorts (ORDER BY, and GROUP BY /
/// DISTINCT done by sorting) by that prefix of a string's sort key and compares whole
/// values where it reads an index or a temporary table's key, so for such values its
/// answer depends on its plan and the parts'. A key takes one byte per byte of text
/// under `binary` and latin1_swedish_ci, at most four under the other collations the
/// merge reproduces.
pub(super) fn beyond_sort_length(v: Option<&[u8]>, k: Kind, max_sort_length: usize) -> bool {
    match (v, k) {
        (Some(v), Kind::Str(c)) => match c.kind {
            CollKind::Binary | CollKind::Latin1SwedishCi => v.len() > max_sort_length,
            _ => v.len().saturating_mul(4) > max_sort_length,
        },
        _ => false,
    }
}

/// The refusal of a merge that met a value [`beyond_sort_length`].
pub fn sort_length_refusal(max_sort_length: usize) -> String {
    format!(
        "ordering, grouping or DISTINCT of strings longer than {} bytes ({max_sort_length} under binary or \
         latin1_swedish_ci) across shards is not supported under max_sort_length {max_sort_length}: the \
         server compares their first max_sort_length bytes or their whole value depending on its plan",
        max_sort_length / 4
    )
}

/// Compares two text-protocol values of a column as the server orders them in ASC
/// order: NULL first, numbers numerically, temporal values in time order, strings
/// under the collation. Unparsable values fall back to byte order (never panics).
pub fn compare(a: Option<&[u8]>, b: Option<&[u8]>, m: &ColumnMeta) -> Ordering {
    compare_opt(a, b, kind(m))
}

/// [`compare`] with the column's kind already resolved.
pub(super) fn compare_opt(a: Option<&[u8]>, b: Option<&[u8]>, k: Kind) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => compare_values(a, b, k),
    }
}

pub(super) fn compare_values(a: &[u8], b: &[u8], k: Kind) -> Ordering {
    let parsed = match k {
        Kind::Int => match (parse_int(a), parse_int(b)) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => cmp_decimal_text(a, b),
        },
        Kind::Decimal => cmp_decimal_text(a, b),
        Kind::Float => match (parse_f64(a), parse_f64(b)) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => None,
        },
        Kind::DateTime => match (parse_datetime(a), parse_datetime(b)) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => None,
        },
        Kind::Time => match (parse_time(a), parse_time(b)) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => None,
        },
        Kind::Bit => {
            let strip = |s: &[u8]| -> usize { s.iter().position(|&x| x != 0).unwrap_or(s.len()) };
            let (a, b) = (&a[strip(a)..], &b[strip(b)..]);
            Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
        }
        Kind::Null => Some(Ordering::Equal),
        Kind::Str(c) => Some(c.compare(a, b)),
    };
    parsed.unwrap_or_else(|| a.cmp(b))
}

/// Parses a text-protocol integer (`-12`, `18446744073709551615`, zero-filled `007`).
pub(super) fn parse_int(s: &[u8]) -> Option<i128> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 38 {
        return None;
    }
    let mut v: i128 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i128::from(d - b'0');
    }
    Some(if neg { -v } else { v })
}

pub(super) fn parse_f64(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.trim().parse::<f64>().ok()
}

/// `YYYY-MM-DD[ hh:mm:ss[.ffffff]]` → comparable parts; zero dates are all zeros
/// (they sort first, as on the server). The fraction is scaled to microseconds.
pub(super) fn parse_datetime(s: &[u8]) -> Option<[u32; 7]> {
    let mut parts = [0u32; 7];
    let mut i = 0usize;
    let mut n = 0usize; // part index
    while i < s.len() {
        if n >= 7 {
            return None;
        }
        let start = i;
        let mut v: u32 = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if i - start >= 9 {
                return None;
            }
            v = v * 10 + u32::from(s[i] - b'0');
            i += 1;
        }
        let len = i - start;
        if len == 0 {
            return None;
        }
        if n == 6 {
            // fraction: ".5" is 500000 µs
            if len > 6 {
                return None;
            }
            v *= 10u32.pow(6 - len as u32);
        }
        parts[n] = v;
        n += 1;
        if i < s.len() {
            let sep = s[i];
            let ok = match n {
                1 | 2 => sep == b'-',
                3 => sep == b' ' || sep == b'T',
                4 | 5 => sep == b':',
                6 => sep == b'.',
                _ => false,
            };
            if !ok {
                return None;
            }
            i += 1;
        }
    }
    (n >= 3).then_some(parts)
}

/// `[-]h…h:mm:ss[.ffffff]` → signed microseconds. `None` for anything else,
/// including signs inside and values beyond `i64` microseconds.
pub(super) fn parse_time(s: &[u8]) -> Option<i64> {
    let (neg, rest) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let text = std::str::from_utf8(rest).ok()?;
    let (hms, frac) = match text.split_once('.') {
        Some((a, f)) => (a, f),
        None => (text, ""),
    };
    // Digits only: `str::parse` would also take a sign.
    let number = |t: &str| -> Option<i64> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        t.parse().ok()
    };
    let mut it = hms.split(':');
    let h = number(it.next()?)?;
    let m = number(it.next()?)?;
    let sec = number(it.next()?)?;
    if it.next().is_some() || frac.len() > 6 {
        return None;
    }
    let mut us = if frac.is_empty() { 0 } else { number(frac)? };
    for _ in frac.len()..6 {
        us *= 10;
    }
    let v = h
        .checked_mul(60)?
        .checked_add(m)?
        .checked_mul(60)?
        .checked_add(sec)?
        .checked_mul(1_000_000)?
        .checked_add(us)?;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    fn m(t: u8) -> ColumnMeta {
        ColumnMeta::new(t, 0, 63, 0)
    }
    fn s(coll: u16) -> ColumnMeta {
        ColumnMeta::new(types::VAR_STRING, 0, coll, 0)
    }
    fn c(a: &str, b: &str, meta: &ColumnMeta) -> Ordering {
        compare(Some(a.as_bytes()), Some(b.as_bytes()), meta)
    }

    #[test]
    fn nulls_first() {
        let i = m(types::LONG);
        assert_eq!(compare(None, Some(b"-5"), &i), Less);
        assert_eq!(compare(Some(b"-5"), None, &i), Greater);
        assert_eq!(compare(None, None, &i), Equal);
        assert_eq!(compare(None, Some(b""), &s(45)), Less);
    }

    #[test]
    fn integers() {
        let i = m(types::LONG);
        assert_eq!(c("9", "10", &i), Less);
        assert_eq!(c("-10", "-9", &i), Less);
        assert_eq!(c("-1", "0", &i), Less);
        assert_eq!(c("007", "7", &i), Equal);
        let u = ColumnMeta::new(types::LONGLONG, flags::UNSIGNED, 63, 0);
        assert_eq!(c("18446744073709551615", "9223372036854775808", &u), Greater);
        assert_eq!(
            c("-9223372036854775808", "9223372036854775807", &m(types::LONGLONG)),
            Less
        );
        assert_eq!(c("1999", "2020", &m(types::YEAR)), Less);
        assert_eq!(c("0000", "1901", &m(types::YEAR)), Less);
    }

    #[test]
    fn bits() {
        let b = m(types::BIT);
        assert_eq!(compare(Some(&[0x05]), Some(&[0x01]), &b), Greater);
        assert_eq!(compare(Some(&[0x00, 0xFF]), Some(&[0x01, 0x00]), &b), Less);
        assert_eq!(compare(Some(&[0x00, 0x01]), Some(&[0x01]), &b), Equal);
    }

    #[test]
    fn decimals() {
        let d = m(types::NEWDECIMAL);
        assert_eq!(c("-1.50", "-1.25", &d), Less);
        assert_eq!(c("-0.01", "0.00", &d), Less);
        assert_eq!(c("10.00", "9.99", &d), Greater);
        assert_eq!(c("2.50", "2.5", &d), Equal);
        assert_eq!(c("-100", "-99.99", &d), Less);
        // Beyond f64 precision: 20 significant digits that differ in the last one.
        assert_eq!(c("12345678901234567890.1", "12345678901234567890.2", &d), Less);
        assert_eq!(
            c(
                "99999999999999999999999999999999999999999999999999999999999999999",
                "1",
                &d
            ),
            Greater
        );
    }

    #[test]
    fn floats() {
        let f = m(types::DOUBLE);
        assert_eq!(c("1e15", "999999999999999", &f), Greater);
        assert_eq!(c("-2.5", "1.5e-16", &f), Less);
        assert_eq!(c("0", "-0", &f), Equal);
        assert_eq!(c("10", "9", &m(types::FLOAT)), Greater);
    }

    #[test]
    fn temporal() {
        let dt = m(types::DATETIME);
        assert_eq!(c("2020-01-01 00:00:00", "2019-12-31 23:59:59", &dt), Greater);
        assert_eq!(c("0000-00-00 00:00:00", "1000-01-01 00:00:00", &dt), Less);
        assert_eq!(c("2020-00-00 00:00:00", "2020-01-01 00:00:00", &dt), Less);
        assert_eq!(
            c("2020-01-01 00:00:00.5", "2020-01-01 00:00:00.499999", &dt),
            Greater
        );
        assert_eq!(
            c("2020-01-01 00:00:00.123", "2020-01-01 00:00:00.123000", &dt),
            Equal
        );
        assert_eq!(c("2020-01-01", "2020-01-02", &m(types::DATE)), Less);
        assert_eq!(c("0000-00-00", "2020-01-02", &m(types::DATE)), Less);
        assert_eq!(
            c("2038-01-19 03:14:07", "1970-01-01 00:00:01", &m(types::TIMESTAMP)),
            Greater
        );
        let t = m(types::TIME);
        assert_eq!(c("-01:00:00", "00:00:00", &t), Less);
        assert_eq!(c("-838:59:59", "-01:00:00", &t), Less);
        assert_eq!(c("838:59:59", "99:00:00", &t), Greater);
        assert_eq!(c("100:00:00", "99:59:59", &t), Greater); // not byte order
        assert_eq!(c("-00:00:01", "00:00:00", &t), Less);
        assert_eq!(c("-00:00:00.5", "-00:00:00.25", &t), Less);
        assert_eq!(c("12:00:00.5", "12:00:00.500000", &t), Equal);
    }

    #[test]
    fn strings() {
        let g = s(45);
        assert_eq!(c("a", "A", &g), Equal);
        assert_eq!(c("a ", "a", &g), Equal);
        assert_eq!(c("apple", "Banana", &g), Less);
        // BINARY flag: a _bin column read over a general_ci connection.
        let bin = ColumnMeta::new(types::VAR_STRING, flags::BINARY, 45, 0);
        assert_eq!(c("a", "A", &bin), Greater);
        assert_eq!(c("a ", "a", &bin), Equal);
        let varbinary = ColumnMeta::new(types::VAR_STRING, flags::BINARY, 63, 0);
        assert_eq!(c("a ", "a", &varbinary), Greater);
        let blob = ColumnMeta::new(types::BLOB, flags::BINARY | flags::BLOB, 63, 0);
        assert_eq!(c("b", "a\u{0}", &blob), Greater);
    }

    #[test]
    fn orderability() {
        assert!(orderable(&s(45)));
        assert!(orderable(&m(types::LONG)));
        assert!(!orderable(&ColumnMeta::new(types::STRING, flags::ENUM, 45, 0)));
        assert!(!orderable(&ColumnMeta::new(types::STRING, flags::SET, 45, 0)));
        assert!(!orderable(&m(types::ENUM)));
        assert!(!orderable(&m(types::GEOMETRY)));
        assert!(!orderable(&m(types::JSON)));
        assert!(exact_order(&s(45)));
        assert!(!exact_order(&s(224)));
    }

    #[test]
    fn garbage_never_panics() {
        for t in [
            types::LONG,
            types::NEWDECIMAL,
            types::DOUBLE,
            types::DATETIME,
            types::TIME,
            types::BIT,
        ] {
            let meta = m(t);
            assert_eq!(c("abc", "abd", &meta), Less);
            assert_eq!(c("", "", &meta), Equal);
            let _ = c("-", "99999999999999999999999999999999999999999999999", &meta);
            let _ = c("1:2:3:4", "::", &meta);
        }
    }

    /// Found by the `backend_rows` fuzz target: a TIME text with a huge hour
    /// overflowed (a panic with overflow checks, a wrong order without).
    #[test]
    fn time_out_of_range_is_not_a_time() {
        assert_eq!(
            parse_time(b"-838:59:59.5"),
            Some(-(838 * 3600 + 59 * 60 + 59) * 1_000_000 - 500_000)
        );
        assert_eq!(parse_time(b"12:00:00"), Some(12 * 3600 * 1_000_000));
        assert_eq!(parse_time(b"9999999999999:00:00"), None);
        assert_eq!(parse_time(b"2562047788:00:55"), None);
        assert_eq!(parse_time(b"1:-5:3"), None);
        assert_eq!(parse_time(b"+1:5:3"), None);
        assert_eq!(parse_time(b"1:5:3.-1"), None);
        let time = m(types::TIME);
        assert_eq!(
            c("9999999999999:00:00", "1:00:00", &time),
            Greater,
            "byte order fallback"
        );
    }

    #[test]
    fn column_definition() {
        // Captured from MariaDB 10.11: `SELECT avg(1)` → NEWDECIMAL, decimals 4, binary.
        let mut p = Vec::new();
        for s in ["def", "", "", "", "avg(1)", ""] {
            p.push(s.len() as u8);
            p.extend_from_slice(s.as_bytes());
        }
        p.push(0x0c);
        p.extend_from_slice(&63u16.to_le_bytes());
        p.extend_from_slice(&7u32.to_le_bytes());
        p.push(types::NEWDECIMAL);
        p.extend_from_slice(&(flags::BINARY | flags::NUM).to_le_bytes());
        p.push(4);
        p.extend_from_slice(&[0, 0]);
        let meta = parse_column_def(&p).expect("column def");
        assert_eq!(meta, ColumnMeta::new(types::NEWDECIMAL, 0x8080, 63, 4));
        assert_eq!(parse_column_def(&p[..p.len() - 4]), None);
        assert_eq!(parse_column_def(&[]), None);
        assert_eq!(parse_column_def(&[0xFF]), None);
        // 2-byte length prefix for a long name.
        let mut q = vec![3, b'd', b'e', b'f', 0, 0, 0, 0xFC, 0x2C, 0x01];
        q.extend(std::iter::repeat_n(b'x', 300));
        q.push(0);
        q.extend_from_slice(&p[p.len() - 13..]);
        assert_eq!(parse_column_def(&q), Some(meta));
        let avg = ColumnMeta::new(types::NEWDECIMAL, flags::BINARY | flags::NUM, 63, 6);
        let rewritten = rewrite_column_def(&q, &avg).expect("rewrite");
        assert_eq!(rewritten.len(), q.len());
        assert_eq!(parse_column_def(&rewritten), Some(avg));
        assert_eq!(&rewritten[..310], &q[..310]); // names untouched
        assert_eq!(rewrite_column_def(&q[..q.len() - 5], &avg), None);
    }
}
