//! Command bytes, flags and error codes used across sluice.

pub use mysql_common::constants::{CapabilityFlags, StatusFlags};

pub const COM_SLEEP: u8 = 0x00;
pub const COM_QUIT: u8 = 0x01;
pub const COM_INIT_DB: u8 = 0x02;
pub const COM_QUERY: u8 = 0x03;
pub const COM_FIELD_LIST: u8 = 0x04;
pub const COM_STATISTICS: u8 = 0x09;
pub const COM_PROCESS_KILL: u8 = 0x0c;
pub const COM_PING: u8 = 0x0e;
pub const COM_CHANGE_USER: u8 = 0x11;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
pub const COM_STMT_CLOSE: u8 = 0x19;
pub const COM_STMT_RESET: u8 = 0x1a;
pub const COM_SET_OPTION: u8 = 0x1b;
pub const COM_STMT_FETCH: u8 = 0x1c;
pub const COM_RESET_CONNECTION: u8 = 0x1f;

/// Largest payload of one frame; a payload of exactly this size is followed
/// by a continuation frame (possibly empty).
pub const MAX_FRAME: usize = 0xFF_FFFF;

/// Status flag bits we read off OK/EOF packets.
pub const SERVER_STATUS_IN_TRANS: u16 = 0x0001;
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 0x0002;
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
pub const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;

/// Capabilities sluice offers to clients (intersected with the backend's).
/// CLIENT_SESSION_TRACK is relayed: backend connections serving the client
/// have it too (it is a format capability), so the server's session-state
/// data reaches the client in every OK packet it sends; sluice's own OK
/// packets carry none (see `packets::ok_packet`).
/// Left out on purpose: CLIENT_SSL (added only when TLS is configured),
/// CLIENT_COMPRESS (not implemented), and MariaDB's extended
/// capabilities (bulk execute, metadata cache) which change response formats.
pub fn offered_capabilities() -> CapabilityFlags {
    CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_FOUND_ROWS
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_CONNECT_WITH_DB
        | CapabilityFlags::CLIENT_ODBC
        | CapabilityFlags::CLIENT_LOCAL_FILES
        | CapabilityFlags::CLIENT_IGNORE_SPACE
        | CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_INTERACTIVE
        | CapabilityFlags::CLIENT_IGNORE_SIGPIPE
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_CONNECT_ATTRS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
        | CapabilityFlags::CLIENT_DEPRECATE_EOF
        | CapabilityFlags::CLIENT_SESSION_TRACK
}

/// MariaDB extended capabilities sluice relays when the backend offers them.
/// Only EXTENDED_METADATA (extra type info in column definitions, e.g.
/// `format=json`, `type=uuid`): it changes nothing the relay parses. Left
/// out: PROGRESS (progress packets inside responses), STMT_BULK_OPERATIONS
/// (a command sluice does not route), CACHE_METADATA (EXECUTE answers
/// without column definitions, which depend on the connection's cache).
pub const MARIADB_RELAYED_EXT: u32 = 0x0000_0008;

/// The client capabilities that change what the server sends or accepts.
/// A backend connection serving a client must have exactly these bits equal
/// to the client's, so its bytes can be relayed untouched.
pub fn format_capabilities() -> CapabilityFlags {
    CapabilityFlags::CLIENT_FOUND_ROWS
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_ODBC
        | CapabilityFlags::CLIENT_LOCAL_FILES
        | CapabilityFlags::CLIENT_IGNORE_SPACE
        | CapabilityFlags::CLIENT_INTERACTIVE
        | CapabilityFlags::CLIENT_MULTI_STATEMENTS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_DEPRECATE_EOF
        | CapabilityFlags::CLIENT_SESSION_TRACK
}

/// MySQL error codes sluice sends itself.
pub mod errcode {
    pub const ER_CON_COUNT_ERROR: u16 = 1040;
    pub const ER_HANDSHAKE_ERROR: u16 = 1043;
    pub const ER_NET_PACKETS_OUT_OF_ORDER: u16 = 1156;
    pub const ER_ACCESS_DENIED_ERROR: u16 = 1045;
    pub const ER_ACCOUNT_HAS_BEEN_LOCKED: u16 = 4151;
    pub const ER_UNKNOWN_COM_ERROR: u16 = 1047;
    pub const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
    pub const ER_NET_READ_ERROR: u16 = 1158;
    /// The server runs with --read-only (sluice: a group with no master).
    pub const ER_OPTION_PREVENTS_STATEMENT: u16 = 1290;
    pub const ER_WRONG_ARGUMENTS: u16 = 1210;
    pub const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
    pub const ER_SPECIFIC_ACCESS_DENIED_ERROR: u16 = 1227;
    pub const ER_PARSE_ERROR: u16 = 1064;
    pub const ER_UNKNOWN_ERROR: u16 = 1105;
    pub const ER_NO_SUCH_THREAD: u16 = 1094;
    pub const ER_USER_LIMIT_REACHED: u16 = 1226;
    pub const ER_NOT_SUPPORTED_YET: u16 = 1235;
    pub const ER_UNKNOWN_STMT_HANDLER: u16 = 1243;
    pub const ER_STMT_HAS_NO_OPEN_CURSOR: u16 = 1421;
    pub const ER_NOT_SUPPORTED_AUTH_MODE: u16 = 1251;
    pub const ER_MALFORMED_PACKET: u16 = 1835;
    pub const ER_SECURE_TRANSPORT_REQUIRED: u16 = 3159;
    // sluice's own errors about its backends use server codes: MariaDB
    // Connector/C (the mariadb CLI, sysbench, PHP mysqli, Python
    // mysqlclient) rejects an ERR packet whose code is in the client range
    // (2000-2999) as "2027 Received malformed packet", losing the sentence.
    /// A backend cannot be reached (MariaDB's "Unable to connect to foreign
    /// data source", what FEDERATED/Spider answer); also TLS failures.
    pub const ER_CONNECT_TO_FOREIGN_DATA_SOURCE: u16 = 1429;
    // A backend connection that died mid-command: ER_NET_READ_ERROR (1158,
    // SQLSTATE 08S01, which drivers treat as a communication failure).
}
