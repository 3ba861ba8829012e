//! The few packets sluice builds or inspects itself: OK, ERR, EOF, and
//! length-encoded integers.

use bytes::{BufMut, BytesMut};

use super::consts::CapabilityFlags;

/// Read a length-encoded integer; returns the value and the bytes consumed.
pub fn read_lenenc(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    match first {
        0..=0xfa => Some((u64::from(first), 1)),
        0xfc => {
            let b = buf.get(1..3)?;
            Some((u64::from(u16::from_le_bytes([b[0], b[1]])), 3))
        }
        0xfd => {
            let b = buf.get(1..4)?;
            Some((u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16, 4))
        }
        0xfe => {
            let b: [u8; 8] = buf.get(1..9)?.try_into().ok()?;
            Some((u64::from_le_bytes(b), 9))
        }
        // 0xfb is NULL in rows and 0xff is an error header: not integers.
        _ => None,
    }
}

pub fn put_lenenc(out: &mut BytesMut, v: u64) {
    if v < 0xfb {
        out.put_u8(v as u8);
    } else if v <= 0xffff {
        out.put_u8(0xfc);
        out.put_u16_le(v as u16);
    } else if v <= 0xff_ffff {
        out.put_u8(0xfd);
        out.put_uint_le(v, 3);
    } else {
        out.put_u8(0xfe);
        out.put_u64_le(v);
    }
}

pub fn put_lenenc_str(out: &mut BytesMut, s: &[u8]) {
    put_lenenc(out, s.len() as u64);
    out.put_slice(s);
}

/// What the status-carrying packets (OK, EOF) tell about the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OkInfo {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

/// Parse an OK packet (header 0x00, or 0xFE when it replaces an EOF under
/// CLIENT_DEPRECATE_EOF).
pub fn parse_ok(payload: &[u8]) -> Option<OkInfo> {
    let rest = payload.get(1..)?;
    let (affected_rows, a) = read_lenenc(rest)?;
    let rest = rest.get(a..)?;
    let (last_insert_id, b) = read_lenenc(rest)?;
    let rest = rest.get(b..)?;
    let status = u16::from_le_bytes([*rest.first()?, *rest.get(1)?]);
    let warnings = match rest.get(2..4) {
        Some(w) => u16::from_le_bytes([w[0], w[1]]),
        None => 0,
    };
    Some(OkInfo {
        affected_rows,
        last_insert_id,
        status,
        warnings,
    })
}

/// Status flags of a classic EOF packet (0xFE, warnings, status).
pub fn parse_eof_status(payload: &[u8]) -> Option<u16> {
    let b = payload.get(3..5)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// Status flags of a terminating 0xFE packet under either EOF convention.
pub fn terminator_status(payload: &[u8], deprecate_eof: bool) -> Option<u16> {
    if deprecate_eof {
        parse_ok(payload).map(|ok| ok.status)
    } else {
        parse_eof_status(payload)
    }
}

/// The info text of an OK packet (`Records: 3  Duplicates: 1  Warnings: 1`), after its
/// status and warnings: a length-encoded string (the server writes it so whatever the
/// capabilities, and clients read it so). `None` when there is none.
pub fn ok_info(payload: &[u8]) -> Option<&[u8]> {
    let rest = payload.get(1..)?;
    let (_, a) = read_lenenc(rest)?;
    let rest = rest.get(a..)?;
    let (_, b) = read_lenenc(rest)?;
    let rest = rest.get(b..)?.get(4..)?;
    let (n, c) = read_lenenc(rest)?;
    let info = rest.get(c..c.checked_add(usize::try_from(n).ok()?)?)?;
    (!info.is_empty()).then_some(info)
}

/// Appends an info text to an OK packet of [`ok_packet`] (see [`ok_info`]).
pub fn put_ok_info(out: &mut BytesMut, info: &[u8]) {
    put_lenenc(out, info.len() as u64);
    out.put_slice(info);
}

/// Warning count of a terminating 0xFE packet under either EOF convention.
pub fn terminator_warnings(payload: &[u8], deprecate_eof: bool) -> Option<u16> {
    if deprecate_eof {
        parse_ok(payload).map(|ok| ok.warnings)
    } else {
        let b = payload.get(1..3)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }
}

/// A MySQL error as sent to a client: code, SQLSTATE and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    pub code: u16,
    pub state: [u8; 5],
    pub message: String,
}

impl ErrPacket {
    pub fn new(code: u16, state: &str, message: impl Into<String>) -> Self {
        let mut st = *b"HY000";
        if state.len() == 5 {
            st.copy_from_slice(state.as_bytes());
        }
        ErrPacket {
            code,
            state: st,
            message: message.into(),
        }
    }

    pub fn encode(&self) -> BytesMut {
        let mut out = BytesMut::with_capacity(9 + self.message.len());
        out.put_u8(0xff);
        out.put_u16_le(self.code);
        out.put_u8(b'#');
        out.put_slice(&self.state);
        out.put_slice(self.message.as_bytes());
        out
    }

