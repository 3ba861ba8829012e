//! What the server fixes when a connection logs in, per account: its global
//! privileges, default role, password expiry and limits (`mysql.global_priv`),
//! its database privileges (`mysql.db`, read again by the server only at
//! `USE`/login) and the roles it holds (`mysql.roles_mapping`, with what those
//! roles grant). A digest of all of it is part of an account's identity in the
//! catalog: when it changes, the account gets a new backend login and so new
//! pooled connections, and a session that logs in after the change never runs
//! on a connection that logged in before it. Table and column privileges are
//! not part of it: the server checks those at every statement.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use sha1::{Digest as _, Sha1};

/// SHA-1 of an account's login-time rights (not a secret: a change detector).
pub type Digest = [u8; 20];

/// The TLS an account demands of its logins (`REQUIRE …`, `ssl_type` of
/// `mysql.global_priv`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TlsRequirement {
    #[default]
    None,
    /// `REQUIRE SSL`.
    Any,
    /// `REQUIRE X509`: a client certificate the server verified.
    X509,
    /// `REQUIRE ISSUER / SUBJECT / CIPHER`.
    Specified,
}

impl TlsRequirement {
    /// From `ssl_type` as JSON_VALUE gives it (MariaDB's SSL_TYPE_* numbers).
    pub fn from_ssl_type(v: Option<&str>) -> TlsRequirement {
        match v {
            None | Some("0") => TlsRequirement::None,
            Some("1") => TlsRequirement::Any,
            Some("2") => TlsRequirement::X509,
            // 3, or a value of a later version: demand the most.
            Some(_) => TlsRequirement::Specified,
        }
    }
}

/// Rows of `mysql.db` and `mysql.roles_mapping`, as text, by (user, host).
#[derive(Default)]
pub struct Grants {
    by_account: HashMap<(String, String), Vec<String>>,
    /// Everything roles hold (their `Priv`, database privileges and roles):
    /// part of the digest of every account that was granted a role.
    roles: Digest,
}

/// Warned once that the grant tables cannot be read.
static WARNED: AtomicBool = AtomicBool::new(false);

impl Grants {
    /// Read the grant tables with `conn` (the catalog's connection).
    /// `role_privs`: each role's `Priv` text. When the tables cannot be read
    /// (the catalog account lacks SELECT on them), a warning once and no
    /// grants: changes then reach new sessions only through
    /// `backend.max_connection_age`.
    pub async fn read(conn: &mut mysql_async::Conn, role_privs: &[(&str, &str)]) -> Grants {
        let mut g = Grants::default();
        for table in ["db", "roles_mapping"] {
            if let Err(e) = g.read_table(conn, table).await {
                if !WARNED.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        table = %format!("mysql.{table}"),
                        error = %crate::logging::escaped(&e, 256),
                        "cannot read a grant table with auth.account (GRANT SELECT on mysql.db and \
                         mysql.roles_mapping): changes of database privileges and roles reach new \
                         sessions only through backend.max_connection_age"
                    );
                }
            }
        }
        let mut h = Sha1::new();
        let mut privs: Vec<_> = role_privs.to_vec();
        privs.sort_unstable();
        for (role, text) in privs {
            feed(&mut h, &[role, text]);
        }
        // Roles are entries with an empty host (their database privileges
        // and the roles granted to them).
        let mut role_rows: Vec<_> = g
            .by_account
            .iter()
            .filter(|((_, host), _)| host.is_empty())
            .collect();
        role_rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for ((user, _), rows) in role_rows {
            feed(&mut h, &[user]);
            for r in rows {
                feed(&mut h, &[r]);
            }
        }
        g.roles = h.finalize().into();
        g
    }

    async fn read_table(&mut self, conn: &mut mysql_async::Conn, table: &str) -> Result<(), String> {
        use mysql_async::prelude::Queryable;
        let rows: Vec<mysql_async::Row> = conn
            .query(format!("SELECT * FROM mysql.{table}"))
            .await
            .map_err(|e| e.to_string())?;
        for r in rows {
            let cols = r.columns_ref();
            let index = |name: &str| cols.iter().position(|c| c.name_str().eq_ignore_ascii_case(name));
            let (Some(u), Some(h)) = (index("User"), index("Host")) else {
                return Err(format!("mysql.{table} has no User/Host columns"));
            };
            let text = |i: usize| r.as_ref(i).map(|v| v.as_sql(false)).unwrap_or_default();
            let row: Vec<String> = (0..r.len()).map(text).collect();
            let key = (
                r.get_opt::<String, _>(u).and_then(|v| v.ok()).unwrap_or_default(),
                r.get_opt::<String, _>(h).and_then(|v| v.ok()).unwrap_or_default(),
            );
            self.by_account
                .entry(key)
                .or_default()
                .push(format!("{table}\u{1f}{}", row.join("\u{1f}")));
        }
        for rows in self.by_account.values_mut() {
            rows.sort_unstable();
        }
        Ok(())
    }

    /// The digest of `user@host`'s login-time rights, `privs` its `Priv` text.
    pub fn digest(&self, user: &str, host: &str, privs: &str) -> Digest {
        let mut h = Sha1::new();
        feed(&mut h, &[privs]);
        if let Some(rows) = self.by_account.get(&(user.to_owned(), host.to_owned())) {
            let mut holds_role = false;
            for r in rows {
                holds_role |= r.starts_with("roles_mapping\u{1f}");
                feed(&mut h, &[r]);
            }
            if holds_role {
                h.update(self.roles);
            }
        }
        h.finalize().into()
    }
}

