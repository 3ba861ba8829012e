//! No password in sluice's output, at the most verbose log level: client logins (good
//! and bad), statements that carry passwords (also logged as slow queries), a backend
//! that refuses sluice's password, and configuration errors around password keys.

mod common;

use std::process::Command;
use std::time::Duration;

use common::cluster::{shared_cluster, unique_name, Sluice, TEST_DB};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder};

const CLIENT_PW: &str = "Zq9-client-pw-4471";
const WRONG_CLIENT_PW: &str = "Wr0ng-client-pw-8812";
const BACKEND_PW: &str = "Xb7-backend-pw-9032";
const WRONG_BACKEND_PW: &str = "Wr0ng-backend-pw-5521";
const CREATED_PW: &str = "Cr8-user-pw-6619";
const SET_PW: &str = "Set-pw-3390";
const ALTER_PW: &str = "Alt-pw-7126";
const SYNTAX_PW: &str = "Syn-pw-1187";

fn all_secrets() -> [&'static str; 8] {
    [
        CLIENT_PW,
        WRONG_CLIENT_PW,
        BACKEND_PW,
        WRONG_BACKEND_PW,
        CREATED_PW,
        SET_PW,
        ALTER_PW,
        SYNTAX_PW,
    ]
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in all_secrets() {
        assert!(
            !text.contains(secret),
            "{what} shows the password {secret}:\n{text}"
        );
    }
}

async fn connect(s: &Sluice, user: &str, password: &str) -> Result<Conn, mysql_async::Error> {
    let opts = OptsBuilder::from_opts(Opts::from_url(&s.url(user, password, TEST_DB)).expect("url"))
        .prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(20), Conn::new(opts))
        .await
        .expect("connect timed out")
}

#[tokio::test]
async fn passwords_never_reach_the_log_at_trace_level() {
    let cluster = shared_cluster();
    let backend_user = unique_name("bk");
    let created = unique_name("u");
    cluster.master.sql(&format!(
        "CREATE USER '{backend_user}'@'%' IDENTIFIED BY '{BACKEND_PW}';
         GRANT ALL PRIVILEGES ON *.* TO '{backend_user}'@'%'"
    ));
    // The replica entry carries a wrong password: probes and reads sent there fail
    // to authenticate (the master serves the reads instead).
    let replica = &cluster.replicas[0];
    let config = format!(
        "users:\n  - {{ name: alice, password: {CLIENT_PW}, backend: group }}\ngroups:\n  - name: main\n    master: {{ addr: {}, user: {backend_user}, password: {BACKEND_PW} }}\n    replicas:\n      - {{ addr: {}, user: {backend_user}, password: {WRONG_BACKEND_PW} }}\nlog: {{ level: trace, slow_query: 1us }}\nfreshness: {{ mode: off }}\n",
        cluster.master.addr(),
        replica.addr()
    );
    let s = Sluice::start(&config);

    let refused = connect(&s, "alice", WRONG_CLIENT_PW).await;
    assert!(refused.is_err(), "a wrong password must be refused");
    let mut c = connect(&s, "alice", CLIENT_PW)
        .await
        .unwrap_or_else(|e| panic!("login: {e}\n{}", s.log()));
    // A read that is routed to the replica, whose login fails.
    let one: Option<i64> = c.query_first("SELECT 1").await.expect("read");
    assert_eq!(one, Some(1));
    for sql in [
        format!("CREATE USER '{created}'@'%' IDENTIFIED BY '{CREATED_PW}'"),
        format!("SET PASSWORD FOR '{created}'@'%' = PASSWORD('{SET_PW}')"),
        format!("ALTER USER '{created}'@'%' IDENTIFIED BY '{ALTER_PW}'"),
    ] {
        c.query_drop(&sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    // A statement the server rejects quotes the password back to this client only.
    let bad = format!("CREATE USER IDENTIFIED '{created}' BY '{SYNTAX_PW}'");
    let e = c.query_drop(&bad).await.expect_err("syntax error");
    assert!(
        e.to_string().contains(SYNTAX_PW),
        "the client sees its own statement: {e}"
    );
    c.query_drop(format!("DROP USER '{created}'@'%'"))
        .await
        .expect("drop user");
    drop(c);
    s.stop();

    let log = s.log();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "not a verbose log:\n{log}"
    );
    assert!(
        log.contains("slow query"),
        "statements were logged as slow:\n{log}"
    );
    assert!(
        log.contains("Access denied"),
        "the backend refusal was logged:\n{log}"
    );
    assert_no_secret("sluice's log", &log);
    cluster.master.sql(&format!("DROP USER '{backend_user}'@'%'"));
}

#[test]
fn configuration_errors_do_not_echo_passwords() {
    let dir = tempfile::tempdir().expect("temp dir");
    let group = "groups:\n  - { name: m, master: { addr: 127.0.0.1:1, user: u } }\n";
    let cases = [
        format!("users:\n  - {{ name: a, password_hash: '{CLIENT_PW}', backend: group }}\n{group}"),
        format!("users:\n  - {{ name: a, password: {{ x: '{CLIENT_PW}' }}, backend: group }}\n{group}"),
        format!("users:\n  - {{ name: a, password: ['{CLIENT_PW}'], backend: group }}\n{group}"),
        format!("users:\n  - {{ name: a, password: x, passwrd: '{CLIENT_PW}', backend: group }}\n{group}"),
        format!("users:\n  - name: a\n    password: x\n    password: '{CLIENT_PW}'\n{group}"),
        format!("users:\n  - {{ name: a, password: '{CLIENT_PW}\n{group}"),
        format!(
            "users:\n  - {{ name: a, password: x, backend: group }}\ngroups:\n  - {{ name: m, master: {{ addr: h:1, user: u, password: '{BACKEND_PW}', weight: 2 }} }}\n"
        ),
        format!(
            "users:\n  - {{ name: a, password: '{CLIENT_PW}', password_hash: '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7', backend: group }}\n{group}"
        ),
    ];
    for (i, text) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.yaml"));
        std::fs::write(&path, text).expect("write config");
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("check-config")
            .arg(&path)
            .output()
            .expect("run sluice check-config");
        assert!(!out.status.success(), "case {i} must be rejected:\n{text}");
        let shown = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(shown.contains(&format!("bad{i}.yaml:")), "case {i}: {shown}");
        assert_no_secret(&format!("check-config, case {i}"), &shown);
    }
}
