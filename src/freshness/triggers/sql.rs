//! SQL generation: pure functions, no I/O.

use super::{
    COUNTER_TABLE, DELETE_COUNTER_TABLE, EPOCH_ROW, GLOBAL_ROW, MAX_NAME_CHARS, MAX_SLOTS, ROWS_PER_INSERT,
    SCHEMA_TABLE, SHORT_PREFIX_CHARS, UPDATE_COUNTER_TABLE,
};
use sha1::{Digest, Sha1};

/// Removes NO_BACKSLASH_ESCAPES from the session: the trigger bodies escape
/// backslashes in the table-name literal, which that mode would keep as two.
pub(super) const SQL_MODE_WITHOUT_NO_BACKSLASH_ESCAPES: &str = "SET SESSION sql_mode = TRIM(BOTH ',' FROM \
     REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','))";

/// A write event with a sluice trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    // The values index the event's counter rows in a probe (see
    // `counters_select_sql`) and its bit in `CounterTables`.
    Insert = 0,
    Update = 1,
    Delete = 2,
}

impl Event {
    pub const ALL: [Event; 3] = [Event::Insert, Event::Update, Event::Delete];

    /// As written in `CREATE TRIGGER` and in `information_schema.TRIGGERS`.
    pub fn keyword(self) -> &'static str {
        match self {
            Event::Insert => "INSERT",
            Event::Update => "UPDATE",
            Event::Delete => "DELETE",
        }
    }

    /// The trigger name prefix: `sluice_ai_`, `sluice_au_`, `sluice_ad_`.
    pub fn name_prefix(self) -> &'static str {
        match self {
            Event::Insert => "sluice_ai_",
            Event::Update => "sluice_au_",
            Event::Delete => "sluice_ad_",
        }
    }

    /// The counter table this event's trigger bumps: one table per event.
    /// Three triggers of one table that wrote the same table made
    /// `LOCK TABLES t WRITE` followed by a write to `t` fail with 1442 ("Can't
    /// update table 'counters' in stored function/trigger because it is
    /// already used by statement which invoked this stored function/trigger",
    /// MariaDB 10.11): the lock prelocks the counter table once per trigger,
    /// and mysqldump's restores, among others, write under such locks. With
    /// a table per event each trigger's table is prelocked once. The `*` and
    /// generation rows live in the INSERT table ([`COUNTER_TABLE`]).
    pub fn counter_table(self) -> &'static str {
        match self {
            Event::Insert => COUNTER_TABLE,
            Event::Update => UPDATE_COUNTER_TABLE,
            Event::Delete => DELETE_COUNTER_TABLE,
        }
    }

    pub(super) fn from_keyword(keyword: &str) -> Option<Event> {
        Event::ALL
            .into_iter()
            .find(|e| e.keyword().eq_ignore_ascii_case(keyword))
    }
}

/// An identifier in backticks, backticks doubled.
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// A string literal: quotes doubled, backslashes escaped (the session must
/// not use NO_BACKSLASH_ESCAPES; `install` and `script` make sure of it).
pub fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

/// The `tbl` value of a table's counter rows: `db.table`.
pub fn counter_key(db: &str, table: &str) -> String {
    format!("{db}.{table}")
}

