//! Attacks on sluice from the security review (issue 15), each run over real sockets
//! against a sluice binary in front of the shared MariaDB cluster (or, for the backend
//! side, a fake MySQL server on loopback that plays a man in the middle). Every test that
//! could have crashed or exhausted sluice then checks that it still serves a new session.
//! Where MariaDB defines the answer (bad sequence ids, REQUIRE SSL), the same bytes are
//! sent to the master directly and the two answers compared.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::cluster::{shared_cluster, unique_name, Sluice, APP_PASSWORD, APP_USER, TEST_DB};
use common::raw::{Frame, RawConn};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, SslOpts};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

const SHA2: &str = "caching_sha2_password";
const NATIVE: &str = "mysql_native_password";

/// PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | TRANSACTIONS | LONG_FLAG.
const CLIENT_CAPS: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0000_2000 | 0x0000_0004;

fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut f = vec![len[0], len[1], len[2], seq];
    f.extend_from_slice(payload);
    f
}

/// A protocol-4.1 handshake response for `user` answering with `auth` under `plugin`.
fn handshake_response(user: &[u8], auth: &[u8], plugin: &str) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&CLIENT_CAPS.to_le_bytes());
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0u8; 23]);
    p.extend_from_slice(user);
    p.push(0);
    p.push(auth.len() as u8);
    p.extend_from_slice(auth);
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p
}

/// The 20-byte scramble of a v10 greeting.
fn greeting_nonce(g: &[u8]) -> Vec<u8> {
    let version_end = 1 + g[1..].iter().position(|&b| b == 0).expect("version");
    let mut i = version_end + 1 + 4;
    let mut nonce = g[i..i + 8].to_vec();
    i += 8 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    nonce.extend_from_slice(&g[i..i + 12]);
    nonce
}

fn greeting(c: &mut RawConn) -> Vec<u8> {
    match c.read() {
        Frame::Packet(0, g) if g.first() == Some(&10) => g,
        other => panic!("expected a greeting, got {other:?}"),
    }
}

fn opts(port: u16, user: &str, password: &str) -> OptsBuilder {
    let url = format!("mysql://{user}:{password}@127.0.0.1:{port}/{TEST_DB}?prefer_socket=false");
    OptsBuilder::from_opts(Opts::from_url(&url).expect("url")).prefer_socket(false)
}

fn tls_opts(port: u16, user: &str, password: &str) -> OptsBuilder {
    opts(port, user, password).ssl_opts(Some(
        SslOpts::default()
            .with_danger_accept_invalid_certs(true)
            .with_danger_skip_domain_validation(true),
    ))
}

async fn try_connect(o: OptsBuilder) -> Result<Conn, mysql_async::Error> {
    tokio::time::timeout(Duration::from_secs(20), Conn::new(o))
        .await
        .expect("connecting timed out")
}

/// sluice still serves a new session (the proof that an attack did not end it).
async fn still_serves(s: &Sluice) {
    assert!(s.is_running(), "sluice is gone; log:\n{}", s.log());
    let c = serving_session(s, "a new session after the attack").await;
    c.disconnect().await.expect("disconnect");
}

/// A new session through `s` that answers `SELECT 1`; `what` names it in
/// the failure message.
async fn serving_session(s: &Sluice, what: &str) -> Conn {
    let mut c = try_connect(opts(s.port, APP_USER, APP_PASSWORD))
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}\n{}", s.log()));
    let one: Option<i64> = c.query_first("SELECT 1").await.expect("SELECT 1");
    assert_eq!(one, Some(1));
    c
}

fn server_error(e: &mysql_async::Error) -> (u16, String) {
    match e {
        mysql_async::Error::Server(s) => (s.code, s.state.clone()),
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// The packets a client sees until sluice (or MariaDB) closes or goes quiet.
fn drain(c: &mut RawConn, max: usize) -> Vec<Frame> {
    c.set_timeout(Duration::from_secs(5));
    let mut out = Vec::new();
    for _ in 0..max {
        let f = c.read();
        let end = !matches!(f, Frame::Packet(..));
        out.push(f);
        if end {
            break;
        }
    }
    out
}

fn plain_sluice() -> &'static Sluice {
    static S: OnceLock<Sluice> = OnceLock::new();
    S.get_or_init(|| Sluice::start_for(shared_cluster(), "log:\n  level: info\n"))
}

// ---------------------------------------------------------------------------------------
// 1. Crashes: unbounded auth exchanges, sequence ids
// ---------------------------------------------------------------------------------------

/// The attack that aborted the whole process: a known user with caching_sha2 and an
/// empty answer, then 3,000 pipelined empty packets (each once answered with another
/// auth switch, one stack frame deeper).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_empty_auth_answers_do_not_crash_sluice() {
    let s = plain_sluice();
    let mut c = RawConn::connect(s.port);
    greeting(&mut c);
    let mut burst = frame(1, &handshake_response(APP_USER.as_bytes(), &[], SHA2));
    for i in 0..3000u32 {
        burst.extend_from_slice(&frame((3 + i) as u8, &[]));
    }
    c.sock.write_all(&burst).expect("send the burst");
    let frames = drain(&mut c, 4);
    match &frames[0] {
        Frame::Packet(2, p) => assert!(p.starts_with(b"\xfecaching_sha2_password\0"), "{p:?}"),
        other => panic!("expected the auth switch, got {other:?}"),
    }
    // The one answer read is empty, not the password: access denied (or a reset,
    // since the rest of the burst is never read).
    if let Some(err) = frames[1].err() {
        assert_eq!((err.0, err.1.as_str()), (1045, "28000"), "{err:?}");
    } else {
        assert_eq!(frames[1], Frame::Closed);
    }
    still_serves(s).await;
}

