//! COM_CHANGE_USER's request body, parsed without a socket.

use crate::protocol::consts::CapabilityFlags;

/// What a client's COM_CHANGE_USER asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeUser {
    pub user: String,
    pub auth: Vec<u8>,
    pub db: Option<String>,
    pub collation: Option<u8>,
    pub plugin: Option<Vec<u8>>,
}

/// Parse COM_CHANGE_USER's body (after the command byte).
pub fn parse_change_user(b: &[u8], caps: CapabilityFlags) -> Option<ChangeUser> {
    let nul = b.iter().position(|&c| c == 0)?;
    let user = String::from_utf8_lossy(&b[..nul]).into_owned();
    let mut rest = &b[nul + 1..];
    let auth = if caps.contains(CapabilityFlags::CLIENT_SECURE_CONNECTION) {
        let len = usize::from(*rest.first()?);
        let a = rest.get(1..1 + len)?.to_vec();
        rest = &rest[1 + len..];
        a
    } else {
        let n = rest.iter().position(|&c| c == 0)?;
        let a = rest[..n].to_vec();
        rest = &rest[n + 1..];
        a
    };
    let (db, mut rest) = match rest.iter().position(|&c| c == 0) {
        Some(n) => (String::from_utf8_lossy(&rest[..n]).into_owned(), &rest[n + 1..]),
        None => (String::from_utf8_lossy(rest).into_owned(), &rest[rest.len()..]),
    };
    let mut collation = None;
    if rest.len() >= 2 {
        collation = Some(rest[0]);
        rest = &rest[2..];
    }
    let plugin = if caps.contains(CapabilityFlags::CLIENT_PLUGIN_AUTH) && !rest.is_empty() {
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        Some(rest[..n].to_vec())
    } else {
        None
    };
    Some(ChangeUser {
        user,
        auth,
        db: if db.is_empty() { None } else { Some(db) },
        collation,
        plugin,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn caps() -> CapabilityFlags {
        CapabilityFlags::CLIENT_PROTOCOL_41
            | CapabilityFlags::CLIENT_SECURE_CONNECTION
            | CapabilityFlags::CLIENT_PLUGIN_AUTH
            | CapabilityFlags::CLIENT_CONNECT_ATTRS
    }

    fn body() -> Vec<u8> {
        let mut b = b"app\0".to_vec();
        b.push(20);
        b.extend_from_slice(&[0x5a; 20]);
        b.extend_from_slice(b"test\0");
        b.extend_from_slice(&[45, 0]);
        b.extend_from_slice(b"mysql_native_password\0");
        b.extend_from_slice(b"\x0a\x04_pid\x0512345");
        b
    }

    #[test]
    fn parses_a_full_request() {
        let r = parse_change_user(&body(), caps()).unwrap();
        assert_eq!(
            r,
            ChangeUser {
                user: "app".into(),
                auth: vec![0x5a; 20],
                db: Some("test".into()),
                collation: Some(45),
                plugin: Some(b"mysql_native_password".to_vec()),
            }
        );
    }

    #[test]
    fn every_truncation_is_an_answer_not_a_panic() {
        let b = body();
        for n in 0..b.len() {
            let r = parse_change_user(&b[..n], caps());
            // Up to the end of the scramble the request is malformed.
            assert_eq!(r.is_some(), n >= 25, "{n} bytes");
            let _ = parse_change_user(&b[..n], CapabilityFlags::empty());
        }
    }
}
