//! A backend connection's security context (account, active roles, the rights it
//! logged in with) decides who may use it (issue 39). Every check is differential:
//! the same sessions run the same steps directly against the master and through
//! sluice (multiplexing on, few connections, so sessions share them), and each
//! answer must be the server's, in the text and the binary protocol.

mod common;

use std::time::Duration;

use common::accounts::*;
use common::cluster::*;
use mysql_async::prelude::*;
use mysql_async::Conn;

/// A database `db` with a table the account may read, a table `secret` only the
/// role may read, a role, and an account holding the role (not as default).
struct RoleFixture {
    db: String,
    role: String,
    user: String,
}

fn role_fixture(prefix: &str) -> RoleFixture {
    let db = unique_name(prefix);
    let f = RoleFixture {
        role: format!("{db}_role"),
        user: format!("{db}_u"),
        db,
    };
    shared_cluster().master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY); INSERT INTO {db}.t VALUES (1); \
         CREATE TABLE {db}.secret (x INT); INSERT INTO {db}.secret VALUES (42); \
         CREATE ROLE {role}; GRANT SELECT ON {db}.secret TO {role}; \
         CREATE USER '{user}'@'%' IDENTIFIED BY '{PW}'; GRANT SELECT ON {db}.t TO '{user}'@'%'; \
         GRANT {role} TO '{user}'@'%';",
        db = f.db,
        role = f.role,
        user = f.user,
    ));
    shared_cluster().wait_replicas_caught_up();
    f
}

/// One step of a two-session script.
#[derive(Debug, Clone)]
enum Step {
    /// A text-protocol statement.
    Text(String),
    /// The same through the binary protocol (prepare + execute).
    Binary(String),
    /// COM_RESET_CONNECTION.
    Reset,
    /// COM_CHANGE_USER to the same account and database.
    ChangeUser,
}

async fn bin(c: &mut Conn, sql: &str) -> Seen {
    match c.exec_first::<mysql_async::Row, _, _>(sql, ()).await {
        Ok(row) => Seen::Ok(row.and_then(|r| r.as_ref(0).map(|v| v.as_sql(true)))),
        Err(e) => seen_err(&e),
    }
}

async fn step(c: &mut Conn, s: &Step, user: &str, db: &str) -> Seen {
    match s {
        Step::Text(sql) => run(c, sql).await,
        Step::Binary(sql) => bin(c, sql).await,
        Step::Reset => match c.reset().await {
            Ok(true) => Seen::Ok(None),
            Ok(false) => Seen::Err(0, "COM_RESET_CONNECTION not supported".into()),
            Err(e) => seen_err(&e),
        },
        Step::ChangeUser => {
            let o = mysql_async::ChangeUserOpts::default()
                .with_user(Some(user.to_owned()))
                .with_pass(Some(PW.to_owned()))
                .with_db_name(Some(db.to_owned()));
            match c.change_user(o).await {
                Ok(()) => Seen::Ok(None),
                Err(e) => seen_err(&e),
            }
        }
    }
}

/// Run `script` (session index, step) on two sessions directly and on two through
/// sluice, comparing every answer.
async fn differential(port: u16, user: &str, db: &str, script: &[(usize, Step)], rounds: usize) {
    let mut direct = Vec::new();
    let mut through = Vec::new();
    for _ in 0..2 {
        direct.push(
            login(master_port(), user, PW, Some(db))
                .await
                .expect("direct login"),
        );
        through.push(
            login(port, user, PW, Some(db))
                .await
                .expect("login through sluice"),
        );
    }
    for round in 0..rounds {
        for (i, (who, s)) in script.iter().enumerate() {
            // MariaDB 10.11 keeps a role set with SET ROLE across
            // COM_RESET_CONNECTION and COM_CHANGE_USER (the same connection
            // answers CURRENT_ROLE() with it, and its privileges apply).
            // Through sluice they leave no role behind: the session goes on
            // as a fresh login of the account does, which is what it is
            // compared with.
            let want = if matches!(s, Step::Reset | Step::ChangeUser) {
                direct[*who] = login(master_port(), user, PW, Some(db))
                    .await
                    .expect("direct login");
                Seen::Ok(None)
            } else {
                step(&mut direct[*who], s, user, db).await
            };
            let got = step(&mut through[*who], s, user, db).await;
            if std::env::var_os("TRACE_STEPS").is_some() {
                println!("round {round} step {i} session {who} {s:?}: direct {want:?} sluice {got:?}");
            }
            assert_eq!(
                got, want,
                "round {round} step {i}: session {who} {s:?}: sluice (left) differs from the server (right)"
            );
        }
    }
}

