//! sluice at the byte level: a hand-written MySQL client over raw TCP (and TLS) sends
//! malformed input, cursors, rarely used commands and 16 MiB packets, and compares
//! sluice's answers packet by packet with the master's own.
//!
//! What "identical" means here: the same sequence of packets (payload and sequence id)
//! for the same commands sent with the same client capabilities, except the statement
//! ids that each server assigns itself.

mod common;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::cluster::{
    shared_cluster, unique_name, Sluice, APP_PASSWORD, APP_USER, HASH_PASSWORD, HASH_USER, SLUICE_PASSWORD,
    SLUICE_USER, TEST_DB,
};
use mysql_common::constants::CapabilityFlags;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::TlsConnector;

// ---------------------------------------------------------------------------------------
// Constants of the protocol
// ---------------------------------------------------------------------------------------

const MAX_FRAME: usize = 0xFF_FFFF;
/// Longest wait for one frame; a sluice that loses track of a response fails the test
/// here instead of hanging it.
const IO_TIMEOUT: Duration = Duration::from_secs(15);

const COM_QUIT: u8 = 0x01;
const COM_INIT_DB: u8 = 0x02;
const COM_QUERY: u8 = 0x03;
const COM_FIELD_LIST: u8 = 0x04;
const COM_STATISTICS: u8 = 0x09;
const COM_PING: u8 = 0x0e;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
const COM_STMT_CLOSE: u8 = 0x19;
const COM_STMT_RESET: u8 = 0x1a;
const COM_SET_OPTION: u8 = 0x1b;
const COM_STMT_FETCH: u8 = 0x1c;

const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;
const SERVER_STATUS_LAST_ROW_SENT: u16 = 0x0080;

const CURSOR_TYPE_READ_ONLY: u8 = 0x01;
const MYSQL_TYPE_LONGLONG: u8 = 0x08;
const MYSQL_TYPE_VAR_STRING: u8 = 0xfd;

/// What every raw client here asks for (DEPRECATE_EOF, CONNECT_WITH_DB and SSL are added
/// per test).
fn base_caps() -> CapabilityFlags {
    CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
}

fn caps_with(deprecate_eof: bool) -> CapabilityFlags {
    if deprecate_eof {
        base_caps() | CapabilityFlags::CLIENT_DEPRECATE_EOF
    } else {
        base_caps()
    }
}

// ---------------------------------------------------------------------------------------
// Fixtures: one TLS-enabled sluice per test process
// ---------------------------------------------------------------------------------------

struct TlsFiles {
    cert: PathBuf,
    key: PathBuf,
    cert_der: Vec<u8>,
}

/// A self-signed certificate for "localhost" (rcgen), generated once and kept under the
/// cargo target tmp dir (written atomically, so concurrent test processes agree).
fn tls_files() -> &'static TlsFiles {
    static F: OnceLock<TlsFiles> = OnceLock::new();
    F.get_or_init(|| {
        let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let dir = base.join("raw_protocol_tls");
        if !dir.join("cert.pem").is_file() || !dir.join("key.pem").is_file() {
            let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
                .expect("generate a self-signed certificate");
            let tmp = base.join(format!(".raw_protocol_tls-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            std::fs::create_dir_all(&tmp).expect("create tls tmp dir");
            std::fs::write(tmp.join("cert.pem"), ck.cert.pem()).expect("write cert");
            std::fs::write(tmp.join("key.pem"), ck.signing_key.serialize_pem()).expect("write key");
            if std::fs::rename(&tmp, &dir).is_err() {
                // Another process won the race: use its pair.
                let _ = std::fs::remove_dir_all(&tmp);
            }
        }
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        let pem = std::fs::read(&cert).expect("read cert.pem");
        let cert_der = pem_to_der(&pem);
        TlsFiles { cert, key, cert_der }
    })
}

fn pem_to_der(pem: &[u8]) -> Vec<u8> {
    use rustls_pki_types::pem::PemObject;
    rustls_pki_types::CertificateDer::from_pem_slice(pem)
        .expect("parse cert pem")
        .to_vec()
}

fn tls_yaml() -> String {
    let f = tls_files();
    format!("tls:\n  cert: {}\n  key: {}\n", f.cert.display(), f.key.display())
}

fn sluice() -> &'static Sluice {
    static S: OnceLock<Sluice> = OnceLock::new();
    S.get_or_init(|| Sluice::start_for(shared_cluster(), &tls_yaml()))
}

fn sluice_addr() -> String {
    format!("127.0.0.1:{}", sluice().port)
}

fn master_addr() -> String {
    shared_cluster().master.addr()
}

fn tls_connector() -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from(
            tls_files().cert_der.clone(),
        ))
        .expect("add test cert as root");
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(cfg))
}

/// Runs `sql` directly on the master (setup), panicking on error.
fn setup(sql: &str) {
    // The CLI's default character set cannot carry emoji.
    shared_cluster()
        .master
        .sql_in(TEST_DB, &format!("SET NAMES utf8mb4; {sql}"));
}

/// The end of sluice's log, for failure messages.
fn log_tail(s: &Sluice) -> String {
    let log = s.log();
    let lines: Vec<&str> = log.lines().collect();
    format!(
        "--- sluice log (last 30 lines) ---\n{}",
        lines[lines.len().saturating_sub(30)..].join("\n")
    )
}

// ---------------------------------------------------------------------------------------
// The raw client
// ---------------------------------------------------------------------------------------

enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<Coalesced>>),
}

/// The TCP transport under TLS. `pending` holds bytes not yet written; the first TLS
/// write (the ClientHello) is appended to it, so an SSL request placed there goes out
/// in the same segment as the ClientHello ("pipelined", as fast clients do).
struct Coalesced {
    inner: TcpStream,
    pending: Vec<u8>,
}

impl Coalesced {
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.pending) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.pending.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Coalesced {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if let Poll::Ready(Err(e)) = me.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Coalesced {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if me.pending.is_empty() {
            return Pin::new(&mut me.inner).poll_write(cx, buf);
        }
        me.pending.extend_from_slice(buf);
        match me.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        match me.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut me.inner).poll_flush(cx),
            other => other,
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        match me.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut me.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One logical packet: the sequence id of its first frame, the joined payload, and how
/// many frames carried it (a payload of n × 0xFFFFFF bytes ends with an empty frame).
#[derive(Clone, PartialEq, Eq)]
struct Packet {
    seq: u8,
    payload: Vec<u8>,
    frames: usize,
}

impl fmt::Debug for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.payload.iter().take(48).map(|b| format!("{b:02x}")).collect();
        let text: String = self
            .payload
            .iter()
            .take(48)
            .map(|&b| if (0x20..0x7f).contains(&b) { b as char } else { '.' })
            .collect();
        write!(
            f,
            "#{} len={} frames={} [{shown}{}] {text:?}",
            self.seq,
            self.payload.len(),
            self.frames,
            if self.payload.len() > 48 { "…" } else { "" }
        )
    }
}

impl Packet {
    fn first(&self) -> Option<u8> {
        self.payload.first().copied()
    }
    fn is_err(&self) -> bool {
        self.first() == Some(0xff)
    }
    fn is_ok(&self) -> bool {
        self.first() == Some(0x00)
    }
    /// EOF, or an OK with the 0xFE header (DEPRECATE_EOF): a result set terminator.
    fn is_terminator(&self) -> bool {
        self.first() == Some(0xfe) && self.payload.len() < MAX_FRAME
    }
    /// (code, SQLSTATE, message) of an ERR packet.
    fn err(&self) -> Option<(u16, String, String)> {
        if !self.is_err() || self.payload.len() < 3 {
            return None;
        }
        let code = u16::from_le_bytes([self.payload[1], self.payload[2]]);
        let rest = &self.payload[3..];
        let (state, msg) = if rest.first() == Some(&b'#') && rest.len() >= 6 {
            (String::from_utf8_lossy(&rest[1..6]).into_owned(), &rest[6..])
        } else {
            (String::new(), rest)
        };
        Some((code, state, String::from_utf8_lossy(msg).into_owned()))
    }
    /// Status flags of an OK or EOF/terminator packet.
    fn status(&self) -> Option<u16> {
        let p = &self.payload;
        match p.first()? {
            0xfe if p.len() <= 5 => Some(u16::from_le_bytes([*p.get(3)?, *p.get(4)?])),
            0x00 | 0xfe => {
                let mut rest = &p[1..];
                lenenc(&mut rest)?;
                lenenc(&mut rest)?;
                Some(u16::from_le_bytes([*rest.first()?, *rest.get(1)?]))
            }
            _ => None,
        }
    }
}

fn lenenc(b: &mut &[u8]) -> Option<u64> {
    let (v, n) = match *b.first()? {
        x @ 0..=0xfa => (x as u64, 1),
        0xfc => (u16::from_le_bytes([*b.get(1)?, *b.get(2)?]) as u64, 3),
        0xfd => (
            u32::from_le_bytes([*b.get(1)?, *b.get(2)?, *b.get(3)?, 0]) as u64,
            4,
        ),
        0xfe => (u64::from_le_bytes(b.get(1..9)?.try_into().ok()?), 9),
        _ => return None,
    };
    *b = &b[n..];
    Some(v)
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

/// What kind of response a command gets (where it ends).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// COM_QUERY / COM_STMT_EXECUTE: OK, ERR, or result sets (repeated while
    /// MORE_RESULTS_EXISTS); an EXECUTE that opens a cursor ends after the metadata.
    Results,
    Prepare,
    /// COM_STMT_FETCH and COM_FIELD_LIST: packets up to a terminator or ERR.
    UntilTerminator,
    Single,
}

/// How the server greeted us.
#[derive(Debug, Clone)]
struct Greeting {
    version: String,
    caps: CapabilityFlags,
    nonce: Vec<u8>,
    plugin: String,
}

