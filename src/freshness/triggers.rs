//! The counter table and the triggers that bump it: SQL generation (pure
//! functions) and `install` / `uninstall` / `status` / `tracked_tables`
//! against a master (mysql_async, text protocol: MySQL cannot PREPARE a
//! `CREATE TRIGGER`, so every DDL statement is sent with `query_drop`, one
//! statement per call).
//!
//! Every base table of a tracked schema gets three triggers,
//! `sluice_ai_<table>`, `sluice_au_<table>`, `sluice_ad_<table>` (AFTER
//! INSERT / UPDATE / DELETE), each a single statement into its event's
//! counter table (`counters`, `counters_update`, `counters_delete`: one table
//! per event, or `LOCK TABLES t WRITE` and a write to `t` fail, see
//! `Event::counter_table`):
//!
//! ```sql
//! INSERT INTO `sluice`.`counters` (tbl, slot, n) VALUES ('shop.orders',
//!   IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1)
//!   ON DUPLICATE KEY UPDATE n = n + 1
//! ```
//!
//! Rows `0..slots` are created at install time (`INSERT IGNORE`), so a
//! trigger's insert usually meets the existing primary key and updates that
//! row: one record lock, no gap lock, and no WHERE clause or range optimizer
//! to run (cheaper than the `UPDATE ... WHERE` of earlier versions, which are
//! still recognised and replaced by `install`: see `sql::BodyKind`). Each of
//! sluice's own backend connections bumps a row no other live one of them
//! bumps (`slots + @sluice_slot`, created by the first bump), so
//! transactions through sluice never wait on each other's counter rows;
//! other writers are spread over rows `0..slots` by connection id. Readers
//! compare every row, slot by slot (see `sql::trigger_body`).
//!
//! Names are kept exactly as the server stores them: `tracked_tables`
//! returns `db.table` with the case of `information_schema`. MariaDB on Linux
//! (`lower_case_table_names=0`, the default) treats `Orders` and `orders` as
//! two tables, so lowercasing would merge distinct tables. On a server with
//! `lower_case_table_names=1` names are stored in lowercase, and whoever
//! looks names up in the set should lowercase the names a query uses.
//!
//! A `db.table` key is ambiguous when names contain a dot (`a.b`+`c` and
//! `a`+`b.c` share rows): both tables then bump the same rows, which makes the
//! comparison coarser, never wrong; `uninstall` keeps rows that a remaining
//! sluice trigger still uses.
//!
//! Layout: `sql` generates statements (pure), `catalog` reads
//! information_schema and the counter table, `report` holds the error and
//! report types; the four commands are below.

mod auto;
mod catalog;
mod report;
mod sql;
#[cfg(test)]
mod tests;

pub use auto::{install_missing, may_add_tables, may_create_triggers, scan_tracked_schemas, SchemaScan};
pub use catalog::base_tables;
pub use report::{Report, Status, TableStatus, TriggerError, TriggerState};
pub use sql::{
    counter_key, counter_rows_sql, counter_table_sql, mark_schema_sql, quote_ident, quote_literal,
    schema_table_sql, script, seed_schemas_sql, trigger_body, trigger_name, trigger_sql, Event,
};

use catalog::{
    cascade_parents, check_schema, counter_tables, drop_trigger, finish, non_transactional, per_table,
    prepare_session, read_triggers, row_coverage, schema_exists, Existing,
};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use report::{server_code, sql_error};
use sql::{bump_global_sql, create_trigger, new_epoch_sql, random_epoch, BodyKind};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The counter table's name inside the counter schema: the INSERT triggers'
/// rows, the `*` rows and the generation row.
pub const COUNTER_TABLE: &str = "counters";
/// The UPDATE triggers' counter table (see [`Event::counter_table`]).
pub const UPDATE_COUNTER_TABLE: &str = "counters_update";
/// The DELETE triggers' counter table.
pub const DELETE_COUNTER_TABLE: &str = "counters_delete";
/// Which of the three counter tables exist (see [`Event::counter_table`]).
/// The probes read exactly these; a table whose trigger bumps another
/// counts as untracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterTables(u8);

impl CounterTables {
    pub const NONE: CounterTables = CounterTables(0);
    /// What the probes read before the tables have been looked for: the
    /// table every sluice version has.
    pub const INSERT_ONLY: CounterTables = CounterTables(1);
    pub const ALL: CounterTables = CounterTables(0b111);

