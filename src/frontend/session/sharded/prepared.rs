//! Prepared statements on sharded tables.
//!
//! PREPARE: sluice checks that the statement can be planned, then asks a
//! backend to describe it by preparing the client's text with the sharded
//! table named by its first sub-table (`crate::shard::describe`), so the
//! parameter and column definitions the client gets are the server's own;
//! that backend statement is closed at once. The client's statement is kept
//! in the registry as a sharded one (prepared on no backend).
//!
//! EXECUTE: the binary parameters are decoded (`frontend::params`, with the
//! types of an earlier EXECUTE and COM_STMT_SEND_LONG_DATA bytes), the
//! statement is planned with their values (a key parameter routes exactly as
//! a literal would), each part runs on its sub-table as a prepared statement
//! bound with the client's own typed parameters (long data passed on as long
//! data: a value is never written into SQL), and the merged rows go back to
//! the client in the binary protocol. Cursors are refused (a cursor needs the
//! merge kept open between COM_STMT_FETCHes).

use bytes::{BufMut, BytesMut};

use crate::error;
use crate::frontend::params;
use crate::frontend::prepared::{ShardedStmt, Stmt};
use crate::protocol::consts::{CapabilityFlags, COM_STMT_PREPARE};
use crate::protocol::packets::{eof_packet, ErrPacket};
use crate::protocol::response::ResponseKind;
use crate::shard::{Charset, ParamValue, ShardPlan};

use super::io::{lost, not_supported, read_defs, read_payload};
use super::select::RowFormat;
use super::{Closed, Session, Sharding, Shards};
use crate::frontend::session::CmdResult;

/// CURSOR_TYPE_READ_ONLY in COM_STMT_EXECUTE's flags.
const CURSOR_READ_ONLY: u8 = 0x01;

/// What a backend's COM_STMT_PREPARE answered.
struct Described {
    warnings: u16,
    params: Vec<bytes::Bytes>,
    columns: Vec<bytes::Bytes>,
}

impl Session {
    /// COM_STMT_PREPARE of a statement on a sharded table, answered here.
    /// `Ok(false)`: the statement names no sharded table.
    pub(in crate::frontend::session) async fn sharded_prepare(
        &mut self,
        payload: &[u8],
    ) -> Result<bool, Closed> {
        let rules = &self.rt.shard_rules;
        if rules.is_empty() {
            return Ok(false);
        }
        let text = String::from_utf8_lossy(&payload[1..]).into_owned();
        if !rules.mentioned_in(&text) {
            return Ok(false);
        }
        let count = crate::shard::count_placeholders(&text).unwrap_or(0);
        let mut checked = plannable(&text, count, self.state.db(), rules);
        let wants = matches!(&checked, Err(e) if crate::shard::wants_columns(&crate::shard::Refusal(e.message.clone())));
        if wants && self.learn_columns(&text).await {
            checked = plannable(&text, count, self.state.db(), &self.rt.shard_rules);
        }
        match checked {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(e) => {
                self.send_err(&e).await?;
                return Ok(true);
            }
        }
        if let Some(refusal) = self.unreadable_text(&payload[1..]).await {
            self.send_err(&not_supported(refusal)).await?;
            return Ok(true);
        }
        let rules = &self.rt.shard_rules;
        let Some(d) = crate::shard::describe(&text, self.state.db(), rules) else {
            self.send_err(&not_supported(
                "sluice: cannot prepare this statement on a sharded table; send it as text",
            ))
            .await?;
            return Ok(true);
        };
        let described = self.describe_on(d.group, &d.sql).await;
        self.drop_broken(d.group);
        self.groups_settle().await;
        let described = match described {
            Ok(x) => x,
            Err(e) => {
                self.send_err(&e).await?;
                return Ok(true);
            }
        };
        if described.params.len() != count {
            self.send_err(&not_supported(format!(
                "sluice: the server counts {} parameters in this statement on a sharded table where \
                 sluice counts {count}; it is not supported",
                described.params.len()
            )))
            .await?;
            return Ok(true);
        }
        let mut stmt = Stmt::new(
            payload[1..].to_vec(),
            std::sync::Arc::new(crate::router::classify::classify(&payload[1..])),
            count as u16,
        );
        stmt.sharded = Some(ShardedStmt {
            long_data: vec![None; count],
            long_data_sent: 0,
        });
        let id = self.stmts.insert(stmt);
        self.send_prepare_ok(id, &described).await?;
        Ok(true)
    }

