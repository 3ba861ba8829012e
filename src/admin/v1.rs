//! The console over HTTP (`/v1/`), with the admin token for every method:
//! the same commands and the same rows as the SQL console (`console/`), as
//! JSON. `GET /v1/backends|pools|sessions|state`; `POST /v1/pause?writes=1&
//! group=g&wait=5s`, `POST /v1/resume?group=g`, `POST /v1/backends/{addr}/
//! drain?wait=5s|enable|maintenance?after=5s`, `DELETE /v1/sessions/{id}`,
//! `POST /v1/reload`.

use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Response, StatusCode};

use crate::config::ConsoleRole;
use crate::protocol::consts::errcode;

use super::console::table::json_str;
use super::console::{Command, Console, Outcome, View, Who};

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn message(status: StatusCode, key: &str, code: Option<u16>, text: &str) -> Response<Full<Bytes>> {
    let mut body = String::from("{");
    if let Some(c) = code {
        body.push_str(&format!("\"code\": {c}, "));
    }
    json_str(&mut body, key);
    body.push_str(": ");
    json_str(&mut body, text);
    body.push_str("}\n");
    json(status, body)
}

/// `%XX` escapes decoded (lossy); `+` stays as is.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn param(query: Option<&str>, key: &str) -> Option<String> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| unescape(v))
}

/// `5s`, `250ms`, or a bare number of seconds.
fn seconds(query: Option<&str>, key: &str) -> Result<Option<Duration>, String> {
    let Some(v) = param(query, key) else {
        return Ok(None);
    };
    if let Ok(n) = v.parse::<f64>() {
        if n.is_finite() && (0.0..=86_400.0).contains(&n) {
            return Ok(Some(Duration::from_secs_f64(n)));
        }
    }
    crate::config::parse_duration(&v)
        .map(Some)
        .map_err(|e| format!("{key}={v}: {e}"))
}

fn route(method: &Method, path: &str, query: Option<&str>) -> Result<Command, (StatusCode, String)> {
    let bad = |e: String| (StatusCode::BAD_REQUEST, e);
    let rest = path.trim_start_matches("/v1/");
    let get = *method == Method::GET || *method == Method::HEAD;
    let post = *method == Method::POST;
    Ok(match rest.split('/').collect::<Vec<_>>().as_slice() {
        ["backends"] if get => Command::Show(View::Backends),
        ["pools"] if get => Command::Show(View::Pools),
        ["sessions"] if get => Command::Show(View::Sessions),
        ["state"] if get => Command::Show(View::State),
        ["pause"] if post => Command::Pause {
            writes: param(query, "writes").is_some_and(|v| v == "1" || v == "true"),
            group: param(query, "group"),
            wait: seconds(query, "wait").map_err(bad)?,
        },
        ["resume"] if post => Command::Resume {
            group: param(query, "group"),
        },
        ["reload"] if post => Command::Reload,
        ["backends", addr, action] if post => {
            let addr = unescape(addr);
            match *action {
                "drain" => Command::Drain {
                    addr,
                    wait: seconds(query, "wait").map_err(bad)?,
                },
                "enable" => Command::Enable { addr },
                "maintenance" => Command::Maintenance {
                    addr,
                    after: seconds(query, "after").map_err(bad)?.unwrap_or_default(),
                },
                other => {
                    return Err(bad(format!(
                        "unknown backend action `{other}`: drain, enable or maintenance"
                    )))
                }
            }
        }
        ["sessions", id] if *method == Method::DELETE => Command::Kill {
            session: id
                .parse()
                .map_err(|_| bad(format!("session id `{id}` is not a number")))?,
        },
        _ => {
            return Err((
                StatusCode::NOT_FOUND,
                format!(
                    "no {method} {path}: GET /v1/backends|pools|sessions|state, POST /v1/pause, \
                     /v1/resume, /v1/reload, /v1/backends/ADDR/drain|enable|maintenance, DELETE \
                     /v1/sessions/ID"
                ),
            ))
        }
    })
}

/// Answer a `/v1/` request (the token was checked by the caller).
pub async fn handle(
    method: &Method,
    path: &str,
    query: Option<&str>,
    peer: &str,
    console: &Console,
) -> Response<Full<Bytes>> {
    let cmd = match route(method, path, query) {
        Ok(c) => c,
        Err((status, why)) => return message(status, "error", None, &why),
    };
    let who = Who {
        user: "token",
        peer,
        role: ConsoleRole::Admin,
    };
    match console.run(&who, &cmd).await {
        Outcome::Rows(t) => json(StatusCode::OK, t.json()),
        Outcome::Done(text) => message(StatusCode::OK, "message", None, &text),
        Outcome::Failed(e) => {
            let status = match e.code {
                errcode::ER_LOCK_WAIT_TIMEOUT => StatusCode::CONFLICT,
                errcode::ER_NO_SUCH_THREAD => StatusCode::NOT_FOUND,
                errcode::ER_WRONG_ARGUMENTS | errcode::ER_PARSE_ERROR => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            message(status, "error", Some(e.code), &e.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_params() {
        let post = Method::POST;
        assert_eq!(
            route(&post, "/v1/pause", Some("writes=1&group=main&wait=5s")).ok(),
            Some(Command::Pause {
                writes: true,
                group: Some("main".into()),
                wait: Some(Duration::from_secs(5))
            })
        );
        assert_eq!(
            route(&post, "/v1/backends/127.0.0.1%3A3307/drain", Some("wait=2")).ok(),
            Some(Command::Drain {
                addr: "127.0.0.1:3307".into(),
                wait: Some(Duration::from_secs(2))
            })
        );
        assert_eq!(
            route(&Method::GET, "/v1/state", None).ok(),
            Some(Command::Show(View::State))
        );
        assert!(route(&Method::GET, "/v1/pause", None).is_err());
        assert!(route(&post, "/v1/pause", Some("wait=forever")).is_err());
        assert!(route(&Method::DELETE, "/v1/sessions/x", None).is_err());
        assert_eq!(unescape("a%zz%41"), "a%zzA");
    }
}