/// `sluice_ai_<table>` etc.; when that exceeds 64 characters, the prefix
/// plus the first 45 characters of the table name, `_`, and the first 8 hex
/// digits of SHA-1(table name): deterministic, unique in practice.
pub fn trigger_name(event: Event, table: &str) -> String {
    let full = format!("{}{table}", event.name_prefix());
    if full.chars().count() <= MAX_NAME_CHARS {
        return full;
    }
    let digest = Sha1::digest(table.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let prefix: String = table.chars().take(SHORT_PREFIX_CHARS).collect();
    format!("{}{prefix}_{hash}", event.name_prefix())
}

/// The single statement a sluice trigger runs (what follows `FOR EACH ROW`),
/// into its event's counter table ([`Event::counter_table`]):
///
/// ```sql
/// INSERT INTO `sluice`.`counters` (tbl, slot, n) VALUES ('shop.orders',
///   IFNULL(16 + NULLIF(LEAST(CONV(@sluice_slot, 10, 10), 4096), 4096), CONNECTION_ID() % 16), 1)
///   ON DUPLICATE KEY UPDATE n = n + 1
/// ```
///
/// Why an upsert and not `UPDATE ... WHERE tbl = ... AND slot = ...` (the
/// body before issue 11, [`BodyKind::Update`]): the row exists (install
/// creates rows `0..slots`), so the insert finds the duplicate primary key
/// and updates it, taking the same one record lock (`X, REC_NOT_GAP`: no gap
/// lock), but the server resolves no WHERE clause and runs no range
/// optimizer for it, which took about 30 % of the old trigger's CPU: the
/// triggers' server CPU overhead measured 28-46 % lower
/// (`benches/trigger_cost.sh`, variants `current` and `odku`; docs/guarantees.md, "The
/// triggers' cost"). A missing row is created with n = 1 instead of the mark
/// being lost.
///
/// Which row (issue 40): the row's lock is held until COMMIT, so two open
/// transactions that bump the same row wait for each other (and two that
/// bump two tables' rows in opposite orders deadlock). A connection sluice
/// opened carries `@sluice_slot`, a number `k` no other live sluice
/// connection to that server holds (`backend::slot`), and bumps row
/// `slots + k`: sluice's own writers never share a row. Writers that bypass
/// sluice (no variable) fall back to `CONNECTION_ID() % slots`, rows
/// `0..slots`, which sluice's never use. Any other value of the variable (a
/// client's own `SET @sluice_slot = 'x'`) cannot make the statement fail:
/// `CONV` turns every value into digits without a warning, and a result out
/// of `0..4096` falls back to the connection id. Freshness does not depend
/// on the choice: the probes read every row of the table, whichever
/// exists, and compare them one by one (`state::Counters::covers`).
pub fn trigger_body(counter_schema: &str, event: Event, db: &str, table: &str, slots: u16) -> String {
    format!(
        "{}{}{UPSERT_SUFFIX}",
        upsert_prefix(
            counter_schema,
            event.counter_table(),
            &quote_literal(&counter_key(db, table))
        ),
        slot_expr(slots.max(1))
    )
}

/// The user variable sluice sets on its backend connections (see
/// [`trigger_body`]).
pub const SLOT_VARIABLE: &str = "@sluice_slot";
/// Slots sluice assigns per server: `0..SLUICE_SLOTS`.
pub const SLUICE_SLOTS: u16 = 4096;

/// The slot a trigger bumps (see [`trigger_body`]).
fn slot_expr(slots: u16) -> String {
    format!(
        "IFNULL({slots} + NULLIF(LEAST(CONV({SLOT_VARIABLE}, 10, 10), {SLUICE_SLOTS}), {SLUICE_SLOTS}), \
         CONNECTION_ID() % {slots})"
    )
}

/// The body forms sluice recognises as its own. Every form counts every
/// write of its table; all but `Current` are replaced by `install`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyKind {
    /// [`trigger_body`]: what `install` creates.
    Current,
    /// Before issue 40: the upsert into the event's table with
    /// `CONNECTION_ID() % N` alone.
    Striped,
    /// Before the table per event: the upsert of every event into
    /// [`COUNTER_TABLE`].
    Shared,
    /// Before issue 11: `UPDATE ... SET n = n + 1 WHERE tbl = ... AND slot =
    /// CONNECTION_ID() % N` into [`COUNTER_TABLE`]; a missing row loses the
    /// bump, so its table counts only while rows `0..N` exist.
    Update,
}

impl BodyKind {
    /// The event whose counter table a body of this form bumps for `event`.
    pub(super) fn counted_in(self, event: Event) -> Event {
        match self {
            BodyKind::Current | BodyKind::Striped => event,
            BodyKind::Shared | BodyKind::Update => Event::Insert,
        }
    }

    /// The counter table a body of this form bumps for `event`.
    #[cfg(test)]
    pub(super) fn counter_table(self, event: Event) -> &'static str {
        self.counted_in(event).counter_table()
    }
}

/// What follows the slot expression in an upsert body.
const UPSERT_SUFFIX: &str = ", 1) ON DUPLICATE KEY UPDATE n = n + 1";

/// An upsert body into `counter_table` up to the slot expression.
fn upsert_prefix(counter_schema: &str, counter_table: &str, literal: &str) -> String {
    format!(
        "INSERT INTO {}.{} (tbl, slot, n) VALUES ({literal}, ",
        quote_ident(counter_schema),
        quote_ident(counter_table)
    )
}

