#!/usr/bin/env bash
# sluice benchmark: sysbench directly against MariaDB, through HAProxy (TCP mode, a plain
# L4 forwarder) and through sluice, interleaved in rounds so that drift on a noisy
# machine hits all three alike. Also: added p50 latency at 1 thread, and sluice's RSS
# with many idle client connections. See benches/README.md.
#
# Usage: benches/sysbench.sh            (about 40 x TIME seconds + ~1 min of setup)
# Environment (defaults in brackets):
#   TIME        seconds per sysbench run                        [10]
#   ROUNDS      interleaved rounds                              [3]
#   THREADS     sysbench threads for the throughput runs        [8]
#   TABLE_SIZE  rows in sbtest1                                 [100000]
#   TESTS       sysbench tests         ["oltp_point_select oltp_read_only"]
#   PS_MODES    --db-ps-mode values    ["disable auto"]
#   LAT_TIME    seconds per 1-thread latency run                [$TIME]
#   IDLE_CONNS  idle client connections for the RSS figure      [2000]
#   WARMUP      seconds of warm-up per target before round 1    [3]
#   KEEP        1 = keep the work directory (logs, raw sysbench output) [0]
#   SKIP_BUILD  1 = use target/release/sluice as is              [0]
#   SLUICE_BIN  a sluice binary to benchmark instead of building target/release/sluice
#   SLUICE_POOL_MAX  sluice's backend.pool_max                  [IDLE_CONNS + 64]
#   BASE_BIN    a second sluice binary (e.g. the build before a change), run as target
#               "base" in the same rounds, so before/after ratios come from one run
#   SLUICE_CONF extra YAML lines appended to sluice's config (e.g. "runtime: { worker_threads: 1 }") []
#   BASE_CONF   extra YAML lines appended to base's config  [SLUICE_CONF]
#   READS       master: one standalone MariaDB, sluice with no replica (reads on the
#               master, as through HAProxy); replica: a master + replica cluster
#               (scripts/cluster) with sluice's triggers installed, sluice with the
#               replica and freshness mode FRESH, so its reads go to the fresh replica
#               (direct and HAProxy still go to the master)           [master]
#   FRESH       freshness.mode with READS=replica                     [causal]
# Everything runs on 127.0.0.1 on free ports; everything started here is stopped (by
# PID) when the script exits, however it exits.
set -euo pipefail

BENCH=bench
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

TIME=${TIME:-10}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-8}
TABLE_SIZE=${TABLE_SIZE:-100000}
TESTS=${TESTS:-"oltp_point_select oltp_read_only"}
PS_MODES=${PS_MODES:-"disable auto"}
LAT_TIME=${LAT_TIME:-$TIME}
IDLE_CONNS=${IDLE_CONNS:-2000}
WARMUP=${WARMUP:-3}
READS=${READS:-master}
FRESH=${FRESH:-causal}
case "$READS" in master | replica) ;; *) die "READS must be master or replica" ;; esac
TARGETS=(direct haproxy sluice)

# --- tools -------------------------------------------------------------------------------
need_bin mariadbd mariadb-server >/dev/null
need_bin mariadb-install-db mariadb-server >/dev/null
need_bin mariadb mariadb-client >/dev/null
SYSBENCH=$(need_bin sysbench sysbench)
HAPROXY=$(need_bin haproxy haproxy)
need_bin curl curl >/dev/null
need_pymysql
for n in $TESTS; do [ -f "/usr/share/sysbench/$n.lua" ] || command -v "$n" >/dev/null || die "unknown sysbench test $n"; done

# --- work dir and cleanup ---------------------------------------------------------------
bench_workdir
KEPT_HINT="logs: sluice.log, mariadb/error.log, runs/"

# Enough file descriptors for IDLE_CONNS clients (+ as many backend connections for
# HAProxy) in every process started from here.
raise_nofile $((IDLE_CONNS + 200)) "IDLE_CONNS=$IDLE_CONNS"

read -r MPORT HPORT SPORT APORT BPORT BAPORT RPORT <<<"$(free_ports 7)"
if [ -n "${BASE_BIN:-}" ]; then
  [ -x "$BASE_BIN" ] || die "BASE_BIN=$BASE_BIN is not an executable"
  TARGETS+=(base)
fi

LOAD_START=$(loadavg)

