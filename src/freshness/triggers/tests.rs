//! Unit tests of the SQL generation and of recognising existing triggers.
//! tests/triggers.rs runs the rest against MariaDB.

use super::catalog::{check_schema, Existing};
use super::sql::{previous_prefix, BodyKind};
use super::*;

#[test]
fn trigger_sql_for_a_plain_table() {
    let sql = trigger_sql("sluice", "shop", "orders", 16);
    assert_eq!(
        sql,
        [
            "CREATE TRIGGER `shop`.`sluice_ai_orders` AFTER INSERT ON `shop`.`orders` FOR EACH ROW \
             INSERT INTO `sluice`.`counters` (tbl, slot, n) VALUES ('shop.orders', IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1) \
             ON DUPLICATE KEY UPDATE n = n + 1",
            "CREATE TRIGGER `shop`.`sluice_au_orders` AFTER UPDATE ON `shop`.`orders` FOR EACH ROW \
             INSERT INTO `sluice`.`counters_update` (tbl, slot, n) VALUES ('shop.orders', IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1) \
             ON DUPLICATE KEY UPDATE n = n + 1",
            "CREATE TRIGGER `shop`.`sluice_ad_orders` AFTER DELETE ON `shop`.`orders` FOR EACH ROW \
             INSERT INTO `sluice`.`counters_delete` (tbl, slot, n) VALUES ('shop.orders', IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1) \
             ON DUPLICATE KEY UPDATE n = n + 1",
        ]
    );
}

#[test]
fn names_are_quoted_as_identifiers_and_literals() {
    let sql = trigger_sql("my`ctr", "we`ird'db", "o'r\\d`x", 4);
    assert_eq!(
        sql[0],
        "CREATE TRIGGER `we``ird'db`.`sluice_ai_o'r\\d``x` AFTER INSERT ON `we``ird'db`.`o'r\\d``x` \
         FOR EACH ROW INSERT INTO `my``ctr`.`counters` (tbl, slot, n) \
         VALUES ('we`ird''db.o''r\\\\d`x', IFNULL(4 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 4), 1) ON DUPLICATE KEY UPDATE n = n + 1"
    );
    assert_eq!(quote_ident("a`b"), "`a``b`");
    assert_eq!(quote_literal("it's a \\ test"), "'it''s a \\\\ test'");
    let rows = counter_rows_sql("s", &["d.t'\\".to_owned()], 2);
    assert_eq!(
        rows,
        [
            "INSERT IGNORE INTO `s`.`counters` (tbl, slot) VALUES ('d.t''\\\\', 0), ('d.t''\\\\', 1)",
            "INSERT IGNORE INTO `s`.`counters_update` (tbl, slot) VALUES ('d.t''\\\\', 0), ('d.t''\\\\', 1)",
            "INSERT IGNORE INTO `s`.`counters_delete` (tbl, slot) VALUES ('d.t''\\\\', 0), ('d.t''\\\\', 1)"
        ]
    );
    // The `*` rows only in the INSERT table, which the probes always read.
    let global = counter_rows_sql("s", &[GLOBAL_ROW.to_owned()], 1);
    assert_eq!(
        global,
        ["INSERT IGNORE INTO `s`.`counters` (tbl, slot) VALUES ('*', 0)"]
    );
}

