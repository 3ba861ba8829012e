//! The server's accounts, as read from the master's `mysql.global_priv`
//! with `auth.account`, kept in memory and read again every
//! `auth.refresh` and soon after a failed login (so `CREATE USER`,
//! `SET PASSWORD`, `DROP USER` show within a refresh). Lookups are lock-free
//! (an `ArcSwap` snapshot); only the refresher writes.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::{watch, Notify};

use super::host::{account_sort, HostPattern};
use super::rights::{Digest, Grants, TlsRequirement};
use crate::backend::Login;

/// How an account proves its password, as far as sluice can check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// mysql_native_password with `SHA1(SHA1(pw))`.
    Native([u8; 20]),
    /// mysql_native_password with no password.
    NoPassword,
    /// A plugin sluice cannot verify and log in with (ed25519,
    /// unix_socket, gssapi, pam, ...): such logins are refused.
    Unsupported(String),
}

/// One row of `mysql.global_priv` (roles excluded).
pub struct Account {
    pub user: String,
    pub host_text: String,
    host: HostPattern,
    sort: u64,
    /// The usable method (the first native one of `auth_or`, if any).
    pub method: Method,
    pub locked: bool,
    /// `MAX_USER_CONNECTIONS` (0: no limit).
    pub max_user_connections: u32,
    /// The account's `MAX_QUERIES_PER_HOUR`, `MAX_UPDATES_PER_HOUR` and
    /// `MAX_CONNECTIONS_PER_HOUR` that are set, comma-separated. The server
    /// counts them per connection it sees: through sluice its own statements
    /// would be charged, reads on replicas and pooled logins would not, so
    /// such accounts are refused at login (see `frontend::handshake`).
    pub hourly_limits: Option<String>,
    /// What the account demands of a login's transport (`REQUIRE …`).
    pub tls: TlsRequirement,
    /// The login-time rights (see `rights`): part of the account's
    /// identity, so a change gives it a new backend login and pools.
    rights: Digest,
    /// The backend login, made at the account's first successful login
    /// (every later one proves the same `SHA1(pw)`); kept across refreshes
    /// while the account is unchanged, so its sessions share one pool.
    login: OnceLock<Arc<Login>>,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("user", &self.user)
            .field("host", &self.host_text)
            .field("locked", &self.locked)
            .finish()
    }
}

impl Account {
    fn new(row: Row) -> Account {
        Account {
            sort: account_sort(&row.host, &row.user),
            host: HostPattern::parse(&row.host),
            method: method_of(&row),
            host_text: row.host,
            user: row.user,
            locked: row.locked,
            max_user_connections: row.max_user_connections,
            hourly_limits: row.hourly_limits,
            tls: row.tls,
            rights: row.rights,
            login: OnceLock::new(),
        }
    }

    /// `'user'@'host'` as the server names it in messages.
    pub fn name(&self) -> String {
        format!("'{}'@'{}'", self.user, self.host_text)
    }

    fn same(&self, other: &Account) -> bool {
        self.user == other.user
            && self.host_text == other.host_text
            && self.method == other.method
            && self.locked == other.locked
            && self.max_user_connections == other.max_user_connections
            && self.hourly_limits == other.hourly_limits
            && self.tls == other.tls
            && self.rights == other.rights
    }

    /// The backend login of this account; `make` builds it the first time.
    pub fn login(&self, make: impl FnOnce() -> Arc<Login>) -> Arc<Login> {
        self.login.get_or_init(make).clone()
    }
}

/// Rows as read, before sorting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub user: String,
    pub host: String,
    /// (plugin, authentication_string) of the top level, then of each
    /// `auth_or` entry (an entry of NULLs stands for the top level).
    pub top: (Option<String>, Option<String>),
    pub auth_or: Vec<(Option<String>, Option<String>)>,
    pub locked: bool,
    pub max_user_connections: u32,
    /// The hourly limits the account has, by name (`None`: none).
    pub hourly_limits: Option<String>,
    pub is_role: bool,
    pub tls: TlsRequirement,
    pub rights: Digest,
}