    fn bit(event: Event) -> u8 {
        1 << (event as u8)
    }

    pub fn with(self, event: Event) -> CounterTables {
        CounterTables(self.0 | Self::bit(event))
    }

    pub fn has(self, event: Event) -> bool {
        self.0 & Self::bit(event) != 0
    }

    /// For an atomic cell.
    pub fn bits(self) -> u8 {
        self.0
    }

    pub fn from_bits(bits: u8) -> CounterTables {
        CounterTables(bits & 0b111)
    }
}

/// The counter rows of the existing counter tables as `tbl, index, n`
/// (a `UNION ALL` of one `SELECT` per table), for the probes. Each table's
/// rows keep their own index, `slot * 3 + event` (0 for the generation
/// row's slot 0), so that rows are still compared one by one, never summed
/// across tables.
pub fn counters_select_sql(counter_schema: &str, tables: CounterTables) -> String {
    let schema = quote_ident(counter_schema);
    let parts: Vec<String> = Event::ALL
        .into_iter()
        .filter(|e| tables.has(*e))
        .map(|e| {
            format!(
                "SELECT tbl, slot * 3 + {}, n FROM {schema}.{}",
                e as u8,
                quote_ident(e.counter_table())
            )
        })
        .collect();
    parts.join(" UNION ALL ")
}

/// The schemas named for tracking (`sluice triggers install DB` adds DB,
/// `uninstall` removes it): with `freshness.auto_install` on, tables created
/// in them get triggers even when the schema had no table (or no tracked
/// table) before. A table beside the counter table, so the probes' reads of
/// the counters never see it.
pub const SCHEMA_TABLE: &str = "schemas";
/// The `tbl` value of the rows sluice bumps itself (TRUNCATE, DDL, ...).
pub const GLOBAL_ROW: &str = "*";
/// The generation row (see `state::EPOCH_ROW`).
pub use super::state::EPOCH_ROW;
/// Largest accepted `slots` (the config enforces the same range).
pub const MAX_SLOTS: u16 = 1024;
/// MySQL/MariaDB identifiers are at most 64 characters.
const MAX_NAME_CHARS: usize = 64;
/// Characters of the table name kept in a shortened trigger name:
/// `sluice_ai_` (10) + prefix (45) + `_` (1) + 8 hex digits = 64.
const SHORT_PREFIX_CHARS: usize = MAX_NAME_CHARS - 10 - 1 - 8;
/// `CREATE/DROP TRIGGER` wait for an exclusive metadata lock on the table;
/// the server default (`lock_wait_timeout` = 1 day) would let one long
/// transaction stall the install and every query queued behind it.
pub const LOCK_WAIT_TIMEOUT_SECS: u32 = 10;
/// Rows per `INSERT IGNORE` statement.
const ROWS_PER_INSERT: usize = 1000;
/// Schemas that are never tracked (beside the counter schema).
const SYSTEM_SCHEMAS: &[&str] = &["mysql", "information_schema", "performance_schema", "sys"];

// ---------------------------------------------------------------------------
// install / uninstall / status / tracked_tables
// ---------------------------------------------------------------------------

/// Creates the counter table and its rows, and the sluice triggers of every
/// base table of `db` that lacks them; replaces sluice triggers whose body
/// differs (other slot count, other counter schema, renamed table) and drops
/// stale ones. Triggers that are not sluice's are never touched. Idempotent:
/// a second run changes nothing. Leaves `conn` with utf8mb4, a
/// `lock_wait_timeout` of 10 s and without NO_BACKSLASH_ESCAPES.
pub async fn install(
    conn: &mut Conn,
    counter_schema: &str,
    db: &str,
    slots: u16,
) -> Result<Report, TriggerError> {
    install_in(conn, counter_schema, db, slots, None).await
}

/// [`install`] for some tables of `db` only (`freshness.auto_install`):
/// the tables of `only` that exist get their triggers and rows; other
/// tables' triggers and rows are left alone (no stale drops elsewhere, no
/// orphan deletion), so it never undoes what another install did.
pub async fn install_tables(
    conn: &mut Conn,
    counter_schema: &str,
    db: &str,
    slots: u16,
    only: &HashSet<String>,
) -> Result<Report, TriggerError> {
    install_in(conn, counter_schema, db, slots, Some(only)).await
}

