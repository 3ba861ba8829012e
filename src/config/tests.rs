use super::*;
use std::time::Duration;

/// The smallest valid configuration; every test below builds on it.
const MINIMAL: &str = "\
users:
  - { name: app, password: secret, backend: group }
groups:
  - name: main
    master: { addr: 127.0.0.1:3306, user: sluice }
";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::from_yaml_str(text, "test.yaml")
}

/// Parses `text`, expects an error, and returns (line, full message).
fn error_of(text: &str) -> (Option<usize>, String) {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => (e.line(), e.to_string()),
    }
}

/// Asserts an error on `line` whose message contains `needle`.
fn assert_error(text: &str, line: usize, needle: &str) {
    let (got_line, message) = error_of(text);
    assert_eq!(got_line, Some(line), "wrong line in: {message}");
    assert!(
        message.starts_with(&format!("test.yaml:{line}:")),
        "no FILE:LINE:COL prefix in: {message}"
    );
    assert!(message.contains(needle), "`{needle}` not in: {message}");
}

#[test]
fn defaults_apply_when_omitted() {
    let config = parse(MINIMAL).expect("minimal config");
    assert_eq!(config.listen.to_string(), "127.0.0.1:6033");
    assert_eq!(config.admin_listen.to_string(), "127.0.0.1:9033");
    assert_eq!(config.log.format, LogFormat::Text);
    assert_eq!(config.log.level, "info");
    assert_eq!(config.log.slow_query, Duration::from_secs(1));
    assert!(config.tls.is_none());
    assert_eq!(config.backend.connect_timeout, Duration::from_secs(2));
    assert_eq!(config.backend.pool_max, 256);
    let group = &config.groups[0];
    assert_eq!(group.name, "main");
    assert_eq!(group.master.addr, "127.0.0.1:3306");
    assert_eq!(group.master.password, "");
    assert_eq!(group.master.weight, 1);
    assert!(group.replicas.is_empty());
    assert!(matches!(&config.users[0].credential, Credential::Password(p) if p == "secret"));
    assert_eq!(config.freshness, Freshness::default());
    assert_eq!(config.freshness.mode, FreshnessMode::Causal);
    assert_eq!(config.freshness.schema, "sluice");
    assert_eq!(config.freshness.slots, 16);
    assert_eq!(config.freshness.probe_interval, Duration::from_millis(50));
    assert_eq!(config.freshness.probe_timeout, Duration::from_millis(500));
    assert_eq!(config.freshness.max_wait, Duration::ZERO);
    assert_eq!(config.freshness.rise, 2);
    assert_eq!(config.freshness.fall, 3);
    assert_eq!(config.backend.replica_read_timeout, Duration::ZERO);
    assert!(config.reload.watch, "reload.watch is on by default");
    assert!(!config.readiness.require_master);
    assert_eq!(config.limits.drain_delay, Duration::ZERO);
}

#[test]
fn fleet_settings_parse_and_are_checked_where_written() {
    let text = format!(
        "{MINIMAL}reload:\n  watch: false\nreadiness:\n  require_master: true\nlimits:\n  drain_delay: 5s\n\
         listen_reuseport: true\n"
    );
    let config = parse(&text).expect("fleet settings");
    assert!(!config.reload.watch);
    assert!(config.readiness.require_master);
    assert_eq!(config.limits.drain_delay, Duration::from_secs(5));
    assert!(config.listen_reuseport);
    assert!(!parse(MINIMAL).expect("minimal").listen_reuseport);
    assert_error(&format!("{MINIMAL}limits:\n  drain_delay: 5\n"), 7, "has no unit");
    assert_error(
        &format!("{MINIMAL}reload:\n  follow: true\n"),
        7,
        "unknown field `follow`",
    );
}

#[test]
fn example_file_is_valid() {
    let text = include_str!("../../config/sluice.yaml");
    let config = Config::from_yaml_str(text, "config/sluice.yaml").expect("example config");
    assert_eq!(config.users[0].name, "app");
    let group = &config.groups[0];
    assert_eq!(group.master.addr, "127.0.0.1:3306");
    assert_eq!(group.master.user, "sluice");
    assert_eq!(group.master.password, "sluice");
    assert_eq!(group.replicas.len(), 1);
    assert_eq!(group.replicas[0].addr, "127.0.0.1:3307");
    // The example documents the defaults.
    assert_eq!(config.freshness, Freshness::default());
    assert_eq!(config.limits, Limits::default());
    assert_eq!(config.reload, ReloadSettings::default());
    assert_eq!(config.readiness, Readiness::default());
}