    /// Prepare `sql` on `group`'s master, keep the server's answer, close it there.
    async fn describe_on(&mut self, group: usize, sql: &str) -> Result<Described, ErrPacket> {
        let rt = self.rt.clone();
        let conn = self.group_master(group).await?;
        conn.send_command(COM_STMT_PREPARE, sql.as_bytes())
            .await
            .map_err(|e| lost(&e.to_string()))?;
        let first = read_payload(conn).await?;
        match first.first() {
            Some(0x00) if first.len() >= 12 => {}
            Some(0xff) => {
                return Err(ErrPacket::parse(&first)
                    .unwrap_or_else(|| ErrPacket::new(2027, "HY000", "Malformed packet")))
            }
            _ => {
                conn.broken = true;
                return Err(lost("malformed answer to COM_STMT_PREPARE"));
            }
        }
        let u16_at = |i: usize| u16::from_le_bytes([first[i], first[i + 1]]);
        let backend_id = u32::from_le_bytes([first[1], first[2], first[3], first[4]]);
        let (columns, params, warnings) = (u16_at(5), u16_at(7), u16_at(10));
        let params = read_defs(conn, u64::from(params)).await?;
        // Named by the logical table, as the server names it for the unsharded statement.
        let columns = read_defs(conn, u64::from(columns))
            .await?
            .into_iter()
            .map(|c| crate::shard::logical_names(&c, &rt.shard_rules).map_or(c, bytes::Bytes::from))
            .collect();
        // No answer to read; a failed write leaves the connection broken.
        let _ = conn.close_stmt(backend_id).await;
        Ok(Described {
            warnings,
            params,
            columns,
        })
    }

    async fn send_prepare_ok(&mut self, id: u32, d: &Described) -> CmdResult {
        let mut ok = BytesMut::with_capacity(12);
        ok.put_u8(0x00);
        ok.put_u32_le(id);
        ok.put_u16_le(d.columns.len() as u16);
        ok.put_u16_le(d.params.len() as u16);
        ok.put_u8(0);
        ok.put_u16_le(d.warnings);
        let mut seq = self.reply_seq;
        self.client.queue(&mut seq, &ok);
        let eof = !self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
        for defs in [&d.params, &d.columns] {
            for def in defs.iter() {
                self.client.queue(&mut seq, def);
            }
            if eof && !defs.is_empty() {
                self.client
                    .queue(&mut seq, &eof_packet(self.caps, self.state.status(), 0));
            }
        }
        self.client.flush().await.map_err(|_| Closed)
    }

    /// COM_STMT_EXECUTE of a sharded statement: its parameters decoded and
    /// the statement planned with them (or refused, answered here).
    pub(super) async fn plan_execute(&mut self, id: u32, payload: &[u8]) -> Result<Sharding, Closed> {
        let Some(stmt) = self.stmts.stmts.get_mut(&id) else {
            return self.refuse(&error::unknown_stmt(id, "mysqld_stmt_execute")).await;
        };
        let n = usize::from(stmt.params);
        let sent = stmt
            .sharded
            .as_mut()
            .map_or(0, |s| std::mem::take(&mut s.long_data_sent));
        let long = stmt
            .sharded
            .as_mut()
            .map(|s| std::mem::replace(&mut s.long_data, vec![None; n]))
            .unwrap_or_default();
        // As MariaDB does past max_long_data_size, the bytes were dropped as
        // they came and the EXECUTE fails (sluice must hold them until the
        // EXECUTE's values say which sub-table they go to).
        let cap = self.rt.shard_rules.max_long_data_size();
        if sent > cap {
            return self
                .refuse(&not_supported(format!(
                    "sluice: {sent} bytes of long data were sent for this statement on a sharded \
                     table; sluice holds at most {cap} per statement (sharding.max_long_data_size)"
                )))
                .await;
        }
        let Some(stmt) = self.stmts.stmts.get_mut(&id) else {
            return self.refuse(&error::unknown_stmt(id, "mysqld_stmt_execute")).await;
        };
        let (values, raw) = match params::decode(payload, n, stmt.types.as_deref(), &long) {
            Ok(d) => {
                if let Some(t) = d.bound_types {
                    stmt.types = Some(t);
                }
                (d.values, d.raw)
            }
            Err(e) => return self.refuse(&error::bad_params(&e)).await,
        };
        let text = String::from_utf8_lossy(&stmt.sql).into_owned();
        let cursor = payload.get(5).is_some_and(|f| f & CURSOR_READ_ONLY != 0);
        // A string parameter that is not ASCII places a row by its bytes only
        // in a UTF-8 client character set (`crate::shard::Charset`); a
        // backslash in the text is read as an escape, wrong under
        // NO_BACKSLASH_ESCAPES.
        let cs = if !text.is_ascii() || text.contains('\\') || values.iter().any(crate::shard::needs_charset)
        {
            self.session_charset().await
        } else {
            Charset::default()
        };
        if !text.is_ascii() && !cs.lexes_like_utf8() {
            return self
                .refuse(&not_supported(
                    "sluice: a prepared statement on a sharded table with non-ASCII text is not supported \
                     under this character_set_client (a multi-byte character set other than UTF-8); bind \
                     such values as parameters",
                ))
                .await;
        }
        if text.contains('\\') && cs.no_backslash_escapes {
            return self
                .refuse(&not_supported(
                    "sluice: a prepared statement on a sharded table with a backslash in its text is not \
                     supported while sql_mode has NO_BACKSLASH_ESCAPES",
                ))
                .await;
        }
        let planned = self.plan_sharded(&text, Some((&values, &cs))).await;
        match planned {
            Err(r) => self.refuse(&not_supported(r.0)).await,
            Ok(None) => {
                self.refuse(&not_supported(
                    "sluice: this prepared statement no longer names a sharded table (the default \
                     database changed since it was prepared); prepare it again",
                ))
                .await
            }
            Ok(Some(ShardPlan::Select { .. })) if cursor => {
                self.refuse(&not_supported(
                    "sluice: cursors (CURSOR_TYPE_READ_ONLY) on prepared statements over sharded tables \
                     are not supported; execute the statement without a cursor",
                ))
                .await
            }
            Ok(Some(plan)) => Ok(Sharding::On(Box::new(Shards {
                plan,
                format: RowFormat::Binary,
                params: raw,
            }))),
        }
    }

