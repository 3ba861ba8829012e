use std::time::Duration;

use crate::protocol::packets::ErrPacket;
use crate::protocol::ProtocolError;

/// Errors of the backend layer: connecting to, authenticating with, or
/// talking to a MySQL server.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("{0}")]
    Connect(std::io::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    /// The server answered with an error (e.g. access denied).
    #[error("{0}")]
    Server(ErrPacket),
    /// TLS could not be set up as `tls.mode` demands (no TLS offered, a
    /// certificate that fails verification, unreadable files).
    #[error("TLS: {0}")]
    Tls(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("pool: {0}")]
    Pool(String),
    /// Every pooled connection is in use and none was freed in time.
    #[error("all {max} connections to this backend are in use")]
    PoolFull { max: usize },
}
