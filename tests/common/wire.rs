//! An async MySQL client at the packet level, for differential tests that must see
//! every field a server sends: OK packets (affected rows, insert id, status flags,
//! warnings, info, session-state-tracking data), ERR packets (code, SQLSTATE,
//! message), column definitions and rows of both protocols, prepare responses.
//!
//! It is deliberately small and strict: one command at a time, a timeout per
//! packet, and any protocol surprise reported as a [`Reply::Broken`] instead of a
//! panic, so a differential run can report it as one more difference.

use std::fmt::Write as _;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MAX_FRAME: usize = 0xFF_FFFF;

pub const COM_QUIT: u8 = 0x01;
pub const COM_INIT_DB: u8 = 0x02;
pub const COM_QUERY: u8 = 0x03;
pub const COM_PING: u8 = 0x0e;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_CLOSE: u8 = 0x19;
pub const COM_STMT_RESET: u8 = 0x1a;
pub const COM_RESET_CONNECTION: u8 = 0x1f;

pub const CLIENT_LONG_PASSWORD: u32 = 1;
pub const CLIENT_FOUND_ROWS: u32 = 1 << 1;
pub const CLIENT_LONG_FLAG: u32 = 1 << 2;
pub const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
pub const CLIENT_IGNORE_SPACE: u32 = 1 << 8;
pub const CLIENT_PROTOCOL_41: u32 = 1 << 9;
pub const CLIENT_INTERACTIVE: u32 = 1 << 10;
pub const CLIENT_TRANSACTIONS: u32 = 1 << 13;
pub const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;

pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
pub const SERVER_SESSION_STATE_CHANGED: u16 = 0x4000;

/// What a typical modern driver asks for (the server's offer is intersected with
/// it at login, as drivers do).
pub const DRIVER_CAPS: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_DEPRECATE_EOF;

/// Names of the status flags, lowest bit first.
const STATUS_NAMES: [&str; 16] = [
    "IN_TRANS",
    "AUTOCOMMIT",
    "0x4",
    "MORE_RESULTS",
    "NO_GOOD_INDEX",
    "NO_INDEX",
    "CURSOR",
    "LAST_ROW",
    "DB_DROPPED",
    "NO_BACKSLASH_ESCAPES",
    "METADATA_CHANGED",
    "QUERY_WAS_SLOW",
    "PS_OUT_PARAMS",
    "IN_TRANS_READONLY",
    "SESSION_STATE_CHANGED",
    "0x8000",
];

