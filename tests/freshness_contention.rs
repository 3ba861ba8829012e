//! Issue 40: the counter triggers must not make transactions wait on each other.
//!
//! A counter row's lock is held until COMMIT. When every writer bumped row
//! `CONNECTION_ID() % 16` of its table, the 17th of 40 open transactions inserting
//! into one table waited for `innodb_lock_wait_timeout`, and pairs writing two tables
//! in opposite orders deadlocked (1213) on counter rows alone. Each connection sluice
//! opens now claims a slot of its own (`backend::slot`), so through sluice:
//!
//! - 100 concurrent open transactions inserting into one table: no insert waits
//!   (each is timed; a bound far below the lock wait timeout);
//! - 1,000 pairs of transactions writing two tables in opposite orders, 50 pairs at a
//!   time: no deadlock and no lock wait timeout;
//!
//! with the same runs straight against MariaDB as the baseline: without triggers
//! (asserted: nothing waits) and with them, bypassing sluice (printed: those writers
//! still share `CONNECTION_ID() % 16`, docs/guarantees.md gives the probability).
//! And a client cannot clear the slot: after its own `SET @sluice_slot`,
//! `RELEASE_ALL_LOCKS()`, RESET CONNECTION or COM_CHANGE_USER its connection
//! still bumps a row of its own; two sluice processes never give one number twice.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::reads::*;
use mysql_async::prelude::*;

/// Open transactions of the first scenario, and pairs at a time in the second.
const OPEN: usize = 100;
const PAIRS: usize = 1000;
const PAIRS_AT_ONCE: usize = 50;
/// No statement of a run without a counter conflict takes this long, even on a
/// loaded 2-core machine; a conflict waits `innodb_lock_wait_timeout` (5 s).
const BOUND: Duration = Duration::from_millis(2500);
const LOCK_WAIT_SECS: u32 = 5;

/// Where a run connects.
#[derive(Clone)]
struct Target {
    url: String,
    what: &'static str,
}

/// What a run saw: the slowest statement, statements slower than [`BOUND`],
/// and errors by code.
#[derive(Debug, Default)]
struct Seen {
    slowest: Duration,
    slow: usize,
    errors: std::collections::BTreeMap<u16, usize>,
}

impl Seen {
    fn add(&mut self, took: Duration, r: &Result<(), mysql_async::Error>) {
        self.slowest = self.slowest.max(took);
        if took >= BOUND {
            self.slow += 1;
        }
        if let Err(e) = r {
            let code = match e {
                mysql_async::Error::Server(e) => e.code,
                other => panic!("not a server error: {other}"),
            };
            *self.errors.entry(code).or_default() += 1;
        }
    }

    fn merge(&mut self, other: Seen) {
        self.slowest = self.slowest.max(other.slowest);
        self.slow += other.slow;
        for (code, n) in other.errors {
            *self.errors.entry(code).or_default() += n;
        }
    }

    fn clean(&self) -> bool {
        self.slow == 0 && self.errors.is_empty()
    }
}

async fn timed(c: &mut mysql_async::Conn, sql: String, seen: &mut Seen) -> bool {
    let start = Instant::now();
    let r = c.query_drop(sql).await;
    seen.add(start.elapsed(), &r);
    r.is_ok()
}

async fn connect(target: &Target, n: usize) -> Vec<mysql_async::Conn> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = mysql_async::Conn::from_url(target.url.as_str())
            .await
            .expect("connect");
        c.query_drop(format!("SET SESSION innodb_lock_wait_timeout = {LOCK_WAIT_SECS}"))
            .await
            .expect("lock wait timeout");
        conns.push(c);
    }
    conns
}

/// `OPEN` transactions insert a row each into `t`, and all stay open until every
/// insert has answered.
async fn open_transactions(target: &Target, base: i64) -> Seen {
    let conns = connect(target, OPEN).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(OPEN));
    let tasks: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let mut seen = Seen::default();
                c.query_drop("BEGIN").await.expect("begin");
                let id = base + i as i64;
                timed(&mut c, format!("INSERT INTO t VALUES ({id}, 0)"), &mut seen).await;
                barrier.wait().await;
                c.query_drop("COMMIT").await.expect("commit");
                seen
            })
        })
        .collect();
    let mut seen = Seen::default();
    for t in tasks {
        seen.merge(t.await.expect("task"));
    }
    seen
}

