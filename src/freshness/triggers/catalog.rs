//! Reading the server: information_schema, the counter table, and the
//! session settings and error handling shared by the commands.

use super::report::{hint, server_code, sql_error, Report, TriggerError};
use super::sql::{
    counter_key, looks_like_sluice_body, parse_body, quote_ident, quote_literal, trigger_name, BodyKind,
    Event, SQL_MODE_WITHOUT_NO_BACKSLASH_ESCAPES,
};
use super::{CounterTables, COUNTER_TABLE, LOCK_WAIT_TIMEOUT_SECS, SYSTEM_SCHEMAS};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A row of `information_schema.TRIGGERS`.
#[derive(Debug, Clone)]
pub(super) struct Existing {
    pub(super) schema: String,
    pub(super) name: String,
    pub(super) event: Option<Event>,
    pub(super) table: String,
    pub(super) timing: String,
    pub(super) body: String,
}

impl Existing {
    /// Created by sluice: a sluice name and a body that bumps a counter table
    /// (either body form, see [`BodyKind`]).
    pub(super) fn is_sluice(&self) -> bool {
        let named = Event::ALL.iter().any(|e| self.name.starts_with(e.name_prefix()));
        named && looks_like_sluice_body(&self.body)
    }

    /// The slot count if this is exactly the sluice trigger of its table and
    /// event for `counter_schema` (right name, AFTER, body for this table),
    /// in either body form: both count every write of the table.
    pub(super) fn sluice_slots(&self, counter_schema: &str) -> Option<u16> {
        self.sluice_body(counter_schema).map(|(slots, _)| slots)
    }

    /// [`Existing::sluice_slots`] and the body's form.
    pub(super) fn sluice_body(&self, counter_schema: &str) -> Option<(u16, BodyKind)> {
        let event = self.event?;
        if !self.timing.eq_ignore_ascii_case("AFTER") || self.name != trigger_name(event, &self.table) {
            return None;
        }
        let key = counter_key(&self.schema, &self.table);
        // MariaDB's information_schema shows string literals re-escaped with
        // quotes doubled only (`\\` in the statement appears as `\`); MySQL
        // shows the statement as written. Accept both spellings.
        let quote_only = format!("'{}'", key.replace('\'', "''"));
        [quote_only, quote_literal(&key)]
            .iter()
            .find_map(|literal| parse_body(&self.body, counter_schema, event, literal))
    }
}

pub(super) async fn read_triggers(conn: &mut Conn, db: Option<&str>) -> Result<Vec<Existing>, TriggerError> {
    let mut sql = "SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_MANIPULATION, EVENT_OBJECT_TABLE, \
                   ACTION_TIMING, ACTION_STATEMENT FROM information_schema.TRIGGERS"
        .to_owned();
    match db {
        // information_schema compares case-insensitively: filter exactly below.
        Some(db) => sql.push_str(&format!(" WHERE TRIGGER_SCHEMA = {}", quote_literal(db))),
        None => sql.push_str(" WHERE TRIGGER_NAME LIKE 'sluice\\_a%'"),
    }
    let rows: Vec<(String, String, String, String, String, String)> = conn
        .query(sql)
        .await
        .map_err(sql_error("cannot read information_schema.TRIGGERS"))?;
    Ok(rows
        .into_iter()
        .filter(|row| db.is_none_or(|db| row.0 == db))
        .map(|(schema, name, event, table, timing, body)| Existing {
            schema,
            name,
            event: Event::from_keyword(&event),
            table,
            timing,
            body,
        })
        .collect())
}

/// Base tables of `db` (including system-versioned ones), sorted by name.
pub async fn base_tables(conn: &mut Conn, db: &str) -> Result<Vec<String>, TriggerError> {
    let sql = format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} \
         AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')",
        quote_literal(db)
    );
    let rows: Vec<(String, String)> = conn
        .query(sql)
        .await
        .map_err(sql_error(format!("cannot list the tables of `{db}`")))?;
    let mut tables: Vec<String> = rows
        .into_iter()
        .filter(|(s, _)| s == db)
        .map(|(_, t)| t)
        .collect();
    tables.sort();
    Ok(tables)
}

