//! Configuration: YAML (serde_yaml_ng), unknown keys rejected, errors name the line.
//!
//! CONTRACT (used by the rest of the crate; owned by the config helper):
//! - `Config::load(path) -> Result<Config, ConfigError>`
//! - `Config::from_yaml_str(text, origin_name) -> Result<Config, ConfigError>`
//! - `ConfigError: Display` prints `FILE:LINE:COL: message` when a line is known.
//!
//! How errors get their line: serde_yaml_ng knows the position of a value only
//! while it deserializes it, so every check that can fail on one value (a
//! duration, an address, a hash, a duplicate name, a user with two passwords)
//! runs *inside* deserialization (see `de.rs`), where the error is stamped with
//! the line and column of that value. The consuming `validate(self)` in `raw.rs`
//! then only assembles the [`Config`] and runs checks that span several
//! top-level keys; those are located by finding the top-level key in the text.
//!
//! Adding a setting: add the field to the public struct below (documented, with
//! its default), to the matching `Raw*` struct in `raw.rs` (with a
//! `#[serde(default = ...)]`), and to the example `config/sluice.yaml`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The validated configuration. Built only through `Config::load`/`from_yaml_str`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Client-facing MySQL listener. Default 127.0.0.1:6033.
    pub listen: SocketAddr,
    /// HTTP endpoint for /metrics, /healthz, /readyz. Default 127.0.0.1:9033.
    pub admin_listen: SocketAddr,
    /// SO_REUSEPORT on both listeners, so a new sluice can bind the same
    /// ports before the old one stops (startup only). Default false.
    pub listen_reuseport: bool,
    pub log: LogConfig,
    /// Frontend TLS; `None` = TLS not offered to clients.
    pub tls: Option<TlsConfig>,
    pub users: Vec<User>,
    /// At least one group; the first is the default group for unsharded tables.
    pub groups: Vec<Group>,
    pub backend: BackendSettings,
    /// When a read may go to a replica (section `freshness:`).
    pub freshness: Freshness,
    /// Sharded tables (empty: no sharding).
    pub sharding: Sharding,
    /// Client connection limits and shutdown (section `limits:`).
    pub limits: Limits,
    /// Who may change sluice's state through the admin endpoint (`admin:`).
    pub admin: AdminConfig,
    /// Where client logins are checked: the server's accounts, `users:`, or
    /// both (section `auth:`).
    pub auth: AuthConfig,
    /// The async runtime's threads and scheduler (section `runtime:`).
    pub runtime: RuntimeSettings,
    /// How the configuration file is followed (section `reload:`).
    pub reload: ReloadSettings,
    /// What `/readyz` requires (section `readiness:`).
    pub readiness: Readiness,
    pub topology: follow::TopologySettings, // section `topology:`
}

/// `reload:` — following the configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadSettings {
    /// Reload when the file's content, inode or resolved symlink target
    /// changes (an editor's save, a kubelet's `..data` swap of a ConfigMap
    /// or Secret volume), as SIGHUP does. Default true.
    pub watch: bool,
}

impl Default for ReloadSettings {
    fn default() -> Self {
        ReloadSettings { watch: true }
    }
}

/// `readiness:` — when `/readyz` answers 200 (never while draining).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Every group's master must accept a connection. Default false: a
    /// group is served when its master or one of its replicas is reachable
    /// (a master outage need not take every sluice out of its Service:
    /// reads may still be served).
    pub require_master: bool,
}

/// `runtime:` — the threads that serve the sessions. Read once at startup
/// (a reload cannot change it); optional.
/// (tokio's scheduler knobs `event_interval` and `global_queue_interval`
/// were measured and did not pay: benches/README.md, "Runtime shape".)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeSettings {
    /// Worker threads; `None` (the default): one per CPU the process may
    /// run on (`std::thread::available_parallelism`, which honours
    /// `taskset` and cgroup CPU limits). 1..=1024.
    pub worker_threads: Option<usize>,
    /// `per_core` (the default): sessions on single-threaded runtimes, as
    /// many as `worker_threads` (or one per CPU), each session on one thread
    /// for its life; one more worker thread serves the rest (monitors,
    /// metrics, the listener). `false`: tokio's work-stealing pool of
    /// `worker_threads` serves all. Per core measured 1.11-1.25x the pool's
    /// QPS (benches/README.md, "Runtime per core, with connections that
    /// move").
    pub per_core: bool,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        RuntimeSettings {
            worker_threads: None,
            per_core: true,
        }
    }
}