#[test]
fn full_config_is_read() {
    let text = "\
listen: 0.0.0.0:3306
admin_listen: '[::1]:9100'
log: { format: json, level: 'warn,sluice=debug' }
tls: { cert: certs/a.crt, key: certs/a.key }
backend: { connect_timeout: 500ms, pool_max: 8, replica_read_timeout: 3s }
users:
  - { name: app, password: secret, backend: group }
  - { name: ro, password_hash: '*14e65567abdb5135d0cfd9a70b3032c179a49ee7', backend: group }
groups:
  - name: main
    master: { addr: db0:3306, user: sluice, password: x }
    replicas:
      - { addr: '[::1]:3307', user: sluice, password: x, weight: 3 }
  - name: shard1
    master: { addr: db1:3306, user: sluice }
";
    let config = parse(text).expect("full config");
    assert_eq!(config.listen.to_string(), "0.0.0.0:3306");
    assert_eq!(config.admin_listen.to_string(), "[::1]:9100");
    assert_eq!(config.log.format, LogFormat::Json);
    assert_eq!(config.log.level, "warn,sluice=debug");
    let tls = config.tls.expect("tls");
    assert_eq!(tls.cert, PathBuf::from("certs/a.crt"));
    assert_eq!(config.backend.connect_timeout, Duration::from_millis(500));
    assert_eq!(config.backend.pool_max, 8);
    assert_eq!(config.backend.replica_read_timeout, Duration::from_secs(3));
    let expected = native_password_hash(b"secret");
    assert!(matches!(config.users[1].credential, Credential::NativeHash(h) if h == expected));
    assert_eq!(config.groups[0].replicas[0].weight, 3);
    assert_eq!(config.groups[1].name, "shard1");
}

#[test]
fn syntax_error_has_line() {
    let text = "users:\n  - { name: app, password: secret\ngroups: []\n";
    let (line, message) = error_of(text);
    assert_eq!(line, Some(3), "{message}");
    assert!(message.starts_with("test.yaml:3:7: "), "{message}");
    assert!(
        !message.contains("at line 3 column 7"),
        "position left in message: {message}"
    );
}

#[test]
fn unknown_keys_are_rejected_at_their_line() {
    assert_error(
        &format!("{MINIMAL}listn: 0.0.0.0:1\n"),
        6,
        "unknown field `listn`",
    );
    let nested = MINIMAL.replace("password: secret", "pasword: secret");
    assert_error(&nested, 2, "unknown field `pasword`");
    let in_master = MINIMAL.replace("user: sluice }", "user: sluice, weight: 2 }");
    assert_error(&in_master, 5, "unknown field `weight`");
}

#[test]
fn wrong_types_have_line() {
    assert_error(&format!("{MINIMAL}backend:\n  pool_max: many\n"), 7, "pool_max");
    let users = MINIMAL.replace(
        "users:\n  - { name: app, password: secret, backend: group }",
        "users: 5",
    );
    assert_error(&users, 1, "expected a list of users");
    assert_error(
        &format!("{MINIMAL}log: {{ format: xml }}\n"),
        6,
        "unknown variant `xml`",
    );
}

#[test]
fn duplicate_keys_point_at_the_second_one() {
    assert_error(
        &format!("{MINIMAL}log: {{}}\n\nlog: {{}}\n"),
        8,
        "duplicate field `log`",
    );
    let in_group = MINIMAL.replace("    master:", "    name: again\n    master:");
    assert_error(&in_group, 5, "duplicate field `name`");
}

#[test]
fn bad_durations_have_line() {
    let cases = [
        ("5", "has no unit"),
        ("-5s", "negative"),
        ("5 parsecs", "unknown unit"),
        ("1.5s", "fractions"),
        ("0s", "greater than zero"),
    ];
    for (value, needle) in cases {
        let text = format!("{MINIMAL}backend:\n  connect_timeout: {value}\n");
        assert_error(&text, 7, needle);
    }
}

