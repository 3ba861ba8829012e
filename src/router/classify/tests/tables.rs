//! Table lists, quoting, bad bytes and long input.

use super::*;
use RouteReason as R;

#[test]
fn tables_simple() {
    let cases: &[(&str, &[&str])] = &[
        ("SELECT 1", &[]),
        ("SELECT 1 FROM DUAL", &[]),
        ("SELECT NOW()", &[]),
        ("VALUES (1), (2)", &[]),
        ("SELECT c FROM sbtest1 WHERE id = 42", &["sbtest1"]),
        ("SELECT * FROM db.t", &["db.t"]),
        ("SELECT * FROM `db`.`t`", &["db.t"]),
        ("SELECT * FROM db . t", &["db.t"]),
        ("SELECT * FROM MyTable", &["MyTable"]),
        ("SELECT * FROM données", &["données"]),
        ("SELECT * FROM t1 AS a", &["t1"]),
        ("SELECT * FROM t1 a WHERE a.x = 1", &["t1"]),
        ("SELECT * FROM status s, user u, log", &["status", "user", "log"]),
        ("SELECT * FROM a, b, c", &["a", "b", "c"]),
        ("SELECT * FROM a,b", &["a", "b"]),
        ("SELECT * FROM t a JOIN t b ON a.id = b.id", &["t"]),
        ("TABLE t", &["t"]),
        ("TABLE db.t ORDER BY a LIMIT 1", &["db.t"]),
        ("SELECT COUNT(*) FROM t", &["t"]),
        ("SELECT CAST(a AS CHAR) FROM t", &["t"]),
        ("SELECT * FROM t WHERE a = 'FROM x'", &["t"]),
        ("SELECT * FROM t WHERE a = \"JOIN x\"", &["t"]),
        (
            "SELECT a FROM t GROUP BY a HAVING COUNT(*) > 1 ORDER BY a LIMIT 1",
            &["t"],
        ),
        ("SELECT * FROM t LIMIT 1 FOR UPDATE", &["t"]),
        ("SELECT * FROM t LOCK IN SHARE MODE", &["t"]),
        ("SELECT * FROM t PARTITION (p0, p1) WHERE a = 1", &["t"]),
        ("SELECT * FROM t AS x PARTITION (p0)", &["t"]),
        ("SELECT * FROM t USE INDEX (i1, i2) WHERE a = 1", &["t"]),
        ("SELECT * FROM t FORCE INDEX FOR JOIN (i) JOIN u", &["t", "u"]),
        ("SELECT * FROM t IGNORE KEY FOR ORDER BY (a), u", &["t", "u"]),
        ("SELECT * FROM t a USE INDEX () WHERE 1", &["t"]),
        ("SELECT GROUP_CONCAT(a ORDER BY b SEPARATOR ',') FROM t", &["t"]),
        ("SELECT EXTRACT(YEAR FROM d) FROM t", &["t"]),
        (
            "SELECT TRIM(BOTH 'x' FROM s), SUBSTRING(s FROM 2 FOR 3) FROM t",
            &["t"],
        ),
        ("SELECT * FROM t WINDOW w AS (PARTITION BY a)", &["t"]),
        ("SELECT * FROM t JOIN u ON 1 WINDOW w AS ()", &["t", "u"]),
        ("SELECT * FROM t window, u", &["t", "u"]),
        ("SELECT * FROM t offset, u returning, v minus", &["t", "u", "v"]),
        ("SELECT a FROM t MINUS SELECT a FROM u", &["t", "u"]),
        ("SELECT a FROM t INTO @x", &["t"]),
    ];
    for (s, want) in cases {
        assert_eq!(tables(s), tt(want), "{s}");
    }
}