/// The method sluice uses for a row: the first mysql_native_password
/// entry (a "*HEX" hash or no password) of its alternatives.
pub fn method_of(row: &Row) -> Method {
    let mut alternatives: Vec<(Option<String>, Option<String>)> = Vec::new();
    if row.auth_or.is_empty() {
        alternatives.push(row.top.clone());
    } else {
        for e in &row.auth_or {
            alternatives.push(if e.0.is_none() && e.1.is_none() {
                row.top.clone()
            } else {
                e.clone()
            });
        }
    }
    let mut first_plugin = None;
    for (plugin, auth) in &alternatives {
        let plugin = plugin.as_deref().unwrap_or("mysql_native_password");
        let auth = auth.as_deref().unwrap_or("");
        if plugin == "mysql_native_password" {
            if auth.is_empty() {
                return Method::NoPassword;
            }
            // (The same `*HEX40` form as `password_hash` in the configuration.)
            if let Ok(h) = crate::config::parse_native_hash(auth) {
                return Method::Native(h);
            }
        }
        first_plugin.get_or_insert_with(|| plugin.to_owned());
    }
    Method::Unsupported(first_plugin.unwrap_or_else(|| "mysql_native_password".to_owned()))
}

/// An immutable set of accounts, most specific first.
#[derive(Default)]
pub struct Snapshot {
    accounts: Vec<Arc<Account>>,
    /// The server resolves client addresses to names (no
    /// `skip_name_resolve`): loopback clients are also `localhost`.
    pub name_resolve: bool,
    /// Read from the server at least once.
    pub loaded: bool,
}

impl Snapshot {
    /// Sort `rows` as the server does, keeping the `Account` objects (and
    /// their logins) of `previous` for rows that did not change.
    pub fn build(rows: Vec<Row>, name_resolve: bool, previous: &Snapshot) -> Snapshot {
        let mut accounts: Vec<Arc<Account>> = rows
            .into_iter()
            .filter(|r| !r.is_role)
            .map(|r| {
                let a = Account::new(r);
                match previous.accounts.iter().find(|p| p.same(&a)) {
                    Some(p) => p.clone(),
                    None => Arc::new(a),
                }
            })
            .collect();
        // The server's order within one user name (acl_user_compare): most
        // specific first, equal weights by host text, descending (so
        // `localhost` before `127.0.0.1`); an empty host counts as `%`.
        fn host(x: &Account) -> &str {
            if x.host_text.is_empty() {
                "%"
            } else {
                &x.host_text
            }
        }
        accounts.sort_by(|a, b| b.sort.cmp(&a.sort).then_with(|| host(b).cmp(host(a))));
        Snapshot {
            accounts,
            name_resolve,
            loaded: true,
        }
    }

    /// The account the server would pick for `user` connecting from `ip`
    /// (find_by_username_or_anon): the first of `user`'s own accounts whose
    /// host matches, unless an anonymous account that matches is strictly
    /// more specific.
    pub fn find(&self, user: &str, ip: IpAddr) -> Option<Arc<Account>> {
        let hostname = (self.name_resolve && ip.is_loopback()).then_some("localhost");
        let named = self
            .accounts
            .iter()
            .find(|a| a.user == user && !user.is_empty() && a.host.matches(ip, hostname));
        let anonymous = self
            .accounts
            .iter()
            .filter(|a| a.user.is_empty())
            .take_while(|a| named.is_none_or(|n| a.sort > n.sort))
            .find(|a| a.host.matches(ip, hostname));
        anonymous.or(named).cloned()
    }

    pub fn len(&self) -> usize {
        self.accounts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }
}

/// The live catalog: a snapshot, and a way to ask for a fresh one.
pub struct Catalog {
    snap: ArcSwap<Snapshot>,
    /// Wakes the refresher early (a failed login).
    wake: Notify,
    /// Bumped after every refresh attempt (success or not).
    done: watch::Sender<u64>,
    /// Backend logins of configured users (`users[].backend`), one per
    /// distinct account so their sessions share pools.
    mapped: Mutex<Vec<Arc<Login>>>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            snap: ArcSwap::from_pointee(Snapshot::default()),
            wake: Notify::new(),
            done: watch::channel(0).0,
            mapped: Mutex::new(Vec::new()),
        }
    }
}

