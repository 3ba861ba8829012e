//! Relaying one command's response from a backend to the client: raw frames,
//! never decoded, batched so that one backend read becomes one client write.

use crate::backend::BackendIo;
use bytes::Buf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::protocol::codec::complete_frame;
use crate::protocol::consts::MAX_FRAME;
use crate::protocol::response::{ResponseKind, ResponseTracker, Step};
use crate::protocol::{PacketStream, ProtocolError};

use super::abandon::ReadWatch;
use super::io::ClientIo;
use super::registry::{Entry, KillRequest};

/// Bytes a client may send ahead (pipelined commands) while sluice watches
/// its socket for EOF during a response; beyond this the watch stops
/// reading until the response is done.
const PIPELINE_LIMIT: usize = 64 * 1024;

/// What a session's relay watches besides the backend: the client going
/// away, and `KILL` from another session. Either cancels the statement on
/// the backend (`KILL QUERY`, or `KILL CONNECTION` when the session ends)
/// on a side connection: the server would otherwise run it to its end, and
/// keep the transaction's locks meanwhile, with nobody to answer.
pub struct Guard<'a> {
    pub entry: &'a Entry,
    pub pool: &'a crate::backend::BackendPool,
    /// The backend connection's thread id (from its handshake).
    pub thread: u32,
    /// The statement runs outside any transaction (the master connection
    /// in autocommit with none open): a client that leaves does not stop
    /// it, as MariaDB completes a statement whose client disconnected (its
    /// effects commit). Otherwise it is killed, which rolls back the
    /// transaction it is part of.
    pub finish_if_gone: bool,
}

/// Flush the client's buffer once this much is queued even if the backend
/// has more ready, so a huge result streams in bounded memory.
const CLIENT_FLUSH_AT: usize = 256 * 1024;

pub enum RelayError {
    /// The backend failed; `relayed` tells whether any byte of the response
    /// already reached the client, `last_seq` the last sequence id relayed.
    Backend {
        err: ProtocolError,
        relayed: bool,
        last_seq: u8,
    },
    /// The client went away (or broke the protocol during LOCAL INFILE).
    Client(ProtocolError),
}

/// How to relay one response.
#[derive(Debug, Clone, Copy)]
pub struct Opts {
    pub kind: ResponseKind,
    pub deprecate_eof: bool,
    /// Leave the response's last packets in the client's buffer, unflushed:
    /// the caller has something to do before the client may learn the
    /// command completed (causal freshness after a write).
    pub hold_final: bool,
    /// COM_STMT_PREPARE: replace the backend's statement id with this one.
    pub prepare_id: Option<u32>,
    /// (backend id, client id) of the statement a COM_STMT_* command names:
    /// server errors that quote the id are rewritten to the client's.
    pub stmt_ids: Option<(u32, u32)>,
}

/// Send `payload` (one command) to the backend and relay the complete
/// response. The backend connection is left at a command boundary on success.
/// With `watch` (reads on a replica), waiting for the backend ends early when
/// the replica stops answering (see `abandon`): a `RelayError::Backend` then
/// says whether anything was relayed, and the connection must be closed.
pub async fn command(
    client: &mut PacketStream<ClientIo>,
    backend: &mut PacketStream<BackendIo>,
    payload: &[u8],
    opts: Opts,
    watch: Option<&mut ReadWatch>,
    guard: Option<&Guard<'_>>,
) -> Result<ResponseTracker, RelayError> {
    send(backend, payload).await?;
    response(client, backend, opts, watch, guard).await
}

/// Send one command packet (sequence 0); nothing has reached the client yet.
async fn send(backend: &mut PacketStream<BackendIo>, payload: &[u8]) -> Result<(), RelayError> {
    let mut seq = 0u8;
    backend.write_packet(&mut seq, payload).await.map_err(unrelayed)
}

/// A backend failure before anything reached the client.
fn unrelayed(err: ProtocolError) -> RelayError {
    RelayError::Backend {
        err,
        relayed: false,
        last_seq: 0,
    }
}

