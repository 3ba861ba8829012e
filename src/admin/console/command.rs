//! The console's commands as data, and their parser: pure, so every
//! malformed input is checked here without a socket.
//!
//! Grammar (keywords in any case, a trailing `;` allowed):
//! `SHOW BACKENDS|POOLS|SESSIONS|STATE|TOPOLOGY|WARNINGS`,
//! `MASTER 'host:port' [GROUP g]`,
//! `PAUSE [WRITES] [GROUP g] [WAIT n]`, `RESUME [GROUP g]`,
//! `DRAIN BACKEND 'host:port' [WAIT n]`, `ENABLE BACKEND 'host:port'`,
//! `MAINTENANCE BACKEND 'host:port' [AFTER n]`, `KILL [SESSION] n`, `RELOAD`,
//! and what the `mariadb` CLI and drivers send on connect
//! (`select @@version_comment limit 1`, `SELECT DATABASE()`, `SET NAMES ...`,
//! `SET autocommit=...`). A new command is one arm in [`parse`] and one in
//! `Console::execute`.

use std::time::Duration;

/// What a view lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Backends,
    Pools,
    Sessions,
    State,
    Topology,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Show(View),
    /// `SHOW WARNINGS` (the CLI asks after an error): always empty.
    Warnings,
    Pause {
        writes: bool,
        group: Option<String>,
        wait: Option<Duration>,
    },
    Resume {
        group: Option<String>,
    },
    Drain {
        addr: String,
        wait: Option<Duration>,
    },
    Enable {
        addr: String,
    },
    Maintenance {
        addr: String,
        after: Duration,
    },
    Kill {
        session: u32,
    },
    Reload,
    /// `MASTER 'host:port' [GROUP g]`: make that server the group's master
    /// once it is seen writable (`crate::follow`).
    Master {
        addr: String,
        group: Option<String>,
    },
    /// `select @@version_comment limit 1` and friends: one text value.
    Value {
        name: &'static str,
        value: Option<&'static str>,
    },
    /// `SET NAMES ...`, `SET autocommit=...`: answered OK, nothing changes
    /// (the console speaks utf8mb4 and has no transactions).
    Noop,
}

impl Command {
    /// Only reads: what a `monitor` user may run.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            Command::Show(_) | Command::Warnings | Command::Value { .. } | Command::Noop
        )
    }

    /// The `command` label of `sluice_admin_commands_total` and the audit log.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Show(View::Backends) => "show_backends",
            Command::Show(View::Pools) => "show_pools",
            Command::Show(View::Sessions) => "show_sessions",
            Command::Show(View::State) => "show_state",
            Command::Show(View::Topology) => "show_topology",
            Command::Warnings | Command::Value { .. } | Command::Noop => "client",
            Command::Pause { .. } => "pause",
            Command::Resume { .. } => "resume",
            Command::Drain { .. } => "drain",
            Command::Enable { .. } => "enable",
            Command::Maintenance { .. } => "maintenance",
            Command::Kill { .. } => "kill",
            Command::Reload => "reload",
            Command::Master { .. } => "master",
        }
    }
}

/// The list of commands, for error messages.
pub const KNOWN: &str = "SHOW BACKENDS|POOLS|SESSIONS|STATE|TOPOLOGY, MASTER 'host:port' [GROUP g], PAUSE [WRITES] [GROUP g] [WAIT n], \
                         RESUME [GROUP g], DRAIN BACKEND 'host:port' [WAIT n], ENABLE BACKEND \
                         'host:port', MAINTENANCE BACKEND 'host:port' [AFTER n], KILL SESSION n, RELOAD";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
}

/// Split into words and quoted strings ('...' or "...", `\` escapes the
/// next character); `;` ends the statement, trailing blanks allowed.
fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == ';' {
            chars.next();
            if chars.any(|c| !c.is_whitespace() && c != ';') {
                return Err("one command at a time: text follows `;`".into());
            }
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(format!("unterminated string: a closing {c} is missing")),
                    Some('\\') => s.extend(chars.next()),
                    Some(q) if q == c => break,
                    Some(x) => s.push(x),
                }
            }
            out.push(Token::Quoted(s));
        } else {
            let mut w = String::new();
            while let Some(&x) = chars.peek() {
                if x.is_whitespace() || x == ';' || x == '\'' || x == '"' {
                    break;
                }
                w.push(x);
                chars.next();
            }
            out.push(Token::Word(w));
        }
    }
    Ok(out)
}

