//! Verifying client credentials: pure functions, no I/O.
//!
//! mysql_native_password: the client sends SHA1(pw) XOR SHA1(nonce ‖ SHA1(SHA1(pw))).
//! Knowing only SHA1(SHA1(pw)) (the `*HEX` hash) is enough to check it.
//! caching_sha2_password fast path: XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)) ‖ nonce)),
//! which needs the cleartext password; with only a native hash sluice asks
//! for the cleartext over TLS, or switches the client to mysql_native_password.

use rand::Rng;

use crate::config::Credential;
use crate::protocol::native_password::sha1;

/// 20 random printable bytes: NUL-free so every client parses the scramble.
pub fn gen_nonce() -> [u8; 20] {
    let mut rng = rand::rng();
    let mut n = [0u8; 20];
    for b in n.iter_mut() {
        *b = rng.random_range(0x21u8..0x7f);
    }
    n
}

/// Equality in time independent of where the bytes differ (subtle); slices
/// of different lengths are unequal.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

/// Is this the empty password? (The client then sends an empty response.)
fn is_empty(cred: &Credential) -> bool {
    matches!(cred, Credential::Password(p) if p.is_empty())
}

pub fn verify_native(cred: &Credential, nonce: &[u8], response: &[u8]) -> bool {
    if response.is_empty() {
        return is_empty(cred);
    }
    let stage2 = match cred {
        Credential::Password(p) => sha1(&[&sha1(&[p.as_bytes()])]),
        Credential::NativeHash(h) => *h,
    };
    crate::auth::native::recover_stage1(&stage2, nonce, response).is_some()
}

/// caching_sha2_password fast path; only possible with a cleartext password.
pub fn verify_sha2_fast(password: &str, nonce: &[u8], response: &[u8]) -> bool {
    if response.is_empty() {
        return password.is_empty();
    }
    match mysql_common::scramble::scramble_sha256(nonce, password.as_bytes()) {
        Some(expected) => ct_eq(&expected, response),
        None => false,
    }
}

/// A cleartext password sent by the client (caching_sha2 full auth over TLS).
pub fn verify_cleartext(cred: &Credential, password: &[u8]) -> bool {
    let password = password.strip_suffix(&[0]).unwrap_or(password);
    match cred {
        Credential::Password(p) => ct_eq(p.as_bytes(), password),
        Credential::NativeHash(h) => !password.is_empty() && ct_eq(&sha1(&[&sha1(&[password])]), h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_with_password_and_hash() {
        let nonce = gen_nonce();
        let resp = mysql_common::scramble::scramble_native(&nonce, b"secret").expect("scramble");
        let cred = Credential::Password("secret".into());
        assert!(verify_native(&cred, &nonce, &resp));
        let hash = sha1(&[&sha1(&[b"secret"])]);
        assert!(verify_native(&Credential::NativeHash(hash), &nonce, &resp));
        assert!(!verify_native(
            &Credential::Password("other".into()),
            &nonce,
            &resp
        ));
        assert!(!verify_native(&cred, &nonce, &[]));
        assert!(verify_native(&Credential::Password(String::new()), &nonce, &[]));
    }

    #[test]
    fn sha2_fast_and_cleartext() {
        let nonce = gen_nonce();
        let resp = mysql_common::scramble::scramble_sha256(&nonce, b"pw").expect("scramble");
        assert!(verify_sha2_fast("pw", &nonce, &resp));
        assert!(!verify_sha2_fast("px", &nonce, &resp));
        let hash = sha1(&[&sha1(&[b"pw"])]);
        assert!(verify_cleartext(&Credential::NativeHash(hash), b"pw\0"));
        assert!(!verify_cleartext(&Credential::NativeHash(hash), b"pq\0"));
    }
}