impl Catalog {
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snap.load_full()
    }

    pub fn publish(&self, snap: Snapshot) {
        self.snap.store(Arc::new(snap));
    }

    /// Ask for a refresh and wait (at most `within`) until one finished.
    /// Returns the snapshot then current.
    pub async fn refresh_now(&self, within: Duration) -> Arc<Snapshot> {
        let mut rx = self.done.subscribe();
        rx.mark_unchanged();
        self.wake.notify_one();
        let _ = tokio::time::timeout(within, rx.changed()).await;
        self.snapshot()
    }

    /// The backend login for a configured user's `backend:` account.
    pub fn mapped_login(&self, user: &str, password: &str) -> Arc<Login> {
        let Ok(mut m) = self.mapped.lock() else {
            return Login::password(user, password);
        };
        if let Some(l) = m.iter().find(|l| l.is_password(user, password)) {
            return l.clone();
        }
        let l = Login::password(user, password);
        m.push(l.clone());
        l
    }

    fn finished(&self) {
        self.done.send_modify(|n| *n += 1);
    }
}

/// Where and as whom the refresher reads the accounts.
#[derive(Clone, PartialEq)]
pub struct Source {
    pub addr: String,
    pub user: String,
    pub password: String,
    pub tls: crate::config::BackendTls,
    pub every: Duration,
}

const QUERY: &str = "SELECT User, Host, \
    JSON_VALUE(Priv, '$.plugin'), JSON_VALUE(Priv, '$.authentication_string'), \
    JSON_VALUE(Priv, '$.auth_or[0].plugin'), JSON_VALUE(Priv, '$.auth_or[0].authentication_string'), \
    JSON_VALUE(Priv, '$.auth_or[1].plugin'), JSON_VALUE(Priv, '$.auth_or[1].authentication_string'), \
    JSON_VALUE(Priv, '$.auth_or[2].plugin'), JSON_VALUE(Priv, '$.auth_or[2].authentication_string'), \
    JSON_LENGTH(Priv, '$.auth_or'), \
    IFNULL(JSON_VALUE(Priv, '$.account_locked'), 'false'), \
    IFNULL(JSON_VALUE(Priv, '$.max_user_connections'), '0'), \
    IFNULL(JSON_VALUE(Priv, '$.is_role'), 'false'), \
    JSON_VALUE(Priv, '$.ssl_type'), Priv, \
    CONCAT_WS(', ', \
      IF(JSON_VALUE(Priv, '$.max_questions') > 0, 'MAX_QUERIES_PER_HOUR', NULL), \
      IF(JSON_VALUE(Priv, '$.max_updates') > 0, 'MAX_UPDATES_PER_HOUR', NULL), \
      IF(JSON_VALUE(Priv, '$.max_connections') > 0, 'MAX_CONNECTIONS_PER_HOUR', NULL)) \
    FROM mysql.global_priv";

fn opts(src: &Source) -> mysql_async::Opts {
    let (host, port) = match src.addr.rsplit_once(':') {
        Some((h, p)) => (
            h.trim_start_matches('[').trim_end_matches(']').to_owned(),
            p.parse().unwrap_or(3306),
        ),
        None => (src.addr.clone(), 3306),
    };
    mysql_async::OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port)
        .user(Some(src.user.clone()))
        .pass(Some(src.password.clone()))
        .prefer_socket(false)
        .stmt_cache_size(0)
        .ssl_opts(crate::backend::tls::mysql_async_opts(&src.tls))
        .into()
}

/// A JSON boolean as JSON_VALUE gives it ("1"; "true" on some versions).
fn is_true(v: Option<String>) -> bool {
    matches!(v.as_deref(), Some("1" | "true"))
}

