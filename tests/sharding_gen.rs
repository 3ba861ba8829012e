//! The generative sharding differential (issue 42): random schemas (every column type,
//! latin1/utf8mb4 under general_ci, unicode_ci and bin, NULLs, ties, extreme values),
//! random rows inserted through sluice into a sharded table and directly into one
//! reference table, random statements from a grammar of what the README claims for
//! sharded tables (`sharding_gen/grammar.rs`) under random session settings, each run
//! through sluice and directly, as text and as a prepared statement. Compared by the
//! oracle (`sharding_gen/oracle.rs`): column definitions (every field) and the PREPARE
//! answer, rows (in order where the statement fixes it, as a multiset otherwise),
//! warnings, errors and `FOUND_ROWS()`. A 1235 refusal is acceptable and counted by
//! kind; anything else that differs is a wrong answer, shrunk (parts of the statement,
//! then rows) to a minimal case and printed.
//!
//! The fixed corpus (the seed's table and query, queries by shape, typed probes, fixed
//! writes: `sharding_gen/fixed.rs`) runs through the same oracle as a second test.
//!
//! In the suite: a fixed seed, bounded well under 60 s. Long runs:
//! `scripts/shard-gen SEED COUNT` (`SHARD_GEN_SEED`, `SHARD_GEN_COUNT`).

mod common;
mod sharding_gen {
    pub mod cases;
    pub mod corpus;
    pub mod fixed;
    pub mod grammar;
    pub mod oracle;
    pub mod params;
    pub mod schema;
    pub mod writes;
}

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::wire::{self, Part, Reply, Wire};
use sharding_gen::grammar::{lookup_table, statement, Gen, Stmt, SETTINGS};
use sharding_gen::oracle::{OrderedConcat, Proto, Seen, Sides, Verdict};
use sharding_gen::schema::{rows, Rng, Schema};

/// Statements of one schema before the next.
const PER_SCHEMA: usize = 60;
/// Rows of each table.
const ROWS: usize = 48;
/// Sharded tables configured (one per schema, reused round-robin).
const TABLES: usize = 8;
/// At most this many candidate runs while shrinking one failure.
const SHRINK_STEPS: usize = 80;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn must(w: &mut Wire, sql: &str) {
    match w.query(sql).await {
        Reply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))) => {}
        other => panic!("{sql}: {other:?}"),
    }
    w.raw_rows.clear();
}

/// Both sides of the differential.
struct Pair {
    /// sluice with the sharded table, the server with the reference table.
    s: Sides,
    /// Session settings in effect, in order (for a failure's report).
    settings: Vec<String>,
    short_sort: bool,
    /// The session has a `sql_select_limit`.
    select_limit: bool,
    logins: Logins,
}

/// Where both sides log in (a new session per schema, and for rows under the defaults).
struct Logins {
    sluice: String,
    master: String,
    db: String,
}

#[derive(Default)]
struct Tally {
    statements: u64,
    runs: u64,
    same: u64,
    spelling: u64,
    ties: u64,
    rounding: u64,
    both_failed: u64,
    refusals: BTreeMap<String, u64>,
    wrong: Vec<String>,
}

