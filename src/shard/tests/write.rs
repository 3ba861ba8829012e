//! INSERT / REPLACE / UPDATE / DELETE.

use super::*;

fn users() -> ShardRules {
    let mut r = ShardRule::new("test", "users", "name", 4, ShardFn::Hash);
    r.placement = vec![0, 0, 1, 1];
    ShardRules::new(vec![r]).unwrap()
}

#[test]
fn multi_row_insert_is_split_by_shard_in_order() {
    let (parts, ddl) = write(
        "INSERT INTO post_reply (id, tid, subject) VALUES (1, 4, 'a'), (2, 5, 'b'), (3, 8, 'c'), (4, 6, 'd'), (5, 12, 'e')",
    );
    assert!(!ddl);
    assert_eq!(
        parts,
        vec![
            (
                0,
                "INSERT INTO post_reply_0 (id, tid, subject) VALUES (1, 4, 'a'), (3, 8, 'c'), (5, 12, 'e')"
                    .to_string()
            ),
            (
                1,
                "INSERT INTO post_reply_1 (id, tid, subject) VALUES (2, 5, 'b')".to_string()
            ),
            (
                2,
                "INSERT INTO post_reply_2 (id, tid, subject) VALUES (4, 6, 'd')".to_string()
            ),
        ]
    );
}

#[test]
fn insert_forms() {
    let one = |sql: &str| {
        let (mut parts, _) = write(sql);
        assert_eq!(parts.len(), 1, "{sql}");
        parts.remove(0)
    };
    assert_eq!(
        one("INSERT INTO test.post_reply (tid, id) VALUES ('7', 1)"),
        (
            3,
            "INSERT INTO test.post_reply_3 (tid, id) VALUES ('7', 1)".to_string()
        )
    );
    assert_eq!(
        one("INSERT INTO post_reply SET id = 1, tid = 6"),
        (2, "INSERT INTO post_reply_2 SET id = 1, tid = 6".to_string())
    );
    assert_eq!(
        one("REPLACE INTO post_reply (id, tid) VALUES (1, -1)"),
        (
            3,
            "REPLACE INTO post_reply_3 (id, tid) VALUES (1, -1)".to_string()
        )
    );
    assert_eq!(
        one("INSERT IGNORE INTO post_reply (id, TID) VALUES (1, 8.0)").0,
        0
    );
    assert_eq!(
        one("INSERT INTO post_reply (id, tid, n) VALUES (1, 2, 1) ON DUPLICATE KEY UPDATE n = n + VALUES(n), post_reply.m = 1"),
        (
            2,
            "INSERT INTO post_reply_2 (id, tid, n) VALUES (1, 2, 1) ON DUPLICATE KEY UPDATE n = n + VALUES(n), post_reply_2.m = 1"
                .to_string()
        )
    );
    assert_eq!(
        one("INSERT INTO post_reply (post_reply.id, post_reply.tid) VALUES (1, 2)"),
        (
            2,
            "INSERT INTO post_reply_2 (post_reply_2.id, post_reply_2.tid) VALUES (1, 2)".to_string()
        )
    );
    // Expressions in other columns are fine; only the key must be a literal.
    assert_eq!(
        one("INSERT INTO post_reply (id, tid, create_time) VALUES (1, 2, NOW())").0,
        2
    );
}