/// The oldest body ([`BodyKind::Update`]) up to the slot count (it ends there).
pub(super) fn previous_prefix(counter_schema: &str, literal: &str) -> String {
    format!(
        "UPDATE {}.{} SET n = n + 1 WHERE tbl = {literal} AND slot = CONNECTION_ID() % ",
        quote_ident(counter_schema),
        quote_ident(COUNTER_TABLE)
    )
}

/// The slot count and form of `body` if it is a sluice body of `event` for
/// the key written as `literal` and `counter_schema`: exactly one of the
/// forms, with a canonical slot count in 1..=1024.
pub(super) fn parse_body(
    body: &str,
    counter_schema: &str,
    event: Event,
    literal: &str,
) -> Option<(u16, BodyKind)> {
    let upsert = |table: &str| {
        body.strip_prefix(&upsert_prefix(counter_schema, table, literal))
            .and_then(|rest| rest.strip_suffix(UPSERT_SUFFIX))
    };
    let (digits, kind) = if let Some(expr) = upsert(event.counter_table()) {
        match expr.strip_prefix("CONNECTION_ID() % ") {
            Some(digits) => (digits, BodyKind::Striped),
            None => {
                // The current expression ends with `% N)`; it must be exactly
                // the one `slot_expr(N)` writes.
                let digits = expr.strip_suffix(')')?.rsplit("% ").next()?;
                let slots: u16 = digits.parse().ok()?;
                if expr != slot_expr(slots) {
                    return None;
                }
                (digits, BodyKind::Current)
            }
        }
    } else if let Some(expr) = upsert(COUNTER_TABLE) {
        (expr.strip_prefix("CONNECTION_ID() % ")?, BodyKind::Shared)
    } else {
        (
            body.strip_prefix(&previous_prefix(counter_schema, literal))?,
            BodyKind::Update,
        )
    };
    let slots: u16 = digits.parse().ok()?;
    let canonical = slots.to_string() == digits;
    (canonical && (1..=MAX_SLOTS).contains(&slots)).then_some((slots, kind))
}

/// Does `body` look like either sluice form (for some table and counter
/// schema)? Used with the trigger's name to tell sluice's triggers from
/// others.
pub(super) fn looks_like_sluice_body(body: &str) -> bool {
    let previous = body.starts_with("UPDATE `") && body.contains("` SET n = n + 1 WHERE tbl = '");
    let current = body.starts_with("INSERT INTO `")
        && body.contains("` (tbl, slot, n) VALUES ('")
        && body.ends_with(UPSERT_SUFFIX);
    previous || current
}

/// `CREATE DATABASE IF NOT EXISTS` and `CREATE TABLE IF NOT EXISTS` for the
/// counter tables (one per event, see [`Event::counter_table`]). The tables
/// are utf8mb4 with a binary collation whatever the server's defaults: table
/// names are case-sensitive and may be non-ASCII.
pub fn counter_table_sql(counter_schema: &str) -> Vec<String> {
    let schema = quote_ident(counter_schema);
    let mut out = vec![format!("CREATE DATABASE IF NOT EXISTS {schema}")];
    for event in Event::ALL {
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {schema}.{} (\n  \
             tbl  VARCHAR(192) NOT NULL COMMENT 'db.table the writes went to, or * for writes sluice bumps itself',\n  \
             slot SMALLINT UNSIGNED NOT NULL COMMENT 'CONNECTION_ID() % slots, or slots + @sluice_slot on a connection of sluice: spreads row locks',\n  \
             n    BIGINT UNSIGNED NOT NULL DEFAULT 0,\n  \
             PRIMARY KEY (tbl, slot)\n\
             ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT '{} events (sluice)'",
            quote_ident(event.counter_table()),
            event.keyword()
        ));
    }
    out
}

/// `CREATE TABLE IF NOT EXISTS` for the list of schemas named for tracking
/// (see [`SCHEMA_TABLE`]), in the counter schema (which must exist).
pub fn schema_table_sql(counter_schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {}.{} (\n  \
         db VARCHAR(64) NOT NULL PRIMARY KEY COMMENT 'a schema `sluice triggers install` was run on'\n\
         ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote_ident(counter_schema),
        quote_ident(SCHEMA_TABLE)
    )
}

