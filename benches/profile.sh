#!/usr/bin/env bash
# sluice profile: a fixed number of sysbench queries through one sluice, with sluice run
# under callgrind (instructions per query: stable on a noisy machine) or sampled by
# `perf record` (where the CPU time goes, kernel included), or plain (CPU time per query
# from /proc). Against a master + replica cluster (scripts/cluster) with sluice's
# triggers installed, so that reads can go to a fresh replica. See benches/README.md.
#
# Usage: TOOL=callgrind benches/profile.sh
# Environment (defaults in brackets):
#   TOOL        callgrind | perf | strace | none                         [callgrind]
#   READS       master (no replica configured) | replica (fresh replica)  [master]
#   FRESH       freshness.mode: off | causal | strict                    [off]
#   PS          --db-ps-mode: disable | auto                             [disable]
#   TEST        sysbench test                                [oltp_point_select]
#   EVENTS      sysbench events measured (after a warm-up)   [20000, callgrind 5000]
#   THREADS     sysbench threads                                         [8]
#   TABLE_SIZE  rows in sbtest1                                          [10000]
#   TOP         profile entries shown                                    [25]
#   TASKSET     CPU list for sluice (taskset -c), e.g. 0 or 0,1          [unset]
#   PROXY       sluice | haproxy: the process profiled; haproxy is the L4 forwarder of
#               sysbench.sh in front of the master, for the same figures
#               (instructions, CPU, switches, system calls) side by side  [sluice]
#   SB_ARGS     extra sysbench options, e.g. --mysql-ignore-errors=1062,1213
#               for the write tests (with --skip_trx=on their threads collide
#               on keys, and InnoDB may report deadlocks)                   []
#   CG_ARGS     extra callgrind options, e.g. "--cache-sim=yes --branch-sim=yes"
#               (simulated instruction-cache misses and mispredicted branches
#               per query, where the machine has no hardware counters)     []
#   SLUICE_CONF extra YAML lines appended to sluice's config, e.g.
#               "runtime: { worker_threads: 1 }"                         []
#   KEEP, SKIP_BUILD, SLUICE_BIN as in sysbench.sh
set -euo pipefail

BENCH=profile
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

TOOL=${TOOL:-callgrind}
READS=${READS:-master}
FRESH=${FRESH:-off}
PS=${PS:-disable}
TEST=${TEST:-oltp_point_select}
THREADS=${THREADS:-8}
TABLE_SIZE=${TABLE_SIZE:-10000}
TOP=${TOP:-25}
TASKSET=${TASKSET:-}
if [ "$TOOL" = callgrind ]; then EVENTS=${EVENTS:-5000}; else EVENTS=${EVENTS:-20000}; fi
case "$TOOL" in callgrind | perf | strace | none) ;; *) die "TOOL must be callgrind, perf, strace or none" ;; esac
case "$READS" in master | replica) ;; *) die "READS must be master or replica" ;; esac
PROXY=${PROXY:-sluice}
case "$PROXY" in sluice | haproxy) ;; *) die "PROXY must be sluice or haproxy" ;; esac
[ "$PROXY" = haproxy ] && [ "$READS" != master ] && die "PROXY=haproxy forwards to the master only: READS=master"

CLIENT=$(need_bin mariadb mariadb-client)
SYSBENCH=$(need_bin sysbench sysbench)
[ "$TOOL" = callgrind ] && { VALGRIND=$(need_bin valgrind valgrind); CG_ANNOTATE=$(need_bin callgrind_annotate valgrind); CG_CONTROL=$(need_bin callgrind_control valgrind); }
[ "$TOOL" = perf ] && PERF=$(need_bin perf linux-perf)
[ "$TOOL" = strace ] && STRACE_BIN=$(need_bin strace strace)

bench_workdir
KEPT_HINT="logs: sluice.log, cluster/*/error.log, callgrind.out / perf.data"
cluster_dir=$work/cluster
stop_cluster() { "$repo/scripts/cluster" stop "$cluster_dir" >"$work/cluster-stop.log" 2>&1 || cat "$work/cluster-stop.log" >&2; }
read -r MPORT RPORT SPORT APORT <<<"$(free_ports 4)"

sluice_binary

