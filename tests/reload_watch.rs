//! `reload.watch`: sluice follows its configuration file without a signal. A Secret or
//! ConfigMap volume is updated the way the kubelet does it (a new timestamped
//! directory, a `..data_tmp` symlink renamed over `..data`, the old directory removed;
//! the file itself is a symlink `sluice.yaml -> ..data/sluice.yaml` that never
//! changes); a plain file is edited in place. Each change must be applied within 3 s
//! through the SIGHUP path (same log line, same metrics), a bad file must change
//! nothing and count as one `result="error"` reload.

mod common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::http_get;
use mysql_async::prelude::*;

/// Within this time of a change, sluice must have applied it (the bound).
const WITHIN: Duration = Duration::from_secs(3);

fn metric(s: &Sluice, series: &str) -> f64 {
    let (_, text) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    common::http::sample(&text, series).unwrap_or_else(|| panic!("no {series} in /metrics:\n{text}"))
}

fn generation(s: &Sluice) -> f64 {
    metric(s, "sluice_config_generation")
}

fn reloads(s: &Sluice, result: &str) -> f64 {
    metric(s, &format!("sluice_config_reloads_total{{result=\"{result}\"}}"))
}

/// Publishes `text` in `dir/mount` as the kubelet updates a volume: the file lands in a
/// new `..<stamp>` directory, `..data` is swapped to it atomically (symlink + rename),
/// the old directory is removed. Returns the path sluice reads, `mount/sluice.yaml`.
fn kubelet_publish(dir: &Path, text: &str) -> PathBuf {
    let mount = dir.join("mount");
    std::fs::create_dir_all(&mount).expect("mount dir");
    let stamp = format!("..{}", unique_name("2026_12_06"));
    std::fs::create_dir(mount.join(&stamp)).expect("timestamped dir");
    std::fs::write(mount.join(&stamp).join("sluice.yaml"), text).expect("write config");
    let data = mount.join("..data");
    let old = std::fs::read_link(&data).ok();
    let tmp = mount.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(&stamp, &tmp).expect("..data_tmp");
    std::fs::rename(&tmp, &data).expect("swap ..data");
    let file = mount.join("sluice.yaml");
    if std::fs::symlink_metadata(&file).is_err() {
        symlink("..data/sluice.yaml", &file).expect("sluice.yaml symlink");
    }
    if let Some(old) = old {
        std::fs::remove_dir_all(mount.join(old)).expect("remove the old version");
    }
    file
}

/// The configuration for `s` with `users` and watching on.
fn config(s: Option<&Sluice>, users: &[(&str, &str)]) -> String {
    let mut y = String::new();
    if let Some(s) = s {
        y.push_str(&format!(
            "listen: 127.0.0.1:{}\nadmin_listen: 127.0.0.1:{}\n",
            s.port, s.admin_port
        ));
    }
    y.push_str("reload:\n  watch: true\nusers:\n");
    for (name, password) in users {
        y.push_str(&format!(
            "  - {{ name: {name}, password: {password}, backend: group }}\n"
        ));
    }
    y.push_str(&format!(
        "groups:\n{}",
        Sluice::group_yaml("main", shared_cluster())
    ));
    harness_defaults(y)
}

/// Waits until `done()` holds, at most [`WITHIN`]; the time it took.
fn within(s: &Sluice, what: &str, done: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < WITHIN,
            "{what}: not within {WITHIN:?}; log:\n{}",
            s.log()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    start.elapsed()
}

