//! Whom a backend connection logs in as, and the login exchange after the
//! handshake response (and TLS start, `tls::start`): plugin switches,
//! caching_sha2 and clear text passwords (only over verified TLS). Split from
//! `conn.rs`, which opens the connection and runs commands on it.

use std::sync::Arc;

use mysql_common::packets::{AuthPlugin, AuthSwitchRequest};
use mysql_common::proto::MySerialize;

use crate::config::BackendTlsMode;
use crate::protocol::{PacketStream, ProtocolError};
use mysql_common::io::ParseBuf;

use super::{server_err, BackendError, BackendIo, ConnectParams};

/// Whom a backend connection logs in as: the group's account (cleartext
/// password from the configuration) or a client's server account, known
/// only by `SHA1(pw)` derived from the client's own proof (see
/// `auth::native`). Each distinct login has an id; pools are per login, so
/// a connection only ever serves sessions of the account it belongs to.
pub struct Login {
    pub id: u64,
    pub user: String,
    pub(super) secret: Secret,
    /// Most pooled connections this login may hold per backend (the
    /// account's `MAX_USER_CONNECTIONS`; 0: no limit of its own).
    pub max_connections: usize,
}

pub(super) enum Secret {
    Password(String),
    /// `SHA1(pw)`: enough for mysql_native_password, nothing else.
    NativeStage1([u8; 20]),
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("id", &self.id)
            .field("user", &self.user)
            .finish()
    }
}

