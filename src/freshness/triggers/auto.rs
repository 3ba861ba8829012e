//! `freshness.auto_install`: new tables of tracked schemas get their
//! triggers without a manual `sluice triggers install`.
//!
//! A schema is *tracked* once it is named in the counter schema's list of
//! schemas ([`super::SCHEMA_TABLE`]): `sluice triggers install --schema DB`
//! adds DB (so an application's empty schema, before its first migration,
//! is tracked too) and the schemas that already have sluice triggers.
//! Without that list (installed by an older sluice), a schema is tracked
//! once one of its tables has a sluice trigger for the counter schema. Its
//! base tables with a transactional engine that lack any of the three
//! triggers are installed with [`super::install_tables`], which touches
//! nothing else (never another table's triggers, never another slot count),
//! so two sluice instances with different settings do not undo each other.
//! Non-transactional tables stay untracked (see `catalog::non_transactional`).

use super::catalog::{read_triggers, SYSTEM_ENGINES_TRANSACTIONAL};
use super::report::{server_code, sql_error, TriggerError};
use super::sql::{counter_key, quote_ident, quote_literal, Event};
use super::{install_tables, Report, SCHEMA_TABLE, SYSTEM_SCHEMAS};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The base tables of the tracked schemas, as read in one pass.
#[derive(Debug, Clone, Default)]
pub struct SchemaScan {
    /// `db.table` of every base table of a tracked schema (tracked or not).
    pub tables: Vec<String>,
    /// Per schema: transactional base tables lacking a sluice trigger.
    pub missing: BTreeMap<String, HashSet<String>>,
}

/// Reads which schemas are tracked and which of their tables lack triggers.
pub async fn scan_tracked_schemas(conn: &mut Conn, counter_schema: &str) -> Result<SchemaScan, TriggerError> {
    // Events with a correct sluice trigger, per `db.table` (any slot count:
    // a table another sluice installed with other settings is not redone).
    let mut events: HashMap<String, u8> = HashMap::new();
    let mut schemas: Vec<String> = Vec::new();
    for t in read_triggers(conn, None).await? {
        if !t.is_sluice() || t.schema == counter_schema || is_system(&t.schema) {
            continue;
        }
        // Only triggers counting into *this* counter table make a schema
        // ours: another sluice (another counter schema) tracking a schema
        // must not have its new tables' triggers replaced by ours.
        let Some(_) = t.sluice_slots(counter_schema) else {
            continue;
        };
        if !schemas.contains(&t.schema) {
            schemas.push(t.schema.clone());
        }
        if let Some(event) = t.event {
            *events.entry(counter_key(&t.schema, &t.table)).or_default() |= 1 << (event as u8);
        }
    }
    // The names are authoritative where they exist: `uninstall` removes the
    // name before it drops the triggers one by one, so a scan that sees a
    // half-uninstalled schema does not put its triggers back. Without the
    // list (counter table of an older sluice), a trigger names its schema.
    if let Some(named) = named_schemas(conn, counter_schema).await? {
        schemas = named
            .into_iter()
            .filter(|db| db != counter_schema && !is_system(db))
            .collect();
    }
    let mut scan = SchemaScan::default();
    if schemas.is_empty() {
        return Ok(scan);
    }
    let list: Vec<String> = schemas.iter().map(|s| quote_literal(s)).collect();
    let sql = format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ({}) \
         AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')",
        list.join(", ")
    );
    let rows: Vec<(String, String, Option<String>)> = conn
        .query(sql)
        .await
        .map_err(sql_error("cannot list the tables of the tracked schemas"))?;
    let all = (1u8 << Event::ALL.len()) - 1;
    for (db, table, engine) in rows {
        // information_schema compares names case-insensitively.
        if !schemas.contains(&db) {
            continue;
        }
        let key = counter_key(&db, &table);
        let transactional = engine.as_deref().is_none_or(|e| {
            SYSTEM_ENGINES_TRANSACTIONAL
                .iter()
                .any(|t| t.eq_ignore_ascii_case(e))
        });
        if transactional && events.get(&key).copied().unwrap_or(0) != all {
            scan.missing.entry(db).or_default().insert(table);
        }
        scan.tables.push(key);
    }
    scan.tables.sort();
    Ok(scan)
}

/// The schemas named for tracking; `None` when the list does not exist (a
/// counter table installed by an older sluice).
pub(super) async fn named_schemas(
    conn: &mut Conn,
    counter_schema: &str,
) -> Result<Option<Vec<String>>, TriggerError> {
    let sql = format!(
        "SELECT db FROM {}.{}",
        quote_ident(counter_schema),
        quote_ident(SCHEMA_TABLE)
    );
    match conn.query(sql).await {
        Ok(rows) => Ok(Some(rows)),
        Err(e) if matches!(server_code(&e), Some(1146 | 1049)) => Ok(None),
        Err(e) => Err(sql_error("cannot read the schemas named for tracking")(e)),
    }
}

