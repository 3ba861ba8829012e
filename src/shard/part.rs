//! What one sub-table receives of a planned statement: its [`Part`], whose text is
//! [`PartSql`] (bytes: a split INSERT carries the client's own, which need not be UTF-8).

/// The statement one sub-table receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub shard: u32,
    /// Backend group holding the sub-table.
    pub group: usize,
    pub sql: PartSql,
    /// For a prepared statement (planned with its placeholders kept, [`super::plan_prepared`]):
    /// the client's parameter index of each `?` of `sql`, in order. Such a part runs as
    /// a prepared statement on its sub-table with the client's own typed parameters, so
    /// the server computes exactly what it computes for the unsharded statement. Empty:
    /// `sql` has no placeholder (text, or values written in as literals).
    pub params: Vec<u16>,
    /// Part of a prepared statement: it runs as one (see [`Part::runs_prepared`]).
    pub prepared: bool,
}

/// What a part is prefixed with when the session has a `sql_select_limit`: the server
/// applies that limit to each part's own rows (each sub-table's first rows, or its first
/// partial groups), where the statement's answer is the merged result's first rows; the
/// parts run without it and the merge applies it (see [`Part::without_select_limit`]).
const NO_SELECT_LIMIT: &[u8] = b"SET STATEMENT sql_select_limit = 18446744073709551615 FOR ";

impl Part {
    /// The part with the session's `sql_select_limit` lifted for its one statement.
    pub fn without_select_limit(mut self) -> Part {
        let mut sql = NO_SELECT_LIMIT.to_vec();
        sql.extend_from_slice(self.sql.as_bytes());
        self.sql = sql.into();
        self
    }

    /// Whether the part runs on its sub-table as a prepared statement (COM_STMT_PREPARE,
    /// EXECUTE with its parameters, CLOSE) rather than as text: when it has parameters,
    /// and for every read of a client's prepared statement, placeholders or not. The
    /// server's column definitions differ between the protocols (a grouped TEXT column
    /// carries the temporary table's GROUP_FLAG, 0x8000, only in the binary one), so a
    /// prepared statement's answer is the server's binary one only if its parts are.
    pub fn runs_prepared(&self) -> bool {
        self.prepared || !self.params.is_empty()
    }
}

/// The bytes of a part's statement. Not necessarily UTF-8: an `INSERT … VALUES` split by
/// `split.rs` carries the client's own bytes (a dump made without `--hex-blob` holds
/// binary column values as raw bytes in string literals), with only the table's name
/// replaced. Shown (logs, messages, `Display`) with invalid bytes replaced.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PartSql(Vec<u8>);

impl PartSql {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text, invalid UTF-8 replaced (for logs and messages, never for the server).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

impl From<String> for PartSql {
    fn from(s: String) -> PartSql {
        PartSql(s.into_bytes())
    }
}

impl From<Vec<u8>> for PartSql {
    fn from(b: Vec<u8>) -> PartSql {
        PartSql(b)
    }
}

impl AsRef<[u8]> for PartSql {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Display for PartSql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::fmt::Debug for PartSql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.text(), f)
    }
}

impl PartialEq<str> for PartSql {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for PartSql {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}
