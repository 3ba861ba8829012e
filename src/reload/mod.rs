//! Hot reload: re-read the configuration file (on SIGHUP, or `POST /reload`
//! on the admin listener) and publish a new [`Runtime`] snapshot.
//!
//! A file that does not load or validate changes nothing: the error is
//! logged (and answered to the HTTP caller) and the running configuration
//! stays. Settings that need a restart keep their running value with a
//! warning. Reloads are serialized, so two at once cannot both build on the
//! same running snapshot and lose one's changes. Sessions are never
//! interrupted: each moves to the new snapshot between statements, once it
//! holds no backend connection of the old one (see `frontend::refresh`).

mod diff;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Mutex;
use tracing::{error, info, warn};

use crate::config::{Config, ConfigError};
use crate::frontend::Shared;

/// Where the configuration comes from, what a reload applies to, and the
/// lock that serializes reloads. Held by whoever may trigger one (the admin
/// endpoint, the SIGHUP handler); sessions never see it.
pub struct Reloader {
    path: PathBuf,
    lock: Mutex<()>,
    shared: Arc<Shared>,
}

impl Reloader {
    pub fn new(path: PathBuf, shared: Arc<Shared>) -> Reloader {
        Reloader {
            path,
            lock: Mutex::new(()),
            shared,
        }
    }
}

/// Re-read the configuration file and apply it. `Ok`: a one-line summary of
/// what changed. `Err`: why the file was rejected (`FILE:LINE:COL: ...`
/// when the line is known); the running configuration is kept.
pub async fn reload(reloader: &Reloader) -> Result<String, ConfigError> {
    let shared = &*reloader.shared;
    let _one_at_a_time = reloader.lock.lock().await;
    let path = reloader.path.clone();
    // A small file, but still disk I/O: keep it off the runtime's workers.
    let loaded = tokio::task::spawn_blocking(move || Config::load(&path))
        .await
        .unwrap_or_else(|e| {
            Err(ConfigError::Invalid {
                origin: reloader.path.display().to_string(),
                position: None,
                message: format!("reading the configuration failed: {e}"),
            })
        });
    let new = match loaded {
        Ok(c) => c,
        Err(e) => {
            shared.metrics.config_reloaded(false, shared.runtime().generation);
            error!(error = %e, "configuration reload failed: the running configuration is kept");
            return Err(e);
        }
    };
    let running = shared.runtime();
    for key in diff::restart_needed(&running.config, &new) {
        warn!(
            key,
            "configuration reload: `{key}` changed but takes effect only after a restart; \
             the running value is kept"
        );
    }
    let new = diff::keep_running(&running.config, new);
    let changes = diff::changes(&running.config, &new);
    if changes.is_empty() {
        let summary = format!("generation {}: no change", running.generation);
        shared.metrics.config_reloaded(true, running.generation);
        info!(
            generation = running.generation,
            "configuration reloaded: no change"
        );
        return Ok(summary);
    }
    let next = match running.next(new) {
        Ok(rt) => Arc::new(rt),
        Err(message) => {
            // A backend's TLS files could not be used: nothing was replaced.
            shared.metrics.config_reloaded(false, running.generation);
            let e = ConfigError::Invalid {
                origin: reloader.path.display().to_string(),
                position: None,
                message,
            };
            error!(error = %e, "configuration reload failed: the running configuration is kept");
            return Err(e);
        }
    };
    next.start(&shared.replica_down_hook());
    shared.publish(next.clone());
    running.retire(&next);
    shared.metrics.config_reloaded(true, next.generation);
    let summary = format!("generation {}: {}", next.generation, changes.join("; "));
    info!(generation = next.generation, changes = %changes.join("; "), "configuration reloaded");
    Ok(summary)
}

/// Reload on every SIGHUP. The handler is installed before this returns, so
/// a SIGHUP that arrives once the listeners are up never takes the default
/// action (terminating the process).
#[cfg(unix)]
pub fn reload_on_sighup(reloader: Arc<Reloader>) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            info!("SIGHUP: reloading the configuration");
            // The outcome is logged and counted by `reload`.
            let _ = reload(&reloader).await;
        }
    });
    Ok(())
}

/// Without signals there is only `POST /reload`.
#[cfg(not(unix))]
pub fn reload_on_sighup(_reloader: Arc<Reloader>) -> std::io::Result<()> {
    Ok(())
}
