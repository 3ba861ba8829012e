//! SELECT on sharded tables: the parts run on their groups' backends, the
//! answers are merged exactly and streamed to the client, as text rows
//! (COM_QUERY) or binary rows (COM_STMT_EXECUTE).
//!
//! Outside a transaction the parts run concurrently, each on its own pooled
//! connection (its group's fresh replica when the freshness rules allow, else
//! that group's master), so the k-way merge streams with one buffered row per
//! shard whatever the OFFSET. Inside a transaction (or a pinned session) the
//! parts run one after the other on the session's master connection of each
//! group, so they see the transaction's own writes.
//!
//! The result's column definitions are the server's own for the client's
//! statement (`Session::described`): learned from the original statement run
//! on sub-table 0 where the merge would describe it otherwise, else the
//! shard's with the sub-table's name replaced by the logical table's.

use crate::protocol::consts::errcode::{ER_NET_READ_ERROR, ER_NOT_SUPPORTED_YET};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::backend::Pooled;
use crate::merge::{self, MergeError, Merger, RowSource};
use crate::protocol::consts::CapabilityFlags;
use crate::protocol::packets::{eof_packet, put_lenenc, ErrPacket};
use crate::shard::Part;

use super::io::{
    binary_metas, execute_part, lost, not_supported, part_error, plant_cut_warnings, read_head,
    read_rows_warned, BufferedSource, Head, PartLog, ShardSource,
};
use super::sort_length::{self, Asked};
use super::{Closed, Conn, Session};
use crate::frontend::params::RawParam;
use crate::frontend::session::gate::Route;
use crate::frontend::session::CmdResult;

/// Flush merged rows to the client in batches of about this size.
const FLUSH_AT: usize = 256 * 1024;

/// The row format the client expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(in crate::frontend::session) enum RowFormat {
    /// Text protocol (COM_QUERY).
    Text,
    /// Binary protocol (COM_STMT_EXECUTE).
    Binary,
}

/// What the merge of a statement needs of the client's request besides the rows.
#[derive(Clone, Copy)]
struct MergeCtx<'a> {
    format: RowFormat,
    params: &'a [RawParam],
    original: Original<'a>,
    /// The merge sees every row the server's FOUND_ROWS() counts: several parts whose
    /// LIMIT the merge applies (not a UNION's), or no LIMIT at all.
    found_rows_known: bool,
    /// `max_sort_length` asked of the parts' own connections (`sort_length::Asked`).
    sort_length: Asked,
}

/// The client's statement, whose result column definitions the merged result must carry.
#[derive(Debug, Clone, Copy)]
pub(in crate::frontend::session) struct Original<'a> {
    pub sql: &'a str,
    /// Running the statement once more on sub-table 0 (to learn how the server describes
    /// it) changes nothing: a read the router would send to a replica, reading no user
    /// variable (no locking read, `INTO`, lock or sequence function, stored function,
    /// variable assignment: see `Classified::force_master`).
    pub rerunnable: bool,
}

