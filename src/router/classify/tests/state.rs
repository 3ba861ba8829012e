//! SET, transactions, USE, locks, SHOW and the statements after them.

use super::*;
use RouteReason as R;

#[test]
fn set_scopes() {
    for s in [
        "SET NAMES utf8mb4",
        "set names 'utf8' collate 'utf8_bin'",
        "SET NAMES DEFAULT",
        "SET CHARACTER SET utf8",
        "SET CHARSET 'utf8'",
        "SET sql_mode = ''",
        "SET sql_mode := 'ANSI'",
        "SET SESSION sql_mode = 'x'",
        "SET LOCAL sql_mode = 'x'",
        "SET @@session.sql_mode = 'x'",
        "SET @@LOCAL.sql_mode = 'x'",
        "SET @@sql_mode = 'x'",
        "SET time_zone = '+00:00'",
        "SET autocommit = 0",
        "SET `sql_mode` = ''",
        "SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')",
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET @@session.transaction_isolation = 'READ-COMMITTED', time_zone = 'UTC'",
        "SET max_execution_time = 10, SESSION wait_timeout = 5",
        "SET sql_mode = DEFAULT",
    ] {
        assert_eq!(set(s), SetScope::Session, "{s}");
        assert!(!c(s).sets_user_variable, "{s}");
    }
    for s in [
        "SET @a = 1",
        "SET @a := 1",
        "set @a=1, @b=(SELECT 1, 2)",
        "SET @`x y` = 'z'",
    ] {
        assert_eq!(set(s), SetScope::UserVariable { also_session: false }, "{s}");
        let r = c(s);
        assert!(r.sets_user_variable, "{s}");
        assert!(!r.reads_user_variable, "{s}");
        assert_eq!(r.force_master, None, "{s}");
    }
    for s in [
        "SET @a = 1, sql_mode = ''",
        "SET sql_mode = '', @a = 1",
        "SET NAMES utf8, @a = 1",
        "SET @a = CONCAT('a', 'b'), SESSION x = 2",
    ] {
        assert_eq!(set(s), SetScope::UserVariable { also_session: true }, "{s}");
    }
    assert!(c("SET @a = @b").reads_user_variable);
    assert!(c("SET sql_mode = @old").reads_user_variable);
    assert!(c("SET @a = GET_LOCK('x', 1)").takes_named_lock);
    for s in [
        "SET GLOBAL max_connections = 10",
        "SET @@global.max_connections = 10",
        "SET PERSIST max_connections = 10",
        "SET PERSIST_ONLY max_connections = 10",
        "SET @@persist.x = 1",
        "SET GLOBAL x = 1, SESSION y = 2",
        "SET sql_mode = '', GLOBAL x = 1",
        "SET @a = 1, @@global.x = 1",
        "SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    ] {
        assert_eq!(set(s), SetScope::Global, "{s}");
    }
    for s in [
        "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET TRANSACTION READ ONLY",
        "SET STATEMENT max_statement_time = 1",
        "SET PASSWORD = 'x'",
        "SET PASSWORD FOR 'u'@'h' = PASSWORD('x')",
        "SET DEFAULT ROLE r TO u",
    ] {
        assert_eq!(set(s), SetScope::MasterOnly, "{s}");
    }
    for s in ["SET ROLE r", "set role NONE", "/*!SET ROLE r*/", "SET ROLE `r-1`"] {
        assert_eq!(set(s), SetScope::Role, "{s}");
    }
    // `SET` inside another statement is no SET statement.
    write("UPDATE t SET a = 1");
    // Not valid SET statements.
    write("SET");
    write("SET a = 1,");
    write("SET = 1");
    write("SET SESSION");
}

