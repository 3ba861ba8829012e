//! `admin:`: the admin HTTP endpoint's token and hosts, and the operator's
//! console (`sql_listen`, `users`).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `admin:` — the admin HTTP endpoint's protection. `/metrics`, `/healthz`
/// and `/readyz` stay open (Prometheus scrapes without credentials); every
/// state-changing request (`POST /reload`) needs the token, sent as
/// `Authorization: Bearer TOKEN`. Without a token (none configured, no
/// `SLUICE_ADMIN_TOKEN` in the environment) such requests are refused:
/// reload with SIGHUP instead.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AdminConfig {
    /// The token, written in the file.
    pub token: Option<String>,
    /// A file holding the token (first line, surrounding blanks ignored),
    /// read on every state-changing request, so it can be rotated without a
    /// reload. Relative to the configuration file.
    pub token_file: Option<PathBuf>,
    /// Host names (besides `localhost` and IP addresses) that requests may
    /// name in their `Host` header; any other name is refused, which defeats
    /// DNS rebinding. Default empty.
    pub allowed_hosts: Vec<String>,
    /// The operator's console (`admin.sql_listen`): MySQL protocol, off by
    /// default. A non-loopback address needs `tls:` (checked at load).
    pub sql_listen: Option<SocketAddr>,
    /// Who may log in to the console (`admin.users`); no default user:
    /// without users every login gets ERR 1045.
    pub users: Vec<ConsoleUser>,
}

/// What a console user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleRole {
    /// Every command.
    Admin,
    /// `SHOW ...` only; anything else gets ERR 1227.
    Monitor,
}

/// One `admin.users` entry: a console login, never a server account.
#[derive(Clone, PartialEq, Eq)]
pub struct ConsoleUser {
    pub name: String,
    /// SHA1(SHA1(password)), from a `*HEX40` mysql_native_password hash.
    pub password_hash: [u8; 20],
    pub role: ConsoleRole,
}

impl fmt::Debug for ConsoleUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsoleUser")
            .field("name", &self.name)
            .field("password_hash", &"<redacted>")
            .field("role", &self.role)
            .finish()
    }
}

/// The environment variable that sets the admin token when neither
/// `admin.token` nor `admin.token_file` is configured.
pub const ADMIN_TOKEN_ENV: &str = "SLUICE_ADMIN_TOKEN";

impl AdminConfig {
    /// The token requests must present, if one is set; an unreadable
    /// `token_file` is an error.
    pub fn expected_token(&self) -> Result<Option<String>, String> {
        if let Some(t) = &self.token {
            return Ok(Some(t.clone()));
        }
        let Some(path) = &self.token_file else {
            return Ok(std::env::var(ADMIN_TOKEN_ENV)
                .ok()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty()));
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("admin.token_file {}: {e}", path.display()))?;
        let token = text.lines().next().unwrap_or("").trim();
        if token.is_empty() {
            return Err(format!("admin.token_file {} is empty", path.display()));
        }
        Ok(Some(token.to_owned()))
    }
}

impl fmt::Debug for AdminConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminConfig")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("token_file", &self.token_file)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("sql_listen", &self.sql_listen)
            .field("users", &self.users)
            .finish()
    }
}

/// One `admin.users` entry as written; checked inside its own mapping, so
/// an error names its line.
#[derive(serde::Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a console user such as { name: ops, password_hash: \"*6BB4...\", role: admin }"
)]
pub(super) struct RawConsoleUser {
    #[serde(deserialize_with = "super::de::parse::<super::de::Name, _>")]
    name: String,
    #[serde(deserialize_with = "super::de::parse::<super::de::NativeHash, _>")]
    password_hash: [u8; 20],
    role: RawRole,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`admin` or `monitor`")]
enum RawRole {
    Admin,
    Monitor,
}

impl super::de::ListItem for RawConsoleUser {
    type Output = ConsoleUser;
    const WHAT: &'static str = "console user";

    fn name(&self) -> &str {
        &self.name
    }

    fn finish(self) -> Result<ConsoleUser, String> {
        Ok(ConsoleUser {
            name: self.name,
            password_hash: self.password_hash,
            role: match self.role {
                RawRole::Admin => ConsoleRole::Admin,
                RawRole::Monitor => ConsoleRole::Monitor,
            },
        })
    }
}

/// `admin.sql_listen` away from loopback without `tls:`: console passwords
/// and commands would cross the network in the clear.
pub(super) fn check_console(admin: &AdminConfig, tls: bool) -> Result<(), String> {
    match admin.sql_listen {
        Some(a) if !a.ip().is_loopback() && !tls => Err(format!(
            "admin.sql_listen {a} is not a loopback address and no `tls:` section is set: \
             the console would take passwords and commands in the clear; listen on 127.0.0.1 \
             or add `tls:`"
        )),
        _ => Ok(()),
    }
}
