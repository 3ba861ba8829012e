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

/// A new database with the sharded table `post_reply` (through sluice, which starts
/// for it) and the reference table `ref` (directly on the master), both with `id`, `tid`
/// and `columns` and the same `rows` of (id, tid, `names`), the replicas caught up
/// (sluice reads from them, freshness off). Returns the cluster, the database, sluice
/// (kept running while held) and the two connections.
async fn sharded_and_reference(
    prefix: &str,
    columns: &str,
    names: &str,
    rows: &str,
) -> (&'static Cluster, String, Sluice, Wire, Wire) {
    let cluster = shared_cluster();
    let db = unique_name(prefix);
    let s = Sluice::start_for(cluster, &sharding_yaml(&db));
    cluster.master.sql(&format!("CREATE DATABASE {db}"));
    let mut sl = wire_to(&format!("127.0.0.1:{}", s.port), APP_USER, APP_PASSWORD, &db).await;
    let mut direct = wire_to(&cluster.master.addr(), SLUICE_USER, SLUICE_PASSWORD, &db).await;
    for (w, t) in [(&mut sl, "post_reply"), (&mut direct, "ref")] {
        must(
            w,
            &format!(
                "CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, tid INT NOT NULL, {columns}, KEY (tid)) \
                 DEFAULT CHARSET=utf8mb4"
            ),
        )
        .await;
        must(w, &format!("INSERT INTO {t} (id, tid, {names}) VALUES {rows}")).await;
    }
    cluster.wait_replicas_caught_up_within(Duration::from_secs(60));
    (cluster, db, s, sl, direct)
}

/// A prepared statement without placeholders reaching one sub-table runs there as a
/// prepared statement (before: as text), so its column definitions are the server's
/// binary-protocol ones: a TEXT column grouped through a temporary table carries
/// GROUP_FLAG (0x8000) only in the binary protocol (seed 7 of `scripts/shard-gen`).
#[tokio::test]
async fn a_prepared_statement_without_placeholders_is_described_as_prepared() {
    let rows = (1..=48)
        .map(|i| format!("({i}, {}, 'v{}')", i % 13, i % 5))
        .collect::<Vec<_>>()
        .join(", ");
    let (cluster, db, _s, mut sl, mut direct) = sharded_and_reference(
        "shard_binp",
        "c2 TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL",
        "c2",
        &rows,
    )
    .await;
    for q in [
        "SELECT c2 COLLATE utf8mb4_unicode_ci FROM {t} WHERE tid = 6 GROUP BY c2 COLLATE utf8mb4_unicode_ci",
        "SELECT c2, COUNT(*) FROM {t} WHERE tid = 1 GROUP BY c2",
    ] {
        let flags = |c: Vec<wire::Column>| {
            c.iter()
                .map(|c| format!("{:#x} {}", c.flags, c.name))
                .collect::<Vec<_>>()
        };
        let got = answer(&mut sl, &q.replace("{t}", "post_reply"), true).await.0;
        let want = answer(&mut direct, &q.replace("{t}", "ref"), true).await.0;
        assert_eq!(flags(got), flags(want), "{q}");
    }
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}

/// Column definitions and sorted rows of `sql` in one protocol (text, or a prepared
/// statement executed without parameters).
async fn answer(w: &mut Wire, sql: &str, binary: bool) -> (Vec<wire::Column>, Vec<Vec<String>>) {
    let r = if binary {
        let p = match w.prepare(sql).await {
            WReply::Prepared(p) => p,
            other => panic!("{sql}: {other:?}"),
        };
        let r = w.execute(p.stmt_id, &[]).await;
        w.close_stmt(p.stmt_id).await;
        r
    } else {
        w.query(sql).await
    };
    match r {
        WReply::Parts(parts) => match parts.as_slice() {
            [Part::Rows(rs)] => {
                let mut rows = rs.rows.clone();
                rows.sort();
                (rs.columns.clone(), rows)
            }
            other => panic!("{sql}: {other:?}"),
        },
        other => panic!("{sql}: {other:?}"),
    }
}

/// A merged grouping or DISTINCT of an `x COLLATE …` column is described by the server
/// otherwise in each protocol: GROUP_FLAG (0x8000) in the binary protocol's EXECUTE
/// (0x8080 for `c0 COLLATE utf8mb4_bin`), none in the text protocol's (0x80), and the
/// same statement with ORDER BY … LIMIT carries it in one protocol only. sluice learned
/// the server's definitions of the statement once per text and session and sent them in
/// both protocols, so the second protocol got the first's flags (seed 42 of
/// `scripts/shard-gen`: binary 0x80 where the server sends 0x8080). Each statement runs
/// in both orders (text first, binary first; a second spelling so each order learns
/// anew), over every sub-table, and must equal the server's answer on one table.
#[tokio::test]
async fn collate_columns_of_merged_groups_are_described_per_protocol() {
    // Values without case or accent ties, so every group's spelling is the server's.
    let rows = (1..=48)
        .map(|i| {
            format!(
                "({i}, {}, 'u{}', '{}', 'w{}')",
                i % 13,
                i % 5,
                "x".repeat(i % 4 + 1),
                i % 7
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let (cluster, db, _s, mut sl, mut direct) = sharded_and_reference(
        "shard_binc",
        "c0 VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL, \
         c1 VARCHAR(40) CHARACTER SET latin1 COLLATE latin1_swedish_ci NULL, \
         c3 TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL",
        "c0, c1, c3",
        &rows,
    )
    .await;
    let statements = [
        "SELECT c0 COLLATE utf8mb4_bin FROM {t} GROUP BY c0 COLLATE utf8mb4_bin",
        "SELECT c3 COLLATE utf8mb4_general_ci, COUNT(*) FROM {t} GROUP BY c3 COLLATE utf8mb4_general_ci \
         ORDER BY c3 COLLATE utf8mb4_general_ci",
        "SELECT DISTINCT c0 COLLATE utf8mb4_bin FROM {t}",
        // Ordered by aliases: the expressions written again are refused (the server
        // drops DISTINCT rows then, see docs/sharding.md).
        "SELECT DISTINCT CHAR_LENGTH(c1) AS n, c1 COLLATE latin1_swedish_ci AS c FROM {t} \
         ORDER BY n DESC, c ASC LIMIT 2",
    ];
    let mut wrong = Vec::new();
    for settings in ["SET NAMES utf8mb4", "SET NAMES utf8mb4 COLLATE utf8mb4_bin"] {
        must(&mut sl, settings).await;
        must(&mut direct, settings).await;
        for q in statements {
            for (from, order) in [(" FROM ", [false, true]), (" from ", [true, false])] {
                let q = q.replace(" FROM ", from);
                for binary in order {
                    let render = |(c, r): (Vec<wire::Column>, _)| {
                        (c.iter().map(|c| c.render()).collect::<Vec<_>>(), r)
                    };
                    let got = render(answer(&mut sl, &q.replace("{t}", "post_reply"), binary).await);
                    let want = render(answer(&mut direct, &q.replace("{t}", "ref"), binary).await);
                    if got != want {
                        let proto = if binary { "binary" } else { "text" };
                        wrong.push(format!(
                            "{settings}; {q} ({proto}):{} rows {:?} / {:?}",
                            wire::def_diff(&got.0, &want.0),
                            got.1,
                            want.1
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{} wrong:\n{}", wrong.len(), wrong.join("\n"));
    cluster.master.sql(&format!("DROP DATABASE {db}"));
}