#[test]
fn autocommit() {
    let cases: &[(&str, Option<bool>)] = &[
        ("SET autocommit=0", Some(false)),
        ("SET autocommit = 1", Some(true)),
        ("set AUTOCOMMIT=ON", Some(true)),
        ("SET autocommit = off", Some(false)),
        ("SET autocommit = TRUE", Some(true)),
        ("SET autocommit = false", Some(false)),
        ("SET autocommit = 'ON'", Some(true)),
        ("SET autocommit = \"off\"", Some(false)),
        ("SET @@autocommit = OFF", Some(false)),
        ("SET @@session.autocommit=1", Some(true)),
        ("SET @@LOCAL.autocommit=0", Some(false)),
        ("SET SESSION autocommit=1", Some(true)),
        ("SET LOCAL autocommit := 0", Some(false)),
        ("SET `autocommit` = 0", Some(false)),
        ("SET autocommit=0, sql_mode=''", Some(false)),
        ("SET sql_mode='', autocommit=1", Some(true)),
        ("SET autocommit=0, autocommit=1", Some(true)),
        ("/*!40101 SET autocommit=0 */", Some(false)),
        ("SET autocommit=0;", Some(false)),
        ("SET GLOBAL autocommit=0", None),
        ("SET @@global.autocommit=0", None),
        ("SET autocommit=DEFAULT", None),
        ("SET autocommit = 1+0", None),
        ("SET autocommit = @v", None),
        ("SET autocommit = 2", None),
        ("SET @autocommit = 0", None),
        ("SET autocommit_x = 0", None),
        ("SET sql_mode = 'autocommit=0'", None),
        ("SELECT 1", None),
        ("SET STATEMENT autocommit=0 FOR SELECT 1", None),
        ("UPDATE t SET autocommit = 0", None),
    ];
    for (s, want) in cases {
        assert_eq!(c(s).autocommit, *want, "{s}");
    }
}

#[test]
fn use_db() {
    assert_eq!(k("USE db"), Kind::Use("db".into()));
    assert_eq!(k("use Db1"), Kind::Use("Db1".into()));
    assert_eq!(k("USE `we``ird db`;"), Kind::Use("we`ird db".into()));
    assert_eq!(k("USE db -- c"), Kind::Use("db".into()));
    assert_eq!(k("/* x */ USE db /* y */ ;"), Kind::Use("db".into()));
    assert_eq!(k("USE données"), Kind::Use("données".into()));
    assert_eq!(classify(b"USE \xff").kind, Kind::Write);
    write("USE");
    write("USE a b");
    write("USE ``");
    write("USE 'db'");
    write("USER x");
    let r = c("USE a; SELECT 1");
    assert_eq!(r.kind, Kind::Write);
    assert!(r.multi_statement);
}

#[test]
fn transactions() {
    let b = |ro| Kind::Begin { read_only: ro };
    assert_eq!(k("BEGIN"), b(false));
    assert_eq!(k("begin work"), b(false));
    assert_eq!(k("BEGIN;"), b(false));
    assert_eq!(k("START TRANSACTION"), b(false));
    assert_eq!(k("START TRANSACTION READ ONLY"), b(true));
    assert_eq!(k("start transaction read only;"), b(true));
    assert_eq!(k("START TRANSACTION READ WRITE"), b(false));
    assert_eq!(k("START TRANSACTION READ ONLY, READ WRITE"), b(false));
    assert_eq!(k("START TRANSACTION WITH CONSISTENT SNAPSHOT"), b(false));
    assert_eq!(
        k("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"),
        b(true)
    );
    assert_eq!(
        k("START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT"),
        b(true)
    );
    write("BEGIN NOT ATOMIC SELECT 1; END");
    write("BEGIN x");
    write("START TRANSACTION READ");
    write("START TRANSACTION READ ONLY,");
    write("START TRANSACTION READ ONLY READ WRITE");
    write("START TRANSACTION WITH CONSISTENT");
    write("START");
    write("START SLAVE");

    assert_eq!(k("COMMIT"), Kind::Commit);
    assert_eq!(k("commit work"), Kind::Commit);
    assert_eq!(k("COMMIT AND NO CHAIN"), Kind::Commit);
    assert_eq!(k("COMMIT NO RELEASE"), Kind::Commit);
    assert_eq!(k("COMMIT RELEASE"), Kind::Commit);
    assert_eq!(k("COMMIT WORK AND NO CHAIN NO RELEASE;"), Kind::Commit);
    write("COMMIT AND CHAIN");
    write("COMMIT WORK AND CHAIN NO RELEASE");
    write("COMMIT foo");
    write("COMMIT AND");

    assert_eq!(k("ROLLBACK"), Kind::Rollback);
    assert_eq!(k("rollback work"), Kind::Rollback);
    assert_eq!(k("ROLLBACK AND NO CHAIN RELEASE"), Kind::Rollback);
    write("ROLLBACK TO SAVEPOINT s");
    write("ROLLBACK TO s");
    write("rollback work to savepoint s");
    write("ROLLBACK AND CHAIN");
}