#[test]
fn bad_addresses_have_line() {
    assert_error(
        &format!("listen: localhost:6033\n{MINIMAL}"),
        1,
        "invalid listen address",
    );
    assert_error(
        &format!("{MINIMAL}admin_listen: 127.0.0.1\n"),
        6,
        "invalid listen address",
    );
    let no_port = MINIMAL.replace("127.0.0.1:3306", "127.0.0.1");
    assert_error(&no_port, 5, "has no port");
    let bad_port = MINIMAL.replace("127.0.0.1:3306", "127.0.0.1:99999");
    assert_error(&bad_port, 5, "invalid port");
    let bare_v6 = MINIMAL.replace("127.0.0.1:3306", "'::1:3306'");
    assert_error(&bare_v6, 5, "invalid host");
}

#[test]
fn same_listen_and_admin_listen_is_rejected() {
    let text = format!("listen: 127.0.0.1:7000\n{MINIMAL}admin_listen: 127.0.0.1:7000\n");
    assert_error(&text, 7, "same address as listen");
    // admin_listen left at its default: point at listen.
    assert_error(&format!("{MINIMAL}listen: 127.0.0.1:9033\n"), 6, "same address");
    // Port 0 means "any free port": used by tests, never a clash.
    let ephemeral = format!("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n{MINIMAL}");
    assert!(parse(&ephemeral).is_ok());
}

#[test]
fn groups_must_exist_and_be_unique() {
    let empty = "users:\n  - { name: app, password: x, backend: group }\ngroups: []\n";
    assert_error(empty, 3, "at least one group is required");
    let missing = "users:\n  - { name: app, password: x, backend: group }\n";
    let (_, message) = error_of(missing);
    assert!(message.contains("missing field `groups`"), "{message}");
    let duplicate = format!("{MINIMAL}  - name: main\n    master: {{ addr: h:1, user: u }}\n");
    assert_error(&duplicate, 6, "duplicate group name `main`");
}

#[test]
fn users_must_exist_and_be_unique() {
    let empty = MINIMAL.replace("  - { name: app, password: secret, backend: group }\n", "");
    assert_error(&empty, 1, "at least one user is required");
    let duplicate = MINIMAL.replace(
        "group }\n",
        "group }\n  - name: ro\n    password: x\n    backend: group\n  - name: app\n    password: y\n    backend: group\n",
    );
    assert_error(&duplicate, 6, "duplicate user name `app`");
    let blank = MINIMAL.replace("name: app", "name: ''");
    assert_error(&blank, 2, "cannot be empty");
}

#[test]
fn user_needs_exactly_one_credential() {
    let both = MINIMAL.replace(
        "password: secret",
        "password: s, password_hash: '*14E65567ABDB5135D0CFD9A70B3032C179A49EE7'",
    );
    assert_error(&both, 2, "both `password` and `password_hash`");
    let neither = MINIMAL.replace(", password: secret", "");
    assert_error(&neither, 2, "needs `password` or `password_hash`");
}

#[test]
fn bad_native_hash_has_line() {
    let cases = [
        (
            "'14E65567ABDB5135D0CFD9A70B3032C179A49EE7'",
            "does not start with `*`",
        ),
        ("'*14E65567'", "not a valid hash"),
        ("'*ZZE65567ABDB5135D0CFD9A70B3032C179A49EE7'", "not a valid hash"),
    ];
    for (value, needle) in cases {
        let text = format!(
            "users:\n  - name: app\n    password_hash: {value}\n    backend: group\ngroups:\n  - {{ name: m, master: {{ addr: h:1, user: u }} }}\n"
        );
        assert_error(&text, 3, needle);
    }
}

#[test]
fn replica_problems_have_line() {
    let base = "users:\n  - { name: app, password: x, backend: group }\ngroups:\n  - name: main\n    master: { addr: h:1, user: u }\n    replicas:\n";
    assert_error(
        &format!("{base}      - {{ user: u }}\n"),
        7,
        "missing field `addr`",
    );
    assert_error(
        &format!("{base}      - addr: h:2\n        user: u\n        weight: 0\n"),
        9,
        "at least 1",
    );
    assert_error(
        &format!("{base}      - {{ addr: h:1, user: u }}\n"),
        4,
        "same address as the master",
    );
}

