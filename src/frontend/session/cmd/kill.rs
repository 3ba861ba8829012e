//! COM_PROCESS_KILL, and the `KILL` and `SHOW PROCESSLIST` statements
//! `frontend::kill` recognizes: answered from the session registry
//! (`frontend::registry`), never forwarded.

use crate::protocol::consts::errcode;
use crate::protocol::packets::ErrPacket;
use crate::protocol::resultset::{queue_result, Column};

use crate::frontend::kill::{Intercept, KillTarget};
use crate::frontend::prepared::Conn;
use crate::frontend::registry::{KillRequest, Row};
use crate::frontend::session::{Closed, CmdResult, Session};

impl Session {
    /// hook(kill): answer a statement `kill::intercept` recognized.
    pub(in crate::frontend::session) async fn intercepted(&mut self, i: Intercept) -> CmdResult {
        match i {
            Intercept::Processlist { full } => self.send_processlist(full).await,
            Intercept::Kill { query_only, target } => self.kill(query_only, target).await,
            Intercept::KillThen {
                query_only,
                target,
                rest,
            } => self.kill_then(query_only, target, &rest).await,
        }
    }

    /// `KILL <id>; …` (mysql2's pool tests send `kill ?; select sleep(0.05)`):
    /// sluice runs the KILL, then the server runs the text with the KILL
    /// replaced by `DO 0`, whose OK carries the more-results flag exactly
    /// as the KILL's would, and the rest's answers follow in order. A
    /// refused KILL ends the text there, as the server stops at an error.
    /// Without multi-statements on, nothing is killed: the server answers
    /// the text with its own syntax error.
    async fn kill_then(&mut self, query_only: bool, target: KillTarget, rest: &[u8]) -> CmdResult {
        let text = [&[crate::protocol::consts::COM_QUERY][..], b"DO 0", rest].concat();
        if !self
            .caps
            .contains(mysql_common::constants::CapabilityFlags::CLIENT_MULTI_STATEMENTS)
        {
            return Box::pin(self.query(&text)).await;
        }
        match self.kill_checked(query_only, target).await? {
            Some(err) => self.send_kill_err(err).await,
            None => Box::pin(self.query(&text)).await,
        }
    }

    /// hook(kill): COM_PROCESS_KILL (old clients' `mysql_kill()`): KILL
    /// CONNECTION of the 4-byte id that follows.
    pub(in crate::frontend::session) async fn process_kill(&mut self, payload: &[u8]) -> CmdResult {
        match payload.get(1..5).and_then(|b| <[u8; 4]>::try_from(b).ok()) {
            Some(id) => {
                self.kill(false, KillTarget::Thread(u64::from(u32::from_le_bytes(id))))
                    .await
            }
            None => {
                self.send_err(&ErrPacket::new(
                    errcode::ER_MALFORMED_PACKET,
                    "HY000",
                    "Malformed communication packet (COM_PROCESS_KILL without a 4-byte thread id)",
                ))
                .await
            }
        }
    }

    async fn kill(&mut self, query_only: bool, target: KillTarget) -> CmdResult {
        match self.kill_checked(query_only, target).await? {
            Some(err) => self.send_kill_err(err).await,
            None => self.send_ok().await,
        }
    }

