//! The fixed corpus as cases of the generator: the seed's table (`post_reply`, 100k rows,
//! 4 sub-tables, created and loaded through sluice) against the reference table `ref`
//! holding the same rows, every query of `corpus::generate` judged by the oracle as text
//! (every 6th of the supported shapes again inside a transaction: the buffered path on
//! the session's master connection) and as a prepared statement with its literals bound
//! as typed parameters (`params.rs`); then typed probes, typed INSERTs, the fixed writes
//! (`writes.rs`) and the contents after them. sluice runs with `freshness: off` against
//! the shared cluster, so its reads go to the replicas: every read phase first waits
//! until they have applied everything.
//!
//! Beyond the oracle's verdict a case may demand: no refusal (a shape the issue lists as
//! supported), a minimum number of rows (the data covers the query), and spellings that
//! may differ only in the columns named (`Q::ci`), asked of the server under their
//! collation.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::corpus::{
    generate, insert_sql, reply, schema, short, Order, Reply as Row, Rng, Shape, BATCH, COLUMNS, N_ROWS, Q,
};
use super::oracle::{fold, judge, rendered, run, Outcome, Proto, Seen, Sides, Verdict, NOT_SUPPORTED};
use super::params::*;
use super::writes::{write_statements, Write};
use crate::common::cluster::*;
use crate::common::wire::{self, Param, Part, Reply, Wire};

/// Rows of the binary pass's table (a prefix of the text pass's 100k).
const BINARY_ROWS: usize = 20_000;

/// The sub-table whose plan describes a scatter's columns.
const SUB0: &str = "post_reply_0";

/// What a case demands beyond the oracle's verdict.
#[derive(Clone, Copy)]
struct Demands<'a> {
    /// A refusal (1235) fails.
    supported: bool,
    /// Columns whose spelling may differ among values equal under `collation`.
    ci: &'a [usize],
    collation: &'a str,
    /// The server's answer has at least this many rows.
    min_rows: usize,
}

const SUPPORTED: Demands<'static> = Demands {
    supported: true,
    ci: &[],
    collation: "utf8mb4_general_ci",
    min_rows: 0,
};

#[derive(Default)]
struct Tally {
    runs: usize,
    rows: usize,
    same: usize,
    spelling: usize,
    rounding: usize,
    sub_defs: usize,
    both_failed: usize,
    refused: BTreeMap<String, usize>,
    failures: Vec<String>,
    slowest: Vec<(Duration, String)>,
}

struct Runner {
    s: Sides,
    addr: String,
    db: String,
    tally: Tally,
}

