#!/usr/bin/env bash
# sluice multiplexing benchmark (issue 6): THREADS (1,000) sysbench clients running
# oltp_point_select directly against MariaDB, through HAProxy (TCP mode, a plain L4
# forwarder) and through sluice with backend.pool_max POOL_MAX (64); during each sluice run
# IDLE (4,000) more logged-in client connections are held open, idle, through sluice (so
# sluice serves 5,000 clients over at most POOL_MAX backend connections, while direct and
# HAProxy cost the server THREADS connections). Interleaved rounds (order rotated each
# round) after a warm-up. Per run: QPS, p50/p95/p99 latency, errors/reconnects, the
# server's connection counts sampled from a separate connection (Threads_connected,
# Threads_running, connections by account, and Max_used_connections after FLUSH STATUS);
# for sluice also its RSS (before the idle clients, with them, peak with all 5,000 open,
# at the end), its pool waits and errors (/metrics), and the warnings of its log.
# Target: sluice >= 1.0x direct QPS with a lower p99. See benches/README.md.
#
# Usage: benches/multiplex.sh        (about 3 x ROUNDS x (TIME + ~15) s + ~1 min of setup)
# Environment (defaults in brackets):
#   TIME        seconds per sysbench run                                  [20]
#   ROUNDS      interleaved rounds                                        [3]
#   THREADS     sysbench threads (client connections) per run             [1000]
#   IDLE        extra idle client connections through sluice during its runs [4000]
#   POOL_MAX    sluice's backend.pool_max                                 [64]
#   TABLE_SIZE  rows in sbtest1                                           [100000]
#   PS_MODE     sysbench --db-ps-mode: disable (text protocol) or auto    [disable]
#   WARMUP      seconds of warm-up per target before round 1 (0: none)   [5]
#   SAMPLE      seconds between samples of the server's status            [0.5]
#   IDLE_AUTOCOMMIT  the idle clients' PyMySQL autocommit argument: server (None: no
#               statement after the login) or off (PyMySQL's default: SET AUTOCOMMIT = 0,
#               which makes sluice keep a backend connection per session)  [server]
#   KEEP        1 = keep the work directory (logs, raw sysbench output)   [0]
#   SKIP_BUILD  1 = use target/release/sluice as is                       [0]
#   SLUICE_BIN  a sluice binary to benchmark instead of building target/release/sluice
# A failed run (sysbench error, e.g. sluice's 1040 after a pool wait > 5 s) is reported
# with its error and sluice's log lines, the other runs go on, and the script exits 1.
# Everything runs on 127.0.0.1 on free ports; everything started here is stopped (by
# PID) when the script exits, however it exits.
set -euo pipefail

BENCH=multiplex
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

TIME=${TIME:-20}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1000}
IDLE=${IDLE:-4000}
POOL_MAX=${POOL_MAX:-64}
TABLE_SIZE=${TABLE_SIZE:-100000}
PS_MODE=${PS_MODE:-disable}
WARMUP=${WARMUP:-5}
SAMPLE=${SAMPLE:-0.5}
IDLE_AUTOCOMMIT=${IDLE_AUTOCOMMIT:-server}
TARGETS=(direct haproxy sluice)
case "$PS_MODE" in disable | auto) ;; *) die "PS_MODE must be disable or auto" ;; esac

COMMAND="TIME=$TIME ROUNDS=$ROUNDS THREADS=$THREADS IDLE=$IDLE POOL_MAX=$POOL_MAX TABLE_SIZE=$TABLE_SIZE PS_MODE=$PS_MODE WARMUP=$WARMUP SAMPLE=$SAMPLE IDLE_AUTOCOMMIT=$IDLE_AUTOCOMMIT"
[ -n "${SLUICE_BIN:-}" ] && COMMAND="SLUICE_BIN=$SLUICE_BIN $COMMAND"
[ "$SKIP_BUILD" = 1 ] && COMMAND+=" SKIP_BUILD=1"
COMMAND+=" benches/multiplex.sh"