struct Words {
    t: Vec<Token>,
    at: usize,
}

impl Words {
    /// The next token if it is the keyword `k` (any case): consumed.
    fn eat(&mut self, k: &str) -> bool {
        match self.t.get(self.at) {
            Some(Token::Word(w)) if w.eq_ignore_ascii_case(k) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    fn next_any(&mut self, what: &str) -> Result<String, String> {
        let t = self.t.get(self.at).cloned();
        self.at += 1;
        match t {
            Some(Token::Word(w)) | Some(Token::Quoted(w)) => Ok(w),
            None => Err(format!("{what} is missing")),
        }
    }

    fn quoted(&mut self, what: &str) -> Result<String, String> {
        match self.t.get(self.at).cloned() {
            Some(Token::Quoted(s)) => {
                self.at += 1;
                Ok(s)
            }
            _ => Err(format!("{what} must be quoted, e.g. '127.0.0.1:3306'")),
        }
    }

    fn seconds(&mut self, what: &str) -> Result<Duration, String> {
        let w = self.next_any(what)?;
        let n: f64 = w
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && (0.0..=86_400.0).contains(n))
            .ok_or_else(|| format!("{what} must be a number of seconds from 0 to 86400, not `{w}`"))?;
        Ok(Duration::from_secs_f64(n))
    }

    fn end(&self) -> Result<(), String> {
        match self.t.get(self.at) {
            None => Ok(()),
            Some(Token::Word(w)) | Some(Token::Quoted(w)) => Err(format!("unexpected `{w}`")),
        }
    }
}

/// Parse one console statement; the error is a sentence for the client.
pub fn parse(text: &str) -> Result<Command, String> {
    let mut w = Words {
        t: tokens(text)?,
        at: 0,
    };
    let first = match w.t.first() {
        Some(Token::Word(f)) => f.to_ascii_uppercase(),
        Some(Token::Quoted(_)) => return Err(format!("a command starts with a keyword; known: {KNOWN}")),
        None => return Err("empty statement".into()),
    };
    w.at = 1;
    let cmd = match first.as_str() {
        "SHOW" => {
            let what = w.next_any("what to show")?.to_ascii_uppercase();
            match what.as_str() {
                "BACKENDS" => Command::Show(View::Backends),
                "POOLS" => Command::Show(View::Pools),
                "SESSIONS" => Command::Show(View::Sessions),
                "STATE" => Command::Show(View::State),
                "TOPOLOGY" => Command::Show(View::Topology),
                "WARNINGS" => Command::Warnings,
                _ => return Err(format!("unknown SHOW `{what}`; known: {KNOWN}")),
            }
        }
        "PAUSE" => {
            let writes = w.eat("WRITES");
            let group = if w.eat("GROUP") {
                Some(w.next_any("GROUP's name")?)
            } else {
                None
            };
            let wait = if w.eat("WAIT") {
                Some(w.seconds("WAIT")?)
            } else {
                None
            };
            Command::Pause { writes, group, wait }
        }
        "RESUME" => Command::Resume {
            group: if w.eat("GROUP") {
                Some(w.next_any("GROUP's name")?)
            } else {
                None
            },
        },
        "DRAIN" | "ENABLE" | "MAINTENANCE" => {
            if !w.eat("BACKEND") {
                return Err(format!("{first} BACKEND 'host:port' is the form"));
            }
            let addr = w.quoted("the backend's address")?;
            match first.as_str() {
                "DRAIN" => Command::Drain {
                    addr,
                    wait: if w.eat("WAIT") {
                        Some(w.seconds("WAIT")?)
                    } else {
                        None
                    },
                },
                "ENABLE" => Command::Enable { addr },
                _ => Command::Maintenance {
                    addr,
                    after: if w.eat("AFTER") {
                        w.seconds("AFTER")?
                    } else {
                        Duration::ZERO
                    },
                },
            }
        }
        "KILL" => {
            let _ = w.eat("SESSION") || w.eat("CONNECTION");
            let n = w.next_any("the session id")?;
            let session = n
                .parse()
                .map_err(|_| format!("the session id must be a number, not `{n}`"))?;
            Command::Kill { session }
        }
        "RELOAD" => Command::Reload,
        "MASTER" => {
            let addr = w.quoted("the new master's address")?;
            let group = if w.eat("GROUP") {
                Some(w.next_any("GROUP's name")?)
            } else {
                None
            };
            Command::Master { addr, group }
        }
        "SELECT" => return client_select(text),
        "SET" => {
            let what = w.next_any("what to set")?.to_ascii_lowercase();
            if what == "names" || what == "character" || what.starts_with("autocommit") {
                return Ok(Command::Noop);
            }
            return Err(format!(
                "the console has no settings: only SET NAMES and SET autocommit are answered; known \
                 commands: {KNOWN}"
            ));
        }
        _ => return Err(format!("unknown command `{first}`; known: {KNOWN}")),
    };
    w.end()?;
    Ok(cmd)
}

/// The SELECTs clients send on their own.
fn client_select(text: &str) -> Result<Command, String> {
    let norm: String = text
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    Ok(match norm.as_str() {
        "select @@version_comment limit 1" | "select @@version_comment" => Command::Value {
            name: "@@version_comment",
            value: Some("sluice operator console"),
        },
        "select database()" => Command::Value {
            name: "DATABASE()",
            value: None,
        },
        _ => {
            return Err(format!(
                "the console answers no queries (only the SELECTs clients send on connect); known \
                 commands: {KNOWN}"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("show backends;"), Ok(Command::Show(View::Backends)));
        assert_eq!(
            parse("PAUSE WRITES GROUP main WAIT 2.5"),
            Ok(Command::Pause {
                writes: true,
                group: Some("main".into()),
                wait: Some(Duration::from_millis(2500)),
            })
        );
        assert_eq!(
            parse("pause"),
            Ok(Command::Pause {
                writes: false,
                group: None,
                wait: None
            })
        );
        assert_eq!(
            parse("DRAIN BACKEND '127.0.0.1:3307' WAIT 5"),
            Ok(Command::Drain {
                addr: "127.0.0.1:3307".into(),
                wait: Some(Duration::from_secs(5)),
            })
        );
        assert_eq!(
            parse("maintenance backend \"h:1\" after 3"),
            Ok(Command::Maintenance {
                addr: "h:1".into(),
                after: Duration::from_secs(3)
            })
        );
        assert_eq!(parse("KILL SESSION 12"), Ok(Command::Kill { session: 12 }));
        assert_eq!(parse("kill 12"), Ok(Command::Kill { session: 12 }));
        assert_eq!(parse("SET NAMES utf8mb4"), Ok(Command::Noop));
        assert_eq!(parse("SET autocommit=0"), Ok(Command::Noop));
        assert!(matches!(
            parse("select  @@version_comment limit 1"),
            Ok(Command::Value { .. })
        ));
        assert!(parse("SHOW BACKENDS").is_ok_and(|c| c.reads_only()));
        assert!(parse("PAUSE").is_ok_and(|c| !c.reads_only()));
    }

    #[test]
    fn bad_input_gets_a_sentence() {
        for (text, says) in [
            ("", "empty"),
            ("FROB", "unknown command `FROB`"),
            ("SHOW TABLES", "unknown SHOW"),
            ("PAUSE WAIT", "WAIT is missing"),
            ("PAUSE WAIT -1", "from 0 to 86400"),
            ("PAUSE WAIT nan", "from 0 to 86400"),
            ("DRAIN 'a:1'", "DRAIN BACKEND"),
            ("DRAIN BACKEND a:1", "must be quoted"),
            ("DRAIN BACKEND 'a:1", "unterminated"),
            ("KILL SESSION x", "must be a number"),
            ("KILL SESSION 99999999999", "must be a number"),
            ("RELOAD now", "unexpected `now`"),
            ("SHOW STATE; DROP", "one command at a time"),
            ("SELECT 1", "answers no queries"),
            ("SET GLOBAL x=1", "no settings"),
            ("'x'", "starts with a keyword"),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x: u32 = 7;
        for _ in 0..2000 {
            let len = (x % 40) as usize;
            let s: String = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    char::from(b" 'A\"\\;KILLPAUSEWAIT0123456789.-"[(x >> 16) as usize % 31])
                })
                .collect();
            let _ = parse(&s);
        }
    }
}
