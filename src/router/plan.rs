//! The route of one statement as plain data: where it runs, what it reads
//! and writes (for the freshness gate and the counters), and what it does to
//! the session. Every command path (COM_QUERY, COM_STMT_EXECUTE, the SQL-level
//! dynamic statements inside them) produces a [`Plan`] with [`super::route::plan`]
//! and the session applies its [`Effects`] in one place, so no path can decide
//! pins or snapshots on its own.

/// Where a statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The master of group 0.
    Master,
    /// A replica the freshness gate finds fresh for the read set; the master
    /// when none is.
    FreshReplica,
    /// Replica `i`: the session's read-only transaction runs there.
    Replica(usize),
    /// The connection that ran the session's previous statement (the answer
    /// is about that statement: warnings, diagnostics).
    Previous,
}

/// What a read must see. Only meaningful for [`Target::FreshReplica`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSet<'a> {
    /// These tables (as written: `t` or `db.t`).
    Tables(&'a [String]),
    /// Unknown: every counter row is compared.
    All,
}

impl<'a> ReadSet<'a> {
    /// The tables, when known.
    pub fn tables(self) -> Option<&'a [String]> {
        match self {
            ReadSet::Tables(t) => Some(t),
            ReadSet::All => None,
        }
    }
}

/// What a statement may change, for the freshness counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteSet {
    /// Nothing a replica could lack (reads, session SETs, transaction control).
    Nothing,
    /// Rows of tables whose triggers count the change (DML).
    Counted,
    /// Anything: no trigger fires, or what it touches is not known (DDL,
    /// TRUNCATE, dynamic SQL, procedures, multi-statements, unparsable text).
    /// The global counter row is bumped after it.
    Everything,
}

/// What a statement does to the session when it succeeds: pins taken and
/// lifted, and typed flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Pins taken.
    pub pin: Pins,
    /// Pins lifted.
    pub unpin: Pins,
    /// The text is a SET to replay on every backend connection the session uses.
    pub replay_set: bool,
    /// The session's default database becomes this (`USE db`).
    pub use_db: Option<String>,
    /// `START TRANSACTION READ ONLY`: the transaction stays where it began.
    pub begin_read_only: bool,
    /// The text reads or sets LAST_INSERT_ID(): the connection must hold the
    /// session's value first, and its new value is the session's.
    pub last_insert_id: bool,
    /// The answer to FOUND_ROWS() lives on this connection: keep it for the
    /// next statement.
    pub keep_for_found_rows: bool,
    /// The statement may change how the server reads quotes (`sql_mode`):
    /// learn the new mode before classifying the next statement.
    pub sql_mode: bool,
    /// DDL or unknown: the set of tables with triggers may have changed.
    pub refresh_tracked: bool,
    /// DDL (CREATE, ALTER, DROP, RENAME): column defaults, triggers and the
    /// columns a sharded read learned may have changed.
    pub changes_columns: bool,
    /// `START TRANSACTION WITH CONSISTENT SNAPSHOT ... READ ONLY`: the
    /// snapshot is taken at once (with `begin_read_only`).
    pub consistent_snapshot: bool,
    /// A SET of `wait_timeout` or `interactive_timeout`: the session's idle
    /// limit may have changed.
    pub idle_limit: bool,
    /// A `SET TRANSACTION ...` for the next transaction only.
    pub next_transaction: bool,
    /// May change the session's isolation level.
    pub isolation: bool,
    /// Commits the session's transaction, if one is open, even when another
    /// begins at once: COMMIT [AND CHAIN], BEGIN / START TRANSACTION.
    pub commits: bool,
    /// Run on a replica inside a read-only transaction, the statement makes
    /// a server-side object the session needs after the transaction too
    /// (SQL PREPARE / DEALLOCATE PREPARE): run the same text on the master.
    pub mirror_on_master: bool,
}