#[test]
fn empty_file_is_reported() {
    let (line, message) = error_of("# nothing here\n\n");
    assert_eq!(line, None);
    assert!(
        message.starts_with("test.yaml: the configuration is empty"),
        "{message}"
    );
}

#[test]
fn load_resolves_tls_paths_against_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sluice.yaml");
    let text = format!("{MINIMAL}tls: {{ cert: certs/server.crt, key: /abs/server.key }}\n");
    std::fs::write(&path, text).expect("write config");
    let config = Config::load(&path).expect("load");
    let tls = config.tls.expect("tls");
    assert_eq!(tls.cert, dir.path().join("certs/server.crt"));
    assert_eq!(tls.key, PathBuf::from("/abs/server.key"));
}

#[test]
fn load_reports_missing_file_and_line_with_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.yaml");
    let message = Config::load(&missing).expect_err("missing file").to_string();
    assert!(message.contains("nope.yaml: cannot read"), "{message}");

    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, format!("{MINIMAL}bogus: 1\n")).expect("write config");
    let message = Config::load(&path).expect_err("bad key").to_string();
    let prefix = format!("{}:6:1: ", path.display());
    assert!(message.starts_with(&prefix), "{message}");
}

#[test]
fn native_hash_matches_mysql() {
    // SELECT PASSWORD('secret') on MySQL 5.7 / MariaDB.
    let hash = native_password_hash(b"secret");
    let text = format_native_hash(&hash);
    assert_eq!(text, "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7");
    assert_eq!(parse_native_hash(&text), Ok(hash));
    assert_eq!(parse_native_hash(&text.to_lowercase()), Ok(hash));
    assert!(parse_native_hash("*14E65567ABDB5135D0CFD9A70B3032C179A49EE").is_err());
    assert!(parse_native_hash("*14E65567ABDB5135D0CFD9A70B3032C179A49EE77").is_err());
    assert!(parse_native_hash("").is_err());
    assert!(parse_native_hash("*ZZE65567ABDB5135D0CFD9A70B3032C179A49EE7").is_err());
    assert!(parse_native_hash("*14E65567ABDB5135D0CFD9A70B3032C179A49E\u{e9}").is_err());
}

#[test]
fn durations_parse() {
    let ok = [
        ("500us", Duration::from_micros(500)),
        ("20ms", Duration::from_millis(20)),
        ("5s", Duration::from_secs(5)),
        ("1m", Duration::from_secs(60)),
        ("2h", Duration::from_secs(7200)),
        ("0ms", Duration::ZERO),
        (" 3s ", Duration::from_secs(3)),
    ];
    for (text, expected) in ok {
        assert_eq!(parse_duration(text), Ok(expected), "{text}");
    }
    for bad in [
        "",
        "5",
        "-1s",
        "s",
        "1.5s",
        "5d",
        "5 s",
        "99999999999999999999s",
        "18446744073709551615h",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
    }
}

#[test]
fn freshness_section_is_read() {
    let text = format!(
        "{MINIMAL}freshness:\n  mode: strict\n  schema: sluice_ctr\n  slots: 1024\n  probe_interval: 10ms\n  \
         probe_timeout: 2s\n  max_wait: 150ms\n  rise: 1\n  fall: 5\n"
    );
    let f = parse(&text).expect("freshness").freshness;
    assert_eq!(f.mode, FreshnessMode::Strict);
    assert_eq!(f.schema, "sluice_ctr");
    assert_eq!(f.slots, 1024);
    assert_eq!(f.probe_interval, Duration::from_millis(10));
    assert_eq!(f.probe_timeout, Duration::from_secs(2));
    assert_eq!(f.max_wait, Duration::from_millis(150));
    assert_eq!(f.rise, 1);
    assert_eq!(f.fall, 5);
    // `off` is the string off in YAML 1.2, not a boolean.
    let off = parse(&format!("{MINIMAL}freshness: {{ mode: off }}\n")).expect("off");
    assert_eq!(off.freshness.mode, FreshnessMode::Off);
    assert_eq!(off.freshness.slots, 16, "other fields keep their defaults");
    let causal = parse(&format!("{MINIMAL}freshness: {{ mode: causal }}\n")).expect("causal");
    assert_eq!(causal.freshness.mode, FreshnessMode::Causal);
}