# --- build sluice -----------------------------------------------------------------------
sluice_binary

# --- MariaDB, HAProxy ------------------------------------------------------------------
replicas="[]"
freshness=""
if [ "$READS" = master ]; then
  start_mariadb "$work/mariadb" "$MPORT" $((IDLE_CONNS * 2 + 500))
  SERVERS_DESC="mariadb: 512M buffer pool, no binlog"
else
  # A master + replica with GTID replication (scripts/cluster's server options); the
  # accounts the standalone server has are made on the master and replicated.
  cluster_dir=$work/cluster
  stop_cluster() { "$repo/scripts/cluster" stop "$cluster_dir" >"$work/cluster-stop.log" 2>&1 || cat "$work/cluster-stop.log" >&2; }
  CLEANUP_HOOKS+=(stop_cluster)
  log "scripts/cluster start $cluster_dir"
  MASTER_PORT=$MPORT REPLICA_PORT=$RPORT REPLICA_PORTS="" CLUSTER_DB=sbtest \
    "$repo/scripts/cluster" start "$cluster_dir" >"$work/cluster-start.log" 2>&1 ||
    { cat "$work/cluster-start.log" >&2; die "scripts/cluster start failed"; }
  MARIADB_CLIENT=$(need_bin mariadb mariadb-client)
  root_sql() { "$MARIADB_CLIENT" --no-defaults -h127.0.0.1 -P"$MPORT" -usluice -psluice -N -B -e "$1"; }
  replica_sql() { "$MARIADB_CLIENT" --no-defaults -h127.0.0.1 -P"$RPORT" -usluice -psluice -N -B -e "$1"; }
  root_sql "CREATE USER 'sbtest'@'%' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO 'sbtest'@'%';
            CREATE USER 'sluicebe'@'%' IDENTIFIED BY 'sluicebe'; GRANT ALL ON *.* TO 'sluicebe'@'%';
            SET GLOBAL max_connections = $((IDLE_CONNS * 2 + 500))"
  replica_sql "SET GLOBAL max_connections = $((IDLE_CONNS * 2 + 500))"
  MARIADB_VERSION=$(root_sql "SELECT @@version")
  replicas="[{ addr: 127.0.0.1:$RPORT, user: sluicebe, password: sluicebe }]"
  freshness="freshness: { mode: $FRESH }"
  SERVERS_DESC="mariadb: master + replica (scripts/cluster), sluice's reads on the replica, freshness $FRESH"
fi
start_haproxy "$work" "$HPORT" "$MPORT" $((IDLE_CONNS * 2 + 1000))

# --- sluice -----------------------------------------------------------------------------
SLUICE_POOL_MAX=${SLUICE_POOL_MAX:-$((IDLE_CONNS + 64))}
sluice_conf() { # extra YAML
  cat <<EOF
listen: 127.0.0.1:$SPORT
admin_listen: 127.0.0.1:$APORT
log:
  format: text
  level: warn
backend:
  # Room for the IDLE_CONNS idle clients of the memory figure: a client session holds a
  # backend connection while it is open (the default pool_max of 256 would turn away
  # client 257 with "pool: timed out waiting for a connection").
  pool_max: $SLUICE_POOL_MAX
users:
  - { name: sbtest, password: sbtest, backend: group }
groups:
  - name: main
    master: { addr: 127.0.0.1:$MPORT, user: sluicebe, password: sluicebe }
    replicas: $replicas
$freshness
$1
EOF
}
# --- prepare ----------------------------------------------------------------------------
sysbench_prepare "$MPORT" sbtest sbtest "$TABLE_SIZE" "$work/prepare.log"
root_sql "ANALYZE TABLE sbtest.sbtest1; SELECT COUNT(*) FROM sbtest.sbtest1" >/dev/null
sluice_conf "${SLUICE_CONF:-}" >"$work/sluice.yaml"
if [ "$READS" = replica ]; then
  "$SLUICE_BIN" triggers install --schema sbtest --config "$work/sluice.yaml" >"$work/triggers.log" 2>&1 ||
    { cat "$work/triggers.log" >&2; die "sluice triggers install failed"; }
  pos=$(root_sql "SELECT @@GLOBAL.gtid_binlog_pos")
  [ "$(replica_sql "SELECT MASTER_GTID_WAIT('$pos', 120)")" = 0 ] || die "replica did not catch up"
