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
# Everything runs on 127.0.0.1 on free ports; everything started here is stopped (by
# PID) when the script exits, however it exits.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
KEEP=${KEEP:-0}
SKIP_BUILD=${SKIP_BUILD:-0}
PY=/usr/bin/python3 # Debian's, with python3-pymysql (a pyenv python3 may lack it)
TARGETS=(direct haproxy sluice)

die() { echo "bench: $*" >&2; exit 1; }
log() { echo "bench: $(date +%H:%M:%S) $*" >&2; }

# --- tools -------------------------------------------------------------------------------
find_bin() {
  local d
  command -v "$1" 2>/dev/null && return 0
  for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
    [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
  done
  return 1
}
MARIADBD=$(find_bin mariadbd) || die "mariadbd missing: sudo apt-get install -y mariadb-server"
INSTALL_DB=$(find_bin mariadb-install-db) || die "mariadb-install-db missing: sudo apt-get install -y mariadb-server"
CLIENT=$(find_bin mariadb) || die "mariadb CLI missing: sudo apt-get install -y mariadb-client"
SYSBENCH=$(find_bin sysbench) || die "sysbench missing: sudo apt-get install -y sysbench"
HAPROXY=$(find_bin haproxy) || die "haproxy missing: sudo apt-get install -y haproxy"
[ -x "$PY" ] && "$PY" -c 'import pymysql' 2>/dev/null ||
  die "$PY with PyMySQL missing: sudo apt-get install -y python3 python3-pymysql"
for n in $TESTS; do [ -f "/usr/share/sysbench/$n.lua" ] || command -v "$n" >/dev/null || die "unknown sysbench test $n"; done

# --- work dir and cleanup ---------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX")
MYSQLD_PID="" SLUICE_PID="" HAPROXY_PID="" HOLDER_PIDS=()

stop_pid() { # pid [grace seconds]: TERM, wait, KILL
  local pid=$1 grace=${2:-10} i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  for p in "${HOLDER_PIDS[@]}"; do stop_pid "$p" 5; done
  stop_pid "$SLUICE_PID" 10
  if [ -z "$HAPROXY_PID" ] && [ -f "$work/haproxy.pid" ]; then HAPROXY_PID=$(head -n1 "$work/haproxy.pid"); fi
  stop_pid "$HAPROXY_PID" 5
  stop_pid "$MYSQLD_PID" 30
  wait 2>/dev/null || true
  if [ "$KEEP" = 1 ] || [ $rc -ne 0 ]; then
    echo "bench: work directory kept: $work (logs: sluice.log, mariadb/error.log, runs/)" >&2
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Enough file descriptors for IDLE_CONNS clients (+ as many backend connections for
# HAProxy) in every process started from here.
hard=$(ulimit -Hn)
want=65536
if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ]; then want=$hard; fi
ulimit -n "$want" 2>/dev/null || true
[ "$(ulimit -n)" -ge $((IDLE_CONNS + 200)) ] ||
  die "ulimit -n is $(ulimit -n); need $((IDLE_CONNS + 200)) for IDLE_CONNS=$IDLE_CONNS (raise the hard limit or lower IDLE_CONNS)"

free_ports() {
  "$PY" -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}
read -r MPORT HPORT SPORT APORT <<<"$(free_ports 4)"

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# --- build sluice -----------------------------------------------------------------------
if [ -n "${SLUICE_BIN:-}" ]; then
  SKIP_BUILD=1
  SLUICE_BIN=$(cd "$(dirname "$SLUICE_BIN")" && pwd)/$(basename "$SLUICE_BIN")
else
  SLUICE_BIN=$repo/target/release/sluice
fi
if [ "$SKIP_BUILD" != 1 ]; then
  log "cargo build --release"
  cargo build --release --quiet --bin sluice || die "cargo build --release failed"
fi
[ -x "$SLUICE_BIN" ] || die "$SLUICE_BIN missing (cargo build --release)"

# --- MariaDB ----------------------------------------------------------------------------
mdir=$work/mariadb
mkdir -p "$mdir/tmp" # private tmpdir: nothing else in /tmp can touch its temp files
user_opt=()
[ "$(id -u)" -eq 0 ] && user_opt=(--user=root)
log "mariadb-install-db into $mdir"
TMPDIR=$mdir/tmp "$INSTALL_DB" --no-defaults "${user_opt[@]}" --auth-root-authentication-method=normal --skip-test-db \
  --innodb-log-file-size=64M --datadir="$mdir/data" >"$mdir/install.log" 2>&1 ||
  { cat "$mdir/install.log" >&2; die "mariadb-install-db failed"; }
# A plain standalone server (no binlog: the benchmark measures the proxy, not replication).
TMPDIR=$mdir/tmp "$MARIADBD" --no-defaults "${user_opt[@]}" --datadir="$mdir/data" --tmpdir="$mdir/tmp" \
  --socket="$mdir/mysql.sock" \
  --pid-file="$mdir/mysqld.pid" --log-error="$mdir/error.log" --port="$MPORT" \
  --bind-address=127.0.0.1 --skip-name-resolve --max-connections=$((IDLE_CONNS * 2 + 500)) \
  --max-connect-errors=1000000 --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
  --innodb-buffer-pool-size=512M --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=2 \
  --innodb-doublewrite=0 --innodb-use-native-aio=0 --innodb-buffer-pool-dump-at-shutdown=0 \
  --innodb-buffer-pool-load-at-startup=0 --thread-cache-size=256 --table-open-cache=4000 \
  --open-files-limit="$(ulimit -n)" </dev/null >"$mdir/stdout.log" 2>&1 &
MYSQLD_PID=$!
root_sql() { "$CLIENT" --no-defaults --protocol=socket --socket="$mdir/mysql.sock" --user=root -N -B -e "$1"; }
for ((i = 0; i < 300; i++)); do
  root_sql "SELECT 1" >/dev/null 2>&1 && break
  kill -0 "$MYSQLD_PID" 2>/dev/null || { tail -n 30 "$mdir/error.log" >&2; die "mariadbd exited during startup"; }
  sleep 0.1
done
root_sql "SELECT 1" >/dev/null || die "mariadbd not ready after 30 s"
# sbtest: the clients' account (direct, through HAProxy, and sluice's client user);
# sluicebe: sluice's backend account, so its server connections can be counted apart.
root_sql "CREATE USER 'sbtest'@'%' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO 'sbtest'@'%';
          CREATE USER 'sluicebe'@'%' IDENTIFIED BY 'sluicebe'; GRANT ALL ON *.* TO 'sluicebe'@'%';
          CREATE DATABASE sbtest;"
MARIADB_VERSION=$(root_sql "SELECT @@version")
log "mariadbd $MARIADB_VERSION on 127.0.0.1:$MPORT (pid $MYSQLD_PID)"

# --- HAProxy ----------------------------------------------------------------------------
cat >"$work/haproxy.cfg" <<EOF
global
    maxconn $((IDLE_CONNS * 2 + 1000))
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    maxconn $((IDLE_CONNS * 2 + 1000))
listen mysql
    bind 127.0.0.1:$HPORT
    server master 127.0.0.1:$MPORT
EOF
"$HAPROXY" -f "$work/haproxy.cfg" -D -p "$work/haproxy.pid" >"$work/haproxy.log" 2>&1 ||
  { cat "$work/haproxy.log" >&2; die "haproxy failed to start"; }
for ((i = 0; i < 50; i++)); do [ -s "$work/haproxy.pid" ] && break; sleep 0.1; done
HAPROXY_PID=$(head -n1 "$work/haproxy.pid")
log "haproxy $("$HAPROXY" -v | head -n1 | awk '{print $3}') on 127.0.0.1:$HPORT (pid $HAPROXY_PID)"

# --- sluice -----------------------------------------------------------------------------
SLUICE_POOL_MAX=${SLUICE_POOL_MAX:-$((IDLE_CONNS + 64))}
cat >"$work/sluice.yaml" <<EOF
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
  - { name: sbtest, password: sbtest }
groups:
  - name: main
    master: { addr: 127.0.0.1:$MPORT, user: sluicebe, password: sluicebe }
    replicas: []
EOF
"$SLUICE_BIN" check-config "$work/sluice.yaml" >/dev/null || die "generated sluice config is invalid"
"$SLUICE_BIN" serve --config "$work/sluice.yaml" </dev/null >"$work/sluice.log" 2>&1 &
SLUICE_PID=$!
for ((i = 0; i < 100; i++)); do
  (exec 3<>"/dev/tcp/127.0.0.1/$SPORT") 2>/dev/null && break
  kill -0 "$SLUICE_PID" 2>/dev/null || { cat "$work/sluice.log" >&2; die "sluice exited during startup"; }
  sleep 0.1
done
RSS_START=$(rss_kb "$SLUICE_PID")
log "sluice $("$SLUICE_BIN" --version | awk '{print $2}') on 127.0.0.1:$SPORT (pid $SLUICE_PID, RSS ${RSS_START} kB)"

port_of() { case $1 in direct) echo "$MPORT" ;; haproxy) echo "$HPORT" ;; sluice) echo "$SPORT" ;; esac; }

