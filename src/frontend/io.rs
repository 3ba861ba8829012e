//! A client socket, plain or TLS, behind one type.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

pub enum ClientIo {
    Plain(TcpStream),
    Tls(Box<TlsStream<Prefixed>>),
}

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
    pub fn is_tls(&self) -> bool {
        matches!(self, ClientIo::Tls(_))
    }
}

impl AsyncRead for ClientIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientIo::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ClientIo::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientIo::Plain(s) => Pin::new(s).poll_write(cx, buf),
            ClientIo::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientIo::Plain(s) => Pin::new(s).poll_flush(cx),
            ClientIo::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientIo::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ClientIo::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl ClientIo {
    /// The peer's IP address, for error messages.
    pub fn peer_ip(&self) -> Option<String> {
        let tcp = match self {
            ClientIo::Plain(s) => s,
            ClientIo::Tls(s) => &s.get_ref().0.inner,
        };
        tcp.peer_addr().ok().map(|a| a.ip().to_string())
    }
}
