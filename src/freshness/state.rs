//! Counter snapshots and the freshness comparison: pure data, no I/O.
//!
//! A snapshot maps each counter row (`tbl`, `slot`) to its value. A replica
//! holds every write the master had committed when snapshot `target` was
//! taken iff, for every row in scope, the replica's value is at least the
//! target's. Rows are compared one by one, never summed: a sum can be reached
//! by a replica that is ahead on one slot and behind on another.

use std::collections::HashMap;

/// The row sluice bumps itself after statements that fire no trigger.
pub const GLOBAL_ROW: &str = "*";

/// The generation row (`tbl`, slot 0): a random value that `sluice triggers
/// install`/`uninstall` and DDL through sluice set anew whenever the tracked
/// set or the counters change under it (new tables, dropped triggers, other
/// slot count; a truncated counter table loses it). Counters are compared
/// only within one generation. `#` cannot start a `db.table` key of a
/// tracked table sluice creates (those come from `information_schema`), and
/// the row is never summed or compared slot by slot.
pub const EPOCH_ROW: &str = "#epoch";

/// A map keyed by table name, read by the freshness gate on every read:
/// foldhash, not SipHash (~4 lookups per read; the keys are table names
/// from the server's catalog, not chosen per request by a client).
pub type TableMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// A set of `db.table` names (the tables with triggers), see [`TableMap`].
pub type TableSet = std::collections::HashSet<String, foldhash::fast::RandomState>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// tbl → value per counter row: index `slot * 3 + event` (a table's
    /// rows of its three counter tables, see `triggers::counters_select_sql`).
    pub rows: TableMap<Vec<u64>>,
    /// The server's GTID position (domain → sequence number) when the
    /// counters were read; `None` when the server has none (not MariaDB).
    pub gtid: Option<HashMap<u32, u64>>,
    /// The generation row's value ([`EPOCH_ROW`]); None when the counter
    /// table has none (installed by an older sluice, or truncated).
    pub epoch: Option<u64>,
    /// Master only: the sum of its DDL statement counters when read (a
    /// change means the tracked set may have changed).
    pub ddl_statements: Option<u64>,
    /// Master only: the order in which the probe started (0: none).
    pub seq: u64,
    /// Master only: a counter row is lower than in a snapshot read before
    /// this one began (see [`Counters::went_down_from`]).
    pub reset: bool,
}

/// Has a replica at position `have` applied every transaction of `need`?
/// No position proves nothing (unless nothing is needed).
pub fn gtid_at_least(have: Option<&HashMap<u32, u64>>, need: &HashMap<u32, u64>) -> bool {
    match have {
        None => need.is_empty(),
        Some(mine) => need.iter().all(|(d, seq)| mine.get(d).is_some_and(|m| m >= seq)),
    }
}

/// Parse a MariaDB GTID position such as `0-1-6159,1-2-33` (domain-server-seq).
pub fn parse_gtid_pos(pos: &str) -> Option<HashMap<u32, u64>> {
    let mut out = HashMap::new();
    for part in pos.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let mut it = part.split('-');
        let (Some(d), Some(_server), Some(seq), None) = (it.next(), it.next(), it.next(), it.next()) else {
            return None;
        };
        out.insert(d.parse().ok()?, seq.parse().ok()?);
    }
    Some(out)
}

/// Which counter rows a read depends on.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every row (the tables read are unknown).
    All,
    /// These `db.table` rows plus the global row.
    Tables(&'a [String]),
}

impl Counters {
    pub fn set(&mut self, tbl: &str, slot: usize, n: u64) {
        if tbl == EPOCH_ROW {
            if slot == 0 {
                self.epoch = Some(n);
            }
            return;
        }
        let v = self.rows.entry(tbl.to_string()).or_default();
        if v.len() <= slot {
            v.resize(slot + 1, 0);
        }
        v[slot] = n;
    }

    /// Raise every value to at least `other`'s (merging snapshots taken at
    /// different times; counters only grow).
    pub fn merge_max(&mut self, other: &Counters) {
        if let Some(theirs) = &other.gtid {
            let mine = self.gtid.get_or_insert_with(HashMap::new);
            for (d, seq) in theirs {
                let m = mine.entry(*d).or_insert(0);
                *m = (*m).max(*seq);
            }
        }
        for (tbl, vals) in &other.rows {
            let mine = self.rows.entry(tbl.clone()).or_default();
            if mine.len() < vals.len() {
                mine.resize(vals.len(), 0);
            }
            for (m, o) in mine.iter_mut().zip(vals) {
                *m = (*m).max(*o);
            }
        }
    }

