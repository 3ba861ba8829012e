//! The configuration as written: serde structs that reject unknown keys.
//! Checks on single values run during deserialization (see `de.rs`); the
//! consuming [`RawConfig::validate`] assembles the public [`Config`].

use super::de::{self, ListItem};
use super::freshness::RawFreshness;
use super::limits::RawLimits;
use super::sharding::RawSharding;
use super::{
    AdminConfig, AuthAccount, AuthConfig, AuthMode, Backend, BackendAccount, BackendSettings, BackendTls,
    BackendTlsMode, Config, Credential, Group, LogConfig, LogFormat, Readiness, ReloadSettings,
    RuntimeSettings, TlsConfig, User,
};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A check that spans several top-level keys. `keys` are the keys to point
/// at, best first (a key may be absent from the text when its default is used).
#[derive(Debug)]
pub(super) struct SemanticError {
    pub keys: &'static [&'static str],
    pub message: String,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of settings (listen, users, groups, ...)"
)]
pub(super) struct RawConfig {
    #[serde(
        default = "default_listen",
        deserialize_with = "de::parse::<de::ListenAddr, _>"
    )]
    listen: SocketAddr,
    #[serde(
        default = "default_admin_listen",
        deserialize_with = "de::parse::<de::ListenAddr, _>"
    )]
    admin_listen: SocketAddr,
    #[serde(default)]
    listen_reuseport: bool,
    #[serde(default)]
    log: RawLog,
    #[serde(default)]
    tls: Option<RawTls>,
    #[serde(default)]
    backend: RawBackendSettings,
    #[serde(default)]
    freshness: RawFreshness,
    #[serde(default)]
    sharding: RawSharding,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    admin: RawAdmin,
    #[serde(default)]
    auth: RawAuth,
    #[serde(default)]
    runtime: RawRuntime,
    #[serde(default)]
    reload: RawReload,
    #[serde(default)]
    readiness: RawReadiness,
    #[serde(default)]
    topology: super::follow::RawTopology,
    #[serde(default, deserialize_with = "de::unique_list::<RawUser, _>")]
    users: Vec<User>,
    #[serde(deserialize_with = "de::unique_list::<RawGroup, _>")]
    groups: Vec<Group>,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 6033))
}

fn default_admin_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9033))
}

impl RawConfig {
    /// Consumes the raw configuration and returns the validated one.
    pub(super) fn validate(self) -> Result<Config, SemanticError> {
        // Port 0 asks the OS for a free port (tests do this): never a clash.
        if self.listen == self.admin_listen && self.listen.port() != 0 {
            return Err(SemanticError {
                keys: &["admin_listen", "listen"],
                message: format!(
                    "admin_listen {} is the same address as listen: use another port",
                    self.admin_listen
                ),
            });
        }
        if self.tls.is_none() {
            if let Some(u) = self.users.iter().find(|u| u.require_tls) {
                return Err(SemanticError {
                    keys: &["users"],
                    message: format!(
                        "user `{}` has require_tls, but TLS is not offered to clients: add a `tls:` section",
                        u.name
                    ),
                });
            }
        }
        let admin: AdminConfig = self.admin.into();
        super::admin::check_console(&admin, self.tls.is_some()).map_err(|message| SemanticError {
            keys: &["admin"],
            message,
        })?;
        let auth = self.auth.resolve()?;
        if auth.mode != AuthMode::Server && self.users.is_empty() {
            return Err(SemanticError {
                keys: &["users", "auth"],
                message: if auth.account.is_some() {
                    "auth.mode is `config` or `both` but `users:` is empty: add users or use mode `server`"
                        .to_owned()
                } else {
                    "no way to log in: add `users:`, or `auth.account` to use the server's accounts"
                        .to_owned()
                },
            });
        }
        let sharding = self.sharding.resolve(&self.groups)?;
        Ok(Config {
            auth,
            listen: self.listen,
            admin_listen: self.admin_listen,
            listen_reuseport: self.listen_reuseport,
            log: self.log.into(),
            tls: self.tls.map(Into::into),
            users: self.users,
            groups: self.groups,
            backend: self.backend.into(),
            freshness: self.freshness.into(),
            sharding,
            limits: self.limits.into(),
            admin,
            runtime: self.runtime.into(),
            reload: ReloadSettings {
                watch: self.reload.watch,
            },
            readiness: Readiness {
                require_master: self.readiness.require_master,
            },
            topology: self.topology.into(),
        })
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { format: text, level: info, slow_query: 1s }"
)]
struct RawLog {
    #[serde(default)]
    format: RawLogFormat,
    #[serde(default = "default_level", deserialize_with = "de::parse::<de::LogLevel, _>")]
    level: String,
    #[serde(
        default = "default_slow_query",
        deserialize_with = "de::parse::<de::AnyDuration, _>"
    )]
    slow_query: Duration,
    #[serde(default)]
    sql_log: bool,
    #[serde(
        default = "default_max_sql_length",
        deserialize_with = "de::bounded::<usize, 16, 1048576, _>"
    )]
    max_sql_length: usize,
}

