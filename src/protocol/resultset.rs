//! Building a small text result set that sluice answers itself (e.g.
//! `SHOW PROCESSLIST`), in the client's protocol: column count, column
//! definitions, an EOF unless the client asked for CLIENT_DEPRECATE_EOF,
//! text rows, and the closing EOF (or OK with header 0xFE).

use bytes::{BufMut, BytesMut};

use super::codec::queue_frames;
use super::consts::CapabilityFlags;
use super::packets::{eof_packet, put_lenenc, put_lenenc_str};

/// One column as the server describes it (protocol 4.1 column definition).
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub charset: u16,
    pub length: u32,
    pub type_: u8,
    pub flags: u16,
    pub decimals: u8,
}

/// The column definition packet. `extended_metadata`: the client and
/// server agreed on MARIADB_CLIENT_EXTENDED_METADATA, which adds one
/// (here empty) length-encoded field after the original name.
pub fn column_def(c: &Column, extended_metadata: bool) -> BytesMut {
    let mut out = BytesMut::with_capacity(32 + c.name.len());
    put_lenenc_str(&mut out, b"def");
    put_lenenc_str(&mut out, b""); // schema
    put_lenenc_str(&mut out, b""); // table
    put_lenenc_str(&mut out, b""); // original table
    put_lenenc_str(&mut out, c.name.as_bytes());
    put_lenenc_str(&mut out, b""); // original name
    if extended_metadata {
        put_lenenc_str(&mut out, b"");
    }
    out.put_u8(0x0c);
    out.put_u16_le(c.charset);
    out.put_u32_le(c.length);
    out.put_u8(c.type_);
    out.put_u16_le(c.flags);
    out.put_u8(c.decimals);
    out.put_u16_le(0);
    out
}

/// One text row: each value length-encoded, NULL as 0xFB.
pub fn text_row(values: &[Option<&[u8]>]) -> BytesMut {
    let mut out = BytesMut::with_capacity(values.iter().map(|v| v.map_or(1, |v| v.len() + 9)).sum());
    for v in values {
        match v {
            Some(v) => put_lenenc_str(&mut out, v),
            None => out.put_u8(0xfb),
        }
    }
    out
}

/// Queue a whole result set on `out`, starting at sequence id `seq`.
pub fn queue_result(
    out: &mut BytesMut,
    seq: &mut u8,
    caps: CapabilityFlags,
    extended_metadata: bool,
    columns: &[Column],
    rows: &[Vec<Option<Vec<u8>>>],
    status: u16,
) {
    let mut count = BytesMut::new();
    put_lenenc(&mut count, columns.len() as u64);
    queue_frames(out, seq, &count);
    for c in columns {
        queue_frames(out, seq, &column_def(c, extended_metadata));
    }
    if !caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
        queue_frames(out, seq, &eof_packet(caps, status, 0));
    }
    for r in rows {
        let values: Vec<Option<&[u8]>> = r.iter().map(|v| v.as_deref()).collect();
        queue_frames(out, seq, &text_row(&values));
    }
    queue_frames(out, seq, &eof_packet(caps, status, 0));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::response::{ResponseKind, ResponseTracker, Step};

    const COLS: [Column; 2] = [
        Column {
            name: "Id",
            charset: 63,
            length: 11,
            type_: 8,
            flags: 129,
            decimals: 0,
        },
        Column {
            name: "Info",
            charset: 45,
            length: 400,
            type_: 253,
            flags: 0,
            decimals: 39,
        },
    ];

    /// What sluice builds is what its own response tracker (the one that
    /// relays servers' answers) reads as one complete result set.
    #[test]
    fn a_built_result_is_one_complete_response() {
        for deprecate_eof in [false, true] {
            let caps = if deprecate_eof {
                CapabilityFlags::CLIENT_DEPRECATE_EOF | CapabilityFlags::CLIENT_PROTOCOL_41
            } else {
                CapabilityFlags::CLIENT_PROTOCOL_41
            };
            let rows = vec![
                vec![Some(b"7".to_vec()), None],
                vec![Some(b"8".to_vec()), Some(b"x".to_vec())],
            ];
            let mut out = BytesMut::new();
            let mut seq = 1;
            queue_result(&mut out, &mut seq, caps, false, &COLS, &rows, 2);
            let mut t = ResponseTracker::new(ResponseKind::Query, deprecate_eof);
            let mut at = 0;
            let mut packets = 0;
            let mut last = Step::More;
            while at < out.len() {
                let len =
                    usize::from(out[at]) | usize::from(out[at + 1]) << 8 | usize::from(out[at + 2]) << 16;
                assert_eq!(usize::from(out[at + 3]), 1 + packets, "sequence ids follow");
                last = t.feed(len, &out[at + 4..at + 4 + len]);
                at += 4 + len;
                packets += 1;
                if last == Step::Done {
                    break;
                }
            }
            assert_eq!(last, Step::Done);
            assert_eq!(at, out.len(), "nothing after the end");
            assert_eq!(packets, 1 + 2 + usize::from(!deprecate_eof) + 2 + 1);
            assert_eq!(t.last_status, Some(2));
        }
    }

    #[test]
    fn nulls_and_values() {
        assert_eq!(&text_row(&[None, Some(b"ab")])[..], &[0xfb, 2, b'a', b'b']);
        let d = column_def(&COLS[0], true);
        assert_eq!(&d[..4], &[3, b'd', b'e', b'f']);
        assert_eq!(d.len(), column_def(&COLS[0], false).len() + 1);
    }
}