async fn must(w: &mut Wire, sql: &str) {
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

impl Runner {
    /// One statement (`@T@` names the table) in one protocol, through the oracle.
    async fn case(&mut self, label: &str, sql: &str, proto: Proto, ordered: bool, d: Demands<'_>) {
        let t0 = Instant::now();
        let o = self.s.differ(sql, &proto, ordered, false, Some(SUB0)).await;
        self.tally
            .slowest
            .push((t0.elapsed(), format!("[{}] {}", proto.name(), label)));
        self.settle(label, proto.name(), o, ordered, d).await;
    }

    /// A write: through sluice, then (unless `may_refuse` and refused) on the reference.
    async fn write(&mut self, sql: &str, proto: Proto, may_refuse: bool) {
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
            Verdict::Spelling | Verdict::Wrong(_) => {
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

/// Every query as text; every 6th of the supported shapes again inside a transaction
/// (the buffered path on the session's master connection).
async fn text_reads(x: &mut Runner, queries: &[Q]) {
    for (i, q) in queries.iter().enumerate() {
        let d = demands(q);
        let ordered = q.order == Order::Full;
        let label = format!("[{}] {}", q.kind, short(&q.sql));
        let sql = q.sql.replace("post_reply", "@T@");
        x.case(&label, &sql, Proto::Text, ordered, d).await;
        if i % 6 == 0 && d.supported {
            must(&mut x.s.sl, "BEGIN").await;
            x.case(
                &format!("{label} (in a transaction)"),
                &sql,
                Proto::Text,
                ordered,
                d,
            )
            .await;
            must(&mut x.s.sl, "COMMIT").await;
        }
    }
}

/// Every query prepared, its literals bound as typed parameters; then the typed probes.
async fn binary_reads(x: &mut Runner, queries: &[Q]) {
    let mut prng = Rng(0xb1a7);
    for q in queries {
        let (sql, lits) = parameterize(&q.sql);
        let params: Vec<Param> = lits.iter().map(|(l, lim)| typed(l, &mut prng, *lim)).collect();
        let label = format!(
            "[{}] {}\n    params: {}",
            q.kind,
            short(&sql),
            param_text(&params)
        );
        let d = Demands {
            min_rows: 0,
            ..demands(q)
        };
        let sql = sql.replace("post_reply", "@T@");
        x.case(&label, &sql, Proto::Binary(params), q.order == Order::Full, d)
            .await;
    }
    for (kind, sql, params) in probes() {
        let ordered = sql.contains("ORDER BY") && !sql.contains("GROUP BY d ORDER BY d DESC LIMIT");
        let label = format!("[{kind}] {sql}\n    params: {}", param_text(&params));
        x.case(
            &label,
            &sql.replace("post_reply", "@T@"),
            Proto::Binary(params),
            ordered,
            SUPPORTED,
        )
        .await;
    }
}

fn demands(q: &Q) -> Demands<'_> {
    Demands {
        supported: q.shape == Shape::Supported,
        ci: &q.ci_cols,
        collation: q.ci_collation,
        min_rows: q.min_rows,
    }
}

/// A pair of connections to `db`: through sluice at `addr`, and to the master directly.
async fn login(addr: &str, master: &str, db: &str) -> Sides {
    let timeout = Duration::from_secs(120);
    Sides {
        sl: wire::driver_login(addr, APP_USER, APP_PASSWORD, db, timeout).await,
        direct: wire::driver_login(master, SLUICE_USER, SLUICE_PASSWORD, db, timeout).await,
        t: "post_reply".into(),
        r: "ref".into(),
    }
}

/// Each sub-table holds only its own tids; their rows in all.
async fn placement(direct: &mut Wire) -> u64 {
    let mut total = 0;
    for k in 0..4 {
        let r = rendered(
            direct,
            &format!("SELECT COUNT(*), COALESCE(SUM(tid % 4 <> {k}), 0) FROM post_reply_{k}"),
        )
        .await;
        assert_eq!(r[0][1], "0", "post_reply_{k} holds rows of another shard: {r:?}");
        total += r[0][0].parse::<u64>().unwrap_or(0);
    }
    total
}

/// The fixed corpus, text and binary, reads then writes; panics on any failure.
pub async fn corpus() {
    let t_start = Instant::now();
    let cluster = shared_cluster();
    let db = unique_name("shard_fixed");
    // The binary pass on a table of its own with fewer rows (a prefix of the same):
    // every statement there costs a prepare, an execute and a close per sub-table.
    let db_b = format!("{db}_b");
    let yaml = format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.post_reply.tid.4\", \"{db_b}.post_reply.tid.4\"]\n"
    );
    let sluice = Sluice::start_for(cluster, &yaml);
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    cluster.master.sql(&format!("CREATE DATABASE {db_b}"));
    let addr = format!("127.0.0.1:{}", sluice.port);
    let mut x = Runner {
        s: login(&addr, &cluster.master.addr(), &db).await,
        addr: addr.clone(),
        db: db.clone(),
        tally: Tally::default(),
    };
    let mut y = Runner {
        s: login(&addr, &cluster.master.addr(), &db_b).await,
        addr: addr.clone(),
        db: db_b.clone(),
        tally: Tally::default(),
    };
    for r in [&mut x, &mut y] {
        must(&mut r.s.sl, &schema("post_reply")).await;
        must(&mut r.s.direct, &schema("ref")).await;
    }

    // --- Load: the same multi-row INSERTs through sluice and directly -------------------
    let t_load = Instant::now();
    let mut rng = Rng(0xa7_1a5);
    let data: Vec<Row> = (1..=N_ROWS).map(|id| reply(&mut rng, id)).collect();
    for (r, rows) in [(&mut x, &data[..]), (&mut y, &data[..BINARY_ROWS])] {
        for chunk in rows.chunks(BATCH) {
            let (a, b) = (insert_sql("post_reply", chunk), insert_sql("ref", chunk));
            let (a, b) = tokio::join!(r.s.sl.query(&a), r.s.direct.query(&b));
            for (side, r) in [("through sluice", a), ("directly", b)] {
                let ok = matches!(&r, Reply::Parts(p)
                    if matches!(p.as_slice(), [Part::Ok(ok)] if ok.affected_rows == chunk.len() as u64));
                assert!(ok, "multi-row INSERT {side}: {r:?}\n{}", sluice.log());
            }
        }
        assert_eq!(placement(&mut r.s.direct).await, rows.len() as u64);
    }
    cluster.wait_replicas_caught_up_within(Duration::from_secs(120));
    let load_time = t_load.elapsed();

    // --- Reads: the text and the binary pass at once, on two pairs of connections ------
    let t_reads = Instant::now();
    let queries = generate(&data);
    tokio::join!(text_reads(&mut x, &queries), binary_reads(&mut y, &queries));
    let t = &mut x.tally;
    let u = std::mem::take(&mut y.tally);
    for (k, n) in u.refused {
        *t.refused.entry(k).or_default() += n;
    }
    t.runs += u.runs;
    t.rows += u.rows;
    t.same += u.same;
    t.spelling += u.spelling;
    t.rounding += u.rounding;
    t.sub_defs += u.sub_defs;
    t.both_failed += u.both_failed;
    t.failures.extend(u.failures);
    t.slowest.extend(u.slowest);
    drop(y);
    let reads_time = t_reads.elapsed();

    // --- Writes: typed INSERTs, the fixed writes, then the contents ---------------------
    let t_writes = Instant::now();
    for (sql, params, may_refuse) in typed_inserts() {
        x.write(&sql, Proto::Binary(params), may_refuse).await;
    }
    // What sluice refused was written to the reference only: take it back out.
    must(&mut x.s.direct, "DELETE FROM ref WHERE id IN (900100, 900200)").await;
    must(&mut x.s.sl, "DELETE FROM post_reply WHERE id IN (900100, 900200)").await;
    for w in write_statements(&data) {
        match w {
            Write::One(sql) => {
                x.write(&sql.replace("post_reply", "@T@"), Proto::Text, false)
                    .await
            }
            Write::MayRefuse(sql) => {
                x.write(&sql.replace("post_reply", "@T@"), Proto::Text, true)
                    .await
            }
            Write::Tx { stmts, commit } => {
                must(&mut x.s.sl, "BEGIN").await;
                must(&mut x.s.direct, "BEGIN").await;
                for sql in stmts {
                    x.write(&sql.replace("post_reply", "@T@"), Proto::Text, false)
                        .await;
                }
                let end = if commit { "COMMIT" } else { "ROLLBACK" };
                must(&mut x.s.sl, end).await;
                must(&mut x.s.direct, end).await;
            }
        }
    }
    placement(&mut x.s.direct).await;
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    for sql in [
        &format!("SELECT {COLUMNS} FROM @T@ WHERE id > 900000 ORDER BY id") as &str,
        "SELECT * FROM @T@ ORDER BY id",
        "SELECT COUNT(*), SUM(amount), COUNT(score), SUM(score), AVG(amount) FROM @T@",
        "SELECT COUNT(DISTINCT user_id) FROM @T@",
    ] {
        for proto in [Proto::Text, Proto::Binary(Vec::new())] {
            x.case(
                &format!("[contents after writes] {sql}"),
                sql,
                proto,
                true,
                SUPPORTED,
            )
            .await;
        }
    }
    let writes_time = t_writes.elapsed();

    // --- Report -----------------------------------------------------------------------
    let t = &mut x.tally;
    eprintln!(
        "fixed corpus: {} runs ({} queries, text and binary, {} typed probes), {} rows compared: {} same, {} same error, \
         {} only a representative's spelling, {} only DOUBLE rounding, {} with a sub-table's column definitions, {} refused, {} failures; \
         load {load_time:.1?}, reads {reads_time:.1?}, writes {writes_time:.1?}, total {:.1?}",
        t.runs,
        queries.len(),
        probes().len(),
        t.rows,
        t.same,
        t.both_failed,
        t.spelling,
        t.rounding,
        t.sub_defs,
        t.refused.values().sum::<usize>(),
        t.failures.len(),
        t_start.elapsed()
    );
    let spent = |p: &str| -> Duration { t.slowest.iter().filter(|s| s.1.starts_with(p)).map(|s| s.0).sum() };
    eprintln!(
        "  time in statements: text {:.1?}, binary {:.1?}",
        spent("[text]"),
        spent("[binary]")
    );
    t.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (d, q) in t.slowest.iter().take(5) {
        eprintln!("  slowest: {d:.1?} {}", short(q));
    }
    for (k, n) in &t.refused {
        eprintln!("  refused {n:4}: {k}");
    }
    for f in &t.failures {
        eprintln!("FAILED {f}");
    }
    assert!(
        t.failures.is_empty(),
        "{} failures (details above)",
        t.failures.len()
    );
    drop(x);
    cluster.master.sql(&format!("DROP DATABASE {db}"));
    cluster.master.sql(&format!("DROP DATABASE {db_b}"));
}

/// INSERTs with typed parameters (column list given, and none; a DOUBLE shard key),
/// each with whether sluice may refuse it.
fn typed_inserts() -> Vec<(String, Vec<Param>, bool)> {
    let ins = format!("INSERT INTO @T@ ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    let mut out = Vec::new();
    for k in 0..24u32 {
        let id = 900_001 + k;
        let params = vec![
            p_int(
                if k % 2 == 0 { LONG } else { LONGLONG },
                k % 3 == 0,
                i64::from(id),
            ),
            match k % 4 {
                0 => p_int(TINY, true, i64::from(k)),
                1 => p_str(VAR_STRING, (228_596 + k).to_string().as_bytes()),
                2 => p_int(LONGLONG, true, i64::from(4 + k)),
                _ => p_str(NEWDECIMAL, format!("{}", 1001 + k).as_bytes()),
            },
            p_int(SHORT, false, 123),
            p_str(VAR_STRING, format!("typed 😀 it's \\ {k}").as_bytes()),
            p_datetime(
                DATETIME,
                2022,
                3,
                1 + (k % 28) as u8,
                10,
                20,
                30,
                250_000 * (k % 4),
            ),
            p_str(BLOB, &[b'm', 0xc3, 0xa9, b'\\', b'\'', b'0' + (k % 10) as u8]),
            if k % 5 == 0 {
                Param::Null
            } else {
                p_int(LONGLONG, false, -i64::from(k))
            },
            if k % 3 == 0 {
                Param::Null
            } else {
                p_str(STRING, b"Alpha")
            },
            p_str(NEWDECIMAL, format!("-{k}.5").as_bytes()),
        ];
        out.push((ins.clone(), params, false));
    }
    // A DOUBLE shard key (MariaDB converts 8.0 to 8): refused or exact.
    let mut params = vec![p_int(LONG, false, 900_200), p_double(8.0)];
    params.extend([
        p_int(SHORT, false, 5),
        p_str(VAR_STRING, b"double key"),
        p_datetime(DATETIME, 2022, 1, 1, 0, 0, 0, 0),
        p_str(VAR_STRING, b"m"),
        Param::Null,
        Param::Null,
        p_str(NEWDECIMAL, b"0"),
    ]);
    out.push((ins, params, true));
    // Without a column list: the table's column order (read by sluice from the definition).
    let bare = "INSERT INTO @T@ VALUES (?, ?, 7, 'bare', '2022-01-01 00:00:00', 'm', NULL, NULL, ?)";
    let params = vec![
        p_int(LONG, false, 900_100),
        p_int(LONG, false, 4),
        p_str(NEWDECIMAL, b"1.25"),
    ];
    out.push((bare.into(), params, true));
    out
}