impl Pair {
    /// Both protocols through the oracle; the worst verdict (a wrong answer before a
    /// refusal) and its protocol, or "both-failed" when both sides failed alike.
    async fn check(&mut self, g: &Gen, found_rows: bool) -> (Verdict, &'static str) {
        let mut worst = (Verdict::Same, "text");
        let sql = g.stmt.render("@T@");
        let concats: Vec<OrderedConcat> = match &g.stmt {
            Stmt::Select(sel) => sel
                .items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| OrderedConcat::parse(i, item))
                .collect(),
            Stmt::Union { .. } => Vec::new(),
        };
        for proto in [Proto::Text, Proto::Binary(Vec::new())] {
            for p in &g.pre {
                must(&mut self.s.sl, p).await;
                must(&mut self.s.direct, p).await;
            }
            let o = self
                .s
                .differ(&sql, &proto, g.ordered, found_rows, None, &concats)
                .await;
            let both_failed = matches!((&o.got, &o.want), (Seen::Err(x, _), Seen::Err(y, _)) if x == y);
            if o.verdict.rank() > worst.0.rank() {
                worst = (o.verdict, proto.name());
            }
            if both_failed && worst.0 == Verdict::Same {
                worst.1 = "both-failed";
            }
        }
        worst
    }

    /// A new session on each side, under the default settings.
    async fn default_sessions(&self) -> (Wire, Wire) {
        let timeout = Duration::from_secs(60);
        let sl = wire::driver_login(
            &self.logins.sluice,
            APP_USER,
            APP_PASSWORD,
            &self.logins.db,
            timeout,
        )
        .await;
        let direct = wire::driver_login(
            &self.logins.master,
            SLUICE_USER,
            SLUICE_PASSWORD,
            &self.logins.db,
            timeout,
        )
        .await;
        (sl, direct)
    }

    /// Runs `sql` on both sides' tables, on the given connections; both must succeed or
    /// both fail.
    async fn both_on(&self, (sl, direct): &mut (Wire, Wire), sql: &str) {
        let (a, b) = (sql.replace("@T@", &self.s.t), sql.replace("@T@", &self.s.r));
        let x = sl.query(&a).await;
        let y = direct.query(&b).await;
        sl.raw_rows.clear();
        direct.raw_rows.clear();
        let ok = |r: &Reply| matches!(r, Reply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))));
        assert!(ok(&x) == ok(&y), "{sql}: sluice {x:?} / server {y:?}");
    }

    /// Shrinks a wrong statement (drop parts while it stays wrong in the way `first` says,
    /// see [`same_symptom`]), then its rows (delete halves, then smaller chunks, while it
    /// stays so; `rows` are re-inserted when a deletion hides the failure), deleted and
    /// re-inserted on `loader`, the default sessions that loaded them.
    async fn shrink(
        &mut self,
        g: &Gen,
        first: &str,
        found_rows: bool,
        rows: &mut Vec<(usize, String)>,
        shrink_rows: bool,
        loader: &mut (Wire, Wire),
    ) -> (Gen, String) {
        let mut cur = g.clone();
        let mut why = String::new();
        let mut steps = 0;
        'outer: loop {
            for cand in cur.stmt.shrinks() {
                steps += 1;
                if steps > SHRINK_STEPS {
                    break 'outer;
                }
                let c = Gen {
                    stmt: cand,
                    ordered: cur.ordered && shrunk_keeps_order(&cur.stmt),
                    pre: cur.pre.clone(),
                };
                if let (Verdict::Wrong(w), _) = self.check(&c, found_rows).await {
                    if !same_symptom(first, &w) {
                        continue;
                    }
                    cur = c;
                    why = w;
                    continue 'outer;
                }
            }
            break;
        }
        if why.is_empty() {
            if let (Verdict::Wrong(w), _) = self.check(&cur, found_rows).await {
                why = w;
            }
        }
        if shrink_rows {
            let mut chunk = rows.len().div_ceil(2);
            while chunk >= 1 && steps < 3 * SHRINK_STEPS {
                let mut i = 0;
                while i < rows.len() {
                    steps += 1;
                    let end = (i + chunk).min(rows.len());
                    let ids: Vec<String> = rows[i..end].iter().map(|(id, _)| id.to_string()).collect();
                    self.both_on(
                        loader,
                        &format!("DELETE FROM @T@ WHERE id IN ({})", ids.join(", ")),
                    )
                    .await;
                    let still = match self.check(&cur, found_rows).await {
                        (Verdict::Wrong(w), _) if same_symptom(first, &w) => Some(w),
                        _ => None,
                    };
                    if let Some(w) = still {
                        why = w;
                        rows.drain(i..end);
                    } else {
                        let back: Vec<&str> = rows[i..end].iter().map(|(_, r)| r.as_str()).collect();
                        self.both_on(loader, &format!("INSERT INTO @T@ VALUES {}", back.join(", ")))
                            .await;
                        i = end;
                    }
                }
                if chunk == 1 {
                    break;
                }
                chunk = chunk.div_ceil(2);
            }
        }
        (cur, why)
    }
}

