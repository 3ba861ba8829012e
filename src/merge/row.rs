//! Text-protocol result rows: a sequence of length-encoded strings, `0xFB` = NULL.

use super::value::read_lenenc_int;
use super::MergeError;
use bytes::{BufMut, Bytes, BytesMut};

/// One text-protocol row, parsed once; field values are slices of the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRow {
    payload: Bytes,
    /// (start, end) of each field's value in `payload`; `None` = NULL.
    fields: Vec<Option<(usize, usize)>>,
    /// End of each field's encoding (header included) in `payload`.
    ends: Vec<usize>,
}

impl TextRow {
    /// Parses a row packet payload (without the 4-byte packet header).
    pub fn parse(payload: Bytes) -> Result<TextRow, MergeError> {
        let mut fields = Vec::new();
        let mut ends = Vec::new();
        let mut pos = 0usize;
        while pos < payload.len() {
            if payload[pos] == 0xFB {
                fields.push(None);
                pos += 1;
            } else {
                let (len, n) = read_lenenc_int(&payload[pos..])
                    .ok_or(MergeError::Malformed("bad length-encoded field header"))?;
                let start = pos + n;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|l| start.checked_add(l))
                    .filter(|&e| e <= payload.len())
                    .ok_or(MergeError::Malformed("field runs past the end of the row"))?;
                fields.push(Some((start, end)));
                pos = end;
            }
            ends.push(pos);
        }
        Ok(TextRow {
            payload,
            fields,
            ends,
        })
    }

    /// Builds a row from field values.
    pub fn from_fields<'a>(fields: impl IntoIterator<Item = Option<&'a [u8]>>) -> TextRow {
        let mut out = BytesMut::new();
        encode_text_row(fields.into_iter(), &mut out);
        // Our own encoding always parses.
        TextRow::parse(out.freeze()).unwrap_or_else(|_| TextRow {
            payload: Bytes::new(),
            fields: Vec::new(),
            ends: Vec::new(),
        })
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Field `i`; `None` for NULL (and for an index past the end).
    pub fn field(&self, i: usize) -> Option<&[u8]> {
        let (s, e) = (*self.fields.get(i)?)?;
        Some(&self.payload[s..e])
    }

    /// Field `i` as a zero-copy slice of the payload.
    pub fn field_bytes(&self, i: usize) -> Option<Bytes> {
        let (s, e) = (*self.fields.get(i)?)?;
        Some(self.payload.slice(s..e))
    }

    /// The whole row payload.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The payload of the first `visible` fields. Text rows are concatenated fields, so
    /// this is always a zero-copy prefix of the original payload.
    pub fn visible_payload(&self, visible: usize) -> Bytes {
        if visible >= self.fields.len() {
            return self.payload.clone();
        }
        let end = if visible == 0 { 0 } else { self.ends[visible - 1] };
        self.payload.slice(..end)
    }
}

/// Encodes fields as a text-protocol row payload.
pub fn encode_text_row<'a>(fields: impl Iterator<Item = Option<&'a [u8]>>, out: &mut BytesMut) {
    for f in fields {
        match f {
            None => out.put_u8(0xFB),
            Some(v) => {
                put_lenenc_int(out, v.len() as u64);
                out.put_slice(v);
            }
        }
    }
}

pub(super) fn put_lenenc_int(out: &mut BytesMut, v: u64) {
    if v < 0xFB {
        out.put_u8(v as u8);
    } else if v <= 0xFFFF {
        out.put_u8(0xFC);
        out.put_u16_le(v as u16);
    } else if v <= 0xFF_FFFF {
        out.put_u8(0xFD);
        out.put_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.put_u8(0xFE);
        out.put_u64_le(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let long = vec![b'x'; 300];
        let big = vec![b'y'; 70_000];
        let fields: Vec<Option<&[u8]>> = vec![
            Some(b"1"),
            None,
            Some(b""),
            Some(&long),
            Some(&big),
            Some("é".as_bytes()),
        ];
        let mut out = BytesMut::new();
        encode_text_row(fields.iter().copied(), &mut out);
        let row = TextRow::parse(out.freeze()).expect("row");
        assert_eq!(row.len(), 6);
        for (i, f) in fields.iter().enumerate() {
            assert_eq!(row.field(i), *f);
        }
        assert_eq!(row.field(6), None);
        assert_eq!(row.field_bytes(0).as_deref(), Some(&b"1"[..]));
    }

    #[test]
    fn visible_prefix_is_zero_copy() {
        let row = TextRow::from_fields([Some(&b"ab"[..]), None, Some(&b"helper"[..])]);
        let all = row.visible_payload(3);
        assert_eq!(all.as_ptr(), row.payload().as_ptr());
        assert_eq!(&all[..], &row.payload()[..]);
        let two = row.visible_payload(2);
        assert_eq!(&two[..], &[2, b'a', b'b', 0xFB][..]);
        assert_eq!(two.as_ptr(), row.payload().as_ptr());
        assert_eq!(&row.visible_payload(1)[..], &[2, b'a', b'b'][..]);
        assert!(row.visible_payload(0).is_empty());
    }

    #[test]
    fn malformed_rows() {
        assert!(TextRow::parse(Bytes::from_static(&[5, b'a'])).is_err());
        assert!(TextRow::parse(Bytes::from_static(&[0xFC, 1])).is_err());
        assert!(TextRow::parse(Bytes::from_static(&[0xFF])).is_err());
        assert!(TextRow::parse(Bytes::from_static(&[
            0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF
        ]))
        .is_err());
        let empty = TextRow::parse(Bytes::new()).expect("empty row");
        assert!(empty.is_empty());
    }
}