/// Read every account once.
pub async fn read(conn: &mut mysql_async::Conn) -> Result<(Vec<Row>, bool), String> {
    use mysql_async::prelude::Queryable;
    let rows: Vec<mysql_async::Row> = conn.query(QUERY).await.map_err(|e| e.to_string())?;
    let text = |r: &mysql_async::Row, i: usize| -> Option<String> {
        r.get_opt::<Option<String>, _>(i).and_then(|v| v.ok()).flatten()
    };
    let privs: Vec<(String, String)> = rows
        .iter()
        .map(|r| (text(r, 0).unwrap_or_default(), text(r, 15).unwrap_or_default()))
        .collect();
    let role_privs: Vec<(&str, &str)> = rows
        .iter()
        .zip(&privs)
        .filter(|(r, _)| is_true(text(r, 13)))
        .map(|(_, (u, p))| (u.as_str(), p.as_str()))
        .collect();
    let grants = Grants::read(conn, &role_privs).await;
    let mut out = Vec::with_capacity(rows.len());
    for (r, (_, privs)) in rows.iter().zip(&privs) {
        let (user, host) = (text(r, 0).unwrap_or_default(), text(r, 1).unwrap_or_default());
        let n_or = text(r, 10).and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
        let auth_or = (0..n_or.min(3))
            .map(|i| (text(r, 4 + 2 * i), text(r, 5 + 2 * i)))
            .collect();
        out.push(Row {
            rights: grants.digest(&user, &host, privs),
            tls: TlsRequirement::from_ssl_type(text(r, 14).as_deref()),
            user,
            host,
            top: (text(r, 2), text(r, 3)),
            auth_or,
            locked: is_true(text(r, 11)),
            max_user_connections: text(r, 12).and_then(|n| n.parse().ok()).unwrap_or(0),
            hourly_limits: text(r, 16).filter(|l| !l.is_empty()),
            is_role: is_true(text(r, 13)),
        });
    }
    let skip: Option<u64> = conn
        .query_first("SELECT @@skip_name_resolve")
        .await
        .map_err(|e| e.to_string())?;
    Ok((out, skip != Some(1)))
}