    /// Carry out a KILL; `Some(err)` is the refusal to send instead of OK.
    /// (A KILL of the session itself answers and ends it here.)
    async fn kill_checked(
        &mut self,
        query_only: bool,
        target: KillTarget,
    ) -> Result<Option<ErrPacket>, Closed> {
        let id = match target {
            KillTarget::Thread(id) => id,
            KillTarget::Own => u64::from(self.proc.id),
            KillTarget::QueryId(q) => {
                return Ok(Some(ErrPacket::new(
                    ER_NO_SUCH_QUERY,
                    "HY000",
                    format!("Unknown query id: {q}"),
                )));
            }
            KillTarget::User => {
                return Ok(Some(ErrPacket::new(
                    errcode::ER_NOT_SUPPORTED_YET,
                    "42000",
                    "sluice does not support KILL USER yet; kill each session by its id (SHOW \
                         PROCESSLIST lists them)",
                )));
            }
            KillTarget::Other => {
                return Ok(Some(ErrPacket::new(
                    errcode::ER_NOT_SUPPORTED_YET,
                    "42000",
                    "sluice only runs KILL with a literal thread id or CONNECTION_ID(); the ids \
                         are sluice's session ids, which the server does not know, so the statement \
                         cannot be sent to it",
                )));
            }
        };
        let entry = u32::try_from(id).ok().and_then(|id| self.shared.sessions.get(id));
        let Some(entry) = entry else {
            return Ok(Some(ErrPacket::new(
                ER_NO_SUCH_THREAD,
                "HY000",
                format!("Unknown thread id: {id}"),
            )));
        };
        if entry.id == self.proc.id {
            // As the server does: the KILL statement itself is interrupted;
            // killing the own connection also ends it.
            if query_only {
                return Ok(Some(ErrPacket::new(
                    ER_QUERY_INTERRUPTED,
                    "70100",
                    "Query execution was interrupted",
                )));
            }
            let _ = self
                .send_err(&ErrPacket::new(
                    ER_CONNECTION_KILLED,
                    "70100",
                    "Connection was killed",
                ))
                .await;
            return Err(Closed);
        }
        // Another user's session: as the server does, only an account with
        // CONNECTION ADMIN or SUPER may end it (asked of the server, as the
        // account the session's statements run as).
        if !entry.user_is(&self.user) && !self.admin_rights().await.connection_admin {
            return Ok(Some(ErrPacket::new(
                ER_KILL_DENIED_ERROR,
                "HY000",
                format!("You are not owner of thread {id}"),
            )));
        }
        entry.request_kill(if query_only {
            KillRequest::Query
        } else {
            KillRequest::Connection
        });
        Ok(None)
    }

    /// A KILL refused by sluice itself: the client gets the ERR, and the
    /// master connection, kept for the next statement, gets the same error
    /// in its diagnostics area (a SIGNAL), so SHOW WARNINGS, @@error_count
    /// and GET DIAGNOSTICS describe it as the server would. If that fails,
    /// the client still has its answer.
    async fn send_kill_err(&mut self, e: ErrPacket) -> CmdResult {
        if let Some(signal) = signal_sql(&e) {
            if self.held(Conn::Master).await.is_ok() {
                if let Some(h) = self.backends.slot(Conn::Master) {
                    if let Ok(Err(planted)) = h.conn.query_drop(&signal).await {
                        if planted.code == e.code {
                            self.backends.keep = Some(Conn::Master);
                        }
                    }
                }
            }
        }
        self.send_err(&e).await
    }

    async fn send_processlist(&mut self, full: bool) -> CmdResult {
        let own = self.proc.id;
        // PROCESS shows every user's sessions, as the server's list does.
        let all = self.admin_rights().await.process;
        let rows: Vec<Vec<Option<Vec<u8>>>> = self
            .shared
            .sessions
            .all()
            .iter()
            .filter(|e| all || e.id == own || e.user_is(&self.user))
            .map(|e| processlist_row(e.snapshot(), e.id == own, full))
            .collect();
        let cols = processlist_columns(self.key.collation, full);
        let ext = self.key.mariadb_ext & crate::protocol::consts::MARIADB_RELAYED_EXT != 0;
        let mut seq = self.reply_seq;
        let before = self.client.wbuf.len();
        queue_result(
            &mut self.client.wbuf,
            &mut seq,
            self.caps,
            ext,
            &cols,
            &rows,
            self.state.status(),
        );
        self.shared
            .metrics
            .client_bytes_out(self.client.wbuf.len() - before); // metrics: bytes out
        self.client.flush().await.map_err(|_| Closed)
    }

    /// What the account the session's statements run as may do with other
    /// users' sessions, read from the master each time it is needed (rare:
    /// KILL of another user's session, SHOW PROCESSLIST), so GRANT, REVOKE
    /// and SET ROLE count at once. Unknown (no master, an error): nothing.
    async fn admin_rights(&mut self) -> AdminRights {
        // A configured user with `backend: group` runs as the group's
        // account, whose rights are sluice's, not this user's: it sees and
        // ends its own sessions only, as the server scopes an account
        // without PROCESS or CONNECTION ADMIN.
        if self.login.is_none() {
            return AdminRights::default();
        }
        if self.held(Conn::Master).await.is_err() {
            return AdminRights::default();
        }
        let Some(h) = self.backends.slot(Conn::Master) else {
            return AdminRights::default();
        };
        match h.conn.session_query_text(ADMIN_RIGHTS_SQL).await {
            Ok(Ok(Some(flags))) => AdminRights::parse(&flags),
            _ => AdminRights::default(),
        }
    }
}