#[test]
fn string_keys_with_a_hash_rule() {
    let rules = users();
    let p = plan(
        "INSERT INTO users (name, age) VALUES ('alice', 1), ('BOB', 2), ('Alice  ', 3), ('中文', 4), ('dave', 5)",
        Some("test"),
        &rules,
    )
    .unwrap()
    .unwrap();
    // alice → 3, bob → 2, dave → 0, 中文 → 3 (see the rules tests); 'Alice  ' = 'alice'.
    assert_eq!(
        sqls(&p),
        vec![
            (
                0,
                "INSERT INTO users_0 (name, age) VALUES ('dave', 5)".to_string()
            ),
            (2, "INSERT INTO users_2 (name, age) VALUES ('BOB', 2)".to_string()),
            (
                3,
                "INSERT INTO users_3 (name, age) VALUES ('alice', 1), ('Alice  ', 3), ('中文', 4)"
                    .to_string()
            ),
        ]
    );
    assert_eq!(
        p.parts().iter().map(|x| x.group).collect::<Vec<_>>(),
        vec![0, 1, 1]
    );
    // Lookups of collation-equal strings go to the row's shard.
    for w in [
        "name = 'ALICE'",
        "name = 'alice '",
        "name IN ('Alice', 'aLiCe')",
        "name = \"alice\"",
    ] {
        let p = plan(&format!("SELECT * FROM users WHERE {w}"), Some("test"), &rules)
            .unwrap()
            .unwrap();
        assert_eq!(
            p.parts().iter().map(|x| x.shard).collect::<Vec<_>>(),
            vec![3],
            "{w}"
        );
    }
    // Escapes are resolved before hashing: 'O\'Brien' and 'O''Brien' are one value.
    let shard = |sql: &str| plan(sql, Some("test"), &rules).unwrap().unwrap().parts()[0].shard;
    assert_eq!(
        shard("SELECT * FROM users WHERE name = 'O\\'Brien'"),
        shard("INSERT INTO users (name) VALUES ('o''brien')")
    );
    // Unknown equivalents: every shard for a read, refused for a write.
    let p = plan("SELECT * FROM users WHERE name = 'café'", Some("test"), &rules)
        .unwrap()
        .unwrap();
    assert_eq!(p.parts().len(), 4);
    let e = plan("INSERT INTO users (name) VALUES ('café')", Some("test"), &rules).unwrap_err();
    assert!(
        e.0.contains("characters whose case-insensitive equals sluice does not know"),
        "{e}"
    );
}

#[test]
fn update_routed_and_broadcast() {
    let (parts, _) = write("UPDATE post_reply SET subject = 'x' WHERE tid IN (1, 2, 5) AND id > 3");
    assert_eq!(
        parts,
        vec![
            (
                1,
                "UPDATE post_reply_1 SET subject = 'x' WHERE tid IN (1, 5) AND id > 3".to_string()
            ),
            (
                2,
                "UPDATE post_reply_2 SET subject = 'x' WHERE tid IN (2) AND id > 3".to_string()
            ),
        ]
    );
    let (parts, _) =
        write("UPDATE post_reply SET post_reply.n = test.post_reply.n + 1 WHERE post_reply.user_id = 3");
    assert_eq!(parts.len(), 4);
    assert_eq!(
        parts[1].1,
        "UPDATE post_reply_1 SET post_reply_1.n = test.post_reply_1.n + 1 WHERE post_reply_1.user_id = 3"
    );
    let (parts, _) = write("UPDATE post_reply AS p SET p.n = 1 WHERE p.tid = 4");
    assert_eq!(
        parts,
        vec![(
            0,
            "UPDATE post_reply_0 AS p SET p.n = 1 WHERE p.tid = 4".to_string()
        )]
    );
    // ORDER BY / LIMIT are fine on one shard.
    let (parts, _) = write("UPDATE post_reply SET n = 1 WHERE tid = 3 ORDER BY id LIMIT 1");
    assert_eq!(
        parts,
        vec![(
            3,
            "UPDATE post_reply_3 SET n = 1 WHERE tid = 3 ORDER BY id LIMIT 1".to_string()
        )]
    );
    // Assigning the key its own value elsewhere than SET is fine: only SET tid is refused.
    assert_eq!(write("UPDATE post_reply SET n = tid WHERE tid = 1").0.len(), 1);
}