static NEXT_LOGIN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_login_id() -> u64 {
    NEXT_LOGIN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Login {
    pub fn password(user: &str, password: &str) -> Arc<Login> {
        Arc::new(Login {
            id: next_login_id(),
            user: user.to_owned(),
            secret: Secret::Password(password.to_owned()),
            max_connections: 0,
        })
    }

    /// A server account proven by a client: `stage1` = SHA1(pw).
    pub fn native(user: &str, stage1: [u8; 20], max_connections: usize) -> Arc<Login> {
        Arc::new(Login {
            id: next_login_id(),
            user: user.to_owned(),
            secret: Secret::NativeStage1(stage1),
            max_connections,
        })
    }

    pub fn is_password(&self, user: &str, password: &str) -> bool {
        self.user == user && matches!(&self.secret, Secret::Password(p) if p == password)
    }

    /// The answer to `nonce` under `plugin`, or why there is none.
    pub(super) fn scramble(&self, plugin: &AuthPlugin<'_>, nonce: &[u8]) -> Result<Vec<u8>, BackendError> {
        match (&self.secret, plugin) {
            (Secret::Password(pw), _) => {
                let mut out = Vec::new();
                if let Some(d) = plugin.gen_data(Some(pw), nonce) {
                    d.serialize(&mut out);
                }
                Ok(out)
            }
            (Secret::NativeStage1(h1), AuthPlugin::MysqlNativePassword) => {
                Ok(crate::protocol::native_password::scramble_with_stage1(h1, nonce).to_vec())
            }
            (Secret::NativeStage1(_), other) => Err(BackendError::Unsupported(format!(
                "backend asks account `{}` for {}; sluice can log in server accounts with                  mysql_native_password only",
                self.user,
                String::from_utf8_lossy(other.as_bytes())
            ))),
        }
    }

    /// The password in clear text (NUL-terminated), when sluice knows it.
    fn cleartext(&self) -> Option<Vec<u8>> {
        match &self.secret {
            Secret::Password(p) => {
                let mut v = Vec::with_capacity(p.len() + 1);
                v.extend_from_slice(p.as_bytes());
                v.push(0);
                Some(v)
            }
            Secret::NativeStage1(_) => None,
        }
    }
}

/// The password as sent in clear text over TLS (caching_sha2 full
/// authentication, mysql_clear_password): NUL-terminated. A server account
/// known only by its hash has none to send.
fn cleartext_password(login: &Login) -> Result<Vec<u8>, BackendError> {
    login.cleartext().ok_or_else(|| {
        BackendError::Unsupported(format!(
            "backend asks account `{}` for its password in clear text; sluice knows only its \
             mysql_native_password hash",
            login.user
        ))
    })
}

/// May the password itself be sent on `stream`? Only over TLS whose
/// certificate was verified (`verify_ca`/`verify_identity`): under
/// `required`/`preferred` anyone in the middle with a self-signed
/// certificate would receive it.
fn cleartext_allowed(stream: &PacketStream<BackendIo>, params: &ConnectParams) -> bool {
    stream.get_ref().is_tls()
        && params
            .tls
            .as_ref()
            .is_some_and(|t| matches!(t.mode, BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity))
}

/// Why the password was not sent, for the error a client sees.
fn no_cleartext(what: &str, stream: &PacketStream<BackendIo>, params: &ConnectParams) -> BackendError {
    let transport = match &params.tls {
        Some(t) if stream.get_ref().is_tls() => format!(
            "TLS whose certificate is not verified (tls.mode {}); use verify_ca or verify_identity",
            t.mode.as_str()
        ),
        _ => "a plaintext connection; set tls.mode verify_ca or verify_identity for this backend".to_owned(),
    };
    BackendError::Unsupported(format!(
        "backend asks for {what}, which would send sluice's password in clear text over {transport}"
    ))
}

/// Server packets sluice answers during one authentication: a plugin
/// switch, a caching_sha2 status and the final OK, with room to spare. A
/// server that keeps asking is not followed further.
const MAX_AUTH_PACKETS: usize = 6;

/// Finish authentication after the handshake response: handle auth switch,
/// caching_sha2 fast-auth success, and the final OK/ERR.
pub(super) async fn authenticate(
    stream: &mut PacketStream<BackendIo>,
    params: &ConnectParams,
    login: &Login,
) -> Result<(), BackendError> {
    for _ in 0..MAX_AUTH_PACKETS {
        let p = stream.read_packet().await?;
        let mut seq = p.seq.wrapping_add(1);
        match p.payload.first() {
            Some(0x00) => return Ok(()),
            Some(0xff) => return Err(server_err(&p.payload)),
            Some(0xfe) => {
                let sw: AuthSwitchRequest<'_> = ParseBuf(&p.payload)
                    .parse(())
                    .map_err(|_| ProtocolError::Malformed("auth switch request"))?;
                let plugin = sw.auth_plugin().into_owned();
                let mut nonce = sw.plugin_data().to_vec();
                // The nonce may carry a trailing NUL.
                if nonce.last() == Some(&0) {
                    nonce.pop();
                }
                let buf = match plugin {
                    AuthPlugin::MysqlNativePassword | AuthPlugin::CachingSha2Password => {
                        login.scramble(&plugin, &nonce)?
                    }
                    AuthPlugin::MysqlClearPassword if cleartext_allowed(stream, params) => {
                        stream.write_packet(&mut seq, &cleartext_password(login)?).await?;
                        continue;
                    }
                    AuthPlugin::MysqlClearPassword => {
                        return Err(no_cleartext("mysql_clear_password", stream, params))
                    }
                    other => {
                        return Err(BackendError::Unsupported(format!(
                            "backend auth plugin {}",
                            String::from_utf8_lossy(other.as_bytes())
                        )))
                    }
                };
                stream.write_packet(&mut seq, &buf).await?;
            }
            Some(0x01) => {
                // caching_sha2_password: 0x03 = fast auth succeeded (an OK
                // follows); 0x04 = full auth needed, which requires TLS or RSA.
                match p.payload.get(1) {
                    Some(0x03) => continue,
                    // Full authentication over TLS: the password itself,
                    // protected by the encrypted channel.
                    Some(0x04) if cleartext_allowed(stream, params) => {
                        stream.write_packet(&mut seq, &cleartext_password(login)?).await?;
                    }
                    Some(0x04) => {
                        return Err(no_cleartext(
                            "caching_sha2_password full authentication (connect once with the mysql \
                             client to fill the server's cache, or use mysql_native_password for the \
                             sluice user)",
                            stream,
                            params,
                        ))
                    }
                    _ => return Err(ProtocolError::Malformed("auth more data").into()),
                }
            }
            _ => return Err(ProtocolError::Malformed("unexpected packet during authentication").into()),
        }
    }
    Err(ProtocolError::Malformed("backend authentication does not end").into())
}
