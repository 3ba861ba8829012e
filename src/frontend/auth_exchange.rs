//! The authentication exchange with a client, after its handshake response
//! (or COM_CHANGE_USER): plugin switches, caching_sha2 fast and full auth.
//!
//! Bounded on purpose. Each step is decided by a pure function
//! ([`next_step`]) and the exchange reads at most [`MAX_CLIENT_READS`]
//! packets, so no sequence of client packets can make it loop or recurse
//! (an unbounded recursion on empty auth-switch answers once let ~3,000
//! pipelined packets overflow a worker's stack). Every packet read must
//! carry the sequence id that follows sluice's last one; anything else is a
//! protocol error ([`ExchangeError::OutOfOrder`], answered with ERR 1156 as
//! MariaDB does).
//!
//! Unknown users go through the very same exchange as known ones, against
//! a made-up account of the same kind as the configured ones ([`account`]),
//! so neither the packets nor the work done tell an attacker whether a user
//! name exists (MariaDB does the same).

use mysql_common::packets::AuthPlugin;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::config::{Credential, User};
use crate::protocol::native_password::sha1;
use crate::protocol::{PacketStream, ProtocolError};

use super::auth;

pub const NATIVE: &[u8] = b"mysql_native_password";
pub const SHA2: &[u8] = b"caching_sha2_password";

/// Client packets read in one exchange: an answer to one auth switch, and
/// the cleartext password of caching_sha2's full authentication.
pub const MAX_CLIENT_READS: usize = 2;

/// What to do next in an exchange. Pure data, so the decision is testable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Check a mysql_native_password scramble; the exchange ends.
    VerifyNative,
    /// Check a caching_sha2 fast-path scramble ("fast auth success" on a
    /// match); the exchange ends.
    VerifySha2Fast,
    /// caching_sha2 full authentication: ask for the cleartext password
    /// (only over TLS) and check it; the exchange ends.
    AskCleartext,
    /// Switch the client to this plugin and read its answer.
    Switch(&'static [u8]),
    /// Nothing more can be tried: access denied.
    Deny,
}

