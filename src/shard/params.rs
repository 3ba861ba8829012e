//! A prepared statement's parameter values as sluice reads them (`frontend::params`
//! decodes them), and the session's character set settings as far as placing a row by a
//! string parameter needs them.
//!
//! Values only ever choose sub-tables (and feed the merge's HAVING and LIMIT): they are
//! never written into SQL. Each sub-table's part runs as a prepared statement bound with
//! the client's own parameters (`Part::params`), so the server reads every value (binary
//! bytes, character sets, DECIMAL, temporal) exactly as for the unsharded statement.

/// A value bound to a `?` placeholder of a prepared statement.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A character string in `character_set_client` (VARCHAR, STRING, … and long data).
    Bytes(Vec<u8>),
    /// A BLOB-typed parameter: a binary string.
    Blob(Vec<u8>),
    /// A character string that is not ASCII, in a client character set other than UTF-8:
    /// never placed by its bytes (see `literal::param_literal`).
    Foreign(Vec<u8>),
    /// DECIMAL / NEWDECIMAL: the client's text.
    Decimal(Vec<u8>),
    /// A DATE, DATETIME/TIMESTAMP or TIME parameter, decoded.
    Temporal(Temporal),
}

/// A temporal parameter as the binary protocol carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Temporal {
    Date {
        year: u16,
        month: u8,
        day: u8,
    },
    DateTime {
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
        micro: u32,
    },
    Time {
        negative: bool,
        hours: u64,
        minute: u8,
        second: u8,
        micro: u32,
    },
}

/// The session's character set settings, as far as reading statements and placing rows
/// by string parameters needs them. [`Charset::default`] knows nothing: non-ASCII string
/// parameters then place nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Charset {
    /// `character_set_client`.
    pub client: Option<String>,
    /// `sql_mode` has NO_BACKSLASH_ESCAPES.
    pub no_backslash_escapes: bool,
    /// The most bytes a character of `character_set_client` takes (0: unknown).
    pub client_maxlen: u32,
}

impl Charset {
    /// From `@@character_set_client`, `@@sql_mode` and the client character set's MAXLEN.
    pub fn from_session(client: &str, sql_mode: &str, client_maxlen: u32) -> Charset {
        let name_ok = !client.is_empty() && client.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        Charset {
            client: name_ok.then(|| client.to_ascii_lowercase()),
            no_backslash_escapes: sql_mode.to_ascii_uppercase().contains("NO_BACKSLASH_ESCAPES"),
            client_maxlen,
        }
    }

    /// Whether the server splits valid UTF-8 statement text into the same tokens as sluice's
    /// UTF-8 lexer: the client character set is UTF-8, or one byte per character (then no
    /// byte ≥ 0x80 can hide a `\` or a quote). Not so in GBK, Big5, SJIS, CP932, …, where
    /// `E4 B8 AD 5C` is two characters, the second ending in the byte of `\`.
    pub fn lexes_like_utf8(&self) -> bool {
        self.utf8_client() || self.client_maxlen == 1
    }

    /// The client character set is UTF-8: a string parameter's bytes are the key's bytes.
    pub(crate) fn utf8_client(&self) -> bool {
        matches!(self.client.as_deref(), Some("utf8mb4" | "utf8mb3" | "utf8"))
    }
}

/// Whether placing by `v` needs the session's [`Charset`] (a string that is not ASCII).
pub fn needs_charset(v: &ParamValue) -> bool {
    matches!(v, ParamValue::Bytes(b) if !b.is_ascii())
}
