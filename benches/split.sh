#!/usr/bin/env bash
# sluice read/write-split benchmark (issue 3, "Speed (benchmark)" and "Contention"), in
# one run against a local MariaDB master + replica (scripts/cluster, GTID replication):
#
#   1. sysbench oltp_read_only through sluice in each freshness mode (three sluice
#      processes, one per mode, started up front against the same cluster, triggers
#      installed on sbtest): QPS as a ratio vs `off`, and the replica share of the reads
#      (from the delta of sluice_routed_statements_total over each run).
#   2. Trigger write overhead: sysbench oltp_write_only and oltp_insert directly against
#      the master with sluice's triggers installed vs not installed (uninstall/install
#      between interleaved rounds, checked with `sluice triggers status`). Target >= 0.85
#      (issue 11). With PREV_BIN, a third variant in the same rounds: the triggers that
#      binary (an earlier sluice) installs, so that the trigger bodies of two versions are
#      compared in one run.
#   3. Replica lag in ms while the replica is caught up: sluice's lag metric from
#      /metrics (any metric whose name contains "lag"), sampled while idle and while
#      oltp_read_write runs through sluice (causal); plus an external figure measured
#      with MASTER_GTID_WAIT, which does not depend on sluice.
#
# Variants are interleaved in rounds (order rotated each round) and medians reported:
# on a 2-core machine client, proxy, master and replica share the CPUs and runs are noisy.
# See benches/README.md.
#
# Usage: benches/split.sh               (about 30 x TIME s of runs + ~1-2 min of setup)
# Environment (defaults in brackets):
#   TIME         seconds per sysbench run                           [10]
#   ROUNDS       interleaved rounds                                 [3]
#   THREADS      sysbench threads                                   [8]
#   TABLE_SIZE   rows in sbtest1 (1 table)                          [100000]
#   PS_MODES     --db-ps-mode values for oltp_read_only             ["disable auto"]
#   MODES        sluice freshness modes (off is the baseline)       ["off causal strict"]
#   SKIP_TRX     oltp_read_only --skip_trx (on: autocommit reads, eligible for a replica;
#                off: sysbench's BEGIN..COMMIT around every event, which pins every read
#                to the master in every mode)                       [on]
#   WRITE_TESTS  tests of the trigger overhead                      ["oltp_write_only oltp_insert"]
#   LAG_SAMPLES  lag samples while idle and while under load        [10]
#   LAG_INTERVAL seconds between lag samples                        [0.5]
#   WARMUP       seconds of warm-up per sluice before round 1       [3]
#   KEEP         1 = keep the work directory (logs, raw outputs)    [0]
#   SKIP_BUILD   1 = use target/release/sluice as is                [0]
#   SLUICE_BIN   a sluice binary to use instead of building target/release/sluice
#   PREV_BIN     an earlier sluice binary: part 2 also measures the triggers it installs []
# Everything listens on 127.0.0.1 on free ports; everything started here (cluster,
# sluices, sysbench, samplers) is stopped by PID when the script exits, however it exits.
set -euo pipefail

BENCH=split
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

TIME=${TIME:-10}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-8}
TABLE_SIZE=${TABLE_SIZE:-100000}
PS_MODES=${PS_MODES:-"disable auto"}
MODES=${MODES:-"off causal strict"}
SKIP_TRX=${SKIP_TRX:-on}
WRITE_TESTS=${WRITE_TESTS:-"oltp_write_only oltp_insert"}
LAG_SAMPLES=${LAG_SAMPLES:-10}
LAG_INTERVAL=${LAG_INTERVAL:-0.5}
WARMUP=${WARMUP:-3}
read -r -a MODE_LIST <<<"$MODES"

case " $MODES " in *" off "*) ;; *) die "MODES must include off (the baseline)" ;; esac
case "$SKIP_TRX" in on | off) ;; *) die "SKIP_TRX must be on or off" ;; esac