fn default_max_sql_length() -> usize {
    1024
}

impl Default for RawLog {
    fn default() -> Self {
        RawLog {
            format: RawLogFormat::default(),
            level: default_level(),
            slow_query: default_slow_query(),
            sql_log: false,
            max_sql_length: default_max_sql_length(),
        }
    }
}

fn default_level() -> String {
    "info".to_owned()
}

fn default_slow_query() -> Duration {
    Duration::from_secs(1)
}

impl From<RawLog> for LogConfig {
    fn from(raw: RawLog) -> Self {
        let format = match raw.format {
            RawLogFormat::Text => LogFormat::Text,
            RawLogFormat::Json => LogFormat::Json,
        };
        LogConfig {
            format,
            level: raw.level,
            slow_query: raw.slow_query,
            sql_log: raw.sql_log,
            max_sql_length: raw.max_sql_length,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "lowercase", expecting = "text or json")]
enum RawLogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { cert: server.crt, key: server.key }"
)]
struct RawTls {
    #[serde(deserialize_with = "de::parse::<de::FilePath, _>")]
    cert: PathBuf,
    #[serde(deserialize_with = "de::parse::<de::FilePath, _>")]
    key: PathBuf,
    #[serde(default)]
    require: bool,
}

impl From<RawTls> for TlsConfig {
    fn from(raw: RawTls) -> Self {
        TlsConfig {
            cert: raw.cert,
            key: raw.key,
            require: raw.require,
        }
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { connect_timeout: 2s, pool_max: 256 }"
)]
struct RawBackendSettings {
    #[serde(
        default = "default_connect_timeout",
        deserialize_with = "de::parse::<de::Timeout, _>"
    )]
    connect_timeout: Duration,
    #[serde(default = "default_pool_max", deserialize_with = "de::positive")]
    pool_max: usize,
    #[serde(default = "default_multiplex")]
    multiplex: bool,
    #[serde(default)]
    tls: Option<RawBackendTls>,
    #[serde(default, deserialize_with = "de::parse::<de::AnyDuration, _>")]
    replica_read_timeout: Duration,
    #[serde(
        default = "default_max_connection_age",
        deserialize_with = "de::parse::<de::AnyDuration, _>"
    )]
    max_connection_age: Duration,
}

impl Default for RawBackendSettings {
    fn default() -> Self {
        RawBackendSettings {
            connect_timeout: default_connect_timeout(),
            pool_max: default_pool_max(),
            multiplex: default_multiplex(),
            tls: None,
            replica_read_timeout: Duration::ZERO,
            max_connection_age: default_max_connection_age(),
        }
    }
}

fn default_max_connection_age() -> Duration {
    Duration::from_secs(3600)
}

fn default_multiplex() -> bool {
    true
}

fn default_connect_timeout() -> Duration {
    Duration::from_secs(2)
}

fn default_pool_max() -> usize {
    256
}

impl From<RawBackendSettings> for BackendSettings {
    fn from(raw: RawBackendSettings) -> Self {
        BackendSettings {
            connect_timeout: raw.connect_timeout,
            pool_max: raw.pool_max,
            multiplex: raw.multiplex,
            tls: raw.tls.map(|t| t.0).unwrap_or_default(),
            replica_read_timeout: raw.replica_read_timeout,
            max_connection_age: raw.max_connection_age,
        }
    }
}