/// Installs and uninstalls of one counter schema run one at a time, under
/// a server-wide named lock: an auto-install that read the list of named
/// schemas before an `uninstall` removed a name must not put the triggers
/// back after it dropped them (it checks the name again under the lock).
fn lock_name(counter_schema: &str) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(counter_schema.as_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sluice_triggers_{hash}")
}

/// Runs `step` holding [`lock_name`]; the lock is released whatever
/// `step` returned (it belongs to the connection, which may be pooled).
async fn locked<T>(
    conn: &mut Conn,
    counter_schema: &str,
    step: impl for<'c> FnOnce(
        &'c mut Conn,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<T, TriggerError>> + Send + 'c>,
    >,
) -> Result<T, TriggerError> {
    let name = lock_name(counter_schema);
    // A caller may give up on `step` (a timeout drops the future): the
    // connection then goes back to its pool holding the lock. A reset
    // (COM_RESET_CONNECTION) on its return releases it (and the session
    // settings `prepare_session` left; installs are rare).
    conn.reset_connection(true);
    let got: Option<Option<i64>> = conn
        .query_first(format!(
            "SELECT GET_LOCK({}, {LOCK_WAIT_TIMEOUT_SECS})",
            quote_literal(&name)
        ))
        .await
        .map_err(sql_error("cannot take the install lock"))?;
    if got.flatten() != Some(1) {
        return Err(TriggerError::Busy(name));
    }
    let result = step(conn).await;
    let released = conn
        .query_drop(format!("DO RELEASE_LOCK({})", quote_literal(&name)))
        .await
        .map_err(sql_error("cannot release the install lock"));
    let value = result?;
    released?;
    Ok(value)
}

async fn install_in(
    conn: &mut Conn,
    counter_schema: &str,
    db: &str,
    slots: u16,
    only: Option<&HashSet<String>>,
) -> Result<Report, TriggerError> {
    if !(1..=MAX_SLOTS).contains(&slots) {
        return Err(TriggerError::Slots(slots));
    }
    check_schema(counter_schema, db)?;
    if !schema_exists(conn, db).await? {
        return Err(TriggerError::NoSuchSchema(db.to_owned()));
    }
    let (counter_schema, db) = (counter_schema.to_owned(), db.to_owned());
    let only = only.cloned();
    locked(conn, &counter_schema.clone(), move |conn| {
        Box::pin(async move { install_locked(conn, &counter_schema, &db, slots, only.as_ref()).await })
    })
    .await
}