/// `SET ROLE` is the session's own: another session of the same account never
/// gets the role with a pooled connection, the session keeps it (and `SET ROLE
/// NONE`) on every statement, and COM_RESET_CONNECTION / COM_CHANGE_USER leave
/// exactly what the server leaves.
#[tokio::test]
async fn set_role_stays_with_its_session() {
    let f = role_fixture("pr_role");
    // Two connections per account: the two sessions must share them.
    let s = sluice_with_accounts("backend: { pool_max: 2 }\n");
    until_known(&s, &f.user, &f.db).await;
    let secret = "SELECT x FROM secret".to_string();
    let role = "SELECT CURRENT_ROLE()".to_string();
    let t = |sql: &String| Step::Text(sql.clone());
    let b = |sql: &String| Step::Binary(sql.clone());
    let script = vec![
        (0, t(&role)),
        (0, t(&secret)),
        (0, Step::Text(format!("SET ROLE {}", f.role))),
        (0, t(&secret)),
        (0, b(&secret)),
        (1, t(&role)),
        (1, t(&secret)),
        (1, b(&secret)),
        (0, t(&secret)),
        (1, t(&secret)),
        (0, b(&role)),
        (1, b(&role)),
        (0, Step::Text("SELECT COUNT(*) FROM t".into())),
        (0, t(&secret)),
        // Dropping privileges before less trusted SQL.
        (0, Step::Text("SET ROLE NONE".into())),
        (0, t(&secret)),
        (0, b(&secret)),
        (0, t(&role)),
        (1, Step::Text(format!("SET ROLE {}", f.role))),
        (1, t(&secret)),
        (0, t(&secret)),
        (0, t(&role)),
        (1, b(&secret)),
        (0, Step::Text(format!("SET ROLE {}", f.role))),
        (0, Step::Reset),
        (0, t(&role)),
        (0, t(&secret)),
        (1, Step::ChangeUser),
        (1, t(&role)),
        (1, b(&secret)),
        (0, t(&secret)),
    ];
    differential(s.port, &f.user, &f.db, &script, 3).await;
}

/// The server fixes an account's default role, global and database privileges
/// and password expiry when a connection logs in. A session that logs in
/// through sluice after such a change has exactly what a direct login has then,
/// although pooled connections of the account logged in before the change.
#[tokio::test]
async fn a_login_after_a_privilege_change_has_the_new_rights() {
    let f = role_fixture("pr_change");
    let s = sluice_with_accounts("backend: { pool_max: 4 }\n");
    let master = &shared_cluster().master;
    let (user, db, role) = (f.user.clone(), f.db.clone(), f.role.clone());
    master.sql(&format!(
        "GRANT SELECT ON *.* TO '{user}'@'%'; GRANT INSERT ON {db}.* TO '{user}'@'%'"
    ));
    until_known(&s, &user, &db).await;
    let probes = [
        "SELECT CURRENT_ROLE()",
        "SELECT x FROM secret",
        "SELECT COUNT(*) FROM mysql.db",
        "INSERT INTO t VALUES (7)",
        "DELETE FROM t WHERE id = 7",
        "SHOW GRANTS",
    ];
    let changes = [
        format!("SET DEFAULT ROLE {role} FOR '{user}'@'%'"),
        format!("REVOKE SELECT ON *.* FROM '{user}'@'%'"),
        format!("REVOKE INSERT ON {db}.* FROM '{user}'@'%'"),
        format!("REVOKE {role} FROM '{user}'@'%'"),
        format!("ALTER USER '{user}'@'%' PASSWORD EXPIRE"),
    ];
    let mut delays = Vec::new();
    for change in &changes {
        // Warm the account's pool: connections logged in before the change.
        let mut warm = Vec::new();
        for _ in 0..3 {
            warm.push(login(s.port, &user, PW, Some(&db)).await.expect("warm login"));
        }
        for c in warm.iter_mut() {
            for p in probes {
                run(c, p).await;
            }
        }
        drop(warm);
        master.sql(change);
        let answers = async |port: u16| -> Vec<Seen> {
            match login(port, &user, PW, Some(&db)).await {
                Err(e) => vec![e],
                Ok(mut c) => {
                    let mut v = Vec::new();
                    for p in probes {
                        v.push(run(&mut c, p).await);
                        v.push(bin(&mut c, p).await);
                    }
                    v
                }
            }
        };
        let took = until(change, Duration::from_secs(6), async || {
            answers(s.port).await == answers(master_port()).await
        })
        .await;
        // Equal from then on.
        for _ in 0..3 {
            assert_eq!(answers(s.port).await, answers(master_port()).await, "{change}");
        }
        delays.push(took);
    }
    println!("privilege changes reached new sessions after {delays:?}");
}

