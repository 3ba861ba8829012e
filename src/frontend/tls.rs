//! Frontend TLS: a rustls server config (ring provider) from PEM files.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;
use crate::error::Error;

pub fn acceptor(cfg: &TlsConfig) -> Result<TlsAcceptor, Error> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cfg.cert)
        .map_err(|e| Error::Tls(format!("reading certificate {}: {e}", cfg.cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Tls(format!("parsing certificate {}: {e}", cfg.cert.display())))?;
    if certs.is_empty() {
        return Err(Error::Tls(format!(
            "no certificate found in {}",
            cfg.cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(&cfg.key)
        .map_err(|e| Error::Tls(format!("reading private key {}: {e}", cfg.key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Tls(format!("certificate/key: {e}")))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