/// A client account. Exactly one of `password` / `password_hash`.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a user mapping such as { name: app, password: secret, backend: group }"
)]
struct RawUser {
    #[serde(deserialize_with = "de::parse::<de::Name, _>")]
    name: String,
    #[serde(default)]
    password: Option<String>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::NativeHash, _>")]
    password_hash: Option<[u8; 20]>,
    /// 0 = no limit.
    #[serde(default)]
    max_connections: u32,
    #[serde(default)]
    require_tls: bool,
    #[serde(default)]
    backend: Option<RawUserBackend>,
}

/// `users[].backend`: `group`, or a server account. Required: whom a
/// configured user's statements run as decides its privileges, so it is
/// never implied.
enum RawUserBackend {
    Group,
    Account(RawBackendAccount),
}

impl<'de> Deserialize<'de> for RawUserBackend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawUserBackend;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`group` or a server account such as { user: app, password: secret }")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RawUserBackend, E> {
                if s == "group" {
                    return Ok(RawUserBackend::Group);
                }
                Err(E::custom(format!(
                    "`{s}`: write `group` (the group's account) or a server account such as \
                     {{ user: app, password: secret }}"
                )))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawUserBackend, A::Error> {
                RawBackendAccount::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(RawUserBackend::Account)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a server account such as { user: app, password: secret }"
)]
struct RawBackendAccount {
    #[serde(deserialize_with = "de::parse::<de::Name, _>")]
    user: String,
    password: String,
}

/// `auth:`; see [`AuthConfig`].
#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { account: { user: sluice_auth, password: secret }, refresh: 2s }"
)]
struct RawAuth {
    #[serde(default)]
    mode: Option<RawAuthMode>,
    #[serde(default)]
    account: Option<RawBackendAccount>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::Interval, _>")]
    refresh: Option<Duration>,
    #[serde(default, deserialize_with = "positive_opt")]
    pool_max_per_account: Option<usize>,
    #[serde(default)]
    max_account_labels: Option<usize>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawAuthMode {
    Server,
    Config,
    Both,
}

/// An optional positive integer (present: at least 1).
fn positive_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    de::positive(d).map(Some)
}

impl RawAuth {
    fn resolve(self) -> Result<AuthConfig, SemanticError> {
        let d = AuthConfig::default();
        let account = self.account.map(|a| AuthAccount {
            user: a.user,
            password: a.password,
        });
        let mode =
            match (self.mode, account.is_some()) {
                (None, true) => AuthMode::Server,
                (None, false) => AuthMode::Config,
                (Some(RawAuthMode::Config), _) => AuthMode::Config,
                (Some(m), false) => {
                    return Err(SemanticError {
                        keys: &["auth"],
                        message: format!(
                        "auth.mode `{}` needs auth.account (the account sluice reads mysql.global_priv with)",
                        if matches!(m, RawAuthMode::Server) { "server" } else { "both" }
                    ),
                    })
                }
                (Some(RawAuthMode::Server), true) => AuthMode::Server,
                (Some(RawAuthMode::Both), true) => AuthMode::Both,
            };
        Ok(AuthConfig {
            mode,
            account,
            refresh: self.refresh.unwrap_or(d.refresh),
            pool_max_per_account: self.pool_max_per_account,
            max_account_labels: self.max_account_labels.unwrap_or(d.max_account_labels),
        })
    }
}

impl ListItem for RawUser {
    type Output = User;
    const WHAT: &'static str = "user";

    fn name(&self) -> &str {
        &self.name
    }