#[test]
fn empty() {
    for s in [
        "",
        "   ",
        "\n\t",
        "-- c",
        "# c\n",
        "/* c */",
        ";",
        " ; ; ",
        "/*!*/",
        "/*M!100000 */",
    ] {
        assert_eq!(k(s), Kind::Empty, "{s:?}");
        assert_eq!(c(s).force_master, None, "{s:?}");
    }
}

#[test]
fn table_locks_and_temporary_tables() {
    for s in [
        "LOCK TABLES t READ",
        "lock table t write, u read",
        "LOCK TABLES",
        "LOCK INSTANCE FOR BACKUP",
        "BACKUP LOCK t",
        "FLUSH TABLES WITH READ LOCK",
        "FLUSH TABLES t1, t2 WITH READ LOCK",
        "flush tables t for export",
    ] {
        let r = c(s);
        assert_eq!(r.kind, Kind::Write, "{s}");
        assert!(r.locks_tables, "{s}");
    }
    for s in [
        "FLUSH TABLES",
        "FLUSH LOGS",
        "SELECT * FROM t LOCK IN SHARE MODE",
        "UNLOCK TABLES",
    ] {
        assert!(!c(s).locks_tables, "{s}");
    }
    for s in [
        "UNLOCK TABLES",
        "unlock table",
        "UNLOCK INSTANCE",
        "BACKUP UNLOCK",
    ] {
        assert!(c(s).unlocks_tables, "{s}");
    }
    for s in [
        "CREATE TEMPORARY TABLE t (a int)",
        "create temporary table if not exists t select 1",
        "CREATE OR REPLACE TEMPORARY TABLE t (a int)",
        "CREATE TEMPORARY SEQUENCE s",
    ] {
        let r = c(s);
        assert_eq!(r.kind, Kind::Write, "{s}");
        assert!(r.creates_temp_table, "{s}");
    }
    for s in [
        "CREATE TABLE t (a int)",
        "CREATE TABLE temporary_t (a int)",
        "DROP TEMPORARY TABLE t",
        "SELECT 'CREATE TEMPORARY TABLE'",
    ] {
        assert!(!c(s).creates_temp_table, "{s}");
    }
}

#[test]
fn show_statements() {
    for s in [
        "SHOW MASTER STATUS",
        "show master logs",
        "SHOW BINLOG EVENTS",
        "SHOW BINARY LOGS",
        "SHOW SLAVE STATUS",
        "SHOW SLAVE HOSTS",
        "SHOW REPLICA STATUS",
        "SHOW REPLICAS",
        "SHOW ALL SLAVES STATUS",
        "SHOW RELAYLOG EVENTS",
        "SHOW PROCESSLIST",
        "SHOW FULL PROCESSLIST",
    ] {
        read_forced(s, R::SideEffect);
        assert!(!c(s).refers_to_previous, "{s}");
    }
    for s in [
        "SHOW WARNINGS",
        "SHOW ERRORS LIMIT 1",
        "SHOW COUNT(*) WARNINGS",
        "SHOW PROFILES",
        "SHOW PROFILE FOR QUERY 1",
    ] {
        read_forced(s, R::SideEffect);
        assert!(c(s).refers_to_previous, "{s}");
    }
    for s in [
        "SHOW TABLES",
        "SHOW DATABASES",
        "SHOW VARIABLES",
        "SHOW CREATE TABLE master",
    ] {
        plain_read(s);
    }
    assert_eq!(tables("SHOW TABLES"), None);
}

#[test]
fn refers_to_previous() {
    for s in [
        "SELECT @@warning_count",
        "SELECT @@session.error_count",
        "SELECT FOUND_ROWS()",
        "SELECT ROW_COUNT()",
        "GET DIAGNOSTICS @n = NUMBER",
        "GET CURRENT DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT",
        "SHOW WARNINGS",
    ] {
        assert!(c(s).refers_to_previous, "{s}");
    }
    assert!(!c("SELECT 1").refers_to_previous);
    assert!(!c("SELECT LAST_INSERT_ID()").refers_to_previous);
    // Its targets are user variables: session state, as with SET @n.
    assert!(c("GET DIAGNOSTICS @n = NUMBER").sets_user_variable);
    assert!(c("GET DIAGNOSTICS CONDITION 1 @e = MYSQL_ERRNO, @m = MESSAGE_TEXT").sets_user_variable);
}
