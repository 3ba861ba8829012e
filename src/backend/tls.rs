//! TLS from sluice to backends, with the MySQL client's `--ssl-mode`
//! semantics: `preferred` and `required` encrypt without checking the
//! certificate, `verify_ca` checks that it chains to the configured CA,
//! `verify_identity` also that it names the server. Both sluice's own
//! connections (tokio-rustls, ring) and the mysql_async probe connections
//! are configured from the same [`BackendTls`] (the latter through
//! `auth_guard` unless the mode verifies the certificate).

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{self, CryptoProvider};
use tokio_rustls::rustls::{self, CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_rustls::TlsConnector;

use crate::config::{BackendTls, BackendTlsMode};
use crate::protocol::transport::Transport;
use crate::protocol::{PacketStream, ProtocolError};

use super::{BackendError, BackendIo};

/// What a backend connection needs to start TLS, built once per backend.
pub struct TlsSettings {
    pub mode: BackendTlsMode,
    pub connector: TlsConnector,
    /// The name sent (SNI) and, under `verify_identity`, checked.
    pub server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("mode", &self.mode)
            .field("server_name", &self.server_name)
            .finish()
    }
}

/// The settings for reaching `addr` (`host:port`); `None` when TLS is
/// disabled. Fails on unreadable or invalid PEM files and names.
pub fn settings(tls: &BackendTls, addr: &str) -> Result<Option<Arc<TlsSettings>>, String> {
    if tls.mode == BackendTlsMode::Disabled {
        return Ok(None);
    }
    let provider = Arc::new(crypto::ring::default_provider());
    let chain = match (tls.mode, &tls.ca) {
        (BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity, Some(ca)) => {
            let roots = root_store(ca)?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("CA {}: {e}", ca.display()))?;
            Some(webpki)
        }
        (BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity, None) => {
            return Err(format!("tls mode {} needs `ca`", tls.mode.as_str()))
        }
        _ => None,
    };
    let verifier = Arc::new(ModeVerifier {
        chain,
        check_name: tls.mode == BackendTlsMode::VerifyIdentity,
        provider: provider.clone(),
    });
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match &tls.client_cert {
        Some((cert, key)) => {
            let chain = certificates(cert)?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("reading private key {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate {}: {e}", cert.display()))?
        }
        None => builder.with_no_client_auth(),
    };
    let host = tls
        .server_name
        .clone()
        .unwrap_or_else(|| host_of(addr).to_owned());
    let server_name =
        ServerName::try_from(host.clone()).map_err(|_| format!("`{host}` is not a valid TLS server name"))?;
    Ok(Some(Arc::new(TlsSettings {
        mode: tls.mode,
        connector: TlsConnector::from(Arc::new(config)),
        server_name,
    })))
}

/// Send the SSL request (the first 32 bytes of the handshake response
/// `response`, which carries CLIENT_SSL) and run the TLS handshake on the
/// socket; the full response then goes over TLS, in packets of at most
/// `max_packet` bytes. For sluice's own logins and `auth_guard`'s.
pub(super) async fn start(
    mut stream: PacketStream<BackendIo>,
    seq: &mut u8,
    response: &[u8],
    tls: &TlsSettings,
    max_packet: usize,
) -> Result<PacketStream<BackendIo>, BackendError> {
    let request = response.get(..32).ok_or(ProtocolError::Malformed(
        "handshake response shorter than an SSL request",
    ))?;
    stream.write_packet(seq, request).await?;
    let (io, unread) = stream.into_parts();
    let Transport::Plain(tcp) = io else {
        return Err(BackendError::Tls("TLS was already started".into()));
    };
    if !unread.is_empty() {
        return Err(ProtocolError::Malformed("data from the server before the TLS handshake").into());
    }
    let encrypted = tls
        .connector
        .connect(tls.server_name.clone(), tcp)
        .await
        .map_err(|e| BackendError::Tls(format!("handshake failed ({}): {e}", tls.mode.as_str())))?;
    Ok(PacketStream::new(Transport::Tls(Box::new(encrypted)), max_packet))
}

/// mysql_async's own TLS for a verified mode (`verify_ca`,
/// `verify_identity`). The other modes never reach the server through
/// mysql_async's TLS: mysql_async would answer a request for the password
/// over any TLS, so those connections go through `auth_guard`, which does
/// the TLS itself; they get `None` here.
pub fn mysql_async_opts(tls: &BackendTls) -> Option<mysql_async::SslOpts> {
    let opts = mysql_async::SslOpts::default();
    match tls.mode {
        BackendTlsMode::Disabled | BackendTlsMode::Preferred | BackendTlsMode::Required => None,
        BackendTlsMode::VerifyCa | BackendTlsMode::VerifyIdentity => {
            let mut opts = opts
                .with_root_certs(tls.ca.iter().map(|ca| ca.clone().into()).collect())
                .with_disable_built_in_roots(true)
                .with_danger_skip_domain_validation(tls.mode == BackendTlsMode::VerifyCa);
            // Without an override mysql_async checks the host it dials.
            opts = opts.with_danger_tls_hostname_override(tls.server_name.clone());
            if let Some((cert, key)) = &tls.client_cert {
                opts = opts.with_client_identity(Some(mysql_async::ClientIdentity::new(
                    cert.clone().into(),
                    key.clone().into(),
                )));
            }
            Some(opts)
        }
    }
}

/// `host` of `host:port` or `[v6]:port`.
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

fn certificates(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("reading certificate {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("parsing certificate {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate found in {}", path.display()));
    }
    Ok(certs)
}

fn root_store(ca: &std::path::Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(ca)? {
        roots
            .add(cert)
            .map_err(|e| format!("CA certificate {}: {e}", ca.display()))?;
    }
    Ok(roots)
}

/// The certificate check of one mode. `chain: None` (`preferred`,
/// `required`): any certificate is accepted, as the MySQL client does in
/// these modes. Otherwise it must chain to the CA, and, with `check_name`
/// (`verify_identity`), name the server. The handshake signatures are always
/// checked, so the peer holds the key of the certificate it sent.
#[derive(Debug)]
struct ModeVerifier {
    chain: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ModeVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_addresses() {
        assert_eq!(host_of("127.0.0.1:3306"), "127.0.0.1");
        assert_eq!(host_of("db.example:3306"), "db.example");
        assert_eq!(host_of("[::1]:3306"), "::1");
    }

    #[test]
    fn disabled_builds_nothing_and_missing_files_are_named() {
        assert!(settings(&BackendTls::default(), "h:1")
            .expect("disabled")
            .is_none());
        let tls = BackendTls {
            mode: BackendTlsMode::VerifyCa,
            ca: Some("/nonexistent/ca.pem".into()),
            ..BackendTls::default()
        };
        let e = settings(&tls, "h:1").expect_err("missing CA file");
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let required = BackendTls {
            mode: BackendTlsMode::Required,
            ..BackendTls::default()
        };
        let s = settings(&required, "127.0.0.1:3306")
            .expect("required")
            .expect("some");
        assert_eq!(s.server_name.to_str(), "127.0.0.1");
    }
}
