//! Every refused statement shape, with its sentence.

use super::*;

const T: &str = "sharded table post_reply";

fn check(cases: &[(&str, String)]) {
    for (sql, sentence) in cases {
        assert_eq!(refused(sql), *sentence, "{sql}");
    }
}

#[test]
fn joins_and_subqueries() {
    let outer = format!("sluice: an outer JOIN in which {T} is the optional side is not supported");
    let sub = format!("sluice: a subquery that reads {T} is not supported");
    check(&[
        (
            "SELECT * FROM post_reply a JOIN post_reply b ON a.id = b.id",
            "sluice: a JOIN of two sharded tables is not supported".into(),
        ),
        (
            "SELECT * FROM users u LEFT JOIN post_reply p ON u.id = p.user_id",
            outer.clone(),
        ),
        (
            "SELECT * FROM post_reply p RIGHT JOIN users u ON u.id = p.user_id",
            outer.clone(),
        ),
        (
            "SELECT * FROM post_reply p JOIN users u ON u.id = p.user_id RIGHT JOIN x ON x.a = u.id",
            outer,
        ),
        (
            "SELECT * FROM (SELECT * FROM post_reply) d",
            "sluice: a sharded table inside a subquery (derived table in FROM) is not supported (post_reply)"
                .into(),
        ),
        (
            "SELECT * FROM users u JOIN (post_reply p JOIN x ON x.a = p.id) ON u.id = p.user_id",
            format!("sluice: a parenthesized join involving {T} is not supported"),
        ),
        (
            "SELECT * FROM users WHERE id IN (SELECT user_id FROM post_reply)",
            sub.clone(),
        ),
        ("SELECT (SELECT COUNT(*) FROM post_reply) FROM users", sub.clone()),
        (
            "SELECT * FROM post_reply WHERE EXISTS (SELECT 1 FROM post_reply q WHERE q.id = 1)",
            sub.clone(),
        ),
        (
            "SELECT * FROM post_reply p JOIN users u ON u.id = (SELECT MAX(user_id) FROM post_reply)",
            sub.clone(),
        ),
        (
            "UPDATE users SET n = (SELECT COUNT(*) FROM post_reply)",
            sub.clone(),
        ),
        (
            "DELETE FROM users WHERE id IN (SELECT user_id FROM post_reply)",
            sub.clone(),
        ),
        (
            "UPDATE post_reply SET n = 1 WHERE id IN (SELECT id FROM post_reply WHERE tid = 1)",
            sub.clone(),
        ),
        ("SELECT id FROM post_reply WHERE x IN (SELECT a FROM u WHERE b IN (SELECT tid FROM test.post_reply))", sub.clone()),
        ("SELECT id FROM post_reply WHERE x IN (SELECT a FROM u JOIN (SELECT 1 AS b FROM post_reply) d ON d.b = u.b)", sub.clone()),
        ("SELECT id FROM post_reply WHERE x IN (SELECT a FROM u UNION SELECT tid FROM post_reply)", sub.clone()),
        ("SELECT id FROM post_reply WHERE x IN (WITH c AS (SELECT tid FROM post_reply) SELECT * FROM c)", sub),
        (
            "WITH c AS (SELECT * FROM post_reply) SELECT * FROM c",
            format!("sluice: WITH (a common table expression) involving {T} is not supported"),
        ),
        (
            "SELECT id FROM post_reply INTERSECT SELECT id FROM users",
            "sluice: INTERSECT of queries on a sharded table is not supported (UNION and UNION ALL are)"
                .to_string(),
        ),
        (
            "(SELECT id FROM post_reply) ORDER BY id",
            format!("sluice: this form of query involving {T} is not supported"),
        ),
    ]);
    // A join with other tables needs every sub-table in one group.
    let mut r = ShardRule::new("test", "post_reply", "tid", 4, ShardFn::Mod);
    r.placement = vec![0, 0, 1, 1];
    let rules = ShardRules::new(vec![r]).unwrap();
    let e = plan(
        "SELECT * FROM post_reply p JOIN users u ON u.id = p.user_id",
        Some("test"),
        &rules,
    )
    .unwrap_err();
    assert_eq!(
        e.0,
        format!("sluice: a JOIN with {T} needs all its sub-tables in one backend group")
    );
    let p = plan(
        "SELECT * FROM post_reply WHERE tid IN (1, 2)",
        Some("test"),
        &rules,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        p.parts().iter().map(|x| (x.shard, x.group)).collect::<Vec<_>>(),
        vec![(1, 0), (2, 1)]
    );
}