/// Status flags as names, e.g. `AUTOCOMMIT|IN_TRANS`.
pub fn status_names(s: u16) -> String {
    let names: Vec<&str> = (0..16)
        .filter(|b| s & (1 << b) != 0)
        .map(|b| STATUS_NAMES[b])
        .collect();
    if names.is_empty() {
        "-".into()
    } else {
        names.join("|")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OkInfo {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
    pub info: String,
    /// Session-state-tracking entries, rendered `type:data` (empty unless the
    /// connection has CLIENT_SESSION_TRACK and the server sent some).
    pub track: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrInfo {
    pub code: u16,
    pub state: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub schema: String,
    pub table: String,
    pub org_table: String,
    pub name: String,
    pub org_name: String,
    pub charset: u16,
    pub length: u32,
    pub ty: u8,
    pub flags: u16,
    pub decimals: u8,
}

impl Column {
    /// Every field of the definition in one line.
    pub fn render(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|cs={}|len={}|type={}|flags={:#x}|dec={}",
            self.name,
            self.org_name,
            self.table,
            self.org_table,
            self.schema,
            self.charset,
            self.length,
            self.ty,
            self.flags,
            self.decimals
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultSet {
    pub columns: Vec<Column>,
    /// Each row's values rendered (`NULL` for SQL NULL).
    pub rows: Vec<Vec<String>>,
    /// The terminator (OK with 0xFE header, DEPRECATE_EOF) or EOF, as an OK.
    pub end: OkInfo,
}

/// One result of a command: a command may return several (multi-statements,
/// CALL), ending with an OK or an ERR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Ok(OkInfo),
    Err(ErrInfo),
    Rows(ResultSet),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub stmt_id: u32,
    pub params: Vec<Column>,
    pub columns: Vec<Column>,
    pub warnings: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Parts(Vec<Part>),
    Prepared(Prepared),
    /// COM_STMT_PREPARE answered with an ERR.
    PrepareErr(ErrInfo),
    /// A command without a response (COM_STMT_CLOSE).
    Nothing,
    /// Not sent (e.g. EXECUTE of a statement whose PREPARE failed).
    Skipped(String),
    /// The connection failed (I/O error, timeout, protocol surprise).
    Broken(String),
}

/// A value bound to a `COM_STMT_EXECUTE` parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    Null,
    Int(i64),
    Str(String),
    /// Any other type: the MYSQL_TYPE code, the unsigned flag and the value's bytes
    /// exactly as COM_STMT_EXECUTE carries them (length prefix included).
    Raw {
        ty: u8,
        unsigned: bool,
        value: Vec<u8>,
    },
}

#[derive(Debug, Clone)]
pub struct Greeting {
    pub version: String,
    pub thread_id: u32,
    pub caps: u32,
    pub collation: u8,
    pub status: u16,
    pub nonce: Vec<u8>,
    pub plugin: String,
}

#[derive(Debug, Clone)]
pub struct Login {
    pub user: String,
    pub password: String,
    pub db: Option<String>,
    /// Capabilities the client would like; the server's offer is intersected.
    pub caps: u32,
    pub collation: u8,
}

pub struct Wire {
    sock: TcpStream,
    seq: u8,
    /// Effective capabilities (requested ∩ offered).
    pub caps: u32,
    pub greeting: Greeting,
    pub timeout: Duration,
    broken: Option<String>,
    /// Keep the raw payload of every row of the last command in `raw_rows` (for
    /// byte-for-byte comparisons; off by default).
    pub keep_raw: bool,
    pub raw_rows: Vec<Vec<u8>>,
}

fn lenenc(b: &mut &[u8]) -> Option<u64> {
    let (v, n) = match *b.first()? {
        x @ 0..=0xfa => (u64::from(x), 1),
        0xfc => (u64::from(u16::from_le_bytes([*b.get(1)?, *b.get(2)?])), 3),
        0xfd => (
            u64::from(u32::from_le_bytes([*b.get(1)?, *b.get(2)?, *b.get(3)?, 0])),
            4,
        ),
        0xfe => (u64::from_le_bytes(b.get(1..9)?.try_into().ok()?), 9),
        _ => return None,
    };
    *b = b.get(n..)?;
    Some(v)
}

fn lenenc_bytes<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = usize::try_from(lenenc(b)?).ok()?;
    let s = b.get(..n)?;
    *b = &b[n..];
    Some(s)
}

fn lenenc_str(b: &mut &[u8]) -> Option<String> {
    lenenc_bytes(b).map(|s| String::from_utf8_lossy(s).into_owned())
}

fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0xfa => out.push(v as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let s = b.get(..n)?;
    *b = &b[n..];
    Some(s)
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

pub fn parse_err(p: &[u8]) -> Option<ErrInfo> {
    if p.first() != Some(&0xff) {
        return None;
    }
    let code = u16_at(p, 1)?;
    let rest = p.get(3..)?;
    let (state, msg) = if rest.first() == Some(&b'#') && rest.len() >= 6 {
        (String::from_utf8_lossy(&rest[1..6]).into_owned(), &rest[6..])
    } else {
        (String::new(), rest)
    };
    Some(ErrInfo {
        code,
        state,
        message: String::from_utf8_lossy(msg).into_owned(),
    })
}

/// Session-state-tracking entries of an OK packet (`type:data`, data decoded per
/// type: schema and system variables as text, others as hex).
fn parse_track(mut b: &[u8]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let ty = *b.first()?;
        b = &b[1..];
        let data = lenenc_bytes(&mut b)?;
        let mut d = data;
        let rendered = match ty {
            // SESSION_TRACK_SYSTEM_VARIABLES: name, value (lenenc each).
            0 => {
                let name = lenenc_str(&mut d)?;
                let value = lenenc_str(&mut d)?;
                format!("sysvar:{name}={value}")
            }
            1 => format!("schema:{}", lenenc_str(&mut d)?),
            2 => format!("state_change:{}", lenenc_str(&mut d)?),
            3 => format!("gtids:{}", hex(data)),
            4 => format!("trx_characteristics:{}", lenenc_str(&mut d)?),
            5 => format!("trx_state:{}", lenenc_str(&mut d)?),
            other => format!("type{other}:{}", hex(data)),
        };
        out.push(rendered);
    }
    Some(out)
}

/// `b` with its length-encoded-integer prefix, as COM_STMT_EXECUTE carries a string.
pub fn lenenc_value(b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(b.len() + 9);
    put_lenenc(&mut v, b.len() as u64);
    v.extend_from_slice(b);
    v
}

/// A parameter of type `ty` whose bytes are `value` (length prefix included).
pub fn raw(ty: u8, unsigned: bool, value: Vec<u8>) -> Param {
    Param::Raw { ty, unsigned, value }
}

pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// An OK packet (header 0x00, or 0xFE for a DEPRECATE_EOF terminator); also an
/// old-style EOF packet (0xFE, warnings, status) rendered as an OK.
fn parse_ok(p: &[u8], caps: u32) -> Option<OkInfo> {
    if p.first() == Some(&0xfe) && p.len() <= 5 && caps & CLIENT_DEPRECATE_EOF == 0 {
        return Some(OkInfo {
            affected_rows: 0,
            last_insert_id: 0,
            warnings: u16_at(p, 1).unwrap_or(0),
            status: u16_at(p, 3).unwrap_or(0),
            info: String::new(),
            track: vec![],
        });
    }
    let mut b = p.get(1..)?;
    let affected_rows = lenenc(&mut b)?;
    let last_insert_id = lenenc(&mut b)?;
    let status = u16_at(b, 0)?;
    let warnings = u16_at(b, 2)?;
    b = b.get(4..)?;
    let mut info = String::new();
    let mut track = Vec::new();
    if caps & CLIENT_SESSION_TRACK != 0 {
        if !b.is_empty() {
            info = lenenc_str(&mut b)?;
        }
        if status & SERVER_SESSION_STATE_CHANGED != 0 && !b.is_empty() {
            let all = lenenc_bytes(&mut b)?;
            track = parse_track(all)?;
        }
    } else if !b.is_empty() {
        // A length-encoded string whatever the capabilities: MariaDB writes it so
        // (`net_send_ok`), and clients (libmariadb, mysql_common) read it so.
        info = lenenc_str(&mut b)?;
    }
    Some(OkInfo {
        affected_rows,
        last_insert_id,
        status,
        warnings,
        info,
        track,
    })
}

fn parse_column(p: &[u8]) -> Option<Column> {
    let mut b = p;
    let _catalog = lenenc_bytes(&mut b)?;
    let schema = lenenc_str(&mut b)?;
    let table = lenenc_str(&mut b)?;
    let org_table = lenenc_str(&mut b)?;
    let name = lenenc_str(&mut b)?;
    let org_name = lenenc_str(&mut b)?;
    let _fixed_len = lenenc(&mut b)?;
    let f = take(&mut b, 10)?;
    Some(Column {
        schema,
        table,
        org_table,
        name,
        org_name,
        charset: u16::from_le_bytes([f[0], f[1]]),
        length: u32::from_le_bytes([f[2], f[3], f[4], f[5]]),
        ty: f[6],
        flags: u16::from_le_bytes([f[7], f[8]]),
        decimals: f[9],
    })
}

fn text_row(p: &[u8], ncols: usize) -> Option<Vec<String>> {
    let mut b = p;
    let mut row = Vec::with_capacity(ncols);
    for _ in 0..ncols {
        if b.first() == Some(&0xfb) {
            b = &b[1..];
            row.push("NULL".into());
        } else {
            row.push(lenenc_str(&mut b)?);
        }
    }
    b.is_empty().then_some(row)
}

const UNSIGNED_FLAG: u16 = 0x20;

fn binary_row(p: &[u8], cols: &[Column]) -> Option<Vec<String>> {
    let mut b = p.get(1..)?;
    let bitmap = take(&mut b, (cols.len() + 7 + 2) / 8)?;
    let mut row = Vec::with_capacity(cols.len());
    for (i, c) in cols.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            row.push("NULL".into());
            continue;
        }
        let unsigned = c.flags & UNSIGNED_FLAG != 0;
        let v = match c.ty {
            0x01 => {
                let x = take(&mut b, 1)?[0];
                if unsigned {
                    x.to_string()
                } else {
                    (x as i8).to_string()
                }
            }
            0x02 | 0x0d => {
                let x = u16::from_le_bytes(take(&mut b, 2)?.try_into().ok()?);
                if unsigned || c.ty == 0x0d {
                    x.to_string()
                } else {
                    (x as i16).to_string()
                }
            }
            0x03 | 0x09 => {
                let x = u32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?);
                if unsigned {
                    x.to_string()
                } else {
                    (x as i32).to_string()
                }
            }
            0x08 => {
                let x = u64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?);
                if unsigned {
                    x.to_string()
                } else {
                    (x as i64).to_string()
                }
            }
            0x04 => f32::from_le_bytes(take(&mut b, 4)?.try_into().ok()?).to_string(),
            0x05 => f64::from_le_bytes(take(&mut b, 8)?.try_into().ok()?).to_string(),
            0x07 | 0x0a | 0x0b | 0x0c => {
                let n = usize::from(take(&mut b, 1)?[0]);
                format!("temporal:{}", hex(take(&mut b, n)?))
            }
            _ => String::from_utf8_lossy(lenenc_bytes(&mut b)?).into_owned(),
        };
        row.push(v);
    }
    b.is_empty().then_some(row)
}