fn parse_greeting(p: &[u8]) -> Greeting {
    assert_eq!(
        p.first(),
        Some(&10),
        "protocol version 10 greeting expected: {:?}",
        &p[..p.len().min(32)]
    );
    let mut i = 1;
    let nul = p[i..].iter().position(|&b| b == 0).expect("version NUL") + i;
    let version = String::from_utf8_lossy(&p[i..nul]).into_owned();
    i = nul + 1 + 4; // connection id
    let mut nonce = p[i..i + 8].to_vec();
    i += 8 + 1;
    let caps_lo = u16::from_le_bytes([p[i], p[i + 1]]) as u32;
    i += 2 + 1 + 2;
    let caps_hi = u16::from_le_bytes([p[i], p[i + 1]]) as u32;
    i += 2;
    let auth_len = p[i] as usize;
    i += 1 + 10;
    let n2 = auth_len.saturating_sub(8).max(13);
    let s2 = &p[i..(i + n2).min(p.len())];
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
    Greeting {
        version,
        caps: CapabilityFlags::from_bits_truncate(caps_lo | (caps_hi << 16)),
        nonce,
        plugin,
    }
}

struct Raw {
    s: Stream,
    /// Sequence id of the next packet we send.
    seq: u8,
    caps: CapabilityFlags,
    /// The authentication exchange, for assertions (e.g. "fast auth", "switch to ...").
    auth_trace: Vec<String>,
}

impl Raw {
    async fn connect(addr: &str) -> Raw {
        let tcp = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
            .await
            .unwrap_or_else(|_| panic!("connect {addr}: timeout"))
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        tcp.set_nodelay(true).ok();
        Raw {
            s: Stream::Plain(tcp),
            seq: 0,
            caps: CapabilityFlags::empty(),
            auth_trace: vec![],
        }
    }

    async fn read_frame(&mut self) -> io::Result<(u8, Vec<u8>)> {
        let r = async {
            let mut h = [0u8; 4];
            self.s.read_exact(&mut h).await?;
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            let mut p = vec![0u8; len];
            self.s.read_exact(&mut p).await?;
            Ok((h[3], p))
        };
        match tokio::time::timeout(IO_TIMEOUT, r).await {
            Ok(r) => r,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no packet within the I/O timeout",
            )),
        }
    }

    async fn read_packet(&mut self) -> io::Result<Packet> {
        let (seq, mut payload) = self.read_frame().await?;
        let mut frames = 1;
        let mut more = payload.len() == MAX_FRAME;
        let mut last = seq;
        while more {
            let (s, p) = self.read_frame().await?;
            more = p.len() == MAX_FRAME;
            payload.extend_from_slice(&p);
            frames += 1;
            last = s;
        }
        self.seq = last.wrapping_add(1);
        Ok(Packet { seq, payload, frames })
    }

    async fn packet(&mut self, what: &str) -> Packet {
        self.read_packet().await.unwrap_or_else(|e| panic!("{what}: {e}"))
    }

    /// Frame `payload` (splitting at 16 MiB, with an empty frame after an exact
    /// multiple) using the current sequence id.
    fn frame(&mut self, payload: &[u8]) -> Vec<u8> {
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
        out
    }

    async fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.s.write_all(bytes).await?;
        self.s.flush().await
    }

    async fn write_packet(&mut self, payload: &[u8]) -> io::Result<()> {
        let f = self.frame(payload);
        self.write_raw(&f).await
    }

    /// Send one command (sequence id 0).
    async fn send(&mut self, payload: &[u8]) {
        self.seq = 0;
        self.write_packet(payload).await.expect("send command");
    }

    fn deprecate_eof(&self) -> bool {
        self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF)
    }

    /// Read a complete response of `kind`.
    async fn response(&mut self, kind: Kind) -> Vec<Packet> {
        let deprecate_eof = self.deprecate_eof();
        let mut out = Vec::new();
        macro_rules! next {
            () => {{
                let p = self
                    .packet(&format!("response ({kind:?}) after {out:?}"))
                    .await;
                out.push(p.clone());
                p
            }};
        }
        match kind {
            Kind::Single => {
                next!();
            }
            Kind::UntilTerminator => loop {
                let p = next!();
                if p.is_err() || p.is_terminator() {
                    break;
                }
            },
            Kind::Prepare => {
                let p = next!();
                if p.is_ok() {
                    let cols = u16::from_le_bytes([p.payload[5], p.payload[6]]);
                    let params = u16::from_le_bytes([p.payload[7], p.payload[8]]);
                    for n in [params, cols] {
                        for _ in 0..n {
                            next!();
                        }
                        if n > 0 && !deprecate_eof {
                            let eof = next!();
                            assert!(eof.is_terminator(), "EOF expected after definitions: {out:?}");
                        }
                    }
                }
            }
            Kind::Results => loop {
                let p = next!();
                let status = match p.first() {
                    Some(0x00) => p.status().unwrap_or(0),
                    Some(0xff) => break,
                    Some(0xfb) => panic!("unexpected LOCAL INFILE request"),
                    _ => {
                        let mut b = &p.payload[..];
                        let n = lenenc(&mut b).expect("column count");
                        for _ in 0..n {
                            next!();
                        }
                        let mut status = None;
                        if !deprecate_eof {
                            let eof = next!();
                            assert!(
                                eof.is_terminator(),
                                "EOF expected after column definitions: {out:?}"
                            );
                            let st = eof.status().unwrap_or(0);
                            if st & SERVER_STATUS_CURSOR_EXISTS != 0 {
                                status = Some(st);
                            }
                        }
                        match status {
                            Some(st) => st,
                            None => loop {
                                let r = next!();
                                if r.is_err() {
                                    break 0;
                                }
                                if r.is_terminator() {
                                    break r.status().unwrap_or(0);
                                }
                            },
                        }
                    }
                };
                if out.last().is_some_and(|p| p.is_err()) || status & SERVER_MORE_RESULTS_EXISTS == 0 {
                    break;
                }
            },
        }
        out
    }

    async fn command(&mut self, payload: &[u8], kind: Kind) -> Vec<Packet> {
        self.send(payload).await;
        self.response(kind).await
    }

    async fn query(&mut self, sql: &str) -> Vec<Packet> {
        let mut p = vec![COM_QUERY];
        p.extend_from_slice(sql.as_bytes());
        self.command(&p, Kind::Results).await
    }

    /// The first column of the first row of a text result, as a string.
    async fn query_value(&mut self, sql: &str) -> Option<String> {
        let r = self.query(sql).await;
        if let Some(e) = r.iter().find_map(|p| p.err()) {
            panic!("`{sql}` failed: {e:?}");
        }
        let mut b = &r[0].payload[..];
        let ncols = lenenc(&mut b).expect("column count") as usize;
        let row_at = 1 + ncols + usize::from(!self.deprecate_eof());
        let row = r.get(row_at).filter(|p| !p.is_terminator()).expect("a row");
        if row.first() == Some(0xfb) {
            return None;
        }
        let mut b = &row.payload[..];
        let n = lenenc(&mut b).expect("value length") as usize;
        Some(String::from_utf8_lossy(&b[..n]).into_owned())
    }

    /// Read until the server closes the connection; returns the packets seen.
    async fn until_closed(&mut self, limit: Duration) -> Result<Vec<Packet>, String> {
        let deadline = Instant::now() + limit;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut h = [0u8; 4];
            match tokio::time::timeout(left, self.s.read(&mut h[..1])).await {
                Err(_) => return Err(format!("still open after {limit:?}; packets: {seen:?}")),
                Ok(Ok(0)) | Ok(Err(_)) => return Ok(seen),
                Ok(Ok(_)) => {
                    let rest = tokio::time::timeout(left, self.s.read_exact(&mut h[1..])).await;
                    if !matches!(rest, Ok(Ok(_))) {
                        return Ok(seen);
                    }
                    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
                    let mut p = vec![0u8; len];
                    match tokio::time::timeout(left, self.s.read_exact(&mut p)).await {
                        Ok(Ok(_)) => seen.push(Packet {
                            seq: h[3],
                            payload: p,
                            frames: 1,
                        }),
                        _ => return Ok(seen),
                    }
                }
            }
        }
    }
}

#[derive(Clone)]
struct Login<'a> {
    user: &'a str,
    pass: &'a str,
    db: Option<&'a str>,
    caps: CapabilityFlags,
    plugin: &'a str,
    tls: bool,
    /// With TLS: send the SSL request in the same TCP segment as the ClientHello
    /// instead of a moment before it.
    pipelined: bool,
}

impl<'a> Login<'a> {
    fn app(deprecate_eof: bool) -> Login<'static> {
        Login {
            user: APP_USER,
            pass: APP_PASSWORD,
            db: Some(TEST_DB),
            caps: caps_with(deprecate_eof),
            plugin: "mysql_native_password",
            tls: false,
            pipelined: false,
        }
    }
    fn backend(deprecate_eof: bool) -> Login<'static> {
        Login {
            user: SLUICE_USER,
            pass: SLUICE_PASSWORD,
            ..Login::app(deprecate_eof)
        }
    }
}

fn auth_data(plugin: &str, nonce: &[u8], pass: &str) -> Vec<u8> {
    if pass.is_empty() {
        return vec![];
    }
    match plugin {
        "mysql_native_password" => mysql_common::scramble::scramble_native(nonce, pass.as_bytes())
            .expect("scramble")
            .to_vec(),
        "caching_sha2_password" => mysql_common::scramble::scramble_sha256(nonce, pass.as_bytes())
            .expect("scramble")
            .to_vec(),
        other => panic!("raw client: no support for auth plugin {other}"),
    }
}

