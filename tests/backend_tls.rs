//! TLS from sluice to its backends, against a real MariaDB started with a certificate
//! from a CA generated here (rcgen). The backend account sluice uses is created
//! `REQUIRE SSL`, so a plaintext connection could not log in at all; `Ssl_cipher` read
//! through sluice shows the backend session is encrypted. Failures (unknown CA, wrong
//! name, a server without TLS under `required`) reach the client quickly as error 1429
//! with a sentence naming the cause.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{shared_cluster, Cluster, Sluice, TEST_DB};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

const TLS_USER: &str = "tlsonly";
const TLS_PASSWORD: &str = "tls-pw-7781";

/// PEM files of a CA and of a server certificate it signed (for `localhost` and
/// 127.0.0.1), plus an unrelated CA.
struct Pki {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    other_ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("sluice test CA {name}"));
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key")).expect("CA certificate")
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = ca("root");
    let other = ca("other");
    let key = KeyPair::generate().expect("server key");
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).expect("server params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &root).expect("server certificate");
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write PEM");
        p
    };
    Pki {
        ca: write("ca.pem", root.pem()),
        other_ca: write("other-ca.pem", other.pem()),
        server_cert: write("server.pem", cert.pem()),
        server_key: write("server-key.pem", key.serialize_pem()),
        _dir: dir,
    }
}

fn config(cluster: &Cluster, user: &str, password: &str, tls: &str) -> String {
    format!(
        "{}groups:\n  - name: main\n    master:\n      addr: {}\n      user: {user}\n      password: {password}\n      tls: {tls}\n    replicas: []\nbackend: {{ connect_timeout: 2s }}\n",
        Sluice::users_yaml(),
        cluster.master.addr()
    )
}

async fn try_connect(s: &Sluice, db: &str) -> Result<Conn, mysql_async::Error> {
    let opts = OptsBuilder::from_opts(Opts::from_url(&s.app_url(db)).expect("url")).prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(20), Conn::new(opts))
        .await
        .expect("connecting through sluice must not hang")
}

async fn ssl_cipher(c: &mut Conn) -> String {
    let row: Option<(String, String)> = c
        .query_first("SHOW STATUS LIKE 'Ssl_cipher'")
        .await
        .expect("SHOW STATUS through sluice");
    row.map(|(_, v)| v).unwrap_or_default()
}

/// Connecting with a default database makes sluice reach the master during the
/// login; the refusal must come fast, as error 1429, with `needle` in its sentence.
async fn assert_tls_refusal(s: &Sluice, needle: &str) {
    let t = Instant::now();
    let e = try_connect(s, TEST_DB)
        .await
        .expect_err("the backend TLS setup must fail");
    let took = t.elapsed();
    let mysql_async::Error::Server(e) = e else {
        panic!("expected a server error, got {e:?}\n{}", s.log());
    };
    eprintln!(
        "refused in {took:?}: ERROR {} ({}): {}",
        e.code, e.state, e.message
    );
    assert_eq!(e.code, 1429, "{e:?}");
    assert!(e.message.starts_with("SSL connection error: "), "{}", e.message);
    assert!(e.message.contains(needle), "`{needle}` not in: {}", e.message);
    assert!(took < Duration::from_secs(5), "refusal took {took:?}");
}

