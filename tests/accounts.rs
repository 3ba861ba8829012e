//! The server's own accounts through sluice (issue 13). Accounts are created on
//! the master only (the replicas get them by replication); sluice reads them with
//! `auth.account` and every client statement runs as the client's own account.
//! Each check is differential: the same login or statement is tried directly on the
//! master with the same account, and sluice must give the same answer (success, or
//! the error code and message).

mod common;

use std::time::Duration;

use common::accounts::*;
use common::cluster::*;

/// A database with a table `t` of two rows, and accounts (unique names) for it:
/// `rw` (ALL on the database), `ro` (SELECT only), `locked` (ALL, ACCOUNT LOCK).
struct Fixture {
    db: String,
    other_db: String,
    rw: String,
    ro: String,
    locked: String,
}

fn fixture(prefix: &str) -> Fixture {
    let db = unique_name(prefix);
    let other_db = format!("{db}_other");
    let f = Fixture {
        rw: format!("{db}_rw"),
        ro: format!("{db}_ro"),
        locked: format!("{db}_lk"),
        db,
        other_db,
    };
    shared_cluster().master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v INT); \
         INSERT INTO {db}.t VALUES (1, 10), (2, 20); \
         CREATE DATABASE {other}; CREATE TABLE {other}.secret (x INT); INSERT INTO {other}.secret VALUES (42); \
         CREATE USER '{rw}'@'%' IDENTIFIED BY '{PW}'; GRANT ALL ON {db}.* TO '{rw}'@'%'; \
         CREATE USER '{ro}'@'%' IDENTIFIED BY '{PW}'; GRANT SELECT ON {db}.* TO '{ro}'@'%'; \
         CREATE USER '{lk}'@'%' IDENTIFIED BY '{PW}' ACCOUNT LOCK; GRANT ALL ON {db}.* TO '{lk}'@'%';",
        db = f.db,
        other = f.other_db,
        rw = f.rw,
        ro = f.ro,
        lk = f.locked,
    ));
    shared_cluster().wait_replicas_caught_up();
    f
}

fn master_count(db: &str) -> String {
    shared_cluster()
        .master
        .sql(&format!("SELECT COUNT(*), SUM(v) FROM {db}.t"))
        .trim()
        .to_owned()
}

#[tokio::test]
async fn logins_are_answered_as_the_server_answers_them() {
    let f = fixture("acc_login");
    let s = sluice_with_accounts("");
    until_known(&s, &f.ro, &f.db).await;
    let ghost = format!("{}_ghost", f.db);
    let cases: Vec<(&str, &str, Option<&str>)> = vec![
        (&f.ro, PW, Some(&f.db)),
        (&f.ro, PW, None),
        (&f.ro, "wrong", Some(&f.db)),
        (&f.ro, "", Some(&f.db)),
        (&ghost, PW, None),
        (&ghost, "", None),
        (&f.locked, PW, None),
        (&f.locked, "wrong", None),
        // A default database the account may not see.
        (&f.ro, PW, Some(&f.other_db)),
        (&f.ro, PW, Some("mysql")),
        // The group account's name with a wrong password is just a wrong password.
        (SLUICE_USER, "nope", None),
    ];
    for (user, pw, db) in cases {
        let direct = login(master_port(), user, pw, db).await.map(|_| ());
        let through = login(s.port, user, pw, db).await.map(|_| ());
        assert_eq!(
            through, direct,
            "login {user}/{pw:?} db {db:?}: sluice (left) differs from the server (right)"
        );
        if let Err(Seen::Err(code, _)) = &direct {
            assert!([1045, 4151, 1044].contains(code), "{user}: {direct:?}");
        }
    }
    // Logins by account, with names from refused clients never used as labels.
    let (_, metrics) = common::http::http_get(s.admin_port, "/metrics").expect("GET /metrics");
    let ok = format!(
        "sluice_account_logins_total{{account=\"{}\",result=\"ok\"}}",
        f.ro
    );
    assert!(
        metrics.lines().any(|l| l.starts_with(&ok)),
        "{ok} missing:\n{metrics}"
    );
    assert!(metrics
        .lines()
        .any(|l| l.starts_with("sluice_account_logins_total{account=\"-\",result=\"denied\"}")));
    assert!(!metrics.contains(&ghost), "a refused name became a label");
}