/// `pairs` pairs, `PAIRS_AT_ONCE` at a time: X updates a then b, Y updates b then a
/// (other rows), every transaction of a round holding its first row while all send
/// their second statement, as transactions that stay open a little longer do.
/// Counts deadlocks (1213) and lock wait timeouts (1205).
async fn opposite_pairs(target: &Target, pairs: usize) -> Seen {
    let mut conns = connect(target, 2 * PAIRS_AT_ONCE).await;
    let mut seen = Seen::default();
    for _round in 0..pairs / PAIRS_AT_ONCE {
        let barrier = Arc::new(tokio::sync::Barrier::new(conns.len()));
        let tasks: Vec<_> = conns
            .drain(..)
            .enumerate()
            .map(|(j, mut c)| {
                let barrier = barrier.clone();
                // Pair j / 2; X is even, Y odd; each its own row.
                let (first, second) = if j % 2 == 0 { ("a", "b") } else { ("b", "a") };
                let id = j + 1;
                tokio::spawn(async move {
                    let mut seen = Seen::default();
                    c.query_drop("BEGIN").await.expect("begin");
                    let ok = timed(
                        &mut c,
                        format!("UPDATE {first} SET v = v + 1 WHERE id = {id}"),
                        &mut seen,
                    )
                    .await;
                    barrier.wait().await;
                    if ok {
                        timed(
                            &mut c,
                            format!("UPDATE {second} SET v = v + 1 WHERE id = {id}"),
                            &mut seen,
                        )
                        .await;
                    }
                    barrier.wait().await;
                    c.query_drop("COMMIT").await.expect("commit");
                    (seen, c)
                })
            })
            .collect();
        for t in tasks {
            let (s, c) = t.await.expect("task");
            seen.merge(s);
            conns.push(c);
        }
    }
    seen
}

/// A database with `t`, `a` and `b` (rows 1..=2*PAIRS_AT_ONCE in a and b), with
/// sluice's triggers or without.
async fn make_db(cluster: &Cluster, prefix: &str, triggers: bool) -> String {
    let db = unique_name(prefix);
    let rows: Vec<String> = (1..=2 * PAIRS_AT_ONCE).map(|i| format!("({i}, 0)")).collect();
    let rows = rows.join(", ");
    cluster.master.sql(&format!(
        "CREATE DATABASE {db}; CREATE TABLE {db}.t (id BIGINT PRIMARY KEY, v INT NOT NULL); \
         CREATE TABLE {db}.a (id INT PRIMARY KEY, v INT NOT NULL); \
         CREATE TABLE {db}.b (id INT PRIMARY KEY, v INT NOT NULL); \
         INSERT INTO {db}.a VALUES {rows}; INSERT INTO {db}.b VALUES {rows}"
    ));
    if triggers {
        install_triggers(cluster, &db).await;
    }
    db
}

#[tokio::test]
async fn open_transactions_and_opposite_order_pairs_never_wait_on_counter_rows() {
    let cluster = shared_cluster();
    let tracked = make_db(cluster, "fct_trig", true).await;
    let plain = make_db(cluster, "fct_plain", false).await;
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let through = Target {
        url: s.app_url(&tracked),
        what: "through sluice, triggers",
    };
    let direct_plain = Target {
        url: cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &plain),
        what: "direct, no triggers",
    };
    let direct_tracked = Target {
        url: cluster.master.url(SLUICE_USER, SLUICE_PASSWORD, &tracked),
        what: "direct, triggers",
    };

    let mut report = String::new();
    let mut results = Vec::new();
    for (base, target) in [(0, &direct_plain), (0, &through), (100_000, &direct_tracked)] {
        let open = open_transactions(target, base).await;
        report.push_str(&format!("{OPEN} open transactions, {}: {open:?}\n", target.what));
        results.push((target.what, "open", open));
    }
    // Bypassing writers wait for the lock wait timeout: one round only.
    for (target, pairs) in [
        (&direct_plain, PAIRS),
        (&through, PAIRS),
        (&direct_tracked, PAIRS_AT_ONCE),
    ] {
        let seen = opposite_pairs(target, pairs).await;
        report.push_str(&format!(
            "{pairs} opposite-order pairs, {}: {seen:?}\n",
            target.what
        ));
        results.push((target.what, "pairs", seen));
    }
    eprintln!("{report}");
    for (what, run, seen) in &results {
        if *what != "direct, triggers" {
            assert!(seen.clean(), "{run}, {what}: waits or errors\n{report}");
        }
    }
    // Every write through sluice was counted, each transaction in its own rows.
    let rows = cluster.master.sql(&format!(
        "SELECT COUNT(*), SUM(n), MAX(slot) FROM sluice.counters WHERE tbl = '{tracked}.t' AND slot >= 16"
    ));
    eprintln!("rows of sluice's connections (count, sum, highest slot): {rows}");
    let mut cols = rows.split('\t');
    let (count, sum): (u64, u64) = (
        cols.next().and_then(|v| v.parse().ok()).unwrap_or(0),
        cols.next().and_then(|v| v.parse().ok()).unwrap_or(0),
    );
    assert_eq!(sum, OPEN as u64, "{rows}");
    assert!(
        count >= OPEN as u64,
        "one row per open transaction at least: {rows}"
    );
}