/// Whether a shrunk candidate's wrong answer (`why`) is still the one found (`first`): rows
/// that differ stay rows that differ, column definitions stay column definitions (a
/// statement wrong in its rows and its column flags would otherwise shrink to the flags
/// alone and hide the rows); other differences (warnings, errors) shrink to any.
fn same_symptom(first: &str, why: &str) -> bool {
    let rows = |w: &str| w.contains(" rows vs ");
    let defs = |w: &str| w.starts_with("column ") || w.contains("; column ");
    if rows(first) {
        rows(why)
    } else if defs(first) {
        defs(why)
    } else {
        true
    }
}

/// Whether the order fixed before a shrink is still fixed after (dropping an ORDER BY
/// key or LIMIT can unfix it): conservatively, only a shrink of a one-row aggregate
/// keeps it.
fn shrunk_keeps_order(s: &Stmt) -> bool {
    matches!(s, Stmt::Select(sel) if sel.group.is_empty() && sel.order.is_empty() && !sel.distinct
        && sel.items.iter().all(|i| i.contains('(')))
}

async fn run(seed: u64, count: u64, budget: Duration) -> Tally {
    let cluster = shared_cluster();
    let db = unique_name("sgen");
    let tables: Vec<String> = (0..TABLES)
        .map(|i| format!("\"{db}.t{i}.k.{}\"", 2 + i % 3))
        .collect();
    let yaml = format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"strict\"\nsharding:\n  tables: [{}]\n",
        tables.join(", ")
    );
    // The master alone: the rows shrinking deletes and puts back must be seen at once
    // (replica lag is another test's subject).
    let master_only = format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    replicas: []\n",
        Sluice::users_yaml(),
        cluster.master.addr()
    );
    let s = Sluice::start(&format!("{master_only}{yaml}"));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let timeout = Duration::from_secs(60);
    let sl = wire::driver_login(
        &format!("127.0.0.1:{}", s.port),
        APP_USER,
        APP_PASSWORD,
        &db,
        timeout,
    )
    .await;
    let mut direct =
        wire::driver_login(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db, timeout).await;
    for sql in lookup_table() {
        must(&mut direct, &sql).await;
    }
    let mut pair = Pair {
        s: Sides {
            sl,
            direct,
            t: String::new(),
            r: String::new(),
            latin1: false,
        },
        settings: Vec::new(),
        short_sort: false,
        select_limit: false,
        logins: Logins {
            sluice: format!("127.0.0.1:{}", s.port),
            master: cluster.master.addr(),
            db: db.clone(),
        },
    };
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut round = 0;
    while tally.statements < count && started.elapsed() < budget {
        let schema = Schema::random(&mut rng);
        // A new session per schema on both sides: a setting sluice refuses by (a SET
        // naming max_sort_length) must not blanket every later schema's statements.
        if round > 0 {
            (pair.s.sl, pair.s.direct) = pair.default_sessions().await;
        }
        pair.s.t = format!("t{}", round % TABLES);
        pair.s.r = format!("r{}", round % TABLES);
        round += 1;
        for (w, name) in [(&mut pair.s.sl, &pair.s.t), (&mut pair.s.direct, &pair.s.r)] {
            must(w, &format!("DROP TABLE IF EXISTS `{name}`")).await;
            must(w, &schema.create(name)).await;
        }
        // Rows are loaded (and put back while shrinking) on sessions of their own under
        // the default settings: the session's `SET NAMES latin1` would store the same
        // literals otherwise ('ß' double-encoded) and later statements would read other data.
        pair.settings.clear();
        pair.s.latin1 = false;
        pair.short_sort = false;
        pair.select_limit = false;
        let data = rows(&mut rng, &schema, ROWS);
        let mut kept: Vec<(usize, String)> = data
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, r)| (i + 1, r))
            .collect();
        let mut loader = pair.default_sessions().await;
        pair.both_on(
            &mut loader,
            &format!("INSERT INTO @T@ VALUES {}", data.join(", ")),
        )
        .await;
        let mut first_wrong = true;
        for n in 0..PER_SCHEMA {
            if tally.statements >= count || started.elapsed() >= budget {
                break;
            }
            if n % 8 == 0 && rng.chance(70) {
                let set = rng.pick(SETTINGS).to_string();
                let a = pair.s.sl.query(&set).await;
                let b = pair.s.direct.query(&set).await;
                pair.s.sl.raw_rows.clear();
                pair.s.direct.raw_rows.clear();
                let ok =
                    |r: &Reply| matches!(r, Reply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))));
                if ok(&a) != ok(&b) {
                    tally.wrong.push(format!("{set}: sluice {a:?} / server {b:?}"));
                }
                if ok(&b) {
                    if set.contains("max_sort_length") {
                        pair.short_sort = !set.contains("DEFAULT");
                    }
                    if set.starts_with("SET NAMES") {
                        pair.s.latin1 = set == "SET NAMES latin1";
                    }
                    if set.contains("sql_select_limit") {
                        pair.select_limit = !set.contains("DEFAULT");
                    }
                    pair.settings.push(set);
                }
            }
            // Under sql_select_limit only a statement with a total order has one answer
            // (which rows a LIMIT keeps is otherwise the plan's).
            let g = loop {
                let g = statement(&mut rng, &schema, pair.short_sort);
                if g.ordered || !pair.select_limit {
                    break g;
                }
            };
            let found_rows = rng.chance(20);
            tally.statements += 1;
            tally.runs += 2;
            let (v, proto) = pair.check(&g, found_rows).await;
            match v {
                Verdict::Same if proto == "both-failed" => tally.both_failed += 1,
                Verdict::Same | Verdict::SubTableDefs => tally.same += 1,
                Verdict::Spelling => tally.spelling += 1,
                Verdict::Ties => tally.ties += 1,
                Verdict::Rounding => tally.rounding += 1,
                Verdict::Refused(kind) => *tally.refusals.entry(kind).or_default() += 1,
                Verdict::Wrong(why) => {
                    let (min, why_min) = pair
                        .shrink(&g, &why, found_rows, &mut kept, first_wrong, &mut loader)
                        .await;
                    let rows_note = if first_wrong {
                        format!(
                            "rows ({}): {}",
                            kept.len(),
                            kept.iter()
                                .map(|(_, r)| r.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    } else {
                        format!("{} rows", kept.len())
                    };
                    first_wrong = false;
                    let report = format!(
                        "WRONG ({proto}) seed {seed} statement {}\n  schema: {}\n  settings: {:?}\n  statement: {}\n  minimal: {}\n  {}\n  first: {why}\n  minimal: {why_min}",
                        tally.statements,
                        schema.create("t"),
                        pair.settings,
                        g.stmt.render("t"),
                        min.stmt.render("t"),
                        rows_note,
                    );
                    eprintln!("{report}\n");
                    tally.wrong.push(report);
                }
            }
        }
    }
    eprintln!(
        "shard-gen seed {seed}: {} statements ({} runs, text and binary) in {:.1}s over {round} schemas: {} same, {} same error, {} only a representative's spelling, {} only the order of ties in an ordered GROUP_CONCAT, {} only DOUBLE rounding, {} refused, {} wrong",
        tally.statements,
        tally.runs,
        started.elapsed().as_secs_f64(),
        tally.same,
        tally.both_failed,
        tally.spelling,
        tally.ties,
        tally.rounding,
        tally.refusals.values().sum::<u64>(),
        tally.wrong.len()
    );
    for (k, n) in &tally.refusals {
        eprintln!("  refused {n:5}: {k}");
    }
    tally
}