/// Log in; `Err` carries the server's ERR packet.
async fn login(addr: &str, l: &Login<'_>) -> Result<Raw, Packet> {
    let mut c = Raw::connect(addr).await;
    let g = c.packet("greeting").await;
    let greeting = parse_greeting(&g.payload);
    let mut caps = l.caps;
    if l.db.is_some() {
        caps |= CapabilityFlags::CLIENT_CONNECT_WITH_DB;
    }
    if l.tls {
        caps |= CapabilityFlags::CLIENT_SSL;
    }
    assert!(
        greeting.caps.contains(caps),
        "{addr} does not offer the capabilities {:?} (offers {:?})",
        caps - greeting.caps,
        greeting.caps
    );
    c.caps = caps;
    let mut head = Vec::with_capacity(32);
    head.extend_from_slice(&caps.bits().to_le_bytes());
    head.extend_from_slice(&(1u32 << 30).to_le_bytes());
    head.push(45); // utf8mb4_general_ci
    head.extend_from_slice(&[0u8; 23]);
    if l.tls {
        let ssl_request = c.frame(&head);
        let mut pending = Vec::new();
        if l.pipelined {
            pending = ssl_request;
        } else {
            c.write_raw(&ssl_request).await.expect("send SSL request");
            // Let sluice read the request on its own before the ClientHello comes.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let Raw {
            s,
            seq,
            caps,
            mut auth_trace,
        } = c;
        let Stream::Plain(tcp) = s else {
            unreachable!("TLS requested twice")
        };
        let transport = Coalesced { inner: tcp, pending };
        let name = rustls_pki_types::ServerName::try_from("localhost").expect("server name");
        let tls = tokio::time::timeout(IO_TIMEOUT, tls_connector().connect(name, transport))
            .await
            .expect("TLS handshake timed out")
            .unwrap_or_else(|e| panic!("TLS handshake with {addr}: {e}\n{}", log_tail(sluice())));
        auth_trace.push("tls".into());
        c = Raw {
            s: Stream::Tls(Box::new(tls)),
            seq,
            caps,
            auth_trace,
        };
    }
    let mut resp = head;
    resp.extend_from_slice(l.user.as_bytes());
    resp.push(0);
    let data = auth_data(l.plugin, &greeting.nonce, l.pass);
    resp.push(data.len() as u8);
    resp.extend_from_slice(&data);
    if let Some(db) = l.db {
        resp.extend_from_slice(db.as_bytes());
        resp.push(0);
    }
    resp.extend_from_slice(l.plugin.as_bytes());
    resp.push(0);
    c.write_packet(&resp).await.expect("send handshake response");
    c.auth_trace.push(format!("response {}", l.plugin));
    loop {
        let p = c.packet("authentication").await;
        match p.first() {
            Some(0x00) => {
                c.auth_trace.push("ok".into());
                return Ok(c);
            }
            Some(0xff) => return Err(p),
            Some(0xfe) => {
                let body = &p.payload[1..];
                let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                let plugin = String::from_utf8_lossy(&body[..end]).into_owned();
                let nonce = body.get(end + 1..).unwrap_or(&[]);
                let nonce = nonce.strip_suffix(&[0]).unwrap_or(nonce);
                c.auth_trace.push(format!("switch {plugin}"));
                let data = auth_data(&plugin, nonce, l.pass);
                c.write_packet(&data).await.expect("send auth switch response");
            }
            Some(0x01) => match p.payload.get(1) {
                Some(0x03) => c.auth_trace.push("fast auth".into()),
                Some(0x04) => {
                    c.auth_trace.push("full auth".into());
                    assert!(
                        l.tls,
                        "server asked for caching_sha2 full authentication without TLS"
                    );
                    let mut pw = l.pass.as_bytes().to_vec();
                    pw.push(0);
                    c.write_packet(&pw).await.expect("send cleartext password");
                }
                other => panic!("unexpected auth more-data {other:?}"),
            },
            other => panic!("unexpected packet during authentication: {other:?} {p:?}"),
        }
    }
}

async fn must_login(addr: &str, l: &Login<'_>) -> Raw {
    match login(addr, l).await {
        Ok(c) => c,
        Err(p) => panic!("login to {addr} as {} failed: {:?}", l.user, p.err()),
    }
}

async fn proxied(deprecate_eof: bool) -> Raw {
    must_login(&sluice_addr(), &Login::app(deprecate_eof)).await
}

async fn direct(deprecate_eof: bool) -> Raw {
    must_login(&master_addr(), &Login::backend(deprecate_eof)).await
}

/// Statement id of a COM_STMT_PREPARE response.
fn stmt_id(r: &[Packet]) -> u32 {
    let p = &r[0];
    assert!(p.is_ok(), "prepare failed: {:?}", p.err());
    u32::from_le_bytes(p.payload[1..5].try_into().expect("4 bytes"))
}

/// Replace numbers in parentheses in ERR messages ("The statement (7) has no open
/// cursor") by `(ID)`: each server numbers its statements itself.
fn mask_ids_in_errors(mut r: Vec<Packet>) -> Vec<Packet> {
    for p in r.iter_mut() {
        if p.is_err() && p.payload.len() > 9 {
            let msg = String::from_utf8_lossy(&p.payload[9..]).into_owned();
            let mut out = String::new();
            let mut rest = msg.as_str();
            while let Some(i) = rest.find('(') {
                out.push_str(&rest[..i]);
                let after = &rest[i + 1..];
                let digits = after.chars().take_while(char::is_ascii_digit).count();
                if digits > 0 && after[digits..].starts_with(')') {
                    out.push_str("(ID)");
                    rest = &after[digits + 1..];
                } else {
                    out.push('(');
                    rest = after;
                }
            }
            out.push_str(rest);
            p.payload.truncate(9);
            p.payload.extend_from_slice(out.as_bytes());
        }
    }
    r
}

/// The response with the statement id of a prepare OK zeroed.
fn mask_stmt_id(mut r: Vec<Packet>) -> Vec<Packet> {
    if let Some(p) = r.first_mut() {
        if p.is_ok() && p.payload.len() >= 12 {
            p.payload[1..5].fill(0);
        }
    }
    r
}