#[test]
fn bad_freshness_values_have_line() {
    let cases = [
        ("mode: eventual", "unknown variant `eventual`"),
        ("slots: 0", "must be from 1 to 1024"),
        ("slots: 1025", "must be from 1 to 1024"),
        ("slots: -3", "an integer from 1 to 1024"),
        ("slots: many", "an integer from 1 to 1024"),
        ("rise: 0", "at least 1"),
        ("fall: 0", "at least 1"),
        ("probe_interval: 0ms", "interval `0ms` must be greater than zero"),
        ("probe_interval: 50", "has no unit"),
        ("probe_timeout: 0s", "greater than zero"),
        ("max_wait: -1ms", "negative"),
        ("schema: ''", "cannot be empty"),
        ("schema: mysql", "system schema"),
        ("schema: 'trailing '", "cannot end with a space"),
        ("probes: 3", "unknown field `probes`"),
    ];
    for (line, needle) in cases {
        let text = format!("{MINIMAL}freshness:\n  # comment\n  {line}\n");
        assert_error(&text, 8, needle);
    }
    let long = format!("{MINIMAL}freshness:\n  schema: {}\n", "s".repeat(65));
    assert_error(&long, 7, "longer than 64 characters");
    let zero_wait = parse(&format!("{MINIMAL}freshness: {{ max_wait: 0ms }}\n")).expect("0ms wait");
    assert_eq!(zero_wait.freshness.max_wait, Duration::ZERO);
}

#[test]
fn slow_query_threshold_is_read() {
    let log = |v: &str| parse(&format!("{MINIMAL}log:\n  slow_query: {v}\n"));
    assert_eq!(
        log("250ms").expect("250ms").log.slow_query,
        Duration::from_millis(250)
    );
    // 0s disables the slow-query log.
    assert_eq!(log("0s").expect("0s").log.slow_query, Duration::ZERO);
    assert_error(&format!("{MINIMAL}log:\n  slow_query: 2\n"), 7, "has no unit");
    assert_error(&format!("{MINIMAL}log:\n  slow_query: -1s\n"), 7, "negative");
    assert_error(
        &format!("{MINIMAL}log:\n  slow_queries: 1s\n"),
        7,
        "unknown field `slow_queries`",
    );
}

#[test]
fn sql_log_is_off_unless_asked() {
    assert!(!parse(MINIMAL).expect("minimal").log.sql_log);
    let on = parse(&format!("{MINIMAL}log:\n  sql_log: true\n")).expect("sql_log");
    assert!(on.log.sql_log);
    assert_error(&format!("{MINIMAL}log:\n  sql_log: sometimes\n"), 7, "sql_log");
}

#[test]
fn limits_defaults_and_values() {
    let config = parse(MINIMAL).expect("minimal config");
    assert_eq!(config.limits, Limits::default());
    assert_eq!(config.limits.max_client_connections, 10_000);
    assert_eq!(config.limits.max_packet_size, 64 << 20);
    assert_eq!(config.limits.idle_client_timeout, Duration::from_secs(8 * 3600));
    assert_eq!(config.limits.shutdown_timeout, Duration::from_secs(30));
    assert_eq!(config.users[0].max_connections, 0);
    let text = format!(
        "{MINIMAL}limits:\n  max_client_connections: 5\n  max_packet_size: 16K\n  idle_client_timeout: 0s\n  shutdown_timeout: 1s\n"
    )
    .replace("password: secret,", "password: secret, max_connections: 3,");
    let config = parse(&text).expect("limits");
    assert_eq!(config.limits.max_client_connections, 5);
    assert_eq!(config.limits.max_packet_size, 16 << 10);
    assert_eq!(config.limits.idle_client_timeout, Duration::ZERO);
    assert_eq!(config.limits.shutdown_timeout, Duration::from_secs(1));
    assert_eq!(config.users[0].max_connections, 3);
    for (size, bytes) in [("1024", 1024), ("64m", 64 << 20), ("1G", 1 << 30)] {
        let text = format!("{MINIMAL}limits:\n  max_packet_size: {size}\n");
        assert_eq!(parse(&text).expect(size).limits.max_packet_size, bytes);
    }
}

