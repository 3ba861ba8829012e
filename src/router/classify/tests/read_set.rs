//! The read sets and write marks that issue 11 found missing: versioned
//! comments, quoting under each sql_mode, stored functions, `SET STATEMENT`,
//! diagnostics reads with tables, and which writes touch unknown tables.

use super::*;

fn tt(names: &[&str]) -> Option<Vec<String>> {
    Some(names.iter().map(|s| s.to_string()).collect())
}

fn at(v: u32) -> LexOptions {
    LexOptions {
        server_version: v,
        ..LexOptions::default()
    }
}

#[test]
fn versioned_comments_hide_nothing() {
    let s = b"SELECT * FROM a /*!999999 WHERE */ , b";
    assert_eq!(classify(s).tables, tt(&["a", "b"]));
    assert_eq!(classify_with(s, at(101106)).tables, tt(&["a", "b"]));
    // MySQL-only range: skipped by MariaDB whatever its version.
    let s = b"SELECT * FROM a /*!80000 WHERE */ , b";
    assert_eq!(classify(s).tables, tt(&["a", "b"]));
    // Run by MariaDB: code.
    let s = b"SELECT * FROM a /*!100100 , b */ , c";
    assert_eq!(classify(s).tables, tt(&["a", "b", "c"]));
    let s = b"SELECT * FROM a /*M!80000 , b */";
    assert_eq!(classify(s).tables, tt(&["a", "b"]));
    // Exactly at the boundary of a known server.
    let s = b"SELECT * FROM a /*!101106 WHERE */ , b";
    assert_eq!(classify_with(s, at(101106)).tables, tt(&["a"]));
    assert_eq!(classify_with(s, at(101105)).tables, tt(&["a", "b"]));
    // Unknown 10.11 patch level: both readings; they differ, so the master.
    let c = classify(s);
    assert_eq!(c.kind, Kind::Write);
    assert!(!c.replica_eligible());
    // A skipped comment hides a write keyword too: still a read.
    let c = classify(b"SELECT 1 /*!999999 ; DELETE FROM t */");
    assert_eq!(c.kind, Kind::Read);
    // And a run one shows it.
    let c = classify(b"SELECT 1 /*!100000 ; DELETE FROM t */");
    assert!(c.multi_statement);
}

#[test]
fn quoting_under_each_sql_mode() {
    let nbe = LexOptions {
        no_backslash_escapes: true,
        ..LexOptions::default()
    };
    let ansi = LexOptions {
        ansi_quotes: true,
        ..LexOptions::default()
    };
    // 'C:\' ends at the second quote only without NO_BACKSLASH_ESCAPES.
    let s = b"SELECT * FROM t WHERE a = 'C:\\' AND b IN (SELECT x FROM u) -- '";
    assert_eq!(classify(s).tables, tt(&["t"]));
    assert_eq!(classify_with(s, nbe).tables, tt(&["t", "u"]));
    let any = classify_any_mode(s);
    assert!(!any.replica_eligible(), "{any:?}");
    // "a\" is an identifier without escapes under ANSI_QUOTES.
    let s = b"SELECT * FROM t WHERE a = \"a\\\" AND b IN (SELECT x FROM u) -- \"";
    assert_eq!(classify(s).tables, tt(&["t"]));
    assert_eq!(classify_with(s, ansi).tables, tt(&["t", "u"]));
    assert_eq!(classify_with(s, nbe).tables, tt(&["t", "u"]));
    let any = classify_any_mode(s);
    assert!(!any.replica_eligible(), "{any:?}");
    // Under ANSI_QUOTES a double-quoted table is a table.
    let s = b"SELECT * FROM t JOIN \"u\" ON 1";
    assert_eq!(classify_with(s, ansi).tables, tt(&["t", "u"]));
    assert_eq!(classify(s).tables, None);
    // Unambiguous backslashes keep one reading.
    let s = b"SELECT * FROM t WHERE a = 'x\\\\y'";
    assert_eq!(classify_any_mode(s).tables, tt(&["t"]));
}

