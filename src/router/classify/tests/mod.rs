//! The classifier against statements by family; the files below add the
//! session-state statements, table lists, both sql_mode readings and read sets.

use super::*;
use RouteReason as R;

mod any_mode;
mod read_set;
mod state;
mod tables;

fn c(s: &str) -> Classified {
    classify(s.as_bytes())
}
fn k(s: &str) -> Kind {
    c(s).kind
}
fn fm(s: &str) -> Option<RouteReason> {
    c(s).force_master
}
fn tables(s: &str) -> Option<Vec<String>> {
    c(s).tables
}
fn tt(v: &[&str]) -> Option<Vec<String>> {
    Some(v.iter().map(|s| s.to_string()).collect())
}
/// A plain read a replica may serve.
fn plain_read(s: &str) {
    let r = c(s);
    assert_eq!(r.kind, Kind::Read, "{s}");
    assert_eq!(r.force_master, None, "{s}");
    assert!(r.replica_eligible(), "{s}");
}
fn read_forced(s: &str, why: RouteReason) {
    let r = c(s);
    assert_eq!(r.kind, Kind::Read, "{s}");
    assert_eq!(r.force_master, Some(why), "{s}");
    assert!(!r.replica_eligible(), "{s}");
}
fn write(s: &str) {
    assert_eq!(k(s), Kind::Write, "{s}");
}
fn set(s: &str) -> SetScope {
    match k(s) {
        Kind::SessionSet(scope) => scope,
        other => panic!("{s}: {other:?}"),
    }
}

#[test]
fn keyword_table_is_sorted_and_unique() {
    for w in KEYWORDS.windows(2) {
        assert!(w[0].0 < w[1].0, "{:?} {:?}", w[0].0, w[1].0);
    }
    for w in KEYS.windows(2) {
        assert!(w[0] < w[1]);
    }
    for (word, kw) in KEYWORDS {
        assert!(word.len() <= MAX_KEYWORD);
        assert!(word.iter().all(|c| c.is_ascii_uppercase() || *c == b'_'));
        assert_eq!(keyword(word), *kw);
        assert_eq!(keyword(&word.to_ascii_lowercase()), *kw);
    }
    assert!(KEYWORDS.len() < 256);
    for (i, k) in KEYS.iter().enumerate() {
        assert_eq!(usize::from(SLOTS[slot(*k)]), i + 1);
    }
    assert_eq!(keyword(b"SeLeCt"), Kw::Select);
    assert_eq!(keyword(b"_select"), Kw::None);
    assert_eq!(keyword(b"1select"), Kw::None);
    assert_eq!(keyword(b"SELECTX"), Kw::None);
    assert_eq!(keyword(b"SELEC"), Kw::None);
    assert_eq!(keyword(b""), Kw::None);
    assert_eq!(keyword(b"s\xffl"), Kw::None);
    for w in [
        &b"select"[..],
        b"SeLeCt_x",
        b"a@[`{z",
        b"\xe1\xfa",
        b"0123456789abcdefXYZ",
        b"",
    ] {
        assert_eq!(pack_fast(w), pack(w), "{w:?}");
    }
    for (word, _) in KEYWORDS {
        assert_eq!(pack_fast(&word.to_ascii_lowercase()), pack(word));
    }
    // Long keywords are compared in full.
    assert_eq!(keyword(b"sql_calc_found_rows"), Kw::SqlCalcFoundRows);
    assert_eq!(keyword(b"SQL_CALC_FOUND_ROWX"), Kw::None);
    assert_eq!(keyword(b"SQL_CALC_FOUND_R"), Kw::None);
    assert_eq!(keyword(b"RELEASE_ALL_LOCKS_"), Kw::None);
}

