//! mysql_native_password hashes as `password_hash` holds them.

use sha1::{Digest, Sha1};

/// The mysql_native_password hash stored by MySQL: SHA1(SHA1(password)).
pub fn native_password_hash(password: &[u8]) -> [u8; 20] {
    let stage1 = Sha1::digest(password);
    Sha1::digest(stage1).into()
}

/// Formats a hash as MySQL prints it (`SELECT PASSWORD(...)`): `*` + 40
/// uppercase hex digits, the form `password_hash` accepts.
pub fn format_native_hash(hash: &[u8; 20]) -> String {
    let mut text = String::with_capacity(41);
    text.push('*');
    for byte in hash {
        text.push_str(&format!("{byte:02X}"));
    }
    text
}

/// Parses `*` + 40 hex digits (either case) into the 20-byte hash.
pub fn parse_native_hash(text: &str) -> Result<[u8; 20], String> {
    let usage = "a mysql_native_password hash is `*` followed by 40 hex digits \
                 (print one with `sluice hash-password`)";
    // The value is never echoed: a password pasted here by mistake must not
    // end up in a terminal or a log.
    let hex = text
        .strip_prefix('*')
        .ok_or_else(|| format!("the value does not start with `*`: {usage}"))?;
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("the value is not a valid hash: {usage}"));
    }
    let mut hash = [0u8; 20];
    for (byte, pair) in hash.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
        *byte = (hex_value(pair[0]) << 4) | hex_value(pair[1]);
    }
    Ok(hash)
}

/// The value of one hex digit already checked with `is_ascii_hexdigit`.
fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit.wrapping_sub(b'A').wrapping_add(10),
    }
}
