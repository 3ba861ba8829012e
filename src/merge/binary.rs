//! Binary-protocol rows (prepared statements): decoding, conversion to the text form
//! the merge compares, and encoding merged rows back.
//!
//! Path for a prepared SELECT across shards: each shard's binary row →
//! [`binary_row_to_text`] (the text the server would print, so ordering, grouping and
//! aggregates are the text path's) → [`super::Merger`] → [`text_row_to_binary`] with
//! [`super::Merger::output_metas`] → the client.
//!
//! Lossless for integers, DECIMAL, strings, temporal values and DOUBLE/FLOAT (printed
//! with the shortest text that reads back to the same value, whatever the column's
//! `decimals`), except aggregates computed by the merge itself, which carry the text
//! protocol's rounding (a `DOUBLE(M,D)` SUM is rounded to D decimals).

use super::row::put_lenenc_int;
use super::spec::Value;
use super::value::{
    flags, parse_datetime, parse_f64, parse_int, parse_time, read_lenenc_int, types, ColumnMeta,
};
use super::{format_double, MergeError, TextRow};
use bytes::{BufMut, Bytes, BytesMut};

fn malformed(what: &'static str) -> MergeError {
    MergeError::Malformed(what)
}

/// One decoded binary value: a number, or bytes (strings, DECIMAL text, and temporal
/// values already in their text form).
enum Raw<'a> {
    Int(i128),
    Float(f32),
    Double(f64),
    Bytes(&'a [u8]),
    Text(String),
}

fn take<'a>(p: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], MergeError> {
    let s = p
        .get(*pos..pos.saturating_add(n))
        .ok_or_else(|| malformed("binary row value runs past the end"))?;
    *pos += n;
    Ok(s)
}

fn fsp_suffix(micro: u32, decimals: u8) -> String {
    let d = usize::from(decimals.min(6));
    if d == 0 {
        return String::new();
    }
    let s = format!("{micro:06}");
    format!(".{}", &s[..d])
}

fn decode_all<'a>(payload: &'a [u8], metas: &[ColumnMeta]) -> Result<Vec<Option<Raw<'a>>>, MergeError> {
    let n = metas.len();
    if payload.first() != Some(&0x00) {
        return Err(malformed("binary row without its 0x00 header"));
    }
    let bitmap_len = (n + 7 + 2) / 8;
    let bitmap = payload
        .get(1..1 + bitmap_len)
        .ok_or_else(|| malformed("binary row shorter than its NULL bitmap"))?;
    let mut pos = 1 + bitmap_len;
    let mut out = Vec::with_capacity(n);
    for (i, m) in metas.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            out.push(None);
            continue;
        }
        let unsigned = m.flags & flags::UNSIGNED != 0;
        let int = |b: &[u8]| -> i128 {
            let mut v: u64 = 0;
            for (k, &x) in b.iter().enumerate() {
                v |= u64::from(x) << (8 * k);
            }
            if unsigned {
                i128::from(v)
            } else {
                let shift = 64 - 8 * b.len() as u32;
                i128::from(((v << shift) as i64) >> shift)
            }
        };
        let v = match m.column_type {
            types::TINY => Raw::Int(int(take(payload, &mut pos, 1)?)),
            types::SHORT => Raw::Int(int(take(payload, &mut pos, 2)?)),
            types::YEAR => {
                let b = take(payload, &mut pos, 2)?;
                Raw::Text(format!("{:04}", u16::from_le_bytes([b[0], b[1]])))
            }
            types::LONG | types::INT24 => Raw::Int(int(take(payload, &mut pos, 4)?)),
            types::LONGLONG => Raw::Int(int(take(payload, &mut pos, 8)?)),
            types::FLOAT => {
                let b = take(payload, &mut pos, 4)?;
                Raw::Float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            types::DOUBLE => {
                let b = take(payload, &mut pos, 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Raw::Double(f64::from_le_bytes(a))
            }
            types::DATE
            | types::NEWDATE
            | types::DATETIME
            | types::DATETIME2
            | types::TIMESTAMP
            | types::TIMESTAMP2 => {
                let len = usize::from(take(payload, &mut pos, 1)?[0]);
                let b = take(payload, &mut pos, len)?;
                let g = |k: usize| b.get(k).copied().unwrap_or(0);
                let year = u16::from_le_bytes([g(0), g(1)]);
                let micro = if len >= 11 {
                    u32::from_le_bytes([g(7), g(8), g(9), g(10)])
                } else {
                    0
                };
                let date = format!("{year:04}-{:02}-{:02}", g(2), g(3));
                if matches!(m.column_type, types::DATE | types::NEWDATE) {
                    Raw::Text(date)
                } else {
                    Raw::Text(format!(
                        "{date} {:02}:{:02}:{:02}{}",
                        g(4),
                        g(5),
                        g(6),
                        fsp_suffix(micro, m.decimals)
                    ))
                }
            }
            types::TIME | types::TIME2 => {
                let len = usize::from(take(payload, &mut pos, 1)?[0]);
                let b = take(payload, &mut pos, len)?;
                let g = |k: usize| b.get(k).copied().unwrap_or(0);
                let neg = g(0) == 1;
                let days = u32::from_le_bytes([g(1), g(2), g(3), g(4)]);
                let micro = if len >= 12 {
                    u32::from_le_bytes([g(8), g(9), g(10), g(11)])
                } else {
                    0
                };
                let hours = u64::from(days) * 24 + u64::from(g(5));
                Raw::Text(format!(
                    "{}{hours:02}:{:02}:{:02}{}",
                    if neg { "-" } else { "" },
                    g(6),
                    g(7),
                    fsp_suffix(micro, m.decimals)
                ))
            }
            types::NULL => {
                out.push(None);
                continue;
            }
            _ => {
                let (len, used) = read_lenenc_int(&payload[pos.min(payload.len())..])
                    .ok_or_else(|| malformed("bad length-encoded value in binary row"))?;
                pos += used;
                let len = usize::try_from(len).map_err(|_| malformed("value too long"))?;
                Raw::Bytes(take(payload, &mut pos, len)?)
            }
        };
        out.push(Some(v));
    }
    if pos != payload.len() {
        return Err(malformed("trailing bytes after the last binary row value"));
    }
    Ok(out)
}

