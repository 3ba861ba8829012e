#!/usr/bin/env bash
# sluice sharding benchmark (issue 4, "Speed and memory"): with ROWS (1M) rows in 4 shards,
#
#   1. latency of (a) the seed's query and (b) a deep page
#      (SELECT * FROM post_reply ORDER BY create_time, id LIMIT 100000, 20) through sluice
#      on the sharded table vs the same text directly on an unsharded copy; interleaved
#      rounds, medians, ratio sluice/direct (target <= 1.2x);
#   2. sluice's RSS (VmRSS from /proc/PID/status, sampled every ~2 ms while the query
#      runs) during the same deep page at offsets 1000, 100000 and 500000: the growth over
#      the RSS just before the query (target: independent of the offset).
#
# Setup: its own MariaDB master + replica (scripts/cluster start, free ports; the replica's
# replication is stopped right away so it does not compete for the 2 CPUs, and sluice is
# configured with the master only, so both paths read the same server), innodb buffer
# pool raised to BUFFER_POOL so both copies stay in memory, a release sluice
# (cargo build --release). Database `bench` holds the sharded post_reply (created through
# sluice: post_reply_0..3, tid mod 4); database `flat` holds the unsharded post_reply with
# the same rows, so both paths run the very same SQL text. The rows are generated on the
# server (seq_1_to_N) into flat.post_reply and copied into the sub-tables by tid mod 4
# (LOAD_VIA_SLUICE=1: sent through sluice as multi-row INSERTs of 1000 rows instead,
# which also measures that). Every answer through sluice is checked against the direct
# one before it is timed (a fast but wrong proxy must not produce a number).
#
# Usage: benches/shard.sh            (about 3 minutes on 2 cores; +1 with LOAD_VIA_SLUICE=1)
# Environment (defaults in brackets):
#   ROWS            rows in each copy                                  [1000000]
#   ROUNDS          interleaved rounds                                 [7]
#   SEED_REPS       seed-query runs per path per round                 [30]
#   DEEP_REPS       deep-page runs per path per round                  [3]
#   DEEP_OFFSET     offset of the deep page                            [100000]
#   RSS_OFFSETS     offsets of the RSS phase                           ["1000 100000 500000"]
#   RSS_ROUNDS      rounds of the RSS phase                            [3]
#   BUFFER_POOL     innodb_buffer_pool_size of the master              [1G]
#   LOAD_VIA_SLUICE 1 = load the sharded table through sluice          [0]
#   KEEP            1 = keep the work directory (logs, raw samples)    [0]
#   SKIP_BUILD      1 = use target/release/sluice as is                [0]
#   SLUICE_BIN      a sluice binary to use instead of target/release/sluice
#   BASE_BIN        a second sluice binary (e.g. main's) measured in the same run, on the
#                   same tables, interleaved with the others: column "base"     [unset]
# Everything listens on 127.0.0.1 on free ports; everything started here (servers, sluice)
# is stopped by PID when the script exits, however it exits.
set -euo pipefail

BENCH=shard
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-7}
SEED_REPS=${SEED_REPS:-30}
DEEP_REPS=${DEEP_REPS:-3}
DEEP_OFFSET=${DEEP_OFFSET:-100000}
RSS_OFFSETS=${RSS_OFFSETS:-"1000 100000 500000"}
RSS_ROUNDS=${RSS_ROUNDS:-3}
BUFFER_POOL=${BUFFER_POOL:-1G}
LOAD_VIA_SLUICE=${LOAD_VIA_SLUICE:-0}

# The exact command, for the report.
COMMAND="ROWS=$ROWS ROUNDS=$ROUNDS SEED_REPS=$SEED_REPS DEEP_REPS=$DEEP_REPS DEEP_OFFSET=$DEEP_OFFSET RSS_OFFSETS=\"$RSS_OFFSETS\" RSS_ROUNDS=$RSS_ROUNDS BUFFER_POOL=$BUFFER_POOL LOAD_VIA_SLUICE=$LOAD_VIA_SLUICE"
[ -n "${SLUICE_BIN:-}" ] && COMMAND+=" SLUICE_BIN=$SLUICE_BIN"
[ -n "${BASE_BIN:-}" ] && COMMAND+=" BASE_BIN=$BASE_BIN"
[ "$SKIP_BUILD" = 1 ] && COMMAND+=" SKIP_BUILD=1"
[ -n "${CARGO_TARGET_DIR:-}" ] && COMMAND="CARGO_TARGET_DIR=$CARGO_TARGET_DIR $COMMAND"
COMMAND+=" benches/shard.sh"