/// Most bytes of a replica's answer [`command_checked`] reads and throws
/// away; beyond that the connection is given up instead (closing it ends the
/// statement on the server), so a big result is not read twice.
const DISCARD_LIMIT: usize = 1024 * 1024;

/// [`command`] for a read whose answer may be released only if `check`
/// says so (strict freshness, see `freshness::strict`): the command is
/// sent first, so the backend runs it while `check` waits for its probe.
/// `Ok(None)`: the check failed and the answer was read and discarded, the
/// connection is at a command boundary again and the client got nothing.
/// An answer over [`DISCARD_LIMIT`] is a `RelayError::Backend` with nothing
/// relayed (the caller closes the connection and reruns the read).
///
/// While `check` runs, the first bytes of the answer are read into the
/// backend's buffer and `arrival` is set: a check that waits for a shared
/// probe may start that probe only then (`Flight::after_lingering`).
#[allow(clippy::too_many_arguments)] // (the relay's six, and the check's two)
pub async fn command_checked(
    client: &mut PacketStream<ClientIo>,
    backend: &mut PacketStream<BackendIo>,
    payload: &[u8],
    opts: Opts,
    watch: Option<&mut ReadWatch>,
    guard: Option<&Guard<'_>>,
    arrival: &Arrival,
    check: impl std::future::Future<Output = bool>,
) -> Result<Option<ResponseTracker>, RelayError> {
    send(backend, payload).await?;
    let mut check = std::pin::pin!(check);
    let fresh = loop {
        tokio::select! {
            biased;
            fresh = &mut check => break fresh,
            // (Cancel-safe: one read into the buffer, which `response` or
            // `discard` starts from.)
            r = backend.fill(), if !arrival.is_set() => {
                r.map_err(unrelayed)?;
                arrival.set();
            }
        }
    };
    if fresh {
        return response(client, backend, opts, watch, guard).await.map(Some);
    }
    discard(backend, opts, watch).await.map(|()| None)
}

/// "The answer of a checked read has begun to arrive": set by
/// [`command_checked`], awaited through [`Arrival::wait`] by its check.
#[derive(Default)]
pub struct Arrival(AtomicBool);