/// The next step for `cred`, given the plugin the client is using, its last
/// answer and whether a switch already happened (there is at most one).
pub fn next_step(
    cred: &Credential,
    plugin: &AuthPlugin<'_>,
    response: &[u8],
    tls: bool,
    switched: bool,
) -> Step {
    let switch = |to| if switched { Step::Deny } else { Step::Switch(to) };
    let empty_password = matches!(cred, Credential::Password(p) if p.is_empty());
    match plugin {
        AuthPlugin::MysqlNativePassword => Step::VerifyNative,
        // The client picked caching_sha2 but answered the greeting's native
        // scramble with nothing (it expects a switch): ask it for a
        // caching_sha2 scramble of our nonce.
        AuthPlugin::CachingSha2Password
            if response.is_empty()
                && !switched
                && !empty_password
                && (matches!(cred, Credential::Password(_)) || tls) =>
        {
            Step::Switch(SHA2)
        }
        AuthPlugin::CachingSha2Password => match cred {
            Credential::Password(_) => Step::VerifySha2Fast,
            // Only SHA1(SHA1(pw)) is known: the cleartext is needed, and
            // only ever asked for over TLS.
            Credential::NativeHash(_) if tls => Step::AskCleartext,
            Credential::NativeHash(_) => switch(NATIVE),
        },
        _ => switch(NATIVE),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    /// A client packet with the wrong sequence id (e.g. a pipelined burst).
    #[error("packet out of order: sequence id {got}, expected {expected}")]
    OutOfOrder { got: u8, expected: u8 },
}

/// The account to authenticate `name` against: the configured one, or a
/// made-up one with a random secret when there is none (`known` false; the
/// caller must deny it whatever the exchange says). The made-up account has
/// the credential kind most configured users have, so it takes their path.
pub fn account(users: &[User], name: &str) -> (User, bool) {
    if let Some(u) = users.iter().find(|u| u.name == name) {
        return (u.clone(), true);
    }
    let hashes = users
        .iter()
        .filter(|u| matches!(u.credential, Credential::NativeHash(_)))
        .count();
    let nonce = auth::gen_nonce();
    let credential = if hashes * 2 > users.len() {
        Credential::NativeHash(nonce)
    } else {
        // Printable and never empty, like a real password.
        Credential::Password(nonce.iter().map(|&b| char::from(b)).collect())
    };
    let user = User {
        name: name.to_owned(),
        credential,
        max_connections: 0,
        require_tls: false,
        backend: None,
    };
    (user, false)
}

/// What an exchange established.
#[derive(Debug, Default)]
pub struct Proof {
    /// The client proved it knows the password.
    pub proved: bool,
    /// `SHA1(pw)` when proved (what a backend login as a server account
    /// is derived from; see `auth::native`).
    pub stage1: Option<[u8; 20]>,
    /// The exchange ended with a mysql_native_password answer to the
    /// greeting's nonce: kept to check again against accounts read anew.
    pub native_response: Option<Vec<u8>>,
}

/// `SHA1(pw)` for a proven native answer.
fn stage1_of(cred: &Credential, nonce: &[u8], response: &[u8]) -> Option<[u8; 20]> {
    match cred {
        Credential::NativeHash(h2) => crate::auth::native::recover_stage1(h2, nonce, response),
        Credential::Password(p) => Some(sha1(&[p.as_bytes()])),
    }
}

/// Run the exchange for `user`. `seq` is the id of sluice's next packet and
/// is left there.
pub async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut PacketStream<S>,
    seq: &mut u8,
    user: &User,
    plugin: Option<AuthPlugin<'static>>,
    nonce: &[u8; 20],
    first_response: &[u8],
    tls: bool,
) -> Result<Proof, ExchangeError> {
    let mut plugin = plugin.unwrap_or(AuthPlugin::MysqlNativePassword);
    let mut answer: Option<bytes::BytesMut> = None;
    let mut switched = false;
    // One round per step; each round but the last reads one packet.
    for _ in 0..=MAX_CLIENT_READS {
        let response = answer.as_deref().unwrap_or(first_response);
        match next_step(&user.credential, &plugin, response, tls, switched) {
            Step::VerifyNative => {
                let proved = auth::verify_native(&user.credential, nonce, response);
                return Ok(Proof {
                    proved,
                    stage1: if proved && !response.is_empty() {
                        stage1_of(&user.credential, nonce, response)
                    } else {
                        None
                    },
                    native_response: Some(response.to_vec()),
                });
            }
            Step::VerifySha2Fast => {
                let Credential::Password(pw) = &user.credential else {
                    return Ok(Proof::default());
                };
                if !auth::verify_sha2_fast(pw, nonce, response) {
                    return Ok(Proof::default());
                }
                // "fast auth success"; the OK follows.
                client.write_packet(seq, &[0x01, 0x03]).await?;
                return Ok(Proof {
                    proved: true,
                    stage1: (!pw.is_empty()).then(|| sha1(&[pw.as_bytes()])),
                    native_response: None,
                });
            }
            Step::AskCleartext => {
                // "perform full authentication": the client sends its
                // password in clear text over the encrypted channel.
                client.write_packet(seq, &[0x01, 0x04]).await?;
                let p = read_in_order(client, seq).await?;
                let proved = auth::verify_cleartext(&user.credential, &p);
                let pw = p.strip_suffix(&[0]).unwrap_or(&p);
                return Ok(Proof {
                    proved,
                    stage1: (proved && !pw.is_empty()).then(|| sha1(&[pw])),
                    native_response: None,
                });
            }
            Step::Switch(to) => {
                let mut req = Vec::with_capacity(1 + to.len() + 1 + 21);
                req.push(0xfe);
                req.extend_from_slice(to);
                req.push(0);
                req.extend_from_slice(nonce);
                req.push(0);
                client.write_packet(seq, &req).await?;
                answer = Some(read_in_order(client, seq).await?);
                plugin = AuthPlugin::from_bytes(to).into_owned();
                switched = true;
            }
            Step::Deny => return Ok(Proof::default()),
        }
    }
    Ok(Proof::default())
}