need_bin mariadbd mariadb-server >/dev/null
CLIENT=$(need_bin mariadb mariadb-client)
CURL=$(need_bin curl curl)
need_pymysql
[[ $ROWS =~ ^[0-9]+$ ]] && [ "$ROWS" -ge 1000 ] || die "ROWS must be a number >= 1000"

# --- work dir and cleanup ---------------------------------------------------------------
bench_workdir
KEPT_HINT="sluice.log, cluster/*/error.log, samples.tsv"
cluster_dir=$work/cluster
# Stops exactly the servers of our own cluster directory (by their pid files), after sluice.
stop_cluster() {
  "$repo/scripts/cluster" stop "$cluster_dir" >"$work/cluster-stop.log" 2>&1 || cat "$work/cluster-stop.log" >&2
}

read -r MPORT RPORT SPORT APORT BPORT BAPORT <<<"$(free_ports 6)"
LOAD_START=$(loadavg)

# --- sluice binary ----------------------------------------------------------------------
sluice_binary
BIN=$SLUICE_BIN

# --- MariaDB ------------------------------------------------------------------------------
log "starting MariaDB master 127.0.0.1:$MPORT (+ replica :$RPORT, replication stopped) in $cluster_dir"
CLEANUP_HOOKS+=(stop_cluster)
MASTER_PORT=$MPORT REPLICA_PORTS=$RPORT CLUSTER_DB=bench "$repo/scripts/cluster" start "$cluster_dir" \
  >"$work/cluster-start.log" 2>&1 || { cat "$work/cluster-start.log" >&2; die "scripts/cluster start failed"; }
msql() { # db sql: as sluice/sluice directly on the master
  "$CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$MPORT" -usluice -psluice -N -B "$1" -e "$2"
}
rsql() {
  "$CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$RPORT" -usluice -psluice -N -B -e "$1"
}
rsql "STOP SLAVE" # our own replica: idle for the whole run, so it takes no CPU
msql bench "SET GLOBAL innodb_buffer_pool_size = $(numfmt --from=iec "$BUFFER_POOL")"
for _ in $(seq 1 100); do
  st=$(msql bench "SHOW STATUS LIKE 'Innodb_buffer_pool_resize_status'" | cut -f2)
  case "$st" in *"Completed"* | "" ) break ;; esac
  sleep 0.2
done
log "innodb_buffer_pool_size = $(msql bench 'SELECT @@innodb_buffer_pool_size')"

# --- sluice -------------------------------------------------------------------------------
cat >"$work/sluice.yaml" <<EOF
listen: 127.0.0.1:$SPORT
admin_listen: 127.0.0.1:$APORT
log:
  level: warn
  slow_query: 0s
backend:
  pool_max: 64
freshness:
  mode: "off"
sharding:
  tables: ["bench.post_reply.tid.4"]
users:
  - { name: app, password: app, backend: group }
groups:
  - name: main
    master: { addr: "127.0.0.1:$MPORT", user: sluice, password: sluice }
    replicas: []
EOF
start_sluice "$work/sluice.yaml" "$work/sluice.log" "$SPORT"
SLUICE_PID=$STARTED_PID
log "sluice pid $SLUICE_PID on 127.0.0.1:$SPORT ($BIN)"
BASE_PORT=0
if [ -n "${BASE_BIN:-}" ]; then
  [ -x "$BASE_BIN" ] || die "BASE_BIN $BASE_BIN is not an executable"
  sed -e "s/^listen: .*/listen: 127.0.0.1:$BPORT/" -e "s/^admin_listen: .*/admin_listen: 127.0.0.1:$BAPORT/" \
    "$work/sluice.yaml" >"$work/base.yaml"
  THIS_BIN=$SLUICE_BIN
  SLUICE_BIN=$BASE_BIN
  start_sluice "$work/base.yaml" "$work/base.log" "$BPORT"
  SLUICE_BIN=$THIS_BIN
  BASE_PID=$STARTED_PID
  BASE_PORT=$BPORT
  log "base sluice pid $BASE_PID on 127.0.0.1:$BPORT ($BASE_BIN)"
fi