/// `(schema, table)` of base tables whose engine is not transactional
/// (MyISAM, Aria, MEMORY, CSV, ...), in `db` or in every schema. Their rows
/// survive a failed statement or a rollback while a trigger's counter bump
/// is rolled back, so counting their writes with triggers is unsound: they
/// are never tracked (reads of them go to the master). Only InnoDB (and
/// MyRocks) roll back with the bump.
/// Engines whose writes roll back with the trigger's counter bump.
pub(super) const SYSTEM_ENGINES_TRANSACTIONAL: &[&str] = &["InnoDB", "ROCKSDB"];

pub(super) async fn non_transactional(
    conn: &mut Conn,
    db: Option<&str>,
) -> Result<HashSet<(String, String)>, TriggerError> {
    let mut sql = "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES \
                   WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND ENGINE IS NOT NULL \
                   AND ENGINE NOT IN ('InnoDB', 'ROCKSDB')"
        .to_owned();
    match db {
        Some(db) => sql.push_str(&format!(" AND TABLE_SCHEMA = {}", quote_literal(db))),
        None => sql.push_str(
            " AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')",
        ),
    }
    let rows: Vec<(String, String)> = conn
        .query(sql)
        .await
        .map_err(sql_error("cannot read the engines of the tables"))?;
    Ok(rows.into_iter().collect())
}

pub(super) async fn schema_exists(conn: &mut Conn, db: &str) -> Result<bool, TriggerError> {
    let sql = format!(
        "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}",
        quote_literal(db)
    );
    let rows: Vec<String> = conn.query(sql).await.map_err(sql_error("cannot list schemas"))?;
    Ok(rows.iter().any(|s| s == db))
}

/// Which of the counter tables exist (an install by a sluice before the
/// table per event has only [`COUNTER_TABLE`]).
pub(super) async fn counter_tables(
    conn: &mut Conn,
    counter_schema: &str,
) -> Result<CounterTables, TriggerError> {
    let names: Vec<String> = Event::ALL
        .iter()
        .map(|e| quote_literal(e.counter_table()))
        .collect();
    let sql = format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} \
         AND TABLE_NAME IN ({})",
        quote_literal(counter_schema),
        names.join(", ")
    );
    let rows: Vec<(String, String)> = conn
        .query(sql)
        .await
        .map_err(sql_error("cannot look for the counter tables"))?;
    // information_schema compares case-insensitively: match exactly here.
    let mut tables = CounterTables::NONE;
    for event in Event::ALL {
        if rows
            .iter()
            .any(|(s, t)| s == counter_schema && t == event.counter_table())
        {
            tables = tables.with(event);
        }
    }
    Ok(tables)
}

/// Per `tbl`: the slot count its rows cover (rows `0..n` all present), or
/// `None` when there is no row 0.
pub(super) async fn row_coverage(
    conn: &mut Conn,
    counter_schema: &str,
    db: Option<&str>,
) -> Result<HashMap<String, Option<u64>>, TriggerError> {
    // The first missing slot: rows above it (those of sluice's connections,
    // `slots + k`, see `sql::trigger_body`) may have gaps of their own.
    let table = format!("{}.{}", quote_ident(counter_schema), quote_ident(COUNTER_TABLE));
    let mut sql = format!(
        "SELECT tbl, MIN(slot), MIN(IF(EXISTS (SELECT 1 FROM {table} n WHERE n.tbl = c.tbl \
         AND n.slot = c.slot + 1), NULL, c.slot + 1)) FROM {table} c"
    );
    if let Some(db) = db {
        let prefix = format!("{db}.");
        sql.push_str(&format!(
            " WHERE LEFT(tbl, {}) = {}",
            prefix.chars().count(),
            quote_literal(&prefix)
        ));
    }
    sql.push_str(" GROUP BY tbl");
    let rows: Vec<(String, u64, u64)> = conn
        .query(sql)
        .await
        .map_err(sql_error("cannot read the counter table"))?;
    Ok(rows
        .into_iter()
        .map(|(tbl, min, gap)| (tbl, (min == 0).then_some(gap)))
        .collect())
}

