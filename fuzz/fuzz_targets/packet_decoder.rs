//! Packet framing as sluice reads it from a client (`PacketStream::read_packet`,
//! 16 MiB continuation frames, the packet size limit), the response tracker the
//! relay feeds with backend frames, and the OK/ERR/EOF/lenenc parsers.
//!
//! Input: one config byte (bits 0-1: the packet limit, 2-3: bytes per read,
//! 4: frame script instead of raw bytes, 5-7: the tracker's response kind and
//! EOF convention for long streams), then the raw stream bytes or a frame
//! script (see `script`). Properties checked: nothing panics; a decoded packet never
//! exceeds the limit; for well-formed frame scripts the decoded packets are
//! exactly the ones the frames describe; the tracker's `prepared` info only
//! comes from a packet long enough for the relay to rewrite its statement id;
//! parsed OK/ERR packets survive an encode/parse round trip.
#![no_main]

use std::cell::RefCell;
use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use sluice::protocol::codec::{complete_frame, queue_frames};
use sluice::protocol::consts::MAX_FRAME;
use sluice::protocol::packets::{
    ok_packet, parse_eof_status, parse_ok, put_lenenc, read_lenenc, terminator_status, ErrPacket,
};
use sluice::protocol::response::{ResponseKind, ResponseTracker, Step};
use sluice::protocol::{PacketStream, ProtocolError};

/// Packet limits to run under: the handshake's, a tiny one, one just above a
/// single frame, and the default-sized one.
const LIMITS: [usize; 4] = [64 * 1024, 1024, MAX_FRAME + 100, 1 << 30];
/// 16 MiB frames per input, so one input stays fast.
const MAX_BIG_FRAMES: usize = 2;
/// Frames the decoder and the tracker look at per input: 16 MiB of zeros
/// read out of frame alignment are four million empty frames, fine for the
/// code but minutes for an instrumented build.
const MAX_FRAMES: usize = 50_000;

const KINDS: [ResponseKind; 6] = [
    ResponseKind::Query,
    ResponseKind::Execute,
    ResponseKind::Prepare,
    ResponseKind::Fetch,
    ResponseKind::FieldList,
    ResponseKind::Single,
];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("tokio runtime")
    })
}

/// A byte source handing out at most `step` bytes per read, so frames arrive
/// split at arbitrary points; writes are discarded.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.data.len().min(self.step).min(buf.remaining());
        let (now, later) = self.data.split_at(n);
        buf.put_slice(now);
        self.data = later;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Trickle<'_> {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Script ops:
/// - `0x00..=0xFC` n: a frame of length n, then its sequence id and payload
///   (cut short at the end of the input, with the header saying so);
/// - `0xFD` k seq fill: a frame of `MAX_FRAME - (k % 4)` bytes of `fill`;
/// - `0xFE` len_lo len_hi seq: one logical packet of that length (bytes
///   0..len counting up), split into frames by `queue_frames`;
/// - `0xFF` n: n raw bytes copied as they are (headers may lie).
///
/// Writes the stream into `stream` and returns its frames as (payload
/// offset, sequence id, length), or `None` when raw bytes were written and
/// no oracle applies.
fn script(mut input: &[u8], stream: &mut Vec<u8>) -> Option<Vec<(usize, u8, usize)>> {
    // (offset of the frame's payload in stream, seq, len)
    let mut frames = Vec::new();
    let mut raw = false;
    let mut big = 0;
    while let Some((&op, rest)) = input.split_first() {
        input = rest;
        match op {
            0x00..=0xfc => {
                let seq = take(&mut input, 1).first().copied().unwrap_or(0);
                let body = take(&mut input, usize::from(op));
                frames.push((stream.len() + 4, seq, body.len()));
                stream.extend_from_slice(&(body.len() as u32).to_le_bytes()[..3]);
                stream.push(seq);
                stream.extend_from_slice(&body);
            }
            0xfd => {
                let arg = take(&mut input, 3);
                if big == MAX_BIG_FRAMES || arg.len() < 3 {
                    continue;
                }
                big += 1;
                let len = MAX_FRAME - usize::from(arg[0] % 4);
                frames.push((stream.len() + 4, arg[1], len));
                stream.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
                stream.push(arg[1]);
                stream.resize(stream.len() + len, arg[2]);
            }
            0xfe => {
                let arg = take(&mut input, 3);
                if arg.len() < 3 {
                    continue;
                }
                let len = usize::from(u16::from_le_bytes([arg[0], arg[1]]));
                let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut out = BytesMut::new();
                let mut seq = arg[2];
                queue_frames(&mut out, &mut seq, &payload);
                let mut at = 0;
                let mut n = 0u8;
                while let Some(h) = complete_frame(&out[at..]) {
                    frames.push((stream.len() + at + 4, out[at + 3], h.len));
                    at += h.total();
                    n = n.wrapping_add(1);
                }
                assert_eq!(at, out.len(), "queue_frames wrote a partial frame");
                assert_eq!(
                    seq,
                    arg[2].wrapping_add(n),
                    "queue_frames left a wrong sequence id"
                );
                stream.extend_from_slice(&out);
            }
            0xff => {
                let n = take(&mut input, 1).first().copied().unwrap_or(0);
                let bytes = take(&mut input, usize::from(n));
                raw = true;
                stream.extend_from_slice(&bytes);
            }
        }
    }
    (!raw).then_some(frames)
}

/// The next `n` bytes of the input (fewer at its end).
fn take(input: &mut &[u8], n: usize) -> Vec<u8> {
    let n = n.min(input.len());
    let (a, b) = input.split_at(n);
    *input = b;
    a.to_vec()
}

/// The logical packets well-formed frames decode to under `limit`, each as
/// (sequence id, the frames it joins), then `Err(())` where decoding must
/// fail (too large, or a sequence gap inside a packet).
fn expected(frames: &[(usize, u8, usize)], limit: usize) -> Vec<Result<(u8, Range<usize>), ()>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let start = i;
        let mut size = 0;
        let mut next_seq = frames[i].1;
        loop {
            let Some(&(_, seq, len)) = frames.get(i) else {
                // Frames ended inside a packet: the decoder sees a close.
                return out;
            };
            if seq != next_seq || size + len > limit {
                out.push(Err(()));
                return out;
            }
            size += len;
            i += 1;
            if len < MAX_FRAME {
                out.push(Ok((seq, start..i)));
                break;
            }
            next_seq = next_seq.wrapping_add(1);
        }
    }
    out
}

/// Is `payload` the concatenation of the payloads of `frames`?
fn joins(payload: &[u8], stream: &[u8], frames: &[(usize, u8, usize)]) -> bool {
    let mut rest = payload;
    for &(at, _, len) in frames {
        let Some((head, tail)) = rest.split_at_checked(len) else {
            return false;
        };
        if head != &stream[at..at + len] {
            return false;
        }
        rest = tail;
    }
    rest.is_empty()
}

/// Decode every packet of `stream` the way a session reads its client.
fn decode(stream: &[u8], limit: usize, step: usize) -> Vec<Result<(u8, BytesMut), ()>> {
    runtime().block_on(async {
        let mut ps = PacketStream::new(Trickle { data: stream, step }, limit);
        let mut out = Vec::new();
        while out.len() < MAX_FRAMES {
            match ps.read_packet().await {
                Ok(p) => {
                    assert!(p.payload.len() <= limit, "packet over the limit");
                    out.push(Ok((p.seq, p.payload)));
                }
                // The end of the input with nothing buffered: the normal end
                // (or the end inside a packet, which the oracle also leaves
                // without an error).
                Err(ProtocolError::Closed) if ps.rbuf.is_empty() => return out,
                Err(_) => {
                    out.push(Err(()));
                    return out;
                }
            }
        }
        out
    })
}