    fn finish(self) -> Result<User, String> {
        let credential = match (self.password, self.password_hash) {
            (Some(password), None) => Credential::Password(password),
            (None, Some(hash)) => Credential::NativeHash(hash),
            (Some(_), Some(_)) => {
                return Err(format!(
                    "user `{}` has both `password` and `password_hash`: keep one",
                    self.name
                ))
            }
            (None, None) => {
                return Err(format!(
                    "user `{}` needs `password` or `password_hash`",
                    self.name
                ))
            }
        };
        let backend = match self.backend {
            Some(RawUserBackend::Account(b)) => Some(BackendAccount {
                user: b.user,
                password: b.password,
            }),
            Some(RawUserBackend::Group) => None,
            None => {
                return Err(format!(
                    "user `{}` needs `backend:`, the account its statements run as (and so its \
                     privileges): `backend: group` for the group's account (groups[].master.user, \
                     with all of that account's privileges), or `backend: {{ user: app_ro, password: \
                     secret }}` for a server account granted what this user may do",
                    self.name
                ))
            }
        };
        Ok(User {
            name: self.name,
            credential,
            max_connections: self.max_connections,
            require_tls: self.require_tls,
            backend,
        })
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a group mapping with name, master and replicas"
)]
struct RawGroup {
    #[serde(deserialize_with = "de::parse::<de::Name, _>")]
    name: String,
    master: RawMaster,
    #[serde(default)]
    replicas: Vec<RawReplica>,
    #[serde(default)]
    topology: super::follow::TopologyMode,
}

impl ListItem for RawGroup {
    type Output = Group;
    const WHAT: &'static str = "group";

    fn name(&self) -> &str {
        &self.name
    }

    fn finish(self) -> Result<Group, String> {
        // Reading "from a replica" that is the master would silently defeat
        // the read/write split and its freshness accounting.
        if let Some(replica) = self.replicas.iter().find(|r| r.addr == self.master.addr) {
            return Err(format!(
                "group `{}`: replica {} has the same address as the master",
                self.name, replica.addr
            ));
        }
        Ok(Group {
            name: self.name,
            master: self.master.into(),
            replicas: self.replicas.into_iter().map(Into::into).collect(),
            topology: self.topology,
        })
    }
}

/// The master has no `weight`: a separate struct makes `weight` on a master
/// an "unknown field" error at its line rather than a silently ignored key.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { addr: 127.0.0.1:3306, user: sluice, password: x }"
)]
struct RawMaster {
    #[serde(deserialize_with = "de::parse::<de::HostPort, _>")]
    addr: String,
    #[serde(deserialize_with = "de::parse::<de::Name, _>")]
    user: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    tls: Option<RawBackendTls>,
}

impl From<RawMaster> for Backend {
    fn from(raw: RawMaster) -> Self {
        Backend {
            addr: raw.addr,
            user: raw.user,
            password: raw.password,
            weight: default_weight(),
            tls: raw.tls.map(|t| t.0),
        }
    }
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { addr: 127.0.0.1:3307, user: sluice, password: x }"
)]
struct RawReplica {
    #[serde(deserialize_with = "de::parse::<de::HostPort, _>")]
    addr: String,
    #[serde(deserialize_with = "de::parse::<de::Name, _>")]
    user: String,
    #[serde(default)]
    password: String,
    #[serde(default = "default_weight", deserialize_with = "de::positive")]
    weight: u32,
    #[serde(default)]
    tls: Option<RawBackendTls>,
}

fn default_weight() -> u32 {
    1
}

impl From<RawReplica> for Backend {
    fn from(raw: RawReplica) -> Self {
        Backend {
            addr: raw.addr,
            user: raw.user,
            password: raw.password,
            weight: raw.weight,
            tls: raw.tls.map(|t| t.0),
        }
    }
}

/// `reload:`; see [`ReloadSettings`].
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping such as { watch: true }")]
struct RawReload {
    watch: bool,
}

impl Default for RawReload {
    fn default() -> Self {
        RawReload {
            watch: ReloadSettings::default().watch,
        }
    }
}

/// `readiness:`; see [`Readiness`].
#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { require_master: false }"
)]
struct RawReadiness {
    #[serde(default)]
    require_master: bool,
}

/// `runtime:`; see [`RuntimeSettings`] (every field optional).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping such as { worker_threads: 4 }")]
struct RawRuntime {
    #[serde(default, deserialize_with = "some_bounded::<usize, 1, 1024, _>")]
    worker_threads: Option<usize>,
    #[serde(default = "default_per_core")]
    per_core: bool,
}

fn default_per_core() -> bool {
    RuntimeSettings::default().per_core
}

impl Default for RawRuntime {
    fn default() -> Self {
        RawRuntime {
            worker_threads: None,
            per_core: default_per_core(),
        }
    }
}