/// `child db.table` → parents whose foreign keys cascade (CASCADE, SET NULL,
/// SET DEFAULT) into it. A self-reference is not listed: the parent's
/// trigger bumps the same table's rows in the same transaction.
pub(super) async fn cascade_parents(
    conn: &mut Conn,
    db: Option<&str>,
) -> Result<HashMap<String, BTreeSet<String>>, TriggerError> {
    let mut sql = "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, UNIQUE_CONSTRAINT_SCHEMA, REFERENCED_TABLE_NAME \
                   FROM information_schema.REFERENTIAL_CONSTRAINTS \
                   WHERE (UPDATE_RULE NOT IN ('RESTRICT', 'NO ACTION') OR DELETE_RULE NOT IN ('RESTRICT', 'NO ACTION'))"
        .to_owned();
    if let Some(db) = db {
        sql.push_str(&format!(" AND CONSTRAINT_SCHEMA = {}", quote_literal(db)));
    }
    let rows: Vec<(String, String, String, String)> = conn.query(sql).await.map_err(sql_error(
        "cannot read information_schema.REFERENTIAL_CONSTRAINTS",
    ))?;
    let mut parents: HashMap<String, BTreeSet<String>> = HashMap::new();
    for (schema, table, parent_schema, parent_table) in rows {
        if db.is_some_and(|db| db != schema) || (schema == parent_schema && table == parent_table) {
            continue;
        }
        parents
            .entry(counter_key(&schema, &table))
            .or_default()
            .insert(counter_key(&parent_schema, &parent_table));
    }
    Ok(parents)
}

pub(super) fn check_schema(counter_schema: &str, db: &str) -> Result<(), TriggerError> {
    if db == counter_schema {
        return Err(TriggerError::CounterSchema(db.to_owned()));
    }
    if SYSTEM_SCHEMAS.iter().any(|s| s.eq_ignore_ascii_case(db)) {
        return Err(TriggerError::SystemSchema(db.to_owned()));
    }
    Ok(())
}

/// Session settings for DDL: utf8mb4, no NO_BACKSLASH_ESCAPES (see
/// [`quote_literal`]), a bounded metadata-lock wait. They stay set on `conn`.
pub(super) async fn prepare_session(conn: &mut Conn) -> Result<(), TriggerError> {
    for sql in [
        "SET NAMES utf8mb4".to_owned(),
        SQL_MODE_WITHOUT_NO_BACKSLASH_ESCAPES.to_owned(),
        format!("SET SESSION lock_wait_timeout = {LOCK_WAIT_TIMEOUT_SECS}"),
    ] {
        conn.query_drop(&sql)
            .await
            .map_err(sql_error(format!("`{sql}` failed")))?;
    }
    Ok(())
}

/// Runs one statement of a per-table step. Lock wait timeouts are recorded
/// in `report.failed` (the rest goes on); a vanished table in `skipped`.
pub(super) async fn per_table(
    conn: &mut Conn,
    sql: &str,
    what: &str,
    table: &str,
    report: &mut Report,
) -> Result<bool, TriggerError> {
    match conn.query_drop(sql).await {
        Ok(()) => Ok(true),
        Err(e) => match server_code(&e) {
            Some(1146) => {
                if !report.skipped.iter().any(|t| t == table) {
                    report.skipped.push(table.to_owned());
                }
                Ok(false)
            }
            Some(1205) => {
                report.failed.push((what.to_owned(), format!("{e}{}", hint(&e))));
                Ok(false)
            }
            _ => Err(TriggerError::Sql {
                context: format!("{what} failed"),
                source: e,
            }),
        },
    }
}

/// `DROP TRIGGER IF EXISTS db.name` as a per-table step of `table`.
pub(super) async fn drop_trigger(
    conn: &mut Conn,
    db: &str,
    name: &str,
    table: &str,
    report: &mut Report,
) -> Result<bool, TriggerError> {
    let sql = format!("DROP TRIGGER IF EXISTS {}.{}", quote_ident(db), quote_ident(name));
    per_table(conn, &sql, &format!("DROP TRIGGER {name}"), table, report).await
}

pub(super) fn finish(mut report: Report) -> Result<Report, TriggerError> {
    report.dropped.sort();
    if report.failed.is_empty() {
        Ok(report)
    } else {
        Err(TriggerError::Incomplete(Box::new(report)))
    }
}