# --- tools, limits, work dir ------------------------------------------------------------
need_bin mariadbd mariadb-server >/dev/null
need_bin mariadb-install-db mariadb-server >/dev/null
need_bin mariadb mariadb-client >/dev/null
SYSBENCH=$(need_bin sysbench sysbench)
HAPROXY=$(need_bin haproxy haproxy)
CURL=$(need_bin curl curl)
need_pymysql
# sluice holds THREADS + IDLE client sockets (+ its pool), the holder IDLE.
raise_nofile $((THREADS + IDLE + POOL_MAX + 500)) "THREADS=$THREADS + IDLE=$IDLE"

bench_workdir
KEPT_HINT="logs: sluice.log, mariadb/error.log, haproxy.log; runs/: sysbench outputs, samples, /metrics"
mkdir -p "$work/runs"
read -r MPORT HPORT SPORT APORT <<<"$(free_ports 4)"
LOAD_START=$(loadavg)
UPTIME_START=$(uptime)

# --- servers ----------------------------------------------------------------------------
sluice_binary
# Direct and HAProxy runs cost the server THREADS connections (+ sluice's idle pool, the
# sampler, root); thread handling stays MariaDB's default (one thread per connection).
start_mariadb "$work/mariadb" "$MPORT" $((THREADS + POOL_MAX + 300))
start_haproxy "$work" "$HPORT" "$MPORT" $((THREADS * 2 + 1000))

cat >"$work/sluice.yaml" <<EOF
listen: 127.0.0.1:$SPORT
admin_listen: 127.0.0.1:$APORT
log:
  format: text
  level: warn
backend:
  multiplex: true
  pool_max: $POOL_MAX
# All clients come from 127.0.0.1 and THREADS of them log in at once: the
# per-address pre-auth cap (default 128) would refuse most with ERR 1040.
limits:
  max_unauthenticated: $((THREADS + IDLE + 100))
  max_unauthenticated_per_address: $((THREADS + IDLE + 100))
  handshake_timeout: 30s
users:
  - { name: sbtest, password: sbtest, backend: group }
groups:
  - name: main
    master: { addr: 127.0.0.1:$MPORT, user: sluicebe, password: sluicebe }
    replicas: []
EOF
start_sluice "$work/sluice.yaml" "$work/sluice.log" "$SPORT"
SLUICE_PID=$STARTED_PID
RSS_START=$(rss_kb "$SLUICE_PID")
log "sluice $(sluice_version) on 127.0.0.1:$SPORT (pid $SLUICE_PID, RSS $RSS_START kB, pool_max $POOL_MAX)"
SERVER_SETTINGS=$(root_sql "SELECT CONCAT('max_connections ', @@max_connections, ', thread_handling ', @@thread_handling,
  ', thread_pool_size ', @@thread_pool_size, ', thread_cache_size ', @@thread_cache_size,
  ', back_log ', @@back_log)")

sysbench_prepare "$MPORT" sbtest sbtest "$TABLE_SIZE" "$work/prepare.log"
root_sql "ANALYZE TABLE sbtest.sbtest1; SELECT COUNT(*) FROM sbtest.sbtest1" >/dev/null

port_of() { case $1 in direct) echo "$MPORT" ;; haproxy) echo "$HPORT" ;; sluice) echo "$SPORT" ;; esac; }
sb() { # port time extra...: oltp_point_select with THREADS threads
  local port=$1 time=$2
  shift 2
  "$SYSBENCH" oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" \
    --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest --tables=1 \
    --table-size="$TABLE_SIZE" --threads="$THREADS" --time="$time" --report-interval=0 \
    --db-ps-mode="$PS_MODE" "$@" run
}
metrics() { "$CURL" -sf --max-time 10 "http://127.0.0.1:$APORT/metrics" >"$1" || echo "# GET /metrics failed" >"$1"; }
sluice_alive() { kill -0 "$SLUICE_PID" 2>/dev/null; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; } # utime + stime
CLK_TCK=$(getconf CLK_TCK)

