//! A tiny blocking MySQL client over a raw TCP socket, for tests that must see exactly
//! which packets (or none) sluice sends: greetings replaced by errors, errors at login,
//! silent closes.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// What a read from the socket produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// One packet: sequence id and payload.
    Packet(u8, Vec<u8>),
    /// The peer closed the connection (EOF or reset) before a whole packet.
    Closed,
    /// Nothing arrived within the read timeout.
    Timeout,
}

impl Frame {
    /// `(code, SQLSTATE or "", message)` of an ERR packet, with or without the
    /// protocol-4.1 SQLSTATE marker.
    pub fn err(&self) -> Option<(u16, String, String)> {
        let Frame::Packet(_, p) = self else { return None };
        if p.first() != Some(&0xff) || p.len() < 3 {
            return None;
        }
        let code = u16::from_le_bytes([p[1], p[2]]);
        let rest = &p[3..];
        if rest.first() == Some(&b'#') && rest.len() >= 6 {
            let state = String::from_utf8_lossy(&rest[1..6]).into_owned();
            return Some((code, state, String::from_utf8_lossy(&rest[6..]).into_owned()));
        }
        Some((code, String::new(), String::from_utf8_lossy(rest).into_owned()))
    }

    pub fn seq(&self) -> Option<u8> {
        match self {
            Frame::Packet(seq, _) => Some(*seq),
            _ => None,
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Frame::Packet(_, p) if p.first() == Some(&0x00))
    }
}

pub struct RawConn {
    pub sock: TcpStream,
}

impl RawConn {
    pub fn connect(port: u16) -> RawConn {
        let sock = TcpStream::connect(("127.0.0.1", port)).expect("connect to sluice");
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        RawConn { sock }
    }

    pub fn set_timeout(&self, t: Duration) {
        self.sock.set_read_timeout(Some(t)).expect("read timeout");
    }

    /// Reads one packet (single frame; test packets are small).
    pub fn read(&mut self) -> Frame {
        let mut head = [0u8; 4];
        if let Some(f) = self.fill(&mut head) {
            return f;
        }
        let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
        let mut payload = vec![0u8; len];
        if let Some(f) = self.fill(&mut payload) {
            return f;
        }
        Frame::Packet(head[3], payload)
    }

    fn fill(&mut self, buf: &mut [u8]) -> Option<Frame> {
        let mut got = 0;
        while got < buf.len() {
            match self.sock.read(&mut buf[got..]) {
                Ok(0) => return Some(Frame::Closed),
                Ok(n) => got += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Some(Frame::Timeout)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Some(Frame::Closed),
            }
        }
        None
    }

    pub fn write(&mut self, seq: u8, payload: &[u8]) {
        let len = (payload.len() as u32).to_le_bytes();
        let mut frame = vec![len[0], len[1], len[2], seq];
        frame.extend_from_slice(payload);
        // A closed peer shows up on the next read.
        let _ = self.sock.write_all(&frame);
    }

    /// Reads the greeting and answers it with a mysql_native_password login.
    /// Returns the greeting (if it was an ERR) or the answer to the login.
    pub fn login(&mut self, user: &str, password: &str) -> Frame {
        self.login_with(user, password, 0, None)
    }

    /// `login` with more capability flags and a default database.
    pub fn login_with(&mut self, user: &str, password: &str, extra_caps: u32, db: Option<&str>) -> Frame {
        let greeting = self.read();
        let Frame::Packet(seq, g) = &greeting else {
            return greeting;
        };
        if g.first() == Some(&0xff) {
            return greeting;
        }
        let nonce = greeting_nonce(g).expect("parse the greeting");
        let auth = native_scramble(password.as_bytes(), &nonce);
        // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | TRANSACTIONS | LONG_FLAG
        let mut caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_2000 | 0x0000_0004 | extra_caps;
        if db.is_some() {
            caps |= 0x0000_0008; // CONNECT_WITH_DB
        }
        let mut p = Vec::new();
        p.extend_from_slice(&caps.to_le_bytes());
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0u8; 23]);
        p.extend_from_slice(user.as_bytes());
        p.push(0);
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
        if let Some(db) = db {
            p.extend_from_slice(db.as_bytes());
            p.push(0);
        }
        p.extend_from_slice(b"mysql_native_password\0");
        self.write(seq.wrapping_add(1), &p);
        self.read()
    }

    /// COM_QUERY and the first packet of its answer.
    pub fn query(&mut self, sql: &str) -> Frame {
        let mut p = vec![0x03];
        p.extend_from_slice(sql.as_bytes());
        self.write(0, &p);
        self.read()
    }
}

/// The 20-byte scramble of a v10 greeting.
fn greeting_nonce(g: &[u8]) -> Option<Vec<u8>> {
    let version_end = 1 + g.get(1..)?.iter().position(|&b| b == 0)?;
    let mut i = version_end + 1 + 4;
    let mut nonce = g.get(i..i + 8)?.to_vec();
    i += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    nonce.extend_from_slice(g.get(i..i + 12)?);
    Some(nonce)
}

fn native_scramble(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    use sha1::{Digest, Sha1};
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}
