//! Reading shard answers off backend connections (column heads, rows, OK/ERR),
//! the row sources the merge pulls from, and the optional query log
//! (`log.sql_log`: each rewritten statement, its backend and its time, as an
//! INFO event on the `sluice::sql_log` target).

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use crate::backend::{BackendConn, Pooled};
use crate::frontend::params::RawParam;
use crate::merge::{binary_row_to_text, ColumnMeta, MergeError, RowSource, TextRow};
use crate::protocol::consts::{
    errcode, COM_QUERY, COM_STMT_EXECUTE, COM_STMT_PREPARE, COM_STMT_SEND_LONG_DATA, MAX_FRAME,
};
use crate::protocol::packets::{terminator_warnings, ErrPacket, OkInfo};
use crate::shard::Part;

pub(super) fn not_supported(message: impl Into<String>) -> ErrPacket {
    ErrPacket::new(errcode::ER_NOT_SUPPORTED_YET, "42000", message)
}

pub(super) fn lost(why: &str) -> ErrPacket {
    ErrPacket::new(
        errcode::ER_NET_READ_ERROR,
        "08S01",
        format!("Lost connection to MySQL server during query (sluice: shard: {why})"),
    )
}

fn malformed_err() -> ErrPacket {
    ErrPacket::new(2027, "HY000", "Malformed packet")
}

/// One rewritten statement on its way to a backend, for the query log
/// (`None` when the log is off, so nothing is cloned).
pub(super) struct PartLog {
    started: Instant,
    sql: String,
    backend: String,
    shard: u32,
}

tokio::task_local! {
    /// The client's statement mentions a password (perhaps only in a
    /// comment the rewritten parts no longer carry): log no part's text.
    /// Set by `run_shards` for the statement's whole run.
    pub(super) static HIDE_PART_SQL: bool;
}

impl PartLog {
    pub(super) fn start(on: bool, sql: &str, backend: &str, shard: u32) -> Option<PartLog> {
        on.then(|| PartLog {
            started: Instant::now(),
            // Escaped, capped, and hidden when it may hold a password.
            sql: if HIDE_PART_SQL.try_with(|h| *h).unwrap_or(false) {
                crate::logging::REDACTED.to_owned()
            } else {
                crate::logging::loggable_sql(sql)
            },
            backend: backend.to_string(),
            shard,
        })
    }

    /// Emit the event; `outcome` is "ok", "error" or "stopped" (a merge that
    /// needed no more rows).
    pub(super) fn finish(self, outcome: &'static str) {
        tracing::info!(
            target: "sluice::sql_log",
            shard = self.shard,
            backend = %self.backend,
            elapsed_us = self.started.elapsed().as_micros() as u64,
            outcome,
            sql = %self.sql,
            "shard statement"
        );
    }
}

/// Finish an optional log entry.
pub(super) fn log_done(log: Option<PartLog>, ok: bool) {
    if let Some(l) = log {
        l.finish(if ok { "ok" } else { "error" });
    }
}

/// Rows of one shard's result, read from its connection as the merge needs them.
pub(super) struct ShardSource {
    pub conn: Pooled,
    pub done: bool,
    pub log: Option<PartLog>,
    /// Binary-protocol rows (a part run as a prepared statement), decoded with these
    /// column types into the text form the merge reads.
    pub binary: Option<Vec<ColumnMeta>>,
    /// The warning count of its end of rows, once read.
    pub warnings: u16,
}

impl RowSource for ShardSource {
    fn warnings(&self) -> Option<u16> {
        self.done.then_some(self.warnings)
    }

    async fn next(&mut self) -> Result<Option<TextRow>, MergeError> {
        if self.done {
            return Ok(None);
        }
        let p = match self.conn.stream.read_packet().await {
            Ok(p) => p,
            Err(e) => {
                self.conn.broken = true;
                return Err(MergeError::Source(e.to_string()));
            }
        };
        match p.payload.first() {
            Some(0xfe) if p.payload.len() < MAX_FRAME => {
                self.done = true;
                let deprecate_eof = self.conn.deprecate_eof();
                self.warnings = terminator_warnings(&p.payload, deprecate_eof).unwrap_or(0);
                log_done(self.log.take(), true);
                Ok(None)
            }
            Some(0xff) => {
                self.done = true;
                log_done(self.log.take(), false);
                let e = ErrPacket::parse(&p.payload).unwrap_or_else(malformed_err);
                Err(MergeError::Server {
                    code: e.code,
                    sql_state: String::from_utf8_lossy(&e.state).into_owned(),
                    message: e.message,
                })
            }
            _ => match &self.binary {
                Some(metas) => binary_row_to_text(&p.payload, metas).map(Some),
                None => TextRow::parse(p.payload.freeze()).map(Some),
            },
        }
    }
}

