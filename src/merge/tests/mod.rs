//! Merge pipeline tests: the seed's LIMIT case, early stop, grouping, HAVING, DISTINCT,
//! COUNT(DISTINCT), randomized comparisons with an unsharded reference, and fixtures
//! captured from MariaDB 10.11.

mod fixtures;
mod group;
mod order;
mod random;

use super::testutil::{int_row, row, texts, VecSource};
use super::value::{compare, flags, types, ColumnMeta};
use super::*;
use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;

fn meta(t: u8) -> ColumnMeta {
    let f = match t {
        types::VAR_STRING | types::STRING | types::BLOB => 0,
        _ => flags::BINARY | flags::NUM,
    };
    let coll = if f == 0 { 45 } else { 63 };
    ColumnMeta::new(t, f, coll, 0)
}

fn dec(scale: u8) -> ColumnMeta {
    ColumnMeta::new(types::NEWDECIMAL, flags::BINARY | flags::NUM, 63, scale)
}

async fn collect<S: RowSource>(m: &mut Merger<S>) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    while let Some(p) = m.next_row().await.expect("merge") {
        out.push(texts(&p));
    }
    out
}

fn strs(rows: &[&[Option<&str>]]) -> Vec<Vec<Option<String>>> {
    rows.iter()
        .map(|r| r.iter().map(|f| f.map(str::to_string)).collect())
        .collect()
}

/// A tiny deterministic PRNG (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The merge futures can run on a multi-threaded runtime (spawned tasks need `Send`).
#[test]
fn merge_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let mut m = Merger::new(
        vec![VecSource::new(vec![])],
        MergeSpec::concat(1),
        vec![meta(types::LONG)],
    )
    .expect("merger");
    let f = m.next_row();
    assert_send(&f);
    drop(f);
    let mut k = KMerge::new(vec![VecSource::new(vec![])], &[], &[meta(types::LONG)]).expect("kmerge");
    let f = k.next();
    assert_send(&f);
}