/// Read the client's next packet, which must carry sequence id `*seq`.
async fn read_in_order<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut PacketStream<S>,
    seq: &mut u8,
) -> Result<bytes::BytesMut, ExchangeError> {
    let p = client.read_packet().await?;
    if p.seq != *seq {
        return Err(ExchangeError::OutOfOrder {
            got: p.seq,
            expected: *seq,
        });
    }
    *seq = p.seq.wrapping_add(1);
    Ok(p.payload)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pw(p: &str) -> Credential {
        Credential::Password(p.into())
    }

    fn user(name: &str, credential: Credential) -> User {
        User {
            name: name.into(),
            credential,
            max_connections: 0,
            require_tls: false,
            backend: None,
        }
    }

    #[test]
    fn at_most_one_switch_whatever_the_client_answers() {
        let plugins = [
            AuthPlugin::MysqlNativePassword,
            AuthPlugin::CachingSha2Password,
            AuthPlugin::Other(b"dialog".as_slice().into()),
            AuthPlugin::Other(b"mysql_clear_password".as_slice().into()),
        ];
        for cred in [pw("s"), pw(""), Credential::NativeHash([3; 20])] {
            for tls in [false, true] {
                for plugin in &plugins {
                    for response in [&[][..], &[1u8; 20][..]] {
                        let first = next_step(&cred, plugin, response, tls, false);
                        if let Step::Switch(to) = first {
                            let to = AuthPlugin::from_bytes(to);
                            for again in [&[][..], &[1u8; 20][..]] {
                                let second = next_step(&cred, &to, again, tls, true);
                                assert!(
                                    !matches!(second, Step::Switch(_)),
                                    "{cred:?} {plugin:?} tls={tls}: switched twice"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn cleartext_only_over_tls() {
        let hash = Credential::NativeHash([3; 20]);
        let sha2 = AuthPlugin::CachingSha2Password;
        assert_eq!(
            next_step(&hash, &sha2, &[1; 32], false, false),
            Step::Switch(NATIVE)
        );
        assert_eq!(next_step(&hash, &sha2, &[1; 32], true, false), Step::AskCleartext);
        assert_eq!(next_step(&hash, &sha2, &[], false, false), Step::Switch(NATIVE));
        assert_eq!(next_step(&hash, &sha2, &[], true, false), Step::Switch(SHA2));
        assert_eq!(next_step(&hash, &sha2, &[], true, true), Step::AskCleartext);
    }

    #[test]
    fn unknown_users_get_an_account_of_the_usual_kind() {
        let users = [user("a", pw("x")), user("b", Credential::NativeHash([1; 20]))];
        let (known, is_known) = account(&users, "b");
        assert!(is_known);
        assert_eq!(known.credential, Credential::NativeHash([1; 20]));
        let (ghost, is_known) = account(&users, "ghost");
        assert!(!is_known);
        assert_eq!(ghost.name, "ghost");
        assert!(matches!(&ghost.credential, Credential::Password(p) if p.len() == 20));
        let hashes = [user("a", Credential::NativeHash([1; 20]))];
        assert!(matches!(
            account(&hashes, "ghost").0.credential,
            Credential::NativeHash(_)
        ));
    }

    /// The attack that crashed sluice: thousands of empty answers pipelined
    /// after the handshake response. The exchange reads at most
    /// MAX_CLIENT_READS packets and stops at the first one out of order.
    #[tokio::test]
    async fn pipelined_empty_answers_end_the_exchange() {
        let (mut near, far) = tokio::io::duplex(1 << 20);
        let mut burst = Vec::new();
        for i in 0..3000u32 {
            // Empty packets with consecutive sequence ids, as the attack sent.
            burst.extend_from_slice(&[0, 0, 0, (i + 3) as u8]);
        }
        tokio::io::AsyncWriteExt::write_all(&mut near, &burst)
            .await
            .unwrap();
        let mut stream = PacketStream::new(far, 1 << 16);
        let u = user("app", pw("secret"));
        let mut seq = 2;
        let nonce = auth::gen_nonce();
        let r = authenticate(
            &mut stream,
            &mut seq,
            &u,
            Some(AuthPlugin::CachingSha2Password),
            &nonce,
            &[],
            false,
        )
        .await;
        assert!(!r.unwrap().proved, "an empty answer is not the password");
        // One switch was answered; the rest of the burst was never read.
        assert_eq!(seq, 4);

        // The same burst with a sequence id off by one is refused at once.
        let (mut near, far) = tokio::io::duplex(1 << 16);
        tokio::io::AsyncWriteExt::write_all(&mut near, &[0, 0, 0, 9])
            .await
            .unwrap();
        let mut stream = PacketStream::new(far, 1 << 16);
        let mut seq = 2;
        let r = authenticate(
            &mut stream,
            &mut seq,
            &u,
            Some(AuthPlugin::CachingSha2Password),
            &nonce,
            &[],
            false,
        )
        .await;
        assert!(
            matches!(r, Err(ExchangeError::OutOfOrder { got: 9, expected: 3 })),
            "{r:?}"
        );
    }
}