#[test]
fn reads() {
    for s in [
        "SELECT 1",
        "select * from t where id = 1",
        "  \n\tSELECT 1  ",
        "(SELECT 1)",
        "((select a from t)) union (select b from u)",
        "(SELECT 1) ORDER BY 1 LIMIT 1",
        "VALUES (1), (2)",
        "TABLE t",
        "SHOW TABLES",
        "show full columns from t",
        "SHOW CREATE TABLE t",
        "SHOW VARIABLES LIKE 'master%'",
        "SHOW GLOBAL STATUS",
        "DESCRIBE t",
        "desc t",
        "DESC db.t col",
        "EXPLAIN SELECT * FROM t",
        "EXPLAIN FORMAT=JSON SELECT 1",
        "EXPLAIN EXTENDED SELECT 1",
        "EXPLAIN UPDATE t SET a = 1",
        "EXPLAIN DELETE FROM t",
        "EXPLAIN t",
        "HELP 'contents'",
        "WITH a AS (SELECT 1) SELECT * FROM a",
        "with recursive r(n) as (select 1 union all select n+1 from r where n < 3) select * from r",
        "SELECT * FROM t WHERE name = 'x' ORDER BY id DESC LIMIT 10 OFFSET 5",
        "SELECT SLEEP(1)",
        "SELECT NOW(), UUID(), RAND()",
        "SELECT 1;",
        "SELECT 1 ; -- done",
        "SELECT 1; /* trailing */ ",
        "SELECT 1;;",
    ] {
        plain_read(s);
    }
}

#[test]
fn writes_and_unknown() {
    for s in [
        "INSERT INTO t VALUES (1)",
        "insert t set a = 1",
        "UPDATE t SET a = 1",
        "DELETE FROM t",
        "REPLACE INTO t VALUES (1)",
        "CREATE TABLE t (a int)",
        "DROP TABLE t",
        "ALTER TABLE t ADD c int",
        "TRUNCATE t",
        "RENAME TABLE a TO b",
        "CALL p()",
        "DO 1",
        "LOAD DATA INFILE 'x' INTO TABLE t",
        "HANDLER t OPEN",
        "PREPARE s FROM 'SELECT 1'",
        "EXECUTE s",
        "DEALLOCATE PREPARE s",
        "DROP PREPARE s",
        "GRANT SELECT ON *.* TO 'u'@'h'",
        "REVOKE ALL ON *.* FROM u",
        "FLUSH PRIVILEGES",
        "KILL 42",
        "KILL QUERY 42",
        "ANALYZE TABLE t",
        "ANALYZE SELECT * FROM t",
        "ANALYZE FORMAT=JSON SELECT 1",
        "OPTIMIZE TABLE t",
        "CHECK TABLE t",
        "CHECKSUM TABLE t",
        "REPAIR TABLE t",
        "EXPLAIN ANALYZE SELECT * FROM t",
        "explain analyze select 1",
        "DESCRIBE ANALYZE SELECT 1",
        "SAVEPOINT s",
        "RELEASE SAVEPOINT s",
        "XA START 'x'",
        "XA COMMIT 'x'",
        "START SLAVE",
        "STOP REPLICA",
        "RESET MASTER",
        "PURGE BINARY LOGS TO 'x'",
        "CHANGE MASTER TO MASTER_HOST='h'",
        "INSTALL PLUGIN p SONAME 'x'",
        "SHUTDOWN",
        "SIGNAL SQLSTATE '45000'",
        "BINLOG 'abc'",
        "CREATE PROCEDURE p() BEGIN SELECT 1; END",
        "BEGIN NOT ATOMIC SELECT 1; END",
        "FOO BAR",
        "SELEC 1",
        "1",
        "'SELECT 1'",
        "`SELECT` 1",
        "@a",
        "(INSERT INTO t VALUES (1))",
        "(",
        "((",
        ")",
        "\u{0}\u{1}\u{2}",
        "DELIMITER //",
    ] {
        write(s);
    }
    assert_eq!(c("INSERT INTO t VALUES (1)").tables, None);
    assert_eq!(c("INSERT INTO t VALUES (1)").force_master, None);
}