log "scripts/cluster start $cluster_dir"
CLEANUP_HOOKS+=(stop_cluster)
MASTER_PORT=$MPORT REPLICA_PORT=$RPORT REPLICA_PORTS="" CLUSTER_DB=sbtest \
  "$repo/scripts/cluster" start "$cluster_dir" >"$work/cluster-start.log" 2>&1 ||
  { cat "$work/cluster-start.log" >&2; die "scripts/cluster start failed"; }
msql() { "$CLIENT" --no-defaults -h127.0.0.1 -P"$MPORT" -usluice -psluice -N -B -e "$1"; }
rsql() { "$CLIENT" --no-defaults -h127.0.0.1 -P"$RPORT" -usluice -psluice -N -B -e "$1"; }
sysbench_prepare "$MPORT" sluice sluice "$TABLE_SIZE" "$work/prepare.log"
msql "CREATE USER IF NOT EXISTS 'sbtest'@'%' IDENTIFIED BY 'sbtest'; GRANT ALL ON *.* TO 'sbtest'@'%'" >/dev/null

replicas="[]"
[ "$READS" = replica ] && replicas="[{ addr: 127.0.0.1:$RPORT, user: sluice, password: sluice }]"
cat >"$work/sluice.yaml" <<EOF
listen: 127.0.0.1:$SPORT
admin_listen: 127.0.0.1:$APORT
log:
  format: text
  level: warn
freshness:
  mode: $FRESH
users:
  - { name: sbtest, password: sbtest, backend: group }
groups:
  - name: main
    master: { addr: 127.0.0.1:$MPORT, user: sluice, password: sluice }
    replicas: $replicas
${SLUICE_CONF:-}
EOF
"$SLUICE_BIN" check-config "$work/sluice.yaml" >/dev/null || die "generated config is invalid"
"$SLUICE_BIN" triggers install --schema sbtest --config "$work/sluice.yaml" >"$work/triggers.log" 2>&1 ||
  { cat "$work/triggers.log" >&2; die "sluice triggers install failed"; }
pos=$(msql "SELECT @@GLOBAL.gtid_binlog_pos")
[ "$(rsql "SELECT MASTER_GTID_WAIT('$pos', 120)")" = 0 ] || die "replica did not catch up"

pre=()
[ -n "$TASKSET" ] && pre=(taskset -c "$TASKSET")
if [ "$TOOL" = callgrind ]; then
  # shellcheck disable=SC2206 # CG_ARGS is a list of options, split on spaces
  pre+=("$VALGRIND" --tool=callgrind --callgrind-out-file="$work/callgrind.out" --dump-instr=no ${CG_ARGS:-})
fi
[ "$TOOL" = callgrind ] && : "${WAIT_PORT_S:=60}"
if [ "$PROXY" = sluice ]; then
  "${pre[@]}" "$SLUICE_BIN" serve --config "$work/sluice.yaml" </dev/null >"$work/sluice.log" 2>&1 &
  PROXY_PID=$!
  track_pid "$PROXY_PID" 30
  wait_port "$SPORT" "$PROXY_PID" "$work/sluice.log" sluice
else
  # The same port, the same accounts (sbtest exists on the master): only the
  # process in between changes.
  HAPROXY_WRAP=("${pre[@]}")
  start_haproxy "$work" "$SPORT" "$MPORT" 4096
  PROXY_PID=$HAPROXY_PID
fi
sleep 1

sb() { # events
  "$SYSBENCH" "$TEST" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$SPORT" \
    --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest --tables=1 \
    --table-size="$TABLE_SIZE" --threads="$THREADS" --time=0 --events="$1" --report-interval=0 \
    --db-ps-mode="$PS" --skip_trx=on ${SB_ARGS:-} run
}
routed() { [ "$PROXY" = sluice ] || return 0; curl -sf "http://127.0.0.1:$APORT/metrics" | awk '/^sluice_routed_statements_total/ { split($0, a, "destination=\""); split(a[2], b, "\""); s[b[1]] += $NF } END { for (k in s) printf "%s=%d ", k, s[k] }'; }
# Overlapped strict reads whose answer was thrown away and rerun on the master.
reruns() { [ "$PROXY" = sluice ] || { echo 0; return 0; }; curl -sf "http://127.0.0.1:$APORT/metrics" | awk '/^sluice_strict_reruns_total/ { s += $NF } END { print s + 0 }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# Context switches of all of a process's threads, voluntary and involuntary
# (a thread that blocks and is woken again costs one voluntary switch: the
# wake-ups per query, steadier than times on a noisy machine).
ctx_switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { print v + 0, n + 0 }'; }
# The whole machine's busy and idle jiffies (client, proxy and servers share
# the cores: whether a mode is bound by CPU or by waiting shows here).
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }

log "warm-up: $((EVENTS / 5)) events"
sb $((EVENTS / 5)) >"$work/warmup.txt" 2>&1 || { tail "$work/warmup.txt" >&2; die "warm-up failed"; }
before=$(routed)
reruns0=$(reruns)
case "$TOOL" in
  callgrind) "$CG_CONTROL" -z "$PROXY_PID" >/dev/null ;;
  perf)
    "$PERF" record -F 2000 -g -e cpu-clock -p "$PROXY_PID" -o "$work/perf.data" >"$work/perf-record.log" 2>&1 &
    PERF_PID=$!
    track_pid "$PERF_PID" 10
    sleep 0.5
    ;;
  strace)
    "$STRACE_BIN" -c -f -p "$PROXY_PID" -o "$work/strace.txt" 2>/dev/null &
    STRACE_PID=$!
    track_pid "$STRACE_PID" 10
    sleep 0.5
    ;;
esac
# Statements each server ran during the run (probes included): the master's
# share per query is strict mode's probe rate.
questions() { "$1" "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{ print $2 }'; }
mq0=$(questions msql)
rq0=$(questions rsql)
MASTER_PID=$(cat "$cluster_dir/master/mysqld.pid")
REPLICA_PID=$(cat "$cluster_dir/replica1/mysqld.pid")
t0=$(cpu_ticks "$PROXY_PID")
read -r cv0 cn0 <<<"$(ctx_switches "$PROXY_PID")"
read -r mv0 mn0 <<<"$(ctx_switches "$MASTER_PID")"
read -r rv0 rn0 <<<"$(ctx_switches "$REPLICA_PID")"
m0=$(cpu_ticks "$MASTER_PID")
r0=$(cpu_ticks "$REPLICA_PID")
read -r mb0 mi0 <<<"$(machine_ticks)"
s0=$(date +%s.%N)
sb "$EVENTS" >"$work/run.txt" 2>&1 || { tail "$work/run.txt" >&2; die "sysbench failed"; }
s1=$(date +%s.%N)
t1=$(cpu_ticks "$PROXY_PID")
read -r cv1 cn1 <<<"$(ctx_switches "$PROXY_PID")"
read -r mv1 mn1 <<<"$(ctx_switches "$MASTER_PID")"
read -r rv1 rn1 <<<"$(ctx_switches "$REPLICA_PID")"
m1=$(cpu_ticks "$MASTER_PID")
r1=$(cpu_ticks "$REPLICA_PID")
read -r mb1 mi1 <<<"$(machine_ticks)"
mq1=$(questions msql)
rq1=$(questions rsql)
after=$(routed)
reruns1=$(reruns)
queries=$(sed -n 's/^ *queries: *\([0-9]*\).*/\1/p' "$work/run.txt")
[ -n "$queries" ] || die "no query count in $work/run.txt"
hz=$(getconf CLK_TCK)

echo "================================================================================"
echo "sluice profile $(date -u '+%F %H:%M UTC'), commit $(git -C "$repo" rev-parse --short HEAD), load $(loadavg)"
echo "PROXY=$PROXY TOOL=$TOOL READS=$READS FRESH=$FRESH PS=$PS TEST=$TEST THREADS=$THREADS EVENTS=$EVENTS TASKSET=${TASKSET:--}"
echo "queries: $queries in $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.1f", b - a }') s; routed before: $before; after: $after"
echo "server statements per query: master $(awk -v a="$mq0" -v b="$mq1" -v q="$queries" 'BEGIN { printf "%.3f", (b - a - 1) / q }'), replica $(awk -v a="$rq0" -v b="$rq1" -v q="$queries" 'BEGIN { printf "%.3f", (b - a - 1) / q }') (probes included)"
echo "strict reruns on the master: $((reruns1 - reruns0))"
echo "$PROXY CPU: $(awk -v t=$((t1 - t0)) -v hz="$hz" -v q="$queries" 'BEGIN { printf "%.1f us per query", t / hz * 1e6 / q }')"
cs_per_query() { awk -v v="$1" -v n="$2" -v q="$queries" 'BEGIN { printf "%.2f voluntary, %.2f involuntary", v / q, n / q }'; }
echo "$PROXY context switches per query: $(cs_per_query $((cv1 - cv0)) $((cn1 - cn0)))"
echo "server context switches per query: master $(cs_per_query $((mv1 - mv0)) $((mn1 - mn0))); replica $(cs_per_query $((rv1 - rv0)) $((rn1 - rn0)))"
# The servers' own CPU (user + system of each mariadbd; the kernel's network
# work done on their behalf in softirq context is only in the machine's).
echo "server CPU: $(awk -v m=$((m1 - m0)) -v r=$((r1 - r0)) -v hz="$hz" -v q="$queries" 'BEGIN { printf "master %.1f, replica %.1f us per query", m / hz * 1e6 / q, r / hz * 1e6 / q }')"
echo "machine CPU (all processes): $(awk -v b=$((mb1 - mb0)) -v i=$((mi1 - mi0)) -v hz="$hz" -v q="$queries" 'BEGIN { printf "%.1f us busy per query, %.0f%% idle", b / hz * 1e6 / q, (b + i) ? 100 * i / (b + i) : 0 }')"
case "$TOOL" in
  callgrind)
    "$CG_CONTROL" -d "$PROXY_PID" >/dev/null
    sleep 1
    out=$(ls -t "$work"/callgrind.out* | head -n1)
    total=$("$CG_ANNOTATE" "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
    echo "instructions (callgrind Ir): $total total, $(awk -v t="$total" -v q="$queries" 'BEGIN { printf "%.0f", t / q }') per query"
    if [ -n "${CG_ARGS:-}" ]; then
      # Every recorded event per query (with the cache and branch simulators:
      # I1mr = first-level instruction-cache misses, Bcm / Bim = mispredicted
      # conditional / indirect branches).
      "$CG_ANNOTATE" "$out" 2>/dev/null | awk -v q="$queries" '
        /^Events shown:/ { n = 0; for (i = 3; i <= NF; i++) ev[++n] = $i }
        /PROGRAM TOTALS/ && !done { done = 1; k = 0; line = "events per query:"
          for (i = 1; i <= NF; i++) if ($i ~ /^[0-9,]+$/) { v = $i; gsub(",", "", v); line = line sprintf(" %s %.1f", ev[++k], v / q) }
          print line }'
    fi
    # The thread roots (clone, start_thread, the runtime's poll loop) hold
    # 100% inclusive and nothing of interest: left out; paths shortened.
    cg_list() {
      "$CG_ANNOTATE" --threshold=100 "$@" "$out" 2>/dev/null | sed -n '/file:function/,$p' | grep -E '^ *[0-9,]+ \(' |
        grep -vE 'clone\.S|pthread_create|thread_start|vtable\.shim|__rust_begin_short_backtrace|blocking::pool::Inner::run|task::raw::poll( |$)|\(100\.0%\)' |
        sed -E 's#/root/\.cargo/registry/src/[^/]*/##; s#/rustc/[0-9a-f]*/library/##; s#'"$repo"'/##; s# \[[^]]*\]$##' | head -n "$TOP" ||
        true # (head closes the pipe early: SIGPIPE upstream is not a failure)
    }
    echo "top $TOP functions by exclusive Ir:"
    cg_list
    echo "top $TOP by inclusive Ir:"
    cg_list --inclusive=yes
    ;;
  perf)
    kill -INT "$PERF_PID" 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    untrack_pid "$PERF_PID"
    echo "perf (cpu-clock samples, self):"
    "$PERF" report -i "$work/perf.data" --no-children --sort symbol --stdio 2>/dev/null | awk -v n="$TOP" '/^ +[0-9]/ && c++ < n' | sed "s/ *-  *- *$//"
    echo "kernel share: $("$PERF" report -i "$work/perf.data" --no-children --sort dso --stdio 2>/dev/null | awk '/^ +[0-9]/' | awk '/kernel/ { k += $1 } { t += $1 } END { printf "%.1f%%", t ? 100 * k / t : 0 }')"
    ;;
  strace)
    kill -INT "$STRACE_PID" 2>/dev/null || true
    wait "$STRACE_PID" 2>/dev/null || true
    untrack_pid "$STRACE_PID"
    echo "system calls per query (strace -c -f; strace slows sluice, so read the counts, not the times):"
    awk -v q="$queries" '$1 ~ /^[0-9.]+$/ && NF >= 5 { name = $NF; calls = $4; if (calls / q >= 0.01) printf "  %-16s %6.2f\n", name, calls / q }' "$work/strace.txt"
    ;;
esac