/// `auth:` — logins with the server's own accounts (read from the master's
/// `mysql.global_priv` with `account`), with `users:`, or both.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// Default `server` when `account` is set, `config` otherwise.
    pub mode: AuthMode,
    /// The account sluice reads the server's accounts with (needs SELECT on
    /// `mysql.global_priv`); `None`: server accounts are not used.
    pub account: Option<AuthAccount>,
    /// How often the accounts are read again. Default 2s. A failed login
    /// also reads them at once (at most once per `refresh / 4`).
    pub refresh: Duration,
    /// Pooled connections one account may hold per backend server; all
    /// accounts together stay within `backend.pool_max`. Default: pool_max.
    pub pool_max_per_account: Option<usize>,
    /// Accounts with a metric label of their own; the others are counted
    /// under `account="other"`. Default 20.
    pub max_account_labels: usize,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::Config,
            account: None,
            refresh: Duration::from_secs(2),
            pool_max_per_account: None,
            max_account_labels: 20,
        }
    }
}

impl AuthConfig {
    /// Are server accounts consulted?
    pub fn server(&self) -> bool {
        matches!(self.mode, AuthMode::Server | AuthMode::Both) && self.account.is_some()
    }

    /// Are `users:` consulted?
    pub fn config(&self) -> bool {
        matches!(self.mode, AuthMode::Config | AuthMode::Both)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Only the server's accounts.
    Server,
    /// Only `users:` (the behaviour before server accounts).
    Config,
    /// `users:` first, then the server's accounts.
    Both,
}

/// `auth.account`: `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthAccount {
    pub user: String,
    pub password: String,
}

impl fmt::Debug for AuthAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthAccount")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// `users[].backend`: the server account a configured user's statements run
/// as (without it, the group's account, as before server accounts).
#[derive(Clone, PartialEq, Eq)]
pub struct BackendAccount {
    pub user: String,
    pub password: String,
}

impl fmt::Debug for BackendAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendAccount")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// `sharding:` — tables split into sub-tables `table_0..table_{N-1}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sharding {
    pub rules: crate::shard::ShardRules,
}

/// `log.format` (defined with the logger that uses it).
pub use crate::logging::LogFormat;