/// Statements whose answer must be the server's for the account.
fn statements(f: &Fixture) -> Vec<String> {
    let (db, other) = (&f.db, &f.other_db);
    vec![
        "SELECT CURRENT_USER()".into(),
        "SELECT USER() LIKE CONCAT(SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '@%')".into(),
        "SHOW GRANTS".into(),
        "SHOW GRANTS FOR CURRENT_USER()".into(),
        format!("SELECT COUNT(*) FROM {db}.t"),
        format!("SELECT x FROM {other}.secret"),
        format!("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{other}'"),
        "SELECT COUNT(*) FROM mysql.user".into(),
        format!("INSERT INTO {db}.t VALUES (3, 30)"),
        format!("UPDATE {db}.t SET v = v + 1"),
        format!("DELETE FROM {db}.t WHERE id = 1"),
        format!("CREATE TABLE {db}.made (a INT)"),
        format!("DROP TABLE {db}.t"),
        format!("TRUNCATE TABLE {db}.t"),
        format!("ALTER TABLE {db}.t ADD COLUMN w INT"),
        format!("CREATE DATABASE {db}_new"),
        format!("USE {other}"),
        "USE mysql".into(),
        "SET GLOBAL max_connections = 10".into(),
        "SET GLOBAL read_only = 1".into(),
        format!("CREATE USER '{db}_evil'@'%' IDENTIFIED BY 'x'"),
        format!("GRANT ALL ON *.* TO '{}'@'%'", f.ro),
        format!("SET PASSWORD FOR '{}'@'%' = PASSWORD('x')", f.rw),
        "SHOW PROCESSLIST".into(),
        "SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES".into(),
    ]
}

#[tokio::test]
async fn a_read_only_account_keeps_its_privileges_through_sluice() {
    let f = fixture("acc_ro");
    let s = sluice_with_accounts("");
    until_known(&s, &f.ro, &f.db).await;
    let before = master_count(&f.db);
    let mut direct = login(master_port(), &f.ro, PW, Some(&f.db))
        .await
        .expect("direct login");
    let mut through = login(s.port, &f.ro, PW, Some(&f.db))
        .await
        .expect("login through sluice");
    let mut refused = 0;
    for sql in statements(&f) {
        if sql == "SHOW PROCESSLIST" {
            // Answered by sluice itself (its own sessions); only check it runs.
            assert!(matches!(run(&mut through, &sql).await, Seen::Ok(_)), "{sql}");
            continue;
        }
        let want = run(&mut direct, &sql).await;
        let got = run(&mut through, &sql).await;
        assert_eq!(got, want, "{sql}: sluice (left) differs from the server (right)");
        if matches!(want, Seen::Err(..)) {
            refused += 1;
        }
    }
    assert!(
        refused >= 15,
        "the read-only account was refused only {refused} statements"
    );
    assert_eq!(
        master_count(&f.db),
        before,
        "nothing may be written on the master"
    );
    let dbs = shared_cluster()
        .master
        .sql(&format!("SHOW DATABASES LIKE '{}_new'", f.db));
    assert!(dbs.trim().is_empty(), "CREATE DATABASE must have been refused");
    let users = shared_cluster().master.sql(&format!(
        "SELECT COUNT(*) FROM mysql.user WHERE User = '{}_evil'",
        f.db
    ));
    assert_eq!(users.trim(), "0", "CREATE USER must have been refused");
}