# --- helper (python): status sampler, per-run summary, report ---------------------------
cat >"$work/helper.py" <<'PYEOF'
import re, sys, time, statistics, urllib.request

def cmd_sample(sock, interval, rss_pid, aport):
    """Until killed, one line per sample: t, Threads_connected, Threads_running,
    connections of sbtest, of sluicebe, sluice VmRSS kB (0: not sampled), sluice's
    open client connections, its backend pool connections (open, in use): -1 if not read."""
    import pymysql
    db = pymysql.connect(unix_socket=sock, user="root", password="", autocommit=True)
    cur = db.cursor()
    rss_pid, aport, interval = int(rss_pid), int(aport), float(interval)
    t0 = time.monotonic()
    while True:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_connected', 'Threads_running')")
        st = dict(cur.fetchall())
        cur.execute("SELECT user, COUNT(*) FROM information_schema.processlist GROUP BY user")
        by_user = dict(cur.fetchall())
        rss, clients, pool, inuse = 0, -1, -1, -1
        if rss_pid:
            try:
                with open("/proc/%d/status" % rss_pid) as f:
                    rss = int(next(l for l in f if l.startswith("VmRSS:")).split()[1])
            except (OSError, StopIteration):
                rss = -1
        if aport:
            try:
                text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % aport, timeout=2).read().decode()
                m = metric_sums(text)
                clients = m.get("sluice_client_connections_open", -1)
                pool = m.get("sluice_backend_pool_connections", -1)
                inuse = m.get("sluice_backend_pool_connections_in_use", -1)
            except Exception:
                pass
        print("%.2f\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d" % (
            time.monotonic() - t0, st.get("Threads_connected", "-1"), st.get("Threads_running", "-1"),
            by_user.get("sbtest", 0), by_user.get("sluicebe", 0), rss, clients, pool, inuse), flush=True)
        time.sleep(interval)

def metric_sums(text):
    """{metric name: sum over its label sets} of a Prometheus text page."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_:][\w:]*)(?:\{[^}]*\})?\s+(\S+)", line)
        if m and not line.startswith("#"):
            try:
                out[m.group(1)] = out.get(m.group(1), 0) + float(m.group(2))
            except ValueError:
                pass
    return out

def cmd_samples(path):
    """Maxima of a sampler file: threads_connected threads_running sbtest sluicebe rss
    clients pool inuse (and the number of samples)."""
    rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    if not rows:
        print("\t".join(["-1"] * 8 + ["0"]))
        return
    mx = [max(int(float(r[i])) for r in rows) for i in range(1, 9)]
    print("\t".join(str(x) for x in mx) + "\t%d" % len(rows))

def cmd_delta(before, after):
    """pool_waits wait_seconds errors: deltas of sluice's counters between two pages."""
    a, b = metric_sums(open(before).read()), metric_sums(open(after).read())
    d = lambda k: b.get(k, 0) - a.get(k, 0)
    print("%d\t%.3f\t%d" % (d("sluice_backend_pool_waits_total"), d("sluice_backend_pool_wait_seconds_total"),
                            d("sluice_errors_total")))