    /// Is any counter row lower here than in `earlier`, of the same
    /// generation (a row missing here counts as 0)? Counters only grow while
    /// triggers bump them: a row that went down was changed by hand (rows
    /// deleted and inserted again, the table restored from a backup). A
    /// replica that has not applied that change yet still holds the higher
    /// values, which would pass for the new ones: the caller must treat it
    /// as a new generation.
    pub fn went_down_from(&self, earlier: &Counters) -> bool {
        if self.epoch != earlier.epoch {
            return false;
        }
        earlier.rows.iter().any(|(tbl, vals)| {
            let mine = self.rows.get(tbl).map(Vec::as_slice).unwrap_or(&[]);
            vals.iter()
                .enumerate()
                .any(|(i, v)| *v > mine.get(i).copied().unwrap_or(0))
        })
    }

    /// Sum of all values: only for lag estimation, never for freshness.
    pub fn total(&self) -> u64 {
        self.rows.values().flatten().fold(0u64, |a, b| a.wrapping_add(*b))
    }

    /// Has this (replica) position applied every transaction of `target`'s?
    /// Without a position on the master side there is nothing to compare; a
    /// replica without one cannot prove anything.
    fn gtid_covers(&self, target: &Counters) -> bool {
        match &target.gtid {
            None => true,
            Some(t) => gtid_at_least(self.gtid.as_ref(), t),
        }
    }

    fn row_covers(&self, tbl: &str, target: &[u64]) -> bool {
        let mine = self.rows.get(tbl).map(Vec::as_slice).unwrap_or(&[]);
        target
            .iter()
            .enumerate()
            .all(|(slot, t)| *t == 0 || mine.get(slot).is_some_and(|m| m >= t))
    }

    /// Does this (replica) snapshot hold everything `target` (master) holds,
    /// for the rows in `scope`?
    pub fn covers(&self, target: &Counters, scope: Scope<'_>) -> bool {
        // Counters of two generations say nothing about each other (a reset
        // starts them again from 0): the replica has not applied the change
        // of generation yet, or the target predates it.
        if self.epoch != target.epoch {
            return false;
        }
        match scope {
            // The tables read are unknown: every counter row, and every
            // transaction the master had (writes no trigger counted too).
            Scope::All => {
                target.rows.iter().all(|(tbl, vals)| self.row_covers(tbl, vals)) && self.gtid_covers(target)
            }
            Scope::Tables(tables) => {
                let global_ok = target
                    .rows
                    .get(GLOBAL_ROW)
                    .is_none_or(|vals| self.row_covers(GLOBAL_ROW, vals));
                global_ok
                    && tables.iter().all(|t| match target.rows.get(t.as_str()) {
                        Some(vals) => self.row_covers(t, vals),
                        None => true,
                    })
            }
        }
    }
}

/// Master totals over time, to turn "the replica is N writes behind" into
/// "the replica is T ms behind": the replica's lag is the age of the oldest
/// master sample it has not yet reached.
#[derive(Debug, Default)]
pub struct LagHistory {
    samples: std::collections::VecDeque<(std::time::Instant, u64)>,
}

impl LagHistory {
    const KEEP: usize = 4096;

    pub fn record(&mut self, at: std::time::Instant, total: u64) {
        if self.samples.back().is_some_and(|(_, t)| *t == total) {
            return;
        }
        if self.samples.len() == Self::KEEP {
            self.samples.pop_front();
        }
        self.samples.push_back((at, total));
    }

