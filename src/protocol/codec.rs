//! Framing: 4-byte headers (3-byte little-endian length, 1-byte sequence id),
//! payloads of 16 MiB - 1 or more split into several frames.
//!
//! `PacketStream` owns one socket with a read buffer and a write buffer, so a
//! session can relay a whole batch of backend frames to its client with one
//! write, and never allocates per packet on the hot path.

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::consts::MAX_FRAME;
use super::error::ProtocolError;

/// Bytes reserved per read. Small, because every idle client holds one read
/// buffer; it grows when a peer sends more (and `trim` gives it back).
const READ_CHUNK: usize = 8 * 1024;
/// Buffers that grew beyond this during a big transfer are released once
/// they are empty again, so thousands of idle sessions stay small.
const KEEP_CAPACITY: usize = 64 * 1024;

/// One logical packet (continuation frames joined).
#[derive(Debug)]
pub struct Packet {
    /// Sequence id of the last frame of the packet.
    pub seq: u8,
    pub payload: BytesMut,
}

/// Header of one complete frame sitting in a read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: usize,
    pub seq: u8,
}

impl FrameHeader {
    /// Header plus payload.
    pub fn total(&self) -> usize {
        4 + self.len
    }
}

/// Parse the header of the first frame in `buf` if the whole frame is there.
pub fn complete_frame(buf: &[u8]) -> Option<FrameHeader> {
    if buf.len() < 4 {
        return None;
    }
    let len = usize::from(buf[0]) | usize::from(buf[1]) << 8 | usize::from(buf[2]) << 16;
    if buf.len() < 4 + len {
        return None;
    }
    Some(FrameHeader { len, seq: buf[3] })
}

pub struct PacketStream<S> {
    io: S,
    pub rbuf: BytesMut,
    pub wbuf: BytesMut,
    /// Largest logical packet accepted from this peer.
    max_packet: usize,
}