sb() { # test port threads time extra... (run)
  local test=$1 port=$2 threads=$3 time=$4
  shift 4
  "$SYSBENCH" "$test" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
    --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest --tables=1 \
    --table-size="$TABLE_SIZE" --threads="$threads" --time="$time" --report-interval=0 \
    "$@" run
}

# --- prepare ----------------------------------------------------------------------------
log "sysbench prepare: 1 table x $TABLE_SIZE rows (directly on the master)"
"$SYSBENCH" oltp_read_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$MPORT" \
  --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest --tables=1 \
  --table-size="$TABLE_SIZE" prepare >"$work/prepare.log" 2>&1 || { cat "$work/prepare.log" >&2; die "prepare failed"; }
root_sql "ANALYZE TABLE sbtest.sbtest1; SELECT COUNT(*) FROM sbtest.sbtest1" >/dev/null

mkdir -p "$work/runs"
results=$work/results.tsv   # kind round test ps target qps p95_ms p50_ms errors
: >"$results"

# One run; appends a line to $results. Fails the benchmark on any sysbench error.
run_one() { # kind round test ps target threads time percentile
  local kind=$1 round=$2 test=$3 ps=$4 target=$5 threads=$6 time=$7 pct=$8 out
  out=$work/runs/$kind-r$round-$test-$ps-$target.txt
  if ! sb "$test" "$(port_of "$target")" "$threads" "$time" --db-ps-mode="$ps" \
    --percentile="$pct" --histogram=on >"$out" 2>&1; then
    tail -n 30 "$out" >&2
    die "sysbench $test ($target, ps-mode=$ps) failed: see $out"
  fi
  "$PY" - "$out" "$kind" "$round" "$test" "$ps" "$target" "$pct" >>"$results" <<'PYEOF'
import re, sys
path, kind, rnd, test, ps, target, pct = sys.argv[1:]
text = open(path).read()
def num(pattern):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit("cannot find %r in %s" % (pattern, path))
    return float(m.group(1))
qps = num(r"^\s+queries:\s+\d+\s+\(([\d.]+) per sec\.\)")
pctl = num(r"^\s+%s(?:th)? percentile:\s+([\d.]+)" % pct)
errors = num(r"^\s+ignored errors:\s+(\d+)") + num(r"^\s+reconnects:\s+(\d+)")
# p50 from the histogram (sysbench prints percentiles rounded to 10 us; the histogram
# buckets are ~1.7% wide).
buckets = [(float(v), int(c)) for v, c in re.findall(r"^\s+([\d.]+) \|[* ]*\s(\d+)$", text, re.M)]
total = sum(c for _, c in buckets)
acc, p50 = 0, float("nan")
for v, c in buckets:
    acc += c
    if acc * 2 >= total:
        p50 = v
        break
print("\t".join([kind, rnd, test, ps, target, "%.2f" % qps, "%.3f" % pctl, "%.4f" % p50, "%d" % errors]))
PYEOF
  local errs
  errs=$(tail -n1 "$results" | cut -f9)
  [ "$errs" = 0 ] || die "sysbench reported $errs ignored errors/reconnects for $target: see $out"
  log "$(tail -n1 "$results" | awk -F'\t' '{printf "%-10s r%s %-18s ps=%-7s %-7s QPS %9.0f  p%s %6.2f ms  p50(hist) %.3f ms", $1, $2, $3, $4, $5, $6, "'"$pct"'", $7, $8}')"
}