/// The route of one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan<'a> {
    pub target: Target,
    /// Why (a metric label).
    pub reason: RouteReason,
    pub read_set: ReadSet<'a>,
    pub write_set: WriteSet,
    pub effects: Effects,
    /// A write for the transaction rules of backend groups (one writing group
    /// per transaction) and for causal snapshots.
    pub is_write: bool,
    /// What it does to a transaction open before and after it on the master
    /// (for the causal snapshot: `route::needs_snapshot`).
    pub tx: TxEffect,
    /// It reads no table (SHOW WARNINGS, @@warning_count, SELECT 1): the
    /// diagnostics area stays as it was, and so may the connection holding it.
    pub reads_no_table: bool,
}

/// What a master statement does to a transaction open before and after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEffect {
    /// ROLLBACK: nothing it undid was visible to anyone else.
    RollsBack,
    /// It cannot have committed it.
    Keeps,
    /// It may have committed it (BEGIN, COMMIT, a SET of autocommit, DDL, a
    /// procedure).
    MayCommit,
}

impl Plan<'_> {
    pub fn on_master(&self) -> bool {
        self.target == Target::Master
    }
}

/// Why a statement goes where it goes: the `reason` label of
/// `sluice_routed_statements_total` (`metrics::REASONS` is [`RouteReason::ALL`],
/// so every reason has its counter cell and none can be left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteReason {
    Write,
    Transaction,
    SessionState,
    Command,
    Prepare,
    Statement,
    LongData,
    FreshReplica,
    ReadOnlyTransaction,
    UserVariable,
    TemporaryTable,
    LockTables,
    NamedLock,
    SetOption,
    NoReplica,
    Stale,
    ReplicaDown,
    UntrackedTable,
    MasterProbeFailed,
    LockingRead,
    SelectInto,
    LockFunction,
    LastInsertId,
    FoundRows,
    Sequence,
    Hint,
    MultiStatement,
    SideEffect,
    StoredFunction,
    UnmarkedWrite,
    Handler,
    PreviousStatement,
    StaleReplica,
    ReplicaFailed,
    ConnectionState,
    NextTransaction,
    Sharded,
}

impl RouteReason {
    /// Every reason, in the order of their discriminants (`reason as usize`).
    pub const ALL: [RouteReason; 37] = [
        RouteReason::Write,
        RouteReason::Transaction,
        RouteReason::SessionState,
        RouteReason::Command,
        RouteReason::Prepare,
        RouteReason::Statement,
        RouteReason::LongData,
        RouteReason::FreshReplica,
        RouteReason::ReadOnlyTransaction,
        RouteReason::UserVariable,
        RouteReason::TemporaryTable,
        RouteReason::LockTables,
        RouteReason::NamedLock,
        RouteReason::SetOption,
        RouteReason::NoReplica,
        RouteReason::Stale,
        RouteReason::ReplicaDown,
        RouteReason::UntrackedTable,
        RouteReason::MasterProbeFailed,
        RouteReason::LockingRead,
        RouteReason::SelectInto,
        RouteReason::LockFunction,
        RouteReason::LastInsertId,
        RouteReason::FoundRows,
        RouteReason::Sequence,
        RouteReason::Hint,
        RouteReason::MultiStatement,
        RouteReason::SideEffect,
        RouteReason::StoredFunction,
        RouteReason::UnmarkedWrite,
        RouteReason::Handler,
        RouteReason::PreviousStatement,
        RouteReason::StaleReplica,
        RouteReason::ReplicaFailed,
        RouteReason::ConnectionState,
        RouteReason::NextTransaction,
        RouteReason::Sharded,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteReason::Write => "write",
            RouteReason::Transaction => "transaction",
            RouteReason::SessionState => "session_state",
            RouteReason::Command => "command",
            RouteReason::Prepare => "prepare",
            RouteReason::Statement => "statement",
            RouteReason::LongData => "long_data",
            RouteReason::FreshReplica => "fresh_replica",
            RouteReason::ReadOnlyTransaction => "read_only_transaction",
            RouteReason::UserVariable => "user_variable",
            RouteReason::TemporaryTable => "temporary_table",
            RouteReason::LockTables => "lock_tables",
            RouteReason::NamedLock => "named_lock",
            RouteReason::SetOption => "set_option",
            RouteReason::NoReplica => "no_replica",
            RouteReason::Stale => "stale",
            RouteReason::ReplicaDown => "replica_down",
            RouteReason::UntrackedTable => "untracked_table",
            RouteReason::MasterProbeFailed => "master_probe_failed",
            RouteReason::LockingRead => "locking_read",
            RouteReason::SelectInto => "select_into",
            RouteReason::LockFunction => "lock_function",
            RouteReason::LastInsertId => "last_insert_id",
            RouteReason::FoundRows => "found_rows",
            RouteReason::Sequence => "sequence",
            RouteReason::Hint => "hint",
            RouteReason::MultiStatement => "multi_statement",
            RouteReason::SideEffect => "side_effect",
            RouteReason::StoredFunction => "stored_function",
            RouteReason::UnmarkedWrite => "unmarked_write",
            RouteReason::Handler => "handler",
            RouteReason::PreviousStatement => "previous_statement",
            RouteReason::StaleReplica => "stale_replica",
            RouteReason::ReplicaFailed => "replica_failed",
            RouteReason::ConnectionState => "connection_state",
            RouteReason::NextTransaction => "next_transaction",
            RouteReason::Sharded => "sharded",
        }
    }
}