impl<S> PacketStream<S> {
    pub fn new(io: S, max_packet: usize) -> Self {
        PacketStream {
            io,
            rbuf: BytesMut::new(),
            wbuf: BytesMut::new(),
            max_packet,
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.io
    }

    pub fn get_mut(&mut self) -> &mut S {
        &mut self.io
    }

    /// Give back the socket and any bytes read but not consumed (a client
    /// may send its TLS ClientHello right behind the SSL request).
    pub fn into_parts(self) -> (S, BytesMut) {
        (self.io, self.rbuf)
    }

    /// Release buffers that grew large, once they are empty.
    pub fn trim(&mut self) {
        if self.rbuf.is_empty() && self.rbuf.capacity() > KEEP_CAPACITY {
            self.rbuf = BytesMut::new();
        }
        if self.wbuf.is_empty() && self.wbuf.capacity() > KEEP_CAPACITY {
            self.wbuf = BytesMut::new();
        }
    }

    /// Queue one logical packet, splitting it into frames. `seq` is the id of
    /// the first frame and is left at the id the next packet must use.
    pub fn queue(&mut self, seq: &mut u8, payload: &[u8]) {
        queue_frames(&mut self.wbuf, seq, payload);
    }
}

/// Append `payload` as frames to `out`, advancing `seq`.
pub fn queue_frames(out: &mut BytesMut, seq: &mut u8, payload: &[u8]) {
    out.reserve(payload.len() + 4 * (payload.len() / MAX_FRAME + 1));
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_FRAME);
        out.put_uint_le(n as u64, 3);
        out.put_u8(*seq);
        *seq = seq.wrapping_add(1);
        out.put_slice(&rest[..n]);
        rest = &rest[n..];
        // A frame of exactly MAX_FRAME bytes announces a continuation, which
        // may be empty.
        if n < MAX_FRAME {
            break;
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> PacketStream<S> {
    /// Read more bytes into the read buffer; `Closed` on EOF.
    pub async fn fill(&mut self) -> Result<usize, ProtocolError> {
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK / 2 {
            self.rbuf.reserve(READ_CHUNK);
        }
        let n = self.io.read_buf(&mut self.rbuf).await?;
        if n == 0 {
            return Err(ProtocolError::Closed);
        }
        Ok(n)
    }

    /// Wait until one whole frame is buffered and return its header.
    pub async fn frame(&mut self) -> Result<FrameHeader, ProtocolError> {
        loop {
            if let Some(h) = complete_frame(&self.rbuf) {
                return Ok(h);
            }
            self.reserve_for_frame()?;
            self.fill().await?;
        }
    }

    /// When a frame header is buffered, make room for the whole frame at
    /// once (one allocation for a 16 MiB frame, not many), after checking it
    /// against the packet limit so a hostile length cannot make us buffer.
    pub fn reserve_for_frame(&mut self) -> Result<(), ProtocolError> {
        if self.rbuf.len() >= 4 {
            let len =
                usize::from(self.rbuf[0]) | usize::from(self.rbuf[1]) << 8 | usize::from(self.rbuf[2]) << 16;
            if len > self.max_packet {
                return Err(ProtocolError::TooLarge {
                    size: len,
                    limit: self.max_packet,
                });
            }
            let want = 4 + len;
            if want > self.rbuf.len() {
                self.rbuf.reserve(want - self.rbuf.len());
            }
        }
        Ok(())
    }

    pub fn set_max_packet(&mut self, max_packet: usize) {
        self.max_packet = max_packet;
    }

    /// Wait until a frame header is buffered and return it (the frame's
    /// payload may not be buffered yet).
    async fn header(&mut self) -> Result<FrameHeader, ProtocolError> {
        while self.rbuf.len() < 4 {
            self.fill().await?;
        }
        let b = &self.rbuf;
        Ok(FrameHeader {
            len: usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16,
            seq: b[3],
        })
    }

    /// Read one logical packet, joining continuation frames.
    pub async fn read_packet(&mut self) -> Result<Packet, ProtocolError> {
        let first = self.header().await?;
        if first.len > self.max_packet {
            return Err(ProtocolError::TooLarge {
                size: first.len,
                limit: self.max_packet,
            });
        }
        if first.len < MAX_FRAME {
            let first = self.frame().await?;
            self.rbuf.advance(4);
            let payload = self.rbuf.split_to(first.len);
            return Ok(Packet {
                seq: first.seq,
                payload,
            });
        }
        // A packet of 16 MiB or more: its frames are read straight into the
        // payload, not through the read buffer, so the packet is in memory
        // once (not once more per frame in the read buffer) and copied once.
        let mut payload = BytesMut::new();
        let mut seq = first.seq;
        loop {
            let h = self.header().await?;
            if h.seq != seq {
                return Err(ProtocolError::Sequence {
                    got: h.seq,
                    expected: seq,
                });
            }
            if payload.len() + h.len > self.max_packet {
                return Err(ProtocolError::TooLarge {
                    size: payload.len() + h.len,
                    limit: self.max_packet,
                });
            }
            self.rbuf.advance(4);
            payload.reserve(h.len);
            let buffered = self.rbuf.len().min(h.len);
            payload.extend_from_slice(&self.rbuf[..buffered]);
            self.rbuf.advance(buffered);
            let mut rest = (h.len - buffered) as u64;
            while rest > 0 {
                let n = (&mut self.io).take(rest).read_buf(&mut payload).await?;
                if n == 0 {
                    return Err(ProtocolError::Closed);
                }
                rest -= n as u64;
            }
            if h.len < MAX_FRAME {
                return Ok(Packet { seq: h.seq, payload });
            }
            seq = seq.wrapping_add(1);
        }
    }

    /// Queue and flush one packet.
    pub async fn write_packet(&mut self, seq: &mut u8, payload: &[u8]) -> Result<(), ProtocolError> {
        self.queue(seq, payload);
        self.flush().await
    }

    /// Write out everything queued.
    pub async fn flush(&mut self) -> Result<(), ProtocolError> {
        if !self.wbuf.is_empty() {
            self.io.write_all(&self.wbuf).await?;
            self.wbuf.clear();
        }
        self.io.flush().await?;
        Ok(())
    }

    pub async fn shutdown(&mut self) {
        let _ = self.flush().await;
        let _ = self.io.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_at_max_frame_adds_empty_continuation() {
        let payload = vec![7u8; MAX_FRAME];
        let mut out = BytesMut::new();
        let mut seq = 0;
        queue_frames(&mut out, &mut seq, &payload);
        assert_eq!(seq, 2);
        assert_eq!(out.len(), MAX_FRAME + 8);
        assert_eq!(&out[MAX_FRAME + 4..], &[0, 0, 0, 1]);
    }

    #[tokio::test]
    async fn read_joins_frames() {
        let payload: Vec<u8> = (0..(MAX_FRAME + 10)).map(|i| i as u8).collect();
        let mut framed = BytesMut::new();
        let mut seq = 3;
        queue_frames(&mut framed, &mut seq, &payload);
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let writer = tokio::spawn(async move {
            b.write_all(&framed).await.expect("write");
            b
        });
        let mut ps = PacketStream::new(a, 1 << 30);
        let p = ps.read_packet().await.expect("read");
        assert_eq!(p.seq, 4);
        assert_eq!(&p.payload[..], &payload[..]);
        drop(writer);
    }

    /// A big packet's frames are read straight into its payload: not one
    /// byte of the packet after it may end up there.
    #[tokio::test]
    async fn big_packet_then_small_one() {
        let big: Vec<u8> = (0..(2 * MAX_FRAME + 3)).map(|i| (i % 251) as u8).collect();
        let mut framed = BytesMut::new();
        let mut seq = 0;
        queue_frames(&mut framed, &mut seq, &big);
        let mut next = 0;
        queue_frames(&mut framed, &mut next, b"after");
        let (a, mut b) = tokio::io::duplex(64 * 1024);
        let writer = tokio::spawn(async move {
            b.write_all(&framed).await.expect("write");
            b
        });
        let mut ps = PacketStream::new(a, 1 << 30);
        let p = ps.read_packet().await.expect("big");
        assert_eq!(p.seq, 2);
        assert!(p.payload[..] == big[..], "big payload intact");
        let p = ps.read_packet().await.expect("small");
        assert_eq!((p.seq, &p.payload[..]), (0, &b"after"[..]));
        drop(writer);
    }

    #[tokio::test]
    async fn oversized_packet_is_refused() {
        let payload = vec![1u8; MAX_FRAME + 5];
        let mut framed = BytesMut::new();
        let mut seq = 0;
        queue_frames(&mut framed, &mut seq, &payload);
        let (a, mut b) = tokio::io::duplex(1 << 25);
        b.write_all(&framed).await.expect("write");
        let mut ps = PacketStream::new(a, 1024);
        assert!(matches!(
            ps.read_packet().await,
            Err(ProtocolError::TooLarge { .. })
        ));
    }
}
