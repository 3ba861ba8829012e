//! Wiring: build the shared state, bind the listeners, run until a signal.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::backend::PoolKey;
use crate::config::Config;
use crate::error::Error;
use crate::frontend::{self, Shared};
use crate::metrics::Metrics;

/// File descriptors sluice may need at once for `config`: every client
/// session and connection still in its handshake, a full pool per backend,
/// the admin endpoint's connections, and some to spare (listeners, files,
/// probes).
pub fn open_files_needed(config: &Config) -> u64 {
    let backends: usize = config.groups.iter().map(|g| 1 + g.replicas.len()).sum();
    let n = config.limits.max_client_connections
        + config.limits.max_unauthenticated
        + backends * (config.backend.pool_max + 2)
        + crate::admin::http::MAX_CONNECTIONS
        + 64;
    n as u64
}

/// Check `RLIMIT_NOFILE` against what the configured limits may need:
/// raise the soft limit (up to the hard one) when it is lower, and warn
/// when even the hard limit is lower. Without this, sockets beyond the
/// limit make accept fail (EMFILE) and logins time out.
pub fn check_open_files(config: &Config) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let needed = open_files_needed(config);
    let lim = getrlimit(Resource::Nofile);
    // `None` is unlimited.
    let soft = lim.current.unwrap_or(u64::MAX);
    let hard = lim.maximum.unwrap_or(u64::MAX);
    let mut effective = soft;
    if soft < needed && hard > soft {
        let raised = Rlimit {
            current: Some(needed.min(hard)),
            maximum: lim.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => {
                effective = needed.min(hard);
                info!(
                    from = soft,
                    to = effective,
                    "raised the open-file limit (RLIMIT_NOFILE)"
                );
            }
            Err(e) => warn!(error = %e, "cannot raise the open-file limit (RLIMIT_NOFILE)"),
        }
    }
    if effective < needed {
        warn!(
            open_file_limit = effective,
            needed,
            "the open-file limit (ulimit -n) is below what limits.max_client_connections, \
             limits.max_unauthenticated and backend.pool_max may need: raise it (LimitNOFILE= \
             in systemd) or lower those limits, or logins will fail under load"
        );
    }
}

/// Serve `config`, read from `config_path` (re-read on reload).
/// Keep the server's accounts in memory (`auth:`), following reloads; the
/// first read is awaited (a few seconds at most) so the first logins find
/// them.
async fn start_accounts(shared: &Arc<Shared>) {
    let s = shared.clone();
    let source = move || {
        let rt = s.runtime();
        let cfg = &rt.config;
        let account = cfg.auth.account.as_ref().filter(|_| cfg.auth.server())?;
        let master = &cfg.groups.first()?.master;
        Some(crate::auth::catalog::Source {
            addr: master.addr.clone(),
            user: account.user.clone(),
            password: account.password.clone(),
            tls: cfg.backend_tls(master).clone(),
            every: cfg.auth.refresh,
        })
    };
    let wanted = source().is_some();
    tokio::spawn(crate::auth::catalog::refresher(shared.accounts.clone(), source));
    if wanted {
        shared
            .accounts
            .refresh_now(std::time::Duration::from_secs(5))
            .await;
    }
}

pub async fn run(config: Config, config_path: PathBuf) -> Result<(), Error> {
    // An unreadable admin.token_file is a mistake to report now, not at the
    // first POST /reload.
    if let Err(e) = config.admin.expected_token() {
        return Err(Error::Io(std::io::Error::other(e)));
    }
    let tls = match &config.tls {
        Some(t) => Some(frontend::tls::acceptor(t)?),
        None => None,
    };
    let listen = config.listen;
    let admin = config.admin_listen;
    let metrics = Arc::new(Metrics::new());
    let shared = Arc::new(Shared::new(config, tls, metrics)?);
    let reloader = Arc::new(crate::reload::Reloader::new(config_path, shared.clone()));
    let rt = shared.runtime();
    // metrics: per-backend series, and the collector of replica and pool state
    shared.metrics.retarget(rt.topology.labels());
    crate::admin::topology::register(&shared);

    drop(rt);
    // Replica eligibility and, in `topology: follow` groups, the master,
    // probed once before clients are served (fails without the grant).
    let follower = crate::follow::Follower::new(reloader.clone());
    follower
        .start()
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))?;
    learn_server_version(&shared).await;
    shared.runtime().start(&shared.replica_down_hook());
    start_accounts(&shared).await;
    // Before the listeners: a SIGHUP must never find the default action.
    crate::reload::reload_on_sighup(reloader.clone())?;
    crate::reload::watch::follow(reloader.clone());

    // The client port last: the kernel queues connections as soon as it
    // listens, so a client (or a readiness check) that got in must never
    // meet a sluice that then exits because the admin port is taken.
    let reuseport = shared.runtime().config.listen_reuseport;
    let bind = |addr: std::net::SocketAddr| {
        frontend::listener::bind(addr, reuseport).map_err(|source| Error::Bind {
            addr: addr.to_string(),
            source,
        })
    };
    let admin_listener = bind(admin)?;
    let listener = bind(listen)?;
    frontend::listener::log_listening(&listener.local_addr()?);
    info!(addr = %admin_listener.local_addr()?, "admin HTTP endpoint (/metrics, /healthz, /readyz, POST /reload)");
    let console = crate::admin::console::Console::new(shared.clone(), reloader, follower);
    if let Some(addr) = shared.runtime().config.admin.sql_listen {
        let l = bind(addr)?;
        info!(addr = %l.local_addr()?, "admin console (MySQL protocol, admin.users)");
        tokio::spawn(crate::admin::console::serve(l, console.clone()));
    }
    tokio::spawn(crate::admin::serve(admin_listener, console));

    let serving = tokio::spawn(frontend::serve(listener, shared.clone()));
    let signal = shutdown_signal().await;
    shut_down(&shared, serving, signal).await;
    Ok(())
}

