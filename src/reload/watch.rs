//! `reload.watch`: follow the configuration file. Every [`POLL`] the file is
//! resolved (symlinks followed), opened and hashed; when its resolved path,
//! device, inode or content differ from what the last reload read, and the
//! difference holds for two polls in a row (so a file caught half-written
//! is not loaded), it is reloaded through the same [`super::reload`] path as
//! SIGHUP: same log lines, same metrics, and a bad file changes nothing.
//!
//! Polling, not inotify: a ConfigMap or Secret volume is updated by the
//! kubelet swapping the `..data` symlink of the mounted directory, which an
//! inotify watch on the file never sees (the file's own symlink does not
//! change), and a poll of one small file costs nothing next to a proxy's work.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tracing::debug;

use super::Reloader;

/// How often the file is looked at. A change is applied within two polls
/// (it must hold for two) plus the reload itself.
pub const POLL: Duration = Duration::from_millis(500);

/// What identifies one version of the configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    /// The path with every symlink resolved (the kubelet's `..data/...`
    /// swap changes it).
    target: PathBuf,
    dev: u64,
    ino: u64,
    digest: [u8; 32],
}

/// The file's text and its fingerprint, both from one open file.
pub fn read(path: &Path) -> std::io::Result<(String, Fingerprint)> {
    let target = std::fs::canonicalize(path)?;
    let mut file = File::open(&target)?;
    let meta = file.metadata()?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let fingerprint = Fingerprint {
        target,
        dev: meta.dev(),
        ino: meta.ino(),
        digest: Sha256::digest(text.as_bytes()).into(),
    };
    Ok((text, fingerprint))
}

/// Start following `reloader`'s file (for as long as the process runs; a
/// reload that sets `reload.watch: false` pauses it).
pub fn follow(reloader: Arc<Reloader>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A version seen once, waiting for the next poll to confirm it.
        let mut pending: Option<Fingerprint> = None;
        loop {
            tick.tick().await;
            if !reloader.shared.runtime().config.reload.watch {
                pending = None;
                continue;
            }
            let path = reloader.path.clone();
            let now = match tokio::task::spawn_blocking(move || read(&path)).await {
                Ok(Ok((_, now))) => now,
                Ok(Err(e)) => {
                    // Gone or unreadable for a moment (an editor's rename):
                    // look again at the next poll; a reload would only fail.
                    debug!(error = %e, "reload.watch: cannot read the configuration file");
                    pending = None;
                    continue;
                }
                Err(_) => continue,
            };
            if reloader.seen().as_ref() == Some(&now) {
                pending = None;
                continue;
            }
            if pending.as_ref() != Some(&now) {
                pending = Some(now);
                continue;
            }
            pending = None;
            // The outcome is logged and counted by `reload`, as for SIGHUP.
            let _ = super::reload_if_changed(&reloader, &now).await;
        }
    });
}
