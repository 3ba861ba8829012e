#!/usr/bin/env bash
# Where the trigger write overhead goes (issue 11, "Cheaper counting"): server CPU per
# write event with several counter designs, on a master + replica (scripts/cluster).
#
# Throughput on a shared 2-core machine swings by +-30 % between runs; the CPU time the
# two mariadbd processes spend per sysbench event (utime+stime from /proc, the replica
# measured after it caught up with MASTER_GTID_WAIT) is much steadier, and it is what
# the triggers add. Variants (triggers on sbtest.sbtest1, 16 slots, 8 threads):
#
#   none     no triggers
#   noop     triggers whose body is `SET @sluice_x = 1`: the cost of firing a trigger
#   current  sluice's triggers before issue 11: UPDATE sluice.counters (tbl VARCHAR 'db.table', slot, n)
#   int      the same UPDATE on (id INT UNSIGNED, slot SMALLINT, n): an integer table id
#   int1     one INT primary key (id * 1024 + slot): the narrowest row and key
#   odku     INSERT INTO counters (tbl, slot, n) VALUES (...) ON DUPLICATE KEY UPDATE n = n + 1:
#            no WHERE clause to resolve and no range optimizer (the UPDATE's main costs)
#   odku1    the same on the one-INT-key table of int1
#   tok      issue 11's dedupe idea, evaluated and not adopted: `current` plus a
#            per-transaction token (`tok`, the session's @@last_gtid, never trusted when
#            empty, under binlog_format=STATEMENT or in a replica's applier) so that a
#            transaction bumps each row once
#   odkutok  the same token on the upsert of `odku`
#   (`odku` is the body sluice installs since issue 11; `current` the one before.)
#
# Each round also runs `bulk_update`: one UPDATE of BULK_ROWS rows in one statement (the
# trigger fires once per row, the statement's fixed costs are paid once), reported as
# server CPU per row: the per-row part of a trigger's cost, which sysbench's one-row
# statements mix with per-statement costs (opening and locking the counter table, a
# table-map event in the binlog, the commit touching one more table).
#
# sluice itself is not involved (no build needed). Usage: benches/trigger_cost.sh
# Environment: EVENTS per run [10000], ROUNDS [3], THREADS [8], TABLE_SIZE [100000],
# BULK_ROWS [50000],
# VARIANTS ["none noop current int int1 odku odku1 tok odkutok"], KEEP=1 keeps the work directory.
set -euo pipefail

BENCH=trigger_cost
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

EVENTS=${EVENTS:-10000}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-8}
TABLE_SIZE=${TABLE_SIZE:-100000}
BULK_ROWS=${BULK_ROWS:-50000}
VARIANTS=${VARIANTS:-"none noop current int int1 odku odku1 tok odkutok"}
CLIENT=$(need_bin mariadb mariadb-client)
SYSBENCH=$(need_bin sysbench sysbench)
need_bin mariadbd mariadb-server >/dev/null

bench_workdir
cluster_dir=$work/cluster
stop_cluster() { "$repo/scripts/cluster" stop "$cluster_dir" >"$work/cluster-stop.log" 2>&1 || true; }
CLEANUP_HOOKS+=(stop_cluster)
read -r MPORT RPORT <<<"$(free_ports 2)"
log "cluster on $MPORT (master), $RPORT (replica); load $(loadavg)"
MASTER_PORT=$MPORT REPLICA_PORTS=$RPORT CLUSTER_DB=sbtest "$repo/scripts/cluster" start "$cluster_dir" \
  >"$work/cluster.log" 2>&1 || { cat "$work/cluster.log" >&2; die "cluster did not start"; }
M=("$CLIENT" -h127.0.0.1 -P"$MPORT" -usluice -psluice sbtest)
R=("$CLIENT" -h127.0.0.1 -P"$RPORT" -usluice -psluice)
SB=("$SYSBENCH" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$MPORT" --mysql-user=sluice
  --mysql-password=sluice --mysql-db=sbtest --tables=1 --table-size="$TABLE_SIZE" --threads="$THREADS"
  --db-ps-mode=disable)