fn execute_payload(id: u32, flags: u8, params: &[(u8, Option<Vec<u8>>)]) -> Vec<u8> {
    let mut p = vec![COM_STMT_EXECUTE];
    p.extend_from_slice(&id.to_le_bytes());
    p.push(flags);
    p.extend_from_slice(&1u32.to_le_bytes());
    if !params.is_empty() {
        let mut bitmap = vec![0u8; params.len().div_ceil(8)];
        for (i, (_, v)) in params.iter().enumerate() {
            if v.is_none() {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        p.extend_from_slice(&bitmap);
        p.push(1); // new params bound
        for (ty, _) in params {
            p.push(*ty);
            p.push(0);
        }
        for (_, v) in params {
            if let Some(v) = v {
                p.extend_from_slice(v);
            }
        }
    }
    p
}

fn fetch_payload(id: u32, rows: u32) -> Vec<u8> {
    let mut p = vec![COM_STMT_FETCH];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(&rows.to_le_bytes());
    p
}

fn with_id(cmd: u8, id: u32, rest: &[u8]) -> Vec<u8> {
    let mut p = vec![cmd];
    p.extend_from_slice(&id.to_le_bytes());
    p.extend_from_slice(rest);
    p
}

fn str_param(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    put_lenenc(&mut v, s.len() as u64);
    v.extend_from_slice(s.as_bytes());
    v
}

#[track_caller]
fn assert_same(what: &str, direct: &[Packet], proxied: &[Packet]) {
    if direct != proxied {
        let n = direct.len().max(proxied.len());
        let mut diff = String::new();
        for i in 0..n {
            let (a, b) = (direct.get(i), proxied.get(i));
            let mark = if a == b { "  " } else { "≠ " };
            diff.push_str(&format!("{mark}{i}: direct {a:?}\n{mark}{i}: sluice {b:?}\n"));
        }
        panic!("{what}: sluice's packets differ from the master's\n{diff}");
    }
}

/// sluice is alive and serves a brand-new session.
async fn assert_healthy(context: &str) {
    assert!(
        sluice().is_running(),
        "{context}: the sluice process died\n{}",
        sluice().log()
    );
    let mut c =
        match tokio::time::timeout(Duration::from_secs(10), login(&sluice_addr(), &Login::app(true))).await {
            Ok(Ok(c)) => c,
            Ok(Err(p)) => panic!("{context}: new session refused: {:?}", p.err()),
            Err(_) => panic!("{context}: new session: no answer"),
        };
    assert_eq!(
        c.query_value("SELECT 6 * 7").await.as_deref(),
        Some("42"),
        "{context}"
    );
    c.send(&[COM_QUIT]).await;
}

// ---------------------------------------------------------------------------------------
// Malformed input
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn garbage_and_truncated_handshakes_leave_sluice_serving() {
    let addr = sluice_addr();
    // A session that lives through all of it.
    let mut bystander = proxied(true).await;
    bystander.query("SET @mine = 'intact'").await;

    // HTTP instead of a handshake response.
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    c.write_raw(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .ok();
    c.until_closed(Duration::from_secs(5))
        .await
        .expect("sluice must close an HTTP client quickly");
    assert_healthy("after an HTTP request").await;

    // A well-formed frame full of random bytes.
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    let junk: Vec<u8> = (0..200u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    c.write_packet(&junk).await.ok();
    let seen = c
        .until_closed(Duration::from_secs(5))
        .await
        .expect("closed after junk");
    if let Some(e) = seen.iter().find_map(|p| p.err()) {
        assert!(
            [1043, 1045, 1158].contains(&e.0),
            "junk handshake answered with {e:?}"
        );
    }
    assert_healthy("after a random handshake response").await;

    // A header that announces a 16 MiB handshake response, then nothing.
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    c.write_raw(&[0xff, 0xff, 0xff, 0x01]).await.ok();
    drop(c);
    assert_healthy("after a 16 MiB header then close").await;
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    c.write_raw(&[0xff, 0xff, 0xff, 0x01, b'x', b'y']).await.ok();
    c.until_closed(Duration::from_secs(5))
        .await
        .expect("a 16 MiB handshake response is over sluice's limit: it must not wait for it");
    assert_healthy("after a 16 MiB header").await;

    // Truncated: 10 bytes then close; and close before reading the greeting.
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    c.write_raw(&[0x40, 0x00, 0x00, 0x01, 0x85, 0xa6, 0xff, 0x01, 0x00, 0x00])
        .await
        .ok();
    drop(c);
    drop(Raw::connect(&addr).await);
    // A short handshake response (fewer than 32 bytes).
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    c.write_packet(&[0x85, 0xa6, 0x0f, 0x00]).await.ok();
    let seen = c
        .until_closed(Duration::from_secs(5))
        .await
        .expect("closed after a short response");
    assert!(seen.iter().all(|p| p.is_err()), "{seen:?}");
    // SSL request to a server... that does offer TLS, then plain bytes instead of a
    // TLS ClientHello.
    let mut c = Raw::connect(&addr).await;
    c.packet("greeting").await;
    let mut head = Vec::new();
    head.extend_from_slice(&(base_caps() | CapabilityFlags::CLIENT_SSL).bits().to_le_bytes());
    head.extend_from_slice(&(1u32 << 24).to_le_bytes());
    head.push(45);
    head.extend_from_slice(&[0u8; 23]);
    c.write_packet(&head).await.ok();
    c.write_raw(b"this is not a TLS ClientHello\r\n\r\n").await.ok();
    c.until_closed(Duration::from_secs(5))
        .await
        .expect("closed after a bad TLS hello");
    assert_healthy("after truncated handshakes").await;

    // Many at once.
    let mut tasks = Vec::new();
    for i in 0..50u32 {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Raw::connect(&addr).await;
            if i % 2 == 0 {
                let _ = c.read_packet().await;
            }
            let junk: Vec<u8> = (0..(i * 37 % 300)).map(|j| (j * 7 + i) as u8).collect();
            let _ = c.write_raw(&junk).await;
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_healthy("after 50 garbage connections").await;

    assert_eq!(
        bystander.query_value("SELECT @mine").await.as_deref(),
        Some("intact")
    );
}

#[tokio::test]
async fn silent_clients_time_out_during_handshake() {
    let addr = sluice_addr();
    let t0 = Instant::now();
    // One says nothing, one reads the greeting and says nothing, one sends half a
    // packet and waits.
    let mut mute = Raw::connect(&addr).await;
    let mut listener = Raw::connect(&addr).await;
    listener.packet("greeting").await;
    let mut half = Raw::connect(&addr).await;
    half.packet("greeting").await;
    half.write_raw(&[0x50, 0x00, 0x00, 0x01, 0x85, 0xa6])
        .await
        .expect("write");

    // Meanwhile everyone else is served.
    for _ in 0..3 {
        assert_healthy("while silent clients wait").await;
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "other sessions were slowed down: {:?}",
        t0.elapsed()
    );

    for (name, c) in [
        ("mute", &mut mute),
        ("listener", &mut listener),
        ("half", &mut half),
    ] {
        // limits.handshake_timeout, default 5 s.
        c.until_closed(Duration::from_secs(12))
            .await
            .unwrap_or_else(|e| panic!("{name}: sluice must end a stalled handshake after ~5 s: {e}"));
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_secs(4),
            "{name}: closed after only {waited:?}"
        );
        assert!(
            waited < Duration::from_secs(10),
            "{name}: closed after {waited:?}"
        );
    }
    assert_healthy("after handshake timeouts").await;
}

#[tokio::test]
async fn garbage_after_login_unknown_commands_and_bad_arguments() {
    let mut p = proxied(true).await;
    let mut d = direct(true).await;
    p.query("SET @mine = 'still here'").await;

    // Unknown command bytes: ERR 1047 / 08S01, and the session goes on.
    for cmd in [0x42u8, 0x00, 0x05, 0x0f, 0x1d, 0x7f, 0xfe, 0xff] {
        let r = p.command(&[cmd, 1, 2, 3], Kind::Single).await;
        let e = r[0]
            .err()
            .unwrap_or_else(|| panic!("command 0x{cmd:02x}: ERR expected, got {r:?}"));
        assert_eq!((e.0, e.1.as_str()), (1047, "08S01"), "command 0x{cmd:02x}: {e:?}");
        assert_eq!(r[0].seq, 1);
        assert_eq!(
            p.query_value("SELECT @mine").await.as_deref(),
            Some("still here"),
            "after 0x{cmd:02x}"
        );
    }
    // MariaDB itself answers 0x42 the same way (code and SQLSTATE).
    let r = d.command(&[0x42, 1, 2, 3], Kind::Single).await;
    let e = r[0].err().expect("MariaDB: ERR for 0x42");
    assert_eq!((e.0, e.1.as_str()), (1047, "08S01"));

    // Commands the server refuses, with bad arguments: the server's own ERR, relayed
    // exactly, and the session goes on.
    let bad: Vec<(&str, Vec<u8>, Kind)> = vec![
        (
            "binary junk as SQL",
            [&[COM_QUERY][..], &[0xff, 0xfe, 0x00, 0x01, 0x80, 0x27, 0x5c]].concat(),
            Kind::Results,
        ),
        (
            "execute of an unknown statement",
            execute_payload(0x7fff_fff0, 0, &[]),
            Kind::Results,
        ),
        (
            "fetch of an unknown statement",
            fetch_payload(0x7fff_fff0, 5),
            Kind::UntilTerminator,
        ),
        (
            "reset of an unknown statement",
            with_id(COM_STMT_RESET, 0x7fff_fff0, &[]),
            Kind::Single,
        ),
        (
            "field list of a missing table",
            b"\x04no_such_table_fl\x00".to_vec(),
            Kind::UntilTerminator,
        ),
        (
            "init db of a missing database",
            b"\x02no_such_db_raw".to_vec(),
            Kind::Single,
        ),
        (
            "init db with invalid UTF-8",
            vec![COM_INIT_DB, 0xff, 0xfe, 0xfd],
            Kind::Single,
        ),
        ("truncated execute", vec![COM_STMT_EXECUTE, 1], Kind::Results),
        ("empty query", vec![COM_QUERY], Kind::Results),
    ];
    let mut mismatches = Vec::new();
    for (what, payload, kind) in &bad {
        let a = d.command(payload, *kind).await;
        let b = p.command(payload, *kind).await;
        if a != b {
            mismatches.push(format!("{what}:\n  MariaDB {a:?}\n  sluice  {b:?}"));
        }
        assert_eq!(
            p.query_value("SELECT @mine").await.as_deref(),
            Some("still here"),
            "after {what}"
        );
    }
    // Commands without an answer, with ids nobody prepared: nothing comes back.
    p.send(&with_id(COM_STMT_CLOSE, 0x7fff_fff0, &[])).await;
    p.send(&with_id(COM_STMT_SEND_LONG_DATA, 0x7fff_fff0, &[0, 0, b'x']))
        .await;
    assert_eq!(p.query_value("SELECT @mine").await.as_deref(), Some("still here"));

    // A header announcing a 16 MiB packet, a few bytes, then close.
    let mut p3 = proxied(true).await;
    p3.write_raw(&[0xff, 0xff, 0xff, 0x00, COM_QUERY, b'S', b'E'])
        .await
        .expect("write");
    drop(p3);
    assert_healthy("after garbage commands").await;
    assert_eq!(p.query_value("SELECT @mine").await.as_deref(), Some("still here"));
    assert!(
        mismatches.is_empty(),
        "sluice answers differently from MariaDB:\n{}",
        mismatches.join("\n")
    );
}

/// An empty packet where a command is expected: MariaDB answers ERR 1047 (08S01,
/// "Unknown command") and the session goes on.
#[tokio::test]
async fn empty_command_packet_like_mariadb() {
    let mut answers = Vec::new();
    for (name, mut c) in [("MariaDB", direct(true).await), ("sluice", proxied(true).await)] {
        c.query("SET @v = 'same session'").await;
        c.send(&[]).await;
        let r = c.response(Kind::Single).await;
        let e = r[0]
            .err()
            .unwrap_or_else(|| panic!("{name}: ERR expected after an empty packet: {r:?}"));
        c.send(&[&[COM_QUERY][..], b"SELECT @v"].concat()).await;
        match c.read_packet().await {
            Ok(_) => {
                let rest = c.response(Kind::UntilTerminator).await;
                assert!(
                    rest.iter().any(|p| p.payload.windows(12).any(|w| w == b"same session")),
                    "{name}: {rest:?}"
                );
            }
            Err(err) => panic!(
                "{name} closed the session after an empty packet (answered {e:?}; next read: {err}); MariaDB answers ERR 1047 and keeps the session"
            ),
        }
        answers.push((e.0, e.1));
    }
    assert_eq!(
        answers[0], answers[1],
        "code and SQLSTATE for an empty packet (MariaDB, sluice)"
    );
}

// ---------------------------------------------------------------------------------------
// Cursors
// ---------------------------------------------------------------------------------------

async fn cursor_session(c: &mut Raw, t: &str) -> Vec<(String, Vec<Packet>)> {
    let mut log: Vec<(String, Vec<Packet>)> = Vec::new();
    let prep = |sql: &str| {
        let mut p = vec![COM_STMT_PREPARE];
        p.extend_from_slice(sql.as_bytes());
        p
    };
    let r = c
        .command(
            &prep(&format!("SELECT id, v, d FROM {t} ORDER BY id")),
            Kind::Prepare,
        )
        .await;
    let id = stmt_id(&r);
    log.push(("prepare".into(), mask_stmt_id(r)));

    // Execute with a read-only cursor: metadata only, then fetch in batches of 2.
    let r = c
        .command(&execute_payload(id, CURSOR_TYPE_READ_ONLY, &[]), Kind::Results)
        .await;
    let st = r.last().and_then(|p| p.status()).unwrap_or(0);
    assert!(
        st & SERVER_STATUS_CURSOR_EXISTS != 0 || c.deprecate_eof(),
        "no cursor opened: {r:?}"
    );
    log.push(("execute cursor".into(), r));
    for i in 0..10 {
        let r = c.command(&fetch_payload(id, 2), Kind::UntilTerminator).await;
        let done = r
            .last()
            .is_some_and(|p| p.is_err() || p.status().unwrap_or(0) & SERVER_STATUS_LAST_ROW_SENT != 0);
        log.push((format!("fetch {i}"), r));
        if done {
            break;
        }
    }
    // Fetch after the end: an error that names the statement (by the id the client
    // knows).
    let r = c.command(&fetch_payload(id, 2), Kind::UntilTerminator).await;
    let msg = r[0].err().map(|e| e.2).unwrap_or_default();
    if !msg.contains(&format!("({id})")) {
        log.push((
            format!("NOTE: error message {msg:?} does not name the client's statement id {id}"),
            vec![],
        ));
    }
    log.push(("fetch after the end".into(), mask_ids_in_errors(r)));

    // Reset closes the cursor; execute again, fetch part, and execute once more with
    // the cursor still open.
    let r = c.command(&with_id(COM_STMT_RESET, id, &[]), Kind::Single).await;
    log.push(("reset".into(), r));
    let r = c
        .command(&execute_payload(id, CURSOR_TYPE_READ_ONLY, &[]), Kind::Results)
        .await;
    log.push(("execute again".into(), r));
    let r = c.command(&fetch_payload(id, 3), Kind::UntilTerminator).await;
    log.push(("fetch 3".into(), r));
    let r = c
        .command(&execute_payload(id, CURSOR_TYPE_READ_ONLY, &[]), Kind::Results)
        .await;
    log.push(("execute while a cursor is open".into(), r));
    let r = c.command(&fetch_payload(id, 100), Kind::UntilTerminator).await;
    log.push(("fetch 100".into(), r));

    // A second statement with a parameter; two cursors open at once, interleaved.
    let r = c
        .command(
            &prep(&format!("SELECT id, v FROM {t} WHERE id > ? ORDER BY id DESC")),
            Kind::Prepare,
        )
        .await;
    let id2 = stmt_id(&r);
    log.push(("prepare 2".into(), mask_stmt_id(r)));
    let r = c
        .command(&execute_payload(id, CURSOR_TYPE_READ_ONLY, &[]), Kind::Results)
        .await;
    log.push(("execute 1".into(), r));
    let r = c
        .command(
            &execute_payload(
                id2,
                CURSOR_TYPE_READ_ONLY,
                &[(MYSQL_TYPE_LONGLONG, Some(2i64.to_le_bytes().to_vec()))],
            ),
            Kind::Results,
        )
        .await;
    log.push(("execute 2".into(), r));
    for i in 0..3 {
        let r = c.command(&fetch_payload(id2, 2), Kind::UntilTerminator).await;
        log.push((format!("fetch 2/{i}"), r));
        let r = c.command(&fetch_payload(id, 2), Kind::UntilTerminator).await;
        log.push((format!("fetch 1/{i}"), r));
    }
    // Without a cursor the same statement returns all rows at once.
    let r = c
        .command(
            &execute_payload(
                id2,
                0,
                &[(MYSQL_TYPE_LONGLONG, Some(0i64.to_le_bytes().to_vec()))],
            ),
            Kind::Results,
        )
        .await;
    log.push(("execute 2 without cursor".into(), r));
    // Close both; a fetch on a closed statement is an error.
    c.send(&with_id(COM_STMT_CLOSE, id, &[])).await;
    c.send(&with_id(COM_STMT_CLOSE, id2, &[])).await;
    let r = c.command(&fetch_payload(id, 1), Kind::UntilTerminator).await;
    // The message names the statement id: keep code and SQLSTATE only.
    let e = r[0].err().expect("fetch on a closed statement must fail");
    log.push((format!("fetch closed -> {} {}", e.0, e.1), vec![]));
    let r = c.query("SELECT 'after cursors'").await;
    log.push(("query".into(), r));
    log
}

#[tokio::test]
async fn cursor_fetch_matches_direct_with_and_without_deprecate_eof() {
    let t = unique_name("cursor");
    setup(&format!(
        "CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(20), d DATETIME(3));
         INSERT INTO {t} VALUES (1, 'one', '2020-01-01 00:00:01.5'), (2, NULL, NULL), (3, 'three', '2020-03-03'),
           (4, '😀', '2020-04-04 04:04:04'), (5, '', '1999-12-31 23:59:59.999'), (6, 'six', NULL), (7, 'seven', '2000-01-01')"
    ));
    let mut sluice_notes = Vec::new();
    for deprecate_eof in [false, true] {
        let mut d = direct(deprecate_eof).await;
        let mut p = proxied(deprecate_eof).await;
        let a = cursor_session(&mut d, &t).await;
        let b = cursor_session(&mut p, &t).await;
        let notes = |log: &[(String, Vec<Packet>)]| {
            log.iter()
                .filter(|s| s.0.starts_with("NOTE"))
                .map(|s| s.0.clone())
                .collect::<Vec<_>>()
        };
        let (notes_a, notes_b) = (notes(&a), notes(&b));
        let a: Vec<_> = a.into_iter().filter(|s| !s.0.starts_with("NOTE")).collect();
        let b: Vec<_> = b.into_iter().filter(|s| !s.0.starts_with("NOTE")).collect();
        assert_eq!(
            a.len(),
            b.len(),
            "DEPRECATE_EOF={deprecate_eof}: different number of steps"
        );
        for ((step, x), (_, y)) in a.iter().zip(&b) {
            assert_same(&format!("DEPRECATE_EOF={deprecate_eof}, {step}"), x, y);
        }
        assert_eq!(
            a.iter().map(|s| &s.0).collect::<Vec<_>>(),
            b.iter().map(|s| &s.0).collect::<Vec<_>>()
        );
        assert!(notes_a.is_empty(), "MariaDB: {notes_a:?}");
        sluice_notes.extend(
            notes_b
                .into_iter()
                .map(|n| format!("DEPRECATE_EOF={deprecate_eof}: {n}")),
        );
        // Sanity: the cursor really delivered rows 2 at a time.
        let fetch0 = &b.iter().find(|s| s.0 == "fetch 0").expect("fetch 0").1;
        assert_eq!(fetch0.len(), 3, "2 rows + terminator: {fetch0:?}");
    }
    setup(&format!("DROP TABLE {t}"));
    // Checked last: a cosmetic difference must not hide the protocol checks above.
    assert!(sluice_notes.is_empty(), "sluice: {sluice_notes:?}");
}

// ---------------------------------------------------------------------------------------
// A client that goes away in the middle of a large result
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn client_disconnects_mid_result() {
    // Its own sluice: no other test's sessions may touch the pool meanwhile.
    let s = Sluice::start_for(shared_cluster(), "");
    let addr = format!("127.0.0.1:{}", s.port);
    let marker = unique_name("midresult_marker");
    let mut c = must_login(&addr, &Login::app(true)).await;
    // ~50 MB: 50,000 rows of 1,000 bytes.
    let sql = format!("SELECT /* {marker} */ seq, REPEAT('x', 1000) FROM seq_1_to_50000");
    c.send(&[&[COM_QUERY][..], sql.as_bytes()].concat()).await;
    let mut got = 0usize;
    while got < 8192 {
        let (_, p) = c.read_frame().await.expect("the result starts");
        got += p.len() + 4;
    }
    let m = &shared_cluster().master;
    let probe = format!(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE CONCAT('%', '{}', '%') AND COMMAND = 'Query'",
        marker.replace("_marker", "_mar', 'ker")
    );
    // Sanity: while the client does not read, the query is visible on the master.
    assert_eq!(m.sql(&probe), "1", "the probe must see the running query");
    drop(c);

    // sluice stays up and serves others.
    assert!(s.is_running());
    let mut other = must_login(&addr, &Login::app(true)).await;
    assert_eq!(
        other.query_value("SELECT 'other'").await.as_deref(),
        Some("other")
    );
    drop(other);

    // The master stops running that query (sluice closed or killed its backend
    // connection) instead of leaving it blocked on a full socket.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = m.sql(&probe);
        if n == "0" {
            break;
        }
        if Instant::now() > deadline {
            let pl =
                m.sql("SELECT ID, COMMAND, TIME, STATE, LEFT(INFO, 80) FROM information_schema.PROCESSLIST");
            panic!(
                "10 s after the client left, the master still runs its query (sluice did not close or kill the backend connection):\n{pl}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut other = must_login(&addr, &Login::app(true)).await;
    assert_eq!(
        other.query_value("SELECT 'still fine'").await.as_deref(),
        Some("still fine")
    );
}

// ---------------------------------------------------------------------------------------
// COM_STATISTICS, COM_FIELD_LIST, COM_SET_OPTION, COM_INIT_DB, COM_STMT_RESET
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn statistics_field_list_set_option() {
    let t = unique_name("fieldlist");
    setup(&format!(
        "CREATE TABLE {t} (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(30) NOT NULL DEFAULT 'x', price DECIMAL(10,2), note TEXT, ts TIMESTAMP NULL)"
    ));
    for deprecate_eof in [false, true] {
        let mut p = proxied(deprecate_eof).await;
        let mut d = direct(deprecate_eof).await;

        // COM_STATISTICS: one bare string.
        let r = p.command(&[COM_STATISTICS], Kind::Single).await;
        let text = String::from_utf8_lossy(&r[0].payload).into_owned();
        assert!(
            text.starts_with("Uptime: ") && text.contains("Threads: "),
            "{text:?}"
        );
        assert_eq!(
            p.query_value("SELECT 'after statistics'").await.as_deref(),
            Some("after statistics")
        );

        // COM_FIELD_LIST: column definitions then a terminator.
        for wildcard in ["", "n%"] {
            let mut cmd = vec![COM_FIELD_LIST];
            cmd.extend_from_slice(t.as_bytes());
            cmd.push(0);
            cmd.extend_from_slice(wildcard.as_bytes());
            let a = d.command(&cmd, Kind::UntilTerminator).await;
            let b = p.command(&cmd, Kind::UntilTerminator).await;
            assert_same(
                &format!("COM_FIELD_LIST DEPRECATE_EOF={deprecate_eof} wildcard={wildcard:?}"),
                &a,
                &b,
            );
            assert_eq!(b.len(), if wildcard.is_empty() { 6 } else { 3 }, "{b:?}");
        }
        assert_eq!(
            p.query_value("SELECT 'after field list'").await.as_deref(),
            Some("after field list")
        );

        // COM_SET_OPTION: multi-statements off, then on again.
        let multi = "SELECT 1; SELECT 2";
        let a = d.query(multi).await;
        let b = p.query(multi).await;
        assert_same("multi-statement before COM_SET_OPTION", &a, &b);
        p.query("SET @before_set_option = 'kept'").await;
        let a = d.command(&[COM_SET_OPTION, 1, 0], Kind::Single).await;
        let b = p.command(&[COM_SET_OPTION, 1, 0], Kind::Single).await;
        assert_same("COM_SET_OPTION off", &a, &b);

        let a = d.query(multi).await;
        let b = p.query(multi).await;
        assert_same("multi-statement with multi-statements off", &a, &b);
        assert_eq!(b[0].err().map(|e| e.0), Some(1064), "{b:?}");
        // The session is the same session afterwards.
        assert_eq!(
            p.query_value("SELECT @before_set_option").await.as_deref(),
            Some("kept"),
            "COM_SET_OPTION lost the session's state (user variable)"
        );
        let a = d.command(&[COM_SET_OPTION, 0, 0], Kind::Single).await;
        let b = p.command(&[COM_SET_OPTION, 0, 0], Kind::Single).await;
        assert_same("COM_SET_OPTION on", &a, &b);
        let a = d.query(multi).await;
        let b = p.query(multi).await;
        assert_same("multi-statement with multi-statements on again", &a, &b);
        assert!(b.iter().all(|p| !p.is_err()), "{b:?}");
        // An invalid option.
        let a = d.command(&[COM_SET_OPTION, 9, 0], Kind::Single).await;
        let b = p.command(&[COM_SET_OPTION, 9, 0], Kind::Single).await;
        assert_same("COM_SET_OPTION 9", &a, &b);

        // COM_PING answered like the server does.
        let a = d.command(&[COM_PING], Kind::Single).await;
        let b = p.command(&[COM_PING], Kind::Single).await;
        assert_same("COM_PING", &a, &b);
    }
    setup(&format!("DROP TABLE {t}"));
}

#[tokio::test]
async fn init_db_stmt_reset_and_long_data() {
    let db = unique_name("initdb");
    setup(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.here (x INT); INSERT INTO {db}.here VALUES (9)"
    ));
    let mut p = proxied(true).await;
    let mut d = direct(true).await;

    // COM_INIT_DB
    let mut cmd = vec![COM_INIT_DB];
    cmd.extend_from_slice(db.as_bytes());
    let a = d.command(&cmd, Kind::Single).await;
    let b = p.command(&cmd, Kind::Single).await;
    assert_same("COM_INIT_DB", &a, &b);
    assert_eq!(p.query_value("SELECT DATABASE()").await, Some(db.clone()));
    assert_eq!(p.query_value("SELECT x FROM here").await.as_deref(), Some("9"));
    let bad = b"\x02no_such_database_initdb".to_vec();
    let a = d.command(&bad, Kind::Single).await;
    let b = p.command(&bad, Kind::Single).await;
    assert_same("COM_INIT_DB of a missing database", &a, &b);
    assert_eq!(b[0].err().map(|e| (e.0, e.1)), Some((1049, "42000".to_string())));
    assert_eq!(
        p.query_value("SELECT DATABASE()").await,
        Some(db.clone()),
        "failed COM_INIT_DB changed the database"
    );

    // COM_STMT_SEND_LONG_DATA, COM_STMT_RESET.
    let mut steps = Vec::new();
    for c in [&mut d, &mut p] {
        let mut log = Vec::new();
        let r = c
            .command(b"\x16SELECT CONCAT('[', ?, ']'), ? + 1", Kind::Prepare)
            .await;
        let id = stmt_id(&r);
        log.push(mask_stmt_id(r));
        // Long data for parameter 0 in two pieces, then execute with it.
        c.send(&with_id(COM_STMT_SEND_LONG_DATA, id, &[0, 0, b'a', b'b']))
            .await;
        c.send(&with_id(COM_STMT_SEND_LONG_DATA, id, &[0, 0, b'c'])).await;
        let params = [
            (MYSQL_TYPE_VAR_STRING, Some(vec![])),
            (MYSQL_TYPE_LONGLONG, Some(41i64.to_le_bytes().to_vec())),
        ];
        // Parameter 0 comes from long data: no value for it in the execute packet.
        let exec = execute_payload(id, 0, &params);
        log.push(c.command(&exec, Kind::Results).await);
        // Long data again, then COM_STMT_RESET discards it.
        c.send(&with_id(COM_STMT_SEND_LONG_DATA, id, &[0, 0, b'z', b'z']))
            .await;
        log.push(c.command(&with_id(COM_STMT_RESET, id, &[]), Kind::Single).await);
        let exec = execute_payload(
            id,
            0,
            &[
                (MYSQL_TYPE_VAR_STRING, Some(str_param("fresh"))),
                params[1].clone(),
            ],
        );
        log.push(c.command(&exec, Kind::Results).await);
        c.send(&with_id(COM_STMT_CLOSE, id, &[])).await;
        log.push(c.query("SELECT 'done'").await);
        steps.push(log);
    }
    let (a, b) = (&steps[0], &steps[1]);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_same(&format!("long data / reset step {i}"), x, y);
    }
    let abc = &b[1];
    assert!(
        abc.iter().any(|p| p.payload.windows(5).any(|w| w == b"[abc]")),
        "long data was not used: {abc:?}"
    );
    assert!(
        b[3].iter().any(|p| p.payload.windows(7).any(|w| w == b"[fresh]")),
        "{:?}",
        b[3]
    );
    setup(&format!("DROP DATABASE {db}"));
}

// ---------------------------------------------------------------------------------------
// 16 MiB packets
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn packets_of_16mib_and_more_in_both_directions() {
    let mut p = proxied(true).await;
    let mut d = direct(true).await;

    // A COM_QUERY payload of exactly 0xFFFFFF bytes: one full frame plus an empty one.
    let head = "SELECT LENGTH('";
    let tail = "') AS n";
    let fill = MAX_FRAME - 1 - head.len() - tail.len();
    let sql = format!("{head}{}{tail}", "q".repeat(fill));
    let mut cmd = vec![COM_QUERY];
    cmd.extend_from_slice(sql.as_bytes());
    assert_eq!(cmd.len(), MAX_FRAME);
    let a = d.command(&cmd, Kind::Results).await;
    let b = p.command(&cmd, Kind::Results).await;
    assert_same("COM_QUERY of exactly 0xFFFFFF bytes", &a, &b);
    assert_eq!(p.query_value("SELECT 'next'").await.as_deref(), Some("next"));

    // Check the row value of that query.
    let mut b2 = &b[2].payload[..];
    let n = lenenc(&mut b2).expect("len") as usize;
    assert_eq!(&b2[..n], fill.to_string().as_bytes());

    // A COM_QUERY of 0xFFFFFF + 1000 bytes (two non-empty frames).
    let sql = format!("{head}{}{tail}", "r".repeat(fill + 1000));
    let mut cmd = vec![COM_QUERY];
    cmd.extend_from_slice(sql.as_bytes());
    let a = d.command(&cmd, Kind::Results).await;
    let b = p.command(&cmd, Kind::Results).await;
    assert_same("COM_QUERY of 16 MiB + 1000 bytes", &a, &b);

    // Server → client: a row of exactly 0xFFFFFF payload bytes (4-byte length prefix +
    // 16777211 bytes), then one of 20 MB.
    for (sql, frames) in [
        ("SELECT REPEAT('a', 16777211)", 2),
        ("SELECT REPEAT('b', 20000000)", 2),
    ] {
        let a = d.query(sql).await;
        let b = p.query(sql).await;
        assert_same(sql, &a, &b);
        let row = &b[2];
        assert_eq!(row.frames, frames, "{sql}: {row:?}");
    }
    assert_eq!(
        b_len(&p.query("SELECT REPEAT('a', 16777211)").await[2]),
        MAX_FRAME
    );
    // Binary protocol with a 16 MiB parameter sent as a plain (not long data) value.
    let r = p.command(b"\x16SELECT LENGTH(?), MD5(?)", Kind::Prepare).await;
    let pid = stmt_id(&r);
    let r = d.command(b"\x16SELECT LENGTH(?), MD5(?)", Kind::Prepare).await;
    let did = stmt_id(&r);
    let big = "z".repeat(9 << 20);
    let params = [
        (MYSQL_TYPE_VAR_STRING, Some(str_param(&big))),
        (MYSQL_TYPE_VAR_STRING, Some(str_param(&big))),
    ];
    let a = d.command(&execute_payload(did, 0, &params), Kind::Results).await;
    let b = p.command(&execute_payload(pid, 0, &params), Kind::Results).await;
    assert_same("COM_STMT_EXECUTE of 18 MiB", &a, &b);
    assert_eq!(
        p.query_value("SELECT 'after big packets'").await.as_deref(),
        Some("after big packets")
    );
}

fn b_len(p: &Packet) -> usize {
    p.payload.len()
}

// ---------------------------------------------------------------------------------------
// TLS and caching_sha2_password
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn tls_raw_handshake_login_and_query() {
    let addr = sluice_addr();
    // The greeting: the master's version string, TLS offered, native password default.
    let mut c = Raw::connect(&addr).await;
    let g = parse_greeting(&c.packet("greeting").await.payload);
    let mut m = Raw::connect(&master_addr()).await;
    let mg = parse_greeting(&m.packet("greeting").await.payload);
    assert_eq!(
        g.version, mg.version,
        "sluice must advertise the master's version"
    );
    assert!(g.caps.contains(CapabilityFlags::CLIENT_SSL), "{:?}", g.caps);
    assert_eq!(g.plugin, "mysql_native_password");
    assert_eq!(g.nonce.len(), 20);
    drop((c, m));
    for deprecate_eof in [false, true] {
        let l = Login {
            tls: true,
            ..Login::app(deprecate_eof)
        };
        let mut c = must_login(&addr, &l).await;
        assert_eq!(c.auth_trace.first().map(String::as_str), Some("tls"));
        assert_eq!(
            c.query_value("SELECT 'over tls'").await.as_deref(),
            Some("over tls")
        );
        // Something bigger than one TLS record both ways.
        let v = c
            .query_value(&format!("SELECT LENGTH('{}')", "t".repeat(300_000)))
            .await;
        assert_eq!(v.as_deref(), Some("300000"));
        let r = c.query("SELECT REPEAT('u', 3000000)").await;
        let row = if deprecate_eof { &r[2] } else { &r[3] };
        assert_eq!(row.payload.len(), 3_000_000 + 4);
        c.send(&[COM_QUIT]).await;
    }
    // Wrong password over TLS: the usual 1045.
    let l = Login {
        tls: true,
        pass: "nope",
        ..Login::app(true)
    };
    let e = login(&addr, &l).await.err().expect("wrong password must fail");
    let e = e.err().expect("ERR");
    assert_eq!(e.0, 1045);
    assert_eq!(
        e.2,
        format!("Access denied for user '{APP_USER}'@'127.0.0.1' (using password: YES)")
    );
    // The hash user over TLS with mysql_native_password.
    let l = Login {
        tls: true,
        user: HASH_USER,
        pass: HASH_PASSWORD,
        ..Login::app(true)
    };
    let mut c = must_login(&addr, &l).await;
    assert_eq!(c.query_value("SELECT 2").await.as_deref(), Some("2"));
}

/// Clients write the SSL request and, without waiting for an answer (there is none),
/// the TLS ClientHello: both may arrive in one read. sluice must hand the bytes it
/// already buffered to the TLS layer.
#[tokio::test]
async fn tls_ssl_request_pipelined_with_client_hello() {
    let addr = sluice_addr();
    for i in 0..5 {
        let l = Login {
            tls: true,
            pipelined: true,
            ..Login::app(true)
        };
        let mut c = must_login(&addr, &l).await;
        assert_eq!(
            c.query_value("SELECT 'pipelined tls'").await.as_deref(),
            Some("pipelined tls"),
            "attempt {i}"
        );
    }
}

#[tokio::test]
async fn caching_sha2_password_raw_fast_switch_and_full() {
    let addr = sluice_addr();
    let sha2 = |user: &'static str, pass: &'static str, tls: bool| Login {
        user,
        pass,
        tls,
        plugin: "caching_sha2_password",
        ..Login::app(true)
    };
    // Cleartext password configured: fast path, no TLS needed.
    let mut c = must_login(&addr, &sha2(APP_USER, APP_PASSWORD, false)).await;
    assert_eq!(
        c.auth_trace,
        vec!["response caching_sha2_password", "fast auth", "ok"]
    );
    assert_eq!(c.query_value("SELECT 'sha2'").await.as_deref(), Some("sha2"));
    // Wrong password: 1045.
    let e = login(&addr, &sha2(APP_USER, "bad", false))
        .await
        .err()
        .and_then(|p| p.err())
        .expect("must fail");
    assert_eq!(e.0, 1045, "{e:?}");
    // Only a native hash configured, no TLS: switched to mysql_native_password.
    let mut c = must_login(&addr, &sha2(HASH_USER, HASH_PASSWORD, false)).await;
    assert_eq!(
        c.auth_trace,
        vec![
            "response caching_sha2_password",
            "switch mysql_native_password",
            "ok"
        ]
    );
    assert_eq!(
        c.query_value("SELECT 'switched'").await.as_deref(),
        Some("switched")
    );
    let e = login(&addr, &sha2(HASH_USER, "bad", false))
        .await
        .err()
        .and_then(|p| p.err())
        .expect("must fail");
    assert_eq!(e.0, 1045, "{e:?}");
    // Only a native hash configured, over TLS: full authentication (cleartext in TLS).
    let mut c = must_login(&addr, &sha2(HASH_USER, HASH_PASSWORD, true)).await;
    assert_eq!(
        c.auth_trace,
        vec!["tls", "response caching_sha2_password", "full auth", "ok"]
    );
    assert_eq!(c.query_value("SELECT 'full'").await.as_deref(), Some("full"));
    let e = login(&addr, &sha2(HASH_USER, "bad", true))
        .await
        .err()
        .and_then(|p| p.err())
        .expect("must fail");
    assert_eq!(e.0, 1045, "{e:?}");
    // Cleartext password over TLS: still the fast path.
    let mut c = must_login(&addr, &sha2(APP_USER, APP_PASSWORD, true)).await;
    assert_eq!(
        c.auth_trace,
        vec!["tls", "response caching_sha2_password", "fast auth", "ok"]
    );
    assert_eq!(c.query_value("SELECT 1").await.as_deref(), Some("1"));
}

/// The `mariadb` command-line client (no CLIENT_DEPRECATE_EOF) through sluice.
fn cli(port: u16, user: &str, pass: &str, extra: &[&str], sql: &str) -> Result<String, String> {
    let out = Command::new("mariadb")
        .arg("--no-defaults")
        .args([
            "--protocol=tcp",
            "-h127.0.0.1",
            &format!("-P{port}"),
            &format!("-u{user}"),
            &format!("-p{pass}"),
        ])
        .arg("--connect-timeout=10")
        .args(extra)
        .args(["-e", sql])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run the mariadb client (apt-get install mariadb-client): {e}"));
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn mariadb_cli_tls_and_caching_sha2() {
    let s = sluice();
    let m = &shared_cluster().master;
    let port = s.port;

    // TLS: the client's own status shows the cipher of its connection to sluice.
    let out = cli(
        port,
        APP_USER,
        APP_PASSWORD,
        &["--ssl", "--skip-ssl-verify-server-cert"],
        "status",
    )
    .unwrap_or_else(|e| panic!("mariadb --ssl through sluice: {e}"));
    assert!(
        out.contains("Cipher in use is"),
        "no TLS cipher in the status output:\n{out}"
    );
    // And with the CA given and verification on (the certificate is for localhost).
    let ca = tls_files().cert.display().to_string();
    let out = cli(
        port,
        APP_USER,
        APP_PASSWORD,
        &[
            &format!("--ssl-ca={ca}"),
            "--ssl-verify-server-cert",
            "--host=localhost",
        ],
        "SELECT 'verified'",
    );
    match out {
        Ok(o) => assert!(o.contains("verified"), "{o}"),
        // localhost may resolve to ::1 where sluice does not listen; that is not a TLS
        // failure.
        Err(e) if e.contains("Can't connect") => eprintln!("skipped verified-TLS check: {e}"),
        Err(e) => panic!("mariadb --ssl-verify-server-cert through sluice: {e}"),
    }
    // No TLS.
    let out = cli(port, APP_USER, APP_PASSWORD, &["--skip-ssl"], "status").expect("plain login");
    assert!(!out.contains("Cipher in use is"), "{out}");

    // caching_sha2_password: fast path for a cleartext-configured user without TLS,
    // a switch to native for the hash-configured user without TLS, full auth with TLS.
    // (The same client against MariaDB itself, whose greeting also names
    // mysql_native_password, works: the server switches it.)
    cli(
        m.port,
        SLUICE_USER,
        SLUICE_PASSWORD,
        &["--skip-ssl", "--default-auth=caching_sha2_password"],
        "SELECT 1",
    )
    .expect("mariadb --default-auth=caching_sha2_password directly against MariaDB");
    let mut failures = Vec::new();
    for (user, pass, extra) in [
        (APP_USER, APP_PASSWORD, vec!["--skip-ssl"]),
        (HASH_USER, HASH_PASSWORD, vec!["--skip-ssl"]),
        (
            HASH_USER,
            HASH_PASSWORD,
            vec!["--ssl", "--skip-ssl-verify-server-cert"],
        ),
        (
            APP_USER,
            APP_PASSWORD,
            vec!["--ssl", "--skip-ssl-verify-server-cert"],
        ),
    ] {
        let mut args = vec!["--default-auth=caching_sha2_password"];
        args.extend(extra.iter().copied());
        match cli(port, user, pass, &args, "SELECT CONCAT('sha2 ', 'ok')") {
            Ok(out) if out.contains("sha2 ok") => {}
            other => failures.push(format!(
                "--default-auth=caching_sha2_password as {user} {extra:?}: {other:?}"
            )),
        }
        match cli(port, user, "wrong", &args, "SELECT 1") {
            Err(e) if e.contains("1045") && e.contains("Access denied") => {}
            other => failures.push(format!("wrong password as {user} {extra:?}: {other:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "mariadb CLI with caching_sha2_password through sluice:\n{}",
        failures.join("\n")
    );

    // The CLI's output (classic EOF protocol) equals its output against the master.
    let t = unique_name("cli");
    setup(&format!(
        "CREATE TABLE {t} (id INT PRIMARY KEY, v VARCHAR(20), n DECIMAL(5,2), d DATE);
         INSERT INTO {t} VALUES (1, 'a😀', 1.50, '2020-01-01'), (2, NULL, NULL, NULL), (3, 'tab\\there', -0.01, '1999-12-31')"
    ));
    let sql = format!(
        "SELECT * FROM {TEST_DB}.{t} ORDER BY id; SELECT 1 AS one, NULL AS n; SHOW COLUMNS FROM {TEST_DB}.{t}; \
         SELECT COUNT(*) FROM {TEST_DB}.{t}; DO 1; SELECT @@version_comment IS NOT NULL"
    );
    for mode in [
        vec!["--skip-ssl", "--batch"],
        vec!["--skip-ssl", "--table"],
        vec!["--skip-ssl", "-vvv", "--table"],
    ] {
        let a = cli(m.port, SLUICE_USER, SLUICE_PASSWORD, &mode, &sql).expect("direct");
        let b = cli(port, APP_USER, APP_PASSWORD, &mode, &sql).expect("through sluice");
        // -vvv prints timings; drop them.
        let strip = |s: &str| {
            s.lines()
                .map(|l| match l.find(" (") {
                    Some(i) if l.contains(" sec)") => l[..i].to_string(),
                    _ => l.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            strip(&a),
            strip(&b),
            "mariadb CLI {mode:?}: output through sluice differs"
        );
    }
    // An error, through the CLI.
    let a = cli(
        m.port,
        SLUICE_USER,
        SLUICE_PASSWORD,
        &["--skip-ssl"],
        &format!("SELECT * FROM {TEST_DB}.{t}_nope"),
    )
    .expect_err("direct error");
    let b = cli(
        port,
        APP_USER,
        APP_PASSWORD,
        &["--skip-ssl"],
        &format!("SELECT * FROM {TEST_DB}.{t}_nope"),
    )
    .expect_err("sluice error");
    assert_eq!(a, b);
    setup(&format!("DROP TABLE {t}"));
}

// ---------------------------------------------------------------------------------------
// Prepared statements on a sharded table, byte for byte
// ---------------------------------------------------------------------------------------

/// The parts of a result that must be byte-identical between sluice on the sharded table
/// and the master on the reference table: the column count, each column definition's
/// fixed fields (character set, length, type, flags, decimals; names differ by table),
/// and every row and terminator packet (binary rows here; terminator status flags
/// without the index-use bits).
fn comparable(r: &[Packet], deprecate_eof: bool) -> Vec<Vec<u8>> {
    let Some(first) = r.first() else { return vec![] };
    if first.is_ok() || first.is_err() {
        return r.iter().map(|p| p.payload.clone()).collect();
    }
    let mut b = &first.payload[..];
    let n = lenenc(&mut b).expect("column count") as usize;
    let mut out = vec![first.payload.clone()];
    for def in &r[1..=n] {
        out.push(def.payload[def.payload.len() - 12..].to_vec());
    }
    let rows_from = 1 + n + usize::from(!deprecate_eof);
    out.extend(r[rows_from..].iter().map(|p| {
        let mut b = p.payload.clone();
        // The terminator's SERVER_QUERY_(NO_GOOD_)INDEX_USED bits tell how the server ran
        // its statement (sluice's are per shard); everything else must match.
        if p.is_terminator() && b.len() >= 5 {
            b[3] &= !0x30;
        }
        b
    }));
    out
}

#[tokio::test]
async fn sharded_prepared_statements_byte_for_byte() {
    let db = unique_name("rawshard");
    let s = Sluice::start_for(
        shared_cluster(),
        &format!("log:\n  level: warn\nsharding:\n  tables: [\"{db}.pr.tid.4\"]\n"),
    );
    let master = &shared_cluster().master;
    master.sql(&format!("CREATE DATABASE {db}"));
    let schema = |t: &str| {
        format!(
            "CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, subject VARCHAR(20) NOT NULL, \
             ts DATETIME(3) NULL, dur TIME NULL, day DATE NULL, amount DECIMAL(8,2) NULL, ratio DOUBLE NULL, \
             big BIGINT UNSIGNED NULL, tiny TINYINT NULL) DEFAULT CHARSET=utf8mb4"
        )
    };
    let values = (1..=40)
        .map(|i| {
            format!(
                "({i}, {}, 'subject {}', '2024-0{}-1{} 1{}:0{}:00.{:03}', '{}{}:3{}:00', '2020-01-{:02}', {}.5, {}, {}, {})",
                i % 7,
                i % 3,
                1 + i % 9,
                i % 10,
                i % 10,
                i % 6,
                i * 7 % 1000,
                if i % 4 == 0 { "-" } else { "" },
                i * 11 % 840,
                i % 10,
                1 + i % 28,
                i * 13 % 997,
                i as f64 / 8.0,
                u64::MAX - i,
                i as i64 - 20
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let cols = "(id, tid, subject, ts, dur, day, amount, ratio, big, tiny)";
    master.sql_in(
        &db,
        &format!("{}; INSERT INTO ref {cols} VALUES {values}", schema("ref")),
    );
    let addr = format!("127.0.0.1:{}", s.port);
    for deprecate_eof in [true, false] {
        let mut p = must_login(
            &addr,
            &Login {
                db: Some(&db),
                ..Login::app(deprecate_eof)
            },
        )
        .await;
        let mut d = must_login(
            &master_addr(),
            &Login {
                db: Some(&db),
                ..Login::backend(deprecate_eof)
            },
        )
        .await;
        if deprecate_eof {
            let r = p.query(&schema("pr")).await;
            assert!(r[0].is_ok(), "CREATE TABLE pr: {r:?}");
            let r = p.query(&format!("INSERT INTO pr {cols} VALUES {values}")).await;
            assert!(r[0].is_ok(), "INSERT: {r:?}");
        }
        let long = |n: i64| n.to_le_bytes().to_vec();
        let sql = |t: &str| {
            format!("SELECT id, tid, subject, ts, dur, day, amount, ratio, big, tiny FROM {t} WHERE tid IN (?, ?) OR id = ? ORDER BY ts DESC, id")
        };
        let mut ids = Vec::new();
        for (c, t) in [(&mut d, "ref"), (&mut p, "pr")] {
            let mut cmd = vec![COM_STMT_PREPARE];
            cmd.extend_from_slice(sql(t).as_bytes());
            let r = c.command(&cmd, Kind::Prepare).await;
            ids.push(stmt_id(&r));
        }
        let mut answers: Vec<Vec<Vec<Vec<u8>>>> = vec![vec![], vec![]];
        for (k, c) in [&mut d, &mut p].into_iter().enumerate() {
            let id = ids[k];
            for params in [
                vec![
                    (MYSQL_TYPE_LONGLONG, Some(long(1))),
                    (MYSQL_TYPE_LONGLONG, Some(long(2))),
                    (MYSQL_TYPE_LONGLONG, Some(long(40))),
                ],
                vec![
                    (MYSQL_TYPE_LONGLONG, Some(long(5))),
                    (MYSQL_TYPE_LONGLONG, None),
                    (MYSQL_TYPE_VAR_STRING, Some(str_param("7"))),
                ],
                vec![
                    (MYSQL_TYPE_LONGLONG, Some(long(100))),
                    (MYSQL_TYPE_LONGLONG, Some(long(101))),
                    (MYSQL_TYPE_LONGLONG, Some(long(0))),
                ],
            ] {
                let r = c.command(&execute_payload(id, 0, &params), Kind::Results).await;
                answers[k].push(comparable(&r, deprecate_eof));
            }
            // Without the types again: the ones bound before apply.
            let mut again = execute_payload(
                id,
                0,
                &[
                    (MYSQL_TYPE_LONGLONG, Some(long(3))),
                    (MYSQL_TYPE_LONGLONG, Some(long(4))),
                    (MYSQL_TYPE_LONGLONG, Some(long(9))),
                ],
            );
            again.drain(12..18);
            again[11] = 0;
            let r = c.command(&again, Kind::Results).await;
            answers[k].push(comparable(&r, deprecate_eof));
            // FETCH without a cursor, RESET, then an EXECUTE after CLOSE.
            let r = c.command(&fetch_payload(id, 10), Kind::UntilTerminator).await;
            answers[k].push(mask_ids_in_errors(r).iter().map(|p| p.payload.clone()).collect());
            let r = c.command(&with_id(COM_STMT_RESET, id, &[]), Kind::Single).await;
            answers[k].push(r.iter().map(|p| p.payload.clone()).collect());
            c.send(&with_id(COM_STMT_CLOSE, id, &[])).await;
            let r = c.command(&execute_payload(id, 0, &[]), Kind::Results).await;
            answers[k].push(mask_ids_in_errors(r).iter().map(|p| p.payload.clone()).collect());
        }
        for (i, (a, b)) in answers[0].iter().zip(&answers[1]).enumerate() {
            assert_eq!(
                b.len(),
                a.len(),
                "step {i} (deprecate_eof {deprecate_eof}): packet count"
            );
            for (j, (x, y)) in a.iter().zip(b).enumerate() {
                assert_eq!(
                    y, x,
                    "step {i} packet {j} (deprecate_eof {deprecate_eof}): sluice (left) differs from the master"
                );
            }
        }
        assert!(
            answers[1][0].len() > 10,
            "too few rows compared: {:?}",
            answers[1][0].len()
        );

        // Long data for a string parameter, then the same with COM_STMT_RESET in between.
        let mut got = Vec::new();
        for (c, t) in [(&mut d, "ref"), (&mut p, "pr")] {
            let mut cmd = vec![COM_STMT_PREPARE];
            cmd.extend_from_slice(
                format!("SELECT id, subject FROM {t} WHERE subject = ? AND tid = ? ORDER BY id").as_bytes(),
            );
            let id = stmt_id(&c.command(&cmd, Kind::Prepare).await);
            c.send(&with_id(COM_STMT_SEND_LONG_DATA, id, &[0, 0, b's', b'u', b'b']))
                .await;
            c.send(&with_id(COM_STMT_SEND_LONG_DATA, id, b"\x00\x00ject 2"))
                .await;
            let params = [
                (MYSQL_TYPE_VAR_STRING, Some(vec![])),
                (MYSQL_TYPE_LONGLONG, Some(long(2))),
            ];
            let r = c.command(&execute_payload(id, 0, &params), Kind::Results).await;
            let mut log = vec![comparable(&r, deprecate_eof)];
            c.send(&with_id(COM_STMT_SEND_LONG_DATA, id, b"\x00\x00zz")).await;
            c.command(&with_id(COM_STMT_RESET, id, &[]), Kind::Single).await;
            let params = [
                (MYSQL_TYPE_VAR_STRING, Some(str_param("subject 2"))),
                (MYSQL_TYPE_LONGLONG, Some(long(5))),
            ];
            let r = c.command(&execute_payload(id, 0, &params), Kind::Results).await;
            log.push(comparable(&r, deprecate_eof));
            got.push(log);
        }
        assert_eq!(got[1], got[0], "long data (deprecate_eof {deprecate_eof})");

        // A cursor on a sharded SELECT is refused, and the session goes on.
        let mut cmd = vec![COM_STMT_PREPARE];
        cmd.extend_from_slice(b"SELECT id FROM pr WHERE tid = ?");
        let id = stmt_id(&p.command(&cmd, Kind::Prepare).await);
        let r = p
            .command(
                &execute_payload(id, CURSOR_TYPE_READ_ONLY, &[(MYSQL_TYPE_LONGLONG, Some(long(1)))]),
                Kind::Results,
            )
            .await;
        assert_eq!(r[0].err().map(|e| e.0), Some(1235), "{r:?}");
        assert_eq!(
            p.query_value("SELECT COUNT(*) FROM pr").await.as_deref(),
            Some("40")
        );
    }
    master.sql(&format!("DROP DATABASE {db}"));
}
