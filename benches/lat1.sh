#!/usr/bin/env bash
# sluice 1-thread latency, explained: one sysbench client thread runs a fixed number of
# point selects directly, through HAProxy (mode tcp) and through sluice (and BASE_BIN, a
# second sluice binary, for before/after), interleaved in rounds. For each proxy run it
# counts what the proxy did per query: CPU time, context switches of all its threads
# (voluntary = went to sleep waiting, i.e. a wake-up per switch) from
# /proc/PID/task/*/status, and with STRACE=1 the system calls (strace -c -f; slows the
# proxy down, so its latency is not comparable then). See benches/README.md.
#
# Usage: benches/lat1.sh
# Environment (defaults in brackets):
#   EVENTS      point selects per run                          [20000]
#   ROUNDS      interleaved rounds                             [3]
#   PS          --db-ps-mode                                   [disable]
#   TABLE_SIZE  rows in sbtest1                                [10000]
#   STRACE      1 = one extra strace -c -f run per proxy       [0]
#   THREADS     sysbench threads (8: what the proxies do per query under load,
#               where the latency figure means nothing)        [1]
#   SLUICE_CONF extra YAML lines appended to sluice's config   []
#   BASE_CONF   extra YAML lines appended to base's config (BASE_BIN; e.g. the same
#               binary with another `runtime:`)                 [SLUICE_CONF]
#   KEEP, SKIP_BUILD, SLUICE_BIN, BASE_BIN as in sysbench.sh
set -euo pipefail

BENCH=lat1
# shellcheck source=benches/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$repo"

EVENTS=${EVENTS:-20000}
ROUNDS=${ROUNDS:-3}
PS=${PS:-disable}
TABLE_SIZE=${TABLE_SIZE:-10000}
STRACE=${STRACE:-0}
THREADS=${THREADS:-1}
SLUICE_CONF=${SLUICE_CONF:-}
SYSBENCH=$(need_bin sysbench sysbench)
[ "$STRACE" = 1 ] && STRACE_BIN=$(need_bin strace strace)
TARGETS=(direct haproxy sluice)

bench_workdir
read -r MPORT HPORT SPORT APORT BPORT BAPORT <<<"$(free_ports 6)"
[ -n "${BASE_BIN:-}" ] && { [ -x "$BASE_BIN" ] || die "BASE_BIN=$BASE_BIN is not an executable"; TARGETS+=(base); }
LOAD_START=$(loadavg)
sluice_binary
start_mariadb "$work/mariadb" "$MPORT" 500
start_haproxy "$work" "$HPORT" "$MPORT" 1000
sluice_conf() { # extra YAML
  cat <<EOF
listen: 127.0.0.1:$SPORT
admin_listen: 127.0.0.1:$APORT
log:
  format: text
  level: warn
users:
  - { name: sbtest, password: sbtest, backend: group }
groups:
  - name: main
    master: { addr: 127.0.0.1:$MPORT, user: sluicebe, password: sluicebe }
    replicas: []
$1
EOF
}
sluice_conf "$SLUICE_CONF" >"$work/sluice.yaml"
start_sluice "$work/sluice.yaml" "$work/sluice.log" "$SPORT"
SLUICE_PID=$STARTED_PID
BASE_PID=""
if [ -n "${BASE_BIN:-}" ]; then
  sluice_conf "${BASE_CONF-$SLUICE_CONF}" | sed -e "s/^listen: .*/listen: 127.0.0.1:$BPORT/" \
    -e "s/^admin_listen: .*/admin_listen: 127.0.0.1:$BAPORT/" >"$work/base.yaml"
  # Builds from before users[].backend was required reject `backend: group`.
  "$BASE_BIN" check-config "$work/base.yaml" >/dev/null 2>&1 || sed -i 's/, backend: group//' "$work/base.yaml"
  main_bin=$SLUICE_BIN
  SLUICE_BIN=$BASE_BIN
  start_sluice "$work/base.yaml" "$work/base.log" "$BPORT"
  BASE_PID=$STARTED_PID
  SLUICE_BIN=$main_bin
fi
port_of() { case $1 in direct) echo "$MPORT" ;; haproxy) echo "$HPORT" ;; sluice) echo "$SPORT" ;; base) echo "$BPORT" ;; esac; }
pid_of() { case $1 in haproxy) echo "$HAPROXY_PID" ;; sluice) echo "$SLUICE_PID" ;; base) echo "$BASE_PID" ;; *) echo "" ;; esac; }
# user and system CPU time of a process, in clock ticks
cpu_ticks() { [ -n "$1" ] && awk '{print $14, $15}' "/proc/$1/stat" 2>/dev/null || echo 0 0; }
# voluntary and involuntary context switches summed over all threads of a process
ctxsw() {
  [ -n "$1" ] || { echo "0 0"; return; }
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { print v + 0, n + 0 }'
}
HZ=$(getconf CLK_TCK)
sb() { # port events
  "$SYSBENCH" oltp_point_select --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$1" \
    --mysql-user=sbtest --mysql-password=sbtest --mysql-db=sbtest --tables=1 \
    --table-size="$TABLE_SIZE" --threads="$THREADS" --time=0 --events="$2" --report-interval=0 \
    --db-ps-mode="$PS" --histogram=on --percentile=50 run
}
sysbench_prepare "$MPORT" sbtest sbtest "$TABLE_SIZE" "$work/prepare.log"
for t in "${TARGETS[@]}"; do sb "$(port_of "$t")" 2000 >/dev/null 2>&1 || die "warm-up through $t failed"; done