fn triggers_status(config: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["triggers", "status", "--schema", TEST_DB, "--config"])
        .arg(config)
        .output()
        .expect("run sluice triggers status")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_tls_own_cluster_verify_modes() {
    let pki = pki();
    let args = vec![
        format!("--ssl-ca={}", pki.ca.display()),
        format!("--ssl-cert={}", pki.server_cert.display()),
        format!("--ssl-key={}", pki.server_key.display()),
    ];
    let cluster = Cluster::start_with_args(0, &args);
    assert_ne!(
        cluster.master.sql("SELECT @@have_ssl"),
        "DISABLED",
        "MariaDB did not enable TLS"
    );
    cluster.master.sql(&format!(
        "CREATE USER '{TLS_USER}'@'%' IDENTIFIED BY '{TLS_PASSWORD}' REQUIRE SSL;
         GRANT ALL PRIVILEGES ON *.* TO '{TLS_USER}'@'%'"
    ));

    // verify_identity: the certificate chains to our CA and names 127.0.0.1.
    let tls = format!("{{ mode: verify_identity, ca: {} }}", pki.ca.display());
    let s = Sluice::start(&config(&cluster, TLS_USER, TLS_PASSWORD, &tls));
    let mut c = try_connect(&s, TEST_DB)
        .await
        .unwrap_or_else(|e| panic!("verify_identity: {e}\n{}", s.log()));
    let cipher = ssl_cipher(&mut c).await;
    assert!(!cipher.is_empty(), "the backend session is not encrypted");
    let one: Option<i64> = c.query_first("SELECT 1").await.expect("query over TLS");
    assert_eq!(one, Some(1));
    let user: Option<String> = c
        .query_first("SELECT CURRENT_USER()")
        .await
        .expect("current user");
    assert_eq!(user.as_deref(), Some(format!("{TLS_USER}@%").as_str()));
    // mysql_async connections (here: `sluice triggers`) use the same TLS settings.
    let out = triggers_status(s.config_path());
    assert!(
        out.status.success(),
        "sluice triggers status over TLS failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    drop(c);
    drop(s);

    // server_name: the name to check instead of the address's host.
    let tls = format!(
        "{{ mode: verify_identity, ca: {}, server_name: localhost }}",
        pki.ca.display()
    );
    let s = Sluice::start(&config(&cluster, TLS_USER, TLS_PASSWORD, &tls));
    let mut c = try_connect(&s, TEST_DB)
        .await
        .expect("verify_identity with server_name");
    assert!(!ssl_cipher(&mut c).await.is_empty());
    triggers_tool_logs_in(&s);
    drop(c);
    drop(s);

    // A name the certificate does not carry: refused under verify_identity ...
    let tls = format!(
        "{{ mode: verify_identity, ca: {}, server_name: db.example }}",
        pki.ca.display()
    );
    let s = Sluice::start(&config(&cluster, TLS_USER, TLS_PASSWORD, &tls));
    assert_tls_refusal(&s, "certificate").await;
    drop(s);

    // ... and an unrelated CA: refused under verify_ca.
    let tls = format!("{{ mode: verify_ca, ca: {} }}", pki.other_ca.display());
    let s = Sluice::start(&config(&cluster, TLS_USER, TLS_PASSWORD, &tls));
    assert_tls_refusal(&s, "UnknownIssuer").await;
    // sluice itself keeps serving: the next client gets the same clear answer.
    assert_tls_refusal(&s, "UnknownIssuer").await;
    drop(s);

    // required: encrypted, certificate not checked.
    let s = Sluice::start(&config(&cluster, TLS_USER, TLS_PASSWORD, "{ mode: required }"));
    let mut c = try_connect(&s, TEST_DB).await.expect("required");
    assert!(!ssl_cipher(&mut c).await.is_empty());
    // mysql_async connections (`sluice triggers`, the probes) go through the
    // authentication guard under required, which does the TLS itself: the account
    // is REQUIRE SSL, so logging in proves the guard's TLS works.
    triggers_tool_logs_in(&s);
    drop(c);
    drop(s);

    // runtime.per_core: two sessions on different session threads take turns,
    // each statement taking the TLS connection the other parked, which moves
    // to the borrower's thread with its TLS state (the socket under the TLS
    // stream is re-registered; see BackendConn::settle). One connection in
    // the pool, so that the turns must share it: with more, each session may
    // keep one of its own and nothing moves.
    let cfg = format!(
        "{}runtime: {{ per_core: true, worker_threads: 2 }}\n",
        config(&cluster, TLS_USER, TLS_PASSWORD, "{ mode: required }").replace(
            "backend: { connect_timeout: 2s }",
            "backend: { connect_timeout: 2s, pool_max: 1 }"
        )
    );
    let s = Sluice::start(&cfg);
    let mut a = try_connect(&s, TEST_DB).await.expect("per_core a");
    let mut b = try_connect(&s, TEST_DB).await.expect("per_core b");
    for k in 0..6i64 {
        let c = if k % 2 == 0 { &mut a } else { &mut b };
        assert!(!ssl_cipher(c).await.is_empty(), "turn {k}: not encrypted");
        let got: Option<i64> = c
            .query_first(format!("SELECT {k} * 2"))
            .await
            .unwrap_or_else(|e| panic!("turn {k}: {e}\n{}", s.log()));
        assert_eq!(got, Some(k * 2), "turn {k}");
    }
    let moved = common::http::metric(
        s.admin_port,
        "sluice_backend_pool_moves_total{group=\"main\",backend=\"master\"}",
    );
    assert!(
        moved.is_some_and(|m| m >= 1.0),
        "no TLS connection moved between session threads ({moved:?})\n{}",
        s.log()
    );
}

/// `sluice triggers sql` with `s`'s configuration reaches the master.
fn triggers_tool_logs_in(s: &Sluice) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["triggers", "sql", "--schema", TEST_DB, "--config"])
        .arg(s.config_path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run sluice triggers");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CREATE TABLE"));
}

#[tokio::test]
async fn backend_tls_required_against_a_server_without_tls_fails_clearly() {
    let cluster = shared_cluster();
    assert_eq!(cluster.master.sql("SELECT @@have_ssl"), "DISABLED");
    let user = common::cluster::SLUICE_USER;
    let password = common::cluster::SLUICE_PASSWORD;
    let s = Sluice::start(&config(cluster, user, password, "{ mode: required }"));
    assert_tls_refusal(&s, "the server does not offer TLS, and tls.mode is required").await;
    drop(s);

    // preferred falls back to plaintext.
    let s = Sluice::start(&config(cluster, user, password, "{ mode: preferred }"));
    let mut c = try_connect(&s, TEST_DB).await.expect("preferred");
    assert_eq!(ssl_cipher(&mut c).await, "", "plaintext backend session");
}