#[test]
fn select_shapes_that_cannot_merge() {
    let inside = format!(
        "sluice: an aggregate inside an expression (like SUM(x)+1) on {T} is not supported across shards"
    );
    check(&[
        ("SELECT SUM(x) OVER (PARTITION BY user_id) FROM post_reply", format!("sluice: window functions on {T} are not supported across shards")),
        ("SELECT ROW_NUMBER() OVER (ORDER BY id) FROM post_reply", format!("sluice: window functions on {T} are not supported across shards")),
        ("SELECT GROUP_CONCAT(subject) FROM post_reply", format!("sluice: GROUP_CONCAT without its own ORDER BY (the server's order is then unspecified; write GROUP_CONCAT(… ORDER BY …)) on {T} is not supported across shards")),
        ("SELECT user_id, group_concat(id SEPARATOR ',') FROM post_reply GROUP BY user_id", format!("sluice: GROUP_CONCAT without its own ORDER BY (the server's order is then unspecified; write GROUP_CONCAT(… ORDER BY …)) on {T} is not supported across shards")),
        ("SELECT GROUP_CONCAT(id ORDER BY 1) FROM post_reply", format!("sluice: GROUP_CONCAT ORDER BY 1 (order by columns of the table, not positions, aliases or expressions) on {T} is not supported across shards")),
        ("SELECT GROUP_CONCAT(id ORDER BY id + 1) FROM post_reply", format!("sluice: GROUP_CONCAT ORDER BY id + 1 (order by columns of the table, not positions, aliases or expressions) on {T} is not supported across shards")),
        ("SELECT id AS k, GROUP_CONCAT(id ORDER BY k) FROM post_reply GROUP BY id", format!("sluice: GROUP_CONCAT ORDER BY k (order by columns of the table, not positions, aliases or expressions) on {T} is not supported across shards")),
        ("SELECT GROUP_CONCAT(DISTINCT subject ORDER BY id) FROM post_reply", format!("sluice: GROUP_CONCAT DISTINCT other than GROUP_CONCAT(DISTINCT x ORDER BY x) on {T} is not supported across shards")),
        ("SELECT GROUP_CONCAT(id ORDER BY id), GROUP_CONCAT(id ORDER BY id DESC) FROM post_reply", format!("sluice: GROUP_CONCATs with different ORDER BY on {T} are not supported across shards (each needs its own order)")),
        ("SELECT GROUP_CONCAT(id ORDER BY id), COUNT(DISTINCT user_id) FROM post_reply", format!("sluice: GROUP_CONCAT beside COUNT/SUM/AVG(DISTINCT …) on {T} is not supported across shards")),
        ("SELECT COUNT(DISTINCT tid), GROUP_CONCAT(id ORDER BY id) FROM post_reply", format!("sluice: GROUP_CONCAT beside COUNT/SUM/AVG(DISTINCT …) on {T} is not supported across shards")),
        ("SELECT user_id FROM post_reply GROUP BY user_id HAVING GROUP_CONCAT(id ORDER BY id) = '1'", format!("sluice: GROUP_CONCAT in HAVING on {T} must be a selected one")),
        ("SELECT GROUP_CONCAT(id ORDER BY id) + 1 FROM post_reply", inside.clone()),
        ("SELECT 1, GROUP_CONCAT(id ORDER BY id) FROM post_reply", format!("sluice: the expression 1 beside COUNT/SUM/AVG(DISTINCT …) or GROUP_CONCAT without GROUP BY on {T} is not supported across shards (select columns or aggregates)")),
        ("SELECT STDDEV(x) FROM post_reply", format!("sluice: STDDEV on {T} is not supported across shards")),
        ("SELECT SUM(x) + 1 FROM post_reply", inside.clone()),
        ("SELECT COUNT(*) * 2 FROM post_reply", inside.clone()),
        ("SELECT user_id FROM post_reply GROUP BY user_id ORDER BY COUNT(*) + 1", inside.clone()),
        ("SELECT user_id, COUNT(*) FROM post_reply GROUP BY user_id HAVING COUNT(*) + 1 > 2", inside),
        (
            "SELECT COUNT(DISTINCT x), COUNT(DISTINCT y) FROM post_reply HAVING COUNT(DISTINCT z) > 1",
            format!("sluice: COUNT(DISTINCT …) in HAVING must be the selected one ({T})"),
        ),
        ("SELECT user_id FROM post_reply GROUP BY user_id ORDER BY SUM(DISTINCT x)", format!("sluice: SUM/AVG(DISTINCT …) in ORDER BY must be a selected one ({T})")),
        ("SELECT COUNT(DISTINCT a, b) FROM post_reply", format!("sluice: this use of COUNT() on {T} is not supported across shards")),
        (
            "SELECT COUNT(DISTINCT a), COUNT(DISTINCT b), COUNT(DISTINCT a) FROM post_reply",
            format!("sluice: the same COUNT(DISTINCT a) twice on {T} is not supported across shards (select it once)"),
        ),
        (
            "SELECT DISTINCT user_id, COUNT(*) FROM post_reply GROUP BY user_id",
            format!("sluice: DISTINCT together with GROUP BY or aggregates on {T} is not supported across shards"),
        ),
        ("SELECT *, COUNT(*) FROM post_reply", format!("sluice: SELECT * with GROUP BY or aggregates on {T} is not supported")),
        ("SELECT DISTINCT * FROM post_reply", format!("sluice: SELECT DISTINCT * on {T} is not supported (name the columns)")),
        ("SELECT DISTINCT user_id FROM post_reply ORDER BY id", format!("sluice: with DISTINCT, ORDER BY must name selected columns ({T})")),
        ("SELECT * FROM post_reply ORDER BY RAND()", format!("sluice: ORDER BY a random value with SELECT * on {T} is not supported (name the columns)")),
        ("SELECT * FROM post_reply ORDER BY 2", format!("sluice: ORDER BY a position with SELECT * on {T} is not supported")),
        ("SELECT id FROM post_reply ORDER BY 3", format!("sluice: position 3 is not in the select list ({T})")),
        ("SELECT id AS a FROM post_reply ORDER BY a + 1", format!("sluice: ORDER BY an expression using a select alias on {T} is not supported")),
        (
            "SELECT user_id, COUNT(*) FROM post_reply GROUP BY user_id HAVING message LIKE 'a%'",
            format!("sluice: the HAVING condition message LIKE 'a%' on {T} is not supported across shards"),
        ),
        (
            "SELECT user_id, COUNT(*) FROM post_reply GROUP BY user_id HAVING subject = 'a'",
            format!("sluice: HAVING on {T} may only use selected columns, group keys, aggregates and literals"),
        ),
        (
            "SELECT user_id, COUNT(*) FROM post_reply GROUP BY user_id WITH ROLLUP",
            format!("sluice: GROUP BY … WITH ROLLUP on {T} is not supported across shards"),
        ),
        (
            "SELECT user_id, COUNT(*) FROM post_reply GROUP BY user_id HAVING COUNT(*) > 1 || user_id = 2",
            format!("sluice: HAVING with || or XOR on {T} is not supported across shards"),
        ),
        ("SELECT id INTO @a FROM post_reply", format!("sluice: SELECT … INTO on {T} is not supported")),
        ("SELECT id INTO @a FROM post_reply WHERE tid = 1", format!("sluice: SELECT … INTO on {T} is not supported")),
        ("SELECT SQL_CALC_FOUND_ROWS id FROM post_reply LIMIT 1", format!("sluice: SQL_CALC_FOUND_ROWS on {T} is not supported")),
        ("SELECT id FROM post_reply LIMIT ?", format!("sluice: LIMIT with placeholders on {T} is not supported without the parameter values")),
        ("SELECT id FROM post_reply LIMIT 1 + 1", format!("sluice: LIMIT on {T} must be a number")),
        (
            "SELECT id FROM post_reply WHERE tid = ?",
            "sluice: a statement with ? placeholders on a sharded table is planned with its parameter values (prepared statements)".into(),
        ),
    ]);
}