/// A whole packet (frames of 16 MiB joined) or why there is none.
type Packet = (u8, Vec<u8>);

impl Wire {
    /// Connect and log in. `Err` carries a description (or the server's ERR).
    pub async fn connect(addr: &str, l: &Login, timeout: Duration) -> Result<(Wire, Reply), String> {
        let sock = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| format!("connect {addr}: timeout"))?
            .map_err(|e| format!("connect {addr}: {e}"))?;
        sock.set_nodelay(true).ok();
        let mut w = Wire {
            sock,
            seq: 0,
            caps: 0,
            greeting: Greeting {
                version: String::new(),
                thread_id: 0,
                caps: 0,
                collation: 0,
                status: 0,
                nonce: vec![],
                plugin: String::new(),
            },
            timeout,
            broken: None,
            keep_raw: false,
            raw_rows: Vec::new(),
        };
        let (_, g) = w.read_packet().await?;
        if let Some(e) = parse_err(&g) {
            return Err(format!("greeting is an error: {} {}", e.code, e.message));
        }
        w.greeting = parse_greeting(&g).ok_or("malformed greeting")?;
        let mut caps = l.caps & w.greeting.caps;
        if l.db.is_some() {
            caps |= CLIENT_CONNECT_WITH_DB & w.greeting.caps;
        }
        w.caps = caps;
        let mut resp = Vec::with_capacity(128);
        resp.extend_from_slice(&caps.to_le_bytes());
        resp.extend_from_slice(&(1u32 << 24).to_le_bytes());
        resp.push(l.collation);
        resp.extend_from_slice(&[0u8; 23]);
        resp.extend_from_slice(l.user.as_bytes());
        resp.push(0);
        let auth = native_auth(&w.greeting.nonce, &l.password);
        resp.push(auth.len() as u8);
        resp.extend_from_slice(&auth);
        if let Some(db) = &l.db {
            if caps & CLIENT_CONNECT_WITH_DB != 0 {
                resp.extend_from_slice(db.as_bytes());
                resp.push(0);
            }
        }
        resp.extend_from_slice(b"mysql_native_password\0");
        w.write_packet(&resp).await?;
        loop {
            let (_, p) = w.read_packet().await?;
            match p.first() {
                Some(0x00) => {
                    let ok = parse_ok(&p, w.caps).ok_or("malformed login OK")?;
                    return Ok((w, Reply::Parts(vec![Part::Ok(ok)])));
                }
                Some(0xff) => {
                    let e = parse_err(&p).ok_or("malformed login ERR")?;
                    return Err(format!("login refused: {} {} {}", e.code, e.state, e.message));
                }
                Some(0xfe) => {
                    let body = &p[1..];
                    let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                    let plugin = String::from_utf8_lossy(&body[..end]).into_owned();
                    if plugin != "mysql_native_password" {
                        return Err(format!("auth switch to {plugin}: not supported here"));
                    }
                    let nonce = body.get(end + 1..).unwrap_or(&[]);
                    let nonce = nonce.strip_suffix(&[0]).unwrap_or(nonce);
                    let data = native_auth(nonce, &l.password);
                    w.write_packet(&data).await?;
                }
                other => return Err(format!("unexpected packet during login: {other:?}")),
            }
        }
    }

    async fn read_frame(&mut self) -> Result<Packet, String> {
        let t = self.timeout;
        let sock = &mut self.sock;
        let r = async {
            let mut h = [0u8; 4];
            sock.read_exact(&mut h).await?;
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            let mut p = vec![0u8; len];
            sock.read_exact(&mut p).await?;
            Ok::<_, std::io::Error>((h[3], p))
        };
        match tokio::time::timeout(t, r).await {
            Ok(Ok(f)) => Ok(f),
            Ok(Err(e)) => Err(format!("read: {e}")),
            Err(_) => Err(format!("no packet within {t:?}")),
        }
    }

    async fn read_packet(&mut self) -> Result<Packet, String> {
        let (seq, mut payload) = self.read_frame().await?;
        let mut more = payload.len() == MAX_FRAME;
        let mut last = seq;
        while more {
            let (s, p) = self.read_frame().await?;
            more = p.len() == MAX_FRAME;
            payload.extend_from_slice(&p);
            last = s;
        }
        self.seq = last.wrapping_add(1);
        Ok((seq, payload))
    }

    async fn write_packet(&mut self, payload: &[u8]) -> Result<(), String> {
        let mut out = Vec::with_capacity(payload.len() + 8);
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_FRAME);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if n < MAX_FRAME {
                break;
            }
        }
        let t = self.timeout;
        match tokio::time::timeout(t, self.sock.write_all(&out)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("write: {e}")),
            Err(_) => Err(format!("write blocked for {t:?}")),
        }
    }

    async fn send(&mut self, payload: &[u8]) -> Result<(), String> {
        self.seq = 0;
        self.write_packet(payload).await
    }

    pub fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// Run `f` unless the connection already failed; a failure marks it broken.
    fn settle(&mut self, r: Result<Reply, String>) -> Reply {
        match r {
            Ok(reply) => reply,
            Err(e) => {
                self.broken = Some(e.clone());
                Reply::Broken(e)
            }
        }
    }

    fn check_usable(&self) -> Option<Reply> {
        self.broken
            .as_ref()
            .map(|e| Reply::Broken(format!("connection already broken: {e}")))
    }

    /// The response to COM_QUERY / COM_STMT_EXECUTE: results while
    /// MORE_RESULTS_EXISTS, each an OK, an ERR (which ends it) or a result set.
    async fn results(&mut self, binary: bool) -> Result<Reply, String> {
        let mut parts = Vec::new();
        self.raw_rows.clear();
        loop {
            let (_, p) = self.read_packet().await?;
            let more = match p.first() {
                Some(0x00) => {
                    let ok = parse_ok(&p, self.caps).ok_or("malformed OK")?;
                    let more = ok.status & SERVER_MORE_RESULTS_EXISTS != 0;
                    parts.push(Part::Ok(ok));
                    more
                }
                Some(0xff) => {
                    parts.push(Part::Err(parse_err(&p).ok_or("malformed ERR")?));
                    false
                }
                Some(0xfb) => return Err("LOCAL INFILE request: not supported here".into()),
                _ => {
                    let mut b = &p[..];
                    let n = lenenc(&mut b).ok_or("malformed column count")? as usize;
                    let mut columns = Vec::with_capacity(n);
                    for _ in 0..n {
                        let (_, c) = self.read_packet().await?;
                        columns.push(parse_column(&c).ok_or("malformed column definition")?);
                    }
                    if self.caps & CLIENT_DEPRECATE_EOF == 0 {
                        let (_, eof) = self.read_packet().await?;
                        if eof.first() != Some(&0xfe) {
                            return Err("EOF expected after column definitions".into());
                        }
                    }
                    let mut rows = Vec::new();
                    let end = loop {
                        let (_, r) = self.read_packet().await?;
                        if r.first() == Some(&0xfe) && r.len() < MAX_FRAME {
                            break Some(parse_ok(&r, self.caps).ok_or("malformed terminator")?);
                        }
                        if r.first() == Some(&0xff) {
                            parts.push(Part::Rows(ResultSet {
                                columns: columns.clone(),
                                rows: std::mem::take(&mut rows),
                                end: OkInfo {
                                    affected_rows: 0,
                                    last_insert_id: 0,
                                    status: 0,
                                    warnings: 0,
                                    info: "(ended by an error)".into(),
                                    track: vec![],
                                },
                            }));
                            parts.push(Part::Err(parse_err(&r).ok_or("malformed ERR")?));
                            break None;
                        }
                        if self.keep_raw {
                            self.raw_rows.push(r.clone());
                        }
                        let row = if binary {
                            binary_row(&r, &columns)
                        } else {
                            text_row(&r, columns.len())
                        };
                        rows.push(row.unwrap_or_else(|| vec![format!("<undecodable row {}>", hex(&r))]));
                    };
                    match end {
                        Some(end) => {
                            let more = end.status & SERVER_MORE_RESULTS_EXISTS != 0;
                            parts.push(Part::Rows(ResultSet { columns, rows, end }));
                            more
                        }
                        None => false,
                    }
                }
            };
            if !more {
                return Ok(Reply::Parts(parts));
            }
        }
    }

    pub async fn query(&mut self, sql: &str) -> Reply {
        if let Some(r) = self.check_usable() {
            return r;
        }
        let mut p = Vec::with_capacity(sql.len() + 1);
        p.push(COM_QUERY);
        p.extend_from_slice(sql.as_bytes());
        let r = async {
            self.send(&p).await?;
            self.results(false).await
        }
        .await;
        self.settle(r)
    }

    /// COM_INIT_DB, COM_PING, COM_RESET_CONNECTION, COM_STMT_RESET: one OK or ERR.
    pub async fn simple(&mut self, payload: &[u8]) -> Reply {
        if let Some(r) = self.check_usable() {
            return r;
        }
        let r = async {
            self.send(payload).await?;
            let (_, p) = self.read_packet().await?;
            let part = match p.first() {
                Some(0x00) => Part::Ok(parse_ok(&p, self.caps).ok_or("malformed OK")?),
                Some(0xff) => Part::Err(parse_err(&p).ok_or("malformed ERR")?),
                other => return Err(format!("OK or ERR expected, got {other:?}")),
            };
            Ok(Reply::Parts(vec![part]))
        }
        .await;
        self.settle(r)
    }

    pub async fn prepare(&mut self, sql: &str) -> Reply {
        if let Some(r) = self.check_usable() {
            return r;
        }
        let mut p = Vec::with_capacity(sql.len() + 1);
        p.push(COM_STMT_PREPARE);
        p.extend_from_slice(sql.as_bytes());
        let r = async {
            self.send(&p).await?;
            let (_, p) = self.read_packet().await?;
            if let Some(e) = parse_err(&p) {
                return Ok(Reply::PrepareErr(e));
            }
            if p.first() != Some(&0x00) || p.len() < 9 {
                return Err(format!("malformed prepare OK {}", hex(&p)));
            }
            let stmt_id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
            let ncols = u16_at(&p, 5).unwrap_or(0);
            let nparams = u16_at(&p, 7).unwrap_or(0);
            let warnings = u16_at(&p, 10).unwrap_or(0);
            let mut defs = [Vec::new(), Vec::new()];
            for (k, n) in [nparams, ncols].into_iter().enumerate() {
                for _ in 0..n {
                    let (_, c) = self.read_packet().await?;
                    defs[k].push(parse_column(&c).ok_or("malformed definition")?);
                }
                if n > 0 && self.caps & CLIENT_DEPRECATE_EOF == 0 {
                    self.read_packet().await?;
                }
            }
            let [params, columns] = defs;
            Ok(Reply::Prepared(Prepared {
                stmt_id,
                params,
                columns,
                warnings,
            }))
        }
        .await;
        self.settle(r)
    }

    pub async fn execute(&mut self, stmt_id: u32, params: &[Param]) -> Reply {
        if let Some(r) = self.check_usable() {
            return r;
        }
        let mut p = vec![COM_STMT_EXECUTE];
        p.extend_from_slice(&stmt_id.to_le_bytes());
        p.push(0); // no cursor
        p.extend_from_slice(&1u32.to_le_bytes());
        if !params.is_empty() {
            let mut bitmap = vec![0u8; params.len().div_ceil(8)];
            for (i, v) in params.iter().enumerate() {
                if *v == Param::Null {
                    bitmap[i / 8] |= 1 << (i % 8);
                }
            }
            p.extend_from_slice(&bitmap);
            p.push(1); // types follow
            for v in params {
                let (ty, flag) = match v {
                    Param::Null => (0x06, 0),
                    Param::Int(_) => (0x08, 0),
                    Param::Str(_) => (0xfd, 0),
                    Param::Raw { ty, unsigned, .. } => (*ty, if *unsigned { 0x80 } else { 0 }),
                };
                p.extend_from_slice(&[ty, flag]);
            }
            for v in params {
                match v {
                    Param::Null => {}
                    Param::Int(i) => p.extend_from_slice(&i.to_le_bytes()),
                    Param::Str(s) => {
                        put_lenenc(&mut p, s.len() as u64);
                        p.extend_from_slice(s.as_bytes());
                    }
                    Param::Raw { value, .. } => p.extend_from_slice(value),
                }
            }
        }
        let r = async {
            self.send(&p).await?;
            self.results(true).await
        }
        .await;
        self.settle(r)
    }

    /// COM_STMT_SEND_LONG_DATA (no response): `data` appended to parameter `index`.
    pub async fn send_long_data(&mut self, stmt_id: u32, index: u16, data: &[u8]) -> Reply {
        if let Some(r) = self.check_usable() {
            return r;
        }
        let mut p = vec![0x18];
        p.extend_from_slice(&stmt_id.to_le_bytes());
        p.extend_from_slice(&index.to_le_bytes());
        p.extend_from_slice(data);
        let r = self.send(&p).await.map(|()| Reply::Nothing);
        self.settle(r)
    }

    /// COM_STMT_CLOSE (no response).
    pub async fn close_stmt(&mut self, stmt_id: u32) -> Reply {
        if let Some(r) = self.check_usable() {
            return r;
        }
        let mut p = vec![COM_STMT_CLOSE];
        p.extend_from_slice(&stmt_id.to_le_bytes());
        let r = self.send(&p).await.map(|()| Reply::Nothing);
        self.settle(r)
    }

    /// COM_QUIT, then wait (briefly) for the server to close the socket.
    pub async fn quit(mut self) {
        if self.broken.is_some() {
            return;
        }
        if self.send(&[COM_QUIT]).await.is_ok() {
            let mut b = [0u8; 64];
            let _ = tokio::time::timeout(Duration::from_secs(2), self.sock.read(&mut b)).await;
        }
    }
}