impl Drop for ShardSource {
    fn drop(&mut self) {
        // Stopped before the end (LIMIT reached, error): the server is still
        // sending. Closing the connection ends that query; it must not go
        // back to the pool mid-response.
        if !self.done {
            self.conn.broken = true;
        }
        if let Some(l) = self.log.take() {
            l.finish("stopped");
        }
    }
}

/// Rows already read (transaction path), and the warnings their part reported.
pub(super) struct BufferedSource(pub VecDeque<TextRow>, pub u16);

impl RowSource for BufferedSource {
    fn warnings(&self) -> Option<u16> {
        Some(self.1)
    }

    async fn next(&mut self) -> Result<Option<TextRow>, MergeError> {
        Ok(self.0.pop_front())
    }
}

/// The head of a result: column definitions, or the server's error.
pub(super) enum Head {
    Columns(Vec<Bytes>),
    Error(ErrPacket),
}

pub(super) async fn send_query(conn: &mut BackendConn, sql: &str) -> Result<(), ErrPacket> {
    conn.send_command(COM_QUERY, sql.as_bytes())
        .await
        .map_err(|e| lost(&e.to_string()))
}

/// Run a statement answered by OK or ERR (a write part, START TRANSACTION,
/// COMMIT, ROLLBACK). `Err` carries the server's error or a lost connection.
pub(super) async fn run_ok(conn: &mut BackendConn, sql: &str) -> Result<OkInfo, ErrPacket> {
    match conn.simple_command(COM_QUERY, sql.as_bytes()).await {
        Ok(r) => r,
        Err(e) => Err(lost(&e.to_string())),
    }
}

/// Read one packet; a failure marks the connection broken.
pub(super) async fn read_payload(conn: &mut BackendConn) -> Result<bytes::BytesMut, ErrPacket> {
    match conn.stream.read_packet().await {
        Ok(p) => Ok(p.payload),
        Err(e) => {
            conn.broken = true;
            Err(lost(&e.to_string()))
        }
    }
}

/// Read a result's column count and definitions.
pub(super) async fn read_head(conn: &mut BackendConn) -> Result<Head, ErrPacket> {
    let first = read_payload(conn).await?;
    match first.first() {
        Some(0xff) => {
            return Ok(Head::Error(
                ErrPacket::parse(&first).unwrap_or_else(malformed_err),
            ))
        }
        Some(0x00) | Some(0xfb) | None => {
            conn.broken = true;
            return Err(not_supported(
                "sluice: a shard answered a SELECT without a result set",
            ));
        }
        _ => {}
    }
    let Some((n, _)) = crate::protocol::packets::read_lenenc(&first) else {
        conn.broken = true;
        return Err(lost("malformed column count"));
    };
    let defs = read_defs(conn, n).await?;
    Ok(Head::Columns(defs))
}

/// Read `n` column (or parameter) definitions and, without
/// CLIENT_DEPRECATE_EOF, the EOF after them (none when `n` is 0).
pub(super) async fn read_defs(conn: &mut BackendConn, n: u64) -> Result<Vec<Bytes>, ErrPacket> {
    let mut defs = Vec::with_capacity(n.min(4096) as usize);
    for _ in 0..n {
        defs.push(read_payload(conn).await?.freeze());
    }
    if n > 0 && !conn.deprecate_eof() {
        read_payload(conn).await?;
    }
    Ok(defs)
}

/// Send a part: its text (COM_QUERY), or, when it has parameters, its
/// COM_STMT_PREPARE (then [`execute_part`] once the answer is there).
pub(super) async fn send_part(conn: &mut BackendConn, part: &Part) -> Result<(), ErrPacket> {
    let cmd = if !part.runs_prepared() {
        COM_QUERY
    } else {
        COM_STMT_PREPARE
    };
    conn.send_command(cmd, part.sql.as_bytes())
        .await
        .map_err(|e| lost(&e.to_string()))
}

/// For a part with parameters: read the answer to its COM_STMT_PREPARE, then send
/// COM_STMT_EXECUTE with the client's parameters (`params`, as the client bound them)
/// in the part's order, and COM_STMT_CLOSE (no answer; the server runs it once the
/// result has been sent). The result is then read like a query's, in binary rows.
/// Nothing to do for a text part.
pub(super) async fn execute_part(
    conn: &mut BackendConn,
    part: &Part,
    params: &[RawParam],
) -> Result<(), ErrPacket> {
    if !part.runs_prepared() {
        return Ok(());
    }
    let bound: Option<Vec<&RawParam>> = part.params.iter().map(|&i| params.get(usize::from(i))).collect();
    execute_prepared(conn, bound.as_deref()).await
}

