//! Statements on sharded tables: the plan (`crate::shard`) says which
//! sub-tables get which SQL; this runs the parts on backend connections and
//! merges the answers exactly (`crate::merge`), streaming.
//!
//! Reads outside a transaction run their parts concurrently, each on its own
//! pooled connection (a fresh replica when the freshness rules allow, else
//! the master), synchronized with the session's state, so the k-way merge
//! streams with one buffered row per shard whatever the OFFSET. Inside a
//! transaction (or a pinned session) the parts run one after the other on the
//! session's master connection, so they see the transaction's own writes.
//! Writes run on the session's master connection; several parts outside a
//! transaction are wrapped in one, so a multi-row INSERT split over
//! sub-tables is all-or-nothing.

use bytes::{Bytes, BytesMut};

use crate::backend::{BackendConn, Pooled};
use crate::merge::{self, MergeError, Merger, RowSource, TextRow};
use crate::protocol::consts::{errcode, CapabilityFlags, COM_QUERY, MAX_FRAME};
use crate::protocol::packets::{eof_packet, ok_packet, put_lenenc, ErrPacket, OkInfo};
use crate::shard::{Part, ShardPlan};

use super::{Closed, CmdResult, Conn, Session};

/// Flush merged rows to the client in batches of about this size.
const FLUSH_AT: usize = 256 * 1024;

fn not_supported(message: impl Into<String>) -> ErrPacket {
    ErrPacket::new(errcode::ER_NOT_SUPPORTED_YET, "42000", message)
}

/// Rows of one shard's result, read from its connection as the merge needs them.
struct ShardSource {
    conn: Pooled,
    done: bool,
}

impl RowSource for ShardSource {
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
                Ok(None)
            }
            Some(0xff) => {
                self.done = true;
                let e = ErrPacket::parse(&p.payload)
                    .unwrap_or_else(|| ErrPacket::new(2027, "HY000", "Malformed packet"));
                Err(MergeError::Server {
                    code: e.code,
                    sql_state: String::from_utf8_lossy(&e.state).into_owned(),
                    message: e.message,
                })
            }
            _ => TextRow::parse(p.payload.freeze()).map(Some),
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
    }
}

/// Rows already read (transaction path).
struct BufferedSource(std::collections::VecDeque<TextRow>);

impl RowSource for BufferedSource {
    async fn next(&mut self) -> Result<Option<TextRow>, MergeError> {
        Ok(self.0.pop_front())
    }
}

/// The head of a result: column definitions, or the server's error.
enum Head {
    Columns(Vec<Bytes>),
    Error(ErrPacket),
}

async fn send_query(conn: &mut BackendConn, sql: &str) -> Result<(), ErrPacket> {
    conn.send_command(COM_QUERY, sql.as_bytes())
        .await
        .map_err(|e| lost(&e.to_string()))
}

/// Run a statement answered by OK or ERR (a write part, START TRANSACTION,
/// COMMIT, ROLLBACK). `Err` carries the server's error or a lost connection.
async fn run_ok(conn: &mut BackendConn, sql: &str) -> Result<OkInfo, ErrPacket> {
    match conn.simple_command(COM_QUERY, sql.as_bytes()).await {
        Ok(r) => r,
        Err(e) => Err(lost(&e.to_string())),
    }
}

fn lost(why: &str) -> ErrPacket {
    ErrPacket::new(
        errcode::CR_SERVER_LOST,
        "HY000",
        format!("Lost connection to MySQL server during query (sluice: shard: {why})"),
    )
}