/// `backend.max_connection_age` retires pooled connections older than it: the
/// bound for any change sluice does not notice. A session that logs in later
/// never gets such a connection (the session that holds it may go on with it,
/// as a server connection keeps the rights it logged in with).
#[tokio::test]
async fn pooled_connections_older_than_the_age_limit_are_retired() {
    let f = role_fixture("pr_age");
    let s = sluice_with_accounts("backend: { max_connection_age: 1s }\n");
    until_known(&s, &f.user, &f.db).await;
    let mut c = login(s.port, &f.user, PW, Some(&f.db)).await.expect("login");
    // In a transaction: on the master, and the server's own thread id.
    let thread = async |c: &mut Conn| -> String {
        c.query_drop("BEGIN").await.expect("begin");
        let id: Option<String> = c.query_first("SELECT @@pseudo_thread_id").await.expect("id");
        c.query_drop("COMMIT").await.expect("commit");
        id.expect("a thread id")
    };
    let first = thread(&mut c).await;
    assert_eq!(thread(&mut c).await, first, "the same pooled connection at once");
    c.disconnect().await.expect("disconnect");
    // A young pooled connection serves the next session (once sluice has seen
    // the first one go).
    let mut reused = false;
    for _ in 0..20 {
        let mut again = login(s.port, &f.user, PW, Some(&f.db)).await.expect("login");
        reused = thread(&mut again).await == first;
        again.disconnect().await.expect("disconnect");
        if reused {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(reused, "the pooled connection was never used again");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut later = login(s.port, &f.user, PW, Some(&f.db)).await.expect("login");
    assert_ne!(
        thread(&mut later).await,
        first,
        "a connection older than 1s was used again"
    );
}

/// Accounts created `REQUIRE SSL` / `X509` / `SUBJECT` log in through sluice only
/// as they could directly: a plaintext login is refused with the server's answer
/// (whatever sluice's own connections to the backends use); `REQUIRE SSL` over
/// TLS to sluice is let through to the server's own check; the certificate requirements, which sluice does not
/// verify, are refused with 1045 too, and logged with the reason.
#[tokio::test]
async fn accounts_requiring_tls_get_what_they_require() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, ck.cert.pem()).expect("cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("key");
    let s = sluice_with_accounts(&format!(
        "tls:\n  cert: {}\n  key: {}\n",
        cert.display(),
        key.display()
    ));
    let name = unique_name("pr_tls");
    let plain = format!("{name}_plain");
    shared_cluster().master.sql(&format!(
        "CREATE USER '{plain}'@'%' IDENTIFIED BY '{PW}'; \
         CREATE USER '{name}_ssl'@'%' IDENTIFIED BY '{PW}' REQUIRE SSL; \
         CREATE USER '{name}_x509'@'%' IDENTIFIED BY '{PW}' REQUIRE X509; \
         CREATE USER '{name}_subj'@'%' IDENTIFIED BY '{PW}' REQUIRE SUBJECT '/CN=client' AND CIPHER 'AES256-SHA';"
    ));
    until_known(&s, &plain, "information_schema").await;
    let tls = |user: &str| {
        opts(s.port, user, PW, None).ssl_opts(Some(
            mysql_async::SslOpts::default()
                .with_danger_accept_invalid_certs(true)
                .with_danger_skip_domain_validation(true),
        ))
    };
    for suffix in ["ssl", "x509", "subj"] {
        let user = format!("{name}_{suffix}");
        let direct = login(master_port(), &user, PW, None).await.map(|_| ());
        let through = login(s.port, &user, PW, None).await.map(|_| ());
        assert!(
            matches!(direct, Err(Seen::Err(1045, _))),
            "{user} directly: {direct:?}"
        );
        assert_eq!(through, direct, "{user}: a plaintext login through sluice");
        let over_tls = Conn::new(tls(&user)).await.map_err(|e| seen_err(&e));
        match suffix {
            // sluice lets it in; the test cluster's servers have no TLS, so
            // the account's own login from sluice to the master is refused by
            // the master (as it must be: plaintext there).
            "ssl" => assert!(
                matches!(&over_tls, Err(Seen::Err(1045, _)))
                    && !s.log().contains("requires a client certificate"),
                "{user} over TLS: {over_tls:?}"
            ),
            _ => assert!(
                matches!(over_tls, Err(Seen::Err(1045, _))),
                "{user} over TLS without a verified certificate: {over_tls:?}"
            ),
        }
    }
    assert!(
        s.log().contains("requires a client certificate"),
        "the refusal of a certificate account is logged with its reason"
    );
    let mut c = login(s.port, &plain, PW, None)
        .await
        .expect("an account without REQUIRE");
    assert_eq!(run(&mut c, "SELECT 1").await, Seen::Ok(Some("1".into())));
}

/// Configured users with `backend: group` run as the group's account, which may
/// see and end every session; for SHOW PROCESSLIST and KILL they are scoped by
/// their own name, as the server scopes an account without PROCESS or
/// CONNECTION ADMIN (1095, and only their own sessions listed).
#[tokio::test]
async fn configured_users_see_and_kill_only_their_own_sessions() {
    let s = Sluice::start(&format!(
        "users:\n  - {{ name: low, password: lowpw, backend: group }}\n  - {{ name: other, password: otherpw, backend: group }}\ngroups:\n{}",
        Sluice::group_yaml("main", shared_cluster())
    ));
    let mut victim = login(s.port, "other", "otherpw", None).await.expect("other");
    victim
        .query_drop("SELECT 'the other user''s secret statement'")
        .await
        .expect("statement");
    let vid = victim.id();
    let mut low = login(s.port, "low", "lowpw", None).await.expect("low");
    let rows: Vec<mysql_async::Row> = low.query("SHOW FULL PROCESSLIST").await.expect("processlist");
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r.get::<String, _>(1).as_deref(), Some("low"), "{rows:?}");
    }
    let e = low
        .query_drop(format!("KILL {vid}"))
        .await
        .map_err(|e| seen_err(&e));
    assert_eq!(
        e,
        Err(Seen::Err(1095, format!("You are not owner of thread {vid}")))
    );
    let e = low
        .query_drop(format!("KILL QUERY {vid}"))
        .await
        .map_err(|e| seen_err(&e));
    assert_eq!(
        e,
        Err(Seen::Err(1095, format!("You are not owner of thread {vid}")))
    );
    assert_eq!(
        run(&mut victim, "SELECT 1").await,
        Seen::Ok(Some("1".into())),
        "still alive"
    );
}