#[test]
fn limit_problems_have_line() {
    let bad = [
        ("max_client_connections: 0", "out of range"),
        ("max_packet_size: 2G", "out of range"),
        ("max_packet_size: 100", "out of range"),
        ("max_packet_size: 64MB", "invalid size"),
        ("idle_client_timeout: 8", "no unit"),
        ("max_clients: 3", "unknown field"),
    ];
    for (line, needle) in bad {
        assert_error(&format!("{MINIMAL}limits:\n  {line}\n"), 7, needle);
    }
    let negative = MINIMAL.replace("password: secret,", "password: secret, max_connections: -1,");
    assert_error(&negative, 2, "max_connections");
}

#[test]
fn backend_tls_is_read_and_checked() {
    let text = "\
users:
  - { name: app, password: secret, backend: group }
backend:
  tls: { mode: verify_ca, ca: ca.pem }
groups:
  - name: main
    master:
      addr: db0:3306
      user: sluice
      tls: { mode: verify_identity, ca: other.pem, cert: c.pem, key: k.pem, server_name: db.example }
    replicas:
      - { addr: db1:3306, user: sluice }
";
    let config = parse(text).expect("backend tls");
    let master = &config.groups[0].master;
    let tls = config.backend_tls(master);
    assert_eq!(tls.mode, BackendTlsMode::VerifyIdentity);
    assert_eq!(tls.ca, Some(PathBuf::from("other.pem")));
    assert_eq!(
        tls.client_cert,
        Some((PathBuf::from("c.pem"), PathBuf::from("k.pem")))
    );
    assert_eq!(tls.server_name.as_deref(), Some("db.example"));
    let replica = config.backend_tls(&config.groups[0].replicas[0]);
    assert_eq!(replica.mode, BackendTlsMode::VerifyCa);
    assert_eq!(
        parse(MINIMAL).expect("minimal").backend.tls.mode,
        BackendTlsMode::Disabled
    );

    let base = "users:\n  - { name: app, password: x, backend: group }\ngroups:\n  - name: main\n    master:\n      addr: h:1\n      user: u\n      tls: ";
    let bad = [
        ("{ mode: verify_ca }", "needs `ca`"),
        ("{ mode: required, ca: a.pem }", "would be ignored"),
        ("{ mode: required, cert: c.pem }", "both `cert` and `key`"),
        (
            "{ mode: verify_ca, ca: a.pem, server_name: x }",
            "only checked with mode verify_identity",
        ),
        ("{ mode: sometimes }", "verify_identity"),
        ("{ mode: required, sni: x }", "unknown field"),
    ];
    for (tls, needle) in bad {
        assert_error(&format!("{base}{tls}\n"), 8, needle);
    }
}

#[test]
fn secrets_are_not_echoed() {
    let pasted = "users:\n  - name: app\n    password_hash: 'hunter2-secret'\ngroups:\n  - { name: m, master: { addr: h:1, user: u } }\n";
    let (_, message) = error_of(pasted);
    assert!(!message.contains("hunter2"), "{message}");
    let config =
        parse(&MINIMAL.replace("user: sluice }", "user: sluice, password: topsecret }")).expect("config");
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("topsecret") && !debug.contains("secret\""),
        "{debug}"
    );
}