async fn install_locked(
    conn: &mut Conn,
    counter_schema: &str,
    db: &str,
    slots: u16,
    only: Option<&HashSet<String>>,
) -> Result<Report, TriggerError> {
    if only.is_some()
        && auto::named_schemas(conn, counter_schema)
            .await?
            .is_some_and(|named| !named.iter().any(|s| s == db))
    {
        // Uninstalled since the scan that chose these tables.
        return Ok(Report {
            db: db.to_owned(),
            ..Report::default()
        });
    }
    prepare_session(conn).await?;
    let version: Option<String> = conn
        .query_first("SELECT VERSION()")
        .await
        .map_err(sql_error("SELECT VERSION()"))?;
    let mariadb = version.is_some_and(|v| v.contains("MariaDB"));
    let mut counters = counter_tables(conn, counter_schema).await?;
    // (Auto-install, `only`: the schema is tracked, so the tables exist and
    // no CREATE privilege is needed, unless they were made by a sluice
    // before the table per event.)
    if only.is_none() || counters != CounterTables::ALL {
        for sql in counter_table_sql(counter_schema) {
            conn.query_drop(sql)
                .await
                .map_err(sql_error("cannot create the counter table"))?;
        }
        counters = CounterTables::ALL;
    }
    if only.is_none() {
        // Named for tracking, so that tables created later get triggers
        // (auto_install) even when `db` has none yet; with the schemas an
        // older sluice tracked by their triggers alone (the list is
        // authoritative once it exists).
        for sql in [
            schema_table_sql(counter_schema),
            mark_schema_sql(counter_schema, db),
            seed_schemas_sql(counter_schema),
        ] {
            conn.query_drop(&sql)
                .await
                .map_err(sql_error("cannot name the schema for tracking"))?;
        }
    }

    let mut all_tables = base_tables(conn, db).await?;
    if let Some(only) = only {
        all_tables.retain(|t| only.contains(t));
    }
    // Non-transactional tables get no triggers (and lose stale ones below).
    let nontx = non_transactional(conn, Some(db)).await?;
    let (tables, skipped_engine): (Vec<String>, Vec<String>) = all_tables
        .iter()
        .cloned()
        .partition(|t| !nontx.contains(&(db.to_owned(), t.clone())));
    let mut report = Report {
        db: db.to_owned(),
        tables: all_tables.len(),
        non_transactional: skipped_engine,
        ..Report::default()
    };
    // Which table and event each trigger name belongs to, in table order.
    let mut plan: Vec<(String, &String, Event)> = Vec::new();
    let mut wanted: HashMap<String, (String, Event)> = HashMap::new();
    for table in &tables {
        for event in Event::ALL {
            let name = trigger_name(event, table);
            plan.push((name.clone(), table, event));
            if let Some((other, _)) = wanted.insert(name.clone(), (table.clone(), event)) {
                return Err(TriggerError::NameClash {
                    name,
                    first: other,
                    second: table.clone(),
                });
            }
        }
    }
    let existing: HashMap<String, Existing> = read_triggers(conn, Some(db))
        .await?
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect();
    for (name, table, event) in &plan {
        if let Some(t) = existing.get(name).filter(|t| !t.is_sluice()) {
            return Err(TriggerError::NameTaken {
                db: db.to_owned(),
                name: t.name.clone(),
                table: format!("{table} ({})", event.keyword()),
            });
        }
    }

    // Rows first: a trigger created below must find its rows at once.
    let mut keys = vec![GLOBAL_ROW.to_owned()];
    keys.extend(tables.iter().map(|t| counter_key(db, t)));
    for sql in counter_rows_sql(counter_schema, &keys, slots) {
        report.rows_inserted += affected_rows(conn, &sql, "cannot create the counter rows").await?;
    }

    // Stale sluice triggers: not wanted under their name (table renamed or
    // dropped and recreated under another name).
    // (With `only`: stale triggers of those tables only.)
    for t in existing.values().filter(|t| {
        t.is_sluice() && !wanted.contains_key(&t.name) && only.is_none_or(|o| o.contains(&t.table))
    }) {
        if drop_trigger(conn, db, &t.name, &t.table, &mut report).await? {
            report.dropped.push(t.name.clone());
        }
    }
    for (name, table, event) in &plan {
        let (name, table) = (name.as_str(), table.as_str());
        let current = existing.get(name);
        let what = format!("CREATE TRIGGER {name}");
        let done = match current {
            // (A body of a previous form is replaced: it counts the same
            // writes, into rows that wait on each other.)
            Some(t)
                if t.table == table
                    && t.event == Some(*event)
                    && t.sluice_body(counter_schema) == Some((slots, BodyKind::Current)) =>
            {
                report.unchanged += 1;
                continue;
            }
            // Same table: replaced in one statement, so no write slips
            // through between a DROP and a CREATE.
            Some(t) if mariadb && t.table == table => {
                let sql = create_trigger(counter_schema, db, table, slots, *event, true);
                per_table(conn, &sql, &what, table, &mut report).await?
            }
            Some(_) => {
                drop_trigger(conn, db, name, table, &mut report).await?
                    && per_table(
                        conn,
                        &create_trigger(counter_schema, db, table, slots, *event, false),
                        &what,
                        table,
                        &mut report,
                    )
                    .await?
            }
            None => {
                // OR REPLACE on MariaDB: another installer (a sluice's
                // auto_install, a second `triggers install`) may create the
                // same trigger between our read and this statement; its body
                // is the same or ours is the one wanted.
                let sql = create_trigger(counter_schema, db, table, slots, *event, mariadb);
                per_table(conn, &sql, &what, table, &mut report).await?
            }
        };
        if done {
            match current {
                Some(_) => report.replaced.push(name.to_owned()),
                None => report.created.push(name.to_owned()),
            }
        }
    }

    // Rows of tables gone from the db (renamed, dropped) are bumped by no
    // trigger. Rows beyond the slot count stay: they are the rows of
    // sluice's own connections (`slots + @sluice_slot`, see
    // `sql::trigger_body`), and a counter that stays never goes down.
    if only.is_none() {
        let current: Vec<String> = tables.iter().map(|t| counter_key(db, t)).collect();
        let orphans = unused_rows(conn, counter_schema, db, &current).await?;
        report.rows_deleted += delete_rows(conn, counter_schema, counters, &orphans).await?;
    }

    if !(report.created.is_empty() && report.replaced.is_empty() && report.dropped.is_empty()) {
        // Whoever compares the `*` rows now waits for replicas to pass the
        // install point (writes in a DROP/CREATE window are before it).
        conn.query_drop(bump_global_sql(counter_schema, slots))
            .await
            .map_err(sql_error("cannot bump the `*` counter rows"))?;
    }
    if !(report.created.is_empty() && report.replaced.is_empty() && report.dropped.is_empty())
        || report.rows_deleted > 0
    {
        // The tracked set or the slot count changed: a new generation, so
        // every sluice notices within one probe.
        conn.query_drop(new_epoch_sql(counter_schema, random_epoch()))
            .await
            .map_err(sql_error("cannot set the counter generation"))?;
    }
    finish(report)
}

