//! Server-account helpers shared by the account and privilege tests: what a client
//! sees of a login or a statement, to compare through sluice against the master.

use std::time::{Duration, Instant};

use super::cluster::*;
use mysql_async::prelude::*;
use mysql_async::{Conn, OptsBuilder};

/// The password of the accounts the fixtures create.
pub const PW: &str = "Pw-7x!q";

/// What a client sees of a login or a statement: Ok (with the first column of the
/// first row, as text, for queries) or the server error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Ok(Option<String>),
    Err(u16, String),
}

pub fn seen_err(e: &mysql_async::Error) -> Seen {
    match e {
        mysql_async::Error::Server(s) => Seen::Err(s.code, s.message.clone()),
        other => Seen::Err(0, format!("not a server error: {other}")),
    }
}

pub fn opts(port: u16, user: &str, password: &str, db: Option<&str>) -> OptsBuilder {
    OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .db_name(db)
        .prefer_socket(false)
}

pub fn master_port() -> u16 {
    port_of(&shared_cluster().master.addr())
}

pub fn port_of(addr: &str) -> u16 {
    addr.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port of an address")
}

pub async fn login(port: u16, user: &str, password: &str, db: Option<&str>) -> Result<Conn, Seen> {
    Conn::new(opts(port, user, password, db))
        .await
        .map_err(|e| seen_err(&e))
}

pub async fn run(c: &mut Conn, sql: &str) -> Seen {
    match c.query_first::<mysql_async::Row, _>(sql).await {
        Ok(row) => Seen::Ok(
            row.and_then(|r| r.get_opt::<Option<String>, _>(0))
                .and_then(|v| v.ok())
                .flatten(),
        ),
        Err(e) => seen_err(&e),
    }
}

/// sluice in front of the shared cluster, reading the server's accounts with the
/// `sluice` account (no `users:` at all: `auth.mode` defaults to `server`).
pub fn sluice_with_accounts(extra: &str) -> Sluice {
    let cluster = shared_cluster();
    Sluice::start(&format!(
        "auth:\n  account: {{ user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n{extra}groups:\n{}",
        Sluice::group_yaml("main", cluster)
    ))
}

/// Wait until sluice has read the accounts created by `fixture` (its refresh).
pub async fn until_known(s: &Sluice, user: &str, db: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match login(s.port, user, PW, Some(db)).await {
            Ok(c) => {
                let _ = c.disconnect().await;
                return;
            }
            Err(e) if Instant::now() > deadline => panic!("{user} never accepted by sluice: {e:?}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Time from a change on the server until sluice shows it, polling every 50 ms.
pub async fn until(what: &str, limit: Duration, mut ok: impl AsyncFnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if ok().await {
            let took = start.elapsed();
            println!("{what}: {took:?}");
            return took;
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