async fn logs_in(s: &Sluice, user: &str, password: &str) -> bool {
    match mysql_async::Conn::from_url(s.url(user, password, "")).await {
        Ok(mut c) => c.query_drop("SELECT 1").await.is_ok(),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_kubelet_data_swap_is_followed_and_a_bad_version_changes_nothing() {
    let s = Sluice::start_with(&config(None, &[("app", "app")]), kubelet_publish);
    assert!(
        s.config_path().ends_with("mount/sluice.yaml"),
        "{:?}",
        s.config_path()
    );
    assert!(logs_in(&s, "app", "app").await);
    assert!(!logs_in(&s, "bob", "bobpw").await, "bob is not configured yet");
    let (gen0, ok0, err0) = (generation(&s), reloads(&s, "ok"), reloads(&s, "error"));

    // A new version: bob is added.
    kubelet_publish(s.dir(), &config(Some(&s), &[("app", "app"), ("bob", "bobpw")]));
    let took = within(&s, "the ..data swap reloaded", || generation(&s) == gen0 + 1.0);
    assert_eq!(reloads(&s, "ok"), ok0 + 1.0);
    assert!(logs_in(&s, "bob", "bobpw").await, "bob logs in after the swap");
    let log = s.log();
    assert!(log.contains("configuration file changed: reloading"), "{log}");
    assert!(log.contains("configuration reloaded"), "{log}");
    assert!(log.contains("users added: bob"), "{log}");
    eprintln!("kubelet swap applied after {took:?}");

    // A bad version: counted once as an error, nothing changes.
    kubelet_publish(s.dir(), "users: [ { name: x\n");
    within(&s, "the bad version counted", || {
        reloads(&s, "error") == err0 + 1.0
    });
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        reloads(&s, "error"),
        err0 + 1.0,
        "one error per version, not per poll"
    );
    assert_eq!(generation(&s), gen0 + 1.0);
    assert!(
        logs_in(&s, "bob", "bobpw").await,
        "the running configuration is kept"
    );
    assert!(s.log().contains("configuration reload failed"), "{}", s.log());

    // Back to a good version without bob.
    kubelet_publish(s.dir(), &config(Some(&s), &[("app", "app")]));
    within(&s, "the good version after the bad one", || {
        generation(&s) == gen0 + 2.0
    });
    assert!(!logs_in(&s, "bob", "bobpw").await, "bob is removed");
    assert!(logs_in(&s, "app", "app").await);
}

#[tokio::test]
async fn an_edited_file_is_followed_unless_watch_is_off() {
    let s = Sluice::start(&config(None, &[("app", "app")]));
    let gen0 = generation(&s);

    // Rewritten in place (same inode, new content).
    std::fs::write(
        s.config_path(),
        config(Some(&s), &[("app", "app"), ("carol", "c")]),
    )
    .expect("edit");
    within(&s, "the edit reloaded", || generation(&s) == gen0 + 1.0);
    assert!(logs_in(&s, "carol", "c").await);

    // Replaced by rename (a new inode, as editors save).
    let tmp = s.dir().join("sluice.yaml.new");
    std::fs::write(
        &tmp,
        config(Some(&s), &[("app", "app"), ("carol", "c"), ("dave", "d")]),
    )
    .expect("write");
    std::fs::rename(&tmp, s.config_path()).expect("rename over");
    within(&s, "the rename reloaded", || generation(&s) == gen0 + 2.0);
    assert!(logs_in(&s, "dave", "d").await);

    // A SIGHUP that read the new version first leaves nothing for the watcher.
    let ok = reloads(&s, "ok");
    std::fs::write(
        s.config_path(),
        config(Some(&s), &[("app", "app"), ("carol", "c")]),
    )
    .expect("edit");
    s.signal("HUP");
    within(&s, "the SIGHUP reload", || generation(&s) == gen0 + 3.0);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        reloads(&s, "ok"),
        ok + 1.0,
        "the watcher reloaded what SIGHUP had read"
    );

    // watch: false (applied by the watcher itself) stops following.
    let off =
        config(Some(&s), &[("app", "app")]).replace("reload:\n  watch: true\n", "reload:\n  watch: false\n");
    std::fs::write(s.config_path(), &off).expect("edit");
    within(&s, "watch: false applied", || generation(&s) == gen0 + 4.0);
    let edited = off.replace(
        "users:\n",
        "users:\n  - { name: erin, password: e, backend: group }\n",
    );
    std::fs::write(s.config_path(), edited).expect("edit");
    std::thread::sleep(WITHIN);
    assert_eq!(
        generation(&s),
        gen0 + 4.0,
        "followed the file although watch is off"
    );
    assert!(!logs_in(&s, "erin", "e").await);
}
