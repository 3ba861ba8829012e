//! A case of the oracle with what it demands beyond the verdict: no refusal (a shape
//! the README lists as supported), a minimum number of rows (the data covers the
//! query), spellings that may differ only in the columns named, asked of the server
//! under their collation. The fixed corpus (`fixed.rs`) and the fixed lists of
//! `tests/sharding.rs` run their statements as such cases.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::corpus::short;
use super::oracle::{fold, judge, rendered, run, Outcome, Proto, Seen, Sides, Verdict, NOT_SUPPORTED};
use crate::common::cluster::*;
use crate::common::wire::{self, Part, Reply, Wire};

/// What a case demands beyond the oracle's verdict.
#[derive(Clone, Copy)]
pub struct Demands<'a> {
    /// A refusal (1235) fails.
    pub supported: bool,
    /// Columns whose spelling may differ among values equal under `collation`.
    pub ci: &'a [usize],
    pub collation: &'a str,
    /// The server's answer has at least this many rows.
    pub min_rows: usize,
}

pub const SUPPORTED: Demands<'static> = Demands {
    supported: true,
    ci: &[],
    collation: "utf8mb4_general_ci",
    min_rows: 0,
};

#[derive(Default)]
pub struct Tally {
    pub runs: usize,
    pub rows: usize,
    pub same: usize,
    pub spelling: usize,
    pub rounding: usize,
    pub sub_defs: usize,
    pub both_failed: usize,
    pub refused: BTreeMap<String, usize>,
    pub failures: Vec<String>,
    pub slowest: Vec<(Duration, String)>,
}

/// One pair of connections running cases, and what they found.
pub struct Runner {
    pub s: Sides,
    /// Where sluice listens and the database, to log in again after a broken connection.
    pub addr: String,
    pub db: String,
    pub tally: Tally,
}

pub async fn must(w: &mut Wire, sql: &str) {
    match w.query(sql).await {
        Reply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))) => {}
        other => panic!("{sql}: {other:?}"),
    }
    w.raw_rows.clear();
}

/// Whether the server takes two strings as equal under `collation`.
async fn ci_equal(direct: &mut Wire, collation: &str, a: &str, b: &str) -> bool {
    let charset = collation.split('_').next().unwrap_or("utf8mb4");
    let sql = format!(
        "SELECT CONVERT(CONVERT(X'{}' USING utf8mb4) USING {charset}) COLLATE {collation} \
         = CONVERT(CONVERT(X'{}' USING utf8mb4) USING {charset})",
        wire::hex(a.as_bytes()),
        wire::hex(b.as_bytes())
    );
    rendered(direct, &sql).await == [["1"]]
}

/// Rows that differ only in the spelling of `ci` columns' values, equal under
/// `collation` (asked of the server), in the same order where the order is fixed.
async fn ci_alike(direct: &mut Wire, o: &Outcome, ordered: bool, d: &Demands<'_>) -> bool {
    let (
        Seen::Rows {
            columns: c1,
            prepared: p1,
            cells: a,
            warnings: w1,
            ..
        },
        Seen::Rows {
            columns: c2,
            prepared: p2,
            cells: b,
            warnings: w2,
            ..
        },
    ) = (&o.got, &o.want)
    else {
        return false;
    };
    if c1 != c2 || p1 != p2 || w1 != w2 || a.len() != b.len() {
        return false;
    }
    let key = |r: &Vec<String>| -> Vec<String> {
        r.iter()
            .enumerate()
            .map(|(i, c)| if d.ci.contains(&i) { fold(c) } else { c.clone() })
            .collect()
    };
    let (mut a, mut b) = (a.clone(), b.clone());
    if !ordered {
        a.sort_by_key(key);
        b.sort_by_key(key);
    }
    for (x, y) in a.iter().zip(&b) {
        if x.len() != y.len() {
            return false;
        }
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            if p != q && !(d.ci.contains(&i) && ci_equal(direct, d.collation, p, q).await) {
                return false;
            }
        }
    }
    true
}

impl Tally {
    /// The counts in one line.
    pub fn summary(&self) -> String {
        format!(
            "{} runs through the oracle ({} rows): {} same, {} same error, {} only a representative's spelling, \
             {} only DOUBLE rounding, {} with sub-table 0's column definitions, {} refused, {} failed",
            self.runs,
            self.rows,
            self.same,
            self.both_failed,
            self.spelling,
            self.rounding,
            self.sub_defs,
            self.refused.values().sum::<usize>(),
            self.failures.len()
        )
    }
}

impl Runner {
    /// Logs in to `db` through sluice at `addr` and to the master directly; the tables
    /// are `t` through sluice and `r` directly.
    pub async fn new(addr: &str, master: &str, db: &str, t: &str, r: &str) -> Runner {
        let timeout = Duration::from_secs(120);
        Runner {
            s: Sides {
                sl: wire::driver_login(addr, APP_USER, APP_PASSWORD, db, timeout).await,
                direct: wire::driver_login(master, SLUICE_USER, SLUICE_PASSWORD, db, timeout).await,
                t: t.into(),
                r: r.into(),
                latin1: false,
            },
            addr: addr.into(),
            db: db.into(),
            tally: Tally::default(),
        }
    }