/// Read the answer to a COM_STMT_PREPARE already sent, then execute the statement with
/// `bound` (in its order) and close it; `None`: a parameter is missing (the statement is
/// closed, an error returned).
pub(super) async fn execute_prepared(
    conn: &mut BackendConn,
    bound: Option<&[&RawParam]>,
) -> Result<(), ErrPacket> {
    let first = read_payload(conn).await?;
    match first.first() {
        Some(0x00) if first.len() >= 12 => {}
        Some(0xff) => return Err(ErrPacket::parse(&first).unwrap_or_else(malformed_err)),
        _ => {
            conn.broken = true;
            return Err(lost("malformed answer to COM_STMT_PREPARE"));
        }
    }
    let id = u32::from_le_bytes([first[1], first[2], first[3], first[4]]);
    let columns = u16::from_le_bytes([first[5], first[6]]);
    let count = u16::from_le_bytes([first[7], first[8]]);
    read_defs(conn, u64::from(count)).await?;
    read_defs(conn, u64::from(columns)).await?;
    let Some(bound) = bound else {
        let _ = conn.close_stmt(id).await;
        return Err(not_supported("sluice: internal error: a parameter is missing"));
    };
    if usize::from(count) != bound.len() {
        let _ = conn.close_stmt(id).await;
        return Err(not_supported(format!(
            "sluice: a sub-table's statement has {count} parameters where sluice bound {}",
            bound.len()
        )));
    }
    // Long data goes on as long data (the server reads it by the parameter's type as the
    // client's statement would), in pieces well under any max_allowed_packet.
    for (i, p) in bound.iter().enumerate().filter(|(_, p)| p.long) {
        let index = u16::try_from(i).map_err(|_| lost("too many parameters"))?;
        let mut pieces = p.value.chunks(LONG_DATA_PIECE).peekable();
        if pieces.peek().is_none() {
            send_long_data(conn, id, index, &[]).await?;
        }
        for piece in pieces {
            send_long_data(conn, id, index, piece).await?;
        }
    }
    let inline = bound.iter().filter(|p| !p.long).map(|p| p.value.len() + 3);
    let mut body = Vec::with_capacity(16 + inline.sum::<usize>());
    body.extend_from_slice(&id.to_le_bytes());
    body.push(0); // no cursor
    body.extend_from_slice(&1u32.to_le_bytes());
    RawParam::encode_block(bound, &mut body);
    conn.send_command(COM_STMT_EXECUTE, &body)
        .await
        .map_err(|e| lost(&e.to_string()))?;
    conn.close_stmt(id).await.map_err(|e| lost(&e.to_string()))
}

/// The largest piece of long data sent in one COM_STMT_SEND_LONG_DATA.
const LONG_DATA_PIECE: usize = 256 << 10;

/// One COM_STMT_SEND_LONG_DATA (the server answers none).
async fn send_long_data(conn: &mut BackendConn, id: u32, index: u16, data: &[u8]) -> Result<(), ErrPacket> {
    let mut body = Vec::with_capacity(6 + data.len());
    body.extend_from_slice(&id.to_le_bytes());
    body.extend_from_slice(&index.to_le_bytes());
    body.extend_from_slice(data);
    conn.send_command(COM_STMT_SEND_LONG_DATA, &body)
        .await
        .map_err(|e| lost(&e.to_string()))
}

/// Run a write part and read its OK or ERR: as text, or, when it has parameters, as a
/// prepared statement executed with the client's own parameters (`params`, as the client
/// bound them) in the part's order.
pub(super) async fn run_part_ok(
    conn: &mut BackendConn,
    part: &Part,
    params: &[RawParam],
) -> Result<(OkInfo, Option<String>), ErrPacket> {
    if !part.runs_prepared() {
        conn.send_command(COM_QUERY, part.sql.as_bytes())
            .await
            .map_err(|e| lost(&e.to_string()))?;
    } else {
        send_part(conn, part).await?;
        execute_part(conn, part, params).await?;
    }
    let p = read_payload(conn).await?;
    match p.first() {
        Some(0x00) => match crate::protocol::packets::parse_ok(&p) {
            Some(ok) => {
                conn.status = ok.status;
                let info =
                    crate::protocol::packets::ok_info(&p).map(|i| String::from_utf8_lossy(i).into_owned());
                Ok((ok, info))
            }
            None => {
                conn.broken = true;
                Err(lost("malformed OK packet"))
            }
        },
        Some(0xff) => Err(ErrPacket::parse(&p).unwrap_or_else(malformed_err)),
        _ => {
            // A result set where an OK was expected: not a write after all.
            conn.broken = true;
            Err(not_supported(
                "sluice: a sub-table's part of a write answered with a result set",
            ))
        }
    }
}