#[test]
fn tables_joins_and_subqueries() {
    let cases: &[(&str, &[&str])] = &[
        ("SELECT * FROM a JOIN b ON a.id = b.id", &["a", "b"]),
        ("SELECT * FROM a INNER JOIN b USING (id)", &["a", "b"]),
        (
            "SELECT * FROM a LEFT JOIN b ON a.x = b.x RIGHT OUTER JOIN c ON 1",
            &["a", "b", "c"],
        ),
        (
            "SELECT * FROM a NATURAL JOIN b NATURAL LEFT JOIN c",
            &["a", "b", "c"],
        ),
        ("SELECT * FROM a CROSS JOIN b, c", &["a", "b", "c"]),
        ("SELECT * FROM a STRAIGHT_JOIN b ON a.x = b.x", &["a", "b"]),
        ("SELECT STRAIGHT_JOIN x FROM a JOIN b", &["a", "b"]),
        ("SELECT * FROM a JOIN b ON a.x = b.x, c", &["a", "b", "c"]),
        (
            "SELECT * FROM a JOIN b ON LEFT(a.x, 2) = b.x JOIN c",
            &["a", "b", "c"],
        ),
        (
            "SELECT * FROM a JOIN b ON a.x IN (1, 2) JOIN c ON 1",
            &["a", "b", "c"],
        ),
        (
            "SELECT * FROM a JOIN b ON a.x = (SELECT MAX(y) FROM c) WHERE 1",
            &["a", "b", "c"],
        ),
        (
            "SELECT * FROM (a JOIN b ON a.id = b.id) JOIN c ON 1",
            &["a", "b", "c"],
        ),
        ("SELECT * FROM (a, b) JOIN c", &["a", "b", "c"]),
        ("SELECT * FROM a LEFT JOIN (b, c) ON 1", &["a", "b", "c"]),
        ("SELECT * FROM (SELECT * FROM b) AS x", &["b"]),
        (
            "SELECT * FROM (SELECT * FROM b) x JOIN c ON x.id = c.id",
            &["b", "c"],
        ),
        (
            "SELECT * FROM (SELECT a FROM b UNION SELECT a FROM c) d (col)",
            &["b", "c"],
        ),
        ("SELECT * FROM ((SELECT 1) UNION (SELECT a FROM b)) x", &["b"]),
        ("SELECT * FROM (VALUES (1)) v", &[]),
        ("SELECT * FROM t WHERE id IN (SELECT id FROM u)", &["t", "u"]),
        (
            "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)",
            &["t", "u"],
        ),
        ("SELECT * FROM t WHERE a = ANY (TABLE u)", &["t", "u"]),
        ("SELECT (SELECT MAX(a) FROM u), b FROM t", &["u", "t"]),
        ("SELECT (SELECT 1 FROM (SELECT 2 FROM v) x) FROM t", &["v", "t"]),
        ("SELECT a FROM t1 UNION SELECT b FROM t2", &["t1", "t2"]),
        (
            "SELECT a FROM t1 UNION ALL SELECT b FROM t2 ORDER BY 1",
            &["t1", "t2"],
        ),
        ("(SELECT a FROM t1) UNION (SELECT b FROM t2)", &["t1", "t2"]),
        (
            "SELECT a FROM t1 EXCEPT SELECT a FROM t2 INTERSECT TABLE t3",
            &["t1", "t2", "t3"],
        ),
        ("SELECT 1 UNION SELECT a FROM t", &["t"]),
        (
            "SELECT * FROM t WHERE a IN (1, 2, 3) AND b = (1 + (2 * 3))",
            &["t"],
        ),
        (
            "SELECT CASE WHEN a THEN (SELECT 1 FROM u) ELSE 2 END FROM t",
            &["u", "t"],
        ),
    ];
    for (s, want) in cases {
        assert_eq!(tables(s), tt(want), "{s}");
    }
}

#[test]
fn tables_unknown() {
    for s in [
        "SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a INT PATH '$')) j",
        "SELECT * FROM t, JSON_TABLE(t.j, '$' COLUMNS (a INT PATH '$')) j",
        "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a) x",
        "SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2020-01-01'",
        "SELECT * FROM t FOR SYSTEM_TIME FROM '2020-01-01' TO NOW()",
        "WITH a AS (SELECT * FROM t) SELECT * FROM a",
        "SELECT * FROM t WHERE a IN (WITH x AS (SELECT 1) SELECT * FROM x)",
        "SELECT * FROM (SELECT 1",
        "SELECT 1)",
        "SELECT * FROM 'str'",
        "SELECT * FROM",
        "SELECT * FROM db.",
        "SELECT * FROM db.*",
        "SELECT * FROM \u{0}",
        "SELECT 1; SELECT 2",
        "INSERT INTO t SELECT * FROM u",
        "SHOW TABLES",
        "EXPLAIN SELECT * FROM t",
        "DESCRIBE t",
        "HELP 'x'",
        "SELECT 'x",
    ] {
        assert_eq!(tables(s), None, "{s}");
    }
    assert_eq!(tables("SELECT * FROM `a.b`"), None);
    assert_eq!(tables("SELECT * FROM db.`a.b`"), None);
    assert_eq!(classify(b"SELECT * FROM \xff\xfe").tables, None);
    assert_eq!(classify(b"SELECT * FROM `\xff`").tables, None);
    assert_eq!(classify(b"SELECT * FROM db.\xff").tables, None);
}