/// Keys of `db`'s counter rows that neither `keep` nor any sluice trigger
/// (in any schema) uses.
async fn unused_rows(
    conn: &mut Conn,
    counter_schema: &str,
    db: &str,
    keep: &[String],
) -> Result<Vec<String>, TriggerError> {
    let mut in_use: HashSet<String> = read_triggers(conn, None)
        .await?
        .iter()
        .filter(|t| t.is_sluice())
        .map(|t| counter_key(&t.schema, &t.table))
        .collect();
    in_use.extend(keep.iter().cloned());
    let prefix = format!("{db}.");
    let mut keys: Vec<String> = row_coverage(conn, counter_schema, Some(db))
        .await?
        .into_keys()
        .filter(|k| k.starts_with(&prefix) && !in_use.contains(k))
        .collect();
    keys.sort();
    Ok(keys)
}

/// Deletes the rows of `keys`.
async fn delete_rows(
    conn: &mut Conn,
    counter_schema: &str,
    tables: CounterTables,
    keys: &[String],
) -> Result<u64, TriggerError> {
    let mut deleted = 0;
    if keys.is_empty() {
        return Ok(0);
    }
    for event in Event::ALL.into_iter().filter(|e| tables.has(*e)) {
        for chunk in keys.chunks(ROWS_PER_INSERT) {
            let list: Vec<String> = chunk.iter().map(|k| quote_literal(k)).collect();
            let sql = format!(
                "DELETE FROM {}.{} WHERE tbl IN ({})",
                quote_ident(counter_schema),
                quote_ident(event.counter_table()),
                list.join(", ")
            );
            deleted += affected_rows(conn, &sql, "cannot delete counter rows").await?;
        }
    }
    Ok(deleted)
}

/// Runs a DML statement on the counter table and returns the affected rows.
/// Deadlocks with concurrent writers of the same rows (other installs, the
/// bumps of the `*` rows) are retried: the statement stands alone.
async fn affected_rows(conn: &mut Conn, sql: &str, context: &str) -> Result<u64, TriggerError> {
    let mut attempt = 1;
    loop {
        let result = match conn.query_iter(sql).await {
            Ok(result) => result,
            Err(e) if server_code(&e) == Some(1213) && attempt < 5 => {
                attempt += 1;
                continue;
            }
            Err(e) => return Err(sql_error(context)(e)),
        };
        let affected = result.affected_rows();
        result.drop_result().await.map_err(sql_error(context))?;
        return Ok(affected);
    }
}

/// Drops sluice's triggers in `db` (never others) and the db's counter rows
/// that no remaining sluice trigger uses. The counter table stays.
pub async fn uninstall(conn: &mut Conn, counter_schema: &str, db: &str) -> Result<Report, TriggerError> {
    if !schema_exists(conn, db).await? {
        return Err(TriggerError::NoSuchSchema(db.to_owned()));
    }
    let (counter_schema, db) = (counter_schema.to_owned(), db.to_owned());
    locked(conn, &counter_schema.clone(), move |conn| {
        Box::pin(async move { uninstall_locked(conn, &counter_schema, &db).await })
    })
    .await
}