/// The column types of a result's definitions, to decode its binary rows
/// (None when the part ran as text).
pub(super) fn binary_metas(part: &Part, defs: &[Bytes]) -> Result<Option<Vec<ColumnMeta>>, ErrPacket> {
    if !part.runs_prepared() {
        return Ok(None);
    }
    defs.iter()
        .map(|d| crate::merge::parse_column_def(d).ok_or_else(|| lost("malformed column definition")))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Read the rows of a result up to its terminator (buffered: only for
/// results that are small or must be read whole).
pub(super) async fn read_rows(conn: &mut BackendConn) -> Result<VecDeque<TextRow>, ErrPacket> {
    read_rows_as(conn, None).await
}

/// Read the rows of a result up to its terminator and drop them (a result
/// only its column definitions were wanted of). `Err` for the server's error.
pub(super) async fn drain_rows(conn: &mut BackendConn) -> Result<(), ErrPacket> {
    loop {
        let p = read_payload(conn).await?;
        match p.first() {
            Some(0xfe) if p.len() < MAX_FRAME => return Ok(()),
            Some(0xff) => return Err(ErrPacket::parse(&p).unwrap_or_else(malformed_err)),
            _ => {}
        }
    }
}

/// [`read_rows`], of binary rows when `binary` gives their column types.
pub(super) async fn read_rows_as(
    conn: &mut BackendConn,
    binary: Option<&[ColumnMeta]>,
) -> Result<VecDeque<TextRow>, ErrPacket> {
    read_rows_warned(conn, binary).await.map(|(rows, _)| rows)
}

/// [`read_rows_as`], with the warning count of the end of rows.
pub(super) async fn read_rows_warned(
    conn: &mut BackendConn,
    binary: Option<&[ColumnMeta]>,
) -> Result<(VecDeque<TextRow>, u16), ErrPacket> {
    let mut rows = VecDeque::new();
    loop {
        let p = read_payload(conn).await?;
        match p.first() {
            Some(0xfe) if p.len() < MAX_FRAME => {
                let warnings = terminator_warnings(&p, conn.deprecate_eof()).unwrap_or(0);
                return Ok((rows, warnings));
            }
            Some(0xff) => return Err(ErrPacket::parse(&p).unwrap_or_else(malformed_err)),
            _ => {
                let row = match binary {
                    Some(m) => binary_row_to_text(&p, m),
                    None => TextRow::parse(p.freeze()),
                };
                match row {
                    Ok(r) => rows.push_back(r),
                    Err(e) => {
                        conn.broken = true;
                        return Err(not_supported(format!("sluice: {e}")));
                    }
                }
            }
        }
    }
}

/// At most this many warnings are planted (one column each).
const PLANTED_MAX: usize = 1000;

/// A statement whose warnings are the server's `Row N was cut by GROUP_CONCAT()` for the
/// given row numbers, in order (then copies of `Row 1` up to `total`, which only
/// `@@warning_count` shows beyond the first [`merge::MAX_CUT_WARNINGS`]): column j
/// appends N_j - 1 empty strings then one longer than the limit, so its own row counter
/// reads N_j when it is cut. Uses the Sequence engine's `seq_1_to_n`.
pub(super) fn plant_cut_warnings(rows: &[u64], total: u64) -> String {
    let n = rows.iter().copied().max().unwrap_or(1).max(1);
    let mut sql = format!(
        "SET STATEMENT group_concat_max_len = 4, {} FOR SELECT ",
        crate::backend::conn::NO_SELECT_LIMIT
    );
    let columns = usize::try_from(total).unwrap_or(usize::MAX).min(PLANTED_MAX);
    for j in 0..columns {
        if j > 0 {
            sql.push_str(", ");
        }
        let row = rows.get(j).copied().unwrap_or(1);
        sql.push_str(&format!(
            "GROUP_CONCAT(IF(seq < {row}, '', 'xxxxx') ORDER BY seq SEPARATOR '')"
        ));
    }
    sql.push_str(&format!(" FROM seq_1_to_{n}"));
    sql
}

/// A part's error in place of its rows: a data exception (SQLSTATE class 22, such as
/// 1690 out of range) met on rows the server may never evaluate, those past a LIMIT
/// (`merge::over_read_refusal`) or in groups a HAVING drops (`merge::having_refusal`),
/// is a refusal; any other error is the statement's own.
pub(super) fn part_error(e: ErrPacket, merge: &crate::merge::MergeSpec) -> ErrPacket {
    if !e.state.starts_with(b"22") {
        return e;
    }
    if merge.limit.is_some() {
        not_supported(crate::merge::over_read_refusal(e.code, &e.message))
    } else if merge.group.as_ref().is_some_and(|g| g.having.is_some()) {
        not_supported(crate::merge::having_refusal(e.code, &e.message))
    } else {
        e
    }
}