#[test]
fn long_names_are_shortened_deterministically() {
    let exact = "t".repeat(54); // sluice_ai_ + 54 = 64: kept
    assert_eq!(trigger_name(Event::Insert, &exact), format!("sluice_ai_{exact}"));
    let long = "x".repeat(64);
    let name = trigger_name(Event::Update, &long);
    assert_eq!(name.chars().count(), 64);
    assert!(
        name.starts_with(&format!("sluice_au_{}_", "x".repeat(45))),
        "{name}"
    );
    assert_eq!(name, trigger_name(Event::Update, &long), "deterministic");
    // Same 45-character prefix, different tables: different names.
    let other = format!("{}y", "x".repeat(63));
    assert_ne!(trigger_name(Event::Update, &other), name);
    let hash = &name[name.len() - 8..];
    assert!(hash
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    // Characters, not bytes: a multi-byte prefix is not cut inside a character.
    let wide = "é".repeat(60);
    let name = trigger_name(Event::Delete, &wide);
    assert_eq!(name.chars().count(), 64);
    assert!(name.starts_with(&format!("sluice_ad_{}_", "é".repeat(45))));
    let first = trigger_name(Event::Delete, &wide);
    assert_eq!(first, name);
}

#[test]
fn existing_triggers_are_recognised() {
    let existing = |name: &str, table: &str, body: String| Existing {
        schema: "shop".into(),
        name: name.into(),
        event: Some(Event::Insert),
        table: table.into(),
        timing: "AFTER".into(),
        body,
    };
    let ok = existing(
        "sluice_ai_orders",
        "orders",
        trigger_body("sluice", Event::Insert, "shop", "orders", 16),
    );
    assert!(ok.is_sluice());
    assert_eq!(ok.sluice_slots("sluice"), Some(16));
    assert_eq!(ok.sluice_body("sluice"), Some((16, BodyKind::Current)));
    // The body of sluice before issue 11: still sluice's, still counting.
    let previous = existing(
        "sluice_ai_orders",
        "orders",
        format!("{}16", previous_prefix("sluice", "'shop.orders'")),
    );
    assert!(previous.is_sluice());
    assert_eq!(previous.sluice_body("sluice"), Some((16, BodyKind::Update)));
    assert_eq!(previous.sluice_slots("other"), None);
    // One table per event: an UPDATE trigger into `counters_update` is
    // current; into `counters` (the upsert before the table per event) it is
    // the previous form, still counting; an INSERT trigger into another
    // event's table is not sluice's.
    let update = |body: String| Existing {
        event: Some(Event::Update),
        name: "sluice_au_orders".into(),
        ..existing("", "orders", body)
    };
    let current_update = update(trigger_body("sluice", Event::Update, "shop", "orders", 16));
    assert!(current_update.body.contains("`sluice`.`counters_update`"));
    assert_eq!(
        current_update.sluice_body("sluice"),
        Some((16, BodyKind::Current))
    );
    let shared = update(
        "INSERT INTO `sluice`.`counters` (tbl, slot, n) VALUES ('shop.orders', CONNECTION_ID() % 16, 1) \
         ON DUPLICATE KEY UPDATE n = n + 1"
            .to_owned(),
    );
    assert_eq!(shared.sluice_body("sluice"), Some((16, BodyKind::Shared)));
    assert_eq!(BodyKind::Shared.counter_table(Event::Update), COUNTER_TABLE);
    // Before issue 40: the event's own table, the slot from the connection id only.
    let striped = update(
        "INSERT INTO `sluice`.`counters_update` (tbl, slot, n) VALUES ('shop.orders', \
         CONNECTION_ID() % 16, 1) ON DUPLICATE KEY UPDATE n = n + 1"
            .to_owned(),
    );
    assert_eq!(striped.sluice_body("sluice"), Some((16, BodyKind::Striped)));
    assert_eq!(BodyKind::Striped.counter_table(Event::Update), "counters_update");
    // The current slot expression, exactly: another count inside it is not sluice's.
    let body = trigger_body("sluice", Event::Update, "shop", "orders", 16);
    assert!(body.contains(
        "IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16)"
    ));
    assert_eq!(update(body.replace("16 +", "15 +")).sluice_body("sluice"), None);
    let misplaced = existing(
        "sluice_ai_orders",
        "orders",
        trigger_body("sluice", Event::Delete, "shop", "orders", 16),
    );
    assert!(misplaced.is_sluice());
    assert_eq!(misplaced.sluice_body("sluice"), None);
    // Anything after the current body's end is not sluice's.
    let extended = existing(
        "sluice_ai_orders",
        "orders",
        format!(
            "{}, tok = 1",
            trigger_body("sluice", Event::Insert, "shop", "orders", 16)
        ),
    );
    assert!(!extended.is_sluice());
    assert_eq!(extended.sluice_slots("sluice"), None);
    assert_eq!(ok.sluice_slots("other"), None);
    // Renamed table: the trigger moved with it but still bumps the old row.
    let moved = existing(
        "sluice_ai_orders",
        "orders2",
        trigger_body("sluice", Event::Insert, "shop", "orders", 16),
    );
    assert!(moved.is_sluice());
    assert_eq!(moved.sluice_slots("sluice"), None);
    let user = existing(
        "audit_orders",
        "orders",
        "INSERT INTO audit VALUES (NEW.id)".into(),
    );
    assert!(!user.is_sluice());
    // MariaDB's information_schema spelling of a literal with a backslash.
    let mariadb =
        "INSERT INTO `sluice`.`counters` (tbl, slot, n) VALUES ('shop.o''r\\d', CONNECTION_ID() % 8, 1) \
                   ON DUPLICATE KEY UPDATE n = n + 1";
    let t = existing("sluice_ai_o'r\\d", "o'r\\d", mariadb.into());
    assert_eq!(t.sluice_slots("sluice"), Some(8));
    let verbatim = existing(
        "sluice_ai_o'r\\d",
        "o'r\\d",
        trigger_body("sluice", Event::Insert, "shop", "o'r\\d", 8),
    );
    assert_eq!(verbatim.sluice_slots("sluice"), Some(8));
    let good = trigger_body("sluice", Event::Insert, "shop", "orders", 16);
    for bad in ["0", "016", "1025", "16 ", "x"] {
        for body in [
            format!("{}{bad}", previous_prefix("sluice", "'shop.orders'")),
            good.replace("16", bad),
        ] {
            assert_eq!(
                existing("sluice_ai_orders", "orders", body.clone()).sluice_slots("sluice"),
                None,
                "{body}"
            );
        }
    }
}

#[test]
fn script_is_complete_and_comment_safe() {
    let tables = vec!["orders".to_owned(), "evil\nDROP DATABASE shop; --".to_owned()];
    let text = script("sluice", "shop", &tables, 16);
    assert!(text.starts_with("-- sluice freshness triggers for schema `shop`"));
    assert!(!text.contains("DELIMITER"));
    assert_eq!(text.matches("CREATE TRIGGER").count(), 6);
    assert_eq!(text.matches("DROP TRIGGER IF EXISTS").count(), 6);
    assert!(text.contains("INSERT IGNORE INTO `sluice`.`counters` (tbl, slot) VALUES ('*', 0)"));
    assert!(text.contains("('shop.orders', 15);"));
    assert!(
        text.contains("INSERT IGNORE INTO `sluice`.`counters_delete` (tbl, slot) VALUES ('shop.orders', 0)")
    );
    assert!(!text.contains("INSERT IGNORE INTO `sluice`.`counters_update` (tbl, slot) VALUES ('*'"));
    // The newline of the table name cannot end a comment line (inside
    // quotes it is harmless; tests/triggers.rs runs a script through the
    // mariadb client).
    assert!(text.contains("\n-- `shop`.`evil?DROP DATABASE shop; --`\n"));
    assert!(text.contains("`evil\nDROP DATABASE shop; --`"));
    assert_eq!(text, script("sluice", "shop", &tables, 16), "deterministic");
}

#[test]
fn counter_table_sql_matches_the_design() {
    let sql = counter_table_sql("sluice");
    assert_eq!(sql[0], "CREATE DATABASE IF NOT EXISTS `sluice`");
    assert_eq!(sql.len(), 4);
    for (i, table) in ["counters", "counters_update", "counters_delete"]
        .iter()
        .enumerate()
    {
        let create = &sql[i + 1];
        assert!(create.starts_with(&format!("CREATE TABLE IF NOT EXISTS `sluice`.`{table}` (")));
        assert!(create.contains("PRIMARY KEY (tbl, slot)"));
        assert!(create.contains(") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT"));
    }
    let many = counter_rows_sql("sluice", &["a.b".to_owned(), "a.c".to_owned()], 1024);
    assert_eq!(many.len(), 9, "2048 rows per table in statements of at most 1000");

    let probe = counters_select_sql("s`x", CounterTables::INSERT_ONLY);
    assert_eq!(probe, "SELECT tbl, slot * 3 + 0, n FROM `s``x`.`counters`");
    let all = CounterTables::INSERT_ONLY.with(Event::Update).with(Event::Delete);
    assert_eq!(
        counters_select_sql("s", all),
        "SELECT tbl, slot * 3 + 0, n FROM `s`.`counters` UNION ALL \
         SELECT tbl, slot * 3 + 1, n FROM `s`.`counters_update` UNION ALL \
         SELECT tbl, slot * 3 + 2, n FROM `s`.`counters_delete`"
    );
    assert_eq!(CounterTables::from_bits(all.bits()), all);
}

#[test]
fn schemas_that_are_never_tracked() {
    assert!(matches!(
        check_schema("sluice", "sluice"),
        Err(TriggerError::CounterSchema(_))
    ));
    assert!(matches!(
        check_schema("sluice", "MySQL"),
        Err(TriggerError::SystemSchema(_))
    ));
    assert!(check_schema("sluice", "shop").is_ok());
}

#[test]
fn schema_list_sql_quotes_and_escapes_the_counter_schema() {
    assert_eq!(
        mark_schema_sql("sluice", "it's"),
        "INSERT IGNORE INTO `sluice`.`schemas` (db) VALUES ('it''s')"
    );
    // `_` and `%` in the counter schema are LIKE wildcards: escaped, so the
    // seed names only schemas whose triggers count into this counter table.
    let seed = seed_schemas_sql("my_ctr%");
    assert!(
        seed.contains(
            "ACTION_STATEMENT LIKE 'UPDATE `my\\\\_ctr\\\\%`.`counters` SET n = n + 1 WHERE tbl = %'"
        ) && seed.contains(
            "ACTION_STATEMENT LIKE 'INSERT INTO `my\\\\_ctr\\\\%`.`counters` (tbl, slot, n) VALUES (%'"
        ),
        "{seed}"
    );
    assert!(seed.ends_with("AND TRIGGER_SCHEMA <> 'my_ctr%'"), "{seed}");
    let script = script("sluice", "shop", &[], 16);
    assert!(script.contains(&format!("{};", schema_table_sql("sluice"))));
    assert!(script.contains(&format!("{};", mark_schema_sql("sluice", "shop"))));
}

#[test]
fn the_sql_directory_shows_what_install_runs() {
    // sql/ is what users read and may run by hand: the same statements.
    let counter_table = include_str!("../../../sql/counter_table.sql");
    for statement in counter_table_sql("sluice") {
        assert!(counter_table.contains(&format!("{statement};")), "{statement}");
    }
    let example = include_str!("../../../sql/triggers_example.sql");
    for statement in trigger_sql("sluice", "shop", "orders", 16) {
        assert!(example.contains(&format!("{statement};")), "{statement}");
    }
}