/// Names `db` for tracking: with `freshness.auto_install` on, its tables get
/// triggers when they are created, even when `db` has no table yet.
pub fn mark_schema_sql(counter_schema: &str, db: &str) -> String {
    format!(
        "INSERT IGNORE INTO {}.{} (db) VALUES ({})",
        quote_ident(counter_schema),
        quote_ident(SCHEMA_TABLE),
        quote_literal(db)
    )
}

/// Names every schema that already has a sluice trigger counting into this
/// counter table (installed before the list existed), so that creating the
/// list takes no schema's auto-install away. Idempotent.
pub fn seed_schemas_sql(counter_schema: &str) -> String {
    // The common beginning of each body form (see `parse_body`) as a LIKE
    // pattern: `_` and `%` of the counter schema's name escaped.
    let counter = format!("{}.{}", quote_ident(counter_schema), quote_ident(COUNTER_TABLE));
    let like = |prefix: String| {
        let pattern = prefix
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        quote_literal(&format!("{pattern}%"))
    };
    format!(
        "INSERT IGNORE INTO {}.{} (db) SELECT DISTINCT TRIGGER_SCHEMA FROM information_schema.TRIGGERS \
         WHERE TRIGGER_NAME LIKE 'sluice\\_a%' AND (ACTION_STATEMENT LIKE {} OR ACTION_STATEMENT LIKE {}) \
         AND TRIGGER_SCHEMA <> {}",
        quote_ident(counter_schema),
        quote_ident(SCHEMA_TABLE),
        like(format!("INSERT INTO {counter} (tbl, slot, n) VALUES (")),
        like(format!("UPDATE {counter} SET n = n + 1 WHERE tbl = ")),
        quote_literal(counter_schema)
    )
}

/// `INSERT IGNORE` statements creating rows `0..slots` for each key (a
/// `db.table` or [`GLOBAL_ROW`]), at most 1000 rows per statement: a table's
/// rows in every event's counter table, the `*` rows in [`COUNTER_TABLE`].
pub fn counter_rows_sql(counter_schema: &str, keys: &[String], slots: u16) -> Vec<String> {
    let mut out = Vec::new();
    for event in Event::ALL {
        let rows: Vec<String> = keys
            .iter()
            .filter(|key| event == Event::Insert || key.as_str() != GLOBAL_ROW)
            .flat_map(|key| {
                let literal = quote_literal(key);
                (0..slots.max(1)).map(move |slot| format!("({literal}, {slot})"))
            })
            .collect();
        out.extend(rows.chunks(ROWS_PER_INSERT).map(|chunk| {
            format!(
                "INSERT IGNORE INTO {}.{} (tbl, slot) VALUES {}",
                quote_ident(counter_schema),
                quote_ident(event.counter_table()),
                chunk.join(", ")
            )
        }));
    }
    out
}

/// The three `CREATE TRIGGER` statements of one table (INSERT, UPDATE,
/// DELETE). `slots` must be 1..=1024 (0 is treated as 1).
pub fn trigger_sql(counter_schema: &str, db: &str, table: &str, slots: u16) -> Vec<String> {
    Event::ALL
        .into_iter()
        .map(|event| create_trigger(counter_schema, db, table, slots, event, false))
        .collect()
}

pub(super) fn create_trigger(
    counter_schema: &str,
    db: &str,
    table: &str,
    slots: u16,
    event: Event,
    replace: bool,
) -> String {
    format!(
        "CREATE {}TRIGGER {}.{} AFTER {} ON {}.{} FOR EACH ROW {}",
        if replace { "OR REPLACE " } else { "" },
        quote_ident(db),
        quote_ident(&trigger_name(event, table)),
        event.keyword(),
        quote_ident(db),
        quote_ident(table),
        trigger_body(counter_schema, event, db, table, slots)
    )
}

pub(super) fn bump_global_sql(counter_schema: &str, slots: u16) -> String {
    format!(
        "UPDATE {}.{} SET n = n + 1 WHERE tbl = {} AND slot = CONNECTION_ID() % {}",
        quote_ident(counter_schema),
        quote_ident(COUNTER_TABLE),
        quote_literal(GLOBAL_ROW),
        slots.max(1)
    )
}