# --- tools -------------------------------------------------------------------------------
need_bin mariadbd mariadb-server >/dev/null
CLIENT=$(need_bin mariadb mariadb-client)
SYSBENCH=$(need_bin sysbench sysbench)
CURL=$(need_bin curl curl)
need_pymysql

# --- work dir and cleanup ---------------------------------------------------------------
bench_workdir
KEPT_HINT="logs: sluice-*.log, cluster/*/error.log, runs/"
cluster_dir=$work/cluster
declare -A SLUICE_PID=()
# Stops exactly the servers of our own cluster directory (by their pid files), after the
# sluices and background processes.
stop_cluster() {
  "$repo/scripts/cluster" stop "$cluster_dir" >"$work/cluster-stop.log" 2>&1 || cat "$work/cluster-stop.log" >&2
}

read -r -a PORTS <<<"$(free_ports $((2 + 2 * ${#MODE_LIST[@]})))"
MPORT=${PORTS[0]} RPORT=${PORTS[1]}
declare -A SPORT=() APORT=()
i=2
for m in "${MODE_LIST[@]}"; do
  SPORT[$m]=${PORTS[$i]} APORT[$m]=${PORTS[$((i + 1))]}
  i=$((i + 2))
done

LOAD_START=$(loadavg)

# --- helper (python): sysbench parsing, metric deltas, lag sampling, report -------------
cat >"$work/helper.py" <<'PYEOF'
import re, sys, json, time, statistics

def parse_metrics(path):
    """{(name, labels-string): value} of a Prometheus text file."""
    out = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m:
            try:
                out[(m.group(1), m.group(2) or "")] = float(m.group(3))
            except ValueError:
                pass
    return out

def labels(s):
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', s))

def cmd_sysbench(path, allow_errors):
    """qps p95 errors_per_s tps (benches/sysbench_result.py reads them)"""
    import sysbench_result
    f = sysbench_result.figures(path, "95")
    qps, tps, p95, errs, reconnects = f["qps"], f["tps"], f["pctl"], f["ignored_per_sec"], f["reconnects"]
    if reconnects or (errs and allow_errors != "1"):
        sys.exit("sysbench reported %s ignored errors/s and %d reconnects: %s" % (errs, reconnects, path))
    print("%.2f\t%.3f\t%.3f\t%.2f" % (qps, p95, errs, tps))

def cmd_routed(before, after):
    """replica master reasons-json: delta of sluice_routed_statements_total"""
    a, b = parse_metrics(before), parse_metrics(after)
    rep = mas = 0.0
    reasons = {}
    for (name, ls), v in b.items():
        if name != "sluice_routed_statements_total":
            continue
        d = v - a.get((name, ls), 0.0)
        if d <= 0:
            continue
        l = labels(ls)
        if l.get("destination") == "replica":
            rep += d
        else:
            mas += d
            reasons[l.get("reason", "?")] = reasons.get(l.get("reason", "?"), 0) + d
    print("%d\t%d\t%s" % (rep, mas, json.dumps(reasons, sort_keys=True, separators=(",", ":"))))

def lag_series(path):
    """[(series, value, unit)] of every metric whose name contains 'lag'."""
    out = []
    for (name, ls), v in sorted(parse_metrics(path).items()):
        if "lag" not in name or re.search(r"_(bucket|count|sum|created)$", name):
            continue
        if "second" in name:
            out.append((name + ls, v * 1000.0, "ms"))
        elif re.search(r"(_ms|millis)", name):
            out.append((name + ls, v, "ms"))
        else:
            out.append((name + ls, v, "raw"))
    return out

def cmd_lagmetric(path, phase):
    for s, v, u in lag_series(path):
        print("%s\t%s\t%.3f\t%s" % (phase, s, v, u))

