//! Client limits with real clients: `limits.max_client_connections` (ERR 1040 instead of
//! the greeting), `limits.max_packet_size` (ERR 1153), `limits.idle_client_timeout`
//! (closed without a packet, as MariaDB does at `wait_timeout`) and
//! `users[].max_connections` (ERR 1226). Each test checks the exact error MariaDB sends
//! in the same situation, and that the sessions already open keep working.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{shared_cluster, Sluice, APP_PASSWORD, APP_USER, HASH_PASSWORD, HASH_USER, TEST_DB};
use common::http::{http_get, sample};
use common::raw::{Frame, RawConn};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder};

fn opts(s: &Sluice, user: &str, password: &str) -> OptsBuilder {
    OptsBuilder::from_opts(Opts::from_url(&s.url(user, password, TEST_DB)).expect("url")).prefer_socket(false)
}

async fn try_connect(s: &Sluice, user: &str, password: &str) -> Result<Conn, mysql_async::Error> {
    tokio::time::timeout(Duration::from_secs(20), Conn::new(opts(s, user, password)))
        .await
        .expect("connecting through sluice timed out")
}

async fn connect(s: &Sluice) -> Conn {
    try_connect(s, APP_USER, APP_PASSWORD)
        .await
        .unwrap_or_else(|e| panic!("connect through sluice: {e}\n{}", s.log()))
}

async fn select_one(c: &mut Conn) -> Result<i64, mysql_async::Error> {
    c.query_first::<i64, _>("SELECT 1").await.map(|v| v.unwrap_or(0))
}

fn server_error(e: &mysql_async::Error) -> Option<(u16, String, String)> {
    match e {
        mysql_async::Error::Server(s) => Some((s.code, s.state.clone(), s.message.clone())),
        _ => None,
    }
}

/// Connects as `app` once a place is free: until then (10 s at most) every attempt
/// must be refused with `refusal`, and no other error.
async fn connect_once_freed(s: &Sluice, refusal: u16) -> Conn {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match try_connect(s, APP_USER, APP_PASSWORD).await {
            Ok(c) => return c,
            Err(e) if Instant::now() < deadline => {
                assert_eq!(server_error(&e).map(|e| e.0), Some(refusal), "{e:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the place of a closed session was not freed: {e}"),
        }
    }
}

/// A config with `users:` that can carry per-user limits, for the shared cluster.
fn config_with_users(users: &str, extra: &str) -> String {
    format!(
        "users:\n{users}groups:\n{}{extra}",
        Sluice::group_yaml("main", shared_cluster())
    )
}

#[tokio::test]
async fn max_client_connections_answers_1040_instead_of_the_greeting() {
    let s = Sluice::start_for(shared_cluster(), "limits:\n  max_client_connections: 3\n");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect(&s).await);
    }

    // A raw client sees exactly what MariaDB sends beyond its hard connection limit:
    // ERR 1040 in place of the greeting, sequence id 0, no SQLSTATE marker; then EOF.
    let mut raw = RawConn::connect(s.port);
    let first = raw.read();
    assert_eq!(first.seq(), Some(0), "{first:?}");
    assert_eq!(
        first.err(),
        Some((1040, String::new(), "Too many connections".to_owned())),
        "{first:?}"
    );
    assert_eq!(raw.read(), Frame::Closed);

    // A driver reports the server error as such.
    let e = try_connect(&s, APP_USER, APP_PASSWORD)
        .await
        .expect_err("a fourth session must be refused");
    assert_eq!(
        server_error(&e).map(|(code, _, msg)| (code, msg)),
        Some((1040, "Too many connections".to_owned())),
        "{e:?}"
    );

    // The sessions already open are not disturbed.
    for c in &mut held {
        assert_eq!(select_one(c).await.expect("existing session"), 1);
    }
    // A place freed is a place for the next client.
    held.pop().expect("held").disconnect().await.expect("disconnect");
    let mut again = connect_once_freed(&s, 1040).await;
    assert_eq!(select_one(&mut again).await.expect("new session"), 1);

    let (_, body) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    assert!(
        sample(&body, "sluice_client_connections_refused_total").unwrap_or(0.0) >= 2.0,
        "refusals are counted:\n{body}"
    );
}