/// Each part with its length, so ("ab", "c") and ("a", "bc") differ.
fn feed(h: &mut Sha1, parts: &[&str]) {
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(rows: &[(&str, &str, &str)], roles: Digest) -> Grants {
        let mut g = Grants {
            roles,
            ..Grants::default()
        };
        for (u, h, r) in rows {
            g.by_account
                .entry(((*u).to_owned(), (*h).to_owned()))
                .or_default()
                .push((*r).to_owned());
        }
        g
    }

    #[test]
    fn digests_change_with_what_the_server_fixes_at_login() {
        let none = grants(&[], [0; 20]);
        let base = none.digest("u", "%", "{\"access\":0}");
        assert_eq!(base, none.digest("u", "%", "{\"access\":0}"));
        assert_ne!(base, none.digest("u", "%", "{\"access\":1}"));
        let db = grants(&[("u", "%", "db\u{1f}%\u{1f}app\u{1f}u\u{1f}Y")], [0; 20]);
        assert_ne!(base, db.digest("u", "%", "{\"access\":0}"));
        // Another account's rows do not matter.
        assert_eq!(base, db.digest("v", "%", "{\"access\":0}"));
        // What roles hold matters to accounts holding a role only.
        let role = |roles| grants(&[("u", "%", "roles_mapping\u{1f}%\u{1f}u\u{1f}r\u{1f}N")], roles);
        assert_ne!(
            role([0; 20]).digest("u", "%", "{}"),
            role([1; 20]).digest("u", "%", "{}")
        );
        assert_eq!(db.digest("u", "%", "{}"), {
            let mut other = grants(&[("u", "%", "db\u{1f}%\u{1f}app\u{1f}u\u{1f}Y")], [1; 20]);
            other.roles = [1; 20];
            other.digest("u", "%", "{}")
        });
    }

    #[test]
    fn tls_requirements() {
        assert_eq!(TlsRequirement::from_ssl_type(None), TlsRequirement::None);
        assert_eq!(TlsRequirement::from_ssl_type(Some("0")), TlsRequirement::None);
        assert_eq!(TlsRequirement::from_ssl_type(Some("1")), TlsRequirement::Any);
        assert_eq!(TlsRequirement::from_ssl_type(Some("2")), TlsRequirement::X509);
        assert_eq!(
            TlsRequirement::from_ssl_type(Some("3")),
            TlsRequirement::Specified
        );
        assert_eq!(
            TlsRequirement::from_ssl_type(Some("9")),
            TlsRequirement::Specified
        );
    }
}
