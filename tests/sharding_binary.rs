//! Sharded tables in the binary protocol: what the fixed corpus and the generator do not
//! reach. The corpus's queries as prepared statements with typed parameters, the typed
//! probes and the typed INSERTs are cases of the generator's oracle
//! (`tests/sharding_gen.rs`, `sharding_gen/fixed.rs`, `sharding_gen/params.rs`).

mod common;

use std::time::Duration;

use common::cluster::*;
use common::wire::{self, Part, Reply as WReply, Wire};

fn sharding_yaml(db: &str) -> String {
    format!(
        "log:\n  level: warn\nfreshness:\n  mode: \"off\"\nsharding:\n  tables: [\"{db}.post_reply.tid.4\"]\n"
    )
}

async fn wire_to(addr: &str, user: &str, password: &str, db: &str) -> Wire {
    wire::driver_login(addr, user, password, db, Duration::from_secs(120)).await
}

async fn must(w: &mut Wire, sql: &str) {
    match w.query(sql).await {
        WReply::Parts(p) if p.iter().all(|x| !matches!(x, Part::Err(_))) => {}
        other => panic!("{sql}: {other:?}"),
    }
}

/// The columns of a prepared statement's EXECUTE (no parameters).
async fn executed_columns(w: &mut Wire, sql: &str) -> Vec<String> {
    let p = match w.prepare(sql).await {
        WReply::Prepared(p) => p,
        other => panic!("{sql}: {other:?}"),
    };
    let r = w.execute(p.stmt_id, &[]).await;
    w.close_stmt(p.stmt_id).await;
    match r {
        WReply::Parts(parts) => parts
            .iter()
            .filter_map(|x| match x {
                Part::Rows(rs) => Some(rs.columns.iter().map(|c| format!("{:#x} {}", c.flags, c.name))),
                _ => None,
            })
            .flatten()
            .collect(),
        other => panic!("{sql}: {other:?}"),
    }
}

/// A prepared statement without placeholders reaching one sub-table runs there as a
/// prepared statement (before: as text), so its column definitions are the server's
/// binary-protocol ones: a TEXT column grouped through a temporary table carries
/// GROUP_FLAG (0x8000) only in the binary protocol (seed 7 of `scripts/shard-gen`).
#[tokio::test]
async fn a_prepared_statement_without_placeholders_is_described_as_prepared() {
    let cluster = shared_cluster();
    let db = unique_name("shard_binp");
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut sl = wire_to(&format!("127.0.0.1:{}", s.port), APP_USER, APP_PASSWORD, &db).await;
    let mut direct = wire_to(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db).await;
    let create = |t: &str| {
        format!(
            "CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, c2 TEXT CHARACTER SET utf8mb4 \
             COLLATE utf8mb4_bin NULL, KEY (tid)) DEFAULT CHARSET=utf8mb4"
        )
    };
    let rows = (1..=48)
        .map(|i| format!("({i}, {}, 'v{}')", i % 13, i % 5))
        .collect::<Vec<_>>()
        .join(", ");
    for (w, t) in [(&mut sl, "post_reply"), (&mut direct, "ref")] {
        must(w, &create(t)).await;
        must(w, &format!("INSERT INTO {t} (id, tid, c2) VALUES {rows}")).await;
    }
    // sluice reads from the replicas (freshness off): let them catch up.
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    for q in [
        "SELECT c2 COLLATE utf8mb4_unicode_ci FROM {t} WHERE tid = 6 GROUP BY c2 COLLATE utf8mb4_unicode_ci",
        "SELECT c2, COUNT(*) FROM {t} WHERE tid = 1 GROUP BY c2",
    ] {
        let got = executed_columns(&mut sl, &q.replace("{t}", "post_reply")).await;
        let want = executed_columns(&mut direct, &q.replace("{t}", "ref")).await;
        assert_eq!(got, want, "{q}");
    }
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