#[test]
fn writes() {
    let key = "sluice: changing the shard key column tid would move the row to another sub-table; delete and insert it instead";
    let literal = format!(
        "sluice: the shard key tid of a row inserted into {T} must be a literal value (not an expression, DEFAULT or a placeholder without its value)"
    );
    check(&[
        (
            "INSERT INTO post_reply VALUES (1, 2)",
            format!(
                "sluice: an INSERT without a column list into {T} needs the table's column order, \
                 which sluice could not read; name the columns"
            ),
        ),
        (
            "INSERT INTO post_reply (id, subject) VALUES (1, 'x')",
            format!("sluice: an INSERT into {T} must give the shard key column tid"),
        ),
        (
            "INSERT INTO post_reply SET id = 1",
            format!("sluice: an INSERT into {T} must set the shard key column tid"),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, NULL)",
            "sluice: the shard key tid must not be NULL".into(),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, 2 + 1)",
            literal.clone(),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, DEFAULT)",
            literal.clone(),
        ),
        ("INSERT INTO post_reply (id, tid) VALUES (1, @t)", literal),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, 2.5)",
            "sluice: the shard key tid value 2.5 is not an integer (the server would round it)".into(),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, 'x')",
            "sluice: the shard key tid value is a string that is not an integer".into(),
        ),
        (
            "INSERT INTO post_reply (id, tid) SELECT id, tid FROM users",
            format!("sluice: INSERT … SELECT into {T} is not supported"),
        ),
        (
            "INSERT INTO users (id) SELECT id FROM post_reply",
            format!("sluice: INSERT … SELECT from {T} is not supported"),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, 2) ON DUPLICATE KEY UPDATE tid = VALUES(tid)",
            key.into(),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, 2) ON DUPLICATE KEY UPDATE post_reply.TID = 3",
            key.into(),
        ),
        (
            "INSERT INTO post_reply (id, tid) VALUES (1, 2) RETURNING id",
            format!("sluice: this INSERT syntax on {T} is not supported"),
        ),
        ("UPDATE post_reply SET tid = 3 WHERE id = 1", key.into()),
        (
            "UPDATE post_reply SET n = 1, post_reply.TID = 3 WHERE tid = 1",
            key.into(),
        ),
        (
            "UPDATE post_reply SET n = 1 ORDER BY id LIMIT 1",
            format!("sluice: UPDATE with ORDER BY or LIMIT on several shards of {T} is not supported"),
        ),
        (
            "UPDATE post_reply p JOIN users u ON u.id = p.user_id SET p.n = 1",
            format!("sluice: a multi-table UPDATE involving {T} is not supported"),
        ),
        (
            "UPDATE users u JOIN post_reply p ON u.id = p.user_id SET u.n = 1",
            format!("sluice: a multi-table UPDATE involving {T} is not supported"),
        ),
        (
            "DELETE FROM post_reply WHERE user_id = 1 LIMIT 1",
            format!("sluice: DELETE with ORDER BY or LIMIT on several shards of {T} is not supported"),
        ),
        (
            "DELETE FROM post_reply WHERE user_id = 1 ORDER BY id",
            format!("sluice: DELETE with ORDER BY or LIMIT on several shards of {T} is not supported"),
        ),
        (
            "DELETE p FROM post_reply p JOIN users u ON u.id = p.user_id",
            format!("sluice: a multi-table DELETE involving {T} is not supported"),
        ),
        (
            "DELETE FROM post_reply WHERE tid = 1 RETURNING id",
            format!("sluice: this DELETE syntax on {T} is not supported"),
        ),
        (
            "UPDATE IGNORE post_reply SET x = 1 WHERE tid = 1",
            format!("sluice: UPDATE LOW_PRIORITY or IGNORE on {T} is not supported"),
        ),
        (
            "UPDATE LOW_PRIORITY post_reply SET x = 1",
            format!("sluice: UPDATE LOW_PRIORITY or IGNORE on {T} is not supported"),
        ),
        (
            "DELETE IGNORE FROM post_reply WHERE tid = 1",
            format!("sluice: DELETE LOW_PRIORITY, QUICK or IGNORE on {T} is not supported"),
        ),
        (
            "DELETE QUICK FROM post_reply",
            format!("sluice: DELETE LOW_PRIORITY, QUICK or IGNORE on {T} is not supported"),
        ),
    ]);
}