    /// The ERR a server sends before its greeting, when it does not know
    /// yet whether the client speaks protocol 4.1: no SQLSTATE marker.
    pub fn encode_pre_handshake(&self) -> BytesMut {
        let mut out = BytesMut::with_capacity(3 + self.message.len());
        out.put_u8(0xff);
        out.put_u16_le(self.code);
        out.put_slice(self.message.as_bytes());
        out
    }

    /// Parse an ERR packet (protocol 4.1 layout).
    pub fn parse(payload: &[u8]) -> Option<ErrPacket> {
        if payload.first() != Some(&0xff) || payload.len() < 3 {
            return None;
        }
        let code = u16::from_le_bytes([payload[1], payload[2]]);
        let rest = &payload[3..];
        let (state, msg) = if rest.first() == Some(&b'#') && rest.len() >= 6 {
            let mut st = [0u8; 5];
            st.copy_from_slice(&rest[1..6]);
            (st, &rest[6..])
        } else {
            (*b"HY000", rest)
        };
        Some(ErrPacket {
            code,
            state,
            message: String::from_utf8_lossy(msg).into_owned(),
        })
    }
}

impl std::fmt::Display for ErrPacket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            String::from_utf8_lossy(&self.state),
            // Displayed only in logs, where a message may carry a client's
            // user name or SQL: escaped and capped (log forging).
            crate::logging::escaped(&self.message, 2 * crate::logging::MAX_LOGGED_NAME)
        )
    }
}

/// An OK packet as sluice sends it.
/// Status flag: the OK packet carries session-state changes (CLIENT_SESSION_TRACK).
pub const SERVER_SESSION_STATE_CHANGED: u16 = 0x4000;

pub fn ok_packet(affected_rows: u64, last_insert_id: u64, status: u16, warnings: u16) -> BytesMut {
    let mut out = BytesMut::with_capacity(16);
    out.put_u8(0x00);
    put_lenenc(&mut out, affected_rows);
    put_lenenc(&mut out, last_insert_id);
    // sluice's own OK packets carry no session-state data, so never the
    // flag announcing it (the status may come from a backend's OK that had it).
    out.put_u16_le(status & !SERVER_SESSION_STATE_CHANGED);
    out.put_u16_le(warnings);
    out
}

/// An OK reporting a change of default database in its session-state data
/// (CLIENT_SESSION_TRACK clients): what MariaDB sends after a login with a
/// database.
pub fn ok_packet_with_schema(status: u16, db: &str) -> BytesMut {
    let mut out = BytesMut::with_capacity(16 + db.len());
    out.put_u8(0x00);
    put_lenenc(&mut out, 0);
    put_lenenc(&mut out, 0);
    out.put_u16_le(status | SERVER_SESSION_STATE_CHANGED);
    out.put_u16_le(0);
    put_lenenc(&mut out, 0); // info: empty
                             // One entry: SESSION_TRACK_SCHEMA (1), its data = the name as lenenc string.
    let mut name = BytesMut::new();
    put_lenenc(&mut name, db.len() as u64);
    name.extend_from_slice(db.as_bytes());
    let mut entry = BytesMut::new();
    entry.put_u8(1);
    put_lenenc(&mut entry, name.len() as u64);
    entry.extend_from_slice(&name);
    put_lenenc(&mut out, entry.len() as u64);
    out.extend_from_slice(&entry);
    out
}

/// The packet that ends a result set: an EOF, or an OK with header 0xFE when
/// the client asked for CLIENT_DEPRECATE_EOF.
pub fn eof_packet(caps: CapabilityFlags, status: u16, warnings: u16) -> BytesMut {
    if caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
        let mut out = ok_packet(0, 0, status, warnings);
        out[0] = 0xfe;
        out
    } else {
        let mut out = BytesMut::with_capacity(5);
        out.put_u8(0xfe);
        out.put_u16_le(warnings);
        out.put_u16_le(status & !SERVER_SESSION_STATE_CHANGED);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trip() {
        for v in [0u64, 250, 251, 0xffff, 0x10000, 0xff_ffff, 0x100_0000, u64::MAX] {
            let mut b = BytesMut::new();
            put_lenenc(&mut b, v);
            assert_eq!(read_lenenc(&b), Some((v, b.len())));
        }
        assert_eq!(read_lenenc(&[0xfc, 1]), None);
        assert_eq!(read_lenenc(&[]), None);
    }

    #[test]
    fn ok_round_trip() {
        let p = ok_packet(3, 700, 0x0002, 1);
        let ok = parse_ok(&p).expect("ok");
        assert_eq!(
            (ok.affected_rows, ok.last_insert_id, ok.status, ok.warnings),
            (3, 700, 2, 1)
        );
    }

    #[test]
    fn err_round_trip() {
        let e = ErrPacket::new(
            1045,
            "28000",
            "Access denied for user 'x'@'y' (using password: YES)",
        );
        assert_eq!(ErrPacket::parse(&e.encode()), Some(e));
        assert_eq!(ErrPacket::parse(&[0xff]), None);
    }
}