#[tokio::test]
async fn generated_statements_answer_exactly_or_refuse() {
    let seed = env_num("SHARD_GEN_SEED", 42);
    let count = env_num("SHARD_GEN_COUNT", 300);
    let budget = Duration::from_secs(env_num("SHARD_GEN_SECS", 45));
    let tally = run(seed, count, budget).await;
    assert!(tally.statements > 0);
    assert!(
        tally.wrong.is_empty(),
        "{} wrong answers:\n{}",
        tally.wrong.len(),
        tally.wrong.join("\n")
    );
}

/// The fixed corpus (the seed's table and query, and queries by shape) as cases of the
/// same oracle, text and binary: `sharding_gen/fixed.rs`.
#[tokio::test]
async fn fixed_corpus_answers_exactly_or_refuses() {
    sharding_gen::fixed::corpus().await;
}

/// The oracle's one allowance inside `GROUP_CONCAT(x ORDER BY x)`: items equal under x's
/// collation (`a` and `a ` under PAD SPACE, `b` and `B` under a _ci collation) in any
/// order, and nothing else: items that differ under it swapped, or other items, are wrong.
#[tokio::test]
async fn oracle_accepts_only_ties_in_an_ordered_group_concat() {
    let cluster = shared_cluster();
    let db = unique_name("sgen_ties");
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let timeout = Duration::from_secs(60);
    let addr = cluster.master.addr();
    let login = || wire::driver_login(&addr, SLUICE_USER, SLUICE_PASSWORD, &db, timeout);
    let mut sides = Sides {
        sl: login().await,
        direct: login().await,
        t: "r".into(),
        r: "r".into(),
        latin1: false,
    };
    must(
        &mut sides.direct,
        "CREATE TABLE r (id INT PRIMARY KEY, x VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)",
    )
    .await;
    must(&mut sides.direct, "INSERT INTO r VALUES (1, 'a')").await;
    let item = "GROUP_CONCAT(x ORDER BY x SEPARATOR ',')";
    let concats: Vec<OrderedConcat> = OrderedConcat::parse(1, item).into_iter().collect();
    assert_eq!(concats.len(), 1, "{item} is an ordered GROUP_CONCAT");
    let column = |name: &str| format!("{name}|{name}|||||cs=45|len=40|type=253|flags=0x0|dec=0");
    // One row, `1` then the list, as a text row or as a binary one (a header byte and a
    // null bitmap first).
    let rows = |list: &str, binary: bool| {
        let mut row = if binary { vec![0, 0] } else { Vec::new() };
        row.extend_from_slice(&[1, b'1', list.len() as u8]);
        row.extend_from_slice(list.as_bytes());
        let columns = vec![column("k"), column(item)];
        Seen::Rows {
            prepared: binary.then(|| (0, columns.clone())),
            columns,
            rows: vec![row],
            cells: vec![vec!["1".into(), list.into()]],
            warnings: 0,
        }
    };
    let cases = [
        ("a,a ,B,b,c", true),
        ("a ,a,b,B,c", true),
        // `b` before `a`: they differ under the collation.
        ("a ,b,a,B,c", false),
        ("c,B,b,a,a ", false),
        // Other items (`C` for `c`, one item missing).
        ("a ,a,b,B,C", false),
        ("a ,a,b,B", false),
    ];
    let mut failed = Vec::new();
    for binary in [false, true] {
        let server = rows("a ,a,b,B,c", binary);
        for (list, accepted) in cases {
            if sides
                .only_ties(&rows(list, binary), &server, true, &concats)
                .await
                != accepted
            {
                failed.push(format!(
                    "{list:?} against \"a ,a,b,B,c\" (binary {binary}): accepted should be {accepted}"
                ));
            }
        }
    }
    cluster.master.sql(&format!("DROP DATABASE {db}"));
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Minimal cases `scripts/shard-gen` found (seeds 42, 202, 303, 505), through the oracle in
/// both protocols, on an empty table and with rows: answered exactly or refused.
#[tokio::test]
async fn cases_the_generator_found_answer_exactly_or_refuse() {
    let cluster = shared_cluster();
    let db = unique_name("sgen_found");
    let yaml = format!(
        "{}groups:\n  - name: main\n    master: {{ addr: {}, user: {SLUICE_USER}, password: {SLUICE_PASSWORD} }}\n    replicas: []\nlog:\n  level: warn\nsharding:\n  tables: [\"{db}.t.k.3\"]\n",
        Sluice::users_yaml(),
        cluster.master.addr()
    );
    let s = Sluice::start(&yaml);
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let timeout = Duration::from_secs(60);
    let mut sides = Sides {
        sl: wire::driver_login(
            &format!("127.0.0.1:{}", s.port),
            APP_USER,
            APP_PASSWORD,
            &db,
            timeout,
        )
        .await,
        direct: wire::driver_login(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db, timeout).await,
        t: "t".into(),
        r: "r".into(),
        latin1: false,
    };
    for (w, name) in [(&mut sides.sl, "t"), (&mut sides.direct, "r")] {
        must(
            w,
            &format!("CREATE TABLE {name} (id INT PRIMARY KEY, k INT NOT NULL, b BIT(8) NULL, d DECIMAL(12,3) NULL, c BIGINT NULL, g VARCHAR(10) NULL, KEY (k))"),
        )
        .await;
    }
    let cases = [
        // A temporary table's column (DISTINCT of a BIT): no org_table, and `table` named
        // the sub-table (`t_0`) where the server names `t`.
        "SELECT DISTINCT b FROM @T@ ORDER BY b DESC",
        // A quotient's hidden digits: the server sums 0.000333333… (its 9-digit word),
        // the shards' partial sums are sent rounded to 7 places.
        "SELECT SUM(d / 3) FROM @T@",
        "SELECT AVG(d / 3), COUNT(*) FROM @T@",
        "SELECT k % 2 AS g, SUM(d / 3) FROM @T@ GROUP BY g ORDER BY g",
        // The server moves a HAVING on the group key into the WHERE and never computes
        // c * 2 for group 'a' (BIGINT overflow); the parts, without the HAVING, do.
        "SELECT g, MAX(c * 2) FROM @T@ GROUP BY g HAVING g <> 'a' ORDER BY g",
        // The same where a part answers the error in place of its rows (seed 404).
        "SELECT g, MAX(c * 2) FROM @T@ WHERE c >= 0 GROUP BY g HAVING g <> 'a'",
        // A HAVING that reads a string as a number: the server warns for each string that
        // is not a number (seed 303), the merge evaluating it did not.
        "SELECT MAX(g) FROM @T@ HAVING MAX(g) >= 5",
        "SELECT k, MAX(g) FROM @T@ GROUP BY k HAVING MAX(g) ORDER BY k",
        // FOUND_ROWS() after an aggregate whose WHERE the optimizer finds impossible is
        // the statement before's count (seeds 404, 505), 1 otherwise.
        "SELECT SUM(c) FROM @T@ WHERE g = 'a' AND g = 'b'",
        "SELECT COUNT(*) FROM @T@",
        // The same pruned to one sub-table (k IN (1, 2) AND k IN (4, 6) is no key: seed
        // 1008), whose merge does not see the aggregate: sluice said 1.
        "SELECT SUM(c) FROM @T@ WHERE k IN (1, 2) AND k IN (4, 6)",
        "SELECT SUM(c) FROM @T@ WHERE k = 3",
    ];
    let mut wrong = Vec::new();
    // One 0.001 on each of the 3 sub-tables: 0.0003333 × 3 = 0.0009999 where the
    // server's 0.000333333 × 3 rounds to 0.0010000.
    let rows = "(1, 1, b'1', 0.001, 9223372036854775807, 'a'), (2, 2, b'101', 0.001, 1, 'b'), \
                (3, 3, NULL, 0.001, 2, 'c'), (4, 4, b'11111111', NULL, 3, 'b'), (5, 5, b'0', NULL, 4, 'c'), \
                (6, 6, b'1', NULL, 5, 'b')";
    for rows in ["", rows] {
        if !rows.is_empty() {
            must(&mut sides.sl, &format!("INSERT INTO t VALUES {rows}")).await;
            must(&mut sides.direct, &format!("INSERT INTO r VALUES {rows}")).await;
        }
        for sql in cases {
            for proto in [Proto::Text, Proto::Binary(Vec::new())] {
                let found_rows = sql.contains("SUM(c)") || sql.contains("COUNT(*)");
                if found_rows {
                    // A count for the aggregate to keep: the same on both sides.
                    must(&mut sides.sl, "SELECT id FROM t").await;
                    must(&mut sides.direct, "SELECT id FROM r").await;
                }
                let o = sides.differ(sql, &proto, true, found_rows, None, &[]).await;
                if let Verdict::Wrong(why) = o.verdict {
                    let table = if rows.is_empty() { "empty table" } else { "6 rows" };
                    wrong.push(format!("{sql} ({}, {table}): {why}", proto.name()));
                }
            }
        }
    }
    // Under session settings, on the 6 rows: a quotient as a group key (the server keeps
    // 0.000333333 and 0 apart, both shown 0.000: seed 202), FOUND_ROWS() after a UNION
    // under sql_select_limit (the server counts the UNION's rows: seed 101).
    let set_cases = [
        (
            "SET div_precision_increment = 0",
            "SELECT d / 3, COUNT(*) FROM @T@ GROUP BY d / 3 ORDER BY 2",
            "SET div_precision_increment = DEFAULT",
        ),
        (
            "SET sql_select_limit = 2",
            "SELECT id FROM @T@ UNION SELECT id + 10 FROM @T@ ORDER BY 1",
            "SET sql_select_limit = DEFAULT",
        ),
    ];
    for (set, sql, reset) in set_cases {
        for proto in [Proto::Text, Proto::Binary(Vec::new())] {
            must(&mut sides.sl, set).await;
            must(&mut sides.direct, set).await;
            let o = sides.differ(sql, &proto, true, true, None, &[]).await;
            if let Verdict::Wrong(why) = o.verdict {
                wrong.push(format!("{set}; {sql} ({}): {why}", proto.name()));
            }
            must(&mut sides.sl, reset).await;
            must(&mut sides.direct, reset).await;
        }
    }
    // A column whose collation DDL through sluice changed: the merge kept ordering it under
    // the collation it had read first (seed 42 statement 2708: a table dropped and created
    // again with a latin1_swedish_ci column where it had been utf8mb4_bin: `back\` after `E`).
    let ddl_steps = [
        "ALTER TABLE @T@ ADD h VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL",
        "UPDATE @T@ SET h = g",
        "INSERT INTO @T@ (id, k, h) VALUES (7, 7, 'A'), (8, 8, 'B'), (9, 9, ''), (10, 10, ' ')",
        "SELECT h, id FROM @T@ ORDER BY h, id",
        "ALTER TABLE @T@ MODIFY h VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL",
        "SELECT h, id FROM @T@ ORDER BY h, id",
        // COUNT(DISTINCT) of a computed string took its collation from the statement's
        // column at that place, the count: '' and ' ' counted apart where the server
        // counts one under utf8mb4_general_ci (seed 101).
        "SELECT COUNT(DISTINCT CONCAT(h, '')) FROM @T@",
        "SELECT k % 2 AS m, COUNT(DISTINCT LOWER(h)), COUNT(*) FROM @T@ GROUP BY m ORDER BY m",
        // The server sorts a computed VARCHAR of an 8-bit _bin collation without PAD SPACE
        // ('' before ' '), the merge broke the tie by the next key (seed 404).
        "ALTER TABLE @T@ ADD lb VARCHAR(5) CHARACTER SET latin1 COLLATE latin1_bin NULL",
        "UPDATE @T@ SET lb = h",
        "SELECT id, LEFT(lb, 2) FROM @T@ ORDER BY 2, id DESC",
        "SELECT id, lb COLLATE latin1_bin AS x FROM @T@ ORDER BY x DESC, id",
        "SELECT id, lb FROM @T@ ORDER BY lb, id DESC",
        // DISTINCT ordered by a computed TEXT repeated after another key: the server keeps
        // one row per value of that key when the result is sent in another character set
        // (2 rows here where the statement has 5; seed 505).
        "ALTER TABLE @T@ ADD tx TEXT CHARACTER SET latin1 NULL",
        "UPDATE @T@ SET tx = h",
        "SELECT DISTINCT k % 2, CONCAT(tx, '') FROM @T@ ORDER BY k % 2, CONCAT(tx, '')",
        // The same for `x COLLATE` in x's own collation, sent in its own character set.
        "ALTER TABLE @T@ ADD tu TEXT CHARACTER SET utf8mb4 NULL",
        "UPDATE @T@ SET tu = h",
        "SELECT DISTINCT k % 2, tu COLLATE utf8mb4_general_ci FROM @T@ ORDER BY k % 2, tu COLLATE utf8mb4_general_ci",
    ];
    for sql in ddl_steps {
        if !sql.starts_with("SELECT") {
            must(&mut sides.sl, &sql.replace("@T@", "t")).await;
            must(&mut sides.direct, &sql.replace("@T@", "r")).await;
            continue;
        }
        for proto in [Proto::Text, Proto::Binary(Vec::new())] {
            let o = sides.differ(sql, &proto, true, false, None, &[]).await;
            if let Verdict::Wrong(why) = o.verdict {
                wrong.push(format!("{sql} ({}): {why}", proto.name()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
