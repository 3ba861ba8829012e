use std::io;

/// Errors of the wire layer: the peer broke the protocol or went away.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("connection closed by peer")]
    Closed,
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("packet of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("malformed packet: {0}")]
    Malformed(&'static str),
    #[error("unexpected sequence id {got}, expected {expected}")]
    Sequence { got: u8, expected: u8 },
}

impl ProtocolError {
    /// True when the peer simply left: not worth a warning in the log.
    pub fn is_disconnect(&self) -> bool {
        match self {
            ProtocolError::Closed => true,
            ProtocolError::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionAborted
            ),
            _ => false,
        }
    }
}