    /// COM_STMT_FETCH (no cursor is ever open) and COM_STMT_RESET (forget
    /// long data) of a sharded statement.
    pub(in crate::frontend::session) async fn sharded_follow(
        &mut self,
        id: u32,
        kind: ResponseKind,
    ) -> CmdResult {
        if kind == ResponseKind::Fetch {
            return self.send_err(&error::no_open_cursor(id)).await;
        }
        if let Some(s) = self.stmts.stmts.get_mut(&id).and_then(|s| s.sharded.as_mut()) {
            s.long_data.iter_mut().for_each(|d| *d = None);
            s.long_data_sent = 0;
        }
        self.send_ok().await
    }

    /// COM_STMT_SEND_LONG_DATA of a sharded statement: kept until EXECUTE
    /// (no response is defined; a bad parameter index is ignored, as the
    /// server reports it only at EXECUTE), at most `sharding.max_long_data_size`
    /// bytes per statement.
    pub(in crate::frontend::session) fn sharded_long_data(&mut self, id: u32, payload: &[u8]) {
        let (Some(p), Some(data)) = (payload.get(5..7), payload.get(7..)) else {
            return;
        };
        let index = usize::from(u16::from_le_bytes([p[0], p[1]]));
        // Capped at sharding.max_long_data_size over all of the statement's
        // parameters: past the cap the bytes are dropped at once and the
        // EXECUTE fails.
        let cap = self.rt.shard_rules.max_long_data_size();
        let Some(s) = self.stmts.stmts.get_mut(&id).and_then(|s| s.sharded.as_mut()) else {
            return;
        };
        s.long_data_sent = s.long_data_sent.saturating_add(data.len());
        if s.long_data_sent > cap {
            s.long_data.iter_mut().for_each(|d| *d = None);
            return;
        }
        if let Some(slot) = s.long_data.get_mut(index) {
            slot.get_or_insert_with(Vec::new).extend_from_slice(data);
        }
    }
}

/// Whether a statement with `count` placeholders names a sharded table and
/// can be planned. Values only change routing and literals, so it is
/// planned with placeholder values: integers, and if that is refused,
/// strings (a string shard key refuses integers in an INSERT); refused if
/// both are.
fn plannable(
    text: &str,
    count: usize,
    db: Option<&str>,
    rules: &crate::shard::ShardRules,
) -> Result<bool, ErrPacket> {
    let cs = Charset::default();
    let ints = vec![ParamValue::Int(1); count];
    let first = match crate::shard::plan_prepared(text, &ints, &cs, db, rules) {
        Ok(p) => return Ok(p.is_some()),
        Err(r) => r,
    };
    let strings = vec![ParamValue::Bytes(b"1".to_vec()); count];
    match crate::shard::plan_prepared(text, &strings, &cs, db, rules) {
        Ok(p) => Ok(p.is_some()),
        Err(_) => Err(not_supported(first.0)),
    }
}