#[test]
fn security_settings_are_read_and_checked() {
    let config = parse(MINIMAL).expect("minimal config");
    assert_eq!(config.limits.handshake_timeout, Duration::from_secs(5));
    assert_eq!(config.limits.max_unauthenticated, 1024);
    assert_eq!(config.limits.max_unauthenticated_per_address, 128);
    assert_eq!(config.admin, AdminConfig::default());
    assert!(!config.users[0].require_tls);
    assert_eq!(config.log.max_sql_length, 1024);

    let text = format!(
        "{MINIMAL}limits:\n  handshake_timeout: 2s\n  max_unauthenticated: 10\n  max_unauthenticated_per_address: 3\n\
         admin:\n  token: 0123456789abcdefXYZ\n  allowed_hosts: [Sluice.Internal]\n\
         tls: {{ cert: c.pem, key: k.pem, require: true }}\nlog:\n  max_sql_length: 100\n"
    )
    .replace("password: secret,", "password: secret, require_tls: true,");
    let config = parse(&text).expect("security settings");
    assert_eq!(config.limits.handshake_timeout, Duration::from_secs(2));
    assert_eq!(config.limits.max_unauthenticated, 10);
    assert_eq!(config.limits.max_unauthenticated_per_address, 3);
    assert_eq!(config.admin.token.as_deref(), Some("0123456789abcdefXYZ"));
    assert_eq!(config.admin.allowed_hosts, ["sluice.internal"]);
    assert!(config.tls.as_ref().is_some_and(|t| t.require));
    assert!(config.users[0].require_tls);
    assert_eq!(config.log.max_sql_length, 100);
    assert!(
        !format!("{config:?}").contains("0123456789abcdef"),
        "token in Debug"
    );

    assert_error(
        &format!("{MINIMAL}limits:\n  handshake_timeout: 0s\n"),
        7,
        "greater than zero",
    );
    assert_error(
        &format!("{MINIMAL}limits:\n  max_unauthenticated: 0\n"),
        7,
        "out of range",
    );
    assert_error(&format!("{MINIMAL}admin:\n  token: short\n"), 7, "at least 16");
    let (_, message) =
        error_of(&MINIMAL.replace("password: secret,", "password: secret, require_tls: true,"));
    assert!(message.contains("require_tls"), "{message}");
}

#[test]
fn admin_token_comes_from_the_file_next_to_the_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("admin.token"),
        "  file-token-0123456789  \nignored\n",
    )
    .expect("token");
    let path = dir.path().join("sluice.yaml");
    std::fs::write(&path, format!("{MINIMAL}admin:\n  token_file: admin.token\n")).expect("config");
    let config = Config::load(&path).expect("config");
    assert_eq!(
        config.admin.token_file.as_deref(),
        Some(dir.path().join("admin.token").as_path())
    );
    assert_eq!(
        config.admin.expected_token().expect("token"),
        Some("file-token-0123456789".to_owned())
    );
    std::fs::write(dir.path().join("admin.token"), "\n").expect("empty");
    assert!(config.admin.expected_token().is_err());
}

#[test]
fn auth_section_modes_and_defaults() {
    use super::AuthMode;
    let cfg = parse(MINIMAL).expect("minimal");
    assert_eq!(
        cfg.auth.mode,
        AuthMode::Config,
        "no auth.account: users only, as before"
    );
    assert!(!cfg.auth.server());
    let server_only = "auth:\n  account: { user: sluice, password: pw }\ngroups:\n  - name: main\n    master: { addr: 127.0.0.1:3306, user: sluice }\n";
    let cfg = parse(server_only).expect("server accounts without users");
    assert_eq!(cfg.auth.mode, AuthMode::Server);
    assert_eq!(cfg.auth.refresh, Duration::from_secs(2));
    assert!(cfg.users.is_empty());
    let both = MINIMAL.replace(
        "groups:",
        "auth: { mode: both, account: { user: a, password: b }, refresh: 500ms, pool_max_per_account: 8 }\ngroups:",
    );
    let cfg = parse(&both).expect("both");
    assert_eq!(cfg.auth.mode, AuthMode::Both);
    assert_eq!(cfg.auth.pool_max_per_account, Some(8));
    assert_eq!(cfg.auth.refresh, Duration::from_millis(500));
    let (_, e) = error_of(&MINIMAL.replace("groups:", "auth: { mode: server }\ngroups:"));
    assert!(e.contains("needs auth.account"), "{e}");
    let (_, e) = error_of("groups:\n  - name: main\n    master: { addr: 127.0.0.1:3306, user: sluice }\n");
    assert!(e.contains("no way to log in"), "{e}");
    let mapped = MINIMAL.replace("backend: group", "backend: { user: ro, password: ro }");
    let cfg = parse(&mapped).expect("mapped user");
    assert_eq!(cfg.users[0].backend.as_ref().map(|b| b.user.as_str()), Some("ro"));
    assert_eq!(parse(MINIMAL).expect("minimal").users[0].backend, None, "group");
    // Whom a configured user's statements run as is never implied.
    let (line, e) = error_of(&MINIMAL.replace(", backend: group", ""));
    assert_eq!(line, Some(2), "{e}");
    assert!(
        e.contains("needs `backend:`") && e.contains("backend: group"),
        "{e}"
    );
    let (line, e) = error_of(&MINIMAL.replace("backend: group", "backend: admin"));
    assert_eq!(line, Some(2), "{e}");
    assert!(e.contains("`admin`: write `group`"), "{e}");
    let (_, e) = error_of(&MINIMAL.replace("groups:", "auth: { bogus: 1 }\ngroups:"));
    assert!(e.contains("bogus"), "{e}");
}

