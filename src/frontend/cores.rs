//! `runtime.per_core`: client sessions on single-threaded runtimes, one per
//! core, pingora-style, instead of on tokio's work-stealing pool.
//!
//! Why: on the work-stealing pool a session's task is woken by whichever
//! worker's poll of the I/O driver saw its socket ready, so its client and
//! backend I/O may bounce between threads (a futex wake-up and a cold cache
//! each time), and idle workers wake up to look for work to steal. Here each
//! session stays on the thread it was given at accept for its whole life, and
//! the sockets it opens (its client socket, moved here from the accepting
//! runtime; the backend connections it makes) are registered with that
//! thread's own driver. What is given up: no stealing, so one session's long
//! CPU work (a large merge) delays the other sessions of its thread.
//!
//! Placement is per accept, to the thread with the fewest live sessions (a
//! counter per thread, written at a session's start and end, never per
//! statement). Pooled backend connections are shared by all threads; one a
//! session borrows from another thread is moved to the borrower's driver
//! first (see `affinity`), so that its answers wake the borrower's thread
//! directly.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::net::TcpStream;
use tokio::runtime::Handle;
use tracing::warn;

struct Core {
    handle: Handle,
    /// Sessions placed here and not yet ended.
    live: AtomicUsize,
}

static CORES: OnceLock<Vec<Core>> = OnceLock::new();

/// Start `n` single-threaded session runtimes (threads `sluice-core-K`);
/// sessions accepted afterwards run on them. Called once, at startup, before
/// the listener runs; a second call is refused.
pub fn start(n: usize) -> Result<(), String> {
    let mut cores = Vec::with_capacity(n);
    let n = n.clamp(1, usize::from(u16::MAX));
    for k in 0..n {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start session runtime {k}: {e}"))?;
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name(format!("sluice-core-{k}"))
            // The thread drives its runtime until the process exits; sessions
            // end through `Shared::shutdown` like everywhere else.
            .spawn(move || {
                crate::affinity::set_here(u16::try_from(k).unwrap_or(u16::MAX));
                rt.block_on(std::future::pending::<()>())
            })
            .map_err(|e| format!("cannot start session thread {k}: {e}"))?;
        cores.push(Core {
            handle,
            live: AtomicUsize::new(0),
        });
    }
    CORES
        .set(cores)
        .map_err(|_| "session runtimes already started".to_owned())
}

/// Decrements its thread's live count when the session's future ends or is
/// dropped.
struct Placed(&'static AtomicUsize);

impl Drop for Placed {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Run the session `make(socket)` on a session runtime (the least busy), or
/// on the current runtime when none were started (the default).
pub fn spawn_session<F, Fut>(socket: TcpStream, make: F)
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(core) = CORES
        .get()
        .and_then(|c| c.iter().min_by_key(|c| c.live.load(Ordering::Relaxed)))
    else {
        tokio::spawn(make(socket));
        return;
    };
    // The socket is registered with the accepting runtime's driver: take it
    // off there and register it with the session's own.
    let socket = match socket.into_std() {
        Ok(s) => s,
        Err(e) => {
            warn!(error = %e, "cannot move an accepted client to its session thread");
            return;
        }
    };
    core.live.fetch_add(1, Ordering::Relaxed);
    let placed = Placed(&core.live);
    core.handle.spawn(async move {
        let _placed = placed;
        match TcpStream::from_std(socket) {
            Ok(s) => make(s).await,
            Err(e) => warn!(error = %e, "cannot register a client on its session thread"),
        }
    });
}