def cmd_gtidlag(mport, rport, n, interval, phase):
    """Time for the replica to reach the master's GTID position of the moment: sample
    t0, read @@gtid_binlog_pos on the master, MASTER_GTID_WAIT(pos) on the replica, t1.
    t1 - t0 is an upper bound of the lag at t0 (it includes two round trips)."""
    import pymysql
    kw = dict(host="127.0.0.1", user="sluice", password="sluice", autocommit=True)
    m = pymysql.connect(port=int(mport), **kw).cursor()
    r = pymysql.connect(port=int(rport), **kw).cursor()
    for _ in range(int(n)):
        t0 = time.perf_counter()
        m.execute("SELECT @@GLOBAL.gtid_binlog_pos")
        pos = m.fetchone()[0]
        r.execute("SELECT MASTER_GTID_WAIT(%s, 30)", (pos,))
        res = r.fetchone()[0]
        t1 = time.perf_counter()
        if res != 0:
            sys.exit("MASTER_GTID_WAIT(%s) timed out" % pos)
        print("%s\t%.3f" % (phase, (t1 - t0) * 1000.0), flush=True)
        time.sleep(float(interval))

def med(v):
    return statistics.median(v) if v else float("nan")

def cmd_report(work, threads, skip_trx, modes, lag_samples, lag_interval):
    modes = modes.split()
    rows = [l.rstrip("\n").split("\t") for l in open(work + "/results.tsv") if l.strip()]
    # kind round test ps variant qps p95 errs tps replica master reasons
    def sel(kind, test=None, ps=None, variant=None):
        return [r for r in rows if r[0] == kind and (test is None or r[2] == test)
                and (ps is None or r[3] == ps) and (variant is None or r[4] == variant)]
    def share(rs):
        rep = sum(float(r[9]) for r in rs)
        tot = rep + sum(float(r[10]) for r in rs)
        return (100.0 * rep / tot) if tot else float("nan"), tot
    def master_reasons(rs):
        agg = {}
        for r in rs:
            for k, v in json.loads(r[11]).items():
                agg[k] = agg.get(k, 0) + v
        tot = sum(float(r[9]) + float(r[10]) for r in rs)
        return ", ".join("%s %.1f%%" % (k, 100.0 * v / tot) for k, v in
                         sorted(agg.items(), key=lambda kv: -kv[1]) if tot) or "-"

    print("\n1. oltp_read_only through sluice, %s threads, --skip_trx=%s: median over rounds"
          % (threads, skip_trx))
    hdr = "%-8s %-7s | %9s %8s | %7s %-21s | %8s | %s" % (
        "ps-mode", "mode", "QPS", "p95 ms", "vs off", "(per-round ratios)", "replica", "reads on the master (share of all statements, by reason)")
    print(hdr)
    print("-" * len(hdr))
    pss = []
    for r in rows:
        if r[0] == "ro" and r[3] not in pss:
            pss.append(r[3])
    for ps in pss:
        base = {r[1]: float(r[5]) for r in sel("ro", ps=ps, variant="off")}
        bmed = med(list(base.values()))
        for mode in modes:
            rs = sel("ro", ps=ps, variant=mode)
            q = med([float(r[5]) for r in rs])
            p = med([float(r[6]) for r in rs])
            ratios = [float(r[5]) / base[r[1]] for r in rs if r[1] in base]
            sh, _ = share(rs)
            print("%-8s %-7s | %9.0f %8.2f | %6.3fx %-21s | %7.1f%% | %s" % (
                ps, mode, q, p, q / bmed, "(" + " ".join("%.3f" % x for x in ratios) + ")",
                sh, master_reasons(rs)))
    rng = []
    for ps in pss:
        for mode in modes:
            v = [float(r[5]) for r in sel("ro", ps=ps, variant=mode)]
            if v:
                rng.append("%s/%s %.0f..%.0f" % (ps, mode, min(v), max(v)))
    print("QPS range over rounds (min..max): " + "; ".join(rng))
    tx = sel("trxprobe")
    if tx:
        print("With sysbench's default BEGIN..COMMIT around each event (--skip_trx=off, warm-up, ps-mode=disable), "
              "replica share: " + ", ".join("%s %.1f%%" % (r[4], share([r])[0]) for r in tx)
              + " (reads inside an explicit transaction go to the master)")

    print("\n2. Trigger write overhead: sysbench directly against the master, %s threads: median over rounds" % threads)
    hdr = "%-16s | %10s %10s | %12s %-21s | %6s | %s" % (
        "test", "no trig QPS", "trig QPS", "with/without", "(per-round ratios)", ">=0.85",
        "p95 ms without/with; deadlock errors/s without/with")
    print(hdr)
    print("-" * len(hdr))
    tests = []
    for r in rows:
        if r[0] == "wr" and r[2] not in tests:
            tests.append(r[2])
    for t in tests:
        wo, wi = sel("wr", test=t, variant="without"), sel("wr", test=t, variant="with")
        qo, qi = med([float(r[5]) for r in wo]), med([float(r[5]) for r in wi])
        bo = {r[1]: float(r[5]) for r in wo}
        ratios = [float(r[5]) / bo[r[1]] for r in wi if r[1] in bo]
        print("%-16s | %11.0f %10.0f | %11.3fx %-21s | %6s | %.2f/%.2f; %.2f/%.2f" % (
            t, qo, qi, qi / qo, "(" + " ".join("%.3f" % x for x in ratios) + ")",
            "yes" if qi / qo >= 0.85 else "NO",
            med([float(r[6]) for r in wo]), med([float(r[6]) for r in wi]),
            med([float(r[7]) for r in wo]), med([float(r[7]) for r in wi])))
        wp = sel("wr", test=t, variant="prev")
        if wp:
            qp = med([float(r[5]) for r in wp])
            pr = [float(r[5]) / bo[r[1]] for r in wp if r[1] in bo]
            print("%-16s | %11s %10.0f | %11.3fx %-21s | %6s | (triggers of PREV_BIN)" % (
                "  prev", "", qp, qp / qo, "(" + " ".join("%.3f" % x for x in pr) + ")",
                "yes" if qp / qo >= 0.85 else "NO"))
    rng = []
    for t in tests:
        for v in ("without", "with", "prev"):
            q = [float(r[5]) for r in sel("wr", test=t, variant=v)]
            if q:
                rng.append("%s/%s %.0f..%.0f" % (t.replace("oltp_", ""), v, min(q), max(q)))
    print("QPS range over rounds (min..max): " + "; ".join(rng))

    print("\n3. Replica lag while the replica is caught up (%s samples every %ss per phase)" % (lag_samples, lag_interval))
    lm = [l.rstrip("\n").split("\t") for l in open(work + "/lag-metric.tsv") if l.strip()]
    rw = sel("rw")
    load_desc = "under oltp_read_write via causal"
    if rw:
        sh, _ = share(rw)
        load_desc += " (%.0f QPS, replica share %.1f%%)" % (float(rw[0][5]), sh)
    if not lm:
        print("  sluice /metrics: NO lag metric (no metric name contains 'lag'); sluice's probe-based lag "
              "estimate cannot be read from outside")
    else:
        series = []
        for ph, s, v, u in lm:
            if s not in series:
                series.append(s)
        print("  %-60s %-5s | %20s | %s" % ("sluice metric (causal instance)", "unit", "idle median / max", load_desc + ": median / max"))
        for s in series:
            u = [x[3] for x in lm if x[1] == s][0]
            cell = []
            for ph in ("idle", "load"):
                v = [float(x[2]) for x in lm if x[1] == s and x[0] == ph]
                cell.append("%8.1f / %8.1f" % (med(v), max(v)) if v else "-")
            print("  %-60s %-5s | %20s | %s" % (s, u, cell[0], cell[1]))
    gl = [l.rstrip("\n").split("\t") for l in open(work + "/lag-gtid.tsv") if l.strip()]
    cell = []
    for ph in ("idle", "load"):
        v = [float(x[1]) for x in gl if x[0] == ph]
        cell.append("median %.2f ms, max %.2f ms (n=%d)" % (med(v), max(v), len(v)) if v else "-")
    print("  external, MASTER_GTID_WAIT on the replica for the master's current gtid_binlog_pos (upper bound, incl. 2 round trips):")
    print("    idle: %s" % cell[0])
    print("    %s: %s" % (load_desc, cell[1]))