/// Decodes a binary-protocol row (`None` = NULL). Integers become `Int`/`UInt`,
/// FLOAT/DOUBLE `Double`, DECIMAL `Decimal`, temporal values `Bytes` of their text form
/// (`2024-01-31 12:00:00.50`, `-838:59:59`), everything else `Bytes`.
pub fn parse_binary_row(payload: &[u8], metas: &[ColumnMeta]) -> Result<Vec<Option<Value>>, MergeError> {
    let raw = decode_all(payload, metas)?;
    Ok(raw
        .into_iter()
        .zip(metas)
        .map(|(v, m)| {
            v.map(|v| match v {
                Raw::Int(i) => match i64::try_from(i) {
                    Ok(s) if m.flags & flags::UNSIGNED == 0 => Value::Int(s),
                    _ => Value::UInt(u64::try_from(i).unwrap_or(0)),
                },
                Raw::Float(f) => Value::Double(f64::from(f)),
                Raw::Double(f) => Value::Double(f),
                Raw::Bytes(b) if matches!(m.column_type, types::DECIMAL | types::NEWDECIMAL) => {
                    Value::Decimal(String::from_utf8_lossy(b).into_owned())
                }
                Raw::Bytes(b) => Value::Bytes(b.to_vec()),
                Raw::Text(t) => Value::Bytes(t.into_bytes()),
            })
        })
        .collect())
}

/// Converts a binary-protocol row into the text-protocol row the merge works on.
pub fn binary_row_to_text(payload: &[u8], metas: &[ColumnMeta]) -> Result<TextRow, MergeError> {
    let raw = decode_all(payload, metas)?;
    let texts: Vec<Option<std::borrow::Cow<'_, [u8]>>> = raw
        .into_iter()
        .map(|v| {
            v.map(|v| match v {
                Raw::Int(i) => i.to_string().into_bytes().into(),
                Raw::Float(f) => {
                    let s = if f == 0.0 { "0".to_string() } else { f.to_string() };
                    s.into_bytes().into()
                }
                Raw::Double(f) => format_double(f, 31).into_bytes().into(),
                Raw::Bytes(b) => b.into(),
                Raw::Text(t) => t.into_bytes().into(),
            })
        })
        .collect();
    Ok(TextRow::from_fields(texts.iter().map(|t| t.as_deref())))
}

