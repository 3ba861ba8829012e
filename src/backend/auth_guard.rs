//! The connections sluice makes through mysql_async (freshness probes,
//! `sluice triggers`) must follow the rule of its own backend connections
//! (`conn.rs`): the password itself is sent only over TLS whose certificate
//! was verified. mysql_async cannot be told so. Asked for caching_sha2 full
//! authentication it sends the password in clear over any TLS, verified or
//! not, and over plaintext encrypts it with whatever RSA key the server
//! sends: either way a man in the middle gets it.
//!
//! So unless the backend's TLS is `verify_ca`/`verify_identity`, mysql_async
//! does not dial the backend: it connects to this guard, a relay on a Unix
//! socket in a directory only sluice's user can enter. Per connection the
//! guard dials the backend itself, starts TLS there as `tls.mode` says
//! (sluice's own connector, as `BackendConn` does), and relays the
//! authentication packet by packet, ending the connection with an ERR
//! packet when the server asks for the password in clear
//! (`mysql_clear_password`, `dialog`, caching_sha2 full authentication).
//! After the login it copies bytes both ways, untouched.
//!
//! With a verified mode mysql_async connects directly with its own TLS,
//! configured from the same settings (`tls::mysql_async_opts`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use crate::config::{self, BackendTls, BackendTlsMode};
use crate::protocol::transport::Transport;
use crate::protocol::{PacketStream, ProtocolError};

use super::tls::{self, TlsSettings};

/// Authentication packets are small (a greeting, a handshake response, a
/// plugin switch); a peer sending more than this is not followed.
const AUTH_MAX_PACKET: usize = 64 * 1024;
/// Server packets relayed during one login before the guard gives up: a
/// plugin switch, a "more data" packet or two, the final OK.
const MAX_AUTH_PACKETS: usize = 8;
/// The whole login through the guard (connect, TLS, authentication).
const LOGIN_TIMEOUT: Duration = Duration::from_secs(10);

const CLIENT_SSL: u32 = 0x0800;

/// Connection options for mysql_async to reach `backend` as sluice's user
/// under `tls`: straight to the server when its certificate is verified,
/// else through the guard. Fails when `addr` has no valid port, or when TLS
/// settings cannot be built (unreadable PEM files).
pub fn mysql_async_opts(
    backend: &config::Backend,
    tls: &BackendTls,
) -> Result<mysql_async::OptsBuilder, String> {
    let opts = mysql_async::OptsBuilder::default()
        .user(Some(backend.user.clone()))
        .pass(Some(backend.password.clone()))
        .prefer_socket(false);
    if matches!(
        tls.mode,
        BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity
    ) {
        let (host, port) = host_port(&backend.addr)?;
        return Ok(opts
            .ip_or_hostname(host)
            .tcp_port(port)
            .ssl_opts(tls::mysql_async_opts(tls)));
    }
    let path = guard_for(&backend.addr, tls)?;
    Ok(opts
        .socket(Some(path.to_string_lossy().into_owned()))
        .ssl_opts(None::<mysql_async::SslOpts>))
}

/// `host` and `port` of `host:port` or `[v6]:port`.
fn host_port(addr: &str) -> Result<(String, u16), String> {
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| format!("backend address `{addr}` has no port"))?;
    let port = port
        .parse()
        .map_err(|_| format!("backend address `{addr}` has an invalid port"))?;
    Ok((
        host.trim_start_matches('[').trim_end_matches(']').to_owned(),
        port,
    ))
}

/// One guard listener: where it listens, and whether its task still runs
/// (it ends with the runtime that spawned it).
struct Guard {
    path: PathBuf,
    alive: Arc<AtomicBool>,
}

/// Clears `alive` when the listener task ends or is dropped with its runtime.
struct AliveFlag(Arc<AtomicBool>);