if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
PYEOF
helper() { PYTHONPATH=$repo/benches "$PY" "$work/helper.py" "$@"; }

# --- build sluice -----------------------------------------------------------------------
sluice_binary
"$SLUICE_BIN" triggers --help >/dev/null 2>&1 || die "$SLUICE_BIN has no 'triggers' subcommand (stale binary? cargo build --release)"

# --- cluster ----------------------------------------------------------------------------
log "scripts/cluster start $cluster_dir (master 127.0.0.1:$MPORT, replica 127.0.0.1:$RPORT)"
CLEANUP_HOOKS+=(stop_cluster)
MASTER_PORT=$MPORT REPLICA_PORT=$RPORT REPLICA_PORTS="" CLUSTER_DB=sbtest \
  "$repo/scripts/cluster" start "$cluster_dir" >"$work/cluster-start.log" 2>&1 ||
  { cat "$work/cluster-start.log" >&2; die "scripts/cluster start failed"; }
msql() { "$CLIENT" --no-defaults -h127.0.0.1 -P"$MPORT" -usluice -psluice -N -B -e "$1"; }
rsql() { "$CLIENT" --no-defaults -h127.0.0.1 -P"$RPORT" -usluice -psluice -N -B -e "$1"; }
MARIADB_VERSION=$(msql "SELECT @@version")