#[test]
fn with_statements() {
    plain_read("WITH a AS (SELECT 1) SELECT * FROM a");
    assert_eq!(tables("WITH a AS (SELECT * FROM t) SELECT * FROM a"), None);
    write("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a");
    write("WITH a AS (SELECT 1) UPDATE t JOIN a SET t.x = 1");
    write("WITH a AS (SELECT 1) DELETE FROM t WHERE id IN (SELECT * FROM a)");
    write("WITH a AS (SELECT 1) REPLACE INTO t SELECT * FROM a");
    write("with a as (select 1) insert t select * from a");
    // String functions and words in strings are no writes.
    plain_read("WITH a AS (SELECT REPLACE(x, 'a', 'b') AS y FROM t) SELECT * FROM a");
    plain_read("WITH a AS (SELECT INSERT('abc', 1, 1, 'x')) SELECT * FROM a");
    plain_read("WITH a AS (SELECT 'DELETE FROM t' AS q) SELECT * FROM a");
    plain_read("WITH a AS (SELECT `update` FROM t) SELECT * FROM a");
    read_forced("WITH a AS (SELECT 1) SELECT * FROM t FOR UPDATE", R::LockingRead);
    read_forced("WITH a AS (SELECT 1) SELECT * INTO @x FROM a", R::SelectInto);
    plain_read("(WITH a AS (SELECT 1) SELECT * FROM a)");
}

#[test]
fn quoting() {
    plain_read("SELECT 'FOR UPDATE'");
    plain_read("SELECT \"FOR UPDATE\" FROM t");
    plain_read("SELECT 'a'';DELETE FROM t;'");
    plain_read("SELECT 'it''s', 'a\\'b FOR UPDATE', 'c\\\\'");
    plain_read("SELECT \"a\"\"b; INSERT\", \"x\\\"; DELETE\"");
    plain_read("SELECT `into` FROM t");
    plain_read("SELECT `a``; DELETE` FROM t");
    // A quoted built-in name calls the built-in (checked on 10.11).
    read_forced("SELECT `get_lock`(1)", R::LockFunction);
    plain_read("SELECT 'GET_LOCK(1)', \"LAST_INSERT_ID()\"");
    plain_read("SELECT '/*master*/', '-- master'");
    plain_read("SELECT ';' ; ");
    plain_read("SELECT N'x', _utf8mb4'y', X'00', B'1', 0x1F, 1.5e3, .5");
    plain_read("SELECT '\\\\' FROM t WHERE a = '\\''");
    assert_eq!(tables("SELECT * FROM `my db`.`t``x`"), tt(&["my db.t`x"]));
    // Unterminated text is unparsable.
    write("SELECT 'abc");
    write("SELECT \"abc");
    write("SELECT `abc");
    write("SELECT 'abc\\'");
    write("SELECT 1 /* never closed");
    write("/* never closed");
}

#[test]
fn comments() {
    plain_read("-- c\nSELECT 1");
    plain_read("# c\nSELECT 1");
    plain_read("/* c */ SELECT /* d */ 1 /* e */");
    plain_read("/**/SELECT/**/1");
    plain_read("SELECT 1 -- ; DELETE FROM t");
    plain_read("SELECT 1 # ; DELETE FROM t");
    plain_read("SELECT 1 /* ; DELETE FROM t */");
    plain_read("SELECT 1 --\tx");
    plain_read("SELECT 1 --");
    // `--` without a space is two minus signs, not a comment.
    plain_read("SELECT 1--1");
    write("SELECT 1--1; DELETE FROM t");
    // An executable comment's content is code.
    write("/*!40101 INSERT INTO t VALUES (1) */");
}

#[test]
fn hints() {
    for s in [
        "/*master*/ SELECT 1",
        "/* master */ SELECT 1",
        "SELECT /* sluice:master */ * FROM t",
        "SELECT 1 /*MASTER*/",
        "/* route: Master please */ SELECT 1",
        "/*+ master */ SELECT 1",
        "-- master\nSELECT 1",
        "SELECT 1 # master",
        "/* force_master */ SELECT 1",
    ] {
        read_forced(s, R::Hint);
    }
    for s in [
        "/* masters */ SELECT 1",
        "/* remaster */ SELECT 1",
        "/* slave */ SELECT 1",
        "SELECT 'master'",
        "SELECT `master` FROM master",
        "SELECT 1 /*!master_col */",
    ] {
        assert_ne!(fm(s), Some(R::Hint), "{s}");
    }
    // A hint wins over other reasons; a multi-statement wins over the hint.
    assert_eq!(fm("/*master*/ SELECT 1 FOR UPDATE"), Some(R::Hint));
    assert_eq!(fm("/*master*/ SELECT 1; SELECT 2"), Some(R::MultiStatement));
    // Hints on other kinds are reported too.
    assert_eq!(fm("/*master*/ INSERT INTO t VALUES (1)"), Some(R::Hint));
    let e = c("/*master*/");
    assert_eq!(e.kind, Kind::Empty);
    assert_eq!(e.force_master, Some(R::Hint));
    assert_eq!(tables("/*master*/ SELECT * FROM t"), tt(&["t"]));
}

