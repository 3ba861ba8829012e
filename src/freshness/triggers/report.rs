//! Errors, and what `install`, `uninstall` and `status` report.

use super::sql::{comment_safe, quote_ident};
use super::{CounterTables, Event, MAX_SLOTS};
use std::fmt;

/// Errors of `install`, `uninstall`, `status` and `tracked_tables`.
#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    #[error("`{0}` is sluice's counter schema: its tables are never tracked")]
    CounterSchema(String),
    #[error("`{0}` is a system schema: sluice does not put triggers on it")]
    SystemSchema(String),
    #[error("schema `{0}` does not exist on this server")]
    NoSuchSchema(String),
    #[error("slots must be between 1 and {MAX_SLOTS}, not {0}")]
    Slots(u16),
    #[error("tables `{first}` and `{second}` would both get the trigger name `{name}`: rename one")]
    NameClash {
        name: String,
        first: String,
        second: String,
    },
    #[error(
        "trigger `{db}`.`{name}` exists and is not a sluice trigger: rename or drop it so sluice can \
         track table `{table}`"
    )]
    NameTaken { db: String, name: String, table: String },
    #[error("{context}: {source}{}", hint(.source))]
    Sql {
        context: String,
        #[source]
        source: mysql_async::Error,
    },
    #[error("{0}")]
    Incomplete(Box<Report>),
    #[error(
        "another `sluice triggers install`/`uninstall` (or a sluice's auto_install) held the lock \
         `{0}` for 10 s: try again"
    )]
    Busy(String),
}

/// Advice for the errors an operator can fix.
pub(super) fn hint(error: &mysql_async::Error) -> &'static str {
    match server_code(error) {
        Some(1419) => {
            " (with binary logging on, creating triggers needs SUPER, or \
             log_bin_trust_function_creators=1 on the master)"
        }
        Some(1142 | 1044 | 1227) => {
            " (the account needs CREATE, TRIGGER and SELECT on the schema, and CREATE, INSERT, \
             UPDATE and DELETE on the counter schema)"
        }
        Some(1205) => " (a long transaction holds a metadata lock on the table: run the command again later)",
        _ => "",
    }
}

pub(super) fn server_code(error: &mysql_async::Error) -> Option<u16> {
    match error {
        mysql_async::Error::Server(e) => Some(e.code),
        _ => None,
    }
}

pub(super) fn sql_error(context: impl Into<String>) -> impl FnOnce(mysql_async::Error) -> TriggerError {
    let context = context.into();
    move |source| TriggerError::Sql { context, source }
}

/// What `install` or `uninstall` did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub db: String,
    /// Base tables found in `db`.
    pub tables: usize,
    pub created: Vec<String>,
    /// Sluice triggers whose body was out of date (other slot count, other
    /// counter schema, table renamed) and were created again.
    pub replaced: Vec<String>,
    pub dropped: Vec<String>,
    /// Sluice triggers that were already correct.
    pub unchanged: usize,
    pub rows_inserted: u64,
    pub rows_deleted: u64,
    /// Tables dropped while the command ran.
    pub skipped: Vec<String>,
    /// Tables left without triggers because their engine is not
    /// transactional (MyISAM, Aria, MEMORY, ...): reads of them go to the
    /// master.
    pub non_transactional: Vec<String>,
    /// `(trigger, error)`: statements that failed (e.g. a lock wait timeout);
    /// when not empty the command returns [`TriggerError::Incomplete`].
    pub failed: Vec<(String, String)>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "schema `{}`: {} base tables; triggers: {} created, {} replaced, {} dropped, {} unchanged; \
             counter rows: {} inserted, {} deleted",
            self.db,
            self.tables,
            self.created.len(),
            self.replaced.len(),
            self.dropped.len(),
            self.unchanged,
            self.rows_inserted,
            self.rows_deleted
        )?;
        for (what, names) in [
            ("created", &self.created),
            ("replaced", &self.replaced),
            ("dropped", &self.dropped),
        ] {
            if !names.is_empty() {
                writeln!(f, "  {what}: {}", names.join(", "))?;
            }
        }
        if !self.skipped.is_empty() {
            writeln!(
                f,
                "  skipped (table dropped meanwhile): {}",
                self.skipped.join(", ")
            )?;
        }
        if !self.non_transactional.is_empty() {
            writeln!(
                f,
                "  not tracked (engine not transactional, reads go to the master): {}",
                self.non_transactional.join(", ")
            )?;
        }
        for (name, error) in &self.failed {
            writeln!(f, "  FAILED {name}: {error}")?;
        }
        if !self.failed.is_empty() {
            write!(
                f,
                "{} statements failed: run the command again",
                self.failed.len()
            )?;
        }
        Ok(())
    }
}

