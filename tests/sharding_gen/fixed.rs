//! The fixed corpus as cases of the generator: the seed's table (`post_reply`, 100k rows,
//! 4 sub-tables, created and loaded through sluice) against the reference table `ref`
//! holding the same rows, every query of `corpus::generate` judged by the oracle as text
//! (every 6th of the supported shapes again inside a transaction: the buffered path on
//! the session's master connection) and as a prepared statement with its literals bound
//! as typed parameters (`params.rs`); then typed probes, typed INSERTs, the fixed writes
//! (`writes.rs`) and the contents after them. sluice runs with `freshness: off` against
//! the shared cluster, so its reads go to the replicas: every read phase first waits
//! until they have applied everything.
//! Each statement is a case (`cases.rs`): a refusal of a shape the issue lists as
//! supported fails, and so do too few rows or spellings that differ outside `Q::ci`.

use std::time::{Duration, Instant};

use super::cases::{must, Demands, Runner, SUPPORTED};
use super::corpus::{
    generate, insert_sql, reply, schema, short, Order, Reply as Row, Rng, Shape, BATCH, COLUMNS, N_ROWS, Q,
};
use super::oracle::{rendered, Proto};
use super::params::*;
use super::writes::{write_statements, Write};
use crate::common::cluster::*;
use crate::common::wire::{Param, Part, Reply, Wire};

/// Rows of the binary pass's table (a prefix of the text pass's 100k).
const BINARY_ROWS: usize = 20_000;

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
    let master = cluster.master.addr();
    let mut x = Runner::new(&addr, &master, &db, "post_reply", "ref").await;
    let mut y = Runner::new(&addr, &master, &db_b, "post_reply", "ref").await;
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
                x.both_must("BEGIN").await;
                for sql in stmts {
                    x.write(&sql.replace("post_reply", "@T@"), Proto::Text, false)
                        .await;
                }
                let end = if commit { "COMMIT" } else { "ROLLBACK" };
                x.both_must(end).await;
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
        x.both(&format!("[contents after writes] {sql}"), sql, true, SUPPORTED)
            .await;
    }
    let writes_time = t_writes.elapsed();

    // --- Report -----------------------------------------------------------------------
    let t = &mut x.tally;
    eprintln!(
        "fixed corpus ({} queries, text and binary, {} typed probes): {}; load {load_time:.1?}, reads {reads_time:.1?}, \
         writes {writes_time:.1?}, total {:.1?}",
        queries.len(),
        probes().len(),
        t.summary(),
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
    x.assert_none_failed();
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
