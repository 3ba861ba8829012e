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
}
