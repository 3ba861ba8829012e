//! mysql_native_password without the password.
//!
//! The client answers a nonce with `SHA1(pw) XOR SHA1(nonce ‖ SHA1(SHA1(pw)))`.
//! The server stores `h2 = SHA1(SHA1(pw))` (the `*HEX` string). Given h2,
//! the answer yields `h1 = SHA1(pw)`, and `SHA1(h1) == h2` proves it; with
//! h1, sluice can answer any other server's nonce for the same account
//! (`h1 XOR SHA1(nonce' ‖ h2)`). h1 is as good as the password for this
//! plugin (not for others), so it lives only in memory, in the account's
//! backend login, and is never written anywhere.

use crate::protocol::native_password::sha1;

/// `h1` from a client's 20-byte answer to `nonce`, if it proves the
/// password whose stored hash is `h2`; `None` when it does not.
pub fn recover_stage1(h2: &[u8; 20], nonce: &[u8], response: &[u8]) -> Option<[u8; 20]> {
    if response.len() != 20 {
        return None;
    }
    let mix = sha1(&[nonce, h2]);
    let mut h1 = [0u8; 20];
    for i in 0..20 {
        h1[i] = response[i] ^ mix[i];
    }
    let check = sha1(&[&h1]);
    let same: bool = subtle::ConstantTimeEq::ct_eq(&check[..], &h2[..]).into();
    same.then_some(h1)
}

/// Decode a `*HEX40` mysql_native_password authentication string.
pub fn parse_hash(s: &str) -> Option<[u8; 20]> {
    let hex = s.strip_prefix('*')?;
    if hex.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::native_password::scramble_with_stage1;

    #[test]
    fn derive_the_backend_answer_from_the_client_answer() {
        let client_nonce = b"abcdefghijklmnopqrst";
        let server_nonce = b"ABCDEFGHIJKLMNOPQRST";
        let h2 = sha1(&[&sha1(&[b"s3cret"])]);
        let resp = mysql_common::scramble::scramble_native(client_nonce, b"s3cret").unwrap_or([0; 20]);
        let h1 = recover_stage1(&h2, client_nonce, &resp);
        assert_eq!(h1, Some(sha1(&[b"s3cret"])));
        let direct = mysql_common::scramble::scramble_native(server_nonce, b"s3cret").unwrap_or([1; 20]);
        assert_eq!(h1.map(|h| scramble_with_stage1(&h, server_nonce)), Some(direct));
        let wrong = mysql_common::scramble::scramble_native(client_nonce, b"other").unwrap_or([0; 20]);
        assert_eq!(recover_stage1(&h2, client_nonce, &wrong), None);
        assert_eq!(recover_stage1(&h2, client_nonce, &resp[..19]), None);
    }

    #[test]
    fn hashes() {
        // SELECT PASSWORD('app') on MariaDB.
        let h = parse_hash("*5BCB3E6AC345B435C7C2E6B7949A04CE6F6563D3");
        assert_eq!(h, Some(sha1(&[&sha1(&[b"app"])])));
        assert_eq!(parse_hash("5BCB3E6AC345B435C7C2E6B7949A04CE6F6563D3"), None);
        assert_eq!(parse_hash("*5BCB"), None);
        assert_eq!(parse_hash("*ZZCB3E6AC345B435C7C2E6B7949A803CE0F9E74D"), None);
        assert_eq!(parse_hash("*5BCB3E6AC345B435C7C2E6B7949A04CE6F6563\u{e9}"), None);
    }
}
