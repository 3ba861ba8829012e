//! mysql_native_password's arithmetic, for both ends of a login: the client's
//! answer to a nonce is `SHA1(pw) XOR SHA1(nonce ‖ SHA1(SHA1(pw)))`. Here
//! rather than in `auth`, because the backend answers with it too
//! (`backend::conn`), and the backend layer sits below `auth`.

use sha1::{Digest, Sha1};

/// SHA1 of the concatenated `parts`.
pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The answer to `nonce` for the account whose `SHA1(pw)` is `h1`.
pub fn scramble_with_stage1(h1: &[u8; 20], nonce: &[u8]) -> [u8; 20] {
    let h2 = sha1(&[h1]);
    let mix = sha1(&[nonce, &h2]);
    let mut out = [0u8; 20];
    for i in 0..20 {
        out[i] = h1[i] ^ mix[i];
    }
    out
}