/// One of a table's three sluice triggers, as found on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerState {
    /// Present, for this table and counter schema, with this slot count.
    Ok {
        slots: u16,
    },
    /// A sluice trigger of an earlier sluice version (the `UPDATE` body):
    /// it counts the same writes into the same rows, so the table stays
    /// tracked; `install` replaces it with the current, cheaper body.
    Previous {
        slots: u16,
    },
    /// A sluice trigger with this name whose body is for another table or
    /// counter schema (e.g. after RENAME TABLE): `install` replaces it.
    Outdated,
    Missing,
}

#[derive(Debug, Clone)]
pub struct TableStatus {
    pub table: String,
    pub insert: TriggerState,
    pub update: TriggerState,
    pub delete: TriggerState,
    /// Counter rows `0..slots` exist for every slot count the triggers use.
    pub rows_ok: bool,
    /// Triggers that are not sluice's (never touched by sluice).
    pub user_triggers: Vec<String>,
    /// `db.table` of parents whose foreign keys cascade into this table:
    /// cascaded changes fire no trigger, so reads of it go to the master.
    pub cascaded_from: Vec<String>,
    /// The table's engine is not transactional: never tracked.
    pub non_transactional: bool,
}

impl TableStatus {
    pub fn state(&self, event: Event) -> TriggerState {
        match event {
            Event::Insert => self.insert,
            Event::Update => self.update,
            Event::Delete => self.delete,
        }
    }

    /// Reads of this table may go to a replica (it is in `tracked_tables`).
    pub fn is_tracked(&self) -> bool {
        let all_ok = Event::ALL.into_iter().all(|e| {
            matches!(
                self.state(e),
                TriggerState::Ok { .. } | TriggerState::Previous { .. }
            )
        });
        all_ok && self.rows_ok && self.cascaded_from.is_empty() && !self.non_transactional
    }

    pub(super) fn has_any_sluice_trigger(&self) -> bool {
        Event::ALL
            .into_iter()
            .any(|e| self.state(e) != TriggerState::Missing)
    }
}

/// What `status` found in one schema.
#[derive(Debug, Clone)]
pub struct Status {
    pub db: String,
    pub counter_schema: String,
    pub counter_table_exists: bool,
    /// Which of the three counter tables (one per event) exist.
    pub counter_tables: CounterTables,
    /// Every base table, by name.
    pub tables: Vec<TableStatus>,
    /// Base tables with no sluice trigger at all (e.g. created after install).
    pub untracked: Vec<String>,
    /// Named for tracking by `install` (see `triggers::SCHEMA_TABLE`): with
    /// `freshness.auto_install`, tables created later get their triggers.
    pub named: bool,
}

