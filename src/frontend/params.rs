//! The parameters of a COM_STMT_EXECUTE, decoded into values
//! ([`ParamValue`]) for statements sluice plans itself (sharded tables).
//!
//! Layout after the command byte: statement id (4), flags (1), iteration
//! count (4); then, when the statement has parameters: the NULL bitmap
//! (`(n + 7) / 8` bytes, bit `i` = parameter `i`), the new-params-bound flag,
//! the types (2 bytes each: type, 0x80 for unsigned) when that flag is 1,
//! and the values of the parameters that are neither NULL nor sent as long
//! data. Without the flag the types of the previous EXECUTE apply.
//!
//! Values as the server reads them: integers by width and sign, FLOAT and
//! DOUBLE as doubles, temporal values decoded into their fields, DECIMAL as
//! its text, BLOB types (and GEOMETRY) as binary strings, and every other type
//! (strings, JSON, BIT, ENUM, SET) as a string in the client's character set.
//! Long data takes the kind of its parameter's type (BLOB or string).

use crate::shard::{ParamValue, Temporal};

/// TINY_BLOB, MEDIUM_BLOB, LONG_BLOB, BLOB, GEOMETRY: binary strings in MariaDB.
fn is_blob(code: u8) -> bool {
    matches!(code, 0xf9..=0xfc | 0xff)
}

/// A parameter block that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("COM_STMT_EXECUTE is shorter than its parameters")]
    Truncated,
    #[error("COM_STMT_EXECUTE has no parameter types (none were ever bound)")]
    NoTypes,
    #[error("parameter {index} has unknown type {code:#04x}")]
    UnknownType { index: usize, code: u8 },
    #[error("COM_STMT_EXECUTE has trailing bytes after its parameters")]
    Trailing,
}

/// The decoded parameters, and the types the packet bound (to remember for
/// the next EXECUTE), if it bound any.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub values: Vec<ParamValue>,
    pub bound_types: Option<Vec<u8>>,
    /// Each parameter as the client bound it, to pass on to a sub-table's prepared
    /// statement unchanged (long data passed on as long data).
    pub raw: Vec<RawParam>,
}

/// One parameter of a COM_STMT_EXECUTE as the client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawParam {
    /// The type code and its flag byte (0x80: unsigned).
    pub ty: [u8; 2],
    pub null: bool,
    /// The value's bytes as COM_STMT_EXECUTE carries them (empty for NULL); for a
    /// parameter sent as long data (`long`), the data itself, which is passed on to the
    /// sub-table's statement with COM_STMT_SEND_LONG_DATA as the client sent it.
    pub value: Vec<u8>,
    pub long: bool,
}

impl RawParam {
    /// The parameter block of a COM_STMT_EXECUTE binding `params` (in this order),
    /// after the iteration count: NULL bitmap, new-params-bound flag, types, values.
    pub fn encode_block(params: &[&RawParam], out: &mut Vec<u8>) {
        if params.is_empty() {
            return;
        }
        let at = out.len();
        out.resize(at + params.len().div_ceil(8), 0);
        for (i, p) in params.iter().enumerate() {
            if p.null {
                out[at + i / 8] |= 1 << (i % 8);
            }
        }
        out.push(1);
        for p in params {
            out.extend_from_slice(&p.ty);
        }
        for p in params.iter().filter(|p| !p.long) {
            out.extend_from_slice(&p.value);
        }
    }
}

/// Offset of the NULL bitmap: command, id, flags, iteration count.
const PARAMS_AT: usize = 10;

/// `payload` (a whole COM_STMT_EXECUTE of a statement with `n` parameters)
/// for a statement that binds those parameters in `order` (indices into
/// them, repeats allowed): the same header, then the parameters re-encoded
/// with their types. `saved_types` as for [`decode`]; no long data.
pub fn rebind(
    payload: &[u8],
    n: usize,
    saved_types: Option<&[u8]>,
    order: &[u16],
) -> Result<Vec<u8>, ParamError> {
    let d = decode(payload, n, saved_types, &[])?;
    let bound = order
        .iter()
        .map(|&i| d.raw.get(usize::from(i)).ok_or(ParamError::Truncated))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = payload.get(..PARAMS_AT).ok_or(ParamError::Truncated)?.to_vec();
    RawParam::encode_block(&bound, &mut out);
    Ok(out)
}

