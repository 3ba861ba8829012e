//! Top-level errors, and the one place where internal errors become the MySQL
//! error (code, SQLSTATE, sentence) a client sees.

use crate::backend::BackendError;
use crate::protocol::consts::errcode;
use crate::protocol::packets::ErrPacket;

/// Errors that stop sluice from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The answer to a statement sluice runs on a session's connection `label`:
/// its value, the server's ERR as it is, or the connection's failure as the
/// error a client sees.
pub fn answered<T>(label: &str, r: Result<Result<T, ErrPacket>, BackendError>) -> Result<T, ErrPacket> {
    r.map_err(|e| backend_error_packet(label, "", &e))?
}

/// The error a client sees when `backend` (a label such as "main master
/// 127.0.0.1:3306") failed.
pub fn backend_error_packet(label: &str, addr: &str, err: &BackendError) -> ErrPacket {
    match err {
        // A server's own error (e.g. unknown database) is passed on as it is.
        BackendError::Server(e) => e.clone(),
        BackendError::Connect(_) | BackendError::Timeout(_) | BackendError::Pool(_) => ErrPacket::new(
            errcode::ER_CONNECT_TO_FOREIGN_DATA_SOURCE,
            "HY000",
            format!("Can't connect to MySQL server on '{addr}' (sluice: backend {label}: {err})"),
        ),
        BackendError::Protocol(_) => ErrPacket::new(
            errcode::ER_NET_READ_ERROR,
            "08S01",
            format!("Lost connection to MySQL server during query (sluice: backend {label}: {err})"),
        ),
        // What the server itself says when it has no connection left.
        BackendError::PoolFull { .. } => ErrPacket::new(
            errcode::ER_CON_COUNT_ERROR,
            "HY000",
            format!("Too many connections (sluice: backend {label}: {err}; raise backend.pool_max)"),
        ),
        BackendError::Tls(_) => ErrPacket::new(
            errcode::ER_CONNECT_TO_FOREIGN_DATA_SOURCE,
            "HY000",
            format!("SSL connection error: sluice cannot reach backend {label} securely: {err}"),
        ),
        BackendError::Unsupported(_) => ErrPacket::new(
            errcode::ER_CONNECT_TO_FOREIGN_DATA_SOURCE,
            "HY000",
            format!("sluice cannot use backend {label}: {err}"),
        ),
    }
}

/// A session's transaction or pinned state was on a master that is no
/// longer the master (`frontend::refresh`); `none`: the group has no master.
pub fn master_changed(old: &str, new: &str, none: bool) -> ErrPacket {
    let now = if none {
        "the group has no master now (several servers are writable)".to_owned()
    } else {
        format!("the master is now {new}")
    };
    ErrPacket::new(
        errcode::ER_NET_READ_ERROR,
        "08S01",
        format!(
            "Got an error reading communication packets (sluice: the master changed: {old} is no longer the \
             master, {now}; this session's transaction or session state (temporary tables, locks, user \
             variables) was on {old} and is lost; nothing was replayed, start the transaction again)"
        ),
    )
}

pub fn access_denied(user: &str, host: &str, using_password: bool) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_ACCESS_DENIED_ERROR,
        "28000",
        format!(
            "Access denied for user '{user}'@'{host}' (using password: {})",
            if using_password { "YES" } else { "NO" }
        ),
    )
}

pub fn unknown_command(cmd: u8) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_UNKNOWN_COM_ERROR,
        "08S01",
        format!("Unknown command 0x{cmd:02x}: sluice does not support this command"),
    )
}

pub fn bad_handshake(why: &str) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_HANDSHAKE_ERROR,
        "08S01",
        format!("Bad handshake: {why}"),
    )
}

pub fn malformed_packet() -> ErrPacket {
    ErrPacket::new(
        errcode::ER_MALFORMED_PACKET,
        "HY000",
        "Malformed communication packet",
    )
}

/// MariaDB's words exactly (the limit is `limits.max_packet_size`).
pub fn packet_too_large() -> ErrPacket {
    ErrPacket::new(
        errcode::ER_NET_PACKET_TOO_LARGE,
        "08S01",
        "Got a packet bigger than 'max_allowed_packet' bytes",
    )
}

/// What MariaDB sends instead of its greeting when every connection is
/// taken (send it with [`ErrPacket::encode_pre_handshake`]).
pub fn too_many_connections() -> ErrPacket {
    ErrPacket::new(errcode::ER_CON_COUNT_ERROR, "08004", "Too many connections")
}

/// MariaDB's answer to a login beyond the account's MAX_USER_CONNECTIONS.
pub fn user_limit_reached(user: &str, max: u32) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_USER_LIMIT_REACHED,
        "42000",
        format!("User '{user}' has exceeded the 'max_user_connections' resource (current value: {max})"),
    )
}

/// COM_STMT_FETCH on a statement without an open cursor (MariaDB's words).
pub fn no_open_cursor(id: u32) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_STMT_HAS_NO_OPEN_CURSOR,
        "HY000",
        format!("The statement ({id}) has no open cursor"),
    )
}

/// A COM_STMT_EXECUTE whose parameters sluice cannot read; `e` says why
/// (the session's `ParamError`).
pub fn bad_params(e: &impl std::fmt::Display) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_WRONG_ARGUMENTS,
        "HY000",
        format!("Incorrect arguments to mysqld_stmt_execute (sluice: {e})"),
    )
}

pub fn unknown_stmt(id: u32, during: &str) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_UNKNOWN_STMT_HANDLER,
        "HY000",
        format!("Unknown prepared statement handler ({id}) given to {during}"),
    )
}

/// A session holds as many prepared statements as sluice allows: MariaDB's
/// answer at max_prepared_stmt_count (1461).
/// The same answer when a session's prepared statements hold too much text.
pub fn too_many_prepared_bytes(max_bytes: usize) -> ErrPacket {
    ErrPacket::new(
        1461,
        "42000",
        format!(
            "Can't create more than max_prepared_stmt_count statements (sluice: the prepared \
             statements of one session may hold {} MiB of text; close some with COM_STMT_CLOSE)",
            max_bytes >> 20
        ),
    )
}

pub fn too_many_prepared(max: usize) -> ErrPacket {
    ErrPacket::new(
        1461,
        "42000",
        format!(
            "Can't create more than max_prepared_stmt_count statements (current value: {max}) \
             (sluice: prepared statements per session; close some with COM_STMT_CLOSE)"
        ),
    )
}