#[test]
fn delete_routed_and_broadcast() {
    let (parts, _) = write("DELETE FROM post_reply WHERE post_reply.tid = 3 AND test.post_reply.id = 2");
    assert_eq!(
        parts,
        vec![(
            3,
            "DELETE FROM post_reply_3 WHERE post_reply_3.tid = 3 AND test.post_reply_3.id = 2".to_string()
        )]
    );
    let (parts, _) = write("DELETE FROM test.post_reply WHERE user_id = 9");
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[2].1, "DELETE FROM test.post_reply_2 WHERE user_id = 9");
    let (parts, _) = write("DELETE FROM post_reply");
    assert_eq!(parts.len(), 4);
    let (parts, _) = write("DELETE FROM post_reply WHERE tid = 1 LIMIT 10");
    assert_eq!(
        parts,
        vec![(1, "DELETE FROM post_reply_1 WHERE tid = 1 LIMIT 10".to_string())]
    );
}

/// INSERT without a column list: the learned column order is written out in each part
/// (so a part can never read the key from another place than the planner did); without
/// it, refused; a row of the wrong length goes whole to one sub-table, whose server
/// answers 1136 before writing anything.
#[test]
fn insert_without_column_list_uses_the_learned_order() {
    let r = rules();
    assert_eq!(
        columns_needed("INSERT INTO post_reply VALUES (1, 2)", Some("test"), &r),
        Some(NeedColumns {
            db: "test".into(),
            table: "post_reply".into(),
            group: 0,
            sub_table: "post_reply_0".into(),
        })
    );
    assert_eq!(
        columns_needed("INSERT INTO post_reply (id, tid) VALUES (1, 2)", Some("test"), &r),
        None
    );
    assert_eq!(
        columns_needed("INSERT INTO post_reply SET id = 1", Some("test"), &r),
        None
    );
    assert_eq!(
        columns_needed("INSERT INTO other VALUES (1, 2)", Some("test"), &r),
        None
    );
    r.learn_columns(
        "test",
        "post_reply",
        vec!["id".into(), "tid".into(), "we`ird".into()],
    );
    assert_eq!(
        columns_needed("INSERT INTO post_reply VALUES (1, 2)", Some("test"), &r),
        None
    );
    let parts = |sql: &str| -> Vec<(u32, String)> {
        match plan(sql, Some("test"), &r) {
            Ok(Some(p)) => sqls(&p),
            other => panic!("{sql}: {other:?}"),
        }
    };
    assert_eq!(
        parts("INSERT INTO post_reply VALUES (1, 5, 'a'), (2, 8, 'b')"),
        vec![
            (
                0,
                "INSERT INTO post_reply_0 (`id`, `tid`, `we``ird`) VALUES (2, 8, 'b')".to_string()
            ),
            (
                1,
                "INSERT INTO post_reply_1 (`id`, `tid`, `we``ird`) VALUES (1, 5, 'a')".to_string()
            ),
        ]
    );
    assert_eq!(
        parts("REPLACE post_reply VALUES (1, 6, 'a')"),
        vec![(
            2,
            "REPLACE post_reply_2 (`id`, `tid`, `we``ird`) VALUES (1, 6, 'a')".to_string()
        )]
    );
    // Row 2 is short: the whole statement to sub-table 0 (the server names the row).
    assert_eq!(
        parts("INSERT INTO post_reply VALUES (1, 5, 'a'), (2, 6)"),
        vec![(
            0,
            "INSERT INTO post_reply_0 (`id`, `tid`, `we``ird`) VALUES (1, 5, 'a'), (2, 6)".to_string()
        )]
    );
    assert_eq!(
        parts("INSERT INTO post_reply (id, tid) VALUES (1, 5), (2, 6, 7)"),
        vec![(
            0,
            "INSERT INTO post_reply_0 (id, tid) VALUES (1, 5), (2, 6, 7)".to_string()
        )]
    );
    // A row of defaults gives no key.
    assert!(plan("INSERT INTO post_reply VALUES ()", Some("test"), &r).is_err());
    // After DDL the order is read again.
    r.forget_columns();
    assert!(columns_needed("INSERT INTO post_reply VALUES (1, 2)", Some("test"), &r).is_some());
    assert!(plan("INSERT INTO post_reply VALUES (1, 2)", Some("test"), &r).is_err());
}