# --- tables and data ----------------------------------------------------------------------
SCHEMA=$(
  cat <<'EOF'
CREATE TABLE post_reply (
  id int(11) unsigned NOT NULL COMMENT '回复id',
  tid int(11) unsigned NOT NULL DEFAULT '0' COMMENT '帖子id',
  user_id int(11) unsigned NOT NULL DEFAULT '0' COMMENT '用户id',
  subject varchar(80) NOT NULL DEFAULT '' COMMENT '回复标题',
  create_time datetime NOT NULL DEFAULT '2000-01-01 00:00:00' COMMENT '发表时间',
  message mediumtext NOT NULL COMMENT '回复内容',
  PRIMARY KEY (id),
  KEY idx_tid_time (tid, create_time),
  KEY idx_user (user_id),
  KEY idx_time (create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
EOF
)
"$CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$SPORT" -uapp -papp bench -e "$SCHEMA" ||
  die "CREATE TABLE post_reply through sluice failed"
msql bench "SHOW TABLES" | tr '\n' ' ' | grep -q "post_reply_0 post_reply_1 post_reply_2 post_reply_3" ||
  die "CREATE TABLE through sluice did not create post_reply_0..3"
msql bench "CREATE DATABASE flat"
msql flat "$SCHEMA"
log "generating $ROWS rows into flat.post_reply"
t0=$SECONDS
# Hot tids: the seed's 8 (0.5% of the rows); user 123 on 2% of the rows; create_time over
# ~9.5 years in minutes (some repeats); messages of 50-150 bytes.
msql flat "INSERT INTO post_reply (id, tid, user_id, subject, create_time, message)
  SELECT seq,
    IF(h % 1000 < 5, ELT(1 + (h DIV 1000) % 8, 228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839),
       200000 + (h DIV 7) % 40000),
    IF((h DIV 13) % 100 < 2, 123, 1 + (h DIV 17) % 50000),
    CONCAT('subject ', seq % 997, IF(seq % 5 = 0, ' 回复', '')),
    '2021-01-01 00:00:00' + INTERVAL ((h DIV 3) % 5000000) MINUTE,
    REPEAT(CHAR(97 + seq % 26), 50 + seq % 100)
  FROM (SELECT seq, CRC32(seq) AS h FROM seq_1_to_$ROWS) s"
log "generated in $((SECONDS - t0)) s"
t0=$SECONDS
if [ "$LOAD_VIA_SLUICE" = 1 ]; then
  log "loading the sharded table through sluice (multi-row INSERTs of 1000 rows)"
  "$PY" - "$MPORT" "$SPORT" "$ROWS" <<'PYEOF'
import sys, pymysql
mport, sport, rows = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
src = pymysql.connect(host="127.0.0.1", port=mport, user="sluice", password="sluice", database="flat", charset="utf8mb4")
dst = pymysql.connect(host="127.0.0.1", port=sport, user="app", password="app", database="bench", charset="utf8mb4", autocommit=True)
s, d = src.cursor(), dst.cursor()
for lo in range(1, rows + 1, 1000):
    s.execute("SELECT id, tid, user_id, subject, create_time, message FROM post_reply WHERE id BETWEEN %s AND %s", (lo, lo + 999))
    vals = ",".join("(%s)" % ",".join(dst.literal(v) for v in r) for r in s.fetchall())
    d.execute("INSERT INTO post_reply (id, tid, user_id, subject, create_time, message) VALUES " + vals)
PYEOF
else
  for k in 0 1 2 3; do
    msql bench "INSERT INTO post_reply_$k SELECT * FROM flat.post_reply WHERE tid % 4 = $k"
  done
fi
LOAD_SECS=$((SECONDS - t0))
log "sharded copy loaded in $LOAD_SECS s; ANALYZE"
msql flat "ANALYZE TABLE post_reply" >/dev/null
msql bench "ANALYZE TABLE post_reply_0, post_reply_1, post_reply_2, post_reply_3" >/dev/null
COUNTS=$(msql bench "SELECT CONCAT_WS(' ', (SELECT COUNT(*) FROM post_reply_0), (SELECT COUNT(*) FROM post_reply_1), (SELECT COUNT(*) FROM post_reply_2), (SELECT COUNT(*) FROM post_reply_3))")
DATA_MB=$(msql bench "SELECT ROUND(SUM(data_length + index_length) / 1048576) FROM information_schema.tables WHERE table_schema IN ('bench', 'flat')")

SEED_QUERY='SELECT * FROM post_reply WHERE user_id=123 AND tid IN(228596, 225232, 228689, 228601, 228638, 209218, 224795, 228839) ORDER BY create_time DESC LIMIT 20, 20'
{
  echo "plans (EXPLAIN on flat.post_reply / on bench.post_reply_0):"
  for q in "$SEED_QUERY" "SELECT * FROM post_reply ORDER BY create_time, id LIMIT $DEEP_OFFSET, 20"; do
    echo "  $q"
    msql flat "EXPLAIN $q" | sed 's/^/    flat:  /'
    msql bench "EXPLAIN ${q/FROM post_reply/FROM post_reply_0}" | sed 's/^/    shard: /'
  done
} >"$work/plans.txt"

# --- measurements (python) ------------------------------------------------------------------
log "measuring: $ROUNDS rounds (seed x$SEED_REPS, deep page x$DEEP_REPS per path), then RSS"
"$PY" - "$MPORT" "$SPORT" "$APORT" "$SLUICE_PID" "$work" "$BASE_PORT" <<PYEOF
import sys, time, threading, statistics, re, urllib.request, pymysql

mport, sport, aport, pid, work = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ROUNDS, SEED_REPS, DEEP_REPS = $ROUNDS, $SEED_REPS, $DEEP_REPS
DEEP_OFFSET, RSS_ROUNDS = $DEEP_OFFSET, $RSS_ROUNDS
RSS_OFFSETS = [int(x) for x in "$RSS_OFFSETS".split()]
SEED = """$SEED_QUERY"""

def conn(port, user, pw, db):
    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=pw, database=db,
                           charset="utf8mb4", autocommit=True)
paths = {"direct": conn(mport, "sluice", "sluice", "flat"), "sluice": conn(sport, "app", "app", "bench")}
base_port = int(sys.argv[6])
if base_port:
    paths["base"] = conn(base_port, "app", "app", "bench")

def run(path, sql):
    cur = paths[path].cursor()
    t0 = time.perf_counter()
    cur.execute(sql)
    rows = cur.fetchall()
    return time.perf_counter() - t0, rows

def deep(offset):
    return "SELECT * FROM post_reply ORDER BY create_time, id LIMIT %d, 20" % offset

def rss_kib():
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("sluice (pid %d) is gone" % pid)

def hwm_kib():
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

def merged_rows():
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % aport, timeout=5).read().decode()
    m = re.search(r"^sluice_merged_rows_total\s+(\S+)", text, re.M)
    return float(m.group(1)) if m else float("nan")

