//! Writes on sharded tables (INSERT/UPDATE/DELETE/REPLACE parts, and DDL
//! broadcast to the sub-tables), on the masters of the groups holding them.
//!
//! A write whose parts fall in one group runs on that group's master; several
//! parts outside a transaction are wrapped in one there, so a multi-row
//! INSERT split over sub-tables is all-or-nothing. A write reaching several
//! groups could only be atomic with a two-phase commit: it is refused before
//! anything runs. DDL is not transactional anyway and goes to every group
//! (outside a transaction).

use crate::protocol::packets::{ok_packet, ErrPacket};
use crate::shard::Part;

use crate::frontend::params::RawParam;

use super::io::{not_supported, run_ok, run_part_ok, PartLog};
use super::{Closed, Session};

/// A sharded write that was applied: what the pipeline needs to apply its
/// effects (`SessionState::apply`).
pub(super) struct WriteDone {
    pub affected: u64,
    pub insert_id: u64,
    pub status: u16,
    /// The backend groups written to.
    pub groups: Vec<usize>,
    /// The statement's warnings are in the diagnostics area of the session's master
    /// connection (one part, on group 0, not wrapped): `SHOW WARNINGS` reads them there.
    pub warnings_on_master: bool,
    /// It gave warnings that no connection's diagnostics area holds (several parts,
    /// each part's COMMIT emptied its own, another group's master).
    pub warnings_elsewhere: bool,
}

/// What the parts' OK packets add up to.
struct Totals {
    affected: u64,
    insert_id: u64,
    /// The part whose insert id is the statement's (see `ShardPlan::Write`); None: the
    /// last non-zero one.
    insert_id_from: Option<u32>,
    warnings: u16,
    /// Status flags of group 0's last answer (the session's own).
    status: u16,
    /// Parts applied.
    done: usize,
    /// DDL: every sub-table answers the same statement, whose warnings (a note that the
    /// engine ignores DISABLE KEYS) the server gives once for the logical table.
    ddl: bool,
    /// The parts' OK info texts, added up (`Records: …`, `Rows matched: …`).
    info: crate::shard::ok_info::InfoSum,
    /// The info text of the one part, when there is one (the server's own).
    only_info: Option<String>,
    /// Each part's insert id, in the order they ran.
    ids: Vec<u64>,
}

impl Session {
    /// `Ok(None)`: refused or failed, the client has its error.
    pub(super) async fn run_write(
        &mut self,
        parts: Vec<Part>,
        ddl: bool,
        insert_id_from: Option<u32>,
        params: &[RawParam],
    ) -> Result<Option<WriteDone>, Closed> {
        let groups = groups_of(&parts);
        if groups.len() > 1 && !ddl {
            let names: Vec<String> = groups.iter().map(|&g| self.group_name(g)).collect();
            return self
                .send_err(&not_supported(format!(
                    "sluice: this write reaches sub-tables in several backend groups ({}); it cannot be \
                     applied atomically, so it is refused and nothing was written; write the rows of \
                     each group in separate statements",
                    names.join(", ")
                )))
                .await
                .map(|()| None);
        }
        let in_tx = self.in_transaction();
        if ddl && in_tx && groups.iter().any(|&g| g != 0) {
            return self
                .send_err(&not_supported(
                    "sluice: DDL on a sharded table with sub-tables outside the first backend group is \
                     not supported inside a transaction",
                ))
                .await
                .map(|()| None);
        }
        // The server reports (and keeps for LAST_INSERT_ID()) the last call it evaluated, in
        // row order; the parts run in sub-table order (see `insert_id`).
        if !ddl
            && parts.len() > 1
            && insert_id_from.is_some()
            && parts
                .iter()
                .any(|p| crate::shard::ok_info::calls_last_insert_id(p.sql.as_bytes()))
        {
            return self
                .send_err(&not_supported(
                    "sluice: an INSERT whose rows go to several sub-tables cannot call LAST_INSERT_ID(expr) \
                     (the server reports and keeps the last call in row order; each sub-table evaluates \
                     only its own rows); nothing was written; write those rows in separate statements",
                ))
                .await
                .map(|()| None);
        }
        if !ddl {
            if let Err(e) = self.note_tx_write(groups[0]) {
                return self.send_err(&e).await.map(|()| None);
            }
        }
        let mut totals = Totals {
            affected: 0,
            insert_id: 0,
            insert_id_from,
            warnings: 0,
            status: self.state.status(),
            done: 0,
            ddl,
            info: Default::default(),
            only_info: None,
            ids: Vec::new(),
        };
        let mut failure = None;
        for &g in &groups {
            let mine: Vec<&Part> = parts.iter().filter(|p| p.group == g).collect();
            let wrap = !ddl && mine.len() > 1 && !in_tx;
            if let Err(e) = self.write_group(g, &mine, wrap, params, &mut totals).await {
                failure = Some(e);
                break;
            }
        }
        for &g in &groups {
            self.drop_broken(g);
        }
        if ddl {
            // A definition may have changed (even when a part failed): the
            // column order of INSERTs without a column list is read again.
            self.rt.shard_rules.forget_columns();
        }
        if let Some(mut e) = failure {
            if ddl && totals.done > 0 {
                e.message.push_str(&format!(
                    " (sluice: the statement had already been applied to {} of {} sub-tables)",
                    totals.done,
                    parts.len()
                ));
            }
            return self.send_err(&e).await.map(|()| None);
        }
        self.state.master_status(totals.status);
        // Queued, not flushed: the pipeline applies the write's effects
        // (counter bump, causal snapshot) first, then sends it (`pipeline::on_shards`).
        let mut p = ok_packet(
            totals.affected,
            totals.insert_id,
            self.state.status(),
            totals.warnings,
        );
        let info = match parts.len() {
            1 => totals.only_info.take(),
            _ if ddl => None,
            _ => totals.info.text(totals.warnings),
        };
        if let Some(info) = info {
            crate::protocol::packets::put_ok_info(&mut p, info.as_bytes());
        }
        let mut seq = self.reply_seq;
        self.client.queue(&mut seq, &p);
        Ok(Some(WriteDone {
            affected: totals.affected,
            insert_id: totals.insert_id,
            status: totals.status,
            warnings_on_master: totals.warnings > 0 && parts.len() == 1 && groups == [0],
            warnings_elsewhere: totals.warnings > 0 && !(parts.len() == 1 && groups == [0]),
            groups,
        }))
    }