impl Arrival {
    pub fn new() -> Self {
        Self::default()
    }

    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Ready once the answer has begun to arrive. It registers no waker:
    /// it is meant to be polled only inside the `check` given to
    /// [`command_checked`], which polls `check` again in the same task
    /// right after it sets the flag.
    pub fn wait(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |_| {
            if self.is_set() {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
    }
}

/// Read one response to its end without relaying any of it.
async fn discard(
    backend: &mut PacketStream<BackendIo>,
    opts: Opts,
    watch: Option<&mut ReadWatch>,
) -> Result<(), RelayError> {
    let mut tracker = ResponseTracker::new(opts.kind, opts.deprecate_eof);
    read_to_end(backend, &mut tracker, watch).await
}

/// Reads the rest of the response `tracker` follows, relaying nothing; an
/// error when that cannot be done cleanly (the backend failed, a LOCAL
/// INFILE request, over [`DISCARD_LIMIT`] more bytes).
async fn read_to_end(
    backend: &mut PacketStream<BackendIo>,
    tracker: &mut ResponseTracker,
    mut watch: Option<&mut ReadWatch>,
) -> Result<(), RelayError> {
    let mut read = 0usize;
    loop {
        while let Some(h) = complete_frame(&backend.rbuf) {
            let step = tracker.feed(h.len, &backend.rbuf[4..4 + h.len]);
            backend.rbuf.advance(h.total());
            read += h.total();
            match step {
                Step::Done => return Ok(()),
                // A read never asks for a file; if it does, the connection
                // is in a state only closing it ends.
                Step::LocalInfile => {
                    return Err(unrelayed(ProtocolError::Malformed(
                        "LOCAL INFILE request to a read",
                    )))
                }
                Step::More if read > DISCARD_LIMIT => {
                    return Err(unrelayed(ProtocolError::Malformed("discarded answer too large")))
                }
                Step::More => {}
            }
        }
        backend.reserve_for_frame().map_err(unrelayed)?;
        let filled = match watch.as_deref_mut() {
            None => backend.fill().await,
            // A replica that stops answering is given up as in `response`.
            Some(w) => tokio::select! {
                biased;
                r = backend.fill() => r,
                err = w.abandoned(false) => Err(err),
            },
        };
        filled.map_err(unrelayed)?;
    }
}

/// What ended a wait for the backend.
enum Woke {
    Filled(Result<usize, ProtocolError>),
    ClientGone(ProtocolError),
    Killed(KillRequest),
}

/// Relay the response to a command already sent.
pub async fn response(
    client: &mut PacketStream<ClientIo>,
    backend: &mut PacketStream<BackendIo>,
    opts: Opts,
    mut watch: Option<&mut ReadWatch>,
    guard: Option<&Guard<'_>>,
) -> Result<ResponseTracker, RelayError> {
    let mut tracker = ResponseTracker::new(opts.kind, opts.deprecate_eof);
    let mut relayed = false;
    let mut last_seq = 0u8;
    loop {
        while let Some(h) = complete_frame(&backend.rbuf) {
            let first = !relayed;
            let was_error = tracker.error;
            let step = tracker.feed(h.len, &backend.rbuf[4..4 + h.len]);
            // The tracker knows packet boundaries: a continuation frame of a
            // 16 MiB row may start with 0xFF too, and must stay untouched.
            let is_err_packet = !was_error && tracker.error && step == Step::Done;
            let at = client.wbuf.len();
            client.wbuf.extend_from_slice(&backend.rbuf[..h.total()]);
            tracker.relayed_bytes += h.total() as u64;
            if let (true, Some(id), Some(_)) = (first, opts.prepare_id, tracker.prepared) {
                // OK header at at+4, statement id at at+5..at+9.
                client.wbuf[at + 5..at + 9].copy_from_slice(&id.to_le_bytes());
            }
            if let (Some((backend_id, client_id)), true, Some(0xff)) =
                (opts.stmt_ids, is_err_packet, client.wbuf.get(at + 4))
            {
                rename_stmt_in_error(&mut client.wbuf, at, backend_id, client_id);
            }
            backend.rbuf.advance(h.total());
            relayed = true;
            last_seq = h.seq;
            match step {
                Step::More => {
                    if client.wbuf.len() >= CLIENT_FLUSH_AT {
                        client.flush().await.map_err(RelayError::Client)?;
                    }
                }
                Step::Done => {
                    if !opts.hold_final {
                        client.flush().await.map_err(RelayError::Client)?;
                    }
                    return Ok(tracker);
                }
                Step::LocalInfile => {
                    client.flush().await.map_err(RelayError::Client)?;
                    last_seq = local_infile(client, backend).await?;
                    tracker.resume_after_infile();
                }
            }
        }
        // Nothing complete left: let the client have what we have before
        // waiting on the backend again.
        if !client.wbuf.is_empty() {
            client.flush().await.map_err(RelayError::Client)?;
        }
        let fill = async {
            backend.reserve_for_frame()?;
            backend.fill().await
        };
        let filled = async {
            match watch.as_deref_mut() {
                None => fill.await,
                // Reading into the buffer is cancel-safe; an abandoned
                // connection is closed by the caller anyway.
                Some(w) => tokio::select! {
                    biased;
                    r = fill => r,
                    err = w.abandoned(relayed) => Err(err),
                },
            }
        };
        let woke = match guard {
            None => Woke::Filled(filled.await),
            Some(g) => tokio::select! {
                biased;
                r = filled => Woke::Filled(r),
                e = client_closed(client) => Woke::ClientGone(e),
                k = g.entry.killed() => Woke::Killed(k),
            },
        };
        let filled = match (woke, guard) {
            (Woke::Filled(r), _) => r,
            (Woke::ClientGone(e), Some(g)) => {
                client.wbuf.clear();
                if !(g.finish_if_gone && finish_unread(backend, &mut tracker).await) {
                    cancel(g, false, "the client closed its connection").await;
                }
                return Err(RelayError::Client(e));
            }
            (Woke::Killed(KillRequest::Query), Some(g)) => {
                // The server answers the statement with ERR 1317, which is
                // relayed like any answer.
                cancel(g, true, "KILL QUERY from another session").await;
                continue;
            }
            (Woke::Killed(KillRequest::Connection), Some(g)) => {
                cancel(g, false, "KILL CONNECTION from another session").await;
                return Err(RelayError::Client(ProtocolError::Closed));
            }
            (_, None) => continue,
        };
        if let Err(err) = filled {
            return Err(RelayError::Backend {
                err,
                relayed,
                last_seq,
            });
        }
    }
}

/// Reads the rest of a response whose client has gone, relaying nothing,
/// so that the statement completes on the server. `false` when that cannot
/// be done cleanly (the backend failed, a LOCAL INFILE request nobody can
/// answer, or over [`DISCARD_LIMIT`] more bytes: a large result the server
/// itself would stop sending to a closed socket): the caller kills it.
async fn finish_unread(backend: &mut PacketStream<BackendIo>, tracker: &mut ResponseTracker) -> bool {
    read_to_end(backend, tracker, None).await.is_ok()
}

/// Resolves when the client has closed its connection (end of stream or a
/// socket error). Bytes it sends meanwhile (pipelined commands) are kept in
/// its read buffer for the command loop, never consumed here.
async fn client_closed(client: &mut PacketStream<ClientIo>) -> ProtocolError {
    loop {
        if client.rbuf.len() >= PIPELINE_LIMIT {
            return std::future::pending().await;
        }
        if let Err(e) = client.fill().await {
            return e;
        }
    }
}

/// Kill the statement (`query_only`) or the whole backend connection on a
/// side connection; failures are logged (the caller closes the connection
/// anyway, which ends the statement at its next write at the latest).
async fn cancel(g: &Guard<'_>, query_only: bool, why: &str) {
    match g.pool.kill(g.thread, query_only).await {
        Ok(()) => {
            tracing::debug!(backend = %g.pool.label, thread = g.thread, why, "cancelled the running statement")
        }
        Err(e) => {
            tracing::warn!(backend = %g.pool.label, thread = g.thread, why, error = %e, "could not cancel the running statement")
        }
    }
}

/// Rewrite "(backend id)" to "(client id)" in the ERR frame at `at` of `buf`
/// (e.g. "Unknown prepared statement handler (311) given to ..."), so
/// messages name the statement id the client knows.
fn rename_stmt_in_error(buf: &mut bytes::BytesMut, at: usize, backend_id: u32, client_id: u32) {
    let Some(err) = crate::protocol::packets::ErrPacket::parse(&buf[at + 4..]) else {
        return;
    };
    let from = format!("({backend_id})");
    if backend_id == client_id || !err.message.contains(&from) {
        return;
    }
    let fixed = crate::protocol::packets::ErrPacket {
        message: err.message.replacen(&from, &format!("({client_id})"), 1),
        ..err
    };
    let mut seq = buf[at + 3];
    buf.truncate(at);
    crate::protocol::codec::queue_frames(buf, &mut seq, &fixed.encode());
}

/// Relay the client's file contents (frames up to an empty packet) to the
/// backend. Returns the sequence id of the last frame sent.
async fn local_infile(
    client: &mut PacketStream<ClientIo>,
    backend: &mut PacketStream<BackendIo>,
) -> Result<u8, RelayError> {
    let mut continuation = false;
    loop {
        let h = client.frame().await.map_err(RelayError::Client)?;
        backend.wbuf.extend_from_slice(&client.rbuf[..h.total()]);
        client.rbuf.advance(h.total());
        // An empty frame ends the file unless it continues a 16 MiB frame.
        let end = h.len == 0 && !continuation;
        continuation = h.len == MAX_FRAME;
        if end || backend.wbuf.len() >= CLIENT_FLUSH_AT {
            backend.flush().await.map_err(|err| RelayError::Backend {
                err,
                relayed: true,
                last_seq: h.seq,
            })?;
        }
        if end {
            return Ok(h.seq);
        }
    }
}
