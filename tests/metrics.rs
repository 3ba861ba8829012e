//! Metrics and the Grafana dashboard, proved with real parts: a MariaDB
//! master + replica, sluice, and a real Prometheus server (Debian's
//! `prometheus` package) scraping sluice's /metrics every second.
//!
//! Traffic goes through sluice, including a period of replica lag (the
//! replica's SQL thread stopped). Then every PromQL expression of every panel
//! of `grafana/sluice-dashboard.json` is evaluated through Prometheus' HTTP
//! API and must parse and return data; every metric name the dashboard
//! mentions must be in sluice's /metrics output; `promtool check metrics`
//! must accept that output; and Prometheus must have scraped a non-zero lag.

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::*;
use common::http::http_get;
use common::reads::tracked_db;
use mysql_async::prelude::*;
use serde_yaml_ng::Value;

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/grafana/sluice-dashboard.json");
const INSTALL_HINT: &str = "install Debian's prometheus package: `apt-get install -y prometheus` \
                            (or run scripts/install-deps)";
/// What `$__rate_interval` becomes: several 1 s scrapes, with margin for a loaded machine.
const RATE_INTERVAL: &str = "10s";

// ---------------------------------------------------------------------------
// Small helpers: tools, HTTP, JSON
// ---------------------------------------------------------------------------

/// The path of `prometheus` / `promtool`, or a loud failure saying how to
/// install them.
fn tool(name: &str) -> PathBuf {
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")]);
    for dir in candidates {
        let p = dir.join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!("`{name}` not found: {INSTALL_HINT}");
}

/// Percent-encode a query-string value.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// JSON is YAML: parse with the YAML crate sluice already depends on.
fn json(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("invalid JSON ({e}): {text}"))
}

// ---------------------------------------------------------------------------
// Prometheus
// ---------------------------------------------------------------------------

/// A Prometheus server under a tiny `sh` guard: if this test process dies,
/// the guard's stdin closes and it stops Prometheus. Normally stopped by PID
/// in [`Prometheus::stop`].
struct Prometheus {
    port: u16,
    pid: u32,
    guard: Child,
    stdin: Option<ChildStdin>,
    log: PathBuf,
}

