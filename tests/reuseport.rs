//! `listen_reuseport: true`: a second sluice binds the same port, and the first can
//! stop without a refused connect. Run in a network namespace of its own (`unshare -n`,
//! as root) with `net.ipv4.tcp_migrate_req=1`, which moves the connections still queued
//! on the closing socket to the other one (tests/fixtures/reuseport.py drives it). The
//! same run with `tcp_migrate_req=0` is printed for information, not asserted: there
//! the kernel resets what was queued, and sluice warns at startup.

use std::process::Command;

fn run(migrate: &str) -> String {
    let work = tempfile::tempdir().expect("temp dir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reuseport.py");
    let out = Command::new("unshare")
        .args(["-n", "python3", script, env!("CARGO_BIN_EXE_sluice"), migrate])
        .arg(work.path())
        .output()
        .expect("run unshare -n python3 (util-linux, as root)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "reuseport.py (tcp_migrate_req={migrate}) failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn field(json: &str, key: &str) -> String {
    let start = json
        .find(&format!("\"{key}\": "))
        .unwrap_or_else(|| panic!("no {key} in {json}"))
        + key.len()
        + 4;
    json[start..]
        .split([',', '}'])
        .next()
        .expect("a value")
        .trim()
        .to_owned()
}

#[test]
fn one_of_two_reuseport_sluices_exits_without_a_refused_connect() {
    let with = run("1");
    println!("tcp_migrate_req=1: {with}");
    let connects: u64 = field(&with, "connects").parse().expect("connects");
    assert!(connects >= 100, "too few connects to show anything: {with}");
    assert_eq!(
        field(&with, "failed"),
        "0",
        "failed connects or greetings: {with}"
    );
    assert_eq!(field(&with, "a_exit"), "0", "{with}");
    assert_eq!(field(&with, "a_warned"), "false", "{with}");

    let without = run("0");
    println!("tcp_migrate_req=0 (informative): {without}");
    assert_eq!(
        field(&without, "a_warned"),
        "true",
        "no startup warning: {without}"
    );
}
