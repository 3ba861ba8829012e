//! What mariadb-dump writes around the rows (`dump.rs`): LOCK TABLES, DISABLE KEYS.

use super::*;
use crate::shard::dump::plan_dump_statement;

fn rules() -> ShardRules {
    ShardRules::from_atlas(["test.pr.tid.2"]).unwrap()
}

fn sqls(sql: &str) -> Option<Result<Vec<String>, Refusal>> {
    plan_dump_statement(sql, Some("test"), &rules())
        .map(|r| r.map(|p| p.parts().iter().map(|x| x.sql.to_string()).collect()))
}

#[test]
fn dump_statements() {
    assert_eq!(
        sqls("LOCK TABLES `pr` WRITE"),
        Some(Ok(vec!["LOCK TABLES `pr_0` WRITE, `pr_1` WRITE".into()]))
    );
    assert_eq!(
        sqls("lock table other READ LOCAL, test.pr low_priority write;"),
        Some(Ok(vec![
            "lock table other READ LOCAL, test.`pr_0` low_priority write, test.`pr_1` low_priority write"
                .into()
        ]))
    );
    assert!(matches!(sqls("LOCK TABLES pr AS p WRITE"), Some(Err(_))));
    assert_eq!(sqls("LOCK TABLES other WRITE"), None);
    assert_eq!(
        sqls("/*!40000 ALTER TABLE `pr` DISABLE KEYS */;"),
        Some(Ok(vec![
            "ALTER TABLE `pr_0` DISABLE KEYS".into(),
            "ALTER TABLE `pr_1` DISABLE KEYS".into()
        ]))
    );
    assert_eq!(
        sqls("ALTER TABLE test.pr ENABLE KEYS"),
        Some(Ok(vec![
            "ALTER TABLE test.`pr_0` ENABLE KEYS".into(),
            "ALTER TABLE test.`pr_1` ENABLE KEYS".into()
        ]))
    );
    // Versions not every MariaDB runs, other statements: the planner's.
    assert_eq!(sqls("/*!100500 ALTER TABLE pr DISABLE KEYS */"), None);
    assert_eq!(sqls("/*M!40000 ALTER TABLE pr DISABLE KEYS */"), None);
    assert_eq!(sqls("/*!40000 ALTER TABLE pr DISABLE KEYS */ SELECT 1"), None);
    assert_eq!(sqls("ALTER TABLE pr ADD KEY (tid)"), None);
}