impl Drop for AliveFlag {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

type GuardKey = (String, String);

fn guards() -> &'static Mutex<HashMap<GuardKey, Guard>> {
    static GUARDS: OnceLock<Mutex<HashMap<GuardKey, Guard>>> = OnceLock::new();
    GUARDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The socket of the guard for `addr` under `tls`, started on the current
/// tokio runtime the first time (a handful per process: one per backend and
/// TLS setting, kept across reloads).
fn guard_for(addr: &str, tls: &BackendTls) -> Result<PathBuf, String> {
    let key = (addr.to_owned(), format!("{tls:?}"));
    let mut map = guards()
        .lock()
        .map_err(|_| "auth guard registry poisoned".to_owned())?;
    if let Some(g) = map.get(&key) {
        if g.alive.load(Ordering::Acquire) {
            return Ok(g.path.clone());
        }
    }
    let settings = tls::settings(tls, addr)?;
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "the authentication guard needs a tokio runtime".to_owned())?;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = socket_dir()?.join(format!("{}.sock", NEXT.fetch_add(1, Ordering::Relaxed)));
    let std_listener = std::os::unix::net::UnixListener::bind(&path)
        .map_err(|e| format!("authentication guard socket {}: {e}", path.display()))?;
    std_listener
        .set_nonblocking(true)
        .map_err(|e| format!("authentication guard socket {}: {e}", path.display()))?;
    let listener = {
        let _entered = runtime.enter();
        UnixListener::from_std(std_listener)
            .map_err(|e| format!("authentication guard socket {}: {e}", path.display()))?
    };
    let alive = Arc::new(AtomicBool::new(true));
    let target = Arc::new(Target {
        addr: addr.to_owned(),
        tls: settings,
    });
    runtime.spawn(serve(listener, target, AliveFlag(alive.clone())));
    map.insert(
        key,
        Guard {
            path: path.clone(),
            alive,
        },
    );
    Ok(path)
}

/// This process's socket directory, mode 0700 (only sluice's user may
/// connect), created once. Directories that processes no longer running
/// left behind (killed without a chance to clean up) are removed then.
fn socket_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        remove_stale_dirs(&base);
        let dir = base.join(format!(
            "{DIR_PREFIX}{}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("authentication guard directory {}: {e}", dir.display()))?;
        Ok(dir)
    })
    .clone()
}

const DIR_PREFIX: &str = "sluice-auth-guard-";