# Wait until the replica has applied everything the master has (between runs, so that a
# run does not pay for the previous run's replication backlog).
catch_up() {
  local pos r
  pos=$(msql "SELECT @@GLOBAL.gtid_binlog_pos")
  r=$(rsql "SELECT MASTER_GTID_WAIT('$pos', 300)")
  [ "$r" = 0 ] || die "replica did not catch up with the master (gtid $pos) in 300 s"
}

sysbench_prepare "$MPORT" sluice sluice "$TABLE_SIZE" "$work/prepare.log"
msql "ANALYZE TABLE sbtest.sbtest1" >/dev/null
catch_up
rsql "SELECT COUNT(*) FROM sbtest.sbtest1" >/dev/null

# --- sluice configs, triggers, three sluices --------------------------------------------
for m in "${MODE_LIST[@]}"; do
  cat >"$work/sluice-$m.yaml" <<EOF
listen: 127.0.0.1:${SPORT[$m]}
admin_listen: 127.0.0.1:${APORT[$m]}
log:
  format: text
  level: warn
freshness:
  mode: $m
  # Part 2 uninstalls and installs the triggers between rounds: a running sluice must
  # not put them back (the default, on when the account may create triggers, would).
  auto_install: false
users:
  - { name: sbtest, password: sbtest, backend: group }
groups:
  - name: main
    master: { addr: 127.0.0.1:$MPORT, user: sluice, password: sluice }
    replicas:
      - { addr: 127.0.0.1:$RPORT, user: sluice, password: sluice }
EOF
  "$SLUICE_BIN" check-config "$work/sluice-$m.yaml" >/dev/null || die "generated config sluice-$m.yaml is invalid"
done
TCONF=$work/sluice-${MODE_LIST[0]}.yaml # for `sluice triggers` (master + freshness settings)