#[test]
fn executable_comments() {
    assert_eq!(set("/*!40101 SET NAMES utf8 */"), SetScope::Session);
    assert_eq!(
        set("/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;"),
        SetScope::UserVariable { also_session: true }
    );
    read_forced("SELECT /*!50000 SQL_CALC_FOUND_ROWS */ * FROM t", R::FoundRows);
    read_forced("SELECT * FROM t /*! FOR UPDATE */", R::LockingRead);
    // MariaDB skips MySQL 5.7+ versioned comments.
    plain_read("SELECT * FROM t /*!80000 FOR SHARE */");
    read_forced("SELECT * FROM t /*!50000 FOR UPDATE */", R::LockingRead);
    read_forced("SELECT 1 /*M!100100 FOR UPDATE */", R::LockingRead);
    plain_read("/*M!100100 SELECT 1 */");
    plain_read("/*!SELECT*/ 1");
    plain_read("/*!40001 SELECT '*/' */");
    assert_eq!(k("/*!*/"), Kind::Empty);
    assert_eq!(
        tables("SELECT /*!40001 SQL_NO_CACHE */ * FROM /*!t*/ JOIN u"),
        tt(&["t", "u"])
    );
    // A comment inside is still a comment (and can hint).
    read_forced("/*!50000 SELECT /* master */ 1 */", R::Hint);
}

#[test]
fn case_insensitive() {
    read_forced("SeLeCt * FrOm t fOr UpDaTe", R::LockingRead);
    read_forced("select * from t lock in share mode", R::LockingRead);
    read_forced("select get_lock('a', 1)", R::LockFunction);
    read_forced("SELECT Last_Insert_Id()", R::LastInsertId);
    assert_eq!(k("begin"), Kind::Begin { read_only: false });
    assert_eq!(k("Commit"), Kind::Commit);
    assert_eq!(set("set Names utf8"), SetScope::Session);
    assert_eq!(tables("select * FROM T1 join Db.T2"), tt(&["T1", "Db.T2"]));
}

#[test]
fn locking_reads() {
    for s in [
        "SELECT * FROM t WHERE id = 1 FOR UPDATE",
        "SELECT * FROM t FOR UPDATE NOWAIT",
        "SELECT * FROM t FOR UPDATE SKIP LOCKED",
        "SELECT * FROM t FOR UPDATE WAIT 5",
        "SELECT * FROM t FOR UPDATE OF t",
        "SELECT * FROM t FOR SHARE",
        "SELECT * FROM t FOR SHARE SKIP LOCKED",
        "SELECT * FROM t LOCK IN SHARE MODE",
        "SELECT * FROM t LOCK  IN\nSHARE /* x */ MODE",
        "SELECT * FROM t LIMIT 1 FOR UPDATE",
        "(SELECT * FROM t FOR UPDATE)",
        "SELECT * FROM t WHERE id IN (SELECT id FROM u FOR UPDATE)",
    ] {
        read_forced(s, R::LockingRead);
    }
    for s in [
        "SELECT 'FOR UPDATE'",
        "SELECT for_update FROM t",
        "SELECT `for` FROM `update`",
        "SELECT * FROM t WHERE `lock` IN ('share', 'mode')",
        "SELECT 'LOCK IN SHARE MODE'",
        "SELECT * FROM t FORCE INDEX FOR JOIN (i)",
    ] {
        plain_read(s);
    }
    assert_eq!(tables("SELECT * FROM t FOR UPDATE"), tt(&["t"]));
    assert!(!c("SELECT * FROM t FOR UPDATE").locks_tables);
}