# Correctness first: every query's answer through sluice equals the direct one.
queries = {"seed": SEED, "deep": deep(DEEP_OFFSET)}
for off in RSS_OFFSETS:
    queries["rss%d" % off] = deep(off)
for name, sql in [(n, q) for n, q in queries.items()] + [("base " + n, q) for n, q in queries.items() if base_port]:
    _, a = run("direct", sql)
    _, b = run("base" if name.startswith("base ") else "sluice", sql)
    if name.endswith("seed"):
        # Rows with the same create_time may come in either order; the page is the same.
        ok = sorted(a) == sorted(b) and [r[4] for r in a] == [r[4] for r in b]
        if len(a) < 20:
            print("note: the seed's query returns only %d rows with ROWS=$ROWS" % len(a), file=sys.stderr)
    else:
        ok = a == b
    if not ok:
        raise SystemExit("sluice's answer differs from the direct one for: %s\n direct %d rows, sluice %d rows"
                         % (sql, len(a), len(b)))
print("checked: every measured query answers the same through sluice as directly", file=sys.stderr)

# Warm-up.
for _ in range(2):
    for sql in (SEED, deep(DEEP_OFFSET)):
        for p in paths:
            run(p, sql)

samples = {(q, p): [] for q in ("seed", "deep") for p in paths}
order = list(paths)
with open(work + "/samples.tsv", "w") as out:
    for r in range(ROUNDS):
        o = order if r % 2 == 0 else order[::-1]
        for q, sql, reps in (("seed", SEED, SEED_REPS), ("deep", deep(DEEP_OFFSET), DEEP_REPS)):
            for p in o:
                for _ in range(reps):
                    t, _rows = run(p, sql)
                    samples[(q, p)].append(t * 1000.0)
                    out.write("%d\t%s\t%s\t%.3f\n" % (r, q, p, t * 1000.0))
        print("round %d/%d done" % (r + 1, ROUNDS), file=sys.stderr)

