//! Hot reload: re-read the configuration file (on SIGHUP, `POST /reload`
//! on the admin listener, or a change of the file itself with
//! `reload.watch`, see [`watch`]) and publish a new [`Runtime`] snapshot.
//!
//! A file that does not load or validate changes nothing: the error is
//! logged (and answered to the HTTP caller) and the running configuration
//! stays. Settings that need a restart keep their running value with a
//! warning. Reloads are serialized, so two at once cannot both build on the
//! same running snapshot and lose one's changes. Sessions are never
//! interrupted: each moves to the new snapshot between statements, once it
//! holds no backend connection of the old one (see `frontend::refresh`).

mod diff;
pub mod roles;
pub mod watch;

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
    /// The version of the file the last reload read (at start: the one
    /// there when sluice started), for `reload.watch`.
    seen: std::sync::Mutex<Option<watch::Fingerprint>>,
    /// Each group's candidates as the file last loaded lists them, its
    /// master first (see `roles::carry`).
    file_groups: std::sync::Mutex<Vec<(String, Vec<String>)>>,
}

fn file_groups(config: &Config) -> Vec<(String, Vec<String>)> {
    config
        .groups
        .iter()
        .map(|g| (g.name.clone(), roles::candidates(g)))
        .collect()
}

impl Reloader {
    pub fn new(path: PathBuf, shared: Arc<Shared>) -> Reloader {
        // Read just after the configuration was loaded: a change in between
        // is missed only if it happened within these few microseconds.
        let seen = watch::read(&path).ok().map(|(_, f)| f);
        let groups = file_groups(&shared.runtime().config);
        Reloader {
            path,
            lock: Mutex::new(()),
            shared,
            seen: std::sync::Mutex::new(seen),
            file_groups: std::sync::Mutex::new(groups),
        }
    }

    /// The shared state this reloader replaces snapshots of.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// `group`'s candidates in the file's order, its master first.
    pub fn file_order(&self, group: &str) -> Option<Vec<String>> {
        let groups = self.file_groups.lock().unwrap_or_else(|e| e.into_inner());
        groups.iter().find(|(g, _)| g == group).map(|(_, c)| c.clone())
    }

    fn seen(&self) -> Option<watch::Fingerprint> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Re-read the configuration file and apply it. `Ok`: a one-line summary of
/// what changed. `Err`: why the file was rejected (`FILE:LINE:COL: ...`
/// when the line is known); the running configuration is kept.
pub async fn reload(reloader: &Reloader) -> Result<String, ConfigError> {
    let _one_at_a_time = reloader.lock.lock().await;
    reload_locked(reloader).await
}

/// `reload.watch`: reload unless a reload (SIGHUP, `POST /reload`) has read
/// the version `now` already; `None` when none was needed.
async fn reload_if_changed(
    reloader: &Reloader,
    now: &watch::Fingerprint,
) -> Option<Result<String, ConfigError>> {
    let _one_at_a_time = reloader.lock.lock().await;
    if reloader.seen().as_ref() == Some(now) {
        return None;
    }
    info!(file = %reloader.path.display(), "configuration file changed: reloading");
    Some(reload_locked(reloader).await)
}

async fn reload_locked(reloader: &Reloader) -> Result<String, ConfigError> {
    let shared = &*reloader.shared;
    let path = reloader.path.clone();
    // A small file, but still disk I/O: keep it off the runtime's workers.
    let loaded = tokio::task::spawn_blocking(move || match watch::read(&path) {
        Ok((text, seen)) => (Some(seen), Config::from_file_text(&path, &text)),
        Err(source) => (
            None,
            Err(ConfigError::Read {
                origin: path.display().to_string(),
                source,
            }),
        ),
    })
    .await;
    let loaded = match loaded {
        Ok((seen, loaded)) => {
            if seen.is_some() {
                *reloader.seen.lock().unwrap_or_else(|e| e.into_inner()) = seen;
            }
            loaded
        }
        Err(e) => Err(ConfigError::Invalid {
            origin: reloader.path.display().to_string(),
            position: None,
            message: format!("reading the configuration failed: {e}"),
        }),
    };
    let new = match loaded {
        Ok(c) => c,
        Err(e) => {
            shared.metrics.config_reloaded(false, shared.runtime().generation);
            error!(error = %e, "configuration reload failed: the running configuration is kept");
            return Err(e);
        }
    };
    let running = shared.runtime();
    let file = file_groups(&new);
    let before = reloader
        .file_groups
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let new = roles::carry(&running, &before, new);
    for key in diff::restart_needed(&running.config, &new) {
        warn!(
            key,
            "configuration reload: `{key}` changed but takes effect only after a restart; \
             the running value is kept"
        );
    }
    let new = diff::keep_running(&running.config, new);
    let changes = diff::changes(&running.config, &new);
    *reloader.file_groups.lock().unwrap_or_else(|e| e.into_inner()) = file;
    if changes.is_empty() {
        let summary = format!("generation {}: no change", running.generation);
        shared.metrics.config_reloaded(true, running.generation);
        info!(
            generation = running.generation,
            "configuration reloaded: no change"
        );
        return Ok(summary);
    }
    let next = match running.next(new).and_then(|mut rt| {
        roles::refence(&running, &mut rt)?;
        Ok(rt)
    }) {
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