/// The account's (and its current role's) global privileges that matter for
/// other users' sessions, as two digits: CONNECTION ADMIN or SUPER (KILL),
/// PROCESS (the process list). GRANTEE is `'user'@'host'`; the host is what
/// follows the last `@` of CURRENT_USER(), since a user name may hold one.
const ADMIN_RIGHTS_SQL: &str = "SELECT CONCAT(\
    IFNULL(MAX(PRIVILEGE_TYPE IN ('SUPER', 'CONNECTION ADMIN')), 0), \
    IFNULL(MAX(PRIVILEGE_TYPE = 'PROCESS'), 0)) \
    FROM information_schema.USER_PRIVILEGES \
    WHERE GRANTEE = CONCAT('''', \
    LEFT(CURRENT_USER(), LENGTH(CURRENT_USER()) - LENGTH(SUBSTRING_INDEX(CURRENT_USER(), '@', -1)) - 1), \
    '''@''', SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''') \
    OR GRANTEE = CONCAT('''', CURRENT_ROLE(), '''')";

/// A SIGNAL that raises `e` (its code, SQLSTATE and text); `None` for what
/// SIGNAL cannot raise as is (a success/warning class SQLSTATE, a backslash,
/// whose reading depends on the session's sql_mode).
fn signal_sql(e: &ErrPacket) -> Option<String> {
    let state = std::str::from_utf8(&e.state).ok()?;
    let ok_state = state.bytes().all(|b| b.is_ascii_alphanumeric())
        && !state.starts_with("00")
        && !state.starts_with("01");
    if !ok_state || e.message.contains('\\') || e.code == 0 {
        return None;
    }
    Some(format!(
        "SIGNAL SQLSTATE '{state}' SET MYSQL_ERRNO = {}, MESSAGE_TEXT = '{}'",
        e.code,
        e.message.replace('\'', "''")
    ))
}

/// See [`ADMIN_RIGHTS_SQL`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct AdminRights {
    connection_admin: bool,
    process: bool,
}

impl AdminRights {
    fn parse(flags: &str) -> AdminRights {
        let b = flags.as_bytes();
        AdminRights {
            connection_admin: b.first() == Some(&b'1'),
            process: b.get(1) == Some(&b'1'),
        }
    }
}

const ER_NO_SUCH_THREAD: u16 = 1094;
const ER_KILL_DENIED_ERROR: u16 = 1095;
const ER_QUERY_INTERRUPTED: u16 = 1317;
const ER_CONNECTION_KILLED: u16 = 1927;
const ER_NO_SUCH_QUERY: u16 = 1957;

/// Bytes per character of a collation's character set, as the server uses
/// for column lengths (utf8mb4 4, utf8mb3 3, ucs2 2, else 1).
fn mbmaxlen(collation: u8) -> u32 {
    match collation {
        45 | 46 | 224..=247 | 255 => 4,
        33 | 83 | 192..=215 => 3,
        35 | 90 | 128..=151 => 2,
        _ => 1,
    }
}

const TYPE_LONG: u8 = 3;
const TYPE_DOUBLE: u8 = 5;
const TYPE_LONGLONG: u8 = 8;
const TYPE_LONG_BLOB: u8 = 251;
const TYPE_VAR_STRING: u8 = 253;
const NOT_NULL: u16 = 1;
const BINARY: u16 = 128;

/// `SHOW [FULL] PROCESSLIST`'s columns exactly as MariaDB 10.11 describes
/// them (read from a server: types, lengths, flags, decimals), text columns
/// in the client's character set.
fn processlist_columns(collation: u8, full: bool) -> [Column; 9] {
    let cs = u16::from(collation);
    let m = mbmaxlen(collation);
    let text = |name, chars: u32, flags| Column {
        name,
        charset: cs,
        length: chars * m,
        type_: TYPE_VAR_STRING,
        flags,
        decimals: 39,
    };
    let info = if full {
        Column {
            type_: TYPE_LONG_BLOB,
            length: (805_306_368 / 4) * m,
            ..text("Info", 0, 0)
        }
    } else {
        text("Info", 100, 0)
    };
    [
        Column {
            name: "Id",
            charset: 63,
            length: 11,
            type_: TYPE_LONGLONG,
            flags: NOT_NULL | BINARY,
            decimals: 0,
        },
        text("User", 128, NOT_NULL),
        text("Host", 64, NOT_NULL),
        text("db", 64, 0),
        text("Command", 16, NOT_NULL),
        Column {
            name: "Time",
            charset: 63,
            length: 7,
            type_: TYPE_LONG,
            flags: NOT_NULL | BINARY,
            decimals: 0,
        },
        text("State", 30, 0),
        info,
        Column {
            name: "Progress",
            charset: 63,
            length: 7,
            type_: TYPE_DOUBLE,
            flags: NOT_NULL | BINARY,
            decimals: 3,
        },
    ]
}