/// Encodes the first `visible` columns of a (merged) text row as a binary-protocol row
/// payload, typed by `metas` (use [`super::Merger::output_metas`]).
pub fn text_row_to_binary(row: &TextRow, metas: &[ColumnMeta], visible: usize) -> Result<Bytes, MergeError> {
    let n = visible.min(metas.len());
    let bitmap_len = (n + 7 + 2) / 8;
    let mut out = BytesMut::with_capacity(1 + bitmap_len + row.payload().len() + 8);
    out.put_u8(0);
    let bm_start = out.len();
    out.put_bytes(0, bitmap_len);
    for (i, m) in metas.iter().take(n).enumerate() {
        let Some(v) = row.field(i) else {
            let bit = i + 2;
            out[bm_start + bit / 8] |= 1 << (bit % 8);
            continue;
        };
        let bad = || MergeError::BadValue {
            col: i,
            value: String::from_utf8_lossy(&v[..v.len().min(64)]).into_owned(),
        };
        let width = match m.column_type {
            types::TINY => Some(1),
            types::SHORT | types::YEAR => Some(2),
            types::LONG | types::INT24 => Some(4),
            types::LONGLONG => Some(8),
            _ => None,
        };
        if let Some(w) = width {
            let x = parse_int(v).ok_or_else(bad)?;
            out.put_slice(&(x as u64).to_le_bytes()[..w]);
            continue;
        }
        match m.column_type {
            types::FLOAT => {
                let x: f32 = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(bad)?;
                out.put_f32_le(x);
            }
            types::DOUBLE => out.put_f64_le(parse_f64(v).ok_or_else(bad)?),
            types::DATE
            | types::NEWDATE
            | types::DATETIME
            | types::DATETIME2
            | types::TIMESTAMP
            | types::TIMESTAMP2 => {
                let p = parse_datetime(v).ok_or_else(bad)?;
                let len: u8 = if p[6] != 0 {
                    11
                } else if p[3] != 0 || p[4] != 0 || p[5] != 0 {
                    7
                } else if p[..3].iter().any(|&x| x != 0) {
                    4
                } else {
                    0
                };
                out.put_u8(len);
                if len >= 4 {
                    out.put_u16_le(u16::try_from(p[0]).map_err(|_| bad())?);
                    out.put_u8(p[1] as u8);
                    out.put_u8(p[2] as u8);
                }
                if len >= 7 {
                    out.put_u8(p[3] as u8);
                    out.put_u8(p[4] as u8);
                    out.put_u8(p[5] as u8);
                }
                if len >= 11 {
                    out.put_u32_le(p[6]);
                }
            }
            types::TIME | types::TIME2 => {
                let t = parse_time(v).ok_or_else(bad)?;
                let neg = t < 0 || v.first() == Some(&b'-');
                let a = t.unsigned_abs();
                let micro = (a % 1_000_000) as u32;
                let secs = a / 1_000_000;
                let (days, h, mi, s) = (secs / 86_400, (secs / 3600) % 24, (secs / 60) % 60, secs % 60);
                let len: u8 = if micro != 0 {
                    12
                } else if secs != 0 {
                    8
                } else {
                    0
                };
                out.put_u8(len);
                if len >= 8 {
                    out.put_u8(u8::from(neg));
                    out.put_u32_le(u32::try_from(days).map_err(|_| bad())?);
                    out.put_u8(h as u8);
                    out.put_u8(mi as u8);
                    out.put_u8(s as u8);
                }
                if len >= 12 {
                    out.put_u32_le(micro);
                }
            }
            _ => {
                put_lenenc_int(&mut out, v.len() as u64);
                out.put_slice(v);
            }
        }
    }
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: u8, fl: u16, dec: u8) -> ColumnMeta {
        ColumnMeta::new(t, fl, 63, dec)
    }

    fn metas() -> Vec<ColumnMeta> {
        vec![
            m(types::TINY, 0, 0),
            m(types::LONG, flags::UNSIGNED, 0),
            m(types::LONGLONG, 0, 0),
            m(types::DOUBLE, 0, 31),
            m(types::NEWDECIMAL, 0, 2),
            m(types::DATETIME, 0, 3),
            m(types::TIME, 0, 0),
            m(types::VAR_STRING, 0, 45),
            m(types::DATE, 0, 0),
            m(types::YEAR, flags::UNSIGNED, 0),
            m(types::FLOAT, 0, 31),
            m(types::LONG, 0, 0), // NULL
        ]
    }

    fn sample() -> Vec<u8> {
        let mut p = vec![0x00];
        // 12 columns → (12 + 9) / 8 = 2 bitmap bytes; column 11 (bit 13) is NULL.
        p.extend_from_slice(&[0x00, 0x20]);
        p.push(0xFE); // -2
        p.extend_from_slice(&4_000_000_000u32.to_le_bytes());
        p.extend_from_slice(&(-9_000_000_000i64).to_le_bytes());
        p.extend_from_slice(&0.1f64.to_le_bytes());
        p.extend_from_slice(&[5, b'-', b'1', b'.', b'5', b'0']);
        p.extend_from_slice(&[11, 0xE8, 0x07, 1, 31, 23, 59, 58]);
        p.extend_from_slice(&120_000u32.to_le_bytes());
        p.extend_from_slice(&[8, 1, 34, 0, 0, 0, 22, 59, 59]); // -838:59:59
        p.extend_from_slice(&[3, b'a', b'b', b'c']);
        p.extend_from_slice(&[0]); // zero date
        p.extend_from_slice(&2020u16.to_le_bytes());
        p.extend_from_slice(&1.1f32.to_le_bytes());
        p
    }

    #[test]
    fn decodes_values() {
        let v = parse_binary_row(&sample(), &metas()).expect("row");
        assert_eq!(v[0], Some(Value::Int(-2)));
        assert_eq!(v[1], Some(Value::UInt(4_000_000_000)));
        assert_eq!(v[2], Some(Value::Int(-9_000_000_000)));
        assert_eq!(v[3], Some(Value::Double(0.1)));
        assert_eq!(v[4], Some(Value::Decimal("-1.50".into())));
        assert_eq!(v[5], Some(Value::Bytes(b"2024-01-31 23:59:58.120".to_vec())));
        assert_eq!(v[6], Some(Value::Bytes(b"-838:59:59".to_vec())));
        assert_eq!(v[7], Some(Value::Bytes(b"abc".to_vec())));
        assert_eq!(v[8], Some(Value::Bytes(b"0000-00-00".to_vec())));
        assert_eq!(v[9], Some(Value::Bytes(b"2020".to_vec())));
        assert_eq!(v[10], Some(Value::Double(f64::from(1.1f32))));
        assert_eq!(v[11], None);
    }

    #[test]
    fn text_form_and_back() {
        let p = sample();
        let t = binary_row_to_text(&p, &metas()).expect("text");
        let f = |i: usize| t.field(i).map(|b| String::from_utf8_lossy(b).into_owned());
        assert_eq!(f(0).as_deref(), Some("-2"));
        assert_eq!(f(3).as_deref(), Some("0.1"));
        assert_eq!(f(5).as_deref(), Some("2024-01-31 23:59:58.120"));
        assert_eq!(f(10).as_deref(), Some("1.1"));
        assert_eq!(f(11), None);
        let back = text_row_to_binary(&t, &metas(), 12).expect("binary");
        assert_eq!(&back[..], &p[..]);
        // Only the visible prefix is encoded (bitmap sized for it).
        let two = text_row_to_binary(&t, &metas(), 2).expect("binary");
        assert_eq!(&two[..], &[0x00, 0x00, 0xFE, 0x00, 0x28, 0x6B, 0xEE][..]);
    }

    #[test]
    fn malformed_binary_rows() {
        let metas = metas();
        let p = sample();
        assert!(parse_binary_row(&p[..p.len() - 1], &metas).is_err());
        assert!(parse_binary_row(&[0x01, 0, 0], &metas).is_err());
        let mut extra = p.clone();
        extra.push(0);
        assert!(binary_row_to_text(&extra, &metas).is_err());
        assert!(parse_binary_row(&[], &metas).is_err());
    }

    /// Found by the `backend_rows` fuzz target: a TIME text out of range
    /// overflowed while being encoded.
    #[test]
    fn time_text_out_of_range_is_an_error() {
        let time = [m(types::TIME, 0, 0)];
        let row = TextRow::from_fields([Some(&b"99999999999999:00:00"[..])]);
        assert!(text_row_to_binary(&row, &time, 1).is_err());
        let row = TextRow::from_fields([Some(&b"-838:59:59"[..])]);
        assert!(text_row_to_binary(&row, &time, 1).is_ok());
    }
}