fn native_auth(nonce: &[u8], password: &str) -> Vec<u8> {
    if password.is_empty() {
        return vec![];
    }
    mysql_common::scramble::scramble_native(nonce, password.as_bytes())
        .map(|s| s.to_vec())
        .unwrap_or_default()
}

fn parse_greeting(p: &[u8]) -> Option<Greeting> {
    if *p.first()? != 10 {
        return None;
    }
    let mut i = 1;
    let nul = p.get(i..)?.iter().position(|&b| b == 0)? + i;
    let version = String::from_utf8_lossy(&p[i..nul]).into_owned();
    i = nul + 1;
    let thread_id = u32::from_le_bytes(p.get(i..i + 4)?.try_into().ok()?);
    i += 4;
    let mut nonce = p.get(i..i + 8)?.to_vec();
    i += 8 + 1;
    let caps_lo = u32::from(u16_at(p, i)?);
    i += 2;
    let collation = *p.get(i)?;
    i += 1;
    let status = u16_at(p, i)?;
    i += 2;
    let caps_hi = u32::from(u16_at(p, i)?);
    i += 2;
    let auth_len = usize::from(*p.get(i)?);
    i += 1 + 10;
    let n2 = auth_len.saturating_sub(8).max(13);
    let s2 = p.get(i..(i + n2).min(p.len()))?;
    nonce.extend_from_slice(s2.strip_suffix(&[0]).unwrap_or(s2));
    i += n2;
    let plugin = p
        .get(i..)
        .map(|rest| {
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            String::from_utf8_lossy(&rest[..end]).into_owned()
        })
        .unwrap_or_default();
    nonce.truncate(20);
    Some(Greeting {
        version,
        thread_id,
        caps: caps_lo | (caps_hi << 16),
        collation,
        status,
        nonce,
        plugin,
    })
}

/// The column definitions (rendered one per line, see [`Column::render`]) that differ
/// between two lists, as `#i a / b` lines.
pub fn def_diff(a: &[String], b: &[String]) -> String {
    if a.len() != b.len() {
        return format!("{} columns vs {}: {a:?} / {b:?}", a.len(), b.len());
    }
    a.iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .map(|(i, (x, y))| format!("\n      #{i} {x}\n         {y}"))
        .collect()
}

/// Logs in to `addr` as a driver would (`DRIVER_CAPS`, utf8mb4_general_ci) with raw
/// rows kept, and the given read timeout; panics when the login fails.
pub async fn driver_login(addr: &str, user: &str, password: &str, db: &str, timeout: Duration) -> Wire {
    let login = Login {
        user: user.into(),
        password: password.into(),
        db: Some(db.into()),
        caps: DRIVER_CAPS,
        collation: 45,
    };
    let (mut w, r) = Wire::connect(addr, &login, Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    assert!(
        matches!(&r, Reply::Parts(p) if matches!(p.first(), Some(Part::Ok(_)))),
        "login to {addr}: {r:?}"
    );
    w.keep_raw = true;
    w.timeout = timeout;
    w
}