impl std::fmt::Display for RouteReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

bitflags::bitflags! {
    /// Why a session must stay on its master connection.
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct Pins: u16 {
        const TEMP_TABLE = 1;
        const USER_VARIABLE = 1 << 1;
        const LOCK_TABLES = 1 << 2;
        const NAMED_LOCK = 1 << 3;
        const SESSION_STATE = 1 << 4;
        const SET_OPTION = 1 << 5;
        const CONNECTION_STATE = 1 << 6;
        const NEXT_TRANSACTION = 1 << 7;
    }
}

impl Pins {
    /// The metric labels, in the order of the bits.
    const NAMES: [&'static str; 8] = [
        "temporary_table",
        "user_variable",
        "lock_tables",
        "named_lock",
        "session_state",
        "set_option",
        "connection_state",
        "next_transaction",
    ];

    /// Is any pin of `bits` taken?
    pub fn has(&self, bits: Pins) -> bool {
        self.intersects(bits)
    }

    /// The metric label of one pin bit.
    pub fn name(bit: Pins) -> &'static str {
        Self::NAMES[(bit.bits().trailing_zeros() as usize).min(Self::NAMES.len() - 1)]
    }

    /// The route reason of the lowest pin, if pinned.
    pub fn reason(&self) -> Option<RouteReason> {
        const REASONS: [RouteReason; 8] = [
            RouteReason::TemporaryTable,
            RouteReason::UserVariable,
            RouteReason::LockTables,
            RouteReason::NamedLock,
            RouteReason::SessionState,
            RouteReason::SetOption,
            RouteReason::ConnectionState,
            RouteReason::NextTransaction,
        ];
        (!self.is_empty()).then(|| REASONS[self.bits().trailing_zeros() as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_report_their_reason() {
        let mut p = Pins::default();
        assert_eq!(p.reason(), None);
        p.insert(Pins::NAMED_LOCK);
        p.insert(Pins::NEXT_TRANSACTION);
        assert_eq!(p.reason(), Some(RouteReason::NamedLock));
        assert_eq!(Pins::name(Pins::NEXT_TRANSACTION), "next_transaction");
        assert_eq!(Pins::name(Pins::TEMP_TABLE), "temporary_table");
        p.remove(Pins::NAMED_LOCK);
        assert_eq!(p.reason(), Some(RouteReason::NextTransaction));
        assert!(p.has(Pins::NEXT_TRANSACTION));
    }
}