/// Installs the triggers of `scan.missing`, schema by schema. A schema that
/// fails (no TRIGGER privilege there, a metadata lock held past
/// `lock_wait_timeout`) does not stop the others; its error is returned
/// with the reports of the rest.
pub async fn install_missing(
    conn: &mut Conn,
    counter_schema: &str,
    slots: u16,
    scan: &SchemaScan,
) -> (Vec<Report>, Vec<(String, TriggerError)>) {
    let (mut done, mut failed) = (Vec::new(), Vec::new());
    for (db, tables) in &scan.missing {
        match install_tables(conn, counter_schema, db, slots, tables).await {
            Ok(report) => done.push(report),
            Err(TriggerError::Incomplete(report)) => {
                done.push((*report).clone());
                failed.push((db.clone(), TriggerError::Incomplete(report)));
            }
            Err(e) => failed.push((db.clone(), e)),
        }
    }
    (done, failed)
}

/// May this account create triggers and write the counter table? Read from
/// the account's own grants in information_schema (global or per schema);
/// roles are not followed, so an account that gets TRIGGER through a role
/// reads as "no" (set `freshness.auto_install: true` then).
pub async fn may_create_triggers(conn: &mut Conn, counter_schema: &str) -> Result<bool, TriggerError> {
    let who: Option<String> = conn
        .query_first("SELECT CURRENT_USER()")
        .await
        .map_err(sql_error("SELECT CURRENT_USER()"))?;
    let Some((user, host)) = who.as_deref().and_then(|w| w.rsplit_once('@')) else {
        return Ok(false);
    };
    let grantee = format!("'{user}'@'{host}'");
    let rows: Vec<(String, String, Option<String>)> = conn
        .query(
            "SELECT GRANTEE, PRIVILEGE_TYPE, NULL FROM information_schema.USER_PRIVILEGES \
             WHERE PRIVILEGE_TYPE IN ('TRIGGER', 'INSERT', 'UPDATE', 'DELETE') \
             UNION ALL SELECT GRANTEE, PRIVILEGE_TYPE, TABLE_SCHEMA FROM information_schema.SCHEMA_PRIVILEGES \
             WHERE PRIVILEGE_TYPE IN ('TRIGGER', 'INSERT', 'UPDATE', 'DELETE')",
        )
        .await
        .map_err(sql_error("cannot read the account's privileges"))?;
    let mine: Vec<(String, Option<String>)> = rows
        .into_iter()
        .filter(|(g, _, _)| *g == grantee)
        .map(|(_, p, s)| (p, s))
        .collect();
    let trigger = mine.iter().any(|(p, _)| p == "TRIGGER");
    let counter = |privilege: &str| {
        mine.iter()
            .any(|(p, s)| p == privilege && s.as_deref().is_none_or(|s| s == counter_schema))
    };
    Ok(trigger && counter("INSERT") && counter("UPDATE") && counter("DELETE"))
}

/// Can a statement that ran through sluice have added a table to a schema
/// (or made one transactional)? `CREATE ...` (TABLE, ... LIKE, ... SELECT),
/// `ALTER ...` (ENGINE=InnoDB, RENAME TO) and `RENAME TABLE`, also behind
/// `SET STATEMENT ... FOR`. Anything else that does (a procedure, dynamic
/// SQL) is found by the background scan after the DDL counters moved.
pub fn may_add_tables(sql: &[u8]) -> bool {
    let (word, rest) = crate::router::lexer::first_word(sql);
    let word = match word.as_str() {
        "SET" => match crate::router::route::set_statement_target(rest) {
            Some(inner) => crate::router::lexer::first_word(inner).0,
            None => return false,
        },
        _ => word,
    };
    matches!(word.as_str(), "CREATE" | "ALTER" | "RENAME")
}

fn is_system(schema: &str) -> bool {
    SYSTEM_SCHEMAS.iter().any(|s| s.eq_ignore_ascii_case(schema))
}

#[cfg(test)]
mod tests {
    use super::may_add_tables;

    #[test]
    fn statements_that_may_add_tables() {
        for sql in [
            "CREATE TABLE t (id INT PRIMARY KEY)",
            "  /* m */ create table if not exists db.t LIKE db.u",
            "CREATE OR REPLACE TABLE t SELECT 1",
            "ALTER TABLE t ENGINE=InnoDB",
            "RENAME TABLE a TO b",
            "SET STATEMENT lock_wait_timeout=1 FOR CREATE TABLE t (id INT)",
        ] {
            assert!(may_add_tables(sql.as_bytes()), "{sql}");
        }
        for sql in [
            "INSERT INTO t VALUES (1)",
            "TRUNCATE t",
            "DROP TABLE t",
            "CALL p()",
            "SET @a = 1",
            "SET STATEMENT max_statement_time=1 FOR SELECT 1",
        ] {
            assert!(!may_add_tables(sql.as_bytes()), "{sql}");
        }
    }
}