    /// One statement (`@T@` names the table) in one protocol, through the oracle;
    /// column definitions may be those of the statement on sub-table 0 (the plan that
    /// describes a scatter) where the server describes it otherwise on the reference.
    pub async fn case(&mut self, label: &str, sql: &str, proto: Proto, ordered: bool, d: Demands<'_>) {
        let t0 = Instant::now();
        let sub0 = format!("{}_0", self.s.t);
        let o = self.s.differ(sql, &proto, ordered, false, Some(&sub0), &[]).await;
        self.tally
            .slowest
            .push((t0.elapsed(), format!("[{}] {}", proto.name(), label)));
        self.settle(label, proto.name(), o, ordered, d).await;
    }

    /// The same as text and as a prepared statement without parameters.
    pub async fn both(&mut self, label: &str, sql: &str, ordered: bool, d: Demands<'_>) {
        for proto in [Proto::Text, Proto::Binary(Vec::new())] {
            self.case(label, sql, proto, ordered, d).await;
        }
    }

    /// Runs a statement on both sides, outside the differential (session settings).
    pub async fn both_must(&mut self, sql: &str) {
        must(&mut self.s.sl, sql).await;
        must(&mut self.s.direct, sql).await;
    }

    /// Panics with every failure found.
    pub fn assert_none_failed(&self) {
        let f = &self.tally.failures;
        eprintln!("{}", self.tally.summary());
        assert!(f.is_empty(), "{} failures:\n{}", f.len(), f.join("\n"));
    }

    /// A write: through sluice, then (unless `may_refuse` and refused) on the reference.
    pub async fn write(&mut self, sql: &str, proto: Proto, may_refuse: bool) {
        let label = short(sql);
        let got = run(&mut self.s.sl, &sql.replace("@T@", &self.s.t), &proto, &self.s.t).await;
        let want = if may_refuse && matches!(got, Seen::Err(NOT_SUPPORTED, _)) {
            Seen::Other("not applied: refused through sluice".into())
        } else {
            run(
                &mut self.s.direct,
                &sql.replace("@T@", &self.s.r),
                &proto,
                &self.s.r,
            )
            .await
        };
        let verdict = judge(&got, &want, true);
        let d = Demands {
            supported: !may_refuse,
            ..SUPPORTED
        };
        self.settle(&label, proto.name(), Outcome { verdict, got, want }, true, d)
            .await;
    }

    async fn settle(&mut self, label: &str, proto: &str, o: Outcome, ordered: bool, d: Demands<'_>) {
        let t = &mut self.tally;
        t.runs += 1;
        if let Seen::Rows { rows, .. } = &o.want {
            t.rows += rows.len();
            if rows.len() < d.min_rows {
                t.failures.push(format!(
                    "{label}\n    the data set gives only {} rows, the case expects at least {}",
                    rows.len(),
                    d.min_rows
                ));
            }
        }
        match &o.verdict {
            Verdict::Same if matches!((&o.got, &o.want), (Seen::Err(..), Seen::Err(..))) => {
                t.both_failed += 1
            }
            Verdict::Same => t.same += 1,
            Verdict::SubTableDefs => t.sub_defs += 1,
            Verdict::Rounding => t.rounding += 1,
            Verdict::Spelling if !d.ci.is_empty() => t.spelling += 1,
            Verdict::Refused(kind) => {
                *t.refused.entry(format!("[{proto}] {kind}")).or_default() += 1;
                // The refusal docs/sharding.md lists for any shape: parts that report
                // warnings (the server's answer has some too).
                let warned =
                    matches!(o.want, Seen::Rows { warnings, .. } if warnings > 0) && kind.contains("warning");
                if d.supported && !warned {
                    t.failures.push(format!(
                        "{label} [{proto}]\n    a supported shape refused: {}",
                        o.got.brief()
                    ));
                }
            }
            Verdict::Spelling | Verdict::Ties | Verdict::Wrong(_) => {
                if !d.ci.is_empty() && ci_alike(&mut self.s.direct, &o, ordered, &d).await {
                    self.tally.spelling += 1;
                } else {
                    let why = match &o.verdict {
                        Verdict::Wrong(w) => w.clone(),
                        _ => "a spelling differs where no column may".into(),
                    };
                    self.tally.failures.push(format!("{label} [{proto}]\n    {why}"));
                }
            }
        }
        if self.s.sl.is_broken() {
            self.tally
                .failures
                .push(format!("{label} [{proto}]\n    the connection to sluice broke"));
            self.s.sl = wire::driver_login(
                &self.addr,
                APP_USER,
                APP_PASSWORD,
                &self.db,
                Duration::from_secs(60),
            )
            .await;
        }
    }
}