/// `MAX_USER_CONNECTIONS` counts the account's client sessions, as the server
/// counts its connections: the session past the limit gets the server's 1226,
/// and a place freed by a session that ended is taken again. (sluice first,
/// then directly once sluice and its pooled connections, which the server
/// counts too, are gone.)
#[tokio::test]
async fn max_user_connections_counts_client_sessions() {
    let name = unique_name("pr_muc");
    let user = format!("{name}_u");
    shared_cluster().master.sql(&format!(
        "CREATE USER '{user}'@'%' IDENTIFIED BY '{PW}' WITH MAX_USER_CONNECTIONS 2"
    ));
    let s = sluice_with_accounts("");
    until_known(&s, &user, "information_schema").await;
    let sluice_port = s.port;
    let mut running = Some(s);
    let mut answers = Vec::new();
    for port in [sluice_port, master_port()] {
        if port == master_port() {
            drop(running.take());
        }
        // The login that found the account may still be ending.
        let mut first = None;
        until("a first session", Duration::from_secs(5), async || {
            first = login(port, &user, PW, None).await.ok();
            first.is_some()
        })
        .await;
        let a = first.expect("first session");
        let b = login(port, &user, PW, None).await.expect("second session");
        let third = login(port, &user, PW, None).await.map(|_| ());
        a.disconnect().await.expect("disconnect");
        let freed = until("a freed place", Duration::from_secs(5), async || {
            match login(port, &user, PW, None).await {
                Ok(c) => c.disconnect().await.is_ok(),
                Err(_) => false,
            }
        })
        .await;
        b.disconnect().await.expect("disconnect");
        answers.push(third);
        assert!(freed < Duration::from_secs(5));
    }
    assert_eq!(answers[0], answers[1], "sluice (left) and the server (right)");
    assert_eq!(
        answers[1],
        Err(Seen::Err(
            1226,
            format!("User '{user}' has exceeded the 'max_user_connections' resource (current value: 2)")
        ))
    );
}