fi
start_sluice "$work/sluice.yaml" "$work/sluice.log" "$SPORT"
SLUICE_PID=$STARTED_PID
RSS_START=$(rss_kb "$SLUICE_PID")
log "sluice $(sluice_version) on 127.0.0.1:$SPORT (pid $SLUICE_PID, RSS ${RSS_START} kB)"
BASE_PID=""
if [ -n "${BASE_BIN:-}" ]; then
  sluice_conf "${BASE_CONF-${SLUICE_CONF:-}}" | sed -e "s/^listen: .*/listen: 127.0.0.1:$BPORT/" \
    -e "s/^admin_listen: .*/admin_listen: 127.0.0.1:$BAPORT/" >"$work/base.yaml"
  SLUICE_BIN_MAIN=$SLUICE_BIN
  SLUICE_BIN=$BASE_BIN
  start_sluice "$work/base.yaml" "$work/base.log" "$BPORT"
  BASE_PID=$STARTED_PID
  log "base: $BASE_BIN ($(sluice_version)) on 127.0.0.1:$BPORT (pid $BASE_PID)"
  SLUICE_BIN=$SLUICE_BIN_MAIN
fi

port_of() { case $1 in direct) echo "$MPORT" ;; haproxy) echo "$HPORT" ;; sluice) echo "$SPORT" ;; base) echo "$BPORT" ;; esac; }
# The proxy process whose CPU time a run is charged (none for direct).
pid_of() { case $1 in haproxy) echo "$HAPROXY_PID" ;; sluice) echo "$SLUICE_PID" ;; base) echo "$BASE_PID" ;; *) echo "" ;; esac; }
# utime + stime of a process, in clock ticks (0 without one).
cpu_ticks() { [ -n "$1" ] && awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
CLK_TCK=$(getconf CLK_TCK)
# Busy jiffies of the whole machine: client, proxy and servers share the
# cores, so a target's cost per query to all of them is what limits QPS.
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }

sb() { # test port threads time extra... (run)
  local test=$1 port=$2 threads=$3 time=$4
  shift 4
  "$SYSBENCH" "$test" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
    --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest --tables=1 \
    --table-size="$TABLE_SIZE" --threads="$threads" --time="$time" --report-interval=0 \
    "$@" run
}


mkdir -p "$work/runs"
results=$work/results.tsv   # kind round test ps target qps p95_ms p50_ms errors cpu_us_per_query machine_us_per_query
: >"$results"

# One run; appends a line to $results. Fails the benchmark on any sysbench error.
run_one() { # kind round test ps target threads time percentile
  local kind=$1 round=$2 test=$3 ps=$4 target=$5 threads=$6 time=$7 pct=$8 out
  out=$work/runs/$kind-r$round-$test-$ps-$target.txt
  local pid t0 t1 m0 m1
  pid=$(pid_of "$target")
  t0=$(cpu_ticks "$pid")
  m0=$(machine_busy)
  if ! sb "$test" "$(port_of "$target")" "$threads" "$time" --db-ps-mode="$ps" \
    --percentile="$pct" --histogram=on >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    die "sysbench $test ($target, ps-mode=$ps) failed: see $out"
  fi
  local fig qps pctl p50 ignored reconnects
  t1=$(cpu_ticks "$pid")
  m1=$(machine_busy)
  fig=$("$PY" "$repo/benches/sysbench_result.py" "$out" "$pct") || die "bad sysbench output: $out"
  IFS=$'\t' read -r qps pctl p50 _ _ ignored reconnects <<<"$fig"
  local cpu
  cpu=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v q="$qps" -v t="$time" -v p="$pid" \
    'BEGIN { if (p == "" || q <= 0) print "nan"; else printf "%.2f", d * 1e6 / hz / (q * t) }')
  local machine
  machine=$(awk -v d=$((m1 - m0)) -v hz="$CLK_TCK" -v q="$qps" -v t="$time" \
    'BEGIN { if (q <= 0) print "nan"; else printf "%.2f", d * 1e6 / hz / (q * t) }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n' "$kind" "$round" "$test" "$ps" "$target" "$qps" "$pctl" "$p50" \
    $((ignored + reconnects)) "$cpu" "$machine" >>"$results"
  local errs
  errs=$(tail -n1 "$results" | cut -f9)
  [ "$errs" = 0 ] || die "sysbench reported $errs ignored errors/reconnects for $target: see $out"
  log "$(tail -n1 "$results" | awk -F'\t' '{printf "%-10s r%s %-18s ps=%-7s %-7s QPS %9.0f  p%s %6.2f ms  p50(hist) %.3f ms", $1, $2, $3, $4, $5, $6, "'"$pct"'", $7, $8}')"
}

