//! The Helm chart (deploy/helm/sluice), validated without a cluster by
//! scripts/test-chart: lint, render each ci/*-values.yaml, check the objects
//! against the Kubernetes 1.33 and 1.37 schemas and the ServiceMonitor CRD,
//! `sluice check-config` on the rendered configuration (this build's binary),
//! and what the templates compute. The script installs its tools into a cache
//! on first use and fails when it cannot; it never skips.

use std::process::Command;

#[test]
fn chart_renders_valid_objects_and_a_config_sluice_accepts() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/test-chart");
    let out = Command::new("bash")
        .arg(script)
        .env("SLUICE_BIN", env!("CARGO_BIN_EXE_sluice"))
        .output()
        .expect("run scripts/test-chart");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    assert!(
        out.status.success(),
        "scripts/test-chart failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("test-chart: all checks passed"), "{stdout}");
}