async fn uninstall_locked(conn: &mut Conn, counter_schema: &str, db: &str) -> Result<Report, TriggerError> {
    prepare_session(conn).await?;
    // The name first: a sluice's auto_install that sees the schema named
    // while its triggers are being dropped would put them back.
    unmark_schema(conn, counter_schema, db).await?;
    let mut report = Report {
        db: db.to_owned(),
        tables: base_tables(conn, db).await?.len(),
        ..Report::default()
    };
    for t in read_triggers(conn, Some(db))
        .await?
        .into_iter()
        .filter(Existing::is_sluice)
    {
        if drop_trigger(conn, db, &t.name, &t.table, &mut report).await? {
            report.dropped.push(t.name);
        }
    }
    let tables = counter_tables(conn, counter_schema).await?;
    if tables.has(Event::Insert) {
        let keys = unused_rows(conn, counter_schema, db, &[]).await?;
        report.rows_deleted = delete_rows(conn, counter_schema, tables, &keys).await?;
        if !report.dropped.is_empty() || report.rows_deleted > 0 {
            conn.query_drop(new_epoch_sql(counter_schema, random_epoch()))
                .await
                .map_err(sql_error("cannot set the counter generation"))?;
        }
    }
    finish(report)
}

/// Removes `db` from the schemas named for tracking (nothing when the list
/// does not exist: installed by an older sluice).
async fn unmark_schema(conn: &mut Conn, counter_schema: &str, db: &str) -> Result<(), TriggerError> {
    let sql = format!(
        "DELETE FROM {}.{} WHERE db = {}",
        quote_ident(counter_schema),
        quote_ident(SCHEMA_TABLE),
        quote_literal(db)
    );
    match conn.query_drop(&sql).await {
        Err(e) if matches!(server_code(&e), Some(1146 | 1049)) => Ok(()),
        r => r.map_err(sql_error("cannot remove the schema from the tracked list")),
    }
}

/// The sluice triggers, other triggers and counter rows of every base table
/// of `db`, and the tables without any sluice trigger.
pub async fn status(conn: &mut Conn, counter_schema: &str, db: &str) -> Result<Status, TriggerError> {
    if !schema_exists(conn, db).await? {
        return Err(TriggerError::NoSuchSchema(db.to_owned()));
    }
    let counter_tables = counter_tables(conn, counter_schema).await?;
    let counter_table_exists = counter_tables.has(Event::Insert);
    let tables = base_tables(conn, db).await?;
    let triggers = read_triggers(conn, Some(db)).await?;
    let coverage = if counter_table_exists {
        row_coverage(conn, counter_schema, Some(db)).await?
    } else {
        HashMap::new()
    };
    let cascades = cascade_parents(conn, Some(db)).await?;
    let nontx = non_transactional(conn, Some(db)).await?;
    let mut status = Status {
        db: db.to_owned(),
        counter_schema: counter_schema.to_owned(),
        counter_table_exists,
        counter_tables,
        tables: Vec::new(),
        untracked: Vec::new(),
        named: auto::named_schemas(conn, counter_schema)
            .await?
            .is_some_and(|named| named.iter().any(|s| s == db)),
    };
    for table in tables {
        let on_table: Vec<&Existing> = triggers.iter().filter(|t| t.table == table).collect();
        let state = |event: Event| {
            let name = trigger_name(event, &table);
            match on_table.iter().find(|t| t.name == name) {
                Some(t) if t.is_sluice() => match t.sluice_body(counter_schema) {
                    Some((slots, BodyKind::Current)) if t.event == Some(event) => TriggerState::Ok { slots },
                    Some((slots, _)) if t.event == Some(event) => TriggerState::Previous { slots },
                    _ => TriggerState::Outdated,
                },
                // E.g. `sluice_ai_old` on a table renamed from `old`.
                _ if on_table.iter().any(|t| t.is_sluice() && t.event == Some(event)) => {
                    TriggerState::Outdated
                }
                _ => TriggerState::Missing,
            }
        };
        let (insert, update, delete) = (state(Event::Insert), state(Event::Update), state(Event::Delete));
        let key = counter_key(db, &table);
        let needed = [insert, update, delete]
            .iter()
            .filter_map(|s| match s {
                TriggerState::Ok { slots } | TriggerState::Previous { slots } => Some(u64::from(*slots)),
                _ => None,
            })
            .max();
        let rows_ok = match (needed, coverage.get(&key)) {
            (Some(needed), Some(Some(have))) => *have >= needed,
            _ => false,
        };
        let t = TableStatus {
            user_triggers: on_table
                .iter()
                .filter(|t| !t.is_sluice())
                .map(|t| t.name.clone())
                .collect(),
            cascaded_from: cascades
                .get(&key)
                .map(|p| p.iter().cloned().collect())
                .unwrap_or_default(),
            non_transactional: nontx.contains(&(db.to_owned(), table.clone())),
            table,
            insert,
            update,
            delete,
            rows_ok,
        };
        if !t.has_any_sluice_trigger() {
            status.untracked.push(t.table.clone());
        }
        status.tables.push(t);
    }
    Ok(status)
}

