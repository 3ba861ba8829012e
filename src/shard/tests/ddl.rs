//! DDL on the logical table: the same statement for each sub-table.

use super::*;

fn ddl(sql: &str) -> Vec<String> {
    let (parts, ddl) = write(sql);
    assert!(ddl, "{sql}");
    assert_eq!(parts.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    parts.into_iter().map(|p| p.1).collect()
}

#[test]
fn create_table_creates_every_sub_table() {
    let sql = "CREATE TABLE `post_reply` (\n  `id` int(11) unsigned NOT NULL COMMENT '回复id',\n  \
               `tid` int(11) unsigned NOT NULL DEFAULT '0' COMMENT '帖子id',\n  UNIQUE KEY `idx_id` (`id`)\n) \
               ENGINE=InnoDB DEFAULT CHARSET=utf8 /* keep me */";
    let parts = ddl(sql);
    for (i, p) in parts.iter().enumerate() {
        assert_eq!(*p, sql.replace("`post_reply`", &format!("`post_reply_{i}`")));
    }
    assert_eq!(
        ddl("CREATE TABLE IF NOT EXISTS test.post_reply LIKE template")[3],
        "CREATE TABLE IF NOT EXISTS test.post_reply_3 LIKE template"
    );
}

#[test]
fn other_ddl() {
    assert_eq!(
        ddl("ALTER TABLE post_reply ADD COLUMN z INT, ALGORITHM=INPLACE")[1],
        "ALTER TABLE post_reply_1 ADD COLUMN z INT, ALGORITHM=INPLACE"
    );
    assert_eq!(
        ddl("ALTER TABLE post_reply CHANGE tid tid BIGINT")[0],
        "ALTER TABLE post_reply_0 CHANGE tid tid BIGINT"
    );
    assert_eq!(
        ddl("DROP TABLE IF EXISTS post_reply")[2],
        "DROP TABLE IF EXISTS post_reply_2"
    );
    assert_eq!(ddl("TRUNCATE TABLE post_reply")[3], "TRUNCATE TABLE post_reply_3");
    assert_eq!(ddl("TRUNCATE post_reply")[3], "TRUNCATE post_reply_3");
    // Rendered from the AST this would read `ON post_reply_0 USING BTREE (tid)`, which
    // MariaDB rejects: the client's text is kept.
    assert_eq!(
        ddl("CREATE UNIQUE INDEX i USING BTREE ON post_reply (tid, id DESC)")[0],
        "CREATE UNIQUE INDEX i USING BTREE ON post_reply_0 (tid, id DESC)"
    );
    assert_eq!(
        ddl("DROP INDEX i ON test.post_reply")[1],
        "DROP INDEX i ON test.post_reply_1"
    );
    assert_eq!(run("DROP TABLE users").unwrap(), None);
    assert_eq!(run("CREATE TABLE post_reply_5 (id INT)").unwrap(), None);
}

#[test]
fn dump_style_ddl_and_groups() {
    let sql = "CREATE TABLE /*!32312 IF NOT EXISTS*/ `post_reply` (`id` int) /*!40101 ENGINE=InnoDB */";
    assert_eq!(
        ddl(sql)[2],
        "CREATE TABLE /*!32312 IF NOT EXISTS*/ `post_reply_2` (`id` int) /*!40101 ENGINE=InnoDB */"
    );
    let mut r = ShardRule::new("test", "post_reply", "tid", 4, ShardFn::Mod);
    r.placement = vec![1, 1, 0, 0];
    let rules = ShardRules::new(vec![r]).unwrap();
    let p = plan("TRUNCATE post_reply", Some("test"), &rules)
        .unwrap()
        .unwrap();
    assert_eq!(
        p.parts().iter().map(|x| x.group).collect::<Vec<_>>(),
        vec![1, 1, 0, 0]
    );
}