#[test]
fn multi_statements() {
    for s in [
        "SELECT 1; SELECT 2",
        "SELECT 1;SELECT 2;",
        "SELECT 1; DELETE FROM t",
        "SELECT 1; /* c */ SELECT 2",
        "BEGIN; SELECT 1",
        "; SELECT 1",
        "USE db; SELECT 1",
        "SELECT 1;\n-- c\nx",
    ] {
        let r = c(s);
        assert_eq!(r.kind, Kind::Write, "{s}");
        assert_eq!(r.force_master, Some(R::MultiStatement), "{s}");
        assert!(r.multi_statement, "{s}");
        assert_eq!(r.tables, None, "{s}");
    }
    for s in ["SELECT 1;", "SELECT 1 ; ", "SELECT 1; -- x", "SELECT ';'"] {
        assert!(!c(s).multi_statement, "{s}");
    }
    // Effects of every statement are collected.
    let r = c("SET @a = 1; SELECT @a");
    assert!(r.sets_user_variable && r.reads_user_variable);
    assert!(c("SELECT 1; CREATE TEMPORARY TABLE t (a int)").creates_temp_table);
    assert!(c("SELECT 1; LOCK TABLES t READ").locks_tables);
    assert!(c("SELECT 1; SELECT GET_LOCK('a', 1)").takes_named_lock);
    assert_eq!(c("SET autocommit=0; SELECT 1").autocommit, Some(false));
    assert_eq!(c("SET autocommit=0; SET autocommit=1").autocommit, Some(true));
}

#[test]
fn split() {
    let v: Vec<&[u8]> =
        split_statements(b"SELECT 1; SELECT ';' ;; -- x;\n INSERT INTO t VALUES (';')").collect();
    assert_eq!(
        v,
        vec![
            &b"SELECT 1"[..],
            b" SELECT ';' ",
            b" -- x;\n INSERT INTO t VALUES (';')"
        ]
    );
    assert_eq!(split_statements(b"").count(), 0);
    assert_eq!(split_statements(b" ; ;/* x */").count(), 0);
    assert_eq!(
        split_statements(b"SELECT 1;").collect::<Vec<_>>(),
        vec![&b"SELECT 1"[..]]
    );
    assert_eq!(
        split_statements(b"SELECT 1; SELECT 'x").collect::<Vec<_>>(),
        vec![&b"SELECT 1"[..], b" SELECT 'x"]
    );
    let kinds: Vec<Kind> = split_statements(b"BEGIN; USE `d`; SELECT 1; COMMIT")
        .map(|s| classify(s).kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            Kind::Begin { read_only: false },
            Kind::Use("d".into()),
            Kind::Read,
            Kind::Commit
        ]
    );
}

#[test]
fn select_into() {
    let r = c("SELECT a INTO @x FROM t");
    assert_eq!(r.force_master, Some(R::SelectInto));
    assert!(r.sets_user_variable);
    assert!(!r.reads_user_variable);
    let r = c("SELECT a, b FROM t INTO @x, @y");
    assert_eq!(r.force_master, Some(R::SelectInto));
    assert!(r.sets_user_variable && !r.reads_user_variable);
    let r = c("SELECT * FROM t INTO OUTFILE '/tmp/x'");
    assert_eq!(r.force_master, Some(R::SelectInto));
    assert!(!r.sets_user_variable);
    read_forced("SELECT * INTO DUMPFILE '/tmp/x' FROM t", R::SelectInto);
    read_forced("SELECT a INTO v FROM t", R::SelectInto);
    read_forced("(SELECT a FROM t INTO @v)", R::SelectInto);
    // INTO of a write, words in strings and identifiers.
    let r = c("INSERT INTO t VALUES (1)");
    assert!(!r.sets_user_variable);
    plain_read("SELECT `into` FROM t");
    plain_read("SELECT 'INTO @x'");
    let r = c("SELECT @x, a INTO @y FROM t");
    assert!(r.reads_user_variable && r.sets_user_variable);
}