#[tokio::test]
async fn max_packet_size_answers_1153_like_mariadb() {
    let s = Sluice::start_for(shared_cluster(), "limits:\n  max_packet_size: 1M\n");
    let mut other = connect(&s).await;
    let mut c = connect(&s).await;
    // Just under the limit passes.
    let fits = format!("SELECT LENGTH('{}')", "x".repeat(1000 * 1000));
    assert_eq!(
        c.query_first::<i64, _>(fits)
            .await
            .expect("a packet under the limit"),
        Some(1_000_000)
    );
    let big = format!("SELECT LENGTH('{}')", "x".repeat(2 << 20));
    let e = c
        .query_drop(big)
        .await
        .expect_err("a packet over the limit must fail");
    assert_eq!(
        server_error(&e),
        Some((
            1153,
            "08S01".to_owned(),
            "Got a packet bigger than 'max_allowed_packet' bytes".to_owned()
        )),
        "{e:?}"
    );
    // As with MariaDB, that session is over; the others are not.
    assert!(select_one(&mut c).await.is_err(), "the session must be closed");
    assert_eq!(select_one(&mut other).await.expect("other session"), 1);
    assert_eq!(select_one(&mut connect(&s).await).await.expect("new session"), 1);
}

#[tokio::test]
async fn idle_client_timeout_closes_silent_sessions_only() {
    let s = Sluice::start_for(shared_cluster(), "limits:\n  idle_client_timeout: 1s\n");
    let mut idle = RawConn::connect(s.port);
    assert!(idle.login(APP_USER, APP_PASSWORD).is_ok());
    let mut busy = connect(&s).await;
    let mut driver_idle = connect(&s).await;

    // A session that keeps talking stays; a silent one is closed after 1 s, with
    // nothing sent (MariaDB 10.11 closes at wait_timeout without a packet).
    idle.set_timeout(Duration::from_secs(5));
    let t = Instant::now();
    let idle_reader = std::thread::spawn(move || (idle.read(), t.elapsed()));
    while t.elapsed() < Duration::from_millis(2500) {
        assert_eq!(select_one(&mut busy).await.expect("active session"), 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (frame, after) = idle_reader.join().expect("reader");
    assert_eq!(frame, Frame::Closed, "the idle session gets no packet, only EOF");
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(4),
        "closed after {after:?}"
    );
    // A statement longer than the idle timeout is not idleness.
    let slept: Option<i64> = busy
        .query_first("SELECT SLEEP(1.5)")
        .await
        .expect("a statement longer than the idle timeout");
    assert_eq!(slept, Some(0));
    assert!(
        select_one(&mut driver_idle).await.is_err(),
        "the driver's idle session was closed too"
    );
    let (_, body) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    assert!(
        sample(&body, "sluice_client_idle_timeouts_total").unwrap_or(0.0) >= 2.0,
        "idle closes are counted:\n{body}"
    );
}

#[tokio::test]
async fn per_user_max_connections_answers_1226_and_frees_on_exit() {
    let users = format!(
        "  - {{ name: {APP_USER}, password: {APP_PASSWORD}, max_connections: 2, backend: group }}\n  - {{ name: {HASH_USER}, password: {HASH_PASSWORD}, backend: group }}\n"
    );
    let s = Sluice::start(&config_with_users(&users, ""));
    let mut a = connect(&s).await;
    let mut b = RawConn::connect(s.port);
    assert!(b.login(APP_USER, APP_PASSWORD).is_ok());

    // MariaDB's answer at the same point: ERR 1226 right after the login packet
    // (sequence id 2), SQLSTATE 42000.
    let mut raw = RawConn::connect(s.port);
    let refused = raw.login(APP_USER, APP_PASSWORD);
    assert_eq!(refused.seq(), Some(2), "{refused:?}");
    let expected = (
        1226,
        "42000".to_owned(),
        format!("User '{APP_USER}' has exceeded the 'max_user_connections' resource (current value: 2)"),
    );
    assert_eq!(refused.err(), Some(expected.clone()), "{refused:?}");
    let e = try_connect(&s, APP_USER, APP_PASSWORD)
        .await
        .expect_err("refused through the driver too");
    assert_eq!(server_error(&e), Some(expected), "{e:?}");

    // Other users are not limited by it; the open sessions work.
    let mut other = try_connect(&s, HASH_USER, HASH_PASSWORD)
        .await
        .expect("other user");
    assert_eq!(select_one(&mut other).await.expect("other user"), 1);
    assert_eq!(select_one(&mut a).await.expect("first session"), 1);

    // COM_CHANGE_USER to the limited user counts against it too.
    let change = mysql_async::ChangeUserOpts::default()
        .with_user(Some(APP_USER.to_owned()))
        .with_pass(Some(APP_PASSWORD.to_owned()));
    let e = other
        .change_user(change)
        .await
        .expect_err("change_user beyond the limit");
    assert_eq!(server_error(&e).map(|e| e.0), Some(1226), "{e:?}");

    // A session that ends abruptly (socket dropped, no COM_QUIT) gives its place back.
    drop(b);
    let mut c = connect_once_freed(&s, 1226).await;
    assert_eq!(select_one(&mut c).await.expect("new session"), 1);
    assert_eq!(select_one(&mut a).await.expect("first session"), 1);
}