# Targets in a different order each round (no target always runs first/last).
rotated() { # round
  local r=$1 n=${#TARGETS[@]} i
  for ((i = 0; i < n; i++)); do echo "${TARGETS[$(((i + r) % n))]}"; done
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
      for target in $(rotated "$r"); do
        run_one tput "$r" "$test" "$ps" "$target" "$THREADS" "$TIME" 95
      done
    done
  done
  for target in $(rotated "$r"); do
    run_one lat1 "$r" oltp_point_select disable "$target" 1 "$LAT_TIME" 50
  done
done
RSS_AFTER_RUNS=$(rss_kb "$SLUICE_PID")

# --- RSS with IDLE_CONNS idle client connections ----------------------------------------
# MariaDB connections of a target's account: sluice logs in as sluicebe; HAProxy
# forwards the clients' own logins (sbtest).
server_conns() { # target
  local u=sbtest
  [ "$1" = sluice ] && u=sluicebe
  root_sql "SELECT COUNT(*) FROM information_schema.processlist WHERE user = '$u'"
}

# Opens N logged-in PyMySQL connections, prints "ready K SECS [FAILED: error]" (K < N
# if a connection failed; the K that worked are held anyway so their memory can still
# be measured) and holds them until its stdin closes.
# (The script is passed with -c: python's stdin must stay the fifo, not a heredoc.)
HOLD_PY=$(
  cat <<'PYEOF'
import sys, time, pymysql, resource
port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 100)), hard))
conns, t0, failure = [], time.monotonic(), ""
try:
    for i in range(n):
        conns.append(pymysql.connect(host="127.0.0.1", port=port, user="sbtest", password="sbtest",
                                     database="sbtest", connect_timeout=30))
    c = conns[-1].cursor()
    c.execute("SELECT COUNT(*) FROM sbtest1")  # the last one really works
    c.fetchall()