/// Decode the `n` parameters of `payload` (a whole COM_STMT_EXECUTE).
/// `saved_types`: the types bound by an earlier EXECUTE; `long_data[i]`: the
/// bytes sent for parameter `i` by COM_STMT_SEND_LONG_DATA (that parameter
/// then has no value in the packet).
pub fn decode(
    payload: &[u8],
    n: usize,
    saved_types: Option<&[u8]>,
    long_data: &[Option<Vec<u8>>],
) -> Result<Decoded, ParamError> {
    if n == 0 {
        return Ok(Decoded {
            values: Vec::new(),
            bound_types: None,
            raw: Vec::new(),
        });
    }
    let mut r = Reader {
        b: payload,
        pos: PARAMS_AT,
    };
    let bitmap = r.take(n.div_ceil(8))?;
    let bound = r.take(1)?[0] == 1;
    let bound_types = if bound {
        Some(r.take(2 * n)?.to_vec())
    } else {
        None
    };
    let types = match (&bound_types, saved_types) {
        (Some(t), _) => t.as_slice(),
        (None, Some(t)) if t.len() == 2 * n => t,
        _ => return Err(ParamError::NoTypes),
    };
    let mut values = Vec::with_capacity(n);
    let mut raw = Vec::with_capacity(n);
    for i in 0..n {
        let ty = [types[2 * i], types[2 * i + 1]];
        if let Some(data) = long_data.get(i).and_then(Option::as_ref) {
            values.push(if is_blob(types[2 * i]) {
                ParamValue::Blob(data.clone())
            } else {
                ParamValue::Bytes(data.clone())
            });
            raw.push(RawParam {
                ty,
                null: false,
                value: data.clone(),
                long: true,
            });
            continue;
        }
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            values.push(ParamValue::Null);
            raw.push(RawParam {
                ty,
                null: true,
                value: Vec::new(),
                long: false,
            });
            continue;
        }
        let (code, unsigned) = (types[2 * i], types[2 * i + 1] & 0x80 != 0);
        let start = r.pos;
        values.push(r.value(i, code, unsigned)?);
        raw.push(RawParam {
            ty,
            null: false,
            value: payload[start..r.pos].to_vec(),
            long: false,
        });
    }
    if r.pos != payload.len() {
        return Err(ParamError::Trailing);
    }
    Ok(Decoded {
        values,
        bound_types,
        raw,
    })
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ParamError> {
        let end = self.pos.checked_add(n).ok_or(ParamError::Truncated)?;
        let s = self.b.get(self.pos..end).ok_or(ParamError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn int(&mut self, width: usize, unsigned: bool) -> Result<ParamValue, ParamError> {
        let b = self.take(width)?;
        let mut v: u64 = 0;
        for (k, &x) in b.iter().enumerate() {
            v |= u64::from(x) << (8 * k);
        }
        if unsigned {
            return Ok(match i64::try_from(v) {
                Ok(s) => ParamValue::Int(s),
                Err(_) => ParamValue::UInt(v),
            });
        }
        let shift = 64 - 8 * width as u32;
        Ok(ParamValue::Int(((v << shift) as i64) >> shift))
    }

    fn lenenc(&mut self) -> Result<u64, ParamError> {
        let rest = self.b.get(self.pos..).ok_or(ParamError::Truncated)?;
        let (v, used) = crate::protocol::packets::read_lenenc(rest).ok_or(ParamError::Truncated)?;
        self.pos += used;
        Ok(v)
    }

    fn value(&mut self, index: usize, code: u8, unsigned: bool) -> Result<ParamValue, ParamError> {
        Ok(match code {
            0x06 => ParamValue::Null,
            0x01 => self.int(1, unsigned)?,
            0x02 | 0x0d => self.int(2, unsigned)?,
            0x03 | 0x09 => self.int(4, unsigned)?,
            0x08 => self.int(8, unsigned)?,
            0x04 => {
                let b = self.take(4)?;
                ParamValue::Float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            0x05 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(self.take(8)?);
                ParamValue::Float(f64::from_le_bytes(a))
            }
            // DATE, NEWDATE
            0x0a | 0x0e => {
                let len = usize::from(self.take(1)?[0]);
                ParamValue::Temporal(date(self.take(len)?, true))
            }
            // TIMESTAMP, DATETIME
            0x07 | 0x0c => {
                let len = usize::from(self.take(1)?[0]);
                ParamValue::Temporal(date(self.take(len)?, false))
            }
            // TIME
            0x0b => {
                let len = usize::from(self.take(1)?[0]);
                ParamValue::Temporal(time(self.take(len)?))
            }
            // DECIMAL, NEWDECIMAL, BLOBs, GEOMETRY, and strings (VARCHAR, BIT, JSON,
            // ENUM, SET, VAR_STRING, STRING): length-encoded bytes.
            0x00 | 0x0f | 0x10 | 0xf5..=0xff => {
                let len = usize::try_from(self.lenenc()?).map_err(|_| ParamError::Truncated)?;
                let b = self.take(len)?.to_vec();
                match code {
                    0x00 | 0xf6 => ParamValue::Decimal(b),
                    c if is_blob(c) => ParamValue::Blob(b),
                    _ => ParamValue::Bytes(b),
                }
            }
            code => return Err(ParamError::UnknownType { index, code }),
        })
    }
}

/// A binary DATE/DATETIME value (0, 4, 7 or 11 bytes; missing fields are 0).
fn date(b: &[u8], date_only: bool) -> Temporal {
    let g = |k: usize| b.get(k).copied().unwrap_or(0);
    let (year, month, day) = (u16::from_le_bytes([g(0), g(1)]), g(2), g(3));
    if date_only {
        return Temporal::Date { year, month, day };
    }
    Temporal::DateTime {
        year,
        month,
        day,
        hour: g(4),
        minute: g(5),
        second: g(6),
        micro: if b.len() >= 11 {
            u32::from_le_bytes([g(7), g(8), g(9), g(10)])
        } else {
            0
        },
    }
}

/// A binary TIME value (0, 8 or 12 bytes).
fn time(b: &[u8]) -> Temporal {
    let g = |k: usize| b.get(k).copied().unwrap_or(0);
    let days = u32::from_le_bytes([g(1), g(2), g(3), g(4)]);
    Temporal::Time {
        negative: g(0) == 1,
        hours: u64::from(days) * 24 + u64::from(g(5)),
        minute: g(6),
        second: g(7),
        micro: if b.len() >= 12 {
            u32::from_le_bytes([g(8), g(9), g(10), g(11)])
        } else {
            0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An EXECUTE of statement 1 with `params` (type, unsigned, value bytes or None for NULL).
    fn packet(params: &[(u8, bool, Option<Vec<u8>>)], bind: bool) -> Vec<u8> {
        let mut p = vec![0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0];
        let mut bitmap = vec![0u8; params.len().div_ceil(8)];
        for (i, (_, _, v)) in params.iter().enumerate() {
            if v.is_none() {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        p.extend_from_slice(&bitmap);
        p.push(u8::from(bind));
        if bind {
            for (t, u, _) in params {
                p.push(*t);
                p.push(if *u { 0x80 } else { 0 });
            }
        }
        for (_, _, v) in params {
            if let Some(v) = v {
                p.extend_from_slice(v);
            }
        }
        p
    }

    #[test]
    fn integers_floats_strings_nulls() {
        let params = vec![
            (0x01, false, Some(vec![0xff])),
            (0x01, true, Some(vec![0xff])),
            (0x02, false, Some((-300i16).to_le_bytes().to_vec())),
            (0x03, false, Some((-70000i32).to_le_bytes().to_vec())),
            (0x08, true, Some(u64::MAX.to_le_bytes().to_vec())),
            (0x08, false, Some(i64::MIN.to_le_bytes().to_vec())),
            (0x05, false, Some(0.1f64.to_le_bytes().to_vec())),
            (0x04, false, Some(1.5f32.to_le_bytes().to_vec())),
            (0xfd, false, Some([&[4u8][..], "it's".as_bytes()].concat())),
            (0xfd, false, None),
            (0x06, false, Some(vec![])),
        ];
        let d = decode(&packet(&params, true), params.len(), None, &[]).expect("decode");
        assert_eq!(
            d.values,
            vec![
                ParamValue::Int(-1),
                ParamValue::Int(255),
                ParamValue::Int(-300),
                ParamValue::Int(-70000),
                ParamValue::UInt(u64::MAX),
                ParamValue::Int(i64::MIN),
                ParamValue::Float(0.1),
                ParamValue::Float(1.5),
                ParamValue::Bytes(b"it's".to_vec()),
                ParamValue::Null,
                ParamValue::Null,
            ]
        );
        assert_eq!(d.bound_types.map(|t| t.len()), Some(22));
    }

    #[test]
    fn temporal_values_are_decoded() {
        let mut dt = vec![11, 0xe8, 0x07, 1, 31, 23, 59, 58];
        dt.extend_from_slice(&500_000u32.to_le_bytes());
        let params = vec![
            (0x0c, false, Some(dt)),
            (0x0c, false, Some(vec![4, 0xe8, 0x07, 2, 29])),
            (0x0a, false, Some(vec![4, 0xe8, 0x07, 2, 29])),
            (0x0c, false, Some(vec![0])),
            (0x0b, false, Some(vec![8, 1, 34, 0, 0, 0, 22, 59, 59])),
            (0x0b, false, Some(vec![0])),
        ];
        let d = decode(&packet(&params, true), params.len(), None, &[]).expect("decode");
        let dt = |year, month, day, hour, minute, second, micro| {
            ParamValue::Temporal(Temporal::DateTime {
                year,
                month,
                day,
                hour,
                minute,
                second,
                micro,
            })
        };
        let time = |negative, hours, minute, second| {
            ParamValue::Temporal(Temporal::Time {
                negative,
                hours,
                minute,
                second,
                micro: 0,
            })
        };
        assert_eq!(
            d.values,
            vec![
                dt(2024, 1, 31, 23, 59, 58, 500_000),
                dt(2024, 2, 29, 0, 0, 0, 0),
                ParamValue::Temporal(Temporal::Date {
                    year: 2024,
                    month: 2,
                    day: 29
                }),
                dt(0, 0, 0, 0, 0, 0, 0),
                time(true, 838, 59, 59),
                time(false, 0, 0, 0),
            ]
        );
    }

    #[test]
    fn decimals_blobs_and_strings_keep_their_kind() {
        let params = vec![
            (0xf6, false, Some([&[4u8][..], b"-1.5"].concat())),
            (0xfc, false, Some(vec![2, 0xe4, 0x5c])),
            (0xfd, false, Some(vec![2, 0xe4, 0x5c])),
        ];
        let d = decode(&packet(&params, true), params.len(), None, &[]).expect("decode");
        assert_eq!(
            d.values,
            vec![
                ParamValue::Decimal(b"-1.5".to_vec()),
                ParamValue::Blob(vec![0xe4, 0x5c]),
                ParamValue::Bytes(vec![0xe4, 0x5c]),
            ]
        );
    }

    #[test]
    fn saved_types_and_long_data() {
        let params = vec![
            (0x08, false, Some(7i64.to_le_bytes().to_vec())),
            (0xfc, false, None),
        ];
        let first = decode(&packet(&params, true), 2, None, &[]).expect("decode");
        let types = first.bound_types.expect("types");
        // Second EXECUTE without types; parameter 1 came as long data (no value, no NULL bit needed).
        let mut p = packet(&[(0x08, false, Some(8i64.to_le_bytes().to_vec()))], false);
        p[10] = 0; // bitmap for 2 params is still one byte
        let long = vec![None, Some(b"long \\ data".to_vec())];
        let d = decode(&p, 2, Some(&types), &long).expect("decode");
        assert_eq!(
            d.values,
            vec![ParamValue::Int(8), ParamValue::Blob(b"long \\ data".to_vec())]
        );
        assert_eq!(d.bound_types, None);
        assert_eq!(decode(&p, 2, None, &long), Err(ParamError::NoTypes));
    }

    #[test]
    fn malformed_blocks() {
        let params = vec![(0x08, false, Some(7i64.to_le_bytes().to_vec()))];
        let p = packet(&params, true);
        assert_eq!(
            decode(&p[..p.len() - 1], 1, None, &[]),
            Err(ParamError::Truncated)
        );
        let mut extra = p.clone();
        extra.push(0);
        assert_eq!(decode(&extra, 1, None, &[]), Err(ParamError::Trailing));
        let bad = packet(&[(0x42, false, Some(vec![]))], true);
        assert_eq!(
            decode(&bad, 1, None, &[]),
            Err(ParamError::UnknownType { index: 0, code: 0x42 })
        );
        assert_eq!(decode(&[0x17, 1], 1, None, &[]), Err(ParamError::Truncated));
        let huge = packet(
            &[(0xfd, false, Some(vec![0xfe, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]))],
            true,
        );
        assert_eq!(decode(&huge, 1, None, &[]), Err(ParamError::Truncated));
    }
}