#[test]
fn stored_functions_are_master_only() {
    let sf = Some(RouteReason::StoredFunction);
    for s in [
        &b"SELECT f()"[..],
        b"SELECT db.f()",
        b"SELECT db.f(), x FROM t",
        b"SELECT `db`.`f`(1) FROM t",
        b"SELECT x FROM t WHERE y = f(x)",
        b"SELECT x FROM t ORDER BY my_rank(x)",
        b"SELECT x FROM t GROUP BY x HAVING g (x) > 1",
        b"SELECT x FROM (SELECT f(1) AS x) d",
        b"SELECT `my_f`('a')",
        b"SELECT against(1)",
        b"SELECT point(1)",
        b"SELECT vec_distance(1, 2)",
        b"SELECT * FROM t WHERE a IN (SELECT f(b) FROM u)",
    ] {
        let c = classify(s);
        assert_eq!(c.kind, Kind::Read, "{}", String::from_utf8_lossy(s));
        assert_eq!(c.force_master, sf, "{}", String::from_utf8_lossy(s));
        assert!(!c.replica_eligible());
    }
    for s in [
        &b"SELECT COUNT(*), CONCAT(a, 'x'), CAST(a AS DECIMAL(10,2)) FROM t"[..],
        b"SELECT * FROM t WHERE a IN (1, 2) AND EXISTS (SELECT 1 FROM u)",
        b"SELECT * FROM t WHERE MATCH (a) AGAINST ('x' IN BOOLEAN MODE)",
        b"SELECT * FROM t WHERE a LIKE 'x!%' ESCAPE ('!')",
        b"SELECT SUM(a) OVER (PARTITION BY b ORDER BY c) FROM t",
        b"SELECT JSON_EXTRACT(j, '$.a'), ST_X(ST_POINTFROMTEXT('POINT(1 2)')), IF(a, 1, 2) FROM t",
        b"SELECT CONVERT(a, CHAR(10)), CONVERT(a USING utf8mb4) FROM t",
        b"SELECT * FROM t USE INDEX (i) WHERE (a, b) = (1, 2)",
        b"SELECT a FROM t UNION (SELECT b FROM u)",
        b"SELECT TRIM(BOTH 'x' FROM a), EXTRACT(YEAR FROM (d)) FROM t",
        b"SELECT ROW_NUMBER() OVER (), LAG(a) OVER w FROM t WINDOW w AS (ORDER BY a)",
        b"SELECT NOW(6), CURRENT_TIMESTAMP(), DATE(d), MOD(a, 2) FROM t",
        // A quoted built-in name calls the built-in (checked on 10.11).
        b"SELECT `concat`('a')",
        // CTE column lists are no calls.
        b"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3), s(m) AS (SELECT 1) SELECT * FROM r, s",
    ] {
        let c = classify(s);
        assert!(c.replica_eligible(), "{} {c:?}", String::from_utf8_lossy(s));
    }
    // After the main SELECT of a WITH, a word before `(` is a call again.
    let c = classify(b"WITH c(a) AS (SELECT 1) SELECT f(a), g(a) FROM c");
    assert_eq!(c.force_master, sf);
    // Other reasons win (the session looks for FOUND_ROWS by name).
    let c = classify(b"SELECT f(), FOUND_ROWS()");
    assert_eq!(c.force_master, Some(RouteReason::FoundRows));
    assert_eq!(
        classify(b"/*master*/ SELECT f()").force_master,
        Some(RouteReason::Hint)
    );
    // Writes go to the master anyway; the reason is informative.
    assert_eq!(classify(b"INSERT INTO t (a) VALUES (f(1))").kind, Kind::Write);
}