#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    pub format: LogFormat,
    /// An EnvFilter directive such as "info" or "sluice=debug". Default "info".
    pub level: String,
    /// Statements that take at least this long are logged at WARN with their
    /// duration, destination and the start of their text (the slow-query
    /// log). `0s` disables it. Default 1s.
    pub slow_query: Duration,
    /// Query log of sharded statements (Atlas' `sql-log`): each statement
    /// sluice rewrites for a sub-table, its backend and its time, as an INFO
    /// event on the `sluice::sql_log` target. Default off.
    pub sql_log: bool,
    /// Longest SQL text written to a log line (slow-query log, `sql_log`);
    /// longer text is cut and marked. Default 1024 bytes.
    pub max_sql_length: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TlsConfig {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Refuse every login that did not upgrade to TLS (ERR 1045, as MariaDB
    /// answers an account with REQUIRE SSL), so a client with ssl-mode
    /// PREFERRED cannot be downgraded to plaintext. Default false.
    pub require: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub name: String,
    pub credential: Credential,
    /// Sessions this user may hold at once (MariaDB's
    /// `MAX_USER_CONNECTIONS`); 0 = no limit (the default). One more login
    /// gets ERR 1226.
    pub max_connections: u32,
    /// Refuse this user's logins over plaintext (ERR 1045, as MariaDB's
    /// REQUIRE SSL). Default false.
    pub require_tls: bool,
    /// The server account this user's statements run as; `None`: the
    /// group's account.
    pub backend: Option<BackendAccount>,
}

/// `Debug` never shows the secret (configurations may end up in logs).
#[derive(Clone, PartialEq)]
pub enum Credential {
    /// Cleartext password from the config: allows every auth method.
    Password(String),
    /// SHA1(SHA1(password)), decoded from a `*HEX40` mysql_native_password hash.
    NativeHash([u8; 20]),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::Password(_) => f.write_str("Password(<redacted>)"),
            Credential::NativeHash(_) => f.write_str("NativeHash(<redacted>)"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub master: Backend,
    pub replicas: Vec<Backend>,
    pub topology: follow::TopologyMode, // `static` (default) or `follow`
}

/// `Debug` never shows the password.
#[derive(Clone, PartialEq)]
pub struct Backend {
    /// "host:port" as written (resolved at connect time).
    pub addr: String,
    pub user: String,
    pub password: String,
    /// Relative weight among replicas. Default 1.
    pub weight: u32,
    /// This server's own `tls:`; `None` = the shared `backend.tls`
    /// (see [`Config::backend_tls`]).
    pub tls: Option<BackendTls>,
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("addr", &self.addr)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("weight", &self.weight)
            .field("tls", &self.tls)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BackendSettings {
    /// TCP connect + handshake timeout to a backend. Default 2s.
    pub connect_timeout: Duration,
    /// Max pooled connections per backend. Default 256.
    pub pool_max: usize,
    /// Sessions borrow a backend connection per statement (or transaction,
    /// or while they hold state only that connection has) instead of
    /// keeping one for their whole life. Default true.
    pub multiplex: bool,
    /// TLS to every backend without a `tls:` of its own. Default disabled.
    pub tls: BackendTls,
    /// How long a read on a replica may wait for the first byte of its
    /// answer before it is abandoned and retried on the master. Zero (the
    /// default) means no such limit: a read is still abandoned when its
    /// replica is down (see `freshness.fall`).
    pub replica_read_timeout: Duration,
    /// A pooled connection older than this is closed instead of handed to
    /// another session (zero: no limit). The bound on how long a
    /// connection keeps the privileges it logged in with when a change on
    /// the server is not noticed by the account catalog. Default 1h.
    pub max_connection_age: Duration,
}

/// TLS from sluice to one backend server, as the MySQL client's
/// `--ssl-mode`, `--ssl-ca`, `--ssl-cert`, `--ssl-key`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendTls {
    pub mode: BackendTlsMode,
    /// PEM CA certificate(s) the server's certificate must chain to.
    /// Required by `verify_ca` and `verify_identity`.
    pub ca: Option<PathBuf>,
    /// PEM client certificate and key, for servers that require one
    /// (`REQUIRE X509`). Both or neither.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// The name the server's certificate must carry under
    /// `verify_identity`; default the host of `addr`.
    pub server_name: Option<String>,
}

/// `tls.mode` of a backend: MySQL's `--ssl-mode` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendTlsMode {
    /// Plaintext (the default, like ProxySQL and MaxScale).
    #[default]
    Disabled,
    /// TLS when the server offers it, plaintext otherwise; no verification.
    Preferred,
    /// TLS or fail; the certificate is not verified.
    Required,
    /// TLS, and the certificate must chain to `ca` (any name).
    VerifyCa,
    /// TLS, the certificate must chain to `ca` and name the server.
    VerifyIdentity,
}

impl BackendTlsMode {
    /// As written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendTlsMode::Disabled => "disabled",
            BackendTlsMode::Preferred => "preferred",
            BackendTlsMode::Required => "required",
            BackendTlsMode::VerifyCa => "verify_ca",
            BackendTlsMode::VerifyIdentity => "verify_identity",
        }
    }
}

/// Freshness settings: which reads a replica may serve, and the counter
/// table and probes that decide it. Every field has a default (see
/// [`Freshness::default`]), so the whole section is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Freshness {
    /// The guarantee reads get. Default [`FreshnessMode::Causal`].
    pub mode: FreshnessMode,
    /// Schema of the counter table (`<schema>.counters`) on every group's
    /// master; never tracked itself. Default "sluice".
    pub schema: String,
    /// Counter rows per table for writers that bypass sluice: they update
    /// row `CONNECTION_ID() % slots` (sluice's own connections each have
    /// rows of their own above those, see docs/guarantees.md). 1..=1024,
    /// default 16. Used by `sluice triggers install`.
    pub slots: u16,
    /// How often the counters of the master and of each replica are read in
    /// the background. Greater than zero; default 50ms.
    pub probe_interval: Duration,
    /// A probe that takes longer fails, and a failed probe makes its replica
    /// not fresh. Greater than zero; default 500ms.
    pub probe_timeout: Duration,
    /// How long a read may wait for a replica to catch up before it goes to
    /// the master instead. Default 0ms (never wait).
    pub max_wait: Duration,
    /// Consecutive successful probes before a replica that failed one serves
    /// reads again (hysteresis against flapping). At least 1; default 2.
    pub rise: u32,
    /// Consecutive failed probes before a replica is marked down. One failed
    /// probe already keeps new reads away (its counters are no longer
    /// current); once down, reads under way on it are moved to the master
    /// (nothing relayed yet) or cut off with an error, and it needs `rise`
    /// good probes to return. At least 1; default 3.
    pub fall: u32,
    /// New tables of tracked schemas get sluice's triggers at once: after a
    /// CREATE/ALTER/RENAME through sluice, and within one probe after DDL
    /// elsewhere. `None` (default): on when the master account may create
    /// triggers and write the counter table (detected once per monitor).
    pub auto_install: Option<bool>,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness {
            mode: FreshnessMode::Causal,
            schema: "sluice".to_owned(),
            slots: 16,
            probe_interval: Duration::from_millis(50),
            probe_timeout: Duration::from_millis(500),
            max_wait: Duration::ZERO,
            rise: 2,
            fall: 3,
            auto_install: None,
        }
    }
}