def cmd_report(path, threads, idle):
    rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    cols = ("round target status qps p99s p50 p95 p99 ignored reconnects tconn trun sbtest sluicebe "
            "maxused rss_peak clients_peak pool_peak inuse_peak waits wait_s errors load cpu_db cpu_px").split()
    runs = [dict(zip(cols, r)) for r in rows]
    med = statistics.median
    f = lambda r, k: float(r[k])
    ok = [r for r in runs if r["status"] == "ok"]

    print("\nPer run (latency in ms: p99 as printed by sysbench, p50/p95 from its histogram; server "
          "connections: maxima sampled during the run, Max_used_connections since FLUSH STATUS at its start)")
    hdr = ("%-5s %-7s %9s %7s %7s %7s %5s | %9s %8s %7s %8s %8s | %6s %6s %6s %8s %6s | %s" % (
        "round", "target", "QPS", "p50", "p95", "p99", "err", "Thr_conn", "Max_used", "by app", "by sluice",
        "Thr_run", "pool", "in use", "waits", "avg wait", "errors", "load"))
    print(hdr)
    print("-" * len(hdr))
    for r in runs:
        if r["status"] != "ok":
            print("%-5s %-7s FAILED: %s" % (r["round"], r["target"], r["status"]))
            continue
        sl = r["target"] == "sluice"
        waits = int(r["waits"])
        print("%-5s %-7s %9.0f %7.2f %7.2f %7.2f %5d | %9s %8s %7s %8s %8s | %6s %6s %6s %8s %6s | %s" % (
            r["round"], r["target"], f(r, "qps"), f(r, "p50"), f(r, "p95"), f(r, "p99s"),
            int(r["ignored"]) + int(r["reconnects"]), r["tconn"], r["maxused"], r["sbtest"], r["sluicebe"],
            r["trun"], r["pool_peak"] if sl else "-", r["inuse_peak"] if sl else "-",
            waits if sl else "-", ("%.2fms" % (1000 * float(r["wait_s"]) / waits) if waits else "-") if sl else "-",
            r["errors"] if sl else "-", r["load"]))

    print("\nSummary: median over rounds (%s client threads; sluice with %s more idle clients open)" % (threads, idle))
    hdr = "%-8s %9s %8s %8s %8s %10s %10s %9s %9s  %s" % (
        "target", "QPS", "p50 ms", "p95 ms", "p99 ms", "Thr_conn", "Max_used", "CPU db", "CPU proxy", "QPS min..max")
    print(hdr)
    print("-" * len(hdr))
    for t in ("direct", "haproxy", "sluice"):
        rs = [r for r in ok if r["target"] == t]
        if not rs:
            print("%-8s   (no successful run)" % t)
            continue
        q = [f(r, "qps") for r in rs]
        px = med([f(r, "cpu_px") for r in rs])
        print("%-8s %9.0f %8.2f %8.2f %8.2f %10.0f %10.0f %9.1f %9s  %.0f..%.0f" % (
            t, med(q), med([f(r, "p50") for r in rs]), med([f(r, "p95") for r in rs]),
            med([f(r, "p99s") for r in rs]), med([f(r, "tconn") for r in rs]),
            med([f(r, "maxused") for r in rs]), med([f(r, "cpu_db") for r in rs]),
            "-" if px < 0 else "%.1f" % px, min(q), max(q)))
    print("(CPU db / CPU proxy: CPU time of mariadbd / of the proxy process per query, in us, over the run)")

    def ratios(other, key):
        out = []
        for rnd in sorted({r["round"] for r in ok}, key=int):
            s = [r for r in ok if r["round"] == rnd and r["target"] == "sluice"]
            o = [r for r in ok if r["round"] == rnd and r["target"] == other]
            if s and o and f(o[0], key):
                out.append(f(s[0], key) / f(o[0], key))
        return out
    print("\nsluice / other, per round (same round), and the median of those ratios:")
    for other in ("direct", "haproxy"):
        for key, name in (("qps", "QPS"), ("p99s", "p99")):
            v = ratios(other, key)
            print("  sluice/%-8s %-4s %s  median %s" % (
                other, name, " ".join("%.3f" % x for x in v) or "-", "%.3f" % med(v) if v else "-"))
    qv, pv = ratios("direct", "qps"), ratios("direct", "p99s")
    if qv and pv:
        qr, pr = med(qv), med(pv)
        print("target: sluice >= 1.0x direct QPS with a lower p99: %s (median per-round QPS ratio %.3f, p99 ratio %.3f)" % (
            "MET" if qr >= 1.0 and pr < 1.0 else "NOT MET", qr, pr))
    bad = [r for r in runs if r["status"] != "ok"]
    if bad:
        print("FAILED runs: %d (see below)" % len(bad))