impl Session {
    pub(super) async fn run_select(
        &mut self,
        mut parts: Vec<Part>,
        mut merge: merge::MergeSpec,
        wildcard_helpers: Option<usize>,
        format: RowFormat,
        params: &[RawParam],
        original: Original<'_>,
    ) -> CmdResult {
        // Even one part with nothing to merge is read here rather than relayed as
        // it is: its column definitions name the sub-table (org_table
        // `post_reply_2`), which the client must see as the logical table.
        // Until the merge ends well, FOUND_ROWS() has no answer sluice knows.
        self.state.merging();
        match self.read_settings(parts, &mut merge, original.sql).await {
            Ok(p) => parts = p,
            Err(e) => return self.send_err(&e).await,
        }
        let ordered = merge.group.is_none() && !merge.distinct && !merge.order_by.is_empty();
        let grouped = merge.group.is_some() || merge.distinct;
        if let Some(why) = crate::shard::plan_dependent_join(original.sql, parts.len(), ordered, grouped) {
            return self.send_err(&not_supported(why)).await;
        }
        let buffered =
            self.in_transaction() || self.state.pins().reason().is_some() || self.state.ro_tx().is_some();
        // Scatter: the gate chooses every part's connection (and holds the
        // statement while a pause covers one) before anything runs.
        let routes = if buffered {
            vec![]
        } else {
            match self.route_parts(parts.iter().map(|p| p.group)).await {
                Ok(r) => r,
                Err(e) => return self.send_err(&e).await,
            }
        };
        let described = self.described(&merge, format, params, original).await;
        if buffered {
            return self
                .select_buffered(
                    parts,
                    merge,
                    wildcard_helpers,
                    format,
                    params,
                    described,
                    original,
                )
                .await;
        }
        // Scatter: one connection per part, all queries sent before any is read.
        let log_on = self.rt.config.log.sql_log;
        let ask = sort_length::worth_asking(&merge, parts.len());
        let mut conns = Vec::with_capacity(parts.len());
        for (part, route) in parts.iter().zip(routes) {
            let (mut conn, label) = match self.scatter_conn(part.group, route).await {
                Ok(c) => c,
                Err(e) => return self.send_err(&e).await,
            };
            let log = PartLog::start(log_on, &part.sql.text(), &label, part.shard);
            if let Err(e) = sort_length::send_part(&mut conn, part, ask).await {
                return self.send_err(&e).await;
            }
            conns.push((conn, log));
        }
        // Parts with parameters: their statements are prepared; execute them.
        let mut asked = Asked::Not;
        for ((conn, _), part) in conns.iter_mut().zip(&parts) {
            if let Err(e) = sort_length::answer(conn, ask, &mut asked).await {
                return self.send_err(&e).await;
            }
            if let Err(e) = execute_part(conn, part, params).await {
                return self.send_err(&e).await;
            }
        }
        let mut heads = Vec::with_capacity(conns.len());
        for (conn, _) in conns.iter_mut() {
            match read_head(conn).await {
                Ok(h) => heads.push(h),
                Err(e) => return self.send_err(&e).await,
            }
        }
        let mut defs = None;
        let mut binary = Vec::with_capacity(heads.len());
        for (h, part) in heads.into_iter().zip(&parts) {
            match h {
                Head::Error(e) => return self.send_err(&part_error(e, &merge)).await,
                Head::Columns(d) => {
                    match binary_metas(part, &d) {
                        Ok(m) => binary.push(m),
                        Err(e) => return self.send_err(&e).await,
                    }
                    if defs.is_none() {
                        defs = Some(d);
                    }
                }
            }
        }
        let defs = defs.unwrap_or_default();
        let sources = conns
            .into_iter()
            .zip(binary)
            .map(|((conn, log), binary)| ShardSource {
                conn,
                done: false,
                log,
                binary,
                warnings: 0,
            })
            .collect();
        let origin = parts[0].group;
        let ctx = MergeCtx {
            format,
            params,
            original,
            found_rows_known: self.found_rows_known(parts.len(), original.sql, &merge),
            sort_length: asked,
        };
        self.stream_merge(sources, defs, origin, merge, wildcard_helpers, ctx, described)
            .await
    }

    /// A connection for one part of a scatter read on `group`, where the
    /// gate routed it (`route_parts`), in sync with the session. Also
    /// returns the backend's label.
    pub(super) async fn scatter_conn(
        &mut self,
        group: usize,
        route: Route,
    ) -> Result<(Pooled, String), ErrPacket> {
        let conn = route.conn;
        let g = &self.rt.topology.groups[group];
        let pool = match conn {
            Conn::Replica(i) => g.replicas.get(i).map(|r| r.pool.clone()),
            Conn::Master => None,
        }
        .unwrap_or_else(|| g.master.clone());
        let mut conn = self
            .checkout(&pool)
            .await
            .map_err(|e| crate::error::backend_error_packet(&pool.label, pool.addr(), &e))?;
        super::super::sync_to_state(&mut conn, &pool, &self.state).await?;
        Ok((conn, pool.label.clone()))
    }

