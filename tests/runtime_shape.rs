//! `runtime:`: the worker and session threads of the `sluice serve` process are the
//! ones the configuration asks for (counted in /proc), and a sluice on one worker, or
//! with sessions per core, answers as the server does (a differential check over text and prepared statements, with
//! several sessions at once, so that one worker really serves them all).

mod common;

use common::cluster::{shared_cluster, Sluice, APP_PASSWORD, APP_USER, TEST_DB};
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder, Row, Value};

/// Threads of process `pid` that are tokio's workers: tokio names them
/// `tokio-rt-worker` (`tokio-runtime-worker` in older versions, cut to 15 bytes by
/// the kernel). Its blocking threads share the name, but a sluice that
/// resolves no host name and plans no large statement has none.
fn worker_threads(pid: u32) -> usize {
    threads_named(pid, |name| matches!(name, "tokio-rt-worker" | "tokio-runtime-w"))
}

/// Threads of process `pid` whose name (`/proc/PID/task/T/comm`) `is` accepts.
fn threads_named(pid: u32, is: impl Fn(&str) -> bool) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("read /proc/PID/task");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| is(name.trim_end()))
        .count()
}

async fn connect(url: &str) -> Conn {
    let opts = OptsBuilder::from_opts(Opts::from_url(url).expect("url")).prefer_socket(false);
    Conn::new(opts)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

fn values(rows: Vec<Row>) -> Vec<Vec<Value>> {
    rows.into_iter().map(Row::unwrap).collect()
}

type Rows = Vec<Vec<Value>>;

/// The prepared form of [`read_range`]'s query on `table`.
fn range_sql(table: &str) -> String {
    format!("SELECT id, v FROM {table} WHERE id BETWEEN ? AND ? ORDER BY id")
}

/// Rows `lo..=lo+5` of `table`, as a text query and through `stmt` (prepared
/// from [`range_sql`]).
async fn read_range(c: &mut Conn, stmt: &mysql_async::Statement, table: &str, lo: u32) -> (Rows, Rows) {
    let hi = lo + 5;
    let sql = format!("SELECT id, v FROM {table} WHERE id BETWEEN {lo} AND {hi} ORDER BY id");
    let text: Vec<Row> = c
        .query(sql)
        .await
        .unwrap_or_else(|e| panic!("text read of {lo}: {e}"));
    let bin: Vec<Row> = c
        .exec(stmt, (lo, hi))
        .await
        .unwrap_or_else(|e| panic!("execute of {lo}: {e}"));
    (values(text), values(bin))
}

#[test]
fn worker_threads_follow_the_configuration() {
    let cluster = shared_cluster();
    // Tokio starts its workers when the runtime is built, before the port is bound.
    for n in [1usize, 3] {
        let s = Sluice::start_for(
            cluster,
            &format!("runtime: {{ per_core: false, worker_threads: {n} }}\n"),
        );
        assert_eq!(worker_threads(s.pid()), n, "worker_threads: {n}\n{}", s.log());
        assert_eq!(session_threads(s.pid()), 0, "{}", s.log());
    }
    // Without per_core, by default one per CPU this process may run on (what the
    // test itself may use).
    let s = Sluice::start_for(cluster, "runtime: { per_core: false }\n");
    let cpus = std::thread::available_parallelism()
        .expect("available_parallelism")
        .get();
    assert_eq!(worker_threads(s.pid()), cpus, "default worker count\n{}", s.log());
}

/// Threads of process `pid` named `sluice-core-K` (`runtime.per_core`).
fn session_threads(pid: u32) -> usize {
    threads_named(pid, |name| name.starts_with("sluice-core-"))
}

/// `per_core` (the default): `worker_threads` session threads (one per CPU
/// unless set) and one tokio worker.
#[test]
fn per_core_starts_one_session_thread_per_worker_and_one_worker() {
    let cluster = shared_cluster();
    let s = Sluice::start_for(cluster, "runtime: { per_core: true, worker_threads: 3 }\n");
    assert_eq!(session_threads(s.pid()), 3, "{}", s.log());
    assert_eq!(worker_threads(s.pid()), 1, "{}", s.log());
    let s = Sluice::start_for(cluster, "runtime: { worker_threads: 2 }\n");
    assert_eq!(session_threads(s.pid()), 2, "{}", s.log());
    assert_eq!(worker_threads(s.pid()), 1, "{}", s.log());
    let cpus = std::thread::available_parallelism()
        .expect("available_parallelism")
        .get();
    let s = Sluice::start_for(cluster, "");
    assert_eq!(session_threads(s.pid()), cpus, "{}", s.log());
    assert_eq!(worker_threads(s.pid()), 1, "{}", s.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_serves_sessions_as_the_server_does() {
    shape_serves_as_the_server_does(
        "runtime: { per_core: false, worker_threads: 1 }\n",
        worker_threads,
        1,
        "runtime_shape",
    )
    .await;
}

/// Sessions spread over two session threads (and several on one thread)
/// answer as the server does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_sessions_answer_as_the_server_does() {
    let config = "runtime: { per_core: true, worker_threads: 2 }\n";
    shape_serves_as_the_server_does(config, session_threads, 2, "runtime_shape_per_core").await;
}

/// A sluice started with `config` has `want` threads as `count` counts them,
/// and serves [`sessions_match_the_server`] on table `name`.
async fn shape_serves_as_the_server_does(config: &str, count: fn(u32) -> usize, want: usize, name: &str) {
    let s = Sluice::start_for(shared_cluster(), config);
    assert_eq!(count(s.pid()), want, "{config}{}", s.log());
    sessions_match_the_server(&s, name).await;
}

/// 8 sessions at once through `s`, text and prepared reads of table `name`,
/// compared with the same reads made directly on the master.
async fn sessions_match_the_server(s: &Sluice, name: &str) {
    let cluster = shared_cluster();
    let table = format!("{TEST_DB}.{name}");
    let mut direct = connect(&cluster.master.sluice_url(TEST_DB)).await;
    direct
        .query_drop(format!(
            "CREATE OR REPLACE TABLE {table} (id INT PRIMARY KEY, v VARCHAR(20)); \
             INSERT INTO {table} SELECT seq, CONCAT('v', seq) FROM seq_1_to_200"
        ))
        .await
        .expect("create table");
    let url = s.url(APP_USER, APP_PASSWORD, TEST_DB);
    let sessions = (0..8u32).map(|i| {
        let (url, table) = (url.clone(), table.clone());
        tokio::spawn(async move {
            let mut c = connect(&url).await;
            let stmt = c.prep(range_sql(&table)).await.expect("prepare");
            let mut seen = Vec::new();
            for k in 0..20 {
                let lo = (i * 20 + k) % 190 + 1;
                seen.push((lo, read_range(&mut c, &stmt, &table, lo).await));
            }
            seen
        })
    });
    let mut results = Vec::new();
    for t in sessions.collect::<Vec<_>>() {
        results.push(t.await.expect("session task"));
    }
    let stmt = direct.prep(range_sql(&table)).await.expect("prepare directly");
    for (lo, through_sluice) in results.into_iter().flatten() {
        let want = read_range(&mut direct, &stmt, &table, lo).await;
        assert_eq!(through_sluice, want, "rows {lo}..={} (text, binary)", lo + 5);
    }
    direct
        .query_drop(format!("DROP TABLE {table}"))
        .await
        .expect("drop");
}

/// `sluice_backend_pool_moves_total`, summed over the backends of `s`.
fn moves(s: &Sluice) -> f64 {
    let (_, body) = common::http::http_get(s.admin_port, "/metrics").expect("scrape /metrics");
    body.lines()
        .filter(|l| l.starts_with("sluice_backend_pool_moves_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Two sessions that take turns: each statement of one finds the connection
/// the other parked after its last statement and takes it (no other is
/// idle). Under `per_core` the two sessions live on different threads (the
/// second is placed beside the first's live one), so each turn hands a
/// connection to another thread. Every answer is compared with the master's.
async fn take_turns(s: &Sluice) {
    let cluster = shared_cluster();
    let mut direct = connect(&cluster.master.sluice_url(TEST_DB)).await;
    let url = s.url(APP_USER, APP_PASSWORD, TEST_DB);
    let mut a = connect(&url).await;
    let mut b = connect(&url).await;
    let sql = |k: u32| format!("SELECT {k} + 1, CONCAT('turn ', {k}), DATABASE()");
    for k in 0..6u32 {
        let c = if k % 2 == 0 { &mut a } else { &mut b };
        let got: Vec<Row> = c
            .query(sql(k))
            .await
            .unwrap_or_else(|e| panic!("turn {k}: {e}\n{}", s.log()));
        let want: Vec<Row> = direct.query(sql(k)).await.expect("direct");
        assert_eq!(values(got), values(want), "turn {k}");
    }
}

/// Under `per_core`, a pooled connection borrowed by a session on another
/// thread is moved to that thread's I/O driver (so that its answers wake the
/// borrower's thread, not the one that made it), and keeps serving; on
/// tokio's shared pool nothing moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_core_moves_a_borrowed_connection_to_the_borrowers_thread() {
    let cluster = shared_cluster();
    let s = Sluice::start_for(cluster, "runtime: { per_core: true, worker_threads: 2 }\n");
    take_turns(&s).await;
    assert!(
        moves(&s) >= 1.0,
        "no connection moved between the two sessions' threads\n{}",
        s.log()
    );
    let s = Sluice::start_for(cluster, "runtime: { per_core: false }\n");
    take_turns(&s).await;
    assert_eq!(moves(&s), 0.0, "a connection moved on tokio's shared pool");
}