/// An optional integer in `MIN..=MAX`: absent is `None` (`#[serde(default)]`),
/// a written value is checked where it is written.
fn some_bounded<'de, T, const MIN: u64, const MAX: u64, D>(d: D) -> Result<Option<T>, D::Error>
where
    T: TryFrom<u64>,
    D: serde::Deserializer<'de>,
{
    de::bounded::<T, MIN, MAX, D>(d).map(Some)
}

impl From<RawRuntime> for RuntimeSettings {
    fn from(raw: RawRuntime) -> Self {
        RuntimeSettings {
            worker_threads: raw.worker_threads,
            per_core: raw.per_core,
        }
    }
}

/// `admin:`; see [`AdminConfig`].
#[derive(Deserialize, Default)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { token_file: /etc/sluice/admin.token }"
)]
struct RawAdmin {
    #[serde(default, deserialize_with = "de::parse_opt::<de::Secret, _>")]
    token: Option<String>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::FilePath, _>")]
    token_file: Option<PathBuf>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::ListenAddr, _>")]
    sql_listen: Option<SocketAddr>,
    #[serde(
        default,
        deserialize_with = "de::unique_list::<super::admin::RawConsoleUser, _>"
    )]
    users: Vec<super::ConsoleUser>,
}

impl From<RawAdmin> for AdminConfig {
    fn from(raw: RawAdmin) -> Self {
        AdminConfig {
            token: raw.token,
            token_file: raw.token_file,
            allowed_hosts: raw
                .allowed_hosts
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            sql_listen: raw.sql_listen,
            users: raw.users,
        }
    }
}

/// A backend `tls:` mapping, checked as a whole where it is written (so a
/// missing `ca` names the mapping's line).
struct RawBackendTls(BackendTls);

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping such as { mode: verify_identity, ca: certs/ca.pem }"
)]
struct RawBackendTlsFields {
    mode: RawBackendTlsMode,
    #[serde(default, deserialize_with = "de::parse_opt::<de::FilePath, _>")]
    ca: Option<PathBuf>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::FilePath, _>")]
    cert: Option<PathBuf>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::FilePath, _>")]
    key: Option<PathBuf>,
    #[serde(default, deserialize_with = "de::parse_opt::<de::Name, _>")]
    server_name: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(
    rename_all = "snake_case",
    expecting = "disabled, preferred, required, verify_ca or verify_identity"
)]
enum RawBackendTlsMode {
    Disabled,
    Preferred,
    Required,
    VerifyCa,
    VerifyIdentity,
}

impl<'de> Deserialize<'de> for RawBackendTls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::checked_map::<RawBackendTlsFields, _, _>(d, RawBackendTlsFields::finish).map(RawBackendTls)
    }
}

impl RawBackendTlsFields {
    fn finish(self) -> Result<BackendTls, String> {
        let mode = match self.mode {
            RawBackendTlsMode::Disabled => BackendTlsMode::Disabled,
            RawBackendTlsMode::Preferred => BackendTlsMode::Preferred,
            RawBackendTlsMode::Required => BackendTlsMode::Required,
            RawBackendTlsMode::VerifyCa => BackendTlsMode::VerifyCa,
            RawBackendTlsMode::VerifyIdentity => BackendTlsMode::VerifyIdentity,
        };
        let verifies = matches!(mode, BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity);
        if verifies && self.ca.is_none() {
            return Err(format!(
                "tls mode {} needs `ca`: the CA certificate (PEM) the server's certificate must chain to",
                mode.as_str()
            ));
        }
        if !verifies && self.ca.is_some() {
            return Err(format!(
                "tls mode {} does not check certificates, so `ca` would be ignored: \
                 use verify_ca or verify_identity, or remove `ca`",
                mode.as_str()
            ));
        }
        if self.server_name.is_some() && mode != BackendTlsMode::VerifyIdentity {
            return Err("`server_name` is only checked with mode verify_identity".to_owned());
        }
        let client_cert = match (self.cert, self.key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => return Err("a client certificate needs both `cert` and `key`".to_owned()),
        };
        if mode == BackendTlsMode::Disabled && client_cert.is_some() {
            return Err("tls mode disabled: `cert` and `key` would be ignored".to_owned());
        }
        Ok(BackendTls {
            mode,
            ca: self.ca,
            client_cert,
            server_name: self.server_name,
        })
    }
}