# Installed (1), installed by PREV_BIN (p) or not (0)? Verified from `sluice triggers
# status`, not assumed.
set_triggers() { # 1|p|0
  local want=$1 out tables tracked without action bin=$SLUICE_BIN
  action=$([ "$want" = 0 ] && echo uninstall || echo install)
  if [ "$want" = p ]; then
    # An earlier sluice does not know this one's trigger bodies (it would refuse to
    # replace them): remove them first.
    "$SLUICE_BIN" triggers uninstall --schema sbtest --config "$TCONF" >>"$work/triggers.log" 2>&1 ||
      { tail -n 20 "$work/triggers.log" >&2; die "sluice triggers uninstall failed"; }
    bin=$PREV_BIN want=1
  fi
  "$bin" triggers "$action" --schema sbtest --config "$TCONF" >>"$work/triggers.log" 2>&1 ||
    { tail -n 20 "$work/triggers.log" >&2; die "$bin triggers $action failed"; }
  out=$("$bin" triggers status --schema sbtest --config "$TCONF" 2>&1) ||
    { echo "$out" >&2; die "sluice triggers status failed"; }
  echo "$out" >>"$work/triggers.log"
  tables="" tracked="" without=""
  read -r tables tracked without < <(echo "$out" |
    sed -n 's/^schema .*: \([0-9]*\) base tables, \([0-9]*\) tracked, \([0-9]*\) without sluice triggers.*/\1 \2 \3/p') || true
  [ -n "${tables:-}" ] || { echo "$out" >&2; die "cannot parse 'sluice triggers status'"; }
  if [ "$want" = 1 ]; then
    [ "$tables" -ge 1 ] && [ "$tracked" = "$tables" ] || { echo "$out" >&2; die "triggers not installed on every table"; }
  else
    [ "$tracked" = 0 ] && [ "$without" = "$tables" ] || { echo "$out" >&2; die "sluice triggers still present after uninstall"; }
  fi
}
log "sluice triggers install --schema sbtest"
set_triggers 1
catch_up

for m in "${MODE_LIST[@]}"; do
  start_sluice "$work/sluice-$m.yaml" "$work/sluice-$m.log" "${SPORT[$m]}"
  SLUICE_PID[$m]=$STARTED_PID
  log "sluice $m on 127.0.0.1:${SPORT[$m]}, metrics on ${APORT[$m]} (pid ${SLUICE_PID[$m]})"
done
sleep 1 # a few probe rounds: replicas healthy (rise), tracked tables known

metrics() { "$CURL" -sf "http://127.0.0.1:${APORT[$1]}/metrics" >"$2" || die "GET /metrics of sluice $1 failed"; }

# The sysbench command line, in SB_CMD (so that it can also be started in the
# background with its own PID in $!).
sb_cmd() { # test port user threads time extra...
  local test=$1 port=$2 user=$3 threads=$4 time=$5
  shift 5
  SB_CMD=("$SYSBENCH" "$test" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port"
    --mysql-user="$user" --mysql-password="$user" --mysql-db=sbtest --tables=1
    --table-size="$TABLE_SIZE" --threads="$threads" --time="$time" --report-interval=0
    --percentile=95 "$@" run)
}
sb() { sb_cmd "$@"; "${SB_CMD[@]}"; }

mkdir -p "$work/runs"
results=$work/results.tsv # kind round test ps variant qps p95 errs/s tps replica master reasons
: >"$results"

# A run through sluice (mode $5): sysbench + delta of the routing counters.
run_sluice() { # kind round test ps mode time extra...
  local out=$work/runs/$1-r$2-$3-$4-$5
  catch_up
  metrics "$5" "$out.before"
  sb "$3" "${SPORT[$5]}" sbtest "$THREADS" "$6" --db-ps-mode="$4" "${@:7}" >"$out.txt" 2>&1 ||
    { tail -n 30 "$out.txt" >&2; die "sysbench $3 through sluice $5 (ps-mode=$4) failed: see $out.txt"; }
  record_sluice "$@"
}
# Appends the result of the run $out.txt (with $out.before) to $results.
record_sluice() { # kind round test ps mode ...
  local kind=$1 round=$2 test=$3 ps=$4 mode=$5 out=$work/runs/$1-r$2-$3-$4-$5 line routed
  metrics "$mode" "$out.after"
  # Deadlocks (ignored errors) are possible only with writes (oltp_read_write).
  line=$(helper sysbench "$out.txt" "$([ "$kind" = rw ] && echo 1 || echo 0)") || die "bad sysbench output: $out.txt"
  routed=$(helper routed "$out.before" "$out.after")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$round" "$test" "$ps" "$mode" "$line" "$routed" >>"$results"
  log "$(tail -n1 "$results" | awk -F'\t' '{ t = $10 + $11; printf "%-8s r%s %-15s ps=%-7s %-7s QPS %8.0f p95 %6.2f ms  replica %5.1f%%", $1, $2, $3, $4, $5, $6, $7, t ? 100 * $10 / t : 0 }')"
}