/// A session's prepared statements are bounded by the bytes of text sluice keeps
/// for them (16 MiB), not only by their number: 100 statements of 256 KiB are
/// refused from the 64th on with the server's 1461, the session goes on, and a
/// closed statement makes room again.
#[tokio::test]
async fn prepared_statement_text_per_session_is_capped() {
    let s = sluice_with_accounts("");
    let o = opts(s.port, SLUICE_USER, SLUICE_PASSWORD, None).stmt_cache_size(0);
    let mut c = Conn::new(o).await.expect("login");
    let big = |i: usize| format!("SELECT {i}, '{}'", "x".repeat(256 << 10));
    let mut held = Vec::new();
    let mut refused = None;
    for i in 0..100 {
        match c.prep(big(i)).await {
            Ok(st) => held.push(st),
            Err(e) => {
                refused = Some((i, seen_err(&e)));
                break;
            }
        }
    }
    let (at, e) = refused.expect("a cap on prepared statement text");
    assert!((60..=64).contains(&at), "refused at {at}");
    assert!(matches!(&e, Seen::Err(1461, m) if m.contains("16 MiB")), "{e:?}");
    assert_eq!(run(&mut c, "SELECT 1").await, Seen::Ok(Some("1".into())));
    let first = held.remove(0);
    c.close(first).await.expect("close");
    c.prep(big(1000)).await.expect("room again after a close");
}