#[tokio::test]
async fn the_group_account_is_never_observable() {
    let f = fixture("acc_group");
    let s = sluice_with_accounts("");
    until_known(&s, &f.rw, &f.db).await;
    let mut direct = login(master_port(), &f.rw, PW, Some(&f.db))
        .await
        .expect("direct");
    let mut through = login(s.port, &f.rw, PW, Some(&f.db))
        .await
        .expect("through sluice");
    for sql in [
        "SELECT CURRENT_USER()",
        "SHOW GRANTS",
        "SELECT GROUP_CONCAT(PRIVILEGE_TYPE ORDER BY PRIVILEGE_TYPE) FROM information_schema.USER_PRIVILEGES",
        "SELECT GROUP_CONCAT(DISTINCT TABLE_SCHEMA ORDER BY TABLE_SCHEMA) FROM information_schema.SCHEMA_PRIVILEGES",
        "SELECT COUNT(*) FROM mysql.user",
        "SET GLOBAL max_connections = 10",
    ] {
        // Several times: reads may go to a replica, writes to the master.
        for _ in 0..3 {
            let want = run(&mut direct, sql).await;
            let got = run(&mut through, sql).await;
            assert_eq!(got, want, "{sql}");
            if let Seen::Ok(Some(text)) = &got {
                assert!(!text.contains(&format!("`{SLUICE_USER}`")), "{sql}: {text}");
            }
        }
    }
    let me = run(&mut through, "SELECT CURRENT_USER()").await;
    assert_eq!(me, Seen::Ok(Some(format!("{}@%", f.rw))));
}

#[tokio::test]
async fn account_changes_on_the_server_take_effect_within_five_seconds() {
    let f = fixture("acc_change");
    // The default refresh (2s).
    let s = sluice_with_accounts("");
    until_known(&s, &f.rw, &f.db).await;
    let master = &shared_cluster().master;
    let port = s.port;
    let (user, db) = (f.rw.clone(), f.db.clone());
    let limit = Duration::from_secs(5);

    // CREATE USER: usable at once (a failed login reads the accounts again).
    let new_user = format!("{}_new", f.db);
    master.sql(&format!("CREATE USER '{new_user}'@'%' IDENTIFIED BY '{PW}'"));
    let created = until("CREATE USER", limit, async || {
        login(port, &new_user, PW, None).await.is_ok()
    })
    .await;

    // SET PASSWORD: the old password stops working, the new one works.
    master.sql(&format!("SET PASSWORD FOR '{user}'@'%' = PASSWORD('new-{PW}')"));
    let new_pw = format!("new-{PW}");
    let changed = until("SET PASSWORD (new password accepted)", limit, async || {
        login(port, &user, &new_pw, Some(&db)).await.is_ok()
    })
    .await;
    let old_refused = until("SET PASSWORD (old password refused)", limit, async || {
        matches!(login(port, &user, PW, Some(&db)).await, Err(Seen::Err(1045, _)))
    })
    .await;

    // DROP USER: refused with the server's own answer.
    master.sql(&format!("DROP USER '{user}'@'%'"));
    let dropped = until("DROP USER", limit, async || {
        matches!(
            login(port, &user, &new_pw, Some(&db)).await,
            Err(Seen::Err(1045, _))
        )
    })
    .await;
    let direct = login(master_port(), &user, &new_pw, Some(&db)).await.map(|_| ());
    let through = login(port, &user, &new_pw, Some(&db)).await.map(|_| ());
    assert_eq!(through, direct);
    println!(
        "account changes seen through sluice after: create {created:?}, set password {changed:?} \
         (old refused {old_refused:?}), drop {dropped:?}"
    );
    master.sql(&format!("DROP USER '{new_user}'@'%'"));
}