"${SB[@]}" oltp_insert prepare >"$work/prepare.log" 2>&1 || { cat "$work/prepare.log" >&2; die "sysbench prepare failed"; }
"${M[@]}" -e "
  CREATE DATABASE IF NOT EXISTS sluice;
  CREATE TABLE sluice.counters (tbl VARCHAR(192) NOT NULL, slot SMALLINT UNSIGNED NOT NULL,
    n BIGINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (tbl, slot)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
  CREATE TABLE sluice.c_int (id INT UNSIGNED NOT NULL, slot SMALLINT UNSIGNED NOT NULL,
    n BIGINT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (id, slot));
  CREATE TABLE sluice.c_int1 (k INT UNSIGNED NOT NULL PRIMARY KEY, n BIGINT UNSIGNED NOT NULL DEFAULT 0);
  CREATE TABLE sluice.c_tok (tbl VARCHAR(192) NOT NULL, slot SMALLINT UNSIGNED NOT NULL,
    n BIGINT UNSIGNED NOT NULL DEFAULT 0, tok VARBINARY(64) NOT NULL DEFAULT '', PRIMARY KEY (tbl, slot))
    DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
  INSERT INTO sluice.counters (tbl, slot) SELECT 'sbtest.sbtest1', seq FROM seq_0_to_15;
  INSERT INTO sluice.c_int (id, slot) SELECT 7, seq FROM seq_0_to_15;
  INSERT INTO sluice.c_int1 (k) SELECT 7 * 1024 + seq FROM seq_0_to_15;
  INSERT INTO sluice.c_tok (tbl, slot) SELECT 'sbtest.sbtest1', seq FROM seq_0_to_15;"

body() { # variant: the trigger body
  case $1 in
    noop) echo "SET @sluice_x = 1" ;;
    current) echo "UPDATE \`sluice\`.\`counters\` SET n = n + 1 WHERE tbl = 'sbtest.sbtest1' AND slot = CONNECTION_ID() % 16" ;;
    int) echo "UPDATE \`sluice\`.\`c_int\` SET n = n + 1 WHERE id = 7 AND slot = CONNECTION_ID() % 16" ;;
    odku) echo "INSERT INTO \`sluice\`.\`counters\` (tbl, slot, n) VALUES ('sbtest.sbtest1', CONNECTION_ID() % 16, 1) ON DUPLICATE KEY UPDATE n = n + 1" ;;
    odku1) echo "INSERT INTO \`sluice\`.\`c_int1\` (k, n) VALUES (7 * 1024 + CONNECTION_ID() % 16, 1) ON DUPLICATE KEY UPDATE n = n + 1" ;;
    odkutok) echo "INSERT INTO \`sluice\`.\`c_tok\` (tbl, slot, n, tok) VALUES ('sbtest.sbtest1', CONNECTION_ID() % 16, 1, @@last_gtid) ON DUPLICATE KEY UPDATE n = IF(tok = @@last_gtid AND @@last_gtid <> '' AND @@session.binlog_format <> 'STATEMENT' AND @@session.server_id = @@global.server_id, n, n + 1), tok = @@last_gtid" ;;
    tok) echo "UPDATE \`sluice\`.\`c_tok\` SET n = n + 1, tok = @@last_gtid WHERE tbl = 'sbtest.sbtest1' AND slot = CONNECTION_ID() % 16 AND (tok <> @@last_gtid OR @@last_gtid = '' OR @@session.binlog_format = 'STATEMENT' OR @@session.server_id <> @@global.server_id)" ;;
    int1) echo "UPDATE \`sluice\`.\`c_int1\` SET n = n + 1 WHERE k = 7 * 1024 + CONNECTION_ID() % 16" ;;
    *) die "unknown variant $1" ;;
  esac
}
set_variant() {
  local e
  for e in ai au ad; do "${M[@]}" -e "DROP TRIGGER IF EXISTS sluice_${e}_sbtest1"; done
  [ "$1" = none ] && return 0
  for e in ai:INSERT au:UPDATE ad:DELETE; do
    "${M[@]}" -e "CREATE TRIGGER sluice_${e%%:*}_sbtest1 AFTER ${e#*:} ON sbtest1 FOR EACH ROW $(body "$1")"
  done
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
caught_up() {
  local pos
  pos=$("${M[@]}" -N -e "SELECT @@gtid_binlog_pos")
  "${R[@]}" -N -e "SELECT MASTER_GTID_WAIT('$pos', 120)" | grep -qx 0 || die "replica did not catch up"
}
MPID=$(cat "$cluster_dir/master/mysqld.pid") RPID=$(cat "$cluster_dir/replica1/mysqld.pid")
HZ=$(getconf CLK_TCK)
results=$work/results.tsv
read -r -a VLIST <<<"$VARIANTS"
for r in $(seq "$ROUNDS"); do
  while read -r v; do
    set_variant "$v"
    for t in oltp_write_only oltp_insert; do
      caught_up
      m0=$(ticks "$MPID") r0=$(ticks "$RPID")
      "${SB[@]}" "$t" run --time=0 --events="$EVENTS" >"$work/$t-$v-$r.txt" 2>&1 ||
        { tail -n 20 "$work/$t-$v-$r.txt" >&2; die "sysbench $t failed"; }
      caught_up
      m1=$(ticks "$MPID") r1=$(ticks "$RPID")
      qps=$(sed -n 's/.*queries: *[0-9]* *(\([0-9.]*\) per sec.*/\1/p' "$work/$t-$v-$r.txt")
      # microseconds of CPU per event
      printf '%s\t%s\t%s\t%d\t%d\t%s\n' "$r" "$v" "$t" $(((m1 - m0) * 1000000 / HZ / EVENTS)) \
        $(((r1 - r0) * 1000000 / HZ / EVENTS)) "$qps" | tee -a "$results" >&2
    done
    caught_up
    m0=$(ticks "$MPID") r0=$(ticks "$RPID")
    # The first statement commits a write, so that the session has a GTID (@@last_gtid)
    # as a pooled connection would: the token variants then deduplicate.
    "${M[@]}" -e "UPDATE sbtest1 SET k = k + 1 WHERE id = 1; UPDATE sbtest1 SET k = k + 1 WHERE id <= $BULK_ROWS"
    caught_up
    m1=$(ticks "$MPID") r1=$(ticks "$RPID")
    printf '%s\t%s\t%s\t%d\t%d\t%s\n' "$r" "$v" bulk_update $(((m1 - m0) * 1000000 / HZ / BULK_ROWS)) \
      $(((r1 - r0) * 1000000 / HZ / BULK_ROWS)) 0 | tee -a "$results" >&2
  done < <(rotated "$((r - 1))" "${VLIST[@]}")
done
log "load at the end $(loadavg)"
python3 - "$results" <<'PYEOF'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r, v, t, m, rep, q in rows:
    by[(t, v)].append((int(m), int(rep), float(q or 0)))
print("median over rounds: CPU us per event (bulk_update: per row) (master, replica, sum vs none), QPS (vs none)")
for t in sorted({k[0] for k in by}):
    base = by.get((t, "none"))
    bcpu = statistics.median(m + rep for m, rep, _ in base) if base else None
    bq = statistics.median(q for *_, q in base) if base else None
    for v in [v for v in sys.argv[2:] or []] or sorted({k[1] for k in by if k[0] == t}, key=lambda x: x != "none"):
        xs = by.get((t, v))
        if not xs:
            continue
        m = statistics.median(x[0] for x in xs); rep = statistics.median(x[1] for x in xs)
        q = statistics.median(x[2] for x in xs)
        cpu = statistics.median(x[0] + x[1] for x in xs)
        rel = " x%.2f" % (cpu / bcpu) if bcpu else ""
        qrel = " (%.2fx)" % (q / bq) if bq else ""
        print("%-16s %-8s master %5d  replica %5d  sum %5d%s   QPS %7.0f%s" % (t, v, m, rep, cpu, rel, q, qrel))
PYEOF