impl Status {
    /// Tables whose reads may go to a replica.
    pub fn tracked(&self) -> impl Iterator<Item = &TableStatus> {
        self.tables.iter().filter(|t| t.is_tracked())
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for event in Event::ALL {
            let present = if self.counter_tables.has(event) {
                "present"
            } else {
                "MISSING"
            };
            writeln!(
                f,
                "counter table {}.{} ({} events): {present}",
                quote_ident(&self.counter_schema),
                quote_ident(event.counter_table()),
                event.keyword()
            )?;
        }
        if self.counter_table_exists && !Event::ALL.iter().all(|e| self.counter_tables.has(*e)) {
            writeln!(
                f,
                "  (made by an earlier sluice: `sluice triggers install` adds the missing tables)"
            )?;
        }
        let tracked = self.tracked().count();
        writeln!(
            f,
            "schema {}: {} base tables, {tracked} tracked, {} without sluice triggers",
            quote_ident(&self.db),
            self.tables.len(),
            self.untracked.len()
        )?;
        writeln!(
            f,
            "named for tracking: {}",
            if self.named {
                "yes (with freshness.auto_install, tables created later get triggers)"
            } else {
                "no (`sluice triggers install` names it)"
            }
        )?;
        if self.tables.is_empty() {
            return Ok(());
        }
        let cell = |state: TriggerState| match state {
            TriggerState::Ok { slots } => format!("ok/{slots}"),
            TriggerState::Previous { slots } => format!("old/{slots}"),
            TriggerState::Outdated => "outdated".to_owned(),
            TriggerState::Missing => "-".to_owned(),
        };
        let header = [
            "TABLE",
            "INSERT",
            "UPDATE",
            "DELETE",
            "ROWS",
            "READS",
            "OTHER TRIGGERS",
        ];
        let rows: Vec<[String; 7]> = self
            .tables
            .iter()
            .map(|t| {
                let reads = if t.is_tracked() {
                    "replica".to_owned()
                } else if t.non_transactional {
                    "master (non-transactional engine)".to_owned()
                } else if !t.cascaded_from.is_empty() {
                    format!("master (FK cascade from {})", t.cascaded_from.join(", "))
                } else {
                    "master".to_owned()
                };
                let users = if t.user_triggers.is_empty() {
                    "-".to_owned()
                } else {
                    t.user_triggers.join(", ")
                };
                [
                    comment_safe(&t.table),
                    cell(t.insert),
                    cell(t.update),
                    cell(t.delete),
                    if t.rows_ok { "ok" } else { "missing" }.to_owned(),
                    reads,
                    comment_safe(&users),
                ]
            })
            .collect();
        let mut widths = header.map(|h| h.chars().count());
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        writeln!(f)?;
        let print = |f: &mut fmt::Formatter<'_>, cells: &[&str]| -> fmt::Result {
            let last = cells.len() - 1;
            for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
                if i == last {
                    writeln!(f, "{c}")?;
                } else {
                    write!(f, "{c:<w$}  ")?;
                }
            }
            Ok(())
        };
        print(f, &header)?;
        for row in &rows {
            print(f, &row.each_ref().map(String::as_str))?;
        }
        writeln!(
            f,
            "\n(ok/N: sluice trigger present, N slots; old/N: an earlier sluice's trigger, still counting, \
             `sluice triggers install` replaces it; reads of tables marked master never go to a replica)"
        )?;
        let partial: Vec<&str> = self
            .tables
            .iter()
            .filter(|t| {
                t.has_any_sluice_trigger()
                    && Event::ALL
                        .into_iter()
                        .any(|e| !matches!(t.state(e), TriggerState::Ok { .. }))
            })
            .map(|t| t.table.as_str())
            .collect();
        if !partial.is_empty() {
            writeln!(
                f,
                "tables with missing or outdated sluice triggers: {}",
                comment_safe(&partial.join(", "))
            )?;
            writeln!(
                f,
                "run `sluice triggers install --schema {}` to repair them",
                comment_safe(&self.db)
            )?;
        }
        if !self.untracked.is_empty() {
            writeln!(
                f,
                "tables without sluice triggers: {}",
                comment_safe(&self.untracked.join(", "))
            )?;
            writeln!(
                f,
                "run `sluice triggers install --schema {}` to track them",
                comment_safe(&self.db)
            )?;
        }
        Ok(())
    }
}