#[tokio::test]
async fn two_accounts_multiplexed_side_by_side_keep_their_rights() {
    let f = fixture("acc_mux");
    // Few backend connections: the two accounts' sessions share the backends'
    // budget, and each account's pool is smaller than its sessions.
    let s = sluice_with_accounts("backend: { pool_max: 4 }\n");
    until_known(&s, &f.ro, &f.db).await;
    until_known(&s, &f.rw, &f.db).await;
    let before: u64 = shared_cluster()
        .master
        .sql(&format!("SELECT COUNT(*) FROM {}.t", f.db))
        .trim()
        .parse()
        .expect("count");
    const SESSIONS: usize = 6;
    const ROUNDS: usize = 200;
    let mut tasks = Vec::new();
    for i in 0..SESSIONS * 2 {
        let writer = i % 2 == 0;
        let user = if writer { f.rw.clone() } else { f.ro.clone() };
        let db = f.db.clone();
        let port = s.port;
        tasks.push(tokio::spawn(async move {
            let mut c = login(port, &user, PW, Some(&db)).await.expect("login");
            let mut statements = 0;
            for round in 0..ROUNDS {
                let me = run(&mut c, "SELECT CURRENT_USER()").await;
                assert_eq!(
                    me,
                    Seen::Ok(Some(format!("{user}@%"))),
                    "session {i} round {round}"
                );
                let id = 1000 + i * ROUNDS + round;
                let ins = run(&mut c, &format!("INSERT INTO t VALUES ({id}, {round})")).await;
                if writer {
                    assert_eq!(ins, Seen::Ok(None), "writer {i} round {round}");
                } else {
                    assert!(
                        matches!(&ins, Seen::Err(1142, m) if m.starts_with("INSERT command denied to user")),
                        "reader {i} round {round}: {ins:?}"
                    );
                }
                let n = run(&mut c, "SELECT COUNT(*) FROM t").await;
                assert!(matches!(n, Seen::Ok(Some(_))), "{n:?}");
                statements += 3;
            }
            statements
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("session task");
    }
    assert!(total >= 7000, "{total} statements");
    let after: u64 = shared_cluster()
        .master
        .sql(&format!("SELECT COUNT(*) FROM {}.t", f.db))
        .trim()
        .parse()
        .expect("count");
    assert_eq!(
        after - before,
        (SESSIONS * ROUNDS) as u64,
        "exactly the writers' rows were written ({total} statements)"
    );
}

#[tokio::test]
async fn change_user_switches_to_the_other_account_s_rights() {
    let f = fixture("acc_chuser");
    let s = sluice_with_accounts("");
    until_known(&s, &f.ro, &f.db).await;
    let mut c = login(s.port, &f.rw, PW, Some(&f.db)).await.expect("login rw");
    let mut d = login(master_port(), &f.rw, PW, Some(&f.db))
        .await
        .expect("direct rw");
    let switch = |user: &str, pw: &str| {
        mysql_async::ChangeUserOpts::default()
            .with_user(Some(user.to_owned()))
            .with_pass(Some(pw.to_owned()))
            .with_db_name(Some(f.db.clone()))
    };
    let insert = |n: usize| format!("INSERT INTO t VALUES ({}, 0)", 5000 + n);
    for round in 0..4 {
        for (user, conn_is) in [(&f.ro, "ro"), (&f.rw, "rw")] {
            c.change_user(switch(user, PW))
                .await
                .expect("change_user through sluice");
            d.change_user(switch(user, PW)).await.expect("change_user direct");
            for sql in ["SELECT CURRENT_USER()", "SHOW GRANTS"] {
                assert_eq!(run(&mut c, sql).await, run(&mut d, sql).await, "{conn_is}: {sql}");
            }
            let got = run(&mut c, &insert(round * 2 + usize::from(conn_is == "rw"))).await;
            let want = run(&mut d, &insert(100 + round * 2 + usize::from(conn_is == "rw"))).await;
            assert_eq!(got, want, "{conn_is} round {round}: INSERT");
        }
    }
    // A wrong password in COM_CHANGE_USER: the server's answer.
    let e_sluice = c
        .change_user(switch(&f.ro, "wrong"))
        .await
        .map_err(|e| seen_err(&e));
    let e_direct = d
        .change_user(switch(&f.ro, "wrong"))
        .await
        .map_err(|e| seen_err(&e));
    assert_eq!(e_sluice.map(|_| ()), e_direct.map(|_| ()));
}

#[tokio::test]
async fn configured_users_map_to_a_server_account_in_mode_both() {
    let f = fixture("acc_both");
    let cluster = shared_cluster();
    let s = Sluice::start(&format!(
        "auth:\n  mode: both\n  account: {{ user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n\
         users:\n  - {{ name: cfg_reader, password: cfgpw, backend: {{ user: {ro}, password: \"{PW}\" }} }}\n\
         groups:\n{}",
        Sluice::group_yaml("main", cluster),
        ro = f.ro,
    ));
    until_known(&s, &f.rw, &f.db).await;
    // A configured user runs as its mapped account, with that account's rights.
    let mut c = login(s.port, "cfg_reader", "cfgpw", Some(&f.db))
        .await
        .expect("configured user");
    assert_eq!(
        run(&mut c, "SELECT CURRENT_USER()").await,
        Seen::Ok(Some(format!("{}@%", f.ro)))
    );
    assert!(matches!(
        run(&mut c, "INSERT INTO t VALUES (9, 9)").await,
        Seen::Err(1142, _)
    ));
    // Server accounts log in too.
    let mut w = login(s.port, &f.rw, PW, Some(&f.db))
        .await
        .expect("server account");
    assert_eq!(run(&mut w, "INSERT INTO t VALUES (9, 9)").await, Seen::Ok(None));
}

/// Between statements a session parks the connection it gave back (see
/// backend::pool); a parked connection still makes room for another account:
/// with the master's `pool_max` taken by one account's parked connections, the
/// other account's statement closes one of them and runs at once, instead of
/// waiting for the pool until 1040.
#[tokio::test]
async fn parked_connections_make_room_for_another_account() {
    let f = fixture("acc_park");
    let s = sluice_with_accounts("backend: { pool_max: 2 }\n");
    until_known(&s, &f.ro, &f.db).await;
    until_known(&s, &f.rw, &f.db).await;
    let mut a1 = login(s.port, &f.rw, PW, Some(&f.db)).await.expect("a1");
    let mut a2 = login(s.port, &f.rw, PW, Some(&f.db)).await.expect("a2");
    // At the same time: two connections of the rw account, then both parked.
    let (x, y) = tokio::join!(
        run(&mut a1, "INSERT INTO t SELECT 101, SLEEP(0.5)"),
        run(&mut a2, "INSERT INTO t SELECT 102, SLEEP(0.5)")
    );
    assert_eq!((x, y), (Seen::Ok(None), Seen::Ok(None)));
    let mut b = login(s.port, &f.ro, PW, Some(&f.db)).await.expect("b");
    let r = tokio::time::timeout(Duration::from_secs(4), run(&mut b, "SELECT LAST_INSERT_ID()"))
        .await
        .expect("the ro account's statement did not wait for the rw account's parked connections");
    assert_eq!(r, Seen::Ok(Some("0".into())));
    for c in [&mut a1, &mut a2] {
        assert_eq!(
            run(c, "SELECT COUNT(*) FROM t WHERE id > 100").await,
            Seen::Ok(Some("2".into()))
        );
    }
}

/// An account whose plugin sluice cannot check and log in with (ed25519: sluice logs
/// in to the backends as the account with mysql_native_password, and a client's
/// Ed25519 signature gives it no secret to do so) is refused with the server's plain
/// 1045, and the log names the plugin, also when the account was created after sluice
/// last read the accounts (found only by the re-read that follows a failed check).
#[tokio::test]
async fn an_account_with_a_plugin_sluice_cannot_use_is_refused_and_logged() {
    let cluster = shared_cluster();
    let m = &cluster.master;
    // On every server: the CREATE USER below replicates, and a replica without the
    // plugin stops its SQL thread on it.
    for server in std::iter::once(m).chain(&cluster.replicas) {
        if server
            .try_sql("SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'")
            .map(|v| v.trim().is_empty())
            .unwrap_or(true)
        {
            server.sql("INSTALL SONAME 'auth_ed25519'");
        }
    }
    let s = sluice_with_accounts("");
    let user = unique_name("acc_ed");
    m.sql(&format!(
        "CREATE USER '{user}'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{PW}')"
    ));
    let cli = |port: u16| {
        std::process::Command::new("mariadb")
            .args(["-h127.0.0.1", &format!("-P{port}"), &format!("-u{user}")])
            .args([
                &format!("-p{PW}"),
                "--ssl=0",
                "-N",
                "-B",
                "-e",
                "SELECT CURRENT_USER()",
            ])
            .output()
            .expect("mariadb CLI")
    };
    let direct = cli(master_port());
    assert!(
        direct.status.success(),
        "{}",
        String::from_utf8_lossy(&direct.stderr)
    );
    let through = cli(s.port);
    let err = String::from_utf8_lossy(&through.stderr);
    assert!(!through.status.success() && err.contains("1045"), "{err}");
    assert!(
        s.log().contains("cannot authenticate this account's plugin") && s.log().contains("ed25519"),
        "{}",
        s.log()
    );
    m.sql(&format!("DROP USER '{user}'@'%'"));
    cluster.wait_replicas_caught_up();
}