/// Accounts with hourly limits (`MAX_QUERIES_PER_HOUR`, `MAX_UPDATES_PER_HOUR`,
/// `MAX_CONNECTIONS_PER_HOUR`) are refused with 1045 and the reason: the server
/// counts them per connection it sees, so through pooled connections sluice's own
/// statements would be charged and replica reads and reused logins would not.
/// Directly they log in; a wrong password still gets the plain 1045.
#[tokio::test]
async fn accounts_with_hourly_limits_are_refused_with_the_reason() {
    let name = unique_name("pr_hour");
    let limits = [
        ("q", "MAX_QUERIES_PER_HOUR 100", "MAX_QUERIES_PER_HOUR"),
        ("u", "MAX_UPDATES_PER_HOUR 5", "MAX_UPDATES_PER_HOUR"),
        (
            "c",
            "MAX_CONNECTIONS_PER_HOUR 50 MAX_QUERIES_PER_HOUR 9",
            "MAX_QUERIES_PER_HOUR, MAX_CONNECTIONS_PER_HOUR",
        ),
    ];
    let mut sql = format!("CREATE USER '{name}_n'@'%' IDENTIFIED BY '{PW}' WITH MAX_USER_CONNECTIONS 5;");
    for (suffix, with, _) in limits {
        sql += &format!("CREATE USER '{name}_{suffix}'@'%' IDENTIFIED BY '{PW}' WITH {with};");
    }
    shared_cluster().master.sql(&sql);
    let s = sluice_with_accounts("");
    until_known(&s, &format!("{name}_n"), "information_schema").await;
    for (suffix, _, named) in limits {
        let user = format!("{name}_{suffix}");
        let direct = login(master_port(), &user, PW, None).await.map(|_| ());
        assert_eq!(direct, Ok(()), "{user} directly");
        let through = login(s.port, &user, PW, None).await.map(|_| ());
        match &through {
            Err(Seen::Err(1045, msg)) => assert!(
                msg.contains(&format!("has {named}, which sluice cannot count")),
                "{user}: {msg}"
            ),
            other => panic!("{user} through sluice: {other:?}"),
        }
        let wrong = login(s.port, &user, "not-the-password", None).await.map(|_| ());
        let wrong_direct = login(master_port(), &user, "not-the-password", None)
            .await
            .map(|_| ());
        assert_eq!(wrong, wrong_direct, "{user}: a wrong password");
    }
    let mut c = login(s.port, &format!("{name}_n"), PW, None)
        .await
        .expect("an account with MAX_USER_CONNECTIONS only");
    assert_eq!(run(&mut c, "SELECT 1").await, Seen::Ok(Some("1".into())));
}

/// Which account a login is: one user name with several host patterns (every
/// one matches 127.0.0.1), dropped one at a time, most specific first. Each
/// time, `CURRENT_USER()` through sluice must name the account the server picks
/// directly (MariaDB's order: fewest matching hosts first, so `127.0.0._` before
/// `127.0.0.1%`; equal weights by host text, descending).
#[tokio::test]
async fn a_login_is_the_account_the_server_would_pick() {
    let user = unique_name("pr_host");
    let hosts = [
        "127.0.0.1%",
        "127.0.0._",
        "127.0.%",
        "127.0.0.%",
        "%",
        "127.0.0.0/255.255.255.0",
        "127.0._.1",
        "1%",
    ];
    let mut sql = String::new();
    for h in hosts {
        sql += &format!("CREATE USER '{user}'@'{h}' IDENTIFIED BY '{PW}';");
    }
    shared_cluster().master.sql(&sql);
    let s = Sluice::start(&format!(
        "auth:\n  account: {{ user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n  refresh: 250ms\ngroups:\n{}",
        Sluice::group_yaml("main", shared_cluster())
    ));
    until_known(&s, &user, "information_schema").await;
    let mut picked = Vec::new();
    for _ in 0..hosts.len() {
        let mut c = login(master_port(), &user, PW, None).await.expect("direct login");
        let direct = run(&mut c, "SELECT CURRENT_USER()").await;
        drop(c);
        let Seen::Ok(Some(account)) = direct.clone() else {
            panic!("direct: {direct:?}");
        };
        // The catalog follows each DROP USER within its refresh.
        until(
            &format!("sluice picks {account}"),
            Duration::from_secs(10),
            async || match login(s.port, &user, PW, None).await {
                Ok(mut c) => run(&mut c, "SELECT CURRENT_USER()").await == direct,
                Err(_) => false,
            },
        )
        .await;
        let host = account
            .rsplit_once('@')
            .map(|(_, h)| h.to_owned())
            .expect("user@host");
        shared_cluster()
            .master
            .sql(&format!("DROP USER '{user}'@'{host}'"));
        picked.push(host);
    }
    println!("picked in order: {picked:?}");
    let direct = login(master_port(), &user, PW, None).await.map(|_| ());
    assert!(matches!(direct, Err(Seen::Err(1045, _))), "{direct:?}");
    until(
        "sluice refuses the dropped user",
        Duration::from_secs(10),
        async || login(s.port, &user, PW, None).await.map(|_| ()) == direct,
    )
    .await;
}