/// Keep `catalog` fresh while `source()` names a server to read from
/// (`None`: server accounts are off; the loop idles). Runs until the
/// process ends.
pub async fn refresher(catalog: Arc<Catalog>, source: impl Fn() -> Option<Source> + Send + 'static) {
    let mut conn: Option<(Source, mysql_async::Conn)> = None;
    let mut last = Instant::now() - Duration::from_secs(3600);
    let mut warned = false;
    loop {
        let Some(src) = source() else {
            conn = None;
            tokio::select! {
                _ = catalog.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            catalog.finished();
            continue;
        };
        // At most one refresh per quarter period (100 ms at least), however
        // many failed logins ask for one.
        let gap = (src.every / 4).max(Duration::from_millis(100));
        let since = last.elapsed();
        if since < gap {
            tokio::time::sleep(gap - since).await;
        }
        last = Instant::now();
        if conn.as_ref().is_some_and(|(s, _)| *s != src) {
            conn = None;
        }
        let timeout = Duration::from_secs(5);
        let r = tokio::time::timeout(timeout, async {
            let c = match conn.take() {
                Some((_, c)) => c,
                None => mysql_async::Conn::new(opts(&src))
                    .await
                    .map_err(|e| e.to_string())?,
            };
            let mut c = c;
            let r = read(&mut c).await;
            Ok::<_, String>((c, r))
        })
        .await;
        match r {
            Ok(Ok((c, Ok((rows, name_resolve))))) => {
                let prev = catalog.snapshot();
                let snap = Snapshot::build(rows, name_resolve, &prev);
                if !prev.loaded || warned {
                    tracing::info!(accounts = snap.len(), "server accounts read");
                }
                warned = false;
                catalog.publish(snap);
                conn = Some((src.clone(), c));
            }
            Ok(Ok((_, Err(e)))) | Ok(Err(e)) => {
                if !warned {
                    tracing::warn!(error = %crate::logging::escaped(&e, 512), "cannot read the server's accounts (auth.account); keeping the last ones read");
                    warned = true;
                }
            }
            Err(_) => {
                if !warned {
                    tracing::warn!("reading the server's accounts timed out; keeping the last ones read");
                    warned = true;
                }
            }
        }
        catalog.finished();
        tokio::select! {
            _ = catalog.wake.notified() => {}
            _ = tokio::time::sleep(src.every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(user: &str, host: &str, plugin: &str, auth: &str) -> Row {
        Row {
            user: user.into(),
            host: host.into(),
            top: (Some(plugin.into()), Some(auth.into())),
            auth_or: vec![],
            locked: false,
            max_user_connections: 0,
            hourly_limits: None,
            is_role: false,
            tls: TlsRequirement::None,
            rights: [0; 20],
        }
    }

    const HASH: &str = "*5BCB3E6AC345B435C7C2E6B7949A04CE6F6563D3";

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn methods() {
        let native = row("a", "%", "mysql_native_password", HASH);
        assert!(matches!(method_of(&native), Method::Native(_)));
        assert_eq!(
            method_of(&row("a", "%", "mysql_native_password", "")),
            Method::NoPassword
        );
        assert_eq!(
            method_of(&row("a", "%", "ed25519", "xyz")),
            Method::Unsupported("ed25519".into())
        );
        // root@localhost of a fresh install: unix_socket OR an invalid native hash.
        let mut root = row("root", "localhost", "mysql_native_password", "invalid");
        root.auth_or = vec![(None, None), (Some("unix_socket".into()), None)];
        assert_eq!(
            method_of(&root),
            Method::Unsupported("mysql_native_password".into())
        );
        let mut alt = row("b", "%", "ed25519", "xyz");
        alt.auth_or = vec![
            (Some("ed25519".into()), Some("xyz".into())),
            (Some("mysql_native_password".into()), Some(HASH.into())),
        ];
        assert!(matches!(method_of(&alt), Method::Native(_)));
    }

    #[test]
    fn lookups_pick_the_most_specific_account() {
        let rows = vec![
            row("u", "%", "mysql_native_password", ""),
            row("u", "10.0.0.%", "mysql_native_password", HASH),
            row("u", "10.0.0.7", "ed25519", "x"),
            row("", "10.0.%", "mysql_native_password", ""),
            row("v", "%", "mysql_native_password", ""),
            Row {
                is_role: true,
                ..row("r", "", "", "")
            },
        ];
        let s = Snapshot::build(rows, false, &Snapshot::default());
        assert_eq!(s.len(), 5, "roles are not accounts");
        let host_of = |user: &str, at: &str| s.find(user, ip(at)).map(|a| a.host_text.clone());
        assert_eq!(host_of("u", "10.0.0.7").as_deref(), Some("10.0.0.7"));
        assert_eq!(host_of("u", "10.0.0.8").as_deref(), Some("10.0.0.%"));
        assert_eq!(host_of("u", "192.168.0.1").as_deref(), Some("%"));
        // The anonymous account on a more specific host wins over 'v'@'%'.
        let anon = s.find("v", ip("10.0.1.1"));
        assert_eq!(anon.map(|a| a.user.clone()).as_deref(), Some(""));
        assert_eq!(host_of("v", "192.168.0.1").as_deref(), Some("%"));
        assert!(s.find("w", ip("192.168.0.1")).is_none());
    }

    #[test]
    fn unchanged_accounts_keep_their_login() {
        let rows = vec![row("u", "%", "mysql_native_password", HASH)];
        let a = Snapshot::build(rows.clone(), false, &Snapshot::default());
        let first = a
            .find("u", ip("1.2.3.4"))
            .map(|x| x.login(|| Login::password("u", "p")));
        let b = Snapshot::build(rows, false, &a);
        let again = b
            .find("u", ip("1.2.3.4"))
            .map(|x| x.login(|| Login::password("u", "other")));
        assert_eq!(first.map(|l| l.id), again.map(|l| l.id));
        let changed = vec![row("u", "%", "mysql_native_password", "")];
        let c = Snapshot::build(changed, false, &b);
        let fresh = c
            .find("u", ip("1.2.3.4"))
            .map(|x| x.login(|| Login::password("u", "")));
        assert_ne!(
            b.find("u", ip("1.2.3.4"))
                .map(|x| x.login(|| Login::password("u", "")).id),
            fresh.map(|l| l.id)
        );
    }
}
