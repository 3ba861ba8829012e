//! A self-signed certificate for `tls:` sections, and client options that
//! accept it.

use std::path::PathBuf;

/// `cert.pem` and `key.pem` for `localhost`, in a directory kept as long as
/// this value.
pub struct SelfSigned {
    _dir: tempfile::TempDir,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn self_signed() -> SelfSigned {
    let dir = tempfile::tempdir().expect("tempdir");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).expect("cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("key");
    SelfSigned { _dir: dir, cert, key }
}

/// TLS that accepts any certificate (the tests' own self-signed one).
pub fn any_cert() -> mysql_async::SslOpts {
    mysql_async::SslOpts::default()
        .with_danger_accept_invalid_certs(true)
        .with_danger_skip_domain_validation(true)
}