/// MariaDB's names of client commands (`Command` column), by code.
fn command_name(cmd: u8) -> &'static str {
    const NAMES: [&str; 32] = [
        "Sleep",
        "Quit",
        "Init DB",
        "Query",
        "Field List",
        "Create DB",
        "Drop DB",
        "Refresh",
        "Shutdown",
        "Statistics",
        "Processlist",
        "Connect",
        "Kill",
        "Debug",
        "Ping",
        "Time",
        "Delayed insert",
        "Change user",
        "Binlog Dump",
        "Table Dump",
        "Connect Out",
        "Register Slave",
        "Prepare",
        "Execute",
        "Long Data",
        "Close stmt",
        "Reset stmt",
        "Set option",
        "Fetch",
        "Daemon",
        "Unimpl get tid",
        "Reset connection",
    ];
    NAMES.get(usize::from(cmd)).copied().unwrap_or("Error")
}

/// The first 100 characters (UTF-8; bytes otherwise), as `SHOW PROCESSLIST`
/// without FULL shows `Info`.
fn first_chars(text: &[u8], n: usize) -> &[u8] {
    match std::str::from_utf8(text) {
        Ok(s) => s.char_indices().nth(n).map_or(text, |(i, _)| &text[..i]),
        Err(_) => &text[..text.len().min(n)],
    }
}

fn processlist_row(r: Row, own: bool, full: bool) -> Vec<Option<Vec<u8>>> {
    let sleeping = r.command == crate::protocol::consts::COM_SLEEP;
    // The server's stage of a statement is not visible through sluice: the
    // own statement is "starting" (as the server shows it), others running
    // are "executing", idle ones empty.
    let state = match (own, sleeping) {
        (true, _) => "starting",
        (false, true) => "",
        (false, false) => "executing",
    };
    let info = r
        .info
        .map(|i| if full { i } else { first_chars(&i, 100).to_vec() });
    vec![
        Some(r.id.to_string().into_bytes()),
        Some(r.user.into_bytes()),
        Some(r.host.into_bytes()),
        r.db.map(String::into_bytes),
        Some(command_name(r.command).as_bytes().to_vec()),
        Some(r.time_s.to_string().into_bytes()),
        Some(state.as_bytes().to_vec()),
        info,
        Some(b"0.000".to_vec()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_mariadb() {
        let r = Row {
            id: 9,
            user: "app".into(),
            host: "127.0.0.1:4000".into(),
            db: None,
            command: crate::protocol::consts::COM_QUERY,
            time_s: 3,
            info: Some("é".repeat(150).into_bytes()),
        };
        let row = processlist_row(r.clone(), false, false);
        assert_eq!(row[0].as_deref(), Some(&b"9"[..]));
        assert_eq!(row[3], None);
        assert_eq!(row[4].as_deref(), Some(&b"Query"[..]));
        assert_eq!(row[6].as_deref(), Some(&b"executing"[..]));
        assert_eq!(
            row[7].as_ref().map(Vec::len),
            Some(200),
            "100 characters of 2 bytes"
        );
        let row = processlist_row(r, true, true);
        assert_eq!(row[7].as_ref().map(Vec::len), Some(300));
        assert_eq!(row[6].as_deref(), Some(&b"starting"[..]));
        assert_eq!(command_name(0), "Sleep");
        assert_eq!(command_name(0x1f), "Reset connection");
        assert_eq!(command_name(200), "Error");
        assert_eq!(first_chars(&[0xff; 120], 100).len(), 100);
    }

    #[test]
    fn column_lengths_scale_with_the_character_set() {
        let c = processlist_columns(45, false);
        assert_eq!(
            (c[1].length, c[7].length, c[7].type_),
            (512, 400, TYPE_VAR_STRING)
        );
        let c = processlist_columns(45, true);
        assert_eq!((c[7].length, c[7].type_), (805_306_368, TYPE_LONG_BLOB));
        let c = processlist_columns(8, false);
        assert_eq!((c[1].length, c[1].charset), (128, 8));
    }
}