fn remove_stale_dirs(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            // Someone else's directory fails to go: that is fine.
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

struct Target {
    addr: String,
    tls: Option<Arc<TlsSettings>>,
}

async fn serve(listener: UnixListener, target: Arc<Target>, _alive: AliveFlag) {
    let mut backoff = Duration::from_millis(5);
    loop {
        match listener.accept().await {
            Ok((local, _)) => {
                backoff = Duration::from_millis(5);
                let target = target.clone();
                tokio::spawn(async move {
                    if let Err(e) = relay(local, &target).await {
                        tracing::debug!(backend = %target.addr, error = %e, "authentication guard closed a connection");
                    }
                });
            }
            Err(e) => {
                // Out of file descriptors, say: wait instead of spinning.
                tracing::warn!(error = %e, "authentication guard: accept failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

type BackendIo = Transport<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;

#[derive(Debug, thiserror::Error)]
enum GuardError {
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Refused(String),
    #[error("login not finished within {0:?}")]
    Timeout(Duration),
}

/// Serve one mysql_async connection: the login under watch, then bytes.
async fn relay(local: UnixStream, target: &Target) -> Result<(), GuardError> {
    let mut local = PacketStream::new(local, AUTH_MAX_PACKET);
    let backend = match tokio::time::timeout(LOGIN_TIMEOUT, login(&mut local, target)).await {
        Ok(Ok(Some(backend))) => backend,
        // The server refused the login: its ERR went to mysql_async.
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(GuardError::Timeout(LOGIN_TIMEOUT)),
    };
    pump(local, backend).await
}

/// An ERR packet mysql_async reports as the server's error
/// (ER_NOT_SUPPORTED_AUTH_MODE) with sluice's sentence.
fn refusal(why: &str) -> Vec<u8> {
    let mut err = vec![0xff];
    err.extend_from_slice(&1251u16.to_le_bytes());
    err.extend_from_slice(b"#08004");
    err.extend_from_slice(why.as_bytes());
    err
}

/// Refuse the login: tell mysql_async why (as packet `seq`) and end.
async fn refuse<S: AsyncRead + AsyncWrite + Unpin>(
    local: &mut PacketStream<S>,
    seq: u8,
    why: String,
) -> Result<Option<PacketStream<BackendIo>>, GuardError> {
    let mut seq = seq;
    let _ = local.write_packet(&mut seq, &refusal(&why)).await;
    Err(GuardError::Refused(why))
}

/// What a server packet during authentication asks of the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthStep {
    /// OK: logged in.
    Done,
    /// ERR: refused by the server.
    Failed,
    /// The client answers (a plugin switch, a "more data" packet).
    ClientAnswers,
    /// More from the server follows (caching_sha2 "fast auth success").
    ServerContinues,
    /// The password itself would be sent: never without a verified certificate.
    WantsCleartext(&'static str),
}

/// Classify one server packet of the authentication phase. Pure, so the
/// rule is unit-tested.
fn auth_step(payload: &[u8]) -> AuthStep {
    match payload.first() {
        Some(0x00) => AuthStep::Done,
        Some(0xff) => AuthStep::Failed,
        Some(0xfe) => {
            let name = payload[1..].split(|&b| b == 0).next().unwrap_or_default();
            match name {
                b"mysql_clear_password" => AuthStep::WantsCleartext("mysql_clear_password"),
                // The dialog plugin asks for the password typed in, in clear.
                b"dialog" => AuthStep::WantsCleartext("dialog"),
                _ => AuthStep::ClientAnswers,
            }
        }
        // caching_sha2_password: 0x03 fast auth succeeded (an OK follows),
        // 0x04 full authentication (the password, in clear over TLS, or
        // encrypted with a public key the server itself sends).
        Some(0x01) => match payload.get(1) {
            Some(0x03) => AuthStep::ServerContinues,
            Some(0x04) => AuthStep::WantsCleartext("caching_sha2_password full authentication"),
            _ => AuthStep::ClientAnswers,
        },
        _ => AuthStep::ClientAnswers,
    }
}

/// The lower capability bytes of a v10 greeting: their offset.
fn greeting_caps_offset(g: &[u8]) -> Option<usize> {
    if g.first() != Some(&10) {
        return None;
    }
    let version_end = 1 + g.get(1..)?.iter().position(|&b| b == 0)?;
    // NUL, thread id (4), scramble part 1 (8), filler (1).
    let at = version_end + 1 + 4 + 8 + 1;
    (g.len() >= at + 2).then_some(at)
}

/// Connect to the backend and run mysql_async's login through, watching
/// what the server asks for. `None` when the server refused the login (its
/// answer was relayed).
async fn login(
    local: &mut PacketStream<UnixStream>,
    target: &Target,
) -> Result<Option<PacketStream<BackendIo>>, GuardError> {
    let tcp = TcpStream::connect(&target.addr).await?;
    tcp.set_nodelay(true)?;
    let mut backend = PacketStream::new(Transport::Plain(tcp), AUTH_MAX_PACKET);
    let greeting = backend.read_packet().await?;
    let mut g = greeting.payload.to_vec();
    if g.first() == Some(&0xff) {
        let mut seq = greeting.seq;
        local.write_packet(&mut seq, &g).await?;
        return Ok(None);
    }
    let at = greeting_caps_offset(&g).ok_or(ProtocolError::Malformed("backend greeting"))?;
    let server_tls = u16::from_le_bytes([g[at], g[at + 1]]) & CLIENT_SSL as u16 != 0;
    let tls = match &target.tls {
        Some(t) if server_tls => Some(t.clone()),
        Some(t) if t.mode == BackendTlsMode::Preferred => None,
        Some(t) => {
            let why = format!(
                "the server does not offer TLS, and tls.mode is {}",
                t.mode.as_str()
            );
            return refuse(local, greeting.seq.wrapping_add(1), why).await;
        }
        None => None,
    };
    // mysql_async speaks plaintext to the guard: it must not ask for TLS.
    let caps = u16::from_le_bytes([g[at], g[at + 1]]) & !(CLIENT_SSL as u16);
    g[at..at + 2].copy_from_slice(&caps.to_le_bytes());
    let mut seq = greeting.seq;
    local.write_packet(&mut seq, &g).await?;
    let response = local.read_packet().await?;
    let mut r = response.payload.to_vec();
    if r.len() < 32 {
        return Err(ProtocolError::Malformed("handshake response").into());
    }
    // Packets on the backend side run `shift` ids ahead (the SSL request).
    let mut shift = 0u8;
    let mut seq = response.seq;
    if let Some(tls) = tls {
        let caps = u32::from_le_bytes([r[0], r[1], r[2], r[3]]) | CLIENT_SSL;
        r[..4].copy_from_slice(&caps.to_le_bytes());
        // (Why it failed reaches only the guard's debug line.)
        backend = tls::start(backend, &mut seq, &r, &tls, AUTH_MAX_PACKET)
            .await
            .map_err(|e| GuardError::Refused(e.to_string()))?;
        shift = 1;
    }
    backend.write_packet(&mut seq, &r).await?;
    for _ in 0..MAX_AUTH_PACKETS {
        let p = backend.read_packet().await?;
        let to_local = p.seq.wrapping_sub(shift);
        let step = auth_step(&p.payload);
        if let AuthStep::WantsCleartext(what) = step {
            let over = if backend.get_ref().is_tls() {
                "TLS whose certificate is not verified"
            } else {
                "a plaintext connection"
            };
            let why = format!(
                "backend {} asks for {what}, which would send sluice's password in clear text over {over}; \
                 set tls.mode verify_ca or verify_identity for this backend, or use mysql_native_password",
                target.addr
            );
            return refuse(local, to_local, why).await;
        }
        let mut s = to_local;
        local.write_packet(&mut s, &p.payload).await?;
        match step {
            AuthStep::Done => return Ok(Some(backend)),
            AuthStep::Failed => return Ok(None),
            AuthStep::ServerContinues => {}
            AuthStep::ClientAnswers => {
                let answer = local.read_packet().await?;
                let mut s = answer.seq.wrapping_add(shift);
                backend.write_packet(&mut s, &answer.payload).await?;
            }
            AuthStep::WantsCleartext(_) => {}
        }
    }
    Err(ProtocolError::Malformed("backend authentication does not end").into())
}

/// After the login: copy bytes both ways until either side closes.
async fn pump(local: PacketStream<UnixStream>, backend: PacketStream<BackendIo>) -> Result<(), GuardError> {
    let (mut local, local_unread) = local.into_parts();
    let (mut backend, backend_unread) = backend.into_parts();
    if !local_unread.is_empty() {
        backend.write_all(&local_unread).await?;
    }
    if !backend_unread.is_empty() {
        local.write_all(&backend_unread).await?;
    }
    tokio::io::copy_bidirectional(&mut local, &mut backend).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleartext_requests_are_recognized() {
        assert_eq!(auth_step(b"\x00\x00\x00\x02\x00"), AuthStep::Done);
        assert_eq!(auth_step(b"\xff\x15\x04#28000denied"), AuthStep::Failed);
        assert_eq!(
            auth_step(b"\xfemysql_native_password\0abcdefghijklmnopqrst\0"),
            AuthStep::ClientAnswers
        );
        assert_eq!(
            auth_step(b"\xfemysql_clear_password\0"),
            AuthStep::WantsCleartext("mysql_clear_password")
        );
        assert_eq!(
            auth_step(b"\xfedialog\0\x04Password: "),
            AuthStep::WantsCleartext("dialog")
        );
        assert_eq!(auth_step(b"\x01\x03"), AuthStep::ServerContinues);
        assert!(matches!(auth_step(b"\x01\x04"), AuthStep::WantsCleartext(_)));
        // An old-style switch (a bare 0xfe) or an empty packet: the client answers or fails.
        assert_eq!(auth_step(b"\xfe"), AuthStep::ClientAnswers);
        assert_eq!(auth_step(b""), AuthStep::ClientAnswers);
    }

    #[test]
    fn greeting_capabilities_are_found() {
        let mut g = vec![10];
        g.extend_from_slice(b"10.11.0-MariaDB\0");
        g.extend_from_slice(&7u32.to_le_bytes());
        g.extend_from_slice(b"abcdefgh\0");
        g.extend_from_slice(&0xffffu16.to_le_bytes());
        let at = greeting_caps_offset(&g).expect("offset");
        assert_eq!(at, 1 + 16 + 4 + 8 + 1);
        assert_eq!(u16::from_le_bytes([g[at], g[at + 1]]), 0xffff);
        assert_eq!(greeting_caps_offset(&g[..at + 1]), None);
        assert_eq!(greeting_caps_offset(b"\x09abc"), None);
        assert_eq!(greeting_caps_offset(b"\x0aabc"), None);
    }

    #[test]
    fn addresses_split() {
        assert_eq!(
            host_port("127.0.0.1:3306").expect("v4"),
            ("127.0.0.1".to_owned(), 3306)
        );
        assert_eq!(host_port("[::1]:3307").expect("v6"), ("::1".to_owned(), 3307));
        assert!(host_port("db").is_err());
        assert!(host_port("db:x").is_err());
    }
}
