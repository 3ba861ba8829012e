//! The per-statement path without sockets: what sluice's own code costs for one
//! point select, apart from the kernel and the runtime. Budgets in benches/README.md.
//!
//! `cargo bench --bench statement` (criterion; `-- --quick` for a short run).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

use sluice::freshness::state::{Counters, Scope};
use sluice::protocol::codec::complete_frame;
use sluice::protocol::response::{ResponseKind, ResponseTracker, Step};
use sluice::router::classify;
use sluice::router::lexer::LexOptions;
use sluice::router::memo;
use sluice::router::route::{self, Source, View};

/// sysbench oltp_point_select's statement, as COM_QUERY sends it.
const POINT_SELECT: &[u8] = b"SELECT c FROM sbtest1 WHERE id=50123";
/// oltp_read_only's range query (longer text, ORDER BY).
const RANGE_ORDER: &[u8] = b"SELECT c FROM sbtest1 WHERE id BETWEEN 4999 AND 5098 ORDER BY c";

fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
    f.extend_from_slice(payload);
    f
}

/// The bytes MariaDB answers a point select with (CLIENT_DEPRECATE_EOF): column
/// count, one column definition, one row, the OK that ends it.
fn point_select_response() -> Vec<u8> {
    let mut coldef = Vec::new();
    for s in [&b"def"[..], b"sbtest", b"sbtest1", b"sbtest1", b"c", b"c"] {
        coldef.push(s.len() as u8);
        coldef.extend_from_slice(s);
    }
    coldef.extend_from_slice(&[
        0x0c, 0x2d, 0x00, 0xe0, 0x01, 0x00, 0x00, 0xfe, 0x00, 0x00, 0x00, 0x00, 0x00,
    ]);
    let mut row = vec![119u8];
    row.extend_from_slice(&[b'7'; 119]);
    let mut out = frame(1, &[1]);
    out.extend(frame(2, &coldef));
    out.extend(frame(3, &row));
    out.extend(frame(4, &[0xfe, 0, 0, 0x02, 0, 0, 0]));
    out
}

/// A replica's and the master's counters as the freshness gate compares
/// them: one tracked table, striped in 8 slots, plus the global row.
fn counters(add: u64) -> Counters {
    let mut c = Counters::default();
    for slot in 0..8 {
        c.set("sbtest.sbtest1", slot, 1000 + slot as u64 + add);
        c.set(sluice::freshness::state::GLOBAL_ROW, slot, 10 + add);
    }
    c.set(sluice::freshness::state::EPOCH_ROW, 0, 1);
    c
}

fn bench(cr: &mut Criterion) {
    let lex = LexOptions::default();
    let view = View::default();
    let tables = ["sbtest.sbtest1".to_string()];
    let replica = counters(5);
    let master = counters(0);
    let response = point_select_response();

    cr.bench_function("classify point select", |b| {
        b.iter(|| classify::classify_with(black_box(POINT_SELECT), lex))
    });
    cr.bench_function("classify range order", |b| {
        b.iter(|| classify::classify_with(black_box(RANGE_ORDER), lex))
    });
    cr.bench_function("classify+plan+gate point select", |b| {
        b.iter(|| {
            let sql = black_box(POINT_SELECT);
            let c = classify::classify_with(sql, lex);
            let p = route::plan(&c, sql, Source::Text, &view);
            let fresh = replica.covers(&master, Scope::Tables(&tables));
            black_box((p.target, fresh));
        })
    });
    // What a session runs per text statement: the memo (a shape seen before),
    // then the plan and the gate.
    let classify = |sql: &[u8]| classify::classify_any_mode(sql);
    cr.bench_function("memo point select", |b| {
        b.iter(|| memo::classified(black_box(POINT_SELECT), classify))
    });
    cr.bench_function("memo+plan+gate point select", |b| {
        b.iter(|| {
            let sql = black_box(POINT_SELECT);
            let c = memo::classified(sql, classify);
            let p = route::plan(&c, sql, Source::Text, &view);
            let fresh = replica.covers(&master, Scope::Tables(&tables));
            black_box((p.target, fresh));
        })
    });
    cr.bench_function("relay framing point select response", |b| {
        b.iter(|| {
            let mut buf = black_box(&response[..]);
            let mut t = ResponseTracker::new(ResponseKind::Query, true);
            let mut out = Vec::with_capacity(256);
            while let Some(h) = complete_frame(buf) {
                let step = t.feed(h.len, &buf[4..4 + h.len]);
                out.extend_from_slice(&buf[..h.total()]);
                buf = &buf[h.total()..];
                if step == Step::Done {
                    break;
                }
            }
            black_box(out.len())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