#[test]
fn runtime_section_defaults_values_and_problems() {
    let config = parse(MINIMAL).expect("minimal config");
    assert_eq!(config.runtime, RuntimeSettings::default());
    assert_eq!(config.runtime.worker_threads, None);
    assert!(config.runtime.per_core, "sessions run per core by default");
    let config = parse(&format!("{MINIMAL}runtime:\n  worker_threads: 3\n")).expect("runtime");
    assert_eq!(
        config.runtime,
        RuntimeSettings {
            worker_threads: Some(3),
            per_core: true,
        }
    );
    let config = parse(&format!("{MINIMAL}runtime:\n  per_core: false\n")).expect("runtime");
    assert!(!config.runtime.per_core);
    assert_eq!(config.runtime.worker_threads, None);
    let bad = [
        ("worker_threads: 0", "out of range"),
        ("worker_threads: 1025", "out of range"),
        ("worker_threads: -2", "from 1 to 1024"),
        ("event_interval: 7", "unknown field"),
        ("worker_threads: two", "integer"),
        ("threads: 2", "unknown field"),
        ("per_core: maybe", "boolean"),
    ];
    for (line, needle) in bad {
        assert_error(&format!("{MINIMAL}runtime:\n  {line}\n"), 7, needle);
    }
}

#[test]
fn console_keys_parse_and_name_their_line() {
    let hash = super::format_native_hash(&super::native_password_hash(b"pw"));
    let text = format!(
        "{MINIMAL}admin:\n  sql_listen: 127.0.0.1:6034\n  users:\n    - {{ name: ops, password_hash: \"{hash}\", role: admin }}\n    - {{ name: w, password_hash: \"{hash}\", role: monitor }}\nlimits:\n  pause_timeout: 3s\n"
    );
    let c = parse(&text).expect("valid");
    assert_eq!(c.admin.sql_listen, Some("127.0.0.1:6034".parse().expect("addr")));
    assert_eq!(c.admin.users.len(), 2);
    assert_eq!(c.admin.users[1].role, super::ConsoleRole::Monitor);
    assert_eq!(c.limits.pause_timeout, Duration::from_secs(3));
    assert!(
        !format!("{:?}", c.admin).contains(&hash[1..]),
        "the hash is never printed"
    );
    let off = parse(MINIMAL).expect("valid");
    assert_eq!(
        (off.admin.sql_listen, off.admin.users.len()),
        (None, 0),
        "off by default"
    );
    assert_eq!(off.limits.pause_timeout, Duration::from_secs(30));

    let base = format!("{MINIMAL}admin:\n  users:\n");
    assert_error(
        &format!("{base}    - {{ name: a, password_hash: \"{hash}\", role: root }}\n"),
        8,
        "`admin` or `monitor`",
    );
    assert_error(
        &format!("{base}    - {{ name: a, password_hash: secret, role: admin }}\n"),
        8,
        "does not start with `*`",
    );
    assert_error(
        &format!("{base}    - {{ name: a, password: x, role: admin }}\n"),
        8,
        "unknown field",
    );
    assert_error(
        &format!("{base}    - {{ name: a, password_hash: \"{hash}\", role: admin }}\n    - {{ name: a, password_hash: \"{hash}\", role: admin }}\n"),
        9,
        "a",
    );
    assert_error(
        &format!("{MINIMAL}admin:\n  sql_listen: localhost:6034\n"),
        7,
        "invalid listen address",
    );
    assert_error(&format!("{MINIMAL}limits:\n  pause_timeout: 0s\n"), 7, "");
    assert_error(
        &format!("{MINIMAL}admin:\n  sql_listen: 0.0.0.0:6034\n"),
        6,
        "not a loopback address",
    );
}