#[test]
fn set_statement_is_its_statement() {
    let c = classify(b"SET STATEMENT max_statement_time=1 FOR SELECT * FROM t JOIN u");
    assert_eq!(c.kind, Kind::Read);
    assert_eq!(c.tables, tt(&["t", "u"]));
    assert!(c.replica_eligible());
    let s = b"SET STATEMENT sql_mode='', foreign_key_checks=0 FOR INSERT INTO t VALUES (1)";
    let c = classify(s);
    assert_eq!(c.kind, Kind::Write);
    assert!(!writes_unknown_tables(&c, s));
    let s = b"SET STATEMENT lock_wait_timeout=(SELECT 1) FOR TRUNCATE t";
    let c = classify(s);
    assert_eq!(c.kind, Kind::Write);
    assert!(writes_unknown_tables(&c, s));
    let s = b"set statement x=1 for alter table t add c int";
    assert!(writes_unknown_tables(&classify(s), s));
    assert_eq!(
        classify(b"/*master*/ SET STATEMENT x=1 FOR SELECT 1").force_master,
        Some(RouteReason::Hint)
    );
    assert_eq!(
        classify(b"SET STATEMENT x=1 FOR SELECT f() FROM t").force_master,
        Some(RouteReason::StoredFunction)
    );
    let c = classify(b"SET STATEMENT x=1 FOR SELECT 1; DELETE FROM t");
    assert!(c.multi_statement);
    // No FOR: a master-only SET, as before.
    assert_eq!(
        classify(b"SET STATEMENT x=1").kind,
        Kind::SessionSet(SetScope::MasterOnly)
    );
    // A FOR the prefix cannot place surely: a write.
    let c = classify(b"SET STATEMENT x=1 /*! FOR SELECT 1 */");
    assert_eq!(c.kind, Kind::Write);
}

#[test]
fn diagnostics_reads_with_tables() {
    let c = classify(b"SELECT @@warning_count, a FROM t");
    assert!(c.refers_to_previous && c.previous_reads_tables);
    assert_eq!(c.tables, tt(&["t"]));
    let c = classify(b"SELECT @@warning_count, (SELECT a FROM t LIMIT 1)");
    assert!(c.previous_reads_tables);
    let c = classify(b"SELECT @@warning_count");
    assert!(c.refers_to_previous && !c.previous_reads_tables);
    let c = classify(b"SHOW WARNINGS");
    assert!(c.refers_to_previous && !c.previous_reads_tables);
    let c = classify(b"SELECT a FROM t");
    assert!(!c.previous_reads_tables);
}

#[test]
fn which_writes_touch_unknown_tables() {
    let w = |s: &[u8]| writes_unknown_tables(&classify(s), s);
    for s in [
        &b"TRUNCATE t"[..],
        b"ALTER TABLE t ADD c INT",
        b"CREATE TABLE x (a INT)",
        b"DROP TABLE t",
        b"RENAME TABLE a TO b",
        b"CALL p()",
        b"EXECUTE IMMEDIATE 'TRUNCATE t'",
        b"EXECUTE s",
        b"BEGIN NOT ATOMIC TRUNCATE t; END",
        b"INSERT INTO t VALUES (1); TRUNCATE u",
        b"REPAIR TABLE t",
        b"frobnicate",
        b"/*!100000 TRUNCATE t */",
        // No trigger fires for the purged history (issue 40).
        b"DELETE HISTORY FROM t",
        b"delete /* x */ history from t before system_time now()",
        b"DELETE /*!100300 HISTORY */ FROM t",
        b"SET STATEMENT max_statement_time=1 FOR DELETE HISTORY FROM t",
    ] {
        assert!(w(s), "{}", String::from_utf8_lossy(s));
    }
    for s in [
        &b"INSERT INTO t VALUES (1)"[..],
        b"update t set a = 1",
        b"DELETE FROM t",
        b"DELETE LOW_PRIORITY QUICK IGNORE FROM t",
        b"DELETE t FROM t JOIN u USING (id)",
        b"REPLACE INTO t VALUES (1)",
        b"LOAD DATA INFILE 'x' INTO TABLE t",
        b"DO f()",
        b"SELECT 1",
        b"SET @a = 1",
        b"COMMIT",
        b"COMMIT AND CHAIN",
        b"BEGIN",
        b"PREPARE s FROM 'TRUNCATE t'",
        b"DEALLOCATE PREPARE s",
        b"SAVEPOINT a",
        b"ROLLBACK TO SAVEPOINT a",
        b"",
    ] {
        assert!(!w(s), "{}", String::from_utf8_lossy(s));
    }
}