impl Prometheus {
    fn start(dir: &Path, sluice_admin_port: u16) -> Prometheus {
        let bin = tool("prometheus");
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: sluice\n    static_configs:\n      \
                 - targets: ['127.0.0.1:{sluice_admin_port}']\n"
            ),
        )
        .expect("write prometheus.yml");
        let data = dir.join("tsdb");
        let log = dir.join("prometheus.log");
        let port = free_port();
        let mut guard = Command::new("/bin/sh")
            .arg("-c")
            .arg(r#"log="$1"; shift; "$@" >"$log" 2>&1 & pid=$!; echo $pid; read _; kill -TERM $pid 2>/dev/null; wait $pid"#)
            .arg("prometheus-guard")
            .arg(&log)
            .arg(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn prometheus under sh");
        let mut line = String::new();
        if let Some(out) = guard.stdout.take() {
            let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line);
        }
        let pid: u32 = line.trim().parse().expect("prometheus PID from the guard");
        let p = Prometheus {
            port,
            pid,
            stdin: guard.stdin.take(),
            guard,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if matches!(http_get(port, "/-/ready"), Ok((200, _))) {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus did not become ready on 127.0.0.1:{port}\n{}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Evaluate `expr` now: Ok(result list) or Err(Prometheus' error).
    fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let (status, body) = http_get(self.port, &format!("/api/v1/query?query={}", encode(expr)))?;
        let v = json(&body);
        if status != 200 || v["status"].as_str() != Some("success") {
            return Err(format!("HTTP {status}: {body}"));
        }
        v["data"]["result"]
            .as_sequence()
            .cloned()
            .ok_or_else(|| format!("no data.result in {body}"))
    }

    /// The first sample's value of a query's result.
    fn value(&self, expr: &str) -> Option<f64> {
        let r = self.query(expr).ok()?;
        let v = r.first()?["value"][1].as_str()?.parse().ok()?;
        Some(v)
    }

    /// SIGTERM by PID, then let the guard reap it (SIGKILL after 10 s).
    fn stop(&mut self) {
        let Some(stdin) = self.stdin.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.guard.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The guard has not reaped Prometheus yet, so the PID is still its.
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status();
        let _ = self.guard.wait();
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------
// The dashboard
// ---------------------------------------------------------------------------

/// (panel title, expr) of every target of every panel, rows included.
fn dashboard_exprs(dash: &Value) -> Vec<(String, String)> {
    fn walk(panels: &Value, out: &mut Vec<(String, String)>) {
        for p in panels.as_sequence().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_owned();
            for t in p["targets"].as_sequence().into_iter().flatten() {
                if let Some(e) = t["expr"].as_str() {
                    out.push((title.clone(), e.to_owned()));
                }
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dash["panels"], &mut out);
    out
}

/// Grafana variables → values Prometheus can evaluate: `$__rate_interval`
/// and `$__interval` → [`RATE_INTERVAL`], any other `$var` / `${var}` /
/// `${var:format}` → `.*` (they are all used as regex matchers).
fn substitute(expr: &str) -> String {
    let mut out = String::new();
    let mut rest = expr;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').unwrap_or(braced.len());
            let name = braced[..end].split(':').next().unwrap_or("");
            (name, end + 2)
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        out.push_str(match name {
            "__rate_interval" | "__interval" | "__range" => RATE_INTERVAL,
            _ => ".*",
        });
        rest = &after[len.min(after.len())..];
    }
    out.push_str(rest);
    out
}

/// Every `sluice_…` metric name in a text.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("sluice_") {
        let preceded_by_word = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if !preceded_by_word {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// Sample names in an exposition (`name{...} value` / `name value` lines).
fn exposed_names(metrics: &str) -> BTreeSet<String> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect()
}

// ---------------------------------------------------------------------------
// Traffic
// ---------------------------------------------------------------------------

struct Traffic {
    conn: mysql_async::Conn,
    next_id: u32,
}

impl Traffic {
    /// One round: a write, reads by text and as a prepared statement, a
    /// count, and now and then a statement the server rejects.
    async fn round(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        self.conn
            .query_drop(format!("INSERT INTO t VALUES ({id}, {id})"))
            .await
            .expect("insert through sluice");
        let v: Option<u32> = self
            .conn
            .query_first(format!("SELECT v FROM t WHERE id = {id}"))
            .await
            .expect("read through sluice");
        assert_eq!(v, Some(id), "read-your-writes through sluice");
        let _: Option<u32> = self
            .conn
            .exec_first("SELECT v FROM t WHERE id = ?", (id,))
            .await
            .expect("prepared read");
        let _: Option<u64> = self
            .conn
            .query_first("SELECT COUNT(*) FROM t")
            .await
            .expect("count");
        if id % 10 == 0 {
            assert!(
                self.conn.query_drop("SELECT * FROM no_such_table").await.is_err(),
                "an unknown table is an error"
            );
        }
    }

    async fn run_for(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            self.round().await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The value of the first sample of `name` in an exposition (no labels
/// filter: the test has one replica).
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

// ---------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_cluster_prometheus_evaluates_every_dashboard_query() {
    let started = Instant::now();
    // Fail before anything starts if the tools are missing.
    let promtool = tool("promtool");
    let _ = tool("prometheus");
    // SLUICE_TEST_DASHBOARD: check another dashboard file (e.g. a broken copy).
    let path = std::env::var("SLUICE_TEST_DASHBOARD").unwrap_or_else(|_| DASHBOARD.to_owned());
    let dashboard_text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read the dashboard {path}: {e}"));
    let dashboard = json(&dashboard_text);
    let exprs = dashboard_exprs(&dashboard);
    assert!(
        exprs.len() >= 20,
        "only {} expressions in the dashboard",
        exprs.len()
    );

    // A cluster of our own: the test stops the replica's SQL thread.
    let cluster = Cluster::start(1);
    let replica = &cluster.replicas[0];
    let db = tracked_db(&cluster, "metrics").await;

    let s = Sluice::start_for(
        &cluster,
        "freshness:\n  mode: causal\n  probe_interval: 10ms\n  probe_timeout: 500ms\n\
         log:\n  slow_query: 200ms\n",
    );
    let dir = tempfile::Builder::new()
        .prefix("sluice-prom-")
        .tempdir()
        .expect("temp dir");
    let mut prom = Prometheus::start(dir.path(), s.admin_port);

    assert_eq!(http_get(s.admin_port, "/healthz").map(|r| r.0), Ok(200));
    assert_eq!(http_get(s.admin_port, "/readyz").map(|r| r.0), Ok(200));

    // A refused login, and slow statements (one that must not be logged).
    let denied = mysql_async::Conn::from_url(s.url(APP_USER, "wrong-password", &db)).await;
    assert!(denied.is_err(), "a wrong password must be refused");
    let mut conn = mysql_async::Conn::from_url(s.app_url(&db))
        .await
        .expect("connect through sluice");
    conn.query_drop("SELECT SLEEP(0.3)").await.expect("slow query");
    conn.query_drop("SELECT SLEEP(0.3), PASSWORD('hunter2')")
        .await
        .expect("slow query with a password");

    // Wait until reads reach the replica (probes saw it fresh, triggers known).
    let master_id: u32 = cluster.master.sql("SELECT @@server_id").parse().expect("id");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let who: Option<u32> = conn
            .query_first("SELECT @@server_id + 0 * COUNT(*) FROM t")
            .await
            .expect("read");
        if who != Some(master_id) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reads never reached the replica\n{}",
            s.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Normal traffic, then lag, then catching up; Prometheus scrapes all along.
    let mut traffic = Traffic { conn, next_id: 1 };
    traffic.run_for(Duration::from_secs(3)).await;
    replica.stop_sql_thread();
    let lag_from = Instant::now();
    let mut max_lag_direct = 0.0f64;
    while lag_from.elapsed() < Duration::from_secs(4) {
        traffic.run_for(Duration::from_millis(250)).await;
        if let Ok((200, m)) = http_get(s.admin_port, "/metrics") {
            max_lag_direct = max_lag_direct.max(sample(&m, "sluice_replica_lag_seconds").unwrap_or(0.0));
        }
    }
    replica.start_sql_thread();
    traffic.run_for(Duration::from_secs(3)).await;
    // Let Prometheus scrape the final state at least twice.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let (status, metrics) = http_get(s.admin_port, "/metrics").expect("GET /metrics");
    assert_eq!(status, 200, "{metrics}");

    // 1. promtool accepts the exposition.
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    check
        .stdin
        .take()
        .expect("promtool stdin")
        .write_all(metrics.as_bytes())
        .expect("feed promtool");
    let out = check.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics failed ({}):\n{}{}\n--- /metrics ---\n{metrics}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // 2. Every metric the dashboard mentions is exported.
    let exposed = exposed_names(&metrics);
    let mentioned = metric_names(&dashboard_text);
    let missing: Vec<_> = mentioned.difference(&exposed).collect();
    assert!(
        missing.is_empty(),
        "the dashboard uses metrics sluice does not export: {missing:?}\n--- /metrics ---\n{metrics}"
    );

    // 3. Prometheus scraped a non-zero lag during the lag period.
    let lag_seconds = prom.value("max(max_over_time(sluice_replica_lag_seconds[5m]))");
    let lag_writes = prom.value("max(max_over_time(sluice_replica_lag_writes[5m]))");
    assert!(
        lag_seconds.is_some_and(|v| v > 0.0) && lag_writes.is_some_and(|v| v > 0.0),
        "no replica lag scraped by Prometheus (seconds {lag_seconds:?}, writes {lag_writes:?}; \
         seen directly: {max_lag_direct} s)\n{}",
        prom.log()
    );
    assert_eq!(
        prom.value(r#"up{job="sluice"}"#),
        Some(1.0),
        "sluice target not up"
    );

    // 4. Every dashboard expression parses and returns data.
    let mut failures = Vec::new();
    for (title, expr) in &exprs {
        let q = substitute(expr);
        assert!(!q.contains('$'), "unsubstituted variable in {q}");
        match prom.query(&q) {
            Ok(r) if !r.is_empty() => {}
            Ok(_) => failures.push(format!("[{title}] no data: {q}")),
            Err(e) => failures.push(format!("[{title}] error: {q}\n    {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} dashboard expressions failed:\n{}",
        failures.len(),
        exprs.len(),
        failures.join("\n")
    );

    // 5. The slow-query log: the statement with its duration, and never a password.
    let log = s.log();
    assert!(
        log.contains("slow query") && log.contains("SELECT SLEEP(0.3)"),
        "no slow-query log line:\n{log}"
    );
    assert!(!log.contains("hunter2"), "a password reached the log:\n{log}");

    prom.stop();
    eprintln!(
        "metrics: {} dashboard expressions evaluated by Prometheus, all with data; {} metric names \
         checked; promtool ok; max lag scraped {:.3} s / {} writes; {:.1?}",
        exprs.len(),
        mentioned.len(),
        lag_seconds.unwrap_or(0.0),
        lag_writes.unwrap_or(0.0),
        started.elapsed()
    );
}

#[test]
fn substitution_and_name_extraction() {
    assert_eq!(
        substitute(r#"rate(x{group=~"$group", r=~"${replica:regex}"}[$__rate_interval])"#),
        r#"rate(x{group=~".*", r=~".*"}[10s])"#
    );
    assert_eq!(substitute("a{b=~\"master|$replica\"}"), "a{b=~\"master|.*\"}");
    let names = metric_names(r#"sum(rate(sluice_a_total[5s])) / sluice_b{x="y"} not_sluice_c"#);
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["sluice_a_total".to_owned(), "sluice_b".to_owned()]
    );
    let exposed = exposed_names("# HELP a x\n# TYPE a counter\na_total 1\nb{l=\"v\"} 2\n");
    assert!(exposed.contains("a_total") && exposed.contains("b"));
}