#[test]
fn master_functions() {
    let cases = [
        ("SELECT GET_LOCK('a', 10)", R::LockFunction),
        ("SELECT GET_LOCK ('a', 10)", R::LockFunction),
        ("SELECT RELEASE_LOCK('a')", R::LockFunction),
        ("SELECT IS_FREE_LOCK('a')", R::LockFunction),
        ("SELECT IS_USED_LOCK('a')", R::LockFunction),
        ("SELECT RELEASE_ALL_LOCKS()", R::LockFunction),
        ("SELECT LAST_INSERT_ID()", R::LastInsertId),
        ("SELECT last_insert_id ( )", R::LastInsertId),
        ("SELECT @@last_insert_id", R::LastInsertId),
        ("SELECT @@IDENTITY", R::LastInsertId),
        ("SELECT @@session.insert_id", R::LastInsertId),
        ("SELECT FOUND_ROWS()", R::FoundRows),
        ("SELECT ROW_COUNT()", R::FoundRows),
        ("SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", R::FoundRows),
        ("SELECT NEXTVAL(s)", R::Sequence),
        ("SELECT LASTVAL(s)", R::Sequence),
        ("SELECT SETVAL(s, 10)", R::Sequence),
        ("SELECT NEXT VALUE FOR s", R::Sequence),
        ("SELECT next value for db.s", R::Sequence),
        ("SELECT PREVIOUS VALUE FOR s", R::Sequence),
        ("SELECT MASTER_POS_WAIT('log', 4)", R::SideEffect),
        ("SELECT MASTER_GTID_WAIT('0-1-1', 1)", R::SideEffect),
        ("SELECT SOURCE_POS_WAIT('log', 4)", R::SideEffect),
        ("SELECT WAIT_FOR_EXECUTED_GTID_SET('x')", R::SideEffect),
        ("SELECT @@warning_count", R::SideEffect),
        ("SELECT @@last_gtid", R::SideEffect),
        ("SELECT @a := 1", R::UserVariable),
        ("SELECT @a:=a FROM t", R::UserVariable),
        ("SELECT * FROM t WHERE (@n := @n + 1) > 0", R::UserVariable),
    ];
    for (s, why) in cases {
        read_forced(s, why);
    }
    assert!(c("SELECT GET_LOCK('a', 1)").takes_named_lock);
    assert!(!c("SELECT RELEASE_LOCK('a')").takes_named_lock);
    assert!(c("SELECT @a := 1").sets_user_variable);
    // The first reason found wins.
    assert_eq!(fm("SELECT LAST_INSERT_ID(), FOUND_ROWS()"), Some(R::LastInsertId));
    // Only calls count.
    for s in [
        "SELECT get_lock FROM t",
        "SELECT last_insert_id, found_rows FROM t",
        "SELECT * FROM nextval",
        "SELECT t.row_count FROM t",
        "SELECT next_value FROM t",
        "SELECT 1 FROM t ORDER BY a OFFSET 1 ROWS FETCH NEXT 2 ROWS ONLY",
        "SELECT @@sql_mode, @@session.time_zone",
    ] {
        plain_read(s);
    }
    // Effects of writes are reported too.
    let r = c("DO GET_LOCK('x', 1)");
    assert_eq!(r.kind, Kind::Write);
    assert!(r.takes_named_lock);
    assert!(c("DO @a := 1").sets_user_variable);
    assert!(c("INSERT INTO t VALUES (GET_LOCK('x', 1))").takes_named_lock);
}

#[test]
fn user_variables() {
    let r = c("SELECT @a");
    assert_eq!(r.kind, Kind::Read);
    assert_eq!(r.force_master, None);
    assert!(r.reads_user_variable && !r.sets_user_variable);
    assert!(c("SELECT * FROM t WHERE id = @id").reads_user_variable);
    assert!(c("SELECT @`a b`, @'c', @\"d\"").reads_user_variable);
    assert!(!c("SELECT @@sql_mode").reads_user_variable);
    assert!(!c("SELECT 'a@b'").reads_user_variable);
    assert!(!c("CREATE USER 'u'@'localhost'").reads_user_variable);
    assert!(!c("GRANT ALL ON *.* TO u@localhost").reads_user_variable);
    assert!(!c("SET PASSWORD FOR 'u'@'%' = 'x'").reads_user_variable);
}