    /// Inside a transaction: the parts run one by one on the session's
    /// master connection of their group (they must see the transaction's
    /// writes), their rows buffered, then merged.
    #[allow(clippy::too_many_arguments)]
    async fn select_buffered(
        &mut self,
        parts: Vec<Part>,
        merge: merge::MergeSpec,
        wildcard_helpers: Option<usize>,
        format: RowFormat,
        params: &[RawParam],
        described: Option<Arc<[Bytes]>>,
        original: Original<'_>,
    ) -> CmdResult {
        let log_on = self.rt.config.log.sql_log;
        let mut defs = None;
        let mut sources = Vec::with_capacity(parts.len());
        let (ask, mut asked) = (sort_length::worth_asking(&merge, parts.len()), Asked::Not);
        let mut failure = None;
        for part in &parts {
            let label = self.rt.topology.groups[part.group].master.label.clone();
            let log = PartLog::start(log_on, &part.sql.text(), &label, part.shard);
            let r = async {
                let conn = self.group_master(part.group).await?;
                sort_length::send_part(conn, part, ask).await?;
                sort_length::answer(conn, ask, &mut asked).await?;
                execute_part(conn, part, params).await?;
                let d = match read_head(conn).await? {
                    Head::Columns(d) => d,
                    Head::Error(e) => return Err(part_error(e, &merge)),
                };
                let binary = binary_metas(part, &d)?;
                let rows = read_rows_warned(conn, binary.as_deref()).await;
                // A part's error among rows read for a LIMIT: see `merge::over_read_refusal`.
                let rows = rows.map_err(|e| match merge.limit {
                    Some(_) if !matches!(e.code, ER_NOT_SUPPORTED_YET | ER_NET_READ_ERROR) => not_supported(
                        format!("sluice: {}", merge::over_read_refusal(e.code, &e.message)),
                    ),
                    _ => e,
                })?;
                Ok((d, rows))
            }
            .await;
            super::io::log_done(log, r.is_ok());
            match r {
                Ok((d, (rows, warnings))) => {
                    defs.get_or_insert(d);
                    sources.push(BufferedSource(rows, warnings));
                }
                Err(e) => {
                    self.drop_broken(part.group);
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            return self.send_err(&e).await;
        }
        let ctx = MergeCtx {
            format,
            params,
            original,
            found_rows_known: self.found_rows_known(parts.len(), original.sql, &merge),
            sort_length: asked,
        };
        self.stream_merge(
            sources,
            defs.unwrap_or_default(),
            parts[0].group,
            merge,
            wildcard_helpers,
            ctx,
            described,
        )
        .await
    }

    /// Merge `sources` and send the result set to the client. `defs` came
    /// from a sub-table in group `origin` (where its columns' collations are
    /// looked up). `described`: the server's own column definitions of the
    /// original statement, sent in place of the merge's when they agree with
    /// it on the number and types of the columns (the rows are encoded by type).
    #[allow(clippy::too_many_arguments)]
    async fn stream_merge<S: RowSource>(
        &mut self,
        sources: Vec<S>,
        defs: Vec<Bytes>,
        origin: usize,
        merge: merge::MergeSpec,
        wildcard_helpers: Option<usize>,
        ctx: MergeCtx<'_>,
        described: Option<Arc<[Bytes]>>,
    ) -> CmdResult {
        let format = ctx.format;
        let spec = match crate::shard::bind_merge(&merge, wildcard_helpers, defs.len()) {
            Ok(s) => s,
            Err(r) => return self.send_err(&not_supported(r.0)).await,
        };
        let monitor = self.rt.monitors[origin].clone();
        let rt = self.rt.clone();
        let rules = &rt.shard_rules;
        let mut metas = Vec::with_capacity(defs.len());
        let mut collation_known = Vec::with_capacity(defs.len());
        for d in &defs {
            let Some(mut m) = merge::parse_column_def(d) else {
                return self.send_err(&lost("malformed column definition")).await;
            };
            // Result metadata carries the connection's collation; strings
            // must be compared under the column's own.
            let mut known = !merge::is_text(&m);
            if merge::is_text(&m) {
                if let Some((schema, table, column)) = merge::column_origin(d) {
                    if !table.is_empty() && !column.is_empty() {
                        let read = monitor.column_collation(&schema, &table, &column);
                        if let Some(id) = rules
                            .column_collation(origin, (&schema, &table, &column), read)
                            .await
                        {
                            m.collation = id;
                            known = true;
                        }
                    }
                }
            }
            metas.push(m);
            collation_known.push(known);
        }
        // Computed columns the planner knows to hold a table column (see
        // `merge::CollationOf`); refused when that collation cannot be read.
        let tagged = spec.group.as_ref().and_then(|g| g.tagged.as_deref());
        for h in tagged.iter().flat_map(|t| &t.collation_of) {
            if let Some(m) = metas.get_mut(h.col).filter(|m| merge::is_text(m)) {
                let read = monitor.column_collation(&h.schema, &h.table, &h.column);
                match rules
                    .column_collation(origin, (&h.schema, &h.table, &h.column), read)
                    .await
                {
                    Some(id) => {
                        m.collation = id;
                        if let Some(k) = collation_known.get_mut(h.col) {
                            *k = true;
                        }
                    }
                    None => {
                        return self
                            .send_err(&not_supported(format!(
                                "sluice: the collation of column `{}` could not be read",
                                h.column
                            )))
                            .await
                    }
                }
            }
        }
        // Compared strings computed by expressions (`LOWER(u)`, `CONCAT(l, '')`, MIN/MAX,
        // UNION columns): their collation is the server's, learned from its own column
        // definitions of the statement (see `result_collations`); refused without it or
        // when that column is no string (a part's COUNT(DISTINCT x) holds x, not the count).
        // GROUP_CONCAT results too: their own character set decides where the server
        // cuts them (`merge::cut_columns`).
        let mut unknown: Vec<usize> = merge::compared_columns(&spec)
            .into_iter()
            .chain(merge::cut_columns(&spec))
            .filter(|&c| !collation_known.get(c).copied().unwrap_or(true))
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if !unknown.is_empty() {
            let real = self.result_collations(ctx.format, ctx.params, ctx.original).await;
            for &c in &unknown {
                let id = real
                    .as_ref()
                    .and_then(|r| r.get(c))
                    .and_then(|d| merge::parse_column_def(d))
                    .filter(merge::is_string)
                    .map(|x| x.collation);
                match (id, metas.get_mut(c)) {
                    (Some(id), Some(m)) => m.collation = id,
                    _ => {
                        return self
                            .send_err(&not_supported(format!(
                            "sluice: ordering, grouping, comparing or cutting (GROUP_CONCAT) the computed string \
                                 column {} across shards needs its collation, which sluice could not learn from \
                                 the server",
                            c + 1
                        )))
                            .await
                    }
                }
            }
        }
        // What sluice would compare otherwise than the server: refused.
        let named = sort_length::set_by_statement(ctx.original.sql);
        if let Some(why) = merge::inexact_comparison(&spec, &metas, named)
            .or_else(|| sort_length::no_pad_sort(&spec, &metas, &unknown))
        {
            return self.send_err(&not_supported(why)).await;
        }
        if let Some(why) = merge::inexact_avg(&spec, self.state.sets_name(b"div_precision_increment")) {
            return self.send_err(&not_supported(why)).await;
        }
        let zone_moves = merge::compares_timestamp(&spec, &metas) && self.zone_offset_moves().await;
        let result_defs = described.as_deref().unwrap_or(&defs);
        if let Some(why) = zone_moves
            .then(merge::timestamp_refusal)
            .or_else(|| merge::plan_dependent_double(&spec, result_defs))
        {
            return self.send_err(&not_supported(why)).await;
        }
        if let Some(col) = merge::compared_columns(&spec)
            .into_iter()
            .find(|&c| metas.get(c).is_some_and(|m| !merge::exact_order(m)))
        {
            let name = merge::column_origin(&defs[col])
                .map(|o| o.2)
                .filter(|n| !n.is_empty())
                .or_else(|| {
                    tagged?
                        .collation_of
                        .iter()
                        .find(|h| h.col == col)
                        .map(|h| h.column.clone())
                })
                .unwrap_or_default();
            return self
                .send_err(&not_supported(format!(
                    "sluice: ordering, grouping or comparing column `{name}` across shards is not supported \
                     for its collation (sluice cannot reproduce that collation's order exactly)"
                )))
                .await;
        }
        // For the column definitions: what each visible column merges, and its shard type.
        let kinds: Vec<(Option<merge::AggKind>, merge::ColumnMeta)> = metas
            .iter()
            .take(spec.visible)
            .enumerate()
            .map(|(i, m)| (agg_kind(&spec, i), *m))
            .collect();
        let sources = match sort_length::sorted_under(sources, &spec, &metas, ctx.sort_length) {
            Ok(s) => s,
            Err(e) => return self.send_err(&e).await,
        };
        let mut merger = match Merger::new(sources, spec, metas) {
            Ok(m) => m,
            Err(MergeError::Unsupported(why)) => {
                return self.send_err(&not_supported(format!("sluice: {why}"))).await
            }
            Err(e) => return self.send_err(&not_supported(format!("sluice: {e}"))).await,
        };
        // Result header: visible columns, with the types the merge produces.
        let visible = merger.visible();
        let out_metas: Vec<merge::ColumnMeta> = merger.output_metas().to_vec();
        // The server describes the statement's columns with other types than the merge
        // produces (a BIT the parts' grouping turns into an integer): the rows would not
        // be the server's either.
        if let Some(d) = &described {
            let agrees = d.len() == visible
                && d.iter()
                    .zip(&out_metas)
                    .all(|(d, m)| merge::parse_column_def(d).is_some_and(|x| x.column_type == m.column_type));
            if !agrees {
                return self
                    .send_err(&not_supported(
                        "sluice: this statement's merged columns would not have the types the server gives \
                         them, so it is not supported across shards"
                            .to_string(),
                    ))
                    .await;
            }
        }
        let mut seq = self.reply_seq;
        let mut count = BytesMut::new();
        put_lenenc(&mut count, visible as u64);
        self.client.queue(&mut seq, &count);
        if let Some(described) = &described {
            for d in described.iter() {
                self.client.queue(&mut seq, d);
            }
        } else {
            for (i, d) in defs.iter().take(visible).enumerate() {
                let out = out_metas
                    .get(i)
                    .and_then(|m| {
                        let (kind, shard) = kinds.get(i).map_or((None, None), |(k, s)| (*k, Some(s)));
                        merged_column_def(d, shard, m, kind)
                    })
                    .unwrap_or_else(|| d.to_vec());
                // The sub-table's name (`FROM post_reply_2 AS post_reply`: org_table) is
                // the logical table's for the client.
                let out = crate::shard::logical_names(&out, &self.rt.shard_rules).unwrap_or(out);
                self.client.queue(&mut seq, &out);
            }
        }
        let deprecate_eof = self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF);
        if !deprecate_eof {
            self.client
                .queue(&mut seq, &eof_packet(self.caps, self.state.status(), 0));
        }
        loop {
            let row = match merger.next_row().await {
                Ok(Some(row)) => match format {
                    RowFormat::Text => Ok(row),
                    RowFormat::Binary => merge::TextRow::parse(row)
                        .and_then(|t| merge::text_row_to_binary(&t, &out_metas, visible)),
                },
                Ok(None) => break,
                Err(e) => Err(e),
            };
            match row {
                Ok(row) => {
                    self.client.queue(&mut seq, &row);
                    if self.client.wbuf.len() >= FLUSH_AT {
                        self.client.flush().await.map_err(|_| Closed)?;
                    }
                }
                Err(e) => {
                    let err = merge_error_packet(e);
                    self.client.queue(&mut seq, &err.encode());
                    return self.client.flush().await.map_err(|_| Closed);
                }
            }
        }
        if let Err(e) = merger.finish().await {
            self.client.queue(&mut seq, &merge_error_packet(e).encode());
            return self.client.flush().await.map_err(|_| Closed);
        }
        self.shared.metrics.merged_rows(merger.rows_merged());
        // FOUND_ROWS() next is the merged statement's, on whichever connection it runs.
        self.state
            .merged(ctx.found_rows_known.then(|| merger.found_rows()));
        let (cut_rows, cuts) = merger.cut_warnings();
        if cuts > 0 {
            let plant = plant_cut_warnings(cut_rows, cuts);
            self.plant_warnings(&plant).await;
        } else if let Some(kept) = self.backends.keep.take() {
            // The connection kept for an earlier statement's warnings would answer SHOW
            // WARNINGS after this one (which has none) with them: cleared once, and no
            // longer kept (the next sharded read pays nothing).
            let _ = self.clear_diagnostics(kept).await;
        }
        let warnings = u16::try_from(cuts).unwrap_or(u16::MAX);
        self.client
            .queue(&mut seq, &eof_packet(self.caps, self.state.status(), warnings));
        self.client.flush().await.map_err(|_| Closed)
    }

    /// Leaves the server's own warnings of a merged result (GROUP_CONCAT cuts) in the
    /// diagnostics area of the master connection, kept for the next statement, so
    /// `SHOW WARNINGS`, `@@warning_count` and `GET DIAGNOSTICS` read them there as they
    /// would after the same statement on one server. If that fails, the client still
    /// has its rows and the warning count.
    async fn plant_warnings(&mut self, sql: &str) {
        if self.held(Conn::Master).await.is_err() {
            return;
        }
        if let Some(h) = self.backends.slot(Conn::Master) {
            match h.conn.query_drop(sql).await {
                Ok(Ok(())) => self.backends.keep = Some(Conn::Master),
                _ => tracing::debug!("could not plant the GROUP_CONCAT warnings of a merged read"),
            }
        }
    }
}

/// See [`MergeCtx::found_rows_known`]. Not after aggregates without GROUP BY: the
/// server answers 1, or keeps the statement before's count when its optimizer finds
/// the WHERE impossible (`c = 1 AND c = 2`), which sluice cannot tell.
/// Nor after a UNION under the session's `sql_select_limit` (the server counts the
/// UNION's rows before that limit).
impl Session {
    fn found_rows_known(&self, parts: usize, sql: &str, merge: &merge::MergeSpec) -> bool {
        let one_group = merge.group.as_ref().is_some_and(|g| g.keys.is_empty())
            || (parts < 2 && crate::shard::may_aggregate_without_group_by(sql));
        let union = crate::shard::has_union(sql);
        if one_group || (union && self.may_limit_selects()) {
            return false;
        }
        !crate::shard::has_limit(sql) || (parts > 1 && !union)
    }
}

/// The aggregate merged into column `col`, if any.
fn agg_kind(spec: &merge::MergeSpec, col: usize) -> Option<merge::AggKind> {
    spec.group
        .as_ref()?
        .aggs
        .iter()
        .find(|a| a.col == col)
        .map(|a| a.kind)
}

/// BIGINT's display length (what the server announces for COUNT).
const COUNT_LENGTH: u32 = 21;
/// Digits SUM adds to its argument's precision (MariaDB's DECIMAL_LONGLONG_DIGITS)
/// and AVG adds (div_precision_increment's default, as for the scale).
const SUM_DIGITS: u32 = 22;
const AVG_DIGITS: u32 = 4;
const DECIMAL_MAX_PRECISION: u32 = 65;

/// The definition the server gives a merged column of the original statement: the
/// shard's definition with the merge's type, flags and decimals, and for AVG and
/// COUNT(DISTINCT) the length (and origin) the server computes for them, which the
/// shard's partial column (a SUM, or x itself) does not carry.
fn merged_column_def(
    def: &[u8],
    shard: Option<&merge::ColumnMeta>,
    out: &merge::ColumnMeta,
    kind: Option<merge::AggKind>,
) -> Option<Vec<u8>> {
    match kind {
        Some(merge::AggKind::CountDistinct) => merge::computed_column_def(def, out, COUNT_LENGTH, true),
        Some(merge::AggKind::Avg { .. } | merge::AggKind::AvgDistinct { .. })
            if out.column_type == merge::types::NEWDECIMAL =>
        {
            // The shard column is SUM(x): precision p(x) + 22 (at most 65), so AVG's is
            // p(x) + 4. Length = precision + point + sign, as the server writes it.
            let shard = shard?;
            let unsigned = shard.flags & merge::flags::UNSIGNED != 0;
            let sign = u32::from(!unsigned);
            let sum_len = merge::column_length(def)?;
            let sum_precision = sum_len.checked_sub(u32::from(shard.decimals > 0) + sign)?;
            if sum_precision >= DECIMAL_MAX_PRECISION {
                // The argument's precision is not known (SUM is capped): keep the SUM's.
                return merge::rewrite_column_def(def, out);
            }
            let precision = (sum_precision.checked_sub(SUM_DIGITS)? + AVG_DIGITS).min(DECIMAL_MAX_PRECISION);
            let length = precision + u32::from(out.decimals > 0) + sign;
            merge::computed_column_def(def, out, length, false)
        }
        _ => merge::rewrite_column_def(def, out),
    }
}

/// The client's error for a merge that failed midway.
fn merge_error_packet(e: MergeError) -> ErrPacket {
    match e {
        MergeError::Server {
            code,
            sql_state,
            message,
        } => ErrPacket::new(code, &sql_state, message),
        MergeError::Unsupported(why) => not_supported(format!("sluice: {why}")),
        other => lost(&other.to_string()),
    }
}