/// Feed the frames of `stream` to a tracker the way the relay does, starting
/// a new response whenever one completes.
fn track(stream: &[u8], kind: ResponseKind, deprecate_eof: bool) {
    let mut t = ResponseTracker::new(kind, deprecate_eof);
    let mut first = true;
    let mut at = 0;
    let mut n = 0;
    while let Some(h) = complete_frame(&stream[at..]) {
        n += 1;
        if n > MAX_FRAMES {
            return;
        }
        let payload = &stream[at + 4..at + h.total()];
        let step = t.feed(h.len, payload);
        if first && t.prepared.is_some() {
            // The relay writes the client's statement id into bytes 1..9.
            assert!(payload.len() >= 9, "prepared info from a short packet");
        }
        first = false;
        at += h.total();
        match step {
            Step::More => assert!(!t.is_done()),
            Step::Done => {
                assert!(t.is_done());
                t = ResponseTracker::new(kind, deprecate_eof);
                first = true;
            }
            Step::LocalInfile => t.resume_after_infile(),
        }
    }
}

/// The small packet parsers on one payload.
fn parse_packet(payload: &[u8]) {
    if let Some((v, n)) = read_lenenc(payload) {
        assert!(n <= payload.len());
        let mut b = BytesMut::new();
        put_lenenc(&mut b, v);
        assert_eq!(read_lenenc(&b), Some((v, b.len())));
    }
    if let Some(ok) = parse_ok(payload) {
        let again = ok_packet(ok.affected_rows, ok.last_insert_id, ok.status, ok.warnings);
        assert_eq!(parse_ok(&again), Some(ok));
    }
    let _ = parse_eof_status(payload);
    let _ = terminator_status(payload, true);
    let _ = terminator_status(payload, false);
    if let Some(err) = ErrPacket::parse(payload) {
        assert_eq!(ErrPacket::parse(&err.encode()), Some(err.clone()));
        let _ = err.to_string();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&config, rest)) = data.split_first() else {
        return;
    };
    // One stream buffer for all runs: a 16 MiB frame is not allocated (and
    // its pages faulted in) again on every input.
    thread_local!(static STREAM: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) });
    STREAM.with_borrow_mut(|stream| {
        stream.clear();
        let frames = if config & 0x10 != 0 {
            script(rest, stream)
        } else {
            stream.extend_from_slice(rest);
            None
        };
        run(stream, frames, config);
    });
});

fn run(stream: &[u8], frames: Option<Vec<(usize, u8, usize)>>, config: u8) {
    let limit = LIMITS[usize::from(config & 3)];
    let step = [1, 3, 4096, usize::MAX][usize::from(config >> 2 & 3)];

    // Byte-by-byte reads of a 16 MiB frame would take minutes.
    let step = if stream.len() > 1 << 16 { usize::MAX } else { step };
    let got = decode(stream, limit, step);
    if let Some(frames) = frames {
        let mut want = expected(&frames, limit);
        if got.len() == MAX_FRAMES {
            want.truncate(MAX_FRAMES);
        }
        assert_eq!(got.len(), want.len(), "packet count differs");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.is_ok(), w.is_ok(), "decode result differs");
            if let (Ok((seq, payload)), Ok((want_seq, joined))) = (g, w) {
                assert_eq!(*seq, frames[joined.end - 1].1, "sequence id of the last frame");
                assert_eq!(seq, want_seq);
                assert!(
                    joins(payload, stream, &frames[joined.clone()]),
                    "decoded packet differs"
                );
            }
        }
    }
    for p in got.iter().flatten() {
        parse_packet(&p.1);
    }

    // Every response kind and EOF convention for short streams; one, picked
    // by the config byte, for long ones.
    if stream.len() <= 1 << 16 {
        for kind in KINDS {
            track(stream, kind, false);
            track(stream, kind, true);
        }
    } else {
        track(
            stream,
            KINDS[usize::from(config >> 5) % KINDS.len()],
            config & 0x80 != 0,
        );
    }
}