/// The same through COM_CHANGE_USER after a real login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_change_user_answers_do_not_crash_sluice() {
    let s = plain_sluice();
    let mut c = RawConn::connect(s.port);
    assert!(c.login(APP_USER, APP_PASSWORD).is_ok(), "login");
    let mut body = vec![0x11];
    body.extend_from_slice(b"app\0");
    body.push(0); // empty auth
    body.push(0); // no database
    body.extend_from_slice(&[45, 0]);
    body.extend_from_slice(b"caching_sha2_password\0");
    let mut burst = frame(0, &body);
    for i in 0..3000u32 {
        burst.extend_from_slice(&frame((2 + i) as u8, &[]));
    }
    c.sock.write_all(&burst).expect("send the burst");
    let frames = drain(&mut c, 4);
    match &frames[0] {
        Frame::Packet(1, p) => assert!(p.starts_with(b"\xfecaching_sha2_password\0"), "{p:?}"),
        other => panic!("expected the auth switch, got {other:?}"),
    }
    if let Some(err) = frames[1].err() {
        assert_eq!(err.0, 1045, "{err:?}");
    } else {
        assert_eq!(frames[1], Frame::Closed);
    }
    still_serves(s).await;
}

/// What `port` (sluice or MariaDB) answers to a handshake whose packets carry wrong
/// sequence ids: the answer to an auth switch (`switched`) or the handshake response.
fn answer_to_out_of_order(port: u16, switched: bool) -> Vec<Frame> {
    let mut c = RawConn::connect(port);
    greeting(&mut c);
    let burst = if switched {
        // A plugin neither knows: both switch to mysql_native_password.
        let mut b = frame(1, &handshake_response(APP_USER.as_bytes(), &[], "dialog"));
        b.extend_from_slice(&frame(7, &[1u8; 20]));
        b
    } else {
        frame(5, &handshake_response(APP_USER.as_bytes(), &[1; 20], NATIVE))
    };
    c.sock.write_all(&burst).expect("send");
    drain(&mut c, 3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_out_of_order_get_mariadbs_answer() {
    let s = plain_sluice();
    let master_port: u16 = shared_cluster()
        .master
        .addr()
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("master port");
    let first_err = |frames: &[Frame]| frames.iter().find_map(Frame::err);
    for switched in [true, false] {
        let direct = answer_to_out_of_order(master_port, switched);
        let through = answer_to_out_of_order(s.port, switched);
        assert!(
            first_err(&direct).is_some(),
            "MariaDB answers with an error: {direct:?}"
        );
        assert_eq!(
            first_err(&through),
            first_err(&direct),
            "switched={switched}\nsluice: {through:?}\nMariaDB: {direct:?}"
        );
        assert_eq!(through.last(), Some(&Frame::Closed), "and closes");
    }
    still_serves(s).await;
}

// ---------------------------------------------------------------------------------------
// 2. User enumeration
// ---------------------------------------------------------------------------------------

/// Every packet sluice sends after the greeting when `user` tries `plugin` with `auth`
/// and answers each auth switch with `switch_answer`; this connection's scramble and
/// the user name are masked, so two exchanges compare byte for byte.
fn exchange(port: u16, user: &str, plugin: &str, auth: &[u8], switch_answer: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut c = RawConn::connect(port);
    let g = greeting(&mut c);
    let nonce = greeting_nonce(&g);
    c.write(1, &handshake_response(user.as_bytes(), auth, plugin));
    let mut seen = Vec::new();
    for _ in 0..4 {
        let Frame::Packet(seq, mut p) = c.read() else {
            break;
        };
        if let Some(at) = p.windows(nonce.len()).position(|w| w == nonce.as_slice()) {
            p[at..at + nonce.len()].fill(b'N');
        }
        let quoted = format!("'{user}'");
        if let Some(at) = p.windows(quoted.len()).position(|w| w == quoted.as_bytes()) {
            p.splice(at..at + quoted.len(), b"'USER'".iter().copied());
        }
        let ends = p.first() != Some(&0xfe);
        if !ends {
            c.write(seq.wrapping_add(1), switch_answer);
        }
        seen.push((seq, p));
        if ends {
            break;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_users_take_the_same_path_as_a_wrong_password() {
    let s = plain_sluice();
    let cases: [(&str, &[u8], &[u8]); 6] = [
        (NATIVE, &[7; 20], &[7; 20]),
        (NATIVE, &[], &[]),
        (SHA2, &[], &[7; 32]),
        (SHA2, &[7; 32], &[7; 32]),
        ("dialog", &[], &[7; 20]),
        ("mysql_clear_password", b"wrong\0", &[7; 20]),
    ];
    for (plugin, auth, answer) in cases {
        let known = exchange(s.port, APP_USER, plugin, auth, answer);
        let unknown = exchange(s.port, "zzz", plugin, auth, answer);
        assert_eq!(
            known.last().map(|(_, p)| p[0]),
            Some(0xff),
            "{plugin}: the exchange ends with an error: {known:?}"
        );
        assert_eq!(
            known, unknown,
            "{plugin}: a known and an unknown user are told apart"
        );
    }
    still_serves(s).await;
}

// ---------------------------------------------------------------------------------------
// 4. TLS required from clients
// ---------------------------------------------------------------------------------------

struct Pem {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
}

fn self_signed() -> &'static Pem {
    static P: OnceLock<Pem> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, ck.cert.pem()).expect("cert");
        std::fs::write(&key, ck.signing_key.serialize_pem()).expect("key");
        Pem { _dir: dir, cert, key }
    })
}

/// MariaDB's own answer to a plaintext login of an account with REQUIRE SSL.
async fn mariadb_require_ssl_answer() -> (u16, String) {
    let cluster = shared_cluster();
    let user = unique_name("reqssl");
    cluster.master.sql(&format!(
        "CREATE USER '{user}'@'%' IDENTIFIED BY 'pw' REQUIRE SSL"
    ));
    let addr = cluster.master.addr();
    let port: u16 = addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("port");
    let url = format!("mysql://{user}:pw@127.0.0.1:{port}/?prefer_socket=false");
    let r =
        try_connect(OptsBuilder::from_opts(Opts::from_url(&url).expect("url")).prefer_socket(false)).await;
    cluster.master.sql(&format!("DROP USER '{user}'@'%'"));
    server_error(&r.expect_err("MariaDB refuses the plaintext login"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_can_be_required_globally_and_per_user() {
    let pem = self_signed();
    let mariadb = mariadb_require_ssl_answer().await;
    let tls = |require: bool| {
        format!(
            "tls:\n  cert: {}\n  key: {}\n  require: {require}\n",
            pem.cert.display(),
            pem.key.display()
        )
    };
    let global = Sluice::start_for(shared_cluster(), &tls(true));
    let refused = try_connect(opts(global.port, APP_USER, APP_PASSWORD)).await;
    let refused = server_error(&refused.expect_err("plaintext login refused"));
    assert_eq!(
        refused, mariadb,
        "tls.require: the same answer as MariaDB's REQUIRE SSL"
    );
    assert_eq!(refused.0, 1045);
    let mut c = try_connect(tls_opts(global.port, APP_USER, APP_PASSWORD))
        .await
        .unwrap_or_else(|e| panic!("TLS login: {e}\n{}", global.log()));
    let cipher: Option<(String, String)> = c
        .query_first("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        .await
        .expect("query over TLS");
    assert!(cipher.is_some());
    c.disconnect().await.expect("disconnect");
    drop(global);

    // Per user: only `app` must use TLS.
    let cluster = shared_cluster();
    let users = Sluice::users_yaml().replace(
        &format!("password: {APP_PASSWORD},"),
        &format!("password: {APP_PASSWORD}, require_tls: true,"),
    );
    assert!(users.contains("require_tls"), "{users}");
    let per_user = Sluice::start(&format!(
        "{users}groups:\n{}{}",
        Sluice::group_yaml("main", cluster),
        tls(false)
    ));
    let refused = try_connect(opts(per_user.port, APP_USER, APP_PASSWORD)).await;
    assert_eq!(server_error(&refused.expect_err("app refused")), mariadb);
    let other = try_connect(opts(
        per_user.port,
        common::cluster::HASH_USER,
        common::cluster::HASH_PASSWORD,
    ))
    .await
    .expect("a user without require_tls logs in over plaintext");
    other.disconnect().await.expect("disconnect");
    let app = try_connect(tls_opts(per_user.port, APP_USER, APP_PASSWORD))
        .await
        .expect("app over TLS");
    app.disconnect().await.expect("disconnect");
}

// ---------------------------------------------------------------------------------------
// 5. Exhaustion before authentication
// ---------------------------------------------------------------------------------------

/// A connection from `source` (a loopback address) that reads the greeting and then
/// says nothing.
async fn silent_from(source: [u8; 4], port: u16) -> tokio::net::TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.bind((std::net::Ipv4Addr::from(source), 0).into())
        .expect("bind");
    sock.connect(([127, 0, 0, 1], port).into())
        .await
        .expect("connect")
}

/// The first packet sluice sends on `sock`, as (sequence id, payload), or None when
/// it closes first.
async fn first_packet(sock: &mut tokio::net::TcpStream, wait: Duration) -> Option<(u8, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 4];
    tokio::time::timeout(wait, sock.read_exact(&mut head))
        .await
        .ok()?
        .ok()?;
    let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
    let mut p = vec![0; len];
    tokio::time::timeout(wait, sock.read_exact(&mut p))
        .await
        .ok()?
        .ok()?;
    Some((head[3], p))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_sockets_neither_lock_logins_out_nor_stay_long() {
    let s = Sluice::start_for(
        shared_cluster(),
        "limits:\n  max_client_connections: 5\n  handshake_timeout: 1s\n  max_unauthenticated_per_address: 10\n",
    );
    // Twice max_client_connections sockets that never log in, from 127.0.0.2.
    let mut silent = Vec::new();
    for _ in 0..10 {
        let mut sock = silent_from([127, 0, 0, 2], s.port).await;
        let (seq, g) = first_packet(&mut sock, Duration::from_secs(5))
            .await
            .expect("greeting");
        assert_eq!((seq, g[0]), (0, 10), "a greeting");
        silent.push(sock);
    }
    // One more from that address is refused at once, like MariaDB beyond its limit.
    let mut over = silent_from([127, 0, 0, 2], s.port).await;
    let (seq, p) = first_packet(&mut over, Duration::from_secs(5))
        .await
        .expect("an answer");
    assert_eq!(seq, 0);
    assert_eq!(&p[..3], &[0xff, 0x10, 0x04], "ERR 1040: {p:?}");
    // A real login from another address is not locked out.
    still_serves(&s).await;
    // The silent ones are closed after limits.handshake_timeout.
    let started = Instant::now();
    for sock in &mut silent {
        assert_eq!(first_packet(sock, Duration::from_secs(5)).await, None);
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // And their places are free again.
    let mut again = silent_from([127, 0, 0, 2], s.port).await;
    let (_, g) = first_packet(&mut again, Duration::from_secs(5))
        .await
        .expect("greeting");
    assert_eq!(g[0], 10, "a greeting once the silent sockets are gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_logged_in_session_leaves_the_handshake_budget() {
    // Two places for connections in their handshake, from any address: the
    // sixth login succeeds only if each session gave its place back once it
    // was authenticated, while the five stay open.
    let s = Sluice::start_for(
        shared_cluster(),
        "limits:\n  max_unauthenticated: 2\n  max_unauthenticated_per_address: 2\n",
    );
    let mut open = Vec::new();
    for i in 0..5 {
        open.push(serving_session(&s, &format!("login {i} with {i} sessions open")).await);
    }
    still_serves(&s).await;
    for c in open {
        c.disconnect().await.expect("disconnect");
    }
}

// ---------------------------------------------------------------------------------------
// 6. The admin endpoint
// ---------------------------------------------------------------------------------------

const ADMIN_TOKEN: &str = "sec-test-admin-token-0123456789";

/// One HTTP/1.0 request with `headers`: (status, body).
fn http(port: u16, method: &str, path: &str, headers: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect admin");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\n{headers}Content-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP answer");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    (status, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_changes_need_the_token_and_a_trusted_host() {
    let s = Sluice::start_for(shared_cluster(), &format!("admin:\n  token: {ADMIN_TOKEN}\n"));
    let port = s.admin_port;
    let local = format!("Host: 127.0.0.1:{port}\r\n");
    let bearer = |t: &str| format!("{local}Authorization: Bearer {t}\r\n");
    // Prometheus reads without credentials.
    let (status, body) = http(port, "GET", "/metrics", &local);
    assert_eq!(status, 200);
    assert!(body.contains("sluice_"), "{body}");
    assert_eq!(http(port, "GET", "/healthz", "Host: localhost\r\n").0, 200);
    // A reload needs the configured token (not the harness's environment one).
    let (status, body) = http(port, "POST", "/reload", &local);
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        http(port, "POST", "/reload", &bearer(common::http::TEST_ADMIN_TOKEN)).0,
        401
    );
    assert_eq!(
        http(
            port,
            "POST",
            "/reload",
            &bearer("sec-test-admin-token-012345678X")
        )
        .0,
        401
    );
    let (status, body) = http(port, "POST", "/reload", &bearer(ADMIN_TOKEN));
    assert_eq!(status, 200, "{body}");
    // DNS rebinding: a name that is not ours, with or without the token.
    let rebound = format!("Host: attacker.example:{port}\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n");
    assert_eq!(http(port, "POST", "/reload", &rebound).0, 421);
    assert_eq!(
        http(
            port,
            "GET",
            "/metrics",
            &format!("Host: attacker.example:{port}\r\n")
        )
        .0,
        421
    );
    assert!(s.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_connections_are_capped_and_half_sent_requests_time_out() {
    let s = plain_sluice();
    let port = s.admin_port;
    // A half-sent request is closed after the header-read timeout.
    let mut half = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    half.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("send");
    half.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = half.read_to_end(&mut buf);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(12),
        "a half-sent request stayed open {waited:?}"
    );
    // Beyond the cap, new connections are closed at once...
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut over = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    over.set_read_timeout(Some(Duration::from_secs(3)))
        .expect("timeout");
    let _ = over.write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut got = Vec::new();
    let r = over.read_to_end(&mut got);
    assert!(
        r.is_ok() && got.is_empty() || r.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the connection beyond the cap was served: {}",
        String::from_utf8_lossy(&got)
    );
    // ...and served again once the idle ones are gone.
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = std::panic::catch_unwind(|| http(port, "GET", "/healthz", "Host: 127.0.0.1\r\n"));
        if matches!(r, Ok((200, _))) {
            break;
        }
        assert!(Instant::now() < deadline, "the admin endpoint did not recover");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// 3. Backend credentials over unverified TLS
// ---------------------------------------------------------------------------------------

/// How the fake backend asks for the password once the handshake response arrived.
#[derive(Clone, Copy, Debug)]
enum Ask {
    ClearPassword,
    Sha2FullAuth,
    Dialog,
}

/// What one connection to the fake backend sent.
#[derive(Clone, Debug, Default)]
struct Seen {
    /// The handshake response (after TLS when the client asked for it).
    response: Vec<u8>,
    /// Everything after the fake asked for the password.
    after_ask: Vec<u8>,
    tls: bool,
}

impl Seen {
    /// mysql_async (probes, `sluice triggers`) asks for CLIENT_MULTI_STATEMENTS;
    /// sluice's own connections to a fake that no client uses do not.
    fn by_mysql_async(&self) -> bool {
        self.response.len() >= 4 && self.response[2] & 0x01 != 0
    }
}

/// A fake MySQL server on loopback playing a man in the middle: it offers TLS with a
/// self-signed certificate (and plaintext to clients that do not ask for TLS), then
/// asks for the password in clear text. Returns its port; each connection's bytes are
/// added to `record`.
async fn fake_backend(ask: Ask, record: Arc<Mutex<Vec<Seen>>>) -> u16 {
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
    let pem = self_signed();
    let certs: Vec<_> = {
        use rustls_pki_types::pem::PemObject;
        rustls_pki_types::CertificateDer::pem_file_iter(&pem.cert)
            .expect("cert")
            .collect::<Result<_, _>>()
            .expect("cert")
    };
    let key = {
        use rustls_pki_types::pem::PemObject;
        rustls_pki_types::PrivateKeyDer::from_pem_file(&pem.key).expect("key")
    };
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let cfg = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();

    /// One packet: (sequence id, payload).
    async fn read_packet<S: AsyncRead + Unpin>(s: &mut S) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 4];
        s.read_exact(&mut head).await.ok()?;
        let len = usize::from(head[0]) | usize::from(head[1]) << 8 | usize::from(head[2]) << 16;
        let mut p = vec![0; len];
        s.read_exact(&mut p).await.ok()?;
        Some((head[3], p))
    }
    /// After the handshake response: ask, record what comes back, refuse.
    async fn ask_and_record<S: AsyncRead + AsyncWrite + Unpin>(
        s: &mut S,
        ask: Ask,
        seq: u8,
        seen: &mut Seen,
    ) {
        let ask_packet = match ask {
            Ask::ClearPassword => frame(seq, b"\xfemysql_clear_password\0"),
            Ask::Sha2FullAuth => frame(seq, &[0x01, 0x04]),
            Ask::Dialog => frame(seq, b"\xfedialog\0\x04Password: "),
        };
        if s.write_all(&ask_packet).await.is_err() {
            return;
        }
        let mut buf = vec![0u8; 4096];
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            seen.after_ask.extend_from_slice(&buf[..n]);
        }
        let err = b"\xff\x15\x04#28000Access denied";
        let _ = s.write_all(&frame(seq.wrapping_add(2), err)).await;
    }

    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let record = record.clone();
            tokio::spawn(async move {
                // Greeting: v10, PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | SSL |
                // LONG_PASSWORD | TRANSACTIONS | LONG_FLAG | CONNECT_WITH_DB |
                // MULTI_STATEMENTS | MULTI_RESULTS.
                let caps: u32 =
                    0x200 | 0x8000 | 0x80000 | 0x800 | 0x1 | 0x2000 | 0x4 | 0x8 | 0x10000 | 0x20000;
                let mut g = vec![10];
                g.extend_from_slice(b"5.5.5-10.11.0-MariaDB-fake\0");
                g.extend_from_slice(&7u32.to_le_bytes());
                g.extend_from_slice(b"abcdefgh\0");
                g.extend_from_slice(&(caps as u16).to_le_bytes());
                g.push(45);
                g.extend_from_slice(&2u16.to_le_bytes());
                g.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
                g.push(21);
                g.extend_from_slice(&[0; 10]);
                g.extend_from_slice(b"ijklmnopqrst\0");
                // Full authentication follows a caching_sha2 scramble: greet with it.
                g.extend_from_slice(match ask {
                    Ask::Sha2FullAuth => b"caching_sha2_password\0".as_slice(),
                    _ => b"mysql_native_password\0",
                });
                if tcp.write_all(&frame(0, &g)).await.is_err() {
                    return;
                }
                let Some((seq, first)) = read_packet(&mut tcp).await else {
                    return;
                };
                let mut seen = Seen::default();
                let ssl_request = first.len() == 32 && first[1] & 0x08 != 0;
                if ssl_request {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Some((seq, response)) = read_packet(&mut tls).await else {
                        return;
                    };
                    seen.tls = true;
                    seen.response = response;
                    ask_and_record(&mut tls, ask, seq.wrapping_add(1), &mut seen).await;
                } else {
                    seen.response = first;
                    ask_and_record(&mut tcp, ask, seq.wrapping_add(1), &mut seen).await;
                }
                record.lock().expect("lock").push(seen);
            });
        }
    });
    port
}

/// Neither what `seen` recorded nor anything after the ask holds `secret`.
fn assert_no_password(seen: &[Seen], secret: &str, what: &str) {
    for s in seen {
        let all = [s.response.as_slice(), s.after_ask.as_slice()].concat();
        assert!(
            !all.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{what}: the password went to an unverified server: {s:?}"
        );
        // Not even encrypted with a key the server would send (caching_sha2 over
        // plaintext), nor an empty answer: the login ends at the ask.
        assert!(
            s.after_ask.is_empty(),
            "{what}: the client answered the ask: {s:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_password_never_goes_over_unverified_tls() {
    const SECRET: &str = "backend-secret-pw-4471";
    for ask in [Ask::ClearPassword, Ask::Sha2FullAuth] {
        for mode in ["required", "preferred"] {
            let record = Arc::new(Mutex::new(Vec::new()));
            let port = fake_backend(ask, record.clone()).await;
            let yaml = format!(
                "{}groups:\n  - name: main\n    master: {{ addr: 127.0.0.1:{port}, user: sluice, password: {SECRET} }}\n    replicas: []\nbackend:\n  connect_timeout: 5s\n  tls: {{ mode: {mode} }}\n",
                Sluice::users_yaml()
            );
            let s = Sluice::start(&yaml);
            // A statement makes sluice log in to the (fake) master.
            let mut c = RawConn::connect(s.port);
            assert!(c.login(APP_USER, APP_PASSWORD).is_ok(), "{}", s.log());
            let answer = c.query("SELECT 1");
            let (code, _, message) = answer
                .err()
                .unwrap_or_else(|| panic!("{ask:?}/{mode}: {answer:?}"));
            assert_eq!(code, 1429, "{message}");
            assert!(message.contains("clear text"), "{ask:?}/{mode}: {message}");
            drop(s);
            let seen = record.lock().expect("lock").clone();
            assert!(
                seen.iter().any(|s| s.tls),
                "{ask:?}/{mode}: sluice never reached the fake backend over TLS: {seen:?}"
            );
            assert_no_password(&seen, SECRET, &format!("{ask:?}/{mode}"));
        }
    }
}

/// The connections sluice makes through mysql_async (the freshness probes, `sluice
/// triggers`) follow the same rule, in every mode that does not verify the certificate,
/// plaintext included (mysql_async would encrypt the password with an RSA key the
/// server itself sends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_and_the_triggers_tool_never_send_the_password_unverified() {
    const SECRET: &str = "probe-secret-pw-9923";
    for ask in [Ask::Sha2FullAuth, Ask::ClearPassword, Ask::Dialog] {
        for mode in ["required", "disabled", "preferred"] {
            let what = format!("{ask:?}/{mode}");
            let record = Arc::new(Mutex::new(Vec::new()));
            let master = fake_backend(ask, record.clone()).await;
            let replica = fake_backend(ask, record.clone()).await;
            let yaml = format!(
                "{}groups:\n  - name: main\n    master: {{ addr: 127.0.0.1:{master}, user: sluice, password: {SECRET} }}\n    replicas:\n      - {{ addr: 127.0.0.1:{replica}, user: sluice, password: {SECRET} }}\nbackend:\n  connect_timeout: 5s\n  tls: {{ mode: {mode} }}\nfreshness:\n  probe_interval: 50ms\n",
                Sluice::users_yaml()
            );
            let s = Sluice::start(&yaml);
            // The probes of both servers try to log in, again and again.
            let deadline = Instant::now() + Duration::from_secs(10);
            while record
                .lock()
                .expect("lock")
                .iter()
                .filter(|c| c.by_mysql_async())
                .count()
                < 4
            {
                assert!(
                    Instant::now() < deadline,
                    "{what}: no probe reached the fakes:\n{}",
                    s.log()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            // The operator's tool, with the same configuration.
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
                .args(["triggers", "status", "--schema", "app", "--config"])
                .arg(s.config_path())
                .stdin(std::process::Stdio::null())
                .output()
                .expect("run sluice triggers");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{what}: {stderr}");
            assert!(stderr.contains("clear text"), "{what}: {stderr}");
            let log = s.log();
            drop(s);
            let seen = record.lock().expect("lock").clone();
            let probes = seen.iter().filter(|c| c.by_mysql_async()).count();
            assert!(
                probes >= 5,
                "{what}: {probes} mysql_async logins: {seen:?}\n{log}"
            );
            if mode == "required" {
                assert!(
                    seen.iter().all(|c| c.tls),
                    "{what}: a plaintext login under required: {seen:?}"
                );
            }
            if mode == "disabled" {
                assert!(seen.iter().all(|c| !c.tls), "{what}: {seen:?}");
            }
            assert_no_password(&seen, SECRET, &what);
        }
    }
}

// ---------------------------------------------------------------------------------------
// 7. Log forging
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_names_cannot_forge_or_flood_log_lines() {
    let s = Sluice::start_for(shared_cluster(), "log:\n  level: info\n");
    let forged = "evil\r\n2026-12-01T00:00:00.000000Z  INFO sluice: FORGED admin login";
    let long = "x".repeat(60_000);
    for user in [forged, long.as_str()] {
        let mut c = RawConn::connect(s.port);
        greeting(&mut c);
        c.write(1, &handshake_response(user.as_bytes(), &[1; 20], NATIVE));
        let f = drain(&mut c, 2);
        assert_eq!(f[0].err().map(|e| e.0), Some(1045), "{:?}", f[0].err());
    }
    still_serves(&s).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = s.log();
        let refusals: Vec<&str> = log.lines().filter(|l| l.contains("client refused")).collect();
        if refusals.len() >= 2 {
            assert!(
                !log.lines().any(|l| l.starts_with("2026-12-01T00:00:00.000000Z")),
                "a forged line:\n{log}"
            );
            // (In either order: a refusal is logged after its ERR is sent,
            // so the second login's line may come first.)
            let (forged_line, long_line) = if refusals[0].contains("evil") {
                (refusals[0], refusals[1])
            } else {
                (refusals[1], refusals[0])
            };
            assert!(forged_line.contains("evil\\r\\n2026-12-01"), "{forged_line}");
            assert!(long_line.len() < 2048, "a {} byte log line", long_line.len());
            assert!(long_line.contains("more bytes"), "{long_line}");
            break;
        }
        assert!(Instant::now() < deadline, "no refusal in the log:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// 8. SET values with effects are not replayed
// ---------------------------------------------------------------------------------------

/// A session SET is replayed on every backend connection the session borrows, replicas
/// included. One whose value has an effect (a sequence, a stored function that writes)
/// must run once, as it does on one server: the same script directly on the master and
/// through sluice must advance the sequence by the same amount, leave the replicas
/// where replication puts them, and keep the session's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_with_effects_run_once() {
    let cluster = shared_cluster();
    let s = Sluice::start_for(cluster, "freshness:\n  probe_interval: 10ms\n");
    let db = unique_name("setfx");
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (a INT); INSERT INTO {db}.t VALUES (1); \
         CREATE FUNCTION {db}.bump(sq VARCHAR(8)) RETURNS INT DETERMINISTIC MODIFIES SQL DATA \
         RETURN IF(sq = 'a', NEXTVAL({db}.fa), NEXTVAL({db}.fb)); \
         CREATE FUNCTION {db}.concat(sq VARCHAR(8)) RETURNS INT DETERMINISTIC MODIFIES SQL DATA \
         RETURN {db}.bump(sq)"
    ));
    // The counter table (and triggers on `t`): without it every read goes to the master.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["triggers", "install", "--schema", &db, "--config"])
        .arg(s.config_path())
        .output()
        .expect("sluice triggers install");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let master_id = cluster.master.sql("SELECT @@server_id");
    let sets = [
        "SET SESSION div_precision_increment = NEXT VALUE FOR {seq}",
        "SET SESSION div_precision_increment = PREVIOUS VALUE FOR {seq} + 1",
        "SET @@session.div_precision_increment = (SELECT {db}.bump('{which}'))",
        "SET SESSION div_precision_increment = {db}.bump('{which}') - 1",
        // A stored function named like a built-in (pure) one.
        "SET SESSION div_precision_increment = {db}.CONCAT('{which}')",
    ];
    for (i, set) in sets.iter().enumerate() {
        // One sequence for the direct run, one for the run through sluice.
        let mut positions = Vec::new();
        for (which, port) in [
            ("a", cluster.master.addr()),
            ("b", format!("127.0.0.1:{}", s.port)),
        ] {
            cluster.master.sql(&format!(
                "CREATE OR REPLACE SEQUENCE {db}.f{which} START WITH 1 NOCACHE"
            ));
            cluster.wait_replicas_caught_up();
            let seq = format!("{db}.f{which}");
            let sql = set
                .replace("{seq}", &seq)
                .replace("{db}", &db)
                .replace("{which}", which);
            let (user, password) = if which == "a" {
                (common::cluster::SLUICE_USER, common::cluster::SLUICE_PASSWORD)
            } else {
                (APP_USER, APP_PASSWORD)
            };
            let port: u16 = port
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("port");
            if which == "b" {
                replicas_serve_reads(&s, &master_id).await;
            }
            let mut c = try_connect(opts(port, user, password).db_name(Some(db.clone())))
                .await
                .expect("connect");
            // PREVIOUS VALUE needs a NEXT VALUE in this session first (which pins
            // the session: the other cases run without).
            if sql.contains("PREVIOUS") {
                c.query_drop(format!("DO NEXT VALUE FOR {seq}"))
                    .await
                    .expect("first value");
            }
            c.query_drop(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            let value: Option<i64> = c
                .query_first("SELECT @@div_precision_increment")
                .await
                .expect("value");
            // Reads (a replica serves those that name no table, once it has caught
            // up with the session's writes) and a write (the master) borrow other
            // backend connections.
            tokio::time::sleep(Duration::from_millis(300)).await;
            for _ in 0..10 {
                let _: Vec<i64> = c.query("SELECT @@server_id").await.expect("read");
            }
            c.query_drop("INSERT INTO t VALUES (2)").await.expect("write");
            tokio::time::sleep(Duration::from_millis(300)).await;
            for _ in 0..5 {
                let _: Vec<i64> = c.query("SELECT @@server_id").await.expect("read");
            }
            let again: Option<i64> = c
                .query_first("SELECT @@div_precision_increment")
                .await
                .expect("value");
            assert_eq!(value, again, "{sql}: the session's value changed");
            drop(c);
            cluster.wait_replicas_caught_up();
            let on = |server: &common::cluster::Server| {
                server.sql(&format!("SELECT next_not_cached_value FROM {seq}"))
            };
            let master = on(&cluster.master);
            for r in &cluster.replicas {
                assert_eq!(on(r), master, "{sql}: a replica's sequence moved on its own");
            }
            positions.push((master, value));
        }
        assert_eq!(
            positions[0], positions[1],
            "case {i} `{set}`: direct (sequence position, value) vs through sluice"
        );
    }
    still_serves(&s).await;
}

/// Wait until a new session's read that names no table reaches a replica (the
/// probes see the replicas healthy and caught up).
async fn replicas_serve_reads(s: &Sluice, master_id: &str) {
    let mut c = try_connect(opts(s.port, APP_USER, APP_PASSWORD))
        .await
        .expect("connect");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let id: Option<String> = c.query_first("SELECT @@server_id").await.expect("read");
        if id.as_deref() != Some(master_id) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "reads never reached a replica:\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------
// 9. Accept errors back off
// ---------------------------------------------------------------------------------------

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime")
}

/// Out of file descriptors (a hard limit of 64, sockets that fill it), every accept
/// fails with EMFILE while connections wait in the backlog: the accept loops of the
/// client port and of the admin endpoint must wait between attempts, not spin, and
/// sluice must serve logins again once descriptors are free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_errors_back_off_when_descriptors_run_out() {
    use common::cluster::free_port;
    let cluster = shared_cluster();
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, admin) = (free_port(), free_port());
    let config = dir.path().join("sluice.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\n{}\
             limits:\n  max_unauthenticated: 1000\n  max_unauthenticated_per_address: 1000\n  \
             handshake_timeout: 30s\nfreshness:\n  mode: \"off\"\n",
            Sluice::config_for(cluster)
        ),
    )
    .expect("config");
    let log = std::fs::File::create(dir.path().join("sluice.log")).expect("log");
    let mut child = std::process::Command::new("prlimit")
        .arg("--nofile=64:64")
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start sluice under prlimit");
    let pid = child.id();
    let read_log = || std::fs::read_to_string(dir.path().join("sluice.log")).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sluice did not start:\n{}", read_log());
        std::thread::sleep(Duration::from_millis(100));
    }
    // More idle sockets than descriptors, on both ports.
    let mut idle = Vec::new();
    for p in [port, admin] {
        for _ in 0..80 {
            if let Ok(s) = TcpStream::connect_timeout(&([127, 0, 0, 1], p).into(), Duration::from_secs(1)) {
                idle.push(s);
            }
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(pid) - before;
    // A spinning loop takes a whole core (300 ticks in 3 s); backing off, a few.
    assert!(
        used < 90,
        "sluice used {used}/300 ticks of CPU while out of descriptors"
    );
    // The descriptors did run out, on both ports.
    let log = read_log();
    assert!(
        log.contains("accept failed") && log.contains("admin endpoint: accept failed"),
        "no accept failure while out of descriptors:\n{log}"
    );
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match try_connect(opts(port, APP_USER, APP_PASSWORD)).await {
            Ok(mut c) => {
                let one: Option<i64> = c.query_first("SELECT 1").await.expect("SELECT 1");
                assert_eq!(one, Some(1));
                break;
            }
            Err(e) => assert!(
                Instant::now() < deadline,
                "no login after the sockets closed: {e}\n{}",
                read_log()
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------------------------------
// 10. The query log never prints passwords
// ---------------------------------------------------------------------------------------

/// `log.sql_log` logs each rewritten statement on a sharded table, parameters bound
/// into it; a statement that mentions a password is logged without its text, whether
/// the value came as a literal or as a parameter of a prepared statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_log_never_prints_password_values() {
    let cluster = shared_cluster();
    let db = unique_name("sqllog");
    let s = Sluice::start_for(
        cluster,
        &format!(
            // causal: the test reads its own writes (mode off let the read reach a replica
            // that had not applied them yet).
            "log:\n  level: warn\n  sql_log: true\nfreshness:\n  mode: causal\nsharding:\n  tables: [\"{db}.pr.tid.4\"]\n"
        ),
    );
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut c = try_connect(opts(s.port, APP_USER, APP_PASSWORD).db_name(Some(db.clone())))
        .await
        .expect("connect");
    c.query_drop("CREATE TABLE pr (id BIGINT PRIMARY KEY, tid BIGINT NOT NULL, password VARCHAR(64))")
        .await
        .expect("create pr");
    c.exec_drop(
        "INSERT INTO pr (id, tid, password) VALUES (?, ?, ?)",
        (1, 1, "hunter2-param-secret"),
    )
    .await
    .expect("prepared insert");
    c.query_drop("UPDATE pr SET password = 'hunter3-literal-secret' WHERE tid = 1")
        .await
        .expect("update");
    // "password" only in a comment, which the rewritten part no longer has.
    c.query_drop(
        "UPDATE pr SET id = id WHERE tid = 1 AND 'hunter4-comment-secret' <> '' /* password reset */",
    )
    .await
    .expect("update with a comment");
    let ids: Vec<i64> = c
        .exec("SELECT id FROM pr WHERE tid = ?", (1,))
        .await
        .expect("select");
    assert_eq!(ids, vec![1]);
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = s.log();
        let lines: Vec<&str> = log.lines().filter(|l| l.contains("sluice::sql_log")).collect();
        // The SELECT is logged (the log is on) ...
        if lines.iter().any(|l| l.contains("SELECT") && l.contains("pr_1")) {
            assert!(!log.contains("hunter"), "a password value in the log:\n{log}");
            // ... and the three writes are, without their text.
            let hidden = lines
                .iter()
                .filter(|l| l.contains("may contain a password"))
                .count();
            assert!(hidden >= 3, "{hidden} hidden statements:\n{log}");
            break;
        }
        assert!(Instant::now() < deadline, "the SELECT was not logged:\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// 11. Prepared statements per session are capped
// ---------------------------------------------------------------------------------------

/// COM_STMT_PREPARE of `sql` on `c`: the statement id, or the ERR frame.
fn raw_prepare(c: &mut RawConn, sql: &str) -> Result<u32, Frame> {
    let mut p = vec![0x16];
    p.extend_from_slice(sql.as_bytes());
    c.write(0, &p);
    match c.read() {
        // `DO n` has no parameters and no columns: the OK is the whole answer.
        Frame::Packet(_, p) if p.first() == Some(&0x00) && p.len() >= 5 => {
            Ok(u32::from_le_bytes([p[1], p[2], p[3], p[4]]))
        }
        other => Err(other),
    }
}

/// A session may hold 1,024 prepared statements (each costs memory in sluice and a
/// statement slot on a server): one more gets MariaDB's answer at
/// max_prepared_stmt_count (1461, SQLSTATE 42000); closing one frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_per_session_are_capped() {
    let s = plain_sluice();
    let mut c = RawConn::connect(s.port);
    assert!(c.login(APP_USER, APP_PASSWORD).is_ok());
    let mut ids = Vec::new();
    for i in 0..1024 {
        ids.push(raw_prepare(&mut c, &format!("DO {i}")).unwrap_or_else(|f| panic!("prepare {i}: {f:?}")));
    }
    let refused = raw_prepare(&mut c, "DO 1024").expect_err("one more than the cap");
    let (code, state, message) = refused.err().unwrap_or_else(|| panic!("{refused:?}"));
    assert_eq!((code, state.as_str()), (1461, "42000"), "{message}");
    assert!(message.contains("max_prepared_stmt_count"), "{message}");
    // COM_STMT_CLOSE (no answer), then there is room for one more.
    let mut close = vec![0x19];
    close.extend_from_slice(&ids[0].to_le_bytes());
    c.write(0, &close);
    raw_prepare(&mut c, "DO 1024").unwrap_or_else(|f| panic!("after a close: {f:?}"));
    // The session itself still works.
    assert!(c.query("SELECT 1").err().is_none());
    still_serves(s).await;
}