#[test]
fn ddl_and_other_statements() {
    check(&[
        (
            "RENAME TABLE post_reply TO x",
            format!("sluice: RENAME TABLE of {T} is not supported"),
        ),
        (
            "RENAME TABLE x TO post_reply",
            format!("sluice: RENAME TABLE of {T} is not supported"),
        ),
        (
            "ALTER TABLE post_reply RENAME TO x",
            format!("sluice: RENAME of {T} is not supported"),
        ),
        (
            "ALTER TABLE x RENAME TO post_reply",
            format!("sluice: renaming a table to {T} is not supported"),
        ),
        (
            "ALTER TABLE post_reply DROP COLUMN tid",
            format!("sluice: dropping or renaming the shard key column tid of {T} is not supported"),
        ),
        (
            "ALTER TABLE post_reply CHANGE tid t2 INT",
            format!("sluice: dropping or renaming the shard key column tid of {T} is not supported"),
        ),
        (
            "ALTER TABLE post_reply RENAME COLUMN tid TO t2",
            format!("sluice: dropping or renaming the shard key column tid of {T} is not supported"),
        ),
        (
            "DROP TABLE post_reply, users",
            format!("sluice: DROP TABLE naming {T} together with other tables is not supported"),
        ),
        (
            "DROP TEMPORARY TABLE post_reply",
            format!("sluice: DROP TEMPORARY TABLE of {T} is not supported"),
        ),
        (
            "CREATE TEMPORARY TABLE post_reply (id INT)",
            format!("sluice: CREATE TEMPORARY TABLE of {T} is not supported"),
        ),
        (
            "CREATE TABLE post_reply AS SELECT 1 AS id",
            format!("sluice: CREATE TABLE … SELECT for {T} is not supported"),
        ),
        (
            "CREATE TABLE copy LIKE post_reply",
            format!("sluice: CREATE TABLE … LIKE {T} is not supported"),
        ),
        (
            "CREATE TABLE copy AS SELECT * FROM post_reply",
            format!("sluice: CREATE TABLE … SELECT from {T} is not supported"),
        ),
        (
            "TRUNCATE TABLE post_reply, users",
            format!("sluice: TRUNCATE naming {T} together with other tables is not supported"),
        ),
        (
            "SHOW CREATE TABLE post_reply",
            format!("sluice: SHOW CREATE TABLE on {T} is not supported"),
        ),
        (
            "DESCRIBE post_reply",
            format!("sluice: DESCRIBE on {T} is not supported"),
        ),
        (
            "CREATE VIEW v AS SELECT * FROM post_reply",
            format!("sluice: CREATE VIEW on {T} is not supported"),
        ),
        (
            "EXPLAIN SELECT * FROM post_reply",
            format!("sluice: EXPLAIN SELECT on {T} is not supported"),
        ),
        (
            "LOCK TABLES post_reply AS p WRITE",
            "sluice: LOCK TABLES with an alias for sharded table post_reply is not supported (its \
             sub-tables cannot share one alias); lock it by its name"
                .to_string(),
        ),
        (
            "SELECT * FROM post_reply; SELECT 1",
            format!("sluice: several statements in one query on {T} are not supported"),
        ),
    ]);
    // What the parser cannot read is refused when it names a sharded table.
    assert!(refused("SELECT * FROM post_reply LOCK IN SHARE MODE")
        .starts_with(&format!("sluice: cannot parse this statement on {T}: ")));
    assert!(refused("SELECT 'unterminated FROM post_reply")
        .starts_with("sluice: cannot read a statement that names a sharded table: "));
}