# --- warm-up ----------------------------------------------------------------------------
if [ "$WARMUP" -gt 0 ]; then
  log "warm-up: ${WARMUP}s per target"
  for target in "${TARGETS[@]}"; do
    sb oltp_read_only "$(port_of "$target")" "$THREADS" "$WARMUP" >"$work/runs/warmup-$target.txt" 2>&1 ||
      { tail -n 30 "$work/runs/warmup-$target.txt" >&2; die "warm-up through $target failed"; }
  done
fi
RSS_WARM=$(rss_kb "$SLUICE_PID")

# --- throughput rounds (8 threads) and 1-thread latency rounds, interleaved -------------
for ((r = 1; r <= ROUNDS; r++)); do
  for test in $TESTS; do
    for ps in $PS_MODES; do
      for target in $(rotated "$r" "${TARGETS[@]}"); do
        run_one tput "$r" "$test" "$ps" "$target" "$THREADS" "$TIME" 95
      done
    done
  done
  for target in $(rotated "$r" "${TARGETS[@]}"); do
    run_one lat1 "$r" oltp_point_select disable "$target" 1 "$LAT_TIME" 50
  done
done
RSS_AFTER_RUNS=$(rss_kb "$SLUICE_PID")
# Where sluice sent its statements over all runs (sluice_routed_statements_total).
ROUTED=$(curl -sf "http://127.0.0.1:$APORT/metrics" | awk '/^sluice_routed_statements_total/ {
  split($0, a, "destination=\""); split(a[2], b, "\""); s[b[1]] += $NF } END { for (k in s) printf "%s %d, ", k, s[k] }' || true)

# --- RSS with IDLE_CONNS idle client connections ----------------------------------------
# MariaDB connections of a target's account: sluice logs in as sluicebe; HAProxy
# forwards the clients' own logins (sbtest).
server_conns() { # target
  local u=sbtest
  [ "$1" = sluice ] && u=sluicebe
  root_sql "SELECT COUNT(*) FROM information_schema.processlist WHERE user = '$u'"
}

# Sets IR_BEFORE IR_AFTER (kB), IR_N (connections opened), IR_SECS (time to open
# them), IR_THREADS (the proxy's server connections before->while they are open), IR_ERR
# (why fewer than IDLE_CONNS, or empty). Not called in $(...): it starts a background
# holder (benches/idle_clients.py) whose PID the EXIT trap must know. Never fails the
# benchmark.
idle_rss() { # target pid-to-measure
  local target=$1 pid=$2 threads_before
  IR_BEFORE=$(rss_kb "$pid") IR_AFTER="" IR_N=0 IR_SECS="" IR_THREADS="" IR_ERR=""
  threads_before=$(server_conns "$target")
  # Opened one after the other, each with database sbtest; the last one runs a query.
  hold_start "$(port_of "$target")" "$IDLE_CONNS" --database sbtest --query "SELECT COUNT(*) FROM sbtest1"
  if hold_ready; then
    sleep 1
    IR_AFTER=$(rss_kb "$pid")
    IR_THREADS="$threads_before->$(server_conns "$target")"
    root_sql "SELECT user, command, COUNT(*) FROM information_schema.processlist GROUP BY 1, 2" \
      >"$work/processlist-$target.txt" 2>&1 || true
  fi
  IR_N=$HOLD_N IR_SECS=$HOLD_SECS IR_ERR=$HOLD_ERR
  hold_stop # release the connections
  [ -z "$IR_ERR" ] || log "$target: only $IR_N of $IDLE_CONNS connections opened: $IR_ERR"
}