#[test]
fn ansi_quotes_and_backslashes() {
    let ansi = LexOptions {
        ansi_quotes: true,
        ..LexOptions::default()
    };
    let nbe = LexOptions {
        no_backslash_escapes: true,
        ..LexOptions::default()
    };
    let s = b"SELECT * FROM \"my\"\"t\" WHERE a = 'x'";
    assert_eq!(classify(s).tables, None);
    assert_eq!(classify_with(s, ansi).tables, tt(&["my\"t"]));
    // Where a string ends depends on NO_BACKSLASH_ESCAPES.
    let s = b"SELECT 'a\\' ; DELETE FROM t; -- '";
    assert_eq!(classify(s).kind, Kind::Read);
    let r = classify_with(s, nbe);
    assert_eq!(r.kind, Kind::Write);
    assert!(r.multi_statement);
    // ANSI identifiers have no backslash escapes either.
    let s = b"SELECT \"a\\\" ; DELETE FROM t; -- \"";
    assert_eq!(classify(s).kind, Kind::Read);
    assert_eq!(classify_with(s, ansi).kind, Kind::Write);
}

#[test]
fn invalid_utf8_and_binary() {
    let r = classify(b"SELECT '\xff\xfe' FROM t WHERE a = _binary'\x00\x01' FOR UPDATE");
    assert_eq!(r.kind, Kind::Read);
    assert_eq!(r.force_master, Some(R::LockingRead));
    assert_eq!(r.tables, tt(&["t"]));
    let r = classify(b"SELECT \xc3A FROM t");
    assert_eq!(r.kind, Kind::Read);
    assert_eq!(r.tables, tt(&["t"]));
    assert_eq!(classify(b"\xff\xfe\xfd").kind, Kind::Write);
    assert_eq!(classify(b"\x00SELECT 1").kind, Kind::Write);
    assert_eq!(classify(b"SELECT 1 \x00").kind, Kind::Read);
    assert_eq!(
        classify(b"/*\xff master \xfe*/ SELECT 1").force_master,
        Some(R::Hint)
    );
    assert_eq!(
        classify(b"SET NAMES latin1, @a = '\xe9'").kind,
        Kind::SessionSet(SetScope::UserVariable { also_session: true })
    );
    // Every prefix of a tricky text classifies without panicking.
    let text = "/*!40101 SET @a:=1*/; SELECT `a``b`, 'c\\'d', \"e\"\"f\" FROM t1 JOIN (SELECT * FROM t2) x ON (1) -- z\n# w\n/* v";
    for i in 0..=text.len() {
        let _ = classify(&text.as_bytes()[..i]);
        let _ = split_statements(&text.as_bytes()[..i]).count();
    }
}

#[test]
fn long_input() {
    let mut s = String::from("SELECT * FROM t WHERE id IN (");
    for i in 0..100_000 {
        s.push_str(&format!("{i},"));
    }
    s.push_str("0)");
    let r = c(&s);
    assert_eq!(r.kind, Kind::Read);
    assert_eq!(r.tables, tt(&["t"]));

    // Deep nesting: still a read, tables unknown past the depth limit.
    let deep = format!("{}SELECT * FROM t{}", "(".repeat(10_000), ")".repeat(10_000));
    let r = c(&deep);
    assert_eq!(r.kind, Kind::Read);
    assert_eq!(r.tables, None);
    let deep = format!("SELECT {}1{} FROM t", "(".repeat(20), ")".repeat(20));
    assert_eq!(tables(&deep), tt(&["t"]));

    let big = format!("SELECT '{}' FROM t FOR UPDATE", "x".repeat(1 << 20));
    read_forced(&big, R::LockingRead);
    let big = format!("/* {} */ SELECT 1", "y".repeat(1 << 20));
    plain_read(&big);
    let many = "SELECT 1;".repeat(10_000);
    assert!(c(&many).multi_statement);
}

/// Finds a collision-free HASH_MUL after the keyword list changed.
#[test]
#[ignore]
fn find_keyword_hash() {
    let mut mul: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..1_000_000 {
        mul = mul
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            | 1;
        let mut seen = [false; 1 << SLOT_BITS];
        if KEYS
            .iter()
            .all(|k| !std::mem::replace(&mut seen[slot_with(*k, mul)], true))
        {
            eprintln!("HASH_MUL = {mul:#018x}");
            return;
        }
    }
    panic!("no multiplier found: raise SLOT_BITS");
}

#[test]
fn reason_labels() {
    let all = [
        (R::LockingRead, "locking_read"),
        (R::SelectInto, "select_into"),
        (R::LockFunction, "lock_function"),
        (R::LastInsertId, "last_insert_id"),
        (R::FoundRows, "found_rows"),
        (R::Sequence, "sequence"),
        (R::UserVariable, "user_variable"),
        (R::Hint, "hint"),
        (R::MultiStatement, "multi_statement"),
        (R::SideEffect, "side_effect"),
    ];
    for (r, label) in all {
        assert_eq!(r.as_str(), label);
    }
}
