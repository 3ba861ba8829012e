//! A client socket, plain or TLS, behind one type.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::protocol::transport::Transport;
use tokio_rustls::server::TlsStream;

/// A client socket: plain, or TLS after the client's SSL request.
pub type ClientIo = Transport<TcpStream, TlsStream<Prefixed>>;

/// A socket with some bytes already read from it in front: what the client
/// sent right after its SSL request belongs to the TLS handshake.
pub struct Prefixed {
    prefix: bytes::BytesMut,
    pub inner: TcpStream,
}

impl Prefixed {
    pub fn new(prefix: bytes::BytesMut, inner: TcpStream) -> Prefixed {
        Prefixed { prefix, inner }
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if !me.prefix.is_empty() {
            let n = me.prefix.len().min(buf.remaining());
            buf.put_slice(&me.prefix.split_to(n));
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl ClientIo {
    /// The peer's IP address, for error messages.
    pub fn peer_ip(&self) -> Option<String> {
        let tcp = match self {
            Transport::Plain(s) => s,
            Transport::Tls(s) => &s.get_ref().0.inner,
        };
        tcp.peer_addr().ok().map(|a| a.ip().to_string())
    }
}