    /// Run one group's parts on its master (wrapped in a transaction if
    /// `wrap`), adding their answers to `totals`. Parts with parameters run as
    /// prepared statements with the client's `params` (never written into SQL).
    async fn write_group(
        &mut self,
        group: usize,
        parts: &[&Part],
        wrap: bool,
        params: &[RawParam],
        totals: &mut Totals,
    ) -> Result<(), ErrPacket> {
        let log_on = self.rt.config.log.sql_log;
        let label = self.rt.topology.groups[group].master.label.clone();
        // Under LOCK TABLES, START TRANSACTION would release the session's table
        // locks: the parts' transaction is opened by turning autocommit off
        // instead (COMMIT and ROLLBACK keep table locks), and back on after.
        let locked = self.state.pins().has(crate::router::plan::Pins::LOCK_TABLES);
        let conn = self.group_master(group).await?;
        let mut status = None;
        // Inside the client's transaction, a statement of several parts that fails (or is
        // refused, see `insert_id`) is undone as the server undoes a failed statement, to
        // a savepoint taken before its first part.
        // (Where none can be taken, in an XA transaction, as before: without.)
        let savepoint = !wrap
            && !totals.ddl
            && parts.len() > 1
            && run_ok(conn, "SAVEPOINT sluice_statement").await.is_ok();
        if wrap {
            run_ok(
                conn,
                if locked {
                    "SET autocommit = 0"
                } else {
                    "START TRANSACTION"
                },
            )
            .await?;
        }
        let mut failure = None;
        for part in parts {
            let log = PartLog::start(log_on, &part.sql.text(), &label, part.shard);
            match run_part_ok(conn, part, params).await {
                Ok((ok, info)) => {
                    let kind = crate::shard::ok_info::WriteKind::of(&part.sql);
                    totals.info.add(info.as_deref(), ok.affected_rows, kind);
                    totals.only_info = info;
                    super::io::log_done(log, true);
                    totals.affected += ok.affected_rows;
                    match totals.insert_id_from {
                        Some(s) if s == part.shard => totals.insert_id = ok.last_insert_id,
                        Some(_) => {}
                        None if ok.last_insert_id != 0 => totals.insert_id = ok.last_insert_id,
                        None => {}
                    }
                    totals.warnings = if totals.ddl {
                        totals.warnings.max(ok.warnings)
                    } else {
                        totals.warnings.saturating_add(ok.warnings)
                    };
                    totals.done += 1;
                    totals.ids.push(ok.last_insert_id);
                    status = Some(ok.status);
                }
                Err(e) => {
                    super::io::log_done(log, false);
                    failure = Some(e);
                    break;
                }
            }
        }
        // The part holding the last row wrote none of its rows while another part wrote:
        // the server's insert id is the last row's AUTO_INCREMENT value (see `insert_id`).
        if let (None, Some(last)) = (&failure, totals.insert_id_from) {
            let at = parts.iter().position(|p| p.shard == last);
            let skipped = at.is_some_and(|i| totals.ids.get(i) == Some(&0));
            if parts.len() > 1 && skipped && totals.ids.iter().any(|&id| id != 0) {
                let last = parts[at.unwrap_or_default()];
                match super::insert_id::of_skipped_last_row(conn, last, params, &totals.ids).await {
                    Ok(id) => totals.insert_id = id,
                    Err(e) => failure = Some(e),
                }
            }
        }
        if savepoint && failure.is_some() && !conn.broken {
            // A failed ROLLBACK TO (a deadlock ended the whole transaction): the part's own
            // error is the answer.
            let _ = run_ok(conn, "ROLLBACK TO SAVEPOINT sluice_statement").await;
        }
        if wrap && !conn.broken {
            let end = if failure.is_some() { "ROLLBACK" } else { "COMMIT" };
            let ends: &[&str] = if locked {
                &[end, "SET autocommit = 1"]
            } else {
                &[end]
            };
            for end in ends {
                match run_ok(conn, end).await {
                    Ok(ok) => status = Some(ok.status),
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
        }
        if group == 0 {
            if let Some(s) = status {
                totals.status = s;
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A backend group's configured name.
    pub(super) fn group_name(&self, group: usize) -> String {
        self.rt
            .topology
            .groups
            .get(group)
            .map(|g| g.name.clone())
            .unwrap_or_else(|| group.to_string())
    }
}

/// The groups a plan's parts reach, in order, each once.
pub(super) fn groups_of(parts: &[Part]) -> Vec<usize> {
    let mut groups: Vec<usize> = parts.iter().map(|p| p.group).collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}