# One line of the memory report.
idle_line() { # name before after n secs threads err
  local name=$1 before=$2 after=$3 n=$4 secs=$5 threads=$6 err=$7
  if [ -z "$after" ] || [ "$n" = 0 ]; then
    echo "  $name with $IDLE_CONNS idle clients: FAILED ($err)"
    return
  fi
  echo "  $name with $n idle clients: $(mib "$before") -> $(mib "$after") ($(awk -v a="$before" -v b="$after" -v n="$n" 'BEGIN { printf "%.1f KiB", (b - a) / n }') per connection; opened in ${secs}s; its MariaDB connections $threads)"
  [ -z "$err" ] || echo "    only $n of $IDLE_CONNS could be opened: $err"
}

log "opening $IDLE_CONNS idle connections through sluice"
idle_rss sluice "$SLUICE_PID"
S=("$IR_BEFORE" "$IR_AFTER" "$IR_N" "$IR_SECS" "$IR_THREADS" "$IR_ERR")
sleep 2
S_RELEASED=$(rss_kb "$SLUICE_PID")
log "opening $IDLE_CONNS idle connections through haproxy"
idle_rss haproxy "$HAPROXY_PID"
H=("$IR_BEFORE" "$IR_AFTER" "$IR_N" "$IR_SECS" "$IR_THREADS" "$IR_ERR")

# --- report -----------------------------------------------------------------------------
echo
echo "================================================================================"
report_title "sluice benchmark"
echo "mariadb $MARIADB_VERSION | $("$HAPROXY" -v | head -n1 | cut -d' ' -f1-3) | $("$SYSBENCH" --version) | $("$SLUICE_BIN" --version)"
echo "load average at start: $LOAD_START, at end: $(loadavg) (other work on the machine makes the numbers noisy)"
echo "sluice: log level warn, backend.pool_max $SLUICE_POOL_MAX; haproxy: mode tcp, defaults; $SERVERS_DESC"
echo "sysbench: 1 table x $TABLE_SIZE rows, $THREADS threads, ${TIME}s per run, $ROUNDS interleaved rounds"
echo "================================================================================"
"$PY" - "$results" "$THREADS" <<'PYEOF'
import sys, statistics
from collections import defaultdict
path, threads = sys.argv[1], sys.argv[2]
qps, p95, p50, cpu, mach = (defaultdict(list) for _ in range(5))
order = []
targets = []
for line in open(path):
    kind, rnd, test, ps, target, q, pc, h50, _, c, m = line.rstrip("\n").split("\t")
    key = (kind, test, ps)
    if key not in order:
        order.append(key)
    if target not in targets:
        targets.append(target)
    qps[key + (target,)].append(float(q))
    p95[key + (target,)].append(float(pc))
    p50[key + (target,)].append(float(h50))
    if c != "nan":
        cpu[key + (target,)].append(float(c))
    if m != "nan":
        mach[key + (target,)].append(float(m))
med = statistics.median
base = "base" in targets

def tput_table(title, hdr, row):
    """One line per (test, ps-mode) of the throughput runs: row(key, test, ps)."""
    print("\n" + title)
    print(hdr)
    print("-" * len(hdr))
    for kind, test, ps in order:
        if kind == "tput":
            print(row((kind, test, ps), test, ps))

def tput_row(k, test, ps):
    d, h, s = (med(qps[k + (t,)]) for t in ("direct", "haproxy", "sluice"))
    dp, hp, sp = (med(p95[k + (t,)]) for t in ("direct", "haproxy", "sluice"))
    return "%-18s %-8s | %9.0f %7.2f | %9.0f %7.2f | %9.0f %7.2f | %12.2fx %13.2fx" % (
        test, ps, d, dp, h, hp, s, sp, s / d, s / h)

def cpu_row(k, test, ps):
    h, s = med(cpu[k + ("haproxy",)]), med(cpu[k + ("sluice",)])
    line = "%-18s %-8s | %9.2f | %9.2f" % (test, ps, h, s)
    if base:
        line += " | %9.2f" % med(cpu[k + ("base",)])
    return line + " | %13.2fx" % (s / h)

def machine_row(k, test, ps):
    return "%-18s %-8s | " % (test, ps) + " | ".join(
        "%9.2f" % med(mach[k + (t,)]) if mach[k + (t,)] else "%9s" % "-" for t in targets)

tput_table("Throughput, %s threads: median over rounds (QPS; p95 latency in ms)" % threads,
           "%-18s %-8s | %9s %7s | %9s %7s | %9s %7s | %13s %14s" % (
               "test", "ps-mode", "direct", "p95", "haproxy", "p95", "sluice", "p95", "sluice/direct", "sluice/haproxy"),
           tput_row)
