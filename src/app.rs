//! Wiring: build the shared state, bind the listeners, run until a signal.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::backend::PoolKey;
use crate::config::Config;
use crate::error::Error;
use crate::frontend::{self, Shared};
use crate::metrics::Metrics;

/// Serve `config`, read from `config_path` (re-read on reload).
pub async fn run(config: Config, config_path: PathBuf) -> Result<(), Error> {
    let tls = match &config.tls {
        Some(t) => Some(frontend::tls::acceptor(t)?),
        None => None,
    };
    let listen = config.listen;
    let admin = config.admin_listen;
    let metrics = Arc::new(Metrics::new());
    let reloader = crate::reload::Reloader::new(config_path);
    let shared = Arc::new(Shared::new(config, reloader, tls, metrics)?);
    let rt = shared.runtime();
    // metrics: per-backend series, and the collector of replica and pool state
    shared.metrics.attach(&rt.topology, &rt.monitors);

    learn_server_version(&shared).await;
    rt.start();
    drop(rt);
    // Before the listeners: a SIGHUP must never find the default action.
    crate::reload::reload_on_sighup(shared.clone())?;

    let listener = TcpListener::bind(listen).await.map_err(|source| Error::Bind {
        addr: listen.to_string(),
        source,
    })?;
    let admin_listener = TcpListener::bind(admin).await.map_err(|source| Error::Bind {
        addr: admin.to_string(),
        source,
    })?;
    frontend::listener::log_listening(&listener.local_addr()?);
    info!(addr = %admin_listener.local_addr()?, "admin HTTP endpoint (/metrics, /healthz, /readyz, POST /reload)");
    tokio::spawn(crate::metrics::http::serve(admin_listener, shared.clone()));

    let serving = tokio::spawn(frontend::serve(listener, shared.clone()));
    shutdown_signal().await;
    shut_down(&shared, serving).await;
    Ok(())
}

/// Graceful shutdown: stop accepting (the listener is closed, so new
/// connections are refused), close idle sessions at once, let running
/// statements finish and their sessions close, for up to
/// `limits.shutdown_timeout`; then return, which ends every remaining task
/// and closes its sockets. A second signal cuts the wait short.
async fn shut_down(shared: &Shared, serving: tokio::task::JoinHandle<()>) {
    let timeout = shared.runtime().config.limits.shutdown_timeout;
    info!(
        sessions = shared.clients.in_use(),
        shutdown_timeout = ?timeout,
        "shutting down: no new connections; waiting for running statements"
    );
    shared.shutdown.cancel();
    let _ = serving.await;
    tokio::select! {
        all_done = shared.clients.wait_all_free(timeout) => {
            if all_done {
                info!("every session ended; exiting");
            } else {
                warn!(
                    sessions = shared.clients.in_use(),
                    "limits.shutdown_timeout passed: closing the sessions still running a statement"
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

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