def med(v): return statistics.median(v)
def pct(v, p):
    s = sorted(v)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]

# RSS during the deep page, per offset: sampled every ~2 ms while the query runs.
rss = {off: [] for off in RSS_OFFSETS}
lat = {off: {"sluice": [], "direct": []} for off in RSS_OFFSETS}
merged = {off: [] for off in RSS_OFFSETS}
for r in range(RSS_ROUNDS):
    offs = RSS_OFFSETS if r % 2 == 0 else RSS_OFFSETS[::-1]
    for off in offs:
        sql = deep(off)
        t, _ = run("direct", sql)
        lat[off]["direct"].append(t * 1000.0)
        time.sleep(0.3)
        before = rss_kib()
        m0 = merged_rows()
        peak = [before]
        stop = threading.Event()
        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kib())
                time.sleep(0.002)
        th = threading.Thread(target=sample)
        th.start()
        t, _ = run("sluice", sql)
        stop.set()
        th.join()
        peak[0] = max(peak[0], rss_kib())
        merged[off].append(merged_rows() - m0)
        lat[off]["sluice"].append(t * 1000.0)
        rss[off].append((before, peak[0]))

with open(work + "/report.txt", "w") as f:
    def w(s=""):
        print(s)
        f.write(s + "\n")
    w("Latency (ms): median [p10 .. p90] over %d rounds; direct = the same SQL on the unsharded table" % ROUNDS)
    w("%-58s %24s %24s %14s" % ("query", "direct", "sluice (4 shards)", "sluice/direct"))
    labels = {"seed": "seed: user_id=123 AND tid IN(8 tids) ... LIMIT 20, 20",
              "deep": "deep page: ORDER BY create_time, id LIMIT %d, 20" % DEEP_OFFSET}
    for q in ("seed", "deep"):
        d, s = samples[(q, "direct")], samples[(q, "sluice")]
        w("%-58s %8.2f [%6.2f .. %6.2f] %8.2f [%6.2f .. %6.2f] %13.2fx" % (
            labels[q] + " (n=%d)" % len(d), med(d), pct(d, .1), pct(d, .9), med(s), pct(s, .1), pct(s, .9), med(s) / med(d)))
        if base_port:
            b = samples[(q, "base")]
            w("%-58s %24s %8.2f [%6.2f .. %6.2f] %13.2fx  (this build / base: %.2fx)" % (
                "  base build (BASE_BIN), same query", "", med(b), pct(b, .1), pct(b, .9), med(b) / med(d), med(s) / med(b)))
    w("target: sluice/direct <= 1.2x")
    w()
    w("sluice RSS while it answers SELECT * FROM post_reply ORDER BY create_time, id LIMIT <offset>, 20")
    w("(VmRSS sampled every ~2 ms; growth = peak during the query - RSS just before it; %d runs per offset;" % RSS_ROUNDS)
    w(" rows read = rows the merge took from the shards, from sluice_merged_rows_total)")
    w("%-8s %14s %16s %16s %22s %22s" % ("offset", "rows read", "RSS before MiB", "peak MiB", "growth KiB med (max)", "latency ms sluice/direct"))
    for off in RSS_OFFSETS:
        g = [p - b for b, p in rss[off]]
        w("%-8d %14.0f %16.1f %16.1f %13.0f (%6.0f) %12.1f / %7.1f" % (
            off, med(merged[off]), med([b for b, _ in rss[off]]) / 1024, max(p for _, p in rss[off]) / 1024,
            med(g), max(g), med(lat[off]["sluice"]), med(lat[off]["direct"])))
    w("target: RSS growth independent of the offset; sluice VmHWM (peak over the whole run): %.1f MiB" % (hwm_kib() / 1024))
PYEOF

LOAD_END=$(loadavg)
echo
echo "Setup: $ROWS rows per copy (sub-tables: $COUNTS rows), $DATA_MB MiB of data+indexes in both databases,"
echo "  sharded copy loaded in $LOAD_SECS s ($([ "$LOAD_VIA_SLUICE" = 1 ] && echo "through sluice, multi-row INSERTs of 1000 rows" || echo "INSERT ... SELECT by tid % 4, directly"));"
echo "  $(nproc) CPUs; load average at start $LOAD_START, at end $LOAD_END"
cat "$work/plans.txt"
echo
echo "Command: $COMMAND"