if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
PYEOF
helper() { "$PY" "$work/helper.py" "$@"; }

results=$work/results.tsv # one line per run, columns as in cmd_report
sluicemem=$work/sluice-memory.tsv # round rss_before_idle rss_idle rss_peak rss_after_run rss_end idle_n idle_secs alive
: >"$results"
: >"$sluicemem"
FAILURES=()

# One measured run of TARGET in ROUND: sampler, sysbench, figures.
run_one() { # round target
  local round=$1 target=$2 out=$work/runs/r$1-$2 spid fig st rc qps p99s p50 p95 p99 ign rec smp mu dl load
  local rss_pid=0 aport=0 loglines proxy_pid="" c0_db c0_px=0 cpu_db cpu_px
  load=$(cut -d' ' -f1 /proc/loadavg)
  [ "$target" = sluice ] && rss_pid=$SLUICE_PID aport=$APORT proxy_pid=$SLUICE_PID
  [ "$target" = haproxy ] && proxy_pid=$HAPROXY_PID
  loglines=$(wc -l <"$work/sluice.log")
  root_sql "FLUSH STATUS" # Max_used_connections := the connections open now
  metrics "$out.metrics-before"
  helper sample "$MDIR/mysql.sock" "$SAMPLE" "$rss_pid" "$aport" >"$out.samples" 2>"$out.sampler-err" &
  spid=$!
  track_pid "$spid" 5
  st=ok rc=0
  c0_db=$(cpu_ticks "$MYSQLD_PID")
  [ -z "$proxy_pid" ] || c0_px=$(cpu_ticks "$proxy_pid")
  sb "$(port_of "$target")" "$TIME" --percentile=99 --histogram=on >"$out.txt" 2>&1 || rc=$?
  [ "$rc" = 0 ] || st="sysbench exit $rc: $(grep -m1 -iE 'FATAL|error' "$out.txt" | cut -c1-200)"
  cpu_db=$(($(cpu_ticks "$MYSQLD_PID") - c0_db))
  cpu_px=-1
  [ -z "$proxy_pid" ] || cpu_px=$(($(cpu_ticks "$proxy_pid") - c0_px))
  stop_pid "$spid" 5
  wait "$spid" 2>/dev/null || true
  untrack_pid "$spid"
  mu=$(root_sql "SHOW GLOBAL STATUS LIKE 'Max_used_connections'" | cut -f2)
  metrics "$out.metrics-after"
  dl=$(helper delta "$out.metrics-before" "$out.metrics-after")
  smp=$(helper samples "$out.samples")
  qps=0 p99s=0 p50=0 p95=0 p99=0 ign=0 rec=0
  if [ "$st" = ok ]; then
    if fig=$("$PY" "$repo/benches/sysbench_result.py" "$out.txt" 99 2>&1); then
      IFS=$'\t' read -r qps p99s p50 p95 p99 ign rec <<<"$fig"
      [ "$ign" = 0 ] && [ "$rec" = 0 ] || st="$ign ignored errors, $rec reconnects"
    else
      st="bad sysbench output: $fig"
    fi
  fi
  sluice_alive || st="sluice (pid $SLUICE_PID) is gone: $(tail -n 3 "$work/sluice.log" | tr '\n' ' ')"
  st=${st//$'\t'/ }
  if [ "$st" != ok ]; then
    FAILURES+=("round $round $target: $st")
    {
      echo "=== round $round, $target: $st"
      echo "--- sysbench ($out.txt), last lines:"
      tail -n 15 "$out.txt"
      echo "--- sluice.log, lines added during the run (first 30 of $(($(wc -l <"$work/sluice.log") - loglines))):"
      tail -n +"$((loglines + 1))" "$work/sluice.log" | head -n 30
    } >>"$work/failures.txt"
  fi
  tail -n +"$((loglines + 1))" "$work/sluice.log" >"$out.sluice-log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t' "$round" "$target" "$st" "$qps" "$p99s" "$p50" "$p95" "$p99" "$ign" "$rec" >>"$results"
  # tconn trun sbtest sluicebe (from the samples) maxused rss_peak clients pool inuse waits wait_s errors load
  IFS=$'\t' read -r s_tc s_tr s_sb s_sl s_rss s_cl s_pool s_inuse _n <<<"$smp"
  # and the CPU time per query (us) of MariaDB and of the proxy over the run (-1: none)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s_tc" "$s_tr" "$s_sb" "$s_sl" "$mu" "$s_rss" "$s_cl" \
    "$s_pool" "$s_inuse" "$dl" "$load" "$(awk -v db="$cpu_db" -v px="$cpu_px" -v hz="$CLK_TCK" -v q="$qps" -v t="$TIME" \
      'BEGIN { n = q * t; if (n <= 0) n = 1; printf "%.1f\t%.1f", db / hz * 1e6 / n, px < 0 ? -1 : px / hz * 1e6 / n }')" >>"$results"
  RUN_RSS_PEAK=$s_rss
  log "$(printf 'r%s %-7s QPS %8.0f p95 %7.2f p99 %7.2f ms | Threads_connected max %s, Max_used %s (app %s, sluice %s)%s' \
    "$round" "$target" "$qps" "$p95" "$p99s" "$s_tc" "$mu" "$s_sb" "$s_sl" "$([ "$st" = ok ] || echo " FAILED: $st")")"
}

# A sluice run: IDLE idle clients opened first and held through the run.
run_sluice() { # round
  local round=$1 before idle after end alive
  before=$(rss_kb "$SLUICE_PID")
  log "r$round sluice: opening $IDLE idle client connections"
  hold_start "$SPORT" "$IDLE" --workers 8 --autocommit "$IDLE_AUTOCOMMIT"
  if ! hold_ready || [ -n "$HOLD_ERR" ]; then
    FAILURES+=("round $round: only $HOLD_N of $IDLE idle connections opened: $HOLD_ERR")
    { echo "=== round $round, idle clients: only $HOLD_N of $IDLE opened: $HOLD_ERR"; tail -n 30 "$work/sluice.log"; } >>"$work/failures.txt"
  fi
  sleep 1
  idle=$(rss_kb "$SLUICE_PID")
  log "r$round sluice: $HOLD_N idle clients open in ${HOLD_SECS}s; RSS $(mib "$before") -> $(mib "$idle"); $(root_sql "SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'sluicebe'") backend connections"
  run_one "$round" sluice
  after=$(rss_kb "$SLUICE_PID")
  hold_check
  alive=${HOLD_ALIVE:-"?"}
  [[ $alive == "$HOLD_N of $HOLD_N" ]] || FAILURES+=("round $round: idle clients after the run: alive $alive")
  hold_stop
  sleep 2
  end=$(rss_kb "$SLUICE_PID")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$before" "$idle" "$RUN_RSS_PEAK" "$after" "$end" \
    "$HOLD_N" "$HOLD_SECS" "$alive" >>"$sluicemem"
}

# --- warm-up and rounds -----------------------------------------------------------------
if [ "$WARMUP" -gt 0 ]; then
  log "warm-up: ${WARMUP}s per target, $THREADS threads"
  for target in "${TARGETS[@]}"; do
    sb "$(port_of "$target")" "$WARMUP" >"$work/runs/warmup-$target.txt" 2>&1 ||
      { tail -n 30 "$work/runs/warmup-$target.txt" >&2; die "warm-up through $target failed"; }
  done
fi
RSS_WARM=$(rss_kb "$SLUICE_PID")
for ((r = 1; r <= ROUNDS; r++)); do
  for target in $(rotated $((r - 1)) "${TARGETS[@]}"); do
    sluice_alive || die "sluice (pid $SLUICE_PID) exited: $(tail -n 20 "$work/sluice.log")"
    if [ "$target" = sluice ]; then run_sluice "$r"; else run_one "$r" "$target"; fi
  done
done
RSS_FINAL=$(rss_kb "$SLUICE_PID")
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$SLUICE_PID/status" 2>/dev/null || echo 0)

# --- report -----------------------------------------------------------------------------
echo
echo "================================================================================"
report_title "sluice multiplexing benchmark"
echo "mariadb $MARIADB_VERSION | HAProxy $HAPROXY_VERSION | $("$SYSBENCH" --version) | $("$SLUICE_BIN" --version)"
echo "uptime at start: $UPTIME_START"
echo "uptime at end:   $(uptime)"
echo "(other work on the machine makes the numbers noisy: compare the per-round ratios)"
echo "mariadb: $SERVER_SETTINGS; 512M buffer pool, no binlog"
echo "sluice: backend.multiplex true, backend.pool_max $POOL_MAX, log level warn; haproxy: mode tcp, maxconn $((THREADS * 2 + 1000))"
echo "sysbench oltp_point_select --db-ps-mode=$PS_MODE: 1 table x $TABLE_SIZE rows, $THREADS threads, ${TIME}s per run,"
echo "  $ROUNDS interleaved rounds (order rotated), ${WARMUP}s warm-up per target; $IDLE idle clients through sluice during its runs (PyMySQL, autocommit=$IDLE_AUTOCOMMIT)"
echo "================================================================================"
helper report "$results" "$THREADS" "$IDLE"
echo
echo "sluice memory (VmRSS) and idle clients, per round:"
printf '  %-5s %14s %16s %22s %14s %16s %s\n' round "before idle" "with $IDLE idle" "peak, $((THREADS + IDLE)) clients" "after run" "idle closed" "idle clients: opened in / alive after the run"
while IFS=$'\t' read -r rnd b i p a e n secs alive; do
  printf '  %-5s %14s %16s %22s %14s %16s %s\n' "$rnd" "$(mib "$b")" "$(mib "$i")" "$(mib "$p")" "$(mib "$a")" "$(mib "$e")" "$n in ${secs}s / $alive"
done <"$sluicemem"
echo "  sluice at start $(mib "$RSS_START"), after warm-up $(mib "$RSS_WARM"), at the end $(mib "$RSS_FINAL"), peak (VmHWM) $(mib "$HWM")"
echo "  per idle client: $(awk -F'\t' '$7 > 0 { s += ($3 - $2) / $7; n++ } END { if (n) printf "%.1f KiB", s / n; else print "-" }' "$sluicemem") (RSS with idle clients - before, / clients)"
warns=$(grep -c -E ' (WARN|ERROR) ' "$work/sluice.log" || true)
echo
echo "sluice log: $warns WARN/ERROR lines in all$([ "$warns" = 0 ] || echo "; most frequent messages:")"
if [ "$warns" != 0 ]; then
  grep -E ' (WARN|ERROR) ' "$work/sluice.log" | sed -E 's/^[^ ]+ +//; s/[0-9]+/N/g' | cut -c1-160 | sort | uniq -c | sort -rn | head -n 8 | sed 's/^/  /'
fi
if [ ${#FAILURES[@]} -gt 0 ]; then
  echo
  echo "FAILURES (${#FAILURES[@]}):"
  printf '  %s\n' "${FAILURES[@]}"
  echo "details (sysbench output, sluice log lines of the failed runs):"
  sed 's/^/  /' "$work/failures.txt" 2>/dev/null || true
fi
echo
echo "Reproduce with:"
echo "  $COMMAND"
echo "(raw outputs: KEEP=1 keeps $work/runs/)"
[ ${#FAILURES[@]} -eq 0 ] || exit 1
