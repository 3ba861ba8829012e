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

/// Session variables every part of one statement runs under (`SET STATEMENT … FOR`), so
/// that each computes what the one statement computes on one server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartSettings {
    /// The session has a `sql_select_limit`: the server would apply it to each part's own
    /// rows (each sub-table's first rows, or its first partial groups), where it limits
    /// the statement's merged answer; the parts run without it and the merge applies it.
    pub no_select_limit: bool,
    /// The statement's time (`@@timestamp`, seconds with microseconds): the server gives
    /// `NOW()`, `CURRENT_TIMESTAMP` (column defaults and `ON UPDATE` included) and the
    /// other functions of the statement's start one value per statement; each part would
    /// take its own start.
    pub timestamp: Option<String>,
}

impl PartSettings {
    fn prefix(&self) -> Option<String> {
        let mut vars = Vec::new();
        if self.no_select_limit {
            vars.push("sql_select_limit = 18446744073709551615".to_string());
        }
        if let Some(t) = &self.timestamp {
            vars.push(format!("timestamp = {t}"));
        }
        (!vars.is_empty()).then(|| format!("SET STATEMENT {} FOR ", vars.join(", ")))
    }
}

/// Whether a statement's text may call a function of the statement's time (`NOW()`,
/// `CURRENT_TIMESTAMP`, `CURDATE()`, `UNIX_TIMESTAMP()`, `UTC_TIME()`, …): a plain search,
/// strings and names included (a false yes only fixes the time the server would take).
pub fn mentions_statement_time(sql: &[u8]) -> bool {
    const NAMES: [&[u8]; 7] = [
        b"now",
        b"current_",
        b"curdate",
        b"curtime",
        b"localtime",
        b"unix_timestamp",
        b"utc_",
    ];
    NAMES
        .iter()
        .any(|n| sql.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n)))
}

impl Part {
    /// The part run under `settings` (unchanged when there are none).
    pub fn under(mut self, settings: &PartSettings) -> Part {
        if let Some(prefix) = settings.prefix() {
            let mut bytes = prefix.into_bytes();
            let settings = bytes.len();
            bytes.extend_from_slice(self.sql.statement());
            self.sql = PartSql { bytes, settings };
        }
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
pub struct PartSql {
    bytes: Vec<u8>,
    /// How many leading bytes are the [`PartSettings`] prefix.
    settings: usize,
}

impl PartSql {
    /// What the server receives (the settings' prefix included).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The statement itself, without the settings' prefix (what its kind is read from).
    pub fn statement(&self) -> &[u8] {
        &self.bytes[self.settings..]
    }

    /// The text, invalid UTF-8 replaced (for logs and messages, never for the server).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

impl From<String> for PartSql {
    fn from(s: String) -> PartSql {
        s.into_bytes().into()
    }
}

impl From<Vec<u8>> for PartSql {
    fn from(bytes: Vec<u8>) -> PartSql {
        PartSql { bytes, settings: 0 }
    }
}

/// The statement, without the settings' prefix.
impl AsRef<[u8]> for PartSql {
    fn as_ref(&self) -> &[u8] {
        self.statement()
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
        self.bytes == other.as_bytes()
    }
}

impl PartialEq<&str> for PartSql {
    fn eq(&self, other: &&str) -> bool {
        self.bytes == other.as_bytes()
    }
}
