//! The admin HTTP endpoint: /metrics, /healthz, /readyz (hyper 1), and
//! `POST /reload` (hot reload of the configuration file: 200 with what
//! changed, 400 with the file's error and the running configuration kept).
//!
//! Protection (see docs/accounts.md, Threat model): the reads stay open, as Prometheus
//! expects; every other method needs the admin token (`Authorization:
//! Bearer TOKEN`), so a cross-site request from a browser cannot reload
//! sluice; a `Host` header that names anything but an IP address,
//! `localhost` or `admin.allowed_hosts` is refused (DNS rebinding). At most
//! [`MAX_CONNECTIONS`] connections at once, each with a deadline for its
//! request headers and a lifetime, so idle or half-sent requests cannot pile
//! up.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tracing::{debug, warn};

use crate::config::AdminConfig;
use crate::frontend::Shared;

use super::console::Console;

/// Admin connections at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A request's headers must arrive within this time.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is closed after this long, idle keep-alive or not.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

pub async fn serve(listener: TcpListener, console: Arc<Console>) {
    super::accept_limited(listener, MAX_CONNECTIONS, "admin endpoint", |stream, peer| {
        let console = console.clone();
        async move {
            let peer = peer.to_string();
            let svc = service_fn(move |req| handle(req, console.clone(), peer.clone()));
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), svc);
            match tokio::time::timeout(CONNECTION_LIFETIME, conn).await {
                Ok(Err(e)) => debug!(error = %e, "admin http connection"),
                Ok(Ok(())) => {}
                Err(_) => debug!("admin http connection: lifetime reached"),
            }
        }
    })
    .await
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

/// Is `host` (a Host header: name or address, optional port) one sluice
/// answers to? IP addresses cannot be rebound; names must be `localhost`
/// or listed in `admin.allowed_hosts`.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [v6]:port
        return rest
            .split_once(']')
            .is_some_and(|(ip, port)| ip.parse::<std::net::Ipv6Addr>().is_ok() && valid_port(port));
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if !port.is_empty() && port.parse::<u16>().is_ok() => name,
            Some(_) => return false,
            None => host,
        }
    };
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    let name = name.to_ascii_lowercase();
    name == "localhost" || allowed.contains(&name)
}

fn valid_port(suffix: &str) -> bool {
    match suffix.strip_prefix(':') {
        None => suffix.is_empty(),
        Some(p) => !p.is_empty() && p.parse::<u16>().is_ok(),
    }
}

/// Constant-time comparison of the presented and the expected token.
fn token_matches(presented: &[u8], expected: &[u8]) -> bool {
    presented.len() == expected.len()
        && presented
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Why a request is refused before it is served, if it is.
fn refusal(req: &Request<Incoming>, admin: &AdminConfig) -> Option<Response<Full<Bytes>>> {
    if let Some(host) = req.headers().get(hyper::header::HOST) {
        let ok = host.to_str().is_ok_and(|h| host_allowed(h, &admin.allowed_hosts));
        if !ok {
            return Some(text(
                StatusCode::MISDIRECTED_REQUEST,
                "unexpected Host header: use an IP address or localhost, or list the name in admin.allowed_hosts\n"
                    .into(),
            ));
        }
    }
    // The console's views (`/v1/`) show sessions and addresses: token too.
    if matches!(*req.method(), Method::GET | Method::HEAD) && !req.uri().path().starts_with("/v1/") {
        return None;
    }
    let expected = match admin.expected_token() {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Some(text(
                StatusCode::FORBIDDEN,
                format!(
                    "{} {} needs the admin token (it changes sluice's state or shows its sessions), but none is set: \
                     set admin.token or admin.token_file (or {}), or reload with SIGHUP\n",
                    req.method(),
                    req.uri().path(),
                    crate::config::ADMIN_TOKEN_ENV
                ),
            ))
        }
        Err(e) => {
            warn!(error = %e, "admin token unavailable");
            return Some(text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the admin token cannot be read (see sluice's log)\n".into(),
            ));
        }
    };
    let presented = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
    if presented.is_some_and(|p| token_matches(p, expected.as_bytes())) {
        return None;
    }
    let mut r = text(
        StatusCode::UNAUTHORIZED,
        "this request needs the admin token: send `Authorization: Bearer TOKEN`\n".into(),
    );
    r.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    Some(r)
}

async fn handle(
    req: Request<Incoming>,
    console: Arc<Console>,
    peer: String,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (shared, reloader) = (&console.shared, &console.reloader);
    if let Some(refused) = refusal(&req, &shared.runtime().config.admin) {
        return Ok(refused);
    }
    // /v1/topology, /v1/master (crate::follow::http).
    let (method, path, query) = (req.method().as_str(), req.uri().path(), req.uri().query());
    if let Some(a) = crate::follow::http::handle(&console.follower, method, path, query).await {
        let mut r = text(StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK), a.body);
        if a.json {
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
        }
        return Ok(r);
    }
    Ok(match req.uri().path() {
        p if p.starts_with("/v1/") => {
            super::v1::handle(req.method(), p, req.uri().query(), &peer, &console).await
        }
        "/metrics" => {
            let mut r = text(StatusCode::OK, shared.metrics.render());
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            r
        }
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => readyz(shared).await,
        "/reload" if req.method() == Method::POST => match crate::reload::reload(reloader).await {
            Ok(summary) => text(StatusCode::OK, format!("{summary}\n")),
            Err(e) => text(StatusCode::BAD_REQUEST, format!("{e}\n")),
        },
        "/reload" => text(StatusCode::METHOD_NOT_ALLOWED, "use POST /reload\n".into()),
        _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
    })
}

/// 200 when sluice may get new clients, 503 with the reason otherwise
/// (`ready.rs`).
async fn readyz(shared: &Shared) -> Response<Full<Bytes>> {
    match super::ready::check(shared).await {
        Ok(()) => text(StatusCode::OK, "ready\n".into()),
        Err(why) => text(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_cannot_be_rebound_or_are_listed() {
        let listed = ["sluice.internal".to_owned()];
        for ok in [
            "127.0.0.1",
            "127.0.0.1:9033",
            "10.1.2.3:80",
            "[::1]:9033",
            "[::1]",
            "localhost",
            "LOCALHOST:9033",
            "sluice.internal:9033",
        ] {
            assert!(host_allowed(ok, &listed), "{ok}");
        }
        for bad in [
            "evil.example:9033",
            "127.0.0.1.nip.io",
            "localhost.evil.example",
            "127.0.0.1:port",
            "[::1]x",
            "",
            "sluice.internal.evil",
        ] {
            assert!(!host_allowed(bad, &listed), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(token_matches(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!token_matches(b"0123456789abcde", b"0123456789abcdef"));
        assert!(!token_matches(b"", b"0123456789abcdef"));
        assert!(!token_matches(b"0123456789abcdeX", b"0123456789abcdef"));
    }
}