/// `freshness.mode`: what a read routed to a replica is guaranteed to see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshnessMode {
    /// Every write committed on the master before the read began, from any
    /// client (master and replica counters are compared for each read).
    Strict,
    /// Every write completed through this sluice before the read began; writes
    /// that bypass sluice within about one `probe_interval`. No probe per read.
    Causal,
    /// No guarantee: plain read/write splitting, reads may be stale.
    Off,
}

impl FreshnessMode {
    /// As written in the configuration: `strict`, `causal`, `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            FreshnessMode::Strict => "strict",
            FreshnessMode::Causal => "causal",
            FreshnessMode::Off => "off",
        }
    }
}

impl Backend {
    /// The same server reached the same way: every setting equal but the
    /// weight (which only steers reads). A reload keeps such a backend's
    /// connections.
    pub fn same_server(&self, other: &Backend) -> bool {
        let weightless = |b: &Backend| Backend {
            weight: 0,
            ..b.clone()
        };
        weightless(self) == weightless(other)
    }
}

impl BackendSettings {
    /// Pools built with either settings behave the same (`multiplex` is a
    /// per-session choice, not a pool setting).
    pub fn pools_equal(&self, other: &BackendSettings) -> bool {
        self.connect_timeout == other.connect_timeout
            && self.max_connection_age == other.max_connection_age
            && self.pool_max == other.pool_max
            && self.tls == other.tls
    }
}

mod admin;
mod de;
mod duration;
mod freshness;
mod limits;
mod sharding;
pub use limits::Limits;
pub mod follow;
mod password;
mod raw;
#[cfg(test)]
mod tests;

pub use admin::{AdminConfig, ConsoleRole, ConsoleUser, ADMIN_TOKEN_ENV};
pub use duration::parse_duration;
pub use password::{format_native_hash, native_password_hash, parse_native_hash};

use std::fmt;
use std::path::Path;

/// A configuration that could not be read or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read at all.
    #[error("{origin}: cannot read the configuration: {source}")]
    Read {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid YAML or not a valid configuration.
    #[error("{origin}:{}{message}", Prefix(.position))]
    Invalid {
        /// The file name (or any name the caller gave the text).
        origin: String,
        /// Where the offending key or value is, when known.
        position: Option<Position>,
        message: String,
    },
}

/// A 1-based line and column in the configuration text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Renders the part between `ORIGIN:` and the message: `LINE:COL: ` or ` `.
struct Prefix<'a>(&'a Option<Position>);

impl fmt::Display for Prefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(p) => write!(f, "{}:{}: ", p.line, p.column),
            None => f.write_str(" "),
        }
    }
}

impl ConfigError {
    /// The 1-based line of the error, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { position, .. } => position.map(|p| p.line),
            ConfigError::Read { .. } => None,
        }
    }

    /// Converts a serde_yaml_ng error, moving its "at line X column Y" into
    /// the `ORIGIN:LINE:COL:` prefix so that editors and humans find it.
    fn from_yaml(origin: &str, text: &str, err: &serde_yaml_ng::Error) -> Self {
        let mut position = err.location().map(|l| Position {
            line: l.line(),
            column: l.column(),
        });
        let mut message = err.to_string();
        if let Some(p) = position {
            let suffix = format!(" at line {} column {}", p.line, p.column);
            if let Some(start) = message.find(&suffix) {
                message.replace_range(start..start + suffix.len(), "");
            }
            if let Some(found) = locate_duplicate_key(text, p, &message) {
                position = Some(found);
            }
        }
        ConfigError::Invalid {
            origin: origin.to_owned(),
            position,
            message,
        }
    }
}

