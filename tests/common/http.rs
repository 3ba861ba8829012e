//! A minimal HTTP client for sluice's admin endpoint (no extra dependency).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The admin token every sluice started by the harness gets through its
/// environment (unless its configuration sets one), sent by [`http_post`].
pub const TEST_ADMIN_TOKEN: &str = "test-admin-token-5f1c9a";
/// sluice's environment variable for the admin token.
pub const ADMIN_TOKEN_ENV: &str = "SLUICE_ADMIN_TOKEN";

/// GET `path` from `127.0.0.1:port` (HTTP/1.0, so no chunked encoding):
/// (status, body).
pub fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    request(port, "GET", path)
}

/// POST an empty body to `path` on `127.0.0.1:port`: (status, body).
pub fn http_post(port: u16, path: &str) -> Result<(u16, String), String> {
    request(port, "POST", path)
}

fn request(port: u16, method: &str, path: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect :{port}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TEST_ADMIN_TOKEN}\r\nContent-Length: 0\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .map_err(|e| format!("read :{port}{path}: {e}"))?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no HTTP header end from :{port}{path}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("bad status line from :{port}{path}: {head}"))?;
    Ok((status, body.to_owned()))
}

/// The value of one sample of sluice's /metrics, e.g.
/// `metric(port, "sluice_replica_healthy{group=\"main\",replica=\"replica0\"}")`
/// (the series exactly as exported: name and labels).
pub fn metric(port: u16, series: &str) -> Option<f64> {
    let (_, body) = http_get(port, "/metrics").ok()?;
    sample(&body, series)
}

/// The value of `series` (name and labels, exactly as exported) in a
/// /metrics body.
pub fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}