/// `db.table` (names exactly as stored, see the module docs) of every table,
/// in every schema but the counter schema, that has all three sluice
/// triggers for `counter_schema` and its counter rows, and that no foreign
/// key cascades into from another table (cascaded changes fire no trigger).
/// Reads of any other table must go to the master. An empty set when the
/// counter table does not exist.
pub async fn tracked_tables(conn: &mut Conn, counter_schema: &str) -> Result<HashSet<String>, TriggerError> {
    tracked_tables_reusing(conn, counter_schema, None)
        .await
        .map(|(set, _, _)| set)
}

/// The cascading foreign keys read for a set of tables with triggers.
#[derive(Debug, Clone, Default)]
pub struct CascadeCache {
    trigger_tables: BTreeSet<String>,
    parents: HashMap<String, BTreeSet<String>>,
    /// `db.table` of the tables with triggers whose engine is not transactional.
    non_transactional: HashSet<String>,
}

/// [`tracked_tables`], reading `information_schema.REFERENTIAL_CONSTRAINTS`
/// again only when the set of tables with triggers differs from `cached`'s
/// (foreign keys change by DDL, after which the caller passes `None`).
/// MariaDB 10.11 was seen crashing in that query under load, so the
/// monitor's periodic refresh avoids it. Also which counter tables exist:
/// what the probes must read for this set.
pub async fn tracked_tables_reusing(
    conn: &mut Conn,
    counter_schema: &str,
    cached: Option<CascadeCache>,
) -> Result<(HashSet<String>, Option<CascadeCache>, CounterTables), TriggerError> {
    // The counter tables before the triggers: a trigger created in between
    // may bump a table not seen here, and its table is then left out.
    let tables = counter_tables(conn, counter_schema).await?;
    if !tables.has(Event::Insert) {
        return Ok((HashSet::new(), None, tables));
    }
    let mut slots_by_table: HashMap<String, (u8, u16)> = HashMap::new();
    for t in read_triggers(conn, None).await? {
        if t.schema == counter_schema {
            continue;
        }
        let (Some((slots, kind)), Some(event)) = (t.sluice_body(counter_schema), t.event) else {
            continue;
        };
        // Its counts land in a table the probes read.
        if tables.has(kind.counted_in(event)) {
            let entry = slots_by_table
                .entry(counter_key(&t.schema, &t.table))
                .or_default();
            entry.0 |= 1 << (event as u8);
            entry.1 = entry.1.max(slots);
        }
    }
    let coverage = row_coverage(conn, counter_schema, None).await?;
    let trigger_tables: BTreeSet<String> = slots_by_table.keys().cloned().collect();
    let cache = match cached {
        Some(c) if c.trigger_tables == trigger_tables => c,
        _ => {
            let nontx = non_transactional(conn, None).await?;
            CascadeCache {
                non_transactional: nontx
                    .iter()
                    .map(|(db, t)| counter_key(db, t))
                    .filter(|k| trigger_tables.contains(k))
                    .collect(),
                trigger_tables,
                parents: cascade_parents(conn, None).await?,
            }
        }
    };
    let set = slots_by_table
        .into_iter()
        .filter(|(key, (events, slots))| {
            let rows_ok = coverage
                .get(key)
                .is_some_and(|c| c.is_some_and(|n| n >= u64::from(*slots)));
            *events == 0b111
                && rows_ok
                && !cache.parents.contains_key(key)
                && !cache.non_transactional.contains(key)
        })
        .map(|(key, _)| key)
        .collect();
    Ok((set, Some(cache), tables))
}