/// Graceful shutdown (docs/operations.md, "Stopping"): `/readyz` answers
/// 503 at once; after SIGTERM sluice keeps accepting for
/// `limits.drain_delay`, so a load balancer stops sending first (SIGINT
/// skips the delay); then the listener closes (new connections are
/// refused); sessions without a transaction are left to their clients for
/// `limits.shutdown_wait_for_clients` (closed once idle for a moment), then
/// closed right after their next answer; running statements and open
/// transactions may finish, for up to `limits.shutdown_timeout`; then this
/// returns, which ends every remaining task and closes its sockets (their
/// transactions roll back). A second signal exits at once.
async fn shut_down(shared: &Shared, serving: tokio::task::JoinHandle<()>, signal: Signal) {
    shared.draining.store(true, std::sync::atomic::Ordering::Release);
    let limits = shared.runtime().config.limits.clone();
    let delay = match signal {
        Signal::Term => limits.drain_delay,
        Signal::Int => Duration::ZERO,
    };
    if !delay.is_zero() {
        info!(
            drain_delay = ?delay,
            "shutting down: /readyz answers 503; still accepting connections for limits.drain_delay"
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = shutdown_signal() => {
                warn!("second signal: closing every session now");
                shared.shutdown.cancel();
                return;
            }
        }
    }
    info!(
        sessions = shared.clients.in_use(),
        shutdown_timeout = ?limits.shutdown_timeout,
        "shutting down: no new connections; waiting for running statements and open transactions"
    );
    shared
        .shutdown
        .cancel_waiting_for_clients(limits.shutdown_wait_for_clients.min(limits.shutdown_timeout));
    // Idle sessions wait on their registry entry, not on the token.
    shared.sessions.wake_all();
    let _ = serving.await;
    // Connections accepted before the listener closed get their greeting and
    // their login (each within limits.handshake_timeout) before the sessions
    // are counted: exiting under them would drop them unanswered.
    let deadline = tokio::time::Instant::now() + limits.shutdown_timeout;
    let all_done = async {
        shared.handshakes.wait_all_done(limits.shutdown_timeout).await;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        shared.clients.wait_all_free(left).await
    };
    tokio::select! {
        all_done = all_done => {
            if all_done {
                info!("every session ended; exiting");
            } else {
                warn!(
                    sessions = shared.clients.in_use(),
                    "limits.shutdown_timeout passed: closing the sessions still running a statement or holding a transaction"
                );
            }
        }
        _ = shutdown_signal() => warn!(
            sessions = shared.clients.in_use(),
            "second signal: closing every session now"
        ),
    }
}

/// Advertise the master's real version string to clients when it is up; a
/// down master is not fatal (clients get errors until it is back).
async fn learn_server_version(shared: &Shared) {
    let rt = shared.runtime();
    let Some(group) = rt.topology.default_group() else {
        return;
    };
    let key = PoolKey::sluice_own();
    match group.master.get(key).await {
        Ok(conn) => {
            info!(version = %conn.server_version, backend = %group.master.label, "master reachable");
            shared.server_version.store(Arc::new(conn.server_version.clone()));
            shared.learn_backend_ext(conn.server_mariadb_ext);
            shared.learn_backend_collation(conn.server_collation);
        }
        Err(e) => warn!(backend = %group.master.label, error = %e, "master not reachable at startup"),
    }
}

/// Which signal asked sluice to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// SIGTERM: an orchestrator's stop; `limits.drain_delay` applies.
    Term,
    /// SIGINT (Ctrl-C): someone at a terminal; no delay.
    Int,
}

async fn shutdown_signal() -> Signal {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return Signal::Int;
            }
        };
        tokio::select! {
            _ = ctrl_c => Signal::Int,
            _ = term.recv() => Signal::Term,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
        Signal::Int
    }
}