# --- 1. oltp_read_only through each mode ------------------------------------------------
if [ "$WARMUP" -gt 0 ]; then
  log "warm-up: ${WARMUP}s per sluice (and ${WARMUP}s with sysbench's BEGIN..COMMIT, to show where those reads go)"
  for m in "${MODE_LIST[@]}"; do
    sb oltp_read_only "${SPORT[$m]}" sbtest "$THREADS" "$WARMUP" --skip_trx="$SKIP_TRX" >"$work/runs/warmup-$m.txt" 2>&1 ||
      { tail -n 30 "$work/runs/warmup-$m.txt" >&2; die "warm-up through sluice $m failed"; }
    run_sluice trxprobe 0 oltp_read_only disable "$m" "$WARMUP" --skip_trx=off
  done
fi
for ((r = 1; r <= ROUNDS; r++)); do
  for ps in $PS_MODES; do
    for m in $(rotated "$r" "${MODE_LIST[@]}"); do
      run_sluice ro "$r" oltp_read_only "$ps" "$m" "$TIME" --skip_trx="$SKIP_TRX"
    done
  done
done

# --- 3. lag while caught up: idle, then under oltp_read_write through causal ------------
LAG_MODE=causal
case " $MODES " in *" causal "*) ;; *) LAG_MODE=${MODE_LIST[0]} ;; esac
: >"$work/lag-metric.tsv"
: >"$work/lag-gtid.tsv"
metrics "$LAG_MODE" "$work/metrics-sample.txt"
grep -i lag "$work/metrics-sample.txt" >"$work/metrics-lag-lines.txt" || true
sample_lag() { # phase
  local phase=$1 i gpid
  "$PY" "$work/helper.py" gtidlag "$MPORT" "$RPORT" "$LAG_SAMPLES" "$LAG_INTERVAL" "$phase" \
    >>"$work/lag-gtid.tsv" 2>"$work/lag-gtid-$phase.err" &
  gpid=$!
  track_pid "$gpid" 5
  for ((i = 0; i < LAG_SAMPLES; i++)); do
    metrics "$LAG_MODE" "$work/lag-$phase-$i.txt"
    helper lagmetric "$work/lag-$phase-$i.txt" "$phase" >>"$work/lag-metric.tsv"
    sleep "$LAG_INTERVAL"
  done
  wait "$gpid" || { cat "$work/lag-gtid-$phase.err" >&2; die "GTID lag sampler failed"; }
  untrack_pid "$gpid"
}
catch_up
log "lag: $LAG_SAMPLES samples while idle"
sample_lag idle
RW_TIME=$(awk -v t="$TIME" -v n="$LAG_SAMPLES" -v i="$LAG_INTERVAL" 'BEGIN { x = int(n * i + 4); print (t > x ? t : x) }')
log "lag: $LAG_SAMPLES samples under oltp_read_write through sluice $LAG_MODE (${RW_TIME}s)"
rw_out=$work/runs/rw-r1-oltp_read_write-disable-$LAG_MODE
catch_up
metrics "$LAG_MODE" "$rw_out.before"
sb_cmd oltp_read_write "${SPORT[$LAG_MODE]}" sbtest "$THREADS" "$RW_TIME" --db-ps-mode=disable
"${SB_CMD[@]}" >"$rw_out.txt" 2>&1 &
rw_pid=$!
track_pid "$rw_pid" 5
sleep 2
sample_lag load
wait "$rw_pid" || { tail -n 30 "$rw_out.txt" >&2; die "sysbench oltp_read_write through sluice $LAG_MODE failed: see $rw_out.txt"; }
untrack_pid "$rw_pid"
record_sluice rw 1 oltp_read_write disable "$LAG_MODE"

