//! `GET /v1/topology` and `POST /v1/master?group=g&addr=host:port` for the
//! admin endpoint (which checks the Host header and, for POST, the admin
//! token before calling these).

use tracing::info;

use super::Follower;

/// An HTTP status and a body (JSON for GET, a sentence for POST).
pub struct Answer {
    pub status: u16,
    pub body: String,
    pub json: bool,
}

fn sentence(status: u16, body: String) -> Answer {
    Answer {
        status,
        body: body + "\n",
        json: false,
    }
}

/// Answer `method path?query`, or `None` when the path is not ours.
pub async fn handle(follower: &Follower, method: &str, path: &str, query: Option<&str>) -> Option<Answer> {
    match (method, path) {
        ("GET" | "HEAD", "/v1/topology") => Some(match serde_json::to_string_pretty(&follower.topology()) {
            Ok(body) => Answer {
                status: 200,
                body: body + "\n",
                json: true,
            },
            Err(e) => sentence(500, format!("cannot encode the topology: {e}")),
        }),
        (_, "/v1/topology") => Some(sentence(405, "use GET /v1/topology".into())),
        ("POST", "/v1/master") => {
            let params = parse_query(query.unwrap_or(""));
            let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
            let Some(addr) = get("addr").filter(|a| !a.is_empty()) else {
                return Some(sentence(
                    400,
                    "POST /v1/master needs addr=host:port (and group=NAME for another group than the first)"
                        .into(),
                ));
            };
            let group = get("group").filter(|g| !g.is_empty());
            let r = follower.set_master(group, addr).await;
            info!(addr, group = group.unwrap_or(""), outcome = ?r, "admin: POST /v1/master");
            Some(match r {
                Ok(done) => sentence(200, done),
                Err(e) => sentence(409, e),
            })
        }
        (_, "/v1/master") => Some(sentence(405, "use POST /v1/master?group=g&addr=host:port".into())),
        _ => None,
    }
}

/// `a=1&b=x%3A2` -> pairs, percent-decoded (`+` is a space).
fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        assert_eq!(
            parse_query("group=main&addr=127.0.0.1%3A3307"),
            vec![
                ("group".into(), "main".into()),
                ("addr".into(), "127.0.0.1:3307".into())
            ]
        );
        assert_eq!(decode("a%2"), "a%2");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%"), "%");
    }
}