    /// Lag of a replica whose total was `replica_total` at `at`.
    pub fn lag(&self, replica_total: u64, at: std::time::Instant) -> std::time::Duration {
        // The first master sample above the replica's total: the replica has
        // been missing that write at least since then.
        match self.samples.iter().find(|(_, t)| *t > replica_total) {
            Some((since, _)) => at.saturating_duration_since(*since),
            None => std::time::Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(rows: &[(&str, &[u64])]) -> Counters {
        let mut c = Counters::default();
        for (t, vals) in rows {
            for (i, v) in vals.iter().enumerate() {
                c.set(t, i, *v);
            }
        }
        c
    }

    #[test]
    fn slot_by_slot_not_sum() {
        let master = snap(&[("db.t", &[5, 5])]);
        // Same sum, but behind on slot 1.
        let replica = snap(&[("db.t", &[7, 3])]);
        assert!(!replica.covers(&master, Scope::All));
        let replica = snap(&[("db.t", &[5, 6])]);
        assert!(replica.covers(&master, Scope::All));
    }

    #[test]
    fn missing_rows_count_as_zero() {
        let master = snap(&[("db.t", &[0, 1])]);
        assert!(!Counters::default().covers(&master, Scope::All));
        assert!(Counters::default().covers(&snap(&[("db.t", &[0, 0])]), Scope::All));
    }

    #[test]
    fn per_table_scope_ignores_other_tables_but_not_global() {
        let master = snap(&[("db.a", &[3]), ("db.b", &[9]), (GLOBAL_ROW, &[1])]);
        let replica = snap(&[("db.a", &[3]), ("db.b", &[2]), (GLOBAL_ROW, &[1])]);
        let a = vec!["db.a".to_string()];
        let b = vec!["db.b".to_string()];
        assert!(replica.covers(&master, Scope::Tables(&a)));
        assert!(!replica.covers(&master, Scope::Tables(&b)));
        assert!(!replica.covers(&master, Scope::All));
        let behind_global = snap(&[("db.a", &[3]), (GLOBAL_ROW, &[0])]);
        assert!(!behind_global.covers(&master, Scope::Tables(&a)));
    }

    #[test]
    fn unknown_tables_need_the_gtid_position_too() {
        let mut master = snap(&[("db.a", &[3])]);
        master.gtid = parse_gtid_pos("0-1-10,1-2-5");
        let mut replica = snap(&[("db.a", &[3])]);
        replica.gtid = parse_gtid_pos("0-1-9,1-2-5");
        // Counters equal, but a write no trigger counted is missing.
        assert!(!replica.covers(&master, Scope::All));
        let a = vec!["db.a".to_string()];
        assert!(replica.covers(&master, Scope::Tables(&a)));
        replica.gtid = parse_gtid_pos("0-1-10,1-2-7");
        assert!(replica.covers(&master, Scope::All));
        replica.gtid = None;
        assert!(!replica.covers(&master, Scope::All));
        assert_eq!(parse_gtid_pos(""), Some(HashMap::new()));
        assert_eq!(parse_gtid_pos("x"), None);
    }

    #[test]
    fn counters_of_two_generations_never_compare() {
        let mut master = snap(&[("db.a", &[1])]);
        master.set(EPOCH_ROW, 0, 7);
        assert_eq!(master.epoch, Some(7));
        assert!(!master.rows.contains_key(EPOCH_ROW));
        // Far ahead, but of the previous generation.
        let mut replica = snap(&[("db.a", &[100])]);
        replica.set(EPOCH_ROW, 0, 6);
        let a = vec!["db.a".to_string()];
        assert!(!replica.covers(&master, Scope::Tables(&a)));
        assert!(!replica.covers(&master, Scope::All));
        replica.set(EPOCH_ROW, 0, 7);
        assert!(replica.covers(&master, Scope::Tables(&a)));
        // A truncated counter table has no generation: not the same one.
        let truncated = snap(&[]);
        assert!(!truncated.covers(&master, Scope::All));
    }

    #[test]
    fn a_row_that_went_down_is_a_reset() {
        let before = snap(&[("db.a", &[3, 4]), ("db.b", &[1])]);
        assert!(!snap(&[("db.a", &[3, 5]), ("db.b", &[1])]).went_down_from(&before));
        // Deleted and inserted again with 0, or restored from an older backup.
        assert!(snap(&[("db.a", &[3, 0]), ("db.b", &[1])]).went_down_from(&before));
        assert!(snap(&[("db.a", &[3, 4])]).went_down_from(&before));
        // Another generation is compared afresh anyway.
        let mut other = snap(&[]);
        other.set(EPOCH_ROW, 0, 9);
        assert!(!other.went_down_from(&before));
    }

    #[test]
    fn merge_takes_max() {
        let mut a = snap(&[("t", &[1, 5])]);
        a.merge_max(&snap(&[("t", &[3, 2, 7]), ("u", &[1])]));
        assert_eq!(a, snap(&[("t", &[3, 5, 7]), ("u", &[1])]));
    }

    #[test]
    fn lag_is_age_of_first_unreached_sample() {
        let t0 = std::time::Instant::now();
        let ms = std::time::Duration::from_millis;
        let mut h = LagHistory::default();
        h.record(t0, 10);
        h.record(t0 + ms(100), 20);
        h.record(t0 + ms(200), 30);
        assert_eq!(h.lag(30, t0 + ms(250)), ms(0));
        assert_eq!(h.lag(20, t0 + ms(250)), ms(50));
        assert_eq!(h.lag(5, t0 + ms(250)), ms(250));
    }
}