/// Gives the counters a new generation (see [`EPOCH_ROW`]): every sluice
/// compares counters afresh and re-reads the tables with triggers at its
/// next probe. `value` should be random (two installs must not agree).
pub fn new_epoch_sql(counter_schema: &str, value: u64) -> String {
    format!(
        "INSERT INTO {}.{} (tbl, slot, n) VALUES ({}, 0, {value}) ON DUPLICATE KEY UPDATE n = VALUES(n)",
        quote_ident(counter_schema),
        quote_ident(COUNTER_TABLE),
        quote_literal(EPOCH_ROW),
    )
}

/// A random generation value (never 0).
pub fn random_epoch() -> u64 {
    use rand::Rng;
    rand::rng().random_range(1..i64::MAX as u64)
}

/// Text safe inside a `-- ` comment line: no line breaks or other control
/// characters (a table name with a newline must not end the comment).
pub(super) fn comment_safe(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A complete SQL script (for `sluice triggers sql`) that installs the
/// counter table, its rows and the triggers of `tables` in `db`. No
/// `DELIMITER` is needed: every trigger body is a single statement, so the
/// `mariadb`/`mysql` client runs the script as is. Re-running it is safe
/// (each trigger is dropped if present and created again).
pub fn script(counter_schema: &str, db: &str, tables: &[String], slots: u16) -> String {
    let slots = slots.clamp(1, MAX_SLOTS);
    let counter = format!("{}.{}", quote_ident(counter_schema), quote_ident(COUNTER_TABLE));
    let mut out = String::new();
    let mut line = |text: &str| {
        out.push_str(text);
        out.push('\n');
    };
    line(&format!(
        "-- sluice freshness triggers for schema {} ({} table{}, {slots} slots, counter tables {}, {}, {}).",
        comment_safe(&quote_ident(db)),
        tables.len(),
        if tables.len() == 1 { "" } else { "s" },
        comment_safe(&counter),
        comment_safe(&quote_ident(UPDATE_COUNTER_TABLE)),
        comment_safe(&quote_ident(DELETE_COUNTER_TABLE))
    ));
    line(&format!(
        "-- Generated by `sluice triggers sql --schema {}`; run it on the master:",
        comment_safe(db)
    ));
    line("--   mariadb -h MASTER -u ADMIN -p < this.sql");
    line("-- Safe to run again. Between a DROP TRIGGER and its CREATE, writes to that table");
    line("-- bump no counter: run it when the table is quiet, or use `sluice triggers install`,");
    line("-- which replaces a trigger in one statement on MariaDB. The last statement bumps");
    line("-- the `*` rows so that sluice compares replicas past this point.");
    line("SET NAMES utf8mb4;");
    line(&format!("{SQL_MODE_WITHOUT_NO_BACKSLASH_ESCAPES};"));
    line("");
    line("-- The counter tables (see sql/counter_table.sql), and the schema named for tracking");
    line("-- (with freshness.auto_install, its tables get triggers when they are created).");
    for statement in counter_table_sql(counter_schema) {
        line(&format!("{statement};"));
    }
    line(&format!("{};", schema_table_sql(counter_schema)));
    line(&format!("{};", mark_schema_sql(counter_schema, db)));
    line(&format!("{};", seed_schemas_sql(counter_schema)));
    line("");
    line("-- Counter rows, created now so that triggers only UPDATE (no insert gap locks).");
    let mut keys = vec![GLOBAL_ROW.to_owned()];
    keys.extend(tables.iter().map(|t| counter_key(db, t)));
    for key in &keys {
        for statement in counter_rows_sql(counter_schema, std::slice::from_ref(key), slots) {
            line(&format!("{statement};"));
        }
    }
    for table in tables {
        line("");
        line(&format!(
            "-- {}.{}",
            comment_safe(&quote_ident(db)),
            comment_safe(&quote_ident(table))
        ));
        for event in Event::ALL {
            line(&format!(
                "DROP TRIGGER IF EXISTS {}.{};",
                quote_ident(db),
                quote_ident(&trigger_name(event, table))
            ));
            line(&format!(
                "{};",
                create_trigger(counter_schema, db, table, slots, event, false)
            ));
        }
    }
    line("");
    line(&format!("{};", bump_global_sql(counter_schema, slots)));
    out
}