tput_table("Proxy CPU time per query (utime+stime from /proc over each run / queries), median over rounds, us",
           "%-18s %-8s | %9s | %9s" % ("test", "ps-mode", "haproxy", "sluice") + (" | %9s" % "base" if base else "")
           + " | %14s" % "sluice/haproxy",
           cpu_row)
tput_table("Machine CPU time per query (all processes: client, proxy, servers; busy jiffies from /proc/stat"
           " / queries), median, us",
           "%-18s %-8s | " % ("test", "ps-mode") + " | ".join("%9s" % t for t in targets),
           machine_row)
if base:
    print("\nBefore/after in this run (base = BASE_BIN): QPS ratio to haproxy, median over rounds")
    for kind, test, ps in order:
        if kind != "tput":
            continue
        k = (kind, test, ps)
        h = med(qps[k + ("haproxy",)])
        print("%-18s %-8s | base/haproxy %.3fx | sluice/haproxy %.3fx | sluice/base %.3fx" % (
            test, ps, med(qps[k + ("base",)]) / h, med(qps[k + ("sluice",)]) / h,
            med(qps[k + ("sluice",)]) / med(qps[k + ("base",)])))
spread = []
for kind, test, ps in order:
    if kind != "tput":
        continue
    for t in targets:
        v = qps[(kind, test, ps, t)]
        spread.append("%s/%s/%s %.0f..%.0f" % (test.replace("oltp_", ""), ps, t, min(v), max(v)))
print("\nQPS range over rounds (min..max): " + "; ".join(spread))

k = ("lat1", "oltp_point_select", "disable")
if k + ("direct",) in qps:
    print("\nLatency at 1 thread, oltp_point_select, ps-mode=disable (median over rounds)")
    print("%-8s %10s %12s %14s %16s" % ("target", "QPS", "p50 (ms)", "mean (us)", "added p50 (us)"))
    d50 = med(p50[k + ("direct",)])
    for t in targets:
        q = med(qps[k + (t,)])
        m50 = med(p50[k + (t,)])
        print("%-8s %10.0f %12.3f %14.1f %16s" % (
            t, q, m50, 1e6 / q, "-" if t == "direct" else "%+.1f" % ((m50 - d50) * 1000)))
    dm = 1e6 / med(qps[k + ("direct",)])
    print("added mean latency per query (from 1-thread QPS): haproxy %+.1f us, sluice %+.1f us" % (
        1e6 / med(qps[k + ("haproxy",)]) - dm, 1e6 / med(qps[k + ("sluice",)]) - dm))
PYEOF

echo
echo "Statements sluice routed over all runs (warm-up included): ${ROUTED%, }"
echo
echo "Memory (VmRSS)"
echo "  sluice at start: $(mib "$RSS_START"); after warm-up: $(mib "$RSS_WARM"); after all runs: $(mib "$RSS_AFTER_RUNS")"
idle_line sluice "${S[@]}"
echo "    sluice after they closed: $(mib "$S_RELEASED")"
idle_line haproxy "${H[@]}"
echo
echo "Reproduce with:"
extra=""
[ "$SLUICE_BIN" != "$repo/target/release/sluice" ] && extra="SLUICE_BIN=$SLUICE_BIN "
[ -n "${BASE_BIN:-}" ] && extra="${extra}BASE_BIN=$BASE_BIN "
[ -n "${SLUICE_CONF:-}" ] && extra="${extra}SLUICE_CONF=\"$SLUICE_CONF\" "
[ -n "${BASE_BIN:-}" ] && [ -n "${BASE_CONF+set}" ] && extra="${extra}BASE_CONF=\"$BASE_CONF\" "
[ "$READS" = replica ] && extra="${extra}READS=replica FRESH=$FRESH "
echo "  ${extra}TIME=$TIME ROUNDS=$ROUNDS THREADS=$THREADS TABLE_SIZE=$TABLE_SIZE TESTS=\"$TESTS\" PS_MODES=\"$PS_MODES\" LAT_TIME=$LAT_TIME IDLE_CONNS=$IDLE_CONNS WARMUP=$WARMUP SLUICE_POOL_MAX=$SLUICE_POOL_MAX benches/sysbench.sh"
echo "(raw sysbench outputs: KEEP=1 keeps $work/runs/)"