impl Config {
    /// Reads and validates the file at `path`. Relative TLS paths are resolved
    /// against the file's directory, so a config works from any working dir.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            origin: path.display().to_string(),
            source,
        })?;
        Config::from_file_text(path, &text)
    }

    /// [`Config::load`] of `text`, already read from `path`.
    pub fn from_file_text(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let mut config = Config::from_yaml_str(text, &path.display().to_string())?;
        if let Some(dir) = path.parent() {
            if let Some(tls) = config.tls.as_mut() {
                tls.cert = dir.join(&tls.cert);
                tls.key = dir.join(&tls.key);
            }
            config.backend.tls.resolve_paths(dir);
            if let Some(f) = config.admin.token_file.as_mut() {
                *f = dir.join(&*f);
            }
            for group in &mut config.groups {
                for backend in std::iter::once(&mut group.master).chain(&mut group.replicas) {
                    if let Some(tls) = backend.tls.as_mut() {
                        tls.resolve_paths(dir);
                    }
                }
            }
        }
        Ok(config)
    }

    /// The TLS settings sluice uses to reach `backend`: its own `tls:`, else
    /// `backend.tls`.
    pub fn backend_tls<'a>(&'a self, backend: &'a Backend) -> &'a BackendTls {
        backend.tls.as_ref().unwrap_or(&self.backend.tls)
    }

    /// Parses and validates `text`; `origin` names it in error messages.
    /// Paths are kept as written (see [`Config::load`]).
    pub fn from_yaml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        if is_blank_yaml(text) {
            // serde_yaml_ng says "EOF while parsing a value" here: say what is missing.
            return Err(ConfigError::Invalid {
                origin: origin.to_owned(),
                position: None,
                message: "the configuration is empty: at least `users` and `groups` are required".to_owned(),
            });
        }
        let raw: raw::RawConfig =
            serde_yaml_ng::from_str(text).map_err(|e| ConfigError::from_yaml(origin, text, &e))?;
        raw.validate().map_err(|e| ConfigError::Invalid {
            origin: origin.to_owned(),
            position: e.keys.iter().find_map(|key| locate_top_level_key(text, key)),
            message: e.message,
        })
    }
}

impl BackendTls {
    /// Makes relative paths relative to `dir` (the configuration's directory).
    fn resolve_paths(&mut self, dir: &Path) {
        if let Some(ca) = self.ca.as_mut() {
            *ca = dir.join(&*ca);
        }
        if let Some((cert, key)) = self.client_cert.as_mut() {
            *cert = dir.join(&*cert);
            *key = dir.join(&*key);
        }
    }
}

/// True when the text holds no YAML content, only blank lines and comments.
fn is_blank_yaml(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || line.starts_with('#') || line == "---" || line == "..."
    })
}

/// Finds `key:` written at the start of a line (a top-level key in block
/// style, which is how the configuration is written). Used only for checks
/// that span several keys, which cannot be located during deserialization.
fn locate_top_level_key(text: &str, key: &str) -> Option<Position> {
    text.lines().enumerate().find_map(|(index, line)| {
        let rest = line.strip_prefix(key)?;
        let is_key = rest.trim_start().starts_with(':');
        is_key.then_some(Position {
            line: index + 1,
            column: 1,
        })
    })
}

/// serde reports a key given twice ("duplicate field `k`") at the start of
/// its mapping, which may be far away. In block style the mapping's keys
/// all start at the mapping's column: find the second `k:` there.
fn locate_duplicate_key(text: &str, mapping: Position, message: &str) -> Option<Position> {
    let key = message.split("duplicate field `").nth(1)?.split('`').next()?;
    let indent = mapping.column.checked_sub(1)?;
    let mut occurrences = text
        .lines()
        .enumerate()
        .skip(mapping.line.checked_sub(1)?)
        .take_while(|(index, line)| {
            // Leaving the mapping: content that starts left of its keys.
            let content = line.trim_start();
            index + 1 == mapping.line
                || content.is_empty()
                || content.starts_with('#')
                || line.len() - content.len() >= indent
        })
        .filter(|(_, line)| {
            let rest = line.get(indent..).and_then(|rest| rest.strip_prefix(key));
            rest.is_some_and(|rest| rest.trim_start().starts_with(':'))
        });
    occurrences.next()?;
    let (index, _) = occurrences.next()?;
    Some(Position {
        line: index + 1,
        column: mapping.column,
    })
}