#[tokio::test]
async fn a_client_cannot_clear_or_break_its_connection_s_slot() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "fct_slot").await;
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let mut c = sluice_conn(&s, &db).await;
    // The master connection's slot, read inside a transaction (which the master serves).
    async fn slot(c: &mut mysql_async::Conn) -> Option<u64> {
        c.query_drop("BEGIN").await.expect("begin");
        let v: Option<Option<u64>> = c.query_first("SELECT @sluice_slot").await.expect("slot");
        c.query_drop("ROLLBACK").await.expect("rollback");
        v.flatten()
    }
    assert!(
        slot(&mut c).await.is_some(),
        "a connection of sluice holds a slot"
    );
    // Nothing a client can release: its connection holds no named lock of
    // sluice's (RELEASE_ALL_LOCKS() answers 0, as on a connection of its own),
    // and the slot is still there after it.
    c.query_drop("BEGIN").await.expect("begin");
    let released: Option<u64> = c
        .query_first("SELECT RELEASE_ALL_LOCKS()")
        .await
        .expect("release");
    c.query_drop("ROLLBACK").await.expect("rollback");
    assert_eq!(
        released,
        Some(0),
        "a client's RELEASE_ALL_LOCKS() finds no lock of sluice's"
    );
    assert!(slot(&mut c).await.is_some(), "a slot after RELEASE_ALL_LOCKS()");
    // Any value a client gives the variable: its writes still succeed.
    for value in ["'abc'", "-5", "1e300", "NULL", "x'ff'", "99999999999999999999999"] {
        c.query_drop(format!("SET @sluice_slot = {value}"))
            .await
            .expect("set");
        c.query_drop(format!("INSERT INTO t VALUES ({}, 0)", value.len()))
            .await
            .unwrap_or_else(|e| panic!("a write after SET @sluice_slot = {value}: {e}"));
        c.query_drop("DELETE FROM t").await.expect("delete");
    }
    // RESET CONNECTION (relayed to the server, which clears user variables)
    // and COM_CHANGE_USER: sluice gives a slot again.
    c.reset().await.expect("reset connection");
    assert!(slot(&mut c).await.is_some(), "a slot after RESET CONNECTION");
    c.query_drop("SET @sluice_slot = NULL").await.expect("set");
    c.change_user(
        mysql_async::ChangeUserOpts::default()
            .with_user(Some(APP_USER.to_owned()))
            .with_pass(Some(APP_PASSWORD.to_owned()))
            .with_db_name(Some(db.clone())),
    )
    .await
    .expect("change user");
    assert!(slot(&mut c).await.is_some(), "a slot after COM_CHANGE_USER");
}

/// Two sluice processes in front of one master: their connections' numbers
/// never meet (each process leases blocks of numbers through a connection of
/// its own, `backend::slot`).
#[tokio::test]
async fn two_processes_never_give_one_slot_twice() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "fct_two").await;
    async fn slots(s: &Sluice, db: &str, n: usize) -> (Vec<mysql_async::Conn>, Vec<u64>) {
        let mut conns = Vec::new();
        let mut numbers = Vec::new();
        for _ in 0..n {
            let mut c = sluice_conn(s, db).await;
            // Inside a transaction: the session keeps its master connection.
            c.query_drop("BEGIN").await.expect("begin");
            let v: Option<Option<u64>> = c.query_first("SELECT @sluice_slot").await.expect("slot");
            numbers.push(v.flatten().expect("a connection of sluice holds a slot"));
            conns.push(c);
        }
        (conns, numbers)
    }
    let a = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let b = Sluice::start_for(cluster, &freshness_yaml("causal"));
    let (_held_a, mut numbers) = slots(&a, &db, 5).await;
    let (_held_b, numbers_b) = slots(&b, &db, 5).await;
    numbers.extend(numbers_b);
    let distinct: std::collections::BTreeSet<u64> = numbers.iter().copied().collect();
    assert_eq!(distinct.len(), numbers.len(), "numbers given twice: {numbers:?}");
}

/// The lease connection of a process killed on the server (an operator's KILL,
/// a network cut): the next connection of that process still gets a number, of
/// a block its new lease connection holds.
#[tokio::test]
async fn a_killed_lease_connection_is_replaced() {
    let cluster = shared_cluster();
    let db = tracked_db(cluster, "fct_lease").await;
    let s = Sluice::start_for(cluster, &freshness_yaml("causal"));
    // A slot, and the thread holding its block's lock (the lease connection).
    async fn slot_and_holder(c: &mut mysql_async::Conn) -> (u64, u64) {
        c.query_drop("BEGIN").await.expect("begin");
        let row: Option<(Option<u64>, Option<u64>)> = c
            .query_first("SELECT @sluice_slot, IS_USED_LOCK(CONCAT('sluice_slots_', @sluice_slot DIV 32))")
            .await
            .expect("slot");
        let (slot, holder) = row.expect("a row");
        (
            slot.expect("a connection of sluice holds a slot"),
            holder.expect("the slot's block is leased"),
        )
    }
    let mut first = sluice_conn(&s, &db).await;
    let (_, lease) = slot_and_holder(&mut first).await;
    cluster.master.sql(&format!("KILL CONNECTION {lease}"));
    // `first` keeps its backend connection (open transaction): the second
    // session needs a new one, which claims after the lease was killed.
    let mut second = sluice_conn(&s, &db).await;
    let (_, holder) = slot_and_holder(&mut second).await;
    assert_ne!(
        holder, lease,
        "the number's block is held by a new lease connection"
    );
    second
        .query_drop("INSERT INTO t VALUES (1, 1)")
        .await
        .expect("a write");
    second.query_drop("COMMIT").await.expect("commit");
    first.query_drop("ROLLBACK").await.expect("rollback");
}