# --- 2. trigger write overhead, directly against the master -----------------------------
WR_VARIANTS=(1 0)
[ -n "${PREV_BIN:-}" ] && WR_VARIANTS+=(p)
for ((r = 1; r <= ROUNDS; r++)); do
  for want in $(rotated "$((r - 1))" "${WR_VARIANTS[@]}"); do
    set_triggers "$want"
    case $want in 1) v=with ;; p) v=prev ;; *) v=without ;; esac
    for test in $WRITE_TESTS; do
      out=$work/runs/wr-r$r-$test-$v
      catch_up
      sb "$test" "$MPORT" sluice "$THREADS" "$TIME" >"$out.txt" 2>&1 ||
        { tail -n 30 "$out.txt" >&2; die "sysbench $test on the master ($v triggers) failed: see $out.txt"; }
      line=$(helper sysbench "$out.txt" 1) || die "bad sysbench output: $out.txt"
      printf 'wr\t%s\t%s\t-\t%s\t%s\t0\t0\t{}\n' "$r" "$test" "$v" "$line" >>"$results"
      log "$(tail -n1 "$results" | awk -F'\t' '{ printf "wr r%s %-16s %-7s triggers: QPS %8.0f p95 %6.2f ms  deadlocks %.2f/s", $2, $3, $5, $6, $7, $8 }')"
    done
  done
done
catch_up

# --- report -----------------------------------------------------------------------------
cmdline="TIME=$TIME ROUNDS=$ROUNDS THREADS=$THREADS TABLE_SIZE=$TABLE_SIZE PS_MODES=\"$PS_MODES\" MODES=\"$MODES\" SKIP_TRX=$SKIP_TRX WRITE_TESTS=\"$WRITE_TESTS\" LAG_SAMPLES=$LAG_SAMPLES LAG_INTERVAL=$LAG_INTERVAL WARMUP=$WARMUP"
[ "$SLUICE_BIN" != "$repo/target/release/sluice" ] && cmdline="SLUICE_BIN=$SLUICE_BIN $cmdline"
[ -n "${PREV_BIN:-}" ] && cmdline="PREV_BIN=$PREV_BIN $cmdline"
echo
echo "================================================================================"
report_title "sluice split benchmark"
echo "mariadb $MARIADB_VERSION (scripts/cluster: master + 1 GTID replica, 64M buffer pool) | $("$SYSBENCH" --version) | $("$SLUICE_BIN" --version)"
echo "load average at start: $LOAD_START, at end: $(loadavg) (other work on the machine makes the numbers noisy)"
echo "sluice: one process per mode ($MODES), freshness defaults otherwise (probe_interval 50ms, 16 slots; auto_install off), log level warn"
echo "sysbench: 1 table x $TABLE_SIZE rows, $THREADS threads, ${TIME}s per run, $ROUNDS interleaved rounds (order rotated)"
echo "================================================================================"
helper report "$work" "$THREADS" "$SKIP_TRX" "$MODES" "$LAG_SAMPLES" "$LAG_INTERVAL"
if [ -s "$work/metrics-lag-lines.txt" ]; then
  echo "  (lines of /metrics matching 'lag':)"
  sed 's/^/    /' "$work/metrics-lag-lines.txt"
fi
echo
echo "Reproduce with:"
echo "  $cmdline benches/split.sh"
echo "(raw outputs: KEEP=1 keeps $work/)"