results=$work/results.tsv # round target us_per_query p50_ms cpu_us user_cpu_us vol_cs invol_cs
: >"$results"
for ((r = 1; r <= ROUNDS; r++)); do
  for t in $(rotated "$r" "${TARGETS[@]}"); do
    pid=$(pid_of "$t")
    read -r u0 k0 <<<"$(cpu_ticks "$pid")"
    read -r v0 n0 <<<"$(ctxsw "$pid")"
    s0=$(date +%s%N)
    sb "$(port_of "$t")" "$EVENTS" >"$work/run-$r-$t.txt" 2>&1 || { tail "$work/run-$r-$t.txt" >&2; die "sysbench through $t failed"; }
    s1=$(date +%s%N)
    read -r u1 k1 <<<"$(cpu_ticks "$pid")"
    read -r v1 n1 <<<"$(ctxsw "$pid")"
    fig=$("$PY" "$repo/benches/sysbench_result.py" "$work/run-$r-$t.txt" 50)
    IFS=$'\t' read -r qps _ p50 _ <<<"$fig"
    q=$(sed -n 's/^ *queries: *\([0-9]*\).*/\1/p' "$work/run-$r-$t.txt")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$t" \
      "$(awk -v a="$s0" -v b="$s1" -v q="$q" 'BEGIN { printf "%.1f", (b - a) / 1000 / q }')" "$p50" \
      "$(awk -v d=$((u1 + k1 - u0 - k0)) -v hz="$HZ" -v q="$q" 'BEGIN { printf "%.1f", d * 1e6 / hz / q }')" \
      "$(awk -v d=$((u1 - u0)) -v hz="$HZ" -v q="$q" 'BEGIN { printf "%.1f", d * 1e6 / hz / q }')" \
      "$(awk -v d=$((v1 - v0)) -v q="$q" 'BEGIN { printf "%.2f", d / q }')" \
      "$(awk -v d=$((n1 - n0)) -v q="$q" 'BEGIN { printf "%.2f", d / q }')" >>"$results"
    log "$(tail -n1 "$results")"
  done
done

echo "================================================================================"
report_title "sluice 1-thread latency"
echo "load average at start: $LOAD_START, at end: $(loadavg); EVENTS=$EVENTS PS=$PS THREADS=$THREADS, $ROUNDS rounds"
"$PY" - "$results" <<'PYEOF'
import sys, statistics
from collections import defaultdict
rows = defaultdict(list)
targets = []
for line in open(sys.argv[1]):
    r, t, us, p50, cpu, ucpu, v, n = line.split()
    rows[t].append((float(us), float(p50) * 1000, float(cpu), float(v), float(n), float(ucpu)))
    if t not in targets:
        targets.append(t)
med = lambda xs: statistics.median(xs)
d_us = med([x[0] for x in rows["direct"]])
d_p50 = med([x[1] for x in rows["direct"]])
print("%-8s %10s %10s %10s %10s %12s %12s %12s %12s" % ("target", "us/query", "added", "p50 us", "added p50", "CPU us/q", "user us/q", "vol cs/q", "invol cs/q"))
for t in targets:
    xs = rows[t]
    us, p50 = med([x[0] for x in xs]), med([x[1] for x in xs])
    print("%-8s %10.1f %10s %10.1f %10s %12.1f %12.1f %12.2f %12.2f" % (
        t, us, "-" if t == "direct" else "%+.1f" % (us - d_us), p50, "-" if t == "direct" else "%+.1f" % (p50 - d_p50),
        med([x[2] for x in xs]), med([x[5] for x in xs]), med([x[3] for x in xs]), med([x[4] for x in xs])))
PYEOF

if [ "$STRACE" = 1 ]; then
  for t in "${TARGETS[@]}"; do
    pid=$(pid_of "$t")
    [ -n "$pid" ] || continue
    "$STRACE_BIN" -c -f -p "$pid" -o "$work/strace-$t.txt" 2>/dev/null &
    spid=$!
    track_pid "$spid" 5
    sleep 1
    sb "$(port_of "$t")" "$EVENTS" >"$work/strace-run-$t.txt" 2>&1 || die "sysbench under strace ($t) failed"
    kill -INT "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    untrack_pid "$spid"
    echo "strace -c -f of $t over $EVENTS point selects (calls per query):"
    awk -v q="$EVENTS" '$1 ~ /^[0-9.]+$/ && NF >= 5 { name = $NF; calls = $4; if (calls / q >= 0.01) printf "  %-16s %6.2f\n", name, calls / q }' "$work/strace-$t.txt"
  done
fi
echo "Reproduce with: ${SLUICE_BIN:+SLUICE_BIN=$SLUICE_BIN }${BASE_BIN:+BASE_BIN=$BASE_BIN }${SLUICE_CONF:+SLUICE_CONF=\"$SLUICE_CONF\" }${BASE_CONF+BASE_CONF=\"$BASE_CONF\" }EVENTS=$EVENTS ROUNDS=$ROUNDS PS=$PS THREADS=$THREADS TABLE_SIZE=$TABLE_SIZE STRACE=$STRACE benches/lat1.sh"