/// Read a result's column count and definitions.
async fn read_head(conn: &mut BackendConn) -> Result<Head, ErrPacket> {
    let first = conn.stream.read_packet().await.map_err(|e| {
        conn.broken = true;
        lost(&e.to_string())
    })?;
    match first.payload.first() {
        Some(0xff) => {
            return Ok(Head::Error(
                ErrPacket::parse(&first.payload)
                    .unwrap_or_else(|| ErrPacket::new(2027, "HY000", "Malformed packet")),
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
    let Some((n, _)) = crate::protocol::packets::read_lenenc(&first.payload) else {
        conn.broken = true;
        return Err(lost("malformed column count"));
    };
    let mut defs = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let p = conn.stream.read_packet().await.map_err(|e| {
            conn.broken = true;
            lost(&e.to_string())
        })?;
        defs.push(p.payload.freeze());
    }
    if !conn.deprecate_eof() {
        conn.stream.read_packet().await.map_err(|e| {
            conn.broken = true;
            lost(&e.to_string())
        })?;
    }
    Ok(Head::Columns(defs))
}

/// Read the rows of a result up to its terminator (buffered: only for
/// results that are small or must be read whole).
async fn read_rows(conn: &mut BackendConn) -> Result<std::collections::VecDeque<TextRow>, ErrPacket> {
    let mut rows = std::collections::VecDeque::new();
    loop {
        let p = conn.stream.read_packet().await.map_err(|e| {
            conn.broken = true;
            lost(&e.to_string())
        })?;
        match p.payload.first() {
            Some(0xfe) if p.payload.len() < MAX_FRAME => return Ok(rows),
            Some(0xff) => {
                return Err(ErrPacket::parse(&p.payload)
                    .unwrap_or_else(|| ErrPacket::new(2027, "HY000", "Malformed packet")))
            }
            _ => match TextRow::parse(p.payload.freeze()) {
                Ok(r) => rows.push_back(r),
                Err(e) => {
                    conn.broken = true;
                    return Err(not_supported(format!("sluice: {e}")));
                }
            },
        }
    }
}

impl Session {
    /// Handle a COM_QUERY on a sharded table. `Ok(false)`: not sharded,
    /// the caller goes on as usual.
    pub(super) async fn try_sharded(&mut self, sql: &[u8]) -> Result<bool, Closed> {
        let rules = &self.rt.shard_rules;
        if rules.is_empty() {
            return Ok(false);
        }
        let text = String::from_utf8_lossy(sql);
        if !rules.mentioned_in(&text) {
            return Ok(false);
        }
        // The planner reads string literals with backslash escapes; under
        // NO_BACKSLASH_ESCAPES a key with a backslash would be placed wrongly.
        if text.contains('\\') && self.no_backslash_escapes().await {
            self.send_err(&not_supported(
                "sluice: a statement on a sharded table with a backslash in it is not supported \
                 while sql_mode has NO_BACKSLASH_ESCAPES",
            ))
            .await?;
            return Ok(true);
        }
        let rules = &self.rt.shard_rules;
        let planned = crate::shard::plan(&text, self.db.as_deref(), rules);
        match planned {
            Ok(None) => Ok(false),
            Err(r) => {
                self.send_err(&not_supported(r.0)).await?;
                Ok(true)
            }
            Ok(Some(plan)) => {
                self.run_plan(plan).await?;
                Ok(true)
            }
        }
    }

    /// Does the session's sql_mode (on its master connection) have
    /// NO_BACKSLASH_ESCAPES? Asked only for sharded statements with a
    /// backslash; when it cannot be told, assume yes (refuse, never misplace).
    async fn no_backslash_escapes(&mut self) -> bool {
        if self.held(Conn::Master).await.is_err() {
            return true;
        }
        let Some(h) = self.master.as_mut() else {
            return true;
        };
        h.conn.dirty = true;
        if send_query(&mut h.conn, "SELECT @@session.sql_mode")
            .await
            .is_err()
        {
            return true;
        }
        let mode = match read_head(&mut h.conn).await {
            Ok(Head::Columns(_)) => match read_rows(&mut h.conn).await {
                Ok(rows) => rows
                    .front()
                    .and_then(|r| r.field(0))
                    .map(|f| String::from_utf8_lossy(f).into_owned()),
                Err(_) => None,
            },
            _ => None,
        };
        mode.is_none_or(|m| m.to_ascii_uppercase().contains("NO_BACKSLASH_ESCAPES"))
    }

    /// Prepared statements on sharded tables are not routed yet: refuse
    /// them clearly instead of letting the server say the table is missing.
    pub(super) fn sharded_prepare_refusal(&self, sql: &[u8]) -> Option<ErrPacket> {
        let rules = &self.rt.shard_rules;
        let text = String::from_utf8_lossy(sql);
        if rules.is_empty() || !rules.mentioned_in(&text) {
            return None;
        }
        let params =
            vec![crate::shard::ParamValue::Int(0); crate::shard::count_placeholders(&text).unwrap_or(0)];
        match crate::shard::plan_with_params(&text, &params, self.db.as_deref(), rules) {
            Ok(None) => None,
            _ => Some(not_supported(
                "sluice: prepared statements on sharded tables are not supported yet; send the statement as text",
            )),
        }
    }

    async fn run_plan(&mut self, plan: ShardPlan) -> CmdResult {
        if plan.parts().iter().any(|p| p.group != 0) {
            return self
                .send_err(&not_supported(
                    "sluice: sub-tables placed in several backend groups are not supported yet",
                ))
                .await;
        }
        self.shared.metrics.shard_fanout(plan.parts().len(), "sharded");
        match plan {
            ShardPlan::Write { parts, ddl } => self.run_write(parts, ddl).await,
            ShardPlan::Select {
                parts,
                merge,
                wildcard_helpers,
            } => self.run_select(parts, merge, wildcard_helpers).await,
        }
    }

    async fn run_write(&mut self, parts: Vec<Part>, ddl: bool) -> CmdResult {
        if let Err(e) = self.held(Conn::Master).await {
            return self.send_err(&e).await;
        }
        let wrap = !ddl && parts.len() > 1 && !self.in_transaction();
        let Some(h) = self.master.as_mut() else {
            return self.send_err(&lost("no master connection")).await;
        };
        h.conn.dirty = true;
        let conn = &mut h.conn;
        let mut failure: Option<ErrPacket> = None;
        let (mut affected, mut insert_id, mut warnings, mut status) = (0u64, 0u64, 0u16, self.status);
        if wrap {
            if let Err(e) = run_ok(conn, "START TRANSACTION").await {
                failure = Some(e);
            }
        }
        let mut done = 0usize;
        if failure.is_none() {
            for part in &parts {
                match run_ok(conn, &part.sql).await {
                    Ok(ok) => {
                        affected += ok.affected_rows;
                        if ok.last_insert_id != 0 {
                            insert_id = ok.last_insert_id;
                        }
                        warnings = warnings.saturating_add(ok.warnings);
                        status = ok.status;
                        done += 1;
                    }
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
        if wrap && !conn.broken {
            let end = if failure.is_some() { "ROLLBACK" } else { "COMMIT" };
            match run_ok(conn, end).await {
                Ok(ok) => status = ok.status,
                Err(e) => {
                    if failure.is_none() {
                        failure = Some(e);
                    }
                }
            }
        }
        let broken = conn.broken;
        if broken {
            self.master = None;
        }
        if let Some(mut e) = failure {
            if ddl && done > 0 {
                e.message.push_str(&format!(
                    " (sluice: the statement had already been applied to {done} of {} sub-tables)",
                    parts.len()
                ));
            }
            return self.send_err(&e).await;
        }
        self.status = status;
        if ddl {
            self.monitor.forget_tracked();
            self.monitor.bump_global().await;
        }
        if !self.in_transaction() {
            self.monitor.after_write().await;
        }
        let p = ok_packet(affected, insert_id, self.status, warnings);
        let mut seq = self.reply_seq;
        self.client.write_packet(&mut seq, &p).await.map_err(|_| Closed)
    }

    async fn run_select(
        &mut self,
        parts: Vec<Part>,
        merge: merge::MergeSpec,
        wildcard_helpers: Option<usize>,
    ) -> CmdResult {
        // One part with nothing to merge: the shard's answer is the answer.
        let plain =
            merge.order_by.is_empty() && merge.limit.is_none() && merge.group.is_none() && !merge.distinct;
        if parts.len() == 1 && plain && wildcard_helpers.is_none() {
            let route = self.route_read(None).await;
            let mut payload = Vec::with_capacity(1 + parts[0].sql.len());
            payload.push(COM_QUERY);
            payload.extend_from_slice(parts[0].sql.as_bytes());
            return self
                .run_on(
                    route,
                    &payload,
                    crate::protocol::response::ResponseKind::Query,
                    false,
                    None,
                )
                .await
                .map(drop);
        }
        if self.in_transaction() || self.pins.reason().is_some() || self.ro_tx.is_some() {
            return self.select_buffered(parts, merge, wildcard_helpers).await;
        }
        // Scatter: one connection per part, all queries sent before any is read.
        let mut conns = Vec::with_capacity(parts.len());
        for part in &parts {
            let mut conn = match self.scatter_conn().await {
                Ok(c) => c,
                Err(e) => return self.send_err(&e).await,
            };
            if let Err(e) = send_query(&mut conn, &part.sql).await {
                return self.send_err(&e).await;
            }
            conns.push(conn);
        }
        let mut heads = Vec::with_capacity(conns.len());
        for conn in conns.iter_mut() {
            match read_head(conn).await {
                Ok(h) => heads.push(h),
                Err(e) => return self.send_err(&e).await,
            }
        }
        let mut defs = None;
        for h in heads {
            match h {
                Head::Error(e) => return self.send_err(&e).await,
                Head::Columns(d) => {
                    if defs.is_none() {
                        defs = Some(d);
                    }
                }
            }
        }
        let defs = defs.unwrap_or_default();
        let sources = conns
            .into_iter()
            .map(|conn| ShardSource { conn, done: false })
            .collect();
        self.stream_merge(sources, defs, merge, wildcard_helpers).await
    }

    /// A connection for one part of a scatter read: a fresh replica's when
    /// the freshness rules allow, else the master's; in sync with the session.
    async fn scatter_conn(&mut self) -> Result<Pooled, ErrPacket> {
        let route = self.route_read(None).await;
        self.shared
            .metrics
            .route(route.conn == Conn::Master, route.reason);
        let group = &self.rt.topology.groups[0];
        let pool = match route.conn {
            Conn::Replica(i) => group.replicas.get(i).map(|r| r.pool.clone()),
            Conn::Master => None,
        }
        .unwrap_or_else(|| group.master.clone());
        let mut conn = pool
            .get(self.key)
            .await
            .map_err(|e| crate::error::backend_error_packet(&pool.label, pool.addr(), &e))?;
        super::sync_conn(&mut conn, &pool, self.db.as_deref(), &self.sets, &self.chain)
            .await
            .map_err(|e| e.into_packet(&pool))?;
        Ok(conn)
    }

    /// Inside a transaction: the parts run one by one on the session's
    /// master connection (they must see the transaction's writes), their
    /// rows buffered, then merged.
    async fn select_buffered(
        &mut self,
        parts: Vec<Part>,
        merge: merge::MergeSpec,
        wildcard_helpers: Option<usize>,
    ) -> CmdResult {
        if let Err(e) = self.held(Conn::Master).await {
            return self.send_err(&e).await;
        }
        let Some(h) = self.master.as_mut() else {
            return self.send_err(&lost("no master connection")).await;
        };
        h.conn.dirty = true;
        let mut defs = None;
        let mut sources = Vec::with_capacity(parts.len());
        let mut failure = None;
        for part in &parts {
            let conn = &mut h.conn;
            if let Err(e) = send_query(conn, &part.sql).await {
                failure = Some(e);
                break;
            }
            match read_head(conn).await {
                Ok(Head::Columns(d)) => {
                    if defs.is_none() {
                        defs = Some(d);
                    }
                }
                Ok(Head::Error(e)) => {
                    failure = Some(e);
                    break;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
            let rows = match read_rows(conn).await {
                Ok(rows) => rows,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            sources.push(BufferedSource(rows));
        }
        if let Some(e) = failure {
            if self.master.as_ref().is_some_and(|h| h.conn.broken) {
                self.master = None;
            }
            return self.send_err(&e).await;
        }
        self.stream_merge(sources, defs.unwrap_or_default(), merge, wildcard_helpers)
            .await
    }

    /// Merge `sources` and send the result set to the client.
    async fn stream_merge<S: RowSource>(
        &mut self,
        sources: Vec<S>,
        defs: Vec<Bytes>,
        merge: merge::MergeSpec,
        wildcard_helpers: Option<usize>,
    ) -> CmdResult {
        let spec = match crate::shard::bind_merge(&merge, wildcard_helpers, defs.len()) {
            Ok(s) => s,
            Err(r) => return self.send_err(&not_supported(r.0)).await,
        };
        let mut metas = Vec::with_capacity(defs.len());
        for d in &defs {
            let Some(mut m) = merge::parse_column_def(d) else {
                return self.send_err(&lost("malformed column definition")).await;
            };
            // Result metadata carries the connection's collation; strings
            // must be compared under the column's own.
            if is_text(&m) {
                if let Some((schema, table, column)) = merge::column_origin(d) {
                    if !table.is_empty() && !column.is_empty() {
                        if let Some(id) = self.monitor.column_collation(&schema, &table, &column).await {
                            m.collation = id;
                        }
                    }
                }
            }
            metas.push(m);
        }
        if let Some(col) = compared_columns(&spec)
            .into_iter()
            .find(|&c| metas.get(c).is_some_and(|m| !merge::exact_order(m)))
        {
            let name = merge::column_origin(&defs[col]).map(|o| o.2).unwrap_or_default();
            return self
                .send_err(&not_supported(format!(
                    "sluice: ordering, grouping or comparing column `{name}` across shards is not supported \
                     for its collation (sluice cannot reproduce that collation's order exactly)"
                )))
                .await;
        }
        let mut merger = match Merger::new(sources, spec, metas) {
            Ok(m) => m,
            Err(MergeError::Unsupported(why)) => {
                return self.send_err(&not_supported(format!("sluice: {why}"))).await
            }
            Err(e) => return self.send_err(&not_supported(format!("sluice: {e}"))).await,
        };
        // Result header: visible columns, with the types the merge produces.
        let visible = merger.visible();
        let mut seq = self.reply_seq;
        let mut count = BytesMut::new();
        put_lenenc(&mut count, visible as u64);
        self.client.queue(&mut seq, &count);
        for (i, d) in defs.iter().take(visible).enumerate() {
            let out = merger
                .output_metas()
                .get(i)
                .and_then(|m| merge::rewrite_column_def(d, m))
                .unwrap_or_else(|| d.to_vec());
            self.client.queue(&mut seq, &out);
        }
        let deprecate_eof = self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
        if !deprecate_eof {
            self.client
                .queue(&mut seq, &eof_packet(self.caps, self.status, 0));
        }
        loop {
            match merger.next_row().await {
                Ok(Some(row)) => {
                    self.client.queue(&mut seq, &row);
                    if self.client.wbuf.len() >= FLUSH_AT {
                        self.client.flush().await.map_err(|_| Closed)?;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let err = match e {
                        MergeError::Server {
                            code,
                            sql_state,
                            message,
                        } => ErrPacket::new(code, &sql_state, message),
                        MergeError::Unsupported(why) => not_supported(format!("sluice: {why}")),
                        other => lost(&other.to_string()),
                    };
                    self.client.queue(&mut seq, &err.encode());
                    return self.client.flush().await.map_err(|_| Closed);
                }
            }
        }
        self.shared.metrics.merged_rows(merger.rows_merged());
        self.client
            .queue(&mut seq, &eof_packet(self.caps, self.status, 0));
        self.client.flush().await.map_err(|_| Closed)
    }
}

/// The columns whose values the merge compares (sort keys, group keys,
/// MIN/MAX and COUNT(DISTINCT) arguments, all visible columns for DISTINCT).
fn compared_columns(spec: &merge::MergeSpec) -> Vec<usize> {
    let mut cols: Vec<usize> = spec.order_by.iter().map(|k| k.col).collect();
    if let Some(g) = &spec.group {
        cols.extend(&g.keys);
        cols.extend(g.order_after.iter().map(|k| k.col));
        cols.extend(
            g.aggs
                .iter()
                .filter(|a| {
                    matches!(
                        a.kind,
                        merge::AggKind::Min | merge::AggKind::Max | merge::AggKind::CountDistinct
                    )
                })
                .map(|a| a.col),
        );
    }
    if spec.distinct {
        cols.extend(0..spec.visible);
    }
    cols
}

/// A non-binary string column (its collation decides comparisons).
fn is_text(m: &merge::ColumnMeta) -> bool {
    const BINARY_COLLATION: u16 = 63;
    matches!(m.column_type, 15 | 249..=254) && m.collation != BINARY_COLLATION
}