except Exception as e:
    failure = " FAILED: %s" % (e,)
print("ready %d %.2f%s" % (len(conns), time.monotonic() - t0, failure), flush=True)
sys.stdin.read()  # hold until the benchmark closes our stdin (or dies)
PYEOF
)
hold_conns() { # port n
  "$PY" -c "$HOLD_PY" "$1" "$2"
}

# Sets IR_BEFORE IR_AFTER (kB), IR_N (connections opened), IR_SECS (time to open
# them), IR_THREADS (the proxy's server connections before->while they are open), IR_ERR
# (why fewer than IDLE_CONNS, or empty). Not called in $(...): it starts a background
# holder whose PID the EXIT trap must know. Never fails the benchmark.
idle_rss() { # target pid-to-measure
  local target=$1 pid=$2 line fifo=$work/hold-$1.fifo out=$work/hold-$1.out hpid i threads_before
  IR_BEFORE=$(rss_kb "$pid") IR_AFTER="" IR_N=0 IR_SECS="" IR_THREADS="" IR_ERR=""
  threads_before=$(server_conns "$target")
  rm -f "$fifo" && mkfifo "$fifo"
  hold_conns "$(port_of "$target")" "$IDLE_CONNS" <"$fifo" >"$out" 2>&1 &
  hpid=$!
  HOLDER_PIDS+=("$hpid")
  exec 7>"$fifo" # the holder's stdin stays open until we close fd 7
  for ((i = 0; i < 6000; i++)); do
    grep -q '^ready' "$out" 2>/dev/null && break
    kill -0 "$hpid" 2>/dev/null || break
    sleep 0.1
  done
  line=$(grep '^ready' "$out" 2>/dev/null || true)
  if [ -n "$line" ]; then
    sleep 1
    IR_AFTER=$(rss_kb "$pid")
    IR_THREADS="$threads_before->$(server_conns "$target")"
    root_sql "SELECT user, command, COUNT(*) FROM information_schema.processlist GROUP BY 1, 2" \
      >"$work/processlist-$target.txt" 2>&1 || true
    IR_N=$(echo "$line" | awk '{print $2}')
    IR_SECS=$(echo "$line" | awk '{print $3}')
    IR_ERR=$(echo "$line" | sed -n 's/^ready [0-9]* [0-9.]* FAILED: //p')
  else
    IR_ERR="connection holder died: $(tail -n1 "$out")"
  fi
  exec 7>&- # release the connections
  stop_pid "$hpid" 10
  wait "$hpid" 2>/dev/null || true
  HOLDER_PIDS=()
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
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

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
echo "sluice benchmark  $(date -u +%Y-%m-%dT%H:%M:%SZ)  git $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo '+dirty')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(uname -r)"
echo "mariadb $MARIADB_VERSION | $("$HAPROXY" -v | head -n1 | cut -d' ' -f1-3) | $("$SYSBENCH" --version) | $("$SLUICE_BIN" --version)"
echo "load average at start: $LOAD_START, at end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes the numbers noisy)"
echo "sluice: log level warn, backend.pool_max $SLUICE_POOL_MAX; haproxy: mode tcp, defaults; mariadb: 512M buffer pool, no binlog"
echo "sysbench: 1 table x $TABLE_SIZE rows, $THREADS threads, ${TIME}s per run, $ROUNDS interleaved rounds"
echo "================================================================================"
"$PY" - "$results" "$THREADS" <<'PYEOF'
import sys, statistics
from collections import defaultdict
path, threads = sys.argv[1], sys.argv[2]
qps, p95, p50 = defaultdict(list), defaultdict(list), defaultdict(list)
order = []
for line in open(path):
    kind, rnd, test, ps, target, q, pc, h50, _ = line.rstrip("\n").split("\t")
    key = (kind, test, ps)
    if key not in order:
        order.append(key)
    qps[key + (target,)].append(float(q))
    p95[key + (target,)].append(float(pc))
    p50[key + (target,)].append(float(h50))
med = statistics.median

print("\nThroughput, %s threads: median over rounds (QPS; p95 latency in ms)" % threads)
hdr = "%-18s %-8s | %9s %7s | %9s %7s | %9s %7s | %13s %14s" % (
    "test", "ps-mode", "direct", "p95", "haproxy", "p95", "sluice", "p95", "sluice/direct", "sluice/haproxy")
print(hdr)
print("-" * len(hdr))
for kind, test, ps in order:
    if kind != "tput":
        continue
    k = (kind, test, ps)
    d, h, s = (med(qps[k + (t,)]) for t in ("direct", "haproxy", "sluice"))
    dp, hp, sp = (med(p95[k + (t,)]) for t in ("direct", "haproxy", "sluice"))
    print("%-18s %-8s | %9.0f %7.2f | %9.0f %7.2f | %9.0f %7.2f | %12.2fx %13.2fx" % (
        test, ps, d, dp, h, hp, s, sp, s / d, s / h))
spread = []
for kind, test, ps in order:
    if kind != "tput":
        continue
    for t in ("direct", "haproxy", "sluice"):
        v = qps[(kind, test, ps, t)]
        spread.append("%s/%s/%s %.0f..%.0f" % (test.replace("oltp_", ""), ps, t, min(v), max(v)))
print("\nQPS range over rounds (min..max): " + "; ".join(spread))

k = ("lat1", "oltp_point_select", "disable")
if k + ("direct",) in qps:
    print("\nLatency at 1 thread, oltp_point_select, ps-mode=disable (median over rounds)")
    print("%-8s %10s %12s %14s %16s" % ("target", "QPS", "p50 (ms)", "mean (us)", "added p50 (us)"))
    d50 = med(p50[k + ("direct",)])
    for t in ("direct", "haproxy", "sluice"):
        q = med(qps[k + (t,)])
        m50 = med(p50[k + (t,)])
        print("%-8s %10.0f %12.3f %14.1f %16s" % (
            t, q, m50, 1e6 / q, "-" if t == "direct" else "%+.1f" % ((m50 - d50) * 1000)))
    dm = 1e6 / med(qps[k + ("direct",)])
    print("added mean latency per query (from 1-thread QPS): haproxy %+.1f us, sluice %+.1f us" % (
        1e6 / med(qps[k + ("haproxy",)]) - dm, 1e6 / med(qps[k + ("sluice",)]) - dm))
PYEOF

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
echo "  ${extra}TIME=$TIME ROUNDS=$ROUNDS THREADS=$THREADS TABLE_SIZE=$TABLE_SIZE TESTS=\"$TESTS\" PS_MODES=\"$PS_MODES\" LAT_TIME=$LAT_TIME IDLE_CONNS=$IDLE_CONNS WARMUP=$WARMUP SLUICE_POOL_MAX=$SLUICE_POOL_MAX benches/sysbench.sh"
echo "(raw sysbench outputs: KEEP=1 keeps $work/runs/)"
